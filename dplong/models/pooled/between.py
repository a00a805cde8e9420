"""The :class:`BetweenOLS` estimator: pooled OLS's release on every person's mean row."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import user_row_means
from dplong.models.command_line import BOUNDS_OPTION, CommandLineModel, register
from dplong.models.pooled.dask_rows import DaskRows
from dplong.models.pooled.estimator import PooledOLS, Rows
from dplong.models.pooled.factors import Disjoint
from dplong.models.pooled.frame import _Scaling
from dplong.models.pooled.persons import PersonSums

__all__ = ["BetweenOLS"]


class BetweenOLS(PooledOLS):
    """User-level DP between estimator: OLS of every person's mean outcome on its mean
    covariates (linearmodels' ``BetweenOLS``), released as :class:`PooledOLS` is, a person's
    means being its one row (so ``fit`` refuses ``max_rows``: each person weighs one row).
    Standard errors are heteroskedasticity-robust, which with one row per person is clustering
    by person. Only between-person variation identifies it; covariates constant within a
    person are identified.

    Examples
    --------
    >>> import dplong
    >>> hie = dplong.datasets.load_randhie()
    >>> model = dplong.BetweenOLS.from_formula(
    ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> list(res.params.index), str(res.model)
    (['Intercept', 'np.log(coins + 1)', 'xage', 'female'], 'BetweenOLS')
    """

    model_name = "BetweenOLS"
    estimator = "between OLS"
    _rows_weighed = False  # a person is one row: their means
    _time_effects = False  # a person's means of the period dummies: their rows' shares

    def _rows(
        self,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        codes: NDArray[np.intp],
        n: int,
        cap: int,
    ) -> Rows:
        """Every person's mean scaled row (within the reach its rows have), one row a person (0
        for a person whose rows were all dropped: it adds nothing, as in pooled OLS)."""
        means = user_row_means(np.column_stack([x, y]), codes, n)
        return means[:, :-1], means[:, -1], np.arange(n, dtype=np.intp), 1

    def _dask_person_sums(
        self, source: DaskRows, scaled: _Scaling, kept: NDArray[np.intp]
    ) -> PersonSums:
        """Each person's mean scaled row from the sums of a Dask frame's rows, one row a
        person, as :meth:`_rows` in memory."""
        sums = source.scaled_sums(scaled)
        means = sums[:, :-1] / np.maximum(sums[:, -1:], 1.0)  # 0: no rows, as in memory
        n = means.shape[0]
        codes = np.arange(n, dtype=np.intp)
        return PersonSums.of_rows(
            means[:, :-1], means[:, -1], codes, n, blocks=self._blocks, kept=kept
        )

    def _zero_products(self) -> Disjoint:
        """None: a person's mean row of a factor whose level changes has several non-zero
        indicators."""
        return ()

    def _weighting(self, cap: int) -> str:
        return "a person is one row: its means (max_rows has no effect)"


register(
    CommandLineModel(
        "between",
        BetweenOLS.from_formula,
        "BetweenOLS: OLS of persons' means with robust (person-clustered) errors from released "
        "sufficient statistics",
        options=(BOUNDS_OPTION,),
    )
)
