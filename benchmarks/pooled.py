"""Pooled OLS from released sufficient statistics (issue 28): the targets, measured in one run.

1. **RAND HIE** (5,912 persons, 20,190 person-years), ``np.log1p(meddol) ~ np.log(coins + 1) +
   xage + female``, ``max_rows=5`` (the study ran 3 or 5 years), ε = 1, given only ε (the
   ranges found privately) and with public bounds (spending below e^12, coinsurance 0-100 %,
   ages 0-100): over ``--reps`` seeds, the share of fits with every coefficient released, the
   RMSE around the non-private pooled OLS over its person-clustered SE (statsmodels), the
   median and 95th percentile of |error| / bse, the coverage of the non-private estimate by
   the 95 % interval (a withheld coefficient counts as a miss), the fits that released
   each coefficient and the interval's median half-width over the RMSE (``hw/RMSE``: about
   1.96 for an interval as wide as the errors call for). The same given only ε with the
   study's other covariates (``+ linc + black + physlm + disea``: log income, whose lower tail
   the range clips, two columns of about a fifth of the persons at 1 and a disease count).
   The same with the study's 18 plans as declared levels (``+ C(plan, levels=[...])``: 17
   indicator columns, whose ranges the formula gives) at ε = 2, given only ε: coinsurance is
   a function of the plan, so that design is singular (statsmodels' pseudo-inverse picks one
   solution); and the identified one, the plans in place of coinsurance.
2. **Simulated panels**, T = 8, d regressors each with a person effect (``x = a_u + b_ut``, both
   N(0, 1)), ``y = x'β + α_u + e``, β = 0.5, α and e N(0, 1); given only ε (``max_rows=8``);
   ε = 1: the MSE of the private slopes over the non-private pooled MSE (both around the
   truth), coverage of the truth, the 95th percentile of |error| / bse and the median
   half-width over the RMSE around the truth (``hw/RMSE``). Beside it, on the
   same panels, two peers given generous public bounds (:data:`PEER_X`, :data:`PEER_Y`):
   AdaSSP with each person's rows summed whole (own code from Wang 2018's formulas) and
   diffprivlib's ``LinearRegression`` at row level with ε / T (skipped without diffprivlib).

3. **A declared factor** (``--parts factor``): ``y ~ C(arm, levels=[...]) + age`` on panels of
   2000 persons, T = 4, five arms (shares 30, 30, 20, 15 and 5 %) constant within a person, ε = 3
   given only ε: fits released, RMSE around the non-private pooled OLS over its clustered SE
   and coverage of it, per coefficient.
4. **The within estimator** (``--parts within``): on the simulated panels of part 2, the slopes
   of :class:`dplong.PanelOLS` (the within estimator from released sufficient statistics) and of
   ``LongitudinalOLS(estimator="within")`` (the per-entry within release), ε = 1, given only ε:
   MSE around the truth over the non-private within MSE, coverage of the truth, the 95th
   percentile of |error| / bse, and the fits with every slope released.
5. **The per-user (mean-group) estimator** (``--parts per-user``): on the same panels,
   ``LongitudinalOLS`` (each person's own OLS, averaged) at ε = 1, given only ε: its slopes'
   MSE around the truth over the non-private average of the persons' own fits, coverage of
   the truth, the fits with every slope released and those refused before any noise.

6. **The wage panel with between-person covariates** (``--parts wage``), 545 men, given only ε,
   ``max_rows=8``: :class:`dplong.PanelOLS` ``lwage ~ exper + I((exper - 7)**2) + educ + black``
   (schooling and race never change within a man: declared ``between=``; found absorbed
   instead, the other coefficients would be withheld) at
   ε = 2 and 4, against linearmodels' ``PanelOLS(entity_effects=True, drop_absorbed=True)``;
   :class:`dplong.PooledOLS` ``lwage ~ educ + black + exper + union`` with the 0/1 columns'
   public bounds at ε = 4 and 8, against statsmodels' OLS; :class:`dplong.RandomEffects` of
   the same at ε = 2, 4 and 8, against linearmodels' ``RandomEffects`` (GLS); all clustered by
   man. The fits with every estimable coefficient released (and the withheld reasons), the
   share of them that warn, the RMSE over the non-private clustered SE and the coverage of the
   non-private estimate over those fits.

7. **Large panels** (``--parts large``): three normal regressors, one constant within persons,
   two rows a person, β = (1, 1, -1, 1) with a normal person effect, 5,000 to 320,000 persons,
   :class:`dplong.PooledOLS` at ε = 1 given only ε: each coefficient's mean error over its
   bse, the coverage of the truth, the RMSE around the truth over the non-private pooled
   OLS's, over ``--reps`` fits (at most 20: each panel is drawn anew).

8. **Skewed regressors** (``--parts skewed-x``): a lognormal (σ = 1) and a t₃ regressor varying
   within persons, an exponential one constant within them, a normal person effect and t₄
   errors, two rows a person, β = (1, 1, -1, 1), 5,000 to 80,000 persons, :class:`dplong.PooledOLS`
   at ε = 1 given only ε: per coefficient the fits that released it, its mean error over its
   bse, the coverage of the truth and the 95th percentile of |error| / bse over those fits,
   and the RMSE around the truth over the non-private pooled OLS's, over ``--reps`` fits (at
   most 20).

9. **Skewed outcomes, one mean a person** (``--parts skewed-y``): :class:`dplong.BetweenOLS`
   ``y ~ treat + x`` (a 0/1 treatment constant within persons, a normal regressor with a
   person effect, four rows a person), the person effect and the errors normal, exponential
   (centred), or the person effect lognormal (σ = 1, centred) and the errors normal, 500 to
   10,000 persons at ε = 1 and 1,000 and 3,000 at ε = 4, given only ε: per coefficient its
   mean error over its bse, the
   coverage of the truth, the 95th percentile of |error| / bse and the RMSE over the
   non-private between estimator's, the fits whose skew check widened the last step (each
   warns), and the misses with no warning; and RAND HIE's ``np.log1p(mdvis) ~ np.log(coins +
   1) + xage + female`` between persons at ε = 1, around the non-private between estimate
   (linearmodels' ``BetweenOLS``), over its robust SE. Over ``--reps`` fits.

10. **Small panels** (``--parts small``): part 9's panels at 1,000 and 2,000 persons, ε = 1,
    given only ε, :class:`dplong.PooledOLS` and :class:`dplong.RandomEffects`: the fits with every
    coefficient released and the reasons of those withheld; over the released, per coefficient
    the RMSE around the truth and the coverage of it, the fits with an error above 5 and the
    misses with no warning.
11. **The planner's noise forecast** (``--parts forecast``): ``dplong.plan``'s reference-panel
    forecast of each slope's noise sd (:mod:`dplong.planning.reference`), times the data's
    ``sd(outcome) / sd(column)`` (a 0/1 column: ``sd(outcome)``), over the median noise sd that
    ``--reps`` fits of the real data report (at most 20), and the spread of their estimates
    (the noise they carry: the data are fixed) over that reported sd; RAND HIE (pooled and
    random effects, ε = 1, ``max_rows=5``) and the wage panel (pooled at ε = 2 and 4,
    ``PanelOLS`` at ε = 4), given only ε.

12. **The covariance between coefficients** (``--parts covariance``): two regressors that
    move together (``z = 0.9 x + 0.45 e``, each row; ``y = 1 + x + z + α_u + e``, α and e
    N(0, 1)), T = 5, :class:`dplong.PooledOLS` given only ε, data and noise drawn afresh each
    fit, at (n, ε) = (1,000, 4), (2,000, 2) and (5,000, 1); and RAND HIE's headline at ε = 1
    around the non-private estimate (the data fixed: the errors are the privacy noise's). Per
    cell: the correlation of the x and z slopes (of ``log(coins + 1)`` and ``xage`` on RAND HIE)
    in the errors and in the mean released ``cov_params()`` (the non-private clustered one
    beside it), the errors' second moment over the released variance along x, z, x - z and
    x + z, and the coverage of the truth by the 95 % joint Wald region of the two slopes and by
    ``t_test``'s intervals of x - z and x + z, on the released covariance and on its diagonal
    alone (what ``cov_params()`` gave before it held the covariance).

``--max-rows found`` leaves ``max_rows`` to the fits (found privately) instead of giving each
panel's public length. Run ``python benchmarks/pooled.py [--reps R]``; docs/accuracy.md holds
the numbers of the default 100.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from _common import header, mse_ratio, pm, proportion, rmse
from scipy import stats

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
HIE_COVARIATES = HIE_FORMULA + " + linc + black + physlm + disea"
HIE_PLAN_ONLY = f"np.log1p(meddol) ~ C(plan, levels={list(PLANS)}) + xage + female"
CELLS = ((500, 3), (500, 6), (1000, 3), (2000, 3), (5000, 3), (5000, 6))
#: ``--max-rows``: ``stated`` gives each panel's public length as ``max_rows``, ``found`` leaves
#: it to the fit (found privately, as a user who gives only ε gets it).
MAX_ROWS = {"found": False}


def rows_option(length: int) -> dict[str, int]:
    """The ``max_rows`` option of a fit on panels of ``length`` rows a person."""
    return {} if MAX_ROWS["found"] else {"max_rows": length}


#: The within estimator's cells of issue 28's targets.
WITHIN_CELLS = ((1000, 3), (2000, 3), (5000, 3), (5000, 6))


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
    errors, ratios, covered, widths, released = [], [], [], [], 0
    for r in range(reps):
        res = model.fit(epsilon=epsilon, **rows_option(5), random_state=seed + r)
        released += bool(np.isfinite(res.params).all())
        error = res.params - ols.params
        errors.append(error / ols.bse)
        ratios.append(np.abs(error) / res.bse)
        ci = res.conf_int(0.05)
        covered.append((ci["lower"] <= ols.params) & (ols.params <= ci["upper"]))
        widths.append((ci["upper"] - ci["lower"]) / 2.0 / ols.bse)
    frame = pd.DataFrame(errors)
    given = "public bounds" if bounds else "given only epsilon"
    print(
        f"\nRAND HIE, {formula}, eps = {epsilon:g}, {given}, {reps} seeds: every coefficient "
        f"released in {released}/{reps}"
    )
    print(
        f"{'coefficient':<20} {'np':>8} {'SE':>7} {'RMSE/SE':>14} {'med|e|/bse':>10} "
        f"{'p95|e|/bse':>10} {'coverage':>14} {'released':>9} {'hw/RMSE':>8}"
    )
    ratio = pd.DataFrame(ratios)
    cover = pd.DataFrame(covered)
    width = pd.DataFrame(widths)
    for name in ols.params.index:  # the RMSE and the ratios over the fits that released it
        if frame[name].isna().all():
            print(
                f"{name:<20} {ols.params[name]:>8.3f} {ols.bse[name]:>7.3f} withheld in every fit"
            )
            continue
        value, se = rmse(frame[name].dropna())
        share, share_se = proportion(float(cover[name].sum()), reps)
        print(
            f"{name:<20} {ols.params[name]:>8.3f} {ols.bse[name]:>7.3f} {pm(value, se, 2):>14} "
            f"{ratio[name].median():>10.2f} {ratio[name].quantile(0.95):>10.2f} "
            f"{pm(share, share_se, 2):>14} {int(frame[name].notna().sum()):>5}/{reps} "
            f"{width[name].median() / value:>8.2f}"
        )


ARMS = {"a": 0.0, "b": 0.3, "c": 0.6, "d": -0.3, "e": 0.5}
ARM_FORMULA = f"y ~ C(arm, levels={list(ARMS)}) + age"


def factor(reps: int, seed: int, n: int = 2000, epsilon: float = 3.0) -> None:
    errors, covered, released = [], [], 0
    for r in range(reps):
        rng = np.random.default_rng(seed + r)
        arm = np.repeat(rng.choice(list(ARMS), n, p=[0.3, 0.3, 0.2, 0.15, 0.05]), 4)
        age = rng.uniform(20, 60, arm.size)
        y = (
            1.0
            + pd.Series(arm).map(ARMS).to_numpy()
            + 0.02 * age
            + np.repeat(rng.normal(0, 0.5, n), 4)
            + rng.normal(0, 0.5, arm.size)
        )
        frame = pd.DataFrame({"id": np.repeat(np.arange(n), 4), "y": y, "arm": arm, "age": age})
        ols = smf.ols(ARM_FORMULA, frame).fit(cov_type="cluster", cov_kwds={"groups": frame["id"]})
        res = dplong.PooledOLS.from_formula(ARM_FORMULA, frame, groups="id").fit(
            epsilon=epsilon, **rows_option(4), random_state=seed + r
        )
        released += bool(np.isfinite(res.params).all())
        errors.append((res.params - ols.params) / ols.bse)
        ci = res.conf_int(0.05)
        covered.append((ci["lower"] <= ols.params) & (ols.params <= ci["upper"]))
    print(
        f"\n{ARM_FORMULA}, n = {n}, T = 4, eps = {epsilon:g}, given only epsilon: every "
        f"coefficient released in {released}/{reps}"
    )
    frame, cover = pd.DataFrame(errors), pd.DataFrame(covered)
    for name in frame.columns:
        if frame[name].isna().all():
            print(f"{name:<40} withheld in every fit")
            continue
        value, se = rmse(frame[name].dropna())
        share, share_se = proportion(float(cover[name].sum()), reps)
        print(f"{name:<40} RMSE/SE {pm(value, se, 2):>12} coverage {pm(share, share_se, 2):>12}")


def panel(rng: np.random.Generator, n: int, d: int, T: int = 8) -> pd.DataFrame:
    ids = np.repeat(np.arange(n), T)
    x = np.repeat(rng.normal(size=(n, d)), T, axis=0) + rng.normal(size=(n * T, d))
    y = x @ np.full(d, 0.5) + np.repeat(rng.normal(size=n), T) + rng.normal(size=n * T)
    frame = pd.DataFrame(x, columns=[f"x{k}" for k in range(d)])
    frame["y"], frame["id"] = y, ids
    return frame


#: Public bounds handed to the peers (generous: about 2.8 sds of a regressor; the outcome's
#: sd is at most 2.6 at d = 6): the peers cannot find ranges themselves.
PEER_X, PEER_Y = 4.0, 8.0


def adassp_per_user(
    X: np.ndarray,
    y: np.ndarray,
    T: int,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """AdaSSP (Wang 2018, Algorithm 2: a private λ_min, then noisy X'X and X'y with the ridge
    it sets), user-level: every row clipped to ``‖x‖ <= B_X``, ``|y| <= B_Y`` and a person's
    sums taken whole, so the sensitivities are ``T B_X²`` and ``T B_X B_Y`` (T rows a person,
    public here). Written from the paper's formulas; the budget split in three equal parts."""
    d = X.shape[1]
    bound_x = math.sqrt(1.0 + PEER_X**2 * (d - 1))  # the intercept and d - 1 clipped columns
    x = np.clip(X, -PEER_X, PEER_X)
    out = np.clip(y, -PEER_Y, PEER_Y)
    eps, log_term, failure = epsilon / 3.0, math.log(6.0 / delta), 0.05
    gram, cross = x.T @ x, x.T @ out  # sums over persons of their whole blocks
    unit_x, unit_xy = T * bound_x**2, T * bound_x * PEER_Y
    smallest = float(np.linalg.eigvalsh(gram)[0])
    noisy_min = max(
        smallest + math.sqrt(log_term) / eps * unit_x * rng.normal() - log_term / eps * unit_x,
        0.0,
    )
    ridge = max(
        0.0,
        math.sqrt(d * log_term * math.log(2.0 * d * d / failure)) * unit_x / eps - noisy_min,
    )
    noise = rng.normal(size=(d, d))
    sym = np.triu(noise) + np.triu(noise, 1).T
    gram_noisy = gram + math.sqrt(log_term) / eps * unit_x * sym
    cross_noisy = cross + math.sqrt(log_term) / eps * unit_xy * rng.normal(size=d)
    return np.linalg.solve(gram_noisy + ridge * np.eye(d), cross_noisy)


def diffprivlib_rows(X: np.ndarray, y: np.ndarray, T: int, epsilon: float, seed: int) -> np.ndarray:
    """diffprivlib's ``LinearRegression`` at row level with ε / T (group privacy: T rows a
    person give user-level ε), the public bounds of :data:`PEER_X` and :data:`PEER_Y`."""
    from diffprivlib.models import LinearRegression

    d = X.shape[1] - 1
    model = LinearRegression(
        epsilon=epsilon / T,
        bounds_X=(np.full(d, -PEER_X), np.full(d, PEER_X)),
        bounds_y=(-PEER_Y, PEER_Y),
        random_state=seed,
    )
    model.fit(np.clip(X[:, 1:], -PEER_X, PEER_X), np.clip(y, -PEER_Y, PEER_Y))
    return np.asarray(model.coef_)


def simulated(reps: int, seed: int, cells: tuple[tuple[int, int], ...] = CELLS) -> None:
    print(
        f"\nSimulated, T = 8, eps = 1, given only epsilon, {reps} fits per cell: slopes pooled "
        "over the cell"
    )
    try:
        import diffprivlib  # noqa: F401  (the peers extra)

        peers = True
    except ImportError:
        peers = False
        print("(diffprivlib is not installed: its column is skipped; pip install '.[peers]')")
    print(
        f"{'n':>5} {'d':>2} {'MSE / non-private':>18} {'coverage':>12} {'p95|e|/bse':>10} "
        f"{'released':>8} {'hw/RMSE':>8} {'AdaSSP per user':>16} {'diffprivlib rows':>17}"
    )
    for n, d in cells:
        rng = np.random.default_rng(seed + 1000 * n + d)
        names = [f"x{k}" for k in range(d)]
        formula = "y ~ " + " + ".join(names)
        private, public, ratios, widths, hits, released = [], [], [], [], 0, 0
        adassp, dpl, refused = [], [], False
        for r in range(reps):
            frame = panel(rng, n, d)
            X = np.column_stack([np.ones(len(frame)), frame[names].to_numpy()])
            y = frame["y"].to_numpy()
            public += list((np.linalg.lstsq(X, y, rcond=None)[0][1:] - 0.5) ** 2)
            peer = np.random.default_rng(seed + r)
            adassp += list((adassp_per_user(X, y, 8, 1.0, n**-2.0, peer)[1:] - 0.5) ** 2)
            if peers:
                dpl += list((diffprivlib_rows(X, y, 8, 1.0, seed + r) - 0.5) ** 2)
            if refused:
                continue
            try:
                res = dplong.PooledOLS.from_formula(formula, frame, groups="id").fit(
                    epsilon=1.0, **rows_option(8), random_state=seed + r
                )
            except dplong.exceptions.InsufficientUsersError:  # refused from public facts
                refused = True
                continue
            estimate = res.params[names].to_numpy()
            released += bool(np.isfinite(estimate).all())
            private += list((estimate - 0.5) ** 2)
            ratios += list(np.abs(estimate - 0.5) / res.bse[names].to_numpy())
            ci = res.conf_int(0.05).loc[names]
            hits += int(((ci["lower"] <= 0.5) & (0.5 <= ci["upper"])).sum())
            widths += list((ci["upper"] - ci["lower"]) / 2.0)
        peer_ratios = [
            pm(*mse_ratio(errors, public), 2) if errors else "-" for errors in (adassp, dpl)
        ]
        if refused:
            row = f"{'refused (n epsilon too small for the private ranges)':>50}"
        elif not released:  # every fit withheld (from released numbers)
            row = f"{'withheld in every fit (the released X′X undetermined)':>50}"
        else:  # over the released slopes (a withheld one counts in "released" only)
            kept = np.isfinite(private)
            ratio, ratio_se = mse_ratio(np.asarray(private)[kept], np.asarray(public)[kept])
            share, share_se = proportion(hits, reps * d)
            spread = math.sqrt(float(np.mean(np.asarray(private)[kept])))
            row = (
                f"{pm(ratio, ratio_se, 2):>18} {pm(share, share_se, 3):>12} "
                f"{np.nanquantile(ratios, 0.95):>10.2f} {released:>4}/{reps} "
                f"{np.nanmedian(widths) / spread:>8.2f}"
            )
        print(f"{n:>5} {d:>2} {row} {peer_ratios[0]:>16} {peer_ratios[1]:>17}")


def _within_slopes(frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    """The non-private within estimate: OLS of the deviations from each person's means."""
    deviations = frame[[*names, "y"]] - frame.groupby("id")[[*names, "y"]].transform("mean")
    return np.linalg.lstsq(deviations[names].to_numpy(), deviations["y"].to_numpy(), rcond=None)[0]


def within(reps: int, seed: int, cells: tuple[tuple[int, int], ...]) -> None:
    print(
        f"\nThe within estimator on the simulated panels, T = 8, eps = 1, given only epsilon, "
        f"{reps} fits per cell: slopes pooled over the cell (MSE / non-private within MSE, "
        "coverage, p95 |e|/bse, fits with every slope released)"
    )
    fits = {
        "PanelOLS": lambda model_frame, formula, r: dplong.PanelOLS.from_formula(
            formula, model_frame, groups="id"
        ).fit(epsilon=1.0, **rows_option(8), random_state=r),
        "LongitudinalOLS within": lambda model_frame, formula, r: (
            dplong.LongitudinalOLS.from_formula(formula, model_frame, groups="id").fit(
                epsilon=1.0, estimator="within", random_state=r
            )
        ),
    }
    for n, d in cells:
        rng = np.random.default_rng(seed + 1000 * n + d)
        names = [f"x{k}" for k in range(d)]
        formula = "y ~ " + " + ".join(names)
        # each fit's squared errors beside the non-private ones of the same panel
        public: dict[str, list[float]] = {name: [] for name in fits}
        errors: dict[str, list[float]] = {name: [] for name in fits}
        zs: dict[str, list[float]] = {name: [] for name in fits}
        hits, released = dict.fromkeys(fits, 0), dict.fromkeys(fits, 0)
        for r in range(reps):
            frame = panel(rng, n, d)
            reference = list((_within_slopes(frame, names) - 0.5) ** 2)
            for name, fit in fits.items():
                try:
                    with warnings.catch_warnings():  # the notes are counted, not printed
                        warnings.simplefilter("ignore")
                        res = fit(frame, formula, seed + r)
                except dplong.exceptions.InsufficientUsersError:
                    continue
                estimate = res.params[names].to_numpy()
                released[name] += bool(np.isfinite(estimate).all())
                errors[name] += list((estimate - 0.5) ** 2)
                public[name] += reference
                zs[name] += list(np.abs(estimate - 0.5) / res.bse[names].to_numpy())
                ci = res.conf_int(0.05).loc[names]
                hits[name] += int(((ci["lower"] <= 0.5) & (0.5 <= ci["upper"])).sum())
        for name in fits:
            kept = np.isfinite(errors[name])
            if not kept.any():
                print(f"{n:>5} {d:>2} {name:>22}: nothing released ({released[name]}/{reps})")
                continue
            ratio, ratio_se = mse_ratio(
                np.asarray(errors[name])[kept], np.asarray(public[name])[kept]
            )
            share, share_se = proportion(hits[name], reps * d)
            print(
                f"{n:>5} {d:>2} {name:>22}: {pm(ratio, ratio_se, 2):>14} "
                f"{pm(share, share_se, 3):>12} {np.nanquantile(zs[name], 0.95):>6.2f} "
                f"{released[name]:>4}/{reps}"
            )


#: The per-user estimator's cells of issue 28's targets.
PER_USER_CELLS = ((500, 3), (1000, 3), (500, 6), (2000, 3))


def per_user(reps: int, seed: int, cells: tuple[tuple[int, int], ...]) -> None:
    print(
        f"\nThe per-user (mean-group) estimator on the simulated panels, T = 8, eps = 1, given "
        f"only epsilon, {reps} fits per cell: slopes pooled over the cell (MSE / non-private "
        "mean-group MSE and coverage over the released slopes, fits with every slope released, "
        "refused)"
    )
    for n, d in cells:
        rng = np.random.default_rng(seed + 3000 * n + d)
        names = [f"x{k}" for k in range(d)]
        formula = "y ~ " + " + ".join(names)
        private, public, hits, released, refused = [], [], 0, 0, 0
        warnings.simplefilter("ignore")  # the fits' notes: the withheld count says enough
        for r in range(reps):
            frame = panel(rng, n, d)
            model = dplong.LongitudinalOLS.from_formula(formula, frame, groups="id")
            X = np.column_stack([np.ones(len(frame)), frame[names].to_numpy()])
            blocks = X.reshape(n, 8, d + 1)  # T = 8 rows a person, in order
            own = np.linalg.solve(
                blocks.transpose(0, 2, 1) @ blocks,
                blocks.transpose(0, 2, 1) @ frame["y"].to_numpy().reshape(n, 8, 1),
            )[..., 0]
            try:
                res = model.fit(epsilon=1.0, random_state=seed + r)
            except dplong.exceptions.InsufficientUsersError:  # refused from public facts
                refused += 1
                continue
            estimate = res.params[names].to_numpy()
            released += bool(np.isfinite(estimate).all())
            kept = np.isfinite(estimate)
            private += list((estimate[kept] - 0.5) ** 2)
            public += list((own.mean(axis=0)[1:][kept] - 0.5) ** 2)
            ci = res.conf_int(0.05).loc[names]
            hits += int(((ci["lower"] <= 0.5) & (0.5 <= ci["upper"])).sum())
        if refused == reps:
            print(f"{n:>5} {d:>2} refused before any noise in every fit")
            continue
        ratio, ratio_se = mse_ratio(private, public)
        share, share_se = proportion(hits, len(private))  # of the released slopes
        print(
            f"{n:>5} {d:>2} {pm(ratio, ratio_se, 2):>18} {pm(share, share_se, 3):>14} "
            f"{released:>4}/{reps} with every slope released, {refused} refused"
        )


WAGE_PANEL = "lwage ~ exper + I((exper - 7)**2) + educ + black"
WAGE_POOLED = "lwage ~ educ + black + exper + union"
WAGE_BINARY = {"black": (0, 1), "union": (0, 1)}


def declared(model: type) -> dict[str, list[str]]:
    """The within fit's person-constant covariates, declared (found so instead, the released
    counts cannot tell them from ones changing for a few persons, and every coefficient is
    withheld)."""
    return {"between": ["educ", "black"]} if model is dplong.PanelOLS else {}


def wage(reps: int, seed: int) -> None:
    """Part 6: the wage panel's fits with between-person covariates (module docstring)."""
    from linearmodels import PanelOLS as LinearmodelsPanelOLS
    from linearmodels import RandomEffects as LinearmodelsRandomEffects

    wages = dplong.datasets.load_wage_panel()
    indexed = wages.set_index(["nr", "year"])
    within = LinearmodelsPanelOLS.from_formula(
        WAGE_PANEL.replace("~", "~ EntityEffects +"), indexed, drop_absorbed=True
    ).fit(cov_type="clustered", cluster_entity=True)
    pooled = smf.ols(WAGE_POOLED, wages).fit(cov_type="cluster", cov_kwds={"groups": wages["nr"]})
    gls = LinearmodelsRandomEffects.from_formula(WAGE_POOLED + " + 1", indexed).fit(
        cov_type="clustered", cluster_entity=True
    )
    gls_params, gls_se = (v.rename({"const": "Intercept"}) for v in (gls.params, gls.std_errors))
    runs = (
        [
            (dplong.PanelOLS, WAGE_PANEL, None, eps, within.params, within.std_errors)
            for eps in (2.0, 4.0)
        ]
        + [
            (dplong.PooledOLS, WAGE_POOLED, WAGE_BINARY, eps, pooled.params, pooled.bse)
            for eps in (4.0, 8.0)
        ]
        + [
            (dplong.RandomEffects, WAGE_POOLED, WAGE_BINARY, eps, gls_params, gls_se)
            for eps in (2.0, 4.0, 8.0)
        ]
    )
    print(f"\nThe wage panel with between-person covariates, given only epsilon, {reps} fits each")
    for model, formula, bounds, eps, truth, se in runs:
        fitted = model.from_formula(formula, wages, groups="nr", bounds=bounds)
        errors, covered, reasons, warned = [], [], Counter(), 0
        for r in range(reps):
            with warnings.catch_warnings():  # the notes are counted, not printed
                warnings.simplefilter("ignore")
                res = fitted.fit(
                    epsilon=eps, **rows_option(8), **declared(model), random_state=seed + r
                )
            reasons[", ".join(sorted(set(res.withheld.values))) or "none"] += 1
            if set(res.withheld.values) - {"absorbed"}:
                continue
            warned += bool(res.warnings)
            errors.append((res.params[truth.index] - truth) / se)
            ci = res.conf_int().loc[truth.index]
            covered.append((ci["lower"] <= truth) & (truth <= ci["upper"]))
        print(
            f"{model.__name__} {formula}, bounds {bounds}, eps = {eps:g}: {len(errors)}/{reps} "
            f"released ({warned} with warnings); fits by what they withheld {dict(reasons)}"
        )
        if errors:
            frame, cover = pd.DataFrame(errors), pd.DataFrame(covered)
            for name in truth.index:
                value, value_se = rmse(frame[name])
                print(f"  {name:<22} RMSE/SE {pm(value, value_se, 2):>14}  "
                      f"coverage {cover[name].mean():.2f}")  # fmt: skip


LARGE_CELLS = (5_000, 20_000, 80_000, 320_000)
#: β of the two-row panels of parts 7 and 8 (``y ~ x1 + x2 + z``), by coefficient
THREE = np.array([1.0, 1.0, -1.0, 1.0])
THREE_NAMES = ["Intercept", "x1", "x2", "z"]


def _two_row_fit(
    frame: pd.DataFrame, noise: str, rng: np.random.Generator, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Parts 7 and 8: ``y = 1 + x1 - x2 + z`` plus a normal person effect and errors
    (``noise``: "normal" or "t4") on ``frame``'s two rows a person; `PooledOLS` at ε = 1 given
    only ε. Its errors around β, those over its bse, whether its intervals hold β (NaN where
    withheld), and the non-private pooled OLS's errors."""
    n = frame.shape[0] // 2
    effect = np.repeat(rng.normal(size=n), 2)
    errors = rng.normal(size=2 * n) if noise == "normal" else rng.standard_t(4, size=2 * n)
    frame["y"] = 1 + frame["x1"] - frame["x2"] + frame["z"] + effect + errors
    X = np.column_stack([np.ones(2 * n), frame[["x1", "x2", "z"]].to_numpy()])
    public = np.linalg.lstsq(X, frame["y"].to_numpy(), rcond=None)[0] - THREE
    res = dplong.PooledOLS.from_formula("y ~ x1 + x2 + z", frame, groups="id").fit(
        epsilon=1.0, max_rows=2, random_state=seed
    )
    error = res.params.to_numpy() - THREE
    low, high = res.conf_int().to_numpy().T
    held = np.where(np.isnan(error), np.nan, (low <= THREE) & (THREE <= high))
    return error, error / res.bse.to_numpy(), held, public


def large(reps: int, seed: int) -> None:
    """Part 7 (module docstring): where the ranges' clipping, not the noise, sets the error."""
    print(f"\nLarge panels, T = 2, eps = 1, given only epsilon, {reps} fits per cell")
    print(f"{'n':>8} {'coefficient':>11} {'mean e/bse':>10} {'coverage':>9} {'RMSE / np':>10}")
    for n in LARGE_CELLS:
        fits = []
        for r in range(reps):
            rng = np.random.default_rng([seed, n, r])
            rows = 2 * n
            frame = pd.DataFrame(
                {
                    "id": np.repeat(np.arange(n), 2),
                    "x1": rng.normal(size=rows),
                    "x2": rng.normal(size=rows),
                    "z": np.repeat(rng.normal(size=n), 2),
                }
            )
            fits.append(_two_row_fit(frame, "normal", rng, seed + r))
        errors, ratios, covered, public = (np.asarray(a) for a in zip(*fits, strict=True))
        rmse = np.sqrt(np.nanmean(np.square(errors), axis=0))
        reference = np.sqrt(np.mean(np.square(public), axis=0))
        for j, name in enumerate(THREE_NAMES):
            print(
                f"{n:>8} {name:>11} {np.nanmean(ratios[:, j]):>10.2f} "
                f"{np.nanmean(covered[:, j]):>9.2f} {rmse[j] / reference[j]:>10.2f}"
            )


def _coefficient_header(lead: str, trail: str = "") -> None:
    """Parts 8 and 9: the header of :func:`_coefficient_rows`' table (``lead``: the label's
    columns, ``trail``: any after the shared ones)."""
    print(f"{lead} {'mean e/bse':>10} {'coverage':>9} {'p95 |e|/bse':>11} {'RMSE / np':>10}{trail}")


def _coefficient_rows(
    cells: list[str],
    errors: np.ndarray,
    ratios: np.ndarray,
    covered: np.ndarray,
    public: np.ndarray,
    suffix: str | list[str] = "",
) -> None:
    """Parts 8 and 9: a row per coefficient (its ``cells`` label) over the fits that released
    it: its mean error over its bse, the coverage, the 95th percentile of |error| / bse and the
    RMSE over the non-private estimator's (``public``: its errors), then ``suffix`` (one for
    every row, or one a row)."""
    reference = np.sqrt(np.mean(np.square(public), axis=0))
    for j, cell in enumerate(cells):
        shown = np.isfinite(ratios[:, j])
        if not shown.any():
            print(f"{cell} withheld in every fit")
            continue
        value = math.sqrt(np.mean(np.square(errors[shown, j])))
        print(
            f"{cell} {np.mean(ratios[shown, j]):>10.2f} {np.mean(covered[shown, j]):>9.2f} "
            f"{np.percentile(np.abs(ratios[shown, j]), 95):>11.2f} "
            f"{value / reference[j]:>10.2f}{suffix if isinstance(suffix, str) else suffix[j]}"
        )


SKEWED_CELLS = (5_000, 20_000, 80_000)


def skewed_regressors(reps: int, seed: int) -> None:
    """Part 8 (module docstring): regressors with heavy tails, where the ranges clip many."""
    print(f"\nSkewed regressors, T = 2, eps = 1, given only epsilon, {reps} fits per cell")
    _coefficient_header(f"{'n':>8} {'coefficient':>11} {'released':>9}")
    for n in SKEWED_CELLS:
        fits = []
        for r in range(reps):
            rng = np.random.default_rng([seed, n, r, 8])
            rows = 2 * n
            frame = pd.DataFrame(
                {
                    "id": np.repeat(np.arange(n), 2),
                    "x1": rng.lognormal(0.0, 1.0, size=rows),
                    "x2": rng.standard_t(3, size=rows),
                    "z": np.repeat(rng.exponential(size=n), 2),
                }
            )
            fits.append(_two_row_fit(frame, "t4", rng, seed + r))
        errors, ratios, covered, public = (np.asarray(a) for a in zip(*fits, strict=True))
        cells = [f"{n:>8} {name:>11} {int(np.isfinite(ratios[:, j]).sum()):>5}/{reps:<3}"
                 for j, name in enumerate(THREE_NAMES)]  # fmt: skip
        _coefficient_rows(cells, errors, ratios, covered, public)


#: Part 9's cells: persons and ε.
SKEWED_Y_CELLS = (
    (500, 1.0),
    (2_000, 1.0),
    (3_000, 1.0),
    (5_000, 1.0),
    (10_000, 1.0),
    (1_000, 4.0),
    (3_000, 4.0),
)
TREAT = np.array([1.0, 0.5, 0.3])


def _widened(res: dplong.results.RegressionResults) -> bool:
    """Whether the fit's skew check widened its last step (its assumptions say so)."""
    return any("were skewed" in line for line in res.assumptions)


def skewed_panel(rng: np.random.Generator, n: int, law: str) -> pd.DataFrame:
    """Part 9's panel: ``y ~ treat + x`` with :data:`TREAT`, four rows a person, the person
    effect and the errors ``normal``, ``exponential`` (centred) or a ``lognormal`` person effect
    (σ = 1, centred) with normal errors."""
    ids = np.repeat(np.arange(n), 4)
    treat = np.repeat(rng.integers(0, 2, n), 4).astype(float)
    x = rng.normal(size=4 * n) + np.repeat(rng.normal(size=n), 4)
    if law == "normal":
        noise = np.repeat(rng.normal(size=n), 4) + rng.normal(size=4 * n)
    elif law == "exponential":
        noise = np.repeat(rng.exponential(size=n), 4) + rng.exponential(size=4 * n) - 2
    else:  # the long right tail of spending or income, centred
        effect = rng.lognormal(0.0, 1.0, n) - np.exp(0.5)
        noise = np.repeat(effect, 4) + rng.normal(size=4 * n)
    y = TREAT[0] + TREAT[1] * treat + TREAT[2] * x + noise
    return pd.DataFrame({"id": ids, "y": y, "treat": treat, "x": x})


#: Part 10's panel sizes: at 2,000 persons the last step still clips at the Cauchy–Schwarz
#: radius with no skew check affordable, and a lognormal person effect's pull is largest there.
SMALL_PEOPLE = (1_000, 2_000)


def small_panels(reps: int, seed: int, n: int) -> None:
    """Part 10 (module docstring): the pooled family on part 9's panels at ``n`` persons."""
    print(
        f"\nPart 9's panels at n = {n}, T = 4, eps = 1, given only epsilon "
        f"({'max_rows found' if MAX_ROWS['found'] else 'max_rows=4'}), {reps} fits a cell: "
        "fits with every coefficient released; over those, per coefficient the RMSE around the "
        "truth and the coverage; fits with an error above 5 (absurd), misses with no warning"
    )
    for model in (dplong.PooledOLS, dplong.RandomEffects):
        for law in ("normal", "exponential", "lognormal"):
            errors, covered, reasons, absurd, silent = [], [], Counter(), 0, 0
            for r in range(reps):
                frame = skewed_panel(np.random.default_rng([seed, n, r, 9]), n, law)
                res = model.from_formula("y ~ treat + x", frame, groups="id").fit(
                    epsilon=1.0, **rows_option(4), random_state=seed + r
                )
                reasons[", ".join(sorted(set(res.withheld.values))) or "none"] += 1
                error = res.params.to_numpy() - TREAT
                if not np.isfinite(error).all():
                    continue
                low, high = res.conf_int().to_numpy().T
                hit = (low <= TREAT) & (TREAT <= high)
                errors.append(error)
                covered.append(hit)
                absurd += bool(np.abs(error).max() > 5.0)
                silent += bool(not hit.all() and not res.warnings)
            kept = np.asarray(errors).reshape(-1, 3)
            rmses = np.sqrt((kept**2).mean(axis=0)) if len(kept) else np.full(3, np.nan)
            cover = np.asarray(covered).reshape(-1, 3).mean(axis=0) if len(kept) else rmses
            print(
                f"{model.__name__:<14} {law:<12} released {len(kept):>3}/{reps}  RMSE "
                f"{' '.join(f'{v:8.3g}' for v in rmses)}  coverage "
                f"{' '.join(f'{v:.2f}' for v in cover)}  absurd {absurd} silent {silent}  "
                f"withheld: {dict(reasons)}"
            )


def skewed_outcomes(reps: int, seed: int) -> None:
    """Part 9 (module docstring): where clipping the scores of one mean a person biases."""
    print(f"\nSkewed outcomes, BetweenOLS, T = 4, given only epsilon, {reps} fits a cell")
    _coefficient_header(
        f"{'n':>7} {'eps':>4} {'errors':>11} {'coefficient':>11}", f" {'widened':>8} {'silent':>7}"
    )
    for n, epsilon in SKEWED_Y_CELLS:
        for law in ("normal", "exponential", "lognormal"):
            errors, ratios, covered, public, widened = [], [], [], [], 0
            silent = np.zeros(3, dtype=int)  # misses with no reliability warning
            for r in range(reps):
                frame = skewed_panel(np.random.default_rng([seed, n, r, 9]), n, law)
                means = frame.groupby("id").mean()
                X = np.column_stack([np.ones(n), means[["treat", "x"]].to_numpy()])
                public.append(np.linalg.lstsq(X, means["y"].to_numpy(), rcond=None)[0] - TREAT)
                res = dplong.BetweenOLS.from_formula("y ~ treat + x", frame, groups="id").fit(
                    epsilon=epsilon, random_state=seed + r
                )
                error = res.params.to_numpy() - TREAT
                low, high = res.conf_int().to_numpy().T
                errors.append(error)
                ratios.append(error / res.bse.to_numpy())
                hit = (low <= TREAT) & (TREAT <= high)
                covered.append(np.where(np.isnan(error), np.nan, hit))
                widened += _widened(res)
                silent += np.isfinite(error) & ~hit & (not res.warnings)
            cells = [
                f"{n:>7} {epsilon:>4g} {law:>11} {name:>11}" for name in ("Intercept", "treat", "x")
            ]
            _coefficient_rows(
                cells,
                *(np.asarray(a) for a in (errors, ratios, covered, public)),
                suffix=[f" {widened:>5}/{reps} {k:>7}" for k in silent],
            )
    _randhie_between(reps, seed)


def _randhie_between(reps: int, seed: int) -> None:
    """Part 9's RAND HIE cell: between persons, around linearmodels' ``BetweenOLS``."""
    import linearmodels
    import statsmodels.api as sm

    hie = dplong.datasets.load_randhie()
    formula = "np.log1p(mdvis) ~ np.log(coins + 1) + xage + female"
    frame = hie.assign(
        y=np.log1p(hie["mdvis"]), logc=np.log(hie["coins"] + 1), t=hie.groupby("zper").cumcount()
    ).set_index(["zper", "t"])
    fit = linearmodels.BetweenOLS(
        frame["y"], sm.add_constant(frame[["logc", "xage", "female"]])
    ).fit(cov_type="robust")
    truth, se = fit.params.to_numpy(), fit.std_errors.to_numpy()
    model = dplong.BetweenOLS.from_formula(formula, hie, groups="zper")
    errors, covered, widened = [], [], 0
    for r in range(reps):
        res = model.fit(epsilon=1.0, random_state=seed + r)
        errors.append((res.params.to_numpy() - truth) / se)
        low, high = res.conf_int().to_numpy().T
        covered.append((low <= truth) & (truth <= high))
        widened += _widened(res)
    print(f"\nRAND HIE, BetweenOLS {formula}, eps = 1, {reps} fits ({widened} widened)")
    for j, name in enumerate(res.params.index):
        column, held = np.asarray(errors)[:, j], np.asarray(covered)[:, j]
        print(
            f"{name:<20} mean error/SE {np.nanmean(column):>6.2f} RMSE/SE "
            f"{math.sqrt(np.nanmean(column**2)):>5.2f} coverage {np.mean(held):.2f}"
        )


#: Part 11's fits: data, formula, model, ε, fit options, the person id and rows per person.
FORECAST_CASES = (
    ("randhie", HIE_FORMULA, dplong.PooledOLS, 1.0, {"max_rows": 5}, "zper", 5),
    ("randhie", HIE_FORMULA, dplong.RandomEffects, 1.0, {"max_rows": 5}, "zper", 5),
    ("wage", "lwage ~ educ + exper + union", dplong.PooledOLS, 2.0, {}, "nr", 8),
    ("wage", "lwage ~ educ + exper + union", dplong.PooledOLS, 4.0, {}, "nr", 8),
    ("wage", "lwage ~ exper + hours + union", dplong.PanelOLS, 4.0, {}, "nr", 8),
)


def forecast(reps: int, seed: int) -> None:
    """Part 11: the planner's forecast against the fits' own noise sds."""
    print("\n## The planner's noise forecast against the fits' (reported; spread / reported)")
    loaders = {"randhie": dplong.datasets.load_randhie, "wage": dplong.datasets.load_wage_panel}
    for data, formula, model, epsilon, options, groups, rows in FORECAST_CASES:
        frame = loaders[data]()
        planned = dplong.plan(
            formula, model=model, n=frame[groups].nunique(), epsilon=epsilon, rows=rows, **options
        ).table.droplevel("block")
        fitted = model.from_formula(formula, frame, groups=groups)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = [
                fitted.fit(epsilon=epsilon, random_state=seed + r, **options) for r in range(reps)
            ]
        noise = pd.concat([r.noise_sd for r in results], axis=1)
        params = pd.concat([r.params for r in results], axis=1)
        design = dplong.formula.build_design(formula, frame, groups=groups)
        sds = dict(zip(design.columns, design.X.std(axis=0), strict=True))
        print(f"\n{model.__name__} `{formula}`, eps {epsilon:g} ({reps} fits)")
        for column in params.index.drop("Intercept", errors="ignore"):
            binary = set(np.unique(design.X[:, design.columns.index(column)])) <= {0.0, 1.0}
            unit = design.y.std() / (1.0 if binary else sds[column])
            reported = noise.loc[column].median()
            ratio = planned.loc[column, "noise_sd"] * unit / reported
            print(
                f"  {column:22s} forecast / reported {ratio:5.2f}"
                f"  spread / reported {params.loc[column].std() / reported:5.2f}"
                f"  released {params.loc[column].notna().mean():.2f}"
                f" (forecast {planned.loc[column, 'released_share']:.2f})"
            )


#: (n, ε) of part 12's simulated cells.
COVARIANCE_CELLS = ((1000, 4.0), (2000, 2.0), (5000, 1.0))
#: Part 12's directions in the two slopes' plane: x, z, x - z and x + z.
DIRECTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0], [1.0, 1.0]])


def _covariance_report(
    label: str, errors: list[np.ndarray], released: list[np.ndarray], reference: np.ndarray
) -> None:
    """Part 12's lines: the two slopes' ``errors`` (fit x 2) and ``released`` 2 x 2
    covariances against the errors' spread; ``reference`` the non-private clustered one."""
    e, covs = np.array(errors), np.array(released)

    def corr(m: np.ndarray) -> float:
        return float(m[0, 1] / math.sqrt(m[0, 0] * m[1, 1]))

    spread = e.T @ e / len(e)
    mean = covs.mean(axis=0)
    ratios = [float(d @ spread @ d / (d @ mean @ d)) for d in DIRECTIONS]
    chi2 = stats.chi2.ppf(0.95, 2)
    cover = {}
    for kind in ("full", "diagonal"):
        fitted = covs if kind == "full" else covs * np.eye(2)
        region = np.einsum("fi,fij,fj->f", e, np.linalg.inv(fitted), e) <= chi2
        lines = [
            np.abs(e @ d) <= 1.959963984540054 * np.sqrt(np.einsum("i,fij,j->f", d, fitted, d))
            for d in DIRECTIONS[2:]
        ]
        cover[kind] = (region.mean(), *(line.mean() for line in lines))
    # the contrasts' half-widths on the full covariance over those on its diagonal alone
    variances = covs[:, [0, 1], [0, 1]]
    narrower = [
        float(np.median(np.sqrt(np.einsum("i,fij,j->f", d, covs, d) / (variances @ d**2))))
        for d in DIRECTIONS[2:]
    ]
    print(
        f"{label:<44} {corr(spread):>7.3f} {corr(mean):>9.3f} {corr(reference):>7.3f}"
        f"  {' '.join(f'{r:5.3f}' for r in ratios)}"
        f"  {' '.join(f'{c:5.3f}' for c in cover['full'])}"
        f"  {' '.join(f'{c:5.3f}' for c in cover['diagonal'])}"
        f"  {' '.join(f'{w:5.2f}' for w in narrower)}"
    )


def _covariance_header() -> None:
    print(
        "\nThe covariance between coefficients: PooledOLS given only epsilon, T = 5, z = 0.9 x + "
        "noise, errors around the truth (RAND HIE: around the non-private estimate); the regions "
        "and intervals without the bias bounds"
    )
    print(
        f"{'cell':<44} {'corr':>7} {'released':>9} {'np':>7}  "
        f"{'e²/released: x, z, x-z, x+z':<23}  {'full: joint, x-z, x+z':<17}  "
        f"{'diagonal: joint, x-z, x+z':<17}  half-width full/diagonal: x-z, x+z"
    )


def covariance(reps: int, seed: int, n: int, epsilon: float) -> None:
    errors, released, references = [], [], []
    for r in range(reps):
        rng = np.random.default_rng([seed, n, r])
        ids = np.repeat(np.arange(n), 5)
        x = rng.normal(size=ids.size)
        z = 0.9 * x + 0.45 * rng.normal(size=ids.size)
        y = 1.0 + x + z + rng.normal(size=n)[ids] + rng.normal(size=ids.size)
        panel = pd.DataFrame({"id": ids, "x": x, "z": z, "y": y})
        with warnings.catch_warnings():  # the fits' notes: the released count says enough
            warnings.simplefilter("ignore")
            res = dplong.PooledOLS.from_formula("y ~ x + z", panel, groups="id").fit(
                epsilon=epsilon, random_state=seed + r
            )
        if r < 10:  # the non-private clustered correlation, on the first panels
            ols = smf.ols("y ~ x + z", panel).fit(cov_type="cluster", cov_kwds={"groups": ids})
            references.append(ols.cov_params().to_numpy()[1:, 1:])
        if res.params.notna().all():
            errors.append(res.params.to_numpy()[1:] - 1.0)
            released.append(res.cov_params().to_numpy()[1:, 1:])
    label = f"n = {n}, eps = {epsilon:g} ({len(errors)}/{reps} released)"
    _covariance_report(label, errors, released, np.mean(references, axis=0))


def covariance_randhie(reps: int, seed: int) -> None:
    hie = dplong.datasets.load_randhie()
    ols = smf.ols(HIE_FORMULA, hie).fit(cov_type="cluster", cov_kwds={"groups": hie["zper"]})
    names = ["np.log(coins + 1)", "xage"]
    model = dplong.PooledOLS.from_formula(HIE_FORMULA, hie, groups="zper")
    errors, released = [], []
    for r in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = model.fit(epsilon=1.0, **rows_option(5), random_state=seed + r)
        if res.params[names].notna().all():
            errors.append((res.params - ols.params)[names].to_numpy())
            released.append(res.cov_params().loc[names, names].to_numpy())
    reference = ols.cov_params().loc[names, names].to_numpy()
    label = f"RAND HIE, coins and xage ({len(errors)}/{reps} released)"
    _covariance_report(label, errors, released, reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--parts", default="randhie,plan,factor,simulated", help="comma-separated")
    parser.add_argument(
        "--cells", default="", help="simulated cells only, e.g. 1000x3,500x3 (default: all)"
    )
    parser.add_argument(
        "--max-rows",
        choices=("stated", "found"),
        default="stated",
        help="give each panel's length as max_rows (stated) or leave it to the fit (found)",
    )
    args = parser.parse_args()
    MAX_ROWS["found"] = args.max_rows == "found"
    cells = tuple((int(n), int(d)) for n, d in (c.split("x") for c in args.cells.split(",") if c))
    header("benchmarks/pooled.py")
    start = time.perf_counter()
    if "randhie" in args.parts:
        randhie(args.reps, args.seed, None)
        randhie(args.reps, args.seed, HIE_BOUNDS)
        randhie(args.reps, args.seed, None, formula=HIE_COVARIATES)
    if "plan" in args.parts:
        randhie(args.reps, args.seed, None, formula=HIE_PLAN_FORMULA, epsilon=2.0)
        for epsilon in (2.0, 4.0):  # the ε and the smallest measured to release
            randhie(args.reps, args.seed, None, formula=HIE_PLAN_ONLY, epsilon=epsilon)
    if "factor" in args.parts:
        factor(args.reps, args.seed)
    if "simulated" in args.parts:
        simulated(args.reps, args.seed, cells or CELLS)
    if "within" in args.parts:
        within(args.reps, args.seed, cells or WITHIN_CELLS)
    if "per-user" in args.parts:
        per_user(args.reps, args.seed, cells or PER_USER_CELLS)
    if "wage" in args.parts:
        wage(args.reps, args.seed)
    if "large" in args.parts:
        large(min(args.reps, 20), args.seed)
    if "skewed-x" in args.parts:
        skewed_regressors(min(args.reps, 20), args.seed)
    if "skewed-y" in args.parts:
        skewed_outcomes(args.reps, args.seed)
    if "small" in args.parts:
        for n in SMALL_PEOPLE:
            small_panels(args.reps, args.seed, n)
    if "forecast" in args.parts:
        forecast(min(args.reps, 20), args.seed)
    if "covariance" in args.parts:
        _covariance_header()
        for n, epsilon in COVARIANCE_CELLS:
            covariance(args.reps, args.seed, n, epsilon)
        covariance_randhie(args.reps, args.seed)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
