"""Radii of the projection intervals: the paper's concentration radii and an accuracy-aware one.

``scale`` is the sub-Gaussian variance proxy ρ (for Gaussian data: the variance) of *one value*
of a column being averaged — one user's statistic, not one raw row. By Remark 5.3 only this
marginal constant enters the radius, however strongly the users depend on each other.

* :func:`concentration_radius` and :func:`bin_radius` — the paper's τ and τ' (Lemma 5.2,
  §7.1.2), chosen so that *no* user is clipped with probability ``1 - dγ``: used by
  ``variant="theory"``.
* :func:`clipping_bias` and :func:`accurate_radius` — the default. Clipping a few users costs
  a bias, and a narrower interval saves noise in proportion to its width; the person-level
  analysis of Agarwal et al. (2024, Lemma 3.6 / Cor 3.7) bounds the bias by the tail mass
  beyond the interval, ``E(X - c - w)_+ <= ∫_{w-e}^∞ P(X - μ > t) dt`` when ``|c - μ| <= e``,
  evaluated for a normal tail (the plug-in model of an estimated scale), the sub-Gaussian
  tail ``exp(-t²/(2ρ))`` of a stated variance proxy, or a skewed tail (exponential, scaled
  χ²₁) for statistics that are squares; the radius minimises this bias squared
  plus the noise variance. At n = 1,000 and ε = 1 it is about 2.5√ρ, against τ = 4.6√ρ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special

__all__ = [
    "DEFAULT_GAMMA",
    "MAD_OVER_SD",
    "MEDIAN_OFFSET",
    "SUPPORT_SPREAD",
    "Tail",
    "Tails",
    "accurate_radius",
    "bin_radius",
    "clipping_bias",
    "concentration_radius",
]

Tail = Literal["gaussian", "sub-gaussian", "exponential", "chi-square"]
#: One tail model for every column, or one per column.
Tails = Tail | tuple[Tail, ...]
#: Per tail model, the median absolute deviation from the median over the sd, so that
#: The median of χ²₁.
_CHI_SQUARE_MEDIAN = 0.454936423119572
#: σ̂ = median |x - m̂| / MAD_OVER_SD: Φ⁻¹(3/4) for a normal; for ``μ + v (χ²₁ - 1)`` (sd
#: √2 v) the d solving F₁(m + d) - F₁(m - d) = 1/2 at m the median of χ²₁ (0.41909 v), over
#: √2. The exponential model bounds the clipping bias only and keeps the normal plug-in
#: spread: its own law's (asinh(1/2), 1.4 times wider) cost the within estimator's cross
#: products 1.4-2.3 times their MSE (benchmarks/within_and_weights.py) for no coverage gain.
_NORMAL_MAD = float(special.ndtri(0.75))
MAD_OVER_SD: dict[str, float] = {
    "gaussian": _NORMAL_MAD,
    "sub-gaussian": _NORMAL_MAD,
    "exponential": _NORMAL_MAD,
    "chi-square": 0.41909427882881944 / math.sqrt(2.0),
}
#: Per tail model of a square, its sd over its median's height above the support's lower end:
#: ``√2 v / (0.455 v)`` for ``lower + v χ²₁`` (engine._square_spread).
SUPPORT_SPREAD: dict[str, float] = {"chi-square": math.sqrt(2.0) / _CHI_SQUARE_MEDIAN}
#: Per tail model, |mean - median| over the sd: where a private median centres a skewed column
#: (the exponential model's plug-in being normal, none).
MEDIAN_OFFSET: dict[str, float] = {
    "gaussian": 0.0,
    "sub-gaussian": 0.0,
    "exponential": 0.0,
    "chi-square": (1.0 - _CHI_SQUARE_MEDIAN) / math.sqrt(2.0),
}

#: Failure probability γ behind the radii and the error bounds: with probability at least
#: 1 - dγ no user is clipped (Lemma 5.2), and each value is within τ' of its mean with
#: probability 1 - γ.
DEFAULT_GAMMA = 0.05
#: Candidate radii of :func:`accurate_radius`, in units of √ρ beyond the centre's error (to 30
#: for skewed tails, whose bias decays only as ``e^{-κ}``).
_MULTIPLES = np.linspace(1.0, 10.0, 361)
_EXPONENTIAL_MULTIPLES = np.linspace(1.0, 30.0, 1161)


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
    (Remark 3.5, §7.1.2).

    Examples
    --------
    >>> from dplong.privacy import bin_radius
    >>> float(bin_radius(1.0).round(4))
    2.7162
    """
    rho = np.asarray(scale, dtype=np.float64)
    return np.asarray(np.sqrt(2.0 * rho * np.log(2.0 / gamma)), dtype=np.float64)


def clipping_bias(
    scale: float | NDArray[np.float64],
    half_width: float | NDArray[np.float64],
    centre_error: float | NDArray[np.float64] = 0.0,
    *,
    tail: Tails = "gaussian",
) -> NDArray[np.float64]:
    """Bound on ``|E clip(X; c ± w) - E X|`` when ``|c - μ| <= e``.

    ``clip(X) - X = (c - w - X)_+ - (X - c - w)_+``, so the bias is at most the larger of the
    two expected overshoots, each at most ``∫_{w-e}^∞ P(X - μ > t) dt`` (Lemma 3.6 of the
    person-level paper). ``tail="gaussian"``: X normal with variance ``scale`` (the plug-in
    model of an estimated scale), ``√ρ (φ(s) - s Φ̄(s))`` with ``s = (w - e)/√ρ``;
    ``tail="sub-gaussian"``: ``P(X - μ > t) <= exp(-t²/(2ρ))`` (the paper's assumption, for a
    stated variance proxy ρ), ``√(2πρ) Φ̄(s)``; ``tail="exponential"``: ``P(X - μ > t) <=
    exp(-t/√ρ)`` (a sub-exponential model for skewed statistics such as cross products, whose
    spread ρ is a plug-in), ``√ρ e^{-s}``; ``tail="chi-square"``: X = μ + v (χ²₁ - 1) with sd
    ``√ρ = √2 v`` (the square of a normal statistic, e.g. a squared deviation), both
    overshoots exactly, ``v max(E(χ²₁ - 1 - a)_+, E(1 - a - χ²₁)_+)`` with ``a = (w - e)/v``
    (``E χ²₁ 1{χ²₁ < b} = F₃(b)``). ``tail`` may give one model per column (the first axis).

    Examples
    --------
    >>> from dplong.privacy.radius import clipping_bias
    >>> float(clipping_bias(1.0, 3.0, tail="sub-gaussian").round(5))      # √(2π) Φ̄(3)
    0.00338
    >>> float(clipping_bias(1.0, 3.0).round(6))                           # φ(3) - 3 Φ̄(3)
    0.000382
    >>> float(clipping_bias(1.0, 3.0, centre_error=1.0).round(4))    # an off-centre interval
    0.0085
    >>> float(clipping_bias(2.0, 0.0, tail="chi-square").round(4))  # v = 1: E(χ²₁ - 1)_+
    0.4839
    """
    sd = np.sqrt(np.asarray(scale, dtype=np.float64))
    margin = (np.asarray(half_width, dtype=np.float64) - np.asarray(centre_error)) / sd
    kinds = np.asarray(tail)
    kinds = kinds.reshape(kinds.shape + (1,) * max(margin.ndim - kinds.ndim, 0))
    present = np.unique(kinds).tolist()
    with np.errstate(over="ignore", invalid="ignore"):  # only the models asked for
        bounds = [_OVERSHOOT[kind](sd, margin) for kind in present]
    return np.asarray(np.select([kinds == kind for kind in present], bounds))


def _chi_square_overshoot(sd: NDArray[np.float64], margin: NDArray[np.float64]) -> Any:
    """The larger overshoot of ``μ + v (χ²₁ - 1)`` beyond ``margin`` sds (see clipping_bias)."""
    a = margin * math.sqrt(2.0)  # in units of v = sd / √2
    c, b = 1.0 + a, 1.0 - a  # the CDFs vanish below 0
    upper = special.chdtrc(3, np.maximum(c, 0.0)) - c * special.chdtrc(1, np.maximum(c, 0.0))
    lower = b * special.chdtr(1, np.maximum(b, 0.0)) - special.chdtr(3, np.maximum(b, 0.0))
    return sd / math.sqrt(2.0) * np.maximum(upper, lower)


#: Each tail model's overshoot bound, from the sd and the margin in sds (see clipping_bias).
_OVERSHOOT: dict[str, Callable[[NDArray[np.float64], NDArray[np.float64]], Any]] = {
    "gaussian": lambda sd, m: (
        sd * (np.exp(-0.5 * m**2) / math.sqrt(2.0 * math.pi) - m * special.ndtr(-m))
    ),
    "sub-gaussian": lambda sd, m: math.sqrt(2.0 * math.pi) * sd * special.ndtr(-m),
    "exponential": lambda sd, m: sd * np.exp(-np.maximum(m, 0.0)),
    "chi-square": _chi_square_overshoot,
}


def accurate_radius(
    scale: NDArray[np.float64],
    centre_error: NDArray[np.float64],
    noise_per_width: NDArray[np.float64],
    *,
    tail: Tails = "gaussian",
) -> NDArray[np.float64]:
    """Half-widths ``w = κ√ρ + e`` minimising ``bias(w)² + (noise_per_width · w)²`` per column.

    ``noise_per_width`` is the noise sd of the released mean per unit of half-width (public:
    it follows from n and the column's budget); the bias is :func:`clipping_bias` with the
    given ``tail``. The search runs over κ in [1, 10] (in [1, 30] for an exponential tail).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.radius import accurate_radius
    >>> # n = 1,000 users, Laplace noise at ε = 0.8: sd 2√2 w / (n ε) per unit of w
    >>> w = accurate_radius(np.array([1.0]), np.array([0.0]), np.array([8**0.5 / 800]))
    >>> 2.0 < float(w[0]) < 3.0
    True
    """
    sd = np.sqrt(scale)[:, None]
    skewed = np.isin(np.asarray(tail), ("exponential", "chi-square")).any()
    multiples = _EXPONENTIAL_MULTIPLES if skewed else _MULTIPLES
    widths = multiples[None, :] * sd + np.asarray(centre_error)[:, None]
    bias = clipping_bias(sd**2, widths, np.asarray(centre_error)[:, None], tail=tail)
    cost = bias**2 + (np.asarray(noise_per_width)[:, None] * widths) ** 2
    return np.asarray(widths[np.arange(widths.shape[0]), np.argmin(cost, axis=1)])
