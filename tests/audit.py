"""Statistics shared by the privacy audits (docs/design §5.4), see ``test_privacy_audit.py``.

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

import contextlib
import functools
import math
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.stats import beta
from session_cache import session_cache

import dplong.privacy.accounting
import dplong.privacy.budget
import dplong.privacy.counts
import dplong.privacy.engine
import dplong.privacy.locate
import dplong.privacy.noise
import dplong.privacy.options
import dplong.privacy.projection
import dplong.privacy.scale
import dplong.privacy.tails
import dplong.privacy.variance
import dplong.privacy.winsorized

__all__ = [
    "BROKEN_NOISE_FRACTION",
    "CONFIDENCE",
    "ENGINE_DRAWS",
    "FAR",
    "MOVING_SHIFT",
    "ColumnAudit",
    "EpsilonBound",
    "GroupedAudit",
    "assert_columns_are_block_draws",
    "audit_events",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "fast_compose",
    "joint_tail_events",
    "memoized_compose",
    "pair_bound",
    "patch_draws",
    "release_runs",
    "repeat",
    "report",
    "tail_events",
    "winning_law",
]

#: Family-wise one-sided confidence of every ε lower bound (Bonferroni inside each audit): for a
#: correct mechanism a fresh seed would fail an audit with probability at most 1 - CONFIDENCE.
CONFIDENCE = 0.99
#: The broken replicas of the power checks add noise with this fraction of the correct scale.
BROKEN_NOISE_FRACTION = 0.25
#: "Moved very far away": far outside every bin, interval and bound the audits use.
FAR = 1e6
#: The broken end-to-end releases draw their final stage at this multiple of its recorded ε.
BROKEN_EPSILON_FACTOR = 8.0
#: The engine's modules that call each noise function (each imports it by name): a spy on one
#: mechanism, or a broken variant of it, replaces it in all of them (:func:`patch_draws`).
ENGINE_DRAWS = {
    "two_sided_geometric": (dplong.privacy.counts, dplong.privacy.tails),
    "private_median": (dplong.privacy.locate, dplong.privacy.scale),
    "release_bounded_sum": (
        dplong.privacy.counts,
        dplong.privacy.locate,
        dplong.privacy.projection,
    ),
    "release_gaussian_sum": (dplong.privacy.projection,),
}
#: A joint tail over the outputs that move by at least this many noise scales between D and D'
#: is added to the joint tail over all outputs (:func:`audit_events`): an output that hardly
#: moves only halves a joint event's hits and adds nothing to its likelihood ratio.
MOVING_SHIFT = 0.1


def patch_draws(patch: pytest.MonkeyPatch, name: str, replacement: Callable[..., Any]) -> None:
    """Replace the noise function ``name`` wherever the engine calls it (:data:`ENGINE_DRAWS`)."""
    for module in ENGINE_DRAWS[name]:
        patch.setattr(module, name, replacement)


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


def assert_columns_are_block_draws(
    package_runs: Callable[[str, int, int], NDArray[np.float64]],
    exact: Callable[[str], float],
    users: Sequence[str],
    epsilon: float,
    sensitivity: float,
) -> None:
    """That a count's audit, drawing its runs as the columns of one call of the stage
    (``package_runs(user, runs, seed)``), gets each user's ``exact`` count plus two-sided
    geometric noise at ``epsilon`` and ``sensitivity`` drawn as one block: i.i.d. columns,
    each with the law of one release (the stage draws every column's noise at once)."""
    rate = dplong.privacy.noise.geometric_rate(epsilon, sensitivity)
    for user in users:
        noise = dplong.privacy.noise.two_sided_geometric(np.random.default_rng(7), rate, (50,))
        np.testing.assert_array_equal(package_runs(user, 50, 7), exact(user) + noise)


def audited_runs(
    package: Callable[[np.random.Generator], Any],
    replica: Callable[[np.random.Generator], Any],
    noise_fraction: float,
    runs: tuple[int, int],
    seed: int,
) -> NDArray[np.float64]:
    """The seeded outputs an audit reads: the package's own un-broken (``noise_fraction`` 1,
    ``runs[0]`` of them), else the replica's with its noise broken (``runs[1]``), which the
    power check reads and which reproduces the package when un-broken."""
    if noise_fraction == 1.0:
        return repeat(package, runs[0], seed)
    return repeat(replica, runs[1], seed)


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


def check_gaussian_audit(
    outputs: Sequence[NDArray[np.float64]],
    centres: tuple[float, float],
    sd: float,
    fraction: float,
    rho: float,
    delta: float,
) -> EpsilonBound:
    """The verdict of an audit of one ρ-zCDP release projected on one line: its ``outputs``
    on D and D' (runs each), the noiseless values ``centres`` (low, high) and the noise's
    ``sd`` along the line at full budget; tail events at 0-4 sds (of the noise at
    ``fraction`` of its sd). The correct release (``fraction`` 1) must not exceed its claim
    ``zcdp_epsilon(ρ, δ)``, the broken replica (noise at ``fraction`` of its sd) must."""
    low, high = centres
    multiples = (0, 1, 2, 3, 4)
    events_d, names = tail_events(outputs[0], low, high, sd * fraction, multiples)
    events_p, _ = tail_events(outputs[1], low, high, sd * fraction, multiples)
    bound = epsilon_lower_bound(events_d, events_p, delta=delta, confidence=CONFIDENCE, names=names)
    claimed = dplong.privacy.accounting.zcdp_epsilon(rho, delta)
    if fraction == 1.0:
        assert bound.epsilon_lb <= claimed, str(bound)
    else:
        assert bound.epsilon_lb > claimed, str(bound)
    return bound


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


def report(name: str, bound: EpsilonBound, claimed: float) -> str:
    """One line for the test log and the assertion messages."""
    return f"{name}: {bound} (claimed eps={claimed:g})"


def audit_events(
    outputs: NDArray[np.float64],
    low: NDArray[np.float64],
    high: NDArray[np.float64],
    steps: Sequence[float],
    labels: Sequence[str],
    multiples: Sequence[int] = (0,),
) -> tuple[NDArray[np.bool_], list[str]]:
    """Tails of every output (``j`` steps beyond the noiseless values) and joint tails.

    ``outputs`` is (runs, k); ``low``/``high`` are the smaller/larger noiseless values of each
    output on the two data sets and ``steps`` the scales of their noise: all public or computed
    from the two data sets, never from the runs. For lattice Laplace noise the ratio of the
    upper tails ``P(x >= t; high) / P(x >= t; low)`` is the same for every ``t >= high``, so
    ``j = 0`` (most hits) is the optimal single-output event; the joint tails (over all outputs,
    and over those that move by :data:`MOVING_SHIFT` noise scales or more) add up the privacy
    losses of outputs with independent noise that move in the same direction.
    """
    outputs = np.asarray(outputs, dtype=np.float64)
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    columns, names = [], []
    for k, label in enumerate(labels):
        events, event_names = tail_events(
            outputs[:, k], low[k], high[k], steps[k], multiples, label
        )
        columns.append(events)
        names += event_names
    if len(labels) > 1:
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


def pair_bound(
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
    events_d, names = audit_events(outputs[0], low, high, steps, labels, multiples)
    events_d_prime, _ = audit_events(outputs[1], low, high, steps, labels, multiples)
    return epsilon_lower_bound(
        events_d, events_d_prime, delta=delta, confidence=CONFIDENCE, names=names
    )


def release_runs(
    mechanism: Callable[[np.random.Generator], Any],
    runs: int,
    broken_runs: int,
    seed: int,
    broken: bool,
) -> NDArray[np.float64]:
    """:func:`repeat` on the release as shipped (``runs`` from ``seed``), or on its broken
    variant: the final stages drawn at :data:`BROKEN_EPSILON_FACTOR` times their recorded ε
    (``broken_runs`` from ``seed + 5``)."""
    if not broken:
        return repeat(mechanism, runs, seed)
    honest = dplong.privacy.noise.release_bounded_sum

    def noisier(clipped: Any, radius: Any, budget: Any, rng: Any, **kw: Any) -> Any:
        return honest(clipped, radius, budget * BROKEN_EPSILON_FACTOR, rng, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch_draws(patch, "release_bounded_sum", noisier)
        return repeat(mechanism, broken_runs, seed + 5)


@dataclass(frozen=True, eq=False)  # hashed by identity: the cached outputs are per instance
class ColumnAudit:
    """An end-to-end audit of ``release_means`` on one column: the other users ``others``
    fixed, user 0 set to ``users[name]``; outputs the estimate and the count of users, and
    with ``sums`` the clipped sum the estimate reads, ``(estimate - c) N̂`` for the run's
    released interval's middle c (post-processing of released numbers: where the interval's
    middle is far from the mean, the count's noise times that offset would hide the sum's
    move in the estimate). The events rest on one reference release (seed ``reference_seed``,
    on the data set with user 0 at ``users[reference]``): its public interval gives the
    noiseless outputs, its noise scales the steps. With ``beside``, a second column released
    in the same call (user 0's value in it fixed). POWER: the final stage drawn at
    ``BROKEN_EPSILON_FACTOR`` times its ε."""

    options: dplong.privacy.options.ReleaseOptions
    others: NDArray[np.float64]
    users: dict[str, float]
    reference: str
    runs: int
    broken_runs: int
    seed: int
    sums: bool = False
    reference_seed: int = 0
    beside: NDArray[np.float64] | None = None

    @property
    def labels(self) -> list[str]:
        return ["estimate", "users", *(["sum"] if self.sums else [])]

    def matrix(self, user: str) -> NDArray[np.float64]:
        """User 0 at ``users[user]`` above the others; with ``beside`` (a second column, every
        user's value, user 0's first) released in the same call."""
        audited = np.concatenate([[self.users[user]], self.others])[:, None]
        return audited if self.beside is None else np.column_stack([audited, self.beside])

    def release(
        self, matrix: NDArray[np.float64], rng: np.random.Generator
    ) -> dplong.privacy.engine.Release:
        names = ("a", "b")[: matrix.shape[1]]
        return dplong.privacy.engine.release_means(
            matrix, names=names, options=self.options, rng=rng
        )

    @property
    def claim(self) -> float:
        """The ε the audit holds the release to: the reference's ledger total, or with
        ``beside`` the pure ε of its draws that read the audited column (basic composition:
        user 0 moves the other column's draws not at all, so a bound on this column's outputs
        is held to, and a broken variant must exceed, this column's part)."""
        entries = self.reference_release.privacy.entries
        if self.beside is None:
            return float(self.reference_release.privacy.epsilon)
        reads = [e for e in entries if "a" in e.target.split(", ") or e.stage == "count"]
        assert all(e.delta == 0.0 and e.rho == 0.0 for e in reads)  # pure draws only
        return float(sum(e.epsilon for e in reads))

    @functools.cached_property
    def reference_release(self) -> dplong.privacy.engine.Release:
        with memoized_compose():
            return self.release(
                self.matrix(self.reference), np.random.default_rng(self.reference_seed)
            )

    def noiseless(self, user: str) -> NDArray[np.float64]:
        """Estimate and count without noise, on the reference's public interval."""
        ref, matrix = self.reference_release, self.matrix(user)
        count = float(np.isfinite(matrix).all(axis=1).sum())
        centre = ref.interval.mean(axis=1)
        radius = (ref.interval[:, 1] - ref.interval[:, 0]) / 2.0
        with np.errstate(invalid="ignore"):
            clipped = np.nansum(np.clip(matrix - centre, -radius, radius), axis=0)
            estimate = centre + clipped / count
        return np.array([estimate[0], count, *(clipped[:1] if self.sums else [])])

    def steps(self) -> NDArray[np.float64]:
        ref = self.reference_release
        count = [e.noise_scale for e in ref.privacy.entries if e.stage == "count"]
        # the sum's noise scale: the estimate's times the count it was divided by
        total = ref.noise_scale[0] * max(float(ref.users[0]), 1.0)
        return np.array([ref.noise_scale[0], count[0], *([total] if self.sums else [])])

    @session_cache
    def outputs(self, user: str, broken: bool) -> NDArray[np.float64]:
        matrix = self.matrix(user)

        def mechanism(rng: np.random.Generator) -> list[float]:
            release = self.release(matrix, rng)
            estimate, users = float(release.estimate[0]), float(release.users[0])
            if not self.sums:
                return [estimate, users]
            middle = float(release.interval[0].mean())
            return [estimate, users, (estimate - middle) * max(users, 1.0)]

        seed = self.seed + 10 * list(self.users).index(user)
        return release_runs(mechanism, self.runs, self.broken_runs, seed, broken)

    def bound(self, pair: tuple[str, str], broken: bool = False) -> EpsilonBound:
        return pair_bound(
            (self.outputs(pair[0], broken), self.outputs(pair[1], broken)),
            (self.noiseless(pair[0]), self.noiseless(pair[1])),  # type: ignore[arg-type]
            self.steps(),
            self.labels,
            self.reference_release.privacy.delta,
            (0, 1, 2),
        )


@dataclass(frozen=True, eq=False)  # hashed by identity: the cached outputs are per instance
class GroupedAudit:
    """An end-to-end audit of a grouped mean (``winsorized_mean(by=, levels=)``) of one column
    ``y``: the other users hold 0 at ``other_keys``, user 0 is replaced; ``release(user, rng)``
    fits the data set with user 0 as ``user``, whom the grouping rule places at
    ``placed[user]`` (a level, or a key that is no level, and the user's statistic there).
    Outputs every level's estimate and private count. The events rest on one reference release
    (seed 0, on the data set with user 0 as ``reference``): its public intervals give the
    noiseless outputs, its noise scales the steps. POWER: the final stages drawn at
    ``BROKEN_EPSILON_FACTOR`` times their ε."""

    release: Callable[[str, np.random.Generator], Any]
    levels: Sequence[int]
    other_keys: NDArray[np.int64]
    placed: dict[str, tuple[int, float]]
    reference: str
    runs: int
    broken_runs: int
    seed: int

    @property
    def labels(self) -> list[str]:
        return [*(f"y[by={k}]" for k in self.levels), *(f"users {k}" for k in self.levels)]

    @functools.cached_property
    def reference_release(self) -> Any:
        return self.release(self.reference, np.random.default_rng(0))

    def noiseless(self, user: str) -> NDArray[np.float64]:
        """Every level's estimate and count without noise, on the reference's intervals."""
        key, value = self.placed[user]
        interval = self.reference_release.projection_interval.to_numpy()
        centre, radius = interval.mean(axis=1), np.diff(interval, axis=1)[:, 0] / 2.0
        others = np.array([np.sum(self.other_keys == k) for k in self.levels], dtype=np.float64)
        present = np.array([key == k for k in self.levels], dtype=np.float64)
        own = present * np.clip(value - centre, -radius, radius)
        count = others + present
        estimates = centre + (own + others * np.clip(-centre, -radius, radius)) / count
        return np.concatenate([estimates, count])

    def steps(self) -> list[float]:
        ref = self.reference_release
        counts = [e.noise_scale for e in ref.privacy.entries if e.stage == "count"]
        return [*ref.noise_scale.to_numpy(), *counts]

    @session_cache
    def outputs(self, user: str, broken: bool = False) -> NDArray[np.float64]:
        def mechanism(rng: np.random.Generator) -> list[float]:
            res = self.release(user, rng)
            return [*res.params.to_numpy(), *res.users.to_numpy()]

        seed = self.seed + 10 * list(self.placed).index(user)
        return release_runs(mechanism, self.runs, self.broken_runs, seed, broken)

    def bound(
        self, pair: tuple[str, str], broken: bool = False, *, touched_only: bool = False
    ) -> EpsilonBound:
        """ε_lb of a pair; ``touched_only``: on the outputs of the levels user 0 is at in
        either data set (a level neither touches is the same mechanism on the same data in
        both, and its events would only widen the Bonferroni correction)."""
        columns = list(range(2 * len(self.levels)))
        if touched_only:
            touched = sorted({self.levels.index(self.placed[user][0]) for user in pair})
            columns = [*touched, *(len(self.levels) + k for k in touched)]
        steps, labels = self.steps(), self.labels
        return pair_bound(
            (self.outputs(pair[0], broken)[:, columns], self.outputs(pair[1], broken)[:, columns]),
            (self.noiseless(pair[0])[columns], self.noiseless(pair[1])[columns]),  # type: ignore[arg-type]
            [steps[k] for k in columns],
            [labels[k] for k in columns],
            self.reference_release.privacy.delta,
            (0, 1),
        )


#: The modules whose ``compose`` the audits memoise (every caller of it in the package).
COMPOSE_USERS = (
    dplong.privacy.accounting,
    dplong.privacy.budget.stages,
    dplong.privacy.budget.pipelines,
)


@contextlib.contextmanager
def memoized_compose() -> Iterator[Callable[..., Any]]:
    """Run with the budget arithmetic memoised (exactly: pure functions of public facts).

    Budgets are calibrated by bisection over :func:`~dplong.privacy.accounting.compose` (some 60
    calls per calibration, seven calibrations per release of the engine, one per release of the
    paper's mean): most of a release's time in an audit that repeats one release thousands of
    times. ``compose``, ``ReleasePlan.calibrate`` (of a frozen plan, the shares, the kind and
    the refined and fallback flags), ``engine._final_radius`` (of the plan, the weights, the
    floor and six fields of the released location — the private counts are integers and the
    midpoints cells of a grid, so they repeat across runs), ``budget.paper_budget`` (of d, ε,
    δ and the model) and ``budget.plan_budget`` are deterministic functions of their arguments, so
    caching them changes nothing but speed — ``test_memoized_budgets_are_exact`` in
    ``test_privacy_accounting.py`` checks releases and ledgers bit for bit. Only the modules'
    references are replaced, and only inside the context. Yields the cache of ``compose``.
    """
    original = dplong.privacy.accounting.compose
    calibrate = dplong.privacy.budget.ReleasePlan.calibrate
    paper_budget = dplong.privacy.winsorized.paper_budget
    plan_budget = dplong.privacy.variance.plan_budget

    @functools.lru_cache(maxsize=1 << 16)
    def cached(costs: tuple[Any, ...], delta: float) -> Any:
        return original(costs, delta)

    def compose(costs: Any, delta: float) -> Any:
        return cached(tuple(costs), delta)

    @functools.lru_cache(maxsize=1 << 16)
    def cached_calibrate(plan: Any, shares: bytes, kind: str, refined: bool, fallback: bool) -> Any:
        return calibrate(plan, np.frombuffer(shares), kind, refined=refined, fallback=fallback)

    def memo_calibrate(
        plan: Any, shares: Any, kind: str, *, refined: bool = True, fallback: bool = False
    ) -> Any:
        key = np.ascontiguousarray(shares, dtype=np.float64).tobytes()
        return cached_calibrate(plan, key, kind, refined, fallback)

    @functools.lru_cache(maxsize=1 << 10)
    def cached_paper_budget(d: int, epsilon: float, delta: float, local: bool) -> Any:
        options = dplong.privacy.options.ReleaseOptions(
            epsilon, delta, "local" if local else "central", None, "default", 0.05
        )
        return paper_budget(d, options)

    def memo_paper_budget(d: int, options: Any) -> Any:  # reads ε, δ and the model only
        return cached_paper_budget(d, options.epsilon, options.delta, options.local)

    memo_plan_budget = functools.lru_cache(maxsize=1 << 10)(plan_budget)
    final_radius = dplong.privacy.engine._final_radius

    @functools.lru_cache(maxsize=1 << 16)
    def cached_final_radius(key: tuple[Any, ...], plan: Any) -> Any:
        sd, error, users, tail, refined, fallback, weights, live, relative, moment, floor = key
        where = types.SimpleNamespace(
            sd=np.frombuffer(sd),
            centre_error=np.frombuffer(error),
            per_column_users=np.frombuffer(users),
            tail=tail,
            refined=refined,
            fallback=fallback,
        )
        live = None if live is None else np.frombuffer(live, dtype=bool)
        floor = None if floor is None else np.frombuffer(floor)
        return final_radius(
            where, np.frombuffer(weights), plan, live, relative, moment, floor=floor
        )

    def memo_final_radius(
        where: Any,
        weights: Any,
        plan: Any,
        live: Any = None,
        relative: bool = False,
        moment: Any = None,
        *,
        floor: Any = None,
    ) -> Any:
        # _final_radius reads these six fields of the Location only (engine.py)
        key = (
            *(
                np.ascontiguousarray(v, dtype=np.float64).tobytes()
                for v in (where.sd, where.centre_error, where.per_column_users)
            ),
            where.tail,
            where.refined,
            where.fallback,
            np.ascontiguousarray(weights, dtype=np.float64).tobytes(),
            None if live is None else np.ascontiguousarray(live, dtype=bool).tobytes(),
            relative,
            moment,  # a stated Moment (hashable) or None
            None if floor is None else np.ascontiguousarray(floor, dtype=np.float64).tobytes(),
        )
        radius, budget = cached_final_radius(key, plan)
        return radius.copy(), budget

    def plan_budget_call(n: int, step_counts: Any, **kwargs: Any) -> Any:
        return memo_plan_budget(n, tuple(step_counts), **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        for module in COMPOSE_USERS:
            patch.setattr(module, "compose", compose)
        patch.setattr(dplong.privacy.budget.ReleasePlan, "calibrate", memo_calibrate)
        patch.setattr(dplong.privacy.winsorized, "paper_budget", memo_paper_budget)
        patch.setattr(dplong.privacy.variance, "plan_budget", plan_budget_call)
        patch.setattr(dplong.privacy.engine, "_final_radius", memo_final_radius)
        yield cached


@pytest.fixture(scope="module")
def fast_compose() -> Iterator[Callable[..., Any]]:
    """:func:`memoized_compose` for a whole test module: ``pytest.mark.usefixtures``."""
    with memoized_compose() as cached:
        yield cached


def winning_law(loss: NDArray[np.int64], rate: float) -> NDArray[np.float64]:
    """The exact chance that each cell is drawn: ``exp(-rate * loss)`` over its sum, the law of
    ``private_median``'s exponential mechanism (the package draws it run by run, the audits'
    replicas cell by cell)."""
    weight = np.exp(-rate * (loss - loss.min()))
    return np.asarray(weight / weight.sum())
