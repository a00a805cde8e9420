"""Random effects at n = 2000, T = 8, ε = 1 (docs/accuracy.md, "Random effects"): coverage of
the truth by dplong.RandomEffects' 95 % intervals, and its MSE against dplong.PooledOLS and
non-private random effects (linearmodels), on simulated panels with a person effect, a
covariate with a person-level and a within-person part, and a time-invariant treatment.

Run: ``PYTHONPATH=. python benchmarks/random_effects_coverage.py [fits [people [epsilon]]]``
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pandas as pd
from linearmodels import RandomEffects as LinearmodelsRE

import dplong

TRUTH = {"Intercept": 1.0, "x": 0.5, "treated": 1.0}
BOUNDS = {"y": (-2.0, 5.0), "x": (-2.0, 2.0), "treated": (0.0, 1.0)}


def panel(seed: int, people: int = 2000, years: int = 8) -> pd.DataFrame:
    """Bounded (uniform) parts, so that the public bounds hold every value."""
    rng = np.random.default_rng(seed)
    level = np.repeat(rng.uniform(-1, 1, people), years)  # the covariate's person-level part
    treated = np.repeat(rng.integers(0, 2, people), years).astype(float)
    effect = np.repeat(rng.uniform(-1, 1, people), years)  # σ_u² = 1/3
    x = level + rng.uniform(-1, 1, people * years)
    y = 1.0 + 0.5 * x + treated + effect + rng.uniform(-1, 1, people * years)  # σ_e² = 1/3
    ids = np.repeat(np.arange(people), years)
    return pd.DataFrame(
        {"id": ids, "t": np.tile(np.arange(years), people), "y": y, "x": x, "treated": treated}
    )


def main(fits: int, people: int, epsilon: float) -> None:
    rows = []
    for seed in range(fits):
        data = panel(seed, people)
        indexed = data.set_index(["id", "t"])
        exog = indexed[["x", "treated"]].assign(Intercept=1.0)[list(TRUTH)]
        reference = LinearmodelsRE(indexed["y"], exog).fit()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits_ = {
                "re": dplong.RandomEffects.from_formula(
                    "y ~ x + treated", data, groups="id", bounds=BOUNDS
                ).fit(epsilon=epsilon, max_rows=8, random_state=seed),
                "re stated": dplong.RandomEffects.from_formula(
                    "y ~ x + treated", data, groups="id", bounds=BOUNDS
                ).fit(
                    epsilon=epsilon,
                    max_rows=8,
                    random_state=seed,
                    variance_components=tuple(reference.variance_decomposition.iloc[:2]),
                ),
                "pooled": dplong.PooledOLS.from_formula(
                    "y ~ x + treated", data, groups="id", bounds=BOUNDS
                ).fit(epsilon=epsilon, max_rows=8, random_state=seed),
            }
        for name, res in fits_.items():
            low, high = res.conf_int().T.to_numpy()
            for k, (term, truth) in enumerate(TRUTH.items()):
                rows.append(
                    {
                        "fit": name,
                        "term": term,
                        "error": float(res.params[term]) - truth,
                        "covered": bool(low[k] <= truth <= high[k]),
                        "z": abs(float(res.params[term]) - truth) / float(res.bse[term]),
                    }
                )
        for term, truth in TRUTH.items():
            rows.append(
                {"fit": "non-private", "term": term, "error": reference.params[term] - truth}
            )
        decomposition = fits_["re"].variance_decomposition
        rows.append(
            {
                "fit": "components",
                "term": "Effects",
                "error": decomposition["Effects"] - reference.variance_decomposition["Effects"],
            }
        )
        rows.append(
            {
                "fit": "components",
                "term": "Residual",
                "error": decomposition["Residual"] - reference.variance_decomposition["Residual"],
            }
        )
        print(seed, flush=True, file=sys.stderr)
    frame = pd.DataFrame(rows)
    frame.to_csv(f"/tmp/random_effects_coverage_{people}_{epsilon:g}.csv", index=False)
    mse = frame.assign(se=frame["error"] ** 2).pivot_table("se", "term", "fit", "mean")
    print(f"{fits} fits, n = {people}, T = 8, epsilon = {epsilon:g}")
    for fit in ("re", "re stated", "pooled"):
        own = frame[frame["fit"] == fit].groupby("term")
        covered = own["covered"].mean().astype(float)
        table = pd.DataFrame(
            {
                "coverage": covered,
                "binomial SE": np.sqrt(covered * (1 - covered) / fits),
                "95th pct |err|/SE": own["z"].quantile(0.95),
                "MSE / pooled": mse[fit] / mse["pooled"],
                "MSE / non-private RE": mse[fit] / mse["non-private"],
            }
        )
        print(fit)
        print(table.round(3).to_string())
    print(mse.round(6).to_string())


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        int(args[0]) if args else 100,
        int(args[1]) if len(args) > 1 else 2000,
        float(args[2]) if len(args) > 2 else 1.0,
    )
