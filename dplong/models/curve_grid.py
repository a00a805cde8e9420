"""The public x side of a Priestley–Chao fit, shared by its two designs: the domain, the
evaluation grid and the one regressor's column, checked before anything reads the data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong._validation import describe, real_number
from dplong.exceptions import FormulaError, ParameterError
from dplong.formula import DesignSpec, PanelDesign

__all__ = [
    "check_domain",
    "check_grid",
    "grid_points",
    "item_design",
    "refuse_unused",
    "regressor",
]

#: Default grid: points one bandwidth apart (a finer grid adds little resolution to a curve
#: smoothed at scale b but, item-level, costs noise in proportion), within these limits.
MIN_GRID_POINTS, MAX_GRID_POINTS = 5, 201
#: Largest grid accepted: item-level weights are n x G in memory, and a curve smoothed at scale
#: b gains nothing from points much closer than b.
MAX_EVALUATION_POINTS = 10_000


def grid_points(
    domain: tuple[float, float], grid: int | NDArray[np.float64] | None, bandwidth: float
) -> NDArray[np.float64]:
    """The evaluation points: ``grid`` as given, or that many (default: one bandwidth apart)
    equally spaced over the domain, rounded to 12 significant digits of the domain's width so
    labels read 0.3, not 0.30000000000000004 (a public choice of points; any would do).

    Digits of the width, not of the larger end: rounded to 12 digits of 1e9, the points of
    (1e9, 1e9 + 0.001) had one label, and those of (0, 1e-300) none (numpy's rounding to 312
    decimals overflows): the fit failed after its noise (an audit). :func:`check_grid` refuses
    a domain too narrow for its points to differ as doubles.

    Examples
    --------
    >>> from dplong.models.curve_grid import grid_points
    >>> grid_points((0.0, 1.0), None, 0.1).tolist()[:4], grid_points((0.0, 1.0), 3, 0.1).tolist()
    ([0.0, 0.1, 0.2, 0.3], [0.0, 0.5, 1.0])
    >>> grid_points((1e9, 1e9 + 0.001), 3, 1.0).tolist()
    [1000000000.0, 1000000000.0005, 1000000000.001]
    """
    lo, hi = domain
    if grid is None:  # clipped before rounding: a width over a tiny bandwidth may be inf
        steps = np.clip((hi - lo) / bandwidth, MIN_GRID_POINTS - 1, MAX_GRID_POINTS - 1)
        count = round(float(steps)) + 1
    elif isinstance(grid, int):
        count = grid
    else:
        return grid
    digits = 12 - math.floor(math.log10(hi - lo))
    return np.array([round(float(point), digits) for point in np.linspace(lo, hi, count)])


def regressor(spec: DesignSpec, formula: str) -> int:
    """The design column of the one numeric regressor x."""
    columns = spec.columns
    others = [j for j, c in enumerate(columns) if c != "Intercept"]
    if len(others) != 1:
        raise FormulaError(
            f"A kernel regression (Priestley–Chao, Nadaraya–Watson) takes one regressor "
            f"('y ~ x'); {formula!r} gives "
            f"{[columns[j] for j in others]}"
        )
    factors = [
        f.name()
        for f, info in spec.regressor_info.factor_infos.items()
        if info.type == "categorical"
    ]
    if factors:
        raise FormulaError(
            f"A kernel regression needs a numeric regressor x; {factors[0]!r} in "
            f"{formula!r} is a factor"
        )
    return others[0]


def refuse_unused(arguments: dict[str, Any], design: str) -> None:
    """Refuse the options of the other design that were given."""
    given = [k for k, v in arguments.items() if v is not None]
    if given:
        raise ParameterError(f"{given} do not apply to {design} Priestley–Chao regression")


def check_domain(domain: Any) -> tuple[float, float]:
    try:
        lo, hi = (real_number(v, "domain") for v in domain)
    except (TypeError, ValueError, ParameterError):
        raise ParameterError(
            f"domain must be a pair (lo, hi) of numbers, got {domain!r:.80}"
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi and math.isfinite(hi - lo)):
        raise ParameterError(
            f"domain must be finite with lo < hi (and hi - lo a finite double), got {domain!r}"
        )
    return lo, hi


def check_grid(grid: Any, lo: float, hi: float) -> int | NDArray[np.float64] | None:
    """``grid`` checked against the domain ``[lo, hi]``: a number of points, the points
    themselves, or None (one bandwidth apart: at most :data:`MAX_GRID_POINTS`)."""
    if grid is None or (isinstance(grid, int | np.integer) and not isinstance(grid, bool)):
        count = MAX_GRID_POINTS if grid is None else int(grid)
        if not 2 <= count <= MAX_EVALUATION_POINTS:
            raise ParameterError(
                f"grid must have between 2 and {MAX_EVALUATION_POINTS} points, got {grid!r}"
            )
        # points 4 units in the last place apart stay apart however linspace rounds them
        least = 4 * (count - 1) * math.ulp(max(abs(lo), abs(hi)))
        if hi - lo < least:
            raise ParameterError(
                f"domain is too narrow for {count} grid points that differ as doubles: "
                f"({lo!r}, {hi!r}) must be at least {least:.3g} wide; widen it or give fewer "
                "points"
            )
        return None if grid is None else count
    try:
        points = np.asarray(grid, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(
            f"grid must be a number of points or a 1-D array of points, got {grid!r}"
        ) from None
    if points.ndim != 1 or not 0 < points.size <= MAX_EVALUATION_POINTS:
        raise ParameterError(
            "grid must be a number of points or a non-empty 1-D array of at most "
            f"{MAX_EVALUATION_POINTS} points"
        )
    if not np.isfinite(points).all() or points.min() < lo or points.max() > hi:
        raise ParameterError(f"grid points must be finite and inside the domain [{lo:g}, {hi:g}]")
    if not (np.diff(points) > 0).all():  # sorting would misalign the analyst's own labels
        raise ParameterError(
            f"grid points must be strictly increasing (sorted, no repeats), got {describe(grid)}"
        )
    return points


def item_design(y: NDArray[np.float64], spec: DesignSpec, formula: str) -> PanelDesign:
    """The design of an item-level fit: every row its own unit (n = the rows, public), the
    outcome only (the design points are the curve's, kept apart).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dplong.formula import DesignSpec
    >>> from dplong.models.curve_grid import item_design
    >>> frame = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [1.0, 2.0, 4.0]})
    >>> spec = DesignSpec.from_formula("y ~ x", frame)
    >>> design = item_design(frame["y"].to_numpy(), spec, "y ~ x")
    >>> design.n, design.codes.tolist()
    (3, [0, 1, 2])
    """
    n = len(y)
    return PanelDesign(
        y=y,
        X=np.empty((0, 0)),
        codes=np.arange(n, dtype=np.intp),
        n=n,
        columns=spec.columns,
        outcome=spec.outcome,
        formula=formula,
    )
