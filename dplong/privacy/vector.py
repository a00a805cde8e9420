"""One release of a vector of public linear functionals of clipped values (a linear smoother).

``weights.T @ clipped`` for public weights (n x G) and values clipped to ``±radius``:
centrally one lattice Laplace vector calibrated to its L1 sensitivity
(:func:`~dplong.privacy.noise.release_weighted_sums`) or one discrete Gaussian vector calibrated
to its L2 sensitivity (:func:`~dplong.privacy.noise.release_weighted_gaussian`), whichever has
less noise for the :class:`~dplong.privacy.budget.VectorBudget`; locally each unit privatises
its own value (Alg 8) and the functionals are post-processing. Neither pays for the G
coordinates by composition: one value moves the vector only where its weights reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import VectorBudget
from dplong.privacy.noise import (
    release_bounded_sum,
    release_weighted_gaussian,
    release_weighted_sums,
)

__all__ = ["VectorRelease", "release_linear"]


@dataclass(frozen=True)
class VectorRelease:
    """The private ``weights.T @ clipped`` (``total``), the scale and exact sd of the noise in
    each coordinate, its law (``"laplace"``, ``"gaussian"``, or ``"normal"`` locally: a
    weighted sum of n draws) and the call's ledger entry.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.vector import VectorRelease
    >>> fields = VectorRelease.__dataclass_fields__
    >>> list(fields)
    ['total', 'scale', 'sd', 'kind', 'entry']
    """

    total: NDArray[np.float64]
    scale: NDArray[np.float64]
    sd: NDArray[np.float64]
    kind: str
    entry: LedgerEntry


def release_linear(
    clipped: NDArray[np.float64],
    radius: float,
    weights: NDArray[np.float64],
    budget: VectorBudget,
    rng: np.random.Generator,
    *,
    local: bool,
    target: str,
    stage: str = "mean",
) -> VectorRelease:
    """Release ``weights.T @ clipped`` (module docstring) with ``budget``; ``target`` names what
    is released in the ledger, ``stage`` what for. Centrally ``clipped`` may hold one value a
    unit and coordinate (n x G; :func:`~dplong.privacy.noise.release_weighted_sums`): the
    sensitivities are the same.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import VectorBudget
    >>> from dplong.privacy.vector import release_linear
    >>> clipped = np.array([1.0, -0.5, 0.25])
    >>> weights = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    >>> exact = release_linear(clipped, 1.0, weights, VectorBudget(1e300),
    ...                        np.random.default_rng(0), local=False, target="curve")
    >>> exact.total.tolist(), exact.kind, exact.entry.stage
    ([0.75, 0.0], 'laplace', 'mean')
    >>> local = release_linear(clipped, 1.0, weights, VectorBudget(1.0),
    ...                        np.random.default_rng(0), local=True, target="y")
    >>> local.kind, local.entry.mechanism
    ('normal', 'local lattice Laplace (Alg 8)')
    """
    points = weights.shape[1]
    if local:
        release = release_bounded_sum(
            clipped[:, None], np.array([radius]), np.array([budget.epsilon]), rng, local=True
        )
        assert release.reports is not None
        energy = np.sqrt((weights**2).sum(axis=0))  # ‖a(x)‖₂: public
        return VectorRelease(
            total=weights.T @ release.reports[:, 0],  # public smoothing of private reports
            scale=np.full(points, float(release.scale[0])),  # of each unit's draw
            sd=float(release.sd[0]) * energy,
            kind="normal",
            entry=LedgerEntry(
                stage,
                "local lattice Laplace (Alg 8)",
                target,
                budget.epsilon,
                0.0,
                0.0,
                float(release.sensitivity[0]),
                float(release.scale[0]),
            ),
        )
    if gaussian_is_better(unit_norms(weights), budget):
        joint = release_weighted_gaussian(clipped, radius, weights, budget.rho, rng)
        mechanism, kind = "discrete Gaussian, L2 over the grid (CKS 2020)", "gaussian"
        costs = (0.0, 0.0, budget.rho)
    else:
        joint = release_weighted_sums(clipped, radius, weights, budget.epsilon, rng)
        mechanism, kind = "lattice Laplace, L1 over the grid (Alg 1, 4)", "laplace"
        costs = (budget.epsilon, 0.0, 0.0)
    entry = LedgerEntry(stage, mechanism, target, *costs, joint.sensitivity, float(joint.scale[0]))
    return VectorRelease(joint.total, joint.scale, joint.sd, kind, entry)


def unit_norms(weights: NDArray[np.float64]) -> tuple[float, float]:
    """A unit's largest L1 and L2 norms of its row of ``weights``: the sensitivities, per unit
    of radius, of the Laplace and of the Gaussian release of the vector (public).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.vector import unit_norms
    >>> unit_norms(np.array([[3.0, 4.0], [1.0, 0.0]]))
    (7.0, 5.0)
    """
    l1 = float(np.abs(weights).sum(axis=1).max())
    l2 = float(np.sqrt((weights**2).sum(axis=1)).max())
    return l1, l2


def gaussian_is_better(norms: tuple[float, float], budget: VectorBudget) -> bool:
    """Whether the L2 release (ρ) has less noise than the L1 release (ε) of the same vector:
    Laplace sd ``√2 Δ₁ / ε`` against Gaussian ``Δ₂ / √(2ρ)``, ``norms`` (Δ₁, Δ₂) per unit of
    radius from the public weights (:func:`unit_norms`) (a budget of ρ alone: the Gaussian; of
    ε alone: the Laplace).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import VectorBudget
    >>> from dplong.privacy.vector import gaussian_is_better, unit_norms
    >>> spread = unit_norms(np.full((100, 50), 0.01))  # each unit reaches all 50 points a little
    >>> [gaussian_is_better(spread, b) for b in (VectorBudget(1.0, 0.1), VectorBudget(1.0))]
    [True, False]
    """
    if budget.rho <= 0.0 or budget.epsilon <= 0.0:
        return budget.rho > 0.0
    l1, l2 = norms
    return l2 / math.sqrt(2.0 * budget.rho) < math.sqrt(2.0) * l1 / budget.epsilon
