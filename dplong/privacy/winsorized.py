"""The noisy Winsorized mean: private midpoint, projection, lattice Laplace noise.

* central 1-D: Algorithm 4; local 1-D: Algorithm 8; d columns: Algorithm 5, each column with its
  own radius τ_j and the better of basic and advanced composition (:func:`split_budget`);
* ``variant="theory"``: bins of half-width τ and the interval ``m̂ ± 3τ`` (Alg 3, 4);
  ``variant="improved"`` (default): bins of half-width τ' and ``m̂ ± (τ + 2τ')`` (§7.1.2);
* ``sample_split=True``: the estimator of eq. (1) — the midpoint from one half of the users,
  the mean from the other. The halves are disjoint, so by parallel composition each step may
  use the whole per-column budget (the paper conservatively halves it).

:func:`release_mean` is the engine every model calls with its radii; the public
:func:`dplong.winsorized_mean` (in :mod:`dplong.privacy.plugin`, with the private scale of the
default pipeline) validates raw values and calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_fraction,
    per_column,
)
from dplong.bounds import midpoint_failure_probability
from dplong.exceptions import InsufficientUsersError, ParameterError, PrivacyParameterError
from dplong.privacy.accounting import (
    Accountant,
    ColumnBudget,
    LedgerEntry,
    PrivacyLedger,
    split_budget,
)
from dplong.privacy.interval import (
    central_midpoint,
    check_histogram_feasible,
    local_bins,
    local_midpoint,
)
from dplong.privacy.noise import (
    MIN_LATTICE_EPSILON,
    LatticeRelease,
    release_bounded_sum,
    two_sided_geometric_variance,
)
from dplong.privacy.radius import DEFAULT_GAMMA

__all__ = ["ReleaseOptions", "WinsorizedMeanResult", "default_midpoint_share", "release_mean"]

VARIANTS = ("improved", "theory")
PRIVACY_MODELS = ("central", "local")
#: Floor of the midpoint's budget share; see :func:`default_midpoint_share`.
MIN_MIDPOINT_SHARE = 0.05
MAX_MIDPOINT_SHARE = 0.75
#: The paper's split (Alg 4, 8): half of ε for the midpoint; used by ``variant="theory"``.
PAPER_MIDPOINT_SHARE = 0.5
#: Candidate shares of a column's ε for the refinement stage (see :func:`refinement_share`).
REFINE_SHARES = (0.02, 0.05, 0.1, 0.15, 0.2, 0.3)


def default_midpoint_share(n: int, epsilon: float, delta: float) -> float:
    """Share of a column's ε given to the private midpoint in the central model.

    The histogram only has to find the bulk of the data, and it does so reliably once its
    suppression threshold is a small fraction of n. We give it the least ε that puts the
    threshold ``(2/ε_h) log(2/δ) + 1`` at a quarter of the users, between
    :data:`MIN_MIDPOINT_SHARE` and :data:`MAX_MIDPOINT_SHARE`; the rest goes to the mean.
    Chosen by ``benchmarks/accuracy_mean.py`` (docs/accuracy.md): the floor keeps the
    histogram robust to a scale that is too small; the cap of ¾ rather than the paper's ½
    matters only at small n·ε, where with ½ a mean near a bin edge makes the midpoint fail
    in most releases (88 % at n = 10³, ε = 0.1) and with ¾ in none. Uses public facts only.

    Examples
    --------
    >>> from dplong.privacy import default_midpoint_share
    >>> round(default_midpoint_share(n=2_000, epsilon=1.0, delta=1e-6), 4)
    0.0582
    >>> default_midpoint_share(n=100_000, epsilon=1.0, delta=1e-10)    # the floor
    0.05
    >>> default_midpoint_share(n=100, epsilon=0.1, delta=1e-4)         # the cap
    0.75
    """
    room = n / 4.0 - 1.0
    if room <= 0:
        return MAX_MIDPOINT_SHARE
    needed = 2.0 * math.log(2.0 / delta) / room / epsilon
    return float(min(max(needed, MIN_MIDPOINT_SHARE), MAX_MIDPOINT_SHARE))


@dataclass(frozen=True)
class WinsorizedMeanResult:
    """A private mean and everything public about how it was released.

    Attributes
    ----------
    estimate : float or ndarray
        The private mean (a float for 1-D input, else one value per column).
    noise_scale : float or ndarray
        Laplace scale ``b`` of the noise: central, of the one draw added to the mean; local, of
        the draw each user adds to their own value.
    noise_sd : float or ndarray
        Standard deviation of the total noise in ``estimate`` (exact, lattice noise included).
    interval : ndarray
        Final projection intervals ``[c - w, c + w]``, shape (2,) or (d, 2): centred at the
        private midpoint ``c = m̂``, or at the rough mean ``c = μ̂₁`` when refined.
    radius, bin_radius : float or ndarray
        τ and the histogram's bin half-width (τ' for ``"improved"``, τ for ``"theory"``).
    failed : bool or ndarray
        True where the stable histogram reported no bin and the midpoint fell back to 0
        (always False in the local model).
    privacy : PrivacyLedger
        Every mechanism call and the composed (ε, δ).
    n : int
        Number of users (public).
    variant : str
        ``"improved"``, ``"improved (refined)"`` or ``"theory"``.
    sample_split : bool
        Whether the sample-split estimator of eq. (1) was used.
    names : tuple of str
        Column names, as in the ledger.
    scale : float or ndarray
        The variance proxy ρ behind the radius: as given, or the private estimate with
        ``scale="estimate"`` (a released number); NaN when ``tau`` was given.
    midpoint_failure : float or ndarray
        Bound on the probability that the private midpoint fails, from public quantities
        (:func:`dplong.bounds.midpoint_failure_probability`); NaN in the local model, whose
        histogram always reports a bin.

    Examples
    --------
    >>> import numpy as np, dplong
    >>> x = np.random.default_rng(0).normal([1.0, 10.0], 1.0, size=(1000, 2))
    >>> res = dplong.winsorized_mean(x, epsilon=1.0, scale=1.0, names=["a", "b"],
    ...                              random_state=0)
    >>> res.estimate.shape, res.interval.shape, res.names
    ((2,), (2, 2), ('a', 'b'))
    >>> bool(np.all(np.abs(res.estimate - [1.0, 10.0]) < 0.5)), res.failed.tolist()
    (True, [False, False])

    With the noise switched off (an absurd ε, for illustration only) the estimate is the
    mean of the clipped values, here the plain mean:

    >>> dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1e300, delta=0.5, scale=1.0,
    ...                        random_state=0)  # doctest: +NORMALIZE_WHITESPACE
    WinsorizedMeanResult(estimate=1.5, noise_sd=0.0, failed=False, n=1000, epsilon=1e+300,
                         delta=0.5, model='central')
    """

    estimate: Any
    noise_scale: Any
    noise_sd: Any
    interval: NDArray[np.float64]
    radius: Any
    bin_radius: Any
    failed: Any
    privacy: PrivacyLedger
    n: int
    variant: str
    sample_split: bool
    names: tuple[str, ...]
    midpoint_failure: Any = math.nan
    scale: Any = math.nan

    def __repr__(self) -> str:
        return (
            f"WinsorizedMeanResult(estimate={self.estimate!r}, noise_sd={self.noise_sd!r}, "
            f"failed={self.failed!r}, n={self.n}, epsilon={self.privacy.epsilon:.4g}, "
            f"delta={self.privacy.delta:.3g}, model={self.privacy.model!r})"
        )


@dataclass(frozen=True)
class ReleaseOptions:
    """Validated privacy options of one release (shared by every model's ``fit``)."""

    epsilon: float
    delta: float
    privacy: str
    bound: NDArray[np.float64] | None
    variant: str
    midpoint_share: float | None
    sample_split: bool
    gamma: float
    refine: bool = True

    @classmethod
    def check(
        cls,
        n: int,
        *,
        epsilon: Any,
        delta: Any,
        privacy: Any,
        bound: Any,
        d: int,
        variant: Any = "improved",
        midpoint_share: Any = None,
        sample_split: bool = False,
        gamma: Any = DEFAULT_GAMMA,
        refine: bool = True,
    ) -> ReleaseOptions:
        """Validate once at the entry point, with messages naming the argument."""
        eps = check_epsilon(epsilon)
        model = check_choice(privacy, "privacy", PRIVACY_MODELS)
        if n < 2:
            raise InsufficientUsersError(f"a private mean needs at least 2 users, got n={n}")
        if model == "central":
            total_delta = 1.0 / n**2 if delta is None else check_delta(delta)
        else:
            total_delta = 0.0 if delta is None else check_delta(delta)
            if bound is None:
                raise ParameterError(
                    'privacy="local" needs bound=B, a public bound on |mean| per column'
                )
            if sample_split:
                raise ParameterError("sample_split is only defined for the central model")
        return cls(
            epsilon=eps,
            delta=total_delta,
            privacy=model,
            bound=None if bound is None else per_column(bound, d, "bound"),
            variant=check_choice(variant, "variant", VARIANTS),
            midpoint_share=None
            if midpoint_share is None
            else check_fraction(midpoint_share, "midpoint_share"),
            sample_split=bool(sample_split),
            gamma=check_fraction(gamma, "gamma"),
            refine=bool(refine),
        )


def column_names(names: Sequence[str] | None, d: int) -> tuple[str, ...]:
    """Ledger names of d columns: the given ones (checked), else ``x`` or ``x0, x1, ...``.

    Examples
    --------
    >>> from dplong.privacy.winsorized import column_names
    >>> column_names(None, 1), column_names(None, 2), column_names(["a"], 1)
    (('x',), ('x0', 'x1'), ('a',))
    """
    if names is None:
        return tuple(f"x{j}" for j in range(d)) if d > 1 else ("x",)
    if len(names) != d:
        raise ParameterError(f"names must have {d} entries, got {len(names)}")
    return tuple(str(s) for s in names)


def check_lattice_epsilon(epsilon: float, what: str) -> None:
    """Refuse, before any noise, an ε below what the float-safe lattice noise supports."""
    if epsilon < MIN_LATTICE_EPSILON:
        raise PrivacyParameterError(
            f"{what} is {epsilon:.3g}, below the {MIN_LATTICE_EPSILON:.2g} that float-safe "
            "lattice noise supports; raise epsilon or use fewer columns"
        )


def refinement_share(
    n: int,
    tau: NDArray[np.float64],
    half_width: NDArray[np.float64],
    midpoint_share: float,
    epsilon: float,
    d: int,
    gamma: float,
) -> float:
    """Share of a column's ε for the refinement stage, chosen from public facts only.

    The refinement releases a rough mean μ̂₁ on ``m̂ ± w₁`` and re-centres the final interval
    at it with half-width ``w₂ = τ + e₁`` (see :func:`refined_half_width`). A larger share
    shrinks e₁ but leaves less ε for the final noise; we take the share on a small grid that
    minimises the predicted final noise variance ``Σ_j (w₂_j / ε_final)²``. Share 0 (no
    refinement) wins when n·ε is small.
    """
    return best_refinement_share(
        n,
        half_width,
        midpoint_share,
        epsilon,
        lambda noise: refined_half_width(tau, noise, n, d, gamma),
    )


def best_refinement_share(
    n: int,
    half_width: NDArray[np.float64] | float,
    midpoint_share: float,
    epsilon: float,
    final_width: Callable[[Any], Any],
) -> float:
    """The share on :data:`REFINE_SHARES` (or 0) minimising ``Σ_j (w₂_j / ε_final)²``.

    ``final_width`` maps the rough mean's Laplace scale ``2 w₁ / (n ε share)`` to the final
    half-width w₂; the stage must leave the final noise more than a tenth of ε and get at least
    the lattice minimum itself.

    Examples
    --------
    >>> from dplong.privacy.winsorized import best_refinement_share
    >>> best_refinement_share(100_000, 10.0, 0.05, 1.0, lambda noise: 3.0 + 3.0 * noise)
    0.02
    >>> best_refinement_share(100, 10.0, 0.05, 1.0, lambda noise: 3.0 + 300.0 * noise)  # no gain
    0.0
    """
    best, best_cost = 0.0, float(np.sum((np.asarray(half_width) / (1.0 - midpoint_share)) ** 2))
    for share in REFINE_SHARES:
        rest = 1.0 - midpoint_share - share
        if rest <= 0.1 or share * epsilon < MIN_LATTICE_EPSILON:
            continue
        noise = 2.0 * np.asarray(half_width) / (n * epsilon * share)  # Laplace scale of μ̂₁
        cost = float(np.sum((np.asarray(final_width(noise)) / rest) ** 2))
        if cost < best_cost:
            best, best_cost = share, cost
    return best


def refined_half_width(
    tau: NDArray[np.float64], noise_scale: NDArray[np.float64], n: int, d: int, gamma: float
) -> NDArray[np.float64]:
    """Half-width ``τ + e₁`` of the final interval around the rough mean μ̂₁.

    ``|μ̂₁ - μ| <= e₁ = b₁ log(2/γ) + √(2ρ log(4/γ)/n)`` with probability at least 1 - γ: the
    Laplace tail of the stage-1 noise (scale b₁) and Lemma 2.11 for the mean of n users with
    variance proxy ``ρ = τ² / (2 log(2dn/γ))`` (the ρ behind τ). On that event and the event
    that no user is farther than τ from μ, no user is clipped by ``μ̂₁ ± (τ + e₁)``.
    """
    rho = tau**2 / (2.0 * math.log(2.0 * d * n / gamma))
    statistical = np.sqrt(2.0 * rho * math.log(4.0 / gamma) / n)
    return np.asarray(tau + noise_scale * math.log(2.0 / gamma) + statistical)


def midpoint_budget(n: int, d: int, options: ReleaseOptions) -> tuple[ColumnBudget, int, float]:
    """Per-column budget, the users the midpoint sees, and its share of ε — public facts.

    Checks, before any noise, that the central stable histogram can succeed with them
    (:func:`~dplong.privacy.interval.check_histogram_feasible`); :func:`release_mean` and the
    models' scale-estimating fits call it first.
    """
    local = options.privacy == "local"
    budget = split_budget(options.epsilon, options.delta, d, pure=local)
    n_mid = n // 2 if options.sample_split else n
    share = options.midpoint_share
    if share is None:
        share = (
            PAPER_MIDPOINT_SHARE
            if local or options.variant == "theory"
            else default_midpoint_share(n_mid, budget.epsilon, budget.delta)
        )
    # the noise step gets at most what the midpoint leaves: refuse a hopeless ε first
    rest = budget.epsilon if options.sample_split else (1.0 - share) * budget.epsilon
    check_lattice_epsilon(rest, "the noise step's epsilon per column")
    if not local:
        eps_mid = budget.epsilon if options.sample_split else share * budget.epsilon
        check_histogram_feasible(n_mid, eps_mid, budget.delta)
    return budget, n_mid, share


def release_mean(
    matrix: NDArray[np.float64],
    *,
    tau: NDArray[np.float64],
    tau_bins: NDArray[np.float64],
    rng: np.random.Generator,
    options: ReleaseOptions,
    names: tuple[str, ...] | None = None,
    accountant: Accountant | None = None,
    squeeze: bool = False,
    identified: NDArray[np.bool_] | None = None,
) -> WinsorizedMeanResult:
    """Engine behind every model: release the column means of a validated (n x d) matrix.

    Stages, per column: the private midpoint m̂ (Alg 3 / 9); optionally a refinement — Alg 4's
    projection and noise on ``m̂ ± w₁`` with a small share of ε, giving μ̂₁ — and the final
    projection and noise on ``c ± w`` with ``c = μ̂₁`` and ``w = τ + e₁`` (refined) or ``c = m̂``
    and ``w = w₁`` (Alg 4, 8). Sequential composition within a column; ``split_budget``
    across columns. All feasibility checks and the accountant's check happen before the first
    noise draw.

    Users with ``identified[u] == False`` (their statistic does not exist, e.g. a singular
    per-user regression) fall in no histogram bin and contribute the current centre ``c`` to
    each mean: n stays the public number of users and each user's influence stays bounded by
    the interval, so the guarantee is unchanged.
    """
    n, d = matrix.shape
    names = names or column_names(None, d)
    local = options.privacy == "local"
    bound, variant, sample_split = options.bound, options.variant, options.sample_split
    if variant == "improved":
        bins_half, half_width = tau_bins, tau + 2.0 * tau_bins
    else:
        bins_half, half_width = tau, 3.0 * tau
    budget, n_mid, midpoint_share = midpoint_budget(n, d, options)
    refine = variant == "improved" and not local and not sample_split and options.refine
    share_refine = (
        refinement_share(n, tau, half_width, midpoint_share, budget.epsilon, d, options.gamma)
        if refine
        else 0.0
    )
    if sample_split:  # disjoint halves: parallel composition
        eps_mid = eps_final = budget.epsilon
    else:
        eps_mid = midpoint_share * budget.epsilon
        eps_final = (1.0 - midpoint_share - share_refine) * budget.epsilon
    check_lattice_epsilon(eps_final, "the noise step's epsilon per column")
    if local:
        assert bound is not None
        for h, b in zip(bins_half, bound, strict=True):
            local_bins(float(h), float(b))
    if accountant is not None:
        accountant.check(budget.total_epsilon, budget.total_delta)

    if identified is None:
        identified = np.ones(n, dtype=bool)
    order = rng.permutation(n) if sample_split else np.arange(n)
    mid_users, mean_users = (order[:n_mid], order[n_mid:]) if sample_split else (order, order)
    mid_rows = matrix[mid_users[identified[mid_users]]]  # users without a statistic: no bin
    midpoint = np.empty(d)
    failed = np.zeros(d, dtype=bool)
    for j in range(d):  # d histograms; each is vectorised over users
        if local:
            assert bound is not None
            midpoint[j] = local_midpoint(
                mid_rows[:, j], float(bins_half[j]), float(bound[j]), eps_mid, rng, n_mid
            )
        else:
            midpoint[j], failed[j] = central_midpoint(
                mid_rows[:, j], float(bins_half[j]), eps_mid, budget.delta, rng, n_mid
            )
    entries = [midpoint_entry(name, eps_mid, budget.delta, n_mid, local) for name in names]
    rows, keep = matrix[mean_users], identified[mean_users]
    centre, width = midpoint, half_width
    if share_refine > 0:
        rough, release = _project_and_release(
            rows, keep, centre, width, share_refine * budget.epsilon, rng, local
        )
        entries += mean_entries(
            names, "refinement", share_refine * budget.epsilon, release, rows.shape[0], local
        )
        noise_scale, _ = noise_summary(release, rows.shape[0], local)
        centre, width = rough, refined_half_width(tau, noise_scale, n, d, options.gamma)
    estimate, release = _project_and_release(rows, keep, centre, width, eps_final, rng, local)
    entries += mean_entries(names, "mean", eps_final, release, rows.shape[0], local)
    noise_scale, noise_sd = noise_summary(release, rows.shape[0], local)
    composition = budget.method + ("; parallel halves (eq. 1)" if sample_split else "")
    ledger = PrivacyLedger(
        tuple(entries),
        budget.total_epsilon,
        budget.total_delta,
        composition,
        "local" if local else "central",
    )
    if accountant is not None:
        accountant.record(ledger)

    def out(a: NDArray[Any]) -> Any:
        return a.item() if squeeze else a

    interval = np.stack([centre - width, centre + width], axis=1)
    failure = np.full(
        d,
        math.nan
        if local
        else midpoint_failure_probability(
            n_mid, eps_mid, budget.delta, options.gamma, wide_bins=variant == "theory"
        ),
    )
    return WinsorizedMeanResult(
        estimate=out(estimate),
        noise_scale=out(noise_scale),
        noise_sd=out(noise_sd),
        interval=interval[0] if squeeze else interval,
        radius=out(tau),
        bin_radius=out(bins_half),
        failed=out(failed),
        privacy=ledger,
        n=n,
        variant=variant + (" (refined)" if share_refine > 0 else ""),
        sample_split=sample_split,
        names=names,
        midpoint_failure=out(failure),
    )


def _project_and_release(
    rows: NDArray[np.float64],
    keep: NDArray[np.bool_],
    centre: NDArray[np.float64],
    width: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
    local: bool,
) -> tuple[NDArray[np.float64], LatticeRelease]:
    """Alg 4 / 8, line 2: project onto ``centre ± width``, average, add lattice noise."""
    with np.errstate(invalid="ignore"):  # NaN statistics of unidentified users are replaced
        clipped = np.where(keep[:, None], np.clip(rows - centre, -width, width), 0.0)
    d = rows.shape[1]
    release = release_bounded_sum(clipped, width, np.full(d, epsilon), rng, local=local)
    return centre + release.total / rows.shape[0], release


def midpoint_entry(name: str, epsilon: float, delta: float, n: int, local: bool) -> LedgerEntry:
    """Ledger entry of a private midpoint: the stable histogram centrally (sensitivity 2/n of
    the proportions, noise 2/(εn)), the randomized-response histogram locally (2 bits).

    Examples
    --------
    >>> from dplong.privacy.winsorized import midpoint_entry
    >>> midpoint_entry("x", 0.5, 1e-6, 1000, local=False).sensitivity
    0.002
    """
    if local:
        return LedgerEntry(
            "randomized-response histogram (Alg 7, 9)",
            f"{name}: midpoint",
            epsilon,
            0.0,
            2.0,
            math.nan,
        )
    return LedgerEntry(
        "stable histogram (Alg 2, 3)",
        f"{name}: midpoint",
        epsilon,
        delta,
        2.0 / n,
        2.0 / (epsilon * n),
    )


def mean_entries(
    names: tuple[str, ...], stage: str, epsilon: float, release: LatticeRelease, n: int, local: bool
) -> list[LedgerEntry]:
    """Ledger entries of a lattice release of n users' clipped values, one per column.

    Sensitivity and Laplace scale of the released mean (centrally) or of one user's report
    (locally), as :func:`noise_summary` gives them.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import release_bounded_sum
    >>> from dplong.privacy.winsorized import mean_entries
    >>> rel = release_bounded_sum(np.zeros((100, 1)), np.array([1.0]), np.array([1.0]),
    ...                           np.random.default_rng(0))
    >>> entry, = mean_entries(("x",), "mean", 1.0, rel, 100, local=False)
    >>> entry.target, bool(2.0 / 100 <= entry.sensitivity < 2.001 / 100)
    ('x: mean', True)
    """
    scale, _ = noise_summary(release, n, local)
    mechanism = "local lattice Laplace (Alg 8)" if local else "lattice Laplace (Alg 1, 4)"
    sensitivity = release.sensitivity if local else release.sensitivity / n
    return [
        LedgerEntry(
            mechanism, f"{name}: {stage}", epsilon, 0.0, float(sensitivity[j]), float(scale[j])
        )
        for j, name in enumerate(names)
    ]


def noise_summary(
    release: LatticeRelease, n: int, local: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Laplace-equivalent scale and exact sd of the lattice noise in the released mean.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import release_bounded_sum
    >>> from dplong.privacy.winsorized import noise_summary
    >>> rel = release_bounded_sum(np.zeros((100, 1)), np.array([1.0]), np.array([1.0]),
    ...                           np.random.default_rng(0))
    >>> scale, sd = noise_summary(rel, 100, local=False)
    >>> bool(abs(scale[0] - 2.0 / 100) < 1e-5), bool(abs(sd[0] - 2**0.5 * scale[0]) < 1e-5)
    (True, True)
    """
    per_draw_scale = release.step / release.rate
    per_draw_var = two_sided_geometric_variance(release.rate) * release.step**2
    sd = np.sqrt(release.draws * per_draw_var) / n
    return (per_draw_scale if local else per_draw_scale / n), sd
