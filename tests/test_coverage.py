"""Issue 5: intervals and error bounds you can trust, with the scale estimated privately.

* Coverage study: 95 % intervals of the default fit (``scale="estimate"``) on the location and
  the linear model, n ∈ {2,000; 20,000} users, T ∈ {1, 10}, ε ∈ {0.5, 1, 4}, i.i.d. and
  Toeplitz (AR(1)) within-user errors, ``REPS`` replications per cell. The measured table is in
  docs/accuracy.md ("Coverage").
* The same study checks that each error-bound report's total holds at least as often as the
  probability it states.
* Paper Fig. 5 analog: the Winsorized mean with a plug-in variance (ε = 1 for the scale and
  ε = 1 for the mean) against the one given the variance (ε = 1), n = 6,000.

Why the thresholds can be asserted on the empirical rates: the interval's sampling part uses the
CoinPress estimate, which is conservative by construction (the upper bound of its last step
plus a one-sided margin for its own noise), and the privacy-noise part is exact. The true
coverage is therefore at least 95 % up to the CLT error of the mean of n ≥ 2,000 users (at
n = 20,000 the estimate is tight and we measure 0.94-0.96; at n = 2,000 it is conservative,
0.95-0.98). With 1,000 replications the empirical rate has sd ``√(0.95 · 0.05 / 1000) ≈
0.0069``: a cell at a true 95 % falls below 93 % with probability ≈ 0.2 % (z = -2.9), so over
the ~40 cell-coefficients a false alarm has probability ≈ 7 % for a fresh set of seeds; the
seeds are fixed, and a cell failing the 93 % line after a change is a real signal to examine
(rerun it with more replications).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

import dplong
from dplong.exceptions import DplongWarning

pytestmark = pytest.mark.slow

REPS = 1_000
EPSILONS = (0.5, 1.0, 4.0)
MU, BETA = 2.0, np.array([1.0, 0.5])
GROUP_SD, PHI = 1.0, 0.6  # random-effect sd; AR(1) coefficient of the Toeplitz errors
FIG5_SEEDS = {"iid": 51, "equicorrelated": 52, "toeplitz": 53}


def _panel(n: int, T: int, errors: str, rng: np.random.Generator) -> pd.DataFrame:
    """y_ut = 1 + 0.5 x_ut + U_u + e_ut (location: the same without x), e_u i.i.d. or AR(1)."""
    shocks = rng.standard_normal((n, T))
    if errors == "toeplitz":  # stationary AR(1) with unit variance: Toeplitz covariance φ^|s-t|
        shocks[:, 0] /= np.sqrt(1.0 - PHI**2)
        shocks = lfilter([np.sqrt(1.0 - PHI**2)], [1.0, -PHI], shocks, axis=1)
    x = rng.standard_normal((n, T))
    group = GROUP_SD * rng.standard_normal((n, 1))
    return pd.DataFrame(
        {
            "user": np.repeat(np.arange(n), T),
            "x": x.ravel(),
            "level": (MU + group + shocks).ravel(),
            "y": (BETA[0] + BETA[1] * x + group + shocks).ravel(),
        }
    )


def _check(results: dplong.results.PanelResults, truth: np.ndarray) -> tuple[np.ndarray, ...]:
    ci = results.conf_int(0.05)
    covered = ((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy()
    report = results.error_bound(0.05).table
    held = np.abs(results.params.to_numpy() - truth) <= report["total"].to_numpy()
    return covered, held, report["probability"].to_numpy()


@pytest.mark.parametrize("errors", ["iid", "toeplitz"])
@pytest.mark.parametrize(("n", "T"), [(2_000, 1), (2_000, 10), (20_000, 1), (20_000, 10)])
def test_coverage_and_error_bounds(n: int, T: int, errors: str) -> None:
    if T == 1 and errors == "toeplitz":
        pytest.skip("with one row per user the within-user errors cannot be correlated")
    rng = np.random.default_rng([n, T, errors == "toeplitz"])
    cells: dict[tuple[str, float], list[tuple[np.ndarray, ...]]] = {}
    for rep in range(REPS):
        data = _panel(n, T, errors, rng)
        location = dplong.RandomEffectsLocation.from_formula("level ~ 1", data, groups="user")
        # per-user OLS needs T >= p rows: with T = 1 only the location model applies
        linear = (
            dplong.LongitudinalOLS.from_formula("y ~ x", data, groups="user") if T > 1 else None
        )
        for eps in EPSILONS:
            seed = np.random.default_rng([rep, int(eps * 10)])
            res = location.fit(epsilon=eps, variance_share=0.0, random_state=seed)
            cells.setdefault(("location", eps), []).append(_check(res, np.array([MU])))
            if linear is not None:
                res = linear.fit(epsilon=eps, random_state=seed)
                cells.setdefault(("linear", eps), []).append(_check(res, BETA))
    rows = []
    for (model, eps), outcomes in cells.items():
        covered = np.array([o[0] for o in outcomes])
        held = np.array([o[1] for o in outcomes])
        stated = np.array([o[2] for o in outcomes])
        rows.append((model, eps, covered.mean(axis=0), held.mean(axis=0), stated.min(axis=0)))
    table = "\n".join(f"{r[0]} eps={r[1]}: cover {r[2]} bound {r[3]} (>= {r[4]})" for r in rows)
    print(f"\nn={n} T={T} {errors}\n{table}")
    for model, eps, coverage, held, stated in rows:
        assert np.all(coverage >= 0.93), (model, eps, coverage)
        assert np.all(held >= stated), (model, eps, held, stated)


def _users(kind: str, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """reps x n draws of N(100, Σ): Σ = I, ¾ I + ¼ 11ᵀ, or Toeplitz 0.95^|i-j| (Fig. 5)."""
    z = rng.standard_normal((reps, n))
    if kind == "equicorrelated":
        z = np.sqrt(0.75) * z + np.sqrt(0.25) * rng.standard_normal((reps, 1))
    elif kind == "toeplitz":
        z[:, 0] /= np.sqrt(1.0 - 0.95**2)
        z = lfilter([np.sqrt(1.0 - 0.95**2)], [1.0, -0.95], z, axis=1)
    return 100.0 + z


@pytest.mark.parametrize("kind", ["iid", "equicorrelated", "toeplitz"])
def test_plug_in_variance_costs_little_at_n_6000(kind: str) -> None:
    """Paper Fig. 5: (2, 1/n²)-DP with the plug-in vs (1, 1/n²)-DP knowing σ² = 1.

    The plug-in gets ε = 1 for the scale (scale_share ½ of ε = 2) and starts from nothing but
    the paper's loose bounds (0.1, 10⁴); its rough first moment comes from the wide-bin
    histogram with bins of half-width 70, far coarser than the data. Both estimators see the
    same data sets, so their errors share the sampling part and the MSE ratio has little
    Monte Carlo noise: the known-variance MSE at n = 6,000 is ~1.06x the sample mean's
    (docs/accuracy.md), the plug-in's radius differs by a factor ~√(ρ̂/σ²) ∈ [1, 1.3], so its
    privacy noise (~10 % of the MSE) grows by at most ~30 % → ratio ≲ 1.05 expected; 300
    replications give the ratio's standard error ≈ 0.02 (measured by the benchmark).
    """
    n, reps = 6_000, 300
    data = _users(kind, n, reps, np.random.default_rng(FIG5_SEEDS[kind]))
    known = np.empty(reps)
    plug_in = np.empty(reps)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DplongWarning)  # no bound may bind, no histogram fail
        for r, x in enumerate(data):
            known[r] = dplong.winsorized_mean(x, epsilon=1.0, scale=1.0, random_state=r).estimate
            plug_in[r] = dplong.winsorized_mean(
                x, epsilon=2.0, scale_share=0.5, scale_bounds=(0.1, 1e4), random_state=r
            ).estimate
    ratio = np.mean((plug_in - 100.0) ** 2) / np.mean((known - 100.0) ** 2)
    print(f"\n{kind}: MSE ratio plug-in / known variance = {ratio:.3f}")
    assert ratio <= 1.25


def test_variance_component_intervals_under_stated_gaussian_scales() -> None:
    """Group Var and Scale intervals from the stated proxies (Gaussian sampling law).

    y_ut = 2 + U_u + e_ut with σ_U² = σ² = 1, n = 5,000 users, T = 5, ε = 2; stated: the
    user-mean proxy 1.2 (= 1 + 1/5), the residual proxy 1 and min_rows 5 — exactly the
    Gaussian law the intervals assume, so they cover at 95 % up to the CLT; 300 replications
    give the empirical rate an sd of 0.0126, and 0.92 is 2.4 sd below 0.95 (P ≈ 1 %).
    """
    rng = np.random.default_rng(77)
    n, T, reps = 5_000, 5, 300
    truth = np.array([2.0, 1.0, 1.0])
    users = np.repeat(np.arange(n), T)
    covered = []
    for rep in range(reps):
        y = 2.0 + rng.standard_normal(n)[users] + rng.standard_normal(n * T)
        model = dplong.RandomEffectsLocation.from_formula(
            "y ~ 1", pd.DataFrame({"user": users, "y": y}), groups="user"
        )
        res = model.fit(epsilon=2.0, scale=1.2, within_scale=1.0, min_rows=T, random_state=rep)
        ci = res.conf_int(0.05)
        covered.append(((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy())
    coverage = np.mean(covered, axis=0)
    print(f"\ncoverage (Intercept, Group Var, Scale): {coverage}")
    assert np.all(coverage >= 0.92), coverage
