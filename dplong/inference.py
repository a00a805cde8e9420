"""Quantiles of (sampling error + privacy noise), computed from public and released numbers only.

The released estimate is ``θ + S + N``: S the sampling error of the non-private statistic
(approximately normal with standard deviation ``s`` by the CLT over users) and N the privacy
noise, Laplace with scale ``b`` in the central model (the lattice noise is a two-sided
geometric on a step ~1e-6 b, whose quantiles equal the Laplace's to that precision) and a sum
of n per-user Laplace draws, normal to CLT accuracy, in the local model. In the central model
we use the exact normal-Laplace convolution, not a normal approximation of the noise.
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
    """
    if b <= NEGLIGIBLE * s:
        return float(stats.norm.ppf(p, scale=s))
    if s <= NEGLIGIBLE * b:
        return float(stats.laplace.ppf(p, scale=b))
    upper = stats.norm.ppf(p, scale=s) + stats.laplace.ppf(p, scale=b)  # F(upper) >= p
    return float(
        optimize.brentq(lambda x: normal_laplace_cdf(x, s, b) - p, 0.0, upper, xtol=1e-12 * upper)
    )


def half_widths(
    alpha: float,
    sampling_sd: np.ndarray,
    noise_scale: np.ndarray,
    noise_sd: np.ndarray,
    local: bool,
) -> np.ndarray:
    """Half-widths of the (1 - α) intervals ``estimate ± q`` per parameter.

    Central: the normal-Laplace quantile of ``sampling_sd`` and ``noise_scale`` (NaN where
    ``sampling_sd`` is not finite). Local: the normal quantile of the combined standard
    deviation ``√(sampling_sd² + noise_sd²)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.inference import half_widths
    >>> half_widths(0.05, sampling_sd=np.array([1.0, np.nan]), noise_scale=np.array([0.0, 1.0]),
    ...             noise_sd=np.array([0.0, 2**0.5]), local=False).round(4).tolist()
    [1.96, nan]
    >>> half_widths(0.05, sampling_sd=np.array([0.3]), noise_scale=np.array([0.5]),
    ...             noise_sd=np.array([0.4]), local=True).round(4).tolist()    # 1.96 * 0.5
    [0.98]
    """
    p = 1.0 - alpha / 2.0
    if local:  # sum of n Laplace draws: normal by the CLT, variance added exactly
        return np.asarray(stats.norm.ppf(p) * np.sqrt(sampling_sd**2 + noise_sd**2))
    return np.array(
        [
            normal_laplace_quantile(p, float(s), float(b)) if np.isfinite(s) else np.nan
            for s, b in zip(sampling_sd, noise_scale, strict=True)
        ]
    )
