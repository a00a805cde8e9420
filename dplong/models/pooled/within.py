"""The :class:`PanelOLS` estimator: pooled OLS's release on every person's deviations from
their own means (the within, or fixed-effects, estimator)."""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import user_row_means
from dplong.formula import DesignSpec, PanelDesign
from dplong.models.command_line import BOUNDS_OPTION, MAX_ROWS_OPTION, CommandLineModel, register
from dplong.models.pooled.estimator import PooledOLS
from dplong.models.pooled.factors import Disjoint

__all__ = ["PanelOLS"]

#: The column of ones the released sums keep (never reported): its entry of ``X'X`` is the
#: weighted row count that the scores' clipping radius needs (its products with the deviations
#: sum to 0 in every person's rows, so it moves no coefficient).
ROW_COUNTER = "Intercept"


class PanelOLS(PooledOLS):
    """User-level DP within (fixed-effects) estimator: OLS of the outcome's deviations from each
    person's mean on the covariates' deviations (linearmodels' ``PanelOLS`` with
    ``entity_effects=True``), released as :class:`PooledOLS` is, with person-clustered
    standard errors that include the privacy noise.

    The person effects absorb the intercept and every covariate that never changes within a
    person (its deviations are all 0: the released ``X'X`` does not determine it, and the
    coefficients are withheld with a note; drop it from the formula, or fit
    :class:`PooledOLS` or :class:`RandomEffects`, which identify it). The ranges are the
    deviations': a public range ``(low, high)`` of a column in ``bounds`` bounds its deviations
    by ``±(high - low)`` (a declared factor's indicators by ±1); the others are found privately
    from the deviations themselves, so a column that varies little within persons gets a frame
    of its own spread, not of its range.

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
    _unidentified = (
        ", or a covariate never changes within a person and the person effects absorb it"
    )

    @classmethod
    def _of(cls, spec: DesignSpec, design: PanelDesign, ranges: NDArray[np.float64]) -> PanelOLS:
        """The model of the design's deviations from each person's means, a column of ones
        (:data:`ROW_COUNTER`) first, and the deviations' public ranges (a per-person map of
        the rows: each person's deviations depend on their own rows only). The formula's
        intercept, if any, is absorbed like the person effects."""
        keep = [j for j, name in enumerate(design.columns) if name != ROW_COUNTER]
        z = np.column_stack([design.X[:, keep], design.y])
        deviations = z - user_row_means(z, design.codes, design.n)[design.codes]
        ones = np.ones((deviations.shape[0], 1))
        width = ranges[:, 1] - ranges[:, 0]  # NaN where found at the fit: stays NaN
        spread = np.column_stack([-width, width])[[*keep, len(design.columns)]]
        within = dataclasses.replace(
            design,
            X=np.column_stack([ones, deviations[:, :-1]]),
            y=np.ascontiguousarray(deviations[:, -1]),
            columns=(ROW_COUNTER, *(design.columns[j] for j in keep)),
        )
        return cls(within, np.vstack([[1.0, 1.0], spread]), levels=spec.levels)

    @property
    def exog_names(self) -> list[str]:
        """Names of the design's columns but the intercept (absorbed by the person effects)."""
        return list(self._design.columns[1:])

    @property
    def _reported(self) -> NDArray[np.intp]:
        """Every column but :data:`ROW_COUNTER`."""
        return np.arange(1, len(self._design.columns))

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
        options=(BOUNDS_OPTION, MAX_ROWS_OPTION),
    )
)
