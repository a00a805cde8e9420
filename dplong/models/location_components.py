"""The variance components of :class:`~dplong.RandomEffectsLocation` (Def 5.8): their block,
centred on the released location, and under a stated Gaussian model their public ranges and
scales (``docs/design/location.md``)."""

from __future__ import annotations

import math

import numpy as np

from dplong._validation import LARGEST_SQUARED_SCALE
from dplong.bounds import bound_terms
from dplong.exceptions import ParameterError
from dplong.models.blocks import Block, Statistics
from dplong.models.location_moments import _UserMoments
from dplong.privacy.engine import Release
from dplong.privacy.radius import SCALE_PAIR, AssumedTail, concentration_radius

__all__ = ["COMPONENTS", "STATED_PROXIES", "check_stated_proxies"]

#: The variance components, in the order they are released (both variances: at least 0).
COMPONENTS = ("Group Var", "Scale")
#: The stated proxies the components are released under (a Gaussian model), from the smallest
#: normal double up: Scale's range is a few times ρ_res and its release's lattice unit 2**-52
#: of the range, 0 (a division by zero, after the location's noise) below 2**-1022 · 2**52; the
#: components' variances are twice the proxies' squares (:func:`_gaussian_component_scales`).
STATED_PROXIES = (2.0**-1022, LARGEST_SQUARED_SCALE)


def _components_block(
    moments: _UserMoments,
    share: float,
    stated: tuple[float, float] | None,
    min_rows: int | None,
    n: int,
    gamma: float,
) -> Block:
    """The components' block, released after the location (the first release): per user
    ``(ȳ_u - μ̂)² - s²_u/T_u`` (Group Var) and ``s²_u`` (Scale), centred on the released μ̂.
    ``stated``: the user mean's and the residuals' variance proxies under a Gaussian model
    (public ranges and scales), or None to estimate the scales privately under skewed tails."""

    def components(done: tuple[Release, ...]) -> Statistics:
        located = bool(np.isfinite(done[0].estimate[0]))
        # a withheld location still released a centre: the moments are centred there, and
        # Group Var, which that centre's unknown error shifts, is withheld in the results
        # (_location_results); Scale does not depend on it
        mu = float(done[0].estimate[0] if located else done[0].interval[0].mean())
        component_scale = None if stated is None else _gaussian_component_scales(*stated, min_rows)
        # E(ȳ_u - μ̂)² = Var ȳ_u + (μ̂ - μ)²: Group Var is shifted by the square of μ̂'s
        # error, at most its released error bound squared (1 - γ); Scale is not
        shift = _error_bound(done[0], gamma) ** 2 if located else 0.0
        return Statistics(
            moments.components(mu),
            scale=component_scale,
            nonnegative=True,
            centre_bias=np.array([shift, 0.0]),
            # s²_u >= 0 for every user (a public fact of the statistic): Scale's interval stops
            # at 0 instead of clipping its long right tail as close as its short left one;
            # Group Var's statistic, (ȳ_u - μ̂)² - s²_u/T_u, has no lower end
            lower=np.array([-np.inf, 0.0]),
        )

    return Block(
        COMPONENTS,
        share,
        components,
        stated is not None,
        bounds=None if stated is None else _component_bounds(*stated, min_rows, n, gamma),
        # Group Var's statistic is a squared deviation of a normal user mean, χ²₁-like, and
        # s²_u a mean of T_u squares: a normal plug-in clips their right tails
        # (docs/design/location.md). Stated scales bound both instead.
        # assumed, not stated: the tail count checks them where the budget affords one
        tail=None
        if stated is not None
        else AssumedTail(("chi-square", "exponential"), squares=True),
        offers=SCALE_PAIR,  # stated only with within_scale=; the fit takes no tail= or lower=
    )


def check_stated_proxies(mean_proxy: float, residual_scale: float, residual: str) -> None:
    """Refuse stated proxies of a user's mean and residuals (``residual``: the argument that
    gave the latter) that :data:`STATED_PROXIES` does not hold, before any noise.

    Examples
    --------
    >>> from dplong.models.location_components import check_stated_proxies
    >>> check_stated_proxies(4.0, 1.0, "within_scale")    # both within: nothing said
    >>> check_stated_proxies(4.0, 1e-310, "within_scale")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: within_scale must be from 2.23e-308 (the smallest ...
    """
    low, high = STATED_PROXIES
    if not low <= residual_scale <= high:
        raise ParameterError(
            f"{residual} must be from {low:.3g} (the smallest normal double) to {high:g} for "
            f"the variance components' release, got {residual_scale:g}"
        )
    if mean_proxy > high:
        raise ParameterError(
            f"scale must be at most {high:g} (a user mean's variance proxy) where {residual} "
            f"is stated, as the variance components' release squares it; got {mean_proxy:g}"
        )


def _component_bounds(
    mean_proxy: float, residual_scale: float, min_rows: int | None, n: int, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """Public ranges of the per-user moments under the stated Gaussian model, holding for all
    users with probability at least 1 - γ: ``s²_u <= ρ_res χ²_k / k`` with ``k >= T - 1`` is at
    most ``ρ_res (1 + 2√(x/k) + 2x/k)`` (Laurent–Massart upper tail, x = log(4n/γ): a union
    over n users and two columns); ``|ȳ_u - μ̂| <= 1.1 τ`` (Lemma 5.2's τ, the 10 % margin
    covering μ̂'s error, O(τ/√n)), so ``(ȳ_u - μ̂)² - s²_u/T_u`` lies in
    ``[-upper/2, (1.1 τ)²]``."""
    k = max((min_rows or 2) - 1, 1)
    x = math.log(4.0 * n / gamma)
    upper_within = residual_scale * (1 + 2 * math.sqrt(x / k) + 2 * x / k)
    tau = float(concentration_radius(mean_proxy, n, 1, gamma))
    return np.array([-upper_within / 2.0, 0.0]), np.array([(1.1 * tau) ** 2, upper_within])


def _gaussian_component_scales(
    mean_proxy: float, residual_scale: float, min_rows: int | None
) -> np.ndarray:
    """Variances of the per-user moments for Gaussian users and residuals under the stated
    proxies: ``s²_u ~ ρ χ²_k / k`` has variance ``2ρ²/k``; ``ȳ_u - μ ~ N(0, v)`` is independent
    of s²_u, so ``(ȳ_u - μ)² - s²_u/T`` has variance ``2v² + 2ρ²/(k T²)``, with T >= k + 1."""
    k = max((min_rows or 2) - 1, 1)
    var_within = 2.0 * residual_scale**2 / k
    var_between = 2.0 * mean_proxy**2 + var_within / (k + 1) ** 2
    return np.array([var_between, var_within])


def _error_bound(release: Release, gamma: float) -> float:
    """The released bound on ``|μ̂ - μ|`` with probability ``1 - γ`` (:mod:`dplong.bounds`)."""
    _, _, total = bound_terms(
        gamma,
        release.noise_scale,
        release.noise_sd,
        release.sampling_sd,
        release.bias,
        release.noise_kind,
    )
    return float(total[0])
