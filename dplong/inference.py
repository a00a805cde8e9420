"""Quantiles of (sampling error + privacy noise), computed from public and released numbers only.

The released estimate is ``θ + S + N``: S the sampling error of the non-private statistic
(approximately normal with standard deviation ``s`` by the CLT over users) and N the privacy
noise, Laplace with scale ``b`` in the central model (the lattice noise is a two-sided
geometric on a step ~1e-6 b, whose quantiles equal the Laplace's to that precision) and a sum
of n per-user Laplace draws, normal to CLT accuracy, in the local model. We use the exact
normal-Laplace convolution, not a normal approximation of the noise.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats


def normal_laplace_cdf(x: float, s: float, b: float) -> float:
    """CDF of ``N(0, s²) + Laplace(0, b)`` (Reed 2006), evaluated in log space for stability."""
    if b == 0.0:
        return float(stats.norm.cdf(x, scale=s))
    if s == 0.0:
        return float(stats.laplace.cdf(x, scale=b))
    shift = s * s / (2.0 * b * b)
    left = math.exp(shift - x / b + special.log_ndtr(x / s - s / b))
    right = math.exp(shift + x / b + special.log_ndtr(-x / s - s / b))
    return float(special.ndtr(x / s) - 0.5 * left + 0.5 * right)


def normal_laplace_quantile(p: float, s: float, b: float) -> float:
    """Upper quantile ``q`` with ``P(S + N <= q) = p`` for ``p > 1/2`` (symmetric law)."""
    if b == 0.0:
        return float(stats.norm.ppf(p, scale=s))
    if s == 0.0:
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
    """Half-widths of the (1 - α) intervals ``estimate ± q`` per parameter."""
    p = 1.0 - alpha / 2.0
    if local:  # sum of n Laplace draws: normal by the CLT, variance added exactly
        return np.asarray(stats.norm.ppf(p) * np.sqrt(sampling_sd**2 + noise_sd**2))
    return np.array(
        [
            normal_laplace_quantile(p, float(s), float(b)) if np.isfinite(s) else np.nan
            for s, b in zip(sampling_sd, noise_scale, strict=True)
        ]
    )
