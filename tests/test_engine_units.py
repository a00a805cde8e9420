"""Exact tests of the deterministic parts of the privacy engine (DESIGN.md §5.1-5.2)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

import dplong
from dplong.privacy.accounting import advanced_composition_epsilon, split_budget
from dplong.privacy.histogram import bin_index, stable_histogram, stable_histogram_threshold
from dplong.privacy.interval import check_histogram_feasible, local_bins
from dplong.privacy.noise import (
    COARSE_BITS,
    geometric_rate,
    release_bounded_sum,
    two_sided_geometric,
    two_sided_geometric_variance,
)
from dplong.privacy.radius import bin_radius, concentration_radius
from dplong.privacy.winsorized import MIN_MIDPOINT_SHARE, default_midpoint_share

NOISE_OFF = 1e300  # geometric rate ~1e280: every draw is exactly 0, thresholds become 1/n


class TestBins:
    def test_bins_are_half_open_on_the_left(self) -> None:
        h = 0.5  # bins (k - 0.5, k + 0.5]
        x = np.array([-0.5, -0.49, 0.0, 0.5, 0.51, 1.5, -1.5, 2.0])
        np.testing.assert_array_equal(bin_index(x, h), [-1, 0, 0, 0, 1, 1, -2, 2])

    def test_bin_centres(self) -> None:
        h = 1.25
        k = bin_index(np.array([2 * h * 7]), h)
        assert k[0] == 7

    def test_threshold_formula(self) -> None:
        n, eps, delta = 1000, 0.5, 1e-6
        assert stable_histogram_threshold(n, eps, delta) == pytest.approx(
            2 / (eps * n) * math.log(2 / delta) + 1 / n, rel=1e-15
        )

    def test_noise_off_histogram_keeps_exact_proportions(self) -> None:
        x = np.array([0.1, 0.2, 0.3, 2.1, 2.2, -5.0])
        hist = stable_histogram(x, 1.0, NOISE_OFF, 0.5, np.random.default_rng(0))
        # threshold -> 1/n: every non-empty bin survives with its exact proportion
        np.testing.assert_array_equal(hist.bins, [-3, 0, 1])  # -5 ∈ (-7, -5]
        np.testing.assert_allclose(hist.proportions, [1 / 6, 3 / 6, 2 / 6])
        assert hist.mode() == 0

    def test_only_nonempty_bins_exist(self) -> None:
        x = np.array([-1e12, 0.0, 1e12])  # would be ~1e12 bins on a dense grid
        hist = stable_histogram(x, 1.0, NOISE_OFF, 0.5, np.random.default_rng(0))
        assert hist.bins.size == 3

    def test_infeasible_histogram_is_refused(self) -> None:
        # threshold = (2/(0.01*100)) log(2e6) + 0.01 > 1
        with pytest.raises(dplong.exceptions.InsufficientUsersError, match="at least"):
            check_histogram_feasible(100, 0.01, 1e-6)
        check_histogram_feasible(100_000, 0.01, 1e-6)  # threshold 0.29: fine

    def test_local_bins_cover_bound(self) -> None:
        np.testing.assert_array_equal(local_bins(1.0, 4.5), [-2, -1, 0, 1, 2])


class TestLatticeNoise:
    def test_noise_off_sum_is_exact(self) -> None:
        rng = np.random.default_rng(1)
        c = rng.uniform(-2.5, 2.5, size=(5000, 3))
        rel = release_bounded_sum(c, np.full(3, 2.5), np.full(3, NOISE_OFF), rng)
        exact = [math.fsum(col) for col in c.T]
        np.testing.assert_allclose(rel.total, exact, rtol=0, atol=1e-12)

    def test_sensitivity_accounts_for_rounding(self) -> None:
        radius = np.array([3.0, 0.7])
        rel = release_bounded_sum(
            np.zeros((10, 2)), radius, np.array([1.0, 0.1]), np.random.default_rng(0)
        )
        # never below the exact 2w, and above it by at most 2**-(COARSE_BITS - 1) relative
        assert np.all(rel.sensitivity >= 2 * radius)
        assert np.all(rel.sensitivity <= 2 * radius * (1 + 2.0 ** -(COARSE_BITS - 1)))
        # released totals lie on the public lattice: integer multiples of the step
        ratio = rel.total / rel.step
        np.testing.assert_array_equal(ratio, np.round(ratio))

    def test_rate_matches_epsilon_over_sensitivity(self) -> None:
        rel = release_bounded_sum(
            np.zeros((10, 1)), np.array([1.0]), np.array([0.8]), np.random.default_rng(0)
        )
        lattice_sensitivity = rel.sensitivity / rel.step
        eps_used = rel.rate * lattice_sensitivity
        assert eps_used <= 0.8  # never above the claimed ε ...
        assert eps_used >= 0.8 * (1 - 1e-5)  # ... and the float slack is tiny

    def test_geometric_rate_refuses_tiny_epsilon(self) -> None:
        with pytest.raises(ValueError, match="too small"):
            geometric_rate(1e-9, 2.0**13)

    def test_two_sided_geometric_law(self) -> None:
        # pmf ∝ exp(-a|z|): P(0) = tanh(a/2); variance 2e^-a/(1-e^-a)^2.
        a = 0.7
        z = two_sided_geometric(np.random.default_rng(2), a, (400_000,))
        p0 = math.tanh(a / 2)
        # binomial SE of P(0) with 4e5 draws is < 8e-4: 5 SE tolerance
        assert abs(np.mean(z == 0) - p0) < 4e-3
        var = float(two_sided_geometric_variance(a))
        assert abs(z.var() / var - 1) < 0.02  # kurtosis ~6: SE of var ≈ sqrt(5/4e5) = 0.4 %
        assert abs(z.mean()) < 5 * math.sqrt(var / 4e5)

    def test_local_release_is_per_row(self) -> None:
        rng = np.random.default_rng(3)
        rel = release_bounded_sum(
            np.zeros((50, 1)), np.array([1.0]), np.array([NOISE_OFF]), rng, local=True
        )
        assert rel.draws == 50 and rel.total[0] == 0.0


class TestComposition:
    def test_single_column_uses_everything(self) -> None:
        b = split_budget(1.0, 1e-6, 1)
        assert (b.epsilon, b.delta, b.method) == (1.0, 1e-6, "single column")

    def test_basic_for_small_d(self) -> None:
        b = split_budget(1.0, 1e-6, 4)
        assert b.method == "basic"
        assert b.epsilon == pytest.approx(0.25) and b.delta == pytest.approx(2.5e-7)
        assert (b.total_epsilon, b.total_delta) == (1.0, 1e-6)

    def test_advanced_for_large_d(self) -> None:
        d, eps, delta = 400, 0.5, 1e-6
        b = split_budget(eps, delta, d)
        slack = delta / 2
        assert b.method == "advanced"
        assert b.epsilon == pytest.approx(eps / math.sqrt(8 * d * math.log(1 / slack)))
        assert b.epsilon > eps / d
        assert b.slack == slack and b.delta * d + slack == pytest.approx(delta)
        assert b.total_epsilon <= eps

    def test_advanced_total_follows_theorem_3_20(self) -> None:
        e, k, s = 0.01, 100, 1e-5
        expected = e * math.sqrt(2 * k * math.log(1 / s)) + k * e * (math.exp(e) - 1)
        assert advanced_composition_epsilon(e, k, s) == pytest.approx(expected, rel=1e-14)

    def test_advanced_not_used_when_invalid(self) -> None:
        # with ε = 50 the simplified advanced form breaks Theorem 3.20: basic must be chosen
        b = split_budget(50.0, 1e-6, 2000)
        assert b.method == "basic" or b.total_epsilon <= 50.0

    def test_pure_local_budget(self) -> None:
        b = split_budget(1.0, 0.0, 3, pure=True)
        assert (b.method, b.delta, b.total_delta) == ("basic", 0.0, 0.0)
        b = split_budget(1.0, 1e-6, 2000, pure=True)
        assert b.method == "advanced" and b.delta == 0.0 and b.total_delta == 1e-6


class TestRadii:
    def test_tau_formula(self) -> None:
        rho, n, d, g = 2.0, 500, 3, 0.1
        assert concentration_radius(rho, n, d, g) == pytest.approx(
            math.sqrt(2 * rho * math.log(2 * d * n / g))
        )
        assert bin_radius(rho, g) == pytest.approx(math.sqrt(2 * rho * math.log(2 / g)))

    def test_midpoint_share_rule(self) -> None:
        n, eps, delta = 10_000, 1.0, 1e-8
        share = default_midpoint_share(n, eps, delta)
        needed = 2 * math.log(2 / delta) / (n / 4 - 1) / eps
        assert share == pytest.approx(max(needed, MIN_MIDPOINT_SHARE))
        # at that share the threshold is at most a quarter of the users
        assert stable_histogram_threshold(n, share * eps, delta) <= 0.25 + 1e-12
        assert default_midpoint_share(40, 0.1, 1e-3) == 0.75  # the cap (docs/accuracy.md)


def _independent_clipped_mean(x: np.ndarray, h: float, w: float) -> float:
    """Mode bin of (2hk-h, 2hk+h] by counting, then the mean clipped to m ± w."""
    counts = Counter(math.ceil((v - h) / (2 * h)) for v in x)
    top = max(counts.values())
    k = min(k for k, c in counts.items() if c == top)  # ties: lowest bin, like argmax
    m = 2 * h * k
    return math.fsum(min(max(v, m - w), m + w) for v in x) / len(x)


class TestNoiseOffEqualsClippedMean:
    @pytest.mark.parametrize("variant", ["improved", "theory"])
    def test_clipped_mean(self, variant: str) -> None:
        rng = np.random.default_rng(4)
        x = np.concatenate([rng.normal(7.3, 1.0, 400), [60.0, -45.0, 30.0]])  # 3 get clipped
        res = dplong.winsorized_mean(
            x,
            epsilon=NOISE_OFF,
            delta=0.5,
            scale=1.0,
            variant=variant,
            refine=False,
            random_state=0,
        )
        tau = math.sqrt(2 * math.log(2 * len(x) / 0.05))
        tau_b = math.sqrt(2 * math.log(2 / 0.05))
        h, w = (tau_b, tau + 2 * tau_b) if variant == "improved" else (tau, 3 * tau)
        assert res.estimate == pytest.approx(_independent_clipped_mean(x, h, w), abs=1e-12)
        assert res.interval[1] - res.interval[0] == pytest.approx(2 * w)
        assert not res.failed

    def test_refined_two_stage_clipped_mean(self) -> None:
        rng = np.random.default_rng(4)
        x = np.concatenate([rng.normal(7.3, 1.0, 400), [60.0, -45.0, 30.0, 12.0, 2.5]])
        res = dplong.winsorized_mean(x, epsilon=NOISE_OFF, delta=0.5, scale=1.0, random_state=0)
        assert res.variant == "improved (refined)"
        n = len(x)
        tau = math.sqrt(2 * math.log(2 * n / 0.05))
        tau_b = math.sqrt(2 * math.log(2 / 0.05))
        rough = _independent_clipped_mean(x, tau_b, tau + 2 * tau_b)
        # noise off: e1 is the statistical term only, sqrt(2 rho log(4/gamma) / n), rho = 1
        w2 = tau + math.sqrt(2 * math.log(4 / 0.05) / n)
        expected = math.fsum(min(max(v, rough - w2), rough + w2) for v in x) / n
        assert res.estimate == pytest.approx(expected, abs=1e-12)
        assert res.interval[1] - res.interval[0] == pytest.approx(2 * w2)

    def test_groups_reduce_to_user_means(self) -> None:
        rng = np.random.default_rng(5)
        users = rng.integers(0, 300, size=3000)  # unbalanced: 0..~25 rows per user
        x = rng.normal(2.0, 1.0, size=3000)
        res = dplong.winsorized_mean(
            x, groups=users, epsilon=NOISE_OFF, delta=0.5, tau=100.0, random_state=0
        )
        means = [x[users == u].mean() for u in np.unique(users)]
        assert res.n == len(means)
        assert res.estimate == pytest.approx(math.fsum(means) / len(means), abs=1e-12)

    def test_multivariate_per_column_radius(self) -> None:
        rng = np.random.default_rng(6)
        x = np.column_stack([rng.normal(0, 1, 500), rng.normal(1e4, 100, 500)])
        res = dplong.winsorized_mean(
            x, epsilon=NOISE_OFF, delta=0.5, scale=[1.0, 1e4], random_state=0
        )
        np.testing.assert_allclose(res.estimate, x.mean(axis=0), rtol=0, atol=1e-9)
        widths = res.interval[:, 1] - res.interval[:, 0]
        assert widths[1] == pytest.approx(100 * widths[0])

    def test_sample_split_uses_the_other_half(self) -> None:
        x = np.random.default_rng(7).normal(0, 1, 1001)
        res = dplong.winsorized_mean(
            x, epsilon=NOISE_OFF, delta=0.5, scale=1.0, sample_split=True, random_state=3
        )
        order = np.random.default_rng(3).permutation(1001)
        assert res.estimate == pytest.approx(x[order[500:]].mean(), abs=1e-12)
        assert "parallel" in res.privacy.composition

    def test_failure_flag_and_fallback(self) -> None:
        # 60 users split 30/30 between two far bins; at ε_h = 0.5, δ = 1e-6 the threshold is
        # 0.984 (feasible), so a bin survives only if its count gains >= 29 from noise of rate
        # 0.25: probability e^{-7.25}/1.78 ≈ 4e-4 each, failure ≈ 0.9992 -> m̂ = 0
        x = np.array([1000.0] * 30 + [-1000.0] * 30)
        with pytest.warns(dplong.exceptions.DplongWarning, match="often fail"):
            res = dplong.winsorized_mean(
                x, epsilon=1.0, delta=1e-6, scale=1.0, midpoint_share=0.5, random_state=0
            )
        assert res.failed
        assert res.interval[0] < 0 < res.interval[1]


class TestLedger:
    def test_entries_and_totals(self) -> None:
        x = np.random.default_rng(8).normal(0, 1, (2000, 3))
        res = dplong.winsorized_mean(x, epsilon=0.9, delta=1e-6, scale=1.0, random_state=0)
        frame = res.privacy.to_frame()
        assert len(frame) == 9  # histogram, refinement and final noise per column
        per_column = frame.groupby(frame["target"].str.split(":").str[0])["epsilon"].sum()
        np.testing.assert_allclose(per_column.to_numpy(), 0.3)
        assert res.privacy.epsilon == pytest.approx(0.9)
        assert res.privacy.delta == pytest.approx(1e-6)
        noise = frame[frame["mechanism"].str.startswith("lattice")]
        np.testing.assert_allclose(
            noise["noise_scale"], noise["sensitivity"] / noise["epsilon"], rtol=1e-5
        )

    def test_accountant_refuses_before_noise(self) -> None:
        acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        rng = np.random.default_rng(9)
        x = rng.normal(0, 1, 2000)
        dplong.winsorized_mean(
            x, epsilon=0.7, delta=5e-6, scale=1.0, accountant=acct, random_state=rng
        )
        state = rng.bit_generator.state
        with pytest.raises(dplong.exceptions.BudgetExceededError):
            dplong.winsorized_mean(
                x, epsilon=0.7, delta=5e-6, scale=1.0, accountant=acct, random_state=rng
            )
        assert rng.bit_generator.state == state  # no randomness was consumed
        assert acct.spent_epsilon == pytest.approx(0.7)

    def test_ledger_addition_is_basic_composition(self) -> None:
        x = np.random.default_rng(10).normal(0, 1, 2000)
        a = dplong.winsorized_mean(x, epsilon=0.5, scale=1.0, random_state=0).privacy
        b = dplong.winsorized_mean(x, epsilon=0.25, scale=1.0, random_state=1).privacy
        total = a + b
        assert total.epsilon == pytest.approx(0.75)
        assert len(total.entries) == len(a.entries) + len(b.entries)


class TestBadInput:
    x = np.random.default_rng(11).normal(0, 1, 500)

    @pytest.mark.parametrize(
        "bad", [[1.0, np.nan, 2.0], [1.0, np.inf], [], np.ones((2, 2, 2)), ["a", "b"]]
    )
    def test_bad_values(self, bad: object) -> None:
        with pytest.raises(dplong.exceptions.DataError, match="values"):
            dplong.winsorized_mean(bad, epsilon=1.0, scale=1.0)  # type: ignore[arg-type]

    @pytest.mark.parametrize("eps", [0, -1, np.inf, np.nan, "one"])
    def test_bad_epsilon(self, eps: object) -> None:
        with pytest.raises(dplong.exceptions.PrivacyParameterError, match="epsilon"):
            dplong.winsorized_mean(self.x, epsilon=eps, scale=1.0)  # type: ignore[arg-type]

    @pytest.mark.parametrize("delta", [0, 1, 1.5, -0.1])
    def test_bad_delta(self, delta: float) -> None:
        with pytest.raises(dplong.exceptions.PrivacyParameterError, match="delta"):
            dplong.winsorized_mean(self.x, epsilon=1.0, delta=delta, scale=1.0)

    def test_local_needs_bound(self) -> None:
        with pytest.raises(dplong.exceptions.ParameterError, match="bound"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=1.0, privacy="local")

    def test_scale_or_tau(self) -> None:
        with pytest.raises(dplong.exceptions.ParameterError, match="not both"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=1.0, tau=1.0)
        with pytest.raises(dplong.exceptions.ParameterError, match="scale must be"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=None)  # type: ignore[arg-type]
        with pytest.raises(dplong.exceptions.ParameterError, match="scale_method"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale_method="guess")

    @pytest.mark.parametrize("scale", [0.0, -1.0, [1.0, 2.0], np.nan])
    def test_bad_scale(self, scale: object) -> None:
        with pytest.raises(dplong.exceptions.ParameterError, match="scale"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=scale)  # type: ignore[arg-type]

    def test_unknown_options(self) -> None:
        with pytest.raises(dplong.exceptions.ParameterError, match="privacy"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=1.0, privacy="global")
        with pytest.raises(dplong.exceptions.ParameterError, match="variant"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=1.0, variant="best")
        with pytest.raises(dplong.exceptions.ParameterError, match="random_state"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=1.0, random_state="seed")  # type: ignore[arg-type]

    def test_groups_problems(self) -> None:
        with pytest.raises(dplong.exceptions.DataError, match="one user id per row"):
            dplong.winsorized_mean(self.x, groups=[1, 2, 3], epsilon=1.0, scale=1.0)
        ids = np.arange(500).astype(float)
        ids[3] = np.nan
        with pytest.raises(dplong.exceptions.DataError, match="missing user ids"):
            dplong.winsorized_mean(self.x, groups=ids, epsilon=1.0, scale=1.0)

    def test_single_user(self) -> None:
        with pytest.raises(dplong.exceptions.InsufficientUsersError, match="2 users"):
            dplong.winsorized_mean(self.x, groups=np.zeros(500), epsilon=1.0, scale=1.0)

    def test_too_few_users_for_epsilon(self) -> None:
        with pytest.raises(dplong.exceptions.InsufficientUsersError, match="cannot succeed"):
            dplong.winsorized_mean(self.x[:50], epsilon=0.05, scale=1.0)

    def test_local_bound_too_loose(self) -> None:
        with pytest.raises(dplong.exceptions.ParameterError, match="bound"):
            dplong.winsorized_mean(self.x, epsilon=1.0, scale=1e-6, privacy="local", bound=1e9)

    def test_errors_are_builtin_compatible(self) -> None:
        with pytest.raises(ValueError):
            dplong.winsorized_mean(self.x, epsilon=-1.0, scale=1.0)


class TestRandomizedResponseOdds:
    @pytest.mark.parametrize("eps", [1e-300, 3.34e-16, 1e-12, 1e-6, 4e-4, 0.1, 1.0, 5.0, 30.0])
    def test_both_odds_within_exp_epsilon_exactly(self, eps: float) -> None:
        # exact rational q against a 60-digit e^ε: (1-q)/q and q/(1-q) must both be <= e^ε
        import decimal
        from fractions import Fraction

        from dplong.privacy.noise import flip_probability

        decimal.getcontext().prec = 60
        bound = decimal.Decimal(eps).exp()
        q = Fraction(flip_probability(eps))
        for odds in ((1 - q) / q, q / (1 - q)):
            assert decimal.Decimal(odds.numerator) / decimal.Decimal(odds.denominator) <= bound


def test_fragile_midpoint_warns_on_public_facts_only() -> None:
    from dplong.privacy.interval import FRAGILE_THRESHOLD

    n, eps, delta = 600, 0.05, 1.0 / 600**2  # threshold ≈ 0.92: feasible but fragile
    assert FRAGILE_THRESHOLD < stable_histogram_threshold(n, eps, delta) <= 1.0
    with pytest.warns(dplong.exceptions.DplongWarning, match="often fail"):
        check_histogram_feasible(n, eps, delta)


class TestTinyEpsilon:
    def test_refinement_never_picks_an_unsupported_epsilon(self) -> None:
        # reproducer: n = 5e6, ε = 1e-4 used to pick a refinement share of 0.1 (ε = 1e-5, below
        # the lattice floor) and fail after the histogram had drawn noise
        from dplong.privacy.noise import MIN_LATTICE_EPSILON
        from dplong.privacy.winsorized import refinement_share

        tau, w = np.array([5.0]), np.array([10.0])
        share = refinement_share(5_000_000, tau, w, 0.05, 1e-4, 1, 0.05)
        assert share == 0.0 or share * 1e-4 >= MIN_LATTICE_EPSILON

    def test_too_small_epsilon_is_refused_before_any_noise(self) -> None:
        rng = np.random.default_rng(15)
        x = rng.normal(size=(200_000, 2))
        state = rng.bit_generator.state
        with pytest.raises(dplong.exceptions.PrivacyParameterError, match="float-safe"):
            dplong.winsorized_mean(x, epsilon=5e-5, delta=1e-3, scale=1.0, random_state=rng)
        assert rng.bit_generator.state == state


def test_nan_statistic_cannot_move_the_sum() -> None:
    # np.clip keeps NaN and NaN fails every comparison; the mechanism must map it into the
    # radius (to the centre, 0) or rint(NaN) would put -2**63 on the lattice
    clipped = np.array([[0.5], [np.nan], [-0.25]])
    rel = release_bounded_sum(
        clipped, np.array([1.0]), np.array([NOISE_OFF]), np.random.default_rng(0)
    )
    assert rel.total[0] == 0.25
    hist = stable_histogram(
        np.array([0.1, np.nan, np.inf]), 1.0, NOISE_OFF, 0.5, np.random.default_rng(0), n=3
    )
    assert hist.bins.tolist() == [0]
