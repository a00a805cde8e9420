"""``dplong.PriestleyChao``'s entry point and what both designs share (``models/kernel.py``):
the checks of :meth:`~dplong.PriestleyChao.from_formula`, the choice of estimator, the boundary
flags, the results' assembly (curve, bands, error bound, summary), refusals before any draw and
that nothing private leaks into a result.

Each design's own release is tested in ``test_smoother.py`` (item-level) and ``test_curves.py``
(user-level); the statistical behaviour in ``test_smoother_statistics.py`` and
``test_curves_statistics.py``, and the privacy claims in ``test_privacy_audit_kernel.py``.
"""

from __future__ import annotations

import math
import pickle
import struct
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from kernel_cases import (
    KERNELS,
    NOISE_OFF,
    growth_panel,
    items,
    priestley_chao,
    zeta,
)

import dplong
from dplong.dependence import AR1
from dplong.exceptions import (
    ArgumentError,
    DataError,
    FormulaError,
    ParameterError,
    PrivacyParameterError,
)
from dplong.kernels import item_weights

matplotlib.use("Agg")

# ---------------------------------------------------------------------------------------------
# Boundary points (Lemma 4.9: only x in [ζ, 1 - ζ] is covered)
# ---------------------------------------------------------------------------------------------


class TestBoundary:
    # the grid reaches the ends of the domain, where the user-level fit finds few users with a
    # curve and says so; this test is about the boundary flags, which are public facts
    @pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
    @pytest.mark.parametrize("kernel", KERNELS)
    @pytest.mark.parametrize("level", ["item", "user"])
    def test_boundary_points_are_flagged(self, kernel: str, level: str) -> None:
        b, lo, hi = 0.3, -1.0, 3.0
        grid = np.linspace(lo, hi, 17)  # spacing 0.25
        if level == "item":
            df = items(n=1000, seed=10)
            model = dplong.PriestleyChao.from_formula(
                "y ~ x", df, domain=(lo, hi), kernel=kernel, bandwidth=b, grid=grid
            )
            res = model.fit(epsilon=1.0, error_sd=0.5, amplitude=1.0, random_state=0)
        else:
            df = growth_panel(n=1000).assign(x=lambda d: d["x"] * 2 - 1)
            model = dplong.PriestleyChao.from_formula(
                "y ~ x", df, groups="user", domain=(lo, hi), kernel=kernel, bandwidth=b, grid=grid
            )
            res = model.fit(epsilon=8.0, scale=4.0, random_state=0)
        z = zeta(b, hi - lo, kernel)
        # Gaussian: ζ = 0.3 √(2 log(2 · 4 / 0.3)) = 0.7688; Epanechnikov: ζ = b = 0.3
        assert z == pytest.approx(0.7688 if kernel == "gaussian" else 0.3, abs=1e-4)
        expected = (grid < lo + z) | (grid > hi - z)
        np.testing.assert_array_equal(res.boundary.to_numpy(), expected)
        assert expected.sum() == (8 if kernel == "gaussian" else 4)  # 4 (resp. 2) at each end
        np.testing.assert_array_equal(res.curve()["boundary"].to_numpy(), expected)
        table = res.error_bound().table
        np.testing.assert_array_equal(table["boundary"].to_numpy(), expected)
        text = res.summary().as_text()
        assert f"{int(expected.sum())} grid points lie in the boundary region" in text

    def test_no_boundary_note_when_grid_is_interior(self) -> None:
        df = items(n=1000, seed=11, lo=0.0, hi=1.0)
        res = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=0.05, grid=[0.3, 0.5, 0.7]
        ).fit(epsilon=1.0, error_sd=0.5, amplitude=1.0, random_state=0)
        assert not res.boundary.any()
        assert "boundary region" not in res.summary().as_text()


# ---------------------------------------------------------------------------------------------
# Results: curve, predict, plot, summary, error bound, central vs local
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def item_fit() -> dplong.results.CurveResults:
    df = items(n=5000, seed=12, lo=0.0, hi=1.0)
    model = dplong.PriestleyChao.from_formula("y ~ x", df, domain=(0, 1), bandwidth=0.1, grid=11)
    return model.fit(
        epsilon=1.0, error_sd=0.5, amplitude=1.0, lipschitz=1.0, sup_norm=1.0, random_state=0
    )


class TestResults:
    def test_curve_predict_and_bands(self, item_fit: dplong.results.CurveResults) -> None:
        res = item_fit
        frame = res.curve(alpha=0.1)
        assert frame.columns.tolist() == ["estimate", "lower", "upper", "boundary"]
        assert frame.index.name == "x" and frame.index.tolist() == pytest.approx(
            np.linspace(0, 1, 11).tolist()
        )
        assert ((frame["lower"] < frame["estimate"]) & (frame["estimate"] < frame["upper"])).all()
        wider = res.curve(alpha=0.01)
        assert (wider["upper"] - wider["lower"] > frame["upper"] - frame["lower"]).all()
        # predict interpolates linearly between grid points (post-processing)
        assert res.predict([0.3])[0] == pytest.approx(res.params.iloc[3])
        mid = 0.5 * (res.params.iloc[3] + res.params.iloc[4])
        assert res.predict(0.35)[0] == pytest.approx(mid)
        with pytest.raises(ParameterError, match="within the grid"):
            res.predict([1.2])
        with pytest.raises(ParameterError, match="finite"):
            res.predict([np.inf])
        # a missing point is NaN, and a frame's points keep its index (as a regression's
        # predictions: an audit found an array without the index, and NaN refused)
        assert np.isnan(res.predict([np.nan, 0.3])[0])
        new = pd.DataFrame({"x": [0.3, np.nan]}, index=[7, 9])
        predicted = res.predict(new)
        assert isinstance(predicted, pd.Series) and predicted.index.tolist() == [7, 9]
        assert predicted[7] == pytest.approx(res.params.iloc[3]) and np.isnan(predicted[9])
        np.testing.assert_allclose(res.bse**2, res.sampling_sd**2 + res.noise_sd**2)

    def test_error_bound_adds_the_exact_bias(self, item_fit: dplong.results.CurveResults) -> None:
        table = item_fit.error_bound(alpha=0.1).table
        assert table.columns.tolist() == [
            "privacy noise",
            "statistical",
            "bias",
            "smoothing bias",
            "total",
            "bad events",
            "probability",
            "boundary",
        ]
        # item-level responses are projected with Lemma 4.9's no-clipping radius: no
        # clipping bias is claimed (the clipping event is among the bad events)
        assert (table["bias"] == 0).all()
        np.testing.assert_allclose(
            table["total"],
            table["privacy noise"] + table["statistical"] + table["smoothing bias"],
        )
        smoothing = table["smoothing bias"]
        assert (smoothing > 0).all()
        # interior: about L_f b μ₁(K) = 0.1 · 0.798; at the ends half the kernel mass is lost
        assert smoothing.iloc[5] == pytest.approx(0.1 * math.sqrt(2 / math.pi), rel=0.01)
        assert smoothing.iloc[0] > 0.5
        # without smoothness: no bias column values, bound for the smoothed curve only
        df = items(n=5000, seed=12, lo=0.0, hi=1.0)
        res = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=0.1, grid=11
        ).fit(epsilon=1.0, error_sd=0.5, amplitude=1.0, random_state=0)
        plain = res.error_bound(alpha=0.1).table
        assert plain["smoothing bias"].isna().all()
        np.testing.assert_allclose(plain["total"], plain["privacy noise"] + plain["statistical"])
        assert any("smoothed curve" in a for a in res.assumptions)

    def test_summary_repr_and_plot_render(self, item_fit: dplong.results.CurveResults) -> None:
        s = item_fit.summary()
        text, html, latex = s.as_text(), s.as_html(), s.as_latex()
        for out in (text, html, latex):
            assert "PriestleyChao" in out and "gaussian" in out
        assert "<table" in html and "\\begin{tabular}" in latex
        assert "Items (n):" in text and "5000" in text and "Bandwidth:" in text
        assert "over the grid" in html  # the ledger digest: one vector release of the curve
        assert repr(item_fit).startswith("<PriestleyChao results: item-level, n=5000")
        import matplotlib.pyplot as plt

        ax = item_fit.plot()
        assert ax.get_xlabel() == "x" and ax.get_ylabel() == "f(x)"
        assert len(ax.lines) == 1 and len(ax.lines[0].get_xdata()) == 11
        plt.close("all")

    def test_results_are_immutable(self, item_fit: dplong.results.CurveResults) -> None:
        with pytest.raises(AttributeError):
            item_fit.bandwidth = 1.0  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# Nothing private leaks into results (docs/design §1)
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def leak_fits() -> tuple[pd.DataFrame, pd.DataFrame, list[dplong.results.CurveResults]]:
    rng = np.random.default_rng(16)
    n_items = 3001
    item_df = pd.DataFrame(
        {"x": np.sort(rng.uniform(0, 1, n_items)), "y": 123.25 + rng.normal(0, 0.123456, n_items)}
    )
    item_df.loc[17, "y"] = np.nan
    n_users = 997
    sizes = rng.integers(3, 12, n_users)
    user = np.repeat(np.arange(n_users), sizes)
    user_df = pd.DataFrame(
        {
            "user": user,
            "x": rng.uniform(0, 1, user.size),
            "y": 77.125 + rng.normal(0, 0.321, user.size),
        }
    )
    fits = [
        dplong.PriestleyChao.from_formula("y ~ x", item_df, domain=(0, 1)).fit(
            epsilon=1.0, error_sd=0.2, amplitude=0.5, lipschitz=1.0, sup_norm=200.0, random_state=0
        ),
        dplong.PriestleyChao.from_formula("y ~ x", item_df, domain=(0, 1), bandwidth=0.1).fit(
            epsilon=1.0, error_sd=0.2, amplitude=0.5, privacy="local", bound=200.0, random_state=0
        ),
        dplong.PriestleyChao.from_formula(
            "y ~ x", user_df, groups="user", domain=(0, 1), bandwidth=0.2, grid=7
        ).fit(epsilon=4.0, scale=0.5, random_state=0),
    ]
    return item_df, user_df, fits


class TestNoLeak:
    def test_no_private_number_in_any_output(
        self, leak_fits: tuple[pd.DataFrame, pd.DataFrame, list[dplong.results.CurveResults]]
    ) -> None:
        item_df, user_df, fits = leak_fits
        # the non-private curves (item-level smoother, users' own curves) must not be stored
        item_res, _, user_res = fits
        kernel = dplong.kernels.get_kernel("gaussian")
        y_items = item_df["y"].fillna(0.0).to_numpy()
        plain = (
            item_weights(item_df["x"].to_numpy(), item_res.grid, kernel, item_res.bandwidth, 1.0).T
            @ y_items
        )
        per_user = []
        for _, rows in user_df.sort_values(["user", "x"]).groupby("user"):
            per_user.append(
                priestley_chao(
                    rows["x"].to_numpy(), rows["y"].to_numpy(), user_res.grid, 0.2, "gaussian", 1.0
                )
            )
        per_user_values = np.concatenate(per_user[:100])
        private_floats = np.concatenate(
            [
                item_df["y"].dropna().to_numpy()[:300],
                user_df["y"].to_numpy()[:300],
                plain,
                np.mean(per_user, axis=0),
                per_user_values,
            ]
        )
        n_user_rows = len(user_df)
        for res in fits:
            s = res.summary()
            texts = [s.as_text(), s.as_html(), s.as_latex(), repr(res), str(res.privacy)]
            texts.append(str(res.error_bound()))
            blobs = [pickle.dumps(res), pickle.dumps(s)]
            for text in texts:
                assert str(n_user_rows) not in text  # the user-level row count is private
                for v in private_floats[:60]:
                    assert repr(float(v)) not in text and f"{v:.8f}" not in text
            for blob in blobs:
                assert struct.pack("<q", n_user_rows) not in blob
                assert struct.pack("<d", float(n_user_rows)) not in blob
                for v in private_floats:
                    assert struct.pack("<d", float(v)) not in blob
            # no per-item or per-user array is stored: every series is indexed by the grid
            # (the private counts of users with a curve: one per grid point, or one NaN)
            for name, value in vars(res).items():
                if isinstance(value, pd.Series | pd.DataFrame | np.ndarray):
                    assert len(value) == res.grid.size or (name == "users" and len(value) == 1)
        # the item-level n *is* the public row count
        assert item_res.nobs_users == 3001 and user_res.nobs_users == 997


# ---------------------------------------------------------------------------------------------
# Bad input: clear errors from the package hierarchy, naming the argument; nothing drawn
# ---------------------------------------------------------------------------------------------


class TestBadInput:
    df = items(n=300, seed=17, lo=0.0, hi=1.0).assign(
        z=lambda d: d["x"] ** 2, user=lambda d: np.arange(len(d)) % 30
    )

    def build(self, **kwargs: object) -> dplong.PriestleyChao:
        options: dict[str, object] = {"domain": (0, 1), "bandwidth": 0.1}
        options.update(kwargs)
        data = options.pop("data", self.df)
        formula = options.pop("formula", "y ~ x")
        return dplong.PriestleyChao.from_formula(formula, data, **options)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"data": df.assign(x=df["x"] * 2)}, DataError, r"public domain \[0, 1\]"),
            ({"bandwidth": 0.0}, ParameterError, "bandwidth must be a positive number"),
            ({"bandwidth": -0.1}, ParameterError, "bandwidth must be a positive number"),
            ({"bandwidth": math.inf}, ParameterError, "bandwidth must be a positive number"),
            ({"bandwidth": None}, ParameterError, "bandwidth must be a positive number"),
            ({"bandwidth": "wide"}, ParameterError, 'bandwidth must be .* or "auto"'),
            ({"grid": []}, ParameterError, "grid must be .* non-empty"),
            ({"grid": 1}, ParameterError, "grid must have between 2 and"),
            ({"grid": 10**6}, ParameterError, "grid must have between 2 and 10000"),
            ({"grid": "fine"}, ParameterError, "grid must be"),
            ({"grid": [0.5, 1.5]}, ParameterError, r"grid points .* inside the domain"),
            ({"grid": [-0.1, 0.5]}, ParameterError, r"grid points .* inside the domain"),
            ({"domain": (1, 0)}, ParameterError, "domain must be finite with lo < hi"),
            ({"domain": (0, 0)}, ParameterError, "domain must be finite with lo < hi"),
            ({"domain": (0, math.inf)}, ParameterError, "domain must be finite"),
            ({"domain": (0, 1, 2)}, ParameterError, r"domain must be a pair \(lo, hi\)"),
            ({"domain": None}, ParameterError, r"domain must be a pair \(lo, hi\)"),
            ({"formula": "y ~ x + z"}, FormulaError, r"one regressor .* \['x', 'z'\]"),
            ({"formula": "y ~ 1"}, FormulaError, "one regressor"),
            ({"formula": "y ~ x + z", "groups": "user"}, FormulaError, "one regressor"),
            ({"formula": "nope ~ x"}, FormulaError, "nope"),
            (
                {"data": df.assign(x=df["x"].where(df.index != 3))},
                DataError,
                "design points must be finite and complete",
            ),
            ({"data": df.iloc[:1]}, DataError, "at least 2 rows"),
            ({"data": df.to_numpy()}, DataError, "DataFrame"),
            ({"bandwidth": "auto", "groups": "user"}, ParameterError, 'bandwidth="auto"'),
            ({"kernel": "box"}, ParameterError, "kernel must be one of"),
        ],
        ids=lambda v: v if isinstance(v, str) else None,
    )
    def test_model_refuses(self, kwargs: dict[str, object], error: type, match: str) -> None:
        with pytest.raises(error, match=match):
            self.build(**kwargs)

    # fit refusals of either design: before any draw and any charge
    @pytest.mark.parametrize(
        ("level", "kwargs", "error", "match"),
        [
            ("item", {"scale": 1.0}, ParameterError, "scale= applies to user-level curves"),
            ("item", {"error_sd": None}, ParameterError, "error_sd .* is required"),
            ("item", {"error_sd": -1.0}, ParameterError, "error_sd .* positive number"),
            ("item", {"error_sd": "big"}, ParameterError, "error_sd .* positive number"),
            ("item", {"amplitude": None}, ParameterError, "amplitude .* or sup_norm is needed"),
            ("item", {"amplitude": 0.0}, ParameterError, "amplitude .* positive number"),
            ("item", {"lipschitz": -1.0}, ParameterError, "lipschitz .* positive number"),
            ("item", {"sup_norm": math.nan}, ParameterError, "sup_norm .* positive number"),
            ("item", {"privacy": "local"}, ParameterError, 'privacy="local" needs bound'),
            ("item", {"privacy": "shuffle"}, ParameterError, "privacy must be one of"),
            ("item", {"epsilon": 0.0}, PrivacyParameterError, "epsilon"),
            ("item", {"delta": 1.5}, PrivacyParameterError, "delta"),
            ("user", {"error_sd": 1.0}, ParameterError, r"\['error_sd'\] do not apply to user"),
            ("user", {"amplitude": 1.0}, ParameterError, r"\['amplitude'\] do not apply"),
            ("user", {"lipschitz": 1.0}, ParameterError, "lipschitz and sup_norm .* item-level"),
            ("user", {"scale": AR1(0.5)}, ParameterError, "dependence model .* scale"),
            ("user", {"scale": [1.0, 2.0]}, ParameterError, "scale must be .* 11 numbers"),
            ("user", {"privacy": "local"}, ParameterError, 'privacy="local" needs bound'),
        ],
    )
    def test_fit_refuses_before_any_draw(
        self, level: str, kwargs: dict[str, object], error: type, match: str
    ) -> None:
        if level == "item":
            model = self.build(grid=11)
            options: dict[str, object] = {"epsilon": 1.0, "error_sd": 0.5, "amplitude": 1.0}
        else:
            model = self.build(groups="user", grid=11)
            options = {"epsilon": 1.0, "scale": 1.0}
        options.update(kwargs)
        rng = np.random.default_rng(18)
        state = rng.bit_generator.state
        accountant = dplong.Accountant(epsilon=10.0, delta=0.1)
        with pytest.raises(error, match=match):
            model.fit(random_state=rng, accountant=accountant, **options)  # type: ignore[arg-type]
        assert rng.bit_generator.state == state  # no random draw was made
        assert accountant.spent == []


# ---------------------------------------------------------------------------------------------
# One public model, one estimator per design
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# The fit option error_sd (the errors' bound) is not the results' noise_sd (the privacy noise)
# ---------------------------------------------------------------------------------------------


def test_error_sd_bounds_the_errors_and_noise_sd_is_the_privacy_noise() -> None:
    """``fit(error_sd=σ_max)`` states the public bound on the errors' sd: it sets the sampling
    sd (``σ_max √(Σ_i a_i(x)²)``, Lemma 4.9), not the privacy noise. The results' ``noise_sd``
    is the privacy noise's sd: 0 with the noise off, smaller at a larger ε, never the stated
    σ_max. The option was named ``noise_sd`` before 0.1.0; that keyword is refused as any
    unknown one (an ``ArgumentError``, a ``TypeError`` too), before any draw and any charge,
    by both item-level smoothers."""
    df = items(n=2000, seed=14, lo=0.0, hi=1.0)
    grid = np.linspace(0.0, 1.0, 5)
    model = dplong.PriestleyChao.from_formula("y ~ x", df, domain=(0, 1), bandwidth=0.1, grid=5)
    stated = {"error_sd": 0.5, "amplitude": 1.0}
    res = model.fit(epsilon=1.0, random_state=0, **stated)
    weights = item_weights(df["x"].to_numpy(), grid, dplong.kernels.get_kernel("gaussian"), 0.1, 1)
    np.testing.assert_allclose(res.sampling_sd, 0.5 * np.sqrt((weights**2).sum(axis=0)))
    assert (res.noise_sd > 0).all() and not np.isclose(res.noise_sd, 0.5).any()
    wider = model.fit(epsilon=1.0, random_state=0, error_sd=1.0, amplitude=1.0)
    np.testing.assert_allclose(wider.sampling_sd, 2.0 * res.sampling_sd)
    more = model.fit(epsilon=4.0, random_state=0, **stated)
    np.testing.assert_allclose(more.sampling_sd, res.sampling_sd)
    assert (more.noise_sd < res.noise_sd).all()
    off = model.fit(**NOISE_OFF, **stated)
    assert (off.noise_sd == 0.0).all() and (off.sampling_sd > 0).all()

    nadaraya = dplong.NadarayaWatson.from_formula(
        "y ~ x", df, domain=(0, 1), bounds=(-3, 3), bandwidth=0.1, grid=5
    )
    for fit, options in ((model.fit, {"amplitude": 1.0}), (nadaraya.fit, {})):
        accountant = dplong.Accountant(epsilon=10.0, delta=0.1)
        rng = np.random.default_rng(3)
        state = rng.bit_generator.state
        with pytest.raises(ArgumentError, match="unexpected keyword argument 'noise_sd'"):
            fit(epsilon=1.0, noise_sd=0.5, accountant=accountant, random_state=rng, **options)
        assert rng.bit_generator.state == state and accountant.spent_epsilon == 0.0
    assert issubclass(ArgumentError, TypeError)


def test_from_formula_builds_the_estimator_of_the_design() -> None:
    from dplong.models.curves import UserCurves
    from dplong.models.smoother import ItemSmoother

    df = items(n=300, seed=17, lo=0.0, hi=1.0).assign(user=lambda d: np.arange(len(d)) % 30)
    item = dplong.PriestleyChao.from_formula("y ~ x", df, domain=(0, 1), bandwidth=0.1)
    user = dplong.PriestleyChao.from_formula(
        "y ~ x", df, groups="user", domain=(0, 1), bandwidth=0.1
    )
    assert isinstance(item, ItemSmoother) and isinstance(user, UserCurves)
    assert isinstance(item, dplong.PriestleyChao) and isinstance(user, dplong.PriestleyChao)
    # the public name stays the model's, whichever estimator serves it
    assert repr(item) == "PriestleyChao('y ~ x', n_users=300)"
    assert repr(user) == "PriestleyChao('y ~ x', n_users=30)"
    assert (item.level, user.level) == ("item", "user")


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::dplong.exceptions.DplongWarning")
def test_a_tiny_bandwidth_on_a_wide_domain_has_a_boundary_width() -> None:
    """Bandwidth 1e-300 over the domain (0, 1e300): their ratio underflowed to 0, and the
    boundary width's log(2/ratio) divided by it, after the fit's noise (an audit); it is now
    taken in logs. Such a fit releases nothing where the kernel reaches no point, and says
    why, as any other, without numpy's overflow warnings (the distances in bandwidths beyond
    the doubles, where the kernel is 0)."""
    warnings.simplefilter("error", RuntimeWarning)  # pytest restores the filters after the test
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, 8000)
    frame = pd.DataFrame({"x": x, "y": rng.normal(size=x.size), "u": np.repeat(np.arange(2000), 4)})
    kernel = dplong.kernels.get_kernel("gaussian")
    assert kernel.boundary_width(1e-300, (0.0, 1e300)) > 0.0
    wide = {"domain": (0.0, 1e300), "bandwidth": 1e-300, "grid": 5}
    users = dplong.PriestleyChao.from_formula("y ~ x", frame, groups="u", **wide)
    curve = dplong.NadarayaWatson.from_formula("y ~ x", frame, bounds=(-4.0, 4.0), **wide)
    for res in (users.fit(epsilon=1.0, random_state=0),
                curve.fit(epsilon=1.0, error_sd=1.0, random_state=0)):  # fmt: skip
        assert res.params.isna().all() and res.warnings
