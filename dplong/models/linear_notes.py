"""The assumptions :class:`~dplong.LongitudinalOLS` puts in its results: which estimator, where
the scale comes from, how the standard errors are built, and a stated tail's bound; and the
per-user estimator's note of users without a fit."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong.dependence import DependenceModel
from dplong.models.assemble import panel_results
from dplong.models.reduce import WorkingCorrelation
from dplong.privacy.engine import Release
from dplong.privacy.notes import few_users
from dplong.privacy.radius import TailOption, tail_assumptions
from dplong.results import PanelResults

__all__: list[str] = []

#: Why users have no per-user fit, and what identifies the coefficients instead: said where the
#: released count of users with one is clearly short of n (a covariate constant within every
#: user left all 3,000 users of an audit's panel without one, and the notes said only "raise
#: epsilon or use fewer columns", which no epsilon answers).
SINGULAR_USERS = (
    "A user has a per-user fit only with at least as many rows as coefficients and variation "
    "in every regressor: users with fewer rows have none, and a covariate constant within "
    "users (a treatment, sex, education) leaves every user's design singular, at any epsilon. "
    "For such covariates fit dplong.PooledOLS or dplong.RandomEffects; for the others, "
    'estimator="within" with between=[...].'
)


def _per_user_results(releases: Sequence[Release], **kwargs: Any) -> PanelResults:
    """The per-user estimator's results, with :data:`SINGULAR_USERS` among the notes where the
    released count of users with a fit is clearly below n (post-processing of the count:
    :func:`~dplong.privacy.notes.few_users`).

    Parameters
    ----------
    releases : sequence of Release
        The fit's one release, of the per-user coefficients.
    **kwargs
        Passed on to :func:`~dplong.models.assemble.panel_results`.

    Returns
    -------
    PanelResults
    """
    (release,) = releases
    if few_users(release.users, release.users_sd, release.n, len(release.names)).any():
        release = dataclasses.replace(release, notes=(*release.notes, SINGULAR_USERS))
    return panel_results([release], **kwargs)


def _per_user_assumptions(
    correlation: WorkingCorrelation,
    proxy: NDArray[np.float64] | None,
    tail: TailOption | None,
    *,
    scale: Any,
    min_rows: Any,
    min_eigenvalue: Any,
) -> tuple[str, ...]:
    """The per-user estimator's: the average of per-user OLS or GLS fits under its scale."""
    kind = "OLS" if correlation.kind == "independence" else "GLS"
    return (
        f"Per-user {kind} coefficients averaged over the users who have one (working "
        f"correlation: {correlation.describe()}); users with too few rows or a "
        "singular design contribute nothing (their number is estimated privately).",
        "Scale estimated privately (the spread of the per-user coefficients)."
        if proxy is None
        else _scale_note(scale, min_rows, min_eigenvalue),
        "Standard errors and intervals: the sampling error of the average under that "
        "scale (users independent), the exact privacy-noise law and the clipping bias bound.",
        *tail_assumptions(tail, "b_u", "the per-user coefficients"),
    )


def _within_assumptions(proxy: float | None) -> tuple[str, ...]:
    """The within estimator's."""
    # said in few words: a within summary with a withheld regressor and its warning must
    # still fit 25 lines
    return (
        "Within (entity fixed-effects) estimator: the demeaned cross products of the users "
        "with two rows or more; user effects absorb the intercept and time-invariant terms.",
        "Scales estimated privately (the spread of each released per-user statistic)."
        if proxy is None
        else f"Variance proxy of every released per-user statistic (scale): {proxy:g}.",
        "Standard errors: clustered by user ("
        + ("the users' private influence spread" if proxy is None else "the stated scale")
        + "), with every release's noise pushed through the solution and the bias bound.",
        # assumed by the model, checked where n ε affords it (tails._signed_tail)
        "Influence values' tail: exponential, checked by counts on each side where n and "
        "epsilon afford them (a warning says where not); a skew below their threshold biases "
        "unseen.",
    )


def _scale_note(scale: Any, min_rows: Any, min_eigenvalue: Any) -> str:
    """Where a stated scale comes from: a dependence model and its bounds, or the proxies."""
    if isinstance(scale, DependenceModel):
        return (
            f"Scale from {scale.describe()}, at least {min_rows} rows per user, "
            f"design eigenvalue bound {min_eigenvalue:g}."
        )
    return f"Variance proxy of one user's coefficients (scale): {np.ravel(scale).tolist()}."
