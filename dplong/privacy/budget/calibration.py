"""The final stage's calibration: the largest budget whose composition stays within the request.

After the earlier stages of a release ran, its final stage gets the largest per-column budget
for which the composition (:func:`~dplong.privacy.accounting.compose`) of every call stays
within the request (:func:`_calibrated`, behind
:meth:`~dplong.privacy.budget.plan.ReleasePlan.calibrate`), shared over the columns by their
released radii (:func:`share_weights`: PLAN, Aumüller et al. 2024, App. C), so that the ledger
always totals at most the request; :func:`top_up` rescales it after a later split of the final
stage. :func:`largest_within` is the search every budget split of the package uses: a
bisection on the safe side, its answers read off a bracket found by regula falsi
(:class:`_Crossing`). Post-processing of public facts and released radii only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import Composer, Cost

if TYPE_CHECKING:
    from dplong.privacy.budget.plan import ReleasePlan


def share_weights(
    values: NDArray[np.float64], live: NDArray[np.bool_] | None = None
) -> NDArray[np.float64]:
    """PLAN's regularised shares: ``(a_j + mean(a)) / Σ``, each at least half the even share,
    over the ``live`` columns (default all); the others (withheld before the final stage) get
    none.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.budget import share_weights
    >>> share_weights(np.array([1.0, 0.0, 0.0])).round(3).tolist()
    [0.667, 0.167, 0.167]
    >>> share_weights(np.array([1.0, 0.0, 1e300]), np.array([True, True, False])).tolist()
    [0.75, 0.25, 0.0]
    """
    live = np.ones(values.shape, dtype=bool) if live is None else live
    a = np.where(live & np.isfinite(values) & (values > 0), values, 0.0)
    if a.sum() == 0.0:
        return np.where(live, 1.0 / max(int(live.sum()), 1), 0.0)
    a = np.where(live, a + a[live].mean(), 0.0)
    return np.asarray(a / a.sum())


@dataclass(frozen=True)
class FinalBudget:
    """The calibrated final stage: its mechanism and per-column ε (Laplace) or ρ (Gaussian).
    Its arrays are read-only copies: a calibration is memoised (:func:`_calibrated`) and
    handed to every release of the same plan, so a write would change the next fit's
    budget."""

    kind: str
    epsilon: NDArray[np.float64]
    rho: NDArray[np.float64]

    def __post_init__(self) -> None:
        for name in ("epsilon", "rho"):
            values = np.array(getattr(self, name), dtype=np.float64)
            values.setflags(write=False)
            object.__setattr__(self, name, values)

    def split(self, share: float) -> tuple[FinalBudget, FinalBudget | None]:
        """``1 - share`` of every column's budget for the mean, ``share`` for the second moment
        (None when ``share`` is 0); :meth:`~dplong.privacy.budget.plan.ReleasePlan.calibrate`
        composes the two parts."""
        if share <= 0.0:
            return self, None
        keep = FinalBudget(self.kind, self.epsilon * (1 - share), self.rho * (1 - share))
        return keep, FinalBudget(self.kind, self.epsilon * share, self.rho * share)

    @property
    def live(self) -> NDArray[np.bool_]:
        """The columns with a budget: the others get no draw (withheld before this stage)."""
        return np.asarray((self.rho if self.kind == "gaussian" else self.epsilon) > 0.0)

    def of(self, columns: NDArray[np.bool_]) -> FinalBudget:
        """The budget of the chosen ``columns`` alone."""
        return FinalBudget(self.kind, self.epsilon[columns], self.rho[columns])

    def tail_split(self, share: float) -> tuple[NDArray[np.float64], FinalBudget]:
        """``share`` of every column's budget for the engine's tail count, and the rest for the
        mean. The count is one pure ε-DP call whose ε is the sum of the first part:
        :meth:`~dplong.privacy.budget.plan.ReleasePlan.calibrate` composed it so. A Laplace
        budget gives up ``share`` of each column's ε; a Gaussian one ``share`` of each column's
        ρ, and the count's ε is ``√(2 Σ ρ_t)`` (ε-DP is ε²/2-zCDP, Bun–Steinke Prop. 1.4, so it
        costs at most the ρ it takes), returned spread over the columns by their ρ."""
        if share <= 0.0:
            return np.zeros_like(self.epsilon), self
        if self.kind == "gaussian":
            rest = self.rho * (1 - share)
            taken = self.rho - rest
            total = float(np.sum(taken))
            if not total > 0.0:
                return np.zeros_like(self.rho), self
            count = taken * (math.sqrt(2.0 * total) / total)
            return count, FinalBudget(self.kind, self.epsilon, rest)
        rest = self.epsilon * (1 - share)
        # the tail as the difference, exact (Sterbenz: rest >= ε / 2), so the parts add up to
        # the calibrated ε without rounding up
        return self.epsilon - rest, FinalBudget(self.kind, rest, self.rho)

    def laplace_equivalent(self) -> NDArray[np.float64]:
        """Per column, the ε of a Laplace sum as noisy as this budget's (``2√ρ`` for a
        Gaussian one: sd ``2r / √(2ρ)`` against ``2√2 r / ε``): what the tail rule balances a
        radius against."""
        if self.kind == "gaussian":
            return np.asarray(2.0 * np.sqrt(self.rho))
        return self.epsilon

    def costs(self) -> list[Cost]:
        """One cost per column with a budget."""
        if self.kind == "gaussian":
            return [Cost(rho=float(r)) for r in self.rho[self.live]]
        return [Cost(epsilon=float(e)) for e in self.epsilon[self.live]]

    def noise_sd(self, sensitivity: NDArray[np.float64]) -> NDArray[np.float64]:
        """Noise sd of each column's sum for a per-column sensitivity (before lattice rounding;
        infinite where a column has no budget)."""
        with np.errstate(divide="ignore", invalid="ignore"):  # no budget: infinite (or 0/0)
            if self.kind == "gaussian":
                return np.asarray(sensitivity / np.sqrt(2.0 * self.rho))
            return np.asarray(math.sqrt(2.0) * sensitivity / self.epsilon)


#: How often :func:`_calibrated` may double the Laplace search's ceiling: 2⁴⁰ times its start
#: is beyond any budget a composition of finite calls allows below δ = 1.
_CEILING_DOUBLINGS = 40
#: The last scale :func:`_calibrated` found per kind, d, ε and δ: where the next search of a
#: like plan starts (:func:`largest_within`'s ``guess``; it changes no result). Bounded by
#: clearing.
_GUESSES: dict[tuple[str, int, float, float], float] = {}


@functools.lru_cache(maxsize=256)
def _calibrated(
    plan: ReleasePlan, shares_key: bytes, kind: str, refined: bool, fallback: bool
) -> FinalBudget:
    """:meth:`~dplong.privacy.budget.plan.ReleasePlan.calibrate`: the earlier calls' composition is
    computed once (:class:`~dplong.privacy.accounting.Composer`), then bisection on the final
    stage's scale."""
    shares = np.frombuffer(shares_key)
    early, composer = _early_composer(plan, refined, fallback)
    mean = 1.0 - plan.moment_share
    # the tail count is one pure call over the columns, carved from the means
    # (FinalBudget.tail_split): of their ε, or of their ρ at ε = √(2 ρ_t)
    tail = plan.tail
    parts = np.array([mean * (1.0 - tail), plan.moment_share] if plan.moment_share else [mean])
    if not plan.moment_share:
        parts = parts * (1.0 - tail)

    def total(s: float) -> float:  # the mean (and second moment) of every column, the tail
        final = ((s * shares[shares > 0])[:, None] * parts).ravel()
        taken = s * float(np.sum(shares)) * mean * tail
        if kind == "laplace":
            if tail:
                final = np.append(final, taken)
            return composer.add(final, 0.0).epsilon
        count = np.array([math.sqrt(2.0 * taken)]) if tail else np.zeros(0)
        return composer.add(count, rho=float(sum(final.tolist()))).epsilon

    left = plan.epsilon - sum(c.epsilon for c in early)
    upper = 2.0 * max(left, plan.epsilon) if kind == "laplace" else plan.epsilon
    lower = left / float(np.sum(shares)) if kind == "laplace" else 0.0
    known: list[tuple[float, float]] = []
    if kind == "laplace" and lower > 0:
        known.append((lower * (1 + 1e-9), total(lower * (1 + 1e-9))))
    if known and known[0][1] > plan.epsilon:
        scale = lower  # basic composition is exact here: nothing to gain from the search
    else:
        if kind == "laplace":
            # the Rényi rule lets many small pure calls sum to more than twice the budget
            # (24 columns at δ = 1e-3): the ceiling doubles until it spends more than the
            # request, as it does for any δ < 1 (the composition grows without bound in s)
            for _ in range(_CEILING_DOUBLINGS):
                known.append((upper, total(upper)))
                if known[-1][1] > plan.epsilon:
                    break
                upper *= 2.0
        # the last search of this kind for the same budget and columns is a good guess (the
        # shares follow released radii, the early stages the private count: close from round to
        # round and run to run); it saves calls only
        like = (kind, plan.d, plan.epsilon, plan.delta)
        scale = largest_within(
            total, plan.epsilon, upper, lower=max(lower, 0.0), known=known, guess=_GUESSES.get(like)
        )
        if len(_GUESSES) >= 4096:
            _GUESSES.clear()
        _GUESSES[like] = scale
    eps = scale * shares if kind == "laplace" else np.zeros(plan.d)
    rho = scale * shares if kind == "gaussian" else np.zeros(plan.d)
    return FinalBudget(kind, eps, rho)


@functools.lru_cache(maxsize=256)
def _early_composer(
    plan: ReleasePlan, refined: bool, fallback: bool
) -> tuple[tuple[Cost, ...], Composer]:
    """The plan's calls before its final stage and their :class:`Composer`: a function of the
    plan alone, while the final stage's shares follow released radii (a release calibrates
    the same plan for several of them, and the early calls' Rényi curve, the medians' bounded
    range ones most of all, cost more than the search)."""
    early = tuple(plan.early_costs(refine=refined, fallback=fallback))
    return early, Composer(early, plan.delta)


def top_up(plan: ReleasePlan, spent: Sequence[Cost], mean: FinalBudget) -> FinalBudget:
    """The final means' pure ε scaled as far as the plan's (ε, δ) allow after ``spent``
    (every other call of the release) and the plan's prior calls. Where the engine splits a
    calibrated call after the calibration — the tail stage's second rung, run only where its
    first found a heavy tail, takes its ε from the means' — the parts compose to other than
    their sum: below it where each column's share stays its own call (the means take up the
    difference), above it where the columns' shares are pooled into one count (one call of
    ε₁ + ... + ε_d costs more in Rényi terms than d calls of ε_j at small ε_j: the means give
    the excess back). Either way the release spends exactly its budget (less only where no
    column reaches the final stage). A Gaussian budget's ρ
    is scaled the same way (its second rung, a pure call of ε = √(2 ρ_t), costs at most the ρ_t
    it took, never more). Post-processing of released numbers and public facts.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.accounting import Cost, compose
    >>> from dplong.privacy.budget import FinalBudget, ReleasePlan, top_up
    >>> plan = ReleasePlan.make(n=1000, d=1, epsilon=1.0, delta=1e-6, stated_scale=False)
    >>> mean = FinalBudget("laplace", np.array([0.5]), np.zeros(1))
    >>> spent = plan.early_costs() + [Cost(epsilon=0.05)]
    >>> settled = top_up(plan, spent, mean)
    >>> calls = [*plan.prior, *spent, Cost(epsilon=float(settled.epsilon[0]))]
    >>> round(compose(calls, plan.delta).epsilon, 6)  # exactly the plan's ε
    1.0
    """
    composer = Composer([*plan.prior, *spent], plan.delta)
    gaussian = mean.kind == "gaussian"

    def total(k: float) -> float:
        if gaussian:
            return composer.add(rho=float(np.sum(mean.rho)) * k).epsilon
        return composer.add(mean.epsilon[mean.live] * k, 0.0).epsilon

    # the means were calibrated for about these calls: the factor is near 1 (a guess: it saves
    # calls only)
    k = largest_within(total, plan.epsilon, 2.0, guess=1.0)
    if gaussian:
        return FinalBudget(mean.kind, mean.epsilon, mean.rho * k)
    return FinalBudget(mean.kind, mean.epsilon * k, mean.rho)


def _weighted_variance(
    budget: FinalBudget, radii: NDArray[np.float64], weights: NDArray[np.float64]
) -> float:
    live = budget.live
    return float(np.sum(weights[live] * budget.noise_sd(2.0 * radii)[live] ** 2))


def largest_within(
    total: Callable[[float], float],
    target: float,
    upper: float,
    *,
    lower: float = 0.0,
    known: Sequence[tuple[float, float]] = (),
    guess: float | None = None,
) -> float:
    """The largest s in (0, upper] with ``total(s) <= target``, for ``total`` increasing in s
    (bisection from ``lower``, known to be within, to a relative 1e-9: always on the safe side).

    The bisection's answers are read off a bracket of the crossing found first by regula falsi
    (:class:`_Crossing`) wherever monotonicity decides them, so ``total`` is called some 8
    times instead of 30, and the result is the plain bisection's, bit for bit. ``known``
    values ``(s, total(s))`` already computed, and a ``guess`` of the answer (e.g. that of a
    like search), only save calls: the result is the same without them.

    Examples
    --------
    >>> from dplong.privacy.budget import largest_within
    >>> s = largest_within(lambda s: 3 * s, 1.0, 1.0)
    >>> 3 * s <= 1.0, round(s, 8)
    (True, 0.33333333)
    >>> largest_within(lambda s: 3 * s, 1.0, 1.0, guess=0.3) == s
    True
    """
    within = _Crossing(total, target, upper, known)
    if (
        guess is not None
        and lower < guess * (1.0 - _GUESS_WIDTH) < guess * (1.0 + _GUESS_WIDTH) < upper
    ):
        if not within(guess * (1.0 + _GUESS_WIDTH)):  # most often a bracket of two calls
            within(guess * (1.0 - _GUESS_WIDTH))
    if within(upper):
        return upper
    within.narrow(lower)
    lo, hi = lower, upper
    for _ in range(60):
        if hi - lo <= 1e-9 * hi:
            break
        mid = (lo + hi) / 2.0
        if within(mid):
            lo = mid
        else:
            hi = mid
    return lo


#: Relative distance from an evaluated point beyond which :class:`_Crossing` trusts
#: monotonicity: far above the rounding error of a composition (~1e-15 relative), far below the
#: bisection's resolution (1e-9).
_MONOTONE_MARGIN = 1e-11
#: Relative half-width of the bracket :func:`largest_within` tries around a guess: the
#: calibrations of one plan for the radii of successive rounds or runs differ by about this.
_GUESS_WIDTH = 1e-3


class _Crossing:
    """``total(s) <= target`` for an increasing ``total``: from the largest s evaluated within
    and the smallest s evaluated beyond when s lies clearly outside them, else evaluated.
    :meth:`narrow` brings the two together by Illinois regula falsi (a few calls: ``total`` is
    smooth between the kinks of its minimum over Rényi orders)."""

    def __init__(
        self,
        total: Callable[[float], float],
        target: float,
        upper: float,
        known: Sequence[tuple[float, float]] = (),
    ) -> None:
        self.total, self.target, self.upper = total, target, upper
        self.inside, self.outside = -math.inf, math.inf
        self.at_inside, self.at_outside = math.nan, math.nan
        for s, value in known:
            self._record(s, value)

    def _record(self, s: float, value: float) -> None:
        if value <= self.target:
            if s > self.inside:
                self.inside, self.at_inside = s, value
        elif s < self.outside:
            self.outside, self.at_outside = s, value

    def evaluate(self, s: float) -> float:
        value = self.total(s)
        self._record(s, value)
        return value

    def __call__(self, s: float) -> bool:
        if s < self.inside * (1.0 - _MONOTONE_MARGIN):
            return True
        if s > self.outside * (1.0 + _MONOTONE_MARGIN):
            return False
        return self.evaluate(s) <= self.target

    def narrow(self, lower: float) -> None:
        """Illinois regula falsi between the largest s within (``lower`` evaluated if none is
        known) and the smallest s beyond, until they are within the monotone margin."""
        if self.inside < lower:
            self.evaluate(lower)
        if not self.inside >= lower or self.outside > self.upper:
            return  # nothing within to start from (or nothing beyond): the bisection evaluates
        a, fa = self.inside, self.at_inside - self.target
        b, fb = self.outside, self.at_outside - self.target
        side = 0
        for _ in range(12):
            if self.outside - self.inside <= _MONOTONE_MARGIN * self.outside:
                break
            # the secant's root, kept a margin inside the bracket: a root it finds to the
            # margin is then bracketed by the next call, from the other side
            step = _MONOTONE_MARGIN * b
            s = (a * fb - b * fa) / (fb - fa)
            s = min(max(s, a + step), b - step) if b - a > 4.0 * step else (a + b) / 2.0
            fs = self.evaluate(s) - self.target
            if math.isnan(fs):  # no secant through it: the bisection evaluates the rest
                break
            if fs <= 0.0:
                a, fa = s, fs
                fb = fb / 2.0 if side == -1 else fb  # Illinois: the stale end moves faster
                side = -1
            else:
                b, fb = s, fs
                fa = fa / 2.0 if side == 1 else fa
                side = 1
