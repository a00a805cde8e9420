"""Cost of a private scale: the Winsorized mean with a known variance vs with each plug-in.

The setting of the paper's Fig. 5 (§7.1.5): n users whose statistics have mean μ = 100 and
variance σ² = 1 under three covariances *across users* — i.i.d.; equicorrelated
Σ = ¾ I + ¼ 11ᵀ; Toeplitz Σ = (0.95^|i-j|) (a stationary AR(1)) — for n ∈ {1000, 2000, 6000,
20000}. The plug-ins get the loose bounds (0.1, 10⁴) (and, instead of the paper's rough first
moment 300, find their own from a private wide-bin histogram). Each plug-in spends
(ε, δ) = (1, 1/n²) on the scale, and the mean another (1, 1/n²), as in the paper.

On the *same* data sets (common random numbers) the script releases

* ``known``      — ``dplong.winsorized_mean(x, scale=1)``: the variance given;
* ``coinpress``  — ``scale=estimate_scale(x, method="coinpress").scale`` (default iterations);
* ``coin-paper`` — the same with the paper's N_iter = ⌈log2(σ²_max/σ²_min)⌉ = 17 iterations;
* ``bisection``  — ``scale=estimate_scale(x, method="bisection").scale``;
* ``engine``     — ``dplong.winsorized_mean(x)`` given only ε = 1: the default engine's own
  private scale (a median of ``|x − m̂|``) inside the mean's budget, with no extra ε;

each plug-in's scale then given to the default engine (``winsorized_mean(x, scale=ρ̂)``), and
prints, per cell, MSE(plug-in) / MSE(known) for the error against μ (what the paper
plots), with a paired delta-method standard error; the same ratio for the error against the
users' own mean x̄ (the privacy cost alone: under equicorrelation the common shock dominates
the error against μ and hides it); MSE(known)/MSE(x̄) for scale; the median ρ̂ of each
plug-in; and the share of releases whose ρ̂ sat at a bound. The CoinPress plug-in is what
``variant="theory"`` and the local model use when the scale is not stated.

Usage::

    python benchmarks/variance_plugins.py               # 300 per cell (not in the docs)
    python benchmarks/variance_plugins.py --quick       # smoke run: 40 replications
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable

import numpy as np
from _common import header, mse_ratio
from numpy.typing import NDArray
from scipy.signal import lfilter

import dplong
from dplong.exceptions import DplongWarning
from dplong.privacy import estimate_scale

MU, SIGMA2, RHO, EQUI = 100.0, 1.0, 0.95, 0.25
NS = (1_000, 2_000, 6_000, 20_000)
MODELS = ("iid", "equicorrelated", "toeplitz")
BOUNDS = (0.1, 1e4)
EPSILON = 1.0
PLUGINS = ("coinpress", "coin-paper", "bisection")
ESTIMATORS = (*PLUGINS, "engine")
FloatArray = NDArray[np.float64]


def users(model: str, n: int, rng: np.random.Generator) -> FloatArray:
    """One data set: n users' statistics, mean μ, variance 1, the model's covariance."""
    z = rng.standard_normal(n)
    if model == "iid":
        return MU + z
    if model == "equicorrelated":
        return MU + math.sqrt(1 - EQUI) * z + math.sqrt(EQUI) * rng.standard_normal()
    innovations = np.concatenate([z[:1], math.sqrt(1 - RHO**2) * z[1:]])
    return MU + np.asarray(lfilter([1.0], [1.0, -RHO], innovations), dtype=np.float64)


def plug_in(name: str) -> Callable[[FloatArray, np.random.Generator], tuple[float, bool]]:
    method = "bisection" if name == "bisection" else "coinpress"
    iterations = math.ceil(math.log2(BOUNDS[1] / BOUNDS[0])) if name == "coin-paper" else None

    def run(x: FloatArray, rng: np.random.Generator) -> tuple[float, bool]:
        est = estimate_scale(
            x,
            epsilon=EPSILON,
            method=method,
            scale_bounds=BOUNDS,
            iterations=iterations,
            random_state=rng,
        )
        binding = bool(est.lower_binding[0] or est.upper_binding[0])
        return float(est.scale[0]), binding

    return run


def mean_of(x: FloatArray, scale: float | str, rng: np.random.Generator) -> float:
    """The default release of the mean at ε = 1 with the given (or estimated) scale."""
    res = dplong.winsorized_mean(x, epsilon=EPSILON, scale=scale, random_state=rng)
    return float(res.params.iloc[0])


def cell(model: str, n: int, reps: int, seed: int) -> dict[str, FloatArray]:
    """Errors against μ and against x̄ of every estimator, plus the plug-ins' ρ̂."""
    rng = np.random.default_rng(seed)
    names = ("sample", "known", *ESTIMATORS)
    err_mu = {k: np.empty(reps) for k in names}
    err_bar = {k: np.empty(reps) for k in names}
    scales = {k: np.empty(reps) for k in PLUGINS}
    binding = {k: np.empty(reps) for k in PLUGINS}
    runs = {k: plug_in(k) for k in PLUGINS}
    for r in range(reps):
        x = users(model, n, rng)
        xbar = float(np.mean(x))
        estimates = {"sample": xbar}
        estimates["known"] = mean_of(x, SIGMA2, rng)
        for k in PLUGINS:
            scales[k][r], binding[k][r] = runs[k](x, rng)
            estimates[k] = mean_of(x, scales[k][r], rng)
        estimates["engine"] = mean_of(x, "estimate", rng)
        for k in names:
            err_mu[k][r] = (estimates[k] - MU) ** 2
            err_bar[k][r] = (estimates[k] - xbar) ** 2
    out = {f"mu:{k}": v for k, v in err_mu.items()}
    out |= {f"bar:{k}": v for k, v in err_bar.items()}
    out |= {f"scale:{k}": v for k, v in scales.items()}
    out |= {f"binding:{k}": v for k, v in binding.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=20240605)
    args = parser.parse_args()
    reps = 40 if args.quick else args.reps
    warnings.simplefilter("ignore", DplongWarning)
    header(
        "benchmarks/variance_plugins.py",
        [
            f"{reps} replications per cell, seed {args.seed}; eps = {EPSILON} for the scale and "
            f"{EPSILON} for the mean, delta = 1/n^2 each; bounds {BOUNDS}"
        ],
    )
    head = "model           n  " + "  ".join(f"{k:>16s}" for k in ESTIMATORS)
    tables: dict[str, list[str]] = {"mu": [], "bar": [], "info": []}
    started = time.perf_counter()
    for i, model in enumerate(MODELS):
        for j, n in enumerate(NS):
            res = cell(model, n, reps, args.seed + 100 * i + j)
            label = f"{model:<14s} {n:>6d}"
            for which in ("mu", "bar"):
                cells = []
                for k in ESTIMATORS:
                    r, se = mse_ratio(res[f"{which}:{k}"], res[f"{which}:known"])
                    cells.append(f"{r:>8.3f} ± {se:5.3f}")
                tables[which].append(label + "  " + "  ".join(cells))
            known_vs_sample, _ = mse_ratio(res["mu:known"], res["mu:sample"])
            info = [f"{known_vs_sample:>7.3f}"]
            for k in PLUGINS:
                med = float(np.median(res[f"scale:{k}"]))
                info.append(f"{med:>9.3f} {100 * res[f'binding:{k}'].mean():>5.1f}%")
            tables["info"].append(label + "  " + "  ".join(info))
    print("\nMSE ratio vs the known variance, error against mu (paper's Fig. 5), ± paired SE")
    print(head)
    print("\n".join(tables["mu"]))
    print("\nMSE ratio vs the known variance, error against the users' own mean x̄ (privacy cost)")
    print(head)
    print("\n".join(tables["bar"]))
    print("\nMSE(known)/MSE(x̄) vs mu; median scale estimate and % of releases at a bound")
    print("model           n  known/x̄  " + "  ".join(f"{k + ' ρ̂ / bind':>16s}" for k in PLUGINS))
    print("\n".join(tables["info"]))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
