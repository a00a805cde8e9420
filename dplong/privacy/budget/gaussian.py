"""The budgets of Gaussian (zCDP) releases: ePTR, sufficient statistics and random effects.

Gaussian releases compose by adding their zCDP ρ: a budget's (ε, δ) becomes one total ρ
shared in proportion (:func:`gaussian_shares`). A release of sufficient statistics shares it
between the private ranges of its unbounded columns and its Gaussian vectors
(:func:`statistics_budget`); a random-effects fit adds a pilot fit and the release of its
variance components (:func:`random_effects_budget`); an efficient Propose-Test-Release and the
Gaussian releases after it split theirs with :func:`ptr_budget`. A last stage calibrated on
what the earlier ones cost gets :func:`remaining_rho`. Public facts only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from dplong.exceptions import PrivacyParameterError
from dplong.privacy.accounting import Composer, Cost, zcdp_epsilon
from dplong.privacy.budget.calibration import largest_within
from dplong.privacy.budget.fit import users_share
from dplong.privacy.budget.stages import MAX_MISS
from dplong.privacy.ranges import FAR_SHARE, histogram_threshold, located_miss, reach_miss
from dplong.privacy.row_cap import ROW_CAP_SHARE


def gaussian_shares(
    epsilon: float, delta: float, shares: Sequence[float], *, part: float = 1.0
) -> tuple[float, ...]:
    """The zCDP ρ of Gaussian releases that together spend ``(epsilon, delta)``: the largest
    total ρ whose conversion (:func:`~dplong.privacy.accounting.zcdp_epsilon`) stays within
    ε at δ, split in proportion to ``shares`` (zCDP composes by adding ρ). ``part``: the
    fraction of the fit's ε that ``epsilon`` is (what a refusal names).

    The conversion is a minimum over a finite public grid of Rényi orders
    (:data:`~dplong.privacy.accounting.ORDERS`), so it neither falls to 0 as ρ does (at
    δ = 1e-6 it certifies no ε below about 1.3e-5: :func:`smallest_gaussian_epsilon`) nor stays
    above ρ (at a large δ it is below). An ε at or below that floor is refused as a budget
    refusal (:class:`~dplong.exceptions.PrivacyParameterError`: a larger ε cures it), before
    any noise; the search brackets the root from above by doubling.

    Examples
    --------
    >>> from dplong.privacy.accounting import zcdp_epsilon
    >>> from dplong.privacy.budget import gaussian_shares
    >>> first, second = gaussian_shares(1.0, 1e-6, [0.75, 0.25])
    >>> round(first / second, 6), bool(zcdp_epsilon(first + second, 1e-6) <= 1.0)
    (3.0, True)
    >>> (rho,) = gaussian_shares(1.0, 0.5, [1.0])     # a large δ: ρ above ε
    >>> bool(rho > 1.0), bool(zcdp_epsilon(rho, 0.5) <= 1.0)
    (True, True)
    >>> gaussian_shares(1e-5, 1e-6, [1.0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.PrivacyParameterError: epsilon=1e-05 is too small for a Gaussian release ...
    """
    floor = smallest_gaussian_epsilon(delta)
    if not epsilon > floor:  # no ρ > 0 converts to within ε: a larger ε cures it
        of_it = "" if part == 1.0 else f" of {part:.3g} of it"
        refusal = PrivacyParameterError(
            f"epsilon={epsilon / part:.3g} is too small for a Gaussian release{of_it} at "
            f"delta={delta:.3g}: epsilon must be above {floor / part:.3g} (the smallest its "
            "zCDP conversion certifies on dplong's grid of Rényi orders); raise epsilon"
        )
        refusal.budget_refusal = True
        raise refusal
    total = float(sum(shares))
    upper = epsilon
    while zcdp_epsilon(upper, delta) <= epsilon:  # a large δ converts ρ to less than ρ
        upper *= 2.0
    rho = optimize.brentq(
        lambda r: zcdp_epsilon(r, delta) - epsilon, _SMALLEST_RHO, upper, xtol=1e-15
    )
    while zcdp_epsilon(rho, delta) > epsilon:  # brentq's root may sit a hair above ε
        rho *= 1.0 - 1e-12
    return tuple(rho * share / total for share in shares)


#: The smallest ρ :func:`gaussian_shares` searches (the lower end of its bracket).
_SMALLEST_RHO = 1e-300


def smallest_gaussian_epsilon(delta: float) -> float:
    """The ε below which :func:`gaussian_shares` finds no ρ: the zCDP conversion at δ of the
    smallest ρ it searches (the order grid's floor; 0 for a δ large enough). Public.

    Examples
    --------
    >>> from dplong.privacy.budget.gaussian import smallest_gaussian_epsilon
    >>> round(smallest_gaussian_epsilon(1e-6), 7), smallest_gaussian_epsilon(0.5)
    (1.3e-05, 0.0)
    """
    return zcdp_epsilon(_SMALLEST_RHO, delta)


@dataclass(frozen=True)
class PTRBudget:
    """The budget of one efficient Propose-Test-Release (ePTR, Shen, Tong & Wang 2026, Alg 2)
    and of the Gaussian releases that follow it.

    Attributes
    ----------
    test_epsilon : float
        ε of the test: the coin ``Bernoulli(sigmoid(ε_t (γ - M)))`` on a 1-Lipschitz safety
        margin γ, ε_t-DP whatever the data (half of the ePTR's ε, as in Alg 2).
    release_epsilon, delta : float
        The (ε, δ) of the Gaussian release given the test (the other half, and the ePTR's δ).
    release_rho : float
        The zCDP ρ of that release's discrete Gaussian: the largest whose exact conversion
        (CKS 2020, Prop. 12) is ``release_epsilon``-DP at ``delta`` (sharper than Alg 2's
        classical ``2α √(2 log(1.25/δ)) / ε``, and valid at any ε).
    threshold : float
        Alg 2, line 3: ``M = 1 + (2/ε) log(max(1/δ, 1/ε))`` with ε the ePTR's (= 2 ε_t): an
        uncertified data set (γ = 0) releases with probability at most ``e^{-ε_t} δ``.
    rest_rho : tuple of float
        The ρ of the Gaussian releases after the ePTR, in proportion to their shares.
    """

    test_epsilon: float
    release_epsilon: float
    delta: float
    release_rho: float
    threshold: float
    rest_rho: tuple[float, ...]

    def entries_cost(self) -> list[Cost]:
        """The costs the ePTR's two ledger entries record: the test's pure ε_t and the
        release's approximate ``(ε_r, δ)`` (composed by basic composition with the rest)."""
        return [Cost(epsilon=self.test_epsilon), Cost(self.release_epsilon, self.delta)]


def ptr_budget(
    epsilon: float, delta: float, *, share: float = 1.0, rest: Sequence[float] = ()
) -> PTRBudget:
    """Split ``(epsilon, delta)`` between one ePTR (a ``share`` of ε, half of δ when ``rest``
    is given, else all of it) and Gaussian releases after it in proportion to ``rest``.

    Privacy (Alg 2, Thm 2.2): the test coin's log-odds ``ε_t (γ - M)`` move by at most ε_t
    between neighbours (γ is 1-Lipschitz); where γ > 0 on either neighbour the estimate
    moves by at most its sensitivity α and the Gaussian is ``(ε_r, δ)``-DP, so the pair
    (coin, release) is ``(ε_t + ε_r, δ)``-DP; where γ = 0 on both, the coins are equal and
    release with probability at most ``e^{-ε_t} δ < δ``. The rest are ρ-zCDP, converted at
    the δ left. Everything here is a public fact.

    Examples
    --------
    >>> from dplong.privacy.accounting import Cost, compose
    >>> from dplong.privacy.budget import ptr_budget
    >>> b = ptr_budget(1.0, 1e-6)
    >>> b.test_epsilon, b.release_epsilon, round(b.threshold, 4)   # Alg 2 at ε = 1, δ = 1e-6
    (0.5, 0.5, 28.631)
    >>> both = ptr_budget(1.0, 1e-6, share=0.75, rest=[0.5, 0.5])
    >>> total = compose(both.entries_cost() + [Cost(rho=r) for r in both.rest_rho], 1e-6)
    >>> bool(total.epsilon <= 1.0 + 1e-9), total.delta <= 1e-6
    (True, True)
    """
    if not 0.0 < share <= 1.0 or (share < 1.0) != bool(rest):
        raise AssertionError("an ePTR's share is below 1 exactly when releases follow it")
    eps_ptr = epsilon * share
    delta_ptr = delta / 2.0 if rest else delta
    test = eps_ptr / 2.0
    (rho,) = gaussian_shares(eps_ptr - test, delta_ptr, [1.0], part=share / 2.0)
    with np.errstate(over="ignore"):
        threshold = 1.0 + math.log(max(1.0 / delta_ptr, 1.0 / eps_ptr)) / test
    rest_rho = (
        gaussian_shares(epsilon - eps_ptr, delta - delta_ptr, rest, part=1.0 - share)
        if rest
        else ()
    )
    return PTRBudget(test, eps_ptr - test, delta_ptr, rho, threshold, rest_rho)


#: ε·n each median of the private ranges of a fit's unbounded columns gets
#: (:func:`statistics_budget`), within these shares of its ρ. Twice the engine's
#: :data:`~dplong.privacy.budget.stages.MEDIAN_USERS`: a reach's median must also beat the
#: empty cells between a mass at the midpoint and the others (n/5 users ahead of some 2,000
#: cells for RAND HIE's coinsurance: missed in about half the fits at 80, measured).
RANGE_USERS, RANGE_SHARES = 160.0, (0.02, 0.3)
#: Where the medians' miss bound (:func:`~dplong.privacy.ranges.located_miss`) at that cap is
#: above ``RANGE_RAISE[0]`` (and they are not refused), they take up to ``RANGE_RAISE[1]``: a
#: miss withholds the fit, and in those cells (1,000 persons and two or three columns at ε = 1,
#: 545 and two to four at ε = 2) a third of the fits at the cap had a range missed. At 1,000
#: persons, ε = 1, three columns (ε 0.040 → 0.049 a median): `BetweenOLS` released 69 → 88 fits
#: of 100, `PooledOLS` 57 → 59 (its released X'X, with less ρ, withholds more as "unbounded").
#: Raised everywhere, the cap cost the cells whose medians rarely miss (2,000-5,000 persons,
#: four to seven columns: the MSE ratios 4.4 → 4.8, 2.8 → 3.5, 4.0 → 5.8): they keep 0.3.
RANGE_RAISE = (0.05, 0.45)
#: Share of a fit's ρ for the counts of persons beyond the rungs of the private ranges
#: (:func:`dplong.privacy.ranges.private_ranges`) when it has any.
RUNG_COUNT_SHARE = 0.06
#: The counts of persons beyond the ranges' ends (the many a range clips,
#: :func:`dplong.privacy.ranges.private_ranges`) get the ρ that puts their noise sd at
#: ``TAIL_SD √n`` persons, within ``TAIL_COUNT_SHARES`` of the fit's. Clipping m persons by a
#: spread each moves a coefficient by about m / √n SEs, but a long-tailed regressor's persons
#: beyond are clipped by many spreads each: a lognormal income (σ = 0.8, 3,000 persons, 2.6 %
#: beyond the count's rung, out to 22 median reaches) moved `BetweenOLS`'s slope by one to
#: two half-widths, unseen, at an sd of √n / 2 (its count 78 against the bar of some, 80; 8 of
#: 30 intervals missed with no warning at ε = 2, 9 at ε = 4, `PooledOLS` 7 at ε = 4); at
#: 0.3 √n the bar is about √n, the ranges widen, and 2, 1 and 0 of 30 miss unwarned (a normal
#: regressor's intervals 3 % wider at ε = 4). The 2 k counts' L2 sensitivity is √(2 k), so
#: that ρ is ``k / (TAIL_SD² n)``: every fit below ε ≈ 3 at 3,000 persons takes the cap. At the
#: cap, RAND HIE at ε = 1 with three columns (a count's sd 45 persons, √n = 77), a lognormal
#: outcome that leaves 5.9 % of 3,000 persons beyond (176; its slope 7 SEs off) clears it in
#: 10 of 12 fits; at ε = 4 the counts take 2.3 %, at 8 the floor (the statistics' releases
#: lose what they take). A medians' range adds :data:`~dplong.privacy.ranges.FAR_SHARE` of
#: the whole for its widened sides' far counts.
TAIL_SD, TAIL_COUNT_SHARES = 0.3, (0.01, 0.08)
#: Where the medians would be refused (their miss bound above
#: :data:`~dplong.privacy.budget.stages.MAX_MISS`), the ranges come from histograms
#: (:func:`dplong.privacy.ranges.histogram_ranges`) with the share of ρ that sets their threshold at
#: ``HISTOGRAM_USERS[0] n`` persons, within ``HISTOGRAM_SHARES``; beyond ``HISTOGRAM_USERS[1] n``
#: the fit is refused. A cell of doubling width holds 30-45 % of a normal column's persons' extremes
#: at the top of its bulk; at 0.2 n the farthest such cell clears in nearly every fit, at 0.3 in
#: most (at n = 1000, d = 3: 0.15 left the Gram matrix too little and 2 of 30 fits were withheld,
#: 0.25 one; 0.2 none).
HISTOGRAM_USERS, HISTOGRAM_SHARES = (0.2, 0.3), (0.05, 0.4)
#: A side's median reach is that of the persons off the midpoint's cell on that side, and a
#: column's side may hold few of them: a column of integers with a mass at its midpoint (the
#: wage panel's schooling, 130 of 545 men above the 12 years most have), a 0/1 column. Where
#: the medians' bound of a reach's miss (:func:`~dplong.privacy.ranges.reach_miss`) for a side
#: of ``SIDE_SHARE`` of n persons is above ``SIDE_MISS``, histograms of the persons' extremes
#: guard them (:func:`~dplong.privacy.ranges.guarded_ranges`) with ``GUARD_SHARE`` of the
#: medians' share: a column whose medians' range missed, or reached far beyond the
#: histograms', takes theirs
#: (docs/design/ranges.md). The wage panel's `PooledOLS lwage ~ educ + exper + union` at
#: ε = 2 (max_rows=8) released in 6 of 20 fits, 17 guarded; routing such fits to the
#: histograms alone cost the fits whose columns straddle 0. Deviations from each person's
#: mean (:class:`~dplong.models.PanelOLS`) put every person who varies on both sides: the
#: model passes its own share (``side_share``).
SIDE_SHARE, SIDE_MISS, GUARD_SHARE = 0.25, 0.5, 0.2


@dataclass(frozen=True)
class StatisticsBudget:
    """The budget of a release of sufficient statistics: the pure ε of each median of the
    private ranges (0: every column's range is public, or the histograms find them), the ρ of
    their rungs' counts, of the counts beyond their ends (0 too) and of the counts beyond the
    widened sides' rungs (:data:`~dplong.privacy.ranges.FAR_SHARE` of those two; 0 but on the
    medians' route: :func:`~dplong.privacy.ranges.private_ranges`), the ρ of the histograms
    of the ranges where n ε is too small for the medians, or of the histograms that guard
    them (:data:`GUARD_SHARE`; else 0), the ρ of the count of the persons by their rows that
    finds the cap on a person's rows (0: ``max_rows`` stated, or of no effect;
    :mod:`dplong.privacy.row_cap`), the ρ of each Gaussian release of the statistics, and
    the ε the plan splits (public: with n it sets how far the ranges reach,
    :func:`~dplong.privacy.ranges.reach_rungs`)."""

    median_epsilon: float
    count_rho: float
    tail_rho: float
    far_rho: float
    histogram_rho: float
    rows_rho: float
    rho: tuple[float, ...]
    epsilon: float

    def released_rho(self, widened: bool) -> tuple[float, ...]:
        """The ρ of the Gaussian releases of the statistics once the ranges are found: the
        plan's, with the ρ kept for the persons beyond the widened sides (``far_rho``, the
        medians' route's) spread over them in proportion where no side was ``widened`` (a
        released fact), and so not spent: the
        composition's ρ is the same either way, and choosing which release spends it from
        earlier outputs is adaptive composition within a fixed total (a Rényi filter at every
        order: Feldman and Zrnic 2021, "Individual privacy accounting via a Rényi filter").

        Examples
        --------
        >>> from dplong.privacy.budget import statistics_budget
        >>> plan = statistics_budget(5912, 1.0, 5912.0**-2, [0.4, 0.6], located=4)
        >>> bool(abs(sum(plan.released_rho(False)) - sum(plan.rho) - plan.far_rho) < 1e-15)
        True
        >>> plan.released_rho(True) == plan.rho
        True
        """
        if widened or self.far_rho == 0.0:
            return self.rho
        scale = 1.0 + self.far_rho / sum(self.rho)
        return tuple(r * scale for r in self.rho)

    @property
    def histograms_alone(self) -> bool:
        """Whether the histograms find the ranges on their own (n ε too small for the
        medians), rather than guarding the medians or not running at all."""
        return self.median_epsilon == 0.0 and self.histogram_rho > 0.0


def statistics_budget(
    n: int,
    epsilon: float,
    delta: float,
    shares: Sequence[float],
    located: int,
    *,
    rows: bool = False,
    side_share: float = SIDE_SHARE,
) -> StatisticsBudget:
    """Split ``(epsilon, delta)`` between the private ranges of the ``located`` columns
    without public bounds (:mod:`dplong.privacy.ranges`) and Gaussian releases in proportion
    to ``shares``: the total ρ of :func:`gaussian_shares`, of which three medians a column
    are sized as ε-DP calls (``ε²/2``-zCDP) to take what gives each ``ε n =``
    :data:`RANGE_USERS` within :data:`RANGE_SHARES` (or :data:`RANGE_RAISE`), the counts at
    their rungs :data:`RUNG_COUNT_SHARE` and beyond their ends what :data:`TAIL_SD` asks within
    :data:`TAIL_COUNT_SHARES` (on the medians' route, raised to hold
    :data:`~dplong.privacy.ranges.FAR_SHARE` beside), and where a reach's miss bound for a side of
    ``side_share`` of n persons exceeds :data:`SIDE_MISS`, histograms that guard them
    (:data:`GUARD_SHARE` of the medians' share); or, where
    those medians' miss bound exceeds :data:`~dplong.privacy.budget.stages.MAX_MISS`, one
    vector of histograms :data:`HISTOGRAM_USERS` and :data:`HISTOGRAM_SHARES`, and the counts
    beyond their ranges' ends as those beyond the medians'. The medians are the exponential
    mechanism, ``ε²/8``-zCDP (ε-bounded-range: Cesar & Rogers 2021, Lemma 3.2): sized as above
    (their ε, and so the routes and guards, as for ε-DP calls), they cost a quarter of their
    share, and the statistics get the rest. With ``rows`` (the cap on a person's rows is found
    privately), :data:`~dplong.privacy.row_cap.ROW_CAP_SHARE` of the total goes to that first.
    Public facts only.

    Examples
    --------
    >>> from dplong.privacy.budget import statistics_budget
    >>> plan = statistics_budget(5912, 1.0, 5912.0**-2, [0.4, 0.45, 0.15], located=4)
    >>> round(plan.median_epsilon * 5912), plan.histogram_rho, len(plan.rho)
    (160, 0.0, 3)
    >>> small = statistics_budget(1000, 1.0, 1000.0**-2, [1.0], located=4)
    >>> small.median_epsilon, round(small.histogram_rho / 0.0243, 2)   # a share of ρ
    (0.0, 0.15)
    >>> statistics_budget(5912, 1.0, 5912.0**-2, [1.0], located=0).median_epsilon
    0.0
    >>> guarded = statistics_budget(545, 2.0, 545.0**-2, [1.0], located=4)   # the wage panel
    >>> round(guarded.median_epsilon, 3), round(guarded.histogram_rho / sum(guarded.rho), 2)
    (0.077, 0.14)
    """
    (whole,) = gaussian_shares(epsilon, delta, [1.0])
    rows_rho = whole * ROW_CAP_SHARE if rows else 0.0
    total = whole - rows_rho
    if located == 0:
        statistics = tuple(total * s / float(sum(shares)) for s in shares)
        return StatisticsBudget(0.0, 0.0, 0.0, 0.0, 0.0, rows_rho, statistics, epsilon)
    medians = 3 * located
    wanted = medians * (RANGE_USERS / n) ** 2 / 2.0 / total
    share = min(RANGE_SHARES[1], max(RANGE_SHARES[0], wanted))
    median_epsilon = math.sqrt(2.0 * share * total / medians)
    tails = located / (TAIL_SD**2 * n) / total
    tails = min(TAIL_COUNT_SHARES[1], max(TAIL_COUNT_SHARES[0], tails))
    miss = located_miss(n, median_epsilon)
    if miss <= MAX_MISS:
        # a thin side's reach may miss: the histograms guard the medians, from their share
        guarded = reach_miss(side_share * n, median_epsilon) > SIDE_MISS
        if miss > RANGE_RAISE[0]:  # the medians would miss often: they take more
            share = max(share, min(RANGE_RAISE[1], wanted))
        guard = share * GUARD_SHARE if guarded else 0.0
        median_epsilon = math.sqrt(2.0 * (share - guard) * total / medians)
        far = tails * FAR_SHARE / (1.0 - FAR_SHARE)  # the widened sides', beside the first's
        spent = guard + (share - guard) / 4.0  # the medians cost ε²/8 each, not ε²/2
        rest = total * (1.0 - spent - RUNG_COUNT_SHARE - tails - far) / float(sum(shares))
        return StatisticsBudget(
            median_epsilon,
            total * RUNG_COUNT_SHARE,
            total * tails,
            total * far,
            total * guard,
            rows_rho,
            tuple(rest * s for s in shares),
            epsilon,
        )
    # the threshold is inversely proportional to √ρ: the ρ that sets it at the target
    at_one = histogram_threshold(located, 1.0)
    wanted = (at_one / (HISTOGRAM_USERS[0] * n)) ** 2 / total
    share = min(HISTOGRAM_SHARES[1], max(HISTOGRAM_SHARES[0], wanted))
    rest = total * (1.0 - share - tails) / float(sum(shares))
    histograms = total * share
    return StatisticsBudget(
        0.0,
        0.0,
        total * tails,
        0.0,
        histograms,
        rows_rho,
        tuple(rest * s for s in shares),
        epsilon,
    )


#: A random-effects fit's stages (:mod:`dplong.models.random_effects`) when its variance
#: components are not stated: the components' release (a location and two variances, each
#: with its private scale) gets ε·n of ``RE_COMPONENTS_USERS`` users within
#: ``RE_COMPONENTS_SHARES`` of (ε, δ) (basic composition; at n = 2000 it needs ε ≈ 0.45 to
#: plan without a reliability note), the pilot pooled fit whose residuals they are made of
#: ``RE_PILOT_SHARE`` of the rest's Gaussian ρ. Both only set the quasi-demeaning θ, on which
#: the estimate depends to second order; the quasi-demeaned fit gets everything else.
RE_COMPONENTS_USERS, RE_COMPONENTS_SHARES, RE_PILOT_SHARE = 900.0, (0.1, 0.45), 0.4


@dataclass(frozen=True)
class RandomEffectsBudget(StatisticsBudget):
    """The budget of a random-effects fit: the private ranges' (``median_epsilon``,
    ``count_rho``, ``tail_rho``, ``histogram_rho``), the pilot's ρ (0: the components are
    stated), the (ε, δ) of the variance components' release (0, 0 when stated) and its share
    of the fit's, and, as ``rho``, the nominal ρ of the quasi-demeaned fit's releases
    (:func:`remaining_rho` raises it to what is left)."""

    pilot_rho: float
    components_epsilon: float
    components_delta: float
    components_share: float


def random_effects_budget(
    n: int,
    epsilon: float,
    delta: float,
    shares: Sequence[float],
    located: int,
    *,
    stated: bool,
    rows: bool = False,
) -> RandomEffectsBudget:
    """Split ``(epsilon, delta)`` between the stages of a random-effects fit
    (:data:`RE_COMPONENTS_USERS`, :data:`RE_PILOT_SHARE`; the ranges as in
    :func:`statistics_budget`), the final releases' ρ in proportion to ``shares``. With
    ``stated`` variance components there is no pilot and no components' release; with
    ``rows``, the cap on a person's rows is found first (:func:`statistics_budget`). Public
    facts only.

    Examples
    --------
    >>> from dplong.privacy.budget import random_effects_budget
    >>> plan = random_effects_budget(2000, 1.0, 2000.0**-2, [0.3, 0.55, 0.15], 0, stated=False)
    >>> plan.components_epsilon, round(plan.pilot_rho / sum(plan.rho), 6)
    (0.45, 0.666667)
    >>> random_effects_budget(2000, 1.0, 2000.0**-2, [1.0], 0, stated=True).pilot_rho
    0.0
    """
    share = 0.0 if stated else users_share(RE_COMPONENTS_USERS, n, epsilon, *RE_COMPONENTS_SHARES)
    pilot = 0.0 if stated else RE_PILOT_SHARE
    rest = statistics_budget(
        n,
        epsilon * (1.0 - share),
        delta * (1.0 - share),
        [pilot, 1.0 - pilot],
        located,
        rows=rows,
    )
    pilot_rho, final = rest.rho
    total = float(sum(shares))
    return RandomEffectsBudget(
        rest.median_epsilon,
        rest.count_rho,
        rest.tail_rho,
        rest.far_rho,
        rest.histogram_rho,
        rest.rows_rho,
        tuple(final * s / total for s in shares),
        rest.epsilon,
        pilot_rho,
        epsilon * share,
        delta * share,
        share,
    )


def remaining_rho(spent: Sequence[Cost], epsilon: float, delta: float) -> float:
    """The largest ρ of further Gaussian calls that, composed with ``spent``
    (:class:`~dplong.privacy.accounting.Composer`), keeps the total within ``(epsilon,
    delta)``: a last stage calibrated on what the earlier ones cost. Post-processing of the
    ledger (public).

    Examples
    --------
    >>> from dplong.privacy.accounting import Cost, compose
    >>> from dplong.privacy.budget import remaining_rho
    >>> spent = [Cost(epsilon=0.1), Cost(rho=0.002)]
    >>> rho = remaining_rho(spent, 1.0, 1e-6)
    >>> round(compose([*spent, Cost(rho=rho)], 1e-6).epsilon, 6)
    1.0
    """
    composer = Composer(spent, delta)
    return largest_within(lambda rho: composer.add(rho=rho).epsilon, epsilon, epsilon)
