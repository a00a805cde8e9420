"""The private ranges stage of a fit from sufficient statistics: whether the ranges of the
columns without public bounds can be found (decided from public facts, before any noise), the
note they add, and the ranges found from every person's extremes
(:mod:`dplong.privacy.ranges`; step 1 of ``docs/design/pooled.md``), and the stage as a model's
methods (:class:`_RangesStage`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import segment_starts
from dplong.exceptions import InsufficientUsersError
from dplong.formula import PanelDesign
from dplong.privacy.accounting import LedgerEntry
from dplong.privacy.budget import HISTOGRAM_USERS, MAX_MISS, StatisticsBudget
from dplong.privacy.ranges import (
    guarded_ranges,
    histogram_ranges,
    histogram_threshold,
    located_miss,
)

if TYPE_CHECKING:
    from dplong.models.pooled.dask_rows import DaskRows

__all__ = [
    "HISTOGRAM_NOTE",
    "FoundRanges",
    "RangeFlags",
    "check_ranges",
    "find_ranges",
    "range_notes",
]

#: The public note of a fit whose ranges the histograms find (decided by the plan).
HISTOGRAM_NOTE = (
    "The ranges were found privately from histograms of the persons' extremes at a doubling's "
    "resolution (n * epsilon is too small for medians): a column far from 0 for its spread "
    "gets a wide frame and a noisier estimate; give public bounds or raise epsilon."
)


def check_ranges(
    n: int, names: list[str], plan: StatisticsBudget, *, bounds_help: bool = True
) -> None:
    """Refuse, from public facts and before any noise, the ranges of the columns ``names``
    that the plan cannot find: its medians would miss, or its histograms' threshold is beyond
    what a cell holds (nothing to refuse without such columns); ``bounds_help``: whether public
    bounds would spare the stage (not a within fit's, which only cap its deviations' ranges),
    so that the refusal names them as a remedy."""
    if not names:
        return
    if plan.histogram_rho > 0.0:  # the histograms' route, or their guard of the medians
        threshold = histogram_threshold(len(names), plan.histogram_rho)
        short = threshold > HISTOGRAM_USERS[1] * n
        why = f"a cell of their histograms must hold {threshold:.0f} of the n = {n} persons"
    else:
        short = located_miss(n, plan.median_epsilon) > MAX_MISS
        why = f"each of their medians gets epsilon {plan.median_epsilon:.3g}, n = {n}"
    if short:
        refusal = InsufficientUsersError(
            f"n * epsilon is too small to find the ranges of {names} privately ({why}): "
            + ("give their public bounds (bounds={...}) or " if bounds_help else "")
            + "raise epsilon"
        )
        refusal.budget_refusal = True  # a larger ε cures it (dplong.plan)
        raise refusal


def range_notes(plan: StatisticsBudget, located: bool) -> tuple[str, ...]:
    """The public note of ranges the plan finds by histograms (none otherwise, or where no
    range is ``located``)."""
    return (HISTOGRAM_NOTE,) if plan.histograms_alone and located else ()


class RangeFlags(NamedTuple):
    """What the released numbers of the ranges found privately say of them (p + 1 each, the
    outcome last; False and 0 where a range is public): the ranges that ``missed`` their data
    with no public cap to fall back on, the ``heavy`` ones, which clip many persons (the
    released count of persons beyond them, 0 for none), the ``narrow`` ones, a sliver of
    the column, with no public cap either, the ``one_sided`` ones, a skewed column's
    (:class:`~dplong.privacy.ranges.PrivateRanges`), the ``guarded`` ones, which the
    histograms that guard the medians gave (:func:`~dplong.privacy.ranges.guard_swaps`), and
    those that clip ``some`` persons (fewer than many, more than the count's noise alone: the
    count, 0 for none), those ``widened`` to hold a long tail, and the count beyond an end up
    to which a group there goes ``unseen`` (:func:`~dplong.privacy.ranges.unseen_threshold`,
    0 where the range is public). A later stage given an earlier stage's ranges carries its
    flags on.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.pooled.located import RangeFlags
    >>> flags = RangeFlags(np.array([False, True, False]), np.array([0.0, 0.0, 900.0]),
    ...                    np.array([True, False, False]), np.array([False, False, True]),
    ...                    np.array([False, False, False]), np.array([120.0, 0.0, 0.0]),
    ...                    np.array([False, False, True]), np.array([80.0, 0.0, 80.0]))
    >>> merged = flags.at([0, 2]).merged(RangeFlags.none(2))
    >>> merged.missed.tolist(), merged.heavy.tolist(), merged.narrow.tolist()
    ([False, False], [0.0, 900.0], [True, False])
    >>> merged.one_sided.tolist(), merged.widened.tolist(), merged.unseen.tolist()
    ([False, True], [False, True], [80.0, 80.0])
    """

    missed: NDArray[np.bool_]
    heavy: NDArray[np.float64]
    narrow: NDArray[np.bool_]
    one_sided: NDArray[np.bool_]
    guarded: NDArray[np.bool_]
    some: NDArray[np.float64]
    widened: NDArray[np.bool_]
    unseen: NDArray[np.float64]

    @classmethod
    def none(cls, size: int) -> RangeFlags:
        """No range missed, none clips many or some, none narrow, one-sided, guarded or
        widened: ``size`` columns (and the outcome)."""
        flags = np.zeros(size, dtype=bool)
        return cls(
            flags, np.zeros(size), flags.copy(), flags.copy(), flags.copy(), np.zeros(size),
            flags.copy(), np.zeros(size),
        )  # fmt: skip

    def at(self, rows: list[int]) -> RangeFlags:
        """The flags of the columns (and outcome) at ``rows`` only."""
        return RangeFlags(
            self.missed[rows],
            self.heavy[rows],
            self.narrow[rows],
            self.one_sided[rows],
            self.guarded[rows],
            self.some[rows],
            self.widened[rows],
            self.unseen[rows],
        )

    def merged(self, other: RangeFlags) -> RangeFlags:
        """Either stage's flags."""
        return RangeFlags(
            self.missed | other.missed,
            np.maximum(self.heavy, other.heavy),
            self.narrow | other.narrow,
            self.one_sided | other.one_sided,
            self.guarded | other.guarded,
            np.maximum(self.some, other.some),
            self.widened | other.widened,
            np.fmax(self.unseen, other.unseen),  # NaN (nothing counted) yields to a count
        )


class FoundRanges(NamedTuple):
    """Every column's range ((p + 1) x 2, the outcome's last), the Gram matrix's frame, the
    flags of the ranges found privately (:class:`RangeFlags`), the columns the released counts
    find (nearly) constant (p + 1; False where the range is public), and the ledger entries of
    the stage."""

    ranges: NDArray[np.float64]
    frame: NDArray[np.float64]
    flags: RangeFlags
    constant: NDArray[np.bool_]
    entries: tuple[LedgerEntry, ...]

    def at(self, rows: list[int]) -> FoundRanges:
        """The ranges of the columns (and outcome) at ``rows`` only; the same ledger entries.

        Examples
        --------
        >>> import numpy as np
        >>> from dplong.models.pooled.located import FoundRanges, RangeFlags
        >>> found = FoundRanges(np.array([[0.0, 1.0], [-2.0, 2.0], [-5.0, 5.0]]),
        ...                     np.array([[0.0, 1.0], [-1.0, 1.0], [-3.0, 3.0]]),
        ...                     RangeFlags.none(3), np.array([False, True, False]), ())
        >>> found.at([0, 2]).ranges.tolist(), found.at([0, 2]).constant.tolist()
        ([[0.0, 1.0], [-5.0, 5.0]], [False, False])
        """
        return self._replace(
            ranges=self.ranges[rows],
            frame=self.frame[rows],
            flags=self.flags.at(rows),
            constant=self.constant[rows],
        )


def find_ranges(
    ranges: NDArray[np.float64],
    frame: NDArray[np.float64],
    extremes: tuple[NDArray[np.float64], NDArray[np.float64]],
    names: tuple[str, ...],
    plan: StatisticsBudget,
    generator: np.random.Generator,
    caps: NDArray[np.float64],
) -> FoundRanges:
    """Every column's range ((p + 1) x 2): the public ones of ``ranges``, the others (NaN
    there; each person's ``extremes`` of them, :func:`_extremes`, and ``names``) found
    privately with the
    plan's budget and cut to their public ``caps`` ((p + 1) x 2, infinite where none); the
    Gram matrix's frame (the found ranges' cores, cut likewise, the public ranges'
    ``frame``); the columns whose range found privately missed its data (the counts beyond
    the far rung, :data:`~dplong.privacy.ranges.FAR_RUNG`) or is a sliver of it (narrow) and
    has no public cap to fall back on (one that has takes its cap as range and frame); those
    found (nearly) constant and the heavy tails the ranges clip
    (:class:`~dplong.privacy.ranges.PrivateRanges`); and the ledger entries of that stage."""
    located = np.isnan(ranges[:, 0])
    ranges, frame = ranges.copy(), frame.copy()
    missed, heavy, narrow, one_sided, guarded, some, widened, unseen = RangeFlags.none(len(ranges))
    constant = np.zeros(len(ranges), dtype=bool)
    if not located.any():
        return FoundRanges(ranges, frame, RangeFlags.none(len(ranges)), constant, ())
    if plan.histograms_alone:
        found = histogram_ranges(
            *extremes, plan.histogram_rho, generator, names=names, tail_rho=plan.tail_rho
        )
        swap = np.zeros(int(located.sum()), dtype=bool)
    else:  # the medians, guarded by histograms where the plan gives them a share
        found, swap = guarded_ranges(
            *extremes,
            plan.median_epsilon,
            plan.count_rho,
            plan.histogram_rho,
            generator,
            names=names,
            tail_rho=plan.tail_rho,
            far_rho=plan.far_rho,
            outcome=bool(located[-1]),
            fit_epsilon=plan.epsilon,
        )
    low, high = caps[located, :1], caps[located, 1:]
    ranges[located] = np.clip(found.ranges, low, high)
    frame[located] = np.clip(found.core, low, high)
    missed[located], constant[located] = found.missed, found.constant
    heavy[located], narrow[located], some[located] = found.heavy, found.narrow, found.some
    one_sided[located], guarded[located], widened[located] = found.one_sided, swap, found.widened
    unseen[located] = found.unseen
    # an outcome found (nearly) constant is a sliver of itself by either route (the histograms
    # mark no sliver: their cells are a doubling wide): every coefficient would be regressed on
    # the few persons off its value, clipped to a range that nothing checked (PanelOLS on an
    # outcome 97 % of 2,000 persons have at 0, ε = 4: [0, 4.8e-7], slopes 5e6 SEs off)
    narrow[-1] |= bool(located[-1] and constant[-1])
    # a range that missed or is narrow falls back on its public cap where it has one
    # (post-processing)
    capped = (missed | narrow) & np.isfinite(caps).all(axis=1)
    ranges[capped] = frame[capped] = caps[capped]
    flags = RangeFlags(
        missed & ~capped,
        heavy,
        narrow & ~capped,
        one_sided,
        guarded & ~capped,
        np.where(capped, 0.0, some),  # the public cap taken clips what nothing counted
        widened,  # never missed nor narrow, so never capped
        np.where(capped, 0.0, unseen),
    )
    return FoundRanges(ranges, frame, flags, constant, found.entries)


def _extremes(
    values: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Every person's smallest and largest value of each column (n x k; rows sorted by
    person; NaN for a person whose rows were all dropped: no statistic, and n stays the
    public count)."""
    lows, highs = np.full((n, values.shape[1]), np.nan), np.full((n, values.shape[1]), np.nan)
    if codes.size:
        starts = segment_starts(codes)
        lows[codes[starts]] = np.minimum.reduceat(values, starts, axis=0)
        highs[codes[starts]] = np.maximum.reduceat(values, starts, axis=0)
    return lows, highs


class _RangesStage:
    """The private ranges stage as methods of a model fitted from sufficient statistics: its
    design, the public ``_ranges`` of its columns and outcome ((p + 1) x 2, NaN where the fit
    finds the range privately), the public ``_caps`` a range found privately is cut to, and the
    Gram matrix's ``_frame``."""

    _design: PanelDesign
    #: The rows on a Dask frame (None: in memory, the design's)
    _source: DaskRows | None
    #: Whether a public range is a column's frame (so stating one spares finding it), as
    #: :attr:`dplong.PooledOLS._bounds_frame`.
    _bounds_frame: bool
    _ranges: NDArray[np.float64]
    _caps: NDArray[np.float64]
    _frame: NDArray[np.float64]

    @property
    def _names(self) -> tuple[str, ...]:
        return (*self._design.columns, self._design.outcome)

    @property
    def _located(self) -> NDArray[np.bool_]:
        """The columns (and the outcome, last) whose range the fit finds privately."""
        return np.asarray(np.isnan(self._ranges[:, 0]))

    @property
    def _found_privately(self) -> NDArray[np.bool_]:
        """The columns (and the outcome) whose range in the results was found privately, by
        this fit or by an earlier stage that handed it over (the results label them so)."""
        return self._located

    @property
    def _located_names(self) -> list[str]:
        """The names of the columns (and the outcome) whose range the fit finds privately."""
        return [c for c, found in zip(self._names, self._located, strict=True) if found]

    def _extremes(
        self, which: NDArray[np.bool_]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each person's smallest and largest value of the columns ``which`` (n x k each):
        from the rows in memory, or from the first pass over a Dask frame."""
        if self._source is not None:
            return self._source.lows[:, which], self._source.highs[:, which]
        design = self._design
        values = np.column_stack([design.X, design.y])[:, which]
        return _extremes(values, design.codes, design.n)

    def _check_ranges(self, plan: StatisticsBudget) -> None:
        """Refuse, before any noise, ranges the plan cannot find (:func:`check_ranges`)."""
        check_ranges(self._design.n, self._located_names, plan, bounds_help=self._bounds_frame)

    def _range_notes(self, plan: StatisticsBudget) -> tuple[str, ...]:
        """The public note of ranges the plan finds by histograms (none otherwise)."""
        return range_notes(plan, bool(self._located.any()))

    def _find_ranges(self, plan: StatisticsBudget, generator: np.random.Generator) -> FoundRanges:
        """Every column's range, the Gram matrix's frame, the ranges that missed, the columns
        found constant and the ledger entries of the ranges found privately with the plan's
        budget (:func:`find_ranges`)."""
        return find_ranges(
            self._ranges,
            self._frame,
            self._extremes(self._located),
            tuple(self._located_names),
            plan,
            generator,
            self._caps,
        )
