"""Accuracy of the defaults: fits given only ε, against the non-private estimator (issue 10).

Each cell runs R seeded replications and prints the ratio of the private fit's error to the
non-private estimator's, measured in the same run on the same data:

* mean of user means, n users x T = 10 rows with AR(1) 0.9 errors around 3.7 (unit marginal
  variance): MSE(private) / MSE(mean of user means), both around the true mean;
* the shipped wage panel, mean of ``lwage`` (545 men), ε = 1: RMSE of the private mean around
  the non-private mean of user means (the privacy error; the sampling SE is printed beside);
* LongitudinalOLS, n users x T = 10, ``y = 1 + 0.5 x1 - 0.3 x2 + u + e`` (user effect u ~ N(0, 1),
  AR(1) 0.9 errors, x ~ N(0, 1)): MSE of the slopes / MSE of the non-private average of per-user
  OLS fits, both around the true slopes;
* the wage panel, ``lwage ~ exper + expersq``, ε = 4: RMSE of each coefficient around the
  non-private average of per-man OLS fits, over that average's standard error;
* coverage of the default 95 % intervals in the simulated cells.

Run ``python benchmarks/accuracy_defaults.py [--reps R]``; the numbers in docs/accuracy.md
come from ``--reps 400``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import dplong
from dplong.models.reduce import per_user_coefficients

TARGETS = {
    ("mean", 1000, 1.0): 1.5,
    ("mean", 1000, 0.5): 3.0,
    ("mean", 10_000, 1.0): 1.05,
    ("ols", 10_000, 1.0): 1.5,
    ("ols", 10_000, 0.5): 3.0,
}


def ar1_rows(rng: np.random.Generator, n: int, T: int, phi: float) -> np.ndarray:
    """n x T AR(1) rows with unit marginal variance."""
    e = rng.normal(size=(n, T))
    x = np.empty((n, T))
    x[:, 0] = e[:, 0]
    for t in range(1, T):
        x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi**2) * e[:, t]
    return x


def mean_cell(n: int, epsilon: float, reps: int, rng: np.random.Generator) -> dict[str, float]:
    private, public, covered = [], [], 0
    for _ in range(reps):
        means = 3.7 + ar1_rows(rng, n, 10, 0.9).mean(axis=1)
        res = dplong.winsorized_mean(means, epsilon=epsilon, random_state=rng)
        estimate = float(res.params.iloc[0])
        private.append((estimate - 3.7) ** 2)
        public.append((means.mean() - 3.7) ** 2)
        ci = res.conf_int().iloc[0]
        covered += ci["lower"] <= 3.7 <= ci["upper"]
    return {"ratio": float(np.mean(private) / np.mean(public)), "coverage": covered / reps}


def wage_mean(reps: int, rng: np.random.Generator) -> dict[str, float]:
    wages = dplong.datasets.load_wage_panel()
    reference = wages.groupby("nr")["lwage"].mean()
    errors = []
    for _ in range(reps):
        res = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0,
                                     random_state=rng)
        errors.append(float(res.params.iloc[0]) - reference.mean())
    errors_ = np.asarray(errors)
    return {
        "rmse": float(np.sqrt(np.mean(errors_**2))),
        "sampling_se": float(reference.std(ddof=1) / np.sqrt(reference.size)),
        "share_off_0.1": float(np.mean(np.abs(errors_) > 0.1)),
    }


def ols_panel(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T = 10
    x = rng.normal(size=(n * T, 2))
    effect = np.repeat(rng.normal(size=n), T)
    errors = ar1_rows(rng, n, T, 0.9).ravel()
    y = 1.0 + 0.5 * x[:, 0] - 0.3 * x[:, 1] + effect + errors
    return x, y, np.repeat(np.arange(n), T)


def ols_cell(n: int, epsilon: float, reps: int, rng: np.random.Generator) -> dict[str, float]:
    import pandas as pd

    truth = np.array([0.5, -0.3])
    private, public, covered, cells = [], [], 0, 0
    for _ in range(reps):
        x, y, users = ols_panel(rng, n)
        frame = pd.DataFrame({"user": users, "x1": x[:, 0], "x2": x[:, 1], "y": y})
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user").fit(
            epsilon=epsilon, random_state=rng
        )
        design = np.column_stack([np.ones(y.size), x])
        beta, _ = per_user_coefficients(y, design, users, n)
        private.append(np.sum((res.params.to_numpy()[1:] - truth) ** 2))
        public.append(np.sum((np.nanmean(beta, axis=0)[1:] - truth) ** 2))
        ci = res.conf_int().to_numpy()[1:]
        covered += int(np.sum((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
        cells += 2
    return {"ratio": float(np.mean(private) / np.mean(public)), "coverage": covered / cells}


def wage_ols(reps: int, rng: np.random.Generator) -> dict[str, float]:
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + expersq", wages, groups="nr",
                                                time="year")
    design = model._design
    beta, ok = per_user_coefficients(design.y, design.X, design.codes, design.n)
    reference = np.nanmean(beta, axis=0)
    se = np.nanstd(beta, axis=0, ddof=1) / np.sqrt(ok.sum())
    draws = np.array([
        model.fit(epsilon=4.0, random_state=rng).params.to_numpy() for _ in range(reps)
    ])
    rmse = np.sqrt(np.mean((draws - reference) ** 2, axis=0))
    return {name: float(r / s) for name, r, s in zip(design.columns, rmse, se, strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)
    print(f"replications per cell: {args.reps}")
    for n, eps in ((1000, 1.0), (1000, 0.5), (2000, 0.5), (10_000, 1.0)):
        start = time.perf_counter()
        out = mean_cell(n, eps, args.reps, rng)
        target = TARGETS.get(("mean", n, eps))
        print(f"mean  n={n:>6} eps={eps:<4} MSE ratio {out['ratio']:.3f}"
              + (f" (target <= {target})" if target else "")
              + f"  coverage {out['coverage']:.3f}  [{time.perf_counter() - start:.0f} s]")
    out = wage_mean(args.reps, rng)
    print(f"wage panel mean of lwage eps=1: RMSE {out['rmse']:.4f} (target <= 0.033; sampling "
          f"SE {out['sampling_se']:.4f}); off by > 0.1 in {out['share_off_0.1']:.1%}")
    for eps in (1.0, 0.5):
        out = ols_cell(10_000, eps, max(args.reps // 4, 20), rng)
        print(f"OLS   n= 10000 eps={eps:<4} slopes MSE ratio {out['ratio']:.3f} (target <= "
              f"{TARGETS[('ols', 10_000, eps)]})  coverage {out['coverage']:.3f}")
    out = wage_ols(args.reps, rng)
    print("wage panel lwage ~ exper + expersq eps=4: RMSE / non-private SE "
          + ", ".join(f"{k} {v:.2f}" for k, v in out.items()) + " (target <= 1.5 each)")


if __name__ == "__main__":
    main()
