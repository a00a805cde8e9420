"""Pooled OLS from released sufficient statistics (issue 28): the targets, measured in one run.

1. **RAND HIE** (5,912 persons, 20,190 person-years), ``np.log1p(meddol) ~ np.log(coins + 1) +
   xage + female``, ``max_rows=5`` (the study ran 3 or 5 years), ε = 1, given only ε (the
   ranges found privately) and with public bounds (spending below e^12, coinsurance 0-100 %,
   ages 0-100): over ``--reps`` seeds, the share of fits with every coefficient released, the
   RMSE around the non-private pooled OLS over its person-clustered SE (statsmodels), the
   median and 95th percentile of |error| / bse, and the coverage of the non-private estimate
   by the 95 % interval.
   The same with the study's 18 plans as declared levels (``+ C(plan, levels=[...])``: 17
   indicator columns, whose ranges the formula gives) at ε = 2, given only ε.
2. **Simulated panels**, T = 8, d regressors each with a person effect (``x = a_u + b_ut``, both
   N(0, 1)), ``y = x'β + α_u + e``, β = 0.5, α and e N(0, 1); given only ε (``max_rows=8``);
   ε = 1: the MSE of the private slopes over the non-private pooled MSE (both around the
   truth), coverage of the truth and the 95th percentile of |error| / bse.

Run ``python benchmarks/pooled.py [--reps R]``; docs/accuracy.md holds the numbers of the
default 100.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from _common import header, mse_ratio, pm, proportion, rmse

import dplong

HIE_FORMULA = "np.log1p(meddol) ~ np.log(coins + 1) + xage + female"
HIE_BOUNDS = {
    "np.log1p(meddol)": (0, 12),
    "np.log(coins + 1)": (0, 4.62),
    "xage": (0, 100),
    "female": (0, 1),
}
#: The study's 18 plans (public: the design of the experiment), declared.
PLANS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19)
HIE_PLAN_FORMULA = HIE_FORMULA + f" + C(plan, levels={list(PLANS)})"
CELLS = ((500, 3), (500, 6), (1000, 3), (2000, 3), (5000, 3), (5000, 6))


def randhie(
    reps: int,
    seed: int,
    bounds: dict[str, tuple[float, float]] | None,
    *,
    formula: str = HIE_FORMULA,
    epsilon: float = 1.0,
) -> None:
    hie = dplong.datasets.load_randhie()
    ols = smf.ols(formula, hie).fit(cov_type="cluster", cov_kwds={"groups": hie["zper"]})
    model = dplong.PooledOLS.from_formula(formula, hie, groups="zper", bounds=bounds)
    errors, ratios, covered, released = [], [], [], 0
    for r in range(reps):
        res = model.fit(epsilon=epsilon, max_rows=5, random_state=seed + r)
        released += bool(np.isfinite(res.params).all())
        error = res.params - ols.params
        errors.append(error / ols.bse)
        ratios.append(np.abs(error) / res.bse)
        ci = res.conf_int(0.05)
        covered.append((ci["lower"] <= ols.params) & (ols.params <= ci["upper"]))
    frame = pd.DataFrame(errors)
    given = "public bounds" if bounds else "given only epsilon"
    print(
        f"\nRAND HIE, {formula}, eps = {epsilon:g}, {given}, {reps} seeds: every coefficient "
        f"released in {released}/{reps}"
    )
    print(
        f"{'coefficient':<20} {'np':>8} {'SE':>7} {'RMSE/SE':>14} {'med|e|/bse':>10} "
        f"{'p95|e|/bse':>10} {'coverage':>14}"
    )
    ratio = pd.DataFrame(ratios)
    cover = pd.DataFrame(covered)
    for name in ols.params.index:  # the RMSE and the ratios over the fits that released it
        value, se = rmse(frame[name].dropna())
        share, share_se = proportion(float(cover[name].sum()), reps)
        print(
            f"{name:<20} {ols.params[name]:>8.3f} {ols.bse[name]:>7.3f} {pm(value, se, 2):>14} "
            f"{ratio[name].median():>10.2f} {ratio[name].quantile(0.95):>10.2f} "
            f"{pm(share, share_se, 2):>14}"
        )


def panel(rng: np.random.Generator, n: int, d: int, T: int = 8) -> pd.DataFrame:
    ids = np.repeat(np.arange(n), T)
    x = np.repeat(rng.normal(size=(n, d)), T, axis=0) + rng.normal(size=(n * T, d))
    y = x @ np.full(d, 0.5) + np.repeat(rng.normal(size=n), T) + rng.normal(size=n * T)
    frame = pd.DataFrame(x, columns=[f"x{k}" for k in range(d)])
    frame["y"], frame["id"] = y, ids
    return frame


def simulated(reps: int, seed: int) -> None:
    print(
        f"\nSimulated, T = 8, eps = 1, given only epsilon, {reps} fits per cell: slopes pooled "
        "over the cell"
    )
    print(
        f"{'n':>5} {'d':>2} {'MSE / non-private':>18} {'coverage':>12} {'p95|e|/bse':>10} "
        f"{'released':>8}"
    )
    for n, d in CELLS:
        rng = np.random.default_rng(seed + 1000 * n + d)
        names = [f"x{k}" for k in range(d)]
        formula = "y ~ " + " + ".join(names)
        private, public, ratios, hits, released = [], [], [], 0, 0
        for r in range(reps):
            frame = panel(rng, n, d)
            X = np.column_stack([np.ones(len(frame)), frame[names].to_numpy()])
            exact = np.linalg.lstsq(X, frame["y"].to_numpy(), rcond=None)[0][1:]
            try:
                res = dplong.PooledOLS.from_formula(formula, frame, groups="id").fit(
                    epsilon=1.0, max_rows=8, random_state=seed + r
                )
            except dplong.exceptions.InsufficientUsersError:  # refused from public facts
                print(f"{n:>5} {d:>2} refused (n epsilon too small for the private ranges)")
                break
            estimate = res.params[names].to_numpy()
            released += bool(np.isfinite(estimate).all())
            private += list((estimate - 0.5) ** 2)
            public += list((exact - 0.5) ** 2)
            ratios += list(np.abs(estimate - 0.5) / res.bse[names].to_numpy())
            ci = res.conf_int(0.05).loc[names]
            hits += int(((ci["lower"] <= 0.5) & (0.5 <= ci["upper"])).sum())
        if not private:
            continue
        ratio, ratio_se = mse_ratio(private, public)
        share, share_se = proportion(hits, reps * d)
        print(
            f"{n:>5} {d:>2} {pm(ratio, ratio_se, 2):>18} {pm(share, share_se, 3):>12} "
            f"{np.quantile(ratios, 0.95):>10.2f} {released:>4}/{reps}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--parts", default="randhie,plan,simulated", help="comma-separated")
    args = parser.parse_args()
    header("benchmarks/pooled.py")
    start = time.perf_counter()
    if "randhie" in args.parts:
        randhie(args.reps, args.seed, None)
        randhie(args.reps, args.seed, HIE_BOUNDS)
    if "plan" in args.parts:
        randhie(args.reps, args.seed, None, formula=HIE_PLAN_FORMULA, epsilon=2.0)
    if "simulated" in args.parts:
        simulated(args.reps, args.seed)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
