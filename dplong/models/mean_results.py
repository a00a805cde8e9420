"""The results of :func:`~dplong.winsorized_mean` from its releases: the estimand and scale it
states, and with ``by=`` the grouped results (per level, and with a key constant within users
one private count per level's release and the parallel ledger)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.models.assemble import panel_results
from dplong.models.mean_levels import Grouping
from dplong.privacy.accounting import PrivacyLedger
from dplong.privacy.budget import keyed_share
from dplong.privacy.engine import Release
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import TailOption, tail_assumptions
from dplong.results import GroupedResults, ModelSpec, PanelResults

__all__: list[str] = []


def _mean_results(
    releases: tuple[Release, ...],
    *,
    n: int,
    columns: tuple[str, ...],
    labels: tuple[str, ...],
    grouping: Grouping | None,
    ledger: PrivacyLedger | None,
    options: ReleaseOptions,
    proxy: NDArray[np.float64] | None,
    tail: TailOption | None,
    support: NDArray[np.float64] | None,
    ranges: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> PanelResults:
    """The results of the releases of ``labels`` (``columns`` at every level of ``grouping``)
    over ``n`` users; ``ledger`` is the parallel ledger of a key declared constant within users
    (None: not declared); ``support`` the declared lower ends of a release's columns (None:
    none), below which no mean of the users' values lies (each value below is clipped up to
    it), so the estimates and intervals stop there; ``ranges`` the stated public ranges of
    ``columns`` (None: none)."""
    scale_note = (
        "Stated public ranges of the user values (each clipped to its own): "
        f"{_ranges(columns, ranges)}; the spread is bounded by them (at most "
        "√((μ - low)(high - μ)), Bhatia-Davis)."
        if ranges is not None
        else "Scale estimated privately (the spread of the user values)."
        if proxy is None
        else f"Stated variance proxy of one user's value: {proxy.tolist()}."
    )
    results = panel_results(
        releases,
        model=ModelSpec("Mean", "mean of " + ", ".join(columns), n, columns),
        formula="mean of " + ", ".join(labels if grouping is None else columns),
        nobs_users=n,
        basis=("Theorem 4.2 via Corollary 5.4", "Theorem 6.4 via Corollary 6.8"),
        options=options,
        assumptions=(
            _estimand(grouping, keyed=ledger is not None),
            scale_note,
            *tail_assumptions(tail, "x_u", "the user values"),
            *_support_assumptions(columns, support),
        ),
        # a release's columns repeat at every level (keyed: one release per level)
        support_lower=_per_label(labels, support if ranges is None else ranges[0]),
        support_upper=_per_label(labels, None if ranges is None else ranges[1]),
    )
    if grouping is None:
        return results
    name, _, declared = grouping
    kept = {f.name: getattr(results, f.name) for f in dataclasses.fields(results)}
    kept["formula"] = f"mean of {', '.join(columns)} by {name}"
    if ledger is not None:  # one count per level's release, whatever its number of columns
        counts = [np.broadcast_to(r.users, (len(r.names),)) for r in releases]
        kept["users"] = pd.Series(np.concatenate(counts), index=list(labels), name="users")
        kept["privacy"] = ledger
    return GroupedResults(**kept, by=name, levels=declared, columns=columns)


def _support_assumptions(
    columns: tuple[str, ...], support: NDArray[np.float64] | None
) -> tuple[str, ...]:
    """The assumption line of a declared support (``lower=``, one end per column: the first
    ``len(columns)`` of a release's, which repeat at every level).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.mean_results import _support_assumptions
    >>> (line,) = _support_assumptions(("spend", "visits"), np.array([0.0, 1.0]))
    >>> line[:51]
    'Declared support (lower=): spend >= 0, visits >= 1;'
    """
    if support is None:
        return ()
    ends = ", ".join(f"{c} >= {v:g}" for c, v in zip(columns, support[: len(columns)], strict=True))
    return (
        f"Declared support (lower=): {ends}; a user value below is clipped up to it, and the "
        "estimates and intervals stop there.",
    )


def _estimand(grouping: Grouping | None, *, keyed: bool) -> str:
    """What the release estimates: the mean of the users' averages, overall or per level."""
    if grouping is None:
        return (
            "Estimand: the mean of the users' own averages (Def 5.1); intervals include the "
            "clipping bias bound."
        )
    name, _, declared = grouping
    if keyed:
        budget = (
            "each user at one level (by_constant), each level released with "
            f"{'half' if keyed_share(len(declared)) < 1 else 'all'} of the budget "
            "(parallel composition). "
        )
    elif len(declared) >= 3:  # from three levels on, a key fixed per user gives each more
        budget = (
            "the levels share the budget (each user at one level? by_constant=True gives each "
            "level half of it). "
        )
    else:
        budget = "the levels share the budget. "
    return (
        f"Estimand: at each declared level of {name} ({len(declared)}), the mean over the "
        "users with rows there of their own averages there (Def 5.1); "
        + budget
        + "Intervals include the clipping bias bound."
    )


def _ranges(
    columns: tuple[str, ...], ranges: tuple[NDArray[np.float64], NDArray[np.float64]]
) -> str:
    """``x in [0, 1], y in [-2, 6]``: each column's stated range (the first level's, which
    every level repeats)."""
    return ", ".join(
        f"{c} in [{low:g}, {high:g}]" for c, low, high in zip(columns, *ranges, strict=False)
    )


def _per_label(labels: tuple[str, ...], ends: NDArray[np.float64] | None) -> dict[str, float]:
    """Each label's support end from the columns' ``ends``, which repeat at every level."""
    if ends is None:
        return {}
    return dict(zip(labels, np.resize(ends, len(labels)).tolist(), strict=True))
