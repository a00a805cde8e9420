"""The reduction of :class:`~dplong.RandomEffectsLocation`: every user's mean, within sum of
squares and row count, from the rows in memory or from a Dask frame in the same two passes
(the means, then the squared deviations from them). Private: they never leave the fit."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.dask_frames import FrameSpec, ReducedPanel, reduce_design
from dplong.formula import GroupsLike, PanelDesign
from dplong.models.reduce import rounded_deviation, user_means, user_sums, user_totals

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__: list[str] = []


@dataclass(frozen=True)
class _UserMoments:
    """Per-user mean, within sum of squares, row count and the within sum's degrees of freedom
    (``T_u - 1`` about the user's mean; fewer for the residuals of a regression, as the
    random-effects components take them): private, they never leave the fit."""

    means: np.ndarray
    within_ss: np.ndarray
    rows: np.ndarray
    within_df: np.ndarray

    @classmethod
    def of(cls, design: PanelDesign | ReducedPanel) -> _UserMoments:
        """From the rows (two passes: the means, then the squared deviations from them), or
        a Dask frame's moments, reduced the same way (:func:`_reduce_moments`): row counts,
        means, within sums of squares and, as a fourth column, their degrees of freedom
        where they are not ``T_u - 1``."""
        if isinstance(design, ReducedPanel):
            rows, means, within_ss, *df = design.statistics.T
            return cls(means, within_ss, rows, df[0] if df else rows - 1.0)
        counts = user_means(_totals(design))
        within_ss = _squared_deviations(design, counts)[:, 0]
        return cls(counts[:, 1], within_ss, counts[:, 0], counts[:, 0] - 1.0)

    def components(self, mu: float) -> np.ndarray:
        """``(ȳ_u - μ̂)² - s²_u/T_u`` and ``s²_u`` (the within sum of squares over its degrees
        of freedom) per user; NaN for users with none (fewer than two rows). Unbiased for σ_U²
        and σ² with independent residuals (Def 5.8)."""
        # a user mean near the doubles' edge overflows its square: inf, which the release
        # clips (RuntimeWarnings reached the analyst)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            within = np.where(self.within_df >= 1, self.within_ss / self.within_df, np.nan)
            between = (self.means - mu) ** 2 - within / self.rows
        return np.column_stack([between, within])


def _totals(design: PanelDesign) -> NDArray[np.float64]:
    """Every user's row count and sum of y (n x 2)."""
    return user_totals(design.y, design.X[:, :0], design.codes, design.n)


def _squared_deviations(design: PanelDesign, counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every user's sum of squared deviations from their mean (n x 1; ``counts``: every
    user's row count and mean): the two-pass sum of squares, with no cancellation and no
    overflow of Σy² for large y; a constant user's is exactly 0, not its mean's rounding
    (:func:`~dplong.models.reduce.rounded_deviation`)."""
    codes = design.codes
    with np.errstate(invalid="ignore", over="ignore"):
        deviations = rounded_deviation(design.y, counts[codes, 1], counts[codes, 0]) ** 2
    return user_sums(deviations[None, :], codes, design.n)


def _reduce_moments(data: DaskFrame, spec: FrameSpec, groups: GroupsLike) -> ReducedPanel:
    """A Dask frame's per-user row counts, means and within sums of squares, in two passes
    as in memory: the means, then the squared deviations from them."""
    first = reduce_design(data, spec, groups=groups, sums=_totals, statistic=user_means)
    counts = pd.DataFrame(first.statistics, index=first.ids)
    second = reduce_design(  # the first pass told the data holder of the rows left out
        data,
        spec,
        groups=groups,
        sums=_squared_deviations,
        statistic=np.asarray,
        given=[counts],
        tell=False,
    )
    return dataclasses.replace(
        first, statistics=np.column_stack([first.statistics, second.statistics])
    )
