"""Quantiles of (sampling error + privacy noise), computed from public and released numbers only.

The released estimate is ``θ + B + S + N``: B the clipping bias (bounded, see
:func:`dplong.privacy.radius.clipping_bias`), S the sampling error of the non-private statistic
(approximately normal with standard deviation ``s`` by the CLT over users) and N the privacy
noise: Laplace with scale ``b`` (the lattice noise is a two-sided geometric on a step ~1e-6 b,
whose quantiles equal the Laplace's to that precision; we use the exact normal-Laplace
convolution, not a normal approximation), discrete Gaussian (normal to the same precision), or
in the local model a sum of n per-user Laplace draws, normal to CLT accuracy.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats

#: Below this ratio of scales one term is dropped: the convolution then differs from the
#: remaining law by O(ratio²) = 1e-8 in variance, and the closed form would lose precision.
NEGLIGIBLE = 1e-4


def normal_laplace_cdf(x: float, s: float, b: float) -> float:
    """CDF of ``N(0, s²) + Laplace(0, b)`` (Reed 2006), evaluated in log space for stability.

    ``b = 0`` gives the normal CDF, ``s = 0`` the Laplace CDF.

    Examples
    --------
    >>> from dplong.inference import normal_laplace_cdf
    >>> normal_laplace_cdf(0.0, s=1.0, b=0.5)          # symmetric about 0
    0.5
    >>> round(normal_laplace_cdf(1.96, s=1.0, b=0.0), 4)
    0.975
    >>> normal_laplace_cdf(1.0, s=1.0, b=0.5) < normal_laplace_cdf(1.0, s=1.0, b=0.0)
    True
    """
    if b <= NEGLIGIBLE * s:  # the other term's variance is below 1e-8 of this one's
        return float(stats.norm.cdf(x, scale=s))
    if s <= NEGLIGIBLE * b:
        return float(stats.laplace.cdf(x, scale=b))
    unit = max(s, b)  # the law in units of its larger scale: s² overflowed beyond 1.3e154
    x, s, b = x / unit, s / unit, b / unit
    shift = s * s / (2.0 * b * b)
    left = math.exp(shift - x / b + special.log_ndtr(x / s - s / b))
    right = math.exp(shift + x / b + special.log_ndtr(-x / s - s / b))
    return float(special.ndtr(x / s) - 0.5 * left + 0.5 * right)


def normal_laplace_quantile(p: float, s: float, b: float) -> float:
    """Upper quantile ``q`` with ``P(S + N <= q) = p`` for ``p > 1/2`` (symmetric law).

    ``S ~ N(0, s²)`` and ``N ~ Laplace(0, b)``, independent.

    Examples
    --------
    >>> from dplong.inference import normal_laplace_cdf, normal_laplace_quantile
    >>> round(normal_laplace_quantile(0.975, s=1.0, b=0.0), 4)          # normal
    1.96
    >>> round(normal_laplace_quantile(0.975, s=0.0, b=1.0), 4)          # Laplace: log(20)
    2.9957
    >>> q = normal_laplace_quantile(0.975, s=1.0, b=1.0)
    >>> round(normal_laplace_cdf(q, s=1.0, b=1.0), 9)
    0.975
    >>> round(normal_laplace_quantile(0.975, s=1e299, b=1e299) / (1e299 * q), 9)  # s² overflowed
    1.0
    """
    if b <= NEGLIGIBLE * s:
        return _upper_quantile(stats.norm, p, s)
    if s <= NEGLIGIBLE * b:
        return _upper_quantile(stats.laplace, p, b)
    unit = max(s, b)  # solved in units of the larger scale (the cdf's own), then scaled back
    s, b = s / unit, b / unit
    upper = _upper_quantile(stats.norm, p, s) + _upper_quantile(stats.laplace, p, b)  # F >= p
    return unit * float(
        optimize.brentq(lambda x: normal_laplace_cdf(x, s, b) - p, 0.0, upper, xtol=1e-12 * upper)
    )


def _upper_quantile(law: stats.rv_continuous, p: float, scale: float) -> float:
    """``law.ppf(p, scale=scale)`` for the normal or Laplace law, to the bit, without scipy's
    argument handling (most of an interval's time) where ``1/2 < p < 1`` and the scale is
    positive and finite: the same standard quantile times the scale."""
    if not (0.5 < p < 1.0 and 0.0 < scale < math.inf):
        return float(law.ppf(p, scale=scale))
    if law is stats.norm:
        return float(special.ndtri(p) * scale)
    return float(-np.log(2.0 * (1.0 - p)) * scale)  # scipy's Laplace quantile above 1/2


def sum_cdf(x: float, sampling_sd: float, noise_scale: float, noise_sd: float, law: str) -> float:
    """CDF at x of sampling error ``N(0, s²)`` plus privacy noise of the given law.

    ``law`` is ``"laplace"`` (scale ``noise_scale``: the exact normal-Laplace convolution),
    ``"gaussian"`` or ``"normal"`` (sd ``noise_sd``: the variances add; ``"normal"`` is the
    CLT law of a sum of n local draws).

    Examples
    --------
    >>> from dplong.inference import sum_cdf
    >>> sum_cdf(0.0, 1.0, 0.5, 0.7071, "laplace")
    0.5
    >>> round(sum_cdf(1.96 * 2**0.5, 1.0, 1.0, 1.0, "gaussian"), 4)
    0.975
    """
    if law == "laplace":
        return normal_laplace_cdf(x, _normal_part(sampling_sd, noise_scale, noise_sd), noise_scale)
    return float(stats.norm.cdf(x, scale=math.hypot(sampling_sd, noise_sd)))


def _normal_part(sampling_sd: float, noise_scale: float, noise_sd: float) -> float:
    """The sd of the normal part of a Laplace-law estimate: sampling, plus whatever noise
    variance the Laplace of scale b does not carry (``sd² - 2b²``: the private count's share
    of a ratio estimate, a sum of several small noises treated as normal)."""
    unit = max(noise_sd, noise_scale) or 1.0  # in its units: squares overflowed past 1e154
    extra = max((noise_sd / unit) ** 2 - 2.0 * (noise_scale / unit) ** 2, 0.0)
    return math.hypot(sampling_sd, unit * math.sqrt(extra))


def half_widths(
    alpha: float,
    sampling_sd: np.ndarray,
    noise_scale: np.ndarray,
    noise_sd: np.ndarray,
    law: str,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """Half-widths of the (1 - α) intervals ``estimate ± q`` per parameter.

    ``q`` is the ``1 - α/2`` quantile of the sampling error plus the privacy noise
    (:func:`sum_cdf`), plus the bound on the clipping bias (an interval around a possibly
    shifted estimate: widening by the bound keeps its coverage). NaN where a term is not
    finite (a withheld parameter).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.inference import half_widths
    >>> half_widths(0.05, sampling_sd=np.array([1.0, np.nan]), noise_scale=np.array([0.0, 1.0]),
    ...             noise_sd=np.array([0.0, 2**0.5]), law="laplace").round(4).tolist()
    [1.96, nan]
    >>> half_widths(0.05, sampling_sd=np.array([0.3]), noise_scale=np.array([0.4]),
    ...             noise_sd=np.array([0.4]), law="normal", bias=np.array([0.02])).round(4).tolist()
    [1.0]
    """
    p = 1.0 - alpha / 2.0
    bias = np.zeros(len(sampling_sd)) if bias is None else np.asarray(bias)
    if law != "laplace":
        return np.asarray(stats.norm.ppf(p) * np.hypot(sampling_sd, noise_sd) + bias)
    return np.array(
        [
            normal_laplace_quantile(p, _normal_part(float(s), float(b), float(sd)), float(b))
            + float(c)
            if np.isfinite([s, b, sd]).all()
            else np.nan
            for s, b, sd, c in zip(sampling_sd, noise_scale, noise_sd, bias, strict=True)
        ]
    )


def p_values(
    estimate: np.ndarray,
    sampling_sd: np.ndarray,
    noise_scale: np.ndarray,
    noise_sd: np.ndarray,
    law: str,
    bias: np.ndarray,
) -> np.ndarray:
    """Two-sided p-values of ``θ = 0`` from the same law as the intervals.

    ``2 P(S + N >= |θ̂| - b)``: the clipping bias b is given to the null (conservative), so a
    p-value below α holds exactly when 0 lies outside the (1 - α) interval.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.inference import p_values
    >>> p_values(np.array([1.96]), np.array([1.0]), np.array([0.0]), np.array([0.0]),
    ...          "laplace", np.array([0.0])).round(3).tolist()
    [0.05]
    """
    out = []
    for theta, s, b, sd, c in zip(estimate, sampling_sd, noise_scale, noise_sd, bias, strict=True):
        if not np.isfinite(s):
            out.append(np.nan)
            continue
        excess = max(abs(float(theta)) - float(c), 0.0)
        out.append(min(1.0, 2.0 * (1.0 - sum_cdf(excess, float(s), float(b), float(sd), law))))
    return np.asarray(out)
