"""The model a plan is made with: its ``from_formula``, built on stand-in rows of public facts.

The rows hold made-up numbers in the formula's columns and the declared levels: nothing the
decision reads (``docs/design`` §1), so the model built on them decides as on the real data.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import patsy

from dplong.exceptions import ParameterError
from dplong.formula.terms import term_trees, with_levels_in_place

#: Seed of the stand-in rows :func:`plan` builds a model on (they are never read to decide).
STAND_IN_SEED = 20240613
#: The stand-in rows' column of user ids (a name no analyst's column has).
STAND_IN_USER = "__user__"
#: The most stand-in rows (n users times their rows) :func:`stand_in_rows` makes.
MAX_STAND_IN_ROWS = 4 * 10**7


def _builder(model: str | type) -> tuple[Callable[..., Any], str]:
    """The ``from_formula`` of ``model`` (a command-line name, a class or its name) and its
    name.

    Examples
    --------
    >>> from dplong.planning.stand_in import _builder
    >>> _builder("pooled")[1], _builder("PooledOLS")[1], _builder("randomeffects")[1]
    ('PooledOLS', 'PooledOLS', 'RandomEffects')
    """
    from dplong.models.command_line import MODELS

    if isinstance(model, str):
        # the classes' own names too (what the Python API calls them), in any case
        named = {
            getattr(getattr(entry.build, "__self__", None), "__name__", key).lower(): key
            for key, entry in MODELS.items()
        }
        key = model if model in MODELS else named.get(model.lower())
        if key is None:
            raise ParameterError(
                f"model must be one of {sorted(MODELS)}, a model class or its name "
                f"({', '.join(sorted(set(named) - set(MODELS)))} in any case), got {model!r}"
            )
        build = MODELS[key].build
        owner = getattr(build, "__self__", None)
        return build, getattr(owner, "__name__", key)
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
    known = set(dir(builtins)) | set(patsy.builtins.__all__) | {"np", "pd", "C", "I", "Q"}
    found: list[str] = []
    for tree in term_trees(formula):
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
    *,
    named: Sequence[str] = (),
    time: str | None = None,
) -> pd.DataFrame:
    """Made-up rows for n users: what a model is built on to plan a fit (never read to decide).

    Every column the formula names holds positive numbers (within ``domain`` when one is
    given), and so does every column ``named`` by an option of the model (the mean's ``by``),
    a declared factor (in ``levels`` or in the formula) its levels in turn; ``__user__``
    (:data:`STAND_IN_USER`) numbers the users, and a ``time`` column the analyst names numbers
    each user's rows 1, 2, ... (its declared periods in turn, where ``levels`` holds them); at
    most :data:`MAX_STAND_IN_ROWS` rows. Declared levels of a column neither reads are left out
    (the model refuses them, naming the columns the formula reads).

    Examples
    --------
    >>> from dplong.planning import stand_in_rows
    >>> frame = stand_in_rows("y ~ x + C(site)", 3, 2, {"site": ["a", "b"]})
    >>> frame.shape, sorted(frame.columns)
    ((6, 4), ['__user__', 'site', 'x', 'y'])
    >>> stand_in_rows("y ~ 1", 2, 2, {"arm": [0, 1]}, named=("arm",))["arm"].tolist()
    [0, 1, 0, 1]
    >>> stand_in_rows("y ~ 1", 2, 3, None, time="wave")["wave"].tolist()
    [1, 2, 3, 1, 2, 3]
    """
    if isinstance(rows, bool) or not isinstance(rows, int | np.integer) or rows < 1:
        raise ParameterError(f"rows (rows per user) must be a positive integer, got {rows!r}")
    if n * rows > MAX_STAND_IN_ROWS:
        raise ParameterError(
            f"n={n} users of rows={rows} rows would be {n * rows:,} stand-in rows, more than "
            f"the {MAX_STAND_IN_ROWS:,} a plan builds: lower rows (the decision does not "
            "depend on it) or plan for fewer users"
        )
    rng = np.random.default_rng(STAND_IN_SEED)
    size = n * rows
    low, high = (1.0, 2.0) if domain is None else (float(domain[0]), float(domain[1]))
    frame: dict[str, Any] = {STAND_IN_USER: np.repeat(np.arange(n), rows)}
    declared = with_levels_in_place(formula, levels)
    timed = () if time is None else (time,)
    # declared levels of a column neither reads are left to the model to refuse
    for column in dict.fromkeys([*formula_columns(formula), *named, *timed]):
        if column in declared:
            values = list(declared[column])
            frame[column] = [values[k % len(values)] for k in range(size)]
        elif column == time:
            # each user's rows in order, from 1 (positive as the other columns: a term may log it)
            frame[column] = np.tile(np.arange(1, rows + 1), n)
        else:
            frame[column] = rng.uniform(low, high, size)
    stand_in: pd.DataFrame = pd.DataFrame(frame)
    return stand_in
