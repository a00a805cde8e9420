"""How much of ε should the private scale get? (``scale="estimate"``, docs/accuracy.md).

For each n and share s, the Winsorized mean with ``scale="estimate"`` (CoinPress from the
default bounds, s of the budget for the scale) is compared with the same estimator *given* the
true variance, both at the same total ε, on the same data sets (i.i.d. N(100, 1) users). Printed:
the MSE ratio plug-in / known (1 = the scale is free), and the worst absolute error, which
exposes releases where the scale estimate failed. The last column is what
``dplong.privacy.plugin.default_scale_share`` picks.

Run: ``python benchmarks/scale_share.py [--reps 200] [--epsilon 1]``.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from dplong.privacy.plugin import default_scale_share

import dplong

SIZES = (1_000, 2_000, 4_000, 6_000, 20_000)
SHARES = (0.1, 0.25, 0.4, 0.5, 0.6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # failures show up in the worst error instead
    eps = args.epsilon
    print(f"epsilon={eps}, {args.reps} replications; cells: MSE ratio (worst |error|)")
    print("n".rjust(7) + " " + "".join(f"share {s:<11}" for s in SHARES) + "default")
    for n in SIZES:
        rng = np.random.default_rng(n)
        data = rng.normal(100.0, 1.0, size=(args.reps, n))
        known = np.array(
            [
                dplong.winsorized_mean(x, epsilon=eps, scale=1.0, random_state=r).estimate
                for r, x in enumerate(data)
            ]
        )
        known_mse = np.mean((known - 100.0) ** 2)
        cells = []
        for share in SHARES:
            est = np.array(
                [
                    dplong.winsorized_mean(
                        x, epsilon=eps, scale_share=share, random_state=r
                    ).estimate
                    for r, x in enumerate(data)
                ]
            )
            err = est - 100.0
            cells.append(f"{np.mean(err**2) / known_mse:7.3g} ({np.abs(err).max():.2g})")
        print(
            f"{n:7d} " + "".join(f"{c:<17}" for c in cells) + f"{default_scale_share(n, eps):.2f}"
        )


if __name__ == "__main__":
    main()
