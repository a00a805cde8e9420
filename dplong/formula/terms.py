"""The formula's code as Python syntax: its terms parsed, the data columns they read and the
objects they call, looked up the way patsy evaluates them."""

from __future__ import annotations

import ast
import builtins
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import patsy
import patsy.builtins
from patsy.parse_formula import parse_formula

from dplong.exceptions import FormulaError

#: patsy's builtins (``C``, ``I``, ``Q``, ...), where the formula's names are looked up last.
_PATSY_NAMES = {name: getattr(patsy.builtins, name) for name in patsy.builtins.__all__}


#: The most terms a formula may expand to: patsy expands ``a * b * c ...`` into every
#: interaction, 2**k terms of k factors (a formula of 120 characters took 24 s at k = 17 and
#: never finished at 25, an audit).
MOST_TERMS = 1000


def model_desc(formula: str) -> patsy.ModelDesc:
    """patsy's terms of ``formula``; a formula patsy cannot parse, one nested beyond Python's
    recursion, or one that expands to more than :data:`MOST_TERMS` terms (bounded on the
    parse tree, before patsy expands it) is a :class:`~dplong.exceptions.FormulaError`.

    Examples
    --------
    >>> from dplong.formula.terms import model_desc
    >>> len(model_desc("y ~ (a + b) * c").rhs_termlist)  # the intercept, a, b, c, a:c, b:c
    6
    >>> model_desc("y ~ " + " * ".join(f"x{i}" for i in range(12)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.FormulaError: 'y ~ x0 * x1 * ...' expands to more than 1,000 terms ...
    """
    try:
        if _most_terms(parse_formula(formula)) > MOST_TERMS:
            shown = formula if len(formula) < 60 else formula[:16] + " ..."
            raise FormulaError(
                f"{shown!r} expands to more than {MOST_TERMS:,} terms (patsy writes out every "
                "interaction of a * b * ...: 2**k terms of k factors); write the terms the "
                "model needs"
            )
        return patsy.ModelDesc.from_formula(formula)
    except patsy.PatsyError as err:
        raise FormulaError(f"cannot parse {formula!r}: {err}") from None
    except RecursionError:
        raise FormulaError(
            f"the formula {formula[:60]!r}... nests or chains too deeply to be read"
        ) from None


def _most_terms(node: Any) -> int:
    """An upper bound on the terms patsy's parse tree ``node`` expands to, capped just above
    :data:`MOST_TERMS` (the bound only decides a refusal)."""
    kind, args = node.type, node.args
    counts = [_most_terms(a) for a in args]
    if kind == "PYTHON_EXPR":
        bound = 1
    elif kind in ("ZERO", "ONE", "NUMBER"):
        bound = 0
    elif kind == "-":  # a removal never adds terms
        bound = counts[0]
    elif kind == ":":
        bound = counts[0] * counts[1]
    elif kind in ("*", "/"):
        bound = counts[0] + counts[1] + counts[0] * counts[1]
    elif kind == "**":  # every interaction of the base's terms up to the power's order
        try:
            order = int(float(args[1].token.extra))
        except (AttributeError, TypeError, ValueError, OverflowError):
            order = MOST_TERMS
        base = counts[0]
        bound = min(2 ** min(base, 64), base ** min(max(order, 1), 64))
    else:  # "~", "+": the sides' terms
        bound = sum(counts)
    return min(bound, MOST_TERMS + 1)


def _parse(factor: Any, formula: str) -> ast.Expression:
    code = str(factor.code)
    try:
        return ast.parse(code, mode="eval")
    except RecursionError:
        raise FormulaError(f"the term {code[:60]!r}... of the formula nests too deeply") from None
    except SyntaxError:
        # words with spaces between them: most likely a column so named
        hint = f": a column named so is written Q({code!r})" if _spaced_name(code) else ""
        raise FormulaError(f"cannot read the term {code!r} of {formula!r}{hint}") from None


def _spaced_name(code: str) -> bool:
    """Whether ``code`` is words separated by spaces (``log wage``), as a column name may be.

    Examples
    --------
    >>> from dplong.formula.terms import _spaced_name
    >>> _spaced_name("log wage"), _spaced_name("x +* y"), _spaced_name("wage")
    (True, False, False)
    """
    words = code.split()
    return len(words) > 1 and all(word.isidentifier() for word in words)


#: The package's own source files: frames there are not the analyst's.
_PACKAGE = Path(__file__).resolve().parents[1]


def analyst_env() -> patsy.EvalEnvironment:
    """The namespace a model's formula is evaluated in: the analyst's, the first frame on the
    call stack outside dplong's source files. The entry points' argument checks and the
    models' helpers sit between it and the code that evaluates the formula, so a fixed depth
    reached dplong's own frames (``I(exper - c0)`` with the analyst's ``c0``, or a function
    of theirs, was a ``NameError``). A formula given on the command line gets an empty one:
    its names are the data's columns and ``np``.

    Examples
    --------
    >>> from dplong.formula.terms import analyst_env
    >>> c0 = 5.0
    >>> analyst_env().namespace["c0"]
    5.0
    """
    frame = inspect.currentframe()
    while frame is not None and Path(frame.f_code.co_filename).is_relative_to(_PACKAGE):
        if Path(frame.f_code.co_filename).is_relative_to(_PACKAGE / "cli"):
            return patsy.EvalEnvironment([{}])
        frame = frame.f_back
    if frame is None:
        return patsy.EvalEnvironment([{}])
    return patsy.EvalEnvironment([frame.f_locals, frame.f_globals])


def formula_env(env: patsy.EvalEnvironment) -> patsy.EvalEnvironment:
    """``env`` as a formula is evaluated in: ``np.log1p(y)`` works wherever the formula is
    written, the command line included; a caller's own ``np`` comes first (an outer
    namespace is searched last)."""
    return env.with_outer_namespace({"np": np})


def _quoted(node: ast.AST) -> str | None:
    """The column ``Q("name")`` reads, or None for any other node."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Q"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return str(node.args[0].value)
    return None


def _columns_in(node: ast.AST, dtypes: Mapping[str, Any]) -> list[str]:
    """Data columns an expression reads: bare names and ``Q("name")``."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in dtypes:
            found.append(sub.id)
        elif (quoted := _quoted(sub)) is not None and quoted in dtypes:
            found.append(quoted)
    return list(dict.fromkeys(found))


def _unresolved(node: ast.AST, columns: Sequence[str], namespace: Mapping[str, Any]) -> list[str]:
    """Names an expression reads that are neither ``columns`` nor names of the ``namespace``
    or Python's builtins (bare names and ``Q("name")``): columns the rows lack."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id not in columns and sub.id not in namespace:
            if not hasattr(builtins, sub.id):
                found.append(sub.id)
        elif (quoted := _quoted(sub)) is not None and quoted not in columns:
            found.append(quoted)
    return list(dict.fromkeys(found))


def _resolve(func: ast.expr, namespace: Any, dtypes: Mapping[str, Any]) -> Any:
    """The object a called name or attribute chain refers to (columns shadow names)."""
    if isinstance(func, ast.Name):
        return None if func.id in dtypes else namespace.get(func.id)
    if isinstance(func, ast.Attribute):
        base = _resolve(func.value, namespace, dtypes)
        return None if base is None else getattr(base, func.attr, None)
    return None


def _calls(tree: ast.AST, namespace: Any, dtypes: Mapping[str, Any]) -> list[tuple[ast.Call, Any]]:
    return [
        (node, _resolve(node.func, namespace, dtypes))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    ]


def term_trees(formula: str, *, outcome: bool = True) -> list[ast.Expression]:
    """Every term of ``formula`` (outcome first; right-hand side only without ``outcome``) as
    Python syntax, each once per occurrence.

    Raises
    ------
    FormulaError
        If the formula or a term cannot be parsed.

    Examples
    --------
    >>> from dplong.formula.terms import term_trees
    >>> [type(t.body).__name__ for t in term_trees("y ~ x + np.log(z)")]
    ['Name', 'Name', 'Call']
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(f"formula must be a string like 'y ~ x1 + x2', got {formula!r}")
    desc = model_desc(formula)
    trees = []
    for term in [*(desc.lhs_termlist if outcome else ()), *desc.rhs_termlist]:
        for factor in term.factors:
            try:
                trees.append(ast.parse(factor.code.strip(), mode="eval"))
            except (SyntaxError, RecursionError):
                raise FormulaError(f"cannot parse {factor.code!r} in {formula!r}") from None
    return trees


def uncentred_powers(formula: str) -> list[str]:
    """The powers of a column on the right of ``formula`` whose base it does not centre: a
    ``**``, ``np.power`` or ``np.square`` of degree 2 or more with no subtraction in its base
    (a text constant's ``-`` is no subtraction), as written (none where the formula does not
    parse: the model's own parse refuses it).

    Examples
    --------
    >>> from dplong.formula.terms import uncentred_powers
    >>> uncentred_powers("y ~ I(age**2) + np.square(Q('age-years')) + I((age - 45)**2)")
    ['age ** 2', "np.square(Q('age-years'))"]
    >>> uncentred_powers("y ~ I(x ** -1) + np.power(x - 1, 3) + C(g):I(-x**2)")
    ['x ** 2']
    """
    try:
        trees = term_trees(formula, outcome=False)
    except FormulaError:
        return []
    found = []
    for node in (node for tree in trees for node in ast.walk(tree)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, degree = node.left, node.right
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("power", "square")
            and node.args
        ):
            base = node.args[0]
            degree = node.args[1] if len(node.args) > 1 else ast.Constant(2)
        else:
            continue
        if not (isinstance(degree, ast.Constant) and isinstance(degree.value, int | float)):
            continue
        centred = any(
            isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) for sub in ast.walk(base)
        )
        if degree.value >= 2 and not centred:
            found.append(ast.unparse(node))
    return found


def levels_in_place(formula: str) -> dict[str, list[Any]]:
    """The columns a formula declares as factors in place, ``C(col, levels=[...])`` with a
    literal list, and those levels (none where the formula does not parse: the model's own
    parse refuses it).

    Examples
    --------
    >>> from dplong.formula.terms import levels_in_place
    >>> levels_in_place("y ~ x + C(site, levels=['north', 'south']) + C(arm, levels=[0, 1])")
    {'site': ['north', 'south'], 'arm': [0, 1]}
    >>> levels_in_place("y ~ C(Q('study arm'), levels=['control', 'treated'])")
    {'study arm': ['control', 'treated']}
    """
    try:
        trees = term_trees(formula)
    except FormulaError:
        return {}
    found: dict[str, list[Any]] = {}
    for node in (node for tree in trees for node in ast.walk(tree)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "C"):
            continue
        first = node.args[0] if node.args else None
        column = first.id if isinstance(first, ast.Name) else _quoted(first) if first else None
        if column is None:
            continue
        for keyword in node.keywords:
            try:
                levels = ast.literal_eval(keyword.value) if keyword.arg == "levels" else None
            except (ValueError, TypeError, RecursionError):  # {[]: 1} is no set of levels
                continue
            if isinstance(levels, list | tuple) and levels:
                found[column] = list(levels)
    return found


def with_levels_in_place(
    formula: str, levels: Mapping[str, Sequence[Any]] | None
) -> dict[str, Sequence[Any]]:
    """``levels`` and the factors the formula declares in place (:func:`levels_in_place`),
    ``levels`` winning: every declaration made-up rows must honour.

    Examples
    --------
    >>> from dplong.formula.terms import with_levels_in_place
    >>> with_levels_in_place("y ~ C(arm, levels=[0, 1])", {"site": ["a"]})
    {'arm': [0, 1], 'site': ['a']}
    """
    return {**levels_in_place(formula), **(levels or {})}


def text_levels(formula: str) -> dict[str, list[str]]:
    """The columns a formula declares as factors of text levels in place (:func:`
    levels_in_place`), and those levels: a reader that takes every other column as numbers
    (the command line's, :func:`dplong.io.typed`) reads these as the formula's levels.

    Examples
    --------
    >>> from dplong.formula.terms import text_levels
    >>> text_levels("y ~ x + C(site, levels=['north', 'south']) + C(arm, levels=[0, 1])")
    {'site': ['north', 'south']}
    """
    return {
        column: [str(level) for level in levels]
        for column, levels in levels_in_place(formula).items()
        if all(isinstance(level, str) for level in levels)
    }
