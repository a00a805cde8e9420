"""The :class:`PanelOLS` estimator: pooled OLS's release on every person's deviations from
their own means (the within, or fixed-effects, estimator)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import user_row_means
from dplong.dask_frames import FrameSpec
from dplong.formula import DesignSpec, GroupsLike, PanelDesign
from dplong.models.command_line import (
    BOUNDS_OPTION,
    FOUND_MAX_ROWS_OPTION,
    CommandLineModel,
    Option,
    register,
)
from dplong.models.linear_options import _between_columns
from dplong.models.pooled.dask_rows import DaskRows
from dplong.models.pooled.deviations import deviation_rows, offsets
from dplong.models.pooled.estimator import PooledOLS
from dplong.models.pooled.factors import Disjoint, _indicator_ranges
from dplong.models.pooled.located import FoundRanges, _extremes

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["PanelOLS"]

#: The column of ones the released sums keep (never reported): its entry of ``X'X`` is the
#: weighted row count that the scores' clipping radius needs (its products with the deviations
#: sum to 0 in every person's rows, so it moves no coefficient).
ROW_COUNTER = "Intercept"


def _deviating(columns: tuple[str, ...]) -> list[int]:
    """The design's columns whose deviations are regressed: all but one named
    :data:`ROW_COUNTER` (the formula's intercept, absorbed by the person effects)."""
    return [j for j, name in enumerate(columns) if name != ROW_COUNTER]


class PanelOLS(PooledOLS):
    """User-level DP within (fixed-effects) estimator: OLS of the outcome's deviations from each
    person's mean on the covariates' deviations (linearmodels' ``PanelOLS`` with
    ``entity_effects=True``), released as :class:`PooledOLS` is, with person-clustered
    standard errors that include the privacy noise.

    The person effects absorb the intercept and every covariate that never changes within a
    person (its deviations are all 0): declared (``fit(between=[...])``), it is reported as
    absorbed with no estimate and the rest are released (:class:`PooledOLS` or
    :class:`RandomEffects` identify it); found so by the released counts of the ranges'
    stage, it is reported as absorbed and the rest are withheld ("omitted regressor": the
    counts cannot tell it from one that changes for a few persons, whose omission would bias
    them). The ranges
    are the deviations', found privately from the deviations themselves (a declared factor's
    indicators' are ±1), so a column that varies little within persons gets a frame of its
    own spread, not of its range: a public range ``(low, high)`` of a column in ``bounds``
    only caps its deviations' at ``±(high - low)`` and saves no budget (a frame that wide
    would leave the design within the Gram matrix's noise).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dplong
    >>> rng = np.random.default_rng(0)
    >>> people, years = 3000, 8
    >>> x = np.repeat(rng.normal(size=people), years) + rng.normal(size=people * years)
    >>> y = 0.5 * x + np.repeat(rng.normal(size=people), years) + rng.normal(size=people * years)
    >>> panel = pd.DataFrame({"id": np.repeat(np.arange(people), years), "x": x, "y": y})
    >>> res = dplong.PanelOLS.from_formula("y ~ x", panel, groups="id").fit(
    ...     epsilon=1.0, max_rows=8, random_state=0)
    >>> list(res.params.index), bool(abs(res.params["x"] - 0.5) < 4 * res.bse["x"])
    (['x'], True)
    """

    model_name = "PanelOLS"
    estimator = "within OLS"
    _clipped = "deviations from each person's mean"
    _methods = ("statistics",)
    _bounds_frame = False  # a public range only caps the deviations' range found
    _side_share = 0.5  # every person who varies has deviations on both sides
    _entity_effects = True
    _unidentified = (
        ", or a covariate never changes within a person and the person effects absorb it"
    )
    # a declared one is left out before any release (the released counts can miss one)
    _unidentified_remedy = (
        "declare a covariate that never changes within a person in fit(between=[...]), "
    )

    @classmethod
    def _of(
        cls,
        spec: DesignSpec,
        design: PanelDesign,
        ranges: NDArray[np.float64],
        source: DaskRows | None = None,
    ) -> PanelOLS:
        """The model of the design's deviations from each person's means (a per-person map of
        the rows: each person's deviations depend on their own rows only,
        :func:`~dplong.models.pooled.deviations.deviation_rows`; on a Dask frame's ``source``
        they are computed where the rows lie), a column of ones (:data:`ROW_COUNTER`) first.
        The formula's intercept, if any, is absorbed like the person effects. The deviations'
        ranges are found at the fit, cut to the public ones a column's ``bounds`` give, but a
        declared factor's indicators' (±1)."""
        keep = _deviating(design.columns)
        columns = (ROW_COUNTER, *(design.columns[j] for j in keep))
        if source is None:
            z = np.column_stack([design.X[:, keep], design.y])
            anchor = _extremes(z, design.codes, design.n)[0]
            mean = user_row_means(offsets(z, design.codes, anchor), design.codes, design.n)
            X, y = deviation_rows(z, design.codes, anchor, mean)
        else:  # no rows here
            X, y = np.empty((0, len(columns))), design.y
        within = dataclasses.replace(design, X=X, y=y, columns=columns)
        # a public range of width w bounds the deviations by ±w, far wider than their spread
        # (a frame that wide leaves the design within the Gram matrix's noise): it caps the
        # range found privately; a declared factor's indicators keep their public ±1
        width = (ranges[:, 1] - ranges[:, 0])[[*keep, len(design.columns)]]
        public = np.column_stack([-width, width])
        factor = np.isin([*columns[1:], design.outcome], list(_indicator_ranges(spec)))
        bounded = np.isfinite(width) & ~factor
        spread = np.where(factor[:, None], public, np.nan)
        caps = np.where(bounded[:, None], public, [[-np.inf, np.inf]])
        return cls(
            within,
            np.vstack([[1.0, 1.0], spread]),
            levels=spec.levels,
            caps=np.vstack([[-np.inf, np.inf], caps]),
            source=source,
        )

    @classmethod
    def _read_dask(
        cls, data: DaskFrame, spec: FrameSpec, groups: GroupsLike
    ) -> tuple[DaskRows, PanelDesign]:
        """The passes over a Dask frame's rows when the model is built: each person's
        extremes, mean offset from their anchor and the deviations' extremes
        (:meth:`~dplong.models.pooled.dask_rows.DaskRows.read_within`)."""
        return DaskRows.read_within(data, spec, groups, _deviating(spec.spec.columns))

    @property
    def exog_names(self) -> list[str]:
        """Names of the design's columns but the intercept (absorbed by the person effects)."""
        return list(self._design.columns[1:])

    @property
    def _reported(self) -> NDArray[np.intp]:
        """Every column but :data:`ROW_COUNTER`."""
        return np.arange(1, len(self._design.columns))

    def _absorbed(self, between: object) -> tuple[str, ...]:
        """The regressors declared constant within persons, checked (public): the person
        effects absorb them, and the fit leaves them out."""
        return _between_columns(between, tuple(self.exog_names), within=True, formula=self.formula)

    def _absorbing(self, found: FoundRanges) -> tuple[PanelOLS, FoundRanges, tuple[str, ...]]:
        """The model without the regressors whose deviations the released counts found at 0
        for (nearly) every person (post-processing): the person effects absorb them, as a
        declared ``between`` column, and leaving them in would leave the released ``X'X``
        undetermined and every coefficient withheld."""
        columns = self._design.columns
        flat = found.constant[: len(columns)]  # the outcome's last
        constant = tuple(c for c, f in zip(columns, flat, strict=True) if f)
        if not constant:
            return self, found, ()
        return self._without(constant), found.at(self._kept(constant)), constant

    def _zero_products(self) -> Disjoint:
        """None: a deviation row of a factor has several non-zero indicators."""
        return ()

    def _weighting(self, cap: int) -> str:
        return (
            "person effects absorbed (deviations from each person's mean); "
            + super()._weighting(cap)
        )


register(
    CommandLineModel(
        "panel",
        PanelOLS.from_formula,
        "PanelOLS: within (person fixed effects) OLS with person-clustered errors from released "
        "sufficient statistics",
        uses_time=True,  # the time column of TimeEffects
        options=(
            BOUNDS_OPTION,
            FOUND_MAX_ROWS_OPTION,
            Option(
                "between",
                "names",
                "A,B",
                "regressors constant within every person (treatment, sex), reported as "
                "absorbed by the person effects, left out of the releases",
            ),
        ),
    )
)
