"""The default release engine: the column means of per-user statistics, given only ε and δ.

Every model and :func:`dplong.winsorized_mean` reduce users to an n x d matrix of statistics
(NaN: the user has none in that column) and call :func:`release_means`. It runs the stages of
a :class:`~dplong.privacy.budget.ReleasePlan`, each a noisy Winsorized mean ingredient of the
paper generalised so that nothing about the data's location or scale need be known:

1. **count** N̂ of users with a statistic (lattice Laplace): the means are ``c + S / N̂``;
2. **midpoint** m̂_j: a private median on a public log grid (where Alg 3 has the mode of a
   stable histogram);
3. **scale** σ̂_j: the private median of ``|x - m̂_j|``, with zeros and shared values set aside
   (:func:`_spread`, :func:`_shared`); skipped when the scale is stated;
4. **refinement**: a rough mean on ``m̂ ± w₁`` (Alg 4), the centre of the final interval;
5. **mean**: Alg 4's projection onto ``c ± w`` (:func:`~dplong.privacy.radius.accurate_radius`)
   and lattice Laplace or discrete Gaussian noise, the budget shared over columns by PLAN.

Precision weights (:class:`UserWeights`) standardise every stage after the midpoint, keeping
the sensitivity of the unweighted release. A column whose release missed the data is withheld.
The stages' public error allowances, the tail models, the support ends and the weighted
release's sensitivities are derived in the design notes, ``docs/design/engine.md``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger
from dplong.privacy.budget import (
    DOUBT_MISS,
    MAX_MISS,
    NOTE_MISS,
    FinalBudget,
    ReleasePlan,
    afford,
    settle,
    tail_share,
    top_up,
)
from dplong.privacy.interval import central_midpoint
from dplong.privacy.noise import (
    LatticeRelease,
    geometric_rate,
    release_bounded_sum,
    release_gaussian_sum,
    two_sided_geometric,
    two_sided_geometric_variance,
)
from dplong.privacy.notes import (
    alone_notes,
    beside_notes,
    crowded_notes,
    empty_notes,
    few_users,
    implausible_notes,
    lost_notes,
    missed_notes,
    sparse_notes,
    unseen_notes,
    user_notes,
)
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.quantile import (
    GRID,
    SPREAD_GRID,
    miss_probability,
    private_median,
    rank_error,
)
from dplong.privacy.radius import (
    MAD_OVER_SD,
    MEDIAN_OFFSET,
    SUPPORT_SPREAD,
    Moment,
    Tail,
    TailModel,
    Tails,
    accurate_radius,
    bin_radius,
    clipping_bias,
    moment_bias,
    moment_radius,
)

__all__ = [
    "Count",
    "Location",
    "Release",
    "Rules",
    "UserWeights",
    "forecast_noise",
    "implausible",
    "locate",
    "release_means",
    "release_second_moment",
]

#: Median of |Z| for a standard normal: σ̂ = median |x - m̂| / MAD_FACTOR (normal tails).
MAD_FACTOR = MAD_OVER_SD["gaussian"]
#: Radius of the refinement around the midpoint, in units of σ̂ beyond the midpoint's error.
ROUGH_RADIUS = 4.0
#: Largest radius: beyond it the lattice and the sums would overflow (only reached when the
#: data are at the edge of the doubles, or a column has no data and its midpoint is arbitrary).
MAX_RADIUS = 2.0**1000
#: A released mean beyond the first share of its interval's half-width is at its edge: most
#: users were clipped to one side, the centre missed the data (the estimate is withheld). So
#: is one beyond the second share that is as far out as the edge could plausibly look (within
#: ``EDGE_SDS`` sds of the count's and the sum's noise) had every user been clipped to it.
MISSED_SHARE, NEAR_SHARE, EDGE_SDS = 0.8, 0.5, 3.0
#: A rough mean this many plug-in sds from the median marks a skewed column (:func:`_skew_tails`).
SKEWED_SDS = 0.3
#: A released second moment of the clipped values above ``(CROWDED_SPREAD σ̂)²`` and
#: ``(CROWDED_SHARE w)²`` (w the half-width) says that many users were clipped: withheld.
CROWDED_SPREAD, CROWDED_SHARE = 1.5, 0.5
#: A scale below this share of the midpoint's magnitude is below the resolution of the values
#: around it (doubles near m carry 52 bits): the scale's median missed every user.
RESOLUTION = 2.0**-40
#: Smallest spread used: its square stays a normal double (a spread of exactly 0, as for a
#: constant column, would make the radius and the bias bound degenerate).
SMALLEST_SCALE = 2.0**-500
#: What the midpoint reports when more than about half the users are exactly 0: the grid
#: cell ``[0, 2**-1022)``.
ZERO_CELL = float(GRID.centres[np.searchsorted(GRID.boundaries, 0.0, side="right")])
#: A column where the private count finds fewer than ``1 - SHARED_SHARE`` of its users off the
#: scale's cell (and the cells far inside it, below ``SHARED_BELOW`` of its lower edge) has
#: most users at one value: its scale is measured again on the others (:func:`_shared`).
SHARED_SHARE, SHARED_BELOW = 0.3, 0.125
#: How far a centre may move towards a support's end (:func:`_supported_centre`): until the
#: count's noise it brings reaches this share of the sum's (the mean's sd up by at most 12 %).
SHIFT_COST = 0.5
#: Share of the spread a chi-square square's median implies that its scale keeps at least
#: (:func:`_square_spread`): a third, 1.04 times the median above the support's end.
IMPLIED_SHARE = 1.0 / 3.0
_MEDIAN = "private median (report-noisy-max, log grid)"
_TAIL = "lattice Laplace count beyond the radius"
_SIDES = "lattice Laplace count above less below the midpoint"
_BAND = "lattice Laplace count outside less inside the scale's band"
#: How far beyond the bulk's radius a heavy column's radius may reach (:func:`_tail_radius`):
#: the clip of the widest tail the stage vouches for; with little noise a radius far beyond
#: the data would also round the values (and their squares) away on its lattice.
TAIL_REACH = 2.0**6
#: The tail stage counts the users beyond ``TAIL_RUNG σ̂`` in any column (a normal tail puts
#: 0.05 % there, a heavy one many times more: the count tells them apart at a small ε), and
#: calls the columns heavy where the count exceeds ``TAIL_RATIO`` times normal tails' by the
#: noise. 3.5 rather than 3: the per-man coefficients of the wage panel put 35 of 545 men
#: beyond it in some column against normal tails' 3 (46 against 11 at 3 σ̂).
TAIL_RUNG, TAIL_RATIO = 3.5, 3.0
#: Noise sds by which the count must exceed that to mark the columns heavy: a normal tail's
#: count beyond 3.5 σ̂ is small, so the noise alone decides a false alarm, which a Laplace draw
#: beyond 3.5 sds raises in e^{-3.5√2} / 2 = 0.35 % of releases (at 3 sds, 0.7 %: a Gaussian
#: column at n = 6,000 was marked heavy, with its warning, within 200 releases; at 4.5, the
#: lognormal and Pareto columns of benchmarks/skewed.py went unseen, covered in 80-83 %).
HEAVY_SDS = 3.5
#: The plausibility rule (:func:`implausible`): a column whose own bad-event probability (the
#: medians' miss bound given its private count) exceeds :data:`DOUBT_MISS` is more likely off
#: than its error figures say, and is withheld. So is a column the scale stage found at one
#: value (``ScaleScan.alone``) whose scale is ``FAR_OUT`` times the midpoint's magnitude or more
#: and beyond ``ALONE_REACH`` times what a value shared at the midpoint could give (the midpoint
#: cell's half-width over the normal MAD factor; up to 2.3 times that for the chi-square model
#: of squares): the scale's median missed far above every user (they sit far inside its cell,
#: 8 = 1 / SHARED_BELOW times below it or more).
ALONE_REACH, FAR_OUT = 3.0, 8.0
#: The normal tail's count is taken for a σ̂ 10 % too small (the private scale's own
#: error: a Gaussian column was marked heavy in 1 of 200 releases at n = 6,000 without it).
TAIL_SLACK = 0.9
#: The midpoint's check (:func:`_side_count`) finds it beside the users where, even at the low
#: end of its noise, this share of them more lie on one side of its cell than on the other (85 %
#: or more on one side; half of them where the scale stage also finds them all at one distance,
#: ``ScaleScan.alone``). A median's cell has at most half on each side (users in it count on
#: neither), so this is a median 35 percentiles off or more: typically one that missed them all
#: (every user on one side; its scale then measured the distance, which no other released
#: number shows). The bar is read at the ``BESIDE_GAMMA`` quantile of the count's noise. (At
#: half without the scale stage's verdict, a third of the wage panel's per-man intercepts at
#: ε = 4 were withheld: medians at the 10th percentile, whose scale had widened to hold them.)
BESIDE_SHARE, BESIDE_GAMMA = 0.7, 0.2
#: The scale's check (:func:`_inside_count`) counts the users whose distance to the midpoint
#: lies between ``SHARED_BELOW`` and ``INSIDE_MADS`` times the scale median's deviation (a
#: normal column puts 93 % there, a Cauchy one 76 %); a count clearly below ``INSIDE_SHARE`` of
#: the users (at the high end of its noise) says the scale's median missed below (nearly) every
#: user, and the interval would clip them all onto the midpoint, or far above them, and it
#: would dwarf them.
INSIDE_MADS, INSIDE_SHARE = 4.0, 0.5
#: Index α of the Pareto tail through the measured count that sizes a heavy column's radius and
#: bounds its clipping bias (:func:`_tail_bias`): the heaviest tail the bound allows for.
#: 1.5: RAND HIE spending's person means fall off about as fast far out; index 2 (a finite
#: variance) left the simulated lognormal and Pareto means covered in 40-60 % of releases
#: (benchmarks/skewed.py).
TAIL_INDEX = 1.5
#: Noise sds by which the tail stage's second count must exceed what the Pareto tails through
#: the first rung put beyond the widened radius to mark a lump far out (:func:`_second_rung`):
#: 2, as a false lump only widens a clip already wide (the 90 %-zero mixture of
#: benchmarks/skewed.py, about 50 users beyond against 6 allowed, was missed in a third of its
#: releases at 3 sds).
LUMP_SDS = 2.0
#: The second rung's share of the means' budget, in units of the first's (:func:`_second_rung`,
#: spent only where the first found heavy columns, whose wide clips make their means' noise
#: the smaller worry): at the first's share the mixture's lump was missed in 13 % of releases.
SECOND_RUNG = 1.5


@dataclass(frozen=True)
class UserWeights:
    """Per-user precision weights of a release (module docstring): ``values`` (n,) private,
    ``floor`` a public lower bound in (0, 1]; the public cap is 1.

    A user with a statistic weighs ``clip(values[u], floor, 1)`` (enforced by the engine, so the
    sensitivity never depends on the caller); users without one weigh nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.engine import UserWeights
    >>> UserWeights(np.array([0.2, 1.0, 3.0]), floor=0.25).clipped().tolist()
    [0.25, 1.0, 1.0]
    """

    values: NDArray[np.float64]
    floor: float

    def __post_init__(self) -> None:
        if not 0.0 < self.floor <= 1.0:
            raise ValueError(f"the weights' floor must lie in (0, 1], got {self.floor!r}")

    def clipped(self) -> NDArray[np.float64]:
        """The weights within their public bounds ``[floor, 1]`` (NaN: the floor)."""
        return np.clip(np.nan_to_num(self.values, nan=self.floor), self.floor, 1.0)


@dataclass(frozen=True)
class Count:
    """A private count of users with a statistic (weighted: ``Σ w_u``) already released by an
    earlier release of the same fit: its values (one, or one per column) and the standard
    deviation of its noise. A later release over the *same* users with the same weights
    divides by it instead of counting again (post-processing: no budget).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.engine import Rules, release_means
    >>> from dplong.privacy.options import ReleaseOptions
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(1.0, 1.0, size=(2000, 2))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> first = release_means(x[:, :1], names=("a",), options=options, rng=rng)
    >>> second = release_means(x[:, 1:], names=("b",), options=options, rng=rng,
    ...                        rules=Rules(count=first.count))
    >>> "count" in {e.stage for e in second.privacy.entries}, bool(second.users == first.users)
    (False, True)
    """

    users: NDArray[np.float64]
    sd: float


@dataclass(frozen=True)
class Rules:
    """What a release knows of its statistics beyond the matrix — public facts, or numbers
    released before it — each switching on a named rule of the stages. The default is a plain
    release of column means whose scale is estimated.

    Attributes
    ----------
    scale : ndarray, optional
        Stated variance proxy of one user's statistic per column (None: estimated, stage 3).
    complete_rows : bool
        A user's statistics are all there or all missing: one count, and a row with any NaN
        counts as missing.
    bounds : (ndarray, ndarray), optional
        Public (lower, upper) per column holding every statistic (values outside are clipped
        to them): only the count and the mean run.
    user_weights : UserWeights, optional
        Precision-weighted means ``Σ w_u x_u / Σ w_u`` (module docstring).
    tail : str, tuple of str or Moment, optional
        The tail model of the radius and the clipping bias
        (:func:`~dplong.privacy.radius.clipping_bias`; default Gaussian for an estimated scale,
        sub-Gaussian for a stated one; ``"exponential"`` for skewed statistics such as sums of
        squares, ``"chi-square"`` for squares of a normal statistic), one or one per column.
        A stated :class:`~dplong.privacy.radius.Moment` bound is the moment rule: the bulk keeps
        the plug-in model of an estimated or stated scale, no tail stage runs, and every
        column's radius and bias bound are those of the moment (:func:`_moment_rule`).
    count : Count, optional
        An earlier release's private count of the same users, divided by instead of a new one
        (the plan budgets none).
    lower : ndarray, optional
        Public lower ends of the columns' support (0 for squares; -inf for none): an interval
        reaching below one is moved up (:func:`_supported_centre`), and under the chi-square
        tail the scale keeps a share of the spread its median implies (:func:`_square_spread`).
    relative : bool
        Share the final budget so that each column's noise counts relative to its own radius
        (columns in different units) instead of in the data's units.
    public_centre : (ndarray, ndarray), optional
        A public centre per column and a bound on its distance to the column's mean that fails
        with probability at most γ: no midpoint or refinement stage (a plan made with
        ``centred=True``).
    partial_users : bool
        Each column is by design a statistic of some users only (a level of a grouping: the
        estimand is the mean over the users with rows there), so no note says that many users
        have none; the private counts are in the results.

    Examples
    --------
    Spending per user is at least 0: the interval is moved up, off the empty side.

    >>> import numpy as np
    >>> from dplong.privacy.engine import Rules, release_means
    >>> from dplong.privacy.options import ReleaseOptions
    >>> x = np.random.default_rng(0).exponential(50.0, size=(3000, 1))
    >>> options = ReleaseOptions.check(3000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> plain = release_means(x, names=("spend",), options=options, rng=np.random.default_rng(1),
    ...                       rules=Rules(tail="exponential"))
    >>> moved = release_means(x, names=("spend",), options=options, rng=np.random.default_rng(1),
    ...                       rules=Rules(lower=np.zeros(1), tail="exponential"))
    >>> bool(moved.interval[0, 1] > plain.interval[0, 1])
    True
    """

    scale: NDArray[np.float64] | None = None
    complete_rows: bool = True
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    user_weights: UserWeights | None = None
    tail: TailModel | None = None
    count: Count | None = None
    lower: NDArray[np.float64] | None = None
    relative: bool = False
    public_centre: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    partial_users: bool = False


@dataclass(frozen=True)
class Release:
    """Everything public about one release of column means (DP outputs and public facts).

    Attributes
    ----------
    names : tuple of str
        Column names.
    estimate : ndarray
        The private means.
    noise_sd, noise_scale : ndarray
        Standard deviation of the privacy noise in each estimate, and its scale parameter
        (Laplace b, or the Gaussian's σ).
    noise_kind : str
        ``"laplace"``, ``"gaussian"`` or ``"normal"`` (local: a sum of n draws).
    sampling_sd : ndarray
        Plug-in standard deviation of the non-private mean: ``√(ρ / N̂)`` with ρ the scale.
    bias : ndarray
        Bound on the clipping bias (:func:`~dplong.privacy.radius.clipping_bias`).
    interval : ndarray, shape (d, 2)
        The final projection intervals.
    midpoint, scale : ndarray
        The private midpoints and the variance proxies used (estimated σ̂² or stated).
    users : ndarray
        The private count(s) of users with a statistic (one, or one per column).
    users_sd : float
        Standard deviation of each count's noise.
    privacy : PrivacyLedger
        Every mechanism call and the composed (ε, δ).
    n : int
        Number of users (public).
    variant : str
        How it was released (``"default"``, ``"default (refined)"``, ``"default (checked)"``:
        the midpoint's check measured the centre's error, ``"theory"``).
    bad_events : ndarray
        Per column, the probability of the events the error bounds exclude.
    notes : tuple of str
        Reliability notes from public facts and released numbers.
    failed : ndarray of bool, optional
        Where the midpoint failed: the paper's stable histogram found no bin (``"theory"``), or
        the released mean sat at the edge of its interval (the estimate is then NaN).
    weighted : bool
        Whether users were weighted (:class:`UserWeights`): ``users`` is then the private
        weighted count ``Σ w_u`` and ``scale`` the standardised one.
    unseen : ndarray of bool, optional
        Columns taken as 0 (their estimate is 0; the results withhold it, "unseen", as
        :func:`dplong.models.base.panel_results` does): most users are exactly 0 there and the
        private count saw no others (it may miss a few, :class:`ScaleScan`).
    """

    names: tuple[str, ...]
    estimate: NDArray[np.float64]
    noise_sd: NDArray[np.float64]
    noise_scale: NDArray[np.float64]
    noise_kind: str
    sampling_sd: NDArray[np.float64]
    bias: NDArray[np.float64]
    interval: NDArray[np.float64]
    midpoint: NDArray[np.float64]
    scale: NDArray[np.float64]
    users: NDArray[np.float64]
    users_sd: float
    privacy: PrivacyLedger
    n: int
    variant: str
    bad_events: NDArray[np.float64]
    notes: tuple[str, ...] = ()
    failed: NDArray[np.bool_] | None = None
    weighted: bool = False
    unseen: NDArray[np.bool_] | None = None

    @property
    def failed_columns(self) -> NDArray[np.bool_]:
        """Where the midpoint failed (only the paper's stable histogram can fail)."""
        return np.zeros(len(self.names), dtype=bool) if self.failed is None else self.failed

    @property
    def count(self) -> Count:
        """Its private count of users, for a later release over the same users (:class:`Count`)."""
        return Count(self.users, self.users_sd)


@dataclass(frozen=True)
class ScaleScan:
    """What the scale stage found (:func:`_spread`, :func:`_shared`), by post-processing of its
    private counts, per column: where too few users are off the value most of them share (0 or
    another) for a private scale of them (``sparse``: withheld); columns of mostly zeros whose
    count sees no others (``unseen``: taken as 0); columns of mostly one other value whose count
    sees no others (``alone``: the interval is sized on that value); columns whose scale was
    measured on the users off their shared value (``shared``); and how many users each count
    could miss (``reach``, three sds of its noise; 0 where none ran); ``reruns`` the ε of each
    second median run and of each one's check (the ``shared`` columns, in order); ``strayed``
    the ``shared`` columns whose second median's check found it missed the users off the value
    (:func:`_band_check`: withheld, as the scale's check withholds a first median's miss).

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
    reruns: tuple[float, ...] = ()
    strayed: NDArray[np.bool_] | None = None


@dataclass(frozen=True)
class Location:
    """What the stages before the final one released (all DP outputs or public facts).

    ``centre`` is where the final interval is centred (the rough mean, or the midpoint when
    the plan has no refinement) and ``centre_error`` a bound on its distance to the mean that
    fails with probability at most γ (:func:`locate`); ``sd`` is the scale used (σ̂ or the
    stated √ρ); ``users`` the private count(s) of users with a statistic; ``plan`` the plan
    as run (its stages resized for the count, :meth:`~dplong.privacy.budget.ReleasePlan.for_users`);
    ``scan`` what the scale stage found (:class:`ScaleScan`; None for a stated scale);
    ``beside`` where the midpoint's check found the midpoint beside (nearly) every user
    (:func:`_side_count`; None where no check ran), ``collapsed`` where the scale's check found
    its median below (nearly) every user (:func:`_inside_count`): those columns are withheld.
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
        (:class:`ScaleScan`): withheld."""
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
    release's :class:`Rules`. With public ``bounds`` only the count runs: the centre is the
    bounds' midpoint, exact. With ``user_weights`` the scale and refinement work on
    standardised deviations and the count is the weighted count. An earlier ``count`` is used
    instead of a new one. A ``public_centre`` is the midpoint, and only the scale is located.
    Below the ``lower`` ends the chi-square tail's scale keeps the spread its median implies,
    before the refinement and the centre's error use it. Under a stated moment bound the
    rough mean's clipping bias is the moment's (:func:`_moment_rule`)."""
    moment = _moment_rule(rules)
    scale, complete_rows, bounds = rules.scale, rules.complete_rows, rules.bounds
    user_weights, count = rules.user_weights, rules.count
    tail = None if isinstance(rules.tail, Moment) else rules.tail
    public_centre, lower = rules.public_centre, rules.lower
    n, d = matrix.shape
    entries: list[LedgerEntry] = []
    root = _roots(user_weights)

    def counted() -> tuple[NDArray[np.float64], float, list[LedgerEntry]]:
        if count is not None:
            return count.users, count.sd, []
        return _count(matrix, plan, names, complete_rows, rng, root)

    if bounds is not None:
        users, users_sd, count_entries = counted()
        lower, upper = bounds
        centre = (lower + upper) / 2.0
        sd = np.sqrt(scale) if scale is not None else (upper - lower) / 2.0
        return Location(
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
    # the count first: how many users the later stages can find is read from it
    if plan.counts or count is not None:
        users, users_sd, count_entries = counted()
        entries += count_entries
        # the medians sized for the users there are (post-processing of N̂)
        found = users[users >= max(2.0, 2.0 * users_sd)]
        if found.size and root is None:  # a weighted count is no count of users
            plan = plan.for_users(float(found.min()))
    else:  # n divides: users without a statistic contribute the centre (the paper's rule)
        users, users_sd = np.array([float(n)]), 0.0
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
        midpoint = private_median(matrix, GRID, np.full(d, plan.midpoint), rng)
        entries += _median_entries("midpoint", names, plan.midpoint)
    ranks: NDArray[np.float64] | None = None
    beside: NDArray[np.bool_] | None = None
    collapsed: NDArray[np.bool_] | None = None
    if plan.midpoint_kind == "median" and plan.side:
        # the midpoint's check: how many ranks it is from the middle of the users, measured;
        # it sizes the interval where the plan says so (ReleasePlan.ranked: a second moment
        # measured, or enough users; on tiny panels the worst case's slack is what covers tails
        # heavier than the scale's normal plug-in: dietox's 72 pig means, 85 % covered with it)
        sided, reach, side_entries = _side_count(matrix, midpoint, plan.side, names, gamma, rng)
        entries += side_entries
        if plan.ranked:
            ranks = (np.abs(sided) + reach) / 2.0
        # a weighted count is no count of users: n bounds theirs (a public fact)
        among = np.broadcast_to(users if root is None else float(n), (d,))
        # a median's cell has at most half the users on either side (exactly half only when the
        # others share the cell): only the noise's overshoot beyond its BESIDE_GAMMA quantile
        # on the side the count points to could pass the bar then
        reach_low = _side_reach(plan.side, 2.0 * BESIDE_GAMMA)
        beside = np.abs(sided) >= BESIDE_SHARE * among + reach_low
        # past half the users, where the scale stage then finds them all at one distance
        aside = np.abs(sided) >= 0.5 * among + reach_low
    if fallback.any():  # no bin survived: the reserved private median locates those columns
        columns = np.flatnonzero(fallback)
        midpoint[columns] = private_median(
            matrix[:, columns], GRID, np.full(columns.size, plan.fallback), rng
        )
        entries += _median_entries("midpoint", tuple(names[j] for j in columns), plan.fallback)
    if tail is None:
        tail = "gaussian" if scale is None else "sub-gaussian"
    kinds = np.broadcast_to(np.asarray(tail), (d,))
    if scale is None:
        spread = matrix - midpoint if root is None else root * (matrix - midpoint)
        # the share of users off a shared value is of users, which a weighted count is not: n
        share_users = np.broadcast_to(users if root is None else float(n), (d,))
        share_sd = users_sd if root is None else 0.0
        deviation, scan, scale_entries = _spread(
            np.abs(spread), matrix, midpoint, plan, share_users, share_sd, names, gamma, rng
        )
        entries += scale_entries
        plan = dataclasses.replace(plan, reruns=scan.reruns)
        if beside is not None:  # users alone at one distance: the midpoint's miss by it
            beside = beside | (scan.alone & aside)
        if plan.inside and plan.midpoint_kind == "median":
            # the scale's check, where the scale stage's own counts found no shared value
            plain = ~(scan.alone | scan.shared | scan.sparse | scan.unseen) & (
                midpoint != ZERO_CELL
            )
            among = np.broadcast_to(users if root is None else float(n), (d,))
            collapsed, inside_entries = _inside_count(
                np.abs(spread), deviation, plain, among, plan.inside, names, gamma, rng
            )
            entries += inside_entries
        if scan.strayed is not None:  # a second median's miss, found by its own check
            collapsed = scan.strayed if collapsed is None else collapsed | scan.strayed
        # the median deviation of each column's tail model (a skewed one spreads further)
        factor = np.array([MAD_OVER_SD[k] for k in kinds])
        sd = np.maximum(deviation, SMALLEST_SCALE) / factor
        if lower is not None:
            sd = _square_spread(sd, midpoint, kinds, lower)
    else:
        sd = np.maximum(np.sqrt(scale), SMALLEST_SCALE)
        scan = None

    per_column_users = np.maximum(np.broadcast_to(users, (d,)), 1.0)
    # with weights the median is of the raw x_u, whose spreads σ_z/√w_u vary; yet Φ(√w t/σ) - ½
    # >= √w (Φ(t/σ) - ½) (concavity) and mean √w_u >= W/N give the same bound as without
    # weights, with σ̂_z and W in place of σ̂ and N (module docstring)
    if plan.midpoint_kind == "public":  # the model's bound (a public centre has no rank error)
        assert public_centre is not None
        midpoint_error = np.asarray(public_centre[1], dtype=float)
    else:
        # a median is off the mean of a skewed column by MEDIAN_OFFSET sds, beside its rank
        # error
        midpoint_error = GRID.half_width_at(midpoint) + _median_error(
            sd, kinds, plan, gamma, per_column_users, ranks
        )
    if plan.midpoint_kind == "histogram":  # Lemma 3.4: the mode is within 2 bins' half-widths
        histogram_error = 2.0 * bin_radius(sd**2, gamma)
        midpoint_error = np.where(fallback, midpoint_error, histogram_error)
    if plan.refine <= 0:
        return Location(
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
    # wide enough that an off-centre midpoint costs the rough mean almost no bias: with
    # |m̂ - μ| <= e_m the bias bound below stays small (Gaussian tail, 4σ: 4e-4 σ at e_m = σ)
    rough_width = np.minimum(ROUGH_RADIUS * sd + GRID.half_width_at(midpoint), MAX_RADIUS)
    rough = release_bounded_sum(
        _centred(matrix, midpoint, rough_width, root), rough_width, np.full(d, plan.refine), rng
    )
    entries += _mean_entries("refinement", names, plan.refine, 0.0, rough, n)
    offset = np.clip(rough.total / per_column_users, -rough_width, rough_width)
    count_effect = np.abs(offset) * 3.0 * users_sd / per_column_users
    with np.errstate(over="ignore"):  # a spread far beyond the doubles: an infinite bound
        rough_bias = (
            clipping_bias(sd**2, rough_width, midpoint_error, tail=tail)
            if moment is None
            else moment_bias(moment.bounds(d), moment.k, rough_width, midpoint_error)
        )
        centre_error = (
            _rough_error(rough.scale, per_column_users, sd, gamma)
            + count_effect
            + rough_bias * _bias_factor(user_weights, per_column_users, n)
        )
    return Location(
        midpoint,
        midpoint + offset,
        centre_error,
        sd,
        users,
        users_sd,
        True,
        tail,
        tuple(entries),
        plan,
        bool(fallback.any()),
        scan,
        beside,
        collapsed,
    )


def _median_error(
    sd: NDArray[np.float64],
    kinds: NDArray[Any],
    plan: ReleasePlan,
    gamma: float,
    users: NDArray[np.float64],
    ranks: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """How far the private midpoint may lie from the mean, beyond its grid cell's half-width:
    a median is off the mean of a skewed column by MEDIAN_OFFSET sds, beside its rank error —
    the ``ranks`` the midpoint's check measured (:func:`_side_count`) where the tail model is
    symmetric, or else the worst case over the grid's cells
    (:func:`~dplong.privacy.quantile.rank_error`). Ranks become distances by the normal
    quantile; a skewed column's long side spreads them further (the variance components of the
    dietox and wage panels were covered in 70-80 % of resamples where the measured ranks sized
    their intervals), and there the worst case's slack is kept."""
    worst = rank_error(len(GRID), plan.fallback or plan.midpoint, gamma)
    symmetric = np.isin(kinds, ("gaussian", "sub-gaussian"))
    ranks = np.where(symmetric, worst if ranks is None else ranks, worst)
    skew = np.array([MEDIAN_OFFSET[k] for k in kinds])
    return np.asarray(sd * (skew + _rank_quantile(ranks, users)))


def _rough_error(
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


def forecast_noise(
    plan: ReleasePlan,
    *,
    gamma: float,
    stated_scale: bool,
    tail: TailModel | None = None,
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    relative: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The privacy-noise sd and the sampling sd a release of ``plan`` would report, per column,
    predicted from public facts alone: in units of each column's sd σ (the spread of one
    user's statistic, or the square root of a stated variance proxy), or absolute with public
    ``bounds``.

    The release's own rules run on a typical outcome of its earlier stages: every one of the n
    users has a statistic, the scale stage finds σ, the midpoint is off the mean by its rank
    error (plus the refinement's noise and sampling error when the plan refines) and the
    centre's grid cell is negligible. The accurate radius and the final budget then come from
    :func:`_final_radius` and :meth:`~dplong.privacy.budget.ReleasePlan.final_budget` — the
    functions the release itself calls — with the second moment's and the tail stage's shares
    taken out as the release takes them. A heavier tail than the statistic's model widens the
    radius at release time (the tail stage), and so the noise; a stated moment bound
    (absolute, not in units of σ) is forecast as its bulk: no tail stage, the bulk's radius.

    Examples
    --------
    >>> from dplong.privacy.budget import ReleasePlan
    >>> from dplong.privacy.engine import forecast_noise
    >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
    >>> noise, sampling = forecast_noise(plan, gamma=0.05, stated_scale=False)
    >>> bool(0.002 < noise[0] < 0.01), round(float(sampling[0]) * 2000**0.5, 6)
    (True, 1.0)
    """
    d, n = plan.d, plan.n
    users = np.full(d, float(n))
    weights = np.ones(d)
    plan = _with_tail(plan, measured=bounds is None and not stated_scale and tail is None)
    if isinstance(tail, Moment):
        tail = None
    if bounds is not None:
        radius = np.asarray((bounds[1] - bounds[0]) / 2.0, dtype=float)
        budget = plan.final_budget(radius, weights, refined=False)
        sd = radius if not stated_scale else np.ones(d)
    else:
        sd = np.ones(d)
        kinds = np.broadcast_to(
            np.asarray(tail or ("sub-gaussian" if stated_scale else "gaussian")), (d,)
        )
        if plan.midpoint_kind == "public":  # the model's bound: small by construction
            error = np.zeros(d)
        elif plan.midpoint_kind == "histogram":
            error = 2.0 * bin_radius(sd**2, gamma)
        else:
            # the midpoint's check measures its rank error: typically its noise's reach alone
            measured = plan.ranked
            ranks = np.full(d, _side_reach(plan.side, gamma) / 2.0) if measured else None
            error = _median_error(sd, kinds, plan, gamma, users, ranks)
        refined = plan.refine > 0
        if refined:  # the rough mean's Laplace scale: sensitivity 2 w₁ at the refinement's ε
            rough_width = ROUGH_RADIUS * sd
            error = _rough_error(2.0 * rough_width / plan.refine, users, sd, gamma) + (
                clipping_bias(sd**2, rough_width, error, tail=tuple(kinds))
            )
        where = Location(
            np.zeros(d), np.zeros(d), error, sd, users, 0.0, refined, tuple(kinds), (), plan
        )
        radius, budget = _final_radius(where, weights, plan, relative)
    mean_budget, _ = budget.split(plan.moment_share)
    if plan.tail:
        _, mean_budget = mean_budget.tail_split(plan.tail)
    return mean_budget.noise_sd(2.0 * radius) / users, sd / np.sqrt(users)


def _moment_rule(rules: Rules) -> Moment | None:
    """The moment rule: a stated :class:`~dplong.privacy.radius.Moment` bound (None if none);
    the bulk then keeps the plug-in model of the scale, chosen as when no tail is stated.

    Under ``E|x_u - μ|^k <= M`` the clipping bias of ``c ± w`` is at most ``M (k-1)^(k-1) /
    (k^k (w - e)^(k-1))`` (:func:`~dplong.privacy.radius.moment_bias`; Lemma 3.6 and Corollary
    3.13 of the person-level paper), whatever the shape of the tail: the rough mean's and the
    final stage's bias bounds are this one, and the final radius balances it against the
    mean's noise, never inside the bulk's radius (the paper's Theorem 3.14 takes the larger of
    its Gaussian and heavy-tail radii). The bound being stated, nothing is counted to find the
    tail: no tail stage runs and its share stays with the mean. All public: the bound, the
    centre's error bound and the budget."""
    return rules.tail if isinstance(rules.tail, Moment) else None


def _with_tail(plan: ReleasePlan, *, measured: bool) -> ReleasePlan:
    """The plan with the tail stage's share (one count of the users in a tail, calibrated with
    the final stage) where the release measures its tail: no bounds, scale or tail stated."""
    if not measured:
        return plan
    return dataclasses.replace(plan, tail=tail_share(plan.n, plan.d, plan.per_column))


def release_means(
    matrix: NDArray[np.float64],
    *,
    names: tuple[str, ...],
    options: ReleaseOptions,
    rng: np.random.Generator,
    rules: Rules = Rules(),
    weights: NDArray[np.float64] | None = None,
    accountant: Accountant | None = None,
    plan: ReleasePlan | None = None,
) -> Release:
    """Release the column means of ``matrix`` (n x d; NaN: no statistic) with the default plan.

    ``rules`` says what the release knows of its statistics beyond the matrix (:class:`Rules`:
    a stated scale, public bounds or support ends, precision weights, an earlier count, a
    public centre, the tail model); ``weights`` how much each column's error counts when the
    budget is shared (default equal); ``plan`` replaces the plan made from ``options`` (a later
    release of a fit, :meth:`~dplong.privacy.budget.ReleasePlan.after`). With precision weights
    each sum keeps the sensitivity ``2 r_j`` of the unweighted release and the weighted count
    has sensitivity 1 (module docstring). Every refusal and the accountant's check happen
    before the first noise draw.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.engine import release_means
    >>> from dplong.privacy.options import ReleaseOptions
    >>> x = np.random.default_rng(0).normal([2.0, -50.0], [1.0, 10.0], size=(2000, 2))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=2)
    >>> res = release_means(x, names=("a", "b"), options=options, rng=np.random.default_rng(1))
    >>> bool(np.all(np.abs(res.estimate - x.mean(axis=0)) < 4 * res.noise_sd + 0.01))
    True
    >>> res.privacy.epsilon <= 1.0, res.privacy.delta <= 1.0 / 2000**2
    (True, True)

    Precision weights: users with ``T_u`` rows have means of variance ``1 + 4 / T_u``; the
    weights ``w_u ∝ 1 / (1 + 4 / T_u)``, capped at 1 (``T_u >= 20``), target the GLS mean:

    >>> from dplong.privacy.engine import Rules, UserWeights
    >>> rng = np.random.default_rng(2)
    >>> rows = rng.integers(1, 21, size=5000)
    >>> means = 3.0 + rng.normal(0.0, np.sqrt(1.0 + 4.0 / rows))
    >>> w = (1.0 + 4.0 / 20) / (1.0 + 4.0 / rows)
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> res = release_means(means[:, None], names=("mu",), options=options, rng=rng,
    ...                     rules=Rules(user_weights=UserWeights(w, floor=1.2 / 5.0)))
    >>> res.weighted, bool(abs(res.estimate[0] - np.sum(w * means) / np.sum(w)) < 0.05)
    (True, True)

    A public centre (statistics whose mean is known to be within 0.1 of 0): no midpoint stage

    >>> x = np.random.default_rng(3).normal(0.05, 1.0, size=(2000, 1))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> res = release_means(x, names=("psi",), options=options, rng=np.random.default_rng(4),
    ...                     rules=Rules(public_centre=(np.zeros(1), np.full(1, 0.1))))
    >>> [e.stage for e in res.privacy.entries], float(res.interval.mean())
    (['count', 'scale', 'scale', 'tail', 'mean', 'second moment'], 0.0)
    """
    stated_moment = _moment_rule(rules)
    scale, complete_rows, bounds = rules.scale, rules.complete_rows, rules.bounds
    user_weights, tail, count = rules.user_weights, rules.tail, rules.count
    public_centre, lower = rules.public_centre, rules.lower
    n, d = matrix.shape
    if complete_rows:  # a user's statistics are all there or all missing
        matrix = np.where(np.isnan(matrix).any(axis=1, keepdims=True), np.nan, matrix)
    weights = np.ones(d) if weights is None else weights
    if plan is None:
        plan = ReleasePlan.make(
            n=n,
            d=d,
            epsilon=options.epsilon,
            delta=options.delta,
            stated_scale=scale is not None,
            complete_rows=complete_rows,
            refine=options.refine,
            bounded=bounds is not None,
            weighted=user_weights is not None,
            count=count is None,
            centred=public_centre is not None,
        )
        plan.check()  # every refusal before the first noise draw
        afford(accountant, plan.epsilon, plan.delta)
    if count is not None and plan.counts:
        raise ValueError("a release given an earlier count must not plan its own")
    if (public_centre is not None) != (plan.midpoint_kind == "public"):
        raise ValueError("a public centre and a plan made with centred=True go together")
    gamma = options.gamma
    where = locate(
        matrix,
        plan=plan,
        names=names,
        rng=rng,
        gamma=gamma,
        rules=rules,
    )
    if (tail is None or stated_moment is not None) and scale is None and where.refined:
        where = dataclasses.replace(where, tail=_skew_tails(where))
    plan = where.plan
    users = where.per_column_users
    undefined = where.empty
    # the miss bound for the users the private count finds (post-processing of N̂): where the
    # medians all but surely missed them even for N̂ + 2 sd users, a number would look precise
    # and be wrong. A weighted count W <= N cannot say how many users there are; the models
    # weight users only after an unweighted release over the same users has checked them, so
    # a weighted release takes the plan's bound at n.
    found = users if user_weights is None else np.full(d, float(n))
    miss = plan.miss_given(found)
    lost = (plan.miss_given(found + 2.0 * where.users_sd) > MAX_MISS) & ~undefined
    # most users at 0 and too few others for the scale's median (:func:`_spread`)
    sparse = where.sparse & ~undefined & ~lost
    unfound = lost | sparse
    weights = np.where(undefined | unfound, 0.0, weights)
    plan = _with_tail(plan, measured=bounds is None and scale is None and tail is None)
    if bounds is None:
        radius, budget = _final_radius(where, weights, plan, rules.relative, stated_moment)
    else:  # the public bounds are the interval: nothing is clipped under the assumption
        radius = (bounds[1] - bounds[0]) / 2.0
        budget = plan.final_budget(radius, weights, refined=False)
    mean_budget, moment_budget = budget.split(plan.moment_share)
    # the tail rule: the tail the bulk's scale cannot see, measured (:func:`_tail_rule`)
    tails = _tail_rule(
        matrix, where, plan, names, (radius, mean_budget, moment_budget), rng, _roots(user_weights)
    )
    radius, mean_budget = tails.radius, tails.mean_budget
    # the interval's middle (``centre``) and the anchor the mean is read from: the same but
    # where a support's end moves the interval up (:func:`_supported_centre`)
    centre = anchor = where.centre
    # a weighted second moment is read about the centre (the offset's share is not released):
    # a moved centre would read as spread, so a release that buys one keeps its centre
    if lower is not None and (user_weights is None or moment_budget is None):
        # an anchor moved by s adds s times the count's relative noise to the mean's: at most
        # SHIFT_COST of the sum's own noise
        with np.errstate(divide="ignore", invalid="ignore"):
            reach = np.nan_to_num(
                SHIFT_COST * mean_budget.noise_sd(2.0 * radius) / where.users_sd, nan=np.inf
            )
        if user_weights is None:  # the interval moves by up to w about its anchor for free
            centre = _supported_centre(anchor, radius, lower, radius + reach)
            anchor = np.fmax(anchor, centre - radius)
        else:
            centre = anchor = _supported_centre(anchor, radius, lower, reach)
    with np.errstate(invalid="ignore"):  # in [0, w]: the anchor stays inside the interval
        shift = np.nan_to_num(centre - anchor, nan=0.0)
    # no user lies below a support's end: no mean can be at an interval's edge there
    floor_edge = np.full(d, False) if lower is None else centre - radius <= lower
    root = _roots(user_weights)
    clipped = _centred(matrix, centre, radius, root)
    final = _release(_anchored(clipped, ~np.isnan(matrix), shift), radius, mean_budget, rng)
    entries = [
        *where.entries,
        *tails.entries,
        *_mean_entries("mean", names, mean_budget.epsilon, mean_budget.rho, final, n),
    ]
    spread = where.sd
    if moment_budget is not None:  # the clipped values' own spread: honest under heavy tails
        moment, half = release_second_moment(
            clipped, ~np.isnan(matrix), radius, moment_budget, rng, root
        )
        entries += _mean_entries(
            "second moment", names, moment_budget.epsilon, moment_budget.rho, moment, n
        )
    # the mean of values clipped to ±w lies in ±w: projecting onto it is post-processing, and
    # keeps a noisy count from blowing the ratio up. ``offset`` is from the anchor, ``inside``
    # from the interval's middle; the anchored sum is the released one plus n s (_anchored)
    with np.errstate(invalid="ignore"):
        offset = np.clip((final.total + n * shift) / users, shift - radius, shift + radius)
        inside = offset - shift
    # a mean at the edge of its interval says the interval missed the data (a centre beyond its
    # allowance: a bad event); its number would look precise and be wrong, so it is withheld.
    # Were every user at the edge, |offset| would be w N / N̂ plus noise: its plausible low end
    # (EDGE_SDS sds of the count and of the sum) also marks a miss, down to NEAR_SHARE w.
    edge = radius * (1.0 - EDGE_SDS * where.users_sd / users) - EDGE_SDS * final.sd / users
    threshold = np.minimum(MISSED_SHARE, np.maximum(NEAR_SHARE, edge / radius)) * radius
    missed = (
        ((inside >= threshold) | ((inside <= -threshold) & ~floor_edge))
        & ~undefined
        & ~unfound
        & (bounds is None)
    )
    ledger = settle(accountant, entries, plan)
    crowded = np.zeros(d, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):  # a far miss: infinite figures
        if moment_budget is not None:
            second = np.clip(half + moment.total / users, 0.0, radius**2)
            # about the mean, as a centre may be off it by design (_supported_centre); weighted,
            # about the centre (Σ w_u² (x_u - c)² / W: the offset's share, o² Σ w_u² / W, is not
            # released, and leaving it in errs on the safe side)
            about = second - (inside**2 if root is None else 0.0)
            # the clipped values spreading far beyond the scale the interval was sized on: the
            # private scale saw only part of the users (most at one value, or a tail far heavier
            # than its model), many others were clipped, and the bias bound would not hold. At
            # least CROWDED_SPREAD σ̂ and CROWDED_SHARE w even EDGE_SDS noise sds down (a normal
            # column clipped at w = σ keeps 0.6 σ²; one split between a value and ±w, w / √2)
            low = about - EDGE_SDS * moment.sd / users
            crowded = (
                (low > np.maximum((CROWDED_SPREAD * where.sd) ** 2, (CROWDED_SHARE * radius) ** 2))
                & (scale is None)
                & ~undefined
                & ~unfound
                & ~missed
            )
            # the variance of the clipped values, or σ̂² if larger (its noise is one-sided safe)
            spread = np.sqrt(np.maximum(about, where.sd**2))
    with np.errstate(over="ignore", invalid="ignore"):  # a far miss overflows its figures
        estimate = anchor + offset
        total_sd = np.sqrt((final.sd / users) ** 2 + (np.abs(offset) * where.users_sd / users) ** 2)
        sampling_sd = spread / np.sqrt(users)
        bias = (
            np.zeros(d)
            if bounds is not None
            # a centre moved towards a support's end (_supported_centre) only moves the upper
            # clip out and the lower one towards where no user is: the bound for the unmoved
            # centre still holds, and is kept (not tightened by the move: the tail models of
            # squares are the weak link, and wage-like coverage fell from 0.933 to 0.920 when
            # it was)
            else (
                clipping_bias(where.sd**2, radius, where.centre_error, tail=where.tail)
                if stated_moment is None
                else moment_bias(
                    stated_moment.bounds(d), stated_moment.k, radius, where.centre_error
                )
            )
            * _bias_factor(user_weights, users, n)
        )
        # a measured heavy tail: the mass beyond the final clip, extrapolated from the users
        # the tail stage found beyond its rung (:func:`_tail_radius`); where a support's end
        # moved the interval up by m, the upper clip is w + m from the located centre and no
        # user lies below the lower one, so the mass beyond w + m bounds the bias
        moved = np.nan_to_num(centre - where.centre, nan=0.0)
        beyond = _tail_bias(tails.reach, tails.rung, radius + moved, users)
        bias = np.where(
            tails.heavy, np.maximum(bias, beyond * _bias_factor(user_weights, users, n)), bias
        )
    # a number whose error figures overflow (the medians missed by hundreds of magnitudes) says
    # nothing: withheld like a missed one; so is one its own released figures call implausible
    unbounded = overflowed(estimate, total_sd, sampling_sd, bias)
    unsure = implausible(
        midpoint=where.midpoint,
        sd=where.sd,
        # a public centre is no median: it cannot miss, nor be shared
        alone=np.zeros(d, dtype=bool)
        if where.scan is None or plan.midpoint_kind == "public"
        else where.scan.alone,
        # no more users than n have a statistic (a public fact): a count above n is its noise
        miss=plan.miss_given(np.minimum(found, n)),
    )
    # one cause per withheld column, in this order: the edge, overflowing figures, a scale
    # below the values' resolution, a midpoint beside the users, then the plausibility rule
    kept = ~undefined & ~unfound & ~crowded
    overflow = unbounded & kept & ~missed
    coarse = where.unresolved & kept & ~missed & ~overflow
    aside = np.zeros(d, dtype=bool) if where.beside is None else where.beside
    aside = aside & kept & ~missed & ~overflow & ~coarse
    collapsed = np.zeros(d, dtype=bool) if where.collapsed is None else where.collapsed
    collapsed = collapsed & kept & ~missed & ~overflow & ~coarse & ~aside
    unsure = unsure & kept & ~missed & ~overflow & ~coarse & ~aside & ~collapsed
    at_edge = missed
    missed = at_edge | overflow | coarse | aside | collapsed | unsure
    withheld = undefined | unfound | missed | crowded  # no number, so no error figures either

    def shown(values: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.where(withheld, np.nan, values)

    with np.errstate(over="ignore"):  # a far miss's spread: its square is public as inf
        variance = where.sd**2

    unseen = None if where.scan is None else where.scan.unseen & ~withheld
    return Release(
        names=names,
        estimate=shown(estimate if unseen is None else np.where(unseen, 0.0, estimate)),
        noise_sd=shown(total_sd),
        noise_scale=final.scale / users,
        noise_kind=budget.kind,
        sampling_sd=shown(sampling_sd),
        bias=shown(bias),
        interval=np.stack([centre - radius, centre + radius], axis=1),
        midpoint=where.midpoint,
        scale=variance,
        users=np.atleast_1d(where.users),
        users_sd=where.users_sd,
        privacy=ledger,
        n=n,
        variant="default (refined)"
        if where.refined
        # the midpoint's check measured the centre's error (it sized the interval)
        else "default (checked)"
        if where.beside is not None and plan.ranked
        else "default",
        bad_events=np.minimum(gamma * (2.0 if where.refined else 1.0) + miss, 1.0),
        notes=plan.notes
        + (
            ()
            if user_weights or rules.partial_users
            else user_notes(where.users, where.users_sd, n, names, undefined)
        )
        + empty_notes(names, undefined)
        + lost_notes(
            names, lost, miss, few_users(where.users, where.users_sd, n, d) & (user_weights is None)
        )
        + where.scale_notes(names, sparse=sparse, shown=~withheld)
        + _heavy_notes(names, tails.heavy & ~withheld, bias, radius, centre)
        + crowded_notes(names, crowded)
        + missed_notes(names, at_edge, overflow, coarse, where.midpoint)
        + beside_notes(names, aside, collapsed)
        + implausible_notes(names, unsure),
        failed=missed | unfound | crowded,
        weighted=user_weights is not None,
        unseen=unseen,
    )


def implausible(
    *,
    midpoint: NDArray[np.float64],
    sd: NDArray[np.float64],
    alone: NDArray[np.bool_],
    miss: NDArray[np.float64],
) -> NDArray[np.bool_]:
    """The plausibility rule: where a release's own figures say its number is not what its
    error figures claim, so that it is withheld (NaN with a note) rather than printed, plotted
    or given a p-value.

    A private median on the log grid that misses lands on an arbitrary cell, up to hundreds of
    magnitudes from the data; the interval, the noise and the error figures then scale with it
    (an estimate of -6e65 with an SE of 1e66 is "honest", and useless). Two released facts say
    so. ``miss`` is the bound on the medians' miss given the private count, at most n (the
    bad-event probability the results report, less γ, where the count is below n): above
    :data:`~dplong.privacy.budget.DOUBT_MISS` the number is more likely off than not.
    ``alone`` marks the columns whose scale stage counted no user off one cell of ``|x - m̂|``
    or far inside it (:class:`ScaleScan`; midpoints that are medians): the users share one
    value (or two), or the scale's median landed far above all of them. A value shared at the
    midpoint lies in the midpoint's cell, so its scale ``sd`` (σ̂) is at most that cell's
    half-width over the MAD factor; a scale beyond :data:`ALONE_REACH` times that and
    :data:`FAR_OUT` times ``|m̂|`` or more is the median's miss, and the column is withheld. A
    scale wider than a shared value's but below that is only wider than needed (users at two
    values about the midpoint): its figures say so, and it is kept. So is a midpoint that
    missed every user by D with a scale of about D: no released number tells it from users
    spread that far.

    Every input is a released number or a post-processing of one (the scale stage's verdict is
    of its private count): the rule is post-processing, of sensitivity 0, and costs no budget.

    Examples
    --------
    A scale of 1e60 around a midpoint of 0.5 that the scale stage found alone is a miss; a
    scale within the midpoint's cell is a shared value; a scale of 15 about 80 is kept; a
    release whose medians miss with probability 0.7 is withheld whatever its scale:

    >>> import numpy as np
    >>> from dplong.privacy.engine import implausible
    >>> implausible(midpoint=np.array([0.5, 0.5, 80.0, 0.5]),
    ...             sd=np.array([1e60, 1e-4, 15.0, 0.1]),
    ...             alone=np.array([True, True, True, False]),
    ...             miss=np.array([0.0, 0.0, 0.0, 0.7])).tolist()
    [True, False, False, True]
    """
    with np.errstate(over="ignore", invalid="ignore"):
        wide = ~(sd <= ALONE_REACH * GRID.half_width_at(midpoint) / MAD_FACTOR)
        above = ~(sd < FAR_OUT * np.abs(midpoint))
    return np.asarray((alone & wide & above) | (miss > DOUBT_MISS))


def overflowed(*figures: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Where any of a release's figures is not finite: a number whose error figures overflow
    (a centre missed by hundreds of magnitudes) says nothing, and is withheld."""
    return np.asarray(~np.logical_and.reduce([np.isfinite(f) for f in figures]))


def _spread(
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
    :func:`locate`) at ``plan.spread`` each, then :func:`_shared` on the columns whose midpoint
    is not 0; returns the medians, what was found (:class:`ScaleScan`) and the ledger entries.
    ``users`` is the private count of users with a statistic per column (n when weighted).

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
    median over them (:meth:`~dplong.privacy.budget.ReleasePlan.zero_split`). Then, by
    post-processing of that count: fewer than the count can tell from none (``max(2, 3 sd)``)
    and the column is taken to be 0 (the spread's floor, as a constant column gets; the release
    says so); plausibly fewer than the n users (``K̂ + 2 sd < n``) and so few that the median
    over them all but surely misses them (:func:`_too_few`): a second median over them, sized
    for K̂ users from the final stage (:meth:`~dplong.privacy.budget.ReleasePlan.second_spread`,
    recorded in ``scan.reruns`` as for a shared value), where its own miss bound is below
    :data:`~dplong.privacy.budget.NOTE_MISS`; else the column's scale is not found (its mean is
    withheld). Each user's part in each mechanism depends on its own value and the released
    midpoint only, and the count's and the median's ε add up to the stage's per column, plus any
    second median's ε, which the final stage gives up."""
    n, d = distance.shape
    at_zero = midpoint == ZERO_CELL
    zero_count, zero_median = plan.zero_split()
    median_epsilon = np.where(at_zero, zero_median, plan.spread)
    with np.errstate(invalid="ignore"):
        zero = (matrix >= 0.0) & (matrix < 2.0 * ZERO_CELL)
    # zeros count above the cells below them, never below; where the midpoint is 0, nowhere
    below = np.where(zero, 0.0, 1.0)
    above = np.where(zero & at_zero, 0.0, 1.0)
    deviation = private_median(distance, SPREAD_GRID, median_epsilon, rng, weights=(below, above))
    entries = _median_entries("scale", names, median_epsilon)
    sparse, unseen, alone, shared = (np.zeros(d, dtype=bool) for _ in range(4))
    reach = np.zeros(d)
    zero_reruns: tuple[float, ...] = ()
    columns = np.flatnonzero(at_zero)
    if columns.size:
        counted, sd, count_entries = _lattice_count(
            np.sum(~np.isnan(distance[:, columns]) & ~zero[:, columns], axis=0),
            zero_count,
            "scale",
            "lattice Laplace count of users off 0",
            tuple(names[j] for j in columns),
            rng,
        )
        entries += count_entries
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
        second = plan.second_spread(np.maximum(counted, 1.0) / users[columns])
        short = ~unseen[columns] & some & _too_few(counted, sd, median_epsilon[columns])
        again = (
            short & (second > median_epsilon[columns]) & ~_too_few(counted, sd, second, NOTE_MISS)
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
            entries += _median_entries("scale", tuple(names[j] for j in rerun), second[again])
            zero_reruns = tuple(second[again].tolist())
        sparse[columns] = short & ~again
        # taken as 0: the floor (and for a withheld column, whose median is of too few users to
        # mean anything)
        deviation[unseen | sparse] = 0.0
    others = np.flatnonzero(~at_zero)
    reruns: tuple[float, ...] = ()
    strayed = np.zeros(d, dtype=bool)
    if others.size and plan.shared:
        (
            deviation[others],
            alone[others],
            sparse[others],
            shared[others],
            strayed[others],
            reach[others],
            reruns,
            shared_entries,
        ) = _shared(
            distance[:, others],
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
    scan = ScaleScan(sparse, unseen, alone, shared, reach, zero_reruns + reruns, strayed)
    return deviation, scan, entries


def _shared(
    distance: NDArray[np.float64],
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
    float,
    tuple[float, ...],
    list[LedgerEntry],
]:
    """The scale stage where most users share one value other than 0, on the columns whose
    midpoint is not 0 (``distance``, the first medians ``deviation`` and the zeros' weights
    ``below`` of those columns). Returns their scales, where they are ``alone``, ``sparse``,
    ``shared`` and ``strayed`` (below), the count's reach, the ε of each second median run and
    of its check, and the entries.

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
    users in ``c0`` or far inside it weigh 0, the zeros keep their weights; at
    :meth:`~dplong.privacy.budget.ReleasePlan.second_spread` each, taken from the final stage).
    Where the count sees none off it (below ``max(2, 3 sd)``) the column is (all but) constant
    and keeps ``c0`` (``scan.alone``, with a note saying how many users could go unseen, as for
    zeros); where the median over those seen would all but surely miss them (:func:`_too_few`)
    the column is withheld (``scan.sparse``). A second median over so few users may still miss
    them (its miss bound given the count is up to :data:`~dplong.privacy.budget.MAX_MISS`), far
    above or below, and no released number would tell (most users share a value near the
    midpoint, so the scale's check, :func:`_inside_count`, does not apply): its own check
    follows (:func:`_band_check`, at :meth:`~dplong.privacy.budget.ReleasePlan.second_check`,
    also from the final stage), and where it finds the users off the value outside the
    median's band the column is withheld (``strayed``). Each user's part in the count, the
    second median and its check depends on its own value and released numbers only."""
    cell = np.searchsorted(SPREAD_GRID.centres, deviation)
    low, high = SPREAD_GRID.edges[cell], SPREAD_GRID.edges[cell + 1]
    with np.errstate(invalid="ignore"):  # NaN: no statistic, counted nowhere
        inside = (distance < SHARED_BELOW * low) | ((distance >= low) & (distance < high))
    off = ~np.isnan(distance) & ~inside
    counted, sd, entries = _lattice_count(
        off.sum(axis=0), plan.shared, "scale", "lattice Laplace count off the cell", names, rng
    )
    reach = max(2.0, 3.0 * sd)
    # clearly fewer, two sds of the difference's noise: a continuous column wrongly taken for
    # one would pay a second median, and be withheld when the budget cannot afford it
    limit = (1.0 - SHARED_SHARE) * users
    shared = counted + 2.0 * math.hypot(sd, (1.0 - SHARED_SHARE) * users_sd) < limit
    alone = shared & (counted < reach)
    # the median sized for the users off the value, as the plan sizes it for N̂ (for_users)
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
            weights=(np.where(aside, 0.0, below[:, again]), np.where(aside, 0.0, 1.0)),
        )
        chosen = tuple(name for name, a in zip(names, again, strict=True) if a)
        entries += _median_entries("scale", chosen, second[again])
        # its check, sized for the users off the value at the low end of their count
        checks = plan.second_check(counted[again] - 2.0 * sd)
        band, reach_band, check_entries = _band_check(
            distance[:, again], off[:, again], deviation[again], checks, chosen, gamma, rng
        )
        entries += check_entries
        # more of them outside its band than in it, clearly: the median missed them
        strayed[again] = band >= reach_band
        reruns = tuple(second[again].tolist()) + tuple(checks.tolist())
    deviation[sparse] = 0.0  # withheld: a median of the shared value means nothing
    return deviation, alone, sparse, again, strayed, reach, reruns, entries


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


def _skew_tails(where: Location) -> tuple[Tail, ...]:
    """The tail model of each column's final stage, from released numbers: a rough mean
    :data:`SKEWED_SDS` plug-in sds or more from the median says the column is skewed (an
    exponential's mean is 0.43 of its MAD-based sd from its median, a log-normal's 0.73; a
    symmetric column's differ by their noise), and the normal tail would clip its long side
    at ~3 sds with a bias bound that cannot see it (Exp(1) at n = 2000, ε = 1: 5 % of the mean
    against a bound of 0.5 %). Skewed columns get the exponential tail model (wider radii,
    their bias bounded); the others the normal plug-in."""
    skew = np.abs(where.centre - where.midpoint) / where.sd
    # a scale measured on the users off a shared value: their skew is diluted by the others
    shared = np.zeros(skew.shape, dtype=bool) if where.scan is None else where.scan.shared
    return tuple(
        "exponential" if s >= SKEWED_SDS or a else "gaussian"
        for s, a in zip(skew, shared, strict=True)
    )


def _rank_quantile(
    ranks: float | NDArray[np.float64], users: NDArray[np.float64]
) -> NDArray[np.float64]:
    """How many σ a median ``ranks`` off may lie from the centre, for a normal spread (capped
    at 3σ: beyond, the midpoint is unreliable and the plan says so)."""
    share = np.minimum(0.5 + ranks / np.maximum(users, 1.0), 0.9987)
    return np.asarray(special.ndtri(share))


def _square_spread(
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
    (:func:`locate`), so that the centre's error bound and the refinement see it.
    Post-processing of the released midpoint and scale."""
    implied = np.array([SUPPORT_SPREAD.get(str(k), 0.0) for k in kinds])
    with np.errstate(invalid="ignore"):  # a NaN midpoint (no data) keeps its NaN scale
        floor = np.where(np.isfinite(lower), IMPLIED_SHARE * implied * (midpoint - lower), 0.0)
        return np.asarray(np.fmax(sd, floor))


@dataclass(frozen=True)
class TailFinding:
    """What the tail rule (:func:`_tail_rule`) found, per column: the final ``radius``, the
    ``heavy`` columns, the upper confidence count ``reach`` of users beyond the rung ``rung``
    that anchors a heavy column's bias bound (:func:`_tail_bias`), the rule's ledger
    ``entries`` and the means' budget it leaves (``mean_budget``). Where the rule does not
    run: the bulk's radius, no heavy column, no entry, the budget untouched."""

    radius: NDArray[np.float64]
    heavy: NDArray[np.bool_]
    reach: NDArray[np.float64]
    rung: NDArray[np.float64]
    entries: tuple[LedgerEntry, ...]
    mean_budget: FinalBudget


def _tail_rule(
    matrix: NDArray[np.float64],
    where: Location,
    plan: ReleasePlan,
    names: tuple[str, ...],
    final: tuple[NDArray[np.float64], FinalBudget, FinalBudget | None],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> TailFinding:
    """The tail rule (design notes, "Heavy tails"): where the plan has a tail share
    (:func:`_with_tail`: no bounds, scale or tail stated), one count beyond the first rung
    (:func:`_tail_radius`) carved from the means' budget, and where it finds heavy columns a
    second count beyond their widened radii (:func:`_second_rung`), after which the means take
    up what the split's composition leaves (:func:`~dplong.privacy.budget.top_up`). ``final``
    is the bulk's radii, the means' budget and the second moment's (None if not bought)."""
    radius, mean_budget, moment_budget = final
    d = radius.shape[0]
    quiet = TailFinding(radius, np.zeros(d, dtype=bool), np.zeros(d), np.zeros(d), (), mean_budget)
    if not plan.tail:
        return quiet
    tail_epsilon, mean_budget = mean_budget.tail_split(plan.tail)
    if not np.any(tail_epsilon > 0.0):
        return dataclasses.replace(quiet, mean_budget=mean_budget)
    joint = float(np.sum(tail_epsilon))
    users = where.per_column_users
    wide, heavy, reach, rung, _ = _tail_radius(
        matrix, where, radius, joint, mean_budget.epsilon, users, rng, root
    )
    entries = [_tail_entry(names, joint)]
    if heavy.any():  # a second rung at the widened clip, from the means' budget
        rung_epsilon, mean_budget = mean_budget.tail_split(SECOND_RUNG * plan.tail)
        rung_total = float(np.sum(rung_epsilon))
        wide, reach, rung = _second_rung(
            matrix,
            where.centre,
            heavy,
            (radius, wide),
            (rung, reach),
            rung_total,
            mean_budget.epsilon,
            rng,
            root,
        )
        counted = tuple(name for name, h in zip(names, heavy, strict=True) if h)
        entries.append(_tail_entry(counted, rung_total))
        # the split call composes below its sum: the means take up the rest
        others = [*where.entries, *entries]
        moment_costs = [] if moment_budget is None else moment_budget.costs()
        mean_budget = top_up(plan, [e.cost for e in others] + moment_costs, mean_budget)
    return TailFinding(wide, heavy, reach, rung, tuple(entries), mean_budget)


def _tail_radius(
    matrix: NDArray[np.float64],
    where: Location,
    radius: NDArray[np.float64],
    epsilon: float,
    mean_epsilon: NDArray[np.float64],
    users: NDArray[np.float64],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64], float]:
    """The tail stage: one private count of the users beyond a rung in any column, and the
    final radii it implies (design notes, "Heavy tails").

    ``r_j = TAIL_RUNG σ̂_j`` (σ̂ the released scale; beyond the bulk's radius ``w`` where that
    is narrower, so that normal tails leave next to nobody there) and ``C = #{u : |x_uj - c_j|
    > r_j for some j}`` (with precision weights, ``root`` = ``√w_u``, the standardised ``√w_u
    |x_u - c|`` the final stage clips), which has sensitivity 1 however many columns there
    are: two-sided geometric noise at ``epsilon``, the columns' summed tail ε (one count per
    release: the heavy coefficients of a regression show up together, and at small n ε one
    count at d times the ε sees them where d counts could not). A count above
    :data:`TAIL_RATIO` times what normal tails of σ̂ (:data:`TAIL_SLACK` lower) put beyond the
    rungs (their sum over the columns), by :data:`HEAVY_SDS` noise sds, marks the columns
    heavy: the bulk's scale does not see their tails. Each heavy column's radius balances the
    noise of its mean against the clipping bias of a Pareto tail of index α
    (:data:`TAIL_INDEX`) through ``(r_j, C_j)``, ``C_j = C / d`` its share of the users found:
    beyond ``R >= r`` lie ``K R^(1-α)``, ``K = C_j r^α / (α - 1)``, of excess
    (:func:`_tail_bias`, whose bound takes all of C: no column has more users beyond its
    rung), against a Laplace noise sd of ``2√2 R / ε_m`` for the sum; so ``R^α = K √(α - 1)
    ε_m / (2√2)``, at least ``r`` and ``w`` and at most :data:`TAIL_REACH` times ``w``.
    Returns the radii, the heavy columns, the upper confidence count ``C + EDGE_SDS sd`` (per
    column), the rungs and the noise sd of the count.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        rung = TAIL_RUNG * where.sd
        deviations = np.abs(matrix - where.centre) * (1.0 if root is None else root)
        # NaN: no statistic, never beyond
        exact = int(np.sum(np.any(deviations > rung, axis=1)))
    rate = float(geometric_rate(epsilon, 1.0))
    count = float(exact + two_sided_geometric(rng, rate, (1,))[0])
    sd = math.sqrt(float(two_sided_geometric_variance(rate)))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        normal = 2.0 * users * special.ndtr(-TAIL_SLACK * rung / where.sd)
        expected = float(np.nansum(normal))
        measurable = np.isfinite(rung) & (rung > 0)
        heavy = (count > TAIL_RATIO * expected + HEAVY_SDS * sd) & measurable
        # bias K R^(1-α) with K = C r^α / ((α - 1) N̂) against noise c R, c = 2√2 / (N̂ ε_m):
        # their squares add up least at R^α = K √(α - 1) / c
        a = TAIL_INDEX
        # the radius is balanced for a column's share of the users found (the bias bound below
        # takes them all): the heavy coefficients of a regression share their tail's users
        # (issue-10 slopes at n = 10,000: all of C cost 1.5 times the MSE for no coverage)
        share = max(count / max(int(np.sum(measurable)), 1), 1.0)
        scaled = share * mean_epsilon / (2.0 * math.sqrt(2.0) * math.sqrt(a - 1.0))
        # never inside the rung, beyond which alone the Pareto tail is anchored
        balanced = np.maximum(rung * scaled ** (1.0 / a), rung)
        balanced = np.clip(balanced, radius, TAIL_REACH * radius)
        final = np.where(heavy, np.fmin(balanced, MAX_RADIUS), radius)
    reach = np.full(rung.shape, count + EDGE_SDS * sd)
    return final, np.asarray(heavy), reach, rung, sd


def _second_rung(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    heavy: NDArray[np.bool_],
    radii: tuple[NDArray[np.float64], NDArray[np.float64]],
    anchor: tuple[NDArray[np.float64], NDArray[np.float64]],
    epsilon: float,
    mean_epsilon: NDArray[np.float64],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The tail stage's second rung, where the first found heavy columns: one private count
    ``C₂`` of the users beyond the widened radius ``R_j`` of a heavy column (sensitivity 1,
    two-sided geometric noise at ``epsilon``), against what the Pareto tails through the first
    rung ``(r_j, C)`` put there, at most ``Σ_j C (r_j / R_j)^α`` (``anchor`` = (r, C + 3 sd)).

    A tail that decays from the first rung leaves few users beyond R, and the first rung's
    radius and bias bound stand. A tail that does not — a lump of users far beyond the bulk,
    as where 90 % of the users sit near 0 and the others have a lognormal tail: a single rung
    near the bulk sees only that they are beyond it — leaves more than the Pareto tails allow,
    by :data:`LUMP_SDS` noise sds: the Pareto tails are re-anchored at ``(R_j, C₂)`` and the
    radius balanced again from there (:func:`_tail_radius`; at least R and at most
    :data:`TAIL_REACH` times the bulk's radius, the first of ``radii``; the second are the
    widened radii R). Returns the radii and, per column, the anchors ``(C + 3 sd, r)`` of the
    bias bounds (:func:`_tail_bias`). A function of the data through the count only."""
    bulk, wide = radii
    rung, reach = anchor
    with np.errstate(over="ignore", invalid="ignore"):
        deviations = np.abs(matrix - centre) * (1.0 if root is None else root)
        exact = int(np.sum(np.any(deviations > np.where(heavy, wide, np.inf), axis=1)))
    rate = float(geometric_rate(epsilon, 1.0))
    count = float(exact + two_sided_geometric(rng, rate, (1,))[0])
    sd = math.sqrt(float(two_sided_geometric_variance(rate)))
    a = TAIL_INDEX
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        predicted = float(np.sum(np.where(heavy, reach * (rung / wide) ** a, 0.0)))
        lump = count > min(predicted, float(np.max(reach))) + LUMP_SDS * sd
        if not lump:
            return wide, reach, rung
        share = max(count / max(int(np.sum(heavy)), 1), 1.0)
        scaled = share * mean_epsilon / (2.0 * math.sqrt(2.0) * math.sqrt(a - 1.0))
        balanced = np.clip(np.maximum(wide * scaled ** (1.0 / a), wide), wide, TAIL_REACH * bulk)
        final = np.where(heavy, np.fmin(balanced, MAX_RADIUS), wide)
    upper = np.full(wide.shape, count + EDGE_SDS * sd)
    return final, np.where(heavy, upper, reach), np.where(heavy, wide, rung)


def _tail_bias(
    reach_users: NDArray[np.float64],
    tail_radius: NDArray[np.float64],
    radius: NDArray[np.float64],
    users: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The clipping bias beyond ``radius`` R of a Pareto tail of index α (:data:`TAIL_INDEX`)
    with ``reach_users`` C users beyond ``tail_radius`` r: ``C r^α / ((α - 1) R^(α-1) N̂)``
    (:func:`_tail_radius`)."""
    a = TAIL_INDEX
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        excess = reach_users * tail_radius * (tail_radius / radius) ** (a - 1.0) / (a - 1.0)
        return np.asarray(excess / np.maximum(users, 1.0))


def _tail_entry(names: tuple[str, ...], epsilon: float) -> LedgerEntry:
    """The tail stage's one ledger entry: a lattice Laplace count (sensitivity 1) over the
    columns."""
    rate = float(geometric_rate(epsilon, 1.0))
    return LedgerEntry("tail", _TAIL, ", ".join(names), epsilon, 0.0, 0.0, 1.0, 1.0 / rate)


def _heavy_notes(
    names: tuple[str, ...],
    heavy: NDArray[np.bool_],
    bias: NDArray[np.float64],
    radius: NDArray[np.float64],
    centre: NDArray[np.float64],
) -> tuple[str, ...]:
    """The reliability warning of the heavy-tailed columns (one, as their tail count is one):
    how far out each was clipped, and how much of its mean the interval allows for beyond the
    clip."""
    columns = np.flatnonzero(heavy)
    if not columns.size:
        return ()
    if columns.size == 1:
        j = int(columns[0])
        return (
            f"{names[j]!r}: heavy tail (found privately). Values beyond"
            f" {centre[j] + radius[j]:.4g} or below {centre[j] - radius[j]:.4g} were clipped; the"
            f" interval allows up to {bias[j]:.3g} for them (a Pareto tail of index"
            f" {TAIL_INDEX:g}), a heavier tail could hide more: give public bounds if known.",
        )
    ranges = [f"[{centre[j] - radius[j]:.4g}, {centre[j] + radius[j]:.4g}]" for j in columns]
    allowances = [f"{bias[j]:.3g}" for j in columns]
    return (
        f"{_listed([repr(names[j]) for j in columns])}: heavy tails (found privately) clipped"
        f" outside {_listed(ranges)}; the intervals allow up to {_listed(allowances)} (Pareto"
        f" tails of index {TAIL_INDEX:g}; heavier ones could hide more: give public bounds).",
    )


def _listed(items: list[str]) -> str:
    """``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _supported_centre(
    centre: NDArray[np.float64],
    radius: NDArray[np.float64],
    lower: NDArray[np.float64],
    reach: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The centre of the final interval ``c ± w`` moved up, by at most ``reach``, towards
    ``lower + w`` where ``c - w`` is below the support's public end ``lower``: the same width
    (so the same sensitivity and noise in the sum), less of it spent below every user, and the
    upper clip farther out (a square's right tail: on the wage panel ``z'z`` of ``expersq``
    beyond ``exper`` lost 20-30 % of its mean to an interval whose lower half held no one).
    ``reach`` bounds the move: a mean read from the moved centre, ``m + S / N̂``, carries ``(m -
    x̄) (N̂ - N) / N̂``, the count's noise times the move; read from the unmoved anchor
    (:func:`_anchored`) it moves up to w at no such cost, and only the rest is priced. A
    function of released numbers and public facts: post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.engine import _supported_centre
    >>> centre, radius = np.array([90.0, 90.0, 90.0]), np.array([180.0, 60.0, 180.0])
    >>> _supported_centre(centre, radius, np.zeros(3), np.array([np.inf, np.inf, 40.0])).tolist()
    [180.0, 90.0, 130.0]
    """
    with np.errstate(invalid="ignore"):  # a NaN centre (no data) stays NaN
        return centre + np.clip(lower + radius - centre, 0.0, reach)


def _anchored(
    clipped: NDArray[np.float64], present: NDArray[np.bool_], shift: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The terms of the final sum when the interval's middle m lies ``shift`` = s in [0, w]
    above the anchor a the mean is read from (a support's end moved the interval up,
    :func:`_supported_centre`): a user with a statistic gives ``clip(x - m, ±w)``, one without
    gives ``-s``. Every term lies in ``±w``, so replacing one user moves the sum by at most 2w
    as before; and the sum plus ``n s`` (n public) is ``Σ (clip(x - m, ±w) + s)`` over the
    users with a statistic, the sum of their values clipped to ``[m - w, m + w]`` about the
    anchor. The mean is then ``a + (sum + n s) / N̂``: the count's noise multiplies its
    distance to the anchor, not to the moved middle. Unchanged where s = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.engine import _anchored
    >>> clipped = np.array([[0.5], [-1.0], [0.0]])  # about m; the third user has no statistic
    >>> present = np.array([[True], [True], [False]])
    >>> _anchored(clipped, present, np.array([0.75]))[:, 0].tolist()
    [0.5, -1.0, -0.75]
    """
    if not np.any(shift):
        return clipped
    return np.where(present, clipped, -shift)


def _centred(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    radius: NDArray[np.float64],
    root: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Alg 4's projection, centred: ``clip(x - c, ±w)``, 0 for users without a statistic; with
    ``root`` (n x 1, ``√w_u <= 1``) the weighted ``√w_u clip(√w_u (x - c), ±w)``, which stays
    within ``±w`` (a product with a factor at most 1 never rounds past it)."""
    with np.errstate(invalid="ignore"):
        if root is None:
            clipped = np.clip(matrix - centre, -radius, radius)
        else:
            clipped = root * np.clip(root * (matrix - centre), -radius, radius)
    return np.where(np.isnan(clipped), 0.0, clipped)


def release_second_moment(
    clipped: NDArray[np.float64],
    present: NDArray[np.bool_],
    radius: NDArray[np.float64],
    budget: FinalBudget,
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> tuple[LatticeRelease, NDArray[np.float64]]:
    """The lattice sum of the squares of the clipped contributions ``v_u`` (n x d, ``|v_u| <=
    √w_u r``; ``present`` where a user has a statistic) and its half-range ``r²/2``.

    Each square ``v_u² ∈ [0, w_u r²]`` is centred at ``w_u r²/2`` (``w_u = 1`` without weights,
    ``root`` = ``√w_u``) and so lies in ``±r²/2``: replacing one user moves the sum by at most
    r², whatever the weights. The centring adds up to ``W r²/2`` over the users present, which
    the caller adds back with the released count. The half-range is capped for the lattice
    (:data:`MAX_RADIUS`; the squares are clipped to it).

    Examples
    --------
    With a vast ε the noise vanishes: the sum plus the centring is the sum of the squares.

    >>> import numpy as np
    >>> from dplong.privacy.engine import release_second_moment
    >>> from dplong.privacy.budget import FinalBudget
    >>> v = np.array([[0.5], [-1.0], [0.0]])  # three users' contributions, radius 1
    >>> budget = FinalBudget("laplace", np.array([1e300]), np.zeros(1))
    >>> moment, half = release_second_moment(v, np.ones((3, 1), dtype=bool), np.array([1.0]),
    ...                                      budget, np.random.default_rng(0))
    >>> float(moment.total[0] + 3 * half[0])
    1.25
    """
    with np.errstate(over="ignore"):  # a far miss's radius squares to inf: capped
        half = np.minimum(radius**2 / 2.0, MAX_RADIUS)
        centring = half if root is None else half * root**2
        squares = np.where(present, clipped**2 - centring, 0.0)
    return _release(np.clip(squares, -half, half), half, budget, rng), half


def _release(
    clipped: NDArray[np.float64],
    radius: NDArray[np.float64],
    budget: FinalBudget,
    rng: np.random.Generator,
) -> LatticeRelease:
    """The lattice sum of centred clipped values with the budget's mechanism."""
    if budget.kind == "gaussian":
        return release_gaussian_sum(clipped, radius, budget.rho, rng)
    return release_bounded_sum(clipped, radius, budget.epsilon, rng)


def _roots(user_weights: UserWeights | None) -> NDArray[np.float64] | None:
    """``√w_u`` as a column (n x 1), or None without weights."""
    return None if user_weights is None else np.sqrt(user_weights.clipped())[:, None]


def _bias_factor(
    user_weights: UserWeights | None, users: NDArray[np.float64], n: int
) -> NDArray[np.float64] | float:
    """``Σ √w_u / Σ w_u``, bounded by ``1 / √floor`` (each ``√w_u <= w_u / √floor``) and by
    ``√(n / W)`` (Cauchy–Schwarz): how a per-user bound on the standardised clipping bias
    becomes one on the weighted mean. 1 without weights."""
    if user_weights is None:
        return 1.0
    return np.minimum(1.0 / math.sqrt(user_weights.floor), np.sqrt(n / np.maximum(users, 1.0)))


def _final_radius(
    where: Location,
    weights: NDArray[np.float64],
    plan: ReleasePlan,
    relative: bool = False,
    moment: Moment | None = None,
) -> tuple[NDArray[np.float64], FinalBudget]:
    """Accurate radii and the final budget shared by them (two rounds: radii ↔ shares);
    ``relative``: shared as if every radius were 1 (each column's noise in its own units);
    under a stated ``moment`` bound, the radii balancing its bias against the noise, never
    inside the bulk's (:func:`~dplong.privacy.radius.moment_radius`)."""

    def shared(radius: NDArray[np.float64]) -> FinalBudget:
        units = np.ones_like(radius) if relative else radius
        return plan.final_budget(units, weights, refined=where.refined, fallback=where.fallback)

    sd, error, users = where.sd, where.centre_error, where.per_column_users
    # fmin: a centre missed by hundreds of magnitudes has NaN figures; its radius is the
    # largest (the release then withholds the column, its error figures not being finite)
    with np.errstate(over="ignore", invalid="ignore"):
        radius = np.fmin(3.0 * sd + error, MAX_RADIUS)
    budget = shared(radius)
    for _ in range(2):
        per_width = budget.noise_sd(2.0 / users)
        with np.errstate(over="ignore", invalid="ignore"):
            accurate = accurate_radius(sd**2, error, per_width, tail=where.tail)
            if moment is not None:
                bounds = moment.bounds(len(sd))
                accurate = moment_radius(bounds, moment.k, error, per_width, accurate, TAIL_REACH)
        radius = np.fmin(accurate, MAX_RADIUS)
        budget = shared(radius)
    return radius, budget


def _count(
    matrix: NDArray[np.float64],
    plan: ReleasePlan,
    names: tuple[str, ...],
    complete_rows: bool,
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], float, list[LedgerEntry]]:
    """Private counts of users with a statistic (one, or one per column), floored at 1; with
    ``root`` (``√w_u``) the weighted counts :func:`_weighted_count`."""
    # NaN, and only NaN, means no statistic (as for the medians and the clipped sums, where an
    # infinite statistic is clipped like any other): a count that left out infinite values
    # would divide sums that include them
    found = ~np.isnan(matrix)
    present = np.asarray(found.all(axis=1, keepdims=True) if complete_rows else found, dtype=bool)
    targets = ("users with a statistic",) if complete_rows else names
    if root is not None:
        return _weighted_count(present, root**2, plan.count, targets, rng)
    # not projected onto [0, n]: that would bias the ratio c + S / N̂ when its offset is large
    return _lattice_count(
        present.sum(axis=0), plan.count, "count", "lattice Laplace count", targets, rng
    )


def _lattice_count(
    exact: NDArray[np.int64],
    epsilon: float,
    stage: str,
    mechanism: str,
    targets: tuple[str, ...],
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], float, list[LedgerEntry]]:
    """Counts (sensitivity 1 each: one user in or out) plus two-sided geometric noise at ε
    each, their noise sd and one ledger entry per target."""
    rate = geometric_rate(epsilon, 1.0)
    noisy = exact + two_sided_geometric(rng, rate, exact.shape)
    sd = float(np.sqrt(two_sided_geometric_variance(rate)))
    entries = [
        LedgerEntry(stage, mechanism, t, epsilon, 0.0, 0.0, 1.0, float(1.0 / rate)) for t in targets
    ]
    return noisy.astype(np.float64), sd, entries


def _side_count(
    matrix: NDArray[np.float64],
    midpoint: NDArray[np.float64],
    epsilon: float,
    names: tuple[str, ...],
    gamma: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], float, list[LedgerEntry]]:
    """The midpoint's check: per column, the users above the midpoint's grid cell less those
    below it (users in the cell, or without a statistic, count on neither side), plus two-sided
    geometric noise at ε each. Replacing one user moves it by at most 2 (from one side to the
    other): sensitivity 2, recorded in the ledger. Returns the noisy counts, a ``reach`` their
    noise exceeds in magnitude with probability at most γ, and one entry per column.

    Of the users with a statistic, at most ``(|S| + reach) / 2`` more than half lie on one side
    of the cell (with probability 1 - γ): the median's rank error, measured, where the report-
    noisy-max's worst case over every cell of the grid (:func:`~dplong.privacy.quantile.
    rank_error`) is about ten times wider at these ε. A count near ±N says the midpoint lies
    beside (nearly) every user, which no other released number shows once the scale has
    measured the distance (:data:`BESIDE_SHARE`)."""
    cell = np.searchsorted(GRID.centres, midpoint)  # the cell whose report is the midpoint
    low, high = GRID.edges[cell], GRID.edges[cell + 1]
    with np.errstate(invalid="ignore"):  # NaN: no statistic, on neither side
        exact = np.sum(matrix >= high, axis=0) - np.sum(matrix < low, axis=0)
    rate = float(geometric_rate(epsilon, 2.0))
    noisy = exact + two_sided_geometric(rng, rate, exact.shape)
    entries = [
        LedgerEntry("midpoint", _SIDES, name, epsilon, 0.0, 0.0, 2.0, 1.0 / rate) for name in names
    ]
    return noisy.astype(np.float64), _side_reach(epsilon, gamma), entries


def _inside_count(
    distance: NDArray[np.float64],
    deviation: NDArray[np.float64],
    plain: NDArray[np.bool_],
    users: NDArray[np.float64],
    epsilon: float,
    names: tuple[str, ...],
    gamma: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.bool_], list[LedgerEntry]]:
    """The scale's check on the ``plain`` columns (no shared value found): the users whose
    ``distance`` to the midpoint lies between :data:`SHARED_BELOW` and :data:`INSIDE_MADS`
    times the scale's median ``deviation``, plus two-sided geometric noise at ε each
    (sensitivity 1: one user in or out).
    Returns where the count, even ``reach`` above it (its noise exceeds that with probability at
    most γ), is below :data:`INSIDE_SHARE` of the ``users`` (private counts, or n): the scale's
    median missed below or above them; and one ledger entry per column. Which columns are read
    is post-processing of released numbers."""
    # every column is counted (the plan spends the stage on each), the plain ones read
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN: no statistic, not counted
        ratio = distance / deviation
        near = (ratio >= SHARED_BELOW) & (ratio <= INSIDE_MADS)
    counted, _, entries = _lattice_count(
        near.sum(axis=0), epsilon, "scale", "lattice Laplace count near the midpoint", names, rng
    )
    rate = float(geometric_rate(epsilon, 1.0))
    # P(Z <= -t) = p^t / (1 + p) for integer t >= 1 and p = e^-a
    reach = math.log(1.0 / (gamma * (1.0 + math.exp(-rate)))) / rate
    return np.asarray(plain & (counted + reach < INSIDE_SHARE * users)), entries


def _band_check(
    distance: NDArray[np.float64],
    off: NDArray[np.bool_],
    deviation: NDArray[np.float64],
    epsilon: NDArray[np.float64],
    names: tuple[str, ...],
    gamma: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[LedgerEntry]]:
    """The check of a second scale median (:func:`_shared`), per column: over the users ``off``
    the shared value, those whose ``distance`` to the midpoint lies outside the band between
    :data:`SHARED_BELOW` and :data:`INSIDE_MADS` times the median's ``deviation`` less those
    inside it, plus two-sided geometric noise at ε each. Replacing one user moves it by at most
    2 (from inside to outside, or in or out of the users off the value): sensitivity 2,
    recorded in the ledger. A median that found them has most of them in its band (a normal
    column 93 %, a Cauchy one 76 %: the count near -0.9 or -0.5 of them); one that missed far
    above or below has none there (+1 of them). Returns the noisy counts, what their noise
    exceeds with probability at most γ (``reach``; a count at or above it: more of them outside
    the band than in it, clearly, and the median missed them) and one entry per column. Unlike
    the scale's check (:func:`_inside_count`) it needs no count of the users it reads, which
    for these few users off a shared value is too noisy to set a bar by."""
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN: no statistic, never off
        ratio = distance / deviation
        near = (ratio >= SHARED_BELOW) & (ratio <= INSIDE_MADS)
    exact = np.sum(off & ~near, axis=0) - np.sum(off & near, axis=0)
    rates = geometric_rate(epsilon, 2.0)
    noisy = exact + two_sided_geometric(rng, rates, exact.shape)
    entries = [
        LedgerEntry("scale", _BAND, name, float(e), 0.0, 0.0, 2.0, float(1.0 / r))
        for name, e, r in zip(names, epsilon, rates, strict=True)
    ]
    # P(Z >= t) = p^t / (1 + p) for integer t >= 1 and p = e^-a
    reach = np.log(1.0 / (gamma * (1.0 + np.exp(-rates)))) / rates
    return noisy.astype(np.float64), reach, entries


def _side_reach(epsilon: float, gamma: float) -> float:
    """What the noise of the midpoint's check (:func:`_side_count`) exceeds in magnitude with
    probability at most γ: ``P(|Z| >= t) = 2 p^t / (1 + p)`` for integer t >= 1, p = e^-a."""
    rate = float(geometric_rate(epsilon, 2.0))
    return math.log(2.0 / (gamma * (1.0 + math.exp(-rate)))) / rate


def _weighted_count(
    present: NDArray[np.bool_],
    weights: NDArray[np.float64],
    epsilon: float,
    targets: tuple[str, ...],
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], float, list[LedgerEntry]]:
    """Private weighted counts ``Σ w_u`` over the users present in each column: the lattice
    Laplace sum of ``w_u - 1/2 ∈ [-1/2, 1/2]`` (0 for absent users) plus ``n/2``. One user moves
    it by at most 1 (the lattice's rounding included in the recorded sensitivity): ε-DP each."""
    n, k = present.shape
    values = np.where(present, weights, 0.0) - 0.5
    half = np.full(k, 0.5)
    release = release_bounded_sum(values, half, np.full(k, epsilon), rng)
    entries = [
        LedgerEntry(
            "count",
            "lattice Laplace weighted count",
            f"{t} (weighted)",
            epsilon,
            0.0,
            0.0,
            float(release.sensitivity[j]),
            float(release.scale[j]),
        )
        for j, t in enumerate(targets)
    ]
    return release.total + 0.5 * n, float(release.sd.max()), entries


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


def _median_entries(
    stage: str, names: tuple[str, ...], epsilon: float | NDArray[np.float64]
) -> list[LedgerEntry]:
    """One entry per column of a private median at ε (one, or one per column)."""
    eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (len(names),))
    rates = geometric_rate(eps, 2.0)
    return [
        LedgerEntry(stage, _MEDIAN, name, float(e), 0.0, 0.0, 1.0, float(1.0 / r))
        for name, e, r in zip(names, eps, rates, strict=True)
    ]


def _mean_entries(
    stage: str,
    names: tuple[str, ...],
    epsilon: NDArray[np.float64] | float,
    rho: NDArray[np.float64] | float,
    release: LatticeRelease,
    n: int,
) -> list[LedgerEntry]:
    """One entry per column of a lattice release of clipped sums (sensitivity of the sum)."""
    d = len(names)
    eps, rhos = np.broadcast_to(epsilon, (d,)), np.broadcast_to(rho, (d,))
    gaussian = release.kind == "gaussian"
    mechanism = "discrete Gaussian (CKS 2020)" if gaussian else "lattice Laplace (Alg 1, 4)"
    return [
        LedgerEntry(
            stage,
            mechanism,
            name,
            float(eps[j]) if release.kind != "gaussian" else 0.0,
            0.0,
            float(rhos[j]) if release.kind == "gaussian" else 0.0,
            float(release.sensitivity[j]),
            float(release.scale[j]),
        )
        for j, name in enumerate(names)
    ]
