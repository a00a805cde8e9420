"""What a formula's names may refer to: the data's columns, functions of them and public
constants, never another data set of the session nor Python's machinery.

A term is Python code evaluated in the caller's namespace (patsy's design), so a name there
can reach what the row-wise checks (:mod:`dplong.formula.row_wise`) never see: a data frame
of the session (``I(exper - W.exper.mean())`` centres every row on every user's values), a
module that reads or runs anything (``os``, ``__import__('os')``), or the interpreter's
internals through a dunder attribute. :func:`_check_names` refuses those by the syntax and
what the names resolve to (public facts: the formula and the caller's namespace, never the
rows). It is no sandbox — code the analyst writes in their own session runs there — but a
formula handed to the command line or a service reads the data only through its columns.
A number or array the namespace holds is taken as a public constant: one computed from the
data is not (docs: formulas).
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dplong.exceptions import FormulaError

#: Builtins that reach the interpreter, the file system or other names: never in a term.
_UNSAFE_BUILTINS = frozenset(
    """__import__ breakpoint compile delattr dir eval exec exit getattr globals help input
    locals memoryview open quit setattr super type vars""".split()
)
#: The packages whose functions a term may call by module (``np.log``, ``math.sqrt``,
#: ``scipy.special.expit``, ``pd.Categorical``); the caller's own functions are theirs to vouch
#: for.
_MODULES = ("numpy", "math", "scipy", "patsy", "pandas")
#: Their functions (and methods) that read or write files or evaluate code: never in a term
#: (nor any ``read_*``).
_UNSAFE_ATTRIBUTES = frozenset(
    """ctypeslib eval fromfile genfromtxt load loads loadtxt memmap query save savetxt savez
    savez_compressed to_clipboard to_csv to_excel to_feather to_hdf to_html to_json to_latex
    to_markdown to_orc to_parquet to_pickle to_sql to_stata to_xml tofile""".split()
)
_TERMS = "a term reads the data through its columns, functions of them and public constants"


def _check_names(code: str, tree: ast.AST, namespace: Any, dtypes: Mapping[str, Any]) -> None:
    """Refuse a term whose names reach beyond its columns and public constants (module
    docstring): a dunder name or attribute, an unsafe builtin or function
    (:data:`_UNSAFE_ATTRIBUTES`, ``read_*``), a module outside :data:`_MODULES`, or a
    pandas (or Dask) object of the session.

    Examples
    --------
    >>> import ast, pandas as pd
    >>> from dplong.formula.names import _check_names
    >>> W = pd.DataFrame({"x": [1.0, 2.0]})
    >>> tree = ast.parse("I(x - W.x.mean())", mode="eval")
    >>> _check_names("I(x - W.x.mean())", tree, {"W": W}, {"x": float})
    Traceback (most recent call last):
    ...
    dplong.exceptions.FormulaError: 'W' in 'I(x - W.x.mean())' is a DataFrame of your session, ...
    """
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise FormulaError(f"{node.attr!r} in {code!r} reaches Python's internals: {_TERMS}")
        if isinstance(node, ast.Attribute) and _unsafe(node.attr):
            raise FormulaError(
                f"{node.attr!r} in {code!r} reads or writes files or evaluates code: {_TERMS}"
            )
        if not isinstance(node, ast.Name) or node.id in dtypes:
            continue
        name = node.id
        if name.startswith("__") or (name not in namespace and name in _UNSAFE_BUILTINS):
            raise FormulaError(f"{name!r} in {code!r} is not allowed in a formula: {_TERMS}")
        value = namespace.get(name, getattr(builtins, name, None))
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] not in _MODULES:
            raise FormulaError(
                f"{name!r} in {code!r} is the module {value.__name__}: a formula calls "
                f"functions of {', '.join(_MODULES)} (or your own): {_TERMS}"
            )
        if _holds_rows(value):
            raise FormulaError(
                f"{name!r} in {code!r} is a {type(value).__name__} of your session, not a "
                f"column of the data: {_TERMS} (a number computed from the data is no public "
                "constant either)"
            )


def _unsafe(attribute: str) -> bool:
    """Whether a function or method of that name reads or writes files or evaluates code."""
    return attribute in _UNSAFE_ATTRIBUTES or attribute.startswith("read_")


def _holds_rows(value: Any) -> bool:
    """Whether ``value`` is a pandas or Dask object: rows of some data set."""
    from dplong.dask_frames import is_dask  # imported here: dask_frames imports this package

    return isinstance(value, pd.DataFrame | pd.Series | pd.Index) or is_dask(value)
