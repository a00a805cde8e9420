"""
The paper's simulation study, at small scale
============================================

Section 7 of Roth & Avella Medina studies the noisy Winsorized mean by simulation. This
vignette repeats three of its experiments with dplong's default estimator
(:func:`dplong.winsorized_mean`), on data drawn by :mod:`dplong.simulate`:

1. **the cost of privacy** (paper Fig. 1): private against non-private mean squared error
   (MSE) as the number of observations n grows, for several ε;
2. **the cost of dependence** (Fig. 3): the same estimator on i.i.d., Toeplitz and
   equicorrelated samples;
3. **the 1/T rate** (Fig. 6): user-level means of T dependent rows per user.

To keep the page under 30 seconds, each cell has 100–200 replications instead of the
paper's 1000–2000, and the grids are shorter. The curves are therefore noisier than the
paper's, but the shapes are the same. The benchmarks behind :doc:`/accuracy` run larger
versions.

Seeds (``random_state=``) make the page reproducible; they are for reproducibility only.
"""

# %%
# Setup
# -----
#
# Observations are Gaussian with mean μ = 100, far from 0, so that the private midpoint
# matters. δ keeps its default 1/n². When n·ε is so small that the private midpoint would all
# but surely miss the data, dplong refuses the release with
# :class:`~dplong.exceptions.InsufficientUsersError` before any budget is spent; such cells
# are left empty. When a miss is possible, dplong warns
# (:class:`~dplong.exceptions.DplongWarning`), and a release whose midpoint did miss is
# withheld (NaN). We record the warnings and the share of withheld releases; the MSE is over
# the others.

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import dplong
from dplong.dependence import AR1, Exchangeable, Independent
from dplong.exceptions import DplongWarning, InsufficientUsersError
from dplong.simulate import dependent_normal, panel_rows

MU = 100.0


def study(samples, epsilon, scale, mu=MU):
    """Private releases of every row of ``samples``: MSE, share withheld and warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DplongWarning)
        try:
            releases = [
                dplong.winsorized_mean(x, epsilon=epsilon, scale=scale, random_state=r)
                for r, x in enumerate(samples)
            ]
        except InsufficientUsersError:
            return {"mse": np.nan, "withheld": np.nan, "warned": False}
    estimates = np.array([r.params.iloc[0] for r in releases])
    return {
        "mse": float(np.nanmean((estimates - mu) ** 2)),
        "withheld": float(np.mean(np.isnan(estimates))),
        "warned": any(issubclass(w.category, DplongWarning) for w in caught),
    }


# %%
# 1. The cost of privacy
# ----------------------
#
# Independent N(100, 1) observations; ``scale=1`` is their variance. ε is 0.1, 0.5, 1, and
# also 1/√n, a budget that shrinks with the sample. 200 replications per cell.

sizes = [300, 1000, 3000, 10_000, 30_000]
budgets = {"ε = 1/√n": None, "ε = 0.1": 0.1, "ε = 0.5": 0.5, "ε = 1": 1.0}
cells = []
for n in sizes:
    samples = dependent_normal(n, Independent(), mean=MU, size=200, random_state=n)
    cells.append({"n": n, "budget": "non-private", "mse": np.mean((samples.mean(1) - MU) ** 2)})
    for label, eps in budgets.items():
        out = study(samples, eps if eps is not None else 1 / np.sqrt(n), scale=1.0)
        cells.append({"n": n, "budget": label, **out})
privacy_cost = pd.DataFrame(cells)
privacy_cost.pivot(index="n", columns="budget", values="mse")

# %%
# The MSE against n, and the share of withheld releases:

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
for label in ["non-private", *budgets]:
    part = privacy_cost[privacy_cost["budget"] == label]
    style = "k--" if label == "non-private" else "o-"
    left.plot(part["n"], part["mse"], style, label=label)
    if label != "non-private":
        right.plot(part["n"], part["withheld"], "o-", label=label)
left.set(xscale="log", yscale="log", xlabel="n", ylabel="MSE", title="Cost of privacy")
right.set(xscale="log", xlabel="n", ylabel="share of releases", title="Withheld estimates")
left.legend()
fig.tight_layout()

# %%
# As in the paper, at constant ε the private MSE approaches the non-private 1/n line as n
# grows. The privacy term falls like 1/(nε)², faster than the statistical 1/n, so privacy is
# almost free for large n. For small n·ε the constants dominate: at ε = 0.1 the private MSE
# is orders of magnitude above the non-private one at n = 1,000, and within a small factor of
# it at n = 30,000.
# With ε = 1/√n the privacy term is 1/(nε)² = 1/n, so the private curve runs parallel to the
# non-private one, far above it.
#
# Where n·ε is small the private midpoint may miss the data. dplong then warns, from public
# facts (n, ε, the number of columns), with a bound on the chance of a miss; a release whose
# midpoint did miss is withheld rather than reported far off (``result.failed`` flags it).
# Cells with no point were refused: there a miss was all but certain. The cells in which
# dplong warned, with the share of releases it withheld:

privacy_cost[privacy_cost["warned"].eq(True)][["n", "budget", "withheld"]]

# %%
# 2. The cost of dependence
# -------------------------
#
# Now the n observations depend on each other, with covariance Σ (paper §7.1.3):
#
# * i.i.d.: Σ = I;
# * Toeplitz: Σ_ij = 0.95^|i−j| (an AR(1) with φ = 0.95);
# * equicorrelated with correlation 1/(n−1), weak dependence: ‖Σ‖ = 2;
# * equicorrelated with correlation 1/4, strong dependence: ‖Σ‖ ≈ n/4.
#
# Every observation still has variance 1, so ``scale=1`` in all four cases. By Remark 5.3 the
# clipping radius depends only on these marginal variances. The dependence changes the
# statistical error of the mean, which grows with ‖Σ‖/n. 100 replications per cell.

designs = {
    "i.i.d.": lambda n: Independent(),
    "Toeplitz 0.95": lambda n: AR1(phi=0.95),
    "equicorrelated 1/(n−1)": lambda n: Exchangeable(correlation=1 / (n - 1)),
    "equicorrelated 1/4": lambda n: Exchangeable(correlation=0.25),
}
sizes = [1000, 3000, 10_000, 30_000]
cells = []
for name, design in designs.items():
    for n in sizes:
        samples = dependent_normal(n, design(n), mean=MU, size=100, random_state=n)
        for eps in (0.1, 1.0):
            cells.append({"design": name, "n": n, "epsilon": eps, **study(samples, eps, 1.0)})
dependence_cost = pd.DataFrame(cells)

fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, eps in zip(axes, (0.1, 1.0), strict=True):
    for name in designs:
        part = dependence_cost[
            (dependence_cost["design"] == name) & (dependence_cost["epsilon"] == eps)
        ]
        ax.plot(part["n"], part["mse"], "o-", label=name)
    ax.set(xscale="log", yscale="log", xlabel="n", title=f"ε = {eps:g}, δ = 1/n²")
axes[0].set_ylabel("MSE")
axes[0].legend()
fig.tight_layout()

# %%
# At ε = 0.1 (left) the privacy noise dominates at small n. It depends only on the marginal
# variance, which is the same in all four designs, so the three weakly dependent samples have
# similar errors. As n grows the statistical error takes over, and the Toeplitz curve
# separates from the others. At ε = 1 (right) the privacy noise is small, and the statistical error
# shows. The Toeplitz sample has ‖Σ‖ ≈ 39 and an MSE many times that of the i.i.d. one. The
# strongly equicorrelated sample never gets better than its shared component's variance of
# 1/4, with or without privacy: no estimator can average that component away (paper
# Example 5.12).
#
# 3. The 1/T rate for user-level means
# ------------------------------------
#
# Now each of n = 1,000 users has T rows, Toeplitz(0.95) within a user and independent across
# users (paper §7.2). The statistic is each user's mean, and ``scale`` is its variance proxy
# ``AR1(0.95).mean_scale(T)`` (Lemma 5.2). 60 replications per cell, drawn as rows with
# :func:`~dplong.simulate.panel_rows`.

rows_model = AR1(phi=0.95)
lengths = [10, 20, 50, 100, 200, 500]
rng = np.random.default_rng(6)
cells = []
for T in lengths:
    means = np.concatenate(
        [panel_rows(1000, T, rows_model, mean=MU, size=20, random_state=rng) for _ in range(3)]
    ).mean(axis=-1)
    cells.append({"T": T, "budget": "non-private", "mse": np.mean((means.mean(1) - MU) ** 2)})
    for eps in (0.1, 0.5, 1.0):
        out = study(means, eps, rows_model.mean_scale(T))
        cells.append({"T": T, "budget": f"ε = {eps:g}", **out})
rate = pd.DataFrame(cells)

fig, ax = plt.subplots(figsize=(5.5, 4))
for label in ["non-private", "ε = 0.1", "ε = 0.5", "ε = 1"]:
    part = rate[rate["budget"] == label]
    ax.plot(part["T"], part["mse"], "k--" if label == "non-private" else "o-", label=label)
top = rate.loc[rate["budget"] == "ε = 0.1", "mse"].iloc[-1]
ax.plot(lengths, top * lengths[-1] / np.array(lengths), ":", color="grey", label="∝ 1/T")
ax.set(
    xscale="log",
    yscale="log",
    xlabel="rows per user T",
    ylabel="MSE",
    title="n = 1,000 users, Toeplitz(0.95) rows",
)
ax.legend()
fig.tight_layout()

# %%
# For T beyond about 100 both the private and the non-private MSE fall like 1/T. The variance
# of a user's mean falls like (1 + φ)/((1 − φ) T) = 39/T, and with it the radius, hence the
# noise. For small T the strong autocorrelation makes extra rows worth little: ten rows are
# worth barely more than one (scale 0.85 against 1). More rows per user keep reducing the
# error. But whether the private midpoint finds the data depends on n and ε only, not on T,
# so more rows cannot rescue a study with too few users (paper Remark 5.5).

rate.pivot(index="T", columns="budget", values="mse")
