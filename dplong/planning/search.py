"""The searches of the planner: the smallest ε, or n, at which a fit's decision passes.

Each is a bisection on the fit's own decision (:mod:`~dplong.planning.decision`), asked what
the answer is for: not refused for its budget (:func:`_budget_passes`), or planned without a
note (:func:`_quiet_passes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dplong.exceptions import DplongError
from dplong.planning.checkpoints import FitPlan
from dplong.planning.decision import _decide, _released, is_budget_refusal

#: The budgets :func:`smallest_epsilon` searches: beyond the largest, no ε is said to help.
EPSILON_RANGE = (1e-4, 1e4)
#: The user counts :func:`PlanResults.smallest_n` searches.
USERS_RANGE = (2, 10**6)
#: Relative precision of the bisections (the answer is then rounded up to two digits).
PRECISION = 0.01


def smallest_epsilon(
    passes: Callable[[float], bool], start: float, *, upper: float = EPSILON_RANGE[1]
) -> float | None:
    """The smallest ε (two significant digits, rounded up) at which ``passes`` holds, searched
    from ``start`` by doubling or halving and then bisection; None if it fails at ``upper``.
    The answer is checked: ``passes`` holds at exactly the number returned.

    Examples
    --------
    >>> from dplong.planning import smallest_epsilon
    >>> smallest_epsilon(lambda e: e >= 3.14159, 1.0)
    3.2
    >>> smallest_epsilon(lambda e: False, 1.0) is None
    True
    """
    lo, hi = start, start
    if passes(start):
        while lo > EPSILON_RANGE[0] and passes(lo / 2.0):
            lo /= 2.0
        if lo <= EPSILON_RANGE[0]:  # released at every ε searched
            return EPSILON_RANGE[0]
        hi, lo = lo, lo / 2.0
    else:
        while not passes(hi):
            if hi >= upper:
                return None
            lo, hi = hi, min(hi * 2.0, upper)
    while hi / lo > 1.0 + PRECISION:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return _rounded(passes, lo, hi)


def _rounded(passes: Callable[[float], bool], lo: float, hi: float) -> float:
    """The smallest number of 2 significant digits (more if none passes) in ``(lo, hi]``
    rounded up that passes: ``hi`` rounded down where that is above ``lo`` and passes (the
    bisection's ``hi`` lies a little above the threshold: 8.003 said "about 8.1" where 8.0
    passed), else ``hi`` rounded up."""
    for digits in (2, 3, 4):
        power = 10.0 ** (math.floor(math.log10(hi)) - digits + 1)
        down = float(f"{math.floor(hi / power + 1e-9) * power:.{digits}g}")
        if lo < down < hi and passes(down):
            return down
        rounded = float(f"{math.ceil(hi / power - 1e-9) * power:.{digits}g}")
        if rounded >= hi and passes(rounded):
            return rounded
    return hi


def _budget_passes(attempt: Callable[[float], object]) -> Callable[[float], bool]:
    """``passes(ε)``: the fit at ε is not refused for its budget (:func:`is_budget_refusal`)."""

    def passes(epsilon: float) -> bool:
        decision = _decide(lambda: attempt(epsilon))
        return not (isinstance(decision, DplongError) and is_budget_refusal(decision))

    return passes


def _quiet_passes(
    attempt: Callable[[float], object], *, budget: bool = False
) -> Callable[[float], bool]:
    """``passes(ε)``: the fit at ε is planned without a refusal or a reliability note (with
    ``budget``, without one of those a larger ε can remove)."""

    def passes(epsilon: float) -> bool:
        decision = _decide(lambda: attempt(epsilon))
        if not isinstance(decision, FitPlan):
            return _released(decision)
        return not (decision.budget_notes if budget else decision.notes)

    return passes


def _smallest_users(passes: Callable[[int], bool]) -> int | None:
    """The smallest n in :data:`USERS_RANGE` with ``passes(n)``: doubling, then bisection to
    the user (it stopped within 1 % of n and said the upper end: 7,168 where 7,118 runs, an
    audit)."""
    lo, hi = USERS_RANGE[0], USERS_RANGE[0]
    while not passes(hi):
        if hi >= USERS_RANGE[1]:
            return None
        lo, hi = hi, min(hi * 2, USERS_RANGE[1])
    if hi == USERS_RANGE[0]:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return hi
