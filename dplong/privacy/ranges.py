"""Private ranges of columns from every person's extremes: the localisation stage of a release
of sufficient statistics whose bounds were not stated.

A release of sums of outer products (:mod:`dplong.models.pooled`) needs every value clipped to
a range before its sensitivity is known. Where the analyst states none, it is found here with
three private medians per column (:func:`~dplong.privacy.quantile.private_median`,
report-noisy-max on a public log grid), on one statistic per person each:

1. the **midpoint** ``m̂``: the median of the persons' midranges ``(min_t v + max_t v) / 2``;
2. the **upper reach** ``â``: the median of ``max_t v - m̂`` over the persons above ``m̂``
   (on the unsigned spread grid); a person at or below ``m̂``'s cell (within its width) counts
   :data:`ZERO_WEIGHT` in the counts below the cells (a weight that depends on its own value
   and the released ``m̂`` only, which keeps the utility's sensitivity 1): when most people
   never go above the midpoint (a 0/1 column whose midpoint is 1) the cell at 0 wins and the
   range ends at the midpoint's cell, otherwise the median is that of the persons above it
   (pulled down a little, towards the ``1/2 - w z / (2 (1 - z))`` quantile for a share z at 0);
3. the **lower reach** ``b̂`` the same way below ``m̂``.

4. **the rungs**: how many persons reach beyond ``r â`` for each rung r of :data:`RUNGS`
   (and below ``m̂ - r b̂``), all 6 k counts in one discrete Gaussian vector (zCDP; replacing
   a person moves each count by at most one: L2 sensitivity ``√(6 k)``).

A side's reach is the first rung whose count is at most :data:`RUNG_SHARE` of n (a column with
a mass at its median reach, such as a 0/1 column or coinsurance rates, whose persons stop
there), or else :data:`REACH` ``â``, which covers the persons of a uniform or normal column and
clips the few far out in a heavy tail (a bias the Newton step of the release does not see:
state the bounds where the tail matters). The range is ``[m̂ - reach_lower, m̂ + reach_upper]``,
at least ``m̂``'s own cell. The **core** ``[m̂ - CORE b̂, m̂ + CORE â]`` (within the range, at
least ``m̂``'s cell) is where most persons' values lie (:data:`CORE`): a frame for statistics
that need not hold the far values, such as a preconditioner (post-processing, nothing
spent). Every median is ε-DP with the given ε (its utility moves by at
most one when one person is replaced, whatever its rows): the stage is ``3 k`` pure ε calls
and one ρ-zCDP vector for k columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.noise import geometric_rate, release_vector_sum
from dplong.privacy.quantile import GRID, SPREAD_GRID, miss_probability, private_median

__all__ = [
    "CORE",
    "REACH",
    "RUNGS",
    "RUNG_SHARE",
    "ZERO_WEIGHT",
    "PrivateRanges",
    "located_miss",
    "private_ranges",
]

#: Weight of a person at the midpoint in the counts below a reach's cells (module docstring):
#: at 1/8 the cell at 0 wins by n/8 users when nobody is beyond the midpoint, and moves the
#: median of a half that is beyond it only from its 0.5 to its 0.44 quantile.
ZERO_WEIGHT = 0.125
#: The range's reach in units of the median reach where no rung holds (module docstring): 4
#: covers a uniform column (whose largest reach is about 2.3 median reaches) and a normal one
#: up to 2.7 sds (its median reach, pulled down by the persons at the midpoint, is 0.6 sd).
REACH = 4.0
#: The rungs, in units of the median reach, and the share of n a rung may leave beyond it:
#: three times the counts' noise sd at RAND HIE's size, and far below the share a continuous
#: column leaves beyond 2 median reaches (a normal one: 10 %).
RUNGS, RUNG_SHARE = (1.25, 1.5, 2.0), 0.05
#: The core's reach in units of the median reach (module docstring): 2 median reaches of a
#: normal column over 8 rows is about 2.1 sds, where winsorizing keeps 95 % of its variance,
#: and half the range (whose square is a quarter of the range's).
CORE = 2.0
_MEDIAN = "private median (report-noisy-max, log grid)"


@dataclass(frozen=True)
class PrivateRanges:
    """The released ranges (k x 2: low, high), their cores (k x 2, module docstring), what
    they were made of (the midpoints, the upper and lower median reaches (2 x k) and the
    rungs' counts (2 x rungs x k)), all DP outputs, and the ledger entries of the stage."""

    ranges: NDArray[np.float64]
    core: NDArray[np.float64]
    midpoint: NDArray[np.float64]
    reaches: NDArray[np.float64]
    counts: NDArray[np.float64]
    entries: tuple[LedgerEntry, ...]


def private_ranges(
    lows: NDArray[np.float64],
    highs: NDArray[np.float64],
    epsilon: float,
    rho: float,
    rng: np.random.Generator,
    *,
    names: tuple[str, ...],
) -> PrivateRanges:
    """The range of each of the k columns from the persons' minima ``lows`` and maxima
    ``highs`` (n x k, finite, or NaN for a person without a value, who counts nowhere; n is
    the public number of persons), with three ε-DP medians per column and one ρ-zCDP vector
    of counts (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.ranges import private_ranges
    >>> rng = np.random.default_rng(0)
    >>> age = rng.uniform(20, 60, (4000, 1))
    >>> female = rng.integers(0, 2, (4000, 1)).astype(float)
    >>> found = private_ranges(np.hstack([age - 2, female]), np.hstack([age + 2, female]),
    ...                        0.1, 0.05, rng, names=("age", "female"))
    >>> found.ranges.round(0).tolist()
    [[2.0, 60.0], [-0.0, 1.0]]
    >>> [e.target for e in found.entries][:3]
    ['age: midpoint', 'female: midpoint', 'age: upper reach']
    """
    n, k = lows.shape
    midpoint, deviations, reaches = _medians(lows, highs, epsilon, rng)
    cell = GRID.half_width_at(midpoint)
    # every person's indicators of reaching beyond each rung, (side, rung, column) flattened
    rungs = np.asarray(RUNGS)[:, None]
    beyond = np.stack(
        [d[:, None, :] > rungs * r for d, r in zip(deviations, reaches, strict=True)], axis=1
    ).reshape(n, -1)
    bound = math.sqrt(beyond.shape[1])
    counts = release_vector_sum(beyond.astype(np.float64), bound, bound, rho, rng)
    counted = counts.total.reshape(2, len(RUNGS), k)
    held = counted <= RUNG_SHARE * n
    first = np.where(held.any(axis=1), np.argmax(held, axis=1), len(RUNGS))
    factor = np.append(RUNGS, REACH)[first]  # (side, column)
    upper, lower = (np.maximum(f * r, cell) for f, r in zip(factor, reaches, strict=True))
    core_upper, core_lower = (
        np.clip(CORE * r, cell, reach) for r, reach in zip(reaches, (upper, lower), strict=True)
    )
    rate = float(geometric_rate(epsilon, 2.0))
    entries = (
        *(
            LedgerEntry("bounds", _MEDIAN, f"{name}: {what}", epsilon, 0.0, 0.0, 1.0, 1.0 / rate)
            for what in ("midpoint", "upper reach", "lower reach")
            for name in names
        ),
        LedgerEntry(
            "bounds",
            "discrete Gaussian (zCDP), one vector",
            "persons beyond the reaches' rungs",
            0.0,
            0.0,
            rho,
            float(counts.sensitivity),
            float(counts.sd[0]),
        ),
    )
    return PrivateRanges(
        np.column_stack([midpoint - lower, midpoint + upper]),
        np.column_stack([midpoint - core_lower, midpoint + core_upper]),
        midpoint,
        np.array(reaches),
        counted,
        entries,
    )


def _medians(
    lows: NDArray[np.float64],
    highs: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    """Steps 1-3 of the module docstring: the midpoints, every person's upper and lower
    deviation (0 at the midpoint) and the two median reaches."""
    midpoint = private_median(lows / 2.0 + highs / 2.0, GRID, np.full(lows.shape[1], epsilon), rng)
    deviations, reaches = [], []
    for deviation in (highs - midpoint, midpoint - lows):
        deviation, reach = _reach(deviation, midpoint, epsilon, rng)
        deviations.append(deviation)
        reaches.append(reach)
    return midpoint, deviations, reaches


def _reach(
    deviation: NDArray[np.float64],
    midpoint: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One side's deviations from the released midpoint (0 within its cell) and their
    weighted median (step 2)."""
    # a person within the midpoint's cell (its width: the cell's ends are at a half-width of
    # its centre up to rounding) is at the midpoint: 0, and counts ZERO_WEIGHT below
    at_midpoint = deviation <= 2.0 * GRID.half_width_at(midpoint)  # NaN: no statistic, kept
    deviation = np.where(at_midpoint, 0.0, deviation)
    below = np.where(deviation > 0.0, 1.0, ZERO_WEIGHT)
    eps = np.full(deviation.shape[1], epsilon)
    weights = (below, np.ones_like(below))
    return deviation, private_median(deviation, SPREAD_GRID, eps, rng, weights=weights)


def located_miss(n: int, epsilon: float) -> float:
    """A public bound on the chance that one of the stage's medians at ε lands beside all n
    persons (:func:`~dplong.privacy.quantile.miss_probability` on the midpoint's grid, the
    larger one): a range that misses the data clips everyone.

    Examples
    --------
    >>> from dplong.privacy.ranges import located_miss
    >>> located_miss(5912, 0.0135) < 1e-3, located_miss(200, 0.02) > 0.5
    (True, True)
    """
    return miss_probability(len(GRID), epsilon, float(n))
