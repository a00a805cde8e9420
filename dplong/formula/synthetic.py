"""Rows made from the schema and the declared levels alone, never from the data: the two
one-row frames the spec is built from, and the probe rows its row-by-row check runs on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dplong.formula.levels import _canonical

#: Stand-ins for the values of a text column in the synthetic rows the spec is built from: if a
#: factor's levels are taken from them, they came from the values, not from a declaration.
_STAND_INS = ("<undeclared value 1>", "<undeclared value 2>")


def _synthetic_rows(
    dtypes: Mapping[str, Any], declared: Mapping[str, tuple[Any, ...]]
) -> tuple[dict[str, pd.Series], dict[str, pd.Series]]:
    """Two one-row frames made from the schema and the declared levels only, with different
    values (first and last level; 1 and 2; two dates; two stand-in texts), canonical as real
    rows would be: what patsy learns from them is public, and a term that learns anything
    else shows it by differing between them."""
    columns = {
        c: _canonical(_two_values(d, declared.get(c)), declared.get(c)) for c, d in dtypes.items()
    }
    return {c: s.iloc[:1] for c, s in columns.items()}, {c: s.iloc[1:] for c, s in columns.items()}


def _two_values(dtype: Any, levels: tuple[Any, ...] | None) -> Any:
    """Two distinct values of ``dtype`` (a Series), the first and last levels if declared."""
    if levels is not None:
        return pd.Series([levels[0], levels[-1]], dtype=object)
    if pd.api.types.is_bool_dtype(dtype):
        return pd.Series([False, True], dtype=dtype)
    if isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype):
        return pd.Series(
            pd.date_range("2000-01-01", periods=2, tz=getattr(dtype, "tz", None))
        ).astype(dtype)
    if pd.api.types.is_timedelta64_dtype(dtype):
        return pd.Series(pd.to_timedelta([1, 2], unit="D")).astype(dtype)
    if isinstance(dtype, pd.PeriodDtype):
        return pd.Series(pd.period_range("2000-01-01", periods=2, freq=dtype.freq))
    if pd.api.types.is_numeric_dtype(dtype):
        return pd.Series([1, 2]).astype(dtype)
    try:
        return pd.Series(list(_STAND_INS), dtype=dtype)
    except (TypeError, ValueError):
        return pd.Series(list(_STAND_INS), dtype=object)


#: Values of a numeric probe column (:func:`_probe_rows`): missing values between others, so
#: that a fill from the neighbours, the mean or the count shows; a negative and a huge value,
#: so that a comparison with the data's range does.
_PROBE_NUMBERS = (1.0, np.nan, 2.0, np.nan, -3.0, 1e15)
_PROBE_MISSING = np.isnan(_PROBE_NUMBERS)


def _probe_rows(
    dtypes: Mapping[str, Any], declared: Mapping[str, tuple[Any, ...]]
) -> dict[str, pd.Series]:
    """Synthetic rows made from the schema and the declared levels, missing values included
    where the dtype can hold them, canonical as real rows would be (indexed 0, 1, ...)."""
    return {
        c: _canonical(_probe_values(d, declared.get(c)), declared.get(c)) for c, d in dtypes.items()
    }


def _probe_values(dtype: Any, levels: tuple[Any, ...] | None) -> Any:
    """Probe values of one column: those of :data:`_PROBE_NUMBERS` in its kind."""
    size = len(_PROBE_NUMBERS)
    if levels is not None:
        cycle = [levels[i % len(levels)] for i in range(size)]
        return pd.Series(cycle, dtype=object).mask(_PROBE_MISSING)
    if pd.api.types.is_bool_dtype(dtype):
        values = pd.Series([i % 3 == 1 for i in range(size)])
        return values if dtype == np.dtype(bool) else values.astype(dtype).mask(_PROBE_MISSING)
    if pd.api.types.is_integer_dtype(dtype):  # the largest value the dtype holds, halved
        big = np.iinfo(getattr(dtype, "numpy_dtype", dtype)).max // 2
        integers = pd.Series([1, 2, 3, 4, 5, big]).astype(dtype)
        nullable = isinstance(dtype, pd.api.extensions.ExtensionDtype)
        return integers.mask(_PROBE_MISSING) if nullable else integers
    if pd.api.types.is_numeric_dtype(dtype):  # the huge one within the dtype (float16: 65504)
        largest = float(np.finfo(getattr(dtype, "numpy_dtype", dtype)).max) / 2.0
        return pd.Series(np.minimum(_PROBE_NUMBERS, largest)).astype(dtype)
    pair = _two_values(dtype, None)
    cycle = pair.iloc[[i % 2 for i in range(size)]].reset_index(drop=True)
    if cycle.dtype == object:
        return cycle.where(~_PROBE_MISSING, None)
    return cycle.mask(_PROBE_MISSING)
