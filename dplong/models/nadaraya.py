"""Item-level Nadaraya–Watson regression ``y = f(x) + error`` released by efficient
Propose-Test-Release (the seed's Alg 5, on a whole grid).

Unlike the item-level Priestley–Chao smoother (:class:`~dplong.PriestleyChao` without
``groups``), whose design points are public and whose weights are therefore public, the x of
Nadaraya–Watson are **private**: a unit is one row ``(x, y)`` and its neighbour replaces both.
The estimate ``f̂(g) = Σ_i k_i(g) y_i / Σ_i k_i(g)`` has unbounded global sensitivity (a
grid point with no data near it moves arbitrarily), so it is released by ePTR
(:func:`~dplong.privacy.ptr.nadaraya_watson_ptr`): a private test that every grid point has a
kernel degree above a public floor, then one Gaussian vector calibrated to the local
sensitivity that floor guarantees. The test's outcome — the curve, or ⊥ — is a DP release and
is in the ledger.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong._validation import (
    LARGEST_SQUARED_SCALE,
    RandomState,
    checked_call,
    real_number,
    warn,
)
from dplong.exceptions import DataError, ParameterError
from dplong.formula import LevelsLike, PanelDesign
from dplong.formula.terms import analyst_env
from dplong.kernels import Kernel, get_kernel
from dplong.models.base import PanelModel
from dplong.models.command_line import PTR_FLOOR_OPTION, CommandLineModel, Option, register
from dplong.models.curve_grid import (
    check_domain,
    check_grid,
    grid_points,
    item_design,
)
from dplong.models.item_data import evaluated_rows, tell_missing_responses
from dplong.models.kernel import KERNEL_OPTION, curve_results
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.accounting import Accountant
from dplong.privacy.budget import afford, ptr_budget, settle
from dplong.privacy.budget.fit import guarded
from dplong.privacy.engine import Release
from dplong.privacy.ptr import (
    check_nadaraya_watson_ptr,
    kernel_reach,
    nadaraya_watson_ptr,
    nadaraya_watson_sensitivity,
    planned_noise_sd,
)
from dplong.results import CurveResults
from dplong.summary import grid_names

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["NadarayaWatson"]

#: Default floor on every grid point's kernel degree, as a share of the degree a uniform
#: design would give at the domain's ends (the least-covered points): half of it.
FLOOR_SHARE = 0.5


class NadarayaWatson(PanelModel):
    """Item-level DP Nadaraya–Watson regression by ePTR (module docstring; seed Alg 5).

    Every row is a unit (item-level); x and y are private, the domain of x, the range of y
    (``bounds``), the kernel, bandwidth and grid are public. x is projected onto the domain
    and y clipped to ``bounds`` (Alg 5, line 3).

    Examples
    --------
    >>> import numpy as np, pandas as pd, dplong
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 20_000)
    >>> data = pd.DataFrame({"x": x, "y": np.sin(2 * np.pi * x) + rng.normal(0, 0.3, x.size)})
    >>> model = dplong.NadarayaWatson.from_formula("y ~ x", data, domain=(0, 1),
    ...                                            bounds=(-2, 2), bandwidth=0.1, grid=11)
    >>> res = model.fit(epsilon=1.0, error_sd=0.3, random_state=0)
    >>> res.level, res.curve().columns.tolist()
    ('item', ['estimate', 'lower', 'upper', 'boundary'])
    >>> bool(abs(res.params.loc[0.5]) < 4 * res.noise_sd.loc[0.5])     # sin(π) = 0
    True
    """

    model_name = "NadarayaWatson"
    basis = ("Theorem 2.2 via Theorem 5.1 (ePTR)", "Theorem 2.2 via Theorem 5.1 (ePTR)")
    level = "item"

    def __init__(
        self,
        design: PanelDesign,
        *,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        domain: tuple[float, float],
        bounds: tuple[float, float],
        kernel: Kernel,
        bandwidth: float,
        grid: NDArray[np.float64],
    ) -> None:
        super().__init__(design)
        self._x, self._y = x, y  # private: projected onto the domain and the bounds
        self._domain, self._bounds = domain, bounds
        self._kernel, self._bandwidth, self._grid = kernel, bandwidth, grid

    @classmethod
    @checked_call
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        domain: tuple[float, float],
        bounds: tuple[float, float],
        bandwidth: float,
        kernel: str | Kernel = "gaussian",
        grid: int | ArrayLike | None = None,
        levels: LevelsLike | None = None,
    ) -> NadarayaWatson:
        """Build the model from ``"y ~ x"`` (one numeric regressor; every row a unit).

        Parameters
        ----------
        formula : str
            ``"y ~ x"``; x may be a transformation (``"y ~ np.log(age)"``).
        data : pandas.DataFrame or dask.dataframe.DataFrame
            One row per unit (a Dask frame's rows are evaluated partition by partition, and
            the (x, y) pairs come back: every row is a unit).
        domain : (float, float)
            Public range of x: values outside are projected onto it, a missing x gives the
            row no weight (both private: nothing is refused on them).
        bounds : (float, float)
            Public range of y: values outside are clipped, a missing y counts as its centre.
        bandwidth : float
            In the units of x.
        kernel : {"gaussian", "epanechnikov"} or Kernel
        grid : int or array_like, optional
            Evaluation points, as in :meth:`PriestleyChao.from_formula
            <dplong.PriestleyChao.from_formula>` (default: one bandwidth apart).
        levels : mapping of str to sequence, optional
            Declared factor levels (only where an expression uses a factor).

        Examples
        --------
        >>> import dplong
        >>> pigs = dplong.datasets.load_dietox()
        >>> dplong.NadarayaWatson.from_formula("Weight ~ Time", pigs, domain=(1, 12),
        ...                                    bounds=(0, 150), bandwidth=1.0)
        NadarayaWatson('Weight ~ Time', n_users=861)
        """
        lo, hi = check_domain(domain)
        try:
            low, high = check_domain(bounds)
        except ParameterError:
            raise ParameterError(
                f"bounds must be a pair (low, high) of finite numbers with low < high (the "
                f"public range of y), got {bounds!r:.80}"
            ) from None
        kern = get_kernel(kernel)
        width = real_number(bandwidth, "bandwidth", expected="a positive number")
        if not (math.isfinite(width) and width > 0):
            raise ParameterError(f"bandwidth must be a positive number, got {bandwidth!r}")
        points = grid_points((lo, hi), check_grid(grid, lo, hi), width)
        env = analyst_env()
        spec, column, (y, X, missing_y, missing_x) = evaluated_rows(formula, data, levels, env)
        if len(y) < 2:
            raise DataError(f"Nadaraya–Watson regression needs at least 2 rows, got {len(y)}")
        design = item_design(y, spec, formula)
        tell_missing_responses(missing_y, f"the centre of bounds, {(low + high) / 2.0:g}")
        with np.errstate(invalid="ignore"):
            x = np.where(missing_x, np.nan, np.clip(X[:, column], lo, hi))
            centred = np.where(missing_y, 0.0, np.clip(y, low, high) - (low + high) / 2.0)
        return cls(
            design,
            x=x,
            y=centred,
            domain=(lo, hi),
            bounds=(low, high),
            kernel=kern,
            bandwidth=width,
            grid=points,
        )

    def default_floor(self) -> float:
        """:data:`FLOOR_SHARE` of the kernel degree per unit that a uniform design on the
        domain gives at its ends (public: the domain, kernel and bandwidth).

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> data = pd.DataFrame({"x": np.linspace(0, 1, 100), "y": 0.0})
        >>> model = dplong.NadarayaWatson.from_formula("y ~ x", data, domain=(0, 1),
        ...                                            bounds=(-1, 1), bandwidth=0.1)
        >>> round(model.default_floor(), 4)          # ½ · ½ · 0.1 √(2π) of a unit's weight
        0.0627
        """
        lo, hi = self._domain
        points = np.linspace(lo, hi, 4097)
        edge = self._kernel.at(points - lo, self._bandwidth) / self._kernel.sup_norm
        return FLOOR_SHARE * float(np.trapezoid(edge, points)) / (hi - lo)

    @checked_call
    @guarded()  # a failure after the noise began is charged, as an advised fit's
    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        ptr_floor: float | None = None,
        error_sd: float | None = None,
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> CurveResults:
        """Release the curve on the grid with item-level (ε, δ)-DP, or ⊥.

        Parameters
        ----------
        epsilon, delta : float
            Total budget (δ default ``1/n**2``).
        ptr_floor : float, optional
            The floor c₀ of Alg 5 as a share of n: the test passes when every grid point's
            kernel degree (the kernel scaled to 1 at 0) clears ``c₀ n`` by a margin; the noise
            is proportional to ``1 / c₀``. Default :meth:`default_floor`.
        error_sd : float, optional
            A public bound on the errors' standard deviation: the bands then include the
            sampling error, bounded by ``error_sd / √(c₀ n)`` (the test passed: every weight
            is at most ``1 / (c₀ n)``). Without it no assumption gives the sampling sd: it is
            NaN, and so are the std errors, bands and p-values (the privacy noise's sd is
            still ``noise_sd`` of the results), as for any statistic whose sampling sd no
            stated assumption gives.
        random_state, rng, accountant
            As in :func:`dplong.winsorized_mean`.

        Returns
        -------
        CurveResults
            Indexed by the grid; every point withheld (NaN) when the test refused (⊥).

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> rng = np.random.default_rng(1)
        >>> x = rng.uniform(0, 1, 400)
        >>> data = pd.DataFrame({"x": x, "y": x + rng.normal(0, 0.1, x.size)})
        >>> model = dplong.NadarayaWatson.from_formula("y ~ x", data, domain=(0, 1),
        ...                                            bounds=(-1, 2), bandwidth=0.1)
        >>> res = model.fit(epsilon=1.0, random_state=0)    # too few rows for the test
        >>> bool(res.params.isna().all()), res.privacy.to_frame()["target"].iloc[0]
        (True, 'Nadaraya–Watson curve at 11 points: refused (⊥)')
        """
        n = self.nobs_users
        request = self._request(
            n,
            self._grid.size,
            epsilon=epsilon,
            delta=delta,
            privacy="central",
            bound=None,
            variant="default",
            gamma=0.05,
            refine=True,
            focus=None,
            random_state=random_state,
            rng=rng,
            accountant=accountant,
        )
        options, generator = request.options, request.rng
        floor = self.default_floor() if ptr_floor is None else real_number(ptr_floor, "ptr_floor")
        sigma = math.nan
        if error_sd is not None:
            sigma = real_number(error_sd, "error_sd", expected="a positive number")
            # the results report its square (the scale)
            if not (math.isfinite(sigma) and 0 < sigma <= LARGEST_SQUARED_SCALE):
                raise ParameterError(
                    f"error_sd must be a positive number up to {LARGEST_SQUARED_SCALE:g}, got "
                    f"{error_sd!r}"
                )
        budget = ptr_budget(options.epsilon, options.delta)
        notes = check_nadaraya_watson_ptr(n, floor, budget)
        reach = kernel_reach(self._kernel, self._grid, self._bandwidth, self._domain)
        low, high = self._bounds
        half = (high - low) / 2.0
        names = grid_names(self._grid)
        planned = planned_noise_sd(nadaraya_watson_sensitivity(n, half, reach, floor), budget)
        if planned > half:  # public: the plan's noise against the bounds
            notes += (
                f"The curve's privacy noise (sd {planned:.4g}) exceeds half the width of the "
                f"bounds [{low:g}, {high:g}] that y is clipped to: its values and bands say "
                "less than the bounds themselves; raise n or epsilon, or widen the bandwidth.",
            )
        if error_sd is None:  # public, and no ε cures it: the plan says so too
            notes += (
                "No error_sd: nothing bounds the smoother's sampling error, so no std err, "
                "band or p-value is given (the privacy noise's sd is the results' noise_sd); "
                "state error_sd (a bound on the errors' sd) for bands that hold both.",
            )
        checkpoint(  # every refusal is decided: dplong.plan stops here, before any noise
            FitPlan(
                n,
                options,
                (
                    PlannedBlock(
                        names,
                        1.0,
                        error_sd is not None,
                        None,
                        notes=notes,
                        noise_sd=np.full(len(names), planned),
                    ),
                ),
            )
        )
        afford(request.accountant, options.epsilon, options.delta)
        for note in notes:
            warn(note)
        # ---- no randomness was drawn above this line ----------------------------------------
        release = nadaraya_watson_ptr(
            self._x,
            self._y,
            self._grid,
            self._kernel,
            self._bandwidth,
            half,
            budget,
            generator,
            floor=floor,
            reach=reach,
        )
        ledger = settle(request.accountant, release.entries, options)
        size = self._grid.size
        refused = release.estimate is None
        if refused:
            notes += (
                "The ePTR test refused (⊥): no curve is released. The refusal is itself a DP "
                "release (the 'ptr test' entry of the ledger); refitting spends the budget "
                "again. Raise n or epsilon, widen the bandwidth or lower ptr_floor.",
            )
        # the smoothed curve of clipped responses lies in the bounds: the estimate is shown
        # there (post-processing; nearer to every value inside them, so the bands lose nothing)
        curve = (
            np.full(size, np.nan)
            if release.estimate is None
            else np.clip(release.estimate + (low + high) / 2.0, low, high)
        )
        sampling = math.nan if error_sd is None else sigma / math.sqrt(floor * n)
        centre = (low + high) / 2.0
        result = Release(
            names=names,
            estimate=curve,
            noise_sd=np.full(size, release.noise_sd),
            noise_scale=np.full(size, release.noise_sd),
            noise_kind="gaussian",
            sampling_sd=np.full(size, np.nan if refused else sampling),
            bias=np.zeros(size),
            interval=np.tile([low, high], (size, 1)),
            midpoint=np.full(size, centre),
            scale=np.full(size, sigma**2 if error_sd is not None else math.nan),
            users=np.array([math.nan]),
            users_sd=math.nan,
            privacy=ledger,
            n=n,
            variant="ePTR",
            bad_events=np.zeros(size),
            notes=notes,
            failed=np.full(size, refused),
        )
        assumptions = (
            f"Item-level: every row is a unit; x projected onto [{self._domain[0]:g}, "
            f"{self._domain[1]:g}], y clipped to [{low:g}, {high:g}] (public); the curve "
            "shown within those bounds. A missing y counts as the bounds' centre: where y is "
            "missing the curve is pulled toward it, which the bands do not include.",
            f"ePTR (seed Alg 5 on the grid): degree floor {floor:.4g} n, one test and one "
            "Gaussian vector; released only when the test passed (a DP outcome).",
            "Sampling error bounded by error_sd / √(floor n)."
            if error_sd is not None
            else "No error_sd: no sampling sd, so no std err, band or p-value.",
        )
        curve_fit = curve_results(
            [result],
            options,
            model=self,
            kernel=self._kernel,
            domain=self._domain,
            level=self.level,
            index=pd.Index(self._grid, name="x"),
            bandwidth=self._bandwidth,
            assumptions=assumptions,
            smoothing_bias=None,
            support=self._bounds,  # the curve of clipped responses lies within them
            self_normalised=True,
        )
        if not refused:
            return curve_fit
        return dataclasses.replace(
            curve_fit, withheld_why=dict.fromkeys(curve_fit.params.index, "ptr ⊥")
        )


register(
    CommandLineModel(
        "nw",
        NadarayaWatson.from_formula,
        "NadarayaWatson, item-level (every row a unit, x private): kernel regression of "
        "'y ~ x' on a grid by ePTR",
        uses_groups=False,
        options=(
            Option(
                "domain",
                "range",
                "LO,HI",
                "public range of x (values outside it are projected onto it)",
                stage="model",
                required=True,
            ),
            Option(
                "bounds",
                "range",
                "LO,HI",
                "public range of y; values outside are clipped",
                stage="model",
                required=True,
            ),
            Option(
                "bandwidth",
                "positive",
                "B",
                "kernel bandwidth in the units of x",
                stage="model",
                required=True,
            ),
            Option(
                "grid",
                "count",
                "G",
                "number of equally spaced grid points over the domain (default: one "
                "bandwidth apart)",
                stage="model",
            ),
            KERNEL_OPTION,
            PTR_FLOOR_OPTION,
            Option(
                "error_sd",
                "positive",
                "SD",
                "public bound on the errors' sd: the bands then include the sampling error",
            ),
        ),
    )
)
