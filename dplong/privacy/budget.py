"""The budget of a fit: how (ε, δ) is split, checked against the accountant and composed.

This is the one module that splits a budget. A fit's blocks each get a :func:`part`; a block
released by the default engine (:mod:`dplong.privacy.engine`) gets a :class:`ReleasePlan` that
declares, from public facts only (n, d, the budget, the options, whether the scale is stated),
the ε of each of its stages — the **count** of users with a statistic, the **midpoint** and
**scale** medians (and the counts at a zero or shared value, :meth:`ReleasePlan.zero_split`,
:meth:`ReleasePlan.second_spread`), the **refinement** and the final **mean** with its second
moment. The paper's pipeline and CoinPress have their own stage splits here
(:func:`paper_budget`, :func:`plan_budget`), the local model its user groups
(:func:`split_users`). :meth:`ReleasePlan.check` and :func:`afford` (the accountant's check)
run every refusal before the first noise draw; :func:`charge` checks that a release's calls
compose within what it was given and records them; :func:`fit_ledger` composes a fit's.

The final stage's budget is *calibrated* after the earlier stages ran: the largest for which
the composition (:func:`~dplong.privacy.accounting.compose`) of every call stays within the
request, shared over the columns by their released radii (post-processing; PLAN, Aumüller et
al. 2024, App. C: ``ε_j ∝ (f_j w_j²)^{1/3}`` for Laplace, ``ρ_j ∝ √f_j w_j`` for the Gaussian,
each weight regularised as ``a_j + mean(a)``, so every column keeps at least half its equal
share). So the ledger always totals at most the request.

**Stage sizes.** A private median over the cells of the log grid needs ``ε N`` well above
``4 log(#cells) ≈ 40`` to land at the median (:mod:`dplong.privacy.quantile`); the midpoint and
scale stages get :data:`MEDIAN_USERS` ``/ n`` each, fewer users' worth where ``n ε`` is small
and the scale estimated (:func:`_median_users`; within :data:`MIN_STAGE_SHARE` and
:data:`MAX_MIDPOINT_SHARE` of a column's even share), the count :data:`COUNT_USERS` ``/ n``, the
midpoint's and the scale's checks :data:`SIDE_USERS` and :data:`INSIDE_USERS` ``/ n`` where
they run (:func:`_side_and_refine`, :func:`_inside_epsilon`; a second median's check, for the
users off a shared value, :meth:`ReleasePlan.second_check`), the refinement the share of
:data:`REFINE_SHARES` that minimises the final stage's predicted noise.
The chance that the medians miss the data is bounded from the same public facts
(:func:`~dplong.privacy.quantile.miss_probability`): above :data:`MAX_MISS` the release is
refused, above :data:`NOTE_MISS` it carries a note, and the bound joins the bad events of the
error bounds. The stages themselves are described in ``docs/design/engine.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from dplong.exceptions import InsufficientUsersError, PrivacyParameterError
from dplong.privacy.accounting import (
    Accountant,
    Composer,
    Cost,
    LedgerEntry,
    PrivacyLedger,
    compose,
    zcdp_epsilon,
)
from dplong.privacy.noise import MIN_LATTICE_EPSILON
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.quantile import GRID, SPREAD_GRID, miss_probability, rank_error
from dplong.privacy.ranges import histogram_threshold, located_miss

__all__ = [
    "FinalBudget",
    "PTRBudget",
    "RandomEffectsBudget",
    "ReleasePlan",
    "ScalePlan",
    "StatisticsBudget",
    "VectorBudget",
    "afford",
    "charge",
    "column_epsilon",
    "fit_ledger",
    "gaussian_shares",
    "keyed_ledger",
    "keyed_share",
    "largest_within",
    "paper_budget",
    "paper_vector_budget",
    "part",
    "plan_budget",
    "ptr_budget",
    "random_effects_budget",
    "remaining_rho",
    "settle",
    "share_weights",
    "split_users",
    "statistics_budget",
    "tail_share",
    "top_up",
    "users_share",
    "vector_budget",
    "vector_plan",
]

#: The remedy a plan's reliability note names while a model's fit runs: the smallest ε at which
#: the whole fit plans without such a note, found by :func:`dplong.planning.advised` from the
#: fit's own decision (None outside a fit: the note names this release's own estimate).
QUIET_REMEDY: ContextVar[str | None] = ContextVar("dplong_quiet_remedy", default=None)
#: ε·n the midpoint and scale medians each get (see the module docstring) where the budget is
#: ample; where ``n ε`` per column is small, ``MEDIAN_SHARE`` of it but at least
#: ``SMALL_MEDIAN_USERS`` (:func:`_median_users`): two medians of 80 users' worth left the mean
#: a third of ε at ``n ε = 300`` and 28 % at 250, three to six times the MSE of a peer handed
#: the data's location and scale. Measured on 3,000 normal columns of 300 users (the miss bound
#: is several times these): the midpoint's median missed every user in 1.5 % of releases at 50
#: users' worth, 0.17 % at 60 and 0.07 % at 70, the scale's in 0.3 % at 50 and never at 60.
MEDIAN_USERS = 80.0
MEDIAN_SHARE, SMALL_MEDIAN_USERS = 0.2, 60.0
#: From this many users, the midpoint's check's measured rank sizes the interval also where the
#: release does not measure its second moment (:attr:`ReleasePlan.ranked`); below, the worst
#: case's slack is what covered skewed tiny panels (dietox's 72 pig means were covered in 85 %
#: of resamples with the measured rank, 94 % without).
RANKED_USERS = 200
#: Bounds on the chance that the median stages miss the data: above the first the release is
#: refused, above the second it comes with a note (and the ε it names brings it below). The
#: bound is conservative (several times the rate measured on spread-out data), so the refusal
#: waits until a miss is all but certain: at 0.9 measured failure rates are about 40 %.
MAX_MISS, NOTE_MISS = 0.9, 0.01
#: A column whose medians miss with probability above ``DOUBT_MISS`` given its private count
#: is more likely off than its error figures say, and is withheld
#: (:func:`dplong.privacy.engine.implausible`).
DOUBT_MISS = 0.5
#: ε·n of the count of users with a statistic: a relative error of about √2/20 = 7 %, which
#: only multiplies the refinement's small offset from the midpoint; but at least
#: ``COUNT_SHARES[0]`` and at most ``COUNT_SHARES[1]`` of the budget per count, as the count
#: also sizes the medians when few users have a statistic (:meth:`ReleasePlan.for_users`).
COUNT_USERS = 20.0
COUNT_SHARES = (0.03, 0.1)
#: Share of the scale stage's ε that counts the users off 0 in a column whose midpoint is 0
#: (:meth:`ReleasePlan.zero_split`); the median over them gets the rest.
ZERO_COUNT_SHARE = 0.25
#: ε·n of the count of users off the scale's cell (:func:`dplong.privacy.scale._shared`): it
#: has to tell the 85-90 % of its users a continuous column leaves off that cell (and the
#: cells far inside it) from the half or less a shared value leaves; within these shares of
#: a column's ε (the floor: where the budget is ample, values shared by 40-50 % are found too).
SHARED_USERS = 15.0
SHARED_SHARES = (0.03, 0.04)
#: ε·n of the midpoint's check (:func:`dplong.privacy.counts.side_count`): a signed count of
#: the users above and below the midpoint's cell, which finds a midpoint beside (nearly) all of
#: them and bounds how far the median is from the middle of the users by a measured rank
#: instead of the worst case over every grid cell (:func:`~dplong.privacy.quantile.rank_error`,
#: ten times wider at these ε); within these shares of a column's ε. It runs where the scale is
#: estimated and either the release measures its clipped values' spread (the second moment:
#: there the measured rank sizes the interval) or the midpoint's own miss bound exceeds
#: :data:`NOTE_MISS` (:func:`_side_and_refine`).
SIDE_USERS = 30.0
SIDE_SHARES = (0.02, 0.15)
#: ε·n of the scale's check (:func:`dplong.privacy.counts.inside_count`): a count of the users
#: within :data:`~dplong.privacy.counts.INSIDE_MADS` of the scale's median deviation from the
#: midpoint, which finds a scale whose median missed below (nearly) every user, within these
#: shares of a column's ε; run where the plan's bound on the scale median's miss given the
#: users found exceeds :data:`NOTE_MISS` (elsewhere a miss is too rare to pay for).
INSIDE_USERS = 15.0
INSIDE_SHARES = (0.01, 0.08)
#: With public bounds the centre is their midpoint, often far from the mean (an offset o up to
#: the half-width w), so the count's error, times o, competes with the sum's: minimising
#: ``8 w² / ε_S² + 2 o² / ε_c²`` at ``ε_S + ε_c`` fixed gives ``ε_c / ε_S = (o / 2w)^(2/3)``,
#: 0.4 to 0.63 for o between w/2 and w: about 30 % of a column's budget for its count.
BOUNDED_COUNT_SHARE = 0.3
#: ε·n of a weighted count ``Σ w_u`` (precision weights, :class:`~dplong.privacy.engine.
#: UserWeights`): the same relative error for a weighted count as small as n/10.
WEIGHTED_COUNT_USERS = 200.0
MIN_STAGE_SHARE = 0.04
#: Largest share of a column's even budget the midpoint may take: with a stated scale it is
#: the only preliminary stage; with an estimated one the scale stage takes as much again.
MAX_MIDPOINT_SHARE = {True: 0.45, False: 0.3}
#: Candidate shares of a column's ε for the refinement.
REFINE_SHARES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
#: Typical-case radii in units of the scale: the final stage (≈ the accurate radius), the
#: refinement (wide enough to hold an off-centre midpoint) and the midpoint's own error.
_FINAL_RADIUS, _ROUGH_RADIUS, _MIDPOINT_ERROR = 2.5, 4.0, 1.5
#: The midpoint's typical error bound when its check measures it (:data:`SIDE_USERS`).
_SIDED_ERROR = 0.5
#: Share of the final stage for the second moment, and the n·ε (per column) it needs.
MOMENT_SHARE, MOMENT_USERS = 0.1, 500.0
#: The engine's tail stage (:func:`dplong.privacy.tails._tail_radius`) is one count of the
#: users beyond a rung in any column: ``n ε`` of ``TAIL_USERS`` users at the release's nominal
#: budget (``d`` columns of ``per_column`` each), within ``TAIL_SHARES`` of each column's
#: final mean budget; it runs where that share buys at least ``TAIL_FLOOR`` users' worth (for
#: one column, ``n ε`` of 800).
TAIL_USERS, TAIL_FLOOR = 300.0, 160.0
TAIL_SHARES = (0.03, 0.2)
#: Shares of a column's ε for the stable-histogram midpoint and for its reserved fallback.
HISTOGRAM_SHARE, FALLBACK_SHARE = 0.35, 0.2
#: τ' = √(2 log(2/γ)) at γ = 0.05, in units of the scale: the histogram bins' half-width.
_BIN_RADIUS = 2.716


def column_epsilon(epsilon: float, delta: float, d: int) -> float:
    """The pure ε each of d columns may spend if the budget is split evenly between them.

    Basic composition gives ε/d; with a δ the Rényi rule gives more once d is large.

    Examples
    --------
    >>> from dplong.privacy.budget import column_epsilon
    >>> column_epsilon(1.0, 1e-6, 1), round(column_epsilon(1.0, 1e-6, 3), 5)
    (1.0, 0.33333)
    >>> column_epsilon(1.0, 1e-8, 100) > 1.0 / 100
    True
    """
    basic = epsilon / d
    if d == 1 or delta == 0.0 or compose([Cost(epsilon=basic)] * d, delta).rule == "basic":
        return basic

    def excess(e: float) -> float:
        return compose([Cost(epsilon=e)] * d, delta).epsilon - epsilon

    if excess(epsilon) <= 0.0:  # ε below δ: d calls of ε each are (0, δ)-DP (tiny budgets)
        return epsilon
    return float(optimize.brentq(excess, basic, epsilon, xtol=1e-12 * epsilon))


def share_weights(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """PLAN's regularised shares: ``(a_j + mean(a)) / Σ``, each at least half the even share.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import share_weights
    >>> share_weights(np.array([1.0, 0.0, 0.0])).round(3).tolist()
    [0.667, 0.167, 0.167]
    """
    a = np.where(np.isfinite(values) & (values > 0), values, 0.0)
    if a.sum() == 0.0:
        return np.full(a.shape, 1.0 / a.size)
    a = a + a.mean()
    return np.asarray(a / a.sum())


@dataclass(frozen=True)
class FinalBudget:
    """The calibrated final stage: its mechanism and per-column ε (Laplace) or ρ (Gaussian)."""

    kind: str
    epsilon: NDArray[np.float64]
    rho: NDArray[np.float64]

    def split(self, share: float) -> tuple[FinalBudget, FinalBudget | None]:
        """``1 - share`` of every column's budget for the mean, ``share`` for the second moment
        (None when ``share`` is 0); :meth:`ReleasePlan.calibrate` composes the two parts."""
        if share <= 0.0:
            return self, None
        keep = FinalBudget(self.kind, self.epsilon * (1 - share), self.rho * (1 - share))
        return keep, FinalBudget(self.kind, self.epsilon * share, self.rho * share)

    def tail_split(self, share: float) -> tuple[NDArray[np.float64], FinalBudget]:
        """``share`` of every column's pure ε for the engine's tail count (pure ε-DP, so a
        Laplace budget only: a Gaussian one is returned whole with no tail ε), and the rest for
        the mean; :meth:`ReleasePlan.calibrate` composed them with the count as one call of the
        columns' summed tail ε (:attr:`ReleasePlan.tail`)."""
        if self.kind == "gaussian" or share <= 0.0:
            return np.zeros_like(self.epsilon), self
        rest = self.epsilon * (1 - share)
        # the tail as the difference, exact (Sterbenz: rest >= ε / 2), so the parts add up to
        # the calibrated ε without rounding up
        return self.epsilon - rest, FinalBudget(self.kind, rest, self.rho)

    def costs(self) -> list[Cost]:
        """One cost per column."""
        if self.kind == "gaussian":
            return [Cost(rho=float(r)) for r in self.rho]
        return [Cost(epsilon=float(e)) for e in self.epsilon]

    def noise_sd(self, sensitivity: NDArray[np.float64]) -> NDArray[np.float64]:
        """Noise sd of each column's sum for a per-column sensitivity (before lattice rounding)."""
        if self.kind == "gaussian":
            return np.asarray(sensitivity / np.sqrt(2.0 * self.rho))
        return np.asarray(math.sqrt(2.0) * sensitivity / self.epsilon)


@dataclass(frozen=True)
class ReleasePlan:
    """The public plan of one release (see the module docstring).

    Attributes
    ----------
    n, d : int
        Users and columns.
    epsilon, delta : float
        The whole release's budget.
    midpoint, spread, refine : float
        Pure ε per column of the midpoint, scale and refinement stages (0: stage skipped).
    count : float
        Pure ε of each count of users with a statistic.
    counts : int
        How many counts: 1 when a user's statistic is all there or all missing, else d.
    notes : tuple of str
        Public warnings about the plan's reliability, with their remedies.
    prior : tuple of Cost
        Calls an earlier release of the same fit made on the same users: the final stage is
        calibrated so that they and this release together stay within (ε, δ), which are then
        the fit's budget up to and including this release (see :meth:`after`).
    midpoint_kind : {"median", "histogram", "bounds", "public"}
        The midpoint's mechanism: the private median on the log grid, or — with a stated scale
        and too few users for the median — the stable histogram of Alg 2-3 with bins of
        half-width τ' (``midpoint_delta`` each), whose rare failure is covered by a private
        median with the reserved ``fallback`` ε (spent only then); ``"bounds"``: public bounds
        on the statistics make every stage before the mean unnecessary; ``"public"``: the
        model gives the centre and a bound on its distance to the mean (no midpoint and no
        refinement stage: only the scale is located).
    moment_share : float
        Share of each column's final budget spent on the second moment of the clipped values,
        whose variance then sets the standard errors (honest under heavy tails); 0 when
        ``n ε`` per column is too small for it to be informative (:data:`MOMENT_USERS`).
    per_column : float
        The even per-column ε of this release, from which the stages were sized
        (:meth:`for_users` resizes them).
    shared : float
        Pure ε per column of the count of users off the scale stage's cell (0: scale stated).
    side : float
        Pure ε per column of the midpoint's check, a signed count of the users on each side of
        it (:data:`SIDE_USERS`; 0: no private midpoint).
    inside : float
        Pure ε per column of the scale's check, a count of the users near the midpoint
        (:data:`INSIDE_USERS`; 0: not run).
    ranked : bool
        Whether the midpoint's check's measured rank, rather than the report-noisy-max's worst
        case over every cell, sizes the centre's error: where the check runs and the release
        measures its second moment, or has :data:`RANKED_USERS` users or more.
    tail : float
        Share of each column's final mean budget for the engine's tail count (one count over
        the columns, :func:`tail_share`; a Laplace budget only): 0 where no tail stage runs.
        Set by the engine where it runs the stage, before the final stage is calibrated with
        it as one call.
    reruns : tuple of float
        The ε of each second median the scale stage ran (a column where most users share one
        value, :meth:`second_spread`) and of each one's check (:meth:`second_check`):
        post-processing of the count above, set on the plan as run.
    miss : float
        A public bound on the probability that a column's median stages miss the data in a way
        that breaks the release (:func:`_miss`; :func:`~dplong.privacy.quantile.miss_probability`
        with all n users): a bad event the error bounds exclude, so it is added to their
        probability.

    Examples
    --------
    >>> from dplong.privacy.budget import ReleasePlan
    >>> plan = ReleasePlan.make(n=1000, d=1, epsilon=1.0, delta=1e-6, stated_scale=False)
    >>> plan.midpoint, plan.spread, plan.count
    (0.08, 0.08, 0.03)
    >>> plan.side, plan.refine  # the midpoint's check measures what a refinement would bound
    (0.03, 0.0)
    >>> plan.early_epsilon() < 1.0
    True
    """

    n: int
    d: int
    epsilon: float
    delta: float
    midpoint: float
    spread: float
    count: float
    counts: int
    refine: float
    notes: tuple[str, ...]
    prior: tuple[Cost, ...] = ()
    midpoint_kind: str = "median"
    midpoint_delta: float = 0.0
    fallback: float = 0.0
    moment_share: float = 0.0
    miss: float = 0.0
    per_column: float = 0.0
    shared: float = 0.0
    side: float = 0.0
    inside: float = 0.0
    ranked: bool = False
    reruns: tuple[float, ...] = ()
    tail: float = 0.0

    @classmethod
    def make(
        cls,
        *,
        n: int,
        d: int,
        epsilon: float,
        delta: float,
        stated_scale: bool,
        complete_rows: bool = True,
        count: bool = True,
        refine: bool = True,
        bounded: bool = False,
        moment: bool = True,
        share: float = 1.0,
        weighted: bool = False,
        centred: bool = False,
    ) -> ReleasePlan:
        """Stage budgets from public facts (module docstring). ``count=False`` when n itself
        is the denominator (item-level regression: every unit is counted), or when the
        release reuses the count of an earlier one over the same users; ``bounded`` when
        public bounds hold every statistic: no midpoint, scale or refinement is needed;
        ``moment=False`` when the final stage releases no second moment (its budget is then one
        call per column: calibrate it so); ``share`` is the part of a fit's budget this release
        gets, so that refusals and notes speak of the fit's ε; ``weighted`` when users carry
        precision weights: the count is a weighted count and gets
        :data:`WEIGHTED_COUNT_USERS` instead of :data:`COUNT_USERS`; ``centred`` when the
        release is given a public centre (``midpoint_kind="public"``): no midpoint or
        refinement stage, their budget left to the final stage.

        Examples
        --------
        A public centre frees the midpoint's and the refinement's budget:

        >>> from dplong.privacy.budget import ReleasePlan
        >>> located = ReleasePlan.make(n=545, d=2, epsilon=2.2, delta=0.0, stated_scale=False)
        >>> centred = ReleasePlan.make(n=545, d=2, epsilon=2.2, delta=0.0, stated_scale=False,
        ...                            centred=True)
        >>> centred.midpoint, centred.refine, centred.spread == located.spread
        (0.0, 0.0, True)
        >>> round(located.early_epsilon(), 3), round(centred.early_epsilon(), 3)
        (0.829, 0.426)
        """
        per_column = column_epsilon(epsilon, delta, d)
        count_users = WEIGHTED_COUNT_USERS if weighted else COUNT_USERS
        if bounded:
            counts = (1 if complete_rows else d) if count else 0
            count_epsilon = BOUNDED_COUNT_SHARE * per_column
            return cls(
                n=n,
                d=d,
                epsilon=epsilon,
                delta=delta,
                midpoint=0.0,
                spread=0.0,
                count=count_epsilon if counts else 0.0,
                counts=counts,
                refine=0.0,
                notes=(),
                midpoint_kind="bounds",
            )
        cap = MAX_MIDPOINT_SHARE[stated_scale]
        low, high = MIN_STAGE_SHARE * per_column, cap * per_column
        wanted = _median_users(n, per_column, stated_scale) / n
        median = min(max(wanted, low), high)
        notes: list[str] = []
        histogram = (
            not centred
            and stated_scale
            and wanted > high
            and delta > 0.0  # the stable histogram is (ε, δ)-DP: it needs a δ
            and _histogram_reliable(n, HISTOGRAM_SHARE * per_column, delta / (2 * d))
        )
        if histogram:  # few users and a stated scale: Alg 2-3's histogram is the surer midpoint
            plan = cls._histogram_plan(
                n, d, epsilon, delta, per_column, complete_rows, count, refine, count_users
            )
            return plan if moment else dataclasses.replace(plan, moment_share=0.0)
        spread = 0.0 if stated_scale else median
        if centred:  # only the scale is located (none when it is stated)
            median = 0.0
        miss = _miss(n, median, spread)
        needed = _median_epsilon(n, stated_scale) / cap * d / share
        stage = "midpoint" if stated_scale else "scale"
        if miss > MAX_MISS:
            # the ε that cures it is the whole fit's business: a model's fit names it
            # (:func:`dplong.planning.advised`, by bisection on the fit's own decision)
            refusal = InsufficientUsersError(
                f"with n={n} users and {_budget_phrase(epsilon, share, d)} the private {stage} "
                f"of a column would get epsilon={spread or median:.3g}, too little to locate the "
                f"data: it would miss them with probability up to {min(miss, 1.0):.2g}: fewer "
                "columns or a larger epsilon would help"
            )
            refusal.budget_refusal = True
            raise refusal
        if miss > NOTE_MISS:
            # a model's fit says which ε plans the whole fit without such a note
            # (:func:`dplong.planning.advised`); a release on its own, this release's estimate
            remedy = QUIET_REMEDY.get() or f"Raise epsilon to about {needed:.2g}"
            notes.append(
                f"With n={n} users and {_budget_phrase(epsilon, share, d)}, the private {stage} "
                f"of each column may miss the bulk of the data (probability up to {miss:.2g}, a "
                f"bad event outside the error bounds), and the estimate be far off. {remedy}, "
                "use fewer columns"
                + ("" if stated_scale else ", or state the scale (scale=...)")
                + "."
            )
        counts = (1 if complete_rows else d) if count else 0
        per_count = per_column * d / max(counts, 1)
        count_epsilon = _count_epsilon(n, per_count, count_users)
        shared = _count_epsilon(n, per_column, SHARED_USERS, SHARED_SHARES) if spread else 0.0
        moment_share = _moment_share(n, per_column) if moment else 0.0
        inside = 0.0 if centred or not spread else _inside_epsilon(n, per_column, miss)
        rest = _rest(per_column, median, spread, shared + inside, count_epsilon * counts / d)
        # the midpoint's check where the scale is estimated (a stated scale's interval beside the
        # data puts the mean at its edge, withheld there), or the refinement, or both; a public
        # centre is off the mean by the model's bound (O(σ/√n) for influence values): neither
        side, share, ranked = _side_and_refine(
            n,
            per_column,
            rest,
            median,
            moment_share,
            refine=refine and not centred,
            located=not (centred or stated_scale),
        )
        return cls(
            n=n,
            d=d,
            epsilon=epsilon,
            delta=delta,
            midpoint=median,
            spread=spread,
            count=count_epsilon if counts else 0.0,
            counts=counts,
            refine=share * per_column,
            notes=tuple(notes),
            moment_share=moment_share,
            miss=miss,
            per_column=per_column,
            shared=shared,
            side=side,
            inside=inside,
            ranked=ranked,
            midpoint_kind="public" if centred else "median",
        )

    @classmethod
    def _histogram_plan(
        cls,
        n: int,
        d: int,
        epsilon: float,
        delta: float,
        per_column: float,
        complete_rows: bool,
        count: bool,
        refine: bool,
        count_users: float,
    ) -> ReleasePlan:
        """The midpoint by the stable histogram (bins of half-width τ', §7.1.2) at
        :data:`HISTOGRAM_SHARE` of a column's ε and δ/(2d) each, with :data:`FALLBACK_SHARE`
        reserved for a private median should no bin survive: spent only then (the choice is a
        function of the histogram's output), otherwise left to the final stage."""
        share = HISTOGRAM_SHARE * per_column
        counts = (1 if complete_rows else d) if count else 0
        per_count = per_column * d / max(counts, 1)
        count_epsilon = _count_epsilon(n, per_count, count_users)
        rest = per_column - share - FALLBACK_SHARE * per_column - count_epsilon * counts / d
        refine_share = _refine_share(n, per_column, rest, midpoint_error=2.0 * _BIN_RADIUS)
        return cls(
            n=n,
            d=d,
            epsilon=epsilon,
            delta=delta,
            midpoint=share,
            spread=0.0,
            count=count_epsilon if counts else 0.0,
            counts=counts,
            refine=refine_share * per_column if refine else 0.0,
            notes=(),
            midpoint_kind="histogram",
            midpoint_delta=delta / (2 * d),
            fallback=FALLBACK_SHARE * per_column,
            moment_share=_moment_share(n, per_column),
            per_column=per_column,
        )

    def for_users(self, users: float) -> ReleasePlan:
        """The median and refinement stages resized for ``users`` users with a statistic
        instead of n: the private count, which runs first. Adaptive
        composition: the stages' sizes are post-processing of the count, and the final stage is
        calibrated on what was actually spent (still within the caps the plan was checked with).

        Examples
        --------
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=1000, d=1, epsilon=4.0, delta=1e-6, stated_scale=False)
        >>> plan.midpoint, plan.for_users(150.0).midpoint
        (0.16, 0.5333333333333333)
        """
        if self.midpoint_kind not in ("median", "public") or users >= self.n:
            return self
        public = self.midpoint_kind == "public"  # only the scale's median runs
        cap = MAX_MIDPOINT_SHARE[not self.spread]
        column = self.per_column
        wanted = _median_users(self.n, column, not self.spread) / users
        median = max(
            min(max(wanted, MIN_STAGE_SHARE * column), cap * column),
            self.spread if public else self.midpoint,
        )
        spread = median if self.spread else 0.0
        midpoint = 0.0 if public else median
        # the checks, as the medians, sized for the users there are
        found = max(int(users), 1)
        wanted_side = self.side or (
            self.spread and self.midpoint_kind == "median" and _midpoint_doubtful(found, midpoint)
        )
        side = (
            max(self.side, _count_epsilon(found, column, SIDE_USERS, SIDE_SHARES))
            if wanted_side
            else 0.0
        )
        inside = (
            max(self.inside, _inside_epsilon(found, column, _miss(found, midpoint, spread)))
            if spread and self.midpoint_kind == "median"
            else 0.0
        )
        if (midpoint, spread, side, inside) == (self.midpoint, self.spread, self.side, self.inside):
            return self
        others = self.shared + side + inside
        rest = _rest(column, midpoint, spread, others, self.count * self.counts / self.d)
        ranked = bool(side) and _ranks_measured(self.n, self.moment_share)
        error = _SIDED_ERROR if ranked else _MIDPOINT_ERROR
        refine = (
            _refine_share(int(users), column, rest, midpoint_error=error) * column
            if self.refine
            else 0.0
        )
        return dataclasses.replace(
            self,
            midpoint=midpoint,
            spread=spread,
            side=side,
            inside=inside,
            refine=refine,
            ranked=ranked,
        )

    def miss_given(self, users: NDArray[np.float64]) -> NDArray[np.float64]:
        """:attr:`miss` with ``users`` per column in place of n — e.g. the private count of
        how many users have a statistic (post-processing of a count): fewer users, likelier a
        miss. 0 where no median runs (public bounds; the histogram's rare failure has its own
        fallback).

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=1000, d=1, epsilon=1.0, delta=1e-6, stated_scale=False)
        >>> plan.miss_given(np.array([1000.0, 100.0])).round(3).tolist()
        [0.0, 0.998]
        """
        if self.midpoint_kind not in ("median", "public"):
            return np.zeros(np.shape(users))
        counts = np.maximum(np.asarray(users), 1.0).astype(int)
        return np.array([_miss(int(u), self.midpoint, self.spread) for u in counts.flat])

    def _left(self) -> float:
        """A column's ε left after every stage before the final one (the second medians and
        their checks take theirs from it)."""
        counting = self.count * self.counts / self.d
        others = self.shared + self.side + self.inside
        return _rest(self.per_column, self.midpoint, self.spread, others, counting) - self.refine

    def second_spread(self, share: NDArray[np.float64]) -> NDArray[np.float64]:
        """ε of the scale stage's second median in columns where most users share one value
        and a ``share`` of them (a ratio of private counts) are off it (:attr:`reruns`): the
        first median's sized for those users (as :meth:`for_users` sizes it), but at most half
        of what the stages before the final one leave a column, so that the final stage keeps
        at least half its budget.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
        >>> plan.spread, plan.second_spread(np.array([0.5, 0.05])).round(3).tolist()
        (0.04, [0.08, 0.405])
        """
        return np.minimum(self.spread / np.maximum(share, 1e-12), max(self._left(), 0.0) / 2.0)

    def second_check(self, users: NDArray[np.float64]) -> NDArray[np.float64]:
        """ε of the check of each second median (:meth:`second_spread`) over ``users`` users off
        the shared value (a private count's low end): a signed count as the midpoint's check
        is, sized as it is for them (ε·users of :data:`SIDE_USERS` within :data:`SIDE_SHARES` of
        the column's ε), taken from the final stage, which keeps at least a quarter of what the
        stages before it leave (the median took at most half).

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
        >>> plan.second_check(np.array([100.0, 1000.0])).round(3).tolist()
        [0.15, 0.03]

        With 500 users the stages before the final one leave 0.55; a quarter of it caps the
        check:

        >>> plan = ReleasePlan.make(n=500, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
        >>> plan.second_check(np.array([100.0, 1000.0])).round(3).tolist()
        [0.137, 0.03]
        """
        wanted = np.array(
            [
                _count_epsilon(max(int(u), 1), self.per_column, SIDE_USERS, SIDE_SHARES)
                for u in users
            ]
        )
        return np.asarray(np.minimum(wanted, max(self._left(), 0.0) / 4.0))

    def zero_split(self) -> tuple[float, float]:
        """The scale stage's ε in a column whose midpoint is 0: :data:`ZERO_COUNT_SHARE` of it
        counts the users off 0, the median over them gets the rest.

        Examples
        --------
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
        >>> plan.spread, plan.zero_split()
        (0.04, (0.01, 0.03))
        """
        return ZERO_COUNT_SHARE * self.spread, (1.0 - ZERO_COUNT_SHARE) * self.spread

    def after(self, prior: list[Cost], epsilon: float, delta: float) -> ReleasePlan:
        """This plan as a later release of a fit: ``prior`` calls were made before it, and
        together they may spend (ε, δ). The stage sizes stay as planned.

        Examples
        --------
        >>> from dplong.privacy.accounting import Cost
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=1000, d=1, epsilon=0.5, delta=5e-7, stated_scale=True)
        >>> later = plan.after([Cost(epsilon=0.5)], 1.0, 1e-6)
        >>> import numpy as np
        >>> bool(later.calibrate(np.ones(1), "laplace").epsilon[0] > plan.calibrate(
        ...     np.ones(1), "laplace").epsilon[0] - 1e-9)
        True
        """
        return dataclasses.replace(self, prior=tuple(prior), epsilon=epsilon, delta=delta)

    def early_costs(self, *, refine: bool = True, fallback: bool = False) -> list[Cost]:
        """The costs of every call before the final stage (``fallback``: the histogram failed
        in some column and the reserved private median ran there too)."""
        first = Cost(epsilon=self.midpoint, delta=self.midpoint_delta)
        per_column = ([first] if self.midpoint else []) + (
            [Cost(epsilon=self.spread)] if self.spread else []
        )
        if self.shared:
            per_column.append(Cost(epsilon=self.shared))
        if self.side:
            per_column.append(Cost(epsilon=self.side))
        if self.inside:
            per_column.append(Cost(epsilon=self.inside))
        if fallback:
            per_column.append(Cost(epsilon=self.fallback))
        if refine and self.refine:
            per_column.append(Cost(epsilon=self.refine))
        return [
            *self.prior,
            *(per_column * self.d),
            *(Cost(epsilon=e) for e in self.reruns),
            *([Cost(epsilon=self.count)] * self.counts),
        ]

    def early_epsilon(self) -> float:
        """ε spent before the final stage (basic composition)."""
        return sum(c.epsilon for c in self.early_costs())

    def check(self) -> None:
        """Refuse, before any noise, a plan that cannot leave its final stage enough budget."""
        weakest = min(  # the stages at their largest (:meth:`for_users`) leave the least
            float(
                plan.calibrate(
                    np.full(self.d, 1.0 / self.d), "laplace", fallback=self.fallback > 0
                ).epsilon.min()
            )
            for plan in (self, self.for_users(1.0))
        )
        if weakest / 2.0 < MIN_LATTICE_EPSILON or (
            self.early_epsilon() >= self.epsilon and self.delta == 0.0
        ):
            refusal = PrivacyParameterError(
                f"epsilon={self.epsilon:.3g} is too small for {self.d} column(s) with n={self.n}: "
                "the final stage would get (almost) nothing after the midpoint and scale: "
                "fewer columns or a larger epsilon would help"
            )
            refusal.budget_refusal = True
            raise refusal

    def calibrate(
        self,
        shares: NDArray[np.float64],
        kind: str,
        *,
        refined: bool = True,
        fallback: bool = False,
    ) -> FinalBudget:
        """The final stage's largest per-column budgets ``s · shares`` within the request.

        ``kind`` is ``"laplace"`` (per-column ε) or ``"gaussian"`` (per-column ρ, needs δ > 0).
        ``refined=False`` hands the refinement's reserve to the final stage. A function of public
        facts (the plan) and of released radii (the shares): memoised, as a fit asks for the
        same calibration several times and a plan's columns often share their radii.
        """
        key = np.ascontiguousarray(shares, dtype=np.float64)
        return _calibrated(self, key.tobytes(), kind, refined, fallback)

    def final_budget(
        self,
        radii: NDArray[np.float64],
        weights: NDArray[np.float64],
        *,
        refined: bool,
        fallback: bool = False,
    ) -> FinalBudget:
        """The final stage's mechanism and budgets for the released radii: Laplace and
        Gaussian are each calibrated and shared by PLAN, and the one whose weighted noise
        variance ``Σ_j f_j Var_j`` is smaller wins (Gaussian only with δ > 0)."""
        radii = radii / radii.max()  # the shares are scale-free; this keeps the powers finite
        laplace = self.calibrate(
            share_weights((weights * radii**2) ** (1.0 / 3.0)),
            "laplace",
            refined=refined,
            fallback=fallback,
        )
        best = laplace
        if self.delta > 0.0:
            gaussian = self.calibrate(
                share_weights(np.sqrt(weights) * radii),
                "gaussian",
                refined=refined,
                fallback=fallback,
            )
            if _weighted_variance(gaussian, radii, weights) < _weighted_variance(
                laplace, radii, weights
            ):
                best = gaussian
        return best


#: The last scale :func:`_calibrated` found per kind, d, ε and δ: where the next search of a
#: like plan starts (:func:`largest_within`'s ``guess``; it changes no result). Bounded by
#: clearing.
_GUESSES: dict[tuple[str, int, float, float], float] = {}


@functools.lru_cache(maxsize=256)
def _calibrated(
    plan: ReleasePlan, shares_key: bytes, kind: str, refined: bool, fallback: bool
) -> FinalBudget:
    """:meth:`ReleasePlan.calibrate`: the earlier calls' composition is computed once
    (:class:`~dplong.privacy.accounting.Composer`), then bisection on the final stage's scale."""
    shares = np.frombuffer(shares_key)
    early = plan.early_costs(refine=refined, fallback=fallback)
    composer = Composer(early, plan.delta)
    mean = 1.0 - plan.moment_share
    # the tail count (Laplace only) is one call over the columns, carved from the means
    tail = plan.tail if kind == "laplace" else 0.0
    parts = np.array([mean * (1.0 - tail), plan.moment_share] if plan.moment_share else [mean])
    if not plan.moment_share:
        parts = parts * (1.0 - tail)

    def total(s: float) -> float:  # the mean (and second moment) of every column, the tail
        final = ((s * shares)[:, None] * parts).ravel()
        if kind == "laplace":
            if tail:
                final = np.append(final, s * float(np.sum(shares)) * mean * tail)
            return composer.add(final, 0.0).epsilon
        return composer.add(rho=float(sum(final.tolist()))).epsilon

    left = plan.epsilon - sum(c.epsilon for c in early)
    upper = 2.0 * max(left, plan.epsilon) if kind == "laplace" else plan.epsilon
    lower = left / float(np.sum(shares)) if kind == "laplace" else 0.0
    known: list[tuple[float, float]] = []
    if kind == "laplace" and lower > 0:
        known.append((lower * (1 + 1e-9), total(lower * (1 + 1e-9))))
    if known and known[0][1] > plan.epsilon:
        scale = lower  # basic composition is exact here: nothing to gain from the search
    else:
        # the last search of this kind for the same budget and columns is a good guess (the
        # shares follow released radii, the early stages the private count: close from round to
        # round and run to run); it saves calls only
        like = (kind, plan.d, plan.epsilon, plan.delta)
        scale = largest_within(
            total, plan.epsilon, upper, lower=max(lower, 0.0), known=known, guess=_GUESSES.get(like)
        )
        if len(_GUESSES) >= 4096:
            _GUESSES.clear()
        _GUESSES[like] = scale
    eps = scale * shares if kind == "laplace" else np.zeros(plan.d)
    rho = scale * shares if kind == "gaussian" else np.zeros(plan.d)
    return FinalBudget(kind, eps, rho)


def top_up(plan: ReleasePlan, spent: Sequence[Cost], mean: FinalBudget) -> FinalBudget:
    """The final means' pure ε scaled as far as the plan's (ε, δ) allow after ``spent``
    (every other call of the release) and the plan's prior calls. Where the engine splits a
    calibrated call after the calibration — the tail stage's second rung, run only where its
    first found a heavy tail, takes its ε from the means' — the parts compose to other than
    their sum: below it where each column's share stays its own call (the means take up the
    difference), above it where the columns' shares are pooled into one count (one call of
    ε₁ + ... + ε_d costs more in Rényi terms than d calls of ε_j at small ε_j: the means give
    the excess back). Either way the release spends exactly its budget. Post-processing of
    released numbers and public facts; a Gaussian budget is returned as is.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.accounting import Cost, compose
    >>> from dplong.privacy.budget import FinalBudget, ReleasePlan, top_up
    >>> plan = ReleasePlan.make(n=1000, d=1, epsilon=1.0, delta=1e-6, stated_scale=False)
    >>> mean = FinalBudget("laplace", np.array([0.5]), np.zeros(1))
    >>> spent = plan.early_costs() + [Cost(epsilon=0.05)]
    >>> settled = top_up(plan, spent, mean)
    >>> calls = [*plan.prior, *spent, Cost(epsilon=float(settled.epsilon[0]))]
    >>> round(compose(calls, plan.delta).epsilon, 6)  # exactly the plan's ε
    1.0
    """
    if mean.kind != "laplace":
        return mean
    composer = Composer([*plan.prior, *spent], plan.delta)

    def total(k: float) -> float:
        return composer.add(mean.epsilon * k, 0.0).epsilon

    # the means were calibrated for about these calls: the factor is near 1 (a guess: it saves
    # calls only)
    k = largest_within(total, plan.epsilon, 2.0, guess=1.0)
    return FinalBudget(mean.kind, mean.epsilon * k, mean.rho)


def _weighted_variance(
    budget: FinalBudget, radii: NDArray[np.float64], weights: NDArray[np.float64]
) -> float:
    return float(np.sum(weights * budget.noise_sd(2.0 * radii) ** 2))


def largest_within(
    total: Callable[[float], float],
    target: float,
    upper: float,
    *,
    lower: float = 0.0,
    known: Sequence[tuple[float, float]] = (),
    guess: float | None = None,
) -> float:
    """The largest s in (0, upper] with ``total(s) <= target``, for ``total`` increasing in s
    (bisection from ``lower``, known to be within, to a relative 1e-9: always on the safe side).

    The bisection's answers are read off a bracket of the crossing found first by regula falsi
    (:class:`_Crossing`) wherever monotonicity decides them, so ``total`` is called some 8
    times instead of 30, and the result is the plain bisection's, bit for bit. ``known``
    values ``(s, total(s))`` already computed, and a ``guess`` of the answer (e.g. that of a
    like search), only save calls: the result is the same without them.

    Examples
    --------
    >>> from dplong.privacy.budget import largest_within
    >>> s = largest_within(lambda s: 3 * s, 1.0, 1.0)
    >>> 3 * s <= 1.0, round(s, 8)
    (True, 0.33333333)
    >>> largest_within(lambda s: 3 * s, 1.0, 1.0, guess=0.3) == s
    True
    """
    within = _Crossing(total, target, upper, known)
    if (
        guess is not None
        and lower < guess * (1.0 - _GUESS_WIDTH) < guess * (1.0 + _GUESS_WIDTH) < upper
    ):
        if not within(guess * (1.0 + _GUESS_WIDTH)):  # most often a bracket of two calls
            within(guess * (1.0 - _GUESS_WIDTH))
    if within(upper):
        return upper
    within.narrow(lower)
    lo, hi = lower, upper
    for _ in range(60):
        if hi - lo <= 1e-9 * hi:
            break
        mid = (lo + hi) / 2.0
        if within(mid):
            lo = mid
        else:
            hi = mid
    return lo


#: Relative distance from an evaluated point beyond which :class:`_Crossing` trusts
#: monotonicity: far above the rounding error of a composition (~1e-15 relative), far below the
#: bisection's resolution (1e-9).
_MONOTONE_MARGIN = 1e-11
#: Relative half-width of the bracket :func:`largest_within` tries around a guess: the
#: calibrations of one plan for the radii of successive rounds or runs differ by about this.
_GUESS_WIDTH = 1e-3


class _Crossing:
    """``total(s) <= target`` for an increasing ``total``: from the largest s evaluated within
    and the smallest s evaluated beyond when s lies clearly outside them, else evaluated.
    :meth:`narrow` brings the two together by Illinois regula falsi (a few calls: ``total`` is
    smooth between the kinks of its minimum over Rényi orders)."""

    def __init__(
        self,
        total: Callable[[float], float],
        target: float,
        upper: float,
        known: Sequence[tuple[float, float]] = (),
    ) -> None:
        self.total, self.target, self.upper = total, target, upper
        self.inside, self.outside = -math.inf, math.inf
        self.at_inside, self.at_outside = math.nan, math.nan
        for s, value in known:
            self._record(s, value)

    def _record(self, s: float, value: float) -> None:
        if value <= self.target:
            if s > self.inside:
                self.inside, self.at_inside = s, value
        elif s < self.outside:
            self.outside, self.at_outside = s, value

    def evaluate(self, s: float) -> float:
        value = self.total(s)
        self._record(s, value)
        return value

    def __call__(self, s: float) -> bool:
        if s < self.inside * (1.0 - _MONOTONE_MARGIN):
            return True
        if s > self.outside * (1.0 + _MONOTONE_MARGIN):
            return False
        return self.evaluate(s) <= self.target

    def narrow(self, lower: float) -> None:
        """Illinois regula falsi between the largest s within (``lower`` evaluated if none is
        known) and the smallest s beyond, until they are within the monotone margin."""
        if self.inside < lower:
            self.evaluate(lower)
        if not self.inside >= lower or self.outside > self.upper:
            return  # nothing within to start from (or nothing beyond): the bisection evaluates
        a, fa = self.inside, self.at_inside - self.target
        b, fb = self.outside, self.at_outside - self.target
        side = 0
        for _ in range(12):
            if self.outside - self.inside <= _MONOTONE_MARGIN * self.outside:
                break
            # the secant's root, kept a margin inside the bracket: a root it finds to the
            # margin is then bracketed by the next call, from the other side
            step = _MONOTONE_MARGIN * b
            s = (a * fb - b * fa) / (fb - fa)
            s = min(max(s, a + step), b - step) if b - a > 4.0 * step else (a + b) / 2.0
            fs = self.evaluate(s) - self.target
            if math.isnan(fs):  # no secant through it: the bisection evaluates the rest
                break
            if fs <= 0.0:
                a, fa = s, fs
                fb = fb / 2.0 if side == -1 else fb  # Illinois: the stale end moves faster
                side = -1
            else:
                b, fb = s, fs
                fa = fa / 2.0 if side == 1 else fa
                side = 1


def _rest(per_column: float, midpoint: float, spread: float, shared: float, count: float) -> float:
    """A column's ε left after its median stages, its counts (off the scale's cell, the
    midpoint's check: ``shared``) and its part of the counts of users (for the refinement and
    the final stage)."""
    return per_column - midpoint - spread - shared - count


def _count_epsilon(
    n: int, per_count: float, users: float, shares: tuple[float, float] = COUNT_SHARES
) -> float:
    """The ε of one count: ε·n of ``users`` (:data:`COUNT_USERS`, :data:`WEIGHTED_COUNT_USERS`
    or :data:`SHARED_USERS`) within ``shares`` of its budget."""
    low, high = shares
    return min(max(users / n, low * per_count), high * per_count)


def _midpoint_doubtful(n: int, midpoint: float) -> bool:
    """Whether the midpoint's median at ε ``midpoint`` over ``n`` users may miss them (its
    bound above :data:`NOTE_MISS`): there its check runs whatever it costs."""
    return miss_probability(len(GRID), midpoint, n) > NOTE_MISS


def _side_and_refine(
    n: int,
    per_column: float,
    rest: float,
    midpoint: float,
    moment_share: float,
    *,
    refine: bool,
    located: bool,
) -> tuple[float, float, bool]:
    """The ε of the midpoint's check (:data:`SIDE_USERS`; 0: not run), the refinement's share
    of ``per_column``, from ``rest`` (a column's ε after the medians and the other counts), and
    whether the check's measured rank sizes the centre's error (:func:`_ranks_measured`). With
    a ``located`` (estimated-scale) midpoint the check runs where the midpoint may miss
    (:func:`_midpoint_doubtful`), and where its measured rank (:data:`_SIDED_ERROR`) sizes the
    interval and predicts less final noise than the refinement would (:func:`_refined`).
    Public facts only."""
    shares = REFINE_SHARES if refine else (0.0,)
    plain_share, plain_cost = _refined(n, per_column, rest, _MIDPOINT_ERROR, shares)
    if not located:
        return 0.0, plain_share, False
    side = _count_epsilon(n, per_column, SIDE_USERS, SIDE_SHARES)
    ranked = _ranks_measured(n, moment_share)
    error = _SIDED_ERROR if ranked else _MIDPOINT_ERROR
    if ranked and not moment_share:
        # without a second moment the typical errors from the plan itself: the check's noise
        # reach at γ = 0.05 against the median's worst case (a fixed 0.5 and 1.5 ran the check
        # where it cost the mean more than its narrower radius saved)
        plain_share, plain_cost = _refined(
            n, per_column, rest, _rank_sds(rank_error(len(GRID), midpoint, 0.05), n), shares
        )
        error = _rank_sds(_check_reach(side) / 2.0, n)
    checked_share, checked_cost = _refined(n, per_column, rest - side, error, shares)
    if _midpoint_doubtful(n, midpoint) or (ranked and checked_cost < plain_cost):
        return side, checked_share, ranked
    return 0.0, plain_share, False


def _rank_sds(ranks: float, n: int) -> float:
    """A median ``ranks`` off the middle of n normal users, in sds (capped at 3)."""
    return float(special.ndtri(min(0.5 + ranks / n, 0.9987)))


def _check_reach(epsilon: float, gamma: float = 0.05) -> float:
    """What the midpoint's check's noise (two-sided geometric, sensitivity 2, at ``epsilon``)
    exceeds in magnitude with probability at most γ (as the engine reads it)."""
    rate = epsilon / 2.0
    return math.log(2.0 / (gamma * (1.0 + math.exp(-rate)))) / rate


def _ranks_measured(n: int, moment_share: float) -> bool:
    """Whether a midpoint's check run on ``n`` users sizes the centre's error by its measured
    rank: where the release measures its clipped values' second moment (``moment_share``),
    whose variance then carries tails heavier than the normal plug-in, or from
    :data:`RANKED_USERS` users on. Public facts only."""
    return bool(moment_share) or n >= RANKED_USERS


def _median_users(n: int, per_column: float, stated_scale: bool) -> float:
    """ε·n of each median stage: :data:`MEDIAN_USERS`; with an estimated scale and a small
    ``n ε``, :data:`MEDIAN_SHARE` of it, at least :data:`SMALL_MEDIAN_USERS` (the midpoint's
    check, run there, finds a median that missed; with a stated scale no check follows the
    midpoint). Public facts only.

    Examples
    --------
    >>> from dplong.privacy.budget import _median_users
    >>> _median_users(1000, 1.0, False), _median_users(300, 1.0, False)
    (80.0, 60.0)
    >>> _median_users(350, 1.0, False), _median_users(300, 1.0, True)
    (70.0, 80.0)
    """
    if stated_scale:
        return MEDIAN_USERS
    return min(MEDIAN_USERS, max(SMALL_MEDIAN_USERS, MEDIAN_SHARE * n * per_column))


def _inside_epsilon(n: int, per_column: float, miss: float) -> float:
    """The ε of the scale's check (:data:`INSIDE_USERS`) for ``n`` users, where the scale
    median's miss bound ``miss`` exceeds :data:`NOTE_MISS`; else 0. Public facts only."""
    if miss <= NOTE_MISS:
        return 0.0
    return _count_epsilon(n, per_column, INSIDE_USERS, INSIDE_SHARES)


def _moment_share(n: int, per_column: float) -> float:
    """:data:`MOMENT_SHARE` when the second moment is informative: its Laplace noise, relative
    to a variance σ² clipped at ~3σ, is about ``√2 · 9 / (n ε_v)``; from
    :data:`MOMENT_USERS` users per unit of ε (per column) it stays below ~30 %."""
    return MOMENT_SHARE if n * per_column >= MOMENT_USERS else 0.0


def tail_share(n: int, d: int, per_column: float) -> float:
    """The share of each column's final mean budget for the engine's tail count: ``n ε`` of
    :data:`TAIL_USERS` users at the nominal budget of ``d`` columns of ``per_column`` ε each,
    within :data:`TAIL_SHARES`; 0 where that buys fewer than :data:`TAIL_FLOOR` users' worth
    (the count's noise would hide any tail a normal one would not show, and the share would
    only add noise to the means). One count serves every column: paid per release, not per
    column. Public facts only.

    Examples
    --------
    >>> from dplong.privacy.budget import tail_share
    >>> tail_share(5912, 1, 1.0), round(tail_share(545, 3, 4.0 / 3), 3), tail_share(300, 1, 1.0)
    (0.05074424898511502, 0.138, 0.0)
    """
    low, high = TAIL_SHARES
    share = min(max(TAIL_USERS / (n * d * per_column), low), high)
    return share if share * n * d * per_column >= TAIL_FLOOR else 0.0


def _budget_phrase(epsilon: float, share: float, d: int) -> str:
    """The fit's budget and this release's part of it, for messages."""
    whole = f"epsilon={epsilon / share:.3g}"
    if share < 1.0:
        return f"{whole} ({share:.0%} of it for {d} column(s))"
    return f"{whole} over {d} column(s)"


@functools.cache  # public facts only; a fit's plans repeat across calls
def _miss(n: int, midpoint: float, spread: float) -> float:
    """The bound on a miss that breaks the release. With a stated scale that is the midpoint's
    (the interval ``m̂ ± w`` is then narrow and lies beside the data). With an estimated scale
    a missed midpoint repairs itself — the spread of ``|x - m̂|`` then measures the distance,
    and the wide interval holds the data, at the price of its noise, which the error bounds
    carry — so the bound is the scale median's: a spread beside the data shrinks the interval
    onto ``m̂``. Neither stage (a public centre and a stated scale): nothing to miss."""
    if not (spread or midpoint):
        return 0.0
    if spread:
        return miss_probability(len(SPREAD_GRID), spread, n)
    return miss_probability(len(GRID), midpoint, n)


@functools.cache
def _median_epsilon(n: int, stated_scale: bool) -> float:
    """The ε of the median stage :func:`_miss` bounds for a miss of at most :data:`NOTE_MISS`."""
    cells = len(GRID if stated_scale else SPREAD_GRID)
    low = max(1.0 / n, 2.0 * MIN_LATTICE_EPSILON)  # ε n = 1: a miss is all but certain
    if miss_probability(cells, low, n) <= NOTE_MISS:
        return low
    return float(optimize.brentq(lambda e: miss_probability(cells, e, n) - NOTE_MISS, low, 1e3))


def _histogram_reliable(n: int, epsilon: float, delta: float) -> bool:
    """Whether the stable histogram finds a bin even when the data straddle two bins: its
    threshold ``(2/ε) log(2/δ) + 1`` below 40 % of the users (bins of half-width τ' hold each
    value with probability ``1 - γ``, so two neighbouring bins share at least ~95 %)."""
    return 2.0 / epsilon * math.log(2.0 / delta) + 1.0 <= 0.4 * n


def _refine_share(
    n: int, per_column: float, rest: float, *, midpoint_error: float = _MIDPOINT_ERROR
) -> float:
    """The share of :data:`REFINE_SHARES` that minimises the predicted final noise variance
    (:func:`_refined`)."""
    return _refined(n, per_column, rest, midpoint_error, REFINE_SHARES)[0]


def _refined(
    n: int, per_column: float, rest: float, midpoint_error: float, shares: Sequence[float]
) -> tuple[float, float]:
    """The refinement's share among ``shares`` that minimises the predicted final noise
    variance, and that variance (in units of the scale, per unit of the final ε squared).

    In units of the scale: without refinement the final radius carries the midpoint's error;
    with it, the refinement's noise (Laplace, radius ``_ROUGH_RADIUS + _MIDPOINT_ERROR``) and
    the mean's sampling error instead, at ``log(2/γ)`` times their scale.
    """
    best, best_cost = 0.0, math.inf
    for share in shares:
        final = rest - share * per_column
        if final <= 0.1 * per_column:
            continue
        if share == 0.0:
            error = midpoint_error
        else:
            rough_sd = 2.0 * math.sqrt(2.0) * _ROUGH_RADIUS / (n * share * per_column)
            error = rough_sd * math.log(2.0 / 0.05) / math.sqrt(2.0) + 2.0 / math.sqrt(n)
        cost = ((_FINAL_RADIUS + error) / final) ** 2
        if cost < best_cost:
            best, best_cost = share, cost
    return best, best_cost


# ---------------------------------------------------------------------------------------------
# The other pipelines' stage budgets: the paper's (Alg 4-5) and CoinPress's (Alg 10-14)
# ---------------------------------------------------------------------------------------------

#: Share of ε for CoinPress's local randomized-response histograms (central:
#: :func:`_histogram_share`).
LOCAL_HISTOGRAM_SHARE = 0.25


def paper_budget(d: int, options: ReleaseOptions) -> tuple[float, float]:
    """Per-column (ε, δ) of the midpoint (the mean gets the same ε), from public facts.

    Examples
    --------
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.privacy.budget import paper_budget
    >>> options = ReleaseOptions.check(1000, epsilon=1.0, delta=1e-6, privacy="central",
    ...                                bound=None, d=2, variant="theory")
    >>> eps, delta = paper_budget(2, options)
    >>> round(eps, 6), delta                       # each of 4 calls: ε/4
    (0.25, 2.5e-07)
    """
    local = options.local
    delta_h = 0.0 if local else options.delta / (2.0 * d)

    def total(s: float) -> float:
        calls = [Cost(epsilon=s, delta=delta_h), Cost(epsilon=s)] * d
        return compose(calls, options.delta).epsilon

    return largest_within(total, options.epsilon, options.epsilon), delta_h


@dataclass(frozen=True)
class ScalePlan:
    """How the budget of :func:`estimate_scale` is spent (public facts only).

    Each of the d wide-bin histograms costs ``histogram_epsilon`` (and ``histogram_delta``
    centrally), each of the ``Σ step_counts`` iterative steps ``step_epsilon``;
    ``total_epsilon``/``total_delta`` are what the release costs (:func:`compose`).

    Examples
    --------
    >>> from dplong.privacy.budget import plan_budget
    >>> plan = plan_budget(6000, (34,), epsilon=1.0, delta=1e-8, local=False)
    >>> plan.histogram_epsilon, plan.step_epsilon * 34 > 0.95
    (0.05, True)
    >>> plan.total_epsilon <= 1.0, plan.total_delta <= 1e-8
    (True, True)
    """

    histogram_epsilon: float
    histogram_delta: float
    step_epsilon: float
    step_counts: tuple[int, ...]
    total_epsilon: float
    total_delta: float
    composition: str


def _histogram_share(n: int, epsilon: float, delta: float) -> float:
    """The least share of a column's ε that puts the wide-bin histogram's threshold
    ``(2/ε) log(2/δ) + 1`` at a quarter of the users, within [0.05, 0.75]."""
    room = n / 4.0 - 1.0
    if room <= 0:
        return 0.75
    return float(min(max(2.0 * math.log(2.0 / delta) / room / epsilon, 0.05), 0.75))


def plan_budget(
    n: int, step_counts: Sequence[int], *, epsilon: float, delta: float, local: bool
) -> ScalePlan:
    """Split (ε, δ) between d wide-bin histograms and ``Σ step_counts`` iterative steps.

    The histograms get a share (see the module docstring); the steps get the largest common ε
    that keeps the composition of every call within the request: basic composition for the
    stable histograms (``δ/(2d)`` each, centrally), the better of basic and Rényi for the
    pure calls.

    Examples
    --------
    Many columns: the Rényi rule gives each of the 340 steps more than ε/340.

    >>> from dplong.privacy.budget import plan_budget
    >>> plan = plan_budget(6000, (34,) * 10, epsilon=1.0, delta=1e-8, local=False)
    >>> plan.step_epsilon > 0.95 / 340, plan.total_epsilon <= 1.0, plan.total_delta <= 1e-8
    (True, True, True)
    """
    d, total_steps = len(step_counts), int(sum(step_counts))
    if local:
        share, delta_h = LOCAL_HISTOGRAM_SHARE, 0.0
    else:
        delta_h = delta / (2.0 * d)
        share = _histogram_share(n, epsilon / d, delta_h)
    eps_h = share * epsilon / d
    histograms = [Cost(epsilon=eps_h, delta=delta_h)] * d

    def total(step: float) -> float:
        return compose(histograms + [Cost(epsilon=step)] * total_steps, delta).epsilon

    step = largest_within(total, epsilon, epsilon)
    spent = compose(histograms + [Cost(epsilon=step)] * total_steps, delta)
    return ScalePlan(
        eps_h,
        delta_h,
        step,
        tuple(int(k) for k in step_counts),
        spent.epsilon,
        spent.delta,
        f"{d} histogram(s) by basic composition; {total_steps} iterative steps by "
        f"{spent.rule} composition",
    )


# ---------------------------------------------------------------------------------------------
# A fit's budget: its parts, the accountant, the ledger
# ---------------------------------------------------------------------------------------------


def part(options: ReleaseOptions, share: float) -> ReleaseOptions:
    """``share`` of a budget's (ε, δ): a block's part of a fit, or a stage's part of a release.

    Examples
    --------
    >>> from dplong.privacy.budget import part
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(1000, epsilon=2.0, delta=1e-6, privacy="central",
    ...                                bound=None, d=1)
    >>> half = part(options, 0.5)
    >>> half.epsilon, half.delta
    (1.0, 5e-07)
    """
    return dataclasses.replace(
        options, epsilon=options.epsilon * share, delta=options.delta * share
    )


def users_share(users: float, n: int, epsilon: float, low: float, high: float) -> float:
    """The share of ``epsilon`` worth ``users`` users of ε·n (a stage that needs a given n ε to
    work), within [low, high]: a function of public facts.

    Examples
    --------
    >>> from dplong.privacy.budget import users_share
    >>> users_share(300.0, 2000, 1.0, 0.05, 0.2), users_share(300.0, 50_000, 1.0, 0.05, 0.2)
    (0.15, 0.05)
    """
    return min(high, max(low, users / (n * epsilon)))


def gaussian_shares(epsilon: float, delta: float, shares: Sequence[float]) -> tuple[float, ...]:
    """The zCDP ρ of Gaussian releases that together spend ``(epsilon, delta)``: the largest
    total ρ whose conversion (:func:`~dplong.privacy.accounting.zcdp_epsilon`) stays within
    ε at δ, split in proportion to ``shares`` (zCDP composes by adding ρ).

    Examples
    --------
    >>> from dplong.privacy.accounting import zcdp_epsilon
    >>> from dplong.privacy.budget import gaussian_shares
    >>> first, second = gaussian_shares(1.0, 1e-6, [0.75, 0.25])
    >>> round(first / second, 6), bool(zcdp_epsilon(first + second, 1e-6) <= 1.0)
    (3.0, True)
    """
    total = float(sum(shares))
    upper = epsilon  # ρ-zCDP costs at least ρ in ε
    rho = optimize.brentq(lambda r: zcdp_epsilon(r, delta) - epsilon, 1e-300, upper, xtol=1e-15)
    while zcdp_epsilon(rho, delta) > epsilon:  # brentq's root may sit a hair above ε
        rho *= 1.0 - 1e-12
    return tuple(rho * share / total for share in shares)


@dataclass(frozen=True)
class PTRBudget:
    """The budget of one efficient Propose-Test-Release (ePTR, Shen, Tong & Wang 2026, Alg 2)
    and of the Gaussian releases that follow it.

    Attributes
    ----------
    test_epsilon : float
        ε of the test: the coin ``Bernoulli(sigmoid(ε_t (γ - M)))`` on a 1-Lipschitz safety
        margin γ, ε_t-DP whatever the data (half of the ePTR's ε, as in Alg 2).
    release_epsilon, delta : float
        The (ε, δ) of the Gaussian release given the test (the other half, and the ePTR's δ).
    release_rho : float
        The zCDP ρ of that release's discrete Gaussian: the largest whose exact conversion
        (CKS 2020, Prop. 12) is ``release_epsilon``-DP at ``delta`` (sharper than Alg 2's
        classical ``2α √(2 log(1.25/δ)) / ε``, and valid at any ε).
    threshold : float
        Alg 2, line 3: ``M = 1 + (2/ε) log(max(1/δ, 1/ε))`` with ε the ePTR's (= 2 ε_t): an
        uncertified data set (γ = 0) releases with probability at most ``e^{-ε_t} δ``.
    rest_rho : tuple of float
        The ρ of the Gaussian releases after the ePTR, in proportion to their shares.
    """

    test_epsilon: float
    release_epsilon: float
    delta: float
    release_rho: float
    threshold: float
    rest_rho: tuple[float, ...]

    def entries_cost(self) -> list[Cost]:
        """The costs the ePTR's two ledger entries record: the test's pure ε_t and the
        release's approximate ``(ε_r, δ)`` (composed by basic composition with the rest)."""
        return [Cost(epsilon=self.test_epsilon), Cost(self.release_epsilon, self.delta)]


def ptr_budget(
    epsilon: float, delta: float, *, share: float = 1.0, rest: Sequence[float] = ()
) -> PTRBudget:
    """Split ``(epsilon, delta)`` between one ePTR (a ``share`` of ε, half of δ when ``rest``
    is given, else all of it) and Gaussian releases after it in proportion to ``rest``.

    Privacy (Alg 2, Thm 2.2): the test coin's log-odds ``ε_t (γ - M)`` move by at most ε_t
    between neighbours (γ is 1-Lipschitz); where γ > 0 on either neighbour the estimate
    moves by at most its sensitivity α and the Gaussian is ``(ε_r, δ)``-DP, so the pair
    (coin, release) is ``(ε_t + ε_r, δ)``-DP; where γ = 0 on both, the coins are equal and
    release with probability at most ``e^{-ε_t} δ < δ``. The rest are ρ-zCDP, converted at
    the δ left. Everything here is a public fact.

    Examples
    --------
    >>> from dplong.privacy.accounting import Cost, compose
    >>> from dplong.privacy.budget import ptr_budget
    >>> b = ptr_budget(1.0, 1e-6)
    >>> b.test_epsilon, b.release_epsilon, round(b.threshold, 4)   # Alg 2 at ε = 1, δ = 1e-6
    (0.5, 0.5, 28.631)
    >>> both = ptr_budget(1.0, 1e-6, share=0.75, rest=[0.5, 0.5])
    >>> total = compose(both.entries_cost() + [Cost(rho=r) for r in both.rest_rho], 1e-6)
    >>> bool(total.epsilon <= 1.0 + 1e-9), total.delta <= 1e-6
    (True, True)
    """
    if not 0.0 < share <= 1.0 or (share < 1.0) != bool(rest):
        raise AssertionError("an ePTR's share is below 1 exactly when releases follow it")
    eps_ptr = epsilon * share
    delta_ptr = delta / 2.0 if rest else delta
    test = eps_ptr / 2.0
    (rho,) = gaussian_shares(eps_ptr - test, delta_ptr, [1.0])
    with np.errstate(over="ignore"):
        threshold = 1.0 + math.log(max(1.0 / delta_ptr, 1.0 / eps_ptr)) / test
    rest_rho = gaussian_shares(epsilon - eps_ptr, delta - delta_ptr, rest) if rest else ()
    return PTRBudget(test, eps_ptr - test, delta_ptr, rho, threshold, rest_rho)


#: ε·n each median of the private ranges of a fit's unbounded columns gets
#: (:func:`statistics_budget`), within these shares of its ρ. Twice the engine's
#: :data:`MEDIAN_USERS`: a reach's median must also beat the empty cells between a mass at
#: the midpoint and the others (n/5 users ahead of some 2,000 cells for RAND HIE's
#: coinsurance: missed in about half the fits at 80, measured).
RANGE_USERS, RANGE_SHARES = 160.0, (0.02, 0.3)
#: Share of a fit's ρ for the counts of persons beyond the rungs of the private ranges
#: (:func:`dplong.privacy.ranges.private_ranges`) when it has any.
RUNG_COUNT_SHARE = 0.06
#: Where the medians would be refused (their miss bound above :data:`MAX_MISS`), the ranges
#: come from histograms (:func:`dplong.privacy.ranges.histogram_ranges`) with the share of ρ
#: that sets their threshold at ``HISTOGRAM_USERS[0] n`` persons, within
#: ``HISTOGRAM_SHARES``; beyond ``HISTOGRAM_USERS[1] n`` the fit is refused. A cell of
#: doubling width holds 30-45 % of a normal column's persons' extremes at the top of its
#: bulk; at 0.2 n the farthest such cell clears in nearly every fit, at 0.3 in most (at
#: n = 1000, d = 3: 0.15 left the Gram matrix too little and 2 of 30 fits were withheld, 0.25
#: one; 0.2 none).
HISTOGRAM_USERS, HISTOGRAM_SHARES = (0.2, 0.3), (0.05, 0.4)


@dataclass(frozen=True)
class StatisticsBudget:
    """The budget of a release of sufficient statistics: the pure ε of each median of the
    private ranges (0: every column's range is public, or the histograms find them), the ρ of
    their rungs' counts (0 too), the ρ of the histograms of the ranges where n ε is too
    small for the medians (else 0), and the ρ of each Gaussian release of the statistics."""

    median_epsilon: float
    count_rho: float
    histogram_rho: float
    rho: tuple[float, ...]


def statistics_budget(
    n: int, epsilon: float, delta: float, shares: Sequence[float], located: int
) -> StatisticsBudget:
    """Split ``(epsilon, delta)`` between the private ranges of the ``located`` columns
    without public bounds (:mod:`dplong.privacy.ranges`) and Gaussian releases in proportion
    to ``shares``: the total ρ of :func:`gaussian_shares`, of which three medians a column
    take what gives each ``ε n =`` :data:`RANGE_USERS` (an ε-DP call is ``ε²/2``-zCDP) within
    :data:`RANGE_SHARES`, and the counts at their rungs :data:`RUNG_COUNT_SHARE`; or, where
    those medians' miss bound exceeds :data:`MAX_MISS`, one vector of histograms
    :data:`HISTOGRAM_USERS` and :data:`HISTOGRAM_SHARES`. Public facts only.

    Examples
    --------
    >>> from dplong.privacy.budget import statistics_budget
    >>> plan = statistics_budget(5912, 1.0, 5912.0**-2, [0.4, 0.45, 0.15], located=4)
    >>> round(plan.median_epsilon * 5912), plan.histogram_rho, len(plan.rho)
    (160, 0.0, 3)
    >>> small = statistics_budget(1000, 1.0, 1000.0**-2, [1.0], located=4)
    >>> small.median_epsilon, round(small.histogram_rho / 0.0243, 2)   # a share of ρ
    (0.0, 0.15)
    >>> statistics_budget(5912, 1.0, 5912.0**-2, [1.0], located=0).median_epsilon
    0.0
    """
    (total,) = gaussian_shares(epsilon, delta, [1.0])
    if located == 0:
        return StatisticsBudget(0.0, 0.0, 0.0, gaussian_shares(epsilon, delta, shares))
    medians = 3 * located
    wanted = medians * (RANGE_USERS / n) ** 2 / 2.0 / total
    share = min(RANGE_SHARES[1], max(RANGE_SHARES[0], wanted))
    median_epsilon = math.sqrt(2.0 * share * total / medians)
    if located_miss(n, median_epsilon) <= MAX_MISS:
        rest = total * (1.0 - share - RUNG_COUNT_SHARE) / float(sum(shares))
        return StatisticsBudget(
            median_epsilon, total * RUNG_COUNT_SHARE, 0.0, tuple(rest * s for s in shares)
        )
    # the threshold is inversely proportional to √ρ: the ρ that sets it at the target
    at_one = histogram_threshold(located, 1.0)
    wanted = (at_one / (HISTOGRAM_USERS[0] * n)) ** 2 / total
    share = min(HISTOGRAM_SHARES[1], max(HISTOGRAM_SHARES[0], wanted))
    rest = total * (1.0 - share) / float(sum(shares))
    return StatisticsBudget(0.0, 0.0, total * share, tuple(rest * s for s in shares))


#: A random-effects fit's stages (:mod:`dplong.models.random_effects`) when its variance
#: components are not stated: the components' release (a location and two variances, each
#: with its private scale) gets ε·n of ``RE_COMPONENTS_USERS`` users within
#: ``RE_COMPONENTS_SHARES`` of (ε, δ) (basic composition; at n = 2000 it needs ε ≈ 0.45 to
#: plan without a reliability note), the pilot pooled fit whose residuals they are made of
#: ``RE_PILOT_SHARE`` of the rest's Gaussian ρ. Both only set the quasi-demeaning θ, on which
#: the estimate depends to second order; the quasi-demeaned fit gets everything else.
RE_COMPONENTS_USERS, RE_COMPONENTS_SHARES, RE_PILOT_SHARE = 900.0, (0.1, 0.45), 0.4


@dataclass(frozen=True)
class RandomEffectsBudget(StatisticsBudget):
    """The budget of a random-effects fit: the private ranges' (``median_epsilon``,
    ``count_rho``, ``histogram_rho``), the pilot's ρ (0: the components are stated), the
    (ε, δ) of the variance components' release (0, 0 when stated) and, as ``rho``, the
    nominal ρ of the quasi-demeaned fit's releases (:func:`remaining_rho` raises it to what
    is left)."""

    pilot_rho: float
    components_epsilon: float
    components_delta: float


def random_effects_budget(
    n: int,
    epsilon: float,
    delta: float,
    shares: Sequence[float],
    located: int,
    *,
    stated: bool,
) -> RandomEffectsBudget:
    """Split ``(epsilon, delta)`` between the stages of a random-effects fit
    (:data:`RE_COMPONENTS_USERS`, :data:`RE_PILOT_SHARE`; the ranges as in
    :func:`statistics_budget`), the final releases' ρ in proportion to ``shares``. With
    ``stated`` variance components there is no pilot and no components' release. Public facts
    only.

    Examples
    --------
    >>> from dplong.privacy.budget import random_effects_budget
    >>> plan = random_effects_budget(2000, 1.0, 2000.0**-2, [0.3, 0.55, 0.15], 0, stated=False)
    >>> plan.components_epsilon, round(plan.pilot_rho / sum(plan.rho), 6)
    (0.45, 0.666667)
    >>> random_effects_budget(2000, 1.0, 2000.0**-2, [1.0], 0, stated=True).pilot_rho
    0.0
    """
    share = 0.0 if stated else users_share(RE_COMPONENTS_USERS, n, epsilon, *RE_COMPONENTS_SHARES)
    pilot = 0.0 if stated else RE_PILOT_SHARE
    rest = statistics_budget(
        n, epsilon * (1.0 - share), delta * (1.0 - share), [pilot, 1.0 - pilot], located
    )
    pilot_rho, final = rest.rho
    total = float(sum(shares))
    return RandomEffectsBudget(
        rest.median_epsilon,
        rest.count_rho,
        rest.histogram_rho,
        tuple(final * s / total for s in shares),
        pilot_rho,
        epsilon * share,
        delta * share,
    )


def remaining_rho(spent: Sequence[Cost], epsilon: float, delta: float) -> float:
    """The largest ρ of further Gaussian calls that, composed with ``spent``
    (:class:`~dplong.privacy.accounting.Composer`), keeps the total within ``(epsilon,
    delta)``: a last stage calibrated on what the earlier ones cost. Post-processing of the
    ledger (public).

    Examples
    --------
    >>> from dplong.privacy.accounting import Cost, compose
    >>> from dplong.privacy.budget import remaining_rho
    >>> spent = [Cost(epsilon=0.1), Cost(rho=0.002)]
    >>> rho = remaining_rho(spent, 1.0, 1e-6)
    >>> round(compose([*spent, Cost(rho=rho)], 1e-6).epsilon, 6)
    1.0
    """
    composer = Composer(spent, delta)
    return largest_within(lambda rho: composer.add(rho=rho).epsilon, epsilon, epsilon)


def afford(accountant: Accountant | None, epsilon: float, delta: float) -> None:
    """The accountant's check, before the first noise draw: refuse a spend it cannot afford.

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.budget import afford
    >>> afford(dplong.Accountant(epsilon=1.0), 0.5, 0.0)          # affordable: nothing happens
    >>> afford(dplong.Accountant(epsilon=1.0), 1.5, 0.0)
    Traceback (most recent call last):
    ...
    dplong.exceptions.BudgetExceededError: ...
    """
    if accountant is not None:
        accountant.check(epsilon, delta)


def charge(
    accountant: Accountant | None, ledger: PrivacyLedger, epsilon: float, delta: float
) -> None:
    """After a release or fit: its calls must compose within the (ε, δ) it was given (a bug if
    not, so it is raised as one), and the accountant records them.

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.accounting import LedgerEntry, PrivacyLedger
    >>> from dplong.privacy.budget import charge
    >>> call = LedgerEntry("mean", "lattice Laplace", "x", 0.5, 0.0, 0.0, 1.0, 2.0)
    >>> accountant = dplong.Accountant(epsilon=1.0)
    >>> charge(accountant, PrivacyLedger.from_entries([call], 0.0, "central"), 0.5, 0.0)
    >>> accountant.spent_epsilon
    0.5
    """
    if ledger.epsilon > epsilon * (1 + 1e-9) or ledger.delta > delta * (1 + 1e-9):
        raise AssertionError(
            f"the calls compose to ({ledger.epsilon}, {ledger.delta}), beyond the budget "
            f"({epsilon}, {delta})"
        )
    if accountant is not None:
        accountant.record(ledger)


def fit_ledger(ledgers: Sequence[PrivacyLedger], delta: float, model: str) -> PrivacyLedger:
    """One ledger for a fit's releases: all their calls composed at the fit's δ, or their basic
    sum where that is smaller, or, for the local model's disjoint groups of users, in parallel
    (the largest).

    Examples
    --------
    >>> from dplong.privacy.accounting import LedgerEntry, PrivacyLedger
    >>> from dplong.privacy.budget import fit_ledger
    >>> call = LedgerEntry("mean", "lattice Laplace", "x", 0.5, 0.0, 0.0, 1.0, 2.0)
    >>> one = PrivacyLedger.from_entries([call], 0.0, "central")
    >>> fit_ledger([one, one], 0.0, "central").epsilon
    1.0
    """
    # the local model's groups are disjoint and drawn independently of the data (max); the
    # levels of a key are not (keyed_ledger): only the former compose as the largest
    if all(ledger.composition == "parallel (disjoint users)" for ledger in ledgers):
        worst = max(ledgers, key=lambda ledger: ledger.epsilon)
        entries = tuple(entry for ledger in ledgers for entry in ledger.entries)
        return PrivacyLedger(
            entries, worst.epsilon, worst.delta, worst.composition, model, worst.rho
        )
    if len(ledgers) == 1:
        return ledgers[0]
    joint = PrivacyLedger.from_entries(
        [entry for ledger in ledgers for entry in ledger.entries], delta, model
    )
    basic = sum(ledgers[1:], ledgers[0])
    return joint if joint.epsilon <= basic.epsilon else basic


#: How many levels' releases replacing one user can change when every user is at one level of
#: a key (a grouping declared constant within users): the level the user leaves and the level
#: the user joins. The key is private, so a user may change levels between neighbours.
KEYED_TOUCHED = 2


def keyed_share(levels: int) -> float:
    """Each level's share of a fit's (ε, δ) when every user is at one level of a key
    (parallel composition over the levels): ``1 / min(levels, 2)``.

    Under the contract's neighbours (one user's rows replaced) a user at one level may move to
    another, changing both levels' releases: the fit costs the sum of the two largest levels'
    costs (:func:`keyed_ledger`), so each level gets half the budget however many levels
    there are, where a release shared by the levels (sequential composition) gives each
    about ``1 / levels``. With one level, it gets the whole budget.

    Examples
    --------
    >>> from dplong.privacy.budget import keyed_share
    >>> keyed_share(1), keyed_share(2), keyed_share(8)
    (1.0, 0.5, 0.5)
    """
    return 1.0 / min(levels, KEYED_TOUCHED)


def keyed_ledger(ledgers: Sequence[PrivacyLedger], model: str) -> PrivacyLedger:
    """The ledger of releases on the levels of a key at which every user is at one level
    (:func:`keyed_share`): parallel composition, the sum of the :data:`KEYED_TOUCHED` largest
    levels' ε and δ (and ρ), which bounds the cost of any pair a replaced user can change.

    Examples
    --------
    >>> from dplong.privacy.accounting import LedgerEntry, PrivacyLedger
    >>> from dplong.privacy.budget import keyed_ledger
    >>> level = [PrivacyLedger.from_entries(
    ...     [LedgerEntry("mean", "lattice Laplace", f"y[arm={k}]", 0.5, 0.0, 0.0, 1.0, 2.0)],
    ...     0.0, "central") for k in range(3)]
    >>> ledger = keyed_ledger(level, "central")
    >>> ledger.epsilon, len(ledger.entries), ledger.composition
    (1.0, 3, 'parallel over the levels of a key (two levels touched)')
    """

    def largest(values: Sequence[float]) -> float:  # NaN (a ρ unknown) stays NaN
        if any(math.isnan(value) for value in values):
            return math.nan
        return float(sum(sorted(values, reverse=True)[:KEYED_TOUCHED]))

    return PrivacyLedger(
        tuple(entry for ledger in ledgers for entry in ledger.entries),
        largest([ledger.epsilon for ledger in ledgers]),
        largest([ledger.delta for ledger in ledgers]),
        "parallel over the levels of a key (two levels touched)",
        model,
        largest([ledger.rho for ledger in ledgers]),
    )


def split_users(
    rng: np.random.Generator, n: int, shares: Sequence[float]
) -> list[NDArray[np.int64]]:
    """The local model's disjoint groups of users, one per release (parallel composition: each
    user answers one question with the whole ε), of sizes ``round(share · n)``; drawn
    independently of the data.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import split_users
    >>> [g.size for g in split_users(np.random.default_rng(0), 10, [0.5, 0.3, 0.2])]
    [5, 3, 2]
    """
    cuts = np.cumsum([round(share * n) for share in shares])[:-1]
    return np.split(rng.permutation(n), cuts)


# ---------------------------------------------------------------------------------------------
# A vector release: one column located, then one release of public linear functionals of it
# ---------------------------------------------------------------------------------------------

#: The paper's pipeline before a vector release (Alg 3 / 9, then the vector): the midpoint's
#: share of ε, as Alg 4 gives each of its two steps half.
PAPER_MIDPOINT_SHARE = 0.5


@dataclass(frozen=True)
class VectorBudget:
    """The budget of one vector release: pure ε for the Laplace mechanism calibrated to the
    vector's L1 sensitivity, and ρ for the discrete Gaussian calibrated to its L2 (0: none,
    as without δ); the release takes whichever gives less noise
    (:func:`~dplong.privacy.vector.release_linear`)."""

    epsilon: float
    rho: float = 0.0


def vector_plan(n: int, options: ReleaseOptions, *, stated_scale: bool) -> ReleasePlan | None:
    """The plan of a release that locates one column of n values with the default engine's
    stages (:func:`~dplong.privacy.locate.locate`) and ends in one vector release: n divides
    (no count) and nothing reads a second moment. Checked before any noise; None for the
    paper's pipeline (``variant="theory"``, the local model: :func:`paper_vector_budget`).

    Examples
    --------
    >>> from dplong.privacy.budget import vector_plan
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> plan = vector_plan(2000, options, stated_scale=True)
    >>> plan.counts, plan.moment_share, plan.spread
    (0, 0.0, 0.0)
    """
    if options.local or options.variant != "default":
        return None
    plan = ReleasePlan.make(
        n=n,
        d=1,
        epsilon=options.epsilon,
        delta=options.delta,
        stated_scale=stated_scale,
        count=False,
        refine=options.refine,
        moment=False,
    )
    plan.check()
    return plan


def vector_budget(plan: ReleasePlan, *, refined: bool) -> VectorBudget:
    """What the located stages of a :func:`vector_plan` leave the vector: the largest ε, and ρ
    where there is a δ, whose composition with every earlier call stays within the plan.

    Examples
    --------
    >>> from dplong.privacy.budget import vector_budget, vector_plan
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=1e-6, privacy="central",
    ...                                bound=None, d=1)
    >>> plan = vector_plan(2000, options, stated_scale=True)
    >>> budget = vector_budget(plan, refined=True)
    >>> 0.0 < budget.epsilon < 1.0, budget.rho > 0.0
    (True, True)
    """
    epsilon = float(plan.calibrate(np.ones(1), "laplace", refined=refined).epsilon[0])
    rho = (
        float(plan.calibrate(np.ones(1), "gaussian", refined=refined).rho[0])
        if plan.delta > 0
        else 0.0
    )
    return VectorBudget(epsilon, rho)


def paper_vector_budget(options: ReleaseOptions) -> tuple[float, VectorBudget]:
    """The paper's pipeline before a vector release: the pure ε of the midpoint (which also
    spends the whole δ, Alg 3; none locally, Alg 9) and the vector's budget, by basic
    composition (:data:`PAPER_MIDPOINT_SHARE`).

    Examples
    --------
    >>> from dplong.privacy.budget import paper_vector_budget
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1, variant="theory")
    >>> paper_vector_budget(options)
    (0.5, VectorBudget(epsilon=0.5, rho=0.0))
    """
    midpoint = options.epsilon * PAPER_MIDPOINT_SHARE
    return midpoint, VectorBudget(options.epsilon * (1.0 - PAPER_MIDPOINT_SHARE))


def settle(
    accountant: Accountant | None,
    entries: Sequence[LedgerEntry],
    options: ReleaseOptions | ReleasePlan,
) -> PrivacyLedger:
    """The ledger of a release's calls, composed at its δ and :func:`charge` d: checked within
    its (ε, δ) and recorded by the accountant. Given a :class:`ReleasePlan`, the (ε, δ) are the
    plan's (a later release of a fit spends its part, not the fit's options) and the release is
    central (the default engine's).

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.accounting import LedgerEntry
    >>> from dplong.privacy.budget import settle
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(1000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> call = LedgerEntry("mean", "lattice Laplace", "x", 0.5, 0.0, 0.0, 1.0, 2.0)
    >>> accountant = dplong.Accountant(epsilon=1.0)
    >>> settle(accountant, [call, call], options).epsilon, accountant.spent_epsilon
    (1.0, 1.0)
    """
    privacy = options.privacy if isinstance(options, ReleaseOptions) else "central"
    ledger = PrivacyLedger.from_entries(entries, options.delta, privacy)
    charge(accountant, ledger, options.epsilon, options.delta)
    return ledger
