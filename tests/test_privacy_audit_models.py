"""Privacy audits (DESIGN.md §5.4) of ``clipped_mean`` and of whole model fits, user-level.

Same recipe as ``test_privacy_audit.py`` (helpers in ``tests/audit.py``): two neighbouring inputs
D, D' that differ in *one user*; many seeded runs on each; a few events fixed *before* the runs
from theory (the tails beyond the noiseless outputs, where the likelihood ratio of lattice
Laplace noise reaches ``e^{ε shift / sensitivity}``), Bonferroni-corrected over every event,
both orderings and both one-sided Clopper–Pearson bounds; and the assertion that the empirical
lower bound ``ε_lb`` at family-wise confidence :data:`CONFIDENCE` does not exceed the ε the
ledger claims.

1. :func:`dplong.privacy.bounded.clipped_mean` (Alg 1 on a *public* interval, basic
   composition over columns), central and local, with a POWER check: a replica built from
   :func:`~dplong.privacy.noise.release_bounded_sum` that reproduces ``clipped_mean`` draw for
   draw, then broken to a quarter of the noise scale, must be flagged (``ε_lb > ε``).
2. End-to-end fits of :class:`dplong.RandomEffectsLocation` and :class:`dplong.LongitudinalOLS`
   on DataFrames that differ by *replacing all rows of one user* (the unit of privacy), among
   them adversarial replacements: the user moved very far away, given extreme regressors, a
   singular design, a different number of rows. The audited output is everything the results
   release that depends on the data: the parameters and the centres of the projection
   intervals (the refinement's rough means), jointly.

In the model audits all other users are identical, with every per-user statistic 0, so the
distinguishing power sits entirely in the replaced user; n is small (100 users of 3 rows) so
that one user moves the outputs by a visible fraction of the noise, and ε is large (4) so that
the audit can see a good part of it. The file runs in about 45 s on one idle core.

With fixed seeds the tests are deterministic; for a correct mechanism a fresh seed would fail an
audit with probability at most ``1 - CONFIDENCE``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import cache

import numpy as np
import pandas as pd
import pytest
from audit import EpsilonBound, epsilon_lower_bound, joint_tail_events, repeat, tail_events
from dplong.privacy.bounded import clipped_mean
from numpy.typing import NDArray

from dplong import LongitudinalOLS, RandomEffectsLocation
from dplong.privacy.accounting import PrivacyLedger
from dplong.privacy.noise import release_bounded_sum
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.results import PanelResults

# The model audits use n = 100 users whose statistics all sit at one point: the midpoint's
# histogram is chosen for the audit, not for a reliable midpoint, and the fragile-midpoint
# warning (which depends on the public n, ε, δ only) may fire for such small n. It is expected.
pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")

#: Family-wise one-sided confidence of every ε lower bound (Bonferroni inside each audit).
CONFIDENCE = 0.99
#: The broken replica adds noise with this fraction of the correct scale.
BROKEN_NOISE_FRACTION = 0.25
FAR = 1e6  # "moved very far away": far outside every interval and range used here


def _report(name: str, bound: EpsilonBound, claimed: float) -> str:
    return f"{name}: {bound} (claimed eps={claimed:g})"


#: A joint tail over the outputs that move by at least this many noise scales between D and D'
#: is added to the joint tail over all outputs: an output that hardly moves only halves the
#: hits of a joint event and adds nothing to its likelihood ratio.
MOVING_SHIFT = 0.1


def _audit_events(
    outputs: NDArray[np.float64],
    low: NDArray[np.float64],
    high: NDArray[np.float64],
    steps: Sequence[float],
    labels: Sequence[str],
    multiples: Sequence[int],
) -> tuple[NDArray[np.bool_], list[str]]:
    """Tails of every output (``j`` steps beyond the noiseless values) and joint tails.

    ``low``/``high`` are the smaller/larger noiseless values of each output on the two data
    sets and ``steps`` the Laplace scales of their noise: all public or computed from the two
    data sets, never from the runs. For lattice Laplace noise the ratio of the upper tails
    ``P(x >= t; high) / P(x >= t; low)`` is the same for every ``t >= high``, so ``j = 0``
    (most hits) is the optimal single-output event; the joint tails (over all outputs, and
    over those that move by :data:`MOVING_SHIFT` noise scales or more) add up the privacy
    losses of outputs with independent noise that move in the same direction.
    """
    columns, names = [], []
    for k, label in enumerate(labels):
        events, event_names = tail_events(
            outputs[:, k], low[k], high[k], steps[k], multiples, label
        )
        columns.append(events)
        names += event_names
    groups = [list(range(len(labels)))]
    moving = [k for k in groups[0] if high[k] - low[k] >= MOVING_SHIFT * steps[k]]
    if 2 <= len(moving) < len(labels):
        groups.append(moving)
    for group in groups:
        joint, joint_names = joint_tail_events(
            outputs[:, group], low[group], high[group], [labels[k] for k in group]
        )
        columns.append(joint)
        names += joint_names
    return np.concatenate(columns, axis=1), names


def _pair_bound(
    outputs: tuple[NDArray[np.float64], NDArray[np.float64]],
    noiseless: tuple[Sequence[float], Sequence[float]],
    steps: Sequence[float],
    labels: Sequence[str],
    delta: float,
    multiples: Sequence[int] = (0,),
) -> EpsilonBound:
    """ε_lb of one pair: the same events, fixed from the noiseless values, on both data sets."""
    low = np.minimum(np.asarray(noiseless[0]), np.asarray(noiseless[1]))
    high = np.maximum(np.asarray(noiseless[0]), np.asarray(noiseless[1]))
    events_d, names = _audit_events(outputs[0], low, high, steps, labels, multiples)
    events_d_prime, _ = _audit_events(outputs[1], low, high, steps, labels, multiples)
    return epsilon_lower_bound(
        events_d, events_d_prime, delta=delta, confidence=CONFIDENCE, names=names
    )


# ---------------------------------------------------------------------------------------------
# 1. clipped_mean: Alg 1 on a public interval, central and local
# ---------------------------------------------------------------------------------------------
# Two columns with different public intervals, ε = 2 in total: basic composition gives each
# column ε/2 with noise calibrated to its sensitivity 2r_j (r_j the interval's half-width; /n on
# the mean centrally). The other users hold fixed values, some outside the interval (clipped
# like anyone's); user 0 takes one of
#   * "-far" / "+far": (∓FAR, ∓FAR), far outside both intervals — clipped to the ends, so the
#     pair moves each column by the full sensitivity 2r_j: each column's tail sees ε/2 and the
#     joint tail sees the whole ε (the composition claim itself is audited, tightly);
#   * "centre" vs "+far": moved far away from the centre: r_j per column, ε/2 jointly;
#   * "centre" vs "inside": moved *inside* the interval by r_j/2: ε/4 jointly;
#   * "missing" (identified False: the statistic does not exist, the user contributes the
#     centre) vs "+far": must be exactly as distinguishable as "centre" vs "+far".
# The audit fails if the noise is too small for the claimed ε (the power check shows it bites),
# if a value is not clipped (then "+far" moves the mean by ~FAR/n, far beyond every tail), if a
# missing statistic leaks (e.g. counted as 0 rather than the centre), or if the ledger's
# composed ε under-states what the columns spend together (the joint tails).
#
# Locally every user adds their own lattice Laplace draw of scale 2r_j / (ε/2). With n = 1 the
# released mean *is* the user's report (post-processed), so the audit sees the local randomiser
# exactly and is as tight as centrally; with n = 4 the other users' noise blurs the tails (the
# sum of Laplace draws is not Laplace), so the events reach further out (j = 0..7 scales) and
# the bound is looser; its power check (noise/4 there is exactly a local noise scale wrongly
# divided by n = 4) shows that the aggregate still exposes a per-user noise deficit.

CM_EPS = 2.0
CM_LOWER = np.array([0.0, -5.0])
CM_UPPER = np.array([1.0, 20.0])
CM_CENTRE = (CM_LOWER + CM_UPPER) / 2.0
CM_RADIUS = (CM_UPPER - CM_LOWER) / 2.0
CM_NAMES = ("share", "level")
CM_USERS: dict[str, NDArray[np.float64]] = {
    "-far": np.array([-FAR, -FAR]),
    "+far": np.array([FAR, FAR]),
    "centre": CM_CENTRE,
    "inside": CM_CENTRE + CM_RADIUS / 2.0,
    "missing": np.array([np.nan, np.nan]),  # identified False
}
#: (n, local) configurations and their runs per data set (clipped_mean takes ~70 µs)
CM_CENTRAL, CM_LOCAL_ONE, CM_LOCAL_FEW = (50, False), (1, True), (4, True)
CM_RUNS = 10_000
CM_BROKEN_RUNS = 4_000  # the broken replica is far off (true ε = 4 ε): fewer runs show it
CM_LOCAL_FEW_MULTIPLES = tuple(range(8))


def _cm_data(user: str, n: int) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """User 0's value and n - 1 fixed others (spread over and beyond the intervals)."""
    others = CM_CENTRE + CM_RADIUS * np.random.default_rng(7).normal(0.0, 1.5, (n - 1, 2))
    matrix = np.vstack([CM_USERS[user][None, :], others])
    return matrix, ~np.isnan(matrix[:, 0])


def _cm_noiseless(user: str, n: int) -> NDArray[np.float64]:
    """The mean without noise: clipped values, missing statistics at the centre."""
    matrix, identified = _cm_data(user, n)
    return np.mean(np.where(identified[:, None], np.clip(matrix, CM_LOWER, CM_UPPER), CM_CENTRE), 0)


def clipped_mean_replica(noise_fraction: float = 1.0) -> Callable[..., NDArray[np.float64]]:
    """``clipped_mean``'s estimate rebuilt from ``release_bounded_sum``, optionally broken.

    Each column gets ε/d (basic composition) divided by ``noise_fraction``: ``1/4`` gives noise
    of a quarter of the correct scale (true ε four times the claim). Unbroken, it is
    ``clipped_mean`` draw for draw (:func:`test_clipped_mean_replica_reproduces_the_package`).
    """

    def release(
        matrix: NDArray[np.float64],
        identified: NDArray[np.bool_],
        epsilon: float,
        rng: np.random.Generator,
        local: bool,
    ) -> NDArray[np.float64]:
        n, d = matrix.shape
        with np.errstate(invalid="ignore"):
            offsets = np.clip(matrix - CM_CENTRE, -CM_RADIUS, CM_RADIUS)
        offsets = np.where(identified[:, None], offsets, 0.0)
        per_column = np.full(d, epsilon / d / noise_fraction)
        lattice = release_bounded_sum(offsets, CM_RADIUS, per_column, rng, local=local)
        return CM_CENTRE + lattice.total / n

    return release


def _cm_release(
    matrix: NDArray[np.float64],
    identified: NDArray[np.bool_],
    rng: np.random.Generator,
    local: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], PrivacyLedger]:
    return clipped_mean(
        matrix,
        CM_LOWER,
        CM_UPPER,
        epsilon=CM_EPS,
        rng=rng,
        names=CM_NAMES,
        identified=identified,
        local=local,
    )


@pytest.mark.parametrize(("n", "local"), [CM_CENTRAL, CM_LOCAL_ONE, CM_LOCAL_FEW])
def test_clipped_mean_replica_reproduces_the_package(n: int, local: bool) -> None:
    replica = clipped_mean_replica()
    for user in CM_USERS:
        matrix, identified = _cm_data(user, n)
        for seed in range(10):
            estimate, noise_scale, _, ledger = _cm_release(
                matrix, identified, np.random.default_rng(seed), local
            )
            expected = replica(matrix, identified, CM_EPS, np.random.default_rng(seed), local)
            np.testing.assert_array_equal(estimate, expected)
    # the claim audited below, and the accounting behind it
    assert ledger.epsilon == CM_EPS and ledger.delta == 0.0
    assert ledger.model == ("local" if local else "central")
    assert [e.epsilon for e in ledger.entries] == [CM_EPS / 2] * 2
    for j, entry in enumerate(ledger.entries):
        true_sensitivity = 2.0 * CM_RADIUS[j] / (1 if local else n)
        # the ledger never under-states the sensitivity (lattice rounding adds < 0.05 %)
        assert true_sensitivity <= entry.sensitivity <= true_sensitivity * (1 + 1e-3)
        assert entry.noise_scale == pytest.approx(entry.sensitivity / entry.epsilon, rel=1e-5)
        assert noise_scale[j] == entry.noise_scale


@cache
def _cm_outputs(
    user: str, n: int, local: bool, noise_fraction: float, runs: int
) -> NDArray[np.float64]:
    matrix, identified = _cm_data(user, n)
    seed = 1000 + 100 * n + 10 * list(CM_USERS).index(user) + int(local)
    if noise_fraction == 1.0:

        def mechanism(rng: np.random.Generator) -> NDArray[np.float64]:
            return _cm_release(matrix, identified, rng, local)[0]

    else:
        broken = clipped_mean_replica(noise_fraction)

        def mechanism(rng: np.random.Generator) -> NDArray[np.float64]:
            return broken(matrix, identified, CM_EPS, rng, local)

    return repeat(mechanism, runs, seed + (7 if noise_fraction != 1.0 else 0))


def _cm_audit(
    pair: tuple[str, str],
    config: tuple[int, bool],
    noise_fraction: float = 1.0,
) -> EpsilonBound:
    n, local = config
    runs = CM_RUNS if noise_fraction == 1.0 else CM_BROKEN_RUNS
    outputs = (
        _cm_outputs(pair[0], n, local, noise_fraction, runs),
        _cm_outputs(pair[1], n, local, noise_fraction, runs),
    )
    # Laplace scale of the noise on the released mean, per column: 2 r_j / (ε/2) / n, both
    # centrally (one draw on the sum) and locally (each draw on one report)
    steps = 2.0 * CM_RADIUS / (CM_EPS / 2) / n
    multiples = CM_LOCAL_FEW_MULTIPLES if config == CM_LOCAL_FEW else (0,)
    noiseless = (_cm_noiseless(pair[0], n), _cm_noiseless(pair[1], n))
    return _pair_bound(outputs, noiseless, steps, CM_NAMES, 0.0, multiples)


@pytest.mark.parametrize(
    ("pair", "config", "least"),
    [
        (("-far", "+far"), CM_CENTRAL, 0.75),
        (("centre", "+far"), CM_CENTRAL, 0.3),
        (("centre", "inside"), CM_CENTRAL, 0.1),
        (("missing", "+far"), CM_CENTRAL, 0.3),
        (("-far", "+far"), CM_LOCAL_ONE, 0.75),
        (("centre", "inside"), CM_LOCAL_ONE, 0.1),
        (("-far", "+far"), CM_LOCAL_FEW, 0.15),
    ],
    ids=[
        "central-far-both-ways",
        "central-moved-far-away",
        "central-moved-inside",
        "central-missing-vs-far",
        "local-one-user-far-both-ways",
        "local-one-user-moved-inside",
        "local-four-users-far-both-ways",
    ],
)
def test_clipped_mean_audit(pair: tuple[str, str], config: tuple[int, bool], least: float) -> None:
    bound = _cm_audit(pair, config)
    name = f"clipped_mean {pair} n={config[0]} local={config[1]}"
    print(_report(name, bound, CM_EPS))
    assert bound.epsilon_lb <= CM_EPS, _report(name, bound, CM_EPS)
    # tightness (not a privacy claim): the shift reveals ε · shift / sensitivity (1, 1/2, 1/4
    # of ε), less the statistical margin; locally with n = 4 the other users' noise hides more
    assert bound.epsilon_lb > least * CM_EPS, str(bound)


@pytest.mark.parametrize(
    "config",
    [CM_CENTRAL, CM_LOCAL_ONE, CM_LOCAL_FEW],
    ids=["central", "local-one-user", "local-four-users"],
)
def test_clipped_mean_audit_has_power(config: tuple[int, bool]) -> None:
    bound = _cm_audit(("-far", "+far"), config, BROKEN_NOISE_FRACTION)  # true ε: 4 · 2 = 8
    print(_report(f"clipped_mean, noise/4, {config}", bound, CM_EPS))
    assert bound.epsilon_lb > CM_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# Shared by the model audits: n users, T rows each, exact noiseless values
# ---------------------------------------------------------------------------------------------
# The engine behind both models releases each column in three stages (checked on the ledger):
# a stable-histogram midpoint m̂, a rough mean μ̂₁ of the statistics projected on m̂ ± w₁
# (w₁ = τ + 2τ'), and the final mean of the statistics projected on μ̂₁ ± w₂ (w₂ public: it
# depends on the noise scale of μ̂₁ only). The results show the final mean (``params``) and
# μ̂₁ (the centre of ``projection_interval``); both are audited. All users but user 0 have
# statistic 0, so m̂ = 0 whatever user 0 does (user 0's own bin can never be the mode and a
# failed histogram falls back to 0), and noiselessly
#     c = mean(clip(s, ±w₁)),   x = c + mean(clip(s - c, ±w₂)),
# where a user without a statistic contributes the centre (offset 0). These are computed in
# exact rational arithmetic below, independently of the package's float code.

MODEL_N, MODEL_T = 100, 3
MODEL_EPS, MODEL_DELTA = 4.0, 1e-3
#: runs per data set (a fit takes ~0.7 ms on an idle core)
MODEL_RUNS = 3_000


def _clip(value: Fraction, half_width: float) -> Fraction:
    w = Fraction(half_width)
    return min(max(value, -w), w)


def _refined_noiseless(
    statistic: Fraction | None, w1: float, w2: float
) -> tuple[Fraction, Fraction]:
    """(c, x) of one column: user 0's statistic (None: has none) and n - 1 users at 0."""
    n = MODEL_N
    own1 = Fraction(0) if statistic is None else _clip(statistic, w1)
    c = own1 / n
    own2 = Fraction(0) if statistic is None else _clip(statistic - c, w2)
    return c, c + (own2 + (n - 1) * _clip(-c, w2)) / n


def _frame(
    columns: dict[str, NDArray[np.float64]], others: dict[str, float | NDArray[np.float64]]
) -> pd.DataFrame:
    """User 0's rows (any number), then n - 1 users with the MODEL_T rows ``others``."""
    rows0 = len(next(iter(columns.values())))
    data = {
        name: np.concatenate([values, np.tile(np.broadcast_to(others[name], MODEL_T), MODEL_N - 1)])
        for name, values in columns.items()
    }
    users = np.concatenate([np.zeros(rows0, dtype=int), np.repeat(np.arange(1, MODEL_N), MODEL_T)])
    return pd.DataFrame({"user": users, **data})


# ---------------------------------------------------------------------------------------------
# 2a. RandomEffectsLocation: (Intercept, Group Var, Scale) and the rough mean μ̂₁
# ---------------------------------------------------------------------------------------------
# ε = 4, δ = 1e-3, variance_share = 0.5: μ gets ε = 2 (midpoint, refinement, mean) and δ; the
# components ε = 1 each through clipped_mean on public ranges: Scale on [0, U] with
# U = ρ_res (1 + 2√x + 2x), x = log(4n/γ) (min_rows unknown: 1 degree of freedom), Group Var
# on [-U/2, (1.1τ)²]. The n - 1 other users have y = 0 on all rows: ȳ_u = 0, s²_u = 0 and
# (ȳ_u - μ̂)² - s²_u/T = μ̂² (within the range). User 0's rows are replaced by
#   * "zero":    (0, 0, 0), like everyone else;
#   * "-far" / "+far": (∓FAR, ∓FAR, ∓FAR): ȳ clipped to ∓w (full sensitivity of μ₁ and μ),
#                s² = 0 and the between term clipped to the top in both: only μ̂₁ and μ move;
#   * "spread":  FAR · (0, 1, 2): ȳ far up, s² = FAR² and the between term far above their
#                ranges: every output moves up (μ̂₁, μ by half their sensitivity, Group Var by
#                (1.1τ)² of its range, Scale by all of it) — the joint tail sees ~2.3 of 4;
#   * "inside":  w₂/2 + √(U/2) (-1, 0, 1): moved *inside* every interval and range;
#   * "one-row": a single row at FAR — the user's row count changes, so s² does not exist and
#                the user contributes the centre of both component ranges;
#   * "extreme": 1e160 · (0, 1, 2): moved farther still. Every statistic is clipped exactly as
#                for "spread", so a correct fit cannot tell the two apart (noiseless outputs
#                identical, ε_lb ≈ 0 expected).
# Events (K = 10 or 12, Bonferroni): the upper and lower tails of each of (μ̂₁, Intercept,
# Group Var, Scale) at the noiseless values (scales from the ledger), the two joint tails over
# all four, and two more over the outputs the pair moves (when not all of them). Group Var and
# Scale are reported as max(·, 0): {Scale <= 0} is the observable event {Scale == 0}.
# The audit fails if the noise is too small for the ledger's ε or the ranges are not public
# (e.g. a component range widened by a far user), if a far user's statistic is not clipped
# (then "+far" or "spread" moves an output by ~FAR/n), if the components' ε is missing from the
# ledger's total (the joint tail), or if a user whose rows move farther changes the output law
# ("extreme": it does — see test_location_audit_extreme_user).

LOC_SCALE, LOC_WITHIN = 1.0, 1.0
LOC_TAU = math.sqrt(2.0 * LOC_SCALE * math.log(2.0 * MODEL_N / DEFAULT_GAMMA))  # τ, d = 1
LOC_TAU_BINS = math.sqrt(2.0 * LOC_SCALE * math.log(2.0 / DEFAULT_GAMMA))  # τ'
LOC_W1 = LOC_TAU + 2.0 * LOC_TAU_BINS
_LOC_X = math.log(4.0 * MODEL_N / DEFAULT_GAMMA)
LOC_U = LOC_WITHIN * (1.0 + 2.0 * math.sqrt(_LOC_X) + 2.0 * _LOC_X)  # top of the Scale range
LOC_GV_RANGE = (-LOC_U / 2.0, (1.1 * LOC_TAU) ** 2)
LOC_LABELS = ("c", "Intercept", "Group Var", "Scale")


def _location_fit(model: RandomEffectsLocation, rng: np.random.Generator) -> PanelResults:
    return model.fit(
        epsilon=MODEL_EPS,
        delta=MODEL_DELTA,
        scale=LOC_SCALE,
        within_scale=LOC_WITHIN,
        random_state=rng,
    )


def _location_model(rows: NDArray[np.float64]) -> RandomEffectsLocation:
    return RandomEffectsLocation.from_formula(
        "y ~ 1", _frame({"y": rows}, {"y": 0.0}), groups="user"
    )


LOC_REFERENCE = _location_fit(_location_model(np.zeros(MODEL_T)), np.random.default_rng(0))
LOC_W2 = float(np.diff(LOC_REFERENCE.projection_interval.to_numpy()[0])[0]) / 2.0
LOC_STEPS = (
    LOC_REFERENCE.privacy.entries[1].noise_scale,  # μ̂₁ (refinement)
    *LOC_REFERENCE.noise_scale.to_numpy(),  # Intercept, Group Var, Scale
)
LOC_USERS: dict[str, NDArray[np.float64]] = {
    "zero": np.zeros(MODEL_T),
    "-far": np.full(MODEL_T, -FAR),
    "+far": np.full(MODEL_T, FAR),
    "spread": FAR * np.arange(MODEL_T, dtype=np.float64),
    "inside": LOC_W2 / 2.0 + math.sqrt(LOC_U / 2.0) * np.array([-1.0, 0.0, 1.0]),
    "one-row": np.array([FAR]),
    "extreme": 1e160 * np.arange(MODEL_T, dtype=np.float64),
}


def _location_noiseless(user: str) -> tuple[float, ...]:
    """Exact noiseless (μ̂₁, μ, Group Var, Scale), the components at the noiseless μ."""
    rows = [Fraction(float(v)) for v in LOC_USERS[user]]
    t = len(rows)
    mean = sum(rows, Fraction(0)) / t
    c, x = _refined_noiseless(mean, LOC_W1, LOC_W2)
    lo, hi = (Fraction(v) for v in LOC_GV_RANGE)
    top = Fraction(LOC_U)
    others_between = min(max(x * x, lo), hi)  # (0 - μ)² - 0 for the n - 1 other users
    if t >= 2:
        within = sum(((v - mean) ** 2 for v in rows), Fraction(0)) / (t - 1)
        between = min(max((mean - x) ** 2 - within / t, lo), hi)
        scale = min(max(within, Fraction(0)), top)
    else:  # no s²: the centre of each range
        between, scale = (lo + hi) / 2, top / 2
    group_var = (between + (MODEL_N - 1) * others_between) / MODEL_N
    return (float(c), float(x), float(group_var), float(scale / MODEL_N))


def test_location_reference() -> None:
    """The pipeline and public ranges the comments above rely on, read off the ledger."""
    ledger = LOC_REFERENCE.privacy
    assert ledger.epsilon == MODEL_EPS and ledger.delta == MODEL_DELTA
    assert LOC_REFERENCE.variant == "improved (refined)"
    assert [e.target for e in ledger.entries] == [
        "Intercept: midpoint",
        "Intercept: refinement",
        "Intercept: mean",
        "Group Var",
        "Scale",
    ]
    eps = [e.epsilon for e in ledger.entries]
    assert math.isclose(sum(eps[:3]), MODEL_EPS / 2) and eps[3:] == [MODEL_EPS / 4] * 2
    n = MODEL_N
    widths = (2.0 * LOC_W1, 2.0 * LOC_W2, LOC_GV_RANGE[1] - LOC_GV_RANGE[0], LOC_U)
    for entry, width in zip(ledger.entries[1:], widths, strict=True):
        # sensitivity on the mean = width of the public interval / n (+ lattice rounding)
        assert width / n <= entry.sensitivity <= width / n * (1 + 1e-3), entry
    assert LOC_W2 < LOC_W1
    # the noiseless values behind the events (components at μ = 0 for "zero")
    assert _location_noiseless("zero") == (0.0, 0.0, 0.0, 0.0)
    assert _location_noiseless("extreme") == _location_noiseless("spread")


@cache
def _location_outputs(user: str, runs: int = MODEL_RUNS) -> NDArray[np.float64]:
    model = _location_model(LOC_USERS[user])
    seed = 2000 + list(LOC_USERS).index(user)

    def mechanism(rng: np.random.Generator) -> list[float]:
        res = _location_fit(model, rng)
        centre = float(res.projection_interval.to_numpy()[0].mean())
        return [centre, *res.params.to_numpy()]

    return repeat(mechanism, runs, seed)


def _location_audit(pair: tuple[str, str]) -> EpsilonBound:
    return _pair_bound(
        (_location_outputs(pair[0]), _location_outputs(pair[1])),
        (_location_noiseless(pair[0]), _location_noiseless(pair[1])),
        LOC_STEPS,
        LOC_LABELS,
        MODEL_DELTA,
    )


@pytest.mark.parametrize(
    ("pair", "least"),
    [
        (("-far", "+far"), 0.15),
        (("zero", "spread"), 0.25),
        (("-far", "spread"), 0.3),
        (("zero", "inside"), 0.08),
        (("zero", "one-row"), 0.1),
    ],
    ids=["far-both-ways", "moved-far-away", "far-both-ways-spread", "moved-inside", "one-row"],
)
def test_location_audit(pair: tuple[str, str], least: float) -> None:
    bound = _location_audit(pair)
    print(_report(f"RandomEffectsLocation {pair}", bound, MODEL_EPS))
    assert bound.epsilon_lb <= MODEL_EPS, str(bound)
    # tightness (not a privacy claim): far-both-ways reveals ε_ref + ε_mean = 1.37 through μ̂₁
    # and μ; moved-far-away about 0.68 + 0.62 + 1 = 2.3 through the joint tail
    assert bound.epsilon_lb > least * MODEL_EPS, str(bound)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow of the bug itself
def test_location_audit_extreme_user() -> None:
    # regression: s²_u = inf - inf = NaN once leaked through the clipping (-2**63 on the lattice)
    # "spread" and "extreme" are clipped identically at every stage, so a correct fit gives
    # them the same output law; any ε_lb well above 0 is a leak, and above the claim a violation
    bound = _location_audit(("spread", "extreme"))
    print(_report("RandomEffectsLocation ('spread', 'extreme')", bound, MODEL_EPS))
    assert bound.epsilon_lb <= MODEL_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 2b. LongitudinalOLS "y ~ x": per-user OLS coefficients (Intercept, x) and μ̂₁ of each
# ---------------------------------------------------------------------------------------------
# ε = 4, δ = 1e-3 over p = 2 columns by basic composition: each column ε = 2 (midpoint,
# refinement, mean). The n - 1 other users have x = (0, 1, 2) and y = 0, so β̂_u = (0, 0). User
# 0's rows (x, y) are replaced by
#   * "zero":     like everyone else;
#   * "-far" / "+far": y = ∓FAR (1 + x): β̂ = (∓FAR, ∓FAR), clipped to the ends in both columns
#                 (full sensitivity of all four outputs);
#   * "inside":   y = w₂/2 (1 + x): β̂ = (w₂/2, w₂/2), moved inside the intervals;
#   * "leverage": extreme regressors x = (0, 1e-9, 2e-9), y = (0, 1, 2): a well-conditioned
#                 design after scaling (identified) with slope 1e9, clipped;
#   * "singular": x = (5, 5, 5) — the user's design is singular, so they become "unidentified"
#                 and contribute the centres (β̂ treated as the interval centre); this changes
#                 the histogram counts too (no bin for them);
#   * "overflow": x = (3, -3, 0), y = 1e308 on every row: β̂ = (1e308, 0) exactly, clipped
#                 exactly like "+far" in the intercept.
# Events (K = 10 or 12): the tails of (μ̂₁ Intercept, μ̂₁ x, Intercept, x), the joint tails over
# all four and over the outputs that move. The audit fails if the noise is too small for the
# ledger's ε (the joint tail of "-far" vs "+far" sees ~2.6 of the 4), if the per-column budgets
# compose to more than the claim, if a far or high-leverage user's coefficients are not
# clipped, if an unidentified user's contribution depends on their data, or if any finite data
# make a coefficient that escapes the clipping ("overflow": they do — see
# test_ols_audit_overflowing_user).

OLS_SCALE = 1.0
OLS_X = np.arange(MODEL_T, dtype=np.float64)
OLS_TAU = math.sqrt(2.0 * OLS_SCALE * math.log(2.0 * 2 * MODEL_N / DEFAULT_GAMMA))  # d = 2
OLS_W1 = OLS_TAU + 2.0 * math.sqrt(2.0 * OLS_SCALE * math.log(2.0 / DEFAULT_GAMMA))
OLS_LABELS = ("c Intercept", "c x", "Intercept", "x")


def _ols_fit(model: LongitudinalOLS, rng: np.random.Generator) -> PanelResults:
    return model.fit(epsilon=MODEL_EPS, delta=MODEL_DELTA, scale=OLS_SCALE, random_state=rng)


def _ols_model(x: NDArray[np.float64], y: NDArray[np.float64]) -> LongitudinalOLS:
    frame = _frame({"x": x, "y": y}, {"x": OLS_X, "y": np.zeros(MODEL_T)})
    return LongitudinalOLS.from_formula("y ~ x", frame, groups="user")


OLS_REFERENCE = _ols_fit(_ols_model(OLS_X, np.zeros(MODEL_T)), np.random.default_rng(0))
OLS_W2 = float(np.diff(OLS_REFERENCE.projection_interval.to_numpy()[0])[0]) / 2.0
OLS_STEPS = (
    *(e.noise_scale for e in OLS_REFERENCE.privacy.entries if e.target.endswith("refinement")),
    *OLS_REFERENCE.noise_scale.to_numpy(),
)
OLS_USERS: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {
    "zero": (OLS_X, np.zeros(MODEL_T)),
    "-far": (OLS_X, -FAR * (1.0 + OLS_X)),
    "+far": (OLS_X, FAR * (1.0 + OLS_X)),
    "inside": (OLS_X, OLS_W2 / 2.0 * (1.0 + OLS_X)),
    "leverage": (np.array([0.0, 1e-9, 2e-9]), np.array([0.0, 1.0, 2.0])),
    "singular": (np.full(MODEL_T, 5.0), FAR * (1.0 + OLS_X)),
    "overflow": (np.array([3.0, -3.0, 0.0]), np.full(MODEL_T, 1e308)),
}


def _ols_coefficients(user: str) -> tuple[Fraction, Fraction] | None:
    """User 0's exact OLS coefficients (Cramer's rule on the normal equations), None if singular."""
    x, y = ([Fraction(float(v)) for v in a] for a in OLS_USERS[user])
    t = len(x)
    sx, sxx = sum(x, Fraction(0)), sum((v * v for v in x), Fraction(0))
    sy, sxy = sum(y, Fraction(0)), sum((a * b for a, b in zip(x, y, strict=True)), Fraction(0))
    det = t * sxx - sx * sx
    if det == 0:
        return None
    return (sxx * sy - sx * sxy) / det, (t * sxy - sx * sy) / det


def _ols_noiseless(user: str) -> tuple[float, ...]:
    beta = _ols_coefficients(user)
    columns = [
        _refined_noiseless(None if beta is None else beta[j], OLS_W1, OLS_W2) for j in range(2)
    ]
    return (*(float(c) for c, _ in columns), *(float(x) for _, x in columns))


def test_ols_reference() -> None:
    ledger = OLS_REFERENCE.privacy
    assert ledger.epsilon == MODEL_EPS and ledger.delta == MODEL_DELTA
    assert OLS_REFERENCE.variant == "improved (refined)"
    assert [e.target for e in ledger.entries] == [
        f"{name}: {stage}"
        for stage in ("midpoint", "refinement", "mean")
        for name in ("Intercept", "x")
    ]
    assert math.isclose(sum(e.epsilon for e in ledger.entries), MODEL_EPS)
    for entry in ledger.entries[2:]:
        width = 2.0 * (OLS_W1 if entry.target.endswith("refinement") else OLS_W2)
        assert width / MODEL_N <= entry.sensitivity <= width / MODEL_N * (1 + 1e-3), entry
    # who is identified (a diagnostic for the data holder; here it pins the neighbours down)
    for user, identified in [("zero", MODEL_N), ("leverage", MODEL_N), ("singular", MODEL_N - 1)]:
        assert _ols_model(*OLS_USERS[user]).identified_users() == identified, user
    leverage = _ols_coefficients("leverage")
    assert leverage is not None and leverage[1] > 1e8 * OLS_W1  # a slope far beyond any interval
    assert _ols_noiseless("overflow")[::2] == _ols_noiseless("+far")[::2]  # same intercepts


@cache
def _ols_outputs(user: str, runs: int = MODEL_RUNS) -> NDArray[np.float64]:
    model = _ols_model(*OLS_USERS[user])
    seed = 3000 + list(OLS_USERS).index(user)

    def mechanism(rng: np.random.Generator) -> list[float]:
        res = _ols_fit(model, rng)
        return [*res.projection_interval.to_numpy().mean(axis=1), *res.params.to_numpy()]

    return repeat(mechanism, runs, seed)


def _ols_audit(pair: tuple[str, str]) -> EpsilonBound:
    return _pair_bound(
        (_ols_outputs(pair[0]), _ols_outputs(pair[1])),
        (_ols_noiseless(pair[0]), _ols_noiseless(pair[1])),
        OLS_STEPS,
        OLS_LABELS,
        MODEL_DELTA,
    )


@pytest.mark.parametrize(
    ("pair", "least"),
    [
        (("-far", "+far"), 0.3),
        (("zero", "inside"), 0.025),
        (("-far", "leverage"), 0.2),
        (("+far", "singular"), 0.1),
    ],
    ids=["far-both-ways", "moved-inside", "extreme-regressors", "singular-design"],
)
def test_ols_audit(pair: tuple[str, str], least: float) -> None:
    bound = _ols_audit(pair)
    print(_report(f"LongitudinalOLS {pair}", bound, MODEL_EPS))
    assert bound.epsilon_lb <= MODEL_EPS, str(bound)
    # tightness (not a privacy claim): far-both-ways reveals 2 (ε_ref + ε_mean) = 2.6 jointly
    assert bound.epsilon_lb > least * MODEL_EPS, str(bound)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow of the bug itself
def test_ols_audit_overflowing_user() -> None:
    # regression: an overflowing per-user fit (NaN) once counted as identified and leaked
    # "+far" and "overflow" have the same clipped intercept; a correct fit moves only the x
    # column (by half its sensitivity), so ε_lb stays well below the claim
    bound = _ols_audit(("+far", "overflow"))
    print(_report("LongitudinalOLS ('+far', 'overflow')", bound, MODEL_EPS))
    assert bound.epsilon_lb <= MODEL_EPS, str(bound)
