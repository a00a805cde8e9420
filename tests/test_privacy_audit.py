"""Privacy audits (DESIGN.md §5.4): empirical lower bounds on ε that must not exceed the claim.

Every audit follows the same recipe (helpers in ``tests/audit.py``):

1. two neighbouring data sets D, D' that differ in *one user* (all of that user's data is
   replaced), among them an adversarial pair where the user moves very far away;
2. many runs of the mechanism on each, with fixed seeds;
3. a small set of distinguishing events fixed *before* the runs from theory (the tails where the
   likelihood ratio of lattice-Laplace / geometric noise is exactly ``e^ε``). We do not pick
   events from the data: the confidence is Bonferroni-corrected over every event, both
   orderings and both one-sided Clopper–Pearson bounds, so the max over events is unbiased;
4. ``ε_lb = log((p_lo(S; D) - δ) / p_hi(S; D'))`` at family-wise confidence
   :data:`CONFIDENCE`, maximised over events and orderings, and the assertion
   ``ε_lb <= claimed ε``;
5. a POWER check: the same audit (same data, events, runs and confidence) against a
   deliberately broken variant built from the package's own building blocks — noise with 1/4
   of the correct scale, a histogram without its threshold, or a refined mean re-centred at
   the non-private rough mean — must report ``ε_lb > ε``.
   The broken variants are checked to reproduce the package bit for bit when un-broken, so the
   audit is shown to bite on *this* pipeline, not on a look-alike.

With fixed seeds the tests are deterministic; the confidence level says how likely a correct
mechanism would be to fail for a fresh seed (at most 1 - CONFIDENCE per audit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, localcontext
from functools import cache

import numpy as np
import pytest
from audit import (
    EpsilonBound,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    joint_tail_events,
    repeat,
    tail_events,
)
from numpy.typing import NDArray

import dplong
from dplong.privacy.histogram import (
    Histogram,
    bin_index,
    stable_histogram,
    stable_histogram_threshold,
)
from dplong.privacy.interval import central_midpoint, local_midpoint
from dplong.privacy.noise import (
    flip_probability,
    geometric_rate,
    randomized_response,
    release_bounded_sum,
    two_sided_geometric,
)
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.privacy.winsorized import refined_half_width, refinement_share

# The audits pick midpoint shares and n for distinguishing power, not for a reliable midpoint
# (the other users sit at one point, so the fallback is harmless): the fragile-midpoint
# warning is expected here.
pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")

#: Family-wise one-sided confidence of every ε lower bound (Bonferroni inside each audit).
CONFIDENCE = 0.99
#: The broken variants add noise with this fraction of the correct scale.
BROKEN_NOISE_FRACTION = 0.25
FAR = 1e6  # "moved very far away": far outside every bin, interval and bound used here

Mechanism = Callable[[np.random.Generator], object]


def _report(name: str, bound: EpsilonBound, claimed: float) -> str:
    return f"{name}: {bound} (claimed eps={claimed:g})"


# ---------------------------------------------------------------------------------------------
# 1. Stable histogram (Alg 2)
# ---------------------------------------------------------------------------------------------

HIST_HALF_WIDTH = 1.0  # bins (2k - 1, 2k + 1]: 0.0 is in bin 0, 2.0 in bin 1
HIST_RUNS = 30_000  # runs per data set for the real histogram
HIST_BROKEN_RUNS = 10_000  # the broken variants are far off: fewer runs show it


def histogram_variant(
    noise_fraction: float = 1.0, threshold: bool = True
) -> Callable[..., Histogram]:
    """Algorithm 2 rebuilt from the package's blocks, optionally broken.

    ``noise_fraction < 1`` divides the noise scale (multiplies the geometric rate) while the
    threshold keeps the value computed for the claimed ε; ``threshold=False`` keeps every
    non-empty bin whose noisy proportion is >= 0 (no suppression: breaks the δ part).
    With the defaults it is the package's :func:`stable_histogram`, draw for draw
    (:func:`test_histogram_variant_reproduces_the_package`).
    """

    def histogram(
        values: NDArray[np.float64],
        half_width: float,
        epsilon: float,
        delta: float,
        rng: np.random.Generator,
    ) -> Histogram:
        n = values.shape[0]
        rate = float(geometric_rate(epsilon, 2.0))
        bins, counts = np.unique(bin_index(values, half_width), return_counts=True)
        noisy = counts + two_sided_geometric(rng, rate / noise_fraction, counts.shape)
        proportions = noisy / n
        cut = stable_histogram_threshold(n, 2.0 * rate, delta) if threshold else 0.0
        keep = proportions >= cut
        return Histogram(half_width, bins[keep], proportions[keep])

    return histogram


def _counts(hist: Histogram, n: int, bins: tuple[int, ...]) -> list[float]:
    """Reported noisy counts of ``bins`` (-1 when suppressed: post-processing of the output)."""
    out = []
    for k in bins:
        where = np.flatnonzero(hist.bins == k)
        out.append(float(np.rint(hist.proportions[where[0]] * n)) if where.size else -1.0)
    return out


def test_histogram_variant_reproduces_the_package() -> None:
    rng_values = np.random.default_rng(5)
    values = np.concatenate([rng_values.normal(0, 3, 300), [FAR, -FAR]])
    rebuilt = histogram_variant()
    for seed in range(20):
        a = stable_histogram(values, 0.7, 0.8, 1e-3, np.random.default_rng(seed))
        b = rebuilt(values, 0.7, 0.8, 1e-3, np.random.default_rng(seed))
        np.testing.assert_array_equal(a.bins, b.bins)
        np.testing.assert_array_equal(a.proportions, b.proportions)


# ---- 1a. ε part: the user swaps between two populated bins -----------------------------------
# D: 101 users in bin 0 and 100 in bin 1; D': the last user moves to bin 1 (101 / 100 swapped).
# Replacing one user changes two counts by one each, which is exactly the sensitivity the
# noise is calibrated for. Both bins are far above the threshold (0.15 n = 30 users), so
# suppression never matters. With Z two-sided geometric of rate a = ε/2 and r = e^{-a},
# P(Z >= k) = r^k / (1 + r) for k >= 0, hence the event
#     S = {count_0 >= 101 and count_1 <= 100}
# has P(S; D) = 1/(1+r)^2 and P(S; D') = r^2/(1+r)^2: the ratio is e^{2a} = e^ε *exactly*, so a
# correct mechanism gives ε_lb just below ε, and any excess noise deficit shows up at once.
# Candidate events (Bonferroni, K = 2): S and its mirror image.

HIST_EPS, HIST_DELTA = 1.0, 1e-6
SWAP_D = np.concatenate([np.zeros(100), np.full(100, 2.0), [0.0]])
SWAP_D_PRIME = np.concatenate([np.zeros(100), np.full(100, 2.0), [2.0]])


def _swap_events(
    histogram: Callable[..., Histogram], values: NDArray[np.float64], seed: int, runs: int
) -> tuple[NDArray[np.bool_], list[str]]:
    n = values.shape[0]
    counts = repeat(
        lambda rng: _counts(
            histogram(values, HIST_HALF_WIDTH, HIST_EPS, HIST_DELTA, rng), n, (0, 1)
        ),
        runs,
        seed,
    )
    c0, c1 = counts[:, 0], counts[:, 1]
    events = np.stack([(c0 >= 101) & (c1 <= 100), (c0 <= 100) & (c1 >= 101)], axis=1)
    return events, ["n0 >= 101 & n1 <= 100", "n0 <= 100 & n1 >= 101"]


@cache
def _swap_audit(noise_fraction: float) -> EpsilonBound:
    histogram = histogram_variant(noise_fraction)
    runs = HIST_RUNS if noise_fraction == 1.0 else HIST_BROKEN_RUNS
    events_d, names = _swap_events(histogram, SWAP_D, 101, runs)
    events_d_prime, _ = _swap_events(histogram, SWAP_D_PRIME, 102, runs)
    return epsilon_lower_bound(
        events_d, events_d_prime, delta=HIST_DELTA, confidence=CONFIDENCE, names=names
    )


def test_stable_histogram_swap_audit() -> None:
    bound = _swap_audit(1.0)
    print(_report("stable histogram, swap", bound, HIST_EPS))
    assert bound.epsilon_lb <= HIST_EPS, _report("stable histogram, swap", bound, HIST_EPS)
    # tightness: the event is optimal, so the audit recovers most of ε (expected ~0.95)
    assert bound.epsilon_lb > 0.85 * HIST_EPS, str(bound)


def test_stable_histogram_swap_audit_has_power() -> None:
    bound = _swap_audit(BROKEN_NOISE_FRACTION)  # true ε of this variant: 4
    print(_report("stable histogram, swap, noise/4", bound, HIST_EPS))
    assert bound.epsilon_lb > HIST_EPS, str(bound)


# ---- 1b. adversarial neighbour: one user moves very far away ---------------------------------
# D: 101 users in bin 0. D': the last one moves to FAR, into a bin k* that is empty in D.
# k* can never be reported on D (only non-empty bins exist), and on D' it survives with
# probability <= δ/2 (stability); count_0 moves by one, worth ε/2. Events (K = 3):
# {k* reported}, {count_0 >= 101}, {count_0 <= 100}. At δ = 1e-6 a correct histogram can show at
# most ~ε/2 here; a histogram without threshold reports k* about 3/4 of the time on D' and never
# on D, which is an unbounded privacy loss.

FAR_D = np.zeros(101)
FAR_D_PRIME = np.concatenate([np.zeros(100), [FAR]])
FAR_BIN = int(bin_index(np.array([FAR]), HIST_HALF_WIDTH)[0])


def _far_events(
    histogram: Callable[..., Histogram], values: NDArray[np.float64], seed: int, runs: int
) -> tuple[NDArray[np.bool_], list[str]]:
    n = values.shape[0]
    out = repeat(
        lambda rng: _counts(
            histogram(values, HIST_HALF_WIDTH, HIST_EPS, HIST_DELTA, rng), n, (0, FAR_BIN)
        ),
        runs,
        seed,
    )
    events = np.stack([out[:, 1] >= 0, out[:, 0] >= 101, (out[:, 0] >= 0) & (out[:, 0] <= 100)], 1)
    return events, [f"bin {FAR_BIN} reported", "n0 >= 101", "0 <= n0 <= 100"]


@cache
def _far_audit(noise_fraction: float, threshold: bool) -> EpsilonBound:
    histogram = histogram_variant(noise_fraction, threshold)
    runs = HIST_RUNS if (noise_fraction, threshold) == (1.0, True) else HIST_BROKEN_RUNS
    events_d, names = _far_events(histogram, FAR_D, 201, runs)
    events_d_prime, _ = _far_events(histogram, FAR_D_PRIME, 202, runs)
    return epsilon_lower_bound(
        events_d, events_d_prime, delta=HIST_DELTA, confidence=CONFIDENCE, names=names
    )


def test_stable_histogram_far_user_audit() -> None:
    bound = _far_audit(1.0, True)
    print(_report("stable histogram, far user", bound, HIST_EPS))
    assert bound.epsilon_lb <= HIST_EPS, str(bound)


@pytest.mark.parametrize(
    ("noise_fraction", "threshold"),
    [(BROKEN_NOISE_FRACTION, True), (1.0, False)],
    ids=["noise/4", "no-threshold"],
)
def test_stable_histogram_far_user_audit_has_power(noise_fraction: float, threshold: bool) -> None:
    bound = _far_audit(noise_fraction, threshold)
    print(_report(f"stable histogram, far user, {noise_fraction=}, {threshold=}", bound, HIST_EPS))
    assert bound.epsilon_lb > HIST_EPS, str(bound)


# ---- 1c. δ part: how often does the far user's lone bin survive? -----------------------------
# With a large δ = 0.2 the survival of k* is measurable. The claim (Lemma C.1) is
# P(k* reported; D') <= δ/2, and on D the bin cannot appear at all. We check the one-sided
# lower Clopper–Pearson bound of the survival rate against δ/2, and, more sharply, that the
# rate agrees with the exact geometric tail P(Z >= z_min) = r^{z_min} / (1 + r), where z_min is
# the least integer with (1 + z)/n >= threshold. A histogram without threshold fails both.

DELTA_AUDIT_DELTA = 0.2
DELTA_AUDIT_N = 50
DELTA_D = np.zeros(DELTA_AUDIT_N)
DELTA_D_PRIME = np.concatenate([np.zeros(DELTA_AUDIT_N - 1), [FAR]])


@cache
def _survivals(threshold: bool, data: str) -> NDArray[np.float64]:
    histogram = histogram_variant(1.0, threshold)
    values = DELTA_D if data == "D" else DELTA_D_PRIME
    # on D the far bin is structurally absent, so few runs suffice there; D' carries the test
    runs = HIST_RUNS if threshold and data == "D'" else HIST_BROKEN_RUNS // 2
    return repeat(
        lambda rng: float(
            FAR_BIN in histogram(values, HIST_HALF_WIDTH, HIST_EPS, DELTA_AUDIT_DELTA, rng).bins
        ),
        runs,
        seed=301 if data == "D" else 302,
    )


def _exact_survival(n: int, epsilon: float, delta: float) -> float:
    rate = float(geometric_rate(epsilon, 2.0))
    threshold = stable_histogram_threshold(n, 2.0 * rate, delta)
    z_min = 0
    while (1 + z_min) / n < threshold:  # the package's own float comparison
        z_min += 1
    r = math.exp(-rate)
    return r**z_min / (1.0 + r)


def test_stable_histogram_delta_audit() -> None:
    alpha = 1.0 - CONFIDENCE
    on_d = _survivals(True, "D")
    on_d_prime = _survivals(True, "D'")
    assert on_d.sum() == 0  # a bin that is empty in D does not exist in D's histogram
    hits, runs = int(on_d_prime.sum()), on_d_prime.size
    lower = clopper_pearson_lower(hits, runs, alpha)
    exact = _exact_survival(DELTA_AUDIT_N, HIST_EPS, DELTA_AUDIT_DELTA)
    print(
        f"far bin survival {hits / runs:.4f} (lower {lower:.4f}, exact {exact:.4f}, "
        f"bound delta/2 = {DELTA_AUDIT_DELTA / 2})"
    )
    assert exact <= DELTA_AUDIT_DELTA / 2
    assert lower <= DELTA_AUDIT_DELTA / 2
    # two-sided CONFIDENCE interval for the survival rate contains the exact tail
    assert clopper_pearson_lower(hits, runs, alpha / 2) <= exact
    assert exact <= clopper_pearson_upper(hits, runs, alpha / 2)


def test_stable_histogram_delta_audit_has_power() -> None:
    on_d_prime = _survivals(False, "D'")
    hits, runs = int(on_d_prime.sum()), on_d_prime.size
    lower = clopper_pearson_lower(hits, runs, 1.0 - CONFIDENCE)
    print(f"no-threshold far bin survival {hits / runs:.4f} (lower {lower:.4f})")
    assert lower > DELTA_AUDIT_DELTA / 2


# ---------------------------------------------------------------------------------------------
# 2. Central 1-D Winsorized mean (midpoint histogram + lattice Laplace)
# ---------------------------------------------------------------------------------------------
# n = 200 users, all at 0 except user 0. With all the others in bin 0 the midpoint is 0 whether
# the histogram succeeds (mode = bin 0) or fails (fallback 0), so the whole output is
# estimate = (sum of values clipped to ±w + lattice Laplace noise) / n and one user moves the
# sum by at most 2w, the full sensitivity. midpoint_share = 0.05 gives the mean step 95% of
# ε = 2, so a tight audit comes within ~10% of the claimed ε of the *whole* mechanism, which is
# the bound we assert. Pairs (D, D'):
#   * far:      user at -FAR vs +FAR — both clipped, the shift is the full sensitivity 2w;
#   * far-away: user at 0    vs +FAR — the bulk vs far away, shift w (ε_mean / 2 at most);
#   * moderate: user at 0    vs w/2  — inside the interval, shift w/2.
# Events: the tails {x >= c' + j b} and {x <= c - j b} (j = 0, 1), with c, c' the noiseless
# estimates on D, D' and b the noise scale. For lattice Laplace noise the likelihood ratio on
# every upper tail above c' is exactly e^{ε_mean shift / 2w}: j = 0 is the optimal event.

CENTRAL_N, CENTRAL_EPS, CENTRAL_DELTA, CENTRAL_SHARE, CENTRAL_TAU = 200, 2.0, 1e-3, 0.05, 1.0
#: runs per data set: the far pair carries the tight audit; the others and the broken variant
#: need fewer
CENTRAL_RUNS = {"-far": 15_000, "+far": 15_000, "zero": 10_000, "moderate": 10_000}
BROKEN_RUNS = 10_000
CENTRAL_MULTIPLES = (0, 1)


def _central_values(user: float) -> NDArray[np.float64]:
    values = np.zeros(CENTRAL_N)
    values[0] = user
    return values


def _central_release(values: NDArray[np.float64], rng: np.random.Generator):
    return dplong.winsorized_mean(
        values,
        epsilon=CENTRAL_EPS,
        delta=CENTRAL_DELTA,
        tau=CENTRAL_TAU,
        midpoint_share=CENTRAL_SHARE,
        refine=False,  # the paper's one-pass pipeline (central_pipeline); refined: section 2b
        random_state=rng,
    )


CENTRAL_REFERENCE = _central_release(_central_values(0.0), np.random.default_rng(0))
CENTRAL_W = float(CENTRAL_REFERENCE.interval[1] - CENTRAL_REFERENCE.interval[0]) / 2.0
CENTRAL_B = float(CENTRAL_REFERENCE.noise_scale)  # Laplace scale of the noise on the estimate
CENTRAL_USERS = {"-far": -FAR, "+far": FAR, "zero": 0.0, "moderate": CENTRAL_W / 2}
CENTRAL_CENTRES = {"-far": -CENTRAL_W, "+far": CENTRAL_W, "zero": 0.0, "moderate": CENTRAL_W / 2}


def central_pipeline(values: NDArray[np.float64], noise_fraction: float) -> Mechanism:
    """The central Winsorized mean rebuilt from its blocks; noise scale times noise_fraction."""
    eps_mid, eps_mean = (e.epsilon for e in CENTRAL_REFERENCE.privacy.entries)
    delta = CENTRAL_REFERENCE.privacy.entries[0].delta
    bins_half = float(CENTRAL_REFERENCE.bin_radius)
    w = np.array([CENTRAL_W])

    def run(rng: np.random.Generator) -> float:
        midpoint, _ = central_midpoint(values, bins_half, eps_mid, delta, rng)
        clipped = np.clip(values - midpoint, -w, w)[:, None]
        release = release_bounded_sum(clipped, w, np.array([eps_mean / noise_fraction]), rng)
        return float(midpoint + release.total[0] / values.shape[0])

    return run


def test_central_pipeline_reproduces_the_package() -> None:
    values = _central_values(FAR)
    run = central_pipeline(values, 1.0)
    for seed in range(20):
        expected = _central_release(values, np.random.default_rng(seed)).estimate
        assert run(np.random.default_rng(seed)) == expected
    assert CENTRAL_REFERENCE.privacy.epsilon == CENTRAL_EPS
    assert CENTRAL_REFERENCE.privacy.delta == CENTRAL_DELTA
    assert CENTRAL_REFERENCE.variant == "improved"  # one pass: midpoint and mean only
    assert len(CENTRAL_REFERENCE.privacy.entries) == 2


@cache
def _central_estimates(user: str, noise_fraction: float) -> NDArray[np.float64]:
    values = _central_values(CENTRAL_USERS[user])
    seed = 400 + list(CENTRAL_USERS).index(user)
    if noise_fraction == 1.0:
        mechanism: Mechanism = lambda rng: _central_release(values, rng).estimate  # noqa: E731
    else:
        mechanism = central_pipeline(values, noise_fraction)
    return repeat(mechanism, CENTRAL_RUNS[user] if noise_fraction == 1.0 else BROKEN_RUNS, seed)


def _mean_audit(
    estimates: Callable[[str], NDArray[np.float64]],
    centres: dict[str, float],
    pair: tuple[str, str],
    n: int,
    b: float,
    multiples: tuple[int, ...],
    delta: float,
) -> EpsilonBound:
    d, d_prime = pair
    low, high = sorted((centres[d] / n, centres[d_prime] / n))
    events_d, names = tail_events(estimates(d), low, high, b, multiples)
    events_d_prime, _ = tail_events(estimates(d_prime), low, high, b, multiples)
    return epsilon_lower_bound(
        events_d, events_d_prime, delta=delta, confidence=CONFIDENCE, names=names
    )


def _central_audit(pair: tuple[str, str], noise_fraction: float) -> EpsilonBound:
    return _mean_audit(
        lambda user: _central_estimates(user, noise_fraction),
        CENTRAL_CENTRES,
        pair,
        CENTRAL_N,
        CENTRAL_B,
        CENTRAL_MULTIPLES,
        CENTRAL_DELTA,
    )


@pytest.mark.parametrize(
    ("pair", "least"),
    [(("-far", "+far"), 0.85), (("zero", "+far"), 0.4), (("zero", "moderate"), 0.15)],
    ids=["far-both-ways", "moved-far-away", "moderate"],
)
def test_central_winsorized_mean_audit(pair: tuple[str, str], least: float) -> None:
    bound = _central_audit(pair, 1.0)
    print(_report(f"central mean {pair}", bound, CENTRAL_EPS))
    assert bound.epsilon_lb <= CENTRAL_EPS, str(bound)
    # tightness (not a privacy claim): the audit sees the share of ε the shift can reveal,
    # 0.95 ε · shift / 2w (less the statistical margin)
    assert bound.epsilon_lb > least * CENTRAL_EPS, str(bound)


def test_central_winsorized_mean_audit_has_power() -> None:
    bound = _central_audit(("-far", "+far"), BROKEN_NOISE_FRACTION)  # true ε ≈ 4 · 1.9 + 0.1
    print(_report("central mean, noise/4", bound, CENTRAL_EPS))
    assert bound.epsilon_lb > CENTRAL_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 2b. Central 1-D Winsorized mean with refinement (the default: midpoint, rough mean, mean)
# ---------------------------------------------------------------------------------------------
# The default release adds a stage between the midpoint and the mean: project onto m̂ ± w₁
# (w₁ = τ + 2τ'), release a rough mean μ̂₁ with lattice Laplace noise at ε_ref (scale b₁), then
# project onto μ̂₁ ± w₂ (w₂ = τ + e₁, public: it depends on b₁, never on the data) and release the
# mean with lattice Laplace noise at ε_final (scale b). The release shows both μ̂₁ (the centre of
# result.interval) and the estimate, so the audit observes the pair (c, x) = (μ̂₁, estimate).
# n = 2000, ε = 2, midpoint_share = 0.05 make refinement run (ε_mid, ε_ref, ε_final =
# 0.1, 0.1, 1.8; checked below), and all users but user 0 sit at 0, so m̂ = 0 (bin 0 holds
# n - 1 users; the user's own far bin survives with probability <= δ/2). Noiselessly
#     c = mean(clip(v, ±w₁)),   x = c + mean(clip(v - c, ±w₂)),
# and, given c, x is shifted by the user's clipped value over n plus c/n (typically b₁/n,
# ~0.02 b: the pairs below hardly depend on it):
#   * far (-FAR vs +FAR): c moves by 2w₁/n (ε_ref) and x by 2w₂/n (ε_final): 0.95 ε together;
#   * far-away (0 vs +FAR): half of each;
#   * moderate (0 vs w₂/2): x moves by w₂/2n (ε_final/4), c as much (ε_ref w₂/4w₁, ~0).
# Events (K = 10, Bonferroni): the tails of c (steps b₁) and of x (steps b), j = 0, 1, and the
# two joint tails {c >= c_high and x >= x_high}, {c <= c_low and x <= x_low}, whose likelihood
# ratio composes both losses. The power checks use the same machinery on a replica built from
# the package's own blocks, which reproduces the package draw for draw when unbroken.

REFINED_N, REFINED_EPS, REFINED_DELTA, REFINED_SHARE, REFINED_TAU = 2000, 2.0, 1e-3, 0.05, 1.0
#: runs per data set (~0.4 ms per release: this section takes ~13 s on an idle core); the far
#: pair carries the tight audit
REFINED_RUNS = {"-far": 10_000, "+far": 10_000, "zero": 6_000, "moderate": 6_000}
#: the broken variants are far off (true ε >= 7 or unbounded): a few thousand runs show it
REFINED_BROKEN_RUNS = 3_000


def _refined_values(user: float) -> NDArray[np.float64]:
    values = np.zeros(REFINED_N)
    values[0] = user
    return values


def _refined_release(values: NDArray[np.float64], rng: np.random.Generator):
    return dplong.winsorized_mean(
        values,
        epsilon=REFINED_EPS,
        delta=REFINED_DELTA,
        tau=REFINED_TAU,
        midpoint_share=REFINED_SHARE,
        random_state=rng,  # refine=True is the default
    )


def _centre_and_estimate(low: float, high: float, estimate: float) -> tuple[float, float]:
    """The observed pair (c, x): the centre of the released interval and the estimate."""
    return 0.5 * (low + high), estimate


REFINED_REFERENCE = _refined_release(_refined_values(0.0), np.random.default_rng(0))
REFINED_BINS = float(REFINED_REFERENCE.bin_radius)
REFINED_W1 = REFINED_TAU + 2.0 * REFINED_BINS  # the package's τ + 2τ' (same float operations)
REFINED_W2 = float(REFINED_REFERENCE.interval[1] - REFINED_REFERENCE.interval[0]) / 2.0
REFINED_B1 = REFINED_REFERENCE.privacy.entries[1].noise_scale  # Laplace scale of μ̂₁
REFINED_B = float(REFINED_REFERENCE.noise_scale)  # Laplace scale of the final noise
REFINED_USERS = {"-far": -FAR, "+far": FAR, "zero": 0.0, "moderate": REFINED_W2 / 2}


def _refined_noiseless(user: str) -> tuple[float, float]:
    """Noiseless (c, x) of a data set (m̂ = 0, no noise in either stage)."""
    values = _refined_values(REFINED_USERS[user])
    c = float(np.mean(np.clip(values, -REFINED_W1, REFINED_W1)))
    return c, c + float(np.mean(np.clip(values - c, -REFINED_W2, REFINED_W2)))


def refined_pipeline(
    values: NDArray[np.float64], noise_fraction: float = 1.0, leak_centre: bool = False
) -> Callable[[np.random.Generator], tuple[float, float, float]]:
    """The refined central mean rebuilt from its blocks; returns (interval low, high, estimate).

    ``noise_fraction`` scales the final-stage noise (1/4: true ε ≈ 4 ε_final); with
    ``leak_centre`` the final interval is centred at the non-private clipped mean of stage 1
    (the noise of μ̂₁ is drawn but forgotten). Every budget share comes from the package's
    public rules (``refinement_share``), checked against the ledger.
    """
    n = values.shape[0]
    entries = REFINED_REFERENCE.privacy.entries
    eps_mid, eps_ref, eps_final = (e.epsilon for e in entries)
    delta = entries[0].delta
    tau = np.array([REFINED_TAU])
    share = refinement_share(
        n, tau, np.array([REFINED_W1]), REFINED_SHARE, REFINED_EPS, 1, DEFAULT_GAMMA
    )
    assert share > 0 and eps_ref == share * REFINED_EPS
    assert eps_mid == REFINED_SHARE * REFINED_EPS
    assert eps_final == (1.0 - REFINED_SHARE - share) * REFINED_EPS
    w1 = np.array([REFINED_W1])

    def run(rng: np.random.Generator) -> tuple[float, float, float]:
        midpoint, _ = central_midpoint(values, REFINED_BINS, eps_mid, delta, rng)
        clipped = np.clip(values - midpoint, -w1, w1)[:, None]
        rough = release_bounded_sum(clipped, w1, np.array([eps_ref]), rng)
        centre = midpoint + (float(np.mean(clipped)) if leak_centre else rough.total[0] / n)
        w2 = refined_half_width(tau, rough.step / (rough.rate * n), n, 1, DEFAULT_GAMMA)
        clipped = np.clip(values - centre, -w2, w2)[:, None]
        final = release_bounded_sum(clipped, w2, np.array([eps_final / noise_fraction]), rng)
        estimate = centre + final.total[0] / n
        return float(centre - w2[0]), float(centre + w2[0]), float(estimate)

    return run


def test_refined_pipeline_reproduces_the_package() -> None:
    assert REFINED_REFERENCE.variant == "improved (refined)"  # the refinement does run
    targets = [e.target for e in REFINED_REFERENCE.privacy.entries]
    assert targets == ["x: midpoint", "x: refinement", "x: mean"]
    assert REFINED_REFERENCE.privacy.epsilon == REFINED_EPS
    assert REFINED_REFERENCE.privacy.delta == REFINED_DELTA
    assert math.isclose(sum(e.epsilon for e in REFINED_REFERENCE.privacy.entries), REFINED_EPS)
    assert REFINED_W2 < REFINED_W1  # the point of the refinement: a narrower final interval
    for user in ("-far", "moderate"):
        values = _refined_values(REFINED_USERS[user])
        run = refined_pipeline(values)
        for seed in range(10):
            res = _refined_release(values, np.random.default_rng(seed))
            low, high, estimate = run(np.random.default_rng(seed))
            assert (low, high, estimate) == (res.interval[0], res.interval[1], res.estimate)


@cache
def _refined_outputs(user: str, noise_fraction: float, leak_centre: bool) -> NDArray[np.float64]:
    values = _refined_values(REFINED_USERS[user])
    seed = 450 + list(REFINED_USERS).index(user)
    if noise_fraction == 1.0 and not leak_centre:  # the package itself
        runs = REFINED_RUNS[user]

        def mechanism(rng: np.random.Generator) -> tuple[float, float]:
            res = _refined_release(values, rng)
            return _centre_and_estimate(res.interval[0], res.interval[1], res.estimate)

    else:
        broken = refined_pipeline(values, noise_fraction, leak_centre)
        runs = REFINED_BROKEN_RUNS

        def mechanism(rng: np.random.Generator) -> tuple[float, float]:
            return _centre_and_estimate(*broken(rng))

    return repeat(mechanism, runs, seed)


def _refined_events(
    outputs: NDArray[np.float64], pair: tuple[str, str]
) -> tuple[NDArray[np.bool_], list[str]]:
    (c_d, x_d), (c_d_prime, x_d_prime) = (_refined_noiseless(user) for user in pair)
    c_low, c_high = sorted((c_d, c_d_prime))
    x_low, x_high = sorted((x_d, x_d_prime))
    multiples = CENTRAL_MULTIPLES
    c_events, c_names = tail_events(outputs[:, 0], c_low, c_high, REFINED_B1, multiples, "c")
    x_events, x_names = tail_events(outputs[:, 1], x_low, x_high, REFINED_B, multiples)
    joint, joint_names = joint_tail_events(outputs, (c_low, x_low), (c_high, x_high), "cx")
    return (
        np.concatenate([c_events, x_events, joint], axis=1),
        c_names + x_names + joint_names,
    )


def _refined_audit(
    pair: tuple[str, str], noise_fraction: float = 1.0, leak_centre: bool = False
) -> EpsilonBound:
    events_d, names = _refined_events(_refined_outputs(pair[0], noise_fraction, leak_centre), pair)
    events_d_prime, _ = _refined_events(
        _refined_outputs(pair[1], noise_fraction, leak_centre), pair
    )
    return epsilon_lower_bound(
        events_d, events_d_prime, delta=REFINED_DELTA, confidence=CONFIDENCE, names=names
    )


@pytest.mark.parametrize(
    ("pair", "least"),
    [(("-far", "+far"), 0.75), (("zero", "+far"), 0.3), (("zero", "moderate"), 0.1)],
    ids=["far-both-ways", "moved-far-away", "moderate"],
)
def test_refined_winsorized_mean_audit(pair: tuple[str, str], least: float) -> None:
    bound = _refined_audit(pair)
    print(_report(f"refined central mean {pair}", bound, REFINED_EPS))
    assert bound.epsilon_lb <= REFINED_EPS, str(bound)
    # tightness (not a privacy claim): at most the ε the shift can reveal — (ε_ref + ε_final)
    # · shift / sensitivity = 0.95 ε, 0.475 ε and 0.24 ε — less the statistical margin;
    # measured 0.84-0.85 ε, 0.40 ε and 0.16-0.19 ε over four seeds
    assert bound.epsilon_lb > least * REFINED_EPS, str(bound)


@pytest.mark.parametrize(
    ("pair", "noise_fraction", "leak_centre"),
    [(("-far", "+far"), BROKEN_NOISE_FRACTION, False), (("zero", "+far"), 1.0, True)],
    ids=["final-noise/4", "non-private-centre"],
)
def test_refined_winsorized_mean_audit_has_power(
    pair: tuple[str, str], noise_fraction: float, leak_centre: bool
) -> None:
    bound = _refined_audit(pair, noise_fraction, leak_centre)
    print(_report(f"refined central mean, broken {pair}", bound, REFINED_EPS))
    assert bound.epsilon_lb > REFINED_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 3. Local 1-D Winsorized mean (pure ε-LDP)
# ---------------------------------------------------------------------------------------------
# n = 5 users, all at 0 except user 0; each user clips to m̂ ± w and adds their own lattice
# Laplace noise, and the analyst sees only the aggregate estimate (post-processing of the
# reports, so the ε-LDP claim bounds it). bound = 1 < 2τ' puts a single bin in the local
# histogram, so m̂ = 0 always and midpoint_share = 0.05 leaves ε_mean = 0.95 ε for the mean.
# The sum of n Laplace draws is not Laplace, so the best tail sits several noise scales out:
# the candidate events are the tails j = 0..7 noise scales beyond the noiseless estimates
# (Bonferroni over all 16). Same three pairs as centrally. The randomized-response part of the
# local midpoint is audited on its own (exactly) below.

LOCAL_N, LOCAL_EPS, LOCAL_BOUND, LOCAL_SHARE, LOCAL_TAU = 5, 4.0, 1.0, 0.05, 1.0
LOCAL_RUNS = {"-far": 20_000, "+far": 20_000, "zero": 10_000, "moderate": 10_000}
LOCAL_MULTIPLES = tuple(range(8))


def _local_values(user: float) -> NDArray[np.float64]:
    values = np.zeros(LOCAL_N)
    values[0] = user
    return values


def _local_release(values: NDArray[np.float64], rng: np.random.Generator):
    return dplong.winsorized_mean(
        values,
        epsilon=LOCAL_EPS,
        privacy="local",
        bound=LOCAL_BOUND,
        tau=LOCAL_TAU,
        midpoint_share=LOCAL_SHARE,
        random_state=rng,
    )


LOCAL_REFERENCE = _local_release(_local_values(0.0), np.random.default_rng(0))
LOCAL_W = float(LOCAL_REFERENCE.interval[1] - LOCAL_REFERENCE.interval[0]) / 2.0
LOCAL_B = float(LOCAL_REFERENCE.noise_scale) / LOCAL_N  # one user's noise, on the estimate
LOCAL_USERS = {"-far": -FAR, "+far": FAR, "zero": 0.0, "moderate": LOCAL_W / 2}
LOCAL_CENTRES = {"-far": -LOCAL_W, "+far": LOCAL_W, "zero": 0.0, "moderate": LOCAL_W / 2}


def local_pipeline(values: NDArray[np.float64], noise_fraction: float) -> Mechanism:
    """The local Winsorized mean rebuilt from its blocks; noise scale times noise_fraction."""
    eps_mid, eps_mean = (e.epsilon for e in LOCAL_REFERENCE.privacy.entries)
    bins_half = float(LOCAL_REFERENCE.bin_radius)
    w = np.array([LOCAL_W])

    def run(rng: np.random.Generator) -> float:
        midpoint = local_midpoint(values, bins_half, LOCAL_BOUND, eps_mid, rng)
        clipped = np.clip(values - midpoint, -w, w)[:, None]
        release = release_bounded_sum(
            clipped, w, np.array([eps_mean / noise_fraction]), rng, local=True
        )
        return float(midpoint + release.total[0] / values.shape[0])

    return run


def test_local_pipeline_reproduces_the_package() -> None:
    values = _local_values(-FAR)
    run = local_pipeline(values, 1.0)
    for seed in range(20):
        expected = _local_release(values, np.random.default_rng(seed)).estimate
        assert run(np.random.default_rng(seed)) == expected
    assert LOCAL_REFERENCE.privacy.epsilon == LOCAL_EPS
    assert LOCAL_REFERENCE.privacy.delta == 0.0


@cache
def _local_estimates(user: str, noise_fraction: float) -> NDArray[np.float64]:
    values = _local_values(LOCAL_USERS[user])
    seed = 500 + list(LOCAL_USERS).index(user)
    if noise_fraction == 1.0:
        mechanism: Mechanism = lambda rng: _local_release(values, rng).estimate  # noqa: E731
    else:
        mechanism = local_pipeline(values, noise_fraction)
    return repeat(mechanism, LOCAL_RUNS[user] if noise_fraction == 1.0 else BROKEN_RUNS, seed)


def _local_audit(pair: tuple[str, str], noise_fraction: float) -> EpsilonBound:
    return _mean_audit(
        lambda user: _local_estimates(user, noise_fraction),
        LOCAL_CENTRES,
        pair,
        LOCAL_N,
        LOCAL_B,
        LOCAL_MULTIPLES,
        0.0,
    )


@pytest.mark.parametrize(
    ("pair", "least"),
    [(("-far", "+far"), 0.4), (("zero", "+far"), 0.15), (("zero", "moderate"), 0.05)],
    ids=["far-both-ways", "moved-far-away", "moderate"],
)
def test_local_winsorized_mean_audit(pair: tuple[str, str], least: float) -> None:
    bound = _local_audit(pair, 1.0)
    print(_report(f"local mean {pair}", bound, LOCAL_EPS))
    assert bound.epsilon_lb <= LOCAL_EPS, str(bound)
    assert bound.epsilon_lb > least * LOCAL_EPS, str(bound)


def test_local_winsorized_mean_audit_has_power() -> None:
    bound = _local_audit(("-far", "+far"), BROKEN_NOISE_FRACTION)
    print(_report("local mean, noise/4", bound, LOCAL_EPS))
    assert bound.epsilon_lb > LOCAL_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 4. Randomized response (Alg 6): exact check and empirical audit
# ---------------------------------------------------------------------------------------------


def _odds_bounded(epsilon: float) -> bool:
    """Whether ``(1 - q) / q <= e^ε`` holds *exactly* for the package's q.

    q is a multiple of 2**-53 (checked), so the odds are the exact rational ``(2**53 - m)/m``.
    At q = 1/2 they are 1 <= e^ε. Otherwise they are at least ``1 + 2**-51``, so their log is
    at least 4e-16, while ``Decimal`` at 70 digits computes it with an absolute error below
    1e-66 (one correctly rounded division and ``ln``); ``Decimal(epsilon)`` is the float
    exactly. A margin of 1e-60 therefore makes the comparison rigorous.
    """
    q = flip_probability(epsilon)
    m = q * 2.0**53
    assert m == int(m) and 0 < m <= 2**52, "q must be a multiple of 2**-53 in (0, 1/2]"
    if int(m) == 2**52:
        return True
    with localcontext() as ctx:
        ctx.prec = 70
        log_odds = (Decimal(2**53 - int(m)) / Decimal(int(m))).ln()
        return log_odds + Decimal("1e-60") <= Decimal(epsilon)


# Several ε over the whole useful range, and far below it: small ε arise in the local histogram
# (ε/(4d) per bit) and once exposed a bug — q was computed with a shave of 2**-60, below the
# ~2**-52 float error of 1/(1 + exp(.)), so for ε below ~4.4e-4 the odds exceeded e^ε by up to
# ~4.4e-16 in log (e.g. ε = 1e-6, or ε = 3.34e-16 where they were e^{1.33 ε}).
RR_EXACT_EPSILONS = sorted(
    {1e-300, 2.0**-60, 2.0**-52, 3.3411149561187256e-16, 1e-10, 1e-6, 4.4e-4}
    | {0.001, 0.01, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 36.0, 40.0}
    | {float(e) for e in np.geomspace(1e-16, 1e-3, 400)}
    | {float(e) for e in np.geomspace(1e-3, 40.0, 300)}
)


def test_randomized_response_odds_are_exactly_bounded() -> None:
    bad = [e for e in RR_EXACT_EPSILONS if not _odds_bounded(e)]
    assert not bad, [(e, flip_probability(e)) for e in bad[:5]]
    # the report is never anti-correlated with the bit, and randomized_response draws exactly q
    assert all(flip_probability(e) <= 0.5 for e in RR_EXACT_EPSILONS)
    # not wastefully noisy: q exceeds 1 / (1 + e^ε) only by the documented shave of the
    # exponent (relative 2**-40 and absolute 2**-48) and the rounding up to the 2**-53 grid
    for e in RR_EXACT_EPSILONS:
        assert abs(flip_probability(e) - 1.0 / (1.0 + math.exp(e))) < 2.0**-48 + e * 2.0**-41


def test_randomized_response_draws_exactly_q() -> None:
    # the flip is ``integers(0, 2**53) < q 2**53``: with q on the 2**-53 grid its probability is
    # q exactly, so the exact bound above is the bound of the mechanism. Check the realised rate.
    epsilon, runs = 1.0, 400_000
    flips = randomized_response(np.zeros(runs, dtype=bool), epsilon, np.random.default_rng(7))
    q, hits = flip_probability(epsilon), int(flips.sum())
    alpha = (1.0 - CONFIDENCE) / 2
    assert clopper_pearson_lower(hits, runs, alpha) <= q <= clopper_pearson_upper(hits, runs, alpha)


RR_RUNS = 400_000


def _rr_audit(
    flip: Callable[[NDArray[np.bool_], np.random.Generator], NDArray[np.bool_]],
) -> EpsilonBound:
    # One user, one bit: D has bit 0, D' has bit 1. Events {report = 1} and {report = 0}
    # (K = 2, Bonferroni); their likelihood ratio is (1 - q)/q, i.e. e^ε for a correct RR.
    reports_d = flip(np.zeros(RR_RUNS, dtype=bool), np.random.default_rng(601))
    reports_d_prime = flip(np.ones(RR_RUNS, dtype=bool), np.random.default_rng(602))
    return epsilon_lower_bound(
        np.stack([reports_d, ~reports_d], axis=1),
        np.stack([reports_d_prime, ~reports_d_prime], axis=1),
        delta=0.0,
        confidence=CONFIDENCE,
        names=["report 1", "report 0"],
    )


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_randomized_response_audit(epsilon: float) -> None:
    bound = _rr_audit(lambda bits, rng: randomized_response(bits, epsilon, rng))
    print(_report("randomized response", bound, epsilon))
    assert bound.epsilon_lb <= epsilon, str(bound)
    assert bound.epsilon_lb > 0.9 * epsilon, str(bound)  # RR is tight: the audit sees ~all of ε


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_randomized_response_audit_has_power(epsilon: float) -> None:
    # Broken: flips with a quarter of the correct probability (too little noise).
    q = flip_probability(epsilon) * BROKEN_NOISE_FRACTION

    def broken(bits: NDArray[np.bool_], rng: np.random.Generator) -> NDArray[np.bool_]:
        return bits ^ (rng.random(bits.shape) < q)

    bound = _rr_audit(broken)
    print(_report("randomized response, flip/4", bound, epsilon))
    assert bound.epsilon_lb > epsilon, str(bound)
