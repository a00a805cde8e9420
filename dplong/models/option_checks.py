"""Checks of the public options several models share, run before any noise: the ``scale``
per column, the cap on the rows that raise a user's weight (and its refusal where a fit would
ignore it), a lower bound on rows per user, the accountant, the one covariance offered, and
where public ranges of the statistics may stand."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from dplong._validation import describe, per_column
from dplong.dependence import DependenceModel
from dplong.exceptions import ParameterError
from dplong.privacy.accounting import Accountant
from dplong.privacy.options import ReleaseOptions

__all__ = [
    "COV_TYPES",
    "DEFAULT_MAX_ROWS",
    "MAX_ROWS_LIMIT",
    "CovType",
    "ScaleLike",
    "check_accountant",
    "check_max_rows",
    "check_min_rows",
    "check_ranges_stand",
    "refuse_max_rows",
    "scale_per_column",
]

ScaleLike = float | NDArray[np.float64] | list[float] | DependenceModel | Literal["estimate"]
CovType = Literal["clustered", "cluster"]
#: The person-clustered sandwich in linearmodels' and statsmodels' spelling: the only one.
COV_TYPES: tuple[CovType, ...] = ("clustered", "cluster")


def scale_per_column(scale: Any, d: int, dependence_scale: Any) -> NDArray[np.float64] | None:
    """A number or per-parameter array as is; a dependence model through ``dependence_scale``;
    ``"estimate"`` gives None (estimated privately at release)."""
    if isinstance(scale, str) and scale == "estimate":
        return None
    if isinstance(scale, DependenceModel):
        return np.broadcast_to(np.asarray(dependence_scale(scale), dtype=np.float64), (d,)).astype(
            np.float64
        )
    if scale is None or isinstance(scale, str):
        raise ParameterError(
            'scale must be "estimate" (the default: estimated privately), a number (variance '
            "proxy of one user's statistic), one per parameter, or a dplong.dependence model; "
            f"got {scale!r}"
        )
    return per_column(scale, d, "scale")


#: Default public cap ``T_cap`` on the rows that raise a user's precision weight (``max_rows``
#: of the weighted fits), chosen with ``benchmarks/within_and_weights.py``: a user with more
#: rows weighs as one with ``T_cap``; a larger cap makes every other weight, hence the weighted
#: count, smaller (more noise) for little gain at the usual variance ratios.
DEFAULT_MAX_ROWS = 10


#: The largest ``max_rows`` accepted: 10⁵ rows a person (a row a day for 270 years). The cap
#: is public, so a fit may allocate in proportion to it before any row is read:
#: :class:`~dplong.RandomEffects`' results hold θ for every row count up to the cap, one
#: Series of that length (1.6 MB at this limit, with its index); nothing else grows with it.
#: A typo such as ``10**9`` is refused before any noise instead of running out of memory
#: after the budget is spent.
MAX_ROWS_LIMIT = 10**5


def check_max_rows(max_rows: Any, smallest: int = 1) -> int:
    """A public cap on the rows that raise a user's weight: an integer from ``smallest`` to
    :data:`MAX_ROWS_LIMIT`."""
    if (
        isinstance(max_rows, bool)
        or not isinstance(max_rows, int | np.integer)
        or not smallest <= max_rows <= MAX_ROWS_LIMIT
    ):
        raise ParameterError(
            f"max_rows (public cap on the rows that raise a user's weight) must be an integer "
            f"from {smallest} to {MAX_ROWS_LIMIT:,}, got {describe(max_rows)}"
        )
    return int(max_rows)


def refuse_max_rows(max_rows: Any, applies: str) -> None:
    """Refuse, not ignore, a ``max_rows`` the fit would not use; ``applies`` says where it
    does (and why not here).

    Examples
    --------
    >>> from dplong.models.option_checks import refuse_max_rows
    >>> refuse_max_rows(None, "to the within estimator only")   # not given: nothing to refuse
    >>> refuse_max_rows(4, "to the within estimator only")
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: max_rows applies to the within estimator only; drop it (got 4)
    """
    if max_rows is not None:
        raise ParameterError(f"max_rows applies {applies}; drop it (got {describe(max_rows)})")


def check_accountant(accountant: Any) -> None:
    """Refuse an ``accountant`` that is neither None nor a :class:`~dplong.Accountant`."""
    if accountant is not None and not isinstance(accountant, Accountant):
        raise ParameterError(
            f"accountant must be a dplong.Accountant, got {type(accountant).__name__}"
        )


def check_min_rows(min_rows: Any, needed_for: str) -> int:
    """A public lower bound on rows per user: a positive integer."""
    if isinstance(min_rows, bool) or not isinstance(min_rows, int | np.integer) or min_rows < 1:
        raise ParameterError(
            f"min_rows (a public lower bound on rows per user, a positive "
            f"integer) is needed to {needed_for}; got {min_rows!r}"
        )
    return int(min_rows)


def check_ranges_stand(options: ReleaseOptions, searches: dict[str, bool]) -> None:
    """Public ranges of the statistics (``bounds=``) hold the default engine's central release,
    which then finds nothing privately: refused with the local model (which takes ``bound=``),
    the paper's pipeline, or any of the ``searches`` given (options that shape a search for
    the data, by name: whether each was given).

    Examples
    --------
    >>> from dplong.models.option_checks import check_ranges_stand
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(100, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> check_ranges_stand(options, {"scale": False})
    >>> check_ranges_stand(options, {"scale": True})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: bounds= states the range, ...: give bounds= or scale, not both
    """
    if options.local or options.variant != "default":
        raise ParameterError(
            'bounds= holds the default engine\'s central release (variant="default", '
            'privacy="central"); the local model takes bound=, the paper\'s algorithms neither'
        )
    given = [name for name, was in searches.items() if was]
    if given:
        raise ParameterError(
            "bounds= states the range, so nothing is found privately: give bounds= or "
            f"{' and '.join(given)}, not both"
        )
