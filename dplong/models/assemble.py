"""A fit's results from its releases: the parameters, their noise and bias, the private counts,
the notes and the fit's ledger, from released numbers and public facts only (post-processing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dplong.privacy.accounting import PrivacyLedger
from dplong.privacy.budget import fit_ledger
from dplong.privacy.engine import Release
from dplong.privacy.options import ReleaseOptions
from dplong.results import ModelSpec, PanelResults

__all__ = ["combined_ledger", "panel_results", "with_release_assumptions"]


def combined_ledger(releases: Sequence[Release], options: ReleaseOptions) -> PrivacyLedger:
    """The fit's ledger over its releases (:func:`~dplong.privacy.budget.fit_ledger`)."""
    model = "local" if options.local else "central"
    return fit_ledger([release.privacy for release in releases], options.delta, model)


def with_release_assumptions(
    assumptions: tuple[str, ...], releases: Sequence[Release]
) -> tuple[str, ...]:
    """A fit's assumption lines followed by its releases' own (what their tail counts could
    not see, the tail models they took), each once, in order.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from dplong.models.assemble import with_release_assumptions
    >>> releases = [SimpleNamespace(assumptions=("b", "a")), SimpleNamespace(assumptions=("b",))]
    >>> with_release_assumptions(("a",), releases)
    ('a', 'b')
    """
    return tuple(dict.fromkeys((*assumptions, *(a for r in releases for a in r.assumptions))))


def panel_results(
    releases: Sequence[Release],
    *,
    model: ModelSpec,
    formula: str,
    nobs_users: int,
    basis: tuple[str, str],
    options: ReleaseOptions,
    assumptions: tuple[str, ...],
    results_class: type[PanelResults] = PanelResults,
    ran: Sequence[Release] | None = None,
    **extra: Any,
) -> PanelResults:
    """The immutable results of a fit's releases, from released numbers and public facts only.

    ``ran`` is every release of the fit in the order it ran, when some are not parameters
    (e.g. a preliminary location) or the parameters come in another order: the ledger (the
    one the accountant was charged) and the reliability notes come from them.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.assemble import panel_results
    >>> from dplong.privacy.engine import release_means
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.results import ModelSpec
    >>> x = np.random.default_rng(0).normal(1.0, 1.0, size=(2000, 1))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> release = release_means(x, names=("x",), options=options, rng=np.random.default_rng(1))
    >>> res = panel_results([release], model=ModelSpec("Mean", "mean of x", 2000, ("x",)),
    ...                     formula="mean of x", nobs_users=2000,
    ...                     basis=("Theorem 4.2", "Theorem 6.4"), options=options,
    ...                     assumptions=())
    >>> res.params.index.tolist(), res.basis
    (['x'], 'Theorem 4.2')
    """
    releases = [_unseen_withheld(r) for r in releases]
    unseen = {
        name: "unseen"
        for r in releases
        if r.unseen is not None
        for name, hidden in zip(r.names, r.unseen, strict=True)
        if hidden
    }
    extra["withheld_why"] = {**unseen, **extra.get("withheld_why", {})}
    names = [name for r in releases for name in r.names]
    index = pd.Index(names)

    def series(field: str, label: str) -> pd.Series:
        values = np.concatenate(
            [np.broadcast_to(getattr(r, field), (len(r.names),)) for r in releases]
        )
        column: pd.Series = pd.Series(values, index=index, name=label)
        return column

    everything = releases if ran is None else ran
    laws = {r.noise_kind for r in releases}
    users = _user_counts(releases)
    return results_class(
        model=model,
        formula=formula,
        params=series("estimate", "params"),
        noise_scale=series("noise_scale", "noise scale"),
        noise_sd=series("noise_sd", "noise sd"),
        noise_law=laws.pop() if len(laws) == 1 else "laplace",
        sampling_sd=series("sampling_sd", "sampling sd"),
        bias=series("bias", "bias"),
        projection_interval=pd.DataFrame(
            np.concatenate([r.interval for r in releases]), index=index, columns=["lower", "upper"]
        ),
        failed=pd.Series(
            np.concatenate([r.failed_columns for r in releases]), index=index, name="failed"
        ),
        privacy=combined_ledger(everything, options),
        nobs_users=nobs_users,
        users=users,
        # the widest of the blocks' counts (a local fit's blocks count groups of their own)
        users_sd=float(np.fmax.reduce([r.users_sd for r in releases])),
        variant=releases[0].variant,
        # the reported releases' own (a preliminary one's columns are not reported)
        assumptions=with_release_assumptions(assumptions, releases),
        warnings=tuple(dict.fromkeys(note for r in everything for note in r.notes)),
        gamma=options.gamma,
        bad_events=series("bad_events", "bad events"),
        basis=basis[options.local],
        downward_bias=frozenset(
            name
            for r in releases
            if r.floored is not None
            for name, floored in zip(r.names, r.floored, strict=True)
            if floored
        ),
        **extra,
    )


def _unseen_withheld(release: Release) -> Release:
    """A release's columns the engine took as 0 because its count saw no user off 0
    (``Release.unseen``), withheld: up to the count's reach of users off 0 could be missing,
    with values nothing bounds, so no interval reaches what they could add (40 of 2,000 users
    at 5, ε = 1: 0.000 ± 1e-152 for a mean of 0.1). The 0 stays in the release for the models
    that read it as "no user seen" (the within estimator's basis); the results show no number
    (post-processing of the released count)."""
    unseen = release.unseen
    if unseen is None or not unseen.any():
        return release
    return release.withhold(unseen)


def _user_counts(releases: Sequence[Release]) -> pd.Series:
    """Every release's private count(s) under :func:`_count_labels`, each label once (its
    first release's: later releases of a fit count the same users again)."""
    labels = [label for r in releases for label in _count_labels(r)]
    values = np.concatenate([np.asarray(r.users).ravel() for r in releases])
    first: dict[str, int] = {}
    for k, label in enumerate(labels):
        first.setdefault(label, k)
    rows = list(first.values())
    users: pd.Series = pd.Series(values[rows], index=pd.Index(list(first)), name="users")
    return users


def _count_labels(release: Release) -> list[str]:
    """What a release's private count(s) count: users with a statistic, per column if not one
    count, and the sum of their precision weights for a weighted release."""
    labels = ["users with a statistic"] if release.users.size == 1 else list(release.names)
    return [f"{label} (weighted)" for label in labels] if release.weighted else labels
