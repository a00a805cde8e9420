"""Private ranges of columns from every person's extremes: the localisation stage of a release
of sufficient statistics whose bounds were not stated.

A release of sums of outer products (:mod:`dplong.models.pooled`) needs every value clipped to
a range before its sensitivity is known. Where the analyst states none,
:func:`private_ranges` finds it from one statistic per person: three private medians per
column (:func:`~dplong.privacy.quantile.private_median`, the exponential mechanism on a public
log grid) give the midpoint of the persons' midranges and the median reach above and below it,
and one discrete Gaussian vector counts the persons beyond each rung of :data:`RUNGS`. A side
ends at the first rung few persons pass (the first is the midpoint's cell), or else at
:data:`REACH` median reaches, which covers a uniform or normal column and clips the few far
out in a heavy tail; a second vector counts the persons beyond :data:`CLIPPED_RUNG`, whom
every range clips by more than a median reach, and where they are not few a medians' side is
widened as far as a third vector, on the widened sides alone, shows persons beyond
:data:`WIDE_RUNGS`, or else clips many (``heavy``; :func:`_widened`). The **core**, where most
persons' values lie (:data:`CORE`), is a frame for statistics that need not hold the far
values, such as a preconditioner. The stage is ``3 k`` pure ε calls and two or three ρ-zCDP
vectors for k columns.

Where n ε is too small for the medians, :func:`histogram_ranges` finds the ranges from one
Gaussian vector instead: for each column, histograms of the persons' largest and negated
smallest values on a coarse public grid (:data:`HISTOGRAM_EDGES`, a doubling a cell), with an
L2 sensitivity of ``2 √k``; a side ends at the farthest cell that clears
:func:`histogram_threshold` (one where none does, within the other side's end mirrored).

How each step is built and why its sensitivity holds, the design notes:
``docs/design/ranges.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry, gaussian_vector_entry
from dplong.privacy.noise import WeightedRelease, release_vector_sum
from dplong.privacy.quantile import GRID, LogGrid, median_entries, miss_probability, private_median

__all__ = [
    "CLIPPED_RUNG",
    "CONSTANT_SDS",
    "CORE",
    "FAR_RUNG",
    "FAR_SHARE",
    "FAR_SPAN",
    "GUARD_SPAN",
    "HEAVY_FALSE",
    "HISTOGRAM_CORE",
    "HISTOGRAM_EDGES",
    "HISTOGRAM_FALSE",
    "HISTOGRAM_MISS",
    "HISTOGRAM_REACH",
    "HISTOGRAM_WITHIN",
    "LONE_SDS",
    "MISS_SDS",
    "NEAR_RUNG",
    "ONE_SIDED",
    "OUTCOME_CONSTANT_SDS",
    "OUTCOME_SLACK",
    "REACH",
    "REACH_GRID",
    "RUNGS",
    "RUNG_SHARE",
    "SPREAD_SDS",
    "TINY_REACH",
    "WIDENED_COUNTS",
    "WIDE_RUNGS",
    "PrivateRanges",
    "far_threshold",
    "guard_swaps",
    "guarded_ranges",
    "heavy_threshold",
    "histogram_ranges",
    "histogram_threshold",
    "located_miss",
    "person_cells",
    "private_ranges",
    "reach_miss",
    "reach_rungs",
    "rung_share",
    "tail_rungs",
    "unseen_threshold",
]

#: The range's reach in units of the median reach where no rung holds (design notes): 4
#: covers a uniform column (whose largest reach is about 2.3 median reaches) and a normal one
#: up to 2.7 sds (its median reach, that of a half-normal, is 0.67 sd).
REACH = 4.0
#: The rungs, in units of the median reach, and the largest share of n a rung may leave
#: beyond it (:func:`rung_share`: fewer where the counts' noise is small next to √n): far
#: below the share a continuous column leaves beyond 2 median reaches (a normal one: 10 %).
#: The first rung, 0, is the midpoint's cell: a side that few persons pass it on ends there,
#: whatever its median reach (a side nobody is on, as below a non-negative column's midpoint
#: at 0, leaves that median nothing to find: every cell ties, and on RAND HIE's coinsurance it
#: landed at 10^165 in about 3 fits of 100).
RUNGS, RUNG_SHARE = (0.0, 1.25, 1.5, 2.0), 0.05
#: A far rung, in units of the median reach: where more than RUNG_SHARE of n persons are beyond
#: it on a side, by MISS_SDS noise sds of the count, the median reach missed its data (too
#: narrow: a column whose persons mostly sit at its midpoint, or the median's rare miss) and
#: the range clips all of them; a heavy tail leaves far fewer there (Pareto index 1.5:
#: 16^-1.5, 1.6 % of the side). 3 sds: the wage panel's five within regressors at ε = 4
#: (545 persons, the count's sd about 40) had 7 of 30 sides above RUNG_SHARE n by noise alone.
#: A range that is the midpoint's cell on both sides counts as missed too (a constant column
#: to the stage; a rare 0/1 column whose few persons the count's noise hides).
#: Where more than half of a side's persons off the midpoint's cell are beyond it, by MISS_SDS
#: sds, the reach missed too, however few they are: it landed among the cells tied between
#: the persons at the midpoint and the few off it (a rare 0/1 column's, 3 % of 5,000 persons
#: at ε = 2), and the range clips them all; unless the range is ``narrow`` (below), which
#: withholds the column's coefficient only.
FAR_RUNG, MISS_SDS = 16.0, 3.0
#: A range clips many persons where those beyond CLIPPED_RUNG median reaches on a side, whom
#: every range clips (it ends at REACH or before), are more than √n by the count's noise:
#: clipping m persons by about a spread each moves a mean by m / √n of its sampling SEs, so
#: beyond √n the bias can exceed the interval. A normal column leaves none there; RAND HIE's
#: yearly spending (``meddol``) 15 % of its persons, its log income's lower side 5.3 %, its
#: doctor visits 3.3 %, its log spending none (design notes). "By the noise": the normal
#: quantile at which a column with nobody there passes on any of the fit's 2 k sides with
#: chance at most HEAVY_FALSE (a union bound), in the count's sds. The fit warns: no release
#: measures what clipping them moves. A medians' side whose count is above this, or the bar of
#: some below, is widened instead (WIDE_RUNGS), and judged by its counts beyond the wider
#: rungs. The rung is the range's end itself for a regressor: a slope feels a value clipped
#: by δ at the end c as c δ (its leverage), however little δ is next to a spread, and a t₃
#: regressor over five rows (3,000 persons, ε = 4) left some 70 persons a side beyond 4
#: median reaches, 40 of them beyond 5, whose clip moved `PooledOLS`'s slope by about 1.2 of
#: its bse, unseen by a count at 5 (its bar 46) and with no warning in 4 of 30 fits (an
#: audit, session 117). Counted at 4, such a side is widened. The outcome's count stays
#: :data:`OUTCOME_SLACK` beyond it (:func:`tail_rungs`).
CLIPPED_RUNG, HEAVY_FALSE = REACH, 0.05
#: The outcome's tail count lies this many median reaches beyond its range's end
#: (:func:`tail_rungs`): the Newton steps read the outcome out to
#: :data:`~dplong.models.pooled.frame.OUTCOME_ROOM` times its range's half-width (its range
#: clips it in the pilot only), and a clip of the outcome moves the coefficients as one of a
#: mean's values (by δ, not by a leverage times δ), so those clipped by less than a median
#: reach pull little. Counted at its end, a heteroscedastic outcome (sd e^{0.6 x}, 3,000-5,000
#: persons, ε = 4) was widened in most fits, its intervals some 7 % wider and noted, with no
#: interval missing before or after.
OUTCOME_SLACK = 1.0
#: Fewer than that but more than the count's noise alone puts there (the normal quantile at
#: which a column with nobody there passes on any of the 2 k sides with chance SOME_FALSE)
#: the range clips **some** persons: a note, the coefficient released. Where they lie far
#: out (a small group, a heavy tail) each pulls by far more than a spread, and the bias is in
#: no interval: a regressor with t₂ within-person noise (3,000 persons, ε = 4) was released
#: with 18 of 30 intervals missing pooled OLS silently, its counts 100-140 persons against
#: √n + 2.2 sds = 116; a normal, 0/1 or t₃ one passes in 0-1 of 30 fits. On a medians'
#: range, the side is widened (WIDE_RUNGS) and its note says so.
SOME_FALSE = 0.01
#: A medians' range whose count beyond CLIPPED_RUNG on a side is above :func:`some_threshold`
#: (or :func:`heavy_threshold`, where lower) holds a long tail there: the side is **widened**,
#: its core in proportion. A second vector counts the persons beyond each of the WIDE_RUNGS
#: median reaches on the widened sides alone (:data:`FAR_SHARE`), and the side ends a median
#: reach inside the first of them whose count is within :func:`far_threshold` (the rest are
#: clipped by less than a median reach, or hide in the noise: the column clips some, and a
#: note says so); where none is, the range clips **many**. A slope on a regressor clipped in
#: its tail is that of another regressor, while a wider range costs noise only: RAND HIE's log
#: income, its lower 5 % spread from 7 down to 0 (1 % at 0, 21 median reaches out),
#: `BetweenOLS` at ε = 1 released its slope in 14 of 30 fits at 0.5 against 0.19 (RMSE 0.25);
#: widened, in nearly every fit (docs/accuracy.md has the tables). The rungs start at 8: a
#: false widening (the count's noise above its bar) of a discrete column at 400 persons and
#: ε = 16, its range from 2.2 to 22 (15 median reaches), withheld every coefficient as
#: unbounded; to 10 (7), the fit released.
WIDE_RUNGS = (FAR_RUNG / 2.0, FAR_RUNG, 2.0 * FAR_RUNG)
#: The share of a medians' route's ρ for the tail counts that counts the persons beyond the
#: WIDE_RUNGS on the widened sides alone, in a vector of its own (its sensitivity the square
#: root of their number of counts, a public fact once the first counts are released); the
#: first rung's counts keep the rest, as precise as before the widening (the plan adds this
#: share beside theirs: :func:`~dplong.privacy.budget.statistics_budget`). With one side of
#: k columns widened, its counts' noise sd is ``2 √(3 / (2 k))`` that of a first-rung count
#: (1.41 for k = 3, 1.10 for 5). Where nothing is widened, the releases of the statistics take
#: it (:meth:`~dplong.privacy.budget.StatisticsBudget.released_rho`).
FAR_SHARE = 0.2
#: The ledger target of the counts beyond WIDE_RUNGS on the widened sides: where a fit's ledger
#: has none, their ρ was not spent.
WIDENED_COUNTS = "persons beyond the widened ranges"
#: The reaches' grid: 8 cells a doubling (9 %; a range is 1.25 to 4 reaches) in [2^-32, 2^32],
#: one a doubling out to 2^-64 and to 2^65 (3.7e19), the cell at 0 below and one unbounded
#: cell above: 579 cells. A reach misses by drawing one of the cells tied beside every
#: person of its side, beyond them (high) or between the midpoint's cell and them (low), at
#: the side's worst utility; the fewer those cells, the rarer the miss. With 16 a doubling up
#: to 2^1023 (3,967 cells) the six reaches of three columns of 1,000 persons at ε = 0.04 a
#: median (a 0/1, a normal and an outcome column, `PooledOLS` at ε = 1) landed beyond 4 times
#: every person in 8 % of draws each; with 8 a doubling in [2^-64, 2^64] and one a doubling
#: down to the smallest normal double (1,985 cells), 3 %, and 13-15 % of such fits were
#: withheld as "range missed"; with these 579, 3-5 % (docs/accuracy.md). A deviation below
#: 2^-32 or above 2^32 is found to a doubling (a range up to twice as wide), one beyond 2^65
#: is clipped there and the far rung's count says so.
REACH_GRID = LogGrid(fine=8, coarse=1, inner=32, outer=64, signed=False, top=64)
#: A range within this of its midpoint on both sides (the reach grid's fine cells end there)
#: is ``narrow``: a column whose persons deviate by less is no data set's, but a rare 0/1
#: column's reach lands there, among the cells tied between the persons at its midpoint and
#: the few at 1 (3 % of 5,000 persons at ε = 2: in 4 fits of 20 its slope was released at 1e61
#: and the like, the slope on the column clipped to a range ending at 1e-62). A narrow range
#: is then the sliver of this width at the midpoint (its own cell where wider), whatever its
#: reaches.
TINY_REACH = 2.0**-REACH_GRID.inner
#: A near rung, in units of the median reach: a median reach has at least half of its side's
#: persons off the midpoint's cell beyond it, and a side whose deviations spread
#: over more than this factor below its median is rare (a lognormal σ = 2: 2 % of it), so where
#: fewer than half of a side's persons off the cell are beyond NEAR_RUNG median reaches the
#: reach missed **high**, beyond (nearly) all of them. It lands there among the cells far
#: beyond every person, tied at the side's worst utility and many, where few persons are on
#: the side (the wage panel's years of schooling at ε = 0.15 a median: 130 of 545 men above
#: the 12 years most have, its upper reach beyond 64 times every man in about 16 % of
#: draws, 8 % while the men at the midpoint counted an eighth below the cells). The range
#: then stretches the column constant in its frame, a direction the released Gram matrix does
#: not determine; the test runs on sides with persons (more than RUNG_SHARE of n off the cell
#: by MISS_SDS of the first rung's noise sds). A side that missed high is no miss where its
#: span is within the other side's, checked: the range is then at most twice as wide (a 0/1
#: column's midpoint a hair above 0, its lower side's persons a hair off it and their reach
#: beyond them all, 10^-15 against the upper side's 1: 54 of 200 such ranges had been flagged,
#: 14 now). A margin of one noise sd below the half flagged fewer valid sides by noise (2 % of
#: draws at 500 persons a side, counts of sd 110, against 0.1 %) but let 13 % of reaches beyond
#: every person through: `BetweenOLS` at 1,000 persons (an exponential outcome, 150 fits)
#: released coefficients of 10^5 from an outcome's range reaching -3.1e7, where the half
#: withholds them, and released no more fits. Measured, not adopted.
NEAR_RUNG = 1.0 / 64.0
#: A midpoint median that lands beyond (nearly) every person leaves one side empty and the
#: other with them all, at about the same deviation (the median reach), so that nobody passes
#: its first rung: where that side holds more than half of n by LONE_SDS sds of the count's
#: noise, and the empty side and the first rung at most :func:`rung_share` and one sd, the
#: midpoint is no median of the persons and the range, sized by a reach the width of the miss,
#: missed (`BetweenOLS` at 1,000 persons, ε = 1, the counts' sd about 110: an outcome's
#: midpoint at 1.5e17, its range [-9.6e17, 4e17] held the data and released the coefficients at
#: 10^15 with intervals as wide; docs/accuracy.md). A median lands at its column's edge (more
#: than half of the persons strictly on one side) only by missing, and a side whose median
#: reach is its deviations' median leaves many beyond 1.25 of it unless they are all alike (a
#: 0/1 column, whose persons at its midpoint's value are in the cell, so at most half are off
#: it). One sd on the empty bars, not two: a midpoint at a quarter of the persons leaves about a
#: quarter of n on its short side and beyond the long side's first rung, which the bars must
#: tell from none (those 1,000 persons, medians at ε = 0.04: with two sds 23 of 300 such
#: ranges were flagged besides the 2 beyond every person, with one 1).
LONE_SDS = 2.0
#: A column is (nearly) constant where the first rung's two counts (the persons off the
#: midpoint's cell above and below it) sum to at most RUNG_SHARE of n a side or CONSTANT_SDS
#: sds of the sum's noise: a constant one passes with chance 0.977. The model may leave such
#: a column out (a ``PanelOLS`` regressor constant within persons, whose movers are on both
#: sides), so a varying one must rarely pass: at the wage panel's size and ε = 4 (a count's sd
#: about 46), one that a fifth of the men vary passes with chance 0.09 (each side at 2 sds:
#: 0.13, and a constant one 0.955; at 3 sds 0.55).
CONSTANT_SDS = 2.0
#: The fit's outcome is (nearly) constant unless its persons off the midpoint's cell are more
#: than RUNG_SHARE of n a side by OUTCOME_CONSTANT_SDS sds of the sum's noise: found so, it
#: withholds every coefficient, while one whose few persons off the midpoint hide in the
#: counts' noise is a regression on them alone, clipped to a range nothing checked (its sides
#: too thin for the near and far tests). 97 % of 2,000 persons at 0, the rest normal: the 60
#: others passed the regressors' bar (the larger of the share and 2 sds) in a third of the
#: fits released at ε = 1 and 4, the outcome's range ([-0.001, 0], [0, 4.8e-7]) clipped
#: them all, and every interval missed the non-private estimate by hundreds to millions of SEs
#: with no warning. An outcome of the wage panel's size varies on both sides by far more (545
#: men, ε = 2: about 540 off against a bar of about 330).
OUTCOME_CONSTANT_SDS = 3.0
#: A side whose persons are too few for the near test (:data:`NEAR_RUNG`) spanning more than
#: FAR_SPAN times the other side, checked, landed beyond its persons: a reach of 3.3e12 above
#: an outcome near -5,000 (sd 10, 2,000 persons, ε = 1; its upper side of some 400 persons
#: just under the test's bar) released slopes of 1e9 with intervals of ±3e11 and no warning,
#: in 13 of 100 fits. A skewed column's long side spans at most some tens of its short one
#: where both hold persons (raw spending: 6.4-10.8, design notes); a side the test does check
#: is excused within the other's span instead. The checked side must span less than half the
#: midpoint's magnitude (a column away from 0): a 0/1 column whose midpoint lands a hair off 0
#: has its persons at 0 that hair away, their side checked and its span the hair, 10^11 times
#: below the side of the persons at 1 (part 10 of `benchmarks/pooled.py`: 4 of 40 fits
#: withheld by the bare ratio).
FAR_SPAN = 2.0**10
#: A range is ``one_sided`` where one side spans at least ONE_SIDED times the other and its
#: persons spread past the first positive rung (:data:`SPREAD_SDS`; a side at one value, a
#: 0/1 column's, has noise alone beyond it): a skewed column, such as raw spending or an
#: outcome most persons have at 0, whose long tail the range clips by an amount no count
#: measures at the counts' noise (issue 29; docs/accuracy.md). Measured on outcomes, 10 fits
#: each: normal, exponential and lognormal person effects (part 10's panels) and RAND HIE's
#: log spending at most 4.4; raw spending 6.4-10.8, an outcome 85-50 % of persons have at 0
#: with a lognormal tail 3,600 or more.
ONE_SIDED = 5.0
#: The side's counts beyond its positive rungs show its persons spread past the first where
#: their sum exceeds this many sds of its noise: a side at one value passes with chance 0.023
#: (a 0/1 outcome's note, a false alarm), a zero-inflated outcome's side of 750 persons, whose
#: counts sum to about 970, with chance 0.9 at the counts' noise of RAND HIE's size (at 3
#: sds, 4 of 16 such fits released without the note, their intervals excluding the truth).
SPREAD_SDS = 2.0
#: The core's reach in units of the median reach (design notes): 2 median reaches of a
#: normal column over 8 rows is about 2.1 sds, where winsorizing keeps 95 % of its variance,
#: and half the range (whose square is a quarter of the range's).
CORE = 2.0
#: From this many persons (or n ε: :func:`reach_rungs`) the ranges' clipping, not the noise, sets
#: the coefficients' error: a regression's slope on winsorized values, or on a clipped outcome,
#: moves by a fixed share of itself (0.5-2 % on normal columns at REACH), its standard error
#: by 1/√n. Measured on pooled OLS of three normal regressors (one constant within persons),
#: T = 2, ε = 1, 20 fits: the constant one's mean error was 0.31, 0.74, 2.5 and 4.7 of its
#: bse at n = 5,000, 20,000, 80,000 and 320,000, its coverage 1, 1, 0.15 and 0 (docs/accuracy.md).
LARGE_N = 20_000
#: A normal column's median reach in its sds (0.58 for a value constant within persons, 0.79
#: for the extremes of two rows): the smaller, so that a range it sizes holds at least that.
NORMAL_REACH = 0.6
#: The share of √n persons a normal side may leave beyond its range at LARGE_N or more, and
#: beyond a rung that ends a range at any n above the counts' noise (:func:`rung_share`): they
#: are clipped by a fraction of an sd each, so their pull on a mean is a small share of its SE.
LARGE_N_SHARE = 0.05
#: The histograms' cell edges (design notes): 0 and ``±2^j``, ``j = -32, ..., 32``; the
#: cells ``(e_{i-1}, e_i]`` and two unbounded ones beyond ``±2^32``, whose outer edge is taken
#: at ``±2^33`` (values beyond are clipped there).
_POWERS = np.exp2(np.arange(-32.0, 33.0))
HISTOGRAM_EDGES = np.concatenate([-_POWERS[::-1], [0.0], _POWERS])
#: The chance that any empty cell of any of the histograms clears the threshold
#: (:func:`histogram_threshold`): a false cell would widen a range, never narrow it, and one
#: far beyond its column's other cleared cells is dropped (:func:`_cleared`): an outcome's
#: range widened a million-fold scales its coefficients' noise as much.
HISTOGRAM_FALSE = 0.01
#: Where no cell of a side's histogram clears the threshold and the other side's does, the
#: side ends at the farthest cell within the other side's end mirrored through 0 that holds
#: ``HISTOGRAM_WITHIN`` of the threshold (:func:`histogram_ranges`): an empty cell's noise
#: passes it with chance about 0.015 (a normal quantile of 2.2), and moves the end no further
#: than the mirrored one.
HISTOGRAM_WITHIN = 0.5
#: The histogram route's range in half-widths of its core around the core's centre: a normal
#: column over 8 rows whose core ends at 2 or 4 (1.4-2.8 sds) is clipped at 2-4 sds.
HISTOGRAM_REACH = 1.5
#: The histogram route's core in the same units: the extremes' cells bound the persons'
#: largest values, and most rows lie well inside them (a normal column over 8 rows whose
#: cells end at 4: its core ends at 2.8, 2 sds); a 0/1 column's core is inside [0, 1], which
#: its values keep in the frame (clipped to the core, they map to -1 and 1 all the same).
HISTOGRAM_CORE = 1.0 / math.sqrt(2.0)
#: The share of n persons beyond an end of a histogram route's range (by MISS_SDS sds of the
#: count) at which it missed: no cell of that side's histogram held its far persons beyond the
#: threshold (a column whose minima straddle 0 spreads them over cells of both signs, at most
#: 18 % in one for an outcome of mean 1.25 and person sd 1.2), the side ended inside its bulk,
#: and a range that clips most of a side's persons is no range of the column. Fewer are
#: ``heavy``, as in the medians' route: a note, a regressor's coefficient withheld. Half, not
#: RUNG_SHARE: the wage panel's log wage within men at ε = 2 had ranges ending at -0.75 or
#: -0.875 in 4 fits of 100, below which 15-19 % of the 545 men reach, and its slopes'
#: intervals held the truth; `RandomEffects` at 1,000 persons (that outcome, a 0/1 and a normal
#: regressor, ε = 1) released 36 fits of 100 at a quarter and 57 at a half, their intervals
#: holding the truth in 0.98-1.00 (one miss, with the note).
HISTOGRAM_MISS = 0.5
#: Where the histograms guard the medians (at n ε where a thin side's reach may miss,
#: :data:`~dplong.privacy.budget.gaussian.SIDE_MISS`), a column's range found by the medians
#: spanning more than this many times the histograms' reached beyond the persons: the
#: histograms' range is within a doubling and a half of their extremes, a uniform or normal
#: column's medians' range inside it, and a reach beyond every person of a thin side lands
#: some hundreds to 10^20 times beyond them (schooling at 545 men, ε 0.086 a median: upper
#: reaches of 4,700 to 10^8 against persons at most 4 years above the 12 most have, where the
#: counts' noise, sd 65 persons, hid the 130 men of that side from the near rung's test).
GUARD_SPAN = 8.0


@dataclass(frozen=True)
class PrivateRanges:
    """The released ranges (k x 2: low, high), their cores (k x 2, design notes), what
    they were made of (the midpoints, the upper and lower reaches from them (2 x k) and the released
    counts (2 x rungs or cells x k: the rungs', then :data:`FAR_RUNG`'s and :data:`NEAR_RUNG`'s, or
    the histograms' of :func:`histogram_ranges` with the cores' centres as midpoints)), the columns
    whose range ``missed`` its data (k: from the counts beyond the far and near rungs, or beyond
    a histogram range's ends), those
    whose range is ``narrow`` (k: within :data:`TINY_REACH` of the midpoint on both sides, not
    its cell, or of a column found ``constant`` by the medians' counts: a sliver of a column
    that varies, whose values it scales down), the columns
    found (nearly) ``constant`` (k: no more persons off the midpoint's cell than the first rung's
    counts can tell from none; the histograms: fewer than their threshold off the cell ending at 0),
    the released counts of the persons ``beyond`` :data:`CLIPPED_RUNG` median reaches, or beyond
    a histogram range's ends (2 x k, upper then lower; NaN where nothing counted them), the
    ``heavy`` tails the range clips (k: the larger side's count where it is above
    :func:`heavy_threshold`, 0 elsewhere and where the range missed; of a widened column, its
    largest count beyond the last of :data:`WIDE_RUNGS` where no rung's is within
    :func:`far_threshold`), the ranges that clip ``some`` (k: that count where it is above
    :func:`some_threshold` only; of a widened column, its count at the first rung), the
    ``one_sided`` ranges (k: :data:`ONE_SIDED`; never from the histograms), the ranges
    ``widened`` for a long tail (k) and the released counts beyond the WIDE_RUNGS on their
    widened sides (``far``: 2 x rungs x k, NaN elsewhere), all DP outputs; the count beyond
    an end up to which a group there goes ``unseen`` (:func:`unseen_threshold`, public; NaN
    where nothing counted them), and the ledger entries of the stage."""

    ranges: NDArray[np.float64]
    core: NDArray[np.float64]
    midpoint: NDArray[np.float64]
    reaches: NDArray[np.float64]
    counts: NDArray[np.float64]
    missed: NDArray[np.bool_]
    narrow: NDArray[np.bool_]
    constant: NDArray[np.bool_]
    beyond: NDArray[np.float64]
    heavy: NDArray[np.float64]
    some: NDArray[np.float64]
    one_sided: NDArray[np.bool_]
    widened: NDArray[np.bool_]
    far: NDArray[np.float64]
    unseen: float
    entries: tuple[LedgerEntry, ...]


def private_ranges(
    lows: NDArray[np.float64],
    highs: NDArray[np.float64],
    epsilon: float,
    rho: float,
    rng: np.random.Generator,
    *,
    names: tuple[str, ...],
    tail_rho: float = 0.0,
    far_rho: float = 0.0,
    outcome: bool = False,
    fit_epsilon: float = 0.0,
) -> PrivateRanges:
    """The range of each of the k columns from the persons' minima ``lows`` and maxima
    ``highs`` (n x k, finite, or NaN for a person without a value, who counts nowhere; n is
    the public number of persons), with three ε-DP medians per column, one ρ-zCDP vector of
    counts at the rungs and, where ``tail_rho`` is positive, one ``tail_rho``-zCDP vector of
    the counts beyond :data:`CLIPPED_RUNG` median reaches, which widen the ranges of long
    tails where ``far_rho`` is positive too, and one ``far_rho``-zCDP vector on the widened
    sides, which tells the ``heavy`` ones (:func:`_widened`; design notes). With
    ``outcome`` the last column is the fit's outcome, found (nearly) constant by
    :data:`OUTCOME_CONSTANT_SDS`. The reach and the core where no rung holds grow with n
    and the fit's total ``fit_epsilon`` (:func:`reach_rungs`; 0: with n alone).

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
    [[18.0, 62.0], [-0.0, 1.0]]
    >>> [e.target for e in found.entries][:3]
    ['age: midpoint', 'female: midpoint', 'age: upper reach']
    """
    n, k = lows.shape
    midpoint, deviations, reaches = _medians(lows, highs, epsilon, rng)
    cell = GRID.half_width_at(midpoint)
    counts = _beyond(deviations, reaches, (*RUNGS, FAR_RUNG, NEAR_RUNG), rho, rng)
    counted = counts.total.reshape(2, len(RUNGS) + 2, k)
    held = counted[:, : len(RUNGS)] <= rung_share(n, float(counts.sd[0]))
    # a (nearly) constant column: the first rung's counts cannot tell the persons off the
    # midpoint's cell from none (their sum within CONSTANT_SDS of its noise's sds of 0, or
    # RUNG_SHARE of n a side)
    off = counted[:, 0].sum(axis=0)
    sd = math.sqrt(2.0) * float(counts.sd[0])
    constant = off <= max(2.0 * RUNG_SHARE * n, CONSTANT_SDS * sd)
    if outcome:
        constant[-1] = off[-1] <= 2.0 * RUNG_SHARE * n + OUTCOME_CONSTANT_SDS * sd
    # few persons off the midpoint's cell on both sides: the later rungs size the column's
    # ranges as before; the cell alone is for a side nobody is on
    held[:, 0] &= ~held[:, 0].all(axis=0)
    far, near = counted[:, len(RUNGS)], counted[:, len(RUNGS) + 1]
    noise, off_cell = float(counts.sd[0]), counted[:, 0]
    # FAR_RUNG: a reach that missed low, with more than RUNG_SHARE of n beyond the rung, or
    # most of a side's persons off the midpoint's cell (tested once the spans are known)
    missed = np.any(far > RUNG_SHARE * n + MISS_SDS * noise, axis=0)
    below = np.any((far > MISS_SDS * noise) & (far > off_cell / 2.0), axis=0)
    # NEAR_RUNG: a reach beyond (nearly) every person of a side that has persons (tested once
    # the spans are known)
    populated = off_cell > RUNG_SHARE * n + MISS_SDS * noise
    high = populated & (near < off_cell / 2.0)
    # a midpoint beyond (nearly) every person (LONE_SDS): one side empty, the other holding
    # more than half of n, none of them beyond its first rung
    empty = rung_share(n, noise) + noise
    lone = (off_cell > n / 2.0 + LONE_SDS * noise) & (counted[:, 1] <= empty)
    missed |= np.any(lone & (off_cell[::-1] <= empty), axis=0)
    first = np.where(held.any(axis=1), np.argmax(held, axis=1), len(RUNGS))
    reach_at, core_at = reach_rungs(n, fit_epsilon)
    factor = np.append(RUNGS, reach_at)[first]  # (side, column)
    spans = factor * np.asarray(reaches)  # (side, column)
    other = spans[::-1]  # each side's opposite
    upper, lower = np.maximum(spans, cell)
    # a reach that missed high within the span of the other side's, checked, widens the range
    # at most twofold (NEAR_RUNG)
    checked = populated & ~high
    excused = checked[::-1] & (other >= spans)
    missed |= np.any(high & ~excused, axis=0)
    # a side too thin for that test spanning FAR_SPAN times the other, checked and within half
    # the midpoint's magnitude (a column away from 0: not a 0/1 column's persons at 0, whose
    # deviation is the hair its midpoint lies off 0), missed high
    dwarfs = (spans > FAR_SPAN * other) & (other < np.abs(midpoint) / 2.0)
    missed |= np.any(~populated & checked[::-1] & dwarfs, axis=0)
    # a range that is the midpoint's own cell on both sides sees a constant column: where the
    # column is not one (a rare 0/1 column: its median reach lands at the midpoint, and the
    # far count's noise can hide its few persons at n of some hundreds) it clips them all
    missed |= np.all(spans <= cell, axis=0)
    # one within TINY_REACH of it on both sides clips them to a sliver: their column scaled
    # down by its width (a 0/1 column's slope scaled up by as much), or another column
    sliver = np.all(spans <= np.maximum(cell, TINY_REACH), axis=0)
    # so does one the counts find (nearly) constant: its median reaches land at random among
    # the cells tied between its persons at the midpoint and the few off it (a rare 0/1
    # column's: 3 % of 5,000 persons at ε = 2, a range ending at 9.5e-5 whose far count its
    # noise hid, and a slope of 5,416 whose interval excluded the truth, in 1 fit of 20)
    sliver |= constant
    missed |= below & ~sliver
    narrow = sliver & ~missed
    # a skewed column: one side's span ONE_SIDED times the other's, its persons spread past
    # the first positive rung: the counts beyond the positive rungs sum to more than
    # SPREAD_SDS sds of their noise (a side at one value has noise alone there, and may end
    # past that rung by it; post-processing of the released reaches and counts)
    rungs = counted[:, 1 : len(RUNGS)].sum(axis=1)
    past = rungs > SPREAD_SDS * noise * math.sqrt(len(RUNGS) - 1)
    one_sided = np.any((spans >= ONE_SIDED * other) & past, axis=0) & ~missed & ~narrow
    # a narrow column's range is a sliver at its midpoint, whatever its reaches (those of a
    # column found constant land anywhere among the cells tied beside its few persons off the
    # midpoint: a rare 0/1 column's at 10^9 or 10^-9): every value off the midpoint's cell is
    # clipped to an end, so the column enters the frame as its deviations' signs (a 0/1
    # column at 0: itself), its own slope withheld and the others' design whole; a range far
    # out would leave it constant in the frame, a direction no released X'X determines
    sliver_span = np.maximum(cell, TINY_REACH)
    upper, lower = (np.where(narrow, sliver_span, side) for side in (upper, lower))
    core_upper, core_lower = (
        np.clip(core_at * r, cell, reach) for r, reach in zip(reaches, (upper, lower), strict=True)
    )
    targets = tuple(
        f"{name}: {what}" for what in ("midpoint", "upper reach", "lower reach") for name in names
    )
    entries = (
        *median_entries("bounds", targets, epsilon),
        gaussian_vector_entry("bounds", "persons beyond the reaches' rungs", rho, counts),
    )
    beyond, heavy, some = np.full((2, k), np.nan), np.zeros(k), np.zeros(k)
    widened, far = np.zeros(k, dtype=bool), np.full((2, len(WIDE_RUNGS), k), np.nan)
    ranges = np.column_stack([midpoint - lower, midpoint + upper])
    core = np.column_stack([midpoint - core_lower, midpoint + core_upper])
    unseen = math.nan
    if tail_rho > 0.0:  # the persons every range clips (the outcome's: by a median reach)
        rung = tail_rungs(n, k, outcome)
        beyond, sd, entry = _counted_beyond(
            deviations, [r * rung for r in reaches], 1.0, tail_rho, rng
        )
        unseen = unseen_threshold(n, k, sd)
        ranges, core, widened, heavy, some, far, wide = _widened(
            (ranges, core), midpoint, (deviations, np.array(reaches)), (beyond, sd), missed,
            ~narrow, far_rho, rng, fit_epsilon,
        )  # fmt: skip
        entries += (entry, *wide)
    return PrivateRanges(
        ranges,
        core,
        midpoint,
        np.array(reaches),
        counted,
        missed,
        narrow,
        constant,
        beyond,
        heavy,
        some,
        one_sided,
        widened,
        far,
        unseen,
        entries,
    )


def _beyond(
    deviations: list[NDArray[np.float64]],
    reaches: list[NDArray[np.float64]],
    rungs: tuple[float, ...],
    rho: float,
    rng: np.random.Generator,
) -> WeightedRelease:
    """One ρ-zCDP vector of the counts of persons whose upper and lower ``deviations`` (n x k
    each) are beyond each of the ``rungs`` times the side's median reach, (side, rung, column)
    flattened: replacing a person moves each count by at most one, so the L2 sensitivity is
    the square root of their number."""
    n = deviations[0].shape[0]
    at = np.asarray(rungs)[:, None]
    beyond = np.stack(
        [d[:, None, :] > at * r for d, r in zip(deviations, reaches, strict=True)], axis=1
    ).reshape(n, -1)
    bound = math.sqrt(beyond.shape[1])
    return release_vector_sum(beyond.astype(np.float64), bound, bound, rho, rng)


def _counted_beyond(
    deviations: list[NDArray[np.float64]],
    reaches: list[NDArray[np.float64]],
    rung: float,
    rho: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], float, LedgerEntry]:
    """The persons every range clips: one ρ-zCDP vector (:func:`_beyond`) of those beyond
    ``rung`` times each side's reach (2 x k, upper then lower), its noise sd and its ledger
    entry."""
    tails = _beyond(deviations, reaches, (rung,), rho, rng)
    entry = gaussian_vector_entry("bounds", "persons beyond the ranges", rho, tails)
    return tails.total.reshape(2, -1), float(tails.sd[0]), entry


def _histogram_missed(beyond: NDArray[np.float64], sd: float, n: int) -> NDArray[np.bool_]:
    """The columns whose histograms' range missed: a side's count of the persons ``beyond``
    it (2 x k, noise ``sd``) above :data:`HISTOGRAM_MISS` of n by :data:`MISS_SDS` sds."""
    return np.asarray(np.any(beyond > HISTOGRAM_MISS * n + MISS_SDS * sd, axis=0))


class _Widening(NamedTuple):
    """The ranges and cores after :func:`_widened` (k x 2 each), the columns widened, their
    ``heavy`` and ``some`` counts, the released counts beyond the :data:`WIDE_RUNGS` (2 x rungs x
    k, NaN where not counted) and the far counts' ledger entries (none where nothing was
    widened)."""

    ranges: NDArray[np.float64]
    core: NDArray[np.float64]
    widened: NDArray[np.bool_]
    heavy: NDArray[np.float64]
    some: NDArray[np.float64]
    far: NDArray[np.float64]
    entries: tuple[LedgerEntry, ...]


def _widened(
    found: tuple[NDArray[np.float64], NDArray[np.float64]],
    midpoint: NDArray[np.float64],
    sides: tuple[list[NDArray[np.float64]], NDArray[np.float64]],
    tails: tuple[NDArray[np.float64], float],
    missed: NDArray[np.bool_],
    eligible: NDArray[np.bool_],
    far_rho: float,
    rng: np.random.Generator,
    fit_epsilon: float,
) -> _Widening:
    """Every ``eligible`` side (a medians' range that neither missed nor is narrow) of the ranges
    and cores ``found`` (k x 2 each) whose released count of the persons beyond the tail count's
    rung (``tails``: the counts, 2 x k, and their noise sd) is above the bar of some or of many,
    the lower, widened; and the columns' ``heavy`` and ``some`` counts (:func:`_heavy`). One
    ``far_rho``-zCDP vector (none where nothing is widened) counts the persons whose deviation
    (``sides``: the upper and lower deviations, n x k each, and the median reaches, 2 x k) is
    beyond each of the :data:`WIDE_RUNGS` median reaches on the widened sides alone (replacing a
    person moves each count by at most one: L2 sensitivity the square root of their number); a
    widened side ends a median reach inside the first rung whose count is within
    :func:`far_threshold` (its core in proportion, as :func:`reach_rungs` at ``fit_epsilon``),
    and a column none of whose widened sides does clips many (its largest count beyond the last
    rung), else some (its count at the tail count's rung: what lies beyond can hide in the
    noise). Post-processing of released numbers, but the far vector."""
    ranges, core = (bounds.copy() for bounds in found)
    (deviations, reaches), (counted, sd) = sides, tails
    n, k = deviations[0].shape
    widen = eligible & ~missed & (counted > unseen_threshold(n, k, sd)) & (far_rho > 0.0)
    # a side not widened is judged at the tail count's rung as ever (-inf: a widened one)
    heavy, some = _heavy(np.where(widen, -np.inf, counted), sd, missed, n)
    far = np.full((2, len(WIDE_RUNGS), k), np.nan)
    if not widen.any():
        return _Widening(ranges, core, np.zeros(k, dtype=bool), heavy, some, far, ())
    side, column = np.nonzero(widen)
    rungs = np.asarray(WIDE_RUNGS)[:, None]
    beyond = np.concatenate(
        [
            deviations[s][:, [c]] > rungs.T * reaches[s, c]
            for s, c in zip(side, column, strict=True)
        ],
        axis=1,
    )  # n x (sides x rungs)
    bound = math.sqrt(beyond.shape[1])
    counts = release_vector_sum(beyond.astype(np.float64), bound, bound, far_rho, rng)
    far[side, :, column] = counts.total.reshape(side.size, len(WIDE_RUNGS))
    held = far[side, :, column] <= far_threshold(side.size, float(counts.sd[0]))
    # each side a median reach inside its first rung held (the last's where none is: many)
    at = np.asarray(WIDE_RUNGS)[np.where(held.any(axis=1), np.argmax(held, axis=1), -1)] - 1.0
    reach_at, core_at = reach_rungs(n, fit_epsilon)
    sign = np.where(side == 0, 1.0, -1.0)
    wide = midpoint[column] + sign * at * reaches[side, column]
    end = ranges[column, 1 - side]
    ranges[column, 1 - side] = sign * np.maximum(sign * end, sign * wide)
    core[column, 1 - side] = (
        midpoint[column] + (ranges[column, 1 - side] - midpoint[column]) * core_at / reach_at
    )
    widened = np.asarray(widen.any(axis=0), dtype=bool)
    # the largest count beyond the last rung of a side no rung holds (above far_threshold,
    # which is a person at least: positive)
    lost = np.zeros(k)
    np.maximum.at(lost, column[~held.any(axis=1)], far[side, -1, column][~held.any(axis=1)])
    heavy = np.where(lost > 0.0, np.maximum(heavy, lost), heavy)
    tail = np.where(widen, counted, 0.0).max(axis=0)
    some = np.where(heavy > 0.0, 0.0, np.where(widened, np.maximum(some, tail), some))
    entry = gaussian_vector_entry("bounds", WIDENED_COUNTS, far_rho, counts)
    return _Widening(ranges, core, widened, heavy, some, far, (entry,))


def _heavy(
    beyond: NDArray[np.float64], sd: float, missed: NDArray[np.bool_], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The columns' ``heavy`` counts: the larger side's count of the persons ``beyond`` (2 x k,
    noise ``sd``; -inf: a side judged elsewhere) where it is above :func:`heavy_threshold` and
    the range did not miss, else 0; and their ``some`` counts: where it is above
    :func:`some_threshold` only, else 0."""
    k = beyond.shape[1]
    larger = np.where(missed, 0.0, beyond.max(axis=0))
    heavy = larger > heavy_threshold(n, k, np.array([sd]))
    some = ~heavy & (larger > some_threshold(k, sd))
    return np.where(heavy, larger, 0.0), np.where(some, larger, 0.0)


def _medians(
    lows: NDArray[np.float64],
    highs: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    """Steps 1-3 of the design notes: the midpoints, every person's upper and lower
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
    """One side's deviations from the released midpoint (0 within its cell) and the median
    of those off the cell (step 2), whose candidates leave out the cells no deviation can be
    in."""
    # a person within the midpoint's cell (its width: the cell's ends are at a half-width of
    # its centre up to rounding) is at the midpoint: 0, so no deviation lies in (0, width],
    # and the cells there would only tie with the one at 0 (for a column far from 0, most of
    # the grid's cells; a column of integers with a mass at its midpoint, such as years of
    # schooling, saw its reach land among them)
    width = 2.0 * GRID.half_width_at(midpoint)
    deviation = np.where(deviation <= width, 0.0, deviation)  # NaN: no statistic, kept
    # the persons at the midpoint count nowhere in the median (no statistic there): it is that
    # of the persons off the cell on this side, however few (design notes); the first rung's
    # count says how many they are
    off = np.where(deviation > 0.0, deviation, np.nan)
    eps = np.full(deviation.shape[1], epsilon)
    return deviation, private_median(off, REACH_GRID, eps, rng, gaps=width)


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


def guard_swaps(found: PrivateRanges, guard: PrivateRanges) -> NDArray[np.bool_]:
    """The columns whose range found by the medians (``found``) gives way to the one the
    guarding histograms found (``guard``; design notes): the histograms do not find the column
    (nearly) constant, and the medians' range missed its data, is a sliver (where the
    histograms resolve the column: beyond their innermost cell), lies outside the histograms'
    core (unless theirs spans more than :data:`GUARD_SPAN` times its range: a cell of noise far
    out) or spans more than :data:`GUARD_SPAN` times their range. Post-processing of released
    numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.ranges import guard_swaps, histogram_ranges, private_ranges
    >>> educ = np.random.default_rng(1).choice([10.0, 11, 12, 12, 12, 13, 14, 16], (545, 1))
    >>> found = private_ranges(educ, educ, 0.086, 0.0057, np.random.default_rng(0),
    ...                        names=("educ",))
    >>> guard = histogram_ranges(educ, educ, 0.009, np.random.default_rng(0), names=("educ",))
    >>> found.ranges.round(1).tolist(), found.missed.tolist(), guard.ranges.tolist()
    ([[-503.8, 15.1]], [True], [[6.0, 18.0]])
    >>> guard_swaps(found, guard).tolist()
    [True]
    """
    width = found.ranges[:, 1] - found.ranges[:, 0]
    guard_width = guard.ranges[:, 1] - guard.ranges[:, 0]
    outside = (found.ranges[:, 0] > guard.core[:, 1]) | (found.ranges[:, 1] < guard.core[:, 0])
    far = width > GUARD_SPAN * guard_width
    # the histograms' own failures: a cell of noise beyond every person (its false-cell
    # chance, HISTOGRAM_FALSE) puts their core far off a good range; and values within their
    # innermost cell (2^-32) are below their resolution, where they cannot tell a sliver
    wide = guard_width > GUARD_SPAN * width
    resolved = np.abs(guard.ranges).max(axis=1) > HISTOGRAM_REACH * _POWERS[0]
    swap = found.missed | (found.narrow & resolved) | (outside & ~wide) | far
    return np.asarray(swap & ~guard.constant)


def _cleared_beyond(found: PrivateRanges, guard: PrivateRanges, rho: float) -> NDArray[np.bool_]:
    """The columns whose range found by the medians (``found``) a cleared cell of the guarding
    histograms (``guard``, released at ρ ``rho``; :func:`_cleared`) lies beyond, on a side, by
    more than :data:`FAR_SPAN` times that side's span from the midpoint: a group of persons at
    least the threshold strong that far out, which the medians' count at :data:`FAR_RUNG`
    missed in its noise. A 0/1 column's upper reach landing among the cells tied near 0 (7e-6,
    not a sliver by :data:`TINY_REACH`) clipped its persons at 1 to there, and its slope was
    scaled up as much (5,433 for a truth of 1, `RandomEffects` at n = 500, ε = 4).
    Post-processing of released numbers."""
    k = found.ranges.shape[0]
    cells = HISTOGRAM_EDGES.size + 1
    shown = _cleared(guard.counts.transpose(0, 2, 1).reshape(2 * k, cells), rho)
    inner = np.concatenate([[-np.inf], HISTOGRAM_EDGES])  # each cell's inner edge
    spans = np.maximum(
        [found.ranges[:, 1] - found.midpoint, found.midpoint - found.ranges[:, 0]], 0.0
    )
    # side 0 holds the persons' largest values, side 1 their negated smallest
    ends = np.array([found.ranges[:, 1], -found.ranges[:, 0]]) + FAR_SPAN * spans
    far = shown.reshape(2, k, cells) & (inner[None, None, :] > ends[:, :, None])
    return np.asarray(far.any(axis=(0, 2)), dtype=bool)


def guarded_ranges(
    lows: NDArray[np.float64],
    highs: NDArray[np.float64],
    epsilon: float,
    rho: float,
    guard_rho: float,
    rng: np.random.Generator,
    *,
    names: tuple[str, ...],
    tail_rho: float,
    far_rho: float,
    outcome: bool = False,
    fit_epsilon: float = 0.0,
) -> tuple[PrivateRanges, NDArray[np.bool_]]:
    """:func:`private_ranges` guarded by :func:`histogram_ranges` at ``guard_rho`` (design
    notes; none at 0), and the columns whose range the histograms gave (:func:`guard_swaps`). One
    ``tail_rho``-zCDP vector then counts the persons each range taken clips (L2 sensitivity
    ``√(2 k)``, as on either route): beyond :data:`CLIPPED_RUNG` median reaches of a medians'
    range, which is then widened as on their route (``far_rho``: :func:`_widened`), beyond the
    ends of a histograms' range, which then missed (:data:`HISTOGRAM_MISS`) or is ``heavy`` as
    on their route. The ``counts`` are the medians' rungs'; the reaches grow with n and the
    fit's total ``fit_epsilon`` (:func:`reach_rungs`).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.ranges import guarded_ranges
    >>> rng = np.random.default_rng(2)
    >>> educ = rng.choice([10.0, 11, 12, 12, 12, 13, 14, 16], (545, 1))
    >>> found, swap = guarded_ranges(educ, educ, 0.086, 0.0057, 0.009, rng, names=("educ",),
    ...                              tail_rho=0.00128, far_rho=0.00032)
    >>> found.ranges.tolist(), swap.tolist(), bool(found.missed[0] or found.heavy[0])
    ([[6.0, 18.0]], [True], False)
    >>> [e.target for e in found.entries][-2:]
    ["persons' extremes by dyadic cell", 'persons beyond the ranges']
    """
    n, k = lows.shape
    if guard_rho == 0.0:
        found = private_ranges(
            lows, highs, epsilon, rho, rng, names=names, tail_rho=tail_rho, far_rho=far_rho,
            outcome=outcome, fit_epsilon=fit_epsilon,
        )  # fmt: skip
        return found, np.zeros(k, dtype=bool)
    found = private_ranges(
        lows, highs, epsilon, rho, rng, names=names, outcome=outcome, fit_epsilon=fit_epsilon
    )
    guard = histogram_ranges(lows, highs, guard_rho, rng, names=names)
    swap = guard_swaps(found, guard) | (_cleared_beyond(found, guard, guard_rho) & ~guard.constant)
    centre = np.where(swap, guard.midpoint, found.midpoint)
    # a medians' range clips beyond CLIPPED_RUNG median reaches (the outcome's OUTCOME_SLACK
    # further), a histograms' beyond its ends
    reaches = np.where(
        swap,
        [guard.ranges[:, 1] - centre, centre - guard.ranges[:, 0]],
        tail_rungs(n, k, outcome) * found.reaches,
    )
    deviations = [highs - centre, centre - lows]
    beyond, sd, entry = _counted_beyond(deviations, list(reaches), 1.0, tail_rho, rng)
    missed = np.where(swap, _histogram_missed(beyond, sd, n), found.missed)
    widening = _widened(
        (
            np.where(swap[:, None], guard.ranges, found.ranges),
            np.where(swap[:, None], guard.core, found.core),
        ),
        centre,
        (deviations, found.reaches),
        (beyond, sd),
        missed,
        ~found.narrow & ~swap,
        far_rho,
        rng,
        fit_epsilon,
    )
    guarded = PrivateRanges(
        widening.ranges,
        widening.core,
        centre,
        np.where(swap, guard.reaches, found.reaches),
        found.counts,
        missed,
        found.narrow & ~swap,
        np.where(swap, guard.constant, found.constant),
        beyond,
        widening.heavy,
        widening.some,
        found.one_sided & ~swap,
        widening.widened,
        widening.far,
        unseen_threshold(n, k, sd),
        (*found.entries, *guard.entries, entry, *widening.entries),
    )
    return guarded, swap


def reach_miss(persons: float, epsilon: float) -> float:
    """A public bound on the chance that a side's median reach at ε lands beside all of the
    side's ``persons`` (:func:`~dplong.privacy.quantile.miss_probability` on
    :data:`REACH_GRID`): the cells beyond every person tie there, a few hundred of them, and
    outweigh the median's where the side holds few (a range that misses withholds the fit).

    Examples
    --------
    >>> from dplong.privacy.ranges import reach_miss
    >>> round(reach_miss(136, 0.0856), 2), round(reach_miss(1478, 0.0271), 2)
    (0.97, 0.03)
    """
    return miss_probability(len(REACH_GRID), epsilon, float(persons))


def reach_rungs(n: int, fit_epsilon: float = 0.0) -> tuple[float, float]:
    """The range's reach where no rung holds and the core's, in median reaches, for n persons
    and a fit of total ``fit_epsilon`` (public; 0: by n alone): :data:`REACH` and :data:`CORE`;
    from ``n max(ε, 1) >=`` :data:`LARGE_N`, where the clipping rather than the noise sets the
    error (a strong slope's regressor clipped at REACH moved it by about an SE at 5,000 persons
    and ε = 4-8), a reach beyond which a normal side leaves :data:`LARGE_N_SHARE` of √n
    persons (in :data:`NORMAL_REACH` units). From LARGE_N persons the core is as wide (the
    Gram matrix's frame then holds the rows the Newton steps read, whose pilot is then their
    own fixed point); below, the core is half the reach at ``n ε = LARGE_N`` and grows as
    ``√(n ε)`` up to the reach (at least :data:`CORE`): the pilot's noise next to X'X grows as
    ``core² / (n ε)``, kept where half the reach puts it at LARGE_N (the whole reach there
    doubled the intervals at 5,000 persons and ε = 4; a core left at CORE beside a wider reach
    overshoots more than the steps' secant corrects, docs/design/ranges.md). A regressor's
    tail count is at n's reach (:data:`CLIPPED_RUNG` below LARGE_N persons, the outcome's
    beyond it: :func:`tail_rungs`).

    Examples
    --------
    >>> from dplong.privacy.ranges import reach_rungs
    >>> reach_rungs(5912), reach_rungs(5912, 1.0)
    ((4.0, 2.0), (4.0, 2.0))
    >>> [round(r, 2) for r in (*reach_rungs(5912, 4.0), *reach_rungs(5000, 16.0))]
    [5.36, 2.91, 5.32, 5.32]
    >>> [round(r, 2) for r in reach_rungs(2_000_000)]
    [6.62, 6.62]
    """
    if n * max(fit_epsilon, 1.0) < LARGE_N:
        return REACH, CORE
    tail = LARGE_N_SHARE / math.sqrt(n)  # of n, on one side
    reach = max(REACH, NormalDist().inv_cdf(1.0 - tail) / NORMAL_REACH)
    if n >= LARGE_N:
        return reach, reach
    # the pilot's relative noise grows as core² / (n ε): kept at half the reach's at LARGE_N
    return reach, min(reach, max(CORE, reach / 2.0 * math.sqrt(n * fit_epsilon / LARGE_N)))


def tail_rungs(n: int, k: int, outcome: bool = False) -> NDArray[np.float64]:
    """The rung of each of the k columns' tail count (the persons beyond it on a side are
    counted, :func:`private_ranges`), in median reaches, for n persons (public): the range's
    end for a regressor at n alone (:func:`reach_rungs`: a slope feels a clip at the end by
    its leverage however small the clip), :data:`OUTCOME_SLACK` further for the last column
    where it is the fit's ``outcome`` (read beyond its range by the Newton steps, and clipped
    as a mean's values). One count a side and column whatever the rung: the vector's
    sensitivity stays ``√(2 k)``. Where a large ε alone takes the range's end further
    (``n max(ε, 1) >=`` :data:`LARGE_N` persons below it), the count stays at n's rung,
    inside the range: a tail that puts many persons there widens it further
    (:func:`_widened`). Counted at the wider
    end, a t₅ regressor's tail was too thin to widen it, and a strong slope on it was clipped
    by +3.6 % (noise off) where the count at four median reaches widens it to 7 (+1.2 %): an
    audit's 68 cells of 60 fits missed 706 times (148 unwarned) so, 120 (16) with the count
    at n's rung, 331 (43) before the wider reach (docs/accuracy.md).

    Examples
    --------
    >>> from dplong.privacy.ranges import tail_rungs
    >>> tail_rungs(3000, 3, outcome=True).tolist()
    [4.0, 4.0, 5.0]
    """
    rung = np.full(k, reach_rungs(n)[0])
    if outcome:
        rung[-1] += OUTCOME_SLACK
    return rung


def rung_share(n: int, sd: float) -> float:
    """How many persons a rung may leave beyond it and still end a side's range there, for n
    persons (public) and the rungs' count noise ``sd``: the large-n reach's share
    (:data:`LARGE_N_SHARE` of √n) above :data:`MISS_SDS` sds of the count's noise, so that a
    rung nobody passes (a uniform or 0/1 column's) still holds, and one that a normal side's
    tail passes does not where the noise would not hide what it clips; at most
    :data:`RUNG_SHARE` of n. Clipping m persons by about a spread each moves a coefficient by
    about m / √n of its sampling SEs: over five rows a person, 4.9 % of the persons lay beyond
    2 median reaches, and pooled OLS on the clipped rows sat 2.9 bses off at 100,000 persons;
    over 2-12 rows, 9.6 % of 19,000 persons and 8.4 bses at ε = 4, half the intervals missing
    pooled OLS unwarned where RUNG_SHARE of n held below :data:`LARGE_N` (docs/accuracy.md).

    Examples
    --------
    >>> from dplong.privacy.ranges import rung_share
    >>> rung_share(545, 40.0)
    27.25
    >>> round(rung_share(5912, 40.0), 1), round(rung_share(100_000, 35.0))
    (123.8, 121)
    """
    return min(RUNG_SHARE * n, LARGE_N_SHARE * math.sqrt(n) + MISS_SDS * sd)


def heavy_threshold(n: int, k: int, sd: NDArray[np.float64]) -> NDArray[np.float64]:
    """The released count of persons beyond :data:`CLIPPED_RUNG` median reaches on a side of
    one of k columns that shows the range clips many: √n plus the normal quantile of ``1 -``
    :data:`HEAVY_FALSE` ``/ (2 k)`` times the count's noise ``sd`` (a histograms' range; a
    medians' side above it, or the bar of some below it, is widened: :func:`_widened`).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.ranges import heavy_threshold
    >>> heavy_threshold(5912, 3, np.array([48.0])).round()   # RAND HIE at epsilon = 1
    array([192.])
    """
    z = NormalDist().inv_cdf(1.0 - HEAVY_FALSE / (2 * k))
    return np.asarray(math.sqrt(n) + z * sd, dtype=np.float64)


def unseen_threshold(n: int, k: int, sd: float) -> float:
    """The released count of persons beyond an end of a range (beyond :data:`CLIPPED_RUNG`
    median reaches, or a histograms' range's end) on a side of one of k columns at and below
    which no note, widening or withholding follows: the lower of :func:`some_threshold` and
    :func:`heavy_threshold`. A group of about that many persons far out is clipped unseen
    (no released count tells it from none), and the fit's assumptions say so.

    Examples
    --------
    >>> from dplong.privacy.ranges import unseen_threshold
    >>> round(unseen_threshold(3000, 3, 27.4))   # 3,000 persons, two regressors, ε = 2
    80
    """
    return min(some_threshold(k, sd), float(heavy_threshold(n, k, np.array([sd]))[0]))


def some_threshold(k: int, sd: float) -> float:
    """The released count of persons beyond :data:`CLIPPED_RUNG` median reaches on a side of
    one of k columns that shows the range clips some: the normal quantile of ``1 -``
    :data:`SOME_FALSE` ``/ (2 k)`` times the count's noise ``sd`` (nobody there passes on
    any side with chance at most SOME_FALSE).

    Examples
    --------
    >>> from dplong.privacy.ranges import some_threshold
    >>> round(some_threshold(2, 27.3))   # 3,000 persons at epsilon = 4, one regressor
    77
    """
    return NormalDist().inv_cdf(1.0 - SOME_FALSE / (2 * k)) * sd


def far_threshold(sides: int, sd: float) -> float:
    """The released count of persons beyond a rung of :data:`WIDE_RUNGS` on one of the
    ``sides`` widened that shows its range, widened for a long tail, would still clip many
    there: the normal quantile of ``1 -`` :data:`HEAVY_FALSE` ``/ sides`` times the count's
    noise ``sd``, and a person (whatever the noise). No √n, as in :func:`heavy_threshold`: the
    tail is known to be long, and those beyond lie far out, each pulling by many spreads (RAND
    HIE's raw spending as a regressor: 141 persons beyond 16 median reaches, up to 128, its
    slope about 15 SEs off where the range ended at 15).

    Examples
    --------
    >>> from dplong.privacy.ranges import far_threshold
    >>> round(far_threshold(1, 37.0))   # one side widened, its counts' sd 37 persons
    62
    """
    return NormalDist().inv_cdf(1.0 - HEAVY_FALSE / sides) * sd + 1.0


def histogram_threshold(k: int, rho: float) -> float:
    """The count a cell of :func:`histogram_ranges`' ``2 k`` histograms must reach at ρ: the
    noise sd ``2 √k / √(2ρ)`` times the normal quantile that all of their empty cells stay
    below with chance ``1 -`` :data:`HISTOGRAM_FALSE` (a union bound; the lattice's rounding
    adds a hair to the sd). Public facts only.

    Examples
    --------
    >>> from dplong.privacy.ranges import histogram_threshold
    >>> round(histogram_threshold(4, 0.005))   # 4 columns: about 4.3 sds of 40
    171
    """
    cells = 2 * k * (HISTOGRAM_EDGES.size + 1)
    z = NormalDist().inv_cdf(1.0 - HISTOGRAM_FALSE / cells)
    return z * 2.0 * math.sqrt(k) / math.sqrt(2.0 * rho)


def _at_zero(counted: NDArray[np.float64], n: int, threshold: float) -> NDArray[np.bool_]:
    """The columns whose histograms (``2 k`` rows of cell counts, :func:`person_cells`' order)
    put all but fewer than ``threshold`` of the n persons' largest and negated smallest values
    in the cell ending at 0: (nearly) constant at 0. Not where no other cell clears the
    threshold: a column whose movers spread over a few cells (a status that 45 % of the persons
    change, at n = 545) clears none of them. A person without a value is off the cell, which
    errs towards varying."""
    at_zero = counted[:, int(np.searchsorted(HISTOGRAM_EDGES, 0.0))] >= n - threshold
    k = counted.shape[0] // 2
    return np.asarray(at_zero[:k] & at_zero[k:])


def person_cells(lows: NDArray[np.float64], highs: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every person's cells in :func:`histogram_ranges`' ``2 k`` histograms, one-hot (n x 2 k
    cells): the largest values' then the negated smallest values', each column's cells
    together; a person without a value (NaN) is in no cell. A row's L2 norm is at most
    ``√(2 k)``, and two rows differ in at most two entries of each histogram, by one.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.ranges import HISTOGRAM_EDGES, person_cells
    >>> row = person_cells(np.array([[-3.0]]), np.array([[1.0]]))[0]
    >>> cells = HISTOGRAM_EDGES.size + 1
    >>> [float(HISTOGRAM_EDGES[i % cells]) for i in np.flatnonzero(row)]   # (0.5, 1], (2, 4]
    [1.0, 4.0]
    """
    n, k = lows.shape
    cells = HISTOGRAM_EDGES.size + 1
    statistics = np.column_stack([highs, -lows])  # both sides as "how far up" (n x 2k)
    seen = ~np.isnan(statistics)
    cell = np.searchsorted(HISTOGRAM_EDGES, np.where(seen, statistics, 0.0), side="left")
    onehot = np.zeros((n, 2 * k * cells))
    person, column = np.nonzero(seen)
    onehot[person, column * cells + cell[person, column]] = 1.0
    return onehot


def _farthest(shown: NDArray[np.bool_], counted: NDArray[np.float64]) -> NDArray[np.intp]:
    """Each histogram's farthest cell ``shown``, or where none is, its largest count's."""
    cells = shown.shape[1]
    far = np.where(
        shown.any(axis=1),
        cells - 1 - np.argmax(shown[:, ::-1], axis=1),
        np.argmax(counted, axis=1),
    )
    return np.asarray(far, dtype=np.intp)


def _cleared(counted: NDArray[np.float64], rho: float) -> NDArray[np.bool_]:
    """The cells of the ``2 k`` histograms (``counted``, 2 k x cells, released at ρ ``rho``)
    that clear :func:`histogram_threshold`, less a **lone far cell**: a side's farthest cleared
    cell whose two neighbours each hold less than :data:`HISTOGRAM_WITHIN` of the threshold
    and whose outer edge is more than :data:`FAR_SPAN` times as far out as that of every other
    cleared cell of its column, on either side, one of which at least is off 0. Persons'
    extremes spread over neighbouring doublings; an empty cell's noise clears the threshold
    with chance :data:`HISTOGRAM_FALSE` (a union bound over the cells), and where it did on a
    side whose persons spread thinly (an outcome's minima straddling 0, sd 1.8), it alone set
    that side's end at -2^21: `RandomEffects` at n = 500, ε = 4 released coefficients of 10^4
    with intervals of ±4.5 x 10^5 (docs/accuracy.md, session 116). That side ends as one none
    of whose cells clears (:func:`histogram_ranges`), and the counts beyond the ends tell a
    real group out there that it clips. Post-processing of the released counts."""
    k = counted.shape[0] // 2
    threshold = histogram_threshold(k, rho)
    shown = counted >= threshold
    magnitude = np.abs(np.append(HISTOGRAM_EDGES, 2.0 * HISTOGRAM_EDGES[-1]))  # outer edges
    rows = np.arange(2 * k)
    far = _farthest(shown, counted)
    padded = np.pad(counted, ((0, 0), (1, 1)), constant_values=-np.inf)
    lonely = np.maximum(padded[rows, far], padded[rows, far + 2]) < HISTOGRAM_WITHIN * threshold
    others = shown.copy()
    others[rows, far] = False
    others |= np.roll(shown, k, axis=0)  # the column's other side
    nearer = np.where(others, magnitude, 0.0).max(axis=1)
    lone = shown[rows, far] & lonely & (nearer > 0.0) & (magnitude[far] > FAR_SPAN * nearer)
    shown[rows[lone], far[lone]] = False
    return shown


def histogram_ranges(
    lows: NDArray[np.float64],
    highs: NDArray[np.float64],
    rho: float,
    rng: np.random.Generator,
    *,
    names: tuple[str, ...],
    tail_rho: float = 0.0,
) -> PrivateRanges:
    """The range of each of the k columns from the persons' minima ``lows`` and maxima
    ``highs`` (n x k; NaN: a person without a value, who counts nowhere) with one ρ-zCDP
    vector of histograms (design notes): a stage for n ε too small for
    :func:`private_ranges`' medians. Where ``tail_rho`` is positive, one ``tail_rho``-zCDP
    vector counts the persons beyond each end of the ranges found: where a side's count is
    above :data:`HISTOGRAM_MISS` of n by MISS_SDS of its sds the range ``missed``, and above
    :func:`heavy_threshold` it is ``heavy``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.ranges import histogram_ranges
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(1000, 1)) + rng.normal(size=(1000, 8))
    >>> female = rng.integers(0, 2, (1000, 1)).astype(float)
    >>> found = histogram_ranges(np.column_stack([x.min(axis=1), female]),
    ...                          np.column_stack([x.max(axis=1), female]), 0.02, rng,
    ...                          names=("x", "female"))
    >>> found.ranges.tolist()           # the extremes' cells end at ±4 and at 0 and 1
    [[-6.0, 6.0], [-0.25, 1.25]]
    >>> found.core.round(2).tolist()
    [[-2.83, 2.83], [0.15, 0.85]]
    >>> round(found.entries[0].sensitivity, 2)   # 2 √k for k = 2, and the lattice's rounding
    2.84
    """
    n, k = lows.shape
    cells = HISTOGRAM_EDGES.size + 1
    norm = math.sqrt(2.0 * k)
    counts = release_vector_sum(person_cells(lows, highs), norm, 2.0 * math.sqrt(k), rho, rng)
    counted = counts.total.reshape(2 * k, cells)
    threshold = histogram_threshold(k, rho)
    edges = np.append(HISTOGRAM_EDGES, 2.0 * HISTOGRAM_EDGES[-1])  # each cell's outer edge
    shown = _cleared(counted, rho)
    outer = edges[_farthest(shown, counted)]  # how far up each side ends
    # a side no cell of which clears spreads its persons thinly (minima straddling 0, over a
    # hundred cells of both signs), and its largest count may be the noise of a cell beyond
    # every person (a range of 10^8): where the other side cleared, it ends at the farthest
    # cell within that side's end mirrored that holds HISTOGRAM_WITHIN of the threshold, or
    # at the mirrored end (a false cell moves it no further); the counts beyond check both
    cleared = np.asarray(shown.any(axis=1), dtype=bool)
    span = np.abs(np.concatenate([outer[k:], outer[:k]]))
    within = np.asarray(
        (edges <= span[:, None]) & (counted >= HISTOGRAM_WITHIN * threshold), dtype=bool
    )
    thin = ~cleared & np.concatenate([cleared[k:], cleared[:k]])
    inner = np.where(within.any(axis=1), edges[_farthest(within, counted)], span)
    outer = np.where(thin, inner, outer)
    upper, lower = outer[:k], 0.0 - outer[k:]  # 0, not -0
    low, high = np.minimum(lower, upper), np.maximum(lower, upper)
    centre, half = (low + high) / 2.0, (high - low) / 2.0
    reach = HISTOGRAM_REACH * half
    entries: tuple[LedgerEntry, ...] = (
        gaussian_vector_entry("bounds", "persons' extremes by dyadic cell", rho, counts),
    )
    missed, beyond = np.zeros(k, dtype=bool), np.full((2, k), np.nan)
    clipped, some, unseen = np.zeros(k), np.zeros(k), math.nan
    if tail_rho > 0.0:  # the persons beyond either end of the ranges found
        deviations = [highs - centre, centre - lows]
        beyond, sd, entry = _counted_beyond(deviations, [reach, reach], 1.0, tail_rho, rng)
        unseen = unseen_threshold(n, k, sd)
        missed = _histogram_missed(beyond, sd, n)
        clipped, some = _heavy(beyond, sd, missed, n)
        entries += (entry,)
    return PrivateRanges(
        np.column_stack([centre - reach, centre + reach]),
        np.column_stack([centre - HISTOGRAM_CORE * half, centre + HISTOGRAM_CORE * half]),
        centre,
        np.array([high - centre, centre - low]),
        counted.reshape(2, k, cells).transpose(0, 2, 1),
        missed,
        np.zeros(k, dtype=bool),
        _at_zero(counted, n, threshold),
        beyond,
        clipped,
        some,
        np.zeros(k, dtype=bool),
        np.zeros(k, dtype=bool),
        np.full((2, len(WIDE_RUNGS), k), np.nan),
        unseen,
        entries,
    )
