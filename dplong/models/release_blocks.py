"""A fit's blocks planned, checked and released in order (:func:`run_blocks`): every plan,
refusal and budget check before the first noise draw, then each block through the release
engine (:func:`~dplong.privacy.engine.release_means`, the local model's
:func:`~dplong.privacy.local.release_local`, or the paper's pipeline,
:mod:`~dplong.models.paper_release`). :func:`sound_plan` asks the same plan of public facts
only, for models that choose their budget split or defaults by it.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong._validation import warn
from dplong.exceptions import DplongError, ParameterError
from dplong.inference import half_widths
from dplong.models.assemble import combined_ledger
from dplong.models.blocks import Block, FitRequest, Statistics, block_bound
from dplong.models.captured_warnings import with_warnings
from dplong.models.paper_release import PAPER_SCALE_SHARE, paper_mean_options, paper_release
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.accounting import Cost
from dplong.privacy.budget import (
    ReleasePlan,
    afford,
    charge,
    part,
    refuse_doomed,
    split_users,
)
from dplong.privacy.engine import Release, release_means
from dplong.privacy.local import release_local
from dplong.privacy.options import ReleaseOptions, focus_weights
from dplong.privacy.radius import AssumedTail
from dplong.privacy.rules import Rules
from dplong.privacy.tails import affords_count, unchecked_notes
from dplong.privacy.variance import check_scale
from dplong.privacy.winsorized import check_paper
from dplong.summary import plain_names

__all__ = ["counts_tail", "run_blocks", "sound_plan"]


def run_blocks(blocks: Sequence[Block], *, n: int, request: FitRequest) -> tuple[Release, ...]:
    """Release the blocks in order; every plan and budget check comes before any noise.

    Each block gets its share of the fit's (ε, δ) to size its stages; the default engine then
    calibrates a later block's final stage against everything the fit spent before it, so the
    fit's ledger totals the whole budget (and never more).
    """
    options, rng, accountant = request.options, request.rng, request.accountant
    focus = focus_weights(request.focus, blocks[0].names)  # validated first: an option
    budgets = [part(options, block.share) for block in blocks]
    plans = [_plan(block, options, n) for block, options in zip(blocks, budgets, strict=True)]
    refuse_doomed(plans, n, sum(len(block.names) for block in blocks), options.epsilon)
    # an assumed tail model that no tail count can check at this n ε says so (public facts)
    blocks = [
        dataclasses.replace(
            block,
            notes=(*block.notes, *unchecked_notes(block.names, block.tail, plan, block.remedies)),
        )
        if isinstance(block.tail, AssumedTail) and plan is not None
        else block
        for block, plan in zip(blocks, plans, strict=True)
    ]
    # every refusal is decided: a fit run to plan it (dplong.plan) stops here, before any noise
    checkpoint(
        FitPlan(
            n,
            options,
            tuple(
                PlannedBlock(
                    block.names,
                    block.share,
                    block.stated_scale,
                    plan,
                    bounds=block.bounds,
                    tail=block.tail,
                    relative=block.relative,
                    notes=block.notes,
                    provisional=block.provisional,
                    offers=block.offers,
                )
                for block, plan in zip(blocks, plans, strict=True)
            ),
        )
    )
    afford(accountant, options.epsilon, options.delta)
    warned: set[str] = set()
    for block, plan in zip(blocks, plans, strict=True):
        for note in (*(plan.notes if plan is not None else ()), *block.notes):
            if note not in warned:  # public facts: said once per fit, before any noise
                warn(plain_names(note))
                warned.add(note)
    releases: list[Release] = []
    spent: list[Cost] = []
    share = 0.0
    split = options.local and options.variant == "default"
    if split:  # local: every user answers one block's question with the whole ε
        members = split_users(rng, n, [block.share for block in blocks])
    for i, (block, block_options, plan) in enumerate(zip(blocks, budgets, plans, strict=True)):
        share += block.share
        statistics = block.build(tuple(releases))
        weights = focus if i == 0 else None
        # what a mechanism warns of (public facts, released numbers) joins the release's
        # notes, so that it reaches results.warnings, summary() and the report, not only stderr
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if split:
                local_options = dataclasses.replace(
                    block_options, epsilon=options.epsilon, bound=block_bound(block, options)
                )
                release = release_local(
                    statistics.matrix[members[i]],
                    names=block.names,
                    options=local_options,
                    rng=rng,
                    scale=statistics.scale,
                    population=n,
                )
            elif plan is not None:
                so_far = part(options, share)
                plan = plan.after(spent, so_far.epsilon, so_far.delta)
                release = release_means(
                    statistics.matrix,
                    names=block.names,
                    options=block_options,
                    rng=rng,
                    weights=weights,
                    plan=plan,
                    rules=_rules(block, statistics, releases),
                )
            else:
                release = paper_release(block, statistics, block_options, rng)
        release = with_warnings(release, caught)
        if block.notes:
            release = dataclasses.replace(release, notes=(*release.notes, *block.notes))
        spent += [entry.cost for entry in release.privacy.entries]
        if statistics.nonnegative:
            release = dataclasses.replace(release, estimate=np.maximum(release.estimate, 0.0))
        if statistics.lower is not None:
            release = _on_support(release, statistics.lower)
        if statistics.sampling_sd is not None:
            release = dataclasses.replace(release, sampling_sd=statistics.sampling_sd)
        if statistics.centre_bias is not None:
            release = dataclasses.replace(release, bias=release.bias + statistics.centre_bias)
        releases.append(release)
        # from released numbers: said once per fit, after them; a provisional block's unchecked
        # tail is a later release's to say (its results drop it: an audit found it on stderr
        # only)
        superseded = release.unchecked_notes if block.provisional else ()
        for note in release.notes:
            if note not in warned and note not in superseded:
                warn(plain_names(note))
                warned.add(note)
    ledger = combined_ledger(releases, options)
    charge(accountant, ledger, options.epsilon, options.delta)
    return tuple(releases)


def _on_support(release: Release, lower: NDArray[np.float64]) -> Release:
    """``release`` with its estimates at least their declared support's ``lower`` end (no
    mean of values at or above it lies below: post-processing that only brings an estimate
    nearer), and a note naming the columns whose 95 % interval lay wholly below the end before:
    their user values do not keep to the declaration (a value below is clipped up only as far
    as the interval reaches), and what is shown is the end and the interval above it."""
    q = half_widths(
        0.05,
        release.sampling_sd,
        release.noise_scale,
        release.noise_sd,
        release.noise_kind,
        release.bias,
    )
    with np.errstate(invalid="ignore"):
        below = release.estimate + q < lower
    notes = release.notes
    if below.any():
        named = ", ".join(
            f"'{name}' (below {end:g})"
            for name, end, off in zip(
                release.names, np.broadcast_to(lower, below.shape), below, strict=True
            )
            if off
        )
        notes = (
            *notes,
            f"{named}: the 95% interval lay wholly below the declared lower end of the support "
            "(lower=): the user values do not keep to it, and the estimate shown is that end. "
            "Check the declaration (its units, its column).",
        )
    return dataclasses.replace(release, estimate=np.maximum(release.estimate, lower), notes=notes)


def _rules(block: Block, statistics: Statistics, earlier: Sequence[Release]) -> Rules:
    """The engine's rules for a block: its public declarations and what its build found."""
    return Rules(
        scale=statistics.scale,
        complete_rows=block.complete_rows,
        bounds=block.bounds,
        user_weights=statistics.user_weights,
        tail=block.tail if statistics.tail is None else statistics.tail,
        count=None if block.count_from is None else earlier[block.count_from].count,
        lower=statistics.lower,
        relative=block.relative,
        public_centre=statistics.centre,
        partial_users=block.partial_users,
        offers=block.remedies,
    )


def _plan(block: Block, options: ReleaseOptions, n: int) -> ReleasePlan | None:
    """The block's plan (default engine) after its public checks, or None for the paper's
    pipeline (whose checks run here too); all before any noise."""
    d = len(block.names)
    if block.count_from is not None and (options.local or options.variant != "default"):
        raise ParameterError(
            'a release that reuses an earlier count needs the default engine (variant="default", '
            'privacy="central")'
        )
    if options.local and options.variant == "default":
        return None  # the local plan is per column, from public facts, inside release_local
    if options.variant == "default" and not options.local:
        plan = ReleasePlan.make(
            n=n,
            d=d,
            epsilon=options.epsilon,
            delta=options.delta,
            stated_scale=block.stated_scale,
            complete_rows=block.complete_rows,
            refine=options.refine,
            bounded=block.bounds is not None,
            share=block.share,
            weighted=block.weighted,
            count=block.count_from is None,
            moment=block.moment,
            centred=block.centred,
            supported=block.supported,
            assumed=isinstance(block.tail, AssumedTail),
        )
        plan.check()
        return plan
    if block.weighted:
        raise ParameterError(
            'precision weights need the default engine (variant="default", privacy="central")'
        )
    if not block.stated_scale:  # CoinPress runs first, with its share (paper_scale)
        check_scale(n, d, part(options, PAPER_SCALE_SHARE))
    check_paper(n, d, paper_mean_options(options, stated=block.stated_scale))
    return None


def sound_plan(
    n: int, d: int, options: ReleaseOptions, share: float, *, stated: bool, weighted: bool = False
) -> bool:
    """Whether d columns released with ``share`` of the fit's budget plan without a refusal or
    a reliability note: a public fact (n, d, the budget and the options), so models may choose
    their budget split or defaults by it before any noise.

    Examples
    --------
    >>> from dplong.models.release_blocks import sound_plan
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> sound_plan(5000, 1, options, 0.5, stated=False), sound_plan(500, 1, options, 0.1,
    ...                                                             stated=False)
    (True, False)
    """
    plan = _block_plan(n, d, options, share, stated_scale=stated, weighted=weighted)
    return plan is not None and not plan.notes


def counts_tail(n: int, d: int, options: ReleaseOptions, share: float, *, stated: bool) -> bool:
    """Whether d centred, weighted columns with an assumed tail
    (:class:`~dplong.privacy.radius.AssumedTail`, counted on each side), released with
    ``share`` of the fit's budget, afford their tail counts: a public fact (n, d, the budget
    and the options), as :func:`sound_plan`.

    Examples
    --------
    >>> from dplong.models.release_blocks import counts_tail
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(545, epsilon=16.0, delta=None, privacy="central",
    ...                                bound=None, d=2)
    >>> counts_tail(545, 2, options, 0.55, stated=False), counts_tail(545, 2, options, 0.3,
    ...                                                                stated=False)
    (True, False)
    """
    if stated or options.local or options.variant != "default":
        return False
    plan = _block_plan(
        n,
        d,
        options,
        share,
        stated_scale=False,
        share=share,
        weighted=True,
        count=False,
        centred=True,
        assumed=True,
    )
    return plan is not None and affords_count(plan, signed=True)


def _block_plan(
    n: int, d: int, options: ReleaseOptions, fraction: float, **facts: Any
) -> ReleasePlan | None:
    """The default engine's plan of d columns released with ``fraction`` of the fit's budget
    and the block's public ``facts`` (:meth:`~dplong.privacy.budget.ReleasePlan.make`), or
    None where it would be refused: public facts only, before any noise."""
    try:
        budget = part(options, fraction)
        plan = ReleasePlan.make(
            n=n,
            d=d,
            epsilon=budget.epsilon,
            delta=budget.delta,
            refine=options.refine,
            **facts,
        )
        plan.check()
    except DplongError:
        return None
    return plan
