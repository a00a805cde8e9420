"""The public options of :func:`~dplong.winsorized_mean`, checked before any noise: the
declaration of a key constant within users, a stated scale or radius, public ranges, and the
support and tail that only the default engine takes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong._validation import not_columns, per_column
from dplong.exceptions import ParameterError
from dplong.models.option_checks import check_ranges_stand
from dplong.models.pooled.frame import column_range, parse_bounds
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import TailOption, check_tail

__all__: list[str] = []


def _check_by_constant(
    by_constant: object, by: object, *, privacy: object, variant: object, focus: object
) -> None:
    """``by_constant`` declares a ``by`` key and releases its levels with the default engine."""
    if not isinstance(by_constant, bool):
        raise ParameterError(f"by_constant must be True or False, got {by_constant!r}")
    if by_constant and by is None:
        raise ParameterError(
            "by_constant=True declares the by= key constant within users: give by="
        )
    if by_constant and (privacy != "central" or variant != "default" or focus is not None):
        raise ParameterError(
            "by_constant=True releases each level on its own with the default engine "
            '(variant="default", privacy="central") and takes no focus'
        )


def _stated_scale(scale: Any, tau: Any, n: int, d: int, gamma: float) -> NDArray[np.float64] | None:
    """The stated variance proxies (from ``scale`` or ``tau``), or None to estimate them."""
    estimate = isinstance(scale, str) and scale == "estimate"
    if tau is not None:
        if not estimate:
            raise ParameterError(
                'give scale= (variance proxy of one user\'s value, or "estimate") or tau= '
                "(concentration radius), not both"
            )
        radius = per_column(tau, d, "tau")
        return radius**2 / (2.0 * math.log(2.0 * d * n / gamma))
    if estimate:
        return None
    if scale is None or isinstance(scale, str):
        raise ParameterError(f'scale must be "estimate", a number or one per column; got {scale!r}')
    return per_column(scale, d, "scale")


def _support_and_tail(
    lower: Any, tail: Any, options: ReleaseOptions, d: int
) -> tuple[NDArray[np.float64] | None, TailOption | None]:
    """The public lower end of each column's support and the tail option (None: not given),
    which shape the default engine's release only."""
    if (lower is not None or tail is not None) and (options.local or options.variant != "default"):
        raise ParameterError(
            'lower and tail shape the default engine\'s release (variant="default", '
            'privacy="central"); the paper\'s algorithms take neither'
        )
    stated_tail = check_tail(tail, d, default_engine=True)
    return None if lower is None else per_column(lower, d, "lower", positive=False), stated_tail


def _stated_bounds(
    bounds: Any, columns: tuple[str, ...], options: ReleaseOptions, *, others: dict[str, bool]
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """The public range (lows, highs) of each of ``columns`` from ``bounds``: one pair for
    every column, a mapping naming each column's (the command line's ``"COL=LO,HI;..."``), or
    None. Only the default engine's central release takes them, and with them no option
    that shapes a search for the data (``others``: which of scale, tau, lower and tail were
    given)."""
    if bounds is None:
        return None
    check_ranges_stand(options, others)
    if isinstance(bounds, str):
        bounds = parse_bounds(bounds)
    if isinstance(bounds, Mapping):
        unknown = [name for name in bounds if name not in columns]
        if unknown:
            said = "bounds names " + ", ".join(map(repr, unknown)) + ", which"
            raise ParameterError(not_columns(said, unknown, columns, "the averaged columns"))
        missing = [name for name in columns if name not in bounds]
        if missing:
            raise ParameterError(
                f"bounds gives no range for {missing}: name every column's (low, high), or "
                "give one pair for all"
            )
        pairs = [column_range(bounds[name], name) for name in columns]
    else:
        pairs = [column_range(bounds, name) for name in columns]
    ranges = np.array(pairs, dtype=np.float64)
    return ranges[:, 0], ranges[:, 1]
