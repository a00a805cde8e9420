"""The pooled family's rows on a Dask frame: two passes, each reducing a partition's rows to
per-person sums where they lie (:func:`dplong.dask_frames.reduce_design`), the rows never
brought together.

1. When the model is built: each person's smallest and largest value of every column and the
   outcome (the private ranges' input, :func:`~dplong.models.pooled.located.find_ranges`),
   combined over partitions by minimum and maximum, and n.
2. At the fit, once the ranges are released: each person's :class:`PersonSums` of the rows
   scaled to them (additive over the partitions holding a person's rows), or for
   :class:`~dplong.BetweenOLS` each person's sums of the scaled rows, whose means are its one
   row a person.

Both estimators regress each row as it is (pooled) or a person's mean row (between); the
within and random-effects estimators transform each row by its person's other rows, which
needs a pass more and is not reduced here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import user_row_sums
from dplong.dask_frames import FrameSpec, reduce_design
from dplong.formula import PanelDesign
from dplong.models.pooled.factors import Blocks
from dplong.models.pooled.frame import _Scaling
from dplong.models.pooled.located import _extremes
from dplong.models.pooled.persons import PersonSums

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["DaskRows"]


@dataclass(frozen=True)
class DaskRows:
    """A Dask frame's rows as a pooled model reads them (private, as rows in memory are).

    Attributes
    ----------
    data : dask.dataframe.DataFrame
    spec : FrameSpec
    groups : str
        The person-id column.
    lows, highs : ndarray, shape (n, p + 1)
        Each person's smallest and largest value of every column and the outcome (NaN for a
        person whose rows were all left out).

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import design_spec
    >>> from dplong.models.pooled.dask_rows import DaskRows
    >>> data = pd.DataFrame({"id": [1, 2, 1, 2], "y": [1.0, 5.0, 3.0, 4.0]})
    >>> frame = dd.from_pandas(data, npartitions=2)
    >>> rows, design = DaskRows.read(frame, design_spec("y ~ 1", frame, levels=None,
    ...                                                 eval_env=None), "id")
    >>> design.n, rows.lows[:, 1].tolist(), rows.highs[:, 1].tolist()
    (2, [1.0, 4.0], [3.0, 5.0])
    """

    data: DaskFrame
    spec: FrameSpec
    groups: Any
    lows: NDArray[np.float64]
    highs: NDArray[np.float64]

    @classmethod
    def read(cls, data: DaskFrame, spec: FrameSpec, groups: Any) -> tuple[DaskRows, PanelDesign]:
        """Pass 1 over ``data``: each person's extremes, and the design's public facts (n,
        the columns, the outcome, the formula) as a design without rows."""
        k = len(spec.spec.columns) + 1
        panel = reduce_design(
            data,
            spec,
            groups=groups,
            sums=_partition_extremes,
            statistic=_same,
            aggregations=("min",) * k + ("max",) * k,
        )
        design = PanelDesign(
            y=np.empty(0),
            X=np.empty((0, k - 1)),
            codes=np.empty(0, dtype=np.intp),
            n=panel.n,
            columns=panel.columns,
            outcome=panel.outcome,
            formula=panel.formula,
        )
        rows = cls(data, spec, groups, panel.statistics[:, :k], panel.statistics[:, k:])
        return rows, design

    def person_sums(
        self, scaled: _Scaling, *, blocks: Blocks, kept: NDArray[np.intp], means: bool
    ) -> PersonSums:
        """Pass 2: each person's sums of the rows clipped and mapped by ``scaled`` (public),
        or with ``means`` of the person's mean row (:class:`~dplong.BetweenOLS`)."""
        n = self.lows.shape[0]
        if means:
            sums = functools.partial(_scaled_sums, scaled=scaled)
            totals = reduce_design(
                self.data, self.spec, groups=self.groups, sums=sums, statistic=_same, tell=False
            ).statistics
            rows = totals[:, :-1] / np.maximum(totals[:, -1:], 1.0)  # 0: no rows, as in memory
            codes = np.arange(n, dtype=np.intp)
            return PersonSums.of_rows(rows[:, :-1], rows[:, -1], codes, n, blocks=blocks, kept=kept)
        sums = functools.partial(_person_sums, scaled=scaled, blocks=blocks, kept=kept)
        totals = reduce_design(
            self.data, self.spec, groups=self.groups, sums=sums, statistic=_same, tell=False
        ).statistics
        grams, products = np.split(totals[:, :-1], [kept.size], axis=1)
        return PersonSums(grams, products, totals[:, -1])


def _same(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """The summed sums are the statistics."""
    return sums


def _partition_extremes(design: PanelDesign) -> NDArray[np.float64]:
    """A partition's persons' smallest, then largest, value of each column and the outcome."""
    lows, highs = _extremes(np.column_stack([design.X, design.y]), design.codes, design.n)
    return np.column_stack([lows, highs])


def _scaled_sums(design: PanelDesign, *, scaled: _Scaling) -> NDArray[np.float64]:
    """A partition's persons' sums of their scaled rows and their row counts."""
    x, y = scaled.apply(design.X, design.y)
    return user_row_sums(np.column_stack([x, y, np.ones(len(y))]), design.codes, design.n)


def _person_sums(
    design: PanelDesign, *, scaled: _Scaling, blocks: Blocks, kept: NDArray[np.intp]
) -> NDArray[np.float64]:
    """A partition's persons' :class:`PersonSums` as one array (grams, products, rows)."""
    x, y = scaled.apply(design.X, design.y)
    sums = PersonSums.of_rows(x, y, design.codes, design.n, blocks=blocks, kept=kept)
    return np.column_stack([sums.grams, sums.products, sums.rows])
