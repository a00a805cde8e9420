"""Privacy audits (docs/design §5.4) of the scale stage's handling of exact zeros
(``scale.scale_stage``): the weighted private median, and the whole release on a zero-inflated
column.

The recipe is that of ``test_privacy_audit.py`` (helpers in ``tests/audit.py``): neighbouring
data sets that differ in one user; seeded runs; events fixed before the runs; Bonferroni-
corrected Clopper–Pearson bounds; a POWER check on a deliberately broken variant that is shown
to have the package's law when un-broken.

1. ``private_median(..., weights=(below, above))``: each user counts ``below`` in the counts
   below the cells above it and ``above`` in the counts above the cells below it. The scale
   stage gives a user at exactly 0 the weights (0, 1) (it pushes the spread up to its
   distance, never pulls it down) or (0, 0) where the midpoint is 0 (set aside), everyone else
   (1, 1): a function of the user's own value and the public midpoint. The small unsigned
   grid of the engine audits (cells ``[2^{k/2}, 2^{(k+1)/2})`` near 1); 20 users at 0.3
   (cell C1) and 21 at 1.1 (C2), so that both cells win often and a user's move shows. User 0
   is a regular user at 0.3 or at +inf, or a zero whose distance to the midpoint is 0.3 or
   FAR (weights (0, 1)), or a zero set aside (weights (0, 0)). Each count moves by at most 1
   between any two of these, so the claim is ε per column.
   POWER: the noise at a quarter of its scale.
2. ``release_means`` end to end on a column where 60 % of the users are exactly 0 (the
   weighted scale stage), n = 400, ε = 2, δ = 1e-3: the tails of the estimate, the count and
   the clipped sum the estimate reads (``ColumnAudit.sums``), user 0 at -inf, FAR or exactly
   0. POWER: the final stage drawn at 8 ε. The midpoint is near 0 and the mean 0.4, so the
   count's noise times that offset moves the estimate more than the broken sum's noise does:
   on the estimate's and the count's tails alone the power check reached ε_lb 0.96; on the
   sum's, 2.29 (2.36 on the medians' earlier draws). (Before the second median's check,
   about 30 % of these releases missed via the second scale median and the broken ones
   released absurd values; they are withheld now, in both variants.)
3. The ledger of a release whose midpoint is 0 (90 % of the users at 0) lists the count of
   users off 0 at the ε it was drawn with, beside every other draw.
4. ``release_means`` end to end where the users off 0 are too few for the scale's first median
   and a second one, sized for them by their count, runs (85 % of n = 2,000 at 0, ε = 2):
   user 0 at -inf, FAR or exactly 0 (each moves the count off 0 and the medians' counts by at
   most 1). POWER: the final stage drawn at 8 ε.

5. ``release_means`` end to end on users at 0 and 1 in equal shares (n = 400, ε = 2): the
   midpoint falls among the cells between them, the scale stage finds every user at one of two
   values, and the count of the users in the scale's cell (``scale._seated``, from the final
   stage) runs: user 0 at -inf, FAR or exactly 0 (each moves that count, as every other, by at
   most 1). POWER: the final stage drawn at 8 ε.

6. ``release_means`` end to end where the first median over the users off 0 is kept and its
   band check runs (half of n = 400 at 0 beside a normal column, d = 2, ε = 2): user 0 at
   -inf, FAR or exactly 0 in the audited column (each moves the count off 0, the median's
   counts and the check, whose sensitivity of 2 its ledger entry records). The claim is the
   pure ε of the draws that read that column (``ColumnAudit.claim``: 1.34 of the call's 1.94).
   POWER: the final stage drawn at 8 ε, 1,200 runs (ε_lb 1.68 against 1.34; at 600 runs 1.17).

Size (2., 4. and 5.): 600 runs per data set (it was 1,500, then 1,000): the size of the POWER
checks, which detect the broken variants at it with a margin (ε_lb 2.29 and 3.24 against the
claimed 2 and 1.96, measured on these seeds with the medians' keyed run-by-run draws; 2.36 and
3.10 on the earlier draws), so the audits keep that power.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from audit import (
    BROKEN_NOISE_FRACTION,
    CONFIDENCE,
    FAR,
    ColumnAudit,
    EpsilonBound,
    epsilon_lower_bound,
    fast_compose,  # noqa: F401 (a fixture, used through pytestmark)
    patch_draws,
    report,
    winning_law,
)
from numpy.typing import NDArray
from session_cache import session_cache

import dplong
import dplong.privacy.budget as budget
from dplong.privacy.counts import _BAND
from dplong.privacy.engine import release_means
from dplong.privacy.noise import geometric_rate, two_sided_geometric
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.quantile import _MEDIAN, LogGrid, private_median
from dplong.privacy.scale import ZERO_CELL

pytestmark = [
    pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning"),
    # values near the largest double: no numpy overflow warning reaches the user (the scale's
    # band and seat checks, the tail count's rung)
    pytest.mark.filterwarnings("error::RuntimeWarning"),
    pytest.mark.usefixtures("fast_compose"),
]

# ---------------------------------------------------------------------------------------------
# 1. The weighted private median
# ---------------------------------------------------------------------------------------------

GRID = LogGrid(fine=2, coarse=1, inner=2, outer=3, signed=False)
EPS = 1.0
OTHERS = np.concatenate([np.full(20, 0.3), np.full(21, 1.1)])
#: user 0: (distance |x - m̂|, weight below, weight above)
USERS = {
    "low": (0.3, 1.0, 1.0),
    "+inf": (np.inf, 1.0, 1.0),
    "zero at 0.3": (0.3, 0.0, 1.0),
    "zero far": (FAR, 0.0, 1.0),
    "zero set aside": (0.3, 0.0, 0.0),
}
#: ~50 µs per release: 30,000 runs per data set (as the engine's median audits); the broken
#: replica is far off, 10,000 show it
RUNS, BROKEN_RUNS = 30_000, 10_000


def weighted_median_replica(noise_fraction: float = 1.0) -> Callable[..., NDArray[np.float64]]:
    """The weighted ``private_median`` of one column rebuilt from its definition: counts are
    sums of weights, the exponential mechanism (Gumbel-max, a draw per cell) at the rate of ε at
    sensitivity 2; ``noise_fraction`` divides the noise scale. Un-broken it has the package's law
    (:func:`test_weighted_median_replica_has_the_package_law`). ``runs`` releases at once: a
    row of i.i.d. draws per run, the law of as many separate releases."""

    def release(
        values: NDArray[np.float64],
        below: NDArray[np.float64],
        above: NDArray[np.float64],
        rng: np.random.Generator,
        runs: int,
    ) -> NDArray[np.float64]:
        b = GRID.boundaries
        inside = values[:, None] < b[None, :]  # x < b_k
        lower = below @ inside  # weight below each boundary
        upper = above @ ~inside  # weight at or above each boundary
        below_cells = lower
        above_cells = np.append(upper[1:], 0.0)
        rate = float(geometric_rate(EPS, 2.0)) / noise_fraction
        noisy = -rate * np.maximum(below_cells, above_cells) + rng.gumbel(
            size=(runs, below_cells.size)
        )
        return np.asarray(GRID.centres[np.argmax(noisy, axis=1)], dtype=np.float64)

    return release


def _data(user: str) -> tuple[NDArray[np.float64], ...]:
    value, below, above = USERS[user]
    values = np.concatenate([[value], OTHERS])
    weights = [np.concatenate([[w], np.ones(OTHERS.size)]) for w in (below, above)]
    return values, weights[0], weights[1]


def _package(user: str, runs: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``runs`` releases of the package's weighted median on the user's data set, as columns
    of one call: ``private_median`` draws one uint64 key per column (``rng.integers(0, 2**64,
    size=columns)``, the stream of one draw per call) and every draw of a column's noise is
    keyed by it, so the columns are, bit for bit, the releases of ``runs`` calls one after
    another on ``rng`` (:func:`test_weighted_median_replica_has_the_package_law` checks it)."""
    values, below, above = _data(user)
    columns = [np.repeat(v[:, None], runs, axis=1) for v in (values, below, above)]
    epsilon = np.full(runs, EPS)
    return private_median(columns[0], GRID, epsilon, rng, weights=(columns[1], columns[2]))


def _weighted_losses(user: str) -> NDArray[np.int64]:
    """Every cell's loss ``max(weight below, weight above)``, as the replica counts it."""
    values, below, above = _data(user)
    inside = values[:, None] < GRID.boundaries[None, :]
    lower, upper = below @ inside, above @ ~inside
    return np.maximum(lower, np.append(upper[1:], 0.0)).astype(np.int64)


def test_weighted_median_replica_has_the_package_law() -> None:
    # The package draws the exponential mechanism run by run, the replica cell by cell: both draw a
    # cell with chance proportional to ``exp(-rate * loss)``. On the audit's own 30,000 package runs
    # per user (cached for test_weighted_median_audit, which would draw them anyway) and 5,000
    # replica draws, every cell's frequency lies within 5 binomial sds of the exact law (the 130
    # checks, 13 cells x 5 users x 2, false-alarm together in about 1e-4 under a normal
    # approximation; the 1 / runs slack covers the cells of tiny chance).
    replica, draws = weighted_median_replica(), 5_000
    rate = float(geometric_rate(EPS, 2.0))
    gen = np.random.default_rng(8000)
    for user in USERS:
        values, below, above = _data(user)
        law = winning_law(_weighted_losses(user), rate)
        assert abs(law.sum() - 1.0) < 1e-9
        copies = replica(values, below, above, gen, draws)
        for outputs in (_outputs(user, 1.0), copies):
            runs = outputs.size
            freq = np.bincount(np.searchsorted(GRID.centres, outputs), minlength=law.size) / runs
            assert np.all(np.abs(freq - law) <= 5 * np.sqrt(law * (1 - law) / runs) + 1 / runs)
    # equal weights of 1 are the plain median, draw for draw
    values = np.concatenate([[0.7], OTHERS])[:, None]
    ones = np.ones_like(values)
    for seed in range(20):
        plain = private_median(values, GRID, np.array([EPS]), np.random.default_rng(seed))
        weighted = private_median(
            values, GRID, np.array([EPS]), np.random.default_rng(seed), weights=(ones, ones)
        )
        assert plain[0] == weighted[0]
    # the audit's runs as columns of one call are the calls one after another, bit for bit
    for user in USERS:
        gen = np.random.default_rng(8001)
        one_by_one = [_package(user, 1, gen)[0] for _ in range(50)]
        np.testing.assert_array_equal(_package(user, 50, np.random.default_rng(8001)), one_by_one)


def _cells() -> tuple[float, float]:
    k = np.searchsorted(GRID.boundaries, [0.3, 1.1], side="right") - 1
    return float(GRID.centres[k[0]]), float(GRID.centres[k[1]])


@session_cache
def _outputs(user: str, noise_fraction: float) -> NDArray[np.float64]:
    seed = 8100 + 10 * list(USERS).index(user) + int(noise_fraction != 1.0)
    rng = np.random.default_rng(seed)
    if noise_fraction == 1.0:
        return _package(user, RUNS, rng)
    return weighted_median_replica(noise_fraction)(*_data(user), rng, BROKEN_RUNS)


def _median_audit(pair: tuple[str, str], noise_fraction: float = 1.0) -> EpsilonBound:
    c1, c2 = _cells()

    def events(outputs: NDArray[np.float64]) -> NDArray[np.bool_]:
        return np.stack([outputs == c1, outputs == c2, outputs <= c1, outputs >= c2], axis=1)

    first, second = (_outputs(user, noise_fraction) for user in pair)
    return epsilon_lower_bound(
        events(first),
        events(second),
        delta=0.0,
        confidence=CONFIDENCE,
        names=["= C1", "= C2", "<= C1", ">= C2"],
    )


@pytest.mark.parametrize(
    "pair",
    [
        ("low", "zero far"),
        ("+inf", "zero at 0.3"),
        ("low", "zero set aside"),
        ("+inf", "zero set aside"),
    ],
    ids=["regular-vs-zero-far", "inf-vs-zero-near", "regular-vs-set-aside", "inf-vs-set-aside"],
)
def test_weighted_median_audit(pair: tuple[str, str]) -> None:
    bound = _median_audit(pair)
    print(report(f"weighted private_median {pair}", bound, EPS))
    assert bound.epsilon_lb <= EPS, str(bound)
    # tightness (not a privacy claim): the first pair moves the gap between C1 and C2 by 2, the
    # mechanism's worst case; 30,000 runs see most of it (measured 0.79 ε), the others by 1
    least = 0.6 if pair == ("low", "zero far") else 0.25
    assert bound.epsilon_lb > least * EPS, str(bound)


def test_weighted_median_audit_has_power() -> None:
    bound = _median_audit(("low", "zero far"), BROKEN_NOISE_FRACTION)
    print(report("weighted private_median noise/4", bound, EPS))
    assert bound.epsilon_lb > 1.5 * EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 2. release_means on a zero-inflated column
# ---------------------------------------------------------------------------------------------

N, EPS_RELEASE, DELTA = 400, 2.0, 1e-3
OPTIONS = ReleaseOptions.check(
    N, epsilon=EPS_RELEASE, delta=DELTA, privacy="central", bound=None, d=1
)
#: 60 % of the other users at exactly 0, the rest 1 + 0.3 N(0, 1): the zeros push the scale's
#: median up to the others, and the count off its cell (sd 24) finds the shared value in
#: (almost) every run (160 users off against a limit of 280 less 58), so the second median
#: measures the others alone and the public interval the events rest on holds everyone
ZEROS = int(0.6 * N)
ZI_OTHERS = np.concatenate(
    [np.zeros(ZEROS), 1.0 + 0.3 * np.random.default_rng(62).normal(size=N - 1 - ZEROS)]
)
ZERO_INFLATED = ColumnAudit(
    options=OPTIONS,
    others=ZI_OTHERS,
    users={"-inf": -np.inf, "+far": FAR, "zero": 0.0},
    reference="zero",
    runs=600,  # broken_runs: the size whose power the power check shows (module docstring)
    broken_runs=600,
    seed=8300,
    sums=True,  # its interval's middle is near 0 and the mean 0.4: the count's noise, times
    # that offset, hides the sum's move in the estimate (ColumnAudit)
    # the reference whose path test_zero_inflated_reference pins down: 3 of the first 20 seeds
    # of the medians' keyed draws find the midpoint at 0 itself (seed 0 among them: its public
    # interval then holds only the zeros), 4 miss the users off 0 (intervals of 1e4 or more);
    # seed 2 is the first of the other 13, the audited path (interval ±3.88)
    reference_seed=2,
)


def test_zero_inflated_reference() -> None:
    """The audited release runs the weighted scale stage (its midpoint is near 0, not at it:
    no count of users off 0), then the count off its cell, the second median and its check,
    and resolves the users off 0 (its interval holds them)."""
    ref = ZERO_INFLATED.reference_release
    scale = [e.mechanism for e in ref.privacy.entries if e.stage == "scale"]
    off = "lattice Laplace count off the cell"
    assert scale == [_MEDIAN, off, _MEDIAN, _BAND]
    assert ref.midpoint[0] != ZERO_CELL and abs(ref.midpoint[0]) < 0.5
    assert ref.interval[0, 0] < 0.0 and ref.interval[0, 1] > 2.0  # zeros and the rest inside
    assert ref.privacy.epsilon <= EPS_RELEASE * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# 3. The ledger of a release whose midpoint is 0: the count of users off 0 is listed
# ---------------------------------------------------------------------------------------------


def test_count_off_zero_is_in_the_ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every geometric draw is listed at the ε it was drawn with: the count of users with a
    statistic, and the scale stage's count of users off 0 where the midpoint is 0 (90 % of
    the users at 0), which takes its share of the stage's ε or, where that buys fewer than
    ZERO_COUNT_USERS users' worth, that many from the final stage."""
    drawn: list[float] = []
    honest = two_sided_geometric

    def spy(rng: np.random.Generator, rate: Any, shape: tuple[int, ...]) -> Any:
        drawn.extend(np.broadcast_to(rate, shape).tolist())
        return honest(rng, rate, shape)

    patch_draws(monkeypatch, "two_sided_geometric", spy)
    values = np.concatenate([np.zeros(int(0.9 * N) + 1), np.full(N - 1 - int(0.9 * N), 1.0)])
    release = release_means(
        values[:, None], names=("a",), options=OPTIONS, rng=np.random.default_rng(5)
    )
    assert release.midpoint[0] == ZERO_CELL
    entries = release.privacy.entries
    counts = [e for e in entries if "count" in e.mechanism]
    # the midpoint's check (users above less below its cell); no tail count: the count off 0
    # finds the 10 % at 1 too few for a scale of their own, which withholds the column, and a
    # column withheld before the final stages draws nothing more
    assert [e.stage for e in counts] == ["count", "midpoint", "scale"]
    assert np.isnan(release.estimate[0]) and entries[-1].stage == "scale"
    # every count drawn at the rate of the ε and sensitivity its entry lists (the midpoint's
    # check 2: a replaced user can cross from one side to the other; the others 1)
    assert [e.sensitivity for e in counts] == [1.0, 2.0, 1.0]
    assert drawn == pytest.approx([float(geometric_rate(e.epsilon, e.sensitivity)) for e in counts])
    # the count and the median share the stage's ε (here the midpoint's), but where the share
    # buys fewer than ZERO_COUNT_USERS users' worth the final stage pays for the whole count (the
    # share is left unspent): 400 users at ε = 2, the share 16 users' worth
    median = next(e for e in entries if e.stage == "scale" and "median" in e.mechanism)
    stage = next(e for e in entries if e.stage == "midpoint").epsilon
    off = next(e for e in counts if e.stage == "scale")  # the count of users off 0
    share = budget.ZERO_COUNT_SHARE * stage
    wanted = budget.ZERO_COUNT_USERS / float(release.users[0])
    assert share < off.epsilon <= wanted * (1 + 1e-12)
    assert median.epsilon == pytest.approx(stage - share)
    total = dplong.privacy.compose([e.cost for e in entries], DELTA)
    assert release.privacy.epsilon == total.epsilon <= EPS_RELEASE * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# 4. release_means where the users off 0 get a second median
# ---------------------------------------------------------------------------------------------

N_SECOND = 2000
#: 85 % of the other users at exactly 0, the rest 1 + 0.3 N(0, 1): the midpoint is 0, the
#: scale's first median (0.06 of ε) is too little for the 300 users off 0, and their count
#: (noise scale 50) sizes a second one for them (measured: 19 of 20 seeded releases)
SECOND = ColumnAudit(
    options=ReleaseOptions.check(
        N_SECOND, epsilon=EPS_RELEASE, delta=DELTA, privacy="central", bound=None, d=1
    ),
    others=np.concatenate(
        [
            np.zeros(int(0.85 * N_SECOND)),
            1.0 + 0.3 * np.random.default_rng(63).normal(size=N_SECOND - 1 - int(0.85 * N_SECOND)),
        ]
    ),
    users={"-inf": -np.inf, "+far": FAR, "zero": 0.0},
    reference="zero",
    runs=600,  # broken_runs: the size whose power the power check shows (module docstring)
    broken_runs=600,
    seed=8400,
)


def test_second_median_reference() -> None:
    """The audited release's midpoint is 0; after the count of users off 0 a second median runs
    over them, sized for them, and the interval holds them; the ledger stays within ε."""
    ref = SECOND.reference_release
    assert ref.midpoint[0] == ZERO_CELL
    scale = [(e.mechanism, e.epsilon) for e in ref.privacy.entries if e.stage == "scale"]
    assert [m for m, _ in scale] == [
        _MEDIAN,
        "lattice Laplace count of users off 0",
        _MEDIAN,
    ]
    assert scale[2][1] > 5 * scale[0][1]
    assert ref.interval[0, 1] > 1.5 and not np.isnan(ref.estimate[0])
    assert ref.privacy.epsilon <= EPS_RELEASE * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# 5. release_means on two values in equal shares: the count in the scale's cell
# ---------------------------------------------------------------------------------------------

#: 200 other users at 0 and 199 at 1: every one of the first 20 seeded releases puts the
#: midpoint among the cells between them (1e-47 to 0.04), finds no user off the scale's cell
#: (at 1) or far inside it (the zeros), and counts the users in that cell
TWO_VALUES = ColumnAudit(
    options=OPTIONS,
    others=np.concatenate([np.zeros(200), np.ones(199)]),
    users={"-inf": -np.inf, "+far": FAR, "zero": 0.0},
    reference="zero",
    runs=600,  # broken_runs: the size whose power the power check shows (module docstring)
    broken_runs=600,
    seed=8500,
    sums=True,  # the interval's middle is near 0 and the mean 0.5 (as for ZERO_INFLATED)
)


def test_two_values_reference() -> None:
    """The audited release counts the users in the scale's cell after the count off it found
    none, finds them there (the scale is the distance to the second value, not a miss), and
    releases a mean whose interval holds both values; the ledger stays within ε."""
    ref = TWO_VALUES.reference_release
    scale = [(e.mechanism, e.epsilon) for e in ref.privacy.entries if e.stage == "scale"]
    assert [m for m, _ in scale] == [
        _MEDIAN,
        "lattice Laplace count off the cell",
        "lattice Laplace count in the scale's cell",
    ]
    assert scale[2][1] == pytest.approx(budget.SEAT_USERS / float(ref.users[0]))
    assert 0.0 < ref.midpoint[0] < 0.1 and 0.3 < ref.estimate[0] < 0.7
    assert ref.interval[0, 0] < 0.0 and ref.interval[0, 1] > 1.0
    assert ref.privacy.epsilon <= EPS_RELEASE * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# 6. release_means where the first median over the users off 0 is kept, and checked
# ---------------------------------------------------------------------------------------------

#: half the other users at exactly 0, the rest N(0, 1), beside a normal column (d = 2): the
#: count finds about 200 users off 0, the first median's miss bound over them is above
#: RERUN_MISS, a second one cannot reach NOTE_MISS at what two columns leave, and the kept
#: median's band check (``counts.band_check``) runs (every one of the first ten reference seeds
#: but the two it withholds, seeds 3 and 6)
KEPT_DATA = np.random.default_rng(64)
KEPT = ColumnAudit(
    options=ReleaseOptions.check(
        N, epsilon=EPS_RELEASE, delta=DELTA, privacy="central", bound=None, d=2
    ),
    others=np.concatenate([np.zeros(N // 2 - 1), KEPT_DATA.normal(size=N // 2)]),
    users={"-inf": -np.inf, "+far": FAR, "zero": 0.0},
    reference="zero",
    runs=600,
    broken_runs=1200,
    seed=8600,
    sums=True,  # the interval's middle is 0, the mean about 0.04 (as for ZERO_INFLATED)
    beside=KEPT_DATA.normal(size=N),
    # a typical release: seed 0's tail count, blind among the users off 0, cleared the
    # moderate band and marked the column heavy (12 % of runs), and the events fixed on its
    # wider interval missed the other runs' moves
    reference_seed=1,
)


def test_kept_median_reference() -> None:
    """The audited release's midpoint is 0; after the count of users off 0 the first median is
    kept (no second one) and its band check runs, from the final stage; the interval holds the
    users off 0 and the ledger stays within ε."""
    ref = KEPT.reference_release
    assert ref.midpoint[0] == ZERO_CELL
    scale = [e.mechanism for e in ref.privacy.entries if e.stage == "scale" and e.target == "a"]
    assert scale == [_MEDIAN, "lattice Laplace count of users off 0", _BAND]
    assert ref.interval[0, 1] > 1.5 and not np.isnan(ref.estimate[0])
    assert ref.privacy.epsilon <= EPS_RELEASE * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# The end-to-end audits of sections 2, 4, 5 and 6
# ---------------------------------------------------------------------------------------------

RELEASES = {
    "zero-inflated": ZERO_INFLATED,
    "second median off 0": SECOND,
    "two values": TWO_VALUES,
    "kept median off 0": KEPT,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RELEASES))
@pytest.mark.parametrize("pair", [("-inf", "+far"), ("zero", "+far")], ids=["inf-far", "zero-far"])
def test_release_audit(name: str, pair: tuple[str, str]) -> None:
    case = RELEASES[name]
    claim = case.claim
    bound = case.bound(pair)
    print(report(f"release_means {name} {pair}", bound, claim))
    assert bound.epsilon_lb <= claim, str(bound)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RELEASES))
def test_release_audit_has_power(name: str) -> None:
    case = RELEASES[name]
    claim = case.claim
    bound = case.bound(("-inf", "+far"), broken=True)
    print(report(f"release_means {name}, final noise/8", bound, claim))
    assert bound.epsilon_lb > claim, str(bound)
