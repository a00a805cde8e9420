"""Private histograms over the bins ``B_k = (2hk - h, 2hk + h]``, ``k ∈ Z``.

* :func:`stable_histogram` — Algorithm 2 (central, (ε, δ)-DP): unbounded bins, only non-empty
  bins exist in memory, noisy proportions below the threshold are suppressed.
* :func:`randomized_histogram` — Algorithm 7 (local, (ε, 0)-LDP): finitely many bins, every
  user randomizes each bin indicator, the aggregate is debiased.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.noise import (
    debiased_share,
    flip_probability,
    geometric_rate,
    two_sided_geometric,
)

__all__ = [
    "Histogram",
    "bin_centre",
    "bin_index",
    "randomized_histogram",
    "stable_histogram",
    "stable_histogram_threshold",
]


#: Bin indices from this magnitude on are computed exactly: the double ``(x - h) / 2h`` no
#: longer holds their ceiling, and beyond ``2**63`` no int64 holds them.
_EXACT_BEYOND = 2.0**53


@dataclass(frozen=True)
class Histogram:
    """A private histogram: bin indices ``k`` (bin centre ``2 h k``) and their proportions.

    Attributes
    ----------
    half_width : float
        Half-width ``h`` of every bin ``(2hk - h, 2hk + h]``.
    bins : ndarray of int
        Indices ``k`` of the reported bins, ascending.
    proportions : ndarray of float
        Private proportion of users in each reported bin.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import Histogram
    >>> hist = Histogram(half_width=0.5, bins=np.array([-1, 0, 2]),
    ...                  proportions=np.array([0.2, 0.5, 0.3]))
    >>> hist.centers.tolist()
    [-1.0, 0.0, 2.0]
    >>> hist.mode()
    0
    """

    half_width: float
    bins: NDArray[Any]
    proportions: NDArray[np.float64]

    @property
    def centers(self) -> NDArray[np.float64]:
        """Bin centres ``2 h k``, one per reported bin.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy import Histogram
        >>> Histogram(0.25, np.array([-2, 3]), np.array([0.4, 0.6])).centers.tolist()
        [-1.0, 1.5]
        """
        if self.bins.dtype == object:  # exact indices beyond 2**53 (see bin_index)
            return np.array([bin_centre(k, self.half_width) for k in self.bins.tolist()])
        return np.asarray(2.0 * self.half_width * self.bins, dtype=np.float64)

    def mode(self) -> int | None:
        """Bin index ``k`` with the largest private mass; ``None`` if no bin survived.

        Ties go to the smallest ``k``. The midpoint is the bin centre ``2 h k``.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy import Histogram
        >>> Histogram(1.0, np.array([4, 7]), np.array([0.3, 0.6])).mode()
        7
        >>> Histogram(1.0, np.array([], dtype=np.int64), np.array([])).mode() is None
        True
        """
        if self.bins.size == 0:
            return None
        return int(self.bins[np.argmax(self.proportions)])


def bin_index(values: NDArray[np.float64], half_width: float) -> NDArray[Any]:
    """``k`` with ``values ∈ (2hk - h, 2hk + h]``, for finite ``values``.

    ``int64`` while every ``|k| < 2**53``. Float rounding may then put a value lying on an
    edge into the neighbouring bin; that is still a fixed function of the one value, so the
    sensitivity argument is unaffected. Any larger index (huge values, e.g. ``5e19`` at
    ``h = 2.7`` is beyond int64, and ``1e308`` at ``h = 0.001`` beyond every double) is
    computed exactly in rational arithmetic, and the array is then one of Python ints.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.histogram import bin_index
    >>> bin_index(np.array([-1.0, -0.5, 0.0, 0.5, 0.6, 3.0]), half_width=0.5).tolist()
    [-1, -1, 0, 0, 1, 3]
    >>> k = bin_index(np.array([0.0, 1e308]), half_width=0.001)
    >>> k.dtype, k[1] > 2**1000, bin_centre(k[1], half_width=0.001) == 1e308
    (dtype('O'), True, True)
    """
    with np.errstate(over="ignore", invalid="ignore"):
        quotient = np.ceil((values - half_width) / (2.0 * half_width))
    small = np.abs(quotient) < _EXACT_BEYOND
    if small.all():
        return quotient.astype(np.int64)
    index = np.empty(values.shape, dtype=object)
    index[small] = quotient[small].astype(np.int64).tolist()
    h = Fraction(half_width)
    index[~small] = [math.ceil((Fraction(v) - h) / (2 * h)) for v in values[~small].tolist()]
    return index


def bin_centre(k: int, half_width: float) -> float:
    """The centre ``2hk`` of bin ``k`` as the nearest double (exact for any bin a double
    falls in, however large ``k``).

    Examples
    --------
    >>> from dplong.privacy.histogram import bin_centre
    >>> bin_centre(3, 0.5), bin_centre(2**80 + 1, 0.5) == 2.0**80
    (3.0, True)
    """
    if abs(k) < _EXACT_BEYOND:
        return 2.0 * half_width * k
    return float(2 * Fraction(half_width) * k)


def stable_histogram_threshold(n: int, epsilon: float, delta: float) -> float:
    """Suppression threshold of Algorithm 2: ``(2 / (ε n)) log(2 / δ) + 1 / n``.

    A bin is reported only if its noisy proportion reaches this value.

    Examples
    --------
    >>> from dplong.privacy import stable_histogram_threshold
    >>> round(stable_histogram_threshold(n=1000, epsilon=1.0, delta=1e-6), 4)
    0.03
    """
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

    Returns
    -------
    Histogram
        The bins that survived the threshold, with their noisy proportions.

    Examples
    --------
    90 % of the users lie in bin 0, 10 % in bin 5 and one outlier alone in bin 500; the
    outlier's bin is suppressed:

    >>> import numpy as np
    >>> from dplong.privacy import stable_histogram
    >>> values = np.r_[np.zeros(900), np.full(99, 10.0), 1000.0]
    >>> hist = stable_histogram(values, half_width=1.0, epsilon=1.0, delta=1e-6,
    ...                         rng=np.random.default_rng(0))
    >>> hist.bins.tolist(), hist.mode()
    ([0, 5], 0)
    >>> bool(abs(hist.proportions[0] - 0.9) < 0.05)
    True
    """
    n = values.shape[0] if n is None else n
    values = values[np.isfinite(values)]  # a non-finite value falls in no bin
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
    Binomial(n - c_k, q)`` — identical in distribution to summing the n reports (docs/design:
    the local protocol is simulated, not run on devices; the odds of each report are exact,
    the aggregate's law is exact up to the accuracy of numpy's binomial sampler). The debiasing
    step is line 5.
    Users beyond ``values`` (``n`` is the public total) report an all-zero indicator.

    Returns
    -------
    Histogram
        Every bin of ``bins`` with its debiased proportion (which may be negative).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import randomized_histogram
    >>> values = np.r_[np.zeros(9000), np.full(1000, 2.0)]
    >>> hist = randomized_histogram(values, half_width=1.0, bins=np.arange(-2, 3),
    ...                             epsilon=2.0, rng=np.random.default_rng(0))
    >>> hist.bins.tolist(), hist.mode()
    ([-2, -1, 0, 1, 2], 0)
    >>> bool(abs(hist.proportions[2] - 0.9) < 0.05)       # bins[2] is k = 0
    True
    """
    n = values.shape[0] if n is None else n
    values = values[np.isfinite(values)]  # a non-finite value reports an all-zero indicator
    q = flip_probability(epsilon / 2.0)
    reach = 2.0 * half_width * (float(np.abs(bins).max()) + 2.0)  # beyond it: in no bin
    k = bin_index(np.clip(values, -reach, reach), half_width)
    position = np.searchsorted(bins, k)
    inside = (position < bins.size) & (bins[np.minimum(position, bins.size - 1)] == k)
    counts = np.bincount(position[inside], minlength=bins.size)
    reported = rng.binomial(counts, 1.0 - q) + rng.binomial(n - counts, q)
    return Histogram(
        half_width, bins, np.asarray(debiased_share(reported / n, q), dtype=np.float64)
    )
