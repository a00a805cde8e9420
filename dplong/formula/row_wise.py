"""Every term computed from its own row alone: one user must not move another user's values.

A term that reads other rows (a mean, a rank, a lag, a fill from the neighbours) is refused by
its syntax (:func:`_check_row_wise`); what the syntax does not show, the spec's evaluation on
synthetic probe rows does (:func:`_check_row_by_row`), and its verdict, a function of public
facts, is remembered (:func:`_check_row_by_row_cached`).
"""

from __future__ import annotations

import ast
import inspect
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.exceptions import FormulaError
from dplong.formula.synthetic import _probe_rows
from dplong.formula.terms import _PATSY_NAMES, _columns_in

if TYPE_CHECKING:
    from dplong.formula.spec import DesignSpec

_TOLERANCE = 1e-9  # relative: one row's value computed alone or among others
#: Methods of a column that read other rows than their own (``x.mean()``, ``x.ffill()``): a term
#: calling one on the data is refused by its syntax, whatever the rows hold.
_ACROSS_ROWS_METHODS = frozenset(
    """agg aggregate all any argmax argmin argsort asof autocorr backfill bfill count cov corr
    cummax cummin cumprod cumsum describe diff dot drop_duplicates dropna duplicated ewm
    expanding explode factorize ffill first_valid_index groupby head idxmax idxmin interpolate
    item kurt kurtosis last_valid_index max mean median min mode nlargest nonzero nsmallest
    nunique pad pct_change pipe prod product ptp quantile rank reindex repeat resample
    reset_index rolling sample searchsorted sem shift skew sort sort_index sort_values std sum
    tail take to_list tolist transform truncate unique value_counts var""".split()
)
#: Functions (numpy's, pandas', builtins) that read every row of a column passed to them.
_ACROSS_ROWS_FUNCTIONS = frozenset(
    """all amax amin any argmax argmin argpartition argsort average bincount convolve correlate
    corrcoef count_nonzero cov cumprod cumsum diff ediff1d factorize gradient histogram len
    lexsort max mean median min nanargmax nanargmin nancumprod nancumsum nanmax nanmean
    nanmedian nanmin nanpercentile nanprod nanquantile nanstd nansum nanvar partition
    percentile prod ptp qcut quantile rankdata roll searchsorted shape size sort sorted std sum
    trapezoid trapz unique value_counts var zscore""".split()
)
#: Attributes of a column that describe other rows (its length, its index, its positions).
_ACROSS_ROWS_ATTRIBUTES = frozenset(
    """at empty hasnans iat iloc index is_monotonic_decreasing is_monotonic_increasing
    is_unique loc nbytes shape size""".split()
)
#: Options of ``fillna`` (and ``replace``) that fill from neighbouring rows.
_FILL_FROM_ROWS = ("method", "limit")
_ROW_WISE = (
    "Compute each row from that row and public constants: I(x - 40) rather than "
    "I(x - x.mean()); for missing values, impute a public constant and add an indicator, "
    "I(x.fillna(0)) + I(x.isna()), or leave them missing (the row is dropped)"
)


def _check_row_wise(code: str, tree: ast.AST, dtypes: Mapping[str, Any]) -> None:
    """Refuse, by their syntax, terms that read other rows of the data: a column's aggregating
    or shifting method (``x.mean()``, ``x.ffill()``, ``x.fillna(method=...)``), a function of
    every row (``np.nanmean(x)``, ``len(x)``) or an attribute describing the rows
    (``x.size``). What the syntax does not show, :func:`_check_row_by_row` finds on synthetic
    rows."""
    for node in ast.walk(tree):
        found = None
        if isinstance(node, ast.Attribute) and _columns_in(node.value, dtypes):
            if node.attr in _ACROSS_ROWS_ATTRIBUTES:
                found = f".{node.attr}"
        elif isinstance(node, ast.Call):
            func = node.func
            on_data = isinstance(func, ast.Attribute) and bool(_columns_in(func.value, dtypes))
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if on_data and name in _ACROSS_ROWS_METHODS:
                found = f".{name}()"
            elif on_data and any(k.arg in _FILL_FROM_ROWS for k in node.keywords):
                option = next(k.arg for k in node.keywords if k.arg in _FILL_FROM_ROWS)
                found = f".{name}({option}=...)"
            elif (
                not on_data
                and name in _ACROSS_ROWS_FUNCTIONS
                and any(_columns_in(a, dtypes) for a in arguments)
            ):
                found = f"{ast.unparse(func)}()"
        if found is not None:
            raise FormulaError(
                f"{code!r} would depend on other rows than its own: {found} reads every row of "
                f"the data, so one user would move every user's value. {_ROW_WISE}"
            )


#: The row-by-row check's verdicts ("" passed, else the refusal) by :func:`_verdict_key`:
#: the check runs on synthetic rows, so its verdict is a function of public facts, and it is
#: over half of building a spec. At most this many are kept.
_ROW_BY_ROW: dict[tuple[Any, ...], str] = {}
_VERDICTS_KEPT = 256
_FIXED_MODULES = frozenset({"math", "numpy", "pandas"})
_FIXED_NAMES = frozenset(id(v) for k, v in _PATSY_NAMES.items() if k != "Q")


def _verdict_key(
    formula: str,
    trees: Any,
    namespace: Any,
    dtypes: Mapping[str, Any],
    declared: Mapping[str, tuple[Any, ...]],
) -> tuple[Any, ...] | None:
    """What the row-by-row check's verdict depends on: the formula, the inputs' dtypes, the
    declared levels and the objects the formula's other names are bound to; None (check
    afresh) when a name is bound to anything but patsy's builtins, numpy, pandas, math or a
    number (a caller's own function could change between fits, ``Q`` reads by name)."""
    bound = []
    names = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)}
    for name in sorted(names - set(dtypes)):
        value = namespace.get(name)
        fixed = (
            id(value) in _FIXED_NAMES
            or (inspect.ismodule(value) and value.__name__ in _FIXED_MODULES)
            or type(value) in (int, float, bool, str)
        )
        if not fixed:
            return None
        bound.append((name, type(value), value))
    # each level with its type: (1, 2), (1.0, 2.0) and (True, 2) are equal tuples whose probe
    # rows differ
    levels = tuple((c, tuple((type(v), v) for v in vs)) for c, vs in declared.items())
    key = (formula, tuple(dtypes.items()), levels, tuple(bound))
    try:
        hash(key)
    except TypeError:  # a dtype or declared level that cannot be a key
        return None
    return key


def _check_row_by_row_cached(
    spec: DesignSpec,
    key: tuple[Any, ...] | None,
    dtypes: Mapping[str, Any],
    declared: Mapping[str, tuple[Any, ...]],
) -> None:
    """:func:`_check_row_by_row` of ``spec``, or its verdict kept under ``key``, the public
    facts it depends on (:func:`_verdict_key`; None: check afresh, keep nothing)."""
    refusal = _ROW_BY_ROW.get(key) if key is not None else None
    if refusal is None:
        try:
            _check_row_by_row(spec, dtypes, declared)
            refusal = ""
        except FormulaError as err:
            refusal = str(err)
        if key is not None:
            if len(_ROW_BY_ROW) >= _VERDICTS_KEPT:
                _ROW_BY_ROW.clear()
            _ROW_BY_ROW[key] = refusal
    if refusal:
        raise FormulaError(refusal) from None


def _check_row_by_row(
    spec: DesignSpec, dtypes: Mapping[str, Any], declared: Mapping[str, tuple[Any, ...]]
) -> None:
    """Refuse terms whose value in one row depends on other rows (``x - x.mean()``, a
    rank, a lag, an imputation from other rows): on synthetic rows holding missing,
    negative and huge values (:func:`_probe_rows`), the rows in reverse order, and the
    rows at even and at odd positions alone, must give those rows' values of the whole."""
    rows = _probe_rows(dtypes, declared)
    size = len(next(iter(rows.values())))
    orders = [np.arange(size)[::-1], np.arange(0, size, 2), np.arange(1, size, 2)]
    try:
        whole = _compared(spec, rows)
        parts = [_compared(spec, _take(rows, order)) for order in orders]
    except (FormulaError, ValueError) as err:
        raise FormulaError(
            f"{spec.formula!r} cannot be evaluated on rows with missing or extreme values "
            f"({_first_line(err)}); functions of your own should return NaN for values "
            "they cannot handle, since an error raised on some rows depends on the rows"
        ) from None
    same = np.ones(whole[0].shape[1], dtype=bool)
    moved = False
    for order, (values, missing) in zip(orders, parts, strict=True):
        same &= _agree(values, missing, whole[0][order], whole[1][order])
        moved |= bool((missing != whole[1][order]).any())
    names = [*spec.outcome_info.column_names, *spec.regressor_info.column_names]
    differ = [str(c) for c, ok in zip(names, same, strict=True) if not ok]
    if moved and not differ:  # only which rows are missing moved
        differ = names
    if differ:
        raise FormulaError(
            f"{differ} of {spec.formula!r} depend on other rows than their own (a "
            "mean, sum, rank, lag or fill over the data, or random numbers), so one user "
            f"would move every user's values. {_ROW_WISE}"
        )


def _compared(
    spec: DesignSpec, data: Mapping[str, Any]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Outcome and regressors side by side, and per column whether its row misses a
    value (an outcome's or a regressor's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. numpy's "mean of empty slice" on a probe
        y, X, missing_y, missing_x = spec._build(data)
    missing = np.repeat(np.column_stack([missing_y, missing_x]), [1, X.shape[1]], axis=1)
    return np.hstack([y, X]), missing


def _take(rows: Mapping[str, pd.Series], positions: Any) -> dict[str, Any]:
    """Some probe rows, in the given order, indexed 0, 1, ... like a frame of their own."""
    return {c: s.iloc[positions].reset_index(drop=True) for c, s in rows.items()}


def _agree(
    left: NDArray[np.float64],
    left_missing: NDArray[np.bool_],
    right: NDArray[np.float64],
    right_missing: NDArray[np.bool_],
) -> NDArray[np.bool_]:
    """Per column, whether two evaluations of the same rows agree (NaN agreeing with NaN),
    where at least one of them keeps the row: a row both drop may hold anything."""
    close = np.isclose(left, right, rtol=_TOLERANCE, equal_nan=True)
    return np.asarray((close | (left_missing & right_missing)).all(axis=0), dtype=bool)


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__
