"""The local model's default: split users, not budgets.

In the local model every user privatises their own report. Asking each user several questions
splits their ε; asking *different users* different questions does not: disjoint groups compose
in parallel, so every report here is ε-LDP with the user's whole ε and the release is ε-LDP.
For each column of statistics (users are first partitioned over the columns, at random and
independently of the data) a group of users answers one of three questions:

1. **locate** (group A, ~ :data:`LOCATE_SHARE` of the column's users): the one-hot indicator of
   their bin among K (odd) equal bins over the public range ``[-B, B]`` (bins of width ~σ
   when the scale is stated, else 2B/33), by randomized response (Alg 6-7). The debiased histogram
   gives the midpoint m̂ (the mode's centre, Alg 9) and, unless the scale is stated, a spread
   σ̂ fitted to the bins around it (:func:`_fit_spread`); the radius w is
   :func:`~dplong.privacy.radius.accurate_radius` for that spread and the reports' noise;
2. **report** (group M, the rest): ``clip(x - m̂, ±w) + Laplace(2w/ε)`` on the lattice (Alg 8);
3. **count** (group C, :data:`COUNT_SD`): whether they have a
   statistic in the column, by randomized response (Alg 6), debiased to the share f̂ of users
   with one.

The mean is ``m̂ + (mean of the reports) / f̂``, projected onto ``[-B, B]`` (post-processing):
users without a statistic report the centre (0 offset), as in the paper, which shrinks the
reports' mean towards it by their share; f̂ undoes that, so that the estimand is the mean over
the users with a statistic, as the central engine's private count makes it (not capped at 1:
a cap would push the estimate away from the centre whenever every user has one). A column
whose f̂ cannot tell any user from none is withheld (NaN). The count group answers first,
and the locate group is sized for a mode of the users with a statistic only. When
the public facts say a locate group cannot be reliable, everyone instead reports
``clip(x, ±B) + Laplace(2B/ε)``: the one-round estimator; when the histogram says the two-round
radius would not beat the public bound, group M reports so (group A answered the histogram: no
user answers twice). Either way the reports are what the analyst receives, so the standard
error is their empirical standard deviation over √n_M — the exact sampling plus noise law of
the mean of the reports, to CLT accuracy; f̂'s own noise joins them by the delta method.
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
    randomized_response,
    release_bounded_sum,
)
from dplong.privacy.notes import empty_notes
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import Tail, accurate_radius, clipping_bias
from dplong.privacy.tails import unchecked_warnings

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

    Examples
    --------
    >>> from dplong.privacy.local import LocalPlan
    >>> plan = LocalPlan.make(10_000, epsilon=1.0, bound=10.0, sd=None)
    >>> plan.locate, plan.report, plan.count, plan.bins
    (814, 8686, 500, 33)
    >>> LocalPlan.make(300, epsilon=1.0, bound=10.0, sd=None).locate   # too few to locate
    0
    """

    locate: int
    report: int
    bins: int
    count: int
    noise: float = 0.0

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
        pick among bins of noise put the centre far off)."""
        count = _count_group(users, epsilon)
        users -= count
        # bins of width σ with a stated scale: the mode then holds over a third of the users
        bins = DEFAULT_BINS if sd is None else int(min(max(math.ceil(bound / sd), 3), MAX_BINS))
        bins += 1 - bins % 2  # odd: a bin centred at 0
        noise = _response_sd(epsilon / 2.0)
        mode = 0.5 if sd is None else 0.38  # P(|Z| < 1/2): a bin of width σ around the mean
        needed = (2.0 * noise * math.sqrt(2.0 * math.log(bins / 0.05)) / (mode * share)) ** 2
        locate = math.ceil(min(max(needed, MIN_LOCATE_SHARE * users), MAX_LOCATE_SHARE * users))
        if locate < needed or users - locate < 2:
            return cls(0, users, bins, count, noise)
        return cls(locate, users - locate, bins, count, noise)


def _response_sd(epsilon: float) -> float:
    """``σ_RR = √(q(1-q)) / (1 - 2q)``, q the flip probability at ``epsilon``: the standard
    deviation of one debiased randomized response (Alg 6) of a bit that is always 1."""
    q = flip_probability(epsilon)
    return math.sqrt(q * (1.0 - q)) / (1.0 - 2.0 * q)


def _count_group(users: int, epsilon: float) -> int:
    """The count group's size among a column's ``users`` (:data:`COUNT_SD`; public facts)."""
    wanted = (_response_sd(epsilon) / COUNT_SD) ** 2
    count = math.ceil(min(max(wanted, MIN_COUNT_SHARE * users), MAX_COUNT_SHARE * users))
    return min(count, max(users - 2, 0))  # two report at least (a tiny column: withheld)


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
    # an estimated spread's bias bound is a normal tail's about the histogram's mode, which no
    # count checks here: a warning, as where the central engine affords no tail count (skewed
    # values were clipped far beyond the bound, and most intervals missed; docs/accuracy.md).
    # The located centre's error (half a coarse bin and more) hides a skew from the reports'
    # offset, so no skew check can tell it
    empty = np.array([c.empty for c in columns])
    unchecked = unchecked_warnings(
        names, np.full(d, scale is None) & ~empty, np.zeros(d, dtype=bool), why="local"
    )

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
            *unchecked,
        ),
        unchecked_notes=unchecked,
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


def _column(
    values: NDArray[np.float64],
    bound: float,
    epsilon: float,
    sd: float | None,
    name: str,
    rng: np.random.Generator,
) -> _Column:
    """One column's three groups (module docstring); ``values`` are its users' statistics."""
    if values.size == 0:  # more columns than users left this one none: nobody answers
        return _Column(
            math.nan, math.nan, math.nan, math.nan, 0.0, bound, 0.0, (), False, True, 0.0, 0.0
        )
    share, share_sd = _share_with_statistic(
        values[: _count_group(values.size, epsilon)], epsilon, rng
    )
    # the locate group sized for a mode of the users with a statistic, at the count's high end
    # (a released number; the count group is the plan's whatever the share): smaller only
    # where the count shows clearly fewer, as complete data at its low end flipped to one round
    high = min(max(share + 2.0 * share_sd, 1e-3), 1.0)
    plan = LocalPlan.make(values.size, epsilon=epsilon, bound=bound, sd=sd, share=high)
    located, reporting = np.split(values[plan.count :], [plan.locate])
    entries = [
        LedgerEntry(
            "count",
            f"randomized response (Alg 6) of having a statistic, {plan.count} users",
            name,
            epsilon,
            0.0,
            0.0,
            1.0,
            math.nan,
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
    estimate = float(np.clip(raw, -bound, bound))  # |mean| <= B: public
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
    )


def _share_with_statistic(
    values: NDArray[np.float64], epsilon: float, rng: np.random.Generator
) -> tuple[float, float]:
    """The share of the users with a statistic (not NaN), from their ε-LDP randomized
    responses (Alg 6), debiased: ``(p̂ - q) / (1 - 2q)`` for the share p̂ of 1s reported and
    the flip probability q, and its standard error (the reports' binomial spread over
    ``1 - 2q``: sampling and privacy noise together)."""
    reports = randomized_response(~np.isnan(values), epsilon, rng)
    q = flip_probability(epsilon)
    k = max(reports.size, 1)
    observed = float(reports.sum()) / k
    spread = math.sqrt(max(observed * (1.0 - observed), 0.25 / k) / k)
    return float(debiased_share(observed, q)), spread / (1.0 - 2.0 * q)


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
