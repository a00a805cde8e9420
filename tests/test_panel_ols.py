"""PanelOLS: the within (fixed-effects) estimator from released per-person sufficient statistics
(dplong.models.pooled.within).

Reference against linearmodels (noise off), the per-person map the privacy argument rests on,
what the person effects absorb, the radius floor of the scores and the command line. The
releases themselves are PooledOLS's, audited in tests/test_pooled.py."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from skewed_panels import rare_switch_panel
from test_pooled import unclipped_meat  # noqa: F401  (a fixture)

import dplong
import dplong.models.pooled.release as pooled_release
import dplong.privacy.ranges as ranges
from dplong.exceptions import DplongWarning, FormulaError, InsufficientUsersError, ParameterError
from dplong.models.pooled.gram import _Solution


def _panel(seed: int, people: int = 400, years: int = 5, drop: float = 0.2) -> pd.DataFrame:
    """x varies within and between persons, z within only, ``sex`` never within; the person
    effects are correlated with x (pooled OLS is biased, the within estimator is not); a share
    ``drop`` of the rows is missing (unbalanced)."""
    rng = np.random.default_rng(seed)
    ids, t = np.repeat(np.arange(people), years), np.tile(np.arange(years), people)
    effect = rng.normal(size=people)
    x = np.repeat(effect, years) + rng.uniform(0, 1, ids.size)
    z = rng.uniform(0, 1, ids.size)
    sex = np.repeat(rng.integers(0, 2, people), years)
    y = 0.5 * x - 0.3 * z + 2.0 * np.repeat(effect, years) + rng.normal(0, 0.5, ids.size)
    panel = pd.DataFrame({"id": ids, "t": t, "x": x, "z": z, "sex": sex, "y": y})
    return panel[rng.uniform(size=ids.size) >= drop]


BOUNDS = {"y": (-20, 20), "x": (-6, 7), "z": (0, 1)}


@pytest.fixture
def capped_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges found far out, so that the public widths (the caps) are the ranges: every
    deviation inside (BOUNDS' widths hold them). The first rung stays the midpoint's cell,
    which tells a column that varies within persons from a constant one."""
    monkeypatch.setattr(ranges, "RUNGS", (0.0, 1e12))
    monkeypatch.setattr(ranges, "REACH", 1e12)


@pytest.mark.usefixtures("unclipped_meat", "capped_ranges")
def test_noise_off_matches_linearmodels_entity_effects() -> None:
    """linearmodels' PanelOLS with entity effects, clustered by entity. The coefficients agree
    to rounding; the standard errors are the same sandwich up to one scalar small-sample
    factor (dplong's n / (n - 1): the row count N is private; linearmodels' own factor), so
    their ratio is one number for every coefficient, within 2 / n of 1 (to 1e-6: the lattice
    rounds the meat to 2**-40 of its bound, which the fixture's radius makes ~1e12 times the
    small within residuals' meat)."""
    linearmodels = pytest.importorskip("linearmodels")
    panel = _panel(1)
    res = dplong.PanelOLS.from_formula("y ~ x + z", panel, groups="id", bounds=BOUNDS).fit(
        epsilon=1e300, delta=0.5, max_rows=5, random_state=0
    )
    indexed = panel.set_index(["id", "t"])
    fit = linearmodels.PanelOLS(indexed["y"], indexed[["x", "z"]], entity_effects=True).fit(
        cov_type="clustered", cluster_entity=True
    )
    np.testing.assert_allclose(res.params.to_numpy(), fit.params.to_numpy(), rtol=1e-8)
    ratio = res.sampling_sd.to_numpy() / fit.std_errors.to_numpy()
    assert np.ptp(ratio) < 1e-6 and 1.0 <= ratio[0] <= 1.0 + 2.0 / panel["id"].nunique()
    assert float(res.noise_sd.max()) < 1e-10
    assert list(res.params.index) == ["x", "z"] and str(res.model) == "PanelOLS"
    assert "deviations from each person's mean" in res.assumptions[0]
    # found privately (far out here) and cut to the public width, which bounds the deviations
    assert "x in [-13, 13] (found privately)" in res.assumptions[0]


def test_the_pooled_family_says_its_notes_on_the_screen_too() -> None:
    """A fit of the pooled family says each of its notes as a DplongWarning once, as the
    engine's models say theirs: the wage panel's `lwage ~ exper + expersq` within fit at
    ε = 4 withholds both coefficients (collinear within a man), and a script that printed the
    NaN params had heard nothing (an audit)."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.PanelOLS.from_formula("lwage ~ exper + expersq", wages, groups="nr")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = model.fit(epsilon=4.0, max_rows=8, random_state=0)
    said = [str(w.message) for w in caught if issubclass(w.category, DplongWarning)]
    assert res.params.isna().all() and res.warnings
    assert said == list(res.warnings)
    # RandomEffects says its own notes, not those of its pilot and quasi-demeaned stages
    model = dplong.RandomEffects.from_formula("lwage ~ exper + educ", wages, groups="nr")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = model.fit(epsilon=4.0, max_rows=8, random_state=0)
    said = [str(w.message) for w in caught if issubclass(w.category, DplongWarning)]
    assert res.warnings and said == list(res.warnings)


def test_a_factor_declared_between_by_its_column_absorbs_its_indicators() -> None:
    """``between=["ethn"]`` names a factor of the formula by its column: its indicators are
    absorbed, the same fit as naming them (an audit had to write ``C(ethn)[T.b]``); a name
    that is neither a regressor nor a factor's column is refused, as before."""
    wages = dplong.datasets.load_wage_panel().assign(
        ethn=lambda d: d["black"].map({0: "a", 1: "b"})
    )
    model = dplong.PanelOLS.from_formula(
        "lwage ~ exper + C(ethn)", wages, groups="nr", levels={"ethn": ["a", "b"]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        by_column = model.fit(epsilon=4.0, max_rows=8, between=["ethn"], random_state=0)
        by_name = model.fit(epsilon=4.0, max_rows=8, between=["C(ethn)[T.b]"], random_state=0)
    assert by_column.withheld.to_dict() == {"C(ethn)[T.b]": "absorbed"}
    pd.testing.assert_series_equal(by_column.params, by_name.params)
    with pytest.raises(ParameterError, match="nor factors of them"):
        model.fit(epsilon=4.0, max_rows=8, between=["eth"], random_state=0)


def test_public_bounds_cap_the_deviations_found_and_help_as_much_as_none() -> None:
    """A public range of width w bounds the deviations by ±w, far wider than their spread:
    as the frame it left the design within the Gram matrix's noise and every coefficient was
    withheld (n = 2000, d = 3, ε = 1: 0 of 20 released, 20 of 20 without bounds). It caps the
    range found privately instead: the same fit as without bounds where the cap holds the
    found range, and a range cut to the cap where it does not (z's width 0.2, where its
    deviations, uniform on [0, 1] less a person's mean, reach beyond ±0.5)."""
    panel = _panel(2, people=1500, years=6, drop=0.0)
    found = dplong.PanelOLS.from_formula("y ~ x + z", panel, groups="id").fit(
        epsilon=1.0, max_rows=6, random_state=3
    )
    bounded = dplong.PanelOLS.from_formula("y ~ x + z", panel, groups="id", bounds=BOUNDS).fit(
        epsilon=1.0, max_rows=6, random_state=3
    )
    pd.testing.assert_series_equal(found.params, bounded.params)
    assert np.isfinite(bounded.params).all()
    assert [e.stage for e in bounded.privacy.entries] == [e.stage for e in found.privacy.entries]
    tight = dplong.PanelOLS.from_formula(
        "y ~ x + z", panel, groups="id", bounds={"z": (0.4, 0.6)}
    ).fit(epsilon=1.0, max_rows=6, random_state=3)
    assert "z in [-0.2, 0.2] (found privately)" in tight.assumptions[0]


def test_each_persons_rows_depend_on_their_own_rows_only() -> None:
    """The privacy argument: demeaning is a map of each person's rows alone, so replacing one
    person changes only that person's rows of the data the releases see (a neighbouring data
    set of the same n), and the releases' user-level guarantee carries over."""
    panel = _panel(2, people=50)
    other = panel.copy()
    replaced = other["id"] == 7
    other.loc[replaced, ["x", "z", "y"]] = [[1e6, -3.0, 42.0]] * int(replaced.sum())
    first, second = (
        dplong.PanelOLS.from_formula("y ~ x + z", data, groups="id")._design
        for data in (panel, other)
    )
    moved = first.codes == 7
    assert np.array_equal(first.codes, second.codes)
    np.testing.assert_array_equal(first.X[~moved], second.X[~moved])
    np.testing.assert_array_equal(first.y[~moved], second.y[~moved])
    assert not np.array_equal(first.X[moved], second.X[moved])


def test_within_estimate_removes_the_person_effects_bias() -> None:
    """Given only ε on 3,000 persons: the within estimate is near the truth 0.5 where pooled
    OLS, which the correlated person effects bias by about +1.4, is not (its noise and
    sampling sds here are below 0.1: 4 sds cannot bridge the bias)."""
    panel = _panel(3, people=3000, drop=0.0)
    within = dplong.PanelOLS.from_formula("y ~ x + z", panel, groups="id").fit(
        epsilon=2.0, max_rows=5, random_state=1
    )
    pooled = dplong.PooledOLS.from_formula("y ~ x + z", panel, groups="id").fit(
        epsilon=2.0, max_rows=5, random_state=1
    )
    assert abs(within.params["x"] - 0.5) < 4.0 * within.bse["x"]
    assert within.privacy.epsilon <= 2.0
    assert pooled.params["x"] - 0.5 > 4.0 * pooled.bse["x"]


def test_an_undeclared_between_covariate_is_found_absorbed_in_either_order() -> None:
    """Undeclared, a covariate constant within persons is found so from released numbers: the
    first rung's counts of the ranges' stage cannot tell the persons off its deviations' cell
    (at 0) from none on either side. The fit leaves it to the person effects (no estimate,
    withheld as "absorbed", a note naming it), whatever the terms' order. The same counts
    cannot tell it from a covariate that changes for a few persons, whose omission biases the
    others (``test_a_covariate_switching_for_few_persons_withholds_the_others``), so the others
    are withheld too, "omitted regressor", the note naming ``between=``; declared, they are
    released (``test_a_declared_between_covariate_...``). ``grade`` = 0.1 + 0.1 sex is no
    dyadic fraction: its deviations from a person's mean are not all 0 in floating point
    (checked), so the demeaning starts from one of the person's own rows; z, which every
    person varies, is never absorbed (the power check)."""
    panel = _panel(4, people=2000)
    panel["grade"] = 0.1 + 0.1 * panel["sex"]
    naive = panel["grade"] - panel.groupby("id")["grade"].transform("mean")
    assert (naive != 0.0).any()  # the premise: a mean of copies of 0.1 is not 0.1
    for formula in ("y ~ x + grade + z", "y ~ grade + x + z"):
        for seed in range(4):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = dplong.PanelOLS.from_formula(formula, panel, groups="id").fit(
                    epsilon=2.0, max_rows=5, random_state=seed
                )
            assert res.withheld.to_dict() == {
                "x": "omitted regressor",
                "grade": "absorbed",
                "z": "omitted regressor",
            }
            assert list(res.params.index) == formula[4:].split(" + ")
            (note,) = [n for n in res.warnings if n.startswith("['grade'] absorbed by the person")]
            assert "Declare them between=[...]" in note
            assert res.privacy.epsilon <= 2.0
    with warnings.catch_warnings():  # nothing left to estimate: reported, not an error
        warnings.simplefilter("ignore")
        alone = dplong.PanelOLS.from_formula("y ~ grade", panel, groups="id").fit(
            epsilon=2.0, max_rows=5, random_state=0
        )
    assert alone.withheld.to_dict() == {"grade": "absorbed"} and alone.privacy.epsilon <= 2.0


def test_a_covariate_switching_for_few_persons_withholds_the_others() -> None:
    """``y ~ x + d``, 5,000 persons of four rows at ε = 2: ``d`` (slope 2) switches from 0 to 1
    once for 5 % of them, and ``x`` (slope 0) moves with it (``x = ... + 3 d``). The ranges'
    counts call a column varying for up to about 5 % of the persons nearly constant, and the
    parent commit absorbed ``d`` and released ``x`` with its omitted-variable bias: 16 of 30
    fits, every interval missing 0 (about 0.07 ± 0.03, an audit; non-private within, 29 of 30
    cover). Now ``x`` is withheld with it."""
    frame = rare_switch_panel(5000, 4)
    found = 0
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dplong.PanelOLS.from_formula("y ~ x + d", frame, groups="id").fit(
                epsilon=2.0, random_state=seed
            )
        if res.withheld_why.get("d") == "absorbed":
            found += 1
            assert res.withheld_why == {"x": "omitted regressor", "d": "absorbed"}
        elif np.isfinite(res.params["x"]):  # d kept in the design: x adjusted for it
            low, high = res.conf_int().loc["x"]
            assert low <= 0.0 <= high
    assert found  # the case the parent commit got wrong occurs among these seeds


def test_a_declared_between_covariate_is_absorbed_in_either_order() -> None:
    """``between=["sex"]`` (public): sex is left out of the releases and reported as absorbed
    with no estimate, in the formula's place; the rest are the fit of the formula without it,
    whatever the terms' order (the same releases, draw for draw), and nothing is spent finding
    its range."""
    panel = _panel(4, people=2000)
    fits = {
        formula: dplong.PanelOLS.from_formula(formula, panel, groups="id").fit(
            epsilon=2.0, max_rows=5, random_state=0, between=["sex"]
        )
        for formula in ("y ~ x + sex + z", "y ~ sex + x + z")
    }
    first, second = fits.values()
    assert list(first.params.index) == ["x", "sex", "z"]
    assert list(second.params.index) == ["sex", "x", "z"]
    pd.testing.assert_series_equal(first.params[["x", "z"]], second.params[["x", "z"]])
    without = dplong.PanelOLS.from_formula("y ~ x + z", panel, groups="id").fit(
        epsilon=2.0, max_rows=5, random_state=0
    )
    pd.testing.assert_series_equal(first.params[["x", "z"]], without.params)
    assert np.isfinite(first.params[["x", "z"]]).all() and math.isnan(first.params["sex"])
    assert first.withheld.to_dict() == {"sex": "absorbed"}
    assert "absorbed by the person effects, no estimate: sex" in first.assumptions[-1]
    assert not first.warnings and first.privacy.epsilon <= 2.0


def test_a_fit_withheld_for_a_covariate_found_varying_names_between_as_the_remedy() -> None:
    """The released counts find a covariate constant within persons with chance 0.977
    (``ranges.CONSTANT_SDS``); where they miss it (this seed, found once per about 60 fits
    of this panel), its column of zeros leaves the released X'X undetermined and every
    coefficient is withheld. The note names the remedy that needs no data: declaring it in
    ``between``, which releases the others (and is no remedy of a pooled fit)."""
    panel = _panel(4, people=2000)
    model = dplong.PanelOLS.from_formula("y ~ x + sex + z", panel, groups="id")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        missed = model.fit(epsilon=2.0, max_rows=5, random_state=25)
        declared = model.fit(epsilon=2.0, max_rows=5, random_state=25, between=["sex"])
    assert set(missed.withheld.to_dict().values()) == {"unbounded"}
    (note,) = [w for w in missed.warnings if "withheld" in w]
    assert "declare a covariate that never changes within a person in fit(between=[...])" in note
    assert declared.withheld.to_dict() == {"sex": "absorbed"}
    assert np.isfinite(declared.params[["x", "z"]]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pooled = dplong.PooledOLS.from_formula("y ~ x + sex + z", panel, groups="id").fit(
            epsilon=0.2, max_rows=5, random_state=0
        )
    assert set(pooled.withheld.to_dict().values()) == {"unbounded"}  # at this small n ε
    assert not any("between=" in w for w in pooled.warnings)


@pytest.mark.parametrize(
    ("model", "bounds", "remedy"),
    [
        (dplong.PanelOLS, None, False),
        (dplong.PanelOLS, BOUNDS, False),
        (dplong.PooledOLS, None, True),
    ],
)
def test_a_refusal_names_public_bounds_only_where_they_spare_the_ranges(
    model: type, bounds: dict | None, remedy: bool
) -> None:
    """n ε too small for the ranges: refused before any noise. Public bounds spare PooledOLS
    the stage (they are its frame), so its refusal names them; PanelOLS finds its deviations'
    ranges whatever the bounds (they only cap them), so its refusal does not, also where every
    column has one."""
    accountant = dplong.Accountant(epsilon=1.0)
    fitted = model.from_formula("y ~ x + z", _panel(1, people=300), groups="id", bounds=bounds)
    with pytest.raises(InsufficientUsersError, match="raise epsilon") as refused:
        fitted.fit(epsilon=0.05, max_rows=5, accountant=accountant)
    assert ("bounds={...}" in str(refused.value)) == remedy
    assert accountant.spent_epsilon == 0.0


@pytest.mark.parametrize(
    ("model", "between", "match", "options"),
    [
        (dplong.PooledOLS, "sex", "between= applies to PanelOLS", {}),
        (dplong.PooledOLS, "sex", "between= applies to PanelOLS", {"method": "ptr"}),
        (dplong.PanelOLS, ["age"], "not regressors of the within fit", {}),
        (dplong.PanelOLS, [3], "list of column names", {}),
    ],
)
def test_between_is_refused_before_any_noise(
    model: type, between: object, match: str, options: dict
) -> None:
    accountant = dplong.Accountant(epsilon=1.0, delta=1e-5)
    with pytest.raises(ParameterError, match=match):
        model.from_formula("y ~ x + sex", _panel(1), groups="id").fit(
            epsilon=1.0, between=between, accountant=accountant, **options
        )
    assert accountant.spent_epsilon == 0.0


@pytest.mark.parametrize(("formula", "between"), [("y ~ 1", None), ("y ~ x + sex", ["x", "sex"])])
def test_a_fit_with_no_regressor_left_is_refused_before_any_noise(
    formula: str, between: list[str] | None
) -> None:
    """The person effects absorb the intercept and every declared between column: nothing is
    left to estimate, a fact of the formula and the options. Refused (as
    ``LongitudinalOLS(estimator="within")`` refuses it) before any noise, and by the planner
    too; it used to spend the budget on ranges and release an empty or all-NaN table."""
    accountant = dplong.Accountant(epsilon=1.0, delta=1e-5)
    with pytest.raises(FormulaError, match="needs a regressor besides the intercept"):
        dplong.PanelOLS.from_formula(formula, _panel(1), groups="id").fit(
            epsilon=1.0, between=between, accountant=accountant
        )
    assert accountant.spent_epsilon == 0.0
    with pytest.raises(FormulaError, match="needs a regressor besides the intercept"):
        dplong.plan(formula, model="panel", n=400, epsilon=1.0, between=between)


def test_a_range_that_missed_withholds_every_coefficient_with_a_note() -> None:
    """A status that 85 % of persons never change (its deviations 0 but for the movers, as
    the wage panel's union membership): the median reach of a side, among its 7.5 % of movers
    against the cells tied beyond them all, lands out there (here the lower one, at about
    10^8), where the column is constant in its frame (before ZERO_WEIGHT was 0 it landed at
    the midpoint's cell and the range clipped every mover; before the far rung the slope was
    released at about 10^125, ε = 4 on the wage panel). Every coefficient is withheld, with
    the reason; the summary names the missed range with no numbers, so nothing absurd is
    printed; with a public range the column's range falls back on it."""
    rng = np.random.default_rng(8)
    people, years = 3000, 5
    ids = np.repeat(np.arange(people), years)
    x = rng.normal(size=ids.size)
    moves = np.repeat(rng.uniform(size=people) < 0.15, years)
    status = np.where(
        moves, rng.integers(0, 2, ids.size), np.repeat(rng.integers(0, 2, people), years)
    )
    y = (
        0.5 * x
        + 0.3 * status
        + np.repeat(rng.normal(size=people), years)
        + rng.normal(size=ids.size)
    )
    panel = pd.DataFrame({"id": ids, "x": x, "status": status, "y": y})
    res = dplong.PanelOLS.from_formula("y ~ x + status", panel, groups="id").fit(
        epsilon=4.0, max_rows=5, random_state=0
    )
    assert res.params.isna().all() and res.withheld.to_dict() == {
        "x": "range missed",
        "status": "range missed",
    }
    assert any("range found privately for ['status'] missed" in note for note in res.warnings)
    assert "e+" not in res.summary().as_text()
    assert "status: its range found privately missed its data" in res.assumptions[0]
    # with its public range the missed range falls back on the cap (±1: the range's width):
    # released, and the slope's interval holds the truth
    capped = dplong.PanelOLS.from_formula(
        "y ~ x + status", panel, groups="id", bounds={"status": (0, 1)}
    ).fit(epsilon=4.0, max_rows=5, random_state=0)
    assert np.isfinite(capped.params).all() and "status in [-1, 1]" in capped.assumptions[0]
    lower, upper = capped.conf_int().loc["status"]
    assert lower <= 0.3 <= upper


def test_the_scores_radius_is_floored_at_the_released_rss_noise() -> None:
    """A released RSS below its own noise (here negative) sizes the radius as RSS_FLOOR noise
    sds of it, ``σ (1 + ‖β‖²)``, not as 1: the Newton steps can still move the pilot."""
    p, sigma = 2, 50.0
    released = np.array([[400.0, 0.0, 0.0], [0.0, 300.0, 60.0], [0.0, 60.0, 5.0]])
    pilot = _Solution.of(released, sigma, ())
    beta = pilot.beta
    assert released[p, p] - 2 * beta @ released[:p, p] + beta @ released[:p, :p] @ beta < 0
    radius = pooled_release._clip_radius(released, pilot, beta, 5, 400.0, np.ones(p + 1))
    whitened = float(np.trace(pilot.whiten @ released[:p, :p] @ pilot.whiten)) / 400.0
    floor = pooled_release.RSS_FLOOR * sigma * (1.0 + beta @ beta) / 400.0
    assert radius == pytest.approx(5 * math.sqrt(pooled_release.CLIP_RADIUS * floor * whitened))


def test_ptr_is_refused_and_the_command_line_fits_panel(
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = dplong.PanelOLS.from_formula("y ~ x + z", _panel(5), groups="id", bounds=BOUNDS)
    with pytest.raises(ParameterError, match=r'PanelOLS has no method="ptr".*sufficient stat'):
        model.fit(epsilon=1.0, method="ptr", random_state=0)  # type: ignore[arg-type]
    from dplong.cli import main

    code = main(["fit", "dataset:wage_panel", "--model", "panel", "--formula",
                 "lwage ~ hours", "--groups", "nr", "--epsilon", "4",
                 "--max-rows", "8", "--seed", "0", "--quiet"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "PanelOLS results" in out and "Intercept" not in out


def test_the_planner_lists_the_regressors_only() -> None:
    """dplong.plan stops at the fit's checkpoint (public facts only): its table has the
    reported columns, not the internal row counter."""
    plan = dplong.plan("y ~ x0 + x1", model="panel", n=2000, epsilon=1.0, max_rows=8)
    assert plan.refusal is None
    assert [column for _, column in plan.table.index] == ["x0", "x1"]
