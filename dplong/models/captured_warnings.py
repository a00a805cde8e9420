"""Warnings caught while a release runs, kept as its notes: what a mechanism warns of (public
facts, released numbers) then reaches ``results.warnings``, ``summary()`` and the report, not
only stderr."""

from __future__ import annotations

import dataclasses
import warnings

from dplong.exceptions import DataHolderWarning, DplongWarning
from dplong.privacy.engine import Release

__all__ = ["caught_notes", "with_warnings"]


def caught_notes(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    """The DplongWarnings recorded in ``caught``, each once, as notes for a fit's results;
    other warnings are raised again as they were, a
    :class:`~dplong.exceptions.DataHolderWarning` too (it tells the data holder of the rows,
    on the screen only: never a result's note, though it is a DplongWarning).

    Examples
    --------
    >>> import warnings
    >>> from dplong.exceptions import DataHolderWarning, DplongWarning
    >>> from dplong.models.captured_warnings import caught_notes
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("the scale is unreliable", DplongWarning)
    ...     warnings.warn("the scale is unreliable", DplongWarning)
    >>> caught_notes(caught)
    ('the scale is unreliable',)
    >>> from dplong.exceptions import DataHolderWarning
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("3 rows are left out", DataHolderWarning)
    >>> with warnings.catch_warnings(record=True) as again:  # said again, kept nowhere
    ...     warnings.simplefilter("always")
    ...     notes = caught_notes(caught)
    >>> notes, [str(w.message) for w in again]
    ((), ['3 rows are left out'])
    """
    said: list[str] = []
    for caught_warning in caught:
        category = caught_warning.category
        if issubclass(category, DplongWarning) and not issubclass(category, DataHolderWarning):
            said.append(str(caught_warning.message))
        else:
            warnings.warn_explicit(
                caught_warning.message,
                caught_warning.category,
                caught_warning.filename,
                caught_warning.lineno,
            )
    return tuple(dict.fromkeys(said))


def with_warnings(release: Release, caught: list[warnings.WarningMessage]) -> Release:
    """``release`` with the DplongWarnings raised while it ran among its notes."""
    new = tuple(note for note in caught_notes(caught) if note not in release.notes)
    return dataclasses.replace(release, notes=release.notes + new) if new else release
