"""Helpers shared by the benchmark scripts (not a benchmark; not imported by the tests).

Every ratio a benchmark prints is measured in the same run against a reference computed on the
same data (paired replications), with a Monte Carlo standard error from the delta method.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

import dplong
from dplong.models.reduce import per_user_coefficients


def mse_ratio(private: ArrayLike, reference: ArrayLike) -> tuple[float, float]:
    """``mean(private) / mean(reference)`` of paired squared errors and its delta-method SE."""
    a = np.asarray(private, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.size == 0:
        return math.nan, math.nan
    ma, mb = float(a.mean()), float(b.mean())
    if a.size < 2 or mb == 0.0:
        return (ma / mb if mb else math.nan), math.nan
    r = ma / mb
    cov = np.cov(a, b)
    var = (cov[0, 0] - 2.0 * r * cov[0, 1] + r * r * cov[1, 1]) / (a.size * mb * mb)
    return r, math.sqrt(max(float(var), 0.0))


def rmse_ratio(private: ArrayLike, reference: ArrayLike) -> tuple[float, float]:
    """√ of :func:`mse_ratio` (a ratio of RMSEs) and its SE."""
    r, se = mse_ratio(private, reference)
    root = math.sqrt(r)
    return root, se / (2.0 * root) if root > 0 else math.nan


def rmse(errors: ArrayLike) -> tuple[float, float]:
    """Root mean squared error and its delta-method SE."""
    sq = np.square(np.asarray(errors, dtype=np.float64))
    value = math.sqrt(float(sq.mean()))
    se = float(sq.std(ddof=1)) / math.sqrt(sq.size) / (2.0 * value) if sq.size > 1 else math.nan
    return value, se


def proportion(hits: float, total: int) -> tuple[float, float]:
    """A share and its binomial standard error."""
    p = hits / total if total else math.nan
    return p, math.sqrt(p * (1.0 - p) / total) if total else math.nan


def pm(value: float, se: float, digits: int = 3) -> str:
    """``value ± se`` with a fixed number of significant digits for large values."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:.3g} ± {se:.2g}"
    return f"{value:.{digits}f} ± {se:.{digits}f}"


def seeds(*key: int) -> tuple[np.random.Generator, np.random.Generator, int]:
    """One replication's independent streams, keyed by its seed, cell and replication: the data,
    dplong's noise, and an integer seed for a peer's (or a fit's) own noise. Each replication
    keyed on its own makes a benchmark paired across engine versions: a change that adds a draw
    moves no other replication's data or noise."""
    data, noise, peer = np.random.SeedSequence(list(key)).spawn(3)
    return (
        np.random.default_rng(data),
        np.random.default_rng(noise),
        int(peer.generate_state(1)[0]),
    )


def header(script: str, notes: Sequence[str] = ()) -> None:
    """Print what ran, where and when (versions, cores, load average)."""
    print(f"{script} — dplong {dplong.__version__}")
    print(
        f"date {dt.datetime.now().isoformat(timespec='minutes')}; {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())};"
        f" Python {platform.python_version()}, numpy {np.__version__}; one process"
    )
    for note in notes:
        print(note)


# ---------------------------------------------------------------- simulated panels (issue 10)

#: The issue-10 panels: T = 10 rows per user, AR(1) 0.9 rows of unit marginal variance.
T, PHI = 10, 0.9
#: LongitudinalOLS cells: y = 1 + 0.5 x1 − 0.3 x2 + u + e.
SLOPES = np.array([0.5, -0.3])


def ar1_rows(rng: np.random.Generator, n: int, T: int = T, phi: float = PHI) -> np.ndarray:
    """n x T stationary AR(1) rows with unit marginal variance (a loop over T, not users)."""
    e = rng.normal(size=(n, T))
    x = np.empty((n, T))
    x[:, 0] = e[:, 0]
    for t in range(1, T):
        x[:, t] = phi * x[:, t - 1] + np.sqrt(1 - phi**2) * e[:, t]
    return x


def user_mean_sd(T: int = T, phi: float = PHI) -> float:
    """Exact sd of the mean of T stationary AR(1) rows of unit variance."""
    lags = np.abs(np.subtract.outer(np.arange(T), np.arange(T)))
    return float(np.sqrt(np.sum(phi**lags)) / T)


def ols_panel(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, np.ndarray]:
    """n users x T rows of ``y = 1 + x'SLOPES + u + e`` (u ~ N(0, 1) per user, AR(1) errors,
    x ~ N(0, 1)) as a frame ``user, x1, x2, y``, and every user's OLS coefficients (n x 3)."""
    x = rng.normal(size=(n * T, 2))
    u = np.repeat(rng.normal(size=n), T)
    y = 1.0 + x @ SLOPES + u + ar1_rows(rng, n).ravel()
    users = np.repeat(np.arange(n), T)
    beta, _ = per_user_coefficients(y, np.column_stack([np.ones(y.size), x]), users, n)
    frame = pd.DataFrame({"user": users, "x1": x[:, 0], "x2": x[:, 1], "y": y})
    return frame, beta


#: The per-user statistics of issue 29's skewed cells (``benchmarks/skewed.py``,
#: ``benchmarks/peers.py``): each kind's population mean and variance.
SKEWED: dict[str, tuple[float, float]] = {
    "lognormal 1": (float(np.exp(0.5)), float((np.e - 1.0) * np.e)),
    "lognormal 1.5": (float(np.exp(1.125)), float((np.exp(2.25) - 1.0) * np.exp(2.25))),
    "Pareto 2.5": (1.0 / 1.5, 2.5 / (1.5**2 * 0.5)),  # Lomax: α / ((α - 1)² (α - 2))
    "t3": (0.0, 3.0),
    # 90 % at 0, the rest lognormal(0, 1): 0.1 E X² - (0.1 E X)²
    "90% zeros": (0.1 * float(np.exp(0.5)), 0.1 * float(np.exp(2.0)) - 0.01 * float(np.e)),
}
#: The simulated kinds whose users' statistics are (all but) never below 0, so that ``lower=0``
#: is true of them: each is μ_u ≥ 0 plus the mean of T rows of N(0, 0.1²), a sd of 0.03 (the
#: 90 %-zero mixture, half of whose users are that noise about 0, is left out).
NONNEGATIVE = ("lognormal 1", "lognormal 1.5", "Pareto 2.5")
#: Each user's statistic is the mean of ``T`` rows ``μ_u + e``, e ~ N(0, ROW_SD²).
ROW_SD = 0.1


def skewed_draw(kind: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """n users' μ_u of a kind of :data:`SKEWED`."""
    if kind == "lognormal 1":
        return rng.lognormal(0.0, 1.0, n)
    if kind == "lognormal 1.5":
        return rng.lognormal(0.0, 1.5, n)
    if kind == "Pareto 2.5":
        return rng.pareto(2.5, n)
    if kind == "t3":
        return rng.standard_t(3, n)
    return np.where(rng.random(n) < 0.9, 0.0, rng.lognormal(0.0, 1.0, n))


def skewed_rows(kind: str, rng: np.random.Generator, n: int, T: int = T) -> np.ndarray:
    """An n x T panel of a skewed kind: each user's ``μ_u`` plus N(0, ROW_SD²) rows."""
    return skewed_draw(kind, rng, n)[:, None] + rng.normal(0.0, ROW_SD, (n, T))
