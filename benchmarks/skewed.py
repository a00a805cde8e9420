"""Skewed and heavy-tailed outcomes under the defaults, given only ε (issue 29).

Cells:

* **RAND HIE**: the user-level mean of ``meddol`` (5,912 persons ``zper``), ε = 1, raw and on
  the ``log1p`` scale, and of ``inpdol`` (inpatient spending, 76 % of the persons at 0);
  truth the non-private mean of the person means. The data are fixed, so
  the RMSE is the privacy error alone; the sampling SE is printed beside it.
* **Simulated** per-user statistics, n = 1,000, ε = 1, each user the mean of T = 10 rows of
  ``μ_u + e`` (``e`` normal with sd 0.1, so the users' statistics carry the tail): lognormal
  σ = 1 and σ = 1.5, Pareto (Lomax) tail index 2.5, Student t₃, and 90 % zeros with a
  lognormal (σ = 1) tail; truth the population mean. Coverage is of the 95 % interval. And a
  mild skew, a standardised lognormal (σ = 1) plus as much normal noise (one statistic a
  user), beside the noise alone, at n = 5,000, 20,000 and 100,000 (at most 40 releases).
* **Gaussian** (the issue-10 panels: T = 10 AR(1) 0.9 rows), to check the tail stage costs the
  light-tailed cells little: MSE over the non-private mean's MSE.
* **Counts** (``PoissonMean``, whose exponential tail of the user rates is an assumption the
  tail count checks): n = 2,000 users of T = 6 Poisson rows, ε = 1, user rates gamma (shape
  2), exponential and lognormal (σ = 1, 1.5, 2); truth the mean of the user rates, coverage of
  the 95 % interval, the share of fits marked heavy. Beside it, the same fits with the tail
  stated (``tail="exponential"``: taken as given, never checked) and with none
  (``tail=None``: the engine's own choice, the support kept), and RAND HIE's ``mdvis``
  (visits to a doctor).
* **Moderate skew** (``--only moderate``): users' means of 5 rows whose levels are
  exponential, gamma (shape 2) or lognormal (σ = 0.5), mean 10, at n = 500-5,000 and
  ε = 0.5-1: skews too mild for the tail count and too strong for the normal bias bound;
  coverage of the population mean, and the misses with and without a warning. Beside them,
  heavy levels in the same panels (lognormal σ = 1, Lomax 2.5; n = 1,000 and 5,000, ε = 1),
  whose tails are found and, at 5,000 users, split into sides.

Every replication draws its data and dplong's noise from streams keyed by the seed, the cell
and the replication (``_common.seeds``), so a run before and after an engine change is paired.

Run ``python benchmarks/skewed.py [--reps R] [--seed S]``; docs/accuracy.md quotes
``--reps 200`` (RAND HIE) and 300 (simulated); ``--only counts --sim-reps 100`` the counts.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
from _common import (
    NONNEGATIVE,
    SKEWED,
    ar1_rows,
    header,
    mse_ratio,
    pm,
    proportion,
    rmse,
    seeds,
    skewed_rows,
)

import dplong
from dplong.datasets import load_randhie

MU = 3.7


def randhie(
    reps: int, seed: int, log: bool, lower: float | None = None, column: str = "meddol"
) -> str:
    df = load_randhie()
    values = np.log1p(df[column]) if log else df[column]
    reference = values.groupby(df["zper"]).mean()
    truth = float(reference.mean())
    sampling = float(reference.std(ddof=1) / np.sqrt(reference.size))
    errors, covered, warned, withheld = [], 0, 0, 0
    for rep in range(reps):  # the noise keyed without lower=: the two cells paired
        _, noise, _ = seeds(seed, 29, int(log), int(column != "meddol"), rep)
        res = dplong.winsorized_mean(
            values, groups=df["zper"], epsilon=1.0, lower=lower, random_state=noise
        )
        estimate = float(res.params.iloc[0])
        if np.isnan(estimate):  # withheld (with its reason): not covering, no error
            withheld += 1
            continue
        ci = res.conf_int().iloc[0]
        errors.append(estimate - truth)
        covered += ci["lower"] <= truth <= ci["upper"]
        warned += any("heavy tail" in note for note in res.warnings)
    value, se = rmse(errors)
    cover = proportion(covered, reps)
    name = (f"log1p({column})" if log else column) + ("" if lower is None else f", lower={lower:g}")
    return (
        f"| RAND HIE {name} | {truth:.4g} | {sampling:.3g} | {pm(value, se)} | "
        f"{pm(value / sampling, se / sampling)} | {pm(*cover)} | {warned}/{reps} | {withheld} |"
    )


def simulated(
    kind: str, reps: int, seed: int, n: int = 1000, T: int = 10, lower: float | None = None
) -> str:
    # the same panels with and without the support's end declared
    truth = SKEWED[kind][0]
    private, public, covered, withheld = [], [], 0, 0
    for rep in range(reps):
        data, noise, _ = seeds(seed, n, sum(map(ord, kind)), rep)
        means = skewed_rows(kind, data, n, T)
        rows = means.ravel()
        users = np.repeat(np.arange(n), T)
        res = dplong.winsorized_mean(
            rows, groups=users, epsilon=1.0, lower=lower, random_state=noise
        )
        estimate = float(res.params.iloc[0])
        if np.isnan(estimate):
            withheld += 1
            continue
        ci = res.conf_int().iloc[0]
        private.append((estimate - truth) ** 2)
        public.append((means.mean(axis=1).mean() - truth) ** 2)
        covered += ci["lower"] <= truth <= ci["upper"]
    ratio = mse_ratio(private, public)
    cover = proportion(covered, len(private))
    name = kind if lower is None else f"{kind}, lower={lower:g}"
    return f"| {name} | {n} | {pm(*ratio)} | {pm(*cover)} | {withheld} |"


def gaussian(n: int, epsilon: float, reps: int, seed: int) -> str:
    private, public, covered, withheld = [], [], 0, 0
    for rep in range(reps):
        data, noise, _ = seeds(seed, n, int(100 * epsilon), rep)
        means = MU + ar1_rows(data, n).mean(axis=1)
        res = dplong.winsorized_mean(means, epsilon=epsilon, random_state=noise)
        estimate = float(res.params.iloc[0])
        if np.isnan(estimate):
            withheld += 1
            continue
        ci = res.conf_int().iloc[0]
        private.append((estimate - MU) ** 2)
        public.append((means.mean() - MU) ** 2)
        covered += ci["lower"] <= MU <= ci["upper"]
    ratio = mse_ratio(private, public)
    cover = proportion(covered, len(private))
    return f"| Gaussian | {n} | {epsilon:g} | {pm(*ratio)} | {pm(*cover)} | {withheld} |"


#: User rates of the count cells: a draw of n rates from rng.
RATES = {
    "gamma(2, 1.5)": lambda rng, n: rng.gamma(2.0, 1.5, n),
    "exponential(3)": lambda rng, n: rng.exponential(3.0, n),
    "lognormal σ = 1": lambda rng, n: np.exp(rng.normal(0.0, 1.0, n)),
    "lognormal σ = 1.5": lambda rng, n: np.exp(rng.normal(0.0, 1.5, n)),
    "lognormal σ = 2": lambda rng, n: np.exp(rng.normal(0.0, 2.0, n)),
}


def counts(kind: str, reps: int, seed: int, n: int = 2000, T: int = 6) -> str:
    """PoissonMean with its assumed tail (checked), with the tail stated (not checked) and with
    none, on the same panels and draws; truth the population mean of the rates (exact where known,
    else from 10⁶ draws)."""
    truth = float(RATES[kind](np.random.default_rng(0), 1_000_000).mean())
    table: dict[str, list[float]] = {"assumed": [], "stated": [], "none": []}
    covered, marked, withheld = (
        dict.fromkeys(table, 0),
        dict.fromkeys(table, 0),
        dict.fromkeys(table, 0),
    )
    public: list[float] = []
    for rep in range(reps):
        data, _, noise = seeds(seed, n, sum(map(ord, kind)), rep)  # one noise seed for the three
        rates = RATES[kind](data, n)
        frame = pd.DataFrame(
            {"id": np.repeat(np.arange(n), T), "visits": data.poisson(np.repeat(rates, T))}
        )
        public.append((frame.groupby("id")["visits"].mean().mean() - truth) ** 2)
        model = dplong.PoissonMean.from_formula("visits ~ 1", frame, groups="id")
        for name, options in (
            ("assumed", {}),
            ("stated", {"tail": "exponential"}),
            ("none", {"tail": None}),
        ):
            res = model.fit(epsilon=1.0, random_state=noise, **options)
            estimate = float(res.params.iloc[0])
            if np.isnan(estimate):
                withheld[name] += 1
                continue
            lo, hi = res.conf_int().iloc[0]
            table[name].append((estimate - truth) ** 2)
            covered[name] += lo <= truth <= hi
            marked[name] += any("heavy tail" in note for note in res.warnings)
    cells = []
    for name, private in table.items():
        ratio = mse_ratio(private, public[: len(private)])
        cells.append(
            f"{pm(*ratio)} | {pm(*proportion(covered[name], len(private)))} | "
            f"{marked[name]} | {withheld[name]}"
        )
    return f"| {kind} | " + " | ".join(cells) + " |"


def randhie_visits(reps: int, seed: int) -> str:
    """PoissonMean of RAND HIE's ``mdvis``: RMSE over the sampling SE, coverage, heavy marks."""
    df = load_randhie()
    reference = df.groupby("zper")["mdvis"].mean()
    truth = float(reference.mean())
    sampling = float(reference.std(ddof=1) / np.sqrt(reference.size))
    model = dplong.PoissonMean.from_formula("mdvis ~ 1", df, groups="zper")
    errors, covered, marked = [], 0, 0
    for rep in range(reps):
        res = model.fit(epsilon=1.0, random_state=seed + rep)
        lo, hi = res.conf_int().iloc[0]
        errors.append(float(res.params.iloc[0]) - truth)
        covered += lo <= truth <= hi
        marked += any("heavy tail" in note for note in res.warnings)
    value, se = rmse(errors)
    return (
        f"RAND HIE mdvis (PoissonMean, ε = 1): RMSE / SE {pm(value / sampling, se / sampling)}, "
        f"coverage {pm(*proportion(covered, reps))}, marked heavy {marked}/{reps}"
    )


def mild(n: int, skewed: bool, reps: int, seed: int) -> str:
    """A mild skew plain only at large n: a standardised lognormal (σ = 1) plus as much N(0, 1)
    noise (or, the control, the noise alone), one statistic a user, ε = 1; truth the
    population mean 0, coverage of the 95 % interval."""
    private, public, covered, withheld = [], [], 0, 0
    for rep in range(reps):
        data, noise, _ = seeds(seed, n, int(skewed), 5, rep)
        values = data.normal(size=n)
        if skewed:
            values += (data.lognormal(0.0, 1.0, n) - np.exp(0.5)) / np.sqrt((np.e - 1.0) * np.e)
        res = dplong.winsorized_mean(values, epsilon=1.0, random_state=noise)
        estimate = float(res.params.iloc[0])
        if np.isnan(estimate):
            withheld += 1
            continue
        ci = res.conf_int().iloc[0]
        private.append(estimate**2)
        public.append(float(values.mean()) ** 2)
        covered += ci["lower"] <= 0.0 <= ci["upper"]
    ratio = mse_ratio(private, public)
    name = "lognormal 1 + normal" if skewed else "normal (control)"
    cover = proportion(covered, len(private))
    return f"| {name} | {n} | {pm(*ratio)} | {pm(*cover)} | {withheld} |"


#: Moderately skewed per-user means (``--only moderate``): each user's mean of T = 5 rows, the
#: user's level drawn from the law below and each row adding N(0, 2²); the population mean 10.
MODERATE = {
    "exponential": lambda rng, n: rng.exponential(10.0, n),
    "gamma (shape 2)": lambda rng, n: rng.gamma(2.0, 5.0, n),
    "lognormal σ = 0.5": lambda rng, n: np.exp(np.log(10.0) - 0.125 + rng.normal(0.0, 0.5, n)),
}
#: Heavy-tailed levels in the same panels, mean 10: tails the tail stage finds, and at 5,000
#: users splits into sides (docs/design/engine.md, "The sides of a heavy tail").
HEAVY = {
    "lognormal σ = 1": lambda rng, n: np.exp(np.log(10.0) - 0.5 + rng.normal(0.0, 1.0, n)),
    "Pareto 2.5": lambda rng, n: 15.0 * rng.pareto(2.5, n),  # Lomax 2.5: mean 1 / 1.5
}
#: Every level law :func:`moderate` draws from.
LEVELS = {**MODERATE, **HEAVY}


def moderate(kind: str, n: int, epsilon: float, reps: int, seed: int) -> str:
    """Skews too mild for the tail count at small n ε and too strong for the normal bias bound
    (a session audit of 2026-11-30: exponential user means at n = 1,000, ε = 1 covered in 71 %,
    every miss silent), or heavy levels (:data:`HEAVY`): MSE over the non-private, coverage of
    the population mean 10, and the misses with and without a warning."""
    private, public, covered, warned, withheld = [], [], 0, 0, 0
    for rep in range(reps):
        data, noise, _ = seeds(seed, n, int(100 * epsilon), sum(map(ord, kind)), rep)
        means = LEVELS[kind](data, n)[:, None] + data.normal(0.0, 2.0, (n, 5))
        res = dplong.winsorized_mean(
            means.ravel(), groups=np.repeat(np.arange(n), 5), epsilon=epsilon, random_state=noise
        )
        estimate = float(res.params.iloc[0])
        if np.isnan(estimate):
            withheld += 1
            continue
        ci = res.conf_int().iloc[0]
        private.append((estimate - 10.0) ** 2)
        public.append((means.mean() - 10.0) ** 2)
        inside = ci["lower"] <= 10.0 <= ci["upper"]
        covered += inside
        warned += (not inside) and bool(res.warnings)
    misses = len(private) - covered
    return (
        f"| {kind} | {n} | {epsilon:g} | {pm(*mse_ratio(private, public))} | "
        f"{pm(*proportion(covered, len(private)))} | {warned} | {misses - warned} | {withheld} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--sim-reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument(
        "--only",
        choices=["randhie", "simulated", "gaussian", "counts", "moderate"],
        default=None,
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the reliability warnings are counted from res.warnings
    header("benchmarks/skewed.py", [f"seed {args.seed}"])
    if args.only in (None, "randhie"):
        print("\n| cell | truth | sampling SE | RMSE | RMSE / SE | coverage | warned | withheld |")
        print("|---|---|---|---|---|---|---|---|")
        for log in (False, True):
            print(randhie(args.reps, args.seed, log), flush=True)
        # the support's end declared (issue 29 item 2): spending is never below 0
        print(randhie(args.reps, args.seed, False, lower=0.0), flush=True)
        # inpatient spending: 76 % of the persons at 0, a heavy tail among the others
        print(randhie(args.reps, args.seed, False, column="inpdol"), flush=True)
    if args.only in (None, "simulated"):
        print("\n| per-user statistic | n | MSE / non-private | coverage | withheld |")
        print("|---|---|---|---|---|")
        for kind in SKEWED:
            print(simulated(kind, args.sim_reps, args.seed), flush=True)
        for kind in NONNEGATIVE:  # the support's end declared (issue 29 item 2)
            print(simulated(kind, args.sim_reps, args.seed, lower=0.0), flush=True)
        for n in (5_000, 20_000, 100_000):  # a skew the rough mean's error hides at small n
            for skewed in (True, False):
                print(mild(n, skewed, min(args.sim_reps, 40), args.seed), flush=True)
    if args.only in (None, "gaussian"):
        print("\n| cell | n | ε | MSE / non-private | coverage | withheld |")
        print("|---|---|---|---|---|---|")
        for n, eps in ((300, 1.0), (500, 0.5), (1000, 0.5), (1000, 1.0), (10_000, 1.0)):
            print(gaussian(n, eps, args.sim_reps, args.seed), flush=True)
    if args.only in (None, "moderate"):
        print(
            "\n| user means | n | ε | MSE / non-private | coverage | warned misses | "
            "silent misses | withheld |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for kind in MODERATE:
            for n, eps in ((500, 1.0), (1000, 1.0), (2000, 0.5), (5000, 1.0)):
                print(moderate(kind, n, eps, args.sim_reps, args.seed), flush=True)
        for kind in HEAVY:
            for n in (1000, 5000):
                print(moderate(kind, n, 1.0, args.sim_reps, args.seed), flush=True)
    if args.only in (None, "counts"):
        print(
            "\n| user rates | assumed (checked): MSE / non-private | coverage | marked heavy | "
            "withheld | stated | coverage | marked heavy | withheld | no tail model | coverage | "
            "marked heavy | withheld |"
        )
        print("|---|" + "---|" * 12)
        for kind in RATES:
            print(counts(kind, args.sim_reps, args.seed), flush=True)
        print(randhie_visits(args.reps, args.seed), flush=True)


if __name__ == "__main__":
    main()
