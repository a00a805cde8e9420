"""The command's refusals: the error of its input, and the one line every message is cut to."""

from __future__ import annotations

import re


class _InputError(Exception):
    """A problem with the command line's input (file, column, option): exit code 2."""


def _one_line(message: object) -> str:
    """The first line of a message (patsy adds lines pointing at the formula), its options
    spelled as the command line's flags (:func:`_for_the_command_line`)."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return _for_the_command_line(lines[0]) if lines else type(message).__name__


#: A message's Python spellings of options, and the command line's (a note written for
#: ``from_formula``/``fit`` keywords names the flag here).
_SPELLINGS = (
    (re.compile(r"levels=\{'([^']+)': \[\.\.\.\]\}"), r"--levels \1=A,B,..."),
    (re.compile(r"bounds=\{\.\.\.\}"), "--bounds COLUMN=LO,HI;..."),
    (re.compile(r'privacy="local" needs bound=B'), "--privacy local needs --bound B"),
)


def _for_the_command_line(message: str) -> str:
    """``message`` with the Python spellings of options that have a flag said as the flag.

    Examples
    --------
    >>> from dplong.cli.errors import _for_the_command_line
    >>> _for_the_command_line("pass levels={'site': [...]}, or declare bounds={...}")
    'pass --levels site=A,B,..., or declare --bounds COLUMN=LO,HI;...'
    """
    for pattern, flag in _SPELLINGS:
        message = pattern.sub(flag, message)
    return message
