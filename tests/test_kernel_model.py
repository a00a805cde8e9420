"""Reference, results, leak and bad-input tests of ``dplong.PriestleyChao`` (issue 4).

Paper: ``papers/dp-dependent-data.md`` §4.4 (Def 4.7-4.8, Lemma 4.9) and §6.2.1 (Cor 6.7).
The statistical behaviour (rates, coverage, error bounds) is checked in
``test_kernel_statistics.py`` and the privacy claims in ``test_privacy_audit_kernel.py``.

Reference tests (docs/design §5.2): with ε = 1e300 every geometric draw is exactly 0 and the
lattice step of every release is ~1e-16 of its range, and with wide radii nothing is clipped,
so the release must equal the Priestley-Chao estimator of Def 4.8, computed here plainly in
numpy (a loop over grid points, no package code), to 1e-10.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import struct
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

import dplong
from dplong.dependence import AR1
from dplong.exceptions import (
    DataError,
    DplongWarning,
    FormulaError,
    ParameterError,
    PrivacyParameterError,
)
from dplong.kernels import get_kernel
from dplong.models.kernel import item_weights
from dplong.privacy.accounting import compose
from dplong.privacy.noise import COARSE_BITS, release_weighted_sums

matplotlib.use("Agg")

NOISE_OFF = {"epsilon": 1e300, "delta": 0.5, "random_state": 0}
WIDE = {"noise_sd": 1e3, "amplitude": 1e3}  # radii ~1e4: nothing is clipped
KERNELS = ("gaussian", "epanechnikov")


def gaussian(u: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.exp(-0.5 * u**2) / math.sqrt(2.0 * math.pi)


def epanechnikov(u: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.where(np.abs(u) <= 1.0, 0.75 * (1.0 - u**2), 0.0)


KERNEL_FUNCTIONS = {"gaussian": gaussian, "epanechnikov": epanechnikov}


def priestley_chao(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    grid: NDArray[np.float64],
    bandwidth: float,
    kernel: str,
    hi: float,
) -> NDArray[np.float64]:
    """Def 4.8: f̂(g) = Σ_i (x_(i+1) - x_(i)) / b · K((g - x_(i)) / b) · Y_(i), sorted by x, the
    last spacing to the domain's end ``hi``."""
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    spacing = np.diff(np.append(xs, hi))
    k = KERNEL_FUNCTIONS[kernel]
    return np.array([np.sum(spacing / bandwidth * k((g - xs) / bandwidth) * ys) for g in grid])


def user_curve(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    grid: NDArray[np.float64],
    bandwidth: float,
    kernel: str,
    hi: float,
) -> NDArray[np.float64]:
    """One user's curve as the package defines it: the Priestley-Chao sum over the user's own
    visits divided by their kernel mass Σ w K / b, NaN where that mass is below 1/4."""
    ones = np.ones_like(y)
    mass = priestley_chao(x, ones, grid, bandwidth, kernel, hi)
    sums = priestley_chao(x, y, grid, bandwidth, kernel, hi)
    return np.where(mass >= 0.25, sums / np.where(mass > 0, mass, 1.0), np.nan)


def zeta(bandwidth: float, length: float, kernel: str) -> float:
    """Lemma 4.9's boundary width ζ = b √(2 log(2/b)) (b relative to the domain's length);
    a kernel supported on [-1, 1] loses no mass beyond ζ = b."""
    gaussian_zeta = bandwidth * math.sqrt(2.0 * math.log(2.0 * length / bandwidth))
    return gaussian_zeta if kernel == "gaussian" else min(bandwidth, gaussian_zeta)


def items(n: int = 400, seed: int = 0, lo: float = -1.0, hi: float = 3.0) -> pd.DataFrame:
    """Item-level rows at unequally spaced design points in [lo, hi], rows shuffled."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(lo, hi, n))
    y = np.sin(x) + rng.normal(0.0, 0.5, n)
    frame = pd.DataFrame({"x": x, "y": y})
    return frame.sample(frac=1.0, random_state=seed + 1).reset_index(drop=True)


def growth_panel(n: int = 40, seed: int = 3) -> pd.DataFrame:
    """User-level rows: 1-12 visits per user at random times in [0, 2], user levels, missing
    responses (one user has none left), rows shuffled."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 13, n)
    user = np.repeat(np.arange(n), sizes)
    x = rng.uniform(0.0, 2.0, user.size)
    y = np.cos(x) + rng.normal(size=n)[user] + rng.normal(0.0, 0.3, user.size)
    frame = pd.DataFrame({"user": user, "x": x, "y": y})
    frame.loc[rng.random(len(frame)) < 0.15, "y"] = np.nan
    frame.loc[frame["user"] == 5, "y"] = np.nan
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Reference: noise off, nothing clipped → the plain Priestley-Chao estimator (docs/design §5.2)
# ---------------------------------------------------------------------------------------------


class TestReference:
    @pytest.mark.parametrize("kernel", KERNELS)
    @pytest.mark.parametrize("grid", [None, 17, np.array([-1.0, -0.2, 0.5, 1.25, 2.9, 3.0])])
    def test_item_level_equals_priestley_chao(
        self, kernel: str, grid: int | NDArray[np.float64] | None
    ) -> None:
        df = items()
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(-1.0, 3.0), kernel=kernel, bandwidth=0.3, grid=grid
        )
        res = model.fit(**WIDE, **NOISE_OFF)
        expected = priestley_chao(df["x"].to_numpy(), df["y"].to_numpy(), res.grid, 0.3, kernel, 3)
        np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=0, atol=1e-10)
        assert res.nobs_users == 400 and res.level == "item" and res.bandwidth == 0.3
        if grid is None:  # default: points one bandwidth apart over the domain
            assert res.grid.size == round(4.0 / 0.3) + 1 and res.grid[[0, -1]].tolist() == [-1, 3]
        elif isinstance(grid, int):
            np.testing.assert_allclose(res.grid, np.linspace(-1.0, 3.0, grid), atol=1e-12)
        # the non-private estimator the benchmarks compare with is the same computation
        weights = item_weights(
            df["x"].to_numpy(), res.grid, dplong.kernels.get_kernel(kernel), 0.3, 3.0
        )
        np.testing.assert_allclose(weights.T @ df["y"].to_numpy(), expected, atol=1e-12)

    def test_item_level_auto_bandwidth_equals_priestley_chao(self) -> None:
        df = items(n=2000, seed=4, lo=0.0, hi=1.0)
        res = dplong.PriestleyChao.from_formula("y ~ x", df, domain=(0, 1)).fit(**WIDE, **NOISE_OFF)
        b = res.bandwidth
        assert 0 < b < 0.5
        expected = priestley_chao(
            df["x"].to_numpy(), df["y"].to_numpy(), res.grid, b, "gaussian", 1
        )
        np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=0, atol=1e-10)

    def test_item_level_missing_response_contributes_the_centre(self) -> None:
        df = items(seed=5)
        missing = df.index[::7]
        df.loc[missing, "y"] = np.nan
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(-1.0, 3.0), bandwidth=0.3, grid=11
        )
        assert model.nobs_users == 400  # every row is a unit: n does not change
        res = model.fit(**WIDE, **NOISE_OFF)
        assert res.nobs_users == 400 and np.isfinite(res.params).all()
        centre = float(res.projection_interval.mean(axis=1).iloc[0])
        filled = df["y"].fillna(centre).to_numpy()  # the released centre, not 0 or a drop
        expected = priestley_chao(df["x"].to_numpy(), filled, res.grid, 0.3, "gaussian", 3)
        np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=0, atol=1e-10)

    @pytest.mark.parametrize("kernel", KERNELS)
    def test_user_level_equals_mean_of_users_curves(self, kernel: str) -> None:
        df = growth_panel()
        grid = np.linspace(0.0, 2.0, 9)
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", df, groups="user", domain=(0, 2), kernel=kernel, bandwidth=0.3, grid=grid
        )
        # users cover different x ranges, so few have a curve at some points: the fit says so
        with pytest.warns(DplongWarning, match="have a statistic of their own"):
            res = model.fit(scale=1e6, **NOISE_OFF)
        assert res.nobs_users == 40 and res.level == "user"
        curves = []
        for user in range(40):  # each user's own curve, rows with a response, sorted by x
            rows = df[(df["user"] == user) & df["y"].notna()]
            if rows.empty:  # user 5: no row left, no curve anywhere
                curves.append(np.full(grid.size, np.nan))
                continue
            x, y = rows["x"].to_numpy(), rows["y"].to_numpy()
            curves.append(user_curve(x, y, grid, 0.3, kernel, 2.0))
        curves_ = np.array(curves)
        # the mean over the users whose visits cover each grid point, counted exactly (noise
        # off): per grid point, not a fixed set of users
        np.testing.assert_allclose(
            res.params.to_numpy(), np.nanmean(curves_, axis=0), rtol=0, atol=1e-10
        )
        np.testing.assert_array_equal(res.users.to_numpy(), np.isfinite(curves_).sum(axis=0))

    def test_weighted_sums_noise_off_are_exact(self) -> None:
        # regression: the lattice step was fixed at 2**-COARSE_BITS of the sensitivity per
        # coordinate whatever ε, so the noise-off release was off by up to ~1e-3 (half a step)
        rng = np.random.default_rng(6)
        weights = rng.uniform(0.0, 1.0, (300, 7)) / 300
        clipped = rng.uniform(-50.0, 50.0, 300)
        release = release_weighted_sums(clipped, 50.0, weights, 1e300, rng)
        np.testing.assert_allclose(release.total, weights.T @ clipped, rtol=1e-13, atol=1e-13)
        assert np.all(release.total / release.step == np.round(release.total / release.step))


# ---------------------------------------------------------------------------------------------
# release_weighted_sums: the L1 calibration (exact unit checks, docs/design §5.1)
# ---------------------------------------------------------------------------------------------


class TestWeightedSums:
    @pytest.mark.parametrize("epsilon", [0.05, 1.0, 8.0])
    def test_sensitivity_is_the_largest_row_l1_mass(self, epsilon: float) -> None:
        rng = np.random.default_rng(7)
        weights = rng.exponential(1.0, (50, 6)) * (rng.random((50, 6)) < 0.5)
        radius = 3.0
        release = release_weighted_sums(np.zeros(50), radius, weights, epsilon, rng)
        l1 = 2.0 * radius * np.abs(weights).sum(axis=1).max()
        # at least Δ₁ (plus the float allowance), at most the rounding of G lattice units more
        assert l1 <= release.sensitivity <= l1 * (1.0 + 2.0 * 6 * 2.0**-COARSE_BITS)
        # the lattice leaves Δ₁ at least G 2**COARSE_BITS steps
        assert l1 / release.step >= 6 * 2**COARSE_BITS
        # ε less the float slack 1200 u D G / ε of the sampler (1e-5 of ε at ε = 0.05)
        assert release.scale[0] == pytest.approx(release.sensitivity / epsilon, rel=1e-4)
        assert release.scale[0] >= release.sensitivity / epsilon  # never less noise
        # the geometric sd is √2 times its Laplace scale up to the lattice's discreteness
        assert release.sd[0] == pytest.approx(math.sqrt(2.0) * release.scale[0], rel=1e-3)

    def test_missing_values_contribute_zero_and_clipping_is_required(self) -> None:
        weights = np.ones((3, 2)) / 3
        rng = np.random.default_rng(8)
        out = release_weighted_sums(np.array([1.0, np.nan, -0.5]), 1.0, weights, 1e300, rng)
        np.testing.assert_allclose(out.total, [1.0 / 6.0, 1.0 / 6.0], atol=1e-15)
        with pytest.raises(AssertionError, match="clipped"):
            release_weighted_sums(np.array([1.5, 0.0, 0.0]), 1.0, weights, 1.0, rng)
        with pytest.raises(ValueError, match="epsilon too small"):
            release_weighted_sums(np.zeros(3), 1.0, weights, 1e-6, rng)

    def test_noise_has_the_reported_scale(self) -> None:
        # 20,000 draws of a 5-vector: the sample sd of each coordinate is within 4 SEs (SE of a
        # Laplace sample sd ≈ sd √((κ - 1) / (4 R)), κ = 6) of the reported sd
        rng = np.random.default_rng(9)
        weights = np.eye(5) / 10
        draws = np.array(
            [
                release_weighted_sums(np.zeros(5), 1.0, weights, 1.0, rng).total
                for _ in range(20_000)
            ]
        )
        sd = release_weighted_sums(np.zeros(5), 1.0, weights, 1.0, rng).sd[0]
        se = sd * math.sqrt(5.0 / (4 * 20_000))
        assert np.all(np.abs(draws.std(axis=0) - sd) < 4 * se)
        assert np.all(np.abs(draws.mean(axis=0)) < 4 * sd / math.sqrt(20_000))


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
            res = model.fit(epsilon=1.0, noise_sd=0.5, amplitude=1.0, random_state=0)
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

    def test_interior_points_lose_at_most_b_kernel_mass(self) -> None:
        # the reason for ζ: at x in [ζ, 1 - ζ] the Gaussian mass beyond the domain is at most
        # b (relative units), so Σ_i a_i(x) >= 1 - b - O(1/(n b)) (Riemann sum error, Lemma D.14)
        n, b = 20_000, 0.05
        x = np.arange(n) / n
        grid = np.linspace(0.0, 1.0, 201)
        mass = item_weights(x, grid, dplong.kernels.get_kernel("gaussian"), b, 1.0).sum(0)
        z = zeta(b, 1.0, "gaussian")
        interior = (grid >= z) & (grid <= 1 - z)
        riemann = gaussian(np.array(0.0))[()] / (n * b) * 2  # ‖K‖∞ / (n b), twice for safety
        assert np.all(1.0 - mass[interior] <= b / 2 + riemann)  # one end: at most b/2
        # at the ends themselves half the kernel's mass is missing: the estimate shrinks to 0
        assert mass[0] == pytest.approx(0.5, abs=riemann) and mass[-1] == pytest.approx(
            0.5, abs=0.01
        )

    def test_no_boundary_note_when_grid_is_interior(self) -> None:
        df = items(n=1000, seed=11, lo=0.0, hi=1.0)
        res = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=0.05, grid=[0.3, 0.5, 0.7]
        ).fit(epsilon=1.0, noise_sd=0.5, amplitude=1.0, random_state=0)
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
        epsilon=1.0, noise_sd=0.5, amplitude=1.0, lipschitz=1.0, sup_norm=1.0, random_state=0
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
            res.predict([np.nan])
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
        ).fit(epsilon=1.0, noise_sd=0.5, amplitude=1.0, random_state=0)
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

    def test_accountant_is_charged_once(self) -> None:
        df = items(n=2000, seed=13, lo=0.0, hi=1.0)
        model = dplong.PriestleyChao.from_formula("y ~ x", df, domain=(0, 1), bandwidth=0.1)
        acct = dplong.Accountant(epsilon=1.5, delta=1e-4)
        res = model.fit(
            epsilon=1.0, delta=5e-5, noise_sd=0.5, amplitude=1.0, accountant=acct, random_state=0
        )
        assert acct.spent_epsilon == pytest.approx(1.0, abs=1e-9)
        assert res.privacy.epsilon <= 1.0 + 1e-12 and res.privacy.delta <= 5e-5
        composed = compose((e.cost for e in res.privacy.entries), 5e-5)
        assert composed.epsilon == pytest.approx(res.privacy.epsilon)
        with pytest.raises(dplong.exceptions.BudgetExceededError):
            model.fit(epsilon=1.0, noise_sd=0.5, amplitude=1.0, accountant=acct)

    def test_central_and_local_item_level(self) -> None:
        n = 20_000
        df = items(n=n, seed=14, lo=0.0, hi=1.0)
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=0.1, grid=11
        )
        central = model.fit(epsilon=2.0, noise_sd=0.5, amplitude=1.0, random_state=0)
        local = model.fit(
            epsilon=2.0, noise_sd=0.5, amplitude=1.0, privacy="local", bound=2.0, random_state=0
        )
        assert central.privacy.model == "central" and local.privacy.model == "local"
        assert local.privacy.delta == 0.0 and local.privacy.epsilon == pytest.approx(2.0)
        assert "local lattice Laplace (Alg 8)" in [e.mechanism for e in local.privacy.entries]
        # central noise ∝ w ‖a‖₁ / ε with ‖a‖₁ ≈ 1/(n Δg) (a row's mass over the grid, spacing
        # Δg = b); local ∝ w √(Σ_i a_i²) / ε ≈ w √(∫K² / (n b)) / ε: a factor ~ √(n ∫K² b) / 1
        # ≈ 24 for equal w and ε (measured 8-12: the local interval is wider and the central
        # release spends part of ε on its refinement), growing like √n
        assert (local.noise_sd > 5 * central.noise_sd).all()
        # both are on target: the released curve is within 5 combined sds of the
        # non-private estimate with the same bandwidth and grid
        weights = item_weights(
            df["x"].to_numpy(), central.grid, dplong.kernels.get_kernel("gaussian"), 0.1, 1.0
        )
        plain = weights.T @ df["y"].to_numpy()
        for res in (central, local):
            assert (np.abs(res.params - plain) < 5 * res.noise_sd + 1e-3).all()
        assert local.variant == "paper (local)"  # the paper's Alg 8-9

    def test_fine_grid_releases_the_curve_by_its_l2_norm(self) -> None:
        # Many grid points within a bandwidth: a row's L1 mass over the grid grows like G, its
        # L2 mass like √G, so the discrete Gaussian (L2) release beats the Laplace (L1) one
        df = items(n=3000, seed=15, lo=0.0, hi=1.0)
        fine = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=0.3, grid=500
        ).fit(epsilon=1.0, delta=1e-6, noise_sd=0.5, amplitude=1.0, random_state=0)
        assert fine.noise_law == "gaussian"
        assert "L2 over the grid" in fine.privacy.entries[-1].mechanism
        assert fine.privacy.epsilon <= 1.0 + 1e-12 and fine.privacy.delta <= 1e-6
        # pure ε (δ = 0): only the Laplace release is possible, and it is noisier
        pure = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=0.3, grid=500
        ).fit(epsilon=1.0, delta=None, noise_sd=0.5, amplitude=1.0, random_state=0)
        assert pure.noise_law == "gaussian" or pure.privacy.delta > 0  # default δ = 1/n²
        laplace_only = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=0.3, grid=500
        ).fit(epsilon=1.0, delta=1e-300, noise_sd=0.5, amplitude=1.0, random_state=0)
        # at a vanishing δ the Gaussian's ρ is tiny: the Laplace wins
        assert laplace_only.noise_law == "laplace"
        assert (laplace_only.noise_sd > fine.noise_sd).all()


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
            epsilon=1.0, noise_sd=0.2, amplitude=0.5, lipschitz=1.0, sup_norm=200.0, random_state=0
        ),
        dplong.PriestleyChao.from_formula("y ~ x", item_df, domain=(0, 1), bandwidth=0.1).fit(
            epsilon=1.0, noise_sd=0.2, amplitude=0.5, privacy="local", bound=200.0, random_state=0
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

    def test_missing_response_is_allowed_item_level(self) -> None:
        df = self.df.assign(y=self.df["y"].where(self.df.index % 5 != 0))
        model = self.build(data=df)
        res = model.fit(epsilon=1.0, noise_sd=0.5, amplitude=1.0, random_state=0)
        assert res.nobs_users == 300 and np.isfinite(res.params).all()

    def test_infinite_response_is_missing_item_level(self) -> None:
        # the responses are private: an infinite one is a missing one (the centre), no refusal
        infinite = self.build(data=self.df.assign(y=self.df["y"].where(self.df.index != 3, np.inf)))
        missing = self.build(data=self.df.assign(y=self.df["y"].where(self.df.index != 3)))
        fits = [
            m.fit(epsilon=1.0, noise_sd=0.5, amplitude=1.0, random_state=0).params
            for m in (infinite, missing)
        ]
        pd.testing.assert_series_equal(*fits)

    def test_rows_outside_the_domain_are_dropped_user_level(self) -> None:
        # user-level the x are private: a row outside the public domain is a missing row
        later = (self.df.index % 7 == 0) & (self.df.index >= 30)  # not a user's first row
        moved = self.df.assign(x=self.df["x"].where(~later, 2.0))
        model = self.build(data=moved, groups="user")
        inside = self.build(data=moved[moved["x"] <= 1.0], groups="user")
        assert model.nobs_users == inside.nobs_users == 30
        np.testing.assert_array_equal(model._x, inside._x)
        np.testing.assert_array_equal(model._design.codes, inside._design.codes)

    @pytest.mark.parametrize(
        ("level", "kwargs", "error", "match"),
        [
            ("item", {"scale": 1.0}, ParameterError, "scale= applies to user-level curves"),
            ("item", {"noise_sd": None}, ParameterError, "noise_sd .* is required"),
            ("item", {"noise_sd": -1.0}, ParameterError, "noise_sd .* positive number"),
            ("item", {"noise_sd": "big"}, ParameterError, "noise_sd .* positive number"),
            ("item", {"amplitude": None}, ParameterError, "amplitude .* or sup_norm is needed"),
            ("item", {"amplitude": 0.0}, ParameterError, "amplitude .* positive number"),
            ("item", {"lipschitz": -1.0}, ParameterError, "lipschitz .* positive number"),
            ("item", {"sup_norm": math.nan}, ParameterError, "sup_norm .* positive number"),
            ("item", {"privacy": "local"}, ParameterError, 'privacy="local" needs bound'),
            ("item", {"privacy": "shuffle"}, ParameterError, "privacy must be one of"),
            ("item", {"epsilon": 0.0}, PrivacyParameterError, "epsilon"),
            ("item", {"delta": 1.5}, PrivacyParameterError, "delta"),
            ("user", {"noise_sd": 1.0}, ParameterError, r"\['noise_sd'\] do not apply to user"),
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
            options: dict[str, object] = {"epsilon": 1.0, "noise_sd": 0.5, "amplitude": 1.0}
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


def test_item_level_estimates_the_response_scale_when_nothing_is_stated() -> None:
    """``fit(epsilon=...)`` alone: the responses' spread is estimated privately in one stage.

    The responses' sd is √(Var f(x) + σ²) = √(0.5 + 0.25) ≈ 0.87; their median absolute
    deviation over 0.6745 estimates it up to the rank error of the private median (a few
    per cent at n = 20,000) and the non-normal shape of sin(2πx) + noise, so the released
    variance proxy lies within [0.5, 1.2]. The ledger spends exactly ε, the scale stage is on it,
    and the curve differs from the non-private smoother by at most its privacy-noise bound at
    α = 0.001 (Laplace noise exceeds it at a point with probability 0.0005, so all 7 interior
    points hold with probability above 0.996 whatever the seed).
    """
    rng = np.random.default_rng(8)
    n = 20_000
    x = np.arange(n) / n
    y = np.sin(2 * np.pi * x) + rng.normal(0, 0.5, n)
    model = dplong.PriestleyChao.from_formula(
        "y ~ x", pd.DataFrame({"x": x, "y": y}), domain=(0, 1), bandwidth=0.05, grid=11
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", DplongWarning)
        res = model.fit(epsilon=1.0, random_state=0)
    assert res.privacy.epsilon == pytest.approx(1.0)
    assert "scale" in {e.stage for e in res.privacy.entries}
    rho = float(
        res.sampling_sd.iloc[5] ** 2
        / (item_weights(x, res.grid, get_kernel("gaussian"), 0.05, 1.0) ** 2).sum(axis=0)[5]
    )
    assert 0.5 <= rho <= 1.2
    weights = item_weights(x, res.grid, get_kernel("gaussian"), 0.05, 1.0)
    smooth = weights.T @ y
    inner = ~res.boundary.to_numpy()
    gap = np.abs(res.params.to_numpy() - smooth)[inner]
    assert np.all(gap <= res.error_bound(alpha=0.001).table["privacy noise"].to_numpy()[inner])


def test_item_level_scale_warnings_reach_the_results() -> None:
    """The paper's pipeline (``variant="theory"``) estimates the responses' scale by CoinPress;
    what that plug-in warns of (here: 300 points at ε = 1 are too few for its steps, and the
    estimate sits at its upper bound) is said once on the warnings channel and kept in the
    results' notes, which summary() and the report show."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, 300)
    frame = pd.DataFrame({"x": x, "y": np.sin(2 * np.pi * x) + rng.normal(0.0, 0.3, 300)})
    model = dplong.PriestleyChao.from_formula("y ~ x", frame, domain=(0, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = model.fit(epsilon=1.0, variant="theory", random_state=0)
    said = [str(w.message) for w in caught if issubclass(w.category, DplongWarning)]
    unreliable = [s for s in said if s.startswith("the private scale will be unreliable")]
    assert len(unreliable) == 1
    assert unreliable[0] in res.warnings
    assert set(said) <= set(res.warnings)
    assert unreliable[0][:40] in str(res.summary())


def test_item_level_curve_reads_the_scale_stage_verdicts() -> None:
    """The responses go through the same scale stage as every release, and the curve obeys
    its verdicts. 97 % of 2000 responses are exactly 0 and the other 58 are 1 + Exp(3) (the
    true smooth is 0.03 x 4 = 0.12 everywhere): either the scale stage's count of those 58
    sizes a second median for them and the curve's intervals are honest (wide: the 58 carry
    the whole signal), or its count cannot see them at all and the note says how many could
    go unseen. Before the curve read the verdicts it was released as 0 with intervals [-0, 0]
    and no warning, for every seed; before the second median (2026-11-26, ninth session) 18 of
    these 20 seeds were withheld. Measured: 18 released (each covering 0.12 at 0.88-1.0 of
    its 25 grid points, 0.96 on average; pointwise 95 % intervals), 2 noted."""
    rng = np.random.default_rng(0)
    n = 2000
    x = rng.uniform(0.0, 1.0, n)
    y = np.where(rng.uniform(size=n) < 0.97, 0.0, 1.0 + rng.exponential(3.0, n))
    model = dplong.PriestleyChao.from_formula(
        "y ~ x", pd.DataFrame({"x": x, "y": y}), domain=(0, 1)
    )
    released, noted, covered = 0, 0, []
    for seed in range(20):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            res = model.fit(epsilon=8.0, random_state=seed)
        if res.reliable:
            released += 1
            ci = res.conf_int().to_numpy()
            covered.append(float(np.mean((ci[:, 0] <= 0.12) & (0.12 <= ci[:, 1]))))
        else:
            noted += 1
            assert any("could go unseen" in w for w in res.warnings)
    assert released and noted  # both paths ran (18 and 2 of these 20 seeds)
    # pointwise 95 % intervals, errors correlated along the grid: a fit's share covered may
    # dip (measured 0.88 at least), the average over fits stays near nominal
    assert min(covered) >= 0.75 and np.mean(covered) >= 0.9


def test_item_level_curve_is_withheld_when_the_scale_falls_below_resolution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A private scale below the responses' resolution around the midpoint (a median that
    missed below every response) would project them all onto the midpoint with a zero error
    bound: the curve is withheld with a note, as :func:`release_means` withholds such a mean.
    Such a miss is a rare bad event, so it is forced here by shrinking the located scale."""
    from dplong.models import kernel as kernel_module

    located = kernel_module.locate

    def missed_low(*args: object, **kwargs: object) -> object:
        where = located(*args, **kwargs)  # type: ignore[arg-type]
        tiny = np.abs(where.midpoint) * 2.0**-45
        return dataclasses.replace(where, sd=tiny)

    monkeypatch.setattr(kernel_module, "locate", missed_low)
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 1.0, 1000)
    frame = pd.DataFrame({"x": x, "y": 5.0 + rng.normal(0.0, 1.0, 1000)})
    res = dplong.PriestleyChao.from_formula("y ~ x", frame, domain=(0, 1)).fit(
        epsilon=1.0, random_state=0
    )
    assert res.params.isna().all() and res.bse.isna().all()
    assert any("below their resolution" in w for w in res.warnings)
    assert res.privacy.epsilon <= 1.0
