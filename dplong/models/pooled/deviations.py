"""The within estimator's rows: each person's deviations from their own means, a column of ones
first, computed by the same function on the rows in memory and on a Dask partition's rows
(:mod:`~dplong.models.pooled.dask_rows`), given each person's anchor and mean offset."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["LARGEST_VALUE", "deviation_rows", "offsets"]

#: The magnitude the within transform clips each value to before it subtracts (public): two
#: finite doubles can differ by more than the largest one (1e308 and -1e308), and a person's
#: offsets then sum to infinity and deviate by NaN, which no release takes. Every range found
#: or stated ends far inside it (the reaches' grid tops out at 2^65), so no released number
#: moves; a person's offsets sum within the doubles below 2^22 rows.
LARGEST_VALUE = 2.0**1000


def offsets(
    z: NDArray[np.float64], codes: NDArray[np.intp], anchor: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each row's offsets ``z - a_u`` from its person's ``anchor`` (persons ``codes``), both
    clipped to :data:`LARGEST_VALUE` first (a per-value map of public facts), so that they
    and their sums over a person's rows are finite wherever ``z`` is.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.pooled.deviations import offsets
    >>> z = np.array([[1e308], [-1e308]])
    >>> bool(np.isfinite(offsets(z, np.array([0, 0]), np.array([[-1e308]])).sum()))
    True
    """
    return (
        np.clip(z, -LARGEST_VALUE, LARGEST_VALUE)
        - np.clip(anchor, -LARGEST_VALUE, LARGEST_VALUE)[codes]
    )


def deviation_rows(
    z: NDArray[np.float64],
    codes: NDArray[np.intp],
    anchor: NDArray[np.float64],
    mean: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The rows ``(1, x̃)`` and outcome ``ỹ`` of ``z = (x, y)`` (persons ``codes``) as
    ``(z - a_u) - m_u`` (:func:`offsets`): ``anchor`` holds one of each person's own values per
    column (their smallest), so that a column constant within a person deviates by exactly 0
    (``0.1 - mean(0.1, 0.1, 0.1)`` is not 0 in floating point), and ``mean`` the mean of their
    rows' offsets from it.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.pooled.deviations import deviation_rows
    >>> z = np.array([[0.1, 1.0], [0.1, 3.0]])           # x constant within the person
    >>> x, y = deviation_rows(z, np.array([0, 0]), np.array([[0.1, 1.0]]), np.array([[0.0, 1.0]]))
    >>> x.tolist(), y.tolist()
    ([[1.0, 0.0], [1.0, 0.0]], [-1.0, 1.0])
    """
    deviations = offsets(z, codes, anchor) - mean[codes]
    ones = np.ones((deviations.shape[0], 1))
    return np.column_stack([ones, deviations[:, :-1]]), np.ascontiguousarray(deviations[:, -1])
