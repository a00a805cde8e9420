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

    ``X`` is column-major (each column contiguous), as patsy's frame holds it; when the data
    already come grouped by user, ``y`` and ``X`` are patsy's (read-only) arrays, not copies.
    """

    y: NDArray[np.float64]
    X: NDArray[np.float64]
    codes: NDArray[np.intp]
    n: int
    columns: tuple[str, ...]
    outcome: str
    formula: str

    @property
    def rows_per_user(self) -> NDArray[np.int64]:
        return np.bincount(self.codes, minlength=self.n)


def _column_or_array(value: GroupsLike, data: pd.DataFrame, name: str) -> NDArray[Any]:
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
    ids = _column_or_array(groups, data, "groups")
    codes_all, n = factorize_groups(ids, len(data))
    if n < 2:
        raise InsufficientUsersError(
            f"the data hold {n} user; private estimation needs at "
            "least 2 users (and many more for useful accuracy)"
        )
    try:
        y_frame, x_frame = patsy.dmatrices(
            formula,
            data,
            return_type="dataframe",
            NA_action="drop",
            eval_env=eval_env or patsy.EvalEnvironment.capture(1),
        )
    except patsy.PatsyError as err:
        raise FormulaError(f"cannot build the design of {formula!r}: {err}") from None
    if y_frame.shape[1] != 1:
        raise DataError(
            f"the outcome of {formula!r} must be one numeric column; it expanded "
            f"to {list(y_frame.columns)} (is it categorical or text?)"
        )
    if len(y_frame) == 0:
        raise DataError(f"no row of the data is complete in the variables of {formula!r}")
    rows = data.index.get_indexer(y_frame.index)
    if (rows < 0).any():
        raise DataError("data must have a unique index (use data.reset_index(drop=True))")
    y = y_frame.to_numpy(dtype=np.float64)[:, 0]
    X = x_frame.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(X).all(axis=0)
    if not np.isfinite(y).all() or bad.any():
        names = ([str(y_frame.columns[0])] if not np.isfinite(y).all() else []) + [
            str(c) for c, b in zip(x_frame.columns, bad, strict=True) if b
        ]
        raise DataError(f"infinite values in {names}; replace them or drop those rows")
    codes = codes_all[rows]
    keys: list[NDArray[Any]] = [codes]
    if time is not None:
        keys.insert(0, _column_or_array(time, data, "time")[rows])
    if not _grouped(codes, keys[0] if time is not None else None):
        order = np.lexsort(keys)  # by user, then time; stable in row order
        y, codes = y[order], codes[order]
        X = np.take(X.T, order, axis=1).T  # column-major, like patsy's frame
    return PanelDesign(
        y=y,
        X=X,
        codes=codes,
        n=n,
        columns=tuple(str(c) for c in x_frame.columns),
        outcome=str(y_frame.columns[0]),
        formula=formula,
    )
