"""The within estimator's regressors: the design's columns without the intercept, and their
within cross products (:mod:`dplong.models.within`), functions of the formula only."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["WithinProducts", "coefficient_names", "regressor_columns", "select_products"]

#: Every user's within cross products (NaN: fewer than two rows) and row counts: what the
#: blocks read (:func:`~dplong.models.within.within_blocks`).
WithinProducts = tuple[NDArray[np.float64], NDArray[np.float64]]


def coefficient_names(columns: Sequence[str]) -> tuple[str, ...]:
    """The within estimator's parameters: the design's columns without the intercept, which the
    users' effects absorb (a function of the formula only).

    Examples
    --------
    >>> from dplong.models.within import coefficient_names
    >>> coefficient_names(["Intercept", "exper", "expersq"])
    ('exper', 'expersq')
    """
    return tuple(columns[j] for j in regressor_columns(columns))


def regressor_columns(columns: Sequence[str]) -> tuple[int, ...]:
    """Where the within estimator's regressors sit among the design's columns: all but the
    intercept (a function of the formula only).

    Examples
    --------
    >>> from dplong.models.within import regressor_columns
    >>> regressor_columns(["Intercept", "exper", "expersq"])
    (1, 2)
    """
    return tuple(j for j, c in enumerate(columns) if c != "Intercept")


def select_products(products: WithinProducts, keep: Sequence[int], p: int) -> WithinProducts:
    """The within products of the regressors ``keep`` (indices among p, in order) from those
    of all p: their entries of ``X̃'X̃`` (``np.triu_indices`` order) and of ``X̃'ỹ``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.within import select_products
    >>> sums = np.array([[11.0, 12.0, 22.0, 1.0, 2.0]])   # x1x1, x1x2, x2x2, x1y, x2y
    >>> select_products((sums, np.array([3.0])), [1], 2)[0].tolist()
    [[22.0, 2.0]]
    """
    sums, rows = products
    if len(keep) == p:
        return products
    upper = np.triu_indices(p)
    kept = np.isin(upper[0], keep) & np.isin(upper[1], keep)
    columns = np.concatenate([np.flatnonzero(kept), upper[0].size + np.asarray(keep)])
    return sums[:, columns], rows
