"""End-to-end example on the shipped wage panel (Vella & Verbeek 1998).

Run it with ``python -m dplong.example``. Every one of the 545 men contributes 8 yearly rows;
all of a man's rows are protected together (user-level differential privacy). Nothing but the
privacy budget is given: where the data lie and how much they vary are estimated privately,
within the same budget.
"""

from __future__ import annotations

import dplong


def main() -> None:
    wages = dplong.datasets.load_wage_panel()
    print("Mean log wage of the 545 men (epsilon = 1):")
    mean = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0)
    print(mean.summary())
    print()
    print("Returns to experience, the average of each man's own regression (epsilon = 4):")
    model = dplong.LongitudinalOLS.from_formula(
        "lwage ~ exper + expersq", wages, groups="nr", time="year"
    )
    results = model.fit(epsilon=4.0)
    print(results.summary())
    print()
    print(results.error_bound())
    print()
    print("Location and variance components of log wages (epsilon = 2):")
    location = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr")
    print(location.fit(epsilon=2.0).summary())


if __name__ == "__main__":
    main()
