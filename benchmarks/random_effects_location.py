"""The random-effects location model against noise-free GLS on unbalanced panels (issue 28).

Issue 28's target: the private precision-weighted fit's MSE of μ within 1.15 times the
noise-free GLS variance ``1 / Σ_u (σ_U² + σ² / T_u)⁻¹`` in each unbalanced cell. Panels of
n = 5,000 persons, ``y_ut = μ + u_u + e_ut`` with μ = 2, ``u ~ N(0, σ_U² = 1)``, ``e ~ N(0, σ²)``
for σ² = 25 and 9, and ``T_u = min(1 + Geometric(1/5), 50)`` rows (mean 5, a long right tail);
``RandomEffectsLocation("y ~ 1").fit(epsilon=1)`` given only ε (``max_rows`` its default 10),
with the components' share of ε at its default 0.5, at 0.35 and at 0.25, and equal weights
for reference. Per row: how many fits released μ, μ's MSE around the truth over the GLS
variance (± its Monte Carlo SE; over the fits that released it), the coverage of μ by the 95 %
interval (a withheld μ counts as not covering), and the RMSE of the two components (``Group Var``,
``Scale``) around the truth, beside their sampling SE (the noise-free ANOVA estimates' sd over
the same panels is not computed: the components' noise dominates at this n ε).

Run ``python benchmarks/random_effects_location.py [--panels P] [--seed S]``; docs/accuracy.md
quotes ``--panels 300`` with seeds 7 and 8.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import header, mse_ratio, pm, proportion

import dplong

MU, GROUP_VAR, N, EPSILON = 2.0, 1.0, 5000, 1.0
#: (label, fit options) of the rows
ROWS = (
    ("precision, variance_share 0.5 (default)", {}),
    ("precision, variance_share 0.35", {"variance_share": 0.35}),
    ("precision, variance_share 0.25", {"variance_share": 0.25}),
    ("equal weights", {"weights": "equal"}),
)


def panel(rng: np.random.Generator, scale: float) -> tuple[pd.DataFrame, float]:
    """One panel and its noise-free GLS variance of μ."""
    rows = np.minimum(1 + rng.geometric(1 / 5, N), 50)
    ids = np.repeat(np.arange(N), rows)
    y = MU + rng.normal(0.0, 1.0, N)[ids] + rng.normal(0.0, np.sqrt(scale), ids.size)
    gls = 1.0 / np.sum(1.0 / (GROUP_VAR + scale / rows))
    return pd.DataFrame({"id": ids, "y": y}), float(gls)


def cell(scale: float, panels: int, seed: int) -> None:
    rng = np.random.default_rng([seed, int(scale)])
    data = [panel(rng, scale) for _ in range(panels)]
    gls = np.array([g for _, g in data])
    print(f"\nσ² = {scale:g}, σ_U² = {GROUP_VAR:g}, n = {N}, ε = {EPSILON:g}, {panels} panels")
    print(
        f"{'fit':<42} {'μ released':>10} {'μ MSE / GLS':>16} {'μ coverage':>14} "
        f"{'Group Var RMSE':>15} {'Scale RMSE':>11}"
    )
    for label, options in ROWS:
        errors, gls_released, covered, components = [], [], 0, []
        for i, (frame, _) in enumerate(data):
            res = dplong.RandomEffectsLocation.from_formula("y ~ 1", frame, groups="id").fit(
                epsilon=EPSILON, random_state=seed * 10_000 + i, **options
            )
            if np.isfinite(res.params["Intercept"]):  # a withheld μ counts as not covering
                errors.append((res.params["Intercept"] - MU) ** 2)
                gls_released.append(gls[i])
            low, high = res.conf_int().loc["Intercept"]
            covered += bool(low <= MU <= high)
            components.append([res.params["Group Var"] - GROUP_VAR, res.params["Scale"] - scale])
        # the GLS variance is each panel's expected error²
        ratio = mse_ratio(errors, gls_released)
        share = proportion(covered, panels)
        rmse = np.sqrt(np.nanmean(np.square(components), axis=0))
        print(
            f"{label:<42} {len(errors):>6}/{panels:<3} {pm(*ratio, 2):>16} {pm(*share, 3):>14} "
            f"{rmse[0]:>15.3f} {rmse[1]:>11.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the fits' notes
    header("benchmarks/random_effects_location.py", [f"seed {args.seed}"])
    start = time.perf_counter()
    for scale in (25.0, 9.0):
        cell(scale, args.panels, args.seed)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
