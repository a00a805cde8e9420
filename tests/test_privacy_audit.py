"""Privacy audits (docs/design §5.4) of the paper's mechanisms: the stable histogram (Alg 2),
randomized response (Alg 6) and the noisy Winsorized mean as published (``release_paper``:
Alg 3-5 central, Alg 8-9 local), which ``variant="theory"`` and the local model run.

Every audit follows the same recipe (helpers in ``tests/audit.py``; the release engine's own
mechanisms are audited in ``test_privacy_audit_engine.py``, whole pipelines in
``test_privacy_audit_default.py`` and the model files):

1. two neighbouring data sets D, D' that differ in *one user* (all of that user's data is
   replaced), among them adversarial pairs where the user moves very far away, to ±inf or NaN;
2. many runs of the mechanism on each, with fixed seeds;
3. a small set of distinguishing events fixed *before* the runs from theory (the tails where the
   likelihood ratio of lattice-Laplace / geometric noise is exactly ``e^ε``). We do not pick
   events from the data: the confidence is Bonferroni-corrected over every event, both
   orderings and both one-sided Clopper–Pearson bounds, so the max over events is unbiased;
4. ``ε_lb = log((p_lo(S; D) - δ) / p_hi(S; D'))`` at family-wise confidence
   :data:`~audit.CONFIDENCE`, maximised over events and orderings, and the assertion
   ``ε_lb <= claimed ε``;
5. a POWER check: the same audit (same data, events and confidence) against a deliberately
   broken variant built from the package's own building blocks — noise with 1/4 of the
   correct scale, a histogram without its threshold, randomized response that flips too
   rarely — must report ``ε_lb > ε``. The broken variants are checked to reproduce the package
   bit for bit when un-broken, so the audit is shown to bite on *this* code, not a look-alike.

With fixed seeds the tests are deterministic; the confidence level says how likely a correct
mechanism would be to fail for a fresh seed (at most 1 - CONFIDENCE per audit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, localcontext

import numpy as np
import pytest
from audit import (
    BROKEN_NOISE_FRACTION,
    CONFIDENCE,
    FAR,
    EpsilonBound,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    fast_compose,  # noqa: F401 (a fixture, used through pytestmark)
    repeat,
    report,
    tail_events,
)
from numpy.typing import NDArray
from session_cache import session_cache

import dplong.privacy.local as local_module
from dplong.privacy.engine import Release
from dplong.privacy.histogram import (
    Histogram,
    bin_index,
    stable_histogram,
    stable_histogram_threshold,
)
from dplong.privacy.interval import central_midpoint, local_midpoint
from dplong.privacy.local import _label_shares, _tail_shares
from dplong.privacy.noise import (
    flip_probability,
    geometric_rate,
    randomized_labels,
    randomized_response,
    release_bounded_sum,
    two_sided_geometric,
)
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.winsorized import release_paper

# The audits pick n and ε for distinguishing power, not for a reliable midpoint (the other users
# sit at one point, so the fallback is harmless): the fragile-midpoint warning is expected here.
pytestmark = [
    pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning"),
    pytest.mark.usefixtures("fast_compose"),  # exact memo of the budget arithmetic: speed only
]

Mechanism = Callable[[np.random.Generator], object]
_report = report


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


@session_cache
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


@session_cache
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


@session_cache
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
# 2. The paper's central Winsorized mean (release_paper, Alg 3-5, variant="theory")
# ---------------------------------------------------------------------------------------------
# n = 200 users, all at 0 except user 0; τ = 1 (stated), ε = 2, δ = 1e-3. Alg 5 splits each
# column's budget between the stable-histogram midpoint (bins of half-width τ, (ε, δ/2)) and the
# mean (ε) so that their composition is the request: ε = 1 each (checked on the ledger). With
# the others in bin 0 the midpoint is 0 whether the histogram succeeds (mode bin 0: user 0's own
# bin has one user and survives with probability <= δ/2, never as the mode) or fails (fallback
# 0), so the output is estimate = (sum of values clipped to ±3τ + lattice Laplace noise) / n.
# Pairs (D, D'):
#   * far:      user at -inf vs +FAR — both clipped, the shift is the full sensitivity 6τ/n;
#   * missing:  user NaN (no statistic: the centre, in no bin) vs +FAR — shift 3τ/n (ε/2);
#   * centre:   user at 0 vs NaN — the same output law (the histogram's count of bin 0 moves,
#     never its mode): ε_lb ≈ 0.
# Events: the tails {x >= c' + j b} and {x <= c - j b} (j = 0, 1), c, c' the noiseless estimates
# on D, D' and b the noise scale. For lattice Laplace noise the likelihood ratio on every upper
# tail above c' is exactly e^{ε_mean shift / 6τ}: j = 0 is the optimal event.

CENTRAL_N, CENTRAL_EPS, CENTRAL_DELTA, CENTRAL_TAU = 200, 2.0, 1e-3, 1.0
#: runs per data set (~0.25 ms per release): the far pair carries the tight audit
CENTRAL_RUNS = {"-inf": 12_000, "+far": 12_000, "zero": 6_000, "nan": 6_000}
BROKEN_RUNS = 4_000  # the broken variant is four times off: a few thousand runs show it
CENTRAL_MULTIPLES = (0, 1)
CENTRAL_USERS = {"-inf": -np.inf, "+far": FAR, "zero": 0.0, "nan": np.nan}


def _central_values(user: str) -> NDArray[np.float64]:
    values = np.zeros((CENTRAL_N, 1))
    values[0, 0] = CENTRAL_USERS[user]
    return values


CENTRAL_OPTIONS = ReleaseOptions.check(
    CENTRAL_N,
    epsilon=CENTRAL_EPS,
    delta=CENTRAL_DELTA,
    privacy="central",
    bound=None,
    d=1,
    variant="theory",
)


def _central_release(values: NDArray[np.float64], rng: np.random.Generator) -> Release:
    return release_paper(
        values,
        tau=np.array([CENTRAL_TAU]),
        tau_bins=np.array([CENTRAL_TAU]),  # unused centrally: the bins have half-width τ
        names=("x",),
        options=CENTRAL_OPTIONS,
        rng=rng,
    )


CENTRAL_REFERENCE = _central_release(_central_values("zero"), np.random.default_rng(0))
CENTRAL_W = 3.0 * CENTRAL_TAU  # Alg 3's interval m̂ ± 3τ
CENTRAL_B = float(CENTRAL_REFERENCE.noise_scale[0])  # Laplace scale of the noise on the estimate


def _central_noiseless(user: str) -> float:
    """The estimate without noise: m̂ = 0, the values clipped to ±3τ, NaN at the centre."""
    value = CENTRAL_USERS[user]
    return 0.0 if math.isnan(value) else float(np.clip(value, -CENTRAL_W, CENTRAL_W)) / CENTRAL_N


def central_pipeline(values: NDArray[np.float64], noise_fraction: float) -> Mechanism:
    """Alg 3-4 rebuilt from their blocks; the mean's noise scale times noise_fraction."""
    eps_mid, eps_mean = (e.epsilon for e in CENTRAL_REFERENCE.privacy.entries)
    delta = CENTRAL_REFERENCE.privacy.entries[0].delta
    w = np.array([CENTRAL_W])
    column = values[:, 0]

    def run(rng: np.random.Generator) -> float:
        midpoint, _ = central_midpoint(
            column[np.isfinite(column)], CENTRAL_TAU, eps_mid, delta, rng, CENTRAL_N
        )
        with np.errstate(invalid="ignore"):
            clipped = np.clip(values - midpoint, -w, w)
        clipped = np.where(np.isnan(clipped), 0.0, clipped)
        release = release_bounded_sum(clipped, w, np.array([eps_mean / noise_fraction]), rng)
        return float(midpoint + release.total[0] / CENTRAL_N)

    return run


def test_central_pipeline_reproduces_the_package() -> None:
    ledger = CENTRAL_REFERENCE.privacy
    # the histogram's δ/2 is all the δ spent (the pure mean needs none): within the request
    assert (ledger.epsilon, ledger.delta) == (CENTRAL_EPS, CENTRAL_DELTA / 2)
    assert [e.stage for e in ledger.entries] == ["midpoint", "mean"]
    assert [e.epsilon for e in ledger.entries] == [CENTRAL_EPS / 2] * 2  # the split of Alg 5
    assert ledger.entries[0].delta == CENTRAL_DELTA / 2
    # sensitivity 6τ/n on the mean (never less; lattice rounding adds < 0.05 %)
    sensitivity = ledger.entries[1].sensitivity
    assert 2 * CENTRAL_W / CENTRAL_N <= sensitivity <= 2 * CENTRAL_W / CENTRAL_N * (1 + 1e-3)
    assert CENTRAL_REFERENCE.variant == "theory"
    for user in ("-inf", "+far", "nan"):
        values = _central_values(user)
        run = central_pipeline(values, 1.0)
        for seed in range(10):
            expected = _central_release(values, np.random.default_rng(seed)).estimate[0]
            assert run(np.random.default_rng(seed)) == expected


@session_cache
def _central_estimates(user: str, noise_fraction: float) -> NDArray[np.float64]:
    values = _central_values(user)
    seed = 400 + list(CENTRAL_USERS).index(user)
    if noise_fraction == 1.0:

        def mechanism(rng: np.random.Generator) -> float:
            return float(_central_release(values, rng).estimate[0])

        return repeat(mechanism, CENTRAL_RUNS[user], seed)
    return repeat(central_pipeline(values, noise_fraction), BROKEN_RUNS, seed)


def _mean_audit(
    estimates: Callable[[str], NDArray[np.float64]],
    noiseless: Callable[[str], float],
    pair: tuple[str, str],
    b: float,
    multiples: tuple[int, ...],
    delta: float,
) -> EpsilonBound:
    d, d_prime = pair
    low, high = sorted((noiseless(d), noiseless(d_prime)))
    events_d, names = tail_events(estimates(d), low, high, b, multiples)
    events_d_prime, _ = tail_events(estimates(d_prime), low, high, b, multiples)
    return epsilon_lower_bound(
        events_d, events_d_prime, delta=delta, confidence=CONFIDENCE, names=names
    )


def _central_audit(pair: tuple[str, str], noise_fraction: float) -> EpsilonBound:
    return _mean_audit(
        lambda user: _central_estimates(user, noise_fraction),
        _central_noiseless,
        pair,
        CENTRAL_B,
        CENTRAL_MULTIPLES,
        CENTRAL_DELTA,
    )


@pytest.mark.parametrize(
    ("pair", "least", "most"),
    [
        (("-inf", "+far"), 0.4, 0.5),
        (("nan", "+far"), 0.15, 0.5),
        (("zero", "nan"), -math.inf, 0.1),
    ],
    ids=["inf-vs-far", "missing-vs-far", "centre-vs-missing"],
)
def test_central_paper_mean_audit(pair: tuple[str, str], least: float, most: float) -> None:
    bound = _central_audit(pair, 1.0)
    print(_report(f"paper central mean {pair}", bound, CENTRAL_EPS))
    assert bound.epsilon_lb <= CENTRAL_EPS, str(bound)
    # tightness (not a privacy claim): the estimate shows the mean's ε = ε/2 times shift / 6τ
    # (1, 1/2, 0), less the statistical margin; never more than the mean's share
    assert least * CENTRAL_EPS < bound.epsilon_lb <= most * CENTRAL_EPS, str(bound)


def test_central_paper_mean_audit_has_power() -> None:
    bound = _central_audit(("-inf", "+far"), BROKEN_NOISE_FRACTION)  # true ε ≈ 4 · 1 + 1
    print(_report("paper central mean, noise/4", bound, CENTRAL_EPS))
    assert bound.epsilon_lb > CENTRAL_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 3. The paper's local Winsorized mean (release_paper, Alg 8-9, pure ε-LDP)
# ---------------------------------------------------------------------------------------------
# n = 5 users, all at 0 except user 0; each user clips to m̂ ± w and adds their own lattice
# Laplace noise, and the analyst sees only the aggregate estimate (post-processing of the
# reports, so the ε-LDP claim bounds it). τ = τ' = 1 and bound B = 1.9 < 2τ' put a single bin
# in the randomized-response histogram, so m̂ = 0 always (B = 1.9, not 1: the estimate is
# projected onto ±B, and at ±1 the projection hid enough of the tails that the tightness check
# below missed its bar, 0.585 against 0.6); w = τ + 2τ' = 3 (§7.1.2) and the ε = 4 is
# split evenly, ε = 2 for the mean (checked on the ledger). The sum of n Laplace draws is not
# Laplace, so the best tail sits several noise scales out: the candidate events are the tails
# j = 0..7 noise scales beyond the noiseless estimates (Bonferroni over all 16). The
# randomized-response part of the local midpoint is audited on its own (exactly) below.

LOCAL_N, LOCAL_EPS, LOCAL_BOUND, LOCAL_TAU = 5, 4.0, 1.9, 1.0
#: runs per data set (~0.3 ms per release)
LOCAL_RUNS = {"-far": 12_000, "+inf": 12_000, "zero": 6_000, "nan": 6_000}
LOCAL_MULTIPLES = tuple(range(8))
LOCAL_USERS = {"-far": -FAR, "+inf": np.inf, "zero": 0.0, "nan": np.nan}
LOCAL_OPTIONS = ReleaseOptions.check(
    LOCAL_N, epsilon=LOCAL_EPS, delta=None, privacy="local", bound=LOCAL_BOUND, d=1
)
LOCAL_W = LOCAL_TAU + 2.0 * LOCAL_TAU  # τ + 2τ'


def _local_values(user: str) -> NDArray[np.float64]:
    values = np.zeros((LOCAL_N, 1))
    values[0, 0] = LOCAL_USERS[user]
    return values


def _local_release(values: NDArray[np.float64], rng: np.random.Generator) -> Release:
    return release_paper(
        values,
        tau=np.array([LOCAL_TAU]),
        tau_bins=np.array([LOCAL_TAU]),
        names=("x",),
        options=LOCAL_OPTIONS,
        rng=rng,
    )


LOCAL_REFERENCE = _local_release(_local_values("zero"), np.random.default_rng(0))
LOCAL_B = float(LOCAL_REFERENCE.noise_scale[0]) / LOCAL_N  # one user's noise, on the estimate


def _local_noiseless(user: str) -> float:
    value = LOCAL_USERS[user]
    return 0.0 if math.isnan(value) else float(np.clip(value, -LOCAL_W, LOCAL_W)) / LOCAL_N


def local_pipeline(values: NDArray[np.float64], noise_fraction: float) -> Mechanism:
    """Alg 8-9 rebuilt from their blocks; every user's noise scale times noise_fraction."""
    eps_mid, eps_mean = (e.epsilon for e in LOCAL_REFERENCE.privacy.entries)
    w = np.array([LOCAL_W])
    column = values[:, 0]

    def run(rng: np.random.Generator) -> float:
        midpoint = local_midpoint(
            column[np.isfinite(column)], LOCAL_TAU, LOCAL_BOUND, eps_mid, rng, LOCAL_N
        )
        with np.errstate(invalid="ignore"):
            clipped = np.clip(values - midpoint, -w, w)
        clipped = np.where(np.isnan(clipped), 0.0, clipped)
        release = release_bounded_sum(
            clipped, w, np.array([eps_mean / noise_fraction]), rng, local=True
        )
        # projected onto the public ±B, as the package does (post-processing)
        return float(np.clip(midpoint + release.total[0] / LOCAL_N, -LOCAL_BOUND, LOCAL_BOUND))

    return run


def test_local_pipeline_reproduces_the_package() -> None:
    ledger = LOCAL_REFERENCE.privacy
    assert (ledger.epsilon, ledger.delta, ledger.model) == (LOCAL_EPS, 0.0, "local")
    assert [e.epsilon for e in ledger.entries] == [LOCAL_EPS / 2] * 2
    # one user's sensitivity 2w (never less; lattice rounding adds < 0.05 %)
    assert 2 * LOCAL_W <= ledger.entries[1].sensitivity <= 2 * LOCAL_W * (1 + 1e-3)
    np.testing.assert_array_equal(LOCAL_REFERENCE.interval, [[-LOCAL_W, LOCAL_W]])
    for user in ("-far", "+inf", "nan"):
        values = _local_values(user)
        run = local_pipeline(values, 1.0)
        for seed in range(10):
            expected = _local_release(values, np.random.default_rng(seed)).estimate[0]
            assert run(np.random.default_rng(seed)) == expected


@session_cache
def _local_estimates(user: str, noise_fraction: float) -> NDArray[np.float64]:
    values = _local_values(user)
    seed = 500 + list(LOCAL_USERS).index(user)
    if noise_fraction == 1.0:

        def mechanism(rng: np.random.Generator) -> float:
            return float(_local_release(values, rng).estimate[0])

        return repeat(mechanism, LOCAL_RUNS[user], seed)
    return repeat(local_pipeline(values, noise_fraction), BROKEN_RUNS, seed)


def _local_audit(pair: tuple[str, str], noise_fraction: float) -> EpsilonBound:
    return _mean_audit(
        lambda user: _local_estimates(user, noise_fraction),
        _local_noiseless,
        pair,
        LOCAL_B,
        LOCAL_MULTIPLES,
        0.0,
    )


@pytest.mark.parametrize(
    ("pair", "least"),
    [(("-far", "+inf"), 0.15), (("zero", "nan"), -math.inf)],
    ids=["far-vs-inf", "centre-vs-missing"],
)
def test_local_paper_mean_audit(pair: tuple[str, str], least: float) -> None:
    bound = _local_audit(pair, 1.0)
    print(_report(f"paper local mean {pair}", bound, LOCAL_EPS))
    assert bound.epsilon_lb <= LOCAL_EPS, str(bound)
    # tightness (not a privacy claim): at most the mean's ε/2 shows, blurred by the other
    # users' noise; a missing value is the centre (nothing)
    assert bound.epsilon_lb > least * LOCAL_EPS, str(bound)
    if pair == ("zero", "nan"):
        assert bound.epsilon_lb < 0.1 * LOCAL_EPS, str(bound)


#: The local broken variant removes 7/8 of every user's noise (true ε of the mean 16): with a
#: quarter (true 8 + 2 against the claimed 4) the sum of five users' noise hides the excess from
#: an audit of this size (measured ε_lb ≈ 3.6 at 4,000 runs).
LOCAL_BROKEN_FRACTION = 1.0 / 8.0


def test_local_paper_mean_audit_has_power() -> None:
    bound = _local_audit(("-far", "+inf"), LOCAL_BROKEN_FRACTION)
    print(_report("paper local mean, noise/8", bound, LOCAL_EPS))
    assert bound.epsilon_lb > LOCAL_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 4. Randomized response (Alg 6): exact check and empirical audit
# ---------------------------------------------------------------------------------------------


def _odds_bounded(epsilon: float, categories: int = 2) -> bool:
    """Whether ``(1 - (k-1) q) / q <= e^ε`` holds *exactly* for the package's q of k labels.

    q is a multiple of 2**-53 (checked), so the odds are the exact rational
    ``(2**53 - (k-1) m)/m``. At q = 1/k they are 1 <= e^ε. Otherwise they are at least
    ``1 + 2**-51``, so their log is at least 4e-16, while ``Decimal`` at 70 digits computes it
    with an absolute error below 1e-66 (one correctly rounded division and ``ln``);
    ``Decimal(epsilon)`` is the float exactly. A margin of 1e-60 therefore makes the
    comparison rigorous.
    """
    q = flip_probability(epsilon, categories)
    if q == 1.0 / categories:  # drawn uniformly, whatever the label (randomized_labels)
        return True
    m = q * 2.0**53
    assert m == int(m) and 0 < m * categories <= 2**53, "q must be a multiple of 2**-53 in (0, 1/k]"
    kept = 2**53 - (categories - 1) * int(m)
    if kept == int(m):
        return True
    with localcontext() as ctx:
        ctx.prec = 70
        log_odds = (Decimal(kept) / Decimal(int(m))).ln()
        return log_odds + Decimal("1e-60") <= Decimal(epsilon)


# Several ε over the whole useful range, and far below it: small ε arise in the local histogram
# (ε/(4d) per bit) and once exposed a bug — q was computed with a shave of 2**-60, below the
# ~2**-52 float error of 1/(1 + exp(.)), so for ε below ~4.4e-4 the odds exceeded e^ε by up to
# ~4.4e-16 in log (e.g. ε = 1e-6, or ε = 3.34e-16 where they were e^{1.33 ε}).
RR_EXACT_EPSILONS = sorted(
    {1e-300, 2.0**-60, 2.0**-52, 3.3411149561187256e-16, 1e-10, 1e-6, 4.4e-4}
    | {0.001, 0.01, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 36.0, 40.0}
    # e^ε overflows from about 709.8: q once became 0, every report the truth (an audit)
    | {709.0, 710.0, 1e4, 1e300}
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
        ideal = 1.0 / (1.0 + math.exp(min(e, 700.0)))  # beyond, the one unit of the grid
        assert abs(flip_probability(e) - ideal) < 2.0**-48 + e * 2.0**-41
    assert flip_probability(1e300) == flip_probability(1e300, 3) == 2.0**-53


def test_k_ary_randomized_response_odds_are_exactly_bounded() -> None:
    # the local tail group's three labels (local.py, ``_beyond_normal``)
    bad = [e for e in RR_EXACT_EPSILONS if not _odds_bounded(e, 3)]
    assert not bad, [(e, flip_probability(e, 3)) for e in bad[:5]]
    assert all(flip_probability(e, 3) <= 1.0 / 3.0 for e in RR_EXACT_EPSILONS)
    for e in RR_EXACT_EPSILONS:  # not wastefully noisy, as for two labels
        ideal = 1.0 / (2.0 + math.exp(min(e, 700.0)))
        assert abs(flip_probability(e, 3) - ideal) < 2.0**-48 + e * 2.0**-41


def test_k_ary_randomized_response_draws_exactly_q() -> None:
    # a move is ``integers(0, 2**53) < 2 q 2**53`` and its new label uniform over the other
    # two: each other label has probability q exactly. Check both realised rates.
    epsilon, runs = 1.0, 400_000
    reports = randomized_labels(
        np.zeros(runs, dtype=np.int64), 3, epsilon, np.random.default_rng(8)
    )
    q, alpha = flip_probability(epsilon, 3), (1.0 - CONFIDENCE) / 4
    for label in (1, 2):
        hits = int((reports == label).sum())
        assert (
            clopper_pearson_lower(hits, runs, alpha)
            <= q
            <= clopper_pearson_upper(hits, runs, alpha)
        )


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
    return _binary_audit(reports_d, reports_d_prime, "report")


def _binary_audit(d: NDArray[np.bool_], d_prime: NDArray[np.bool_], what: str) -> EpsilonBound:
    """The ε lower bound from a binary outcome's runs on D and D': events {1} and {0}."""
    return epsilon_lower_bound(
        np.stack([d, ~d], axis=1),
        np.stack([d_prime, ~d_prime], axis=1),
        delta=0.0,
        confidence=CONFIDENCE,
        names=[f"{what} 1", f"{what} 0"],
    )


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_randomized_response_audit(epsilon: float) -> None:
    bound = _rr_audit(lambda bits, rng: randomized_response(bits, epsilon, rng))
    print(_report("randomized response", bound, epsilon))
    assert bound.epsilon_lb <= epsilon, str(bound)
    assert bound.epsilon_lb > 0.9 * epsilon, str(bound)  # RR is tight: the audit sees ~all of ε


#: Runs of the local count group's audit: one user a run, the share released once each.
COUNT_RUNS = 20_000


def _count_audit(epsilon: float) -> EpsilonBound:
    # The default local release's count group (local.py, ``_label_shares``) on one
    # user, as the package runs it: D has no statistic (NaN), D' has one. Events {share above
    # its midpoint} and {below} (K = 2, Bonferroni); a correct randomized response of the
    # bit shows e^ε between them, and the debiasing is post-processing.
    def shares(value: float, seed: int) -> NDArray[np.bool_]:
        rng = np.random.default_rng(seed)
        return (
            np.array(
                [
                    _label_shares(np.array([int(value == value)]), 2, epsilon, rng)[0][1]
                    for _ in range(COUNT_RUNS)
                ]
            )
            > 0.5
        )

    return _binary_audit(shares(np.nan, 611), shares(1.0, 612), "share above 0.5:")


def test_local_count_group_audit() -> None:
    bound = _count_audit(1.0)
    print(_report("local count group", bound, 1.0))
    assert 0.8 < bound.epsilon_lb <= 1.0, str(bound)  # randomized response: nearly all of ε


def _broken_labels(
    labels: NDArray[np.int64], categories: int, epsilon: float, rng: np.random.Generator
) -> NDArray[np.int64]:
    """k-ary randomized response broken: labels move with a quarter of the correct chance."""
    q = flip_probability(epsilon, categories) * BROKEN_NOISE_FRACTION
    moved = rng.random(labels.shape) < q * (categories - 1)
    shift = 1 + rng.integers(0, categories - 1, size=labels.shape)
    return np.where(moved, (labels + shift) % categories, labels)


def test_local_count_group_audit_has_power(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "randomized_labels", _broken_labels)
    bound = _count_audit(1.0)
    print(_report("local count group, flip/4", bound, 1.0))
    assert bound.epsilon_lb > 1.0, str(bound)


def _tail_group_audit(epsilon: float) -> EpsilonBound:
    # The default local release's tail group (local.py, ``_tail_shares``) on one user, as the
    # package runs it: D's value lies within the clip (0 about 0, clip 1), D''s beyond the
    # rung (100 past 3.5). Events {the released share beyond the rung above 0.5: the user
    # reported beyond} and its complement (K = 2, Bonferroni): a correct k-ary randomized
    # response shows e^ε on the first; the shares and the verdict on them are post-processing.
    def beyond(value: float, seed: int) -> NDArray[np.bool_]:
        rng = np.random.default_rng(seed)
        ends = np.array([1.0, 3.5])
        return (
            np.array(
                [
                    _tail_shares(np.array([value]), 0.0, ends, epsilon, rng)[0][1]
                    for _ in range(COUNT_RUNS)
                ]
            )
            > 0.5
        )

    return _binary_audit(beyond(0.0, 621), beyond(100.0, 622), "share beyond the rung above 0.5:")


def test_local_tail_group_audit() -> None:
    bound = _tail_group_audit(1.0)
    print(_report("local tail group", bound, 1.0))
    assert 0.8 < bound.epsilon_lb <= 1.0, str(bound)  # randomized response: nearly all of ε


def test_local_tail_group_audit_has_power(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_module, "randomized_labels", _broken_labels)
    bound = _tail_group_audit(1.0)
    print(_report("local tail group, move/4", bound, 1.0))
    assert bound.epsilon_lb > 1.0, str(bound)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_randomized_response_audit_has_power(epsilon: float) -> None:
    # Broken: flips with a quarter of the correct probability (too little noise).
    q = flip_probability(epsilon) * BROKEN_NOISE_FRACTION

    def broken(bits: NDArray[np.bool_], rng: np.random.Generator) -> NDArray[np.bool_]:
        return bits ^ (rng.random(bits.shape) < q)

    bound = _rr_audit(broken)
    print(_report("randomized response, flip/4", bound, epsilon))
    assert bound.epsilon_lb > epsilon, str(bound)
