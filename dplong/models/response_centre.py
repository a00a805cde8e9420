"""Where the item-level smoother's responses lie, found privately before its curve is released.

The responses of :class:`~dplong.models.smoother.ItemSmoother` are located as one column — by
the default engine's stages (:func:`engine_centre`) or the paper's midpoint (:func:`paper_centre`)
— and projected onto the centre ± a half-width wide enough that no response is clipped but
with probability γ; the rest of the budget goes to the curve.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong._validation import warn
from dplong.bounds import midpoint_failure_probability
from dplong.exceptions import ParameterError
from dplong.models.captured_warnings import caught_notes
from dplong.models.paper_release import paper_scale
from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import (
    FinalBudget,
    ReleasePlan,
    VectorBudget,
    paper_vector_budget,
    vector_budget,
    with_spread,
)
from dplong.privacy.engine import implausible
from dplong.privacy.interval import check_histogram_feasible, local_bins
from dplong.privacy.locate import Location, locate
from dplong.privacy.noise import MIN_LATTICE_EPSILON
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.projection import MAX_RADIUS
from dplong.privacy.radius import clipping_bias
from dplong.privacy.rules import Rules
from dplong.privacy.tails import (
    moderate_assumptions,
    tail_rule,
    with_tail,
)
from dplong.privacy.vector import gaussian_is_better, unit_norms
from dplong.privacy.winsorized import midpoint_entry, paper_midpoints

__all__ = [
    "ResponseCentre",
    "ResponseTail",
    "check_paper",
    "engine_centre",
    "no_clip",
    "paper_centre",
    "response_tail",
]


@dataclass(frozen=True)
class ResponseCentre:
    """Where the responses were located — the projection's centre and half-width, their
    error sd — what the curve may spend after it, and the stage's ledger entries, notes and
    verdicts (``lost``: no curve can be released; ``unseen``: because the responses' count saw
    none off the value most share, as the engine's unseen columns)."""

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
    unseen: bool = False
    #: the default engine's: what its stages released, and its plan with the tail stage's
    #: share where the responses' tail is counted and the spread's where their local spread is
    #: measured (:func:`response_tail`; ``budget`` is the curve's without either)
    location: Location | None = None
    plan: ReleasePlan | None = None


def engine_centre(
    y: NDArray[np.float64],
    name: str,
    plan: ReleasePlan,
    options: ReleaseOptions,
    rng: np.random.Generator,
    sigma: float,
    amp: float,
) -> ResponseCentre:
    """The default engine's stages on the responses ``y`` (one per unit; NaN: the centre), as
    one column named ``name``; ``sigma`` their stated error sd (NaN: located privately) and
    ``amp`` the stated amplitude of the curve (0: none)."""
    n = y.size
    stated = not math.isnan(sigma)
    where = locate(
        y[:, None],
        plan=plan,
        names=(name,),
        rng=rng,
        gamma=options.gamma,
        rules=Rules(scale=np.array([sigma**2]) if stated else None),
    )
    # the tail the responses' scale cannot see is counted where it is estimated (as the
    # engine's means do: :func:`response_tail`), and their local spread measured with the curve
    # (:mod:`dplong.models.response_spread`): their overall spread bounds no error's variance
    tailed = with_tail(where.plan if stated else with_spread(where.plan), measured=not stated)
    # fmin: a centre missed by hundreds of magnitudes has NaN figures (then withheld)
    width = float(
        np.fmin(amp + where.sd[0] * no_clip(n, options) + where.centre_error[0], MAX_RADIUS)
    )
    # the scale stage's verdicts, as every release reads them: too few responses off a
    # value most share, or a scale below the responses' resolution, leave no curve; nor
    # does a location the release's own figures call a miss (the engine's rule)
    unsure = bool(
        implausible(
            midpoint=where.midpoint,
            sd=where.sd,
            alone=np.zeros(1, dtype=bool) if where.scan is None else where.scan.vacant,
            # the responses there are, not n, read at the count's low end (two sds down;
            # the engine's means read theirs at the count): at 98 % missing a count's noise
            # (sd 47 of 40 responses) left medians that landed at 6e12 looking sound
            miss=where.plan.miss_given(
                np.clip(where.per_column_users - 2.0 * where.users_sd, 1.0, float(n))
            ),
        )[0]
    )
    # the midpoint's and the scale's private checks (a median beside or below them all)
    checked = any(m is not None and bool(m[0]) for m in (where.beside, where.collapsed))
    # responses the count saw none of off 0: taken as 0, the curve a band of width 0 about 0
    # (the engine withholds such a column, "unseen"; its note says no estimate is given)
    unseen = where.scan is not None and bool(where.scan.unseen[0])
    missed = bool(where.sparse[0] or where.unresolved[0] or unsure or checked)
    lost = missed or unseen
    notes = plan.notes + where.scale_notes(
        (name,), sparse=where.sparse, shown=np.array([not missed])
    )
    if unsure and not (where.sparse[0] or where.unresolved[0]):
        notes += (
            "No curve (NaN): the release's own figures say its private midpoint or scale "
            "missed the responses (a scale far above every response, or medians that miss "
            "with probability above one half), so the curve would be far off. Raise "
            "epsilon, or state error_sd and amplitude.",
        )
    if checked and not (where.sparse[0] or where.unresolved[0] or unsure):
        notes += (
            "No curve (NaN): a private check of the midpoint or the scale found their "
            "median beside or below nearly every response, so the curve would be far off. "
            "Raise epsilon, or state error_sd and amplitude.",
        )
    if where.unresolved[0] and not where.sparse[0]:
        notes += (
            "No curve (NaN): the private scale of the responses fell below their "
            "resolution around the private midpoint (its median missed below every "
            "response), so the projection would clip them all. Raise epsilon, or state "
            "error_sd and amplitude.",
        )
    return ResponseCentre(
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
        unseen=unseen,
        location=where,
        plan=tailed,
    )


@dataclass(frozen=True)
class ResponseTail:
    """The responses' tail stage (:func:`response_tail`): the projection's half-width after
    it, the curve's budget and the local spread's (None: not measured), the stage's ledger
    entries, and a bound per unit on the mean excess the projection clips (``heavy``: beyond
    the exponential model's, a warning)."""

    width: float
    budget: VectorBudget
    spread: VectorBudget | None
    entries: tuple[LedgerEntry, ...]
    excess: float
    heavy: bool
    assumptions: tuple[str, ...]


def response_tail(
    y: NDArray[np.float64],
    name: str,
    where: ResponseCentre,
    weights: NDArray[np.float64],
    rng: np.random.Generator,
) -> ResponseTail:
    """The engine's tail rule (:func:`~dplong.privacy.tails.tail_rule`) on the responses
    ``y``, each a unit: a count of those beyond the rung, carved from the curve's budget
    (its ρ or its ε: the mechanism the curve's public ``weights`` pick,
    :func:`~dplong.privacy.vector.gaussian_is_better`, for the local spread's share too,
    split off first as the engine's second moment is), which widens the projection where it
    finds a tail heavier than the scale's normal plug-in sees (``heavy``; balanced for the
    curve's noise and bias, not a mean's) and bounds the excess still clipped per unit (a
    Pareto tail through the counts, :meth:`~dplong.privacy.tails.TailFinding.beyond`; the
    exponential model's bound where the tail is only moderately heavier). Without a count
    (the scale stated, the paper's pipeline, n ε too small, or the responses taken as 0) the
    half-width is the located one and the bound is 0 (the projection clips but with
    probability γ under the stated model)."""
    plan, location = where.plan, where.location
    if plan is None or location is None or where.lost:
        return ResponseTail(where.width, where.budget, None, (), 0.0, False, ())
    # the curve, the count and the spread calibrated together (where.budget: the curve alone)
    whole = vector_budget(plan, refined=location.refined)
    l1, l2 = unit_norms(weights)
    gaussian = gaussian_is_better((l1, l2), whole)
    budget = (
        FinalBudget("gaussian", np.zeros(1), np.array([whole.rho]))
        if gaussian
        else FinalBudget("laplace", np.array([whole.epsilon]), np.zeros(1))
    )
    mean, spread = budget.split(plan.moment_share)
    spread_budget = None if spread is None else _vector(spread)
    if not plan.tail:
        return ResponseTail(where.width, _vector(mean), spread_budget, (), 0.0, False, ())
    # the excess moves the curve at x by Σ_i |a_i(x)| times a unit's (a mean's by 1 / n), and
    # its noise grows with a unit's row of weights, its L2 or L1 norm (Laplace sd √2 Δ₁ / ε,
    # Gaussian Δ₂ / √(2ρ); a mean's 1 / n)
    balance = float(np.abs(weights).sum(axis=0).max() / (y.size * (l2 if gaussian else l1)))
    found = tail_rule(
        y[:, None],
        location,
        plan,
        (name,),
        (np.array([where.width]), mean, spread),
        rng,
        balance=balance,
    )
    width, users = float(found.radius[0]), np.array([float(y.size)])
    if found.heavy[0]:
        excess = float(found.beyond(found.radius, np.zeros(1), users)[0])
    elif found.moderate[0]:
        bound = clipping_bias(
            location.sd**2, found.radius, location.centre_error, tail="exponential"
        )
        excess = float(bound[0])
    else:
        excess = 0.0
    return ResponseTail(
        width=width,
        budget=_vector(found.mean_budget),
        spread=spread_budget,
        entries=found.entries,
        excess=excess,
        heavy=bool(found.heavy[0]),
        assumptions=moderate_assumptions((name,), found.moderate),
    )


def _vector(budget: FinalBudget) -> VectorBudget:
    """A one-column final budget as the vector release's: its ε, or its ρ alone (the kind
    :func:`~dplong.privacy.vector.release_linear` then takes)."""
    if budget.kind == "gaussian":
        return VectorBudget(0.0, float(budget.rho[0]))
    return VectorBudget(float(budget.epsilon[0]))


def paper_centre(
    y: NDArray[np.float64],
    name: str,
    options: ReleaseOptions,
    paper_options: ReleaseOptions,
    rng: np.random.Generator,
    sigma: float,
    amp: float,
) -> ResponseCentre:
    """The paper's pipeline (``variant="theory"``, local) on the responses ``y``: CoinPress's
    scale when none is stated, then Alg 3 (bins of half-width τ, interval ``m̂ ± 3τ``) or
    Alg 9 (bins τ', interval ``m̂ ± (τ + 2τ')``; τ and 3τ with ``"theory"``)."""
    n = y.size
    entries: tuple[LedgerEntry, ...] = ()
    notes: tuple[str, ...] = ()
    if math.isnan(sigma):
        # what the scale's plug-in warns of joins the results' notes (not only stderr)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            estimate = paper_scale(y[:, None], options, rng, (name,))
        notes = caught_notes(caught)
        for note in notes:
            warn(note)
        sigma, entries = math.sqrt(float(estimate.scale[0])), estimate.privacy.entries
    tau = amp + sigma * no_clip(n, options)
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
    midpoint, failed = paper_midpoints(y[:, None], np.array([bins]), eps, delta, rng, options.bound)
    failure = (
        0.0 if local else midpoint_failure_probability(n, eps, delta, options.gamma, wide_bins=True)
    )
    if failed[0]:
        notes += (
            "The private midpoint failed (no histogram bin survived) and fell back to 0, as "
            "in the paper's Alg 3: the curve is unreliable.",
        )
    return ResponseCentre(
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


def check_paper(n: int, options: ReleaseOptions) -> None:
    """The paper's pipeline's refusals, before any noise: a midpoint and a curve that float-safe
    noise supports, and (centrally) a stable histogram that can find a bin."""
    eps, _ = paper_vector_budget(options)
    if eps < MIN_LATTICE_EPSILON:
        raise ParameterError(f"epsilon={options.epsilon:.3g} is too small for the curve")
    if not options.local:
        check_histogram_feasible(n, eps, options.delta, remedy="more epsilon or delta")


def no_clip(n: int, options: ReleaseOptions) -> float:
    """Lemma 4.9's union bound: ``√(2 log(2n/γ))`` sds hold all n errors but with prob. γ.

    Examples
    --------
    >>> from dplong.models.response_centre import no_clip
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(
    ...     1000, epsilon=1.0, delta=None, privacy="central", bound=None, d=1)
    >>> round(no_clip(1000, options), 3)                       # γ = 0.05: √(2 log 40000)
    4.604
    """
    return math.sqrt(2.0 * math.log(2.0 * n / options.gamma))
