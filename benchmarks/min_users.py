"""How many users a fit given only ε needs: refusals, warnings and accuracy as n shrinks.

Two fits at each ε ∈ {0.5, 1} given nothing else (δ = 1/n²), on the simulated panels of issue 10
(n users x T = 10 AR(1) 0.9 rows, see ``benchmarks/accuracy_defaults.py``):

* the mean of ``y`` (one column): ``winsorized_mean(user_means, epsilon=ε)``;
* ``LongitudinalOLS.from_formula("y ~ x1 + x2", ...)`` (3 columns).

1. **Thresholds** (public facts, found by bisection over n): the largest n the fit refuses
   before any noise (``InsufficientUsersError``) and the largest n whose plan warns before any
   noise (a ``DplongWarning`` from the plan: the medians "may miss the bulk of the data").
   Both depend only on n, ε, δ and the number of columns, so one data set per n decides them.
2. **Accuracy near them**: for n on a grid, R seeded replications each: MSE over that of the
   non-private estimator (mean of user means; average of per-user OLS slopes) ± paired SE, the
   share of replications that warned, the share withheld (NaN) and the share off by more than
   one sd of a user's statistic (a gross miss; the MSE ratio is also shown without them), all
   measured in the same run.

Usage::

    python benchmarks/min_users.py               # docs/accuracy.md ("How many users you need")
    python benchmarks/min_users.py --reps 50     # faster
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from functools import partial

import numpy as np
from _common import SLOPES, ar1_rows, header, mse_ratio, ols_panel, pm, proportion, user_mean_sd

import dplong
from dplong.exceptions import DplongWarning, InsufficientUsersError

MU = 3.7
EPSILONS = (0.5, 1.0)
PLAN_NOTE = "may miss the bulk of the data"
#: Outcome of one fit: (squared error, reference squared error, gross miss, NaN) or None.
Outcome = tuple[float, float, bool, bool]


def fit_mean(n: int, rng: np.random.Generator, epsilon: float) -> Outcome:
    means = MU + ar1_rows(rng, n).mean(axis=1)
    res = dplong.winsorized_mean(means, epsilon=epsilon, random_state=rng)
    err = np.float64(res.params.iloc[0]) - MU
    return (
        float(np.square(err)),
        (means.mean() - MU) ** 2,
        bool(abs(err) > user_mean_sd()),
        bool(np.isnan(err)),
    )


def fit_ols(n: int, rng: np.random.Generator, epsilon: float) -> Outcome:
    frame, beta = ols_panel(rng, n)
    res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user").fit(
        epsilon=epsilon, random_state=rng
    )
    err = res.params.to_numpy()[1:] - SLOPES
    sd = np.nanstd(beta[:, 1:], axis=0)
    public = np.nanmean(beta, axis=0)[1:] - SLOPES
    gross = bool(np.any(np.abs(err) > sd))
    return float(np.sum(err**2)), float(np.sum(public**2)), gross, bool(np.isnan(err).any())


FITS: dict[str, Callable[[int, np.random.Generator, float], Outcome]] = {
    "mean (1 column)": fit_mean,
    "LongitudinalOLS y ~ x1 + x2 (3 columns)": fit_ols,
}


def attempt(
    fit: Callable[[int, np.random.Generator], Outcome], n: int, rng: np.random.Generator
) -> tuple[Outcome | None, list[str]]:
    """One fit: its outcome (None if refused) and its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DplongWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            out: Outcome | None = fit(n, rng)
        except InsufficientUsersError:
            out = None
    return out, [str(w.message) for w in caught if issubclass(w.category, DplongWarning)]


def largest(predicate: Callable[[int], bool], lo: int = 2, hi: int = 20_000) -> int:
    """Largest n in [lo, hi) with ``predicate(n)`` true, for a predicate true below a point."""
    if not predicate(lo):
        return lo - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if predicate(mid) else (lo, mid)
    return lo


def thresholds(fit: Callable[[int, np.random.Generator], Outcome], seed: int) -> tuple[int, int]:
    def refused(n: int) -> bool:
        return attempt(fit, n, np.random.default_rng([seed, n]))[0] is None

    def planned_warning(n: int) -> bool:
        out, notes = attempt(fit, n, np.random.default_rng([seed, n]))
        return out is None or any(PLAN_NOTE in note for note in notes)

    return largest(refused), largest(planned_warning)


def accuracy_row(
    fit: Callable[[int, np.random.Generator], Outcome], n: int, reps: int, seed: int
) -> str:
    rng = np.random.default_rng([seed, n, 7])
    private, public, misses = [], [], []
    warned = withheld = refused = 0
    for _ in range(reps):
        out, notes = attempt(fit, n, rng)
        if out is None:
            refused += 1
            continue
        warned += bool(notes)
        sq, ref, miss, nan = out
        withheld += nan
        if not nan:
            misses.append(miss)
            private.append(sq)
            public.append(ref)
    if refused == reps:
        return f"| {n:,} | {reps} | refused | — | — | — | — |"
    share = [pm(*proportion(k, reps), 2) for k in (warned, withheld)]
    kept = ~np.asarray(misses)
    clean = mse_ratio(np.asarray(private)[kept], np.asarray(public)[kept])
    return (
        f"| {n:,} | {reps} | {pm(*mse_ratio(private, public))} | {pm(*clean)} | {share[0]} | "
        f"{share[1]} | {pm(*proportion(sum(misses), len(private)), 2)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100, help="replications per n")
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # the SE of an infinite MSE is NaN
    header(
        "benchmarks/min_users.py",
        [f"epsilon in {args.epsilons} only (delta = 1/n^2); seed {args.seed}"],
    )
    started = time.perf_counter()
    for epsilon in args.epsilons:
        for name, fit_at in FITS.items():
            fit = partial(fit_at, epsilon=epsilon)
            refused, warned = thresholds(fit, args.seed)
            print(
                f"\n{name}, ε = {epsilon:g}: refused for n <= {refused}; the plan warns for "
                f"n <= {warned}; no refusal and no plan warning from n = {warned + 1}"
            )
            grid = sorted({refused + 1, warned, warned + 1, *(k * warned for k in (2, 4, 10))})
            print(
                "| n | reps | MSE / non-private MSE | the same without gross misses | warned | "
                "withheld (NaN) | gross misses (off by > 1 sd of a user) |"
            )
            print("|---:|---:|---:|---:|---:|---:|---:|")
            for n in grid:
                print(accuracy_row(fit, n, args.reps, args.seed), flush=True)
    print(f"\nruntime {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
