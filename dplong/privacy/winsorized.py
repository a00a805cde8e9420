"""The noisy Winsorized mean: private midpoint, projection, lattice Laplace noise.

* central 1-D: Algorithm 4; local 1-D: Algorithm 8; d columns: Algorithm 5, each column with its
  own radius τ_j and the better of basic and advanced composition (:func:`split_budget`);
* ``variant="theory"``: bins of half-width τ and the interval ``m̂ ± 3τ`` (Alg 3, 4);
  ``variant="improved"`` (default): bins of half-width τ' and ``m̂ ± (τ + 2τ')`` (§7.1.2);
* ``sample_split=True``: the estimator of eq. (1) — the midpoint from one half of the users,
  the mean from the other. The halves are disjoint, so by parallel composition each step may
  use the whole per-column budget (the paper conservatively halves it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dplong._grouping import factorize_groups, group_means
from dplong._validation import (
    RandomState,
    as_finite_matrix,
    check_choice,
    check_delta,
    check_epsilon,
    check_fraction,
    check_random_state,
    per_column,
)
from dplong.exceptions import InsufficientUsersError, ParameterError
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
from dplong.privacy.noise import LatticeRelease, release_bounded_sum, two_sided_geometric_variance
from dplong.privacy.radius import DEFAULT_GAMMA, bin_radius, concentration_radius

__all__ = ["WinsorizedMeanResult", "default_midpoint_share", "winsorized_mean"]

VARIANTS = ("improved", "theory")
PRIVACY_MODELS = ("central", "local")
#: Floor of the midpoint's budget share; see :func:`default_midpoint_share`.
MIN_MIDPOINT_SHARE = 0.05
LOCAL_MIDPOINT_SHARE = 0.5


def default_midpoint_share(n: int, epsilon: float, delta: float) -> float:
    """Share of a column's ε given to the private midpoint in the central model.

    The histogram only has to find the bulk of the data, and it does so reliably once its
    suppression threshold is a small fraction of n. We give it the least ε that puts the
    threshold ``(2/ε_h) log(2/δ) + 1`` at a quarter of the users, between
    :data:`MIN_MIDPOINT_SHARE` and the paper's ½; the rest goes to the mean's noise. Chosen by
    ``benchmarks/accuracy_mean.py`` (docs/accuracy.md). Uses public facts only.
    """
    room = n / 4.0 - 1.0
    if room <= 0:
        return 0.5
    needed = 2.0 * math.log(2.0 / delta) / room / epsilon
    return float(min(max(needed, MIN_MIDPOINT_SHARE), 0.5))


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
        Projection intervals ``[m̂ - w, m̂ + w]``, shape (2,) or (d, 2).
    radius, bin_radius : float or ndarray
        τ and the histogram's bin half-width (τ' for ``"improved"``, τ for ``"theory"``).
    failed : bool or ndarray
        True where the stable histogram reported no bin and the midpoint fell back to 0.
    privacy : PrivacyLedger
        Every mechanism call and the composed (ε, δ).
    n : int
        Number of users (public).
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

    def __repr__(self) -> str:
        return (
            f"WinsorizedMeanResult(estimate={self.estimate!r}, noise_sd={self.noise_sd!r}, "
            f"failed={self.failed!r}, n={self.n}, epsilon={self.privacy.epsilon:.4g}, "
            f"delta={self.privacy.delta:.3g}, model={self.privacy.model!r})"
        )


def winsorized_mean(
    values: ArrayLike,
    *,
    epsilon: float,
    delta: float | None = None,
    groups: ArrayLike | None = None,
    scale: float | ArrayLike | None = None,
    tau: float | ArrayLike | None = None,
    privacy: str = "central",
    bound: float | ArrayLike | None = None,
    random_state: RandomState = None,
    variant: str = "improved",
    midpoint_share: float | None = None,
    sample_split: bool = False,
    gamma: float = DEFAULT_GAMMA,
    names: Sequence[str] | None = None,
    accountant: Accountant | None = None,
) -> WinsorizedMeanResult:
    """User-level differentially private mean of one or several columns.

    Parameters
    ----------
    values : array_like, shape (rows,) or (rows, d)
        One value (or row) per user, or many rows per user together with ``groups``.
    epsilon : float
        Total privacy budget ε > 0 of this release, over all columns.
    delta : float, optional
        Total δ ∈ (0, 1). Central default ``1/n**2``; local default ``None`` (pure ε-LDP).
    groups : array_like, optional
        User id of every row: rows are first averaged per user (Def 5.1), so the release is
        user-level DP and n is the number of distinct ids.
    scale : float or array_like, optional
        Variance proxy ρ of one user's value in each column (the variance for Gaussian data).
        Gives τ = √(2ρ log(2dn/γ)) and τ' = √(2ρ log(2/γ)). Exactly one of ``scale``, ``tau``.
    tau : float or array_like, optional
        Concentration radius τ per column, given directly.
    privacy : {"central", "local"}
        Trusted curator, or each user privatising their value (needs ``bound``).
    bound : float or array_like, optional
        Public bound B with ``|mean| <= B`` per column; required for ``privacy="local"``.
    random_state : None, int or numpy.random.Generator
        ``None`` (fresh OS entropy) for a release; a seed only for reproducible research.
    variant : {"improved", "theory"}
        §7.1.2 constants (default) or the paper's theory constants (Alg 3, 4).
    midpoint_share : float, optional
        Share of each column's ε spent on the midpoint; default :func:`default_midpoint_share`
        centrally and ½ locally.
    sample_split : bool
        Use the sample-split estimator of eq. (1) (central only).
    gamma : float
        Failure probability γ behind the radii (see :mod:`dplong.privacy.radius`).
    names : sequence of str, optional
        Column names for the ledger.
    accountant : Accountant, optional
        Budget to charge; the release is refused before any noise if it does not fit.

    Returns
    -------
    WinsorizedMeanResult

    Examples
    --------
    >>> import numpy as np, dplong
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(3.0, 1.0, size=(10_000, 5))          # 1,000 users x 10 visits
    >>> users = np.repeat(np.arange(1_000), 10)
    >>> res = dplong.winsorized_mean(x[:, 0], groups=users, epsilon=1.0, scale=0.1,
    ...                              random_state=1)
    >>> abs(res.estimate - 3.0) < 0.1
    True
    >>> res.privacy.epsilon <= 1.0, res.n
    (True, 1000)
    """
    rng = check_random_state(random_state)
    matrix = as_finite_matrix(values)
    squeeze = np.ndim(values) == 1
    if groups is not None:
        codes, n = factorize_groups(groups, matrix.shape[0])
        matrix = group_means(matrix, codes, n)
    n, d = matrix.shape
    options = ReleaseOptions.check(
        n,
        epsilon=epsilon,
        delta=delta,
        privacy=privacy,
        bound=bound,
        d=d,
        variant=variant,
        midpoint_share=midpoint_share,
        sample_split=sample_split,
        gamma=gamma,
    )
    tau_j, tau_bins = _radii(scale, tau, n, d, options.gamma)
    return release_mean(
        matrix,
        tau=tau_j,
        tau_bins=tau_bins,
        rng=rng,
        options=options,
        names=_column_names(names, d),
        accountant=accountant,
        squeeze=squeeze,
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
        )


def _radii(
    scale: Any, tau: Any, n: int, d: int, gamma: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    if (scale is None) == (tau is None):
        raise ParameterError(
            "give exactly one of scale= (variance proxy of one user's value) "
            "or tau= (concentration radius)"
        )
    if scale is not None:
        rho = per_column(scale, d, "scale")
        return concentration_radius(rho, n, d, gamma), bin_radius(rho, gamma)
    tau_j = per_column(tau, d, "tau")
    return tau_j, tau_j * math.sqrt(math.log(2.0 / gamma) / math.log(2.0 * d * n / gamma))


def _column_names(names: Sequence[str] | None, d: int) -> tuple[str, ...]:
    if names is None:
        return tuple(f"x{j}" for j in range(d)) if d > 1 else ("x",)
    if len(names) != d:
        raise ParameterError(f"names must have {d} entries, got {len(names)}")
    return tuple(str(s) for s in names)


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

    All feasibility checks and the accountant's check happen before the first noise draw.
    Users with ``identified[u] == False`` (their statistic does not exist, e.g. a singular
    per-user regression) fall in no histogram bin and contribute the private midpoint ``m̂``
    to the mean: n stays the public number of users and each user's influence stays bounded
    by the interval, so the guarantee is unchanged.
    """
    n, d = matrix.shape
    names = names or _column_names(None, d)
    local = options.privacy == "local"
    bound, variant, sample_split = options.bound, options.variant, options.sample_split
    midpoint_share = options.midpoint_share
    budget = split_budget(options.epsilon, options.delta, d, pure=local)
    if variant == "improved":
        bins_half, half_width = tau_bins, tau + 2.0 * tau_bins
    else:
        bins_half, half_width = tau, 3.0 * tau
    n_mid = n // 2 if sample_split else n
    if midpoint_share is None:
        midpoint_share = (
            LOCAL_MIDPOINT_SHARE
            if local
            else default_midpoint_share(n_mid, budget.epsilon, budget.delta)
        )
    if sample_split:  # disjoint halves: parallel composition
        eps_mid = eps_mean = budget.epsilon
    else:
        eps_mid, eps_mean = midpoint_share * budget.epsilon, (1 - midpoint_share) * budget.epsilon
    if local:
        assert bound is not None
        for h, b in zip(bins_half, bound, strict=False):
            local_bins(float(h), float(b))
    else:
        check_histogram_feasible(n_mid, eps_mid, budget.delta)
    if accountant is not None:
        accountant.check(budget.total_epsilon, budget.total_delta)

    if identified is None:
        identified = np.ones(n, dtype=bool)
    order = rng.permutation(n) if sample_split else np.arange(n)
    mid_users, mean_users = (order[:n_mid], order[n_mid:]) if sample_split else (order, order)
    mid_rows = matrix[mid_users[identified[mid_users]]]  # users without a statistic: no bin
    mean_rows = matrix[mean_users]
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
    with np.errstate(invalid="ignore"):  # NaN statistics of unidentified users are replaced
        clipped = np.where(
            identified[mean_users, None],
            np.clip(mean_rows - midpoint, -half_width, half_width),
            0.0,
        )
    release = release_bounded_sum(clipped, half_width, np.full(d, eps_mean), rng, local=local)
    n_mean = mean_rows.shape[0]
    estimate = midpoint + release.total / n_mean
    noise_scale, noise_sd = _noise_summary(release, n_mean, local)
    ledger = _ledger(
        budget, names, n_mid, n_mean, eps_mid, eps_mean, release, noise_scale, local, sample_split
    )
    if accountant is not None:
        accountant.record(ledger)

    def out(a: NDArray[Any]) -> Any:
        return a.item() if squeeze else a

    interval = np.stack([midpoint - half_width, midpoint + half_width], axis=1)
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
        variant=variant,
        sample_split=sample_split,
        names=names,
    )


def _noise_summary(
    release: LatticeRelease, n: int, local: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Laplace-equivalent scale and exact sd of the lattice noise in the released mean."""
    per_draw_scale = release.step / release.rate
    per_draw_var = two_sided_geometric_variance(release.rate) * release.step**2
    sd = np.sqrt(release.draws * per_draw_var) / n
    return (per_draw_scale if local else per_draw_scale / n), sd


def _ledger(
    budget: ColumnBudget,
    names: tuple[str, ...],
    n_mid: int,
    n_mean: int,
    eps_mid: float,
    eps_mean: float,
    release: LatticeRelease,
    noise_scale: NDArray[np.float64],
    local: bool,
    sample_split: bool,
) -> PrivacyLedger:
    entries = []
    for j, name in enumerate(names):
        if local:
            entries.append(
                LedgerEntry(
                    "randomized-response histogram (Alg 7, 9)",
                    f"{name}: midpoint",
                    eps_mid,
                    0.0,
                    2.0,
                    math.nan,
                )
            )
            entries.append(
                LedgerEntry(
                    "local lattice Laplace (Alg 8)",
                    f"{name}: mean",
                    eps_mean,
                    0.0,
                    float(release.sensitivity[j]),
                    float(noise_scale[j]),
                )
            )
        else:
            entries.append(
                LedgerEntry(
                    "stable histogram (Alg 2, 3)",
                    f"{name}: midpoint",
                    eps_mid,
                    budget.delta,
                    2.0 / n_mid,
                    2.0 / (eps_mid * n_mid),
                )
            )
            entries.append(
                LedgerEntry(
                    "lattice Laplace (Alg 1, 4)",
                    f"{name}: mean",
                    eps_mean,
                    0.0,
                    float(release.sensitivity[j]) / n_mean,
                    float(noise_scale[j]),
                )
            )
    composition = budget.method + ("; parallel halves (eq. 1)" if sample_split else "")
    return PrivacyLedger(
        tuple(entries),
        budget.total_epsilon,
        budget.total_delta,
        composition,
        "local" if local else "central",
    )
