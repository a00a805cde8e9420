"""Which rows miss a value: patsy's handling of missing values, recording instead of dropping."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray


class _MissingRows(patsy.NAAction):  # type: ignore[misc]  # patsy is untyped
    """patsy's NA handling that records which rows miss each factor's value (``masks``, in
    patsy's order) instead of dropping them, so that the caller drops them together with the
    rows of missing ids and non-finite values, in one copy. ``pd.NA`` counts as missing (patsy
    would ask ``bool(pd.NA)``), and the checks run on numpy arrays, not frames.
    """

    def __init__(self) -> None:
        super().__init__(on_NA="drop")
        self.masks: list[NDArray[np.bool_]] = []

    def is_categorical_NA(self, obj: Any) -> bool:
        return bool(pd.isna(obj)) if np.ndim(obj) == 0 else False

    def is_numerical_NA(self, arr: Any) -> NDArray[np.bool_]:
        values = np.asarray(arr)
        missing = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)
        return np.asarray(missing.any(axis=1) if missing.ndim > 1 else missing, dtype=bool)

    def handle_NA(self, values: list[Any], is_NAs: list[Any], origins: list[Any]) -> list[Any]:
        self.masks = [np.asarray(m, dtype=bool) for m in is_NAs]
        # patsy refuses to code a missing level (code -1): any valid code does, the row is
        # dropped; missing numbers stay NaN
        return [
            np.where(m, 0, v) if v.dtype.kind == "i" and m.any() else v
            for v, m in zip(values, self.masks, strict=True)
        ]
