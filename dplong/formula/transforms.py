"""The transform firewall: which of patsy's stateful transforms a formula may call, and the
versions of ``C`` and ``bs`` it calls instead of patsy's.

A stateful transform learns parameters from the rows (``center``, ``standardize``, a spline's
knots and bounds), so one user would move every user's value; it is allowed only when every
parameter it would learn is a public constant written in the formula.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import patsy
import patsy.builtins
from numpy.typing import NDArray
from patsy.mgcv_cubic_splines import CC, CR, TE
from patsy.splines import BS
from patsy.state import Center, Standardize

from dplong.exceptions import FormulaError
from dplong.formula.levels import _coded, _level_tuple
from dplong.formula.terms import _PATSY_NAMES, _calls, _columns_in

#: Arguments of patsy's splines that it would otherwise compute from the data.
_SPLINE_CONSTANTS = ("knots", "lower_bound", "upper_bound")
#: The highest degree of ``bs``: scipy's spline evaluation fails from degree 21 (an error,
#: then at 22 a crash of the interpreter, an audit); cubic (3) is patsy's default.
_LARGEST_DEGREE = 10
#: The most knots a spline may take: patsy's cyclic spline solves a dense system of them on
#: every evaluation (3,000 knots took 15.8 s, 4,500 46 s, an audit).
_MOST_KNOTS = 100
_PUBLIC_TRANSFORMS = (BS, CR, CC, TE)


def _check_transforms(code: str, tree: ast.AST, namespace: Any, dtypes: Mapping[str, Any]) -> None:
    """Refuse patsy's stateful transforms (found the way patsy finds them: a called object with
    ``__patsy_stateful_transform__``) unless every parameter they would learn is given."""
    for call, target in _calls(tree, namespace, dtypes):
        kind = getattr(target, "__patsy_stateful_transform__", None)
        if kind is None:
            continue
        name = ast.unparse(call.func)
        if kind in (Center, Standardize):
            raise FormulaError(
                f"{name}() in {code!r} uses the data's mean and standard deviation, so one user "
                "would move every user's value: use public constants instead, e.g. "
                "I(x - 40) or I((x - 40) / 10)"
            )
        if kind not in _PUBLIC_TRANSFORMS:
            raise FormulaError(
                f"{name}() in {code!r} is a stateful transform: it learns from the data, so one "
                "user would move every user's value; compute the column from public constants"
            )
        if not isinstance(call.func, ast.Name):
            raise FormulaError(
                f"write {name.rpartition('.')[2]}(...) rather than {name}(...) in {code!r}, so "
                "that its public parameters are checked and used"
            )
        given = _bound_arguments(call, kind, code)
        public = {  # te(...) takes its keywords as **kwargs; x and *args are the data
            key: node
            for key, node in (given.pop("kwargs", {}) | given).items()
            if key not in ("self", "x", "args")
        }
        for key, node in public.items():
            if _columns_in(node, dtypes):
                raise FormulaError(
                    f"{key}= of {name}() in {code!r} reads the data; it must be a public constant"
                )
        values = {key: _constant(node, namespace, code) for key, node in public.items()}
        learned = [k for k in _SPLINE_CONSTANTS if kind is not TE and values.get(k) is None]
        if learned:
            raise FormulaError(
                f"{name}() in {code!r} computes {', '.join(learned)} from the data (its quantiles, "
                "minimum and maximum), so one user would move every user's basis: give all of "
                f"{', '.join(_SPLINE_CONSTANTS)} as public constants, e.g. "
                f"{name}(x, knots=(30, 50), lower_bound=18, upper_bound=90)"
            )
        knots = values.get("knots")
        if knots is not None and np.size(knots) > _MOST_KNOTS:
            raise FormulaError(
                f"knots= of {name}() in {code!r} holds {np.size(knots):,} knots: a spline takes "
                f"at most {_MOST_KNOTS}"
            )
        degree = values.get("degree", 3)
        if kind is BS and not (type(degree) is int and 0 <= degree <= _LARGEST_DEGREE):
            raise FormulaError(  # scipy's splev crashed the interpreter from degree 22
                f"degree= of {name}() in {code!r} must be a whole number from 0 to "
                f"{_LARGEST_DEGREE}, got {degree!r}"
            )
        if isinstance(values.get("constraints"), str):
            raise FormulaError(
                f"constraints={values['constraints']!r} of {name}() in {code!r} centres the "
                "basis on the data; give a constraint matrix of public constants, or none"
            )


def _bound_arguments(call: ast.Call, kind: Any, code: str) -> dict[str, Any]:
    """The call's argument expressions by parameter name of ``kind.memorize_chunk``."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        raise FormulaError(f"write the arguments of the transform in {code!r} out, without * or **")
    try:
        bound = inspect.signature(kind.memorize_chunk).bind(
            None, *call.args, **{str(k.arg): k.value for k in call.keywords}
        )
    except TypeError as err:
        raise FormulaError(f"cannot read the arguments in {code!r}: {err}") from None
    return dict(bound.arguments)


def _constant(node: Any, namespace: Any, code: str) -> Any:
    """The value of a public-constant argument (evaluated in the formula's environment)."""
    try:
        return eval(compile(ast.Expression(node), "<formula>", "eval"), {}, namespace)
    except Exception as err:  # the analyst's expression: any error is theirs to see
        raise FormulaError(f"cannot evaluate {ast.unparse(node)!r} in {code!r}: {err}") from None


def _declared_c(data: Any, contrast: Any = None, levels: Any = None) -> Any:
    """patsy's ``C`` where a value outside ``levels`` becomes missing (patsy raises), with
    pandas' vectorised codes when no contrast is given (patsy loops over the rows)."""
    if levels is not None:
        data = _coded(data, _level_tuple(levels, "C(..., levels=...)", object))
    if contrast is None and isinstance(getattr(data, "dtype", None), pd.CategoricalDtype):
        return data
    return patsy.builtins.C(data, contrast)


class _PublicBS(BS):  # type: ignore[misc]  # patsy is untyped
    """patsy's B-spline basis, with values outside the public bounds missing (patsy raises
    when any value of the chunk is outside, which would make the refusal depend on one row)."""

    def transform(self, x: Any, *args: Any, **kwargs: Any) -> NDArray[np.float64]:
        values = np.asarray(x, dtype=np.float64).reshape(-1)
        low, high = float(self._all_knots[0]), float(self._all_knots[-1])
        inside = (values >= low) & (values <= high)
        width = np.shape(super().transform(np.array([low]), *args, **kwargs))[1]
        basis = np.full((values.size, width), np.nan)
        if inside.any():  # patsy cannot evaluate zero rows
            basis[inside] = super().transform(values[inside], *args, **kwargs)
        return basis


_REPLACEMENTS = {
    id(_PATSY_NAMES["C"]): _declared_c,
    id(_PATSY_NAMES["bs"]): patsy.stateful_transform(_PublicBS),
}


def _with_public_transforms(
    env: patsy.EvalEnvironment, trees: Any, namespace: Any, dtypes: Mapping[str, Any]
) -> patsy.EvalEnvironment:
    """``env`` where the names that call patsy's ``C`` and ``bs`` call the versions above."""
    replaced = {
        call.func.id: _REPLACEMENTS[id(target)]
        for tree in trees
        for call, target in _calls(tree, namespace, dtypes)
        if isinstance(call.func, ast.Name) and id(target) in _REPLACEMENTS
    }
    return patsy.EvalEnvironment([replaced, env.namespace], env.flags) if replaced else env
