"""The item-level smoother's local spread: how far the projected responses scatter about the
curve near each grid point, released privately with a share of the curve's budget.

Lemma 4.9 bounds the sampling error of ``f̂(x) = Σ_i a_i(x) z_i`` (the projected responses
``z_i``) under ``Cov(errors) ⪯ σ_max² I`` (Def 4.7): sd ``σ_max √(Σ_i a_i(x)²)``. Given only ε,
no σ_max is stated, and the responses' overall spread σ̂ is an average over the design, not a
bound: where the errors are larger than average, bands built on it are too narrow, with no
warning. For independent errors the sampling variance is ``Σ_i a_i(x)² Var(z_i)``, and with
``a_i(x) = w_i K((x - x_i)/b) / b`` (Def 4.8, ``w_i`` the public spacing) that is ``Σ_i
a_i(x)²`` times the mean of ``Var(z_i)`` under the weights ``u_i(x) ∝ w_i² K(·)²``. The
release reads the variances under ``ω_i(x) ∝ w_i K((x - x_i)/b)²`` instead — the
Priestley–Chao weights of the kernel K², whose shape the sampling variance has — which is the
same mean on an equispaced design (whatever the errors' variance does along x), and on any
design where the variance is about constant over a bandwidth; the square ``w_i²`` would let
the unit with the widest gap (whose weight grows as the square of its gap) set the release's
sensitivity, and noise swamped the spread on a random design of 2,000 points. The release

    ``V(x) = Σ_i ω_i(x) min((z_i - c - ℓ(x))², w²)``,

``ℓ(x)`` the released curve's level about the centre c at x (post-processing) and w the
projection's half-width, has expectation at least that mean: each term's is
``Var(z_i) + (E z_i - c - ℓ(x))²`` where the min clips nothing, and z_i lies within w of c, so
only a response more than w from the curve's level is clipped (the level is the released one,
clipped to ``±w``). Each term lies in ``[0, w²]``: centred at ``w²/2``, replacing one unit (all
its terms) moves ``V(x)`` by at most ``w² ω_i(x)``. Each point is released in units of its
own most exposed unit's weight, ``m(x) = max_i ω_i(x)``, so that its noise follows its own
exposure rather than that of the sparsest point of the grid: the vector ``V(x) / m(x)`` goes
through the curve's mechanism (:func:`~dplong.privacy.vector.release_linear`, the same kind)
with weights ``ω_i(x) / m(x)`` and radius ``w²/2``, L1 sensitivity ``w² max_i Σ_x ω_i(x) /
m(x)`` (L2: the rows' largest norm), and is scaled back by ``m(x)`` (post-processing). Read
:data:`SPREAD_SDS` noise sds high and capped at ``w²`` (no projected response varies more), it
gives the per-point variance ``v̂(x)`` of the bands' sampling sd ``√(Σ_i a_i(x)² v̂(x))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import VectorBudget
from dplong.privacy.projection import MAX_RADIUS
from dplong.privacy.vector import release_linear

__all__ = ["SPREAD_SDS", "LocalSpread", "local_spread"]

#: The noise sds the released spread is read above: its high end, as the pooled models read a
#: released mean square (:data:`~dplong.models.pooled.release.SIZE_SDS`). A spread the noise
#: pulled low would narrow the band at the very points where the errors are largest.
SPREAD_SDS = 2.0


@dataclass(frozen=True)
class LocalSpread:
    """The released local spread (:func:`local_spread`): per grid point the root of the
    variance the bands take (``sd``), where the noise left it unpinned (``unpinned``: the cap,
    the half-width w), and the release's ledger entry."""

    sd: NDArray[np.float64]
    unpinned: NDArray[np.bool_]
    entry: LedgerEntry


def local_spread(
    projected: NDArray[np.float64],
    width: float,
    level: NDArray[np.float64],
    weights: NDArray[np.float64],
    spacing: NDArray[np.float64],
    budget: VectorBudget,
    rng: np.random.Generator,
) -> LocalSpread:
    """Release the projected responses' local spread about the curve (module docstring).

    Parameters
    ----------
    projected : ndarray, shape (n,)
        The responses minus the centre, projected onto ``[-width, width]`` (a missing one 0).
    width : float
        The projection's half-width w.
    level : ndarray, shape (G,)
        The released curve's level about the centre at each grid point, ``Σ_i a_i(x) z_i /
        Σ_i a_i(x)`` with its noise (post-processing of the curve).
    weights : ndarray, shape (n, G)
        The curve's public weights ``a_i(x)`` at the grid points it reaches.
    spacing : ndarray, shape (n,)
        The units' public spacings ``w_i`` (:func:`~dplong.kernels.item_spacing`).
    budget : VectorBudget
        The spread's share of the curve's budget, of the curve's kind.
    rng : numpy.random.Generator

    Returns
    -------
    LocalSpread

    Examples
    --------
    With the noise off, the weighted mean square deviation about the level:

    >>> import numpy as np
    >>> from dplong.models.response_spread import local_spread
    >>> from dplong.privacy.budget import VectorBudget
    >>> projected = np.array([-1.0, 1.0, -2.0, 2.0])
    >>> weights = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> spread = local_spread(projected, 3.0, np.zeros(2), weights, np.full(4, 0.25),
    ...                       VectorBudget(1e300), np.random.default_rng(0))
    >>> spread.sd.round(9).tolist(), spread.unpinned.tolist(), spread.entry.stage
    ([1.0, 2.0], [False, False], 'spread')
    """
    # a_i(x)² / w_i ∝ w_i K(·)² (0 for a unit without a gap: its weight is 0 too), each
    # point's weights over their largest first, whose squares far from the design (27
    # bandwidths and more) would underflow to 0 however many of them; in place, as each of
    # these n x G arrays is as large as the curve's weights
    omega = weights / np.abs(weights).max(axis=0)
    np.square(omega, out=omega)
    omega /= np.where(spacing > 0, spacing, 1.0)[:, None]
    omega /= omega.sum(axis=0)  # Σ_i ω_i(x) = 1 at every point reached
    # each point in units of its own most exposed unit's weight: its noise then follows its
    # own exposure, not the sparsest point's (three units near one end of a public design set
    # the noise of every point, which swamped the spread everywhere)
    exposure = omega.max(axis=0)
    omega /= exposure
    with np.errstate(over="ignore", invalid="ignore"):  # a far miss's squares overflow: capped
        # the largest square the release holds: w², but at most the lattice's radius twice
        # (the engine's second moment, :func:`~dplong.privacy.projection.release_second_moment`)
        half = min(float(np.float64(width) ** 2) / 2.0, MAX_RADIUS)
        squares = projected[:, None] - np.clip(level, -width, width)
        np.clip(squares, -width, width, out=squares)
        np.square(squares, out=squares)
        squares -= half
        np.clip(squares, -half, half, out=squares)
    release = release_linear(
        squares,
        half,
        omega,
        budget,
        rng,
        local=False,
        target=f"spread at {level.size} points",
        stage="spread",
    )
    high = np.maximum(release.total * exposure + half, 0.0) + SPREAD_SDS * release.sd * exposure
    unpinned = high >= 2.0 * half
    # the cap as w itself: its square overflows for a half-width beyond 1.3e154, where the
    # bands' sd w √(Σ_i a_i(x)²) need not
    return LocalSpread(np.where(unpinned, width, np.sqrt(high)), unpinned, release.entry)
