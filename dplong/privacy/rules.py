"""What a release of column means knows of its statistics beyond the matrix.

:class:`Rules` gathers the public facts (a stated scale, bounds, support ends, a public
centre, the tail model) and the numbers released before it (an earlier :class:`Count`) that
switch on the named rules of the engine's stages (:func:`~dplong.privacy.engine.release_means`);
:class:`UserWeights` are per-user precision weights, with the helpers that turn them into the
standardising roots ``√w_u`` and the factor that carries a per-user bias bound to the weighted
mean. The design notes are in ``docs/design/engine.md``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dplong.privacy.radius import OFFERS, AssumedTail, Moment, Offer, TailOption, Tails

__all__ = ["Count", "Rules", "UserWeights", "bias_factor", "moment_rule", "weight_roots"]


@dataclass(frozen=True)
class UserWeights:
    """Per-user precision weights of a release (design notes, "Per-user (precision) weights"):
    ``values`` (n,) private, ``floor`` a public lower bound in (0, 1]; the public cap is 1.

    A user with a statistic weighs ``clip(values[u], floor, 1)`` (enforced by the engine, so the
    sensitivity never depends on the caller); users without one weigh nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.rules import UserWeights
    >>> UserWeights(np.array([0.2, 1.0, 3.0]), floor=0.25).clipped().tolist()
    [0.25, 1.0, 1.0]
    """

    values: NDArray[np.float64]
    floor: float

    def __post_init__(self) -> None:
        if not 0.0 < self.floor <= 1.0:
            raise ValueError(f"the weights' floor must lie in (0, 1], got {self.floor!r}")

    def clipped(self) -> NDArray[np.float64]:
        """The weights within their public bounds ``[floor, 1]`` (NaN: the floor)."""
        return np.clip(np.nan_to_num(self.values, nan=self.floor), self.floor, 1.0)


@dataclass(frozen=True)
class Count:
    """A private count of users with a statistic (weighted: ``Σ w_u``) already released by an
    earlier release of the same fit: its values (one, or one per column) and the standard
    deviation of its noise. A later release over the *same* users with the same weights
    divides by it instead of counting again (post-processing: no budget).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.engine import release_means
    >>> from dplong.privacy.rules import Rules
    >>> from dplong.privacy.options import ReleaseOptions
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(1.0, 1.0, size=(2000, 2))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> first = release_means(x[:, :1], names=("a",), options=options, rng=rng)
    >>> second = release_means(x[:, 1:], names=("b",), options=options, rng=rng,
    ...                        rules=Rules(count=first.count))
    >>> "count" in {e.stage for e in second.privacy.entries}, bool(second.users == first.users)
    (False, True)
    """

    users: NDArray[np.float64]
    sd: float


@dataclass(frozen=True)
class Rules:
    """What a release knows of its statistics beyond the matrix — public facts, or numbers
    released before it — each switching on a named rule of the stages. The default is a plain
    release of column means whose scale is estimated.

    Attributes
    ----------
    scale : ndarray, optional
        Stated variance proxy of one user's statistic per column (None: estimated, stage 3).
    complete_rows : bool
        A user's statistics are all there or all missing: one count, and a row with any NaN
        counts as missing.
    bounds : (ndarray, ndarray), optional
        Public (lower, upper) per column holding every statistic (values outside are clipped
        to them): only the count and the mean run.
    user_weights : UserWeights, optional
        Precision-weighted means ``Σ w_u x_u / Σ w_u`` (:class:`UserWeights`).
    tail : str, tuple of str, Moment or AssumedTail, optional
        The tail model of the radius and the clipping bias
        (:func:`~dplong.privacy.radius.clipping_bias`; default Gaussian for an estimated scale,
        sub-Gaussian for a stated one; ``"exponential"`` for skewed statistics such as sums of
        squares, ``"chi-square"`` for squares of a normal statistic), one or one per column.
        A stated :class:`~dplong.privacy.radius.Moment` bound is the moment rule: the bulk keeps
        the plug-in model of an estimated or stated scale, no tail stage runs, and every
        column's radius and bias bound are those of the moment (:func:`moment_rule`). An
        :class:`~dplong.privacy.radius.AssumedTail` is a kind the model assumes: the tail
        stage runs as with no tail given, its count held against what that kind puts beyond
        the rungs (:func:`~dplong.privacy.radius.beyond_share`), and where the plan affords no
        tail count the release says it went unchecked
        (:func:`~dplong.privacy.tails.unchecked_notes`).
    count : Count, optional
        An earlier release's private count of the same users, divided by instead of a new one
        (the plan budgets none).
    lower : ndarray, optional
        Public lower ends of the columns' support (0 for squares; -inf for none): an interval
        reaching below one is moved up (:func:`~dplong.privacy.projection.supported_centre`),
        or cut there where the tail stage measured a heavy tail
        (:func:`~dplong.privacy.projection.support_window`), and under the chi-square tail the
        scale keeps a share of the spread its median implies
        (:func:`~dplong.privacy.scale.square_spread`).
    relative : bool
        Share the final budget so that each column's noise counts relative to its own radius
        (columns in different units) instead of in the data's units.
    public_centre : (ndarray, ndarray), optional
        A public centre per column and a bound on its distance to the column's mean that fails
        with probability at most γ: no midpoint or refinement stage (a plan made with
        ``centred=True``).
    partial_users : bool
        Each column is by design a statistic of some users only (a level of a grouping: the
        estimand is the mean over the users with rows there), so no note says that many users
        have none; the private counts are in the results.
    offers : frozenset of str
        The fit options the model takes through which its analyst vouches for the tail
        (:data:`~dplong.privacy.radius.Offer`): the reliability warnings name no other.

    Examples
    --------
    Spending per user is at least 0: the interval is moved up, off the empty side.

    >>> import numpy as np
    >>> from dplong.privacy.engine import release_means
    >>> from dplong.privacy.rules import Rules
    >>> from dplong.privacy.options import ReleaseOptions
    >>> x = np.random.default_rng(0).exponential(50.0, size=(3000, 1))
    >>> options = ReleaseOptions.check(3000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> plain = release_means(x, names=("spend",), options=options, rng=np.random.default_rng(1),
    ...                       rules=Rules(tail="exponential"))
    >>> moved = release_means(x, names=("spend",), options=options, rng=np.random.default_rng(1),
    ...                       rules=Rules(lower=np.zeros(1), tail="exponential"))
    >>> bool(moved.interval[0, 1] > plain.interval[0, 1])
    True
    """

    scale: NDArray[np.float64] | None = None
    complete_rows: bool = True
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    user_weights: UserWeights | None = None
    tail: TailOption | None = None
    count: Count | None = None
    lower: NDArray[np.float64] | None = None
    relative: bool = False
    public_centre: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    partial_users: bool = False
    offers: frozenset[Offer] = OFFERS

    def of(self, columns: NDArray[np.intp], d: int) -> Rules:
        """These rules for the chosen ``columns`` of a release of ``d``: each fact given per
        column taken at them (one given for all stays as it is).

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.radius import Moment
        >>> from dplong.privacy.rules import Rules
        >>> rules = Rules(scale=np.array([1.0, 4.0, 9.0]), tail=Moment(4, [1.0, 2.0, 3.0]))
        >>> part = rules.of(np.array([2, 0]), 3)
        >>> part.scale.tolist(), part.tail.bound
        ([9.0, 1.0], (3.0, 1.0))
        """

        def pick(values: ArrayLike) -> NDArray[np.float64]:
            return np.broadcast_to(np.asarray(values, dtype=np.float64), (d,))[columns]

        def kinds(kind: Tails) -> Tails:
            return kind if isinstance(kind, str) else tuple(kind[j] for j in columns)

        tail = self.tail
        if isinstance(tail, Moment):
            tail = Moment(tail.k, tail.bounds(d)[columns])
        elif isinstance(tail, AssumedTail):
            tail = AssumedTail(kinds(tail.kind), signed=tail.signed)
        elif tail is not None:
            tail = kinds(tail)
        bounds, centre, count = self.bounds, self.public_centre, self.count
        return dataclasses.replace(
            self,
            scale=None if self.scale is None else pick(self.scale),
            bounds=None if bounds is None else (pick(bounds[0]), pick(bounds[1])),
            tail=tail,
            count=None if count is None else Count(pick(count.users), count.sd),
            lower=None if self.lower is None else pick(self.lower),
            public_centre=None if centre is None else (pick(centre[0]), pick(centre[1])),
        )


def moment_rule(rules: Rules) -> Moment | None:
    """The moment rule: a stated :class:`~dplong.privacy.radius.Moment` bound (None if none);
    the bulk then keeps the plug-in model of the scale, chosen as when no tail is stated.

    Under ``E|x_u - μ|^k <= M`` the clipping bias of ``c ± w`` is at most ``M (k-1)^(k-1) /
    (k^k (w - e)^(k-1))`` (:func:`~dplong.privacy.radius.moment_bias`; Lemma 3.6 and Corollary
    3.13 of the person-level paper), whatever the shape of the tail: the rough mean's and the
    final stage's bias bounds are this one, and the final radius balances it against the
    mean's noise, never inside the bulk's radius (the paper's Theorem 3.14 takes the larger of
    its Gaussian and heavy-tail radii). The bound being stated, nothing is counted to find the
    tail: no tail stage runs and its share stays with the mean. All public: the bound, the
    centre's error bound and the budget."""
    return rules.tail if isinstance(rules.tail, Moment) else None


def weight_roots(user_weights: UserWeights | None) -> NDArray[np.float64] | None:
    """``√w_u`` as a column (n x 1), or None without weights."""
    return None if user_weights is None else np.sqrt(user_weights.clipped())[:, None]


def bias_factor(
    user_weights: UserWeights | None, users: NDArray[np.float64], n: int
) -> NDArray[np.float64] | float:
    """``Σ √w_u / Σ w_u``, bounded by ``1 / √floor`` (each ``√w_u <= w_u / √floor``) and by
    ``√(n / W)`` (Cauchy–Schwarz): how a per-user bound on the standardised clipping bias
    becomes one on the weighted mean. 1 without weights."""
    if user_weights is None:
        return 1.0
    return np.minimum(1.0 / math.sqrt(user_weights.floor), np.sqrt(n / np.maximum(users, 1.0)))
