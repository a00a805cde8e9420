"""The engine's tail rule: the tail the bulk's scale cannot see, measured.

Where a release states no bounds, scale or tail, the plan carves a tail share from the means'
budget (:func:`with_tail`) and :func:`tail_rule` spends it on one private count of the users
beyond a rung of ``TAIL_RUNG σ̂`` in any column (:func:`_tail_radius`, sensitivity 1 however
many columns). A count well above what normal tails put there marks the columns heavy; each
heavy column's radius then balances its mean's noise against the clipping bias of a Pareto
tail through the count (:func:`tail_bias`), and where that widened a clip, a second rung
beyond the widened radii (:func:`_second_rung`) finds a lump of users far out; a count above
the normal's expectation by less bounds the clipping bias of the columns on the normal plug-in
with the exponential tail model instead (:data:`MODERATE_SDS`). A column whose rough mean lies
far from its median is skewed and gets the exponential tail model (:func:`skew_tails`). About
a public centre the mean lies near, an assumed tail is counted on each side instead
(:func:`_signed_tail`): only a one-sided excess biases there. The findings are a
:class:`TailFinding`; the warning they carry is :func:`heavy_notes`. The rationale is in
``docs/design/engine.md`` ("Heavy tails").
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from dplong._validation import listed
from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import (
    FinalBudget,
    ReleasePlan,
    column_epsilon,
    signed_share,
    tail_share,
    top_up,
)
from dplong.privacy.counts import geometric_counts
from dplong.privacy.locate import Location
from dplong.privacy.noise import (
    count_sd,
    geometric_rate,
    two_sided_geometric,
    two_sided_geometric_variance,
)
from dplong.privacy.projection import MAX_RADIUS
from dplong.privacy.radius import (
    MAD_OVER_SD,
    OFFERS,
    SYMMETRIC,
    AssumedTail,
    Tail,
    TailOption,
    Tails,
    beyond_point,
    beyond_share,
)

__all__ = [
    "ASSUMED_RATIO",
    "BLIND_SHARE",
    "EDGE_SDS",
    "LEANING_SDS",
    "MODERATE_SDS",
    "TAIL_INDEX",
    "TAIL_REACH",
    "TAIL_RUNG",
    "UNCHECKED_SKEW_SHARE",
    "TailFinding",
    "Unchecked",
    "affords_count",
    "blind_columns",
    "clips_many_notes",
    "coarse_count",
    "exceeded_assumptions",
    "heavy_notes",
    "leaning_notes",
    "lump_assumptions",
    "measures_tail",
    "moderate_assumptions",
    "rung_sds",
    "skew_tails",
    "skewed_columns",
    "skewed_notes",
    "stated_remedy",
    "tail_bias",
    "tail_rule",
    "tail_users",
    "unchecked_notes",
    "unchecked_warnings",
    "with_tail",
]

#: Noise sds of a count's plausible high or low end: the tail stage's upper confidence
#: count, and the edge rule of :func:`~dplong.privacy.engine.release_means`.
EDGE_SDS = 3.0
#: A rough mean this many plug-in sds from the median marks a skewed column (:func:`skew_tails`).
SKEWED_SDS = 0.3
#: ... or this many times its error bound (``Location.centre_error``), where that is less: at
#: large n ε a symmetric column's offset stays within the bound while a mild skew's stays put,
#: and the normal tail's clip pulls its interval off (docs/design/engine.md, "the rough mean").
SKEW_ERRORS = 1.2
#: A released mean whose tail no count checked, this many plug-in sds from the median beyond
#: :data:`SKEW_NOISE_SDS` sds of its noise, marks a skewed column its bias bound may not hold
#: for (:func:`skewed_columns`). Clipped near the bulk, a skewed column's mean keeps less of
#: its offset than a rough mean's wider clip does, but enough to tell from a symmetric one's
#: (docs/design/engine.md, "A skewed column no count checked is named").
SKEW_SHARE, SKEW_NOISE_SDS = 0.2, 2.0
#: :data:`SKEW_SHARE` of a column no count checked whose clip rests on the bulk's near-normal
#: plug-in (not an assumed kind's: an exponential's own mean lies 0.43 plug-in sds above its
#: median). It carries the unchecked warning already, so naming a symmetric one costs its
#: interval width, not a warning: a bar symmetric columns cross in about 5 % of releases
#: (normal user means of 300-1,000 users at ε = 0.5-1: 5-9 %), where at 0.2 the check named
#: half or fewer of the lognormal (σ = 1) means whose intervals missed (500 users, ε = 1:
#: covered 0.52 → 0.79; docs/accuracy.md, "A skew no count checked, named at a lower bar").
UNCHECKED_SKEW_SHARE = 0.125

_TAIL = "lattice Laplace count beyond the radius"
_SIGNED = "lattice Laplace counts beyond the rung and the clip, each side"
_SIDES = "lattice Laplace count above less below the rung"
_EACH = "lattice Laplace counts beyond the clip, one a column"

#: How far beyond the bulk's radius a heavy column's radius may reach (:func:`_tail_radius`):
#: the clip of the widest tail the stage vouches for; with little noise a radius far beyond
#: the data would also round the values (and their squares) away on its lattice.
TAIL_REACH = 2.0**6

#: The tail stage counts the users beyond ``TAIL_RUNG σ̂`` in any column (a normal tail puts
#: 0.05 % there, a heavy one many times more: the count tells them apart at a small ε), and
#: calls the columns heavy where the count exceeds ``TAIL_RATIO`` times normal tails' by the
#: noise. 3.5 rather than 3: heavier-tailed regression coefficients put many more users
#: beyond 3 σ̂ than beyond 3.5 (docs/design/engine.md, "The rung and the bar").
TAIL_RUNG, TAIL_RATIO = 3.5, 3.0
#: The ratio for a tail kind a model assumes other than the normal (exponential, chi-square),
#: whose counts beyond a rung move less with σ̂'s error: at 3.5 sds a further 10 % of it moved
#: the normal's by 3.5 (what TAIL_RATIO allows for), the exponential's by 1.42 and the
#: chi-square's by 1.33 (at the kinds' own rungs, :func:`rung_sds`, by 1.8 and 1.7, on an
#: expectation of 0.16 % of the users that the count's noise dwarfs). At TAIL_RATIO an
#: exponential model let through tails twice its own there, whose clip its bias bound did not
#: hold (docs/design/engine.md).
ASSUMED_RATIO = 1.5

#: Counted on each side (:func:`_signed_tail`), an excess ``|D̂|`` beyond ``LEANING_SDS`` of its
#: sds (sampling and noise) but short of :data:`HEAVY_SDS` marks the column ``leaning``: a
#: one-sided tail the counts cannot confirm at this n ε, warned (:func:`leaning_notes`) and not
#: bounded, since a heavy column's Pareto bound widens its interval some tenfold. Under a
#: symmetric tail ``D̂`` over its sd is about normal, past 2.5 in about 1 % of releases, while
#: a count outcome's influence mostly stands past it (docs/accuracy.md, "A one-sided excess
#: short of heavy: warned").
LEANING_SDS = 2.5
#: Noise sds by which the count must exceed that to mark the columns heavy: a normal tail's
#: count beyond 3.5 σ̂ is small, so the noise alone decides a false alarm, which a Laplace draw
#: beyond 3.5 sds raises in e^{-3.5√2} / 2 = 0.35 % of releases (at 3 sds, 0.7 %; a higher bar
#: lets lognormal and Pareto columns through: docs/design/engine.md, "The rung and the bar").
HEAVY_SDS = 3.5

#: Noise sds by which the count must exceed the same expectation for the columns' clipping bias
#: to be bounded under the exponential tail model (``moderate`` in :class:`TailFinding`) where
#: it does not mark them heavy: a tail heavier than the normal plug-in's, too light for the
#: heavy threshold. A skew no rough mean saw puts several times the normal's count beyond the
#: rung, and its clip near the bulk cuts SEs off the mean under a normal bias bound. Only the
#: bound moves, not the clip (a wider clip cost per-user OLS slopes, whose heavier tails are
#: symmetric), so a false alarm costs width: a normal column crosses the band on the noise
#: alone in at most e^{-1.5√2} / 2 = 6 % of releases (docs/design/engine.md, "A moderate
#: tail").
MODERATE_SDS = 1.5

#: The normal tail's count is taken for a σ̂ 10 % too small (the private scale's own
#: error, which alone marked Gaussian columns heavy now and then: docs/accuracy.md).
TAIL_SLACK = 0.9

#: The share of the users with a statistic above which the tail count's threshold leaves it
#: blind (:func:`blind_columns`): a tail that puts fewer users than the threshold beyond the rung
#: goes unseen, and the bias bound assumes the bulk's model beyond the clip. A lognormal
#: (σ = 1) tail puts 5-7 % of the users beyond the rung and, clipped there, moves the mean of
#: 750 users by up to 7 SEs: at a tenth, one level of `by=` held it unseen and unwarned in 11-19
#: % of releases (an audit; docs/accuracy.md, "A level's tail under a count sized for all").
BLIND_SHARE = 0.05

#: How the reliability warnings ask for each :data:`~dplong.privacy.radius.Offer`.
_OFFERED: dict[str, str] = {
    "lower": "declare lower=0 for a statistic that cannot be negative",
    "tail": "state tail=Moment(k, bound)",
    "scale": "state scale=",
    "bounds": "state bounds=(low, high)",
    "within_scale": "state scale= with within_scale=",
}


def _sentence(text: str) -> str:
    """``text`` with its first letter capitalised."""
    return text[:1].upper() + text[1:]


def stated_remedy(offers: Collection[str]) -> str:
    """The remedies of the ``offers`` (:data:`~dplong.privacy.radius.Offer`) in one phrase
    ("" for none).

    Examples
    --------
    >>> from dplong.privacy.tails import stated_remedy
    >>> stated_remedy({"scale", "tail"})
    'state tail=Moment(k, bound) or scale='
    >>> stated_remedy(()), stated_remedy({"scale", "lower"})
    ('', 'declare lower=0 for a statistic that cannot be negative or state scale=')
    >>> stated_remedy({"scale", "bounds"})
    'state scale= or bounds=(low, high)'
    """
    parts = [text for offer, text in _OFFERED.items() if offer in offers]
    # "state tail=..., scale= or bounds=...": one verb for a run of them
    parts = [
        text.removeprefix("state ") if i and parts[i - 1].startswith("state ") else text
        for i, text in enumerate(parts)
    ]
    return listed(parts, "or") if parts else ""


#: Why no count checked a column's tail (:func:`unchecked_warnings`), and the remedy: a tail
#: option shapes the default engine's central release only.
Unchecked = Literal["blind", "coarse", "unaffordable", "paper"]
_UNCHECKED: dict[str, tuple[str, str]] = {
    "blind": (
        f"the tail count could not tell {BLIND_SHARE:.0%} of the users beyond {TAIL_RUNG:g} sds "
        "from them",
        stated_remedy(OFFERS),
    ),
    "coarse": (
        "the tail count this n and epsilon afford only with the declared support marks the "
        "heaviest tails alone",
        stated_remedy(OFFERS),
    ),
    "unaffordable": ("this n and epsilon afford no tail count", stated_remedy(OFFERS)),
    "paper": ("the paper's pipeline runs no tail count", "state the scale"),
}

#: Index α of the Pareto tail through the measured count that sizes a heavy column's radius and
#: bounds its clipping bias (:func:`tail_bias`): the heaviest tail the bound allows for, as
#: heavy as the spending data's (a lighter index left skewed means uncovered: the figures in
#: docs/design/engine.md, "Heavy tails: the tail rule").
TAIL_INDEX = 1.5

#: Noise sds by which the tail stage's second count must exceed what the Pareto tails through
#: the first rung put beyond the widened radius to mark a lump far out (:func:`_second_rung`):
#: 3, a false lump in about 0.1 % of such releases. A false lump is no small cost: it
#: re-balances the clip some three times wider and the mean's noise sd five times, and at 2
#: sds (2 % of releases) the two of 200 lognormal (σ = 1) releases of `benchmarks/peers.py`
#: that fired held 0.7 of its MSE ratio of 3.8, and RAND HIE's spending mean at ε = 1 came out
#: at 177 ± 179 in one of its first seeds. A missed lump is clipped beyond the bias bound: at 3
#: the 90 %-zero mixture with a lognormal tail (1,000 users, ε = 1) is covered in 0.96-0.975 of
#: releases (0.98-0.99 at 2) at 1.07 times the MSE (docs/design/engine.md, "Heavy tails: the
#: tail rule"; docs/accuracy.md, session 116).
LUMP_SDS = 3.0

#: The second rung's share of the means' budget, in units of the first's (:func:`_second_rung`,
#: spent only where the first found heavy columns and widened their clips, whose width makes
#: their means' noise the smaller worry; docs/design/engine.md has the lump it must see).
SECOND_RUNG = 1.5
#: The counts at a lump's re-balanced clip, which anchor its bias bound and, where they find
#: the lump reaching past the clip, the clip balanced again (:func:`_lump_anchors`): each
#: one's share of the means' budget in the same units, and how many at most (each re-balance
#: reaches up to :data:`TAIL_REACH` further).
LUMP_ANCHOR, LUMP_COUNTS = 1.0, 4

#: The share of the means' budget (after the second rung's) for the heavy columns' signed counts
#: (:func:`_side_clips`), in units of the first count's: spent only where the second rung ran
#: and found no lump. At the first's share the counts split one-sided tails at
#: 1,000 users and ε = 1, where at half they are too noisy to, and more gained nothing
#: (docs/accuracy.md, "The sides counted after the second rung, at the first count's share").
SIDES_SHARE = 1.0
#: The normal quantile of a two-sided 95 % interval: how :func:`_side_clips` weighs a mean's noise
#: against its bias bound when it compares clips.
_Z95 = 1.959963984540054


def with_tail(
    plan: ReleasePlan, *, measured: bool, users: float | None = None, signed: bool = False
) -> ReleasePlan:
    """The plan with the tail stage's share (one count of the users in a tail, calibrated with
    the final stage) where the release measures its tail: no bounds, scale or tail stated;
    ``users`` is the high end of the private count of users with a statistic, for whom the
    share is sized (:func:`~dplong.privacy.budget.tail_share`; n where not given); ``signed``:
    the counts on each side of an assumed tail's (:class:`~dplong.privacy.radius.AssumedTail`),
    sized by :func:`~dplong.privacy.budget.signed_share`."""
    if not measured:
        return plan
    return dataclasses.replace(plan, tail=_share(plan, users, signed=signed))


def _share(plan: ReleasePlan, users: float | None = None, *, signed: bool = False) -> float:
    """The tail stage's share for ``plan``: the signed counts' (:func:`_signed_tail`) or the
    one count's. Public facts and a released count."""
    if signed:
        return signed_share(plan.n, plan.per_column)
    return tail_share(plan.n, plan.d, plan.per_column, users, supported=plan.supported)


def measures_tail(tail: TailOption | None) -> bool:
    """Whether the tail stage checks a release's tail (where no bounds or scale are stated):
    none given, or a tail kind assumed (:class:`~dplong.privacy.radius.AssumedTail`); never a
    stated moment bound, nor a kind stated.

    Examples
    --------
    >>> from dplong.privacy.radius import AssumedTail, Moment
    >>> from dplong.privacy.tails import measures_tail
    >>> measures_tail(None), measures_tail("exponential"), measures_tail(Moment(4, 1.0))
    (True, False, False)
    >>> measures_tail(AssumedTail("exponential"))
    True
    """
    return tail is None or isinstance(tail, AssumedTail)


def affords_count(plan: ReleasePlan, *, signed: bool = False) -> bool:
    """Whether ``plan``'s n ε affords the tail stage's count (:func:`with_tail` gives it a
    share, a public fact: :func:`~dplong.privacy.budget.tail_share` at n, or ``signed``,
    :func:`~dplong.privacy.budget.signed_share`).

    Examples
    --------
    >>> from dplong.privacy.budget import ReleasePlan
    >>> from dplong.privacy.tails import affords_count
    >>> [affords_count(ReleasePlan.make(n=545, d=1, epsilon=e, delta=1e-6, stated_scale=False))
    ...  for e in (1.0, 4.0)]
    [False, True]
    >>> [affords_count(ReleasePlan.make(n=545, d=1, epsilon=e, delta=1e-6, stated_scale=False),
    ...                signed=True) for e in (4.0, 8.0)]   # counts resolving √n users
    [False, True]
    """
    return _share(plan, signed=signed) > 0.0


def coarse_count(plan: ReleasePlan) -> bool:
    """Whether ``plan``'s tail count runs only because a support is declared: none would run
    without it (:data:`~dplong.privacy.budget.stages.SUPPORTED_FLOOR`). Near its floor such a
    count marks only the heaviest tails, and the columns it leaves unmarked are warned as
    unchecked (:func:`unchecked_warnings`, ``"coarse"``): user means of Pareto (2.5) rows
    put 3-6 % of 500 users beyond the rung, under its threshold of about a tenth of them, and
    their intervals missed with no warning in 11 of 100 releases at ε = 1 (docs/accuracy.md).

    Examples
    --------
    >>> from dplong.privacy.budget import ReleasePlan
    >>> from dplong.privacy.tails import coarse_count
    >>> def plan(n, epsilon, supported=True):
    ...     return ReleasePlan.make(n=n, d=1, epsilon=epsilon, delta=1e-6, stated_scale=False,
    ...                             supported=supported)
    >>> coarse_count(plan(500, 1.0)), coarse_count(plan(500, 1.0, supported=False))
    (True, False)
    >>> coarse_count(plan(5000, 1.0))  # a count runs without the support
    False
    """
    return plan.supported and tail_share(plan.n, plan.d, plan.per_column) == 0.0


def _heavy_threshold(
    users: NDArray[np.float64], kinds: Tails, measurable: NDArray[np.bool_], sd: float
) -> float:
    """The tail count (of noise sd ``sd``) above which :func:`_tail_radius` marks columns
    heavy: :data:`TAIL_RATIO` times what normal tails of σ̂ (:data:`TAIL_SLACK` lower) put
    beyond the rungs (:data:`ASSUMED_RATIO` times an assumed kind's), summed over the
    ``measurable`` columns of ``users`` each, plus :data:`HEAVY_SDS` noise sds."""
    kind = np.broadcast_to(np.asarray(kinds), np.shape(users))
    normal = np.multiply(users, [_kind_rung(k)[1] for k in kind.tolist()])
    ratio = np.where(kind == "gaussian", TAIL_RATIO, ASSUMED_RATIO)
    return float(np.sum(np.where(measurable, ratio * normal, 0.0))) + HEAVY_SDS * sd


def _measurable(rung: NDArray[np.float64], live: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The live columns whose rung measures something (a rung of 0 or inf does not)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(rung) & (rung > 0) & live


def _found_share(count: float, threshold: float, measurable: NDArray[np.bool_]) -> float:
    """A heavy column's share of the users the tail count found beyond its heavy threshold
    (at least 1): what its radius is balanced for (:func:`_tail_radius`)."""
    return max((count - threshold) / max(int(np.sum(measurable)), 1), 1.0)


def unchecked_notes(
    names: tuple[str, ...],
    assumed: AssumedTail,
    plan: ReleasePlan,
    offers: Collection[str],
) -> tuple[str, ...]:
    """The note of a release whose tail model the model ``assumed`` where its plan affords no
    tail count (``n ε`` too small: :func:`affords_count` is false, a public fact): nothing
    checks the model there, and a heavier tail is clipped beyond the bias bound; the remedy
    named is the model's ``offers`` (:func:`stated_remedy`).

    Examples
    --------
    >>> from dplong.privacy.budget import ReleasePlan
    >>> from dplong.privacy.radius import AssumedTail
    >>> from dplong.privacy.tails import unchecked_notes
    >>> small = ReleasePlan.make(n=545, d=2, epsilon=1.0, delta=1e-6, stated_scale=False)
    >>> tail = AssumedTail(("chi-square", "exponential"))
    >>> (note,) = unchecked_notes(("a", "b"), tail, small, {"scale"})
    >>> note[:66]
    "['a', 'b']: no count checked their chi-square/exponential tails (t"
    >>> large = ReleasePlan.make(n=5912, d=2, epsilon=1.0, delta=1e-6, stated_scale=False)
    >>> unchecked_notes(("a", "b"), tail, large, {"scale"})
    ()
    >>> unchecked_notes(("a", "b"), tail, small, {"within_scale"})[0][-59:]
    'state scale= with within_scale= if known, or raise epsilon.'
    >>> unchecked_notes(("a", "b"), tail, small, ())[0][-41:]   # the scale stated already
    'and the interval can miss; raise epsilon.'
    """
    if affords_count(plan, signed=assumed.signed):
        return ()
    one = len(names) == 1
    remedy = stated_remedy(offers)
    return (
        f"{list(names)}: no count checked {'its' if one else 'their'} {assumed.described} "
        f"{'tail' if one else 'tails'} ({_UNCHECKED['unaffordable'][0]}): a heavier tail than "
        f"{'that model' if one else 'those models'} is clipped beyond the bias bound, and the "
        f"interval can miss; {f'{remedy} if known, or ' if remedy else ''}raise epsilon.",
    )


def tail_users(where: Location, users: NDArray[np.float64]) -> NDArray[np.float64]:
    """The users a tail count can find beyond its rungs, per column: ``users`` (a count of the
    users with a statistic), but where the midpoint is 0 and the centre lies within the rung
    of it, at most the plausible high end of the users the scale stage counted off 0 (a user
    at 0 is then within every rung). The tail stage's share and its threshold's expectation
    are sized for them, and its blindness judged against them: a tail's clipping bias lives
    among the users off 0, and sized for all of them the count sees only tails as many times
    heavier as there are zeros (docs/design/engine.md, "Heavy tails"). Released numbers only
    (the count off 0, σ̂, the centre).

    Examples
    --------
    80 % of 5,000 users at 0: the count reads the users the scale stage found off 0 (about
    1,000 and its noise's reach), not all 5,000:

    >>> import numpy as np
    >>> from dplong.privacy.budget import ReleasePlan
    >>> from dplong.privacy.locate import locate
    >>> from dplong.privacy.tails import tail_users
    >>> data = np.random.default_rng(0)
    >>> x = np.where(data.random(5000) < 0.8, 0.0, data.lognormal(0.0, 1.0, 5000))[:, None]
    >>> plan = ReleasePlan.make(n=5000, d=1, epsilon=1.0, delta=1e-6, stated_scale=False)
    >>> where = locate(x, plan=plan, names=("x",), rng=np.random.default_rng(1), gamma=0.05)
    >>> bool(tail_users(where, where.per_column_users)[0] < 1500)
    True
    """
    if where.scan is None:
        return users
    off = where.scan.off_zero + where.scan.reach
    with np.errstate(invalid="ignore", over="ignore"):  # a rung past the largest double: inf
        inside = np.abs(where.centre) < TAIL_RUNG * where.sd
    return np.asarray(np.where(np.isfinite(off) & inside, np.fmin(users, np.fmax(off, 1.0)), users))


def skew_tails(where: Location) -> tuple[Tail, ...]:
    """The tail model of each column's final stage, from released numbers: a rough mean
    :data:`SKEWED_SDS` plug-in sds or more from the median says the column is skewed (an
    exponential's mean is 0.43 of its MAD-based sd from its median, a log-normal's 0.73; a
    symmetric column's differ by their noise), and the normal tail would clip its long side
    at ~3 sds with a bias bound that cannot see it (Exp(1) at n = 2000, ε = 1: 5 % of the mean
    against a bound of 0.5 %). So does a scale measured on the users off a value most share
    (other than 0), whose rough mean the others dilute; off 0 the count of the users off it
    undoes the dilution: their rough mean against their median. Skewed columns get the
    exponential tail model (wider radii, their bias bounded); the others the normal plug-in."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # a column withheld
        skew = np.abs(where.centre - where.midpoint) / where.sd
    # a scale measured on the users off a shared value: their skew is diluted by the others
    shared = np.zeros(skew.shape, dtype=bool) if where.scan is None else where.scan.shared
    if where.scan is not None:
        # off 0, where most users are exactly 0 (the midpoint's zero cell), the scale is their
        # median magnitude and the count says how many they are: their rough mean (the zeros
        # add nothing) against that median (90 % at 0 and a lognormal tail, n = 100,000,
        # ε = 1: the rough mean of all 0.2 sds from 0, clipped at the normal tail, the
        # interval 4.8 SEs low, in 0 of 20 releases)
        share = np.clip(where.scan.off_zero / where.per_column_users, 1e-12, 1.0)
        median = where.sd * np.array(
            [MAD_OVER_SD[k] for k in np.broadcast_to(where.tail, skew.shape)]
        )
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            off = (np.abs(where.centre) / share - median) / where.sd
        skew = np.where(np.isfinite(where.scan.off_zero), np.fmax(skew, off), skew)
    # at large n ε the rough mean's error bound is far below SKEWED_SDS and a milder skew is
    # both plain and costly (SKEW_ERRORS)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        bar = np.minimum(SKEWED_SDS, SKEW_ERRORS * where.centre_error / where.sd)
    return tuple(
        "exponential" if s >= b or a else "gaussian"
        for s, b, a in zip(skew, bar, shared, strict=True)
    )


@dataclass(frozen=True)
class TailFinding:
    """What the tail rule (:func:`tail_rule`) found, per column: the final ``radius``, the
    ``heavy`` columns, the upper confidence count ``reach`` of users beyond the rung ``rung``
    that anchors a heavy column's bias bound (:func:`tail_bias`), the rule's ledger
    ``entries``, the means' budget it leaves (``mean_budget``), the ``threshold``, the
    count of users beyond the rung that marks the columns heavy (public facts and released
    numbers: :func:`blind_columns`), and the ``moderate`` columns, whose normal plug-in the
    count overturned short of the heavy threshold (:data:`MODERATE_SDS`): their bias bound
    takes the exponential tail model. Counted on each side (:func:`_signed_tail`), the
    ``clips_many`` columns, whose clip cuts many users (:func:`clips_many_notes`), and their
    released ``clipped`` counts. The ``exceeded`` columns: an assumed skewed kind
    (exponential, chi-square) the count found exceeded in the same band, which has no lighter
    model to give way to: their bias bound is the Pareto tail's through the count
    (:func:`tail_bias`), as a heavy column's, at the bulk's clip
    (:func:`exceeded_assumptions`). Where the sides of the heavy columns were counted
    (:func:`_side_clips`), the interval's middle is ``shift`` from the located centre (half the
    difference of the two sides' radii; ``radius`` is half their sum) and ``reach`` and
    ``reach_low`` are the upper confidence counts above and below (None: ``reach`` for both).
    Where the second rung counted and found no lump (:func:`_second_rung`), ``far`` is its
    anchor: the upper confidence count of the users beyond the heavy columns' widened radii,
    and those radii (infinite elsewhere), which bounds the bias of a clip there or beyond
    (:meth:`beyond`); a lump re-anchors ``reach`` and ``rung`` there instead.
    Counted on each side, the ``leaning`` columns, whose released excess ``excess`` (users
    beyond the rung above less below, :func:`_signed_tail`) points to a one-sided tail short
    of marking them heavy (:func:`leaning_notes`). Where the rule does not run: the bulk's
    radius, no heavy, moderate, clips-many, exceeded or leaning column, no entry, the budget
    untouched, a threshold of 0."""

    radius: NDArray[np.float64]
    heavy: NDArray[np.bool_]
    reach: NDArray[np.float64]
    rung: NDArray[np.float64]
    entries: tuple[LedgerEntry, ...]
    mean_budget: FinalBudget
    threshold: float = 0.0
    moderate: NDArray[np.bool_] = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    clips_many: NDArray[np.bool_] = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=bool)
    )
    clipped: NDArray[np.float64] = dataclasses.field(default_factory=lambda: np.zeros(0))
    exceeded: NDArray[np.bool_] = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    shift: NDArray[np.float64] | None = None
    reach_low: NDArray[np.float64] | None = None
    far: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    leaning: NDArray[np.bool_] = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=bool))
    excess: NDArray[np.float64] = dataclasses.field(default_factory=lambda: np.zeros(0))

    def beyond(
        self, radius: NDArray[np.float64], moved: NDArray[np.float64], users: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """The heavy columns' clipping bias bound (:func:`tail_bias`) for the interval ``c +
        moved ± radius`` (c the located centre): the Pareto tail through ``reach`` beyond the
        upper clip (all the users the count found, on either side: where a support's end moved
        the interval up, none lies below it), or, where the sides were counted
        (``reach_low``), the larger of each side's through its own count (the two clips bias
        the mean in opposite directions). A clip at or beyond the second rung takes the
        lower of that bound and the Pareto tail's through the second count (``far``).

        Examples
        --------
        100 users beyond a rung of 1 above a clip of 16 (the long side, 4 above the located
        centre's middle), 10 beyond the rung below a clip of 8, of 1,000 users:

        >>> import numpy as np
        >>> from dplong.privacy.tails import TailFinding, tail_bias
        >>> found = TailFinding(np.array([12.0]), np.ones(1, dtype=bool), np.array([100.0]),
        ...                     np.ones(1), (), None, reach_low=np.array([10.0]))
        >>> bound = found.beyond(np.array([12.0]), np.array([4.0]), np.array([1000.0]))
        >>> float(bound[0]) == float(tail_bias(np.array([100.0]), np.ones(1), np.array([16.0]),
        ...                                    np.array([1000.0]))[0])
        True
        >>> round(float(bound[0]), 4)
        0.05
        """
        upper = _anchored_bias(self.reach, self.rung, radius + moved, users, self.far)
        if self.reach_low is None:
            return upper
        lower = _anchored_bias(self.reach_low, self.rung, radius - moved, users, self.far)
        return np.fmax(upper, lower)

    def tail(self, tail: Tails) -> Tails:
        """The tail model of each column's bias bound after the rule: ``tail`` (the located
        one, which sized the clip), the exponential where the count found a moderate tail.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.privacy.tails import TailFinding
        >>> found = TailFinding(np.ones(2), np.zeros(2, dtype=bool), np.zeros(2), np.zeros(2),
        ...                     (), None, moderate=np.array([True, False]))
        >>> found.tail("gaussian")
        ('exponential', 'gaussian')
        """
        if not self.moderate.any():
            return tail
        kinds = np.broadcast_to(np.asarray(tail), self.moderate.shape)
        return tuple(np.where(self.moderate, "exponential", kinds).tolist())


def tail_rule(
    matrix: NDArray[np.float64],
    where: Location,
    plan: ReleasePlan,
    names: tuple[str, ...],
    final: tuple[NDArray[np.float64], FinalBudget, FinalBudget | None],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
    assumed: Tails | None = None,
    *,
    signed: bool = False,
    balance: float = 1.0,
    live: NDArray[np.bool_] | None = None,
    sided: bool = False,
) -> TailFinding:
    """The tail rule (design notes, "Heavy tails"): where the plan has a tail share
    (:func:`with_tail`: no bounds, scale or tail stated, or a tail the model assumes), one
    count beyond the first rung (:func:`_tail_radius`) carved from the means' budget, and where
    it finds heavy columns and widens their radii a second count beyond them
    (:func:`_second_rung`), after which the means take up what the split's composition leaves
    (:func:`~dplong.privacy.budget.top_up`); where the count only exceeds the normal's
    expectation by :data:`MODERATE_SDS` noise sds, the columns on the normal plug-in get the
    exponential model's bias bound (:class:`TailFinding`, ``moderate``), and the columns of
    a skewed kind the model ``assumed`` get the Pareto bound through the count (``exceeded``).
    ``final`` is the bulk's
    radii, the means' budget and the second moment's (None if not bought); ``assumed`` the
    tail kind the model assumes (one or one per column) (None: the normal plug-in's
    expectation). ``signed`` (an :class:`~dplong.privacy.radius.AssumedTail`'s, about a public
    centre the mean lies near): a tail the clip cuts biases the mean only by its excess on one
    side, and each column's tail is counted on each side instead (:func:`_signed_tail`).
    ``balance``: the release's noise per unit of radius over its clipping bias per unit of a
    user's excess, against a mean's (1: the release is a mean; a curve's is its largest
    ``Σ_i |a_i(x)|`` over n times a unit's largest row norm of weights,
    :func:`~dplong.models.response_centre.response_tail`): the widened radius balances the
    release's own two. Only the ``live`` columns are counted (default: those the location
    stages did not withhold, :attr:`~dplong.privacy.locate.Location.doomed`). ``sided``: the
    release can place its interval off the located centre, and a heavy column's two sides are
    counted apart after the second rung where it found no lump (:func:`_measured_sides`), each
    clipped as far out as its own tail asks."""
    radius, mean_budget, moment_budget = final
    d = radius.shape[0]
    none = np.zeros(d, dtype=bool)
    quiet = TailFinding(
        radius,
        none,
        np.zeros(d),
        np.zeros(d),
        (),
        mean_budget,
        0.0,
        none,
        none,
        np.full(d, np.nan),
        none,
        leaning=none,
        excess=np.full(d, np.nan),
    )
    if not plan.tail:
        return quiet
    tail_epsilon, mean_budget = mean_budget.tail_split(plan.tail)
    if not np.any(tail_epsilon > 0.0):
        return dataclasses.replace(quiet, mean_budget=mean_budget)
    if signed:  # four counts per column (two bins a side), no second rung
        return _signed_tail(matrix, where, names, radius, (tail_epsilon, mean_budget), rng, root)
    joint = float(np.sum(tail_epsilon))
    live = ~where.doomed if live is None else live
    users = tail_users(where, where.per_column_users)
    wide, heavy, reach, rung, threshold, moderate = _tail_radius(
        matrix,
        where,
        radius,
        joint,
        mean_budget.laplace_equivalent() * balance,
        users,
        rng,
        root,
        live=live,
        assumed=assumed,
        coarse=coarse_count(plan),
    )
    entries = [_tail_entry(_named(names, live), joint)]
    # a skewed kind the model assumes has no lighter model to give way to where the count
    # exceeds it: its bias bound takes the Pareto tail through the count (s²_u of t₄ errors
    # under RandomEffectsLocation's exponential: 4 times its users beyond the rung, short of
    # the heavy threshold, clipped 20 times its bound; docs/design/engine.md)
    skewed = none if assumed is None else ~np.isin(np.broadcast_to(assumed, (d,)), SYMMETRIC)
    exceeded = moderate & skewed
    # only the normal plug-in gives way to it (a skewed column is exponential already), and
    # only where no rough mean told skew from symmetry (skew_tails: a symmetric column's
    # heavier tail, clipped about a centre near its mean, loses little)
    moderate &= (np.broadcast_to(np.asarray(where.tail), moderate.shape) == "gaussian") & (
        not where.refined
    )
    upper, lower, reach_low, far = wide, wide, None, None
    if (heavy & (wide > radius)).any():
        # a second rung at the symmetric widened clips, from the means' budget, where the
        # balance widened one: beyond a clip it left at the bulk's, near the rung, the Pareto
        # tails through the rung put about every user the first count found, so no lump could
        # show, and the count's share only noised the means (per-user slopes' t-like tails
        # near the threshold: issue 28's per-user cell at 1,000 users, docs/accuracy.md)
        rung_epsilon, mean_budget = mean_budget.tail_split(SECOND_RUNG * plan.tail)
        rung_total = float(np.sum(rung_epsilon))
        counted = np.where(heavy, wide, np.inf)
        wide, reach, rung, lump, beyond = _second_rung(
            matrix,
            where.centre,
            heavy,
            (radius, wide),
            (rung, reach),
            rung_total,
            mean_budget.laplace_equivalent() * balance,
            rng,
            root,
        )
        entries.append(_tail_entry(_named(names, heavy), rung_total))
        # a lump re-anchored reach and rung at the second count already: its own anchor only
        # where there was none
        far = None if lump else (beyond, counted)
        # the re-balanced clip at its reach: the balance stopped by the limit, not by the tail
        capped = heavy & (wide >= np.fmin(TAIL_REACH * radius, MAX_RADIUS) * (1.0 - 1e-12))
        # a lump that may run on past its clip, or one of several columns' the joint count
        # could not place: counted at each clip
        if lump and (np.any(capped) or _placeable(heavy, reach, plan, mean_budget)):
            reach, rung, wide, far, mean_budget, anchors = _lump_anchors(
                matrix, where.centre, heavy, (reach, rung, wide), (plan, mean_budget), rng,
                root, names=names, balance=balance
            )  # fmt: skip
            entries += anchors
        upper, lower = wide, wide
        # which side each heavy tail is on (design notes, "Heavy tails"), where no lump
        # re-anchored the tail beyond the wider clip: a lump takes one clip for both sides, and
        # the signed counts would be spent for nothing (a 90 %-zero mixture, docs/accuracy.md)
        if sided and far is not None and not lump:
            first = (float(reach[0]), threshold, joint)
            sides = _measured_sides(
                matrix, where, names, heavy, (radius, rung, wide), first, (plan, mean_budget),
                live, rng, root, users=users, balance=balance, far=far
            )  # fmt: skip
            if sides is not None:
                mean_budget, upper, lower, reach, reach_low, side_entries = sides
                entries += side_entries
        # the split call composes below its sum: the means take up the rest
        others = [*where.entries, *entries]
        moment_costs = [] if moment_budget is None else moment_budget.costs()
        mean_budget = top_up(plan, [e.cost for e in others] + moment_costs, mean_budget)
    return dataclasses.replace(
        quiet,
        radius=upper if reach_low is None else upper / 2.0 + lower / 2.0,
        heavy=heavy,
        reach=reach,
        rung=rung,
        entries=tuple(entries),
        mean_budget=mean_budget,
        threshold=threshold,
        moderate=moderate,
        exceeded=exceeded,
        shift=None if reach_low is None else upper / 2.0 - lower / 2.0,
        reach_low=reach_low,
        far=far,
    )


def _tail_radius(
    matrix: NDArray[np.float64],
    where: Location,
    radius: NDArray[np.float64],
    epsilon: float,
    mean_epsilon: NDArray[np.float64],
    users: NDArray[np.float64],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
    live: NDArray[np.bool_] | None = None,
    assumed: Tails | None = None,
    *,
    coarse: bool = False,
) -> tuple[
    NDArray[np.float64],
    NDArray[np.bool_],
    NDArray[np.float64],
    NDArray[np.float64],
    float,
    NDArray[np.bool_],
]:
    """The tail stage: one private count of the users beyond a rung in any column, and the
    final radii it implies (design notes, "Heavy tails"). Only the ``live`` columns (default
    all; :attr:`~dplong.privacy.locate.Location.doomed` leaves out those already withheld, a
    public choice) are counted, expected and marked. Where the model ``assumed`` a tail kind
    per column, the count is held against what that kind puts beyond the rungs
    (:func:`~dplong.privacy.radius.beyond_share`) instead of normal tails.

    ``r_j = TAIL_RUNG σ̂_j`` (σ̂ the released scale; an assumed kind's own rung,
    :func:`rung_sds`; beyond the bulk's radius ``w`` where that is narrower, so that the
    model's tails leave next to nobody there) and ``C = #{u : |x_uj - c_j|
    > r_j for some j}`` (with precision weights, ``root`` = ``√w_u``, the standardised ``√w_u
    |x_u - c|`` the final stage clips), which has sensitivity 1 however many columns there
    are: two-sided geometric noise at ``epsilon``, the columns' summed tail ε (one count per
    release: the heavy coefficients of a regression show up together, and at small n ε one
    count at d times the ε sees them where d counts could not). A count above
    :data:`TAIL_RATIO` times what normal tails of σ̂ (:data:`TAIL_SLACK` lower) put beyond the
    rungs (:data:`ASSUMED_RATIO` times an assumed kind's; their sum over the columns), by
    :data:`HEAVY_SDS` noise sds, marks the columns heavy: the bulk's scale does not see their
    tails; so does a count above it by :data:`MODERATE_SDS` sds in a column the threshold is
    blind in (:func:`blind_columns`), whose tail the count found but cannot size — unless the
    count is ``coarse`` (run at a small n ε only because a support is declared,
    :data:`~dplong.privacy.budget.stages.SUPPORTED_FLOOR`): near its floor it is blind for a
    normal column too, whose band the noise alone then crosses in a few per cent of releases,
    and a false heavy mark widens the clip many times (docs/accuracy.md); such a count marks
    heavy only above its full threshold. Each heavy
    column's radius balances the noise of its mean against the clipping bias of a Pareto tail
    of index α (:data:`TAIL_INDEX`) through ``(r_j, C_j)``, ``C_j = (C - C₀) / d`` its share
    of the users found beyond the test's threshold ``C₀`` (so the radius grows from the bulk's
    with the evidence, not in a jump at the threshold): beyond ``R >= r`` lie ``K R^(1-α)``,
    ``K = C_j r^α / (α - 1)``, of excess (:func:`tail_bias`, whose bound takes all of C: no
    column has more users beyond its rung), against a Laplace noise sd of ``2√2 R / ε_m`` for
    the sum; so ``R^α = K √(α - 1) ε_m / (2√2)``, at least ``r`` and ``w`` and at most
    :data:`TAIL_REACH` times ``w``.
    Returns the radii, the heavy columns, the upper confidence count ``C + EDGE_SDS sd`` (per
    column), the rungs, the threshold (users) and the moderate columns: short of the heavy
    threshold by no more than ``HEAVY_SDS - MODERATE_SDS`` noise sds (:data:`MODERATE_SDS`).
    """
    live = np.ones(matrix.shape[1], dtype=bool) if live is None else live
    kinds: Tails = "gaussian" if assumed is None else assumed
    with np.errstate(over="ignore", invalid="ignore"):
        rung = rung_sds(kinds) * where.sd
        deviations = np.abs(matrix - where.centre) * (1.0 if root is None else root)
        # NaN: no statistic, never beyond; nor is anyone in a column already withheld
        exact = int(np.sum(np.any((deviations > rung) & live, axis=1)))
    counted, sd, _ = geometric_counts(np.array([exact]), epsilon, 1.0, rng)
    count = float(counted[0])
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        measurable = _measurable(rung, live)
        threshold = _heavy_threshold(users, kinds, measurable, sd)
        # above the normal's expectation by MODERATE_SDS noise sds: heavier than the normal
        # plug-in; heavy by HEAVY_SDS, or by MODERATE_SDS where the heavy threshold is blind
        # (BLIND_SHARE): a tail the count found but cannot size gets the measured Pareto
        # bound, not the exponential one (a lognormal (σ = 1) level of 2,100 users among three
        # at ε = 1, its count's threshold a seventh of them: 0 of 22 such intervals held the
        # mean, none warned)
        band = (count > threshold - (HEAVY_SDS - MODERATE_SDS) * sd) & measurable
        blind_band = np.zeros_like(band) if coarse else blind_columns(threshold, users, band)
        heavy = ((count > threshold) & measurable) | blind_band
        moderate = band & ~heavy
        # the radius is balanced for the users found beyond what the test lets through, a
        # column's share of them (the bias bound below takes them all): a count just past the
        # threshold widens the clip a little, not to the whole Pareto balance (per-user slopes
        # of t-like tails found heavy in 16 % of the issue-10 releases at n = 10,000 doubled
        # their MSE for no coverage; docs/accuracy.md), and the heavy coefficients of a
        # regression share their tail's users
        share = _found_share(count, threshold, measurable)
        # never inside the rung, beyond which alone the Pareto tail is anchored
        balanced = np.clip(_balanced(rung, share, mean_epsilon), radius, TAIL_REACH * radius)
        final = np.where(heavy, np.fmin(balanced, MAX_RADIUS), radius)
    reach = np.full(rung.shape, count + EDGE_SDS * sd)
    return final, np.asarray(heavy), reach, rung, threshold, np.asarray(moderate)


def _balanced(
    rung: NDArray[np.float64], users: float | NDArray[np.float64], mean_epsilon: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The radius R >= ``rung`` r that balances a mean's Laplace noise at ``mean_epsilon``
    against the clipping bias of a Pareto tail of index α (:data:`TAIL_INDEX`) with ``users``
    C beyond r: the bias K R^(1-α), K = C r^α / ((α - 1) N̂), and the noise c R,
    c = 2√2 / (N̂ ε_m), add up least in squares at R^α = K √(α - 1) / c (N̂ cancels)."""
    a = TAIL_INDEX
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = users * mean_epsilon / (2.0 * math.sqrt(2.0) * math.sqrt(a - 1.0))
        return np.asarray(np.maximum(rung * scaled ** (1.0 / a), rung))


def _named(names: tuple[str, ...], columns: NDArray[np.bool_]) -> tuple[str, ...]:
    """The names of the ``columns`` marked."""
    return tuple(name for name, c in zip(names, columns, strict=True) if c)


def _measured_sides(
    matrix: NDArray[np.float64],
    where: Location,
    names: tuple[str, ...],
    heavy: NDArray[np.bool_],
    radii: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    first: tuple[float, float, float],
    budget: tuple[ReleasePlan, FinalBudget],
    live: NDArray[np.bool_],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None,
    *,
    users: NDArray[np.float64],
    balance: float,
    far: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> (
    tuple[
        FinalBudget,
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.float64],
        NDArray[np.float64],
        list[LedgerEntry],
    ]
    | None
):
    """The heavy columns' sides, where counting them pays (:func:`_side_clips`): a tail all on
    one side, at the signed counts' noise (their ε :data:`SIDES_SHARE` of the tail share, from
    the means' budget after the second rung's), would give a narrower interval than the
    symmetric clip ``radii[2]``. A decision from the first count (``first``: its upper
    confidence count, the heavy threshold and its ε), the second's anchor (``far``,
    :class:`TailFinding`) and public facts before any draw; None
    where no column passes (no draw, the budget untouched). Else the means' budget left, the
    clips above and below, the upper confidence counts above and below and the ledger entries
    of the signed counts (:func:`_signed_counts`) of the columns that passed."""
    bulk, rung, wide = radii
    reach, threshold, joint = first
    plan, mean_budget = budget
    side_epsilon, after = mean_budget.tail_split(SIDES_SHARE * plan.tail)
    side_total = float(np.sum(side_epsilon))
    # the first count's draw and share, as _tail_radius read them
    first_sd = count_sd(joint)
    count = reach - EDGE_SDS * first_sd
    facts = _SideFacts(
        bulk=bulk,
        rung=rung,
        wide=wide,
        mean_epsilon=after.laplace_equivalent() * balance,
        users=users,
        sampling=where.sd / np.sqrt(np.maximum(users, 1.0)),
        count=count,
        count_sd=first_sd,
        share=_found_share(count, threshold, _measurable(rung, live)),
        far=far,
    )
    # the count's ε shared evenly by the columns it is drawn for (basic composition)
    every = column_epsilon(side_total, 0.0, int(np.sum(heavy)))
    chosen = _side_clips(facts, heavy, np.where(heavy, count, 0.0), count_sd(every, 2.0))[-1]
    if not chosen.any():
        return None
    each = column_epsilon(side_total, 0.0, int(np.sum(chosen)))
    difference = _signed_counts(matrix, where.centre, chosen, rung, each, rng, root)
    upper, lower, above, below, _ = _side_clips(facts, chosen, difference, count_sd(each, 2.0))
    return after, upper, lower, above, below, _sides_entries(_named(names, chosen), each)


@dataclass(frozen=True)
class _SideFacts:
    """What :func:`_side_clips` reads, per column: the bulk's radius, the rung, the symmetric
    clip of :func:`_tail_radius`, the mean's Laplace-equivalent ε after the signed counts'
    share, the users and the plug-in sampling sd; the first count's draw, noise sd and the
    share of the users it found beyond the heavy threshold; and the second count's anchor
    (:class:`TailFinding`). Released numbers and public facts."""

    bulk: NDArray[np.float64]
    rung: NDArray[np.float64]
    wide: NDArray[np.float64]
    mean_epsilon: NDArray[np.float64]
    users: NDArray[np.float64]
    sampling: NDArray[np.float64]
    count: float
    count_sd: float
    share: float
    far: tuple[NDArray[np.float64], NDArray[np.float64]]


def _side_clips(
    facts: _SideFacts, heavy: NDArray[np.bool_], difference: NDArray[np.float64], side_sd: float
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.bool_],
]:
    """The heavy columns' clips on each side, from their signed counts ``difference`` (noise sd
    ``side_sd``; :func:`_signed_counts`). The first count ``C`` counts every user beyond any
    rung once, so a column's users beyond its rung above and below are at most ``(C ± D_j) /
    2``: their upper confidence counts are those plus :data:`EDGE_SDS` sds of their noise, at
    most ``C`` plus its own. The long side (the larger point count) keeps the symmetric clip,
    beyond which the second rung (:func:`_second_rung`) looks for a lump as before, and its
    bias bound through all of ``C`` plus its noise's reach, so that no bound is below the
    symmetric clip's (both sides' bounds take the second count's where it is the lower,
    :meth:`TailFinding.beyond`); the short side's clip balances the mean's noise against the
    Pareto tail through its part of the first count's share (the point counts' split of C),
    between the bulk's radius and the symmetric clip: a long right tail keeps its clip and
    the empty left side stays near the rung, where one symmetric clip put both at the long
    side's. A column keeps its symmetric clip where that gives the narrower 95 % interval,
    ``1.96 √(noise² + sampling²) + bias bound`` (:func:`tail_bias`; the sides' bound is the
    larger of theirs): a tail split by a noisy count gains little width and gives up bound.
    Returns the clips above and below the centre, the upper confidence counts above and below
    and the columns split. Post-processing of released numbers."""
    f = facts
    found = max(f.count, 0.0)
    above = np.clip((found + difference) / 2.0, 0.0, found)
    cap = f.count + EDGE_SDS * f.count_sd
    slack = EDGE_SDS * math.hypot(f.count_sd, side_sd) / 2.0
    clips, reaches = [], []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for part, other in ((above, found - above), (found - above, above)):
            users = np.maximum(f.share * part / max(found, 1.0), 1.0)
            balanced = np.clip(_balanced(f.rung, users, f.mean_epsilon), f.bulk, f.wide)
            # the long side keeps the symmetric clip, beyond which the second rung looks, and
            # the bound through every user the first count found
            short = heavy & (part < other)
            clips.append(np.where(short, np.fmin(balanced, MAX_RADIUS), f.wide))
            reaches.append(np.where(short, np.minimum(part + slack, cap), cap))
        # the mean's Laplace noise sd per unit of the interval's half-width
        unit = 2.0 * math.sqrt(2.0) / (np.maximum(f.users, 1.0) * f.mean_epsilon)

        def interval(half_width: NDArray[np.float64], bound: NDArray[np.float64]) -> Any:
            return _Z95 * np.hypot(unit * half_width, f.sampling) + bound

        whole = np.full(f.wide.shape, cap)
        one = interval(f.wide, _anchored_bias(whole, f.rung, f.wide, f.users, f.far))
        bound = np.fmax(
            _anchored_bias(reaches[0], f.rung, clips[0], f.users, f.far),
            _anchored_bias(reaches[1], f.rung, clips[1], f.users, f.far),
        )
        split = heavy & (interval(clips[0] / 2.0 + clips[1] / 2.0, bound) < one)
    return (
        np.where(split, clips[0], f.wide),
        np.where(split, clips[1], f.wide),
        np.where(split, reaches[0], cap),
        np.where(split, reaches[1], cap),
        split,
    )


def _signed_counts(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    heavy: NDArray[np.bool_],
    rung: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The sides' release (:func:`_side_clips`): per ``heavy`` column the users beyond its
    rung above less those below (0 elsewhere), ``D_j = #{u : x_uj - c_j > r_j} - #{u : x_uj -
    c_j < -r_j}``, each with two-sided geometric noise at ``epsilon`` (each column's ε):
    sensitivity 2, as a replaced user can leave one side and join the other. No statistic: on
    neither side."""
    with np.errstate(over="ignore", invalid="ignore"):
        deviations = (matrix - centre) * (1.0 if root is None else root)
        signed = np.sum(deviations > rung, axis=0) - np.sum(-deviations > rung, axis=0)
    difference = np.zeros(rung.shape)
    difference[heavy] = geometric_counts(signed[heavy], epsilon, 2.0, rng)[0]
    return difference


def _sides_entries(names: tuple[str, ...], epsilon: float) -> list[LedgerEntry]:
    """The signed counts' ledger entries (:func:`_signed_counts`): one lattice Laplace count per
    column counted, sensitivity 2, at ``epsilon`` each."""
    scale = 1.0 / float(geometric_rate(epsilon, 2.0))
    return [LedgerEntry("tail", _SIDES, name, epsilon, 0.0, 0.0, 2.0, scale) for name in names]


def _signed_tail(
    matrix: NDArray[np.float64],
    where: Location,
    names: tuple[str, ...],
    radius: NDArray[np.float64],
    budgets: tuple[NDArray[np.float64], FinalBudget],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> TailFinding:
    """The tail stage about a public centre the mean lies near (the within estimator's
    influence values: ``AssumedTail(..., signed=True)``): the clip cuts both sides' tails and
    the mean moves by their difference. A symmetric tail heavier than the model (the wage
    panel's hours) costs nothing there; a one-sided one (a count outcome's influence, a
    demeaned regressor times a skewed residual) biases by its excess.

    So each live column's users are counted on each side in two bins, beyond the rung
    ``r_j = TAIL_RUNG σ̂_j`` up to the clip ``w_j`` and beyond the clip (standardised as in
    :func:`_tail_radius`; the rung at most the clip), with two-sided geometric noise at the
    column's tail ε, the first of ``budgets``: a user lies in one bin at most, so the four
    counts have sensitivity 2 (L1: a replaced user leaves one bin and joins another); the
    columns' counts compose to the plan's tail share
    (:func:`~dplong.privacy.budget.signed_share`).

    Whatever the tail's kind, a symmetric one leaves the excess ``D = C₊ - C₋`` beyond the rung
    at 0 give or take ``√(C₊ + C₋)`` (each user beyond it on a side by a fair coin); the rung
    is the normal plug-in's, where a count outcome's influence is told apart best (the design
    notes compare it with 2 σ̂, the exponential's rung and the clip). ``|D̂|`` beyond
    :data:`HEAVY_SDS` sds of sampling and noise marks the column heavy on one side, and
    ``|D̂|`` plus :data:`EDGE_SDS` noise sds of a Pareto tail through the rung bound its bias
    (:func:`tail_bias`): the two sides' tails taken of one shape, their masses telling them
    apart. The clip stays: the within estimator's influence values are ``Â⁻¹ (b_u - A_u
    β₀)``, and where a regressor's within spread is heavy their one-sided tail is the pilot's
    error times the heavy ``A_u``, whose mean the released design ``Â`` (its tails checked by
    no count) understates; a wider clip of them multiplies the pilot's error by ``Â⁻¹ Ā``
    instead of cancelling it (measured in docs/design/engine.md, "A tail counted on each
    side").

    Counts see how many users lie out on each side, not how far: a tail as heavy on both sides
    in count and far heavier on one in reach (RAND HIE's spending) leaves ``D`` near 0. Where
    the clip itself cuts more than √n users (the released count beyond it, :data:`HEAVY_SDS`
    noise sds down), the estimate rests on the balance of their tails, which nothing measures:
    the column ``clips_many`` (:func:`clips_many_notes`). Elsewhere ``|D̂|`` beyond
    :data:`LEANING_SDS` sds and short of heavy marks the column ``leaning``: warned, not bounded
    (:func:`leaning_notes`). The threshold returned is the
    largest column's, in users. A function of the data through the counts only."""
    tail_epsilon, mean_budget = budgets
    d = radius.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        rung = np.fmin(np.full(d, TAIL_RUNG) * where.sd, radius)
        deviations = (matrix - where.centre) * (1.0 if root is None else root)
        measurable = np.isfinite(rung) & (rung > 0) & ~where.doomed & (tail_epsilon > 0.0)
        # NaN: no statistic, in no bin
        outer = [deviations > radius, deviations < -radius]
        inner = [(deviations > rung) & ~outer[0], (deviations < -rung) & ~outer[1]]
        bins = np.stack([np.sum(b, axis=0) for b in (*inner, *outer)])
    rate = np.asarray(geometric_rate(np.where(measurable, tail_epsilon, 1.0), 2.0))
    noisy = (bins + two_sided_geometric(rng, rate, (4, d))).astype(float)
    draw = two_sided_geometric_variance(rate)
    noise_sd = np.sqrt(4.0 * draw)  # of D, a sum of four draws
    signed_excess = noisy[0] + noisy[2] - noisy[1] - noisy[3]  # D̂ = C₊ - C₋
    excess = np.abs(signed_excess)
    spread = np.sqrt(np.maximum(np.sum(noisy, axis=0), 0.0) + noise_sd**2)
    heavy = (excess > HEAVY_SDS * spread) & measurable
    clipped = noisy[2] + noisy[3]
    many = (
        (clipped - HEAVY_SDS * np.sqrt(2.0 * draw) > math.sqrt(matrix.shape[0]))
        & measurable
        & ~heavy
    )
    leaning = (excess > LEANING_SDS * spread) & measurable & ~heavy & ~many
    entries = tuple(
        LedgerEntry("tail", _SIGNED, name, float(e), 0.0, 0.0, 2.0, 1.0 / float(a))
        for name, e, a, m in zip(names, tail_epsilon, rate, measurable, strict=True)
        if m
    )
    return TailFinding(
        radius,
        np.asarray(heavy),
        # a column not counted (its draw at a stand-in rate, uncharged) reaches nothing
        np.where(measurable, excess + EDGE_SDS * noise_sd, np.nan),
        rung,
        entries,
        mean_budget,
        float(np.max(np.where(measurable, HEAVY_SDS * spread, 0.0), initial=0.0)),
        np.zeros(d, dtype=bool),
        np.asarray(many),
        np.where(measurable, clipped, np.nan),
        np.zeros(d, dtype=bool),
        leaning=np.asarray(leaning),
        excess=np.where(measurable, signed_excess, np.nan),
    )


def clips_many_notes(
    names: tuple[str, ...], many: NDArray[np.bool_], clipped: NDArray[np.float64], n: int
) -> tuple[str, ...]:
    """The reliability warning of the columns whose clip about a public centre cuts many
    users (:func:`_signed_tail`: its released count beyond the clip above √n by its noise):
    the estimate rests on the balance of their tails, which no released number measures.
    Released numbers and public facts only.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import clips_many_notes
    >>> (note,) = clips_many_notes(("psi",), np.array([True]), np.array([825.0]), 5912)
    >>> note[:76]
    "['psi']: the clip cuts many users (about 825 of the 5912, 14%, released coun"
    """
    columns = np.flatnonzero(many)
    if not columns.size:
        return ()
    counts = listed([f"{max(clipped[j], 0.0):.0f}" for j in columns])
    share = listed([f"{max(clipped[j], 0.0) / n:.0%}" for j in columns])
    return (
        f"{[names[j] for j in columns]}: the clip cuts many users (about {counts} of the {n}, "
        f"{share}, released counts): the estimate rests on the balance of their tails, "
        "which counts of users on each side cannot check (how far out they lie is not "
        "measured), and the interval can miss; model a transform (np.log1p) of a skewed "
        "outcome.",
    )


def leaning_notes(
    names: tuple[str, ...], leaning: NDArray[np.bool_], excess: NDArray[np.float64]
) -> tuple[str, ...]:
    """The reliability warning of the columns counted on each side whose released excess
    leans to one side (:data:`LEANING_SDS`) short of marking them heavy: a one-sided tail the
    clip cuts would bias the mean beyond the bound the interval allows, and the counts cannot
    tell it from noise at this n ε. Their share of ε shrinks as ε grows, sized to resolve an
    excess of about √n users (:func:`~dplong.privacy.budget.signed_share`), and the excess's
    own sampling sd does not shrink with ε: more users, whose one-sided excess grows like n,
    resolve it (a count outcome's influence at ε = 4 and 8: marked heavy in 11 and 10 of 30 fits
    of 2,000 persons, 22 of 30 of 3,000). Released numbers and public facts only.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import leaning_notes
    >>> (note,) = leaning_notes(("psi",), np.array([True]), np.array([-64.0]))
    >>> note[:86]
    "['psi']: about 64 more users beyond 3.5 sds below the centre than above (released coun"
    >>> (note,) = leaning_notes(("a", "b"), np.array([True, True]), np.array([-64.0, 70.0]))
    >>> note[:80]
    "['a', 'b']: about 64 and 70 more users beyond 3.5 sds on one side of the centre "
    """
    columns = np.flatnonzero(leaning)
    if not columns.size:
        return ()
    counts = listed([f"{abs(excess[j]):.0f}" for j in columns])
    sides = {"above" if excess[j] > 0 else "below" for j in columns}
    phrases = {"above": "above the centre than below", "below": "below the centre than above"}
    where = (
        phrases[sides.pop()] if len(sides) == 1 else "on one side of the centre than on the other"
    )
    return (
        f"{[names[j] for j in columns]}: about {counts} more users beyond {TAIL_RUNG:g} sds "
        f"{where} (released counts), too few to tell a one-sided "
        "tail from their noise at this n and epsilon: such a tail, clipped, biases the "
        "estimate beyond what the interval allows, and the interval can miss; model a "
        "transform (np.log1p) of a skewed outcome (more users, not a larger epsilon, let the "
        "counts resolve it).",
    )


def rung_sds(kinds: Tails) -> NDArray[np.float64]:
    """The tail count's rung of each column, in its sds: :data:`TAIL_RUNG` for the normal
    plug-ins, and for an assumed kind (exponential, chi-square) the point beyond which that
    kind puts as few users as normal tails put beyond ``TAIL_RUNG`` (each with σ̂'s
    :data:`TAIL_SLACK`): 6.4 sds for the exponential, 7.4 for the chi-square. At 3.5 sds an
    exponential kind expects 2 % of the users there, and a count held against 1.5 times that
    saw no lump of 2-3 % of the users far out (`PoissonMean`, 2 % of 5,000 users at rate 300
    among rate 3: 20 of 20 releases missed silently; none at its own rung, 12 covered,
    docs/accuracy.md); at the kind's own rung the expectation is small beside the count's
    noise, as the normal's is. Public facts only.

    Examples
    --------
    >>> from dplong.privacy.tails import rung_sds
    >>> rung_sds(("gaussian", "exponential", "chi-square")).round(2).tolist()
    [3.5, 6.36, 7.44]
    """
    return np.array([_kind_rung(kind)[0] for kind in np.atleast_1d(np.asarray(kinds)).tolist()])


@functools.cache
def _kind_rung(kind: Tail) -> tuple[float, float]:
    """A tail kind's rung in its sds (:func:`rung_sds`) and the share of its users its model
    puts beyond :data:`TAIL_SLACK` times that: public constants per kind, computed once (the
    tail stage reads them on every release)."""
    if kind in SYMMETRIC:
        rung = TAIL_RUNG  # exactly the rung, not its round trip
    else:
        normal = float(beyond_share("gaussian", TAIL_SLACK * TAIL_RUNG)[0])
        rung = float(beyond_point(kind, normal)[0]) / TAIL_SLACK
    return rung, float(beyond_share(kind, TAIL_SLACK * rung)[0])


def _second_rung(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    heavy: NDArray[np.bool_],
    radii: tuple[NDArray[np.float64], NDArray[np.float64]],
    anchor: tuple[NDArray[np.float64], NDArray[np.float64]],
    epsilon: float,
    mean_epsilon: NDArray[np.float64],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None = None,
) -> tuple[
    NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], bool, NDArray[np.float64]
]:
    """The tail stage's second rung, where the first found heavy columns and widened a clip: one
    private count ``C₂`` of the users beyond the widened radius ``R_j`` of a heavy column
    (sensitivity 1, two-sided geometric noise at ``epsilon``), against what the Pareto tails
    through the first rung ``(r_j, C)`` put there, at most ``Σ_j C (r_j / R_j)^α`` (``anchor``
    = (r, C + 3 sd)).

    A tail that decays from the first rung leaves few users beyond R, and the first rung's
    radius and bias bound stand. A tail that does not — a lump of users far beyond the bulk,
    as where 90 % of the users sit near 0 and the others have a lognormal tail: a single rung
    near the bulk sees only that they are beyond it — leaves more than the Pareto tails allow,
    by :data:`LUMP_SDS` noise sds: the Pareto tails are re-anchored at ``(R_j, C₂)`` and the
    radius balanced again from there (:func:`_tail_radius`; at least R and at most
    :data:`TAIL_REACH` times the bulk's radius, the first of ``radii``; the second are the
    widened radii R). Returns the radii, per column the anchors ``(C + 3 sd, r)`` of the bias
    bounds (:func:`tail_bias`), whether it found a lump, and the upper confidence count
    ``C₂ + 3 sd`` beyond R. That count anchors a Pareto tail of its own at R, whose bias bound
    for a clip at R or beyond (:meth:`TailFinding.beyond`) is the lower where the tail falls
    off faster than the first rung's Pareto tail says: the t-like tails of per-user
    regression slopes put hundreds of users beyond the first rung and next to none beyond
    the second. A function of the data through the count only."""
    bulk, wide = radii
    rung, reach = anchor
    count, sd = _count_beyond(matrix, centre, heavy, wide, epsilon, rng, root)
    lump = _exceeds(count, sd, heavy, (rung, reach), wide)
    upper = np.full(wide.shape, count + EDGE_SDS * sd)
    if not lump:
        return wide, reach, rung, False, upper
    final = _rebalanced(wide, heavy, count / max(int(np.sum(heavy)), 1), mean_epsilon, bulk)
    return final, np.where(heavy, upper, reach), np.where(heavy, wide, rung), True, upper


def _rebalanced(
    wide: NDArray[np.float64],
    columns: NDArray[np.bool_],
    users: float | NDArray[np.float64],
    mean_epsilon: NDArray[np.float64],
    bulk: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """The ``columns``' radii balanced again from a lump's anchor, ``users`` beyond ``wide`` in
    each (at least one; :func:`_balanced`): at least ``wide`` and at most :data:`TAIL_REACH`
    times ``bulk`` (default: ``wide`` itself)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        limit = TAIL_REACH * (wide if bulk is None else bulk)
        balanced = np.clip(_balanced(wide, np.maximum(users, 1.0), mean_epsilon), wide, limit)
        return np.where(columns, np.fmin(balanced, MAX_RADIUS), wide)


def _lump_anchors(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    heavy: NDArray[np.bool_],
    tail: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    budget: tuple[ReleasePlan, FinalBudget],
    rng: np.random.Generator,
    root: NDArray[np.float64] | None,
    *,
    names: tuple[str, ...],
    balance: float,
) -> tuple[
    NDArray[np.float64],
    NDArray[np.float64],
    NDArray[np.float64],
    tuple[NDArray[np.float64], NDArray[np.float64]] | None,
    FinalBudget,
    list[LedgerEntry],
]:
    """Counts at a lump's clips, each column's own (:func:`_counts_beyond_each`,
    :data:`LUMP_ANCHOR` shares of the means' budget a round, at most :data:`LUMP_COUNTS`
    rounds), where the second rung re-anchored the ``heavy`` columns' Pareto tails at one count
    of them all: a lump much wider than that rung (a near-zero spike beside a broad component,
    as the user-level curves of a rare 0/1 outcome are) holds several times the tail's mass
    beyond the clip, and where the columns are several the joint count cannot say whose users
    it found. Each round tests each column's tail ``(reach, rung)`` at its clip ``wide`` (the
    three of ``tail``) as the second rung tested the first's: where the column's lower
    confidence count (less :data:`LUMP_SDS` sds) exceeds what its tail puts there, its tail is
    anchored at the clip on its upper confidence count (:data:`EDGE_SDS` sds up, as the second
    rung anchors its own) and its clip balanced again from the lower one, up to
    :data:`TAIL_REACH` times further (the users counted beyond vouch for the width), and the
    next round tests the new clip; where it does not, its clip stays and its upper confidence
    count anchors a Pareto tail of its own there (``far``: the lower of the two anchors' bounds
    stands, as where the second rung found no lump). Returns the tails' anchors ``(reach,
    rung)``, the clips, ``far`` (None where no column's lump ended) and the means' budget left
    and the counts' entries. A function of the data through the counts only."""
    reach, rung, wide = tail
    plan, mean_budget = budget
    far_reach, far_rung = np.zeros_like(wide), np.full(wide.shape, np.inf)
    entries, active = [], heavy
    for _ in range(LUMP_COUNTS):
        if not active.any():
            break
        anchor_epsilon, mean_budget = mean_budget.tail_split(LUMP_ANCHOR * plan.tail)
        total = float(np.sum(anchor_epsilon))
        counted, sd, entry = _counts_beyond_each(
            matrix, centre, active, wide, total, rng, root, _named(names, active)
        )
        entries.append(entry)
        seen = np.maximum(counted - LUMP_SDS * sd, 0.0)
        predicted = np.minimum(_pareto_beyond(reach, rung, wide), reach)
        past = active & (seen > 0.0) & (seen > predicted)
        ended = active & ~past
        upper = counted + EDGE_SDS * sd  # as the second rung anchors its tail
        far_reach = np.where(ended, upper, far_reach)
        far_rung = np.where(ended, wide, far_rung)
        reach, rung = np.where(past, upper, reach), np.where(past, wide, rung)
        wide = _rebalanced(wide, past, seen, mean_budget.laplace_equivalent() * balance)
        active = past
    far = (far_reach, far_rung) if np.isfinite(far_rung).any() else None
    return reach, rung, wide, far, mean_budget, entries


def _exceeds(
    count: float,
    sd: float,
    heavy: NDArray[np.bool_],
    anchor: tuple[NDArray[np.float64], NDArray[np.float64]],
    radius: NDArray[np.float64],
) -> bool:
    """Whether a noisy ``count`` (noise ``sd``) of the users beyond ``radius`` exceeds what the
    Pareto tails through ``anchor`` = (rung, upper count) put there, at most ``Σ_j C (r_j /
    R_j)^α`` and at most C, by :data:`LUMP_SDS` sds: a lump (post-processing)."""
    rung, reach = anchor
    predicted = float(np.sum(np.where(heavy, _pareto_beyond(reach, rung, radius), 0.0)))
    return bool(count > min(predicted, float(np.max(reach))) + LUMP_SDS * sd)


def _pareto_beyond(
    reach: NDArray[np.float64], rung: NDArray[np.float64], radius: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The users a Pareto tail of index α (:data:`TAIL_INDEX`) through ``(rung, reach)``, C
    users beyond r, puts beyond ``radius`` R: ``C (r / R)^α``."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.asarray(reach * (rung / radius) ** TAIL_INDEX)


def _placeable(
    heavy: NDArray[np.bool_], found: NDArray[np.float64], plan: ReleasePlan, budget: FinalBudget
) -> bool:
    """Whether several ``heavy`` columns' own counts at a lump's clips
    (:func:`_lump_anchors`, their first round's ε from the means' ``budget``) can place the
    users the second rung ``found`` beyond them all together: their lower confidence count is
    :data:`LUMP_SDS` noise sds down and their bound's :data:`EDGE_SDS` up, and those together
    are below that count (public facts and released numbers)."""
    k = int(np.sum(heavy))
    if k < 2:
        return False
    epsilon = float(np.sum(budget.tail_split(LUMP_ANCHOR * plan.tail)[0]))
    return (LUMP_SDS + EDGE_SDS) * count_sd(epsilon, float(k)) < float(np.max(found[heavy]))


def _counts_beyond_each(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    columns: NDArray[np.bool_],
    radius: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
    root: NDArray[np.float64] | None,
    names: tuple[str, ...],
) -> tuple[NDArray[np.float64], float, LedgerEntry]:
    """Private counts of the users beyond ``radius`` about ``centre`` in each of the ``columns``
    (NaN elsewhere): replacing one user moves each by at most 1, so together by at most the
    number k of the columns (L1 sensitivity k; two-sided geometric noise at ``epsilon`` for
    the k together), their noise sd and the ledger entry (the columns' ``names``)."""
    k = int(np.sum(columns))
    exact = _beyond(matrix, centre, columns, radius, root)[:, columns].sum(axis=0)
    counts = np.full(radius.shape, np.nan)
    counts[columns], sd, rate = geometric_counts(exact, epsilon, float(k), rng)
    entry = LedgerEntry("tail", _EACH, ", ".join(names), epsilon, 0.0, 0.0, float(k), 1.0 / rate)
    return counts, sd, entry


def _beyond(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    columns: NDArray[np.bool_],
    radius: NDArray[np.float64],
    root: NDArray[np.float64] | None,
) -> NDArray[np.bool_]:
    """Whether each user lies beyond ``radius`` about ``centre`` in each of the ``columns``
    (``root``: the precision weights' standardisation, as in :func:`_tail_radius`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        deviations = np.abs(matrix - centre) * (1.0 if root is None else root)
        return np.asarray(deviations > np.where(columns, radius, np.inf))


def _count_beyond(
    matrix: NDArray[np.float64],
    centre: NDArray[np.float64],
    heavy: NDArray[np.bool_],
    radius: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
    root: NDArray[np.float64] | None,
) -> tuple[float, float]:
    """One private count of the users beyond ``radius`` about ``centre`` in a ``heavy`` column
    (sensitivity 1: a user is counted once; two-sided geometric noise at ``epsilon``), and its
    noise sd."""
    beyond = np.any(_beyond(matrix, centre, heavy, radius, root), axis=1)
    count, sd, _ = geometric_counts(np.array([np.sum(beyond)]), epsilon, 1.0, rng)
    return float(count[0]), sd


def tail_bias(
    reach_users: NDArray[np.float64],
    tail_radius: NDArray[np.float64],
    radius: NDArray[np.float64],
    users: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The clipping bias beyond ``radius`` R of a Pareto tail of index α (:data:`TAIL_INDEX`)
    with ``reach_users`` C users beyond ``tail_radius`` r: ``C r^α / ((α - 1) R^(α-1) N̂)``
    (:func:`_tail_radius`)."""
    a = TAIL_INDEX
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        excess = reach_users * tail_radius * (tail_radius / radius) ** (a - 1.0) / (a - 1.0)
        return np.asarray(excess / np.maximum(users, 1.0))


def _anchored_bias(
    reach: NDArray[np.float64],
    rung: NDArray[np.float64],
    clip: NDArray[np.float64],
    users: NDArray[np.float64],
    far: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
) -> NDArray[np.float64]:
    """The clipping bias bound beyond ``clip`` of the Pareto tail through ``(rung, reach)``
    (:func:`tail_bias`), or through the second rung's anchor ``far`` (its upper confidence
    count and rung, :func:`_second_rung`) where that is the lower and the clip is at or beyond
    the second rung: no user between the clip and the second rung goes uncounted there."""
    first = tail_bias(reach, rung, clip, users)
    if far is None:
        return first
    far_reach, far_rung = far
    # a window rebuilt from a support's end (projection.support_window) puts the upper clip
    # at the second rung up to rounding
    outside = clip >= far_rung * (1.0 - 1e-12)
    second = tail_bias(far_reach, far_rung, clip, users)
    return np.where(outside, np.minimum(first, second), first)


def _tail_entry(names: tuple[str, ...], epsilon: float) -> LedgerEntry:
    """The tail stage's one ledger entry: a lattice Laplace count (sensitivity 1) over the
    columns."""
    rate = float(geometric_rate(epsilon, 1.0))
    return LedgerEntry("tail", _TAIL, ", ".join(names), epsilon, 0.0, 0.0, 1.0, 1.0 / rate)


def heavy_notes(
    names: tuple[str, ...],
    heavy: NDArray[np.bool_],
    bias: NDArray[np.float64],
    radius: NDArray[np.float64],
    centre: NDArray[np.float64],
    *,
    signed: bool = False,
    remedy: str = stated_remedy({"tail"}),
) -> tuple[str, ...]:
    """The reliability warning of the heavy-tailed columns (one, as their tail count is one):
    how far out each was clipped, how much of its mean the interval allows for beyond the
    clip, and the ``remedy`` a model offers ("": none; a stated scale is none, as it claims
    the tail the count found heavier). ``signed``: found by the counts on each side about a
    public centre (:func:`_signed_tail`), one side's tail heavier than the other's.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import heavy_notes
    >>> (note,) = heavy_notes(("psi",), np.array([True]), np.array([0.1]), np.array([5.0]),
    ...                       np.zeros(1), signed=True)
    >>> note[:75]
    "['psi']: a one-sided heavy tail (found privately: more users beyond 3.5 sds"
    """
    endless = heavy & np.isinf(bias)
    if endless.any():  # squares (AssumedTail.squares): no bound, said apart
        return _endless_note(names, endless, radius, centre) + heavy_notes(
            names, heavy & ~endless, bias, radius, centre, signed=signed, remedy=remedy
        )
    columns = np.flatnonzero(heavy)
    if not columns.size:
        return ()
    one = columns.size == 1
    ranges = _clip_ranges(columns, radius, centre)
    allowances = [f"{bias[j]:.3g}" for j in columns]
    if signed:  # a within fit's influence: a skewed outcome's, which a transform evens out
        which = str([names[j] for j in columns])
        found = (
            f"{'a one-sided heavy tail' if one else 'one-sided heavy tails'} (found privately: "
            f"more users beyond {TAIL_RUNG:g} sds on one side than the other)"
        )
        remedy = "model a transform (np.log1p) of a skewed outcome"
    else:
        which = listed([repr(names[j]) for j in columns])
        found = f"heavy {'tail' if one else 'tails'} (found privately)"
    return (
        f"{which}: {found} clipped outside {listed(ranges)}; the"
        f" {'interval allows' if one else 'intervals allow'} {listed(allowances)} for"
        f" {'it' if one else 'them'} (Pareto index {TAIL_INDEX:g}; a heavier tail could hide"
        f" more{f': {remedy}' if remedy else ''}).",
    )


def _clip_ranges(
    columns: NDArray[np.intp], radius: NDArray[np.float64], centre: NDArray[np.float64]
) -> list[str]:
    """The clips of ``columns``, ``[c - w, c + w]``, as the warnings print them."""
    return [f"[{centre[j] - radius[j]:.4g}, {centre[j] + radius[j]:.4g}]" for j in columns]


def _endless_note(
    names: tuple[str, ...],
    endless: NDArray[np.bool_],
    radius: NDArray[np.float64],
    centre: NDArray[np.float64],
) -> tuple[str, ...]:
    """The warning of heavy columns of squares (:class:`~dplong.privacy.radius.AssumedTail`
    ``squares``), whose clipped mass nothing bounds: their intervals have no upper end."""
    columns = np.flatnonzero(endless)
    one = columns.size == 1
    ranges = _clip_ranges(columns, radius, centre)
    return (
        f"{listed([repr(names[j]) for j in columns])}: heavy {'tail' if one else 'tails'} "
        f"(found privately) clipped outside {listed(ranges)}; "
        f"{'its interval has' if one else 'their intervals have'} no upper end (nothing "
        f"bounds what the clip cut from {'a mean' if one else 'means'} of squares): model "
        "np.log1p of a skewed response.",
    )


def skewed_columns(
    offset: NDArray[np.float64],
    noise_sd: NDArray[np.float64],
    unchecked: NDArray[np.bool_],
    share: float | NDArray[np.float64] = SKEW_SHARE,
) -> NDArray[np.bool_]:
    """The ``unchecked`` columns (released, their bias bound resting on a tail model no count
    checked, on the near-normal plug-in where the tail count, which marks heavy tails and not
    skew, found none, or on the exponential model a moderate count took, scaled by the bulk's
    spread) whose released mean lies ``offset`` plug-in sds from the median,
    beyond ``share`` (one for all or per column: :data:`SKEW_SHARE`;
    :data:`UNCHECKED_SKEW_SHARE` where no count checked the tail) and :data:`SKEW_NOISE_SDS`
    sds ``noise_sd`` of its noise (both in plug-in sds): a skewed column, whose long side the
    clip cuts by more than the bound can see (a lognormal (σ = 1) mean of 500 users at ε = 1
    was held by its interval in 2 % of releases). Released numbers only: the warning depends
    on nothing else.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import UNCHECKED_SKEW_SHARE, skewed_columns
    >>> skewed_columns(np.array([0.33, 0.05, 0.5]), np.full(3, 0.04),
    ...                np.array([True, True, False])).tolist()
    [True, False, False]
    >>> skewed_columns(np.array([0.2]), np.full(1, 0.02), np.array([True]),
    ...                share=UNCHECKED_SKEW_SHARE).tolist()
    [True]
    """
    with np.errstate(invalid="ignore"):  # a withheld column's NaN: not shown, not marked
        beyond = np.abs(offset) > share + SKEW_NOISE_SDS * noise_sd
    return np.asarray(unchecked & beyond)


def skewed_notes(
    names: tuple[str, ...],
    skewed: NDArray[np.bool_],
    offset: NDArray[np.float64],
    bias: NDArray[np.float64],
    *,
    offers: Collection[str] = OFFERS,
    model: str = "near-normal",
) -> tuple[str, ...]:
    """The reliability warning of the :func:`skewed_columns` (``offset``: their released mean
    less their median, in plug-in sds; ``bias``: the bias bounds their intervals allow, the
    exponential model's about a centre that far off the mean), naming the remedies the model
    ``offers`` (:data:`~dplong.privacy.radius.Offer`; a declared support's end left out
    once given) and the tail ``model`` the clip assumed (an assumed kind's name, or the bulk's
    near-normal plug-in).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import skewed_notes
    >>> (note,) = skewed_notes(("spend",), np.array([True]), np.array([0.41]), np.array([2.5]),
    ...                        offers={"lower", "tail", "scale"})
    >>> note[:58]
    "'spend': skewed (its mean 0.41 sds above its median) where"
    >>> "lower=0" in note, "lower=0" in skewed_notes(("spend",), np.array([True]),
    ...     np.array([0.41]), np.array([2.5]), offers={"tail", "scale"})[0]
    (True, False)
    >>> "assumed exponential tails" in skewed_notes(("visits",), np.array([True]),
    ...     np.array([0.49]), np.array([0.08]), model="exponential")[0]
    True
    """
    columns = np.flatnonzero(skewed)
    if not columns.size:
        return ()
    one = columns.size == 1
    where = listed(
        [f"{abs(offset[j]):.2g} sds {'above' if offset[j] > 0 else 'below'}" for j in columns]
    )
    allowances = listed([f"{bias[j]:.3g}" for j in columns])
    return (
        f"{listed([repr(names[j]) for j in columns])}: skewed ("
        f"{'its mean' if one else 'their means'} {where} {'its' if one else 'their'} "
        f"median{'' if one else 's'}) where the clip assumed {model} tails, and no count "
        f"found {'its tail' if one else 'their tails'} heavy: the "
        f"{'interval allows' if one else 'intervals allow'} {allowances} for the clipped side "
        "(an exponential tail), and a heavier one can hide more. "
        + _sentence(
            listed(
                [
                    *filter(None, [stated_remedy(offers)]),
                    "model a transform (np.log1p)",
                    "raise epsilon",
                ],
                "or",
            )
        )
        + ".",
    )


def blind_columns(
    threshold: float, users: NDArray[np.float64], shown: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """The ``shown`` columns (released, not found heavy) whose tail count was blind: its
    ``threshold`` (the users beyond the rung that mark the columns heavy) above
    :data:`BLIND_SHARE` of the column's ``users`` (the private count of those with a
    statistic, or :func:`tail_users`), so that a tail putting fewer of them there went unseen
    and the bias bound assumes the bulk's tail model beyond the clip. Per column: one count
    serves them all, and a column with fewer users (a regressor few vary, one most users are
    0 in) needs a tail as many times heavier to move it. A function of public facts and
    released numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import blind_columns
    >>> blind_columns(27.0, np.array([150.0, 148.0]), np.array([True, False])).tolist()
    [True, False]
    >>> blind_columns(27.0, np.array([1000.0, 200.0]), np.array([True, True])).tolist()
    [False, True]
    """
    return np.asarray(shown & (threshold > BLIND_SHARE * users))


def unchecked_warnings(
    names: tuple[str, ...],
    unchecked: NDArray[np.bool_],
    off_zero: NDArray[np.bool_],
    *,
    why: Unchecked = "blind",
    remedy: str | None = None,
    target: str = "the mean",
    model: str = "near-normal",
) -> tuple[str, ...]:
    """The reliability warning of the released ``unchecked`` columns, whose estimated scale's
    bias bound rests on the bulk's tail model and whose tail no count checked, and ``why``
    (:data:`Unchecked`): the count was blind there (:func:`blind_columns`), this n ε affords
    none, or the paper's pipeline runs none (``"paper"``: no ε would buy one, so the remedy
    is the scale alone). A warning, not an
    assumption line: on skewed per-user values such a clip cuts the long side by many times
    the bound, and the interval misses in most releases, where the released mean lies too
    close to its median for :func:`skewed_columns` to tell (docs/accuracy.md). The
    ``off_zero`` columns, most of whose users are 0, are judged among the users off 0
    (:func:`tail_users`): a tail there is most of the mean. ``remedy`` and ``target``: what a
    model offers instead of a stated tail or scale, and what its interval is of; ``model``:
    the tail the clip assumed (an assumed kind's name, or the bulk's near-normal plug-in).
    Public facts and released numbers only.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import unchecked_warnings
    >>> (note,) = unchecked_warnings(("spend", "visits"), np.array([True, False]),
    ...                              np.array([True, False]))
    >>> note[:62]
    "['spend']: most users are 0, and the tail count could not tell"
    >>> (note,) = unchecked_warnings(("a", "b"), np.array([True, True]),
    ...                              np.zeros(2, dtype=bool), why="unaffordable")
    >>> note[:82]
    "['a', 'b']: no count checked their tails (this n and epsilon afford no tail count)"
    """
    cure = "" if why == "paper" else ", or raise epsilon"
    remedy = f"{remedy or _UNCHECKED[why][1]}{cure}."
    notes = []
    off = unchecked & off_zero
    if off.any():
        reasons = {
            "blind": f"the tail count could not tell {BLIND_SHARE:.0%} of the others beyond "
            f"{TAIL_RUNG:g} sds from none",
            "coarse": "the tail count of the others this n and epsilon afford only with the "
            "declared support marks the heaviest tails alone",
        }
        reason = reasons.get(
            why, "no count of the others' tail is affordable at this n and epsilon"
        )
        notes.append(
            f"{[names[j] for j in np.flatnonzero(off)]}: most users are 0, and {reason}: a "
            "heavier tail among them is clipped beyond the bias bound, and the interval can "
            f"miss {target}; {remedy}"
        )
    rest = unchecked & ~off_zero
    if rest.any():
        which = [names[j] for j in np.flatnonzero(rest)]
        one = len(which) == 1
        notes.append(
            f"{which}: no count checked {'its tail' if one else 'their tails'} "
            f"({_UNCHECKED[why][0]}): a {'skewed or ' if model == 'near-normal' else ''}"
            f"heavier tail than the clip's {model} model is clipped beyond the bias bound, and "
            f"the interval can miss {target}; {remedy}"
        )
    return tuple(notes)


def moderate_assumptions(names: tuple[str, ...], moderate: NDArray[np.bool_]) -> tuple[str, ...]:
    """The assumption line of the ``moderate`` columns (:class:`TailFinding`): the tail count
    found more users beyond its rung than the normal plug-in puts there, too few to mark them
    heavy, and their bias bound took the exponential tail model. Released numbers only.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import moderate_assumptions
    >>> (line,) = moderate_assumptions(("a", "b"), np.array([True, False]))
    >>> line[:56]
    "Bias bound of ['a']: an exponential tail beyond the clip"
    """
    if not moderate.any():
        return ()
    which = [names[j] for j in np.flatnonzero(moderate)]
    return (
        f"Bias bound of {which}: an exponential tail beyond the clip (the tail count found more "
        f"users beyond {TAIL_RUNG:g} sds than normal tails put there, too few to call "
        f"{'it' if len(which) == 1 else 'them'} heavy).",
    )


def exceeded_assumptions(
    names: tuple[str, ...], exceeded: NDArray[np.bool_], kinds: Tails
) -> tuple[str, ...]:
    """The assumption line of the ``exceeded`` columns (:class:`TailFinding`): the tail count
    found more users beyond the rung than the tail ``kinds`` the model assumes put there, too
    few to call them heavy, and their bias bound took a Pareto tail through that count.
    Released numbers and public facts only.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import exceeded_assumptions
    >>> (line,) = exceeded_assumptions(("a", "b"), np.array([False, True]),
    ...                                ("chi-square", "exponential"))
    >>> line[:71]
    "Bias bound of ['b']: a Pareto tail through the users the tail count fou"
    """
    if not exceeded.any():
        return ()
    columns = np.flatnonzero(exceeded)
    which = [names[j] for j in columns]
    kind = np.broadcast_to(np.asarray(kinds), exceeded.shape)
    assumed = "/".join(dict.fromkeys(str(kind[j]) for j in columns))
    one = len(which) == 1
    return (
        f"Bias bound of {which}: a Pareto tail through the users the tail count found beyond "
        f"the rung (more than the assumed {assumed} {'tail puts' if one else 'tails put'} "
        f"there, too few to call {'it' if one else 'them'} heavy).",
    )


def lump_assumptions(
    names: tuple[str, ...],
    checked: NDArray[np.bool_],
    threshold: float,
    users: NDArray[np.float64],
    *,
    signed: bool = False,
    remedy: str = stated_remedy({"tail"}),
) -> tuple[str, ...]:
    """The assumption line of the ``checked`` columns, whose tail count ran, was not blind
    (:func:`blind_columns`) and marked them neither heavy nor moderate: its ``threshold``
    (users beyond the rungs, one count for every column) is about the smallest group far out
    that it sees, so a smaller one is clipped unseen and its pull is in no interval (1 % of
    10,000 users at a thousand sds, ε = 4, below a threshold of about 110: released at 0.04
    against a mean of 8.9; docs/accuracy.md). The share is of the fewest ``users`` of those
    columns. ``signed``: the counts on each side about a public centre (:func:`_signed_tail`),
    whose threshold is the smallest excess on one side they see. Released numbers and public
    facts only. ``remedy``: what the model offers to bound such a group ("": nothing).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.tails import lump_assumptions
    >>> (line,) = lump_assumptions(("a", "b"), np.array([True, False]), 96.2,
    ...                            np.array([10000.0, 9000.0]))
    >>> line[:87]
    "Tail count of ['a']: a group of fewer than about 96 users (1.0%) far beyond the bulk is"
    >>> lump_assumptions(("a",), np.array([True]), 61.7, np.array([2000.0]), signed=True)[0][:80]
    "Tail counts of ['a']: more users beyond 3.5 sds on one side than the other by fe"
    """
    if not checked.any():
        return ()
    which = [names[j] for j in np.flatnonzero(checked)]
    share = threshold / max(float(np.min(users[checked])), 1.0)
    if signed:
        return (
            f"Tail counts of {which}: more users beyond {TAIL_RUNG:g} sds on one side than the "
            f"other by fewer than about {threshold:.0f} ({share:.1%}) is below their threshold: "
            "such a skew is clipped unseen, and its pull is in no interval.",
        )
    return (
        f"Tail count of {which}: a group of fewer than about {threshold:.0f} users "
        f"({share:.1%}) far beyond the bulk is below its threshold: clipped unseen, its pull "
        "is in no interval"
        + (f"; {remedy} where a small group may lie far out." if remedy else "."),
    )
