"""The release engine on statistics with many exact zeros, and its check for a collapsed scale.

Event rates most users never have, or cross products of regressors most users never change,
put more than half the users at exactly 0. The scale stage's median of ``|x - m̂|`` then sat at
their common distance to the midpoint: the interval collapsed onto 0, every other user was
clipped to it, and the release claimed a precision of 1e-151 around an estimate of ~0 (the
parent commit released 8e-151 for a mean of 0.116, its interval 1e-152 wide). The engine now
keeps zeros from pulling the scale down, sets them aside and counts the others when the
midpoint is 0, and withholds a release whose clipped values spread far beyond its scale.

Tolerances: a release's error is its Laplace noise plus a clipping bias at most its bound, so
``|estimate - mean| <= 5 noise sd + bias`` fails with probability ``e^{-5√2} < 1e-3`` per
release (the sample mean over the users is the estimand, no sampling term).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dplong
from dplong.privacy.engine import ZERO_CELL, Release, release_means
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.quantile import SPREAD_GRID, private_median

pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")


def _release(x: np.ndarray, epsilon: float, seed: int) -> Release:
    options = ReleaseOptions.check(
        x.shape[0], epsilon=epsilon, delta=None, privacy="central", bound=None, d=1
    )
    return release_means(
        x[:, None], names=("rate",), options=options, rng=np.random.default_rng(seed)
    )


def _zero_inflated(n: int, zeros: float, seed: int) -> np.ndarray:
    """Per-user event rates: a share ``zeros`` of users never has one, the rest Beta(3, 7)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < zeros, 0.0, rng.beta(3.0, 7.0, n))


def _honest(release: Release, x: np.ndarray) -> bool:
    error = abs(release.estimate[0] - x.mean())
    return bool(error <= 5.0 * release.noise_sd[0] + release.bias[0])


def test_zeros_never_pull_the_scale_down() -> None:
    # 60 users at distance 1e-12 (zeros beside a midpoint near 0), 40 at about 1: the plain
    # median of the distances is 1e-12; with the zeros' weights (0 below, 1 above) it is 1
    distance = np.concatenate([np.full(60, 1e-12), np.linspace(0.9, 1.1, 40)])[:, None]
    zero = np.arange(100)[:, None] < 60
    eps = np.array([50.0])  # noise far below the gaps: the mechanism's own answer
    plain = private_median(distance, SPREAD_GRID, eps, np.random.default_rng(0))
    weighted = private_median(
        distance,
        SPREAD_GRID,
        eps,
        np.random.default_rng(0),
        weights=(np.where(zero, 0.0, 1.0), np.ones((100, 1))),
    )
    assert plain[0] < 1e-11 and 0.85 < weighted[0] < 1.15


@pytest.mark.parametrize(("n", "zeros", "epsilon"), [(2000, 0.6, 4.0), (20000, 0.9, 1.0)])
def test_zero_inflated_mean_is_resolved(n: int, zeros: float, epsilon: float) -> None:
    """60 % of 2,000 users at 0 (ε = 4: the midpoint at or beside 0, where the zeros never pull
    the scale down), 90 % of 20,000 (ε = 1: the midpoint is 0, the users off it are counted
    and their scale found). Every release is honest and none collapsed."""
    x = _zero_inflated(n, zeros, seed=1)
    for seed in range(8):
        release = _release(x, epsilon, seed)
        assert not np.isnan(release.estimate[0]), release.notes
        assert release.noise_sd[0] > 1e-6 * x.mean()  # not collapsed onto 0
        assert _honest(release, x), (release.estimate, x.mean(), release.noise_sd, release.bias)
    if zeros == 0.9:  # the count of users off 0 ran
        release = _release(x, epsilon, 0)
        assert release.midpoint[0] == ZERO_CELL
        assert any("off 0" in e.mechanism for e in release.privacy.entries)


def test_zero_inflated_mean_too_few_off_zero_is_withheld_or_honest() -> None:
    """60 % of 2,000 users at 0 at ε = 1: the users off 0 are too few for the plan's scale
    budget in some runs. Then the release is withheld with a note saying why; otherwise it is
    honest — never a collapsed number."""
    x = _zero_inflated(2000, 0.6, seed=2)
    withheld = 0
    for seed in range(20):
        release = _release(x, 1.0, seed)
        if np.isnan(release.estimate[0]):
            withheld += 1
            assert release.notes and "No estimate" in release.notes[-1]
        else:
            assert _honest(release, x)
    assert 0 < withheld < 20


def test_a_column_of_zeros_is_zero_and_says_what_it_cannot_see() -> None:
    x = np.zeros(500)
    release = _release(x, 1.0, 0)
    assert release.estimate[0] == 0.0 and release.unseen is not None and bool(release.unseen[0])
    assert any("sees no others" in note for note in release.notes)
    scale = [e for e in release.privacy.entries if e.stage == "scale"]
    assert [e.mechanism for e in scale] == [
        "private median (report-noisy-max, log grid)",
        "lattice Laplace count of users off 0",
    ]
    assert release.privacy.epsilon <= 1.0


def test_a_collapsed_scale_is_withheld() -> None:
    """60 % of the users at exactly 5, the rest at -5 and 15: the median distance is 0, the
    interval collapses onto 5 and clips 40 % of the users to its edges — symmetrically, so the
    mean does not sit at an edge. The released second moment of the clipped values (0.4 w²
    against a scale of w / 3) shows it: withheld, with a note (the parent commit released 5.0002
    ± 1e-5 for a mean of 5)."""
    x = np.full(2000, 5.0)
    x[:400], x[400:800] = -5.0, 15.0
    for seed in range(5):
        release = _release(x, 1.0, seed)
        assert np.isnan(release.estimate[0]) and bool(release.failed_columns[0])
        assert any("spread far beyond the private scale" in note for note in release.notes)


@pytest.mark.xfail(
    strict=True,
    reason="engine: most users at one value other than 0 (here 80 % at exactly 1) still collapse "
    "the scale onto that value; only 20 % are clipped, below what the crowded check sees, and "
    "the release is 1.003 +- 0.0003 for a mean of 2.06 (docs/accuracy.md, known failures)",
)
def test_a_mean_of_counts_most_users_share_is_honest() -> None:
    """Per-user counts (visits a year) that 80 % of 2,000 users have at exactly 1, the rest
    1 + Exp(5), at ε = 4: every release should be honest or withheld with a note. Measured:
    38 of 40 releases dishonest (the scale is the 1s' distance to the midpoint, ~0)."""
    rng = np.random.default_rng(3)
    x = np.where(rng.random(2000) < 0.8, 1.0, 1.0 + rng.exponential(5.0, 2000))
    for seed in range(8):
        release = _release(x, 4.0, seed)
        assert np.isnan(release.estimate[0]) or _honest(release, x), release.estimate


def test_winsorized_mean_of_a_rare_event() -> None:
    """End to end: the share of visits with an event, per person, when 60 % of 2,000 people
    never have one (10 visits each): the parent commit released 8e-151 ± 5e-152."""
    rng = np.random.default_rng(0)
    n = 2000
    users = np.repeat(np.arange(n), 10)
    rate = np.where(rng.random(n) < 0.6, 0.0, rng.beta(3, 7, n))
    frame = pd.DataFrame({"id": users, "y": (rng.random(users.size) < rate[users]).astype(float)})
    truth = frame.groupby("id")["y"].mean().mean()
    res = dplong.winsorized_mean(frame["y"], groups=frame["id"], epsilon=4.0, random_state=1)
    low, high = res.conf_int().to_numpy()[0]
    assert low <= truth <= high and high - low < 0.05
