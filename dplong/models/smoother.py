"""The item-level Priestley–Chao smoother: one row per unit at a public design point (Def 4.7).

``f̂(x) = Σ_i a_i(x) Y_i`` with public weights (:func:`~dplong.kernels.item_weights`) is linear
in the responses. They are located as one column (:mod:`dplong.models.response_centre`: the
default engine's stages, or the paper's midpoint, Alg 3 / 9), projected onto the centre ± w,
and the whole curve is released at once (:func:`~dplong.privacy.vector.release_linear`). The
budget comes from :mod:`dplong.privacy.budget` (:func:`~dplong.privacy.budget.vector_plan`,
:func:`~dplong.privacy.budget.vector_budget`, :func:`~dplong.privacy.budget.paper_vector_budget`),
which also asks the accountant and settles the ledger. The rows are read by
:func:`~dplong.models.item_data.item_rows`. Rationale: ``docs/design/kernel.md``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong._validation import real_number, warn
from dplong.exceptions import ParameterError
from dplong.kernels import (
    auto_bandwidth,
    item_bias_bound,
    item_spacing,
    item_weights,
    largest_spacing,
)
from dplong.models.item_data import item_rows
from dplong.models.kernel import PriestleyChao, Stated
from dplong.models.paper_release import paper_mean_options
from dplong.models.response_centre import (
    check_paper,
    engine_centre,
    paper_centre,
    response_tail,
)
from dplong.models.response_spread import SPREAD_SDS, local_spread
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.budget import afford, settle, vector_plan
from dplong.privacy.engine import Release, overflowed
from dplong.privacy.locate import Location
from dplong.privacy.tails import affords_count, heavy_notes, unchecked_warnings
from dplong.privacy.vector import release_linear
from dplong.results import CurveResults
from dplong.summary import grid_names

__all__ = ["ItemSmoother", "item_rows"]  # item_rows: its import path before the split

_ONE = np.ones(1, dtype=bool)


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
                "item-level, the responses' scale comes from error_sd and amplitude (or is "
                "estimated when neither is given); scale= applies to user-level curves"
            )
        n, name = self.nobs_users, self._design.outcome
        lo, hi = self._domain
        request = self._request(n, 1, **common)
        options, rng = request.options, request.rng
        lipschitz, sup_norm, amplitude = given.lipschitz, given.sup_norm, given.amplitude
        smooth_lf = None if lipschitz is None else _positive(lipschitz, "lipschitz", "L_f")
        smooth_f = None if sup_norm is None else _positive(sup_norm, "sup_norm", "‖f‖∞ bound")
        stated = not (given.error_sd is None and amplitude is None and sup_norm is None)
        sigma, amp = math.nan, 0.0  # σ NaN: the responses' scale is located privately
        if stated:
            sigma = _positive(given.error_sd, "error_sd", "σ_max, a public bound on the error sd")
            level = smooth_f if amplitude is None else _positive(amplitude, "amplitude", "A")
            if level is None:
                raise ParameterError(
                    "amplitude (a public bound on |f(x) - c|, half the range of f) or sup_norm "
                    "is needed with error_sd to set the projection radius of the responses"
                )
            amp = level
        plan = vector_plan(n, options, stated_scale=stated)
        paper_options = paper_mean_options(options, stated=stated)
        if plan is None:
            check_paper(n, paper_options)
        # the scale estimated where n ε affords no count of the responses' tail (public facts)
        unchecked = (
            unchecked_warnings(
                (name,),
                _ONE,
                ~_ONE,
                why="unaffordable",
                remedy="state error_sd and amplitude",
                target="the curve",
            )
            if plan is not None and not stated and not affords_count(plan)
            else ()
        )
        # a stated bandwidth: its grid, weights and reach are public facts already
        stated_design = None
        if not isinstance(self._bandwidth, str):
            fixed = float(self._bandwidth)
            grid = self._resolve_grid(fixed)
            stated_design = (fixed, grid, item_weights(self._x, grid, self._kernel, fixed, hi))
            if not _reached(stated_design[2]).any():
                raise ParameterError(
                    f"bandwidth={fixed:g} leaves every grid point beyond the kernel's reach of "
                    "the design points: widen the bandwidth, or place the grid where x is"
                )
        # every refusal is decided (dplong.plan stops here); one vector release, not the engine's
        block = PlannedBlock(("curve",), 1.0, stated, None, notes=unchecked)
        checkpoint(FitPlan(n, options, (block,)))
        afford(request.accountant, options.epsilon, options.delta)
        # ---- no randomness was drawn above this line ----------------------------------------
        if plan is not None:
            for note in plan.notes:
                warn(note)
            where = engine_centre(self._y, name, plan, options, rng, sigma, amp)
        else:
            where = paper_centre(self._y, name, options, paper_options, rng, sigma, amp)
        sigma = where.sigma
        spread = amp if amp > 0 else sigma  # estimated scale: the responses' spread stands in
        lf_auto = smooth_lf if smooth_lf is not None else 2.0 * spread / (hi - lo)

        def bandwidth(width: float) -> float:
            return auto_bandwidth(
                self._kernel,
                self._domain,
                n,
                epsilon=where.budget.epsilon,
                sigma=sigma,
                lipschitz=lf_auto,
                width=width,
                local=options.local,
                grid=self._resolve_grid,
                spacing=largest_spacing(self._x, hi),
            )

        def design_weights(width: float) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
            if stated_design is not None:
                return stated_design
            b = bandwidth(width)
            while True:  # ends: at b >= the domain's length every grid point is reached
                grid = self._resolve_grid(b)
                weights = item_weights(self._x, grid, self._kernel, b, hi)
                if _reached(weights).any():
                    return b, grid, weights
                b *= 2.0  # an automatic b that reaches no grid point

        b, grid, weights = design_weights(where.width)
        reached = _reached(weights)
        # the tail the responses' scale cannot see, counted from the curve's budget of the
        # mechanism its public weights pick (the engine's tail rule)
        tail = response_tail(self._y, name, where, weights[:, reached], rng)
        if tail.width != where.width and isinstance(self._bandwidth, str):
            # a wider projection's noise asks for a wider bandwidth (public: released numbers)
            b, grid, weights = design_weights(tail.width)
            reached = _reached(weights)
        centre, width = where.centre, tail.width
        target = (
            f"{self._design.outcome} (projected responses)"
            if options.local
            else (f"curve at {int(reached.sum())} points")
        )
        # a grid point no design point reaches would be released as noise alone: not released
        projected = _project(self._y, centre, width)
        mass = weights.sum(axis=0)  # Σ_i a_i(x): public, the design's
        curve_release = release_linear(
            projected,
            width,
            weights[:, reached],
            tail.budget,
            rng,
            local=options.local,
            target=target,
        )
        measured = None
        if tail.spread is not None:
            # the curve's level about the centre where it is read (post-processing); a kernel
            # that sums to 0 at a point leaves it infinite, then clipped to the half-width
            with np.errstate(divide="ignore", invalid="ignore"):
                level = np.nan_to_num(curve_release.total / mass[reached], nan=0.0)
            measured = local_spread(
                projected,
                width,
                level,
                weights[:, reached],
                item_spacing(self._x, hi),
                tail.spread,
                rng,
            )
        ledger = settle(
            request.accountant,
            [
                *where.entries,
                *tail.entries,
                curve_release.entry,
                *(() if measured is None else (measured.entry,)),
            ],
            options,
        )
        assumptions = (
            f"Item-level fixed design (Def 4.7): the {n} design points are public; "
            + (
                f"errors with covariance below {sigma:.4g}² I"
                + (" (error_sd)." if stated else " (estimated privately: the responses' spread).")
                if measured is None
                else "independent errors, whose variance near each x is measured privately "
                "(Lemma 4.9's sampling term, point by point): a second curve of the projected "
                "responses' squared deviations from the curve, weighted as a_i(x)² is (w_i K², "
                "the variance not following the design's gaps), read "
                f"{SPREAD_SDS:g} noise sds high and at most the half-width squared, gives v̂(x) "
                "and the bands' sampling sd √(Σ_i a_i(x)² v̂(x)); the responses' overall "
                f"spread {sigma:.4g} sizes their projection only."
            ),
            f"|f(x) - c| <= {amp:g} for some level c (amplitude)."
            if stated
            else "Responses treated as sub-Gaussian around one level"
            + ("" if measured is None else " for their projection")
            + " (conservative: their spread includes the variation of f).",
            f"Responses projected onto {where.midpoint} ± {width:.4g}, "
            + (
                "and the bands allow for what it clips: the excess per response the tail "
                "count bounds, spread over the design as the responses are (a far tail "
                "gathered at a few x can pull the curve there further)."
                if tail.excess > 0.0
                else "wide enough that no response is clipped except with probability "
                f"gamma={options.gamma:g}."
            ),
            *tail.assumptions,
            "A missing response counts as the centre (n and the design stay public): where "
            "responses are missing the curve is pulled toward it, which the bands do not "
            "include (the warnings say so where a released count of them shows some).",
            _smoothness_note(smooth_lf, smooth_f),
        )
        # the clipped excess moves the curve at x by Σ_i a_i(x) (clip(Y_i) - Y_i): the tail
        # count's bound per unit times Σ_i |a_i(x)|, where the far tail lies across the design
        # as the responses do (the heavy warning says a tail gathered at a few x hides more)
        bias = tail.excess * np.abs(weights).sum(axis=0)
        notes, failed = where.notes + (() if where.lost else unchecked), where.failed
        if tail.heavy:
            notes += heavy_notes(
                (name,),
                _ONE,
                np.array([float(np.max(bias))]),
                np.array([width]),
                np.array([centre]),
                remedy="so could one gathered at a few x; state error_sd and amplitude, or "
                "model a transform (np.log1p) of a skewed response",
            )
        notes += _missing_notes(where.location, n, centre, amp if stated else width, weights)
        notes += _design_notes(
            grid, mass, reached, self._kernel.boundary_points(grid, b, self._domain)
        )
        with np.errstate(over="ignore", invalid="ignore"):  # a far miss overflows its figures
            curve = centre * mass + _spread(curve_release.total, reached)
            total_sd = _spread(np.broadcast_to(curve_release.sd, reached.sum()), reached)
            # σ_max where stated (or on the paper's pipeline), else the local spread's √v̂(x)
            error_sd = (
                np.full(grid.size, sigma) if measured is None else _spread(measured.sd, reached)
            )
            sampling_sd = error_sd * np.sqrt((weights**2).sum(axis=0))  # Lemma 4.9's Mad term
            variance = np.square(error_sd)
        # a number whose error figures overflow says nothing: withheld, as in the engine
        unbounded = overflowed(curve, total_sd, sampling_sd) & reached & (not where.lost)
        if unbounded.any():
            notes += (
                "No curve (NaN): its error figures overflow (responses of hundreds of orders "
                "of magnitude); rescale the response.",
            )
        # a band wider than the responses' own projection interval says less than its centre
        noisy = np.nanmax(total_sd, initial=0.0) > width and not where.lost
        if noisy:
            notes += (
                f"The curve's privacy noise (sd {np.nanmax(total_sd):.4g}) exceeds the half-width "
                f"of the interval the responses were projected onto ({where.midpoint} ± "
                f"{width:.4g}): its values and bands say less than that interval itself; "
                "raise epsilon, widen the bandwidth or use fewer grid points.",
            )
        # where the spread's cap binds at a point that is shown (not withheld as overflowing)
        capped = np.zeros(grid.size, dtype=bool)
        if measured is not None:
            capped[reached] = measured.unpinned
        capped &= ~unbounded
        if capped.any() and not where.lost:
            notes += (
                f"At x = {_points(grid[capped])} the privacy noise swamps the "
                "responses' local spread: the bands there take the largest variance a "
                f"projected response can have (the half-width squared, {width:.4g}²). Raise "
                "epsilon, widen the bandwidth, or state error_sd.",
            )
        withheld = unbounded | where.lost | ~reached
        if withheld.any():
            failed = failed or bool((unbounded | where.lost).any())
            curve = np.where(withheld, np.nan, curve)
            total_sd = np.where(withheld, np.nan, total_sd)
            sampling_sd = np.where(withheld, np.nan, sampling_sd)
            bias = np.where(withheld, np.nan, bias)
        release = Release(
            names=grid_names(grid),
            estimate=curve,
            noise_sd=total_sd,
            noise_scale=_spread(np.broadcast_to(curve_release.scale, reached.sum()), reached),
            noise_kind=curve_release.kind,
            sampling_sd=sampling_sd,
            bias=bias,
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
        results = self._curve_results(
            [release],
            options,
            index=pd.Index(grid, name="x"),
            bandwidth=b,
            assumptions=assumptions,
            smoothing_bias=smoothing,
        )
        why = (
            dict.fromkeys(results.params.index, "unseen")
            if where.unseen
            else dict.fromkeys(results.params.index[~reached], "no design point")
        )
        if not why:
            return results
        return dataclasses.replace(results, withheld_why={**results.withheld_why, **why})


def _positive(value: Any, name: str, what: str) -> float:
    if value is None:
        raise ParameterError(f"{name} ({what}) is required")
    number = real_number(value, name, expected=f"a positive number ({what})")
    if not (math.isfinite(number) and number > 0):
        raise ParameterError(f"{name} ({what}) must be a positive number, got {value!r}")
    return number


def _reached(weights: NDArray[np.float64]) -> NDArray[np.bool_]:
    """The grid points some design point's kernel weight reaches (public: the design's)."""
    return np.asarray(np.abs(weights).max(axis=0) > 0.0)


def _spread(values: NDArray[np.float64], reached: NDArray[np.bool_]) -> NDArray[np.float64]:
    """The released coordinates placed at the grid points reached, NaN at the others."""
    full = np.full(reached.size, np.nan)
    full[reached] = values
    return full


def _design_notes(
    grid: NDArray[np.float64],
    mass: NDArray[np.float64],
    reached: NDArray[np.bool_],
    boundary: NDArray[np.bool_],
) -> tuple[str, ...]:
    """Where the public design leaves the smoother short: grid points no design point reaches
    (withheld), and interior points whose kernel weights sum far from 1, where the Riemann sum
    of Def 4.8 misses the kernel's integral (a gap in the design) and the curve is not near f;
    and points within the kernel's reach of the domain's end whose weights sum below a
    quarter (the end's own share is about a half: a bandwidth far wider than the domain left
    1e-6 of the curve at every point, with bands as narrow and no note)."""
    off = reached & np.where(boundary, mass < 0.25, np.abs(mass - 1.0) > 0.5)
    notes = []
    if not reached.all():
        notes.append(
            f"No curve (NaN) at x = {_points(grid[~reached])}: no design point lies within "
            "the kernel's reach; widen the bandwidth or place the grid where x is."
        )
    if off.any():
        notes.append(
            f"At x = {_points(grid[off])} the design's kernel weights Σ a_i(x) sum to "
            f"{_range(mass[off])}, not about 1 (a gap in the public design, or a bandwidth "
            "far wider than the domain): the curve there is a distorted multiple of f, and its "
            "bias bound (given lipschitz= and sup_norm=) is large; place the grid where x is, "
            "with a bandwidth wider than the design's gaps and narrower than the domain."
        )
    return tuple(notes)


def _range(values: NDArray[np.float64]) -> str:
    low, high = f"{values.min():.3g}", f"{values.max():.3g}"
    return low if low == high else f"{low} to {high}"


def _points(values: NDArray[np.float64]) -> str:
    shown = ", ".join(f"{v:.4g}" for v in values[:5])
    return shown + (f" and {values.size - 5} more" if values.size > 5 else "")


def _project(y: NDArray[np.float64], centre: float, width: float) -> NDArray[np.float64]:
    """Responses minus the centre, projected onto ``[-width, width]``; missing ones give 0."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(y), np.clip(y - centre, -width, width), 0.0)


#: The released count of responses that shows some missing: below n by this many noise sds.
MISSING_SDS = 2.0


def _missing_notes(
    where: Location | None,
    n: int,
    centre: float,
    reach: float,
    weights: NDArray[np.float64],
) -> tuple[str, ...]:
    """The warning of responses missing beyond the count's noise: each counts as the
    ``centre``, so the curve at x is pulled toward it by ``Σ_{i missing} a_i(x) (f(x_i) -
    c)``, at most ``reach`` (a bound on ``|f - c|``: the stated amplitude, else the
    projection's half-width) times the sum of the missing count's largest weights ``|a_i(x)|``
    (public: where they gather). From the released count and public facts only."""
    if where is None:
        return ()
    users, sd = float(where.users[0]), where.users_sd
    missing = n - users
    if missing <= MISSING_SDS * sd:
        return ()
    most = min(math.ceil(missing), weights.shape[0])
    pull = reach * float(np.sort(np.abs(weights), axis=0)[-most:].sum(axis=0).max())
    return (
        f"About {missing:,.0f} of the {n:,} responses are missing (a released count, noise sd "
        f"{sd:.3g}): each counts as the centre {centre:.4g}, which pulls the curve toward it "
        f"where they lie, by up to about {pull:.3g} at a grid point where they gather; the "
        "bands do not include that pull. Impute them by a public rule before the fit, or read "
        f"the curve as shrunk toward {centre:.4g} where responses are missing.",
    )


def _smoothness_note(lipschitz: float | None, sup_norm: float | None) -> str:
    if lipschitz is None or sup_norm is None:
        return (
            "No smoothness stated: bands and error bounds concern the kernel-smoothed curve "
            "Σ a_i(x) f(x_i), not f itself (give lipschitz= and sup_norm= to bound the bias)."
        )
    return (
        f"f is {lipschitz:g}-Lipschitz with |f| <= {sup_norm:g}: the bands and the error bound "
        "include the smoothing bias, computed on the public design, and concern f itself."
    )
