"""The local model's default: split users, not budgets.

In the local model every user privatises their own report. Asking each user several questions
splits their ε; asking *different users* different questions does not: disjoint groups compose
in parallel, so every report here is ε-LDP with the user's whole ε and the release is ε-LDP.
For each column of statistics (users are first partitioned over the columns, at random and
independently of the data) a group of users answers one of four questions:

1. **locate** (group A, ~ :data:`LOCATE_SHARE` of the column's users): the one-hot indicator of
   their bin among K (odd) equal bins over the public range ``[-B, B]`` (bins of width ~σ
   when the scale is stated, else 2B/33), by randomized response (Alg 6-7). The debiased histogram
   gives the midpoint m̂ (the mode's centre, Alg 9) and, unless the scale is stated, a spread
   σ̂ fitted to the bins around it (:func:`_fit_spread`); the radius w is
   :func:`~dplong.privacy.radius.accurate_radius` for that spread and the reports' noise;
2. **report** (group M, the rest): ``clip(x - m̂, ±w) + Laplace(2w/ε)`` on the lattice (Alg 8);
3. **count** (group C, :data:`COUNT_SD`): whether they have a
   statistic in the column, by randomized response (Alg 6), debiased to the share f̂ of users
   with one;
4. **tail** (group T, :data:`TAIL_SD`; with an estimated spread and a located clip only):
   whether their statistic lies within the located clip ``m̂ ± w``, beyond it or beyond a rung
   past it, by k-ary randomized response (Alg 6, three labels; :func:`_beyond_normal`). The
   fitted normal spread describes the histogram's bulk, and a lump or skewed tail it cannot see
   is clipped far beyond its bias bound (a 0/1 outcome under ``B = 1``: most intervals
   missed); where the debiased shares exceed the normal spread's by :data:`TAIL_SDS` of their
   sds, group M reports by the one-round estimator below instead, unbiased for values within
   ±B. Where they do not, a warning says how far the users beyond the clip that the count
   cannot rule out could pull the mean.

The mean is ``m̂ + (mean of the reports) / f̂``, projected onto ``[-B, B]`` (post-processing):
users without a statistic report the centre (0 offset), as in the paper, which shrinks the
reports' mean towards it by their share; f̂ undoes that, so that the estimand is the mean over
the users with a statistic, as the central engine's private count makes it (not capped at 1:
a cap would push the estimate away from the centre whenever every user has one). A column
whose f̂ cannot tell any user from none is withheld (NaN). The count group answers first,
and the locate group is sized for a mode of the users with a statistic only. When
the public facts say a locate group cannot be reliable, everyone instead reports
``clip(x, ±B) + Laplace(2B/ε)``: the one-round estimator; when the histogram says the two-round
radius would not beat the public bound, or the tail group finds the clip cutting more than a
normal tail, group M reports so (groups A and T answered already: no user answers twice; group
T joins group M where the histogram decides). Either way the reports are what the analyst
receives, so the standard error is their empirical standard deviation over √n_M — the exact
sampling plus noise law of the mean of the reports, to CLT accuracy; f̂'s own noise joins them
by the delta method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import parallel_ledger, split_users
from dplong.privacy.engine import Release
from dplong.privacy.histogram import Histogram, randomized_histogram
from dplong.privacy.noise import (
    debiased_share,
    flip_probability,
    randomized_labels,
    release_bounded_sum,
)
from dplong.privacy.notes import empty_notes
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import Tail, accurate_radius, clipping_bias
from dplong.privacy.tails import TAIL_RUNG

__all__ = ["LocalPlan", "release_local"]

#: Shares of a column's users that may be asked to locate the data (see :class:`LocalPlan`).
MIN_LOCATE_SHARE, MAX_LOCATE_SHARE = 0.05, 0.25

#: The count group (group C) asks users whether they have a statistic in the column: with half
#: the users without one the reports' mean was shrunk halfway to the centre (12 of 80 local
#: intervals missed). Its size is the one whose share's standard error is ``COUNT_SD`` where
#: every user has a statistic, within ``[MIN_COUNT_SHARE, MAX_COUNT_SHARE]`` of the column's
#: users: the count's error multiplies the mean's distance from the centre and withholds the
#: column where it cannot tell the share from 0 (3 sds), while every user it takes is a
#: reporter fewer (docs/accuracy.md).
COUNT_SD, MIN_COUNT_SHARE, MAX_COUNT_SHARE = 0.1, 0.05, 0.25

#: The tail group (group T) asks users where their statistic lies against the located clip
#: (:func:`_beyond_normal`). Its size is the one whose debiased shares have standard error
#: ``TAIL_SD`` (three labels, within ``[MIN_COUNT_SHARE, MAX_COUNT_SHARE]`` of the users left
#: to report): it sees a lump of a fifth of the users beyond the clip (those of a 0/1 outcome
#: of prevalence 0.05 with a 1 among four rows) at 4 sds, and takes a sixth of the reporters
#: at n = 5,000, ε = 1 (docs/accuracy.md). Shares above the normal spread's by ``TAIL_SDS``
#: of their sds mark the tail heavy: a false alarm costs the one-round estimator's wider
#: noise, where a missed lump is clipped outside the bias bound.
TAIL_SD, TAIL_SDS = 0.045, 2.5

#: Bins over [-B, B] without a stated scale; at most this many with one (always odd).
DEFAULT_BINS, MAX_BINS = 33, 1025


@dataclass(frozen=True)
class LocalPlan:
    """Public plan of one column's local release: who answers what, and the bins.

    Attributes
    ----------
    locate : int
        Users asked to locate the data (0: the one-round estimator with everyone).
    report : int
        Users asked for their clipped value.
    bins : int
        Bins of the locating histogram over ``[-B, B]``.
    count : int
        Users asked whether they have a statistic (:data:`COUNT_SD`).
    noise : float
        Standard deviation of one debiased randomized response at ε/2 (the histogram's bits).
    tail : int
        Users asked whether their statistic lies beyond the located clip (:data:`TAIL_SD`;
        with an estimated spread and a locate group only).

    Examples
    --------
    >>> from dplong.privacy.local import LocalPlan
    >>> plan = LocalPlan.make(10_000, epsilon=1.0, bound=10.0, sd=None)
    >>> plan.locate, plan.tail, plan.report, plan.count, plan.bins
    (814, 622, 8064, 500, 33)
    >>> LocalPlan.make(300, epsilon=1.0, bound=10.0, sd=None).locate   # too few to locate
    0
    """

    locate: int
    report: int
    bins: int
    count: int
    noise: float = 0.0
    tail: int = 0

    @property
    def bin_noise(self) -> float:
        """Standard deviation of each debiased proportion of the locating histogram."""
        return self.noise / math.sqrt(max(self.locate, 1))

    @classmethod
    def make(
        cls, users: int, *, epsilon: float, bound: float, sd: float | None, share: float = 1.0
    ) -> LocalPlan:
        """Bins from the stated scale (width ~σ) or a default; a count group whose share of
        the users with a statistic has standard error :data:`COUNT_SD` when all have one,
        ``√(q(1-q)) / (1 - 2q) / √n_C`` for the flip probability q at ε, within its shares
        of the users; a locate group when it can find the mode: its
        debiased proportions' noise, ``σ_RR √(2 log K / β) / √n_A`` with
        ``σ_RR = √(q(1-q)) / (1 - 2q)`` (q the flip probability at ε/2), must be below half
        of a mode that holds at least half the users with a statistic, a ``share`` of them
        (a released number: the count group answers first; where few users have one, a
        pick among bins of noise put the centre far off); a tail group beside a locate group
        where the spread is estimated (:data:`TAIL_SD`)."""
        count = _count_group(users, epsilon)
        users -= count
        # bins of width σ with a stated scale: the mode then holds over a third of the users
        bins = DEFAULT_BINS if sd is None else int(min(max(math.ceil(bound / sd), 3), MAX_BINS))
        bins += 1 - bins % 2  # odd: a bin centred at 0
        noise = _response_sd(epsilon / 2.0)
        mode = 0.5 if sd is None else 0.38  # P(|Z| < 1/2): a bin of width σ around the mean
        needed = (2.0 * noise * math.sqrt(2.0 * math.log(bins / 0.05)) / (mode * share)) ** 2
        locate = math.ceil(min(max(needed, MIN_LOCATE_SHARE * users), MAX_LOCATE_SHARE * users))
        tail = 0 if sd is not None else _group(users - locate, epsilon, TAIL_SD, 3)
        if locate < needed or users - locate - tail < 2:
            return cls(0, users, bins, count, noise)
        return cls(locate, users - locate - tail, bins, count, noise, tail)


def _response_sd(epsilon: float, categories: int = 2) -> float:
    """``σ_RR = √(q(1-q)) / (1 - kq)``, q the flip probability at ``epsilon`` of one of ``k``
    labels: the standard deviation of one debiased randomized response (Alg 6) of a label
    that is never the one counted (of a bit that is always 1, for two labels)."""
    q = flip_probability(epsilon, categories)
    return math.sqrt(q * (1.0 - q)) / (1.0 - categories * q)


def _group(users: int, epsilon: float, sd: float, categories: int = 2) -> int:
    """The size of a group among ``users`` whose debiased share of randomized responses at
    ``epsilon`` over ``categories`` labels has standard error ``sd`` (:func:`_response_sd`),
    within ``[MIN_COUNT_SHARE, MAX_COUNT_SHARE]`` of them (public facts)."""
    wanted = (_response_sd(epsilon, categories) / sd) ** 2
    return math.ceil(min(max(wanted, MIN_COUNT_SHARE * users), MAX_COUNT_SHARE * users))


def _count_group(users: int, epsilon: float) -> int:
    """The count group's size among a column's ``users`` (:data:`COUNT_SD`; public facts)."""
    # two report at least (a tiny column: withheld)
    return min(_group(users, epsilon, COUNT_SD), max(users - 2, 0))


def release_local(
    matrix: NDArray[np.float64],
    *,
    names: tuple[str, ...],
    options: ReleaseOptions,
    rng: np.random.Generator,
    scale: NDArray[np.float64] | None = None,
    population: int | None = None,
) -> Release:
    """ε-LDP release of the column means of ``matrix`` (n x d; NaN: no statistic), each user
    answering one question (module docstring). ``options.bound`` is the public bound B;
    ``population`` the fit's public number of users, of whom ``matrix`` holds a random group
    (a block of a fit that splits its users): the released count of users with a statistic
    is its share of them (default: n).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.local import release_local
    >>> from dplong.privacy.options import ReleaseOptions
    >>> x = np.random.default_rng(0).normal(3.7, 1.3, size=(100_000, 1))
    >>> options = ReleaseOptions.check(100_000, epsilon=1.0, delta=None, privacy="local",
    ...                                bound=100.0, d=1)
    >>> res = release_local(x, names=("x",), options=options, rng=np.random.default_rng(1))
    >>> bool(abs(res.estimate[0] - 3.7) < 4 * res.noise_sd[0]), res.privacy.epsilon
    (True, 1.0)
    """
    assert options.bound is not None
    n, d = matrix.shape
    groups = split_users(rng, n, [1.0 / d] * d)  # one column per user: independent of data
    columns = [
        _column(
            matrix[group, j],
            float(options.bound[j]),
            options.epsilon,
            None if scale is None else math.sqrt(float(scale[j])),
            names[j],
            rng,
        )
        for j, group in enumerate(groups)
    ]
    ledger = parallel_ledger([entry for c in columns for entry in c.entries], "local")
    empty = np.array([c.empty for c in columns])
    tails = _tail_notes(names, columns)

    def field(name: str) -> NDArray[np.float64]:
        return np.array([getattr(c, name) for c in columns], dtype=np.float64)

    def shown(name: str) -> NDArray[np.float64]:  # a withheld column has no number
        return np.where(empty, np.nan, field(name))

    return Release(
        names=names,
        estimate=shown("estimate"),
        noise_sd=shown("noise_sd"),
        noise_scale=shown("noise_sd"),
        noise_kind="normal",
        sampling_sd=shown("sampling_sd"),
        bias=shown("bias"),
        interval=np.where(
            empty[:, None], np.nan, [[c.centre - c.radius, c.centre + c.radius] for c in columns]
        ),
        midpoint=shown("centre"),
        scale=shown("sampling_sd") ** 2 * field("reporters"),
        # the users with a statistic, from each column's count group's share of them
        users=(population or n) * field("share"),
        users_sd=(population or n) * float(field("share_sd").max()),
        privacy=ledger,
        n=n,
        variant="default (local, users split)",
        bad_events=np.full(d, options.gamma),
        # a δ given is not spent: every report is pure ε-LDP, which is stronger (public)
        notes=(
            *(
                (
                    f"delta={options.delta:.3g} is not spent: every user's report is ε-LDP "
                    "(pure), which implies (ε, δ)-LDP for any δ.",
                )
                if options.delta > 0.0
                else ()
            ),
            *empty_notes(names, empty),
            *_bound_notes(names, [c.at_bound and not c.empty for c in columns]),
            *tails,
        ),
    )


@dataclass(frozen=True)
class _Column:
    estimate: float
    noise_sd: float
    sampling_sd: float
    bias: float
    centre: float
    radius: float
    #: the reporters with a statistic (their share released), over whom the scale is per user
    reporters: float
    entries: tuple[LedgerEntry, ...]
    #: the mean of the reports lies within two of its sds of ±B, or beyond (released numbers)
    at_bound: bool
    #: the count cannot tell any user with a statistic from none: withheld (released numbers)
    empty: bool
    #: the released share of the users with a statistic, and its standard error
    share: float
    share_sd: float
    #: the tail group found more users beyond the located clip than the fitted normal spread
    #: puts there: released by the one-round estimator
    heavy: bool = False
    #: else how far the users beyond the clip that it cannot rule out could pull the mean
    #: (NaN: no tail group asked)
    pull: float = math.nan


def _column(
    values: NDArray[np.float64],
    bound: float,
    epsilon: float,
    sd: float | None,
    name: str,
    rng: np.random.Generator,
) -> _Column:
    """One column's groups (module docstring); ``values`` are its users' statistics."""
    if values.size == 0:  # more columns than users left this one none: nobody answers
        return _Column(
            math.nan, math.nan, math.nan, math.nan, 0.0, bound, 0.0, (), False, True, 0.0, 0.0
        )
    with_one = ~np.isnan(values[: _count_group(values.size, epsilon)])
    shares, sds = _label_shares(with_one.astype(np.int64), 2, epsilon, rng)
    share, share_sd = float(shares[1]), float(sds[1])
    # the locate group sized for a mode of the users with a statistic, at the count's high end
    # (a released number; the count group is the plan's whatever the share): smaller only
    # where the count shows clearly fewer, as complete data at its low end flipped to one round
    high = min(max(share + 2.0 * share_sd, 1e-3), 1.0)
    plan = LocalPlan.make(values.size, epsilon=epsilon, bound=bound, sd=sd, share=high)
    located, asked, reporting = np.split(
        values[plan.count :], [plan.locate, plan.locate + plan.tail]
    )
    entries = [
        _answers(
            "count",
            "randomized response (Alg 6) of having a statistic",
            plan.count,
            name,
            epsilon,
        )
    ]
    # a share the count cannot tell from 0 is withheld below, and meanwhile divides nothing
    held = max(share, 3.0 * share_sd)
    centre, radius, error = 0.0, bound, bound
    if plan.locate:
        half = bound / plan.bins  # K (odd) bins of width 2h over [-B, B], centres 2hk
        indices = np.arange(plan.bins, dtype=np.int64) - plan.bins // 2
        histogram = randomized_histogram(located, half, indices, epsilon, rng)
        entries.append(
            LedgerEntry(
                "midpoint",
                f"randomized-response histogram (Alg 7, 9), {plan.locate} users",
                name,
                epsilon,
                0.0,
                0.0,
                2.0,
                math.nan,
            )
        )
        mode = int(np.argmax(histogram.proportions))
        if sd is None:  # a normal spread fitted to the bins around the mode, of the users
            # with a statistic (the others answer an all-zero indicator)
            sd = _fit_spread(histogram, mode, plan.bin_noise, held)
            tail: Tail = "gaussian"
        else:
            tail = "sub-gaussian"
        located_centre, located_error = _centroid(histogram, mode, sd, plan.bin_noise)
        per_width = 2.0 * math.sqrt(2.0) / (epsilon * math.sqrt(plan.report))
        width = float(
            accurate_radius(
                np.array([sd**2]), np.array([located_error]), np.array([per_width]), tail=tail
            )[0]
        )
        # group A spent its ε on the histogram: only group M reports, around the located
        # centre where its noise ∝ w / √n_M beats the public bound's B / √n_M (a public choice
        # once the histogram is out: every user answers one question, ε-LDP)
        if width < bound:
            centre, radius, error = located_centre, width, located_error
        else:  # the one-round estimator needs no tail check: group T reports too
            reporting = np.concatenate([asked, reporting])
            asked = asked[:0]
    heavy, pull = False, math.nan
    if asked.size:
        assert sd is not None
        heavy, unseen = _beyond_normal(asked, centre, radius, error, sd, high, epsilon, rng)
        # what that many users beyond the clip, within ±B, could move the mean over the users
        # with a statistic by: a share of all users, over the count's low end of theirs (a
        # quarter with one made it four times the share; an audit), and no user further
        low = max(share - 2.0 * share_sd, 3.0 * share_sd)
        pull = min(unseen / low, 1.0) * (bound + abs(centre) - radius)
        entries.append(
            _answers(
                "tail",
                "k-ary randomized response (Alg 6, 3 labels) of lying beyond the clip and a rung",
                asked.size,
                name,
                epsilon,
            )
        )
        if heavy:  # a lump or tail the bulk's spread missed: unbiased within ±B instead
            centre, radius, error = 0.0, bound, bound
    with np.errstate(invalid="ignore"):
        clipped = np.where(np.isnan(reporting), 0.0, np.clip(reporting - centre, -radius, radius))
    release = release_bounded_sum(
        clipped[:, None], np.array([radius]), np.array([epsilon]), rng, local=True
    )
    assert release.reports is not None
    reports = release.reports[:, 0]
    m = reports.size
    entries.append(
        LedgerEntry(
            "mean",
            f"local lattice Laplace (Alg 8), {m} users",
            name,
            epsilon,
            0.0,
            0.0,
            float(release.sensitivity[0]),
            float(release.scale[0]),
        )
    )
    # the reports are the release: their spread gives the law of their mean (CLT); divided
    # by the share with a statistic, whose own error joins by the delta method
    offset = float(reports.mean()) / held
    laplace_sd = float(release.sd[0]) / math.sqrt(m) / held
    total_sd = float(reports.std(ddof=1)) / math.sqrt(m) / held
    sampling_sd = math.sqrt(max(total_sd**2 - laplace_sd**2, 0.0))
    count_sd = abs(offset) * share_sd / held
    noise_sd = math.hypot(laplace_sd, count_sd)
    raw = centre + offset
    estimate = float(np.clip(raw, -bound, bound))  # the mean of values in ±B: within it
    # the clipped reports understate the spread; the located one (or the stated) does not
    # (the reports' spread also holds the users without a statistic at the centre: larger)
    spread = sd if sd is not None else max(sampling_sd * math.sqrt(m * held), 1e-150)
    # one round: the centre 0 may be up to B from the mean (plug-in: the estimate's distance)
    distance = min(abs(estimate), bound) if radius >= bound else error
    bias = float(clipping_bias(spread**2, radius, distance))
    at_bound = abs(raw) > bound - 2.0 * math.hypot(total_sd, count_sd)
    empty = share < max(3.0 * share_sd, 2.0 / max(plan.count, 1))
    return _Column(
        estimate,
        noise_sd,
        sampling_sd,
        bias,
        centre,
        radius,
        m * held,
        tuple(entries),
        at_bound,
        empty,
        share,
        share_sd,
        heavy=heavy and not empty,
        pull=math.nan if heavy or empty else pull,
    )


def _answers(stage: str, mechanism: str, users: int, name: str, epsilon: float) -> LedgerEntry:
    """The ledger entry of a group of ``users``' randomized responses (one answer of
    sensitivity 1 each, at the whole ε)."""
    return LedgerEntry(stage, f"{mechanism}, {users} users", name, epsilon, 0.0, 0.0, 1.0, math.nan)


def _beyond_normal(
    values: NDArray[np.float64],
    centre: float,
    radius: float,
    error: float,
    sd: float,
    share: float,
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[bool, float]:
    """Whether more of the tail group's users lie beyond the clip ``centre ± radius``, or
    beyond the rung ``centre ± (error + TAIL_RUNG sd)`` past it, than a normal spread ``sd``
    whose mean lies up to ``error`` off ``centre`` puts there (among a ``share`` of users with
    a statistic), by :data:`TAIL_SDS` noise sds (:func:`_tail_shares`); and the share beyond
    the clip the count cannot rule out (its high end): a lump or tail of that many users
    could lie beyond, unseen.

    Two places, as the located centre may be half a coarse bin off: at the clip a normal may
    then put a sizeable share beyond it, near, which hides a far lump of as many users
    (users at 0.25 of a 0/1 outcome's four rows beside a clip of ±0.1 about 0); at the
    rung it puts next to none."""
    ends = np.array([radius, max(radius, error + TAIL_RUNG * sd)])
    found, found_sd = _tail_shares(values, centre, ends, epsilon, rng)
    # the most a normal puts beyond both ends with its mean up to ``error`` off centre
    normal = share * (special.ndtr((error - ends) / sd) + special.ndtr(-(ends + error) / sd))
    unseen = float(np.clip(found[0] + TAIL_SDS * found_sd[0], 0.0, share))
    return bool(np.any(found > normal + TAIL_SDS * found_sd)), unseen


def _tail_shares(
    values: NDArray[np.float64],
    centre: float,
    ends: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The shares of the users whose ``values`` lie beyond ``centre ± ends[0]`` (the clip)
    and beyond ``centre ± ends[1]`` (the rung), and their standard errors, from ε-LDP k-ary
    randomized responses (Alg 6) of three labels: within the clip, between, beyond the rung
    (:func:`_label_shares`; beyond the clip: all but those within)."""
    with np.errstate(invalid="ignore"):  # NaN: no statistic, within
        distance = np.abs(values - centre)
    labels = (distance > ends[0]).astype(np.int64) + (distance > ends[1])
    shares, sds = _label_shares(labels, 3, epsilon, rng)
    return np.array([1.0 - shares[0], shares[2]]), sds[[0, 2]]


def _label_shares(
    labels: NDArray[np.int64], categories: int, epsilon: float, rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The share of users with each of ``categories`` labels, from their ε-LDP (k-ary)
    randomized responses (Alg 6), debiased: ``(p̂ - q) / (1 - kq)`` for the share p̂ of a
    label reported and q the chance of reporting it in place of another, and its standard
    error (the reports' binomial spread over ``1 - kq``: sampling and privacy noise
    together)."""
    reports = randomized_labels(labels, categories, epsilon, rng)
    q = flip_probability(epsilon, categories)
    k = max(reports.size, 1)
    observed = np.bincount(reports, minlength=categories) / k
    spread = np.sqrt(np.maximum(observed * (1.0 - observed), 0.25 / k) / k)
    return np.asarray(debiased_share(observed, q, categories)), spread / (1.0 - categories * q)


def _tail_notes(names: tuple[str, ...], columns: list[_Column]) -> tuple[str, ...]:
    """The notes of the tail group's findings: the columns in which it found more users
    beyond the located clip than the fitted normal spread puts there (released by the
    one-round estimator), and per other column it asked, how far a lump or tail of the users
    beyond the clip it cannot rule out could pull the mean, which the bias bound leaves out:
    a warning, as the count of a few hundred randomized responses misses up to a tenth of
    the users (a 0/1 outcome of low prevalence, a lognormal tail; docs/accuracy.md).
    Released numbers only.

    Examples
    --------
    >>> from dplong.privacy.local import _Column, _tail_notes
    >>> def column(heavy, pull):
    ...     return _Column(0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 9.0, (), False, False, 1.0, 0.1,
    ...                    heavy=heavy, pull=pull)
    >>> heavy, unseen = _tail_notes(("x", "y"), [column(True, float("nan")), column(False, 0.5)])
    >>> heavy[:48]
    "['x']: more users lie beyond the clip about the "
    >>> unseen[:64]
    "['y']: a count of the users beyond the clip about the locating h"
    """
    heavy = [name for name, c in zip(names, columns, strict=True) if c.heavy]
    notes = []
    if heavy:
        notes.append(
            f"{heavy}: more users lie beyond the clip about the locating histogram's mode than "
            "its normal spread puts there (a lump or a skewed tail, counted privately): the "
            "mean is the one-round estimator's, every report clipped to ±bound only, unbiased "
            "for values within it and noisier; a stated scale (scale=) clips closer."
        )
    notes += [
        f"['{name}']: a count of the users beyond the clip about the locating histogram's "
        "mode found no more than its normal spread puts there, but a lump or skewed tail of "
        "fewer users than its noise hides could lie beyond, clipped outside the bias bound: "
        f"it could pull the mean by up to {c.pull:.3g} (values within ±bound), and the "
        "interval miss it; state the scale (scale=) to vouch for the tail."
        for name, c in zip(names, columns, strict=True)
        if not math.isnan(c.pull)
    ]
    return tuple(notes)


def _bound_notes(names: tuple[str, ...], at_bound: list[bool]) -> tuple[str, ...]:
    """The warning for columns whose reports' mean lies at the public bound B (within two of
    its sds, or beyond): every value beyond ±B was clipped to it, so a bound the users' values
    exceed pulls the mean to it by an amount no interval includes (a mean of 101 under B = 5
    was released as 5 with an interval of ±4). Released numbers only.

    Examples
    --------
    >>> from dplong.privacy.local import _bound_notes
    >>> _bound_notes(("x", "y"), [False, True])[0][:60]
    "['y']: the mean of the reports lies at the public bound (wit"
    >>> _bound_notes(("x",), [False])
    ()
    """
    named = [name for name, flag in zip(names, at_bound, strict=True) if flag]
    if not named:
        return ()
    return (
        f"{named}: the mean of the reports lies at the public bound (within two of its sds "
        "of ±bound, or beyond): values beyond it were clipped to it, and if the users' "
        "values lie beyond, the mean is pulled to the bound by more than the interval "
        "includes; check that bound= holds the users' values.",
    )


def _centroid(histogram: Histogram, mode: int, sd: float, noise: float) -> tuple[float, float]:
    """The centre of the located users and a bound on its error (post-processing).

    When the users spread over several bins the mode is a noisy pick among similar bins; the
    centroid of the debiased proportions over the bins within 2σ of the mode averages that
    noise out. Its error is at most half a bin (the bins' resolution) plus three sds of its
    noise (``noise`` per bin), plus the share of a normal population beyond the run (a run
    of ±2σ misses 5 %, which may all lie on one side: at most ``0.05 · 3σ`` of shift)."""
    half = histogram.half_width
    reach = math.ceil(2.0 * sd / (2.0 * half))
    lo, hi = max(mode - reach, 0), min(mode + reach + 1, histogram.bins.size)
    centres = 2.0 * half * histogram.bins[lo:hi]
    weights = np.clip(histogram.proportions[lo:hi], 0.0, None)
    total = float(weights.sum())
    if total <= 0.0:
        return float(2.0 * half * histogram.bins[mode]), half
    centre = float(weights @ centres / total)
    spread = float(np.sqrt(np.sum((centres - centre) ** 2)) * noise / total)
    return centre, half + 3.0 * spread + 0.15 * sd


def _fit_spread(histogram: Histogram, mode: int, noise: float, share: float) -> float:
    """A normal spread fitted to the debiased histogram around its mode (post-processing).

    The run of ``2k + 1`` bins centred on the mode holds ``2Φ((2k+1) h / (2σ)) - 1`` of a
    normal population centred in the mode's bin, times the ``share`` of the users with a
    statistic (the others answer no bin); the partial sums of the debiased proportions
    estimate these shares without bias, with noise variance ``(2k+1) noise²``. σ̂ minimises
    the weighted squared misfit over a log grid from a third of a bin (narrower spreads are
    unresolved: all users in one bin) to the whole range.
    """
    proportions = histogram.proportions
    half = histogram.half_width
    runs = np.arange(proportions.size)
    sums = np.array(
        [proportions[max(mode - k, 0) : min(mode + k + 1, proportions.size)].sum() for k in runs]
    )
    widths = (2 * runs + 1) * half
    candidates = half * np.exp2(np.linspace(-1.6, math.log2(proportions.size) + 1.0, 200))
    shares = share * (2.0 * special.ndtr(widths[None, :] / candidates[:, None]) - 1.0)
    misfit = ((sums[None, :] - shares) ** 2 / ((2 * runs + 1) * noise**2 + 1e-12)).sum(axis=1)
    return float(candidates[int(np.argmin(misfit))])
