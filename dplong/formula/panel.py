"""The design of a panel: its rows grouped by user, and the order that groups them."""

from __future__ import annotations

import datetime
import decimal
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong._validation import warn
from dplong.exceptions import DataHolderWarning
from dplong.formula.levels import matched_levels
from dplong.formula.users import GroupsLike, column_or_array


@dataclass(frozen=True)
class PanelDesign:
    """Rows grouped by user (stable, then by ``time`` if given) with user codes 0..n-1.

    ``y`` and ``X`` are patsy's arrays as built (``X`` row-major), not copies, when the data
    already come grouped by user and no row is dropped; otherwise one reordered copy.

    Examples
    --------
    >>> import dplong
    >>> from dplong.formula import build_design
    >>> design = build_design("lwage ~ exper", dplong.datasets.load_wage_panel(), groups="nr")
    >>> design.n, design.columns, design.X.shape
    (545, ('Intercept', 'exper'), (4360, 2))
    """

    y: NDArray[np.float64]
    X: NDArray[np.float64]
    codes: NDArray[np.intp]
    n: int
    columns: tuple[str, ...]
    outcome: str
    formula: str


def _sort_key(times: NDArray[Any]) -> NDArray[Any]:
    """``time`` as lexsort can order it: numbers and dates as they are, anything else (text,
    nullable numbers with ``pd.NA``, dates with a time zone) by rank. Where a time is missing
    the key means nothing: those rows are dropped (:meth:`DesignSpec.by_user
    <dplong.formula.DesignSpec.by_user>`).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dplong.formula.panel import _sort_key
    >>> import warnings
    >>> with warnings.catch_warnings():  # text: ordered as text, and the data holder told so
    ...     warnings.simplefilter("ignore")
    ...     _sort_key(np.array(["b", "a", "c"], dtype=object))
    array([1, 0, 2])
    >>> with warnings.catch_warnings():  # kinds that do not compare: numbers, then text, ...
    ...     warnings.simplefilter("ignore")
    ...     _sort_key(np.array([10, "b", {"week": 1}, 2], dtype=object))
    array([1, 2, 3, 0])
    """
    if times.dtype.kind in "biufmM":
        return times
    if pd.api.types.infer_dtype(times, skipna=True) == "string":
        warn(
            "time is text: each user's rows are ordered as text ('10' before '2'); convert "
            "numbers or dates written as text (pd.to_numeric, pd.to_datetime) to order them as "
            "such (on your screen only: dplong.exceptions.DataHolderWarning).",
            DataHolderWarning,
        )
    try:
        ranks: NDArray[np.intp] = pd.factorize(times, sort=True)[0]
    except TypeError:  # ordered all the same: one row's kind never decides whether a fit runs
        return _mixed_key(pd.Series(times))
    return ranks


def _mixed_key(times: pd.Series) -> NDArray[Any]:
    """A key for times of kinds that do not compare, the data holder told (never the results):
    dates with and without a time zone as instants (those without taken as UTC); else each
    value by its kind on its own (:func:`_kind_key`: numbers, then dates, text and anything
    else by its ``repr``), so that one user's odd value orders no other user's rows (ordering
    every row by its text put '10' before '2' for every user: an audit). Missing times stay
    missing and their rows are dropped."""
    if pd.api.types.infer_dtype(times, skipna=True) == "datetime":
        warn(
            "time mixes dates with and without a time zone: those without are taken as UTC "
            "(on your screen only: dplong.exceptions.DataHolderWarning).",
            DataHolderWarning,
        )
        return pd.to_datetime(times, utc=True).to_numpy()
    warn(
        "time mixes kinds of values that do not compare (numbers, text, dates or others): "
        "each user's rows are ordered numbers first, then dates, text and the others by "
        "their text; store time as one kind (on your screen only: "
        "dplong.exceptions.DataHolderWarning).",
        DataHolderWarning,
    )
    # the fallback of a column no sort could order: a pass over its values is its price
    keys = pd.Series([_kind_key(value) for value in times], dtype=object)
    return np.asarray(pd.factorize(keys, sort=True)[0])


def _kind_key(value: Any) -> tuple[int, Any] | None:
    """A time value's sort key from the value alone: its kind's rank and its value within the
    kind (numbers as numbers, decimals and fractions too, dates as UTC instants, durations and
    clock times by their length and hour, text as text, anything else by its ``repr``), the
    order a column of that kind alone sorts by (a duration's or a clock time's ``repr`` put
    '10 days' before '9 days' for a user as another user's value made the column mixed, an
    audit); None where it is missing."""
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, (numbers.Real, decimal.Decimal, np.bool_, np.integer, np.floating)):
        return None if value != value else (0, value)  # NaN is missing
    if isinstance(value, (datetime.timedelta, np.timedelta64)):
        span = pd.Timedelta(value)
        return None if span is pd.NaT else (4, span.value)
    if isinstance(value, datetime.time):  # a clock time by its value, not its repr
        return (5, (value.hour, value.minute, value.second, value.microsecond))
    if isinstance(value, (datetime.date, np.datetime64)):
        stamp = pd.Timestamp(value)
        utc = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
        return (1, utc.value)
    if isinstance(value, str):
        return (2, value)
    return (3, repr(value))


def _grouped(codes: NDArray[np.intp], time: NDArray[Any] | None) -> bool:
    """Whether the rows already come by user (then by ``time``): ``np.lexsort`` of the keys
    would return ``arange`` (it is stable), so the reorder and its copies can be skipped.

    Only numeric or datetime ``time`` is compared here (NaN/NaT compare False: lexsort then
    decides); any other ``time`` goes through ``np.lexsort``.
    """
    step = codes[1:] - codes[:-1]
    if time is None:
        return bool((step >= 0).all())
    if time.dtype.kind not in "biufmM":
        return False
    with np.errstate(invalid="ignore"):
        return bool(((step > 0) | ((step == 0) & (time[1:] >= time[:-1]))).all())


def warn_shared_times(codes: NDArray[np.intp], times: NDArray[Any]) -> None:
    """Warn the data holder (never the results) of users with two rows at one ``time`` (rows
    grouped by user, then by time): they keep their order in the data, and a working
    correlation over time takes them as consecutive times.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dplong.formula.panel import warn_shared_times
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_shared_times(np.array([0, 0, 1, 1]), np.array([1, 1, 1, 2]))
    >>> str(caught[0].message)[:52]
    '1 user has two rows or more at one time: they keep t'
    """
    same = (codes[1:] == codes[:-1]) & (times[1:] == times[:-1])
    if not same.any():
        return
    users = np.unique(codes[1:][same]).size
    warn(
        f"{users:,} {'user has' if users == 1 else 'users have'} two rows or more at one time: "
        "they keep their order in the data, and a working correlation over time takes them as "
        "consecutive times (on your screen only: dplong.exceptions.DataHolderWarning).",
        DataHolderWarning,
    )


def time_order(
    time: GroupsLike, data: pd.DataFrame, levels: Mapping[str, Sequence[Any]] | None = None
) -> NDArray[Any]:
    """``time``'s values (:func:`column_or_array`) as they order each user's rows: a
    Categorical's by its categories' order, declared with its dtype (``"low" < "mid" <
    "high"``), and text by the order of the ``levels`` declared for a named time column (the
    formula's: a ``TimeEffects`` column's), not as text; missing ones, and text outside the
    declared levels, NaN. Numbers and dates keep their own order whatever the declaration,
    whose first level is only a factor's reference.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import time_order
    >>> waves = pd.CategoricalDtype(["baseline", "month 3", "month 12"], ordered=True)
    >>> data = pd.DataFrame({"wave": pd.Series(["month 12", "baseline", None], dtype=waves)})
    >>> time_order("wave", data)
    array([ 2.,  0., nan])
    >>> text = data.astype({"wave": object})
    >>> time_order("wave", text, {"wave": ["baseline", "month 3", "month 12"]})
    array([ 2.,  0., nan])
    >>> time_order("year", pd.DataFrame({"year": [1981, 1980]}), {"year": [1981, 1980]})
    array([1981, 1980])
    """
    times = column_or_array(time, data, "time")
    column = data[time] if isinstance(time, str) else time
    declared = levels.get(time) if isinstance(time, str) and levels else None
    codes: NDArray[np.float64]
    if isinstance(getattr(column, "dtype", None), pd.CategoricalDtype):
        codes = pd.Categorical(cast("pd.Series[Any]", column)).codes.astype(np.float64)
    elif declared is not None and all(isinstance(v, str) for v in declared):
        # text levels declared: each value matched on its own (a value that is no text is
        # outside them): the order was the declaration's only where every row was text, so one
        # user's number put every user's waves in text order (an audit)
        codes = matched_levels(declared, times).astype(np.float64)
    else:
        return times
    codes[codes < 0] = np.nan
    return codes
