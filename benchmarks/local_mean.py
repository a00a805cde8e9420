"""The local model's defaults against the naive local baseline (issue 14).

One value per user, N(3.7, 1.3²), ε = 1, public bound B on the mean, n ∈ {10⁴, 10⁵},
B ∈ {10, 100}. Per cell and replication, in the same run on the same data:

* naive: every user reports ``clip(x, ±B) + Laplace(2B/ε)``; the mean of the reports;
* dplong default: ``winsorized_mean(x, epsilon=1, privacy="local", bound=B)`` (scale estimated);
* dplong with the true scale stated (``scale=1.3**2``).

Prints the RMSE of each around the true mean (± Monte Carlo SE), the ratios of dplong's RMSE to
the naive one (± paired delta-method SE) with the issue's targets, the share of estimates
outside [-B, B] (must be 0) and the coverage of the default's 95 % intervals.

Usage::

    python benchmarks/local_mean.py              # docs/accuracy.md (200 replications)
    python benchmarks/local_mean.py --reps 40    # faster
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import header, pm, proportion, rmse, rmse_ratio

import dplong

MU, SD = 3.7, 1.3
#: Targets of issue 14 (acceptance criteria, not results): RMSE / naive RMSE.
TARGETS = {
    ("default", 10.0): 1.0,
    ("default", 100.0): 0.2,
    ("stated", 10.0): 0.7,
    ("stated", 100.0): 0.1,
}


def cell(n: int, bound: float, reps: int, seed: int) -> str:
    rng = np.random.default_rng([seed, n, int(bound)])
    naive: list[float] = []
    errors: dict[str, list[float]] = {"default": [], "stated": []}
    outside, covered = 0, 0
    for _ in range(reps):
        x = rng.normal(MU, SD, n)
        reports = np.clip(x, -bound, bound) + rng.laplace(0.0, 2.0 * bound, n)
        naive.append(float(reports.mean()) - MU)
        for name, scale in (("default", "estimate"), ("stated", SD**2)):
            res = dplong.winsorized_mean(
                x, epsilon=1.0, privacy="local", bound=bound, scale=scale, random_state=rng
            )
            estimate = float(res.params.iloc[0])
            errors[name].append(estimate - MU)
            outside += abs(estimate) > bound
            if name == "default":
                ci = res.conf_int().iloc[0]
                covered += ci["lower"] <= MU <= ci["upper"]
    cells = [f"{n:,}", f"{bound:g}", pm(*rmse(naive), 4)]
    for name, e in errors.items():
        ratio = rmse_ratio(np.square(e), np.square(naive))
        cells += [pm(*rmse(e), 4), f"{pm(*ratio)} (≤ {TARGETS[(name, bound)]})"]
    cells += [pm(*proportion(outside, 2 * reps)), pm(*proportion(covered, reps))]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200, help="replications per cell")
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)
    header(
        "benchmarks/local_mean.py",
        [f"{args.reps} replications per cell, seed {args.seed}; eps = 1, x ~ N({MU}, {SD}^2)"],
    )
    started = time.perf_counter()
    print(
        "| n | B | naive RMSE | default RMSE | default / naive (target) | stated-scale RMSE | "
        "stated / naive (target) | outside [−B, B] | default coverage |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (10_000, 100_000):
        for bound in (10.0, 100.0):
            print(cell(n, bound, args.reps, args.seed), flush=True)
    print(f"\nruntime {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
