"""Priestley–Chao nonparametric regression ``y = f(x) + error`` (§4.4): the public entry point.

:class:`PriestleyChao` checks what both designs share — the public domain, kernel, bandwidth
and evaluation grid (:mod:`dplong.models.curve_grid`) — and builds one of two estimators, each in
its own module:

* item-level (``groups=None``, the design points public): :class:`~dplong.models.smoother.
  ItemSmoother`, one vector release of the whole curve (Def 4.7–4.8, Cor 4.11 / 6.7);
* user-level (``groups=`` given): :class:`~dplong.models.curves.UserCurves`, the mean of the
  users' own curves through the default engine (Cor 5.4 / 6.8).

Both release their curve on the grid and share the results' assembly (:class:`CurveResults`,
indexed by x). Why the two designs are released as they are: ``docs/design/kernel.md``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong._validation import RandomState, checked_call
from dplong.dask_frames import ReducedPanel
from dplong.exceptions import ParameterError
from dplong.formula import LevelsLike, PanelDesign
from dplong.formula.terms import analyst_env
from dplong.kernels import KERNELS, Kernel, get_kernel
from dplong.models.assemble import panel_results
from dplong.models.base import PanelModel
from dplong.models.command_line import CommandLineModel, Option, register
from dplong.models.curve_grid import check_domain, check_grid, grid_points
from dplong.models.pooled.frame import column_range
from dplong.planning import advised
from dplong.privacy.accounting import Accountant
from dplong.privacy.engine import Release
from dplong.privacy.options import PrivacyModel, ReleaseOptions, Variant
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.results import CurveResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["PriestleyChao", "curve_results"]


@dataclass(frozen=True)
class Stated:
    """What the analyst stated about the data in :meth:`PriestleyChao.fit`, as given: each
    design checks its own and refuses the other's."""

    error_sd: Any
    amplitude: Any
    scale: Any
    lipschitz: Any
    sup_norm: Any


class PriestleyChao(PanelModel):
    """Differentially private Priestley–Chao regression ``y = f(x) + error`` (Def 4.7–4.8).

    Item-level (``groups=None``, the design points x public) or user-level (``groups`` given,
    each user's whole curve protected); central or local privacy. :meth:`from_formula` builds
    the estimator of the design (module docstring); :meth:`fit` states the assumptions.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dplong
    >>> rng = np.random.default_rng(0)
    >>> x = np.arange(20_000) / 20_000
    >>> data = pd.DataFrame({"x": x, "y": np.sin(2 * np.pi * x) + rng.normal(0, 0.5, x.size)})
    >>> model = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
    ...                                           bandwidth=0.05, grid=11)
    >>> res = model.fit(epsilon=1.0, error_sd=0.5, amplitude=1.0, random_state=0)
    >>> curve = res.curve()
    >>> curve.columns.tolist()
    ['estimate', 'lower', 'upper', 'boundary']
    >>> bool(abs(curve.loc[0.5, "estimate"]) < 0.2)            # sin(π) = 0
    True
    """

    model_name = "PriestleyChao"
    #: "item" or "user": the level of privacy, and the results' ``level``.
    level: ClassVar[str]

    def __init__(
        self,
        design: PanelDesign | ReducedPanel,
        *,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        domain: tuple[float, float],
        kernel: Kernel,
        bandwidth: float | str,
        grid: int | NDArray[np.float64] | None,
        bounds: tuple[float, float] | None = None,
    ) -> None:
        super().__init__(design)
        # item-level: the public design points and the responses (NaN: none); user-level: the
        # rows by user, then by x (empty when a Dask frame was reduced to the users' sums)
        self._x, self._y = x, y
        self._domain = domain
        self._kernel = kernel
        self._bandwidth = bandwidth
        self._grid = grid
        self._bounds = bounds  # the response's public range (user-level)

    def __repr__(self) -> str:  # one public model, whichever design it has
        return f"{self.model_name}({self.formula!r}, n_users={self.nobs_users})"

    @classmethod
    @checked_call
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        groups: str | ArrayLike | None = None,
        domain: tuple[float, float],
        kernel: str | Kernel = "gaussian",
        bandwidth: float | str = "auto",
        grid: int | ArrayLike | None = None,
        levels: LevelsLike | None = None,
        bounds: tuple[float, float] | None = None,
    ) -> PriestleyChao:
        """Build the model from ``"y ~ x"`` (one regressor; the intercept is implicit).

        Parameters
        ----------
        formula : str
            ``"y ~ x"``; x may be a transformation (``"y ~ np.log(age)"``).
        data : pandas.DataFrame or dask.dataframe.DataFrame
            A Dask frame gives the same results (:mod:`dplong.dask_frames`): item-level, its
            (public) design points and responses are collected, one pair per row;
            user-level, its rows are shuffled by user (a user's curve needs their visits in
            order) and each user's kernel sums come back.
        groups : str or array_like, optional
            User id column: each user's own curve is their statistic (user-level). Without
            it every row is a unit and the design points x are public (item-level). A column
            name with a Dask frame.
        domain : (float, float)
            Public range ``[lo, hi]`` of x. Item-level the x are public design points, and
            every x must lie in it; user-level the x are private, and a row with x outside
            it is dropped like a row with a missing value (whether any is, is private).
            ``hi - lo`` must be a finite double, wide enough for the grid's points to differ
            as doubles (4 units in the last place of the larger end apart).
        kernel : {"gaussian", "epanechnikov"} or Kernel
        bandwidth : float or "auto"
            In the units of x. ``"auto"`` (item-level only) balances the explicit bias,
            sampling and privacy-noise terms of Cor 4.11 (central) / Cor 6.7 (local) at fit
            time, when ε and the noise level are known (see :meth:`fit`).
        grid : int or array_like, optional
            Evaluation points: a number of equally spaced points over the domain, or the points
            themselves (inside the domain, strictly increasing). Default: points one bandwidth
            apart, between 5 and 201 of them. Item-level, the privacy noise grows in proportion
            to the number of points once they are closer than a bandwidth; user-level, with the
            composition over points (docs: resolution versus noise).
        levels : mapping of str to sequence, optional
            Declared factor levels, as in :meth:`LongitudinalOLS.from_formula
            <dplong.LongitudinalOLS.from_formula>` (rules in :mod:`dplong.formula`); with one
            numeric regressor they matter only where an expression uses a factor.
        bounds : (float, float), optional
            User-level: the public range ``(low, high)`` of the response (a 0/1 outcome:
            ``(0, 1)``). A user's curve value is a kernel-weighted average of their responses,
            so it lies in the range too: the curves are released within it (a value outside
            is clipped to it), and nothing is spent on finding their location or spread.
            Item-level curves take ``error_sd`` and ``amplitude`` at :meth:`fit` instead.

        Examples
        --------
        >>> import dplong
        >>> pigs = dplong.datasets.load_dietox()
        >>> dplong.PriestleyChao.from_formula("Weight ~ Time", pigs, groups="Pig",
        ...                                   domain=(1, 12), bandwidth=1.0, grid=12)
        PriestleyChao('Weight ~ Time', n_users=72)

        Levels of a column the formula does not read would be ignored, so they are refused:

        >>> dplong.PriestleyChao.from_formula("Weight ~ Time", pigs, groups="Pig",
        ...                                   domain=(1, 12), bandwidth=1.0,
        ...                                   levels={"Cu": [1, 2, 3]})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dplong.exceptions.FormulaError: levels names ['Cu'], which the formula does not read; ...
        """
        # the estimators' modules build on this one: imported when a design is chosen
        from dplong.models.curves import UserCurves, user_rows
        from dplong.models.item_data import item_rows
        from dplong.models.smoother import ItemSmoother

        lo, hi = check_domain(domain)
        kern = get_kernel(kernel)
        if isinstance(bandwidth, str):
            if bandwidth != "auto":
                raise ParameterError(
                    f'bandwidth must be a positive number or "auto", got {bandwidth!r}'
                )
            if groups is not None:
                raise ParameterError(
                    'bandwidth="auto" follows the item-level rates of Cor 4.11 / 6.7; for '
                    "user-level curves give a number in the units of x (e.g. one or two visit "
                    "intervals)"
                )
        elif not (
            isinstance(bandwidth, int | float | np.integer | np.floating)
            and not isinstance(bandwidth, bool)
            and math.isfinite(bandwidth)
            and bandwidth > 0
        ):
            raise ParameterError(f"bandwidth must be a positive number, got {bandwidth!r}")
        else:
            bandwidth = float(bandwidth)
        points = check_grid(grid, lo, hi)
        if bounds is not None:
            if groups is None:
                raise ParameterError(
                    "bounds= (the response's public range) holds each user's curve value: "
                    "user-level only (groups=); item-level, state error_sd and amplitude at "
                    "fit, or use NadarayaWatson, whose bounds= clip the responses"
                )
            bounds = column_range(bounds, formula.partition("~")[0].strip())
        eval_env = analyst_env()
        design: PanelDesign | ReducedPanel
        estimator: type[PriestleyChao]
        if groups is None:
            design, x, y = item_rows(formula, data, levels, eval_env, (lo, hi))
            estimator = ItemSmoother
        else:
            assert not isinstance(bandwidth, str)  # "auto" is refused above
            design, x, y = user_rows(
                formula,
                data,
                groups,
                levels,
                eval_env,
                domain=(lo, hi),
                kernel=kern,
                bandwidth=bandwidth,
                grid=points,
            )
            estimator = UserCurves
        return estimator(
            design,
            x=x,
            y=y,
            domain=(lo, hi),
            kernel=kern,
            bandwidth=bandwidth,
            grid=points,
            bounds=bounds,
        )

    @checked_call
    @advised
    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        error_sd: float | None = None,
        amplitude: float | None = None,
        scale: float | ArrayLike | Literal["estimate"] = "estimate",
        lipschitz: float | None = None,
        sup_norm: float | None = None,
        privacy: PrivacyModel = "central",
        bound: float | None = None,
        variant: Variant = "default",
        gamma: float = DEFAULT_GAMMA,
        refine: bool = True,
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> CurveResults:
        """Release the curve on the grid with (ε, δ)-DP: item-level or user-level.

        Parameters
        ----------
        epsilon, delta : float
            Total budget (central δ default ``1/n**2``; local default pure ε).
        error_sd : float, optional
            Item-level: σ_max, a public bound with ``Cov(errors) ⪯ σ_max² I`` (Def 4.7): the
            error standard deviation for independent errors, ``√‖Σ‖_op`` under dependence (for
            AR(1) errors with variance v and coefficient φ, ``v (1+φ)/(1-φ)``). Not the
            results' ``noise_sd``, which is the privacy noise's sd.
        amplitude : float, optional
            Item-level: a public bound A on ``|f(x) - c|`` for some unknown level c (half the
            range of f). The responses are projected onto ``c ± w`` with the radius
            ``A + σ_max √(2 log(2n/γ))`` (the Gaussian part of Lemma 4.9's radius, taken on the
            responses). Defaults to ``sup_norm``. With neither ``error_sd`` nor ``amplitude``
            nor ``sup_norm``, the responses' spread is estimated privately and they are
            treated as sub-Gaussian around one level (conservative: it includes the variation
            of f).
        scale : "estimate", float or array_like
            User-level: variance proxy of one user's curve value, common or one per grid point
            (between-user spread of the curves plus their own noise). Default ``"estimate"``.
        lipschitz, sup_norm : float, optional
            Smoothness assumptions ``|f(s) - f(t)| <= L_f |s - t|`` and ``‖f‖∞ <= F``. Item-level
            with both, the error bound also covers the smoothing bias, computed exactly from
            the public design (Lemma 4.9's bias terms, without their approximations); without
            them it bounds the error with respect to the smoothed curve ``Σ_i a_i(x) f(x_i)``.
            ``lipschitz`` also sets the bias term of ``bandwidth="auto"`` (default
            ``2 A / (hi - lo)``).
        privacy : {"central", "local"}
        bound : float, optional
            Local model: public bound B on the level ``|c|`` (item-level) or on the mean curve
            (user-level).
        variant, gamma, refine, random_state, rng, accountant
            As in :func:`dplong.winsorized_mean`.

        Returns
        -------
        CurveResults

        Examples
        --------
        User-level growth curves, each user's whole trajectory protected:

        >>> import numpy as np, pandas as pd, dplong
        >>> rng = np.random.default_rng(0)
        >>> users, visits = 20_000, 8
        >>> age = np.tile(np.arange(visits) / visits, users)
        >>> data = pd.DataFrame({"id": np.repeat(np.arange(users), visits), "age": age,
        ...                      "height": 50 + 20 * age + rng.normal(0, 1, age.size)})
        >>> model = dplong.PriestleyChao.from_formula("height ~ age", data, groups="id",
        ...                                           domain=(0, 1), bandwidth=0.15, grid=5)
        >>> res = model.fit(epsilon=1.0, random_state=0)        # scale estimated privately
        >>> bool(abs(res.params.loc[0.5] - 60.0) < 1.0), res.level
        (True, 'user')
        """
        stated = Stated(error_sd, amplitude, scale, lipschitz, sup_norm)
        common = {
            "epsilon": epsilon,
            "delta": delta,
            "privacy": privacy,
            "bound": bound,
            "variant": variant,
            "gamma": gamma,
            "refine": refine,
            "focus": None,
            "random_state": random_state,
            "rng": rng,
            "accountant": accountant,
        }
        return self._fit_curve(common, stated)

    def _fit_curve(self, common: dict[str, Any], stated: Stated) -> CurveResults:
        """The design's release: its own assumptions checked, then the common options
        (:meth:`_request` with ``common``), then the curve."""
        raise NotImplementedError  # each design's module defines it

    def _resolve_grid(self, bandwidth: float) -> NDArray[np.float64]:
        return grid_points(self._domain, self._grid, bandwidth)

    def _curve_results(
        self,
        releases: Sequence[Release],
        options: ReleaseOptions,
        *,
        index: pd.Index,
        bandwidth: float,
        assumptions: tuple[str, ...],
        smoothing_bias: NDArray[np.float64] | None,
    ) -> CurveResults:
        """The results of the curve's releases, indexed by the grid."""
        return curve_results(
            releases,
            options,
            model=self,
            kernel=self._kernel,
            domain=self._domain,
            level=self.level,
            index=index,
            bandwidth=bandwidth,
            assumptions=assumptions,
            smoothing_bias=smoothing_bias,
            support=self._bounds,
        )


def curve_results(
    releases: Sequence[Release],
    options: ReleaseOptions,
    *,
    model: PanelModel,
    kernel: Kernel,
    domain: tuple[float, float],
    level: str,
    index: pd.Index,
    bandwidth: float,
    assumptions: tuple[str, ...],
    smoothing_bias: NDArray[np.float64] | None,
    support: tuple[float, float] | None = None,
    self_normalised: bool = False,
) -> CurveResults:
    """The results of a curve's releases on the grid ``index`` (any kernel smoother's: every
    parameter is a point of the curve), from released numbers and public facts only;
    ``support`` a public range of every point's value (the intervals stop at its ends);
    ``self_normalised``: the estimator divides by its own kernel mass (Nadaraya–Watson)."""
    grid = index.to_numpy(dtype=float)
    boundary = kernel.boundary_points(grid, bandwidth, domain)
    results = panel_results(
        releases,
        model=model.spec,
        formula=model.formula,
        nobs_users=model.nobs_users,
        basis=model.basis,
        options=options,
        assumptions=assumptions,
        results_class=CurveResults,
        kernel=kernel.name,
        bandwidth=bandwidth,
        domain=domain,
        level=level,
        boundary=pd.Series(boundary, index=index, name="boundary"),
        smoothing_bias=pd.Series(
            np.nan if smoothing_bias is None else smoothing_bias,
            index=index,
            name="smoothing bias",
        ),
        support_lower={} if support is None else dict.fromkeys(grid.tolist(), support[0]),
        support_upper={} if support is None else dict.fromkeys(grid.tolist(), support[1]),
        self_normalised=self_normalised,
    )
    curve = dataclasses.replace(
        results,
        params=results.params.set_axis(index),
        noise_scale=results.noise_scale.set_axis(index),
        noise_sd=results.noise_sd.set_axis(index),
        sampling_sd=results.sampling_sd.set_axis(index),
        bias=results.bias.set_axis(index),
        projection_interval=results.projection_interval.set_axis(index),
        failed=results.failed.set_axis(index),
        bad_events=results.bad_events.set_axis(index),
        users=results.users.set_axis(index) if results.users.size == grid.size else results.users,
    )
    assert isinstance(curve, CurveResults)  # results_class=CurveResults above
    return curve


#: The command line's ``--kernel`` (both kernel smoothers take it).
KERNEL_OPTION = Option(
    "kernel",
    "text",
    "NAME",
    "smoothing kernel (default gaussian)",
    stage="model",
    choices=tuple(KERNELS),
)


register(
    CommandLineModel(
        "kernel",
        PriestleyChao.from_formula,  # the command line always has groups: user-level curves
        "PriestleyChao, user-level: mean of per-user kernel curves of 'y ~ x' on a grid",
        options=(
            Option(
                "domain",
                "range",
                "LO,HI",
                "public range of x, e.g. the study's design (rows with x outside it are dropped)",
                stage="model",
                required=True,
            ),
            Option(
                "bandwidth",
                "positive",
                "B",
                "kernel bandwidth in the units of x, e.g. one or two visit intervals",
                stage="model",
                required=True,
            ),
            Option(
                "grid",
                "count",
                "G",
                "number of equally spaced grid points over the domain (default: one "
                "bandwidth apart); more points, more noise",
                stage="model",
            ),
            KERNEL_OPTION,
            Option(
                "bounds",
                "range",
                "LO,HI",
                "public range of y (a 0/1 outcome: 0,1), which holds every user's curve value: "
                "nothing is spent on finding them",
                stage="model",
            ),
        ),
    )
)
