"""Seeded Monte Carlo checks of ``dplong.LongitudinalOLS`` against §5.3 of the paper.

Paper: ``papers/dp-dependent-data.md`` — Def 5.13 (user-level linear model), Lemma 5.14
(per-user OLS/GLS averages: unbiased, weighting helps), Lemma 5.15 (concentration of β̂_u) and
Cor 5.16 (error ≲ √(pϑσ²/(nTθ²)) + √(p²ϑσ²/(θ²Tn²ε²))).

Simulation (Def 5.13). Users u = 1..n, rows t = 0..T_u-1, p = 3 coefficients
(``y ~ x1 + x2`` with intercept), β = (1.0, 0.5, -0.7), errors a stationary Gaussian AR(1) within
each user: Σ_u = σ² (φ^{|s-t|}) (Toeplitz), σ = 1, users independent. Regressors:

    x1 = cos(2πt/T_u + ω_u) + a r1_ut,   x2 = sin(2πt/T_u + ω_u) + a r2_ut,

ω_u ~ U(0, 2π), r Rademacher, a = 0.3. The sinusoids are orthogonal to each other and to the
intercept over any T_u >= 3 rows (norms² T_u and T_u/2), and the perturbation has
‖E‖_F = a√(2T_u), so √T_u (1/√2 - a√2) <= σ(X_u) <= √T_u (1 + a√2): θ I ⪯ X_u'X_u / T_u ⪯ ϑ I
with θ = 0.08, ϑ = 2.03 for every user with at least p rows. The eigenvalue condition of
Lemma 5.15 holds, every such β̂_u exists and, given X_u, is Gaussian with covariance at most
ϑ‖Σ_u‖/(θ²T_u) in operator norm (a sub-Gaussian scale mixture).

Scale. ``scale`` is the true per-coordinate variance of one user's coefficient,
``v_j = E_X[Cov(β̂_u | X_u)_jj]`` (law of total variance; E[β̂_u | X_u] = β): the exact
conditional covariance ``(X'X)^{-1} X'ΣX (X'X)^{-1}`` (OLS) or ``(X'Σ^{-1}X)^{-1}`` (GLS with the
true φ) averaged over 40,000 independent design draws (:func:`coefficient_variance`): a pilot
over designs only, with relative Monte Carlo error <= 0.4 %, carried into every tolerance. In
these tests it plays the role of the analyst's public assumption.

Exact predictions. The projection interval m̂ ± (τ + 2τ') has half-width ≈ 10.7√v and its
midpoint is within τ' = 2.7√v of β, while β̂_u has conditional sd <= 2.5√v for every design
(1.0-1.3√v typically): even with the worst midpoint offset the expected number of clipped users
is < 2e-3 per release (computed over 2e5 designs), and a clipped user would move the mean by a
negligible amount. So the release is ``mean_u β̂_u + ξ``, ξ the lattice Laplace noise,
independent of the data, whose exact sd the package reports (``noise_sd``, a public function of
n, ε, δ and scale; checked against an independent re-derivation of Alg 5's calibration in
:func:`laplace_noise_variance`). Hence MSE_j = v_j / n + noise_sd_j², and since noise_sd_j² ∝ v_j
with a factor that only depends on (n, ε, p), MSE(n, T) = Σ_j v_j(T) · g(n): the T- and
n-dependence separate exactly.

Tolerances. Every Monte Carlo quantity is a mean over R independent replications; its standard
error (SE) is estimated from the replications themselves (sample sd / √R, or the delta method
for ratios of means), which needs no model of the error's kurtosis (the errors are mixtures of
Gaussian and Laplace terms). Four SEs is the default tolerance: a two-sided normal tail of
6e-5 per assertion, so the ~80 Monte Carlo assertions of this file have a false-alarm rate
below 0.5 % for an arbitrary seed, while a factor √2 in the noise sd (a doubled noise
variance), a 1/n instead of 1/n² privacy term or a wrong weighting are many SEs away. The
exact treatment of users without a coefficient is checked without Monte Carlo error by the
noise-off reference test. Seeds are fixed; every test also passed with 3-4 other seeds (offsets
of +1000..+4000), and the comments quote the numbers measured with the fixed seeds.
Runtime (2 shared cores, one process): fast tests ~12 s, ``@pytest.mark.slow`` ~40 s.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

import dplong

FORMULA = "y ~ x1 + x2"
NAMES = ["Intercept", "x1", "x2"]
BETA = np.array([1.0, 0.5, -0.7])
P = BETA.size
SIGMA = 1.0
DESIGN_NOISE = 0.3  # a: Rademacher perturbation of the sinusoidal regressors
GAMMA = 0.05  # the package's default failure probability behind τ and τ'
Z_TOL = 4.0  # tolerance in Monte Carlo standard errors (see the module docstring)
PILOT_DRAWS = 40_000
PILOT_SEED = 20_240_513
NOISE_OFF = {"epsilon": 1e300, "delta": 0.5}  # every geometric draw is exactly 0


# --------------------------------------------------------------------------------------------
# Simulation of Def 5.13 (vectorised numpy)
# --------------------------------------------------------------------------------------------


def draw_design(rng: np.random.Generator, rows: np.ndarray, t_max: int) -> np.ndarray:
    """(n, t_max, p) regressors [1, x1, x2]; entries at t >= T_u are unused."""
    n = rows.size
    t = np.arange(t_max)
    angle = 2.0 * np.pi * t / rows[:, None] + rng.uniform(0.0, 2.0 * np.pi, size=(n, 1))
    signs = 2.0 * rng.integers(0, 2, size=(2, n, t_max)) - 1.0
    X = np.empty((n, t_max, P))
    X[..., 0] = 1.0
    X[..., 1] = np.cos(angle) + DESIGN_NOISE * signs[0]
    X[..., 2] = np.sin(angle) + DESIGN_NOISE * signs[1]
    return X


def ar1_errors(rng: np.random.Generator, n: int, t_max: int, phi: float) -> np.ndarray:
    """Stationary AR(1) rows: Cov(e_s, e_t) = σ² φ^{|s-t|}; any prefix is stationary too."""
    innov = math.sqrt(1.0 - phi**2)
    z = rng.standard_normal((n, t_max))
    z[:, 0] /= innov  # e_0 ~ N(0, 1)
    return SIGMA * lfilter([innov], [1.0, -phi], z, axis=1)


@dataclass
class Panel:
    X: np.ndarray  # (rows, p), sorted by user then time
    y: np.ndarray
    user: np.ndarray
    t: np.ndarray
    rows: np.ndarray  # T_u per user

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {"user": self.user, "t": self.t, "x1": self.X[:, 1], "x2": self.X[:, 2], "y": self.y}
        )


def simulate_panel(rng: np.random.Generator, rows: np.ndarray, phi: float) -> Panel:
    """One data set of Def 5.13 with T_u = rows[u] rows for user u."""
    n, t_max = rows.size, int(rows.max())
    X = draw_design(rng, rows, t_max)
    y = X @ BETA + ar1_errors(rng, n, t_max, phi)
    mask = np.arange(t_max) < rows[:, None]  # row-major: users in order, times ascending
    return Panel(
        X=X[mask],
        y=y[mask],
        user=np.repeat(np.arange(n), rows),
        t=np.broadcast_to(np.arange(t_max), (n, t_max))[mask],
        rows=rows,
    )


def working_correlation(T: int, kind: str, param: float) -> np.ndarray:
    k = np.arange(T)
    if kind == "ar1":
        return param ** np.abs(k[:, None] - k[None, :])
    if kind == "exchangeable":
        return (1.0 - param) * np.eye(T) + param
    return np.eye(T)


def per_user_fits(panel: Panel, kind: str = "independence", param: float = 0.0) -> np.ndarray:
    """β̂_u (or β̂_wu with working correlation R) for every user by explicit R^{-1}; NaN rows
    for users with fewer than p rows. Independent of the package's Prais–Winsten code."""
    n = panel.rows.size
    starts = np.concatenate([[0], np.cumsum(panel.rows)[:-1]])
    beta = np.full((n, P), np.nan)
    for T in np.unique(panel.rows):
        if T < P:
            continue
        users = np.flatnonzero(panel.rows == T)
        idx = starts[users][:, None] + np.arange(T)
        Xu, yu = panel.X[idx], panel.y[idx]  # (k, T, p), (k, T)
        WX = np.linalg.inv(working_correlation(int(T), kind, param)) @ Xu
        xtwx = np.swapaxes(WX, 1, 2) @ Xu
        xtwy = np.einsum("utj,ut->uj", WX, yu)
        beta[users] = np.linalg.solve(xtwx, xtwy[..., None])[..., 0]
    return beta


# --------------------------------------------------------------------------------------------
# Theory: exact per-user variance (pilot over designs) and the noise calibration of Alg 5
# --------------------------------------------------------------------------------------------


@functools.cache
def coefficient_variance(T: int, phi: float, weighted: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate Var(β̂_u) (or Var(β̂_wu) with the true φ) and its pilot SE.

    ``E_X[Cov(β̂_u | X)]`` with the exact conditional covariance, averaged over PILOT_DRAWS
    designs from an independent seed (Rao–Blackwellised pilot: no error is simulated).
    """
    rng = np.random.default_rng([PILOT_SEED, T, round(1000 * phi), int(weighted)])
    X = draw_design(rng, np.full(PILOT_DRAWS, T), T)
    cov = SIGMA**2 * working_correlation(T, "ar1", phi)
    Xt = np.swapaxes(X, 1, 2)
    if weighted:
        c = np.linalg.inv(Xt @ np.linalg.inv(cov) @ X)
    else:
        inv = np.linalg.inv(Xt @ X)
        c = inv @ (Xt @ cov @ X) @ inv
    diag = np.einsum("uii->ui", c)
    return diag.mean(axis=0), diag.std(axis=0, ddof=1) / math.sqrt(PILOT_DRAWS)


def laplace_noise_variance(v: np.ndarray, n: int, epsilon: float) -> np.ndarray:
    """Variance of the privacy noise in each released coefficient, re-derived from Alg 5.

    δ = 1/n², basic composition over the p columns (ε/p, δ/p each: advanced composition needs
    p ≫ 3); the midpoint gets the documented share max(0.05, 2 log(2/δ_c) / ((n/4 - 1) ε_c))
    (capped at ½), the mean the rest, ε_m. Projection half-width w = τ + 2τ' with
    τ = √(2v log(2pn/γ)), τ' = √(2v log(2/γ)) (§7.1.2); the clipped sum has sensitivity 2w, so
    the mean gets Laplace(2w / (n ε_m)) noise of variance 2 (2w / (n ε_m))². This is Cor 5.16's
    privacy term: ∝ v log(pn) / (n² ε²), with v ≍ ϑσ²/(θ²T) by Lemma 5.15.
    """
    delta = 1.0 / n**2
    eps_c, delta_c = epsilon / P, delta / P
    share = min(max(2.0 * math.log(2.0 / delta_c) / ((n / 4.0 - 1.0) * eps_c), 0.05), 0.5)
    eps_mean = (1.0 - share) * eps_c
    w = np.sqrt(2.0 * v) * (
        math.sqrt(math.log(2.0 * P * n / GAMMA)) + 2.0 * math.sqrt(math.log(2.0 / GAMMA))
    )
    return 2.0 * (2.0 * w / (n * eps_mean)) ** 2


# --------------------------------------------------------------------------------------------
# Monte Carlo helpers
# --------------------------------------------------------------------------------------------


def rngs(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    data_seq, noise_seq = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(data_seq), np.random.default_rng(noise_seq)


def ratio_and_se(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """mean(a) / mean(b) over paired replications; delta-method SE √(Var(a - ρb)/R) / mean(b)."""
    rho = float(a.mean() / b.mean())
    return rho, float((a - rho * b).std(ddof=1) / math.sqrt(a.size) / b.mean())


def fit(panel: Panel, scale: np.ndarray, rng: np.random.Generator, **kwargs):
    corr = {k: kwargs.pop(k) for k in ("correlation", "correlation_param") if k in kwargs}
    model = dplong.LongitudinalOLS.from_formula(
        FORMULA, panel.frame(), groups="user", time="t", **corr
    )
    return model.fit(scale=scale, random_state=rng, **{"epsilon": 1.0, **kwargs})


def _sq(errors: np.ndarray) -> np.ndarray:
    return np.sum(errors**2, axis=-1)


# --------------------------------------------------------------------------------------------
# 0. The numpy reference is the package's non-private estimator on these data sets
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "param"), [("independence", 0.0), ("ar1", 0.95), ("exchangeable", 0.3)]
)
def test_noise_off_fit_is_mean_of_numpy_per_user_fits(kind, param):
    # Unbalanced T_u in 1..15 (so some users have fewer rows than p = 3) and rows shuffled: the
    # package must sort by (user, t), fit every identified user and give every other user the
    # private midpoint m̂ (the centre of the released projection interval). With ε = 1e300 the
    # release is that exact mean (fixed-point rounding ~1e-16 w): tolerance 1e-9.
    rng = np.random.default_rng(11)
    rows = rng.integers(1, 16, size=400)
    panel = simulate_panel(rng, rows, phi=0.95)
    frame = panel.frame().sample(frac=1.0, random_state=3).reset_index(drop=True)
    model = dplong.LongitudinalOLS.from_formula(
        FORMULA, frame, groups="user", time="t", correlation=kind, correlation_param=param
    )
    res = model.fit(scale=1.0, random_state=0, **NOISE_OFF)
    beta_u = per_user_fits(panel, kind, param)
    short = np.isnan(beta_u[:, 0])
    assert 20 < short.sum() < 100  # T_u in {1, 2}: about 2/15 of the users
    midpoint = res.projection_interval.mean(axis=1).to_numpy()
    expected = (np.nansum(beta_u, axis=0) + short.sum() * midpoint) / rows.size
    np.testing.assert_allclose(res.params.to_numpy(), expected, rtol=0, atol=1e-9)
    assert list(res.params.index) == NAMES and res.nobs_users == rows.size


# --------------------------------------------------------------------------------------------
# 1. Cor 5.16's privacy term: the reported noise is Alg 5's calibration (no Monte Carlo)
# --------------------------------------------------------------------------------------------


def test_noise_sd_is_alg5_calibration_and_scales_like_cor_5_16():
    # noise_sd is public: a function of (n, ε, δ, scale) only. Compare it with the independent
    # derivation of laplace_noise_variance: equal up to the lattice rounding of the sensitivity
    # (< 0.05 % in scale, module docstring of dplong.privacy.noise): rtol 1e-3 on the variance.
    rng = np.random.default_rng(5)
    noise_var = {}
    for n in (1_000, 4_000):
        for T in (5, 20):
            v = coefficient_variance(T, 0.5, False)[0]
            res = fit(simulate_panel(rng, np.full(n, T), 0.5), v, rng, refine=False)
            assert "basic" in res.privacy.composition and res.privacy.epsilon <= 1.0
            assert res.privacy.delta == pytest.approx(1.0 / n**2)
            predicted = laplace_noise_variance(v, n, 1.0)
            np.testing.assert_allclose(res.noise_sd.to_numpy() ** 2, predicted, rtol=1e-3)
            np.testing.assert_allclose(res.sampling_sd.to_numpy() ** 2, v / n, rtol=1e-12)
            noise_var[n, T] = res.noise_sd.to_numpy() ** 2 / v
    # Per unit of v ≍ 1/T, the noise variance does not depend on T, and falls like 1/n²
    # times (log n)·(midpoint share) factors: ×16 from n = 1000 to 4000, times 0.948 for the
    # log in τ² and 2.03 because the midpoint's share of ε falls from 0.376 to 0.110: 30.83.
    # (Relative to the sampling variance v/n, the noise is 19.5x at n = 1000, 2.53x at 4000.)
    np.testing.assert_allclose(noise_var[1_000, 5], noise_var[1_000, 20], rtol=1e-3)
    np.testing.assert_allclose(noise_var[1_000, 5] / noise_var[4_000, 5], 30.83, rtol=1e-3)


# --------------------------------------------------------------------------------------------
# 2. Coverage of conf_int(0.05) when scale is the true per-user variance
# --------------------------------------------------------------------------------------------


def check_coverage(seed: int, reps: int, n: int = 1_000, T: int = 10, phi: float = 0.95):
    v = coefficient_variance(T, phi, False)[0]
    data_rng, noise_rng = rngs(seed)
    covered = np.zeros((reps, P), dtype=bool)
    for i in range(reps):
        res = fit(simulate_panel(data_rng, np.full(n, T), phi), v, noise_rng)
        ci = res.conf_int(0.05).to_numpy()
        covered[i] = (ci[:, 0] <= BETA) & (BETA <= ci[:, 1])
    return covered


def test_conf_int_covers_true_beta():
    reps = 500
    covered = check_coverage(seed=71, reps=reps)
    rate = covered.mean(axis=0)
    # The interval is exact up to the CLT over 1000 users and the 0.4 % pilot error in the
    # scale: nominal 95 %. Binomial SE per coefficient √(0.95·0.05/500) = 0.0097: each rate
    # must lie in 0.95 ± 4 SE = [0.911, 0.989] (too wide intervals fail too).
    se = math.sqrt(0.95 * 0.05 / reps)
    assert np.all(np.abs(rate - 0.95) <= Z_TOL * se), rate
    # Pooled over the 3 coefficients (their errors are uncorrelated: orthogonal design,
    # independent noise), SE 0.0056: at least 93 % is 3.5 SE below nominal.
    # Measured: 0.944, 0.964, 0.954 (pooled 0.954); other seeds 0.938-0.964 per coefficient.
    assert covered.mean() >= 0.93, rate


# --------------------------------------------------------------------------------------------
# 3. Lemma 5.14 (iv): weighting by the true AR(1) correlation reduces the MSE
# --------------------------------------------------------------------------------------------

WEIGHT_PHI = 0.95  # strong serial correlation (the paper's Toeplitz(0.95) of §7)


def check_weighting(seed: int, reps: int, n: int, T: int, **fit_args) -> dict:
    """Paired MSEs of the unweighted (OLS) and weighted (GLS, true φ) releases, same data."""
    vu, seu = coefficient_variance(T, WEIGHT_PHI, False)
    vw, sew = coefficient_variance(T, WEIGHT_PHI, True)
    data_rng, noise_rng = rngs(seed)
    eu, ew = np.empty((reps, P)), np.empty((reps, P))
    for i in range(reps):
        panel = simulate_panel(data_rng, np.full(n, T), WEIGHT_PHI)
        res_u = fit(panel, vu, noise_rng, **fit_args)
        res_w = fit(
            panel, vw, noise_rng, correlation="ar1", correlation_param=WEIGHT_PHI, **fit_args
        )
        eu[i], ew[i] = res_u.params.to_numpy() - BETA, res_w.params.to_numpy() - BETA
    out = {"noise_sd_u": res_u.noise_sd.to_numpy(), "noise_sd_w": res_w.noise_sd.to_numpy()}
    out["mse_u"] = (eu**2).mean(axis=0)
    out["mse_w"] = (ew**2).mean(axis=0)
    out["pred_u"] = vu / n + out["noise_sd_u"] ** 2
    out["pred_w"] = vw / n + out["noise_sd_w"] ** 2
    out["rel_se_u"] = (eu**2).std(axis=0, ddof=1) / math.sqrt(reps) / out["mse_u"]
    out["rel_se_w"] = (ew**2).std(axis=0, ddof=1) / math.sqrt(reps) / out["mse_w"]
    # Paired ratios per coefficient, of the two slopes together and of all three (Lemma 5.14
    # (iv) is a Loewner ordering, so every coordinate and every sum is reduced).
    groups = {"Intercept": [0], "x1": [1], "x2": [2], "slopes": [1, 2], "all": [0, 1, 2]}
    out["ratios"] = {}
    for name, cols in groups.items():
        ratio, se = ratio_and_se(_sq(ew[:, cols]), _sq(eu[:, cols]))
        predicted = vw[cols].sum() / vu[cols].sum()  # noise var ∝ scale: same with noise
        pilot = math.hypot(
            math.sqrt(np.sum(sew[cols] ** 2)) / vw[cols].sum(),
            math.sqrt(np.sum(seu[cols] ** 2)) / vu[cols].sum(),
        )
        out["ratios"][name] = {"ratio": ratio, "se": se, "pred": predicted, "pilot": pilot}
    return out


def _check_weighting_ratios(out: dict, resolved: tuple[str, ...], smaller: tuple[str, ...]) -> None:
    for name, r in out["ratios"].items():
        # Paired ratio against Σv_w/Σv_u; SE: delta method over replications plus the pilot's
        # relative error (times the ratio).
        tol = Z_TOL * math.hypot(r["se"], r["pilot"] * r["pred"])
        assert abs(r["ratio"] - r["pred"]) <= tol, (name, r)
        assert r["pred"] < 1.0, (name, r)  # the theory: weighting reduces every coordinate
        if name in resolved:  # predicted gain >= 8 SE: significantly smaller at 4 SE
            assert r["ratio"] + Z_TOL * r["se"] < 1.0, (name, r)
        if name in smaller:  # predicted gain >= 5 SE: the point estimate is below 1
            assert r["ratio"] < 1.0, (name, r)
    for model in ("u", "w"):
        # Absolute MSE per coefficient against v/n + noise_sd² (log scale, relative SE plus
        # the pilot's <= 0.4 %).
        err = np.abs(np.log(out[f"mse_{model}"] / out[f"pred_{model}"]))
        assert np.all(err <= Z_TOL * (out[f"rel_se_{model}"] + 0.004)), (model, out)


def test_weighted_beats_unweighted_noise_off():
    # Noise off (ε = 1e300): the releases are the non-private averages of β̂_u and β̂_wu. At
    # φ = 0.95, T = 10 the true variances are v_u = (0.852, 0.081, 0.080) and
    # v_w = (0.832, 0.035, 0.035): ratios 0.976 (intercept), 0.433 (slopes) and 0.890 (sum,
    # dominated by the intercept). Paired over the same 200 data sets the ratio SEs are
    # 0.034-0.042 (each slope), 0.027 (slopes), 0.020 (sum) and 0.020 (intercept: its errors
    # differ by an independent part of variance v_u - v_w = 2.4 % of v_u, so a 2.4 % gain
    # would need ~3000 replications to resolve; it is only checked against the prediction).
    # Measured: x1 0.339 ± 0.034, x2 0.465 ± 0.042, slopes 0.401 ± 0.027, sum 0.908 ± 0.020,
    # intercept 0.998 ± 0.020.
    out = check_weighting(seed=81, reps=200, n=1_000, T=10, **NOISE_OFF)
    assert np.all(out["noise_sd_u"] == 0.0) and np.all(out["noise_sd_w"] == 0.0)
    _check_weighting_ratios(out, resolved=("x1", "x2", "slopes"), smaller=("all",))


# --------------------------------------------------------------------------------------------
# 4. Unbalanced panels with a few users that have fewer rows than parameters
# --------------------------------------------------------------------------------------------

UNBALANCED_T = np.arange(3, 16)  # T_u uniform on {3, ..., 15} for identified users


def unbalanced_variance(phi: float) -> tuple[np.ndarray, np.ndarray]:
    """Variance of β̂_u for a user with T_u uniform on UNBALANCED_T (mixture), and its SE."""
    pilots = [coefficient_variance(int(T), phi, False) for T in UNBALANCED_T]
    v = np.mean([m for m, _ in pilots], axis=0)
    se = np.sqrt(np.sum([s**2 for _, s in pilots], axis=0)) / len(pilots)
    return v, se


def check_unbalanced(seed: int, reps: int, n: int, short: int, phi: float = 0.95) -> dict:
    v, v_se = unbalanced_variance(phi)
    data_rng, noise_rng = rngs(seed)
    err, bias, pred = np.empty((reps, P)), np.empty((reps, P)), np.empty((reps, P))
    for i in range(reps):
        rows = data_rng.integers(3, 16, size=n)
        rows[data_rng.choice(n, size=short, replace=False)] = data_rng.integers(1, 3, size=short)
        res = fit(simulate_panel(data_rng, rows, phi), v, noise_rng)
        midpoint = res.projection_interval.mean(axis=1).to_numpy()
        err[i] = res.params.to_numpy() - BETA
        # Identified users average to β; the `short` others contribute the midpoint m̂.
        bias[i] = short / n * (midpoint - BETA)
        pred[i] = (n - short) / n**2 * v + res.noise_sd.to_numpy() ** 2 + bias[i] ** 2
    return {
        "v": v,
        "v_rel_se": v_se / v,
        "mean_err": err.mean(axis=0),
        "se_err": err.std(axis=0, ddof=1) / math.sqrt(reps),
        "corrected": (err - bias).mean(axis=0),
        "se_corrected": (err - bias).std(axis=0, ddof=1) / math.sqrt(reps),
        "bias": bias.mean(axis=0),
        "mse": (err**2).mean(axis=0),
        "mse_rel_se": (err**2).std(axis=0, ddof=1) / math.sqrt(reps) / (err**2).mean(axis=0),
        "pred": pred.mean(axis=0),
    }


def test_unbalanced_panel_with_unidentified_users():
    # n = 4000 users, T_u uniform on {3..15}, 10 of them (0.25 %) with T_u in {1, 2} < p:
    # those contribute the private midpoint m̂, so E[release] = β + (10/n)(m̂ - β). m̂ is the
    # centre 2τ'k of the histogram's fullest bin (half-width τ' = 2.72√v: 2.53 for the
    # intercept, 0.755 for the slopes), here 0 for all three coefficients: the short users
    # shrink every coefficient towards 0 by 0.25 % — biases (-0.0025, -0.0013, +0.0018).
    out = check_unbalanced(seed=91, reps=100, n=4_000, short=10)
    # The rule, exactly: the error minus that predicted bias has mean 0 (4 SE).
    assert np.all(np.abs(out["corrected"]) <= Z_TOL * out["se_corrected"]), out
    # Close to the truth: the MSE matches (n - 10)/n² v + noise_sd² + bias² (log scale,
    # relative SE 0.11-0.21 at R = 100, plus the pilot error).
    err = np.abs(np.log(out["mse"] / out["pred"]))
    assert np.all(err <= Z_TOL * (out["mse_rel_se"] + out["v_rel_se"])), out
    # Not distorted: the raw mean error is the predicted bias within MC error, and that bias is
    # at most a quarter of the estimator's sd (0.09, 0.15, 0.21 sd: bias² < 5 % of the MSE).
    # At R = 100 the slope biases are ~1.5-2 Monte Carlo SEs, so they are visible but small.
    # Measured: mean errors (-0.0093, -0.0019, +0.0012) ± (0.0028, 0.0008, 0.0009); minus the
    # predicted bias (-0.0068, -0.0006, -0.0006); MSE / prediction 1.12, 1.07, 1.03 (relative
    # SEs 0.15, 0.16, 0.21).
    assert np.all(np.abs(out["mean_err"]) <= np.abs(out["bias"]) + Z_TOL * out["se_err"]), out
    assert np.all(np.abs(out["bias"]) <= 0.25 * np.sqrt(out["pred"])), out


# --------------------------------------------------------------------------------------------
# 5. Cor 5.16: MSE ~ v(T)/n + v(T) log(n)/(n² ε²) over n in {1000, 4000}, T in {5, 20}
# --------------------------------------------------------------------------------------------

SCALING_PHI = 0.5
SCALING_GRID = ((1_000, 5), (4_000, 5), (1_000, 20), (4_000, 20))


def check_scaling(seed: int, reps: int) -> dict:
    """Per (n, T): the private MSE, the non-private MSE (numpy mean of per-user OLS fits on the
    same data) and the MSE of their difference (the privacy noise), with predictions."""
    out = {}
    for k, (n, T) in enumerate(SCALING_GRID):
        v, v_se = coefficient_variance(T, SCALING_PHI, False)
        data_rng, noise_rng = rngs(seed + k)
        e_priv, e_np = np.empty((reps, P)), np.empty((reps, P))
        clipped = 0
        for i in range(reps):
            panel = simulate_panel(data_rng, np.full(n, T), SCALING_PHI)
            res = fit(panel, v, noise_rng, refine=False)  # Cor 5.16: one-pass Alg 5
            beta_u = per_user_fits(panel)
            interval = res.projection_interval.to_numpy()
            clipped += int(np.sum((beta_u < interval[:, 0]) | (beta_u > interval[:, 1])))
            e_priv[i] = res.params.to_numpy() - BETA
            e_np[i] = beta_u.mean(axis=0) - BETA
        noise_var = res.noise_sd.to_numpy() ** 2
        parts = {"total": _sq(e_priv), "nonprivate": _sq(e_np), "noise": _sq(e_priv - e_np)}
        pred = {
            "nonprivate": v.sum() / n,
            "noise": noise_var.sum(),
            "total": v.sum() / n + noise_var.sum(),
        }
        out[n, T] = {
            "v": v,
            "pilot_rel_se": math.sqrt(np.sum(v_se**2)) / v.sum(),
            "clipped": clipped,
            "mse": {key: float(x.mean()) for key, x in parts.items()},
            "rel_se": {
                key: float(x.std(ddof=1) / math.sqrt(reps) / x.mean()) for key, x in parts.items()
            },
            "pred": pred,
        }
    return out


def _log_ratio_check(a: dict, b: dict, part: str, pilot: bool) -> tuple[float, float, float]:
    """(measured ratio, predicted ratio, 4-SE tolerance on the log ratio) of MSE(a)/MSE(b)."""
    measured = a["mse"][part] / b["mse"][part]
    predicted = a["pred"][part] / b["pred"][part]
    se = math.hypot(a["rel_se"][part], b["rel_se"][part])
    if pilot:  # different T: the two pilots' errors enter the predicted ratio
        se = math.hypot(se, math.hypot(a["pilot_rel_se"], b["pilot_rel_se"]))
    assert abs(math.log(measured / predicted)) <= Z_TOL * se, (part, measured, predicted, se)
    return measured, predicted, Z_TOL * se


@pytest.mark.slow
def test_mse_falls_with_n_and_t_as_cor_5_16():
    # φ = 0.5, ε = 1, δ = 1/n², scale = v(T). Exact predictions (module docstring):
    #   non-private part Σv(T)/n,   privacy part Σ noise_sd² = c(n) Σv(T) / n²,
    # with c(n)/n = 19.5 at n = 1000 and 2.53 at n = 4000 (c grows like log n, and the
    # midpoint's share of ε falls with n). So from n = 1000 to 4000 the non-private MSE falls
    # 4x (1/n), the privacy part 30.8x (1/n² times 1.93), the total 23.2x; and from T = 5 to 20
    # both parts fall by Σv(5)/Σv(20) = 2.34 — the 1/T of Cor 5.16 up to T·v(T), which is not
    # constant at small T: T·Σv = 6.2 at T = 5 and 10.6 at T = 20 (AR(1) end effects, and the
    # sinusoids' frequency 2π/T moving towards the peak of the AR(1) spectrum). Cor 5.16's
    # bound ϑσ²/(θ²T) holds with ‖Σ‖ <= (1+φ)/(1-φ) = 3 and θ >= 0.08 for every T.
    # Measured (R = 200 per cell; relative SEs 0.05-0.07 non-private, 0.08-0.10 privacy):
    #   n-ratios at T = 5 / 20: total 23.3 / 21.6 (pred 23.2), non-private 4.50 / 3.83 (4),
    #     privacy 32.1 / 27.6 (30.8);
    #   T-ratios at n = 1000 / 4000: total 2.65 / 2.46, non-private 2.55 / 2.17,
    #     privacy 2.76 / 2.38 (pred 2.34 for all) for the one-pass estimator.
    out = check_scaling(seed=1_601, reps=200)
    for key, row in out.items():
        # Clipping is rare: the scale here is the design-averaged variance of β̂_u, not a
        # sub-Gaussian proxy valid for every user (Lemma 5.15 would use the worst case
        # ϑσ²/(θ²T)); under random designs β̂_u is a Gaussian scale mixture with heavier
        # tails. The one-pass interval τ + 2τ' has ample slack (none clipped in 800 releases);
        # the default refined one clips a few (29 of 2.4e6 values at n = 4000, T = 5). Either
        # way their effect on the MSEs compared below is negligible: bound the fraction at 1e-4.
        n_users, _ = key
        assert row["clipped"] <= 1e-4 * 200 * n_users * P, (key, row)
        for part in ("total", "nonprivate", "noise"):
            # Each MSE against its prediction; log scale, SE = relative SE of the mean of the
            # R squared errors (0.05-0.10 at R = 200) plus the pilot's (< 0.3 %).
            se = math.hypot(row["rel_se"][part], row["pilot_rel_se"])
            err = abs(math.log(row["mse"][part] / row["pred"][part]))
            assert err <= Z_TOL * se, (key, part, row)
    for part in ("total", "nonprivate", "noise"):
        for T in (5, 20):  # n-ratios at fixed T (same v: no pilot error)
            _log_ratio_check(out[1_000, T], out[4_000, T], part, pilot=False)
        for n in (1_000, 4_000):  # T-ratios at fixed n
            _log_ratio_check(out[n, 5], out[n, 20], part, pilot=True)
    # The predicted ratios themselves are the rates quoted above.
    for T in (5, 20):
        a, b = out[1_000, T]["pred"], out[4_000, T]["pred"]
        assert a["nonprivate"] / b["nonprivate"] == pytest.approx(4.0)
        assert a["noise"] / b["noise"] == pytest.approx(30.83, rel=2e-3)
    for n in (1_000, 4_000):
        a, b = out[n, 5]["pred"], out[n, 20]["pred"]
        ratio = out[n, 5]["v"].sum() / out[n, 20]["v"].sum()
        assert a["total"] / b["total"] == pytest.approx(ratio, rel=1e-3)
        assert 2.2 < ratio < 2.5


# --------------------------------------------------------------------------------------------
# 6. Price of privacy at n = 1e4, T = 10, ε = 1: private MSE / non-private MSE
# --------------------------------------------------------------------------------------------


EFFICIENCY_N, EFFICIENCY_T = 10_000, 10
EFFICIENCY_PHI = 0.5  # balanced coefficient variances: 3 effective coordinates, smaller SE


def check_efficiency(
    seed: int, reps: int, draws: int, epsilon: float = 1.0, refine: bool = True
) -> dict:
    """Mean over data sets of (mean over ``draws`` noise draws of ‖private error‖²) against
    ‖non-private error‖² (numpy average of per-user OLS fits on the same data sets)."""
    n, T = EFFICIENCY_N, EFFICIENCY_T
    v = coefficient_variance(T, EFFICIENCY_PHI, False)[0]
    data_rng, noise_rng = rngs(seed)
    nonprivate, private = np.empty(reps), np.empty(reps)
    for i in range(reps):
        panel = simulate_panel(data_rng, np.full(n, T), EFFICIENCY_PHI)
        nonprivate[i] = _sq(per_user_fits(panel).mean(axis=0) - BETA)
        model = dplong.LongitudinalOLS.from_formula(FORMULA, panel.frame(), groups="user", time="t")
        fits = [
            model.fit(epsilon=epsilon, scale=v, random_state=noise_rng, refine=refine)
            for _ in range(draws)
        ]
        private[i] = np.mean([_sq(res.params.to_numpy() - BETA) for res in fits])
    ratio, se = ratio_and_se(private, nonprivate)
    # noise_var_j / (v_j / n) is the same for every j (noise var ∝ scale): the ratio of the
    # expected MSEs is 1 + that factor, whatever the design.
    noise_var = fits[0].noise_sd.to_numpy() ** 2
    predicted = 1.0 + float(noise_var.sum() / (v.sum() / n))
    return {"ratio": ratio, "se": se, "pred": predicted}


def efficiency_prediction(epsilon: float) -> float:
    v = coefficient_variance(EFFICIENCY_T, EFFICIENCY_PHI, False)[0]
    noise_var = laplace_noise_variance(v, EFFICIENCY_N, epsilon)
    return 1.0 + float(noise_var.sum() / (v.sum() / EFFICIENCY_N))


@pytest.mark.slow
def test_private_mse_relative_to_nonprivate_at_n_1e4():
    # MSE(private) / MSE(non-private) at n = 1e4, T = 10, ε = 1, summed over the p = 3
    # coefficients (issue target: within 1.5x), against the exact prediction
    # 1 + n Σ noise_sd² / Σv — design-free since noise_sd_j² ∝ v_j.
    # The paper's one-pass estimator predicts 1.917 (> 1.5): each coefficient gets ε/3 and the
    # projection half-width τ + 2τ' = 10.7√v makes the noise variance 0.92 v/n. The default
    # refinement (a rough mean on a small share of ε, then the interval μ̂₁ ± (τ + e₁), about
    # 5.8√v) cuts the noise variance to about a third: prediction ~1.33.
    # SE of the paired ratio (delta method over R data sets; noise draws per data set average
    # down the Laplace part): the sampling part alone contributes (ratio - 1)·√(2/(3R)).
    one_pass = efficiency_prediction(1.0)
    assert one_pass == pytest.approx(1.917, abs=2e-3)
    out = check_efficiency(seed=1_701, reps=150, draws=3)
    assert abs(out["ratio"] - out["pred"]) <= Z_TOL * out["se"], out
    assert out["pred"] < 1.4, out  # the refined calibration, exactly from noise_sd
    assert out["ratio"] + 2 * out["se"] < 1.5, out  # the target, with margin
    assert out["ratio"] < one_pass - 4 * out["se"], out  # and clearly better than one pass


# --------------------------------------------------------------------------------------------
# 7. Lemma 5.14 (iv) with privacy: weighted releases at ε = 1, n = 1e4
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_weighted_beats_unweighted_private():
    # Same comparison as the noise-off test, now private (ε = 1, scale = the true variance of
    # β̂_u resp. β̂_wu). noise_sd ∝ √scale, so the noise shrinks with the variance and the
    # predicted MSE ratios are the noise-off ones: 0.976, 0.433 (slopes), 0.890 (all). The
    # two releases' noise is independent, so the paired SEs are larger than without noise:
    # at R = 120 about 0.05-0.07 (slopes together), 0.06-0.10 (each slope) and 0.15-0.20 (all):
    # the slopes' gain is resolved (> 8 SE), each slope's point estimate is below 1 (> 5 SE),
    # while the sum's 11 % gain is only checked against the prediction (it is below the MC
    # resolution: a measured sum ratio above 1 occurs, e.g. 1.12 ± 0.20 with seed 1803).
    # Measured: slopes 0.349 ± 0.047, x1 0.335 ± 0.062, x2 0.370 ± 0.065, intercept
    # 0.98 ± 0.18, sum 0.87 ± 0.15.
    out = check_weighting(seed=1_801, reps=120, n=10_000, T=10)
    np.testing.assert_allclose(
        out["noise_sd_w"] / out["noise_sd_u"],
        np.sqrt(
            coefficient_variance(10, WEIGHT_PHI, True)[0]
            / coefficient_variance(10, WEIGHT_PHI, False)[0]
        ),
        rtol=1e-3,
    )
    _check_weighting_ratios(out, resolved=("slopes",), smaller=("x1", "x2"))
