"""The default engine's notes on its columns (:func:`~dplong.privacy.engine.release_means`).

Each builder turns a column mask into at most one sentence naming those columns: why a column
is withheld (NaN) or what its estimate describes. The masks and every figure quoted are
released numbers or public facts (post-processing), so a note never reads the rows. The
heavy-tail warning stays with the tail stage that measures it (``tails.heavy_notes``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.budget import NOTE_MISS

if TYPE_CHECKING:
    from dplong.privacy.scale import ScaleScan

__all__ = [
    "HUGE",
    "alone_notes",
    "beside_notes",
    "column_note",
    "crowded_notes",
    "empty_notes",
    "few_users",
    "implausible_notes",
    "lost_notes",
    "missed_notes",
    "reach_note",
    "sparse_notes",
    "tiny_notes",
    "unseen_notes",
    "user_notes",
]

#: Magnitude beyond which a column's squares (and its error figures) overflow the doubles.
HUGE = 2.0**500


def missed_notes(
    names: tuple[str, ...],
    edge: NDArray[np.bool_],
    overflow: NDArray[np.bool_],
    coarse: NDArray[np.bool_],
    midpoint: NDArray[np.float64],
) -> tuple[str, ...]:
    """The note of each withheld column naming the one cause that applied (released numbers
    only): a mean at its interval's edge, figures that overflow (values beyond
    :data:`HUGE` in magnitude by the released midpoint, or a median missed by hundreds of
    magnitudes), or a scale below the values' resolution at their magnitude."""
    huge = overflow & (np.abs(midpoint) >= HUGE)
    remedy = "Raise epsilon, use fewer columns, or state the scale."
    return (
        column_note(
            names,
            edge,
            "No estimate (NaN) for {listed}: the released mean sits at the edge of its "
            f"projection interval, so the private midpoint or scale missed the data. {remedy}",
        )
        + column_note(
            names,
            huge,
            "No estimate (NaN) for {listed}: the values are beyond 1e150 in magnitude, where "
            "their squares and error figures overflow the doubles. Divide the column by a "
            "public constant, e.g. I(x / 1e200).",
        )
        + column_note(
            names,
            overflow & ~huge,
            "No estimate (NaN) for {listed}: its error figures overflow the doubles (a private "
            f"median missed the data by hundreds of orders of magnitude). {remedy}",
        )
        + column_note(
            names,
            coarse,
            "No estimate (NaN) for {listed}: its private scale fell below the resolution of "
            "the values at their magnitude (the scale's median missed below every user). "
            "Subtract a public constant near the values, e.g. I(x - 2026), or state the scale.",
        )
    )


def lost_notes(
    names: tuple[str, ...],
    lost: NDArray[np.bool_],
    miss: NDArray[np.float64],
    few: NDArray[np.bool_],
) -> tuple[str, ...]:
    """Notes on the columns whose medians, given the private count, miss the users with a
    statistic with a probability above :data:`~dplong.privacy.budget.MAX_MISS` (withheld) or —
    where the count says that ``few`` have one (else the plan's own note says it) —
    :data:`~dplong.privacy.budget.NOTE_MISS`."""
    notes = []
    if lost.any():
        listed = [names[j] for j in np.flatnonzero(lost)]
        notes.append(
            f"No estimate (NaN) for {listed}: so few users have a statistic there (private "
            f"count) that the private midpoint and scale miss them with probability up to "
            f"{float(miss[lost].min()):.2g}. Raise epsilon or use fewer columns."
        )
    risky = (miss > NOTE_MISS) & few & ~lost
    if risky.any():
        listed = [names[j] for j in np.flatnonzero(risky)]
        notes.append(
            f"Few users have a statistic in {listed} (private count): the private midpoint and "
            f"scale may miss them (probability up to {float(miss[risky].max()):.2g}, a bad "
            "event outside the error bounds). Raise epsilon or use fewer columns."
        )
    return tuple(notes)


def beside_notes(
    names: tuple[str, ...], aside: NDArray[np.bool_], collapsed: NDArray[np.bool_]
) -> tuple[str, ...]:
    """The notes of the columns the midpoint's and the scale's checks found missed."""
    remedy = "Raise epsilon, use fewer columns, or state the scale."
    return column_note(
        names,
        aside,
        "No estimate (NaN) for {listed}: the midpoint's private check found nearly every user "
        f"on one side of it (its median missed them), so the number would be far off. {remedy}",
    ) + column_note(
        names,
        collapsed,
        "No estimate (NaN) for {listed}: the scale's private check found few users at a "
        "distance from the midpoint near the scale (its median missed below or above them), "
        f"so the interval would clip them all, or dwarf them. {remedy}",
    )


def implausible_notes(names: tuple[str, ...], unsure: NDArray[np.bool_]) -> tuple[str, ...]:
    return column_note(
        names,
        unsure,
        "No estimate (NaN) for {listed}: the release's own figures say its private midpoint or "
        "scale missed the data (a median's miss bound above one half given the private count, "
        "or a scale far above every user), so its number and error figures would be far off. "
        "Raise epsilon, use fewer columns, or state the scale.",
    )


def column_note(names: tuple[str, ...], columns: NDArray[np.bool_], text: str) -> tuple[str, ...]:
    """The note ``text`` (``{listed}``: the columns' names), or none where no column is meant."""
    if not columns.any():
        return ()
    return (text.format(listed=[names[j] for j in np.flatnonzero(columns)]),)


def crowded_notes(names: tuple[str, ...], crowded: NDArray[np.bool_]) -> tuple[str, ...]:
    return column_note(
        names,
        crowded,
        "No estimate (NaN) for {listed}: the clipped statistics spread far beyond the private "
        "scale (a shared value, or a tail far heavier than its model): the bias bound fails. "
        "State the scale.",
    )


def reach_note(
    names: tuple[str, ...], columns: NDArray[np.bool_], scan: ScaleScan, text: str
) -> tuple[str, ...]:
    """``text`` (``{listed}``, ``{reach}``: how many users the count could miss) on ``columns``."""
    if not columns.any():
        return ()
    return column_note(names, columns, text.replace("{reach}", f"{scan.reach[columns].max():.0f}"))


def unseen_notes(
    names: tuple[str, ...], unseen: NDArray[np.bool_], scan: ScaleScan
) -> tuple[str, ...]:
    return reach_note(
        names,
        unseen,
        scan,
        "{listed}: most users' statistic is exactly 0 and the private count sees no others; "
        "up to about {reach} users off 0 could go unseen at this epsilon, with values nothing "
        "bounds, so no estimate (NaN) is given. Raise epsilon to see fewer, or give public "
        "bounds.",
    )


def alone_notes(
    names: tuple[str, ...], alone: NDArray[np.bool_], scan: ScaleScan
) -> tuple[str, ...]:
    """The note of the columns whose users the scale stage found at one or two values; where
    its count of the users in the scale's cell found them there (``ScaleScan.seated``), not a
    miss of the scale's median."""
    seated = np.zeros_like(alone) if scan.seated is None else alone & scan.seated
    start = (
        "{listed}: the private count sees no users apart from those at (or near) %s, so the "
        "interval is sized on them; up to about {reach} others could go unseen at this epsilon, "
        "clipped to the interval beyond the error bound.%s Raise epsilon to see fewer, or state "
        "the scale."
    )
    miss = (
        " (The same count arises when the scale's median missed far above every user, a bad "
        "event: then the interval and the error figures are far wider than the data.)"
    )
    return reach_note(names, alone & ~seated, scan, start % ("one or two values", miss)) + (
        reach_note(names, seated, scan, start % ("two values, some at the scale's distance", ""))
    )


def sparse_notes(names: tuple[str, ...], sparse: NDArray[np.bool_]) -> tuple[str, ...]:
    return column_note(
        names,
        sparse,
        "No estimate (NaN) for {listed}: most users' statistic there is one value (0 or "
        "another), and at this epsilon too few of the others (private count) for a private "
        "scale of their values; sized on that value, the interval would clip them all. Raise "
        "epsilon.",
    )


def empty_notes(names: tuple[str, ...], empty: NDArray[np.bool_]) -> tuple[str, ...]:
    return column_note(
        names,
        empty,
        "No estimate (NaN) for {listed}: the private count of users with a statistic there "
        "is indistinguishable from zero.",
    )


def few_users(users: NDArray[np.float64], sd: float, n: int, d: int) -> NDArray[np.bool_]:
    """Columns whose private count is clearly below 80 % of n."""
    return np.asarray(np.broadcast_to(users, (d,)) + 3.0 * sd < 0.8 * n)


def user_notes(
    users: NDArray[np.float64], sd: float, n: int, names: tuple[str, ...], empty: NDArray[np.bool_]
) -> tuple[str, ...]:
    """A note when a private count says many users have no statistic (a released number):
    clearly below 80 % of n, for the columns that have an estimate at all."""
    counts = np.broadcast_to(users, empty.shape)
    few = few_users(users, sd, n, empty.size) & ~empty
    if not few.any():
        return ()
    low, high = float(counts[few].min()), float(counts[few].max())
    about = f"{low:.0f}" if f"{low:.0f}" == f"{high:.0f}" else f"{low:.0f} to {high:.0f}"
    where = "" if users.size == 1 else f" in {[names[j] for j in np.flatnonzero(few)]}"
    return (
        f"Only about {about} of the {n} users (private count, sd {sd:.2g}) have a statistic "
        f"of their own{where}; the estimate describes those users, and its standard errors "
        "use that count.",
    )


def tiny_notes(names: tuple[str, ...], tiny: NDArray[np.bool_]) -> tuple[str, ...]:
    """The note of the released columns whose spread lies at the engine's smallest (``tiny``:
    the released scale below :data:`~dplong.privacy.locate.TINY_SCALE`): values below about
    1e-150 in magnitude, where the interval is wider than the values by orders of magnitude
    (values of 1e-200 were released at -2e-153 with an interval of ±4e-152, and no word);
    released numbers only.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.notes import tiny_notes
    >>> tiny_notes(("x", "y"), np.array([False, True]))[0][:60]
    "['y']: its spread lies at the engine's smallest (2^-500): va"
    """
    return column_note(
        names,
        tiny,
        "{listed}: its spread lies at the engine's smallest (2^-500): values below about "
        "1e-150 in magnitude are beyond its resolution, and the interval can be wider than "
        "them by orders of magnitude. Multiply the column by a public constant, e.g. "
        "I(x * 1e200).",
    )
