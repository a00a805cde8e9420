"""Private variance plug-ins: the scale ρ_j of each column for the Winsorized mean's radius τ.

Remark 5.3 of the paper: the concentration radius only needs the *marginal* variance proxy of
one user's statistic in each column. This module estimates it privately with the two plug-ins
of §7.1.5 / appendix G, one column at a time:

* ``method="bisection"`` — Algorithm 10 (VarianceBisection) with Algorithms 11 (Coverage) and
  12 (RefineMidpoint);
* ``method="coinpress"`` (default) — Algorithm 13 (AdaptiveCoinPress) with Algorithms 12 and
  14 (RefineVariance), on observations centred at m̂ rather than on differences of pairs,
  which dependence would bias.

Both start from loose public bounds ``σ²_min < σ²_max`` and a rough first moment from a private
wide-bin histogram (Alg 2-3 centrally, Alg 7, 9 locally). Every noisy step is a lattice
mechanism with the exact sensitivity of its statistic under replacing one user; the budget is
split by :func:`~dplong.privacy.budget.plan_budget`. These plug-ins serve ``variant="theory"``
and the local model; the default pipeline estimates the scale in one stage
(:mod:`dplong.privacy.engine`). Sensitivities, iteration counts, outputs, which spread a
dependent sample identifies and the local model are in ``docs/design/variance.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dplong._validation import (
    RandomState,
    as_matrix,
    check_choice,
    check_delta,
    check_epsilon,
    check_fraction,
    check_random_state,
    per_column,
    warn,
)
from dplong.exceptions import (
    InsufficientUsersError,
    ParameterError,
    PrivacyParameterError,
)
from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger
from dplong.privacy.budget import ScalePlan, afford, plan_budget, planned_ledger
from dplong.privacy.interval import (
    central_midpoint,
    check_histogram_feasible,
    local_bins,
    local_midpoint,
)
from dplong.privacy.noise import MIN_LATTICE_EPSILON, LatticeRelease, release_bounded_sum
from dplong.privacy.options import LOCAL_NEEDS_BOUND, PRIVACY_MODELS, ReleaseOptions
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.privacy.winsorized import column_names

__all__ = [
    "DEFAULT_SCALE_BOUNDS",
    "METHODS",
    "ScaleEstimate",
    "check_scale",
    "coinpress_beta",
    "default_iterations",
    "estimate_scale",
]

METHODS = ("coinpress", "bisection")
#: Default public bounds ``(σ²_min, σ²_max)`` on the variance of one user's statistic: a spread
#: between 0.001 and 1000 in the statistic's units. Wide, and therefore costly: N_iter = 40
#: bisection steps. Give your own bounds whenever the units tell you more.
DEFAULT_SCALE_BOUNDS = (1e-6, 1e6)
_STEPS_PER_ITERATION = 2  # Alg 10: Coverage + RefineMidpoint; Alg 13: RefineMidpoint + Variance


def coinpress_beta(gamma: float) -> float:
    """Clipping level β of Algorithm 14, line 1: ``(1 + 2√log(1/γ) + 2 log(1/γ))^{1/2}``.

    A standard Gaussian exceeds β with probability at most γ (Laurent–Massart for χ²₁).

    Examples
    --------
    >>> from dplong.privacy.variance import coinpress_beta
    >>> round(coinpress_beta(0.05), 4)
    3.2331
    """
    log_term = math.log(1.0 / gamma)
    return math.sqrt(1.0 + 2.0 * math.sqrt(log_term) + 2.0 * log_term)


def default_iterations(method: str, n: int, lower: float, upper: float) -> int:
    """Number of iterations N of one column, from public facts only.

    The paper's ``N_iter = ⌈log2(σ²_max / σ²_min)⌉`` (Alg 10, 13 line 1) for the bisection. For
    CoinPress, ``⌈log(σ²_max/σ²_min) / log √n⌉ + 2`` capped at N_iter: Alg 14 line 4 multiplies
    the bound by at least ``√(1/n)`` (z ≥ 0), so this many iterations can cover the range, and
    two more let the estimate settle; more would only thin every step's budget.

    Examples
    --------
    >>> from dplong.privacy.variance import default_iterations
    >>> default_iterations("bisection", 6000, 0.1, 1e4)       # ⌈log2(1e5)⌉
    17
    >>> default_iterations("coinpress", 6000, 0.1, 1e4)       # ⌈11.51 / 4.35⌉ + 2
    5
    >>> default_iterations("coinpress", 6000, 1.0, 3.0)       # capped at ⌈log2(3)⌉
    2
    """
    ratio = upper / lower
    paper = max(1, math.ceil(math.log2(ratio)))
    if method == "bisection":
        return paper
    return min(paper, math.ceil(math.log(ratio) / math.log(math.sqrt(n))) + 2)


@dataclass(frozen=True)
class ScaleEstimate:
    """A private variance proxy per column, and everything public about its release.

    Attributes
    ----------
    scale : ndarray, shape (d,)
        Estimated variance proxy ρ̂_j of one user's statistic (the variance for Gaussian
        data), to pass as ``scale=`` to :func:`dplong.winsorized_mean`.
    midpoint : ndarray, shape (d,)
        The refined private first moment m̂ after the last iteration.
    initial_midpoint : ndarray, shape (d,)
        m̂₀, the centre of the mode of the wide-bin histogram.
    lower, upper : ndarray, shape (d,)
        The public bounds ``σ²_min`` and ``σ²_max``.
    lower_binding, upper_binding : ndarray of bool
        Where the estimate sits at the smallest value the iterations can reach, resp. at
        ``σ²_max``: the true scale may lie beyond, or the bound is wrong. A warning says so.
    failed : ndarray of bool
        Where the central wide-bin histogram reported no bin and m̂₀ fell back to 0 (Alg 3).
    iterations : tuple of int
        Iterations N_j charged per column (two steps each).
    method : str
        ``"coinpress"`` or ``"bisection"``.
    privacy : PrivacyLedger
        One entry per mechanism call and the composed (ε, δ).
    n : int
        Number of users (public).
    names : tuple of str
        Column names, as in the ledger.
    gamma : float
        The γ of the coverage level ``1 - γ`` and of CoinPress's β.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import estimate_scale
    >>> x = np.random.default_rng(0).normal(100.0, 2.0, size=6000)    # true variance 4
    >>> est = estimate_scale(x, epsilon=1.0, scale_bounds=(0.1, 1e4), random_state=1)
    >>> est  # doctest: +ELLIPSIS
    ScaleEstimate(scale=array([4.25...]), method='coinpress', n=6000, epsilon=1, ...)
    >>> est.iterations, est.upper_binding.tolist()
    ((5,), [False])
    """

    scale: NDArray[np.float64]
    midpoint: NDArray[np.float64]
    initial_midpoint: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    lower_binding: NDArray[np.bool_]
    upper_binding: NDArray[np.bool_]
    failed: NDArray[np.bool_]
    iterations: tuple[int, ...]
    method: str
    privacy: PrivacyLedger
    n: int
    names: tuple[str, ...]
    gamma: float

    def __repr__(self) -> str:
        return (
            f"ScaleEstimate(scale={self.scale!r}, method={self.method!r}, n={self.n}, "
            f"epsilon={self.privacy.epsilon:.4g}, delta={self.privacy.delta:.3g}, "
            f"model={self.privacy.model!r})"
        )


def _check_lattice_epsilon(epsilon: float, what: str) -> None:
    """Refuse, before any noise, an ε below what the float-safe lattice noise supports."""
    if epsilon < MIN_LATTICE_EPSILON:
        raise PrivacyParameterError(
            f"{what} is {epsilon:.3g}, below the {MIN_LATTICE_EPSILON:.2g} that float-safe "
            "lattice noise supports; raise epsilon or use fewer columns"
        )


@dataclass(frozen=True)
class _Setup:
    """The validated options and the budget plan of :func:`estimate_scale` (public facts)."""

    method: str
    local: bool
    bounds: NDArray[np.float64] | None
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    gamma: float
    counts: tuple[int, ...]
    plan: ScalePlan
    half_widths: NDArray[np.float64]


def _setup(
    n: int,
    d: int,
    *,
    epsilon: Any,
    delta: Any,
    method: Any,
    privacy: Any,
    bound: Any,
    scale_bounds: Any,
    gamma: Any,
    iterations: Any,
) -> _Setup:
    """Every check of :func:`estimate_scale` before its first noise draw, from n, d and the
    options only (a fit's plan runs them too: :func:`check_scale`)."""
    eps = check_epsilon(epsilon)
    method = check_choice(method, "method", METHODS)
    model = check_choice(privacy, "privacy", PRIVACY_MODELS)
    local = model == "local"
    if local:
        if method == "bisection":
            raise ParameterError(
                'method="bisection" is not available with privacy="local": its stopping rule '
                "compares a noisy coverage with 1 - gamma at every step, and local noise of "
                "order 1/(epsilon' sqrt(n)) makes wrong passes likely, which halve the bound "
                'below the true scale; use method="coinpress"'
            )
        if bound is None:
            raise ParameterError(LOCAL_NEEDS_BOUND)
        total_delta = 0.0 if delta is None else check_delta(delta)
    else:
        if bound is not None:
            raise ParameterError('bound= is only used with privacy="local"')
        total_delta = 1.0 / n**2 if delta is None else check_delta(delta)
    bounds = per_column(bound, d, "bound") if bound is not None else None
    lower, upper = _scale_bounds(scale_bounds, d)
    gam = check_fraction(gamma, "gamma")
    counts = _iterations(iterations, method, n, lower, upper)
    plan = plan_budget(
        n,
        [_STEPS_PER_ITERATION * k for k in counts],
        epsilon=eps,
        delta=total_delta,
        local=local,
    )
    half_widths = np.sqrt(upper) / math.sqrt(2.0)  # wide bins: m̂₀ ± √2σ_max = m̂₀ ± 2h
    _check_lattice_epsilon(plan.step_epsilon, "the epsilon of each iterative step")
    _check_lattice_epsilon(plan.histogram_epsilon, "the epsilon of each histogram")
    if local:
        assert bounds is not None
        for h, b in zip(half_widths, bounds, strict=True):
            local_bins(float(h), float(b))
    else:
        check_histogram_feasible(
            n,
            plan.histogram_epsilon,
            plan.histogram_delta,
            what="wide-bin histogram",
            remedy="tighter scale_bounds (fewer steps, more epsilon for it)",
        )
    return _Setup(method, local, bounds, lower, upper, gam, counts, plan, half_widths)


def check_scale(n: int, d: int, options: ReleaseOptions) -> None:
    """The refusals of :func:`estimate_scale` with its defaults for ``options`` (n users, d
    columns), before any noise: what the paper's pipeline runs first when the scale is not
    stated (:func:`dplong.models.paper_release.paper_scale`). A too-small budget is a budget
    refusal (:func:`dplong.planning.advised` then names the ε that works).

    Examples
    --------
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.privacy.variance import check_scale
    >>> options = ReleaseOptions.check(5000, epsilon=0.5, delta=None, privacy="central",
    ...                                bound=None, d=1, variant="theory")
    >>> check_scale(5000, 1, options)
    >>> check_scale(5000, 1, ReleaseOptions.check(5000, epsilon=1e-6, delta=None,
    ...     privacy="central", bound=None, d=1, variant="theory"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.PrivacyParameterError: the epsilon of each iterative step is ...
    """
    try:
        _setup(
            n,
            d,
            epsilon=options.epsilon,
            delta=options.delta or None,
            method="coinpress",
            privacy=options.privacy,
            bound=options.bound,
            scale_bounds=None,
            gamma=options.gamma,
            iterations=None,
        )
    except (PrivacyParameterError, InsufficientUsersError) as refusal:
        refusal.budget_refusal = True  # n >= 2 and valid options: the budget is too small
        raise


def estimate_scale(
    statistics: ArrayLike,
    *,
    epsilon: float,
    delta: float | None = None,
    method: str = "coinpress",
    privacy: str = "central",
    bound: float | ArrayLike | None = None,
    scale_bounds: tuple[float | ArrayLike, float | ArrayLike] | None = None,
    gamma: float = DEFAULT_GAMMA,
    iterations: int | None = None,
    random_state: RandomState = None,
    rng: RandomState = None,
    names: Sequence[str] | None = None,
    accountant: Accountant | None = None,
) -> ScaleEstimate:
    """Private per-column variance proxy of the users' statistics (Alg 10-14, §7.1.5).

    Parameters
    ----------
    statistics : array_like, shape (n,) or (n, d)
        One row per user (the per-user statistics of a model, e.g. user means). ``NaN`` marks a
        user without a statistic in that column (see the module docstring); ``±inf`` is a
        value like any other, clipped by the steps.
    epsilon : float
        Total privacy budget ε > 0 of this release, over all columns and steps.
    delta : float, optional
        Total δ ∈ (0, 1). Central default ``1/n**2``; local default ``None`` (pure ε-LDP; a δ
        is then only used as slack for advanced composition).
    method : {"coinpress", "bisection"}
        Algorithm 13 (default) or Algorithm 10. The bisection is central only.
    privacy : {"central", "local"}
        Trusted curator, or each user privatising their own reports (needs ``bound``).
    bound : float or array_like, optional
        Local model only: public bound B on every user's statistic, ``|x_u| <= B``, per
        column, the range of the randomized-response histogram (Alg 9).
    scale_bounds : (float or array_like, float or array_like), optional
        Public bounds ``(σ²_min, σ²_max)`` on the variance of one user's statistic, scalars or
        one per column, ``0 < σ²_min < σ²_max``. Default :data:`DEFAULT_SCALE_BOUNDS`. Loose
        bounds are fine but cost iterations: ``⌈log2(σ²_max/σ²_min)⌉`` for the bisection.
    gamma : float
        The coverage level is ``1 - γ`` (Alg 10) and β of Alg 14 is set from γ.
    iterations : int, optional
        Iterations per column (two noisy steps each); default :func:`default_iterations`.
    random_state, rng : None, int or numpy.random.Generator
        ``None`` (fresh OS entropy) for a release; a seed only for reproducible research.
        ``rng`` is numpy's SPEC 7 name for the same argument: give at most one of the two.
    names : sequence of str, optional
        Column names for the ledger.
    accountant : Accountant, optional
        Budget to charge; the release is refused before any noise if it does not fit.

    Returns
    -------
    ScaleEstimate

    Raises
    ------
    ParameterError
        Bad options: unknown method or model, inverted or non-finite ``scale_bounds``, a
        ``bound`` in the central model, the bisection in the local model.
    PrivacyParameterError
        Bad ε or δ, or a per-step ε too small for float-safe lattice noise.
    InsufficientUsersError
        Fewer than 2 users, or too few for the wide-bin histogram to ever report a bin.
    DataError
        Statistics that are not numeric, or empty. Odd values are data, not refused (a refusal
        would depend on the rows): a column with no value at all is estimated like any other,
        its histogram finding no bin (warned).

    Warns
    -----
    DplongWarning
        When an estimate sits at either bound, or the central histogram found no bin.

    Examples
    --------
    The setting of the paper's Fig. 5: 6,000 users, mean 100, variance 1, bounds (0.1, 10⁴).

    >>> import numpy as np
    >>> from dplong.privacy import estimate_scale
    >>> x = np.random.default_rng(0).normal(100.0, 1.0, size=(6000, 2))
    >>> est = estimate_scale(x, epsilon=1.0, scale_bounds=(0.1, 1e4), names=["a", "b"],
    ...                      random_state=1)
    >>> bool(np.all((1.0 <= est.scale) & (est.scale < 2.0)))         # conservative
    True
    >>> round(est.privacy.epsilon, 9), est.privacy.delta <= 1 / 6000**2
    (1.0, True)

    The bisection returns a power-of-two fraction of the upper bound:

    >>> est = estimate_scale(x[:, 0], epsilon=1.0, method="bisection",
    ...                      scale_bounds=(0.1, 1e4), random_state=2)
    >>> est.scale.tolist(), est.iterations
    ([1.220703125], (17,))

    The estimate plugs into the Winsorized mean, whose ε is charged on top:

    >>> import dplong
    >>> res = dplong.winsorized_mean(x[:, 0], epsilon=1.0, scale=est.scale, random_state=3)
    >>> bool(abs(res.params["x"] - 100.0) < 0.1)
    True
    """
    rng = check_random_state(random_state, rng)
    matrix = as_matrix(statistics, "statistics")  # NaN: no statistic; ±inf: clipped like any
    n, d = matrix.shape
    if n < 2:
        raise InsufficientUsersError(f"a private scale needs at least 2 users, got n={n}")
    setup = _setup(
        n,
        d,
        epsilon=epsilon,
        delta=delta,
        method=method,
        privacy=privacy,
        bound=bound,
        scale_bounds=scale_bounds,
        gamma=gamma,
        iterations=iterations,
    )
    method, local, bounds, plan = setup.method, setup.local, setup.bounds, setup.plan
    lower, upper, gam, counts = setup.lower, setup.upper, setup.gamma, setup.counts
    half_widths = setup.half_widths
    labels = column_names(names, d)
    _warn_unreliable(method, n, plan.step_epsilon, gam, local)
    afford(accountant, plan.total_epsilon, plan.total_delta)

    # ---- no randomness was drawn above this line -------------------------------------------
    entries: list[LedgerEntry] = []
    start = np.zeros(d)
    failed = np.zeros(d, dtype=bool)
    for j, name in enumerate(labels):  # the wide-bin histograms (Alg 2-3 / 7, 9)
        if local:
            assert bounds is not None
            start[j] = local_midpoint(
                matrix[:, j], float(half_widths[j]), float(bounds[j]), plan.histogram_epsilon, rng
            )
        else:
            start[j], failed[j] = central_midpoint(
                matrix[:, j],
                float(half_widths[j]),
                plan.histogram_epsilon,
                plan.histogram_delta,
                rng,
            )
        entries.append(_histogram_entry(name, plan, n, local))

    scale, midpoint = np.empty(d), np.empty(d)
    lower_binding, upper_binding = np.zeros(d, dtype=bool), np.zeros(d, dtype=bool)
    run = _bisection if method == "bisection" else _coinpress
    for j, name in enumerate(labels):
        column = _Column(matrix[:, j], name, plan.step_epsilon, gam, rng, local, entries)
        outcome = run(column, float(start[j]), float(lower[j]), float(upper[j]), counts[j])
        scale[j], midpoint[j], lower_binding[j], upper_binding[j] = outcome

    composition = plan.composition
    steps_run, steps_charged = len(entries) - d, sum(plan.step_counts)
    if steps_run < steps_charged:  # the bisection stopped early: a function of its output
        composition += (
            f"; all {steps_charged} steps are charged, {steps_run} ran (the bisection stops "
            "where its coverage test fails, which depends on the data)"
        )
    ledger = planned_ledger(
        accountant,
        entries,
        epsilon=plan.total_epsilon,
        delta=plan.total_delta,
        composition=composition,
        model="local" if local else "central",
    )
    _warn_flags(labels, lower_binding, upper_binding, failed)
    return ScaleEstimate(
        scale=scale,
        midpoint=midpoint,
        initial_midpoint=start,
        lower=lower,
        upper=upper,
        lower_binding=lower_binding,
        upper_binding=upper_binding,
        failed=failed,
        iterations=counts,
        method=method,
        privacy=ledger,
        n=n,
        names=labels,
        gamma=gam,
    )


# ---- validation ---------------------------------------------------------------------------


def _scale_bounds(scale_bounds: Any, d: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    if scale_bounds is None:
        scale_bounds = DEFAULT_SCALE_BOUNDS
    try:
        low, high = scale_bounds
    except (TypeError, ValueError):
        raise ParameterError(
            f"scale_bounds must be a pair (lower, upper) of variance bounds, got {scale_bounds!r}"
        ) from None
    lower = per_column(low, d, "scale_bounds[0] (the lower variance bound)")
    upper = per_column(high, d, "scale_bounds[1] (the upper variance bound)")
    if not np.all(lower < upper):
        raise ParameterError(
            "scale_bounds must satisfy lower < upper in every column, got "
            f"lower={lower.tolist()} and upper={upper.tolist()}; the bounds look inverted"
        )
    if not np.all(np.isfinite(np.log2(upper / lower))):  # pragma: no cover - overflow guard
        raise ParameterError("scale_bounds span too many orders of magnitude")
    return lower, upper


def _iterations(
    iterations: Any, method: str, n: int, lower: NDArray[np.float64], upper: NDArray[np.float64]
) -> tuple[int, ...]:
    if iterations is None:
        return tuple(
            default_iterations(method, n, float(lo), float(hi))
            for lo, hi in zip(lower, upper, strict=True)
        )
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)):
        raise ParameterError(f"iterations must be a positive integer or None, got {iterations!r}")
    if iterations < 1:
        raise ParameterError(f"iterations must be a positive integer or None, got {iterations!r}")
    return tuple(int(iterations) for _ in range(lower.shape[0]))


#: Above this noise sd of one step's statistic, relative to what it measures (CoinPress: the
#: scaled second moment, ~1 near convergence; bisection: the coverage margin γ), the steps
#: decide at random, per method: at the bars about 1 % of scales come out more than 10 times
#: the true one, and at 1.5 times them 10-40 % (docs/design/variance.md, "When the steps
#: decide at random").
UNRELIABLE_NOISE = {"coinpress": 0.4, "bisection": 0.2}


def _warn_unreliable(method: str, n: int, step_epsilon: float, gamma: float, local: bool) -> None:
    """Warn, from public facts, when each step's noise swamps what it measures."""
    spread = math.sqrt(2.0) / (step_epsilon * (math.sqrt(n) if local else n))  # Laplace sd
    noise = spread * (coinpress_beta(gamma) ** 2 if method == "coinpress" else 1.0 / gamma)
    if noise > UNRELIABLE_NOISE[method]:
        warn(
            f"the private scale will be unreliable: with n={n} users each of its steps gets "
            f"epsilon={step_epsilon:.3g}, too little to measure the spread (relative noise "
            f"{noise:.2f}). Give tighter scale_bounds (fewer steps), a larger scale_share or "
            "epsilon, or state the scale."
        )


# ---- the noisy steps ----------------------------------------------------------------------


@dataclass
class _Column:
    """One column's values and what every step of it needs (mutable: collects the entries)."""

    values: NDArray[np.float64]
    name: str
    epsilon: float
    gamma: float
    rng: np.random.Generator
    local: bool
    entries: list[LedgerEntry]

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    def release(
        self, centred: NDArray[np.float64], radius: float, mechanism: str, target: str
    ) -> tuple[float, float]:
        """Lattice release of the mean of ``centred`` (``|centred| <= radius``); log the step.

        Returns the private mean and the exact standard deviation of its noise.
        """
        release: LatticeRelease = release_bounded_sum(
            centred[:, None],
            np.array([radius]),
            np.array([self.epsilon]),
            self.rng,
            local=self.local,
        )
        sd = math.sqrt(release.draws) * float(release.sd[0]) / self.n
        scale = release.scale if self.local else release.scale / self.n
        sensitivity = release.sensitivity if self.local else release.sensitivity / self.n
        self.entries.append(
            LedgerEntry(
                "scale",
                ("local " if self.local else "") + mechanism,
                f"{self.name}: {target}",
                self.epsilon,
                0.0,
                0.0,
                float(sensitivity[0]),
                float(scale[0]),
            )
        )
        return float(release.total[0]) / self.n, sd

    def coverage(self, sigma: float, centre: float, t: int) -> float:
        """Algorithm 11: private share of users in ``centre ± √2σ`` (sensitivity 1/n)."""
        half_width = math.sqrt(2.0) * sigma  # line 1
        with np.errstate(invalid="ignore"):
            outside = np.abs(self.values - centre) > half_width  # NaN: at the centre, inside
        bits = np.where(outside, -0.5, 0.5)  # centred indicator, radius 1/2
        share, _ = self.release(bits, 0.5, "lattice Laplace coverage (Alg 11)", f"coverage {t}")
        return 0.5 + share

    def refine_midpoint(self, sigma: float, centre: float, t: int) -> float:
        """Algorithm 12: mean of the values projected onto ``centre ± √2σ`` (sens. 2√2σ/n)."""
        half_width = math.sqrt(2.0) * sigma  # line 1
        with np.errstate(invalid="ignore"):
            offsets = np.clip(self.values - centre, -half_width, half_width)
        offsets = np.where(np.isnan(offsets), 0.0, offsets)  # no statistic: the centre
        shift, _ = self.release(
            offsets, half_width, "lattice Laplace (Alg 12)", f"midpoint refinement {t}"
        )
        return centre + shift

    def refine_variance(self, sigma: float, centre: float, t: int) -> tuple[float, float]:
        """Algorithm 14, lines 1-3: ``z = 0 ∨ (mean of clip((x - m̂)/σ, ±β)² + noise)``.

        Sensitivity β²/n (a value in ``[0, β²]``). Returns z and the sd of its noise.
        """
        beta = coinpress_beta(self.gamma)  # line 1
        half = beta * beta / 2.0
        with np.errstate(invalid="ignore"):
            w = np.clip((self.values - centre) / sigma, -beta, beta)  # line 2
        w = np.where(np.isnan(w), 0.0, w)  # no statistic: the centre
        centred = np.clip(w * w - half, -half, half)  # w² ∈ [0, β²] around β²/2
        second, sd = self.release(
            centred, half, "lattice Laplace, second moment (Alg 14)", f"variance {t}"
        )
        return max(0.0, half + second), sd  # line 3


def _bisection(
    column: _Column, start: float, lower: float, upper: float, iterations: int
) -> tuple[float, float, bool, bool]:
    """Algorithm 10 on one column; returns (ρ̂, m̂, lower binding, upper binding)."""
    variance, centre = upper, start
    for t in range(iterations):  # at most N_iter halvings: then the lower bound is reached
        if column.coverage(math.sqrt(variance), centre, t) < 1.0 - column.gamma:  # line 3
            # line 6: the first σ² whose interval covered too few users
            return variance, centre, False, t == 0
        centre = column.refine_midpoint(math.sqrt(variance), centre, t)  # line 4
        variance = variance / 2.0  # line 5
    return max(variance, lower), centre, True, False


def _coinpress(
    column: _Column, start: float, lower: float, upper: float, iterations: int
) -> tuple[float, float, bool, bool]:
    """Algorithm 13 on one column; returns (ρ̂, m̂, lower binding, upper binding).

    ``point`` is the paper's σ²_max (the current estimate z σ², which sets the width of the
    midpoint's interval) and ``bound`` its σ² (the upper bound that scales w). Both stay in
    ``[σ²_min, σ²_max]``: public bounds, so clamping is post-processing. The result is the
    last bound of line 4 plus a ``1 - γ/2`` one-sided margin for the noise in the last z
    (``sd · log(1/γ)/√2``: exactly that quantile for Laplace noise, beyond it for the near-
    Gaussian sum of the local model).
    """
    n = column.n
    statistical = math.sqrt(1.0 / n) + 1.0 / (2.0 * n)  # Alg 14 line 4
    point, bound, centre = upper, upper, start  # Alg 13 line 3
    estimate = upper
    for t in range(iterations):  # Alg 13 line 4
        centre = column.refine_midpoint(math.sqrt(point), centre, t)  # line 5
        z, sd = column.refine_variance(math.sqrt(bound), centre, t)  # line 6
        margin = sd * math.log(1.0 / column.gamma) / math.sqrt(2.0)
        estimate = bound * (z + statistical + margin)
        point = min(max(z * bound, lower), upper)  # Alg 14 line 5
        bound = min(max(bound * (z + statistical), lower), upper)  # Alg 14 line 4
    scale = min(max(estimate, lower), upper)
    return scale, centre, estimate <= lower, estimate >= upper


# ---- ledger and warnings ------------------------------------------------------------------


def _histogram_entry(name: str, plan: ScalePlan, n: int, local: bool) -> LedgerEntry:
    eps = plan.histogram_epsilon
    if local:
        mechanism = "randomized-response histogram (Alg 7, 9)"
        return LedgerEntry(
            "scale", mechanism, f"{name}: wide-bin midpoint", eps, 0.0, 0.0, 2.0, math.nan
        )
    return LedgerEntry(
        "scale",
        "stable histogram (Alg 2, 3)",
        f"{name}: wide-bin midpoint",
        eps,
        plan.histogram_delta,
        0.0,
        2.0 / n,
        2.0 / (eps * n),
    )


def _warn_flags(
    names: tuple[str, ...],
    lower_binding: NDArray[np.bool_],
    upper_binding: NDArray[np.bool_],
    failed: NDArray[np.bool_],
) -> None:
    """Warn about flags; they are functions of private outputs and public bounds only."""

    def columns(mask: NDArray[np.bool_]) -> str:
        return ", ".join(repr(names[j]) for j in np.flatnonzero(mask))

    if failed.any():
        warn(
            f"the wide-bin histogram found no bin in column(s) {columns(failed)}; the first "
            "moment started from 0 (Alg 3). Raise epsilon, or give a larger upper scale bound."
        )
    if upper_binding.any():
        warn(
            f"the scale estimate of column(s) {columns(upper_binding)} sits at the upper bound "
            "of scale_bounds: the bound binds, so the true scale may be larger (or the data "
            "are not centred where the histogram found them). Raise the upper bound or epsilon."
        )
    if lower_binding.any():
        warn(
            f"the scale estimate of column(s) {columns(lower_binding)} sits at the lowest "
            "value the iterations reach: the lower bound of scale_bounds (or iterations=) "
            "binds, so the true scale may be smaller. The estimate errs on the large side."
        )
