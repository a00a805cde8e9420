"""The values of :func:`~dplong.winsorized_mean` as the users' statistics: a float matrix with
NaN for a missing value (dtypes checked, never converted), and every user's column means over
their non-missing rows, in memory or reduced where a Dask frame lies."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong._validation import as_columns, warn
from dplong.dask_frames import (
    check_same_users,
    is_dask,
    missing_ids,
    reduce_users,
    require_dask,
)
from dplong.exceptions import DataError, DataHolderWarning, ParameterError
from dplong.formula.levels import _TOLD
from dplong.models.mean_levels import Grouping, _first_level_only, _rows_at_levels, _spread
from dplong.privacy.winsorized import column_names

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame
    from dask.dataframe import Series as DaskSeries

__all__: list[str] = []

#: The users a model was built on (its Dask frame's ids, as the fit's reduction codes them),
#: which its fit must find unchanged (:func:`users_held`); None: no model holds them.
_HELD: ContextVar[NDArray[Any] | None] = ContextVar("users_held", default=None)


@contextlib.contextmanager
def users_held(users: NDArray[Any] | None) -> Iterator[None]:
    """Within, a Dask reduction of user means refuses other users than ``users`` (a model's
    fit of the frame it was built on: :func:`~dplong.dask_frames.check_same_users`)."""
    token = _HELD.set(users)
    try:
        yield
    finally:
        _HELD.reset(token)


def dask_users(values: DaskSeries, groups: DaskSeries) -> tuple[NDArray[Any], int, int]:
    """The users of Dask ``values`` with ids ``groups`` (a column of the same frame) as the
    fit's reduction codes them (ids that read alike are one user), and the rows with an id and
    those of them with a value: one pass, as the fit's."""
    counts, ids = reduce_users(
        values.to_frame("value").assign(user=groups),
        "user",
        _partition_rows,
        lambda sums: sums,
    )
    rows, kept = counts.sum(axis=0) if len(ids) else (0.0, 0.0)
    return ids, int(rows), int(kept)


def _partition_rows(rows: pd.DataFrame, codes: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    """A partition's rows per user and those with a value (:func:`dask_users`)."""
    user = codes >= 0
    kept = user & rows["value"].notna().to_numpy()
    return np.column_stack(
        [np.bincount(codes[user], minlength=n), np.bincount(codes[kept], minlength=n)]
    ).astype(np.float64)


#: The column of a Dask frame's rows that holds their level of a ``by=`` grouping
_LEVEL = "__dplong_level__"


def _matrix(
    values: ArrayLike, names: Sequence[str] | None
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Values as a float (rows, d) matrix (NaN: missing) and the column names."""
    found: list[str] | None = None
    if isinstance(values, pd.DataFrame):
        found = [str(c) for c in values.columns]
    elif isinstance(values, pd.Series) and values.name is not None:
        found = [str(values.name)]
    array = _floats(values)
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise DataError(f"values is empty (shape {array.shape})")
    return array, _labels(names, found, array.shape[1])


def _labels(names: Sequence[str] | None, found: list[str] | None, d: int) -> tuple[str, ...]:
    """The d column names: ``names`` if given, else those ``found`` on the values; distinct,
    since each names a parameter of the results."""
    labels = column_names(names if names is not None else found, d)
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated and names is not None:
        raise ParameterError(f"names must be distinct column names, got {repeated} repeated")
    if repeated:
        raise DataError(f"values has repeated column names {repeated}: give distinct names")
    return labels


def _floats(values: ArrayLike) -> NDArray[np.float64]:
    """Values as a float (rows, d) matrix, NaN where missing (NaN, ±inf, ``pd.NA``); dates,
    durations, complex numbers and text are refused by dtype (a public fact), never converted."""
    kinds = (
        [(str(c), dtype) for c, dtype in values.dtypes.items()]
        if isinstance(values, pd.DataFrame)
        else [
            (
                str(getattr(values, "name", None) or "values"),
                values.dtype if isinstance(values, pd.Series) else np.asarray(values).dtype,
            )
        ]
    )
    for label, dtype in kinds:
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
        if not numeric or pd.api.types.is_timedelta64_dtype(dtype):
            raise DataError(
                f"values must be numeric: column {label!r} has dtype {dtype}, not a real "
                "number; convert it explicitly (e.g. dates to years since a public origin)"
            )
    try:
        if isinstance(values, pd.DataFrame | pd.Series):
            array = values.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            "values must be numeric; could not convert them to floating point"
        ) from None
    array = as_columns(array, "values", rows="rows")
    return np.where(np.isinf(array), np.nan, array)  # ±inf is missing, as in the formula layer


def _left_out(matrix: NDArray[np.float64], codes: NDArray[np.intp] | None) -> NDArray[np.float64]:
    """The counts :func:`_warn_left_out` tells of, as one vector: the rows, those without a
    user id (code -1), and per column the missing or non-finite values of the others."""
    owned = np.ones(matrix.shape[0], dtype=bool) if codes is None else codes >= 0
    holes = np.count_nonzero(np.isnan(matrix[owned]), axis=0)
    no_id = matrix.shape[0] - np.count_nonzero(owned)
    return np.array([matrix.shape[0], no_id, *holes], dtype=np.float64)


def _warn_left_out(counts: NDArray[np.float64], labels: Sequence[str]) -> None:
    """Warn the data holder (:class:`~dplong.exceptions.DataHolderWarning`, never the results:
    how many rows a data set leaves out depends on them) of the rows no user's mean reads
    (:func:`_left_out`'s ``counts``): a row without a user id, and per column a missing or
    non-finite value (each user's mean is over their other rows; with one row a user, that
    user has none), as the formula layer's :func:`~dplong.formula.build.warn_dropped` does
    for a model's rows.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dplong.models.mean_values import _left_out, _warn_left_out
    >>> counts = _left_out(np.array([[1.0], [np.nan], [2.0]]), np.array([0, 0, -1]))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _warn_left_out(counts, ["x"])
    >>> str(caught[0].message)[:78]
    "Of 3 rows, 1 without a user id is left out; 1 with a missing or non-finite 'x'"
    """
    if _TOLD.get():  # a model's fit of the rows it was built on, which told of them
        return
    rows, no_id, *holes = (int(c) for c in counts)
    verb = {True: "is", False: "are"}
    parts = [f"{no_id:,} without a user id {verb[no_id == 1]} left out"] if no_id else []
    parts += [
        f"{count:,} with a missing or non-finite {label!r} (NaN, ±inf) {verb[count == 1]} left "
        "out of its user means"
        for label, count in zip(labels, holes, strict=True)
        if count
    ]
    if parts:
        warn(
            f"Of {rows:,} rows, {'; '.join(parts)} (on your screen only: "
            "dplong.exceptions.DataHolderWarning).",
            DataHolderWarning,
        )


def _user_means(
    values: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> NDArray[np.float64]:
    """Per-user column means over each user's non-missing rows (NaN: none), vectorised."""
    return _means_from_sums(_mean_sums(values, codes, n))


def _mean_sums(values: NDArray[np.float64], codes: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    """Per-user sums of the non-missing values and their counts, column by column (n x 2d)."""
    present = ~np.isnan(values) & (codes >= 0)[:, None]  # code -1: a row of no user
    filled = np.where(present, values, 0.0)
    codes = np.where(codes >= 0, codes, 0)
    # [:n]: a partition of rows none of which has an id (n = 0) still counts into code 0
    sums = [np.bincount(codes, weights=col, minlength=n)[:n] for col in filled.T]
    counts = [np.bincount(codes, weights=col, minlength=n)[:n] for col in present.T]
    return np.column_stack([*sums, *counts])


def _means_from_sums(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-user means from :func:`_mean_sums` (NaN where a user has no value)."""
    d = sums.shape[1] // 2
    counts = sums[:, d:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums[:, :d] / counts, np.nan)


def _dask_user_means(
    values: DaskFrame | DaskSeries,
    groups: Any,
    names: Sequence[str] | None,
    grouping: Grouping | None = None,
    by_constant: bool = False,
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Per-user means of Dask ``values`` (one row per user without ``groups``), at every level
    of a ``grouping`` (level by level; a user at the first level of their rows only where
    ``by_constant``), and the columns' labels."""
    require_dask()
    frame = values.to_frame() if values.ndim == 1 else values
    columns = list(frame.columns)
    found = [str(c) for c in columns] if values.ndim == 2 or values.name is not None else None
    labels = _labels(names, found, len(columns))
    levels = 0 if grouping is None else len(grouping[2])
    if grouping is not None:
        frame = frame.assign(**{_LEVEL: grouping[1]})
    if groups is None:  # every row is a user: the rows are the statistics
        rows = frame.compute()
        matrix = _floats(rows[columns])
        return (_spread(matrix, rows[_LEVEL].to_numpy(), levels) if levels else matrix), labels
    if not is_dask(groups) or groups.npartitions != frame.npartitions:
        raise DataError(
            "with Dask values, groups must be a column of the same Dask frame, e.g. "
            'groups=frame["id"]'
        )
    user = "__dplong_groups__"
    tally = 2 + len(columns)  # the counts of the rows left out (_left_out), carried last
    means, ids = reduce_users(
        frame.assign(**{user: groups}),
        user,
        functools.partial(_partition_mean_sums, columns=columns, levels=levels),
        _means_from_sums,
        carried=levels + tally,
    )
    if len(ids) == 0:
        raise DataError(f"values is empty (shape (0, {len(columns)}))")
    check_same_users(ids, _HELD.get())
    if not _TOLD.get():  # a model built on these rows told of them: no pass to count them
        counts = means[:, -tally:].sum(axis=0)
        # a partition of rows without an id has no user to carry its count: counted apart
        lost = int(missing_ids(groups).sum().compute()) - counts[1]
        _warn_left_out(counts + np.array([lost, lost, *np.zeros(tally - 2)]), labels)
    means = means[:, :-tally]
    if levels:
        means, rows_at = means[:, :-levels], means[:, -levels:]
        if by_constant:
            means = _first_level_only(means, rows_at)
    return means, labels


def _partition_mean_sums(
    rows: pd.DataFrame, codes: NDArray[np.intp], n: int, *, columns: list[Any], levels: int
) -> NDArray[np.float64]:
    """:func:`_mean_sums` of one Dask partition's rows, spread over ``levels`` levels where
    there is a grouping, then each user's rows at each level (whatever their values), then
    the partition's counts of the rows left out (:func:`_left_out`) on its first user."""
    values = _floats(rows[columns])
    counts = _left_out(values, codes)
    tally = np.zeros((n, counts.size))
    tally[:1] = counts
    if not levels:
        return np.column_stack([_mean_sums(values, codes, n), tally])
    level = rows[_LEVEL].to_numpy()
    sums = _mean_sums(_spread(values, level, levels), codes, n)
    return np.column_stack([sums, _rows_at_levels(level, codes, n, levels), tally])
