"""Privacy audit (DESIGN.md §5.4) of the default pipeline: ``scale="estimate"``, end to end.

``dplong.winsorized_mean`` without ``scale`` runs the CoinPress plug-in with a share of the
budget and then the Winsorized mean with the rest (``dplong.privacy.plugin``); both outputs —
the mean and the estimated scale — are released. Each mechanism inside is audited on its own
(``test_privacy_audit.py``, ``test_privacy_audit_variance.py``); this audit checks their
composition as the analyst calls it: the ledger's total ε must bound what the two released
numbers reveal together.

Black box, with events fixed before the audit runs: the tail thresholds are quantiles of a
*pilot* sample drawn with other seeds (independent of the audit sample), for each output on
each data set, plus the joint tails of both outputs. Neighbours: n - 1 users at 0 and user 0
at 0 (D) or moved far away (D'), and far down vs far up.
"""

from __future__ import annotations

import numpy as np
import pytest
from audit import epsilon_lower_bound
from numpy.typing import NDArray

import dplong

pytestmark = [
    pytest.mark.slow,
    # all users but one sit at 0: the scale binds at its lower bound, as the warning says
    pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning"),
]

N, EPS, DELTA, BOUNDS = 1000, 2.0, 1e-3, (1e-2, 1e2)
RUNS, PILOT = 12_000, 2_000
FAR = 1e6
CONFIDENCE = 0.99
QUANTILES = (0.01, 0.1, 0.9, 0.99)


def _release(values: NDArray[np.float64], rng: np.random.Generator) -> tuple[float, float]:
    res = dplong.winsorized_mean(
        values, epsilon=EPS, delta=DELTA, scale_bounds=BOUNDS, random_state=rng
    )
    return float(res.estimate), float(res.scale)


def _outputs(user: float, runs: int, seed: int) -> NDArray[np.float64]:
    values = np.zeros(N)
    values[0] = user
    rng = np.random.default_rng(seed)
    return np.array([_release(values, rng) for _ in range(runs)])


def _events(
    outputs: NDArray[np.float64], thresholds: NDArray[np.float64]
) -> tuple[NDArray[np.bool_], list[str]]:
    """Tails of each output at each threshold, and the joint upper / lower tails of both."""
    columns, names = [], []
    for k, label in enumerate(("mean", "scale")):
        for t in thresholds[:, k]:
            columns += [outputs[:, k] >= t, outputs[:, k] <= t]
            names += [f"{label} >= {t:.4g}", f"{label} <= {t:.4g}"]
    high, low = thresholds.max(axis=0), thresholds.min(axis=0)
    columns += [np.all(outputs >= high, axis=1), np.all(outputs <= low, axis=1)]
    names += ["joint upper", "joint lower"]
    return np.column_stack(columns), names


@pytest.mark.parametrize(("first", "second"), [(0.0, FAR), (-FAR, FAR)], ids=["moved", "far"])
def test_default_pipeline_audit(first: float, second: float) -> None:
    reference = dplong.winsorized_mean(
        np.zeros(N), epsilon=EPS, delta=DELTA, scale_bounds=BOUNDS, random_state=0
    )
    assert reference.privacy.epsilon == pytest.approx(EPS)
    assert any(": variance" in e.target for e in reference.privacy.entries)
    pilot = np.vstack([_outputs(first, PILOT, 101), _outputs(second, PILOT, 102)])
    thresholds = np.quantile(pilot, QUANTILES, axis=0)  # fixed before the audit runs
    events_d, names = _events(_outputs(first, RUNS, 1), thresholds)
    events_d_prime, _ = _events(_outputs(second, RUNS, 2), thresholds)
    bound = epsilon_lower_bound(
        events_d, events_d_prime, delta=DELTA, confidence=CONFIDENCE, names=names
    )
    print(f"\ndefault pipeline {first:g} vs {second:g}: {bound} (claimed eps={EPS:g})")
    assert bound.epsilon_lb <= EPS, str(bound)
