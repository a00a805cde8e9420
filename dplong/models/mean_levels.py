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
from dplong.formula.levels import warn_categories_present
from dplong.results import grouped_label

__all__: list[str] = []

#: A grouping: its name, the level of every row (-1: none) and the declared levels.
Grouping = tuple[str, NDArray[np.intp], tuple[Any, ...]]


def _grouping(
    values: ArrayLike, by: ArrayLike | str | None, levels: Any
) -> tuple[ArrayLike, Grouping]:
    """``values`` without a ``by`` column, and the grouping, checked on public facts only: the
    declared levels, the key's length and dtype (the rows' keys are only compared with them)."""
    if by is None:
        raise ParameterError("levels= declares the levels of a grouping: give it as by=")
    if is_dask(values) or is_dask(by):
        raise ParameterError("by= takes values in memory (pandas or numpy), not Dask frames")
    if isinstance(by, str):
        if not isinstance(values, pd.DataFrame) or by not in values.columns:
            raise ParameterError(
                f"by={by!r} names a column of values, which must then be a DataFrame holding "
                "it; or give the key of every row (an array or Series)"
            )
        name, keys, values = by, values[by], values.drop(columns=[by])
    else:
        name = str(getattr(by, "name", None) or "by")
        if np.ndim(by) != 1:
            raise DataError(f"by must have one key per row (1-D); got shape {np.shape(by)}")
        keys = by if isinstance(by, pd.Series) else pd.Series(np.asarray(by, dtype=object))
    if levels is None and isinstance(keys.dtype, pd.CategoricalDtype):
        levels = list(keys.cat.categories)  # declared by the dtype
        warn_categories_present(name, keys.dtype, keys.cat.codes.to_numpy())
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
    rows = len(values)  # type: ignore[arg-type]
    if len(keys) != rows:
        raise DataError(f"by must have one key per row: got shape {np.shape(keys)} for {rows} rows")
    codes = index.get_indexer(keys.astype(object)).astype(np.intp)
    return values, (name, codes, declared)


def _one_level_per_user(grouping: Grouping, codes: NDArray[np.intp], n: int) -> Grouping:
    """The grouping with every user at one level (``by_constant``): the first declared level,
    in the order of the levels, at which the user has a row; their rows at other levels belong
    to no level. A rule on each user's own rows, so a user still changes only their own
    statistic (at one level)."""
    name, levels, declared = grouping
    kept = (levels >= 0) & (codes >= 0)
    first = np.full(n, len(declared), dtype=np.intp)
    np.minimum.at(first, codes[kept], levels[kept])
    at_first = kept & (levels == first[np.where(codes >= 0, codes, 0)])
    return name, np.where(at_first, levels, -1).astype(np.intp), declared


def _by_level(
    matrix: NDArray[np.float64], labels: tuple[str, ...], grouping: Grouping
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """The rows' values spread over the levels, level by level (rows x levels·d; NaN where a
    row is at another level or none), and the columns' names ``column[by=level]``."""
    name, codes, declared = grouping
    at = codes[:, None] == np.arange(len(declared))[None, :]  # rows x levels
    spread = np.where(at[:, :, None], matrix[:, None, :], np.nan)
    flat = spread.reshape(matrix.shape[0], len(declared) * matrix.shape[1])
    return flat, tuple(grouped_label(c, name, v) for v in declared for c in labels)


def _every_level(value: Any, d: int, levels: int) -> Any:
    """A per-column option given per averaged column, repeated for each level."""
    if value is None or isinstance(value, str) or np.ndim(value) != 1 or len(value) != d:
        return value
    return np.tile(np.asarray(value), levels)
