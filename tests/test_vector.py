"""The vector release of a linear smoother (``privacy/vector.py``) and its mechanisms.

``release_weighted_sums``: the L1 calibration of one lattice Laplace vector (exact unit checks,
docs/design §5.1); ``release_linear``: the choice between it, the L2 discrete Gaussian and the
local reports, and each one's ledger entry.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.typing import NDArray

from dplong.kernels import get_kernel, item_weights
from dplong.privacy.budget import VectorBudget
from dplong.privacy.noise import COARSE_BITS, release_weighted_sums
from dplong.privacy.vector import VectorRelease, release_linear


def test_weighted_sums_noise_off_are_exact() -> None:
    # regression: the lattice step was fixed at 2**-COARSE_BITS of the sensitivity per
    # coordinate whatever ε, so the noise-off release was off by up to ~1e-3 (half a step)
    rng = np.random.default_rng(6)
    weights = rng.uniform(0.0, 1.0, (300, 7)) / 300
    clipped = rng.uniform(-50.0, 50.0, 300)
    release = release_weighted_sums(clipped, 50.0, weights, 1e300, rng)
    np.testing.assert_allclose(release.total, weights.T @ clipped, rtol=1e-13, atol=1e-13)
    assert np.all(release.total / release.step == np.round(release.total / release.step))


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
# release_linear: the mechanism for the budget, and its ledger entry
# ---------------------------------------------------------------------------------------------


def _kernel_weights(points: int) -> NDArray[np.float64]:
    x = np.arange(400) / 400
    return item_weights(x, np.linspace(0.0, 1.0, points), get_kernel("gaussian"), 0.3, 1.0)


def _release(
    values: NDArray[np.float64], points: int, budget: VectorBudget, *, local: bool = False
) -> VectorRelease:
    rng = np.random.default_rng(points)
    weights = _kernel_weights(points)
    return release_linear(values, 1.0, weights, budget, rng, local=local, target=f"{points}")


def test_release_linear_takes_the_mechanism_with_less_noise() -> None:
    # a row's L1 mass over G points within a bandwidth grows like G, its L2 mass like √G: the
    # Gaussian wins on a fine grid, the Laplace on a coarse one (same ε and ρ)
    budget = VectorBudget(epsilon=1.0, rho=0.05)
    fine, coarse = _release(np.zeros(400), 300, budget), _release(np.zeros(400), 3, budget)
    assert (fine.kind, coarse.kind) == ("gaussian", "laplace")
    assert (fine.entry.rho, fine.entry.epsilon) == (0.05, 0.0)
    assert (coarse.entry.epsilon, coarse.entry.rho) == (1.0, 0.0)
    assert (fine.entry.target, fine.entry.stage) == ("300", "mean")
    # without ρ (no δ) only the Laplace release is possible, and it is noisier
    pure = _release(np.zeros(400), 300, VectorBudget(1.0))
    assert pure.kind == "laplace" and (pure.sd > fine.sd).all()


@pytest.mark.parametrize(
    ("budget", "kind"),
    [(VectorBudget(1e300), "laplace"), (VectorBudget(1.0, 1e300), "gaussian")],
)
def test_release_linear_noise_off_is_the_smoother(budget: VectorBudget, kind: str) -> None:
    values = np.random.default_rng(1).uniform(-1.0, 1.0, 400)
    out = _release(values, 9, budget)
    assert out.kind == kind
    np.testing.assert_allclose(out.total, _kernel_weights(9).T @ values, rtol=0, atol=1e-12)


def test_release_linear_local_smooths_each_units_report() -> None:
    # each unit's report carries its own noise: the curve's noise sd is the report sd times
    # the weights' L2 norm per point, and the sensitivity is of one report (2 radius)
    out = _release(np.zeros(400), 5, VectorBudget(2.0), local=True)
    assert out.kind == "normal" and out.entry.mechanism == "local lattice Laplace (Alg 8)"
    assert out.entry.epsilon == 2.0 and out.entry.sensitivity >= 2.0
    report_sd = out.sd / np.sqrt((_kernel_weights(5) ** 2).sum(axis=0))
    np.testing.assert_allclose(report_sd, report_sd[0])
    assert report_sd[0] == pytest.approx(math.sqrt(2.0) * out.scale[0], rel=1e-3)


@pytest.mark.parametrize(
    ("budget", "kind"),
    [(VectorBudget(1e300), "laplace"), (VectorBudget(1.0, 1e300), "gaussian")],
)
def test_release_linear_takes_one_value_a_unit_and_point(budget: VectorBudget, kind: str) -> None:
    """Centrally a unit may bring one value per coordinate (n x G, each clipped to the radius):
    the sums are ``Σ_i w_ig v_ig`` and the sensitivity is that of one value a unit (replacing
    a unit moves coordinate g by at most ``2 r |w_ig|`` either way), so a matrix whose columns
    are all the same vector releases exactly what the vector does, with the same noise."""
    rng = np.random.default_rng(2)
    weights = _kernel_weights(9)
    values = rng.uniform(-1.0, 1.0, (400, 9))
    out = release_linear(values, 1.0, weights, budget, rng, local=False, target="9", stage="x")
    assert out.kind == kind and out.entry.stage == "x"
    np.testing.assert_allclose(out.total, (weights * values).sum(axis=0), rtol=0, atol=1e-12)
    column = values[:, 0]
    for noisy in (VectorBudget(1.0), VectorBudget(0.0, 0.5)):
        same = release_linear(
            np.repeat(column[:, None], 9, axis=1), 1.0, weights, noisy, np.random.default_rng(3),
            local=False, target="9",
        )  # fmt: skip
        vector = release_linear(
            column, 1.0, weights, noisy, np.random.default_rng(3), local=False, target="9"
        )
        # the same draws; the sums may differ in their last bits (the order of the additions),
        # which the lattice rounding keeps within one step, far below 1e-4 noise sds
        np.testing.assert_allclose(same.total, vector.total, rtol=0, atol=1e-4 * same.sd[0])
        assert same.entry == vector.entry
