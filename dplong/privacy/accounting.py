"""Privacy bookkeeping: the ledger of every mechanism call, composition, and budgets.

A :class:`PrivacyLedger` is an immutable record: one :class:`LedgerEntry` per mechanism call
(ε, δ, sensitivity, noise scale) and the totals under the composition actually used, so that
``ledger.epsilon`` and ``ledger.delta`` are what the release costs. An :class:`Accountant`
holds a total budget across releases and refuses a spend *before* any noise is drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from dplong._validation import check_delta, check_epsilon
from dplong.exceptions import BudgetExceededError

__all__ = [
    "Accountant",
    "ColumnBudget",
    "LedgerEntry",
    "PrivacyLedger",
    "advanced_composition_epsilon",
    "split_budget",
]


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism call.

    Attributes
    ----------
    mechanism : str
        Name of the mechanism and the paper's algorithm, e.g. ``"stable histogram (Alg 2)"``.
    target : str
        What it released (a column name, ``"midpoint"``, ...).
    epsilon, delta : float
        Privacy parameters this call was run with.
    sensitivity : float
        Sensitivity of the released statistic under replacing one user (value units).
    noise_scale : float
        Scale of the added noise (Laplace ``b``), or ``nan`` for randomized response.
    """

    mechanism: str
    target: str
    epsilon: float
    delta: float
    sensitivity: float
    noise_scale: float


@dataclass(frozen=True)
class PrivacyLedger:
    """Immutable record of a release: its mechanism calls and their composed total.

    Examples
    --------
    >>> import dplong
    >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
    ...                              random_state=0)
    >>> res.privacy.epsilon <= 1.0
    True
    >>> res.privacy.to_frame().columns.tolist()[:3]
    ['mechanism', 'target', 'epsilon']
    """

    entries: tuple[LedgerEntry, ...]
    epsilon: float
    delta: float
    composition: str
    model: str = "central"

    def to_frame(self) -> pd.DataFrame:
        """The entries as a DataFrame, one row per mechanism call."""
        columns = ["mechanism", "target", "epsilon", "delta", "sensitivity", "noise_scale"]
        frame: pd.DataFrame = pd.DataFrame([vars(e) for e in self.entries], columns=columns)
        return frame

    def __add__(self, other: PrivacyLedger) -> PrivacyLedger:
        """Sequential (basic) composition of two releases on the same users."""
        return PrivacyLedger(
            entries=self.entries + other.entries,
            epsilon=self.epsilon + other.epsilon,
            delta=self.delta + other.delta,
            composition="basic",
            model=self.model if self.model == other.model else "mixed",
        )

    def __str__(self) -> str:
        head = (
            f"Privacy spent: epsilon={self.epsilon:.6g}, delta={self.delta:.3g} "
            f"({self.model} model, {self.composition} composition)"
        )
        return head + "\n" + self.to_frame().to_string(index=False)


def advanced_composition_epsilon(epsilon_each: float, k: int, slack: float) -> float:
    """Total ε of ``k`` ``epsilon_each``-DP mechanisms by advanced composition.

    Dwork & Roth (2014), Theorem 3.20: ``ε √(2k log(1/ϱ)) + k ε (e^ε - 1)`` with extra δ ϱ.
    """
    return epsilon_each * math.sqrt(2 * k * math.log(1 / slack)) + k * epsilon_each * math.expm1(
        epsilon_each
    )


@dataclass(frozen=True)
class ColumnBudget:
    """How a total (ε, δ) is shared over ``d`` columns (Theorem 2.4 of the paper).

    ``epsilon`` and ``delta`` are per column; ``slack`` is the ϱ of advanced composition
    (0 for basic); ``total_epsilon``/``total_delta`` are what the d columns cost together.
    """

    epsilon: float
    delta: float
    slack: float
    method: str
    total_epsilon: float
    total_delta: float


def split_budget(epsilon: float, delta: float, d: int, *, pure: bool = False) -> ColumnBudget:
    """Share (ε, δ) over d columns with whichever composition gives each column more ε.

    Basic composition gives ``ε/d`` and ``δ/d`` per column. Advanced composition
    (Alg 5, line 1) gives ``ε / √(8 d log(1/ϱ))`` with ``ϱ = δ/2`` and ``δ/(2d)`` per column;
    it is used only where it both beats ``ε/d`` and is valid by Theorem 3.20 (which, unlike the
    simplified form, also holds for ε ≥ 1). With ``pure=True`` (local model: each column is
    ε-LDP with no δ of its own) basic composition costs no δ and advanced composition spends
    all of ``delta`` as ϱ. With ``delta == 0`` only basic composition applies.
    """
    column_delta = 0.0 if pure else delta
    if d == 1:
        return ColumnBudget(epsilon, column_delta, 0.0, "none", epsilon, column_delta)
    basic = ColumnBudget(epsilon / d, column_delta / d, 0.0, "basic", epsilon, column_delta)
    if delta == 0.0:
        return basic
    slack = delta if pure else delta / 2
    each = epsilon / math.sqrt(8 * d * math.log(1 / slack))
    if each <= epsilon / d or each > 1.0:  # advanced only pays for many small steps
        return basic
    total = advanced_composition_epsilon(each, d, slack)
    if total > epsilon:
        return basic
    return ColumnBudget(
        each, (column_delta - slack) / d if not pure else 0.0, slack, "advanced", total, delta
    )


@dataclass
class Accountant:
    """A total privacy budget shared by several releases on the same users.

    Pass it as ``accountant=`` to any release; the release's full cost is checked against what
    remains *before* any noise is drawn, and charged only if it fits. Releases compose by
    basic composition.

    Parameters
    ----------
    epsilon, delta : float
        The total budget. ``delta`` may be 0 for a pure-ε budget.

    Examples
    --------
    >>> import dplong
    >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-6)
    >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.6, delta=5e-7, scale=1.0,
    ...                            accountant=acct, random_state=1)
    >>> round(acct.remaining_epsilon, 6)
    0.4
    >>> dplong.winsorized_mean([0.5] * 1000, epsilon=0.6, delta=5e-7, scale=1.0,
    ...                        accountant=acct)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.BudgetExceededError: this release needs epsilon=0.6, ... remain
    """

    epsilon: float
    delta: float = 0.0
    spent: list[PrivacyLedger] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.epsilon = check_epsilon(self.epsilon)
        self.delta = 0.0 if self.delta == 0 else check_delta(self.delta)

    @property
    def spent_epsilon(self) -> float:
        return sum(ledger.epsilon for ledger in self.spent)

    @property
    def spent_delta(self) -> float:
        return sum(ledger.delta for ledger in self.spent)

    @property
    def remaining_epsilon(self) -> float:
        return self.epsilon - self.spent_epsilon

    @property
    def remaining_delta(self) -> float:
        return self.delta - self.spent_delta

    def check(self, epsilon: float, delta: float) -> None:
        """Raise :class:`BudgetExceededError` if a spend of (ε, δ) does not fit."""
        tol = 1e-12 * self.epsilon
        if epsilon > self.remaining_epsilon + tol or delta > self.remaining_delta + 1e-15:
            raise BudgetExceededError(
                f"this release needs epsilon={epsilon:.6g}, delta={delta:.6g} but only "
                f"epsilon={self.remaining_epsilon:.6g}, delta={self.remaining_delta:.6g} remain"
            )

    def record(self, ledger: PrivacyLedger) -> None:
        """Charge a finished release (its cost was :meth:`check`-ed before noise was drawn)."""
        self.check(ledger.epsilon, ledger.delta)
        self.spent.append(ledger)
