"""Private medians on a public log-spaced grid: the midpoint and spread stages of a release.

:func:`private_median` is the exponential mechanism (McSherry & Talwar 2007) over the cells
``[b_k, b_{k+1})`` of a public :class:`LogGrid`, with the utility
``u(k) = -max(#{x < b_k}, #{x >= b_{k+1}})``: 0 for a cell holding every user, ``-N/2`` or better
for the cell holding the median, ``-N`` for a cell beside all the data. Replacing one user moves
each count by at most one, so ``u`` has sensitivity 1 for every cell (and users without a
statistic simply count nowhere: no count of them is needed). Cell k is drawn with probability
proportional to ``exp(a u(k))``, ``a = ε/2`` (:func:`~dplong.privacy.noise.geometric_rate` at
sensitivity 2, a hair below): each probability's numerator moves by a factor of at most
``e^a`` and the normaliser by at most ``e^a`` the other way between neighbours, so the
release is ε-DP, and its privacy loss ``a (u(k) - u'(k)) - log(Z / Z')`` ranges over an
interval of width at most ``2a = ε`` as k varies: it is ε-*bounded-range* (Durfee & Rogers
2019), which the ledger composes at about a quarter of a pure ε call's Rényi cost
(:func:`~dplong.privacy.accounting.bounded_range_renyi`). Its output is the centre of a public
cell, so its support is public. The draw is made run by run, not cell by cell: cells between two
users' values share one utility, and a run of m cells is drawn as one of weight ``m e^{a u}``,
then a uniform cell within it (:func:`_exponential_mechanism`): the same law at a cost in users,
not cells.

A weighted median (each user counting with a weight in [0, 1] that depends on its own value
and public facts only) keeps the argument: the utilities still move by at most 1 when one user
is replaced; so does one whose users count with different weights below and above the cells
(each count still moves by at most 1). The weights used are 0, 1/2 and 1 (the sums stay exact
in floating point).

Why cells of a log grid, and not a stable histogram (Alg 2-3). The histogram needs bins
matched to the data's scale — what is unknown — and fails outright (no bin survives) unless
``(2/ε) log(2/δ)`` users share a bin. The grid here covers every finite double at a fixed
*relative* resolution, so it needs neither a scale nor bounds; a value range of all doubles
costs only through ``log(#cells)``. Cells rather than points: a cell around data narrower than
the grid's resolution (e.g. years, 2010 ± 5) still holds them all and wins; a grid *point*
would see every point tie at ``-N``. It never fails: some cell always wins, and with ``ε N / 4``
well above ``log(#cells)`` it is one at or next to the median (see :func:`rank_error`).

The reach term (``reach=``, the default pipeline's midpoint with an estimated scale). Between
``2**-64`` and data of magnitude 1 lie some 16,000 fine cells; where 0 is a few dozen ranks from
the middle of the users (a slope whose mean is about its spread: a fifth of the users below 0)
all of them share the rank of 0, and together they outweigh the few cells around the median: at
n = 500 and ε = 0.075 a third of such midpoints landed within a tenth of a spread of 0, where
the scale stage then measured the distance and the interval widened threefold. With ``reach =
M`` the loss is ``max(#below, #above, #far)``, ``#far`` the users whose ``|x|`` exceeds M times
the cell's outer magnitude: still a max of counts that move by at most one when a user is
replaced, so the sensitivity stays 1. A cell far below the users' magnitudes now has nearly all
of them far, the loss of a cell beside them all; the cells around the median are untouched
unless more than half the users lie beyond M times its magnitude. The two cells at 0 count
nobody far: an atom at 0 (exact zeros among users at ±1, a third each) keeps its median, where
counting the ±1 as far would tie its cell with every cell below 1/M. Otherwise (a median
within ``q / M`` of 0, q the median of ``|x|``) the cell at ``q / M`` on the median's side has
loss at most ``N / 2`` plus the users between the median and ``q / M``: the best loss exceeds
the plain median's by the users within ``q / M`` of 0 at most, a few per thousand for a
density bounded near 0 at ``M = 64`` (the worst case of :func:`rank_error` moves by as
much). It leaves the miss
bound (:func:`miss_probability`) exact only where that count is 0, so the pipeline uses it only
where a missed midpoint repairs itself and its bound is not the release's (an estimated scale
measures the distance: ``dplong.privacy.budget.stages``).

The grid is fine (256 cells per doubling, 0.27 %) for magnitudes in ``[2**-64, 2**64]`` and
coarse (2 per doubling) beyond, down to the smallest normal and up to the largest double:
about 69,000 cells. The fine resolution keeps the midpoint within a fraction of the spread even
for data far from zero relative to their spread (years, 2010 ± 5: cells 5.4 wide); extreme
magnitudes cost little.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.noise import geometric_rate, keyed_uniforms

__all__ = [
    "GRID",
    "MIDPOINT_REACH",
    "SPREAD_GRID",
    "LogGrid",
    "median_entries",
    "miss_probability",
    "private_median",
    "rank_error",
]


@dataclass(frozen=True)
class LogGrid:
    """A public grid of cells: boundaries 0 and ``±2**(k / r)``.

    ``r = fine`` boundaries per doubling for magnitudes in ``[2**-inner, 2**inner]``, ``r =
    coarse`` beyond, between ``2**-outer`` and ``2**(top + 1)`` (by default the smallest
    normal double and the largest power of two: ``top`` defaults to ``outer``);
    ``signed=False`` keeps 0 and the positive boundaries (for spreads). The outermost cells
    are unbounded.

    Examples
    --------
    >>> from dplong.privacy.quantile import LogGrid
    >>> grid = LogGrid(fine=2, coarse=1, inner=1, outer=2, signed=False)
    >>> grid.boundaries.round(4).tolist()
    [0.0, 0.25, 0.5, 0.7071, 1.0, 1.4142, 2.0, 4.0, 8.0]
    >>> grid.centres.round(4).tolist()     # the unbounded last cell reports its boundary
    [0.125, 0.375, 0.6036, 0.8536, 1.2071, 1.7071, 3.0, 6.0, 8.0]
    """

    fine: int = 256
    coarse: int = 2
    inner: int = 64
    outer: int = 1022
    signed: bool = True
    top: int | None = None

    @cached_property
    def boundaries(self) -> NDArray[np.float64]:
        """The cell boundaries, ascending."""
        exponents = np.concatenate(
            [
                np.arange(-self.outer * self.coarse, -self.inner * self.coarse) / self.coarse,
                np.arange(-self.inner * self.fine, self.inner * self.fine) / self.fine,
                np.arange(self.inner * self.coarse, (self._top + 1) * self.coarse + 1)
                / self.coarse,
            ]
        )
        positive = np.exp2(np.minimum(exponents, 1023.0))
        negative = -positive[::-1] if self.signed else np.empty(0)
        return np.concatenate([negative, [0.0], positive])

    @property
    def _top(self) -> int:
        return self.outer if self.top is None else self.top

    @cached_property
    def centres(self) -> NDArray[np.float64]:
        """What each cell reports: its centre; an unbounded end cell reports its boundary.

        Cells are ``(-inf, b_0)`` (signed grids only), ``[b_k, b_{k+1})`` and ``[b_K, inf)``.
        """
        b = self.boundaries
        inner = b[:-1] + (b[1:] - b[:-1]) / 2.0
        return np.concatenate([b[:1], inner, b[-1:]]) if self.signed else np.append(inner, b[-1])

    @cached_property
    def half_widths(self) -> NDArray[np.float64]:
        """How far a value in each cell may lie from what the cell reports. The unbounded end
        cells get half their boundary's magnitude: a finite stand-in (data out there are beyond
        ``2**1023``, the last finite powers of two, and no radius could hold them anyway)."""
        b = self.boundaries
        inner = (b[1:] - b[:-1]) / 2.0
        end = abs(float(b[-1])) / 2.0
        return np.concatenate([[end], inner, [end]]) if self.signed else np.append(inner, end)

    @cached_property
    def edges(self) -> NDArray[np.float64]:
        """The cells' edges: cell k is ``[edges[k], edges[k + 1])``, ±inf at the unbounded ends."""
        return np.concatenate([[-np.inf] if self.signed else [], self.boundaries, [np.inf]])

    @cached_property
    def positive(self) -> NDArray[np.float64]:
        """The positive boundaries, ascending."""
        return self.boundaries[self.boundaries > 0.0]

    @cached_property
    def zero(self) -> int:
        """The index of the cell ``[0, b_1)`` (a signed grid's cells start with ``(-inf, b_0)``).

        Examples
        --------
        >>> from dplong.privacy.quantile import LogGrid
        >>> [(g.zero, float(g.centres[g.zero]) > 0.0) for g in (LogGrid(fine=2, coarse=1, inner=1,
        ...     outer=2), LogGrid(fine=2, coarse=1, inner=1, outer=2, signed=False))]
        [(9, True), (0, True)]
        """
        below = 0 if self.signed else 1  # an unsigned grid has no cell below its boundary 0
        return int(np.searchsorted(self.boundaries, 0.0, side="right")) - below

    def half_width_at(self, value: NDArray[np.float64]) -> NDArray[np.float64]:
        """The half-width of the cell whose report is ``value``."""
        return np.asarray(self.half_widths[np.searchsorted(self.centres, value)])

    def __len__(self) -> int:
        return int(self.centres.size)


#: The grids of the default pipeline: midpoints (signed, fine: the midpoint's cell enters the
#: centre's error) and spreads (``|x - m̂|``: 4.4 % cells are ample for a scale, and ten times
#: fewer cells make a miss ten times rarer, :func:`miss_probability`).
GRID = LogGrid()
SPREAD_GRID = LogGrid(fine=16, coarse=1, signed=False)

#: The midpoint's reach (module docstring): cells more than six doublings below the magnitude
#: of most users lose as if beside them all. Measured on per-user slopes of mean 0.5 and sd
#: 0.55 at n = 500, ε = 0.075: midpoints within 0.05 of 0 fell from 41 % to 6 % (4 % at 16,
#: 8 % at 256); on data centred at 0 the winner's rank moves off the middle by the users within
#: ``1/64`` of their median magnitude of 0 (about 0.5 % of a normal sample).
MIDPOINT_REACH = 64.0


def rank_error(cells: int, epsilon: float, beta: float) -> float:
    """Ranks t such that the median is missed by more than t ranks with probability <= β.

    A cell whose utility is k below the best is drawn with probability at most ``e^{-a k}``
    (its weight over the best cell's alone; a the mechanism's rate). At most ``cells`` cells lie
    k or more below, so a union bound gives ``cells e^{-a t}``, which is β at ``t = log(cells /
    β) / a``. A worst case over how the data fill the cells: in practice the error is a small
    fraction of this.

    Examples
    --------
    >>> from dplong.privacy.quantile import LogGrid, rank_error
    >>> round(rank_error(len(LogGrid()), 0.2, 0.05))     # of N users: needs N well above 2 t
    142
    """
    a = float(geometric_rate(epsilon, 2.0))
    return math.log(cells / beta) / a


@functools.lru_cache(maxsize=4096)  # plans and releases ask again for the same numbers
def miss_probability(cells: int, epsilon: float, users: float) -> float:
    """A public bound on the probability that :func:`private_median` picks a cell beside all the
    data (a midpoint that misses it), for ``users`` users with a statistic.

    The cell holding the median has utility ``-N/2`` or better, each of the at most ``cells``
    cells beside all the data ``-N``: their weights together are at most ``c e^{-aN}`` against
    the median cell's ``e^{-aN/2}`` or more, so one of them is drawn with probability at most
    ``c e^{-aN/2} / (1 + c e^{-aN/2})`` (a = ε/2, the mechanism's rate). It ignores that the
    cells near the median weigh in too (they only lower the chance of a miss), so it is an upper
    bound: with the data spread over many cells the miss is several times rarer.

    Examples
    --------
    >>> from dplong.privacy.quantile import LogGrid, miss_probability
    >>> cells = len(LogGrid())
    >>> round(miss_probability(cells, 0.45, 72), 2), f"{miss_probability(cells, 0.08, 1000):.0e}"
    (0.96, '2e-04')
    """
    if epsilon == math.inf:  # no noise: no miss
        return 0.0
    if epsilon <= 0.0:  # no budget: nothing but misses
        return 1.0
    # the rate a hair above the mechanism's (which takes off a float slack): immaterial here
    odds = math.exp(min(math.log(cells) - epsilon * users / 4.0, 700.0))
    return odds / (1.0 + odds)


def private_median(
    values: NDArray[np.float64],
    grid: LogGrid,
    epsilon: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    weights: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    gaps: NDArray[np.float64] | None = None,
    reach: float | None = None,
) -> NDArray[np.float64]:
    """The ε_j-DP median of each column of ``values`` (n x d; NaN: no statistic), on ``grid``.

    One exponential mechanism per column (module docstring), all vectorised over the users of
    every column (a sort) and the runs of cells between them. Returns the winning
    cells' reports (:attr:`LogGrid.centres`). ``weights``, two n x d arrays in [0, 1]
    (default 1), weigh each user in the counts of the utility: how much it counts below the
    cells above it, and how much above the cells below it (equal: a weighted median). Each
    weight must depend on the user's own value and public facts only; being at most 1, they
    keep the sensitivity (module docstring). ``gaps`` (d, public: e.g. from a released
    number) leaves out of the candidates of an unsigned grid the cells between the one at 0
    and the one holding ``gaps[j]``, where the caller knows no value lies: fewer cells tied
    at the same utility, fewer ways to miss (a public candidate set keeps the argument).
    ``reach`` (public; signed grids) adds the count of users beyond ``reach`` times each cell's
    magnitude to its loss (module docstring): cells far below the users' magnitudes stop
    sharing the rank of 0.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.quantile import LogGrid, private_median
    >>> x = np.random.default_rng(0).normal([3.0, 2010.0], [1.0, 5.0], size=(2000, 2))
    >>> grid = LogGrid()
    >>> med = private_median(x, grid, np.array([0.5, 0.5]), np.random.default_rng(1))
    >>> bool(abs(med[0] - 3.0) < 0.2), bool(abs(med[1] - 2010.0) <= grid.half_width_at(med[1]))
    (True, True)

    Weighted: 60 users at 1e-12 that count only above the cells below them, 40 near 1 — the
    median of the 40:

    >>> d = np.concatenate([np.full(60, 1e-12), np.linspace(0.9, 1.1, 40)])[:, None]
    >>> below = np.where(d < 1e-6, 0.0, 1.0)
    >>> m = private_median(d, grid, np.array([50.0]), np.random.default_rng(1),
    ...                    weights=(below, np.ones_like(d)))
    >>> bool(0.9 < m[0] < 1.1)
    True

    60 users at 0 (counting an eighth below) and 40 between 1 and 4; no value lies in
    (0, 0.03], so those cells are no candidates (on the spread grid, unsigned):

    >>> from dplong.privacy.quantile import SPREAD_GRID
    >>> d = np.concatenate([np.zeros(60), np.linspace(1.0, 4.0, 40)])[:, None]
    >>> below = np.where(d > 0.0, 1.0, 0.125)
    >>> m = private_median(d, SPREAD_GRID, np.array([2.0]), np.random.default_rng(1),
    ...                    weights=(below, np.ones_like(d)), gaps=np.array([0.03]))
    >>> bool(1.0 <= m[0] <= 4.0)
    True

    Slopes of mean 0.5 and sd 0.55, a fifth of them below 0, at a small ε: without the reach
    many cells far below 0.5 share the rank of 0 and often win; with it they lose:

    >>> s = np.random.default_rng(2).normal(0.5, 0.55, size=(500, 1))
    >>> def near_zero(reach):
    ...     meds = [private_median(s, grid, np.array([0.075]), np.random.default_rng(k),
    ...                            reach=reach)[0] for k in range(100)]
    ...     return int(np.sum(np.abs(meds) < 0.05))
    >>> near_zero(None) > 20, near_zero(MIDPOINT_REACH) < 12
    (True, True)
    """
    if gaps is not None and grid.signed:
        raise ValueError("gaps= leaves out cells above 0 of an unsigned grid only")
    if reach is not None and not grid.signed:
        raise ValueError("reach= counts users beyond a signed grid's cells only")
    rates = np.broadcast_to(np.asarray(geometric_rate(epsilon, 2.0)), (values.shape[1],))
    below_cells = 0 if grid.signed else 1  # an unsigned grid's values below 0: cell -1
    # one key per column, whatever the data: the draws keyed by run
    # (:func:`_exponential_mechanism`) leave the caller's stream where the same fit on one-ulp
    # different values leaves it
    keys = np.asarray(rng.integers(0, 2**64, size=values.shape[1], dtype=np.uint64))
    # every column's users in order, the columns one after another (NaN sort last: no
    # statistic): one mechanism per column, all of them vectorised over users and columns
    order = np.argsort(values, axis=0)
    users = np.count_nonzero(~np.isnan(values), axis=0)
    kept = (np.arange(values.shape[0])[:, None] < users).T
    ranked = np.take_along_axis(values, order, axis=0).T[kept]
    cell = np.searchsorted(grid.boundaries, ranked, side="right") - below_cells
    if weights is None:
        down = up = np.ones(cell.size)
    else:
        down, up = (np.take_along_axis(w, order, axis=0).T[kept] for w in weights)
    runs = _runs(cell, down, up, len(grid), users)
    if gaps is not None or reach is not None:
        runs = _adjusted_runs(runs, ranked, users, grid, gaps, reach)
    return np.asarray(grid.centres[_exponential_mechanism(runs, rates, keys)])


def _adjusted_runs(
    runs: _Runs,
    ranked: NDArray[np.float64],
    users: NDArray[np.intp],
    grid: LogGrid,
    gaps: NDArray[np.float64] | None,
    reach: float | None,
) -> _Runs:
    """:func:`private_median`'s runs column by column without the cells below ``gaps``
    (:func:`_without_cells`) or with the users beyond ``reach`` (:func:`_with_far`); ``ranked``
    the columns' users' values in order, one column after another."""
    below_cells = 0 if grid.signed else 1
    ends = np.cumsum(runs.counts)[:-1]
    columns = zip(
        np.split(runs.first, ends),
        np.split(runs.sizes, ends),
        np.split(runs.loss, ends),
        np.split(ranked, np.cumsum(users)[:-1]),
        strict=True,
    )
    parts = []
    for j, (first, sizes, loss, column) in enumerate(columns):
        if gaps is not None:  # the cells 1, ..., the one before gaps[j]'s: no candidates
            stop = int(np.searchsorted(grid.boundaries, gaps[j], side="right")) - below_cells
            first, sizes, loss = _without_cells(first, sizes, loss, 1, stop)
        if reach is not None:
            far = _beyond_reach(np.abs(column) / reach, grid)
            first, sizes, loss = _with_far(first, sizes, loss, far)
        parts.append((first, sizes, loss))
    first, sizes, loss = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return _Runs(first, sizes, loss, np.array([part[0].size for part in parts]))


#: The ledger's name of :func:`private_median`.
_MEDIAN = "private median (exponential mechanism, log grid)"


def median_entries(
    stage: str, names: tuple[str, ...], epsilon: float | NDArray[np.float64]
) -> list[LedgerEntry]:
    """One ledger entry per column of :func:`private_median` at ε (one, or one per column):
    sensitivity 1 (the utility's), the noise scale ``1 / rate``, ε-bounded-range.

    Examples
    --------
    >>> from dplong.privacy.quantile import median_entries
    >>> (entry,) = median_entries("midpoint", ("x",), 0.5)
    >>> entry.mechanism, entry.cost.bounded, round(entry.noise_scale, 6)
    ('private median (exponential mechanism, log grid)', True, 4.0)
    """
    eps = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (len(names),))
    rates = geometric_rate(eps, 2.0)
    return [
        LedgerEntry(stage, _MEDIAN, name, float(e), 0.0, 0.0, 1.0, float(1.0 / r), bounded=True)
        for name, e, r in zip(names, eps, rates, strict=True)
    ]


def _without_cells(
    first: NDArray[np.intp], sizes: NDArray[np.intp], loss: NDArray[np.float64], lo: int, hi: int
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
    """The runs of :func:`_runs` without the cells ``lo, ..., hi - 1`` (a run keeps its loss:
    its other cells see the same users on each side)."""
    if hi <= lo:
        return first, sizes, loss
    end = first + sizes
    head_end = np.minimum(end, lo)  # each run's part below lo, then its part from hi on
    tail_first = np.maximum(first, hi)
    parts = np.concatenate(
        [np.stack([first, head_end - first]), np.stack([tail_first, end - tail_first])], axis=1
    )
    order = np.argsort(parts[0], kind="stable")
    keep = parts[1][order] > 0
    return parts[0][order][keep], parts[1][order][keep], np.concatenate([loss, loss])[order][keep]


def _beyond_reach(
    threshold: NDArray[np.float64], grid: LogGrid
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """For each cell of the signed ``grid``, the users whose ``threshold`` (``|x| / reach``)
    exceeds its outer magnitude: the cells out to ``p`` boundaries on each side of 0, ``p`` the
    positive boundaries below the user's threshold (the grid is symmetric). A step function of
    the cell, returned as the cells where a step may start (ascending, the first 0) and its
    count of users from there on: it changes only where a user's ``p`` is a cell's distance
    from 0, so its size is that of the users, not of the grid's tens of thousands of cells (and
    so is its cost: a sort of the users' ``p``, no pass over the grid)."""
    positive, zero = grid.positive, grid.zero  # zero: the cell [0, b_1)
    p = np.sort(np.searchsorted(positive, threshold, side="left"))
    # distances from 0 (in cells, each side from 0) where the count may change: 1 and each p
    distance = np.concatenate([[0, 1], p])
    starts = _distinct(np.concatenate([[0], zero + distance, zero - distance]))
    starts = starts[(starts >= 0) & (starts < len(grid))]
    offset = starts - zero
    offset = np.where(offset >= 0, offset, -offset - 1)
    # users with more than offset cells; the cells at 0 hold an atom there (exact zeros): never
    far = np.where(offset == 0, 0, p.size - np.searchsorted(p, offset, side="right"))
    return starts.astype(np.intp), far.astype(np.float64)


def _with_far(
    first: NDArray[np.intp],
    sizes: NDArray[np.intp],
    loss: NDArray[np.float64],
    far: tuple[NDArray[np.intp], NDArray[np.float64]],
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
    """The runs of :func:`_runs` (covering every cell) with each cell's loss raised to its count
    of users out of reach (:func:`_beyond_reach`'s steps), split where that changes the loss;
    unchanged (the same runs, the same keyed draws) where it never does. Both are constant
    between the runs' and the steps' starts, so only those are read."""
    steps, counts = far
    starts = _distinct(np.concatenate([first, steps]))
    run = np.searchsorted(first, starts, side="right") - 1
    before = loss[run]
    after = np.maximum(before, counts[np.searchsorted(steps, starts, side="right") - 1])
    if np.array_equal(after, before):
        return first, sizes, loss
    new = np.ones(starts.size, dtype=bool)  # a run's start, or a change of the raised loss
    new[1:] = (run[1:] != run[:-1]) | (after[1:] != after[:-1])
    starts, after = starts[new], after[new]
    sizes = np.diff(np.append(starts, first[-1] + sizes[-1]))
    return starts.astype(np.intp), sizes.astype(np.intp), after


def _distinct(values: NDArray[np.intp]) -> NDArray[np.intp]:
    """The distinct ``values``, ascending (by a sort: ``np.unique`` hashes, slower here)."""
    values = np.sort(values)
    keep = np.ones(values.size, dtype=bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


class _Runs(NamedTuple):
    """The grid of each column as runs of cells sharing one loss, the columns one after
    another: each run's first cell, length and loss, and the number of runs of each column."""

    first: NDArray[np.intp]
    sizes: NDArray[np.intp]
    loss: NDArray[np.float64]
    counts: NDArray[np.intp]


def _runs(
    cell: NDArray[np.intp],
    down: NDArray[np.float64],
    up: NDArray[np.float64],
    cells: int,
    users: NDArray[np.intp],
) -> _Runs:
    """The grid as runs of cells sharing one loss ``max(#below, #above)``, column by column:
    each cell holding users and the gaps before, between and after them, in order.

    ``cell`` is each user's cell (-1: below every cell), ascending within each column, the
    columns of ``users`` users each one after another; ``down`` and ``up`` its weights in the
    counts below and above other cells. The cells of a gap see the same users on each side,
    hence one loss: at most ``2 n + 1`` runs a column, whatever the grid. The sums are exact
    (counts, or the weights 0, 1/2 and 1), so a column's running sums are the differences of
    the running sums over every column.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.quantile import _runs
    >>> ones = np.ones(3)
    >>> runs = _runs(np.array([2, 2, 5]), ones, ones, 8, np.array([3, 0]))
    >>> runs.first.tolist(), runs.sizes.tolist(), runs.loss.tolist(), runs.counts.tolist()
    ([0, 2, 3, 5, 6, 0], [2, 1, 2, 1, 2, 8], [3.0, 1.0, 2.0, 2.0, 3.0, 0.0], [5, 1])
    """
    d = users.size
    column = np.repeat(np.arange(d), users)
    new = np.ones(cell.size, dtype=bool)
    np.not_equal(cell[1:], cell[:-1], out=new[1:])
    new[1:] |= column[1:] != column[:-1]
    starts = new.nonzero()[0]
    occupied, owner = cell[starts], column[starts]
    held = np.bincount(owner, minlength=d)  # occupied cells a column
    head = np.cumsum(held) - held  # each column's first occupied cell, among all
    if starts.size:
        inside_down, inside_up = np.add.reduceat(down, starts), np.add.reduceat(up, starts)
    else:
        inside_down = inside_up = np.zeros(0)
    through = _running(inside_down, owner, head)  # the down-weight up to each occupied cell
    after = _running(inside_up, owner, head)
    last = head + held - 1
    after = after[last[owner]] - after  # the up-weight beyond it
    # each column's runs: the gap before its first occupied cell, then each one and the gap
    # after it (one run, the whole grid at loss 0, where it has no user)
    spans = 2 * held + 1  # each column's runs before the empty ones are dropped
    at = np.cumsum(spans) - spans
    first = np.empty(int(spans.sum()), dtype=np.intp)
    end = np.empty_like(first)
    loss = np.empty(first.size)
    first[at] = 0
    if starts.size:
        lead = np.minimum(head, starts.size - 1)  # an index, read where the column has users
        end[at] = np.where(held > 0, occupied[lead], cells)
        loss[at] = np.where(held > 0, after[lead] + inside_up[lead], 0.0)
    else:
        end[at], loss[at] = cells, 0.0
    rank = np.arange(starts.size)  # each occupied cell's index among all
    own = at[owner] + 1 + 2 * (rank - head[owner])
    first[own], end[own] = occupied, occupied + 1
    loss[own] = np.maximum(through - inside_down, after)
    following = np.append(occupied[1:], cells)
    first[own + 1] = occupied + 1
    end[own + 1] = np.where(rank == last[owner], cells, following)
    loss[own + 1] = np.maximum(through, after)
    sizes = end - first
    sizes[first < 0] = 0  # cell -1 is no cell
    keep = sizes > 0
    counts = np.bincount(np.repeat(np.arange(d), spans)[keep], minlength=d)
    return _Runs(first[keep], sizes[keep], loss[keep], counts)


def _running(
    sums: NDArray[np.float64], owner: NDArray[np.intp], head: NDArray[np.intp]
) -> NDArray[np.float64]:
    """The running sums of ``sums`` within each column (``owner``; ``head`` the index of each
    column's first): those over every column less those before the column's first (exact for
    the sums of :func:`_runs`)."""
    total = np.cumsum(sums)
    before = np.concatenate([[0.0], total])[head]
    return np.asarray(total - before[owner])


#: The counters of the cell drawn within each run: beyond every cell's (a grid has fewer than
#: ``2**33`` cells).
_WITHIN = np.uint64(1) << np.uint64(33)


def _exponential_mechanism(
    runs: _Runs, rates: NDArray[np.float64], keys: NDArray[np.uint64]
) -> NDArray[np.intp]:
    """For each column, a cell drawn with probability proportional to ``exp(-rate * loss)``,
    the grid given as runs of cells sharing one loss (:func:`_runs`), at the column's rate and
    with its key.

    Gumbel-max (Yellott 1977): the run of largest ``log m_r - rate * loss_r + G_r``, G_r
    standard Gumbel, is run r with probability ``m_r e^{-rate loss_r} / Σ``, and a uniform cell
    within it (iid draws' maximum lies anywhere among them alike) gives each cell its
    ``e^{-rate loss}`` share. Each run's draw is keyed by its first cell
    (:func:`~dplong.privacy.noise.keyed_uniforms`), the cell within it at counters beyond every
    cell's: distinct runs, independent draws, and a user moving between far cells (a one-ulp
    change of a value at 0) redraws only the runs it splits or joins. The losses are taken
    relative to the least (the same argmax): the scores that can win stay below about
    ``2**7``, so the float winner differs from the exact one only where the top two scores lie
    within a few of their ulps, a chance of about that width; with the uniforms' ``2**-53`` per
    draw it counts as a total-variation distance, as the noise module's (module docstring).
    A column's draws depend on its own runs, rate and key alone: drawn together, the columns
    are drawn as one by one.
    """
    column = np.repeat(np.arange(runs.counts.size), runs.counts)
    starts = np.cumsum(runs.counts) - runs.counts  # every column has a run
    # every run's two uniforms in one call (the cell's is read for the winner only)
    counters = runs.first.astype(np.uint64)
    owners = keys[column]
    uniforms = keyed_uniforms(
        np.concatenate([owners, owners]), np.concatenate([counters, _WITHIN + counters])
    )
    size = runs.first.size
    gumbel = -np.log(-np.log(uniforms[:size]))
    excess = runs.loss - np.minimum.reduceat(runs.loss, starts)[column]
    with np.errstate(invalid="ignore"):  # no noise (rate inf): the least loss, 0 beyond
        weight = np.where(excess > 0.0, rates[column] * excess, 0.0)
    score = np.log(runs.sizes) - weight + gumbel
    # the first run of each column at its best score (np.argmax's choice)
    top = np.flatnonzero(score == np.maximum.reduceat(score, starts)[column])
    run = top[np.searchsorted(column[top], np.arange(runs.counts.size))]
    sizes = runs.sizes[run]
    # bias size 2**-53: a TV distance
    within = np.minimum(np.floor(uniforms[size + run] * sizes).astype(np.intp), sizes - 1)
    return np.asarray(runs.first[run] + within)
