"""Pooled OLS's ``method="ptr"``: the coefficient vector in one user-level efficient
Propose-Test-Release (:func:`dplong.privacy.ptr.ols_ptr`), its standard errors from the Gram
matrix and meat of :mod:`~dplong.models.pooled.release` released with the rest of ε."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dplong.exceptions import ParameterError
from dplong.models.pooled.frame import _Scaling
from dplong.models.pooled.results import _statistics_results, sampling_covariance
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.accounting import Accountant
from dplong.privacy.budget import afford, ptr_budget, settle
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.ptr import (
    check_ols_ptr,
    ols_ptr_of_sums,
    ols_ptr_sensitivity,
    planned_noise_sd,
)
from dplong.results import RegressionResults

if TYPE_CHECKING:
    from dplong.models.pooled.estimator import PooledOLS

__all__ = ["PTR_EDGE_SDS", "PTR_REST", "PTR_SHARE"]

#: The share of ε of the ePTR release of the coefficients, and the shares of the rest between
#: the Gram matrix and the meat of the clustered standard errors (which need only be good to
#: some per cent).
PTR_SHARE, PTR_REST = 0.75, (0.6, 0.4)
#: The released coefficients within this many noise sds of ``coef_bound``'s sphere, or beyond
#: it, may be a projection onto it (post-processing): θ̂ on the sphere is released inside it
#: by more than that with chance Φ(-3), 0.13 %. Only beyond it (the rule before), a projected
#: θ̂ was named in about half the fits: a slope of 5 scaled to 1.25 was released at 4.0 and its
#: interval missed 5 in 19 of 20 fits at 20,000 persons and ε = 8, 8 of them unwarned (an
#: audit; docs/accuracy.md).
PTR_EDGE_SDS = 3.0


def _fit_ptr(
    model: PooledOLS,
    options: ReleaseOptions,
    cap: int,
    floor: Any,
    coef_bound: Any,
    generator: np.random.Generator,
    accountant: Accountant | None,
) -> RegressionResults:
    """``model``'s fit by ``method="ptr"``: every refusal first, then the ePTR release of the
    scaled coefficients and the Gram matrix and meat of the standard errors."""
    design = model._design
    n, p = design.n, len(design.columns)
    if model._located.any():
        raise ParameterError(
            'method="ptr" needs public ranges (bounds=) for every column; '
            f"{model._located_names} have none"
        )
    cap = model._cap(cap)
    budget = ptr_budget(options.epsilon, options.delta, share=PTR_SHARE, rest=PTR_REST)
    floor, coef_bound, notes = check_ols_ptr(n, p, cap, floor, coef_bound, budget)
    scaled = _Scaling.of(model._ranges, design.columns, None, model._blocks)  # public
    planned = planned_noise_sd(ols_ptr_sensitivity(n, p, cap, floor, coef_bound), budget)
    checkpoint(  # every refusal is decided: dplong.plan stops here, before any noise
        FitPlan(
            n,
            options,
            (
                PlannedBlock(
                    design.columns,
                    PTR_SHARE,
                    False,
                    None,
                    notes=notes,
                    noise_sd=planned * scaled.isotropic_gain,
                ),
            ),
        )
    )
    afford(accountant, options.epsilon, options.delta)
    # ---- no randomness was drawn above this line ----------------------------------------
    persons, cap = model._person_sums(scaled, cap)
    coefficients = ols_ptr_of_sums(
        *persons.cross_products(cap), cap, budget, generator, floor=floor, coef_bound=coef_bound
    )
    errors = model._release(scaled, persons, cap, budget.rest_rho, generator)
    ledger = settle(accountant, [*coefficients.entries, *errors.entries], options)
    results = _statistics_results(
        model,
        scaled,
        errors,
        ledger,
        options,
        cap,
        model._ranges,
        model.release_plan(epsilon=options.epsilon, delta=options.delta),
    )
    index = results.params.index
    if coefficients.estimate is None:
        notes += (
            "The ePTR test refused (⊥): no coefficient is released. The refusal is itself "
            "a DP release (the 'ptr test' entry of the ledger); refitting spends the budget "
            "again. Raise n or epsilon, or lower ptr_floor.",
        )
        beta = np.full(p, np.nan)
        noise_sd = np.full(p, np.nan)
        covariance = np.full((p, p), np.nan)
    else:
        beta = scaled.unscale(coefficients.estimate)
        noise_sd = coefficients.noise_sd * scaled.isotropic_gain
        # the sandwich of the release made with the rest of ε, plus the ePTR noise's own law:
        # sd σ on each scaled coefficient, independent, so σ² L L' in the columns' units
        covariance = sampling_covariance(scaled, errors) + coefficients.noise_sd**2 * (
            scaled.linear @ scaled.linear.T
        )
        # θ̂ projected onto the ball of coef_bound is released plus noise: near its sphere
        # or beyond, the released vector says θ̂ may sit on it (a released number)
        edge = coef_bound - PTR_EDGE_SDS * coefficients.noise_sd
        if float(np.linalg.norm(coefficients.estimate)) > edge:
            notes += (
                f"The released (scaled) coefficients lie within {PTR_EDGE_SDS:g} noise sds "
                "of coef_bound or beyond: the projection onto it may have shrunk them, by an "
                "amount the intervals do not hold; raise coef_bound (it bounds the "
                "coefficients in the columns' scaled units, not the data).",
            )
    return dataclasses.replace(
        results,
        params=pd.Series(beta, index=index, name="params"),
        noise_scale=pd.Series(noise_sd, index=index, name="noise scale"),
        noise_sd=pd.Series(noise_sd, index=index, name="noise sd"),
        bias=pd.Series(0.0, index=index, name="bias"),
        failed=pd.Series(coefficients.estimate is None, index=index, name="failed"),
        variant="ePTR",
        warnings=notes,
        basis=f"{model.estimator} by efficient Propose-Test-Release (seed Alg 4, Thm 4.1)",
        withheld_why={} if coefficients.released else dict.fromkeys(index, "ptr ⊥"),
        covariance=pd.DataFrame(covariance, index=index, columns=index),
    )
