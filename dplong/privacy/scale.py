"""Stage 3 of the engine: each column's private scale, with zeros and shared values set aside.

The scale σ̂_j is the private median of ``|x - m̂_j|`` on a public log grid
(:func:`scale_stage`). Users at exactly 0 never pull it down; where the midpoint is the cell of
0 a count of the users off 0 sets them aside, and where most users share one other value a
count of the users off its cell does (:func:`_shared`), a second median then measuring the
others alone and its own check (:func:`~dplong.privacy.counts.band_check`) guarding its miss.
What the counts found is a :class:`ScaleScan`. Under the chi-square tail with a support's end
the scale keeps a share of the spread its median implies (:func:`square_spread`). The rationale
and the derivations are in ``docs/design/engine.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import MAX_MISS, NOTE_MISS, ReleasePlan
from dplong.privacy.counts import SHARED_BELOW, band_check, lattice_count
from dplong.privacy.noise import geometric_rate, two_sided_geometric_variance
from dplong.privacy.quantile import (
    GRID,
    SPREAD_GRID,
    median_entries,
    miss_probability,
    private_median,
)
from dplong.privacy.radius import MAD_OVER_SD, SUPPORT_SPREAD

__all__ = [
    "IMPLIED_SHARE",
    "SHARED_SHARE",
    "ZERO_CELL",
    "ScaleScan",
    "scale_stage",
    "square_spread",
]

#: What the midpoint reports when more than about half the users are exactly 0: the grid
#: cell ``[0, 2**-1022)``.
ZERO_CELL = float(GRID.centres[GRID.zero])

#: A column where the private count finds fewer than ``1 - SHARED_SHARE`` of its users off the
#: scale's cell (and the cells far inside it, below
#: :data:`~dplong.privacy.counts.SHARED_BELOW` of its lower edge) has most users at one
#: value: its scale is measured again on the others (:func:`_shared`).
SHARED_SHARE = 0.3
#: The miss bound of the first scale median over the users a count found off 0 above which a
#: second one runs where the final stage affords it (:func:`scale_stage`).
RERUN_MISS = 0.1
#: Share of the spread a chi-square square's median implies that its scale keeps at least
#: (:func:`square_spread`): a third, 1.04 times the median above the support's end.
IMPLIED_SHARE = 1.0 / 3.0

#: The plausibility rule's far scale (:func:`far_above`): ``FAR_OUT`` times the midpoint's
#: magnitude or more and beyond ``ALONE_REACH`` times what a value shared at the midpoint could
#: give (the midpoint cell's half-width over the normal MAD factor; up to 2.3 times that for
#: the chi-square model of squares): where the users share one value, the scale's median
#: missed far above every user (they sit far inside its cell, 8 = 1 / SHARED_BELOW times below
#: it or more).
ALONE_REACH, FAR_OUT = 3.0, 8.0


def far_above(midpoint: NDArray[np.float64], sd: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Where a scale ``sd`` about ``midpoint`` lies far above what a value shared at the
    midpoint could give (:data:`ALONE_REACH`, :data:`FAR_OUT`): in a column whose users the
    scale stage found at one value (:attr:`ScaleScan.vacant`), the scale's median's miss
    (:func:`~dplong.privacy.engine.implausible`). Post-processing of released numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.scale import far_above
    >>> far_above(np.array([0.5, 0.5, 80.0]), np.array([1e60, 1e-4, 15.0])).tolist()
    [True, False, False]
    """
    with np.errstate(over="ignore", invalid="ignore"):
        wide = ~(sd <= ALONE_REACH * GRID.half_width_at(midpoint) / MAD_OVER_SD["gaussian"])
        above = ~(sd < FAR_OUT * np.abs(midpoint))
    return np.asarray(wide & above)


@dataclass(frozen=True)
class ScaleScan:
    """What the scale stage found (:func:`scale_stage`, :func:`_shared`), by post-processing of its
    private counts, per column: where too few users are off the value most of them share (0 or
    another) for a private scale of them (``sparse``: withheld); columns of mostly zeros whose
    count sees no others (``unseen``: taken as 0); columns of mostly one other value whose count
    sees no others (``alone``: the interval is sized on that value); columns whose scale was
    measured on the users off their shared value (``shared``); and how many users each count
    could miss (``reach``, three sds of its noise; 0 where none ran); ``off_zero`` the released
    count of the users off 0 where the midpoint is 0 (NaN elsewhere); ``reruns`` the ε the
    final stage gives up: each count off 0 it pays for, each second median and check, and each
    count in the scale's cell (``seated``, below); ``strayed`` the ``shared`` columns whose
    second median's check found it missed the users off the value, and the columns whose first
    median over the users off 0 was kept with a risky miss bound and whose check found the same
    (:func:`~dplong.privacy.counts.band_check`: withheld, as the scale's check withholds a first
    median's miss); ``seated`` the ``alone`` columns whose count of the users in the scale's
    cell finds some there (:func:`_seated`).

    Examples
    --------
    A column nobody is off 0 in is taken as 0, and the release says so (``Release.unseen``):

    >>> import numpy as np
    >>> from dplong.privacy.engine import release_means
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(500, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> res = release_means(np.zeros((500, 1)), names=("events",), options=options,
    ...                     rng=np.random.default_rng(0))
    >>> float(res.estimate[0]), res.unseen.tolist(), "sees no others" in res.notes[-1]
    (0.0, [True], True)
    """

    sparse: NDArray[np.bool_]
    unseen: NDArray[np.bool_]
    alone: NDArray[np.bool_]
    shared: NDArray[np.bool_]
    reach: NDArray[np.float64]
    off_zero: NDArray[np.float64]
    reruns: tuple[float, ...] = ()
    strayed: NDArray[np.bool_] | None = None
    seated: NDArray[np.bool_] | None = None

    @property
    def vacant(self) -> NDArray[np.bool_]:
        """The ``alone`` columns whose scale's cell no count found users in (``seated``): the
        users share one value, or the scale's median missed far above them all (the plausibility
        rule, :func:`~dplong.privacy.engine.implausible`, tells these apart by the scale's size);
        a seated one has a second value at the scale's distance.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.scale import ScaleScan
        >>> no, yes = np.zeros(2, dtype=bool), np.ones(2, dtype=bool)
        >>> scan = ScaleScan(no, no, yes, yes, np.zeros(2), np.full(2, np.nan),
        ...                  seated=np.array([True, False]))
        >>> scan.vacant.tolist()
        [False, True]
        """
        return self.alone if self.seated is None else np.asarray(self.alone & ~self.seated)


def scale_stage(
    distance: NDArray[np.float64],
    matrix: NDArray[np.float64],
    midpoint: NDArray[np.float64],
    plan: ReleasePlan,
    users: NDArray[np.float64],
    users_sd: float,
    names: tuple[str, ...],
    gamma: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], ScaleScan, list[LedgerEntry]]:
    """Stage 3: each column's private median of ``distance = |x - m̂|`` (possibly weighted,
    :func:`~dplong.privacy.locate.locate`) at ``plan.spread`` each, then :func:`_shared` on the
    columns whose midpoint is not 0; returns the medians, what was found (:class:`ScaleScan`) and
    the ledger entries. ``users`` is the private count of users with a statistic per column (n when
    weighted).

    Users whose statistic is exactly 0 never pull the median down. With many of them (event
    rates most users never have, products of regressors most users never change) the median
    of ``|x - m̂|`` would otherwise sit at their common distance to a midpoint at or near 0,
    whatever the others do: the interval would collapse onto 0 and clip every other user to
    it, and no error bound would show it. So a zero counts above the cells below its distance
    (pushing the median up to it, as when the zeros are the spread: a midpoint far from 0) and
    not below the cells above it (a weighted utility, :func:`private_median`); without zeros it
    is the plain median. In a column whose midpoint is the cell of 0, more than about half the
    users are at 0 and the others may be too few to find: there the zeros are set aside, a share
    of ε counts the users off 0 (the lattice Laplace count, sensitivity 1) and the rest is the
    median over them (:meth:`~dplong.privacy.budget.ReleasePlan.zero_split`; where that share
    buys too little, the final stage pays for the count,
    :meth:`~dplong.privacy.budget.ReleasePlan.zero_count`). Then, by
    post-processing of that count: fewer than the count can tell from none (``max(2, 3 sd)``)
    and the column is taken to be 0 (the spread's floor, as a constant column gets; the release
    says so); plausibly fewer than the n users (``K̂ + 2 sd < n``) and so few that the median
    over them all but surely misses them (:func:`_too_few`): a second median over them, sized
    for K̂ users from the final stage (:meth:`~dplong.privacy.budget.ReleasePlan.second_spread`,
    recorded in ``scan.reruns`` as for a shared value), where its own miss bound is below
    :data:`~dplong.privacy.budget.NOTE_MISS`; else the column's scale is not found (its mean is
    withheld). A first median kept where its miss bound over them exceeds :data:`RERUN_MISS`
    gets the check a second median off a shared value gets
    (:func:`~dplong.privacy.counts.band_check` over the users off 0, from the final stage):
    where it finds them outside its band, the column is ``strayed`` (withheld). Each user's
    part in each mechanism depends on its own value and the released midpoint only, and the
    count's and the median's ε add up to the stage's per column, plus what the final stage
    gives up (a count it pays for, any second median's or check's ε)."""
    n, d = distance.shape
    at_zero = midpoint == ZERO_CELL
    columns = np.flatnonzero(at_zero)
    zero_count, given_up = plan.zero_split()[0], 0.0
    if columns.size:
        # sized for the fewest users with a statistic; where it takes more than its share of
        # the stage, the final stage gives it up (the share is left unspent: a median at the
        # whole stage let the within estimator release rarely changing regressors it cannot
        # clip honestly, union on the wage panel at ε = 16 off by a hundred SEs)
        zero_count, given_up = plan.zero_count(float(np.min(users[columns])))
    median_epsilon = np.where(at_zero, plan.zero_split()[1], plan.spread)
    with np.errstate(invalid="ignore"):
        zero = (matrix >= 0.0) & (matrix < 2.0 * ZERO_CELL)
    # zeros count above the cells below them, never below; where the midpoint is 0, nowhere
    below = np.where(zero, 0.0, 1.0)
    above = np.where(zero & at_zero, 0.0, 1.0)
    deviation = private_median(distance, SPREAD_GRID, median_epsilon, rng, weights=(below, above))
    entries = median_entries("scale", names, median_epsilon)
    sparse, unseen, alone, shared = (np.zeros(d, dtype=bool) for _ in range(4))
    reach, off_zero = np.zeros(d), np.full(d, np.nan)
    strayed, seated = np.zeros(d, dtype=bool), np.zeros(d, dtype=bool)
    zero_reruns: tuple[float, ...] = ()
    if columns.size:
        zero_reruns = (given_up,) * columns.size if given_up > 0.0 else ()
        counted, sd, count_entries = lattice_count(
            np.sum(~np.isnan(distance[:, columns]) & ~zero[:, columns], axis=0),
            zero_count,
            "scale",
            "lattice Laplace count of users off 0",
            tuple(names[j] for j in columns),
            rng,
        )
        entries += count_entries
        off_zero[columns] = counted
        reach[columns] = max(2.0, 3.0 * sd)  # a count of none exceeds it w.p. 0.7 %
        unseen[columns] = counted < reach[columns]
        # where some users plausibly are at 0 (or have no statistic): a column without zeros
        # keeps the plan's own verdict
        some = counted + 2.0 * sd < n
        # too few for the first median: a second one, sized for them as the plan sizes its
        # medians for N̂ (for_users), its ε from the final stage, where it all but surely finds
        # them (the plan's note threshold, as the count decides before it runs; with a hundred
        # users off 0 it could pick a cell of the fine grid far below them and the interval
        # collapse without a note: 95 % of 2,000 users at 0, ε = 1). Only there: the first
        # one's miss bound is conservative, and where it held a second cost the final stage
        # more than it gained (20,000 users, 90 % at 0, ε = 1: MSE 1.2 → 1.4 of the sampling's)
        with np.errstate(divide="ignore"):  # a column no user was counted in: no share
            second = plan.second_spread(np.maximum(counted, 1.0) / users[columns])
        short = ~unseen[columns] & some & _too_few(counted, sd, median_epsilon[columns])
        risky = ~unseen[columns] & some & _too_few(counted, sd, median_epsilon[columns], RERUN_MISS)
        again = (
            risky & (second > median_epsilon[columns]) & ~_too_few(counted, sd, second, NOTE_MISS)
        )
        if again.any():
            rerun = columns[again]
            deviation[rerun] = private_median(
                distance[:, rerun],
                SPREAD_GRID,
                second[again],
                rng,
                weights=(below[:, rerun], above[:, rerun]),
            )
            entries += median_entries("scale", tuple(names[j] for j in rerun), second[again])
            zero_reruns += tuple(second[again].tolist())
        sparse[columns] = short & ~again
        # a first median kept where its miss bound given the count is above RERUN_MISS: the
        # users at 0 sit at the midpoint, so the scale's check does not apply and no released
        # number would tell its miss (rarely changing regressors' cross products on the wage
        # panel at ε = 16: a scale of 5e-151 under 259 users off 0, 229 of them clipped to it,
        # the interval 2 SEs off with no note). Its own check, as a second median off a shared
        # value gets (:func:`_shared`); where it finds them outside its band, withheld
        kept = risky & ~again & ~short
        if kept.any():
            checked = columns[kept]
            strayed[checked], checks, check_entries = _checked(
                distance[:, checked],
                ~np.isnan(distance[:, checked]) & ~zero[:, checked],
                deviation[checked],
                counted[kept] - 2.0 * sd,
                plan,
                tuple(names[j] for j in checked),
                gamma,
                rng,
            )
            entries += check_entries
            zero_reruns += checks
        # taken as 0: the floor (and for a withheld column, whose median is of too few users to
        # mean anything)
        deviation[unseen | sparse] = 0.0
    others = np.flatnonzero(~at_zero)
    reruns: tuple[float, ...] = ()
    if others.size and plan.shared:
        (
            deviation[others],
            alone[others],
            sparse[others],
            shared[others],
            strayed[others],
            seated[others],
            reach[others],
            reruns,
            shared_entries,
        ) = _shared(
            distance[:, others],
            midpoint[others],
            deviation[others],
            below[:, others],
            plan,
            users[others],
            users_sd,
            tuple(names[j] for j in others),
            gamma,
            rng,
        )
        entries += shared_entries
    scan = ScaleScan(
        sparse, unseen, alone, shared, reach, off_zero, zero_reruns + reruns, strayed, seated
    )
    return deviation, scan, entries


def _shared(
    distance: NDArray[np.float64],
    midpoint: NDArray[np.float64],
    deviation: NDArray[np.float64],
    below: NDArray[np.float64],
    plan: ReleasePlan,
    users: NDArray[np.float64],
    users_sd: float,
    names: tuple[str, ...],
    gamma: float,
    rng: np.random.Generator,
) -> tuple[
    NDArray[np.float64],
    NDArray[np.bool_],
    NDArray[np.bool_],
    NDArray[np.bool_],
    NDArray[np.bool_],
    NDArray[np.bool_],
    float,
    tuple[float, ...],
    list[LedgerEntry],
]:
    """The scale stage where most users share one value other than 0, on the columns whose
    midpoint is not 0 (``distance``, the midpoints, the first medians ``deviation`` and the
    zeros' weights ``below`` of those columns). Returns their scales, where they are
    ``alone``, ``sparse``, ``shared``, ``strayed`` and ``seated`` (below), the count's reach,
    the ε of each second median run, of its check and of each count in the scale's cell, and
    the entries.

    Such a value holds the median of ``|x - m̂|`` at its users' common distance to the
    midpoint, whatever the others do, as zeros would: the interval collapses onto it and clips
    every other user to it, with no error bound that sees it. So after the first median
    released its cell ``c0 = [l, h)``, a lattice Laplace count (sensitivity 1, ``plan.shared``
    each) counts the users off it: with a distance outside ``c0`` and not below
    ``SHARED_BELOW · l`` (a shared value just short of half the users, with the median just
    above it). A continuous column puts ~2 % of its users in one 4.4 % cell, ~15 % with those
    far inside it; a shared value holding half the users or more puts them all there. Clearly
    fewer than ``1 - SHARED_SHARE`` of the users (the private count ``users``, sd ``users_sd``)
    off it, two sds of the noise below, by post-processing of the two counts: most users share
    one value, and the scale is measured again by a private median over the others only (the
    users in ``c0`` or far inside it weigh 0, every other user counts on both sides, a zero
    too: off a value other than 0 its distance is the spread, and with the zeros' one-sided
    weights a median over others who are all 0 had nothing above it to hold it; at
    :meth:`~dplong.privacy.budget.ReleasePlan.second_spread` each, taken from the final stage).
    Where the count sees none off it (below ``max(2, 3 sd)``) the column is (all but) constant
    and keeps ``c0`` (``scan.alone``, with a note saying how many users could go unseen, as for
    zeros; the users in ``c0`` are counted, :func:`_seated`); where the median over those seen
    would all but surely miss them (:func:`_too_few`) the column is withheld (``scan.sparse``).
    A second median over so few users may still miss them (its miss bound given the count is up
    to :data:`~dplong.privacy.budget.MAX_MISS`), far above or below, and no released number
    would tell (most users share a value near the midpoint, so the scale's check,
    :func:`~dplong.privacy.counts.inside_count`, does not apply):
    its own check follows (:func:`~dplong.privacy.counts.band_check`, at
    :meth:`~dplong.privacy.budget.ReleasePlan.second_check`, also from the final stage), and where
    it finds the users off the value outside the median's band the column is withheld (``strayed``).
    Each user's part in the count, the second median and its check depends on its own value and
    released numbers only."""
    cell = np.searchsorted(SPREAD_GRID.centres, deviation)
    low, high = SPREAD_GRID.edges[cell], SPREAD_GRID.edges[cell + 1]
    with np.errstate(invalid="ignore"):  # NaN: no statistic, counted nowhere
        inside = (distance < SHARED_BELOW * low) | ((distance >= low) & (distance < high))
    off = ~np.isnan(distance) & ~inside
    counted, sd, entries = lattice_count(
        off.sum(axis=0), plan.shared, "scale", "lattice Laplace count off the cell", names, rng
    )
    reach = max(2.0, 3.0 * sd)
    # clearly fewer, two sds of the difference's noise: a continuous column wrongly taken for
    # one would pay a second median, and be withheld when the budget cannot afford it
    limit = (1.0 - SHARED_SHARE) * users
    shared = counted + 2.0 * math.hypot(sd, (1.0 - SHARED_SHARE) * users_sd) < limit
    alone = shared & (counted < reach)
    # whether a user sits in the scale's cell decides only where the plausibility rule could
    # take the scale for a miss: at the largest σ̂ any tail model's MAD factor gives it
    with np.errstate(over="ignore"):  # a deviation near the largest double: inf, far above
        suspect = alone & far_above(midpoint, deviation / min(MAD_OVER_SD.values()))
    seated, seats, seat_entries = _seated(distance, (low, high), suspect, plan, users, names, rng)
    entries += seat_entries
    # the median sized for the users off the value, as the plan sizes it for N̂ (for_users)
    with np.errstate(divide="ignore"):  # a column no user was counted in: no share
        second = plan.second_spread(np.maximum(counted, 1.0) / users)
    sparse = shared & ~alone & _too_few(counted, sd, second)
    again = shared & ~alone & ~sparse
    deviation = deviation.copy()
    strayed = np.zeros_like(again)
    reruns: tuple[float, ...] = ()
    if again.any():
        aside = inside[:, again]
        deviation[again] = private_median(
            distance[:, again],
            SPREAD_GRID,
            second[again],
            rng,
            # a share of ones among 2,000 users at 70 %, ε = 1: the zeros' one-sided weights put
            # the median of the others (all at 0) at 1e272 and withheld the mean in 10 of 10
            weights=(np.where(aside, 0.0, 1.0),) * 2,
        )
        chosen = tuple(name for name, a in zip(names, again, strict=True) if a)
        entries += median_entries("scale", chosen, second[again])
        # its check, sized for the users off the value at the low end of their count
        strayed[again], checks, check_entries = _checked(
            distance[:, again],
            off[:, again],
            deviation[again],
            counted[again] - 2.0 * sd,
            plan,
            chosen,
            gamma,
            rng,
        )
        entries += check_entries
        reruns = tuple(second[again].tolist()) + checks
    deviation[sparse] = 0.0  # withheld: a median of the shared value means nothing
    return deviation, alone, sparse, again, strayed, seated, reach, reruns + seats, entries


def _checked(
    distance: NDArray[np.float64],
    off: NDArray[np.bool_],
    deviation: NDArray[np.float64],
    fewest: NDArray[np.float64],
    plan: ReleasePlan,
    names: tuple[str, ...],
    gamma: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.bool_], tuple[float, ...], list[LedgerEntry]]:
    """The check of a scale median over the users ``off`` a shared value (0 or another) whose
    miss no other released number would show (:func:`~dplong.privacy.counts.band_check`, at
    :meth:`~dplong.privacy.budget.ReleasePlan.second_check` for ``fewest`` of them, the low end
    of their private count, from the final stage): where clearly more of them lie outside the
    median ``deviation``'s band than in it, the median missed them (``strayed``). Returns the
    strayed columns, the check's ε per column (for ``reruns``) and its entries."""
    checks = plan.second_check(fewest)
    band, reach, entries = band_check(distance, off, deviation, checks, names, gamma, rng)
    return np.asarray(band >= reach), tuple(checks.tolist()), entries


def _seated(
    distance: NDArray[np.float64],
    cell: tuple[NDArray[np.float64], NDArray[np.float64]],
    suspect: NDArray[np.bool_],
    plan: ReleasePlan,
    users: NDArray[np.float64],
    names: tuple[str, ...],
    rng: np.random.Generator,
) -> tuple[NDArray[np.bool_], tuple[float, ...], list[LedgerEntry]]:
    """Where the count off the scale's cell ``c0 = [l, h)`` (``cell``) sees no users and the
    scale lies far above the midpoint (``suspect``: :func:`far_above` at the largest σ̂ any
    tail model gives), a lattice Laplace count of the users whose distance lies in ``c0``
    (sensitivity 1, at :meth:`~dplong.privacy.budget.ReleasePlan.seat_count` for the fewest
    users with a statistic, from the final stage): at least ``max(2, 3 sd)`` of them say the
    cell holds users (``seated``), the distance of a second value, as where users sit at 0 and
    1 and the midpoint fell among the cells between them; a scale's median that missed far
    above every user has none there. Returns the seated columns, the count's ε once per
    column counted (for ``reruns``) and its entries. Each user's part depends on its own value
    and released numbers only."""
    seated = np.zeros_like(suspect)
    if not suspect.any():
        return seated, (), []
    low, high = cell
    columns = np.flatnonzero(suspect)
    fewest = float(np.min(users[columns]))
    epsilon = plan.seat_count(fewest)
    # where the stages before leave it too little to tell half the users from none (many
    # columns at a small n ε: its cap binds), it would only spend
    sd = math.sqrt(float(two_sided_geometric_variance(geometric_rate(epsilon, 1.0))))
    if max(2.0, 3.0 * sd) >= 0.5 * fewest:
        return seated, (), []
    with np.errstate(invalid="ignore"):  # NaN: no statistic, in no cell
        inside = (distance[:, columns] >= low[columns]) & (distance[:, columns] < high[columns])
    counted, sd, entries = lattice_count(
        inside.sum(axis=0),
        epsilon,
        "scale",
        "lattice Laplace count in the scale's cell",
        tuple(names[j] for j in columns),
        rng,
    )
    seated[columns] = counted >= max(2.0, 3.0 * sd)
    return seated, (epsilon,) * columns.size, entries


def _too_few(
    counted: NDArray[np.float64],
    sd: float,
    epsilon: NDArray[np.float64],
    limit: float = MAX_MISS,
) -> NDArray[np.bool_]:
    """Where a private median at ``epsilon`` over ``counted`` users (a private count of noise
    sd ``sd``), 2 sds fewer of them, all but surely misses them: the plan's own rule for the
    count of users with a statistic (its miss bound above :data:`~dplong.privacy.budget.MAX_MISS`;
    or above another ``limit``)."""
    cells = len(SPREAD_GRID)
    return np.array(
        [
            miss_probability(cells, float(e), float(k - 2.0 * sd)) > limit
            for k, e in zip(counted, epsilon, strict=True)
        ],
        dtype=bool,
    )


def square_spread(
    sd: NDArray[np.float64],
    midpoint: NDArray[np.float64],
    kinds: NDArray[np.str_],
    lower: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The scale of a column under the chi-square tail with a support's end: at least
    :data:`IMPLIED_SHARE` of the sd its median implies. Under the model ``lower + v χ²₁`` (the
    square of a normal deviation) the sd is ``√2 v`` and the median ``0.455 v`` above
    ``lower`` (:data:`~dplong.privacy.radius.SUPPORT_SPREAD`), and the MAD-based σ̂ agrees
    with it. A σ̂ far below says users sharing a value held the median deviation, not that the
    tail is light: the wage panel's ``Z'Z[expersq,expersq]`` is a lattice with 55 % of the men
    at one value, and in a fifth of the fits at ε = 4 σ̂ was 0.1-3 for a median of 48 and an
    sd of 120. The interval then sat on that value and clipped half the men (the design 40-55 %
    low, a bias bound of 0.01-0.2, slopes 3-7 SEs off), where a count of the users off it
    could not tell (its noise sd of 80 users at this ε). A third, about the median itself,
    leaves the lighter tails of per-degree-of-freedom squares over several rows alone (their
    MAD-based σ̂ is 0.9-1.3 times the median in simulations; a half cost two correlated
    regressors 19 % in MSE, a third 6 %; the whole implied spread gave a light-tailed square,
    hours' on the wage panel, an interval 15 times its mean). Applied in the scale stage
    (:func:`~dplong.privacy.locate.locate`), so that the centre's error bound and the refinement see
    it. Post-processing of the released midpoint and scale."""
    implied = np.array([SUPPORT_SPREAD.get(str(k), 0.0) for k in kinds])
    with np.errstate(invalid="ignore"):  # a NaN midpoint (no data) keeps its NaN scale
        floor = np.where(np.isfinite(lower), IMPLIED_SHARE * implied * (midpoint - lower), 0.0)
        return np.asarray(np.fmax(sd, floor))
