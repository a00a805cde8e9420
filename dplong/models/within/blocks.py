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
from dplong.models.within.noise import _walk
from dplong.models.within.regressors import WithinProducts
from dplong.privacy.budget import users_share
from dplong.privacy.engine import Release
from dplong.privacy.radius import SCALE_ONLY, AssumedTail, Tail
from dplong.privacy.rules import UserWeights

__all__ = [
    "DESIGN_USERS",
    "EARLY_CAP",
    "EARLY_FLOOR",
    "EARLY_STEPS",
    "EARLY_USERS",
    "INFLUENCE_WEIGHTS",
    "within_blocks",
    "within_shares",
]

#: The influence block carries β̂'s noise, the design acts through the pilot's error only —
#: but as a product of its noises, whose error explodes once the released design stops
#: resolving the regressors. The design gets :data:`DESIGN_USERS` (ε·n per design column) when
#: it can, within :data:`INFLUENCE_WEIGHTS`: an influence column gets 2 to 3 times a design
#: column's budget (chosen with ``benchmarks/within_and_weights.py``: docs/design/within.md).
DESIGN_USERS = 240.0
INFLUENCE_WEIGHTS = (2.0, 3.0)
#: The Newton steps before the last: at most :data:`EARLY_STEPS`, each with
#: :data:`EARLY_USERS` users' worth of ε·n per coefficient, where that plans soundly and all of
#: them take at most :data:`EARLY_CAP` of the influence's share (the last step's noise is
#: β̂'s). They only bring the pilot near β̃: each step's noise and what its clip cut are
#: corrected by the next (chosen with the size of a true null beside lognormal regressors
#: against normal regressors' noise: docs/design/within.md, "Newton steps").
EARLY_STEPS, EARLY_USERS, EARLY_CAP = 2, 300.0, 0.25
#: ... and at least this share of the influence's (a vast n ε: not a vanishing share).
EARLY_FLOOR = 0.05
#: The tail model of the cross products ``z_i'x_j``, ``z_i'y`` and of a square ``z_i'z_i``
#: without an association with the earlier regressors (``docs/design/within.md``).
_CROSS: Tail = "exponential"


def within_shares(
    n: int,
    p: int,
    epsilon: float,
    sound: Callable[[float], bool] | None = None,
    counted: Callable[[float], bool] | None = None,
) -> tuple[float, ...]:
    """Budget shares of the design blocks and the Newton steps' influence blocks for n users,
    p coefficients and the fit's ε (public facts): the design's ``p(p+1)/2 + p`` columns get
    :data:`DESIGN_USERS` / n of ε each, within the bounds :data:`INFLUENCE_WEIGHTS` put on the
    influence's p columns. Of the influence's share, each early Newton step gets
    :data:`EARLY_USERS` users' worth per coefficient and the last step the rest: as many early
    steps as :data:`EARLY_STEPS` and :data:`EARLY_CAP` allow, ``sound`` (whether p columns
    plan soundly with a share, :func:`~dplong.models.release_blocks.sound_plan`) accepts, and
    leave the last step the tail counts it would have had alone (``counted``:
    :func:`~dplong.models.release_blocks.counts_tail`); none, one step as before, where n ε
    affords none.

    Examples
    --------
    >>> from dplong.models.within import within_shares
    >>> [round(s, 3) for s in within_shares(545, 2, 4.0)]   # the wage panel: 240 users' worth
    [0.55, 0.45]
    >>> [round(s, 3) for s in within_shares(5000, 2, 1.0)]  # capped: 3 : 1 per column
    [0.455, 0.12, 0.425]
    >>> [round(s, 3) for s in within_shares(3000, 2, 4.0)]  # two early steps
    [0.455, 0.05, 0.05, 0.445]
    >>> [round(s, 3) for s in within_shares(3000, 2, 4.0, lambda share: share > 0.1)]
    [0.455, 0.545]
    """
    design = p * (p + 1) / 2 + p
    low, high = (design / (design + w * p) for w in INFLUENCE_WEIGHTS[::-1])
    share = users_share(DESIGN_USERS * design, n, epsilon, low, high)
    influence = 1.0 - share
    each = max(EARLY_USERS * p / (n * epsilon), EARLY_FLOOR * influence)

    def kept(rest: float) -> bool:  # the last step keeps the tail counts one step affords
        return counted is None or counted(rest) or not counted(influence)

    steps = next(
        k
        for k in range(EARLY_STEPS, -1, -1)
        if k == 0
        or (
            k * each <= EARLY_CAP * influence
            and (sound is None or sound(each))
            and kept(influence - k * each)
        )
    )
    return (share, *[each] * steps, influence - steps * each)


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
    influence blocks of the Newton steps, the early ones' (``step1``, ...) and the last's
    (``shares[1:]``, :func:`within_shares`). ``products`` gives every user's within cross
    products (:func:`~dplong.models.reduce.within_cross_products`, NaN for fewer than two rows)
    and row counts: private, asked for once, when a fit runs the blocks.
    ``scale`` is a stated variance proxy of every released per-user statistic (None: estimated
    privately); ``max_rows`` the public cap ``T_cap`` of the weights; ``gamma`` the failure
    probability of the influence's public centre's bound.

    Examples
    --------
    The blocks of two regressors for 3,000 users at ε = 4: public labels and budget shares (the
    statistics are computed only when a fit runs the blocks):

    >>> from dplong.models.within import within_blocks, within_shares
    >>> def products():
    ...     raise AssertionError("not read to make the blocks")
    >>> blocks = within_blocks(("exper", "hours"), products, None, within_shares(3000, 2, 4.0),
    ...                        10, gamma=0.05)
    >>> for block in blocks:
    ...     print(list(block.names), round(block.share, 3))
    ["Z'Z[exper,exper]", "Z'X[exper,hours]", "Z'y[exper]"] 0.273
    ["Z'Z[hours,hours]", "Z'y[hours]"] 0.182
    ['step1[exper]', 'step1[hours]'] 0.05
    ['step2[exper]', 'step2[hours]'] 0.05
    ['influence[exper]', 'influence[hours]'] 0.445
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

    def step_block(k: int) -> Callable[[tuple[Release, ...]], Statistics]:
        def build(done: tuple[Release, ...]) -> Statistics:
            basis = _Basis.of(done[:p], p)
            # public: β_k = β₀ + the earlier steps' released mean influences, where used,
            # and the bound on its error that centres this step (post-processing)
            walk = _walk(basis, done[p : p + k], gamma)
            beta = basis.pilot + sum(walk.moves, np.zeros(p))
            a, b, weights = statistics()  # every user's ψ_u = Â⁻¹ (b_u - A_u β_k), n x p
            scores = b - a @ beta
            # their mean is β_k's error: 0 is a public centre, off by the bound
            centre = (np.zeros(p), walk.bounds[k])
            with np.errstate(over="ignore", invalid="ignore"):  # inf: clipped as any value is
                influence = scores @ basis.inverse.T
            return Statistics(influence, scale=proxy(p), user_weights=weights, centre=centre)

        return build

    steps = len(shares) - 2
    return (
        [row_block(i) for i in range(p)]
        + [
            Block(
                tuple(f"step{k + 1}[{name}]" for name in names),
                shares[1 + k],
                step_block(k),
                stated_scale=scale is not None,
                weighted=True,
                # stated: what its clipping cuts the next step corrects (it sees this step's
                # released bias bound in its centre's bound)
                tail=_CROSS,
                count_from=0,
                moment=False,  # the last step's release gives the sampling sd
                relative=True,
                centred=True,
                offers=SCALE_ONLY,
            )
            for k in range(steps)
        ]
        + [
            Block(
                tuple(f"influence[{name}]" for name in names),
                shares[-1],
                step_block(steps),
                stated_scale=scale is not None,
                weighted=True,
                # checked by counts on each side: a one-sided excess biases, a symmetric one not
                tail=AssumedTail("exponential", signed=True),
                count_from=0,
                relative=True,  # each coefficient's noise in its own units: the fit's are unit-free
                centred=True,
                offers=SCALE_ONLY,  # the within fit takes no tail=
            ),
        ]
    )
