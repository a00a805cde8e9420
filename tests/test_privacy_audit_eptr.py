"""Privacy audits (docs/design §5.4) of the ePTR releases (dplong.privacy.ptr, issue 28).

Recipe of ``tests/audit.py``: two neighbouring data sets, many seeded runs of the mechanism on
each, events fixed before the runs from the noiseless values — the outcome ⊥ and the tails of
the release projected on the direction in which the estimate moves — Bonferroni-corrected
Clopper–Pearson bounds, and the assertion that the empirical lower bound ε_lb does not exceed
the ε the ledger claims. Each route has two audits, each with a power check:

* **release**: a safe pair (the test passes almost surely on both) whose estimates differ by
  most of the sensitivity α the noise is calibrated to. POWER: the same release calibrated to
  :data:`BROKEN_SENSITIVITY` of α (a user's bound taken per row with ten rows a user, say)
  must be caught. (A Gaussian release of half the claimed ε seen from its tails needs a bug of
  this size to be certified beyond the whole ε with a few thousand runs.)
* **test**: an unsafe pair (the margin is 0 on both: the estimate moves by far more than α).
  The correct mechanism answers ⊥ on both but with probability at most δ, so nothing is seen.
  POWER: the same release with the test skipped (the coin always passes) must be caught.

And the coin alone on margins one apart (the most a unit moves them), with a margin left
unscaled (four times the move) as its power check.

With fixed seeds the tests are deterministic; for a correct mechanism a fresh seed would fail an
audit with probability at most ``1 - CONFIDENCE``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
from audit import CONFIDENCE, EpsilonBound, epsilon_lower_bound, report, tail_events
from numpy.typing import NDArray

import dplong.privacy.ptr as ptr
from dplong.kernels import get_kernel
from dplong.privacy.budget import PTRBudget, ptr_budget
from dplong.privacy.ptr import PTRRelease, kernel_reach, nadaraya_watson_ptr, ols_ptr

EPSILON, DELTA, RUNS = 4.0, 1e-3, 2500
MULTIPLES = (0, 1, 2, 3)
#: The broken releases' noise is calibrated to this fraction of the sensitivity.
BROKEN_SENSITIVITY = 0.1


def _budget(broken: str) -> PTRBudget:
    budget = ptr_budget(EPSILON, DELTA)
    if broken == "noise":  # noise sd ∝ sensitivity / √ρ
        return dataclasses.replace(budget, release_rho=budget.release_rho / BROKEN_SENSITIVITY**2)
    return budget


def _bound(
    release: Callable[[np.random.Generator], PTRRelease],
    pair: tuple[object, object],
    direction: NDArray[np.float64],
    centres: tuple[float, float],
    step: float,
) -> EpsilonBound:
    """ε_lb over the events {⊥} and the tails of the release projected on ``direction``."""
    rng = np.random.default_rng(20261128)
    events, names = [], []
    low, high = min(centres), max(centres)
    for data in pair:
        outputs = [release(rng, data) for _ in range(RUNS)]  # type: ignore[call-arg]
        bottom = np.array([o.estimate is None for o in outputs])
        projected = np.array(
            [-np.inf if o.estimate is None else float(o.estimate @ direction) for o in outputs]
        )
        tails, names = tail_events(projected, low, high, step, MULTIPLES)
        # a ⊥ must not count in the lower tails: -inf stands for it, so mask it out
        tails[:, len(MULTIPLES) :] &= ~bottom[:, None]
        events.append(np.column_stack([bottom, tails]))
    return epsilon_lower_bound(
        events[0], events[1], delta=DELTA, confidence=CONFIDENCE, names=["⊥", *names]
    )


# ---- ePTR-OLS (Alg 4, a person's rows) ----------------------------------------------------------
# p = 1 (no intercept), cap = 1: G = Σ x², b = Σ x y. Safe pair: 300 persons at x = ±1, y = 0,
# and one at (1, 1) in D, (1, -1) in D': θ̂ moves by 2 / 301. With R_θ = 0.05 and the floor
# c₀ n = 289 the sensitivity is α = (R_θ + 2) / (c₀ n) ≈ 0.0071, 94 % of it attained, and the
# margin 301 - 289 - 1 = 11 is above 2M ≈ 8.9 at ε = 4, δ = 1e-3: released almost surely.
# Unsafe pair: 60 persons and the moving one at x = ±0.05 (c₀ = 0.5): G = 0.1525 and θ̂ moves
# by 0.1 / G ≈ 0.66 while λ_min is far below c₀ n = 30.5: the margin is 0 on both.


def _ols_data(people: int, x: float, y_last: float) -> tuple[NDArray[np.float64], ...]:
    xs = np.full(people, x)
    xs[: people // 2] = -x
    ys = np.zeros(people)
    ys[-1] = y_last
    return xs[:, None], ys


def _ols(
    people: int, floor: float, coef_bound: float, budget: PTRBudget
) -> Callable[..., PTRRelease]:
    codes = np.arange(people)

    def release(rng: np.random.Generator, data: tuple) -> PTRRelease:
        return ols_ptr(*data, codes, people, 1, budget, rng, floor=floor, coef_bound=coef_bound)

    return release


@pytest.mark.parametrize("broken", ["", "noise"])
def test_ols_release_audit_with_power_check(broken: str) -> None:
    pair = (_ols_data(301, 1.0, 1.0), _ols_data(301, 1.0, -1.0))
    centres = (1.0 / 301, -1.0 / 301)
    release = _ols(301, 289.0 / 301, 0.05, _budget(broken))
    sd = release(np.random.default_rng(0), pair[0]).noise_sd  # public: the lattice's σ
    bound = _bound(release, pair, np.ones(1), centres, sd)
    print(report(broken or "correct", bound, EPSILON))
    if broken:
        assert bound.epsilon_lb > EPSILON, report(broken, bound, EPSILON)
    else:
        assert bound.epsilon_lb <= EPSILON, report("correct", bound, EPSILON)


@pytest.mark.parametrize("broken", ["", "test"])
def test_ols_test_audit_with_power_check(broken: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if broken:
        monkeypatch.setattr(ptr, "logistic_coin", lambda rng, log_odds: True)
    pair = (_ols_data(61, 0.05, 1.0), _ols_data(61, 0.05, -1.0))
    exact = 0.05 / (61 * 0.05**2)
    release = _ols(61, 0.5, 1.0, _budget(""))
    alpha = (1.0 + 2.0) / (0.5 * 61)
    sd = alpha / np.sqrt(2.0 * _budget("").release_rho)  # the calibrated σ (before rounding)
    bound = _bound(release, pair, np.ones(1), (exact, -exact), sd)
    print(report(broken or "correct", bound, EPSILON))
    if broken:
        assert bound.epsilon_lb > EPSILON, report(broken, bound, EPSILON)
    else:
        assert bound.epsilon_lb <= EPSILON, report("correct", bound, EPSILON)


# ---- ePTR Nadaraya–Watson on a grid (Alg 5) -----------------------------------------------------
# Grid (0, 1, 2), bandwidth 0.05 (a grid point sees only its own units), y in [-1, 1] (R_f = 1).
# Safe pair: 100 units at each grid point with y = -1, and one with y = 1 at x = 0 in D, at x = 1
# in D': the curve moves by 2 / 101 and 2 / 100 at two points (0.028 in L2), against
# α = 4 κ / (c₀ n) ≈ 0.045 with c₀ n = 90 (the margin 100 - 90 - 1 = 9 is above 2M ≈ 8.9).
# Unsafe pair: 20 units at 0 and at 1, none near 2 but the moving one, at x = 0 in D and at
# x = 2 in D': the curve at 2 jumps from 0 to 1 and the margin is 0 on both (c₀ = 0.3).
_GRID = np.array([0.0, 1.0, 2.0])
_KERNEL = get_kernel("gaussian")
_BANDWIDTH = 0.05
_REACH = kernel_reach(_KERNEL, _GRID, _BANDWIDTH, (0.0, 2.0))


def _nw_data(points: tuple[int, ...], each: int, moving_x: float) -> tuple:
    x = np.concatenate([np.repeat(_GRID[list(points)], each), [moving_x]])
    y = np.concatenate([np.full(each * len(points), -1.0), [1.0]])
    return x, y


def _nw(floor: float, budget: PTRBudget) -> Callable[..., PTRRelease]:
    def release(rng: np.random.Generator, data: tuple) -> PTRRelease:
        return nadaraya_watson_ptr(
            *data, _GRID, _KERNEL, _BANDWIDTH, 1.0, budget, rng, floor=floor, reach=_REACH
        )

    return release


def _noiseless(data: tuple) -> NDArray[np.float64]:
    x, y = data
    weights = np.exp(-0.5 * ((_GRID[None, :] - x[:, None]) / _BANDWIDTH) ** 2)
    degree = weights.sum(axis=0)
    return np.where(degree > 0, weights.T @ y / np.where(degree > 0, degree, 1.0), 0.0)


@pytest.mark.parametrize("broken", ["", "noise"])
def test_nadaraya_watson_release_audit_with_power_check(broken: str) -> None:
    pair = (_nw_data((0, 1, 2), 100, 0.0), _nw_data((0, 1, 2), 100, 1.0))
    release = _nw(90.0 / 301, _budget(broken))
    curves = [_noiseless(data) for data in pair]
    direction = (curves[0] - curves[1]) / np.linalg.norm(curves[0] - curves[1])
    sd = release(np.random.default_rng(0), pair[0]).noise_sd
    centres = (float(curves[0] @ direction), float(curves[1] @ direction))
    bound = _bound(release, pair, direction, centres, sd)
    print(report(broken or "correct", bound, EPSILON))
    if broken:
        assert bound.epsilon_lb > EPSILON, report(broken, bound, EPSILON)
    else:
        assert bound.epsilon_lb <= EPSILON, report("correct", bound, EPSILON)


@pytest.mark.parametrize("broken", ["", "test"])
def test_nadaraya_watson_test_audit_with_power_check(
    broken: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if broken:
        monkeypatch.setattr(ptr, "logistic_coin", lambda rng, log_odds: True)
    pair = (_nw_data((0, 1), 20, 0.0), _nw_data((0, 1), 20, 2.0))
    release = _nw(0.3, _budget(""))
    curves = [_noiseless(data) for data in pair]
    direction = (curves[0] - curves[1]) / np.linalg.norm(curves[0] - curves[1])
    alpha = 4.0 * _REACH / (0.3 * 41)
    sd = alpha / np.sqrt(2.0 * _budget("").release_rho)
    centres = (float(curves[0] @ direction), float(curves[1] @ direction))
    bound = _bound(release, pair, direction, centres, sd)
    print(report(broken or "correct", bound, EPSILON))
    if broken:
        assert bound.epsilon_lb > EPSILON, report(broken, bound, EPSILON)
    else:
        assert bound.epsilon_lb <= EPSILON, report("correct", bound, EPSILON)


# ---- the test coin alone (Alg 2, lines 3-5) ------------------------------------------------------
# Neighbours whose margins differ by the most a person can move them: γ = M on D and M - 1 on D'
# (the estimate the same on both, so only the coin tells them apart): released with probability
# 1/2 against sigmoid(-ε_t) ≈ 0.12 at ε_t = 2. POWER: a margin left in units of λ_min (not
# divided by its Lipschitz constant D = 4, a person's cap · p) moves by 4, and the coin's odds by
# e^{4 ε_t}: it must be caught.


@pytest.mark.parametrize("unscaled", [1.0, 4.0])
def test_test_coin_audit_with_power_check(unscaled: float) -> None:
    budget = ptr_budget(EPSILON, DELTA)
    theta = np.array([0.25])
    rng = np.random.default_rng(11)
    events = []
    for margin in (budget.threshold, budget.threshold - unscaled):
        released = np.array(
            [
                ptr.eptr(
                    theta, margin, 0.01, 0.0, 1.0, budget, rng, target="θ", test="a margin"
                ).released
                for _ in range(RUNS)
            ]
        )
        events.append(np.column_stack([released, ~released]))
    bound = epsilon_lower_bound(
        events[0], events[1], delta=DELTA, confidence=CONFIDENCE, names=["released", "⊥"]
    )
    print(report(f"margin x {unscaled:g}", bound, EPSILON))
    if unscaled > 1.0:
        assert bound.epsilon_lb > EPSILON, report("unscaled", bound, EPSILON)
    else:
        assert bound.epsilon_lb <= EPSILON, report("correct", bound, EPSILON)
