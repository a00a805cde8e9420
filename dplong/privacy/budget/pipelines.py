"""The stage budgets of the other pipelines: the paper's, CoinPress's and a vector release's.

The paper's Winsorized mean (Alg 4-5) splits each column's budget evenly between its midpoint
and its mean (:func:`paper_budget`); CoinPress (Alg 10-14) between wide-bin histograms and its
iterative steps (:func:`plan_budget`). A vector release locates one column with the default
engine's stages and ends in one release of public linear functionals of it
(:func:`vector_plan`, :func:`vector_budget`), or, on the paper's pipeline, after its midpoint
(:func:`paper_vector_budget`). Public facts only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dplong.privacy.accounting import Cost, compose
from dplong.privacy.budget.calibration import largest_within
from dplong.privacy.budget.plan import ReleasePlan
from dplong.privacy.options import ReleaseOptions

#: Share of ε for CoinPress's local randomized-response histograms (central:
#: :func:`_histogram_share`).
LOCAL_HISTOGRAM_SHARE = 0.25


def paper_budget(d: int, options: ReleaseOptions) -> tuple[float, float]:
    """Per-column (ε, δ) of the midpoint (the mean gets the same ε), from public facts.

    Examples
    --------
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.privacy.budget import paper_budget
    >>> options = ReleaseOptions.check(1000, epsilon=1.0, delta=1e-6, privacy="central",
    ...                                bound=None, d=2, variant="theory")
    >>> eps, delta = paper_budget(2, options)
    >>> round(eps, 6), delta                       # each of 4 calls: ε/4
    (0.25, 2.5e-07)
    """
    local = options.local
    delta_h = 0.0 if local else options.delta / (2.0 * d)

    def total(s: float) -> float:
        calls = [Cost(epsilon=s, delta=delta_h), Cost(epsilon=s)] * d
        return compose(calls, options.delta).epsilon

    return largest_within(total, options.epsilon, options.epsilon), delta_h


@dataclass(frozen=True)
class ScalePlan:
    """How the budget of :func:`~dplong.privacy.variance.estimate_scale` is spent (public facts
    only).

    Each of the d wide-bin histograms costs ``histogram_epsilon`` (and ``histogram_delta``
    centrally), each of the ``Σ step_counts`` iterative steps ``step_epsilon``;
    ``total_epsilon``/``total_delta`` are what the release costs
    (:func:`~dplong.privacy.accounting.compose`).

    Examples
    --------
    >>> from dplong.privacy.budget import plan_budget
    >>> plan = plan_budget(6000, (34,), epsilon=1.0, delta=1e-8, local=False)
    >>> plan.histogram_epsilon, plan.step_epsilon * 34 > 0.95
    (0.05, True)
    >>> plan.total_epsilon <= 1.0, plan.total_delta <= 1e-8
    (True, True)
    """

    histogram_epsilon: float
    histogram_delta: float
    step_epsilon: float
    step_counts: tuple[int, ...]
    total_epsilon: float
    total_delta: float
    composition: str


def _histogram_share(n: int, epsilon: float, delta: float) -> float:
    """The least share of a column's ε that puts the wide-bin histogram's threshold
    ``(2/ε) log(2/δ) + 1`` at a quarter of the users, within [0.05, 0.75]."""
    room = n / 4.0 - 1.0
    if room <= 0:
        return 0.75
    return float(min(max(2.0 * math.log(2.0 / delta) / room / epsilon, 0.05), 0.75))


def plan_budget(
    n: int, step_counts: Sequence[int], *, epsilon: float, delta: float, local: bool
) -> ScalePlan:
    """Split (ε, δ) between d wide-bin histograms and ``Σ step_counts`` iterative steps.

    The histograms get a share (:func:`_histogram_share`; :data:`LOCAL_HISTOGRAM_SHARE`
    locally); the steps get the largest common ε that keeps the composition of every call
    within the request: basic composition for the stable histograms (``δ/(2d)`` each,
    centrally), the better of basic and Rényi for the pure calls.

    Examples
    --------
    Many columns: the Rényi rule gives each of the 340 steps more than ε/340.

    >>> from dplong.privacy.budget import plan_budget
    >>> plan = plan_budget(6000, (34,) * 10, epsilon=1.0, delta=1e-8, local=False)
    >>> plan.step_epsilon > 0.95 / 340, plan.total_epsilon <= 1.0, plan.total_delta <= 1e-8
    (True, True, True)
    """
    d, total_steps = len(step_counts), int(sum(step_counts))
    if local:
        share, delta_h = LOCAL_HISTOGRAM_SHARE, 0.0
    else:
        delta_h = delta / (2.0 * d)
        share = _histogram_share(n, epsilon / d, delta_h)
    eps_h = share * epsilon / d
    histograms = [Cost(epsilon=eps_h, delta=delta_h)] * d

    def total(step: float) -> float:
        return compose(histograms + [Cost(epsilon=step)] * total_steps, delta).epsilon

    step = largest_within(total, epsilon, epsilon)
    spent = compose(histograms + [Cost(epsilon=step)] * total_steps, delta)
    return ScalePlan(
        eps_h,
        delta_h,
        step,
        tuple(int(k) for k in step_counts),
        spent.epsilon,
        spent.delta,
        f"{d} histogram(s) by basic composition; {total_steps} iterative steps by "
        f"{spent.rule} composition",
    )


#: The paper's pipeline before a vector release (Alg 3 / 9, then the vector): the midpoint's
#: share of ε, as Alg 4 gives each of its two steps half.
PAPER_MIDPOINT_SHARE = 0.5


@dataclass(frozen=True)
class VectorBudget:
    """The budget of one vector release: pure ε for the Laplace mechanism calibrated to the
    vector's L1 sensitivity, and ρ for the discrete Gaussian calibrated to its L2 (0: none,
    as without δ); the release takes whichever gives less noise
    (:func:`~dplong.privacy.vector.release_linear`)."""

    epsilon: float
    rho: float = 0.0


def vector_plan(n: int, options: ReleaseOptions, *, stated_scale: bool) -> ReleasePlan | None:
    """The plan of a release that locates one column of n values with the default engine's
    stages (:func:`~dplong.privacy.locate.locate`) and ends in one vector release: n divides
    (a missing value counts as the centre), the values there are counted (the medians are
    sized for them, the plausibility rule reads the count, and the results say how many are
    missing) and nothing reads a second moment. Checked before any noise; None for the
    paper's pipeline (``variant="theory"``, the local model: :func:`paper_vector_budget`).

    Examples
    --------
    >>> from dplong.privacy.budget import vector_plan
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> plan = vector_plan(2000, options, stated_scale=True)
    >>> plan.counts, plan.moment_share, plan.spread
    (1, 0.0, 0.0)
    """
    if options.local or options.variant != "default":
        return None
    plan = ReleasePlan.make(
        n=n,
        d=1,
        epsilon=options.epsilon,
        delta=options.delta,
        stated_scale=stated_scale,
        count=True,
        refine=options.refine,
        moment=False,
    )
    plan.check()
    return plan


#: The share of a located vector's final budget (:func:`vector_plan`, its scale estimated) for
#: a second vector of the same public weights' reach: the item-level curve's local spread, the
#: projected responses' squared deviations from it (:mod:`dplong.models.response_spread`). It
#: is the plan's second-moment share (:attr:`~dplong.privacy.budget.plan.ReleasePlan.moment_share`,
#: the engine's at ``n ε`` of :data:`~dplong.privacy.budget.stages.MOMENT_USERS`), so the
#: calibration composes the two vectors (and the tail count) as it does a mean and its moment.
SPREAD_SHARE = 0.1


def with_spread(plan: ReleasePlan) -> ReleasePlan:
    """``plan`` (a located :func:`vector_plan`, its stages run) with :data:`SPREAD_SHARE` of its
    final stage for the spread vector, composed with the first by
    :meth:`~dplong.privacy.budget.plan.ReleasePlan.calibrate` and split from it by
    :meth:`~dplong.privacy.budget.FinalBudget.split`. Set after the location so that its
    stages are those of a plan without it. Public facts only.

    Examples
    --------
    >>> from dplong.privacy.budget import vector_budget, vector_plan, with_spread
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> plan = vector_plan(2000, options, stated_scale=False)
    >>> spread = with_spread(plan)
    >>> spread.moment_share, spread.midpoint == plan.midpoint
    (0.1, True)
    >>> both = vector_budget(spread, refined=False)  # the two vectors' ε, composed as two calls
    >>> both.epsilon >= vector_budget(plan, refined=False).epsilon
    True
    """
    return dataclasses.replace(plan, moment_share=SPREAD_SHARE)


def vector_budget(plan: ReleasePlan, *, refined: bool) -> VectorBudget:
    """What the located stages of a :func:`vector_plan` leave the vector: the largest ε, and ρ
    where there is a δ, whose composition with every earlier call stays within the plan.

    Examples
    --------
    >>> from dplong.privacy.budget import vector_budget, vector_plan
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=1e-6, privacy="central",
    ...                                bound=None, d=1)
    >>> plan = vector_plan(2000, options, stated_scale=True)
    >>> budget = vector_budget(plan, refined=True)
    >>> 0.0 < budget.epsilon < 1.0, budget.rho > 0.0
    (True, True)
    """
    epsilon = float(plan.calibrate(np.ones(1), "laplace", refined=refined).epsilon[0])
    rho = (
        float(plan.calibrate(np.ones(1), "gaussian", refined=refined).rho[0])
        if plan.delta > 0
        else 0.0
    )
    return VectorBudget(epsilon, rho)


def paper_vector_budget(options: ReleaseOptions) -> tuple[float, VectorBudget]:
    """The paper's pipeline before a vector release: the pure ε of the midpoint (which also
    spends the whole δ, Alg 3; none locally, Alg 9) and the vector's budget, by basic
    composition (:data:`PAPER_MIDPOINT_SHARE`).

    Examples
    --------
    >>> from dplong.privacy.budget import paper_vector_budget
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1, variant="theory")
    >>> paper_vector_budget(options)
    (0.5, VectorBudget(epsilon=0.5, rho=0.0))
    """
    midpoint = options.epsilon * PAPER_MIDPOINT_SHARE
    return midpoint, VectorBudget(options.epsilon * (1.0 - PAPER_MIDPOINT_SHARE))
