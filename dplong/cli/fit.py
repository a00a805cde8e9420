"""``dplong fit``: read DATA, fit the model, print its summary and error bounds, and write the
report."""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from typing import TYPE_CHECKING, Any

import pandas as pd

from dplong.cli.checks import _check_arguments, _check_columns, _check_required, _declared_levels
from dplong.cli.errors import _InputError, _one_line
from dplong.cli.keywords import _fit_options, _stage_options
from dplong.dask_frames import is_dask
from dplong.exceptions import ParameterError
from dplong.formula.terms import text_levels
from dplong.io import (
    ignore_reader_deprecation,
    read_failures,
    read_file,
    time_levels,
    typed,
    unread_cells,
)
from dplong.models.command_line import MODELS
from dplong.report import write_report
from dplong.summary import plain_names

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame


def _say(args: argparse.Namespace, message: str) -> None:
    """A progress message, note or warning on stderr, unless ``--quiet``."""
    if not args.quiet:
        print(f"dplong: {message}", file=sys.stderr, flush=True)


def _say_warnings(args: argparse.Namespace, read: list[warnings.WarningMessage]) -> None:
    """The warnings recorded while reading DATA (the reader's notes to the data holder), one
    line each, as :func:`_say` says them."""
    for warning in read:
        _say(args, f"warning: {_one_line(warning.message, args.formula)}")


def _run_fit(args: argparse.Namespace, command: str) -> int:
    with warnings.catch_warnings():
        if args.quiet:  # the result and errors only: not even a reader's deprecation warning
            warnings.simplefilter("ignore")
        ignore_reader_deprecation()  # Dask reads Parquet when the fit computes, not before
        return _fit_and_print(args, command)


def _fit_and_print(args: argparse.Namespace, command: str) -> int:
    spec = MODELS[args.model]
    _check_arguments(args, spec)
    levels = _declared_levels(args.levels)
    _say(args, f"reading {args.data}…")
    with warnings.catch_warnings(record=True) as read:  # lines left out, bytes replaced
        warnings.simplefilter("always")
        ignore_reader_deprecation()
        raw = read_file(args.data, time=args.time)
    _say_warnings(args, read)
    _check_columns(raw, args, levels)
    # a factor of text levels declared in the formula is read as one (not as numbers)
    reading: dict[str, Any] = {**text_levels(args.formula), **levels}
    with warnings.catch_warnings(record=True) as read:  # ids that read alike
        warnings.simplefilter("always")
        data = typed(raw, levels=reading, groups=args.groups, time=args.time)
    _say_warnings(args, read)
    # the time column's periods (TimeEffects) as numbers where they all are (the column is
    # read as numbers then); else the text declared, of which the column is a factor
    periods = None if args.time not in reading else time_levels(reading[args.time])
    if periods is not None:
        reading[args.time] = periods
    for column in _unread_columns(raw, data, args):
        what, hint = (
            ("among its --levels", "")
            if column in levels
            else ("among its levels in the formula", "")
            if column in reading
            else ("numbers or ISO 8601 dates", "")
            if column == args.time
            else ("numbers", _factor_hint(data, column))
        )
        # a Dask frame's cells are not read twice: only its stored type is known here
        stored = "dates" if pd.api.types.is_datetime64_any_dtype(raw[column].dtype) else "text"
        _say(
            args,
            f"warning: DATA stores {column!r} as {stored}: its cells that are not {what} are "
            f"read as missing{hint}"
            if is_dask(raw)
            else f"warning: DATA holds values of {column!r} that are not {what}; they are "
            f"read as missing{hint}",
        )
    # a Dask frame reads its files as the model computes: a corrupt one is said as such there
    with warnings.catch_warnings(record=True) as caught, read_failures(args.data):
        warnings.simplefilter("always")
        ignore_reader_deprecation()  # pandas' note to Dask's Parquet reader, once per file
        _say(args, "building design…")
        model_options = _stage_options(args, spec, "model")
        if reading:  # the formula's own declared, as the reader read them
            model_options["levels"] = reading
        if spec.uses_time:
            model_options["time"] = args.time
        if spec.uses_groups:
            model_options["groups"] = args.groups
        model = spec.build(args.formula, data, **model_options)
        options = _fit_options(args, spec)
        _check_required(model, options, args.model)
        units = "users" if spec.uses_groups else "rows (each a unit)"
        _say(args, f"fitting {args.model} on {model.nobs_users} {units} (ε={args.epsilon:g})…")
        results = _fitted(model, options)
    said = {plain_names(w) for w in results.warnings}  # as the summary says them
    for warning in caught:  # one line each; reliability warnings also print with the summary
        if str(warning.message) not in said:
            _say(args, f"warning: {_one_line(warning.message, args.formula)}")
    notes = []
    if args.seed is not None:
        notes.append("A fixed --seed was used: reproducible research only, not a release.")
        _say(args, f"note: {notes[-1]}")
    bounds = results.error_bound(args.alpha)
    print(results.summary(args.alpha))
    print()
    print(f"Error bounds on |estimate - truth| (alpha={args.alpha:g})")
    print(bounds)
    if args.report is not None:
        _say(args, f"writing report {args.report}…")
        try:
            write_report(
                args.report,
                results,
                alpha=args.alpha,
                data_name=args.data,
                command=command,
                notes=notes,
            )
        except OSError as err:
            raise _InputError(f"cannot write --report {args.report!r}: {err}") from None
    return 0


def _factor_hint(data: pd.DataFrame | DaskFrame, column: str) -> str:
    """The hint of a column whose cells were not all numbers: declare a factor's levels,
    unless some of its cells were read as numbers in memory (a numeric column with a stray
    'n.a.'); a Dask frame's stored type says nothing of its cells. For the data holder's eyes
    on stderr only."""
    if not is_dask(data) and bool(data[column].notna().any()):
        return ""
    return f" (a factor needs its levels declared: --levels {column}=...)"


def _fitted(model: Any, options: dict[str, Any]) -> Any:
    """``model.fit(**options)``, a stated moment bound's refusal naming its flag (the fit
    knows the number of columns it releases; its message names the Moment's bound)."""
    try:
        return model.fit(**options)
    except ParameterError as err:
        if "tail" in options and str(err).startswith("Moment bound"):
            raise ParameterError(f"--tail-bound: {err}") from None
        raise


def _unread_columns(
    raw: pd.DataFrame | DaskFrame, data: pd.DataFrame | DaskFrame, args: argparse.Namespace
) -> list[str]:
    """The columns of the formula, ``--time`` and ``--by`` whose cells were not all read (not
    numbers, or not declared levels): from the values in memory, from the stored type for Dask
    (whose rows are not read twice). For the data holder's eyes on stderr only."""
    words = set(re.findall(r"[A-Za-z_]\w*", args.formula))
    words |= set(re.findall(r"Q\(\s*[\"']([^\"']+)[\"']\s*\)", args.formula))
    read = [c for c in data.columns if c in words or c in (args.time, args.by)]
    columns = [c for c in read if c != args.groups]
    if not is_dask(raw):
        return unread_cells(raw, data, columns)
    return [
        c
        for c in columns
        if not isinstance(data[c].dtype, pd.CategoricalDtype)
        and not pd.api.types.is_numeric_dtype(raw[c].dtype)
        and not (c == args.time and pd.api.types.is_datetime64_any_dtype(raw[c].dtype))
    ]
