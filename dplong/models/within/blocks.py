"""The within estimator's releases (:mod:`dplong.models.within`, steps 1 and 2): the design
blocks row by row, the influence block, and the budget shares between them."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from dplong.models.blocks import Block, Statistics
from dplong.models.reduce import symmetric
from dplong.models.within.basis import _Basis
from dplong.models.within.noise import _centre_bound
from dplong.models.within.regressors import WithinProducts
from dplong.privacy.budget import users_share
from dplong.privacy.engine import Release
from dplong.privacy.radius import SCALE_ONLY, AssumedTail, Tail
from dplong.privacy.rules import UserWeights

__all__ = ["DESIGN_USERS", "INFLUENCE_WEIGHTS", "within_blocks", "within_shares"]

#: The influence block carries β̂'s noise, the design acts through the pilot's error only —
#: but as a product of its noises, whose error explodes once the released design stops
#: resolving the regressors. The design gets :data:`DESIGN_USERS` (ε·n per design column) when
#: it can, within :data:`INFLUENCE_WEIGHTS`: an influence column gets 2 to 3 times a design
#: column's budget (chosen with ``benchmarks/within_and_weights.py``: docs/design/within.md).
DESIGN_USERS = 240.0
INFLUENCE_WEIGHTS = (2.0, 3.0)
#: The tail model of the cross products ``z_i'x_j``, ``z_i'y`` and of a square ``z_i'z_i``
#: without an association with the earlier regressors (``docs/design/within.md``).
_CROSS: Tail = "exponential"


def within_shares(n: int, p: int, epsilon: float) -> tuple[float, float]:
    """Budget shares of the design and influence blocks for n users, p coefficients and the
    fit's ε (public facts): the design's ``p(p+1)/2 + p`` columns get :data:`DESIGN_USERS` / n
    of ε each, within the bounds :data:`INFLUENCE_WEIGHTS` put on the influence's p columns.

    Examples
    --------
    >>> from dplong.models.within import within_shares
    >>> [round(s, 3) for s in within_shares(545, 2, 4.0)]   # the wage panel: 240 users' worth
    [0.55, 0.45]
    >>> [round(s, 3) for s in within_shares(5000, 2, 1.0)]  # capped: 3 : 1 per column
    [0.455, 0.545]
    """
    design = p * (p + 1) / 2 + p
    low, high = (design / (design + w * p) for w in INFLUENCE_WEIGHTS[::-1])
    share = users_share(DESIGN_USERS * design, n, epsilon, low, high)
    return share, 1.0 - share


def within_blocks(
    names: tuple[str, ...],
    products: Callable[[], WithinProducts],
    scale: float | None,
    shares: tuple[float, ...],
    max_rows: int,
    *,
    gamma: float,
) -> list[Block]:
    """The blocks of :mod:`dplong.models.within` for the coefficients ``names``: p design
    blocks (row i: ``p - i + 1`` columns, its part of ``shares[0]`` in proportion) and the
    influence block (``shares[1]``, :func:`within_shares`). ``products`` gives every user's
    within cross products (:func:`~dplong.models.reduce.within_cross_products`, NaN for fewer
    than two rows) and row counts: private, asked for once, when a fit runs the blocks.
    ``scale`` is a stated variance proxy of every released per-user statistic (None: estimated
    privately); ``max_rows`` the public cap ``T_cap`` of the weights; ``gamma`` the failure
    probability of the influence's public centre's bound.

    Examples
    --------
    The blocks of ``lwage ~ exper + hours`` on the wage panel: public labels and budget shares
    (the statistics are computed only when a fit runs the blocks):

    >>> import dplong
    >>> from dplong.models.within import within_blocks, within_shares
    >>> def products():
    ...     raise AssertionError("not read to make the blocks")
    >>> blocks = within_blocks(("exper", "hours"), products, None, within_shares(545, 2, 4.0),
    ...                        10, gamma=0.05)
    >>> for block in blocks:
    ...     print(list(block.names), round(block.share, 3))
    ["Z'Z[exper,exper]", "Z'X[exper,hours]", "Z'y[exper]"] 0.33
    ["Z'Z[hours,hours]", "Z'y[hours]"] 0.22
    ['influence[exper]', 'influence[hours]'] 0.45
    """
    p = len(names)
    k = p * (p + 1) // 2

    @functools.cache
    def statistics() -> tuple[NDArray[np.float64], NDArray[np.float64], UserWeights]:
        """Every user's A_u (n x p x p), b_u and weights (private; computed once)."""
        sums, rows = products()
        freedom = rows - 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            per_freedom = sums / freedom[:, None]  # per within degree of freedom
        weights = np.minimum(freedom, max_rows - 1.0) / (max_rows - 1.0)
        return (
            symmetric(per_freedom[:, :k], p),
            per_freedom[:, k:],
            UserWeights(weights, 1.0 / (max_rows - 1.0)),
        )

    def proxy(d: int) -> NDArray[np.float64] | None:
        return None if scale is None else np.full(d, scale)

    def row_block(i: int) -> Block:
        def build(done: tuple[Release, ...]) -> Statistics:
            # public: the vector g_i and the square's tail, from the earlier rows' releases
            basis = _Basis.of(done, p)
            g = basis.vectors[:, i]
            a, b, weights = statistics()
            products = np.einsum("m,umj->uj", g, a)  # every user's g_i'A_u
            # a user's statistic near the doubles' edge overflows to inf, which the release
            # clips like any far value: numpy's warning of it would be one user's to say
            with np.errstate(over="ignore", invalid="ignore"):
                matrix = np.column_stack([products @ g, products[:, i + 1 :], b @ g])
            associated = bool(basis.associated[i])
            return Statistics(
                matrix,
                scale=proxy(p - i + 1),
                user_weights=weights,
                tail=("chi-square" if associated else _CROSS, *[_CROSS] * (p - i)),
                # its support's end, where the square's tail is what its mean rests on
                lower=np.array([0.0 if associated else -np.inf, *[-np.inf] * (p - i)]),
            )

        label = names[i]
        return Block(
            (
                f"Z'Z[{label},{label}]",
                *(f"Z'X[{label},{name}]" for name in names[i + 1 :]),
                f"Z'y[{label}]",
            ),
            shares[0] * (p - i + 1) / (k + p),
            build,
            stated_scale=scale is not None,
            weighted=True,
            # stated, not measured (the square's kind is refined at build): no tail count
            tail=_CROSS,
            count_from=None if i == 0 else 0,  # the same users with the same weights
            moment=False,  # nothing reads the design's sampling sd
            offers=SCALE_ONLY,  # the within fit takes no tail=
        )

    def influence_block(done: tuple[Release, ...]) -> Statistics:
        basis = _Basis.of(done, p)
        a, b, weights = statistics()  # every user's ψ_u = Â⁻¹ (b_u - A_u β₀), n x p
        scores = b - a @ basis.pilot
        # their mean is the pilot's error: 0 is a public centre, off by a bound the released
        # design gives (no midpoint to locate)
        centre = (np.zeros(p), _centre_bound(basis, gamma))
        with np.errstate(over="ignore", invalid="ignore"):  # inf: clipped as any value is
            influence = scores @ basis.inverse.T
        return Statistics(influence, scale=proxy(p), user_weights=weights, centre=centre)

    return [row_block(i) for i in range(p)] + [
        Block(
            tuple(f"influence[{name}]" for name in names),
            shares[1],
            influence_block,
            stated_scale=scale is not None,
            weighted=True,
            # checked by counts on each side: a one-sided excess biases, a symmetric one not
            tail=AssumedTail("exponential", signed=True),
            count_from=0,
            relative=True,  # each coefficient's noise in its own units: the fit's are unit-free
            centred=True,
            offers=SCALE_ONLY,  # the within fit takes no tail=
        )
    ]
