"""Private histograms over the bins ``B_k = (2hk - h, 2hk + h]``, ``k ∈ Z``.

* :func:`stable_histogram` — Algorithm 2 (central, (ε, δ)-DP): unbounded bins, only non-empty
  bins exist in memory, noisy proportions below the threshold are suppressed.
* :func:`randomized_histogram` — Algorithm 7 (local, (ε, 0)-LDP): finitely many bins, every
  user randomizes each bin indicator, the aggregate is debiased.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.noise import (
    flip_probability,
    geometric_rate,
    two_sided_geometric,
)

__all__ = [
    "Histogram",
    "bin_index",
    "randomized_histogram",
    "stable_histogram",
    "stable_histogram_threshold",
]


@dataclass(frozen=True)
class Histogram:
    """A private histogram: bin indices ``k`` (bin centre ``2 h k``) and their proportions."""

    half_width: float
    bins: NDArray[np.int64]
    proportions: NDArray[np.float64]

    @property
    def centers(self) -> NDArray[np.float64]:
        return np.asarray(2.0 * self.half_width * self.bins, dtype=np.float64)

    def mode(self) -> int | None:
        """Index of the bin with the largest private mass; ``None`` if no bin survived."""
        if self.bins.size == 0:
            return None
        return int(self.bins[np.argmax(self.proportions)])


def bin_index(values: NDArray[np.float64], half_width: float) -> NDArray[np.int64]:
    """``k`` with ``values ∈ (2hk - h, 2hk + h]``.

    Float rounding may put a value lying on an edge into the neighbouring bin; that is still a
    fixed function of the one value, so the sensitivity argument is unaffected.
    """
    return np.ceil((values - half_width) / (2.0 * half_width)).astype(np.int64)


def stable_histogram_threshold(n: int, epsilon: float, delta: float) -> float:
    """Suppression threshold of Algorithm 2: ``(2 / (ε n)) log(2 / δ) + 1 / n``."""
    return 2.0 / (epsilon * n) * math.log(2.0 / delta) + 1.0 / n


def stable_histogram(
    values: NDArray[np.float64],
    half_width: float,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n: int | None = None,
) -> Histogram:
    """Algorithm 2 (StableHistogram) over unbounded bins of width ``2 * half_width``.

    Each non-empty bin's count gets two-sided geometric noise of rate ε/2 — the lattice analogue
    of ``Lap(2 / (ε n))`` on proportions: replacing one user changes two counts by one each.
    A bin that is empty in one data set and holds one user in its neighbour survives with
    probability ``P(Z >= (2/ε) log(2/δ)) <= δ/2``, the stability argument of Lemma C.1; it
    holds verbatim for the geometric tail ``e^{-ε t/2}``. The threshold uses the ε the noise
    actually has after :func:`geometric_rate`'s float slack. ``n`` (default: all values) is the
    public number of users; users without a value simply fall in no bin.
    """
    n = values.shape[0] if n is None else n
    rate = float(geometric_rate(epsilon, 2.0))
    eps = 2.0 * rate
    bins, counts = np.unique(bin_index(values, half_width), return_counts=True)
    noisy = counts + two_sided_geometric(rng, rate, counts.shape)
    proportions = noisy / n
    keep = proportions >= stable_histogram_threshold(n, eps, delta)
    return Histogram(half_width, bins[keep], proportions[keep])


def randomized_histogram(
    values: NDArray[np.float64],
    half_width: float,
    bins: NDArray[np.int64],
    epsilon: float,
    rng: np.random.Generator,
    n: int | None = None,
) -> Histogram:
    """Algorithm 7 (RandomizedHistogram): ε-LDP histogram over the finite set ``bins``.

    Every user holds the one-hot indicator of their bin (all zeros outside ``bins``) and reports
    each bit through randomized response at ε/2 (Alg 6); a user's indicator differs in at most
    two bits between any two inputs, so each report is ε-LDP. The analyst only uses the
    number of 1-reports per bin, which we draw from its exact law — ``Binomial(c_k, 1-q) +
    Binomial(n - c_k, q)`` — identical in distribution to summing the n reports (DESIGN.md:
    the local protocol is simulated, not run on devices; the odds of each report are exact,
    the aggregate's law is exact up to the accuracy of numpy's binomial sampler). The debiasing
    step is line 5.
    Users beyond ``values`` (``n`` is the public total) report an all-zero indicator.
    """
    n = values.shape[0] if n is None else n
    q = flip_probability(epsilon / 2.0)
    k = bin_index(values, half_width)
    position = np.searchsorted(bins, k)
    inside = (position < bins.size) & (bins[np.minimum(position, bins.size - 1)] == k)
    counts = np.bincount(position[inside], minlength=bins.size)
    reported = rng.binomial(counts, 1.0 - q) + rng.binomial(n - counts, q)
    debiased = (reported / n - q) / (1.0 - 2.0 * q)
    return Histogram(half_width, bins, debiased)
