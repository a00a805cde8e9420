"""The augmented Gram matrix ``[X y]'[X y]`` as one vector: each person's clipped ``Z_u``, the
released entries, the eigenvalue floor and the pilot's solve (step 2 of
``docs/design/pooled.md``)."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from dplong.models.pooled.factors import Blocks, Disjoint

__all__ = ["FLOOR_SDS", "GRAM_NORM", "GRAM_SHRINK", "NOISE_SEED", "NORM_DRAWS", "vech_scaled"]

#: A person's ``Z_u`` is clipped to Frobenius norm ``T_cap GRAM_NORM √r²`` (its worst case is
#: ``T_cap r²``, r² the rows' squared-norm bound, ``p + 1`` without factors: :func:`_row_square`),
#: and never scaled down by more than GRAM_SHRINK: the bound clips the persons far out in the
#: Hessian only (a preconditioner), which stays within ``1 / GRAM_SHRINK`` of the design's,
#: so a Newton step overshoots by at most what it corrects; it divides the Gram matrix's
#: noise by up to ``√r²``. How the values were chosen: ``docs/design/pooled.md``.
GRAM_NORM, GRAM_SHRINK = 1.0, 2.0
#: The eigenvalue floor: ``σ (√(2p) + FLOOR_SDS)`` bounds the spectral norm of the released
#: ``X'X``'s noise (a symmetric Gaussian matrix of entry sd σ on the diagonal, σ/√2 off it, has
#: norm about σ √(2p)) with a margin of FLOOR_SDS sds.
FLOOR_SDS = 3.0
#: The fixed seed of the draws of the privacy noise that post-processing pushes through a
#: public map (:func:`_noise_norm` here; β̂'s map in :mod:`dplong.models.pooled.release`).
NOISE_SEED = 20261128
#: Draws of the released X'X's noise whose mean spectral norm is the typical one where the
#: layout has structural zeros (:func:`_noise_norm`): its sd over the draws is about σ/2, so
#: the mean of 400 is good to a fortieth of σ, far inside the floor's margin of 3 σ.
NORM_DRAWS = 400
#: The chance with which the design's eigenvalue along a direction is at least the released
#: one less its margin (:func:`_eigenvalue_margins`), and the draws that find the margins: the
#: quantile of 4,000 is good to about 0.05 sds. It is also the chance of releasing a direction
#: the design does not determine at all, an absurd number inside an absurd interval, so it is
#: high; the price is a rare factor level's few rows, a few noise sds, withholding its model
#: more often (docs/accuracy.md, "The shipped examples under resampling": "Why 99 %").
MARGIN_LEVEL, MARGIN_DRAWS = 0.99, 4000
#: The released coordinate's noise that the ridge's gain multiplies, in sds of its draws
#: (:meth:`_Solution.shrinkage_at`): the interval's own normal quantile at 95 %.
PULL_NOISE_SDS = 1.96
#: Random effects' weights on the between-person part of a person's rows that GLS's
#: quasi-demeaning takes away (0: GLS's rows; 1: pooled OLS's), tried in order (:func:`_lifted`):
#: GLS's rows keep ``(1 - θ)²`` of that part's signal under the same noise, so at small
#: ``n ε`` their released X'X leaves the between-person directions undetermined; a person's
#: rows at weight w are quasi-demeaned with ``(1 - θ_w)² = (1 - θ)² + w (1 - (1 - θ)²)``, a
#: weighting whose coefficients are as consistent as GLS's where the model holds.
BETWEEN_WEIGHTS = np.linspace(0.0, 1.0, 9)
BETWEEN_WEIGHTS.flags.writeable = False
#: The contraction (:attr:`_Solution.contraction`) a weight must reach: after random effects'
#: four Newton steps at most ``0.8⁵`` (a third) of the pilot's error is left along any
#: direction, which the ridge's pull bound (:meth:`_Solution.shrinkage_at`) puts in the
#: interval. A stricter bar takes more of the between-person part, whose sampling error the
#: slopes of regressors that vary within persons then carry (docs/accuracy.md, "Random
#: effects where GLS's rows are undetermined").
MAX_CONTRACTION = 0.8
#: The released X'X's smallest eigenvalue is floored at least at this share of its largest
#: diagonal entry (:meth:`_Solution.of`): the doubles' resolution, far below any noise's floor.
NUMERIC_FLOOR = 1e-12


class _Solution:
    """β̂ of the scaled design from the released ``[X y]'[X y]``: the floor, the solve."""

    def __init__(
        self,
        hessian: NDArray[np.float64],
        beta: NDArray[np.float64],
        ridge: float,
        sigma: float,
        norm: float,
    ) -> None:
        self.hessian, self.beta, self.ridge = hessian, beta, ridge
        #: the released X'X's noise: its entry sd σ and its typical spectral norm in units of σ
        #: (√(2p) without structural zeros, :func:`_noise_norm`)
        self.sigma, self.norm = sigma, norm
        values, vectors = np.linalg.eigh(hessian)  # positive: floored (or exact and full rank)
        #: Ĥ^{-1/2}, the scores' whitening, and Ĥ^{1/2}
        self.whiten = np.asarray((vectors / np.sqrt(values)) @ vectors.T)
        self.root = np.asarray((vectors * np.sqrt(values)) @ vectors.T)
        self.smallest = float(values[0])

    @classmethod
    def of(cls, released: NDArray[np.float64], sigma: float, disjoint: Disjoint) -> _Solution:
        """The floored solve of ``released`` (``[X y]'[X y]``) whose X'X noise has entry sd
        ``sigma`` and the structural zeros of ``disjoint`` (:func:`_noise_norm`)."""
        p = released.shape[0] - 1
        gram, cross = released[:p, :p], released[:p, p]
        norm = _noise_norm(p, disjoint)
        # at least the doubles' resolution of the diagonal's scale: with the noise all but
        # off, a design that is exactly singular (a declared level with no rows) is floored
        # there, and the steps' lower bound on its curvature (0) withholds what it leaves open
        floor = max(_floor(sigma, norm), NUMERIC_FLOOR * float(np.abs(np.diag(gram)).max()))
        ridge = max(0.0, floor - float(np.linalg.eigvalsh(gram)[0]))
        hessian = gram + ridge * np.eye(p)
        beta = np.asarray(np.linalg.solve(hessian, cross), dtype=np.float64)
        return cls(hessian, beta, ridge, sigma, norm)

    def shrinkage_at(
        self,
        beta: NDArray[np.float64],
        steps: int,
        draws: tuple[NDArray[np.float64], ...],
    ) -> NDArray[np.float64]:
        """A bound on the ridge's pull toward 0 left in ``beta``, the pilot after ``steps``
        Newton steps, whose noise ``draws`` (scaled, rows) the interval already allows for.

        A step on exact scores multiplies the pilot's error by ``M = Ĥ⁻¹ (Ĥ - G)``, G the
        design's X'X: along an eigenvector of Ĥ (eigenvalue h) whose design eigenvalue is g,
        by ``m = 1 - g / h``, so with ``k = steps + 1`` a released coordinate is
        ``b = (1 - mᵏ) β + e`` (e its noise) and ``β - b = g (b - e) - e`` with the gain
        ``g = mᵏ / (1 - mᵏ)``: the pull is the gain times the coordinate and times its noise,
        :data:`PULL_NOISE_SDS` of the draws' sd (the noise itself is the interval's). Where
        the ridge shrank a coordinate to nearly 0 the second term is the whole pull. g is
        not known: the released X'X's eigenvalue exceeds it by noise, so it is taken at a
        lower bound (:func:`_eigenvalue_margins`); where that is not above 0 the design's may
        be 0, the steps may correct nothing and nothing bounds the pull: infinite there."""
        values, vectors = np.linalg.eigh(self.hessian)
        lower = self._design_lower(values)
        s = np.where(lower > 0.0, (1.0 - lower / values) ** (steps + 1), 1.0)
        with np.errstate(divide="ignore"):
            gain = np.where(s < 1.0, s / (1.0 - s), np.inf)
        coordinates = vectors.T @ beta
        noise = np.max([(d @ vectors).std(axis=0) for d in draws], axis=0)
        with np.errstate(invalid="ignore"):  # inf * 0: no pull along that direction
            pulled = np.abs(vectors @ (gain * coordinates)) + np.abs(vectors) @ (
                gain * PULL_NOISE_SDS * noise
            )
        return np.asarray(np.nan_to_num(pulled, nan=np.inf, posinf=np.inf))

    @property
    def contraction(self) -> float:
        """The largest factor ``m = 1 - g / h`` by which a Newton step may leave the pilot's
        error along an eigenvector of Ĥ (:meth:`shrinkage_at`), g at its lower bound; 1 where
        that bound is not above 0 (the design may not determine the direction at all)."""
        values = np.asarray(np.linalg.eigvalsh(self.hessian), dtype=np.float64)
        lower = self._design_lower(values)
        return float(np.where(lower > 0.0, 1.0 - lower / values, 1.0).max())

    def _design_lower(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Lower bounds on the design's curvature along the eigenvectors of Ĥ (eigenvalues
        ``values``, ascending): each released eigenvalue less the ridge and its margin
        (:func:`_eigenvalue_margins`)."""
        # less the doubles' resolution (NUMERIC_FLOOR): an exactly singular design's null
        # direction, floored there with the noise all but off, is not taken as determined
        margins = self.sigma * _eigenvalue_margins(values.size) + NUMERIC_FLOOR * values[-1]
        lower = values - self.ridge - margins
        # every direction's design curvature is at least the design's smallest eigenvalue,
        # which the first bound bounds: a later direction's looser margin never takes it below
        # (each bound holds with chance MARGIN_LEVEL, so a floored one with at least
        # 1 - 2 (1 - MARGIN_LEVEL))
        return np.asarray(np.maximum(lower, lower[0]))


def _lifted(
    released: NDArray[np.float64],
    between: NDArray[np.float64],
    sigma: float,
    disjoint: Disjoint,
) -> tuple[float, _Solution]:
    """The smallest of :data:`BETWEEN_WEIGHTS` at which ``released + weight between`` (the
    quasi-demeaned ``[X y]'[X y]`` and the between-person part its quasi-demeaning took away,
    each with entry noise sd σ) is determined with a contraction of at most
    :data:`MAX_CONTRACTION`, and its floored solve; where none is, the weight of the smallest
    contraction (the smaller on a tie: a part with no signal only adds noise). Post-processing
    of the two released matrices: their noise adds, entry sd ``σ √(1 + weight²)``."""
    tried = []
    for weight in BETWEEN_WEIGHTS:  # a short public grid
        solution = _Solution.of(
            released + weight * between, sigma * math.hypot(1.0, weight), disjoint
        )
        if solution.contraction <= MAX_CONTRACTION:
            return float(weight), solution
        tried.append((solution.contraction, float(weight), solution))
    _, weight, solution = min(tried, key=lambda t: t[:2])
    return weight, solution


@functools.cache
def _eigenvalue_margins(p: int) -> NDArray[np.float64]:
    """How far, in entry sds of the noise, the i-th smallest eigenvalue of a released p x p
    X'X may exceed the design's, for i = 1..p, with chance :data:`MARGIN_LEVEL` each.

    By Courant–Fischer, ``λ_i(G + E) <= max over x in U_i of x'(G + E)x <= g_i + λ_max(E|U_i)``
    with ``U_i`` the span of G's i smallest eigenvectors (fixed, not chosen by the noise), and
    ``E|U_i`` is an i x i symmetric Gaussian matrix (entry sd 1 on the diagonal, ``1/√2`` off
    it; a structural zero only shrinks it): the margin is its largest eigenvalue's
    MARGIN_LEVEL quantile over :data:`MARGIN_DRAWS` draws of a fixed seed (public: a function
    of p); for i = 1 the normal quantile itself (2.33 sds; the draws' quantile, 2.27, fell
    short of it and held with chance 0.988), below the whole noise's spectral
    norm (``√(2p)`` sds typical, 2.83 at p = 4): the smallest released eigenvalue is biased
    *down* by the noise, so it bounds the design's from below more tightly than the norm."""
    rng = np.random.default_rng(NOISE_SEED)
    margins = np.empty(p)
    for i in range(1, p + 1):  # p is a design's column count: a short loop over sizes
        draws = rng.normal(size=(MARGIN_DRAWS, i, i))
        noise = (np.triu(draws) + np.swapaxes(np.triu(draws, 1), 1, 2)) / np.where(
            np.eye(i, dtype=bool), 1.0, math.sqrt(2.0)
        )
        margins[i - 1] = np.quantile(np.linalg.eigvalsh(noise)[:, -1], MARGIN_LEVEL)
    margins[0] = NormalDist().inv_cdf(MARGIN_LEVEL)  # 1 x 1: the normal quantile, exactly
    margins.flags.writeable = False
    return margins


def _released_entries(k: int, disjoint: Disjoint) -> NDArray[np.intp]:
    """The positions in a k x k :func:`vech_scaled` vector of the entries released: all but
    the products of two different columns of one ``disjoint`` block (structural zeros)."""
    upper = np.triu_indices(k)
    group = np.arange(k)
    for b, block in enumerate(disjoint):
        group[list(block)] = k + b  # columns of a block share a label, the others their own
    return np.flatnonzero((upper[0] == upper[1]) | (group[upper[0]] != group[upper[1]]))


def _noise_norm(p: int, disjoint: Disjoint, scale: NDArray[np.float64] | None = None) -> float:
    """The typical spectral norm, in entry sds, of the released p x p X'X's noise
    (symmetric Gaussian, entry sd 1 on the diagonal and ``1/√2`` off it, 0 on the structural
    zeros): ``√(2p)`` without them; with them, the mean over :data:`NORM_DRAWS` draws of a
    fixed seed (a public function of the layout; a block of k structural zeros' diagonal
    noise has norm about ``√(2 log k)`` instead of ``√(2k)``). With ``scale``, of the noise
    whose entry ``(i, j)`` is further multiplied by ``scale_i scale_j`` (still in entry sds)."""
    if not disjoint and scale is None:
        return math.sqrt(2.0 * p)
    mask = np.zeros(p * (p + 1) // 2, dtype=bool)
    mask[_released_entries(p, disjoint)] = True
    rng = np.random.default_rng(NOISE_SEED)
    noise = np.zeros((NORM_DRAWS, p * (p + 1) // 2))
    noise[:, mask] = rng.normal(size=(NORM_DRAWS, int(mask.sum())))
    matrices = np.stack([_unvech_scaled(draw, p) for draw in noise])
    if scale is not None:
        matrices *= np.outer(scale, scale)
    return float(np.abs(np.linalg.eigvalsh(matrices)).max(axis=1).mean())


def _clip_rows(values: NDArray[np.float64], bound: float) -> NDArray[np.float64]:
    """Every row of ``values`` scaled down to L2 norm ``bound`` where above it."""
    norms = np.sqrt((values**2).sum(axis=1))
    return np.asarray(values * np.minimum(1.0, bound / np.maximum(norms, bound * 1e-300))[:, None])


def _rows_released(
    released: NDArray[np.float64], columns: tuple[str, ...], blocks: Blocks
) -> float:
    """The weighted number of rows from the released Gram matrix: the intercept's entry, or
    where a factor block took the intercept in (its rows one-hot) the sum of the block's
    diagonal; 0 without an intercept."""
    if "Intercept" not in columns:
        return 0.0
    intercept = columns.index("Intercept")
    counted = next((list(b) for b, _ in blocks if intercept in b), [intercept])
    return float(np.trace(released[np.ix_(counted, counted)]))


def _row_square(p: int, blocks: Blocks) -> float:
    """The bound ``r²`` on a clipped row's squared norm (``z = (x̃, ỹ)``, p columns and the
    outcome): 1 a column, a factor block's own bound in place of its columns' count
    (treatment-coded indicators: 1 a block however many levels it has)."""
    return p + 1.0 - sum(len(columns) - square for columns, square in blocks)


def _clip_blocks(z: NDArray[np.float64], blocks: Blocks) -> NDArray[np.float64]:
    """Every row's entries of each factor block scaled down to the block's norm bound where
    above it (indicator rows never are; quasi-demeaned ones may be), in place."""
    for columns, square in blocks:
        indices = list(columns)
        z[:, indices] = _clip_rows(z[:, indices], math.sqrt(square))
    return z


def _gram_bound(cap: int, square: float) -> float:
    """The Frobenius norm a person's ``Z_u`` is clipped to, for rows of squared norm at most
    ``square`` (:func:`_row_square`; ``p + 1`` without factor blocks): :data:`GRAM_NORM`
    ``√square`` rows' worth, at least ``1 / GRAM_SHRINK`` of its trace bound ``T_cap
    square``, at most that bound (then nothing is clipped)."""
    return cap * min(square, max(GRAM_NORM * math.sqrt(square), square / GRAM_SHRINK))


def _floor(sigma: float, norm: float) -> float:
    """The eigenvalue floor of a released Gram matrix of entry noise sd σ whose noise has
    typical spectral norm ``norm`` σ (:func:`_noise_norm`; :data:`FLOOR_SDS`: the norm is
    σ-Lipschitz in the standard normals drawn, so it rarely exceeds its mean by 3 σ)."""
    return sigma * (norm + FLOOR_SDS) if sigma > 0 else 0.0


def vech_scaled(rows: NDArray[np.float64], weight: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every row's weighted outer product ``w z z'`` as a vector of its upper triangle with the
    off-diagonal entries times √2, so that the vector's norm is the matrix's Frobenius norm.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.pooled import vech_scaled
    >>> v = vech_scaled(np.array([[1.0, 2.0]]), np.array([1.0]))
    >>> v.round(4).tolist(), float(np.linalg.norm(v)) == float(np.linalg.norm([[1, 2], [2, 4]]))
    ([[1.0, 2.8284, 4.0]], True)
    """
    k = rows.shape[1]
    upper = np.triu_indices(k)
    factor = np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))
    out = rows[:, upper[0]]  # a copy (fancy indexing), multiplied in place: rows are many
    out *= rows[:, upper[1]]
    out *= weight[:, None] * factor
    return out


def _unvech_scaled(
    vector: NDArray[np.float64], k: int, kept: NDArray[np.intp] | None = None
) -> NDArray[np.float64]:
    """The symmetric k x k matrix of a :func:`vech_scaled` vector, or of its entries
    ``kept`` (the others 0: structural zeros put back)."""
    upper = np.triu_indices(k)
    if kept is not None:
        upper = (upper[0][kept], upper[1][kept])
    values = vector / np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))
    out = np.zeros((k, k))
    out[upper] = values
    out[upper[1], upper[0]] = values
    return out
