"""The private Hausman comparison (``dplong.hausman``): its size and power, beside the
non-private within-between test on the same panels.

Panels of n persons, T = 6 rows, ``y = 1 + 0.5 x + u + e`` with ``x = x̄_u + v``,
``x̄_u = ρ u + √(1 - ρ²) w`` (u, w, v, e standard normal): the person effect u is correlated
with the regressor's person mean where ρ > 0, and random effects', the between estimator's
and pooled OLS's slopes are then biased while the within estimator's is not. Each cell fits
``PanelOLS``, ``BetweenOLS`` and ``RandomEffects`` (``y ~ x``, given only ε, each at ε: the
test spends 2ε) and reports the share of fits whose Bonferroni p-value is at most 0.05, for
the within-between and the within-random-effects comparisons; the reference is the
non-private within-between z-test (the within slope with person-clustered SE, the between
slope on the person means with a robust SE, the two variances added: uncorrelated under the
model) on the same panels. ρ = 0 rows are the size (at most 0.05 expected), the others power.

Run ``python benchmarks/hausman.py [--reps R] [--seed S]``; docs/guide/panel.md quotes
``--reps 100``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import pandas as pd
from _common import header, pm, proportion, seeds
from scipy import stats

import dplong

T, SLOPE = 6, 0.5
CELLS = ((1000, 1.0), (1000, 4.0), (5000, 1.0), (5000, 4.0))
RHOS = (0.0, 0.3, 0.6)


def panel(rng: np.random.Generator, n: int, rho: float) -> pd.DataFrame:
    effect = rng.normal(size=n)
    means = rho * effect + math.sqrt(1.0 - rho**2) * rng.normal(size=n)
    ids = np.repeat(np.arange(n), T)
    x = means[ids] + rng.normal(size=n * T)
    y = 1.0 + SLOPE * x + effect[ids] + rng.normal(size=n * T)
    return pd.DataFrame({"id": ids, "x": x, "y": y})


def non_private_p(frame: pd.DataFrame, n: int) -> float:
    """The within-between z-test's p-value, person-clustered within and robust between."""
    x = frame["x"].to_numpy().reshape(n, T)
    y = frame["y"].to_numpy().reshape(n, T)
    xd, yd = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    within = float((xd * yd).sum() / (xd**2).sum())
    scores = (xd * (yd - within * xd)).sum(axis=1)
    v_within = float((scores**2).sum() / (xd**2).sum() ** 2)
    xm, ym = x.mean(axis=1), y.mean(axis=1)
    xc = xm - xm.mean()
    between = float((xc * (ym - ym.mean())).sum() / (xc**2).sum())
    residual = ym - ym.mean() - between * xc
    v_between = float(((xc * residual) ** 2).sum() / (xc**2).sum() ** 2)
    z = (within - between) / math.sqrt(v_within + v_between)
    return float(2.0 * stats.norm.sf(abs(z)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=20261205)
    args = parser.parse_args()
    header("benchmarks/hausman.py", [f"{args.reps} panels a cell, T = {T}, y ~ x"])
    warnings.simplefilter("ignore")  # the fits' notes; the rejection rates say enough
    print(
        f"\n{'n':>5} {'eps':>4} {'rho':>4} {'within-between':>16} {'within-RE':>16} "
        f"{'non-private':>16} {'s':>5}"
    )
    for n, epsilon in CELLS:
        for rho in RHOS:
            start = time.perf_counter()
            between = effects = reference = 0
            for r in range(args.reps):
                data, _, fit_seed = seeds(args.seed, n, int(epsilon), int(10 * rho), r)
                frame = panel(data, n, rho)
                fits = {
                    name: getattr(dplong, name)
                    .from_formula("y ~ x", frame, groups="id")
                    .fit(epsilon=epsilon, random_state=fit_seed)
                    for name in ("PanelOLS", "BetweenOLS", "RandomEffects")
                }
                between += dplong.hausman(fits["PanelOLS"], fits["BetweenOLS"]).rejects(0.05)
                effects += dplong.hausman(fits["PanelOLS"], fits["RandomEffects"]).rejects(0.05)
                reference += non_private_p(frame, n) <= 0.05
            shares = [pm(*proportion(hits, args.reps), 2) for hits in (between, effects, reference)]
            print(
                f"{n:>5} {epsilon:>4g} {rho:>4g} {shares[0]:>16} {shares[1]:>16} "
                f"{shares[2]:>16} {time.perf_counter() - start:>5.0f}"
            )


if __name__ == "__main__":
    main()
