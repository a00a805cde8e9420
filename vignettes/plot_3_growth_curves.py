"""
Growth curves: user-level Priestley–Chao regression
===================================================

How does a pig's weight grow, week by week? The dietox data (Lauridsen, Højsgaard & Sørensen
1999) hold the weekly weights of 72 pigs over 12 weeks: one growth curve per pig. Each pig is
one user, and its whole curve is protected. :class:`dplong.PriestleyChao` with ``groups=``
smooths every pig's own weighings into a curve,

.. math:: \\hat f_u(x) = \\sum_t \\frac{w_{ut}}{b}\\,
          K\\Big(\\frac{x - x_{ut}}{b}\\Big)\\, y_{ut},

with :math:`w_{ut}` the time to the pig's next weighing (the last one's to the end of the
domain), and releases the mean curve over pigs, :math:`\\frac1n \\sum_u \\hat f_u(x)`, at a grid
of points x: each grid point is one column of the multivariate noisy Winsorized mean (paper
Algorithm 5), and the budget is shared over the grid points.

We fit it to the 72 pigs, compare it with the same curve computed without privacy, and then
repeat the analysis on a simulated herd of 5 000 pigs, where user-level privacy becomes cheap.
The last section shows the item-level model (one weighing per pig at public ages), with an
automatic bandwidth and error bounds that include the smoothing bias.

Seeds (``random_state=``) are set for reproducibility of this page only; a real release uses
fresh randomness.
"""

# %%
# The public choices
# ------------------
#
# Before looking at any weight, we fix everything the release will publish:
#
# * the **domain** of x, the range of the weighing times, from the study design: weeks 1
#   to 12. It must not be read off the data (here it happens to be the same, because the
#   design says so);
# * the **bandwidth** b = 1 week, the spacing of the weighings. Much less than the spacing,
#   and a pig's curve would be a row of spikes at its weighing days; much more, and the
#   curve is flattened and the boundary zones (below) grow;
# * the **grid**: 6 equally spaced points (weeks 1, 3.2, 5.4, ...). Each grid point is a
#   separate private mean, so every point costs budget (more below);
# * the **scale**, the variance of one pig's curve value at each grid point. We take the
#   standard growth of vignette 2, 25 kg at week 1 plus 7 kg a week (a round public figure,
#   not estimated from these data), and assume that pigs of one age differ by about 15 % of
#   it: ``scale = (0.15 × standard weight)²``, one value per grid point.

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import dplong
from dplong.dependence import AR1
from dplong.exceptions import DplongWarning, InsufficientUsersError
from dplong.kernels import get_kernel
from dplong.models.curves import user_curves
from dplong.simulate import panel_rows

pigs = dplong.datasets.load_dietox()
DOMAIN = (1.0, 12.0)  # weeks 1 to 12: the study design
BANDWIDTH = 1.0  # one week, the spacing of the weighings
grid = np.linspace(*DOMAIN, 6).round(6)  # rounded: the points label the results
standard = 25.0 + 7.0 * (grid - 1.0)  # public standard growth, kg
scale = np.round((0.15 * standard) ** 2, 1)
pd.DataFrame({"standard weight": standard, "scale": scale}, index=pd.Index(grid, name="week"))

# %%
# The private fit
# ---------------
#
# With 72 pigs and 6 grid points, each grid point gets only a sixth of the budget, and its
# private midpoint a share of that. At ε = 1 this is far too little for the midpoint to find
# the pigs, and dplong refuses the release *before* spending anything:

model = dplong.PriestleyChao.from_formula(
    "Weight ~ Time", pigs, groups="Pig", domain=DOMAIN, bandwidth=BANDWIDTH, grid=grid
)
try:
    model.fit(epsilon=1.0, scale=scale, random_state=0)
except InsufficientUsersError as err:
    print(f"epsilon=1 refused: {err}")

# %%
# So we spend ε = 16, a large budget, which shows how expensive user-level curves are for so
# few users:

res = model.fit(epsilon=16.0, scale=scale, random_state=0)
print(res.summary())

# %%
# Without privacy
# ---------------
#
# The release estimates the mean of the pigs' smoothed curves. Its non-private counterpart is
# the plain average of the per-pig curves, which :func:`dplong.models.curves.user_curves`
# computes (rows sorted by pig, then by time). This, and the weekly mean weights, are
# non-private statistics of the data, shown here only to judge the private curve.


def mean_user_curve(frame, x, y, groups, grid, bandwidth, domain, kernel="gaussian"):
    """The non-private mean over users of their Priestley–Chao curves on ``grid`` (rows with
    ``x`` in ``domain``, as the fit reads them)."""
    rows = frame[frame[x].between(*domain)].sort_values([groups, x])
    codes, users = pd.factorize(rows[groups])
    curves = user_curves(
        rows[x].to_numpy(float),
        rows[y].to_numpy(float),
        codes,
        len(users),
        grid,
        get_kernel(kernel),
        bandwidth,
    )
    return np.nanmean(curves, axis=0)  # over the users with a curve value at each point


reference = mean_user_curve(pigs, "Time", "Weight", "Pig", res.grid, BANDWIDTH, DOMAIN)
weekly = pigs.groupby("Time")["Weight"].mean()
res.curve().assign(**{"non-private": reference}).round(2)

# %%
# The private curve with its pointwise 95 % bands (:meth:`~dplong.results.CurveResults.plot`),
# next to the non-private mean curve and the weekly mean weights:

fig, ax = plt.subplots(figsize=(7, 4.2))
res.plot(ax)
ax.plot(res.grid, reference, "k--", label="non-private mean of pig curves")
ax.plot(weekly.index, weekly.to_numpy(), "kx", label="weekly mean weight (raw)")
ax.set_xlabel("week")
ax.set_ylabel("weight (kg)")
ax.set_title("72 pigs, ε = 16")
ax.legend(loc="upper left")
fig.tight_layout()

# %%
# Boundary flags
# --------------
#
# Near the ends of the domain the kernel hangs over the edge: there are no weighings before
# week 1 or after week 12 to balance it. A raw Priestley–Chao sum would fall toward 0 there;
# dplong divides each pig's curve by its kernel mass, so it does not, but the smoothing is
# one-sided: at week 1 the curve averages weighings from later weeks only, and sits above
# the week-1 mean. The paper's Lemma 4.9 only covers points at least ζ from both ends, with
# :math:`\zeta = b\sqrt{2\log(2/b)}` for the Gaussian kernel (b relative to the length of the
# domain; ζ = b for a compactly supported kernel such as ``"epanechnikov"``). Here
# ζ ≈ 2.5 weeks. ``res.boundary`` flags the grid points inside these zones, the plot shades
# them, and the error-bound table carries the flag. The gap there is not privacy noise: the
# non-private curve shows it just the same.

print(res.error_bound())

# %%
# Read the curve in the interior only, or widen the domain beyond the ages you care about
# (the domain is a public choice, and every weighing must lie in it).
#
# A larger herd
# -------------
#
# The noise of a user-level release shrinks like 1/(nε). We simulate a herd of 5 000 pigs that
# grow along a Gompertz curve (mature weight about 250 kg, pig to pig ±10 %), weighed once a
# week on a random day (±0.3 weeks) with one weighing in ten missing, and with measurement
# errors that are correlated within a pig (AR(1), sd 2 kg, drawn by
# :func:`dplong.simulate.panel_rows`). The simulation is seeded for reproducibility.


def gompertz(week, mature=250.0):
    """Mean weight (kg) of a pig of the given mature weight at the given age in weeks."""
    return mature * np.exp(-np.exp(-(week - 10.4) / 11.27))


rng = np.random.default_rng(2024)
N_HERD, WEEKS = 5_000, np.arange(1, 13)
mature = 250.0 * np.exp(rng.normal(0.0, 0.1, N_HERD))
day = np.clip(WEEKS + rng.uniform(-0.3, 0.3, (N_HERD, WEEKS.size)), *DOMAIN)
errors = panel_rows(N_HERD, WEEKS.size, AR1(phi=0.6, variance=4.0), random_state=rng)
weighed = rng.random((N_HERD, WEEKS.size)) > 0.1
herd = pd.DataFrame(
    {
        "pig": np.repeat(np.arange(N_HERD), WEEKS.size)[weighed.ravel()],
        "week": day[weighed],
        "weight": (gompertz(day, mature[:, None]) + errors)[weighed],
    }
)
print(f"{N_HERD} pigs, {len(herd)} weighings")

# %%
# With this many pigs, ε = 1 is enough for a grid point every week (12 points, one per
# bandwidth). The scale follows the simulation's design: 15 % of the mean weight, plus the
# measurement variance.

herd_grid = np.linspace(*DOMAIN, 12)
herd_scale = np.round((0.15 * gompertz(herd_grid)) ** 2 + 4.0, 1)
herd_model = dplong.PriestleyChao.from_formula(
    "weight ~ week", herd, groups="pig", domain=DOMAIN, bandwidth=BANDWIDTH, grid=herd_grid
)
herd_res = herd_model.fit(epsilon=1.0, scale=herd_scale, random_state=1)
herd_reference = mean_user_curve(herd, "week", "weight", "pig", herd_grid, BANDWIDTH, DOMAIN)

fig, ax = plt.subplots(figsize=(7, 4.2))
herd_res.plot(ax)
ax.plot(herd_grid, herd_reference, "k--", label="non-private mean of pig curves")
fine = np.linspace(*DOMAIN, 200)
ax.plot(fine, np.exp(0.1**2 / 2) * gompertz(fine), "k:", label="true mean growth")
ax.set_xlabel("week")
ax.set_ylabel("weight (kg)")
ax.set_title("5 000 simulated pigs, ε = 1")
ax.legend(loc="upper left")
fig.tight_layout()

# %%
# In the interior the private curve, the non-private one and the true mean growth agree to
# within a few kilograms; the band is the privacy noise plus the sampling error under the
# stated scale. At both ends, private and non-private curves leave the true growth together:
# the one-sided smoothing of the boundary again.

pd.DataFrame(
    {
        "private": herd_res.params,
        "non-private": herd_reference,
        "noise sd": herd_res.noise_sd,
        "boundary": herd_res.boundary,
    }
).round(2)

# %%
# Bandwidth and grid: resolution against noise
# --------------------------------------------
#
# The bandwidth sets the resolution: features of the growth curve narrower than b are
# smoothed away, and the boundary zones are about 2.5 b wide. It does not change the noise of
# a user-level release directly, which depends on the scale (the spread of the pigs' curve
# values) and on the budget per grid point.
#
# The grid sets how many private means are released. Each grid point gets a share of ε, so
# the noise sd at every point grows with the number of points: in proportion to it under
# basic composition, more slowly once Rényi composition of the Laplace or Gaussian releases
# is better (dplong takes whichever is, for every fit). With less budget per point, each
# point's private midpoint needs a larger share of it, and the refinement stage (a rough mean
# that narrows the clipping interval, "default (refined)") stops paying for itself. Below a
# certain budget per point the midpoint may miss the pigs (dplong warns; recorded below), and
# then could not find them at all (dplong refuses). Points closer than b add little anyway:
# neighbouring curve values are nearly the same. One point per bandwidth is usually enough.

rows = []
for count in (6, 12, 23, 45):
    points = np.linspace(*DOMAIN, count).round(6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DplongWarning)
        fit = dplong.PriestleyChao.from_formula(
            "weight ~ week", herd, groups="pig", domain=DOMAIN, bandwidth=BANDWIDTH, grid=points
        ).fit(epsilon=1.0, scale=np.round((0.15 * gompertz(points)) ** 2 + 4.0, 1), random_state=1)
    rows.append(
        {
            "grid points": count,
            "spacing (weeks)": points[1] - points[0],
            "noise sd mid-curve (kg)": fit.noise_sd.iloc[np.argmin(np.abs(points - 6.5))],
            "constants": fit.variant,
            "warned": "yes" if caught else "no",
        }
    )
pd.DataFrame(rows).set_index("grid points").round(2)

# %%
# The ledger
# ----------
#
# Every grid point is released by a private median for its midpoint (the exponential
# mechanism on a public log grid) and a mean of the clipped curve values (lattice Laplace,
# Algorithms 1 and 4, or discrete Gaussian); a refined release adds a rough mean per point,
# and each point has a private count of the pigs with a curve value there. The ledger lists
# every call, with the composed total. The summary shows its digest, one line per stage:

herd_res.privacy.digest()

# %%
# Item-level curves: public design points
# ---------------------------------------
#
# Sometimes each unit contributes one observation at a design point fixed in advance, say a
# survey that weighs 10 000 pigs once each, at ages spread evenly over weeks 1 to 12 by a
# public schedule. Without ``groups`` the model is item-level (paper Definition 4.7): the ages
# are public, only the weights are private, and the whole curve is released by one Laplace
# vector calibrated to its L1 sensitivity, with no composition over the grid.
#
# ``bandwidth="auto"`` balances the smoothing bias, the sampling error and the privacy noise
# (Corollary 4.11) at fit time, from public quantities only: ``error_sd``, a bound on the
# standard deviation of a weight around the mean curve (15 % of at most 105 kg, rounded up to
# 16 kg), and ``amplitude``, half the range of the mean curve (about 40 kg; we say 45).
# With ``lipschitz`` (the curve grows by at most 9 kg a week) and ``sup_norm`` (it stays below
# 120 kg), the error bounds also cover the smoothing bias, computed exactly on the public
# design.

ages = np.linspace(*DOMAIN, 10_000)
survey = pd.DataFrame(
    {"age": ages, "weight": gompertz(ages) * np.exp(rng.normal(0.0, 0.1, ages.size))}
)
item = dplong.PriestleyChao.from_formula(
    "weight ~ age", survey, domain=DOMAIN, bandwidth="auto", grid=12
).fit(epsilon=1.0, error_sd=16.0, amplitude=45.0, lipschitz=9.0, sup_norm=120.0, random_state=2)
print(f"automatic bandwidth: {item.bandwidth:.3f} weeks")
print(item.error_bound())

# %%
# The ``bias`` column bounds :math:`|\sum_i a_i(x) f(x_i) - f(x)|`, the gap between the
# smoothed curve and the curve itself, for any curve with the stated smoothness. It is small
# in the interior and large at the two boundary points, where half of the kernel's mass is
# missing: their totals are honest but useless, and the flag says so. ``total`` adds privacy
# noise, sampling error and bias, and holds with at least the probability shown.

fig, ax = plt.subplots(figsize=(7, 4.2))
item.plot(ax)
ax.plot(fine, gompertz(fine) * np.exp(0.1**2 / 2), "k:", label="true mean growth")
ax.set_xlabel("age (weeks)")
ax.set_ylabel("weight (kg)")
ax.set_title(f"item level: 10 000 pigs weighed once, ε = 1, b = {item.bandwidth:.2f}")
ax.legend(loc="upper left")
fig.tight_layout()
