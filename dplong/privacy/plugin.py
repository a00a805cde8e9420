"""The default pipeline — estimate each column's scale privately, then release the mean with it —
and its public entry point for plain user-level means, :func:`winsorized_mean`.

``scale="estimate"`` in every model and in :func:`dplong.winsorized_mean` runs
:func:`~dplong.privacy.estimate_scale` with a share of ε and δ, turns the estimated variance
proxies into the radii τ, τ' and releases the mean with the rest (sequential composition: the
two ledgers add up). The analyst states nothing about the data's scale beyond, optionally, loose
bounds on it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dplong._grouping import factorize_groups, group_means
from dplong._validation import (
    RandomState,
    as_finite_matrix,
    check_choice,
    check_fraction,
    check_random_state,
    per_column,
)
from dplong.exceptions import ParameterError
from dplong.privacy.accounting import Accountant
from dplong.privacy.radius import DEFAULT_GAMMA, bin_radius, concentration_radius
from dplong.privacy.variance import METHODS, ScaleEstimate, estimate_scale
from dplong.privacy.winsorized import (
    ReleaseOptions,
    WinsorizedMeanResult,
    column_names,
    midpoint_budget,
    release_mean,
)

__all__ = [
    "ScaleRequest",
    "default_scale_share",
    "estimate_first",
    "release_with_scale",
    "winsorized_mean",
]


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


def release_with_scale(
    matrix: NDArray[np.float64],
    *,
    scale: NDArray[np.float64] | None,
    identified: NDArray[np.bool_] | None,
    names: tuple[str, ...],
    options: ReleaseOptions,
    request: ScaleRequest,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
    squeeze: bool = False,
) -> WinsorizedMeanResult:
    """:func:`release_mean` with radii from per-column variance proxies ``scale``.

    With ``scale=None`` the proxies are first estimated privately (:func:`estimate_first`:
    ``request.share`` of the budget in ``options``, the mean's public checks and the
    accountant's before any noise) and the ledger covers both steps. The result's ``scale``
    holds the proxies used.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.plugin import ScaleRequest, release_with_scale
    >>> from dplong.privacy.winsorized import ReleaseOptions
    >>> x = np.random.default_rng(0).normal(5.0, 2.0, size=(5000, 1))
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> res = release_with_scale(
    ...     x, scale=None, identified=None, names=("x",), options=options,
    ...     request=ScaleRequest.check(None, None, "coinpress"), rng=np.random.default_rng(3))
    >>> bool(2.0 < res.scale[0] < 10.0), round(res.privacy.epsilon, 12)   # variance 4
    (True, 1.0)
    >>> bool(abs(res.estimate[0] - 5.0) < 0.2)
    True
    """
    n, d = matrix.shape
    scale_ledger = None
    if scale is None:
        values = matrix if identified is None else np.where(identified[:, None], matrix, np.nan)
        estimate, options = estimate_first(
            values, options=options, request=request, rng=rng, accountant=accountant, names=names
        )
        scale, scale_ledger = estimate.scale, estimate.privacy
    release = release_mean(
        matrix,
        tau=concentration_radius(scale, n, d, options.gamma),
        tau_bins=bin_radius(scale, options.gamma),
        rng=rng,
        options=options,
        names=names,
        accountant=accountant if scale_ledger is None else None,
        identified=identified,
        squeeze=squeeze,
    )
    release = dataclasses.replace(release, scale=scale.item() if squeeze else scale)
    if scale_ledger is not None:
        release = dataclasses.replace(release, privacy=scale_ledger + release.privacy)
        if accountant is not None:
            accountant.record(release.privacy)
    return release


def winsorized_mean(
    values: ArrayLike,
    *,
    epsilon: float,
    delta: float | None = None,
    groups: ArrayLike | None = None,
    scale: float | ArrayLike | str = "estimate",
    tau: float | ArrayLike | None = None,
    scale_share: float | None = None,
    scale_bounds: tuple[float, float] | None = None,
    scale_method: str = "coinpress",
    privacy: str = "central",
    bound: float | ArrayLike | None = None,
    random_state: RandomState = None,
    variant: str = "improved",
    midpoint_share: float | None = None,
    sample_split: bool = False,
    gamma: float = DEFAULT_GAMMA,
    refine: bool = True,
    names: Sequence[str] | None = None,
    accountant: Accountant | None = None,
) -> WinsorizedMeanResult:
    """User-level differentially private mean of one or several columns.

    Parameters
    ----------
    values : array_like, shape (rows,) or (rows, d)
        One value (or row) per user, or many rows per user together with ``groups``.
    epsilon : float
        Total privacy budget ε > 0 of this release, over all columns.
    delta : float, optional
        Total δ ∈ (0, 1). Central default ``1/n**2``; local default ``None`` (pure ε-LDP).
    groups : array_like, optional
        User id of every row: rows are first averaged per user (Def 5.1), so the release is
        user-level DP and n is the number of distinct ids.
    scale : "estimate", float or array_like
        Variance proxy ρ of one user's value in each column (the variance for Gaussian data).
        Gives τ = √(2ρ log(2dn/γ)) and τ' = √(2ρ log(2/γ)). Default ``"estimate"``: ρ is
        estimated privately (:func:`~dplong.privacy.estimate_scale`) with ``scale_share`` of
        ε and δ, and the mean gets the rest.
    tau : float or array_like, optional
        Concentration radius τ per column, given directly instead of ``scale``.
    scale_share, scale_bounds, scale_method
        With ``scale="estimate"``: the share of the budget for the scale (default
        :func:`~dplong.privacy.plugin.default_scale_share`), loose public bounds
        ``(σ²_min, σ²_max)`` on it and the plug-in (``"coinpress"`` or ``"bisection"``).
    privacy : {"central", "local"}
        Trusted curator, or each user privatising their value (needs ``bound``).
    bound : float or array_like, optional
        Public bound B with ``|mean| <= B`` per column; required for ``privacy="local"``.
    random_state : None, int or numpy.random.Generator
        ``None`` (fresh OS entropy) for a release; a seed only for reproducible research.
    variant : {"improved", "theory"}
        §7.1.2 constants (default) or the paper's theory constants (Alg 3, 4).
    midpoint_share : float, optional
        Share of each column's ε spent on the midpoint; default :func:`default_midpoint_share`
        centrally, and the paper's ½ locally and for ``variant="theory"``.
    sample_split : bool
        Use the sample-split estimator of eq. (1) (central only).
    gamma : float
        Failure probability γ behind the radii (see :mod:`dplong.privacy.radius`).
    refine : bool
        With ``variant="improved"`` in the central model (no sample split), spend a small,
        publicly chosen share of ε on a rough mean and re-centre the final interval at it,
        which roughly halves its width when n·ε is large (:func:`refinement_share`). Set False
        for the paper's one-pass estimator.
    names : sequence of str, optional
        Column names for the ledger.
    accountant : Accountant, optional
        Budget to charge; the release is refused before any noise if it does not fit.

    Returns
    -------
    WinsorizedMeanResult

    Examples
    --------
    >>> import numpy as np, dplong
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(3.0, 1.0, size=(10_000, 5))          # 1,000 users x 10 visits
    >>> users = np.repeat(np.arange(1_000), 10)
    >>> res = dplong.winsorized_mean(x[:, 0], groups=users, epsilon=1.0, scale=0.1,
    ...                              random_state=1)
    >>> abs(res.estimate - 3.0) < 0.1
    True
    >>> res.privacy.epsilon <= 1.0, res.n
    (True, 1000)
    """
    rng = check_random_state(random_state)
    matrix = as_finite_matrix(values)
    squeeze = np.ndim(values) == 1
    if groups is not None:
        codes, n = factorize_groups(groups, matrix.shape[0])
        matrix = group_means(matrix, codes, n)
    n, d = matrix.shape
    options = ReleaseOptions.check(
        n,
        epsilon=epsilon,
        delta=delta,
        privacy=privacy,
        bound=bound,
        d=d,
        variant=variant,
        midpoint_share=midpoint_share,
        sample_split=sample_split,
        gamma=gamma,
        refine=refine,
    )
    if tau is not None:
        if not (isinstance(scale, str) and scale == "estimate"):
            raise ParameterError(
                'give scale= (variance proxy of one user\'s value, or "estimate") or tau= '
                "(concentration radius), not both"
            )
        tau_j = per_column(tau, d, "tau")
        ratio = math.sqrt(math.log(2.0 / options.gamma) / math.log(2.0 * d * n / options.gamma))
        return release_mean(
            matrix,
            tau=tau_j,
            tau_bins=tau_j * ratio,  # τ' from the τ it implies
            rng=rng,
            options=options,
            names=column_names(names, d),
            accountant=accountant,
            squeeze=squeeze,
        )
    if isinstance(scale, str) and scale == "estimate":
        proxy = None
    elif scale is None or isinstance(scale, str):
        raise ParameterError(f'scale must be "estimate", a number or one per column; got {scale!r}')
    else:
        proxy = per_column(scale, d, "scale")
    return release_with_scale(
        matrix,
        scale=proxy,
        identified=None,
        names=column_names(names, d),
        options=options,
        request=ScaleRequest.check(scale_share, scale_bounds, scale_method),
        rng=rng,
        accountant=accountant,
        squeeze=squeeze,
    )
