"""The reductions of :class:`~dplong.LongitudinalOLS`: every user's OLS/GLS sums and
coefficients from a design (the whole data, or one Dask partition), and a Dask frame's within
cross products, reduced where the rows lie."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.dask_frames import FrameSpec, reduce_design
from dplong.formula import GroupsLike, PanelDesign
from dplong.models.reduce import (
    WorkingCorrelation,
    coefficients_from_sums,
    cross_product_sums,
    user_means,
    user_totals,
    within_sums,
)
from dplong.models.within import WithinProducts, regressor_columns

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__: list[str] = []


def _cross_products(design: PanelDesign, correlation: WorkingCorrelation) -> NDArray[np.float64]:
    """Per-user sufficient sums of the rows of a design (the whole data, or a partition)."""
    return cross_product_sums(design.y, design.X, design.codes, design.n, correlation)


def _coefficients(
    sums: NDArray[np.float64], p: int, correlation: WorkingCorrelation
) -> NDArray[np.float64]:
    """Per-user coefficients from those sums (NaN: not identified)."""
    return coefficients_from_sums(sums, p, correlation)[0]


def _reduce_within(
    data: DaskFrame, spec: FrameSpec, groups: GroupsLike, users: NDArray[Any]
) -> WithinProducts:
    """A Dask frame's within cross products, in two passes as in memory
    (:func:`~dplong.models.reduce.within_cross_products`): every user's row count and means,
    then the sums of products of the deviations from them; both passes of the ``users`` the
    model was built on (:func:`~dplong.dask_frames.reduce_design`)."""
    regressors = regressor_columns(spec.spec.columns)
    first = reduce_design(
        data,
        spec,
        groups=groups,
        sums=functools.partial(_partition_totals, regressors=regressors),
        statistic=user_means,
        tell=False,  # from_formula's reduction told the data holder of the same rows
        users=users,
    )
    rows = first.statistics[:, 0]
    second = reduce_design(
        data,
        spec,
        groups=groups,
        sums=functools.partial(_partition_products, regressors=regressors),
        statistic=np.asarray,
        given=[pd.DataFrame(first.statistics, index=first.ids)],
        tell=False,
        users=users,
    )
    products = second.statistics
    products[rows < 2] = np.nan
    return products, rows


def _partition_totals(design: PanelDesign, *, regressors: tuple[int, ...]) -> NDArray[np.float64]:
    """A partition's per-user row counts and sums of the regressors and y."""
    return user_totals(design.y, design.X[:, regressors], design.codes, design.n)


def _partition_products(
    design: PanelDesign, counts: NDArray[np.float64], *, regressors: tuple[int, ...]
) -> NDArray[np.float64]:
    """A partition's per-user sums of products of the deviations from the users' means
    (``counts``: every user's row count and means, as the first pass found them)."""
    X = np.ascontiguousarray(design.X[:, regressors])
    return within_sums(design.y, X, design.codes, design.n, counts[:, 1:], counts[:, 0])
