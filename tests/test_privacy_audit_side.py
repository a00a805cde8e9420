"""Privacy audit (docs/design §5.4) of the midpoint's check (``counts.side_count``): per
column, the users above the released midpoint's grid cell less those below it, released with
two-sided geometric noise at ε (sensitivity 2: replacing one user moves it from -1 to +1 at
most; users in the cell, or without a statistic, count 0).

The recipe is that of ``test_privacy_audit.py`` (helpers in ``tests/audit.py``): neighbouring
data sets that differ in one user; seeded runs; events fixed before the runs from the two
noiseless counts; Bonferroni-corrected Clopper–Pearson bounds; a POWER check on a deliberately
broken variant (the noise at a quarter of its scale) that is shown to reproduce the package
when un-broken. One column, the midpoint 1 (the centre of its cell, public for the stage:
released before it); 40 other users at 0.5 and 60 at 2; user 0 below every user (-FAR), above
(FAR, or +inf, counted like any value), in the midpoint's cell, or without a statistic (NaN).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from audit import (
    BROKEN_NOISE_FRACTION,
    FAR,
    assert_columns_are_block_draws,
    pair_bound,
    repeat,
    report,
)
from numpy.typing import NDArray
from session_cache import session_cache

from dplong.privacy.counts import side_count
from dplong.privacy.noise import geometric_rate, two_sided_geometric
from dplong.privacy.quantile import GRID

EPS = 1.0
GAMMA = 0.05
#: a released midpoint: the report of the cell holding 1
MIDPOINT = np.array([GRID.centres[np.searchsorted(GRID.boundaries, 1.0, side="right")]])
OTHERS = np.concatenate([np.full(40, 0.5), np.full(60, 2.0)])
USERS = {"below": -FAR, "above": FAR, "+inf": np.inf, "cell": float(MIDPOINT[0]), "none": np.nan}
#: 30,000 runs per data set (as the tail audit), drawn as the columns of one call of the check
#: (:func:`_package_runs`); the broken variant is far off, 10,000 show it
RUNS, BROKEN_RUNS = 30_000, 10_000


def _matrix(user: str) -> NDArray[np.float64]:
    return np.concatenate([[USERS[user]], OTHERS])[:, None]


def _package(user: str) -> Callable[[np.random.Generator], float]:
    matrix = _matrix(user)

    def mechanism(rng: np.random.Generator) -> float:
        counts, _, _ = side_count(matrix, MIDPOINT, EPS, ("x",), GAMMA, rng)
        return float(counts[0])

    return mechanism


def _replica(user: str, noise_fraction: float) -> Callable[[np.random.Generator], float]:
    """The check rebuilt from its definition, the noise scale divided by ``noise_fraction``:
    un-broken it is the package draw for draw."""
    exact = _sides(user)

    def mechanism(rng: np.random.Generator) -> float:
        rate = float(geometric_rate(EPS, 2.0)) / noise_fraction
        return float(exact + two_sided_geometric(rng, rate, (1,))[0])

    return mechanism


def _package_runs(user: str, runs: int, seed: int) -> NDArray[np.float64]:
    """``runs`` seeded releases of the check, as the columns of one call: every column is the
    user's data set at the released midpoint with its own ε, so its count is that of one
    release, and its noise the draw at that column of one block
    (:func:`test_runs_as_columns_are_block_draws_of_the_replica`): i.i.d. across columns, each
    with the law of a release (which the replica has, draw for draw)."""
    counts, _, _ = side_count(
        np.repeat(_matrix(user), runs, axis=1),
        np.repeat(MIDPOINT, runs),
        EPS,
        ("x",) * runs,
        GAMMA,
        np.random.default_rng(seed),
    )
    return counts


def test_runs_as_columns_are_block_draws_of_the_replica() -> None:
    assert_columns_are_block_draws(_package_runs, _sides, list(USERS), EPS, 2.0)


def _sides(user: str) -> int:
    """The noiseless check: users above the midpoint's cell less users below it."""
    x = _matrix(user)[:, 0]
    centre = float(MIDPOINT[0])
    half = float(GRID.half_width_at(MIDPOINT)[0])
    with np.errstate(invalid="ignore"):
        return int(np.sum(x >= centre + half) - np.sum(x < centre - half))


def test_replica_reproduces_the_package() -> None:
    assert [_sides(u) for u in ("below", "above", "cell", "none")] == [19, 21, 20, 20]
    for user in USERS:
        for seed in range(20):
            package = _package(user)(np.random.default_rng(seed))
            assert _replica(user, 1.0)(np.random.default_rng(seed)) == package


def test_ledger_states_sensitivity_two() -> None:
    _, reach, (entry,) = side_count(
        _matrix("cell"), MIDPOINT, EPS, ("x",), GAMMA, np.random.default_rng(0)
    )
    assert (entry.stage, entry.epsilon, entry.sensitivity) == ("midpoint", EPS, 2.0)
    # the reach bounds the noise with probability 1 - γ: P(|Z| > reach) <= γ, and not far less
    rate = float(geometric_rate(EPS, 2.0))
    p = np.exp(-rate)
    beyond = 2.0 * p ** np.floor(reach + 1.0) / (1.0 + p)
    assert GAMMA / 2.0 < beyond <= GAMMA


@session_cache
def _outputs(user: str, noise_fraction: float) -> NDArray[np.float64]:
    seed = 8800 + 10 * list(USERS).index(user) + int(noise_fraction != 1.0)
    if noise_fraction == 1.0:
        return _package_runs(user, RUNS, seed)
    return repeat(_replica(user, noise_fraction), BROKEN_RUNS, seed)


def _audit(pair: tuple[str, str], noise_fraction: float = 1.0) -> float:
    first, second = (_outputs(user, noise_fraction)[:, None] for user in pair)
    step = 1.0 / float(geometric_rate(EPS, 2.0))
    noiseless = ([float(_sides(pair[0]))], [float(_sides(pair[1]))])
    bound = pair_bound((first, second), noiseless, [step], ["signed count"], 0.0, (0, 1, 2))
    print(report(f"midpoint check {pair} noise/{1 / noise_fraction:g}", bound, EPS))
    return bound.epsilon_lb


@pytest.mark.parametrize(
    "pair",
    [("below", "above"), ("below", "+inf"), ("cell", "above"), ("none", "below")],
    ids=["below-vs-above", "below-vs-inf", "cell-vs-above", "none-vs-below"],
)
def test_side_count_audit(pair: tuple[str, str]) -> None:
    bound = _audit(pair)
    assert bound <= EPS
    if abs(_sides(pair[0]) - _sides(pair[1])) == 2:
        # tightness (not a privacy claim): a count moved by its sensitivity at ε shows most of
        # ε in 30,000 runs
        assert bound > 0.5 * EPS


def test_side_count_audit_has_power() -> None:
    assert _audit(("below", "above"), BROKEN_NOISE_FRACTION) > 1.5 * EPS
