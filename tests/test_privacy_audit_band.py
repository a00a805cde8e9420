"""Privacy audit (docs/design §5.4) of a second scale median's check (``counts.band_check``):
per column, over the users off the value most users share, those whose distance to the
midpoint lies outside the band ``[SHARED_BELOW, INSIDE_MADS]`` times the second median's
deviation less those inside it, released with two-sided geometric noise at ε (sensitivity 2:
replacing one user moves it from -1 to +1 at most; users not off the value, or without a
statistic, count 0).

The recipe is that of ``test_privacy_audit_side.py`` (helpers in ``tests/audit.py``):
neighbouring data sets that differ in one user; seeded runs; events fixed before the runs from
the two noiseless counts; Bonferroni-corrected Clopper–Pearson bounds; a POWER check on a
deliberately broken variant (the noise at a quarter of its scale) that is shown to reproduce
the package when un-broken. One column, the second median's deviation 1 (public for the check:
released before it); 40 other users off the value at distance 0.5 (in the band) and 20 at 10
(outside), 40 at the shared value (not off it); user 0 off it in the band (0.5), off it far
outside (FAR, or +inf, counted like any value), at the shared value, or without a statistic
(NaN). Whether a user is off the value is a function of its own value and the first median's
released cell (``scale._shared``); here it is given with the user.
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

from dplong.privacy.counts import _BAND, INSIDE_MADS, SHARED_BELOW, band_check
from dplong.privacy.noise import geometric_rate, two_sided_geometric

EPS = 1.0
GAMMA = 0.05
#: the second median's released deviation
DEVIATION = np.array([1.0])
#: (distance to the midpoint, off the shared value) of the other users
OTHERS = (
    np.concatenate([np.full(40, 0.5), np.full(20, 10.0), np.full(40, 1e-3)]),
    np.concatenate([np.ones(60, dtype=bool), np.zeros(40, dtype=bool)]),
)
#: user 0: (distance, off the shared value)
USERS = {
    "band": (0.5, True),
    "far": (FAR, True),
    "+inf": (np.inf, True),
    "shared": (1e-3, False),
    "none": (np.nan, False),
}
#: 30,000 runs per data set (as the midpoint's check), drawn as the columns of one call of the
#: check (:func:`_package_runs`); the broken variant is far off, 10,000 show it
RUNS, BROKEN_RUNS = 30_000, 10_000


def _data(user: str) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    distance, off = USERS[user]
    return (
        np.concatenate([[distance], OTHERS[0]])[:, None],
        np.concatenate([[off], OTHERS[1]])[:, None],
    )


def _package(user: str) -> Callable[[np.random.Generator], float]:
    distance, off = _data(user)

    def mechanism(rng: np.random.Generator) -> float:
        counts, _, _ = band_check(distance, off, DEVIATION, np.array([EPS]), ("x",), GAMMA, rng)
        return float(counts[0])

    return mechanism


def _replica(user: str, noise_fraction: float) -> Callable[[np.random.Generator], float]:
    """The check rebuilt from its definition, the noise scale divided by ``noise_fraction``:
    un-broken it is the package draw for draw."""
    exact = _outside_less_inside(user)

    def mechanism(rng: np.random.Generator) -> float:
        rate = float(geometric_rate(EPS, 2.0)) / noise_fraction
        return float(exact + two_sided_geometric(rng, rate, (1,))[0])

    return mechanism


def _package_runs(user: str, runs: int, seed: int) -> NDArray[np.float64]:
    """``runs`` seeded releases of the check, as the columns of one call: every column is the
    user's data set at the released deviation with its own ε, so its count is that of one
    release, and its noise the draw at that column of one block
    (:func:`test_runs_as_columns_are_block_draws_of_the_replica`): i.i.d. across columns, each
    with the law of a release (which the replica has, draw for draw)."""
    distance, off = _data(user)
    counts, _, _ = band_check(
        np.repeat(distance, runs, axis=1),
        np.repeat(off, runs, axis=1),
        np.repeat(DEVIATION, runs),
        np.full(runs, EPS),
        ("x",) * runs,
        GAMMA,
        np.random.default_rng(seed),
    )
    return counts


def test_runs_as_columns_are_block_draws_of_the_replica() -> None:
    assert_columns_are_block_draws(_package_runs, _outside_less_inside, list(USERS), EPS, 2.0)


def _outside_less_inside(user: str) -> int:
    """The noiseless check: users off the value outside the band less those inside it."""
    distance, off = (a[:, 0] for a in _data(user))
    with np.errstate(invalid="ignore"):
        ratio = distance / DEVIATION[0]
        near = (ratio >= SHARED_BELOW) & (ratio <= INSIDE_MADS)
    return int(np.sum(off & ~near) - np.sum(off & near))


def test_replica_reproduces_the_package() -> None:
    counts = [_outside_less_inside(u) for u in ("band", "far", "shared", "none")]
    assert counts == [-21, -19, -20, -20]
    for user in USERS:
        for seed in range(20):
            package = _package(user)(np.random.default_rng(seed))
            assert _replica(user, 1.0)(np.random.default_rng(seed)) == package


def test_ledger_states_sensitivity_two() -> None:
    distance, off = _data("band")
    _, reach, (entry,) = band_check(
        distance, off, DEVIATION, np.array([EPS]), ("x",), GAMMA, np.random.default_rng(0)
    )
    assert (entry.stage, entry.mechanism, entry.epsilon, entry.sensitivity) == (
        "scale",
        _BAND,
        EPS,
        2.0,
    )
    rate = float(geometric_rate(EPS, 2.0))
    assert entry.noise_scale == pytest.approx(1.0 / rate)
    # the reach bounds the noise from above with probability 1 - γ: P(Z >= reach) <= γ, and
    # not far less (one-sided: only a count clearly above 0 withholds)
    p = np.exp(-rate)
    beyond = p ** np.ceil(reach[0]) / (1.0 + p)
    assert GAMMA / 2.0 < beyond <= GAMMA


@session_cache
def _outputs(user: str, noise_fraction: float) -> NDArray[np.float64]:
    seed = 9100 + 10 * list(USERS).index(user) + int(noise_fraction != 1.0)
    if noise_fraction == 1.0:
        return _package_runs(user, RUNS, seed)
    return repeat(_replica(user, noise_fraction), BROKEN_RUNS, seed)


def _audit(pair: tuple[str, str], noise_fraction: float = 1.0) -> float:
    first, second = (_outputs(user, noise_fraction)[:, None] for user in pair)
    step = 1.0 / float(geometric_rate(EPS, 2.0))
    noiseless = ([float(_outside_less_inside(pair[0]))], [float(_outside_less_inside(pair[1]))])
    bound = pair_bound((first, second), noiseless, [step], ["signed count"], 0.0, (0, 1, 2))
    print(report(f"band check {pair} noise/{1 / noise_fraction:g}", bound, EPS))
    return bound.epsilon_lb


@pytest.mark.parametrize(
    "pair",
    [("band", "far"), ("band", "+inf"), ("shared", "far"), ("none", "band")],
    ids=["band-vs-far", "band-vs-inf", "shared-vs-far", "none-vs-band"],
)
def test_band_check_audit(pair: tuple[str, str]) -> None:
    bound = _audit(pair)
    assert bound <= EPS
    if abs(_outside_less_inside(pair[0]) - _outside_less_inside(pair[1])) == 2:
        # tightness (not a privacy claim): a count moved by its sensitivity at ε shows most of
        # ε in 30,000 runs
        assert bound > 0.5 * EPS


def test_band_check_audit_has_power() -> None:
    assert _audit(("band", "far"), BROKEN_NOISE_FRACTION) > 1.5 * EPS
