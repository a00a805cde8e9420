"""The results of a :class:`~dplong.RandomEffectsLocation` fit: which releases are its
parameters, and Group Var withheld where the location it is centred on was withheld."""

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
    floor_rows: int | None = None,
    **options: Any,
) -> PanelResults:
    """Results of a location fit: μ and the components are the parameters (a precision-weighted
    fit's preliminary location counts in the ledger only). Group Var is centred on the first
    location; where that was withheld, on its released centre, whose error nobody knows, so
    Group Var is withheld too (post-processing of a public fact)."""
    ran = list(releases)
    if len(ran) > 1 and not np.isfinite(ran[0].estimate[0]):
        ran[1] = _without_group_var(ran[1])
    elif len(ran) > 1 and floor_rows is not None:
        ran[1] = _group_var_sampling_floor(ran[1], floor_rows, options["nobs_users"])
    return panel_results(
        [ran[2], ran[1]] if preliminary else ran,
        ran=ran,
        support_lower=dict.fromkeys(COMPONENTS, 0.0),  # variances: their intervals stop at 0
        **options,
    )


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


def _without_group_var(release: Release) -> Release:
    """The components' release with Group Var (its first column) withheld, and a note."""
    gone = np.arange(release.estimate.size) == 0
    return dataclasses.replace(
        release.withhold(gone),
        failed=release.failed | gone,
        notes=(*release.notes, _UNCENTRED_NOTE),
    )


_UNCENTRED_NOTE = (
    "No estimate (NaN) for ['Group Var']: it is centred on the first location released, which "
    "was withheld (its note says why), so its bias cannot be bounded. Raise epsilon or state "
    "the scale."
)


def _assumptions(
    scale: ScaleLike,
    *,
    estimated: bool,
    residual_scale: float | None,
    preliminary: bool,
    max_rows: int,
    re_groups: str | None,
) -> tuple[str, ...]:
    """The fit's assumptions, from public facts: what μ and the components average, the
    stated or estimated scales, and the declared grouping of the random effects."""
    return (
        (
            "Location: the GLS mean of the user means over the users with a row, weights "
            f"1/(Group Var + Scale/min(T_u, {max_rows})) from the released components. "
            "Components"
            if preliminary
            else "Location: the mean of the user means over the users with a row. Components"
        )
        + ": "
        "means of (ȳ_u - μ̂)² - s²_u/T_u (Group Var) and s²_u (Scale) over the users with "
        "two rows or more"
        + (", centred at a preliminary equal-weight location." if preliminary else "."),
        (
            "Scales estimated privately (the spread of each per-user statistic)."
            if estimated
            else f"Scale: {scale.describe() if isinstance(scale, DependenceModel) else scale}."
        )
        + (f" Residual proxy {residual_scale:g}." if residual_scale is not None else ""),
    ) + ((f"Users share random effects within {re_groups!r}.",) if re_groups else ())
