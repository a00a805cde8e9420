"""The results of a fit from released sufficient statistics: β̂, its noise draws and its
clustered covariance unscaled to the columns' units, the coefficients nothing bounds withheld,
and the fit's public notes and assumptions (the last step of ``docs/design/pooled.md``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.models.pooled.frame import _Scaling
from dplong.models.pooled.release import _Statistics
from dplong.privacy.accounting import PrivacyLedger
from dplong.privacy.budget import NOTE_MISS, StatisticsBudget
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.ranges import located_miss
from dplong.results import RegressionResults

if TYPE_CHECKING:
    from dplong.models.pooled.estimator import PooledOLS

__all__: list[str] = []


def _statistics_results(
    model: PooledOLS,
    scaled: _Scaling,
    release: _Statistics,
    ledger: PrivacyLedger,
    options: ReleaseOptions,
    cap: int,
    ranges: NDArray[np.float64],
    plan: StatisticsBudget,
) -> RegressionResults:
    """``model``'s results: β̂, its noise draws and its covariances unscaled to the
    ``ranges`` (the columns', then the outcome's) the fit clipped to."""
    names = model._design.columns
    index = pd.Index(names)
    solution = release.pilot
    beta = scaled.unscale(release.beta)
    corrected, uncorrected = (scaled.offset + d @ scaled.linear.T for d in release.draws)
    noise_sd = np.maximum(corrected.std(axis=0), uncorrected.std(axis=0))
    shift = corrected.mean(axis=0) - beta
    # the ridge's pull on the pilot, (Ĥ)⁻¹ λ β, at the stepped β̂ (the pilot's own β is
    # shrunk by it: at a ridge far above the design's eigenvalues it sees a tenth of it)
    with np.errstate(over="ignore", invalid="ignore"):  # an unbounded pull: infinite
        ridge = np.nan_to_num(
            np.abs(scaled.linear) @ solution.shrinkage_at(release.beta, len(plan.rho) - 2),
            nan=np.inf,
            posinf=np.inf,
        )
    sampling_sd = np.sqrt(np.diag(scaled.linear @ release.sampling @ scaled.linear.T))
    # withheld (released numbers only): where the released X'X does not determine a
    # direction beyond its noise nothing bounds the ridge's pull, and an interval to the
    # doubles' edge is no estimate
    unbounded = ~np.isfinite(ridge)
    for values in (beta, noise_sd, sampling_sd, shift, ridge):
        values[unbounded] = np.nan
    notes: tuple[str, ...] = ()
    if unbounded.any():
        remedy = "give public bounds, " if model._located.any() else ""
        notes += (
            f"{[str(c) for c in index[unbounded]]} withheld: the released X'X does not "
            "determine them beyond its noise, so nothing bounds how far its ridge pulled "
            "them (the design is nearly collinear or varies little for this n and "
            f"epsilon): {remedy}raise epsilon or drop a collinear term.",
        )
    elif solution.ridge > 0.0:
        notes += (
            "The released X'X was floored at its noise (a ridge): coefficients shrunk, "
            "within the bias bound. Raise epsilon or drop a collinear term.",
        )

    def series(values: NDArray[np.float64], label: str) -> pd.Series:
        return pd.Series(values, index=index, name=label)

    located = model._located
    bounds = ", ".join(
        f"{name} in [{lo:.4g}, {hi:.4g}]" + (" (found privately)" if found else "")
        for name, (lo, hi), found in zip(model._names, ranges, located, strict=True)
        if name != "Intercept"
    )
    if model._range_notes(plan):
        notes += model._range_notes(plan)
    elif located.any() and located_miss(model._design.n, plan.median_epsilon) > NOTE_MISS:
        notes += (
            "The ranges found privately may miss the data at this n and epsilon (a range "
            "that misses clips every value): give public bounds or raise epsilon.",
        )
    return RegressionResults(
        model=model.spec,
        formula=model.formula,
        params=series(beta, "params"),
        noise_scale=series(noise_sd, "noise scale"),
        noise_sd=series(noise_sd, "noise sd"),
        noise_law="gaussian",
        sampling_sd=series(sampling_sd, "sampling sd"),
        bias=series(np.abs(shift) + ridge, "bias"),
        projection_interval=pd.DataFrame(np.nan, index=index, columns=["lower", "upper"]),
        failed=pd.Series(False, index=index, name="failed"),
        privacy=ledger,
        nobs_users=model.nobs_users,
        # every person contributes (n is public): nothing is counted
        users=pd.Series([math.nan], index=["users with a statistic"], name="users"),
        users_sd=math.nan,
        variant="sufficient statistics",
        assumptions=(
            f"ranges (values outside are clipped): {bounds}",
            f"standard errors clustered by person, plus the privacy noise; {model._weighting(cap)}",
        ),
        warnings=notes,
        gamma=options.gamma,
        bad_events=series(np.zeros(len(names)), "bad events"),
        basis=f"{model.estimator} from released sufficient statistics",
        levels=dict(model._levels),
        withheld_why={str(c): "unbounded" for c in index[unbounded]},
    )
