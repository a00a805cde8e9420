"""Efficient Propose-Test-Release (ePTR): one release of an estimator whose global sensitivity
is unbounded but whose local sensitivity is small on a testable set.

The seed is Shen, Tong & Wang (2026), *Efficient Propose-Test-Release for Optimal
Differentially Private Estimation* (``papers/eptr.txt``). Its Algorithm 2 releases an estimate
θ̂ given an α-safety lower bound γ (Def 2.1: γ is 1-Lipschitz in the Hamming distance, and
γ(X) > 0 implies that every neighbour's θ̂ is within α of θ̂(X)):

1. a coin ``I ~ Bernoulli(sigmoid(ε_t (γ - M)))``, ``M = 1 + (2/ε) log(max(1/δ, 1/ε))``;
2. if ``I = 1`` the estimate plus Gaussian noise calibrated to the L2 sensitivity α, else ⊥.

Theorem 2.2: the pair is (ε, δ)-DP (the split of ε and δ and the argument are in
:func:`~dplong.privacy.budget.ptr_budget`). **The outcome of the test — released or ⊥ — is
itself a DP output**: both are recorded in the ledger (the test as a pure-ε entry whose target
says which way it went, the release as an approximate (ε, δ) entry that is spent either way).

Two instances, the unit of privacy being a **user** (all of a user's rows):

* :func:`ols_ptr` — Algorithm 4 (ePTR-OLS) with a person's whole block of rows as the unit;
* :func:`nadaraya_watson_ptr` — Algorithm 5 (ePTR-NW) on a whole grid with one test and one
  Gaussian vector, item-level (a unit is one row).

Differences from the seed, each a sharper but still valid constant, argued where it is used:
the test's Lipschitz constant is a user's largest change of a PSD statistic (not twice it:
Weyl's inequality on a PSD difference, eq. (17) and (20)); the release is an exact discrete
Gaussian calibrated in zCDP and converted exactly (CKS 2020, Prop. 12) instead of Alg 2's
classical ``2α √(2 log(1.25/δ)) / ε`` (which the classical proof covers only for ε/2 <= 1);
and the float error of every computed statistic is bounded from public facts and counted, so
that the test's soundness and the release's sensitivity hold for the floats actually computed.

Floating point. The coin is drawn exactly (:func:`~dplong.privacy.coins.logistic_coin`) with
its log-odds computed from ``ε_t (1 - 2**-30)``: the few-ulp error of ``γ - M`` (at most
``~1e-14`` where the coin is not certain) stays inside the ε_t slack for ε_t >= 1e-5. The
estimate is rounded to a public lattice and given exact discrete Gaussian noise
(:func:`~dplong.privacy.noise.release_gaussian_vector`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import user_row_sums
from dplong._validation import real_number
from dplong.exceptions import ParameterError
from dplong.kernels import Kernel
from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import PTRBudget
from dplong.privacy.coins import logistic_coin
from dplong.privacy.noise import release_gaussian_vector

__all__ = [
    "PTRRelease",
    "check_nadaraya_watson_ptr",
    "check_ols_ptr",
    "eptr",
    "kernel_reach",
    "nadaraya_watson_ptr",
    "nadaraya_watson_sensitivity",
    "ols_ptr",
    "ols_ptr_of_sums",
    "ols_ptr_sensitivity",
    "planned_noise_sd",
]

_U = 2.0**-53
#: The coin's ε is taken this much below ε_t to absorb the float error of its log-odds.
_COIN_SLACK = 2.0**-30
#: Relative slack on a user's bound for the float error of their own sums (rows beyond
#: ~10**6 a user would need more).
_USER_SLACK = 1e-9


@dataclass(frozen=True)
class PTRRelease:
    """What one ePTR released: the noisy estimate, or ⊥ (``estimate is None``: the test
    refused), and the public facts of its noise.

    Attributes
    ----------
    estimate : ndarray or None
        θ̂ plus discrete Gaussian noise, or None for ⊥ (the test's outcome is a DP output).
    sensitivity : float
        The L2 sensitivity α the noise is calibrated to, float error and rounding included.
    noise_sd : float
        The exact sd of the noise in each coordinate (NaN after ⊥: nothing was drawn).
    entries : tuple of LedgerEntry
        The test (pure ε) and the release (approximate (ε, δ)), recorded whatever the outcome.

    Examples
    --------
    >>> from dplong.privacy.ptr import PTRRelease
    >>> list(PTRRelease.__dataclass_fields__)
    ['estimate', 'sensitivity', 'noise_sd', 'entries']
    """

    estimate: NDArray[np.float64] | None
    sensitivity: float
    noise_sd: float
    entries: tuple[LedgerEntry, ...]

    @property
    def released(self) -> bool:
        """Whether the test passed (a DP output)."""
        return self.estimate is not None


def eptr(
    estimate: NDArray[np.float64],
    margin: float,
    sensitivity: float,
    float_error: float,
    bound: float,
    budget: PTRBudget,
    rng: np.random.Generator,
    *,
    target: str,
    test: str,
) -> PTRRelease:
    """Algorithm 2 (ePTR): test the safety margin γ, then release ``estimate`` or ⊥.

    ``margin`` must be an α-SaLBo (Def 2.1) for ``sensitivity`` α: 1-Lipschitz between
    neighbours, and positive only where every neighbour's exact estimate is within α. The
    float ``estimate`` differs from the exact one by at most ``float_error / 2`` (L2) and is
    at most ``bound`` in every coordinate. Privacy: (ε_t + ε_r, δ)-DP
    (:func:`~dplong.privacy.budget.ptr_budget`).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import ptr_budget
    >>> from dplong.privacy.ptr import eptr
    >>> theta = np.array([0.5, -0.25])
    >>> safe = eptr(theta, 1e6, 0.01, 0.0, 1.0, ptr_budget(1.0, 1e-6),
    ...             np.random.default_rng(0), target="θ", test="a margin")
    >>> safe.released, [e.stage for e in safe.entries]
    (True, ['ptr test', 'ptr release'])
    >>> unsafe = eptr(theta, 0.0, 0.01, 0.0, 1.0, ptr_budget(1.0, 1e-6),
    ...               np.random.default_rng(0), target="θ", test="a margin")
    >>> unsafe.estimate is None, unsafe.entries[0].target      # γ = 0: ⊥ but with prob <= δ
    (True, 'θ: refused (⊥)')
    """
    # Alg 2, lines 3-5: the coin's log-odds ε_t (γ - M), exactly drawn
    log_odds = budget.test_epsilon * (1.0 - _COIN_SLACK) * (margin - budget.threshold)
    passed = logistic_coin(rng, log_odds)
    outcome = "released" if passed else "refused (⊥)"
    values: NDArray[np.float64] | None = None
    alpha, sd = sensitivity + float_error, math.nan
    if passed:  # Alg 2, line 7: the Gaussian release given the test
        noisy = release_gaussian_vector(
            estimate, sensitivity, float_error, bound, budget.release_rho, rng
        )
        values, alpha, sd = noisy.total, float(noisy.sensitivity), float(noisy.sd[0])
    entries = (
        LedgerEntry(
            "ptr test",
            f"ePTR test coin on {test} (Alg 2, exact Bernoulli)",
            f"{target}: {outcome}",
            budget.test_epsilon,
            0.0,
            0.0,
            1.0,  # γ is 1-Lipschitz: the coin's log-odds move by at most ε_t
            math.nan,
        ),
        LedgerEntry(
            "ptr release",
            "discrete Gaussian given the test (Alg 2; CKS 2020)",
            target,
            budget.release_epsilon,
            budget.delta,
            0.0,
            alpha,
            sd,
        ),
    )
    return PTRRelease(values, alpha, sd, entries)


# ---- Algorithm 4, user-level ------------------------------------------------------------------


def check_ols_ptr(
    n: int, p: int, cap: int, floor: Any, coef_bound: Any, budget: PTRBudget
) -> tuple[float, float, tuple[str, ...]]:
    """The floor c₀ and the radius R_θ (default 1) of :func:`ols_ptr` checked, and its notes,
    from public facts before any noise: c₀ is required and must lie in (0, cap) (``λ_min <=
    tr / p <= n cap``: beyond, the margin is never positive); a note where the margin cannot
    reach ``2M``, the level that releases almost surely.

    Examples
    --------
    >>> from dplong.privacy.budget import ptr_budget
    >>> from dplong.privacy.ptr import check_ols_ptr
    >>> check_ols_ptr(5000, 4, 5, 0.5, 1.0, ptr_budget(1.0, 1e-8))
    (0.5, 1.0, ())
    >>> check_ols_ptr(50, 4, 5, 0.5, 1.0, ptr_budget(1.0, 1e-8))[2]  # doctest: +ELLIPSIS
    ('The ePTR test cannot pass reliably here ...',)
    """
    if floor is None:
        raise ParameterError(
            'method="ptr" needs ptr_floor, a public lower bound on λ_min(X\'X) / n of the '
            "scaled design (the floor c₀ of the seed's Alg 4)"
        )
    floor = real_number(floor, "ptr_floor", expected="a positive number")
    coef_bound = real_number(
        1.0 if coef_bound is None else coef_bound, "coef_bound", expected="a positive number"
    )
    if not (math.isfinite(floor) and floor > 0 and math.isfinite(coef_bound) and coef_bound > 0):
        raise ParameterError(
            f"ptr_floor and coef_bound must be positive numbers, got {floor!r}, {coef_bound!r}"
        )
    if not floor < cap:
        raise ParameterError(
            f"ptr_floor must be below max_rows={cap} (λ_min(X'X) / n of the scaled design is at "
            f"most max_rows), got {floor!r}"
        )
    if _solve_error(n, p, cap) > floor * n / 2.0:
        raise ParameterError("too many persons for a float-safe solve at this ptr_floor")
    lipschitz = cap * p * (1.0 + _USER_SLACK)
    largest = (n * cap - floor * n - lipschitz) / lipschitz  # γ at λ_min = n cap (its largest)
    notes: tuple[str, ...] = ()
    if largest < 2.0 * budget.threshold:
        notes = (
            "The ePTR test cannot pass reliably here (n too small for the floor and the row "
            "cap): expect ⊥ (withheld) in many fits; raise epsilon or n, lower max_rows.",
        )
    return floor, coef_bound, notes


def ols_ptr(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    cap: int,
    budget: PTRBudget,
    rng: np.random.Generator,
    *,
    floor: float,
    coef_bound: float,
) -> PTRRelease:
    """User-level ePTR-OLS (Alg 4 with a person's whole block of rows as the unit).

    ``x`` (rows x p) and ``y`` are clipped and scaled so that every value lies in [-1, 1]
    (public bounds), rows sorted by person (``codes``); a person's rows are weighted
    ``w_u = min(1, cap / T_u)`` so that their weights sum to at most ``cap`` (``max_rows``).
    Then ``R_x = √p``, ``|y| <= 1``, and with ``G_u = Σ_t w_u x x'``, ``b_u = Σ_t w_u x y``:
    ``G_u`` is PSD with ``‖G_u‖ <= tr G_u <= cap p`` and ``‖b_u‖ <= cap √p``.

    **Test statistic** (eq. 18, user-level): ``γ = (λ_min(G) - c₀ n - D)₊ / D`` with
    ``D = cap p``. Replacing a person changes ``G`` by ``G_u' - G_u`` with ``-G_u ⪯ G_u' - G_u
    ⪯ G_u'``, so λ_min moves by at most ``max(‖G_u‖, ‖G_u'‖) <= D`` (Weyl; the seed's eq. (17)
    has 2 R_x² per row, a bound for any difference, not only PSD ones): γ is 1-Lipschitz, and
    γ > 0 implies ``λ_min >= c₀ n`` on every neighbour.

    **Sensitivity of θ̂ = Π_{R_θ}(G⁻¹ b) under the margin** (eq. 16, user-level). With
    ``G' (θ̂ - θ̂') = (G' - G) θ̂ + (b - b')`` and the mirror identity,
    ``‖θ̂ - θ̂'‖ <= (D m + 2 cap √p) / (c₀ n)`` with m the smaller of the two norms. If
    ``m <= R_θ`` the projection (1-Lipschitz) keeps this; if both lie beyond ``R_θ`` the radial
    projection contracts by ``R_θ / m`` (``‖a/|a| - b/|b|‖ <= ‖a - b‖ / √(|a||b|)``). Either way
    ``α = cap (p R_θ + 2 √p) / (c₀ n)`` (the seed's ``4 R_x² R_θ / (c₀ n)`` per row, with
    ``R_y = R_x R_θ``, is 4 T p R_θ / (c₀ n) here).

    Privacy: (ε, δ)-DP under replacing one person (Thm 4.1 via Thm 2.2), whatever the data.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import ptr_budget
    >>> from dplong.privacy.ptr import ols_ptr
    >>> rng = np.random.default_rng(0)
    >>> people, years = 2000, 4
    >>> x = np.column_stack([np.ones(people * years), rng.uniform(-1, 1, people * years)])
    >>> y = np.clip(0.2 + 0.5 * x[:, 1] + rng.normal(0, 0.1, people * years), -1, 1)
    >>> codes = np.repeat(np.arange(people), years)
    >>> exact = ols_ptr(x, y, codes, people, years, ptr_budget(1e300, 0.5),
    ...                 np.random.default_rng(1), floor=0.5, coef_bound=2.0)
    >>> reference = np.linalg.lstsq(x, y, rcond=None)[0]
    >>> bool(np.allclose(exact.estimate, reference, atol=1e-10))                # noise off
    True
    >>> noisy = ols_ptr(x, y, codes, people, years, ptr_budget(1.0, 1e-7),
    ...                 np.random.default_rng(1), floor=0.5, coef_bound=2.0)
    >>> noisy.released, bool(np.all(np.abs(noisy.estimate - reference) < 6 * noisy.noise_sd))
    (True, True)
    """
    p = x.shape[1]
    rows = np.bincount(codes, minlength=n).astype(np.float64)
    weight = np.minimum(1.0, cap / np.maximum(rows, 1.0))[codes]
    gram_u = user_row_sums(
        (weight[:, None, None] * x[:, :, None] * x[:, None, :]).reshape(-1, p * p), codes, n
    ).reshape(n, p, p)
    cross_u = user_row_sums(x * (weight * y)[:, None], codes, n)
    return ols_ptr_of_sums(gram_u, cross_u, cap, budget, rng, floor=floor, coef_bound=coef_bound)


def ols_ptr_of_sums(
    gram_u: NDArray[np.float64],
    cross_u: NDArray[np.float64],
    cap: int,
    budget: PTRBudget,
    rng: np.random.Generator,
    *,
    floor: float,
    coef_bound: float,
) -> PTRRelease:
    """:func:`ols_ptr` from each of n persons' weighted sums of its rows, ``G_u = Σ_t w_u x
    x'`` (n x p x p) and ``b_u = Σ_t w_u x y`` (n x p): all that the release reads of the rows
    (so a Dask frame's persons' sums serve, :mod:`dplong.models.pooled.dask_rows`).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import ptr_budget
    >>> from dplong.privacy.ptr import ols_ptr_of_sums
    >>> gram_u = np.tile(np.eye(2), (1000, 1, 1)) * 4.0        # 1,000 persons of 4 rows
    >>> cross_u = np.tile([0.8, 0.4], (1000, 1))
    >>> release = ols_ptr_of_sums(gram_u, cross_u, 4, ptr_budget(1e300, 0.5),
    ...                           np.random.default_rng(0), floor=0.5, coef_bound=1.0)
    >>> release.estimate.round(6).tolist()
    [0.2, 0.1]
    """
    n, p = cross_u.shape
    # a person's bound holds for their float sums up to _USER_SLACK: enforce it exactly
    trace = np.trace(gram_u, axis1=1, axis2=2)
    shrink = np.minimum(1.0, cap * p / np.maximum(trace, 1e-300))
    gram = np.einsum("u,uij->ij", shrink, gram_u)
    cross = shrink @ cross_u
    lipschitz = cap * p * (1.0 + _USER_SLACK)
    lam_error = _eigen_error(n, p, cap)
    smallest = float(np.linalg.eigvalsh(gram)[0])
    # eq. (18), user-level, with the float error of λ_min counted on both sides (soundness:
    # γ > 0 ⇒ exact λ_min > c₀ n + D; Lipschitz: the errors move γ by at most 2 E / (D + 2E))
    margin = max(smallest - lam_error - floor * n - lipschitz, 0.0) / (lipschitz + 2.0 * lam_error)
    theta = _project(_solve(gram, cross), coef_bound)
    alpha = ols_ptr_sensitivity(n, p, cap, floor, coef_bound)
    float_error = 2.0 * _theta_error(n, p, cap, floor, coef_bound)
    return eptr(
        theta,
        margin,
        alpha,
        float_error,
        coef_bound * (1.0 + 4.0 * _U),
        budget,
        rng,
        target="pooled OLS coefficients (scaled)",
        test="λ_min(X'X) (eq. 18, a person's rows)",
    )


def ols_ptr_sensitivity(n: int, p: int, cap: int, floor: float, coef_bound: float) -> float:
    """The L2 sensitivity α of :func:`ols_ptr`'s scaled coefficients given the test passed:
    ``cap (p R_θ + 2 √p) / (c₀ n)`` (its docstring), public.

    Examples
    --------
    >>> from dplong.privacy.ptr import ols_ptr_sensitivity
    >>> round(ols_ptr_sensitivity(1000, 4, 5, 0.5, 1.0), 6)               # 5 · 8 / 500
    0.08
    """
    return cap * (1.0 + _USER_SLACK) * (p * coef_bound + 2.0 * math.sqrt(p)) / (floor * n)


def planned_noise_sd(sensitivity: float, budget: PTRBudget) -> float:
    """The sd of an ePTR release's noise per coordinate, from public facts: its sensitivity
    and the release's ρ (the lattice's rounding and float error, a few ulps, left out).

    Examples
    --------
    >>> from dplong.privacy.budget import ptr_budget
    >>> from dplong.privacy.ptr import planned_noise_sd
    >>> planned_noise_sd(0.1, ptr_budget(1.0, 1e-7)) > 0.1
    True
    """
    return sensitivity / math.sqrt(2.0 * budget.release_rho)


def _solve(gram: NDArray[np.float64], cross: NDArray[np.float64]) -> NDArray[np.float64]:
    """``G⁻¹ b`` by Cholesky; 0 where G is not (numerically) positive definite — then γ = 0
    (λ_min <= 0), ⊥ but with probability at most δ, and any finite value will do."""
    try:
        factor = np.linalg.cholesky(gram)
    except np.linalg.LinAlgError:
        return np.zeros_like(cross)
    theta = np.linalg.solve(factor.T, np.linalg.solve(factor, cross))
    return theta if np.isfinite(theta).all() else np.zeros_like(cross)


def _project(theta: NDArray[np.float64], radius: float) -> NDArray[np.float64]:
    """Π_R: the projection onto the L2 ball of radius R (the seed's §1.4)."""
    norm = float(np.sqrt(theta @ theta))
    return theta * (radius / norm) if norm > radius else theta


def _sum_error(n: int, size: float) -> float:
    """Float error of a sum of n terms each at most ``size`` (Higham eq. 3.5, any order)."""
    return 1.01 * (n + 2) * _U * n * size


def _eigen_error(n: int, p: int, cap: int) -> float:
    """A public bound on the float error of λ_min(G): the sums' (p entries a row, each at most
    cap), LAPACK's backward-stable symmetric eigensolver (``<= 8 p² u ‖G‖``, ‖G‖ <= n cap p)
    and the margin's own subtractions."""
    return p * _sum_error(n, cap) + (8.0 * p * p + 4.0) * _U * n * cap * p


def _solve_error(n: int, p: int, cap: int) -> float:
    """The spectral size of the float perturbation of G in the solve: the sums' error and
    Cholesky's backward error (Higham Thm 10.4, with the triangular solves: ``4 p (p+1) u
    ‖G‖``)."""
    return p * _sum_error(n, cap) + 4.0 * p * (p + 1.0) * _U * n * cap * p


def _theta_error(n: int, p: int, cap: int, floor: float, coef_bound: float) -> float:
    """A public bound on ``‖θ̂_float - θ̂_exact‖`` where λ_min(G) >= c₀ n (the test's safe
    set): ``(G + E) θ_f = b + e`` gives ``‖θ_f - θ‖ <= (‖e‖ + ‖E‖ ‖θ‖) / (λ_min - ‖E‖)`` with
    ``‖θ‖ <= ‖b‖ / λ_min <= cap √p / c₀`` (checked ``‖E‖ <= c₀ n / 2``), plus the projection's
    rounding."""
    perturbation = _solve_error(n, p, cap)
    cross_error = math.sqrt(p) * _sum_error(n, cap)
    size = cap * math.sqrt(p) / floor
    return 2.0 * (cross_error + perturbation * size) / (floor * n) + 4.0 * _U * coef_bound


# ---- Algorithm 5 on a grid, item-level ---------------------------------------------------------


def kernel_reach(
    kernel: Kernel, grid: NDArray[np.float64], bandwidth: float, domain: tuple[float, float]
) -> float:
    """``κ = sup_x ‖(k((g - x)/b) / k(0))_g‖₂`` over x in the domain: the L2 reach of one
    point over the grid, from public facts. Evaluated every b/64 and raised by the largest
    change between evaluations (``√G L_K / k(0) / 128``); at most √G.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.privacy.ptr import kernel_reach
    >>> reach = kernel_reach(get_kernel("gaussian"), np.linspace(0, 1, 11), 0.1, (0.0, 1.0))
    >>> bool(1.0 <= reach < 1.5)       # a point reaches its neighbours one bandwidth away
    True
    """
    lo, hi = domain
    # only points within the kernel's reach of a grid point can reach further than 1 (at a
    # grid point it is at least 1): a Gaussian's values underflow to 0 beyond 39 b, so the
    # mesh covers the windows g ± W b alone, however narrow b is against the domain
    window = min(kernel.support, 39.0) * bandwidth
    points = np.sort(grid)
    starts, ends = np.maximum(points - window, lo), np.minimum(points + window, hi)
    merged = np.maximum.accumulate(ends)  # windows overlapping the next are one stretch
    breaks = np.flatnonzero(starts[1:] > merged[:-1]) + 1
    first, last = np.split(starts, breaks), np.split(merged, breaks)
    reach = 0.0
    for a, z in zip((f[0] for f in first), (e[-1] for e in last), strict=True):
        steps = max(2, math.ceil(64.0 * (z - a) / bandwidth) + 1)
        for chunk in np.array_split(np.linspace(a, z, steps), max(1, steps // 2048)):
            values = kernel.at(grid[None, :] - chunk[:, None], bandwidth) / kernel.sup_norm
            reach = max(reach, float(np.sqrt((values**2).sum(axis=1)).max()))
    slack = math.sqrt(grid.size) * kernel.lipschitz / kernel.sup_norm / 128.0
    return min(reach + slack, math.sqrt(grid.size))


def check_nadaraya_watson_ptr(n: int, floor: float, budget: PTRBudget) -> tuple[str, ...]:
    """Public refusals and notes of :func:`nadaraya_watson_ptr`: the degree is at most n
    (kernel scaled to ``k(0) = 1``), so ``floor >= 1`` never passes; a note where γ cannot
    reach ``2M``.

    Examples
    --------
    >>> from dplong.privacy.budget import ptr_budget
    >>> from dplong.privacy.ptr import check_nadaraya_watson_ptr
    >>> check_nadaraya_watson_ptr(2000, 0.05, ptr_budget(1.0, 1e-7))
    ()
    """
    if not 0.0 < floor < 1.0:
        raise ParameterError(f"the degree floor must lie in (0, 1) (a share of n), got {floor!r}")
    if _sum_error(n, 1.0) + 4.0 * _U * n > floor * n / 2.0:
        raise ParameterError("too many rows for a float-safe kernel degree at this floor")
    if n - floor * n - 1.0 < 2.0 * budget.threshold:
        return (
            "The ePTR test cannot pass reliably here (n too small for the degree floor): "
            "expect ⊥ (withheld) in many fits; raise epsilon or n.",
        )
    return ()


def nadaraya_watson_sensitivity(n: int, half: float, reach: float, floor: float) -> float:
    """The L2 sensitivity of :func:`nadaraya_watson_ptr`'s curve given the test passed:
    ``4 R_f κ / (c₀ n)`` (its docstring), public.

    Examples
    --------
    >>> from dplong.privacy.ptr import nadaraya_watson_sensitivity
    >>> nadaraya_watson_sensitivity(1000, 2.0, 1.5, 0.1)                   # 12 / 100
    0.12
    """
    return 4.0 * half * reach / (floor * n)


def nadaraya_watson_ptr(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    grid: NDArray[np.float64],
    kernel: Kernel,
    bandwidth: float,
    half: float,
    budget: PTRBudget,
    rng: np.random.Generator,
    *,
    floor: float,
    reach: float,
) -> PTRRelease:
    """ePTR Nadaraya–Watson on a grid (Alg 5 with one test and one release for all points).

    ``x`` lies in the public domain (NaN: a unit with no x, which weighs nothing) and
    ``|y| <= half`` (clipped and centred: ``R_f``); a unit
    is one row. With ``k`` scaled to ``k(0) = 1`` (NW is invariant to the kernel's scale) the
    degree ``d(g) = Σ_i k((g - x_i)/b)`` of a grid point moves by at most 1 when one row is
    replaced (both values lie in [0, 1]; the seed's eq. (20) has 2 σ^{-d} C_K for a kernel of
    any sign).

    **Test statistic** (eq. 21, over the grid): ``γ = (min_g d(g) - c₀ n - 1)₊``: a minimum of
    1-Lipschitz functions is 1-Lipschitz, and γ > 0 implies ``d(g) > c₀ n`` at every grid
    point of every neighbour.

    **Sensitivity under the margin** (eq. 19, over the grid). With ``f̂ = S / d``, replacing
    ``(x, y)`` by ``(x', y')`` gives ``f̂(g) - f̂'(g) = [k_g(x) (y - f̂(g)) - k_g(x')
    (y' - f̂(g))] / d'(g)``, so ``‖f̂ - f̂'‖₂ <= 2 R_f (‖k(x)‖₂ + ‖k(x')‖₂) / (c₀ n) <= 4 R_f κ
    / (c₀ n)`` with κ from :func:`kernel_reach` (the seed's ``4 R_f C_K / (σ^d c₀ n)`` at one
    point; κ instead of √G is what a grid gains over composing G single-point releases).

    Privacy: (ε, δ)-DP under replacing one row (Thm 5.1 via Thm 2.2).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.kernels import get_kernel
    >>> from dplong.privacy.budget import ptr_budget
    >>> from dplong.privacy.ptr import kernel_reach, nadaraya_watson_ptr
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 20_000)
    >>> y = np.clip(np.sin(2 * np.pi * x) + rng.normal(0, 0.3, x.size), -2, 2)
    >>> grid, kern = np.linspace(0, 1, 11), get_kernel("gaussian")
    >>> reach = kernel_reach(kern, grid, 0.1, (0.0, 1.0))
    >>> res = nadaraya_watson_ptr(x, y, grid, kern, 0.1, 2.0, ptr_budget(1.0, 1e-8),
    ...                           np.random.default_rng(1), floor=0.1, reach=reach)
    >>> res.released, bool(abs(res.estimate[5]) < 4 * res.noise_sd)     # sin(π) = 0
    (True, True)
    """
    with np.errstate(invalid="ignore"):  # a missing x (NaN) weighs nothing
        weights = np.nan_to_num(kernel.at(grid[None, :] - x[:, None], bandwidth) / kernel.sup_norm)
    degree = weights.sum(axis=0)
    sums = weights.T @ y
    n = x.size
    with np.errstate(divide="ignore", invalid="ignore"):
        curve = np.where(degree > 0, sums / degree, 0.0)
    curve = np.clip(np.nan_to_num(curve), -half, half)
    # float errors: the kernel values (a few ulps each) and the sums over n rows
    degree_error = _sum_error(n, 1.0) + 4.0 * _U * n
    margin = max(float(degree.min()) - degree_error - floor * n - 1.0, 0.0) / (
        1.0 + 2.0 * degree_error
    )
    sums_error = half * degree_error
    point_error = 2.0 * (sums_error + half * degree_error) / (floor * n) + 2.0 * _U * half
    alpha = nadaraya_watson_sensitivity(n, half, reach, floor)
    return eptr(
        curve,
        margin,
        alpha,
        2.0 * math.sqrt(grid.size) * point_error,
        half * (1.0 + 4.0 * _U),
        budget,
        rng,
        target=f"Nadaraya–Watson curve at {grid.size} points",
        test="the smallest kernel degree over the grid (eq. 21)",
    )
