"""What a model declares to the template (:mod:`dplong.models.base`): its blocks of per-user
statistics and the validated options of its fit.

A :class:`Block` is a release declared up front (public labels, budget and facts the plan
needs); its ``build`` returns the block's private :class:`Statistics` once the earlier blocks
are released. :class:`FitRequest` holds the options every fit shares, checked once.
:func:`~dplong.models.release_blocks.run_blocks` plans and releases them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import Accountant
from dplong.privacy.engine import Release
from dplong.privacy.options import Focus, ReleaseOptions
from dplong.privacy.radius import OFFERS, STATED_SCALE, Offer, TailModel, TailOption
from dplong.privacy.rules import UserWeights

__all__ = ["Block", "FitRequest", "Statistics", "block_bound"]


@dataclass(frozen=True)
class Statistics:
    """One block's per-user statistics (private: they never leave the fit).

    ``matrix`` is n x d (NaN: the user has no statistic); ``scale`` the stated variance proxy
    per column (None: estimated privately); ``sampling_sd`` overrides the plug-in standard
    deviation of the non-private estimator when a stated model gives it (e.g. users that
    share random effects); ``nonnegative`` clamps released estimates at 0 (variances:
    post-processing); ``user_weights`` asks for precision-weighted means (the block must be
    declared ``weighted``; :class:`~dplong.privacy.rules.UserWeights`); ``centre_bias`` is a
    bound, from released numbers, on how far an earlier release the statistics are centred on
    shifts their mean (added to the release's bias bound); ``tail`` the tail model when it is
    decided from earlier releases (replaces the block's); ``lower`` the public lower ends of the
    columns' support, known from how they are built (0 for a square, -inf for none), so that
    no interval is spent below every user (:func:`~dplong.privacy.engine.release_means`);
    ``centre`` a public centre per column and a bound on its distance to the mean, from
    released numbers (the block must be declared ``centred``).
    """

    matrix: NDArray[np.float64]
    scale: NDArray[np.float64] | None = None
    sampling_sd: NDArray[np.float64] | None = None
    nonnegative: bool = False
    user_weights: UserWeights | None = None
    centre_bias: NDArray[np.float64] | None = None
    tail: TailModel | None = None
    lower: NDArray[np.float64] | None = None
    centre: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None


@dataclass(frozen=True)
class Block:
    """A release a model declares up front: public labels and budget, private statistics.

    ``share`` is the block's share of the fit's (ε, δ); ``stated_scale`` and ``complete_rows``
    are public facts the plan needs (whether the scale is stated; whether a user's statistics
    are all there or all missing); ``bounds`` public (lower, upper) per column that hold the
    statistics under the model's stated assumptions; ``weighted`` that its statistics come
    with precision weights (the plan then budgets a weighted count); ``count_from`` the index
    of an earlier block over the *same* users with the same weights, whose private count this
    one divides by instead of counting again; ``moment=False`` when nothing reads the
    release's sampling sd (no second moment is then bought for it); ``relative`` when its
    columns' errors count relative to their own scales in the final budget's shares (columns
    in different units: :func:`~dplong.privacy.engine.release_means`); ``centred`` when its
    statistics come with a public centre (``Statistics.centre``: no midpoint or refinement
    stage is planned); ``partial_users`` when each column is by design a statistic of some
    users only (the levels of a grouping: see :class:`~dplong.privacy.rules.Rules`); ``tail``
    the tail model, or an :class:`~dplong.privacy.radius.AssumedTail` the release checks
    where its budget affords a tail count; ``notes`` public
    warnings the release carries whatever the data (an assumption nothing at
    its budget can check): said before any noise, planned, and joined to its release's notes;
    ``provisional`` when a later release supersedes its tail's warnings (a preliminary
    location, whose weighted location counts its own tail or says that none did);
    ``supported`` when its statistics have a declared support's lower end (``lower=``): its
    tail count runs at a smaller n ε (:attr:`~dplong.privacy.budget.ReleasePlan.supported`);
    ``offers`` the fit options through which the model's analyst vouches for the tail, which
    its warnings name (:attr:`~dplong.privacy.rules.Rules.offers`).
    ``build`` computes the statistics from the releases of the earlier blocks.
    """

    names: tuple[str, ...]
    share: float
    build: Callable[[tuple[Release, ...]], Statistics]
    stated_scale: bool
    complete_rows: bool = True
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    weighted: bool = False
    tail: TailOption | None = None
    count_from: int | None = None
    moment: bool = True
    relative: bool = False
    centred: bool = False
    partial_users: bool = False
    notes: tuple[str, ...] = ()
    provisional: bool = False
    supported: bool = False
    offers: frozenset[Offer] = OFFERS

    @property
    def remedies(self) -> frozenset[Offer]:
        """The ``offers`` its warnings may name: those the fit has not taken up (a stated
        scale is not asked for again)."""
        return self.offers - STATED_SCALE if self.stated_scale else self.offers


@dataclass(frozen=True)
class FitRequest:
    """The validated common options of a fit (:meth:`~dplong.models.base.PanelModel._fit`)."""

    options: ReleaseOptions
    rng: np.random.Generator
    focus: Focus
    accountant: Accountant | None


def block_bound(block: Block, options: ReleaseOptions) -> NDArray[np.float64]:
    """The local model's public bound B per column of a block: from the block's own public
    bounds if it has them, else the fit's ``bound``."""
    assert options.bound is not None
    if block.bounds is not None:
        lower, upper = block.bounds
        return np.maximum(np.abs(lower), np.abs(upper))
    bound = np.empty(len(block.names))
    bound[:] = options.bound
    return bound
