"""The users of the data: the column of their ids (or of the rows' time), their codes, and the
refusal of data without users."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong._validation import not_columns, warn
from dplong.exceptions import DataError, DataHolderWarning, FormulaError, InsufficientUsersError

GroupsLike = str | ArrayLike


#: The refusal of ids that are no ids (lists, dicts): never echoed, they are the data.
UNHASHABLE_IDS = "groups must be hashable user ids (numbers or text), got unhashable values"


def exact_ids(values: Any) -> NDArray[Any]:
    """``values`` (a column, an array or a sequence of ids) as a numpy array holding each id
    exactly: integers of a nullable type with a missing id, or categories of integers, as
    Python ints and None, where pandas' own ``to_numpy`` makes them doubles, merging ids above
    2**53 that differ in their last digits (one missing id among 40 such users left 21:
    audits); else as numpy holds them.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula.users import exact_ids
    >>> exact_ids(pd.Series([2**53 + 1, 2**53 + 2, None], dtype="Int64"))
    array([9007199254740993, 9007199254740994, None], dtype=object)
    >>> exact_ids(pd.Categorical([2**53 + 1, None, 2**53 + 2]))   # a category of ids too
    array([9007199254740993, None, 9007199254740994], dtype=object)
    """
    if isinstance(values, pd.Series | pd.Index | pd.api.extensions.ExtensionArray):
        dtype = values.dtype
        if isinstance(dtype, pd.CategoricalDtype) and pd.api.types.is_integer_dtype(
            dtype.categories.dtype
        ):  # each category as it is stored
            codes = np.asarray(pd.Categorical(values).codes)
            picked = exact_ids(dtype.categories).astype(object)[np.maximum(codes, 0)]
            picked[codes < 0] = None
            return picked
        if pd.api.types.is_integer_dtype(dtype) and bool(pd.isna(values).any()):
            return np.asarray(values.to_numpy(dtype=object, na_value=None))  # type: ignore[arg-type,call-overload]
        return np.asarray(values.to_numpy())
    return np.asarray(values)


def user_codes(given: ArrayLike) -> tuple[NDArray[np.intp], NDArray[Any]]:
    """Codes 0..n-1 of the user ids in first-appearance order (-1 for a missing id: NaN, ±inf,
    None or ``pd.NA``), and the n distinct ids in that order; the ids ``given`` as
    :func:`exact_ids` reads them.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.formula import user_codes
    >>> user_codes(np.array(["b", None, "a", "b"], dtype=object))
    (array([ 0, -1,  1,  0]), array(['b', 'a'], dtype=object))
    >>> user_codes(np.array([7.0, np.inf, 8.0, -np.inf]))[0]
    array([ 0, -1,  1, -1])
    """
    ids = exact_ids(given)
    infinite = pd.Series(ids).isin([np.inf, -np.inf]).to_numpy()
    if infinite.any():  # missing, as NaN is (not one pseudo-user pooling many persons' rows)
        ids = ids.copy()
        ids[infinite] = None if ids.dtype == object else np.nan
    try:
        codes, uniques = pd.factorize(ids, sort=False)
    except TypeError:  # lists or dicts as ids: never echoed, they are the data
        raise DataError(UNHASHABLE_IDS) from None
    codes, uniques = _text_twins_merged(codes, np.asarray(uniques))
    return codes.astype(np.intp, copy=False), uniques


def _id_texts(ids: NDArray[Any]) -> pd.Index:
    """Each id as text on its own, a whole float or a flag as the integer it equals: pandas
    takes 1, 1.0 and True for one id and keeps whichever came first, whose text (``1.0`` or
    ``1``) decided whether ``"1"`` was the same user, so the rows' order set n (an audit)."""

    def text(value: Any) -> str:
        whole = isinstance(value, bool | np.bool_) or (
            isinstance(value, float | np.floating) and float(value).is_integer()
        )
        return str(int(value)) if whole else str(value)

    texts: pd.Index = pd.Index(ids).map(text)
    return texts


def _text_twins_merged(
    codes: NDArray[np.intp], uniques: NDArray[Any]
) -> tuple[NDArray[np.intp], NDArray[Any]]:
    """Ids that read the same as text (``13`` and ``"13"``) taken as one user, the data holder
    told (never the results): one person whose id is stored as a number in some rows and as
    text in others would otherwise count as two users, each with the whole budget, and be
    protected at twice the stated ε. Merged rather than refused: one row's id never decides
    whether a fit runs. The user keeps the id first seen.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from dplong.formula.users import _text_twins_merged
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     _text_twins_merged(np.array([0, 1, 2, -1]), np.array([13, "a", "13"], dtype=object))
    (array([ 0,  1,  0, -1]), array([13, 'a'], dtype=object))
    """
    if uniques.dtype != object or uniques.size < 2:
        return codes, uniques
    if pd.api.types.infer_dtype(uniques, skipna=True) not in ("mixed", "mixed-integer"):
        return codes, uniques  # one type (text, as the command line reads a CSV's ids)
    text = _id_texts(uniques)
    if text.is_unique:
        return codes, uniques
    warn(
        "groups holds ids that differ only in their type (a number and the same text, as 13 "
        "and '13'): each such pair is taken as one user; store the ids as one type (on your "
        "screen only: dplong.exceptions.DataHolderWarning).",
        DataHolderWarning,
    )
    merged, _ = pd.factorize(text, sort=False)  # first appearance kept
    first = np.unique(merged, return_index=True)[1]
    return np.where(codes >= 0, merged[np.maximum(codes, 0)], -1), uniques[first]


def check_id_types(ids: NDArray[Any]) -> None:
    """Refuse distinct user ids that read the same as text (``13`` and ``"13"``) where they
    cannot be merged as in memory (:func:`user_codes`): across a Dask frame's partitions, whose
    sums are shuffled by id, one person stored as a number in one file and as text in another
    would count as two users, each with the whole budget, and be protected at twice the stated
    ε. (A property of the files' column types; the command line's plan refuses them too.)

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.formula.users import check_id_types
    >>> check_id_types(np.array([13, 14.0, "a"], dtype=object))   # distinct as text: fine
    >>> check_id_types(np.array([13, "13"], dtype=object))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: groups holds ids that differ only in their type ...
    """
    if ids.dtype != object or ids.size < 2:
        return
    if pd.api.types.infer_dtype(ids, skipna=True) not in ("mixed", "mixed-integer"):
        return  # one type (text, as the command line reads a CSV's ids): nothing to mix
    if not _id_texts(ids).is_unique:  # never echoed: the ids are the data
        raise DataError(
            "groups holds ids that differ only in their type (a number and the same text, as "
            "13 and '13'): one person would count as two users; store the ids as one type"
        )


def check_groups(groups: object, read: Iterable[str] = (), time: object = None) -> None:
    """Refuse a design without user ids, or whose ids are one of the columns the formula
    reads (``read``: an outcome or regressor taken for the ids makes every value a user of
    its own) or the ``time`` that orders each user's rows (every row of a user at one time).

    Examples
    --------
    >>> from dplong.formula import check_groups
    >>> check_groups(None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: groups is required: the column (or array) of user ids; ...
    >>> check_groups("y", read=("y", "x"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: groups='y' is a column the formula reads; groups names the ...
    """
    if groups is None:
        raise DataError(
            "groups is required: the column (or array) of user ids; every row "
            "must say which user it belongs to"
        )
    # a column's name, or the name of a Series given (``data["y"]``)
    name = groups if isinstance(groups, str) else getattr(groups, "name", None)
    if isinstance(name, str) and name in read:
        raise DataError(
            f"groups={name!r} is a column the formula reads; groups names the column of "
            "user ids (which user each row belongs to), which no model reads as an outcome "
            "or a regressor"
        )
    if isinstance(name, str) and name == time:
        raise DataError(
            f"time={name!r} is the column of user ids (groups); time names the column that "
            "orders each user's rows"
        )


def check_users(n: int, *, rows: int) -> None:
    """Refuse data without rows, or with fewer than 2 users (n is public).

    Examples
    --------
    >>> from dplong.formula import check_users
    >>> check_users(1, rows=4)
    Traceback (most recent call last):
    ...
    dplong.exceptions.InsufficientUsersError: the data hold 1 user; private estimation needs \
at least 2 users (and many more for useful accuracy)
    """
    if rows == 0:
        raise DataError("data has no rows")
    if n < 2:
        raise InsufficientUsersError(
            f"the data hold {n} user; private estimation needs at "
            "least 2 users (and many more for useful accuracy)"
        )


def check_unique_columns(columns: pd.Index, read: Iterable[object]) -> None:
    """Refuse data with several columns of a name that is read (a formula's input, the
    ``groups``, ``time`` or ``by`` column): which of them is meant is not the library's to
    guess. Entries of ``read`` that are not names (arrays of ids) are passed over.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import check_unique_columns
    >>> data = pd.DataFrame([[1, 2, 3]], columns=["id", "y", "id"])
    >>> check_unique_columns(data.columns, ["y"])
    >>> check_unique_columns(data.columns, ["y", "id"])
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: data has several columns named ['id']: rename them
    """
    names = [c for c in read if isinstance(c, str)]
    repeated = [c for c in dict.fromkeys(names) if int((columns == c).sum()) > 1]
    if repeated:
        raise DataError(f"data has several columns named {repeated}: rename them")


def check_index(value: Any, data: Any, name: str, of: str = "data") -> None:
    """Refuse a pandas Series ``value`` beside pandas ``data`` (a DataFrame or Series) on
    another index: numpy would pair them by position, and a shuffled or filtered one would
    give rows other users' ids or keys without a word.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula.users import check_index
    >>> y = pd.Series([0.0, 1.0, 2.0], index=[5, 6, 7])
    >>> check_index(pd.Series([1, 1, 2], index=[5, 6, 7]), y, "groups", "values")
    >>> check_index(pd.Series([1, 1, 2]), y, "groups", "values")
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: groups is a Series whose index is not the index of values: ...
    """
    if (
        isinstance(value, pd.Series)
        and isinstance(data, pd.Series | pd.DataFrame)
        and not value.index.equals(data.index)
    ):
        raise DataError(
            f"{name} is a Series whose index is not the index of {of}: its values would be "
            f"matched to the rows by position; give the column's name, or "
            f"{name}.reindex({of}.index)"
        )


def column_or_array(value: GroupsLike, data: pd.DataFrame, name: str) -> NDArray[Any]:
    """The column ``value`` of ``data``, or ``value`` itself as one entry per row: a pandas
    Series only on ``data``'s own index (matched by position, a shuffled or shifted one would
    give rows other users' ids without a word).

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import column_or_array
    >>> data = pd.DataFrame({"id": [1, 1, 2]})
    >>> column_or_array(data["id"].sample(frac=1, random_state=0), data, "groups")
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: groups is a Series whose index is not the index of data: ...
    """
    if isinstance(value, str):
        if value not in data.columns:
            raise FormulaError(not_columns(f"{name}={value!r}", [value], data.columns, "the data"))
        check_unique_columns(data.columns, [value])
        return exact_ids(data[value])
    check_index(value, data, name)
    array = exact_ids(value)
    if array.ndim != 1 or len(array) != len(data):
        raise DataError(
            f"{name} must be a column name or one value per row of data "
            f"({len(data)} rows), got shape {array.shape}"
        )
    return array
