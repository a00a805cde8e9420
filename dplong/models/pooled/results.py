"""The results of a fit from released sufficient statistics: β̂, its noise draws and its
clustered covariance unscaled to the columns' units, the coefficients nothing bounds withheld,
and the fit's public notes and assumptions (the last step of ``docs/design/pooled.md``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.formula.terms import uncentred_powers
from dplong.models.pooled.frame import OUTCOME_ROOM, _Scaling
from dplong.models.pooled.located import RangeFlags
from dplong.models.pooled.release import SKEW_WIDEN, UNSEEN_WIDEN, SkewCheck, _Statistics
from dplong.privacy.accounting import PrivacyLedger
from dplong.privacy.budget import NOTE_MISS, StatisticsBudget
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.ranges import (
    FAR_RUNG,
    HISTOGRAM_MISS,
    NEAR_RUNG,
    ONE_SIDED,
    OUTCOME_SLACK,
    REACH_GRID,
    RUNG_SHARE,
    TINY_REACH,
    WIDE_RUNGS,
    located_miss,
    reach_rungs,
)
from dplong.privacy.row_cap import CAP_TAIL, RowCap
from dplong.results import RegressionResults

if TYPE_CHECKING:
    from dplong.models.pooled.estimator import PooledOLS

__all__: list[str] = []


def _statistics_results(
    model: PooledOLS,
    scaled: _Scaling,
    release: _Statistics,
    ledger: PrivacyLedger,
    options: ReleaseOptions,
    cap: int,
    ranges: NDArray[np.float64],
    plan: StatisticsBudget,
    *,
    reported: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
    constant: tuple[str, ...] = (),
    flags: RangeFlags | None = None,
    row_cap: RowCap | None = None,
) -> RegressionResults:
    """``model``'s results: β̂, its noise draws and its covariances unscaled to the
    ``ranges`` (the columns', then the outcome's) the fit clipped to; ``reported``: the
    formula's coefficients in order and those absorbed (declared ``between``: left out of
    the releases, no estimate), where the model fitted has fewer columns than its formula;
    ``constant``: the formula's coefficients absorbed because the released counts found them
    (nearly) constant within persons (left out of the releases after the ranges, no
    estimate; and then no other coefficient either, "omitted regressor"); ``flags``: those
    of the ranges found privately (:class:`RangeFlags`): where one missed its data every
    coefficient is withheld; a narrow one (a sliver of its column) withholds its regressor's
    coefficient, or every one where it is the outcome's; one that clips many persons a note
    names, and the coefficient of a regressor whose range it is is withheld (a slope on its
    clipped values is that of another regressor, on another scale);
    ``row_cap``: the cap ``cap`` where it was found privately (the assumptions say so)."""
    missed, heavy, narrow, one_sided, guarded, some, widened, unseen = (
        RangeFlags.none(len(model._names)) if flags is None else flags
    )
    positions = model._reported
    index = pd.Index([model._design.columns[j] for j in positions])
    order, absorbed = reported or (tuple(index), ())
    full = pd.Index(order)
    beta, noise_sd, sampling_sd, bias, unbounded, covariance = _unscaled(
        scaled, release, len(plan.rho) - 3
    ).at(positions)
    clipped = _missed(positions, missed)
    # a narrow regressor's slope is on another scale; a narrow outcome's, every one
    sliver = (narrow[:-1][positions] | narrow[-1]) & ~clipped
    short = _clips_many(positions, heavy) & ~(clipped | sliver)
    # the Newton steps grew (released sums): β̂ is no fixed point, and none of it an estimate
    grew = np.full(index.size, release.grew) & ~(clipped | sliver | short)
    # a regressor the counts found (nearly) constant may change for a few persons: left out,
    # it biases the others through its omission, which nothing bounds (PanelOLS: _absorbing)
    omitted = np.full(index.size, bool(constant)) & ~(clipped | sliver | short | grew)
    lost = clipped | sliver | short | grew | omitted
    for values in (beta, noise_sd, sampling_sd, bias):
        values[lost] = np.nan
    covariance[lost, :] = np.nan
    covariance[:, lost] = np.nan
    unbounded &= ~lost
    histograms = plan.histograms_alone  # the ranges' route, for the notes' wording
    notes = _missed_notes(model, index[clipped], missed, histograms)
    notes += _narrow_notes(model, index[sliver], narrow)
    notes += _grew_notes(index[grew])
    notes += _withheld_notes(
        model, index[unbounded], release.pilot.ridge, cap, row_cap, _unheld_levels(model, release)
    )
    if not unbounded.any() and release.pilot.ridge == 0.0:  # else a note says more already
        estimated = positions[np.isfinite(beta)]
        notes += _collinear_notes(_condition_index(scaled, release, estimated))
    notes += _found_notes(model, plan)
    heavy_notes = _heavy_notes(
        model,
        heavy,
        index[short],
        int(clipped.sum()) < len(index),
        (guarded | histograms, widened),
        plan.epsilon,
    )
    notes += heavy_notes
    # (a sliver clips by design, and its own note says so)
    released = bool(np.isfinite(beta).any())
    clips_some = np.where(narrow, 0.0, some)
    notes += _some_notes(model, clips_some, released, widened, plan.epsilon)
    widened_notes = released and bool((clips_some[widened] > 0.0).any())
    # the outcome's, where no note names its clipping (one naming a regressor's says nothing of it)
    if heavy[-1] <= 0.0 and int(clipped.sum()) < len(index):
        notes += _one_sided_notes(model, bool(one_sided[-1]))
    notes += _constant_notes(constant)
    notes += _skewed_notes(release.skew)

    def series(values: NDArray[np.float64], label: str, fill: float = math.nan) -> pd.Series:
        return pd.Series(values, index=index, name=label).reindex(full, fill_value=fill)

    # a range that missed its data is no range of it: the summary names it, with no numbers
    # (a reach far beyond the persons would print as 10^9 or the like)
    bounds = ", ".join(
        f"{name}: its range found privately missed its data"
        if lost
        else f"{name} in {_interval(lo, hi)}" + _found_where(bool(found), bool(by), bool(wide))
        for name, (lo, hi), found, lost, by, wide in zip(
            model._names, ranges, model._found_privately, missed, guarded, widened, strict=True
        )
        if name != "Intercept"
    ) + _room(model._names[-1], ranges[-1], scaled.outcome)
    declared = (
        (
            "declared constant within persons (between=), absorbed by the person effects, no "
            f"estimate: {', '.join(absorbed)} (PooledOLS or RandomEffects estimate them)",
        )
        if absorbed
        else ()
    )
    return RegressionResults(
        model=model.spec,
        formula=model.formula,
        params=series(beta, "params"),
        noise_scale=series(noise_sd, "noise scale"),
        noise_sd=series(noise_sd, "noise sd"),
        noise_law="gaussian",
        sampling_sd=series(sampling_sd, "sampling sd"),
        bias=series(bias, "bias"),
        projection_interval=pd.DataFrame(np.nan, index=full, columns=["lower", "upper"]),
        failed=pd.Series(False, index=full, name="failed"),
        privacy=ledger,
        nobs_users=model.nobs_users,
        # every person contributes (n is public): nothing is counted
        users=pd.Series([math.nan], index=["users with a statistic"], name="users"),
        users_sd=math.nan,
        variant="sufficient statistics",
        assumptions=(
            f"ranges of the {model._clipped} (values outside are clipped): {bounds}",
            *_unseen_assumption(model, unseen),
            f"standard errors clustered by person, plus the privacy noise; {model._weighting(cap)}",
            *(row_cap.assumption if row_cap is not None else ()),
            *declared,
            *(
                (
                    "the persons' scores beyond their clipping radius were skewed (the "
                    f"released skew check): the last Newton step clipped at {SKEW_WIDEN:g} times "
                    "that radius, and the bias bound leaves out what it clips beyond",
                )
                if release.skew == "widened"
                else ()
            ),
            *(
                (
                    "the released skew check, which sees only a pull of several standard "
                    "errors, found none: the last Newton step clipped the persons' scores at "
                    f"{UNSEEN_WIDEN:g} times their Cauchy–Schwarz radius, where a skewed "
                    "outcome's clipped scores pull the estimate less, and the bias bound leaves "
                    "out what it clips beyond",
                )
                if release.skew == "guarded"
                else ()
            ),
            *(
                (
                    "the bias bound leaves out what the ranges found privately clip of the "
                    "many persons beyond them (warnings): neither the intervals nor the error "
                    "bounds hold for it",
                )
                if heavy_notes
                else ()
            ),
            *(
                (
                    "the bias bound leaves out what the ranges widened for a long tail still "
                    "clip beyond their ends (warnings)",
                )
                if widened_notes
                else ()
            ),
        ),
        warnings=notes,
        gamma=options.gamma,
        bad_events=series(np.zeros(len(index)), "bad events", 0.0),
        basis=f"{model.estimator} from released sufficient statistics",
        levels=dict(model._levels),
        covariance=pd.DataFrame(covariance, index=index, columns=index).reindex(
            index=full, columns=full
        ),
        withheld_why={
            **{str(c): "unbounded" for c in index[unbounded]},
            **{str(c): "range missed" for c in index[clipped]},
            **{str(c): "range too narrow" for c in index[sliver]},
            **{str(c): "range clips many" for c in index[short]},
            **{str(c): "steps grew" for c in index[grew]},
            **{str(c): "omitted regressor" for c in index[omitted]},
            **{c: "absorbed" for c in (*absorbed, *constant)},
        },
    )


def _grew_notes(withheld: pd.Index) -> tuple[str, ...]:
    """The note of the coefficients ``withheld`` because the Newton steps grew
    (:func:`~dplong.models.pooled.release._grew`)."""
    if withheld.empty:
        return ()
    return (
        f"{list(withheld)} withheld: the Newton steps grew instead of settling (their released "
        "score sums), so the estimate is no fixed point of them: the released X'X of the "
        "persons' core values is far from the design's along some direction, as a power or "
        "product of a column far from 0 makes it. Centre such a term (I((x - 30)**2) in "
        "place of I(x**2)) or give its public bounds (bounds={...}); a larger epsilon does "
        "not help.",
    )


class _Unscaled(NamedTuple):
    """β̂ in the columns' units, its noise sd, sampling sd, bias bound (the noise's shift plus
    the ridge's pull) and covariance (sampling plus noise), NaN where the ridge's pull is
    ``unbounded``."""

    beta: NDArray[np.float64]
    noise_sd: NDArray[np.float64]
    sampling_sd: NDArray[np.float64]
    bias: NDArray[np.float64]
    unbounded: NDArray[np.bool_]
    covariance: NDArray[np.float64]

    def at(self, positions: NDArray[np.intp]) -> _Unscaled:
        """The coefficients at ``positions`` (those the results report)."""
        return _Unscaled(
            self.beta[positions],
            self.noise_sd[positions],
            self.sampling_sd[positions],
            self.bias[positions],
            self.unbounded[positions],
            self.covariance[np.ix_(positions, positions)],
        )


def _unscaled(scaled: _Scaling, release: _Statistics, steps: int) -> _Unscaled:
    """The released β̂ and its noise draws and sampling covariance unscaled, the ridge's pull
    bounded after ``steps`` Newton steps."""
    # data near the doubles' edge (1e200) make these overflow: inf or NaN, withheld below as
    # unbounded, with no RuntimeWarning (a fit run with warnings as errors raised, an audit)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        beta = scaled.unscale(release.beta)
        corrected, uncorrected = (scaled.offset + d @ scaled.linear.T for d in release.draws)
        noise_sd = np.maximum(corrected.std(axis=0), uncorrected.std(axis=0))
        shift = corrected.mean(axis=0) - beta
        # the ridge's pull on the pilot, (Ĥ)⁻¹ λ β, at the stepped β̂ (the pilot's own β is
        # shrunk by it: at a ridge far above the design's eigenvalues it sees a tenth of it);
        # an unbounded pull is infinite
        pull = release.pilot.shrinkage_at(release.beta, steps, release.draws)
        ridge = np.nan_to_num(np.abs(scaled.linear) @ pull, nan=np.inf, posinf=np.inf)
        # the steps' fixed point solves Σ_u clip(s_u) = 0: what the radius clipped moves it
        # from pooled OLS by Ĥ^{-1/2} D with ‖D‖ at most the released clipped mass
        ridge += np.linalg.norm(scaled.linear @ release.pilot.whiten, axis=1) * release.clipped
        sampling = sampling_covariance(scaled, release)
        sampling_sd = np.sqrt(np.diag(sampling))
        # the noise's correlations are those of the law whose sds are the wider overall (the
        # one noise_sd mostly reports), scaled by noise_sd: positive semidefinite, as the
        # clustered sandwich is, so their sum is a covariance whose diagonal is bse² (a
        # coefficient the noise misses: NaN, 0)
        wider = max((corrected, uncorrected), key=lambda d: float(np.sum(np.log(d.std(axis=0)))))
        correlation = np.nan_to_num(np.atleast_2d(np.corrcoef(wider, rowvar=False)))
        np.fill_diagonal(correlation, 1.0)
        covariance = sampling + correlation * np.outer(noise_sd, noise_sd)
    # withheld (released numbers only): where the released X'X does not determine a
    # direction beyond its noise nothing bounds the ridge's pull, and an interval to the
    # doubles' edge is no estimate
    unbounded = ~np.isfinite(ridge)
    for values in (beta, noise_sd, sampling_sd, shift, ridge):
        values[unbounded] = np.nan
    covariance[unbounded, :] = np.nan
    covariance[:, unbounded] = np.nan
    return _Unscaled(beta, noise_sd, sampling_sd, np.abs(shift) + ridge, unbounded, covariance)


def sampling_covariance(scaled: _Scaling, release: _Statistics) -> NDArray[np.float64]:
    """The released person-clustered sandwich in the columns' units (every column)."""
    return np.asarray(scaled.linear @ release.sampling @ scaled.linear.T)


def _missed(positions: NDArray[np.intp], missed: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """The reported coefficients withheld for a range found privately that missed: all of
    them where any did (a column clipped whole is another regressor, e.g. its deviations'
    signs, which moves every coefficient correlated with it)."""
    return np.full(len(positions), bool(missed.any()))


def _clips_many(positions: NDArray[np.intp], heavy: NDArray[np.float64]) -> NDArray[np.bool_]:
    """The reported coefficients of regressors whose range found privately clips many persons
    (``heavy``: the columns', then the outcome's). A slope on a regressor's clipped values is
    that of another regressor on another scale: a 0/1 column whose range ends at c < 1 has its
    slope divided by c (the wage panel's `black`, its range ending at 10^-53 at ε = 4, had
    released -4.6e51)."""
    return np.asarray(heavy[:-1][positions] > 0.0)


def _unseen_assumption(model: PooledOLS, unseen: NDArray[np.float64]) -> tuple[str, ...]:
    """The limit of the counts beyond the ranges found privately (``unseen``: per column, the
    count at and below which a group beyond an end goes unseen, 0 where the range is public
    or its public cap was taken): a group about that size or smaller far out is clipped with
    no warning, as nothing in the release can tell it from none (public facts, n, the
    columns and the counts' noise, and released flags)."""
    found = unseen[unseen > 0.0]  # NaN (nothing counted) compares False: no such line
    if not found.size:
        return ()
    persons = float(found.max())
    # the within estimator's ranges are its deviations', which public bounds only cap
    remedy = (
        "public bounds that cover every value (bounds={...}) keep the ranges from clipping it"
        if model._bounds_frame
        else "a larger epsilon lowers that size (public bounds only cap the deviations' ranges)"
    )
    return (
        "the ranges found privately clip what lies beyond their ends, and the intervals "
        "leave that bias out: the released counts beyond an end see a group of persons there "
        f"only above {persons:,.0f} ({persons / model._design.n:.1%} of them) on a side, and "
        "reliably only well above (the warnings name any they found); a group about that "
        "size or smaller far out (a few persons whose "
        f"{model._clipped} are many times the others') is clipped unseen and can move the "
        f"coefficients beyond their intervals: {remedy}",
    )


def _found_where(found: bool, guarded: bool, widened: bool) -> str:
    """How the ranges line says a range was found: public (nothing), privately, by the
    histograms that guard the medians, or privately and widened to hold a long tail."""
    if not found:
        return ""
    if guarded:
        return " (found privately, by the histograms that guard the medians)"
    if widened:
        return " (found privately, widened for a long tail)"
    return " (found privately)"


def _interval(low: float, high: float) -> str:
    """A range as the notes print it, to 4 significant figures, an end within a billionth of
    the range's width of 0 as 0 (a midpoint less a reach that lands on 0 leaves -1e-17 or
    the like: no figure of the range).

    Examples
    --------
    >>> from dplong.models.pooled.results import _interval
    >>> _interval(-9.755e-18, 4.793), _interval(-3.684, 80.7)
    ('[0, 4.793]', '[-3.684, 80.7]')
    """
    tiny = 1e-9 * abs(high - low)
    low, high = (0.0 if abs(end) <= tiny else end for end in (low, high))
    return f"[{low:.4g}, {high:.4g}]"


def _room(name: str, found: NDArray[np.float64], clip: NDArray[np.float64]) -> str:
    """The ranges line's words on an outcome the scores read beyond its range
    (:data:`~dplong.models.pooled.frame.OUTCOME_ROOM`: a range found privately): the range
    clips it in the Gram matrix's pilot only."""
    if np.array_equal(found, clip):
        return ""
    return (
        f"; the Newton steps and the clustered errors read {name} out to "
        f"{_interval(*clip)} and clip each person's score instead"
    )


#: The units advice of a range found privately that missed or is a sliver: its medians' grid
#: is fine only within 2^±32 of 1 (:data:`~dplong.privacy.ranges.REACH_GRID`), and the same
#: panel in other units (an outcome times 1e12 or 1e-12) was withheld in every fit.
_FINE = [f"{2.0**k:.0e}".replace("e+0", "e") for k in (-REACH_GRID.inner, REACH_GRID.inner)]
_RESCALE = (
    "rescale a column whose values are far from units of 1 (the private ranges are found on a "
    f"grid fine between {_FINE[0]} and {_FINE[1]} in magnitude: thousands of dollars, not "
    "dollars, for a large outcome)"
)


def _missed_notes(
    model: PooledOLS, withheld: pd.Index, missed: NDArray[np.bool_], histograms: bool
) -> tuple[str, ...]:
    """The note of the coefficients withheld because a range found privately missed (by the
    medians' counts, or by ``histograms`` with no cell clearing their threshold on a side)."""
    if not len(withheld):
        return ()
    names = [name for name, m in zip(model._names, missed, strict=True) if m]
    why = (
        f"by the released count, more than {HISTOGRAM_MISS:.0%} of the persons beyond an "
        "end, whom it clips: no cell of that side's histogram of the persons' extremes held "
        "them beyond its noise, as where a column's minima or maxima straddle 0; this biases "
        "without bound"
        if histograms
        else f"by the released counts, more than {RUNG_SHARE:.0%} of the persons beyond "
        f"{FAR_RUNG:g} times its median reach, or most of a side's, whom it clips, or fewer "
        f"than half of a side's beyond {NEAR_RUNG:.3g} of it, a reach beyond them all "
        "that leaves the column constant in its frame: either biases without bound"
    )
    return (
        f"{[str(c) for c in withheld]} withheld: the range found privately for {names} missed "
        f"its data ({why}): give public bounds, {_RESCALE}, or raise epsilon.",
    )


def _narrow_notes(
    model: PooledOLS, withheld: pd.Index, narrow: NDArray[np.bool_]
) -> tuple[str, ...]:
    """The note of the coefficients withheld because a range found privately is a sliver of
    its column (``narrow``: the columns', then the outcome's)."""
    if not len(withheld):
        return ()
    names = [name for name, thin in zip(model._names, narrow, strict=True) if thin]
    others = (
        "The other coefficients are those of the regression with it replaced by the signs of "
        "its deviations from that value (a 0/1 column: itself). "
        if not narrow[-1]
        else ""
    )
    return (
        f"{[str(c) for c in withheld]} withheld: the range found privately for {names} is a "
        "sliver of its column (the released counts found nearly every person at its "
        "midpoint's value, or its range ends within "
        f"{TINY_REACH:.2g} of it on both sides: its median reaches land beside the few persons "
        "off the midpoint, as a rare 0/1 column's do), so the fit regressed a sliver of it, on "
        f"another scale. {others}Give public bounds (a 0/1 column: (0, 1)), {_RESCALE}, or "
        "raise epsilon.",
    )


def _one_sided_notes(model: PooledOLS, one_sided: bool) -> tuple[str, ...]:
    """The note of an outcome whose range found privately is ``one_sided``
    (:data:`~dplong.privacy.ranges.ONE_SIDED`, released numbers): a skewed outcome, whose long
    tail the range clips by an amount no release measures (raw spending: `xage` 8.5 SEs low
    in every fit; an outcome most persons have at 0 with a lognormal tail: the intercept's
    interval missed in most fits; docs/accuracy.md)."""
    if not one_sided:
        return ()
    name = model._names[-1]
    bounds = f"give {name}'s public bounds (bounds={{...}}) or " if model._bounds_frame else ""
    return (
        f"The range found privately for the outcome {name} reaches at least "
        f"{ONE_SIDED:g} times as far on one side of its midpoint as on the other: a skewed "
        "outcome, whose long tail the fit clips (the range in the pilot, the persons' scores "
        "in the Newton steps), or a median reach that landed far beyond the persons of that "
        "side. The interval does not include the bias that clipping causes, which no release "
        f"here measures and which can exceed it: {bounds}model a transform (np.log1p).",
    )


def _heavy_notes(
    model: PooledOLS,
    heavy: NDArray[np.float64],
    withheld: pd.Index,
    released: bool,
    route: tuple[NDArray[np.bool_], NDArray[np.bool_]],
    fit_epsilon: float,
) -> tuple[str, ...]:
    """The note of the ranges found privately (by histograms or medians, and ``widened`` or
    not: ``route``, per column) that clip many persons (released counts of the persons beyond
    them) and of the regressors' coefficients ``withheld`` for it; none where nothing is
    ``released``. The rungs are those of a fit of total ``fit_epsilon``."""
    if not released or not heavy.any():
        return ()
    clipped = _counted(model, heavy)
    # a public range spares the stage only where it is the column's frame (not PanelOLS's)
    bounds = "give public bounds that cover them (bounds={...}; a 0/1 column: (0, 1)) or "
    own = (
        f"{[str(c) for c in withheld]} withheld: a slope on a regressor's clipped values is "
        "that of another regressor, on another scale. "
        if len(withheld)
        else ""
    )
    by_histograms = route[0][heavy > 0.0]
    where = (
        "beyond an end of the range (released counts): a heavy tail, or a column whose "
        "extremes spread over more cells of the histograms than their noise sees. "
        if by_histograms.all()
        else _rung_words(
            model._design.n,
            fit_epsilon,
            route[1][(heavy > 0.0) & ~route[0]],
            outcome=bool(heavy[-1] > 0.0 and not route[0][-1] and not route[1][-1]),
        )
        + (", or beyond an end of the ranges the histograms gave" if by_histograms.any() else "")
        + " (released counts): a heavy tail, or a median reach that missed most of them. "
    )
    # the outcome's range clips it in the pilot only: the steps read it out to its room
    outcome = (
        f" (the outcome's at its range in the pilot, at {OUTCOME_ROOM:g} times the range's "
        "half-width with each person's score clipped in the Newton steps)"
        if heavy[-1] > 0.0
        else ""
    )
    return (
        f"The ranges found privately clip many persons: {clipped} have {model._clipped} "
        f"{where}{own}The {'other ' if len(withheld) else ''}coefficients are those of "
        f"the clipped values{outcome}; the interval does not include the bias that clipping "
        "them causes, which can exceed it: "
        f"{bounds if model._bounds_frame else ''}model a transform (np.log1p).",
    )


def _counted(model: PooledOLS, counts: NDArray[np.float64]) -> str:
    """The columns with a positive released count of the persons their range clips, each
    with the count and its share of n."""
    n = model._design.n
    return ", ".join(
        f"{name} (about {count:.0f} of the {n} persons, {count / n:.0%})"
        for name, count in zip(model._names, counts, strict=True)
        if count > 0.0
    )


def _rung_words(
    n: int, fit_epsilon: float, widened: NDArray[np.bool_] | None = None, *, outcome: bool = False
) -> str:
    """Where the released counts of the ranges found by medians were taken (n persons, a fit
    of total ``fit_epsilon``), for the columns flagged, ``widened`` (to hold a long tail) or
    not (None: none), the ``outcome`` among the latter or not: beyond the tail count's rung
    (the range's end at n alone, inside it where a large ε takes it further; the outcome's a
    median reach beyond: :func:`~dplong.privacy.ranges.tail_rungs`), or the last of the
    widening's."""
    reach = "times the median reach from the midpoint"
    wide = f"widened for a long tail to {WIDE_RUNGS[-1] - 1:g}"
    rung, end = reach_rungs(n)[0], reach_rungs(n, fit_epsilon)[0]  # the count's, the range's
    ends = "the range's end" if end == rung else f"inside the range's end at {end:.3g}"
    clipped = f"beyond {rung:.3g} {reach}, {ends}" + (
        f" (the outcome's {rung + OUTCOME_SLACK:.3g})" if outcome else ""
    )
    if widened is None or not widened.any():
        return clipped
    if widened.all():
        return f"beyond {WIDE_RUNGS[-1]:g} {reach}, the range {wide}"
    return f"{clipped} ({WIDE_RUNGS[-1]:g} where a range was {wide})"


def _some_notes(
    model: PooledOLS,
    some: NDArray[np.float64],
    released: bool,
    widened: NDArray[np.bool_],
    fit_epsilon: float,
) -> tuple[str, ...]:
    """The notes of the ranges found privately that clip some persons (their released count
    beyond the range's ends above its noise, below many:
    :data:`~dplong.privacy.ranges.SOME_FALSE`), and of those ``widened`` to hold a long tail
    (per column), which may still clip some beyond it (by their count before widening); none
    where nothing is ``released``. Their coefficients are released: a few persons clipped by
    about a spread move them by less than their interval, but a small group or a heavy tail
    far out by more, which no released number measures."""
    if not released or not some.any():
        return ()
    bounds = "give public bounds that cover them (bounds={...}), " if model._bounds_frame else ""
    remedy = (
        "the bias of clipping them can exceed the intervals, which do not include it: "
        f"{bounds}model a transform (np.log1p), or check the column's tails."
    )
    notes = []
    # a medians' range whose count shows some persons beyond it is widened: the others are the
    # histograms' (their count beyond the range's ends)
    clips = np.where(widened, 0.0, some)
    if clips.any():
        notes.append(
            f"The ranges found privately clip some persons: {_counted(model, clips)} have "
            f"{model._clipped} beyond an end of the range (released counts), more than the "
            f"counts' noise. Where they lie far out (a small group, a heavy tail) {remedy}"
        )
    wide = np.where(widened, some, 0.0)
    if wide.any():
        notes.append(
            f"The ranges found privately were widened to hold a long tail: "
            f"{_counted(model, wide)} have {model._clipped} "
            f"{_rung_words(model._design.n, fit_epsilon, outcome=bool(wide[-1] > 0.0))} "
            "(released counts), "
            "so the range on each such side "
            "was widened to a median reach inside the first of "
            f"{', '.join(f'{r:g}' for r in WIDE_RUNGS)} median reaches beyond which a released "
            "count shows no more than its noise (the ranges line has it). Persons beyond it "
            f"are still clipped; where they lie far out (a small group, a heavy tail) {remedy}"
        )
    return tuple(notes)


#: A declared level whose released row count is within this many noise sds of 0 may hold no
#: rows (:func:`_unheld_levels`): the released count is that level's diagonal entry of X'X.
UNHELD_SDS = 2.0


def _unheld_levels(model: PooledOLS, release: _Statistics) -> list[str]:
    """The declared levels whose released (weighted) row counts are within
    :data:`UNHELD_SDS` noise sds of 0: where a treatment-coded factor's rows are one-hot
    (pooled rows: the blocks of structural zeros), each indicator's diagonal entry of the
    released X'X is its level's row count (the frame's intercept, where the block took it in,
    the reference level's). A level no row holds leaves X'X singular along its indicator, and
    the noise spreads that direction into every coefficient. Post-processing of the released
    Gram matrix; the column names are public (the formula's)."""
    counts = np.diag(release.pilot.hessian) - release.pilot.ridge
    columns = model._design.columns
    unheld = []
    for block in model._zero_products():
        for j in block:
            if counts[j] > UNHELD_SDS * release.pilot.sigma:
                continue
            if columns[j] != "Intercept":
                unheld.append(columns[j])
            else:  # the factor's term: its indicators' names less the level
                term = next(columns[k] for k in block if columns[k] != "Intercept")
                unheld.append(f"the reference level of {term.split('[T.')[0]}")
    return unheld


def _withheld_notes(
    model: PooledOLS,
    withheld: pd.Index,
    ridge: float,
    cap: int,
    row_cap: RowCap | None = None,
    unheld: list[str] | None = None,
) -> tuple[str, ...]:
    """The note of the coefficients ``withheld`` (their ridge's pull unbounded) or, with none,
    of the released X'X's floor (its ``ridge``) where it has one; where a person counts up to
    ``cap`` rows (``max_rows``), the remedy names it where a smaller one could help: stated,
    where persons have fewer rows (unknown to the fit); found privately (``row_cap``), where
    its released counts show them (:attr:`RowCap.shorter`): X'X's noise is in proportion to
    the cap, and the signal of a person with at least its rows too. A random-effects fit's
    remedy names pooled OLS (``_quasi_demeaned``). Declared levels whose released row counts
    cannot be told from none (``unheld``, :func:`_unheld_levels`) are named first."""
    remedy = "raise epsilon or drop a collinear term."
    # a power of a column far from 0 is nearly collinear with it (age and age**2 correlate
    # 0.99 on 20-70): the formula, public, says where one may be
    powers = uncentred_powers(model.formula)
    if powers:
        remedy = (
            f"raise epsilon, drop a collinear term, or centre the power {powers[0]!r} on a "
            "public constant c near the middle of its column x: I((x - c)**2)."
        )
    if row_cap is not None and row_cap.found:
        if row_cap.shorter:
            remedy = (
                f"state a max_rows below the {cap} found privately (more than "
                f"{CAP_TAIL:.0%} of the persons have fewer rows by its count, and X'X's noise "
                f"is in proportion to it), {remedy}"
            )
    elif cap > 1:
        remedy = (
            f"state max_rows where persons have fewer than its {cap} rows (X'X's noise is in "
            f"proportion to it), {remedy}"
        )
    if model._quasi_demeaned:  # the docs' measure: pooled OLS wins where the noise dominates
        remedy = (
            "fit PooledOLS instead (its rows keep the whole between-person part, which the "
            f"quasi-demeaning shrinks to 1 - theta for the same noise), {remedy}"
        )
    if len(withheld):
        bounds = "give public bounds, " if model._located.any() and model._bounds_frame else ""
        # a stated range is the column's frame: one far wider than its values leaves the
        # column small against X'X's noise (an audit's generous bounds withheld 11 of 20)
        # (a declared factor's indicators know their ranges from the formula: no bound stated)
        stated = ~model._located & (model._ranges[:, 1] > model._ranges[:, 0])
        for columns, _ in model._blocks:
            stated[list(columns)] = False
        narrow = (
            "narrow a public bound far wider than its column's values, "
            if stated.any() and model._bounds_frame
            else ""
        )
        empty = (
            f"drop from the declared levels, or merge with another, {unheld} (their released "
            f"row counts are within {UNHELD_SDS:g} noise sds of 0, and a level no row holds "
            "leaves its coefficient undetermined and, through the noise, every other), "
            if unheld
            else ""
        )
        return (
            f"{[str(c) for c in withheld]} withheld: the released X'X does not "
            "determine them beyond its noise, so nothing bounds how far its ridge pulled "
            "them (the design is nearly collinear or varies little for this n and "
            f"epsilon{model._unidentified}): {empty}{model._unidentified_remedy}{bounds}"
            f"{narrow}{remedy}",
        )
    if ridge > 0.0:
        return (
            "The released X'X was floored at its noise (a ridge): coefficients shrunk, "
            f"within the bias bound. {remedy[0].upper()}{remedy[1:]}",
        )
    return ()


def _condition_index(scaled: _Scaling, release: _Statistics, positions: NDArray[np.intp]) -> float:
    """The condition index of the released X'X over the regressors at ``positions``, centred:
    ``√(λ_max / λ_min)`` of their correlation matrix, the columns the released cross products
    give after the intercept (``scaled.intercept``, where among ``positions``) is projected out
    (the Schur complement ``G_xx - g_x1 g_1x / g_11``). Centred, a column far from 0 for its
    spread (ages 60-70) or alone is no dependence, as it is in the uncentred index of Belsley,
    Kuh & Welsch. The released X'X is of the scaled columns (``docs/design/pooled.md``): the
    analyst's are ``X = c X_s linear⁻¹`` (c the outcome's scale, which cancels), so
    ``X'X ∝ linear⁻ᵀ X_s'X_s linear⁻¹``. Post-processing of the released Gram matrix and the
    public (or privately found) ranges."""
    inverse = np.linalg.inv(scaled.linear)
    gram = (inverse.T @ release.pilot.hessian @ inverse)[np.ix_(positions, positions)]
    own = positions == (-1 if scaled.intercept is None else scaled.intercept)
    if own.any():  # centred: the intercept projected out
        at, rest = int(np.flatnonzero(own)[0]), np.flatnonzero(~own)
        gram = gram[np.ix_(rest, rest)] - np.outer(gram[rest, at], gram[at, rest]) / gram[at, at]
    if gram.shape[0] < 2:  # one regressor (or none) is never collinear
        return 1.0
    unit = np.sqrt(np.diag(gram))
    values = np.linalg.eigvalsh(gram / np.outer(unit, unit))
    return math.sqrt(values[-1] / values[0]) if values[0] > 0.0 else math.inf


#: The condition index of the centred regressors above which they are collinear enough to say
#: so: two regressors correlated 0.98 (a variance inflation factor of 50). Measured on the
#: released X'X: the wage panel's and RAND HIE's pooled and random-effects fits 1.0-1.6,
#: `PanelOLS` of `exper` and `expersq` within men 6.7; an exact linear dependence left
#: separable only by how the ranges clipped each column 16 (`PooledOLS`, `I(exper + educ)`
#: beside both) and 100 (`PanelOLS`, `x3 = x1 + x2`).
COLLINEAR_INDEX = 10.0


def _collinear_notes(index: float) -> tuple[str, ...]:
    """The note of a released X'X whose columns are collinear (:func:`_condition_index`)."""
    if index <= COLLINEAR_INDEX:
        return ()
    return (
        f"The released X'X is ill-conditioned (condition index {index:.3g} of the centred "
        f"regressors; above {COLLINEAR_INDEX:g} they are collinear): the coefficients of the "
        "collinear columns rest on the little that separates them, which for an exact linear "
        "dependence is only how the ranges clipped each column. Drop or combine a collinear "
        "term, or give a factor a more common reference level.",
    )


def _skewed_notes(skew: SkewCheck) -> tuple[str, ...]:
    """The warning of a fit whose released skew check found the clipped scores one-sided (the
    last step clipped wider, and what it clips beyond that is measured nowhere: a lognormal
    person effect's `BetweenOLS` intercept 2-3 bse low after the wider step), or whose last
    step clipped at the Cauchy–Schwarz radius with no check affordable (``unchecked``). A
    warning, not an assumption line, as the engine's unchecked tails are
    (:func:`~dplong.privacy.tails.unchecked_warnings`): with large person effects that radius
    clips a sixth of the persons or more, and where the effects are skewed their clipped
    scores put the intercept several bse low, its interval missing in nearly every fit with
    nothing released to tell (docs/accuracy.md, "Skewed person effects in pooled rows")."""
    if skew == "widened":
        return (
            "The persons' scores beyond their clipping radius were skewed (the released skew "
            f"check): the last Newton step clipped at {SKEW_WIDEN:g} times that radius, and "
            "what a long tail puts beyond it can move the coefficients, the intercept most, "
            "past their intervals. Give public bounds, or model the outcome on a scale where "
            "it is less skewed.",
        )
    if skew == "unchecked":
        return (
            "The last Newton step clipped the persons' scores at their Cauchy–Schwarz radius, "
            "and this n and epsilon afford no check of what it clips: where the persons' "
            "effects are large and skewed (spending, income), their clipped scores can move "
            "the coefficients, the intercept most, past their intervals, and nothing released "
            "can tell. Model the outcome on a scale where it is less skewed (np.log1p), or "
            "raise epsilon (a larger n * epsilon affords the check).",
        )
    return ()


def _constant_notes(constant: tuple[str, ...]) -> tuple[str, ...]:
    """The note of the regressors the released counts found (nearly) constant within persons
    and the fit left to the person effects."""
    if not constant:
        return ()
    return (
        f"{list(constant)} absorbed by the person effects, no estimate: by the released counts "
        "of the ranges' stage, too few persons vary them within for this n and epsilon to tell "
        "from none; and no estimate of the other coefficients either, as the counts cannot "
        "tell a regressor that never changes (exact to leave out) from one that changes for a "
        "few persons, whose omission would bias the others by an amount nothing bounds. "
        "Declare them between=[...] if they never change within a person (which spends "
        "nothing on them and releases the others); PooledOLS or RandomEffects estimate them.",
    )


def _found_notes(model: PooledOLS, plan: StatisticsBudget) -> tuple[str, ...]:
    """The note of the ranges found privately: found by histograms (decided by the plan), or
    by medians that may miss the data at this n and ε."""
    if model._range_notes(plan):
        return model._range_notes(plan)
    if model._located.any() and located_miss(model._design.n, plan.median_epsilon) > NOTE_MISS:
        return (
            "The ranges found privately may miss the data at this n and epsilon (a range "
            "that misses clips every value): give public bounds or raise epsilon.",
        )
    return ()
