"""``dplong plan``: the planner's summary of the fit the same options would make, from public
facts only."""

from __future__ import annotations

import argparse

import numpy as np

import dplong
from dplong.cli.checks import _check_arguments, _check_columns, _declared_levels
from dplong.cli.errors import _InputError
from dplong.cli.keywords import _fit_options, _stage_options
from dplong.dask_frames import is_dask
from dplong.formula import check_id_types
from dplong.io import read_file
from dplong.models.command_line import MODELS


def _run_plan(args: argparse.Namespace) -> int:
    """``dplong plan``: the planner's summary of the fit the same options would make."""
    spec = MODELS[args.model]
    _check_arguments(args, spec)
    levels = _declared_levels(args.levels)
    if (args.data is None) == (args.n is None):
        raise _InputError("give either --n (the number of users) or DATA with --groups")
    n = args.n
    if args.data is not None:
        raw = read_file(args.data)
        _check_columns(raw, args, {})
        if spec.uses_groups:  # the distinct ids, as the fit counts them
            ids = raw[args.groups].dropna().unique()
            distinct = np.asarray(ids.compute() if is_dask(raw) else ids)
            check_id_types(distinct)
            n = len(distinct)
        else:  # item-level: every row is a unit
            n = int(raw.shape[0].compute() if is_dask(raw) else raw.shape[0])
    options = _stage_options(args, spec, "model") | _fit_options(args, spec)
    results = dplong.plan(
        args.formula,
        n=n,
        model=args.model,
        rows=args.rows,
        levels=levels or None,
        target_sd=args.target_sd,
        **options,
    )
    print(results.summary())
    if results.refused:
        users = results.smallest_n()
        print(
            f"Smallest number of users released at epsilon {args.epsilon:g}: "
            + ("none up to 1e6" if users is None else str(users))
        )
    return 0
