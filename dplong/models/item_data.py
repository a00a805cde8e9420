"""The rows of an item-level fit, every row a unit: read from a frame in memory or on Dask,
with the public design points checked before anything else is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import warn
from dplong.dask_frames import design_spec, evaluate_rows, is_dask
from dplong.exceptions import DataError, DataHolderWarning
from dplong.formula import DesignSpec, LevelsLike, PanelDesign
from dplong.models.curve_grid import item_design, regressor

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["evaluated_rows", "item_rows", "tell_missing_responses"]

#: The rows evaluated: outcome, design, the outcome's and the design's missing flags
Evaluated = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]


def item_rows(
    formula: str,
    data: pd.DataFrame | DaskFrame,
    levels: LevelsLike | None,
    eval_env: patsy.EvalEnvironment,
    domain: tuple[float, float],
) -> tuple[PanelDesign, NDArray[np.float64], NDArray[np.float64]]:
    """Item-level rows, every row a unit: x public, complete and inside the domain; a missing
    (or infinite) response contributes the centre. A Dask frame's rows are evaluated partition
    by partition, in order.

    Examples
    --------
    >>> import numpy as np, pandas as pd, patsy
    >>> from dplong.models.item_data import item_rows
    >>> data = pd.DataFrame({"x": [0.1, 0.5, 0.9], "y": [1.0, np.nan, 3.0]})
    >>> env = patsy.EvalEnvironment.capture()
    >>> design, x, y = item_rows("y ~ x", data, None, env, (0.0, 1.0))
    >>> design.n, x.tolist(), y.tolist()
    (3, [0.1, 0.5, 0.9], [1.0, nan, 3.0])
    """
    spec, column, (y, X, missing_y, missing_x) = evaluated_rows(formula, data, levels, eval_env)
    if len(y) < 2:
        raise DataError(f"item-level regression needs at least 2 rows, got {len(y)}")
    if missing_x.any():
        raise DataError(
            "item-level design points must be finite and complete (they are public); "
            f"{int(missing_x.sum())} are missing or infinite"
        )
    x, y = X[:, column], np.where(missing_y, np.nan, y)
    tell_missing_responses(missing_y, "the responses' private centre")
    design = item_design(y, spec, formula)
    lo, hi = domain
    outside = (x < lo) | (x > hi)
    if outside.any():  # the design points are public: so is this refusal
        raise DataError(
            f"x must lie in the public domain [{lo:g}, {hi:g}]; {int(outside.sum())} "
            "values fall outside it (widen the domain or drop those rows)"
        )
    return design, x, y


def tell_missing_responses(missing: NDArray[np.bool_], centre: str) -> None:
    """Tell the data holder (a :class:`~dplong.exceptions.DataHolderWarning`, never the
    results: how many depends on the rows) how many responses are missing: each counts as
    ``centre`` (the design stays public), which pulls the curve toward it where they lie, and
    the bands do not include that pull.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from dplong.models.item_data import tell_missing_responses
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     tell_missing_responses(np.array([False, True, True]), "0")
    >>> str(caught[0].message)[:44]
    '2 of the 3 responses are missing: each count'
    """
    if not missing.any():
        return
    warn(
        f"{int(missing.sum()):,} of the {missing.size:,} responses are missing: each counts as "
        f"{centre}, which pulls the curve toward it where they lie, and the bands do not "
        "include that pull; impute them by a public rule before the fit (on your screen only: "
        "dplong.exceptions.DataHolderWarning).",
        DataHolderWarning,
    )


def evaluated_rows(
    formula: str,
    data: pd.DataFrame | DaskFrame,
    levels: LevelsLike | None,
    eval_env: patsy.EvalEnvironment,
) -> tuple[DesignSpec, int, Evaluated]:
    """The spec of an item-level formula (one regressor: its column), and every row
    evaluated (:meth:`DesignSpec.evaluate <dplong.formula.DesignSpec.evaluate>`: outcome,
    design, their missing flags), none dropped: n and the design are public. A Dask frame's
    rows are evaluated partition by partition, in order, and come back (every row is a unit).

    Examples
    --------
    >>> import pandas as pd, patsy
    >>> from dplong.models.item_data import evaluated_rows
    >>> data = pd.DataFrame({"x": [0.1, 0.5], "y": [1.0, 2.0]})
    >>> spec, column, (y, X, _, _) = evaluated_rows("y ~ x", data, None,
    ...                                             patsy.EvalEnvironment.capture())
    >>> column, X[:, column].tolist()
    (1, [0.1, 0.5])
    """
    if is_dask(data):
        frame_spec = design_spec(formula, data, levels=levels, eval_env=eval_env)
        spec = frame_spec.spec
        return spec, regressor(spec, formula), evaluate_rows(data, frame_spec)
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas or Dask DataFrame, got {type(data).__name__}")
    spec = DesignSpec.from_formula(formula, data, levels=levels, eval_env=eval_env)
    return spec, regressor(spec, formula), spec.evaluate(data)
