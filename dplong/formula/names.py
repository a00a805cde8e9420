"""What a formula's terms may say: the data's columns, public constants and functions that
compute a row from that row alone, and nothing else.

A term is Python code evaluated in the caller's namespace (patsy's design), and the command
line, a service or a colleague's script evaluates formulas it did not write. A deny-list of
dangerous names cannot keep up with what an attribute chain reaches
(``np.testing._private.utils.os.system``), and a term that indexes the rows by position
(``y.to_numpy()[1000]``) gives every user one user's value where the row-wise probes
(:mod:`dplong.formula.row_wise`), a handful of synthetic rows, cannot see it. So
:func:`_check_names` accepts a term only if every part of it is on an allow-list, read from
its syntax and what its names resolve to (public facts: the formula and the namespace, never
the rows), before anything is evaluated:

* names: the data's columns (bare or ``Q("name")``); numbers, strings, and arrays, lists and
  tuples of them, which the namespace holds (taken as public constants); the modules of
  :data:`_MODULES`; patsy's builtins (``I``, ``C``, ``Q``, contrasts and splines, whose
  parameters :mod:`dplong.formula.transforms` checks); the caller's own functions;
* calls of numpy's and scipy's ufuncs (``np.log1p``, ``scipy.special.expit``), the
  element-wise functions of :data:`_FUNCTIONS`, :mod:`math`'s functions of constants,
  ``abs``, ``round`` and ``pow``, a column's element-wise methods (:data:`_METHODS`,
  ``x.fillna(0)``) and its accessors' per-row ones (:data:`_ACCESSORS`,
  ``(day - pd.Timestamp("2020-01-01")).dt.total_seconds()``);
* operators, comparisons, and lists, tuples and dicts of the above.

Never a subscript or slice (a position reads another row; the text accessor's constant
positions, ``x.str[1]``, are within each row's text), a lambda, comprehension, ``and``/
``or``/``if``, ``in``, ``@``, ``%`` (on text it prints a whole column), ``*`` or ``**``
arguments, a name or attribute starting with ``_``, a module beyond :data:`_MODULES` (nor one
reached through them: ``np.ma.core.builtins``, nor a private one by a public alias:
``np.lib.mixins.um``), a function as a value, a function of Python's standard library or
of an installed package, or a pandas or Dask object of the session. A call takes only the
arguments that keep it element-wise (a ufunc its inputs: ``out=`` and ``where=`` write or
leave memory; :data:`_FUNCTIONS` and :data:`_METHODS` list the others'); those that
:data:`_PUBLIC_ARGUMENTS` name must be public constants (``x.isin(y)`` would read every row of
``y``). Where pandas would pick a type from every row the term is refused too: ``astype``
casts to floats and flags only (:data:`_DTYPES`), ``fillna`` fills columns of numbers with a
real constant, the ``.str`` and ``.dt`` accessors read columns of text and of dates only
(:func:`_check_reads`: by their dtypes, public), and an integer written in a term stays below
:data:`_LARGEST_INTEGER`. Nor may a term make the work grow without bound with one user's
text or its own constants: text patterns are literal (:func:`_check_text_call`), texts short
(:data:`_LONGEST_TEXT`), ranges bounded (:data:`_LONGEST_RANGE`), and :data:`_SLOW_MATH` is
not allowed. A caller's own function is theirs to vouch for (the row-wise probes still run
it); every other function a term may call is listed here.
"""

from __future__ import annotations

import ast
import builtins
import functools
import itertools
import math
import re
import sys
import sysconfig
import types
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dplong.exceptions import FormulaError
from dplong.formula.terms import _PATSY_NAMES, _columns_in, _quoted

#: The packages a term may call functions of, by module (``np.log``, ``math.sqrt``,
#: ``scipy.special.expit``, ``pd.isna``); only the functions listed below or ufuncs.
_MODULES = ("numpy", "math", "scipy", "pandas", "patsy")
#: Functions of numpy and pandas besides the ufuncs, element-wise given public constants, with
#: the positional arguments and the keywords a term may give them: no more (``np.clip``'s fourth
#: is ``out``, ``pd.to_numeric``'s ``downcast`` reads every row). A ufunc takes its inputs
#: alone (``out`` and ``where`` write into, or leave, memory of the session).
_FUNCTIONS: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {
    "numpy": {
        "around": (2, ()),
        "datetime64": (2, ()),
        "digitize": (3, ("right",)),
        "interp": (3, ("left", "right")),
        "isin": (2, ("invert",)),
        "nan_to_num": (1, ("nan", "posinf", "neginf")),
        "round": (2, ()),
        "select": (3, ("default",)),
        "timedelta64": (2, ()),
        "where": (3, ()),
    },
    "pandas": {
        # a date's and a duration's constructors: their arguments are constants (below)
        "Timedelta": (2, ("days", "hours", "minutes", "seconds", "weeks", "unit")),
        "Timestamp": (7, ("year", "month", "day", "hour", "minute", "second", "tz", "unit")),
        "isna": (1, ()),
        "isnull": (1, ()),
        "notna": (1, ()),
        "notnull": (1, ()),
    },
}
#: A column's methods (and those of an expression of columns) a term may call, element-wise,
#: with their positional arguments and keywords (no ``inplace``, ``regex``, ``errors``).
_METHODS: dict[str, tuple[int, tuple[str, ...]]] = {
    "abs": (0, ()),
    "astype": (1, ()),
    "between": (3, ("inclusive",)),
    "fillna": (1, ("value",)),
    "isin": (1, ()),
    "isna": (0, ()),
    "isnull": (0, ()),
    "notna": (0, ()),
    "notnull": (0, ()),
    "round": (1, ()),
}
#: Methods whose values fill the rows: one value, never a table of them (``fillna`` with a
#: dict fills by the rows' labels, a position). Not ``where``, ``mask``, ``replace`` nor
#: ``clip``: on a column of flags they give objects only where some row is changed, and
#: Python's ``True + True`` is 2 where numpy's is ``True`` (``np.where`` types by dtype alone).
_ONE_VALUE = frozenset({"fillna"})
#: The dtypes ``astype`` may cast to, by name: floats and flags, whose values are each row's
#: own. Never ``"category"`` (its categories would come from the data), text (pandas writes
#: every date with a time once one row has one) nor integers (a column of them turns to floats,
#: or overflows, as other rows decide).
_DTYPES = frozenset("bool boolean float float32 float64 Float64".split())
#: Integers a term may write (folded from constants): beyond 2**53 a column of integers and
#: one of floats (pandas picks which from whether any row is missing) part ways.
_LARGEST_INTEGER = 2**53
#: The longest text a term may write, and the widest ``.str.zfill``: a row's text grows by
#: what a term writes into it (``.str.replace('a', 'x' * 10**5)`` took a gigabyte on a
#: row of 3,000 characters, an audit).
_LONGEST_TEXT = 1000
#: The most values ``range`` of constants may give (declared levels, a spline's knots): Python
#: builds them when the term is evaluated (``tuple(range(10**9))`` never finished).
_LONGEST_RANGE = 10_000
#: scipy.special's functions a term may call: common transforms, each quick whatever its
#: arguments. Not the rest: ``pro_cv`` and the Mathieu functions crashed the interpreter on a
#: value one user's rows may hold, and ``hyperu``, ``yn``, ``lpmv`` or the ``eval_*``
#: polynomials took minutes on one (their time grows with an argument, an audit).
_SCIPY_UFUNCS = frozenset(
    "boxcox boxcox1p cbrt digamma entr erf erfc erfcinv erfinv exp10 exp2 expit expm1 gamma "
    "gammaln huber inv_boxcox inv_boxcox1p log1p log_expit log_ndtr logit ndtr ndtri psi "
    "pseudo_huber rel_entr xlog1py xlogy".split()
)
#: numpy's powers and shifts: on a column of Python's objects, Python's own, whose time grows
#: with the exponent (refused there).
_POWERS = (np.power, np.float_power, np.left_shift, np.ldexp)
#: :mod:`math`'s functions whose time grows with their integer arguments
#: (``math.factorial(10**8)`` never finished): not allowed.
_SLOW_MATH = frozenset({"comb", "factorial", "perm", "prod"})
#: A column's accessors and what a term may read through them: each row's text or time alone
#: (``code.str.slice(2)``, ``(day - pd.Timestamp("2020-01-01")).dt.total_seconds()``); the
#: one subscript a term may write is the text accessor's, a constant position in each text.
_ACCESSORS = {
    # text to text: the tests (isdigit, startswith) give flags, or objects where any row is
    # missing, and the integer parts (year, days) floats where any is: compare (== "a"), or
    # take total_seconds(), a float whatever the rows. Not split: its parts are typed from
    # every row (a part no row has is a column of floats, where a further .str fails)
    "str": frozenset("get lower lstrip replace rstrip slice strip upper zfill".split()),
    "dt": frozenset({"total_seconds"}),
}
#: The positional arguments each ``.str`` method may take (``replace``: the pattern, the
#: replacement and ``n``; a fourth on would be ``case``, ``flags`` and ``regex``).
_TEXT_ARGUMENTS = {
    "get": 1,
    "lower": 0,
    "lstrip": 1,
    "replace": 3,
    "rstrip": 1,
    "slice": 3,
    "strip": 1,
    "upper": 0,
    "zfill": 1,
}
#: Calls whose arguments from the given position on (a method's: all) must be public
#: constants: a membership, a replacement table, bins, a curve's knots, a factor's levels read
#: every row they are given; a date's or a duration's constructor, a list of levels.
_PUBLIC_ARGUMENTS = {
    "C": 1,
    "datetime64": 0,
    "digitize": 1,
    "interp": 1,
    "isin": 1,
    "list": 0,
    "nan_to_num": 1,
    "range": 0,
    "Timedelta": 0,
    "Timestamp": 0,
    "timedelta64": 0,
    "tuple": 0,
}
#: Builtins a term may call (``list``, ``range`` and ``tuple`` of constants: declared levels),
#: and those it may pass as a value (a dtype: ``x.astype(float)``).
_BUILTIN_CALLS = ("abs", "list", "pow", "range", "round", "tuple")
_BUILTIN_TYPES = (bool, float)
#: Packages whose functions are not the caller's own (those of the standard library neither,
#: nor any installed package's: joblib.dump writes a column to disk).
_LIBRARIES = frozenset(_MODULES) | {"dask", "dplong", "statsmodels"}
_INSTALLED = tuple(
    {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)
#: Syntax a term may use; everything else is refused (a subscript reads by position).
_NODES = (
    ast.Expression,
    ast.Call,
    ast.keyword,
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
)
_TERMS = (
    "a term reads the data through its columns, public constants and element-wise functions "
    "(numpy's and scipy's ufuncs, np.where, np.minimum, a column's .isin(), .fillna(), ...; "
    "docs: formulas)"
)
_MISSING = object()


def _check_names(code: str, tree: ast.AST, namespace: Any, dtypes: Mapping[str, Any]) -> None:
    """Refuse a term any part of which is not on the allow-list (module docstring).

    Examples
    --------
    >>> import ast, numpy as np, pandas as pd
    >>> from dplong.formula.names import _check_names
    >>> W = pd.DataFrame({"x": [1.0, 2.0]})
    >>> ok = "np.log1p(np.maximum(x, 0)) - 40"
    >>> _check_names(ok, ast.parse(ok, mode="eval"), {"np": np}, {"x": float})
    >>> _check_names("x - W.x.mean()", ast.parse("x - W.x.mean()", mode="eval"),
    ...     {"W": W}, {"x": float})
    Traceback (most recent call last):
    ...
    dplong.exceptions.FormulaError: 'W' in 'x - W.x.mean()' is a DataFrame of your session, ...
    """
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    indexed = _text_positions(code, tree, namespace, dtypes)
    defaults = {  # a keyword's None is its default (bs(x, knots=None)), a text method's a
        # position left open (x.str.slice(None, 3))
        id(a)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for a in [
            *(k.value for k in node.keywords),
            *(
                node.args
                if isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "str"
                else ()
            ),
        ]
    }
    if sum(_grows(node) for node in ast.walk(tree)) > 1:
        raise FormulaError(
            f"{code!r} lengthens a text more than once (.str.replace by a longer text, "
            ".str.zfill): one user's text would grow by the product; a term lengthens it once"
        )
    for node in ast.walk(tree):  # the names first: a refusal names the first one not allowed
        if isinstance(node, ast.Name) and id(node) in called:
            kind, target = _resolved(code, node, namespace, dtypes)
            if kind != "data" and not _callable(target):
                raise FormulaError(f"{node.id!r} in {code!r} is not allowed in a formula: {_TERMS}")
        elif isinstance(node, ast.Name):
            _check_value(code, node, namespace, dtypes)
    for node in ast.walk(tree):
        if id(node) in indexed:
            continue
        if (
            not isinstance(node, _NODES)
            or isinstance(node, ast.MatMult)
            or (
                isinstance(node, ast.Compare)
                and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            )
        ):
            raise FormulaError(
                f"{ast.unparse(node) or code!r} in {code!r}: {_syntax(node)} is not allowed in a "
                f"formula; {_TERMS}"
            )
        if abs(_folded(node)) >= _LARGEST_INTEGER:
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r} is an integer of 2**53 or more, where a "
                f"column of integers and one of floats part ways: write it as a float: {_TERMS}"
            )
        if isinstance(node, ast.Constant) and isinstance(node.value, complex):
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r}: a term's values are real (pandas matches a "
                "complex NaN in isin() to a missing value only in data of a million rows or "
                f"more, an audit): {_TERMS}"
            )
        _dated_texts(code, node, dtypes)
        if isinstance(node, ast.Constant) and node.value is None and id(node) not in defaults:
            raise FormulaError(
                f"None in {code!r}: a term's values are numbers, flags or texts (with None numpy "
                "makes Python objects, whose power of a big integer never ends, and pandas' "
                "isin() matches None to a missing value only in data of a million rows or "
                f"more, an audit); a missing value is np.nan: {_TERMS}"
            )
        if isinstance(node, ast.List | ast.Tuple) and any(
            isinstance(e, ast.List | ast.Tuple) for e in node.elts
        ):
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r}: a term's lists are of values, not of lists "
                f"(a table against a column is a table of rows each): {_TERMS}"
            )
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mult)
            and any(_sequence(code, side, namespace, dtypes) for side in (node.left, node.right))
        ):
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r} repeats a list (Python builds it when the "
                f"term is evaluated: [0.5] * 10**9 would fill the memory); write it out: {_TERMS}"
            )
        raised = _raised(node)
        if raised is not None:
            _check_powered(code, node, raised[:2], dtypes)
        if (
            raised is not None
            and not _columns_in(node, dtypes)
            and not all(_literal(part) for part in raised[:2])
        ):
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r}: a power or a shift of constants is written "
                f"with numbers (Python computes it when the term is evaluated): {_TERMS}"
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            # on text (however the text is built) % prints a whole column into every row
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r}: '%' is not allowed in a formula (on text it "
                "formats a whole column into every row); np.mod(x, k) is a number's remainder: "
                f"{_TERMS}"
            )
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mult)
            and any(_texts(side, dtypes) for side in (node.left, node.right))
        ):  # a text times k: each row's text k times, as long as one user's text is
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r} repeats a text (a text constant, or a column "
                f"that is not numbers): write a text out, at most {_LONGEST_TEXT:,} characters: "
                f"{_TERMS}"
            )
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            if len(node.value) > _LONGEST_TEXT:
                raise FormulaError(
                    f"a text of {len(node.value):,} characters in {code!r}: a term's texts are "
                    f"at most {_LONGEST_TEXT:,} long: {_TERMS}"
                )
        if isinstance(node, ast.Call):
            _check_call(code, node, namespace, dtypes)
        elif isinstance(node, ast.Attribute) and id(node) not in called:
            _check_value(code, node, namespace, dtypes)


def _folded(node: ast.AST) -> int:
    """The integer a constant expression of integers folds to (``2 ** 62``, ``1 << 62``,
    ``pow(2, 62)``), else 0; one that would take long to compute (``10 ** 10 ** 10``) counts
    as past :data:`_LARGEST_INTEGER` (Python would compute it when the term is evaluated)."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else 0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return -_folded(node.operand) if isinstance(node.op, ast.USub) else _folded(node.operand)
    rounded = _rounded(node)
    if rounded is not None:
        value = rounded.value if isinstance(rounded, ast.Constant) else None
        if not isinstance(value, int | float) or not math.isfinite(value):
            return 0
        return int(value) if abs(value) < _LARGEST_INTEGER else _LARGEST_INTEGER
    raised = _raised(node)
    if raised is not None:  # folded only as far as it takes to pass the bar
        base, exponent, shift = _folded(raised[0]), _folded(raised[1]), raised[2]
        if abs(base) >= _LARGEST_INTEGER or abs(exponent) >= _LARGEST_INTEGER:
            return _LARGEST_INTEGER
        if shift:
            return base << exponent if base and 0 <= exponent <= 256 else 0
        if abs(base) > 1 and exponent > 256:
            return _LARGEST_INTEGER
        return base**exponent if abs(base) > 1 and exponent >= 0 else 0
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        a, b = _folded(node.left), _folded(node.right)
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}[type(node.op)]
    return 0


def _rounded(node: ast.AST) -> ast.expr | None:
    """The argument of ``round(c)``, ``math.trunc(c)``, ``math.floor(c)`` or ``math.ceil(c)``
    (an integer from a number), else None."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return None
    func = node.func
    if isinstance(func, ast.Name) and func.id == "round":
        return node.args[0]
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ("trunc", "floor", "ceil")
        and isinstance(func.value, ast.Name)
        and func.value.id == "math"
    ):
        return node.args[0]
    return None


def _grows(node: ast.AST) -> bool:
    """Whether ``node`` lengthens a text: ``.str.replace`` by a longer text, ``.str.zfill``."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "str"
    ):
        return False
    if node.func.attr == "zfill":
        return True
    texts = [
        len(a.value)
        for a in node.args[:2]
        if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]
    return node.func.attr == "replace" and len(texts) == 2 and texts[1] > texts[0]


def _literal(node: ast.AST) -> bool:
    """Whether ``node`` is arithmetic of numbers written in the term (``2 ** 10``, ``-1.5``)."""
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    return isinstance(node, ast.BinOp) and _literal(node.left) and _literal(node.right)


def _raised(node: ast.AST) -> tuple[ast.expr, ast.expr, bool] | None:
    """A power's or a left shift's operands (``a ** b``, ``pow(a, b)``, ``a << b``) and
    whether it is the shift; None for any other node."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow | ast.LShift):
        return node.left, node.right, isinstance(node.op, ast.LShift)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "pow"
        and len(node.args) == 2
    ):
        return node.args[0], node.args[1], False
    return None


def _text_positions(
    code: str, tree: ast.AST, namespace: Any, dtypes: Mapping[str, Any]
) -> set[int]:
    """The subscripts of the text accessor (``x.str[1]``, ``x.str[:3]``) whose positions are
    constants, and their slices: a position within each row's text, not among the rows."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and _accessor(code, node.value, namespace, dtypes) == "str"
            and all(
                isinstance(n, ast.Constant | ast.Slice | ast.UnaryOp | ast.unaryop | ast.Load)
                for n in ast.walk(node.slice)
            )
        ):
            assert isinstance(node.value, ast.Attribute)  # the accessor
            _check_reads(code, node.value.value, "str", dtypes)
            found |= {id(node), *(id(n) for n in ast.walk(node.slice) if isinstance(n, ast.Slice))}
    return found


def _accessor(code: str, node: ast.expr, namespace: Any, dtypes: Mapping[str, Any]) -> str | None:
    """The accessor ``node`` is (``"str"``, ``"dt"``) where it is one of the data's."""
    if not (isinstance(node, ast.Attribute) and node.attr in _ACCESSORS):
        return None
    return node.attr if _resolved(code, node.value, namespace, dtypes)[0] == "data" else None


def _syntax(node: ast.AST) -> str:
    """What a refused piece of syntax is, in words."""
    if isinstance(node, ast.Subscript | ast.Slice):
        return "indexing or slicing (it reads rows by their position)"
    if isinstance(node, ast.Compare):
        return "'in' (it reads every value of its right side)"
    if isinstance(node, ast.MatMult):
        return "'@' (a product over every row)"
    return f"{type(node).__name__.lower()} syntax"


def _check_call(code: str, call: ast.Call, namespace: Any, dtypes: Mapping[str, Any]) -> None:
    """A call of an allowed function, or of a column's element-wise method, whose public
    arguments (:data:`_PUBLIC_ARGUMENTS`) read no column."""
    func = call.func
    if not isinstance(func, ast.Name | ast.Attribute):
        raise FormulaError(f"{ast.unparse(func)!r} in {code!r} is not a function: {_TERMS}")
    if any(k.arg is None for k in call.keywords):
        raise FormulaError(f"write the arguments in {code!r} out, without **: {_TERMS}")
    if any(k.arg == "out" for k in call.keywords):
        raise FormulaError(f"out= in {code!r} writes into an object of the session: {_TERMS}")
    kind, target = _resolved(code, func, namespace, dtypes)
    name = func.attr if isinstance(func, ast.Attribute) else func.id
    accessor = (
        _accessor(code, func.value, namespace, dtypes) if isinstance(func, ast.Attribute) else None
    )
    if accessor is not None:
        if name not in _ACCESSORS[accessor] or any(k.arg == "expand" for k in call.keywords):
            raise FormulaError(
                f".{accessor}.{name}() in {code!r} is not one of the .{accessor} accessor's "
                f"methods a term may call ({', '.join(sorted(_ACCESSORS[accessor]))}, without "
                f"expand=): {_TERMS}"
            )
        if accessor == "str":
            _check_text_call(code, call, name)
        start: int | None = 0  # patterns, positions, widths: constants, not a column's values
    elif kind == "data":
        if isinstance(func, ast.Name):
            raise FormulaError(f"{name!r} in {code!r} is a column, not a function: {_TERMS}")
        if name not in _METHODS:
            raise FormulaError(
                f".{name}() in {code!r} is not an element-wise method of a column: "
                f"{', '.join(sorted(_METHODS))} are; {_TERMS}"
            )
        _check_arguments(code, call, f".{name}()", _METHODS[name])
        if name == "astype":
            _check_dtype(code, call.args[0] if call.args else None, namespace, dtypes)
        if name in _ONE_VALUE:
            _check_one_value(code, call, name, namespace, dtypes)
            _check_reads(code, func.value, "fillna", dtypes)
        start = 0 if name in _PUBLIC_ARGUMENTS else None
    else:
        if not _callable(target):
            raise FormulaError(
                f"{ast.unparse(func)!r} in {code!r} is not a function a formula may call: {_TERMS}"
            )
        if isinstance(target, np.ufunc):  # its inputs alone: out= and where= write memory
            _check_arguments(code, call, f"{ast.unparse(func)}()", (target.nin, ()))
            if not _known_ufunc(target):
                raise FormulaError(
                    f"{ast.unparse(func)}() in {code!r} is not allowed in a formula: of "
                    f"scipy.special's functions a term calls {', '.join(sorted(_SCIPY_UFUNCS))} "
                    "(others crash the interpreter, or their time grows with an argument: "
                    f"write a polynomial out): {_TERMS}"
                )
            if target in _POWERS:
                _check_powered(code, call, call.args, dtypes)
            if target is np.multiply and any(_texts(a, dtypes) for a in call.args):
                raise FormulaError(
                    f"{ast.unparse(call)!r} in {code!r} repeats a text (a column that is not "
                    f"numbers): {_TERMS}"
                )
        elif id(target) in _signatures():
            _check_arguments(code, call, f"{ast.unparse(func)}()", _signatures()[id(target)])
            _check_shapes(code, call, target)
        elif target is _PATSY_NAMES["Q"]:
            _check_quoted(code, call, dtypes)
        start = _PUBLIC_ARGUMENTS.get(name)
        if getattr(target, "__module__", None) == "math":
            start = 0  # math's functions take numbers: a column there is read whole (fsum)
            if name in _SLOW_MATH:
                raise FormulaError(
                    f"math.{name}() in {code!r} is not allowed in a formula (its time grows "
                    f"with its arguments): {_TERMS}"
                )
        if target is range:
            _check_range(code, call)
    public = [] if start is None else [*call.args[start:], *(k.value for k in call.keywords)]
    if any(_columns_in(a, dtypes) for a in public):
        raise FormulaError(
            f"{ast.unparse(call)!r} in {code!r} compares or maps by values that read the data: "
            f"those of {name}() must be public constants, e.g. x.isin([1, 2])"
        )
    if accessor is not None:  # func is .str.name or .dt.name: read what the accessor reads
        assert isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
        _check_reads(code, func.value.value, accessor, dtypes)


def _check_reads(code: str, node: ast.expr, what: str, dtypes: Mapping[str, Any]) -> None:
    """The columns an accessor (``"str"``, ``"dt"``) or ``fillna`` reads are of a dtype that
    fixes what each row gives, whatever the other rows (public: the dtypes): text or
    categories for ``.str``, dates or durations for ``.dt``, numbers or flags for ``fillna``.
    On a column of objects pandas infers the kind from every row (``.str`` fails on all rows
    unless some row holds a text: one user's ``"n/a"`` kept another's rows, an audit), and a
    fill turns a column of texts or dates to objects only where some row is missing."""
    kinds = {
        "str": ("text (a string or categorical dtype)", _text_dtype),
        "dt": ("dates or durations", _time_dtype),
        "fillna": ("numbers or flags", _number_dtype),
    }
    wanted, fits = kinds[what]
    if what == "str" and not _text_chain(node, dtypes):
        raise FormulaError(
            f".str in {code!r} reads {ast.unparse(node)!r}, which is no text column nor a .str "
            "method's text of one: pandas would type it from every row (on a split's part one "
            f"user's text kept another's rows, an audit): {_TERMS}"
        )
    odd = [c for c in _columns_in(node, dtypes) if not fits(dtypes[c])]
    if odd:
        column = odd[0]
        convert = (
            f"; convert it first: data[{column!r}] = data[{column!r}].astype('string')"
            if what == "str"
            else ""
        )
        raise FormulaError(
            f"{'.' + what if what != 'fillna' else '.fillna()'} in {code!r} reads {column!r} "
            f"(dtype {dtypes[column]}), not {wanted}: on it each row's value would depend on "
            f"the others'{convert}"
        )


def _text_chain(node: ast.expr, dtypes: Mapping[str, Any]) -> bool:
    """Whether ``node`` is a column (bare or ``Q``), or a ``.str`` method's result or
    position of such a chain: what ``.str`` may read (its dtype then that of the column)."""
    if isinstance(node, ast.Name):
        return node.id in dtypes
    if _quoted(node) is not None:
        return True
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "str"
    ):
        return _text_chain(node.func.value.value, dtypes)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        return node.value.attr == "str" and _text_chain(node.value.value, dtypes)
    return False


def _texts(node: ast.expr, dtypes: Mapping[str, Any]) -> bool:
    """Whether ``node`` is a text: a text constant, or a column that is not numbers (or a
    ``.str`` method's text of one); a comparison of texts is flags, not text."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str | bytes)
    return _text_chain(node, dtypes) and any(
        not _number_dtype(dtypes[c]) for c in _columns_in(node, dtypes)
    )


def _text_dtype(dtype: Any) -> bool:
    return isinstance(dtype, pd.StringDtype | pd.CategoricalDtype)


def _time_dtype(dtype: Any) -> bool:
    return bool(
        pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype)
    )


def _number_dtype(dtype: Any) -> bool:
    return bool(pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype))


def _check_text_call(code: str, call: ast.Call, name: str) -> None:
    """A text method's arguments are literal and few (:data:`_TEXT_ARGUMENTS`): ``replace``
    takes a text pattern and a text replacement, constants, and no ``regex=`` but
    ``regex=False`` (a pattern such as ``(a+)+$`` took a fit days on one user's text, an
    audit; pandas takes ``case``, ``flags`` and ``regex`` positionally from the fourth on),
    never an empty pattern (it would write between every two characters); ``zfill`` is at
    most :data:`_LONGEST_TEXT` wide."""
    keywords = {k.arg: k.value for k in call.keywords}
    regex = keywords.get("regex")
    literal = isinstance(regex, ast.Constant) and regex.value is False
    allowed = ("n", "regex") if name == "replace" else ()
    if (
        len(call.args) > _TEXT_ARGUMENTS[name]
        or any(k not in allowed for k in keywords)
        or ("regex" in keywords and not literal)
    ):
        raise FormulaError(
            f".str.{name}() in {code!r} takes at most {_TEXT_ARGUMENTS[name]} positional "
            f"argument(s){' and n=, regex=False' if allowed else ''}: patterns are literal: "
            f"{_TERMS}"
        )
    if name == "replace":
        texts = call.args[:2]
        if len(texts) < 2 or not all(
            isinstance(t, ast.Constant) and isinstance(t.value, str) for t in texts
        ):
            raise FormulaError(
                f".str.replace() in {code!r} takes a text pattern and a text replacement, "
                f"written as constants: {_TERMS}"
            )
        pattern = texts[0]
        if isinstance(pattern, ast.Constant) and pattern.value == "":
            raise FormulaError(
                f".str.replace() in {code!r} replaces an empty text (it would write between "
                f"every two characters): replace a text of one character or more: {_TERMS}"
            )
    if name == "zfill":
        first = call.args[0] if call.args else None
        if not (isinstance(first, ast.Constant) and type(first.value) is int) or (
            first.value > _LONGEST_TEXT
        ):
            raise FormulaError(
                f".str.zfill() in {code!r} takes a constant width of at most {_LONGEST_TEXT}"
            )


def _check_shapes(code: str, call: ast.Call, target: Any) -> None:
    """The arguments whose shape decides what a function does row by row: ``np.where`` takes
    its three (with one it gives the rows' positions), ``np.select`` lists of conditions and
    choices written in the term (given a column, numpy walks its rows as pairs and gives
    every user the first match's value, an audit), and a date's constructors no clock
    (``"now"``: the design would change with the time of day) and a time zone by its name
    only (a ``dateutil/`` path opens the file it names)."""
    name = getattr(target, "__name__", "")
    if target is np.where and len(call.args) != 3:
        raise FormulaError(f"np.where() in {code!r} takes three arguments: {_TERMS}")
    if target is np.select and not (
        len(call.args) >= 2 and all(isinstance(a, ast.List | ast.Tuple) for a in call.args[:2])
    ):
        raise FormulaError(
            f"np.select() in {code!r} takes its conditions and choices as lists written in the "
            f"term (np.select([x > 0], [x], 0)): {_TERMS}"
        )
    if target is np.interp and not _increasing(call.args[1] if len(call.args) > 1 else None):
        raise FormulaError(
            f"np.interp() in {code!r} takes its xp as finite numbers written in the term, each "
            "above the one before (numpy starts each row's search where the row before found "
            f"its place: on other xp one user's row moved the next user's value): {_TERMS}"
        )
    if name in ("Timestamp", "Timedelta", "datetime64", "timedelta64"):
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if not all(_plain(a) for a in arguments):
            raise FormulaError(
                f"{ast.unparse(call)!r} in {code!r}: a date's or a duration's constructor takes "
                f"numbers and texts written out (a text built with + may say 'now'): {_TERMS}"
            )
        texts = [a.value for a in arguments if isinstance(a, ast.Constant)]
        if any(isinstance(t, str) and t.strip().lower() in ("now", "today") for t in texts):
            raise FormulaError(f"{ast.unparse(call)!r} in {code!r} reads the clock: {_TERMS}")
        first = call.args[0] if call.args else None
        date = first.value if isinstance(first, ast.Constant) else None
        if (
            name in ("Timestamp", "datetime64")
            and isinstance(date, str)
            and (not re.search(r"\d{4}", date) or re.search(r"\.\d{10,}", date))
        ):
            raise FormulaError(  # '12:00' is today's; a twelfth decimal wrapped to 1969
                f"{ast.unparse(call)!r} in {code!r} takes a date written with its year (a time "
                "alone is today's) and at most nine decimals of a second: "
                f"pd.Timestamp('2020-01-01 12:00'): {_TERMS}"
            )
        if name in ("datetime64", "timedelta64") and any(t in ("ps", "fs", "as") for t in texts):
            # units below a nanosecond hold only a few seconds: wrong dates without a word
            raise FormulaError(
                f"{ast.unparse(call)!r} in {code!r} takes a unit of a nanosecond or more: {_TERMS}"
            )
        zone = next((k.value for k in call.keywords if k.arg == "tz"), None)
        if zone is not None and not (
            isinstance(zone, ast.Constant) and zone.value in _time_zones()
        ):
            raise FormulaError(
                f"{ast.unparse(call)!r} in {code!r} takes a time zone by its name (tz='UTC', "
                f"tz='Europe/Paris'): {_TERMS}"
            )


def _sequence(code: str, node: ast.expr, namespace: Any, dtypes: Mapping[str, Any]) -> bool:
    """Whether ``node`` is a list or tuple: written in the term, or a name of the session."""
    if isinstance(node, ast.List | ast.Tuple):
        return True
    if isinstance(node, ast.Name | ast.Attribute):
        kind, value = _resolved(code, node, namespace, dtypes)
        return kind == "value" and isinstance(value, list | tuple)
    return False


def _check_powered(
    code: str, node: ast.AST, parts: Sequence[ast.expr], dtypes: Mapping[str, Any]
) -> None:
    """A power's or a shift's base and exponent (``parts``) read columns of numbers only: on
    Python's objects the power is Python's, and one of a big integer never ends."""
    if any(not _number_dtype(dtypes[c]) for part in parts for c in _columns_in(part, dtypes)):
        raise FormulaError(
            f"{ast.unparse(node)!r} in {code!r} raises or shifts a column that is not numbers "
            f"(on Python's objects a power of a big integer never ends): {_TERMS}"
        )


def _known_ufunc(target: np.ufunc) -> bool:
    """Whether ``target`` is one of numpy's ufuncs or of :data:`_SCIPY_UFUNCS`."""
    import scipy.special

    name = target.__name__
    return getattr(np, name, None) is target or (
        name in _SCIPY_UFUNCS and getattr(scipy.special, name, None) is target
    )


def _dated_texts(code: str, node: ast.AST, dtypes: Mapping[str, Any]) -> None:
    """Refuse a text compared with a date or duration column (``d > 'now'``,
    ``d.isin(['today'])``, ``d.between('00:00', '23:59')``): pandas parses it relative to the
    clock (an audit); a date is written ``pd.Timestamp("2020-01-01")``."""
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("isin", "between")
    ):
        operands = [node.func.value, *node.args, *(k.value for k in node.keywords)]
    else:
        return
    texts = [
        n
        for o in operands
        for n in (o.elts if isinstance(o, ast.List | ast.Tuple) else [o])
        if isinstance(n, ast.Constant) and isinstance(n.value, str | bytes)
    ]
    timed = any(_time_dtype(dtypes[c]) for o in operands for c in _columns_in(o, dtypes))
    if texts and timed:
        raise FormulaError(
            f"{ast.unparse(node)!r} in {code!r} compares dates with a text, which pandas may "
            "read against the clock ('now', '12:00' today): write the date "
            f"pd.Timestamp('2020-01-01 12:00'): {_TERMS}"
        )


def _plain(node: ast.expr) -> bool:
    """A number or a text written out (``-1`` too): never bytes, nor an expression."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float | str)


def _increasing(node: ast.expr | None) -> bool:
    """Whether ``node`` is a list or tuple of finite numbers written out, each above the one
    before."""
    try:
        values = ast.literal_eval(node) if isinstance(node, ast.List | ast.Tuple) else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    if not (
        values
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        and all(math.isfinite(v) for v in values)
    ):
        return False
    return all(a < b for a, b in itertools.pairwise(values))


@functools.cache
def _time_zones() -> frozenset[str]:
    """The time zones' names a date constant may give (the IANA database's, and UTC), but
    those a machine sets for itself: ``localtime`` is the host's own zone (a link to
    ``/etc/localtime``, an audit), ``Factory`` and ``posixrules`` its defaults."""
    import zoneinfo

    host = {"localtime", "Factory", "posixrules"}
    return frozenset(zoneinfo.available_timezones() - host) | {"UTC"}


def _check_range(code: str, call: ast.Call) -> None:
    """``range`` of constants gives at most :data:`_LONGEST_RANGE` values."""
    bounds = [a.value if isinstance(a, ast.Constant) else _folded(a) for a in call.args]
    integers = [b for b in bounds if type(b) is int]
    literal = all(_literal(a) for a in call.args) and len(integers) == len(bounds)
    try:
        length = len(range(*integers)) if literal else math.inf
    except (TypeError, ValueError):  # no bounds, or a step of 0: refused here as well
        length = math.inf
    if length > _LONGEST_RANGE:
        raise FormulaError(
            f"{ast.unparse(call)!r} in {code!r}: range() takes integer constants and gives at "
            f"most {_LONGEST_RANGE:,} values in a formula"
        )


def _check_arguments(
    code: str, call: ast.Call, what: str, signature: tuple[int, tuple[str, ...]]
) -> None:
    """At most the positional arguments and only the keywords ``signature`` allows."""
    most, keywords = signature
    extra = [k.arg for k in call.keywords if k.arg not in keywords]
    if len(call.args) > most or extra:
        allowed = f"{most} positional argument{'s' * (most != 1)}" + (
            f" and {', '.join(f'{k}=' for k in keywords)}" if keywords else ""
        )
        raise FormulaError(f"{what} in {code!r} takes {allowed} in a formula: {_TERMS}")


def _check_dtype(
    code: str, node: ast.expr | None, namespace: Any, dtypes: Mapping[str, Any]
) -> None:
    """``astype``'s dtype: a float's or a flag's (:data:`_DTYPES`)."""
    if isinstance(node, ast.Constant) and node.value in _DTYPES:
        return
    if isinstance(node, ast.Name | ast.Attribute):
        kind, target = _resolved(code, node, namespace, dtypes)
        if kind == "value" and isinstance(target, type) and _public_constant(target):
            return
    raise FormulaError(
        f".astype() in {code!r} casts to one dtype of floats or flags ("
        f"{', '.join(sorted(_DTYPES))}, float, np.float64, ...): {_TERMS}"
    )


def _check_one_value(
    code: str, call: ast.Call, name: str, namespace: Any, dtypes: Mapping[str, Any]
) -> None:
    """``name``'s fill is one real number or flag, a constant: never a table of values (a dict
    fills by the rows' labels), a function (pandas calls it on the whole column), a column, a
    text or a complex number (a column of floats filled with ``'a'`` or ``1j`` turns to
    objects or complex numbers only where some row is missing, and ``(-4) ** 0.5`` is then 2
    where it was missing: one user's missing value moved another's, an audit)."""
    for node in [*call.args, *(k.value for k in call.keywords)]:
        value: Any = _MISSING
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            node_value = node.operand
        else:
            node_value = node
        if isinstance(node_value, ast.Constant):
            value = node_value.value
        elif isinstance(node_value, ast.Name | ast.Attribute):
            kind, target = _resolved(code, node_value, namespace, dtypes)
            value = target if kind == "value" else _MISSING
        real = isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating)
        if not real:
            raise FormulaError(
                f"{ast.unparse(node)!r} in .{name}() of {code!r} is no real number: a term "
                f"fills with one number or flag, a constant (e.g. x.fillna(0)): {_TERMS}"
            )


def _check_quoted(code: str, call: ast.Call, dtypes: Mapping[str, Any]) -> None:
    """``Q`` reads one column, named by one text constant."""
    first = call.args[0] if len(call.args) == 1 else None
    if call.keywords or not (isinstance(first, ast.Constant) and first.value in dtypes):
        raise FormulaError(
            f"Q() in {code!r} reads one column of the data, named as a text constant: "
            "Q('column name')"
        )


def _check_value(
    code: str, node: ast.Name | ast.Attribute, namespace: Any, dtypes: Mapping[str, Any]
) -> None:
    """A name or attribute used as a value: a column, a public constant, an allowed module
    or function (passed as an argument); a column's attribute only when called."""
    kind, target = _resolved(code, node, namespace, dtypes)
    if isinstance(node, ast.Attribute) and (
        _accessor(code, node, namespace, dtypes) is not None
        or node.attr in _ACCESSORS.get(_accessor(code, node.value, namespace, dtypes) or "", ())
    ):  # an accessor, or what it reads: checked where it is called or indexed
        return
    if kind == "data":
        if isinstance(node, ast.Attribute):
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r} reads the attribute {node.attr!r}, which a "
                f"term may not: {_TERMS}"
            )
        return
    if kind == "module" or _public_constant(target) or any(target is c for c in _contrasts()):
        return
    raise FormulaError(f"{ast.unparse(node)!r} in {code!r} is not allowed in a formula: {_TERMS}")


def _resolved(
    code: str, node: ast.expr, namespace: Any, dtypes: Mapping[str, Any]
) -> tuple[str, Any]:
    """What a name or attribute chain refers to: ``("data", None)`` for a column or an
    attribute of an expression, ``("module", m)`` for an allowed module, ``("value", v)``
    otherwise. Refuses names and attributes starting with ``_``, modules beyond
    :data:`_MODULES` and attributes of anything but a module or the data."""
    if isinstance(node, ast.Name):
        if node.id in dtypes:  # a column shadows a name
            return "data", None
        if node.id.startswith("_"):
            raise FormulaError(f"{node.id!r} in {code!r} is not allowed in a formula: {_TERMS}")
        # Python's builtins only those a term calls or casts to (a notebook adds its own)
        listed = node.id in _BUILTIN_CALLS or node.id in {t.__name__ for t in _BUILTIN_TYPES}
        if node.id not in namespace and hasattr(builtins, node.id) and not listed:
            raise FormulaError(f"{node.id!r} in {code!r} is not allowed in a formula: {_TERMS}")
        value = namespace.get(node.id, getattr(builtins, node.id) if listed else _MISSING)
        if value is _MISSING:
            where = "" if node.id == code else f" in {code!r}"
            raise FormulaError(
                f"{node.id!r}{where} is neither a column of the data nor a name of your "
                "session (a column's name is written as it is in the data, Q('name') where it "
                "is no Python name)"
            )
        if _holds_rows(value):
            raise FormulaError(
                f"{node.id!r} in {code!r} is a {type(value).__name__} of your session, not a "
                f"column of the data: {_TERMS} (a number computed from the data is no public "
                "constant either)"
            )
        return _module_or_value(code, node.id, value)
    if not isinstance(node, ast.Attribute):  # an expression: of the data
        return "data", None
    if node.attr.startswith("_"):
        raise FormulaError(f"{node.attr!r} in {code!r} reaches Python's internals: {_TERMS}")
    kind, base = _resolved(code, node.value, namespace, dtypes)
    if kind == "data":
        return "data", None
    if kind == "value":
        raise FormulaError(
            f"{ast.unparse(node)!r} in {code!r} is an attribute of {ast.unparse(node.value)!r}, "
            f"which is no module: {_TERMS}"
        )
    return _module_or_value(code, ast.unparse(node), getattr(base, node.attr, None))


def _module_or_value(code: str, name: str, value: Any) -> tuple[str, Any]:
    """A resolved name's kind: an allowed module, or a value; any other module is refused."""
    if not isinstance(value, types.ModuleType):
        return "value", value
    parts = value.__name__.split(".")
    if parts[0] not in _MODULES:
        raise FormulaError(
            f"{name!r} in {code!r} is the module {value.__name__}: a formula calls functions "
            f"of {', '.join(_MODULES)} (or your own): {_TERMS}"
        )
    if any(part.startswith("_") for part in parts):  # a public alias of a private module
        raise FormulaError(
            f"{name!r} in {code!r} is the internal module {value.__name__}: {_TERMS}"
        )
    return "module", value


def _callable(target: Any) -> bool:
    """Whether a term may call ``target`` (module docstring)."""
    return (
        (isinstance(target, np.ufunc) and target.signature is None)  # matmul, vecdot reduce
        or any(target is f for f in _functions())
        or (callable(target) and getattr(target, "__module__", None) == "math")
        or hasattr(target, "__patsy_stateful_transform__")
        or _callers_own(target)
    )


@functools.cache
def _signatures() -> dict[int, tuple[int, tuple[str, ...]]]:
    """The functions of :data:`_FUNCTIONS` (by identity) and what arguments they take."""
    modules = {"numpy": np, "pandas": pd}
    return {
        id(getattr(modules[m], name)): signature
        for m, functions in _FUNCTIONS.items()
        for name, signature in functions.items()
    }


@functools.cache
def _functions() -> tuple[Any, ...]:
    """The functions of :data:`_FUNCTIONS`, patsy's builtins and the builtins a term calls."""
    modules = {"numpy": np, "pandas": pd}
    listed = [getattr(modules[m], f) for m, functions in _FUNCTIONS.items() for f in functions]
    return (*listed, *_PATSY_NAMES.values(), *(getattr(builtins, b) for b in _BUILTIN_CALLS))


@functools.cache
def _contrasts() -> tuple[Any, ...]:
    """patsy's contrasts, which a term passes to ``C`` as values (``C(site, Sum)``)."""
    return tuple(_PATSY_NAMES[c] for c in ("Treatment", "Poly", "Sum", "Helmert", "Diff"))


def _callers_own(target: Any) -> bool:
    """A Python function of the caller's (none of the standard library's or a library's)."""
    if not isinstance(target, types.FunctionType):
        return False
    package = str(getattr(target, "__module__", None) or "").split(".")[0]
    installed = target.__code__.co_filename.startswith(_INSTALLED)
    return package not in sys.stdlib_module_names and package not in _LIBRARIES and not installed


def _public_constant(value: Any) -> bool:
    """A number, string, array, list or tuple of them, or a dtype: a public constant (not
    None: numpy makes Python objects of it, :func:`_check_names`)."""
    if isinstance(value, bool | int | float | complex | str | bytes):
        return True
    if isinstance(value, np.generic | np.dtype):
        return True
    if isinstance(value, np.ndarray):  # a table against a column is a table of rows each
        return value.dtype.kind in "biufcUS" and value.ndim <= 1
    if isinstance(value, list | tuple):
        return all(_public_constant(v) for v in value)
    return isinstance(value, type) and (
        value in _BUILTIN_TYPES or issubclass(value, np.floating | np.bool_)
    )


def _holds_rows(value: Any) -> bool:
    """Whether ``value`` is a pandas or Dask object: rows of some data set."""
    from dplong.dask_frames import is_dask  # imported here: dask_frames imports this package

    return isinstance(value, pd.DataFrame | pd.Series | pd.Index) or is_dask(value)
