"""The item-level Priestley–Chao smoother: one row per unit at a public design point (Def 4.7).

``f̂(x) = Σ_i a_i(x) Y_i`` with public weights (:func:`~dplong.kernels.item_weights`) is linear
in the responses. They are located as one column — the default engine's stages
(:func:`~dplong.privacy.engine.locate`), or the paper's midpoint (Alg 3 / 9) — projected onto
the centre ± w and the whole curve is released at once
(:func:`~dplong.privacy.vector.release_linear`). The budget comes from
:mod:`dplong.privacy.budget` (:func:`~dplong.privacy.budget.vector_plan`,
:func:`~dplong.privacy.budget.vector_budget`, :func:`~dplong.privacy.budget.paper_vector_budget`),
which also asks the accountant and settles the ledger. Rationale: ``docs/design/kernel.md``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import real_number, warn
from dplong.bounds import midpoint_failure_probability
from dplong.dask_frames import design_spec, evaluate_rows, is_dask
from dplong.exceptions import DataError, ParameterError
from dplong.formula import DesignSpec, LevelsLike, PanelDesign
from dplong.kernels import auto_bandwidth, item_bias_bound, item_weights
from dplong.models.base import caught_notes, paper_mean_options, paper_scale
from dplong.models.curve_grid import item_design, regressor
from dplong.models.kernel import PriestleyChao, Stated
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import (
    ReleasePlan,
    VectorBudget,
    afford,
    paper_vector_budget,
    settle,
    vector_budget,
    vector_plan,
)
from dplong.privacy.engine import MAX_RADIUS, Release, Rules, implausible, locate, overflowed
from dplong.privacy.interval import check_histogram_feasible, local_bins
from dplong.privacy.noise import MIN_LATTICE_EPSILON
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.vector import release_linear
from dplong.privacy.winsorized import midpoint_entry, paper_midpoints
from dplong.results import CurveResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["ItemSmoother", "item_rows"]


@dataclass(frozen=True)
class _Centre:
    """Where the responses were located, and what the curve may spend after it."""

    centre: float
    width: float
    sigma: float
    budget: VectorBudget
    entries: tuple[LedgerEntry, ...]
    midpoint: str
    variant: str
    bad: float
    failed: bool
    lost: bool
    notes: tuple[str, ...]


class ItemSmoother(PriestleyChao):
    """:class:`~dplong.PriestleyChao` without ``groups``: the smoother of public design points.

    Built by :meth:`PriestleyChao.from_formula <dplong.PriestleyChao.from_formula>`; every x
    must lie in the public domain, a missing response contributes the centre.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dplong
    >>> from dplong.models.smoother import ItemSmoother
    >>> x = np.arange(2000) / 2000
    >>> data = pd.DataFrame({"x": x, "y": np.sin(2 * np.pi * x)})
    >>> model = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1), bandwidth=0.1)
    >>> isinstance(model, ItemSmoother), model.level
    (True, 'item')
    """

    level = "item"
    basis = ("Theorem 4.2 via Corollary 4.11", "Theorem 6.4 via Corollary 6.7")

    def _fit_curve(self, common: dict[str, Any], given: Stated) -> CurveResults:
        if not (isinstance(given.scale, str) and given.scale == "estimate"):
            raise ParameterError(
                "item-level, the responses' scale comes from noise_sd and amplitude (or is "
                "estimated when neither is given); scale= applies to user-level curves"
            )
        n = self.nobs_users
        request = self._request(n, 1, **common)
        options, rng = request.options, request.rng
        lipschitz, sup_norm, amplitude = given.lipschitz, given.sup_norm, given.amplitude
        smooth_lf = None if lipschitz is None else _positive(lipschitz, "lipschitz", "L_f")
        smooth_f = None if sup_norm is None else _positive(sup_norm, "sup_norm", "‖f‖∞ bound")
        stated = not (given.noise_sd is None and amplitude is None and sup_norm is None)
        sigma, amp = math.nan, 0.0  # σ NaN: the responses' scale is located privately
        if stated:
            sigma = _positive(given.noise_sd, "noise_sd", "σ_max, a public bound on the error sd")
            level = smooth_f if amplitude is None else _positive(amplitude, "amplitude", "A")
            if level is None:
                raise ParameterError(
                    "amplitude (a public bound on |f(x) - c|, half the range of f) or sup_norm "
                    "is needed with noise_sd to set the projection radius of the responses"
                )
            amp = level
        plan = vector_plan(n, options, stated_scale=stated)
        paper_options = paper_mean_options(options, stated=stated)
        if plan is None:
            _check_paper(n, paper_options)
        # every refusal is decided (dplong.plan stops here); one vector release, not the engine's
        checkpoint(FitPlan(n, options, (PlannedBlock(("curve",), 1.0, stated, None),)))
        afford(request.accountant, options.epsilon, options.delta)
        # ---- no randomness was drawn above this line ----------------------------------------
        if plan is not None:
            for note in plan.notes:
                warn(note)
            where = self._locate(plan, options, rng, sigma, amp)
        else:
            where = self._paper_locate(options, paper_options, rng, sigma, amp)
        sigma = where.sigma
        lo, hi = self._domain
        spread = amp if amp > 0 else sigma  # estimated scale: the responses' spread stands in
        lf_auto = smooth_lf if smooth_lf is not None else 2.0 * spread / (hi - lo)
        b = (
            auto_bandwidth(
                self._kernel,
                self._domain,
                n,
                epsilon=where.budget.epsilon,
                sigma=sigma,
                lipschitz=lf_auto,
                width=where.width,
                local=options.local,
                grid=self._resolve_grid,
            )
            if isinstance(self._bandwidth, str)
            else float(self._bandwidth)
        )
        grid = self._resolve_grid(b)
        weights = item_weights(self._x, grid, self._kernel, b, hi)
        centre, width = where.centre, where.width
        target = (
            f"{self._design.outcome} (projected responses)"
            if options.local
            else (f"curve at {grid.size} points")
        )
        curve_release = release_linear(
            _project(self._y, centre, width),
            width,
            weights,
            where.budget,
            rng,
            local=options.local,
            target=target,
        )
        ledger = settle(request.accountant, [*where.entries, curve_release.entry], options)
        assumptions = (
            f"Item-level fixed design (Def 4.7): the {n} design points are public; errors "
            f"with covariance below {sigma:.4g}² I"
            + (" (noise_sd)." if stated else " (estimated privately: the responses' spread)."),
            f"|f(x) - c| <= {amp:g} for some level c (amplitude)."
            if stated
            else "Responses treated as sub-Gaussian around one level (conservative: their "
            "spread includes the variation of f).",
            f"Responses projected onto {where.midpoint} ± {width:.4g}, wide enough that no "
            f"response is clipped except with probability gamma={options.gamma:g}.",
            _smoothness_note(smooth_lf, smooth_f),
        )
        notes, failed = where.notes, where.failed
        with np.errstate(over="ignore", invalid="ignore"):  # a far miss overflows its figures
            curve = centre * weights.sum(axis=0) + curve_release.total  # Σ_i a_i(x): public
            total_sd = np.broadcast_to(curve_release.sd, grid.shape).astype(float)
            sampling_sd = sigma * np.sqrt((weights**2).sum(axis=0))  # Lemma 4.9's Mad term
            variance = np.square(np.full(grid.size, sigma))
        # a number whose error figures overflow says nothing: withheld, as in the engine
        unbounded = overflowed(curve, total_sd, sampling_sd) & (not where.lost)
        if unbounded.any():
            notes += (
                "No curve (NaN): its error figures overflow (responses of hundreds of orders "
                "of magnitude); rescale the response.",
            )
        withheld = unbounded | where.lost
        if withheld.any():
            failed = True
            curve = np.where(withheld, np.nan, curve)
            total_sd = np.where(withheld, np.nan, total_sd)
            sampling_sd = np.where(withheld, np.nan, sampling_sd)
        release = Release(
            names=tuple(f"x={g:.6g}" for g in grid),
            estimate=curve,
            noise_sd=total_sd,
            noise_scale=np.broadcast_to(curve_release.scale, grid.shape).astype(float),
            noise_kind=curve_release.kind,
            sampling_sd=sampling_sd,
            bias=np.zeros(grid.size),
            interval=np.tile([centre - width, centre + width], (grid.size, 1)),
            midpoint=np.full(grid.size, centre),
            scale=variance,
            users=np.array([math.nan]),
            users_sd=math.nan,
            privacy=ledger,
            n=n,
            variant=where.variant,
            bad_events=np.full(grid.size, where.bad),
            notes=notes,
            failed=np.full(grid.size, failed),
        )
        smoothing = (
            None
            if smooth_lf is None or smooth_f is None
            else item_bias_bound(self._x, grid, weights, smooth_lf, smooth_f)
        )
        return self._curve_results(
            [release],
            options,
            index=pd.Index(grid, name="x"),
            bandwidth=b,
            assumptions=assumptions,
            smoothing_bias=smoothing,
        )

    def _locate(
        self,
        plan: ReleasePlan,
        options: ReleaseOptions,
        rng: np.random.Generator,
        sigma: float,
        amp: float,
    ) -> _Centre:
        """The default engine's stages on the responses, as one column (NaN: the centre)."""
        n, name = self.nobs_users, self._design.outcome
        stated = not math.isnan(sigma)
        where = locate(
            self._y[:, None],
            plan=plan,
            names=(name,),
            rng=rng,
            gamma=options.gamma,
            rules=Rules(scale=np.array([sigma**2]) if stated else None),
        )
        # fmin: a centre missed by hundreds of magnitudes has NaN figures (then withheld)
        width = float(
            np.fmin(amp + where.sd[0] * _no_clip(n, options) + where.centre_error[0], MAX_RADIUS)
        )
        # the scale stage's verdicts, as every release reads them: too few responses off a
        # value most share, or a scale below the responses' resolution, leave no curve; nor
        # does a location the release's own figures call a miss (the engine's rule)
        unsure = bool(
            implausible(
                midpoint=where.midpoint,
                sd=where.sd,
                alone=np.zeros(1, dtype=bool) if where.scan is None else where.scan.alone,
                miss=where.plan.miss_given(np.array([float(n)])),
            )[0]
        )
        # the midpoint's and the scale's private checks (a median beside or below them all)
        checked = any(m is not None and bool(m[0]) for m in (where.beside, where.collapsed))
        lost = bool(where.sparse[0] or where.unresolved[0] or unsure or checked)
        notes = plan.notes + where.scale_notes(
            (name,), sparse=where.sparse, shown=np.array([not lost])
        )
        if unsure and not (where.sparse[0] or where.unresolved[0]):
            notes += (
                "No curve (NaN): the release's own figures say its private midpoint or scale "
                "missed the responses (a scale far above every response, or medians that miss "
                "with probability above one half), so the curve would be far off. Raise "
                "epsilon, or state noise_sd and amplitude.",
            )
        if checked and not (where.sparse[0] or where.unresolved[0] or unsure):
            notes += (
                "No curve (NaN): a private check of the midpoint or the scale found their "
                "median beside or below nearly every response, so the curve would be far off. "
                "Raise epsilon, or state noise_sd and amplitude.",
            )
        if where.unresolved[0] and not where.sparse[0]:
            notes += (
                "No curve (NaN): the private scale of the responses fell below their "
                "resolution around the private midpoint (its median missed below every "
                "response), so the projection would clip them all. Raise epsilon, or state "
                "noise_sd and amplitude.",
            )
        return _Centre(
            centre=float(where.centre[0]),
            width=width,
            sigma=float(where.sd[0]),
            budget=vector_budget(where.plan, refined=where.refined),
            entries=where.entries,
            midpoint="the rough private mean" if where.refined else "the private midpoint",
            variant="default (refined)" if where.refined else "default",
            bad=options.gamma * (2.0 if where.refined else 1.0),
            failed=lost,
            lost=lost,
            notes=notes,
        )

    def _paper_locate(
        self,
        options: ReleaseOptions,
        paper_options: ReleaseOptions,
        rng: np.random.Generator,
        sigma: float,
        amp: float,
    ) -> _Centre:
        """The paper's pipeline (``variant="theory"``, local): CoinPress's scale when none is
        stated, then Alg 3 (bins of half-width τ, interval ``m̂ ± 3τ``) or Alg 9 (bins τ',
        interval ``m̂ ± (τ + 2τ')``; τ and 3τ with ``"theory"``)."""
        n, name = self.nobs_users, self._design.outcome
        entries: tuple[LedgerEntry, ...] = ()
        notes: tuple[str, ...] = ()
        if math.isnan(sigma):
            # what the scale's plug-in warns of joins the results' notes (not only stderr)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                estimate = paper_scale(self._y[:, None], options, rng, (name,))
            notes = caught_notes(caught)
            for note in notes:
                warn(note)
            sigma, entries = math.sqrt(float(estimate.scale[0])), estimate.privacy.entries
        tau = amp + sigma * _no_clip(n, options)
        local, theory = options.local, options.variant == "theory"
        if theory or not local:
            bins, width = tau, 3.0 * tau
        else:
            bins = amp + sigma * math.sqrt(2.0 * math.log(2.0 / options.gamma))
            width = tau + 2.0 * bins
        if local:
            assert options.bound is not None
            local_bins(bins, float(options.bound[0]))
        eps, budget = paper_vector_budget(paper_options)
        delta = paper_options.delta
        midpoint, failed = paper_midpoints(
            self._y[:, None], np.array([bins]), eps, delta, rng, options.bound
        )
        failure = (
            0.0
            if local
            else midpoint_failure_probability(n, eps, delta, options.gamma, wide_bins=True)
        )
        if failed[0]:
            notes += (
                "The private midpoint failed (no histogram bin survived) and fell back to 0, as "
                "in the paper's Alg 3: the curve is unreliable.",
            )
        return _Centre(
            centre=float(midpoint[0]),
            width=width,
            sigma=sigma,
            budget=budget,
            entries=(*entries, midpoint_entry(name, eps, delta, n, local)),
            midpoint="the private midpoint",
            variant="theory" if theory else "paper (local)",
            bad=options.gamma + failure,
            failed=bool(failed[0]),
            lost=False,
            notes=notes,
        )


def item_rows(
    formula: str,
    data: pd.DataFrame | DaskFrame,
    levels: LevelsLike | None,
    eval_env: patsy.EvalEnvironment,
    domain: tuple[float, float],
) -> tuple[PanelDesign, NDArray[np.float64], NDArray[np.float64]]:
    """Item-level rows, every row a unit: x public, complete and inside the domain; a missing
    (or infinite) response contributes the centre. A Dask frame's rows are evaluated partition
    by partition, in order."""
    if is_dask(data):
        frame_spec = design_spec(formula, data, levels=levels, eval_env=eval_env)
        spec = frame_spec.spec
        column = regressor(spec, formula)
        y, X, missing_y, missing_x = evaluate_rows(data, frame_spec)
    else:
        if not isinstance(data, pd.DataFrame):
            raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
        spec = DesignSpec.from_formula(formula, data, levels=levels, eval_env=eval_env)
        column = regressor(spec, formula)
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
    design = item_design(y, spec, formula)
    lo, hi = domain
    outside = (x < lo) | (x > hi)
    if outside.any():  # the design points are public: so is this refusal
        raise DataError(
            f"x must lie in the public domain [{lo:g}, {hi:g}]; {int(outside.sum())} "
            "values fall outside it (widen the domain or drop those rows)"
        )
    return design, x, y


def _check_paper(n: int, options: ReleaseOptions) -> None:
    """The paper's pipeline's refusals, before any noise: a midpoint and a curve that float-safe
    noise supports, and (centrally) a stable histogram that can find a bin."""
    eps, _ = paper_vector_budget(options)
    if eps < MIN_LATTICE_EPSILON:
        raise ParameterError(f"epsilon={options.epsilon:.3g} is too small for the curve")
    if not options.local:
        check_histogram_feasible(n, eps, options.delta, remedy="more epsilon or delta")


def _no_clip(n: int, options: ReleaseOptions) -> float:
    """Lemma 4.9's union bound: ``√(2 log(2n/γ))`` sds hold all n errors but with prob. γ."""
    return math.sqrt(2.0 * math.log(2.0 * n / options.gamma))


def _positive(value: Any, name: str, what: str) -> float:
    if value is None:
        raise ParameterError(f"{name} ({what}) is required")
    number = real_number(value, name, expected=f"a positive number ({what})")
    if not (math.isfinite(number) and number > 0):
        raise ParameterError(f"{name} ({what}) must be a positive number, got {value!r}")
    return number


def _project(y: NDArray[np.float64], centre: float, width: float) -> NDArray[np.float64]:
    """Responses minus the centre, projected onto ``[-width, width]``; missing ones give 0."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(y), np.clip(y - centre, -width, width), 0.0)


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
