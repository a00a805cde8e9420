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

The within estimator (:class:`~dplong.PanelOLS`) regresses each person's deviations from their
own means (:func:`~dplong.models.pooled.deviations.deviation_rows`): two passes more when the
model is built, each person's mean offset from their anchor (their smallest values, pass 1's),
then the deviations' extremes; each partition looks the anchor and mean up for its persons
(``given``). The random-effects estimator (:class:`~dplong.RandomEffects`) reads the moments of
its pilot's residuals (:meth:`DaskRows.residual_moments`, two passes) and, before its
quasi-demeaned sums, each person's sums of the scaled rows (:meth:`DaskRows.scaled_sums`),
whose shift each partition looks up the same way.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong._grouping import user_row_sums
from dplong.dask_frames import FrameSpec, ReducedPanel, reduce_design
from dplong.formula import PanelDesign
from dplong.models.location_moments import _squared_deviations
from dplong.models.pooled.deviations import deviation_rows, offsets
from dplong.models.pooled.factors import Blocks
from dplong.models.pooled.frame import _Scaling
from dplong.models.pooled.located import _extremes
from dplong.models.pooled.persons import PersonSums
from dplong.models.reduce import user_means, user_totals, within_fit_residuals, within_sums

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["DaskRows", "clipped_residuals"]


@dataclass(frozen=True)
class _Within:
    """The within estimator's transform of a partition's rows: the design's ``columns`` (and
    the outcome, last) as deviations from each person's ``anchor`` and ``mean`` offset (n x
    k each, private as the rows are), a column of ones first."""

    columns: tuple[int, ...]
    anchor: NDArray[np.float64]
    mean: NDArray[np.float64]


@dataclass(frozen=True)
class DaskRows:
    """A Dask frame's rows as a pooled model reads them (private, as rows in memory are).

    Attributes
    ----------
    data : dask.dataframe.DataFrame
    spec : FrameSpec
    groups : str
        The person-id column.
    ids : ndarray
        The persons' ids, in order of first appearance (the order of every per-person array).
    lows, highs : ndarray, shape (n, p + 1)
        Each person's smallest and largest value of every column the model regresses and the
        outcome (NaN for a person whose rows were all left out).
    within : _Within or None
        The within estimator's deviations (None: the rows as they are).
    keep : tuple of int or None
        The regressed columns kept (None: all), after a model left some out.

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
    >>> rows.row_counts().tolist()      # a pass: each person's rows
    [2, 2]
    """

    data: DaskFrame
    spec: FrameSpec
    groups: Any
    ids: NDArray[Any]
    lows: NDArray[np.float64]
    highs: NDArray[np.float64]
    within: _Within | None = None
    keep: tuple[int, ...] | None = None

    @classmethod
    def read(cls, data: DaskFrame, spec: FrameSpec, groups: Any) -> tuple[DaskRows, PanelDesign]:
        """Pass 1 over ``data``: each person's extremes, and the design's public facts (n,
        the columns, the outcome, the formula) as a design without rows."""
        empty = np.empty((0, 0))
        rows = cls(data, spec, groups, np.empty(0), empty, empty)
        panel = rows._reduce(_partition_extremes, rows._extreme_aggregations(), tell=True)
        k = panel.statistics.shape[1] // 2
        found = dataclasses.replace(
            rows, ids=panel.ids, lows=panel.statistics[:, :k], highs=panel.statistics[:, k:]
        )
        return found, _no_rows(panel.n, panel.columns, panel.outcome, panel.formula)

    @classmethod
    def read_within(
        cls, data: DaskFrame, spec: FrameSpec, groups: Any, columns: list[int]
    ) -> tuple[DaskRows, PanelDesign]:
        """Passes 1-3 for the within estimator of the design's ``columns`` (and the outcome):
        each person's extremes (their smallest values are the anchor), their rows' mean offset
        from the anchor, then the extremes of the deviations, a column of ones first; and the
        design's public facts."""
        raw, design = cls.read(data, spec, groups)
        chosen = (*columns, len(design.columns))
        anchor = raw.lows[:, chosen]
        offsets = raw._reduce(
            functools.partial(_offset_sums, columns=chosen), (), tell=False, tables=(anchor,)
        ).statistics
        mean = offsets[:, :-1] / np.maximum(offsets[:, -1:], 1.0)
        rows = dataclasses.replace(raw, within=_Within(chosen, anchor, mean))
        panel = rows._reduce(_partition_extremes, rows._extreme_aggregations(), tell=False)
        k = panel.statistics.shape[1] // 2
        lows, highs = panel.statistics[:, :k], panel.statistics[:, k:]
        return dataclasses.replace(rows, lows=lows, highs=highs), design

    def without(self, rows: list[int]) -> DaskRows:
        """The same rows with only the regressed columns (and the outcome, last) at ``rows``
        of the current ones (a model that left some out)."""
        current = self.keep if self.keep is not None else tuple(range(self.lows.shape[1] - 1))
        return dataclasses.replace(
            self,
            lows=self.lows[:, rows],
            highs=self.highs[:, rows],
            keep=tuple(current[j] for j in rows[:-1]),
        )

    def row_counts(self) -> NDArray[np.intp]:
        """A pass: each person's number of rows (private; 0 where all were left out)."""
        counts = self._reduce(_row_counts, (), tell=False).statistics
        return np.asarray(np.rint(counts[:, 0]), dtype=np.intp)

    def scaled_sums(self, scaled: _Scaling) -> NDArray[np.float64]:
        """A pass: each person's sums of the rows clipped and mapped by ``scaled`` (public),
        and their row counts (n x (p + 2))."""
        partition = functools.partial(_scaled_sums, scaled=scaled)
        return np.asarray(self._reduce(partition, (), tell=False).statistics)

    def person_sums(
        self,
        scaled: _Scaling,
        *,
        blocks: Blocks,
        kept: NDArray[np.intp],
        shift: NDArray[np.float64] | None = None,
    ) -> PersonSums:
        """The pass at the fit: each person's :class:`PersonSums` of the rows clipped and
        mapped by ``scaled`` (public), less the person's ``shift`` where given (n x (p + 1):
        the random-effects estimator's quasi-demeaning)."""
        summed = functools.partial(_person_sums, scaled=scaled, blocks=blocks, kept=kept)
        tables = () if shift is None else (shift,)
        totals = self._reduce(summed, (), tell=False, tables=tables).statistics
        grams, products = np.split(totals[:, :-1], [kept.size], axis=1)
        return PersonSums(grams, products, totals[:, -1])

    def residual_moments(
        self, beta: NDArray[np.float64], ranges: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Two passes, as :func:`residual_moments` reduces the rows in memory: each person's
        row count and sums of the clipped rows and residuals, then the sums of products of
        their deviations from the person's means (n x 4)."""
        totals = self._reduce(
            functools.partial(_residual_sums, beta=beta, ranges=ranges, part=_residual_totals),
            (),
            tell=False,
        ).statistics
        products = self._reduce(
            functools.partial(_residual_sums, beta=beta, ranges=ranges, part=_residual_products),
            (),
            tell=False,
            tables=(user_means(totals),),
        ).statistics
        return _within_moments(totals, products)

    def _extreme_aggregations(self) -> tuple[str, ...]:
        """Dask's aggregations of a pass of extremes: minima, then maxima, of each column the
        model regresses and the outcome."""
        if self.keep is not None:
            k = len(self.keep) + 1
        elif self.within is not None:
            k = len(self.within.columns) + 1  # the column of ones, the deviations, the outcome
        else:
            k = len(self.spec.spec.columns) + 1
        return ("min",) * k + ("max",) * k

    def _reduce(
        self,
        sums: Any,
        aggregations: tuple[str, ...],
        *,
        tell: bool,
        tables: tuple[NDArray[np.float64], ...] = (),
    ) -> ReducedPanel:
        """One pass: each person's ``sums`` of the rows the model regresses (the within
        deviations where there are, the columns kept), with per-person ``tables`` looked up
        for each partition's persons by id."""
        own = () if self.within is None else (self.within.anchor, self.within.mean)
        partition = functools.partial(_regressed, sums=sums, within=self.within, keep=self.keep)
        panel = reduce_design(
            self.data,
            self.spec,
            groups=self.groups,
            sums=partition,
            statistic=np.asarray,  # the summed sums are the statistics
            given=[pd.DataFrame(table, index=self.ids) for table in (*own, *tables)],
            tell=tell,
            aggregations=aggregations,
            # every pass reads the frame again: its persons must be those the model was
            # built on
            users=self.ids if len(self.ids) else None,
        )
        return panel


def _no_rows(n: int, columns: tuple[str, ...], outcome: str, formula: str) -> PanelDesign:
    """A design's public facts, without its rows (they stay on the Dask frame)."""
    return PanelDesign(
        y=np.empty(0),
        X=np.empty((0, len(columns))),
        codes=np.empty(0, dtype=np.intp),
        n=n,
        columns=columns,
        outcome=outcome,
        formula=formula,
    )


def _regressed(
    design: PanelDesign,
    *tables: NDArray[np.float64],
    sums: Any,
    within: _Within | None,
    keep: tuple[int, ...] | None,
) -> NDArray[np.float64]:
    """A partition's persons' ``sums`` of the rows the model regresses: the design's, or its
    within deviations (the first two ``tables``: each person's anchor and mean), the columns
    ``keep``; the other tables go to ``sums``."""
    if within is not None:
        anchor, mean, *tables_left = tables
        z = np.column_stack([design.X, design.y])[:, within.columns]
        X, y = deviation_rows(z, design.codes, anchor, mean)
        design = dataclasses.replace(design, X=X, y=y)
        tables = tuple(tables_left)
    if keep is not None:
        design = dataclasses.replace(design, X=design.X[:, list(keep)])
    return np.asarray(sums(design, *tables))


def _residual_sums(
    design: PanelDesign,
    *tables: NDArray[np.float64],
    beta: NDArray[np.float64],
    ranges: NDArray[np.float64],
    part: Callable[..., NDArray[np.float64]],
) -> NDArray[np.float64]:
    """A partition's persons' ``part`` of the residuals of the rows clipped to ``ranges``,
    with the pass's per-person ``tables``."""
    return part(clipped_residuals(design, beta, ranges), *tables)


def residual_moments(
    design: PanelDesign, beta: NDArray[np.float64], ranges: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The random-effects components' per-person moments of the pilot's residuals
    ``clip(y) - clip(x)'β`` of the rows clipped to ``ranges`` ((p + 1) x 2, the outcome's
    last), in memory: each person's row count, residuals' mean, and residual sum of squares
    of their own within regression of the residuals on the clipped rows, with its degrees of
    freedom (n x 4; :func:`~dplong.models.reduce.within_fit_residuals`); where the person's
    rows leave it none (no more rows than slopes varying within them), the residuals' sum of
    squared deviations from their mean, on ``T_u - 1``.

    The within sum of squares is taken at each person's own slopes, not at the pilot's β:
    the residuals' within variance about their means holds ``(β - β_W)' X̃'X̃ (β - β_W)``,
    which where the regressors track the person effects (the random-effects assumption
    fails, ``β_W`` far from the pooled β) moved the released σ_e², θ and the slopes with the
    pilot's privacy noise (docs/accuracy.md, "Random effects' silent misses"); a person's
    own within regression leaves that sum whatever β is (Swamy and Arora's within residuals,
    person by person).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.formula import PanelDesign
    >>> from dplong.models.pooled.dask_rows import residual_moments
    >>> X = np.column_stack([np.ones(5), [0.0, 1.0, 3.0, 0.0, 2.0]])
    >>> y = np.array([1.0, 2.0, 4.5, 0.0, 1.0])
    >>> design = PanelDesign(y=y, X=X, codes=np.repeat([0, 1], [3, 2]), n=2,
    ...                      columns=("Intercept", "x"), outcome="y", formula="y ~ x")
    >>> ranges = np.array([[1.0, 1.0], [-9.0, 9.0], [-9.0, 9.0]])
    >>> moments = residual_moments(design, np.array([0.0, 1.0]), ranges)
    >>> moments.round(3).tolist()   # rows, mean, sum of squares, its df (user 1's: about the mean)
    [[3.0, 1.167, 0.018, 1.0], [2.0, -0.5, 0.5, 1.0]]
    """
    residuals = clipped_residuals(design, beta, ranges)
    totals = _residual_totals(residuals)
    return _within_moments(totals, _residual_products(residuals, user_means(totals)))


def _residual_totals(residuals: PanelDesign) -> NDArray[np.float64]:
    """Each person's row count and sums of the clipped rows and residuals (n x (p + 2))."""
    return user_totals(residuals.y, residuals.X, residuals.codes, residuals.n)


def _residual_products(residuals: PanelDesign, means: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each person's sums of products of the deviations of the clipped rows and residuals
    from the person's ``means`` (:func:`~dplong.models.reduce.within_sums`), and of the
    residuals' squared deviations, last; additive over any split of a person's rows."""
    y, X, codes, n = residuals.y, residuals.X, residuals.codes, residuals.n
    products = within_sums(y, X, codes, n, means[:, 1:], means[:, 0])
    squares = _squared_deviations(residuals, means[:, [0, -1]])
    return np.column_stack([products, squares])


def _within_moments(
    totals: NDArray[np.float64], products: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each person's row count, residuals' mean, within-fit residual sum of squares and its
    degrees of freedom (n x 4) from the two passes' sums."""
    means = user_means(totals)
    rows, squares = means[:, 0], products[:, -1]
    p = totals.shape[1] - 2  # the clipped rows' columns (totals: the count, them, residuals)
    ssr, df = within_fit_residuals(products[:, :-1], squares, rows, p)
    # a person whose rows its own slopes use up (as many periods as dummies of TimeEffects
    # take) has the residuals' within variance at the pilot's β instead, on T_u - 1
    fitted = df >= 1
    return np.column_stack(
        [rows, means[:, -1], np.where(fitted, ssr, squares), np.where(fitted, df, rows - 1.0)]
    )


def clipped_residuals(
    design: PanelDesign, beta: NDArray[np.float64], ranges: NDArray[np.float64]
) -> PanelDesign:
    """The design of the residuals ``clip(y) - clip(x)'β`` of its rows clipped to ``ranges``
    ((p + 1) x 2, the outcome's last), the clipped rows its regressors: the random-effects
    pilot's, whose moments give the variance components (in memory or a Dask partition).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.formula import PanelDesign
    >>> from dplong.models.pooled.dask_rows import clipped_residuals
    >>> design = PanelDesign(y=np.array([5.0, 1.0]), X=np.array([[1.0], [9.0]]),
    ...                      codes=np.array([0, 1]), n=2, columns=("x",), outcome="y",
    ...                      formula="y ~ x - 1")
    >>> clipped_residuals(design, np.array([0.5]), np.array([[0.0, 4.0], [0.0, 3.0]])).y
    array([ 2.5, -1. ])
    """
    x = np.clip(design.X, ranges[:-1, 0], ranges[:-1, 1])
    y = np.clip(design.y, ranges[-1, 0], ranges[-1, 1])
    return dataclasses.replace(design, y=y - x @ beta, X=x)


def _partition_extremes(design: PanelDesign) -> NDArray[np.float64]:
    """A partition's persons' smallest, then largest, value of each column and the outcome."""
    lows, highs = _extremes(np.column_stack([design.X, design.y]), design.codes, design.n)
    return np.column_stack([lows, highs])


def _offset_sums(
    design: PanelDesign, anchor: NDArray[np.float64], *, columns: tuple[int, ...]
) -> NDArray[np.float64]:
    """A partition's persons' sums of their rows' offsets from their anchor (the design's
    ``columns`` and the outcome) and their row counts: the within means' pass."""
    z = offsets(np.column_stack([design.X, design.y])[:, columns], design.codes, anchor)
    return user_row_sums(np.column_stack([z, np.ones(len(z))]), design.codes, design.n)


def _row_counts(design: PanelDesign) -> NDArray[np.float64]:
    """A partition's persons' row counts."""
    return user_row_sums(np.ones((len(design.y), 1)), design.codes, design.n)


def _scaled_sums(design: PanelDesign, *, scaled: _Scaling) -> NDArray[np.float64]:
    """A partition's persons' sums of their scaled rows and their row counts."""
    x, y = scaled.apply(design.X, design.y)
    return user_row_sums(np.column_stack([x, y, np.ones(len(y))]), design.codes, design.n)


def _person_sums(
    design: PanelDesign,
    *shift: NDArray[np.float64],
    scaled: _Scaling,
    blocks: Blocks,
    kept: NDArray[np.intp],
) -> NDArray[np.float64]:
    """A partition's persons' :class:`PersonSums` as one array (grams, products, rows) of
    the scaled rows, less each person's ``shift`` where there is one."""
    x, y = scaled.apply(design.X, design.y)
    if shift:
        z = np.column_stack([x, y]) - shift[0][design.codes]
        x, y = z[:, :-1], z[:, -1]
    sums = PersonSums.of_rows(x, y, design.codes, design.n, blocks=blocks, kept=kept)
    return np.column_stack([sums.grams, sums.products, sums.rows])
