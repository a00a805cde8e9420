"""The checkpoint every fit reaches before its first noise draw, and what it hands the planner.

A fit states its plan (:class:`FitPlan`, one :class:`PlannedBlock` per release) at its
:func:`checkpoint`: in planning mode (:func:`planning`) it stops there with :class:`Planned`;
in the first run of an advised fit (:func:`~dplong.planning.advised`) a plan with a note a
larger ε removes stops it with :class:`_Restart`; otherwise the fit goes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.budget import ReleasePlan
from dplong.privacy.budget.fit import NOISE_BEGUN
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import OFFERS, AssumedTail, Offer, TailOption
from dplong.privacy.tails import (
    Unchecked,
    affords_count,
    coarse_count,
    stated_remedy,
    unchecked_warnings,
)

Mode = Literal["decide"]
_MODE: ContextVar[Mode | None] = ContextVar("dplong_planning", default=None)


@dataclass(frozen=True)
class PlannedBlock:
    """One release of a fit as planned: its public labels, share of the budget and the public
    facts its noise depends on (whether the scale is stated, public bounds, the tail model or
    the kind it assumes, whether its columns share the budget in their own units), and its
    plan (None: the paper's pipeline or the local model, whose stages are planned inside the
    release, or a release that is not the engine's). ``noise_sd``: where public facts alone
    fix the noise of a release that is not the engine's (an ePTR release given its test
    passed), its sd per column, in the columns' units. ``provisional``: a later release
    supersedes its tail's warnings, and ``offers`` the options its warnings name
    (:class:`~dplong.models.blocks.Block`).

    Examples
    --------
    >>> from dplong.planning import PlannedBlock
    >>> from dplong.privacy.budget import ReleasePlan
    >>> plan = ReleasePlan.make(n=500, d=2, epsilon=2.0, delta=4e-6, stated_scale=False)
    >>> block = PlannedBlock(("Intercept", "x"), 1.0, False, plan)
    >>> block.plan.midpoint > 0, block.bounds is None
    (True, True)
    """

    names: tuple[str, ...]
    share: float
    stated_scale: bool
    plan: ReleasePlan | None
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    tail: TailOption | None = None
    relative: bool = False
    notes: tuple[str, ...] = ()
    noise_sd: NDArray[np.float64] | None = None
    provisional: bool = False
    offers: frozenset[Offer] = OFFERS


@dataclass(frozen=True)
class FitPlan:
    """What a fit decided before its first noise draw: n, its validated options and its blocks.

    A model registers its plan by reaching :func:`checkpoint` with one: every model that
    releases through :func:`~dplong.models.release_blocks.run_blocks` does so there; a model
    with its own releases (e.g. one vector release of sufficient statistics) calls
    ``checkpoint(FitPlan(...))`` itself once every refusal has been decided, with one
    :class:`PlannedBlock` per release — its ``plan`` None when its noise is not the engine's
    (the planner then decides refusals and warnings for it, and forecasts no noise).

    Examples
    --------
    >>> import dplong
    >>> from dplong.planning import FitPlan, planning
    >>> from dplong.planning import Planned
    >>> model = dplong.LongitudinalOLS.from_formula(
    ...     "lwage ~ exper", dplong.datasets.load_wage_panel(), groups="nr")
    >>> with planning():
    ...     try:
    ...         model.fit(epsilon=4.0)
    ...     except Planned as stop:
    ...         fit_plan = stop.fit_plan
    >>> fit_plan.n, [block.names for block in fit_plan.blocks]
    (545, [('Intercept', 'exper')])
    """

    n: int
    options: ReleaseOptions
    blocks: tuple[PlannedBlock, ...]

    @property
    def notes(self) -> tuple[str, ...]:
        """The plans' public warnings (what the fit warns of before any noise, and the warning
        of a release no tail count can check: :func:`unchecked_tail`), each once."""
        return tuple(
            dict.fromkeys(
                (
                    *self.budget_notes,
                    *(
                        n
                        for b in self.blocks
                        for n in (*b.notes, *unchecked_tail(b, options=self.options))
                    ),
                )
            )
        )

    @property
    def forecast(self) -> bool:
        """Whether public facts fix some release's noise (the engine's, or a release's stated
        ``noise_sd``): else only its reference panel measures it
        (:mod:`~dplong.planning.reference`)."""
        return any(b.plan is not None or b.noise_sd is not None for b in self.blocks)

    @property
    def budget_notes(self) -> tuple[str, ...]:
        """The plans' own warnings, each once: those a larger ε can remove (a block's stated
        ``notes`` hold whatever the budget)."""
        return tuple(
            dict.fromkeys(note for b in self.blocks if b.plan is not None for note in b.plan.notes)
        )


def unchecked_tail(
    block: PlannedBlock, *, options: ReleaseOptions | None = None
) -> tuple[str, ...]:
    """The warning every release of ``block`` carries whose plan affords no tail count where
    the default engine would measure its tail (scale estimated; no bounds, tail or kind
    stated, an assumed kind's note being the block's own; not ``provisional``), or only a
    count run for a declared support, which sees heavy tails alone
    (:func:`~dplong.privacy.tails.coarse_count`; an assumed kind's too), or whose pipeline
    runs none with its scale estimated (the paper's, ``variant="theory"``, in the fit's
    ``options``): that no count checked its columns' tails
    (:func:`~dplong.privacy.tails.unchecked_warnings`, after the noise; a skewed column's
    warning or its withholding replaces it there). The local model's release counts its tail
    where it clips about a located centre, and what it says depends on that count
    (:mod:`dplong.privacy.local`): none forecast. Public facts only.

    Examples
    --------
    >>> from dplong.planning.checkpoints import PlannedBlock, unchecked_tail
    >>> from dplong.privacy.budget import ReleasePlan
    >>> def block(epsilon):
    ...     plan = ReleasePlan.make(n=545, d=1, epsilon=epsilon, delta=4e-6, stated_scale=False)
    ...     return PlannedBlock(("lwage",), 1.0, False, plan)
    >>> unchecked_tail(block(1.0))[0][:43], unchecked_tail(block(4.0))
    ("['lwage']: no count checked its tail (this ", ())
    """
    plan, d = block.plan, len(block.names)
    every, none = np.ones(d, dtype=bool), np.zeros(d, dtype=bool)
    if options is not None and options.local:
        return ()
    if options is not None and options.variant == "theory":  # no count at any ε
        return (
            () if block.stated_scale else unchecked_warnings(block.names, every, none, why="paper")
        )
    assumed = block.tail if isinstance(block.tail, AssumedTail) else None
    stated = block.stated_scale or block.bounds is not None
    if plan is None or stated or block.provisional or (block.tail and not assumed):
        return ()
    why: Unchecked = "blind" if affords_count(plan) else "unaffordable"
    if why == "blind":  # of a count that runs, only one run for a support is forecast blind
        if not coarse_count(plan):
            return ()
        why = "coarse"
    elif assumed is not None:  # the block's own note (tails.unchecked_notes)
        return ()
    remedy = stated_remedy(block.offers)
    model = "near-normal" if assumed is None else assumed.described
    return unchecked_warnings(block.names, every, none, why=why, remedy=remedy, model=model)


class Planned(Exception):
    """Raised by :func:`checkpoint` in planning mode to carry a fit's :class:`FitPlan` out of it
    before any noise (not a :class:`~dplong.exceptions.DplongError`: nothing went wrong)."""

    def __init__(self, fit_plan: FitPlan) -> None:
        super().__init__("planned")
        self.fit_plan = fit_plan


@contextlib.contextmanager
def planning() -> Iterator[None]:
    """Run fits in planning mode: each stops at its :func:`checkpoint` with :class:`Planned`.

    Examples
    --------
    >>> from dplong.planning import checkpoint, planning, Planned
    >>> with planning():
    ...     try:
    ...         checkpoint(None)
    ...     except Planned:
    ...         print("stopped before any noise")
    stopped before any noise
    """
    token = _MODE.set("decide")
    try:
        yield
    finally:
        _MODE.reset(token)


def checkpoint(fit_plan: Any) -> None:
    """The point of a fit after which nothing is refused and before its first noise draw: in
    planning mode, stop and hand back ``fit_plan``; otherwise nothing happens.

    Examples
    --------
    >>> from dplong.planning import checkpoint
    >>> checkpoint(None)  # not planning: the fit goes on
    """
    if _MODE.get() is not None:
        raise Planned(fit_plan)
    watch = _WATCH.get()
    if watch is not None and watch.armed:  # the first checkpoint of an advised fit
        watch.armed = False
        if isinstance(fit_plan, FitPlan) and fit_plan.budget_notes:
            raise _Restart(fit_plan)
    begun = NOISE_BEGUN.get()
    if begun is not None:  # a failure from here on is charged (guarded)
        begun[0] = True


@dataclass
class _Watch:
    """An advised fit's first run (:func:`advised`): armed until its first checkpoint."""

    armed: bool = True


#: Set while an advised fit runs without knowing its notes' remedy (:func:`advised`).
_WATCH: ContextVar[_Watch | None] = ContextVar("dplong_advised_watch", default=None)


class _Restart(Exception):
    """Raised by the first :func:`checkpoint` of an advised fit whose plans carry a note a larger
    ε can remove: the fit stops before any noise, so that it can run again with the note's
    remedy (not a :class:`~dplong.exceptions.DplongError`: nothing went wrong)."""

    def __init__(self, fit_plan: FitPlan) -> None:
        super().__init__("restart")
        self.fit_plan = fit_plan
