"""Declared factor levels: read from ``levels=`` and ``Categorical`` dtypes, validated, and the
columns coded on them, so that a factor's levels never come from the rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from patsy.categorical import _CategoricalBox

from dplong._validation import warn
from dplong.exceptions import DataHolderWarning, FormulaError, ParameterError

if TYPE_CHECKING:
    from dplong.formula.spec import DesignSpec

LevelsLike = Mapping[str, Sequence[Any]]

#: What becomes of a row whose value lies outside the declared levels: a fit's rows are dropped,
#: as rows with a missing value are; rows an analyst supplies to predict get NaN.
DROPPED = "they are dropped, as rows with a missing value are"
PREDICTED_NAN = "their predictions are NaN, as those of rows with a missing value are"
#: Set while real rows are evaluated (:func:`real_rows`), to what becomes of those outside the
#: declared levels: only then does their holder hear of them (the synthetic and probe rows the
#: spec is checked on hold stand-ins outside them by design).
_REAL_ROWS: ContextVar[str | None] = ContextVar("_REAL_ROWS", default=None)
#: Set while rows the data holder was already told of are read again (:func:`rows_told`: a
#: Dask frame's later passes, a model's fit of the rows it was built on), so that values
#: outside the declared levels, and rows left out, are not told again.
_TOLD: ContextVar[bool] = ContextVar("_TOLD", default=False)


@contextmanager
def real_rows(fate: str = DROPPED) -> Iterator[None]:
    """Real rows are being evaluated within (the data's own, or rows an analyst supplies to
    predict): :func:`_coded` warns their holder of values outside the declared levels, and
    of their ``fate`` (:data:`DROPPED`, :data:`PREDICTED_NAN`).

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> from dplong.formula.levels import _coded, real_rows
    >>> site = pd.Series(["a", "z"], name="site")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = _coded(site, ("a", "b"))          # a stand-in row: nothing said
    ...     with real_rows():
    ...         _ = _coded(site, ("a", "b"))      # the data's own: the holder hears of 'z'
    >>> [str(w.message)[:46] for w in caught]
    ["rows of 'site' hold values not among its decla"]
    """
    token = _REAL_ROWS.set(fate)
    try:
        yield
    finally:
        _REAL_ROWS.reset(token)


@contextmanager
def rows_told() -> Iterator[None]:
    """The data's own rows are read again within (a later pass over a Dask frame, in one of
    its tasks: a context variable, safe in threads): :func:`_coded` does not warn again of
    values outside the declared levels.

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> from dplong.formula.levels import _coded, real_rows, rows_told
    >>> site = pd.Series(["a", "z"], name="site")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with rows_told(), real_rows():
    ...         _ = _coded(site, ("a", "b"))
    >>> caught
    []
    """
    token = _TOLD.set(True)
    try:
        yield
    finally:
        _TOLD.reset(token)


def _declared_levels(
    dtypes: Mapping[str, Any], levels: LevelsLike | None, read: tuple[str, ...]
) -> dict[str, tuple[Any, ...]]:
    """Levels of the columns the formula ``read``s that declare them: ``Categorical`` dtypes,
    then ``levels=``, which must name nothing else (levels of another column, the user ids'
    included, would be ignored: refused)."""
    declared = {
        c: tuple(d.categories)
        for c, d in dtypes.items()
        if c in read and isinstance(d, pd.CategoricalDtype)
    }
    if levels is None:
        return declared
    if not isinstance(levels, Mapping):
        raise ParameterError(
            "levels must be a mapping from column to its levels, e.g. "
            f"levels={{'site': ['north', 'south']}}; got {type(levels).__name__}"
        )
    unused = [str(column) for column in levels if column not in read]
    if unused:
        raise FormulaError(
            f"levels names {unused}, which the formula does not read; it reads {list(read)}"
        )
    for column, values in levels.items():
        declared[column] = _level_tuple(values, f"levels[{column!r}]", dtypes[column])
    return declared


def _level_tuple(values: Any, name: str, dtype: Any) -> tuple[Any, ...]:
    """Validated declared levels: a non-empty sequence of distinct, non-missing values of the
    column's kind (numbers for a numeric column, whole ones for an integer column, True and
    False for a boolean one, text for a text column)."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray | pd.Index):
        raise ParameterError(f"{name} must be a list of levels, e.g. ['a', 'b'], got {values!r}")
    found = tuple(values.tolist() if isinstance(values, np.ndarray | pd.Index) else values)
    try:
        distinct = len(set(found)) == len(found)
    except TypeError:
        distinct = False
    if not found or not distinct or any(np.ndim(v) != 0 or pd.isna(v) for v in found):
        raise ParameterError(
            f"{name} must be a non-empty list of distinct, non-missing levels, got {values!r}"
        )
    boolean = pd.api.types.is_bool_dtype(dtype)
    numeric = pd.api.types.is_numeric_dtype(dtype) and not boolean
    # levels a column of its dtype can never hold would drop every row: 0/1 or text for a
    # True/False column, a fraction for an integer one (the schema is public)
    whole = not pd.api.types.is_integer_dtype(dtype) or all(
        isinstance(v, int | np.integer) or (isinstance(v, float | np.floating) and v.is_integer())
        for v in found
    )
    if (
        (numeric and not (all(isinstance(v, int | float | np.number) for v in found) and whole))
        or (boolean and not all(isinstance(v, bool | np.bool_) for v in found))
        or (isinstance(dtype, pd.StringDtype) and not all(isinstance(v, str) for v in found))
    ):
        example = ": True and False" if boolean else ": whole numbers" if not whole else ""
        raise ParameterError(
            f"{name} must hold values like those of the column (dtype {dtype}{example}); "
            f"got {values!r}"
        )
    return found


def matched_levels(levels: Sequence[Any], values: Any) -> NDArray[np.intp]:
    """Each value's position among the declared ``levels`` (-1: none), matched on its own by
    Python's equality: pandas picks how to match from the whole column (or a partition's
    categories), so one user's value would decide another's match (audits).

    Examples
    --------
    >>> from dplong.formula.levels import matched_levels
    >>> matched_levels(["a", "b"], ["b", 5, "a", None]).tolist()
    [1, -1, 0, -1]
    """
    index = pd.Index(np.asarray(values, dtype=object), dtype=object)
    positions: NDArray[np.intp] = pd.Index(list(levels), dtype=object).get_indexer(index)
    return positions


def _coded(values: Any, levels: tuple[Any, ...]) -> Any:
    """``values`` as a pandas Categorical with exactly the declared categories; a value outside
    them becomes missing (vectorised: pandas' codes, never patsy's loop over the rows), and on
    the data's own rows (:func:`real_rows`) the data holder is warned
    (:class:`~dplong.exceptions.DataHolderWarning`, never the results): rows dropped for a
    level left out of the declaration are most often a slip in it."""
    dtype = pd.CategoricalDtype(list(levels))
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        if tuple(values.dtype.categories) == levels and not values.dtype.ordered:
            return values
        source = pd.Categorical(values)
        # matched as objects, category by category: a Dask partition's own categories typed
        # the match (a user's 1 matched True where the partition's categories were [1, 'a']
        # and not where they were [0, 1], an audit)
        recode = np.append(matched_levels(levels, source.categories), -1)
        codes = recode[source.codes]  # code -1 (missing) picks the appended -1
    elif getattr(values, "dtype", None) == np.dtype(object):
        # a column of Python objects is matched value by value (Python's equality): pandas
        # picks how to match from the whole column, and a user's True matched a level 1
        # only where some other row held a number (an audit)
        codes = matched_levels(levels, values)
    else:
        codes = pd.Index(levels).get_indexer(values)
    fate = _REAL_ROWS.get()
    if fate is not None and not _TOLD.get():
        warn_outside_levels(values, codes, levels, fate)
    coded = pd.Categorical.from_codes(codes, dtype=dtype)
    if isinstance(values, pd.Series):
        return pd.Series(coded, index=values.index, name=values.name)
    return coded


def warn_outside_levels(
    values: Any, codes: NDArray[np.intp], levels: tuple[Any, ...], fate: str = DROPPED
) -> None:
    """Warn the data holder (:class:`~dplong.exceptions.DataHolderWarning`, never the results)
    of the rows whose value is not among the declared ``levels`` (their ``codes`` -1, the value
    not missing), and their ``fate``: a level left out of the declaration is most often a slip
    in it. A factor of a formula (:func:`_coded`) and a mean's ``by=`` grouping alike.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, pandas as pd
    >>> from dplong.formula.levels import warn_outside_levels
    >>> arm = pd.Series([0, 1, 2, None], name="arm")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_outside_levels(arm, np.array([0, 1, -1, -1]), (0, 1))
    >>> str(caught[0].message)[:45]
    "rows of 'arm' hold values not among its decla"
    """
    outside = (codes < 0) & np.asarray(pd.notna(values), dtype=bool)
    if not outside.any():
        return
    name = getattr(values, "name", None)
    example = np.asarray(values, dtype=object)[np.argmax(outside)]
    warn(
        f"rows of {name!r} hold values not among its declared levels (e.g. {example!r}; "
        f"declared: {list(levels)}): {fate}. "
        "Declare every level the study allows (dplong.exceptions.DataHolderWarning).",
        DataHolderWarning,
    )


def _canonical(values: pd.Series, levels: tuple[Any, ...] | None) -> Any:
    """One column as patsy reads it: declared factors (and nullable booleans) coded on their
    levels, nullable numbers and numpy integers as float64 (NaN for missing), nullable text
    with NaN instead of pd.NA, dates and durations in microseconds. A term's arithmetic is
    then real arithmetic: on a numpy integer column it wraps (a uint8 column's ``I(u - 10)``
    is 251 at 5, and ``I(n**2)`` wraps past 2^63), which moved a slope from 0.035 to -0.0002
    without a word."""
    dtype = values.dtype
    if levels is not None:
        return _coded(values, levels)
    if isinstance(dtype, pd.BooleanDtype):
        return _coded(values, (False, True))
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_numeric_dtype(dtype):
        return pd.Series(
            values.to_numpy(np.float64, na_value=np.nan), index=values.index, name=values.name
        )
    if isinstance(dtype, pd.StringDtype) and dtype.na_value is pd.NA:
        return values.astype(object).where(values.notna(), np.nan)
    if pd.api.types.is_object_dtype(dtype):
        # one missing value, whatever its kind (None, pd.NA, NaN): a term treats them alike,
        # and the failing rows' retry groups them as one (a user's pd.NA had failed
        # astype(bool) for another user's NaN, an audit)
        return values.where(values.notna(), np.nan)
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        return values.astype(np.float64)
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        return _microseconds(values)
    return values


def _microseconds(values: pd.Series) -> pd.Series:
    """A date or duration column in microseconds, each cell on its own: its finer digits cut,
    a cell beyond the unit's range (about 290,000 years either side of 1970) missing. pandas
    stores a column in the finest unit any of its cells asks for, so one person's nanosecond
    stamp had put every person's dates in nanoseconds, where a constant centuries away
    overflows (an audit): the unit must not depend on the rows."""
    unit = values.dt.unit
    if unit in ("s", "ms"):
        largest = np.iinfo(np.int64).max // {"s": 1_000_000, "ms": 1_000}[unit]
        values = values.where(np.abs(values.array.asi8) <= largest)  # NaT's int is out too
    in_us: pd.Series = values.dt.as_unit("us")  # from ns: floored, as the readers cut digits
    return in_us


def _public_levels(value: Any) -> tuple[Any, ...] | None:
    """The levels a categorical factor value carries by declaration, or None when patsy would
    take them from the values (then they are private)."""
    if isinstance(value, _CategoricalBox):
        if value.levels is not None:
            return tuple(value.levels)
        value = value.data
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, pd.CategoricalDtype):
        return tuple(dtype.categories)
    if np.asarray(value).dtype == np.bool_:
        return (False, True)
    return None


def warn_levels_from_values(
    spec: DesignSpec, dtypes: pd.Series, codes: Callable[[str], NDArray[np.integer]]
) -> None:
    """Warn the data holder (never the results) of a factor whose declared levels are the
    ``Categorical`` dtype's categories and every one of them is present in the rows: the
    common ``astype("category")`` takes the categories from the values, and then the labels
    publish which levels the data hold. ``codes(column)`` gives the column's category codes
    (-1: missing) — in memory the array, on Dask the codes each partition holds."""
    for column in spec.dtype_levels:
        dtype = dtypes[column]
        if isinstance(dtype, pd.CategoricalDtype):
            warn_categories_present(column, dtype, codes(column))


def warn_categories_present(
    column: str, dtype: pd.CategoricalDtype, codes: NDArray[np.integer]
) -> None:
    """Warn the data holder (never the results) where every category of a ``Categorical``
    column's dtype, taken as its declared levels, is among its ``codes`` (-1: missing): as
    ``astype("category")`` makes them, from the values, and then the labels publish which
    levels the data hold (:func:`warn_levels_from_values`; a mean's ``by=`` grouping).

    Examples
    --------
    >>> import warnings, numpy as np, pandas as pd
    >>> from dplong.formula.levels import warn_categories_present
    >>> site = pd.Series(["a", "b", "a"]).astype("category")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_categories_present("site", site.dtype, site.cat.codes.to_numpy())
    >>> str(caught[0].message)[:50]
    "the categories of 'site' are exactly the values pr"
    """
    present = np.unique(codes)
    if len(dtype.categories) and np.count_nonzero(present >= 0) == len(dtype.categories):
        warn(
            f"the categories of {column!r} are exactly the values present in the data, as "
            "astype('category') makes them; they are taken as declared levels and label "
            "the results. If they were not fixed before seeing the data, declare every "
            f"level the study allows: levels={{{column!r}: [...]}} or "
            f"pd.CategoricalDtype([...]) (dplong.exceptions.DataHolderWarning)",
            DataHolderWarning,
        )
