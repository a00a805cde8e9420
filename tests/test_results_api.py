"""The statsmodels/linearmodels-style results API (issue 33): covariance, tests, prediction,
degrees of freedom, aliases and the forest plot.

Reference tests (docs/design §5.2): with the noise switched off (ε = 1e300: every geometric draw
is exactly 0) and the scale estimated, the per-user estimator of ``FORMULA`` on
``panel(60, seed=1)`` clips no user, so its estimates are the per-user OLS coefficients'
means and its standard errors their sd (ddof 0) over √n. statsmodels reproduces that
estimator as OLS of the stacked per-user coefficients on one indicator per coefficient with
HC0 errors: the indicators are disjoint, so its covariance is diagonal with exactly those
variances — what dplong releases (the covariance between coefficients is not). Its
``t_test``/``wald_test`` (``use_t=False``) must then agree with dplong's to rounding.
"""

from __future__ import annotations

import dataclasses
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats
from test_models import NOISE_OFF, panel

import dplong
from dplong.exceptions import DataError, DataHolderWarning, DplongWarning, ParameterError
from dplong.results import ModelSpec

FORMULA = "y ~ x1 + x2 + I(x1 * x2)"


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return panel(60, seed=1)


@pytest.fixture(scope="module")
def model(data: pd.DataFrame) -> dplong.LongitudinalOLS:
    return dplong.LongitudinalOLS.from_formula(FORMULA, data, groups="user", time="t")


@pytest.fixture(scope="module")
def noiseless(model: dplong.LongitudinalOLS) -> dplong.RegressionResults:
    res = model.fit(epsilon=1e300, delta=0.5, random_state=0)
    assert isinstance(res, dplong.RegressionResults)
    return res


@pytest.fixture(scope="module")
def bounded(model: dplong.LongitudinalOLS) -> dplong.RegressionResults:
    """The noiseless fit under a stated fourth-moment bound, whose bias bound is positive for
    every parameter however far out the clip (the tail count's is 0 without noise where the
    second rung finds nobody beyond the clip)."""
    res = model.fit(
        epsilon=1e300, delta=0.5, random_state=0, tail=dplong.Moment(k=4, bound=[10.0] * 4)
    )
    assert isinstance(res, dplong.RegressionResults)
    return res


@pytest.fixture(scope="module")
def reference(data: pd.DataFrame) -> sm.regression.linear_model.RegressionResultsWrapper:
    """statsmodels' OLS of the stacked per-user coefficients on coefficient indicators (HC0)."""
    coefs = []
    for _, rows in data.sort_values(["user", "t"]).groupby("user"):
        design = smf.ols(FORMULA, rows).fit()
        coefs.append(design.params)
    stacked = pd.DataFrame(coefs)
    names = list(stacked.columns)
    n = len(stacked)
    indicators = pd.DataFrame(np.kron(np.eye(len(names)), np.ones((n, 1))), columns=names)
    return sm.OLS(stacked.to_numpy().T.ravel(), indicators).fit(cov_type="HC0", use_t=False)


def test_noiseless_fit_is_the_reference_estimator(
    noiseless: dplong.RegressionResults, reference: sm.regression.linear_model.RegressionResults
) -> None:
    # the premise of the comparisons below: same estimates, same variances, no noise
    np.testing.assert_allclose(noiseless.params, reference.params, rtol=0, atol=1e-10)
    np.testing.assert_allclose(noiseless.cov_params(), reference.cov_params(), rtol=1e-10)
    assert (noiseless.noise_sd == 0).all()


@pytest.mark.parametrize(
    "restriction",
    [
        "x1 = 0",
        "x1 + 2 * x2 = 0.3",
        ["x1 = 0", "x2 = -0.25", "Intercept - x1 = 1"],
        (np.array([[0.0, 1.0, -1.0, 0.0]]), np.array([0.5])),
        np.eye(4)[1:],
    ],
)
def test_t_test_matches_statsmodels(
    bounded: dplong.RegressionResults,
    reference: sm.regression.linear_model.RegressionResults,
    restriction: object,
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)  # combined rows: said, tested below
        ours = bounded.t_test(restriction)
    theirs = reference.t_test(restriction)
    for field in ("effect", "sd", "statistic"):
        np.testing.assert_allclose(
            np.ravel(getattr(ours, field)), np.ravel(getattr(theirs, field)), rtol=1e-10, atol=1e-14
        )
    # the clipping bias bound of each row (|R| times the parameters' bounds; under the stated
    # moment they are not 0, though small: the tolerance below sees them) given to the null:
    # statsmodels' p-value at
    # |z| less the bound in sds, its interval widened by the bound
    bias = ours.bias
    assert bias.shape == np.ravel(theirs.effect).shape and (bias > 0).all()
    z = np.maximum(np.abs(np.ravel(theirs.statistic)) - bias / np.ravel(theirs.sd), 0.0)
    # a p-value near 1e-26 moves by its statistic's rounding times the statistic squared,
    # relatively: the statistic pins it, and an absolute 1e-14 spares the far tail's digits
    np.testing.assert_allclose(np.ravel(ours.pvalue), 2 * stats.norm.sf(z), rtol=1e-10, atol=1e-14)
    widened = theirs.conf_int() + np.column_stack([-bias, bias])
    np.testing.assert_allclose(ours.conf_int(), widened, rtol=1e-10)


@pytest.mark.parametrize(
    "restriction", ["x1 = x2 = 0", ["x1 = 0.4", "x2 = 0"], "x1 + x2 = 1", np.eye(4)]
)
def test_wald_test_matches_statsmodels(
    noiseless: dplong.RegressionResults,
    reference: sm.regression.linear_model.RegressionResults,
    restriction: object,
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        ours = noiseless.wald_test(restriction)
    theirs = reference.wald_test(restriction, use_f=False, scalar=True)
    np.testing.assert_allclose(ours.statistic, theirs.statistic, rtol=1e-10)
    np.testing.assert_allclose(ours.pvalue, theirs.pvalue, rtol=1e-10, atol=1e-14)  # as above
    assert ours.df_denom == theirs.df_denom


@pytest.mark.parametrize(
    "restriction",
    ["x1 = x2 = 0", ["x1 = 0.4", "x2 = 0"], "x1 + x2 = 1", np.eye(4), ["x1 = 0", "2 * x1 = 0"]],
)
def test_f_test_matches_statsmodels(
    noiseless: dplong.RegressionResults,
    reference: sm.regression.linear_model.RegressionResults,
    restriction: object,
) -> None:
    # F = W / q on the same (diagonal: sampling + noise, here noise 0) covariance as the
    # reference's HC0 one; the last restriction repeats itself, and both reduce q to rank 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' rank warning; ours on combined rows
        ours = noiseless.f_test(restriction)
        theirs = reference.f_test(restriction)
        wald = noiseless.wald_test(restriction)
    np.testing.assert_allclose(ours.fvalue, theirs.fvalue, rtol=1e-10)
    assert ours.df_num == theirs.df_num
    # the denominator is the users (clusters) less the parameters, 60 - 4, where the stacked
    # reference has its 240 stacked rows less 4: the p-value is the F law's at (q, 56)
    assert ours.df_denom == noiseless.nobs - noiseless.params.size == 56
    assert ours.pvalue == pytest.approx(stats.f.sf(ours.fvalue, ours.df_num, 56), rel=1e-12)
    # by hand: the Wald statistic over the number of restrictions
    assert ours.fvalue == pytest.approx(wald.statistic / wald.df_denom, rel=1e-12)


def test_f_test_with_privacy_noise_uses_the_released_covariance(data: pd.DataFrame) -> None:
    model = dplong.LongitudinalOLS.from_formula(FORMULA, data, groups="user", time="t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = model.fit(epsilon=50.0, random_state=0)  # enough for 60 users, 4 columns
        test = res.f_test("x1 = x2 = 0")
    assert (res.noise_sd > 0).all()
    gap = res.params[["x1", "x2"]].to_numpy()
    variance = res.sampling_sd[["x1", "x2"]] ** 2 + res.noise_sd[["x1", "x2"]] ** 2
    assert test.fvalue == pytest.approx(float(np.sum(gap**2 / variance)) / 2, rel=1e-12)


def test_model_is_a_data_free_view_of_the_model(data: pd.DataFrame) -> None:
    model = dplong.LongitudinalOLS.from_formula(FORMULA, data, groups="user", time="t")
    res = model.fit(**NOISE_OFF)
    assert isinstance(res.model, ModelSpec) and res.model == model.spec
    assert res.model.model_class is dplong.LongitudinalOLS
    assert res.model.exog_names == tuple(model.exog_names) and res.model.nobs_users == 60
    assert str(res.model) == "LongitudinalOLS" and repr(res.model) == repr(model)
    # only public facts: strings, an int and a class (pickled by reference, not data)
    assert {type(v) for v in vars(res.model).values()} <= {str, int, tuple, type}
    back = pickle.loads(pickle.dumps(res))
    assert back.model == res.model and str(back.summary()) == str(res.summary())
    mean = dplong.winsorized_mean(data["y"], groups=data["user"], **NOISE_OFF)
    assert mean.model == ModelSpec("Mean", "mean of y", 60, ("y",))
    # the class the analyst called, not the per-level subclass PriestleyChao builds (an audit)
    pigs = dplong.datasets.load_dietox()
    for groups, options in (("Pig", {"bandwidth": 2.0}), (None, {})):
        curves = dplong.PriestleyChao.from_formula(
            "Weight ~ Time", pigs, groups=groups, domain=(1, 12), grid=5, **options
        )
        assert type(curves) is not dplong.PriestleyChao
        assert curves.spec.model_class is dplong.PriestleyChao, curves.spec


def test_predict_matches_statsmodels(
    data: pd.DataFrame, noiseless: dplong.RegressionResults
) -> None:
    # statsmodels' formula predict with the same (per-user mean) coefficients
    fitted = smf.ols(FORMULA, data).fit()
    same = sm.regression.linear_model.RegressionResults(fitted.model, noiseless.params.to_numpy())
    new = pd.DataFrame({"x1": [0.0, 1.5, -2.0, np.nan], "x2": [3.0, 0.5, 7.0, 1.0]})
    ours = noiseless.predict(new)
    expected = same.predict(new.iloc[:3])
    np.testing.assert_allclose(ours.iloc[:3], expected, rtol=1e-12)
    assert ours.index.equals(new.index) and np.isnan(ours.iloc[3])  # missing: NaN, kept
    matrix = np.column_stack(
        [np.ones(3), new["x1"][:3], new["x2"][:3], new["x1"][:3] * new["x2"][:3]]
    )
    np.testing.assert_allclose(noiseless.predict(matrix), expected, rtol=1e-12)


def test_predict_with_declared_levels_and_within() -> None:
    df = panel(300, seed=3).assign(site=lambda d: np.where(d["x1"] > 0, "b", "a"))
    model = dplong.LongitudinalOLS.from_formula(
        "y ~ x2 + site", df, groups="user", levels={"site": ["a", "b"]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = model.fit(epsilon=8.0, random_state=0)
        within = model.fit(epsilon=8.0, estimator="within", random_state=0)
    new = pd.DataFrame({"x2": [1.0, 2.0], "site": ["b", "a"]})
    b = res.params
    np.testing.assert_allclose(
        res.predict(new), [b["Intercept"] + b["x2"] + b["site[T.b]"], b["Intercept"] + 2 * b["x2"]]
    )
    w = within.params  # no intercept, no user effect: x'β
    np.testing.assert_allclose(within.predict(new), [w["x2"] + w["site[T.b]"], 2 * w["x2"]])
    with pytest.raises(ParameterError, match="site"):
        res.predict(new.assign(site=[2.0, 1.0]))  # numbers where text levels were declared
    # a level outside the declared ones: NaN, and the warning says so (it spoke of dropped rows)
    with pytest.warns(DataHolderWarning, match="their predictions are NaN") as told:
        odd = res.predict(new.assign(site=["b", "c"]))
    assert not any("dropped" in str(w.message) for w in told)
    assert np.isfinite(odd.iloc[0]) and np.isnan(odd.iloc[1])
    with pytest.raises(DataError, match=r"lack the column\(s\) \['site'\]") as err:
        res.predict(new.drop(columns="site"))  # it said the levels name a column not read
    assert "_dplong" not in str(err.value)
    # the levels are public and all the results keep of the design
    back = pickle.loads(pickle.dumps(res))
    assert back.levels == {"site": ("a", "b")}
    np.testing.assert_allclose(back.predict(new), res.predict(new))


def test_predict_refuses_what_it_cannot_read(noiseless: dplong.RegressionResults) -> None:
    with pytest.raises(ParameterError, match="exog"):
        noiseless.predict()
    with pytest.raises(DataError, match="4 columns"):
        noiseless.predict(np.ones((2, 3)))
    with pytest.raises(DataError, match="numeric"):
        noiseless.predict([["a", "b", "c", "d"]])
    # a column the formula reads that the rows lack is named, in the formula's words (it was
    # patsy's NameError on a formula with a placeholder outcome, "_dplong_outcome ~ ...")
    with pytest.raises(DataError, match=r"the rows lack the column\(s\) \['x2'\] that 'y ~") as err:
        noiseless.predict(pd.DataFrame({"x1": [1.0]}))
    assert "_dplong" not in str(err.value)


def test_combined_restrictions_say_the_covariance_is_not_released(
    noiseless: dplong.RegressionResults,
) -> None:
    with pytest.warns(DplongWarning, match=r"\['x1', 'x2'\] as uncorrelated"):
        noiseless.t_test("x1 + x2 = 0")
    with pytest.warns(DplongWarning, match="not released"):
        noiseless.wald_test("x1 = x2 = 0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one parameter per row: nothing to say
        noiseless.t_test(["x1 = 0", "x2 = 0"])
    cov = noiseless.cov_params()
    assert (cov.to_numpy()[~np.eye(4, dtype=bool)] == 0).all()


def test_get_prediction_is_the_rows_restrictions(bounded: dplong.RegressionResults) -> None:
    """Each predicted row is the restriction ``x'θ`` of ``t_test``: the same effect, standard
    error, bias bound and interval (a statsmodels-style frame); a combination of parameters
    whose covariance is not released is said, as ``t_test`` says it; a missing value gives
    NaN; no rows is refused by name."""
    new = pd.DataFrame({"x1": [0.5, -1.0, np.nan], "x2": [2.0, 0.0, 1.0]}, index=[7, 8, 9])
    with pytest.warns(DplongWarning, match="get_prediction treats the estimates .* uncorrelated"):
        prediction = bounded.get_prediction(new)
    rows = np.array([[1.0, 0.5, 2.0, 1.0], [1.0, -1.0, 0.0, -0.0]])
    with pytest.warns(DplongWarning, match="uncorrelated"):
        test = bounded.t_test(rows)
    frame = prediction.summary_frame(alpha=0.1)
    assert list(frame.index) == [7, 8, 9] and frame.loc[9].isna().all()
    np.testing.assert_allclose(frame["mean"].iloc[:2], test.effect, rtol=1e-12)
    np.testing.assert_allclose(frame["mean_se"].iloc[:2], test.sd, rtol=1e-12)
    np.testing.assert_allclose(frame["bias"].iloc[:2], test.bias, rtol=1e-12)
    assert (frame["bias"].iloc[:2] > 0).all()  # the stated moment bound's: given, not 0
    np.testing.assert_allclose(
        frame[["mean_ci_lower", "mean_ci_upper"]].iloc[:2], test.conf_int(0.1), rtol=1e-12
    )
    np.testing.assert_allclose(frame["mean"].iloc[:2], bounded.predict(new).iloc[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a row with a missing value combines nothing: no warning
        assert bounded.get_prediction(new.iloc[2:]).predicted_mean.isna().all()
    with pytest.raises(ParameterError, match="get_prediction needs exog"):
        bounded.get_prediction()
    with pytest.raises(DataError, match="4 columns"):
        bounded.get_prediction(np.ones((1, 3)))


def test_joint_tests_give_the_bias_bounds_to_the_null_as_a_box() -> None:
    """``allowed_wald``'s bounded least squares is the smallest Wald statistic over the box of
    bias shifts: checked against a fine grid over the box on a two-restriction problem with
    correlated estimates (the grid's minimum is at most 1 % above the solver's, and never
    below it by more than rounding), and 0 where the box holds the gap."""
    from dplong.results.restrictions import allowed_wald

    cov = np.array([[1.0, -0.8], [-0.8, 1.0]])
    coefs = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # the third parameter in both rows
    gap = np.array([2.5, 1.0])
    bias = np.array([0.5, 0.2, 0.3])
    statistic, allowed = allowed_wald(gap, cov, coefs, bias)
    assert statistic == pytest.approx(gap @ np.linalg.inv(cov) @ gap)
    axes = [np.linspace(-b, b, 41) for b in bias]
    shifts = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    gaps = gap - shifts @ coefs.T
    grid = np.einsum("ki,ij,kj->k", gaps, np.linalg.inv(cov), gaps)
    assert allowed <= grid.min() + 1e-9 and grid.min() <= allowed * 1.01
    assert allowed < statistic
    assert allowed_wald(gap, cov, coefs, np.array([3.0, 3.0, 0.0]))[1] == pytest.approx(0.0)


def test_bad_restrictions_are_refused(noiseless: dplong.RegressionResults) -> None:
    for bad in ("nope = 0", "x1 +", np.ones((1, 3)), 3.0):
        with pytest.raises(ParameterError, match="r_matrix"):
            noiseless.t_test(bad)


def test_withheld_parameters() -> None:
    # a time-invariant regressor declared so has no within estimate (undeclared, found from
    # released numbers, it withholds x1 too: test_within.py)
    df = panel(400, seed=0)
    df["z"] = df["user"] % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + z", df, groups="user").fit(
            estimator="within", between=["z"], **NOISE_OFF
        )
    assert np.isnan(res.params["z"])
    cov = res.cov_params()
    assert cov.loc["z"].isna().all() and cov["z"].isna().all() and cov.loc["x1", "x1"] > 0
    # the NaN row is said, naming the row and the parameter (an audit found it silent)
    with pytest.warns(DplongWarning, match=r"t_test row\(s\) \[1\] restrict withheld .*'z'"):
        test = res.t_test(["x1 = 0", "z = 0"])
    assert np.isfinite(test.statistic[0]) and np.isnan(test.statistic[1])
    # the withheld row is NaN throughout: no standard error of 0 beside no estimate
    assert np.isfinite(test.sd[0]) and np.isnan(test.sd[1]) and np.isnan(test.effect[1])
    (withheld_row,) = [row for row in str(test.summary()).splitlines() if row.startswith("c1")]
    assert withheld_row.split()[1:3] == ["nan", "nan"]  # coef and std err
    with pytest.raises(ParameterError, match="withheld"):
        res.wald_test("z = 0")
    assert np.isnan(res.predict([[1.0, 1.0]])[0])


def test_degrees_of_freedom_and_aliases(noiseless: dplong.RegressionResults) -> None:
    assert noiseless.nobs == noiseless.nobs_users == 60
    assert noiseless.df_model == 3 and noiseless.df_resid == 56
    assert noiseless.std_errors.equals(noiseless.bse)
    assert noiseless.tstats.equals(noiseless.tvalues)
    assert noiseless.cov.equals(noiseless.cov_params())


def test_forest_plot(noiseless: dplong.RegressionResults) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = noiseless.plot(alpha=0.1)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(noiseless.params.index)
    with pytest.raises(ParameterError, match="Axes"):
        noiseless.plot(ax="not an axes")


@pytest.mark.parametrize("cov_type", ["clustered", "cluster"])
@pytest.mark.parametrize("estimator", ["per-user", "within"])
def test_cov_type_names_the_default(cov_type: str, estimator: str) -> None:
    # linearmodels' and statsmodels' names of the person-clustered covariance: the default
    model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", panel(400), groups="user")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        default = model.fit(epsilon=8.0, estimator=estimator, random_state=1)
        named = model.fit(epsilon=8.0, estimator=estimator, cov_type=cov_type, random_state=1)
    pd.testing.assert_series_equal(named.params, default.params)
    pd.testing.assert_series_equal(named.bse, default.bse)


@pytest.fixture(scope="module")
def fits() -> dict[str, dplong.PanelResults]:
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + union", wages, groups="nr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        return {
            "per-user": model.fit(epsilon=4.0, random_state=0),
            "within": model.fit(epsilon=2.0, estimator="within", random_state=0),
            "mean": dplong.winsorized_mean(
                wages["lwage"], groups=wages["nr"], epsilon=1.0, random_state=0
            ),
        }


def test_compare_holds_its_inputs(fits: dict[str, dplong.PanelResults]) -> None:
    table = dplong.compare(fits, alpha=0.1)
    assert table.params.columns.tolist() == ["per-user", "within", "mean"]
    assert table.params.index.tolist() == ["Intercept", "exper", "union", "lwage"]
    for name, fit in fits.items():
        rows = fit.params.index
        pd.testing.assert_series_equal(table.params.loc[rows, name], fit.params, check_names=False)
        pd.testing.assert_series_equal(table.std_errors.loc[rows, name], fit.bse, check_names=False)
        ci = fit.conf_int(0.1)
        np.testing.assert_array_equal(table.lower.loc[rows, name], ci["lower"])
        np.testing.assert_array_equal(table.upper.loc[rows, name], ci["upper"])
        assert table.params.loc[table.params.index.difference(rows), name].isna().all()
        assert table.info.at["Epsilon spent", name] == f"{fit.privacy.epsilon:.4g}"
        assert table.info.at["Delta spent", name] == f"{fit.privacy.delta:.3g}"
        assert table.info.at["Users (n)", name] == fit.nobs_users == 545
        assert table.info.at["Formula", name] == fit.formula
    frame = table.to_frame()
    assert frame[("within", "estimate")].equals(table.params["within"])


def test_compare_renders_every_fit(fits: dict[str, dplong.PanelResults]) -> None:
    table = dplong.compare(fits)
    text = str(table)
    for name in fits:
        assert name in text and name in table.as_html() and name in table.as_latex()
    assert f"({fits['per-user'].bse['exper']:.4g})" in text
    withheld = fits["within"].params.isna()  # a withheld estimate says so
    assert ("withheld" in text) == bool(withheld.any())
    assert table.as_html() == table._repr_html_()
    shown = dplong.compare(list(fits.values()), intervals=True)
    assert shown.params.columns.tolist() == ["(1)", "(2)", "(3)"]
    lo, hi = fits["mean"].conf_int().iloc[0]
    assert f"[{lo:.4g}, {hi:.4g}]" in str(shown)


@pytest.mark.parametrize(
    ("bad", "match"),
    [({}, "at least one"), ({"a": 1.0}, "not dplong results"), (5, "mapping"), ("ab", "str")],
)
def test_compare_refuses(bad: object, match: str) -> None:
    # a string is no sequence of fits (it read as three "fits", '(1)' to '(3)': an audit)
    with pytest.raises(ParameterError, match=match):
        dplong.compare(bad)  # type: ignore[arg-type]


def test_compare_refuses_names_that_read_alike(fits: dict[str, dplong.PanelResults]) -> None:
    # 1 and "1" are one column: a fit was dropped with nothing said (an audit)
    with pytest.raises(ParameterError, match="read alike"):
        dplong.compare({1: fits["mean"], "1": fits["within"]})  # type: ignore[dict-item]


def test_compare_takes_fits_one_by_one(fits: dict[str, dplong.PanelResults]) -> None:
    one_by_one = dplong.compare(fits["per-user"], fits["within"], intervals=True)
    listed = dplong.compare([fits["per-user"], fits["within"]], intervals=True)
    assert one_by_one.params.columns.tolist() == ["(1)", "(2)"]
    assert str(one_by_one) == str(listed)
    assert dplong.compare(fits["mean"]).params.columns.tolist() == ["(1)"]
    with pytest.raises(ParameterError, match="one by one"):
        dplong.compare(fits, fits["mean"])  # type: ignore[arg-type]


def test_compare_as_csv(fits: dict[str, dplong.PanelResults]) -> None:
    import csv

    table = dplong.compare(fits)
    rows = list(csv.reader(table.as_csv().splitlines()))
    assert rows[0] == ["", *fits]
    exper = rows.index(next(row for row in rows if row[0] == "exper"))
    assert rows[exper][1] == f"{fits['per-user'].params['exper']:.4g}"
    assert rows[exper + 1][1] == f"({fits['per-user'].bse['exper']:.4g})"
    assert ["Users (n)", "545", "545", "545"] in rows
    assert rows[-1] == [table._note]


def test_compare_says_a_shared_formula_once(fits: dict[str, dplong.PanelResults]) -> None:
    shared = {name: fits[name] for name in ("per-user", "within")}
    table = dplong.compare(shared)
    text = str(table)
    assert text.count("lwage ~ exper + union") == 1 and "Every fit: lwage ~ exper + union" in text
    assert table.info.loc["Formula"].tolist() == ["lwage ~ exper + union"] * 2  # kept
    assert "Formula" in str(dplong.compare(fits))  # differing formulas: a row of the table
    assert max(len(line) for line in text.splitlines()) <= 100


def test_variance_components_have_no_wald_p_value() -> None:
    """A variance's support starts at 0 (``support_lower``), so 'parameter = 0' is the boundary
    of its parameter space, where the Wald z has no normal reference (Self & Liang 1987):
    no p-value, as statsmodels' MixedLM reports none for its variance components; the
    location keeps its p-value and every parameter its interval."""
    wages = dplong.datasets.load_wage_panel()
    res = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr").fit(
        epsilon=2.0, random_state=0
    )
    p = res.pvalues
    assert p[["Group Var", "Scale"]].isna().all()
    assert 0.0 <= p["Intercept"] <= 1.0
    assert res.conf_int().notna().all().all()


def test_a_declared_lower_end_stops_a_means_interval() -> None:
    """``lower=0`` declares that no user's value lies below 0 (each one below is clipped up):
    no mean of them does, so an interval reaching below 0 (RAND HIE's spending by coinsurance
    level: a level of 383 persons at ε = 1 had [-373, 557]) is cut there, covering as often,
    and 'mean = 0' is on the support's boundary, where the Wald z has no normal reference: no
    p-value, and the summary says why. The upper ends do not move (nor do the estimates, none
    of which is below 0 here). The clips reached 0 but their bias bounds are finite: both
    ends keep them (``downward_bias`` is for a bound nothing gives, a heavy variance's)."""
    hie = dplong.datasets.load_randhie()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = dplong.winsorized_mean(
            hie[["meddol", "coins"]],
            groups=hie["zper"],
            by="coins",
            levels=[0, 25, 50, 95, 100],
            by_constant=True,
            lower=0,
            epsilon=1.0,
            random_state=6,
        )
    assert set(res.support_lower.values()) == {0.0}
    assert res.downward_bias == frozenset()
    uncut = dataclasses.replace(res, support_lower={}).conf_int()
    ci = res.conf_int()
    assert (uncut["lower"] < 0).any()  # this seed has levels whose interval reaches below 0
    np.testing.assert_array_equal(ci["lower"], np.maximum(uncut["lower"], 0.0))
    np.testing.assert_array_equal(ci["upper"], uncut["upper"])
    assert res.pvalues.isna().all()
    assert "P (bias-adj.): none if support >= 0." in str(res.summary())
    assert any(
        line.startswith("Declared support (lower=): meddol >= 0;") for line in res.assumptions
    )


def test_user_values_below_a_declared_support_are_warned_and_shown_at_its_end() -> None:
    """User means near 1.5 (600 users, ε = 1) declared ``lower=`` 100 or 3: the interval moves
    up only as far as its reach (``projection.supported_centre``), so the released mean stays
    near 1.5 and its 95 % interval lies wholly below the end. The estimate is shown at the end
    (no mean of values at or above it lies below) with the interval above it, never reversed
    (an audit read [100, 2.47]), and a warning from those released numbers says the values
    do not keep to the declaration. Declared 0 under data whose mean is -1, the interval
    straddles 0: no warning, the estimate at 0 inside its interval."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(600), 5)
    shown = []
    for centre, end in ((1.5, 100.0), (1.5, 3.0), (-1.0, 0.0), (1.5, 0.0)):
        y = centre + np.repeat(rng.normal(0, 1, 600), 5) + rng.normal(0, 1, 3000)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dplong.winsorized_mean(
                y, groups=groups, epsilon=1.0, lower=end, random_state=0, names=["y"]
            )
        said = [w for w in res.warnings if "wholly below the declared lower end" in w]
        assert [str(w.message) for w in caught if "wholly below" in str(w.message)] == said
        low, high = res.conf_int().loc["y"]
        estimate = res.params["y"]
        assert end <= low <= estimate <= high
        shown.append((estimate, bool(said)))
    assert shown[0] == (100.0, True) and shown[1] == (3.0, True)
    assert shown[2] == (0.0, False)  # the interval straddled 0: clipped, not warned
    assert 1.0 < shown[3][0] < 2.0 and not shown[3][1]  # data on the support: untouched


def test_t_test_of_one_parameter_agrees_with_pvalues_and_conf_int() -> None:
    """The wage panel's per-man slopes at ε = 4: the heavy-tail rule's bias bound on `exper`
    is several of its standard errors (4-8 when an audit found this, 2.7 at this seed since
    the second rung's count anchors it too), so pvalues were 1 while t_test, without the
    bound, rejected at 0.001 (an audit found the two contradicting each other in 98 fits of
    100). With the bound given to the null the two agree: the same verdict, and intervals
    equal up to the normal law standing in for the exact noise law (within 1 % of the width
    here)."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula(
        "lwage ~ exper + expersq", wages, groups="nr", time="year"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = model.fit(epsilon=4.0, random_state=0)
    assert res.bias["exper"] > 2 * res.bse["exper"]
    test = res.t_test("exper = 0")
    assert test.bias[0] == res.bias["exper"]
    assert (float(test.pvalue) < 0.05) == (res.pvalues["exper"] < 0.05)
    # both say their p-value is not P>|z| of the z beside it (an audit read z = 6.8, P = 1)
    assert res.pvalues.name == "P (bias-adj.)"
    assert "P(adj)" in str(test.summary()) and "P>|z|" not in str(test.summary())
    ours, exact = test.conf_int()[0], res.conf_int().loc["exper"].to_numpy()
    assert np.abs(ours - exact).max() < 0.01 * (exact[1] - exact[0])
    # the joint tests give the bounds to the null too: one restriction is t_test's verdict
    wald, f = res.wald_test("exper = 0"), res.f_test("exper = 0")
    assert abs(float(wald.pvalue) - float(test.pvalue)) < 1e-9
    assert wald.allowed < wald.statistic and abs(float(f.fvalue) - wald.statistic) < 1e-9
    assert float(f.pvalue) > float(wald.pvalue) - 1e-3  # F(1, n - p): a little wider
    assert "after the bias bounds" in str(wald) and "P (bias-adj.)" in str(f)  # the p-value's name
    # statsmodels' frame of the test names its p-value as the table does, and its alpha is
    # checked as every other alpha (alpha=0 gave [-inf, inf], alpha=1 a width of 2 bias)
    assert "P(adj)" in test.summary_frame().columns
    for bad in (0, 1, True, float("nan"), "0.1"):
        with pytest.raises(ParameterError, match="alpha"):
            test.conf_int(bad)  # type: ignore[arg-type]
        with pytest.raises(ParameterError, match="alpha"):
            test.summary(alpha=bad)  # type: ignore[arg-type]


def test_a_within_fits_tests_and_refusals_say_what_they_concern() -> None:
    """The within fit's F test has the users less the slopes and the effects' constant as
    its denominator df, as ``df_resid`` says (it said one more); a joint test of a withheld
    parameter names that one only (it listed every withheld one), and a withheld
    parameter's error bound claims no probability (it printed 0.95 beside a NaN bound)."""
    df = panel(400, seed=0)
    df["z"], df["w"] = df["user"] % 2, df["user"] % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + z + w", df, groups="user").fit(
            estimator="within", between=["z", "w"], **NOISE_OFF
        )
    assert res.params[["z", "w"]].isna().all() and np.isfinite(res.params["x1"])
    assert res.f_test("x1 = 0").df_denom == res.df_resid == 400 - 3 - 1
    with pytest.raises(ParameterError, match=r"withheld parameters \['z'\] \(NaN"):
        res.wald_test("z = 0")
    bound = res.error_bound().table
    assert bound.loc[["z", "w"], "probability"].isna().all()
    assert bound.loc["x1", ["total", "probability"]].notna().all()


def test_a_results_methods_unknown_keyword_is_refused_by_name(
    noiseless: dplong.RegressionResults,
) -> None:
    """statsmodels' keywords that dplong's results methods do not take (``use_t``,
    ``cols``, ``xname``) raised Python's bare TypeError: now the package's ArgumentError,
    naming the method and what it takes."""
    from dplong.exceptions import ArgumentError

    calls = (
        (lambda: noiseless.t_test("x1 = 0", use_t=True), "t_test(): .* 'use_t'"),
        (lambda: noiseless.conf_int(alpha=0.1, cols=None), "conf_int(): .* it takes alpha"),
        (lambda: noiseless.summary(xname=["a"]), "summary(): .* 'xname'"),
        (lambda: noiseless.cov_params(column=[1]), "cov_params(): .* 'column'"),
    )
    for call, said in calls:
        with pytest.raises(ArgumentError, match=said.replace("(", r"\(").replace(")", r"\)")):
            call()  # type: ignore[call-arg]


def test_summaries_escape_what_html_and_latex_read_as_markup(
    noiseless: dplong.RegressionResults,
) -> None:
    """A formula's ``<`` opened an HTML tag in the summary's table, and a note's ``%`` (or
    ``_``) commented out or broke the LaTeX line it was on (an audit): both are escaped."""
    shown = dataclasses.replace(noiseless, formula="y ~ I(x1<x2)")
    assert (
        "I(x1&lt;x2)" in shown.summary().as_html() and "I(x1<x2)" not in shown.summary().as_html()
    )
    said = dataclasses.replace(noiseless, assumptions=("22% of max_rows^2 ~ a {note} & #1",))
    latex = said.summary().as_latex()
    assert r"22\% of max\_rows\textasciicircum{}2 \textasciitilde{} a \{note\} \& \#1" in latex
