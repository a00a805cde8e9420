"""Plan a fit from public facts alone: will it be refused, will it warn, how much noise, at what ε.

Whether a fit is refused depends on public facts only (n, the formula, the declared levels and
the options: ``docs/design`` §1), so it can be decided before any data are at hand. This module
decides it **by running the model's own fit** in a planning mode, not by a second copy of its
rules: a fit runs its validation, chooses its blocks and budget shares and makes and checks
every release plan (:class:`~dplong.privacy.budget.ReleasePlan`) as it always does, and stops
at its :func:`checkpoint` — the point after which nothing is refused and before the first noise
draw — handing back its :class:`FitPlan`. A model that ends in
:func:`~dplong.models.release_blocks.run_blocks` reaches the checkpoint there; a model with
releases of its own calls :func:`checkpoint` itself right before its first draw (see
:class:`FitPlan`).

On top of that decision:

* :func:`plan` (``dplong.plan``, ``dplong plan`` on the command line) builds the model on
  stand-in rows made from public facts (n users, the formula's columns, the declared levels)
  — nothing the decision reads — and reports each released column's predicted privacy-noise sd
  (:func:`~dplong.privacy.engine.forecast_noise`), the warnings its plans carry, and the
  smallest ε (or n) at which the fit is released, released without warnings, or reaches a
  target noise sd;
* :func:`advised` wraps a model's ``fit``: when a budget refusal is raised, the ε it advises
  is found by :func:`smallest_epsilon`, bisection on the same decision, so that refitting at
  that ε is not refused (or the message says that no ε helps); a plan's reliability note (a
  private median may miss the data) names the smallest ε at which the fit plans without one
  (:data:`~dplong.privacy.budget.QUIET_REMEDY`).

Examples
--------
>>> import dplong
>>> p = dplong.plan("lwage ~ exper + expersq", model="ols", n=545, epsilon=1.0,
...                 estimator="within")
>>> p.refused, p.smallest_epsilon
(True, 1.4)
>>> dplong.plan("lwage ~ exper + expersq", model="ols", n=545, epsilon=1.4,
...             estimator="within").refused
False
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import functools
import inspect
import math
import textwrap
import warnings
import weakref
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong.exceptions import (
    DplongError,
    FormulaError,
    InsufficientUsersError,
    ParameterError,
    PrivacyParameterError,
)
from dplong.privacy.budget import QUIET_REMEDY, ReleasePlan
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import TailModel

__all__ = [
    "FitPlan",
    "PlanResults",
    "PlannedBlock",
    "advised",
    "checkpoint",
    "plan",
    "planning",
    "smallest_epsilon",
]

#: The budgets :func:`smallest_epsilon` searches: beyond the largest, no ε is said to help.
EPSILON_RANGE = (1e-4, 1e4)
#: The user counts :func:`PlanResults.smallest_n` searches.
USERS_RANGE = (2, 10**6)
#: Relative precision of the bisections (the answer is then rounded up to two digits).
PRECISION = 0.01
#: Seed of the stand-in rows :func:`plan` builds a model on (they are never read to decide).
STAND_IN_SEED = 20240613

Mode = Literal["decide"]
_MODE: ContextVar[Mode | None] = ContextVar("dplong_planning", default=None)
_Fit = TypeVar("_Fit", bound=Callable[..., Any])


@dataclass(frozen=True)
class PlannedBlock:
    """One release of a fit as planned: its public labels, share of the budget and the public
    facts its noise depends on (whether the scale is stated, public bounds, the tail model,
    whether its columns share the budget in their own units), and its plan (None: the paper's
    pipeline or the local model, whose stages are planned inside the release, or a release
    that is not the engine's). ``noise_sd``: where public facts alone fix the noise of a release
    that is not the engine's (an ePTR release given its test passed), its sd per column, in
    the columns' units.

    Examples
    --------
    >>> from dplong.planning import PlannedBlock
    >>> from dplong.privacy.budget import ReleasePlan
    >>> plan = ReleasePlan.make(n=500, d=2, epsilon=2.0, delta=4e-6, stated_scale=False)
    >>> block = PlannedBlock(("Intercept", "x"), 1.0, False, plan)
    >>> block.plan.midpoint > 0, block.bounds is None
    (True, True)
    """

    names: tuple[str, ...]
    share: float
    stated_scale: bool
    plan: ReleasePlan | None
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    tail: TailModel | None = None
    relative: bool = False
    notes: tuple[str, ...] = ()
    noise_sd: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class FitPlan:
    """What a fit decided before its first noise draw: n, its validated options and its blocks.

    A model registers its plan by reaching :func:`checkpoint` with one: every model that
    releases through :func:`~dplong.models.release_blocks.run_blocks` does so there; a model
    with its own releases (e.g. one vector release of sufficient statistics) calls
    ``checkpoint(FitPlan(...))`` itself once every refusal has been decided, with one
    :class:`PlannedBlock` per release — its ``plan`` None when its noise is not the engine's
    (the planner then decides refusals and warnings for it, and forecasts no noise).

    Examples
    --------
    >>> import dplong
    >>> from dplong.planning import FitPlan, planning
    >>> from dplong.planning import Planned
    >>> model = dplong.LongitudinalOLS.from_formula(
    ...     "lwage ~ exper", dplong.datasets.load_wage_panel(), groups="nr")
    >>> with planning():
    ...     try:
    ...         model.fit(epsilon=4.0)
    ...     except Planned as stop:
    ...         fit_plan = stop.fit_plan
    >>> fit_plan.n, [block.names for block in fit_plan.blocks]
    (545, [('Intercept', 'exper')])
    """

    n: int
    options: ReleaseOptions
    blocks: tuple[PlannedBlock, ...]

    @property
    def notes(self) -> tuple[str, ...]:
        """The plans' public warnings (what the fit warns of before any noise), each once."""
        return tuple(
            dict.fromkeys((*self.budget_notes, *(n for b in self.blocks for n in b.notes)))
        )

    @property
    def budget_notes(self) -> tuple[str, ...]:
        """The plans' own warnings, each once: those a larger ε can remove (a block's stated
        ``notes`` hold whatever the budget)."""
        return tuple(
            dict.fromkeys(note for b in self.blocks if b.plan is not None for note in b.plan.notes)
        )


class Planned(Exception):
    """Raised by :func:`checkpoint` in planning mode to carry a fit's :class:`FitPlan` out of it
    before any noise (not a :class:`~dplong.exceptions.DplongError`: nothing went wrong)."""

    def __init__(self, fit_plan: FitPlan) -> None:
        super().__init__("planned")
        self.fit_plan = fit_plan


@contextlib.contextmanager
def planning() -> Iterator[None]:
    """Run fits in planning mode: each stops at its :func:`checkpoint` with :class:`Planned`.

    Examples
    --------
    >>> from dplong.planning import checkpoint, planning, Planned
    >>> with planning():
    ...     try:
    ...         checkpoint(None)
    ...     except Planned:
    ...         print("stopped before any noise")
    stopped before any noise
    """
    token = _MODE.set("decide")
    try:
        yield
    finally:
        _MODE.reset(token)


def checkpoint(fit_plan: Any) -> None:
    """The point of a fit after which nothing is refused and before its first noise draw: in
    planning mode, stop and hand back ``fit_plan``; otherwise nothing happens.

    Examples
    --------
    >>> from dplong.planning import checkpoint
    >>> checkpoint(None)  # not planning: the fit goes on
    """
    if _MODE.get() is not None:
        raise Planned(fit_plan)
    watch = _WATCH.get()
    if watch is not None and watch.armed:  # the first checkpoint of an advised fit
        watch.armed = False
        if isinstance(fit_plan, FitPlan) and fit_plan.budget_notes:
            raise _Restart(fit_plan)


@dataclass
class _Watch:
    """An advised fit's first run (:func:`advised`): armed until its first checkpoint."""

    armed: bool = True


#: Set while an advised fit runs without knowing its notes' remedy (:func:`advised`).
_WATCH: ContextVar[_Watch | None] = ContextVar("dplong_advised_watch", default=None)


class _Restart(Exception):
    """Raised by the first :func:`checkpoint` of an advised fit whose plans carry a note a larger
    ε can remove: the fit stops before any noise, so that it can run again with the note's
    remedy (not a :class:`~dplong.exceptions.DplongError`: nothing went wrong)."""

    def __init__(self, fit_plan: FitPlan) -> None:
        super().__init__("restart")
        self.fit_plan = fit_plan


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
    """``hi`` rounded up to 2 significant digits (more if the rounded value fails)."""
    for digits in (2, 3, 4):
        power = 10.0 ** (math.floor(math.log10(hi)) - digits + 1)
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


def advised(fit: _Fit) -> _Fit:
    """Wrap a fit so that a budget refusal names the ε at which the same fit is not refused.

    The ε comes from :func:`smallest_epsilon` on the fit's own decision (run in planning mode
    with the same arguments and other budgets, no accountant and a throwaway generator), so
    refitting at the advised ε is not refused for its budget. Where no ε up to
    :data:`EPSILON_RANGE` helps, the message says so instead. A reliability note of the fit's
    plans names the smallest ε at which the fit plans without one
    (:data:`~dplong.privacy.budget.QUIET_REMEDY`): the fit runs once, and only where its first
    :func:`checkpoint` (before any noise) finds such a note does it stop there, find the ε and
    run again with it.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + expersq", wages,
    ...                                             groups="nr")
    >>> model.fit(epsilon=1.0, estimator="within")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.InsufficientUsersError: ... raise epsilon to about 1.4 (dplong.plan: ...
    """
    parameters = inspect.signature(fit).parameters

    @functools.wraps(fit)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _MODE.get() is not None or "epsilon" not in kwargs or QUIET_REMEDY.get() is not None:
            return fit(*args, **kwargs)  # planning, or an inner fit of an advised one
        unspent = {"accountant": None, "random_state": 0, "rng": None}

        def attempt(epsilon: float) -> object:
            given = {k: v for k, v in unspent.items() if k in parameters}
            return fit(*args, **{**kwargs, **given, "epsilon": epsilon})

        epsilon = kwargs["epsilon"]
        memo, key = _memo(args, kwargs)
        remedy = memo.get(key) if memo is not None else None
        try:
            if remedy is not None:
                return _with_remedy(remedy, fit, args, kwargs)
            try:
                result = _with_remedy("", fit, args, kwargs, watch=_Watch())
                remedy = ""
            except _Restart as restart:  # before any noise: which ε plans the fit without it
                planned = _planned_key(fit, restart.fit_plan, kwargs) if memo is None else None
                remedy = _PLANNED_REMEDIES.get(planned) if planned is not None else None
                if remedy is None:
                    quiet = smallest_epsilon(_quiet_passes(attempt, budget=True), float(epsilon))
                    remedy = _note_remedy(quiet)
                    if planned is not None:
                        if len(_PLANNED_REMEDIES) >= 1024:
                            _PLANNED_REMEDIES.clear()
                        _PLANNED_REMEDIES[planned] = remedy
                result = _with_remedy(remedy, fit, args, kwargs)
            if memo is not None:
                memo[key] = remedy
            return result
        except (InsufficientUsersError, PrivacyParameterError) as err:
            if not is_budget_refusal(err) or err.advice is not None:
                raise
            needed = smallest_epsilon(_budget_passes(attempt), float(epsilon))
            said = _advice(needed)
            advised_err = type(err)(f"{err}; {said}")
            advised_err.budget_refusal, advised_err.advice = True, said
            raise advised_err from None

    return wrapper  # type: ignore[return-value]


def _with_remedy(
    remedy: str,
    fit: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    watch: _Watch | None = None,
) -> Any:
    """``fit(*args, **kwargs)`` with ``remedy`` named by its plans' notes, watched by ``watch``
    (:func:`checkpoint`) if given."""
    token, watching = QUIET_REMEDY.set(remedy), _WATCH.set(watch)
    try:
        return fit(*args, **kwargs)
    finally:
        _WATCH.reset(watching)
        QUIET_REMEDY.reset(token)


#: The remedies :func:`advised` found, per model and options (public facts, so a Monte Carlo
#: loop over seeds plans once): weakly keyed by the model, so they go with it.
_REMEDIES: weakref.WeakKeyDictionary[Any, dict[Hashable, str]] = weakref.WeakKeyDictionary()
#: Options that do not change a fit's plan (the noise's source and the spending record).
_UNPLANNED = ("random_state", "rng", "accountant")


#: The remedies :func:`advised` found for fits that are not a model's (``winsorized_mean``),
#: keyed by the function, its first plan (:class:`FitPlan`: n, the options, the blocks and their
#: release plans, all public facts) and its small options; the data arguments count through
#: the plan alone. Bounded by clearing.
_PLANNED_REMEDIES: dict[Hashable, str] = {}


def _planned_key(
    fit: Callable[..., Any], fit_plan: FitPlan, kwargs: Mapping[str, Any]
) -> Hashable | None:
    """Where :func:`advised` keeps the remedy of a fit that is not a model's: the function, its
    first plan and its options other than data (a large array: its public facts, n and the
    columns, are the plan's) and the noise's source (None: a plan or option it cannot key)."""
    options = []
    for name, value in sorted(kwargs.items()):
        if name in _UNPLANNED:
            continue
        try:  # rows (arrays, pandas objects, long lists) are data: kept out of the key
            data = isinstance(value, np.ndarray | pd.Series | pd.DataFrame | pd.Index) or (
                isinstance(value, list | tuple) and len(value) > 64
            )
            options.append((name, "data" if data else _frozen(value)))
        except TypeError:
            options.append((name, "data"))
    try:
        key = (fit.__module__, fit.__qualname__, _frozen(fit_plan, largest=None), tuple(options))
        hash(key)
    except TypeError:
        return None
    return key


def _memo(
    args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[dict[Hashable, str] | None, Hashable]:
    """Where :func:`advised` keeps the remedy of a model's fit with these options: only for a
    model's ``fit`` (its public facts fixed at construction) with small, hashable options."""
    if len(args) != 1 or not hasattr(args[0], "nobs_users"):
        return None, None
    try:
        key = tuple(sorted((k, _frozen(v)) for k, v in kwargs.items() if k not in _UNPLANNED))
        hash(key)
        memo = _REMEDIES.setdefault(args[0], {})
    except TypeError:  # an unhashable option (or model): plan every time
        return None, None
    return memo, key


def _frozen(value: Any, *, largest: int | None = 64) -> Hashable:
    """A hashable stand-in for an option or a plan (dataclasses, arrays, sequences, mappings
    and scalars); TypeError if there is none, or an array has more than ``largest`` entries."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (
            type(value).__qualname__,
            *(_frozen(getattr(value, f.name), largest=largest) for f in fields),
        )
    if isinstance(value, np.ndarray):
        if largest is not None and value.size > largest:
            raise TypeError("large array")
        return ("array", value.shape, value.dtype.str, value.tobytes())
    if isinstance(value, list | tuple):
        return (type(value).__name__, *(_frozen(v, largest=largest) for v in value))
    if isinstance(value, Mapping):
        items = ((str(k), _frozen(v, largest=largest)) for k, v in value.items())
        return ("mapping", *sorted(items))
    hash(value)
    return value  # type: ignore[no-any-return]


def _is_budget(epsilon: Any) -> bool:
    """A valid ε (the fit refuses any other before planning anything)."""
    return bool(
        isinstance(epsilon, int | float | np.integer | np.floating)
        and not isinstance(epsilon, bool)
        and math.isfinite(epsilon)
        and epsilon > 0
    )


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


def _note_remedy(quiet: float | None) -> str:
    """The remedy a plan's reliability note names (:func:`advised`)."""
    if quiet is None:
        return f"No epsilon up to {EPSILON_RANGE[1]:g} removes this risk: more users"
    return f"Raise epsilon to about {quiet:g} (dplong.plan: the smallest without this note)"


def _advice(needed: float | None) -> str:
    """The remedy a budget refusal names (:func:`advised`)."""
    if needed is None:
        return (
            f"no epsilon up to {EPSILON_RANGE[1]:g} is enough with this number of users "
            "(dplong.plan): more users, fewer columns or a stated scale are needed"
        )
    return (
        f"raise epsilon to about {needed:g} (dplong.plan: the smallest at which this fit is "
        "not refused)"
    )


# ---------------------------------------------------------------------------------------------
# dplong.plan: a fit planned on stand-in rows
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanResults:
    """What :func:`plan` predicts for a fit, from public facts only.

    Attributes
    ----------
    model, formula : str
    n : int
    epsilon, delta : float
        The budget planned (δ as the fit would default it).
    refusal : str or None
        Why the fit would be refused (the fit's own message), or None.
    warnings : tuple of str
        The public warnings its plans carry (said before any noise).
    table : pandas.DataFrame
        One row per released column (index: block and column): its share of the budget, the
        ε of its midpoint, scale and final stages, the predicted privacy-noise sd
        (``noise_sd``, in ``unit``), the sampling sd in the same unit, their ratio and, with a
        ``target_sd``, the smallest ε at which that column's predicted noise sd reaches it.
    smallest_epsilon : float or None
        The smallest ε at which the fit is not refused (None: none up to 1e4).
    quiet_epsilon : float or None
        The smallest ε at which it is planned without a warning (None: none up to 1e4, or
        the model registers no plan).
    registered : bool
        Whether the model registers its plan (:class:`FitPlan`); if not, the decision is its
        fit's, run on the stand-in rows, and nothing is forecast.
    level : {"user", "item"}
        What n counts: users, or rows each a unit (an item-level model).

    Examples
    --------
    >>> import dplong
    >>> p = dplong.plan("y ~ x", model="ols", n=2000, epsilon=0.5)
    >>> p.refused, p.warnings, list(p.table.index)
    (False, (), [('0', 'Intercept'), ('0', 'x')])
    >>> print(p.summary())  # doctest: +ELLIPSIS
                   dplong plan (public facts only: no row is read)...
    Decision: released
    ...
    """

    model: str
    formula: str
    n: int
    epsilon: float
    delta: float
    refusal: str | None
    warnings: tuple[str, ...]
    table: pd.DataFrame
    smallest_epsilon: float | None
    quiet_epsilon: float | None
    target_sd: float | None = None
    registered: bool = True
    level: str = "user"
    _users: Callable[[], int | None] = field(repr=False, compare=False, default=lambda: None)

    @property
    def refused(self) -> bool:
        """Whether the fit would be refused at ``epsilon``."""
        return self.refusal is not None

    def smallest_n(self) -> int | None:
        """The smallest number of users at which the fit is not refused at ``epsilon`` (None:
        none up to 10⁶). Bisection on the same decision, a model built per candidate n."""
        return self._users()

    def summary(self) -> str:
        """The plan as text (also ``str(results)``)."""
        width = 78
        lines = [
            "dplong plan (public facts only: no row is read)".center(width),
            "=" * width,
            f"Model: {self.model}   Formula: {self.formula}",
            f"{'Users (n)' if self.level == 'user' else 'Rows (n, each a unit)'}: {self.n}   "
            f"Privacy: central, epsilon {self.epsilon:g}, "
            f"delta {self.delta:.3g}",
            "Decision: "
            + ("REFUSED before any noise" if self.refused else "released")
            + ("" if self.refused or not self.warnings else ", with warnings"),
            f"Smallest epsilon released: {_shown(self.smallest_epsilon)}; without warnings: "
            + (_shown(self.quiet_epsilon) if self.registered else "unknown"),
            "-" * width,
        ]
        if self.refused:
            lines.append(f"Refusal: {self.refusal}")
        elif not self.registered:
            lines.append(
                textwrap.fill(
                    f"{self.model} registers no plan: the decision is its fit's on stand-in "
                    "rows; no warnings or noise are forecast.",
                    width,
                )
            )
        else:
            shown = self.table.copy()
            shown.index = [f"{b}: {c}" for b, c in shown.index]
            lines.append(shown.to_string(float_format=lambda v: f"{v:.4g}"))
        lines.append("-" * width)
        notes = [f"Warning: {note}" for note in self.warnings] + [
            "noise sd and sampling sd are predicted for a typical release (every user has a "
            "statistic, normal tails); unit sigma: the sd of one user's statistic in that "
            "column, which the fit estimates privately (multiply by it); 'absolute' where the "
            "scale is stated or public bounds hold the statistic."
        ]
        lines += [textwrap.fill(note, width, subsequent_indent="  ") for note in notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _shown(value: float | None) -> str:
    return "none up to 1e4" if value is None else f"{value:g}"


def plan(
    formula: str,
    *,
    n: int,
    epsilon: float,
    model: str | type = "ols",
    rows: int = 4,
    levels: Mapping[str, Sequence[Any]] | None = None,
    target_sd: float | None = None,
    **options: Any,
) -> PlanResults:
    """Plan a fit from public facts alone: refused or not, its warnings, each released column's
    predicted privacy-noise sd, and the smallest ε at which it is released.

    The model is built on stand-in rows: n users of ``rows`` rows each, with the formula's
    columns filled by made-up numbers (and the declared ``levels``). The decision never reads
    rows, so it is the decision the model makes on the real data: the fit runs in planning
    mode (:func:`checkpoint`) with its own validation, budget shares and plan checks, and stops
    before any noise.

    Parameters
    ----------
    formula : str
        The model's formula, e.g. ``"lwage ~ exper + expersq"``.
    n : int
        Number of users (public); of rows for an item-level model (one that takes no
        ``groups``, such as :class:`~dplong.NadarayaWatson`: every row is a unit).
    epsilon : float
        The budget to plan (the other ε the results name are searched from it).
    model : str or class
        A name of ``dplong fit --model`` (``"ols"``, ``"location"``, ``"mean"``, ``"kernel"``,
        ``"poisson"``, ``"pooled"``, ``"nw"``, ...) or a model class with ``from_formula``.
    rows : int
        Rows per user of the stand-in data (a public lower bound if you state one; the
        decision does not depend on it). An item-level model has one per unit.
    levels : mapping, optional
        Declared levels of factor columns, as for ``from_formula``.
    target_sd : float, optional
        A privacy-noise sd to reach (in each column's unit): the table then gives, per column,
        the smallest ε at which its predicted noise sd is at most this.
    **options
        Options of the model's ``from_formula`` (``domain``, ``bandwidth``, ``grid``,
        ``correlation``, ...) and of its ``fit`` (``delta``, ``scale``, ``estimator``,
        ``privacy``, ``bound``, ``variance_share``, ...), each sent where it belongs.

    Returns
    -------
    PlanResults

    Examples
    --------
    >>> import dplong
    >>> p = dplong.plan("Weight ~ 1", model="location", n=72, epsilon=4.0)
    >>> p.refused, p.smallest_epsilon
    (True, 4.4)
    >>> dplong.plan("Weight ~ 1", model="location", n=72, epsilon=4.4).refused
    False
    >>> p = dplong.plan("y ~ x", model="ols", n=5000, epsilon=1.0, target_sd=0.005)
    >>> p.refused, p.table.loc[("0", "x"), "unit"]
    (False, 'sigma')
    >>> bool(p.table.loc[("0", "x"), "noise_sd"] < p.table.loc[("0", "x"), "sampling_sd"])
    True
    """
    build, model_name = _builder(model)
    model_params = inspect.signature(build).parameters
    model_options = {k: v for k, v in options.items() if k in model_params}
    fit_options = {k: v for k, v in options.items() if k not in model_params}
    for fixed in ("random_state", "rng", "accountant"):
        if fixed in fit_options:
            raise ParameterError(f"plan takes no {fixed}: it draws no noise and spends nothing")
    if levels is not None:
        model_options["levels"] = levels

    item_level = "groups" not in model_params  # every row a unit: n counts rows

    def model_for(users: int) -> Any:
        frame = stand_in_rows(
            formula, users, 1 if item_level else rows, levels, model_options.get("domain")
        )
        extra = {"time": "__time__"} if "time" in model_params else {}
        if not item_level:
            extra["groups"] = "__user__"
        return build(formula, frame, **extra, **model_options)

    built = model_for(_users(n))
    unknown = sorted(set(fit_options) - set(inspect.signature(built.fit).parameters))
    if unknown:
        raise ParameterError(
            f"{', '.join(unknown)}: not an option of {model_name}.from_formula or .fit"
        )

    def attempt(fitted: Any, eps: float) -> object:
        return fitted.fit(epsilon=eps, **fit_options)

    decision = _decide(lambda: attempt(built, epsilon))
    if isinstance(decision, DplongError) and not is_budget_refusal(decision):
        raise decision  # a bad argument: the fit itself refuses it the same way
    quiet = smallest_epsilon(_quiet_passes(lambda e: attempt(built, e)), epsilon)
    if isinstance(decision, FitPlan) and decision.budget_notes:  # as the fit words them
        calm = smallest_epsilon(_quiet_passes(lambda e: attempt(built, e), budget=True), epsilon)
        token = QUIET_REMEDY.set(_note_remedy(calm))
        try:
            decision = _decide(lambda: attempt(built, epsilon))
        finally:
            QUIET_REMEDY.reset(token)

    def forecast_at(eps: float) -> pd.DataFrame | None:
        outcome = _decide(lambda: attempt(built, eps))
        return _table(outcome, fit_options) if isinstance(outcome, FitPlan) else None

    table = forecast_at(epsilon)
    if table is None:
        table = pd.DataFrame(columns=list(_COLUMNS))
    if target_sd is not None and len(table):
        table["epsilon_for_target"] = [
            smallest_epsilon(_reaches(forecast_at, key, float(target_sd)), epsilon)
            for key in table.index
        ]

    def users() -> int | None:
        return _smallest_users(lambda m: _released(_decide(lambda: attempt(model_for(m), epsilon))))

    fit_plan = decision if isinstance(decision, FitPlan) else None
    return PlanResults(
        model=model_name,
        formula=formula,
        n=int(n),
        epsilon=float(epsilon),
        delta=float(fit_plan.options.delta) if fit_plan else _default_delta(n, fit_options),
        refusal=str(decision) if isinstance(decision, DplongError) else None,
        warnings=fit_plan.notes if fit_plan else (),
        table=table,
        smallest_epsilon=smallest_epsilon(_budget_passes(lambda e: attempt(built, e)), epsilon),
        quiet_epsilon=quiet if decision is not None else None,
        target_sd=target_sd,
        registered=decision is not None,
        level="item" if item_level else "user",
        _users=users,
    )


_COLUMNS = (
    "share",
    "midpoint_epsilon",
    "scale_epsilon",
    "final_epsilon",
    "noise_sd",
    "sampling_sd",
    "noise_to_sampling",
    "unit",
)


def _table(fit_plan: FitPlan, fit_options: Mapping[str, Any]) -> pd.DataFrame:
    """One row per released column of a fit plan (the forecast of :func:`plan`)."""
    from dplong.privacy.engine import forecast_noise

    rows: list[dict[str, Any]] = []
    index: list[tuple[str, str]] = []
    stated = _stated_sd(fit_options, fit_plan)
    for i, block in enumerate(fit_plan.blocks):
        d = len(block.names)
        if block.plan is None:
            noise = np.full(d, np.nan) if block.noise_sd is None else block.noise_sd
            sampling = final = np.full(d, np.nan)
        else:
            noise, sampling = forecast_noise(
                block.plan,
                gamma=fit_plan.options.gamma,
                stated_scale=block.stated_scale,
                tail=block.tail,
                bounds=block.bounds,
                relative=block.relative,
            )
            budget = block.plan.calibrate(np.full(d, 1.0 / d), "laplace")
            final = budget.split(block.plan.moment_share)[0].epsilon
        absolute = (
            block.bounds is not None
            or block.noise_sd is not None
            or (stated is not None and len(fit_plan.blocks) == 1)
        )
        if (
            stated is not None
            and len(fit_plan.blocks) == 1
            and block.bounds is None
            and block.noise_sd is None
        ):
            noise, sampling = noise * stated, sampling * stated
        for j, name in enumerate(block.names):
            index.append((str(i), name))
            rows.append(
                {
                    "share": block.share,
                    "midpoint_epsilon": block.plan.midpoint if block.plan else np.nan,
                    "scale_epsilon": block.plan.spread if block.plan else np.nan,
                    "final_epsilon": float(final[j]),
                    "noise_sd": float(noise[j]),
                    "sampling_sd": float(sampling[j]),
                    "noise_to_sampling": float(noise[j] / sampling[j]),
                    "unit": "absolute" if absolute else "sigma",
                }
            )
    table: pd.DataFrame = pd.DataFrame(
        rows, index=pd.MultiIndex.from_tuples(index, names=["block", "column"]), columns=_COLUMNS
    )
    return table


def _stated_sd(fit_options: Mapping[str, Any], fit_plan: FitPlan) -> NDArray[np.float64] | None:
    """The sd a stated numeric ``scale`` (a variance proxy) gives each column of a one-block
    fit, or None (estimated, or a dependence model whose proxy the model computes)."""
    scale = fit_options.get("scale")
    if scale is None or isinstance(scale, str) or len(fit_plan.blocks) != 1:
        return None
    try:
        values = np.broadcast_to(np.asarray(scale, dtype=float), (len(fit_plan.blocks[0].names),))
    except (TypeError, ValueError):
        return None
    return np.asarray(np.sqrt(values), dtype=np.float64)


def _reaches(
    forecast_at: Callable[[float], pd.DataFrame | None], key: Any, target: float
) -> Callable[[float], bool]:
    def reaches(eps: float) -> bool:
        table = forecast_at(eps)
        return table is not None and bool(table.loc[key, "noise_sd"] <= target)

    return reaches


def _smallest_users(passes: Callable[[int], bool]) -> int | None:
    """The smallest n in :data:`USERS_RANGE` with ``passes(n)``: doubling, then bisection."""
    lo, hi = USERS_RANGE[0], USERS_RANGE[0]
    while not passes(hi):
        if hi >= USERS_RANGE[1]:
            return None
        lo, hi = hi, min(hi * 2, USERS_RANGE[1])
    if hi == USERS_RANGE[0]:
        return hi
    while hi - lo > max(1, int(lo * PRECISION)):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return hi


def _users(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ParameterError(f"n (the number of users) must be an integer >= 2, got {n!r}")
    return int(n)


def _default_delta(n: int, fit_options: Mapping[str, Any]) -> float:
    delta = fit_options.get("delta")
    if delta is not None:
        return float(delta)
    return 0.0 if fit_options.get("privacy") == "local" else 1.0 / n**2


def _builder(model: str | type) -> tuple[Callable[..., Any], str]:
    """The ``from_formula`` of ``model`` (a command-line name or a class) and its name."""
    from dplong.models.command_line import MODELS

    if isinstance(model, str):
        if model not in MODELS:
            raise ParameterError(
                f"model must be one of {sorted(MODELS)} or a model class, got {model!r}"
            )
        build = MODELS[model].build
        owner = getattr(build, "__self__", None)
        return build, getattr(owner, "__name__", model)
    if isinstance(model, type) and hasattr(model, "from_formula"):
        return model.from_formula, model.__name__
    raise ParameterError(
        f"model must be a name of dplong fit --model or a model class, got {model!r}"
    )


def formula_columns(formula: str) -> tuple[str, ...]:
    """The data columns a formula's terms name (names not defined by numpy or patsy).

    Examples
    --------
    >>> from dplong.planning import formula_columns
    >>> formula_columns("np.log1p(meddol) ~ np.log(coins + 1) + xage + C(plan, levels=[1, 2])")
    ('meddol', 'coins', 'xage', 'plan')
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"formula must be a string like 'y ~ x1 + x2', got {formula!r}")
    try:
        desc = patsy.ModelDesc.from_formula(formula)
    except patsy.PatsyError as err:
        raise FormulaError(f"cannot parse the formula {formula!r}: {err}") from None
    known = set(dir(builtins)) | set(patsy.builtins.__all__) | {"np", "pd", "C", "I", "Q"}
    found: list[str] = []
    for term in [*desc.lhs_termlist, *desc.rhs_termlist]:
        for factor in term.factors:
            try:
                tree = ast.parse(factor.code.strip(), mode="eval")
            except SyntaxError:
                raise FormulaError(f"cannot parse {factor.code!r} in {formula!r}") from None
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Q":
                    found += [
                        a.value
                        for a in node.args
                        if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    ]
                elif (
                    isinstance(node, ast.Name)
                    and node.id not in known
                    and not any(isinstance(p, ast.Call) and p.func is node for p in ast.walk(tree))
                ):
                    found.append(node.id)
    return tuple(dict.fromkeys(found))


def stand_in_rows(
    formula: str,
    n: int,
    rows: int,
    levels: Mapping[str, Sequence[Any]] | None,
    domain: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Made-up rows for n users: what a model is built on to plan a fit (never read to decide).

    Every column the formula names holds positive numbers (within ``domain`` when one is
    given), a declared factor its levels in turn; ``__user__`` and ``__time__`` number the
    users and their rows.

    Examples
    --------
    >>> from dplong.planning import stand_in_rows
    >>> frame = stand_in_rows("y ~ x + C(site)", 3, 2, {"site": ["a", "b"]})
    >>> frame.shape, sorted(frame.columns)
    ((6, 5), ['__time__', '__user__', 'site', 'x', 'y'])
    """
    if isinstance(rows, bool) or not isinstance(rows, int | np.integer) or rows < 1:
        raise ParameterError(f"rows (rows per user) must be a positive integer, got {rows!r}")
    rng = np.random.default_rng(STAND_IN_SEED)
    size = n * rows
    low, high = (1.0, 2.0) if domain is None else (float(domain[0]), float(domain[1]))
    frame: dict[str, Any] = {
        "__user__": np.repeat(np.arange(n), rows),
        "__time__": np.tile(np.arange(rows), n),
    }
    declared = dict(levels or {})
    for column in formula_columns(formula):
        if column in declared:
            values = list(declared[column])
            frame[column] = [values[k % len(values)] for k in range(size)]
        else:
            frame[column] = rng.uniform(low, high, size)
    stand_in: pd.DataFrame = pd.DataFrame(frame)
    return stand_in
