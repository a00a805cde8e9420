"""The stage-size rules of a release: how much of a column's ε each stage gets.

Public facts only (n, d, the budget, whether the scale is stated). A private median over the
cells of the log grid needs ``ε N`` well above ``4 log(#cells) ≈ 40`` to land at the median
(:mod:`dplong.privacy.quantile`); the midpoint and scale stages get :data:`MEDIAN_USERS` ``/ n``
each, fewer users' worth where ``n ε`` is small and the scale estimated (:func:`_median_users`;
within :data:`MIN_STAGE_SHARE` and :data:`MAX_MIDPOINT_SHARE` of a column's even share,
:func:`column_epsilon`), the count :data:`COUNT_USERS` ``/ n``, the midpoint's and the scale's
checks :data:`SIDE_USERS` and :data:`INSIDE_USERS` ``/ n`` where they run
(:func:`_side_and_refine`, :func:`_inside_epsilon`), the refinement the share of
:data:`REFINE_SHARES` that minimises the final stage's predicted noise (:func:`_refined`), the
engine's tail count :func:`tail_share`.

The chance that the medians miss the data is bounded from the same facts (:func:`_miss`): above
:data:`MAX_MISS` the release is refused, above :data:`NOTE_MISS` it carries a note. The rules
are applied by :class:`~dplong.privacy.budget.plan.ReleasePlan`; their rationale is in
``docs/design/budget.md``, the stages themselves in ``docs/design/engine.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from contextvars import ContextVar

from scipy import optimize, special

from dplong.exceptions import InsufficientUsersError
from dplong.privacy.accounting import Cost, compose
from dplong.privacy.noise import MIN_LATTICE_EPSILON
from dplong.privacy.quantile import GRID, SPREAD_GRID, miss_probability, rank_error

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
#: release does not measure its second moment
#: (:attr:`~dplong.privacy.budget.plan.ReleasePlan.ranked`); below, the worst case's slack is what
#: covered skewed tiny panels (dietox's 72 pig means were covered in 85 % of resamples with the
#: measured rank, 94 % without).
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
#: ε·n of the count of users with a statistic: a relative error of about √2/20 = 7 %, which only
#: multiplies the refinement's small offset from the midpoint; but at least ``COUNT_SHARES[0]`` and
#: at most ``COUNT_SHARES[1]`` of the budget per count, as the count also sizes the medians when few
#: users have a statistic (:meth:`~dplong.privacy.budget.plan.ReleasePlan.for_users`).
COUNT_USERS = 20.0
COUNT_SHARES = (0.03, 0.1)
#: Noise sds by which the count must fall short of n before the medians are resized for the
#: users it found (:meth:`~dplong.privacy.budget.plan.ReleasePlan.for_users`). A complete
#: column's count (Laplace) falls 2 sds short in 3 % of draws (``e^{-2√2} / 2``), 4 in 0.17 %;
#: resized on that noise alone, its medians and checks took the final stage's ε from 0.14 to
#: 0.025-0.09 at 500 users and ε = 0.5 (30 of 1,000 releases at 2 sds, 2 at 4). A column
#: short of fewer users than that (28 % of n where the count has its ``COUNT_USERS``) keeps
#: the medians sized for n, with as many fewer users' worth each; the plausibility rule
#: reads the miss bound given the count.
RESIZE_SDS = 4.0
#: Share of the scale stage's ε that counts the users off 0 in a column whose midpoint is 0
#: (:meth:`~dplong.privacy.budget.plan.ReleasePlan.zero_split`); the median over them gets the rest.
ZERO_COUNT_SHARE = 0.25
#: The largest scale-stage ε the plan costs as one bounded-range median: up to it a count at
#: :data:`ZERO_COUNT_SHARE` of the stage (pure) and a median at the rest (bounded-range), the
#: zero split, compose below it under Rényi composition at every order (beyond about 12 they
#: do not; checked in tests), so the plan stays an upper bound on either.
ZERO_SPLIT_BOUNDED = 10.0
#: ... or, where that buys fewer than ``n ε`` of ``ZERO_COUNT_USERS`` users (N̂ for n), that
#: many from the final stage: the count's noise sd is then at most 1.9 % of the users. At its
#: share alone it was about 141 users at ε = 1 whatever n (the spread stage's 4 %): a share of
#: 30 % of 2,000 users at 1 could not be told from none 2 sds down, its scale was never
#: measured, and the mean was withheld in every release.
ZERO_COUNT_USERS = 75.0
#: ``n ε`` of the count of the users in the scale's cell where the scale stage found a column's
#: users alone at one or two values (:func:`dplong.privacy.scale._shared`), from the final
#: stage: its noise sd is then 7 % of the users, and a count of 3 sds (21 %) says the cell
#: holds users, so that the scale is a second value's distance, not a median's miss far above
#: them all. Users at 0 and 1 in equal shares put the midpoint among the cells between them,
#: at any magnitude, and the plausibility rule took their scale for such a miss: a user-level
#: share of 50 % was withheld in every release at any n. Where the stages before leave it too
#: little to tell half the users from none (many columns at a small n ε), it does not run.
SEAT_USERS = 20.0
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
#: ... unless a rough mean anchors the sum near the mean first: each user without a statistic
#: then adds the anchor's offset to the sum (about n, public), so the count's error multiplies
#: the rough mean's error, not the offset (``projection.anchored``). The count and the rough
#: mean then take these shares of a column's budget, the sum the rest. At a column's n·ε below
#: :data:`BOUNDED_ANCHOR_NE` the rough mean is too noisy to anchor on: the worst case
#: (offset w) of ``8 w²/ε_S² + 2 o²/ε_c²`` favours the unanchored plan below about 90
#: (docs/accuracy.md, "A mean given its public range").
BOUNDED_ANCHOR_COUNT_SHARE, BOUNDED_ROUGH_SHARE, BOUNDED_ANCHOR_NE = 0.1, 0.1, 200.0
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
#: one column, ``n ε`` of 800). The count's noise sd is ``√2 / ε_t`` users, so ``ε_t n`` of 600
#: users puts its 3.5-sd threshold at 0.8 % of n: a group of 1-2 % of the users far out is
#: seen. At 300 users' worth (and a 3 % floor) 2 % of 3,000 or 10,000 users at 100 sds was
#: clipped unseen in 16 of 20 releases (2 now), 1 % of 10,000 at 1,000 sds in 8 of 20 (0 now,
#: all warned), for 6-11 % more noise variance in Gaussian means at 2,000-10,000 users
#: (about 1 % of their MSE; docs/accuracy.md).
TAIL_USERS, TAIL_FLOOR = 600.0, 160.0
#: Where the analyst declares a support's lower end (``lower=0``: spending, counts,
#: durations), a long right tail is the shape to expect, and the clip it would cut is what the
#: interval must allow for; the count then runs from ``SUPPORTED_FLOOR`` users' worth (``n ε``
#: of 500 for one column). Near that floor the count sees only a tail that puts about a tenth
#: of the users beyond its rung, and it marks heavy only above its full threshold
#: (:func:`dplong.privacy.tails._tail_radius`): those are the tails that wreck an interval at
#: this n ε (measured in docs/accuracy.md, "A declared support buys a coarse tail count").
SUPPORTED_FLOOR = 100.0
TAIL_SHARES = (0.06, 0.2)
#: About a public centre the tail stage counts each column's users on each side
#: (:func:`dplong.privacy.tails._signed_tail`): four counts at the column's tail ε_t
#: (sensitivity 2), whose excess on one side sums their draws, noise sd ``4√2 / ε_t`` users.
#: What it must resolve is a one-sided excess of about √n users, each some spreads beyond the
#: clip, which moves the mean by about a standard error: at ``ε_t √n`` of ``SIGNED_USERS``
#: its 3.5-sd threshold (the noise's part) is √n.
SIGNED_USERS = 3.5 * 4.0 * math.sqrt(2.0)
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
    >>> from dplong.privacy.budget.stages import _median_users
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


def _moment_share(n: int, per_column: float, *, assumed: bool = False) -> float:
    """:data:`MOMENT_SHARE` when the second moment is informative: its Laplace noise, relative
    to a variance σ² clipped at ~3σ, is about ``√2 · 9 / (n ε_v)``; from
    :data:`MOMENT_USERS` users per unit of ε (per column) it stays below ~30 %. At any n ε where
    the tail model is ``assumed`` (a skewed statistic's kind, which no count checks below
    that n ε): the plug-in spread of the bulk then sizes the sampling error of a tail it cannot
    see, and the moment's noise only widens the spread (the engine keeps the larger of the two).
    """
    return MOMENT_SHARE if assumed or n * per_column >= MOMENT_USERS else 0.0


def tail_share(
    n: int, d: int, per_column: float, users: float | None = None, *, supported: bool = False
) -> float:
    """The share of each column's final mean budget for the engine's tail count: ``m ε`` of
    :data:`TAIL_USERS` users at the nominal budget of ``d`` columns of ``per_column`` ε each,
    within :data:`TAIL_SHARES`, for the ``m`` users the count reads: ``users``, the plausible
    high end of the private count of users with a statistic (at most n; n where not given,
    as in a forecast). The count's noise in users is about ``√2 / ε``, so ``m ε`` fixes its
    resolution as a share of the users it counts, which is what a tail's clipping bias
    scales with: sized for n where a fifth of the users have a statistic (a per-user
    regression on regressors few users vary), it would see only tails five times as heavy,
    and the normal bias bound would stand for tails it should have marked. Whether the stage
    runs is decided from public facts (n): 0 where n users' share buys fewer than
    :data:`TAIL_FLOOR` users' worth (the count's noise would hide any tail a normal one would
    not show, and the share would only add noise to the means), or :data:`SUPPORTED_FLOOR`
    where a support's lower end is declared (``supported``). One count serves every
    column: paid per release, not per column. A function of public facts and a released count
    (post-processing).

    Examples
    --------
    >>> from dplong.privacy.budget import tail_share
    >>> tail_share(5912, 1, 1.0), round(tail_share(545, 3, 4.0 / 3), 3), tail_share(300, 1, 1.0)
    (0.10148849797023005, 0.2, 0.0)
    >>> tail_share(1162, 1, 0.5), tail_share(1162, 1, 0.5, supported=True)
    (0.0, 0.2)

    A fifth of the 545 users with a statistic (a private count's high end of 160):

    >>> round(tail_share(545, 5, 3.2), 3), round(tail_share(545, 5, 3.2, users=160.0), 3)
    (0.069, 0.2)
    """
    low, high = TAIL_SHARES
    share = min(max(TAIL_USERS / (n * d * per_column), low), high)
    if share * n * d * per_column < (SUPPORTED_FLOOR if supported else TAIL_FLOOR):
        return 0.0
    # a count's high end beyond n is its noise (at most n users have a statistic)
    counted = n if users is None or not users < n else max(users, 1.0)
    return min(max(TAIL_USERS / (counted * d * per_column), low), high)


def signed_share(n: int, per_column: float) -> float:
    """The share of each column's final mean budget for the signed tail count about a public
    centre (:data:`SIGNED_USERS`): ``SIGNED_USERS / (√n ε)`` of the column's ``per_column``
    ε, at least the low end of :data:`TAIL_SHARES`; 0 where that is beyond its high end (the
    count could not resolve √n users for the share of the mean's budget it may take). Public
    facts only.

    Examples
    --------
    >>> from dplong.privacy.budget import signed_share
    >>> round(signed_share(5000, 2.0), 3), signed_share(100_000, 2.0), signed_share(2000, 2.0)
    (0.14, 0.06, 0.0)
    """
    low, high = TAIL_SHARES
    share = max(SIGNED_USERS / (math.sqrt(n) * per_column), low)
    return share if share <= high else 0.0


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


def _miss_notes(
    n: int,
    d: int,
    epsilon: float,
    share: float,
    miss: float,
    stage_epsilon: float,
    stated_scale: bool,
) -> list[str]:
    """The reliability of a release's median stages from their miss bound ``miss``
    (:func:`_miss`; the midpoint's with a stated scale, else the scale's, at ``stage_epsilon``):
    refused above :data:`MAX_MISS`, a note with its remedy above :data:`NOTE_MISS`, else none.
    ``share`` is the release's part of the fit's ``epsilon / share``. Public facts only."""
    stage = "midpoint" if stated_scale else "scale"
    if miss > MAX_MISS:
        # the ε that cures it is the whole fit's business: a model's fit names it
        # (:func:`dplong.planning.advised`, by bisection on the fit's own decision)
        refusal = InsufficientUsersError(
            f"with n={n} users and {_budget_phrase(epsilon, share, d)} the private {stage} "
            f"of a column would get epsilon={stage_epsilon:.3g}, too little to locate the "
            f"data: it would miss them with probability up to {min(miss, 1.0):.2g}: fewer "
            "columns or a larger epsilon would help"
        )
        refusal.budget_refusal = True
        raise refusal
    if miss <= NOTE_MISS:
        return []
    # a model's fit says which ε plans the whole fit without such a note
    # (:func:`dplong.planning.advised`); a release on its own, this release's estimate
    needed = _median_epsilon(n, stated_scale) / MAX_MIDPOINT_SHARE[stated_scale] * d / share
    remedy = QUIET_REMEDY.get() or f"Raise epsilon to about {needed:.2g}"
    return [
        f"With n={n} users and {_budget_phrase(epsilon, share, d)}, the private {stage} "
        f"of each column may miss the bulk of the data (probability up to {miss:.2g}, a "
        f"bad event outside the error bounds), and the estimate be far off. {remedy}, "
        "use fewer columns" + ("" if stated_scale else ", or state the scale (scale=...)") + "."
    ]


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
