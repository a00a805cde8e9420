"""The privacy noise of the within estimator pushed through its exact post-processing map
(:mod:`dplong.models.within`): a fixed-seed parametric bootstrap of the released design and
influence, and the bound on the influence's public centre."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dplong.models.within.basis import _Basis
from dplong.privacy.engine import Release

__all__ = ["NOISE_DRAWS", "NOISE_SEED"]

#: Monte Carlo draws (and their fixed seed) of the privacy noise pushed through β̂'s map.
NOISE_DRAWS, NOISE_SEED = 4000, 20240613


def _noise_law(
    solution: _Basis, influence: Release
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The standard deviation and mean of the privacy noise in β̂, by Monte Carlo through the
    post-processing map (:mod:`dplong.models.within`): the design's draws
    (:func:`_design_draws`), each pilot stepped by its mean influence plus a draw of the
    influence's noise."""
    p = solution.diagonal.size
    draws = _design_draws(solution)
    if draws is None:
        return np.zeros(p), np.zeros(p)
    rng, pilot, steps = draws
    influence_noise = _draws(rng, np.nan_to_num(influence.noise_sd), influence.noise_kind)
    errors = pilot + steps + influence_noise - solution.pilot
    return errors.std(axis=0), errors.mean(axis=0)


def _centre_bound(solution: _Basis, gamma: float) -> NDArray[np.float64]:
    """A bound, failing with probability at most γ, on the mean influence ``Â⁻¹ (b - A β₀)``:
    the pilot's error that the influence release corrects, and so the distance of its public
    centre 0 to the mean. The ``1 - γ`` quantile of the mean influence over the design's
    draws (:func:`_design_draws`, its noise), plus the design's clipping bias carried to the
    pilot to first order, ``|G D⁻¹| (B_y + B |β₀|)``. Post-processing of the released design."""
    p = solution.diagonal.size
    draws = _design_draws(solution)
    steps = np.zeros((1, p)) if draws is None else draws[2]
    noise = np.quantile(np.abs(steps), 1.0 - gamma, axis=0)
    pilot = np.nan_to_num(solution.pilot)
    bias = np.nan_to_num(solution.bias)  # a lost row: no basis, every coefficient withheld
    return np.asarray(noise + solution.spread @ (solution.outcome_bias + bias @ np.abs(pilot)))


def _design_draws(
    solution: _Basis,
) -> tuple[np.random.Generator, NDArray[np.float64], NDArray[np.float64]] | None:
    """:data:`NOISE_DRAWS` draws of the released design's noise (Laplace or Gaussian with the
    released standard deviations) around the released design ``A = G⁻ᵀ D G⁻¹``, ``b = A β₀``,
    each released row by row in the draw's own basis (a ``z_i'z_i`` below the identification
    threshold is held at it, as the fit would not have used it) and solved: every draw's pilot
    and its mean influence ``Â⁻¹ (b - A β₀)`` (n_draws x p each), and the generator for any
    further draws. A fixed seed: a deterministic function of released numbers. None when no
    regressor is in the basis or the pilot is not finite."""
    p = solution.diagonal.size
    used = np.isfinite(solution.diagonal)
    if not used.any() or not np.isfinite(solution.pilot).all():
        return None
    rng = np.random.default_rng(NOISE_SEED)
    truth_a = solution.design
    truth_b = truth_a @ solution.pilot
    g = np.tile(np.eye(p), (NOISE_DRAWS, 1, 1))
    diagonal = np.full((NOISE_DRAWS, p), np.inf)
    outcome = np.zeros((NOISE_DRAWS, p))
    for i in np.flatnonzero(used):
        noise = _draws(rng, solution.noise[i], solution.kinds[i])
        vector = g[:, :, i]
        products = vector @ truth_a  # the draw's z_i'x_j, before its noise
        square = np.einsum("dm,dm->d", products, vector) + noise[:, 0]
        diagonal[:, i] = np.maximum(square, solution.threshold[i])
        ratios = (products[:, i + 1 :] + noise[:, 1:-1]) / diagonal[:, i, None]
        g[:, :, i + 1 :] -= vector[:, :, None] * ratios[:, None, :]
        outcome[:, i] = vector @ truth_b + noise[:, -1]
    scaled = g / diagonal[:, None, :]
    pilot = np.einsum("dji,di->dj", scaled, outcome)
    residual = truth_b - pilot @ truth_a
    inverse = scaled @ np.swapaxes(g, 1, 2)
    return rng, pilot, np.einsum("dij,dj->di", inverse, residual)


def _draws(rng: np.random.Generator, sd: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    """:data:`NOISE_DRAWS` draws of independent noise with these standard deviations: Laplace
    (the lattice Laplace to its precision), or Gaussian (the discrete Gaussian, likewise)."""
    if kind == "gaussian":
        return rng.normal(0.0, 1.0, (NOISE_DRAWS, sd.size)) * sd
    return rng.laplace(0.0, 1.0 / math.sqrt(2.0), (NOISE_DRAWS, sd.size)) * sd
