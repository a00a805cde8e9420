"""The centre's error read off the released mean (``read_centre_error``) and the final radius
planned at the median midpoint's typical error (``typical_error``, engine ``_planned_error``):
docs/design/engine.md, "The centre's error read off the mean"."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dplong.inference import half_widths
from dplong.privacy.budget import ReleasePlan
from dplong.privacy.engine import _final_radius, _planned_error, release_means
from dplong.privacy.locate import locate, typical_error
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.quantile import GRID, MIDPOINT_REACH, private_median
from dplong.privacy.radius import clipping_bias, read_centre_error
from dplong.privacy.rules import Rules

GAMMA = 0.05


def test_the_read_bound_solves_its_equation_below_the_located_one() -> None:
    scale, width = np.ones(4), np.full(4, 1.6)
    located = np.array([0.5, 0.5, 0.05, 3.0])
    reach = np.array([0.1, 0.3, 0.1, 1.55])
    error = read_centre_error(scale, width, located, reach)
    # the root of e - β(e) = reach where it lies below the located bound (columns 0, 1, 3: the
    # last one's reach is near the most e - β(e) can reach at w = 1.6, so its root is far out)
    found = np.array([True, True, False, True])
    residual = error - clipping_bias(scale, width, error) - reach
    np.testing.assert_allclose(residual[found], 0.0, atol=1e-8)  # bisection: 2**-30 of 3
    assert error[2] == located[2]  # the located 0.05 is below the root: kept
    assert (error <= located).all() and (error >= reach * found).all()


def test_a_reach_beyond_what_the_clip_allows_keeps_the_located_bound() -> None:
    # e - β(e) rises to w under the normal model: a released mean w or more off its centre
    # (every user clipped on one side) says nothing of e, and the located bound stands
    error = read_centre_error(np.ones(1), np.ones(1), np.array([7.0]), np.array([1.0]))
    assert error[0] == 7.0


@pytest.mark.parametrize("tail", ["exponential", "chi-square"])
def test_a_skewed_model_keeps_the_located_bound(tail: str) -> None:
    # β may grow faster than e there: e - β(e) need not increase, and no root bounds e
    error = read_centre_error(
        np.ones(1), np.full(1, 3.0), np.array([0.4]), np.array([0.05]), tail=tail
    )
    assert error[0] == 0.4


def test_the_read_bound_holds_on_the_intervals_own_event() -> None:
    """A centre 0.3 sds off the mean (the located bound knows nothing: 10 sds), users N(0, 1):
    the released mean of the clipped values with Laplace noise, and its interval widened by the
    bias at the read bound. The bound needs only |Z| <= q (the interval's event at γ): it must
    hold, and the interval cover, in at least 1 - γ of the runs. 4,000 runs: the binomial SE
    at 0.95 is 0.0034, so 0.95 - 3 SE = 0.94 is missed by chance with probability 0.1 %."""
    rng = np.random.default_rng(20261205)
    n, runs, width, off, b = 500, 4000, 1.6, 0.3, 0.03
    x = rng.normal(size=(runs, n))
    released = np.clip(x, off - width, off + width).mean(axis=1) + rng.laplace(0.0, b, runs)
    sampling, noise = np.full(runs, 1.0 / math.sqrt(n)), np.full(runs, math.sqrt(2.0) * b)
    q = half_widths(GAMMA, sampling[:1], np.full(1, b), noise[:1], "laplace")[0]
    error = read_centre_error(
        np.ones(runs), np.full(runs, width), np.full(runs, 10.0), np.abs(released - off) + q
    )
    held = error >= off
    bias = clipping_bias(np.ones(runs), np.full(runs, width), error)
    covered = np.abs(released) <= q + bias
    assert held.mean() >= 0.94, held.mean()
    assert covered.mean() >= 0.94, covered.mean()
    # and it reads the centre's error well: a median bound within 0.15 sds of the truth
    assert np.median(error) - off < 0.15, np.median(error)


def test_the_medians_typical_rank_offset() -> None:
    """``typical_error`` takes the exponential mechanism's median offset, ``2 ln 2 / ε`` ranks
    (its draw k ranks off falls off as e^{-ε|k|/2}). 400 draws over 500 normal users at the
    midpoint's ε of 0.12 (500 users, ε = 0.5): 11.6 ranks. The sample median of 400 draws of
    such an offset has a relative SE of about 0.1 (1 / (2 f(m) m √400), f the Laplace-like
    density), and the cells near the middle hold about two users each: within 35 %."""
    rng = np.random.default_rng(7)
    users, draws, epsilon = 500, 400, 0.12
    x = rng.normal(3.7, 1.0, users)
    midpoints = private_median(
        np.repeat(x[:, None], draws, axis=1),
        GRID,
        np.full(draws, epsilon),
        rng,
        reach=MIDPOINT_REACH,
    )
    ranks = np.abs((x[:, None] < midpoints).sum(axis=0) - users / 2.0)
    expected = 2.0 * math.log(2.0) / epsilon
    assert abs(np.median(ranks) / expected - 1.0) < 0.35, (np.median(ranks), expected)
    plan = ReleasePlan.make(n=users, d=1, epsilon=0.5, delta=4e-6, stated_scale=False)
    assert plan.midpoint == pytest.approx(epsilon)
    typical = typical_error(np.ones(1), plan, np.full(1, float(users)))[0]
    assert typical == pytest.approx(stats.norm.ppf(0.5 + expected / users))


def _located(n: int, epsilon: float, seed: int) -> tuple[object, ReleasePlan]:
    x = np.random.default_rng(seed).normal(3.7, 1.0, (n, 1))
    plan = ReleasePlan.make(n=n, d=1, epsilon=epsilon, delta=1.0 / n**2, stated_scale=False)
    where = locate(x, plan=plan, names=("x",), rng=np.random.default_rng(seed), gamma=GAMMA,
                   rules=Rules())  # fmt: skip
    return where, plan


def test_the_radius_is_planned_at_the_typical_error() -> None:
    where, plan = _located(500, 0.5, 3)
    planned = _planned_error(where, plan)  # type: ignore[arg-type]
    typical = GRID.half_width_at(where.midpoint) + typical_error(where.sd, plan, where.users)  # type: ignore[attr-defined]
    np.testing.assert_allclose(planned, np.fmin(where.centre_error, typical))  # type: ignore[attr-defined]
    assert planned[0] < where.centre_error[0] / 3.0  # type: ignore[attr-defined]
    weights = np.ones(1)
    narrow, _ = _final_radius(where, weights, plan, planned=planned)  # type: ignore[arg-type]
    wide, _ = _final_radius(where, weights, plan)  # type: ignore[arg-type]
    assert narrow[0] < wide[0]


def test_a_refined_centre_keeps_its_located_bound() -> None:
    where, plan = _located(5000, 1.0, 4)
    assert where.refined  # type: ignore[attr-defined]
    np.testing.assert_array_equal(_planned_error(where, plan), where.centre_error)  # type: ignore[arg-type, attr-defined]


def test_a_release_takes_the_bias_at_the_smaller_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Normal means of 500 users at ε = 0.5: the released bias bound is the normal model's at
    the smaller of the located bound and the one read off the release's own figures
    (post-processing); over these seeds each is the smaller at least once."""
    import dplong.privacy.engine as engine

    seen = []

    def spied(*args: object, **kwargs: object) -> object:
        seen.append(locate(*args, **kwargs))  # type: ignore[arg-type]
        return seen[-1]

    monkeypatch.setattr(engine, "locate", spied)
    n, smaller = 500, []
    options = ReleaseOptions.check(n, epsilon=0.5, delta=None, privacy="central", bound=None, d=1)
    for seed in range(11, 17):
        x = np.random.default_rng(seed).normal(3.7, 1.0, (n, 1))
        res = release_means(x, names=("x",), options=options, rng=np.random.default_rng(seed + 1))
        located = seen[-1].centre_error  # type: ignore[attr-defined]
        centre, width = res.interval.mean(axis=1), np.diff(res.interval, axis=1)[:, 0] / 2.0
        q = half_widths(GAMMA, res.sampling_sd, res.noise_scale, res.noise_sd, res.noise_kind)
        error = read_centre_error(res.scale, width, located, np.abs(res.estimate - centre) + q)
        np.testing.assert_allclose(res.bias, clipping_bias(res.scale, width, error), rtol=1e-9)
        smaller.append(bool(error[0] < located[0]))
    assert any(smaller) and not all(smaller), smaller
