"""Means of per-user statistics most users share one value of (not 0): is every release honest?

Per-user counts most people have at exactly 1 (visits a year), the rest 1 + Exp(5): the release
engine (``release_means``, given only ε) must release an honest estimate, withhold it with a
note, or say in a note that users off the shared value could go unseen. Before 2026-11-27 the
private scale was the shared value's own distance to the midpoint (~0) and the interval
collapsed onto it (80 % at 1, n = 2000, ε = 4: 1.003 ± 0.0003 for a mean of 2.06).

Reported per cell, over ``--reps`` releases (seeds 0, 1, ...): how many were withheld, how many
carried the "could go unseen" note, and of the others ("silent") how many 95 % intervals (noise
and bias bound) held the users' mean, with their RMSE over the users' own standard error (the
sampling reference, measured on the same data).

Run ``python benchmarks/shared_value.py [--reps R]``; docs/accuracy.md holds ``--reps 40``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import header

import dplong
from dplong.privacy.engine import release_means
from dplong.privacy.options import ReleaseOptions

#: (share at exactly 1, n, ε)
CELLS = (
    (0.4, 2000, 1.0),
    (0.5, 2000, 1.0),
    (0.55, 2000, 1.0),
    (0.6, 2000, 1.0),
    (0.8, 2000, 4.0),
    (0.9, 20000, 1.0),
    (0.55, 545, 1.0),
    (0.55, 545, 4.0),
    (0.7, 545, 1.0),
    (0.8, 500, 1.0),
)


def cell(share: float, n: int, epsilon: float, reps: int) -> str:
    withheld = noted = covered = 0
    errors, standard = [], []
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        at_one = int(share * n)
        x = np.r_[np.ones(at_one), 1.0 + rng.exponential(5.0, n - at_one)][:, None]
        options = ReleaseOptions.check(
            n, epsilon=epsilon, delta=None, privacy="central", bound=None, d=1
        )
        res = release_means(x, names=("a",), options=options, rng=rng)
        estimate = res.estimate[0]
        if np.isnan(estimate):
            withheld += 1
            continue
        if any("unseen" in note for note in res.notes):
            noted += 1
            continue
        error = estimate - x.mean()
        covered += abs(error) <= 1.96 * res.noise_sd[0] + res.bias[0]
        errors.append(error)
        standard.append(x.std() / np.sqrt(n))
    silent = len(errors)
    ratio = np.sqrt(np.mean(np.square(errors)) / np.mean(np.square(standard))) if silent else np.nan
    return (
        f"| {share:.0%} | {n} | {epsilon:g} | {withheld} | {noted} | {covered} / {silent} | "
        f"{ratio:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)  # counted in the table
    start = time.perf_counter()
    header("benchmarks/shared_value.py", [f"releases per cell: {args.reps}\n"])
    print("| at 1 | n | ε | withheld | noted | silent releases that cover | RMSE / SE (silent) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for share, n, epsilon in CELLS:
        print(cell(share, n, epsilon, args.reps), flush=True)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
