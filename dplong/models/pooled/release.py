"""The Gaussian releases of pooled OLS's sufficient statistics on the scaled rows: the Gram
matrix, the Newton steps' whitened clipped scores and the person-clustered meat, and the
privacy noise pushed through β̂'s map (steps 2-4 of ``docs/design/pooled.md``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from dplong.models.pooled.factors import Blocks, Disjoint
from dplong.models.pooled.gram import (
    NOISE_SEED,
    _clip_rows,
    _floor,
    _gram_bound,
    _lifted,
    _released_entries,
    _row_square,
    _Solution,
    _unvech_scaled,
    vech_scaled,
)
from dplong.models.pooled.persons import PersonSums
from dplong.privacy.accounting import LedgerEntry, gaussian_vector_entry
from dplong.privacy.noise import WeightedRelease, release_vector_sum

__all__ = [
    "CLIP_RADIUS",
    "MEAT_NOISE",
    "NOISE_DRAWS",
    "QUIET_NOISE",
    "RSS_FLOOR",
    "SCORE_SPREAD",
    "SECANT_MAX",
    "SECANT_SDS",
    "SIZE_SDS",
    "SKEW_FALSE",
    "SKEW_SEEN",
    "SKEW_SHARE",
    "SKEW_WIDEN",
    "SLIVER",
    "UNSEEN_NOISE",
    "UNSEEN_WIDEN",
]

#: The whitened scores' clipping radius² in units of ``T_cap² σ̂² m̂``: the Cauchy–Schwarz
#: bound on ``‖s_u‖²`` for a person with ``T_cap`` rows of average residual² and whitened
#: ``‖Ĥ^{-1/2} x̃‖²`` (a person whose residuals are perfectly correlated), with room for
#: heavier-tailed residuals (``docs/design/pooled.md``).
CLIP_RADIUS = 1.5
#: The floor of the released residual sum of squares that sizes the scores' radius, in sds of
#: its privacy noise (:func:`_clip_radius`).
RSS_FLOOR = 1.0
#: The Newton steps' clipping radius² in units of the whitened scores' released mean square
#: (:func:`_score_size`): a person's ``‖s̃_u‖²`` over its mean is about ``χ²_p / p``, beyond 4
#: in 4.5 % of persons at p = 1 and 0.7 % at p = 3.
SCORE_SPREAD = 4.0
#: The released mean square's noise added to it, in sds (:func:`_score_size`): a radius sized
#: on a mean square the noise pulled low clips more persons.
SIZE_SDS = 2.0
#: A step's noise sd, as a share of the scores' sampling sd, below which the steps' radius is
#: not narrowed (:func:`_score_size`), nor the Cauchy–Schwarz one kept (:func:`_clip_radius`):
#: there the noise saves nothing worth the clipping, whose pull on a skewed outcome stays
#: (docs/design/pooled.md, "What the interval does not hold", (b)).
QUIET_NOISE = 0.5
#: The meat's noise sd, as a share of a diagonal entry of it, at the radius the meat may widen
#: to past the Cauchy–Schwarz one (:func:`_meat_quiet`): its noise grows as R², where a step's
#: grows as R, so the steps' quiet radius left it noisy where the privacy noise was all but
#: gone (docs/design/pooled.md, step 4).
MEAT_NOISE = 0.1
#: The skew check before the last Newton step (:func:`_skew_check`), whatever its radius:
#: nothing else measures what a step clips beyond the Cauchy–Schwarz radius (the meat's
#: excess column reads only between a narrower steps' radius and it), and a long-tailed
#: person effect puts persons well beyond it (docs/design/pooled.md, "The skew check"): its
#: share of the step's ρ, the chance that it fires on scores whose clipped parts are
#: symmetric (a union bound over the coordinates), and the factor the step's radius is widened
#: by where it fires. One mean a person (``BetweenOLS``) has no rows' room in that radius, so
#: it clips about a quarter of the persons, and a skewed outcome's clipped scores pull the
#: intercept several SEs off (docs/design/pooled.md, "The skew check").
SKEW_SHARE, SKEW_FALSE, SKEW_WIDEN = 0.25, 0.05, 3.0
#: The pull of the clipped parts on the last step's score sum, in sampling sds a coordinate,
#: that the skew check must be able to see for it to run (:func:`_seen`): below this n ρ it
#: would only cost the step its share.
SKEW_SEEN = 4.0
#: Where a person is one row (the radius has no rows' room and clips about a quarter of the
#: persons) and the last step's noise sd at the radius is at most ``UNSEEN_NOISE`` of the
#: scores' sampling sd (:func:`_guarded`, public; above the gate it always is), the check runs
#: below its gate too, for the large pulls it can see, and where it finds none the step clips
#: at ``UNSEEN_WIDEN`` times the Cauchy–Schwarz radius (``guarded``): above the gate as well,
#: since a check that fires at the normal quantile of its noise and the clipped parts' spread
#: misses most pulls of 1-3 sampling sds. A pull b left unseen at R is cut to about b / 3 at
#: 2R while the step's noise s doubles, a smaller mean square error where ``8 b² / 9 > 3 s²``:
#: with b the pull measured where it hides, s below 1.25 sampling sds; at a larger s the noise
#: hides the pull and a wider step would double it. With rows a person the radius clips few
#: where the person effects are small, and the wider step would only cost noise; where they
#: are large no released number tells a skewed effect from a symmetric one, so an unchecked
#: step warns instead (docs/design/pooled.md, "The skew check"; docs/accuracy.md, "Skewed
#: outcomes between persons" and "Skewed person effects in pooled rows").
UNSEEN_WIDEN, UNSEEN_NOISE = 2.0, 1.25
#: A window narrower than ``SLIVER - 1`` of the steps' radius is a sliver: it holds less than
#: the mean excess of a normal score clipped at twice its root mean square (0.37 of that, a
#: fifth of the radius). Where the Cauchy–Schwarz radius is within this factor of the steps'
#: narrower one, the meat's excess window between them is such a sliver, and its bias bound
#: misses most of what the last step clips: that step is guarded as one at the
#: Cauchy–Schwarz radius is (:func:`_guarded`; every last step is checked where the check can
#: see a pull, :func:`_seen`), and otherwise the meat reads each person's excess out to
#: ``SLIVER - 1`` of the steps' radius past it (:func:`_meat_rows`). Random effects'
#: quasi-demeaned scores, whose residuals are nearly independent within a person, put the two
#: radii close together, and a skewed outcome's clipped scores pulled the slopes past their
#: intervals with no warning there (docs/accuracy.md, "Random effects' last step").
SLIVER = 1.25
#: The Newton steps **grew** where the last step's released score sum exceeds the one before
#: by more than ``GROWTH_SDS`` of each one's noise (its norm's, ``√p`` sds) added
#: (:func:`_grew`): the Hessian the steps solve by (the released X'X of the persons' core
#: values) is far from the design's along some direction, so each step overshoots the fixed
#: point by more than it corrects, and β̂ is no estimate of it. A power term far from 0 does
#: it: RAND HIE's ``np.log1p(meddol) ~ xage + I(xage**2/100)`` clips the square at 22 of its
#: range's 39 in the core, and `PooledOLS` at ε = 10^300 released the slope on age at -0.28
#: against pooled OLS's 0.011 (SE 0.005), the step sums 13 then 52 (whitened units); at ε = 4
#: and 8 its intervals missed pooled OLS in 6 and 10 of 10 fits, with no warning (an audit).
#: At 3, the rule fired in 3 and 6 of 6 of those fits at ε = 4 and 8 (`BetweenOLS` the same),
#: in none of 264 fits of eleven other models and panels at ε = 1-8 (RAND HIE's headline
#: pooled, between and GLS fits, the wage panel's, simulated normal, skewed-count and
#: lognormal-regressor panels), whose largest margin was 0.8 of the first sum short of it.
GROWTH_SDS = 3.0
#: A Newton step is solved by the Hessian updated with the curvature the move before it met
#: (:func:`_secant`) where that move is at least ``SECANT_SDS`` noise sds (``√p`` of both
#: released sums' sds added in quadrature), to a curvature of at most ``SECANT_MAX``. The
#: curvature's noise along the move is then at most ``1 / (2 √p)``, and the error it leaves
#: at most an eighth of the move per sd (``|κ - 1| / κ² <= 1/4``); a shorter move's
#: overshoot (at most half of it) is of the order of the steps' noise, which the wider noise
#: law holds. At 5 sds a between-person slope of ``|t|`` about 100 with three rows a person
#: still missed in 8 fits of 30 (its first move just short of the gate, the second undoing it).
SECANT_SDS, SECANT_MAX = 2.0, 4.0
_SKEW_TARGET = "Σ_u (s_u/‖s_u‖, e_u) e_u, e_u = min((‖s_u‖/R - 1)₊, 1)"
#: What became of the skew check: none ran (a last step inside the Cauchy–Schwarz radius
#: where the check could not see a pull that matters: the meat's window measures that clip
#: out to the radius), or a last step at the radius where the check could not see
#: (``unchecked``), or the check ran and found the clipped parts
#: symmetric, or found no skew where a person is one row (the step clipped wider,
#: ``guarded``: :data:`UNSEEN_WIDEN`), or skewed (the step ``widened``; the fit warns).
SkewCheck = Literal["none", "unchecked", "guarded", "symmetric", "widened"]
#: Monte Carlo draws of the privacy noise pushed through β̂'s map (seed: :data:`NOISE_SEED`).
NOISE_DRAWS = 2000


@dataclass(frozen=True)
class _Statistics:
    """What the Gaussian releases gave (scaled units): the pilot (the floored solve of the
    released Gram matrix), the stepped β̂, draws of its noise, its clustered sampling
    covariance, a bound on ``Σ_u (‖s̃_u‖ - R)₊`` (what the steps' radius R clipped of the
    whitened scores at β̂, which moves the steps' fixed point by at most ``Ĥ^{-1/2}`` times
    it), what became of the skew check before the last step (:data:`SkewCheck`) and the
    ledger entries of the releases."""

    pilot: _Solution
    beta: NDArray[np.float64]
    draws: tuple[NDArray[np.float64], NDArray[np.float64]]
    sampling: NDArray[np.float64]
    clipped: float
    skew: SkewCheck
    entries: tuple[LedgerEntry, ...]
    #: random effects' weight on the between-person part of the rows (:func:`_lifted`; 0:
    #: GLS's quasi-demeaned rows, and every other estimator's rows as they are)
    between_weight: float = 0.0
    #: whether the Newton steps grew (:func:`_grew`, released numbers): β̂ is withheld
    grew: bool = False


def _release_statistics(
    persons: PersonSums,
    cap: int,
    rho: tuple[float, ...],
    generator: np.random.Generator,
    *,
    row_count: Callable[[NDArray[np.float64], int], float],
    reach: NDArray[np.float64],
    blocks: Blocks = (),
    disjoint: Disjoint = (),
) -> _Statistics:
    """Steps 2-4 of ``docs/design/pooled.md`` on the sums of the scaled rows (values in
    [-1, 1]; the intercept, if any, first) of n ``persons`` (:class:`PersonSums`, over the
    Gram matrix's entries not structural zeros of ``disjoint``), a person's rows weighted
    ``min(1, cap / T_u)``; ``rho``: the Gram matrix's, then (where there are Newton steps)
    the scores' size's and each step's, then the meat's;
    ``blocks``: the factor blocks whose rows' norms the Gram matrix's bound counts;
    ``disjoint``: the blocks whose different columns' products are 0 in every row (public),
    left out of the released vector and put back as zeros. Where ``persons`` have a between
    part (random effects), it is released with their Gram matrix, and the weight the rows
    keep of it is chosen from the two (:func:`~dplong.models.pooled.gram._lifted`)."""
    n, p = persons.rows.size, persons.p
    rho_gram, *stepping, rho_meat = rho

    # step 2: the augmented Gram matrix, one vector: the pilot and the Hessian
    # the frame: a narrower range's values; a factor block's rows within its norm bound
    bound = _gram_bound(cap, _row_square(p, blocks))
    kept = _released_entries(p + 1, disjoint)
    grams = persons.clipped_grams(cap, bound)
    bound *= 1.0 + 1e-12  # room for rounding
    gram = release_vector_sum(
        grams,
        bound,
        math.sqrt(2.0) * bound,
        rho_gram,
        generator,
    )
    sigma = float(gram.sd[0])
    released = _unvech_scaled(gram.total[: kept.size], p + 1, kept)
    weight, lifted = 0.0, persons.between is not None
    if not lifted:
        pilot = _Solution.of(released, sigma, disjoint)
        row_total = row_count(released, cap)
    else:  # random effects: GLS's rows, or rows keeping more of their between-person part
        between = _unvech_scaled(gram.total[kept.size :], p + 1, kept)
        row_total = row_count(released + between, cap)  # the rows as they are
        weight, pilot = _lifted(released, between, sigma, disjoint)
        released, sigma = released + weight * between, pilot.sigma
        persons = persons.toward(weight)
    # step 3: the scores' typical size, then Newton steps: the whitened clipped scores at the
    # last β (public), each clipped to a radius from the released Gram matrix's residuals at
    # that β, or from the scores' size where that is smaller, and never below the radius
    # whose noise is already quiet (clipping there saves no noise worth its bias)
    size = None
    if stepping:  # the ePTR route's errors have no steps to size
        outer = _clip_radius(released, pilot, pilot.beta, cap, row_total, reach)
        pilot_scores = persons.scores(pilot.beta, cap=cap, whiten=pilot.whiten, radius=outer)
        size = _score_size(pilot_scores, outer, stepping[0], max(stepping[1:]), generator)
    limit = math.inf if size is None else size.radius
    quiet = 0.0 if size is None else size.quiet
    score_sd = math.inf if size is None else size.sampling
    beta, sds, sums, stepped = pilot.beta, [], [], []
    # the last step's released score sum and the whitened move made of it (_secant)
    previous: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    skew: SkewCheck = "none"
    for k, rho_step in enumerate(stepping[1:]):
        outer = _clip_radius(released, pilot, beta, cap, row_total, reach, quiet)
        radius = min(outer, limit)
        rho_check = SKEW_SHARE * rho_step
        # the last step, checked where the check can see a pull that matters: at any radius,
        # since the meat's window ends at the Cauchy–Schwarz radius and persons beyond it are
        # measured by nothing else. At that radius or a sliver inside it (SLIVER: the window
        # between the two measures little), one mean a person with the step's noise small is
        # checked below the gate too and clipped wider where it finds no skew (UNSEEN_WIDEN:
        # it sees only pulls of several sampling sds). Unchecked at the Cauchy–Schwarz radius,
        # the clip is measured nowhere; a narrower step's is left to the meat's window
        last = k == len(stepping) - 2
        near = last and outer <= SLIVER * limit
        seen = last and _seen(radius, rho_check, p, score_sd)
        guarded = near and _guarded(cap, radius, rho_step, score_sd)
        if near and outer <= limit:
            skew = "unchecked"
        scores = persons.scores(beta, cap=cap, whiten=pilot.whiten)
        if seen or guarded:
            rho_step -= rho_check
            check = _skew_check(scores, radius, rho_check, generator)
            stepped.append(gaussian_vector_entry("skew check", _SKEW_TARGET, rho_check, check))
            skew = "widened" if _fired(check) else "guarded" if guarded else "symmetric"
            if skew != "symmetric":  # post-processing of the check's release
                widen = SKEW_WIDEN if skew == "widened" else UNSEEN_WIDEN
                radius = limit = widen * radius
        score_bound = radius * (1.0 + 1e-12)
        step = release_vector_sum(
            _clip_rows(scores, radius),
            score_bound,
            2.0 * score_bound,
            rho_step,
            generator,
        )
        stepped.append(
            gaussian_vector_entry(f"Newton step {k + 1}", f"Σ_u clip(s_u(β_{k}))", rho_step, step)
        )
        sds.append(float(step.sd[0]))
        sums.append(float(np.linalg.norm(step.total)))
        move = step.total
        if previous is not None and skew != "widened":  # the curvature the last move met
            move = _secant(previous[1], previous[0], step.total, sds[-2], sds[-1])
        previous = step.total, move
        beta = beta + pilot.whiten @ move  # Ĥ⁻¹ Ĥ^{1/2} t

    # step 4: the person-clustered meat at the released β̂ (public), whitened, with the mass
    # the steps' radius clipped below the Cauchy–Schwarz one (the steps' fixed point's bias);
    # its noise grows as R², so its radius is quiet at its own noise (MEAT_NOISE)
    quiet = min(quiet, _meat_quiet(size, rho_meat, p))
    radius = _clip_radius(released, pilot, beta, cap, row_total, reach, quiet)
    meat, gain = _release_meat(
        persons.scores(beta, cap=cap, whiten=pilot.whiten),
        radius,
        min(radius, limit),
        rho_meat,
        generator,
    )
    k = p * (p + 1) // 2
    clipped = _high_end(meat, k) / gain if gain else 0.0
    values, vectors = np.linalg.eigh(_unvech_scaled(meat.total[:k], p))
    psd = (vectors * np.maximum(values, 0.0)) @ vectors.T
    sampling = n / (n - 1.0) * pilot.whiten @ psd @ pilot.whiten

    target = "[X y]'[X y]" + (", its between-person part" if lifted else "")
    entries = (
        gaussian_vector_entry("sufficient statistics", target, rho_gram, gram),
        *(
            ()
            if size is None
            else (
                gaussian_vector_entry(
                    "scores' size", "Σ_u min(‖s_u(β_0)‖², R_0²)", stepping[0], size.sum
                ),
            )
        ),
        *stepped,
        gaussian_vector_entry(
            "clustered meat",
            "Σ_u clip(s_u) clip(s_u)'" + (", Σ_u (‖s_u‖ - R)₊" if gain else ""),
            rho_meat,
            meat,
        ),
    )
    draws = _noise_draws(pilot, beta, sigma, sds, kept)
    return _Statistics(
        pilot, beta, draws, sampling, clipped, skew, entries, weight, _grew(sums, sds, p)
    )


def _grew(sums: list[float], sds: list[float], p: int) -> bool:
    """Whether the last Newton step's released score sum (norm ``sums[-1]``, each entry's
    noise sd ``sds[-1]``) exceeds the one before by more than :data:`GROWTH_SDS` of both
    norms' noise (``√p`` sds each): the steps grow rather than settle. Post-processing.

    Examples
    --------
    >>> from dplong.models.pooled.release import _grew
    >>> _grew([13.0, 52.0], [0.0, 0.0], 3), _grew([7.4, 17.5], [0.93, 0.50], 3)
    (True, True)
    >>> _grew([7.4, 9.0], [0.93, 0.50], 3), _grew([5.0], [0.1], 3)
    (False, False)
    """
    if len(sums) < 2:
        return False
    return sums[-1] - sums[-2] > GROWTH_SDS * math.sqrt(p) * (sds[-1] + sds[-2])


def _secant(
    move: NDArray[np.float64],
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    sd_before: float,
    sd_after: float,
) -> NDArray[np.float64]:
    """The whitened move of a Newton step from its released score sum ``after``, solved by
    the whitened Hessian updated with the curvature the step's ``move`` before it met: the
    released sums before and after that move differ by ``K d`` (``K = Ĥ^{-1/2} G Ĥ^{-1/2}``,
    G the design's Gram matrix on the ranges' values, d the move) plus both sums' noise, so
    ``u = before - after - d``, less the noise ``before`` put into d (``p σ²`` along it on
    average), estimates ``(K - I) d``, and the symmetric rank-one (SR1) update ``B = I +
    u u' / u'd`` holds the secant condition ``B d = K d``; the move is ``B⁻¹ after``
    (Sherman–Morrison). The released X'X is of the columns clipped to their cores, not their
    ranges, so along a regressor with many persons beyond its core (one value a person, or
    skewed) ``K`` is well above 1 and unscaled steps overshoot the fixed point by ``K - 1``
    of what they correct (at 1.8 two steps left 0.64 of the pilot's error), while along the
    others it is about 1: ``K - I`` is of low rank, which SR1 recovers from one move
    whatever its direction (a scaling along d alone moved a within-varying slope beside a
    clipped one by 1-2 %). Only an overshoot is corrected (``u'd > 0``, B's curvature along
    u at most :data:`SECANT_MAX`: ``B >= I``, so the draws of :func:`_noise_draws`, which take
    the step unscaled, stay at least as wide), and only where the move is
    :data:`SECANT_SDS` noise sds of both sums' difference or more; where u is within as many
    of its noise, only its part along d (one scalar, a coordinate's noise: a noisy u damped
    real steps in random directions). The caller does not scale a step the skew check
    widened: its sum holds the one-sided parts the step before clipped, a change the secant
    would read as curvature (a zero-inflated lognormal outcome's intervals missed in 5 of 10
    fits). Post-processing.

    Examples
    --------
    Exact steps whose Hessian is half the design's along the first axis and the design's
    along the second; the pilot's error was ``K⁻¹ d = (0.5, 1)`` and the unscaled move ``d``
    overshot the first to -0.5. The updated move lands on the fixed point:

    >>> import numpy as np
    >>> from dplong.models.pooled.release import _secant
    >>> curvature = np.diag([2.0, 1.0])
    >>> move = np.array([1.0, 1.0])
    >>> after = curvature @ (np.linalg.solve(curvature, move) - move)  # the sum there
    >>> _secant(move, move, after, 0.0, 0.0).tolist()
    [-0.5, 0.0]
    >>> _secant(move, move, after, 0.5, 0.5).tolist()  # a move within the noise: unscaled
    [-1.0, 0.0]
    """
    p, squared = move.size, float(move @ move)
    noise = sd_before**2 + sd_after**2
    if squared < SECANT_SDS**2 * p * noise:
        return after
    excess = before - after - (1.0 + p * sd_before**2 / squared) * move  # (K - I) d
    along, size = float(excess @ move), float(excess @ excess)
    if along <= 0.0:  # no overshoot: the steps converge as they are
        return after
    if size < SECANT_SDS**2 * p * noise:  # u within its noise: only its part along d
        excess, size = along / squared * move, along**2 / squared
    along = max(along, size / (SECANT_MAX - 1.0))  # B's curvature along u at most SECANT_MAX
    return np.asarray(after - excess * float(excess @ after) / (along + size))


def _skew_check(
    scores: NDArray[np.float64], radius: float, rho: float, generator: np.random.Generator
) -> WeightedRelease:
    """The check of whether the whitened ``scores`` (n x p, unclipped) a step would clip to
    ``radius`` leave clipped parts that do not sum to about 0 (:func:`_fired`): one ρ-zCDP
    vector of ``Σ_u u_u e_u`` and ``Σ_u e_u²``, with ``u_u`` the score's direction and
    ``e_u = min((‖s̃_u‖ / R - 1)₊, 1)`` its clipped part out to a second radius, in radii: a
    row's norm is at most √2, and two rows with parts ``a >= b`` differ by at most
    ``(a + b)² (1 + (a - b)²) <= 4`` in square (increasing in b up to a = 1, where the
    directions are opposite): sensitivity 2.

    Where the outcome's errors are symmetric given the regressors, each clipped person's
    direction is as likely ``-u_u`` as ``u_u`` (the score of errors of flipped signs), so each
    entry of the first sum has mean 0 and variance at most the second. The clipped parts' sum
    is what moves the steps' fixed point off pooled OLS (``docs/design/pooled.md``); a skewed
    outcome clips more on one side."""
    room = 1.0 + 1e-12  # rounding in the directions' norms
    rows = _skew_rows(scores, radius)
    return release_vector_sum(rows, math.sqrt(2.0) * room, 2.0 * room, rho, generator)


def _fired(check: WeightedRelease) -> bool:
    """Whether the released :func:`_skew_check` finds the clipped parts skewed: an entry of
    their sum beyond the normal quantile of ``1 -`` :data:`SKEW_FALSE` ``/ (2 p)`` times the
    root of the squares' high end plus the noise's variance (post-processing)."""
    p = check.total.size - 1
    sd = float(check.sd[0])
    spread = math.sqrt(_high_end(check, p) + sd**2)
    return bool(np.any(np.abs(check.total[:p]) > _skew_quantile(p) * spread))


def _seen(radius: float, rho: float, p: int, sampling: float) -> bool:
    """Whether :func:`_skew_check` at ``radius`` and ρ fires on clipped parts that sum to
    :data:`SKEW_SEEN` of the scores' ``sampling`` sd a coordinate (public, from released
    numbers): its threshold is at least the normal quantile times the noise sd
    ``2 / √(2 ρ)``, in radii."""
    return _skew_quantile(p) * 2.0 / math.sqrt(2.0 * rho) * radius <= SKEW_SEEN * sampling


def _guarded(cap: int, radius: float, rho: float, sampling: float) -> bool:
    """Whether the last step is checked (below the skew check's gate too) and, where the
    check finds no skew, clips at :data:`UNSEEN_WIDEN` times ``radius``: a person is one row
    (``cap`` 1), and the step's noise sd ``2 radius / √(2 ρ)`` is at most
    :data:`UNSEEN_NOISE` of the scores' ``sampling`` sd a coordinate (public, from released
    numbers). Above the gate (:func:`_seen`) it is: the check's noise sd at a quarter of the
    step's ρ is twice the step's, and its bar at least 1.96 of them."""
    return cap == 1 and 2.0 * radius / math.sqrt(2.0 * rho) <= UNSEEN_NOISE * sampling


def _skew_quantile(p: int) -> float:
    """The normal quantile of ``1 -`` :data:`SKEW_FALSE` ``/ (2 p)``: the skew check's bar in
    sds of an entry (a union bound over the p coordinates, two-sided)."""
    return NormalDist().inv_cdf(1.0 - SKEW_FALSE / (2 * p))


def _skew_rows(scores: NDArray[np.float64], radius: float) -> NDArray[np.float64]:
    """Each person's row of :func:`_skew_check`'s release: ``(u_u e_u, e_u²)``."""
    norms = np.sqrt((scores**2).sum(axis=1))
    excess = np.clip(norms / radius - 1.0, 0.0, 1.0)
    direction = scores / np.where(norms > 0.0, norms, 1.0)[:, None]
    return np.column_stack([direction * excess[:, None], excess**2])


@dataclass(frozen=True)
class _ScoreSize:
    """The released ``Σ_u min(‖s̃_u(β₀)‖², R₀²)``, the steps' radius it gives, the radius
    whose step noise is quiet (:data:`QUIET_NOISE`) and the scores' sampling sd a coordinate
    ``√(n m̂ / p)``."""

    sum: WeightedRelease
    radius: float
    quiet: float
    sampling: float


def _score_size(
    scores: NDArray[np.float64],
    outer: float,
    rho: float,
    step_rho: float,
    generator: np.random.Generator,
) -> _ScoreSize:
    """The whitened ``scores``' (n x p, at the pilot, clipped to the Cauchy–Schwarz radius
    ``outer``) mean square m̂, one scalar Gaussian release, plus :data:`SIZE_SDS` of its
    noise sds, and the Newton steps' radius from it: √(:data:`SCORE_SPREAD` m̂), or where the
    noise of a step of ρ ``step_rho`` at that radius would be under :data:`QUIET_NOISE` of the
    scores' sampling sd ``√(n m̂ / p)``, the radius whose noise is that (clipping saves
    nothing there: with the noise off the steps are exact).

    The Cauchy–Schwarz radius (:func:`_clip_radius`) allows for a person whose residuals are
    perfectly correlated, ``T_cap`` times the mean square of a person whose residuals are
    independent (a within fit, or small person effects): that radius's noise, not the
    sampling error, then sets the steps'. Each person's squared norm is in [0, outer²]: the
    sum's sensitivity is outer². At the pilot the scores carry the pilot's error too, so the
    mean square is if anything too large."""
    n, p = scores.shape
    bound = outer**2 * (1.0 + 1e-12)
    total = release_vector_sum((scores**2).sum(axis=1)[:, None], bound, bound, rho, generator)
    mean_square = _high_end(total, 0) / n
    # a step's noise sd per whitened coordinate is 2 R / √(2 ρ)
    sampling = math.sqrt(n * mean_square / p)
    quiet = QUIET_NOISE * sampling * math.sqrt(2.0 * step_rho) / 2.0
    return _ScoreSize(total, max(math.sqrt(SCORE_SPREAD * mean_square), quiet), quiet, sampling)


def _meat_quiet(size: _ScoreSize | None, rho: float, p: int) -> float:
    """The radius at which the meat's noise sd is :data:`MEAT_NOISE` of a diagonal entry,
    ``n m̂ / p`` from the released scores' mean square (:class:`_ScoreSize`; inf without one):
    the meat's sensitivity is at most √3 R², its noise sd √3 R² / √(2 ρ). Public, from
    released numbers."""
    if size is None:
        return math.inf
    entry = _high_end(size.sum, 0) / p
    return math.sqrt(MEAT_NOISE * entry * math.sqrt(2.0 * rho / 3.0))


def _high_end(release: WeightedRelease, j: int) -> float:
    """Entry ``j`` of a released sum of non-negative values, floored at 0, plus
    :data:`SIZE_SDS` of its noise sds: the high end that the scores' size and the clipped mass
    are read at."""
    return max(float(release.total[j]), 0.0) + SIZE_SDS * float(release.sd[j])


def _release_meat(
    scores: NDArray[np.float64],
    radius: float,
    inner: float,
    rho: float,
    generator: np.random.Generator,
) -> tuple[WeightedRelease, float]:
    """One ρ-zCDP release of the whitened ``scores``' (n x p, unclipped) rows of
    :func:`_meat_rows` and the excess's scale: norm at most R² (√2 R² with the excess),
    sensitivity √2 R² (√3 R²)."""
    rows, gain = _meat_rows(scores, radius, inner)
    bound = radius**2 * (1.0 + 1e-12)  # room for rounding
    meat = release_vector_sum(
        rows,
        (math.sqrt(2.0) if gain else 1.0) * bound,
        (math.sqrt(3.0) if gain else math.sqrt(2.0)) * bound,
        rho,
        generator,
    )
    return meat, gain


def _meat_rows(
    scores: NDArray[np.float64], radius: float, inner: float
) -> tuple[NDArray[np.float64], float]:
    """Each person's row of the meat's release and the excess's scale: ``vech(s̃ s̃')`` of the
    whitened score clipped to ``radius`` (norm at most R²; two persons' rows differ by at most
    √2 R², PSD), and where the steps clipped at ``inner < radius`` the person's excess
    ``min((‖s̃_u‖ - inner)₊, w)`` times ``R² / w`` (in [0, R²]) over a window w of
    ``radius - inner``, or :data:`SLIVER` ``- 1`` of ``inner`` where that is wider (a sliver
    of a window holds little of what the steps clip): the row's norm is then at most √2 R², two
    rows differ by at most √3 R². The scale is 0 (no excess column) where nothing was clipped
    below ``radius``."""
    norms = np.sqrt((scores**2).sum(axis=1))
    columns = [vech_scaled(_clip_rows(scores, radius), np.ones(scores.shape[0]))]
    window = max(radius - inner, (SLIVER - 1.0) * inner) if radius > inner else 0.0
    gain = radius**2 / window if window else 0.0
    if gain:
        columns.append(gain * np.clip(norms - inner, 0.0, window)[:, None])
    return np.hstack(columns), gain


def _noise_draws(
    pilot: _Solution,
    beta: NDArray[np.float64],
    sigma: float,
    score_sds: list[float],
    kept: NDArray[np.intp],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:data:`NOISE_DRAWS` draws of the released β̂ (scaled) under fresh noise of the released
    laws, taking the released numbers for the truth (post-processing with a fixed seed): the
    ``[X y]'[X y]`` around the released Hessian and β̂, each floored and solved as the fit was
    (the pilot), then stepped by its Hessian's solve of a score plus a draw of the score's
    noise. Two laws bracket the clipping, which the draws cannot see: the exact score
    ``H (β̂ - β₀)`` (nothing clipped: the step corrects the pilot's error) and none at all
    (every score clipped away: the pilot's error stays); the fit reports the wider. The
    entries not ``kept`` (structural zeros) get no noise."""
    p = beta.size
    rng = np.random.default_rng(NOISE_SEED)
    hessian = pilot.hessian - pilot.ridge * np.eye(p)
    centre = np.zeros((p + 1, p + 1))
    centre[:p, :p] = hessian
    centre[:p, p] = centre[p, :p] = hessian @ beta
    noise = rng.normal(0.0, sigma, (NOISE_DRAWS, p + 1, p + 1))
    noise = (np.triu(noise) + np.swapaxes(np.triu(noise, 1), 1, 2)) / np.where(
        np.eye(p + 1, dtype=bool), 1.0, math.sqrt(2.0)
    )
    if kept.size < (p + 1) * (p + 2) // 2:  # structural zeros: no noise there
        upper = np.triu_indices(p + 1)
        zeros = np.ones(upper[0].size, dtype=bool)
        zeros[kept] = False
        noise[:, upper[0][zeros], upper[1][zeros]] = 0.0
        noise[:, upper[1][zeros], upper[0][zeros]] = 0.0
    draws = centre + noise
    gram, cross = draws[:, :p, :p], draws[:, :p, p]
    smallest = np.linalg.eigvalsh(gram)[:, 0]
    ridges = np.maximum(0.0, _floor(sigma, pilot.norm) - smallest)
    floored = gram + ridges[:, None, None] * np.eye(p)
    corrected = np.linalg.solve(floored, cross[..., None])[..., 0]
    uncorrected = corrected.copy()
    for sd in score_sds:  # the whitened score's noise, in score units
        step = rng.normal(0.0, sd, (NOISE_DRAWS, p)) @ pilot.root
        uncorrected = uncorrected + np.linalg.solve(floored, step[..., None])[..., 0]
        step = step + (beta - corrected) @ hessian
        corrected = corrected + np.linalg.solve(floored, step[..., None])[..., 0]
    return np.asarray(corrected), np.asarray(uncorrected)


def _clip_radius(
    released: NDArray[np.float64],
    solution: _Solution,
    beta: NDArray[np.float64],
    cap: int,
    rows: float,
    reach: NDArray[np.float64],
    quiet: float = 0.0,
) -> float:
    """The whitened scores' clipping radius from released numbers (:data:`CLIP_RADIUS`), at
    least ``quiet`` (the radius whose noise is :data:`QUIET_NOISE` of the scores' sampling
    sd: the Cauchy–Schwarz size is that of an average residual, and on a skewed outcome the
    persons beyond it pull the steps' fixed point off pooled OLS, which a radius the noise
    can afford does not) and at most the worst case
    ``T_cap ‖a‖ / √λ_min(Ĥ) (a_y + Σ a_j |β̂₀_j|)`` of a whitened score, for public bounds
    ``a`` on the columns' and ``a_y`` on the outcome's magnitudes."""
    p = solution.beta.size
    gram, cross, square = released[:p, :p], released[:p, p], released[p, p]
    rss = square - 2.0 * beta @ cross + beta @ gram @ beta
    # the released RSS is v'(G + E)v with v = (-β, 1): its noise sd is σ ‖v‖² (entry sds σ on
    # E's diagonal, σ/√2 off it). Where the residuals are small next to it (a within fit: the
    # person effects are gone) it can come out near 0, and a radius sized on that clips every
    # score to nothing, leaving the pilot uncorrected: floored at RSS_FLOOR noise sds
    noise = solution.sigma * (1.0 + float(beta @ beta))
    variance = max(rss, RSS_FLOOR * noise, 1.0) / rows
    size = float(np.linalg.norm(reach[:-1]))
    # a whitened row's mean ‖Ĥ^{-1/2} x̃‖²: tr(Ĥ⁻¹ Ĝ) / rows (about p / rows), at most ‖a‖² / λ_min
    whitened = float(np.trace(solution.whiten @ gram @ solution.whiten))
    mean_square = min(max(whitened, 1.0) / rows, size**2 / solution.smallest)
    worst = cap * size / math.sqrt(solution.smallest) * float(reach[-1] + np.abs(beta) @ reach[:-1])
    return min(max(math.sqrt(CLIP_RADIUS * variance * mean_square) * cap, quiet), worst)
