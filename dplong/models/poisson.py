"""The panel Poisson mean: the average over users of each user's mean count per row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dplong._validation import warn
from dplong.dask_frames import is_dask
from dplong.exceptions import DataHolderWarning
from dplong.formula import GroupsLike
from dplong.models.command_line import CommandLineModel, register
from dplong.models.mean import ColumnMean

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["PoissonMean"]


class PoissonMean(ColumnMean):
    """Mean rate of a count outcome, ``"count ~ 1"``: each user's mean count per row (their
    rate, the maximum-likelihood estimate under a Poisson model) is their statistic.

    The release knows what counts are: their support starts at 0 (no interval is spent below
    it), and it assumes their user rates skewed with an exponential tail (which sets the radius
    and the clipping bias bound). The assumption is checked: where ``n ε`` affords the tail
    stage's private count, user rates far heavier (an overdispersed count, rates spread
    lognormally with σ = 1.5) mark the column heavy and widen its clip and bound, with a
    warning; rates only somewhat heavier than the exponential (lognormal with σ = 1) can stay
    under that bar, and where the count still finds more users far out than the exponential
    puts there, their bias bound is a Pareto tail's through the count (an assumption line says
    so; docs/accuracy.md); where no count is affordable, a note says the tail went unchecked.
    ``lower=`` or ``tail=`` given to ``fit``
    replace the model's (a stated tail is not checked); the local model and the paper's
    algorithms take neither. A negative count is not a count: its row is dropped like a
    missing value (in memory, the data holder is told how many, and of values that are not whole
    numbers, which are kept).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dplong.models.poisson import PoissonMean
    >>> rng = np.random.default_rng(0)
    >>> rates = rng.gamma(2.0, 1.5, 3000)                   # every user's own rate, mean 3
    >>> visits = pd.DataFrame({"id": np.repeat(np.arange(3000), 6),
    ...                        "visits": rng.poisson(np.repeat(rates, 6))})
    >>> res = PoissonMean.from_formula("visits ~ 1", visits, groups="id").fit(
    ...     epsilon=1.0, random_state=1)
    >>> bool(abs(res.params["visits"] - 3.0) < 0.25)
    True
    """

    model_name = "PoissonMean"
    lower = 0.0
    tail = "exponential"

    def __init__(
        self,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        groups: GroupsLike,
        by: str | None = None,
        levels: Mapping[str, Sequence[Any]] | None = None,
        bounds: tuple[float, float] | Mapping[str, tuple[float, float]] | str | None = None,
    ) -> None:
        super().__init__(formula, data, groups=groups, by=by, levels=levels, bounds=bounds)
        if pd.api.types.is_numeric_dtype(self._values.dtype):  # others are refused at fit
            negative = self._values < 0
            self._values = self._values.where(~negative)
            fractional = np.isfinite(self._values) & (self._values % 1.0 != 0.0)
            counts = (negative.sum(), fractional.sum())
            if is_dask(data):  # one pass over the frame counts both, as the rows are told
                import dask

                counts = dask.compute(*counts)
            self._tell(*(int(count) for count in counts))

    def _tell(self, negative: int, fractional: int) -> None:
        """Tell the data holder (never the results) of the rows left out as negative and of
        those kept though not whole numbers (the model's tail is a count's)."""
        if negative:
            warn(
                f"{negative:,} rows hold a negative count of {self.column!r}, not a "
                "count: they are left out (on your screen only: "
                "dplong.exceptions.DataHolderWarning).",
                DataHolderWarning,
            )
        if fractional:  # kept: told, as the model assumes counts
            warn(
                f"{fractional:,} rows hold a value of {self.column!r} that is not a "
                "whole number: PoissonMean takes them as they are, but its tail model "
                "(exponential user rates) is a count's; winsorized_mean makes no such "
                "assumption (on your screen only: dplong.exceptions.DataHolderWarning).",
                DataHolderWarning,
            )


register(
    CommandLineModel(
        "poisson",
        PoissonMean.from_formula,
        "PoissonMean: mean of the users' rates (counts per row) of a count column, 'visits ~ 1'",
        uses_levels=False,
    )
)
