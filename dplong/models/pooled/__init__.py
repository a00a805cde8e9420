"""Private pooled OLS from per-person sufficient statistics, each released as one vector.

The pooled estimator of ``y_ut = x_ut'β + e_ut`` (linearmodels' ``PooledOLS``, statsmodels'
``OLS`` with ``cov_type="cluster"``) solves ``(Σ_u X_u'X_u) β = Σ_u X_u'y_u``: it identifies
covariates that never change within a person (treatment arm, sex, cohort), which the per-user
and within estimators cannot. Everything it needs is a sum over people, released in four
Gaussian (zCDP) vectors whatever the number of columns; :class:`BetweenOLS` and
:class:`~dplong.RandomEffects` release the same sums of other rows. The steps, one module each:

1. **Scaling to ranges** (:mod:`~dplong.models.pooled.frame`, with the declared factors'
   blocks in :mod:`~dplong.models.pooled.factors`): every column and the outcome is clipped to
   a public range or one found privately (:mod:`~dplong.models.pooled.located`) and mapped
   onto ``[-1, 1]``.
2. **The augmented Gram matrix** (:mod:`~dplong.models.pooled.gram`): each person's clipped
   ``Z_u = Σ_t w_u z_t z_t'`` released as one vector, floored at its noise and solved for the
   pilot ``β₀``.
3. **Two Newton steps** and 4. **the person-clustered meat**
   (:mod:`~dplong.models.pooled.release`): whitened, clipped scores at a public β, released
   as vectors; the sandwich is the sampling covariance.

Steps 2-4 read the rows once, as each person's sums (:mod:`~dplong.models.pooled.persons`),
in memory or partition by partition on a Dask frame (:mod:`~dplong.models.pooled.dask_rows`).
The privacy noise is pushed through the exact map by a fixed-seed parametric bootstrap; its
shift and the ridge's pull join the bias bound, and the coefficients whose pull nothing bounds
are withheld (:mod:`~dplong.models.pooled.results`). The estimator is in
:mod:`~dplong.models.pooled.estimator`. Why each step is built as it is:
``docs/design/pooled.md``.
"""

from __future__ import annotations

from dplong.models.pooled.between import BetweenOLS
from dplong.models.pooled.estimator import PooledOLS
from dplong.models.pooled.frame import column_bounds
from dplong.models.pooled.gram import vech_scaled
from dplong.models.pooled.within import PanelOLS

__all__ = ["BetweenOLS", "PanelOLS", "PooledOLS", "column_bounds", "vech_scaled"]
