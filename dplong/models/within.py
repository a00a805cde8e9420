"""The private within (entity fixed-effects) estimator: released cross products, solved.

The within estimator of ``y_ut = α_u + x_ut'β + e_ut`` removes every user's effect α_u by
demeaning each user's rows, ``X̃_u = X_u - 1 x̄_u'`` and ``ỹ_u = y_u - ȳ_u``, and solves the
pooled normal equations ``(Σ_u X̃_u'X̃_u) β = Σ_u X̃_u'ỹ_u`` — linearmodels'
``PanelOLS(entity_effects=True)``, Stata's ``xtreg, fe``. Both sums are sums of per-user
statistics, ``A_u = X̃_u'X̃_u`` (its p(p+1)/2 unique entries) and ``b_u = X̃_u'ỹ_u``, so the
estimator is a function of column means released by the engine
(:func:`~dplong.privacy.engine.release_means`, through the blocks of
:mod:`dplong.models.base`); everything after the releases is post-processing:

Every user with at least two rows enters per within degree of freedom, ``A_u / (T_u - 1)``
and ``b_u / (T_u - 1)``, with the precision weight ``w_u = min(T_u - 1, T_cap - 1) / (T_cap - 1)``
(:class:`~dplong.privacy.engine.UserWeights`; ``T_cap = max_rows`` public): the weighted means
are ``Σ_u ω_u A_u / Σ_u ω_u (T_u - 1)`` with ``ω_u = min(1, (T_cap - 1)/(T_u - 1))``, so their
ratio is exactly the within estimator when no user has more than ``T_cap`` rows (users with
more count as ``T_cap`` rows: the estimator stays consistent, the weights depending on the
design only). Per degree of freedom every user's statistic has the same scale whatever their
rows, so the engine's radii fit all of them (summed cross products grow with ``T_u`` and an
unbalanced panel would see its long users clipped).

1. **design** block: the weighted means Â and b̂ of ``A_u`` and ``b_u`` (per degree of
   freedom; users with one row have no within variation and no statistic). A coefficient
   whose regressor shows no within variation in Â — its diagonal entry indistinguishable from
   0 given its noise and bias bound, or a private spread at the engine's floor with the mean
   inside the collapsed interval (more than half the users hold it constant, and the engine
   cannot see past them) — is withheld (NaN), decided from released numbers only. The rest
   of Â is repaired to be positive definite: in the scale of its diagonal, eigenvalues below
   the noise level of the released entries (the Frobenius norms of their standard deviations
   and of their bias bounds, which bound how far the noise and the bias move an eigenvalue
   in a typical draw) are raised to it, and the results say so. The pilot ``β₀ = Â⁻¹ b̂``.
2. **influence** block: every user's influence on β at the pilot,
   ``ψ_u = Â⁻¹ (b_u - A_u β₀)``; then ``β̂ = β₀ + ψ̂`` — one Newton step, a linear map of
   released means. Its error is ``e_ψ - Â⁻¹ E (β̃ - β₀)`` (e_ψ the influence's noise, E the
   design's): the design's noise and bias only act through the pilot's error. In the
   coordinates of β each column's noise is that coefficient's noise, and its radius follows
   that coefficient's own sampling spread, so a nearly collinear pair such as ``exper`` and
   ``expersq`` does not pass one column's noise to the other (released as raw residual scores,
   it did, and the skew of ``A_u β`` biased the clipped means). The same release gives the
   sampling error: the second moment of the clipped weighted influence values
   (:func:`~dplong.privacy.engine.release_second_moment`, when the plan affords it; else the
   robust spread) is the diagonal of the cluster-robust sandwich
   ``Â⁻¹ (Σ_u w_u² s_u s_u') Â⁻¹ / Ŵ²`` (s_u the per-degree-of-freedom scores, Ŵ the private
   weighted count), evaluated at the pilot.

Both blocks use an exponential tail for the clipping bias and the radii
(:func:`~dplong.privacy.radius.clipping_bias`): cross products are sums of squares, and
products of demeaned regressors and residuals have heavier tails than a normal.

**Uncertainty.** The privacy noise enters β̂ through the influence and, through the pilot's
error, through the design — a product of two noises (``Â⁻¹ E Â⁻¹ (e_b - E β)``) that a
first-order delta method misses and that dominates when the design block is noisy. So the
noise's law is pushed through the exact post-processing map instead (a parametric bootstrap:
Monte Carlo draws of every released mean's noise, Laplace or Gaussian with the released
standard deviations, around the released Â and b̂, each repaired, solved and stepped as the
fit was; a fixed seed, so a deterministic function of released numbers): its standard
deviation is ``noise_sd``, and its mean (the second-order shift) joins the bias bound. The
clipping bias bounds of the releases propagate linearly, in absolute values (the
influence's directly, the design's through ``Â⁻¹ B |β₀ - β̂|``). The standard errors combine the
sampling and noise terms; intervals use the normal-Laplace law with a Laplace term of the
noise's variance (conservative at the usual levels α <= 0.2: a sum of several Laplace and
Gaussian terms has lighter tails than one Laplace of the same variance), or the normal law
when every release drew discrete Gaussian noise. When the repair had to raise an eigenvalue
of Â, the released design cannot separate the regressors along that direction at this ε, and
the Newton step cannot correct the pilot there: the coefficients loading on it (more than
1 % of the direction) get no estimate (NaN, with a warning).

**Estimands.** Under ``y_ut = α_u + x_ut'β_u + e_ut`` with user-specific slopes β_u, the
within estimator targets ``(Σ_u E A_u)⁻¹ Σ_u E A_u β_u``: the slopes weighted by each user's
within variation of x (``Σ_u A_u`` pools the rows), while the per-user estimator
(:class:`~dplong.LongitudinalOLS` default) targets the plain average of the β_u over the users
who can fit one. They agree when the slopes are common (then both are consistent for β; the
within estimator is the more precise, and it uses users with fewer rows than parameters), and
differ when the slopes vary with how much a user's regressors vary (e.g. with T_u).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.formula import PanelDesign
from dplong.models.base import Block, Statistics, combined_ledger
from dplong.models.reduce import upper_pairs, within_cross_products
from dplong.privacy.engine import SMALLEST_SCALE, Release, UserWeights
from dplong.privacy.options import ReleaseOptions
from dplong.results import PanelResults

__all__ = ["coefficient_names", "within_blocks", "within_results", "within_shares"]

#: The influence block carries β̂'s noise, the design acts through the pilot's error only —
#: but as a product of its noises, so its error grows like the square of its noise and
#: explodes once the released Â stops resolving the regressors. The design gets
#: :data:`DESIGN_USERS` (ε·n per design column) when it can, within :data:`INFLUENCE_WEIGHTS`:
#: an influence column gets 2 to 3 times a design column's budget. Chosen with
#: ``benchmarks/within_and_weights.py`` (2 was best on the wage panel at ε = 4, n ε = 2180; 3
#: at n ε = 4000-5000, where 4 was worse again).
DESIGN_USERS = 240.0
INFLUENCE_WEIGHTS = (2.0, 3.0)
#: A coefficient whose squared loading on the design's raised directions exceeds this share is
#: withheld: the estimate along those directions is the pilot's, not a solution.
COLLINEAR_LOADING = 0.01
#: Monte Carlo draws (and their fixed seed) of the privacy noise pushed through β̂'s map.
NOISE_DRAWS, NOISE_SEED = 4000, 20240613
#: A released spread this small is the engine's floor (:data:`SMALLEST_SCALE`): more than half
#: the users had exactly the midpoint; if the mean is then within the collapsed interval of 0,
#: those users held the regressor constant (``A_jj = 0``) and the rest were clipped away.
FLOOR_SPREAD = SMALLEST_SCALE * 2.0**100
#: A diagonal entry of Â within this many noise sds (plus its bias bound) of 0 is no evidence
#: of within variation.
IDENTIFIED_SDS = 3.0


def coefficient_names(columns: Sequence[str]) -> tuple[str, ...]:
    """The within estimator's parameters: the design's columns without the intercept, which the
    users' effects absorb (a function of the formula only).

    Examples
    --------
    >>> from dplong.models.within import coefficient_names
    >>> coefficient_names(["Intercept", "exper", "expersq"])
    ('exper', 'expersq')
    """
    return tuple(c for c in columns if c != "Intercept")


def within_shares(n: int, p: int, epsilon: float) -> tuple[float, float]:
    """Budget shares of the design and influence blocks for n users, p coefficients and the
    fit's ε (public facts): the design's ``p(p+1)/2 + p`` columns get :data:`DESIGN_USERS` / n
    of ε each, within the bounds :data:`INFLUENCE_WEIGHTS` put on the influence's p columns.

    Examples
    --------
    >>> from dplong.models.within import within_shares
    >>> [round(s, 3) for s in within_shares(545, 2, 4.0)]   # the wage panel: 240 users' worth
    [0.55, 0.45]
    >>> [round(s, 3) for s in within_shares(5000, 2, 1.0)]  # capped: 3 : 1 per column
    [0.455, 0.545]
    """
    design = p * (p + 1) / 2 + p
    low, high = (design / (design + w * p) for w in INFLUENCE_WEIGHTS[::-1])
    share = min(max(DESIGN_USERS * design / (n * epsilon), low), high)
    return share, 1.0 - share


def within_blocks(
    design: PanelDesign, scale: float | None, shares: tuple[float, ...], max_rows: int
) -> list[Block]:
    """The two blocks of the module docstring with their ``shares`` (:func:`within_shares`);
    ``scale`` a stated variance proxy of every released per-user statistic (None: estimated
    privately); ``max_rows`` the public cap ``T_cap`` of the weights."""
    names = coefficient_names(design.columns)
    keep = [j for j, c in enumerate(design.columns) if c != "Intercept"]
    p = len(names)
    pairs = upper_pairs(p)
    k = len(pairs)
    cache: dict[str, NDArray[np.float64]] = {}

    def statistics() -> NDArray[np.float64]:  # private; computed once, on first use
        if "within" not in cache:
            sums = within_cross_products(
                design.y, np.ascontiguousarray(design.X[:, keep]), design.codes, design.n
            )
            freedom = np.bincount(design.codes, minlength=design.n) - 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                cache["within"] = sums / freedom[:, None]  # per within degree of freedom
            cache["weights"] = np.minimum(freedom, max_rows - 1.0) / (max_rows - 1.0)
        return cache["within"]

    def weights() -> UserWeights:
        statistics()
        return UserWeights(cache["weights"], 1.0 / (max_rows - 1.0))

    def proxy(d: int) -> NDArray[np.float64] | None:
        return None if scale is None else np.full(d, scale)

    def design_block(_: tuple[Release, ...]) -> Statistics:
        return Statistics(statistics(), scale=proxy(k + p), user_weights=weights())

    def influence_block(done: tuple[Release, ...]) -> Statistics:
        solution = _Design.of(done[0], p)
        stats = statistics()  # every user's ψ_u = Â⁻¹ (b_u - A_u β₀), n x p
        scores = stats[:, k:] - _times(stats[:, :k], solution.pilot, pairs)
        return Statistics(
            np.asarray(scores @ solution.inverse.T, dtype=np.float64),
            scale=proxy(p),
            user_weights=weights(),
        )

    return [
        Block(
            tuple(f"X'X[{names[i]},{names[j]}]" for i, j in pairs)
            + tuple(f"X'y[{name}]" for name in names),
            shares[0],
            design_block,
            stated_scale=scale is not None,
            weighted=True,
            tail="exponential",
            moment=False,  # nothing reads the design's sampling sd
        ),
        Block(
            tuple(f"influence[{name}]" for name in names),
            shares[1],
            influence_block,
            stated_scale=scale is not None,
            weighted=True,
            tail="exponential",
            count_from=0,  # the same users (two rows or more) with the same weights
        ),
    ]


def within_results(
    releases: Sequence[Release],
    *,
    model: str,
    formula: str,
    nobs_users: int,
    basis: tuple[str, str],
    options: ReleaseOptions,
    assumptions: tuple[str, ...],
    names: tuple[str, ...],
) -> PanelResults:
    """The results of a within fit from its two releases (module docstring): β̂, its
    sampling and noise standard deviations, the propagated bias bound, notes."""
    design_release, influence_release = releases
    p = len(names)
    k = p * (p + 1) // 2
    solution = _Design.of(design_release, p)
    beta = solution.step(influence_release.estimate)
    step = np.nan_to_num(solution.pilot - beta)
    sampling_sd = influence_release.sampling_sd
    noise_sd, shift = _noise_law(solution, design_release, influence_release)
    design_bias = _symmetric(np.nan_to_num(design_release.bias[:k]), p)
    bias = (
        np.nan_to_num(influence_release.bias)
        + np.abs(solution.inverse) @ (design_bias @ np.abs(step))
        + np.abs(shift)
    )
    # along a raised direction the step cannot correct the pilot: no estimate is claimed there
    withheld = ~solution.identified | solution.collinear | ~np.isfinite(beta)
    # a number without a finite noise or sampling sd would claim a precision nobody knows (a
    # release it rests on was withheld or missed the data): withheld too
    unknown = ~withheld & ~(np.isfinite(noise_sd) & np.isfinite(sampling_sd))
    withheld = withheld | unknown
    beta = np.where(withheld, np.nan, beta)
    gaussian = {design_release.noise_kind, influence_release.noise_kind} == {"gaussian"}
    index = pd.Index(names)

    def series(values: NDArray[np.float64], label: str) -> pd.Series:
        out: pd.Series = pd.Series(np.where(withheld, np.nan, values), index=index, name=label)
        return out

    bad_events = sum(float(np.sum(r.bad_events)) for r in (design_release, influence_release))
    unsure = [names[int(j)] for j in np.flatnonzero(unknown)]
    lost = (
        [
            f"No estimate (NaN) for {unsure}: a release it rests on was withheld or missed the "
            "data, so its error cannot be stated. Raise epsilon or use fewer regressors."
        ]
        if unsure
        else []
    )
    notes = tuple(
        dict.fromkeys(
            [note for r in releases for note in r.notes] + list(solution.notes(names)) + lost
        )
    )
    users = pd.Series(
        design_release.users, index=["users with a statistic (weighted)"], name="users"
    )
    return PanelResults(
        model=model,
        formula=formula,
        params=pd.Series(beta, index=index, name="params"),
        noise_scale=series(noise_sd if gaussian else noise_sd / math.sqrt(2.0), "noise scale"),
        noise_sd=series(noise_sd, "noise sd"),
        noise_law="gaussian" if gaussian else "laplace",
        sampling_sd=series(sampling_sd, "sampling sd"),
        bias=series(bias, "bias"),
        projection_interval=pd.DataFrame(np.nan, index=index, columns=["lower", "upper"]),
        failed=pd.Series(withheld, index=index, name="failed"),
        privacy=combined_ledger(releases, options),
        nobs_users=nobs_users,
        users=users,
        users_sd=float(design_release.users_sd),
        variant=design_release.variant,
        assumptions=assumptions,
        warnings=notes,
        gamma=options.gamma,
        bad_events=pd.Series(min(1.0, bad_events), index=index, name="bad events"),
        basis=basis[options.local],
    )


@dataclass(frozen=True)
class _Design:
    """The released design Â after the public identification rule and the repair: its
    inverse (zero rows and columns for withheld coefficients)."""

    repaired: NDArray[np.float64]
    inverse: NDArray[np.float64]
    identified: NDArray[np.bool_]
    floored: int
    collinear: NDArray[np.bool_]
    constant: tuple[int, ...]
    pilot: NDArray[np.float64]
    root: NDArray[np.float64]
    level: float

    @classmethod
    def of(cls, release: Release, p: int) -> _Design:
        """Post-processing of the design block's release (module docstring, step 1)."""
        k = p * (p + 1) // 2
        a = _symmetric(release.estimate[:k], p)
        sd = _symmetric(release.noise_sd[:k], p)
        bias = _symmetric(release.bias[:k], p)
        diagonal = np.diag(a)
        spread = np.diag(_symmetric(np.sqrt(release.scale[:k]), p))
        widths = (release.interval[:k, 1] - release.interval[:k, 0]) / 2.0
        half_width = np.diag(_symmetric(widths, p))
        # the engine's spread collapsed to its floor and the mean to within that collapsed
        # interval of 0: most users hold the regressor constant (their A_jj is exactly 0)
        constant = (spread <= FLOOR_SPREAD) & (diagonal <= half_width)
        identified = (
            np.isfinite(a).all()
            & np.isfinite(diagonal)
            & (diagonal > IDENTIFIED_SDS * np.diag(sd) + np.diag(bias))
            & ~constant
        )
        keep = np.flatnonzero(identified)
        repaired = np.zeros((p, p))
        inverse = np.zeros((p, p))
        floored, root, level = 0, np.ones(keep.size), 0.0
        collinear = np.zeros(p, dtype=bool)
        if keep.size:
            sub = a[np.ix_(keep, keep)]
            root = np.sqrt(np.diag(sub))
            scaling = np.outer(root, root)
            level = float(
                np.sqrt(np.sum((sd[np.ix_(keep, keep)] / scaling) ** 2))
                + np.sqrt(np.sum((bias[np.ix_(keep, keep)] / scaling) ** 2))
            )
            values, vectors = np.linalg.eigh(sub / scaling)
            raised = vectors[:, values < level]
            floored = raised.shape[1]
            # coefficients with a share of more than 1 % on a raised direction
            collinear[keep] = np.sum(raised**2, axis=1) > COLLINEAR_LOADING
            fixed = _floor(sub, root, level)
            repaired[np.ix_(keep, keep)] = fixed
            inverse[np.ix_(keep, keep)] = np.linalg.inv(fixed)
        b = np.where(identified, release.estimate[k:], 0.0)
        return cls(
            repaired,
            inverse,
            identified,
            floored,
            collinear,
            tuple(int(j) for j in np.flatnonzero(constant)),
            np.nan_to_num(inverse @ b),
            root,
            level,
        )

    def repair(self, matrices: NDArray[np.float64]) -> NDArray[np.float64]:
        """The same repair (eigenvalues floored at the noise level, in the scale of the
        released diagonal) applied to other matrices of the identified coefficients."""
        return _floor(matrices, self.root, self.level)

    def step(self, influence: NDArray[np.float64]) -> NDArray[np.float64]:
        """``β̂ = β₀ + ψ̂`` for the released mean influence ψ̂ (that of withheld coefficients is
        ignored; a NaN among the others makes every coefficient NaN)."""
        r = np.where(self.identified, influence, 0.0)
        return np.asarray(self.pilot + r, dtype=np.float64)

    def notes(self, names: Sequence[str]) -> tuple[str, ...]:
        """Reliability notes from the released design (public: functions of DP outputs)."""
        out: list[str] = []
        withheld = [names[int(j)] for j in np.flatnonzero(~self.identified)]
        if withheld:
            held = [names[j] for j in self.constant]
            out.append(
                f"No within estimate (NaN) for {withheld}: the released design shows no "
                "within-user variation there"
                + (
                    f" (for {held}, more than half the users hold the regressor constant, "
                    "which the private spread cannot see past)"
                    if held
                    else ""
                )
                + ". Time-invariant regressors are absorbed by the user effects; for rarely "
                "changing ones raise epsilon or use the per-user estimator's identification."
            )
        if self.floored:
            listed = [names[int(j)] for j in np.flatnonzero(self.collinear)]
            out.append(
                f"No estimate (NaN) for {listed}: the released design is nearly singular "
                f"along them ({self.floored} direction(s) within its privacy noise), so the "
                "data cannot separate these regressors at this epsilon. Raise epsilon or drop "
                "a collinear term."
            )
        return tuple(out)


def _floor(
    matrices: NDArray[np.float64], root: NDArray[np.float64], level: float
) -> NDArray[np.float64]:
    """Symmetric matrices (or a stack) with the eigenvalues of ``D⁻¹ A D⁻¹`` raised to
    ``level``, ``D = diag(root)``: positive definite, and scale-free in the regressors' units."""
    scaling = np.outer(root, root)
    scaled = matrices / scaling
    values, vectors = np.linalg.eigh((scaled + np.swapaxes(scaled, -1, -2)) / 2.0)
    floored = (vectors * np.maximum(values, level)[..., None, :]) @ np.swapaxes(vectors, -1, -2)
    return np.asarray(floored * scaling)


def _symmetric(vech: NDArray[np.float64], p: int) -> NDArray[np.float64]:
    """The symmetric p x p matrix of the unique entries in :func:`upper_pairs` order."""
    upper = np.triu_indices(p)
    out = np.zeros((p, p))
    out[upper] = vech
    out[upper[::-1]] = vech
    return out


def _times(
    vech: NDArray[np.float64], beta: NDArray[np.float64], pairs: list[tuple[int, int]]
) -> NDArray[np.float64]:
    """Every user's ``A_u β`` from their unique entries (n x p): a loop over the p(p+1)/2
    entries, vectorised over users."""
    out = np.zeros((vech.shape[0], beta.size))
    for column, (i, j) in enumerate(pairs):
        out[:, i] += vech[:, column] * beta[j]
        if i != j:
            out[:, j] += vech[:, column] * beta[i]
    return out


def _noise_law(
    solution: _Design, design: Release, influence: Release
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The standard deviation and mean of the privacy noise in β̂, by Monte Carlo through the
    post-processing map (module docstring): :data:`NOISE_DRAWS` draws of every released
    mean's noise (Laplace or Gaussian with the released standard deviations) around the
    released Â, b̂, each pushed through the repair, the pilot and the step. A fixed seed: a
    deterministic function of released numbers."""
    p = solution.identified.size
    k = p * (p + 1) // 2
    keep = np.flatnonzero(solution.identified)
    sd, mean = np.zeros(p), np.zeros(p)
    if keep.size == 0 or not np.isfinite(solution.pilot).all():
        return sd, mean
    rng = np.random.default_rng(NOISE_SEED)
    design_noise = _draws(rng, np.nan_to_num(design.noise_sd), design.noise_kind)
    influence_noise = _draws(rng, np.nan_to_num(influence.noise_sd), influence.noise_kind)
    index = np.ix_(keep, keep)
    truth_a = solution.repaired[index]
    truth_b = truth_a @ solution.pilot[keep]
    noise_a = np.zeros((NOISE_DRAWS, p, p))
    upper = np.triu_indices(p)
    noise_a[:, upper[0], upper[1]] = design_noise[:, :k]
    noise_a[:, upper[1], upper[0]] = design_noise[:, :k]
    drawn = solution.repair(truth_a + noise_a[:, keep][:, :, keep])
    pilot = np.linalg.solve(drawn, (truth_b + design_noise[:, k:][:, keep])[..., None])
    residual = truth_b[None, :, None] - truth_a @ pilot
    beta = pilot + np.linalg.solve(drawn, residual) + influence_noise[:, keep][..., None]
    errors = beta[..., 0] - solution.pilot[keep]
    sd[keep], mean[keep] = errors.std(axis=0), errors.mean(axis=0)
    return sd, mean


def _draws(rng: np.random.Generator, sd: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    """:data:`NOISE_DRAWS` draws of independent noise with these standard deviations: Laplace
    (the lattice Laplace to its precision), or Gaussian (the discrete Gaussian, likewise)."""
    if kind == "gaussian":
        return rng.normal(0.0, 1.0, (NOISE_DRAWS, sd.size)) * sd
    return rng.laplace(0.0, 1.0 / math.sqrt(2.0), (NOISE_DRAWS, sd.size)) * sd
