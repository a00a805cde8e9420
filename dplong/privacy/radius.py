"""Radii of the projection intervals: the paper's concentration radii and an accuracy-aware one.

``scale`` is the sub-Gaussian variance proxy ρ (for Gaussian data: the variance) of *one value*
of a column being averaged — one user's statistic, not one raw row. By Remark 5.3 only this
marginal constant enters the radius, however strongly the users depend on each other.

* :func:`concentration_radius` and :func:`bin_radius` — the paper's τ and τ' (Lemma 5.2,
  §7.1.2), chosen so that *no* user is clipped with probability ``1 - dγ``: used by
  ``variant="theory"``.
* :func:`clipping_bias` and :func:`accurate_radius` — the default. Clipping a few users costs
  a bias, and a narrower interval saves noise in proportion to its width; the person-level
  analysis of Agarwal et al. (2024, Lemma 3.6 / Cor 3.7) bounds the bias by the tail mass
  beyond the interval, ``E(X - c - w)_+ <= ∫_{w-e}^∞ P(X - μ > t) dt`` when ``|c - μ| <= e``,
  evaluated for a normal tail (the plug-in model of an estimated scale), the sub-Gaussian
  tail ``exp(-t²/(2ρ))`` of a stated variance proxy, or a skewed tail (exponential, scaled
  χ²₁) for statistics that are squares; the radius minimises this bias squared
  plus the noise variance. At n = 1,000 and ε = 1 it is about 2.5√ρ, against τ = 4.6√ρ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dplong._validation import per_column, real_number
from dplong.exceptions import ParameterError

__all__ = [
    "DEFAULT_GAMMA",
    "EXPONENTIAL_SPREAD",
    "MAD_OVER_SD",
    "MEDIAN_OFFSET",
    "OFFERS",
    "SCALE_ONLY",
    "SCALE_PAIR",
    "STATED_SCALE",
    "SUPPORT_SPREAD",
    "SYMMETRIC",
    "AssumedTail",
    "Moment",
    "Offer",
    "Tail",
    "TailModel",
    "TailOption",
    "Tails",
    "accurate_radius",
    "beyond_point",
    "beyond_share",
    "bin_radius",
    "check_tail",
    "clipping_bias",
    "concentration_radius",
    "counted_each_side",
    "moment_bias",
    "moment_radius",
    "tail_assumptions",
    "tail_model",
]

Tail = Literal["gaussian", "sub-gaussian", "exponential", "chi-square"]
#: The tail models with no skew: the normal plug-in's and a stated sub-Gaussian proxy's.
SYMMETRIC: tuple[Tail, ...] = ("gaussian", "sub-gaussian")
#: One tail model for every column, or one per column.
Tails = Tail | tuple[Tail, ...]
#: Per tail model, the median absolute deviation from the median over the sd, so that
#: The median of χ²₁.
_CHI_SQUARE_MEDIAN = 0.454936423119572
#: σ̂ = median |x - m̂| / MAD_OVER_SD: Φ⁻¹(3/4) for a normal; for ``μ + v (χ²₁ - 1)`` (sd
#: √2 v) the d solving F₁(m + d) - F₁(m - d) = 1/2 at m the median of χ²₁ (0.41909 v), over
#: √2. The exponential model's clip keeps the normal plug-in spread: its own law's
#: (:data:`EXPONENTIAL_SPREAD` times wider) cost the within estimator's cross products MSE for
#: no coverage (docs/design/engine.md); a column named skewed takes it for its bias bound only.
_NORMAL_MAD = float(special.ndtri(0.75))
MAD_OVER_SD: dict[str, float] = {
    "gaussian": _NORMAL_MAD,
    "sub-gaussian": _NORMAL_MAD,
    "exponential": _NORMAL_MAD,
    "chi-square": 0.41909427882881944 / math.sqrt(2.0),
}
#: The exponential law's scale over the normal plug-in's at the same median absolute deviation
#: (``asinh(1/2)`` against ``Φ⁻¹(3/4)``: a MAD of d is an exponential of scale ``d / asinh(1/2)``
#: about its median): where a released offset names a column skewed, its bias bound takes the
#: exponential model at this wider scale (engine, ``skewed_columns``), as the plug-in's would
#: allow an exponential tail a third of what its clip cuts at three plug-in sds.
EXPONENTIAL_SPREAD = _NORMAL_MAD / math.asinh(0.5)
#: Per tail model of a square, its sd over its median's height above the support's lower end:
#: ``√2 v / (0.455 v)`` for ``lower + v χ²₁`` (scale.square_spread).
SUPPORT_SPREAD: dict[str, float] = {"chi-square": math.sqrt(2.0) / _CHI_SQUARE_MEDIAN}
#: Per tail model, |mean - median| over the sd: where a private median centres a skewed column
#: (the exponential model's plug-in being normal, none).
MEDIAN_OFFSET: dict[str, float] = {
    "gaussian": 0.0,
    "sub-gaussian": 0.0,
    "exponential": 0.0,
    "chi-square": (1.0 - _CHI_SQUARE_MEDIAN) / math.sqrt(2.0),
}

#: Failure probability γ behind the radii and the error bounds: with probability at least
#: 1 - dγ no user is clipped (Lemma 5.2), and each value is within τ' of its mean with
#: probability 1 - γ.
DEFAULT_GAMMA = 0.05
#: Candidate radii of :func:`accurate_radius`, in units of √ρ beyond the centre's error (to 30
#: for skewed tails, whose bias decays only as ``e^{-κ}``).
_MULTIPLES = np.linspace(1.0, 10.0, 361)
_EXPONENTIAL_MULTIPLES = np.linspace(1.0, 30.0, 1161)


@dataclass(frozen=True, init=False)
class Moment:
    """A stated bound on the k-th absolute central moment of one user's statistic:
    ``E|X - μ|^k <= bound`` per column (k >= 2; ``bound`` one number or one per column, in
    the statistic's units to the power k).

    Given as ``tail=`` to a fit, it replaces the engine's worst-case tail (the heavy-tail
    stage's Pareto model) with the person-level paper's clip-and-noise under a moment bound:
    each column is clipped at the radius that balances the noise of its mean against the
    clipping bias the bound allows (:func:`moment_radius`), and that bias bound
    (:func:`moment_bias`) goes into the interval. No count of a tail is then made. The bound
    is a public fact about the population (from an earlier wave, a public study or the way the
    statistic is built), never read from the data; a bound the data exceed is an assumption
    broken, as a stated scale too small is.

    Examples
    --------
    >>> from dplong.privacy.radius import Moment
    >>> Moment(k=4, bound=[40.0, 0.25]).bounds(2).tolist()
    [40.0, 0.25]
    >>> Moment(k=1, bound=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: Moment needs k >= 2 ...
    """

    k: float
    bound: tuple[float, ...]

    def __init__(self, k: float, bound: float | ArrayLike) -> None:
        order = real_number(k, "Moment k")
        if not (math.isfinite(order) and order >= 2.0):
            raise ParameterError(
                f"Moment needs k >= 2 (a bound on E|X - mean|^k; k = 2 bounds the variance), "
                f"got {k!r}"
            )
        raw = np.atleast_1d(np.asarray(bound) if not isinstance(bound, np.ndarray) else bound)
        values = per_column(raw, raw.size, "Moment bound") if raw.ndim == 1 else None
        if values is None:
            raise ParameterError(f"Moment bound must be a number or one per column, got {bound!r}")
        object.__setattr__(self, "k", order)
        object.__setattr__(self, "bound", tuple(float(v) for v in values))

    def assumption(self, statistic: str) -> str:
        """The results' line stating the bound, for a user's ``statistic`` (e.g. ``"x_u"``).

        Examples
        --------
        >>> from dplong.privacy.radius import Moment
        >>> print(Moment(k=4, bound=2.0).assumption("x_u"))  # doctest: +ELLIPSIS
        Stated moment bound E|x_u - mean|^4 <= [2.0]: the clip and the clipping bias bound ...
        """
        return (
            f"Stated moment bound E|{statistic} - mean|^{self.k:g} <= {list(self.bound)}: the "
            "clip and the clipping bias bound are the moment's (no tail is counted)."
        )

    def bounds(self, d: int) -> NDArray[np.float64]:
        """The bound of each of ``d`` columns (one stated for all, or one per column)."""
        if len(self.bound) not in (1, d):
            raise ParameterError(
                f"Moment bound must be one number or one per column ({d}), got {len(self.bound)}"
            )
        return np.broadcast_to(np.asarray(self.bound), (d,)).astype(np.float64)


#: A tail model as the engine uses it: a named model (one or one per column), or a stated
#: moment bound.
TailModel = Tails | Moment


@dataclass(frozen=True)
class AssumedTail:
    """A tail kind taken as an assumption to be checked, not as a stated fact: the release sizes
    its radius and clipping bias bound with ``kind`` (one or one per column) as with
    ``tail=kind``, and the tail stage's private count of users far out checks it where the plan
    affords one (more users beyond its rungs than ``kind`` puts there mark the column heavy,
    with the measured tail's clip and bound); where ``n ε`` affords no count, a note says the
    tail went unchecked (:func:`~dplong.privacy.tails.measures_tail`). A model's own tail is
    one: :class:`~dplong.PoissonMean`'s exponential user rates, which an overdispersed count
    (user rates with a lognormal spread) can exceed far, and the random-effects location's
    chi-square and exponential components.

    ``squares``: the statistics are (means of) squares of the responses, a variance
    component's: a tail the count finds heavy is then twice as heavy as the responses', whose
    Pareto model (index :data:`~dplong.privacy.tails.TAIL_INDEX`) gives a square an index
    below 1 and so no bound on what the clip cut above: the release says so and leaves its
    bias bound infinite (the interval's lower end, where a clip above pulls nothing, stays).

    ``signed``: the statistics' mean lies near their public centre (the within estimator's
    influence values), so their clip biases the mean only by one side's excess over the
    other's, and the count is of each column's users on each side
    (:func:`~dplong.privacy.tails._signed_tail`, sized by
    :func:`~dplong.privacy.budget.signed_share`); a symmetric tail heavier than ``kind`` is
    then no news.

    Examples
    --------
    >>> from dplong.privacy.radius import AssumedTail, check_tail, tail_model
    >>> assumed = check_tail(AssumedTail("exponential"), 1, default_engine=True)
    >>> assumed, tail_model(assumed)
    (AssumedTail(kind='exponential', signed=False, squares=False), 'exponential')
    """

    kind: Tails
    signed: bool = False
    squares: bool = False

    @property
    def described(self) -> str:
        """The kinds by name, each once, for the results' lines.

        Examples
        --------
        >>> from dplong.privacy.radius import AssumedTail
        >>> AssumedTail(("chi-square", "exponential", "exponential")).described
        'chi-square/exponential'
        """
        return "/".join(dict.fromkeys(np.atleast_1d(np.asarray(self.kind)).tolist()))


#: A tail as a fit or a block gives it: a model, or a kind assumed and checked.
TailOption = TailModel | AssumedTail
#: The fit options through which an analyst vouches for a release's tail (a declared support's
#: lower end, a moment bound, a stated scale, public ranges); a model offers those its fit
#: takes, and the reliability warnings name no other (:func:`~dplong.privacy.tails.stated_remedy`).
Offer = Literal["lower", "tail", "scale", "bounds", "within_scale"]
#: What a release offers unless its model says otherwise (a per-user regression's fit).
OFFERS: frozenset[Offer] = frozenset(("tail", "scale"))
#: ... and where the fit takes no ``tail=`` or ``lower=`` (the location and within fits, the
#: user-level curves).
SCALE_ONLY: frozenset[Offer] = frozenset(("scale",))
#: ... and where a release's scales are stated only by two options together (the location's
#: variance components: a user mean's ``scale=`` with the residuals' ``within_scale=``).
SCALE_PAIR: frozenset[Offer] = frozenset(("within_scale",))
#: The offers a stated scale has already taken up: a warning does not ask for it again.
STATED_SCALE: frozenset[Offer] = frozenset(("scale", "within_scale"))


def counted_each_side(tail: TailOption | None) -> bool:
    """Whether ``tail`` is an assumed kind checked by counts on each side of a public centre
    (``AssumedTail(kind, signed=True)``).

    Examples
    --------
    >>> from dplong.privacy.radius import AssumedTail, counted_each_side
    >>> counted_each_side(AssumedTail("exponential", signed=True)), counted_each_side(None)
    (True, False)
    """
    return isinstance(tail, AssumedTail) and tail.signed


def tail_assumptions(tail: TailOption | None, symbol: str, described: str) -> tuple[str, ...]:
    """The results' line saying which tail the release assumed of ``described`` (a user's
    statistic ``symbol``): a stated moment bound, a stated kind, or a kind assumed and checked.

    Examples
    --------
    >>> from dplong.privacy.radius import AssumedTail, tail_assumptions
    >>> tail_assumptions("exponential", "x_u", "the user values")
    ('Stated tail model of the user values: exponential.',)
    >>> tail_assumptions(AssumedTail("exponential"), "x_u", "the user values")[0][:56]
    'Assumed tail model of the user values: exponential (chec'
    """
    if tail is None:
        return ()
    if isinstance(tail, Moment):
        return (tail.assumption(symbol),)
    if isinstance(tail, AssumedTail):
        return (
            f"Assumed tail model of {described}: {tail.described} (checked privately where "
            "n * epsilon affords a tail count).",
        )
    return (f"Stated tail model of {described}: {tail}.",)


def tail_model(tail: TailOption | None) -> TailModel | None:
    """The model the release sizes its radius and bias bound with: an assumed tail's kind."""
    return tail.kind if isinstance(tail, AssumedTail) else tail


def check_tail(tail: Any, d: int, *, default_engine: bool) -> TailOption | None:
    """A fit's ``tail`` option validated for ``d`` columns: None, a named model, a
    :class:`Moment` with one bound or ``d``, or an :class:`AssumedTail` of a named model;
    refused outside the default engine (the paper's algorithms and the local model take
    none).

    Examples
    --------
    >>> from dplong.privacy.radius import Moment, check_tail
    >>> check_tail(Moment(k=4, bound=2.0), 3, default_engine=True).bounds(3).tolist()
    [2.0, 2.0, 2.0]
    >>> check_tail("pareto", 1, default_engine=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: tail must be one of ('gaussian', ..., got 'pareto'
    """
    if tail is None:
        return None
    if not default_engine:
        raise ParameterError(
            'tail shapes the default engine\'s release (variant="default", privacy="central"); '
            "the paper's algorithms take none"
        )
    if isinstance(tail, Moment):
        tail.bounds(d)
        return tail
    if isinstance(tail, AssumedTail) and isinstance(tail.kind, str) and tail.kind in get_args(Tail):
        return tail
    if isinstance(tail, str) and tail in get_args(Tail):
        return tail  # type: ignore[return-value]
    raise ParameterError(
        f"tail must be one of {get_args(Tail)}, a dplong.Moment(k, bound) or an "
        f"AssumedTail of one, got {tail!r}"
    )


def moment_bias(
    bound: NDArray[np.float64],
    k: float,
    half_width: NDArray[np.float64],
    centre_error: NDArray[np.float64] | float = 0.0,
) -> NDArray[np.float64]:
    """Bound on ``|E clip(X; c ± w) - E X|`` when ``|c - μ| <= e`` and ``E|X - μ|^k <= M``.

    By Lemma 3.6 of the person-level paper the bias is at most ``E(|X - μ| - t)_+`` with ``t =
    w - e``, and ``(y - t)_+ <= y^k (k-1)^(k-1) / (k^k t^(k-1))`` for every y >= 0 (the
    largest ratio is at ``y = k t / (k-1)``), so the bias is at most ``M (k-1)^(k-1) / (k^k
    t^(k-1))`` (their Corollary 3.13 with one row per user, its constant explicit); and never
    more than ``E|X - μ| - t <= M^(1/k) - t``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.radius import moment_bias
    >>> float(moment_bias(np.array([3.0]), 4.0, np.array([3.0]))[0].round(5))  # 3·27/256/27
    0.01172
    """
    t = np.asarray(half_width, dtype=np.float64) - np.asarray(centre_error)
    first = np.asarray(bound, dtype=np.float64) ** (1.0 / k)  # E|X - μ| <= M^(1/k)
    # (k-1)^(k-1) / k^k as (1 - 1/k)^(k-1) / k, its power by log1p: the two powers overflow
    # from k = 144 on (an audit's k = 150 crashed a fit after its noise was drawn), and 1 - 1/k
    # rounds to 1 for k > 2^53, a constant e times too small
    constant = math.exp((k - 1.0) * math.log1p(-1.0 / k)) / k
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        markov = bound * constant / np.maximum(t, 0.0) ** (k - 1.0)
    return np.asarray(np.where(t > 0.0, np.fmin(markov, first), first - t))


def moment_radius(
    bound: NDArray[np.float64],
    k: float,
    centre_error: NDArray[np.float64],
    noise_per_width: NDArray[np.float64],
    low: NDArray[np.float64],
    reach: float,
) -> NDArray[np.float64]:
    """Half-widths in ``[low, reach · low]`` minimising ``moment_bias(w)² + (noise_per_width ·
    w)²`` per column: the radius that balances bias and noise under a k-th moment bound (the
    person-level paper's heavy-tail radius, Corollary 3.13 / Theorem 3.14, ``w^k ≈ √(k-1) A /
    c`` with A the bias constant and c the noise per unit of radius). ``low`` is the bulk's
    radius, beneath which the clip never goes (the paper's Gaussian floor).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.radius import moment_radius
    >>> w = moment_radius(np.array([3.0]), 4.0, np.zeros(1), np.array([0.005]), np.ones(1), 64.0)
    >>> round(float(w[0]), 1)  # (√3 · 3 · 27/256 / 0.005) ** (1/4), on the grid
    3.2
    """
    grid = np.geomspace(1.0, reach, 481)
    widths = np.asarray(low, dtype=np.float64)[:, None] * grid[None, :]
    error = np.asarray(centre_error, dtype=np.float64)[:, None]
    bias = moment_bias(np.asarray(bound)[:, None], k, widths, error)
    cost = bias**2 + (np.asarray(noise_per_width)[:, None] * widths) ** 2
    return np.asarray(widths[np.arange(widths.shape[0]), np.argmin(cost, axis=1)])


def concentration_radius(
    scale: float | NDArray[np.float64], n: int, d: int = 1, gamma: float = DEFAULT_GAMMA
) -> NDArray[np.float64]:
    """τ = √(2ρ log(2dn/γ)): all n values of each of d columns lie within τ of their means
    with probability at least 1 - dγ (union bound of Lemma 5.2 / Theorem 2.6).

    Examples
    --------
    >>> from dplong.privacy import concentration_radius
    >>> float(concentration_radius(1.0, n=1000).round(4))
    4.6036
    """
    rho = np.asarray(scale, dtype=np.float64)
    return np.asarray(np.sqrt(2.0 * rho * np.log(2.0 * d * n / gamma)), dtype=np.float64)


def bin_radius(
    scale: float | NDArray[np.float64], gamma: float = DEFAULT_GAMMA
) -> NDArray[np.float64]:
    """τ' = √(2ρ log(2/γ)): one value is within τ' of its mean with probability 1 - γ
    (Remark 3.5, §7.1.2).

    Examples
    --------
    >>> from dplong.privacy import bin_radius
    >>> float(bin_radius(1.0).round(4))
    2.7162
    """
    rho = np.asarray(scale, dtype=np.float64)
    return np.asarray(np.sqrt(2.0 * rho * np.log(2.0 / gamma)), dtype=np.float64)


def beyond_share(tail: Tails, z: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """The share of a column's users that its tail model puts more than ``z`` sds from its
    median, per column (``z`` one or one per column): ``2 Φ(-z)`` for the normal and
    sub-Gaussian plug-ins; for ``μ + s (E - 1)``, E ~ Exp(1), ``e^{-z} / 2`` above
    (``E > z + log 2``; none below once ``z >= log 2``); for ``μ + v (χ²₁ - 1)`` (sd ``v √2``)
    ``P(χ²₁ > q + z √2)`` above and ``P(χ²₁ < q - z √2)`` below, q the median of χ²₁. What the
    tail stage's count is held against (:func:`~dplong.privacy.tails.tail_rule`).

    Examples
    --------
    >>> from dplong.privacy.radius import beyond_share
    >>> beyond_share(("gaussian", "exponential", "chi-square"), 3.15).round(4).tolist()
    [0.0016, 0.0214, 0.0267]
    """
    kinds = np.atleast_1d(np.asarray(tail))
    normal = 2.0 * special.ndtr(-z)
    with np.errstate(over="ignore"):
        exponential = 0.5 * np.exp(-z) + np.maximum(0.0, 1.0 - 0.5 * np.exp(z))
    spread = z * math.sqrt(2.0)
    # χ²₁ is Z²: P(χ²₁ > x) = erfc(√(x/2)), P(χ²₁ < x) = erf(√(x/2)) (scipy.special, not the
    # far slower scipy.stats wrappers: the tail stage calls this on every release)
    square = special.erfc(np.sqrt((_CHI_SQUARE_MEDIAN + spread) / 2.0)) + special.erf(
        np.sqrt(np.maximum(_CHI_SQUARE_MEDIAN - spread, 0.0) / 2.0)
    )
    chosen = np.select(
        [kinds == "exponential", kinds == "chi-square"], [exponential, square], normal
    )
    return np.asarray(chosen, dtype=np.float64)


def beyond_point(tail: Tails, share: float) -> NDArray[np.float64]:
    """The inverse of :func:`beyond_share` for a ``share`` below a quarter (where only the upper
    tail of the skewed kinds counts): the sds from its median beyond which each column's tail
    model puts ``share`` of its users. ``-Φ⁻¹(share / 2)`` for the normal plug-ins,
    ``log(1 / (2 share))`` for the exponential, ``(F⁻¹(1 - share) - q) / √2`` for the
    chi-square (F the χ²₁ distribution, q its median).

    Examples
    --------
    >>> from dplong.privacy.radius import beyond_point, beyond_share
    >>> kinds = ("gaussian", "exponential", "chi-square")
    >>> z = beyond_point(kinds, 0.0016)
    >>> z.round(2).tolist(), beyond_share(kinds, z).round(6).tolist()
    ([3.16, 5.74, 6.72], [0.0016, 0.0016, 0.0016])
    """
    if not 0.0 < share < 0.25:
        raise ValueError(f"share must be in (0, 0.25); got {share}")
    kinds = np.atleast_1d(np.asarray(tail))
    normal = -special.ndtri(share / 2.0)
    exponential = math.log(0.5 / share)
    square = (special.ndtri(share / 2.0) ** 2 - _CHI_SQUARE_MEDIAN) / math.sqrt(2.0)  # χ²₁ = Z²
    chosen = np.select(
        [kinds == "exponential", kinds == "chi-square"], [exponential, square], normal
    )
    return np.asarray(chosen, dtype=np.float64)


def clipping_bias(
    scale: float | NDArray[np.float64],
    half_width: float | NDArray[np.float64],
    centre_error: float | NDArray[np.float64] = 0.0,
    *,
    tail: Tails = "gaussian",
) -> NDArray[np.float64]:
    """Bound on ``|E clip(X; c ± w) - E X|`` when ``|c - μ| <= e``.

    ``clip(X) - X = (c - w - X)_+ - (X - c - w)_+``, so the bias is at most the larger of the
    two expected overshoots, each at most ``∫_{w-e}^∞ P(X - μ > t) dt`` (Lemma 3.6 of the
    person-level paper). ``tail="gaussian"``: X normal with variance ``scale`` (the plug-in
    model of an estimated scale), ``√ρ (φ(s) - s Φ̄(s))`` with ``s = (w - e)/√ρ``;
    ``tail="sub-gaussian"``: ``P(X - μ > t) <= exp(-t²/(2ρ))`` (the paper's assumption, for a
    stated variance proxy ρ), ``√(2πρ) Φ̄(s)``; ``tail="exponential"``: ``P(X - μ > t) <=
    exp(-t/√ρ)`` (a sub-exponential model for skewed statistics such as cross products, whose
    spread ρ is a plug-in), ``√ρ e^{-s}``; ``tail="chi-square"``: X = μ + v (χ²₁ - 1) with sd
    ``√ρ = √2 v`` (the square of a normal statistic, e.g. a squared deviation), both
    overshoots exactly, ``v max(E(χ²₁ - 1 - a)_+, E(1 - a - χ²₁)_+)`` with ``a = (w - e)/v``
    (``E χ²₁ 1{χ²₁ < b} = F₃(b)``). ``tail`` may give one model per column (the first axis).

    Examples
    --------
    >>> from dplong.privacy.radius import clipping_bias
    >>> float(clipping_bias(1.0, 3.0, tail="sub-gaussian").round(5))      # √(2π) Φ̄(3)
    0.00338
    >>> float(clipping_bias(1.0, 3.0).round(6))                           # φ(3) - 3 Φ̄(3)
    0.000382
    >>> float(clipping_bias(1.0, 3.0, centre_error=1.0).round(4))    # an off-centre interval
    0.0085
    >>> float(clipping_bias(2.0, 0.0, tail="chi-square").round(4))  # v = 1: E(χ²₁ - 1)_+
    0.4839
    """
    sd = np.sqrt(np.asarray(scale, dtype=np.float64))
    margin = (np.asarray(half_width, dtype=np.float64) - np.asarray(centre_error)) / sd
    kinds = np.asarray(tail)
    kinds = kinds.reshape(kinds.shape + (1,) * max(margin.ndim - kinds.ndim, 0))
    present = sorted(set(kinds.ravel().tolist()))
    with np.errstate(over="ignore", invalid="ignore"):  # only the models asked for
        bounds = [_OVERSHOOT[kind](sd, margin) for kind in present]
    if len(present) == 1:  # one model (the usual case): no selection to make
        return np.array(
            np.broadcast_to(bounds[0], np.broadcast_shapes(kinds.shape, bounds[0].shape))
        )
    return np.asarray(np.select([kinds == kind for kind in present], bounds))


def _chi_square_overshoot(sd: NDArray[np.float64], margin: NDArray[np.float64]) -> Any:
    """The larger overshoot of ``μ + v (χ²₁ - 1)`` beyond ``margin`` sds (see clipping_bias)."""
    a = margin * math.sqrt(2.0)  # in units of v = sd / √2
    c, b = 1.0 + a, 1.0 - a  # the CDFs vanish below 0
    upper = special.chdtrc(3, np.maximum(c, 0.0)) - c * special.chdtrc(1, np.maximum(c, 0.0))
    lower = b * special.chdtr(1, np.maximum(b, 0.0)) - special.chdtr(3, np.maximum(b, 0.0))
    return sd / math.sqrt(2.0) * np.maximum(upper, lower)


#: Each tail model's overshoot bound, from the sd and the margin in sds (see clipping_bias).
_OVERSHOOT: dict[str, Callable[[NDArray[np.float64], NDArray[np.float64]], Any]] = {
    "gaussian": lambda sd, m: (
        sd * (np.exp(-0.5 * m**2) / math.sqrt(2.0 * math.pi) - m * special.ndtr(-m))
    ),
    "sub-gaussian": lambda sd, m: math.sqrt(2.0 * math.pi) * sd * special.ndtr(-m),
    "exponential": lambda sd, m: sd * np.exp(-np.maximum(m, 0.0)),
    "chi-square": _chi_square_overshoot,
}


def accurate_radius(
    scale: NDArray[np.float64],
    centre_error: NDArray[np.float64],
    noise_per_width: NDArray[np.float64],
    *,
    tail: Tails = "gaussian",
) -> NDArray[np.float64]:
    """Half-widths ``w = κ√ρ + e`` minimising ``bias(w)² + (noise_per_width · w)²`` per column.

    ``noise_per_width`` is the noise sd of the released mean per unit of half-width (public:
    it follows from n and the column's budget); the bias is :func:`clipping_bias` with the
    given ``tail``. The search runs over κ in [1, 10] (in [1, 30] for an exponential tail).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.radius import accurate_radius
    >>> # n = 1,000 users, Laplace noise at ε = 0.8: sd 2√2 w / (n ε) per unit of w
    >>> w = accurate_radius(np.array([1.0]), np.array([0.0]), np.array([8**0.5 / 800]))
    >>> 2.0 < float(w[0]) < 3.0
    True
    """
    sd = np.sqrt(scale)[:, None]
    skewed = np.isin(np.asarray(tail), ("exponential", "chi-square")).any()
    multiples = _EXPONENTIAL_MULTIPLES if skewed else _MULTIPLES
    widths = multiples[None, :] * sd + np.asarray(centre_error)[:, None]
    bias = clipping_bias(sd**2, widths, np.asarray(centre_error)[:, None], tail=tail)
    cost = bias**2 + (np.asarray(noise_per_width)[:, None] * widths) ** 2
    return np.asarray(widths[np.arange(widths.shape[0]), np.argmin(cost, axis=1)])
