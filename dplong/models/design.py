"""From a patsy formula and a DataFrame to a panel design: y, X, user codes, rows by user.

Missing values: rows with a missing value in any variable the formula uses are dropped (patsy's
``NA_action="drop"``) — a row-level operation on the analyst's side. The number of users ``n`` is
fixed *before* dropping, from the ``groups`` column, and stays the public n: a user who loses
rows simply has fewer, and one who loses all of them contributes no statistic of their own
(see :func:`dplong.privacy.winsorized.release_mean`). How many rows were dropped is private and
is never reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import ArrayLike, NDArray

from dplong._grouping import factorize_groups
from dplong.exceptions import DataError, FormulaError, InsufficientUsersError

GroupsLike = str | ArrayLike


@dataclass(frozen=True)
class PanelDesign:
    """Rows grouped by user (stable, then by ``time`` if given) with user codes 0..n-1.

    ``y`` and ``X`` are patsy's arrays as built (``X`` row-major), not copies, when the data
    already come grouped by user; otherwise reordered copies.
    """

    y: NDArray[np.float64]
    X: NDArray[np.float64]
    codes: NDArray[np.intp]
    n: int
    columns: tuple[str, ...]
    outcome: str
    formula: str


def column_or_array(value: GroupsLike, data: pd.DataFrame, name: str) -> NDArray[Any]:
    if isinstance(value, str):
        if value not in data.columns:
            raise FormulaError(
                f"{name}={value!r} is not a column of the data; columns are {list(data.columns)}"
            )
        return data[value].to_numpy()
    array = np.asarray(value)
    if array.ndim != 1 or len(array) != len(data):
        raise DataError(
            f"{name} must be a column name or one value per row of data "
            f"({len(data)} rows), got shape {array.shape}"
        )
    return array


class _DropMissing(patsy.NAAction):  # type: ignore[misc]  # patsy is untyped
    """patsy's ``NA_action="drop"`` that also records which rows it keeps (``kept``).

    It lets :func:`build_design` ask patsy for plain matrices instead of frames (which cost a
    copy of every matrix) and still map the rows to users. ``kept`` stays ``None`` when no row
    is dropped; the factors are then passed on as they are instead of copied through an
    all-true mask.
    """

    def __init__(self) -> None:
        super().__init__(on_NA="drop")
        self.kept: NDArray[np.bool_] | None = None

    def handle_NA(self, values: list[Any], is_NAs: list[Any], origins: list[Any]) -> list[Any]:
        if not is_NAs:
            return values
        missing = np.zeros(len(is_NAs[0]), dtype=bool)
        for is_NA in is_NAs:
            missing |= is_NA
        if not missing.any():
            return values
        self.kept = ~missing
        result: list[Any] = super().handle_NA(values, is_NAs, origins)
        return result


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


def build_design(
    formula: str,
    data: pd.DataFrame,
    *,
    groups: GroupsLike,
    time: GroupsLike | None = None,
    eval_env: patsy.EvalEnvironment | None = None,
) -> PanelDesign:
    """Parse ``formula`` on ``data`` and group the rows by user."""
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if len(data) == 0:
        raise DataError("data has no rows")
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"formula must be a string like 'y ~ x1 + x2', got {formula!r}")
    if groups is None:
        raise DataError(
            "groups is required: the column (or array) of user ids; every row "
            "must say which user it belongs to"
        )
    ids = column_or_array(groups, data, "groups")
    codes_all, n = factorize_groups(ids, len(data))
    if n < 2:
        raise InsufficientUsersError(
            f"the data hold {n} user; private estimation needs at "
            "least 2 users (and many more for useful accuracy)"
        )
    dropping = _DropMissing()
    try:
        y_matrix, x_matrix = patsy.dmatrices(
            formula,
            data,
            return_type="matrix",  # the frames would only copy the matrices
            NA_action=dropping,
            eval_env=eval_env or patsy.EvalEnvironment.capture(1),
        )
    except patsy.PatsyError as err:
        raise FormulaError(f"cannot build the design of {formula!r}: {err}") from None
    outcomes = [str(c) for c in y_matrix.design_info.column_names]
    columns = tuple(str(c) for c in x_matrix.design_info.column_names)
    if len(outcomes) != 1:
        raise DataError(
            f"the outcome of {formula!r} must be one numeric column; it expanded "
            f"to {outcomes} (is it categorical or text?)"
        )
    if y_matrix.shape[0] == 0:
        raise DataError(f"no row of the data is complete in the variables of {formula!r}")
    if not data.index.is_unique:
        raise DataError("data must have a unique index (use data.reset_index(drop=True))")
    rows = None if dropping.kept is None else np.flatnonzero(dropping.kept)  # None: every row
    y = np.asarray(y_matrix, dtype=np.float64)[:, 0]
    X = np.asarray(x_matrix, dtype=np.float64)
    bad = np.atleast_1d(~np.isfinite(X).all(axis=0))
    if not np.isfinite(y).all() or bad.any():
        names = ([outcomes[0]] if not np.isfinite(y).all() else []) + [
            c for c, b in zip(columns, bad, strict=True) if b
        ]
        raise DataError(f"infinite values in {names}; replace them or drop those rows")
    codes = codes_all if rows is None else codes_all[rows]
    keys: list[NDArray[Any]] = [codes]
    if time is not None:
        times = column_or_array(time, data, "time")
        keys.insert(0, times if rows is None else times[rows])
    if not _grouped(codes, keys[0] if time is not None else None):
        order = np.lexsort(keys)  # by user, then time; stable in row order
        y, codes = y[order], codes[order]
        X = np.take(X, order, axis=0)  # same rows as X[order], about 3x faster at 10^7 rows
    return PanelDesign(
        y=y,
        X=X,
        codes=codes,
        n=n,
        columns=columns,
        outcome=outcomes[0],
        formula=formula,
    )
