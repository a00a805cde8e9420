"""The planner's entry point, :func:`plan` (``dplong.plan``, ``dplong plan``)."""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import patsy

from dplong._validation import checked_call, describe, real_number, refuse_arguments
from dplong.exceptions import DataHolderWarning, DplongError, ParameterError
from dplong.planning.advice import _note_remedy
from dplong.planning.checkpoints import FitPlan
from dplong.planning.decision import _decide, _released, is_budget_refusal
from dplong.planning.forecast import _COLUMNS, _reaches, _table
from dplong.planning.reference import ReferencePanel
from dplong.planning.results import PlanResults
from dplong.planning.search import _budget_passes, _quiet_passes, _smallest_users, smallest_epsilon
from dplong.planning.stand_in import STAND_IN_USER, _builder, stand_in_rows
from dplong.privacy.budget import QUIET_REMEDY

#: The fit's options that plan refuses: it draws no noise and spends nothing.
_NOT_PLANNED = ("random_state", "rng", "accountant")


@checked_call
def plan(
    formula: str,
    *,
    n: int,
    epsilon: float,
    model: str | type = "ols",
    rows: int = 4,
    levels: Mapping[str, Sequence[Any]] | None = None,
    target_sd: float | None = None,
    time: str | None = None,
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
        ``groups``, such as :class:`~dplong.NadarayaWatson`: every row is a unit). The model
        is built on ``n * rows`` stand-in rows, at most 4·10⁷
        (:data:`~dplong.planning.stand_in.MAX_STAND_IN_ROWS`).
    epsilon : float
        The budget to plan (the other ε the results name are searched from it).
    model : str or class
        A name of ``dplong fit --model`` (``"ols"``, ``"location"``, ``"mean"``, ``"kernel"``,
        ``"poisson"``, ``"pooled"``, ``"nw"``, ...) or a model class with ``from_formula``.
    rows : int
        Rows per user of the stand-in data (a public lower bound if you state one; the
        decision does not depend on it, the pooled family's noise forecast does: its
        reference panel has this many rows a user). An item-level model has one per unit.
    levels : mapping, optional
        Declared levels of factor columns, as for ``from_formula``.
    target_sd : float, optional
        A privacy-noise sd to reach (in each column's unit, a positive finite number): the
        table then gives, per column, the smallest ε at which its predicted noise sd is at
        most this.
    time : str, optional
        The name of the column that orders each user's rows, where the formula reads it
        (``TimeEffects``: its periods declared in ``levels``); the stand-in rows hold it.
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
    (True, 4.6)
    >>> dplong.plan("Weight ~ 1", model="location", n=72, epsilon=4.6).refused
    False
    >>> p = dplong.plan("y ~ x", model="ols", n=5000, epsilon=1.0, target_sd=0.005)
    >>> p.refused, p.table.loc[("0", "x"), "unit"]
    (False, 'sigma')
    >>> bool(p.table.loc[("0", "x"), "noise_sd"] < p.table.loc[("0", "x"), "sampling_sd"])
    True
    """
    build, model_name = _builder(model)
    model_params = inspect.signature(build).parameters
    for stand_in in ("data", "groups"):
        if stand_in in options:
            raise ParameterError(
                f"plan takes no {stand_in}: it builds the model on stand-in rows of n users "
                "(give n, the number of users; no row is read)"
            )
    if time is not None and not isinstance(time, str):
        raise ParameterError(
            "plan takes time as the name of the time column (the stand-in rows hold it; no "
            f"row is read), got {type(time).__name__}"
        )
    if time is not None and "time" not in model_params:
        raise ParameterError(f"model {model_name} takes no time (its rows are not ordered)")
    model_options = {k: v for k, v in options.items() if k in model_params}
    fit_options = {k: v for k, v in options.items() if k not in model_params}
    for fixed in _NOT_PLANNED:
        if fixed in fit_options:
            raise ParameterError(f"plan takes no {fixed}: it draws no noise and spends nothing")
    needed = [
        name
        for name, param in model_params.items()
        if param.default is inspect.Parameter.empty
        and param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)
        and name not in ("formula", "data", "groups", "time", *model_options)
    ]
    if needed:
        raise ParameterError(
            f"model {model_name} needs {', '.join(f'{k}=...' for k in needed)} (of its "
            "from_formula): give it to plan"
        )
    target_sd = _target_sd(target_sd)
    if levels is not None:
        model_options["levels"] = levels

    item_level = "groups" not in model_params  # every row a unit: n counts rows
    # a column an option of the model may name (the mean's by=): in the stand-in rows too (a
    # text option that names none, such as kernel="gaussian", adds a column no model reads)
    named = tuple(
        value for key, value in model_options.items() if key != "levels" and isinstance(value, str)
    )

    rows_of = _StandIn(build, formula, rows, item_level, dict(model_options), named, time)
    built = rows_of.model(_users(n))
    fit_params = inspect.signature(built.fit).parameters.values()
    if not any(param.kind is param.VAR_KEYWORD for param in fit_params):  # else: the fit's own
        unknown = sorted(set(fit_options) - {param.name for param in fit_params})
        if unknown:
            refuse_arguments(
                "plan",
                f"got an option of neither {model_name}.from_formula nor .fit:",
                unknown,
                list(  # plan's own, then the fit's it passes on, each once
                    dict.fromkeys(
                        [k for k in inspect.signature(plan).parameters if k != "options"]
                        + [p.name for p in fit_params if p.name not in _NOT_PLANNED]
                    )
                ),
            )

    def attempt(fitted: Any, eps: float) -> object:
        return fitted.fit(epsilon=eps, **fit_options)

    decision = _decide(lambda: attempt(built, epsilon))
    if isinstance(decision, DplongError):
        decision = _without_stand_ins(decision)
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
        if isinstance(decision, DplongError):
            decision = _without_stand_ins(decision)

    # a release whose noise public facts do not fix: measured on a reference panel
    with _said_without_stand_ins():
        reference = ReferencePanel.of(built, n, rows, levels, model_options)

    @functools.cache
    def forecast_at(eps: float) -> pd.DataFrame | None:
        outcome = _decide(lambda: attempt(built, eps))
        if not isinstance(outcome, FitPlan):
            return None
        if reference is not None and not outcome.forecast:
            return reference.table(outcome, eps, fit_options)
        return _table(outcome, fit_options)

    table = forecast_at(epsilon)
    if table is None:
        table = pd.DataFrame(columns=list(_COLUMNS))
    if target_sd is not None and len(table):
        table["epsilon_for_target"] = [
            smallest_epsilon(_reaches(forecast_at, key, target_sd), epsilon) for key in table.index
        ]

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
        privacy="local" if fit_plan and fit_plan.options.local else "central",
        caveats=_caveats(
            model_name,
            model_options,
            fit_options,
            referenced=_several(formula, reference, fit_plan),
        ),
        _users=_SmallestUsers(rows_of, float(epsilon), dict(fit_options)),
    )


@dataclass(frozen=True)
class _StandIn:
    """How :func:`plan` builds the model on stand-in rows of a given number of users: the
    model's ``build`` (its ``from_formula``) and public facts only. A value, not a closure,
    so that :class:`PlanResults` pickles."""

    build: Callable[..., Any]
    formula: str
    rows: int
    item_level: bool
    model_options: Mapping[str, Any]
    named: tuple[str, ...]
    time: str | None

    def model(self, users: int) -> Any:
        """The model built on ``users`` users' stand-in rows."""
        frame = stand_in_rows(
            self.formula,
            users,
            1 if self.item_level else self.rows,
            self.model_options.get("levels"),
            self.model_options.get("domain"),
            named=self.named,
            time=self.time,
        )
        # the time column only where the analyst named one, as the fit's data (the pooled
        # family refuses one without TimeEffects; a model taking none refused it above)
        extra = {"time": self.time} if self.time is not None else {}
        if not self.item_level:
            extra["groups"] = STAND_IN_USER
        with _said_without_stand_ins():
            return self.build(self.formula, frame, **extra, **self.model_options)


@dataclass(frozen=True)
class _SmallestUsers:
    """:meth:`PlanResults.smallest_n`: the bisection on the fit's decision at ``epsilon``, a
    model built per candidate n (:func:`~dplong.planning.search._smallest_users`)."""

    stand_in: _StandIn
    epsilon: float
    fit_options: Mapping[str, Any]

    def __call__(self) -> int | None:
        def passes(users: int) -> bool:
            model = self.stand_in.model(users)
            return _released(_decide(lambda: model.fit(epsilon=self.epsilon, **self.fit_options)))

        return _smallest_users(passes)


def _several(formula: str, reference: ReferencePanel | None, fit_plan: FitPlan | None) -> bool:
    """Whether the plan's noise forecast came from a reference panel (``reference``; not where
    public facts fix the noise, ``fit_plan.forecast``: an ePTR release) and is of two
    regressors or more (the formula's right-hand terms but the intercept): their correlation
    then matters, and the panel's are uncorrelated."""
    if reference is None or fit_plan is None or fit_plan.forecast:
        return False
    terms = patsy.ModelDesc.from_formula(formula).rhs_termlist
    return sum(1 for term in terms if term.factors) >= 2


def _caveats(
    model_name: str,
    model_options: Mapping[str, Any],
    fit_options: Mapping[str, Any],
    *,
    referenced: bool = False,
) -> tuple[str, ...]:
    """What the stand-in rows assume that the analyst's data may well not, from the model and
    its options (public): every user at each ``by=`` level, every regressor changing within
    every user of a per-entry within fit, half the variance between users of a random-effects
    fit, and (``referenced``: a noise forecast from a reference panel) uncorrelated
    regressors."""
    caveats = []
    if referenced:
        caveats.append(
            "the reference panel's regressors are uncorrelated. Correlated ones (a regressor "
            "and its square, age and experience) are noisier than forecast and withheld at a "
            "larger epsilon, even where every reference fit released them: centre a power "
            "(I((x - c)**2)) and plan with a larger epsilon."
        )
    if model_options.get("by") is not None:
        caveats.append(
            "by=: each level is forecast as if all n users had a statistic there. Which users "
            "are at a level is private: a level holding a fraction f of them has about 1/f "
            "times the noise sd in sigma, and a level whose private count sees too few is "
            "withheld at the fit; plan again with n set to the fewest users you expect at a "
            "level."
        )
    if fit_options.get("estimator") == "within":
        caveats.append(
            'estimator="within": the stand-in regressors change within every user. A '
            "regressor most users never change (a 0/1 status such as union membership) "
            "leaves most users' cross products at one value, and the release withholds them "
            "at a far higher epsilon than planned: dplong.PanelOLS releases the within "
            "estimator from sufficient statistics that such regressors do not starve."
        )
    if model_name == "RandomEffects":
        caveats.append(
            "RandomEffects: the stand-in rows have half their variance between users. A "
            "quasi-demeaned row keeps 1 - theta of its between-user part, so where the person "
            "effects dominate (theta near 1: many rows a person, a large Group Var) the "
            "released X'X sees little of a between-person covariate or the intercept: the "
            "fit then gives the rows back part of their between-user part (a weighting less "
            "efficient than GLS's, noisier than planned) or withholds them more often than "
            "planned. PooledOLS's released X'X keeps their whole between-user part."
        )
    return tuple(caveats)


#: A list's item that names the stand-in rows' own id column (``'__user__', ``), and any other
#: mention of it: what a refusal says instead (the analyst did not name it).
_STAND_IN_ITEM = re.compile(rf"'{re.escape(STAND_IN_USER)}',\s*")


def _without_stand_ins(err: DplongError) -> DplongError:
    """``err`` as said of the analyst's columns: the stand-in rows' id column
    (:func:`~dplong.planning.stand_in.stand_in_rows`) left out of its lists of columns and
    named as what it stands for elsewhere; the same error if it does not name it."""
    message = str(err)
    said = _STAND_IN_ITEM.sub("", message)
    said = said.replace(repr(STAND_IN_USER), "the user ids").replace(STAND_IN_USER, "the user ids")
    if said == message:
        return err
    clean = type(err)(said)
    clean.budget_refusal, clean.advice = err.budget_refusal, err.advice
    return clean


@contextlib.contextmanager
def _said_without_stand_ins() -> Iterator[None]:
    """A refusal raised within, said without the stand-in rows' columns
    (:func:`_without_stand_ins`); what the model tells a data holder of the stand-in rows
    (:class:`~dplong.exceptions.DataHolderWarning`: they are no one's) is not said."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataHolderWarning)
            yield
    except DplongError as err:
        clean = _without_stand_ins(err)
        if clean is err:
            raise
        raise clean from None


def _target_sd(target_sd: Any) -> float | None:
    if target_sd is None:
        return None
    expected = "a positive finite number"
    value = real_number(target_sd, "target_sd", ParameterError, expected)
    if not (math.isfinite(value) and value > 0):
        raise ParameterError(f"target_sd must be {expected}, got {describe(target_sd)}")
    return value


def _users(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ParameterError(f"n (the number of users) must be an integer >= 2, got {n!r}")
    return int(n)


def _default_delta(n: int, fit_options: Mapping[str, Any]) -> float:
    delta = fit_options.get("delta")
    if delta is not None:
        return float(delta)
    return 0.0 if fit_options.get("privacy") == "local" else 1.0 / n**2
