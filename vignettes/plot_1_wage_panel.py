"""
Wage growth: private ``LongitudinalOLS`` next to statsmodels
=============================================================

The wage panel of Vella & Verbeek (1998) follows 545 young American men for eight years
(1980–1987). How do log hourly wages grow with labour-market experience? We fit

.. math:: \\text{lwage}_{ut} = \\beta_0 + \\beta_1\\,\\text{exper}_{ut}
          + \\beta_2\\,\\text{exper}_{ut}^2 + e_{ut}

with user-level differential privacy. Each man is one user, and his eight rows are protected
together. We compare the result with the non-private estimators of statsmodels.

Seeds (``random_state=``) are set for reproducibility of this page only; a real release uses
fresh randomness.
"""

# %%
# The data and the estimator
# --------------------------
#
# :class:`dplong.LongitudinalOLS` fits one regression per man, :math:`\hat\beta_u`, and
# releases the average :math:`\frac1n\sum_u \hat\beta_u` privately (paper §5.3). Its
# non-private counterpart is therefore the *average of per-user OLS fits*, which we compute
# with statsmodels, one man at a time. Its standard error is the standard deviation of the 545
# fits over :math:`\sqrt{n}`.
#
# Experience grows by one each year, so every man has a different ``exper`` in each row, and all
# three coefficients can be estimated from his own eight rows.

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf

import dplong

# the reliability warnings are part of each fit's results and summary, shown below
warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)

wages = dplong.datasets.load_wage_panel()
names = ["Intercept", "exper", "expersq"]
n = wages["nr"].nunique()
print(f"{n} men, {len(wages)} rows")

per_user = np.array(
    [
        sm.OLS(rows["lwage"], sm.add_constant(rows[["exper", "expersq"]])).fit().params
        for _, rows in wages.groupby("nr")
    ]
)
average = pd.DataFrame(
    {"estimate": per_user.mean(axis=0), "std err": per_user.std(axis=0, ddof=1) / np.sqrt(n)},
    index=names,
)
average

# %%
# For contrast, the usual *pooled* OLS over all 4,360 rows, with standard errors clustered by
# man. Pooled OLS and the average of per-user fits estimate the same β when all men share it
# (paper Lemma 5.14). Here the two disagree noticeably: the wage profiles differ between men,
# and the two estimators weight the men differently. Pooled OLS is not a per-user statistic
# and cannot be privatised this way. The private estimator targets the per-user average, so
# that is the reference to compare it with.

pooled = smf.ols("lwage ~ exper + expersq", wages).fit(
    cov_type="cluster", cov_kwds={"groups": wages["nr"]}
)
pd.DataFrame({"estimate": pooled.params, "std err": pooled.bse})

# %%
# The private fit, given only ε
# ------------------------------
#
# Nothing but the budget is needed: where the coefficients lie and how spread out they are is
# found privately. The release counts the men with a fit of their own, locates each
# coefficient with a private median on a public log-spaced grid, estimates its spread with a
# second private median, re-centres with a rough private mean, and releases the clipped mean
# of the 545 per-man fits with Laplace or Gaussian noise, whichever is more accurate at this
# (ε, δ). We release at ε = 1 and, for comparison, at ε = 4. δ keeps its default 1/n².

model = dplong.LongitudinalOLS.from_formula(
    "lwage ~ exper + expersq", wages, groups="nr", time="year"
)
fits = {eps: model.fit(epsilon=eps, random_state=2024) for eps in (1.0, 4.0)}
print(fits[4.0].summary())

# %%
# The summary's ledger has one line per stage; ``res.privacy`` holds every call. The total
# is the budget asked for, composed by the better of basic and Rényi composition.
#
# At ε = 1 the standard error is almost all privacy noise (compare ``std err`` with
# ``noise sd``): with 545 men, user-level privacy for eight rows each is expensive. At ε = 4
# the noise falls below the sampling error:

pd.DataFrame(
    {f"noise sd, ε = {eps:g}": res.noise_sd for eps, res in fits.items()}
    | {"sampling sd": fits[4.0].sampling_sd}
)

# %%
# Stating a scale
# ---------------
#
# If the spread of one man's coefficients is known in advance — a public assumption, from
# knowledge of wage profiles, not from these data — it can be stated as ``scale``, the
# variance proxy of one man's coefficients. An intercept standard deviation of about 1.4 log
# points, a slope of about 0.45 and a curvature of about 0.03 give ``scale=[2.0, 0.2,
# 0.001]``. The budget of the scale stage then goes to the mean:

scale = [2.0, 0.2, 0.001]
stated = model.fit(epsilon=4.0, scale=scale, random_state=2024)
pd.DataFrame({"given only ε": fits[4.0].noise_sd, "scale stated": stated.noise_sd})

# %%
# Since we hold the data, we can check the assumption after the fact: the variances of the
# 545 per-user fits are close to the stated ``scale``. This check is for the data holder
# only: tuning ``scale`` on the released data would leak it.

pd.DataFrame(
    {"stated scale": scale, "variance of per-user fits": per_user.var(axis=0)}, index=names
)

# %%
# A coefficient plot
# ------------------
#
# Estimates with 95 % intervals. The private intervals combine the sampling error (from the
# private spread of the clipped fits) with the exact law of the privacy noise and the bound on
# the clipping bias (:mod:`dplong.inference`).

rows = {
    "average of per-user OLS\n(non-private)": (
        average["estimate"],
        average["estimate"] - 1.96 * average["std err"],
        average["estimate"] + 1.96 * average["std err"],
    ),
    "pooled OLS, clustered\n(non-private)": (
        pooled.params,
        pooled.conf_int()[0],
        pooled.conf_int()[1],
    ),
}
for eps, res in fits.items():
    ci = res.conf_int(alpha=0.05)
    rows[f"dplong, ε = {eps:g}"] = (res.params, ci["lower"], ci["upper"])

fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), sharey=True)
colours = ["black", "grey", "tab:blue", "tab:orange"]
for ax, name in zip(axes, names, strict=True):
    for k, (est, lo, hi) in enumerate(rows.values()):
        ax.errorbar(
            est[name],
            k,
            xerr=[[est[name] - lo[name]], [hi[name] - est[name]]],
            fmt="o",
            color=colours[k],
            capsize=3,
        )
    ax.axvline(average.loc[name, "estimate"], color="black", lw=0.8, ls=":")
    ax.set_title(name)
axes[0].set_yticks(range(len(rows)), list(rows))
axes[0].invert_yaxis()
fig.suptitle("Wage panel: estimates and 95 % intervals")
fig.tight_layout()

# %%
# At ε = 1 the private intervals are wide but honest: they cover the non-private per-user
# average. At ε = 4 they are close to the non-private ones. With only n = 545 users, a
# user-level guarantee for eight rows per man has a visible price at ε = 1.
# :doc:`/accuracy` shows how that price falls with n: in mean squared error, the privacy term
# shrinks like 1/(nε)², the sampling term like 1/n.
#
# Error bounds
# ------------
#
# The error bound gives the largest distance from the truth that the assumptions allow, with
# the stated probability, split into its privacy and statistical parts
# (:doc:`/guide/results`):

print(fits[4.0].error_bound(alpha=0.05))

# %%
# Terms that rarely change within a man
# -------------------------------------
#
# Marital status and union membership change for only some men. A man whose ``married`` never
# changes has a singular design, so no fit of his own, and contributes nothing: the release
# averages the fits of the men who have one, and counts them privately. The results say so,
# and their standard errors use that count:

wider = dplong.LongitudinalOLS.from_formula(
    "lwage ~ exper + expersq + married + union", wages, groups="nr", time="year"
)
with warnings.catch_warnings(record=True):  # the same words are in the results
    warnings.simplefilter("always")
    res = wider.fit(epsilon=8.0, random_state=2024)
print(res.warnings[0])

# %%
# The estimate then describes those men only. The data holder can check their exact number
# with :meth:`~dplong.LongitudinalOLS.identified_users`; that count is **not private** and
# must not be published.

print(f"{wider.identified_users()} of {n} men have their own fit (not private)")
