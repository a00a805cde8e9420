"""A fit's budget: its parts, the accountant's check and record, and its ledger.

A fit's blocks each get a :func:`part` of its (ε, δ) (:func:`users_share` sizes a stage that
needs a given ``n ε``; :func:`keyed_share` the levels of a key; :func:`split_users` the local
model's disjoint groups). Before the first noise draw, :func:`refuse_doomed` refuses a fit
whose every release would be withheld and :func:`afford` is the accountant's check;
:func:`charge` checks that a release's calls compose within what it was given and has the
accountant record them (:func:`settle` composes a release's ledger and charges it,
:func:`planned_ledger` charges the total a release planned); :func:`parallel_ledger` composes
the local model's disjoint groups, :func:`fit_ledger` and :func:`keyed_ledger` a fit's. This
module is the only one in the package that asks or tells the accountant or composes a ledger.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dplong.exceptions import InsufficientUsersError
from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger
from dplong.privacy.options import ReleaseOptions

if TYPE_CHECKING:
    from dplong.privacy.budget.plan import ReleasePlan


def part(options: ReleaseOptions, share: float) -> ReleaseOptions:
    """``share`` of a budget's (ε, δ): a block's part of a fit, or a stage's part of a release.

    Examples
    --------
    >>> from dplong.privacy.budget import part
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(1000, epsilon=2.0, delta=1e-6, privacy="central",
    ...                                bound=None, d=1)
    >>> half = part(options, 0.5)
    >>> half.epsilon, half.delta
    (1.0, 5e-07)
    """
    return dataclasses.replace(
        options, epsilon=options.epsilon * share, delta=options.delta * share
    )


def users_share(users: float, n: int, epsilon: float, low: float, high: float) -> float:
    """The share of ``epsilon`` worth ``users`` users of ε·n (a stage that needs a given n ε to
    work), within [low, high]: a function of public facts.

    Examples
    --------
    >>> from dplong.privacy.budget import users_share
    >>> users_share(300.0, 2000, 1.0, 0.05, 0.2), users_share(300.0, 50_000, 1.0, 0.05, 0.2)
    (0.15, 0.05)
    """
    return min(high, max(low, users / (n * epsilon)))


def afford(accountant: Accountant | None, epsilon: float, delta: float) -> None:
    """The accountant's check, before the first noise draw: refuse a spend it cannot afford.

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.budget import afford
    >>> afford(dplong.Accountant(epsilon=1.0), 0.5, 0.0)          # affordable: nothing happens
    >>> afford(dplong.Accountant(epsilon=1.0), 1.5, 0.0)
    Traceback (most recent call last):
    ...
    dplong.exceptions.BudgetExceededError: ...
    """
    if accountant is not None:
        ask(accountant, epsilon, delta)
        pending = _AFFORDED.get()
        if pending is not None:  # charged whole if the fit fails after its noise (guarded)
            pending.append((accountant, epsilon, delta, len(accountant.spent)))


def ask(accountant: Accountant | None, epsilon: float, delta: float) -> None:
    """The accountant's check alone, noting nothing: a refusal before a costly pass over the
    data (a Dask frame's), at what the fit is sure to spend; the fit's :func:`afford` asks
    again at its whole spend, before its first noise draw.

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.budget import ask
    >>> ask(dplong.Accountant(epsilon=1.0), 2.0, 0.0)
    Traceback (most recent call last):
    ...
    dplong.exceptions.BudgetExceededError: ...
    """
    if accountant is not None:
        accountant.check(epsilon, delta)


#: The spends a guarded fit's :func:`afford` checked, with the accountant's records then
#: (:func:`guarded`); None outside one.
_AFFORDED: ContextVar[list[tuple[Accountant, float, float, int]] | None] = ContextVar(
    "dplong_afforded", default=None
)


#: Whether a guarded fit passed its checkpoint (:func:`dplong.planning.checkpoint`: nothing
#: refused after it, the noise may begin); None outside one.
NOISE_BEGUN: ContextVar[list[bool] | None] = ContextVar("dplong_noise_begun", default=None)


@contextmanager
def guarded() -> Iterator[None]:
    """Charge a fit's accountant the whole (ε, δ) it afforded if the fit fails after its noise
    may have begun (:data:`NOISE_BEGUN`, set at its checkpoint) and before it was charged: the
    draws happened, and the failure itself is a function of them, so a retry must not be free.

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.budget import afford
    >>> from dplong.privacy.budget.fit import guarded
    >>> accountant = dplong.Accountant(epsilon=1.0)
    >>> from dplong.planning import checkpoint
    >>> try:
    ...     with guarded():
    ...         afford(accountant, 0.5, 0.0)
    ...         checkpoint(None)  # nothing refused from here: the noise begins
    ...         raise OverflowError("after the noise")
    ... except OverflowError:
    ...     pass
    >>> accountant.spent_epsilon
    0.5
    """
    pending: list[tuple[Accountant, float, float, int]] = []
    begun = [False]
    token, began = _AFFORDED.set(pending), NOISE_BEGUN.set(begun)
    try:
        yield
    except BaseException:
        for accountant, epsilon, delta, records in pending if begun[0] else ():
            if len(accountant.spent) == records:  # not charged yet: the whole spend
                lump = LedgerEntry(
                    "failed", "noise drawn before the fit failed", "fit", epsilon, delta,
                    0.0, math.nan, math.nan,
                )  # fmt: skip
                accountant.record(PrivacyLedger.from_entries([lump], delta, "central"))
        raise
    finally:
        NOISE_BEGUN.reset(began)
        _AFFORDED.reset(token)


def refuse_doomed(plans: Sequence[ReleasePlan | None], n: int, d: int, epsilon: float) -> None:
    """Refuse, before any noise, a fit whose every release would withhold every column
    (:meth:`~dplong.privacy.budget.ReleasePlan.doomed`): it would spend its budget on nothing.
    A budget refusal, so the message names the ε at which the fit is released
    (:func:`~dplong.planning.advised`). A fit with one release that can succeed goes on; a
    release not planned by the default engine (None) is never doomed.

    Examples
    --------
    >>> from dplong.privacy.budget import ReleasePlan, refuse_doomed
    >>> doomed = ReleasePlan.make(n=72, d=12, epsilon=16.0, delta=1e-4, stated_scale=False)
    >>> fine = ReleasePlan.make(n=72, d=1, epsilon=16.0, delta=1e-4, stated_scale=False)
    >>> refuse_doomed([fine, doomed], 72, 13, 16.0)       # one release can succeed: goes on
    >>> refuse_doomed([doomed], 72, 12, 16.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.InsufficientUsersError: epsilon=16 is too small for 12 column(s) with n=72...
    """
    if plans and all(plan is not None and plan.doomed() for plan in plans):
        refusal = InsufficientUsersError(
            f"epsilon={epsilon:.3g} is too small for {d} column(s) with n={n}: the private "
            "midpoint or scale of every column would miss the data more likely than not, so "
            "every estimate would be withheld: fewer columns, a stated scale or a larger "
            "epsilon would help"
        )
        refusal.budget_refusal = True
        raise refusal


def charge(
    accountant: Accountant | None, ledger: PrivacyLedger, epsilon: float, delta: float
) -> None:
    """After a release or fit: its calls must compose within the (ε, δ) it was given (a bug if
    not, so it is raised as one), and the accountant records them.

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.accounting import LedgerEntry, PrivacyLedger
    >>> from dplong.privacy.budget import charge
    >>> call = LedgerEntry("mean", "lattice Laplace", "x", 0.5, 0.0, 0.0, 1.0, 2.0)
    >>> accountant = dplong.Accountant(epsilon=1.0)
    >>> charge(accountant, PrivacyLedger.from_entries([call], 0.0, "central"), 0.5, 0.0)
    >>> accountant.spent_epsilon
    0.5
    """
    if ledger.epsilon > epsilon * (1 + 1e-9) or ledger.delta > delta * (1 + 1e-9):
        raise AssertionError(
            f"the calls compose to ({ledger.epsilon}, {ledger.delta}), beyond the budget "
            f"({epsilon}, {delta})"
        )
    if accountant is not None:
        accountant.record(ledger)


#: The composition of calls answered by disjoint groups of users drawn independently of the data
#: (:func:`parallel_ledger`).
PARALLEL_USERS = "parallel (disjoint users)"


def parallel_ledger(entries: Sequence[LedgerEntry], model: str) -> PrivacyLedger:
    """The ledger of pure calls each answered by its own group of users, the groups disjoint and
    drawn independently of the data (:func:`split_users`): parallel composition, the largest
    call's ε, which is ε²/2-zCDP (Bun–Steinke Prop. 1.4). Not charged: the fit's ledger is
    (:func:`fit_ledger`).

    Examples
    --------
    >>> from dplong.privacy.accounting import LedgerEntry
    >>> from dplong.privacy.budget import parallel_ledger
    >>> calls = [LedgerEntry("mean", "local lattice Laplace", name, 1.0, 0.0, 0.0, 2.0, 2.0)
    ...          for name in ("x", "y")]
    >>> ledger = parallel_ledger(calls, "local")
    >>> ledger.epsilon, ledger.rho, ledger.composition
    (1.0, 0.5, 'parallel (disjoint users)')
    """
    if any(entry.delta > 0 or entry.rho > 0 for entry in entries):
        raise AssertionError("parallel_ledger composes pure calls only")
    epsilon = max(entry.epsilon for entry in entries)
    with np.errstate(over="ignore"):  # ε = 1e300 (no noise): ρ is inf, not an OverflowError
        rho = float(np.float64(epsilon) ** 2 / 2.0)
    return PrivacyLedger(tuple(entries), epsilon, 0.0, PARALLEL_USERS, model, rho)


def fit_ledger(ledgers: Sequence[PrivacyLedger], delta: float, model: str) -> PrivacyLedger:
    """One ledger for a fit's releases: all their calls composed at the fit's δ, or their basic
    sum where that is smaller, or, for the local model's disjoint groups of users, in parallel
    (the largest).

    Examples
    --------
    >>> from dplong.privacy.accounting import LedgerEntry, PrivacyLedger
    >>> from dplong.privacy.budget import fit_ledger
    >>> call = LedgerEntry("mean", "lattice Laplace", "x", 0.5, 0.0, 0.0, 1.0, 2.0)
    >>> one = PrivacyLedger.from_entries([call], 0.0, "central")
    >>> fit_ledger([one, one], 0.0, "central").epsilon
    1.0
    """
    # the local model's groups are disjoint and drawn independently of the data (max); the
    # levels of a key are not (keyed_ledger): only the former compose as the largest
    if all(ledger.composition == PARALLEL_USERS for ledger in ledgers):
        worst = max(ledgers, key=lambda ledger: ledger.epsilon)
        entries = tuple(entry for ledger in ledgers for entry in ledger.entries)
        return PrivacyLedger(
            entries, worst.epsilon, worst.delta, worst.composition, model, worst.rho
        )
    if len(ledgers) == 1:
        return ledgers[0]
    joint = PrivacyLedger.from_entries(
        [entry for ledger in ledgers for entry in ledger.entries], delta, model
    )
    # the blocks' basic sum only where it is smaller and within the fit's δ (later blocks'
    # ledgers carry their earlier calls' δ: the sum can count it twice, beyond δ)
    basic = sum(ledgers[1:], ledgers[0])
    if basic.epsilon < joint.epsilon and basic.delta <= delta * (1 + 1e-9):
        return basic
    return joint


#: How many levels' releases replacing one user can change when every user is at one level of
#: a key (a grouping declared constant within users): the level the user leaves and the level
#: the user joins. The key is private, so a user may change levels between neighbours.
KEYED_TOUCHED = 2


def keyed_share(levels: int) -> float:
    """Each level's share of a fit's (ε, δ) when every user is at one level of a key
    (parallel composition over the levels): ``1 / min(levels, 2)``.

    Under the contract's neighbours (one user's rows replaced) a user at one level may move to
    another, changing both levels' releases: the fit costs the sum of the two largest levels'
    costs (:func:`keyed_ledger`), so each level gets half the budget however many levels
    there are, where a release shared by the levels (sequential composition) gives each
    about ``1 / levels``. With one level, it gets the whole budget.

    Examples
    --------
    >>> from dplong.privacy.budget import keyed_share
    >>> keyed_share(1), keyed_share(2), keyed_share(8)
    (1.0, 0.5, 0.5)
    """
    return 1.0 / min(levels, KEYED_TOUCHED)


def keyed_ledger(ledgers: Sequence[PrivacyLedger], model: str) -> PrivacyLedger:
    """The ledger of releases on the levels of a key at which every user is at one level
    (:func:`keyed_share`): parallel composition, the sum of the :data:`KEYED_TOUCHED` largest
    levels' ε and δ (and ρ), which bounds the cost of any pair a replaced user can change.

    Examples
    --------
    >>> from dplong.privacy.accounting import LedgerEntry, PrivacyLedger
    >>> from dplong.privacy.budget import keyed_ledger
    >>> level = [PrivacyLedger.from_entries(
    ...     [LedgerEntry("mean", "lattice Laplace", f"y[arm={k}]", 0.5, 0.0, 0.0, 1.0, 2.0)],
    ...     0.0, "central") for k in range(3)]
    >>> ledger = keyed_ledger(level, "central")
    >>> ledger.epsilon, len(ledger.entries), ledger.composition
    (1.0, 3, 'parallel over the levels of a key (two levels touched)')
    """

    def largest(values: Sequence[float]) -> float:  # NaN (a ρ unknown) stays NaN
        if any(math.isnan(value) for value in values):
            return math.nan
        return float(sum(sorted(values, reverse=True)[:KEYED_TOUCHED]))

    return PrivacyLedger(
        tuple(entry for ledger in ledgers for entry in ledger.entries),
        largest([ledger.epsilon for ledger in ledgers]),
        largest([ledger.delta for ledger in ledgers]),
        "parallel over the levels of a key (two levels touched)",
        model,
        largest([ledger.rho for ledger in ledgers]),
    )


def split_users(
    rng: np.random.Generator, n: int, shares: Sequence[float]
) -> list[NDArray[np.int64]]:
    """The local model's disjoint groups of users, one per release (parallel composition: each
    user answers one question with the whole ε), of sizes ``round(share · n)``; drawn
    independently of the data.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import split_users
    >>> [g.size for g in split_users(np.random.default_rng(0), 10, [0.5, 0.3, 0.2])]
    [5, 3, 2]
    """
    cuts = np.cumsum([round(share * n) for share in shares])[:-1]
    return np.split(rng.permutation(n), cuts)


def settle(
    accountant: Accountant | None,
    entries: Sequence[LedgerEntry],
    options: ReleaseOptions | ReleasePlan,
) -> PrivacyLedger:
    """The ledger of a release's calls, composed at its δ and :func:`charge` d: checked within its
    (ε, δ) and recorded by the accountant. Given a :class:`~dplong.privacy.budget.plan.ReleasePlan`,
    the (ε, δ) are the plan's (a later release of a fit spends its part, not the fit's options) and
    the release is central (the default engine's).

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.accounting import LedgerEntry
    >>> from dplong.privacy.budget import settle
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(1000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> call = LedgerEntry("mean", "lattice Laplace", "x", 0.5, 0.0, 0.0, 1.0, 2.0)
    >>> accountant = dplong.Accountant(epsilon=1.0)
    >>> settle(accountant, [call, call], options).epsilon, accountant.spent_epsilon
    (1.0, 1.0)
    """
    privacy = options.privacy if isinstance(options, ReleaseOptions) else "central"
    ledger = PrivacyLedger.from_entries(entries, options.delta, privacy)
    charge(accountant, ledger, options.epsilon, options.delta)
    return ledger


def planned_ledger(
    accountant: Accountant | None,
    entries: Sequence[LedgerEntry],
    *,
    epsilon: float,
    delta: float,
    composition: str,
    model: str,
) -> PrivacyLedger:
    """The ledger of a release charged the (ε, δ) its plan composed before any noise, under the
    composition the plan names, and :func:`charge` d. For a release whose number of calls
    depends on the data (a bisection that stops early): every planned call is charged, so the
    total is a function of public facts. ρ is NaN (not composed from the calls).

    Examples
    --------
    >>> import dplong
    >>> from dplong.privacy.accounting import LedgerEntry
    >>> from dplong.privacy.budget import planned_ledger
    >>> call = LedgerEntry("scale", "lattice Laplace", "x", 0.25, 0.0, 0.0, 1.0, 4.0)
    >>> accountant = dplong.Accountant(epsilon=1.0)
    >>> ledger = planned_ledger(accountant, [call], epsilon=1.0, delta=0.0,
    ...                         composition="4 steps by basic composition", model="central")
    >>> ledger.epsilon, len(ledger.entries), accountant.spent_epsilon
    (1.0, 1, 1.0)
    """
    ledger = PrivacyLedger(tuple(entries), epsilon, delta, composition, model, math.nan)
    charge(accountant, ledger, epsilon, delta)
    return ledger
