"""Per-user reduction: map user ids to 0..n-1 and average rows per user, without a Python loop."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong.exceptions import DataError


def factorize_groups(
    groups: ArrayLike, n_rows: int, name: str = "groups"
) -> tuple[NDArray[np.intp], int]:
    """Codes 0..n-1 for the user ids (first-appearance order) and the number of users n."""
    ids = pd.Series(np.asarray(groups) if not isinstance(groups, pd.Series) else groups)
    if ids.ndim != 1 or len(ids) != n_rows:
        raise DataError(
            f"{name} must have one user id per row: got {len(ids)} ids for {n_rows} rows"
        )
    check_no_missing_ids(int(ids.isna().sum()), name)
    codes, uniques = pd.factorize(ids, sort=False)
    return codes.astype(np.intp), len(uniques)


def check_no_missing_ids(missing: int, name: str = "groups") -> None:
    """Refuse user ids with ``missing`` missing values."""
    if missing:
        raise DataError(
            f"{name} has {missing} missing user ids; every row needs "
            "the id of the user it belongs to"
        )


def group_means(
    values: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> NDArray[np.float64]:
    """Per-user column means (Def 5.1) of an (rows x d) matrix, users in code order."""
    counts = np.bincount(codes, minlength=n).astype(np.float64)
    sums = np.stack([np.bincount(codes, weights=col, minlength=n) for col in values.T], axis=1)
    return sums / counts[:, None]
