"""Smoothing kernels with the constants the error bounds of §4.4 need (Def 4.8, Lemma 4.9)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dplong.exceptions import ParameterError

__all__ = ["KERNELS", "Kernel", "get_kernel"]


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
        return self.function(np.asarray(u, dtype=np.float64))

    def tail_point(self, relative_bandwidth: float) -> float:
        """``ζ / b``: points within ``ζ`` of the domain's ends are boundary points.

        Lemma 4.9 takes ``ζ = b √(2 log(2/b))`` (b relative to the domain's length), where the
        kernel mass beyond the end is at most b; a compactly supported kernel has no mass
        beyond its support, so ``ζ = b · support`` is enough.

        Examples
        --------
        >>> from dplong.kernels import get_kernel
        >>> round(get_kernel("gaussian").tail_point(0.05), 4)     # √(2 log 40)
        2.7162
        >>> get_kernel("epanechnikov").tail_point(0.05)
        1.0
        """
        gaussian_point = math.sqrt(2.0 * math.log(2.0 / min(relative_bandwidth, 1.0)))
        return min(self.support, gaussian_point)

    def boundary_width(self, bandwidth: float, domain: tuple[float, float]) -> float:
        """ζ in the units of x: ``bandwidth · tail_point(bandwidth / (hi - lo))``.

        Examples
        --------
        >>> from dplong.kernels import get_kernel
        >>> get_kernel("epanechnikov").boundary_width(0.5, (0.0, 10.0))
        0.5
        """
        lo, hi = domain
        return bandwidth * self.tail_point(bandwidth / (hi - lo))


def _gaussian(u: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi))


def _epanechnikov(u: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(np.where(np.abs(u) <= 1.0, 0.75 * (1.0 - u * u), 0.0))


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
