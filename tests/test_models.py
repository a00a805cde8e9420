"""Reference, leak and bad-input tests of the formula models (docs/design §5.2, §5.5; issue 3)."""

from __future__ import annotations

import math
import pickle
import struct
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import dplong
from dplong.dependence import AR1, RandomEffects
from dplong.exceptions import (
    ArgumentError,
    DataError,
    DplongWarning,
    FormulaError,
    InsufficientUsersError,
    ParameterError,
    PrivacyParameterError,
)
from dplong.models.mean import ColumnMean
from dplong.privacy.quantile import GRID, miss_probability

# ε = 1e300 makes every geometric draw exactly 0 and the histogram threshold 1/n: the release
# is then the exact (fixed-point) mean of the clipped statistics. A huge scale means no
# clipping, so the release equals the non-private estimator (docs/design §5.2).
NOISE_OFF = {"epsilon": 1e300, "delta": 0.5, "random_state": 0}


def panel(n: int = 60, t_range: tuple[int, int] = (6, 12), seed: int = 0) -> pd.DataFrame:
    """Unbalanced panel with regressors that vary within every user."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(t_range[0], t_range[1] + 1, size=n)
    user = np.repeat(np.arange(n), sizes)
    t = np.concatenate([np.arange(s) for s in sizes])
    x1 = rng.normal(size=len(user))
    x2 = t + rng.normal(size=len(user))
    y = 1.0 + 0.5 * x1 - 0.25 * x2 + rng.normal(size=n)[user] + rng.normal(size=len(user))
    frame = pd.DataFrame({"user": user, "t": t, "x1": x1, "x2": x2, "y": y})
    return frame.sample(frac=1.0, random_state=1).reset_index(drop=True)  # rows shuffled


def per_user_fits(df: pd.DataFrame, sigma: object = None) -> np.ndarray:
    """Average of per-user OLS (or GLS with the given working correlation) by statsmodels."""
    coefs = []
    for _, rows in df.sort_values(["user", "t"]).groupby("user"):
        X = sm.add_constant(rows[["x1", "x2"]].to_numpy())
        cov = None if sigma is None else sigma(len(rows))  # type: ignore[operator]
        coefs.append(sm.GLS(rows["y"].to_numpy(), X, sigma=cov).fit().params)
    return np.mean(coefs, axis=0)


class TestReference:
    def test_ols_equals_average_of_per_user_fits(self) -> None:
        df = panel()
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user", time="t")
        res = model.fit(scale=1e6, **NOISE_OFF)
        np.testing.assert_allclose(res.params.to_numpy(), per_user_fits(df), rtol=0, atol=1e-10)
        assert list(res.params.index) == ["Intercept", "x1", "x2"]
        assert res.nobs_users == 60
        # negligible noise (b ~ 1e-280): intervals fall back to the sampling law, no overflow
        half = (res.conf_int()["upper"] - res.params).to_numpy()
        np.testing.assert_allclose(half, 1.959963984540054 * res.sampling_sd.to_numpy())

    def test_ar1_weighted_equals_per_user_gls(self) -> None:
        df = panel(seed=1)
        phi = 0.6
        model = dplong.LongitudinalOLS.from_formula(
            "y ~ x1 + x2", df, groups="user", time="t", correlation="ar1", correlation_param=phi
        )
        res = model.fit(scale=1e6, **NOISE_OFF)
        expected = per_user_fits(df, lambda T: AR1(phi).covariance(T))
        np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=0, atol=1e-10)

    def test_exchangeable_weighted_equals_per_user_gls(self) -> None:
        df = panel(seed=2)
        r = 0.4
        model = dplong.LongitudinalOLS.from_formula(
            "y ~ x1 + x2", df, groups="user", correlation="exchangeable", correlation_param=r
        )
        res = model.fit(scale=1e6, **NOISE_OFF)
        exchangeable = dplong.dependence.Exchangeable(r)
        expected = per_user_fits(df, lambda T: exchangeable.covariance(T))
        np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=0, atol=1e-10)

    def test_location_equals_mean_of_user_means(self) -> None:
        df = panel(seed=3)
        model = dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user")
        res = model.fit(scale=1e6, within_scale=1e6, weights="equal", **NOISE_OFF)
        g = df.groupby("user")["y"]
        mu = g.mean().mean()
        assert res.params["Intercept"] == pytest.approx(mu, abs=1e-10)
        assert res.params["Scale"] == pytest.approx(g.var().mean(), abs=1e-9)
        between = ((g.mean() - mu) ** 2 - g.var() / g.count()).mean()
        assert res.params["Group Var"] == pytest.approx(max(between, 0.0), abs=1e-9)

    def test_missing_values_drop_rows_not_users(self) -> None:
        df = panel(seed=4)
        df.loc[df.index[:25], "x1"] = np.nan
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user", time="t")
        assert model.nobs_users == 60  # n is fixed before dropping rows
        res = model.fit(scale=1e6, **NOISE_OFF)
        expected = per_user_fits(df.dropna())
        np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=0, atol=1e-10)

    def test_unidentified_users_keep_n_and_are_left_out(self) -> None:
        df = panel(seed=5)
        few = df[df["user"] == 0].index[2:]  # user 0 keeps 2 rows < 3 parameters
        df = df.drop(few).reset_index(drop=True)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user").fit(
            scale=1e6, **NOISE_OFF
        )
        assert res.nobs_users == 60
        # the estimand is the mean over the 59 users who have a fit; with the noise off the
        # private count of them is exact
        assert res.users.tolist() == [59.0]
        np.testing.assert_allclose(
            res.params.to_numpy(), per_user_fits(df[df["user"] != 0]), rtol=0, atol=1e-10
        )

    def test_dependence_model_scale(self) -> None:
        df = panel(n=1000, seed=6)
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user")
        res = model.fit(epsilon=1.0, scale=AR1(0.5), min_rows=6, min_eigenvalue=0.5, random_state=0)
        expected = AR1(0.5).log_sobolev_constant(6) / (6 * 0.5)
        # the sampling law is that of a mean over the (privately counted) users with a fit
        np.testing.assert_allclose(res.sampling_sd**2 * res.users.iloc[0], expected)
        loc = dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user")
        res = loc.fit(epsilon=1.0, scale=RandomEffects(1.0, 1.0), min_rows=6, random_state=0)
        assert res.params.index.tolist() == ["Intercept", "Group Var", "Scale"]


class TestResults:
    def test_conf_int_contains_params_and_bse_combines(self) -> None:
        df = panel(n=400, seed=7)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user").fit(
            epsilon=2.0, scale=1.0, random_state=0
        )
        ci = res.conf_int(0.05)
        assert (ci["lower"] < res.params).all() and (res.params < ci["upper"]).all()
        np.testing.assert_allclose(res.bse**2, res.sampling_sd**2 + res.noise_sd**2)
        assert (res.conf_int(0.5)["upper"] < ci["upper"]).all()
        with pytest.raises(ParameterError, match="alpha"):
            res.conf_int(1.5)

    def test_summary_renders_in_three_formats(self) -> None:
        df = panel(n=1000, seed=8)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user").fit(
            epsilon=1.0, scale=1.0, random_state=0
        )
        s = res.summary()
        text, html, latex = s.as_text(), s.as_html(), s.as_latex()
        for out in (text, html, latex):
            assert "x1" in out and "Intercept" in out
        assert "<table" in html and "\\begin{tabular}" in latex
        assert s._repr_html_() == html and str(s) == text
        assert "Users (n):" in text and "1000" in text
        assert s.params.columns.tolist()[:2] == ["estimate", "std err"]

    @pytest.mark.parametrize(
        ("raw", "shown"), [((69.0,), "60"), ((-3.0,), "0"), ((58.0, 71.0), "58-60")]
    )
    def test_private_counts_shown_within_0_and_n(self, raw: tuple[float, ...], shown: str) -> None:
        """A private count beyond [0, n] is shown clamped (post-processing) in the summary and
        the report; the raw release stays in ``users``."""
        from dataclasses import replace

        from dplong.report import build_report

        df = panel(n=60, seed=8)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1", df, groups="user").fit(
            epsilon=10.0, scale=1.0, random_state=0
        )
        labels = ["users with a statistic"] if len(raw) == 1 else ["Intercept", "x1"]
        res = replace(res, users=pd.Series(raw, index=labels, name="users"))
        info = res.summary().info["value"]
        assert info["With a statistic:"].startswith(f"{shown} users (DP, sd")
        assert f"{shown} users (DP, sd" in build_report(res)
        assert res.users.tolist() == list(raw)
        weighted = replace(
            res, users=pd.Series(raw[:1], index=["users with a statistic (weighted)"])
        )
        shown_weighted = weighted.summary().info["value"]["Sum of weights:"]
        assert shown_weighted.startswith(f"{shown.split('-')[0]} (DP, sd")

    def test_results_are_immutable(self) -> None:
        df = panel(n=1000, seed=9)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user").fit(
            epsilon=1.0, scale=1.0, random_state=0
        )
        with pytest.raises(AttributeError):
            res.nobs_users = 3  # type: ignore[misc]

    def test_accountant_charged_once_per_fit(self) -> None:
        df = panel(n=300, seed=10)
        acct = dplong.Accountant(epsilon=1.5, delta=1e-4)
        loc = dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user")
        loc.fit(
            epsilon=1.0, delta=5e-5, scale=1.0, within_scale=1.0, accountant=acct, random_state=0
        )
        # the two releases (μ, then the components) are composed jointly and the second is
        # calibrated to what the first left: the fit spends its whole budget, never more
        assert acct.spent_epsilon == pytest.approx(1.0, abs=1e-9)
        assert acct.spent_epsilon <= 1.0 + 1e-12 and acct.spent_delta <= 5e-5 * (1 + 1e-12)
        with pytest.raises(dplong.exceptions.BudgetExceededError):
            loc.fit(epsilon=1.0, delta=5e-5, scale=1.0, within_scale=1.0, accountant=acct)


@pytest.fixture(scope="module")
def fitted() -> tuple[pd.DataFrame, list[object]]:
    rng = np.random.default_rng(11)
    n_users = 997
    sizes = rng.integers(5, 40, size=n_users)
    user = np.repeat(np.arange(n_users), sizes)
    assert len(user) not in (n_users,)
    df = pd.DataFrame(
        {
            "user": user,
            "x1": rng.normal(size=len(user)) + rng.normal(size=n_users)[user] * 0,
            "y": 1234.5 + rng.normal(size=len(user)) * 0.123456789,
        }
    )
    df["x1"] = df["x1"] + 0.000123456789 * np.arange(len(df))
    ols = dplong.LongitudinalOLS.from_formula("y ~ x1", df, groups="user").fit(
        epsilon=1.0, scale=[1.0, 1.0], random_state=0
    )
    loc = dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user").fit(
        epsilon=1.0, scale=0.01, within_scale=0.02, random_state=0
    )
    return df, [ols, loc]


class TestNoLeak:
    """Pickles, summaries and reprs hold only DP outputs and public facts (docs/design §1)."""

    def test_no_private_number_in_any_output(
        self, fitted: tuple[pd.DataFrame, list[object]]
    ) -> None:
        df, results = fitted
        n_rows = len(df)
        user_means = df.groupby("user")["y"].mean().to_numpy()
        private_floats = np.concatenate(
            [df["y"].to_numpy()[:300], df["x1"].to_numpy()[:300], user_means[:300]]
        )
        counts = df.groupby("user").size().to_numpy()
        for res in results:
            s = res.summary()  # type: ignore[attr-defined]
            texts = [s.as_text(), s.as_html(), s.as_latex(), repr(res), str(res.privacy)]  # type: ignore[attr-defined]
            blobs = [pickle.dumps(res), pickle.dumps(s)]
            for text in texts:
                assert str(n_rows) not in text  # the row count is private
                for v in private_floats[:50]:
                    assert repr(float(v)) not in text and f"{v:.8f}" not in text
            for blob in blobs:
                assert struct.pack("<q", n_rows) not in blob
                assert struct.pack("<d", float(n_rows)) not in blob
                for v in private_floats:
                    assert struct.pack("<d", float(v)) not in blob
            # no per-user array of length n or of row length is stored anywhere
            for value in vars(res).values():
                if isinstance(value, (pd.Series, pd.DataFrame, np.ndarray)):
                    assert len(value) not in (997, n_rows)
            assert not any(
                np.array_equal(counts, np.asarray(v))
                for v in vars(res).values()
                if isinstance(v, np.ndarray)
            )


class TestBadInput:
    df = panel(n=40, seed=12)

    def test_missing_column(self) -> None:
        with pytest.raises(FormulaError, match="nope"):
            dplong.LongitudinalOLS.from_formula("y ~ x1 + nope", self.df, groups="user")

    def test_missing_groups_column(self) -> None:
        with pytest.raises(FormulaError, match="groups='person'"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", self.df, groups="person")

    def test_groups_required(self) -> None:
        with pytest.raises(DataError, match="groups is required"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", self.df, groups=None)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("model", "formula", "groups"),
        [
            ("LongitudinalOLS", "y ~ x1", "y"),
            ("LongitudinalOLS", "np.log1p(np.abs(y)) ~ x1", "y"),
            ("PooledOLS", "y ~ x1", "x1"),
            ("RandomEffectsLocation", "y ~ 1", "y"),
            ("ColumnMean", "y ~ 1", "y"),
            ("ColumnMean", "np.abs(y) ~ 1", "y"),
        ],
    )
    def test_groups_naming_a_column_the_formula_reads(
        self, model: str, formula: str, groups: str
    ) -> None:
        # every value of an outcome or regressor taken for the ids would be a user of its own:
        # refused from the arguments, before the rows are grouped
        cls = ColumnMean if model == "ColumnMean" else getattr(dplong, model)
        with pytest.raises(DataError, match=f"groups='{groups}' is a column the formula reads"):
            cls.from_formula(formula, self.df, groups=groups)
        with pytest.raises(DataError, match=f"groups='{groups}' is a column the formula reads"):
            cls.from_formula(formula, self.df, groups=self.df[groups])  # the Series itself

    @pytest.mark.parametrize(
        ("call", "refusal"),
        [
            (
                lambda df: dplong.PooledOLS.from_formula("y ~ x1", df, group="user"),
                r"PooledOLS.from_formula\(\): got an unexpected keyword argument 'group' "
                r"\(did you mean 'groups' for 'group'\?\)",
            ),
            (
                lambda df: dplong.LongitudinalOLS.from_formula("y ~ x1", df, groups="user").fit(
                    epsilon=1.0, estimater="within"
                ),
                r"LongitudinalOLS.fit\(\): got an unexpected keyword argument 'estimater' "
                r"\(did you mean 'estimator' for 'estimater'\?\)",
            ),
            (
                lambda df: ColumnMean.from_formula("y ~ 1", df, groups="user").fit(epsilom=1.0),
                r"ColumnMean.fit\(\): got an unexpected keyword argument 'epsilom' "
                r"\(did you mean 'epsilon' for 'epsilom'\?\)",
            ),
            (
                lambda df: dplong.PooledOLS.from_formula("y ~ x1", df, "user"),
                r"too many positional arguments; options are keywords",
            ),
            (  # an inherited method is named by the class called
                lambda df: dplong.BetweenOLS.from_formula("y ~ x1", df, group="user"),
                r"BetweenOLS.from_formula\(\): got an unexpected keyword argument 'group'",
            ),
            (
                lambda df: dplong.PoissonMean.from_formula("y ~ 1", df, groups="user").fit(1.0),
                r"PoissonMean.fit\(\): too many positional arguments",
            ),
            (  # an option of the other call is named with the call that takes it
                lambda df: dplong.PooledOLS.from_formula("y ~ x1", df, groups="user").fit(
                    epsilon=1.0, bounds={"x1": (-5.0, 5.0)}
                ),
                r"PooledOLS.fit\(\): got an unexpected keyword argument 'bounds' \('bounds' is "
                r"an option of PooledOLS.from_formula\(\)\); it takes epsilon",
            ),
            (
                lambda df: dplong.LongitudinalOLS.from_formula(
                    "y ~ x1", df, groups="user", epsilon=1.0, grups="user"
                ),
                r"LongitudinalOLS.from_formula\(\): got an unexpected keyword argument 'epsilon', "
                r"'grups' \('epsilon' is an option of LongitudinalOLS.fit\(\)\) \(did you mean "
                r"'groups' for 'grups'\?\)",
            ),
            (
                lambda df: dplong.plan("y ~ x1", n=400, epsilom=1.0),
                r"plan\(\): missing a required argument: 'epsilon' \(did you mean 'epsilon' for "
                r"'epsilom'\?\)",
            ),
        ],
    )
    def test_arguments_that_do_not_fit_the_call(self, call: Any, refusal: str) -> None:
        # Python's own refusal of the call, from the package's hierarchy (and still a
        # TypeError), named by the function, a misspelt keyword with the nearest it takes
        with pytest.raises(ArgumentError, match=refusal) as caught:
            call(self.df)
        assert isinstance(caught.value, TypeError)

    def test_non_numeric_outcome(self) -> None:
        df = self.df.assign(label=np.where(self.df["y"] > 0, "hi", "lo"))
        with pytest.raises(DataError, match="outcome"):
            dplong.LongitudinalOLS.from_formula("label ~ x1", df, groups="user")

    def test_single_user(self) -> None:
        with pytest.raises(InsufficientUsersError, match="at least 2 users"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", self.df.assign(user=7), groups="user")

    def test_constant_within_users_is_not_refused_on_the_data(self) -> None:
        # whether a term varies within users is a fact about the rows: the fit proceeds, and
        # the private count of users with a fit (here none) tells the analyst
        df = panel(n=400, seed=12).assign(female=lambda d: (d["user"] % 2).astype(float))
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + female", df, groups="user")
        assert model.identified_users() == 0  # the non-private diagnostic knows
        with pytest.warns(dplong.exceptions.DplongWarning):
            res = model.fit(epsilon=2.0, random_state=0)
        # count sd ≈ √2/ε_count ≈ 14 at n = 400: a count of 0 users is indistinguishable from 0,
        # so no number is released and the results say why
        assert res.users.iloc[0] < 50
        assert res.params.isna().all()
        assert any("indistinguishable from zero" in w for w in res.warnings)

    def test_infinite_values_drop_their_rows(self) -> None:
        # whether a fit raises must not depend on one row: an infinite value is a missing one
        df = self.df.sort_values(["user", "t"], ignore_index=True)
        later = df.index[df["t"] == 2][:2]  # not a user's first row: the user codes stay
        df.loc[later[0], "x1"] = np.inf
        df.loc[later[1], "y"] = -np.inf
        model = dplong.LongitudinalOLS.from_formula("y ~ x1", df, groups="user")
        without = dplong.LongitudinalOLS.from_formula("y ~ x1", df.drop(later), groups="user")
        np.testing.assert_array_equal(model._design.X, without._design.X)
        np.testing.assert_array_equal(model._design.y, without._design.y)

    def test_missing_user_ids_drop_their_rows(self) -> None:
        # rows without an id belong to no user; n counts the distinct ids that are present
        df = self.df.astype({"user": float}).sort_values(["user", "t"], ignore_index=True)
        df.loc[5, "user"] = np.nan  # user 0 keeps its first row 0: the user codes stay
        model = dplong.LongitudinalOLS.from_formula("y ~ x1", df, groups="user")
        without = dplong.LongitudinalOLS.from_formula("y ~ x1", df.drop(5), groups="user")
        assert model.nobs_users == without.nobs_users == 40
        np.testing.assert_array_equal(model._design.codes, without._design.codes)
        np.testing.assert_array_equal(model._design.X, without._design.X)

    def test_not_a_dataframe(self) -> None:
        with pytest.raises(DataError, match="DataFrame"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", self.df.to_numpy(), groups="user")  # type: ignore[arg-type]

    def test_location_needs_intercept_only(self) -> None:
        with pytest.raises(FormulaError, match="y ~ 1"):
            dplong.RandomEffectsLocation.from_formula("y ~ x1", self.df, groups="user")

    def test_bad_options(self) -> None:
        with pytest.raises(ParameterError, match="correlation"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", self.df, groups="user", correlation="ar2")
        with pytest.raises(ParameterError, match="correlation_param"):
            dplong.LongitudinalOLS.from_formula(
                "y ~ x1", self.df, groups="user", correlation="ar1", correlation_param=1.0
            )
        model = dplong.LongitudinalOLS.from_formula("y ~ x1", self.df, groups="user")
        with pytest.raises(ParameterError, match="scale must be"):
            model.fit(epsilon=1.0, scale=None)  # type: ignore[arg-type]
        with pytest.raises(ParameterError, match="focus"):
            model.fit(epsilon=1.0, focus=["nope"])
        with pytest.raises(ParameterError, match="variant"):
            model.fit(epsilon=1.0, variant="improved")  # type: ignore[arg-type]
        with pytest.raises(ParameterError, match="min_rows"):
            model.fit(epsilon=1.0, scale=AR1(0.5))
        with pytest.raises(ParameterError, match="min_eigenvalue"):
            model.fit(epsilon=1.0, scale=AR1(0.5), min_rows=5)
        with pytest.raises(ParameterError, match="scale"):
            model.fit(epsilon=1.0, scale=[1.0, 2.0, 3.0])
        loc = dplong.RandomEffectsLocation.from_formula("y ~ 1", self.df, groups="user")
        with pytest.raises(ParameterError, match="within_scale"):
            loc.fit(epsilon=1.0, scale=1.0, within_scale=-1.0)
        with pytest.raises(ParameterError, match="variance_share"):
            loc.fit(epsilon=1.0, scale=1.0, variance_share=1.0)

    def test_re_groups_is_declared_not_read(self) -> None:
        """Users spread over several groups are not refused (that would depend on the rows):
        the grouping is a declared structure, named in the notes; a name that is no column of
        the schema is refused."""
        df = self.df.assign(litter=np.arange(len(self.df)) % 3)
        model = dplong.RandomEffectsLocation.from_formula(
            "y ~ 1", df, groups="user", re_groups="litter"
        )
        res = model.fit(epsilon=4.0, scale=1.0, variance_share=0.0, random_state=0)
        assert any("'litter'" in note for note in res.assumptions)
        with pytest.raises(DataError, match="re_groups names no column"):
            dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user", re_groups="sow")


class TestErrorBound:
    def test_terms_follow_their_formulas(self) -> None:
        import math

        df = panel(n=400, seed=13)
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user").fit(
            epsilon=3.0, scale=[2.0, 1.0, 0.5], random_state=0, gamma=0.02
        )
        report = res.error_bound(alpha=0.1)
        t = report.table
        assert res.noise_law == "laplace"
        np.testing.assert_allclose(t["privacy noise"], res.noise_scale * math.log(2 / 0.1))
        # Lemma 2.11 with the stated proxies over the private count of users with a fit
        users = res.users.iloc[0]
        np.testing.assert_allclose(
            t["statistical"], np.sqrt(2 * np.array([2.0, 1.0, 0.5]) / users * math.log(40))
        )
        np.testing.assert_allclose(t["bias"], res.bias)
        np.testing.assert_allclose(t["total"], t["privacy noise"] + t["statistical"] + t["bias"])
        # bad events: each centre of projection may miss its allowance with probability γ
        # (the midpoint, and the rough mean when refined), and the private median may miss the
        # users altogether: its public bound, for the private count N̂ of users
        centres = 2 if "refined" in res.variant else 1
        ledger = res.privacy.to_frame()
        midpoint_epsilon = ledger.loc[ledger["stage"] == "midpoint", "epsilon"].iloc[0]
        miss = miss_probability(len(GRID), midpoint_epsilon, int(users))
        assert 0 < miss < 1e-3  # n ε = 400 · 0.45 per column: a miss is all but impossible
        np.testing.assert_allclose(t["bad events"], 0.02 * centres + miss)
        np.testing.assert_allclose(t["probability"], 1 - 0.1 - t["bad events"])
        assert any("gamma=0.02" in a for a in report.assumptions)
        assert report.basis == "Theorem 4.2 via Corollary 5.16"
        assert "Assumptions" in str(report)

    def test_local_noise_term_is_chebyshev(self) -> None:
        import math

        df = panel(n=400, seed=14)
        res = dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user").fit(
            epsilon=2.0, scale=1.0, variance_share=0.0, privacy="local", bound=10.0, random_state=0
        )
        t = res.error_bound(alpha=0.05).table
        assert t.loc["Intercept", "privacy noise"] == pytest.approx(
            res.noise_sd["Intercept"] * math.sqrt(2 / 0.05)
        )


@pytest.mark.parametrize(
    ("fit", "said"),
    [
        ({"focus": ["Intercept"]}, "drop focus"),
        ({"refine": False}, "drop refine"),
        ({"max_rows": 5, "variance_share": 0.0}, "max_rows applies with precision weights"),
    ],
)
def test_options_the_local_model_would_ignore_are_refused(fit: dict[str, Any], said: str) -> None:
    """``focus``, ``refine=False`` and ``max_rows`` under ``privacy="local"`` changed nothing
    (the same release with and without them; an audit): refused, as the docs say of an
    option a call would ignore."""
    df = panel(n=400, seed=14)
    model = (
        dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user")
        if "max_rows" in fit
        else dplong.LongitudinalOLS.from_formula("y ~ 1", df, groups="user")
    )
    with pytest.raises(ParameterError, match=said):
        model.fit(epsilon=2.0, privacy="local", bound=10.0, **fit)


def test_local_components_need_their_ranges() -> None:
    """``bound=`` bounds the user means; the components' statistics are squared deviations and
    within variances, and the local release clipped their reports at it (Scale about 6 of 9,
    Group Var 2 of 4, half the fits unwarned; an audit). Without their Gaussian ranges
    (``scale=`` and ``within_scale=``) a local fit of them is refused before any noise, and
    the location alone runs."""
    df = panel(n=400, seed=14)
    model = dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user")
    rng = np.random.default_rng(0)
    drawn = rng.bit_generator.state
    with pytest.raises(ParameterError, match="state scale= and within_scale=, or fit"):
        model.fit(epsilon=2.0, privacy="local", bound=10.0, random_state=rng)
    assert rng.bit_generator.state == drawn  # refused before any noise
    alone = model.fit(epsilon=2.0, privacy="local", bound=10.0, variance_share=0.0)
    assert list(alone.params.index) == ["Intercept"]


def test_local_fit_whose_location_is_withheld_withholds_its_components() -> None:
    """Where the local release withholds the location (its count of users with a
    statistic cannot tell them from none: every y missing, or ε = 0.001), Group Var,
    centred on it, is withheld with its note, as in the central model, not a TypeError
    (the local release marks no failed midpoint: an audit's crash)."""
    df = panel(n=400, seed=14)
    for frame, epsilon in ((df.assign(y=np.nan), 1.0), (df, 0.001)):
        res = dplong.RandomEffectsLocation.from_formula("y ~ 1", frame, groups="user").fit(
            epsilon=epsilon,
            privacy="local",
            bound=10.0,
            scale=2.0,
            within_scale=1.0,
            random_state=1,
        )
        assert res.params.isna().all()
        assert any("centred on the first location released" in w for w in res.warnings)


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("epsilon", "1", PrivacyParameterError),
        ("epsilon", True, PrivacyParameterError),
        ("delta", "1e-6", PrivacyParameterError),
        ("gamma", "0.05", ParameterError),
        ("scale", True, ParameterError),
        ("scale", "2", ParameterError),
        ("random_state", -1, ParameterError),
        ("random_state", True, ParameterError),
    ],
)
def test_numbers_are_never_coerced(option: str, value: object, error: type) -> None:
    """A string or a bool where a number belongs is refused (never read as 1 or 1.0, so that a
    typo in a configuration cannot change a release), before any noise: the Generator passed
    as random_state is not advanced."""
    x = np.random.default_rng(0).normal(size=500)
    kwargs: dict[str, object] = {"epsilon": 1.0, "random_state": np.random.default_rng(1)}
    kwargs[option] = value
    before = np.random.default_rng(1).bit_generator.state
    with pytest.raises(error, match=option):
        dplong.winsorized_mean(x, **kwargs)  # type: ignore[arg-type]
    if option != "random_state":
        assert kwargs["random_state"].bit_generator.state == before  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: dplong.dependence.AR1("0.5"), "phi"),
        (lambda: dplong.dependence.AR1(0.5, variance="1"), "variance"),
        (lambda: dplong.dependence.Independent(True), "variance"),
        (lambda: dplong.dependence.Exchangeable("0.2"), "correlation"),
        (lambda: dplong.dependence.Toeplitz(["1", "0.5"]), "autocovariance"),
        (lambda: dplong.dependence.RandomEffects(1.0, 1.0, group_sizes=[2.5]), "group_sizes"),
        (lambda: dplong.datasets.descr("iris"), "unknown data set"),
    ],
)
def test_public_helpers_refuse_what_only_looks_right(make: Any, match: str) -> None:
    """Dependence models and data-set names: a package error naming the argument, not a
    numpy or Python one (and no string read as a number)."""
    with pytest.raises(ParameterError, match=match):
        make()


@pytest.mark.parametrize(
    "values",
    [
        pd.Series(pd.date_range("2020-01-01", periods=300)),
        pd.Series(pd.to_timedelta(np.arange(300), unit="D")),
        np.arange(300) + 1j,
        pd.Series(["a", "b", "c"] * 100),
    ],
    ids=["datetime", "timedelta", "complex", "text"],
)
def test_values_that_are_not_real_numbers_are_refused_by_dtype(values: Any) -> None:
    """Dates are not taken as nanoseconds nor text as codes: the dtype (public) decides."""
    with pytest.raises(DataError, match="not a real number"):
        dplong.winsorized_mean(values, epsilon=1.0)


def test_predict_refuses_what_is_not_a_point() -> None:
    res = dplong.PriestleyChao.from_formula(
        "y ~ x",
        pd.DataFrame({"x": np.arange(2000) / 2000, "y": np.zeros(2000)}),
        domain=(0, 1),
        bandwidth=0.1,
    ).fit(epsilon=1.0, error_sd=1.0, amplitude=1.0, random_state=0)
    for bad, match in (([], "x is empty"), (["0.5"], "x must be"), ("0.5", "x must be")):
        with pytest.raises(ParameterError, match=match):
            res.predict(bad)


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")  # the paper's variant
def test_group_var_bias_bound_holds_the_error_of_the_centre() -> None:
    """Group Var averages (ȳ_u - μ̂)² - s²_u/T_u: its mean is σ_U² + (μ̂ - μ)², so its bias
    bound holds the square of μ̂'s released error bound (at γ = 0.05). On the wage panel the
    paper's variant at ε = 2 (seed 0) puts μ̂ 42 away from the mean log wage; its Group Var of
    1527 then had an interval [1233, 1821] that excluded the data's 0.11."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr")
    res = model.fit(epsilon=2.0, weights="equal", random_state=0)
    mu_bound = res.error_bound(alpha=0.05).table.loc["Intercept", "total"]
    assert res.bias["Group Var"] >= mu_bound**2 > 0.0
    means = wages.groupby("nr")["lwage"]
    data_group_var = float(
        ((means.mean() - means.mean().mean()) ** 2 - means.var() / means.size()).mean()
    )
    paper = model.fit(epsilon=2.0, weights="equal", variant="theory", random_state=0)
    ci = paper.conf_int().loc["Group Var"]
    assert abs(paper.params["Intercept"] - wages["lwage"].mean()) > 10  # the premise
    assert ci["lower"] <= data_group_var <= ci["upper"]


def test_warnings_of_the_mechanisms_reach_the_results() -> None:
    """What the paper's scale plug-in warns of (public facts: n and each step's ε) reaches
    ``results.warnings`` and the summary, not only stderr — and is warned once."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr")
    with pytest.warns(dplong.exceptions.DplongWarning) as caught:
        res = model.fit(epsilon=2.0, variant="theory", random_state=0)
    unreliable = [w for w in res.warnings if w.startswith("the private scale will be unreliable")]
    assert unreliable and not res.reliable
    assert "the private scale will be unreliable" in res.summary().as_text()
    messages = [str(w.message) for w in caught]
    assert all(messages.count(m) == 1 for m in unreliable)


def test_group_var_sampling_sd_has_the_normal_effects_floor() -> None:
    """With estimated scales Group Var's sampling sd is read from the clipped statistics,
    whose χ²-like tail the interval cut: on the dietox pigs at ε = 16 it came out 3.5 where the
    bootstrap's sd is 7.4 (one resample's release 20.8 of its SEs off). The results floor it at
    the normal-effects sd of a variance estimate from the released components and the public
    rows bound, ``√(2/n) (Group Var + Scale/T)``; a stated scale's Gaussian bound is left as it
    is. The released second moment (bought for the components' assumed tails) lifts the sd
    above the floor in some draws; in this one the floor binds (6.2 against 3.0), so the test
    fails without it."""
    pigs = _pigs_size()
    model = dplong.RandomEffectsLocation.from_formula("Size ~ 1", pigs, groups="Pig")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimated = model.fit(epsilon=16.0, min_rows=11, random_state=4)
    group_var, scale = estimated.params[["Group Var", "Scale"]].clip(lower=0.0)
    floor = math.sqrt(2.0 / 72) * (group_var + scale / 11)
    assert estimated.sampling_sd["Group Var"] == pytest.approx(floor, rel=1e-12)
    assert floor > 4.0  # binding: the released sd was 3.0


def test_an_assumed_tail_buys_the_second_moment_at_any_n_epsilon() -> None:
    """A release whose tail model is an assumed kind (``AssumedTail``: the location's
    components, the within influence) buys its clipped values' second moment even below
    ``MOMENT_USERS`` of n ε, where no tail count checks the kind: the bulk's plug-in spread
    would size the sampling error of a tail it cannot see (public facts only).

    Behaviour: the wage panel's within-man variances ``s²_u`` of ``lwage`` (545 men, Scale of
    ``RandomEffectsLocation`` at ε = 2, its components at n ε of about 270 a column) are far
    heavier-tailed than their MAD-based σ̂ says: their sd over √n is 0.0103 where σ̂ / √n is
    about 0.0034, and 200 bootstrap resamples covered Scale in 0.81 (docs/accuracy.md). The
    clip cuts about 2 % of the men, keeping most of their spread, and the released moment is
    that spread plus noise (the larger of it and σ̂² is kept), so over 20 draws the median
    released sampling sd stays near 0.8 of the unclipped one; the plug-in's a third fails."""
    from dplong.privacy.budget import ReleasePlan
    from dplong.privacy.budget.stages import MOMENT_SHARE, MOMENT_USERS

    n, epsilon = 545, 0.5
    assert n * epsilon < MOMENT_USERS
    plain = ReleasePlan.make(n=n, d=1, epsilon=epsilon, delta=1e-6, stated_scale=False)
    assumed = ReleasePlan.make(
        n=n, d=1, epsilon=epsilon, delta=1e-6, stated_scale=False, assumed=True
    )
    assert plain.moment_share == 0.0 and assumed.moment_share == MOMENT_SHARE
    # the same rule where a stated scale and few users plan the stable histogram's midpoint
    tiny = {"n": 20, "d": 1, "epsilon": 8.0, "delta": 1e-3, "stated_scale": True}
    histogram = ReleasePlan.make(**tiny), ReleasePlan.make(**tiny, assumed=True)
    assert [p.midpoint_kind for p in histogram] == ["histogram", "histogram"]
    assert [p.moment_share for p in histogram] == [0.0, MOMENT_SHARE]

    wages = dplong.datasets.load_wage_panel()
    s2 = wages.groupby("nr")["lwage"].var(ddof=1).to_numpy()
    model = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        released = [
            model.fit(epsilon=2.0, random_state=seed).sampling_sd["Scale"] for seed in range(20)
        ]
    assert np.median(released) >= 0.6 * np.std(s2, ddof=1) / np.sqrt(s2.size)


def _pigs_size() -> pd.DataFrame:
    pigs = dplong.datasets.load_dietox()
    pigs["Size"] = pigs["Weight"] - 7.0 * (pigs["Time"] - 1)  # vignette 2's public standard
    return pigs


def test_location_warns_that_its_component_tails_are_unchecked() -> None:
    """The components' intervals assume tail models (χ²₁ for Group Var, exponential for
    Scale) that no count at their budget checks; the dietox pigs' are far heavier (issue 32:
    coverage 0.775 and 0.40 at ε = 16). The warning names both columns and is a public fact:
    said whenever the component scales are estimated, never when a scale is stated."""
    pigs = dplong.datasets.load_dietox()
    model = dplong.RandomEffectsLocation.from_formula("Weight ~ 1", pigs, groups="Pig")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimated = model.fit(epsilon=16.0, random_state=0)
        stated = model.fit(
            epsilon=16.0,
            scale=dplong.dependence.RandomEffects(group_variance=50.0, residual_variance=20.0),
            min_rows=11,
            random_state=0,
        )
    said = [w for w in estimated.warnings if "checked their chi-square" in w]
    assert len(said) == 1 and said[0].startswith("['Group Var', 'Scale']")
    assert not any("no count checked" in w for w in stated.warnings)


def test_a_precision_weighted_location_warns_what_its_results_say() -> None:
    """The preliminary equal-weight location's unchecked tail is superseded by the weighted
    location's own count (its results drop it), so it is not said on stderr either: an audit
    found the class's own example warning of ``'Intercept (preliminary)'``, a parameter never
    released, with ``res.warnings`` empty. Every warning a fit gives is in its results: at
    ε = 1 this fit says nothing (its preliminary's note was the only one), at ε = 0.3 the
    weighted location's and the components' unchecked tails, both in its results."""
    rng = np.random.default_rng(1)
    rows = rng.integers(1, 31, size=4000)
    user = np.repeat(np.arange(4000), rows)
    effect = rng.normal(0.0, 0.5, 4000)[user]
    data = pd.DataFrame({"user": user, "y": 2.0 + effect + rng.normal(0, 2, user.size)})
    model = dplong.RandomEffectsLocation.from_formula("y ~ 1", data, groups="user")
    for epsilon, warned in ((1.0, False), (0.3, True)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = model.fit(epsilon=epsilon, random_state=0)
        said = [str(w.message) for w in caught if issubclass(w.category, DplongWarning)]
        assert not any("(preliminary)" in w for w in said), said
        assert bool(said) is warned, said
        assert all(any(w in r or r in w for r in res.warnings) for w in said), (said, res.warnings)


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_the_components_unchecked_tails_ask_for_both_scales() -> None:
    """The variance components' scales are stated only by ``scale=`` with ``within_scale=`` (a
    stated ``scale`` alone leaves them estimated): their unchecked-tail warning asks for both
    (an audit found it asking for ``scale=`` alone), and the location's own asks for ``scale=``."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr")
    res = model.fit(epsilon=1.0, random_state=0)
    (components,) = [w for w in res.warnings if w.startswith("['Group Var', 'Scale']")]
    assert "state scale= with within_scale= if known" in components, components
    (location,) = [w for w in res.warnings if w.startswith("['Intercept']")]
    assert "within_scale" not in location and "state scale=" in location, location


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_the_location_components_state_the_errors_they_assume() -> None:
    """Group Var and Scale are the random-intercept model's variances only where a user's
    errors are uncorrelated: AR(1) errors of 0.7 at 2,000 users gave Scale 2.3 for σ² = 4 and
    Group Var 2.7 for 1 (as MixedLM's, an audit), and no line said what the components need.
    The assumption line names it, in both of the location's estimators (GLS and equal weights)."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr")
    for options in ({}, {"max_rows": 8}):
        res = model.fit(epsilon=2.0, random_state=0, **options)
        assert "(errors i.i.d. in a user)" in res.assumptions[0], res.assumptions


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_per_user_fit_with_a_between_covariate_says_why_no_user_has_one() -> None:
    """``y ~ t + female`` per user: ``female`` never changes within a user, so every user's
    own design is singular and no coefficient has an estimate at any ε. The notes said only
    "raise epsilon or use fewer columns" (an audit); they now say why and which estimators
    identify a between-person covariate. A panel whose users all have a fit has no such note."""
    rng = np.random.default_rng(0)
    n, rows = 1000, 5
    t = np.tile(np.arange(rows), n).astype(float)
    female = np.repeat(rng.integers(0, 2, n), rows).astype(float)
    panel = pd.DataFrame({"id": np.repeat(np.arange(n), rows), "t": t, "female": female}).assign(
        y=1.0 + 0.5 * female + 0.2 * t + rng.normal(size=n * rows)
    )
    for formula, singular in (("y ~ t + female", True), ("y ~ t", False)):
        res = dplong.LongitudinalOLS.from_formula(formula, panel, groups="id").fit(
            epsilon=4.0, random_state=0
        )
        said = any("fit dplong.PooledOLS or dplong.RandomEffects" in w for w in res.warnings)
        assert said is singular and bool(res.params.isna().all()) is singular, res.warnings


def test_every_documented_module_is_reached_from_import_dplong() -> None:
    """``import dplong`` then ``dplong.report.write_report(res, path)``, as the API page names
    it: the report module was not imported by the package, and a fresh interpreter raised
    AttributeError (an audit). Run in a subprocess: this test session imports it anyway."""
    import subprocess
    import sys

    code = (
        "import dplong; "
        "print(sorted(set(dplong.__all__) - set(dir(dplong))), dplong.report.write_report.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "write_report"]
