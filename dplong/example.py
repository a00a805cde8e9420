"""End-to-end example on the shipped wage panel (Vella & Verbeek 1998).

Run it with ``python -m dplong.example``.

Every one of the 545 men contributes 8 yearly rows; all of a man's rows are protected together.
"""

from __future__ import annotations

import numpy as np

import dplong


def main() -> None:
    wages = dplong.datasets.load_wage_panel()
    n = wages["nr"].nunique()
    print(f"Wage panel: {n} men (public), log hourly wage, user-level DP with epsilon=1\n")
    # Variance proxy of one man's 8-year mean log wage: a public, conservative guess of 0.5**2.
    result = dplong.winsorized_mean(
        wages["lwage"], groups=wages["nr"], epsilon=1.0, scale=0.25, names=["lwage"]
    )
    print(f"private mean log wage: {result.estimate:.4f}  (noise sd {result.noise_sd:.4f})")
    print(
        f"non-private mean of user means: "
        f"{wages.groupby('nr')['lwage'].mean().mean():.4f}  (shown for comparison only)\n"
    )
    print(result.privacy)
    np.set_printoptions(precision=4)


if __name__ == "__main__":
    main()
