"""Private ranges from persons' extremes (dplong.privacy.ranges), the localisation stage of
PooledOLS without bounds.

Noise off: the ranges stop at a mass (0/1, coinsurance-like rates) and cover a continuous
column. The counts' sensitivity. A privacy audit of the whole stage with a power check, in the
recipe of ``test_privacy_audit.py`` (helpers in ``tests/audit.py``): neighbouring data sets
that differ in one person; seeded runs; events fixed before the runs; Bonferroni-corrected
Clopper–Pearson bounds; a broken variant (noise at a quarter of its scale) that must be caught.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from audit import (
    BROKEN_NOISE_FRACTION,
    CONFIDENCE,
    FAR,
    audit_events,
    check_gaussian_audit,
    epsilon_lower_bound,
)

import dplong
import dplong.privacy.quantile as quantile
import dplong.privacy.ranges as ranges
from dplong.privacy.quantile import GRID, LogGrid
from dplong.privacy.ranges import (
    CLIPPED_RUNG,
    FAR_RUNG,
    FAR_SHARE,
    NEAR_RUNG,
    RUNG_SHARE,
    RUNGS,
    TINY_REACH,
    WIDE_RUNGS,
    guard_swaps,
    guarded_ranges,
    histogram_ranges,
    private_ranges,
)

OFF = 1e300  # ε and ρ: no noise


def _extremes(values: np.ndarray, spread: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    return values - spread, values + spread


def test_noise_off_ranges_stop_at_masses_and_cover_continuous_columns() -> None:
    rng = np.random.default_rng(0)
    n = 4000
    female = (rng.uniform(size=n) < 0.52).astype(float)
    rates = rng.choice(np.log([1.0, 26.0, 51.0, 96.0, 101.0]), n, p=[0.55, 0.2, 0.1, 0.1, 0.05])
    age = rng.uniform(20, 60, n)
    score = rng.normal(3.0, 1.0, n)
    lows = np.column_stack([female, rates, age - 2.0, score - 1.0])
    highs = np.column_stack([female, rates, age + 2.0, score + 1.0])
    found = private_ranges(lows, highs, OFF, OFF, rng, names=("f", "r", "age", "score"))
    (f_lo, f_hi), (r_lo, r_hi), (a_lo, a_hi), (s_lo, s_hi) = found.ranges
    # a 0/1 column: [0, 1] up to the first rung (1.25 median reaches) and the midpoint's cell
    assert f_lo <= 0.0 and 1.0 <= f_hi <= 1.26
    # rates: a mass at 0 and four values: the range ends at a rung above log(101), not 4 x
    assert r_lo <= 0.0 and math.log(101.0) <= r_hi <= 1.5 * math.log(101.0)
    # continuous columns: at most RUNG_SHARE of the persons beyond either end
    for lo, hi, low, high in ((a_lo, a_hi, lows[:, 2], highs[:, 2]), (s_lo, s_hi, lows[:, 3],
                                                                       highs[:, 3])):  # fmt: skip
        assert np.mean(high > hi) <= ranges.RUNG_SHARE and np.mean(low < lo) <= ranges.RUNG_SHARE
        assert hi - lo <= 3.0 * (high.max() - low.min())


def test_cores_lie_inside_the_ranges_around_the_midpoints() -> None:
    """The core (post-processing of the medians) is m ± CORE median reaches within the range:
    for a normal column over 8 rows a little over half of it, holding most values; a 0/1
    column's core is its range (its reach is one cell and the rung stops there)."""
    rng = np.random.default_rng(3)
    values = np.repeat(rng.normal(size=(4000, 1)), 8, axis=1) + rng.normal(size=(4000, 8))
    female = (rng.uniform(size=(4000, 1)) < 0.5).astype(float)
    lows = np.column_stack([values.min(axis=1), female])
    highs = np.column_stack([values.max(axis=1), female])
    found = private_ranges(lows, highs, OFF, OFF, rng, names=("x", "f"))
    (lo, hi), (c_lo, c_hi) = found.ranges[0], found.core[0]
    assert lo <= c_lo < found.midpoint[0] < c_hi <= hi
    # 2 of the range's 4 median reaches (the rungs do not hold for a normal column)
    assert (c_hi - c_lo) == pytest.approx(ranges.CORE / ranges.REACH * (hi - lo), rel=1e-9)
    assert np.mean((values >= c_lo) & (values <= c_hi)) > 0.9  # most values (sd √2: ±2.1 sd)
    np.testing.assert_allclose(found.core[1], found.ranges[1], atol=0.02)


def test_a_constant_column_gets_its_midpoint_cell() -> None:
    values = np.full((500, 1), 7.0)
    found = private_ranges(values, values, OFF, OFF, np.random.default_rng(0), names=("c",))
    low, high = found.ranges[0]
    assert low < 7.0 < high and high - low < 0.1


def test_a_column_the_first_rungs_counts_see_nobody_off_is_found_constant() -> None:
    """``constant``: the first rung's two counts (the persons off the midpoint's cell above and
    below) sum to no more than CONSTANT_SDS (2) sds of the sum's noise or RUNG_SHARE of n a
    side. 600 persons, three columns, ρ = 0.005: a count's sd is √30 / √0.01 ≈ 55 and the
    sum's 78, so the all-zero column passes with chance 0.977 (of 40 seeds, 36 or more: the
    binomial's 1 % point is 35), while one that 60 % of the persons vary (720 over both sides,
    7 sds above the allowance of 155) and a normal one never do. The power check: the share
    alone (30 persons a side) would pass the zero column in about half of these seeds (a
    side's count at most 30 with chance 0.71: 20 of 40, sd 3)."""
    rng = np.random.default_rng(9)
    n = 600
    movers = np.where(rng.uniform(size=n) < 0.6, rng.normal(size=n), 0.0)
    step = 0.1 * (movers != 0)  # a mover's extremes are off 0 on both sides
    lows = np.column_stack([np.zeros(n), np.minimum(movers, 0.0) - step, rng.normal(size=n) - 1])
    highs = np.column_stack([np.zeros(n), np.maximum(movers, 0.0) + step, rng.normal(size=n) + 1])
    flagged, by_share = np.zeros(3, dtype=int), 0
    for seed in range(40):
        found = private_ranges(lows, highs, 1.0, 0.005, np.random.default_rng(seed),
                               names=("zero", "movers", "x"))  # fmt: skip
        flagged += found.constant
        by_share += bool((found.counts[:, 0, 0] <= ranges.RUNG_SHARE * n).all())
    assert flagged[0] >= 36 and flagged[1:].tolist() == [0, 0]
    assert by_share <= 28


def test_a_reach_is_not_sought_inside_the_midpoints_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Years of schooling: integers 8-16, 40 % at 12. A person within the midpoint's cell (12 ±
    0.016) is at the midpoint; no deviation lies between 0 and the cell's width, and the
    reaches' medians leave those cells out. Between the cell at 0 and the first deviation (1)
    the reach grid has some 250 cells tied with it; at 600 persons and ε = 0.1 each side's
    median (its 11-22 % of movers, the rest counting nowhere) lands among them, or among the
    cells tied far above the data, where the near rung's count flags it missed. Over 200
    seeds, with the gap, 71 ranges hold 8-16 unflagged and 117 are flagged missed; without it
    35 and 157 (the power check: the counts' binomial sds are about 7, so the bounds below sit
    about 2 sds from each measured count, and the two sets of bounds cannot both hold for one
    law). The rest clip a value or two at an end. (The counts here are exact, so a rung ends a
    side only where fewer than about one person passes it, :func:`~dplong.privacy.ranges.
    rung_share`; at 5 % of n, the rule before, 33 and 112 against 14 and 151.)"""
    rng = np.random.default_rng(3)
    shares = [0.04, 0.04, 0.06, 0.08, 0.40, 0.1, 0.1, 0.08, 0.1]
    educ = rng.choice(np.arange(8.0, 17.0), size=600, p=shares)[:, None]

    def holding(seeds: range) -> tuple[int, int]:
        found = [
            private_ranges(educ, educ, 0.1, OFF, np.random.default_rng(s), names=("educ",))
            for s in seeds
        ]
        held = sum(f.ranges[0, 0] <= 8.0 and f.ranges[0, 1] >= 16.0 and not f.missed[0]
                   for f in found)  # fmt: skip
        return held, sum(bool(f.missed[0]) for f in found)

    held, missed = holding(range(200))
    assert held >= 57 and missed <= 131
    gapless = ranges.private_median

    def without_gaps(*args: object, gaps: object = None, **options: object) -> np.ndarray:
        return gapless(*args, **options)

    monkeypatch.setattr(ranges, "private_median", without_gaps)
    held, missed = holding(range(200))
    assert held <= 49 and missed >= 143


def test_a_side_nobody_is_on_ends_at_the_midpoints_cell() -> None:
    """A non-negative column with most persons at 0 (RAND HIE's coinsurance: 55 % of persons
    in the free plan) has its midpoint at 0 and nobody below it. That side's median reach has
    nothing to find: every cell of the reach's grid ties, and the exponential mechanism lands
    anywhere among its 579 cells (2,000 persons, ε = 0.07: measured, 82 of 200 seeds beyond
    100, about the share of the grid's cells there). The count beyond the first rung, the
    midpoint's cell, sees nobody there (exact here) and ends the side at the cell in every
    seed, however far its median landed (a hair below 0 where the midpoint lands a hair above
    it, 0.012 in one seed); the other side keeps its rung above the largest value."""
    values = np.repeat([0.0, 3.26, 3.93, 4.56], [1200, 400, 200, 200])[:, None]
    far, lows, highs = 0, [], []
    for seed in range(200):
        found = private_ranges(values, values, 0.07, OFF, np.random.default_rng(seed),
                               names=("coins",))  # fmt: skip
        far += bool(found.reaches[1, 0] > 100.0)
        low, high = found.ranges[0]
        lows.append(low)
        highs.append(high)
    assert far >= 60  # the power check: without the cell's rung these ranges reach 10^2 or more
    assert max(lows) <= 0.0 and min(lows) >= -0.05  # the cell of a midpoint at (or next to) 0
    assert min(highs) >= 4.56 and max(highs) < 100.0


def test_ledger_lists_every_median_and_the_counts_with_their_sensitivity() -> None:
    """3 k medians at ε (utility sensitivity 1 user) and one vector of 2 x 6 x k counts (the
    rungs, the far and the near rung) whose L2 sensitivity is √(12 k) (each count moves by at
    most one when a person is replaced)."""
    rng = np.random.default_rng(1)
    values = rng.normal(size=(300, 2))
    found = private_ranges(values, values + 1.0, 0.5, 0.2, rng, names=("a", "b"))
    medians = [e for e in found.entries if e.epsilon > 0]
    assert len(medians) == 6 and all(e.epsilon == 0.5 and e.sensitivity == 1.0 for e in medians)
    (counts,) = [e for e in found.entries if e.rho > 0]
    assert counts.rho == 0.2 and counts.sensitivity >= math.sqrt(12 * 2)
    assert found.counts.shape == (2, len(RUNGS) + 2, 2)


def test_one_person_moves_each_count_by_at_most_one() -> None:
    """The indicators of one person (side, rung, column; the far and near rungs too) are what
    the counts sum: replacing a person changes each by at most one, so the vector's L2 change is
    at most √(12 k)."""
    rng = np.random.default_rng(2)
    k = 3
    reaches = rng.uniform(0.5, 2.0, (2, k))
    worst = 0.0
    for _ in range(500):
        pair = rng.normal(0, 3, (2, 2, k))  # two persons' (upper, lower) deviations
        indicators = [
            np.stack([d[:, None, :] > np.asarray((*RUNGS, FAR_RUNG, NEAR_RUNG))[:, None] * r
                      for d, r in zip(person[:, None, :], reaches, strict=True)], axis=1).ravel()
            for person in pair
        ]  # fmt: skip
        worst = max(worst, float(np.linalg.norm(indicators[0] * 1.0 - indicators[1])))
    assert worst <= math.sqrt(2 * (len(RUNGS) + 2) * k)


def test_a_range_whose_median_reach_missed_its_data_is_flagged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deviations mostly at their midpoint (0) with the rest spread to ±1, as the wage panel's
    union status within persons: 85 % of 2,000 persons at 0. With the medians nearly exact
    (ε = 50) each side's reach is its movers' median, about 0.5, and its range ends at the
    first rung that leaves at most RUNG_SHARE of n beyond (1.25 reaches: a third of the 150
    movers a side, under 100 persons); so for 60 % at 0, a normal column and a heavy Pareto
    tail (index 1.5: 16^-1.5 of a side, under 1 % of n): nothing flagged (ρ large: the
    counts exact to a person). Before the persons at the midpoint stopped counting in a
    side's median (they counted an eighth below its cells), the 85 % outweighed the 7.5 % of
    movers a side and the reach landed in the midpoint's cell. A reach that lands low by the
    noisy max's draw (forced here to the grid's first cell above 0, on the first column's
    sides) clips every mover: the counts beyond FAR_RUNG median reaches say so, more than
    RUNG_SHARE n persons beyond, by MISS_SDS noise sds, and the range is flagged missed; the
    other columns' are not."""
    rng = np.random.default_rng(4)
    n = 2000

    def sparse(still: float) -> np.ndarray:
        return np.where(rng.uniform(size=n) < still, 0.0, rng.uniform(-1, 1, n))

    heavy = rng.pareto(1.5, n) * rng.choice([-1.0, 1.0], n)
    values = np.column_stack([sparse(0.85), sparse(0.6), rng.normal(size=n), heavy])
    names = ("a", "b", "x", "heavy")
    found = private_ranges(values, values, 50.0, 1e6, np.random.default_rng(5), names=names)
    assert 0.3 < found.reaches[0, 0] < 0.7 and 0.3 < found.reaches[1, 0] < 0.7
    low, high = found.ranges[0]
    assert (
        np.sum(values[:, 0] < low) <= RUNG_SHARE * n
        and np.sum(values[:, 0] > high) <= RUNG_SHARE * n
    )
    assert not found.missed.any()
    real = ranges.private_median

    def low_reach(
        values: np.ndarray, grid: LogGrid, *args: object, **options: object
    ) -> np.ndarray:
        medians = real(values, grid, *args, **options)
        if grid is ranges.REACH_GRID:
            medians[0] = grid.centres[1]
        return medians

    monkeypatch.setattr(ranges, "private_median", low_reach)
    found = private_ranges(values, values, 50.0, 1e6, np.random.default_rng(5), names=names)
    assert found.reaches[0, 0] < 1e-18
    assert found.missed.tolist() == [True, False, False, False]


def test_a_reach_far_beyond_every_person_of_its_side_is_a_miss() -> None:
    """The wage panel's years of schooling, one value a man: 415 of the 545 at or below the 12
    years most have, 130 above. At the medians' ε of the five-regressor pooled fit at ε = 4
    (0.15) the upper reach's median (of the 130) has about 65 men's worth of utility over the
    cells far beyond every man, and those cells are many: measured, it lands beyond twice the
    largest value in 20 of these 100 draws, in 16 of them beyond 64 times every man's
    deviation (before the men at the midpoint stopped counting an eighth below the cells, 8
    of 100 landed beyond; on the spread grid's 3,967 cells 12; 10^116 in the fit that released
    `educ` at -1.2e-117, its interval excluding the truth): every man is then within NEAR_RUNG
    of the reach, the column constant in its frame, and each such draw is flagged missed (at
    least 9: 2 binomial sds below the 16 measured). One within 64 times them holds the column
    in a frame up to that much wider: a noisier estimate, not a wrong one. Not flagged: a reach
    on the same data among the men (the count beyond NEAR_RUNG reaches about 130, twice the
    flag's line, with a noise sd of 16 here); a column at a value next to its midpoint (RAND
    HIE's log coinsurance: 55 % of 5,912 persons at 0, the midpoint often a hair above it, so
    that the lower side's deviations are all that hair and so is its reach, 10^14 times the
    upper one: in about 40 of 100 draws); a normal column at ε = 1."""
    panel = dplong.datasets.load_wage_panel()
    educ = panel.groupby("nr")["educ"].first().to_numpy(np.float64)[:, None]
    rng = np.random.default_rng(0)
    normal = rng.normal(12.0, 2.0, (545, 1))
    levels = np.log1p([0.0, 25.0, 50.0, 95.0])
    coins = rng.choice(levels, (5912, 1), p=[0.55, 0.15, 0.15, 0.15])
    beyond = hair = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        found = private_ranges(educ, educ, 0.15, 0.02, rng, names=("educ",))
        top = educ.max() - found.midpoint[0]  # the largest man's deviation
        far_out = bool(found.reaches[0, 0] * NEAR_RUNG > top)
        beyond += far_out
        assert found.missed[0] or not far_out
        if 0.5 < found.reaches[0, 0] < top:  # a reach among the men above 12
            assert found.counts[0, len(RUNGS) + 1, 0] > 130 / 2
        control = private_ranges(normal, normal, 1.0, 0.02, rng, names=("x",))
        assert not control.missed[0]
        control = private_ranges(coins, coins, 0.03, 0.005, rng, names=("coins",))
        hair += bool(control.reaches[1, 0] < 1e-6)
        assert not control.missed[0]
    assert beyond >= 9 and hair >= 30


def test_a_reach_beyond_a_hair_of_persons_within_the_other_sides_span_is_no_miss() -> None:
    """A 0/1 column half at 1 among 1,000 persons, the medians at the ε of a three-column
    `PooledOLS` fit at ε = 1 (0.04) and the counts at its noise (sd 111): its midpoint lands
    anywhere between 0 and 1, mostly a hair above 0, so that the lower side's persons are that
    hair off it and its reach, if it lands beyond them all, is still a hair, far within the
    upper side's span of about 4; the range then holds the column, at most twice as wide: no
    miss. 200 draws: 14 flagged; without that excuse, and on the spread grid, 54, while ranges
    that missed the column (one 5,700 wide) went unflagged. Every range not flagged holds
    [0, 1] within twice the upper side's REACH median reaches (about 4.2 here). Power: the
    same test flags the wage panel's schooling above, and these draws do put the midpoint a
    hair above 0 (at least 100)."""
    rng = np.random.default_rng(3)
    treat = rng.integers(0, 2, (1000, 1)).astype(float)
    flagged = hair = 0
    for seed in range(200):
        found = private_ranges(treat, treat, 0.0403, 0.001458, np.random.default_rng(seed),
                               names=("treat",))  # fmt: skip
        flagged += bool(found.missed[0])
        hair += bool(0.0 < found.reaches[1, 0] < 1e-3 and found.midpoint[0] < 1e-3)
        if not found.missed[0]:
            low, high = found.ranges[0]
            assert low <= 0.0 and 1.0 <= high and high - low <= 9.0
    assert flagged <= 20 and hair >= 100


def test_a_rare_column_found_constant_is_a_sliver_at_its_midpoint() -> None:
    """A 0/1 column that 3 % of 5,000 persons have (ε = 0.03 a median, the counts' sd about
    35): its upper reach, the median of the 150 persons at 1 against the cells tied beside
    them, lands anywhere among those cells (measured over these 100 draws: 52 above 1.2, 40
    in the fine cells below 1, 5 below 2^-32, 3 at 1). In the fine cells below 1 its range
    had clipped every one of the 150 to a sliver with no flag, the far rung's count below
    RUNG_SHARE n (250 plus 3 sds); far above, it stretches the column constant in its frame.
    The first rung's counts find the column (nearly) constant (at most RUNG_SHARE n a side off
    the midpoint's cell), which makes it narrow wherever its reaches landed, and its range the
    sliver at its midpoint (every value off the cell clipped to an end: the column itself,
    here), so that its slope is withheld and the others released: every one of these 100
    draws, none missed (which would withhold every coefficient). The normal column beside it
    is never flagged."""
    rng = np.random.default_rng(3)
    rare = (rng.random(5000) < 0.03).astype(float)[:, None]
    values = np.hstack([rare, rng.normal(size=(5000, 1))])
    fine = 0
    for seed in range(100):
        found = private_ranges(values, values, 0.03, 0.01, np.random.default_rng(seed),
                               names=("d", "x"))  # fmt: skip
        assert not found.missed[1] and not found.narrow[1]
        assert found.narrow[0] and found.constant[0] and not found.missed[0]
        low, high = found.ranges[0] - found.midpoint[0]
        assert -low == high == max(TINY_REACH, float(GRID.half_width_at(found.midpoint[:1])[0]))
        fine += bool(TINY_REACH < found.reaches[0, 0] < 0.9)  # the reach a sliver in the fine cells
    assert fine >= 10  # the case the rule is for occurs (40 measured)


def test_a_skewed_columns_range_is_one_sided() -> None:
    """A column 85 % of 5,000 persons have at 0, the rest lognormal over four rows (a
    zero-inflated outcome): the lower side is empty, the upper side's persons spread far past
    its first positive rung, so its range is one-sided (ONE_SIDED, SPREAD_SDS). A normal
    column and a 0/1 column with a fifth of the persons at 1 (its upper side at one value,
    nobody past the rungs) are not. With the counts exact: 40 of 40. At a fit's noise (the
    medians' ε 0.03, the counts' ρ 0.0017): 56 of 100 measured, the rest missed (27), narrow
    (5) or unflagged (11); at least 46 (2 binomial sds below); the normal column never, and
    the 0/1 column only where its counts' noise passes SPREAD_SDS sds (2 of 100 measured, a
    chance of 0.023 each: at most 7)."""
    rng = np.random.default_rng(11)
    n = 5000
    rows = np.exp(0.5 + rng.normal(size=(n, 4)))
    spends = rng.random(n) < 0.15
    normal = rng.normal(size=(n, 4)) + rng.normal(size=(n, 1))
    binary = (rng.random(n) < 0.2).astype(float)
    lows = np.column_stack([np.where(spends, rows.min(axis=1), 0.0), normal.min(axis=1), binary])
    highs = np.column_stack([np.where(spends, rows.max(axis=1), 0.0), normal.max(axis=1), binary])
    names = ("y", "x", "d")
    for seed in range(40):
        found = private_ranges(lows, highs, 50.0, 1e6, np.random.default_rng(seed), names=names)
        assert found.one_sided.tolist() == [True, False, False]
    flagged = np.zeros(3, dtype=int)
    for seed in range(100):
        found = private_ranges(lows, highs, 0.03, 0.0017, np.random.default_rng(seed), names=names)
        flagged += found.one_sided
    assert flagged[0] >= 46 and flagged[1] == 0 and flagged[2] <= 7


def test_a_midpoint_beyond_every_person_is_a_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    """An outcome's midpoint median at 1.5e17, beyond all of 1,000 persons (as a `BetweenOLS`
    fit at ε = 1 drew it, its counts' noise sd about 110): one side is empty, the other holds
    every person at about the same deviation, the median reach, so nobody passes its first
    rung; the range [-9.6e17, 4e17] held them and released coefficients of 10^15. Flagged
    missed, with the counts exact (ρ large) and at the fit's noise (sd 110, 20 draws: the side
    at 1,000 against a bar of 500 + 2 sds, the empty side and the first rung at 0 against
    RUNG_SHARE n + 1 sd). Not flagged: the midpoint among them; a 0/1 column whose midpoint is
    at 0 (45 % at 1: the cell holds the rest); and a column with 40 % at its lowest value, 0,
    its midpoint put there (a miss of a tenth of n): 60 % on one side and nobody on the other,
    but the side spread out, many beyond its first rung."""
    rng = np.random.default_rng(5)
    n = 1000
    y = rng.normal(1.0, 1.5, n)
    binary = (rng.uniform(size=n) < 0.45).astype(float)
    spread = np.where(rng.uniform(size=n) < 0.4, 0.0, rng.exponential(2.0, n))
    values = np.column_stack([y, binary, spread])
    found = private_ranges(values, values, 50.0, 1e6, rng, names=("y", "binary", "spread"))
    assert not found.missed.any()
    real = ranges.private_median
    calls = {"n": 0}

    def far_midpoint(values: np.ndarray, *args: object, **options: object) -> np.ndarray:
        calls["n"] += 1  # a release's three medians: its midpoints', then its two reaches'
        median = real(values, *args, **options)
        return np.array([1.5e17, 0.0, 0.0]) if calls["n"] % 3 == 1 else median

    monkeypatch.setattr(ranges, "private_median", far_midpoint)
    exact = private_ranges(values, values, 50.0, 1e6, rng, names=("y", "binary", "spread"))
    assert exact.missed.tolist() == [True, False, False]
    assert exact.ranges[0, 0] < -1e16  # the range that held them, a frame 10^17 wide
    names = ("y", "binary", "spread")
    noisy = [
        private_ranges(values, values, 50.0, 0.0015, np.random.default_rng(s), names=names)
        for s in range(20)
    ]
    # the empty side and the first rung each miss their bar (1 sd above) with chance about
    # 16 %, the full side its (about 2.5 sds below) 0.6 %: flagged in about 70 % of draws, so
    # that fewer than 9 of 20 has chance 0.5 %; before the rule, none
    assert sum(bool(f.missed[0]) for f in noisy) >= 9


def test_a_heavy_tail_beyond_the_range_widens_it_and_what_lies_beyond_is_counted() -> None:
    """Noise all but off (ρ large: the counts exact to a person), 4,000 persons: the Pareto
    (index 1.5) and lognormal (σ = 1.5) columns leave far more than √n persons beyond
    CLIPPED_RUNG median reaches on their upper sides, and so does a lognormal one negated on
    its lower side: each such side is widened, to a median reach inside the first of the
    WIDE_RUNGS beyond which nobody lies, or else its last, the core in proportion (half of the
    range's reach, as CORE is of REACH), and where persons lie beyond the last rung their
    count is the ``heavy`` one, to a person. The normal column's persons beyond its range's
    end (CLIPPED_RUNG = REACH median reaches, 2.7 sds: about 14 a side) widen it on both sides
    too, with nobody beyond the first of the rungs: it clips ``some``, by its larger count at
    CLIPPED_RUNG (before session 117 the count was a median reach further out, where one
    person lay, on one side). A uniform and a 0/1 column leave nobody beyond. Without ``tail_rho``
    nothing counts them (0 everywhere, no widening, no ledger entry), nor do the
    histograms."""
    rng = np.random.default_rng(5)
    n = 4000
    values = np.column_stack(
        [
            rng.pareto(1.5, n),
            rng.lognormal(0.0, 1.5, n),
            -rng.lognormal(0.0, 1.5, n),
            rng.normal(size=n),
            rng.uniform(size=n),
            (rng.uniform(size=n) < 0.3).astype(float),
        ]
    )
    names = tuple("abcdef")
    found = private_ranges(values, values, 50.0, 1e6, rng, names=names, tail_rho=8e5, far_rho=2e5)
    assert found.widened.tolist() == [True, True, True, True, False, False]
    deviations = (values - found.midpoint, found.midpoint - values)
    rungs = np.array(WIDE_RUNGS)
    for column, side in ((0, 0), (1, 0), (2, 1), (3, 0)):
        beyond = (deviations[side][:, column, None] > rungs * found.reaches[side, column]).sum(0)
        assert np.abs(found.far[side, :, column] - beyond).max() <= 1.0  # to a person
        at = rungs[np.argmax(beyond == 0)] if (beyond == 0).any() else rungs[-1]
        reach = (at - 1.0) * found.reaches[side, column]
        end, inner = found.ranges[column, 1 - side], found.core[column, 1 - side]
        sign = 1.0 if side == 0 else -1.0
        assert end == pytest.approx(found.midpoint[column] + sign * reach)
        assert inner == pytest.approx(found.midpoint[column] + sign * reach / 2.0)
        if column < 3:  # far out beyond the last rung: many
            assert beyond[-1] > 0 and abs(found.heavy[column] - beyond[-1]) <= 1.0
    assert not np.isfinite(found.far[1, :, [0, 1]]).any()  # their lower sides not widened
    assert np.isfinite(found.far[1, :, 3]).all() and np.abs(found.far[:, :, 3]).max() < 1.0
    first = max((deviations[s][:, 3] > CLIPPED_RUNG * found.reaches[s, 3]).sum() for s in (0, 1))
    assert found.heavy[3:].tolist() == [0.0, 0.0, 0.0]
    assert first >= 1 and abs(found.some[3] - first) <= 1.0 and not found.some[4:].any()
    (far,) = [e for e in found.entries if e.target == "persons beyond the widened ranges"]
    assert far.sensitivity >= math.sqrt(4 * len(WIDE_RUNGS))  # one count a side and rung
    without = private_ranges(values, values, 50.0, 1e6, rng, names=names)
    assert not without.heavy.any() and not without.widened.any()
    assert len(without.entries) == len(found.entries) - 2
    assert not histogram_ranges(values, values, 1e6, rng, names=names).heavy.any()


def test_a_count_between_the_bars_of_many_and_some_widens_the_side() -> None:
    """At a small n ε the bar of many (√n plus 2.0 sds) can sit below that of some (2.6 sds):
    100 persons, counts of sd 100 (k = 1), bars 206 and 258. A count of 245 between them
    widens the side (not called heavy at the first rung), one of 200 below both does not,
    and a side not eligible (the histograms' range, or a narrow one) is never widened."""
    rng = np.random.default_rng(3)
    values = rng.normal(size=(100, 1))
    found = (np.array([[-2.0, 2.0]]), np.array([[-1.0, 1.0]]))
    sides = ([values, -values], np.full((2, 1), 0.5))
    for count, eligible, widened in (
        (245.0, True, True),
        (200.0, True, False),
        (245.0, False, False),
    ):
        widening = ranges._widened(
            found, np.zeros(1), sides, (np.array([[count], [0.0]]), 100.0),
            np.zeros(1, dtype=bool), np.array([eligible]), 1e6, rng, 1.0,
        )  # fmt: skip
        assert widening.widened.tolist() == [widened]
        assert (widening.ranges[0, 1] > 2.0) == widened and widening.ranges[0, 0] == -2.0
        assert len(widening.entries) == int(widened)  # the far counts spent where widened


def test_light_columns_are_rarely_called_heavy_at_their_stated_rate() -> None:
    """The bars hold the chance that any side of the fit's k columns with nobody beyond
    CLIPPED_RUNG median reaches is widened to SOME_FALSE (1 %) by a union bound, and called
    heavy, which then also takes counts beyond each of the WIDE_RUNGS above their bar (their
    own false rate, HEAVY_FALSE), to far less: 200 releases of three normal columns of 1,000
    persons at a small ρ (the first counts' sd about 50 persons, √n = 32) widen a side in at
    most 6 of 200 (a 1 % rate exceeds 6 with chance 0.005; measured 1) and call none heavy
    in more than 2 (measured 0)."""
    rng = np.random.default_rng(6)
    calls = widened = 0
    for _ in range(200):
        values = rng.normal(size=(1000, 3)) + rng.normal(size=(1000, 1))
        found = private_ranges(
            values - 1.0, values + 1.0, 5.0, 0.1, rng, names=tuple("abc"),
            tail_rho=0.0012, far_rho=0.0012 * FAR_SHARE / (1.0 - FAR_SHARE),
        )  # fmt: skip
        calls += bool(found.heavy.any())
        widened += bool(found.widened.any())
    assert widened <= 6 and calls <= 2, (widened, calls)


# ---------------------------------------------------------------------------------------------
# Audits of the stage's two kinds of median and of its counts (one release_vector_sum, audited
# end to end below with the medians held public); the stage composes them (ledger test)
# ---------------------------------------------------------------------------------------------

#: Small grids (as the engine's median audits): the mechanism's privacy does not depend on them;
#: cells [2^(j/2), 2^((j+1)/2)), so 0.8 and 1.2 sit in adjacent cells
SMALL = LogGrid(fine=2, coarse=1, inner=2, outer=3, signed=True)
SMALL_SPREAD = LogGrid(fine=2, coarse=1, inner=2, outer=3, signed=False)
EPS, RUNS = 1.0, 5_000


@pytest.fixture
def small_grids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges, "GRID", SMALL)
    monkeypatch.setattr(ranges, "REACH_GRID", SMALL_SPREAD)
    assert quantile.GRID is not SMALL  # the package's own grids are untouched


def _midpoints(person: float, seed: int, epsilon: float, runs: int = RUNS) -> np.ndarray:
    """The midpoint of 21 persons at 0.8 and 20 at 1.2 (D: person 0 at 0.8) or of 20 and 20
    and person 0 at FAR (D'): its winning cell swaps. ``runs`` runs, as columns of one call
    (:func:`_as_columns`)."""
    values = _as_columns(np.concatenate([np.full(20, 0.8), np.full(20, 1.2), [person]]), runs)
    rng = np.random.default_rng(seed)
    return ranges._medians(values, values, epsilon, rng)[0]


def _reaches(person: float, seed: int, epsilon: float, runs: int = RUNS) -> np.ndarray:
    """The upper reach above the public midpoint 1 of 20 persons 0.8 and 20 persons 1.2 above
    it, person 0 at the midpoint (D: a zero, no statistic in the median) or FAR above (D').
    ``runs`` runs, as columns of one call (:func:`_as_columns`)."""
    deviation = _as_columns(np.concatenate([np.full(20, 0.8), np.full(20, 1.2), [person]]), runs)
    rng = np.random.default_rng(seed)
    return ranges._reach(deviation, np.ones(runs), epsilon, rng)[1]


def _as_columns(persons: np.ndarray, runs: int) -> np.ndarray:
    """The persons' column repeated ``runs`` times: one call of the stage's medians on it is
    ``runs`` independent runs with the law of separate calls. Each column's median reads that
    column's values and midpoint only, and draws its noise from its own key
    (:func:`~dplong.privacy.quantile.private_median`: one uint64 of the Generator per column,
    all draws keyed by it): the columns' keys are i.i.d. uniform, as the runs' keys are when
    the calls come one after another (there they interleave with the other medians' keys:
    other draws, the same law)."""
    return np.repeat(persons[:, None], runs, axis=1)


@pytest.mark.slow
@pytest.mark.usefixtures("small_grids")
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
@pytest.mark.parametrize(("release", "persons"), [(_midpoints, (0.8, FAR)), (_reaches, (0.0, FAR))])
def test_stage_median_audit_with_power_check(
    release: Callable[[float, int, float], np.ndarray],
    persons: tuple[float, float],
    fraction: float,
) -> None:
    """Each median of the stage on D and D': tails beyond the noiseless values; the claim is
    its ε (pure). The broken replica (noise at a quarter of its scale: ε x 4) must exceed it,
    the correct one must not."""
    outputs = [release(p, seed, EPS / fraction) for seed, p in enumerate(persons)]
    # without noise the exponential mechanism draws among the cells of least loss alike: the
    # lowest of 64 draws is the lowest such cell (two tie for the reaches' zero: a 2**-64 miss)
    noiseless = np.array([release(p, 0, 1e300, 64).min() for p in persons])
    assert noiseless[0] != noiseless[1]  # the design moves the median
    low, high = noiseless.min(), noiseless.max()
    events_d, names = audit_events(outputs[0][:, None], [low], [high], [1.0], ["median"])
    events_p, _ = audit_events(outputs[1][:, None], [low], [high], [1.0], ["median"])
    bound = epsilon_lower_bound(events_d, events_p, delta=0.0, confidence=CONFIDENCE, names=names)
    if fraction == 1.0:
        assert bound.epsilon_lb <= EPS, str(bound)
    else:
        assert bound.epsilon_lb > EPS, str(bound)


def _public_medians(
    values: np.ndarray,
    grid: LogGrid,
    epsilon: np.ndarray,
    rng: np.random.Generator,
    *,
    gaps: np.ndarray | None = None,
) -> np.ndarray:
    """The stage's medians held at public values (midpoint 0 on the signed grid, reaches 1 on
    the unsigned one): the counts alone are random, and the audit below sees their release
    only."""
    return np.ones(values.shape[1]) if not grid.signed else np.zeros(values.shape[1])


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_rung_counts_audit_with_power_check(
    fraction: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rungs' counts as :func:`private_ranges` releases them, the medians held public: D
    (person 0 at the midpoint, beyond no rung) and D' (person 0 far out on both sides, beyond every
    rung, the midpoint's cell, the far and the near rung included: the vector's worst move, √(12 k)
    for k = 1), the released counts projected on the move. ε lower bound from the tail events; the
    broken replica (noise at a quarter of its sd) must be caught, the correct one must not exceed
    its claim (runs as in the Gram matrix's audit, test_pooled.py)."""
    monkeypatch.setattr(ranges, "private_median", _public_medians)
    rho, delta = 0.5, 1e-3
    runs = 3000 if fraction == 1.0 else 1500
    others = np.linspace(-0.5, 0.5, 30)  # beyond the cell, inside the first reach rung
    rng = np.random.default_rng(17)
    outputs, noiseless = [], []
    for person in (0.0, FAR):
        lows = np.append(others, -person)[:, None]
        highs = np.append(others, person)[:, None]
        counts = [
            private_ranges(lows, highs, 1.0, rho / fraction**2, rng, names=("x",)).counts.ravel()
            for _ in range(runs)
        ]
        outputs.append(np.array(counts))
        noiseless.append(private_ranges(lows, highs, 1.0, OFF, rng, names=("x",)).counts.ravel())
    move = noiseless[1] - noiseless[0]
    assert np.array_equal(move, np.ones(2 * (len(RUNGS) + 2)))  # every count, by one
    direction = move / np.linalg.norm(move)
    low, high = (float(v @ direction) for v in noiseless)
    sd = math.sqrt(2 * (len(RUNGS) + 2)) / math.sqrt(2.0 * rho)  # the stated sensitivity √(12 k)
    projected = (outputs[0] @ direction, outputs[1] @ direction)
    check_gaussian_audit(projected, (low, high), sd, fraction, rho, delta)


def _tail_counts(
    lows: np.ndarray, highs: np.ndarray, tail_rho: float, rng: np.random.Generator
) -> np.ndarray:
    """The released counts beyond CLIPPED_RUNG (upper, lower) of one column, the rungs'
    noiseless."""
    found = private_ranges(
        lows, highs, 1.0, OFF, rng, names=("x",), tail_rho=tail_rho, far_rho=tail_rho / 4.0
    )
    return found.beyond.ravel()


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_tail_counts_audit_with_power_check(
    fraction: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts beyond CLIPPED_RUNG median reaches (``tail_rho``, the ``beyond`` vector) as
    :func:`private_ranges` releases them, the medians held public and the rungs' counts
    noiseless (their own audit is above): D (person 0 at the midpoint) and D' (person 0 far
    out on both sides, beyond CLIPPED_RUNG on each: the vector's worst move, √(2 k) for k = 1), the
    released counts projected on the move. The broken replica (noise at a quarter of its sd)
    must be caught, the correct one must not exceed its claim."""
    monkeypatch.setattr(ranges, "private_median", _public_medians)
    others = np.linspace(-0.5, 0.5, 30)  # beyond the cell, inside CLIPPED_RUNG
    _audit_tail_counts(_tail_counts, others, others, 0.0, fraction, seed=18)


def _audit_tail_counts(
    release: Callable[[np.ndarray, np.ndarray, float, np.random.Generator], np.ndarray],
    lows: np.ndarray,
    highs: np.ndarray,
    inside: float,
    fraction: float,
    seed: int,
    counts: int = 2,
) -> None:
    """The audit of a column's ``counts`` beyond its range's ends as ``release`` gives them
    (both sides', at each of its rungs): D (the persons' ``lows`` and ``highs``, person 0 at
    ±``inside``) and D' (person 0 at ±FAR, beyond every end: the vector's worst move, the
    square root of their number), the released counts projected on the move, at ρ (a
    ``fraction`` of the noise: the broken replica)."""
    rho, delta = 0.5, 1e-3
    runs = 3000 if fraction == 1.0 else 1500
    rng = np.random.default_rng(seed)
    outputs, noiseless = [], []
    for person in (inside, FAR):
        low, high = np.append(lows, -person)[:, None], np.append(highs, person)[:, None]
        outputs.append(np.array([release(low, high, rho / fraction**2, rng) for _ in range(runs)]))
        noiseless.append(release(low, high, OFF, rng))
    move = noiseless[1] - noiseless[0]
    assert np.array_equal(move, np.ones(counts))  # every count, by one
    direction = move / np.linalg.norm(move)
    centres = tuple(float(v @ direction) for v in noiseless)
    sd = math.sqrt(counts) / math.sqrt(2.0 * rho)  # the stated sensitivity
    projected = (outputs[0] @ direction, outputs[1] @ direction)
    check_gaussian_audit(projected, centres, sd, fraction, rho, delta)


def _guarded_tail_counts(
    lows: np.ndarray, highs: np.ndarray, tail_rho: float, rng: np.random.Generator
) -> np.ndarray:
    """The released counts beyond the range taken (upper, lower) of one column as
    :func:`guarded_ranges` releases them, the rungs' counts noiseless and the histograms all
    but noiseless (ρ = 1e8)."""
    found, swap = guarded_ranges(
        lows, highs, 1.0, OFF, 1e8, rng, names=("x",), tail_rho=tail_rho, far_rho=tail_rho / 4.0
    )
    assert swap.all()
    return found.beyond.ravel()


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_guarded_tail_counts_audit_with_power_check(
    fraction: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts of the persons beyond the ranges a guarded stage takes
    (:func:`guarded_ranges`, ``tail_rho``), the histograms' range taken (the choice, a
    post-processing of the routes' outputs, held there), the medians public, the rungs'
    counts noiseless and the histograms' threshold held at 5 persons (one person far out
    moves no range: D and D' share it). D (person 0 with the others at ±1) and D' (person 0 at
    ±FAR, beyond both ends: the vector's worst move, √(2 k) for k = 1), the released counts
    projected on the move. The broken replica (a quarter of the noise) must be caught, the
    correct one must not exceed its claim."""
    monkeypatch.setattr(ranges, "private_median", _public_medians)
    monkeypatch.setattr(ranges, "histogram_threshold", lambda k, rho: 5.0)
    monkeypatch.setattr(ranges, "guard_swaps", lambda found, guard: np.ones(1, dtype=bool))
    monkeypatch.setattr(ranges, "HISTOGRAM_EDGES", SMALL_EDGES)  # as the histograms' audit
    _audit_tail_counts(_guarded_tail_counts, -np.ones(20), np.ones(20), 1.0, fraction, seed=20)


def _far_counts(
    lows: np.ndarray, highs: np.ndarray, far_rho: float, rng: np.random.Generator
) -> np.ndarray:
    """The released counts beyond the WIDE_RUNGS (upper, then lower) of one column whose two
    sides the first counts (held public, far above their bar) widen, its midpoint 0 and
    median reaches 1."""
    widening = ranges._widened(
        (np.array([[-4.0, 4.0]]), np.array([[-2.0, 2.0]])),
        np.zeros(1),
        ([highs, -lows], np.ones((2, 1))),
        (np.full((2, 1), 1e6), 1.0),
        np.zeros(1, dtype=bool),
        np.ones(1, dtype=bool),
        far_rho,
        rng,
        1.0,
    )
    assert widening.widened.all()
    return widening.far.ravel()


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_far_counts_audit_with_power_check(fraction: float) -> None:
    """The counts of the persons beyond the WIDE_RUNGS on the widened sides (their own vector,
    FAR_SHARE of the tail ρ), the first counts that widen them held public: D (person 0 with
    the others at ±1) and D' (person 0 at ±FAR, beyond every rung on both sides: the vector's
    worst move, √6 for one column), the released counts projected on the move. The broken
    replica (a quarter of the noise) must be caught, the correct one must not exceed its
    claim."""
    counts = 2 * len(WIDE_RUNGS)
    _audit_tail_counts(
        _far_counts, -np.ones(20), np.ones(20), 1.0, fraction, seed=21, counts=counts
    )


def test_the_guard_takes_a_missed_or_far_reaching_range_and_leaves_a_good_one() -> None:
    """Schooling-like integers (a third at 12, 545 persons) and a normal column at the medians'
    ε of a guarded fit of the wage panel (0.086; a reach's miss bound 0.97 for a quarter of
    the persons, 0.56 for half): the medians' reach lands beyond every person of a side in
    many draws, and the guard's histograms find the raw values' dyadic cells. A range is
    taken from the histograms exactly where the medians' missed, is a sliver, lies outside
    the histograms' core or spans more than GUARD_SPAN times their range (no tail counts
    here: none is heavy); over 40 seeds schooling's was taken in 22 (measured) and each
    holds 10-16, the normal column's in 10 (measured; its medians missed in those), each
    holding its core. Bounds about 2.5 binomial sds around the measured counts.
    Post-processing of released numbers: the swap reads both routes' outputs only."""
    educ = np.random.default_rng(1).choice([10.0, 11, 12, 12, 12, 13, 14, 16], (545, 1))
    normal = np.random.default_rng(2).normal(size=(545, 1))
    taken = {"educ": 0, "normal": 0}
    for seed in range(40):
        for name, column in (("educ", educ), ("normal", normal)):
            found = private_ranges(column, column, 0.086, 0.0057, np.random.default_rng(seed),
                                   names=("x",))  # fmt: skip
            guard = histogram_ranges(column, column, 0.009, np.random.default_rng(seed),
                                     names=("x",))  # fmt: skip
            low, high = guard.ranges[0]
            width = found.ranges[0, 1] - found.ranges[0, 0]
            outside = found.ranges[0, 0] > guard.core[0, 1] or found.ranges[0, 1] < guard.core[0, 0]
            far = width > ranges.GUARD_SPAN * (high - low)
            wide = high - low > ranges.GUARD_SPAN * width
            doubtful = found.missed[0] or found.narrow[0] or (outside and not wide) or far
            swap = bool(guard_swaps(found, guard)[0])
            assert swap == (doubtful and not guard.constant[0])
            taken[name] += swap
            if swap and name == "educ":
                assert low <= 10.0 and high >= 16.0
            elif swap:
                assert low <= -1.0 and high >= 1.0
    assert 15 <= taken["educ"] <= 30 and 4 <= taken["normal"] <= 17


def test_a_ranges_clipped_count_reads_as_none_some_or_many() -> None:
    """The larger side's count of the persons a range clips: above √n plus the noise's
    quantile it clips many (heavy), above the noise's quantile alone some, else nothing; a
    range that missed is neither (its own note). Post-processing of released counts."""
    n, sd = 3000, 27.3
    some_at, many_at = ranges.some_threshold(4, sd), float(ranges.heavy_threshold(n, 4, sd))
    assert 80 < some_at < 85 < many_at  # 3.02 noise sds; √n plus 2.50 sds
    beyond = np.array([[10.0, some_at + 5, many_at + 5, many_at + 5], [3.0, 0.0, 0.0, 0.0]])
    heavy, some = ranges._heavy(beyond, sd, np.array([False, False, False, True]), n)
    assert heavy.tolist() == [0.0, 0.0, many_at + 5, 0.0]
    assert some.tolist() == [0.0, some_at + 5, 0.0, 0.0]


def test_the_guard_keeps_a_good_range_its_own_failures_would_replace() -> None:
    """The histograms' two failures take no range. A cell of noise beyond every person clears
    their threshold with chance HISTOGRAM_FALSE (a BetweenOLS fit of a normal regressor at
    600 persons, ε = 3, had its range [-4.6, 4.2] replaced by [-2.6e6, 5.2e5] that way, and
    every coefficient withheld): that guard's core lies far off the medians' good range, and
    its range spans far more than GUARD_SPAN times it. And a column within the histograms'
    innermost cell (2^-32) is below their resolution: the medians' verdict of a sliver stands
    (y * 1e-12 had been fitted in a range 40 times its spread, the intervals as wide).
    Post-processing: both routes' released outputs, edited as their failures leave them."""
    normal = np.random.default_rng(2).normal(size=(600, 1))
    found = private_ranges(normal, normal, 0.3, 0.02, np.random.default_rng(0), names=("x",))
    guard = histogram_ranges(normal, normal, 0.012, np.random.default_rng(0), names=("x",))
    assert not found.missed[0] and not found.narrow[0] and not guard_swaps(found, guard)[0]
    noise = dataclasses.replace(  # the lower side's farthest cell a false one at 2^21
        guard,
        ranges=np.array([[-2621440.5, 524290.5]]),
        core=np.array([[-1797558.0, -299586.0]]),
        midpoint=np.array([-1048575.0]),
    )
    assert not guard_swaps(found, noise)[0]
    # the same far guard where the medians' range missed: theirs is all there is
    assert guard_swaps(dataclasses.replace(found, missed=np.array([True])), noise)[0]
    tiny = normal * 1e-12
    found = private_ranges(tiny, tiny, 0.3, 0.02, np.random.default_rng(0), names=("x",))
    guard = histogram_ranges(tiny, tiny, 0.012, np.random.default_rng(0), names=("x",))
    assert found.narrow[0] and np.abs(guard.ranges).max() <= 1.5 * 2.0**-32
    assert not guard_swaps(found, guard)[0]


# ---------------------------------------------------------------------------------------------
# The histogram route (small n ε): one Gaussian vector of the persons' cells
# ---------------------------------------------------------------------------------------------


#: A small grid for the audit (as the medians' audits): the release's privacy does not depend
#: on it, and a dozen cells draw fast; 1 and FAR sit in different cells on both sides
SMALL_EDGES = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])


def test_noise_off_histograms_give_dyadic_cores_holding_the_extremes() -> None:
    """Noise off, the core ends at the outer edge of the farthest cell that holds
    HISTOGRAM_USERS-like shares (here any person: the threshold is ~0); a 0/1 column's box is
    [0, 1] exactly (cells closed above), the core inside it, the range around it; an all-zero
    column's is [0, 0], the one the histograms call constant."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2000, 1)) + rng.normal(size=(2000, 8))
    age = rng.uniform(20, 60, (2000, 1))
    female = (rng.uniform(size=(2000, 1)) < 0.5).astype(float)
    lows = np.column_stack([x.min(axis=1), age, female])
    highs = np.column_stack([x.max(axis=1), age, female])
    found = ranges.histogram_ranges(
        np.column_stack([lows, np.zeros(2000)]),
        np.column_stack([highs, np.zeros(2000)]),
        OFF,
        rng,
        names=("x", "age", "female", "zero"),
    )
    # a column whose every extreme is 0 is constant: its box is [0, 0], and no other is
    assert found.constant.tolist() == [False, False, False, True]
    found = ranges.histogram_ranges(lows, highs, OFF, rng, names=("x", "age", "female"))
    # threshold ~0: the farthest non-empty cell, so the box holds every extreme
    box = found.midpoint[:, None] + np.column_stack([-found.reaches[1], found.reaches[0]])
    assert np.all(box[:, 0] <= lows.min(axis=0)) and np.all(highs.max(axis=0) <= box[:, 1])
    assert box[2].tolist() == [0.0, 1.0] and box[1].tolist() == [16.0, 64.0]
    half = (box[:, 1] - box[:, 0]) / 2.0
    assert found.core == pytest.approx(
        found.midpoint[:, None] + np.outer(half, [-1, 1]) * ranges.HISTOGRAM_CORE
    )
    assert found.ranges == pytest.approx(
        found.midpoint[:, None] + np.outer(half, [-1, 1]) * ranges.HISTOGRAM_REACH
    )


def test_a_histogram_range_that_clips_a_side_straddling_zero_is_flagged() -> None:
    """An outcome of mean 1.25 and person sd 1.2 over four rows of sd 1 (1,000 persons): its
    persons' minima straddle 0, spread over cells of both signs (at most 18 % in one), so that
    no cell of the lower side's histogram clears the threshold (ρ of a four-column fit at
    n = 1000, ε = 1: about 190 persons; the side then ends at a cell holding half of it within
    the upper end mirrored) or one near the bulk does, and the side ends there, clipping up to
    half of the persons. The count of the persons beyond the ends (tail_rho,
    its sd about 33) flags such ranges (missed above HISTOGRAM_MISS n by 3 sds: 60 %; heavy
    above √n and 2.2 sds, 10 %): no range left unflagged clips more than 15 % of the persons
    (one 13 %, the rest at most 5 %). Power: without the count, 29 of these 100 ranges
    clipped more than 15 %; a column centred at 0 beside it is never flagged, and the count
    moves no range."""
    rng = np.random.default_rng(7)
    person = rng.normal(size=(1000, 1))
    y = 1.25 + 1.2 * person + rng.normal(size=(1000, 4))
    x = 1.2 * rng.normal(size=(1000, 1)) + rng.normal(size=(1000, 4))
    lows, highs = np.column_stack([y.min(1), x.min(1)]), np.column_stack([y.max(1), x.max(1)])

    def clipped(box: np.ndarray) -> float:
        return float(np.mean((lows[:, 0] < box[0]) | (highs[:, 0] > box[1])))

    flagged = unseen = 0
    for seed in range(100):
        counted = histogram_ranges(lows, highs, 0.0037, np.random.default_rng(seed),
                                   names=("y", "x"), tail_rho=0.0019)  # fmt: skip
        blind = histogram_ranges(lows, highs, 0.0037, np.random.default_rng(seed),
                                 names=("y", "x"))  # fmt: skip
        assert not counted.missed[1] and counted.heavy[1] == 0.0
        assert np.array_equal(counted.ranges, blind.ranges)
        shown = bool(counted.missed[0] or counted.heavy[0] > 0.0)
        flagged += shown
        assert shown or clipped(counted.ranges[0]) <= 0.15
        unseen += clipped(blind.ranges[0]) > 0.15
    assert flagged >= 20 and unseen >= 20


@pytest.mark.parametrize(("threshold", "expected"), [(300.0, [-1.0, 4.0]), (600.0, [-4.0, 4.0])])
def test_a_side_no_cell_of_which_clears_ends_within_the_other_sides_end_mirrored(
    threshold: float, expected: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Noise off, the threshold held: every maximum at 3 (the cell (2, 4] clears), the minima
    uniform on (-1, 1), over cells of both signs none of which holds 300. The lower side ends
    at the farthest cell within the upper end mirrored (-4) that holds HISTOGRAM_WITHIN of the
    threshold: at 300, (0.5, 1] of the negated minima (250 persons), the box [-1, 4]; at 600
    none does, and the side ends at the mirrored end, [-4, 4]. Not at its largest count's cell,
    which at noise could as well be an empty cell beyond every person: 11 of 1,000 draws on an
    exponential outcome's panels (RandomEffects at 1,000 persons, ε = 1) gave ranges of 10^8
    that way (docs/design/ranges.md). Where neither side clears, each keeps its largest
    count's cell."""
    monkeypatch.setattr(ranges, "histogram_threshold", lambda k, rho: threshold)
    rng = np.random.default_rng(8)
    lows = rng.uniform(-1.0, 1.0, (1000, 1))
    found = histogram_ranges(lows, np.full((1000, 1), 3.0), OFF, rng, names=("y",))
    box = found.midpoint[:, None] + np.column_stack([-found.reaches[1], found.reaches[0]])
    assert box[0].tolist() == expected
    # both sides thin (at 600: about 500 in (0.5, 1] each): each its largest count's cell
    highs = rng.uniform(0.01, 1.0, (1000, 1))
    spread = histogram_ranges(-highs, highs, OFF, rng, names=("y",))
    box = spread.midpoint[:, None] + np.column_stack([-spread.reaches[1], spread.reaches[0]])
    assert box[0].tolist() == [-1.0, 1.0]


def test_histograms_call_constant_only_a_column_nearly_all_at_zero() -> None:
    """The histogram route's ``constant``: all but fewer than the threshold of the persons'
    extremes in the cell ending at 0, on both sides. 545 persons, three columns, ρ set so that
    the threshold is 0.2 n (109): deviations all 0 are constant in every seed (their cell's
    count is n within its noise, sd 25); a column that 45 % of the persons vary, whose movers'
    extremes spread over the five doubling cells (2^-5, 1] (about 50 persons each, none
    clearing the threshold), is never (245 persons off 0, 5 sds beyond the threshold). The
    power check: its box is [0, 0] all the same, which the rule that read the box called
    constant."""
    rng = np.random.default_rng(6)
    n, k = 545, 3
    moved = rng.uniform(size=n) < 0.45
    up, down = (np.where(moved, np.exp2(rng.uniform(-5.0, 0.0, n)), 0.0) for _ in range(2))
    lows = np.column_stack([np.zeros(n), -down, rng.normal(size=n) - 1.0])
    highs = np.column_stack([np.zeros(n), up, rng.normal(size=n) + 1.0])
    rho = (ranges.histogram_threshold(k, 1.0) / (0.2 * n)) ** 2
    boxes, flagged = 0, np.zeros(k, dtype=int)
    for seed in range(20):
        found = ranges.histogram_ranges(lows, highs, rho, np.random.default_rng(seed),
                                        names=("zero", "movers", "x"))  # fmt: skip
        flagged += found.constant
        boxes += bool(found.ranges[1, 0] == found.ranges[1, 1] == 0.0)
    assert flagged.tolist() == [20, 0, 0]
    assert boxes >= 15


def test_histogram_threshold_keeps_empty_cells_below_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every person at 0: at the threshold's ρ no empty cell clears it in 200 fits of 4
    columns (its union bound allows 1 %: ≤ 2 expected, and a cell that cleared would widen the
    core beyond its single cell). On the audit's small grid (the threshold counts its cells),
    for speed."""
    monkeypatch.setattr(ranges, "HISTOGRAM_EDGES", SMALL_EDGES)
    rng = np.random.default_rng(6)
    zeros = np.zeros((50, 4))
    rho = 0.01
    threshold = ranges.histogram_threshold(4, rho)
    cleared = 0
    for _ in range(200):
        found = ranges.histogram_ranges(zeros, zeros, rho, rng, names=("a", "b", "c", "d"))
        counts = found.counts.transpose(0, 2, 1).reshape(8, -1)
        zero_cell = np.searchsorted(ranges.HISTOGRAM_EDGES, 0.0)
        counts = np.delete(counts, zero_cell, axis=1)
        cleared += int((counts >= threshold).any())
    assert cleared <= 4  # 1 % of 200 is 2; 4 is beyond its 95 % binomial quantile


def test_one_person_moves_the_histograms_by_at_most_two_root_k() -> None:
    """A person is in one cell of each of the 2 k histograms; replacing them moves two cells
    of each by one: L2 sensitivity 2 √k, attained by persons in different cells everywhere,
    and never exceeded (a person without values is in no cell: √(2 k))."""
    rng = np.random.default_rng(7)
    k = 3
    worst = 0.0
    for _ in range(500):
        lows = rng.normal(0, 4, (2, k)) * rng.choice([1e-12, 1.0, 1e12], (2, k))
        highs = lows + np.abs(rng.normal(0, 4, (2, k)))
        lows[1, rng.integers(k)] = np.nan if rng.uniform() < 0.2 else lows[1, 0]
        cells = ranges.person_cells(lows, highs)
        assert np.all(np.linalg.norm(cells, axis=1) <= math.sqrt(2 * k))
        worst = max(worst, float(np.linalg.norm(cells[0] - cells[1])))
    apart = ranges.person_cells(
        np.array([[-1.0] * k, [-8.0] * k]), np.array([[1.0] * k, [8.0] * k])
    )
    assert np.linalg.norm(apart[0] - apart[1]) == pytest.approx(2.0 * math.sqrt(k))
    assert worst <= 2.0 * math.sqrt(k) * (1 + 1e-12)


def _histogram_outputs(rho: float, runs: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The released histograms of 20 persons at 1 (D: person 0 too) or with person 0 moved
    FAR (D'), projected on the direction of the move (its four cells, each ±1)."""
    rng = np.random.default_rng(seed)
    base = np.ones((21, 1))
    person_d, person_p = base.copy(), base.copy()
    person_p[0] = FAR
    cells = [ranges.person_cells(-p, p) for p in (person_d, person_p)]
    direction = (cells[0] - cells[1]).sum(axis=0)
    direction /= np.linalg.norm(direction)
    out = []
    for person in (person_d, person_p):
        found = [
            ranges.histogram_ranges(-person, person, rho, rng, names=("x",)).counts
            for _ in range(runs)
        ]
        out.append(np.array([f.transpose(0, 2, 1).ravel() @ direction for f in found]))
    noiseless = np.array([c.sum(axis=0) @ direction for c in cells])
    return out, noiseless


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_histogram_release_audit_with_power_check(
    fraction: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The histograms on D and D' (one person moved FAR: two cells of each histogram), the
    tails of the projection on the move; the claim is the ρ-zCDP release's ε at δ. The broken
    replica (noise at a quarter of its scale: ρ x 16) must exceed the claim."""
    monkeypatch.setattr(ranges, "HISTOGRAM_EDGES", SMALL_EDGES)
    rho, delta, runs = 0.5, 1e-3, 2000
    outputs, noiseless = _histogram_outputs(rho / fraction**2, runs, seed=11)
    sd = 2.0 / math.sqrt(2.0 * rho)  # the sensitivity 2 √k (k = 1) over √(2ρ)
    centres = float(noiseless.min()), float(noiseless.max())
    check_gaussian_audit(outputs, centres, sd, fraction, rho, delta)


def _histogram_tail_counts(
    lows: np.ndarray, highs: np.ndarray, tail_rho: float, rng: np.random.Generator
) -> np.ndarray:
    """The released counts beyond the histogram route's range (upper, lower) of one column,
    its histograms all but noiseless (ρ = 1e8: an sd of 3e-4 persons, against the threshold
    of 5 below; OFF's exact lattice is slower)."""
    found = histogram_ranges(lows, highs, 1e8, rng, names=("x",), tail_rho=tail_rho)
    return found.beyond.ravel()


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_histogram_tail_counts_audit_with_power_check(
    fraction: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counts of the persons beyond the histogram route's ranges (``tail_rho``) as
    :func:`histogram_ranges` releases them, the histograms (all but) noiseless and their
    threshold held at 5 persons (so that one person far out moves no range: D and D' share
    it; the histograms' own audit is above): D (person 0 with the others at ±1) and D' (person 0 at
    ±FAR, beyond both ends: the vector's worst move, √(2 k) for k = 1), the released counts
    projected on the move. The broken replica (noise at a quarter of its sd) must be caught,
    the correct one must not exceed its claim."""
    monkeypatch.setattr(ranges, "histogram_threshold", lambda k, rho: 5.0)
    monkeypatch.setattr(ranges, "HISTOGRAM_EDGES", SMALL_EDGES)  # as the histograms' audit
    _audit_tail_counts(_histogram_tail_counts, -np.ones(20), np.ones(20), 1.0, fraction, seed=19)


def _unbalanced_panel(seed: int) -> pd.DataFrame:
    """An audit's panel: 500 persons of 1-20 rows (geometric, mean 5), a normal regressor with
    the person effect in it, a 0/1 treatment a third of them get, and a normal outcome."""
    rng = np.random.default_rng(10_000 + seed)
    rows = np.minimum(rng.geometric(0.2, size=500), 20)
    ids = np.repeat(np.arange(500), rows)
    effect = rng.normal(size=500)
    treat = (rng.random(500) < 0.3).astype(float)
    rng.random(500)  # the audit's unused column: its draws kept, so the panels are its own
    x = 0.5 * effect[ids] + rng.normal(size=ids.size)
    x2 = rng.normal(size=ids.size)
    y = 1 + 0.5 * x + treat[ids] - 0.3 * x2 + effect[ids] + rng.normal(size=ids.size)
    return pd.DataFrame({"id": ids, "x": x, "x2": x2, "treat": treat[ids], "y": y})


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
@pytest.mark.parametrize("seed", [10, 46])
def test_a_lone_far_histogram_cell_or_a_far_group_moves_no_range_a_million_fold(
    seed: int,
) -> None:
    """`RandomEffects` at ε = 4 on two of an audit's panels released absurd coefficients with
    honest but useless intervals. Seed 10: the outcome's minima straddle 0 and clear no cell of
    the guarding histograms, but one empty cell at 2^21 cleared by noise (its 1 % chance) and
    set that side's end; the outcome's range [-2.6e6, 5.2e5] scaled the coefficients' noise by
    10^6 (10^4 ± 4.5 x 10^5). Such a lone cell, far beyond its column's others with its
    neighbours empty, is dropped (`_cleared`). Seed 46: the medians' upper reach of `treat` (0/1)
    landed at 7e-6, not a sliver, clipping the treated persons to there, while a cleared
    histogram cell held them at 1, a million of its spans out; the guard's range now stands
    (`_cleared_beyond`), where the slope was 5,433 ± 15,000 against a truth of 1. Every
    coefficient is now released with an interval a few units wide: below 5 (1.2-2.7 here)."""
    model = dplong.RandomEffects.from_formula(
        "y ~ x + treat + x2", _unbalanced_panel(seed), groups="id"
    )
    res = model.fit(epsilon=4.0, random_state=seed)
    bands = res.conf_int()
    assert res.params.notna().all(), res.withheld
    assert ((bands["upper"] - bands["lower"]) / 2 < 5.0).all(), bands
    truth = pd.Series({"Intercept": 1.0, "x": 0.5, "treat": 1.0, "x2": -0.3})
    assert ((bands["lower"] <= truth) & (truth <= bands["upper"])).all(), bands


def test_a_lone_far_cleared_cell_is_dropped_and_a_held_one_kept() -> None:
    """`_cleared` on made-up counts of one column's two histograms: the upper side's persons
    in the cells at 1-4 and one cell at 2^21 above the threshold with empty neighbours (noise
    alone: dropped); the same cell with a neighbour at the threshold (persons spread there:
    kept), and one 2^9 out, within `FAR_SPAN` of the others (kept)."""
    rho = 0.01
    threshold = ranges.histogram_threshold(1, rho)
    cells = ranges.HISTOGRAM_EDGES.size + 1
    edges = np.append(ranges.HISTOGRAM_EDGES, 2.0 * ranges.HISTOGRAM_EDGES[-1])
    at = {value: int(np.flatnonzero(edges == value)[0]) for value in (1.0, 2.0, 4.0, 2.0**9)}
    far = int(np.flatnonzero(edges == 2.0**21)[0])
    counted = np.zeros((2, cells))
    counted[0, [at[1.0], at[2.0], at[4.0]]] = 3.0 * threshold
    counted[0, far] = 1.1 * threshold
    assert not ranges._cleared(counted, rho)[0, far]
    held = counted.copy()
    held[0, far - 1] = threshold
    assert ranges._cleared(held, rho)[0, far]
    near = counted.copy()
    near[0, far], near[0, at[2.0**9]] = 0.0, 1.1 * threshold
    assert ranges._cleared(near, rho)[0, at[2.0**9]]
    assert ranges._cleared(counted, rho)[0, [at[1.0], at[2.0], at[4.0]]].all()
