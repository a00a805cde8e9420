"""Alg 4's projection and the lattice sums of the clipped values.

The final stage of the engine (:func:`~dplong.privacy.engine.release_means`) and its
refinement clip each user's statistic onto ``c ± w`` (:func:`centred`, with precision weights
the standardised clip), may move the interval towards a support's public end
(:func:`supported_centre`) while reading the mean from the unmoved anchor (:func:`anchored`),
and release the sums of the clipped values (:func:`release_clipped`) and of their squares
(:func:`release_second_moment`) with lattice Laplace or discrete Gaussian noise, each entered in
the ledger (:func:`mean_entries`). Every term lies in ``±w``, so one user moves a sum by at most
``2w``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import FinalBudget
from dplong.privacy.noise import LatticeRelease, release_bounded_sum, release_gaussian_sum

__all__ = [
    "MAX_RADIUS",
    "anchored",
    "centred",
    "mean_entries",
    "release_clipped",
    "release_second_moment",
    "support_window",
    "supported_centre",
]

#: Largest radius: beyond it the lattice and the sums would overflow (only reached when the
#: data are at the edge of the doubles, or a column has no data and its midpoint is arbitrary).
MAX_RADIUS = 2.0**1000


def supported_centre(
    centre: NDArray[np.float64],
    radius: NDArray[np.float64],
    lower: NDArray[np.float64],
    reach: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The centre of the final interval ``c ± w`` moved up, by at most ``reach``, towards
    ``lower + w`` where ``c - w`` is below the support's public end ``lower``: the same width
    (so the same sensitivity and noise in the sum), less of it spent below every user, and the
    upper clip farther out (a square's right tail: on the wage panel ``z'z`` of ``expersq``
    beyond ``exper`` lost 20-30 % of its mean to an interval whose lower half held no one).
    ``reach`` bounds the move: a mean read from the moved centre, ``m + S / N̂``, carries ``(m -
    x̄) (N̂ - N) / N̂``, the count's noise times the move; read from the unmoved anchor
    (:func:`anchored`) it moves up to w at no such cost, and only the rest is priced. A
    function of released numbers and public facts: post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.projection import supported_centre
    >>> centre, radius = np.array([90.0, 90.0, 90.0]), np.array([180.0, 60.0, 180.0])
    >>> supported_centre(centre, radius, np.zeros(3), np.array([np.inf, np.inf, 40.0])).tolist()
    [180.0, 90.0, 130.0]
    """
    with np.errstate(invalid="ignore"):  # a NaN centre (no data) stays NaN
        return centre + np.clip(lower + radius - centre, 0.0, reach)


def support_window(
    centre: NDArray[np.float64], radius: NDArray[np.float64], lower: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The middle and half-width of the window ``[L, c + w]``: the interval ``c ± w`` with the
    part below a support's public end L, where no user is, cut off. Where L lies inside the
    interval at or below the centre the width, and with it the noise of the sum (whose
    sensitivity is the width), shrinks from 2w to ``c + w - L``, and the upper clip, and so
    the clipping bias, stays where it was; elsewhere the interval is unchanged. The centre
    stays inside the window, so the mean can be read from it (:func:`anchored`). Public facts
    and released numbers only: post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.projection import support_window
    >>> middle, half = support_window(np.array([1.0, 5.0]), np.array([4.0, 4.0]), np.zeros(2))
    >>> middle.tolist(), half.tolist()
    ([2.5, 5.0], [2.5, 4.0])
    """
    with np.errstate(invalid="ignore"):  # a NaN centre (no data) is on no support
        gap = centre - lower
        on = (gap >= 0.0) & (gap < radius)
    half = np.where(on, (gap + radius) / 2.0, radius)
    return np.where(on, lower + half, centre), half


def anchored(
    clipped: NDArray[np.float64], present: NDArray[np.bool_], shift: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The terms of the final sum when the interval's middle m lies ``shift`` = s in [0, w]
    above the anchor a the mean is read from (a support's end moved the interval up,
    :func:`supported_centre`): a user with a statistic gives ``clip(x - m, ±w)``, one without
    gives ``-s``. Every term lies in ``±w``, so replacing one user moves the sum by at most 2w
    as before; and the sum plus ``n s`` (n public) is ``Σ (clip(x - m, ±w) + s)`` over the
    users with a statistic, the sum of their values clipped to ``[m - w, m + w]`` about the
    anchor. The mean is then ``a + (sum + n s) / N̂``: the count's noise multiplies its
    distance to the anchor, not to the moved middle. Unchanged where s = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.projection import anchored
    >>> clipped = np.array([[0.5], [-1.0], [0.0]])  # about m; the third user has no statistic
    >>> present = np.array([[True], [True], [False]])
    >>> anchored(clipped, present, np.array([0.75]))[:, 0].tolist()
    [0.5, -1.0, -0.75]
    """
    if not np.any(shift):
        return clipped
    return np.where(present, clipped, -shift)


def centred(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    radius: NDArray[np.float64],
    root: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Alg 4's projection, centred: ``clip(x - c, ±w)``, 0 for users without a statistic; with
    ``root`` (n x 1, ``√w_u <= 1``) the weighted ``√w_u clip(√w_u (x - c), ±w)``, which stays
    within ``±w`` (a product with a factor at most 1 never rounds past it)."""
    with np.errstate(invalid="ignore"):
        if root is None:
            clipped = np.clip(matrix - centre, -radius, radius)
        else:
            clipped = root * np.clip(root * (matrix - centre), -radius, radius)
    return np.where(np.isnan(clipped), 0.0, clipped)


def release_second_moment(
    clipped: NDArray[np.float64],
    present: NDArray[np.bool_],
    radius: NDArray[np.float64],
    budget: FinalBudget,
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> tuple[LatticeRelease, NDArray[np.float64]]:
    """The lattice sum of the squares of the clipped contributions ``v_u`` (n x d, ``|v_u| <=
    √w_u r``; ``present`` where a user has a statistic) and its half-range ``r²/2``.

    Each square ``v_u² ∈ [0, w_u r²]`` is centred at ``w_u r²/2`` (``w_u = 1`` without weights,
    ``root`` = ``√w_u``) and so lies in ``±r²/2``: replacing one user moves the sum by at most
    r², whatever the weights. The centring adds up to ``W r²/2`` over the users present, which
    the caller adds back with the released count. The half-range is capped for the lattice
    (:data:`MAX_RADIUS`; the squares are clipped to it).

    Examples
    --------
    With a vast ε the noise vanishes: the sum plus the centring is the sum of the squares.

    >>> import numpy as np
    >>> from dplong.privacy.projection import release_second_moment
    >>> from dplong.privacy.budget import FinalBudget
    >>> v = np.array([[0.5], [-1.0], [0.0]])  # three users' contributions, radius 1
    >>> budget = FinalBudget("laplace", np.array([1e300]), np.zeros(1))
    >>> moment, half = release_second_moment(v, np.ones((3, 1), dtype=bool), np.array([1.0]),
    ...                                      budget, np.random.default_rng(0))
    >>> float(moment.total[0] + 3 * half[0])
    1.25
    """
    with np.errstate(over="ignore"):  # a far miss's radius squares to inf: capped
        half = np.minimum(radius**2 / 2.0, MAX_RADIUS)
        centring = half if root is None else half * root**2
        squares = np.where(present, clipped**2 - centring, 0.0)
    return release_clipped(np.clip(squares, -half, half), half, budget, rng), half


def release_clipped(
    clipped: NDArray[np.float64],
    radius: NDArray[np.float64],
    budget: FinalBudget,
    rng: np.random.Generator,
) -> LatticeRelease:
    """The lattice sum of centred clipped values with the budget's mechanism. A column without
    a budget (withheld before this stage, :attr:`FinalBudget.live`) gets no draw: its total,
    noise scale and sd are NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import FinalBudget
    >>> from dplong.privacy.projection import release_clipped
    >>> budget = FinalBudget("laplace", np.array([1e300, 0.0]), np.zeros(2))
    >>> rel = release_clipped(np.ones((3, 2)), np.ones(2), budget, np.random.default_rng(0))
    >>> rel.total.tolist(), rel.sd.tolist()
    ([3.0, nan], [0.0, nan])
    """
    live = budget.live
    if not live.all():
        d = live.size
        part = release_clipped(clipped[:, live], radius[live], budget.of(live), rng)

        def spread(values: NDArray[np.float64], fill: float) -> NDArray[np.float64]:
            out = np.full(d, fill)
            out[live] = values
            return out

        reports = None if part.reports is None else np.full((clipped.shape[0], d), np.nan)
        if reports is not None:
            reports[:, live] = part.reports
        return LatticeRelease(
            spread(part.total, np.nan),
            spread(part.sensitivity, np.nan),
            spread(part.step, np.nan),
            spread(part.rate, np.nan),
            part.draws,
            spread(part.scale, np.nan),
            spread(part.sd, np.nan),
            part.kind,
            reports,
        )
    if budget.kind == "gaussian":
        return release_gaussian_sum(clipped, radius, budget.rho, rng)
    return release_bounded_sum(clipped, radius, budget.epsilon, rng)


def mean_entries(
    stage: str,
    names: tuple[str, ...],
    epsilon: NDArray[np.float64] | float,
    rho: NDArray[np.float64] | float,
    release: LatticeRelease,
    n: int,
) -> list[LedgerEntry]:
    """One entry per column of a lattice release of clipped sums (sensitivity of the sum), but
    for a column without a budget (no draw)."""
    d = len(names)
    eps, rhos = np.broadcast_to(epsilon, (d,)), np.broadcast_to(rho, (d,))
    gaussian = release.kind == "gaussian"
    mechanism = "discrete Gaussian (CKS 2020)" if gaussian else "lattice Laplace (Alg 1, 4)"
    drawn = (rhos if gaussian else eps) > 0.0
    return [
        LedgerEntry(
            stage,
            mechanism,
            name,
            float(eps[j]) if release.kind != "gaussian" else 0.0,
            0.0,
            float(rhos[j]) if release.kind == "gaussian" else 0.0,
            float(release.sensitivity[j]),
            float(release.scale[j]),
        )
        for j, name in enumerate(names)
        if drawn[j]
    ]
