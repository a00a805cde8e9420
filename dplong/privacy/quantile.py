"""Private medians on a public log-spaced grid: the midpoint and spread stages of a release.

:func:`private_median` is report-noisy-max (Dwork & Roth 2014, §3.3) over the cells
``[b_k, b_{k+1})`` of a public :class:`LogGrid`, with the utility
``u(k) = -max(#{x < b_k}, #{x >= b_{k+1}})``: 0 for a cell holding every user, ``-N/2`` or better
for the cell holding the median, ``-N`` for a cell beside all the data. Replacing one user moves
each count by at most one, so ``u`` has sensitivity 1 for every cell (and users without a
statistic simply count nowhere: no count of them is needed). Each cell gets an independent
two-sided geometric draw of rate ``a`` (:func:`~dplong.privacy.noise.geometric_rate` at
sensitivity 2) and the largest noisy utility wins. The argument for non-monotone utilities
applies verbatim to integer noise: fixing the other draws, cell k wins iff its draw exceeds a
threshold that moves by at most 2 between neighbours, and ``P(Z >= t) / P(Z >= t + 2) <=
e^{2a} <= ε``; ties go to the first cell (post-processing of the noisy vector). So the release
is ε-DP, with the float safety of the lattice noise; its output is the centre of a public
cell, so its support is public. A weighted median (each user counting with a weight in [0, 1]
that depends on its own value and public facts only) keeps the argument: the utilities still
move by at most 1 when one user is replaced, and an integer draw beats a threshold t iff it
beats ``⌈t⌉``, which moves by at most 2 when t does; so does one whose users count with
different weights below and above the cells (each count still moves by at most 1). The
weights used are 0, 1/2 and 1 (the sums stay exact in floating point).

Why cells of a log grid, and not a stable histogram (Alg 2-3). The histogram needs bins
matched to the data's scale — what is unknown — and fails outright (no bin survives) unless
``(2/ε) log(2/δ)`` users share a bin. The grid here covers every finite double at a fixed
*relative* resolution, so it needs neither a scale nor bounds; a value range of all doubles
costs only through ``log(#cells)``. Cells rather than points: a cell around data narrower than
the grid's resolution (e.g. years, 2010 ± 5) still holds them all and wins; a grid *point*
would see every point tie at ``-N``. It never fails: some cell always wins, and with ``ε N / 4``
well above ``log(#cells)`` it is one at or next to the median (see :func:`rank_error`).

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

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.noise import geometric_pairs, geometric_rate

__all__ = ["GRID", "SPREAD_GRID", "LogGrid", "miss_probability", "private_median", "rank_error"]


@dataclass(frozen=True)
class LogGrid:
    """A public grid of cells: boundaries 0 and ``±2**(k / r)``.

    ``r = fine`` boundaries per doubling for magnitudes in ``[2**-inner, 2**inner]``, ``r =
    coarse`` beyond, between ``2**-outer`` and ``2**(outer + 1)`` (by default the smallest
    normal double and the largest power of two); ``signed=False`` keeps 0 and the
    positive boundaries (for spreads). The outermost cells are unbounded.

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

    @cached_property
    def boundaries(self) -> NDArray[np.float64]:
        """The cell boundaries, ascending."""
        exponents = np.concatenate(
            [
                np.arange(-self.outer * self.coarse, -self.inner * self.coarse) / self.coarse,
                np.arange(-self.inner * self.fine, self.inner * self.fine) / self.fine,
                np.arange(self.inner * self.coarse, (self.outer + 1) * self.coarse + 1)
                / self.coarse,
            ]
        )
        positive = np.exp2(np.minimum(exponents, 1023.0))
        negative = -positive[::-1] if self.signed else np.empty(0)
        return np.concatenate([negative, [0.0], positive])

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


def rank_error(cells: int, epsilon: float, beta: float) -> float:
    """Ranks t such that the median is missed by more than t ranks with probability <= β.

    A cell whose utility is k below the best wins only if its draw beats the best's by k:
    probability at most ``e^{-a k}`` (the geometric tail, a the noise rate). At most ``cells``
    cells lie at each k, so a union bound over ``k >= t`` gives ``cells e^{-a t} / (1 -
    e^{-a})``, which is β at ``t = log(cells / (β (1 - e^{-a}))) / a``. A worst case over how
    the data fill the cells: in practice the error is a small fraction of this.

    Examples
    --------
    >>> from dplong.privacy.quantile import LogGrid, rank_error
    >>> round(rank_error(len(LogGrid()), 0.2, 0.05))     # of N users: needs N well above 2 t
    165
    """
    a = float(geometric_rate(epsilon, 2.0))
    return math.log(cells / (beta * -math.expm1(-a))) / a


@functools.lru_cache(maxsize=4096)  # plans and releases ask again for the same numbers
def miss_probability(cells: int, epsilon: float, users: float) -> float:
    """A public bound on the probability that :func:`private_median` picks a cell beside all the
    data (a midpoint that misses it), for ``users`` users with a statistic.

    The cell holding the median has utility ``-N/2`` or better, a cell beside all the data
    ``-N``: it wins only if its draw beats the median cell's by ``N/2``. Given the median
    cell's draw z, one of the other ``cells`` does so with probability ``1 - (1 - q(N/2 +
    z))^cells``, q the geometric tail; this is averaged over z exactly. It ignores that the cells
    near the median compete too (they only lower the chance of a miss), so it is an upper bound:
    with the data spread over many cells the miss is several times rarer.

    Examples
    --------
    >>> from dplong.privacy.quantile import LogGrid, miss_probability
    >>> cells = len(LogGrid())
    >>> round(miss_probability(cells, 0.45, 72), 2), f"{miss_probability(cells, 0.08, 1000):.0e}"
    (0.95, '4e-04')
    """
    # the rate a hair above the mechanism's (which takes off a float slack): immaterial here
    p = math.exp(-epsilon / 2.0)
    if p == 0.0 or p == 1.0:  # no noise: no miss; no budget: nothing but misses
        return 0.0 if p == 0.0 else 1.0
    reach = math.ceil(60.0 / -math.log(p))  # the best cell's draw: beyond, mass < e^-60
    step = max(1, reach // 10_000)  # a Riemann sum when the noise is wide (mass varies slowly)
    z = np.arange(-reach, reach + 1, step)
    mass = step * (1.0 - p) / (1.0 + p) * p ** np.abs(z)
    gap = np.floor(users / 2.0 + z)  # a far cell must exceed the best by more than this
    tail = np.where(gap < 0.0, 1.0, p ** (np.maximum(gap, 0.0) + 1.0) / (1.0 + p))
    return float(min(1.0, np.sum(mass * -np.expm1(cells * np.log1p(-np.minimum(tail, 0.5))))))


def private_median(
    values: NDArray[np.float64],
    grid: LogGrid,
    epsilon: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    weights: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> NDArray[np.float64]:
    """The ε_j-DP median of each column of ``values`` (n x d; NaN: no statistic), on ``grid``.

    One report-noisy-max per column (module docstring); the loop runs over the d columns, each
    vectorised over users (a sort) and cells (a search). Returns the winning cells' reports
    (:attr:`LogGrid.centres`). ``weights``, two n x d arrays in [0, 1] (default 1), weigh each
    user in the counts of the utility: how much it counts below the cells above it, and how
    much above the cells below it (equal: a weighted median). Each weight must depend on the
    user's own value and public facts only; being at most 1, they keep the sensitivity
    (module docstring).

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
    """
    b = grid.boundaries
    rates = geometric_rate(epsilon, 2.0)
    out = np.empty(values.shape[1])
    for j in range(values.shape[1]):  # one mechanism per column, vectorised over users
        order = np.argsort(values[:, j])  # NaN sort last: no statistic
        column = values[order, j]
        column = column[: np.searchsorted(column, np.nan)]
        # #{x < b_k} for k = 0..K (the last: every user): the cell of each value, counted and
        # accumulated (searching the n values among the many boundaries, not every boundary
        # among the values)
        cell = np.searchsorted(b, column, side="right")
        position = np.cumsum(np.bincount(cell, minlength=b.size + 1))
        lower: NDArray[np.float64] | NDArray[np.int64]
        if weights is None:  # integer counts: exact, and one conversion fewer
            lower = upper = position
            total: float = column.size
        else:  # the weights of {x < b_k}, below and above
            kept = order[: column.size]
            down = np.concatenate([[0.0], np.cumsum(weights[0][kept, j])])
            up = np.concatenate([[0.0], np.cumsum(weights[1][kept, j])])
            lower, upper, total = down[position], up[position], up[-1]
        if grid.signed:  # cells (-inf, b_0), [b_0, b_1), ..., [b_K, inf)
            below = np.concatenate([[0], lower[:-1]])
            above = np.subtract(total, upper)  # 0 in the last cell
        else:  # cells [b_0 = 0, b_1), ..., [b_K, inf)
            below = lower[:-1]
            above = np.subtract(total, upper[1:])
        out[j] = grid.centres[_noisy_max(np.maximum(below, above, out=above), rates[j], rng)]
    return out


def _noisy_max(
    loss: NDArray[np.float64] | NDArray[np.int64], rate: float, rng: np.random.Generator
) -> int:
    """The first cell of largest ``-loss + Z``, Z two-sided geometric of ``rate`` per cell.

    The draws are integers far below 2**53, so their difference is exact in floats, and
    ``Z - loss`` is ``-loss + Z`` in floating point: computing in floats and in place changes
    no winner. In place, because a fresh array per step of a 73,000-cell vector costs more than
    the step."""
    g = geometric_pairs(rng, rate, loss.shape)
    noisy = np.subtract(g[0], g[1], out=g[0])
    noisy -= loss
    return int(np.argmax(noisy))
