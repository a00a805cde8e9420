"""PooledOLS: pooled OLS from released per-person sufficient statistics (dplong.models.pooled).

Reference (noise off), the sensitivity of both releases, a privacy audit with a power check,
coverage of the intervals and bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from audit import BROKEN_NOISE_FRACTION, check_gaussian_audit
from numpy.typing import NDArray
from skewed_panels import correlated_effect_panel, lognormal_outcome_panel

import dplong
import dplong.models.pooled.factors as pooled_factors
import dplong.models.pooled.frame as pooled_frame
import dplong.models.pooled.gram as pooled_gram
import dplong.models.pooled.located as pooled_located
import dplong.models.pooled.release as pooled_release
import dplong.privacy.ranges as ranges
from dplong.exceptions import DplongWarning, ParameterError, PrivacyParameterError
from dplong.models.pooled import PooledOLS, vech_scaled
from dplong.models.pooled.persons import PersonSums
from dplong.privacy.noise import release_vector_sum
from dplong.results import RegressionResults

HIE_FORMULA = "np.log1p(meddol) ~ np.log(coins + 1) + xage + female"
HIE_BOUNDS = {
    "np.log1p(meddol)": (0, 12),
    "np.log(coins + 1)": (0, 4.62),
    "xage": (0, 100),
    "female": (0, 1),
}


def _panel(seed: int, people: int = 800, years: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(people), years)
    arm = np.repeat(rng.choice(["control", "low", "high"], people), years)
    age = rng.uniform(20, 60, ids.size)
    effect = np.repeat(rng.normal(0, 0.5, people), years)
    y = (
        1.0
        + 0.3 * (arm == "low")
        + 0.6 * (arm == "high")
        + 0.02 * age
        + effect
        + rng.normal(0, 0.5, ids.size)
    )
    return pd.DataFrame({"id": ids, "y": y, "arm": arm, "age": age})


def _clustered(formula: str, data: pd.DataFrame, groups: str) -> tuple[pd.Series, pd.Series]:
    """statsmodels' pooled OLS and its person-clustered SEs without the row-count factor
    (N - 1) / (N - K): N, the number of rows, is private, so dplong uses n / (n - 1) only."""
    fit = smf.ols(formula, data).fit(cov_type="cluster", cov_kwds={"groups": data[groups]})
    rows, k = fit.nobs, fit.params.size
    return fit.params, fit.bse / math.sqrt((rows - 1) / (rows - k))


@pytest.fixture
def unclipped_meat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scores' clipping radius far beyond every score (the exact sandwich), and the Gram
    matrix's frame and norm bound holding every person (the exact pilot): with the noise off
    the pilot is pooled OLS and the Newton steps leave it there."""
    monkeypatch.setattr(pooled_release, "CLIP_RADIUS", 1e12)
    monkeypatch.setattr(pooled_gram, "GRAM_NORM", 1e12)
    monkeypatch.setattr(ranges, "CORE", 1e12)


@pytest.mark.usefixtures("unclipped_meat")
def test_noise_off_matches_statsmodels_on_randhie() -> None:
    hie = dplong.datasets.load_randhie()
    model = PooledOLS.from_formula(HIE_FORMULA, hie, groups="zper", bounds=HIE_BOUNDS)
    res = model.fit(epsilon=1e300, delta=0.5, max_rows=5, random_state=0)
    params, bse = _clustered(HIE_FORMULA, hie, "zper")
    # the lattice rounds the sums to 2**-40 of their sensitivity: far below 1e-8 relative
    np.testing.assert_allclose(res.params, params, rtol=1e-8)
    np.testing.assert_allclose(res.sampling_sd, bse, rtol=1e-8)
    assert float(res.noise_sd.max()) < 1e-10
    assert list(res.params.index) == list(params.index)


@pytest.mark.usefixtures("unclipped_meat")
def test_noise_off_matches_statsmodels_with_factor_and_without_intercept() -> None:
    panel = _panel(0)
    levels = {"arm": ["control", "low", "high"]}
    for formula in ("y ~ C(arm, levels=['control', 'low', 'high']) + age", "y ~ age - 1"):
        model = PooledOLS.from_formula(
            formula,
            panel,
            groups="id",
            bounds={"y": (-5, 10), "age": (0, 100)},
            levels=levels if "arm" in formula else None,  # refused where not read
        )
        res = model.fit(epsilon=1e300, delta=0.5, max_rows=4, random_state=0)
        params, bse = _clustered(formula, panel, "id")
        np.testing.assert_allclose(res.params.to_numpy(), params.to_numpy(), rtol=1e-8)
        np.testing.assert_allclose(res.sampling_sd.to_numpy(), bse.to_numpy(), rtol=1e-8)


@pytest.mark.usefixtures("unclipped_meat")
def test_noise_off_covariance_is_statsmodels_clustered_covariance() -> None:
    """With the noise off, ``cov_params()`` is the whole person-clustered sandwich, off its
    diagonal too: statsmodels' clustered covariance without the row-count factor (as
    ``_clustered``), to the lattice's rounding."""
    hie = dplong.datasets.load_randhie()
    model = PooledOLS.from_formula(HIE_FORMULA, hie, groups="zper", bounds=HIE_BOUNDS)
    res = model.fit(epsilon=1e300, delta=0.5, max_rows=5, random_state=0)
    fit = smf.ols(HIE_FORMULA, hie).fit(cov_type="cluster", cov_kwds={"groups": hie["zper"]})
    reference = fit.cov_params() / ((fit.nobs - 1) / (fit.nobs - fit.params.size))
    cov = res.cov_params()
    assert list(cov.index) == list(reference.index)
    np.testing.assert_allclose(cov.to_numpy(), reference.to_numpy(), rtol=1e-7)
    assert res.covariance is not None and not np.allclose(reference.to_numpy()[0, 1:], 0.0)


def test_the_covariance_holds_the_estimates_joint_spread() -> None:
    """Two regressors that move together (z = 0.9 x + noise): their slopes' errors are strongly
    negatively correlated, so x - z varies far more than x + z. Over 100 panels and noise
    draws (1,000 persons of 5 rows, ε = 4; 69 released every coefficient), the released
    covariance holds that shape: its correlation is the errors' within 0.1 (measured -0.951
    against -0.935; the errors' own correlation over 69 fits has an SE of about
    (1 - ρ²) / √69 = 0.015), and it covers the errors' second moment in every direction tried,
    by about the same factor in each (the noise law it reports is the wider of two that
    bracket the clipping, docs/design/pooled.md: the second moment measured 0.10-0.14 of it;
    the bar, a factor of 4 between the directions' ratios, is met by 1.3 and missed by the
    diagonal, 0.0068 for x + z against 0.20 for x - z: 30). With the full covariance no
    joint test says that it treats them as uncorrelated."""
    errors, covariances = [], []
    for seed in range(100):
        rng = np.random.default_rng([seed, 11])
        ids = np.repeat(np.arange(1000), 5)
        x = rng.normal(size=ids.size)
        z = 0.9 * x + 0.45 * rng.normal(size=ids.size)
        y = 1.0 + x + z + rng.normal(size=1000)[ids] + rng.normal(size=ids.size)
        panel = pd.DataFrame({"id": ids, "x": x, "z": z, "y": y})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            res = PooledOLS.from_formula("y ~ x + z", panel, groups="id").fit(
                epsilon=4.0, random_state=seed
            )
        if res.params.notna().all():
            errors.append(res.params.to_numpy()[1:] - 1.0)
            covariances.append(res.cov_params().to_numpy()[1:, 1:])
    assert len(errors) >= 50, len(errors)  # 69 of 100 released, measured
    spread = np.array(errors).T @ np.array(errors) / len(errors)
    released = np.mean(covariances, axis=0)

    def correlation(m: NDArray[np.float64]) -> float:
        return float(m[0, 1] / math.sqrt(m[0, 0] * m[1, 1]))

    assert abs(correlation(released) - correlation(spread)) < 0.1
    assert correlation(spread) < -0.8
    directions = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    ratios = np.array([d @ spread @ d / (d @ released @ d) for d in directions])
    assert np.all(ratios < 1.0), ratios
    assert ratios.max() / ratios.min() < 4.0, ratios
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res.wald_test("x = z = 1")
        res.t_test("x + z = 2")
        frame = res.get_prediction(pd.DataFrame({"x": [1.0], "z": [1.0]})).summary_frame()
    assert not [w for w in caught if "uncorrelated" in str(w.message)]
    row = np.ones(3)  # the prediction at x = z = 1 is the sum of the three coefficients
    assert np.isclose(frame["mean_se"].iloc[0], math.sqrt(row @ res.cov_params().to_numpy() @ row))


def test_clustered_standard_errors_settle_as_the_privacy_noise_vanishes() -> None:
    """The wage panel with public bounds at ε = 10⁶, its default radii: the privacy noise is
    all but gone, and the sampling sds are the clustered SEs of statsmodels' pooled OLS within
    15 %. The meat's noise grows as the square of its radius, and it had taken the steps'
    quiet radius, 40 times the largest score here: 0.36-1.68 times the reference over 20 seeds
    (0.05-2.3 at ε = 64). Its own noise share (MEAT_NOISE: 10 % of a diagonal entry, an SE's
    5 % a noise sd, so 15 % is three) gives 0.92-1.13."""
    wages = dplong.datasets.load_wage_panel()
    formula = "lwage ~ exper + educ + black"
    bounds = {"lwage": (-4, 5), "exper": (0, 20), "educ": (0, 20), "black": (0, 1)}
    model = PooledOLS.from_formula(formula, wages, groups="nr", bounds=bounds)
    _, reference = _clustered(formula, wages, "nr")
    ratios = np.array(
        [
            model.fit(epsilon=1e6, max_rows=8, random_state=seed).sampling_sd / reference
            for seed in range(10)
        ]
    )
    assert np.all(np.abs(ratios - 1.0) < 0.15), ratios.round(2)


def test_vech_scaled_has_the_frobenius_norm() -> None:
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(5, 4))
    weights = rng.uniform(size=5)
    vectors = vech_scaled(rows, weights)
    for v, z, w in zip(vectors, rows, weights, strict=True):
        assert np.linalg.norm(v) == pytest.approx(np.linalg.norm(w * np.outer(z, z)), rel=1e-12)


def _user_sum(rows: np.ndarray, weight: float) -> np.ndarray:
    return vech_scaled(rows, np.full(len(rows), weight)).sum(axis=0)


def _person_gram(
    rows: np.ndarray, weight: float, bound: float, kept: np.ndarray | None = None
) -> np.ndarray:
    """One person's Z_u as released (over the entries ``kept``, default all): clipped to
    norm ``bound``."""
    codes = np.zeros(len(rows), dtype=np.intp)
    k = rows.shape[1]
    kept = np.arange(k * (k + 1) // 2) if kept is None else kept
    sums = PersonSums.of_rows(rows[:, :-1], rows[:, -1], codes, 1, blocks=(), kept=kept)
    return sums.clipped_grams(weight * len(rows), bound)[0]  # cap w T: weight w


def test_gram_sensitivity_is_attained_and_never_exceeded() -> None:
    """A person's Z_u has trace <= T_cap (p + 1) and is clipped to Frobenius norm
    B = T_cap min(p + 1, max(GRAM_NORM √(p + 1), (p + 1) / GRAM_SHRINK)); replacing one moves
    the sum by at most √2 B, attained by orthogonal extreme rows (the PSD argument is
    tight)."""
    cap, p = 3, 3
    bound = pooled_gram._gram_bound(cap, p + 1.0)
    assert bound == pytest.approx(cap * pooled_gram.GRAM_NORM * 2.0)  # below cap (p + 1) = 12
    # many columns: never below 1 / GRAM_SHRINK of the worst case (p + 1 = 21: 10.5, not 6.9)
    assert pooled_gram._gram_bound(1, 21.0) == pytest.approx(21.0 / pooled_gram.GRAM_SHRINK)
    z, z_prime = np.ones(p + 1), np.array([1.0, 1.0, -1.0, -1.0])
    moved = _person_gram(np.tile(z, (cap, 1)), 1.0, bound) - _person_gram(
        np.tile(z_prime, (cap, 1)), 1.0, bound
    )
    assert np.linalg.norm(moved) == pytest.approx(math.sqrt(2.0) * bound)
    rng = np.random.default_rng(1)
    for _ in range(2000):  # random people, any number of rows, weights min(1, T_cap / T_u)
        sums = []
        for _ in range(2):
            t = int(rng.integers(1, 12))
            rows = rng.choice([-1.0, 1.0], size=(t, p + 1)) * rng.uniform(0, 1, (t, p + 1))
            rows[:, 0] = 1.0
            sums.append(_person_gram(rows, min(1.0, cap / t), bound))
            # unclipped: a PSD matrix's Frobenius norm is at most its trace
            assert np.linalg.norm(_user_sum(rows, min(1.0, cap / t))) <= cap * (p + 1) * (1 + 1e-12)
        assert np.linalg.norm(sums[0]) <= bound * (1 + 1e-12)
        assert np.linalg.norm(sums[0] - sums[1]) <= math.sqrt(2.0) * bound * (1 + 1e-12)


#: Factor blocks: ``y ~ C(arm) + x`` with four declared levels (three indicators, one block of
#: row norm² 1), the columns (Intercept, arm[b], arm[c], arm[d], x) and the outcome
BLOCK_P, BLOCKS = 5, (((1, 2, 3), 1.0),)


@pytest.mark.parametrize(
    "model", [dplong.PooledOLS, dplong.BetweenOLS, dplong.PanelOLS, dplong.RandomEffects]
)
def test_a_factor_of_one_declared_level_adds_no_column_and_changes_nothing(
    model: type[dplong.PooledOLS],
) -> None:
    """A factor declared with one level has no column in treatment coding with an intercept
    (patsy's, as for LongitudinalOLS): the fit is the fit without it, draw for draw, where
    its empty contrast had stopped every model of the family with numpy's ValueError."""
    data = _panel(3, people=600).assign(site="north")
    fits = [
        model.from_formula(formula, data, groups="id").fit(epsilon=2.0, random_state=4)
        for formula in ("y ~ age + C(site, levels=['north'])", "y ~ age")
    ]
    pd.testing.assert_series_equal(fits[0].params, fits[1].params)
    assert fits[0].privacy == fits[1].privacy


def test_factor_blocks_come_from_the_formula_and_count_once_in_the_bound() -> None:
    """Declared levels in treatment coding: the block's rows have norm² at most 1 (one 1),
    and with an intercept the block takes it in (the frame's intercept column becomes the
    reference level's indicator: rows one-hot, norm² 1 over intercept and block), so the
    rows' bound is 3 (the block, x, y), not 6; the indicators are left 0/1 (not centred).
    Without an intercept the full coding is one-hot as it is; Sum coding (a row of -1s) has
    no gain and stays as columns."""
    schema = pd.DataFrame({"y": [0.0], "x": [0.0], "arm": ["a"]}).iloc[:0]
    levels = {"arm": ["a", "b", "c", "d"]}

    def spec(formula: str) -> dplong.formula.DesignSpec:
        return dplong.formula.DesignSpec.from_formula(formula, schema, levels=levels)

    treatment = spec("y ~ C(arm) + x")
    blocks = pooled_factors._blocks_of(treatment, treatment.columns)
    assert blocks == (((0, 1, 2, 3), 1.0),)
    assert pooled_gram._row_square(BLOCK_P, blocks) == 3.0
    full = spec("y ~ C(arm) + x - 1")
    assert pooled_factors._blocks_of(full, full.columns) == (((0, 1, 2, 3), 1.0),)
    summed = spec("y ~ C(arm, Sum) + x")
    assert pooled_factors._blocks_of(summed, summed.columns) == ()
    ranges = pooled_frame.column_bounds(treatment, {"y": (0, 4), "x": (10, 20)})
    scaled = pooled_frame._Scaling.of(ranges, treatment.columns, None, blocks)
    rows = np.array([[1.0, 0.0, 1.0, 0.0, 15.0], [1.0, 0.0, 0.0, 0.0, 20.0]])  # c, a
    x, _ = scaled.apply(rows, np.array([2.0, 2.0]))
    assert x.tolist() == [[0.0, 0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 1.0]]
    # the coefficients of the frame map back: γ' = A⁻¹ γ of the mapped columns
    gamma = np.array([0.5, -0.2, 0.1, 0.3, 0.7])
    assert x @ gamma == pytest.approx(rows @ scaled.unscale(gamma) / 2.0 - 1.0)


def _extreme_pair(kind: str) -> tuple[int, tuple, np.ndarray, np.ndarray]:
    """p, the factor blocks and two rows whose persons' ``Z_u`` (``cap`` such rows each)
    are orthogonal and at least at the bound: replacing one by the other moves the sum by
    exactly ``√2 B``. ``"columns"``: four columns in [-1, 1]; ``"factor"``: the rows of
    :data:`BLOCKS` (norm² 4 and 3; B is 3 rows' worth); ``"intercept"``: the same block with
    the intercept taken in (the frame's first column the reference level's indicator: rows
    of norm² 3, B is √3 rows' worth); ``"disjoint"``: the same rows, released without the
    block's structural zeros (:func:`_kept`)."""
    if kind == "columns":
        return 3, (), np.ones(4), np.array([1.0, 1.0, -1.0, -1.0])
    if kind in ("intercept", "disjoint"):
        blocks = (((0, *BLOCKS[0][0]), 1.0),)
        z = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
        return BLOCK_P, blocks, z, np.array([0.0, 1.0, 0.0, 0.0, 1.0, -1.0])
    z = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 1.0])
    return BLOCK_P, BLOCKS, z, np.array([1.0, 0.0, 1.0, 0.0, -1.0, 0.0])


def _kept(kind: str) -> np.ndarray | None:
    """The released entries of :func:`_extreme_pair`'s layout: ``"disjoint"`` leaves out the
    products of two different columns of its one-hot block (intercept and indicators), 0 in
    every row; the others release every entry."""
    if kind != "disjoint":
        return None
    p, blocks, _, _ = _extreme_pair(kind)
    return pooled_gram._released_entries(p + 1, (blocks[0][0],))


def test_structural_zeros_are_the_one_hot_blocks_products() -> None:
    """The released entries of ``y ~ C(arm) + x`` (intercept taken into the block of four
    one-hot columns): all 21 of the 6 x 6 upper triangle but the 6 products of two different
    columns of the block, put back as zeros. Sum coding has none; the noise's typical norm
    without structural zeros is σ √(2p), with them smaller (the block's noise diagonal)."""
    schema = pd.DataFrame({"y": [0.0], "x": [0.0], "arm": ["a"]}).iloc[:0]
    levels = {"arm": ["a", "b", "c", "d"]}
    treatment = dplong.formula.DesignSpec.from_formula("y ~ C(arm) + x", schema, levels=levels)
    disjoint = pooled_factors._disjoint_of(treatment, treatment.columns)
    assert disjoint == ((0, 1, 2, 3),)
    summed = dplong.formula.DesignSpec.from_formula("y ~ C(arm, Sum) + x", schema, levels=levels)
    assert pooled_factors._disjoint_of(summed, summed.columns) == ()
    kept = pooled_gram._released_entries(BLOCK_P + 1, disjoint)
    assert kept.size == 21 - 6
    matrix = np.arange(36.0).reshape(6, 6)
    matrix = matrix + matrix.T
    upper = np.triu_indices(6)
    full = matrix[upper] * np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))  # vech_scaled's
    back = pooled_gram._unvech_scaled(full[kept], 6, kept)
    inside = np.zeros((6, 6), dtype=bool)
    inside[:4, :4] = ~np.eye(4, dtype=bool)
    assert (back[inside] == 0.0).all()
    assert back[~inside] == pytest.approx(matrix[~inside], rel=1e-15)  # times √2, divided
    assert pooled_gram._noise_norm(BLOCK_P, ()) == math.sqrt(2.0 * BLOCK_P)
    assert pooled_gram._noise_norm(BLOCK_P, disjoint) < math.sqrt(2.0 * BLOCK_P)


@pytest.mark.parametrize("kind", ["columns", "factor", "intercept", "disjoint"])
def test_gram_sensitivity_with_factor_blocks_is_attained_and_never_exceeded(kind: str) -> None:
    """With factor blocks, any rows (indicators, or quasi-demeaned ones beyond the block's
    norm, which the fit projects back) give persons within B = the bound of the rows' norm²
    (:func:`_row_square`), and replacing one moves the sum by at most √2 B, attained. With
    the block's structural zeros left out (``"disjoint"``, one-hot rows as pooled rows are)
    the vector over the released entries has the Frobenius norm still, and the bound holds:
    two persons' vectors have inner product tr(Z_u Z_v) >= 0."""
    cap = 3
    p, blocks, z, z_prime = _extreme_pair(kind)
    kept = _kept(kind)
    bound = pooled_gram._gram_bound(cap, pooled_gram._row_square(p, blocks))
    moved = _person_gram(np.tile(z, (cap, 1)), 1.0, bound, kept) - _person_gram(
        np.tile(z_prime, (cap, 1)), 1.0, bound, kept
    )
    assert np.linalg.norm(moved) == pytest.approx(math.sqrt(2.0) * bound)
    rng = np.random.default_rng(2)
    square = pooled_gram._row_square(p, blocks)
    for _ in range(1000):
        sums = []
        for _ in range(2):
            t = int(rng.integers(1, 12))
            rows = rng.uniform(-1.5, 1.5, (t, p + 1))  # beyond [-1, 1] and the block's norm
            if kept is not None:  # pooled rows: the block one-hot (a level a row)
                block = list(blocks[0][0])
                rows[:, block] = np.eye(len(block))[rng.integers(0, len(block), t)]
            rows = pooled_gram._clip_blocks(np.clip(rows, -1.0, 1.0), blocks)
            assert ((rows**2).sum(axis=1) <= square * (1 + 1e-12)).all()
            weight = min(1.0, cap / t)
            assert np.linalg.norm(_user_sum(rows, weight)) <= cap * square * (1 + 1e-12)
            if kept is not None:  # the entries left out are 0: nothing of the norm is lost
                assert np.linalg.norm(_user_sum(rows, weight)[kept]) == pytest.approx(
                    np.linalg.norm(_user_sum(rows, weight)), rel=1e-12
                )
            sums.append(_person_gram(rows, weight, bound, kept))
        assert np.linalg.norm(sums[0] - sums[1]) <= math.sqrt(2.0) * bound * (1 + 1e-12)


def test_meat_rows_and_score_sizes_have_their_stated_sensitivity() -> None:
    """The meat's rows with the steps' excess: each row's norm is at most √2 R² and two
    persons' rows differ by at most √3 R² (the meat's PSD √2 R², the excess's R²), attained
    by a person at 0 against one beyond R along a direction; without an inner radius the
    rows are the meat's alone (√2 R²). The size's value a person is in [0, R₀²]
    (sensitivity R₀²)."""
    rng = np.random.default_rng(5)
    radius, inner, p = 2.0, 0.8, 3
    scores = rng.standard_t(2, size=(4000, p)) * rng.uniform(0.01, 3.0, (4000, 1))
    rows, gain = pooled_release._meat_rows(scores, radius, inner)
    assert gain == pytest.approx(radius**2 / (radius - inner))
    bound = radius**2 * (1 + 1e-12)
    assert np.linalg.norm(rows, axis=1).max() <= math.sqrt(2.0) * bound
    pairs = rng.integers(0, 4000, size=(20000, 2))
    moved = np.linalg.norm(rows[pairs[:, 0]] - rows[pairs[:, 1]], axis=1)
    assert moved.max() <= math.sqrt(3.0) * bound
    extreme, _ = pooled_release._meat_rows(
        np.array([[0.0, 0.0, 0.0], [9.0, 0.0, 0.0]]), radius, inner
    )
    assert np.linalg.norm(extreme[0] - extreme[1]) == pytest.approx(math.sqrt(2.0) * radius**2)
    # the excess alone moves by R² between a person inside and one far out; the meat by R²
    # along one direction and up to √2 R² between orthogonal ones: √3 R² bounds both at once
    plain, none = pooled_release._meat_rows(scores, radius, radius)
    assert none == 0.0 and plain.shape[1] == p * (p + 1) // 2
    assert np.linalg.norm(plain, axis=1).max() <= bound
    persons = PersonSums.of_rows(
        np.ones((5, 1)), rng.normal(0, 9, 5), np.arange(5), 5, blocks=(), kept=np.arange(3)
    )
    sizes = (persons.scores(np.zeros(1), cap=1, whiten=np.eye(1), radius=1.5) ** 2).sum(axis=1)
    assert sizes.min() >= 0.0 and sizes.max() <= 1.5**2 * (1 + 1e-12)
    # a sliver of a window (R - inner below SLIVER - 1 of inner) is read out to that share of
    # inner past it, beyond R: the excess is still in [0, R²], so the same bounds hold
    sliver = radius / 1.05
    rows, gain = pooled_release._meat_rows(scores, radius, sliver)
    window = (pooled_release.SLIVER - 1.0) * sliver
    assert window > radius - sliver and gain == pytest.approx(radius**2 / window)
    assert np.linalg.norm(rows, axis=1).max() <= math.sqrt(2.0) * bound
    moved = np.linalg.norm(rows[pairs[:, 0]] - rows[pairs[:, 1]], axis=1)
    assert moved.max() <= math.sqrt(3.0) * bound
    far = pooled_release._meat_rows(
        np.array([[radius, 0, 0], [sliver + window, 0, 0]]), radius, sliver
    )
    assert far[0][0, -1] == pytest.approx(gain * (radius - sliver))  # a part of the window
    assert far[0][1, -1] == pytest.approx(radius**2)  # the whole window


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_score_size_release_audit_with_power_check(fraction: float) -> None:
    """The scores' size release (:func:`pooled_release._score_size`) on D (one person's
    score 0) and D' (that person's score at the radius R₀): ε lower bound from tail events of
    the released sum; the broken replica (noise at a quarter of its sd) must be caught, the
    correct one must not exceed its claim (runs as in the Gram matrix's audit)."""
    rho, delta, outer = 0.5, 1e-3, 1.5
    runs = 3000 if fraction == 1.0 else 1500
    others = np.tile([[0.3, 0.4]], (20, 1))
    rng = np.random.default_rng(11)
    out = []
    for person in ([0.0, 0.0], [0.9, 1.2]):  # norm 0 and 1.5 = R₀
        scores = np.vstack([others, person])
        out.append(
            np.array(
                [
                    float(
                        pooled_release._score_size(
                            scores, outer, rho / fraction**2, 1.0, rng
                        ).sum.total[0]
                    )
                    for _ in range(runs)
                ]
            )
        )
    sd = outer**2 / math.sqrt(2.0 * rho)
    centres = 20 * 0.25, 20 * 0.25 + outer**2
    check_gaussian_audit(out, centres, sd, fraction, rho, delta)


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
@pytest.mark.parametrize("inner", [1.0, 1.45])
def test_meat_release_audit_with_power_check(fraction: float, inner: float) -> None:
    """The clustered meat with the steps' clipped mass (:func:`pooled_release._release_meat`)
    on D (one person's whitened score 0: no meat, no excess) and D' (that score at the end of
    the excess's window, R or, for a sliver of a window, SLIVER - 1 of the steps' radius past
    it: a meat row of norm R² and an excess of R²), the released vector projected on the
    direction of the move: ε lower bound from its tail events; the broken replica (noise at a
    quarter of its sd) must be caught, the correct one must not exceed its claim (runs as in
    the Gram matrix's audit)."""
    rho, delta, radius = 0.5, 1e-3, 1.5
    runs = 3000 if fraction == 1.0 else 1500
    others = np.tile([[0.3, 0.4]], (20, 1))  # inside the steps' radius: no excess
    end = inner + max(radius - inner, (pooled_release.SLIVER - 1.0) * inner)
    persons = (np.zeros(2), np.array([end, 0.0]))
    rows = [pooled_release._meat_rows(np.vstack([others, p]), radius, inner)[0] for p in persons]
    move = rows[1].sum(axis=0) - rows[0].sum(axis=0)
    direction = move / np.linalg.norm(move)
    rng = np.random.default_rng(13)

    def projected(scores: np.ndarray) -> float:
        meat, _ = pooled_release._release_meat(scores, radius, inner, rho / fraction**2, rng)
        return float(meat.total @ direction)

    out = [
        np.array([projected(np.vstack([others, person])) for _ in range(runs)])
        for person in persons
    ]
    sd = math.sqrt(3.0) * radius**2 / math.sqrt(2.0 * rho)  # the released sensitivity √3 R²
    low, high = (float(r.sum(axis=0) @ direction) for r in rows)
    check_gaussian_audit(out, (low, high), sd, fraction, rho, delta)


def test_skew_check_rows_have_their_stated_sensitivity() -> None:
    """The skew check's rows (direction times clipped part, clipped part squared): norm at most
    √2, and two persons' rows differ by at most 2, attained by opposite directions clipped a
    full radius each (random pairs and the extremes)."""
    rng = np.random.default_rng(8)
    radius, p = 1.5, 3
    scores = rng.standard_t(2, size=(4000, p)) * rng.uniform(0.01, 3.0, (4000, 1))
    rows = pooled_release._skew_rows(scores, radius)
    assert np.linalg.norm(rows, axis=1).max() <= math.sqrt(2.0) * (1 + 1e-12)
    pairs = rng.integers(0, 4000, size=(40000, 2))
    assert np.linalg.norm(rows[pairs[:, 0]] - rows[pairs[:, 1]], axis=1).max() <= 2.0
    far = pooled_release._skew_rows(np.array([[9.0, 0.0, 0.0], [-9.0, 0.0, 0.0]]), radius)
    assert np.linalg.norm(far[0] - far[1]) == pytest.approx(2.0)
    inside = pooled_release._skew_rows(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]), radius)
    assert not inside.any()


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_skew_check_release_audit_with_power_check(fraction: float) -> None:
    """The skew check's release (:func:`pooled_release._skew_check`) on D (one person's
    whitened score two radii out along a direction) and D' (two radii out the opposite way):
    the rows' largest move, 2; the released vector projected on it: ε lower bound from its
    tail events; the broken replica (noise at a quarter of its sd) must be caught, the correct
    one must not exceed its claim (runs as in the Gram matrix's audit)."""
    rho, delta, radius = 0.5, 1e-3, 1.5
    runs = 3000 if fraction == 1.0 else 1500
    others = np.tile([[0.3, 0.4], [-2.0, 1.0]], (10, 1))  # half inside, half clipped
    persons = (np.array([2 * radius, 0.0]), np.array([-2 * radius, 0.0]))
    rows = [pooled_release._skew_rows(np.vstack([others, p]), radius) for p in persons]
    move = rows[1].sum(axis=0) - rows[0].sum(axis=0)
    direction = move / np.linalg.norm(move)
    rng = np.random.default_rng(17)

    def projected(scores: np.ndarray) -> float:
        check = pooled_release._skew_check(scores, radius, rho / fraction**2, rng)
        return float(check.total @ direction)

    out = [
        np.array([projected(np.vstack([others, person])) for _ in range(runs)])
        for person in persons
    ]
    sd = 2.0 / math.sqrt(2.0 * rho)  # the stated sensitivity 2
    low, high = sorted(float(r.sum(axis=0) @ direction) for r in rows)
    check_gaussian_audit(out, (low, high), sd, fraction, rho, delta)


def test_release_vector_sum_refuses_vectors_beyond_their_bound() -> None:
    with pytest.raises(AssertionError, match="norm bound"):
        release_vector_sum(np.array([[3.0, 4.0]]), 4.9, 9.8, 1.0, np.random.default_rng(0))


def _audit_outputs(rho: float, fraction: float, runs: int, seed: int, kind: str) -> tuple:
    """The Gram release of a tiny panel (:func:`_extreme_pair`'s columns or factor block) on
    D and on D' (one person's rows moved to the orthogonal extreme, each clipped to the
    Frobenius bound as the fit clips them), projected on the direction of the move."""
    cap = 3
    p, blocks, z, z_prime = _extreme_pair(kind)
    kept = _kept(kind)
    exact = pooled_gram._gram_bound(cap, pooled_gram._row_square(p, blocks))
    bound = exact * (1.0 + 1e-12)
    first = _person_gram(np.tile(z, (cap, 1)), 1.0, exact, kept)
    second = _person_gram(np.tile(z_prime, (cap, 1)), 1.0, exact, kept)
    others = np.zeros((20, first.size))
    direction = (first - second) / np.linalg.norm(first - second)
    rng = np.random.default_rng(seed)
    out = []
    for person in (first, second):
        vectors = np.vstack([others, person])
        out.append(
            np.array(
                [
                    release_vector_sum(
                        vectors, bound, math.sqrt(2.0) * bound, rho / fraction**2, rng
                    ).total
                    @ direction
                    for _ in range(runs)
                ]
            )
        )
    sd = math.sqrt(2.0) * bound / math.sqrt(2.0 * rho)
    return out, (float(second @ direction), float(first @ direction)), sd


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["columns", "factor", "intercept", "disjoint"])
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_gram_release_audit_with_power_check(fraction: float, kind: str) -> None:
    """ε lower bound from tail events of the projected release; the broken replica (noise at
    a quarter of its scale) must be caught, the correct one must not exceed its claim. With
    a factor block the bound (and the noise) is that of the rows' norm² 4, not 6 (3 with the
    intercept taken in): a person at the block's extreme is audited against it; with the
    block's structural zeros left out (``"disjoint"``) the same, over the released entries.
    The broken replica's 1,500 runs: on the prefixes of 3,000 it shows ε_lb 1.25-1.27 of the
    claim at 1,500 in every kind (1.45 at 3,000, 1.13-1.15 at 1,000)."""
    rho, delta = 0.5, 1e-3
    runs = 3000 if fraction == 1.0 else 1500
    outputs, centres, sd = _audit_outputs(rho, fraction, runs, seed=7, kind=kind)
    check_gaussian_audit(outputs, centres, sd, fraction, rho, delta)


def test_ledger_spends_the_budget_and_the_accountant_is_charged() -> None:
    panel = _panel(1)
    accountant = dplong.Accountant(epsilon=3.0, delta=1e-5)
    res = PooledOLS.from_formula(
        "y ~ age", panel, groups="id", bounds={"y": (-5, 10), "age": (0, 100)}
    ).fit(epsilon=2.0, delta=1e-6, max_rows=4, random_state=0, accountant=accountant)
    assert res.privacy.epsilon <= 2.0 and res.privacy.epsilon > 1.99
    # the skew check takes its share of the last step's ρ (here that step clips at the
    # Cauchy–Schwarz radius): the total is the same
    assert [e.stage for e in res.privacy.entries] == [
        "sufficient statistics",
        "scores' size",
        "Newton step 1",
        "skew check",
        "Newton step 2",
        "clustered meat",
    ]
    check, step = res.privacy.entries[3:5]
    assert check.rho == pytest.approx(
        pooled_release.SKEW_SHARE / (1 - pooled_release.SKEW_SHARE) * step.rho
    )
    assert accountant.spent_epsilon == pytest.approx(res.privacy.epsilon)
    with pytest.raises(dplong.exceptions.BudgetExceededError):
        PooledOLS.from_formula(
            "y ~ age", panel, groups="id", bounds={"y": (-5, 10), "age": (0, 100)}
        ).fit(epsilon=2.0, delta=1e-6, random_state=0, accountant=accountant)
    assert accountant.spent_epsilon == pytest.approx(res.privacy.epsilon)  # refused: no spend


def test_intervals_cover_at_their_level() -> None:
    """200 panels of 3000 people at ε = 2 (noise sd about the sampling sd): the 95 % intervals
    of the between-person arm effect and the age slope cover the truth. Tolerance: 200
    Bernoulli(0.95) trials have sd 1.5 %, so >= 0.91 fails a correct 0.95 with chance < 0.5 %."""
    truth = {"arm": 0.6, "age": 0.02}
    covered = {k: 0 for k in truth}
    fits = 200
    for seed in range(fits):
        panel = _panel(100 + seed, people=3000)
        panel["high"] = (panel["arm"] == "high").astype(float)
        panel["low"] = (panel["arm"] == "low").astype(float)
        res = PooledOLS.from_formula(
            "y ~ high + low + age",
            panel,
            groups="id",
            bounds={"y": (-2, 6), "high": (0, 1), "low": (0, 1), "age": (0, 100)},
        ).fit(epsilon=2.0, max_rows=4, random_state=seed)
        ci = res.conf_int(0.05)
        for key, name in (("arm", "high"), ("age", "age")):
            covered[key] += ci.loc[name, "lower"] <= truth[key] <= ci.loc[name, "upper"]
    for key, hits in covered.items():
        assert hits / fits >= 0.91, (key, hits)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"bounds": {"y": (-5, 10), "age": (0, 100), "x": (0, 1)}}, ParameterError, "not the"),
        ({"bounds": {"y": (-5, 10), "age": (100, 0)}}, ParameterError, "low < high"),
        ({"bounds": {"y": (-5, 10), "age": 5}}, ParameterError, "a pair"),
        ({"bounds": {"y": (-5, 10), "age": (0, np.inf)}}, ParameterError, "finite"),
        ({"bounds": {"y": (-5, 10), "age": ("0", 1)}}, ParameterError, "must be a number"),
        ({"bounds": [("y", (0, 1))]}, ParameterError, "mapping"),
        ({"bounds": "y=0,1;age=zero,1"}, ParameterError, "COL=LO,HI"),
    ],
)
def test_bad_bounds_are_refused_from_public_facts(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        PooledOLS.from_formula("y ~ age", _panel(2), groups="id", **kwargs)


def test_bounds_from_the_command_line_text() -> None:
    model = PooledOLS.from_formula("y ~ age", _panel(2), groups="id", bounds="y=-5,10; age=0,100")
    assert model.fit(epsilon=1.0, random_state=0).params.size == 2


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"epsilon": 0.0}, PrivacyParameterError, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.5}, PrivacyParameterError, "delta"),
        ({"epsilon": 1.0, "max_rows": 0}, ParameterError, "max_rows"),
        ({"epsilon": 1.0, "cov_type": "robust"}, ParameterError, "cov_type"),
        ({"epsilon": 1.0, "accountant": 3}, ParameterError, "accountant"),
        ({"epsilon": 1.0, "random_state": 1, "rng": 2}, ParameterError, "not both"),
    ],
)
def test_bad_fit_options_are_refused_before_any_noise(
    options: dict, error: type, match: str
) -> None:
    model = PooledOLS.from_formula(
        "y ~ age", _panel(3), groups="id", bounds={"y": (-5, 10), "age": (0, 100)}
    )
    with pytest.raises(error, match=match):
        model.fit(**options)


def test_results_hold_only_released_numbers_and_public_facts() -> None:
    """Values outside the bounds are clipped silently (whether any were is private): two
    panels that differ only beyond the bounds give the same release."""
    wild = _panel(5)
    wild.loc[0, "y"] = 1e9
    bounds = {"y": (-5, 10), "age": (0, 100)}
    inside = PooledOLS.from_formula(
        "y ~ age", wild.assign(y=wild["y"].clip(-5, 10)), groups="id", bounds=bounds
    ).fit(epsilon=1.0, random_state=3)
    clipped = PooledOLS.from_formula("y ~ age", wild, groups="id", bounds=bounds).fit(
        epsilon=1.0, random_state=3
    )
    pd.testing.assert_series_equal(inside.params, clipped.params)
    assert not any("1e+09" in str(v) for v in vars(clipped).values())


def test_scores_are_clipped_to_their_radius_and_exact_inside() -> None:
    """The Newton step's release has sensitivity 2R: every person's whitened score is within
    R. Inside it the score from the persons' sums is the rows' own ``Σ_t w x_t (y_t - x_t'β)``
    (rows of persons with more than ``cap`` rows weighted ``cap / T_u``)."""
    rng = np.random.default_rng(3)
    codes = np.sort(rng.integers(0, 50, 200))
    x = np.column_stack([np.ones(200), rng.uniform(-1, 1, 200)])
    y = rng.uniform(-1, 1, 200)
    beta, cap = np.array([0.1, -0.2]), 4
    rows = np.bincount(codes, minlength=50)
    weight = np.minimum(1.0, cap / np.maximum(rows, 1))[codes]
    by_rows = np.zeros((50, 2))
    np.add.at(by_rows, codes, x * (weight * (y - x @ beta))[:, None])
    persons = PersonSums.of_rows(x, y, codes, 50, blocks=(), kept=np.arange(6))
    whiten = np.array([[2.0, 0.5], [0.5, 1.0]])  # any public symmetric matrix
    exact = persons.scores(beta, cap=cap, whiten=whiten)
    np.testing.assert_allclose(persons.scores(beta, cap=cap, whiten=np.eye(2)), by_rows, atol=1e-12)
    np.testing.assert_allclose(exact, by_rows @ whiten, atol=1e-12)
    clipped = persons.scores(beta, cap=cap, whiten=whiten, radius=0.5)
    norms = np.linalg.norm(exact, axis=1)
    assert np.linalg.norm(clipped, axis=1).max() <= 0.5 * (1 + 1e-12)
    inside = norms <= 0.5
    assert inside.any() and (~inside).any()  # both branches exercised
    np.testing.assert_array_equal(clipped[inside], exact[inside])
    np.testing.assert_allclose(clipped[~inside], exact[~inside] * (0.5 / norms[~inside])[:, None])


def test_command_line_fits_pooled_with_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    from dplong.cli import main

    code = main(
        [
            "fit", "dataset:randhie", "--model", "pooled", "--formula",
            "lnmeddol ~ logc + xage + female", "--groups", "zper", "--epsilon", "1",
            "--bounds", "lnmeddol=0,12;logc=0,4.62;xage=0,100;female=0,1",
            "--max-rows", "5", "--seed", "0", "--quiet",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "PooledOLS results" in out and "female" in out
    assert main(["fit", "dataset:randhie", "--model", "pooled", "--formula", "lnmeddol ~ xage",
                 "--groups", "zper", "--epsilon", "1", "--seed", "0", "--quiet"]) == 0  # fmt: skip
    assert "found privately" in capsys.readouterr().out  # the ranges without --bounds


# ---------------------------------------------------------------------------------------------
# Given only ε: the ranges of the columns without bounds found privately
# ---------------------------------------------------------------------------------------------


def _covered_panel(seed: int, people: int = 3000, years: int = 4) -> pd.DataFrame:
    """A treatment constant within a person and a uniform covariate, the outcome bounded: the
    private ranges (4 median reaches, or a rung at a mass) hold every value."""
    rng = np.random.default_rng(seed)
    treated = np.repeat(rng.integers(0, 2, people), years).astype(float)
    x = rng.uniform(0, 1, people * years)
    y = 1.0 + 0.5 * treated + x + rng.uniform(-0.5, 0.5, people * years)
    return pd.DataFrame(
        {"id": np.repeat(np.arange(people), years), "y": y, "treated": treated, "x": x}
    )


@pytest.mark.usefixtures("unclipped_meat")
def test_noise_off_without_bounds_matches_statsmodels_where_the_ranges_hold_the_data() -> None:
    panel = _covered_panel(0)
    res = PooledOLS.from_formula("y ~ treated + x", panel, groups="id").fit(
        epsilon=1e300, delta=0.5, max_rows=4, random_state=0
    )
    params, bse = _clustered("y ~ treated + x", panel, "id")
    np.testing.assert_allclose(res.params, params, rtol=1e-8)
    np.testing.assert_allclose(res.sampling_sd, bse, rtol=1e-8)
    assert "found privately" in res.assumptions[0]


def _strong_between_slope(
    seed: int, people: int, rows: int, *, within: bool, tail: float | None = None
) -> pd.DataFrame:
    """y = 5 z + person effect + noise, z one normal value a person (every term N(0, 1); with
    ``tail``, z a t variable of that many degrees of freedom), or
    ``within``: y = 1 + 5 z + x + person effect + noise with x one normal value a row and the
    effect's sd 0.5. z's range's core (two median reaches, 1.35 sds) clips a third of the
    persons, so the released X'X the Newton steps solve by is about 0.6 of the design's along
    z and the design's along x (docs/accuracy.md, "A strong slope between persons")."""
    rng = np.random.default_rng(seed)
    z = np.repeat(rng.normal(size=people) if tail is None else rng.standard_t(tail, people), rows)
    if not within:
        y = 5.0 * z + np.repeat(rng.normal(size=people), rows) + rng.normal(size=people * rows)
        return pd.DataFrame({"id": np.repeat(np.arange(people), rows), "z": z, "y": y})
    effect = np.repeat(rng.normal(0.0, 0.5, people), rows)
    x = rng.normal(size=people * rows)
    y = 1.0 + 5.0 * z + x + effect + rng.normal(size=people * rows)
    return pd.DataFrame({"id": np.repeat(np.arange(people), rows), "z": z, "x": x, "y": y})


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_noise_off_the_steps_reach_pooled_ols_from_a_pilot_whose_core_clips_a_strong_slope(
    seed: int,
) -> None:
    """With the noise off the ranges hold every person (their tail counts are exact), so
    pooled OLS on the data is the steps' fixed point; the pilot solves the core-clipped X'X,
    and unscaled steps overshot it along z by nearly each correction, leaving z 0.5-1.8 SEs
    off. The second step solved by the Hessian with the first move's curvature (`_secant`)
    is exact where ``K - I`` is of rank one, as the core's clip of one column makes it; what
    remains is the clip's reach into the other columns, within 0.05 SEs on these seeds. A
    scaling along the first move alone (one curvature for every direction) left z within
    0.06 but moved x, whose curvature is 1, by up to 0.14 SEs: 0.1 SE."""
    panel = _strong_between_slope(seed, 2000, 4, within=True)
    params, bse = _clustered("y ~ x + z", panel, "id")
    res = PooledOLS.from_formula("y ~ x + z", panel, groups="id").fit(
        epsilon=1e300, delta=0.5, random_state=seed
    )
    assert (abs(res.params - params) < 0.1 * bse).all(), (res.params - params) / bse
    between = smf.ols("y ~ x + z", panel.groupby("id").mean()).fit()
    res = dplong.BetweenOLS.from_formula("y ~ x + z", panel, groups="id").fit(
        epsilon=1e300, delta=0.5, random_state=seed
    )
    assert (abs(res.params - between.params) < 0.1 * between.bse).all()


def _strong_slope_fits(
    model: type, rows: int, epsilon: float, tail: float | None
) -> list[RegressionResults]:
    """20 fits of ``y ~ z``, given only ε, on :func:`_strong_between_slope`'s panels of 5,000
    persons (seeds 1000-1019, the fits' ``random_state`` 0-19)."""
    fits = []
    for seed in range(20):
        panel = _strong_between_slope(1000 + seed, 5000, rows, within=False, tail=tail)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)  # each fit keeps its own warnings
            fits.append(
                model.from_formula("y ~ z", panel, groups="id").fit(
                    epsilon=epsilon, random_state=seed
                )
            )
    return fits


def _slope_and_misses(fits: list[RegressionResults]) -> tuple[float, int]:
    """The fits' mean slope on z and how many of their intervals for it miss the true 5."""
    intervals = [res.conf_int().loc["z"] for res in fits]
    misses = sum(not lower <= 5.0 <= upper for lower, upper in intervals)
    return float(np.mean([res.params["z"] for res in fits])), misses


@pytest.mark.parametrize(
    ("model", "rows", "epsilon", "tail"),
    [
        (PooledOLS, 6, 4.0, None),
        (dplong.BetweenOLS, 6, 4.0, None),
        (dplong.BetweenOLS, 3, 8.0, None),
        (PooledOLS, 4, 4.0, 20.0),
    ],
)
def test_a_strong_slope_between_persons_is_covered_given_only_epsilon(
    model: type, rows: int, epsilon: float, tail: float | None
) -> None:
    """5,000 persons, 20 fits: the slope (|t| above 100) was 5.11 on average for `PooledOLS`
    and 5.14 for `BetweenOLS` at 6 rows and ε = 4, and 12 and 14 of the 20 intervals missed
    5, with one or two warnings; `BetweenOLS` at 3 rows and ε = 8, whose first move is often
    within a few noise sds, missed in 16 of 30 (8 with the secant's gate at 5 sds). The
    steps' overshoot is scaled away (`_secant`). What stayed was the range's clip at four
    median reaches (2.7 sds of a normal z): +0.02 to +0.04 on these cells, and with z a t₂₀
    variable (`PooledOLS`, 4 rows) 5.07 on average and 4 misses, an overshoot the skew check
    read as skew among them. From ``n ε = LARGE_N`` the range reaches as at LARGE_N persons
    and the core grows with n ε (:func:`~dplong.privacy.ranges.reach_rungs`): the cells'
    means are within 0.025 of 5. The mean of 20 fits has sd about 0.007 (0.015 for the t₂₀
    cell): within 0.05 of 5 leaves 2.5 sds or more above the largest; a correct 95 % interval
    misses 4 or more of 20 with chance 1.6 %."""
    mean, misses = _slope_and_misses(_strong_slope_fits(model, rows, epsilon, tail))
    assert abs(mean - 5.0) < 0.05, mean
    assert misses <= 3, misses


def test_a_long_tailed_strong_slopes_range_is_widened_where_n_epsilon_reaches_further() -> None:
    """z a t₅ value a person, slope 5, 5,000 persons × 4 rows, ε = 8 (n ε above LARGE_N: the
    range's end at 5.3 median reaches). The tail count stays at 4 median reaches, inside that
    end, and sees the tail: every fit widens z's range (to 7 median reaches or more) and says
    so. Counted at the wider end instead (an audit's finding), the tail was too thin to widen
    it in half the fits, the slope clipped at 5.3 reaches came out 5.12 on average and 14 of 20
    intervals missed 5, 3 unwarned. Widened, the clip at 7 reaches leaves about +1 % (+0.05,
    noise off +0.06): the mean of 20 fits (sd about 0.007) within 0.08 of 5 is 5 sds from the
    narrower clip's 5.12. The bias is about an SE, so the intervals miss more often than 1 in
    20: 1 of 20 measured here (2 before the wider reach); at most 3."""
    fits = _strong_slope_fits(PooledOLS, 4, 8.0, 5.0)
    for seed, res in enumerate(fits):
        assert any("were widened to hold a long tail: z" in w for w in res.warnings), seed
    mean, misses = _slope_and_misses(fits)
    assert abs(mean - 5.0) < 0.08, mean
    assert misses <= 3, misses


def test_a_strong_slope_whose_overshoot_the_skew_check_reads_as_skew_is_warned() -> None:
    """Beside a within-varying x (person effects of sd 0.5), the second step's scores at the
    overshot β put the persons with the largest z on one side of their clip, the skew check
    fires, and its widened step is not scaled (its sum holds parts the first step clipped,
    which the secant would read as curvature: `_secant`): `BetweenOLS` at 6 rows and ε = 2
    missed 5 in 6 of 20 fits (measured), the overshoot left. (At ε = 4, ``n ε`` at
    ``LARGE_N``, the core grows with the range, nothing overshoots that far: none of 20
    missed.) Open (docs/accuracy.md); what this pins is that no such miss is silent: every
    one carries the skew check's warning, which asks for public bounds."""
    for seed in range(20):
        panel = _strong_between_slope(1000 + seed, 5000, 6, within=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DplongWarning)
            res = dplong.BetweenOLS.from_formula("y ~ x + z", panel, groups="id").fit(
                epsilon=2.0, random_state=seed
            )
        lower, upper = res.conf_int().loc["z"]
        if not lower <= 5.0 <= upper:
            assert any("skew check" in str(w.message) for w in caught), seed


def test_ledger_without_bounds_lists_the_ranges_and_spends_the_budget() -> None:
    """3 medians per column without bounds (x, treated and y), the rungs' counts and the
    counts beyond the ranges, then the five Gaussian releases: all composed within ε, most of
    it spent; the accountant sees the same ledger."""
    accountant = dplong.Accountant(epsilon=2.0, delta=1e-5)
    res = PooledOLS.from_formula("y ~ treated + x", _covered_panel(1), groups="id").fit(
        epsilon=1.0, delta=1e-6, max_rows=4, random_state=0, accountant=accountant
    )
    stages = [e.stage for e in res.privacy.entries]
    assert stages == ["bounds"] * 11 + [
        "sufficient statistics",
        "scores' size",
        "Newton step 1",
        "Newton step 2",
        "clustered meat",
    ]
    medians = [e for e in res.privacy.entries if e.stage == "bounds" and e.epsilon > 0]
    assert len(medians) == 9 and {e.target.split(":")[0] for e in medians} == {"treated", "x", "y"}
    (tails,) = [e for e in res.privacy.entries if e.target == "persons beyond the ranges"]
    assert tails.sensitivity >= math.sqrt(2 * 3)  # both sides of 3 columns, one each
    assert 0.98 < res.privacy.epsilon <= 1.0
    assert accountant.spent_epsilon == pytest.approx(res.privacy.epsilon)


def test_bounds_given_for_some_columns_are_not_located() -> None:
    res = PooledOLS.from_formula(
        "y ~ treated + x", _covered_panel(2), groups="id", bounds={"treated": (0, 1)}
    ).fit(epsilon=1.0, max_rows=4, random_state=0)
    targets = {e.target.split(":")[0] for e in res.privacy.entries if e.epsilon > 0}
    assert targets == {"x", "y"}
    assert "treated in [0, 1]," in res.assumptions[0]


def test_too_few_users_for_the_ranges_are_refused_before_any_noise() -> None:
    """n ε far too small for the medians: refused from public facts, nothing spent; the same
    fit with every bound stated runs."""
    small = _covered_panel(3, people=40)
    accountant = dplong.Accountant(epsilon=1.0)
    model = PooledOLS.from_formula("y ~ x", small, groups="id")
    with pytest.raises(dplong.exceptions.InsufficientUsersError, match="bounds"):
        model.fit(epsilon=0.5, accountant=accountant)
    assert accountant.spent_epsilon == 0.0
    PooledOLS.from_formula("y ~ x", small, groups="id", bounds={"y": (0, 4), "x": (0, 1)}).fit(
        epsilon=0.5, random_state=0
    )


def _simulated(seed: int, people: int, d: int, years: int = 8) -> pd.DataFrame:
    """benchmarks/pooled.py's panels: regressors with person effects, slopes 0.5."""
    rng = np.random.default_rng(seed)
    x = np.repeat(rng.normal(size=(people, d)), years, axis=0) + rng.normal(
        size=(people * years, d)
    )
    y = x @ np.full(d, 0.5) + np.repeat(rng.normal(size=people), years)
    frame = pd.DataFrame(x, columns=[f"x{k}" for k in range(d)])
    frame["y"] = y + rng.normal(size=people * years)
    frame["id"] = np.repeat(np.arange(people), years)
    return frame


def test_a_withheld_or_floored_x_x_names_max_rows_whose_bound_its_noise_is_in_proportion_to() -> (
    None
):
    """A four-wave panel of 1,000 persons, two regressors, ε = 1, max_rows stated as 10 (the
    ceiling of the cap found privately, the default before it was found): the released X'X's
    sensitivity is that of 10 rows a person, 2.5 times what the panel needs, and its noise
    withholds every coefficient ("unbounded") in 2 of these 6 fits and floors the released
    X'X (a ridge) in the others. The note names max_rows (public: the option, not the rows)
    beside ε; stated as the panel's 4 waves, the Gram matrix's sensitivity falls to 4/10 of
    the ceiling's and all 6 fits release (before the histograms guarded the medians at this
    n ε, one range missed its data at either max_rows, and at 10 rows the other five were
    withheld); not stated, the fit finds 4 (2 % of its ρ, drawn after the ranges) and all 6
    release. `BetweenOLS`, one row a person, does not name it."""
    frame = _simulated(5, 1000, 2, years=4)
    model = PooledOLS.from_formula("y ~ x0 + x1", frame, groups="id")
    released = {10: 0, 4: 0}
    for seed in range(6):
        fits = {rows: model.fit(epsilon=1.0, max_rows=rows, random_state=seed) for rows in released}
        for rows, res in fits.items():
            released[rows] += bool(np.isfinite(res.params).all())
        notes = [w for w in fits[10].warnings if "X'X" in w]
        assert notes and all(
            "tate max_rows where persons have fewer than its 10 rows" in w for w in notes
        )  # fmt: skip (State, or state after a remedy)
        gram = [
            next(e.sensitivity for e in res.privacy.entries if e.target == "[X y]'[X y]")
            for res in fits.values()
        ]
        assert gram[1] == pytest.approx(0.4 * gram[0], rel=1e-3)  # and the lattice's rounding
    assert released == {10: 4, 4: 6}
    found = [model.fit(epsilon=1.0, random_state=seed) for seed in range(6)]
    assert all("max_rows=4 found privately" in " ".join(res.assumptions) for res in found)
    assert sum(bool(np.isfinite(res.params).all()) for res in found) == 6
    between = dplong.BetweenOLS.from_formula("y ~ x0 + x1", frame, groups="id")
    assert not any("max_rows" in w for w in between.fit(epsilon=1.0, random_state=0).warnings)


def test_small_n_epsilon_finds_the_ranges_from_one_vector_of_histograms() -> None:
    """n = 1000, three regressors, given only ε = 1: the medians would be refused (their miss
    bound is above MAX_MISS), so the plan gives the ranges one Gaussian vector of histograms
    instead (public facts: the plan says so, and the fit notes it); the ledger has that
    entry with its sensitivity 2 √k, and the counts of the persons beyond the ranges' ends
    (√(2 k)), spends at most ε, and the fits that release cover the
    slopes (the benchmark's MSE ratio at this cell is about 7: a wrong range would be far
    off)."""
    frame = _simulated(3, 1000, 3)
    model = PooledOLS.from_formula("y ~ x0 + x1 + x2", frame, groups="id")
    plan = model.release_plan(epsilon=1.0, delta=1e-6, max_rows=8)
    assert plan.median_epsilon == 0.0 and plan.histogram_rho > 0.0
    released = 0
    for seed in range(4):
        res = model.fit(epsilon=1.0, delta=1e-6, max_rows=8, random_state=seed)
        bounds = [e for e in res.privacy.entries if e.stage == "bounds"]
        assert [e.target for e in bounds] == [
            "persons' extremes by dyadic cell",
            "persons beyond the ranges",
        ]
        assert bounds[0].rho == pytest.approx(plan.histogram_rho)
        assert bounds[1].rho == pytest.approx(plan.tail_rho) and plan.tail_rho > 0.0
        # 2 √k and √(2 k) for k = 4, plus the lattice's rounding (counted in)
        assert 4.0 <= bounds[0].sensitivity <= 4.0 * 1.02
        assert math.sqrt(8.0) <= bounds[1].sensitivity <= math.sqrt(8.0) * 1.02
        assert res.privacy.epsilon <= 1.0
        assert pooled_located.HISTOGRAM_NOTE in res.warnings
        slopes = res.conf_int(0.05).loc[["x0", "x1", "x2"]]
        if slopes.isna().all(axis=None):  # withheld from released numbers (1 in 60 measured)
            assert res.withheld_why == dict.fromkeys(res.params.index, "unbounded")
            continue
        released += 1
        assert ((slopes["lower"] <= 0.5) & (0.5 <= slopes["upper"])).all()
    assert released >= 3  # seed 0 is withheld here, 1-3 released (the benchmark: 59 of 60)
    # the planner, from public facts only, says the same (and notes it)
    decided = dplong.plan("y ~ x0 + x1 + x2", model="pooled", n=1000, epsilon=1.0)
    assert "Decision: released, with warnings" in decided.summary()


def _pooled_slope(frame: pd.DataFrame, formula: str, groups: str) -> pd.Series:
    """Non-private pooled OLS (every row weighing one: the persons have equally many rows)."""
    return smf.ols(formula, frame).fit().params


def test_a_range_that_clips_some_persons_says_so() -> None:
    """A regressor whose within-person noise is t₂ (3,000 persons of 5 rows, ε = 4): its range
    ends a few spreads out and clips a hundred-odd persons, below the √n + 2.2 noise sds that
    withhold it as clipping many, and far beyond the range each pulls the slope by much more
    than a spread. The count above its noise alone (SOME_FALSE) widens the range for the tail
    and is said in a note, the slope released. Measured on these 20 panels: the note in 14
    fits, intervals missing pooled OLS with no warning in 3 (10 before any note); the normal
    regressor's fits: no note in 20.
    Bounds: at most 6 silent misses (the code before any note fails), at least 8 notes
    (binomial sd about 2 at 14), and for the normal regressor at most 1 note (the count's
    false rate is 1 % a fit)."""
    silent, noted, clean = 0, 0, 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        ids = np.repeat(np.arange(3000), 5)
        for kind in ("t2", "normal"):
            noise = rng.standard_t(2, ids.size) if kind == "t2" else rng.normal(size=ids.size)
            x = rng.normal(size=3000)[ids] + noise
            y = 1 + 0.3 * x + rng.normal(size=3000)[ids] + rng.normal(size=ids.size)
            frame = pd.DataFrame({"id": ids, "x": x, "y": y})
            res = PooledOLS.from_formula("y ~ x", frame, groups="id").fit(
                epsilon=4.0, random_state=seed
            )
            said = any(
                "clip some persons: x" in w or "widened to hold a long tail: x" in w
                for w in res.warnings
            )
            if kind == "normal":
                clean += said
                continue
            noted += said
            low, high = res.conf_int().loc["x"]
            slope = _pooled_slope(frame, "y ~ x", "id")["x"]
            silent += bool(np.isfinite(low) and not low <= slope <= high and not res.warnings)
    assert silent <= 6 and noted >= 8 and clean <= 1, (silent, noted, clean)


def test_a_small_group_far_below_a_regressors_bulk_is_said_on_rand_hie() -> None:
    """RAND HIE's log family income ``linc``: 1 % of the persons at 0 and 5 % below 7.1 against
    a bulk about 9 (sd 0.6). Its range ends near 7; the persons it clips, 180-260 by the count
    at ε = 4, sit about the threshold that withholds the slope as clipping many, so noise
    decided: where it fell below, ``linc``'s slope was released 3-4.5 SEs from pooled OLS with
    no warning (6 of 20 fits). The count above its noise now says so: no silent miss in 20
    (measured; at most 1 allowed, the count's noise sd being a fifth of the threshold)."""
    hie = dplong.datasets.load_randhie().assign(lncoins=lambda d: d["logc"])
    formula = "np.log1p(mdvis) ~ lncoins + xage + female + linc + child"
    reference = _pooled_slope(hie, formula, "zper")  # 5 rows a person nearly everywhere
    model = PooledOLS.from_formula(formula, hie, groups="zper")
    silent = 0
    for seed in range(20):
        res = model.fit(epsilon=4.0, random_state=1000 + seed)
        ci = res.conf_int()
        kept = np.isfinite(ci["lower"])
        missing = ~((ci["lower"] <= reference) & (reference <= ci["upper"]))[kept]
        silent += bool(missing.any() and not res.warnings)
    assert silent <= 1, silent


def test_the_histograms_guard_a_thin_sides_reach_on_the_wage_panel() -> None:
    """The wage panel (545 men), `PooledOLS lwage ~ educ + exper + union`, max_rows=8, ε = 2.
    Schooling is an integer with 231 of the men at 12 years: 130 are above, and that side's
    median reach (ε 0.07 a median) loses to the few hundred cells tied beyond every man in
    most draws; the range then misses (every coefficient withheld) or stretches schooling
    constant in its frame (withheld as unbounded). From public facts (a reach's miss bound
    for a side of a quarter of n, SIDE_SHARE, is above SIDE_MISS) the plan has histograms
    of the persons' extremes guard the medians, from the medians' share; a column whose
    medians' range missed or reached far beyond the histograms' takes theirs. The within
    estimator's deviations put every man who varies on both sides: at ε = 4 it is not
    guarded. Measured over these 20 seeds: released in 6 before, 17 now, every interval
    covering the non-private pooled OLS. So >= 11 of 20 released (at the measured 0.85,
    failing has chance 0.3 %; at the old 0.3, passing 1.7 %), and every released interval
    covering."""
    wages = dplong.datasets.load_wage_panel()
    formula = "lwage ~ educ + exper + union"
    model = PooledOLS.from_formula(formula, wages, groups="nr")
    plan = model.release_plan(epsilon=2.0, delta=545.0**-2, max_rows=8)
    assert plan.median_epsilon > 0.0 and plan.histogram_rho > 0.0
    within = dplong.PanelOLS.from_formula("lwage ~ exper + union", wages, groups="nr")
    assert within.release_plan(epsilon=4.0, delta=545.0**-2, max_rows=8).histogram_rho == 0.0
    params = smf.ols(formula, wages).fit().params
    released = guarded = 0
    for seed in range(20):
        res = model.fit(epsilon=2.0, max_rows=8, random_state=seed)
        entries = [e.target for e in res.privacy.entries]
        assert "persons' extremes by dyadic cell" in entries and res.privacy.epsilon <= 2.0
        if res.params.isna().any():
            continue
        released += 1
        guarded += "by the histograms that guard the medians" in res.assumptions[0]
        ci = res.conf_int(0.05)
        assert ((ci["lower"] <= params) & (params <= ci["upper"])).all()
    assert released >= 11 and guarded >= 1


def test_histograms_too_thin_for_their_threshold_are_refused_before_any_noise() -> None:
    """n = 500 with six regressors at ε = 1: a cell would need 0.31 n persons (beyond
    HISTOGRAM_USERS[1] n): refused from public facts, nothing spent, and dplong.plan agrees
    and names the ε that cures it."""
    accountant = dplong.Accountant(epsilon=1.0)
    names = " + ".join(f"x{k}" for k in range(6))
    model = PooledOLS.from_formula(f"y ~ {names}", _simulated(4, 500, 6), groups="id")
    with pytest.raises(dplong.exceptions.InsufficientUsersError, match="histograms") as refused:
        model.fit(epsilon=1.0, max_rows=8, accountant=accountant)
    assert refused.value.budget_refusal and accountant.spent_epsilon == 0.0
    decided = dplong.plan(f"y ~ {names}", model="pooled", n=500, epsilon=1.0)
    assert "REFUSED before any noise" in decided.summary()


def test_randhie_given_only_epsilon_covers_the_non_private_estimate() -> None:
    """RAND HIE at ε = 1, nothing but max_rows=5 (the study's public length): the 95 %
    intervals cover the non-private pooled OLS in 40 seeds, for every coefficient. The
    intervals are conservative (their noise law allows for the Newton step correcting none
    of the pilot: coverage measured 1.0), so >= 36 / 40 fails a correct 0.95 with chance
    2.9 % per coefficient and a conservative one far less; the RMSE over the clustered SE
    (measured 1.1-1.4 over 80 seeds) stays below 2.5 (its own sampling sd is about 10 %).
    Log spending leaves nobody beyond CLIPPED_RUNG median reaches, far under the heavy
    tails' threshold (√n plus 2.4 noise sds, about 190 persons): at most 2 of 40 fits may
    name a range (the threshold's union bound allows 5 % of fits with nobody beyond)."""
    hie = dplong.datasets.load_randhie()
    params, _ = _clustered(HIE_FORMULA, hie, "zper")
    fit = smf.ols(HIE_FORMULA, hie).fit(cov_type="cluster", cov_kwds={"groups": hie["zper"]})
    model = PooledOLS.from_formula(HIE_FORMULA, hie, groups="zper")
    covered, errors, heavy = np.zeros(4), [], 0
    for seed in range(40):
        res = model.fit(epsilon=1.0, max_rows=5, random_state=seed)
        ci = res.conf_int(0.05)
        covered += ((ci["lower"] <= params) & (params <= ci["upper"])).to_numpy()
        errors.append(((res.params - params) / fit.bse).to_numpy())
        noted = any("clip many persons" in note for note in res.warnings)
        assert noted == any("bias bound leaves out" in line for line in res.assumptions)
        heavy += noted
    assert covered.min() >= 36, covered
    assert np.sqrt(np.mean(np.square(errors), axis=0)).max() < 2.5
    assert heavy <= 2


def test_a_found_outcome_is_read_out_to_its_room_and_a_declared_one_to_its_bounds() -> None:
    """The rows the scores read clip an outcome whose range was found privately at
    OUTCOME_ROOM half-widths of it from its middle (its scores are clipped by norm in every
    release that reads them, so no sensitivity rests on the range), the columns at their
    ranges, and a declared outcome at its bounds (the analyst's: the ePTR release's
    sensitivity needs them). The ranges line names the room only where there is one."""
    found = np.array([[1.0, 1.0], [-2.0, 2.0], [0.0, 10.0]])
    columns = ("Intercept", "x")
    x, y = np.array([[1.0, 5.0], [1.0, -1.0]]), np.array([60.0, -100.0])
    room = pooled_frame.OUTCOME_ROOM * 5.0
    for outcome_found, (low, high) in ((True, (5.0 - room, 5.0 + room)), (False, (0.0, 10.0))):
        scaled = pooled_frame._Scaling.of(found, columns, outcome_found=outcome_found)
        rows, out = scaled.apply(x, y)
        np.testing.assert_allclose(rows[:, 1], [1.0, -0.5])  # x at its range: 2 of 2
        np.testing.assert_allclose(out * 5.0 + 5.0, [min(60.0, high), max(-100.0, low)])
    panel = pd.DataFrame({"id": np.repeat(np.arange(2000), 3)})
    rng = np.random.default_rng(0)
    panel = panel.assign(x=rng.normal(size=6000), y=rng.lognormal(size=6000))
    res = PooledOLS.from_formula("y ~ x", panel, groups="id").fit(epsilon=2.0, random_state=0)
    line = res.assumptions[0]

    def interval(after: str) -> NDArray[np.float64]:
        return np.array([float(v) for v in line.split(after)[1].split("]")[0].split(",")])

    found_y, read = interval("y in ["), interval("out to [")
    middle, half = found_y.mean(), (found_y[1] - found_y[0]) / 2.0
    # the line's four significant digits
    np.testing.assert_allclose(
        read, middle + pooled_frame.OUTCOME_ROOM * half * np.array([-1, 1]), rtol=1e-3
    )
    bounded = PooledOLS.from_formula("y ~ x", panel, groups="id", bounds={"y": (0.0, 60.0)})
    assert "out to" not in bounded.fit(epsilon=2.0, random_state=0).assumptions[0]


def test_a_mildly_lognormal_outcome_read_out_to_its_room_does_not_pull_the_slopes() -> None:
    """The first silent-miss pattern of docs/accuracy.md: y = exp(0.2 + 0.5 x + 0.3 treat + u
    + e), ``treat`` a 0/1 person constant, u ~ N(0, 0.1), e ~ N(0, 0.3), 5,000 persons of 4
    rows, ε = 2, given only ε. The outcome's range, found at four median reaches of the
    persons' extremes, cut its long side in the scores and pulled both slopes down: over
    these seeds, before OUTCOME_ROOM, the z of ``x`` against pooled OLS (plain OLS on every
    row) averaged -1.2 and its interval missed in 8 of 30 fits (5 with no warning), ``treat``'s
    z -0.8. Read out to the room, both average within 0.15 of 0 and no interval misses (60
    seeds, measured). Bar, per slope: a mean z within 0.6 of 0 is 3.3 sds of the mean of 30
    z's whose sd is at most 1 (the intervals carry the sampling and the noise sds), so an
    unbiased fit fails it with chance below 0.001; and at most 2 misses of 30 (1.5 expected
    at 95 %)."""
    names = ["x", "treat"]
    z, misses = [], np.zeros(2, dtype=int)
    for seed in range(30):
        panel = lognormal_outcome_panel(seed)
        reference = smf.ols("y ~ x + treat", panel).fit().params[names].to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = PooledOLS.from_formula("y ~ x + treat", panel, groups="id").fit(
                epsilon=2.0, random_state=seed
            )
        interval = res.conf_int().loc[names].to_numpy()
        misses += (reference < interval[:, 0]) | (reference > interval[:, 1])
        z.append((res.params[names].to_numpy() - reference) / res.bse[names].to_numpy())
    mean_z = np.mean(z, axis=0)
    assert np.all(np.abs(mean_z) < 0.6) and np.all(misses <= 2), (mean_z, misses)


def test_noise_off_a_skewed_outcome_is_not_pulled_by_clipped_scores() -> None:
    """Raw yearly spending with public bounds (0, 8000), noise off and nothing patched: the
    scores' radius is the one whose noise is quiet, here beyond every score, so the steps
    land on pooled OLS of the clipped outcome (statsmodels) to 0.05 clustered SEs. At the
    Cauchy–Schwarz radius (an average residual's), 5-10 % of the persons' scores were
    clipped and, the outcome being skewed, pulled ``xage`` 4 SEs low with a zero-width
    interval (measured)."""
    hie = dplong.datasets.load_randhie()
    bounds = {"meddol": (0, 8000), "xage": (0, 100), "female": (0, 1)}
    clipped = hie.assign(meddol=np.minimum(hie["meddol"], 8000))
    params, bse = _clustered("meddol ~ xage + female", clipped, "zper")
    res = PooledOLS.from_formula("meddol ~ xage + female", hie, groups="zper", bounds=bounds).fit(
        epsilon=1e6, delta=0.5, max_rows=5, random_state=0
    )
    assert np.abs((res.params - params) / bse).max() < 0.05


@pytest.mark.parametrize("estimator", ["PooledOLS", "RandomEffects", "PanelOLS"])
def test_randhie_raw_spending_is_flagged_heavy_where_its_range_clips_it(estimator: str) -> None:
    """Raw yearly spending (``meddol``): 12 % of the persons lie beyond 5 median reaches of
    the midpoint (about 700 of 5,912, a released count some 10 noise sds above the bar), so
    the range is widened, to 31 median reaches where the counts beyond 16 show the 2.4 %
    there (141 persons, up to 128 median reaches out; of their deviations from their own
    means, which PanelOLS regresses, about 6 %), and still clips a few dozen. Before the
    widening ``xage`` was about 8 clustered SEs below non-private pooled OLS and covered in 0
    of 30 fits at ε = 1; widened, about 6 and in 20 of 20, the wide range's noise in the
    interval. No release measures what it still clips, so every fit must say so, naming the
    outcome: clipping many (where no rung's count is within its bar) or widened for a long
    tail, a bias the intervals leave out, remedied by a transform; and the assumptions say the
    bias bound leaves it out. The random-effects fit finds its ranges once and passes them to
    its pilot and final fits, whose notes it reports. PanelOLS's public bounds only cap its
    deviations' ranges, so its note does not offer them as the remedy."""
    hie = dplong.datasets.load_randhie()
    model = getattr(dplong, estimator).from_formula("meddol ~ xage + female", hie, groups="zper")
    # female never changes within a person: PanelOLS is told so (found so, it would withhold
    # xage with it, test_panel_ols.py)
    between = {"between": ["female"]} if estimator == "PanelOLS" else {}
    for seed in range(3 if estimator == "PooledOLS" else 1):
        res = model.fit(epsilon=1.0, max_rows=5, random_state=seed, **between)
        (note,) = [w for w in res.warnings if "meddol (about " in w]
        count = float(note.split("meddol (about ")[1].split(" ")[0])
        if "clip many persons" in note:  # beyond the far rung: 2.4 % (6 %) without noise
            assert 0.01 * 5912 < count < 0.15 * 5912, note
        else:  # beyond the first rung: 12 % without noise
            assert "widened to hold a long tail" in note and 0.05 * 5912 < count < 0.3 * 5912
        assert "can exceed" in note and "np.log1p" in note
        assert ("bounds={" in note) == (estimator != "PanelOLS")
        # the error bounds' assumptions say what their bias bound leaves out
        assert any("bias bound leaves out" in line for line in res.assumptions)


def test_a_withheld_fit_with_an_uncentred_power_says_to_centre_it() -> None:
    """Age and its square on 20-70 correlate 0.99: with three other columns at 3,000
    persons and ε = 4 the released X'X did not determine them in 4 of 5 fits (an audit: 39 of
    40). The note of the withheld fit names the power and how to centre it (the formula, a
    public fact, says where one is); centred on a public constant, the same fit releases."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(3000), 4)
    age = np.repeat(rng.uniform(20, 70, 3000), 4) + np.tile(np.arange(4), 3000)
    female, treated = (np.repeat(rng.integers(0, 2, 3000), 4) for _ in range(2))
    post = np.tile([0, 0, 1, 1], 3000)
    y = 0.05 * age - 0.0004 * age**2 + 0.3 * female + 0.2 * post * treated
    y = y + np.repeat(rng.normal(size=3000), 4) + rng.normal(size=ids.size)
    panel = pd.DataFrame(
        {"id": ids, "age": age, "female": female, "treated": treated, "post": post, "y": y}
    )
    raw = PooledOLS.from_formula(
        "y ~ post + treated + age + I(age**2) + female", panel, groups="id"
    ).fit(epsilon=4.0, random_state=4)
    assert raw.params.isna().all()
    assert "centre the power 'age ** 2' on a public constant" in raw.warnings[0]
    centred = PooledOLS.from_formula(
        "y ~ post + treated + I((age - 45) / 10) + I(((age - 45) / 10)**2) + female",
        panel,
        groups="id",
    ).fit(epsilon=4.0, random_state=4)
    assert np.isfinite(centred.params).all() and not centred.warnings
    # at ε = 0.5 both are withheld: only the uncentred one is told to centre its power
    square, centred_square = (
        PooledOLS.from_formula(f"y ~ post + treated + age + {term} + female", panel, groups="id")
        .fit(epsilon=0.5, random_state=4)
        .warnings
        for term in ("np.square(age)", "np.square(age - 45)")
    )
    assert "withheld" in square[0] and "centre the power 'np.square(age)'" in square[0]
    assert "withheld" in centred_square[0] and "centre the power" not in centred_square[0]


def test_the_limit_of_the_counts_beyond_the_ranges_is_stated() -> None:
    """A small group far out on the outcome (1.5 % of 3,000 persons with counts ten times the
    others', after an audit's panel of 2 %) is clipped by the outcome's range found privately,
    and the released count beyond its end (noise sd 22 at ε = 2) cannot tell it from none: no note
    on the ranges (in an audit's 40 fits, 26 intervals missed pooled OLS's intercept, about 4
    SEs low, and the last step's skew check warned of 10 of them). No released
    number can make that a warning (the count of a panel without the group is as likely), so
    the assumptions state the limit from public facts: the count above which a group is seen
    (:func:`~dplong.privacy.ranges.unseen_threshold` of n, the three columns and the count's
    noise sd, the ledger's), and the remedy. Public bounds for every column leave nothing to
    count and no such line."""
    rng = np.random.default_rng(1)
    rows = rng.integers(3, 11, 3000)
    ids = np.repeat(np.arange(3000), rows)
    treat, x = rng.integers(0, 2, 3000)[ids], rng.normal(size=3000)[ids] + rng.normal(size=ids.size)
    effect = rng.normal(0, 0.5, 3000)[ids]
    y = rng.poisson(np.exp(0.5 + 0.5 * (0.3 * treat + 0.2 * x + effect))).astype(float)
    group = (rng.uniform(size=3000) < 0.015)[ids]
    panel = pd.DataFrame({"id": ids, "y": np.where(group, 10.0 * y, y), "treat": treat, "x": x})
    res = PooledOLS.from_formula("y ~ treat + x", panel, groups="id").fit(
        epsilon=2.0, random_state=1
    )
    ledger = res.privacy.to_frame().set_index("target")
    sd = float(ledger.loc["persons beyond the ranges", "noise_scale"])
    bar = ranges.unseen_threshold(3000, 3, sd)
    assert round(bar) == 66 and np.unique(ids[group]).size < bar  # 49 persons: unseen
    (line,) = [a for a in res.assumptions if "clipped unseen" in a]
    assert f"only above {bar:,.0f} ({bar / 3000:.1%} of them) on a side" in line
    # the range's counts say nothing of the group (the case the line is for); the last step's
    # skew check, run inside the Cauchy–Schwarz radius too, sees its clipped scores in some
    # fits (not this one), not in every fit (17 of 40 of the 2 % panel's intercept misses went
    # unwarned at ε = 2), which is why the line stays
    assert "bounds={...}" in line
    assert all("were skewed" in w for w in res.warnings), res.warnings
    public = {"y": (0.0, 300.0), "treat": (0.0, 1.0), "x": (-8.0, 8.0)}
    bounded = PooledOLS.from_formula("y ~ treat + x", panel, groups="id", bounds=public)
    fit = bounded.fit(epsilon=2.0, random_state=1)
    assert not any("clipped unseen" in a for a in fit.assumptions)


def test_a_lognormal_regressor_is_released_from_its_widened_range() -> None:
    """A regressor whose persons' levels are lognormal (σ = 1.5), with normal noise within
    them (4,000 persons of 4 rows, ε = 1, given only ε): its range found privately ends at
    four median reaches and clips some 10 % of the persons beyond five. Before the widening
    the count withheld its slope in all 8 of these fits (a slope on its clipped values is
    that of another regressor); widened for the tail, it is released in all 8, each fit
    saying so in a warning and in the ranges line, and the intervals hold pooled OLS's slope
    in 6 (the other two: the pull of the few beyond the widened range, which the warning
    names). At least 5 of 8 must hold it (over 30 such fits, 22 of 28 released held it)."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(7)
    ids = np.repeat(np.arange(4000), 4)
    x = np.repeat(rng.lognormal(0.0, 1.5, 4000), 4) + 0.3 * rng.normal(size=ids.size)
    z = np.repeat(rng.integers(0, 2, 4000), 4).astype(float)
    y = 0.5 * x + z + np.repeat(rng.normal(size=4000), 4) + rng.normal(size=ids.size)
    panel = pd.DataFrame({"id": ids, "x": x, "z": z, "y": y})
    slope = smf.ols("y ~ x + z", panel).fit().params["x"]
    model = PooledOLS.from_formula("y ~ x + z", panel, groups="id")
    held = 0
    for seed in range(8):
        res = model.fit(epsilon=1.0, random_state=seed)
        low, high = res.conf_int().loc["x"]
        assert np.isfinite(res.params["x"])
        assert any("widened to hold a long tail: x" in w for w in res.warnings)
        assert "x in [" in res.assumptions[0] and "widened for a long tail" in res.assumptions[0]
        assert any("ranges widened for a long tail still clip" in a for a in res.assumptions)
        held += bool(low <= slope <= high)
    assert held >= 5, held


def test_a_lognormal_income_at_a_high_epsilon_widens_rather_than_clips_unseen() -> None:
    """A lognormal income (σ = 0.8 between persons, 3,000 persons of 1-20 rows) in
    `BetweenOLS` at ε = 4, given only ε: about 2.6 % of the persons lie beyond five median
    reaches of the income's range, out to twenty, and their clipping moves the slope by one to
    two half-widths. With the tail count's noise sd at √n / 2 the count (about 78) sat at the
    bar of some (80): the range was widened in 7 of 12 such fits, and 3 of the other 5 missed
    the non-private slope with no warning. With it at 0.3 √n (`TAIL_SD`) the bar is about
    √n, and the range was widened in 30 of 30 such fits (seeds 0-29); all 8 here must be (had
    the chance stayed at 7 of 12, 8 of 8 would have come out with chance 1 %)."""
    for seed in range(8):
        rng = np.random.default_rng(seed)
        rows = np.minimum(rng.geometric(0.2, 3000), 20)
        ids = np.repeat(np.arange(3000), rows)
        income = np.exp(rng.normal(10.5, 0.8, 3000)[ids] + 0.2 * rng.normal(size=ids.size))
        treat = np.repeat((rng.random(3000) < 0.3).astype(float), rows)
        y = 0.5 * np.log(income) + treat + rng.normal(size=3000)[ids] + rng.normal(size=ids.size)
        panel = pd.DataFrame({"id": ids, "income": income, "treat": treat, "y": y})
        model = dplong.BetweenOLS.from_formula("y ~ income + treat", panel, groups="id")
        res = model.fit(epsilon=4.0, random_state=seed)
        assert any("widened to hold a long tail: income" in w for w in res.warnings), seed


def test_a_regressor_whose_range_clips_many_has_its_coefficient_withheld() -> None:
    """Raw spending as a regressor (``np.log1p(mdvis) ~ meddol + xage``): its range found
    privately is widened for its long tail (as in the test above); the persons beyond 32
    median reaches, about 50 and up to 128 out, are at the edge of what the widened sides'
    counts can see (their bar about 1.6 sds of 50, and a person). The slope on the clipped
    spending is that of another regressor: about 12 clustered SEs from the non-private slope
    on the raw one. Where every rung's count clears its bar the slope is withheld with its
    reason, the other coefficients released with the note; elsewhere it is released with the
    widened range's note, which says the clipping's bias can exceed the interval. Every fit
    says one or the other. Measured: withheld in 4 of these 10 fits (8 of 20); at least 2
    (binomial at 0.4: fewer with chance 0.05). Before the widening the slope was withheld in
    every fit, and before the count beyond the ranges, the wage panel's ``black``, its range
    ending at 10^-53, was released at -4.6e51."""
    hie = dplong.datasets.load_randhie()
    model = PooledOLS.from_formula("np.log1p(mdvis) ~ meddol + xage", hie, groups="zper")
    withheld = 0
    for seed in range(10):
        res = model.fit(epsilon=1.0, max_rows=5, random_state=seed)
        assert np.isfinite(res.params[["Intercept", "xage"]]).all()
        (note,) = [w for w in res.warnings if "meddol (about " in w]
        if np.isnan(res.params["meddol"]):
            withheld += 1
            assert np.isnan(res.bse["meddol"])
            assert res.withheld_why == {"meddol": "range clips many"}
            assert "['meddol'] withheld" in note and "The other coefficients" in note
            assert "withheld: range clips many" in str(res.summary())
        else:
            assert "widened to hold a long tail" in note and "can exceed the intervals" in note
    assert withheld >= 2, withheld


def test_a_reach_far_beyond_its_side_gives_way_to_the_guarding_histograms() -> None:
    """The wage panel at ε = 4, five regressors, the 0/1 columns' bounds declared: in this fit
    the upper reach of years of schooling landed far beyond every man of its side (a side of
    142 men, its median's utility too thin against the far cells), so the column would be -1
    for every man in its frame (it had been released at -1.2e-117 with an interval excluding
    the non-private 0.10 and no note; then every coefficient was withheld as "range missed",
    the count beyond NEAR_RUNG reaches showing the miss). The histograms that guard the
    medians at this n ε give schooling's range instead (the ranges line names them), and the
    fit is released: every interval covers the non-private pooled OLS (over 20 seeds 18 fits
    released, 16 before, every interval covering)."""
    wages = dplong.datasets.load_wage_panel()
    binary = {"black": (0, 1), "union": (0, 1), "married": (0, 1)}
    formula = "lwage ~ exper + educ + black + union + married"
    model = PooledOLS.from_formula(formula, wages, groups="nr", bounds=binary)
    res = model.fit(epsilon=4.0, max_rows=8, random_state=31)
    ranges_line = res.assumptions[0]
    educ = ranges_line[ranges_line.index("educ in") :].split(")")[0]
    assert "by the histograms that guard the medians" in educ
    assert not res.withheld_why
    params = smf.ols(formula, wages).fit().params
    ci = res.conf_int(0.05)
    assert ((ci["lower"] <= params) & (params <= ci["upper"])).all()


def test_a_rare_binary_regressor_whose_range_is_a_sliver_is_withheld_not_absurd() -> None:
    """A 0/1 regressor that 3 % of 5,000 persons have, undeclared, ε = 2: its upper median
    reach has only the 150 persons at 1 against the many cells tied beside them, and lands
    anywhere among them (10^-9 to 10^9 in these seeds); before TINY_REACH, a range ending
    at 1e-62 and the like had the slope on the column clipped to it, the true one over that
    width, released at 2.8e61, 1.3e62 and 3.5e103 in three of these ten fits, with no note;
    before the counts' constant test, seed 17's range ended at 9.5e-5, whose far count hid
    under its noise (the slope released at 5,416, its interval excluding 0.5, no note). The
    counts find the column (nearly) constant, so its range is narrow, a sliver at its
    midpoint whatever its reaches: the slope is withheld with its reason in all twelve, and
    the column enters the frame as its deviations' signs, here itself, so that the other
    coefficients are released (every one within 3 bse of the truth here; with the range far
    out, the column constant in its frame, they were withheld as unbounded in 8 of 12)."""
    truth = pd.Series({"Intercept": 1.0, "d": 0.5, "x": 0.3})
    for seed in (*range(10), 11, 17):
        rng = np.random.default_rng(seed)
        ids = np.repeat(np.arange(5000), 4)
        d = np.repeat((rng.random(5000) < 0.03).astype(float), 4)
        x = rng.normal(size=ids.size)
        y = truth["Intercept"] + truth["d"] * d + truth["x"] * x + rng.normal(size=ids.size)
        panel = pd.DataFrame({"id": ids, "y": y, "d": d, "x": x})
        res = PooledOLS.from_formula("y ~ d + x", panel, groups="id").fit(
            epsilon=2.0, random_state=seed
        )
        assert np.isnan(res.params["d"]) and res.withheld_why["d"] == "range too narrow"
        released = res.params.drop("d")
        assert (np.abs(released - truth.drop("d")) < 3 * res.bse.drop("d")).all()
        (note,) = [w for w in res.warnings if "sliver" in w]
        assert "['d'] withheld" in note and "(0, 1)" in note


def test_a_zero_inflated_skewed_outcome_is_named_where_its_range_clips_its_tail() -> None:
    """An outcome 75 % of 5,000 persons have at 0 and the rest lognormal (spending, say), ε = 1,
    given only ε: its range found privately ends at a rung that leaves at most 5 % of n
    beyond it, inside the tail. No count sees the clipped mass at this noise; the range's
    shape does: its upper side spans ONE_SIDED times the lower (empty) one and its persons
    spread past the first rung, and the fit names the skewed outcome in a warning in every fit
    it releases (before, at 30 % 14 of 20 such misses were released with no warning;
    docs/accuracy.md). At 15 % the outcome's persons off 0 are too few for the counts to
    check its range (OUTCOME_CONSTANT_SDS): withheld. Not named: the wage panel's log wage and
    RAND HIE's log spending (0 of 20 fits each, measured).

    The last Newton step clips the scores a sliver inside the Cauchy–Schwarz radius (SLIVER),
    so the skew check runs, finds them one-sided and the step clips wider, and the intervals
    hold (measured: 10 of 10; they missed in 9 of 10 when that step counted as measured by
    the meat's excess window, 4-6 bse off). Bar: at most 2 misses in 10 (at a true 0.95, 3 or
    more have chance 0.012)."""
    import statsmodels.formula.api as smf

    released = missed = 0
    for seed in range(10):
        rng = np.random.default_rng([seed, 15])
        ids = np.repeat(np.arange(5000), 4)
        x = rng.normal(size=ids.size)
        spends = np.repeat(rng.random(5000) < 0.25, 4)
        y = np.where(spends, np.exp(0.5 + 0.3 * x + rng.normal(size=ids.size)), 0.0)
        panel = pd.DataFrame({"id": ids, "y": y, "x": x})
        res = PooledOLS.from_formula("y ~ x", panel, groups="id").fit(
            epsilon=1.0, random_state=seed
        )
        if not np.isfinite(res.params).all():
            continue
        released += 1
        truth = smf.ols("y ~ x", panel).fit().params
        lower, upper = res.conf_int().to_numpy().T
        missed += not ((lower <= truth) & (truth <= upper)).all()
        (note,) = [w for w in res.warnings if "times as far on one side" in w]
        assert "the outcome y" in note and "np.log1p" in note
        assert any("were skewed (the released skew check)" in a for a in res.assumptions)
    assert released >= 5 and missed <= 2
    wages = dplong.datasets.load_wage_panel()
    hie = dplong.datasets.load_randhie()
    for frame, formula, groups in (
        (wages, "lwage ~ exper + union", "nr"),
        (hie, "np.log1p(meddol) ~ xage + female", "zper"),
    ):
        res = PooledOLS.from_formula(formula, frame, groups=groups).fit(epsilon=1.0, random_state=0)
        assert not any("times as far on one side" in w for w in res.warnings)


def test_a_skewed_outcome_is_named_beside_a_regressor_whose_range_clips_many() -> None:
    """An outcome as in the test above (30 % of the persons off 0) with a heavy regressor beside
    it (lognormal, σ = 2.5): the regressor's range is widened for its tail, and clips many
    persons beyond it (its slope withheld) or some (released with the note), and its note
    names only it. The outcome's one-sided range still gets its own note (before,
    any note of a clipping range dropped it: named in 0 of 10 fits, the intercept's interval
    missing). Measured: named in 10 of 10; the flag needs the outcome's counts beyond its first
    rung to clear 2 sds of their noise, so a fit may go without it — at least 5 of the 10 fits
    must carry it."""
    named = 0
    for seed in range(10):
        rng = np.random.default_rng([seed, 15])
        ids = np.repeat(np.arange(5000), 4)
        x = rng.normal(size=ids.size)
        z = np.exp(2.5 * rng.normal(size=ids.size))
        spends = np.repeat(rng.random(5000) < 0.3, 4)
        y = np.where(spends, np.exp(0.5 + 0.3 * x + rng.normal(size=ids.size)), 0.0)
        panel = pd.DataFrame({"id": ids, "y": y, "x": x, "z": z})
        res = PooledOLS.from_formula("y ~ x + z", panel, groups="id").fit(
            epsilon=1.0, random_state=seed
        )
        notes = [w for w in res.warnings if "times as far on one side" in w]
        if notes:
            # the regressor's range is widened for its tail and clips many beyond it (its
            # slope withheld), or its note says what it still clips
            clips_many = res.withheld_why.get("z") == "range clips many"
            assert any(
                ("clip many persons: z" if clips_many else "widened to hold a long tail: z") in w
                for w in res.warnings
            )
            assert "the outcome y" in notes[0]
            # a regressor's clip is its range's; only the outcome's is read further in the steps
            assert not any(
                "clip many persons: z" in w and "the outcome's at its range" in w
                for w in res.warnings
            )
        named += len(notes)
    assert named >= 5


def _t3_panel(seed: int, people: int = 3000, years: int = 5) -> pd.DataFrame:
    """The audit's t₃ panel (session 117): x a t₃ draw a row plus a normal person part (sd
    0.5), ``y = 1 + 0.5 x + u + e`` with u and e standard normal."""
    rng = np.random.default_rng(10_000 + seed)
    ids = np.repeat(np.arange(people), years)
    u = rng.normal(size=people)[ids]
    x = rng.standard_t(3, size=ids.size) + 0.5 * rng.normal(size=people)[ids]
    y = 1 + 0.5 * x + u + rng.normal(size=ids.size)
    return pd.DataFrame({"id": ids, "x": x, "y": y})


@pytest.mark.parametrize("seed", [4, 29])
def test_a_regressors_tail_clipped_at_the_ranges_end_is_widened_over(seed: int) -> None:
    """A regressor's tail count is taken at its range's end (CLIPPED_RUNG = REACH): a slope
    feels a value clipped by δ at the end c as c δ, its leverage, however small δ is. The t₃
    panel of an audit (3,000 persons, five rows, ε = 4) left some 70 persons a side beyond
    the 4 median reaches its range ended at, 40 of them beyond 5, where the count was taken:
    below its bar (46), they went unseen, and the slope on the clipped values (0.535 and 0.560
    against pooled OLS 0.490 and 0.507 in these two fits) was released with intervals that
    excluded pooled OLS and no warning (4 of 30 fits). Counted at the end, the side is widened
    (WIDE_RUNGS), the fit says so, and the interval holds pooled OLS."""
    frame = _t3_panel(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = PooledOLS.from_formula("y ~ x", frame, groups="id").fit(
            epsilon=4.0, random_state=seed
        )
    assert any("widened to hold a long tail" in w and "x (about" in w for w in res.warnings)
    assert "x in [" in res.assumptions[0] and "widened for a long tail" in res.assumptions[0]
    X = np.column_stack([np.ones(len(frame)), frame["x"].to_numpy()])
    ols = np.linalg.lstsq(X, frame["y"].to_numpy(), rcond=None)[0]
    low, high = res.conf_int().loc["x"]
    assert low <= ols[1] <= high


def test_the_outcomes_tail_count_stays_a_median_reach_beyond_its_end() -> None:
    """The outcome's tail count is :data:`~dplong.privacy.ranges.OUTCOME_SLACK` beyond its
    range's end (the Newton steps read it out to OUTCOME_ROOM, and a clip of it moves the
    coefficients as a mean's value, by δ): the rungs are public, one count a side and column
    either way, so the vector's sensitivity is √(2 k) as before."""
    assert ranges.CLIPPED_RUNG == ranges.REACH
    assert ranges.tail_rungs(3000, 2, outcome=True).tolist() == [4.0, 5.0]
    assert ranges.tail_rungs(3000, 2).tolist() == [4.0, 4.0]
    big = ranges.reach_rungs(200_000)[0]
    assert ranges.tail_rungs(200_000, 2, outcome=True).tolist() == [big, big + 1.0]


def _outcome_panel(seed: int, outcome: str) -> pd.DataFrame:
    """2,000 persons of 5 rows, ``y = 1 + x/2 + z/2`` plus a person effect and noise: for 97 %
    of the persons 0 in every row (``"zeros"``), or ``-5000 + 5 (x + z + effect + noise)``
    (``"far"``: sd 10 at 5,000 from 0)."""
    rng = np.random.default_rng([seed, 65])
    ids = np.repeat(np.arange(2000), 5)
    effect, x, z, e = rng.normal(size=2000)[ids], *rng.normal(size=(3, ids.size))
    if outcome == "far":
        y = -5000.0 + 5.0 * (x + z + effect + e)
    else:
        y = np.where((rng.random(2000) < 0.97)[ids], 0.0, 1.0 + 0.5 * x + 0.5 * z + effect + e)
    return pd.DataFrame({"id": ids, "y": y, "x": x, "z": z})


@pytest.mark.parametrize(("model", "epsilon"), [(PooledOLS, 1.0), (dplong.PanelOLS, 4.0)])
def test_an_outcome_whose_few_persons_off_its_value_hide_in_the_noise_is_withheld(
    model: type[PooledOLS], epsilon: float
) -> None:
    """An outcome 97 % of the persons have at 0: the 60 others are too few for the counts to
    check the range found around them (both sides below the near and far tests' bars), and
    where their count passed the regressors' bar by noise the range ([-0.001, 0], [0, 4.8e-7])
    clipped them all: every interval missed pooled OLS by hundreds to millions of SEs, with no
    warning, in 5 of 30 `PooledOLS` fits at ε = 1 and 4 of 30 `PanelOLS` fits at ε = 4 (the
    rest withheld). The outcome's own bar (OUTCOME_CONSTANT_SDS: more than 5 % of n a side by
    3 sds) finds it (nearly) constant: every coefficient withheld with the sliver note
    (measured: 0 of 30 released each). Its count of 60 passes that bar with chance about
    0.5 % a fit: at most one of 12 may be released, and then only warned or covering."""
    released = 0
    for seed in range(12):
        frame = _outcome_panel(seed, "zeros")
        res = model.from_formula("y ~ x + z", frame, groups="id").fit(
            epsilon=epsilon, random_state=seed
        )
        if not np.isfinite(res.params).all():
            assert any("is a sliver of its column" in w for w in res.warnings)
            continue
        released += 1
        ols = smf_ols("y ~ x + z", frame).reindex(res.params.index)
        ci = res.conf_int()
        assert res.warnings or ((ci["lower"] <= ols) & (ols <= ci["upper"])).all()
    assert released <= 1


def test_a_side_too_thin_to_check_far_beyond_a_checked_one_missed() -> None:
    """An outcome near -5,000 (sd 10), 2,000 persons, ε = 1: its upper side's persons (some 400
    beyond the midpoint's cell) fell just under the near test's bar in some fits, its reach
    landed at 10^12, and the fit released slopes of 1e9 with intervals of ±3e11 and no
    warning (6 of 30 fits). A side too thin for the test that spans FAR_SPAN times the other,
    checked and within half the midpoint's magnitude, missed: withheld as "range missed" (0 of
    30 absurd, measured; the other side checked in every fit at this size)."""
    for seed in range(20):
        frame = _outcome_panel(seed, "far")
        res = PooledOLS.from_formula("y ~ x + z", frame, groups="id").fit(
            epsilon=1.0, random_state=seed
        )
        ols = smf_ols("y ~ x + z", frame)
        if np.isfinite(res.params).all():
            assert (np.abs(res.params - ols) < 1e3).all() or res.warnings
        else:
            assert set(res.withheld_why.values()) <= {"range missed", "unbounded"}


def smf_ols(formula: str, frame: pd.DataFrame) -> pd.Series:
    """Non-private pooled OLS coefficients (statsmodels)."""
    params: pd.Series = smf.ols(formula, frame).fit().params
    return params


# ---------------------------------------------------------------------------------------------
# BetweenOLS: the same releases on every person's means
# ---------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("unclipped_meat")
def test_between_noise_off_matches_linearmodels_on_an_unbalanced_panel() -> None:
    """linearmodels' BetweenOLS (unweighted means of each entity); its robust covariance is the
    sandwich times n / (n - k), dplong's times n / (n - 1) (k, like N, is public; the factor
    is the one PooledOLS uses)."""
    linearmodels = pytest.importorskip("linearmodels")
    import statsmodels.api as sm

    panel = _covered_panel(4)
    panel["t"] = np.tile(np.arange(4), len(panel) // 4)
    panel = panel[np.random.default_rng(4).uniform(size=len(panel)) > 0.25]
    res = dplong.BetweenOLS.from_formula(
        "y ~ treated + x", panel, groups="id", bounds={"y": (0, 4), "x": (0, 1), "treated": (0, 1)}
    ).fit(epsilon=1e300, delta=0.5, random_state=0)
    indexed = panel.set_index(["id", "t"])
    fit = linearmodels.BetweenOLS(indexed["y"], sm.add_constant(indexed[["treated", "x"]])).fit(
        cov_type="robust"
    )
    n, k = panel["id"].nunique(), 3
    np.testing.assert_allclose(res.params.to_numpy(), fit.params.to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(
        res.sampling_sd.to_numpy(),
        fit.std_errors.to_numpy() * math.sqrt((n - k) / (n - 1)),
        rtol=1e-8,
    )
    assert str(res.model) == "BetweenOLS" and "its means" in res.assumptions[1]


def test_between_given_only_epsilon_spends_the_budget_and_weighs_a_person_once() -> None:
    """A person is one row: the Gram matrix's sensitivity is that of T_cap = 1 (a max_rows,
    which it would ignore, is refused); the ledger lists the ranges and composes within ε."""
    model = dplong.BetweenOLS.from_formula("y ~ treated + x", _covered_panel(5), groups="id")
    with pytest.raises(ParameterError, match="max_rows applies to fits that weigh a person's"):
        model.fit(epsilon=1.0, max_rows=8, random_state=0)
    res = model.fit(epsilon=1.0, random_state=0)
    (gram,) = [e for e in res.privacy.entries if e.stage == "sufficient statistics"]
    # √2 B (GRAM_NORM √(p + 1) with p + 1 = 4), and the lattice's rounding and float
    # error (well below 0.1 %)
    assert gram.sensitivity == pytest.approx(math.sqrt(2.0) * pooled_gram.GRAM_NORM * 2.0, rel=1e-3)
    assert 0.95 < res.privacy.epsilon <= 1.0  # the pure medians compose below their ε²/2
    assert model.gram_noise_sd(epsilon=1.0, delta=1e-6, max_rows=8) == pytest.approx(
        model.gram_noise_sd(epsilon=1.0, delta=1e-6, max_rows=1)
    )


def _skewed_panel(seed: int, people: int = 5000, law: str = "exponential") -> pd.DataFrame:
    """A treatment constant within persons, a normal regressor with a person effect, four rows
    a person, intercept 1; the person effect and the errors ``exponential`` (centred) or
    ``normal``, or a ``lognormal`` person effect (σ = 1, centred: income- or spending-like
    persons, residuals correlated at about 0.8 within a person) and normal errors."""
    rng = np.random.default_rng(seed)
    rows = 4 * people
    treated = np.repeat(rng.integers(0, 2, people), 4).astype(float)
    x = rng.normal(size=rows) + np.repeat(rng.normal(size=people), 4)
    if law == "exponential":
        noise = np.repeat(rng.exponential(size=people), 4) + rng.exponential(size=rows) - 2.0
    elif law == "normal":
        noise = np.repeat(rng.normal(size=people), 4) + rng.normal(size=rows)
    elif law == "lognormal":
        effect = rng.lognormal(0.0, 1.0, people) - math.exp(0.5)
        noise = np.repeat(effect, 4) + rng.normal(size=rows)
    else:
        raise ValueError(f"law must be exponential, normal or lognormal, got {law!r}")
    return pd.DataFrame(
        {"id": np.repeat(np.arange(people), 4), "y": 1.0 + 0.5 * treated + 0.3 * x + noise,
         "treated": treated, "x": x}
    )  # fmt: skip


@pytest.mark.slow
def test_a_skewed_outcome_between_persons_is_checked_and_its_intercept_covered() -> None:
    """One mean a person has no rows' room in the scores' Cauchy–Schwarz radius, which clips
    about a quarter of the persons: on an exponential outcome (5,000 persons, ε = 1, given
    only ε) their clipped parts pulled the intercept 4 bse low, covered in 0 of 100 fits. The
    skew check before the last step finds them one-sided and widens the step (measured: 100
    of 100 fits), the intercept covered in 95 of 100. Of 10 fits, 8 must be widened and
    covered (at those rates, failing either has chance about 1 %); on normal errors at most 3
    widened (its false alarms are SKEW_FALSE, 5 %, plus what β₁'s error shifts: 8 of 100
    measured; 4 or more of 10 at 8 % has chance 0.5 %), each saying so."""
    truth = 1.0
    widened, covered = 0, 0
    for seed in range(10):
        res = dplong.BetweenOLS.from_formula(
            "y ~ treated + x", _skewed_panel(seed), groups="id"
        ).fit(epsilon=1.0, random_state=seed)
        widened += any("were skewed" in line for line in res.assumptions)
        low, high = res.conf_int().loc["Intercept"]
        covered += bool(low <= truth <= high)
        assert [e.stage for e in res.privacy.entries][-4:-1] == [
            "Newton step 1", "skew check", "Newton step 2"
        ]  # fmt: skip
    assert widened >= 8 and covered >= 8
    normal = 0
    for seed in range(10):
        panel = _skewed_panel(seed, law="normal")
        res = dplong.BetweenOLS.from_formula("y ~ treated + x", panel, groups="id").fit(
            epsilon=1.0, random_state=seed
        )
        normal += any("were skewed" in line for line in res.assumptions)
    assert normal <= 3


def _lognormal_panel(seed: int, people: int) -> pd.DataFrame:
    """As :func:`_skewed_panel`, the person effect lognormal (σ = 1, centred) and the errors
    normal: the long right tail of spending or income."""
    rng = np.random.default_rng(seed)
    rows = 4 * people
    treated = np.repeat(rng.integers(0, 2, people), 4).astype(float)
    x = rng.normal(size=rows) + np.repeat(rng.normal(size=people), 4)
    effect = np.repeat(rng.lognormal(0.0, 1.0, people) - math.exp(0.5), 4)
    return pd.DataFrame(
        {"id": np.repeat(np.arange(people), 4), "y": 1.0 + 0.5 * treated + 0.3 * x + effect
         + rng.normal(size=rows), "treated": treated, "x": x}
    )  # fmt: skip


def test_a_between_fit_below_the_skew_checks_gate_is_checked_and_clipped_wider() -> None:
    """2,000 persons at ε = 1: the check sees only a pull of about 4.9 sampling sds (above
    SKEW_SEEN), and the last step's noise at the Cauchy–Schwarz radius is about 1.05 sampling
    sds (within UNSEEN_NOISE): the check runs all the same, and where it finds no skew the step
    clips at UNSEEN_WIDEN times the radius. At the radius an exponential outcome's intercept sat
    1.74 bse low, covered in 84 of 120 fits (70 %); now 100 of 100 (benchmarks/pooled.py
    --parts skewed-y). Of 20 fits, 18 must cover: at 99 % failing has chance 0.1 %, at the old
    70 % passing 3.5 %. At 500 persons (the step's noise about 1.3 sampling sds) nothing runs
    and the step keeps the radius, unchecked: the fit warns."""
    covered = 0
    for seed in range(20):
        res = dplong.BetweenOLS.from_formula(
            "y ~ treated + x", _skewed_panel(seed, 2000), groups="id"
        ).fit(epsilon=1.0, random_state=seed)
        assert "skew check" in [e.stage for e in res.privacy.entries]
        assert any(
            "clipped the persons' scores at 2 times" in a or "were skewed" in a
            for a in res.assumptions
        )
        low, high = res.conf_int().loc["Intercept"]
        covered += bool(low <= 1.0 <= high)
    assert covered >= 18
    small = dplong.BetweenOLS.from_formula(
        "y ~ treated + x", _skewed_panel(0, 500), groups="id"
    ).fit(epsilon=1.0, random_state=0)
    assert any("at their Cauchy–Schwarz radius" in w for w in small.warnings)
    assert "skew check" not in [e.stage for e in small.privacy.entries]


def _audit_lognormal_panel(seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """1,000 persons of 3-8 rows, a lognormal outcome of a regressor varying within and
    between persons, a 0/1 treatment and a normal between-person regressor (the audit's
    scenario), and the non-private between estimate of ``y ~ x1 + treat + x2``."""
    rng = np.random.default_rng(30_000 + seed)
    rows = rng.integers(3, 9, 1000)
    ids = np.repeat(np.arange(1000), rows)
    x1 = np.repeat(rng.normal(size=1000), rows) + rng.normal(size=ids.size)
    treat = np.repeat(rng.integers(0, 2, 1000), rows).astype(float)
    x2 = np.repeat(rng.normal(size=1000), rows)
    effect = np.repeat(rng.normal(size=1000), rows)
    y = np.exp(0.3 * x1 + 0.2 * treat + 0.2 * x2 + 0.5 * effect + 0.5 * rng.normal(size=ids.size))
    frame = pd.DataFrame({"id": ids, "y": y, "x1": x1, "treat": treat, "x2": x2})
    means = frame.groupby("id").mean()
    design = np.column_stack([np.ones(1000), means[["x1", "treat", "x2"]].to_numpy()])
    return frame, np.linalg.lstsq(design, means["y"].to_numpy(), rcond=None)[0]


def test_a_between_fit_above_the_gate_that_finds_no_skew_clips_wider() -> None:
    """Above the skew check's gate (1,000 persons, ε = 4) the check fires only on a pull
    beyond the normal quantile of its noise and the clipped parts' spread, and misses most
    pulls of 1-3 bse: a lognormal outcome's intercept was checked symmetric in most fits, and
    its interval missed the non-private between estimate in 22 of these 60 fits, 21 with no
    warning. A check that finds no skew now clips the step at UNSEEN_WIDEN times the radius,
    as below the gate. At most 6 of 60 may miss unwarned: at 95 % coverage more has chance
    4 %; at the old rate of 35 % passing has chance below 10⁻⁴."""
    silent = guarded = 0
    for seed in range(60):
        frame, between = _audit_lognormal_panel(seed)
        res = dplong.BetweenOLS.from_formula("y ~ x1 + treat + x2", frame, groups="id").fit(
            epsilon=4.0, random_state=seed
        )
        low, high = res.conf_int().loc["Intercept"]
        silent += not (low <= between[0] <= high or res.warnings)
        guarded += any("at 2 times" in a for a in res.assumptions)
    assert silent <= 6 and guarded >= 30


def test_a_withheld_fit_with_wide_public_bounds_names_them() -> None:
    """A stated range is its column's frame: bounds far wider than the values (an audit's
    ``x1`` in (-8, 8) for a spread of 1.4, ``y`` in (0, 50) for a mean of 1.6) leave the
    columns small against X'X's noise, and such fits withhold every coefficient; the remedy
    named was "give public bounds" (for the one column without them) or none. It now names
    the wide bounds. Of 10 fits some are withheld (11 of 20 on the audit's seeds), and each
    such note says so."""
    bounds = {"x1": (-8.0, 8.0), "x2": (-5.0, 5.0), "y": (0.0, 50.0), "treat": (0.0, 1.0)}
    withheld = 0
    for seed in range(10):
        frame, _ = _audit_lognormal_panel(seed)
        res = dplong.BetweenOLS.from_formula(
            "y ~ x1 + treat + x2", frame, groups="id", bounds=bounds
        ).fit(epsilon=4.0, random_state=seed)
        if len(res.withheld):
            withheld += 1
            (note,) = [w for w in res.warnings if "withheld" in w]
            assert "narrow a public bound far wider than its column's values" in note
    assert withheld >= 3


def test_a_between_fit_whose_check_finds_skew_warns() -> None:
    """A lognormal person effect (σ = 1) at 3,000 persons, ε = 1: clipped at twice the radius
    unchecked, the intercept sat about 3 bse low and its interval missed in 50 of 60 fits, 47
    of them with no warning. The check below its gate finds the clipped scores one-sided in
    38 of 40 fits, which then clip at three times the radius and warn that what lies beyond
    can still move the intercept (a long tail: the wider step leaves it 2-3 bse low at 10,000
    persons, every fit warned). Of 10 fits, at least 8 must warn (at 95 %: failing has chance
    1 %; before, 3 of 60 warned), and no interval may miss unwarned in more than 2."""
    warned = silent = 0
    for seed in range(10):
        res = dplong.BetweenOLS.from_formula(
            "y ~ treated + x", _lognormal_panel(seed, 3000), groups="id"
        ).fit(epsilon=1.0, random_state=seed)
        flagged = any("were skewed" in w for w in res.warnings)
        warned += flagged
        low, high = res.conf_int().loc["Intercept"]
        silent += not (low <= 1.0 <= high or flagged)
    assert warned >= 8 and silent <= 2


def test_command_line_fits_between(capsys: pytest.CaptureFixture[str]) -> None:
    from dplong.cli import main

    code = main(["fit", "dataset:randhie", "--model", "between", "--formula",
                 "lnmeddol ~ logc + female", "--groups", "zper", "--epsilon", "1",
                 "--seed", "0", "--quiet"])  # fmt: skip
    assert code == 0 and "BetweenOLS results" in capsys.readouterr().out


def test_a_person_whose_rows_are_all_dropped_counts_nowhere_in_the_ranges() -> None:
    """The ranges' statistics keep one row per person of the public n: a person without rows
    (every y missing) has none, and the fit runs as for the others."""
    panel = _covered_panel(6, people=2000)
    panel.loc[panel["id"] == 0, "y"] = np.nan
    model = PooledOLS.from_formula("y ~ treated + x", panel, groups="id")
    lows, highs = model._extremes(model._located)
    assert lows.shape == (model.nobs_users, 3) and np.isnan(highs[0]).all()
    assert np.isfinite(model.fit(epsilon=1.0, max_rows=4, random_state=0).params).all()


def test_a_pull_nothing_bounds_is_withheld_with_a_note_and_no_overflow() -> None:
    """The wage panel's exper and expersq are nearly collinear over 0-20 years: at ε = 4 the
    released X'X (545 men) has an eigenvalue below its noise's typical norm along the
    curvature (in 20 of 20 seeds, measured), so the design's may be 0 there and nothing
    bounds the ridge's pull. Those coefficients are withheld from released numbers (NaN,
    "unbounded", a note with the remedies the public facts allow), with no RuntimeWarning
    and no interval at the doubles' edge (it was ±8e307: nan_to_num's default turned the
    infinite bound into the largest double)."""
    wages = dplong.datasets.load_wage_panel()
    bounds = {"lwage": (-4.0, 5.0), "exper": (0.0, 20.0), "expersq": (0.0, 400.0)}
    model = PooledOLS.from_formula("lwage ~ exper + expersq", wages, groups="nr", bounds=bounds)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = model.fit(epsilon=4.0, max_rows=8, random_state=0)
        ci = res.conf_int()
        summary = res.summary().as_text()
    assert res.params.isna().all() and ci.isna().all().all()
    assert (res.withheld == "unbounded").all()
    assert "beyond its noise" in res.warnings[0] and "give public bounds" not in res.warnings[0]
    assert "e+30" not in summary
    # with the noise off nothing is undetermined: released, with finite intervals
    released = model.fit(epsilon=1e300, delta=0.5, max_rows=8, random_state=0)
    assert np.isfinite(released.conf_int().to_numpy()).all()


def _symmetric_noise(rng: np.random.Generator, sigma: float, k: int, draws: int) -> np.ndarray:
    """``draws`` symmetric k x k Gaussian matrices of the released Gram matrix's law: entry sd
    σ on the diagonal, σ/√2 off it."""
    a = rng.normal(0.0, sigma, (draws, k, k))
    return (np.triu(a) + np.swapaxes(np.triu(a, 1), 1, 2)) / np.where(
        np.eye(k, dtype=bool), 1.0, math.sqrt(2.0)
    )


def test_eigenvalue_margins_bound_the_design_from_below_at_their_level() -> None:
    """The i-th smallest eigenvalue of the released X'X less its margin is below the design's
    with chance at least MARGIN_LEVEL (Courant–Fischer on the design's fixed eigenvectors).
    The first margin is the normal quantile: its sd over 4,000 fixed-seed draws is about
    0.05, so within 0.15 of 2.326. 4,000 noisy copies of a design with close and far
    eigenvalues: each rank's failures are binomial(4000, ≤ 0.01), mean ≤ 40, sd 6.3; 70 is
    4.7 sds above."""
    assert pooled_gram.MARGIN_LEVEL == 0.99
    margins = pooled_gram._eigenvalue_margins(4)
    assert abs(margins[0] - 2.326) < 0.15 and np.all(np.diff(margins) > 0)
    rng = np.random.default_rng(7)
    sigma, design = 10.0, np.array([3.0, 30.0, 35.0, 500.0])
    rotation, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    gram = rotation @ np.diag(design) @ rotation.T
    released = np.linalg.eigvalsh(gram + _symmetric_noise(rng, sigma, 4, 4000))
    failures = (released - sigma * margins > design).sum(axis=0)
    assert (failures <= 70).all(), failures


def test_the_ridges_pull_bound_covers_a_direction_the_design_barely_determines() -> None:
    """The pilot of a released Gram matrix whose smallest design eigenvalue (7) is a sixth
    of its noise sd (46; the wage panel's ``exper + expersq`` at ε = 4, where the ridge
    shrinks that coordinate to nearly 0) and two exact Newton steps: the interval (the
    noise draws' 1.96 sds, their shift and the pull bound) covers the design's β in the few
    pilots released, those whose noise lifted the eigenvalue past its margin. Their
    coordinate along that direction is the noise's: a bound read from it alone (the gain
    times the coordinate, PULL_NOISE_SDS = 0) missed in 10 of 32. The gain times the noise
    makes the interval a 95 % one wherever the gain holds: misses binomial(~32, ≤ 0.05), mean
    ≤ 1.6, sd 1.2; 15 % of the released (4.8) is 2.6 sds above."""
    rng = np.random.default_rng(3)
    p, sigma, reps = 3, 46.3, 2000
    rotation, _ = np.linalg.qr(rng.normal(size=(p, p)))
    design = rotation @ np.diag([7.0, 350.0, 7400.0]) @ rotation.T
    truth = rotation @ np.array([-0.6, 0.2, -0.2])  # far along the barely determined direction
    augmented = np.zeros((p + 1, p + 1))
    augmented[:p, :p] = design
    augmented[:p, p] = augmented[p, :p] = design @ truth
    augmented[p, p] = truth @ design @ truth + 100.0
    kept = np.arange((p + 1) * (p + 2) // 2)
    released = missed = 0
    for noise in _symmetric_noise(rng, sigma, p + 1, reps):
        pilot = pooled_gram._Solution.of(augmented + noise, sigma, ())
        beta = pilot.beta
        for _ in range(2):
            beta = beta + np.linalg.solve(pilot.hessian, design @ (truth - beta))
        draws = pooled_release._noise_draws(pilot, beta, sigma, [1e-9, 1e-9], kept)
        pull = pilot.shrinkage_at(beta, 2, draws)
        if not np.isfinite(pull).all():
            continue
        released += 1
        half = 1.96 * np.max([d.std(axis=0) for d in draws], axis=0)
        half += np.abs(draws[0].mean(axis=0) - beta) + pull
        missed += bool((np.abs(beta - truth) > half).any())
    assert released >= 20 and missed <= 0.15 * released, (released, missed)


def test_no_direction_is_bounded_below_the_designs_smallest_eigenvalue() -> None:
    """Two close small design eigenvalues (150 and 160, about 3.3 noise sds; the RAND HIE plans
    model's rarest levels at ε = 2) and two exact Newton steps. Every direction's curvature
    is at least the design's smallest eigenvalue, whose bound is the first direction's
    (released eigenvalue less 2.33 sds): the second direction's own bound (less its wider
    margin, 2.9 sds) is never taken below it, so the first bound alone decides whether a
    fit is released. POWER: where both released eigenvalues fall between the two margins the
    second bound alone is at most 0 while the first is positive, and the fit was withheld
    ("unbounded"): about 1 % of pilots (the eigenvalues repel; 7 of these 1,000, at least 5
    required). The intervals cover as before (the interval's 95 %: misses binomial(~600,
    ≤ 0.05), mean ≤ 30, sd 5.3; 10 % of the released, 60, is 5.6 sds above)."""
    rng = np.random.default_rng(5)
    p, sigma, reps = 3, 46.3, 1000
    rotation, _ = np.linalg.qr(rng.normal(size=(p, p)))
    design = rotation @ np.diag([150.0, 160.0, 7400.0]) @ rotation.T
    truth = rotation @ np.array([0.5, -0.4, 0.2])
    augmented = np.zeros((p + 1, p + 1))
    augmented[:p, :p] = design
    augmented[:p, p] = augmented[p, :p] = design @ truth
    augmented[p, p] = truth @ design @ truth + 100.0
    kept = np.arange((p + 1) * (p + 2) // 2)
    margins = sigma * pooled_gram._eigenvalue_margins(p)
    released = rescued = missed = 0
    for noise in _symmetric_noise(rng, sigma, p + 1, reps):
        pilot = pooled_gram._Solution.of(augmented + noise, sigma, ())
        own = np.linalg.eigvalsh(pilot.hessian) - pilot.ridge - margins
        beta = pilot.beta
        for _ in range(2):
            beta = beta + np.linalg.solve(pilot.hessian, design @ (truth - beta))
        draws = pooled_release._noise_draws(pilot, beta, sigma, [1e-9, 1e-9], kept)
        pull = pilot.shrinkage_at(beta, 2, draws)
        assert np.isfinite(pull).all() == (own[0] > 0.0)  # the first bound decides
        if not np.isfinite(pull).all():
            continue
        released += 1
        rescued += bool((own <= 0.0).any())
        half = 1.96 * np.max([d.std(axis=0) for d in draws], axis=0)
        half += np.abs(draws[0].mean(axis=0) - beta) + pull
        missed += bool((np.abs(beta - truth) > half).any())
    assert released >= 500 and rescued >= 5, (released, rescued)
    assert missed <= 0.1 * released, (released, missed)


def test_a_declared_factor_gives_the_gram_matrix_its_larger_share() -> None:
    """Where the rows have structural zeros (a declared treatment-coded factor), whether every
    level is determined rests on the Gram matrix's diagonal (the levels' row counts): the
    plan, a function of the formula and the declared levels only, gives it FACTOR_SHARES'
    part of ρ; the same data without the factor get SHARES'. The fit spends what it plans."""
    from dplong.models.pooled.estimator import FACTOR_SHARES, SHARES

    panel, bounds = _panel(0), {"y": (-5, 10), "age": (0, 100)}
    levels = {"arm": ["control", "low", "high"]}
    factor = PooledOLS.from_formula(
        "y ~ C(arm) + age", panel, groups="id", bounds=bounds, levels=levels
    )
    plain = PooledOLS.from_formula("y ~ age", panel, groups="id", bounds=bounds)
    for model, shares in ((factor, FACTOR_SHARES), (plain, SHARES)):
        rho = np.asarray(model.release_plan(epsilon=1.0, delta=1e-6, max_rows=4).rho)
        np.testing.assert_allclose(rho / rho.sum(), shares, rtol=1e-12)
        res = model.fit(epsilon=1.0, delta=1e-6, max_rows=4, random_state=0)
        gram = next(e for e in res.privacy.entries if e.rho > 0.0)
        assert gram.rho == pytest.approx(rho[0])


def test_a_large_panel_is_not_biased_by_its_ranges() -> None:
    """From ``LARGE_N`` persons the clipping, not the noise, sets the error (its share of a
    coefficient is fixed, the SE falls like 1/√n): the ranges reach further and the Gram
    matrix's frame is the range (:func:`~dplong.privacy.ranges.reach_rungs`). Three normal
    regressors, one constant within persons, 40,000 persons of 2 rows, ε = 1, 8 fits: before,
    the constant one's estimate sat 2.5 of its bse high on average at 80,000 persons (1.55 in
    these 8 fits) and its intervals missed the truth in most fits there. Its mean error over
    the 8 fits is within 1.2 bse of 0 (the mean of 8 errors of sd at most 1 bse has sd 0.35:
    3.4 sds), and at least 30 of the 32 intervals hold the truth."""
    truth = np.array([1.0, 1.0, -1.0, 1.0])
    n, rows = 40_000, 2
    assert n >= ranges.LARGE_N and ranges.reach_rungs(n)[0] > ranges.REACH
    errors, covered = [], 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        size = n * rows
        panel = pd.DataFrame(
            {
                "id": np.repeat(np.arange(n), rows),
                "x1": rng.normal(size=size),
                "x2": rng.normal(size=size),
                "z": np.repeat(rng.normal(size=n), rows),
            }
        )
        effect = np.repeat(rng.normal(size=n), rows)
        panel["y"] = 1 + panel["x1"] - panel["x2"] + panel["z"] + effect + rng.normal(size=size)
        res = PooledOLS.from_formula("y ~ x1 + x2 + z", panel, groups="id").fit(
            epsilon=1.0, max_rows=rows, random_state=seed
        )
        errors.append((res.params.to_numpy() - truth) / res.bse.to_numpy())
        ci = res.conf_int().to_numpy()
        covered += int(((ci[:, 0] <= truth) & (truth <= ci[:, 1])).sum())
    assert np.all(np.abs(np.mean(errors, axis=0)) < 1.2), np.mean(errors, axis=0)
    assert covered >= 30


def test_a_large_panel_rung_clips_no_normal_tail() -> None:
    """From ``LARGE_N`` persons a rung ends a side's range only where at most the large-n
    reach's share of persons is beyond it (:func:`~dplong.privacy.ranges.rung_share`): over
    five rows a person 4.9 % of a normal regressor's persons lie beyond 2 median reaches,
    under the 5 % of n that let that rung end its range before, and pooled OLS on the
    clipped rows sat 1.84 bses off on average in these 5 fits at 80,000 persons (at 100,000,
    17 % of intervals held the truth). Now the mean error of the 5 fits is within 1.3 bse
    of 0 (the mean of 5 errors of sd about 1 has sd 0.45: 2.9 sds), and a
    0/1 regressor's rung still holds (nobody is beyond it): its range stays within [0, 2]."""
    n, rows = 80_000, 5
    assert n >= ranges.LARGE_N
    errors = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        size = n * rows
        x = rng.normal(size=size)
        flag = np.repeat((rng.random(n) < 0.4).astype(float), rows)
        effect = np.repeat(rng.normal(0.0, 0.5, n), rows)
        panel = pd.DataFrame({"id": np.repeat(np.arange(n), rows), "x": x, "flag": flag}).assign(
            y=1 + 0.5 * x + 0.5 * flag + effect + rng.normal(size=size)
        )
        res = PooledOLS.from_formula("y ~ x + flag", panel, groups="id").fit(
            epsilon=4.0, max_rows=rows, random_state=seed
        )
        errors.append((res.params["x"] - 0.5) / res.bse["x"])
        (line,) = [a for a in res.assumptions if a.startswith("ranges of the values")]
        low, high = (float(v) for v in line.split("flag in [")[1].split("]")[0].split(", "))
        assert low >= -1.0 and high <= 2.0, line
    assert abs(np.mean(errors)) < 1.3, errors


def test_a_rung_clips_no_normal_tail_below_large_n() -> None:
    """Below ``LARGE_N`` a rung ended a side's range where at most 5 % of n persons passed it:
    a normal regressor over 2-12 rows a person (19,000 persons) put 9.6 % of them beyond the
    2-reach rung, the range ended at 2.4 sds, and pooled OLS on the clipped rows sat 8.4
    clustered SEs steep with the noise off (at ε = 4 half the intervals missed pooled OLS
    unwarned; an audit). The large-n share now holds at every n (:func:`~dplong.privacy.ranges.
    rung_share`): with the noise off the slope is pooled OLS's to a tenth of its SE."""
    rng = np.random.default_rng(3002)
    n = 19_000
    rows = rng.integers(2, 13, n)
    person = np.repeat(np.arange(n), rows)
    x = 0.5 * rng.normal(size=n)[person] + rng.normal(size=rows.sum())
    y = 1.0 + 3.0 * x + rng.normal(size=n)[person] + rng.normal(size=rows.sum())
    panel = pd.DataFrame({"id": person, "x": x, "y": y})
    ols = smf.ols("y ~ x", panel).fit(cov_type="cluster", cov_kwds={"groups": panel["id"]})
    assert n < ranges.LARGE_N
    res = PooledOLS.from_formula("y ~ x", panel, groups="id").fit(
        epsilon=1e300, delta=0.5, max_rows=12, random_state=0
    )
    assert abs(res.params["x"] - ols.params["x"]) < 0.1 * ols.bse["x"]


def test_a_declared_level_with_no_rows_is_withheld_not_a_crash() -> None:
    """A declared level no row holds leaves X'X exactly singular with the noise off: the
    Newton steps' radius divided by its smallest eigenvalue (a bare ZeroDivisionError; an
    audit). It is floored at the doubles' resolution (``gram.NUMERIC_FLOOR``), and the
    direction the design leaves open withholds the coefficients, as at any ε."""
    rng = np.random.default_rng(0)
    rows = rng.integers(2, 6, 500)
    person = np.repeat(np.arange(500), rows)
    st = rng.integers(0, 2, rows.sum())
    x = rng.normal(size=rows.sum())
    panel = pd.DataFrame({"id": person, "x": x, "st": st, "y": 1 + 0.5 * x + 0.3 * st})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        for model in (dplong.PooledOLS, dplong.RandomEffects, dplong.BetweenOLS):
            res = model.from_formula("y ~ C(st, levels=[0, 1, 2]) + x", panel, groups="id").fit(
                epsilon=1e300, delta=0.5, random_state=0
            )
            assert set(res.withheld.index) == set(res.params.index)
            assert res.params.isna().all()


@pytest.mark.parametrize(("levels", "named"), [("[0, 1, 2]", "[T.2]"), ("[2, 0, 1]", "reference")])
def test_a_withheld_fit_names_the_declared_level_no_row_holds(levels: str, named: str) -> None:
    """3,000 persons hold levels 0 and 1 of a factor declared with 0, 1 and 2, ε = 2: every
    coefficient is withheld (the empty level's direction mixes into every coordinate through
    the noise), and the note names the level whose released row count (its diagonal entry of
    the released X'X) is within 2 noise sds of 0, the reference level where it is the empty
    one, as the remedy to try first. It no longer tells the analyst to narrow a public bound
    when none was given (a declared factor's indicators know their ranges from the formula).
    With every declared level held the same note names none."""
    rng = np.random.default_rng(0)
    n, rows = 3000, 4
    st = np.repeat(rng.integers(0, 2, n), rows)
    x = rng.normal(size=n * rows)
    panel = pd.DataFrame({"id": np.repeat(np.arange(n), rows), "st": st, "x": x})
    panel["y"] = 1 + 0.5 * x + 0.3 * st + rng.normal(size=n * rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = PooledOLS.from_formula(f"y ~ x + C(st, levels={levels})", panel, groups="id").fit(
            epsilon=2.0, max_rows=rows, random_state=0
        )
    assert res.params.isna().all()
    (note,) = [w for w in res.warnings if "withheld: the released X'X" in w]
    assert "drop from the declared levels" in note and named in note.split("drop from")[1]
    assert "narrow a public bound" not in note
    held = panel.assign(st=np.repeat(rng.integers(0, 3, n), rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = PooledOLS.from_formula(f"y ~ x + C(st, levels={levels})", held, groups="id").fit(
            epsilon=2.0, max_rows=rows, random_state=0
        )
    assert not any("drop from the declared levels" in w for w in res.warnings)


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_collinear_columns_are_noted_from_the_released_gram() -> None:
    """``x3 = x1 + x2`` up to a hundredth of their spread: at ε = 10⁹ the released X'X's noise
    no longer hides how nearly singular it is (at 10⁶ it was floored at its noise: at this
    n ε the Gram matrix's frame is the whole range, :func:`~dplong.privacy.ranges.reach_rungs`),
    so the fit is released with coefficients that rest on that hundredth (OLS's own SE of x3's
    is about 0.5 here). The note says so: the condition index of the released X'X's centred
    regressors is about 80 there; without x3 it is below 2, and no note (the threshold, 10,
    lies far between). With ``x3 = x1 + x2`` exactly nothing determines them and both fits
    withhold them (the ranges at this n ε hold every value, so no clip breaks the tie). Ages
    60-70 alone, far from 0 for their spread, are no dependence once centred: no note (an
    uncentred index of 43 had given one)."""
    rng = np.random.default_rng(0)
    n, rows = 2000, 5
    x1, x2 = rng.uniform(0.0, 1.0, (2, n * rows))
    hair = 0.01 * rng.normal(size=n * rows)
    panel = pd.DataFrame(
        {"id": np.repeat(np.arange(n), rows), "x1": x1, "x2": x2, "x3": x1 + x2 + hair}
    ).assign(y=1.0 + 0.5 * x1 - 0.3 * x2 + 0.5 * rng.normal(size=n * rows))
    exact = panel.assign(x3=x1 + x2)
    for model in (dplong.PanelOLS, dplong.PooledOLS):
        for data, formula, collinear in (
            (panel, "y ~ x1 + x2 + x3", True),
            (panel, "y ~ x1 + x2", False),
            (exact, "y ~ x1 + x2 + x3", None),
        ):
            res = model.from_formula(formula, data, groups="id").fit(
                epsilon=1e9, max_rows=rows, random_state=0
            )
            noted = [w for w in res.warnings if w.startswith("The released X'X is ill-conditioned")]
            if collinear is None:
                assert res.params.isna().all() and not noted
            else:
                assert np.isfinite(res.params).all() and bool(noted) is collinear, res.warnings
    aged = panel.assign(age=60.0 + 10.0 * x1)
    res = dplong.PooledOLS.from_formula("y ~ age", aged, groups="id").fit(
        epsilon=1e6, max_rows=rows, random_state=0
    )
    assert np.isfinite(res.params).all()
    assert not any("ill-conditioned" in w for w in res.warnings), res.warnings


def test_a_pooled_fit_whose_clipped_scores_go_unchecked_warns() -> None:
    """2,000 persons at ε = 1: the last step clips at the Cauchy–Schwarz radius, a sixth of
    these persons, and no skew check is affordable. Their skewed effects put the intercept
    about 3 bse low, its interval missing the truth in 92 of 99 fits (docs/accuracy.md): each
    fit must say so in its warnings, not only in an assumption line (the state is decided by
    released numbers, and at this n ε it is unchecked in every fit). Before this warning the
    fits carried none, so the test fails on that engine (a power check). Where the check runs
    (5,000 persons, normal effects: found symmetric) the fit does not warn of it."""
    for seed in range(6):
        res = dplong.PooledOLS.from_formula(
            "y ~ treated + x", _skewed_panel(seed, 2000, law="lognormal"), groups="id"
        ).fit(epsilon=1.0, random_state=seed)
        assert any("at their Cauchy–Schwarz radius" in w for w in res.warnings), seed
    res = dplong.PooledOLS.from_formula(
        "y ~ treated + x", _skewed_panel(0, 5000, law="normal"), groups="id"
    ).fit(epsilon=1.0, random_state=0)
    assert "skew check" in [e.stage for e in res.privacy.entries]
    assert not any("Cauchy–Schwarz" in w or "were skewed" in w for w in res.warnings)


def test_a_long_tailed_effect_beyond_the_cauchy_schwarz_radius_is_checked() -> None:
    """An audit's panel (:func:`correlated_effect_panel`: a lognormal person effect that x
    tracks, 3,000 persons of 2-10 rows, ε = 2): the last Newton step clips at the steps'
    radius, narrower than the Cauchy–Schwarz one by more than a sliver, so the meat's excess
    window reads what it clips out to that radius only, while 3-4 % of the persons' whitened
    scores lie beyond the step's radius by several radii, most on one side. No check ran
    there before: on these four seeds x sat 0.41-0.54 (4-5 SEs) below the same fit with the
    noise off, its interval missing with no warning (a power check: the test fails on that
    engine). Every last step is now checked where the check can see a pull: it fires, the
    step clips three times wider and the fit warns. The wider step leaves 0.18-0.35 of the
    pull (measured): within 0.4, below every error of the old engine's on these seeds."""
    for seed in (1, 2, 4, 7):
        model = PooledOLS.from_formula("y ~ x + treat", correlated_effect_panel(seed), groups="id")
        res = model.fit(epsilon=2.0, random_state=seed)
        assert "skew check" in [e.stage for e in res.privacy.entries], seed
        assert any("were skewed" in w for w in res.warnings), res.warnings
        off = model.fit(epsilon=1e9, random_state=seed)
        assert abs(res.params["x"] - off.params["x"]) < 0.4, seed


def test_a_range_missed_in_far_units_is_told_to_rescale() -> None:
    """The same panel with its outcome in units 1e12 times larger: the outcome's range found
    privately misses (the medians' grid is fine only within 2^±32 of 1), every coefficient is
    withheld, and the note says to rescale, beside public bounds and a larger ε (an audit
    found the advice missing; the fit is the same in units of 1)."""
    rng = np.random.default_rng(0)
    n, T = 600, 5
    frame = pd.DataFrame({"id": np.repeat(np.arange(n), T)})
    frame["x"] = rng.normal(0, 1, len(frame))
    frame["z"] = np.repeat(rng.integers(0, 2, n), T)
    effects = np.repeat(rng.normal(0, 1, n), T)
    frame["y"] = 1 + 0.5 * frame["x"] + frame["z"] + effects + rng.normal(0, 1, len(frame))
    for scale, released in ((1.0, True), (1e12, False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            res = dplong.PooledOLS.from_formula(
                "y ~ x + z", frame.assign(y=frame["y"] * scale), groups="id"
            ).fit(epsilon=2.0, random_state=0)
        assert bool(np.isfinite(res.params).all()) == released
        said = [w for w in res.warnings if "rescale a column" in w]
        assert bool(said) != released


def test_newton_steps_that_grow_withhold_the_fit() -> None:
    """A lognormal regressor (σ = 2, one value a person, 2,000 persons of 4 rows) at ε = 2:
    its core clips most of its variance, so the released X'X the Newton steps solve by is far
    from the design's along it, and in this fit each step overshoots by more than it corrects.
    The released step sums grow: every coefficient is withheld with the reason, none released
    as if it were a fixed point (the same panel's other five noise draws settle and are
    released, four with their range widened for the long tail)."""
    rng = np.random.default_rng(2)
    n, rows = 2000, 4
    x = np.repeat(np.exp(2.0 * rng.normal(size=n)), rows)
    y = 1.0 + x + np.repeat(rng.normal(size=n), rows) + rng.normal(size=n * rows)
    panel = pd.DataFrame({"id": np.repeat(np.arange(n), rows), "x": x, "y": y})
    model = PooledOLS.from_formula("y ~ x", panel, groups="id")
    grew = model.fit(epsilon=2.0, random_state=2)
    assert set(grew.withheld_why.values()) == {"steps grew"}
    assert grew.params.isna().all()
    assert any("Newton steps grew" in note for note in grew.warnings)
    settled = [model.fit(epsilon=2.0, random_state=seed) for seed in (0, 1, 3, 4, 5)]
    assert all(not fit.withheld_why for fit in settled)


def test_a_quadratic_in_age_settles_where_n_epsilon_widens_the_core() -> None:
    """RAND HIE's quadratic in age, `np.log1p(meddol) ~ xage + I(xage**2/100)`: the square's
    long upper side. With the core at two median reaches (as below ``n max(ε, 1) = LARGE_N``),
    the released X'X the Newton steps solve by was so far from the design's along the square
    that at ε = 8 the steps grew and withheld the fit in 4 of 6 seeds (seed 0 among them), and
    noise-free the fit held pooled OLS only because a tail count widened the range to 64. From
    ``n ε = LARGE_N`` the range reaches further and the core grows with n ε
    (:func:`~dplong.privacy.ranges.reach_rungs`): noise-free the fit is pooled OLS on the
    data (nothing is clipped), and at ε = 8 every fit settles and its intervals hold pooled
    OLS. Centred at 30, the same model converges noise-free too."""
    hie = dplong.datasets.load_randhie()
    formula = "np.log1p(meddol) ~ xage + I(xage**2/100)"
    model = PooledOLS.from_formula(formula, hie, groups="zper")
    assert 5912 < ranges.LARGE_N <= 5912 * 8.0
    ols = smf.ols(formula, hie).fit(cov_type="cluster", cov_kwds={"groups": hie["zper"]})
    noiseless = model.fit(epsilon=1e300, delta=0.5, random_state=0)
    # noise-free and unclipped, the steps' fixed point is pooled OLS to rounding
    assert ((noiseless.params - ols.params).abs() < 0.01 * ols.bse).all()
    for seed in (0, 1, 2):
        fit = model.fit(epsilon=8.0, random_state=seed)
        interval = fit.conf_int()
        assert ((interval.iloc[:, 0] <= ols.params) & (ols.params <= interval.iloc[:, 1])).all()
    formula = "np.log1p(meddol) ~ xage + I((xage - 30)**2/100)"
    centred = PooledOLS.from_formula(formula, hie, groups="zper").fit(
        epsilon=1e300, delta=0.5, random_state=0
    )
    ols = smf.ols(formula, hie).fit(cov_type="cluster", cov_kwds={"groups": hie["zper"]})
    assert ((centred.params - ols.params).abs() < ols.bse).all()
    assert not centred.withheld_why
