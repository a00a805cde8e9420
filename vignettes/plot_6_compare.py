"""
Several private fits side by side: ``dplong.compare`` next to linearmodels
==========================================================================

Papers report several estimators of one model in one table: pooled OLS, the within
(fixed-effects) estimator, perhaps a per-person average. :func:`dplong.compare` builds that
table from private fits, as linearmodels' ``compare`` and statsmodels' ``summary_col`` do
from non-private ones. Here the wage panel of Vella & Verbeek (1998), 545 men over eight
years, is fitted three ways with user-level differential privacy, and the same estimators
are fitted without privacy by linearmodels, so the two tables can be read side by side.

Seeds (``random_state=``) are set for reproducibility of this page only; a real release uses
fresh randomness.
"""

# %%
# Three private fits
# ------------------
#
# The model is a quadratic wage profile in experience,
# ``lwage ~ exper + expersq``, fitted by three estimators:
#
# * :class:`dplong.PooledOLS`, pooled OLS over all rows with person-clustered standard
#   errors. It needs public ranges of the outcome and of every regressor (values outside are
#   clipped): log wages within (-4, 5), experience within 0-20 years, and at most 8 rows per
#   man (the study's eight waves);
# * :class:`dplong.LongitudinalOLS`, the average of the men's own OLS fits (paper §5.3);
# * the same model with ``estimator="within"``, the within estimator.
#
# Each fit spends ε = 4 of its own. **Publishing all three spends the sum**, ε = 12 on the
# same men (sequential composition); an :class:`~dplong.Accountant` enforces such a total
# across fits.

import textwrap
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from linearmodels.panel import PanelOLS, PooledOLS, compare

import dplong

# the reliability warnings are part of each fit's results and summary, shown below
warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)

wages = dplong.datasets.load_wage_panel()
formula = "lwage ~ exper + expersq"
bounds = {"lwage": (-4.0, 5.0), "exper": (0.0, 20.0), "expersq": (0.0, 400.0)}
pooled_model = dplong.PooledOLS.from_formula(formula, wages, groups="nr", bounds=bounds)
model = dplong.LongitudinalOLS.from_formula(formula, wages, groups="nr", time="year")
with warnings.catch_warnings(record=True):  # the same words are in each fit's summary
    warnings.simplefilter("always")
    fits = {
        "pooled": pooled_model.fit(epsilon=4.0, max_rows=8, random_state=0),
        "per-user": model.fit(epsilon=4.0, random_state=0),
        "within": model.fit(epsilon=4.0, estimator="within", random_state=0),
    }

# %%
# The table
# ---------
#
# Each fit's estimates with their standard errors beneath (sampling error and privacy noise
# together), then the public facts of each fit: the model, n, the ε and δ its ledger spent,
# and the law of its noise. The formula the fits share is said once, below. The within
# estimator has no intercept: it removes each man's own level.

table = dplong.compare(fits)
print(table)

# %%
# The numbers are DataFrames, for your own tables: ``table.params``, ``table.std_errors``,
# ``table.lower`` and ``table.upper`` (parameters x fits), or all of them in
# ``table.to_frame()``. ``table.as_latex()``, ``table.as_html()`` and ``table.as_csv()``
# render the table for a paper, a web page or a spreadsheet.

table.to_frame().round(4)

# %%
# The same estimators without privacy
# -----------------------------------
#
# linearmodels fits pooled OLS and the within estimator (``EntityEffects``) on the same panel,
# with standard errors clustered by man; its ``compare`` sets them side by side. The
# per-user average has no linearmodels counterpart (it is not a pooled estimator), so it
# appears below as the plain average of the 545 men's own OLS fits.

panel = wages.set_index(["nr", "year"])
clustered = {"cov_type": "clustered", "cluster_entity": True}
exact = {
    "pooled": PooledOLS.from_formula("lwage ~ 1 + exper + expersq", panel).fit(**clustered),
    "within": PanelOLS.from_formula("lwage ~ exper + expersq + EntityEffects", panel).fit(
        **clustered
    ),
}
print(compare(exact, precision="std_errors", stars=False))

# %%
# The average of per-user fits: the panel is balanced (eight rows per man), so the men's
# designs stack into one array and every man's normal equations are solved at once.

ordered = wages.sort_values(["nr", "year"])
X = np.stack([np.ones(len(ordered)), ordered["exper"], ordered["expersq"]], axis=1).reshape(
    -1, 8, 3
)
y = ordered["lwage"].to_numpy().reshape(-1, 8, 1)
own = np.linalg.solve(X.transpose(0, 2, 1) @ X, X.transpose(0, 2, 1) @ y)[:, :, 0]
per_user_exact = pd.Series(own.mean(axis=0), index=["Intercept", "exper", "expersq"])
per_user_exact.round(4)

# %%
# How far is each private estimate from its non-private counterpart?
# -------------------------------------------------------------------
#
# The gap in units of the private standard error. The private standard error holds the
# sampling error as well as the privacy noise, so gaps of one or two are what chance gives;
# the non-private estimate is not the truth either, only what the same estimator gives on the
# same rows without noise.

non_private = pd.DataFrame(
    {
        "pooled": exact["pooled"].params,
        "per-user": per_user_exact,
        "within": exact["within"].params,
    }
).reindex(table.params.index)
((table.params - non_private) / table.std_errors).round(2)

# %%
# The pooled fit releases nothing here. Its warning says why: at this ε the released
# :math:`X'X` does not determine the wage profile's curvature beyond its noise (``exper``
# and ``expersq`` are nearly collinear over 0-20 years, and 545 men are few for that),
# so nothing bounds how far its floor (a ridge) pulled the coefficients, and they are
# withheld rather than given intervals as wide as the doubles. Where a fit releases its
# coefficients the bias bound is in its confidence intervals (as is every fit's clipping
# bias bound), not in the standard errors. So the question to ask is whether each
# non-private estimate lies within the private 95 % interval:

print(textwrap.fill(fits["pooled"].warnings[0], 88))
intervals = dplong.compare(fits, intervals=True)
inside = (intervals.lower <= non_private) & (non_private <= intervals.upper)
inside.where(non_private.notna() & intervals.params.notna())

# %%
# The slope of the wage profile
# -----------------------------
#
# The experience coefficients with their 95 % intervals, private (points and bars) against
# the non-private estimates (crosses). Privacy widens the intervals of the per-user average
# most; the within estimator keeps the slope most precisely, as without privacy. The pooled
# fit, withheld, has no point.

fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2))
for ax, name in zip(axes, ["exper", "expersq"], strict=True):
    rows = np.arange(len(fits))[::-1]
    estimate = intervals.params.loc[name]
    below = estimate - intervals.lower.loc[name]
    above = intervals.upper.loc[name] - estimate
    ax.errorbar(
        estimate,
        rows,
        xerr=[below, above],
        fmt="o",
        capsize=3,
        label="private, 95 % interval",
    )
    ax.plot(non_private.loc[name], rows, "kx", markersize=8, label="non-private")
    ax.set_yticks(rows, list(fits))
    ax.set_ylim(-0.5, len(fits) - 0.5)
    ax.locator_params(axis="x", nbins=4)
    ax.set_title(name)
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
fig.tight_layout(rect=(0.0, 0.08, 1.0, 1.0))
