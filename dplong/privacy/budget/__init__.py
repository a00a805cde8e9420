"""The budget of a fit: how (ε, δ) is split, checked against the accountant and composed.

This package is the one place that splits a budget — multiplies ε, δ or ρ by a share — and the
only one that asks or tells the accountant or composes a ledger. Its public names are imported
from here (the modules are its layout, not its interface):

- :mod:`~dplong.privacy.budget.plan` — :class:`ReleasePlan`, the public plan of one release of
  the default engine: the ε of each of its stages, from public facts, checked before any noise;
- :mod:`~dplong.privacy.budget.stages` — the rules that size those stages (the users' worth of
  ε each median and count gets, the refinement's share, the miss bounds and their refusals);
- :mod:`~dplong.privacy.budget.calibration` — the final stage's budget, the largest whose
  composition with every earlier call stays within the request (:class:`FinalBudget`,
  :func:`largest_within`, :func:`top_up`), shared over the columns by PLAN's weights;
- :mod:`~dplong.privacy.budget.pipelines` — the paper's, CoinPress's and a vector release's
  stage budgets (:func:`paper_budget`, :func:`plan_budget`, :func:`vector_plan`,
  :func:`with_spread`);
- :mod:`~dplong.privacy.budget.gaussian` — the ρ of Gaussian releases: the ePTR, sufficient
  statistics, random effects (:func:`ptr_budget`, :func:`statistics_budget`);
- :mod:`~dplong.privacy.budget.fit` — a fit's parts (:func:`part`, :func:`users_share`,
  :func:`keyed_share`, :func:`split_users`), the refusal of a fit that would withhold
  everything (:func:`refuse_doomed`), the accountant's check and record (:func:`afford`,
  :func:`charge`, :func:`settle`, :func:`planned_ledger`) and the ledgers
  (:func:`parallel_ledger`, :func:`fit_ledger`, :func:`keyed_ledger`).

How the budget flows through a fit, and why the stages are sized as they are, is in
``docs/design/budget.md``.
"""

from dplong.privacy.budget.calibration import FinalBudget, largest_within, share_weights, top_up
from dplong.privacy.budget.fit import (
    afford,
    ask,
    charge,
    fit_ledger,
    keyed_ledger,
    keyed_share,
    parallel_ledger,
    part,
    planned_ledger,
    refuse_doomed,
    settle,
    split_users,
    users_share,
)
from dplong.privacy.budget.gaussian import (
    HISTOGRAM_USERS,
    SIDE_SHARE,
    PTRBudget,
    RandomEffectsBudget,
    StatisticsBudget,
    gaussian_shares,
    ptr_budget,
    random_effects_budget,
    remaining_rho,
    statistics_budget,
)
from dplong.privacy.budget.pipelines import (
    LOCAL_HISTOGRAM_SHARE,
    SPREAD_SHARE,
    ScalePlan,
    VectorBudget,
    paper_budget,
    paper_vector_budget,
    plan_budget,
    vector_budget,
    vector_plan,
    with_spread,
)
from dplong.privacy.budget.plan import ReleasePlan
from dplong.privacy.budget.stages import (
    COUNT_SHARES,
    COUNT_USERS,
    DOUBT_MISS,
    MAX_MIDPOINT_SHARE,
    MAX_MISS,
    MIN_STAGE_SHARE,
    MOMENT_SHARE,
    MOMENT_USERS,
    NOTE_MISS,
    QUIET_REMEDY,
    REFINE_SHARES,
    RESIZE_SDS,
    SEAT_USERS,
    ZERO_COUNT_SHARE,
    ZERO_COUNT_USERS,
    column_epsilon,
    signed_share,
    tail_share,
)

__all__ = [
    "COUNT_SHARES",
    "COUNT_USERS",
    "DOUBT_MISS",
    "HISTOGRAM_USERS",
    "LOCAL_HISTOGRAM_SHARE",
    "MAX_MIDPOINT_SHARE",
    "MAX_MISS",
    "MIN_STAGE_SHARE",
    "MOMENT_SHARE",
    "MOMENT_USERS",
    "NOTE_MISS",
    "QUIET_REMEDY",
    "REFINE_SHARES",
    "RESIZE_SDS",
    "SEAT_USERS",
    "SIDE_SHARE",
    "SPREAD_SHARE",
    "ZERO_COUNT_SHARE",
    "ZERO_COUNT_USERS",
    "FinalBudget",
    "PTRBudget",
    "RandomEffectsBudget",
    "ReleasePlan",
    "ScalePlan",
    "StatisticsBudget",
    "VectorBudget",
    "afford",
    "ask",
    "charge",
    "column_epsilon",
    "fit_ledger",
    "gaussian_shares",
    "keyed_ledger",
    "keyed_share",
    "largest_within",
    "paper_budget",
    "paper_vector_budget",
    "parallel_ledger",
    "part",
    "plan_budget",
    "planned_ledger",
    "ptr_budget",
    "random_effects_budget",
    "refuse_doomed",
    "remaining_rho",
    "settle",
    "share_weights",
    "signed_share",
    "split_users",
    "statistics_budget",
    "tail_share",
    "top_up",
    "users_share",
    "vector_budget",
    "vector_plan",
    "with_spread",
]
