"""The results of a within fit from its releases (:mod:`dplong.models.within`): β̂, its
standard deviations, the propagated bias bound, the withheld coefficients and the notes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.models.assemble import combined_ledger, with_release_assumptions
from dplong.models.within.basis import PANEL_OLS, _Basis
from dplong.models.within.noise import _noise_law, _walk
from dplong.privacy.engine import Release
from dplong.privacy.options import ReleaseOptions
from dplong.results import ModelSpec, PanelResults

__all__ = ["within_results"]


def within_results(
    releases: Sequence[Release],
    *,
    model: ModelSpec,
    formula: str,
    nobs_users: int,
    basis: tuple[str, str],
    options: ReleaseOptions,
    assumptions: tuple[str, ...],
    names: tuple[str, ...],
    absorbed: tuple[str, ...] = (),
) -> PanelResults:
    """The results of a within fit from its releases (:mod:`dplong.models.within`): β̂, its
    sampling and noise standard deviations, the propagated bias bound, notes. The regressors
    ``absorbed`` (declared constant within users: public) were not released and have no
    estimate.

    Examples
    --------
    What ``LongitudinalOLS.fit(estimator="within")`` returns through it, on the wage panel:

    >>> import warnings
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + hours", wages, groups="nr")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # a balanced panel: exper's Z'Z is one value
    ...     res = model.fit(epsilon=4.0, estimator="within", random_state=1)
    >>> list(res.params.index), bool(res.privacy.epsilon <= 4.0)
    (['exper', 'hours'], True)
    >>> bool(abs(res.params["exper"] - 0.0698) < 4 * res.bse["exper"])  # non-private 0.0698
    True
    """
    reported, names = names, tuple(name for name in names if name not in absorbed)
    p = len(names)
    rows, early, influence = releases[:p], releases[p:-1], releases[-1]
    first = rows[0]
    solution = _Basis.of(tuple(rows), p)
    # Newton steps: β_{k+1} = β_k + ψ̂(β_k) (an early step where used), β̂ = β_K + ψ̂(β_K)
    walk = _walk(solution, early, options.gamma)
    stepped = solution.pilot + sum(walk.moves, np.zeros(p))
    beta = stepped + np.where(solution.withheld, 0.0, influence.estimate)
    # the design's bias acts through what the last step corrects, β_K's error (to first order
    # the earlier steps' noise and bias are corrected with it)
    step = np.nan_to_num(stepped - beta)
    sampling_sd = influence.sampling_sd
    noise_sd, shift = _noise_law(solution, walk, influence)
    bias = (
        np.nan_to_num(influence.bias)
        + solution.spread @ (solution.bias @ np.abs(step))
        + np.abs(shift)
    )
    unknown = _unknown(solution.withheld, beta, noise_sd, sampling_sd)
    withheld = solution.withheld | unknown
    gaussian = {r.noise_kind for r in releases} == {"gaussian"}
    index = pd.Index(reported)
    # the declared between-user regressors: no estimate, in the formula's places
    placed = index.get_indexer(pd.Index(names))

    def series(values: NDArray[np.float64], label: str) -> pd.Series:
        out = np.full(len(reported), np.nan)
        out[placed] = np.where(withheld, np.nan, values)
        named: pd.Series = pd.Series(out, index=index, name=label)
        return named

    bad_events = sum(float(np.sum(r.bad_events)) for r in releases)
    notes = _notes(rows, early, influence, solution, unknown, names, walk.used)
    if absorbed:  # a public declaration, not a warning
        assumptions += (
            f"Declared constant within users (between=), absorbed by the user effects, no "
            f"estimate: {', '.join(absorbed)} (PooledOLS or BetweenOLS estimate them).",
        )
    users = pd.Series(first.users, index=["users with a statistic (weighted)"], name="users")
    return PanelResults(
        model=model,
        formula=formula,
        params=series(beta, "params"),
        noise_scale=series(noise_sd if gaussian else noise_sd / math.sqrt(2.0), "noise scale"),
        noise_sd=series(noise_sd, "noise sd"),
        noise_law="gaussian" if gaussian else "laplace",
        sampling_sd=series(sampling_sd, "sampling sd"),
        bias=series(bias, "bias"),
        projection_interval=pd.DataFrame(np.nan, index=index, columns=["lower", "upper"]),
        failed=pd.Series(np.isnan(series(beta, "").to_numpy()), index=index, name="failed"),
        privacy=combined_ledger(releases, options),
        nobs_users=nobs_users,
        users=users,
        users_sd=float(first.users_sd),
        variant=first.variant,
        # and the releases' own (the influence's tail counts: what they cannot see)
        assumptions=with_release_assumptions(assumptions, releases),
        warnings=notes,
        gamma=options.gamma,
        bad_events=pd.Series(min(1.0, bad_events), index=index, name="bad events"),
        basis=basis[options.local],
        withheld_why=_withheld_why(solution, unknown, names) | dict.fromkeys(absorbed, "absorbed"),
    )


def _unknown(
    withheld: NDArray[np.bool_],
    beta: NDArray[np.float64],
    noise_sd: NDArray[np.float64],
    sampling_sd: NDArray[np.float64],
) -> NDArray[np.bool_]:
    """The coefficients the basis kept whose error cannot be stated: a number without a finite
    value, noise or sampling sd would claim a precision nobody knows (a release it rests on
    was withheld or missed the data). If there is one, every coefficient the basis kept: the
    influence columns share the pilot and the released design, and one the engine withheld
    (it missed, or its clipped values spread far beyond its scale) says the design's bias
    bounds may not hold for the others either (``docs/design/within.md``)."""
    unknown = ~withheld & ~(np.isfinite(beta) & np.isfinite(noise_sd) & np.isfinite(sampling_sd))
    if unknown.any():
        unknown = ~withheld
    return unknown


def _notes(
    rows: Sequence[Release],
    early: Sequence[Release],
    influence: Release,
    solution: _Basis,
    unknown: NDArray[np.bool_],
    names: Sequence[str],
    used: Sequence[NDArray[np.bool_]],
) -> tuple[str, ...]:
    """The fit's notes, once each: the design rows' and the influence's (but what the influence
    says of a coefficient the basis withholds), the released design's, and the coefficients
    whose error cannot be stated (:func:`_unknown`). Public: functions of released numbers."""
    unsure = [names[int(j)] for j in np.flatnonzero(unknown)]
    lost = (
        [
            f"No estimate (NaN) for {unsure}: a release it rests on was withheld or missed the "
            f"data, so its error cannot be stated. Raise epsilon, use fewer regressors, or "
            f"{PANEL_OLS}."
        ]
        if unsure
        else []
    )
    # the influence values of a coefficient the basis withholds are 0 for every user by
    # construction: what the release says of those columns is no news (the design's note
    # says why they are withheld)
    # nor of an early Newton step's column the fit did not use (its noise beyond the error it
    # was to correct: :func:`~dplong.models.within.noise._walk`)
    kinds = [*(f"step{k + 1}" for k in range(len(early))), "influence"]
    columns = [f"{kind}[{name}]" for kind in kinds for name in names]
    unused = [~u | solution.withheld for u in used]  # one per early step
    idle_columns = np.concatenate([*unused, solution.withheld])
    idle = {c for c, w in zip(columns, idle_columns, strict=True) if w}

    def news(note: str) -> bool:
        listed = {c for c in columns if c in note}
        return not listed or not listed <= idle

    release_notes = [note for r in rows for note in r.notes]
    release_notes += [note for r in (*early, influence) for note in r.notes if news(note)]
    return tuple(dict.fromkeys(release_notes + list(solution.notes(names)) + lost))


def _withheld_why(
    solution: _Basis, unknown: NDArray[np.bool_], names: Sequence[str]
) -> dict[str, str]:
    """A word for why each withheld coefficient has none (the notes say more): a lost
    release, a regressor changing for too few users to see, no within variation, collinear
    within the noise, another regressor without within variation whose omission could bias
    it, or an error that cannot be stated."""
    words = np.full(len(names), "", dtype=object)
    words[unknown] = "error unknown"
    words[solution.hidden] = "collinear"
    words[solution.absent] = "no variation"
    if solution.absent.any():  # the others: leaving it out could bias them
        words[words == ""] = "omitted regressor"
    if solution.blind:
        words[:] = "unseen"
    if solution.lost:
        words[:] = "lost release"
    return {name: str(word) for name, word in zip(names, words, strict=True) if word}
