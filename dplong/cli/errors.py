"""The command's refusals: the error of its input, and the one line every message is cut to."""

from __future__ import annotations


class _InputError(Exception):
    """A problem with the command line's input (file, column, option): exit code 2."""


def _one_line(message: object) -> str:
    """The first line of a message (patsy adds lines pointing at the formula)."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return lines[0] if lines else type(message).__name__
