"""Private projection intervals: a private midpoint from the mode of a private histogram.

* :func:`central_midpoint` — Algorithm 3 (central, (ε, δ)-DP), with the paper's fallback
  ``m̂ = 0`` and a failure flag when no bin survives the stable histogram.
* :func:`local_midpoint` — Algorithm 9 (local, ε-LDP) over the bins whose centre lies in
  ``[-B, B]``.

The interval's half-width (``3τ`` in the paper's Algorithm 3, ``τ + 2τ'`` in §7.1.2) is the
caller's choice; these functions return the midpoint ``m̂ = 2 h k̂`` only.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dplong._validation import warn
from dplong.exceptions import InsufficientUsersError, ParameterError
from dplong.privacy.histogram import (
    bin_centre,
    randomized_histogram,
    stable_histogram,
    stable_histogram_threshold,
)

__all__ = ["MAX_LOCAL_BINS", "central_midpoint", "check_histogram_feasible", "local_midpoint"]

MAX_LOCAL_BINS = 10_000_000
#: Above this threshold the midpoint fails often: a mean near a bin edge splits the data about
#: evenly between two bins of ~(1 - γ)/2 each. The warning depends on public n, ε, δ only.
FRAGILE_THRESHOLD = 0.45


def check_histogram_feasible(
    n: int,
    epsilon: float,
    delta: float,
    *,
    what: str = "private midpoint",
    remedy: str = "a larger midpoint_share",
) -> None:
    """Refuse, before any budget is spent, a stable histogram that can never report a bin.

    A bin survives only if its noisy proportion reaches the threshold; when the threshold
    exceeds 1 (all n users in one bin still fall short in expectation) the midpoint step would
    fail almost surely and the whole budget would be wasted. Above
    :data:`FRAGILE_THRESHOLD` it only warns (:class:`~dplong.exceptions.DplongWarning`).
    ``what`` names the histogram and ``remedy`` the caller's own lever, for the messages.

    Examples
    --------
    >>> from dplong.privacy.interval import check_histogram_feasible
    >>> check_histogram_feasible(n=10_000, epsilon=0.5, delta=1e-6)   # threshold 0.006: fine
    >>> check_histogram_feasible(n=20, epsilon=0.5, delta=1e-6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.InsufficientUsersError: with n=20 users the private midpoint cannot ...
    """
    threshold = stable_histogram_threshold(n, epsilon, delta)
    if threshold > 1.0:
        needed = math.ceil(2.0 / epsilon * math.log(2.0 / delta) + 1.0)
        raise InsufficientUsersError(
            f"with n={n} users the {what} cannot succeed: its histogram threshold "
            f"(2/(eps n)) log(2/delta) + 1/n = {threshold:.3g} exceeds 1 at its "
            f"epsilon={epsilon:.3g}, delta={delta:.3g}. It needs at least {needed} users; "
            f"raise epsilon or delta, or give it {remedy}."
        )
    if threshold > FRAGILE_THRESHOLD:
        warn(
            f"with n={n} users the {what} needs {threshold:.0%} of them in one bin "
            f"(epsilon={epsilon:.3g}, delta={delta:.3g}); with data spread over two bins it "
            f"will often fail (result.failed). More users, epsilon or delta, or {remedy} "
            "make it reliable."
        )


def central_midpoint(
    values: NDArray[np.float64],
    half_width: float,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    n: int | None = None,
) -> tuple[float, bool]:
    """Algorithm 3: return ``(m̂, failed)``; on failure ``m̂ = 0`` as in line 4.

    ``m̂ = 2 h k̂`` is the centre of the mode of :func:`stable_histogram`; it fails when no bin
    survives the suppression threshold.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import central_midpoint
    >>> rng = np.random.default_rng(0)
    >>> values = rng.normal(3.0, 0.1, size=1000)      # all in the bin (2.5, 3.5]
    >>> central_midpoint(values, half_width=0.5, epsilon=1.0, delta=1e-6, rng=rng)
    (3.0, False)

    Values spread one per bin: no bin reaches the threshold and the midpoint falls back to 0.

    >>> central_midpoint(np.arange(1000.0) * 10, half_width=0.5, epsilon=1.0, delta=1e-6,
    ...                  rng=rng)
    (0.0, True)
    """
    mode = stable_histogram(values, half_width, epsilon, delta, rng, n).mode()
    if mode is None:
        return 0.0, True
    return bin_centre(mode, half_width), False


def local_bins(half_width: float, bound: float) -> NDArray[np.int64]:
    """Bin indices ``k`` with ``|2 h k| <= B`` (Algorithm 9, line 1)."""
    k_max = math.floor(bound / (2.0 * half_width))
    if 2 * k_max + 1 > MAX_LOCAL_BINS:
        raise ParameterError(
            f"bound={bound:.3g} is {bound / half_width:.3g} bin half-widths: the local histogram "
            f"would need {2 * k_max + 1} bins (at most {MAX_LOCAL_BINS}); give a tighter bound"
        )
    return np.arange(-k_max, k_max + 1, dtype=np.int64)


def local_midpoint(
    values: NDArray[np.float64],
    half_width: float,
    bound: float,
    epsilon: float,
    rng: np.random.Generator,
    n: int | None = None,
) -> float:
    """Algorithm 9: the centre of the most frequent bin among ``|2 h k| <= B``.

    Raises :class:`~dplong.exceptions.ParameterError` if ``B`` spans more than
    :data:`MAX_LOCAL_BINS` bins.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import local_midpoint
    >>> values = np.random.default_rng(0).normal(3.0, 0.1, size=10_000)
    >>> local_midpoint(values, half_width=0.5, bound=10.0, epsilon=2.0,
    ...                rng=np.random.default_rng(1))
    3.0
    """
    histogram = randomized_histogram(
        values, half_width, local_bins(half_width, bound), epsilon, rng, n
    )
    mode = histogram.mode()
    assert mode is not None  # the local histogram reports every bin
    return 2.0 * half_width * mode
