"""Intervals and error bounds you can trust with the defaults (issues 5 and 10): ε is all a fit
is given, the scale is estimated privately.

* Coverage study: 95 % intervals of the default fit on the location and the linear model,
  n ∈ {2,000; 20,000} users, T ∈ {1, 10}, ε ∈ {0.5, 4}, i.i.d. and Toeplitz (AR(1))
  within-user errors (the informative cells of that grid: :data:`CELLS`), ``REPS``
  replications per cell; each error-bound report's total must hold at least as often as the
  probability it states.
* Issue 10's cells: the user-level mean, n = 1,000 users x T = 10 rows of an AR(1) with
  coefficient 0.9, ε ∈ {1, 0.5}, defaults only.
* Paper Fig. 5 analogue: the default (scale estimated inside the release) against the release
  given the true variance, same ε, n = 6,000 users under three covariances of the users.
* The variance components' intervals under stated Gaussian scales.

Tolerance. Each cell-coefficient's claim is one-sided — coverage at least 0.93, an error bound
holding at least at its stated probability p — and is checked by an exact one-sided binomial
test at level 1e-3: with R replications the cell fails when P(Bin(R, p₀) <= hits) < 1e-3, p₀ =
0.93 or p. A cell that meets its claim exactly is then flagged with probability <= 1e-3, so the
~60 cell-coefficients of this file raise a false alarm with probability <= 6 % even at the
boundary of every claim, and far less in fact (the intervals cover ~0.95 and the bounds hold
in 98-100 % against 85-90 % stated: a cell at 0.95 is flagged with probability 3e-6). The
price of R = 200 is power: the cell fails when at most 173 of 200 intervals cover, so a cell
covering 0.80 is caught with probability 0.99, 0.83 with 0.92, 0.85 with 0.75, 0.88 with 0.29
(R = 400, the issue-10 cells: 0.85 with 0.98) — not one at 0.92. That is the known weak
spot — the default slope intervals of the linear model cover ~0.92 at n = 20,000 because the
plug-in sd of heavy-tailed per-user coefficients was ~8 % low — which test_linear_statistics.py
checks directly (the second-moment plug-in) instead of by coverage. The
measured table is printed (``pytest -s``); with the fixed seeds it reads: location 0.91-0.97,
linear intercept 0.925-0.965, slope 0.88-0.98 (lowest: n = 20,000, Toeplitz), error bounds
held in >= 98 % of releases.

Runtime: the coverage study runs ε ∈ {0.5, 4} only (ε = 1 lies between them: the budget
enters the intervals through the noise sd alone, which is monotone in ε), one test per cell
(model, n, T, errors) fitting both ε to each simulated data set and its model (built once),
and 8 of the grid's 20 cells (:data:`CELLS`: those that differ in more than the variance of a
Gaussian statistic);
R is not reduced (the power above is the least each cell keeps). Marked slow and listed in
docs/accuracy.md (test-suite Monte Carlo budget).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.signal import lfilter
from session_cache import session_cache

import dplong
from dplong.exceptions import DplongWarning

pytestmark = pytest.mark.slow

REPS = 200
LEVEL = 1e-3  # one-sided binomial test level per cell-coefficient (module docstring)
CLAIMED_COVERAGE = 0.93
EPSILONS = (0.5, 4.0)  # the extremes of the study's range (module docstring)
MU, BETA = 2.0, np.array([1.0, 0.5])
GROUP_SD, PHI = 1.0, 0.6  # random-effect sd; AR(1) coefficient of the Toeplitz errors
FIG5_SEEDS = {"iid": 51, "equicorrelated": 52, "toeplitz": 53}


def consistent_with(hits: np.ndarray, reps: int, claim: float | np.ndarray) -> np.ndarray:
    """Whether ``hits`` successes in ``reps`` trials are consistent (one-sided, level LEVEL)
    with a success probability of at least ``claim``."""
    return np.asarray(stats.binom.cdf(hits, reps, claim) >= LEVEL)


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


def assert_cells(cells: dict[tuple[str, float], list[tuple[np.ndarray, ...]]], title: str) -> None:
    """Print the table of a study and test every cell-coefficient's two claims."""
    rows = []
    for (model, eps), outcomes in cells.items():
        covered = np.array([o[0] for o in outcomes]).sum(axis=0)
        held = np.array([o[1] for o in outcomes]).sum(axis=0)
        # a withheld release (NaN: its medians missed, a bad event the bound allows for)
        # states nothing and counts as a miss in both claims
        stated = np.nanmin(np.array([o[2] for o in outcomes]), axis=0)
        rows.append((model, eps, len(outcomes), covered, held, stated))
    print(f"\n{title}")
    for model, eps, reps, covered, held, stated in rows:
        print(
            f"  {model} eps={eps}: cover {covered / reps} bound held {held / reps} "
            f"(stated >= {stated})"
        )
    for model, eps, reps, covered, held, stated in rows:
        assert np.all(consistent_with(covered, reps, CLAIMED_COVERAGE)), (model, eps, covered)
        assert np.all(consistent_with(held, reps, stated)), (model, eps, held, stated)


def test_the_binomial_check_has_the_stated_level_and_power() -> None:
    hits = np.arange(REPS + 1)
    passing = consistent_with(hits, REPS, CLAIMED_COVERAGE)
    last_failing = int(hits[~passing].max())
    assert np.all(passing[last_failing + 1 :])  # a threshold: fail at <= 173 hits of 200
    # level: a cell exactly at its claim fails with probability <= 1e-3, at 0.95 with ~3e-6
    assert stats.binom.cdf(last_failing, REPS, 0.93) <= LEVEL
    assert stats.binom.cdf(last_failing, REPS, 0.95) < 1e-5
    # power (module docstring): 0.99 at a true coverage of 0.80, 0.75 at 0.85
    assert stats.binom.cdf(last_failing, REPS, 0.80) > 0.99
    assert stats.binom.cdf(last_failing, REPS, 0.85) > 0.7


#: The study's cells (model, n, T, errors). The location model's statistic, a user's mean, is
#: Gaussian whatever T and the within-user errors (i.i.d. or Toeplitz): they change only its
#: variance, which the release estimates, so each n keeps one (T, errors): the Toeplitz panel
#: at n = 2,000 and one row per user at n = 20,000. The linear model keeps i.i.d. errors at
#: n = 2,000 and its known weak spot, Toeplitz errors at n = 20,000 (module docstring). Each
#: cell runs at both ε. (All 20 (n, T, errors, ε) cells measured location 0.91-0.97, within the
#: binomial spread of 200 fits, and slope 0.88-0.98, lowest in the cell kept.)
CELLS = [
    ("location", 2_000, 10, "toeplitz"),
    ("location", 20_000, 1, "iid"),
    ("linear", 2_000, 10, "iid"),
    ("linear", 20_000, 10, "toeplitz"),
]


@pytest.mark.parametrize(("model", "n", "T", "errors"), CELLS)
def test_coverage_and_error_bounds(model: str, n: int, T: int, errors: str) -> None:
    """One cell at both ε (REPS fits each, on the same REPS data sets: each is simulated and
    its model built once for both): the same data sets and seeds whichever cell runs (module
    docstring: each (cell, ε) fails at coverage <= 0.865, i.e. detects a coverage of 0.80
    with probability 0.99 and 0.85 with 0.75)."""
    rng = np.random.default_rng([n, T, errors == "toeplitz"])
    cells: dict[tuple[str, float], list[tuple[np.ndarray, ...]]] = {
        (model, eps): [] for eps in EPSILONS
    }
    for rep in range(REPS):
        data = _panel(n, T, errors, rng)
        if model == "location":
            location = dplong.RandomEffectsLocation.from_formula("level ~ 1", data, groups="user")
        else:
            linear = dplong.LongitudinalOLS.from_formula("y ~ x", data, groups="user")
        for eps in EPSILONS:
            seed = np.random.default_rng([rep, int(eps * 10)])
            if model == "location":
                res = location.fit(epsilon=eps, variance_share=0.0, random_state=seed)
                cells[model, eps].append(_check(res, np.array([MU])))
            else:
                res = linear.fit(epsilon=eps, random_state=seed)
                cells[model, eps].append(_check(res, BETA))
    assert_cells(cells, f"n={n} T={T} {errors}")


@pytest.mark.parametrize("epsilon", [1.0, 0.5])
# at ε = 0.5 the count of users gets ε = 0.02 (Laplace sd 71 users): over 400 fits one can come
# out far enough below 1000 for the public note on who the estimate describes; expected here
@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_issue_10_cells(epsilon: float) -> None:
    """400 fits: fails at coverage <= 0.885, i.e. detects a coverage of 0.85 with probability
    0.98 and 0.88 with 0.64 (module docstring)."""
    # the user-level mean of n = 1000 users x T = 10 rows of a unit-variance AR(1) with
    # coefficient 0.9 around 3.7 (benchmarks/accuracy_defaults.py), defaults only
    n, T, reps = 1_000, 10, 400
    rng = np.random.default_rng([10, int(10 * epsilon)])
    innov = math.sqrt(1 - 0.9**2)
    groups = np.repeat(np.arange(n), T)
    cells: dict[tuple[str, float], list[tuple[np.ndarray, ...]]] = {}
    for _ in range(reps):
        z = rng.standard_normal((n, T))
        z[:, 0] /= innov
        rows = 3.7 + lfilter([innov], [1.0, -0.9], z, axis=1)
        res = dplong.winsorized_mean(rows.ravel(), groups=groups, epsilon=epsilon, random_state=rng)
        cells.setdefault(("user-level mean", epsilon), []).append(_check(res, np.array([3.7])))
    assert_cells(cells, f"issue 10: n={n} T={T} AR(1) 0.9")


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
def test_private_scale_costs_little_at_n_6000(kind: str) -> None:
    """Paper Fig. 5 analogue: (1, 1/n²)-DP given ε only against (1, 1/n²)-DP knowing σ² = 1.

    The default spends ~8 % of ε on the private spread (a median of |x - m̂| on the log grid)
    and needs no bounds; both estimators see the same data sets, so their errors share the
    sampling part and the paired MSE ratio has little Monte Carlo noise. Under the three
    covariances of the users the realised spread is 1 (i.i.d.), ¾ (equicorrelated: the common
    shock is invisible) or 1 ± 8 % (Toeplitz), and the radius follows it. Measured ratios
    1.02-1.05; the claim is <= 1.25 (issue 5), checked as: measured ratio + 4 SE (paired
    delta method) below 1.25. Power: a true ratio of 1.25 or more fails unless its estimate
    comes out 4 SE low (probability about 3e-5 under the delta method's normal law).
    """
    n, reps = 6_000, 200
    data = _users(kind, n, reps, np.random.default_rng(FIG5_SEEDS[kind]))
    known, default = np.empty(reps), np.empty(reps)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DplongWarning)  # no reliability warning either way
        for r, x in enumerate(data):
            known[r] = dplong.winsorized_mean(x, epsilon=1.0, scale=1.0, random_state=r).params["x"]
            default[r] = dplong.winsorized_mean(x, epsilon=1.0, random_state=r).params["x"]
    a, b = (default - 100.0) ** 2, (known - 100.0) ** 2
    ratio = a.mean() / b.mean()
    se = (a - ratio * b).std(ddof=1) / math.sqrt(reps) / b.mean()
    print(f"\n{kind}: MSE ratio private scale / known variance = {ratio:.3f} ± {se:.3f}")
    assert ratio + 4 * se <= 1.25


@session_cache
def component_coverage() -> np.ndarray:
    """Hits of the 95 % intervals of (Intercept, Group Var, Scale) over 200 fits.

    y_ut = 2 + U_u + e_ut with σ_U² = σ² = 1, n = 5,000 users, T = 5, ε = 2; stated: the
    user-mean proxy 1.2 (= 1 + 1/5), the residual proxy 1 and min_rows 5 — exactly the
    Gaussian law the intervals assume, so they cover at 95 % up to the CLT; tested like the
    study's cells (one-sided binomial, level 1e-3, against 0.93).
    """
    rng = np.random.default_rng(77)
    n, T = 5_000, 5
    truth = np.array([2.0, 1.0, 1.0])
    users = np.repeat(np.arange(n), T)
    covered = []
    for rep in range(COMPONENT_REPS):
        y = 2.0 + rng.standard_normal(n)[users] + rng.standard_normal(n * T)
        model = dplong.RandomEffectsLocation.from_formula(
            "y ~ 1", pd.DataFrame({"user": users, "y": y}), groups="user"
        )
        res = model.fit(epsilon=2.0, scale=1.2, within_scale=1.0, min_rows=T, random_state=rep)
        ci = res.conf_int(0.05)
        covered.append(((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy())
    hits = np.sum(covered, axis=0)
    print(f"\ncoverage (Intercept, Group Var, Scale): {hits / COMPONENT_REPS}")
    return hits


COMPONENT_REPS = 200


def test_component_intervals_under_stated_gaussian_scales() -> None:
    """200 fits: each component fails at coverage <= 0.865, i.e. a coverage of 0.80 is detected
    with probability 0.99 and 0.85 with 0.75 (module docstring)."""
    # one test for the three (the 200 fits are shared; split, they could run on two workers)
    hits = component_coverage()  # measured 0.965, -, 0.925 for Intercept, -, Scale
    assert np.all(consistent_with(hits[[0, 2]], COMPONENT_REPS, CLAIMED_COVERAGE)), hits
    # Group Var's per-user statistic (ȳ_u - μ̂)² - s²_u/T is 1.2 χ²₁-like: skewed. Its stated
    # Gaussian scales now give the components public bounds that hold every user with
    # probability 1 - γ (location._component_bounds: Laurent–Massart and Lemma 5.2's τ), so its
    # right tail is no longer clipped away (was: 152 / 200 with a ~3 sd radius)
    assert consistent_with(np.array(hits[1]), COMPONENT_REPS, CLAIMED_COVERAGE).item(), hits


#: Cells of the components' coverage with estimated scales: (n, T, σ_U², σ², ε). The first
#: mimics the dietox pigs (72 pigs x 12 weekly weights around 60 kg; within-pig variance 633,
#: the pigs' own; a between-pig variance of 40, near the data's, which is about 0); the second is a
#: short panel where the normal plug-in covered Group Var in 26 % of 100 fits.
COMPONENT_CELLS = [(72, 12, 40.0, 633.0, 16.0), (1_000, 5, 1.0, 1.0, 1.0)]


@pytest.mark.parametrize(("n", "T", "group_var", "scale", "epsilon"), COMPONENT_CELLS)
def test_component_intervals_with_estimated_scales(
    n: int, T: int, group_var: float, scale: float, epsilon: float
) -> None:
    """Group Var's per-user statistic (ȳ_u - μ̂)² - s²_u/T is a scaled χ²₁ less a small term,
    s²_u a scaled χ²_{T-1}/(T-1): both skewed. Given only ε, their intervals must still cover
    (measured, 200 fits: 0.985, 0.99 and 0.95, 0.97; with the normal plug-in of every
    column, before: 0.575 and 0.315 for Group Var). Power as in the study: a component
    covering 0.80 is detected with probability 0.99, 0.85 with 0.75."""
    rng = np.random.default_rng(n)
    truth = np.array([60.0, group_var, scale])
    users = np.repeat(np.arange(n), T)
    covered = []
    for rep in range(COMPONENT_REPS):
        y = (
            truth[0]
            + rng.normal(0.0, math.sqrt(group_var), n)[users]
            + rng.normal(0.0, math.sqrt(scale), n * T)
        )
        model = dplong.RandomEffectsLocation.from_formula(
            "y ~ 1", pd.DataFrame({"user": users, "y": y}), groups="user"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)  # n = 72: a fragile-plan note
            ci = model.fit(epsilon=epsilon, random_state=rep).conf_int(0.05)
        covered.append(((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy())
    hits = np.sum(covered, axis=0)
    print(f"\ncoverage (Intercept, Group Var, Scale), n={n}, T={T}: {hits / COMPONENT_REPS}")
    assert np.all(consistent_with(hits, COMPONENT_REPS, CLAIMED_COVERAGE)), hits


def test_a_heavy_scale_has_no_upper_end_and_a_lower_end_that_holds() -> None:
    """Lognormal responses (2,000 users, 2-6 rows, ε = 1): s²_u, a mean of squares, has a tail
    twice as heavy as y's, and the Pareto-1.5 allowance of a heavy column covered Scale in 1 of
    20 fits (RAND HIE's meddol: 0 of 30, an audit). Found heavy, Scale's interval has no
    upper end; its clip, which reached 0, cut only above, so its lower end allows no bias and
    must hold: each misses with chance at most 2.5 % (the one-sided quantile of the sampling
    error plus the noise), so at most one of 12 may (chance of two or more under 3.5 %).
    Group Var, shifted up by its centre's error, is never taken as clipped only above."""
    heavy, missed = 0, 0
    for seed in range(12):
        rng = np.random.default_rng([seed, 17])
        rows = rng.integers(2, 7, 2_000)
        users = np.repeat(np.arange(2_000), rows)
        y = np.exp(rng.normal(0.0, 0.5, 2_000)[users] + rng.normal(0.0, 1.0, users.size))
        frame = pd.DataFrame({"user": users, "y": y})
        truth = frame.groupby("user")["y"].var().mean()  # every user has 2+ rows
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            res = dplong.RandomEffectsLocation.from_formula("y ~ 1", frame, groups="user").fit(
                epsilon=1.0, random_state=seed
            )
        assert "Group Var" not in res.downward_bias
        lower, upper = res.conf_int().loc["Scale"]
        if np.isinf(upper):
            heavy += 1
            assert "Scale" in res.downward_bias and np.isfinite(lower)
            assert any("no upper end" in w and "'Scale'" in w for w in res.warnings)
            missed += bool(lower > truth)
    assert heavy >= 10, heavy  # the tail count finds it (18 of 20 measured)
    assert missed <= 1, missed
