"""The checks of the arguments and of DATA's columns before any work: an option the model does
not take or needs, a column DATA lacks, a report that could not be written."""

from __future__ import annotations

import argparse
import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dplong._validation import not_columns
from dplong.cli.errors import _InputError
from dplong.cli.keywords import _stage_options
from dplong.cli.model_options import _unique_options
from dplong.io import level_texts
from dplong.models.command_line import CommandLineModel, Option

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame


def _check_arguments(args: argparse.Namespace, spec: CommandLineModel) -> None:
    """Refuse options the model does not take, and a report that could not be written, before
    any work."""
    given = [o for o in _unique_options() if getattr(args, o.keyword) is not None]
    for option in given:
        if spec.option(option.keyword) is None:
            raise _InputError(f"{option.flag} is not an option of --model {args.model}")
    if args.time is not None and not spec.uses_time:
        raise _InputError(f"--time is not an option of --model {args.model}")
    if args.levels is not None and not spec.uses_levels:
        raise _InputError(f"--levels is not an option of --model {args.model}")
    if args.groups is not None and not spec.uses_groups:
        raise _InputError(
            f"--groups is not an option of --model {args.model}: it is item-level, every row "
            "is a unit"
        )
    if spec.uses_groups and args.groups is None and getattr(args, "data", None) is not None:
        item = " (item-level curves: --model nw, or dplong.PriestleyChao in Python)"
        raise _InputError(
            f"--model {args.model} needs --groups (the user-id column)"
            + (item if args.model == "kernel" else "")
        )
    if getattr(args, "privacy", "central") == "local" and getattr(args, "bound", None) is None:
        raise _InputError(
            "--privacy local needs --bound B, a public bound on every user's |statistic| per column"
        )
    parts: dict[str, list[Option]] = {}
    for option in spec.options:
        if option.part_of is not None:
            parts.setdefault(option.part_of, []).append(option)
    for together in parts.values():
        given_parts = [o.flag for o in together if getattr(args, o.keyword) is not None]
        if given_parts and len(given_parts) < len(together):
            raise _InputError(f"{' and '.join(o.flag for o in together)} go together")
    missing = [o.flag for o in spec.options if o.required and getattr(args, o.keyword) is None]
    if missing:
        raise _InputError(
            f"--model {args.model} needs {', '.join(missing)} (see dplong fit --help)"
        )
    _stage_options(args, spec, "model")  # each value read and composed as the model will be
    _stage_options(args, spec, "fit")
    report = getattr(args, "report", None)
    if report is not None:
        _check_report(report, args.data)


def _check_report(report: str, data: str) -> None:
    """Refuse a --report that is not a file that could be written, or is the DATA file (the
    report would replace the rows it reports on), before the fit draws noise."""
    path = Path(report)
    if path.is_dir() or report.endswith(("/", os.sep)):
        raise _InputError(f"cannot write --report {report!r}: it is a directory, give a file")
    if path.exists() and Path(data).exists() and path.samefile(data):
        raise _InputError(f"cannot write --report {report!r}: it is the DATA file, give another")
    if not path.parent.is_dir():
        raise _InputError(f"cannot write --report {report!r}: no such directory")
    if not os.access(path if path.exists() else path.parent, os.W_OK):
        raise _InputError(f"cannot write --report {report!r}: permission denied")


def _check_columns(
    data: pd.DataFrame | DaskFrame, args: argparse.Namespace, levels: dict[str, list[str]]
) -> None:
    named = [("--groups", args.groups), ("--time", args.time)]
    for flag, column in [*named, *(("--levels", column) for column in levels)]:
        if column is not None and column not in data.columns:
            # one column whose name holds a ';', a tab or a '|': not comma-separated
            other = len(data.columns) == 1 and any(c in str(data.columns[0]) for c in ";\t|")
            hint = " (one column: DATA must be comma-separated, as a .csv file is)" if other else ""
            raise _InputError(
                not_columns(f"{flag} {column!r}", [column], data.columns, "DATA") + hint
            )


def _declared_levels(declared: list[tuple[str, list[str]]] | None) -> dict[str, list[str]]:
    """``--levels`` by column, as text: :func:`dplong.io.typed` reads the cells alike."""
    levels: dict[str, list[str]] = {}
    for column, texts in declared or []:
        if column in levels:
            raise _InputError(f"--levels {column}=... is given twice")
        levels[column] = level_texts(column, texts, argument="--levels")
    return levels


def _check_required(model: Any, options: dict[str, Any], name: str) -> None:
    """Name the options a model's ``fit`` cannot do without, and the common ones it does not
    take (rather than a TypeError)."""
    parameters = inspect.signature(model.fit).parameters
    missing = [
        "--" + keyword.replace("_", "-")
        for keyword, parameter in parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY
        and parameter.default is parameter.empty
        and keyword not in options
    ]
    if missing:
        raise _InputError(f"--model {name} needs {', '.join(missing)} (see dplong fit --help)")
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return  # the options go on to a function that names those it does not take
    flags = {"random_state": "--seed"}
    unknown = [
        flags.get(keyword, "--" + keyword.replace("_", "-"))
        for keyword in options
        if keyword not in parameters
    ]
    if unknown:
        raise _InputError(f"{', '.join(unknown)}: not an option of --model {name}")
