"""
Central versus local privacy on the same data
=============================================

In the **central** model a trusted curator holds the raw data and adds noise once, to the
result. In the **local** model nobody is trusted: every user privatises their own statistic
before it leaves their hands, so every user adds noise (see :doc:`/guide/privacy`). The
paper's theory (§6, §7.1.4) predicts a privacy cost of order 1/(nε)² in mean squared error
for the central model and 1/(nε²) for the local one. This vignette measures both on the same
simulated panels, as ε and n vary.

Seeds (``random_state=``) are set for reproducibility of this page only; a real release uses
fresh randomness.
"""

# %%
# The data
# --------
#
# Users have T = 10 rows each, which follow an AR(1) process with φ = 0.5 around μ = 3.
# :mod:`dplong.simulate` draws them from the same :class:`~dplong.dependence.AR1` model that
# states the assumption, so ``scale`` is the model's :meth:`~dplong.dependence.AR1.mean_scale`:
# the variance proxy of one user's mean. The local model also needs a public bound on every
# user's mean, here ``|ȳ_u| ≤ 10`` (each user clips theirs to ±10 before privatising it).
#
# One release of each kind, from the rows, with ``groups=`` identifying the users:

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import dplong
from dplong.dependence import AR1
from dplong.simulate import linear_panel, long_format, panel_rows

mu, T, bound = 3.0, 10, 10.0
rows_model = AR1(phi=0.5)
scale = rows_model.mean_scale(T)

panel = long_format(panel_rows(4000, T, rows_model, mean=mu, random_state=1))
central = dplong.winsorized_mean(
    panel["y"], groups=panel["user"], epsilon=1.0, scale=scale, random_state=2
)
local = dplong.winsorized_mean(
    panel["y"],
    groups=panel["user"],
    epsilon=1.0,
    scale=scale,
    privacy="local",
    bound=bound,
    random_state=2,
)
pd.DataFrame(
    {
        "estimate": [central.params.iloc[0], local.params.iloc[0]],
        "noise sd": [central.noise_sd.iloc[0], local.noise_sd.iloc[0]],
        "epsilon": [central.privacy.epsilon, local.privacy.epsilon],
        "delta": [central.privacy.delta, local.privacy.delta],
    },
    index=["central", "local"],
)

# %%
# At ε = 1 with 4,000 users the local noise is far above the central. Most of the gap is the
# factor √n = 63 of the theory: n users' noises add up, where the curator adds one. The rest
# comes from how the local release finds the data: users are split into groups, each user
# answering one question with the whole ε — some locate the mean by randomized response over
# bins of ``[-B, B]``, the others report their value clipped around it with Laplace noise —
# so fewer users report. When locating cannot beat clipping to ``[-B, B]`` (public facts
# decide), every user reports in one round; either way the estimate is projected onto the
# public range. The local release is pure ε-LDP (δ = 0).
#
# The error as ε varies
# ---------------------
#
# 100 simulated data sets of 4,000 users. On each one, the central and the local estimator
# run at every ε, with common random numbers. To save time we pass the users' means directly;
# this is the same computation as ``groups=`` on the rows. The root mean squared error is
# measured against the true μ. The non-private mean of user means gives the floor.

reps = 100
user_means = panel_rows(4000, T, rows_model, mean=mu, size=reps, random_state=3).mean(axis=-1)


def rmse(estimates):
    return float(np.sqrt(np.mean((np.asarray(estimates) - mu) ** 2)))


def errors(means, epsilon):
    """RMSE of the central and the local release over the replications."""
    out = {}
    for privacy in ("central", "local"):
        options = {"privacy": privacy, "bound": bound} if privacy == "local" else {}
        out[privacy] = rmse(
            [
                dplong.winsorized_mean(
                    m, epsilon=epsilon, scale=scale, random_state=r, **options
                ).params.iloc[0]
                for r, m in enumerate(means)
            ]
        )
    out["non-private"] = rmse(means.mean(axis=1))
    return out


epsilons = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
by_epsilon = pd.DataFrame({eps: errors(user_means, eps) for eps in epsilons}).T
by_epsilon.index.name = "epsilon"
by_epsilon

# %%
# The error as n varies, with ε shrinking like 1/√n
# -------------------------------------------------
#
# For fixed ε, both privacy costs shrink with n. The models differ when the privacy
# requirement tightens with the size of the data. With ε = 20/√n the central cost
# 1/(nε)² = 1/(400 n) keeps pace with the sampling error 1/n. The local cost
# 1/(nε²) = 1/400 does not shrink at all (paper Fig. 4).

sizes = [500, 1000, 2000, 4000, 8000, 16000]
by_n = pd.DataFrame(
    {
        n: errors(
            panel_rows(n, T, rows_model, mean=mu, size=reps, random_state=n).mean(axis=-1),
            20.0 / np.sqrt(n),
        )
        for n in sizes
    }
).T
by_n.index.name = "users"
by_n

# %%
# Both experiments in one figure, on log–log axes:

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
styles = {"central": "o-", "local": "s-", "non-private": "k--"}
for name, style in styles.items():
    left.plot(by_epsilon.index, by_epsilon[name], style, label=name)
    right.plot(by_n.index, by_n[name], style, label=name)
left.set(
    xscale="log",
    yscale="log",
    xlabel="ε",
    ylabel="root mean squared error",
    title="n = 4,000 users, T = 10",
)
right.set(xscale="log", yscale="log", xlabel="users n", title="ε = 20/√n")
left.set_xticks(epsilons, [f"{eps:g}" for eps in epsilons], minor=False)
left.minorticks_off()
left.legend()
fig.tight_layout()

# %%
# The central error (left) is already at the non-private floor from ε ≈ 1, because the
# sampling error dominates. The local error falls like 1/ε (slope −1) while every user reports
# in one round, clipped to ``[-B, B]``; from ε = 2 locating the mean first pays, the
# reports are clipped around it instead, and the error drops by an order of magnitude. It
# stays above the central one over the whole range. On the right, the central error
# tracks the non-private one as n grows, while the local error stays flat. When ε must
# shrink with n, more users do not help a locally private estimate.
#
# A model in the local model
# --------------------------
#
# Every model takes ``privacy="local"`` too. Here is a longitudinal regression on 4,000
# simulated users, with a public bound of 5 on every user's own coefficients:

df = linear_panel(4000, T, [1.0, 0.5, -0.25], rows_model, random_state=4)
ols = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user", time="time")
fits = {
    "central": ols.fit(epsilon=2.0, scale=0.5, random_state=5),
    "local": ols.fit(epsilon=2.0, scale=0.5, privacy="local", bound=5.0, random_state=5),
}
table = pd.concat(
    {
        name: pd.DataFrame({"estimate": f.params, "noise sd": f.noise_sd})
        for name, f in fits.items()
    },
    axis=1,
)
table[("truth", "")] = [1.0, 0.5, -0.25]
table

# %%
# The local fit is very noisy: with three coefficients, the users are split between them, and
# each user reports a single coefficient of their own fit, with noise. Since the local noise
# sd falls like 1/√n, matching the central fit's precision would take this many times more
# users:

ratio = fits["local"].noise_sd / fits["central"].noise_sd
print(f"{ratio.iloc[0] ** 2:,.0f}")

# %%
# The local model is the choice when the data can never be collected centrally. Its price is
# a much larger n, or a much larger ε, for the same accuracy.
