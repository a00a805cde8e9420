"""Exact tests of the privacy accounting (docs/design §5.1): ``compose``, ``zcdp_epsilon``, the
budget plan and the ledger (:mod:`dplong.privacy.accounting`, :mod:`dplong.privacy.budget`).

``compose`` must be a valid *upper* bound on the privacy loss of the calls it composes — never
better than the exact privacy profile — and no worse than basic composition. Its validity is
checked against independent computations of the exact (ε, δ) of the worst cases:

* k Gaussian calls of ρ each compose to one Gaussian mechanism with sensitivity/σ
  ``μ = √(2kρ)``, whose exact profile is the analytic Gaussian formula of Balle & Wang (2018):
  ``δ(ε) = Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ)``;
* k pure ε-DP calls: the exact optimal composition of Kairouz, Oh & Viswanath (2015, Thm 3.3),
  attained by k-fold randomized response, whose privacy loss is ``(k - 2l) ε`` with probability
  ``C(k, l) e^{(k-l)ε} / (1 + e^ε)^k``: ``δ(ε') = Σ_l C(k,l) (e^{(k-l)ε} - e^{ε'} e^{lε})_+ /
  (1 + e^ε)^k``;
* both together: the privacy loss of randomized response and of the Gaussian add up
  independently, so ``δ(ε') = Σ_l P(l) δ_G(ε' - (k - 2l) ε)`` with δ_G the Gaussian profile
  above (valid for any real argument) — the worst case of ε-DP calls composed with these
  Gaussians (randomized response dominates every ε-DP mechanism, KOV 2015);
* ``zcdp_epsilon`` against the Bun–Steinke (2016, Prop. 1.3) bound ``ρ + 2√(ρ log(1/δ))``.

The exact ε at δ is found by root-finding on the exact δ(ε) (which decreases in ε).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from audit import memoized_compose
from numpy.typing import NDArray
from scipy import optimize, special

import dplong
from dplong.exceptions import InsufficientUsersError, PrivacyParameterError
from dplong.privacy.accounting import (
    ORDERS,
    Cost,
    LedgerEntry,
    PrivacyLedger,
    bounded_range_renyi,
    compose,
    pure_renyi,
    zcdp_epsilon,
)
from dplong.privacy.budget import FinalBudget, ReleasePlan
from dplong.privacy.budget.stages import ZERO_COUNT_SHARE, ZERO_SPLIT_BOUNDED
from dplong.privacy.engine import Release, release_means
from dplong.privacy.noise import MIN_LATTICE_EPSILON
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.rules import Rules

#: Relative slack for float rounding in the independent exact computations (root-finding to
#: 1e-14, sums of a few hundred terms): far below every margin a wrong rule would leave.
ROUNDING = 1e-10


# ---------------------------------------------------------------------------------------------
# Independent exact privacy profiles
# ---------------------------------------------------------------------------------------------


def gaussian_delta(epsilon: float, mu: float) -> float:
    """Balle & Wang (2018, Thm 8): δ(ε) of the Gaussian mechanism with sensitivity/σ = μ."""
    a, b = mu / 2.0 - epsilon / mu, -mu / 2.0 - epsilon / mu
    return float(special.ndtr(a) - math.exp(epsilon + special.log_ndtr(b)))


def randomized_response_loss(
    k: int, epsilon: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Values ``(k - 2l) ε`` and log-probabilities of the privacy loss of k-fold RR."""
    flips = np.arange(k + 1)
    log_choose = (
        special.gammaln(k + 1) - special.gammaln(flips + 1) - special.gammaln(k - flips + 1)
    )
    log_p = log_choose + (k - flips) * epsilon - k * np.log1p(math.exp(epsilon))
    return (k - 2 * flips) * epsilon, log_p


def kov_delta(epsilon_prime: float, k: int, epsilon: float) -> float:
    """Kairouz–Oh–Viswanath (2015): exact δ(ε') of k-fold composition of ε-DP."""
    loss, log_p = randomized_response_loss(k, epsilon)
    over = loss > epsilon_prime
    return float(np.sum(np.exp(log_p[over]) * -np.expm1(epsilon_prime - loss[over])))


def mixed_delta(epsilon_prime: float, k: int, epsilon: float, mu: float) -> float:
    """Exact δ(ε') of k-fold ε randomized response composed with a Gaussian of ratio μ."""
    loss, log_p = randomized_response_loss(k, epsilon)
    return float(
        sum(
            math.exp(lp) * gaussian_delta(epsilon_prime - v, mu)
            for v, lp in zip(loss, log_p, strict=True)
        )
    )


def exact_epsilon(delta_of: Any, delta: float, upper: float) -> float:
    """The smallest ε >= 0 with ``delta_of(ε) <= δ`` (δ(ε) decreases in ε)."""
    if delta_of(0.0) <= delta:
        return 0.0
    return float(optimize.brentq(lambda e: delta_of(e) - delta, 0.0, upper, xtol=1e-14))


def test_exact_profiles_agree_with_known_values() -> None:
    """The independent computations themselves, on cases with known answers."""
    # one ε-DP call is exactly (ε, 0)-DP: KOV gives δ(ε) = 0 and δ(0) = (e^ε - 1)/(e^ε + 1)
    assert kov_delta(0.7, 1, 0.7) == 0.0
    assert kov_delta(0.0, 1, 0.7) == pytest.approx(math.tanh(0.35), rel=1e-14)
    # KOV at k ε: δ = 0; basic composition is exact at δ = 0
    assert kov_delta(3 * 0.4, 3, 0.4) == 0.0 and kov_delta(3 * 0.4 - 1e-9, 3, 0.4) > 0
    # Gaussian: δ(0) = 2Φ(μ/2) - 1 (total variation), and δ decreases in ε
    assert gaussian_delta(0.0, 1.0) == pytest.approx(2 * special.ndtr(0.5) - 1, rel=1e-13)
    assert gaussian_delta(1.0, 1.0) < gaussian_delta(0.5, 1.0)
    # composing with a zero-loss Gaussian (μ → 0) gives back KOV
    assert mixed_delta(0.3, 4, 0.2, 1e-9) == pytest.approx(kov_delta(0.3, 4, 0.2), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# compose: basic composition, and the Rényi rule against the exact profiles
# ---------------------------------------------------------------------------------------------

RNG_COSTS = np.random.default_rng(90)
PURE_LISTS = [RNG_COSTS.uniform(0.001, 2.0, size=k) for k in (1, 2, 3, 5, 10, 40, 200)]


@pytest.mark.parametrize("epsilons", PURE_LISTS, ids=lambda e: f"k={len(e)}")
def test_basic_composition_is_exact_for_pure_calls_without_delta(
    epsilons: NDArray[np.float64],
) -> None:
    total = compose([Cost(epsilon=float(e)) for e in epsilons], delta=0.0)
    assert total.rule == "basic" and total.delta == 0.0
    assert total.epsilon == pytest.approx(math.fsum(epsilons), rel=1e-14)
    assert total.rho == pytest.approx(math.fsum(epsilons**2) / 2.0, rel=1e-12)


def test_one_pure_call_with_delta_is_basic() -> None:
    total = compose([Cost(epsilon=0.3)], delta=1e-6)
    assert (total.epsilon, total.delta, total.rule) == (0.3, 0.0, "basic")


def test_gaussian_calls_need_delta() -> None:
    with pytest.raises(ValueError, match="positive delta"):
        compose([Cost(rho=0.1)], delta=0.0)


#: (k, ρ per call, δ): few and many calls, small and large ρ, moderate and tiny δ
GAUSSIAN_CASES = [
    (1, 0.01, 1e-6),
    (1, 0.5, 1e-3),
    (3, 2.0, 1e-5),
    (10, 0.01, 1e-6),
    (50, 0.05, 1e-10),
    (100, 0.001, 1e-8),
    (400, 1e-4, 1e-6),
]


@pytest.mark.parametrize(("k", "rho", "delta"), GAUSSIAN_CASES)
def test_gaussian_calls_never_beat_the_exact_gaussian(k: int, rho: float, delta: float) -> None:
    total = compose([Cost(rho=rho)] * k, delta)
    mu = math.sqrt(2.0 * k * rho)
    exact = exact_epsilon(lambda e: gaussian_delta(e, mu), delta, 200.0)
    assert total.epsilon >= exact * (1 - ROUNDING), (total, exact)
    # the exact mechanism really is (total.epsilon, δ)-DP at what compose reports
    assert gaussian_delta(total.epsilon, mu) <= delta * (1 + ROUNDING)
    assert total.delta <= delta and total.rho == pytest.approx(k * rho, rel=1e-12)
    # zcdp_epsilon of the summed ρ is what the basic rule uses, and Bun–Steinke bounds it
    assert total.epsilon <= zcdp_epsilon(k * rho, delta) * (1 + 1e-12)
    assert zcdp_epsilon(k * rho, delta) <= k * rho + 2 * math.sqrt(k * rho * math.log(1 / delta))


#: (k, ε per call, δ): where basic wins, where Rényi wins by a little and by a lot
PURE_CASES = [
    (2, 0.5, 1e-6),
    (5, 1.0, 1e-3),
    (10, 0.1, 1e-6),
    (30, 0.3, 1e-8),
    (100, 0.01, 1e-6),
    (1000, 0.01, 1e-9),
    (64, 2.0, 1e-5),
]


@pytest.mark.parametrize(("k", "epsilon", "delta"), PURE_CASES)
def test_pure_calls_never_beat_optimal_composition(k: int, epsilon: float, delta: float) -> None:
    total = compose([Cost(epsilon=epsilon)] * k, delta)
    exact = exact_epsilon(lambda e: kov_delta(e, k, epsilon), delta, k * epsilon)
    assert total.epsilon >= exact * (1 - ROUNDING), (total, exact)
    assert kov_delta(total.epsilon, k, epsilon) <= delta * (1 + ROUNDING)
    assert total.epsilon <= k * epsilon * (1 + 1e-14)  # never worse than basic
    assert total.delta <= delta


#: (k pure calls of ε, m Gaussian calls of ρ, δ)
MIXED_CASES = [(3, 0.2, 2, 0.05, 1e-6), (20, 0.05, 1, 0.02, 1e-6), (8, 0.4, 4, 0.3, 1e-4)]


@pytest.mark.parametrize(("k", "epsilon", "m", "rho", "delta"), MIXED_CASES)
def test_mixed_calls_never_beat_the_exact_worst_case(
    k: int, epsilon: float, m: int, rho: float, delta: float
) -> None:
    total = compose([Cost(epsilon=epsilon)] * k + [Cost(rho=rho)] * m, delta)
    mu = math.sqrt(2.0 * m * rho)
    exact = exact_epsilon(lambda e: mixed_delta(e, k, epsilon, mu), delta, 200.0)
    assert total.epsilon >= exact * (1 - ROUNDING), (total, exact)
    assert mixed_delta(total.epsilon, k, epsilon, mu) <= delta * (1 + ROUNDING)
    basic = k * epsilon + zcdp_epsilon(m * rho, delta)
    assert total.epsilon <= basic * (1 + 1e-14)


def test_renyi_rule_never_worse_than_basic_and_always_valid() -> None:
    """Random mixtures: compose ≤ basic; and ≥ the exact worst case when calls are alike."""
    rng = np.random.default_rng(91)
    for _ in range(60):
        pure = list(rng.uniform(0.001, 1.5, size=rng.integers(0, 30)))
        rhos = list(rng.uniform(1e-4, 0.5, size=rng.integers(0, 4)))
        delta = float(10.0 ** rng.uniform(-10, -2))
        if not pure and not rhos:
            continue
        costs = [Cost(epsilon=e) for e in pure] + [Cost(rho=r) for r in rhos]
        total = compose(costs, delta)
        basic = math.fsum(pure) + (zcdp_epsilon(math.fsum(rhos), delta) if rhos else 0.0)
        assert total.epsilon <= basic * (1 + 1e-12), (total, basic)
        assert total.delta <= delta
        # a lower bound that holds for any mixture: the largest single call is exact
        assert total.epsilon >= max(pure, default=0.0) * (1 - 1e-14)


def test_approximate_calls_add_by_basic_composition() -> None:
    pure = [Cost(epsilon=0.1)] * 20
    histograms = [Cost(epsilon=0.3, delta=1e-7), Cost(epsilon=0.2, delta=2e-7)]
    total = compose(histograms + pure, delta=1e-6)
    rest = compose(pure, delta=1e-6 - 3e-7)
    assert total.epsilon == pytest.approx(0.5 + rest.epsilon, rel=1e-14)
    assert total.delta <= 1e-6 and math.isnan(total.rho)


def test_pure_renyi_curve_is_randomized_response() -> None:
    """Steinke's curve is the Rényi divergence of randomized response, computed directly.

    Both sides subtract terms of size up to ``a |log q|`` to get a value that is then divided by
    ``a - 1``: each carries an absolute rounding error of a few ulps of those terms over
    ``a - 1`` (at ε = 0.01, a = 1.001 that is 1e-9 of a curve value of 5e-5; numpy releases move
    it). Four ulps of ``1 + a |log q|`` over ``a - 1`` bounds both with room to spare, and is
    still 1e-6 of the curve at every order checked, so a wrong formula cannot pass.
    """
    for epsilon in (0.01, 0.3, 2.0):
        log_p, log_q = -math.log1p(math.exp(-epsilon)), -math.log1p(math.exp(epsilon))
        a = ORDERS[::60]
        both = np.logaddexp(a * log_p + (1 - a) * log_q, a * log_q + (1 - a) * log_p) / (a - 1)
        rounding = 4.0 * np.finfo(float).eps * (1.0 + a * abs(log_q)) / (a - 1)
        assert np.all(rounding <= 1e-6 * both)
        assert np.all(np.abs(pure_renyi(epsilon)[::60] - both) <= rounding)


def _two_point_renyi(epsilon: float, q: NDArray[np.float64], a: float) -> NDArray[np.float64]:
    """``D_α(P‖Q)`` of the two-output pairs whose losses are ``t`` and ``t - ε``: ``Q = (q, 1 -
    q)``, ``P = (q e^t, (1 - q) e^{t - ε})``, t set by P summing to 1 (computed from P and Q)."""
    t = -np.log(q + (1.0 - q) * math.exp(-epsilon))
    log_p1, log_p2 = np.log(q) + t, np.log1p(-q) + t - epsilon
    return np.asarray(
        np.logaddexp(a * log_p1 + (1 - a) * np.log(q), a * log_p2 + (1 - a) * np.log1p(-q))
        / (a - 1)
    )


def test_bounded_range_curve_is_the_two_point_supremum() -> None:
    """The curve is the largest Rényi divergence of the two-output pairs whose loss ranges over
    an interval of width ε (the worst case: a convex function of ``e^L`` at a fixed mean is
    largest at the interval's ends), found here by a bounded search over q; it is at most the
    pure curve and about ``α ε²/8`` at small ε (Cesar & Rogers 2021, Lemma 3.2)."""
    for epsilon in (0.05, 0.3, 2.0):
        curve = bounded_range_renyi(epsilon)
        assert np.all(curve <= pure_renyi(epsilon) * (1 + ROUNDING))
        for k in range(0, ORDERS.size, 25):
            a = float(ORDERS[k])
            if a > 1e3:  # the loss's own ends bound it there: curve == ε
                continue
            found = optimize.minimize_scalar(
                lambda q, e=epsilon, a=a: -_two_point_renyi(e, np.array([q]), a)[0],
                bounds=(1e-12, 1 - 1e-12),
                method="bounded",
                options={"xatol": 1e-12},
            )
            assert curve[k] == pytest.approx(-found.fun, rel=3e-6)  # its margin: 1e-6
            grid = _two_point_renyi(epsilon, np.linspace(1e-6, 1 - 1e-6, 2001), a)
            assert np.all(grid <= curve[k] * (1 + 1e-9))
    small = bounded_range_renyi(1e-3)[:50] / ORDERS[:50]
    np.testing.assert_allclose(small, 1e-3**2 / 8, rtol=1e-3)


def test_a_zero_split_composes_below_the_median_planned() -> None:
    """The plan costs a scale stage of ε s as one bounded-range median; in a column whose
    midpoint is 0 the stage runs as a count at ``ZERO_COUNT_SHARE`` of s and a median at the
    rest: up to ``ZERO_SPLIT_BOUNDED`` these compose below the planned median at every order,
    beyond about 12 they do not (so the plan costs larger stages as pure calls)."""
    share = ZERO_COUNT_SHARE
    for s in np.geomspace(1e-4, ZERO_SPLIT_BOUNDED, 300):
        split = pure_renyi(share * s) + bounded_range_renyi((1 - share) * s)
        assert np.all(split <= bounded_range_renyi(s) * (1 + ROUNDING)), s
    beyond = pure_renyi(share * 13.0) + bounded_range_renyi((1 - share) * 13.0)
    assert np.any(beyond > bounded_range_renyi(13.0))
    costs = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=1e-6, stated_scale=False)
    assert [c.bounded for c in costs.early_costs()[:2]] == [True, True]


def test_bounded_calls_compose_below_pure_ones() -> None:
    """Twenty medians at ε = 0.1 each: basic composition sums them either way (2.0); the Rényi
    rule composes bounded-range calls at about a quarter of the pure ones' ρ."""
    pure = compose([Cost(epsilon=0.1)] * 20, 1e-6)
    bounded = compose([Cost(epsilon=0.1, bounded=True)] * 20, 1e-6)
    assert bounded.epsilon < pure.epsilon < 2.0
    assert bounded.rho == pytest.approx(20 * 0.1**2 / 8) and pure.rho == pytest.approx(0.1)
    assert compose([Cost(epsilon=0.1, bounded=True)] * 2, 0.0).epsilon == pytest.approx(0.2)
    entry = LedgerEntry("midpoint", "private median", "x", 0.1, 0.0, 0.0, 1.0, 20.0, True)
    assert entry.cost == Cost(epsilon=0.1, bounded=True)


@pytest.mark.parametrize(
    ("rho", "delta"), list(itertools.product((1e-4, 0.01, 0.25, 1.0, 10.0), (1e-3, 1e-6, 1e-12)))
)
def test_zcdp_epsilon_within_bun_steinke(rho: float, delta: float) -> None:
    eps = zcdp_epsilon(rho, delta)
    assert 0.0 < eps <= rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    # and valid: the Gaussian with this ρ is (eps, δ)-DP
    assert gaussian_delta(eps, math.sqrt(2.0 * rho)) <= delta * (1 + ROUNDING)


# ---------------------------------------------------------------------------------------------
# The ledger and the budget plan
# ---------------------------------------------------------------------------------------------


def test_ledger_totals_equal_compose() -> None:
    rng = np.random.default_rng(92)
    kinds = ("pure", "zcdp", "approximate")
    for _ in range(40):
        entries = []
        for _ in range(int(rng.integers(1, 15))):
            kind = kinds[int(rng.integers(0, 3))]
            eps = float(rng.uniform(0.01, 1.0)) if kind != "zcdp" else 0.0
            rho = float(rng.uniform(0.001, 0.2)) if kind == "zcdp" else 0.0
            delta = float(rng.uniform(1e-9, 1e-8)) if kind == "approximate" else 0.0
            entries.append(LedgerEntry("mean", "m", "x", eps, delta, rho, 1.0, 1.0))
        delta = 1e-6
        ledger = PrivacyLedger.from_entries(entries, delta, "central")
        total = compose([e.cost for e in entries], delta)
        assert (ledger.epsilon, ledger.delta, ledger.composition) == (
            total.epsilon,
            total.delta,
            total.rule,
        )
        assert ledger.rho == total.rho or (math.isnan(ledger.rho) and math.isnan(total.rho))
        assert ledger.entries == tuple(entries)
        digest = ledger.digest()
        assert digest.loc["total", "epsilon"] == ledger.epsilon


#: (n, d, ε, δ): small and large n, one to many columns, small to large budgets, δ = 0 (Laplace
#: only) to large
PLAN_CASES: list[Any] = list(
    itertools.product((60, 300, 5_000, 200_000), (1, 2, 5, 24), (0.1, 1.0, 8.0), (0.0, 1e-9, 1e-3))
)
#: The plan's other shapes: per-column counts (rows with gaps), precision weights (a weighted
#: count, no second moment) and public bounds (only the count and the mean).
PLAN_VARIANTS: tuple[dict[str, bool], ...] = (
    {},
    {"complete_rows": False},
    {"weighted": True},
    {"bounded": True},
)
#: How many users the private count may report, as shares of n: :meth:`ReleasePlan.for_users`
#: resizes the median and refinement stages for it (the count runs first), down to one user.
COUNTED_SHARES = (1.0, 0.3, 0.02, 0.0)


@pytest.mark.parametrize(("n", "d", "epsilon", "delta"), PLAN_CASES)
def test_plan_keeps_every_release_within_the_request(
    n: int, d: int, epsilon: float, delta: float
) -> None:
    """compose(all calls) of every plan and final budget stays within (ε, δ), for radii and
    focus weights anywhere, both kinds, with and without refinement and a stated scale, with
    one count or one per column, precision weights or public bounds.

    The calls are those the engine makes: the count, the median stages as resized for the
    private count (:meth:`ReleasePlan.for_users`, any count from n down to 1), the refinement,
    the histogram's fallback median when it ran, and the final budget split into the mean and
    the second moment (:meth:`FinalBudget.split` at ``plan.moment_share``): two calls per
    column, not one, which the Rényi rule composes differently.
    """
    rng = np.random.default_rng(n + 7 * d)
    unspent = []
    seen: set[ReleasePlan] = set()
    for stated, variant in itertools.product((False, True), PLAN_VARIANTS):
        try:
            made = ReleasePlan.make(
                n=n, d=d, epsilon=epsilon, delta=delta, stated_scale=stated, **variant
            )
            made.check()
        except (PrivacyParameterError, InsufficientUsersError):
            continue  # refused before any noise: nothing is spent
        radii = 10.0 ** rng.uniform(-3, 3, d)
        weights = rng.uniform(0.05, 1.0, d)
        for share in COUNTED_SHARES:
            plan = made.for_users(max(share * n, 1.0))
            if plan in seen:  # not resized (enough users, or no median stages): done
                continue
            seen.add(plan)
            assert plan.count == made.count and plan.moment_share == made.moment_share
            for refined, fallback in itertools.product(
                {False, plan.refine > 0}, {False, plan.fallback > 0}
            ):
                early = plan.early_costs(refine=refined, fallback=fallback)
                final = plan.final_budget(radii, weights, refined=refined, fallback=fallback)
                budgets = [final] + [
                    plan.calibrate(np.full(d, 1.0 / d), kind, refined=refined, fallback=fallback)
                    for kind in (("laplace", "gaussian") if delta > 0 else ("laplace",))
                ]
                for budget in budgets:
                    total = compose(early + _final_calls(budget, plan.moment_share), delta)
                    assert total.epsilon <= epsilon * (1 + 1e-12), (plan, budget, total)
                    assert total.delta <= delta
                assert final.kind == "laplace" or delta > 0
                # the budget the release uses leaves (almost) nothing on the table (checked
                # last, so that every case above is checked for privacy first)
                total = compose(early + _final_calls(final, plan.moment_share), delta)
                if total.epsilon < epsilon * (1 - 1e-6):
                    unspent.append((plan, final, total))
    assert not unspent, unspent


def _final_calls(budget: FinalBudget, moment_share: float) -> list[Cost]:
    """The final stage's calls: a mean per column and, with a moment share, a second moment."""
    mean, moment = budget.split(moment_share)
    return mean.costs() + (moment.costs() if moment is not None else [])


def test_final_calls_follow_the_moment_share() -> None:
    """The split really is two calls of ``(1 - f) ε_j`` and ``f ε_j`` (f > 0 at large n ε)."""
    plan = ReleasePlan.make(n=5000, d=2, epsilon=1.0, delta=0.0, stated_scale=False)
    assert plan.moment_share > 0
    budget = plan.calibrate(np.full(2, 0.5), "laplace")
    calls = _final_calls(budget, plan.moment_share)
    assert len(calls) == 4
    assert math.fsum(c.epsilon for c in calls) == pytest.approx(float(budget.epsilon.sum()))
    assert calls[2].epsilon == pytest.approx(plan.moment_share * budget.epsilon[0])


def test_laplace_calibration_uses_the_whole_budget() -> None:
    # with many columns and a large δ the Rényi rule lets the final ε_j sum to more than
    # twice the budget: a search capped there left 8 % of it unspent (up to ~20 % with other
    # radii), and plan.check's refusal, which uses this calibration, was too strict
    plan = ReleasePlan.make(n=200_000, d=24, epsilon=0.1, delta=1e-3, stated_scale=False)
    budget = plan.calibrate(np.full(24, 1 / 24), "laplace")
    total = compose(plan.early_costs() + budget.costs(), 1e-3)
    assert total.epsilon >= 0.1 * (1 - 1e-6), total


# ---------------------------------------------------------------------------------------------
# The audits' memo of the budget arithmetic (tests/audit.py) is exact
# ---------------------------------------------------------------------------------------------


def _fingerprint(result: Any) -> tuple[Any, ...]:
    """Everything a release or fit publishes that depends on the data or the budget."""
    if isinstance(result, Release):
        numbers = [result.estimate, result.interval, result.noise_scale, result.users]
    elif isinstance(result, dplong.results.PanelResults):
        numbers = [result.params, result.projection_interval, result.noise_scale, result.users]
    else:  # ScaleEstimate
        numbers = [result.scale, result.midpoint]
    flat = tuple(np.asarray(v, dtype=np.float64).tobytes() for v in numbers)
    return (*flat, repr(result.privacy))  # repr: exact floats, NaN equal to NaN


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_memoized_budgets_are_exact() -> None:
    """The audits' memo changes no output bit and no ledger entry (and is used)."""
    x = np.random.default_rng(70).normal(3.0, 2.0, (300, 2))
    panel = pd.DataFrame({"user": np.repeat(np.arange(100), 3), "x": np.tile([0.0, 1.0, 2.0], 100)})
    panel["y"] = panel["x"] + np.random.default_rng(71).normal(size=300)
    ols = dplong.LongitudinalOLS.from_formula("y ~ x", panel, groups="user")
    location = dplong.RandomEffectsLocation.from_formula("y ~ 1", panel, groups="user")
    curves = dplong.PriestleyChao.from_formula(
        "y ~ x",
        panel.assign(x=panel["x"] / 2),
        groups="user",
        domain=(0, 1),
        bandwidth=0.3,
        grid=[0.3, 0.6],
    )
    # four columns: the discrete Gaussian composes them below Laplace noise (at two the cheap
    # bounded-range medians leave Laplace ahead)
    gaussian = ReleaseOptions.check(
        500, epsilon=1.0, delta=1e-2, privacy="central", bound=None, d=4
    )
    y = 1500.0 + np.random.default_rng(72).normal(size=(500, 4))

    def releases(seed: int) -> list[Any]:
        return [
            dplong.winsorized_mean(x, epsilon=1.0, random_state=seed),
            dplong.winsorized_mean(x, epsilon=1.0, scale=4.0, random_state=seed),
            dplong.winsorized_mean(x, epsilon=1.0, variant="theory", scale=4.0, random_state=seed),
            dplong.winsorized_mean(
                x, epsilon=4.0, privacy="local", bound=10.0, scale=4.0, random_state=seed
            ),
            dplong.privacy.estimate_scale(
                x, epsilon=1.0, scale_bounds=(0.1, 100.0), random_state=seed
            ),
            release_means(
                y,
                names=("a", "b", "c", "d"),
                options=gaussian,
                rng=np.random.default_rng(seed),
                rules=Rules(scale=np.ones(4)),
            ),
            ols.fit(epsilon=4.0, random_state=seed),  # at 2 every column is withheld: refused
            ols.fit(epsilon=2.0, scale=1.0, random_state=seed),
            location.fit(epsilon=2.0, scale=1.0, within_scale=1.0, random_state=seed),
            curves.fit(epsilon=2.0, scale=1.0, random_state=seed),
        ]

    for seed in (0,):
        plain = [_fingerprint(r) for r in releases(seed)]
        with memoized_compose() as cache:
            memoised = [_fingerprint(r) for r in releases(seed)]
            again = [_fingerprint(r) for r in releases(seed)]  # now from the caches
            assert cache.cache_info().hits > 0
        assert plain == memoised == again
        assert releases(seed)[5].noise_kind == "gaussian"  # the Gaussian path is covered


def test_memo_is_undone() -> None:
    before = (dplong.privacy.budget.stages.compose, ReleasePlan.calibrate)
    with memoized_compose():
        assert dplong.privacy.budget.stages.compose is not before[0]
    assert (dplong.privacy.budget.stages.compose, ReleasePlan.calibrate) == before
    assert dataclasses.is_dataclass(ReleasePlan)


def test_a_fit_that_fails_after_its_noise_began_is_charged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The accountant is charged at the end of a fit: one that failed after its first draw (an
    item-level curve's bandwidth once overflowed there) had spent nothing on record, though the
    failure itself is a function of the draws, so a retry was free. A guarded fit (every
    advised one) now charges the whole (ε, δ) it afforded where it fails after its checkpoint
    and before its own charge; a refusal, before the checkpoint, charges nothing, and a fit
    that succeeds is charged its ledger once."""
    values = np.random.default_rng(0).normal(size=2000)
    accountant = dplong.Accountant(epsilon=2.0, delta=1e-3)

    located = dplong.privacy.engine.locate

    def fails(*args: Any, **kwargs: Any) -> Any:  # the midpoint and scale drawn, then a failure
        located(*args, **kwargs)
        raise RuntimeError("after the noise")

    with monkeypatch.context() as patched:
        patched.setattr(dplong.privacy.engine, "locate", fails)
        with pytest.raises(RuntimeError, match="after the noise"):
            dplong.winsorized_mean(values, epsilon=0.5, accountant=accountant, random_state=0)
    assert accountant.spent_epsilon == pytest.approx(0.5)
    assert accountant.spent[-1].entries[0].stage == "failed"
    with pytest.raises(PrivacyParameterError):  # refused before any noise: nothing charged
        dplong.winsorized_mean(values, epsilon=-1.0, accountant=accountant, random_state=0)
    with pytest.raises(InsufficientUsersError):
        dplong.winsorized_mean(values[:40], epsilon=0.01, accountant=accountant, random_state=0)
    assert len(accountant.spent) == 1
    res = dplong.winsorized_mean(values, epsilon=0.5, accountant=accountant, random_state=0)
    assert len(accountant.spent) == 2 and accountant.spent[-1] == res.privacy


def test_every_plan_leaves_its_final_stage_room_for_the_counts_it_takes() -> None:
    """The final stage's counts (:meth:`ReleasePlan.seat_count`, ``zero_count``,
    ``second_check``) take at most a quarter of what the stages before it leave a column,
    ``_left()``, read by basic arithmetic while the stage itself is calibrated by Rényi
    composition: a plan whose earlier stages left nothing would hand such a count ε = 0, and
    its geometric noise would raise instead of the plan refusing from public facts. With the
    shipped stage caps the smallest remainder over this grid is about 0.0008 (n = 5,000,
    d = 3, ε = 0.05, a doomed plan), far above the lattice's float-safe floor; raising a
    cap (the midpoint's share to 0.45 at n = 500, d = 7 reached 0) fails here first."""
    grid = itertools.product(
        (50, 72, 100, 300, 500, 1000, 5000, 100_000),
        (1, 2, 3, 7, 12),
        (0.05, 0.25, 0.5, 1.0, 4.0, 16.0),
        (False, True),
    )
    made = 0
    for n, d, epsilon, stated in grid:
        try:
            plan = ReleasePlan.make(
                n=n, d=d, epsilon=epsilon, delta=1.0 / n**2, stated_scale=stated
            )
        except dplong.exceptions.DplongError:  # refused from public facts: nothing to draw
            continue
        made += 1
        assert plan._left() / 4.0 >= MIN_LATTICE_EPSILON, (n, d, epsilon, stated)
        assert plan.seat_count(float(n)) >= MIN_LATTICE_EPSILON
    assert made >= 200  # more than half the grid is plans, not refusals
