"""User-level Priestley–Chao curves: each user's own curve on the grid is their statistic.

The n x G matrix of the users' curves goes through the default engine as one block
(:func:`~dplong.models.release_blocks.run_blocks`, composition over the G grid points by the
better of basic and Rényi), so the whole trajectory of every user is protected (Cor 5.4 / 6.8).
The reduction is the same in memory and on Dask (:func:`curve_sums`, then
:func:`curves_from_sums`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray
from scipy import sparse

from dplong._validation import warn
from dplong.dask_frames import ReducedPanel, design_spec, is_dask, reduce_design
from dplong.exceptions import DataError, DataHolderWarning, ParameterError
from dplong.formula import DesignSpec, GroupsLike, LevelsLike, PanelDesign, group_design
from dplong.kernels import Kernel
from dplong.models.blocks import Block, Statistics
from dplong.models.curve_grid import grid_points, refuse_unused, regressor
from dplong.models.kernel import PriestleyChao, Stated
from dplong.models.option_checks import check_ranges_stand, scale_per_column
from dplong.models.release_blocks import run_blocks
from dplong.privacy.engine import Release
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import SCALE_ONLY
from dplong.results import CurveResults
from dplong.summary import grid_names

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = [
    "MIN_USER_MASS",
    "UserCurves",
    "curve_sums",
    "curves_from_sums",
    "user_curves",
    "user_rows",
]

#: A user's curve is defined at x where their visits carry at least this much kernel mass
#: (about 1 where their visits cover x, about 1/2 at the end of the visits they cover):
#: elsewhere the Priestley–Chao sum is not an estimate of their curve but of 0.
MIN_USER_MASS = 0.25
#: Rows per block of kernel evaluations in the per-user reduction.
_CHUNK_ROWS = 1 << 16


class UserCurves(PriestleyChao):
    """:class:`~dplong.PriestleyChao` with ``groups=``: the mean of the users' own curves.

    Built by :meth:`PriestleyChao.from_formula <dplong.PriestleyChao.from_formula>`; the x are
    private, and a row with x outside the public domain is a missing row.

    Examples
    --------
    >>> import dplong
    >>> from dplong.models.curves import UserCurves
    >>> pigs = dplong.datasets.load_dietox()
    >>> model = dplong.PriestleyChao.from_formula("Weight ~ Time", pigs, groups="Pig",
    ...                                           domain=(1, 12), bandwidth=1.5, grid=6)
    >>> isinstance(model, UserCurves), model.level
    (True, 'user')
    """

    level = "user"
    basis = ("Theorem 4.2 via Corollary 5.4", "Theorem 6.4 via Corollary 6.8")

    def _fit_curve(self, common: dict[str, Any], given: Stated) -> CurveResults:
        refuse_unused(
            {"error_sd": given.error_sd, "amplitude": given.amplitude}, "user-level (groups given)"
        )
        if given.lipschitz is not None or given.sup_norm is not None:
            raise ParameterError(
                "lipschitz and sup_norm bound the item-level bias from the public design; "
                "user-level, visit times are private, so the target is the mean of the "
                "users' smoothed curves and no bias bound is given"
            )
        n = self.nobs_users
        b = float(self._bandwidth)
        grid = self._resolve_grid(b)
        request = self._request(n, grid.size, **common)
        scale = given.scale
        proxy = scale_per_column(scale, grid.size, _no_dependence_model)
        names = grid_names(grid)
        ranges = self._ranges(grid.size, request.options, stated=proxy is not None)

        def statistics(_: tuple[Release, ...]) -> Statistics:
            design = self._design
            if isinstance(design, ReducedPanel):  # a Dask frame's curves, on this grid
                return Statistics(design.statistics, scale=proxy)
            curves = user_curves(self._x, self._y, design.codes, n, grid, self._kernel, b)
            return Statistics(curves, scale=proxy)

        block = Block(
            names,
            1.0,
            statistics,
            proxy is not None,
            complete_rows=False,
            bounds=ranges,
            offers=SCALE_ONLY | {"bounds"},  # the fit's say in the curves' tail
        )
        releases = run_blocks([block], n=n, request=request)
        assumptions = (
            "User-level: each user's own Priestley–Chao curve, normalised by the user's kernel "
            f"mass, is their statistic where their visits cover x (mass >= {MIN_USER_MASS:g}); "
            "the target is the mean of the users' smoothed curves over the users who cover x "
            "(counted privately per grid point).",
            f"Public range of the response: [{self._bounds[0]:g}, {self._bounds[1]:g}] "
            "(bounds), which holds every user's curve value, a weighted average of their "
            "responses; the spread is bounded by it (at most √((μ - low)(high - μ)), "
            "Bhatia-Davis)."
            if self._bounds is not None
            else "Scale estimated privately (the spread of the users' curve values)."
            if proxy is None
            else f"Variance proxy of one user's curve value (scale): {np.ravel(scale).tolist()}.",
            "Standard errors and bands: the sampling error under that scale (users "
            "independent), the exact privacy-noise law and the clipping bias bound.",
        )
        return self._curve_results(
            releases,
            request.options,
            index=pd.Index(grid, name="x"),
            bandwidth=b,
            assumptions=assumptions,
            smoothing_bias=None,
        )

    def _ranges(
        self, points: int, options: ReleaseOptions, *, stated: bool
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """The response's public range at every grid point (None: none given), for the
        default engine's central release with no stated scale (checked before any noise)."""
        if self._bounds is None:
            return None
        check_ranges_stand(options, {"scale": stated})
        low, high = self._bounds
        return np.full(points, low), np.full(points, high)


def user_rows(
    formula: str,
    data: pd.DataFrame | DaskFrame,
    groups: GroupsLike,
    levels: LevelsLike | None,
    eval_env: patsy.EvalEnvironment,
    *,
    domain: tuple[float, float],
    kernel: Kernel,
    bandwidth: float,
    grid: int | NDArray[np.float64] | None,
) -> tuple[PanelDesign | ReducedPanel, NDArray[np.float64], NDArray[np.float64]]:
    """The users' rows with x in the domain, by user then x, with their x and y; a Dask frame
    is reduced where it lies to its users' kernel sums on the grid (x and y then empty)."""
    if is_dask(data):
        spec = design_spec(formula, data, levels=levels, eval_env=eval_env)
        sums = functools.partial(
            _design_curve_sums,
            column=regressor(spec.spec, formula),
            domain=domain,
            grid=grid_points(domain, grid, bandwidth),
            kernel=kernel,
            bandwidth=bandwidth,
        )
        reduced = reduce_design(
            data, spec, groups=groups, sums=sums, statistic=_counted_curves, ordered=True
        )
        rows, outside = reduced.statistics[:, -2:].sum(axis=0)
        _tell_outside(int(outside), int(rows), domain)
        curves = dataclasses.replace(reduced, statistics=reduced.statistics[:, :-2])
        return curves, np.empty(0), np.empty(0)
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas or Dask DataFrame, got {type(data).__name__}")
    built = DesignSpec.from_formula(formula, data, levels=levels, eval_env=eval_env)
    column = regressor(built, formula)
    rows = group_design(built, data, groups=groups)
    x, y, codes = _curve_rows(rows, column, domain)
    _tell_outside(rows.y.size - x.size, rows.y.size, domain)
    return dataclasses.replace(rows, y=y, X=rows.X[:0], codes=codes), x, y


def _tell_outside(outside: int, rows: int, domain: tuple[float, float]) -> None:
    """Tell the data holder (never the results) of the ``outside`` of the design's ``rows``
    whose x lies outside the domain, left out as the formula's missing rows are told."""
    if outside:
        warn(
            f"{outside:,} of {rows:,} rows have the curve's x outside its domain "
            f"[{domain[0]:g}, {domain[1]:g}] and are left out (on your screen only: "
            "dplong.exceptions.DataHolderWarning).",
            DataHolderWarning,
        )


def user_curves(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
) -> NDArray[np.float64]:
    """Every user's Priestley–Chao curve on the grid (n x G), NaN where they have none.

    Rows must come by user, then by x. A user's weights are the spacings to their next visit
    (the last visit's from the one before, a single visit's one bandwidth); the curve is the
    weighted kernel sum divided by the user's kernel mass ``Σ_t w_t K((x - x_t)/b)/b`` —
    about 1 inside their visits, so it changes little there and removes the bias towards 0 at
    their ends — and it is defined only where that mass is at least :data:`MIN_USER_MASS`:
    :func:`curves_from_sums` of :func:`curve_sums`.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.curves import user_curves
    >>> x = np.array([0.0, 0.5, 0.0, 0.25, 0.5, 0.75])     # user 0: 2 visits, user 1: 4
    >>> y = np.ones(6)
    >>> codes = np.array([0, 0, 1, 1, 1, 1])
    >>> user_curves(x, y, codes, 3, np.array([0.5, 0.85]), get_kernel("epanechnikov"),
    ...             0.25).round(4).tolist()
    [[1.0, nan], [1.0, 1.0], [nan, nan]]
    """
    return curves_from_sums(curve_sums(x, y, codes, n, grid, kernel, bandwidth))


def curve_sums(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
) -> NDArray[np.float64]:
    """Every user's weighted kernel sums ``Σ_t w_t y_t K((x - x_t)/b)/b`` and kernel masses
    ``Σ_t w_t K((x - x_t)/b)/b`` on the grid, side by side (n x 2G).

    Rows must come by user, then by x (the weights ``w_t`` are spacings to the next visit,
    shared equally by a user's rows at one x; the last visit's is the spacing from the one
    before, as a visit's weight is its share of the time the visits cover, and a single
    visit's is one bandwidth ``b``, about the reach of its kernel).
    The kernel matrix is built in blocks of rows and reduced to users by a sparse (users x
    rows) product, so memory stays O(block x G).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.curves import curve_sums
    >>> sums = curve_sums(np.array([0.0, 0.5]), np.array([2.0, 2.0]), np.array([0, 0]), 1,
    ...                   np.array([0.5]), get_kernel("epanechnikov"), 0.25)
    >>> sums.round(4).tolist()                # sum = 2 x mass: the curve is 2 there
    [[3.0, 1.5]]
    >>> tied = curve_sums(np.array([0.0, 0.0, 0.5]), np.array([1.0, 3.0, 2.0]),
    ...                   np.array([0, 0, 0]), 1, np.array([0.1]),
    ...                   get_kernel("epanechnikov"), 0.25)
    >>> float(tied[0, 0] / tied[0, 1])        # the two rows at 0 count alike: (1 + 3) / 2
    2.0
    """
    # a user's rows at one x share the gap to their next x equally (as item_weights' units
    # do): the gap of every tie but the last was 0, and the row order chose the one counted
    first = np.ones(x.size, dtype=bool)
    first[1:] = (codes[1:] != codes[:-1]) | (x[1:] != x[:-1])
    run = np.cumsum(first) - 1
    run_x, run_code = x[first], codes[first]
    last = np.ones(run_x.size, dtype=bool)
    last[:-1] = run_code[1:] != run_code[:-1]
    only = last.copy()  # a user's single visit time
    only[1:] &= run_code[1:] != run_code[:-1]
    # the last visit weighs the spacing before it, not the time to the domain's end: that
    # gave a visit at the end weight 0 (the dietox pigs' week 12, the curve there 92 kg
    # against their mean of 100) and carried an early leaver's last value on to the end
    forward = np.diff(run_x, append=np.nan)
    backward = np.diff(run_x, prepend=np.nan)
    gap = np.where(only, bandwidth, np.where(last, backward, forward))
    spacing = (gap / np.bincount(run, minlength=run_x.size))[run]
    out = np.zeros((n, 2 * grid.size))
    sums, mass = out[:, : grid.size], out[:, grid.size :]
    # a response near the doubles' edge overflows its user's sums to inf, which the release
    # clips as any far value: no numpy warning that one user's rows would decide
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, x.size, _CHUNK_ROWS):
            block = slice(start, start + _CHUNK_ROWS)
            rows = np.arange(x[block].size)
            kernel_block = kernel.at(grid[None, :] - x[block, None], bandwidth)
            for target, values in ((sums, spacing[block] * y[block]), (mass, spacing[block])):
                users = sparse.csr_matrix(
                    (values / bandwidth, (codes[block], rows)), shape=(n, rows.size)
                )
                target += users @ kernel_block
    return out


def curves_from_sums(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Users' curves from their :func:`curve_sums` (n x 2G): sum over mass where the mass is
    at least :data:`MIN_USER_MASS`, else NaN (n x G).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.curves import curves_from_sums
    >>> curves_from_sums(np.array([[3.0, 0.1, 1.5, 0.1]])).tolist()
    [[2.0, nan]]
    """
    points = sums.shape[1] // 2
    mass = sums[:, points:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mass >= MIN_USER_MASS, sums[:, :points] / mass, np.nan)


def _curve_rows(
    design: PanelDesign, column: int, domain: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """x, y and user codes of a design's rows with x in the domain, by user, then by x
    (stable; a user's rows at one x share its gap: :func:`curve_sums`). x is private: a row
    outside is a missing value."""
    lo, hi = domain
    x = design.X[:, column]
    inside = np.flatnonzero((x >= lo) & (x <= hi))
    order = inside[np.lexsort((x[inside], design.codes[inside]))]
    return x[order], design.y[order], design.codes[order]


def _design_curve_sums(
    design: PanelDesign,
    *,
    column: int,
    domain: tuple[float, float],
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
) -> NDArray[np.float64]:
    """:func:`curve_sums` of the rows of a design (a Dask partition holding whole users), and
    each user's count of its rows and of those with x outside the domain (the last two
    columns: :func:`_counted_curves`)."""
    x, y, codes = _curve_rows(design, column, domain)
    rows = np.bincount(design.codes, minlength=design.n)
    inside = np.bincount(codes, minlength=design.n)
    sums = curve_sums(x, y, codes, design.n, grid, kernel, bandwidth)
    return np.column_stack([sums, rows, rows - inside])


def _counted_curves(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`curves_from_sums` of a Dask frame's summed :func:`_design_curve_sums`, with
    their two row counts carried beside (dropped once summed over the users)."""
    return np.column_stack([curves_from_sums(sums[:, :-2]), sums[:, -2:]])


def _no_dependence_model(model: Any) -> float:
    raise ParameterError(
        "a dependence model does not give the scale of a user's curve value (it depends on the "
        'private visit times); give a number, one per grid point, or "estimate"'
    )
