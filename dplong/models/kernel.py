"""Priestley–Chao nonparametric regression, item-level and per-user curves (§4.4, Cor 4.11, 6.7).

Two designs, one model:

* **item-level** (``groups=None``): one row per unit at a *public* design point x_i (Def 4.7).
  The Priestley–Chao estimate ``f̂(x) = Σ_i a_i(x) Y_i`` with ``a_i(x) = w_i K((x - x_i)/b) / b``
  and ``w_i`` the public spacing (Def 4.8) is linear in the responses with public weights. We
  find a private midpoint m̂ of the responses (Alg 3 / 9), project them onto ``m̂ ± w``
  (the Winsorization of Alg 4, applied to ``Y_i`` rather than to each summand ``a_i(x) Y_i``,
  which is the same projection rescaled per grid point) and release the whole curve at once:
  centrally with one lattice Laplace vector calibrated to its L1 sensitivity
  (:func:`dplong.privacy.noise.release_weighted_sums`), locally by each unit privatising its
  own projected response (Alg 8) before the public smoothing. Neither pays for the grid by
  composition: one response moves the curve only where its kernel reaches.
* **user-level** (``groups=`` given): each user's own Priestley–Chao curve on the grid is that
  user's statistic, and the n x G matrix goes through the multivariate noisy Winsorized mean
  (Alg 5, composition over the G grid points by the better of basic and advanced). The whole
  trajectory of every user is protected.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import patsy
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from dplong._validation import RandomState, real_number, warn
from dplong.bounds import midpoint_failure_probability
from dplong.dask_frames import ReducedPanel, design_spec, evaluate_rows, is_dask, reduce_design
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import DesignSpec, LevelsLike, PanelDesign, group_design
from dplong.kernels import KERNELS, Kernel, get_kernel
from dplong.models.base import (
    Block,
    FitRequest,
    PanelModel,
    Statistics,
    caught_notes,
    panel_results,
    paper_mean_options,
    paper_scale,
    run_blocks,
    scale_per_column,
)
from dplong.models.command_line import CommandLineModel, Option, register
from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger
from dplong.privacy.budget import ReleasePlan, afford, charge
from dplong.privacy.engine import MAX_RADIUS, Release, Rules, locate, overflowed
from dplong.privacy.interval import (
    central_midpoint,
    check_histogram_feasible,
    local_bins,
    local_midpoint,
)
from dplong.privacy.noise import (
    MIN_LATTICE_EPSILON,
    release_bounded_sum,
    release_weighted_gaussian,
    release_weighted_sums,
)
from dplong.privacy.options import PrivacyModel, ReleaseOptions, Variant
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.results import CurveResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["PriestleyChao"]

#: Default grid: points one bandwidth apart (a finer grid adds little resolution to a curve
#: smoothed at scale b but, item-level, costs noise in proportion), within these limits.
MIN_GRID_POINTS, MAX_GRID_POINTS = 5, 201
#: Largest grid accepted: item-level weights are n x G in memory, and a curve smoothed at scale
#: b gains nothing from points much closer than b.
MAX_EVALUATION_POINTS = 10_000
_CHUNK_ROWS = 1 << 16
#: The paper's results the error bounds instantiate, by level: (central, local).
_BASIS = {
    "item": ("Theorem 4.2 via Corollary 4.11", "Theorem 6.4 via Corollary 6.7"),
    "user": ("Theorem 4.2 via Corollary 5.4", "Theorem 6.4 via Corollary 6.8"),
}  # rows per block of kernel evaluations in the per-user reduction


class PriestleyChao(PanelModel):
    """Differentially private Priestley–Chao regression ``y = f(x) + error`` (Def 4.7–4.8).

    Item-level (``groups=None``, the design points x public) or user-level (``groups`` given,
    each user's whole curve protected); central or local privacy. See the module docstring
    for how each is released and :meth:`fit` for the assumptions.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dplong
    >>> rng = np.random.default_rng(0)
    >>> x = np.arange(20_000) / 20_000
    >>> data = pd.DataFrame({"x": x, "y": np.sin(2 * np.pi * x) + rng.normal(0, 0.5, x.size)})
    >>> model = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
    ...                                           bandwidth=0.05, grid=11)
    >>> res = model.fit(epsilon=1.0, noise_sd=0.5, amplitude=1.0, random_state=0)
    >>> curve = res.curve()
    >>> curve.columns.tolist()
    ['estimate', 'lower', 'upper', 'boundary']
    >>> bool(abs(curve.loc[0.5, "estimate"]) < 0.2)            # sin(π) = 0
    True
    """

    model_name = "PriestleyChao"

    def __init__(
        self,
        design: PanelDesign | ReducedPanel,
        *,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        user_level: bool,
        domain: tuple[float, float],
        kernel: Kernel,
        bandwidth: float | str,
        grid: int | NDArray[np.float64] | None,
    ) -> None:
        super().__init__(design)
        self._x, self._y = x, y
        self._user_level = user_level
        self._domain = domain
        self._kernel = kernel
        self._bandwidth = bandwidth
        self._grid = grid

    @classmethod
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
        kernel : {"gaussian", "epanechnikov"} or Kernel
        bandwidth : float or "auto"
            In the units of x. ``"auto"`` (item-level only) balances the explicit bias,
            sampling and privacy-noise terms of Cor 4.11 (central) / Cor 6.7 (local) at fit
            time, when ε and the noise level are known (see :meth:`fit`).
        grid : int or array_like, optional
            Evaluation points: a number of equally spaced points over the domain, or the points
            themselves (inside the domain). Default: points one bandwidth apart, between
            5 and 201 of them. Item-level, the privacy noise grows in proportion to the number
            of points once they are closer than a bandwidth; user-level, with the composition
            over points (docs: resolution versus noise).
        levels : mapping of str to sequence, optional
            Declared factor levels, as in :meth:`LongitudinalOLS.from_formula
            <dplong.LongitudinalOLS.from_formula>` (rules in :mod:`dplong.formula`); with one
            numeric regressor they matter only where an expression uses a factor.

        Examples
        --------
        >>> import dplong
        >>> pigs = dplong.datasets.load_dietox()
        >>> dplong.PriestleyChao.from_formula("Weight ~ Time", pigs, groups="Pig",
        ...                                   domain=(1, 12), bandwidth=1.0, grid=12)
        PriestleyChao('Weight ~ Time', n_users=72)

        One ``levels`` mapping can serve every model (columns the formula does not use are
        ignored):

        >>> dplong.PriestleyChao.from_formula("Weight ~ Time", pigs, groups="Pig",
        ...                                   domain=(1, 12), bandwidth=1.0,
        ...                                   levels={"Cu": [1, 2, 3]})
        PriestleyChao('Weight ~ Time', n_users=72)
        """
        lo, hi = _check_domain(domain)
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
        points = None if grid is None else _check_grid(grid, lo, hi)
        eval_env = patsy.EvalEnvironment.capture(1)
        design: PanelDesign | ReducedPanel
        if groups is None:
            design, x, y = _item_design(formula, data, levels, eval_env)
            outside = (x < lo) | (x > hi)
            if outside.any():  # the design points are public: so is this refusal
                raise DataError(
                    f"x must lie in the public domain [{lo:g}, {hi:g}]; {int(outside.sum())} "
                    "values fall outside it (widen the domain or drop those rows)"
                )
        elif is_dask(data):
            spec = design_spec(formula, data, levels=levels, eval_env=eval_env)
            assert not isinstance(bandwidth, str)  # "auto" is refused above for user-level
            sums = functools.partial(
                _design_curve_sums,
                column=_regressor(spec.spec, formula),
                domain=(lo, hi),
                grid=_grid_points((lo, hi), points, bandwidth),
                kernel=kern,
                bandwidth=bandwidth,
            )
            design = reduce_design(
                data, spec, groups=groups, sums=sums, statistic=curves_from_sums, ordered=True
            )
            x = y = np.empty(0)
        else:
            if not isinstance(data, pd.DataFrame):
                raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
            built = DesignSpec.from_formula(formula, data, levels=levels, eval_env=eval_env)
            column = _regressor(built, formula)
            design = group_design(built, data, groups=groups)
            x, y, codes = _curve_rows(design, column, (lo, hi))
            design = dataclasses.replace(design, y=y, X=design.X[:0], codes=codes)
        return cls(
            design,
            x=x,
            y=y,
            user_level=groups is not None,
            domain=(lo, hi),
            kernel=kern,
            bandwidth=bandwidth,
            grid=points,
        )

    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        noise_sd: float | None = None,
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
        noise_sd : float, optional
            Item-level: σ_max, a public bound with ``Cov(errors) ⪯ σ_max² I`` (Def 4.7): the
            error standard deviation for independent errors, ``√‖Σ‖_op`` under dependence (for
            AR(1) errors with variance v and coefficient φ, ``v (1+φ)/(1-φ)``).
        amplitude : float, optional
            Item-level: a public bound A on ``|f(x) - c|`` for some unknown level c (half the
            range of f). The responses are projected onto ``c ± w`` with the radius
            ``A + σ_max √(2 log(2n/γ))`` (the Gaussian part of Lemma 4.9's radius, taken on the
            responses). Defaults to ``sup_norm``. With neither ``noise_sd`` nor ``amplitude``
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
        n = self.nobs_users
        if self._user_level:
            _refuse_unused(
                {"noise_sd": noise_sd, "amplitude": amplitude}, "user-level (groups given)"
            )
            if lipschitz is not None or sup_norm is not None:
                raise ParameterError(
                    "lipschitz and sup_norm bound the item-level bias from the public design; "
                    "user-level, visit times are private, so the target is the mean of the "
                    "users' smoothed curves and no bias bound is given"
                )
            assert isinstance(self._bandwidth, float | int)
            grid = self._resolve_grid(float(self._bandwidth))
            request = self._request(
                n,
                grid.size,
                epsilon=epsilon,
                delta=delta,
                privacy=privacy,
                bound=bound,
                variant=variant,
                gamma=gamma,
                refine=refine,
                focus=None,
                random_state=random_state,
                rng=rng,
                accountant=accountant,
            )
            return self._fit_users(request, grid, scale)
        if not (isinstance(scale, str) and scale == "estimate"):
            raise ParameterError(
                "item-level, the responses' scale comes from noise_sd and amplitude (or is "
                "estimated when neither is given); scale= applies to user-level curves"
            )
        request = self._request(
            n,
            1,
            epsilon=epsilon,
            delta=delta,
            privacy=privacy,
            bound=bound,
            variant=variant,
            gamma=gamma,
            refine=refine,
            focus=None,
            random_state=random_state,
            rng=rng,
            accountant=accountant,
        )
        return self._fit_items(request, noise_sd, amplitude, lipschitz, sup_norm)

    # ---------------------------------------------------------------- item-level (Def 4.7)

    def _fit_items(
        self,
        request: FitRequest,
        noise_sd: Any,
        amplitude: Any,
        lipschitz: Any,
        sup_norm: Any,
    ) -> CurveResults:
        n = self.nobs_users
        options, rng, accountant = request.options, request.rng, request.accountant
        smooth_lf = None if lipschitz is None else _positive(lipschitz, "lipschitz", "L_f")
        smooth_f = None if sup_norm is None else _positive(sup_norm, "sup_norm", "‖f‖∞ bound")
        stated = not (noise_sd is None and amplitude is None and sup_norm is None)
        sigma, amp = math.nan, 0.0
        if stated:
            sigma = _positive(noise_sd, "noise_sd", "σ_max, a public bound on the error sd")
            level = smooth_f if amplitude is None else _positive(amplitude, "amplitude", "A")
            if level is None:
                raise ParameterError(
                    "amplitude (a public bound on |f(x) - c|, half the range of f) or sup_norm "
                    "is needed with noise_sd to set the projection radius of the responses"
                )
            amp = level
        name = self._design.outcome
        responses = self._y[:, None]  # NaN: no response, the centre
        no_clip = math.sqrt(2.0 * math.log(2.0 * n / options.gamma))  # Lemma 4.9's union bound
        if options.variant == "default" and not options.local:
            plan = ReleasePlan.make(
                n=n,
                d=1,
                epsilon=options.epsilon,
                delta=options.delta,
                stated_scale=stated,
                count=False,
                refine=options.refine,
                moment=False,
            )
            plan.check()
            afford(accountant, options.epsilon, options.delta)
            for note in plan.notes:
                warn(note)
            where = locate(
                responses,
                plan=plan,
                names=(name,),
                rng=rng,
                gamma=options.gamma,
                rules=Rules(scale=np.array([sigma**2]) if stated else None),
            )
            sigma = float(where.sd[0])
            centre = float(where.centre[0])
            # fmin: a centre missed by hundreds of magnitudes has NaN figures (then withheld)
            width = float(np.fmin(amp + sigma * no_clip + where.centre_error[0], MAX_RADIUS))
            eps_curve = float(
                where.plan.calibrate(np.ones(1), "laplace", refined=where.refined).epsilon[0]
            )
            rho_curve = (
                float(where.plan.calibrate(np.ones(1), "gaussian", refined=where.refined).rho[0])
                if options.delta > 0
                else 0.0
            )
            entries = list(where.entries)
            midpoint_note = "the rough private mean" if where.refined else "the private midpoint"
            variant_name = "default (refined)" if where.refined else "default"
            bad = options.gamma * (2.0 if where.refined else 1.0)
            # the scale stage's verdicts, as every release reads them: too few responses off
            # a value most share, or a scale below the responses' resolution, leave no curve
            lost = bool(where.sparse[0] or where.unresolved[0])
            failed = lost
            notes: tuple[str, ...] = plan.notes + where.scale_notes(
                (name,), sparse=where.sparse, shown=np.array([not lost])
            )
            if where.unresolved[0] and not where.sparse[0]:
                notes += (
                    "No curve (NaN): the private scale of the responses fell below their "
                    "resolution around the private midpoint (its median missed below every "
                    "response), so the projection would clip them all. Raise epsilon, or state "
                    "noise_sd and amplitude.",
                )
        else:
            scale_ledger = None
            scale_notes: tuple[str, ...] = ()
            if not stated:
                # what the scale's plug-in warns of joins the results' notes (not only stderr)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    estimate = paper_scale(responses, options, rng, (name,))
                scale_notes = caught_notes(caught)
                for note in scale_notes:
                    warn(note)
                sigma, scale_ledger = math.sqrt(float(estimate.scale[0])), estimate.privacy
                options = paper_mean_options(options, stated=False)
            tau = amp + sigma * no_clip
            tau_bins = amp + sigma * math.sqrt(2.0 * math.log(2.0 / options.gamma))
            paper = _paper_midpoint(
                self._y, tau, tau_bins, options, rng, name, n
            )  # Alg 3 / 9 and their checks
            centre, width, eps_curve = paper.centre, paper.width, paper.curve_epsilon
            entries = ([] if scale_ledger is None else list(scale_ledger.entries)) + [paper.entry]
            midpoint_note = "the private midpoint"
            variant_name = "theory" if options.variant == "theory" else "paper (local)"
            rho_curve = 0.0
            bad, failed, lost = options.gamma + paper.failure, paper.failed, False
            notes = scale_notes + paper.notes

        lo, hi = self._domain
        spread = amp if amp > 0 else sigma  # estimated scale: the responses' spread stands in
        lf_auto = smooth_lf if smooth_lf is not None else 2.0 * spread / (hi - lo)
        b = self._resolve_bandwidth(n, eps_curve, sigma, lf_auto, width, options.local)
        grid = self._resolve_grid(b)
        weights = item_weights(self._x, grid, self._kernel, b, hi)
        clipped = _project(self._y, centre, width)
        mass = weights.sum(axis=0)  # Σ_i a_i(x): public
        energy = np.sqrt((weights**2).sum(axis=0))  # ‖a(x)‖₂: public
        if options.local:
            release = release_bounded_sum(
                clipped[:, None], np.array([width]), np.array([eps_curve]), rng, local=True
            )
            assert release.reports is not None
            noisy = weights.T @ release.reports[:, 0]  # public smoothing of private reports
            entries.append(
                LedgerEntry(
                    "mean",
                    "local lattice Laplace (Alg 8)",
                    f"{name} (projected responses)",
                    eps_curve,
                    0.0,
                    0.0,
                    float(release.sensitivity[0]),
                    float(release.scale[0]),
                )
            )
            noise_scale = np.full(grid.size, float(release.scale[0]))  # of each unit's draw
            noise_sd = float(release.sd[0]) * energy
            law = "normal"
        elif rho_curve > 0 and _gaussian_is_better(weights, eps_curve, rho_curve):
            joint = release_weighted_gaussian(clipped, width, weights, rho_curve, rng)
            noisy, noise_scale, noise_sd = joint.total, joint.scale, joint.sd
            entries.append(
                LedgerEntry(
                    "mean",
                    "discrete Gaussian, L2 over the grid (CKS 2020)",
                    f"curve at {grid.size} points",
                    0.0,
                    0.0,
                    rho_curve,
                    joint.sensitivity,
                    float(joint.scale[0]),
                )
            )
            law = "gaussian"
        else:
            joint = release_weighted_sums(clipped, width, weights, eps_curve, rng)
            noisy, noise_scale, noise_sd = joint.total, joint.scale, joint.sd
            entries.append(
                LedgerEntry(
                    "mean",
                    "lattice Laplace, L1 over the grid (Alg 1, 4)",
                    f"curve at {grid.size} points",
                    eps_curve,
                    0.0,
                    0.0,
                    joint.sensitivity,
                    float(joint.scale[0]),
                )
            )
            law = "laplace"
        ledger = PrivacyLedger.from_entries(entries, request.options.delta, request.options.privacy)
        charge(accountant, ledger, request.options.epsilon, request.options.delta)
        smoothing = (
            None
            if smooth_lf is None or smooth_f is None
            else item_bias_bound(self._x, grid, weights, smooth_lf, smooth_f)
        )
        assumptions = (
            f"Item-level fixed design (Def 4.7): the {n} design points are public; errors "
            f"with covariance below {sigma:.4g}² I"
            + (" (noise_sd)." if stated else " (estimated privately: the responses' spread)."),
            f"|f(x) - c| <= {amp:g} for some level c (amplitude)."
            if stated
            else "Responses treated as sub-Gaussian around one level (conservative: their "
            "spread includes the variation of f).",
            f"Responses projected onto {midpoint_note} ± {width:.4g}, wide enough that no "
            f"response is clipped except with probability gamma={request.options.gamma:g}.",
            _smoothness_note(smooth_lf, smooth_f),
        )
        index = pd.Index(grid, name="x")
        with np.errstate(over="ignore", invalid="ignore"):  # a far miss overflows its figures
            curve = centre * mass + noisy
            total_sd = np.broadcast_to(noise_sd, grid.shape).astype(float)
            sampling_sd = sigma * energy  # Lemma 4.9's Mad term
            variance = np.square(np.full(grid.size, sigma))
        # a number whose error figures overflow says nothing: withheld, as in the engine
        unbounded = overflowed(curve, total_sd, sampling_sd) & (not lost)
        if unbounded.any():
            notes += (
                "No curve (NaN): its error figures overflow (responses of hundreds of orders "
                "of magnitude); rescale the response.",
            )
        withheld = unbounded | lost
        if withheld.any():
            failed = True
            curve = np.where(withheld, np.nan, curve)
            total_sd = np.where(withheld, np.nan, total_sd)
            sampling_sd = np.where(withheld, np.nan, sampling_sd)
        release_result = Release(
            names=tuple(f"x={g:.6g}" for g in grid),
            estimate=curve,
            noise_sd=total_sd,
            noise_scale=np.broadcast_to(noise_scale, grid.shape).astype(float),
            noise_kind=law,
            sampling_sd=sampling_sd,
            bias=np.zeros(grid.size),
            interval=np.tile([centre - width, centre + width], (grid.size, 1)),
            midpoint=np.full(grid.size, centre),
            scale=variance,
            users=np.array([math.nan]),
            users_sd=math.nan,
            privacy=ledger,
            n=n,
            variant=variant_name,
            bad_events=np.full(grid.size, bad),
            notes=notes,
            failed=np.full(grid.size, failed),
        )
        return self._curve_results(
            [release_result],
            request.options,
            index=index,
            bandwidth=b,
            assumptions=assumptions,
            smoothing_bias=smoothing,
        )

    # ---------------------------------------------------------------- user-level curves

    def _fit_users(
        self, request: FitRequest, grid: NDArray[np.float64], scale: Any
    ) -> CurveResults:
        n = self.nobs_users
        b = float(self._bandwidth)
        proxy = scale_per_column(scale, grid.size, _no_dependence_model)
        names = tuple(f"x={g:.6g}" for g in grid)

        def statistics(_: tuple[Release, ...]) -> Statistics:
            design = self._design
            if isinstance(design, ReducedPanel):  # a Dask frame's curves, on this grid
                return Statistics(design.statistics, scale=proxy)
            curves = user_curves(
                self._x, self._y, design.codes, n, grid, self._kernel, b, self._domain[1]
            )
            return Statistics(curves, scale=proxy)

        block = Block(names, 1.0, statistics, proxy is not None, complete_rows=False)
        releases = run_blocks([block], n=n, request=request)
        assumptions = (
            "User-level: each user's own Priestley–Chao curve, normalised by the user's kernel "
            f"mass, is their statistic where their visits cover x (mass >= {MIN_USER_MASS:g}); "
            "the target is the mean of the users' smoothed curves over the users who cover x "
            "(counted privately per grid point).",
            "Scale estimated privately (the spread of the users' curve values)."
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

    # ---------------------------------------------------------------- shared

    def _resolve_bandwidth(
        self, n: int, epsilon: float, sigma: float, lf: float, width: float, local: bool
    ) -> float:
        """``"auto"``: minimise the explicit error terms of Cor 4.11 (central) / 6.7 (local).

        The sum of the squared bias ``(L_f μ₁ b)²`` (Lemma 4.9), the sampling variance
        ``σ² ∫K² / (n b)`` (equidistant design over the domain) and the privacy-noise variance
        of the curve's release with ``epsilon`` and projection half-width ``width``: centrally
        ``2 (2 w ‖a‖₁ / ε)²``, with ``‖a‖₁`` the largest total weight a design point has over
        the grid that this b gives; locally ``2 (2 w / ε)² ∫K² / (n b)``. All public. The
        minimiser over a log grid of b follows the corollaries' rates
        ``(σ²/n)^{1/3} ∨ (σ/(nε))^{1/2}`` (central) and ``(σ²/n)^{1/3} ∨ (σ/(√n ε))^{1/2}``
        (local), with this package's constants.
        """
        if not isinstance(self._bandwidth, str):
            return float(self._bandwidth)
        lo, hi = self._domain
        length = hi - lo
        k = self._kernel
        candidates = length * np.logspace(-4, math.log10(0.5), 120)
        design = np.linspace(lo, hi, 501)  # stand-in design points for the grid's L1 weight

        def noise_variance(b: float) -> float:
            if local:
                return 2.0 * (2.0 * width / epsilon) ** 2 * k.roughness * length / (n * b)
            grid = self._resolve_grid(b)
            l1 = length / n * float(k((grid[None, :] - design[:, None]) / b).sum(axis=1).max()) / b
            return 2.0 * (2.0 * width * l1 / epsilon) ** 2

        risk = [
            (lf * k.first_moment * b) ** 2
            + sigma**2 * k.roughness * length / (n * b)
            + noise_variance(b)
            for b in candidates
        ]
        return float(candidates[int(np.argmin(risk))])

    def _resolve_grid(self, bandwidth: float) -> NDArray[np.float64]:
        return _grid_points(self._domain, self._grid, bandwidth)

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
        lo, hi = self._domain
        grid = index.to_numpy(dtype=float)
        zeta = self._kernel.boundary_width(bandwidth, self._domain)
        boundary = (grid < lo + zeta) | (grid > hi - zeta)  # Lemma 4.9: x outside [ζ, 1 - ζ]
        level = "user" if self._user_level else "item"
        results = panel_results(
            releases,
            model=self.model_name,
            formula=self.formula,
            nobs_users=self.nobs_users,
            basis=_BASIS[level],
            options=options,
            assumptions=assumptions,
            results_class=CurveResults,
            kernel=self._kernel.name,
            bandwidth=bandwidth,
            domain=self._domain,
            level=level,
            boundary=pd.Series(boundary, index=index, name="boundary"),
            smoothing_bias=pd.Series(
                np.nan if smoothing_bias is None else smoothing_bias,
                index=index,
                name="smoothing bias",
            ),
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
            users=results.users.set_axis(index)
            if results.users.size == grid.size
            else results.users,
        )
        assert isinstance(curve, CurveResults)  # results_class=CurveResults above
        return curve


def _grid_points(
    domain: tuple[float, float], grid: int | NDArray[np.float64] | None, bandwidth: float
) -> NDArray[np.float64]:
    """The evaluation points: ``grid`` as given, or that many (default: one bandwidth apart)
    equally spaced over the domain."""
    lo, hi = domain
    if grid is None:
        count = int(np.clip(round((hi - lo) / bandwidth) + 1, MIN_GRID_POINTS, MAX_GRID_POINTS))
        return _even_grid(lo, hi, count)
    if isinstance(grid, int):
        return _even_grid(lo, hi, grid)
    return grid


@dataclass(frozen=True)
class _PaperMidpoint:
    """The paper's midpoint of the responses (Alg 3 / 9) and the curve's budget after it."""

    centre: float
    width: float
    curve_epsilon: float
    entry: LedgerEntry
    failure: float
    failed: bool
    notes: tuple[str, ...]


def _paper_midpoint(
    y: NDArray[np.float64],
    tau: float,
    tau_bins: float,
    options: ReleaseOptions,
    rng: np.random.Generator,
    name: str,
    n: int,
) -> _PaperMidpoint:
    """Item-level ``variant="theory"`` and local: half of ε for Alg 3 (stable histogram, bins of
    half-width τ, interval ``m̂ ± 3τ``) or Alg 9 (randomized response over ``|2hk| <= B``, bins
    τ', interval ``m̂ ± (τ + 2τ')``; τ and 3τ with ``"theory"``), half for the curve."""
    local, theory = options.local, options.variant == "theory"
    bins, width = (tau, 3.0 * tau) if theory or not local else (tau_bins, tau + 2.0 * tau_bins)
    eps = options.epsilon / 2.0
    if eps < MIN_LATTICE_EPSILON:
        raise ParameterError(f"epsilon={options.epsilon:.3g} is too small for the curve")
    observed = y[np.isfinite(y)]  # units without a response fall in no bin
    if local:
        assert options.bound is not None
        local_bins(bins, float(options.bound[0]))
        centre = local_midpoint(observed, bins, float(options.bound[0]), eps, rng, n)
        entry = LedgerEntry(
            "midpoint",
            "randomized-response histogram (Alg 7, 9)",
            name,
            eps,
            0.0,
            0.0,
            2.0,
            math.nan,
        )
        return _PaperMidpoint(centre, width, eps, entry, 0.0, False, ())
    check_histogram_feasible(n, eps, options.delta, remedy="more epsilon or delta")
    centre, failed = central_midpoint(observed, bins, eps, options.delta, rng, n)
    entry = LedgerEntry(
        "midpoint",
        "stable histogram (Alg 2, 3)",
        name,
        eps,
        options.delta,
        0.0,
        2.0 / n,
        2.0 / (eps * n),
    )
    failure = midpoint_failure_probability(n, eps, options.delta, options.gamma, wide_bins=True)
    notes = (
        (
            "The private midpoint failed (no histogram bin survived) and fell back to 0, as in "
            "the paper's Alg 3: the curve is unreliable.",
        )
        if failed
        else ()
    )
    return _PaperMidpoint(centre, width, eps, entry, failure, failed, notes)


# -------------------------------------------------------------------- reductions (public facts)


def item_weights(
    x: NDArray[np.float64],
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
    hi: float,
) -> NDArray[np.float64]:
    """``a_i(x_g) = w_i K((x_g - x_i)/b) / b`` with ``w_i`` the spacing to the next design
    point (the last to ``hi``), as in Def 4.8; n x G. Units at the same design point share
    its spacing equally (the Riemann sum then averages their responses; without this every
    tie but the last would get weight 0).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.kernel import item_weights
    >>> x = np.arange(1000) / 1000                      # the equidistant design of Def 4.7
    >>> a = item_weights(x, np.array([0.5]), get_kernel("gaussian"), 0.05, hi=1.0)
    >>> a.shape, round(float(a.sum()), 6)               # a Riemann sum of K: 1 inside
    ((1000, 1), 1.0)
    >>> tied = item_weights(np.repeat(x, 3), np.array([0.5]), get_kernel("gaussian"), 0.05,
    ...                     hi=1.0)
    >>> round(float(tied.sum()), 6), bool(np.allclose(tied[0::3], tied[1::3]))
    (1.0, True)
    """
    points, inverse, ties = np.unique(x, return_inverse=True, return_counts=True)
    spacing = (np.diff(points, append=hi) / ties)[inverse]
    return np.asarray(
        spacing[:, None] * kernel((grid[None, :] - x[:, None]) / bandwidth) / bandwidth
    )


def item_bias_bound(
    x: NDArray[np.float64],
    grid: NDArray[np.float64],
    weights: NDArray[np.float64],
    lipschitz: float,
    sup_norm: float,
) -> NDArray[np.float64]:
    """Bound on ``|Σ_i a_i(x) f(x_i) - f(x)|`` for L_f-Lipschitz f with ``‖f‖∞ <= F``.

    ``Σ_i a_i (f(x_i) - f(x)) - (1 - Σ_i a_i) f(x)`` is at most
    ``L_f Σ_i a_i |x_i - x| + |1 - Σ_i a_i| F``: Lemma 4.9's two bias terms (kernel moment and
    Riemann-sum error, Lemma D.14), here evaluated exactly on the public design instead of
    bounded by ``b (L_f μ₁(K) + ‖f‖∞) + (L_f ‖K‖∞ + ‖f‖∞ L_K)/(nb)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.kernel import item_bias_bound, item_weights
    >>> x, grid = np.arange(1000) / 1000, np.array([0.0, 0.5])
    >>> a = item_weights(x, grid, get_kernel("epanechnikov"), 0.05, hi=1.0)
    >>> bias = item_bias_bound(x, grid, a, lipschitz=1.0, sup_norm=1.0)
    >>> bool(bias[1] < 0.05 * 0.375 + 0.01)     # interior: about L_f b μ₁(K)
    True
    >>> bool(bias[0] > 0.4)                     # at the end half the kernel mass is missing
    True
    """
    distance = np.abs(x[:, None] - grid[None, :])
    moment = np.einsum("ig,ig->g", weights, distance)
    return np.asarray(lipschitz * moment + np.abs(1.0 - weights.sum(axis=0)) * sup_norm)


#: A user's curve is defined at x where their visits carry at least this much kernel mass
#: (about 1 where their visits cover x, about 1/2 at the end of the visits they cover):
#: elsewhere the Priestley–Chao sum is not an estimate of their curve but of 0.
MIN_USER_MASS = 0.25


def user_curves(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
    hi: float,
) -> NDArray[np.float64]:
    """Every user's Priestley–Chao curve on the grid (n x G), NaN where they have none.

    Rows must come by user, then by x. A user's weights are the spacings to their next visit
    (the last visit's to ``hi``); the curve is the weighted kernel sum divided by the user's
    kernel mass ``Σ_t w_t K((x - x_t)/b)/b`` — about 1 inside their visits, so it changes
    little there and removes the bias towards 0 at their ends — and it is defined only where
    that mass is at least :data:`MIN_USER_MASS`: :func:`curves_from_sums` of
    :func:`curve_sums`.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.kernel import user_curves
    >>> x = np.array([0.0, 0.5, 0.0, 0.25, 0.5, 0.75])     # user 0: 2 visits, user 1: 4
    >>> y = np.ones(6)
    >>> codes = np.array([0, 0, 1, 1, 1, 1])
    >>> user_curves(x, y, codes, 3, np.array([0.5, 0.85]), get_kernel("epanechnikov"), 0.25,
    ...             hi=1.0).round(4).tolist()
    [[1.0, nan], [1.0, 1.0], [nan, nan]]
    """
    return curves_from_sums(curve_sums(x, y, codes, n, grid, kernel, bandwidth, hi))


def curve_sums(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
    hi: float,
) -> NDArray[np.float64]:
    """Every user's weighted kernel sums ``Σ_t w_t y_t K((x - x_t)/b)/b`` and kernel masses
    ``Σ_t w_t K((x - x_t)/b)/b`` on the grid, side by side (n x 2G).

    Rows must come by user, then by x (the weights ``w_t`` are spacings to the next visit).
    The kernel matrix is built in blocks of rows and reduced to users by a sparse (users x
    rows) product, so memory stays O(block x G).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.kernel import curve_sums
    >>> sums = curve_sums(np.array([0.0, 0.5]), np.array([2.0, 2.0]), np.array([0, 0]), 1,
    ...                   np.array([0.5]), get_kernel("epanechnikov"), 0.25, hi=1.0)
    >>> sums.round(4).tolist()                # sum = 2 x mass: the curve is 2 there
    [[3.0, 1.5]]
    """
    last = np.ones(x.size, dtype=bool)
    last[:-1] = codes[1:] != codes[:-1]
    spacing = np.where(last, hi - x, np.diff(x, append=hi))
    out = np.zeros((n, 2 * grid.size))
    sums, mass = out[:, : grid.size], out[:, grid.size :]
    for start in range(0, x.size, _CHUNK_ROWS):
        block = slice(start, start + _CHUNK_ROWS)
        rows = np.arange(x[block].size)
        kernel_block = kernel((grid[None, :] - x[block, None]) / bandwidth)
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
    >>> from dplong.models.kernel import curves_from_sums
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
    (stable: ties keep the rows' order). x is private: a row outside is a missing value."""
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
    """:func:`curve_sums` of the rows of a design (a Dask partition holding whole users)."""
    x, y, codes = _curve_rows(design, column, domain)
    return curve_sums(x, y, codes, design.n, grid, kernel, bandwidth, domain[1])


# -------------------------------------------------------------------- input checks


def _item_design(
    formula: str,
    data: pd.DataFrame | DaskFrame,
    levels: LevelsLike | None,
    eval_env: patsy.EvalEnvironment,
) -> tuple[PanelDesign, NDArray[np.float64], NDArray[np.float64]]:
    """Item-level rows: x public and complete; a missing (or infinite) response contributes
    the centre. A Dask frame's rows are evaluated partition by partition, in order."""
    if is_dask(data):
        frame_spec = design_spec(formula, data, levels=levels, eval_env=eval_env)
        spec = frame_spec.spec
        column = _regressor(spec, formula)
        y, X, missing_y, missing_x = evaluate_rows(data, frame_spec)
    else:
        if not isinstance(data, pd.DataFrame):
            raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
        spec = DesignSpec.from_formula(formula, data, levels=levels, eval_env=eval_env)
        column = _regressor(spec, formula)
        # keep every row: n and the design are public, so nothing may be dropped
        y, X, missing_y, missing_x = spec.evaluate(data)
    if len(y) < 2:
        raise DataError(f"item-level regression needs at least 2 rows, got {len(y)}")
    if missing_x.any():
        raise DataError(
            "item-level design points must be finite and complete (they are public); "
            f"{int(missing_x.sum())} are missing or infinite"
        )
    x, y = X[:, column], np.where(missing_y, np.nan, y)
    n = x.size
    design = PanelDesign(
        y=y,
        X=np.empty((0, 0)),
        codes=np.arange(n, dtype=np.intp),
        n=n,
        columns=spec.columns,
        outcome=spec.outcome,
        formula=formula,
    )
    return design, x, y


def _regressor(spec: DesignSpec, formula: str) -> int:
    """The design column of the one numeric regressor x."""
    columns = spec.columns
    others = [j for j, c in enumerate(columns) if c != "Intercept"]
    if len(others) != 1:
        raise FormulaError(
            f"Priestley–Chao regression takes one regressor ('y ~ x'); {formula!r} gives "
            f"{[columns[j] for j in others]}"
        )
    factors = [
        f.name()
        for f, info in spec.regressor_info.factor_infos.items()
        if info.type == "categorical"
    ]
    if factors:
        raise FormulaError(
            f"Priestley–Chao regression needs a numeric regressor x; {factors[0]!r} in "
            f"{formula!r} is a factor"
        )
    return others[0]


def _even_grid(lo: float, hi: float, count: int) -> NDArray[np.float64]:
    """Equally spaced points, rounded to 12 significant digits so labels read 0.3, not
    0.30000000000000004 (a public choice of evaluation points; any points would do)."""
    points = np.linspace(lo, hi, count)
    scale = max(abs(lo), abs(hi))
    return np.round(points, 12 - math.floor(math.log10(scale)) if scale > 0 else 12)


def _check_domain(domain: Any) -> tuple[float, float]:
    try:
        lo, hi = (real_number(v, "domain") for v in domain)
    except (TypeError, ValueError, ParameterError):
        raise ParameterError(
            f"domain must be a pair (lo, hi) of numbers, got {domain!r:.80}"
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError(f"domain must be finite with lo < hi, got {domain!r}")
    return lo, hi


def _check_grid(grid: Any, lo: float, hi: float) -> int | NDArray[np.float64]:
    if isinstance(grid, int | np.integer) and not isinstance(grid, bool):
        if not 2 <= grid <= MAX_EVALUATION_POINTS:
            raise ParameterError(
                f"grid must have between 2 and {MAX_EVALUATION_POINTS} points, got {grid!r}"
            )
        return int(grid)
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
    return np.unique(points)


def _positive(value: Any, name: str, what: str) -> float:
    if value is None:
        raise ParameterError(f"{name} ({what}) is required")
    number = real_number(value, name, expected=f"a positive number ({what})")
    if not (math.isfinite(number) and number > 0):
        raise ParameterError(f"{name} ({what}) must be a positive number, got {value!r}")
    return number


def _no_dependence_model(model: Any) -> float:
    raise ParameterError(
        "a dependence model does not give the scale of a user's curve value (it depends on the "
        'private visit times); give a number, one per grid point, or "estimate"'
    )


def _refuse_unused(arguments: dict[str, Any], design: str) -> None:
    given = [k for k, v in arguments.items() if v is not None]
    if given:
        raise ParameterError(f"{given} do not apply to {design} Priestley–Chao regression")


def _project(y: NDArray[np.float64], centre: float, width: float) -> NDArray[np.float64]:
    """Responses minus the centre, projected onto ``[-width, width]``; missing ones give 0."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(y), np.clip(y - centre, -width, width), 0.0)


def _gaussian_is_better(weights: NDArray[np.float64], epsilon: float, rho: float) -> bool:
    """Whether the L2 release (ρ) has less noise than the L1 release (ε) of the same curve:
    Laplace sd ``√2 Δ₁ / ε`` against Gaussian ``Δ₂ / √(2ρ)``, both from the public weights."""
    l1 = float(np.abs(weights).sum(axis=1).max())
    l2 = float(np.sqrt((weights**2).sum(axis=1)).max())
    return l2 / math.sqrt(2.0 * rho) < math.sqrt(2.0) * l1 / epsilon


def _smoothness_note(lipschitz: float | None, sup_norm: float | None) -> str:
    if lipschitz is None or sup_norm is None:
        return (
            "No smoothness stated: bands and error bounds concern the kernel-smoothed curve "
            "Σ a_i(x) f(x_i), not f itself (give lipschitz= and sup_norm= to bound the bias)."
        )
    return (
        f"f is {lipschitz:g}-Lipschitz with |f| <= {sup_norm:g}: the error bound includes the "
        "smoothing bias, computed on the public design."
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
            Option(
                "kernel",
                "text",
                "NAME",
                "smoothing kernel (default gaussian)",
                stage="model",
                choices=tuple(KERNELS),
            ),
        ),
    )
)
