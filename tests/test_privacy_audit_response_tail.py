"""Privacy audit (docs/design §5.4) of item-level PriestleyChao's tail count
(``response_centre.response_tail``): the engine's count of the responses beyond the rung
``TAIL_RUNG σ̂`` from the released centre, its ε carved from the curve's calibrated budget
(``FinalBudget.tail_split``), with two-sided geometric noise (sensitivity 1: replacing one unit
moves it by at most 1). What is audited is that the count drawn on this path is as noisy as the
ledger entry it writes claims: the engine's count itself is audited in
``test_privacy_audit_tail.py``.

The recipe is that of ``test_privacy_audit_tail.py`` (helpers in ``tests/audit.py``): 2,000
normal responses; unit 0 at the centre, FAR away, or missing; the stage's public inputs (the
located centre, scale and plan, the curve's weights) fixed once from one location of the base
data, as the fit releases them before the stage; seeded runs of the stage, the count read back
from its upper confidence count (a public shift); tail events fixed from the noiseless counts;
a POWER check on a replica with a quarter of the noise, which reproduces the package un-broken.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest
from audit import (
    BROKEN_NOISE_FRACTION,
    CONFIDENCE,
    FAR,
    audited_runs,
    epsilon_lower_bound,
    report,
    tail_events,
)
from numpy.typing import NDArray
from session_cache import session_cache

import dplong.models.response_centre as response_centre
from dplong.kernels import get_kernel, item_weights
from dplong.models.response_centre import engine_centre, response_tail
from dplong.privacy.budget import vector_budget, vector_plan
from dplong.privacy.noise import geometric_rate, two_sided_geometric, two_sided_geometric_variance
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.tails import EDGE_SDS, TAIL_RUNG
from dplong.privacy.vector import gaussian_is_better, unit_norms

N, EPS = 2000, 4.0
BASE = np.random.default_rng(5).normal(size=N)
X = np.arange(N) / N
WEIGHTS = item_weights(X, np.linspace(0.05, 0.95, 10), get_kernel("gaussian"), 0.1, 1.0)
USERS = {"centre": 0.0, "far": FAR, "none": math.nan}
OPTIONS = ReleaseOptions.check(N, epsilon=EPS, delta=None, privacy="central", bound=None, d=1)
#: the stage's public inputs: what the fit released before it (one location of the base data)
WHERE = engine_centre(
    BASE,
    "y",
    vector_plan(N, OPTIONS, stated_scale=False),
    OPTIONS,
    np.random.default_rng(0),
    math.nan,
    0.0,
)
#: ~0.3 ms a run (a budget split, the stage, the count over 2,000 responses): 20,000 per data
#: set (ε_lb 0.20-0.21 of the claimed 0.261); the broken replica is far off (0.99), 10,000
#: show it
RUNS, BROKEN_RUNS = 20_000, 10_000


def _responses(user: str) -> NDArray[np.float64]:
    y = BASE.copy()
    y[0] = USERS[user]
    return y


def _run(y: NDArray[np.float64], rng: np.random.Generator) -> tuple[Any, Any]:
    """One run of the stage: its ``ResponseTail`` and the engine's ``TailFinding`` under it."""
    found: list[Any] = []
    rule = response_centre.tail_rule

    def spy(*args: Any, **kwargs: Any) -> Any:
        found.append(rule(*args, **kwargs))
        return found[-1]

    response_centre.tail_rule = spy
    try:
        tail = response_tail(y, "y", WHERE, WEIGHTS, rng)
    finally:
        response_centre.tail_rule = rule
    return tail, found[0]


@cache
def _claim() -> float:
    """The ε the stage's ledger entry claims for its count."""
    (entry,) = _run(_responses("centre"), np.random.default_rng(0))[0].entries
    return float(entry.epsilon)


def _package(user: str) -> Callable[[np.random.Generator], float]:
    sd = math.sqrt(float(two_sided_geometric_variance(geometric_rate(_claim(), 1.0))))
    y = _responses(user)

    def mechanism(rng: np.random.Generator) -> float:
        return float(_run(y, rng)[1].reach[0] - EDGE_SDS * sd)

    return mechanism


def _beyond(user: str) -> int:
    """The noiseless count: responses beyond the rung from the released centre."""
    location = WHERE.location
    assert location is not None
    deviations = np.abs(_responses(user) - location.centre[0])
    return int(np.sum(deviations > TAIL_RUNG * location.sd[0]))


def _replica(user: str, noise_fraction: float) -> Callable[[np.random.Generator], float]:
    """The count rebuilt from its definition at the ledger's ε, the noise scale divided by
    ``noise_fraction``: un-broken it is the package draw for draw."""
    exact, rate = _beyond(user), float(geometric_rate(_claim(), 1.0)) / noise_fraction

    def mechanism(rng: np.random.Generator) -> float:
        return float(exact + two_sided_geometric(rng, rate, (1,))[0])

    return mechanism


def test_the_stage_counts_and_claims_what_the_replica_draws() -> None:
    """The count runs on this path (n ε affords it), marks nothing heavy (so no second rung
    draws), and the package and the replica agree draw for draw."""
    tail, found = _run(_responses("far"), np.random.default_rng(0))
    assert WHERE.plan is not None and WHERE.plan.tail > 0
    assert not found.heavy[0] and len(tail.entries) == 1
    assert tail.entries[0].sensitivity == 1.0
    assert _beyond("far") == _beyond("centre") + 1 and _beyond("none") == _beyond("centre")
    for user in USERS:
        for seed in range(20):
            package = _package(user)(np.random.default_rng(seed))
            assert _replica(user, 1.0)(np.random.default_rng(seed)) == package


@session_cache
def _outputs(user: str, noise_fraction: float) -> NDArray[np.float64]:
    seed = 9100 + 10 * list(USERS).index(user) + int(noise_fraction != 1.0)
    return audited_runs(
        _package(user), _replica(user, noise_fraction), noise_fraction, (RUNS, BROKEN_RUNS), seed
    )


def _audit(pair: tuple[str, str], noise_fraction: float = 1.0) -> float:
    claim = _claim()
    counts = [_beyond(u) for u in pair]
    step = 1.0 / float(geometric_rate(claim, 1.0))
    first, second = (_outputs(user, noise_fraction) for user in pair)
    events_d, names = tail_events(first, min(counts), max(counts), step, (0, 1, 2), "count")
    events_d_prime, _ = tail_events(second, min(counts), max(counts), step, (0, 1, 2), "count")
    bound = epsilon_lower_bound(
        events_d, events_d_prime, delta=0.0, confidence=CONFIDENCE, names=names
    )
    print(report(f"item-level tail count {pair} noise/{1 / noise_fraction:g}", bound, claim))
    return bound.epsilon_lb


@pytest.mark.slow
@pytest.mark.parametrize(
    "pair", [("centre", "far"), ("none", "far")], ids=["inside-vs-far", "none-vs-far"]
)
def test_item_level_tail_count_audit(pair: tuple[str, str]) -> None:
    assert _audit(pair) <= _claim()


def test_item_level_tail_count_audit_has_power() -> None:
    assert _audit(("centre", "far"), BROKEN_NOISE_FRACTION) > 1.5 * _claim()


def test_the_claim_is_the_tail_share_of_the_curves_budget() -> None:
    """The count's ε is the plan's tail share of the curve's budget for the mechanism its
    weights pick, calibrated with it (``FinalBudget.tail_split``: of the Laplace ε, or
    ``√(2 share ρ)`` of the Gaussian ρ), after the local spread's share is split off
    (``FinalBudget.split``, the scale being estimated): the ledger claims what the budget
    module carved."""
    assert WHERE.plan is not None and WHERE.location is not None
    whole = vector_budget(WHERE.plan, refined=WHERE.location.refined)
    share, kept = WHERE.plan.tail, 1.0 - WHERE.plan.moment_share
    assert kept < 1.0  # the spread's share is taken first
    expected = (
        math.sqrt(2.0 * share * whole.rho * kept)
        if gaussian_is_better(unit_norms(WEIGHTS), whole)
        else whole.epsilon * kept - whole.epsilon * kept * (1.0 - share)
    )
    assert _claim() == pytest.approx(expected, rel=1e-12)
