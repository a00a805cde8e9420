"""The results of a :class:`~dplong.RandomEffectsLocation` fit: which releases are its
parameters, and Group Var (and a weighted μ) withheld where the location they are centred on
was withheld."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dplong.dependence import DependenceModel
from dplong.models.assemble import panel_results
from dplong.models.location_components import COMPONENTS
from dplong.models.option_checks import ScaleLike
from dplong.privacy.engine import Release
from dplong.results import PanelResults

__all__: list[str] = []


def _location_results(
    releases: Sequence[Release],
    *,
    preliminary: bool,
    centred: bool = False,
    floor_rows: int | None = None,
    **options: Any,
) -> PanelResults:
    """Results of a location fit: μ and the components are the parameters (a precision-weighted
    fit's preliminary location counts in the ledger only). Group Var is centred on the first
    location; where that was withheld, on its released centre, whose error nobody knows, so
    Group Var is withheld too (post-processing of a public fact), and so is a weighted μ
    ``centred`` on it. Where the preliminary found most users' means at 0 and no others
    (``unseen``), the weighted μ of the same means is withheld too."""
    ran = list(releases)
    if len(ran) > 1 and not np.isfinite(ran[0].estimate[0]):
        ran[1] = _uncentred(ran[1], _UNCENTRED_NOTE, keep=True)
        if centred:  # its infinite centre error overflowed: this note says why
            ran[2] = _uncentred(ran[2], _UNCENTRED_MU_NOTE, keep=False)
    elif len(ran) > 1 and floor_rows is not None:
        ran[1] = _group_var_sampling_floor(ran[1], floor_rows, options["nobs_users"])
    if centred and _tail_counted(ran[2]):
        # the weighted μ counted its own tail about the preliminary centre, and its bias bound
        # holds for what its clip cuts there: the preliminary's skew says nothing more
        ran[0] = _without(ran[0], ran[0].skew_notes)
    if preliminary and len(ran) > 2 and (_tail_counted(ran[2]) or ran[2].unchecked_notes):
        # the weighted μ is the location: its own tail count, or its own warning that none
        # checked it, says what the preliminary's unchecked tail would
        ran[0] = _without(ran[0], ran[0].unchecked_notes)
    if preliminary and len(ran) > 2 and ran[0].unseen is not None and ran[0].unseen.any():
        # the preliminary found most users' means at 0 and its count saw no others: the weighted
        # mean of the same means is no better off, and its weighted count cannot tell
        ran[2] = dataclasses.replace(
            _uncentred(ran[2], _UNSEEN_MU_NOTE, keep=False), unseen=np.ones(1, dtype=bool)
        )
    if preliminary and len(ran) > 2 and not np.isfinite(ran[1].estimate).all():
        # the weights need both components (location_weights._precision_weights): μ is the
        # equal-weight mean, and its assumption says so (post-processing of released facts)
        options["assumptions"] = (_EQUAL_WEIGHTS_NOTE, *options["assumptions"][1:])
    return panel_results(
        [ran[2], ran[1]] if preliminary else ran,
        ran=ran,
        support_lower=dict.fromkeys(COMPONENTS, 0.0),  # variances: their intervals stop at 0
        **options,
    )


def _without(release: Release, notes: tuple[str, ...]) -> Release:
    """``release`` without the given ``notes`` (post-processing)."""
    return dataclasses.replace(release, notes=tuple(n for n in release.notes if n not in notes))


def _tail_counted(release: Release) -> bool:
    """Whether ``release`` counted its users beyond a tail rung (its ledger: a public fact)."""
    return any(entry.stage == "tail" for entry in release.privacy.entries)


def _group_var_sampling_floor(release: Release, rows: int, n: int) -> Release:
    """The components' release with Group Var's sampling sd at least the normal-effects one,
    ``√(2 / n) (Group Var + Scale / T)`` from the released components and a public lower
    bound ``T`` on the rows (post-processing: released numbers and public facts).

    Where the scales are estimated, the released sampling sd is read from the clipped
    statistics, whose χ²-like right tail the interval cut: it understates the sd of a
    variance estimate, which normal effects set at the bound above and heavier-tailed
    effects raise (docs/design/location.md)."""
    group_var, scale = np.maximum(release.estimate, 0.0)
    floor = math.sqrt(2.0 / n) * (group_var + scale / rows)
    if not release.sampling_sd[0] < floor:  # NaN (withheld) or already above: as released
        return release
    sampling = release.sampling_sd.copy()
    sampling[0] = floor
    return dataclasses.replace(release, sampling_sd=sampling)


def _uncentred(release: Release, note: str, *, keep: bool) -> Release:
    """``release`` with its first column withheld and ``note``, after its own notes where
    ``keep``, else in their place."""
    gone = np.arange(release.estimate.size) == 0
    return dataclasses.replace(
        release.withhold(gone),
        failed=release.failed_columns | gone,
        notes=(*release.notes, note) if keep else (note,),
    )


_UNCENTRED_NOTE = (
    "No estimate (NaN) for ['Group Var']: it is centred on the first location released, which "
    "was withheld (its note says why), so its bias cannot be bounded. Raise epsilon or state "
    "the scale."
)
_UNCENTRED_MU_NOTE = (
    "No estimate (NaN) for ['Intercept']: the precision-weighted location is centred on the "
    "preliminary equal-weight one, which was withheld (its note says why). Raise epsilon or use "
    'weights="equal".'
)

_UNSEEN_MU_NOTE = (
    "No estimate (NaN) for ['Intercept']: the preliminary equal-weight location found most "
    "users' mean exactly 0 and its count saw no others (its note says why that withholds it), "
    "and the precision-weighted mean of the same user means is no better off (a weighted count "
    "is no count of users, so its own release cannot tell). Raise epsilon or give public bounds."
)

#: What the components average, and what makes them the random-intercept model's variances:
#: with serially correlated errors (AR(1) 0.7 at 2,000 users: Scale 2.3 for σ² = 4, Group Var
#: 2.7 for 1, as MixedLM's; an audit, 2026-12-02) s²_u is small and ȳ_u's variance large.
_COMPONENTS_NOTE = (
    "means of (ȳ_u - μ̂)² - s²_u/T_u and s²_u over users with 2+ rows (errors i.i.d. in a user)"
)
_EQUAL_WEIGHTS_NOTE = (
    "Location: the mean of the user means (equal weights: a component was withheld). Group "
    f"Var, Scale: {_COMPONENTS_NOTE}."
)


def _assumptions(
    scale: ScaleLike,
    *,
    estimated: bool,
    residual_scale: float | None,
    max_rows: int | None,
    re_groups: str | None,
) -> tuple[str, ...]:
    """The fit's assumptions, from public facts: what μ and the components average (with
    precision weights capped at ``max_rows``, or equal weights where None), the stated or
    estimated scales, and the declared grouping of the random effects."""
    return (
        (
            f"Location: GLS mean of the user means, weights 1/(Group Var + Scale/min(T_u, "
            f"{max_rows})), centred at a preliminary equal-weight mean, as are Group Var and "
            f"Scale: {_COMPONENTS_NOTE}."
            if max_rows is not None
            else "Location: the mean of the user means over the users with a row. Group Var and "
            f"Scale: {_COMPONENTS_NOTE}."
        ),
        (
            "Scales estimated privately (the spread of each per-user statistic)."
            if estimated
            else f"Scale: {scale.describe() if isinstance(scale, DependenceModel) else scale}."
        )
        + (f" Residual proxy {residual_scale:g}." if residual_scale is not None else ""),
    ) + ((f"Users share random effects within {re_groups!r}.",) if re_groups else ())
