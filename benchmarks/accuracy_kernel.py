"""Accuracy and cost of the private Priestley-Chao curve (``dplong.PriestleyChao``, issue 4).

Everything is measured side by side in one run, on the same simulated data sets (common random
numbers), and reported as ratios to the non-private estimator *with the same bandwidth and
grid*:

1. **Item-level** (Def 4.7), central and local, n ∈ {10³, 10⁴, 10⁵}, ε ∈ {0.5, 1, 2}, δ = 1/n²:
   f(x) = sin(2πx) on [0, 1], x_i = i/n, stationary Gaussian MA(1) errors e_i = z_(i+1) +
   z_i / 2 (Toeplitz covariance; ‖Σ‖_op <= 2.25, so ``error_sd=1.5``), ``amplitude=1``, the
   default ``bandwidth="auto"`` (no ``lipschitz``) and the default grid (points one bandwidth
   apart). Local: ``bound=1``. The non-private estimator applies the same weights
   (:func:`dplong.kernels.item_weights`) to the raw responses. Reported: the bandwidth
   b, the number of grid points G (and of interior ones, outside the boundary strips of Lemma
   4.9), the interior RMSE against f of both, and their ratio with a delta-method standard
   error (paired replications).
2. **Grid size** (central, n = 10⁵, ε = 1, b fixed): G ∈ {11, 51, 201}: how the resolution
   of the grid trades against the noise of the one L1 release.
3. **User-level** growth curves: n users with T visits t/T, Y_ut = f(x_t) + α_u + e_ut,
   α_u ~ N(0, 0.3²), AR(1) errors within users (φ = 0.5, variance 1), b = 0.1, the interior
   grid 0.3 ... 0.7, ε = 1, ``scale`` = the exact variance of a user's curve value. Target:
   μ(x), the mean of the users' smoothed curves; the non-private estimator is the mean of the
   users' own curves.
4. **Skewed responses given only ε** (``--skewed``: this part alone): item-level, x uniform
   on [0, 1], responses normal about sin(2πx), lognormal about exp(1 + sin(2πx)/2) (log sd
   0.5, 1, 1.5), negative binomial (size 0.7, mean e^(1/2 + x)) or 1 + x plus a Pareto
   (index 2.5) draw; nothing stated but ε. Per cell, over the fits (each a new sample): the
   share of grid points whose band covers the non-private curve (same bandwidth and grid),
   the points of unwarned fits that miss it, the fits warned, the RMSE against it and the
   median half-width.
5. **Time**: the private fit (bandwidth search, weights, midpoint, refinement and release)
   against the non-private computation with the same bandwidth (weights and one product);
   user-level: the fit against the per-user reduction and the mean.

Usage::

    python benchmarks/accuracy_kernel.py            # docs/accuracy.md, docs/nonparametric.md
    python benchmarks/accuracy_kernel.py --quick    # smoke run: few replications, n <= 10⁴
    python benchmarks/accuracy_kernel.py --skewed   # part 4 alone (docs/accuracy.md)
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import pandas as pd
from _common import header, rmse_ratio
from numpy.typing import NDArray
from scipy.linalg import toeplitz

import dplong
from dplong.exceptions import DplongWarning
from dplong.kernels import get_kernel, item_weights
from dplong.models.curves import user_curves

THETA, SIGMA_MAX, AMPLITUDE = 0.5, 1.5, 1.0
NS = (1_000, 10_000, 100_000)
EPSILONS = (0.5, 1.0, 2.0)
REPS = {1_000: 200, 10_000: 60, 100_000: 20}
QUICK_REPS = {1_000: 20, 10_000: 5}
GRID_SIZES = (11, 51, 201)
USER_CONFIGS = ((1_000, 10), (10_000, 10), (1_000, 40))
USER_B = 0.1
USER_GRID = np.array([0.3, 0.4, 0.5, 0.6, 0.7])
PHI, LEVEL_SD = 0.5, 0.3
KERNEL = get_kernel("gaussian")


def f(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.sin(2.0 * np.pi * x)


def ma1_frame(n: int, rng: np.random.Generator) -> pd.DataFrame:
    x = np.arange(n) / n
    z = rng.standard_normal(n + 1)
    return pd.DataFrame({"x": x, "y": f(x) + z[1:] + THETA * z[:-1]})


def item_cell(
    n: int,
    epsilon: float,
    privacy: str,
    reps: int,
    seed: int,
    grid: int | None = None,
    bandwidth: float | str = "auto",
) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    private, plain = [], []
    weights = interior = truth = None
    res = None
    middle = False
    for _ in range(reps):
        df = ma1_frame(n, rng)
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", df, domain=(0, 1), bandwidth=bandwidth, grid=grid
        )
        res = model.fit(
            epsilon=epsilon,
            error_sd=SIGMA_MAX,
            amplitude=AMPLITUDE,
            privacy=privacy,
            bound=1.0 if privacy == "local" else None,
            random_state=rng,
        )
        if weights is None:  # b and the grid are public: the same in every replication
            weights = item_weights(df["x"].to_numpy(), res.grid, KERNEL, res.bandwidth, 1.0)
            interior = ~res.boundary.to_numpy()
            if not interior.any():  # all boundary (local, small n): the middle point instead
                interior = np.abs(res.grid - 0.5) == np.abs(res.grid - 0.5).min()
                middle = True
            truth = f(res.grid)
        smooth = weights.T @ df["y"].to_numpy()
        private.append(np.mean((res.params.to_numpy() - truth)[interior] ** 2))
        plain.append(np.mean((smooth - truth)[interior] ** 2))
    assert res is not None and interior is not None
    p, q = np.array(private), np.array(plain)
    ratio, se = rmse_ratio(p, q)
    return {
        "privacy": privacy,
        "n": n,
        "eps": epsilon,
        "b": res.bandwidth,
        "G": res.grid.size,
        "interior": "none: x=0.5" if middle else int(interior.sum()),
        "noise sd": float(res.noise_sd.to_numpy()[interior].mean()),  # at the evaluated points
        "RMSE private": math.sqrt(p.mean()),
        "RMSE non-private": math.sqrt(q.mean()),
        "ratio": ratio,
        "se": se,
        "reps": reps,
        "composition": res.privacy.composition.split("; ")[-1],
    }


def user_law(visits: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and variance of one user's curve on the grid: the kernel sum over the user's kernel
    mass (as :func:`dplong.models.curves.user_curves`), so the weights sum to 1 per point."""
    x = np.arange(visits) / visits
    spacing = np.full(visits, 1.0 / visits)  # to the next visit, the last's from the one before
    a = spacing[:, None] * KERNEL((USER_GRID[None, :] - x[:, None]) / USER_B) / USER_B
    a = a / a.sum(axis=0)
    ar1 = toeplitz(PHI ** np.arange(visits))
    variance = LEVEL_SD**2 + np.einsum("tg,ts,sg->g", a, ar1, a)
    return a.T @ f(x), variance


def growth_frame(n: int, visits: int, rng: np.random.Generator) -> pd.DataFrame:
    x = np.arange(visits) / visits
    errors = np.empty((n, visits))
    errors[:, 0] = rng.standard_normal(n)
    innovations = rng.standard_normal((n, visits)) * math.sqrt(1.0 - PHI**2)
    for t in range(1, visits):
        errors[:, t] = PHI * errors[:, t - 1] + innovations[:, t]
    y = f(x)[None, :] + LEVEL_SD * rng.standard_normal(n)[:, None] + errors
    return pd.DataFrame(
        {"user": np.repeat(np.arange(n), visits), "x": np.tile(x, n), "y": y.ravel()}
    )


def user_cell(n: int, visits: int, epsilon: float, reps: int, seed: int) -> dict[str, object]:
    mu, v = user_law(visits)
    rng = np.random.default_rng(seed)
    private, plain = [], []
    fit_time = plain_time = 0.0
    res = None
    for _ in range(reps):
        df = growth_frame(n, visits, rng)
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", df, groups="user", domain=(0, 1), bandwidth=USER_B, grid=USER_GRID
        )
        start = time.perf_counter()
        res = model.fit(epsilon=epsilon, scale=v, random_state=rng)
        fit_time += time.perf_counter() - start
        start = time.perf_counter()
        curves = user_curves(
            df["x"].to_numpy(),
            df["y"].to_numpy(),
            df["user"].to_numpy(),
            n,
            USER_GRID,
            KERNEL,
            USER_B,
        )
        mean_curve = np.nanmean(curves, axis=0)
        plain_time += time.perf_counter() - start
        private.append(np.mean((res.params.to_numpy() - mu) ** 2))
        plain.append(np.mean((mean_curve - mu) ** 2))
    assert res is not None
    p, q = np.array(private), np.array(plain)
    ratio, se = rmse_ratio(p, q)
    return {
        "n": n,
        "T": visits,
        "eps": epsilon,
        "noise sd": float(res.noise_sd.mean()),
        "RMSE private": math.sqrt(p.mean()),
        "RMSE non-private": math.sqrt(q.mean()),
        "ratio": ratio,
        "se": se,
        "reps": reps,
        "time ratio": fit_time / plain_time,
    }


def timing(n: int, epsilon: float, repeats: int) -> dict[str, object]:
    rng = np.random.default_rng(7)
    df = ma1_frame(n, rng)
    model = dplong.PriestleyChao.from_formula("y ~ x", df, domain=(0, 1))
    x, y = df["x"].to_numpy(), df["y"].to_numpy()
    options = {"epsilon": epsilon, "error_sd": SIGMA_MAX, "amplitude": AMPLITUDE}
    b = model.fit(**options, random_state=rng).bandwidth  # type: ignore[arg-type]
    fixed = dplong.PriestleyChao.from_formula("y ~ x", df, domain=(0, 1), bandwidth=b)
    fits, given, plains = [], [], []
    res = None
    for _ in range(repeats):
        start = time.perf_counter()
        res = model.fit(**options, random_state=rng)  # type: ignore[arg-type]
        fits.append(time.perf_counter() - start)
        start = time.perf_counter()
        fixed.fit(**options, random_state=rng)  # type: ignore[arg-type]
        given.append(time.perf_counter() - start)
        start = time.perf_counter()
        _ = item_weights(x, res.grid, KERNEL, res.bandwidth, 1.0).T @ y
        plains.append(time.perf_counter() - start)
    assert res is not None
    fit, fit_given, plain = (float(np.median(t)) for t in (fits, given, plains))
    return {
        "n": n,
        "G": res.grid.size,
        "fit (auto b) s": fit,
        "fit (b given) s": fit_given,
        "non-private s": plain,
        "ratio auto": fit / plain,
        "ratio b given": fit_given / plain,
    }


def show(title: str, rows: list[dict[str, object]]) -> None:
    print(f"\n## {title}\n")
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


#: Part 4's cells: responses (log sd for the lognormal), n, ε.
SKEWED_CELLS = (
    ("normal", None, 2_000, 1.0),
    ("normal", None, 5_000, 4.0),
    ("lognormal", 0.5, 5_000, 4.0),
    ("lognormal", 1.0, 5_000, 4.0),
    ("lognormal", 1.5, 5_000, 4.0),
    ("lognormal", 1.5, 5_000, 1.0),
    ("lognormal", 1.5, 2_000, 2.0),
    ("negative binomial", None, 5_000, 4.0),
    ("Pareto 2.5", None, 5_000, 4.0),
)


def skewed_responses(kind: str, sigma: float | None, n: int, seed: int) -> pd.DataFrame:
    """Part 4's responses at n uniform points."""
    rng = np.random.default_rng(2_000 + seed)
    x = np.sort(rng.uniform(0.0, 1.0, n))
    if kind == "normal":
        y = np.sin(2 * np.pi * x) + rng.normal(size=n)
    elif kind == "lognormal":
        y = np.exp(1 + 0.5 * np.sin(2 * np.pi * x) + (sigma or 0.0) * rng.normal(size=n))
    elif kind == "negative binomial":
        mean = np.exp(0.5 + x)
        y = rng.negative_binomial(0.7, 0.7 / (0.7 + mean)).astype(float)
    else:
        y = 1 + x + rng.pareto(2.5, n)
    return pd.DataFrame({"x": x, "y": y})


def skewed(reps: int) -> None:
    """Part 4: item-level curves on skewed responses, given only ε."""
    print("\n## Item-level curves on skewed responses, given only epsilon")
    print("| responses | n, eps | coverage | silent misses | fits warned | RMSE | half-width |")
    print("|---|---|---:|---|---:|---:|---:|")
    for kind, sigma, n, epsilon in SKEWED_CELLS:
        points = covered = silent = warned = 0
        errors, widths = [], []
        for seed in range(reps):
            frame = skewed_responses(kind, sigma, n, seed)
            res = dplong.PriestleyChao.from_formula("y ~ x", frame, domain=(0, 1)).fit(
                epsilon=epsilon, random_state=seed
            )
            grid = res.params.index.to_numpy(dtype=float)
            weights = item_weights(frame["x"].to_numpy(), grid, KERNEL, res.bandwidth, 1.0)
            reference = frame["y"].to_numpy() @ weights
            low, high = res.conf_int().to_numpy().T
            inside = (low <= reference) & (reference <= high)
            points += grid.size
            covered += int(inside.sum())
            warned += bool(res.warnings)
            silent += 0 if res.warnings else int((~inside).sum())
            errors.append(float(np.nanmean((res.params.to_numpy() - reference) ** 2)))
            widths.append(float(np.nanmedian((high - low) / 2)))
        label = kind if sigma is None else f"{kind}, log sd {sigma:g}"
        print(
            f"| {label} | {n:,}, {epsilon:g} | {covered / points:.3f} | {silent} of {points} "
            f"| {warned} | {math.sqrt(np.mean(errors)):.3g} | {np.median(widths):.3g} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few replications, n <= 10^4")
    parser.add_argument("--skewed", action="store_true", help="part 4 alone (20 fits a cell)")
    args = parser.parse_args()
    if args.skewed:
        header("benchmarks/accuracy_kernel.py --skewed")
        warnings.simplefilter("ignore", DplongWarning)
        skewed(5 if args.quick else 20)
        return
    reps = QUICK_REPS if args.quick else REPS
    ns = tuple(n for n in NS if n in reps)
    header(
        "benchmarks/accuracy_kernel.py",
        ["RMSE ratios ± paired delta-method SE against the non-private smoother, same b and grid"],
    )
    warnings.simplefilter("ignore", DplongWarning)

    for privacy in ("central", "local"):
        rows = []
        for k, n in enumerate(ns):
            for j, epsilon in enumerate(EPSILONS):
                rows.append(item_cell(n, epsilon, privacy, reps[n], 1_000 * k + 10 * j))
        show(f"Item-level, {privacy}: interior RMSE, private vs non-private (same b, grid)", rows)

    n_grid = ns[-1]
    base = item_cell(n_grid, 1.0, "central", 1, 0)
    rows = [
        item_cell(n_grid, 1.0, "central", reps[n_grid], 50_000 + g, grid=g, bandwidth=base["b"])
        for g in GRID_SIZES
    ]
    show(f"Grid size: central, n = {n_grid}, eps = 1, b = {base['b']:.4g} fixed", rows)

    user_reps = 5 if args.quick else 40
    rows = [
        user_cell(n, visits, 1.0, user_reps, 70_000 + n + visits)
        for n, visits in USER_CONFIGS
        if not (args.quick and n > 1_000)
    ]
    show("User-level growth curves: RMSE against the mean of users' curves", rows)

    rows = [timing(n, 1.0, 3 if args.quick else 7) for n in ns]
    show("Time: private fit vs the non-private smoother with the same b (median)", rows)


if __name__ == "__main__":
    main()
