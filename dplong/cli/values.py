"""The readers of option values: each turns an argument's text into its value, or refuses it
with the message argparse prints after the option's name."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from dplong._validation import ALPHA_EXPECTED, ALPHA_RANGE, LARGEST_EPSILON


def _whole_number(text: str, least: int, expected: str) -> int:
    """``text`` as a whole number of at least ``least``; else the refusal "must be
    ``expected``"."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
    return value


def _seed(text: str) -> int:
    return _whole_number(text, 0, "a non-negative whole number")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _epsilon(text: str) -> float:
    """``--epsilon``: positive and at most the library's largest, checked as the options are
    read (a larger one was refused by the fit, after the data were read and "fitting" said)."""
    value = _positive(text)
    if value > LARGEST_EPSILON:
        raise argparse.ArgumentTypeError(f"must be at most {LARGEST_EPSILON:g}, got {text!r}")
    return value


def _alpha(text: str) -> float:
    """``--alpha``: the library's range (:data:`~dplong._validation.ALPHA_RANGE`), checked as
    the options are read, before any noise (it was checked by the summary, after the fit)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    low, high = ALPHA_RANGE
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"must be {ALPHA_EXPECTED}, got {text!r}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"must name at least one parameter, got {text!r}")
    return names


def _positive_list(text: str) -> float | list[float]:
    try:
        values = [_positive(part) for part in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be a positive number or comma-separated positive numbers, got {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values


def _domain(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (float(part) for part in parts)
    except ValueError:
        lo, hi = math.nan, math.nan
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(
            f"must be LO,HI with finite LO < HI (e.g. 1,12; where LO is negative, join it to "
            f"the flag with '=': FLAG=-1,1), got {text!r}"
        )
    return lo, hi


def _pair(text: str) -> tuple[float, float]:
    try:
        first, second = (float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be two numbers A,B, got {text!r}") from None
    return first, second


def _levels(text: str) -> tuple[str, list[str]]:
    column, _, values = text.partition("=")
    levels = values.split(",")
    if not column or not values or "" in levels:
        raise argparse.ArgumentTypeError(
            f"must be COLUMN=LEVEL,LEVEL,... (the first level is the reference), got {text!r}"
        )
    return column, levels


def _grid_count(text: str) -> int:
    return _whole_number(text, 2, "a whole number of points >= 2")


def _users(text: str) -> int:
    return _whole_number(text, 1, "a positive whole number")


#: How each kind of model option is read (:class:`~dplong.models.command_line.Option`).
_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "positive": _positive,
    "positives": _positive_list,
    "range": _domain,
    "pair": _pair,
    "count": _grid_count,
    "text": str,
    "names": lambda text: tuple(name.strip() for name in text.split(",")),
}
