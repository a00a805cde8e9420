"""Privacy audits (docs/design §5.4) of the Priestley-Chao releases (issue 4).

Same recipe as ``test_privacy_audit.py`` (helpers in ``tests/audit.py``): two neighbouring
inputs D, D' that differ in one unit; many seeded runs on each; a few events fixed *before* the
runs from theory (the tails beyond the noiseless outputs, where the likelihood ratio of lattice
Laplace noise is largest), Bonferroni-corrected over every event, both orderings and both
one-sided Clopper-Pearson bounds; and the assertion that the empirical lower bound ``ε_lb`` at
family-wise confidence :data:`~audit.CONFIDENCE` does not exceed the ε the ledger claims.

1. :func:`dplong.privacy.noise.release_weighted_sums` alone — one lattice Laplace *vector*
   calibrated to the L1 sensitivity ``2 r max_i Σ_g |w_ig|`` — on the adversarial pair: the row
   with the largest L1 mass moved from -r to +r, which moves every coordinate the row reaches
   in the same direction. Only the *joint* tail over the coordinates sees the whole ε (each
   coordinate's own tail sees its share ``w_ig / Σ_g w_ig``), so it is among the events. POWER:
   a replica that reproduces the package draw for draw, broken to calibrate on the largest
   single weight (the per-coordinate sensitivity) instead of the row's L1 mass, must be caught.
2. Item-level :class:`dplong.PriestleyChao` end to end (the engine's midpoint and refinement,
   then the joint L1 release): one response changed arbitrarily — far away either way, and to
   NaN (missing: it must contribute the centre). POWER: the curve released at 8 ε.
3. User-level :class:`dplong.PriestleyChao` end to end (each user's curve, normalised by their
   kernel mass and missing where it is below 1/2, through the engine with a count per grid
   point): one user's whole set of rows replaced — moved far away, given other visit times
   (defined at one grid point only), or all responses missing.

With fixed seeds the tests are deterministic; for a correct mechanism a fresh seed would fail an
audit with probability at most ``1 - CONFIDENCE``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
from audit import (
    FAR,
    EpsilonBound,
    fast_compose,  # noqa: F401 (a fixture, used through pytestmark)
    pair_bound,
    repeat,
    report,
)
from numpy.typing import NDArray
from session_cache import session_cache

import dplong
import dplong.privacy.vector as vector_module
from dplong.kernels import get_kernel, item_weights
from dplong.models.curves import MIN_USER_MASS, user_curves
from dplong.privacy.locate import ROUGH_RADIUS
from dplong.privacy.noise import (
    _ROUNDOFF,
    COARSE_BITS,
    WeightedRelease,
    release_weighted_sums,
    two_sided_geometric,
    two_sided_geometric_variance,
)
from dplong.privacy.quantile import GRID

pytestmark = [
    # few units whose values sit at one point: the plan's reliability notes (public facts) fire
    pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning"),
    pytest.mark.usefixtures("fast_compose"),  # exact memo of the budget arithmetic: speed only
]

GAUSSIAN = get_kernel("gaussian")
_report = report
_pair_bound = pair_bound


# ---------------------------------------------------------------------------------------------
# 1. release_weighted_sums: one L1-calibrated lattice Laplace vector
# ---------------------------------------------------------------------------------------------
# Weights: the Priestley-Chao weights of 20 design points i/20 at the grid (0.35, 0.45, 0.55,
# 0.65), Gaussian kernel, b = 0.1: a row reaches every coordinate, so its L1 mass is ~2.4 times
# its largest weight. r = 1, ε = 1. The other 19 clipped values are fixed (uniform in [-r, r]);
# the row with the largest L1 mass (x = 0.5) is at -r in D and +r in D'. Each coordinate moves
# by 2 r w_ig, together by the full Δ₁, so the joint upper tail {out_g >= high_g for all g} has
# likelihood ratio exp(a Σ_g shift_g) = e^{ε (1 - O(G / D))}: a correct release gives ε_lb a
# statistical margin below ε and no more. Events (K = 10): both tails of each coordinate and the
# two joint tails. With 60,000 runs per data set the joint tail has ~3,700 vs ~1,400 hits.
# Measured ε_lb = 0.846 from that joint tail. Broken replica: calibrated on 2 r max_ig |w_ig| —
# the sensitivity of one coordinate — so the true ε is ε Δ₁ / (2 r max w) ≈ 2.4: caught at once
# (10,000 runs; measured ε_lb = 2.05).

WS_N, WS_GRID, WS_B = 20, np.array([0.35, 0.45, 0.55, 0.65]), 0.1
WS_WEIGHTS = item_weights(np.arange(WS_N) / WS_N, WS_GRID, GAUSSIAN, WS_B, 1.0)
WS_ROW = int(np.abs(WS_WEIGHTS).sum(axis=1).argmax())
WS_RADIUS, WS_EPS = 1.0, 1.0
WS_RUNS, WS_BROKEN_RUNS = 60_000, 10_000
WS_OTHERS = np.random.default_rng(21).uniform(-WS_RADIUS, WS_RADIUS, WS_N)


def _ws_values(sign: float) -> NDArray[np.float64]:
    values = WS_OTHERS.copy()
    values[WS_ROW] = sign * WS_RADIUS
    return values


def weighted_sums_replica(
    per_coordinate: bool = False,
) -> Callable[..., WeightedRelease]:
    """``release_weighted_sums`` rebuilt from the package's blocks, optionally broken.

    ``per_coordinate=True`` calibrates the noise (and the lattice) on ``2 r max_ig |w_ig|``, the
    sensitivity of a single coordinate, instead of the L1 mass of the heaviest row. Unbroken it
    is the package draw for draw (:func:`test_weighted_sums_replica_reproduces_the_package`).
    """

    def release(
        clipped: NDArray[np.float64],
        radius: float,
        weights: NDArray[np.float64],
        epsilon: float,
        rng: np.random.Generator,
    ) -> WeightedRelease:
        n, g = weights.shape
        clipped = np.where(np.isnan(clipped), 0.0, clipped)
        absolute = np.abs(weights)
        mass = absolute.max() if per_coordinate else absolute.sum(axis=1).max()
        l1 = 2.0 * radius * float(mass)
        unit = (n + 2) * _ROUNDOFF
        float_error = 2.0 * unit / (1.0 - unit) * radius * float(absolute.sum())
        slack_bits = math.log2(1e-6 / (1200.0 * _ROUNDOFF)) + 2.0 * math.log2(epsilon / g)
        bits = max(COARSE_BITS, min(math.floor(slack_bits), 51 - math.ceil(math.log2(g))))
        step = math.ldexp(1.0, math.floor(math.log2(l1 / (g * 2.0**bits))))
        bound = radius * float(absolute.sum(axis=0).max()) * (1.0 + 2.0 * unit)
        step = max(step, math.ldexp(1.0, math.ceil(math.log2(bound)) - 52))
        lattice_sensitivity = math.ceil((l1 + float_error) / step) + g
        rate = (
            epsilon - 1200.0 * _ROUNDOFF * lattice_sensitivity * g / epsilon
        ) / lattice_sensitivity
        lattice = np.rint((weights.T @ clipped) / step) + two_sided_geometric(rng, rate, (g,))
        sd = math.sqrt(float(two_sided_geometric_variance(rate))) * step
        return WeightedRelease(
            lattice * step,
            np.full(g, step / rate),
            np.full(g, sd),
            lattice_sensitivity * step,
            step,
        )

    return release


def test_weighted_sums_replica_reproduces_the_package() -> None:
    replica = weighted_sums_replica()
    rng = np.random.default_rng(22)
    for seed in range(20):
        values = np.clip(rng.normal(0, 2, WS_N), -WS_RADIUS, WS_RADIUS)
        values[seed % WS_N] = np.nan
        for epsilon in (WS_EPS, 0.3, 50.0, 1e300):
            a = release_weighted_sums(
                values, WS_RADIUS, WS_WEIGHTS, epsilon, np.random.default_rng(seed)
            )
            b = replica(values, WS_RADIUS, WS_WEIGHTS, epsilon, np.random.default_rng(seed))
            np.testing.assert_array_equal(a.total, b.total)
            assert (a.sensitivity, a.step, a.scale[0], a.sd[0]) == (
                b.sensitivity,
                b.step,
                b.scale[0],
                b.sd[0],
            )
    # the claim audited below: Δ₁ = 2 r (largest row L1 mass), ~2.4 times one coordinate's
    l1 = 2.0 * WS_RADIUS * WS_WEIGHTS.sum(axis=1).max()
    release = release_weighted_sums(_ws_values(1.0), WS_RADIUS, WS_WEIGHTS, WS_EPS, rng)
    assert l1 <= release.sensitivity <= l1 * (1 + 1e-3)
    assert 2.3 < l1 / (2.0 * WS_RADIUS * WS_WEIGHTS.max()) < 2.5


def _ws_noiseless(sign: float) -> NDArray[np.float64]:
    return np.asarray(WS_WEIGHTS.T @ _ws_values(sign))


@session_cache
def _ws_outputs(sign: float, per_coordinate: bool) -> NDArray[np.float64]:
    values = _ws_values(sign)
    seed = 2_100 + int(sign > 0) + 10 * int(per_coordinate)
    if per_coordinate:
        broken = weighted_sums_replica(per_coordinate=True)
        return repeat(
            lambda rng: broken(values, WS_RADIUS, WS_WEIGHTS, WS_EPS, rng).total,
            WS_BROKEN_RUNS,
            seed,
        )
    return repeat(
        lambda rng: release_weighted_sums(values, WS_RADIUS, WS_WEIGHTS, WS_EPS, rng).total,
        WS_RUNS,
        seed,
    )


def _ws_audit(per_coordinate: bool) -> EpsilonBound:
    replica = weighted_sums_replica(per_coordinate)
    scale = replica(_ws_values(1.0), WS_RADIUS, WS_WEIGHTS, WS_EPS, np.random.default_rng(0))
    labels = [f"f({g:g})" for g in WS_GRID]
    return _pair_bound(
        (_ws_outputs(-1.0, per_coordinate), _ws_outputs(1.0, per_coordinate)),
        (_ws_noiseless(-1.0), _ws_noiseless(1.0)),
        list(scale.scale),
        labels,
        0.0,
    )


def test_weighted_sums_audit() -> None:
    bound = _ws_audit(per_coordinate=False)
    print(_report("release_weighted_sums, heaviest row -r -> +r", bound, WS_EPS))
    assert bound.epsilon_lb <= WS_EPS, str(bound)
    # tightness (not a privacy claim): the joint tail sees all of ε but for the statistical
    # margin of the Clopper-Pearson bounds
    assert bound.epsilon_lb > 0.75 * WS_EPS, str(bound)
    assert bound.event.startswith("f(0.35) & f(0.45)"), str(bound)  # the joint tail


def test_weighted_sums_audit_has_power() -> None:
    bound = _ws_audit(per_coordinate=True)  # true ε ≈ 2.4
    print(_report("release_weighted_sums, per-coordinate sensitivity", bound, WS_EPS))
    assert bound.epsilon_lb > WS_EPS, str(bound)


# ---------------------------------------------------------------------------------------------
# 2. Item-level PriestleyChao end to end: one response changed arbitrarily
# ---------------------------------------------------------------------------------------------
# n = 200 design points i/n (public), all responses 0 but the one at x = 0.5 (the row with the
# largest L1 mass over the grid 0.4, 0.5, 0.6 at b = 0.2). ε = 2, δ = 1e-3, error_sd = 1,
# amplitude = 1: the release has three stages (checked on the ledger) — the engine's private
# median m̂ of the responses (ε 0.4), a rough mean of the responses projected on m̂ ± w₁
# (w₁ = 4σ + the midpoint cell's half-width; ε 0.3), and the curve: the responses projected on
# c ± w₂ (c = the rough mean, released as the interval's centre; w₂ public given the midpoint's
# cell) through one L1 lattice vector (ε ≈ 1.3). No count: at item level n divides. With all
# others at 0 the median is the cell [0, 2^-1022) whatever the one response does (its utility
# beats every other cell's by ~n/2), so m̂ ≈ 1e-308 and, noiselessly,
#     c = clip(y, ±w₁)/n,   f(x_g) = c a_g + a_g clip(y - c, ±w₂)    (a_g its weights)
# (the others contribute -c each, cancelling c Σ_(i≠·) a_ig); a missing response (NaN)
# contributes the centre (offset 0). (An infinite response is refused when the model is built.)
# The outputs audited jointly: c, the three curve values and their sum (post-processing: one
# response moves every value the same way, so the sum sees the curve's whole L1 shift, where
# each value sees its share and their joint tail is rare). Pairs:
#   * "-far" / "+far" (y = ∓1e6): clipped to the ends, every output moves by its full
#     sensitivity: the joint tail sees ε_ref + ε_curve = 1.6 of 2, less the statistical margin;
#   * "missing" (NaN) / "+far": half of that;
#   * "zero" / "missing": identical noiseless outputs — a correct release cannot tell a missing
#     response from one at the centre (ε_lb ≈ 0; a NaN that escaped the projection, e.g. as
#     -2**63 on the lattice, would be seen at once).

ITEM_N, ITEM_B, ITEM_GRID = 200, 0.2, (0.4, 0.5, 0.6)
ITEM_EPS, ITEM_DELTA, ITEM_SIGMA, ITEM_A = 2.0, 1e-3, 1.0, 1.0
ITEM_X = np.arange(ITEM_N) / ITEM_N
ITEM_WEIGHTS = item_weights(ITEM_X, np.array(ITEM_GRID), GAUSSIAN, ITEM_B, 1.0)
ITEM_ROW = int(ITEM_WEIGHTS.sum(axis=1).argmax())
ITEM_USERS = {"-far": -FAR, "+far": FAR, "zero": 0.0, "missing": math.nan}
#: ~4.5 ms per fit (CPU; one private median over the default grid): 1,500 fits per data set of
#: the far pair (its tightness bar, 0.2 of the claim, passes there on these seeds: 0.215; 0.188
#: at 1,200), 400 for the others (were 800: they carry no tightness bar, and a NaN that escaped
#: the projection would separate the runs, ε_lb 3.8 at 400); the broken curve is far off (true
#: ε ~11): 400 show it (ε_lb 1.52 of the claim, bar 1.2; 1.71 at 600; measured on prefixes)
ITEM_RUNS = {"-far": 1_500, "+far": 1_500}
ITEM_OTHER_RUNS, ITEM_BROKEN_RUNS = 400, 400
ITEM_LABELS = ("c", *(f"f({g:g})" for g in ITEM_GRID), "Σ f")


def _item_model(value: float) -> dplong.PriestleyChao:
    y = np.zeros(ITEM_N)
    y[ITEM_ROW] = value
    frame = pd.DataFrame({"x": ITEM_X, "y": y})
    return dplong.PriestleyChao.from_formula(
        "y ~ x", frame, domain=(0, 1), bandwidth=ITEM_B, grid=list(ITEM_GRID)
    )


def _item_fit(model: dplong.PriestleyChao, rng: np.random.Generator) -> dplong.results.CurveResults:
    return model.fit(
        epsilon=ITEM_EPS,
        delta=ITEM_DELTA,
        error_sd=ITEM_SIGMA,
        amplitude=ITEM_A,
        random_state=rng,
    )


ITEM_REFERENCE = _item_fit(_item_model(0.0), np.random.default_rng(0))
#: the midpoint: the centre of the cell [0, 2^-1022) that holds the n - 1 zeros (the refinement's
#: sensitivity 2 w₁ below confirms its half-width)
ITEM_MIDPOINT = float(GRID.centres[np.searchsorted(GRID.boundaries, 0.0, side="right")])
ITEM_W1 = ROUGH_RADIUS * ITEM_SIGMA + float(GRID.half_width_at(np.array([ITEM_MIDPOINT]))[0])
ITEM_W2 = float(np.diff(ITEM_REFERENCE.projection_interval.to_numpy()[0])[0]) / 2.0
ITEM_STEPS = (
    ITEM_REFERENCE.privacy.entries[2].noise_scale / ITEM_N,  # c: the rough mean's noise
    *ITEM_REFERENCE.noise_scale.to_numpy(),
    float(ITEM_REFERENCE.noise_scale.to_numpy().sum()),  # Σ f: scale of a sum of three draws
)


def _item_noiseless(user: str) -> tuple[float, ...]:
    value = ITEM_USERS[user]
    a = ITEM_WEIGHTS[ITEM_ROW]
    if math.isnan(value):
        return (0.0, 0.0, 0.0, 0.0, 0.0)
    c = float(np.clip(value, -ITEM_W1, ITEM_W1)) / ITEM_N
    curve = c * a + a * float(np.clip(value - c, -ITEM_W2, ITEM_W2))
    return (c, *curve, float(curve.sum()))


def test_item_level_reference() -> None:
    """The pipeline and the public radii the comments above rely on, read off the ledger."""
    ledger = ITEM_REFERENCE.privacy
    # the whole budget: the curve's ε is calibrated by bisection to a relative 1e-9, safe side
    assert ledger.epsilon == pytest.approx(ITEM_EPS, rel=1e-8) and ledger.delta <= ITEM_DELTA
    assert ledger.epsilon <= ITEM_EPS * (1 + 1e-12)
    assert ITEM_REFERENCE.variant == "default (refined)"
    assert [e.stage for e in ledger.entries] == ["count", "midpoint", "refinement", "mean"]
    assert ledger.entries[3].target == "curve at 3 points"
    # the responses' count: sensitivity 1 (one response missing or not)
    assert ledger.entries[0].sensitivity == 1.0
    refinement, curve = ledger.entries[2:]
    # sensitivities: 2 w₁ for the rough sum, 2 w₂ max_i Σ_g a_ig for the curve (+ rounding)
    assert 2 * ITEM_W1 <= refinement.sensitivity <= 2 * ITEM_W1 * (1 + 1e-3)
    l1 = 2.0 * ITEM_W2 * ITEM_WEIGHTS[ITEM_ROW].sum()
    assert l1 <= curve.sensitivity <= l1 * (1 + 1e-3)
    assert ITEM_W2 < FAR / 2
    # the midpoint is the cell [0, 2^-1022) in every run: the interval's width is a function
    # of public facts and the released count of responses (which sizes the midpoint's miss
    # bound, and so the centre's error allowance: the count's noise sd is about 24 of the
    # 200 responses at this ε, and the widths of five runs lie within 5 % of the reference's),
    # and the curve's sensitivity is that width's, run by run
    for seed in range(5):
        fit = _item_fit(_item_model(FAR), np.random.default_rng(seed))
        lower, upper = fit.projection_interval.to_numpy()[0]
        width = (upper - lower) / 2.0
        assert width == pytest.approx(ITEM_W2, rel=5e-2)
        own = 2.0 * width * ITEM_WEIGHTS[ITEM_ROW].sum()
        assert own <= fit.privacy.entries[3].sensitivity <= own * (1 + 1e-3)
    # the one response's noiseless moves: the full sensitivity of every output for -far/+far
    low, high = _item_noiseless("-far"), _item_noiseless("+far")
    assert high[0] - low[0] == pytest.approx(2 * ITEM_W1 / ITEM_N)
    assert high[4] - low[4] >= l1 and high[4] == pytest.approx(sum(high[1:4]), rel=1e-12)
    assert _item_noiseless("zero") == _item_noiseless("missing")


@session_cache
def _item_outputs(user: str, curve_factor: float = 1.0) -> NDArray[np.float64]:
    model = _item_model(ITEM_USERS[user])
    seed = 2_200 + list(ITEM_USERS).index(user) + (10 if curve_factor != 1.0 else 0)

    def mechanism(rng: np.random.Generator) -> list[float]:
        res = _item_fit(model, rng)
        curve = res.params.to_numpy()
        return [float(res.projection_interval.to_numpy()[0].mean()), *curve, float(curve.sum())]

    if curve_factor == 1.0:
        return repeat(mechanism, ITEM_RUNS.get(user, ITEM_OTHER_RUNS), seed)
    honest = vector_module.release_weighted_sums

    def broken(clipped: Any, radius: Any, weights: Any, epsilon: float, rng: Any) -> Any:
        return honest(clipped, radius, weights, epsilon * curve_factor, rng)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vector_module, "release_weighted_sums", broken)
        return repeat(mechanism, ITEM_BROKEN_RUNS, seed)


def _item_audit(pair: tuple[str, str], curve_factor: float = 1.0) -> EpsilonBound:
    return _pair_bound(
        (_item_outputs(pair[0], curve_factor), _item_outputs(pair[1], curve_factor)),
        (_item_noiseless(pair[0]), _item_noiseless(pair[1])),
        ITEM_STEPS,
        ITEM_LABELS,
        ITEM_DELTA,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pair", "least"),
    [
        (("-far", "+far"), 0.2),
        (("missing", "+far"), -math.inf),
        (("zero", "missing"), -math.inf),
    ],
    ids=["far-both-ways", "missing-vs-far", "missing-vs-centre"],
)
def test_item_level_audit(pair: tuple[str, str], least: float) -> None:
    bound = _item_audit(pair)
    claim = ITEM_REFERENCE.privacy.epsilon
    print(_report(f"PriestleyChao item-level {pair}", bound, claim))
    assert bound.epsilon_lb <= claim, str(bound)
    # tightness (not a privacy claim): the far pair can show ε_ref + ε_curve = 1.6 of 2, of
    # which 1,500 runs resolve about half (the best events are joint tails, rare on both
    # sides); the missing response shows half as much, which 400 runs do not resolve
    assert bound.epsilon_lb > least * claim, str(bound)
    if pair == ("zero", "missing"):  # indistinguishable: no more than the statistical margin
        assert bound.epsilon_lb < 0.3, str(bound)


def test_item_level_audit_has_power() -> None:
    bound = _item_audit(("-far", "+far"), curve_factor=8.0)  # the curve at 8 ε: true ε ~11
    claim = ITEM_REFERENCE.privacy.epsilon
    print(_report("PriestleyChao item-level, curve noise/8", bound, claim))
    assert bound.epsilon_lb > 1.2 * claim, str(bound)


# ---------------------------------------------------------------------------------------------
# 3. User-level PriestleyChao end to end: one user's whole set of rows replaced
# ---------------------------------------------------------------------------------------------
# n = 100 users; the n - 1 others have 3 visits at x = 0.2, 0.5, 0.8 with y = 0, so their curves
# are 0 at both grid points (0.35, 0.65; b = 0.3). ε = 2, δ = 1e-3, scale = 1 (stated): each
# grid point is a column of the engine — first a private count of the users whose curve is
# defined there (kernel mass >= 1/2), then its private median (the cell [0, 2^-1022) whatever
# user 0 does; at its largest share, 0.45 of the column's ε, at this n), and the final mean on
# m̂ ± w_j (no refinement and no second moment at this n). User 0's rows are replaced by
#   * "-far" / "+far": the same visits with y = ∓1e6: both curve values far beyond the
#     intervals, clipped to the ends — every estimate moves by its full sensitivity;
#   * "moved": visits at x = 0.0, 0.05, 0.95 with y = -1e6, 0, 1e6 — other visit times: the
#     curve is defined at 0.35 (far down) but not at 0.65 (mass < 1/2 there);
#   * "missing": three visits with every response missing — no curve anywhere: counted nowhere
#     and contributing nothing, like a user whose curve is undefined.
# Audited jointly: the two estimates and the two private counts (results.users). Noiseless:
# per column c_j + Σ_u clip(s_u - c_j, ±w_j) / N_j on the reference's public interval, N_j the
# exact number of users with a curve at x_j; s_u user 0's own curve (Def 4.8 normalised by its
# kernel mass, computed here independently).

USER_N, USER_T, USER_B, USER_GRID = 100, 3, 0.3, (0.35, 0.65)
USER_EPS, USER_DELTA, USER_SCALE = 2.0, 1e-3, 1.0
USER_VISITS = np.array([0.2, 0.5, 0.8])
USER_ROWS: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {
    "-far": (USER_VISITS, np.full(USER_T, -FAR)),
    "+far": (USER_VISITS, np.full(USER_T, FAR)),
    "moved": (np.array([0.0, 0.05, 0.95]), np.array([-FAR, 0.0, FAR])),
    "missing": (USER_VISITS, np.full(USER_T, math.nan)),
}
#: ~40 ms per fit (CPU: two private medians, and the PLAN shares of the two columns differ with
#: their counts, so every fit calibrates its final stage afresh): 600 fits per data set
USER_RUNS = 600
USER_LABELS = (*(f"f({g:g})" for g in USER_GRID), *(f"N({g:g})" for g in USER_GRID))


def _user_model(user: str) -> dplong.PriestleyChao:
    x0, y0 = USER_ROWS[user]
    frame = pd.DataFrame(
        {
            "user": np.concatenate(
                [np.zeros(x0.size, int), np.repeat(np.arange(1, USER_N), USER_T)]
            ),
            "x": np.concatenate([x0, np.tile(USER_VISITS, USER_N - 1)]),
            "y": np.concatenate([y0, np.zeros(USER_T * (USER_N - 1))]),
        }
    )
    return dplong.PriestleyChao.from_formula(
        "y ~ x", frame, groups="user", domain=(0, 1), bandwidth=USER_B, grid=list(USER_GRID)
    )


def _user_fit(model: dplong.PriestleyChao, rng: np.random.Generator) -> dplong.results.CurveResults:
    return model.fit(epsilon=USER_EPS, delta=USER_DELTA, scale=USER_SCALE, random_state=rng)


@cache
def _user_reference() -> dplong.results.CurveResults:
    return _user_fit(_user_model("missing"), np.random.default_rng(0))


def _own_curve(user: str) -> NDArray[np.float64]:
    """User 0's curve at the grid: spacings to the next visit (the last to 1) times the kernel,
    over the kernel mass; NaN where the mass is below 1/2 or no response is left."""
    x, y = USER_ROWS[user]
    keep = ~np.isnan(y)
    if not keep.any():
        return np.full(len(USER_GRID), np.nan)
    x, y = x[keep], y[keep]
    spacing = np.diff(np.append(x, 1.0))
    grid = np.array(USER_GRID)
    kernel = GAUSSIAN((grid[None, :] - x[:, None]) / USER_B) / USER_B
    mass = spacing @ kernel
    return np.where(mass >= MIN_USER_MASS, (spacing * y) @ kernel / mass, np.nan)


def _user_noiseless(user: str) -> NDArray[np.float64]:
    ref = _user_reference()
    own = _own_curve(user)
    lower, upper = ref.projection_interval.to_numpy().T
    centre, radius = (lower + upper) / 2.0, (upper - lower) / 2.0
    counts = (USER_N - 1) + np.isfinite(own)
    mine = np.where(np.isfinite(own), np.clip(own - centre, -radius, radius), 0.0)
    others = (USER_N - 1) * np.clip(-centre, -radius, radius)
    return np.concatenate([centre + (mine + others) / counts, counts])


def test_user_level_reference() -> None:
    ref = _user_reference()
    ledger = ref.privacy
    assert ledger.epsilon <= USER_EPS * (1 + 1e-12) and ledger.delta <= USER_DELTA
    assert ledger.epsilon == pytest.approx(USER_EPS, rel=1e-9)
    assert [e.stage for e in ledger.entries] == ["count"] * 2 + ["midpoint"] * 2 + ["mean"] * 2
    assert ref.variant == "default" and list(ref.users.index) == list(ref.params.index)
    # the replacements the comments describe
    far, moved = _own_curve("+far"), _own_curve("moved")
    assert np.all(far > 1e5) and moved[0] < -1e4 and np.isnan(moved[1])
    assert np.all(np.isnan(_own_curve("missing")))
    # the others' curves are exactly 0 where defined, and defined at both points
    others = user_curves(
        np.tile(USER_VISITS, 2),
        np.zeros(6),
        np.repeat([0, 1], 3),
        2,
        np.array(USER_GRID),
        GAUSSIAN,
        USER_B,
    )
    np.testing.assert_array_equal(others, np.zeros((2, 2)))


@session_cache
def _user_outputs(user: str) -> NDArray[np.float64]:
    model = _user_model(user)
    seed = 2_300 + list(USER_ROWS).index(user)

    def mechanism(rng: np.random.Generator) -> list[float]:
        res = _user_fit(model, rng)
        return [*res.params.to_numpy(), *res.users.to_numpy()]

    return repeat(mechanism, USER_RUNS, seed)


def _user_audit(pair: tuple[str, str]) -> EpsilonBound:
    ref = _user_reference()
    counts = [e.noise_scale for e in ref.privacy.entries if e.stage == "count"]
    return _pair_bound(
        (_user_outputs(pair[0]), _user_outputs(pair[1])),
        (_user_noiseless(pair[0]), _user_noiseless(pair[1])),
        [*ref.noise_scale.to_numpy(), *counts],
        USER_LABELS,
        USER_DELTA,
        (0, 1),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pair", "least"),
    [(("-far", "+far"), 0.02), (("missing", "moved"), -math.inf)],
    ids=["far-both-ways", "missing-vs-other-visit-times"],
)
def test_user_level_audit(pair: tuple[str, str], least: float) -> None:
    bound = _user_audit(pair)
    claim = _user_reference().privacy.epsilon
    print(_report(f"PriestleyChao user-level {pair}", bound, claim))
    assert bound.epsilon_lb <= claim, str(bound)
    # tightness (not a privacy claim): the far pair moves both final means by their full
    # sensitivity (jointly about half the ε); the other pair moves one mean by half its
    # sensitivity and one count by one, which 600 runs cannot resolve (no tightness asserted:
    # it checks that a user defined at one grid point only reveals no more than the claim).
    # Since the tail stage's one count runs here (issue 29) its ε comes out of the means': the
    # far pair showed 0.07 of 2 at 600 runs, so a positive bound is what it is asked for
    assert bound.epsilon_lb > least * claim, str(bound)
