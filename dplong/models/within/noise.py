"""The privacy noise of the within estimator pushed through its exact post-processing map
(:mod:`dplong.models.within`): a fixed-seed parametric bootstrap of the released design and
influence, and the bound on the influence's public centre."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.models.within.basis import _Basis
from dplong.privacy.engine import Release

__all__ = ["NOISE_DRAWS", "NOISE_SEED"]

#: Monte Carlo draws (and their fixed seed) of the privacy noise pushed through β̂'s map.
NOISE_DRAWS, NOISE_SEED = 4000, 20240613


def _noise_law(
    solution: _Basis, walk: _Walk, influence: Release
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The standard deviation and mean of the privacy noise in β̂, by Monte Carlo through the
    post-processing map (:mod:`dplong.models.within`): the design's draws
    (:func:`_design_draws`), each pilot stepped as the fit stepped it (the ``walk``,
    :func:`_walk`: by its mean influence plus a draw of each early step's noise, where that
    step is used), then by its mean influence at the last β plus a draw of the last step's
    noise (an early step's noise is corrected by the next up to the design's error, which the
    draws carry)."""
    p = solution.diagonal.size
    if walk.draws is None:
        return np.zeros(p), np.zeros(p)
    rng, _, inverse = walk.draws
    influence_noise = _draws(rng, np.nan_to_num(influence.noise_sd), influence.noise_kind)
    stepped = walk.stepped
    errors = stepped + _steps(solution, inverse, stepped) + influence_noise - solution.pilot
    return errors.std(axis=0), errors.mean(axis=0)


@dataclass(frozen=True)
class _Walk:
    """The Newton steps before the last, replayed on released numbers (:func:`_walk`): each
    step's centre bound (one more than the steps: the last step's too), which coefficients
    each moves, its moves, and the design's draws stepped as the fit stepped."""

    bounds: list[NDArray[np.float64]]
    used: list[NDArray[np.bool_]]
    moves: list[NDArray[np.float64]]
    draws: tuple[np.random.Generator, NDArray[np.float64], NDArray[np.float64]] | None
    stepped: NDArray[np.float64]


def _walk(solution: _Basis, early: Sequence[Release], gamma: float) -> _Walk:
    """The early Newton steps' public facts. Step k's centre bound ``c_k`` bounds, failing with
    probability at most γ, its mean influence ``Â⁻¹ A (β̃ - β_k)``: for the pilot
    (``Â⁻¹ (b - A β₀)``, the distance of the first step's public centre 0 to its mean) the
    ``1 - γ`` quantile over the design's draws (:func:`_design_draws`, its noise) plus the
    design's clipping bias carried to the pilot to first order, ``|G D⁻¹| (B_y + B |β₀|)``;
    after a step, the smaller of (a) the quantile over the
    draws each stepped with a draw of the step's released noise, plus its bias bound, plus the
    design's bias acting on the error it corrected, ``|G D⁻¹| B c_k``, and (b) by the triangle
    inequality ``c_k + |Â⁻¹ A (β_{k+1} - β_k)|`` over the draws plus the same carried bias ((a)
    is tight where the design is precise, (b) stays finite where it is not). A step is used
    where its noise sd and bias bound are within ``c_k`` (it can bring β nearer; a step whose
    scale the engine located far off is not), else β keeps its value there. Post-processing
    of released numbers."""
    p = solution.diagonal.size
    draws = _design_draws(solution)
    pilot = np.nan_to_num(solution.pilot)
    bias = np.nan_to_num(solution.bias)  # a lost row: no basis, every coefficient withheld
    carried = solution.spread @ (solution.outcome_bias + bias @ np.abs(pilot))
    if draws is None:
        stepped = np.zeros((1, p))
        bound = np.asarray(carried)
    else:
        stepped = draws[1]
        steps = _steps(solution, draws[2], stepped)
        bound = np.quantile(np.abs(steps), 1.0 - gamma, axis=0) + carried
    bounds, moves, steps_used = [np.asarray(bound)], [], []
    for release in early:
        with np.errstate(invalid="ignore"):
            used = (
                np.isfinite(release.estimate)
                & (release.noise_sd + release.bias <= bound)
                & ~solution.withheld
            )
        move = np.where(used, release.estimate, 0.0)
        moves.append(move)
        steps_used.append(used)
        carried = solution.spread @ (bias @ bound)
        step_bias = np.where(used, np.nan_to_num(release.bias), 0.0)
        if draws is None:
            bound = np.asarray(step_bias + carried)
        else:
            rng, _, inverse = draws
            noise = _draws(rng, np.nan_to_num(release.noise_sd), release.noise_kind)
            stepped = stepped + np.where(used, _steps(solution, inverse, stepped) + noise, 0.0)
            left = np.quantile(np.abs(_steps(solution, inverse, stepped)), 1.0 - gamma, axis=0)
            pushed = np.einsum("dij,jk,k->di", inverse, solution.design, move)
            direct = bound + np.quantile(np.abs(pushed), 1.0 - gamma, axis=0)
            bound = np.minimum(left + step_bias, direct) + carried
        bounds.append(np.asarray(bound))
    return _Walk(bounds, steps_used, moves, draws, stepped)


def _steps(
    solution: _Basis, inverse: NDArray[np.float64], beta: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Every draw's mean influence ``Â⁻¹ (b - A β)`` at its own β (n_draws x p), around the
    released design ``A``, ``b = A β₀``."""
    truth_a = solution.design
    residual = truth_a @ solution.pilot - beta @ truth_a
    return np.asarray(np.einsum("dij,dj->di", inverse, residual))


def _design_draws(
    solution: _Basis,
) -> tuple[np.random.Generator, NDArray[np.float64], NDArray[np.float64]] | None:
    """:data:`NOISE_DRAWS` draws of the released design's noise (Laplace or Gaussian with the
    released standard deviations) around the released design ``A = G⁻ᵀ D G⁻¹``, ``b = A β₀``,
    each released row by row in the draw's own basis (a ``z_i'z_i`` below the identification
    threshold is held at it, as the fit would not have used it) and solved: every draw's pilot
    (n_draws x p) and inverse ``Â⁻¹`` (n_draws x p x p; :func:`_steps` gives its mean influence
    at any β), and the generator for any further draws. A fixed seed: a deterministic function
    of released numbers. None when no regressor is in the basis or the pilot is not finite."""
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
    return rng, pilot, scaled @ np.swapaxes(g, 1, 2)


def _draws(rng: np.random.Generator, sd: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    """:data:`NOISE_DRAWS` draws of independent noise with these standard deviations: Laplace
    (the lattice Laplace to its precision), or Gaussian (the discrete Gaussian, likewise)."""
    if kind == "gaussian":
        return rng.normal(0.0, 1.0, (NOISE_DRAWS, sd.size)) * sd
    return rng.laplace(0.0, 1.0 / math.sqrt(2.0), (NOISE_DRAWS, sd.size)) * sd
