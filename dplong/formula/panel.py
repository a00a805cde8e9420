"""The design of a panel: its rows grouped by user, and the order that groups them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.exceptions import DataError


@dataclass(frozen=True)
class PanelDesign:
    """Rows grouped by user (stable, then by ``time`` if given) with user codes 0..n-1.

    ``y`` and ``X`` are patsy's arrays as built (``X`` row-major), not copies, when the data
    already come grouped by user and no row is dropped; otherwise one reordered copy.

    Examples
    --------
    >>> import dplong
    >>> from dplong.formula import build_design
    >>> design = build_design("lwage ~ exper", dplong.datasets.load_wage_panel(), groups="nr")
    >>> design.n, design.columns, design.X.shape
    (545, ('Intercept', 'exper'), (4360, 2))
    """

    y: NDArray[np.float64]
    X: NDArray[np.float64]
    codes: NDArray[np.intp]
    n: int
    columns: tuple[str, ...]
    outcome: str
    formula: str


def _sort_key(times: NDArray[Any]) -> NDArray[Any]:
    """``time`` as lexsort can order it: numbers and dates as they are, anything else (text,
    nullable numbers with ``pd.NA``, dates with a time zone) by rank. Where a time is missing
    the key means nothing: those rows are dropped (:meth:`DesignSpec.by_user
    <dplong.formula.DesignSpec.by_user>`).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dplong.formula.panel import _sort_key
    >>> _sort_key(np.array(["b", "a", "c"], dtype=object))
    array([1, 0, 2])
    >>> _sort_key(np.array([{"week": 1}], dtype=object))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: time must hold values that can be ordered, of one kind ...
    """
    if times.dtype.kind in "biufmM":
        return times
    try:
        ranks: NDArray[np.intp] = pd.factorize(times, sort=True)[0]
    except TypeError:  # dicts, dates with and without a time zone: never echoed, they are data
        raise DataError(
            "time must hold values that can be ordered, of one kind (numbers, text, or dates "
            "all with or all without a time zone); got values that cannot be compared"
        ) from None
    return ranks


def _grouped(codes: NDArray[np.intp], time: NDArray[Any] | None) -> bool:
    """Whether the rows already come by user (then by ``time``): ``np.lexsort`` of the keys
    would return ``arange`` (it is stable), so the reorder and its copies can be skipped.

    Only numeric or datetime ``time`` is compared here (NaN/NaT compare False: lexsort then
    decides); any other ``time`` goes through ``np.lexsort``.
    """
    step = codes[1:] - codes[:-1]
    if time is None:
        return bool((step >= 0).all())
    if time.dtype.kind not in "biufmM":
        return False
    with np.errstate(invalid="ignore"):
        return bool(((step > 0) | ((step == 0) & (time[1:] >= time[:-1]))).all())
