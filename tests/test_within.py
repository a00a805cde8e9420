"""The private within (entity fixed-effects) estimator: ``LongitudinalOLS.fit(estimator="within")``.

Reference tests with the noise off against linearmodels' ``PanelOLS(entity_effects=True)`` and
against the textbook formulas computed here with numpy; the public-only refusals; the ledger;
statistical tests of the accuracy and of the reported uncertainty (docs/design §5.2-5.5).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from linearmodels import PanelOLS
from skewed_panels import rare_switch_panel

import dplong
from dplong.exceptions import FormulaError, ParameterError
from dplong.models import linear, release_blocks, within
from dplong.models.reduce import within_cross_products
from dplong.privacy.radius import AssumedTail
from dplong.results import PanelResults

# ε = 1e300 makes every noise draw exactly 0, and a stated scale of 1e8 gives radii of about
# 3e4, wider than any statistic here (|x| < 50): nothing is clipped, so the release is the
# exact (fixed-point) mean of the statistics and the fit the non-private estimator.
NOISE_OFF = {"epsilon": 1e300, "delta": 0.5, "scale": 1e8, "random_state": 0}


def unbalanced(n: int = 300, seed: int = 0, missing: float = 0.05) -> pd.DataFrame:
    """1 to 12 rows per user, user effects correlated with the regressors, AR(1) errors, a
    time-invariant column, some missing values; rows shuffled."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 13, size=n)
    user = np.repeat(np.arange(n), rows)
    t = np.concatenate([np.arange(r) for r in rows])
    effect = rng.normal(0.0, 1.0, n)
    x1 = 0.7 * effect[user] + rng.normal(0.0, 1.0, user.size)
    x2 = 0.3 * t + rng.normal(0.0, 1.0, user.size)
    e = rng.normal(0.0, 1.0, user.size)
    for i in np.flatnonzero(t > 0):  # AR(1) within users, in row order (a test helper)
        e[i] += 0.5 * e[i - 1]
    y = 1.0 + 2.0 * effect[user] + 0.5 * x1 - 0.25 * x2 + e
    frame = pd.DataFrame(
        {"user": user, "t": t, "x1": x1, "x2": x2, "z": rng.normal(size=n)[user], "y": y}
    )
    for column in ("x1", "y"):
        frame.loc[rng.random(len(frame)) < missing, column] = np.nan
    return frame.sample(frac=1.0, random_state=1).reset_index(drop=True)


def textbook(frame: pd.DataFrame, columns: list[str], cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The (capped) within estimator and its cluster-robust covariance, computed directly:
    ``β = (Σ ω_u A_u)⁻¹ Σ ω_u b_u`` with ``ω_u = min(1, (cap - 1)/(T_u - 1))`` and the sandwich
    ``(Σ ω A)⁻¹ (Σ ω² s s') (Σ ω A)⁻¹``, by a loop over users (independent of the package)."""
    data = frame.dropna(subset=[*columns, "y"])
    a_sum, b_sum, parts = 0.0, 0.0, []
    for _, rows in data.groupby("user"):
        if len(rows) < 2:
            continue
        x = rows[columns].to_numpy() - rows[columns].to_numpy().mean(axis=0)
        y = rows["y"].to_numpy() - rows["y"].mean()
        weight = min(1.0, (cap - 1) / (len(rows) - 1))
        a_sum = a_sum + weight * x.T @ x
        b_sum = b_sum + weight * x.T @ y
        parts.append((weight, x, y))
    beta = np.linalg.solve(a_sum, b_sum)
    meat = sum(w**2 * np.outer(x.T @ (y - x @ beta), x.T @ (y - x @ beta)) for w, x, y in parts)
    bread = np.linalg.inv(a_sum)
    return beta, bread @ meat @ bread


class TestReference:
    def test_equals_linearmodels_panel_ols_with_entity_effects(self) -> None:
        frame = unbalanced()
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user")
        res = model.fit(estimator="within", max_rows=12, **NOISE_OFF)
        panel = frame.dropna().set_index(["user", "t"]).sort_index()
        reference = PanelOLS(panel["y"], panel[["x1", "x2"]], entity_effects=True).fit()
        np.testing.assert_allclose(
            res.params.to_numpy(), reference.params.to_numpy(), rtol=1e-10, atol=0
        )
        assert list(res.params.index) == ["x1", "x2"]

    @pytest.mark.parametrize("cap", [12, 4])
    def test_standard_errors_are_the_cluster_robust_sandwich(self, cap: int) -> None:
        # Errors with a heavy tail (15 % of the rows with four times the sd): the sandwich is
        # then wider than the robust spread of the influence values, which the engine would
        # report instead were it larger. Noise off with the scale *estimated*: at ε = 1e300
        # every stage is exact and the radii are 30 spreads wide, so nothing is clipped and β̂
        # is exact. The standard errors come from the released second moment of the influence
        # values about the released centre c rather than their weighted mean ψ̄: Σ w²(ψ - c)²
        # exceeds Σ w²(ψ - ψ̄)² by 2(ψ̄ - c) Σ w²(ψ - ψ̄) + (ψ̄ - c)² Σ w², and |ψ̄ - c| is the
        # centring refinement's clipping error, thousandths of a spread here (0.5 % at most
        # over seeds 1-5), so 1 % holds them and fails a wrong weighting (the equal-weight
        # sandwich differs by 10-30 %, a missing Σw² factor by far more).
        frame = unbalanced(seed=1)
        rng = np.random.default_rng(1)
        frame["y"] += np.where(rng.random(len(frame)) < 0.15, 4.0, 0.0) * rng.normal(
            size=len(frame)
        )
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user")
        res = model.fit(estimator="within", max_rows=cap, epsilon=1e300, delta=0.5, random_state=0)
        beta, cov = textbook(frame, ["x1", "x2"], cap=cap)
        np.testing.assert_allclose(res.params.to_numpy(), beta, rtol=1e-10, atol=0)
        np.testing.assert_allclose(res.bse.to_numpy(), np.sqrt(np.diag(cov)), rtol=0.01)
        np.testing.assert_array_equal(res.noise_sd.to_numpy(), 0.0)
        if cap == 12:  # no user has more rows: linearmodels' clustered covariance, up to its
            # small-sample factor G/(G-1) (N-1)/(N-K), below 1 % for G ~ 280 users
            panel = frame.dropna().set_index(["user", "t"]).sort_index()
            clustered = PanelOLS(panel["y"], panel[["x1", "x2"]], entity_effects=True).fit(
                cov_type="clustered", cluster_entity=True
            )
            ratio = (clustered.std_errors / res.bse).to_numpy()
            assert np.all((ratio > 0.99) & (ratio < 1.02)), ratio

    def test_row_cap_weighs_long_users_as_cap_rows(self) -> None:
        frame = unbalanced(seed=2)
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user")
        res = model.fit(estimator="within", max_rows=4, **NOISE_OFF)
        beta, _ = textbook(frame, ["x1", "x2"], cap=4)
        np.testing.assert_allclose(res.params.to_numpy(), beta, rtol=1e-10, atol=0)

    def test_labels_follow_the_formula_only(self) -> None:
        frame = unbalanced(seed=3)
        with_intercept = dplong.LongitudinalOLS.from_formula("y ~ x1", frame, groups="user")
        without = dplong.LongitudinalOLS.from_formula("y ~ x1 - 1", frame, groups="user")
        a = with_intercept.fit(estimator="within", max_rows=12, **NOISE_OFF)
        b = without.fit(estimator="within", max_rows=12, **NOISE_OFF)
        assert list(a.params.index) == list(b.params.index) == ["x1"]
        # demeaning removes the intercept: the same estimate either way
        np.testing.assert_allclose(a.params.to_numpy(), b.params.to_numpy(), rtol=1e-12)

    def test_time_invariant_regressor_gets_no_estimate_the_others_do(self) -> None:
        frame = unbalanced(seed=4)
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + z + x2", frame, groups="user")
        # undeclared, with a stated scale nothing released shows z constant (no private
        # spread, no count of the users off 0): left out, a z that varied would bias x1 and
        # x2, so none is estimated, and the note names the declaration
        res = model.fit(estimator="within", max_rows=12, **NOISE_OFF)
        assert res.params.isna().all() and bool(res.failed["z"])
        assert any("z" in w and "within-user variation" in w for w in res.warnings)
        assert res.withheld_why == {
            "x1": "omitted regressor",
            "z": "no variation",
            "x2": "omitted regressor",
        }
        res = model.fit(estimator="within", max_rows=12, between=["z"], **NOISE_OFF)
        assert np.isnan(res.params["z"]) and bool(res.failed["z"])
        beta, _ = textbook(frame, ["x1", "x2"], cap=12)
        np.testing.assert_allclose(res.params[["x1", "x2"]].to_numpy(), beta, rtol=1e-10)

    @pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")  # its notes, below
    def test_time_invariant_regressor_private_fit_is_withheld_not_refused(self) -> None:
        rng = np.random.default_rng(5)
        n, t = 3000, 5
        user = np.repeat(np.arange(n), t)
        frame = pd.DataFrame(
            {"user": user, "x": rng.normal(size=n * t), "z": rng.normal(size=n)[user]}
        )
        frame["y"] = 0.5 * frame["x"] + frame["z"] + rng.normal(size=n * t)
        model = dplong.LongitudinalOLS.from_formula("y ~ x + z", frame, groups="user")
        res = model.fit(epsilon=2.0, estimator="within", random_state=0)
        # z's products are 0 for every user: the engine takes them as 0 and says what it
        # cannot see (a share of users off 0 below its count's reach) — which is also why x
        # is withheld: z might change for that share, and x would carry its omission's bias
        assert res.withheld_why == {"x": "omitted regressor", "z": "no variation"}
        assert any("Z'Z[z,z]" in w and "sees no others" in w for w in res.warnings)
        assert any(w.startswith("No estimate (NaN) for ['x'] either") for w in res.warnings)
        # declared, z is never released and x is
        res = model.fit(epsilon=2.0, estimator="within", between=["z"], random_state=0)
        assert np.isnan(res.params["z"]) and not np.isnan(res.params["x"])
        # 4.4 sd: the standard error includes the sampling error and the privacy noise
        assert abs(res.params["x"] - 0.5) < 4.4 * res.bse["x"]

    def test_square_of_an_associated_regressor_takes_the_chi_square_tail(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # x3 follows x1 (its released product with x1 is far beyond its noise), x2 follows
        # neither (its product is within 3 noise sds at ε = 4): only x3's square z'z, mostly
        # each user's deviation from x1, gets the chi-square tail; the first regressor's square
        # and x2's keep the exponential one, as do the cross products and the influence —
        # decided from the earlier rows' releases (the same tails in seeds 0-4)
        from dplong.models import release_blocks

        tails = []
        release = release_blocks.release_means

        def spy(matrix, **kwargs):  # type: ignore[no-untyped-def]
            tails.append(kwargs["rules"].tail)
            return release(matrix, **kwargs)

        monkeypatch.setattr(release_blocks, "release_means", spy)
        rng = np.random.default_rng(3)
        n, t = 3000, 6
        user = np.repeat(np.arange(n), t)
        x1 = 0.5 * rng.normal(size=n)[user] + rng.normal(size=n * t)
        x3 = x1 + 0.2 * rng.normal(size=n * t)
        frame = pd.DataFrame({"user": user, "x1": x1, "x2": rng.normal(size=n * t), "x3": x3})
        frame["y"] = (
            0.5 * x1 - 0.3 * frame["x2"] + rng.normal(size=n)[user] + rng.normal(size=n * t)
        )
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2 + x3", frame, groups="user")
        model.fit(estimator="within", epsilon=4.0, random_state=0)
        exponential = "exponential"
        assert tails == [
            (exponential,) * 4,  # Z'Z[x1,x1], Z'X[x1,x2], Z'X[x1,x3], Z'y[x1]
            (exponential,) * 3,  # Z'Z[x2,x2], Z'X[x2,x3], Z'y[x2]
            ("chi-square", exponential),  # Z'Z[x3,x3], Z'y[x3]
            # an early Newton step (n ε affords one within EARLY_CAP at p = 3): stated, the
            # last step corrects what it clips
            exponential,
            AssumedTail(exponential, signed=True),  # the last step: assumed, counted each side
        ]

    def test_nearly_collinear_regressor_is_estimated(self) -> None:
        # x3 = x1 + noise of a fifth of x1's sd: 96 % of x3's within variation is x1's, a
        # variance inflation factor of about 26. What separates them is released as its own
        # Z'Z[x3,x3] (a square: the chi-square tail sizes its radius), so with the scale
        # estimated and the noise off the fit is the whole textbook estimate, with no note.
        frame = unbalanced(seed=8, missing=0.0)
        frame["x3"] = frame["x1"] + 0.2 * np.random.default_rng(8).normal(size=len(frame))
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2 + x3", frame, groups="user")
        res = model.fit(estimator="within", max_rows=12, epsilon=1e300, delta=0.5, random_state=0)
        beta, _ = textbook(frame, ["x1", "x2", "x3"], cap=12)
        np.testing.assert_allclose(res.params.to_numpy(), beta, rtol=1e-10)
        assert not res.failed.any() and res.warnings == ()

    @staticmethod
    def first_row_changed(monkeypatch: pytest.MonkeyPatch, **change: object) -> PanelResults:
        """A noise-off within fit whose first design row's release is replaced in ``change``."""
        original = within.within_results

        def changed(releases, **kwargs):  # type: ignore[no-untyped-def]
            first = dataclasses.replace(releases[0], **change)
            return original((first, *releases[1:]), **kwargs)

        monkeypatch.setattr(linear, "within_results", changed)
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", unbalanced(), groups="user")
        return model.fit(estimator="within", max_rows=12, **NOISE_OFF)

    def test_a_withheld_design_row_withholds_every_coefficient(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # the engine withholds a release that missed the data (NaN); every later design row
        # and the step rest on it, so no coefficient may be solved for — and the note must
        # not claim the regressor has no within variation
        res = self.first_row_changed(monkeypatch, estimate=np.full(3, np.nan))
        assert res.params.isna().all() and res.failed.all()
        (note,) = [w for w in res.warnings if "a release of the design was withheld" in w]
        assert "fit dplong.PanelOLS" in note  # the route that needs no per-entry release
        assert not any("within-user variation" in w for w in res.warnings)

    def test_a_product_taken_as_zero_leaves_the_design_unsolved(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # the engine takes a column as 0 when most users are exactly 0 there and its count sees
        # none of the others (Release.unseen); x2 is in the basis, so a guess of 0 for its
        # product with x1 would make its estimate, and every later one, a guess too
        res = self.first_row_changed(monkeypatch, unseen=np.array([False, True, False]))
        assert res.params.isna().all() and res.failed.all()
        (note,) = [w for w in res.warnings if "change for too few users to see" in w]
        assert "fit dplong.PanelOLS" in note

    def test_within_cross_products_match_a_loop(self) -> None:
        frame = unbalanced(n=40, seed=6, missing=0.0).sort_values(["user", "t"])
        design = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2 - 1", frame, groups="user")
        d = design._design
        stats = within_cross_products(d.y, d.X, d.codes, d.n)
        for u, rows in frame.groupby("user"):
            x = rows[["x1", "x2"]].to_numpy() - rows[["x1", "x2"]].to_numpy().mean(axis=0)
            y = rows["y"].to_numpy() - rows["y"].mean()
            if len(rows) < 2:
                assert np.isnan(stats[u]).all()
                continue
            expected = np.r_[x[:, 0] @ x[:, 0], x[:, 0] @ x[:, 1], x[:, 1] @ x[:, 1], x.T @ y]
            np.testing.assert_allclose(stats[u], expected, rtol=1e-12, atol=1e-12)

    def test_a_regressor_constant_within_a_user_has_products_of_exactly_zero(self) -> None:
        # (0.1 + 0.1 + 0.1) / 3 is 1.4e-17 above 0.1: demeaned, the constant column kept that
        # rounding in every row, and its products were off 0 for the engine's count
        X = np.array([[0.1, 1.0], [0.1, 2.0], [0.1, 4.0], [3.0, 1.0], [3.0, 1.5]])
        y = np.array([1.0, 2.0, 4.0, 0.3, 0.3])
        stats = within_cross_products(y, X, np.array([0, 0, 0, 1, 1]), 2)
        # columns: x0'x0, x0'x1, x1'x1, x0'y, x1'y
        assert (stats[:, [0, 1, 3]] == 0.0).all()
        assert stats[1, 4] == 0.0  # y constant for user 1 too
        np.testing.assert_allclose(stats[0, [2, 4]], [14.0 / 3.0, 14.0 / 3.0])


@pytest.fixture(scope="module")
def model() -> dplong.LongitudinalOLS:
    return dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", unbalanced(), groups="user")


def geometric_panel(seed: int, follow: float, noise: float) -> pd.DataFrame:
    """5000 users with 1 + Geometric(mean 5) rows (capped at 50), x1 correlated with the user
    effect and ``x2 = follow x1 + noise N(0, 1)``."""
    rng = np.random.default_rng(seed)
    n = 5000
    rows = np.minimum(rng.geometric(1.0 / 6.0, n), 50)
    user = np.repeat(np.arange(n), rows)
    effect = rng.normal(0.0, 1.0, n)
    x1 = 0.5 * effect[user] + rng.normal(size=user.size)
    x2 = follow * x1 + noise * rng.normal(size=user.size)
    y = 1.0 + effect[user] + 0.5 * x1 - 0.3 * x2 + rng.normal(size=user.size)
    return pd.DataFrame({"user": user, "x1": x1, "x2": x2, "y": y})


@pytest.fixture(scope="module")
def panel() -> pd.DataFrame:
    """Two mildly correlated regressors (:func:`geometric_panel`)."""
    return geometric_panel(7, 0.3, 1.0)


class TestPublicRefusals:
    """Every refusal is decided from the options and the formula, before any noise."""

    @pytest.mark.parametrize(
        ("options", "match"),
        [
            ({"estimator": "fixed"}, "estimator must be one of"),
            ({"estimator": "within", "privacy": "local", "bound": 1.0}, 'privacy="central"'),
            ({"estimator": "within", "variant": "theory"}, 'variant="default"'),
            ({"estimator": "within", "focus": ["x1"]}, "focus=None"),
            ({"estimator": "within", "scale": [1.0, 2.0]}, "one positive number"),
            ({"estimator": "within", "scale": -1.0}, "positive"),
            ({"estimator": "within", "max_rows": 1}, "max_rows"),
            ({"estimator": "within", "max_rows": 2.5}, "max_rows"),
        ],
    )
    def test_bad_options(
        self, model: dplong.LongitudinalOLS, options: dict[str, object], match: str
    ) -> None:
        with pytest.raises(ParameterError, match=match):
            model.fit(epsilon=1.0, random_state=0, **options)  # type: ignore[arg-type]

    def test_working_correlation_is_refused(self) -> None:
        model = dplong.LongitudinalOLS.from_formula(
            "y ~ x1",
            unbalanced(),
            groups="user",
            time="t",
            correlation="ar1",
            correlation_param=0.5,
        )
        with pytest.raises(ParameterError, match="independence"):
            model.fit(epsilon=1.0, estimator="within")

    def test_intercept_only_formula_is_refused(self) -> None:
        model = dplong.LongitudinalOLS.from_formula("y ~ 1", unbalanced(), groups="user")
        with pytest.raises(FormulaError, match="regressor besides the intercept"):
            model.fit(epsilon=1.0, estimator="within")

    def test_accountant_refuses_before_noise_and_is_charged_the_fit(self) -> None:
        model = dplong.LongitudinalOLS.from_formula("y ~ x1", unbalanced(n=3000), groups="user")
        accountant = dplong.Accountant(epsilon=1.5, delta=1e-6)
        res = model.fit(
            epsilon=1.0, delta=5e-7, estimator="within", accountant=accountant, random_state=0
        )
        assert res.privacy.epsilon <= 1.0 + 1e-12 and res.privacy.delta <= 5e-7
        with pytest.raises(dplong.exceptions.BudgetExceededError):
            model.fit(epsilon=1.0, delta=5e-7, estimator="within", accountant=accountant)


class TestPrivateFit:
    def test_ledger_results_and_accuracy(self, panel: pd.DataFrame) -> None:
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", panel, groups="user")
        reference = model.fit(estimator="within", **NOISE_OFF)
        # seed 1 draws the far miss of test_correlated_regressors_are_resolved (withheld)
        res = model.fit(epsilon=1.0, estimator="within", random_state=0)
        assert res.privacy.epsilon <= 1.0 + 1e-12
        assert res.privacy.delta <= 1.0 / 5000**2
        stages = {e.stage for e in res.privacy.entries}
        assert stages <= {"midpoint", "scale", "count", "refinement", "mean", "second moment"}
        # n = 5000 at ε = 1 affords no count of the influence's tail on each side (public
        # facts: signed_share): the one warning says so, and nothing else is warned
        assert len(res.privacy.entries) > 0
        assert len(res.warnings) == 1 and "no count checked" in res.warnings[0], res.warnings
        # the users are counted once: the influence release divides by the design's count
        counts = [e for e in res.privacy.entries if e.stage == "count"]
        assert [e.mechanism for e in counts] == ["lattice Laplace weighted count"]
        moments = [e.target for e in res.privacy.entries if e.stage == "second moment"]
        assert moments == ["influence[x1]", "influence[x2]"]
        # the private fit differs from the non-private one by its noise and clipping bias:
        # 4.4 noise sds is a two-sided tail of 1e-5 for a normal, 2.5e-3 for a Laplace (the
        # noise law is a mix of both), plus the bias bound
        gap = (res.params - reference.params).abs()
        assert (gap <= 4.4 * res.noise_sd + res.bias).all(), (gap, res.noise_sd, res.bias)
        # the reported sampling sd is the private sandwich, from the second moment of the
        # influence values released beside their mean (10 % of its budget): its noise at
        # ε = 1, n = 5000 spreads the ratio to the exact sandwich (0.73-1.43 over seeds 0-11);
        # 0.6-1.6 holds that, and fails a moment that is lost (ratio near 0) or one of the
        # wrong scale (orders of magnitude off, as a stated proxy would be)
        exact = model.fit(estimator="within", epsilon=1e300, delta=0.5, random_state=0)
        ratio = (res.sampling_sd / exact.sampling_sd).to_numpy()
        assert np.all((ratio >= 0.6) & (ratio <= 1.6)), ratio
        # results: DP outputs and public facts only
        assert set(res.users.index) == {"users with a statistic (weighted)"}
        assert res.projection_interval.isna().all().all()
        text = str(res.summary())
        assert "x1" in text and "Privacy spent" in text
        ci = res.conf_int(alpha=0.1)
        assert (ci["lower"] < res.params).all() and (res.params < ci["upper"]).all()
        p = res.pvalues
        assert ((p < 0.1) == ((ci["lower"] > 0) | (ci["upper"] < 0))).all()

    def test_design_is_released_row_by_row(self, panel: pd.DataFrame) -> None:
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", panel, groups="user")
        res = model.fit(epsilon=1.0, estimator="within", random_state=4)
        means = [e.target for e in res.privacy.entries if e.stage == "mean"]
        assert means == [
            "Z'Z[x1,x1]",
            "Z'X[x1,x2]",
            "Z'y[x1]",
            "Z'Z[x2,x2]",
            "Z'y[x2]",
            # n ε affords one early Newton step (within_shares): its mean influence, then the
            # last step's
            "step1[x1]",
            "step1[x2]",
            "influence[x1]",
            "influence[x2]",
        ]

    def test_correlated_regressors_are_resolved(self) -> None:
        # x2 = x1 + noise of half x1's sd (within-user correlation 0.9, variance inflation
        # factor 5), n = 5000, ε = 1. Released as A itself, the design's smallest direction
        # drowned in the entries' noise (on a panel like this one, another seed: 30 of 40 fits
        # withheld, the rest 11 clustered SEs off with half of their intervals missing).
        # Released row by row it is resolved: each error is within 4.4 of its standard
        # errors plus its bias bound (a two-sided tail of 2.5e-3 for a Laplace, the heavier
        # of the noise law's parts, so 20 coefficients all inside with probability > 0.95).
        # Seed 30 is the bad event the error bounds exclude: the scale's median of a column
        # (n ε = 67) lands far below every user (the plan bounds this at 5e-4 per column; 7
        # columns: seed 30 is the first such fit of seeds 0-400 on the medians' run-by-run
        # draws, 21 and 1 on earlier draws), the interval collapses onto the midpoint, and the
        # release is withheld with a note instead of being released as 0.851 ± 3e-5 for 1.003.
        frame = geometric_panel(9, 1.0, 0.5)
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user")
        reference = model.fit(estimator="within", **NOISE_OFF).params
        withheld = []
        for seed in [*range(10), 30]:
            res = model.fit(epsilon=1.0, estimator="within", random_state=seed)
            if res.failed.any():
                withheld.append(seed)
                assert any("missed the data" in w for w in res.warnings), res.warnings
                # the influence values rest on that basis (all 0): its release says nothing
                assert not any("influence[" in w for w in res.warnings), res.warnings
                continue
            gap = (res.params - reference).abs()
            assert (gap <= 4.4 * res.bse + res.bias).all(), (seed, gap, res.bse, res.bias)
        assert withheld == [30]

    def test_only_the_influence_buys_a_second_moment(self, panel: pd.DataFrame) -> None:
        # at ε = 4 every design column could afford one (n ε per column well above
        # MOMENT_USERS), but nothing reads the design's sampling sd: only the influence's
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", panel, groups="user")
        res = model.fit(epsilon=4.0, estimator="within", random_state=2)
        moments = [e.target for e in res.privacy.entries if e.stage == "second moment"]
        assert moments == ["influence[x1]", "influence[x2]"]
        assert res.privacy.epsilon <= 4.0 * (1 + 1e-12)

    def test_influence_is_released_on_a_public_centre(
        self, panel: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The influence values' mean is the pilot's error: they are released on the public
        centre 0 (no midpoint, no refinement: their ε goes to the final mean), with a bound on
        that error from the released design (its noise's Monte Carlo quantile at 1 - γ plus
        its bias carried to the pilot). The bound must hold: the true weighted mean influence
        within it in at least 34 of 40 fits at ε = 1 (per coefficient, nominal 0.95; binomial
        sd 1.4 fits, so 34 is 4 sds below nominal; measured 0.96 on the wage panel), for the
        first Newton step's and the last's (40 of 40 each)."""
        honest = release_blocks.release_means
        means, bounds = [], []

        def spy(matrix: np.ndarray, **kwargs: object) -> object:
            centre = kwargs["rules"].public_centre
            if centre is not None:
                weights = kwargs["rules"].user_weights.values
                kept = ~np.isnan(matrix).any(axis=1)
                means.append(weights[kept] @ matrix[kept] / weights[kept].sum())
                bounds.append(centre[1])  # type: ignore[index]
            return honest(matrix, **kwargs)

        monkeypatch.setattr(release_blocks, "release_means", spy)
        model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", panel, groups="user")
        for seed in range(40):
            res = model.fit(epsilon=1.0, estimator="within", random_state=seed)
        stages = {e.stage for e in res.privacy.entries if e.target.startswith("influence")}
        assert stages == {"scale", "mean", "second moment"}
        # n ε affords one early Newton step (within_shares): two centred releases a fit, the
        # first step's centred on the pilot's error, the last's on what the first left
        # (bounded from the first's released noise and bias), each bound held alike
        assert len(means) == 80
        for step in (0, 1):
            mean, bound = np.array(means[step::2]), np.array(bounds[step::2])
            covered = (np.abs(mean) <= bound).sum(axis=0)
            assert (covered >= 34).all(), (step, covered)
            # not vacuous (measured 0.19 and 0.18; a fit whose design was lost has influence
            # values and bound 0)
            held = bound > 0
            assert np.median(np.abs(mean)[held] / bound[held]) > 0.05

    def test_same_seed_same_release(self, panel: pd.DataFrame) -> None:
        model = dplong.LongitudinalOLS.from_formula("y ~ x1", panel, groups="user")
        a = model.fit(epsilon=1.0, estimator="within", random_state=3)
        b = model.fit(epsilon=1.0, estimator="within", random_state=3)
        pd.testing.assert_series_equal(a.params, b.params)
        pd.testing.assert_series_equal(a.noise_sd, b.noise_sd)


def wage_like(seed: int) -> pd.DataFrame:
    """A panel shaped like the shipped wage panel: 545 men x 8 years, experience growing by
    one a year from a start of 0-11 years, log wages with a man effect correlated with the
    start, AR(1) errors (0.5) of sd 0.35, and a second, noisy regressor (hours-like)."""
    rng = np.random.default_rng(seed)
    n, t = 545, 8
    user = np.repeat(np.arange(n), t)
    year = np.tile(np.arange(t), n)
    start = rng.choice(12, size=n, p=np.array([2, 55, 211, 108, 88, 47, 12, 8, 4, 7, 1, 2]) / 545)
    exper = start[user] + year
    effect = rng.normal(0.0, 0.35, n) + 0.03 * start
    hours = rng.normal(0.0, 1.0, n)[user] + rng.normal(0.0, 1.0, n * t)
    shocks = rng.normal(0.0, 0.35 * np.sqrt(1 - 0.25), (n, t))
    errors = np.empty((n, t))
    errors[:, 0] = rng.normal(0.0, 0.35, n)
    for k in range(1, t):
        errors[:, k] = 0.5 * errors[:, k - 1] + shocks[:, k]
    lwage = 1.0 + effect[user] + 0.06 * exper - 0.05 * hours + errors.ravel()
    return pd.DataFrame({"nr": user, "exper": exper, "hours": hours, "lwage": lwage})


def wage_like_coverage(
    formula: str, truth: np.ndarray, panels: int, curvature: float = 0.0
) -> tuple[np.ndarray, int]:
    """Coverage of the true slopes by the within fit's 95 % intervals at ε = 4 over ``panels``
    wage-like panels (``curvature`` times ``expersq`` added to log wages), and how many fits
    had no interval."""
    covered, withheld = [], 0
    for seed in range(panels):
        frame = wage_like(seed)
        frame["expersq"] = frame["exper"] ** 2
        frame["lwage"] += curvature * frame["expersq"]
        model = dplong.LongitudinalOLS.from_formula(formula, frame, groups="nr")
        res = model.fit(epsilon=4.0, estimator="within", random_state=seed)
        ci = res.conf_int()
        if ci.isna().any().any():
            withheld += 1
            continue
        covered.append(((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy())
    coverage = np.mean(covered, axis=0)
    print(f"\n{formula}: coverage {coverage}, fits without intervals {withheld}/{panels}")
    return coverage, withheld


@pytest.mark.slow
# ε = 4 over ten released columns of 545 users: the plan's (public) reliability notes fire
@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_coverage_on_a_wage_like_panel() -> None:
    """Intervals at 95 % cover the true slopes in >= 93 % of 150 simulated wage-like panels
    (ε = 4: at ε = 1 two slopes of 545 users are refused as hopeless, see the docs). The
    binomial sd of a coverage of 0.95 over 150 runs is 0.018, so 0.93 is 1.1 sd below it;
    the intervals are expected to be conservative (the noise law's Laplace term and the bias
    bounds: 0.99 measured), which puts 0.93 many sd away."""
    coverage, withheld = wage_like_coverage("lwage ~ exper + hours", np.array([0.06, -0.05]), 150)
    assert withheld <= 8  # at most 5 % of fits may flag a nearly singular design
    assert (coverage >= 0.93).all(), coverage


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_coverage_with_a_squared_regressor_on_a_wage_like_panel() -> None:
    """The issue's target for ``lwage ~ exper + expersq``: intervals at 95 % cover the true
    slopes in >= 93 % of simulated wage-like panels (ε = 4). Nearly collinear (a variance
    inflation factor of about 12) and what separates ``expersq`` from ``exper`` is held by
    the men whose careers started far from the average — the square ``z'z`` released with the
    chi-square tail and its spread floor. Measured over 600 panels: 0.973 and 0.963, two fits
    withheld (0.977 and 0.970 before the influence's public centre, 0.937 and 0.967 before the
    floor; on the wage panel itself an earlier engine's
    exponential tail covered 0.80 at ε = 16, and a variance-inflation rule then withheld
    every such fit). The threshold is the issue's; at 300 panels the binomial sd of a 0.97
    coverage is 0.010, so it sits four sds below what is measured."""
    coverage, withheld = wage_like_coverage(
        "lwage ~ exper + expersq", np.array([0.06, -0.002]), 300, curvature=-0.002
    )
    assert withheld <= 15
    assert (coverage >= 0.93).all(), coverage


def _counts_panel(seed: int, people: int = 2000, years: int = 4) -> pd.DataFrame:
    """Negative-binomial counts (size 0.7) with a log-linear mean in a regressor that varies
    within persons and a person effect: a count outcome's skewed, heteroskedastic residuals."""
    rng = np.random.default_rng(seed)
    user = np.repeat(np.arange(people), years)
    x = rng.normal(size=people)[user] + rng.normal(size=user.size)
    mean = np.exp(0.5 + 0.3 * x + 0.7 * rng.normal(size=people)[user])
    y = rng.negative_binomial(0.7, 0.7 / (0.7 + mean)).astype(float)
    return pd.DataFrame({"id": user, "x": x, "y": y})


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_skewed_influence_is_honest_or_warned() -> None:
    """A count outcome's influence values (a demeaned regressor times a skewed,
    heteroskedastic residual) have a long one-sided tail. Clipped at the exponential model's
    radius the estimate lands at about 0.8 of the non-private within estimate, 2.6-5.7 SEs
    off. The counts on each side of the influence (``tails._signed_tail``) mark it heavy where
    they resolve the excess (:func:`test_a_one_sided_influence_tail_is_found_where_counted`);
    at 2,000 persons and ε = 4, just inside the n ε that affords them, its excess over its sd
    is 2.6-4.3 (10th-90th percentile of 30 fits): past the heavy bar of 3.5 in 11 of 30; of the
    other 19, 12 are warned leaning (past ``tails.LEANING_SDS`` = 2.5) and 6 that the clip cuts
    many. Of the 19 intervals that miss the non-private estimate, 13 were silent before the
    leaning warning and 1 is now (seed 17: its excess sits under the bar).
    The false alarm this costs on symmetric residuals is in
    :func:`test_a_symmetric_influence_rarely_leans`."""
    silent = []
    for seed in range(30):
        frame = _counts_panel(seed)
        demeaned = frame[["x", "y"]] - frame.groupby("id")[["x", "y"]].transform("mean")
        reference = float((demeaned.x * demeaned.y).sum() / (demeaned.x**2).sum())
        res = dplong.LongitudinalOLS.from_formula("y ~ x", frame, groups="id").fit(
            epsilon=4.0, estimator="within", random_state=seed
        )
        low, high = res.conf_int().loc["x"]
        if not (low <= reference <= high or res.warnings):
            silent.append(seed)
    assert len(silent) <= 1, silent


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_symmetric_influence_rarely_leans() -> None:
    """The leaning warning's false alarms: with normal errors the influence's excess over its
    sd is about |N(0, 1)|, past ``LEANING_SDS`` = 2.5 in about 1.2 % of fits, so over 40 fits
    (2,000 persons, ε = 4) the binomial count of warned fits exceeds 3 with probability about
    0.1 % (P(Bin(40, 0.012) >= 4)); of seeds 0-99 two were warned, both among these. A count
    outcome's panel is warned leaning in 12 of 30 fits and marked heavy in 11 more (above)."""
    warned = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        user = np.repeat(np.arange(2000), 4)
        x = rng.normal(size=2000)[user] + rng.normal(size=user.size)
        y = 0.5 + 0.7 * x + rng.normal(size=2000)[user] + rng.normal(size=user.size)
        res = dplong.LongitudinalOLS.from_formula(
            "y ~ x", pd.DataFrame({"id": user, "x": x, "y": y}), groups="id"
        ).fit(epsilon=4.0, estimator="within", random_state=seed)
        warned += any("too few to tell" in w for w in res.warnings)
    assert warned <= 3, warned


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_one_sided_influence_tail_is_found_where_counted() -> None:
    """The same count outcome at 5,000 persons and ε = 4, where the influence's counts on
    each side resolve an excess of about √n users (``budget.signed_share``): the excess (250-300
    persons beyond 3.5 sds above against 80-130 below) is found in every fit of seeds 0-9, the
    bias bound takes it (a Pareto tail through the excess: about 0.45 against a clip that cuts
    0.1-0.15) and each interval holds the non-private within estimate (over seeds 0-19, 19 of
    20 found and the other warned that its clip cuts many; 20 of 20 missed unwarned before
    the counts)."""
    for seed in range(10):
        frame = _counts_panel(seed, people=5000)
        demeaned = frame[["x", "y"]] - frame.groupby("id")[["x", "y"]].transform("mean")
        reference = float((demeaned.x * demeaned.y).sum() / (demeaned.x**2).sum())
        res = dplong.LongitudinalOLS.from_formula("y ~ x", frame, groups="id").fit(
            epsilon=4.0, estimator="within", random_state=seed
        )
        assert any("one-sided heavy tail" in w for w in res.warnings), (seed, res.warnings)
        low, high = res.conf_int().loc["x"]
        assert low <= reference <= high, (seed, reference, low, high)


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_the_planner_forecasts_the_public_notes_of_a_within_fit() -> None:
    """The design rows' tails are stated (exponential, a square's refined to the chi-square
    where the released design says so), so no fit says no count checked them: nor does its
    plan. The influence's assumed tail, whose counts the wage panel's 545 men afford from
    ε = 16, is the one public-facts warning both carry at ε = 4."""
    wages = dplong.datasets.load_wage_panel()
    formula = "lwage ~ exper + expersq"
    plan = dplong.plan(formula, model="ols", n=545, epsilon=4.0, estimator="within")
    assert len(plan.warnings) == 1 and "influence[exper]" in plan.warnings[0]
    res = dplong.LongitudinalOLS.from_formula(formula, wages, groups="nr").fit(
        epsilon=4.0, estimator="within", random_state=0
    )
    assert plan.warnings[0] in res.warnings
    assert not any("Z'" in w and "no count checked" in w for w in res.warnings)
    assert plan.quiet_epsilon == 16.0


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_clip_that_cuts_many_persons_is_warned() -> None:
    """RAND HIE's raw spending (``meddol ~ xage``): as many persons' influence lies far out
    below as above (638 against 534 beyond 3.5 sds), so their excess on one side is no news,
    but those above lie far farther out, and the clip, which cuts 825 of the 5,643 persons
    with a statistic (11 √n), pulls the within slope from 18.9 (non-private) to about 3.6.
    The count beyond the clip says it cuts many (above √n by 3.5 noise sds) in every fit; on
    the log scale (6 persons beyond it) and for the visits (121, 1.6 √n: the interval holds
    the non-private -0.036) it does not."""
    hie = dplong.datasets.load_randhie()
    for formula, many in [
        ("meddol ~ xage", True),
        ("np.log1p(meddol) ~ xage", False),
        ("mdvis ~ xage", False),
    ]:
        model = dplong.LongitudinalOLS.from_formula(formula, hie, groups="zper")
        for seed in range(2):
            res = model.fit(epsilon=4.0, estimator="within", random_state=seed)
            warned = any("the clip cuts many users" in w for w in res.warnings)
            assert warned == many, (formula, seed, res.warnings)


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_symmetric_influence_tail_is_counted_and_not_flagged() -> None:
    """The wage panel's ``lwage ~ exper + hours``: hours' influence has a heavy tail, about as
    many men beyond 3.5 sds above as below (28 and 29), which one joint count marked heavy in
    44 of 59 fits at ε = 4, its allowance 25 times the SE for a clip that hardly biases. At
    ε = 16 the counts on each side run (545 men afford them from about there: public facts)
    and flag neither column (0 of 30 fits); their threshold, about 6 % of the men, is above
    the blind share of a twentieth (tails.BLIND_SHARE), so a warning says what they could not
    tell; at ε = 4 they are not afforded, no tail stage runs and the public facts' warning
    says so."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + hours", wages, groups="nr")
    for seed in range(3):
        res = model.fit(epsilon=16.0, estimator="within", random_state=seed)
        assert not any("heavy" in w for w in res.warnings), res.warnings
        tails = [(e.target, e.sensitivity) for e in res.privacy.entries if e.stage == "tail"]
        assert tails == [("influence[exper]", 2.0), ("influence[hours]", 2.0)]
        (blind,) = [w for w in res.warnings if "no count checked" in w]
        assert blind.startswith("['influence[exper]', 'influence[hours]']: no count checked")
        assert "could not tell 5% of the users" in blind
    small = model.fit(epsilon=4.0, estimator="within", random_state=0)
    assert not any(e.stage == "tail" for e in small.privacy.entries)
    assert any("no count checked their exponential tails" in w for w in small.warnings)


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
@pytest.mark.parametrize("epsilon", [16.0, 256.0])
def test_rarely_changing_regressors_are_withheld_not_misreported(epsilon: float) -> None:
    """``lwage ~ exper + union + married`` on the shipped wage panel: 58 % of the men never
    change ``union`` and 44 % never ``married``, so most of their cross products are exactly 0
    and, once the design is rotated, the rest sit beside an atom. The estimator cannot size its
    clipping for them yet; what it must not do is what the parent commit did — release
    ``union`` with intervals that covered the non-private estimate in 0 of 60 fits at ε = 16.
    At ε = 16 all 60 of the benchmark's fits are withheld (the zero-inflated products' users
    off 0 too few for a private scale, or an influence column whose clipped values spread far
    beyond its scale, which withholds every coefficient), at ε = 256 likewise; each says why.
    (At ε = 4, 48 of 60 are withheld and the other 12 are not honest: docs/accuracy.md.)"""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula(
        "lwage ~ exper + union + married", wages, groups="nr", time="year"
    )
    for seed in range(3):
        res = model.fit(epsilon=epsilon, estimator="within", random_state=seed)
        assert res.params.isna().all() and res.failed.all()
        assert any(w.startswith("No estimate (NaN)") for w in res.warnings)


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_regressor_collinear_with_year_dummies_is_withheld() -> None:
    """``lwage ~ exper + union + EntityEffects + TimeEffects`` on the shipped wage panel: every
    man's ``exper`` grows by one a year, so within a man it is the year dummies' combination
    and its coefficient is not identified. Its basis vector is built from the dummies' released
    products, whose errors leave a ``Z'Z[exper,exper]`` of their own reach (the row's own noise
    is sized on that residue and is far smaller); the parent commit released ``exper`` in 10 of
    15 fits at ε = 100 to 10⁶ (0.46 ± 55, -7.47 ± 127 and 7.17 ± 126 at ε = 10⁵). The
    identification rule counts the earlier rows' errors, so it is never released: collinear,
    or (as before) every coefficient lost with a design release. ``union``, which the
    collinearity leaves identified, is released at ε = 10⁵; its interval must hold the
    non-private within estimate (0.085) or warn that it may not: 58 % of the men never change
    ``union``, the influence clip cuts 18 % of them, is warned, and the interval (0.030, 0.077)
    misses (the rarely changing regressors' open defect, docs/accuracy.md). At ε = 10³ its
    influence release fails for that defect: withheld with a reason, never a number."""
    wages = dplong.datasets.load_wage_panel()
    dummies = pd.get_dummies(wages["year"], drop_first=True).astype(float)
    design = pd.concat([wages[["union"]], dummies], axis=1)
    design -= design.groupby(wages["nr"]).transform("mean")
    outcome = wages["lwage"] - wages.groupby("nr")["lwage"].transform("mean")
    union = np.linalg.lstsq(design.to_numpy(), outcome.to_numpy(), rcond=None)[0][0]
    model = dplong.LongitudinalOLS.from_formula(
        "lwage ~ exper + union + EntityEffects + TimeEffects",
        wages,
        groups="nr",
        time="year",
        levels={"year": list(range(1980, 1988))},
    )
    for epsilon, seed in [(1e3, s) for s in range(3)] + [(1e5, s) for s in range(3)]:
        res = model.fit(epsilon=epsilon, random_state=seed)
        assert np.isnan(res.params["exper"])
        assert res.withheld_why["exper"] in ("collinear", "lost release"), res.withheld_why
        if epsilon == 1e5:
            assert res.withheld_why["exper"] == "collinear"
            low, high = res.conf_int().loc["union"]
            warned = any("influence[union]']: the clip cuts many users" in w for w in res.warnings)
            assert np.isfinite(res.params["union"]) and (low < union < high or warned)
        elif np.isnan(res.params["union"]):
            assert res.withheld_why["union"] in ("error unknown", "lost release")
    assert any("cannot tell them apart" in w for w in res.warnings)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_squared_regressor_on_the_wage_panel_is_accurate() -> None:
    """``lwage ~ exper + expersq`` on the shipped wage panel at ε = 4, the benchmark's 60 fits:
    the median absolute error of each slope around the non-private within estimate, in its
    clustered SE (0.0106 and 0.000687, linearmodels ``PanelOLS``), is 0.73 and 0.51
    (docs/accuracy.md; 0.67 and 0.84 before the influence was released on its public centre).
    Before the square's support end and its spread floor it was 1.10 and 1.28: the square's
    scale collapsed onto the value 55 % of the men share in a fifth of the fits. The sample
    median of 60 such errors (half-normal-like, RMSE about 1.5 SEs) has an sd of about 0.13
    SE, so the thresholds 0.8 and 1.1 sit 0.5-4 sds above what is measured and 2.3 sds
    below what was. A fit whose medians missed is withheld ("lost release"): 2 and 4 of seeds
    0-199 on the medians' draws before and since they are drawn run by run (about 1.5 %), so
    at most 3 of 60 (the chance of 4 or more at that rate is 0.013); the medians are of the
    released fits."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + expersq", wages, groups="nr")
    exact = model.fit(estimator="within", epsilon=1e300, delta=0.5, scale=1e14, random_state=0)
    fits = [model.fit(epsilon=4.0, estimator="within", random_state=seed) for seed in range(60)]
    released = [res for res in fits if res.withheld.empty]
    assert len(released) >= 57
    for res in fits:
        assert res.withheld.empty or set(res.withheld) == {"lost release"}
    errors = np.array([res.params - exact.params for res in released])
    median = np.median(np.abs(errors), axis=0) / np.array([0.0106, 0.000687])
    assert (median < np.array([0.8, 1.1])).all(), median


def test_declared_between_columns_are_absorbed_and_cost_nothing() -> None:
    """``between=["z"]`` (a time-invariant column, a public declaration) gives the fit of the
    other regressors exactly — the same releases draw for draw as the formula without z, in
    either order of the terms — and reports z as absorbed, not as a withheld release."""
    frame = unbalanced(n=2000, seed=3)
    alone = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user").fit(
        epsilon=2.0, estimator="within", random_state=5
    )
    for formula, order in (("y ~ x1 + z + x2", ["x1", "z", "x2"]), ("y ~ z + x1 + x2", None)):
        res = dplong.LongitudinalOLS.from_formula(formula, frame, groups="user").fit(
            epsilon=2.0, estimator="within", between=["z"], random_state=5
        )
        assert list(res.params.index) == (order or ["z", "x1", "x2"])
        assert np.isnan(res.params["z"]) and res.withheld_why["z"] == "absorbed"
        pd.testing.assert_series_equal(res.params.drop("z"), alone.params.loc[["x1", "x2"]])
        pd.testing.assert_series_equal(res.bse.drop("z"), alone.bse.loc[["x1", "x2"]])
        assert res.privacy.epsilon <= 2.0 * (1 + 1e-9)
        assert len(res.privacy.entries) == len(alone.privacy.entries)
        assert not res.warnings or all("z" not in w for w in res.warnings)
        assert any("between=" in a and "z" in a for a in res.assumptions)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"between": ["z"]}, 'estimator="within"'),
        ({"between": ["w"], "estimator": "within"}, r"not regressors.*\['x1', 'z'\]"),
        ({"between": [1], "estimator": "within"}, "list of column names"),
    ],
)
def test_between_is_checked_before_any_noise(options: dict, match: str) -> None:
    model = dplong.LongitudinalOLS.from_formula("y ~ x1 + z", unbalanced(), groups="user")
    with pytest.raises(ParameterError, match=match):
        model.fit(epsilon=1.0, random_state=0, **options)


def test_every_regressor_declared_between_is_refused() -> None:
    model = dplong.LongitudinalOLS.from_formula("y ~ z", unbalanced(), groups="user")
    with pytest.raises(FormulaError, match="between-user"):
        model.fit(epsilon=1.0, estimator="within", between="z")


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_regressor_lost_in_the_noise_withholds_the_others() -> None:
    """``y ~ x + z``, 1,000 normal users of three rows at ε = 2: ``z`` (slope 0.5) varies within
    users and correlates 0.6 with ``x`` (slope 0). Its ``z'z`` lies within the design's noise in
    most fits, and so does its product with ``x``; the parent commit then left ``z`` out as
    without variation and released ``x`` with z's omitted-variable bias (about 0.3): in 8 of
    19 such fits of 30 the interval missed 0 (seed 7: 0.33, interval 0.05 to 0.61), under a
    note that time-invariant regressors are absorbed. No estimate of ``x`` can be stated
    without ``z``: all are withheld, each saying why (declared time-invariant, ``between=``,
    a regressor is left out and the others released: ``test_declared_between_columns_...``)."""
    rng = np.random.default_rng(7)
    n, t = 1000, 3
    ids = np.repeat(np.arange(n), t)

    def component() -> np.ndarray:
        return 0.7 * rng.normal(size=n)[ids] + 0.7 * rng.normal(size=n * t)

    z = component()
    omitted = component()
    x = 0.6 * z + 0.8 * component()
    y = 1.0 + 0.5 * z + 0.5 * omitted + rng.normal(size=n)[ids] + rng.normal(size=n * t)
    frame = pd.DataFrame({"id": ids, "y": y, "x": x, "z": z})
    res = dplong.LongitudinalOLS.from_formula("y ~ x + z", frame, groups="id").fit(
        epsilon=2.0, estimator="within", random_state=7
    )
    assert res.withheld_why == {"x": "omitted regressor", "z": "no variation"}
    (note,) = [w for w in res.warnings if w.startswith("No estimate (NaN) for ['x'] either")]
    assert "whether ['z'] never changes within users" in note and "between=" in note


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_regressor_switching_for_few_users_withholds_the_others() -> None:
    """``y ~ x + d``, 2,000 users of four rows at ε = 2: ``d`` (slope 2) switches from 0 to 1
    once for 5 % of the users, and ``x`` (slope 0) moves with it (``x = ... + 3 d``). Most
    users hold ``d`` constant, so its spread sits at the floor; the parent commit took it as
    time-invariant, left it out and released ``x`` with its omitted-variable bias (seed 0:
    0.070, interval 0.026 to 0.113; 19 of 27 intervals missed 0 over seeds 0-29, an audit;
    non-private, 28 of 30 cover). No released number tells it from a time-invariant ``d``:
    both are withheld, and the note names ``between=`` for one that never changes."""
    frame = rare_switch_panel(2000, 4)
    res = dplong.LongitudinalOLS.from_formula("y ~ x + d", frame, groups="id").fit(
        epsilon=2.0, estimator="within", random_state=0
    )
    assert res.withheld_why == {"x": "omitted regressor", "d": "no variation"}
    (note,) = [w for w in res.warnings if w.startswith("No estimate (NaN) for ['x'] either")]
    assert "changes for a few of them" in note


def lognormal_panel(seed: int, n: int = 3000, t: int = 3) -> pd.DataFrame:
    """Skewed regressors: x and z lognormal (user and row parts), x = 0.6 z + noise of slope
    0, y = 0.5 z + normal noise (a true null for x)."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(n), t)

    def part(draw: Callable[[int], np.ndarray]) -> np.ndarray:
        return 0.7 * draw(n)[ids] + 0.7 * draw(n * t)

    def lognormal(k: int) -> np.ndarray:
        return rng.lognormal(0.0, 1.0, k)

    def normal(k: int) -> np.ndarray:
        return rng.normal(size=k)

    z = part(lognormal)
    v = part(normal)
    x = 0.6 * z + 0.8 * part(lognormal)
    y = 1 + 0.5 * z + 0.5 * v + normal(n)[ids] + normal(n * t)
    return pd.DataFrame({"id": ids, "y": y, "x": x, "z": z})


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
@pytest.mark.parametrize(
    ("seed", "before"),
    [(2, (0.0084, 0.0771)), (3, (0.0142, 0.0801)), (4, (0.0119, 0.0789))],
)
def test_newton_steps_correct_a_skewed_pilot(seed: int, before: tuple[float, float]) -> None:
    """Lognormal regressors (3,000 users of three rows, ε = 4, random_state = seed): the
    released design's clipped means cut 40-50 % of the skewed products' means unevenly, so
    the pilot is off (x: about 0.12 against a true 0), and the clipped mean of the influence
    values, whose skewed term ``Â⁻¹ A_u (β̃ - β₀)`` is clipped like the rest, corrects 70 % of
    that a step. With one step x's interval missed the true 0 here (``before``; 28 of 100
    such panels, the non-private estimates 0.011, 0.008 and 0.019); the early Newton steps
    (n ε affords two, within_shares) each correct what the one before left, and it holds 0:
    [-0.021, 0.046], [-0.012, 0.050] and [-0.008, 0.052] (5 of 100 miss)."""
    frame = lognormal_panel(seed)
    model = dplong.LongitudinalOLS.from_formula("y ~ x + z", frame, groups="id")
    res = model.fit(epsilon=4.0, estimator="within", random_state=seed)
    low, high = res.conf_int().loc["x"]
    assert low <= 0.0 <= high, (seed, low, high, before)
    steps = {e.target for e in res.privacy.entries if e.target.startswith("step")}
    assert steps == {"step1[x]", "step1[z]", "step2[x]", "step2[z]"}
    assert res.privacy.epsilon <= 4.0 * (1 + 1e-12)


def test_a_stated_scale_is_not_asked_for_again() -> None:
    """The wage panel's within fit at ε = 8 affords no tail count for its last release, whose
    exponential tail is assumed: the note says nothing checked it. Where the scale is stated
    the remedy it names is no longer ``scale=`` (an audit found the fit asking for the option
    it was given): raise ε, the one lever left. Unstated, the per-user fit's notes on the
    same panel still name ``scale=`` among their remedies (a control that the wording is
    reachable)."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + expersq", wages, groups="nr")
    stated = model.fit(epsilon=8.0, estimator="within", scale=1.0, random_state=0)
    (note,) = [w for w in stated.warnings if "no count checked" in w]
    assert note.endswith("the interval can miss; raise epsilon.")
    assert not any("scale=" in w for w in stated.warnings), stated.warnings
    unstated = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr").fit(
        epsilon=1.0, random_state=0
    )
    assert any("scale=" in w for w in unstated.warnings), unstated.warnings
