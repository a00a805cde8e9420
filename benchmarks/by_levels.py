"""User-level means by a declared grouping (``winsorized_mean(..., by=, levels=)``), given only ε.

Each of n users is at one of L levels (drawn uniformly), with 5 rows about ``2 + level + U``,
``U ~ N(0, 1)`` and row noise N(0, 1); the truth of a level is the mean of its users' own means
(the estimand the results state). Two releases of the same panels:

* **sequential** (the default, ``by_constant=False``): one column per level over all n users,
  the levels sharing ε (a user's rows may carry several levels);
* **parallel** (``by_constant=True``): each level released on its own users with half of ε
  (a replaced user can move between two levels).

Reported per cell: the level means released (the others are withheld, NaN with a reason), how
many of those are off the truth by 10 sds of one user's mean or more (issue 29's bar for an
absurd release: they should be withheld), the coverage of the released 95 % intervals, and the
MSE over that of the non-private level means (the sampling error alone is 1), over the releases
within 10 sds. A level at 8 levels and 1,000 users holds about 125 users, and its count of users
has the noise sd of a count over n: the regime where the sequential release has little to go on.

Run ``python benchmarks/by_levels.py [--reps R]``; docs/accuracy.md holds the numbers of
``--reps 60``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import header, mse_ratio, pm

import dplong

T = 5
#: (users, ε, levels)
CELLS = ((1000, 2.0, 4), (1000, 4.0, 8), (2000, 2.0, 8), (2000, 1.0, 4), (3000, 1.0, 3))
#: One user's mean has sd √(1 + 1/T); an error of 10 of those is absurd.
ABSURD_SDS = 10.0


def cell(n: int, epsilon: float, levels: int, reps: int, parallel: bool) -> str:
    sd = np.sqrt(1.0 + 1.0 / T)
    released = absurd = covered = 0
    private: list[float] = []
    reference: list[float] = []
    for rep in range(reps):
        rng = np.random.default_rng([7, rep])
        level = rng.integers(0, levels, n)
        rows = (2.0 + level + rng.normal(0.0, 1.0, n))[:, None] + rng.normal(0.0, 1.0, (n, T))
        means = rows.mean(axis=1)
        counts = np.bincount(level, minlength=levels)
        truth = np.bincount(level, weights=means, minlength=levels) / counts
        population = 2.0 + np.arange(levels)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dplong.winsorized_mean(
                pd.DataFrame({"y": rows.ravel(), "g": np.repeat(level, T)}),
                groups=np.repeat(np.arange(n), T),
                by="g",
                levels=list(range(levels)),
                by_constant=parallel,
                epsilon=epsilon,
                random_state=rng,
            )
        estimate = res.params.to_numpy()
        interval = res.conf_int().to_numpy()
        shown = np.isfinite(estimate)
        released += int(shown.sum())
        far = shown & (np.abs(estimate - truth) > ABSURD_SDS * sd)
        absurd += int(far.sum())
        inside = (interval[:, 0] <= truth) & (truth <= interval[:, 1])
        covered += int((inside & shown).sum())
        kept = shown & ~far
        private += list(((estimate - population) ** 2)[kept])
        reference += list(((truth - population) ** 2)[kept])
    ratio, se = mse_ratio(private, reference)
    coverage = covered / released if released else float("nan")
    return (
        f"| {n:,}, ε = {epsilon:g}, {levels} levels | {'parallel' if parallel else 'sequential'} "
        f"| {released} of {reps * levels} | {absurd} | {coverage:.3f} | {pm(ratio, se)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=60)
    args = parser.parse_args()
    header("by_levels.py", [f"reps {args.reps} a cell, seeds [7, rep]"])
    print(
        "| users, ε, levels | release | released | off by ≥ 10 sds | coverage | MSE / non-private |"
    )
    print("|---|---|---:|---:|---:|---:|")
    start = time.perf_counter()
    for n, epsilon, levels in CELLS:
        for parallel in (False, True):
            print(cell(n, epsilon, levels, args.reps, parallel), flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
