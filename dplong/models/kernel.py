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

import math
from typing import Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from dplong._validation import RandomState, check_random_state
from dplong.bounds import midpoint_failure_probability
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import DesignSpec, LevelsLike, PanelDesign, build_design
from dplong.kernels import Kernel, get_kernel
from dplong.models.base import (
    PanelModel,
    common_fit_args,
    scale_per_column,
)
from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger, split_budget
from dplong.privacy.interval import (
    central_midpoint,
    check_histogram_feasible,
    local_bins,
    local_midpoint,
)
from dplong.privacy.noise import (
    release_bounded_sum,
    release_weighted_sums,
    two_sided_geometric_variance,
)
from dplong.privacy.plugin import ScaleRequest, estimate_first
from dplong.privacy.radius import DEFAULT_GAMMA, bin_radius, concentration_radius
from dplong.privacy.winsorized import (
    ReleaseOptions,
    best_refinement_share,
    check_lattice_epsilon,
    mean_entries,
    midpoint_budget,
    midpoint_entry,
)
from dplong.results import CurveResults

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
        design: PanelDesign,
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
        data: pd.DataFrame,
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
        data : pandas.DataFrame
        groups : str or array_like, optional
            User id column: each user's own curve is their statistic (user-level). Without
            it every row is a unit and the design points x are public (item-level).
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
        if groups is None:
            design, x, y = _item_design(formula, data, levels, eval_env)
            outside = (x < lo) | (x > hi)
            if outside.any():  # the design points are public: so is this refusal
                raise DataError(
                    f"x must lie in the public domain [{lo:g}, {hi:g}]; {int(outside.sum())} "
                    "values fall outside it (widen the domain or drop those rows)"
                )
        else:
            design = build_design(formula, data, groups=groups, levels=levels, eval_env=eval_env)
            x = design.X[:, _regressor(design.columns, formula)]
            inside = np.flatnonzero((x >= lo) & (x <= hi))  # x private: outside is missing
            order = inside[np.lexsort((x[inside], design.codes[inside]))]  # by user, then x
            x, y = x[order], design.y[order]
            design = PanelDesign(
                y=y,
                X=design.X[:0],
                codes=design.codes[order],
                n=design.n,
                columns=design.columns,
                outcome=design.outcome,
                formula=design.formula,
            )
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
        scale: float | ArrayLike | str | None = None,
        scale_share: float | None = None,
        scale_bounds: tuple[float, float] | None = None,
        scale_method: str | None = None,
        lipschitz: float | None = None,
        sup_norm: float | None = None,
        privacy: str = "central",
        bound: float | None = None,
        random_state: RandomState = None,
        variant: str = "improved",
        midpoint_share: float | None = None,
        gamma: float = DEFAULT_GAMMA,
        accountant: Accountant | None = None,
    ) -> CurveResults:
        """Release the curve on the grid with (ε, δ)-DP: item-level or user-level.

        Parameters
        ----------
        epsilon, delta : float
            Total budget (central δ default ``1/n**2``; local default pure ε).
        noise_sd : float
            Item-level: σ_max, a public bound with ``Cov(errors) ⪯ σ_max² I`` (Def 4.7): the
            error standard deviation for independent errors, ``√‖Σ‖_op`` under dependence (for
            AR(1) errors with variance v and coefficient φ, ``v (1+φ)/(1-φ)``).
        amplitude : float
            Item-level: a public bound A on ``|f(x) - c|`` for some unknown level c (half the
            range of f). The responses are projected onto ``m̂ ± w`` with the radius
            ``τ = A + σ_max √(2 log(2n/γ))`` (the Gaussian part of Lemma 4.9's radius, taken on
            the responses). Defaults to ``sup_norm``. With none of ``noise_sd``, ``amplitude``
            and ``sup_norm`` given, the responses' variance proxy ρ̂ is estimated privately
            (``scale_share`` of the budget) and used as ``σ_max² = ρ̂`` with ``A = 0``: the
            responses are treated as sub-Gaussian around one level.
        scale : "estimate", float or array_like
            User-level: variance proxy of one user's curve value, common or one per grid point
            (between-user spread of the curves plus their own noise). Default ``"estimate"``:
            estimated privately from the users' curves.
        scale_share, scale_bounds, scale_method
            With an estimated scale (user-level ``scale="estimate"``, or item-level without
            ``noise_sd``): as in :meth:`LongitudinalOLS.fit
            <dplong.LongitudinalOLS.fit>` (defaults: an adaptive share, the package's wide bounds,
            ``"coinpress"``).
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
        random_state, variant, midpoint_share, gamma, accountant
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
        if self._user_level:
            return self._fit_users(
                epsilon=epsilon,
                delta=delta,
                scale="estimate" if scale is None else scale,
                request=ScaleRequest.check(
                    scale_share,
                    scale_bounds,
                    scale_method or "coinpress",
                ),
                privacy=privacy,
                bound=bound,
                random_state=random_state,
                variant=variant,
                midpoint_share=midpoint_share,
                gamma=gamma,
                accountant=accountant,
                unused={"noise_sd": noise_sd, "amplitude": amplitude},
                smoothness=(lipschitz, sup_norm),
            )
        return self._fit_items(
            epsilon=epsilon,
            delta=delta,
            noise_sd=noise_sd,
            amplitude=amplitude,
            lipschitz=lipschitz,
            sup_norm=sup_norm,
            privacy=privacy,
            bound=bound,
            random_state=random_state,
            variant=variant,
            midpoint_share=midpoint_share,
            gamma=gamma,
            accountant=accountant,
            request=ScaleRequest.check(scale_share, scale_bounds, scale_method or "coinpress"),
            unused={"scale": scale}
            if noise_sd is None and amplitude is None and sup_norm is None
            else {
                "scale": scale,
                "scale_share": scale_share,
                "scale_bounds": scale_bounds,
                "scale_method": scale_method,
            },
        )

    # ---------------------------------------------------------------- item-level (Def 4.7)

    def _fit_items(
        self,
        *,
        epsilon: Any,
        delta: Any,
        noise_sd: Any,
        amplitude: Any,
        lipschitz: Any,
        sup_norm: Any,
        privacy: Any,
        bound: Any,
        random_state: RandomState,
        variant: Any,
        midpoint_share: Any,
        gamma: Any,
        accountant: Accountant | None,
        request: ScaleRequest,
        unused: dict[str, Any],
    ) -> CurveResults:
        _refuse_unused(unused, "item-level (groups=None)")
        n = self.nobs_users
        options = ReleaseOptions.check(
            n,
            epsilon=epsilon,
            delta=delta,
            privacy=privacy,
            bound=bound,
            d=1,
            variant=variant,
            midpoint_share=midpoint_share,
            gamma=gamma,
        )
        rng = check_random_state(random_state)
        smooth_lf = None if lipschitz is None else _positive(lipschitz, "lipschitz", "L_f")
        smooth_f = None if sup_norm is None else _positive(sup_norm, "sup_norm", "‖f‖∞ bound")
        scale_ledger = None
        if noise_sd is None and amplitude is None and sup_norm is None:
            # nothing stated about the responses: estimate their spread privately first
            rho, scale_ledger, options = self._response_scale(options, request, rng, accountant)
            sigma, amp = math.sqrt(rho), 0.0
            response_note = (
                "Responses treated as sub-Gaussian around one level; their variance proxy "
                f"{rho:.4g} was estimated privately ({request.method}, budget in the ledger) "
                "and noise_sd taken as its square root (conservative: it includes the "
                "variation of f)."
            )
        else:
            sigma = _positive(noise_sd, "noise_sd", "σ_max, a public bound on the error sd")
            stated = smooth_f if amplitude is None else _positive(amplitude, "amplitude", "A")
            if stated is None:
                raise ParameterError(
                    "amplitude (a public bound on |f(x) - c|, half the range of f) or sup_norm "
                    "is needed with noise_sd to set the projection radius of the responses"
                )
            amp = stated
            response_note = f"|f(x) - c| <= {amp:g} for some level c (amplitude)."
        local = options.privacy == "local"
        lo, hi = self._domain
        # radii of the responses: |Y_i - c| <= A + σ √(2 log(2n/γ)) for all i w.p. 1 - γ
        tau = amp + float(concentration_radius(np.array([sigma**2]), n, 1, options.gamma)[0])
        tau_bins = amp + float(bin_radius(np.array([sigma**2]), options.gamma)[0])
        if options.variant == "improved":
            bins_half, half_width = tau_bins, tau + 2.0 * tau_bins
        else:
            bins_half, half_width = tau, 3.0 * tau
        _, _, share = midpoint_budget(n, 1, options)  # and its public checks
        refine = options.variant == "improved" and not local
        share_refine = (
            best_refinement_share(
                n,
                half_width,
                share,
                options.epsilon,
                lambda noise: _refined_width(n, amp, sigma, noise, options.gamma),
            )
            if refine
            else 0.0
        )
        eps_mid, eps_refine = share * options.epsilon, share_refine * options.epsilon
        eps_curve = options.epsilon - eps_mid - eps_refine
        final_width = (
            _refined_width(n, amp, sigma, 2.0 * half_width / (n * eps_refine), options.gamma)
            if share_refine > 0
            else half_width
        )
        spread = amp if amp > 0 else sigma  # estimated scale: the responses' spread stands in
        lf_auto = smooth_lf if smooth_lf is not None else 2.0 * spread / (hi - lo)
        b = self._resolve_bandwidth(n, eps_curve, sigma, lf_auto, final_width, local)
        grid = self._resolve_grid(b)
        weights = item_weights(self._x, grid, self._kernel, b, hi)

        # The curve: one L1 release, or advanced composition over the G points if cheaper.
        per_point = split_budget(eps_curve, options.delta, grid.size, pure=local)
        joint_cost = grid.size * (2.0 * final_width * weights.sum(axis=1).max() / eps_curve) ** 2
        advanced_cost = float(
            np.sum((2.0 * final_width * weights.max(axis=0) / per_point.epsilon) ** 2)
        )
        advanced = not local and per_point.method == "advanced" and advanced_cost < joint_cost
        delta_mid = options.delta - per_point.slack if advanced else options.delta
        check_lattice_epsilon(
            per_point.epsilon if advanced else eps_curve, "the curve's epsilon per release"
        )
        if eps_refine > 0:
            check_lattice_epsilon(eps_refine, "the refinement's epsilon")
        if local:
            assert options.bound is not None
            local_bins(bins_half, float(options.bound[0]))
        elif advanced:  # its slack leaves the histogram less δ than midpoint_budget checked
            check_histogram_feasible(n, eps_mid, delta_mid)
        total_eps = eps_mid + eps_refine + (per_point.total_epsilon if advanced else eps_curve)
        total_delta = 0.0 if local else options.delta
        if accountant is not None and scale_ledger is None:  # else checked in full before
            accountant.check(total_eps, total_delta)

        observed = np.isfinite(self._y)  # units without a response fall in no bin
        failed = False
        if local:
            assert options.bound is not None
            midpoint = local_midpoint(
                self._y[observed], bins_half, float(options.bound[0]), eps_mid, rng, n
            )
        else:
            midpoint, failed = central_midpoint(
                self._y[observed], bins_half, eps_mid, delta_mid, rng, n
            )
        name = self._design.outcome
        entries = [midpoint_entry(name, eps_mid, delta_mid, n, local)]
        centre, width = midpoint, half_width
        if share_refine > 0:  # a rough mean re-centres the final interval (§7.1.2-style)
            rough = release_bounded_sum(
                _project(self._y, observed, centre, width)[:, None],
                np.array([width]),
                np.array([eps_refine]),
                rng,
            )
            entries += mean_entries((name,), "refinement", eps_refine, rough, n, local=False)
            centre = midpoint + float(rough.total[0]) / n
            width = _refined_width(n, amp, sigma, entries[-1].noise_scale, options.gamma)
        clipped = _project(self._y, observed, centre, width)
        mass = weights.sum(axis=0)  # Σ_i a_i(x): public
        energy = np.sqrt((weights**2).sum(axis=0))  # ‖a(x)‖₂: public
        if local:
            release = release_bounded_sum(
                clipped[:, None], np.array([width]), np.array([eps_curve]), rng, local=True
            )
            assert release.reports is not None
            noisy = weights.T @ release.reports[:, 0]  # public smoothing of private reports
            entries += mean_entries((name,), "projected responses", eps_curve, release, n, True)
            noise_scale = np.full(grid.size, entries[-1].noise_scale)  # of each unit's draw
            draw_sd = float(
                np.sqrt(two_sided_geometric_variance(release.rate)[0]) * release.step[0]
            )
            noise_sd = draw_sd * energy
            composition = "sequential (midpoint, responses); smoothing is post-processing"
        elif advanced:
            noisy, noise_scale, noise_sd = (
                np.empty(grid.size),
                np.empty(grid.size),
                np.empty(grid.size),
            )
            for g in range(grid.size):
                point = release_weighted_sums(
                    clipped, width, weights[:, g : g + 1], per_point.epsilon, rng
                )
                noisy[g], noise_scale[g], noise_sd[g] = point.total[0], point.scale[0], point.sd[0]
                entries.append(
                    LedgerEntry(
                        "lattice Laplace (Alg 1, 4)",
                        f"curve at x={grid[g]:.6g}",
                        per_point.epsilon,
                        0.0,
                        point.sensitivity,
                        point.scale[0],
                    )
                )
            composition = "sequential (midpoint, curve); advanced over the grid points"
        else:
            joint = release_weighted_sums(clipped, width, weights, eps_curve, rng)
            noisy, noise_scale, noise_sd = joint.total, joint.scale, joint.sd
            entries.append(
                LedgerEntry(
                    "lattice Laplace, L1 over the grid (Alg 1, 4)",
                    f"curve at {grid.size} points",
                    eps_curve,
                    0.0,
                    joint.sensitivity,
                    float(joint.scale[0]),
                )
            )
            composition = "sequential (midpoint, curve); one L1 release over the grid"
        ledger = PrivacyLedger(
            tuple(entries), total_eps, total_delta, composition, "local" if local else "central"
        )
        if scale_ledger is not None:
            ledger = scale_ledger + ledger
        if accountant is not None:
            accountant.record(ledger)
        estimate = centre * mass + noisy
        sampling_sd = sigma * energy  # Lemma 4.9's Mad term
        bias = (
            None
            if smooth_lf is None or smooth_f is None
            else item_bias_bound(self._x, grid, weights, smooth_lf, smooth_f)
        )
        assumptions = (
            f"Item-level fixed design (Def 4.7): the {n} design points are public; errors "
            f"with covariance below {sigma:.4g}² I (noise_sd).",
            response_note,
            f"Responses projected onto "
            f"{'the rough private mean' if share_refine > 0 else 'the private midpoint'} ± "
            f"{width:.4g}.",
            _smoothness_note(smooth_lf, smooth_f),
        )
        return self._curve_results(
            grid=grid,
            bandwidth=b,
            estimate=estimate,
            noise_scale=noise_scale,
            noise_sd=noise_sd,
            sampling_sd=sampling_sd,
            interval=(centre - width, centre + width),
            failed=failed,
            ledger=ledger,
            variant=options.variant + (" (refined)" if share_refine > 0 else ""),
            assumptions=assumptions,
            gamma=options.gamma,
            bias=bias,
            failure=math.nan
            if local
            else midpoint_failure_probability(
                n, eps_mid, delta_mid, options.gamma, wide_bins=options.variant == "theory"
            ),
        )

    def _response_scale(
        self,
        options: ReleaseOptions,
        request: ScaleRequest,
        rng: np.random.Generator,
        accountant: Accountant | None,
    ) -> tuple[float, PrivacyLedger, ReleaseOptions]:
        """Item-level ``scale="estimate"``: the responses' variance proxy, privately.

        A share of ε and δ (``request``) goes to :func:`~dplong.privacy.estimate_scale` on the
        responses; the curve's release gets the rest (returned options). The accountant is
        checked for the whole fit and the curve's midpoint for feasibility, before any noise.
        """
        estimate, rest = estimate_first(
            self._y[:, None],  # NaN: no response, the centre
            options=options,
            request=request,
            rng=rng,
            accountant=accountant,
            names=(self._design.outcome,),
        )
        return float(estimate.scale[0]), estimate.privacy, rest

    # ---------------------------------------------------------------- user-level curves

    def _fit_users(
        self,
        *,
        epsilon: Any,
        delta: Any,
        scale: Any,
        request: ScaleRequest,
        privacy: Any,
        bound: Any,
        random_state: RandomState,
        variant: Any,
        midpoint_share: Any,
        gamma: Any,
        accountant: Accountant | None,
        unused: dict[str, Any],
        smoothness: tuple[Any, Any],
    ) -> CurveResults:
        _refuse_unused(unused, "user-level (groups given)")
        if any(s is not None for s in smoothness):
            raise ParameterError(
                "lipschitz and sup_norm bound the item-level bias from the public design; "
                "user-level, visit times are private, so the target is the mean of the users' "
                "smoothed curves and no bias bound is given"
            )
        assert isinstance(self._bandwidth, float | int)
        b = float(self._bandwidth)
        grid = self._resolve_grid(b)
        n = self.nobs_users
        options, rng = common_fit_args(
            n,
            grid.size,
            epsilon=epsilon,
            delta=delta,
            privacy=privacy,
            bound=bound,
            variant=variant,
            midpoint_share=midpoint_share,
            gamma=gamma,
            random_state=random_state,
        )
        proxy = scale_per_column(scale, grid.size, _no_dependence_model)
        curves, identified = user_curves(
            self._x, self._y, self._design.codes, n, grid, self._kernel, b, self._domain[1]
        )
        names = tuple(f"x={g:.6g}" for g in grid)
        release = self._release(curves, identified, proxy, names, options, rng, accountant, request)
        assumptions = (
            "User-level: each user's own Priestley–Chao curve (spacing to the next visit, the "
            "last visit to the domain's end) is their statistic; the target is the mean of "
            "the users' smoothed curves.",
            request.describe(release.scale)
            if proxy is None
            else f"Variance proxy of one user's curve value (scale): {np.ravel(scale).tolist()}.",
            "Standard errors and bands combine the stated scale (users independent) with the "
            "exact privacy-noise law.",
        )
        return self._curve_results(
            grid=grid,
            bandwidth=b,
            estimate=np.asarray(release.estimate),
            noise_scale=np.asarray(release.noise_scale),
            noise_sd=np.asarray(release.noise_sd),
            sampling_sd=np.sqrt(release.scale / n),
            interval=release.interval,
            failed=np.asarray(release.failed),
            ledger=release.privacy,
            variant=release.variant,
            assumptions=assumptions,
            gamma=options.gamma,
            bias=None,
            failure=release.midpoint_failure,
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
        lo, hi = self._domain
        if self._grid is None:
            count = int(np.clip(round((hi - lo) / bandwidth) + 1, MIN_GRID_POINTS, MAX_GRID_POINTS))
            return _even_grid(lo, hi, count)
        if isinstance(self._grid, int):
            return _even_grid(lo, hi, self._grid)
        return self._grid

    def _curve_results(
        self,
        *,
        grid: NDArray[np.float64],
        bandwidth: float,
        estimate: NDArray[np.float64],
        noise_scale: NDArray[np.float64],
        noise_sd: NDArray[np.float64],
        sampling_sd: NDArray[np.float64],
        interval: Any,
        failed: Any,
        ledger: PrivacyLedger,
        variant: str,
        assumptions: tuple[str, ...],
        gamma: float,
        bias: NDArray[np.float64] | None,
        failure: Any,
    ) -> CurveResults:
        lo, hi = self._domain
        index = pd.Index(grid, name="x")
        zeta = self._kernel.boundary_width(bandwidth, self._domain)
        boundary = (grid < lo + zeta) | (grid > hi - zeta)  # Lemma 4.9: x outside [ζ, 1 - ζ]

        def series(values: Any, name: str) -> pd.Series:
            out: pd.Series = pd.Series(
                np.broadcast_to(np.asarray(values, dtype=float), grid.shape), index=index, name=name
            )
            return out

        level = "user" if self._user_level else "item"
        return CurveResults(
            model=self.model_name,
            formula=self.formula,
            params=series(estimate, "params"),
            noise_scale=series(noise_scale, "noise scale"),
            noise_sd=series(noise_sd, "noise sd"),
            sampling_sd=series(sampling_sd, "sampling sd"),
            projection_interval=pd.DataFrame(
                np.broadcast_to(np.asarray(interval, dtype=float), (grid.size, 2)),
                index=index,
                columns=["lower", "upper"],
            ),
            failed=series(failed, "failed").astype(bool),
            privacy=ledger,
            nobs_users=self.nobs_users,
            variant=variant,
            assumptions=assumptions,
            gamma=gamma,
            kernel=self._kernel.name,
            bandwidth=bandwidth,
            domain=self._domain,
            level=level,
            boundary=series(boundary, "boundary").astype(bool),
            bias=series(np.nan if bias is None else bias, "bias"),
            midpoint_failure=series(failure, "midpoint failure"),
            basis=_BASIS[level][ledger.model == "local"],
        )


# -------------------------------------------------------------------- reductions (public facts)


def item_weights(
    x: NDArray[np.float64],
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
    hi: float,
) -> NDArray[np.float64]:
    """``a_i(x_g) = w_i K((x_g - x_i)/b) / b`` with ``w_i`` the spacing to the next design
    point (the last to ``hi``), as in Def 4.8; n x G.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.kernel import item_weights
    >>> x = np.arange(1000) / 1000                      # the equidistant design of Def 4.7
    >>> a = item_weights(x, np.array([0.5]), get_kernel("gaussian"), 0.05, hi=1.0)
    >>> a.shape, round(float(a.sum()), 6)               # a Riemann sum of K: 1 inside
    ((1000, 1), 1.0)
    """
    order = np.argsort(x, kind="stable")
    spacing = np.empty_like(x)
    sorted_x = x[order]
    spacing[order] = np.diff(sorted_x, append=hi)
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


def user_curves(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
    hi: float,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Every user's Priestley–Chao curve on the grid (n x G) and who has any row.

    Rows must come by user, then by x. A user's weights are the spacings to their next visit
    (the last visit's to ``hi``). The kernel matrix is built in blocks of rows and reduced to
    users by a sparse (users x rows) product, so memory stays O(block x G).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.models.kernel import user_curves
    >>> x = np.array([0.0, 0.5, 0.0, 0.25, 0.5, 0.75])     # user 0: 2 visits, user 1: 4
    >>> y = np.ones(6)
    >>> codes = np.array([0, 0, 1, 1, 1, 1])
    >>> curves, has_rows = user_curves(x, y, codes, 3, np.array([0.5]),
    ...                                get_kernel("epanechnikov"), 0.5, hi=1.0)
    >>> curves.round(4).tolist(), has_rows.tolist()
    ([[0.75], [0.9375], [0.0]], [True, True, False])
    """
    last = np.ones(x.size, dtype=bool)
    last[:-1] = codes[1:] != codes[:-1]
    spacing = np.where(last, hi - x, np.diff(x, append=hi))
    curves = np.zeros((n, grid.size))
    for start in range(0, x.size, _CHUNK_ROWS):
        block = slice(start, start + _CHUNK_ROWS)
        rows = np.arange(x[block].size)
        weights = sparse.csr_matrix(
            (spacing[block] * y[block] / bandwidth, (codes[block], rows)),
            shape=(n, rows.size),
        )
        curves += weights @ kernel((grid[None, :] - x[block, None]) / bandwidth)
    has_rows = np.bincount(codes, minlength=n) > 0
    return curves, has_rows


# -------------------------------------------------------------------- input checks


def _item_design(
    formula: str, data: pd.DataFrame, levels: LevelsLike | None, eval_env: patsy.EvalEnvironment
) -> tuple[PanelDesign, NDArray[np.float64], NDArray[np.float64]]:
    """Item-level rows: x public and complete; a missing (or infinite) response contributes
    the centre."""
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if len(data) < 2:
        raise DataError(f"item-level regression needs at least 2 rows, got {len(data)}")
    spec = DesignSpec.from_formula(formula, data, levels=levels, eval_env=eval_env)
    column = _regressor(spec.columns, formula)
    # keep every row: n and the design are public, so nothing may be dropped
    y, X, missing_y, missing_x = spec.evaluate(data)
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


def _regressor(columns: tuple[str, ...], formula: str) -> int:
    others = [j for j, c in enumerate(columns) if c != "Intercept"]
    if len(others) != 1:
        raise FormulaError(
            f"Priestley–Chao regression takes one regressor ('y ~ x'); {formula!r} gives "
            f"{[columns[j] for j in others]}"
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
        lo, hi = (float(v) for v in domain)
    except (TypeError, ValueError):
        raise ParameterError(f"domain must be a pair (lo, hi) of numbers, got {domain!r}") from None
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
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
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


def _project(
    y: NDArray[np.float64], observed: NDArray[np.bool_], centre: float, width: float
) -> NDArray[np.float64]:
    """Responses minus the centre, projected onto ``[-width, width]``; missing ones give 0."""
    with np.errstate(invalid="ignore"):
        return np.where(observed, np.clip(y - centre, -width, width), 0.0)


def _refined_width(n: int, amp: float, sigma: float, rough_scale: float, gamma: float) -> float:
    """Half-width around the rough mean μ̂₁ that holds every response w.p. 1 - 2γ.

    ``|Y_i - μ̂₁| <= |f(x_i) - f̄| + |ε_i| + |ε̄| + |μ̂₁ - Ȳ|`` with ``|f(x_i) - f̄| <= 2A``,
    ``|ε_i| <= σ √(2 log(4n/γ))`` for all i (Gaussian tails, union bound at γ/2),
    ``|ε̄| <= σ √(2 log(4/γ) / n)`` (Lemma 2.11, ``‖Σ‖_op <= σ²``) and the Laplace tail
    ``rough_scale · log(4/γ)`` of the rough mean's noise; the last two share γ/2.
    """
    return (
        2.0 * amp
        + sigma * math.sqrt(2.0 * math.log(4.0 * n / gamma))
        + sigma * math.sqrt(2.0 * math.log(8.0 / gamma) / n)
        + rough_scale * math.log(8.0 / gamma)
    )


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
