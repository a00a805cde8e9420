"""The budget module's fit-level pieces: parts of a budget, the accountant, the fit's ledger.

(The stage plan, :class:`~dplong.privacy.budget.ReleasePlan`, is tested with the composition
rules in ``test_privacy_accounting.py``.)
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import dplong
from dplong.exceptions import BudgetExceededError
from dplong.privacy.accounting import LedgerEntry, PrivacyLedger, compose
from dplong.privacy.budget import (
    afford,
    charge,
    fit_ledger,
    parallel_ledger,
    part,
    planned_ledger,
    split_users,
    users_share,
)
from dplong.privacy.options import ReleaseOptions

PACKAGE = Path(dplong.__file__).parent


def _options(epsilon: float = 2.0, delta: float = 1e-6) -> ReleaseOptions:
    return ReleaseOptions.check(
        1000, epsilon=epsilon, delta=delta, privacy="central", bound=None, d=1
    )


def _ledger(*epsilons: float, delta: float = 0.0) -> PrivacyLedger:
    calls = [LedgerEntry("mean", "lattice Laplace", "x", e, 0.0, 0.0, 1.0, 1.0) for e in epsilons]
    return PrivacyLedger.from_entries(calls, delta, "central")


def test_part_scales_epsilon_and_delta_and_keeps_the_rest() -> None:
    options = _options()
    third = part(options, 1.0 / 3.0)
    assert third.epsilon == pytest.approx(2.0 / 3.0) and third.delta == pytest.approx(1e-6 / 3)
    assert (third.privacy, third.gamma, third.refine) == (
        options.privacy,
        options.gamma,
        options.refine,
    )
    assert part(options, 1.0) == options


def test_users_share_is_users_worth_of_epsilon_n_within_its_bounds() -> None:
    # 300 users' worth of ε·n at n = 2000, ε = 1 is 0.15: inside [0.05, 0.2]
    assert users_share(300.0, 2000, 1.0, 0.05, 0.2) == pytest.approx(0.15)
    assert users_share(300.0, 500, 1.0, 0.05, 0.2) == 0.2  # capped
    assert users_share(300.0, 10**6, 1.0, 0.05, 0.2) == 0.05  # floored


def test_afford_refuses_before_any_spend_and_charge_records() -> None:
    accountant = dplong.Accountant(epsilon=1.0, delta=1e-6)
    afford(None, 5.0, 0.0)  # no accountant: nothing to check
    with pytest.raises(BudgetExceededError):
        afford(accountant, 1.5, 0.0)
    assert accountant.spent_epsilon == 0.0
    afford(accountant, 0.6, 0.0)
    charge(accountant, _ledger(0.3, 0.3), 0.6, 0.0)
    assert accountant.spent_epsilon == pytest.approx(0.6)
    with pytest.raises(BudgetExceededError):
        afford(accountant, 0.5, 0.0)


def test_an_accountants_refusal_chains_no_internal_exception() -> None:
    """An advised fit whose first run stopped at its checkpoint to find its note's remedy
    (``planning.advice``) is refused by the accountant on its second: the refusal is raised
    outside that stop's handler, so its traceback shows no internal ``_Restart`` ("During
    handling of the above exception...", an audit's finding)."""
    wages = dplong.datasets.load_wage_panel()
    model = dplong.RandomEffectsLocation.from_formula("lwage ~ 1", wages, groups="nr")
    with pytest.raises(BudgetExceededError) as refused:  # the fit needs a δ it does not hold
        model.fit(epsilon=1.0, accountant=dplong.Accountant(epsilon=2.0), random_state=0)
    assert refused.value.__context__ is None and refused.value.__cause__ is None


def test_charge_refuses_a_ledger_beyond_its_budget_as_a_bug() -> None:
    accountant = dplong.Accountant(epsilon=10.0)
    with pytest.raises(AssertionError, match="beyond the budget"):
        charge(accountant, _ledger(0.5, 0.6), 1.0, 0.0)
    assert accountant.spent_epsilon == 0.0  # nothing recorded
    charge(accountant, _ledger(0.5, 0.5), 1.0, 0.0)  # at the budget: fine


def test_fit_ledger_takes_the_better_of_joint_and_summed_composition() -> None:
    many = [_ledger(*([0.01] * 50), delta=1e-6) for _ in range(2)]
    joint = fit_ledger(many, 1e-6, "central")
    calls = [entry.cost for ledger in many for entry in ledger.entries]
    assert joint.epsilon == pytest.approx(compose(calls, 1e-6).epsilon)
    assert joint.epsilon < sum(ledger.epsilon for ledger in many)
    assert len(joint.entries) == 100
    single = _ledger(0.5)
    assert fit_ledger([single], 0.0, "central") is single
    pure = fit_ledger([_ledger(0.2), _ledger(0.3)], 0.0, "central")
    assert pure.epsilon == pytest.approx(0.5) and pure.composition == "basic"


def test_fit_ledger_of_disjoint_users_is_the_largest() -> None:
    def parallel(epsilon: float) -> PrivacyLedger:
        call = LedgerEntry("mean", "local lattice Laplace", "x", epsilon, 0.0, 0.0, 1.0, 1.0)
        return PrivacyLedger((call,), epsilon, 0.0, "parallel (disjoint users)", "local", 0.0)

    ledger = fit_ledger([parallel(1.0), parallel(2.0)], 0.0, "local")
    assert ledger.epsilon == 2.0 and ledger.model == "local" and len(ledger.entries) == 2


def test_parallel_ledger_is_the_largest_pure_call_and_feeds_fit_ledger() -> None:
    calls = [
        LedgerEntry("mean", "local lattice Laplace", name, 0.7, 0.0, 0.0, 2.0, 2.0)
        for name in ("x", "y", "z")
    ]
    ledger = parallel_ledger(calls, "local")
    # each user answers one call: the release costs one call's ε, and ε-DP is ε²/2-zCDP
    assert (ledger.epsilon, ledger.delta, ledger.rho) == (0.7, 0.0, 0.7**2 / 2.0)
    assert ledger.entries == tuple(calls) and ledger.model == "local"
    both = fit_ledger([ledger, parallel_ledger(calls[:1], "local")], 0.0, "local")
    assert both.epsilon == 0.7 and len(both.entries) == 4  # disjoint blocks: still the largest
    with pytest.raises(AssertionError, match="pure calls only"):
        parallel_ledger([LedgerEntry("mean", "Gaussian", "x", 0.0, 0.0, 0.1, 1.0, 1.0)], "local")


def test_planned_ledger_charges_the_planned_total_not_the_calls_that_ran() -> None:
    accountant = dplong.Accountant(epsilon=2.0, delta=1e-6)
    ran = [LedgerEntry("scale", "lattice Laplace", "x", 0.1, 0.0, 0.0, 1.0, 10.0)] * 3
    ledger = planned_ledger(
        accountant, ran, epsilon=1.0, delta=1e-7, composition="10 steps", model="central"
    )
    assert (ledger.epsilon, ledger.delta, ledger.composition) == (1.0, 1e-7, "10 steps")
    assert math.isnan(ledger.rho) and len(ledger.entries) == 3
    assert accountant.spent_epsilon == 1.0 and accountant.spent_delta == 1e-7


def test_split_users_is_a_partition_of_the_given_sizes() -> None:
    groups = split_users(np.random.default_rng(3), 101, [0.5, 0.25, 0.25])
    assert [g.size for g in groups] == [50, 25, 26]
    assert np.array_equal(np.sort(np.concatenate(groups)), np.arange(101))


def test_only_the_budget_module_asks_or_tells_the_accountant() -> None:
    """The accountant's check and record, and a ledger's composition for a fit, live in one
    module of the budget package (DESIGN: one budget module), so that no pipeline can forget or
    double them."""
    touching = re.compile(r"accountant\.(check|record)\(")
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).as_posix() != "privacy/budget/fit.py"
        and touching.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_only_the_budget_module_composes_a_ledger() -> None:
    """A ledger's totals are set in the budget module alone (accounting defines the class and
    its rules): a pipeline names its composition there, never builds the totals itself."""
    building = re.compile(r"PrivacyLedger(\.from_entries)?\(")
    offenders = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if not path.relative_to(PACKAGE).as_posix().startswith("privacy/budget/")
        and path.relative_to(PACKAGE).as_posix() != "privacy/accounting.py"
        and building.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_a_memoised_calibration_cannot_be_written() -> None:
    """A plan's calibration is memoised and handed to every release of that plan: its arrays
    are read-only, so no caller can change the next fit's budget in place."""
    from dplong.privacy.budget.plan import ReleasePlan

    plan = ReleasePlan.make(n=1000, d=2, epsilon=1.0, delta=1e-6, stated_scale=False)
    first = plan.calibrate(np.ones(2), "laplace")
    assert plan.calibrate(np.ones(2), "laplace") is first  # memoised
    for values in (
        first.epsilon,
        first.rho,
        first.split(0.3)[0].epsilon,
        first.of(np.ones(2, bool)).rho,
    ):
        with pytest.raises(ValueError, match="read-only"):
            values[0] = 0.0
