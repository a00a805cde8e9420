"""An advised fit: a budget refusal or a reliability note names the ε that cures it.

:func:`advised` wraps every model's ``fit`` (and ``winsorized_mean``); the ε it names is
found by the searches of :mod:`~dplong.planning.search` on the fit's own decision, and the
remedy of a note is kept per model and options, or per first plan, so that a loop over seeds
searches once.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import weakref
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from dplong.exceptions import InsufficientUsersError, PrivacyParameterError
from dplong.planning.checkpoints import _MODE, _WATCH, FitPlan, _Restart, _Watch
from dplong.planning.decision import is_budget_refusal
from dplong.planning.search import (
    EPSILON_RANGE,
    _budget_passes,
    _quiet_passes,
    smallest_epsilon,
)
from dplong.privacy.budget import QUIET_REMEDY
from dplong.privacy.budget.fit import guarded

_Fit = TypeVar("_Fit", bound=Callable[..., Any])


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

        with guarded():  # a failure after the noise began is charged
            return _advised_run(fit, args, kwargs, attempt)

    return wrapper  # type: ignore[return-value]


def _advised_run(
    fit: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    attempt: Callable[[float], object],
) -> Any:
    """One advised fit (:func:`advised`): its remedy found or remembered, its budget refusal
    advised."""
    epsilon = kwargs["epsilon"]
    memo, key = _memo(args, kwargs)
    remedy = memo.get(key) if memo is not None else None
    try:
        if remedy is not None:
            return _with_remedy(remedy, fit, args, kwargs)
        restart: _Restart | None = None
        try:
            result = _with_remedy("", fit, args, kwargs, watch=_Watch())
        except _Restart as stopped:  # before any noise
            restart = stopped
        remedy = ""
        if restart is not None:  # outside the handler: a refusal now chains no _Restart
            planned = _planned_key(fit, restart.fit_plan, kwargs) if memo is None else None
            remedy = _planned_remedy(planned, attempt, float(epsilon))
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


def _planned_remedy(
    planned: Hashable | None, attempt: Callable[[float], object], epsilon: float
) -> str:
    """The remedy of a fit's note: the ε that plans it without the note, remembered by its
    public ``planned`` key (None: not remembered)."""
    remedy = _PLANNED_REMEDIES.get(planned) if planned is not None else None
    if remedy is None:
        remedy = _note_remedy(smallest_epsilon(_quiet_passes(attempt, budget=True), epsilon))
        if planned is not None:
            if len(_PLANNED_REMEDIES) >= 1024:
                _PLANNED_REMEDIES.clear()
            _PLANNED_REMEDIES[planned] = remedy
    return remedy


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
