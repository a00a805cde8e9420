"""Stages 1-4 of the engine: count, midpoint, scale and refinement (:func:`locate`).

:func:`locate` runs the stages of a :class:`~dplong.privacy.budget.ReleasePlan` before the
final one under the release's :class:`~dplong.privacy.rules.Rules`: the private count of users
with a statistic, the midpoint (a private median on a public log grid, Alg 3's stable histogram
for the paper's plan, or a public centre) and its check, the scale stage
(:mod:`dplong.privacy.scale`) and the scale's check, and the refinement (a rough mean on
``m̂ ± w₁``, Alg 4). What they released is a :class:`Location`: the centre of the final
interval, a bound on its error that fails with probability at most γ, the scale, the count and
the ledger entries. The error allowances are derived in ``docs/design/engine.md``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import ReleasePlan
from dplong.privacy.counts import count_users, inside_count, side_count, side_reach
from dplong.privacy.interval import central_midpoint
from dplong.privacy.noise import release_bounded_sum
from dplong.privacy.notes import alone_notes, sparse_notes, unseen_notes
from dplong.privacy.projection import MAX_RADIUS, centred, mean_entries
from dplong.privacy.quantile import (
    GRID,
    MIDPOINT_REACH,
    SPREAD_GRID,
    median_entries,
    private_median,
    rank_error,
)
from dplong.privacy.radius import (
    MAD_OVER_SD,
    MEDIAN_OFFSET,
    SYMMETRIC,
    Moment,
    Tails,
    bin_radius,
    clipping_bias,
    moment_bias,
    tail_model,
)
from dplong.privacy.rules import Rules, bias_factor, moment_rule, weight_roots
from dplong.privacy.scale import ZERO_CELL, ScaleScan, scale_stage, square_spread

__all__ = [
    "ROUGH_RADIUS",
    "SMALLEST_SCALE",
    "TINY_SCALE",
    "Location",
    "locate",
    "median_error",
    "rough_error",
]

#: Radius of the refinement around the midpoint, in units of σ̂ beyond the midpoint's error.
ROUGH_RADIUS = 4.0

#: A scale below this share of the midpoint's magnitude is below the resolution of the values
#: around it (doubles near m carry 52 bits): the scale's median missed every user.
RESOLUTION = 2.0**-40

#: Smallest spread used: its square stays a normal double (a spread of exactly 0, as for a
#: constant column, would make the radius and the bias bound degenerate).
SMALLEST_SCALE = 2.0**-500
#: A scale within a few times SMALLEST_SCALE (over any tail model's median-to-sd factor): the
#: values' spread is below the engine's resolution (:func:`~dplong.privacy.notes.tiny_notes`).
TINY_SCALE = 8.0 * SMALLEST_SCALE

#: The midpoint's check (:func:`~dplong.privacy.counts.side_count`) finds it beside the users where,
#: even at the low
#: end of its noise, this share of them more lie on one side of its cell than on the other (85 %
#: or more on one side; half of them where the scale stage also finds them all at one distance,
#: ``ScaleScan.alone``). A median's cell has at most half on each side (users in it count on
#: neither), so this is a median 35 percentiles off or more: typically one that missed them all
#: (every user on one side; its scale then measured the distance, which no other released
#: number shows). The bar is read at the ``BESIDE_GAMMA`` quantile of the count's noise. (At
#: half without the scale stage's verdict, a third of the wage panel's per-man intercepts at
#: ε = 4 were withheld: medians at the 10th percentile, whose scale had widened to hold them.)
BESIDE_SHARE, BESIDE_GAMMA = 0.7, 0.2


def _at_own_magnitude(
    deviation: NDArray[np.float64], midpoint: NDArray[np.float64]
) -> NDArray[np.bool_]:
    """Where the scale's cell holds the midpoint's own magnitude (released numbers only:
    sensitivity 0). A median that missed users around c by a distance D far beyond c and their
    spread puts every ``|x - m̂|`` within ``|c| + spread`` of D, so the scale's cell holds, or
    borders, the one of ``|m̂| = D ± |c|``; with the midpoint's check finding more than half the
    users on one side (of the private count's low end, two sds down) that is the miss. Users
    whose median distance falls within a cell or two (4.4 % each) of the median's magnitude,
    about a median 25 percentiles off or more (less where the count is noisy next to its
    users: the low end is then a smaller share of them), are withheld too: rare, and the price
    of never printing the miss."""
    cells = np.searchsorted(SPREAD_GRID.edges, np.stack([deviation, np.abs(midpoint)]), "right")
    return np.asarray((np.abs(cells[0] - cells[1]) <= 1) & (deviation > 0.0))


@dataclass(frozen=True)
class Location:
    """What the stages before the final one released (all DP outputs or public facts).

    ``centre`` is where the final interval is centred (the rough mean, or the midpoint when
    the plan has no refinement) and ``centre_error`` a bound on its distance to the mean that
    fails with probability at most γ (:func:`locate`); ``sd`` is the scale used (σ̂ or the
    stated √ρ); ``users`` the private count(s) of users with a statistic; ``plan`` the plan
    as run (its stages resized for the count, :meth:`~dplong.privacy.budget.ReleasePlan.for_users`);
    ``scan`` what the scale stage found (:class:`~dplong.privacy.scale.ScaleScan`; None for a stated
    scale); ``beside`` where the midpoint's check found the midpoint beside (nearly) every user
    (:func:`~dplong.privacy.counts.side_count`; None where no check ran), ``collapsed`` where the
    scale's check found its median below (nearly) every user
    (:func:`~dplong.privacy.counts.inside_count`): those columns are withheld.
    """

    midpoint: NDArray[np.float64]
    centre: NDArray[np.float64]
    centre_error: NDArray[np.float64]
    sd: NDArray[np.float64]
    users: NDArray[np.float64]
    users_sd: float
    refined: bool
    tail: Tails
    entries: tuple[LedgerEntry, ...]
    plan: ReleasePlan
    fallback: bool = False
    scan: ScaleScan | None = None
    beside: NDArray[np.bool_] | None = None
    collapsed: NDArray[np.bool_] | None = None
    #: where the final sum is read from, if not ``centre``: public bounds' rough mean
    anchor: NDArray[np.float64] | None = None

    @property
    def per_column_users(self) -> NDArray[np.float64]:
        """The count behind each column's mean, at least 1 (it divides)."""
        return np.maximum(np.broadcast_to(self.users, self.centre.shape), 1.0)

    @property
    def empty(self) -> NDArray[np.bool_]:
        """Columns whose private count cannot tell any user from none (below ``max(2, 3 sd)``,
        as the scale stage's counts: a count of nobody exceeds it with probability 0.7 %, where
        2 sds let 3 % of them through, to medians over nobody that land anywhere on the grid):
        their mean is not released as a number (NaN), by post-processing of the count."""
        return np.asarray(
            np.broadcast_to(self.users, self.centre.shape) < max(2.0, 3.0 * self.users_sd)
        )

    @property
    def sparse(self) -> NDArray[np.bool_]:
        """Columns the scale stage found too few users off their shared value in for a scale
        (:class:`~dplong.privacy.scale.ScaleScan`): withheld."""
        return np.zeros(self.sd.shape, dtype=bool) if self.scan is None else self.scan.sparse

    @property
    def unresolved(self) -> NDArray[np.bool_]:
        """Columns whose estimated scale is below the resolution of the doubles around the
        midpoint (:data:`RESOLUTION`): no user's distance to it can be that small (the midpoint
        is a cell's centre), so the scale's median missed below every user (a bad event of
        probability at most the plan's miss bound) and an interval sized on it collapses onto
        the midpoint, clipping everyone with a bias bound of 0. Withheld as a miss; none for a
        stated scale."""
        if self.scan is None:
            return np.zeros(self.sd.shape, dtype=bool)
        return np.asarray(self.sd < np.abs(self.midpoint) * RESOLUTION)

    @property
    def doomed(self) -> NDArray[np.bool_]:
        """Columns these stages already withhold: no user found (``empty``), too few off a
        shared value (``sparse``), a scale below the values' resolution (``unresolved``), a
        midpoint beside the users (``beside``) or a scale below them (``collapsed``). Released
        facts, so a later stage may leave them out: the tail count, where a collapsed
        interval would put every user beyond its rung and mark the other columns heavy."""
        doomed = self.empty | self.sparse | self.unresolved
        for flag in (self.beside, self.collapsed):
            if flag is not None:
                doomed = doomed | flag
        return np.asarray(doomed)

    def scale_notes(
        self, names: tuple[str, ...], *, sparse: NDArray[np.bool_], shown: NDArray[np.bool_]
    ) -> tuple[str, ...]:
        """The scale stage's notes: on the ``sparse`` columns (withheld), and on the columns
        ``shown`` as numbers that its counts found alone at one value or unseen off 0. Every
        caller of :func:`locate` adds them to its results."""
        if self.scan is None:
            return ()
        return (
            sparse_notes(names, sparse)
            + unseen_notes(names, self.scan.unseen & shown, self.scan)
            + alone_notes(names, self.scan.alone & shown, self.scan)
        )


def locate(
    matrix: NDArray[np.float64],
    *,
    plan: ReleasePlan,
    names: tuple[str, ...],
    rng: np.random.Generator,
    gamma: float,
    rules: Rules = Rules(),
) -> Location:
    """Stages 1-4 of the module docstring: count, midpoint, scale and refinement, under the
    release's :class:`~dplong.privacy.rules.Rules`. With public ``bounds`` only the count runs: the
    centre is the bounds' midpoint, exact (and where the plan has a rough mean, the sum's anchor
    is that mean). With
    ``user_weights`` the scale and refinement work on
    standardised deviations and the count is the weighted count. An earlier ``count`` is used
    instead of a new one. A ``public_centre`` is the midpoint, and only the scale is located.
    Below the ``lower`` ends the chi-square tail's scale keeps the spread its median implies,
    before the refinement and the centre's error use it. Under a stated moment bound the
    rough mean's clipping bias is the moment's (:func:`~dplong.privacy.rules.moment_rule`)."""
    scale, complete_rows, bounds = rules.scale, rules.complete_rows, rules.bounds
    count = rules.count
    n, d = matrix.shape
    entries: list[LedgerEntry] = []
    root = weight_roots(rules.user_weights)

    def counted() -> tuple[NDArray[np.float64], float, list[LedgerEntry]]:
        if count is not None:
            return count.users, count.sd, []
        return count_users(matrix, plan, names, complete_rows, rng, root)

    if bounds is not None:
        users, users_sd, count_entries = counted()
        low, high = bounds
        centre = (low + high) / 2.0
        sd = np.sqrt(scale) if scale is not None else (high - low) / 2.0
        bounded = Location(
            centre,
            centre,
            np.zeros(d),
            sd,
            users,
            users_sd,
            False,
            "sub-gaussian",
            tuple(count_entries),
            plan,
        )
        if plan.refine <= 0:
            return bounded
        # a rough mean to read the sum from: the count's error then multiplies its error, not
        # the mean's distance from the bounds' middle (:data:`BOUNDED_ROUGH_SHARE`)
        half = (high - low) / 2.0
        rough = release_bounded_sum(
            centred(matrix, centre, half, root), half, np.full(d, plan.refine), rng
        )
        offset = np.clip(rough.total / bounded.per_column_users, -half, half)
        return dataclasses.replace(
            bounded,
            entries=(
                *count_entries,
                *mean_entries("refinement", names, plan.refine, 0.0, rough, n),
            ),
            anchor=centre + offset,
        )
    # the count first: how many users the later stages can find is read from it
    if plan.counts or count is not None:
        users, users_sd, count_entries = counted()
        entries += count_entries
        # the stages sized for the users each column has (post-processing of N̂), where the
        # count tells them from n (ReleasePlan.for_columns)
        if root is None:  # a weighted count is no count of users
            plan = plan.for_columns(np.broadcast_to(users, (d,)).astype(np.float64), users_sd)
    else:  # n divides: users without a statistic contribute the centre (the paper's rule)
        users, users_sd = np.array([float(n)]), 0.0
    return _located(matrix, plan, names, users, users_sd, entries, rules, gamma, rng)


def _joined(parts: list[tuple[NDArray[np.intp], Any]], d: int, **given: Any) -> Any:
    """One record of ``d`` columns from ``parts`` (each the same dataclass over the columns
    given with it): per-column arrays put in their columns (a part without one: False or 0),
    tuples joined, flags true where any part's is; the ``given`` fields as given."""
    first = parts[0][1]
    values = dict(given)
    for field in dataclasses.fields(first):
        if field.name in given:
            continue
        got = [getattr(part, field.name) for _, part in parts]
        arrays = [value for value in got if isinstance(value, np.ndarray)]
        if arrays:
            joined = np.zeros(d, dtype=arrays[0].dtype)
            for (columns, _), value in zip(parts, got, strict=True):
                if value is not None:
                    joined[columns] = value
            values[field.name] = joined
        elif isinstance(got[0], tuple):
            values[field.name] = tuple(item for value in got for item in value)
        elif isinstance(got[0], bool):
            values[field.name] = any(got)
    return dataclasses.replace(first, **values)


def _located(
    matrix: NDArray[np.float64],
    plan: ReleasePlan,
    names: tuple[str, ...],
    users: NDArray[np.float64],
    users_sd: float,
    entries: list[LedgerEntry],
    rules: Rules,
    gamma: float,
    rng: np.random.Generator,
) -> Location:
    """:func:`locate`'s stages after the count (``users``, its noise sd ``users_sd``; the
    ledger so far ``entries``): midpoint, scale and refinement, at ``plan``'s sizes. Where the
    count sized the columns' stages apart (:meth:`~dplong.privacy.budget.ReleasePlan.for_columns`)
    the columns sized alike are located together, in the order of their first column, and put
    back in their places, with the plan of every column's own sizes and every part's second
    medians (:attr:`~dplong.privacy.budget.ReleasePlan.reruns`)."""
    if plan.columns:
        d = matrix.shape[1]
        parts = []
        for sized in dict.fromkeys(plan.columns):  # each distinct plan once, in column order
            columns = np.flatnonzero([own == sized for own in plan.columns])
            where = _located(
                matrix[:, columns],
                sized,
                tuple(names[j] for j in columns),
                users if users.size == 1 else users[columns],
                users_sd,
                [],
                rules.of(columns, d),
                gamma,
                rng,
            )
            parts.append((columns, where))
        kinds = np.empty(d, dtype=object)
        for columns, where in parts:
            kinds[columns] = np.broadcast_to(np.asarray(where.tail, dtype=object), columns.shape)
        scans = [(columns, where.scan) for columns, where in parts if where.scan is not None]
        scan = _joined(scans, d) if scans else None
        located: Location = _joined(
            parts,
            d,
            users=users,
            tail=str(kinds[0]) if len(set(kinds)) == 1 else tuple(str(k) for k in kinds),
            entries=(*entries, *(e for _, where in parts for e in where.entries)),
            plan=dataclasses.replace(plan, reruns=() if scan is None else scan.reruns),
            scan=scan,
        )
        return located
    moment = moment_rule(rules)
    scale, user_weights = rules.scale, rules.user_weights
    kind = tail_model(rules.tail)
    tail = None if isinstance(kind, Moment) else kind
    public_centre, lower = rules.public_centre, rules.lower
    n, d = matrix.shape
    entries = list(entries)
    root = weight_roots(user_weights)
    fallback = np.zeros(d, dtype=bool)
    if plan.midpoint_kind == "histogram":
        assert scale is not None  # planned only for a stated scale
        midpoint, fallback, histogram_entries = _histogram_midpoint(
            matrix, bin_radius(scale, gamma), plan, names, rng
        )
        entries += histogram_entries
    elif plan.midpoint_kind == "public":
        assert public_centre is not None  # release_means checks it before any noise
        midpoint = np.asarray(public_centre[0], dtype=float)
    else:
        # with an estimated scale a missed midpoint repairs itself (its miss bound is not the
        # release's) and its rank is measured: there the reach keeps it off the cells below
        # the users' magnitudes (quantile module docstring)
        reach = MIDPOINT_REACH if scale is None else None
        midpoint = private_median(matrix, GRID, np.full(d, plan.midpoint), rng, reach=reach)
        entries += median_entries("midpoint", names, plan.midpoint)
    ranks: NDArray[np.float64] | None = None
    beside: NDArray[np.bool_] | None = None
    collapsed: NDArray[np.bool_] | None = None
    if plan.midpoint_kind == "median" and plan.side:
        # the midpoint's check: how many ranks it is from the middle of the users, measured;
        # it sizes the interval where the plan says so (ReleasePlan.ranked: a second moment
        # measured, or enough users; on tiny panels the worst case's slack is what covers tails
        # heavier than the scale's normal plug-in: dietox's 72 pig means, 85 % covered with it)
        sided, reach, side_entries = side_count(matrix, midpoint, plan.side, names, gamma, rng)
        entries += side_entries
        if plan.ranked:
            ranks = (np.abs(sided) + reach) / 2.0
        # a weighted count is no count of users: n bounds theirs (a public fact)
        among = np.broadcast_to(users if root is None else float(n), (d,))
        # a median's cell has at most half the users on either side (exactly half only when the
        # others share the cell): only the noise's overshoot beyond its BESIDE_GAMMA quantile
        # on the side the count points to could pass the bar then
        reach_low = side_reach(plan.side, 2.0 * BESIDE_GAMMA)
        beside = np.abs(sided) >= BESIDE_SHARE * among + reach_low
        # past half the users, where the scale stage then finds them all at one distance; and
        # past half the count's low end (2 sds down), where they are at the midpoint's own
        # magnitude from it: an overcounted N̂ hid such far misses of a column few users have
        # a statistic in (a level of by=), released at 1e17-1e87 (docs/accuracy.md)
        # (a weighted count's aside_low is never read: its users are never "far", below)
        aside = np.abs(sided) >= 0.5 * among + reach_low
        aside_low = np.abs(sided) >= 0.5 * np.maximum(among - 2.0 * users_sd, 0.0) + reach_low
    if fallback.any():  # no bin survived: the reserved private median locates those columns
        columns = np.flatnonzero(fallback)
        midpoint[columns] = private_median(
            matrix[:, columns], GRID, np.full(columns.size, plan.fallback), rng
        )
        entries += median_entries("midpoint", tuple(names[j] for j in columns), plan.fallback)
    if tail is None:
        tail = "gaussian" if scale is None else "sub-gaussian"
    kinds = np.broadcast_to(np.asarray(tail), (d,))
    if scale is None:
        spread = matrix - midpoint if root is None else root * (matrix - midpoint)
        # the share of users off a shared value is of users, which a weighted count is not: n
        share_users = np.broadcast_to(users if root is None else float(n), (d,))
        share_sd = users_sd if root is None else 0.0
        deviation, scan, scale_entries = scale_stage(
            np.abs(spread), matrix, midpoint, plan, share_users, share_sd, names, gamma, rng
        )
        entries += scale_entries
        plan = dataclasses.replace(plan, reruns=scan.reruns)
        if beside is not None:
            # users alone at one distance, or at the midpoint's own magnitude from it: the
            # midpoint's miss by that distance where its check also finds most users on one side
            # (the second sign needs no count of users off a cell, so it holds where the bar,
            # on an overcounted N̂, was not passed: read at the count's low end); both signs
            # together are the miss whatever the check's noise (users sharing one value lie in
            # the cell of a median that found them, not at its own magnitude from it)
            far = _at_own_magnitude(deviation, midpoint) if root is None else False
            beside = beside | (scan.alone & aside) | (far & aside_low) | (scan.alone & far)
        if plan.inside and plan.midpoint_kind == "median":
            # the scale's check, where the scale stage's own counts found no shared value
            plain = ~(scan.alone | scan.shared | scan.sparse | scan.unseen) & (
                midpoint != ZERO_CELL
            )
            among = np.broadcast_to(users if root is None else float(n), (d,))
            collapsed, inside_entries = inside_count(
                np.abs(spread), deviation, plain, among, plan.inside, names, gamma, rng
            )
            entries += inside_entries
        if scan.strayed is not None:  # a second median's miss, found by its own check
            collapsed = scan.strayed if collapsed is None else collapsed | scan.strayed
        # the median deviation of each column's tail model (a skewed one spreads further)
        factor = np.array([MAD_OVER_SD[k] for k in kinds])
        with np.errstate(over="ignore"):  # a deviation at the doubles' edge: inf, as its scale
            sd = np.maximum(deviation, SMALLEST_SCALE) / factor
        if lower is not None:
            sd = square_spread(sd, midpoint, kinds, lower)
    else:
        sd = np.maximum(np.sqrt(scale), SMALLEST_SCALE)
        scan = None

    per_column_users = np.maximum(np.broadcast_to(users, (d,)), 1.0)
    # with weights the median is of the raw x_u, whose spreads σ_z/√w_u vary; yet Φ(√w t/σ) - ½
    # >= √w (Φ(t/σ) - ½) (concavity) and mean √w_u >= W/N give the same bound as without
    # weights, with σ̂_z and W in place of σ̂ and N (design notes, per-user weights)
    if plan.midpoint_kind == "public":  # the model's bound (a public centre has no rank error)
        assert public_centre is not None
        midpoint_error = np.asarray(public_centre[1], dtype=float)
    else:
        # a median is off the mean of a skewed column by MEDIAN_OFFSET sds, beside its rank
        # error
        midpoint_error = GRID.half_width_at(midpoint) + median_error(
            sd, kinds, plan, gamma, per_column_users, ranks
        )
    if plan.midpoint_kind == "histogram":  # Lemma 3.4: the mode is within 2 bins' half-widths
        histogram_error = 2.0 * bin_radius(sd**2, gamma)
        midpoint_error = np.where(fallback, midpoint_error, histogram_error)
    located = Location(
        midpoint,
        midpoint,
        midpoint_error,
        sd,
        users,
        users_sd,
        False,
        tail,
        tuple(entries),
        plan,
        bool(fallback.any()),
        scan,
        beside,
        collapsed,
    )
    if plan.refine <= 0:
        return located
    # wide enough that an off-centre midpoint costs the rough mean almost no bias: with
    # |m̂ - μ| <= e_m the bias bound below stays small (Gaussian tail, 4σ: 4e-4 σ at e_m = σ)
    with np.errstate(over="ignore"):  # a scale near the largest double: capped
        rough_width = np.minimum(ROUGH_RADIUS * sd + GRID.half_width_at(midpoint), MAX_RADIUS)
    rough = release_bounded_sum(
        centred(matrix, midpoint, rough_width, root), rough_width, np.full(d, plan.refine), rng
    )
    entries += mean_entries("refinement", names, plan.refine, 0.0, rough, n)
    offset = np.clip(rough.total / per_column_users, -rough_width, rough_width)
    count_effect = np.abs(offset) * 3.0 * users_sd / per_column_users
    with np.errstate(over="ignore"):  # a spread far beyond the doubles: an infinite bound
        rough_bias = (
            clipping_bias(sd**2, rough_width, midpoint_error, tail=tail)
            if moment is None
            else moment_bias(moment.bounds(d), moment.k, rough_width, midpoint_error)
        )
        centre_error = (
            rough_error(rough.scale, per_column_users, sd, gamma)
            + count_effect
            + rough_bias * bias_factor(user_weights, per_column_users, n)
        )
    return dataclasses.replace(
        located,
        centre=midpoint + offset,
        centre_error=centre_error,
        refined=True,
        entries=tuple(entries),
    )


def median_error(
    sd: NDArray[np.float64],
    kinds: NDArray[Any],
    plan: ReleasePlan,
    gamma: float,
    users: NDArray[np.float64],
    ranks: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """How far the private midpoint may lie from the mean, beyond its grid cell's half-width:
    a median is off the mean of a skewed column by MEDIAN_OFFSET sds, beside its rank error —
    the ``ranks`` the midpoint's check measured (:func:`~dplong.privacy.counts.side_count`) where
    the tail model is symmetric, or else the worst case over the grid's cells
    (:func:`~dplong.privacy.quantile.rank_error`). Ranks become distances by the normal
    quantile; a skewed column's long side spreads them further (the shipped panels' variance
    components under-covered where the measured ranks sized their intervals: docs/accuracy.md),
    and there the worst case's slack is kept."""
    worst = rank_error(len(GRID), plan.fallback or plan.midpoint, gamma)
    symmetric = np.isin(kinds, SYMMETRIC)
    ranks = np.where(symmetric, worst if ranks is None else ranks, worst)
    skew = np.array([MEDIAN_OFFSET[k] for k in kinds])
    return np.asarray(sd * (skew + _rank_quantile(ranks, users)))


def rough_error(
    noise_scale: NDArray[np.float64],
    users: NDArray[np.float64],
    sd: NDArray[np.float64],
    gamma: float,
) -> NDArray[np.float64]:
    """The refinement's noise (its Laplace quantile) and the mean's sampling error: the part of
    the refined centre's error bound that does not depend on where the rough mean landed."""
    noise = noise_scale / users * math.log(2.0 / gamma)  # Laplace quantile
    sampling = sd / np.sqrt(users) * special.ndtri(1.0 - gamma / 4.0)
    return np.asarray(noise + sampling)


def _rank_quantile(
    ranks: float | NDArray[np.float64], users: NDArray[np.float64]
) -> NDArray[np.float64]:
    """How many σ a median ``ranks`` off may lie from the centre, for a normal spread (capped
    at 3σ: beyond, the midpoint is unreliable and the plan says so)."""
    share = np.minimum(0.5 + ranks / np.maximum(users, 1.0), 0.9987)
    return np.asarray(special.ndtri(share))


def _histogram_midpoint(
    matrix: NDArray[np.float64],
    half_width: NDArray[np.float64],
    plan: ReleasePlan,
    names: tuple[str, ...],
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.bool_], list[LedgerEntry]]:
    """Alg 3 per column (the mode of a stable histogram, Alg 2) and where it failed."""
    n, d = matrix.shape
    midpoint = np.zeros(d)
    failed = np.zeros(d, dtype=bool)
    for j in range(d):
        column = matrix[:, j][np.isfinite(matrix[:, j])]  # no statistic: no bin
        midpoint[j], failed[j] = central_midpoint(
            column, float(half_width[j]), plan.midpoint, plan.midpoint_delta, rng, n
        )
    entries = [
        LedgerEntry(
            "midpoint",
            "stable histogram (Alg 2, 3)",
            name,
            plan.midpoint,
            plan.midpoint_delta,
            0.0,
            2.0 / n,
            2.0 / (plan.midpoint * n),
        )
        for name in names
    ]
    return midpoint, failed, entries
