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

import numpy as np
import pytest
from audit import (
    FAR,
    GroupedAudit,
    fast_compose,  # noqa: F401 (a fixture, used through pytestmark)
    report,
)

import dplong
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


AUDIT = GroupedAudit(release, LEVELS, OTHER_KEYS, USERS, "undeclared", RUNS, BROKEN_RUNS, 7000)


def test_reference() -> None:
    ref = AUDIT.reference_release
    assert ref.privacy.epsilon == pytest.approx(EPS, rel=1e-9) and ref.privacy.delta <= DELTA
    assert (
        sorted(e.stage for e in ref.privacy.entries)
        == ["count"] * 2 + ["mean"] * 2 + ["midpoint"] * 2
    )
    # the user who changes level moves both levels: clipped to the upper end of level 0's
    # interval in one data set, to the lower end of level 1's in the other
    a, b, none = (AUDIT.noiseless(u) for u in USERS)
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
    claim = AUDIT.reference_release.privacy.epsilon
    bound = AUDIT.bound(pair)
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
    claim = AUDIT.reference_release.privacy.epsilon
    bound = AUDIT.bound(("0:+far", "1:-far"), broken=True)
    print(report("grouped mean, broken final stages", bound, claim))
    assert bound.epsilon_lb > claim, str(bound)
