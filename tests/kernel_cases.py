"""Shared data and plain-numpy references of the Priestley–Chao tests (``test_kernel.py``,
``test_smoother.py``, ``test_curves.py``).

The references compute Def 4.8 with a loop over grid points and no package code, so that a
release with the noise off (ε = 1e300, every geometric draw exactly 0, the lattice step ~1e-16
of the range) and wide radii (nothing clipped) must equal them to 1e-10 (docs/design §5.2).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import NDArray

NOISE_OFF = {"epsilon": 1e300, "delta": 0.5, "random_state": 0}
WIDE = {"error_sd": 1e3, "amplitude": 1e3}  # radii ~1e4: nothing is clipped
KERNELS = ("gaussian", "epanechnikov")


def gaussian(u: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.exp(-0.5 * u**2) / math.sqrt(2.0 * math.pi)


def epanechnikov(u: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.where(np.abs(u) <= 1.0, 0.75 * (1.0 - u**2), 0.0)


KERNEL_FUNCTIONS = {"gaussian": gaussian, "epanechnikov": epanechnikov}


def priestley_chao(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    grid: NDArray[np.float64],
    bandwidth: float,
    kernel: str,
    hi: float,
) -> NDArray[np.float64]:
    """Def 4.8: f̂(g) = Σ_i (x_(i+1) - x_(i)) / b · K((g - x_(i)) / b) · Y_(i), sorted by x, the
    last spacing to the domain's end ``hi``."""
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    spacing = np.diff(np.append(xs, hi))
    k = KERNEL_FUNCTIONS[kernel]
    return np.array([np.sum(spacing / bandwidth * k((g - xs) / bandwidth) * ys) for g in grid])


def local_spread(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    grid: NDArray[np.float64],
    bandwidth: float,
    hi: float,
    centre: float,
    width: float,
) -> NDArray[np.float64]:
    """The item-level curve's local spread with the noise off: the responses projected onto
    ``centre ± width``, their level at each grid point (the curve of the projected responses
    over its kernel mass), and the mean of their squared deviations from it, clipped at
    ``width²``, under the Priestley–Chao weights of the Gaussian kernel squared (spacing times
    K², the last spacing to ``hi``)."""
    order = np.argsort(x, kind="stable")
    xs, z = x[order], np.clip(y[order] - centre, -width, width)
    spacing = np.diff(np.append(xs, hi))
    spread = []
    for g in grid:
        kernel = gaussian((g - xs) / bandwidth)
        level = np.sum(spacing * kernel * z) / np.sum(spacing * kernel)
        squares = np.minimum((z - level) ** 2, width**2)
        spread.append(np.sum(spacing * kernel**2 * squares) / np.sum(spacing * kernel**2))
    return np.array(spread)


def user_curve(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    grid: NDArray[np.float64],
    bandwidth: float,
    kernel: str,
) -> NDArray[np.float64]:
    """One user's curve as the package defines it: Σ w K((g - x) / b) / b · Y over the user's
    own visits divided by their kernel mass Σ w K / b, NaN where that mass is below 1/4. A
    visit time's weight is the spacing to the next, the last one's the spacing from the one
    before, a lone one's the bandwidth; rows at one time share it equally."""
    times, tied = np.unique(x, return_counts=True)
    if times.size == 1:
        spacing = np.array([bandwidth])
    else:
        spacing = np.append(np.diff(times), times[-1] - times[-2])
    weight = (spacing / tied)[np.searchsorted(times, x)]
    k = KERNEL_FUNCTIONS[kernel]
    mass = np.array([np.sum(weight / bandwidth * k((g - x) / bandwidth)) for g in grid])
    sums = np.array([np.sum(weight / bandwidth * k((g - x) / bandwidth) * y) for g in grid])
    return np.where(mass >= 0.25, sums / np.where(mass > 0, mass, 1.0), np.nan)


def zeta(bandwidth: float, length: float, kernel: str) -> float:
    """Lemma 4.9's boundary width ζ = b √(2 log(2/b)) (b relative to the domain's length);
    a kernel supported on [-1, 1] loses no mass beyond ζ = b."""
    gaussian_zeta = bandwidth * math.sqrt(2.0 * math.log(2.0 * length / bandwidth))
    return gaussian_zeta if kernel == "gaussian" else min(bandwidth, gaussian_zeta)


def items(n: int = 400, seed: int = 0, lo: float = -1.0, hi: float = 3.0) -> pd.DataFrame:
    """Item-level rows at unequally spaced design points in [lo, hi], rows shuffled."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(lo, hi, n))
    y = np.sin(x) + rng.normal(0.0, 0.5, n)
    frame = pd.DataFrame({"x": x, "y": y})
    return frame.sample(frac=1.0, random_state=seed + 1).reset_index(drop=True)


def growth_panel(n: int = 40, seed: int = 3) -> pd.DataFrame:
    """User-level rows: 1-12 visits per user at random times in [0, 2], user levels, missing
    responses (one user has none left), rows shuffled."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 13, n)
    user = np.repeat(np.arange(n), sizes)
    x = rng.uniform(0.0, 2.0, user.size)
    y = np.cos(x) + rng.normal(size=n)[user] + rng.normal(0.0, 0.3, user.size)
    frame = pd.DataFrame({"user": user, "x": x, "y": y})
    frame.loc[rng.random(len(frame)) < 0.15, "y"] = np.nan
    frame.loc[frame["user"] == 5, "y"] = np.nan
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
