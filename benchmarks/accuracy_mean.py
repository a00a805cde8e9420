"""Accuracy of the private mean: the default engine against the paper's algorithm and an oracle.

Each replication draws n users' statistics (a user's mean, from its exact law N(μ, σ²) with
μ = 100 far from 0 and σ² = 1; only n and ε matter for the ratios, not how many rows or how
correlated they are, which only set σ²) and releases, on the *same* data (common random
numbers), at δ = 1/n²:

* ``default``  — ``winsorized_mean(x, epsilon=ε)``: given only ε (private median midpoint,
  private scale, count, refinement, accuracy-aware radius);
* ``stated``   — the same with the true scale stated (``scale=σ²``): what knowing σ² is worth;
* ``theory``   — ``variant="theory", scale=σ²``: the paper's Alg 3–4 as published (stable
  histogram midpoint, interval m̂ ± 3τ, ε split ½ / ½);
* ``oracle``   — clipping around the TRUE mean with the whole ε, the limit of this family:
  ``μ + Σ clip(x_u − μ, ±w*)/n + noise`` with the package's lattice Laplace
  (:func:`dplong.privacy.noise.release_bounded_sum`) and w* the accuracy-aware radius for the
  true σ² (:func:`dplong.privacy.radius.accurate_radius`).

Printed per cell: MSE / MSE(non-private mean) ± paired delta-method SE for each, the ratio
default / oracle, the share of default releases withheld (NaN: the centre missed the data) and
of theory releases whose histogram failed, the share of released estimates off by more than σ
(a gross miss: the sampling SE is σ/√n), and ``refused`` where the package refuses the
release before any noise (public facts). Withheld releases are left out of the default's MSE
(their share is printed instead).

Usage::

    python benchmarks/accuracy_mean.py --reps 200   # the table of docs/accuracy.md
    python benchmarks/accuracy_mean.py --reps 100   # faster
    python benchmarks/accuracy_mean.py --quick      # smoke run: n <= 10^4, 20 replications
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from _common import header, mse_ratio, pm, proportion

import dplong
from dplong.exceptions import DplongWarning, InsufficientUsersError
from dplong.privacy.noise import release_bounded_sum
from dplong.privacy.radius import accurate_radius

MU, SIGMA2 = 100.0, 1.0
NS = (1_000, 10_000, 100_000)
EPSILONS = (0.1, 0.5, 1.0)
ESTIMATORS = ("default", "stated", "theory")
OPTIONS: dict[str, dict[str, object]] = {
    "default": {},
    "stated": {"scale": SIGMA2},
    "theory": {"variant": "theory", "scale": SIGMA2},
}


def oracle(x: np.ndarray, epsilon: float, rng: np.random.Generator) -> float:
    """Clip at the true mean with the best radius for the true σ², whole ε, lattice Laplace."""
    n = x.size
    w = accurate_radius(
        np.array([SIGMA2]), np.array([0.0]), np.array([math.sqrt(8.0) / (n * epsilon)])
    )
    clipped = np.clip(x - MU, -w[0], w[0])[:, None]
    release = release_bounded_sum(clipped, w, np.array([epsilon]), rng)
    return MU + float(release.total[0]) / n


def cell(n: int, epsilon: float, reps: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng([seed, n, int(1000 * epsilon)])
    err = {k: np.full(reps, np.nan) for k in (*ESTIMATORS, "oracle", "public")}
    failed = np.zeros(reps, dtype=bool)
    noise_var = np.full(reps, np.nan)
    refused: set[str] = set()
    for r in range(reps):
        x = rng.normal(MU, math.sqrt(SIGMA2), n)
        err["public"][r] = (x.mean() - MU) ** 2
        err["oracle"][r] = (oracle(x, epsilon, rng) - MU) ** 2
        for name in ESTIMATORS:
            if name in refused:
                continue
            try:
                res = dplong.winsorized_mean(x, epsilon=epsilon, random_state=rng, **OPTIONS[name])
            except InsufficientUsersError:
                refused.add(name)
                continue
            err[name][r] = np.square(np.float64(res.params.iloc[0]) - MU)  # inf, not an error
            if name == "theory":
                failed[r] = bool(res.failed.iloc[0])
            if name == "default":
                noise_var[r] = float(res.noise_sd.iloc[0]) ** 2
    out: dict[str, object] = {"n": n, "eps": epsilon, "refused": refused}
    for name in (*ESTIMATORS, "oracle"):
        ok = ~np.isnan(err[name])
        out[name] = mse_ratio(err[name][ok], err["public"][ok]) if ok.any() else None
    ok = ~np.isnan(err["default"])
    out["withheld"] = proportion(float(reps - ok.sum()), reps) if "default" not in refused else None
    out["failed"] = proportion(float(failed.sum()), reps) if "theory" not in refused else None
    out["default/oracle"] = mse_ratio(err["default"][ok], err["oracle"][ok]) if ok.any() else None
    missed = [
        f"{name[0]} {100 * np.mean(err[name][~np.isnan(err[name])] > SIGMA2):.1f}"
        for name in ESTIMATORS
        if name not in refused
    ]
    out["missed"] = ", ".join(missed) if missed else "—"
    out["predicted"] = 1.0 + float(np.nanmean(noise_var)) * n / SIGMA2 if ok.any() else math.nan
    return out


def show(value: object) -> str:
    if value is None:
        return "refused"
    r, se = value  # type: ignore[misc]
    return pm(r, se)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400, help="replications per cell")
    parser.add_argument("--quick", action="store_true", help="n <= 10^4, 20 replications")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    reps = 20 if args.quick else args.reps
    ns = NS[:2] if args.quick else NS
    warnings.simplefilter("ignore", DplongWarning)
    warnings.simplefilter("ignore", RuntimeWarning)  # overflow when a release misses
    header(
        "benchmarks/accuracy_mean.py",
        [
            f"mu = {MU:g}, sigma^2 = {SIGMA2:g}, delta = 1/n^2; {reps} replications per cell "
            f"(common to all estimators), seed {args.seed}",
            "MSE / MSE(non-private mean) ± paired delta-method SE; predicted = 1 + n·E[noise "
            "sd²]/σ² from the default's own released noise sd",
        ],
    )
    started = time.perf_counter()
    cols = ("default", "stated", "theory", "oracle", "default/oracle")
    print(
        f"| n | ε | {' | '.join(cols)} | predicted (default) | default withheld | theory failed "
        "| off by > σ (%) |"
    )
    print("|---:|---:|" + "---:|" * (len(cols) + 4))
    for n in ns:
        for eps in EPSILONS:
            out = cell(n, eps, reps, args.seed)
            shares = []
            for key in ("withheld", "failed"):
                v = out[key]
                shares.append("—" if v is None else f"{100 * v[0]:.1f} ± {100 * v[1]:.1f} %")  # type: ignore[index]
            print(
                f"| {n:,} | {eps:g} | "
                + " | ".join(show(out[c]) for c in cols)
                + f" | {out['predicted']:.3f} | {shares[0]} | {shares[1]} | {out['missed']} |",
                flush=True,
            )
    print(f"\nruntime {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
