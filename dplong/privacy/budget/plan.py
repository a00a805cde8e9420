"""The public plan of one release of the default engine: :class:`ReleasePlan`.

A block released by the default engine (:mod:`dplong.privacy.engine`) gets a plan that
declares, from public facts only (n, d, the budget, the options, whether the scale is stated),
the ε of each of its stages — the **count** of users with a statistic, the **midpoint** and
**scale** medians (and the counts at a zero or shared value, :meth:`ReleasePlan.zero_split`,
:meth:`ReleasePlan.zero_count`, :meth:`ReleasePlan.second_spread`), the midpoint's and the
scale's checks, the **refinement** and the final **mean** with its second moment — sized by the
rules of :mod:`~dplong.privacy.budget.stages`. :meth:`ReleasePlan.check` runs the plan's
refusals before the first noise draw; the final stage is calibrated after the earlier ones ran
(:meth:`ReleasePlan.calibrate`, :mod:`~dplong.privacy.budget.calibration`).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.exceptions import PrivacyParameterError
from dplong.privacy.accounting import Cost
from dplong.privacy.budget.calibration import (
    FinalBudget,
    _calibrated,
    _weighted_variance,
    share_weights,
)
from dplong.privacy.budget.stages import (
    _BIN_RADIUS,
    _MIDPOINT_ERROR,
    _SIDED_ERROR,
    BOUNDED_ANCHOR_COUNT_SHARE,
    BOUNDED_ANCHOR_NE,
    BOUNDED_COUNT_SHARE,
    BOUNDED_ROUGH_SHARE,
    COUNT_USERS,
    DOUBT_MISS,
    FALLBACK_SHARE,
    HISTOGRAM_SHARE,
    INSIDE_SHARES,
    INSIDE_USERS,
    MAX_MIDPOINT_SHARE,
    MIN_STAGE_SHARE,
    RESIZE_SDS,
    SEAT_USERS,
    SHARED_SHARES,
    SHARED_USERS,
    SIDE_SHARES,
    SIDE_USERS,
    WEIGHTED_COUNT_USERS,
    ZERO_COUNT_SHARE,
    ZERO_COUNT_USERS,
    ZERO_SPLIT_BOUNDED,
    _count_epsilon,
    _histogram_reliable,
    _inside_epsilon,
    _median_users,
    _midpoint_doubtful,
    _miss,
    _miss_notes,
    _moment_share,
    _ranks_measured,
    _refine_share,
    _rest,
    _side_and_refine,
    column_epsilon,
)
from dplong.privacy.noise import MIN_LATTICE_EPSILON, count_sd


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
        Share of each column's final budget spent on the second moment of the clipped values, whose
        variance then sets the standard errors (honest under heavy tails); 0 when ``n ε`` per column
        is too small for it to be informative (:data:`~dplong.privacy.budget.stages.MOMENT_USERS`).
    per_column : float
        The even per-column ε of this release, from which the stages were sized
        (:meth:`for_users` resizes them).
    shared : float
        Pure ε per column of the count of users off the scale stage's cell (0: scale stated).
    side : float
        Pure ε per column of the midpoint's check, a signed count of the users on each side of
        it (:data:`~dplong.privacy.budget.stages.SIDE_USERS`; 0: no private midpoint).
    inside : float
        Pure ε per column of the scale's check, a count of the users near the midpoint
        (:data:`~dplong.privacy.budget.stages.INSIDE_USERS`; 0: not run).
    ranked : bool
        Whether the midpoint's check's measured rank, rather than the exponential mechanism's
        worst case over every cell, sizes the centre's error: where the check runs and the
        release measures its second moment, or has
        :data:`~dplong.privacy.budget.stages.RANKED_USERS` users or more.
    tail : float
        Share of each column's final mean budget for the engine's tail count (one count over the
        columns, :func:`~dplong.privacy.budget.stages.tail_share`; of its ε, or of a Gaussian
        budget's ρ): 0 where no tail stage runs. Set by the engine where it runs the stage,
        before the final stage is calibrated with it as one call.
    supported : bool
        Whether the release declares a support's lower end (``lower=``, a public fact): its
        tail count then runs at a smaller n ε
        (:data:`~dplong.privacy.budget.stages.SUPPORTED_FLOOR`).
    reruns : tuple of float
        The ε of each second median the scale stage ran (a column where most users share one
        value, :meth:`second_spread`) and of each one's check (:meth:`second_check`):
        post-processing of the count above, set on the plan as run.
    miss : float
        A public bound on the probability that a column's median stages miss the data in a way that
        breaks the release (:func:`~dplong.privacy.budget.stages._miss`;
        :func:`~dplong.privacy.quantile.miss_probability` with all n users): a bad event the error
        bounds exclude, so it is added to their probability.
    columns : tuple of ReleasePlan
        Each column's own plan where the count found the columns' users so unlike that their
        stages were sized apart (:meth:`for_columns`; empty: one size for all). The scalar
        stage sizes are then those of the column with the fewest users, the largest.

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
    supported: bool = False
    columns: tuple[ReleasePlan, ...] = ()

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
        supported: bool = False,
        assumed: bool = False,
    ) -> ReleasePlan:
        """Stage budgets from public facts (:mod:`~dplong.privacy.budget.stages`). ``count=False``
        when n itself is the denominator (item-level regression: every unit is counted), or when the
        release reuses the count of an earlier one over the same users; ``bounded`` when public
        bounds hold every statistic: no midpoint, scale or refinement of the interval is needed
        (a rough mean may anchor the sum, :data:`~dplong.privacy.budget.stages.BOUNDED_ROUGH_SHARE`,
        where the release counts its users); ``moment=False``
        when the final stage releases no second moment (its budget is then one call per column:
        calibrate it so); ``share`` is the part of a fit's budget this release gets, so that
        refusals and notes speak of the fit's ε; ``weighted`` when users carry precision weights:
        the count is a weighted count and gets
        :data:`~dplong.privacy.budget.stages.WEIGHTED_COUNT_USERS` instead of
        :data:`~dplong.privacy.budget.stages.COUNT_USERS`; ``centred`` when the release is given a
        public centre (``midpoint_kind="public"``): no midpoint or refinement stage, their budget
        left to the final stage; ``supported`` when a support's lower end is declared (the tail
        count's smaller floor, :attr:`supported`); ``assumed`` when the release's tail model is an
        assumed kind (:class:`~dplong.privacy.radius.AssumedTail`): its second moment is bought
        at any n ε (:func:`~dplong.privacy.budget.stages._moment_share`).

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
            # a rough mean anchors the sum where the count's error would multiply the offset
            anchored = refine and counts > 0 and n * per_column >= BOUNDED_ANCHOR_NE
            count_share = BOUNDED_ANCHOR_COUNT_SHARE if anchored else BOUNDED_COUNT_SHARE
            return cls(
                n=n,
                d=d,
                epsilon=epsilon,
                delta=delta,
                midpoint=0.0,
                spread=0.0,
                count=count_share * per_column if counts else 0.0,
                counts=counts,
                refine=BOUNDED_ROUGH_SHARE * per_column if anchored else 0.0,
                notes=(),
                midpoint_kind="bounds",
            )
        cap = MAX_MIDPOINT_SHARE[stated_scale]
        low, high = MIN_STAGE_SHARE * per_column, cap * per_column
        wanted = _median_users(n, per_column, stated_scale) / n
        median = min(max(wanted, low), high)
        histogram = (
            not centred
            and stated_scale
            and wanted > high
            and delta > 0.0  # the stable histogram is (ε, δ)-DP: it needs a δ
            and _histogram_reliable(n, HISTOGRAM_SHARE * per_column, delta / (2 * d))
        )
        if histogram:  # few users and a stated scale: Alg 2-3's histogram is the surer midpoint
            plan = cls._histogram_plan(
                n,
                d,
                epsilon,
                delta,
                per_column,
                complete_rows,
                count,
                refine,
                count_users,
                assumed=assumed,
            )
            return plan if moment else dataclasses.replace(plan, moment_share=0.0)
        spread = 0.0 if stated_scale else median
        if centred:  # only the scale is located (none when it is stated)
            median = 0.0
        miss = _miss(n, median, spread)
        notes = _miss_notes(n, d, epsilon, share, miss, spread or median, stated_scale)
        counts = (1 if complete_rows else d) if count else 0
        per_count = per_column * d / max(counts, 1)
        count_epsilon = _count_epsilon(n, per_count, count_users)
        shared = _count_epsilon(n, per_column, SHARED_USERS, SHARED_SHARES) if spread else 0.0
        moment_share = _moment_share(n, per_column, assumed=assumed) if moment else 0.0
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
            supported=supported,  # bounds or a stated scale: no tail count to floor
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
        *,
        assumed: bool,
    ) -> ReleasePlan:
        """The midpoint by the stable histogram (bins of half-width τ', §7.1.2) at
        :data:`~dplong.privacy.budget.stages.HISTOGRAM_SHARE` of a column's ε and δ/(2d) each, with
        :data:`~dplong.privacy.budget.stages.FALLBACK_SHARE` reserved for a private median should no
        bin survive: spent only then (the choice is a function of the histogram's output), otherwise
        left to the final stage."""
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
            moment_share=_moment_share(n, per_column, assumed=assumed),
            per_column=per_column,
        )

    def for_users(self, users: float, sd: float = 0.0) -> ReleasePlan:
        """The median and refinement stages resized for ``users`` users with a statistic
        instead of n: the private count, which runs first, its noise sd ``sd``. Adaptive
        composition: the stages' sizes are post-processing of the count, and the final stage is
        calibrated on what was actually spent (still within the caps the plan was checked with).
        Only where the count tells its users from n (``users + RESIZE_SDS · sd < n``): a
        complete column's count is below n in half its draws, and resized on that noise alone
        the stages took from the final one (:data:`~dplong.privacy.budget.stages.RESIZE_SDS`;
        docs/design/budget.md).

        Examples
        --------
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=1000, d=1, epsilon=4.0, delta=1e-6, stated_scale=False)
        >>> plan.midpoint, plan.for_users(150.0).midpoint
        (0.16, 0.5333333333333333)
        >>> plan.for_users(870.0, sd=35.0) is plan  # within 4 sds of n: the plan for n
        True
        """
        if self.midpoint_kind not in ("median", "public") or users + RESIZE_SDS * sd >= self.n:
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
        # whether the scale's check runs: its median's miss bound at the count's low end (two
        # sds down), where the withholding rule reads a miss (a count drawn high would plan no
        # check for a median over fewer users than counted)
        low = max(int(users - 2.0 * sd), 1)
        inside = (
            max(self.inside, _inside_epsilon(found, column, _miss(low, midpoint, spread)))
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

    def for_columns(self, users: NDArray[np.float64], sd: float) -> ReleasePlan:
        """The stages sized for each column's ``users`` (a private count per column, noise sd
        ``sd``): a column few users have no longer sizes every other's medians at their caps,
        which left a well-populated column too little for the second median a shared value
        needs (a 0/1 level of 1,800 users beside one of 118 was withheld in most releases;
        docs/accuracy.md). The column with the fewest users found (at least
        ``max(2, 2 sd)``; the others take its sizes) decides which stages run, as
        :meth:`for_users` decides them for it; every column runs those, each sized for its own
        users: its medians as :meth:`for_users` sizes them, the midpoint's and the scale's
        checks as counts of its users, a refinement at its own share (or the fewest's, where
        its own would skip it). So no column spends more than the fewest's on any stage, and
        the refusals checked at those sizes hold. One plan where the sizes agree; else the
        fewest's plan with each column's own in :attr:`columns`. Post-processing of the count.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=3000, d=2, epsilon=4.0, delta=1e-6, stated_scale=False,
        ...                         complete_rows=False)
        >>> sized = plan.for_columns(np.array([1800.0, 118.0]), sd=2.0)
        >>> [round(p.midpoint, 3) for p in sized.columns], sized.midpoint
        ([0.08, 0.6], 0.6)
        >>> plan.for_columns(np.array([118.0, 119.0]), sd=2.0).columns
        ()
        """
        found = users >= max(2.0, 2.0 * sd)
        if not found.any():
            return self
        fewest = self.for_users(float(users[found].min()), sd)
        if fewest is self:
            return self
        sized = tuple(
            self._sized_like(fewest, float(u), sd) if f else fewest
            for u, f in zip(users, found, strict=True)
        )
        return fewest if len(set(sized)) == 1 else dataclasses.replace(fewest, columns=sized)

    def _sized_like(self, fewest: ReleasePlan, users: float, sd: float) -> ReleasePlan:
        """:meth:`for_columns`' plan of one column of ``users`` users: the stages ``fewest``
        runs, sized for them."""
        own = self.for_users(users, sd)
        column, found = self.per_column, max(int(users), 1)
        side = (
            max(own.side, _count_epsilon(found, column, SIDE_USERS, SIDE_SHARES))
            if fewest.side
            else 0.0
        )
        inside = (
            max(own.inside, _count_epsilon(found, column, INSIDE_USERS, INSIDE_SHARES))
            if fewest.inside
            else 0.0
        )
        refine = (own.refine or fewest.refine) if fewest.refine else 0.0
        return dataclasses.replace(
            fewest,
            midpoint=min(own.midpoint, fewest.midpoint),
            spread=min(own.spread, fewest.spread),
            side=min(side, fewest.side),
            inside=min(inside, fewest.inside),
            refine=min(refine, fewest.refine),
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
        plans = self.columns or (self,) * counts.size
        return np.array(
            [_miss(int(u), p.midpoint, p.spread) for u, p in zip(counts.flat, plans, strict=True)]
        )

    def doomed(self) -> bool:
        """Whether every column's medians miss more likely than not (above
        :data:`~dplong.privacy.budget.DOUBT_MISS`) however many users the count finds, so that
        the release withholds every column (the plausibility rule,
        :func:`~dplong.privacy.engine.implausible`): at n, and with fewer users where the
        stages, already at their caps, cannot grow (:meth:`for_users`). Public facts only.

        Examples
        --------
        >>> from dplong.privacy.budget import ReleasePlan
        >>> ReleasePlan.make(n=72, d=12, epsilon=16.0, delta=1e-4, stated_scale=False).doomed()
        True
        >>> ReleasePlan.make(n=72, d=1, epsilon=16.0, delta=1e-4, stated_scale=False).doomed()
        False
        """
        at_n = _miss(self.n, self.midpoint, self.spread)
        if self.midpoint_kind != "median" or at_n <= DOUBT_MISS:
            return False
        fewer = self.for_users(1.0)
        return (fewer.midpoint, fewer.spread) == (self.midpoint, self.spread)

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
        """ε of the check of each second median (:meth:`second_spread`) over ``users`` users off the
        shared value (a private count's low end): a signed count as the midpoint's check is, sized
        as it is for them (ε·users of :data:`~dplong.privacy.budget.stages.SIDE_USERS` within
        :data:`~dplong.privacy.budget.stages.SIDE_SHARES` of the column's ε), taken from the final
        stage, which keeps at least a quarter of what the stages before it leave (the median took at
        most half).

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
        """The scale stage's ε in a column whose midpoint is 0:
        :data:`~dplong.privacy.budget.stages.ZERO_COUNT_SHARE` of it counts the users off 0, the
        median over them gets the rest.

        Examples
        --------
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
        >>> plan.spread, plan.zero_split()
        (0.04, (0.01, 0.03))
        """
        return ZERO_COUNT_SHARE * self.spread, (1.0 - ZERO_COUNT_SHARE) * self.spread

    def zero_count(self, users: float) -> tuple[float, float]:
        """ε of the scale stage's count of the users off 0 in a column whose midpoint is 0, for
        ``users`` users with a statistic (a private count), and the ε the final stage gives up
        for it (:attr:`reruns`): ``N̂ ε`` of
        :data:`~dplong.privacy.budget.stages.ZERO_COUNT_USERS` users, at most a quarter of what
        the stages before the final one leave a column, and never less than its share of the
        stage (:meth:`zero_split`). Where it takes more than that share, the final stage gives
        up the whole count, and the stage's ε covers the median: a count at the share plus the
        rest composes below one at the whole under Rényi composition only while the rest is at
        most the median's share (one mechanism at ``a + b`` costs ``(a + b)² / 2`` in zCDP, two
        ``(a² + b²) / 2``).

        Examples
        --------
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
        >>> [round(e, 4) for e in plan.zero_count(2000.0)], plan.zero_count(100_000.0)
        ([0.0375, 0.0375], (0.01, 0.0))
        """
        own = self.zero_split()[0]
        count = max(own, self._final_count(ZERO_COUNT_USERS, users))
        return count, count if count > own else 0.0

    def seat_count(self, users: float) -> float:
        """ε of the scale stage's count of the users in the scale's cell, where it found a
        column's users alone at one or two values, for ``users`` users with a statistic (a
        private count), all of it from the final stage (:attr:`reruns`): ``N̂ ε`` of
        :data:`~dplong.privacy.budget.stages.SEAT_USERS` users, at most a quarter of what the
        stages before the final one leave a column.

        Examples
        --------
        >>> from dplong.privacy.budget import ReleasePlan
        >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
        >>> plan.seat_count(2000.0)
        0.01
        """
        return self._final_count(SEAT_USERS, users)

    def _final_count(self, worth: float, users: float) -> float:
        """ε of a count of ``worth`` users' worth for ``users`` users (``N̂ ε = worth``), at most
        a quarter of what the stages before the final one leave a column, and at least
        :data:`~dplong.privacy.noise.MIN_LATTICE_EPSILON`: below it the lattice noise is not
        float-safe (tens of millions of users asked for less, and the count raised)."""
        wanted = max(worth / max(users, 1.0), MIN_LATTICE_EPSILON)
        return min(wanted, max(self._left(), 0.0) / 4.0)

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
        # the medians are bounded-range (the exponential mechanism): the midpoint's where it is
        # one, the fallback's, and the scale stage's, where a column whose midpoint is 0 splits
        # it into a count and a median over the users off 0 (``zero_split``), which compose
        # below the one median planned while the stage's ε is at most ZERO_SPLIT_BOUNDED
        columns = (
            [c for plan in self.columns for c in plan._column_costs(refine, fallback)]
            if self.columns
            else self._column_costs(refine, fallback) * self.d
        )
        return [
            *self.prior,
            *columns,
            *(Cost(epsilon=e) for e in self.reruns),
            *([Cost(epsilon=self.count)] * self.counts),
        ]

    def _column_costs(self, refine: bool, fallback: bool) -> list[Cost]:
        """The costs of one column's calls before the final stage (:meth:`early_costs`)."""
        median = self.midpoint_kind == "median"
        first = Cost(epsilon=self.midpoint, delta=self.midpoint_delta, bounded=median)
        spread = Cost(epsilon=self.spread, bounded=self.spread <= ZERO_SPLIT_BOUNDED)
        costs = ([first] if self.midpoint else []) + ([spread] if self.spread else [])
        if self.shared:
            costs.append(Cost(epsilon=self.shared))
        if self.side:
            costs.append(Cost(epsilon=self.side))
        if self.inside:
            costs.append(Cost(epsilon=self.inside))
        if fallback:
            costs.append(Cost(epsilon=self.fallback, bounded=True))
        if refine and self.refine:
            costs.append(Cost(epsilon=self.refine))
        return costs

    def early_epsilon(self) -> float:
        """ε spent before the final stage (basic composition)."""
        return sum(c.epsilon for c in self.early_costs())

    def check(self) -> None:
        """Refuse, before any noise, a plan that cannot leave its final stage enough budget."""
        _check(self)

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
        live: NDArray[np.bool_] | None = None,
    ) -> FinalBudget:
        """The final stage's mechanism and budgets for the released radii: Laplace and
        Gaussian are each calibrated and shared by PLAN, and the one whose weighted noise
        variance ``Σ_j f_j Var_j`` is smaller wins (Gaussian only with δ > 0). Only the
        ``live`` columns (default all) get a budget: none where no column is live."""
        live = np.ones(radii.shape, dtype=bool) if live is None else live
        if not live.any():
            return FinalBudget("laplace", np.zeros(self.d), np.zeros(self.d))
        # the shares are scale-free; this keeps the powers finite
        radii = np.where(live, radii, 0.0) / radii[live].max()
        keys = (
            np.ascontiguousarray(v, dtype=dtype).tobytes()
            for v, dtype in ((radii, np.float64), (weights, np.float64), (live, np.bool_))
        )
        return _final_budget(self, *keys, refined, fallback)


@functools.lru_cache(maxsize=256)
def _final_budget(
    plan: ReleasePlan,
    radii_key: bytes,
    weights_key: bytes,
    live_key: bytes,
    refined: bool,
    fallback: bool,
) -> FinalBudget:
    """:meth:`ReleasePlan.final_budget` for normalised radii: a function of the public plan and
    of the radii's ratios, memoised as :meth:`ReleasePlan.calibrate` is (a release asks for it
    in each of its radius rounds, and a one-column release's ratios are always 1)."""
    radii, weights = np.frombuffer(radii_key), np.frombuffer(weights_key)
    live = np.frombuffer(live_key, dtype=np.bool_)
    laplace = plan.calibrate(
        share_weights((weights * radii**2) ** (1.0 / 3.0), live),
        "laplace",
        refined=refined,
        fallback=fallback,
    )
    best = laplace
    if plan.delta > 0.0:
        gaussian = plan.calibrate(
            share_weights(np.sqrt(weights) * radii, live),
            "gaussian",
            refined=refined,
            fallback=fallback,
        )
        if _weighted_variance(gaussian, radii, weights) < _weighted_variance(
            laplace, radii, weights
        ):
            best = gaussian
    return best


@functools.lru_cache(maxsize=256)
def _check(plan: ReleasePlan) -> None:
    """:meth:`ReleasePlan.check`, memoised (a refusal raises each time: it is not cached)."""
    weakest = min(  # the stages at their largest (:meth:`for_users`) leave the least
        float(
            stage.calibrate(
                np.full(plan.d, 1.0 / plan.d), "laplace", fallback=plan.fallback > 0
            ).epsilon.min()
        )
        for stage in (plan, plan.for_users(1.0))
    )
    if weakest / 2.0 < MIN_LATTICE_EPSILON or (
        plan.early_epsilon() >= plan.epsilon and plan.delta == 0.0
    ):
        refusal = PrivacyParameterError(
            f"epsilon={plan.epsilon:.3g} is too small for {plan.d} column(s) with n={plan.n}: "
            "the final stage would get (almost) nothing after the midpoint and scale: "
            "fewer columns or a larger epsilon would help"
        )
        refusal.budget_refusal = True
        raise refusal
    if plan.midpoint_kind == "bounds" and plan.counts:
        # every column is withheld where its count cannot tell n users from none
        # (Location.empty: below max(2, 3 sds)): refused first (the planner names the ε)
        sd = count_sd(plan.count)
        if plan.n < max(2.0, 3.0 * sd):
            refusal = PrivacyParameterError(
                f"epsilon={plan.epsilon:.3g} is too small for n={plan.n} users with public "
                f"bounds: the count of the users with a value (noise sd {sd:.3g}) could not tell "
                "them from none, and every column would be withheld"
            )
            refusal.budget_refusal = True
            raise refusal
