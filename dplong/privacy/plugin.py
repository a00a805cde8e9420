"""The default pipeline: estimate each column's scale privately, then release the mean with it.

``scale="estimate"`` in every model and in :func:`dplong.winsorized_mean` runs
:func:`~dplong.privacy.estimate_scale` with a share of ε and δ, turns the estimated variance
proxies into the radii τ, τ' and releases the mean with the rest (sequential composition: the
two ledgers add up). The analyst states nothing about the data's scale beyond, optionally, loose
bounds on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong._validation import check_choice, check_fraction
from dplong.privacy.accounting import Accountant
from dplong.privacy.radius import bin_radius, concentration_radius
from dplong.privacy.variance import METHODS, ScaleEstimate, estimate_scale
from dplong.privacy.winsorized import (
    ReleaseOptions,
    WinsorizedMeanResult,
    midpoint_budget,
    release_mean,
)

__all__ = ["ScaleRequest", "default_scale_share", "estimate_first", "release_mean_estimated"]


def default_scale_share(n: int, epsilon: float, d: int = 1) -> float:
    """Share of ε (and δ) for the scale when none is given: ``800 d / (n ε)`` within [¼, ½].

    CoinPress needs a second-moment noise well below the data's own spread in every step, so
    small n·ε needs a larger share; at large n·ε a quarter costs the mean little. Measured by
    ``benchmarks/scale_share.py`` (docs/accuracy.md, "Estimated scale"): at ε = 1 the best
    share is about 0.4 for n = 2,000 and 0.25-0.3 from n = 4,000 on. Each of d columns gets
    1/d of the steps' budget, hence the factor d. Public facts only.

    Examples
    --------
    >>> from dplong.privacy.plugin import default_scale_share
    >>> default_scale_share(2_000, 1.0), default_scale_share(100_000, 1.0)
    (0.4, 0.25)
    >>> default_scale_share(4_000, 1.0, d=3)
    0.5
    """
    return float(min(max(800.0 * d / (n * epsilon), 0.25), 0.5))


@dataclass(frozen=True)
class ScaleRequest:
    """How ``scale="estimate"`` runs: budget share, public bounds and plug-in (validated).

    Examples
    --------
    >>> from dplong.privacy.plugin import ScaleRequest
    >>> ScaleRequest.check(None, None, "coinpress")         # share: default_scale_share
    ScaleRequest(share=None, bounds=None, method='coinpress')
    >>> ScaleRequest.check(1.0, None, "coinpress")
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: scale_share must be a number in (0, 1), got 1.0
    """

    share: float | None
    bounds: Any
    method: str

    @classmethod
    def check(cls, share: Any, bounds: Any, method: Any) -> ScaleRequest:
        """Validate the options once, with messages naming the argument (see the examples
        above); ``share=None`` defers to :func:`default_scale_share`."""
        if share is not None:
            check_fraction(share, "scale_share")
        return cls(
            None if share is None else float(share),
            bounds,
            check_choice(method, "scale_method", METHODS),
        )

    def describe(self, estimate: NDArray[np.float64]) -> str:
        """The assumption line for summaries (the estimate is a DP output).

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.plugin import ScaleRequest
        >>> ScaleRequest.check(None, None, "bisection").describe(np.array([0.5]))[:58]
        'Scale estimated privately (bisection, Alg 10-12; its budge'
        """
        shown = ", ".join(f"{v:.4g}" for v in np.atleast_1d(estimate))
        algorithms = "13-14" if self.method == "coinpress" else "10-12"
        return (
            f"Scale estimated privately ({self.method}, Alg {algorithms}; its budget is in the "
            f"ledger): variance proxy [{shown}] per parameter."
        )


def estimate_first(
    values: NDArray[np.float64],
    *,
    options: ReleaseOptions,
    request: ScaleRequest,
    rng: np.random.Generator,
    accountant: Accountant | None,
    names: tuple[str, ...],
) -> tuple[ScaleEstimate, ReleaseOptions]:
    """The scale step of a release whose total budget is ``options``.

    Splits ε and δ (``request.share``, default :func:`default_scale_share`), runs the public
    checks of the release that follows (:func:`~dplong.privacy.winsorized.midpoint_budget`) and
    the accountant's for the whole, then :func:`~dplong.privacy.estimate_scale` on ``values``
    (n x d; NaN: no statistic). Returns the estimate and the options left for the release.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.plugin import ScaleRequest, estimate_first
    >>> from dplong.privacy.winsorized import ReleaseOptions
    >>> x = np.random.default_rng(0).normal(0.0, 3.0, size=(8000, 1))
    >>> options = ReleaseOptions.check(8000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> estimate, rest = estimate_first(x, options=options, request=ScaleRequest.check(
    ...     0.25, None, "coinpress"), rng=np.random.default_rng(1), accountant=None,
    ...     names=("x",))
    >>> rest.epsilon, round(estimate.privacy.epsilon, 12)
    (0.75, 0.25)
    """
    n, d = values.shape
    share = default_scale_share(n, options.epsilon, d) if request.share is None else request.share
    scale_eps, scale_delta = share * options.epsilon, share * options.delta
    rest = dataclasses.replace(
        options, epsilon=options.epsilon - scale_eps, delta=options.delta - scale_delta
    )
    midpoint_budget(n, d, rest)  # the release's public checks, before any noise
    if accountant is not None:
        accountant.check(options.epsilon, options.delta)
    estimate = estimate_scale(
        values,
        epsilon=scale_eps,
        delta=scale_delta or None,
        method=request.method,
        privacy=options.privacy,
        bound=options.bound,
        scale_bounds=request.bounds,
        gamma=options.gamma,
        random_state=rng,
        names=names,
    )
    return estimate, rest


def release_mean_estimated(
    matrix: NDArray[np.float64],
    *,
    identified: NDArray[np.bool_] | None,
    names: tuple[str, ...],
    options: ReleaseOptions,
    request: ScaleRequest,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
    squeeze: bool = False,
) -> tuple[WinsorizedMeanResult, NDArray[np.float64]]:
    """Estimate the scale of each column privately, then :func:`release_mean` with it.

    ``options`` hold the total budget; ``request.share`` of ε and δ goes to the scale. The
    mean's public checks and the accountant's run before any noise. Returns the release (its
    ledger covers both steps) and the estimated variance proxies.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.plugin import ScaleRequest, release_mean_estimated
    >>> from dplong.privacy.winsorized import ReleaseOptions
    >>> x = np.random.default_rng(0).normal(5.0, 2.0, size=(5000, 1))
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> res, proxy = release_mean_estimated(
    ...     x, identified=None, names=("x",), options=options,
    ...     request=ScaleRequest.check(None, None, "coinpress"), rng=np.random.default_rng(3))
    >>> bool(2.0 < proxy[0] < 10.0), round(res.privacy.epsilon, 12)   # variance 4, within 2.5x
    (True, 1.0)
    >>> bool(abs(res.estimate[0] - 5.0) < 0.2)
    True
    """
    n, d = matrix.shape
    values = matrix if identified is None else np.where(identified[:, None], matrix, np.nan)
    estimate, mean = estimate_first(
        values, options=options, request=request, rng=rng, accountant=accountant, names=names
    )
    release = release_mean(
        matrix,
        tau=concentration_radius(estimate.scale, n, d, options.gamma),
        tau_bins=bin_radius(estimate.scale, options.gamma),
        rng=rng,
        options=mean,
        names=names,
        identified=identified,
        squeeze=squeeze,
    )
    release = dataclasses.replace(
        release,
        privacy=estimate.privacy + release.privacy,
        scale=estimate.scale.item() if squeeze else estimate.scale,
    )
    if accountant is not None:
        accountant.record(release.privacy)
    return release, estimate.scale
