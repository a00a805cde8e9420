"""The default release engine: the column means of per-user statistics, given only ε and δ.

Every model and :func:`dplong.winsorized_mean` reduce users to an n x d matrix of statistics
(NaN: the user has none in that column) and call :func:`release_means`. It runs the stages of
a :class:`~dplong.privacy.budget.ReleasePlan`, each a noisy Winsorized mean ingredient of the
paper generalised so that nothing about the data's location or scale need be known:

1. **count** N̂ of users with a statistic (lattice Laplace): the means are ``c + S / N̂``;
2. **midpoint** m̂_j: a private median on a public log grid (where Alg 3 has the mode of a
   stable histogram);
3. **scale** σ̂_j: the private median of ``|x - m̂_j|``, with zeros and shared values set aside
   (:mod:`dplong.privacy.scale`); skipped when the scale is stated;
4. **refinement**: a rough mean on ``m̂ ± w₁`` (Alg 4), the centre of the final interval;
5. **mean**: Alg 4's projection onto ``c ± w`` (:func:`~dplong.privacy.radius.accurate_radius`)
   and lattice Laplace or discrete Gaussian noise, the budget shared over columns by PLAN.

Stages 1-4 are :func:`~dplong.privacy.locate.locate`; the tail rule that measures a heavy tail
before the final stage is :mod:`dplong.privacy.tails`; the projection and the lattice sums are
:mod:`dplong.privacy.projection`. Precision weights (:class:`~dplong.privacy.rules.UserWeights`)
standardise every stage after the midpoint, keeping the sensitivity of the unweighted release.
A column whose release missed the data is withheld (:func:`implausible`, :func:`overflowed`).
The stages' public error allowances, the tail models, the support ends and the weighted
release's sensitivities are derived in the design notes, ``docs/design/engine.md``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import Accountant, PrivacyLedger
from dplong.privacy.budget import (
    DOUBT_MISS,
    MAX_MISS,
    FinalBudget,
    ReleasePlan,
    afford,
    settle,
)
from dplong.privacy.counts import side_reach
from dplong.privacy.locate import (
    ROUGH_RADIUS,
    TINY_SCALE,
    Location,
    locate,
    median_error,
    rough_error,
)
from dplong.privacy.notes import (
    beside_notes,
    crowded_notes,
    empty_notes,
    few_users,
    implausible_notes,
    lost_notes,
    missed_notes,
    tiny_notes,
    user_notes,
)
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.projection import (
    MAX_RADIUS,
    anchored,
    centred,
    mean_entries,
    release_clipped,
    release_second_moment,
    support_window,
    supported_centre,
)
from dplong.privacy.radius import (
    EXPONENTIAL_SPREAD,
    SYMMETRIC,
    AssumedTail,
    Moment,
    TailOption,
    accurate_radius,
    bin_radius,
    clipping_bias,
    counted_each_side,
    moment_bias,
    moment_radius,
    tail_model,
)
from dplong.privacy.rules import Count, Rules, bias_factor, moment_rule, weight_roots
from dplong.privacy.scale import far_above
from dplong.privacy.tails import (
    EDGE_SDS,
    SKEW_SHARE,
    TAIL_REACH,
    UNCHECKED_SKEW_SHARE,
    blind_columns,
    clips_many_notes,
    coarse_count,
    exceeded_assumptions,
    heavy_notes,
    leaning_notes,
    lump_assumptions,
    measures_tail,
    moderate_assumptions,
    rung_sds,
    skew_tails,
    skewed_columns,
    skewed_notes,
    stated_remedy,
    tail_rule,
    tail_users,
    unchecked_warnings,
    with_tail,
)

__all__ = [
    "Release",
    "forecast_noise",
    "implausible",
    "overflowed",
    "release_means",
]


#: A released mean beyond the first share of its interval's half-width is at its edge: most
#: users were clipped to one side, the centre missed the data (the estimate is withheld). So
#: is one beyond the second share that is as far out as the edge could plausibly look (within
#: ``MISSED_SDS`` sds of the count's and the sum's noise) had every user been clipped to it.
#: 5 sds, not 3: a count drawn 3 sds high (0.7 % of Laplace draws) hid such a miss, and a
#: released number far off with a tight interval followed; 5 sds withhold no more of a good
#: release (docs/accuracy.md, "A far miss a high count hid").
MISSED_SHARE, NEAR_SHARE, MISSED_SDS = 0.8, 0.5, 5.0
#: A released second moment of the clipped values above ``(CROWDED_SPREAD σ̂)²`` and
#: ``(CROWDED_SHARE w)²`` (w the half-width) says that many users were clipped: withheld.
CROWDED_SPREAD, CROWDED_SHARE = 1.5, 0.5

#: The clip is never tighter than what its noise affords for free: where widening it adds at
#: most ``FREE_NOISE`` of the sampling variance ``σ̂² / N̂`` in noise variance, it widens, up to
#: ``FREE_REACH σ̂`` beyond the centre's error (:func:`_final_radius`). The radius that minimises
#: noise and the tail model's bias is tight where noise is cheap (few users, a large ε), and
#: tails heavier than the model's are clipped there with no bound seeing it (docs/accuracy.md,
#: "Withheld rather than absurd": dietox's left-skewed pig means); noise-dominated releases,
#: whose noise already exceeds the share, keep their radius.
FREE_NOISE, FREE_REACH = 0.05, 4.0

#: How far a centre may move towards a support's end
#: (:func:`~dplong.privacy.projection.supported_centre`): until the
#: count's noise it brings reaches this share of the sum's (the mean's sd up by at most 12 %).
SHIFT_COST = 0.5


#: Steps of the variance bound of values within public bounds (Bhatia-Davis at the mean's
#: plausible end nearest the middle, the sampling error read from the previous step): four
#: reach the fixed point of a share of 0.02 at 1,000 users to within 2 %.
BOUNDED_STEPS = 4


@dataclass(frozen=True)
class Release:
    """Everything public about one release of column means (DP outputs and public facts).

    Attributes
    ----------
    names : tuple of str
        Column names.
    estimate : ndarray
        The private means.
    noise_sd, noise_scale : ndarray
        Standard deviation of the privacy noise in each estimate, and its scale parameter
        (Laplace b, or the Gaussian's σ).
    noise_kind : str
        ``"laplace"``, ``"gaussian"`` or ``"normal"`` (local: a sum of n draws).
    sampling_sd : ndarray
        Plug-in standard deviation of the non-private mean: ``√(ρ / N̂)`` with ρ the scale.
    bias : ndarray
        Bound on the clipping bias (:func:`~dplong.privacy.radius.clipping_bias`).
    interval : ndarray, shape (d, 2)
        The final projection intervals.
    midpoint, scale : ndarray
        The private midpoints and the variance proxies used (estimated σ̂² or stated).
    users : ndarray
        The private count(s) of users with a statistic (one, or one per column).
    users_sd : float
        Standard deviation of each count's noise.
    privacy : PrivacyLedger
        Every mechanism call and the composed (ε, δ).
    n : int
        Number of users (public).
    variant : str
        How it was released (``"default"``, ``"default (refined)"``, ``"default (checked)"``:
        the midpoint's check measured the centre's error, ``"theory"``).
    bad_events : ndarray
        Per column, the probability of the events the error bounds exclude.
    notes : tuple of str
        Reliability notes from public facts and released numbers.
    assumptions : tuple of str
        Assumption lines the release adds to its fit's (from the same): where the tail count
        could not check the tails its bias bound assumes, where it found a moderate tail
        whose exponential model the bound took (:func:`~dplong.privacy.tails.moderate_assumptions`),
        and where it found more than an assumed skewed kind puts beyond its rung, the bound then
        a Pareto tail's (:func:`~dplong.privacy.tails.exceeded_assumptions`).
    failed : ndarray of bool, optional
        Where the midpoint failed: the paper's stable histogram found no bin (``"theory"``), or
        the released mean sat at the edge of its interval (the estimate is then NaN).
    weighted : bool
        Whether users were weighted (:class:`~dplong.privacy.rules.UserWeights`): ``users`` is then
        the private weighted count ``Σ w_u`` and ``scale`` the standardised one.
    unseen : ndarray of bool, optional
        Columns taken as 0 (their estimate is 0; the results withhold it, "unseen", as
        :func:`dplong.models.assemble.panel_results` does): most users are exactly 0 there and
        the private count saw no others (it may miss a few,
        :class:`~dplong.privacy.scale.ScaleScan`).
    skew_notes : tuple of str
        The notes (also in ``notes``) of the columns whose released mean lies far enough from
        its median to call them skewed where no count checked their tails
        (:func:`~dplong.privacy.tails.skewed_columns`).
    unchecked_notes : tuple of str
        The notes (also in ``notes``) of the other columns whose tail no count checked
        (:func:`~dplong.privacy.tails.unchecked_warnings`).
    floored : ndarray of bool, optional
        Where the located interval reached the statistics' declared lower end (``lower``), so
        that the clip can only have pulled the mean down, and nothing bounds what it cut
        (heavy squares, :class:`~dplong.privacy.radius.AssumedTail` ``squares``): the
        interval's lower end stands without the bias bound (the results' ``downward_bias``).
    """

    names: tuple[str, ...]
    estimate: NDArray[np.float64]
    noise_sd: NDArray[np.float64]
    noise_scale: NDArray[np.float64]
    noise_kind: str
    sampling_sd: NDArray[np.float64]
    bias: NDArray[np.float64]
    interval: NDArray[np.float64]
    midpoint: NDArray[np.float64]
    scale: NDArray[np.float64]
    users: NDArray[np.float64]
    users_sd: float
    privacy: PrivacyLedger
    n: int
    variant: str
    bad_events: NDArray[np.float64]
    notes: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    failed: NDArray[np.bool_] | None = None
    weighted: bool = False
    unseen: NDArray[np.bool_] | None = None
    skew_notes: tuple[str, ...] = ()
    unchecked_notes: tuple[str, ...] = ()
    floored: NDArray[np.bool_] | None = None

    @property
    def failed_columns(self) -> NDArray[np.bool_]:
        """Where the midpoint failed (only the paper's stable histogram can fail)."""
        return np.zeros(len(self.names), dtype=bool) if self.failed is None else self.failed

    @property
    def count(self) -> Count:
        """Its private count of users, for a later release over the same users
        (:class:`~dplong.privacy.rules.Count`)."""
        return Count(self.users, self.users_sd)

    def withhold(self, columns: NDArray[np.bool_]) -> Release:
        """This release with no number (NaN) for the estimate and error figures of
        ``columns`` (post-processing: what a model withholds after the release)."""

        def hidden(values: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.where(columns, np.nan, values)

        return dataclasses.replace(
            self,
            estimate=hidden(self.estimate),
            noise_sd=hidden(self.noise_sd),
            sampling_sd=hidden(self.sampling_sd),
            bias=hidden(self.bias),
        )


def forecast_noise(
    plan: ReleasePlan,
    *,
    gamma: float,
    stated_scale: bool,
    tail: TailOption | None = None,
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    relative: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The privacy-noise sd and the sampling sd a release of ``plan`` would report, per column,
    predicted from public facts alone: in units of each column's sd σ (the spread of one
    user's statistic, or the square root of a stated variance proxy), or absolute with public
    ``bounds``.

    The release's own rules run on a typical outcome of its earlier stages: every one of the n
    users has a statistic, the scale stage finds σ, the midpoint is off the mean by its rank
    error (plus the refinement's noise and sampling error when the plan refines) and the
    centre's grid cell is negligible. The accurate radius and the final budget then come from
    :func:`_final_radius` and :meth:`~dplong.privacy.budget.ReleasePlan.final_budget` — the
    functions the release itself calls — with the second moment's and the tail stage's shares
    taken out as the release takes them. A heavier tail than the statistic's model widens the
    radius at release time (the tail stage), and so the noise; a stated moment bound
    (absolute, not in units of σ) is forecast as its bulk: no tail stage, the bulk's radius.
    An assumed ``tail`` (:class:`~dplong.privacy.radius.AssumedTail`) takes the tail stage's
    share as no tail would (:class:`~dplong.privacy.rules.Rules`).

    Examples
    --------
    >>> from dplong.privacy.budget import ReleasePlan
    >>> from dplong.privacy.engine import forecast_noise
    >>> plan = ReleasePlan.make(n=2000, d=1, epsilon=1.0, delta=0.0, stated_scale=False)
    >>> noise, sampling = forecast_noise(plan, gamma=0.05, stated_scale=False)
    >>> bool(0.002 < noise[0] < 0.01), round(float(sampling[0]) * 2000**0.5, 6)
    (True, 1.0)
    """
    d, n = plan.d, plan.n
    users = np.full(d, float(n))
    weights = np.ones(d)
    plan = with_tail(
        plan,
        measured=bounds is None and not stated_scale and measures_tail(tail),
        signed=counted_each_side(tail),
    )
    kind = tail_model(tail)
    kind = None if isinstance(kind, Moment) else kind
    if bounds is not None:
        radius = np.asarray((bounds[1] - bounds[0]) / 2.0, dtype=float)
        budget = plan.final_budget(radius, weights, refined=plan.refine > 0)
        sd = radius if not stated_scale else np.ones(d)
    else:
        sd = np.ones(d)
        kinds = np.broadcast_to(
            np.asarray(kind or ("sub-gaussian" if stated_scale else "gaussian")), (d,)
        )
        if plan.midpoint_kind == "public":  # the model's bound: small by construction
            error = np.zeros(d)
        elif plan.midpoint_kind == "histogram":
            error = 2.0 * bin_radius(sd**2, gamma)
        else:
            # the midpoint's check measures its rank error: typically its noise's reach alone
            measured = plan.ranked
            ranks = np.full(d, side_reach(plan.side, gamma) / 2.0) if measured else None
            error = median_error(sd, kinds, plan, gamma, users, ranks)
        refined = plan.refine > 0
        if refined:  # the rough mean's Laplace scale: sensitivity 2 w₁ at the refinement's ε
            rough_width = ROUGH_RADIUS * sd
            error = rough_error(2.0 * rough_width / plan.refine, users, sd, gamma) + (
                clipping_bias(sd**2, rough_width, error, tail=tuple(kinds))
            )
        where = Location(
            np.zeros(d), np.zeros(d), error, sd, users, 0.0, refined, tuple(kinds), (), plan
        )
        radius, budget = _final_radius(
            where, weights, plan, relative=relative, floor=_skew_floor(sd, plan, tail)
        )
    mean_budget, _ = budget.split(plan.moment_share)
    if plan.tail:
        _, mean_budget = mean_budget.tail_split(plan.tail)
    return mean_budget.noise_sd(2.0 * radius) / users, sd / np.sqrt(users)


def release_means(
    matrix: NDArray[np.float64],
    *,
    names: tuple[str, ...],
    options: ReleaseOptions,
    rng: np.random.Generator,
    rules: Rules = Rules(),
    weights: NDArray[np.float64] | None = None,
    accountant: Accountant | None = None,
    plan: ReleasePlan | None = None,
) -> Release:
    """Release the column means of ``matrix`` (n x d; NaN: no statistic) with the default plan.

    ``rules`` says what the release knows of its statistics beyond the matrix
    (:class:`~dplong.privacy.rules.Rules`: a stated scale, public bounds or support ends, precision
    weights, an earlier count, a public centre, the tail model); ``weights`` how much each column's
    error counts when the budget is shared (default equal); ``plan`` replaces the plan made from
    ``options`` (a later release of a fit, :meth:`~dplong.privacy.budget.ReleasePlan.after`). With
    precision weights each sum keeps the sensitivity ``2 r_j`` of the unweighted release and the
    weighted count has sensitivity 1 (module docstring). Every refusal and the accountant's check
    happen before the first noise draw.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.engine import release_means
    >>> from dplong.privacy.options import ReleaseOptions
    >>> x = np.random.default_rng(0).normal([2.0, -50.0], [1.0, 10.0], size=(2000, 2))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=2)
    >>> res = release_means(x, names=("a", "b"), options=options, rng=np.random.default_rng(1))
    >>> bool(np.all(np.abs(res.estimate - x.mean(axis=0)) < 4 * res.noise_sd + 0.01))
    True
    >>> res.privacy.epsilon <= 1.0, res.privacy.delta <= 1.0 / 2000**2
    (True, True)

    Precision weights: users with ``T_u`` rows have means of variance ``1 + 4 / T_u``; the
    weights ``w_u ∝ 1 / (1 + 4 / T_u)``, capped at 1 (``T_u >= 20``), target the GLS mean:

    >>> from dplong.privacy.rules import Rules, UserWeights
    >>> rng = np.random.default_rng(2)
    >>> rows = rng.integers(1, 21, size=5000)
    >>> means = 3.0 + rng.normal(0.0, np.sqrt(1.0 + 4.0 / rows))
    >>> w = (1.0 + 4.0 / 20) / (1.0 + 4.0 / rows)
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> res = release_means(means[:, None], names=("mu",), options=options, rng=rng,
    ...                     rules=Rules(user_weights=UserWeights(w, floor=1.2 / 5.0)))
    >>> res.weighted, bool(abs(res.estimate[0] - np.sum(w * means) / np.sum(w)) < 0.05)
    (True, True)

    A public centre (statistics whose mean is known to be within 0.1 of 0): no midpoint stage

    >>> x = np.random.default_rng(3).normal(0.05, 1.0, size=(2000, 1))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> res = release_means(x, names=("psi",), options=options, rng=np.random.default_rng(4),
    ...                     rules=Rules(public_centre=(np.zeros(1), np.full(1, 0.1))))
    >>> [e.stage for e in res.privacy.entries], float(res.interval.mean())
    (['count', 'scale', 'scale', 'tail', 'mean', 'second moment'], 0.0)
    """
    stated_moment = moment_rule(rules)
    scale, complete_rows, bounds = rules.scale, rules.complete_rows, rules.bounds
    user_weights, tail, count = rules.user_weights, tail_model(rules.tail), rules.count
    public_centre, lower = rules.public_centre, rules.lower
    n, d = matrix.shape
    if complete_rows:  # a user's statistics are all there or all missing
        matrix = np.where(np.isnan(matrix).any(axis=1, keepdims=True), np.nan, matrix)
    weights = np.ones(d) if weights is None else weights
    if plan is None:
        plan = ReleasePlan.make(
            n=n,
            d=d,
            epsilon=options.epsilon,
            delta=options.delta,
            stated_scale=scale is not None,
            complete_rows=complete_rows,
            refine=options.refine,
            bounded=bounds is not None,
            weighted=user_weights is not None,
            count=count is None,
            centred=public_centre is not None,
            supported=lower is not None and bool(np.isfinite(lower).any()),
            assumed=isinstance(rules.tail, AssumedTail),
        )
        plan.check()  # every refusal before the first noise draw
        afford(accountant, plan.epsilon, plan.delta)
    if count is not None and plan.counts:
        raise ValueError("a release given an earlier count must not plan its own")
    if (public_centre is not None) != (plan.midpoint_kind == "public"):
        raise ValueError("a public centre and a plan made with centred=True go together")
    # counted on each side of a public centre the mean lies near (AssumedTail.signed)
    signed = counted_each_side(rules.tail)
    if signed and public_centre is None:
        raise ValueError("a tail counted on each side needs a public centre")
    gamma = options.gamma
    where = locate(
        matrix,
        plan=plan,
        names=names,
        rng=rng,
        gamma=gamma,
        rules=rules,
    )
    if (tail is None or stated_moment is not None) and scale is None and where.refined:
        where = dataclasses.replace(where, tail=skew_tails(where))
    plan = where.plan
    users = where.per_column_users
    undefined = where.empty
    # the miss bound for the users the private count finds (post-processing of N̂): where the
    # medians all but surely missed them even for N̂ + 2 sd users, a number would look precise
    # and be wrong. A weighted count W <= N cannot say how many users there are; the models
    # weight users only after an unweighted release over the same users has checked them, so
    # a weighted release takes the plan's bound at n.
    found = users if user_weights is None else np.full(d, float(n))
    miss = plan.miss_given(found)
    lost = (plan.miss_given(found + 2.0 * where.users_sd) > MAX_MISS) & ~undefined
    # most users at 0 and too few others for the scale's median
    # (:func:`~dplong.privacy.scale.scale_stage`)
    sparse = where.sparse & ~undefined & ~lost
    unfound = lost | sparse
    # the tail count's share is sized for the users it reads, at the count's plausible high
    # end (:func:`~dplong.privacy.budget.tail_share`), in the column with the fewest: its
    # resolution is a share of a column's users, and the one count serves every column. Sized
    # for the largest, a column of a quarter of the users (one level of `by=`) had a
    # threshold of 6 % of its users, and a lognormal tail clipped under it moved its mean by
    # up to 7 SEs unwarned (an audit; docs/accuracy.md)
    reads = tail_users(where, found + 2.0 * where.users_sd)[~(undefined | unfound)]
    plan = with_tail(
        plan,
        measured=bounds is None and scale is None and measures_tail(rules.tail),
        users=float(np.min(reads)) if reads.size else float(n),
        signed=signed,
    )
    unsure = implausible(
        midpoint=where.midpoint,
        sd=where.sd,
        # a public centre is no median: it cannot miss, nor be shared
        alone=np.zeros(d, dtype=bool)
        if where.scan is None or plan.midpoint_kind == "public"
        else where.scan.vacant,
        # no more users than n have a statistic (a public fact): a count above n is its noise
        miss=plan.miss_given(np.minimum(found, n)),
    )
    with np.errstate(over="ignore", invalid="ignore"):  # a centre or scale missed by hundreds
        # of magnitudes: figures that overflow (a square of the scale, in the bias bound)
        far_off = ~np.isfinite(3.0 * where.sd + where.centre_error)
        # read by the tail model's bias bound, and by the spread a second moment would give
        if (bounds is None and stated_moment is None) or plan.moment_share > 0:
            far_off |= ~np.isfinite(where.sd**2)
    # withheld whatever the final draw says (released facts): these columns get no share of
    # the final stage and no draw. PLAN shares the budget by radius, and a far-off column's,
    # the largest, took over half of it from the columns that are released (a user-level
    # curve's end point, missed at 2,000 users and ε = 1: the other points' noise doubled)
    live = ~(undefined | unfound | where.doomed | unsure | far_off)
    if bounds is None:
        radius, budget = _final_radius(
            where,
            weights,
            plan,
            live,
            rules.relative,
            stated_moment,
            floor=_skew_floor(where.sd, plan, rules.tail),
        )
    else:  # the public bounds are the interval: nothing is clipped under the assumption
        radius = (bounds[1] - bounds[0]) / 2.0
        budget = plan.final_budget(radius, weights, refined=where.anchor is not None, live=live)
    mean_budget, moment_budget = budget.split(plan.moment_share)
    # the tail rule: the tail the bulk's scale cannot see, measured
    # (:func:`~dplong.privacy.tails.tail_rule`)
    tails = tail_rule(
        matrix,
        where,
        plan,
        names,
        (radius, mean_budget, moment_budget),
        rng,
        weight_roots(user_weights),
        # an assumed tail model is checked against what it puts beyond the rungs
        assumed=rules.tail.kind if isinstance(rules.tail, AssumedTail) else None,
        signed=signed,
        live=live,
        # a heavy tail's sides counted apart, where the interval may sit off the centre: not
        # on a declared support, whose end cuts the empty side for free, nor where a weighted
        # second moment is read about the centre (a moved centre would read as spread)
        sided=lower is None and (user_weights is None or moment_budget is None),
    )
    radius, mean_budget = tails.radius, tails.mean_budget
    # the tail model of each column's bias bound: the exponential where the count found a
    # moderate tail (the clip stays the located model's: a symmetric tail loses little to it)
    kinds = tails.tail(where.tail)
    # the interval's middle (``centre``) and the anchor the mean is read from: the same but
    # where a support's end moves the interval up or cuts it
    # (:func:`~dplong.privacy.projection.supported_centre`, ``support_window``)
    centre = where.centre
    anchor = centre if where.anchor is None else where.anchor
    # the located interval's half-width w: its bias bound holds for every window on a support
    # whose upper clip is at c + w or beyond (no user lies below the support's end)
    located = radius
    if tails.shift is not None:  # a heavy tail's long side clipped farther out than its short
        # one (its sides counted): the mean stays read from the centre, and the bulk's model
        # clips at the nearer end
        centre = where.centre + tails.shift
        located = radius - np.abs(tails.shift)
    # a weighted second moment is read about the centre (the offset's share is not released):
    # a moved centre would read as spread, so a release that buys one keeps its centre
    # within public bounds (which hold every statistic) the interval is theirs: a support's
    # end moves nothing, and the sum is read from its rough mean (``where.anchor``)
    if lower is not None and bounds is None and (user_weights is None or moment_budget is None):
        # an anchor moved by s adds s times the count's relative noise to the mean's: at most
        # SHIFT_COST of the sum's own noise
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            reach = np.nan_to_num(
                SHIFT_COST * mean_budget.noise_sd(2.0 * radius) / where.users_sd, nan=np.inf
            )
        if user_weights is None:  # the interval moves by up to w about its anchor for free
            with np.errstate(over="ignore"):  # a radius near the doubles' edge: inf reach
                centre = supported_centre(anchor, radius, lower, radius + reach)
            if bounds is None:
                # a measured heavy tail's clip was balanced against its noise by the tail
                # rule: on the support its empty lower part is cut instead, the same clip
                # (and bias bound) at less noise (about half for a long right tail); a light
                # column moves up, clipping farther out a tail its model may not see
                cut, half = support_window(anchor, radius, lower)
                cut_off = tails.heavy & (half < radius)
                centre, radius = np.where(cut_off, cut, centre), np.where(cut_off, half, radius)
            anchor = np.fmax(anchor, centre - radius)
        else:
            centre = anchor = supported_centre(anchor, radius, lower, reach)
    with np.errstate(invalid="ignore"):  # in [0, w]: the anchor stays inside the interval
        # (clipped: the middle rebuilt from the support's end may round a unit past it)
        shift = np.clip(np.nan_to_num(centre - anchor, nan=0.0), -radius, radius)
    # no user lies below a support's end: no mean can be at an interval's edge there. Read
    # off the located interval, which reached it (not the window rebuilt from it, whose lower
    # end may round a unit above a nonzero end)
    with np.errstate(invalid="ignore"):
        floor_edge = np.full(d, False) if lower is None else where.centre - located <= lower
    root = weight_roots(user_weights)
    clipped = centred(matrix, centre, radius, root)
    final = release_clipped(anchored(clipped, ~np.isnan(matrix), shift), radius, mean_budget, rng)
    entries = [
        *where.entries,
        *tails.entries,
        *mean_entries("mean", names, mean_budget.epsilon, mean_budget.rho, final, n),
    ]
    spread = where.sd
    if moment_budget is not None:  # the clipped values' own spread: honest under heavy tails
        moment, half = release_second_moment(
            clipped, ~np.isnan(matrix), radius, moment_budget, rng, root
        )
        entries += mean_entries(
            "second moment", names, moment_budget.epsilon, moment_budget.rho, moment, n
        )
    # the mean of values clipped to ±w lies in ±w: projecting onto it is post-processing, and
    # keeps a noisy count from blowing the ratio up. ``offset`` is from the anchor, ``inside``
    # from the interval's middle; the anchored sum is the released one plus n s (anchored)
    with np.errstate(invalid="ignore"):
        offset = np.clip((final.total + n * shift) / users, shift - radius, shift + radius)
        inside = offset - shift
    # a mean at the edge of its interval says the interval missed the data (a centre beyond its
    # allowance: a bad event); its number would look precise and be wrong, so it is withheld.
    # Were every user at the edge, |offset| would be w N / N̂ plus noise: its plausible low end
    # (MISSED_SDS sds of the count and of the sum) also marks a miss, down to NEAR_SHARE w.
    edge = radius * (1.0 - MISSED_SDS * where.users_sd / users) - MISSED_SDS * final.sd / users
    share = np.minimum(MISSED_SHARE, np.maximum(NEAR_SHARE, edge / radius))
    # a heavy tail's sides clipped apart: each end as far from the located centre as its side's
    # clip, from which the mean is read (the same ends about the middle where they are one)
    side = np.zeros(d) if tails.shift is None else tails.shift
    located_offset = inside + side
    missed = (
        (
            (located_offset >= share * (radius + side))
            | ((located_offset <= -share * (radius - side)) & ~floor_edge)
        )
        & ~undefined
        & ~unfound
        & (bounds is None)
    )
    ledger = settle(accountant, entries, plan)
    crowded = np.zeros(d, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):  # a far miss: infinite figures
        if moment_budget is not None:
            second = np.clip(half + moment.total / users, 0.0, radius**2)
            # about the mean, as a centre may be off it by design (supported_centre); weighted,
            # about the centre (Σ w_u² (x_u - c)² / W: the offset's share, o² Σ w_u² / W, is not
            # released, and leaving it in errs on the safe side)
            about = second - (inside**2 if root is None else 0.0)
            # the clipped values spreading far beyond the scale the interval was sized on: the
            # private scale saw only part of the users (most at one value, or a tail far heavier
            # than its model), many others were clipped, and the bias bound would not hold. At
            # least CROWDED_SPREAD σ̂ and CROWDED_SHARE w even EDGE_SDS noise sds down (a normal
            # column clipped at w = σ keeps 0.6 σ²; one split between a value and ±w, w / √2)
            low = about - EDGE_SDS * moment.sd / users
            crowded = (
                (low > np.maximum((CROWDED_SPREAD * where.sd) ** 2, (CROWDED_SHARE * radius) ** 2))
                & (scale is None)
                & ~undefined
                & ~unfound
                & ~missed
            )
            # the variance of the clipped values, or σ̂² if larger (its noise is one-sided safe)
            spread = np.sqrt(np.maximum(about, where.sd**2))
    with np.errstate(over="ignore", invalid="ignore"):  # a far miss overflows its figures
        estimate = anchor + offset
        total_sd = np.sqrt((final.sd / users) ** 2 + (np.abs(offset) * where.users_sd / users) ** 2)
        if bounds is not None:  # values in [a, b] vary by (μ - a)(b - μ) at most (Bhatia and
            # Davis 2000), at the mean the release allows nearest the middle: EDGE_SDS of its
            # noise and sampling error off the estimate, the latter from Popoviciu's (b - a)/2
            # sd first, then from the bound itself (each step still above the fixed point a
            # mean that far off would need). A 0/1 outcome's share p then has sd about
            # √(p(1 - p)) where (b - a)/2 said 1/2
            for _ in range(BOUNDED_STEPS):
                reach = EDGE_SDS * np.hypot(total_sd, spread / np.sqrt(users))
                nearest = np.clip(centre, estimate - reach, estimate + reach)
                spread = np.minimum(spread, np.sqrt((nearest - bounds[0]) * (bounds[1] - nearest)))
            # a mean of values within the bounds lies within them (post-processing that only
            # brings the estimate nearer)
            estimate = np.clip(estimate, bounds[0], bounds[1])
        sampling_sd = spread / np.sqrt(users)
        bias = (
            np.zeros(d)
            if bounds is not None
            # a window moved or cut on a support's end (supported_centre, support_window)
            # keeps its upper clip at c + w or beyond and the lower one where no user is: the
            # bound for the located interval still holds, and is kept (not tightened by a
            # move: the tail models of squares are the weak link, and wage-like coverage fell
            # from 0.933 to 0.920 when it was)
            else (
                clipping_bias(where.sd**2, located, where.centre_error, tail=kinds)
                if stated_moment is None
                else moment_bias(
                    stated_moment.bounds(d), stated_moment.k, located, where.centre_error
                )
            )
            * bias_factor(user_weights, users, n)
        )
        # a measured heavy tail: the mass beyond the final clip, extrapolated from the users
        # the tail stage found beyond its rung (:func:`~dplong.privacy.tails._tail_radius`);
        # where a support's end moved the interval up by m, the upper clip is w + m from the
        # located centre and no user lies below the lower one, so the mass beyond w + m bounds
        # the bias
        moved = np.nan_to_num(centre - where.centre, nan=0.0)
        # with weights the count and the clip are of the standardised √w_u (x - c), and a
        # user's share of the weighted sum is √w_u <= 1 times its standardised excess: the
        # bound on their total, over W, holds as it is (bias_factor is for a per-user bound)
        beyond = tails.beyond(radius, moved, users)
        bias = np.where(tails.heavy | tails.exceeded, np.maximum(bias, beyond), bias)
    # a number whose error figures overflow (the medians missed by hundreds of magnitudes) says
    # nothing: withheld like a missed one; so is one its own released figures call implausible
    unbounded = overflowed(estimate, total_sd, sampling_sd, bias)
    # heavy squares: no Pareto tail of the responses bounds what their clip cut (AssumedTail)
    endless = tails.heavy & (isinstance(rules.tail, AssumedTail) and rules.tail.squares)
    bias = np.where(endless, np.inf, bias)
    # one cause per withheld column, in this order: the edge, overflowing figures, a scale
    # below the values' resolution, a midpoint beside the users, then the plausibility rule
    # (a column without a draw has no figures of its own: its cause is the earlier stage's)
    kept = ~undefined & ~unfound & ~crowded
    overflow = unbounded & kept & ~missed & (live | far_off)
    coarse = where.unresolved & kept & ~missed & ~overflow
    aside = np.zeros(d, dtype=bool) if where.beside is None else where.beside
    aside = aside & kept & ~missed & ~overflow & ~coarse
    collapsed = np.zeros(d, dtype=bool) if where.collapsed is None else where.collapsed
    collapsed = collapsed & kept & ~missed & ~overflow & ~coarse & ~aside
    unsure = unsure & kept & ~missed & ~overflow & ~coarse & ~aside & ~collapsed
    at_edge = missed
    missed = at_edge | overflow | coarse | aside | collapsed | unsure
    withheld = undefined | unfound | missed | crowded  # no number, so no error figures either

    def shown(values: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.where(withheld, np.nan, values)

    with np.errstate(over="ignore"):  # a far miss's spread: its square is public as inf
        variance = where.sd**2

    unseen = None if where.scan is None else where.scan.unseen & ~withheld
    # the bias bound of an estimated scale rests on the bulk's tail model where no count
    # checked it: blind, or none affordable (an assumed tail kind's warning says so already,
    # :func:`~dplong.privacy.tails.unchecked_notes`);
    # not of a column taken as 0 because its count saw nobody off 0 (``unseen``: withheld)
    seen = True if unseen is None else ~unseen
    light = ~tails.heavy & ~withheld & seen
    # the users a tail count counts (each once, whatever its weight: at most n with weights)
    counted = tail_users(where, found)
    # the scale estimated, no bounds and no tail stated or assumed: the bulk's model decides
    estimated = bounds is None and scale is None
    modelled = estimated and rules.tail is None
    # a count run only for a declared support sees heavy tails alone: what it leaves unmarked
    # is as unchecked as where none runs (:func:`~dplong.privacy.tails.coarse_count`), an
    # assumed tail kind's too (where none runs, the block's note says so: its tail is not the
    # bulk's model); PoissonMean's exponential rates, Pareto (2) at 500 users and ε = 1, missed
    # unwarned in 18 of 100 releases (docs/accuracy.md)
    for_support = bool(plan.tail) and coarse_count(plan)
    checked = bool(plan.tail) and not for_support
    assumed = estimated and isinstance(rules.tail, AssumedTail)
    model = rules.tail.described if isinstance(rules.tail, AssumedTail) else "near-normal"
    unchecked = (
        blind_columns(tails.threshold, counted, light)
        if checked
        else light & (modelled or (for_support and assumed))
    )
    # unchecked: a warning (:func:`~dplong.privacy.tails.unchecked_warnings`); among the users
    # off 0 where most users are 0
    blind_off_zero = unchecked & (counted < found)
    # a skewed column among the others, by its released mean's distance from its median in
    # plug-in sds: one whose tail no count checked, and one whose clip and bias bound rest on
    # the near-normal plug-in though the tail count ran (it marks heavy tails, not skew: too
    # light a skew went unmarked, and exponential user means of 1,000 users at ε = 1 were
    # covered in 79 % of releases, every miss silent; benchmarks/skewed.py --only moderate);
    # and one the count found moderate, whose exponential bound is as much a model of the
    # bulk (zero-heavy counts at 1,000 users, ε = 1: 14 of 30 such intervals missed by up to
    # 9 SEs, the clip cutting about three times the bound). One no count checked carries the
    # unchecked warning already: its bar is the lower UNCHECKED_SKEW_SHARE, but for an assumed
    # kind's (an exponential's own mean lies 0.43 plug-in sds above its median)
    seen = unchecked & ~blind_off_zero
    bar = np.where(seen, SKEW_SHARE if assumed else UNCHECKED_SKEW_SHARE, SKEW_SHARE)
    symmetric = np.isin(np.broadcast_to(np.asarray(kinds), (d,)), SYMMETRIC)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # a far miss: inf
        offset = (estimate - where.midpoint) / where.sd
        skewed = skewed_columns(
            offset,
            total_sd / where.sd,
            seen | (light & ~blind_off_zero & (symmetric | tails.moderate) & modelled),
            share=bar,
        )
        # their clip cut the long side by more than the near-normal bound sees: the bound
        # becomes the exponential model's, about a centre off the mean by the released offset
        # (post-processing; the warning stays, as a heavier tail can hide more)
        far = clipping_bias(
            (EXPONENTIAL_SPREAD * where.sd) ** 2,
            located,
            where.centre_error + np.abs(offset) * where.sd,
            tail="exponential",
        )
        bias = np.where(skewed, np.fmax(bias, far * bias_factor(user_weights, users, n)), bias)
        skew = skewed_notes(names, skewed, offset, bias, offers=rules.offers, model=model)
    # the skewed ones' warning says as much
    unchecked_notes = unchecked_warnings(
        names,
        unchecked & ~skewed,
        blind_off_zero,
        why="coarse" if for_support else "blind" if plan.tail else "unaffordable",
        remedy=stated_remedy(rules.offers),
        model=model,
    )
    # a stated scale would claim the tail the count found heavier: a moment bound is the remedy
    tail_remedy = stated_remedy(rules.offers & {"tail"})
    return Release(
        names=names,
        estimate=shown(estimate if unseen is None else np.where(unseen, 0.0, estimate)),
        noise_sd=shown(total_sd),
        noise_scale=final.scale / users,
        noise_kind=budget.kind,
        sampling_sd=shown(sampling_sd),
        bias=shown(bias),
        interval=np.stack([centre - radius, centre + radius], axis=1),
        midpoint=where.midpoint,
        scale=variance,
        users=np.atleast_1d(where.users),
        users_sd=where.users_sd,
        privacy=ledger,
        n=n,
        variant="default (refined)"
        if where.refined
        # the midpoint's check measured the centre's error (it sized the interval)
        else "default (checked)"
        if where.beside is not None and plan.ranked
        else "default",
        bad_events=np.minimum(gamma * (2.0 if where.refined else 1.0) + miss, 1.0),
        notes=plan.notes
        + (
            ()
            if user_weights or rules.partial_users
            else user_notes(where.users, where.users_sd, n, names, undefined)
        )
        + empty_notes(names, undefined)
        + lost_notes(
            names, lost, miss, few_users(where.users, where.users_sd, n, d) & (user_weights is None)
        )
        + where.scale_notes(names, sparse=sparse, shown=~withheld)
        + heavy_notes(
            names,
            tails.heavy & ~withheld,
            bias,
            radius,
            centre,
            signed=signed,
            remedy=tail_remedy,
        )
        + clips_many_notes(names, tails.clips_many & ~withheld, tails.clipped, n)
        + leaning_notes(names, tails.leaning & ~withheld, tails.excess)
        + crowded_notes(names, crowded)
        + missed_notes(names, at_edge, overflow, coarse, where.midpoint)
        + tiny_notes(names, (where.sd < TINY_SCALE) & ~withheld & seen)
        + beside_notes(names, aside, collapsed)
        + implausible_notes(names, unsure)
        + skew
        + unchecked_notes,
        assumptions=moderate_assumptions(names, tails.moderate & ~withheld)
        + exceeded_assumptions(
            names, tails.exceeded & ~withheld & (True if unseen is None else ~unseen), kinds
        )
        + lump_assumptions(
            names,
            # not where the clip cuts many: its warning says more
            light
            & ~unchecked
            & ~tails.moderate
            & ~tails.exceeded
            & ~tails.clips_many
            & bool(plan.tail),
            tails.threshold,
            counted,
            signed=signed,
            remedy=tail_remedy,
        ),
        failed=missed | unfound | crowded,
        weighted=user_weights is not None,
        unseen=unseen,
        skew_notes=skew,
        unchecked_notes=unchecked_notes,
        # one-sided only where nothing bounds the cut (heavy squares): elsewhere the bound's
        # lower half also holds the sampling sd that clipped values understate (docs/design)
        floored=floor_edge & endless & ~withheld,
    )


def implausible(
    *,
    midpoint: NDArray[np.float64],
    sd: NDArray[np.float64],
    alone: NDArray[np.bool_],
    miss: NDArray[np.float64],
) -> NDArray[np.bool_]:
    """The plausibility rule: where a release's own figures say its number is not what its
    error figures claim, so that it is withheld (NaN with a note) rather than printed, plotted
    or given a p-value.

    A private median on the log grid that misses lands on an arbitrary cell, up to hundreds of
    magnitudes from the data; the interval, the noise and the error figures then scale with it
    (an estimate of -6e65 with an SE of 1e66 is "honest", and useless). Two released facts say
    so. ``miss`` is the bound on the medians' miss given the private count, at most n (the
    bad-event probability the results report, less γ, where the count is below n): above
    :data:`~dplong.privacy.budget.DOUBT_MISS` the number is more likely off than not.
    ``alone`` marks the columns whose scale stage counted no user off one cell of ``|x - m̂|``
    or far inside it, nor in that cell (:attr:`~dplong.privacy.scale.ScaleScan.vacant`;
    midpoints that are medians): the users share one value, or the scale's median landed far
    above all of them. A value shared at the midpoint lies in the midpoint's cell, so its scale
    ``sd`` (σ̂) is at most that cell's half-width over the MAD factor; a scale far above that
    (:func:`~dplong.privacy.scale.far_above`) is the median's miss, and the column is withheld.
    A scale wider than a shared value's but below that is only wider than needed: its figures
    say so, and it is kept; so is one whose cell holds users (a second value: users at 0 and 1
    in equal shares, about a midpoint among the cells between them). A midpoint that missed
    every user by D with a scale of about D is the midpoint's check's to find
    (:func:`~dplong.privacy.locate.locate`, ``beside``): this rule cannot tell it from users
    spread that far.

    Every input is a released number or a post-processing of one (the scale stage's verdict is
    of its private count): the rule is post-processing, of sensitivity 0, and costs no budget.

    Examples
    --------
    A scale of 1e60 around a midpoint of 0.5 that the scale stage found alone is a miss; a
    scale within the midpoint's cell is a shared value; a scale of 15 about 80 is kept; a
    release whose medians miss with probability 0.7 is withheld whatever its scale:

    >>> import numpy as np
    >>> from dplong.privacy.engine import implausible
    >>> implausible(midpoint=np.array([0.5, 0.5, 80.0, 0.5]),
    ...             sd=np.array([1e60, 1e-4, 15.0, 0.1]),
    ...             alone=np.array([True, True, True, False]),
    ...             miss=np.array([0.0, 0.0, 0.0, 0.7])).tolist()
    [True, False, False, True]
    """
    return np.asarray((alone & far_above(midpoint, sd)) | (miss > DOUBT_MISS))


def overflowed(*figures: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Where any of a release's figures is not finite: a number whose error figures overflow
    (a centre missed by hundreds of magnitudes) says nothing, and is withheld."""
    return np.asarray(~np.logical_and.reduce([np.isfinite(f) for f in figures]))


def _skew_floor(
    sd: NDArray[np.float64], plan: ReleasePlan, tail: TailOption | None
) -> NDArray[np.float64] | None:
    """The radii's floor where a tail count runs: its rung in the scales ``sd``, so that
    nothing the clip cuts lies between the two unseen by both the count and the bias bound. A
    normal plug-in's accurate radius can sit nearer, where a mild skew cuts the long side by
    more than the plug-in bound allows and the interval misses unwarned (docs/accuracy.md). A
    rough mean read against a median is no substitute: its noise lets skews that matter
    through (:func:`~dplong.privacy.tails.skew_tails`'s bar). None where no count runs or where
    the model assumes a tail kind (its own bound and rung). Public facts and released numbers."""
    if not plan.tail or isinstance(tail, AssumedTail):
        return None
    with np.errstate(over="ignore"):  # a scale near the largest double: inf, capped later
        return rung_sds("gaussian") * sd


def _final_radius(
    where: Location,
    weights: NDArray[np.float64],
    plan: ReleasePlan,
    live: NDArray[np.bool_] | None = None,
    relative: bool = False,
    moment: Moment | None = None,
    *,
    floor: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], FinalBudget]:
    """Accurate radii and the final budget shared by them (two rounds: radii ↔ shares) over the
    ``live`` columns (default all; the others get none, their radii unused);
    ``relative``: shared as if every radius were 1 (each column's noise in its own units);
    under a stated ``moment`` bound, the radii balancing its bias against the noise, never
    inside the bulk's (:func:`~dplong.privacy.radius.moment_radius`); never inside ``floor``
    (the tail count's rungs, where the count is the only check of a skew)."""

    def shared(radius: NDArray[np.float64]) -> FinalBudget:
        units = np.ones_like(radius) if relative else radius
        return plan.final_budget(
            units, weights, refined=where.refined, fallback=where.fallback, live=live
        )

    sd, error, users = where.sd, where.centre_error, where.per_column_users
    # fmin: a centre missed by hundreds of magnitudes has NaN figures; its radius is the
    # largest (the release then withholds the column, its error figures not being finite)
    with np.errstate(over="ignore", invalid="ignore"):
        radius = np.fmin(3.0 * sd + error, MAX_RADIUS)
    budget = shared(radius)
    for _ in range(2):
        per_width = budget.noise_sd(2.0 / users)
        with np.errstate(over="ignore", invalid="ignore"):
            accurate = accurate_radius(sd**2, error, per_width, tail=where.tail)
            if moment is not None:
                bounds = moment.bounds(len(sd))
                accurate = moment_radius(bounds, moment.k, error, per_width, accurate, TAIL_REACH)
            if floor is not None:
                accurate = np.fmax(accurate, floor)
        radius = np.fmin(accurate, MAX_RADIUS)
        budget = shared(radius)
    # widened after the shares are set: a column's free width takes no budget from the others
    per_width = budget.noise_sd(2.0 / users)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        free = np.sqrt(FREE_NOISE) * sd / np.sqrt(users) / per_width
        radius = np.fmin(np.fmax(radius, np.fmin(free, FREE_REACH * sd + error)), MAX_RADIUS)
    return radius, budget
