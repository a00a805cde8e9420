"""The engine's private counts and checks, and the ledger entries of its medians.

Every count here is a lattice Laplace (two-sided geometric) count of users, of sensitivity 1,
or a signed count of sensitivity 2: the users with a statistic (:func:`count_users`, weighted
:func:`_weighted_count`), the midpoint's check (:func:`side_count`), the scale's check
(:func:`inside_count`) and a second scale median's check (:func:`band_check`). Each returns
its noisy counts and one ledger entry per column or target. The stages that run them are
:func:`~dplong.privacy.locate.locate` and :func:`~dplong.privacy.scale.scale_stage`; why each
check exists is in ``docs/design/engine.md``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import ReleasePlan
from dplong.privacy.noise import (
    count_sd,
    geometric_rate,
    release_bounded_sum,
    two_sided_geometric,
)
from dplong.privacy.quantile import GRID

__all__ = [
    "INSIDE_MADS",
    "INSIDE_SHARE",
    "SHARED_BELOW",
    "band_check",
    "count_users",
    "geometric_counts",
    "inside_count",
    "lattice_count",
    "side_count",
    "side_reach",
]

#: The cells far inside a shared value's cell, below ``SHARED_BELOW`` of its lower edge,
#: count with it (:func:`~dplong.privacy.scale.scale_stage`), and the band of the checks
#: (:func:`inside_count`, :func:`band_check`) starts there.
SHARED_BELOW = 0.125
#: The scale's check (:func:`inside_count`) counts the users whose distance to the midpoint
#: lies between ``SHARED_BELOW`` and ``INSIDE_MADS`` times the scale median's deviation (a
#: normal column puts 93 % there, a Cauchy one 76 %); a count clearly below ``INSIDE_SHARE`` of
#: the users (at the high end of its noise) says the scale's median missed below (nearly) every
#: user, and the interval would clip them all onto the midpoint, or far above them, and it
#: would dwarf them.
INSIDE_MADS, INSIDE_SHARE = 4.0, 0.5

_SIDES = "lattice Laplace count above less below the midpoint"

_BAND = "lattice Laplace count outside less inside the scale's band"


def count_users(
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
    return lattice_count(
        present.sum(axis=0), plan.count, "count", "lattice Laplace count", targets, rng
    )


def geometric_counts(
    exact: NDArray[np.int64], epsilon: float, sensitivity: float, rng: np.random.Generator
) -> tuple[NDArray[np.float64], float, float]:
    """Counts plus two-sided geometric (lattice Laplace) noise at ``epsilon`` for their L1
    ``sensitivity`` together: the noisy counts, the noise's sd a count and its rate.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.counts import geometric_counts
    >>> noisy, sd, rate = geometric_counts(np.array([40, 7]), 1.0, 2.0, np.random.default_rng(0))
    >>> noisy.dtype, noisy.shape, round(rate, 9)    # rate ε / sensitivity, less float slack
    (dtype('float64'), (2,), 0.5)
    >>> bool(np.all(noisy == np.round(noisy)))   # integers: a lattice
    True
    """
    rate = float(geometric_rate(epsilon, sensitivity))
    noisy = exact + two_sided_geometric(rng, rate, np.shape(exact))
    return np.asarray(noisy, dtype=np.float64), count_sd(epsilon, sensitivity), rate


def lattice_count(
    exact: NDArray[np.int64],
    epsilon: float,
    stage: str,
    mechanism: str,
    targets: tuple[str, ...],
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], float, list[LedgerEntry]]:
    """Counts (sensitivity 1 each: one user in or out) plus two-sided geometric noise at ε
    each, their noise sd and one ledger entry per target."""
    noisy, sd, rate = geometric_counts(exact, epsilon, 1.0, rng)
    entries = [
        LedgerEntry(stage, mechanism, t, epsilon, 0.0, 0.0, 1.0, 1.0 / rate) for t in targets
    ]
    return noisy, sd, entries


def side_count(
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
    of the cell (with probability 1 - γ): the median's rank error, measured, where the exponential
    mechanism's worst case over every cell of the grid (:func:`~dplong.privacy.quantile.
    rank_error`) is about ten times wider at these ε. A count near ±N says the midpoint lies
    beside (nearly) every user, which no other released number shows once the scale has
    measured the distance (:data:`~dplong.privacy.locate.BESIDE_SHARE`)."""
    cell = np.searchsorted(GRID.centres, midpoint)  # the cell whose report is the midpoint
    low, high = GRID.edges[cell], GRID.edges[cell + 1]
    with np.errstate(invalid="ignore"):  # NaN: no statistic, on neither side
        exact = np.sum(matrix >= high, axis=0) - np.sum(matrix < low, axis=0)
    noisy, _, rate = geometric_counts(exact, epsilon, 2.0, rng)
    entries = [
        LedgerEntry("midpoint", _SIDES, name, epsilon, 0.0, 0.0, 2.0, 1.0 / rate) for name in names
    ]
    return noisy, side_reach(epsilon, gamma), entries


def inside_count(
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
    # NaN: no statistic, not counted; a deviation near 0 under a far distance: inf, not near
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = distance / deviation
        near = (ratio >= SHARED_BELOW) & (ratio <= INSIDE_MADS)
    counted, _, entries = lattice_count(
        near.sum(axis=0), epsilon, "scale", "lattice Laplace count near the midpoint", names, rng
    )
    rate = float(geometric_rate(epsilon, 1.0))
    # P(Z <= -t) = p^t / (1 + p) for integer t >= 1 and p = e^-a
    reach = math.log(1.0 / (gamma * (1.0 + math.exp(-rate)))) / rate
    return np.asarray(plain & (counted + reach < INSIDE_SHARE * users)), entries


def band_check(
    distance: NDArray[np.float64],
    off: NDArray[np.bool_],
    deviation: NDArray[np.float64],
    epsilon: NDArray[np.float64],
    names: tuple[str, ...],
    gamma: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[LedgerEntry]]:
    """The check of a second scale median (:func:`~dplong.privacy.scale._shared`), per column: over
    the users ``off`` the shared value, those whose ``distance`` to the midpoint lies outside the
    band between :data:`SHARED_BELOW` and :data:`INSIDE_MADS` times the median's ``deviation`` less
    those inside it, plus two-sided geometric noise at ε each. Replacing one user moves it by at
    most 2 (from inside to outside, or in or out of the users off the value): sensitivity 2,
    recorded in the ledger. A median that found them has most of them in its band (a normal
    column 93 %, a Cauchy one 76 %: the count near -0.9 or -0.5 of them); one that missed far
    above or below has none there (+1 of them). Returns the noisy counts, what their noise
    exceeds with probability at most γ (``reach``; a count at or above it: more of them outside
    the band than in it, clearly, and the median missed them) and one entry per column. Unlike
    the scale's check (:func:`inside_count`) it needs no count of the users it reads, which
    for these few users off a shared value is too noisy to set a bar by."""
    # NaN: no statistic, never off; a ratio past the largest double is inf, outside the band
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
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


def side_reach(epsilon: float, gamma: float) -> float:
    """What the noise of the midpoint's check (:func:`side_count`) exceeds in magnitude with
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
