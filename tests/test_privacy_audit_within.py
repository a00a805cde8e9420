"""Privacy audit (docs/design §5.4) of the within estimator, ``LongitudinalOLS.fit(
estimator="within")``, at a setting where it takes two early Newton steps
(``docs/design/within.md``, step 3: ``step1[x]`` and ``step2[x]`` before the last step's
``influence[x]``).

The recipe of ``test_privacy_audit_models.py`` (helpers in ``tests/audit.py``): two DataFrames
that differ by *replacing all rows of one user* — moved far away (so far that every released
statistic of theirs is clipped), given a singular within design (a regressor constant within
the user), given too few rows (one: no within statistic) —; many seeded runs on each; events
fixed before the audited runs; Bonferroni-corrected Clopper–Pearson bounds at family-wise
confidence :data:`~audit.CONFIDENCE`; the assertion ``ε_lb <= ε`` claimed, for every pair.

Two audits read the same runs:

* **the results**: every number the fit publishes per coefficient — ``params``, ``sampling_sd``
  (the last step's private second moment), ``noise_sd`` and ``bias`` (post-processing of the
  released noise scales and bias bounds, which depend on the released design and on whether
  each early step was used) — and the private weighted count (``results.users``); ``bse``,
  ``conf_int`` and ``pvalues`` are functions of these, and ``users_sd``, ``bad_events`` and
  the notes are public facts of the plan here (the same in every run). Held to the ledger's
  ε.
* **the transcript up to the early steps**: the released count and design (``Z'Z[x,x]``,
  ``Z'y[x]``) and β after each early step (β₀ plus the steps' released mean influences),
  read from the releases the fit assembles its results from. The results hardly show the early
  steps — the last Newton step corrects their noise and clipping, to first order — so this is
  where an early step that leaks can be seen. These releases are a prefix of the fit's adaptive
  composition, held to the ledger's entries up to the second step composed at its δ; on the
  pair whose design releases have one law (below), to the early steps' entries alone.

Each audit of a pair is its own family at :data:`~audit.CONFIDENCE` (Bonferroni over its
events), as in the other audit files. The events: the upper tail beyond the larger and the
lower tail below the smaller of the two data sets' centres of every output, and the joint tails
of groups of outputs fixed in advance (:data:`AUDITS`). The centres are the medians of an
independent *pilot* of runs on each data set (seeds of their own, drawn before any audited
run): the fit's noiseless outputs pass through data-dependent released stages (the design's
private medians and rough means, the early steps' centre bounds and radii), so they are no
closed form of the data as in the per-user audits; a pilot's median is where an output's noise
is centred, and the tail beyond it is where a Laplace-like mechanism's likelihood ratio is
largest. For lattice Laplace noise every tail beyond the larger centre has the same ratio, so
only the tails at the centres (``multiples=(0,)``, the most hits) are used: further thresholds
would only widen the Bonferroni correction.

**Power.** Two deliberately broken fits, their ledgers unchanged, must be flagged on the far
pair: every Laplace draw of the fit at :data:`~audit.BROKEN_EPSILON_FACTOR` times its ε
(noise / 8; :func:`~audit.release_runs`'s broken variant), by the results audit; and only the
early steps' means drawn so, by the transcript audit (the results audit does not see that one:
printed for the record). Both with the events of the honest audit.
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
    BROKEN_EPSILON_FACTOR,
    CONFIDENCE,
    FAR,
    EpsilonBound,
    epsilon_lower_bound,
    fast_compose,  # noqa: F401 (a fixture, used through pytestmark)
    joint_tail_events,
    patch_draws,
    release_runs,
    repeat,
    report,
    tail_events,
)
from numpy.typing import NDArray
from session_cache import session_cache

import dplong.privacy.noise
from dplong import LongitudinalOLS
from dplong.models import linear, release_blocks
from dplong.models.release_blocks import counts_tail, sound_plan
from dplong.models.within import within_shares
from dplong.models.within.basis import _Basis
from dplong.models.within.noise import _walk
from dplong.privacy.accounting import PrivacyLedger, compose
from dplong.privacy.engine import Release
from dplong.privacy.options import ReleaseOptions
from dplong.results import PanelResults

pytestmark = [
    # no tail count checks the last step's exponential tail here (a stated scale): a public
    # note, said by every fit
    pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning"),
    pytest.mark.usefixtures("fast_compose"),  # exact memo of the budget arithmetic: speed only
]

# ---------------------------------------------------------------------------------------------
# The setting: "y ~ x", n = 2,000 users, ε = 2, δ = 1e-3, stated scale 1, max_rows = 3
# ---------------------------------------------------------------------------------------------
# within_shares(2000, 1, 2.0, sound, counted) = (0.4, 0.075, 0.075, 0.45): the design's row
# (Z'Z[x,x], Z'y[x]), two early Newton steps of EARLY_USERS = 300 users' worth of ε n each (two
# fit in EARLY_CAP = 25 % of the influence's share, and sound_plan accepts their share), then
# the last step. At p = 1 one early step needs n ε >= ~2,000 and two ~4,000, so n = 2,000 is
# the smallest n at which ε = 2 takes both; the claim must stay small for the power checks to
# exceed it (an event that fires in 59 % of the runs on one data set and never on the other
# reaches ε_lb = 2 at ~150 runs per data set under this Bonferroni correction, ε_lb = 4 only at
# ~900).
# Why a stated scale: it makes the early steps cheap and their number a public constant. With
# it the steps are one final mean each (centred on the public 0: no median, no refinement; the
# first block's weighted count, count_from = 0; no private scale), the design a count, a
# private median and a rough mean per column before its means, and counts_tail is False, so
# the number of early steps is decided by EARLY_CAP and sound_plan alone, the same in every
# run (checked on every audited run). With the scale estimated each block adds private
# medians and tail counts, and this audit's runtime is its number of fits (~20 ms each here).
# Why max_rows = 3: the others have three rows, so each has the precision weight 1
# (min(T_u - 1, T_cap - 1) / (T_cap - 1)) and the weighted count is ~n; under the default cap
# 10 their weight is 2/9 and the design's noise ~4.5 times larger, which withheld x (no
# distinguishable within variation) in the fits tried at this n ε. The far users have 12 rows,
# beyond the cap: their weight is capped at 1 too.
#
# The others (n - 1 users) have x = (0, 1, 2) and y = 0.5 x + e, e ~ N(0, 1.4²) fixed (seed
# 70): per degree of freedom Z'Z = 1, and Z'y and the influence values spread with sd ~1 (the
# stated scale) about their means, so the last step's second moment sits above its floor (the
# stated sd) and sampling_sd moves with user 0 (with identical others it is floored and never
# moves). User 0 is
#   * "down" / "up": 12 rows, x = 10⁶ (0, 1, 2) repeated, y = 0.01 x / 100 x: Z'Z = 7.3e11 and
#     Z'y = 7.3e9 / 7.3e13 per degree of freedom, both beyond the top of every design interval
#     and above every other user's (the same rank for the private medians), so the design
#     releases have one law on the two data sets (bit for bit the same draws for a seed:
#     test_within_reference); every step's influence value Z'Z (0.01 - β) / Â or
#     Z'Z (100 - β) / Â is clipped to the bottom / top of its interval (β ≈ 0.5). The pair
#     moves every Newton step (the early ones and the last) by its full sensitivity, and
#     nothing else: its transcript is held to the early steps' own ε.
#   * "singular": three rows with x = (5, 5, 5) and y = 10⁶ (0, 1, 2) — a singular within
#     design: X̃ = 0, so Z'Z, Z'y and the influence values are exactly 0 whatever y is
#     (counted, weight 1);
#   * "one-row": a single row (x, y) = (1, 10⁶) — too few rows for a within statistic: NaN,
#     neither counted nor summed.
# Pairs: far both ways; singular vs up (the design and every step move by half the
# sensitivity); one row vs up (and the count); singular vs one row (the count, and a zero in
# every mean's sum). An overflowing user (x = (3, -3, 0), y = (1e308, -1e308, 0): X̃'ỹ = inf,
# the overflow of test_privacy_audit_models.py) gets no runs: it is released exactly as "up",
# the same draws for a seed (test_within_reference: inf is clipped to the same ends as 7.3e13,
# its Z'Z = 9 beyond the design interval's top, ~6, as 7.3e11; both counted, the same ranks).

N, EPS, DELTA, SCALE, MAX_ROWS = 2000, 2.0, 1e-3, 1.0, 3
ROWS = np.array([0.0, 1.0, 2.0])
OTHERS_NOISE = np.random.default_rng(70).normal(0.0, 1.4, (N - 1) * ROWS.size)
STEEP = FAR * np.tile(ROWS, 4)
USERS: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {
    "down": (STEEP, 0.01 * STEEP),
    "up": (STEEP, 100.0 * STEEP),
    "singular": (np.full(3, 5.0), FAR * ROWS),
    "one-row": (np.array([1.0]), np.array([FAR])),
}
OVERFLOW = (np.array([3.0, -3.0, 0.0]), np.array([1e308, -1e308, 0.0]))
#: The pair whose design releases have one law (user 0 clipped alike in every design stage).
SAME_DESIGN = ("down", "up")
#: The outputs of a run: the results' numbers (x's estimate, sampling sd, noise sd, bias bound;
#: the weighted count), then the transcript's design and the β after each early step (β₀ plus
#: the early steps' released moves where used, as the fit steps: _walk), then — checked, not
#: audited — how many early steps the fit used (a function of released numbers).
COLUMNS = ("x", "sampling sd", "noise sd", "bias", "users", "Z'Z[x,x]", "Z'y[x]", "beta1", "beta2")
USED = len(COLUMNS)
#: Each audit's columns, and the groups (positions among them) whose joint tails it adds to the
#: outputs' own tails: the results' together; the transcript's together, the design's, and the
#: early steps' (β₁ and β₂ each move by a step's clipped user with a noise of their own: on
#: their joint tail the two steps' losses add up).
AUDITS = {
    "results": ([0, 1, 2, 3, 4], [[0, 1, 2, 3, 4]]),
    "transcript": ([4, 5, 6, 7, 8], [[0, 1, 2, 3, 4], [1, 2], [3, 4]]),
}
#: Fits per data set, ~20 ms each (CPU; ~60 s for the file's 3,240): the pilots (their medians
#: fix the events: 60 runs put a median within ~0.1-0.16 noise sds of the law's, which only
#: the audits' power depends on), the audited runs, and the broken fits' runs. RUNS is where the
#: far pair's tightness bar (test_within_audit) passes on these seeds with a margin: the
#: results' ε_lb on prefixes of the runs is 0.085 at 300, 0.193 at 400, 0.210 at 450, 0.289 at
#: 500 (bar 0.1). The power checks on prefixes of the broken runs: every draw broken, 2.14 at
#: 150, 2.43 at 200, 2.65 at 250 (bar 2: the Clopper–Pearson ceiling of an event that never
#: fires on the other data set, ~log(0.5 R / 8.5) here, is what limits it); the early steps
#: broken, 0.87, 1.01, 1.13 (bar 0.34).
PILOT, RUNS, BROKEN_RUNS = 60, 500, 250


@cache
def _model(user: str) -> LongitudinalOLS:
    """The data set with user 0's rows (any number; ``USERS[user]`` or "overflow"), then the
    n - 1 others."""
    x0, y0 = OVERFLOW if user == "overflow" else USERS[user]
    others = np.tile(ROWS, N - 1)
    frame = pd.DataFrame(
        {
            "user": np.concatenate([np.zeros(x0.size, int), np.repeat(np.arange(1, N), 3)]),
            "x": np.concatenate([x0, others]),
            "y": np.concatenate([y0, 0.5 * others + OTHERS_NOISE]),
        }
    )
    return LongitudinalOLS.from_formula("y ~ x", frame, groups="user")


def _fit(model: LongitudinalOLS, rng: np.random.Generator) -> tuple[PanelResults, list[Release]]:
    """One within fit, and the releases its results were assembled from (the design's, the
    early steps', the last step's: read by wrapping ``within_results``, which they pass through
    unchanged)."""
    seen: list[Release] = []
    assemble = linear.within_results

    def spy(releases: tuple[Release, ...], **kwargs: Any) -> PanelResults:
        seen.extend(releases)
        return assemble(releases, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linear, "within_results", spy)
        res = model.fit(
            epsilon=EPS,
            delta=DELTA,
            estimator="within",
            scale=SCALE,
            max_rows=MAX_ROWS,
            random_state=rng,
        )
    return res, seen


def _row(res: PanelResults, releases: list[Release]) -> list[float]:
    """A run's outputs (:data:`COLUMNS`) and the number of early steps it used."""
    design, *early, _ = releases
    basis = _Basis.of((design,), 1)
    walk = _walk(basis, early, res.gamma)
    stepped = basis.pilot[0] + np.cumsum([move[0] for move in walk.moves])
    numbers = [
        *(float(s.iloc[0]) for s in (res.params, res.sampling_sd, res.noise_sd, res.bias)),
        float(res.users.iloc[0]),
        *design.estimate,
        *stepped,
    ]
    return [*numbers, float(sum(bool(u[0]) for u in walk.used))]


def _mechanism(user: str) -> Callable[[np.random.Generator], list[float]]:
    model = _model(user)

    def mechanism(rng: np.random.Generator) -> list[float]:
        return _row(*_fit(model, rng))

    return mechanism


@cache
def _reference() -> tuple[PanelResults, list[Release]]:
    """One fit with a seed of its own: its ledger holds the claims."""
    return _fit(_model("singular"), np.random.default_rng(0))


def _claims(ledger: PrivacyLedger | None = None) -> dict[str, tuple[float, float]]:
    """The (ε, δ) each audit is held to, from the reference's ledger: the whole ledger
    (``"results"``); its entries up to the second early step composed at its δ
    (``"transcript"``: a prefix of the fit's adaptive composition, whose final stages are
    calibrated against what was spent before them); the early steps' entries alone, likewise
    (``"early steps"``). Or from another fit's ``ledger``."""
    ledger = _reference()[0].privacy if ledger is None else ledger
    entries = list(ledger.entries)
    last = max(i for i, e in enumerate(entries) if e.target == "step2[x]")
    prefix = compose([e.cost for e in entries[: last + 1]], ledger.delta)
    steps = compose([e.cost for e in entries if e.target.startswith("step")], ledger.delta)
    return {
        "results": (float(ledger.epsilon), float(ledger.delta)),
        "transcript": (float(prefix.epsilon), float(prefix.delta)),
        "early steps": (float(steps.epsilon), float(steps.delta)),
    }


def _claim(audit: str, pair: tuple[str, str]) -> tuple[float, float]:
    """The (ε, δ) an audit of a pair is held to. The transcript of the pair whose design
    releases have one law (:data:`SAME_DESIGN`) is held to the early steps' own: given any
    released design the early steps are mechanisms of their own, and the design's draws are the
    same mechanism on the same clipped values and ranks in both data sets (checked draw for draw
    in test_within_reference), so the transcript's privacy loss on that pair is the steps'."""
    if audit == "transcript" and pair == SAME_DESIGN:
        return _claims()["early steps"]
    return _claims()[audit]


def test_within_reference() -> None:
    res, releases = _reference()
    ledger = res.privacy
    assert ledger.epsilon <= EPS * (1 + 1e-12) and ledger.delta <= DELTA
    assert ledger.epsilon == pytest.approx(EPS, rel=1e-9)
    # the early Newton steps ran: one centred final mean each (no median, no refinement, the
    # first block's count), between the design and the last step (with its second moment)
    assert [(e.stage, e.target) for e in ledger.entries] == [
        ("count", "users with a statistic (weighted)"),
        ("midpoint", "Z'Z[x,x]"),
        ("midpoint", "Z'y[x]"),
        ("refinement", "Z'Z[x,x]"),
        ("refinement", "Z'y[x]"),
        ("mean", "Z'Z[x,x]"),
        ("mean", "Z'y[x]"),
        ("mean", "step1[x]"),
        ("mean", "step2[x]"),
        ("mean", "influence[x]"),
        ("second moment", "influence[x]"),
    ]
    assert [r.names for r in releases] == [
        ("Z'Z[x,x]", "Z'y[x]"),
        ("step1[x]",),
        ("step2[x]",),
        ("influence[x]",),
    ]
    # ... as the public plan says (within_shares with the fit's sound_plan and counts_tail)
    options = ReleaseOptions.check(N, epsilon=EPS, delta=DELTA, privacy="central", bound=None, d=1)
    shares = within_shares(
        N,
        1,
        EPS,
        lambda share: sound_plan(N, 1, options, share, stated=True, weighted=True),
        lambda share: counts_tail(N, 1, options, share, stated=True),
    )
    assert len(shares) == 4 and shares[1] == shares[2] > 0.0
    # and both were used (each within the error it was to correct: _walk), x released
    assert _row(res, releases)[USED] == 2
    assert np.isfinite(res.params.iloc[0])
    # the claims: the early steps' entries < the prefix up to them < the ledger, within its δ
    claims = _claims()
    assert 0.0 < claims["early steps"][0] < claims["transcript"][0] < claims["results"][0]
    assert all(delta <= ledger.delta for _, delta in claims.values())
    # who has a within statistic (non-private diagnostics: they pin the pairs down)
    products = {user: _model(user)._within_products() for user in USERS}
    rows = {user: float(products[user][1][0]) for user in USERS}
    assert rows == {"down": 12.0, "up": 12.0, "singular": 3.0, "one-row": 1.0}
    np.testing.assert_array_equal(products["singular"][0][0], [0.0, 0.0])
    assert np.all(np.isnan(products["one-row"][0][0]))
    # the far users' per-degree-of-freedom Z'Z and Z'y, and their influence values at any β
    # near 0.5 (Â near 1), lie far beyond every interval of the fit (and above all the others')
    reach = max(np.abs(r.interval).max() for r in releases)
    assert reach < 1e2
    for user, sign in (("down", -1.0), ("up", 1.0)):
        zz, zy = products[user][0][0] / (rows[user] - 1.0)
        assert zz > 1e11 and zy > 1e9 and sign * (zy - 0.5 * zz) > 1e9
    # ... so the design releases are the same draws for a seed on the two data sets (one law),
    # and the steps are not; an overflowing user is released exactly as "up" (inf clipped to the
    # same ends, counted): the whole fit the same draws for a seed. The claims hold for these
    # fits' ledgers too (PLAN splits the design's ε by its released radii, run by run: the
    # claimed sums move by < 1e-9)
    for seed in range(3):
        (down, low), (up, high), (overflow, inf) = (
            _fit(_model(user), np.random.default_rng(seed)) for user in (*SAME_DESIGN, "overflow")
        )
        for field in ("estimate", "interval", "noise_sd", "bias", "users"):
            np.testing.assert_array_equal(getattr(low[0], field), getattr(high[0], field))
        assert low[1].estimate[0] < high[1].estimate[0]
        assert _row(overflow, inf) == _row(up, high)
        for fit in (down, up, overflow):
            for name, (epsilon, delta) in _claims(fit.privacy).items():
                assert epsilon == pytest.approx(claims[name][0], rel=1e-9)
                assert delta == claims[name][1]


@session_cache
def _runs(user: str, kind: str) -> NDArray[np.float64]:
    """Seeded runs on one data set, each kind from seeds of its own: ``"pilot"`` (the events'
    centres), ``"audit"``, ``"broken"`` (every Laplace draw at BROKEN_EPSILON_FACTOR times its
    ε: :func:`~audit.release_runs`) and ``"broken steps"`` (only the early steps' means so:
    :func:`_break_early_steps`). A withheld number is an output too: -FAR, in every lower
    tail (none was withheld in the runs measured)."""
    index = list(USERS).index(user)
    mechanism = _mechanism(user)
    if kind == "pilot":
        outputs = repeat(mechanism, PILOT, 4100 + index)
    elif kind in ("audit", "broken"):  # the broken runs from seed 4205 + index
        outputs = release_runs(mechanism, RUNS, BROKEN_RUNS, 4200 + index, kind == "broken")
    else:
        with pytest.MonkeyPatch.context() as patch:
            _break_early_steps(patch)
            outputs = repeat(mechanism, BROKEN_RUNS, 4300 + index)
    return np.nan_to_num(outputs, nan=-FAR)


def _break_early_steps(patch: pytest.MonkeyPatch) -> None:
    """The early steps' blocks released with their Laplace draws at BROKEN_EPSILON_FACTOR times
    their ε (a step block draws its mean only: test_within_reference), the ledger unchanged."""
    honest_release = release_blocks.release_means
    honest_sum = dplong.privacy.noise.release_bounded_sum

    def noisier(clipped: Any, radius: Any, budget: Any, rng: Any, **kw: Any) -> Any:
        return honest_sum(clipped, radius, budget * BROKEN_EPSILON_FACTOR, rng, **kw)

    def release(matrix: Any, *, names: tuple[str, ...], **kwargs: Any) -> Release:
        if not names[0].startswith("step"):
            return honest_release(matrix, names=names, **kwargs)
        with pytest.MonkeyPatch.context() as inner:
            patch_draws(inner, "release_bounded_sum", noisier)
            return honest_release(matrix, names=names, **kwargs)

    patch.setattr(release_blocks, "release_means", release)


def _bound(pair: tuple[str, str], audit: str, kind: str = "audit") -> EpsilonBound:
    """ε_lb of the outputs of ``audit`` (:data:`AUDITS`) on the runs ``kind`` of both data sets,
    at the δ it is held to: the tails of every output at the centres (the pilots' medians, the
    same events whatever ``kind``), and the joint tails of each group of outputs."""
    columns, groups = AUDITS[audit]
    labels = [COLUMNS[k] for k in columns]
    centres = [np.median(_runs(user, "pilot")[:, columns], axis=0) for user in pair]
    low, high = np.minimum(*centres), np.maximum(*centres)
    matrices = []
    for user in pair:
        outputs = _runs(user, kind)[:, columns]
        events, names = [], []
        for k, label in enumerate(labels):
            tails, tail_names = tail_events(outputs[:, k], low[k], high[k], 0.0, (0,), label)
            events.append(tails)
            names += tail_names
        for group in groups:
            joint, joint_names = joint_tail_events(
                outputs[:, group], low[group], high[group], [labels[k] for k in group]
            )
            events.append(joint)
            names += joint_names
        matrices.append(np.concatenate(events, axis=1))
    _, delta = _claim(audit, pair)
    return epsilon_lower_bound(
        matrices[0], matrices[1], delta=delta, confidence=CONFIDENCE, names=names
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pair", "least", "most"),
    [
        (SAME_DESIGN, 0.05, 1.0),
        (("singular", "up"), -math.inf, 1.0),
        (("one-row", "up"), -math.inf, 1.0),
        (("singular", "one-row"), -math.inf, 0.1),
    ],
    ids=["far-both-ways", "singular-vs-far", "one-row-vs-far", "singular-vs-one-row"],
)
def test_within_audit(pair: tuple[str, str], least: float, most: float) -> None:
    for audit in AUDITS:
        claim, _ = _claim(audit, pair)
        bound = _bound(pair, audit)
        print(report(f"within {audit} {pair}", bound, claim))
        assert bound.epsilon_lb <= claim, str(bound)
        # tightness (not a privacy claim). The far pair moves x by the last step's full
        # sensitivity (its final stage: ε 0.87 of the claim's 2): the results' x <= low tail
        # fires in 46 % of the runs on one data set, 22 % on the other (log-ratio 0.76), which
        # the Clopper–Pearson margins at 500 runs and 12 events (α = 2.1e-4: ±0.08 on a rate of
        # 0.5) cut to 0.29 — a positive bound is what the pair can be asked for (RUNS). The
        # singular and the one-row user differ in nothing a correct fit releases but the
        # count (ε 0.08) and a zero in every mean's sum (x̃ = 0: the singular user's y, 10⁶
        # (0, 1, 2), must not show; measured -0.22 and -0.23). The early steps' 0.34 in all,
        # and the design's share, are beyond what 500 runs resolve in the transcript (-0.17
        # to -0.07): the power check below shows what it does see.
        if audit == "results":
            assert bound.epsilon_lb > least * claim, str(bound)
        assert bound.epsilon_lb <= most * claim, str(bound)
    # every audited run took both early steps (the setting is what it claims to be: all of the
    # 2,000 measured)
    for user in pair:
        assert np.all(_runs(user, "audit")[:, USED] == 2), user


@pytest.mark.slow
def test_within_audit_has_power() -> None:
    """Every Laplace draw of the fit at 8 ε (noise / 8, the ledger unchanged), on the far pair:
    the results audit, with the events it audits the fit with, must exceed the ledger's ε. The
    last step alone then has 8 x 0.87 = 7 (x's tail fires in ~59 % of the runs on one data set
    and never on the other), and the bound sits at the Clopper–Pearson ceiling of 250 runs
    (2.65; BROKEN_RUNS)."""
    claim, _ = _claim("results", SAME_DESIGN)
    bound = _bound(SAME_DESIGN, "results", "broken")
    print(report("within results, every draw noise/8", bound, claim))
    assert bound.epsilon_lb > claim, str(bound)


@pytest.mark.slow
def test_within_audit_sees_broken_early_steps() -> None:
    """Only the early steps' means at 8 ε (their noise / 8, the ledger unchanged), on the far
    pair: the transcript audit, with the events it audits the fit with, must exceed its claim
    (the early steps' own ε, 0.34). Broken, each step moves β by 8 x 0.17 = 1.3 of its noise
    scale, and on the joint tail of β₁ and β₂ the two add up (the tail fires in ~1/3 of the
    runs on one data set, 2 % on the other: 1.13 at 250 runs; BROKEN_RUNS). The results audit
    does not see it (printed for the record: 0.29, as the honest fit's): the last Newton step
    corrects what the early steps did, their noise included."""
    claim, _ = _claim("transcript", SAME_DESIGN)
    bound = _bound(SAME_DESIGN, "transcript", "broken steps")
    print(report("within transcript, early steps noise/8", bound, claim))
    results = _bound(SAME_DESIGN, "results", "broken steps")
    print(report("within results, early steps noise/8", results, _claim("results", SAME_DESIGN)[0]))
    assert bound.epsilon_lb > claim, str(bound)
