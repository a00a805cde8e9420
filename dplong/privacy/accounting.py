"""Privacy bookkeeping: what each mechanism call costs, how the calls compose, and the ledger.

Every mechanism call costs one :class:`Cost`: a pure ε (Laplace, randomized response; the
exponential mechanism, whose pure ε is also a *bounded range*), a zCDP ρ (the discrete
Gaussian), or an approximate (ε, δ) (the stable histogram). :func:`compose` turns the costs of
a whole release into the (ε, δ) it spends, by the better of two exact rules:

* **basic** composition (Dwork & Roth Thm 3.16): the pure ε add up, and the Gaussian calls,
  composed in ρ, are converted at the δ left over;
* **Rényi** composition (Mironov 2017): every pure call contributes Steinke's sharp Rényi
  curve of ε-DP (``ε - log((1 + e^-ε) / (1 + e^-(2α-1)ε)) / (α - 1)``, tight for randomized
  response, hence valid for any ε-DP mechanism), every ε-bounded-range call (the exponential
  mechanism: its privacy loss ranges over an interval of width ε; Durfee & Rogers 2019) the
  sharp curve of that class (:func:`bounded_range_renyi`, about ``α ε²/8`` where the pure
  curve is ``α ε²/2``: Cesar & Rogers 2021, Lemma 3.2), every Gaussian call ``α ρ``; the
  summed curve is converted to (ε, δ) with Canonne, Kamath & Steinke (2020, Prop. 12):
  ``δ = exp((α-1)(ε̂(α) - ε)) (1 - 1/α)^α / (α - 1)``, minimised over a fixed public grid of
  orders α (any α gives a valid δ).

Approximate-DP calls (stable histograms) add their (ε, δ) on top by basic composition. The
result is an upper bound on the true privacy loss, never an approximation of it.

A :class:`PrivacyLedger` is the immutable record of a release: one :class:`LedgerEntry` per
call and the totals under the rule used. An :class:`Accountant` holds a budget across releases
and refuses a spend *before* any noise is drawn.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong._validation import check_delta, check_epsilon, real_number
from dplong.exceptions import BudgetExceededError, ParameterError, PrivacyParameterError

if TYPE_CHECKING:
    from dplong.privacy.noise import WeightedRelease

__all__ = [
    "Accountant",
    "Composer",
    "Composition",
    "Cost",
    "LedgerEntry",
    "PrivacyLedger",
    "bounded_range_renyi",
    "compose",
    "gaussian_vector_entry",
    "pure_renyi",
    "zcdp_epsilon",
]

#: Rényi orders α at which curves are composed and converted: public, fixed, dense enough that
#: the grid minimum is within ~0.1 % of the continuous one for the budgets dplong meets.
ORDERS: NDArray[np.float64] = 1.0 + np.geomspace(1e-3, 1e5, 200)


@dataclass(frozen=True)
class Cost:
    """Privacy cost of one mechanism call: pure ``epsilon``, zCDP ``rho``, or an approximate
    ``(epsilon, delta)`` (``delta > 0``; composed by basic composition only). ``bounded``: the
    pure call is also ε-bounded-range (the exponential mechanism), which the Rényi rule
    composes by :func:`bounded_range_renyi`.

    Examples
    --------
    >>> from dplong.privacy.accounting import Cost
    >>> Cost(epsilon=0.5).kind, Cost(rho=0.01).kind, Cost(epsilon=0.5, delta=1e-6).kind
    ('pure', 'zcdp', 'approximate')
    >>> Cost(epsilon=0.5, bounded=True).kind
    'pure'
    """

    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0
    bounded: bool = False

    @property
    def kind(self) -> str:
        """``"pure"``, ``"zcdp"`` or ``"approximate"``."""
        if self.delta > 0:
            return "approximate"
        return "zcdp" if self.rho > 0 else "pure"


def pure_renyi(epsilon: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """Sharp Rényi curve of an ε-DP mechanism on :data:`ORDERS` (Steinke 2024, Thm 4).

    ``ε̂(α) = ε - log((1 + e^-ε) / (1 + e^-(2α-1)ε)) / (α - 1)``: attained by randomized
    response, so it bounds every ε-DP mechanism. Small ε gives about ``α ε²/2`` at small α.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.accounting import ORDERS, pure_renyi
    >>> curve = pure_renyi(0.1)
    >>> bool(np.all(curve <= 0.1 + 1e-15)), bool(np.all(curve <= ORDERS * 0.1**2 / 2 + 1e-15))
    (True, True)
    """
    eps = np.asarray(epsilon, dtype=np.float64)[..., None]
    far = np.multiply(_NEGATIVE_ODD_ORDERS, eps)  # -(2α - 1) ε, in place from here
    far = np.log1p(np.exp(far, out=far), out=far)
    gap = np.log1p(np.exp(-eps)) - far
    return np.asarray(np.where(eps > 0, eps - gap / _ORDERS_LESS_ONE, 0.0))


#: ``-(2α - 1)`` and ``α - 1`` on :data:`ORDERS`, computed once (a budget search composes often).
_NEGATIVE_ODD_ORDERS = -(2.0 * ORDERS - 1.0)
_ORDERS_LESS_ONE = ORDERS - 1.0


def bounded_range_renyi(epsilon: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """Sharp Rényi curve of an ε-bounded-range mechanism on :data:`ORDERS`.

    A mechanism is ε-bounded-range (Durfee & Rogers 2019) when, for neighbours x, x', its
    privacy loss ``L(y) = log P_x(y) / P_x'(y)`` lies in some ``[t - ε, t]`` for every output y;
    the exponential mechanism at ε (``P(y) ∝ exp(ε u(y) / 2)``, u of sensitivity 1) is. As
    ``E_{x'}[e^L] = 1``, ``E_{x'}[e^{αL}]`` is the mean of a convex function of ``e^L`` under a
    fixed mean: largest when ``L`` takes only the two ends, a two-output pair ``P = (p, 1 - p)``,
    ``Q = (q, 1 - q)`` with ``p/q = e^t``, ``(1 - p)/(1 - q) = e^{t - ε}``. With ``s = e^-ε``
    this gives ``D_α(P‖Q) = [log(q + (1 - q) s^α) - α log(q + (1 - q) s)] / (α - 1)``, largest
    at ``q* = [α (1 - s) s^α - s (1 - s^α)] / [(1 - α)(1 - s)(1 - s^α)]`` (its derivative in q
    vanishes there; clipped to [0, 1]). Small ε gives about ``α ε²/8`` (Cesar & Rogers 2021,
    Lemma 3.2), a quarter of :func:`pure_renyi`'s; every value is at most both ε and
    :func:`pure_renyi`'s (an ε-bounded-range loss lies in ``[-ε, ε]``: the mechanism is ε-DP).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.accounting import ORDERS, bounded_range_renyi, pure_renyi
    >>> curve = bounded_range_renyi(0.1)
    >>> bool(np.all(curve <= pure_renyi(0.1) + 1e-15)), bool(np.all(curve <= 0.1))
    (True, True)
    >>> round(float(curve[0] / ORDERS[0]) / (0.1**2 / 8), 3)    # α ε²/8 at small α
    1.0
    """
    eps = np.asarray(epsilon, dtype=np.float64)[..., None]
    a = ORDERS
    log_s, log_s_a = -eps, -eps * a
    one_s, one_s_a = -np.expm1(log_s), -np.expm1(log_s_a)  # 1 - s, 1 - s^α
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = (a * one_s * np.exp(log_s_a) - np.exp(log_s) * one_s_a) / ((1.0 - a) * one_s * one_s_a)
        q = np.clip(np.nan_to_num(q, nan=0.5), 0.0, 1.0)

        def log_mix(
            one_less: NDArray[np.float64], log_low: NDArray[np.float64]
        ) -> NDArray[np.float64]:
            # log(q + (1 - q) s^k) = log(1 - (1 - q)(1 - s^k)): by log1p where the mixture is
            # near 1, else from its logs (q and s^k may both be tiny there)
            off = (1.0 - q) * one_less
            near = np.log1p(-np.minimum(off, 0.5))
            far = np.logaddexp(np.log(q), np.log1p(-q) + log_low)
            return np.asarray(np.where(off < 0.5, near, far))

        value = (log_mix(one_s_a, log_s_a) - a * log_mix(one_s, log_s)) / _ORDERS_LESS_ONE
    # a relative 1e-6 above the float optimum: its rounding (and q*'s) can only fall short of
    # the supremum; the pure curve, a bound on every ε-DP call, caps it
    value = np.where(np.isnan(value), np.inf, value) * (1.0 + 1e-6)
    curve = np.maximum(np.minimum(value, pure_renyi(epsilon)), 0.0)
    return np.asarray(np.where(eps > 0, curve, 0.0))


#: The δ-free parts of CKS 2020, Prop. 12 on :data:`ORDERS`.
_CONVERSION = ORDERS * np.log1p(-1.0 / ORDERS) - np.log(ORDERS - 1.0)


def _renyi_to_epsilon(curve: NDArray[np.float64], delta: float) -> float:
    """Smallest ε with (ε, δ)-DP from a Rényi curve on :data:`ORDERS` (CKS 2020, Prop. 12)."""
    eps = curve + (_CONVERSION - math.log(delta)) / _ORDERS_LESS_ONE
    return max(float(eps.min()), 0.0)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP (CKS 2020, Prop. 12 over the grid of orders).

    Examples
    --------
    >>> from dplong.privacy.accounting import zcdp_epsilon
    >>> eps = zcdp_epsilon(0.0125, 1e-6)
    >>> 0.7 < eps < 0.0125 + 2 * (0.0125 * 13.8156) ** 0.5       # below Bun–Steinke's bound
    True
    """
    if rho <= 0:
        return 0.0
    return _renyi_to_epsilon(ORDERS * rho, delta)


@dataclass(frozen=True)
class Composition:
    """The (ε, δ) a set of costs spends and the rule that gave it (see :func:`compose`)."""

    epsilon: float
    delta: float
    rule: str
    rho: float


def compose(costs: Iterable[Cost], delta: float) -> Composition:
    """Compose mechanism calls on the same users into the (ε, δ) they spend.

    ``delta`` is the total δ the release may spend; approximate calls use theirs, and the rest
    goes to the conversion of pure and Gaussian calls. The better of basic and Rényi
    composition is taken (module docstring); both are exact upper bounds. ``rho`` is the zCDP
    of the pure and Gaussian calls together (ε-DP is ε²/2-zCDP, Bun–Steinke Prop. 1.4), or NaN
    if an approximate call takes part.

    Examples
    --------
    Pure calls alone with no δ: basic composition, exactly.

    >>> from dplong.privacy.accounting import Cost, compose
    >>> compose([Cost(epsilon=0.2), Cost(epsilon=0.8)], delta=0.0)
    Composition(epsilon=1.0, delta=0.0, rule='basic', rho=0.34)

    Many small pure calls with a δ: the Rényi rule is far below their sum of 1.

    >>> many = compose([Cost(epsilon=0.01)] * 100, delta=1e-6)
    >>> many.rule, round(many.epsilon, 3), many.delta
    ('Rényi', 0.422, 1e-06)
    """
    return _composed(tuple(costs), delta)


@functools.lru_cache(maxsize=1024)
def _composed(costs: tuple[Cost, ...], delta: float) -> Composition:
    """:func:`compose`, memoised: a function of public costs (every release composes its
    ledger, and a loop over seeds composes the same calls again)."""
    return Composer(costs, delta).add()


_NO_CALLS: NDArray[np.float64] = np.zeros(0)


class Composer:
    """:func:`compose` of fixed calls plus a varying set of pure and Gaussian calls.

    A budget search composes the same earlier calls with many candidate final stages: their
    sums and Rényi curve are computed once here, and :meth:`add` composes one candidate.

    Examples
    --------
    >>> from dplong.privacy.accounting import Composer, Cost, compose
    >>> import numpy as np
    >>> early = [Cost(epsilon=0.05)] * 4
    >>> composer = Composer(early, 1e-6)
    >>> composer.add(np.array([0.3, 0.3]), 0.0) == compose(early + [Cost(epsilon=0.3)] * 2, 1e-6)
    True
    """

    def __init__(self, costs: Iterable[Cost], delta: float) -> None:
        costs = list(costs)
        approx = [c for c in costs if c.kind == "approximate"]
        self.delta = delta
        self.approx = bool(approx)
        self.eps_a = sum(c.epsilon for c in approx)
        self.delta_a = float(sum(c.delta for c in approx))
        self.pure = np.array([c.epsilon for c in costs if c.kind == "pure" and not c.bounded])
        self.bounded = np.array([c.epsilon for c in costs if c.kind == "pure" and c.bounded])
        self.rho = float(sum(c.rho for c in costs if c.kind == "zcdp"))
        self.eps_pure = float(self.pure.sum() + self.bounded.sum())
        # in zCDP: ε-DP is ε²/2 (Bun & Steinke 2016, Prop. 1.4), ε-bounded-range ε²/8
        with np.errstate(over="ignore"):
            self.squares = float(np.square(self.pure).sum() + np.square(self.bounded).sum() / 4.0)
        self._curve: NDArray[np.float64] | None = None

    def curve(self) -> NDArray[np.float64]:
        """The summed Rényi curve of the fixed calls (computed once, when first needed)."""
        if self._curve is None:
            self._curve = (
                ORDERS * self.rho
                + _pure_curve(self.pure)
                + _pure_curve(self.bounded, bounded_range_renyi)
            )
        return self._curve

    def add(self, pure: NDArray[np.float64] = _NO_CALLS, rho: float = 0.0) -> Composition:
        """The composition of the fixed calls with pure calls of ε ``pure`` and a zCDP ``rho``."""
        rho_all = self.rho + rho
        n_pure = self.pure.size + self.bounded.size + pure.size
        rest = self.delta - self.delta_a
        eps_pure = self.eps_pure + float(pure.sum())
        with np.errstate(over="ignore"):
            total_rho = round(rho_all + (self.squares + float(np.square(pure).sum())) / 2.0, 15)
        zcdp_rho = math.nan if self.approx else total_rho
        if rho_all == 0.0 and (rest <= 0.0 or n_pure <= 1):
            return Composition(self.eps_a + eps_pure, self.delta_a, "basic", zcdp_rho)
        if rest <= 0.0:
            raise ValueError("Gaussian calls need a positive delta to convert")
        basic = eps_pure + zcdp_epsilon(rho_all, rest)
        curve = self.curve() + ORDERS * rho + _pure_curve(pure)
        renyi = _renyi_to_epsilon(curve, rest)
        if basic <= renyi:
            used = self.delta_a + (rest if rho_all > 0 else 0.0)
            return Composition(self.eps_a + basic, used, "basic", zcdp_rho)
        return Composition(self.eps_a + renyi, self.delta, "Rényi", zcdp_rho)


def _pure_curve(
    pure: NDArray[np.float64],
    curve: Callable[[NDArray[np.float64]], NDArray[np.float64]] = pure_renyi,
) -> NDArray[np.float64] | float:
    """The summed Rényi curves of pure calls (many share an ε: one curve per distinct value),
    each by ``curve`` (:func:`pure_renyi`; :func:`bounded_range_renyi` for bounded-range ones)."""
    if not pure.size:
        return 0.0
    if pure.size <= _FEW_CALLS:  # a final stage's few calls: sorting them costs more than it saves
        return np.asarray(curve(pure).sum(axis=0))
    values, counts = np.unique(pure, return_counts=True)
    return np.asarray(counts @ curve(values))


_FEW_CALLS = 4


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism call.

    Attributes
    ----------
    stage : str
        What the call was for: ``"midpoint"``, ``"scale"``, ``"count"``, ``"refinement"``,
        ``"mean"``, ``"second moment"``, ...
    mechanism : str
        Name of the mechanism and where it comes from, e.g. ``"lattice Laplace (Alg 1)"``.
    target : str
        What it released (column names).
    epsilon, delta, rho : float
        Its cost: pure ε (δ = 0, ρ = 0), zCDP ρ (ε = 0), or approximate (ε, δ).
    sensitivity : float
        Sensitivity of the released statistic under replacing one user (L1 for Laplace and
        counts, L2 for the Gaussian; in value units for a mean, in users for counts and ranks).
    noise_scale : float
        Scale of the added noise: Laplace ``b``, Gaussian σ, NaN for randomized response.
    bounded : bool
        The pure call is also ε-bounded-range (the exponential mechanism; :class:`Cost`).

    Examples
    --------
    >>> import dplong
    >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
    ...                              random_state=0)
    >>> entry = next(e for e in res.privacy.entries if e.stage == "mean")   # the final mean
    >>> entry.mechanism, entry.delta
    ('lattice Laplace (Alg 1, 4)', 0.0)
    """

    stage: str
    mechanism: str
    target: str
    epsilon: float
    delta: float
    rho: float
    sensitivity: float
    noise_scale: float
    bounded: bool = False

    @property
    def cost(self) -> Cost:
        """This call's :class:`Cost`."""
        return Cost(self.epsilon, self.delta, self.rho, self.bounded)


def gaussian_vector_entry(
    stage: str, target: str, rho: float, release: WeightedRelease
) -> LedgerEntry:
    """The ledger entry of one ρ-zCDP discrete Gaussian release of a whole vector
    (:func:`~dplong.privacy.noise.release_vector_sum`): its L2 sensitivity and noise sd.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.accounting import gaussian_vector_entry
    >>> from dplong.privacy.noise import release_vector_sum
    >>> sums = release_vector_sum(np.eye(3), 1.0, 2.0, 0.5, np.random.default_rng(0))
    >>> entry = gaussian_vector_entry("counts", "x", 0.5, sums)
    >>> entry.cost.kind, entry.mechanism
    ('zcdp', 'discrete Gaussian (zCDP), one vector')
    """
    return LedgerEntry(
        stage,
        "discrete Gaussian (zCDP), one vector",
        target,
        0.0,
        0.0,
        rho,
        float(release.sensitivity),
        float(release.sd[0]),
    )


_COLUMNS = ["stage", "mechanism", "target", "epsilon", "delta", "rho", "sensitivity", "noise_scale"]


@dataclass(frozen=True)
class PrivacyLedger:
    """Immutable record of a release: its mechanism calls and their composed total.

    Two ledgers of releases on the same users add up by basic composition (``ledger_a +
    ledger_b``); ``str(ledger)`` prints the totals and one row per call, :meth:`digest` one
    row per stage.

    Attributes
    ----------
    entries : tuple of LedgerEntry
        One entry per mechanism call, in the order they were run.
    epsilon, delta : float
        What the release costs in total, under ``composition``.
    composition : str
        The rule behind the totals: ``"basic"`` or ``"Rényi"`` (see :func:`compose`).
    model : str
        ``"central"``, ``"local"``, or ``"mixed"`` for a sum of both.
    rho : float
        The zCDP ρ of the release (NaN if a stable histogram took part), for composing it
        with other zCDP releases.

    Examples
    --------
    >>> import dplong
    >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
    ...                              random_state=0)
    >>> res.privacy.epsilon <= 1.0
    True
    >>> both = res.privacy + res.privacy          # two releases on the same users
    >>> both.epsilon == 2 * res.privacy.epsilon, both.composition
    (True, 'basic')
    """

    entries: tuple[LedgerEntry, ...]
    epsilon: float
    delta: float
    composition: str
    model: str = "central"
    rho: float = math.nan

    @classmethod
    def from_entries(
        cls, entries: Sequence[LedgerEntry], delta: float, model: str
    ) -> PrivacyLedger:
        """The ledger of calls spending at most ``delta`` in all (:func:`compose`).

        Examples
        --------
        >>> from dplong.privacy.accounting import LedgerEntry, PrivacyLedger
        >>> calls = [LedgerEntry("mean", "lattice Laplace (Alg 1)", "x", 0.5, 0.0, 0.0, 0.02,
        ...                      0.04)] * 2
        >>> ledger = PrivacyLedger.from_entries(calls, delta=0.0, model="central")
        >>> ledger.epsilon, ledger.composition
        (1.0, 'basic')
        """
        total = compose((e.cost for e in entries), delta)
        return cls(tuple(entries), total.epsilon, total.delta, total.rule, model, total.rho)

    def to_frame(self) -> pd.DataFrame:
        """The entries as a DataFrame, one row per mechanism call.

        Examples
        --------
        >>> import dplong
        >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
        ...                              random_state=0)
        >>> res.privacy.to_frame().columns.tolist()[:4]
        ['stage', 'mechanism', 'target', 'epsilon']
        """
        frame: pd.DataFrame = pd.DataFrame([vars(e) for e in self.entries], columns=_COLUMNS)
        return frame

    def digest(self) -> pd.DataFrame:
        """One row per stage: its calls' mechanisms, summed ε, δ and ρ, and a total row.

        The stage rows add up by basic composition; the total row is what the release costs
        under ``composition`` (which may be less).

        Examples
        --------
        >>> import dplong
        >>> res = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
        ...                              random_state=0)
        >>> digest = res.privacy.digest()
        >>> digest.index[-1], float(digest.loc["total", "epsilon"]) <= 1.0
        ('total', True)
        """
        frame = self.to_frame()
        if frame.empty:
            empty: pd.DataFrame = pd.DataFrame(
                columns=["mechanism", "calls", "epsilon", "delta", "rho"]
            )
            return empty
        grouped = frame.groupby("stage", sort=False)
        digest: pd.DataFrame = pd.DataFrame(
            {
                "mechanism": grouped["mechanism"].agg(lambda m: "; ".join(dict.fromkeys(m))),
                "calls": grouped.size(),
                "epsilon": grouped["epsilon"].sum(),
                "delta": grouped["delta"].sum(),
                "rho": grouped["rho"].sum(),
            }
        )
        total = pd.DataFrame(
            {
                "mechanism": [f"{self.composition} composition"],
                "calls": [len(self.entries)],
                "epsilon": [self.epsilon],
                "delta": [self.delta],
                "rho": [self.rho],
            },
            index=["total"],
        )
        digest = pd.concat([digest, total])
        digest.index.name = "stage"
        return digest

    def __add__(self, other: PrivacyLedger) -> PrivacyLedger:
        """Sequential (basic) composition of two releases on the same users."""
        return PrivacyLedger(
            entries=self.entries + other.entries,
            epsilon=self.epsilon + other.epsilon,
            delta=self.delta + other.delta,
            composition="basic",
            model=self.model if self.model == other.model else "mixed",
            rho=self.rho + other.rho,
        )

    def __str__(self) -> str:
        head = (
            f"Privacy spent: epsilon={self.epsilon:.6g}, delta={self.delta:.3g} "
            f"({self.model} model; {self.composition} composition)"
        )
        return head + "\n" + self.to_frame().to_string(index=False)


@dataclass
class Accountant:
    """A total privacy budget shared by several releases on the same users.

    Pass it as ``accountant=`` to any release; the release's full cost is checked against what
    remains *before* any noise is drawn, and charged only if it fits. Releases compose by
    basic composition.

    Parameters
    ----------
    epsilon, delta : float
        The total budget. ``delta`` may be 0 for a pure-ε budget.

    Examples
    --------
    >>> import dplong
    >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-6)
    >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.6, delta=5e-7, scale=1.0,
    ...                            accountant=acct, random_state=1)
    >>> round(acct.remaining_epsilon, 6)
    0.4
    >>> dplong.winsorized_mean([0.5] * 1000, epsilon=0.6, delta=5e-7, scale=1.0,
    ...                        accountant=acct)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.BudgetExceededError: this release needs epsilon=0.6, ... remain
    """

    epsilon: float
    delta: float = 0.0
    spent: list[PrivacyLedger] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.epsilon = check_epsilon(self.epsilon)
        delta = real_number(self.delta, "delta", PrivacyParameterError, "a number in [0, 1)")
        self.delta = 0.0 if delta == 0 else check_delta(delta)

    @property
    def spent_epsilon(self) -> float:
        """ε charged so far: the sum over the recorded releases (basic composition).

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.25, scale=1.0,
        ...                            accountant=acct, random_state=0)
        >>> acct.spent_epsilon <= 0.25
        True
        """
        return sum(ledger.epsilon for ledger in self.spent)

    @property
    def spent_delta(self) -> float:
        """δ charged so far: the sum over the recorded releases.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> _ = dplong.winsorized_mean([0.5] * 1000, epsilon=0.25, delta=2e-6, scale=1.0,
        ...                            accountant=acct, random_state=0)
        >>> acct.spent_delta <= 2e-6
        True
        """
        return sum(ledger.delta for ledger in self.spent)

    @property
    def remaining_epsilon(self) -> float:
        """ε still available: the total budget minus :attr:`spent_epsilon`.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> acct.remaining_epsilon
        1.0
        """
        return self.epsilon - self.spent_epsilon

    @property
    def remaining_delta(self) -> float:
        """δ still available: the total budget minus :attr:`spent_delta`.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> acct.remaining_delta
        1e-05
        """
        return self.delta - self.spent_delta

    def check(self, epsilon: float, delta: float) -> None:
        """Raise :class:`BudgetExceededError` if a spend of (ε, δ) does not fit.

        Nothing is charged; releases call this before drawing any noise.

        Examples
        --------
        >>> import dplong
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-6)
        >>> acct.check(0.5, 5e-7)                  # fits: returns None
        >>> acct.remaining_epsilon                 # and charges nothing
        1.0
        >>> acct.check(2.0, 0.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dplong.exceptions.BudgetExceededError: this release needs epsilon=2, ... remain
        """
        for name, value in (("epsilon", epsilon), ("delta", delta)):
            spend = real_number(value, name, PrivacyParameterError, "a non-negative number")
            if not spend >= 0:  # NaN too
                raise PrivacyParameterError(f"{name} must be a non-negative number, got {spend}")
        tol = 1e-12 * self.epsilon
        if epsilon > self.remaining_epsilon + tol or delta > self.remaining_delta * (1 + 1e-12):
            # an accountant made with no delta holds none: say how to give it one
            hint = (
                " (this accountant was made with delta=0: give it one, "
                "Accountant(epsilon=..., delta=...))"
                if delta > 0.0 and self.delta == 0.0
                else ""
            )
            raise BudgetExceededError(
                f"this release needs epsilon={epsilon:.6g}, delta={delta:.6g} but only "
                f"epsilon={self.remaining_epsilon:.6g}, delta={self.remaining_delta:.6g} "
                f"remain{hint}"
            )

    def record(self, ledger: PrivacyLedger) -> None:
        """Charge a finished release (its cost was :meth:`check`-ed before noise was drawn).

        Examples
        --------
        >>> import dplong
        >>> res = dplong.winsorized_mean([0.5] * 1000, epsilon=0.5, scale=1.0, random_state=0)
        >>> acct = dplong.Accountant(epsilon=1.0, delta=1e-5)
        >>> acct.record(res.privacy)
        >>> acct.remaining_epsilon >= 0.5, len(acct.spent)
        (True, 1)
        """
        if not isinstance(ledger, PrivacyLedger):
            raise ParameterError(
                f"ledger must be the PrivacyLedger of a release (results.privacy), got "
                f"{type(ledger).__name__}"
            )
        self.check(ledger.epsilon, ledger.delta)
        self.spent.append(ledger)
