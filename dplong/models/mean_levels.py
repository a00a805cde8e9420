"""The ``by=`` grouping of :func:`~dplong.winsorized_mean`: its declared levels checked on
public facts only, the rows' values spread over the levels (one column per level and column),
every user put at one level when the key is declared constant within users, and per-column
options repeated for each level."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong.dask_frames import is_dask
from dplong.exceptions import DataError, ParameterError
from dplong.formula.levels import warn_categories_present, warn_outside_levels
from dplong.formula.users import check_unique_columns
from dplong.results import grouped_label

__all__: list[str] = []

#: A grouping: its name, the level of every row (-1: none; for Dask values a lazy Dask Series
#: of them, computed partition by partition) and the declared levels.
Grouping = tuple[str, Any, tuple[Any, ...]]


def _grouping(
    values: ArrayLike, by: ArrayLike | str | None, levels: Any
) -> tuple[ArrayLike, Grouping]:
    """``values`` without a ``by`` column, and the grouping, checked on public facts only: the
    declared levels, the key's length and dtype (the rows' keys are only compared with them)."""
    if by is None:
        raise ParameterError("levels= declares the levels of a grouping: give it as by=")
    if (is_dask(values) or is_dask(by)) and not (
        is_dask(values)
        and (isinstance(by, str) or (is_dask(by) and by.npartitions == values.npartitions))
    ):
        raise ParameterError(
            "with Dask values, by= names a column of the same Dask frame (by='year'), or is one "
            "(by=frame['year'])"
        )
    keys: Any  # a pandas Series, or a column of a Dask frame
    if isinstance(by, str):
        values, keys = _split_column(values, by, "by", "the key", ParameterError)
        name = by
    elif is_dask(by):
        name, keys = str(by.name or "by"), by
    else:
        name = str(getattr(by, "name", None) or "by")
        if np.ndim(by) != 1:
            raise DataError(f"by must have one key per row (1-D); got shape {np.shape(by)}")
        keys = (
            by if isinstance(by, pd.Series) else pd.Series(np.asarray(by, dtype=object), name=name)
        )
    categories = isinstance(keys.dtype, pd.CategoricalDtype)
    if levels is None and categories and (not is_dask(keys) or keys.cat.known):
        levels = list(keys.cat.categories)  # declared by the dtype
        present = keys.cat.codes.unique()  # Dask: one pass over the codes of that column
        warn_categories_present(
            name, keys.dtype, np.asarray(present.compute() if is_dask(present) else present)
        )
    if levels is None:
        raise ParameterError(
            f"by={name!r} needs levels=, its declared values (public: the study design's, never "
            "read from the rows), or a pandas Categorical key whose categories declare them"
        )
    if isinstance(levels, Mapping):
        if list(levels) != [name]:
            raise ParameterError(
                f"levels must declare the grouping {name!r} only, e.g. levels={{{name!r}: "
                f"[...]}}; got the keys {list(levels)}"
            )
        levels = levels[name]
    if isinstance(levels, str | bytes) or not isinstance(levels, Sequence | np.ndarray):
        raise ParameterError(f"levels must be a list of the declared levels; got {levels!r}")
    declared = tuple(levels)
    index = pd.Index(declared)
    if not declared or not index.is_unique or index.hasnans:
        raise ParameterError(
            f"levels must be one or more distinct declared levels, none missing; got {declared!r}"
        )
    if is_dask(keys):  # a column of the frame: its codes, partition by partition
        codes = keys.map_partitions(_level_codes, declared=declared, meta=(name, np.intp))
        return values, (name, codes, declared)
    rows = len(values)  # type: ignore[arg-type]
    if len(keys) != rows:
        raise DataError(f"by must have one key per row: got shape {np.shape(keys)} for {rows} rows")
    return values, (name, _level_codes(keys, declared=declared).to_numpy(), declared)


def check_by_column(by: Any, groups: Any, averaged: Sequence[str] = ()) -> None:
    """Refuse a ``by`` naming the column of user ids (``groups``) or one the mean averages:
    a grouping of rows is neither (public facts: the names)."""
    if not isinstance(by, str):
        return
    if isinstance(groups, str) and by == groups:
        raise ParameterError(
            f"by={by!r} is the column of user ids (groups={groups!r}): by= names a public "
            "grouping of the rows (an arm, a year), each level's users averaged apart"
        )
    if by in averaged:
        raise ParameterError(
            f"by={by!r} is the column the mean averages: by= names another column, a public "
            "grouping of the rows (an arm, a year)"
        )


def _split_column(
    values: Any, column: str, option: str, what: str, error: type[Exception]
) -> tuple[Any, Any]:
    """``values`` without the ``column`` an ``option`` names (``by=``, ``groups=``), and that
    column: ``values`` must be a DataFrame (in memory or on Dask) holding it once, else
    ``error`` says to give ``what`` of every row instead."""
    if np.ndim(values) != 2 or column not in getattr(values, "columns", ()):
        raise error(
            f"{option}={column!r} names a column of values, which must then be a DataFrame "
            f"holding it; or give {what} of every row (an array or Series)"
        )
    check_unique_columns(values.columns, [column])
    return values.drop(columns=[column]), values[column]


def _level_codes(keys: pd.Series, *, declared: tuple[Any, ...]) -> pd.Series:
    """Every row's level: the position of its key among the ``declared`` levels (-1: none). A
    text column is matched against the levels' text (``1980`` and ``"1980"`` are one level):
    Dask stores a column of Python objects as text, which had left every row at no level. The
    data holder hears of keys outside the levels, as of a formula's factor (their rows are in
    no level's mean)."""
    index = pd.Index(declared)
    if isinstance(keys.dtype, pd.StringDtype) and not all(isinstance(v, str) for v in declared):
        index = pd.Index([str(v) for v in declared])
    codes = index.get_indexer(keys.astype(object)).astype(np.intp)
    warn_outside_levels(keys, codes, declared)
    found: pd.Series = pd.Series(codes, index=keys.index, name=keys.name)
    return found


def _rows_at_levels(
    level: NDArray[np.intp], codes: NDArray[np.intp], n: int, levels: int
) -> NDArray[np.float64]:
    """Every user's rows at each level (n x levels; ``level`` and ``codes`` one a row, -1:
    none), whatever their values: what :func:`_first_level_only` reads."""
    kept = (codes >= 0) & (level >= 0)
    return (
        np.bincount(codes[kept] * levels + level[kept], minlength=n * levels)
        .reshape(n, levels)
        .astype(np.float64)
    )


def _by_level(
    matrix: NDArray[np.float64], labels: tuple[str, ...], grouping: Grouping
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """The rows' values spread over the levels, level by level (rows x levels·d; NaN where a
    row is at another level or none), and the columns' names ``column[by=level]``."""
    _, codes, declared = grouping
    return _spread(matrix, codes, len(declared)), _level_labels(labels, grouping)


def _spread(
    matrix: NDArray[np.float64], codes: NDArray[np.intp], levels: int
) -> NDArray[np.float64]:
    """The rows' values spread over ``levels`` levels by their ``codes`` (rows x levels·d,
    level by level; NaN where a row is at another level or none)."""
    at = codes[:, None] == np.arange(levels)[None, :]  # rows x levels
    spread = np.where(at[:, :, None], matrix[:, None, :], np.nan)
    return spread.reshape(matrix.shape[0], levels * matrix.shape[1])


def _first_level_only(means: NDArray[np.float64], rows: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every user's means at the first declared level at which they have rows (``rows``:
    users x levels, :func:`_rows_at_levels`), NaN at the others (``by_constant``: a rule on
    each user's own rows, so a user still changes only their own statistic, at one level;
    means users x levels·d, level by level)."""
    levels = rows.shape[1]
    has = rows > 0
    first = np.where(has.any(axis=1), has.argmax(axis=1), levels)
    keep = np.repeat(first[:, None] == np.arange(levels)[None, :], means.shape[1] // levels, axis=1)
    return np.where(keep, means, np.nan)


def _level_labels(labels: tuple[str, ...], grouping: Grouping) -> tuple[str, ...]:
    """The names ``column[by=level]`` of every column at every level, level by level."""
    name, _, declared = grouping
    return tuple(grouped_label(c, name, v) for v in declared for c in labels)


def _every_level(value: Any, d: int, levels: int) -> Any:
    """A per-column option given per averaged column, repeated for each level."""
    if value is None or isinstance(value, str) or np.ndim(value) != 1 or len(value) != d:
        return value
    return np.tile(np.asarray(value), levels)
