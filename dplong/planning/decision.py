"""What a fit run in planning mode comes to: its plan, a refusal, or a release."""

from __future__ import annotations

import warnings
from collections.abc import Callable

from dplong.exceptions import DplongError, InsufficientUsersError, PrivacyParameterError
from dplong.planning.checkpoints import FitPlan, Planned, planning


def is_budget_refusal(err: BaseException) -> bool:
    """Whether ``err`` is a refusal of the budget (too small for n and the plan's stages),
    as opposed to an invalid argument: what a larger ε can cure."""
    return isinstance(err, InsufficientUsersError | PrivacyParameterError) and bool(
        getattr(err, "budget_refusal", False)
    )


#: What a planned fit came to: its plan, the refusal raised instead, or None when it ran to the
#: end (a model without a checkpoint: released).
Decision = FitPlan | DplongError | None


def _decide(attempt: Callable[[], object]) -> Decision:
    """Run ``attempt`` (a fit) in planning mode and say what it came to (:data:`Decision`)."""
    with planning(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fit itself says what it warns of, once
        try:
            attempt()
        except Planned as stop:
            return stop.fit_plan
        except DplongError as err:
            return err
    return None


def _released(decision: Decision) -> bool:
    return not isinstance(decision, DplongError)
