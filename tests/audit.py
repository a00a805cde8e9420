"""Statistics shared by the privacy audits (DESIGN.md §5.4), see ``test_privacy_audit.py``.

An audit runs a mechanism ``M`` many times on two neighbouring data sets ``D`` and ``D'`` and
counts how often a few *fixed* events ``S`` happen. If ``M`` is (ε, δ)-DP then for every event
and both orderings ``P(S; D) <= e^ε P(S; D') + δ``, i.e.

    ε >= log((P(S; D) - δ) / P(S; D')).

Replacing ``P(S; D)`` by a lower and ``P(S; D')`` by an upper one-sided Clopper–Pearson bound
gives an empirical *lower* bound ``ε_lb`` on the true ε that holds with the stated confidence.
The events are fixed before any run (they are functions of the public parameters and of the
two data sets only), and the confidence is Bonferroni-corrected over every bound used: two
bounds (a lower and an upper one) for each event on each data set, i.e. ``4 K`` bounds for
``K`` events. The maximum of ``ε_lb`` over events and orderings is therefore a valid lower
bound at the stated family-wise confidence, with no selection bias.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import beta

__all__ = [
    "EpsilonBound",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "joint_tail_events",
    "repeat",
    "tail_events",
]


def clopper_pearson_lower(hits: int, runs: int, alpha: float) -> float:
    """One-sided ``1 - alpha`` Clopper–Pearson lower bound on a binomial proportion."""
    if hits == 0:
        return 0.0
    return float(beta.ppf(alpha, hits, runs - hits + 1))


def clopper_pearson_upper(hits: int, runs: int, alpha: float) -> float:
    """One-sided ``1 - alpha`` Clopper–Pearson upper bound on a binomial proportion."""
    if hits == runs:
        return 1.0
    return float(beta.ppf(1.0 - alpha, hits + 1, runs - hits))


@dataclass(frozen=True)
class EpsilonBound:
    """The best (largest) ε lower bound of an audit, and the event and ordering behind it."""

    epsilon_lb: float
    event: str
    ordering: str
    rate_first: float  # empirical P(S; first data set of the ordering)
    rate_second: float  # empirical P(S; second)
    confidence: float
    runs: tuple[int, int]

    def __str__(self) -> str:
        return (
            f"eps_lb={self.epsilon_lb:.3f} at {self.confidence:.0%} from event {self.event!r} "
            f"({self.ordering}: rates {self.rate_first:.4g} vs {self.rate_second:.4g}, "
            f"runs {self.runs})"
        )


def epsilon_lower_bound(
    events_d: NDArray[np.bool_],
    events_d_prime: NDArray[np.bool_],
    *,
    delta: float,
    confidence: float,
    names: Sequence[str],
) -> EpsilonBound:
    """Largest ``log((p_lo(S; A) - δ) / p_hi(S; B))`` over events S and orderings (A, B).

    ``events_d`` and ``events_d_prime`` are (runs, K) boolean matrices: column k says whether
    event k happened in each run on D, resp. D'. Returns ``-inf`` as ``epsilon_lb`` when no
    event gives a positive numerator.
    """
    events_d = np.asarray(events_d, dtype=bool)
    events_d_prime = np.asarray(events_d_prime, dtype=bool)
    k = events_d.shape[1]
    if events_d_prime.shape[1] != k or len(names) != k:
        raise ValueError("both event matrices need one column per event name")
    alpha = (1.0 - confidence) / (4 * k)  # Bonferroni over 4K one-sided bounds
    runs = (events_d.shape[0], events_d_prime.shape[0])
    hits = (events_d.sum(axis=0), events_d_prime.sum(axis=0))
    best = EpsilonBound(-math.inf, "none", "none", math.nan, math.nan, confidence, runs)
    for j, name in enumerate(names):
        for first, second, label in ((0, 1, "D vs D'"), (1, 0, "D' vs D")):
            p_lo = clopper_pearson_lower(int(hits[first][j]), runs[first], alpha)
            p_hi = clopper_pearson_upper(int(hits[second][j]), runs[second], alpha)
            numerator = p_lo - delta
            value = math.log(numerator / p_hi) if numerator > 0 else -math.inf
            if value > best.epsilon_lb or best.event == "none":
                best = EpsilonBound(
                    value,
                    name,
                    label,
                    hits[first][j] / runs[first],
                    hits[second][j] / runs[second],
                    confidence,
                    (runs[first], runs[second]),
                )
    return best


def repeat(
    mechanism: Callable[[np.random.Generator], Any], runs: int, seed: int
) -> NDArray[np.float64]:
    """Outputs of ``runs`` calls of ``mechanism(rng)`` with one seeded Generator, as an array."""
    rng = np.random.default_rng(seed)
    return np.array([mechanism(rng) for _ in range(runs)], dtype=np.float64)


def tail_events(
    estimates: NDArray[np.float64],
    low_centre: float,
    high_centre: float,
    step: float,
    multiples: Sequence[int],
    label: str = "x",
) -> tuple[NDArray[np.bool_], list[str]]:
    """Tail events ``{x >= high + j step}`` and ``{x <= low - j step}`` for ``j`` in multiples.

    For a mechanism that adds Laplace-like noise to a statistic whose value is ``low_centre`` on
    one data set and ``high_centre`` on the other, the upper tails above the larger centre (and
    the lower tails below the smaller one) are where the likelihood ratio is largest: for
    exact (discrete) Laplace noise ``P(x >= t; high) / P(x >= t; low)`` equals ``e^{ε shift}``
    for every ``t >= high``. The thresholds depend only on public parameters and on the two
    data sets, so they are fixed before the runs. ``label`` names the output in the event names.
    """
    columns, names = [], []
    for j in multiples:
        columns.append(estimates >= high_centre + j * step)
        names.append(f"{label} >= high + {j} b")
    for j in multiples:
        columns.append(estimates <= low_centre - j * step)
        names.append(f"{label} <= low - {j} b")
    return np.stack(columns, axis=1), names


def joint_tail_events(
    outputs: NDArray[np.float64],
    low_centres: Sequence[float],
    high_centres: Sequence[float],
    labels: Sequence[str],
) -> tuple[NDArray[np.bool_], list[str]]:
    """Joint tails ``{x_k >= high_k for all k}`` and ``{x_k <= low_k for all k}``.

    For a mechanism that releases several outputs (columns of ``outputs``), each with its own
    Laplace-like noise, the privacy losses of the outputs add up on the joint tail beyond all
    the larger (resp. below all the smaller) noiseless values: that event sees the composed ε
    of the outputs, where every single tail sees only its own share. Fixed before the runs,
    like :func:`tail_events`.
    """
    outputs = np.asarray(outputs, dtype=np.float64)
    upper = np.all(outputs >= np.asarray(high_centres), axis=1)
    lower = np.all(outputs <= np.asarray(low_centres), axis=1)
    joined = " & ".join(labels)
    return np.stack([upper, lower], axis=1), [f"{joined} >= high", f"{joined} <= low"]
