"""Privacy audit (docs/design §5.4) of the grouped mean, ``winsorized_mean(by=, levels=)``: one
user replaced, moving between the declared levels, or to an undeclared key.

Same recipe as ``test_privacy_audit_models.py`` (helpers in ``tests/audit.py``): two data sets
that differ by *replacing one user* (their value and their key), many seeded runs on each,
events fixed before the runs — the tails of both levels' estimates and private counts at their
noiseless values (computed exactly from the two data sets and the public intervals of one
reference release drawn with another seed), and the joint tails —, Bonferroni-corrected
Clopper–Pearson bounds at family-wise confidence :data:`~audit.CONFIDENCE`, and the assertion
``ε_lb <= ε`` of the release's ledger. The user who changes level changes *two* levels'
statistics at once (one loses a user, the other gains one): the case where a grouped release
that gave every level the whole ε (parallel composition under add/remove neighbours) would
spend twice its claim. POWER: the same audit detects a release whose final stages draw their
noise at :data:`~audit.BROKEN_EPSILON_FACTOR` times their recorded ε.

The other 399 users hold exactly 0 (199 at level 0, 200 at level 1), so the private medians find
the cell at 0 in every run and the distinguishing power sits in the replaced user. The scale is
stated: each level's column is released as count, midpoint and mean.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from audit import (
    BROKEN_EPSILON_FACTOR,
    FAR,
    EpsilonBound,
    fast_compose,  # noqa: F401 (a fixture, used through pytestmark)
    pair_bound,
    repeat,
    report,
)
from numpy.typing import NDArray

import dplong
import dplong.privacy.engine
from dplong.results import PanelResults

pytestmark = [
    # 400 users in two levels: the plan's reliability notes (public facts) fire, as they should
    pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning"),
    pytest.mark.usefixtures("fast_compose"),  # exact memo of the budget arithmetic: speed only
]

N, EPS, DELTA = 400, 2.0, 1e-3
LEVELS = [0, 1]
OTHER_KEYS = np.arange(1, N) % 2  # 199 users at level 0, 200 at level 1
#: user 0: (key, value); 7 is no declared level
USERS = {"0:+far": (0, FAR), "1:-far": (1, -FAR), "undeclared": (7, FAR)}
#: ~35 ms per release (CPU, memoised budget arithmetic): 1,000 per data set; the broken release
#: moves each level by ~2.6 noise scales, both together: 800 runs show it
RUNS, BROKEN_RUNS = 1_000, 800
LABELS = ("y[by=0]", "y[by=1]", "users 0", "users 1")


def release(user: str, rng: np.random.Generator) -> PanelResults:
    key, value = USERS[user]
    return dplong.winsorized_mean(
        np.r_[value, np.zeros(N - 1)],
        by=np.r_[key, OTHER_KEYS],
        levels=LEVELS,
        names=["y"],
        epsilon=EPS,
        delta=DELTA,
        scale=1.0,
        random_state=rng,
    )


@cache
def reference() -> PanelResults:
    return release("undeclared", np.random.default_rng(0))


def noiseless(user: str) -> NDArray[np.float64]:
    """Both levels' estimates and counts without noise, on the reference's public intervals."""
    key, value = USERS[user]
    interval = reference().projection_interval.to_numpy()
    centre, radius = interval.mean(axis=1), np.diff(interval, axis=1)[:, 0] / 2.0
    others = np.array([np.sum(OTHER_KEYS == k) for k in LEVELS], dtype=np.float64)
    present = np.array([key == k for k in LEVELS], dtype=np.float64)
    own = present * np.clip(value - centre, -radius, radius)
    count = others + present
    estimates = centre + (own + others * np.clip(-centre, -radius, radius)) / count
    return np.concatenate([estimates, count])


def steps() -> list[float]:
    ref = reference()
    counts = [e.noise_scale for e in ref.privacy.entries if e.stage == "count"]
    return [*ref.noise_scale.to_numpy(), *counts]


def mechanism(user: str) -> Any:
    def run(rng: np.random.Generator) -> list[float]:
        res = release(user, rng)
        return [*res.params.to_numpy(), *res.users.to_numpy()]

    return run


@cache
def outputs(user: str, broken: bool = False) -> NDArray[np.float64]:
    seed = 7000 + 10 * list(USERS).index(user)
    if not broken:
        return repeat(mechanism(user), RUNS, seed)
    honest = dplong.privacy.engine.release_bounded_sum

    def noisier(clipped: Any, radius: Any, budget: Any, rng: Any, **kw: Any) -> Any:
        return honest(clipped, radius, budget * BROKEN_EPSILON_FACTOR, rng, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dplong.privacy.engine, "release_bounded_sum", noisier)
        return repeat(mechanism(user), BROKEN_RUNS, seed + 5)


def audit(pair: tuple[str, str], broken: bool = False) -> EpsilonBound:
    return pair_bound(
        (outputs(pair[0], broken), outputs(pair[1], broken)),
        (noiseless(pair[0]), noiseless(pair[1])),  # type: ignore[arg-type]
        steps(),
        LABELS,
        reference().privacy.delta,
        (0, 1),
    )


def test_reference() -> None:
    ref = reference()
    assert ref.privacy.epsilon == pytest.approx(EPS, rel=1e-9) and ref.privacy.delta <= DELTA
    assert sorted(e.stage for e in ref.privacy.entries) == ["count"] * 2 + ["mean"] * 2 + [
        "midpoint"
    ] * 2
    # the user who changes level moves both levels: clipped to the upper end of level 0's
    # interval in one data set, to the lower end of level 1's in the other
    a, b, none = (noiseless(u) for u in USERS)
    assert a[2:].tolist() == [200.0, 200.0] and b[2:].tolist() == [199.0, 201.0]
    assert none[2:].tolist() == [199.0, 200.0]  # an undeclared key: at no level
    radius = np.diff(ref.projection_interval.to_numpy(), axis=1)[:, 0] / 2.0
    assert a[0] > none[0] + 0.9 * radius[0] / 200 and b[1] < none[1] - 0.9 * radius[1] / 201


@pytest.mark.slow
@pytest.mark.parametrize(
    ("pair", "least"),
    [(("0:+far", "1:-far"), 0.05), (("undeclared", "0:+far"), 0.0)],
    ids=["moves-between-levels", "undeclared-vs-a-level"],
)
def test_grouped_audit(pair: tuple[str, str], least: float) -> None:
    claim = reference().privacy.epsilon
    bound = audit(pair)
    print(report(f"grouped mean {pair}", bound, claim))
    assert bound.epsilon_lb <= claim, str(bound)
    # tightness (not a privacy claim): a user who is at a level in one data set and not in
    # the other moves that level's mean by half its sensitivity (r/n_k, not 2r/n_k), about
    # 0.33 noise scales here: the mover shows 0.16 of 2 on the joint tail of both levels, the
    # undeclared user 0.03 on level 0 alone, after the Clopper–Pearson margins at 1,000 runs
    assert bound.epsilon_lb > least * claim, str(bound)


@pytest.mark.slow
def test_grouped_audit_power() -> None:
    """POWER: the final stages' noise at 1/8 of its scale is detected on the moving user
    (ε_lb 2.4 against the claimed 2, on the joint tail of both levels)."""
    claim = reference().privacy.epsilon
    bound = audit(("0:+far", "1:-far"), broken=True)
    print(report("grouped mean, broken final stages", bound, claim))
    assert bound.epsilon_lb > claim, str(bound)
