"""End-to-end example on the shipped wage panel (Vella & Verbeek 1998).

Run it with ``python -m dplong.example``. Every one of the 545 men contributes 8 yearly rows;
all of a man's rows are protected together (user-level differential privacy).
"""

from __future__ import annotations

import dplong


def main() -> None:
    wages = dplong.datasets.load_wage_panel()
    # Public assumptions: the variance of one man's own regression coefficients (intercept,
    # experience, experience squared), from domain knowledge — not from these data.
    model = dplong.LongitudinalOLS.from_formula(
        "lwage ~ exper + expersq", wages, groups="nr", time="year"
    )
    results = model.fit(epsilon=1.0, scale=[2.0, 0.2, 0.001])
    print(results.summary())
    print()
    pigs = dplong.datasets.load_dietox()
    location = dplong.RandomEffectsLocation.from_formula("Weight ~ 1", pigs, groups="Pig")
    print(location.fit(epsilon=2.0, scale=400.0, within_scale=900.0, min_rows=11).summary())


if __name__ == "__main__":
    main()
