"""Dependence models: ρ_u for any number of rows T (dplong.dependence)."""

from __future__ import annotations

import numpy as np
import pytest

import dplong.dependence as dependence
from dplong.dependence import AR1, MAX_DENSE_ROWS


@pytest.mark.parametrize("phi", [0.5, -0.7, 0.95, 0.999])
def test_ar1_tridiagonal_path_matches_the_dense_one(
    phi: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = AR1(phi, variance=2.0)
    dense = model.log_sobolev_constant(500)
    monkeypatch.setattr(dependence, "MAX_DENSE_ROWS", 10)
    # both solve a symmetric eigenproblem to machine precision; the tridiagonal one works on
    # the inverse, whose condition number (1+|φ|)²/(1-|φ|)² ≈ 4e6 at φ = 0.999 costs digits
    assert model.log_sobolev_constant(500) == pytest.approx(dense, rel=1e-8)


@pytest.mark.parametrize("phi", [0.3, -0.9, 0.99])
def test_ar1_any_length_increases_to_the_spectral_limit(phi: float) -> None:
    model = AR1(phi)
    limit = (1 + abs(phi)) / (1 - abs(phi))
    lengths = [MAX_DENSE_ROWS + 1, 10**4, 10**5, 10**5 + 1, 10**300]
    values = np.array([model.log_sobolev_constant(T) for T in lengths])
    assert np.all(np.diff(values) >= -1e-9 * limit)  # interlacing: ρ_u never falls with T
    assert np.all(values <= limit * (1 + 1e-12))
    assert values[-1] == limit
    assert model.mean_scale(T=10**300) == pytest.approx(limit / 1e300)
