"""``dplong plan``: the planner's summary of the fit the same options would make, from public
facts only."""

from __future__ import annotations

import argparse
import dataclasses
import warnings

import numpy as np
import pandas as pd

import dplong
from dplong._validation import listed
from dplong.cli.checks import _check_arguments, _declared_levels
from dplong.cli.errors import _for_the_command_line, _InputError
from dplong.cli.fit import _say_warnings
from dplong.cli.keywords import _fit_options, _stage_options
from dplong.cli.parser import FIT_ONLY
from dplong.dask_frames import is_dask, readable_ids
from dplong.formula import check_id_types
from dplong.io import _tell_alike_ids, quiet_parquet_reads, read_failures, read_file
from dplong.models.command_line import MODELS
from dplong.planning import PlanResults, formula_columns


def _run_plan(args: argparse.Namespace) -> int:
    """``dplong plan``: the planner's summary of the fit the same options would make."""
    given = [flag for dest, flag in FIT_ONLY.items() if getattr(args, dest) not in (None, False)]
    if given:
        raise _InputError(
            f"{listed(given)} {'are options' if len(given) > 1 else 'is an option'} of dplong fit "
            "alone (a plan draws no noise, computes no interval and writes no report): drop "
            f"{'them' if len(given) > 1 else 'it'} to plan the fit"
        )
    spec = MODELS[args.model]
    _check_arguments(args, spec)
    levels = _declared_levels(args.levels)
    units = "users" if spec.uses_groups else "rows (each a unit)"
    if (args.data is None) == (args.n is None):
        raise _InputError(
            "give either --n (the number of users) or DATA with --groups"
            if spec.uses_groups
            else "give either --n (the number of rows, each a unit) or DATA"
        )
    n = args.n
    if args.data is not None:
        n = _count_units(args, spec.uses_groups)
    options = _stage_options(args, spec, "model") | _fit_options(args, spec)
    results = dplong.plan(
        args.formula,
        n=n,
        model=args.model,
        rows=args.rows,
        levels=levels or None,
        target_sd=args.target_sd,
        time=args.time if spec.uses_time else None,  # a name: TimeEffects reads its periods
        **options,
    )
    print(_as_the_command_line(results, args.model, args.formula).summary())
    if results.refused:
        users = results.smallest_n()
        print(
            f"Smallest number of {units} released at epsilon {args.epsilon:g}: "
            + ("none up to 1,000,000" if users is None else str(users))
        )
    return 0


def _as_the_command_line(results: PlanResults, model: str, formula: str) -> PlanResults:
    """``results`` as the command line says them: the model by its ``--model`` name, and the
    refusal, warnings and caveats (the fit's and the planner's words, written for Python
    keywords and classes) with the options that have a flag said as the flag, the ``formula``
    as written (:func:`_for_the_command_line`)."""
    refusal = results.refusal
    return dataclasses.replace(
        results,
        model=model,
        refusal=None if refusal is None else _for_the_command_line(refusal, formula),
        warnings=tuple(_for_the_command_line(warning, formula) for warning in results.warnings),
        caveats=tuple(_for_the_command_line(caveat, formula) for caveat in results.caveats),
    )


def _count_units(args: argparse.Namespace, by_user: bool) -> int:
    """n from DATA: its distinct ``--groups`` ids, as the fit counts them, or for an
    item-level model its rows. Only the columns named by flags are read (a wide CSV file
    parses its ids alone), and each is refused by its flag when DATA lacks it, as is a column
    the formula or ``--by`` names (against the header: a plan of a column the fit could not
    find would be no plan of that fit)."""
    named = {args.groups: "--groups", args.time: "--time"} if by_user else {}
    # checked against DATA's header only, as the fit would refuse them
    required = dict.fromkeys(formula_columns(args.formula), "--formula")
    if getattr(args, "by", None) is not None:
        required[args.by] = "--by"
    # the reader's notes to the data holder (lines left out, bytes replaced, ids that read
    # alike), as the fit gives them
    with warnings.catch_warnings(record=True) as read:
        warnings.simplefilter("always")
        with quiet_parquet_reads(), read_failures(args.data):  # a Dask frame reads here
            raw = read_file(
                args.data,
                columns={c: f for c, f in named.items() if c is not None},
                required=required,
            )
            if by_user:
                if is_dask(raw):  # ids as the fit reads them (half floats, dates refused)
                    raw = readable_ids(raw, args.groups)
                ids = raw[args.groups]
                ids = ids[~ids.isin([np.inf, -np.inf])].dropna().unique()  # as user_codes
                distinct = np.asarray(ids.compute() if is_dask(raw) else ids)
            else:  # item-level: every row is a unit
                n = int(raw.shape[0].compute() if is_dask(raw) else raw.shape[0])
        if by_user:
            check_id_types(distinct)
            _tell_alike_ids(pd.Series(distinct), args.groups)
            n = len(distinct)
    _say_warnings(args, read)
    return n
