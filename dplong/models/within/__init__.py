"""The private within (entity fixed-effects) estimator: released cross products, solved.

The within estimator of ``y_ut = α_u + x_ut'β + e_ut`` (linearmodels'
``PanelOLS(entity_effects=True)``, Stata's ``xtreg, fe``) solves
``(Σ_u X̃_u'X̃_u) β = Σ_u X̃_u'ỹ_u`` on every user's demeaned rows. Both sums are sums of
per-user statistics, so the estimator is a function of column means released by the engine;
everything after the releases is post-processing:

1. **design** blocks, one per regressor in the formula's order: the Gram–Schmidt factorisation
   ``A = L D L'`` released row by row (each ``z_i'z_i`` released in its own scale, so a
   direction that correlated regressors leave small is not swamped by noise of the entries'
   size); a regressor without distinguishable within variation is withheld, decided from
   released numbers only;
2. the **influence** blocks: every user's influence on β at the pilot ``β₀``, centred on the
   public 0, and a Newton step ``β₁ = β₀ + ψ̂``; where n ε affords them, up to three steps,
   each correcting what the one before left (with skewed regressors the clipped influence
   corrects about 70 % of the error a step); the last step's second moment is the diagonal of
   the cluster-robust sandwich.

The privacy noise is pushed through the exact post-processing map by a fixed-seed parametric
bootstrap of the released means (its sd is ``noise_sd``, its mean joins the bias bound).
Users enter per within degree of freedom with precision weights capped at ``max_rows``.

One module each: the regressors and their products (:mod:`~dplong.models.within.regressors`),
the blocks and their budget shares (:mod:`~dplong.models.within.blocks`), the public
identification rule on the released design (:mod:`~dplong.models.within.basis`), the noise
law by the bootstrap (:mod:`~dplong.models.within.noise`) and the results
(:mod:`~dplong.models.within.results`). The derivation, the tail models of each block and why
they were chosen are in the design notes, ``docs/design/within.md``.
"""

from __future__ import annotations

from dplong.models.within.blocks import within_blocks, within_shares
from dplong.models.within.regressors import (
    WithinProducts,
    coefficient_names,
    regressor_columns,
    select_products,
)
from dplong.models.within.results import within_results

__all__ = [
    "WithinProducts",
    "coefficient_names",
    "regressor_columns",
    "select_products",
    "within_blocks",
    "within_results",
    "within_shares",
]
