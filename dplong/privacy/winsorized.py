"""The paper's noisy Winsorized mean, as published: ``variant="theory"`` and the local model.

* central: Algorithm 5 — per column, Algorithm 4: the private midpoint of Algorithm 3 (the mode
  of a stable histogram with bins of half-width τ, Alg 2; ``m̂ = 0`` when no bin survives) and
  the projection onto ``m̂ ± 3τ`` plus Laplace noise, half of each column's ε for each step;
* local: Algorithm 8 with the randomized-response midpoint of Algorithm 9 (bins of half-width
  τ', interval ``m̂ ± (τ + 2τ')`` as in §7.1.2; τ and 3τ with ``variant="theory"``).

τ is Lemma 5.2's radius from a stated (or CoinPress-estimated) variance proxy: with probability
``1 - dγ`` no user is clipped, so the estimate is the plain mean plus noise (Lemma 4.1). Users
without a statistic contribute the centre, and n divides, as in the paper. Each column's budget
is the largest that keeps the composition of all calls (:func:`~dplong.privacy.accounting.compose`:
stable histograms by basic composition with ``δ/(2d)`` each, the pure calls by the better of
basic and Rényi composition) within the request — Alg 5's advanced composition, done exactly.

The default pipeline (:mod:`dplong.privacy.engine`) is more accurate and needs no scale; this
module keeps the estimator the theorems are about reachable and unchanged.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dplong.bounds import midpoint_failure_probability
from dplong.exceptions import InsufficientUsersError, ParameterError, PrivacyParameterError
from dplong.privacy.accounting import Accountant, LedgerEntry
from dplong.privacy.budget import afford, paper_budget, settle
from dplong.privacy.engine import Release
from dplong.privacy.interval import (
    central_midpoint,
    check_histogram_feasible,
    local_bins,
    local_midpoint,
)
from dplong.privacy.noise import MIN_LATTICE_EPSILON, release_bounded_sum
from dplong.privacy.options import ReleaseOptions

__all__ = ["check_paper", "column_names", "midpoint_entry", "paper_midpoints", "release_paper"]


def column_names(names: object, d: int) -> tuple[str, ...]:
    """Names of d columns: the given ones (checked), else ``x`` or ``x0, x1, ...``.

    Examples
    --------
    >>> from dplong.privacy.winsorized import column_names
    >>> column_names(None, 1), column_names(None, 2), column_names(["a"], 1)
    (('x',), ('x0', 'x1'), ('a',))
    """
    if names is None:
        return tuple(f"x{j}" for j in range(d)) if d > 1 else ("x",)
    if isinstance(names, str) or not np.iterable(names):
        raise ParameterError(f"names must be a list of {d} column names, got {names!r:.80}")
    labels = list(names)
    if not all(isinstance(s, str) and s for s in labels):
        raise ParameterError(f"names must be non-empty strings, got {labels!r:.80}")
    if len(labels) != d:
        raise ParameterError(f"names must have {d} entries, got {len(labels)}")
    return tuple(labels)


def check_paper(n: int, d: int, options: ReleaseOptions) -> tuple[float, float]:
    """The budget refusals of the paper's pipeline (Alg 3-5), from n, d and the budget only:
    a per-column ε that float-safe lattice noise supports and, centrally, a stable histogram
    that can report a bin. Returns the per-column (ε, δ) of :func:`paper_budget`. A fit's
    plan runs them before any noise (:func:`dplong.models.release_blocks.run_blocks`), as the
    release does.

    Examples
    --------
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.privacy.winsorized import check_paper
    >>> options = ReleaseOptions.check(1000, epsilon=1.0, delta=1e-6, privacy="central",
    ...                                bound=None, d=1, variant="theory")
    >>> check_paper(1000, 1, options)
    (0.5, 5e-07)
    >>> check_paper(20, 1, options)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.InsufficientUsersError: with n=20 users the private midpoint cannot ...
    """
    eps, delta_h = paper_budget(d, options)
    try:
        if eps < MIN_LATTICE_EPSILON:
            raise PrivacyParameterError(
                f"epsilon={options.epsilon:.3g} leaves each of {d} column(s) "
                f"{eps:.3g}, below what float-safe lattice noise supports; raise epsilon"
            )
        if not options.local:
            check_histogram_feasible(n, eps, delta_h, remedy="more epsilon or delta")
    except (PrivacyParameterError, InsufficientUsersError) as refusal:
        refusal.budget_refusal = True  # a larger ε cures it (dplong.planning.advised)
        raise
    return eps, delta_h


def release_paper(
    matrix: NDArray[np.float64],
    *,
    tau: NDArray[np.float64],
    tau_bins: NDArray[np.float64],
    names: tuple[str, ...],
    options: ReleaseOptions,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
) -> Release:
    """Release the column means of ``matrix`` (NaN: no statistic) by Alg 4-5 / 8-9.

    ``tau`` is the concentration radius of each column and ``tau_bins`` the bin half-width
    of the local histogram with the default constants (τ'); see the module docstring. Every
    refusal and the accountant's check happen before the first noise draw.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.privacy.radius import concentration_radius, bin_radius
    >>> from dplong.privacy.winsorized import release_paper
    >>> x = np.random.default_rng(0).normal(5.0, 1.0, size=(5000, 1))
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1, variant="theory")
    >>> res = release_paper(x, tau=concentration_radius(1.0, 5000), tau_bins=bin_radius(1.0),
    ...                     names=("x",), options=options, rng=np.random.default_rng(1))
    >>> bool(abs(res.estimate[0] - 5.0) < 0.1), res.variant
    (True, 'theory')
    """
    n, d = matrix.shape
    tau, tau_bins = np.broadcast_to(tau, (d,)), np.broadcast_to(tau_bins, (d,))
    local = options.local
    theory = options.variant == "theory"
    bins, half_width = (tau, 3.0 * tau) if theory or not local else (tau_bins, tau + 2 * tau_bins)
    eps, delta_h = check_paper(n, d, options)
    if local:
        assert options.bound is not None
        for h, b in zip(bins, options.bound, strict=True):
            local_bins(float(h), float(b))
    afford(accountant, options.epsilon, options.delta)

    # ---- no randomness was drawn above this line -------------------------------------------
    midpoint, failed = paper_midpoints(matrix, bins, eps, delta_h, rng, options.bound)
    entries = [midpoint_entry(name, eps, delta_h, n, local) for name in names]
    with np.errstate(invalid="ignore"):
        clipped = np.clip(matrix - midpoint, -half_width, half_width)
    clipped = np.where(np.isnan(clipped), 0.0, clipped)  # no statistic: the centre
    release = release_bounded_sum(clipped, half_width, np.full(d, eps), rng, local=local)
    sensitivity = release.sensitivity if local else release.sensitivity / n
    scale = release.scale if local else release.scale / n
    entries += [
        LedgerEntry(
            "mean",
            "local lattice Laplace (Alg 8)" if local else "lattice Laplace (Alg 1, 4)",
            name,
            eps,
            0.0,
            0.0,
            float(sensitivity[j]),
            float(scale[j]),
        )
        for j, name in enumerate(names)
    ]
    ledger = settle(accountant, entries, options)
    noise_sd = np.sqrt(release.draws) * release.sd / n
    failure = (
        0.0
        if local
        else midpoint_failure_probability(n, eps, delta_h, options.gamma, wide_bins=theory)
    )
    rho = tau**2 / (2.0 * math.log(2.0 * d * n / options.gamma))  # the proxy behind τ
    notes: tuple[str, ...] = ()
    if failed.any():
        notes = (
            f"The private midpoint failed for {[names[j] for j in np.flatnonzero(failed)]} "
            "(no histogram bin survived) and fell back to 0, as in the paper's Alg 3: those "
            "estimates are unreliable.",
        )
    estimate = midpoint + release.total / n
    if local:  # the mean of statistics within ±B lies within it (post-processing, as the
        # default local release projects; a far midpoint left estimates of -739 at B = 10)
        assert options.bound is not None
        estimate = np.clip(estimate, -options.bound, options.bound)
    return Release(
        names=names,
        estimate=estimate,
        noise_sd=noise_sd,
        noise_scale=scale,
        noise_kind="normal" if local else "laplace",
        sampling_sd=np.sqrt(rho / n),
        bias=np.zeros(d),
        interval=np.stack([midpoint - half_width, midpoint + half_width], axis=1),
        midpoint=midpoint,
        scale=rho,
        users=np.array([math.nan]),
        users_sd=math.nan,
        privacy=ledger,
        n=n,
        variant="theory" if theory else "paper (local)",
        bad_events=np.full(d, options.gamma + failure),
        notes=notes,
        failed=failed,
    )


def paper_midpoints(
    matrix: NDArray[np.float64],
    bins: NDArray[np.float64],
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    bound: NDArray[np.float64] | None,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The private midpoint of each column (NaN: no statistic, in no bin) with bins of
    half-width ``bins``: Alg 3 (stable histogram; ``failed`` where no bin survived and the
    midpoint fell back to 0), or with the local model's public ``bound``, Alg 9.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.winsorized import paper_midpoints
    >>> x = np.random.default_rng(0).normal(5.0, 1.0, size=(5000, 1))
    >>> midpoint, failed = paper_midpoints(x, np.array([2.0]), 1.0, 1e-6,
    ...                                    np.random.default_rng(1), None)
    >>> bool(abs(midpoint[0] - 5.0) < 4.0), failed.tolist()
    (True, [False])
    """
    n, d = matrix.shape
    midpoint = np.empty(d)
    failed = np.zeros(d, dtype=bool)
    for j in range(d):  # Alg 3 / 9 per column, each vectorised over users
        column = matrix[:, j][np.isfinite(matrix[:, j])]  # no statistic: no bin
        if bound is not None:
            midpoint[j] = local_midpoint(column, float(bins[j]), float(bound[j]), epsilon, rng, n)
        else:
            midpoint[j], failed[j] = central_midpoint(
                column, float(bins[j]), epsilon, delta, rng, n
            )
    return midpoint, failed


def midpoint_entry(name: str, epsilon: float, delta: float, n: int, local: bool) -> LedgerEntry:
    """Ledger entry of a private midpoint: the stable histogram centrally (sensitivity 2/n of
    the proportions, noise 2/(εn)), the randomized-response histogram locally (2 bits)."""
    if local:
        mechanism = "randomized-response histogram (Alg 7, 9)"
        return LedgerEntry("midpoint", mechanism, name, epsilon, 0.0, 0.0, 2.0, math.nan)
    return LedgerEntry(
        "midpoint",
        "stable histogram (Alg 2, 3)",
        name,
        epsilon,
        delta,
        0.0,
        2.0 / n,
        2.0 / (epsilon * n),
    )
