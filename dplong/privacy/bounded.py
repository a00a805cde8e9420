"""Mean of values clipped to a *public* interval: Algorithm 1 on ``[lower, upper]``-clipped data.

Used where the range of a per-user statistic is known from public facts (a variance, a squared
deviation from an already-released mean), so no private midpoint is needed and the whole
budget goes to the noise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry, PrivacyLedger, split_budget
from dplong.privacy.noise import release_bounded_sum, two_sided_geometric_variance

__all__ = ["clipped_mean"]


def clipped_mean(
    matrix: NDArray[np.float64],
    lower: NDArray[np.float64],
    upper: NDArray[np.float64],
    *,
    epsilon: float,
    rng: np.random.Generator,
    names: tuple[str, ...],
    identified: NDArray[np.bool_] | None = None,
    local: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], PrivacyLedger]:
    """ε-DP means of the columns clipped to ``[lower_j, upper_j]`` (basic composition).

    Users whose statistic does not exist (``identified`` False) contribute the interval's centre.
    Returns ``(estimate, noise_scale, noise_sd, ledger)``.

    Examples
    --------
    Four users and the public range [0, 2]; with the noise switched off (an absurd ε, for
    illustration only) the estimate is the mean of the clipped values 0.5, 1, 2 and 0:

    >>> import numpy as np
    >>> from dplong.privacy.bounded import clipped_mean
    >>> x = np.array([[0.5], [1.0], [3.0], [-2.0]])
    >>> lower, upper = np.array([0.0]), np.array([2.0])
    >>> est, scale, sd, ledger = clipped_mean(x, lower, upper, epsilon=1e300,
    ...                                       rng=np.random.default_rng(0), names=("x",))
    >>> est.tolist(), sd.tolist()
    ([0.875], [0.0])

    A user without a statistic counts as the centre 1:

    >>> est, *_ = clipped_mean(x, lower, upper, epsilon=1e300, rng=np.random.default_rng(0),
    ...                        names=("x",), identified=np.array([True, True, True, False]))
    >>> est.tolist()
    [1.125]

    At ε = 1 the noise is real and the ledger records it:

    >>> est, scale, sd, ledger = clipped_mean(x, lower, upper, epsilon=1.0,
    ...                                       rng=np.random.default_rng(0), names=("x",))
    >>> ledger.epsilon, ledger.delta, ledger.entries[0].mechanism
    (1.0, 0.0, 'lattice Laplace, public interval (Alg 1)')
    """
    n, d = matrix.shape
    budget = split_budget(epsilon, 0.0, d)
    centre, radius = (upper + lower) / 2.0, (upper - lower) / 2.0
    with np.errstate(invalid="ignore"):
        offsets = np.clip(matrix - centre, -radius, radius)
    if identified is not None:
        offsets = np.where(identified[:, None], offsets, 0.0)
    release = release_bounded_sum(offsets, radius, np.full(d, budget.epsilon), rng, local=local)
    estimate = centre + release.total / n
    per_draw = release.step / release.rate
    noise_scale = per_draw if local else per_draw / n
    noise_sd = (
        np.sqrt(release.draws * two_sided_geometric_variance(release.rate)) * release.step / n
    )
    sensitivity = release.sensitivity if local else release.sensitivity / n
    entries = tuple(
        LedgerEntry(
            "local lattice Laplace, public interval (Alg 1)"
            if local
            else "lattice Laplace, public interval (Alg 1)",
            name,
            budget.epsilon,
            0.0,
            float(sensitivity[j]),
            float(noise_scale[j]),
        )
        for j, name in enumerate(names)
    )
    ledger = PrivacyLedger(
        entries, budget.total_epsilon, 0.0, budget.method, "local" if local else "central"
    )
    return estimate, noise_scale, noise_sd, ledger
