"""Argument checks shared by every entry point: one place, one wording."""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn, ParamSpec, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dplong.exceptions import (
    ArgumentError,
    DataError,
    DplongWarning,
    ParameterError,
    PrivacyParameterError,
)

RandomState = int | np.random.Generator | None

_P = ParamSpec("_P")
_R = TypeVar("_R")


def checked_call(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Refuse a call of an entry point whose arguments do not fit its signature with an
    :class:`~dplong.exceptions.ArgumentError`, before the call: Python's own refusal, named by
    the function, a misspelt keyword with the nearest one it takes, and an option given by
    position told that options are keywords.

    Examples
    --------
    >>> from dplong._validation import checked_call
    >>> @checked_call
    ... def fit(data, *, epsilon, delta=None):
    ...     return epsilon
    >>> fit([1.0], epsilon=1.0)
    1.0
    >>> fit([1.0], epsilom=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ArgumentError: fit(): got an unexpected keyword argument 'epsilom' (did \
you mean 'epsilon' for 'epsilom'?); it takes data, epsilon, delta
    """
    signature = inspect.signature(func)
    parameters = signature.parameters.values()
    named = [
        p.name
        for p in parameters
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")
    ]
    open_keywords = any(p.kind is p.VAR_KEYWORD for p in parameters)

    method = "." in func.__qualname__.rpartition("<locals>.")[2]  # a class's, not a closure's

    def called(args: tuple[Any, ...]) -> str:
        """The name the caller used: a method's class is the instance's or the class's own
        (an inherited ``from_formula`` is ``BetweenOLS``'s, not ``PooledOLS``')."""
        if not (method and args):
            return func.__qualname__
        owner = args[0] if isinstance(args[0], type) else type(args[0])
        return f"{owner.__name__}.{func.__name__}"

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        # an unknown keyword first: Python's binding names a required one missing before it
        unknown = [] if open_keywords else [k for k in kwargs if k not in signature.parameters]
        if not unknown:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as err:
                positional = "positional" in str(err)
                refuse_arguments(
                    called(args),
                    str(err) + ("; options are keywords (name=value)" if positional else ""),
                    [k for k in kwargs if k not in named],
                    named,
                )
            return func(*args, **kwargs)
        refuse_arguments(
            called(args),
            "got an unexpected keyword argument",
            unknown,
            named,
            _elsewhere(args[0], func.__name__, unknown) if method and args else None,
        )

    return wrapper


#: A model's two calls, each the other's sibling: ``from_formula`` takes the data's options
#: (public facts such as bounds and levels), ``fit`` the release's. An option given to one that
#: the other takes is named with that call, as a misspelling is with the nearest option.
_SIBLINGS = {"fit": "from_formula", "from_formula": "fit"}


def _elsewhere(owner: Any, called: str, unknown: list[str]) -> dict[str, str]:
    """The ``unknown`` keywords of a model's ``called`` method that its sibling call
    (:data:`_SIBLINGS`) takes, each with that call (``{"bounds": "PooledOLS.from_formula()"}``)."""
    sibling = _SIBLINGS.get(called)
    owner = owner if isinstance(owner, type) else type(owner)
    other = getattr(owner, sibling, None) if sibling else None
    if other is None:
        return {}
    taken = inspect.signature(other).parameters
    return {k: f"{owner.__name__}.{sibling}()" for k in unknown if k in taken}


def refuse_arguments(
    function: str,
    refusal: str,
    unknown: list[str],
    named: list[str],
    elsewhere: Mapping[str, str] | None = None,
) -> NoReturn:
    """Raise the :class:`~dplong.exceptions.ArgumentError` of a call to ``function`` that
    ``refusal`` describes: the ``unknown`` keywords named (after a refusal ending in
    "argument" or ":"), those another call takes with that call (``elsewhere``), and the others
    with the nearest of the ``named`` ones it takes."""
    elsewhere = elsewhere or {}
    placed = [f"{k!r} is an option of {call}" for k, call in elsewhere.items()]
    close = [
        f"{m!r} for {k!r}"
        for k in unknown
        if k not in elsewhere
        for m in difflib.get_close_matches(k, named, n=1)
    ]
    raise ArgumentError(
        f"{function}(): {refusal}"
        + (f" {', '.join(map(repr, unknown))}" if refusal.endswith(("argument", ":")) else "")
        + (f" ({'; '.join(placed)})" if placed else "")
        + (f" (did you mean {', '.join(close)}?)" if close else "")
        + (f"; it takes {', '.join(named)}" if named else "")
    )


def not_columns(said: str, names: Sequence[Any], columns: Iterable[Any], of: str) -> str:
    """The words of a refusal of ``names`` (said as ``said``: the caller's argument, e.g.
    ``"--groups 'person'"``) that are not columns of ``of``, offering the columns closest to
    them. Never a list of every column: a CSV file written without a header line has its first
    row's cells for names (a person's id, birth date, diagnosis), and those are no one's to see.

    Examples
    --------
    >>> from dplong._validation import not_columns
    >>> not_columns("groups='person'", ["person"], ["persons", "y"], "the data")
    "groups='person' is not a column of the data (did you mean 'persons'?)"
    >>> not_columns("'sbp', 'dbp'", ["sbp", "dbp"], ["48213", "1961-04-02", "HIV+"], "DATA")
    "'sbp', 'dbp' are not columns of DATA"
    """
    by_text = {str(column): column for column in columns}
    close = dict.fromkeys(
        by_text[match]
        for name in names
        for match in difflib.get_close_matches(str(name), list(by_text), n=3)
    )
    return f"{said} {'is not a column' if len(names) == 1 else 'are not columns'} of {of}" + (
        f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    )


def check_random_state(random_state: RandomState, rng: RandomState = None) -> np.random.Generator:
    """Return a Generator from ``random_state`` or ``rng`` (its numpy SPEC 7 name; every entry
    point takes both, at most one given); ``None`` draws fresh OS entropy (the only choice for a
    release)."""
    if random_state is not None and rng is not None:
        raise ParameterError("give the generator as random_state or as rng, not both")
    name, given = ("rng", rng) if rng is not None else ("random_state", random_state)
    if isinstance(given, (int, np.integer)) and not isinstance(given, bool):
        if given < 0:
            raise ParameterError(f"{name} must be a non-negative int, got {given}")
        return np.random.default_rng(int(given))
    if given is None:
        return np.random.default_rng()
    if isinstance(given, np.random.Generator):
        return given
    raise ParameterError(
        f"{name} must be None, an int or a numpy.random.Generator, got {type(given).__name__}"
    )


def listed(items: Sequence[str], last: str = "and") -> str:
    """``a, b and c`` (``last``: the word before the last item), for messages.

    Examples
    --------
    >>> from dplong._validation import listed
    >>> listed(["--seed"]), listed(["a", "b", "c"]), listed(["x", "y"], "or")
    ('--seed', 'a, b and c', 'x or y')
    """
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {last} " + items[-1]


def describe(value: Any) -> str:
    """A short description of an argument (an array is not printed in full)."""
    if isinstance(value, np.ndarray | list | tuple) and np.size(value) > 8:
        return f"{type(value).__name__} of {np.size(value)} values"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def real_number(
    value: Any, name: str, error: type[Exception] = ParameterError, expected: str = "a number"
) -> float:
    """``value`` as a float, refusing what only looks like a number: a string (``"1"``) or a
    bool (``True``) is never coerced, so a typo in a configuration cannot change a release."""
    if isinstance(value, str | bytes | bool | np.bool_):
        raise error(f"{name} must be {expected}, got {type(value).__name__} {describe(value)}")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{name} must be {expected}, got {describe(value)}") from None


#: The largest ε taken: the budget's composition multiplies ε by the Rényi orders and squares
#: it, which overflows near the doubles' end (``--epsilon 1e308`` flooded standard error with
#: numpy's overflow warnings, an audit); at 1e300 the noise is long gone (fits at 1e9 are
#: already noise-free to many digits).
LARGEST_EPSILON = 1e300


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    expected = "a positive finite number"
    value = real_number(epsilon, name, PrivacyParameterError, expected)
    if not (math.isfinite(value) and value > 0):
        raise PrivacyParameterError(f"{name} must be {expected}, got {describe(epsilon)}")
    if value > LARGEST_EPSILON:
        raise PrivacyParameterError(
            f"{name} must be at most {LARGEST_EPSILON:g} (larger overflows the budget's "
            f"arithmetic; the noise is negligible long before), got {describe(epsilon)}"
        )
    return value


def check_delta(delta: Any, name: str = "delta") -> float:
    value = real_number(delta, name, PrivacyParameterError, "a number in (0, 1)")
    if not (0.0 < value < 1.0):
        raise PrivacyParameterError(f"{name} must be a number in (0, 1), got {describe(delta)}")
    return value


def check_fraction(value: Any, name: str) -> float:
    share = real_number(value, name, ParameterError, "a number in (0, 1)")
    if not (0.0 < share < 1.0):
        raise ParameterError(f"{name} must be a number in (0, 1), got {describe(value)}")
    return share


#: The largest stated scale taken where dplong squares it (a reported variance, a variance
#: component's scale): a double's square overflows from about 1.3e154 (1e300 crashed fits
#: after their noise, an audit); 1e150 is the round bound.
LARGEST_SQUARED_SCALE = 1e150

#: The accepted α of intervals and error bounds: their quantile level 1 - α/2 must be a double
#: strictly between 1/2 and 1 (for α up to 2**-53 it rounds to 1 and the quantile is infinite:
#: the solver failed after the fit's noise, an audit; near α = 1 it rounds to 1/2). Every
#: model's summary and error bounds were checked at 1.2e-16 and at 1 - 1e-15, and failed at
#: 1e-16 and 1 - 2.2e-16; the round bounds keep a margin.
ALPHA_RANGE = (1e-15, 1.0 - 1e-15)
#: What an α must be, in a refusal's words.
ALPHA_EXPECTED = "a number from 1e-15 to 1 - 1e-15"


def check_alpha(value: Any, name: str = "alpha") -> float:
    """``value`` as an α in :data:`ALPHA_RANGE`, or a :class:`ParameterError` naming ``name``.

    Examples
    --------
    >>> from dplong._validation import check_alpha
    >>> check_alpha(0.05)
    0.05
    >>> check_alpha(1e-16)
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: alpha must be a number from 1e-15 to 1 - 1e-15, got 1e-16
    """
    alpha = real_number(value, name, ParameterError, ALPHA_EXPECTED)
    low, high = ALPHA_RANGE
    if not low <= alpha <= high:
        raise ParameterError(f"{name} must be {ALPHA_EXPECTED}, got {describe(value)}")
    return alpha


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ParameterError(f"{name} must be one of {allowed}; got {value!r}")
    return str(value)


def as_columns(array: NDArray[np.float64], name: str, *, rows: str = "n") -> NDArray[np.float64]:
    """Return ``array`` as a (rows, d) matrix: 1-D input becomes one column, any other shape
    but 2-D is refused (``rows`` names the rows in the refusal: users ``n``, or ``rows``)."""
    if array.ndim == 1:
        return array[:, None]
    if array.ndim != 2:
        raise DataError(f"{name} must be 1-D or 2-D ({rows} x d), got {array.ndim} dimensions")
    return array


def as_matrix(values: ArrayLike, name: str = "values") -> NDArray[np.float64]:
    """Return ``values`` as a float (n, d) matrix, NaN and ±inf kept; 1-D input becomes one
    column, and an empty matrix is refused."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"{name} must be numeric; could not convert it to floating point") from None
    array = as_columns(array, name)
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise DataError(f"{name} is empty (shape {array.shape})")
    return array


def per_column(value: Any, d: int, name: str, *, positive: bool = True) -> NDArray[np.float64]:
    """Broadcast a scalar or length-d array to d finite (positive) floats; strings and bools
    are refused, not coerced."""
    raw = np.asarray(value) if not isinstance(value, np.ndarray) else value
    if raw.dtype.kind not in "iuf":
        raise ParameterError(
            f"{name} must be a number or an array of {d} numbers, got {describe(value)}"
        )
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number or an array of {d} numbers") from None
    if array.ndim == 0:
        array = np.full(d, float(array))
    if array.shape != (d,):
        raise ParameterError(
            f"{name} must be a number or an array of {d} numbers, got shape {array.shape}"
        )
    if not np.isfinite(array).all() or (positive and not (array > 0).all()):
        kind = "positive finite" if positive else "finite"
        raise ParameterError(f"{name} must be {kind}, got {describe(array.tolist())}")
    return array


def warn(message: str, category: type[DplongWarning] = DplongWarning) -> None:
    """Issue a :class:`DplongWarning` (or ``category``) pointing at the first caller outside
    dplong."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("dplong"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
