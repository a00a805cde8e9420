"""User ids of the rows as codes 0..n-1, and the runs of a user's rows, without a Python loop."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong.exceptions import DataError
from dplong.formula.users import user_codes


def factorize_groups(
    groups: ArrayLike, n_rows: int, name: str = "groups"
) -> tuple[NDArray[np.intp], int]:
    """Codes 0..n-1 for the user ids (first-appearance order) and the number of users n.

    A row with a missing id belongs to no user (code -1), as in the formula layer: its values
    are no one's statistic, and n counts the distinct ids.
    """
    if np.ndim(groups) != 1 or len(groups) != n_rows:  # type: ignore[arg-type]
        raise DataError(
            f"{name} must have one user id per row: got shape {np.shape(groups)} for {n_rows} rows"
        )
    codes, uniques = user_codes(pd.Series(groups))
    return codes, len(uniques)


def segment_starts(codes: NDArray[np.intp]) -> NDArray[np.intp]:
    """First row of each user's run of rows (codes sorted by user)."""
    starts = np.ones(len(codes), dtype=bool)
    starts[1:] = codes[1:] != codes[:-1]
    return np.flatnonzero(starts)


def user_row_sums(
    values: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> NDArray[np.float64]:
    """Sums of the rows of ``values`` by user, n x k (rows sorted by user code; users without
    rows: 0)."""
    out = np.zeros((n, values.shape[1]))
    if codes.size:
        starts = segment_starts(codes)
        out[codes[starts]] = np.add.reduceat(values, starts, axis=0)
    return out


def user_row_means(
    values: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> NDArray[np.float64]:
    """Means of the rows of ``values`` by user, n x k (rows sorted by user code; users without
    rows: 0)."""
    rows = np.bincount(codes, minlength=n).astype(np.float64)
    return user_row_sums(values, codes, n) / np.maximum(rows, 1.0)[:, None]
