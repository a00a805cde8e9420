"""Concentration radii from a variance proxy (Lemma 5.2, Remark 5.3, §7.1.2).

``scale`` is the sub-Gaussian variance proxy ρ (for Gaussian data: the variance) of *one value*
of a column being averaged — one user's statistic, not one raw row. By Remark 5.3 only this
marginal constant enters the radius, however strongly the users depend on each other.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["DEFAULT_GAMMA", "bin_radius", "concentration_radius"]

#: Failure probability γ behind the radii: with probability at least 1 - dγ no user is clipped
#: (Lemma 5.2), and each value is within τ' of its mean with probability 1 - γ.
DEFAULT_GAMMA = 0.05


def concentration_radius(
    scale: float | NDArray[np.float64], n: int, d: int = 1, gamma: float = DEFAULT_GAMMA
) -> NDArray[np.float64]:
    """τ = √(2ρ log(2dn/γ)): all n values of each of d columns lie within τ of their means
    with probability at least 1 - dγ (union bound of Lemma 5.2 / Theorem 2.6).

    Examples
    --------
    >>> from dplong.privacy import concentration_radius
    >>> float(concentration_radius(1.0, n=1000).round(4))
    4.6036
    """
    rho = np.asarray(scale, dtype=np.float64)
    return np.asarray(np.sqrt(2.0 * rho * np.log(2.0 * d * n / gamma)), dtype=np.float64)


def bin_radius(
    scale: float | NDArray[np.float64], gamma: float = DEFAULT_GAMMA
) -> NDArray[np.float64]:
    """τ' = √(2ρ log(2/γ)): one value is within τ' of its mean with probability 1 - γ
    (Remark 3.5, §7.1.2); the histogram's bins have width 2τ'.

    Examples
    --------
    >>> from dplong.privacy import bin_radius
    >>> float(bin_radius(1.0).round(4))
    2.7162
    """
    rho = np.asarray(scale, dtype=np.float64)
    return np.asarray(np.sqrt(2.0 * rho * np.log(2.0 / gamma)), dtype=np.float64)
