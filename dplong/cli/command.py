"""The ``dplong`` command: parse the arguments, run the subcommand, and end any refusal with
one line on stderr and exit code 2 (and a closed output pipe quietly, with exit code 141)."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from collections.abc import Sequence

from dplong.cli.errors import _InputError, _one_line
from dplong.cli.fit import _run_fit
from dplong.cli.parser import build_parser
from dplong.cli.plan import _run_plan
from dplong.exceptions import DplongError

#: The exit code when stdout is a pipe its reader closed (``dplong fit ... | head -1``): 128 +
#: SIGPIPE, the status a shell reports for a program that SIGPIPE ended.
BROKEN_PIPE_EXIT = 128 + int(getattr(signal, "SIGPIPE", 13))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dplong`` command line.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success; 2 on bad arguments, unreadable data or any :class:`~dplong.exceptions.
        DplongError`, after a one-line message on stderr (never a traceback);
        :data:`BROKEN_PIPE_EXIT` (141), silently, when stdout is a pipe whose reader closed it
        (``| head -1``).

    Examples
    --------
    >>> from dplong.cli import main
    >>> main(["fit", "dataset:dietox", "--model", "mean", "--formula", "Weight ~ 1",
    ...       "--groups", "Pig", "--epsilon", "2", "--scale", "400", "--seed", "0",
    ...       "--quiet"])  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    Mean results (user-level differential privacy)
    ...
    Error bounds on |estimate - truth| (alpha=0.05)
    ...
    0
    >>> main(["fit", "missing.csv", "--model", "mean", "--formula", "y ~ 1",
    ...       "--groups", "id", "--epsilon", "1", "--quiet"])
    2
    """
    try:
        code = _run(argv)
        sys.stdout.flush()  # a closed pipe is met here, not at the interpreter's exit
    except BrokenPipeError:  # the reader has all it wants (Python docs, "Note on SIGPIPE")
        _discard_stdout()
        return BROKEN_PIPE_EXIT
    return code


def _run(argv: Sequence[str] | None) -> int:
    """:func:`main` but for a closed pipe."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(arguments)
    except SystemExit as stop:  # argparse has printed its message (or --help)
        return stop.code if isinstance(stop.code, int) else 2
    try:
        if args.command == "plan":
            return _run_plan(args)
        return _run_fit(args, shlex.join(["dplong", *arguments]))
    except (DplongError, _InputError) as err:
        print(f"dplong: error: {_one_line(err, args.formula)}", file=sys.stderr)
        return 2


def _discard_stdout() -> None:
    """Point the process's stdout at the null device, so that the output still buffered is
    dropped when the interpreter flushes it at exit (instead of a second BrokenPipeError).
    Standard output that is not a file (a test's buffer) is left as it is."""
    try:
        stdout = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stdout)
    finally:
        os.close(devnull)
