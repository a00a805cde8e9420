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
        Sensitivity of the released statistic under replacing one user: in value units for a
        mean (centrally of the mean, locally of one user's value), in proportions (``2/n``) for
        the stable histogram, in bits (2) for randomized response.
    noise_scale : float
        Scale of the added noise (Laplace ``b``), or ``nan`` for randomized response.

    Examples
    --------
    >>> import dplong
    >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
    ...                              random_state=0)
    >>> entry = res.privacy.entries[-1]          # the final noisy mean
    >>> entry.mechanism, entry.target, entry.delta
    ('lattice Laplace (Alg 1, 4)', 'x: mean', 0.0)
    >>> entry.noise_scale >= entry.sensitivity / entry.epsilon     # Laplace b >= D / ε
    True
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

    Two ledgers of releases on the same users add up by basic composition (``ledger_a +
    ledger_b``); ``str(ledger)`` prints the totals and one row per call.

    Attributes
    ----------
    entries : tuple of LedgerEntry
        One entry per mechanism call, in the order they were run.
    epsilon, delta : float
        What the release costs in total, under ``composition``.
    composition : str
        How the columns' budgets were composed: ``"single column"``, ``"basic"`` or
        ``"advanced"`` (see :func:`split_budget`), possibly with a note on parallel halves.
    model : str
        ``"central"``, ``"local"``, or ``"mixed"`` for a sum of both.

    Examples
    --------
    >>> import dplong
    >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
    ...                              random_state=0)
    >>> res.privacy.epsilon <= 1.0
    True
    >>> res.privacy.to_frame().columns.tolist()[:3]
    ['mechanism', 'target', 'epsilon']
    >>> both = res.privacy + res.privacy          # two releases on the same users
    >>> both.epsilon == 2 * res.privacy.epsilon, both.composition, len(both.entries)
    (True, 'basic', 6)
    >>> print(res.privacy)  # doctest: +ELLIPSIS
    Privacy spent: epsilon=1, delta=1e-06 (central model; composition: single column)
    ...
    """

    entries: tuple[LedgerEntry, ...]
    epsilon: float
    delta: float
    composition: str
    model: str = "central"

    def to_frame(self) -> pd.DataFrame:
        """The entries as a DataFrame, one row per mechanism call.

        Returns
        -------
        pandas.DataFrame
            Columns ``mechanism``, ``target``, ``epsilon``, ``delta``, ``sensitivity`` and
            ``noise_scale``.

        Examples
        --------
        >>> import dplong
        >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
        ...                              random_state=0)
        >>> frame = res.privacy.to_frame()
        >>> frame["target"].tolist()
        ['x: midpoint', 'x: refinement', 'x: mean']
        >>> round(float(frame["epsilon"].sum()), 12)   # one column: the stages add up
        1.0
        """
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
            f"({self.model} model; composition: {self.composition})"
        )
        return head + "\n" + self.to_frame().to_string(index=False)


def advanced_composition_epsilon(epsilon_each: float, k: int, slack: float) -> float:
    """Total ε of ``k`` ``epsilon_each``-DP mechanisms by advanced composition.

    Dwork & Roth (2014), Theorem 3.20: ``ε √(2k log(1/ϱ)) + k ε (e^ε - 1)``, at the price of
    an extra δ of ϱ (``slack``) on top of the mechanisms' own ``k δ``.

    Examples
    --------
    >>> from dplong.privacy import advanced_composition_epsilon
    >>> round(advanced_composition_epsilon(0.01, k=100, slack=1e-6), 4)
    0.5357
    >>> advanced_composition_epsilon(0.01, k=100, slack=1e-6) < 100 * 0.01   # basic: k ε
    True
    """
    return epsilon_each * math.sqrt(2 * k * math.log(1 / slack)) + k * epsilon_each * math.expm1(
        epsilon_each
    )


@dataclass(frozen=True)
class ColumnBudget:
    """How a total (ε, δ) is shared over ``d`` columns (Theorem 2.4 of the paper).

    ``epsilon`` and ``delta`` are per column; ``slack`` is the ϱ of advanced composition
    (0 for basic); ``method`` is ``"single column"``, ``"basic"`` or ``"advanced"``;
    ``total_epsilon``/``total_delta`` are what the d columns cost together.

    Examples
    --------
    >>> from dplong.privacy import split_budget
    >>> budget = split_budget(1.0, 1e-6, d=4)
    >>> budget.method, budget.epsilon, budget.delta, budget.total_epsilon
    ('basic', 0.25, 2.5e-07, 1.0)
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
    all of ``delta`` as ϱ. With ``delta == 0`` only basic composition applies. Advanced
    composition is also skipped when it would give a column more than ε = 1 (it only pays for
    many small steps). A single column (``d == 1``) keeps the whole budget (method
    ``"single column"``).

    Returns
    -------
    ColumnBudget

    Examples
    --------
    >>> from dplong.privacy import split_budget
    >>> split_budget(1.0, 1e-6, d=4)  # doctest: +NORMALIZE_WHITESPACE
    ColumnBudget(epsilon=0.25, delta=2.5e-07, slack=0.0, method='basic', total_epsilon=1.0,
                 total_delta=1e-06)

    With many columns advanced composition gives each one more than ε/d:

    >>> many = split_budget(1.0, 1e-6, d=1000)
    >>> many.method, many.epsilon > 1.0 / 1000, many.total_epsilon <= 1.0
    ('advanced', True, True)
    >>> split_budget(1.0, 1e-6, d=4, pure=True).delta      # local model: no δ per column
    0.0
    """
    column_delta = 0.0 if pure else delta
    if d == 1:
        return ColumnBudget(epsilon, column_delta, 0.0, "single column", epsilon, column_delta)
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
        """ε charged so far: the sum over the recorded releases (basic composition).

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.25, scale=1.0,
        ...                            accountant=acct, random_state=0)
        >>> acct.spent_epsilon
        0.25
        """
        return sum(ledger.epsilon for ledger in self.spent)

    @property
    def spent_delta(self) -> float:
        """δ charged so far: the sum over the recorded releases.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.25, delta=2e-6, scale=1.0,
        ...                            accountant=acct, random_state=0)
        >>> acct.spent_delta
        2e-06
        """
        return sum(ledger.delta for ledger in self.spent)

    @property
    def remaining_epsilon(self) -> float:
        """ε still available: the total budget minus :attr:`spent_epsilon`.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.25, scale=1.0,
        ...                            accountant=acct, random_state=0)
        >>> acct.remaining_epsilon
        0.75
        """
        return self.epsilon - self.spent_epsilon

    @property
    def remaining_delta(self) -> float:
        """δ still available: the total budget minus :attr:`spent_delta`.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.25, delta=2e-6, scale=1.0,
        ...                            accountant=acct, random_state=0)
        >>> round(acct.remaining_delta, 12)
        8e-06
        """
        return self.delta - self.spent_delta

    def check(self, epsilon: float, delta: float) -> None:
        """Raise :class:`BudgetExceededError` if a spend of (ε, δ) does not fit.

        Nothing is charged; releases call this before drawing any noise.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-6)
        >>> acct.check(0.5, 5e-7)                  # fits: returns None
        >>> acct.remaining_epsilon                 # and charges nothing
        1.0
        >>> acct.check(2.0, 0.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dplong.exceptions.BudgetExceededError: this release needs epsilon=2, ... remain
        """
        tol = 1e-12 * self.epsilon
        if epsilon > self.remaining_epsilon + tol or delta > self.remaining_delta + 1e-15:
            raise BudgetExceededError(
                f"this release needs epsilon={epsilon:.6g}, delta={delta:.6g} but only "
                f"epsilon={self.remaining_epsilon:.6g}, delta={self.remaining_delta:.6g} remain"
            )

    def record(self, ledger: PrivacyLedger) -> None:
        """Charge a finished release (its cost was :meth:`check`-ed before noise was drawn).

        The ledger is checked once more and appended to :attr:`spent`.

        Examples
        --------
        >>> import dplong
        >>> res = dplong.winsorized_mean([0.5] * 1000, epsilon=0.5, scale=1.0, random_state=0)
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> acct.record(res.privacy)
        >>> acct.remaining_epsilon, len(acct.spent)
        (0.5, 1)
        """
        self.check(ledger.epsilon, ledger.delta)
        self.spent.append(ledger)
