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
``or``/``if``, ``in``, ``@``, ``%`` on text, ``*`` or ``**`` arguments, a name or attribute
starting with ``_``, a module beyond :data:`_MODULES` (nor one reached through them:
``np.ma.core.builtins``), a function as a value, a function of Python's standard library or
of an installed package, or a pandas or Dask object of the session. A call takes only the
arguments that keep it element-wise (a ufunc its inputs: ``out=`` and ``where=`` write or
leave memory; :data:`_FUNCTIONS` and :data:`_METHODS` list the others'); those that
:data:`_PUBLIC_ARGUMENTS` name must be public constants (``x.isin(y)`` would read every row of
``y``). Where pandas would pick a type from every row the term is refused too: ``astype``
casts to floats and flags only (:data:`_DTYPES`), and an integer written in a term stays below
:data:`_LARGEST_INTEGER`. A caller's own function is theirs to vouch for (the row-wise probes
still run it); every other function a term may call is listed here.
"""

from __future__ import annotations

import ast
import builtins
import functools
import sys
import sysconfig
import types
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dplong.exceptions import FormulaError
from dplong.formula.terms import _PATSY_NAMES, _columns_in

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
#: A column's accessors and what a term may read through them: each row's text or time alone
#: (``code.str.split("_").str[1]``, ``(day - pd.Timestamp("2020-01-01")).dt.total_seconds()``);
#: the one subscript a term may write is the text accessor's, a constant position in each text.
_ACCESSORS = {
    # text to text: the tests (isdigit, startswith) give flags, or objects where any row is
    # missing, and the integer parts (year, days) floats where any is: compare (== "a"), or
    # take total_seconds(), a float whatever the rows
    "str": frozenset("get lower lstrip replace rstrip slice split strip upper zfill".split()),
    "dt": frozenset({"total_seconds"}),
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
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str | bytes)
        ):
            raise FormulaError(
                f"{ast.unparse(node)!r} in {code!r} formats text with %, which would print a "
                f"whole column into every row: {_TERMS}"
            )
        if isinstance(node, ast.Call):
            _check_call(code, node, namespace, dtypes)
        elif isinstance(node, ast.Attribute) and id(node) not in called:
            _check_value(code, node, namespace, dtypes)


def _folded(node: ast.AST) -> int:
    """The integer a constant expression of integers folds to (``2 ** 62``), else 0."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else 0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return -_folded(node.operand) if isinstance(node.op, ast.USub) else _folded(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Pow):
        left, right = _folded(node.left), _folded(node.right)
        if isinstance(node.op, ast.Pow):  # folded only as far as it takes to pass the bar
            if abs(left) >= _LARGEST_INTEGER:
                return left
            return left**right if abs(left) > 1 and 0 <= right <= 256 else 0
        return {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}[type(node.op)]
    return 0


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
        start = 0 if name in _PUBLIC_ARGUMENTS else None
    else:
        if not _callable(target):
            raise FormulaError(
                f"{ast.unparse(func)!r} in {code!r} is not a function a formula may call: {_TERMS}"
            )
        if isinstance(target, np.ufunc):  # its inputs alone: out= and where= write memory
            _check_arguments(code, call, f"{ast.unparse(func)}()", (target.nin, ()))
        elif id(target) in _signatures():
            _check_arguments(code, call, f"{ast.unparse(func)}()", _signatures()[id(target)])
        elif target is _PATSY_NAMES["Q"]:
            _check_quoted(code, call, dtypes)
        start = _PUBLIC_ARGUMENTS.get(name)
        if getattr(target, "__module__", None) == "math":
            start = 0  # math's functions take numbers: a column there is read whole (fsum)
    public = [] if start is None else [*call.args[start:], *(k.value for k in call.keywords)]
    if any(_columns_in(a, dtypes) for a in public):
        raise FormulaError(
            f"{ast.unparse(call)!r} in {code!r} compares or maps by values that read the data: "
            f"those of {name}() must be public constants, e.g. x.isin([1, 2])"
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
    """``name``'s fill is one value or the data, never a table of values (a dict or list fills
    by the rows' labels) nor a function (pandas calls it on the whole column)."""
    for node in [*call.args, *(k.value for k in call.keywords)]:
        table = isinstance(node, ast.List | ast.Tuple | ast.Dict | ast.Set)
        if isinstance(node, ast.Name | ast.Attribute):
            kind, target = _resolved(code, node, namespace, dtypes)
            table = kind != "data" and not isinstance(target, int | float | bool | np.generic)
        if table:
            raise FormulaError(
                f"{ast.unparse(node)!r} in .{name}() of {code!r} is no single value: a term "
                f"fills with a number or the data's values: {_TERMS}"
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
    if value.__name__.split(".")[0] not in _MODULES:
        raise FormulaError(
            f"{name!r} in {code!r} is the module {value.__name__}: a formula calls functions "
            f"of {', '.join(_MODULES)} (or your own): {_TERMS}"
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
    """A number, string, array, list or tuple of them, or a dtype: a public constant."""
    if value is None or isinstance(value, bool | int | float | complex | str | bytes):
        return True
    if isinstance(value, np.generic | np.dtype):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biufcUS"
    if isinstance(value, list | tuple):
        return all(_public_constant(v) for v in value)
    return isinstance(value, type) and (
        value in _BUILTIN_TYPES or issubclass(value, np.floating | np.bool_)
    )


def _holds_rows(value: Any) -> bool:
    """Whether ``value`` is a pandas or Dask object: rows of some data set."""
    from dplong.dask_frames import is_dask  # imported here: dask_frames imports this package

    return isinstance(value, pd.DataFrame | pd.Series | pd.Index) or is_dask(value)
