"""Smoothing kernels with the constants the error bounds of §4.4 need (Def 4.8, Lemma 4.9), and
the Priestley–Chao computations on a public design: the weights (:func:`item_weights`), their
exact smoothing-bias bound (:func:`item_bias_bound`) and the automatic bandwidth
(:func:`auto_bandwidth`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dplong.exceptions import ParameterError

__all__ = [
    "KERNELS",
    "Kernel",
    "auto_bandwidth",
    "get_kernel",
    "item_bias_bound",
    "item_spacing",
    "item_weights",
    "largest_spacing",
]


@dataclass(frozen=True)
class Kernel:
    """A symmetric probability density K with the constants of Def 4.8 and Lemma 4.9.

    Attributes
    ----------
    name : str
    function : callable
        ``K(u)``, vectorised.
    sup_norm : float
        ``‖K‖∞``.
    lipschitz : float
        ``L_K``, the Lipschitz constant of K.
    first_moment : float
        ``μ₁(K) = ∫|s| K(s) ds``.
    roughness : float
        ``∫K(s)² ds``: the variance factor of a kernel smoother.
    support : float
        K vanishes outside ``[-support, support]`` (``inf`` for unbounded support).

    Examples
    --------
    >>> from dplong.kernels import get_kernel
    >>> k = get_kernel("epanechnikov")
    >>> k.sup_norm, k.lipschitz, k.first_moment, k.roughness
    (0.75, 1.5, 0.375, 0.6)
    >>> k([0.0, 1.0, 2.0]).tolist()
    [0.75, 0.0, 0.0]
    """

    name: str
    function: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    sup_norm: float
    lipschitz: float
    first_moment: float
    roughness: float
    support: float

    def __call__(self, u: ArrayLike) -> NDArray[np.float64]:
        # K is 0 far out, where u * u overflows (a tiny bandwidth on a wide domain)
        with np.errstate(over="ignore"):
            return self.function(np.asarray(u, dtype=np.float64))

    def at(self, distance: ArrayLike, bandwidth: float) -> NDArray[np.float64]:
        """``K(distance / bandwidth)``: a distance beyond the doubles in bandwidths (its
        quotient overflows to ±inf) weighs 0, without numpy's overflow warning.

        Examples
        --------
        >>> from dplong.kernels import get_kernel
        >>> get_kernel("epanechnikov").at([0.0, 0.5, 1e300], 1e-300).tolist()
        [0.75, 0.0, 0.0]
        """
        with np.errstate(over="ignore"):
            return self(np.divide(distance, bandwidth))

    def tail_point(self, bandwidth: float, length: float) -> float:
        """``ζ / b``: points within ``ζ`` of the domain's ends are boundary points.

        Lemma 4.9 takes ``ζ = b √(2 log(2/b))`` (b relative to the domain's ``length``, at
        most 1), where the kernel mass beyond the end is at most b; a compactly supported
        kernel has no mass beyond its support, so ``ζ = b · support`` is enough. In logs: the
        ratio underflows to 0 for a tiny bandwidth on a wide domain (1e-300 over 1e300).

        Examples
        --------
        >>> from dplong.kernels import get_kernel
        >>> round(get_kernel("gaussian").tail_point(0.05, 1.0), 4)     # √(2 log 40)
        2.7162
        >>> round(get_kernel("gaussian").tail_point(1e-300, 1e300), 2)  # √(2 log 2e600)
        52.58
        >>> get_kernel("epanechnikov").tail_point(0.05, 1.0)
        1.0
        """
        log_inverse = max(math.log(length) - math.log(bandwidth), 0.0)
        return min(self.support, math.sqrt(2.0 * (math.log(2.0) + log_inverse)))

    def boundary_width(self, bandwidth: float, domain: tuple[float, float]) -> float:
        """ζ in the units of x: ``bandwidth · tail_point(bandwidth, hi - lo)``.

        Examples
        --------
        >>> from dplong.kernels import get_kernel
        >>> get_kernel("epanechnikov").boundary_width(0.5, (0.0, 10.0))
        0.5
        """
        lo, hi = domain
        return bandwidth * self.tail_point(bandwidth, hi - lo)

    def boundary_points(
        self, grid: NDArray[np.float64], bandwidth: float, domain: tuple[float, float]
    ) -> NDArray[np.bool_]:
        """The grid points within ζ (:meth:`boundary_width`) of the domain's ends: outside
        ``[ζ, 1 - ζ]``, where Lemma 4.9 gives no guarantee.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.kernels import get_kernel
        >>> get_kernel("epanechnikov").boundary_points(np.linspace(0, 1, 5), 0.2, (0.0, 1.0))
        array([ True, False, False, False,  True])
        """
        lo, hi = domain
        zeta = self.boundary_width(bandwidth, domain)
        return np.asarray((grid < lo + zeta) | (grid > hi - zeta))


def _gaussian(u: NDArray[np.float64]) -> NDArray[np.float64]:
    # exp(-0.5 u u) / √(2π), each step in place: an item-level fit's n x G weights
    k = np.multiply(u, -0.5, out=np.empty_like(u))
    k *= u
    np.exp(k, out=k)
    k /= math.sqrt(2.0 * math.pi)
    return k


def _epanechnikov(u: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(np.where(np.abs(u) <= 1.0, 0.75 * (1.0 - u * u), 0.0))


#: Kernel functions that return a new float64 array, which can be scaled in place.
_OWN_ARRAYS = (_gaussian, _epanechnikov)

KERNELS: dict[str, Kernel] = {
    "gaussian": Kernel(
        name="gaussian",
        function=_gaussian,
        sup_norm=1.0 / math.sqrt(2.0 * math.pi),
        lipschitz=math.exp(-0.5) / math.sqrt(2.0 * math.pi),  # |φ'| peaks at u = ±1
        first_moment=math.sqrt(2.0 / math.pi),
        roughness=1.0 / (2.0 * math.sqrt(math.pi)),
        support=math.inf,
    ),
    "epanechnikov": Kernel(
        name="epanechnikov",
        function=_epanechnikov,
        sup_norm=0.75,
        lipschitz=1.5,
        first_moment=0.375,
        roughness=0.6,
        support=1.0,
    ),
}


def get_kernel(kernel: str | Kernel) -> Kernel:
    """The kernel named ``kernel`` (one of :data:`KERNELS`), or a :class:`Kernel` as is.

    Examples
    --------
    >>> from dplong.kernels import get_kernel
    >>> get_kernel("gaussian").name
    'gaussian'
    >>> get_kernel("box")
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: kernel must be one of ['gaussian', 'epanechnikov'], got 'box'
    """
    if isinstance(kernel, Kernel):
        return kernel
    if kernel not in KERNELS:
        raise ParameterError(f"kernel must be one of {list(KERNELS)}, got {kernel!r}")
    return KERNELS[kernel]


def item_weights(
    x: NDArray[np.float64],
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
    hi: float,
) -> NDArray[np.float64]:
    """``a_i(x_g) = w_i K((x_g - x_i)/b) / b`` with ``w_i`` the spacing to the next design
    point (the last to ``hi``), as in Def 4.8; n x G. Units at the same design point share
    its spacing equally (the Riemann sum then averages their responses; without this every
    tie but the last would get weight 0).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel, item_weights
    >>> x = np.arange(1000) / 1000                      # the equidistant design of Def 4.7
    >>> a = item_weights(x, np.array([0.5]), get_kernel("gaussian"), 0.05, hi=1.0)
    >>> a.shape, round(float(a.sum()), 6)               # a Riemann sum of K: 1 inside
    ((1000, 1), 1.0)
    >>> tied = item_weights(np.repeat(x, 3), np.array([0.5]), get_kernel("gaussian"), 0.05,
    ...                     hi=1.0)
    >>> round(float(tied.sum()), 6), bool(np.allclose(tied[0::3], tied[1::3]))
    (1.0, True)
    """
    spacing = item_spacing(x, hi)
    u = np.subtract(grid[None, :], x[:, None])  # n x G, so each step works in place
    with np.errstate(over="ignore"):  # beyond the doubles in bandwidths: K is 0 there
        u /= bandwidth
    weights = kernel(u)
    if kernel.function not in _OWN_ARRAYS:  # a kernel of the caller's may return any array
        return np.asarray(spacing[:, None] * weights / bandwidth)
    weights *= spacing[:, None]
    weights /= bandwidth
    return weights


def item_spacing(x: NDArray[np.float64], hi: float) -> NDArray[np.float64]:
    """Each unit's ``w_i`` in :func:`item_weights`: its share of the gap to the next design
    point (the last to ``hi``; units at one point share its gap equally). Public (the design
    is).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import item_spacing
    >>> item_spacing(np.array([0.0, 0.0, 0.5, 0.75]), 1.0).tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    points, inverse, ties = np.unique(x, return_inverse=True, return_counts=True)
    return np.asarray((np.diff(points, append=hi) / ties)[inverse])


def largest_spacing(x: NDArray[np.float64], hi: float) -> float:
    """The largest share of a gap to the next design point that one unit's weight carries in
    :func:`item_weights` (units at one point share its gap): what the curve's sensitivity
    grows with. Public (the design is).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import largest_spacing
    >>> round(largest_spacing(np.arange(100) / 100, 1.0), 6)       # equidistant: 1 / n
    0.01
    >>> largest_spacing(np.array([0.0, 0.0, 0.0, 0.5]), 1.0)        # one unit alone at 0.5
    0.5
    """
    return float(np.max(item_spacing(x, hi)))


def item_bias_bound(
    x: NDArray[np.float64],
    grid: NDArray[np.float64],
    weights: NDArray[np.float64],
    lipschitz: float,
    sup_norm: float,
) -> NDArray[np.float64]:
    """Bound on ``|Σ_i a_i(x) f(x_i) - f(x)|`` for L_f-Lipschitz f with ``‖f‖∞ <= F``.

    ``Σ_i a_i (f(x_i) - f(x)) - (1 - Σ_i a_i) f(x)`` is at most
    ``L_f Σ_i a_i |x_i - x| + |1 - Σ_i a_i| F``: Lemma 4.9's two bias terms (kernel moment and
    Riemann-sum error, Lemma D.14), here evaluated exactly on the public design instead of
    bounded by ``b (L_f μ₁(K) + ‖f‖∞) + (L_f ‖K‖∞ + ‖f‖∞ L_K)/(nb)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel, item_bias_bound, item_weights
    >>> x, grid = np.arange(1000) / 1000, np.array([0.0, 0.5])
    >>> a = item_weights(x, grid, get_kernel("epanechnikov"), 0.05, hi=1.0)
    >>> bias = item_bias_bound(x, grid, a, lipschitz=1.0, sup_norm=1.0)
    >>> bool(bias[1] < 0.05 * 0.375 + 0.01)     # interior: about L_f b μ₁(K)
    True
    >>> bool(bias[0] > 0.4)                     # at the end half the kernel mass is missing
    True
    """
    distance = np.abs(x[:, None] - grid[None, :])
    moment = np.einsum("ig,ig->g", weights, distance)
    return np.asarray(lipschitz * moment + np.abs(1.0 - weights.sum(axis=0)) * sup_norm)


@functools.lru_cache(maxsize=4096)
def _largest_weight(kernel: Kernel, b: float, lo: float, hi: float, points: bytes) -> float:
    """The largest total weight ``Σ_g K((x_g - t) / b)`` over 501 stand-in design points t of
    the domain, for the grid ``points``: public and the same for every n and ε, so memoised
    (a bandwidth search tries 120 b, and every fit of a design repeats the search)."""
    design = np.linspace(lo, hi, 501)
    grid = np.frombuffer(points)
    return float(kernel((grid[None, :] - design[:, None]) / b).sum(axis=1).max())


def auto_bandwidth(
    kernel: Kernel,
    domain: tuple[float, float],
    n: int,
    *,
    epsilon: float,
    sigma: float,
    lipschitz: float,
    width: float,
    local: bool,
    grid: Callable[[float], NDArray[np.float64]],
    spacing: float | None = None,
) -> float:
    """The bandwidth that minimises the explicit error terms of Cor 4.11 (central) / 6.7 (local)
    for n public design points over ``domain``, ``grid(b)`` the evaluation points at b.

    The sum of the squared bias ``(L_f μ₁ b)²`` (Lemma 4.9), the sampling variance
    ``σ² ∫K² / (n b)`` (equidistant design over the domain) and the privacy-noise variance
    of the curve's release with ``epsilon`` and projection half-width ``width``: centrally
    ``2 (2 w ‖a‖₁ / ε)²``, with ``‖a‖₁`` the largest total weight a design point has over
    the grid that this b gives, its spacing ``spacing`` (the design's largest share of a gap,
    :func:`largest_spacing`; default the equidistant design's, the domain's length over n: a
    design with a sparse stretch puts a unit there at many times that weight, and the
    release's noise follows it); locally ``2 (2 w / ε)² ∫K² / (n b)``. All public. The
    minimiser over a log grid of b follows the corollaries' rates
    ``(σ²/n)^{1/3} ∨ (σ/(nε))^{1/2}`` (central) and ``(σ²/n)^{1/3} ∨ (σ/(√n ε))^{1/2}``
    (local), with this package's constants.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import auto_bandwidth, get_kernel
    >>> def bandwidth(n):
    ...     return auto_bandwidth(get_kernel("gaussian"), (0.0, 1.0), n, epsilon=1.0, sigma=0.5,
    ...                           lipschitz=6.0, width=3.0, local=False,
    ...                           grid=lambda b: np.linspace(0.0, 1.0, 11))
    >>> bool(bandwidth(100_000) < bandwidth(1_000) < 0.5)      # more data, less smoothing
    True
    """
    lo, hi = domain
    length = hi - lo
    candidates = length * np.logspace(-4, math.log10(0.5), 120)

    def noise_variance(b: float) -> float:
        if local:
            return float(
                2.0 * (2.0 * np.float64(width) / epsilon) ** 2 * kernel.roughness * length / (n * b)
            )
        points = np.ascontiguousarray(grid(b), dtype=np.float64).tobytes()
        gap = length / n if spacing is None else spacing
        l1 = gap * _largest_weight(kernel, float(b), float(lo), float(hi), points) / b
        return float(2.0 * (2.0 * np.float64(width) * l1 / epsilon) ** 2)

    # a private scale that missed far out overflows the risk: infinite (the release's own
    # figures then overflow and withhold the curve), never an error after the noise was drawn
    with np.errstate(over="ignore", invalid="ignore"):
        risk = np.array(
            [
                (lipschitz * kernel.first_moment * b) ** 2
                + np.float64(sigma) ** 2 * kernel.roughness * length / (n * b)
                + noise_variance(b)
                for b in candidates
            ]
        )
    return float(candidates[int(np.argmin(np.nan_to_num(risk, nan=np.inf)))])
