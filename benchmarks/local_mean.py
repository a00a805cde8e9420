"""The local model's defaults against the naive local baseline (issue 14).

One value per user, N(3.7, 1.3²), ε = 1, public bound B on the mean. Per cell and replication,
in the same run on the same data:

* naive: every user reports ``clip(x, ±B) + Laplace(2B/ε)``; the mean of the reports;
* dplong default: ``winsorized_mean(x, epsilon=1, privacy="local", bound=B)`` (scale estimated);
* dplong with the true scale stated (``scale=1.3**2``).

Prints the RMSE of each around the true mean, the ratios to the naive one with the issue's
targets, how many estimates fell outside [-B, B] (must be 0), and the coverage of the default's
95 % intervals. ``python benchmarks/local_mean.py [--reps R]``; docs/accuracy.md uses R = 200.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import dplong

TARGETS = {("default", 10.0): 1.0, ("default", 100.0): 0.2, ("stated", 10.0): 0.7,
           ("stated", 100.0): 0.1}


def rmse(errors: list[float]) -> float:
    return float(np.sqrt(np.mean(np.square(errors))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)
    print(f"replications per cell: {args.reps}")
    for n in (10_000, 100_000):
        for bound in (10.0, 100.0):
            naive: list[float] = []
            errors: dict[str, list[float]] = {"default": [], "stated": []}
            outside, covered = 0, 0
            for _ in range(args.reps):
                x = rng.normal(3.7, 1.3, n)
                reports = np.clip(x, -bound, bound) + rng.laplace(0.0, 2.0 * bound, n)
                naive.append(float(reports.mean()) - 3.7)
                for name, scale in (("default", "estimate"), ("stated", 1.3**2)):
                    res = dplong.winsorized_mean(x, epsilon=1.0, privacy="local", bound=bound,
                                                 scale=scale, random_state=rng)
                    estimate = float(res.params.iloc[0])
                    errors[name].append(estimate - 3.7)
                    outside += abs(estimate) > bound
                    if name == "default":
                        ci = res.conf_int().iloc[0]
                        covered += ci["lower"] <= 3.7 <= ci["upper"]
            base = rmse(naive)
            cells = ", ".join(
                f"{name} {rmse(e):.3f} ({rmse(e) / base:.2f}x, target <= "
                f"{TARGETS[(name, bound)]})"
                for name, e in errors.items()
            )
            print(f"n={n:>6} B={bound:>5}: naive {base:.3f}; {cells}; outside [-B, B]: "
                  f"{outside}; default coverage {covered / args.reps:.3f}")


if __name__ == "__main__":
    main()
