"""What each term of a formula is, found on the synthetic rows: the outcome must be a number,
a regressor a number or a factor with declared levels, never a date."""

from __future__ import annotations

import ast
import datetime
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import patsy
from patsy.categorical import _CategoricalBox, guess_categorical

from dplong.exceptions import DataError, FormulaError
from dplong.formula.levels import _public_levels
from dplong.formula.terms import _columns_in, _quoted

_TIME_TYPES = (
    datetime.date,
    datetime.time,
    datetime.timedelta,
    pd.Period,
    np.datetime64,
    np.timedelta64,
)


def _factor_value(factor: Any, env: patsy.EvalEnvironment, row: Mapping[str, pd.Series]) -> Any:
    """The value of one formula term on one synthetic row (patsy's factor protocol)."""
    state: dict[str, Any] = {}
    try:
        with np.errstate(all="ignore"):
            for which in range(factor.memorize_passes_needed(state, env)):
                factor.memorize_chunk(state, which, row)
                factor.memorize_finish(state, which)
            return factor.eval(state, row)
    except Exception as err:  # the formula's own code, run on public stand-ins only
        raise FormulaError(f"cannot evaluate {factor.code!r}: {err}") from None


def _is_time(value: Any) -> bool:
    """Whether a term's value is a date, time, duration or period (its dtype, or for an
    ``object`` array its first value: one of the public stand-ins)."""
    if isinstance(value, _CategoricalBox):
        value = value.data
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, pd.DatetimeTZDtype | pd.PeriodDtype) or getattr(dtype, "kind", "") in (
        "m",
        "M",
    ):
        return True
    first = np.asarray(value).ravel()[:1]
    return bool(first.size) and isinstance(first[0], _TIME_TYPES)


def _kind(value: Any) -> str:
    dtype = getattr(value.data if isinstance(value, _CategoricalBox) else value, "dtype", None)
    return "a date or time" if _is_time(value) else f"text or a factor (dtype {dtype})"


def _check_real(factor: Any, value: Any) -> None:
    """Refuse a term of complex numbers (its dtype, a public fact), as ``winsorized_mean``
    refuses a complex column: patsy would fail on it with numpy's casting error."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and pd.api.types.is_complex_dtype(dtype):
        raise DataError(
            f"{factor.code!r} has dtype {dtype}, not a real number; convert it explicitly "
            f"(e.g. np.real({factor.code}) or np.abs({factor.code}))"
        )


def _factor_of(tree: ast.AST) -> ast.AST:
    """The expression a term makes a factor of: the argument of ``I(...)`` or ``C(...)``, else
    the term itself."""
    node = tree.body if isinstance(tree, ast.Expression) else tree
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("I", "C")
        and node.args
    ):
        return node.args[0]
    return node


def _check_outcome(factor: Any, env: patsy.EvalEnvironment, row: Mapping[str, pd.Series]) -> None:
    value = _factor_value(factor, env, row)
    _check_real(factor, value)
    if _is_time(value) or guess_categorical(value):
        raise FormulaError(
            f"the outcome {factor.code!r} must be one numeric column; it is {_kind(value)}"
        )


def _check_regressor(
    factor: Any,
    tree: ast.AST,
    env: patsy.EvalEnvironment,
    rows: tuple[dict[str, pd.Series], ...],
    dtypes: Mapping[str, Any],
) -> int:
    """Refuse a complex or date regressor, and a factor whose levels would come from the
    values; the columns the term can make of it (its declared levels, a spline's columns),
    from public facts (the synthetic rows)."""
    values = [_factor_value(factor, env, row) for row in rows]
    _check_real(factor, values[0])
    columns = _columns_in(tree, dtypes)
    column = columns[0] if columns else "x"
    if _is_time(values[0]):
        raise FormulaError(
            f"{factor.code!r} is a date or time: a regressor must be a number. Convert it "
            f"explicitly, e.g. days: I(({column} - pd.Timestamp('2000-01-01')).dt."
            "total_seconds() / 86400), or add a numeric column"
        )
    if not guess_categorical(values[0]):
        return int(np.prod(np.shape(values[0])[1:]))
    found = [_public_levels(v) for v in values]
    if found[0] is not None and found[0] == found[1]:
        return len(found[0])
    inner = _factor_of(tree)
    if not (columns and (isinstance(inner, ast.Name) or _quoted(inner) is not None)):
        # a factor the term computes (np.where(x > 0, 'a', 'b')): its levels are the term's,
        # declared where it is written, not any column's
        raise FormulaError(
            f"{factor.code!r} gives text or a factor, whose levels are not declared; the levels "
            "present in the data are private, so they must be declared (the first is the "
            f"reference): write C({ast.unparse(inner)}, levels=[...]) in the formula"
        )
    what = f"{columns[0]!r} (dtype {dtypes[columns[0]]})"
    raise FormulaError(
        f"{what} is used as a factor in {factor.code!r} but its levels are not declared; the "
        "levels present in the data are private, so they must be declared (the first is the "
        f"reference): pass levels={{{column!r}: [...]}}, or give the column a Categorical dtype "
        f"with data[{column!r}] = data[{column!r}].astype(pd.CategoricalDtype([...])), or write "
        f"C({column}, levels=[...]) in the formula"
    )
