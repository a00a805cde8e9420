"""Precision weights of :class:`~dplong.RandomEffectsLocation` (``weights="precision"``): when
they apply, the preliminary location's budget share, and every user's GLS weight from the
released variance components (``docs/design/location.md``). Functions of public facts and
released numbers; the row counts enter only inside the mechanism."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from dplong._validation import check_choice
from dplong.dependence import DependenceModel
from dplong.exceptions import ParameterError
from dplong.models.option_checks import DEFAULT_MAX_ROWS, check_max_rows, refuse_max_rows
from dplong.models.release_blocks import sound_plan
from dplong.privacy.budget import users_share
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.rules import UserWeights

__all__ = [
    "CENTRED_USERS",
    "PRELIMINARY_SHARES",
    "PRELIMINARY_USERS",
    "WEIGHTS",
    "Weights",
    "centred_on_preliminary",
    "preliminary_share",
]

#: How users are weighted in the location (``RandomEffectsLocation.fit``'s ``weights``).
Weights = Literal["precision", "equal"]
WEIGHTS: tuple[Weights, ...] = ("precision", "equal")
#: The preliminary equal-weight location that centres the variance components and the weighted
#: location when the location is precision-weighted gets :data:`PRELIMINARY_USERS` (ε·n) of the
#: location's budget, within :data:`PRELIMINARY_SHARES` (:func:`preliminary_share`). Its error
#: bound is the weighted release's centre's, so it needs a sound plan more than precision, and
#: a withheld one withholds μ (at fewer users' worth its scale's median missed now and then);
#: the rest goes to the weighted location (docs/design/location.md). The lower share keeps its
#: noise falling with ε like the rest's (a noise-off fit stays exact).
PRELIMINARY_USERS = 450.0
PRELIMINARY_SHARES = (0.05, 0.2)
#: The least ε·n of the preliminary location (its users' worth, a public fact) at which the
#: weighted location takes it as its centre instead of locating its own: a withheld preliminary
#: then withholds μ. Below this a withheld preliminary cost μ more than its centre saved
#: (``benchmarks/random_effects_location.py``; docs/design/location.md).
CENTRED_USERS = 300.0


def _check_weights(
    weights: Any,
    max_rows: Any,
    variance_share: float,
    options: ReleaseOptions,
    scale: Any,
    stated: bool,
    n: int,
) -> int | None:
    """Resolve ``weights`` and check ``max_rows``, from public facts only (before any noise):
    the cap of precision weights (``max_rows``, default :data:`DEFAULT_MAX_ROWS`), or None for
    equal weights. ``weights="equal"`` refuses a stated ``max_rows`` (it would ignore it); the
    default's equal weights (where n and ε leave precision weights unsound) do not, so that a
    stated cap never decides whether a fit runs.

    Precision weights apply with released components (``variance_share > 0``), the default
    central engine and no dependence model; by default (None) they are used when they apply
    and the preliminary location's plan is sound (its midpoint gets enough budget for n users:
    no refusal and no reliability note), else equal weights.
    """
    applies = (
        variance_share > 0
        and not options.local
        and options.variant == "default"
        and not isinstance(scale, DependenceModel)
    )
    if weights == "equal":
        refuse_max_rows(max_rows, 'with weights="precision" only (equal weights ignore the rows)')
    if not applies:  # options, not n and ε, rule the precision weights out: max_rows unread
        refuse_max_rows(
            max_rows,
            "with precision weights only, which need the released variance components, the "
            "default central engine and no dependence model as scale",
        )
    if weights is None:
        share = (1.0 - variance_share) * preliminary_share(n, options.epsilon, variance_share)
        sound = applies and sound_plan(n, 1, options, share, stated=stated)
        weights = "precision" if sound else "equal"
    choice = check_choice(weights, "weights", WEIGHTS)
    if choice == "precision" and not applies:
        raise ParameterError(
            'weights="precision" needs the released variance components (variance_share > 0), '
            'the default engine (variant="default", privacy="central") and no dependence '
            'model as scale; use weights="equal"'
        )
    cap = check_max_rows(DEFAULT_MAX_ROWS if max_rows is None else max_rows)
    return cap if choice == "precision" else None


def preliminary_share(n: int, epsilon: float, variance_share: float) -> float:
    """The preliminary location's share of the location's budget (``1 - variance_share`` of
    ε): :data:`PRELIMINARY_USERS` users' worth of ε·n, within :data:`PRELIMINARY_SHARES`. A
    function of public facts.

    Examples
    --------
    >>> from dplong.models.location_weights import preliminary_share
    >>> [preliminary_share(n, 1.0, 0.5) for n in (2000, 5000, 50_000)]
    [0.2, 0.18, 0.05]
    """
    low, high = PRELIMINARY_SHARES
    return users_share(PRELIMINARY_USERS / (1.0 - variance_share), n, epsilon, low, high)


def centred_on_preliminary(n: int, epsilon: float, variance_share: float) -> bool:
    """Whether the precision-weighted location takes the preliminary one as its public centre:
    where that one gets :data:`CENTRED_USERS` of ε·n or more (its share of the location's
    ``1 - variance_share`` of ε, :func:`preliminary_share`; rounded to whole users' worth, so
    that a budget landing on the threshold is not decided by float rounding). Public facts.

    Examples
    --------
    >>> from dplong.models.location_weights import centred_on_preliminary
    >>> [centred_on_preliminary(n, 1.0, 0.5) for n in (2000, 3000, 5000)]
    [False, True, True]
    """
    share = (1.0 - variance_share) * preliminary_share(n, epsilon, variance_share)
    return round(share * n * epsilon) >= CENTRED_USERS


def _precision_weights(
    rows: np.ndarray, group_var: float, scale: float, max_rows: int
) -> UserWeights:
    """``w_u = v(T_cap) / v(min(T_u, T_cap))`` with ``v(T) = σ̂_U² + σ̂²/T``, in ``[w(1), 1]``.

    Post-processing of the released components (NaN or zero components: equal weights). The
    floor ``w(1)`` is public (a function of released numbers and the cap).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.location_weights import _precision_weights
    >>> w = _precision_weights(np.array([1.0, 4.0, 50.0]), 1.0, 4.0, max_rows=4)
    >>> w.values.tolist(), w.floor
    ([0.4, 1.0, 1.0], 0.4)
    """
    capped = np.minimum(rows, max_rows)
    if not (np.isfinite(group_var) and np.isfinite(scale)) or max(group_var, scale) <= 0.0:
        return UserWeights(np.ones(rows.shape), 1.0)
    group_var, scale = max(group_var, 0.0), max(scale, 0.0)
    top = group_var + scale / max_rows
    with np.errstate(divide="ignore", invalid="ignore"):
        values = top / (group_var + scale / capped)
    return UserWeights(np.where(rows >= 1, values, 0.0), top / (group_var + scale))
