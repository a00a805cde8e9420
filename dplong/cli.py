"""The ``dplong`` command line: fit a private panel model to a file and print (or report) it.

``dplong fit DATA --model ols --formula "lwage ~ exper" --groups nr --epsilon 1 --scale 1,0.01``
reads DATA (CSV, Parquet — one file, a directory or a glob of files, through Dask when it is
installed — or a shipped data set as ``dataset:NAME``), fits the model with user-level
differential privacy, prints the summary and the error bounds, and with ``--report FILE``
writes a self-contained HTML report (:mod:`dplong.report`).

The models are those the model modules register (:data:`dplong.models.command_line.MODELS`):
each brings its builder, a line of help and the options only it takes, which the parser then
offers; this module defines no model and no model option.
"""

from __future__ import annotations

import argparse
import inspect
import math
import re
import shlex
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import pandas as pd

import dplong
from dplong.dask_frames import is_dask
from dplong.exceptions import DplongError, ParameterError
from dplong.io import SHIPPED, read_file, typed, unread_cells
from dplong.models.command_line import COMPOSED, MODELS, CommandLineModel, Option
from dplong.report import write_report
from dplong.summary import plain_names

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["build_parser", "main"]


class _InputError(Exception):
    """A problem with the command line's input (file, column, option): exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like the command's other refusals."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dplong: error: {message} (see {self.prog} --help)\n")


def _whole_number(text: str, least: int, expected: str) -> int:
    """``text`` as a whole number of at least ``least``; else the refusal "must be
    ``expected``"."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}")
    return value


def _seed(text: str) -> int:
    return _whole_number(text, 0, "a non-negative whole number")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"must name at least one parameter, got {text!r}")
    return names


def _positive_list(text: str) -> float | list[float]:
    try:
        values = [_positive(part) for part in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be a positive number or comma-separated positive numbers, got {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values


def _domain(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        lo, hi = (float(part) for part in parts)
    except ValueError:
        lo, hi = math.nan, math.nan
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(
            f"must be LO,HI with finite LO < HI (e.g. 1,12; write --domain=-1,1 when LO is "
            f"negative), got {text!r}"
        )
    return lo, hi


def _levels(text: str) -> tuple[str, list[str]]:
    column, _, values = text.partition("=")
    levels = values.split(",")
    if not column or not values or "" in levels:
        raise argparse.ArgumentTypeError(
            f"must be COLUMN=LEVEL,LEVEL,... (the first level is the reference), got {text!r}"
        )
    return column, levels


def _grid_count(text: str) -> int:
    return _whole_number(text, 2, "a whole number of points >= 2")


#: How each kind of model option is read (:class:`~dplong.models.command_line.Option`).
_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "positive": _positive,
    "positives": _positive_list,
    "range": _domain,
    "count": _grid_count,
    "text": str,
    "names": lambda text: tuple(name.strip() for name in text.split(",")),
}


#: The shipped examples and the smallest ε at which each is released, then released without a
#: warning (``dplong plan``; tests/test_planning.py checks them against the planner): data
#: set, users' column, model, formula, model and fit options, the two ε (the second None where
#: a warning holds at every ε: the location model's on its components' unchecked tails).
SHIPPED_EXAMPLES: tuple[tuple[str, str, str, str, dict[str, Any], float, float | None], ...] = (
    ("wage_panel", "nr", "ols", "lwage ~ exper + expersq", {}, 0.6, 0.99),
    ("wage_panel", "nr", "ols", "lwage ~ exper + expersq", {"estimator": "within"}, 1.4, 3.0),
    ("wage_panel", "nr", "location", "lwage ~ 1", {}, 0.59, None),
    ("wage_panel", "nr", "mean", "lwage ~ 1", {}, 0.2, 0.33),
    ("dietox", "Pig", "location", "Weight ~ 1", {}, 4.4, None),
    ("dietox", "Pig", "mean", "Weight ~ 1", {}, 1.5, 2.5),
    ("dietox", "Pig", "kernel", "Weight ~ Time", {"domain": (1, 12), "bandwidth": 1}, 18.0, 30.0),
    (
        "dietox",
        "Pig",
        "kernel",
        "Weight ~ Time",
        {"domain": (1, 12), "bandwidth": 1, "grid": 6, "scale": 250},
        8.0,
        12.0,
    ),
    ("randhie", "zper", "mean", "meddol ~ 1", {}, 0.019, 0.031),
)


def shown_epsilon(epsilon: float | None) -> str:
    """A shipped example's ε as the tables show it ("none": no ε up to 1e4)."""
    return "none" if epsilon is None else f"{epsilon:g}"


def _example_flags(options: dict[str, Any]) -> str:
    """A shipped example's options as command-line flags."""
    flags = []
    for keyword, value in options.items():
        shown = ",".join(f"{v:g}" for v in value) if isinstance(value, tuple) else f"{value}"
        flags.append(f"--{keyword.replace('_', '-')} {shown}")
    return " ".join(flags)


_SHIPPED_TABLE = "\n".join(
    [
        "  released  quiet  data, --model, --formula and options",
        *(
            f'  {least:>8g} {shown_epsilon(quiet):>6}  {name} {model} "{formula}" '
            f"{_example_flags(options)}".rstrip()
            for name, _, model, formula, options, least, quiet in SHIPPED_EXAMPLES
        ),
    ]
)

_EPILOG = f"""\
models:
{{models}}

examples:
  dplong fit dataset:wage_panel --model ols --formula "lwage ~ exper + expersq" \\
      --groups nr --time year --epsilon 4 --report wages.html
  dplong fit visits.csv --model mean --formula "weight ~ 1" --groups patient \\
      --epsilon 0.5 --scale 4
  dplong fit dataset:dietox --model kernel --formula "Weight ~ Time" --groups Pig \\
      --domain 1,12 --bandwidth 1 --grid 6 --epsilon 16 --scale 250 --report pigs.html

smallest epsilon at which each shipped example is released, and released
without a warning (from dplong plan: public facts only; below the first the
fit is refused before any noise):
{_SHIPPED_TABLE}

what it means:
  DATA       a .csv or .parquet file with one row per observation, a directory
             or glob of .parquet files ('data/*.parquet', read through Dask), or a
             data set shipped with dplong: {SHIPPED}.
  --groups   the user-id column: which person (patient, firm, pig, ...) a row
             belongs to. All rows of a user are protected together.
  --epsilon  the privacy budget ε: how much the output may change if one user's
             rows were replaced. Smaller is more private and noisier; around 1
             is common. The whole fit spends at most ε.
  --delta    a tiny probability δ that the guarantee fails (central privacy
             only; default 1/n**2 with n the number of users).
  --scale    how much one user's statistic varies (a public assumption you
             choose, e.g. from earlier studies; never look at the data for it).
             For --model kernel: the variance of one user's curve value.
             Omitted, it is estimated privately with a small part of the
             budget; that works from a few hundred users at epsilon 1.
  --domain   (kernel) the range of x, public: take it from the study design
             (e.g. weeks 1 to 12), never from the observed values.
  public     only the number of users n and the options you pass are public.
             Everything else about the data leaves only through noise, and
             every noisy step is listed in the privacy ledger of the output.
"""


_PLAN_EPILOG = """\
examples:
  dplong plan --model ols --formula "lwage ~ exper + expersq" --n 545 --epsilon 1
  dplong plan dataset:dietox --groups Pig --model location --formula "Weight ~ 1" \\
      --epsilon 4
  dplong plan --model ols --formula "y ~ x" --n 5000 --epsilon 1 --target-sd 0.005

what it says:
  The decision (refused or released, and the warnings) is the one the fit makes:
  the fit's own checks run, on made-up rows, and stop before any noise. The
  noise sd is predicted for a typical release, in units of the sd of one user's
  statistic (sigma) unless the scale is stated.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dplong`` command.

    Returns
    -------
    argparse.ArgumentParser
        With one subcommand, ``fit``; ``dplong fit --help`` explains every option.

    Examples
    --------
    >>> from dplong.cli import build_parser
    >>> args = build_parser().parse_args(["fit", "dataset:dietox", "--model", "mean",
    ...     "--formula", "Weight ~ 1", "--groups", "Pig", "--epsilon", "2", "--scale", "400"])
    >>> args.model, args.epsilon, args.scale, args.delta
    ('mean', 2.0, 400.0, None)
    >>> build_parser().parse_args(["fit", "data.csv", "--model", "ols", "--formula", "y ~ x",
    ...     "--groups", "id", "--epsilon", "1", "--scale", "1,0.01"]).scale
    [1.0, 0.01]
    """
    parser = _Parser(
        prog="dplong",
        description="User-level differentially private models for longitudinal (panel) data.",
    )
    parser.add_argument("--version", action="version", version=f"dplong {dplong.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    fit = commands.add_parser(
        "fit",
        help="fit a model with user-level differential privacy",
        description="Fit a model with user-level differential privacy; print its summary and "
        "error bounds, and optionally write an HTML report.",
        epilog=_EPILOG.format(
            models="\n".join(f"  {name:<10} {spec.help}" for name, spec in MODELS.items())
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fit.add_argument(
        "data",
        metavar="DATA",
        help="CSV or Parquet file, directory or glob of Parquet files, or dataset:NAME",
    )
    privacy = _model_arguments(fit)
    privacy.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help="seed of the noise, for reproducible research only: never for a real release",
    )
    output = fit.add_argument_group("output")
    output.add_argument(
        "--alpha",
        type=_probability,
        metavar="A",
        default=0.05,
        help="1 - confidence level of intervals and error bounds (default 0.05)",
    )
    output.add_argument("--report", metavar="FILE", help="write a self-contained HTML report")
    output.add_argument(
        "--quiet",
        action="store_true",
        help="print the result only: no progress, notes or warnings on stderr (errors still)",
    )
    plan = commands.add_parser(
        "plan",
        help="predict a fit from public facts: refused or not, its noise, the epsilon it needs",
        description="Plan a fit from public facts only (the number of users, the formula, the "
        "options): whether it would be refused, its warnings, each released column's "
        "predicted privacy-noise sd, and the smallest epsilon at which it is released. No "
        "row is read: give --n, or DATA and --groups to count the users.",
        epilog=_PLAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plan.add_argument(
        "data",
        nargs="?",
        metavar="DATA",
        help="optional: a file or dataset:NAME whose --groups column gives n (nothing else "
        "is read)",
    )
    _model_arguments(plan)
    planned = plan.add_argument_group("plan")
    planned.add_argument(
        "--n", type=_users, metavar="N", help="number of users (public), instead of DATA"
    )
    planned.add_argument(
        "--rows",
        type=_users,
        default=4,
        metavar="T",
        help="rows per user of the stand-in data (default 4; the decision does not read them)",
    )
    planned.add_argument(
        "--target-sd",
        type=_positive,
        metavar="SD",
        help="a privacy-noise sd to reach: the smallest epsilon reaching it, per column",
    )
    return parser


def _users(text: str) -> int:
    return _whole_number(text, 1, "a positive whole number")


def _model_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The arguments ``fit`` and ``plan`` share: the model, its formula and options, and the
    budget; returns the privacy group (``fit`` adds its seed there)."""
    parser.add_argument(
        "--model",
        required=True,
        choices=list(MODELS),
        help="the model to fit (see models below)",
    )
    parser.add_argument("--formula", required=True, help='patsy formula, e.g. "lwage ~ exper"')
    parser.add_argument(
        "--groups",
        metavar="COLUMN",
        help="user-id column (every model but "
        + ", ".join(name for name, spec in MODELS.items() if not spec.uses_groups)
        + ", item-level: a row is a unit)",
    )
    parser.add_argument(
        "--time",
        metavar="COLUMN",
        help="orders each user's rows (models: "
        + ", ".join(name for name, spec in MODELS.items() if spec.uses_time)
        + ")",
    )
    parser.add_argument(
        "--levels",
        action="append",
        type=_levels,
        metavar="COLUMN=A,B,...",
        help="declared levels of a factor column, the first one the reference; repeat for "
        "several columns (models: "
        + ", ".join(name for name, spec in MODELS.items() if spec.uses_levels)
        + ")",
    )
    privacy = parser.add_argument_group("privacy")
    privacy.add_argument(
        "--epsilon", required=True, type=_positive, metavar="EPS", help="total privacy budget ε > 0"
    )
    privacy.add_argument(
        "--delta", type=_probability, help="total δ in (0, 1); central default 1/n**2"
    )
    privacy.add_argument(
        "--privacy",
        choices=["central", "local"],
        default="central",
        help="trusted curator (central, default) or each user adds their own noise (local)",
    )
    privacy.add_argument(
        "--bound",
        type=_positive_list,
        metavar="B",
        help="public bound on |mean| per parameter (number or comma list); needed for local",
    )
    privacy.add_argument(
        "--scale",
        type=_positive_list,
        metavar="S",
        help="variance proxy of one user's statistic: a number, or one per parameter "
        "separated by commas (1,0.01); when omitted it is estimated privately",
    )
    privacy.add_argument(
        "--focus",
        type=_names,
        metavar="NAMES",
        help="parameters whose accuracy matters most, comma-separated (e.g. exper,expersq); "
        "the budget is shared to favour them",
    )
    privacy.add_argument(
        "--variant",
        choices=["default", "theory"],
        default="default",
        help="the planned release (default) or the paper's algorithms as published (theory)",
    )
    extra = parser.add_argument_group("model-specific options")
    for option in _unique_options():
        users = _users_of(option.keyword)
        needed = [name for name, own in users.items() if own.required]
        helps: dict[str, list[str]] = {}
        for name, own in users.items():
            helps.setdefault(own.help, []).append(name)
        meaning = (  # each model's own words where they differ
            option.help
            if len(helps) == 1
            else "; ".join(f"{', '.join(names)}: {text}" for text, names in helps.items())
        )
        said = (
            f"{meaning} (models: {', '.join(users)}"
            + (f"; required by {', '.join(needed)}" if needed else "")
            + ")"
        )
        if option.kind == "flag":  # None unless given, as every model option
            extra.add_argument(
                option.flag, dest=option.keyword, action="store_const", const=True, help=said
            )
            continue
        if _read_per_model(option.keyword):  # each model reads the text its own way
            extra.add_argument(
                option.flag,
                dest=option.keyword,
                metavar="|".join(dict.fromkeys(own.metavar for own in users.values())),
                help=said,
            )
            continue
        extra.add_argument(
            option.flag,
            dest=option.keyword,
            type=_PARSERS[option.kind],
            choices=option.choices,
            metavar=option.metavar if option.choices is None else None,
            help=said,
        )
    return privacy


def _users_of(keyword: str) -> dict[str, Option]:
    """The models that take option ``keyword``, with their own spec of it."""
    users = {name: spec.option(keyword) for name, spec in MODELS.items()}
    return {name: own for name, own in users.items() if own is not None}


def _read_per_model(keyword: str) -> bool:
    """Whether the models taking option ``keyword`` read its text differently (``--bounds``:
    ranges of named columns for pooled, one range for nw): the parser then keeps the text and
    :func:`_stage_options` reads it as the chosen model does."""
    return len({own.kind for own in _users_of(keyword).values()}) > 1


def _unique_options() -> list[Option]:
    """Every model option once, by keyword (an option several models read alike is parsed
    with that kind, one they read differently kept as text (:func:`_read_per_model`); each
    model still decides its stage and whether it is required)."""
    seen: dict[str, Option] = {}
    for spec in MODELS.values():
        for option in spec.options:
            seen.setdefault(option.keyword, option)
    return list(seen.values())


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
        raise _InputError(f"--model {args.model} needs --groups (the user-id column)")
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
    if report is not None and not Path(report).parent.is_dir():
        raise _InputError(f"cannot write --report {report!r}: no such directory")


def _check_columns(
    data: pd.DataFrame | DaskFrame, args: argparse.Namespace, levels: dict[str, list[str]]
) -> None:
    named = [("--groups", args.groups), ("--time", args.time)]
    for flag, column in [*named, *(("--levels", column) for column in levels)]:
        if column is not None and column not in data.columns:
            raise _InputError(
                f"{flag} {column!r} is not a column of DATA; columns are {list(data.columns)}"
            )


def _declared_levels(declared: list[tuple[str, list[str]]] | None) -> dict[str, list[str]]:
    """``--levels`` by column, as text: :func:`dplong.io.typed` reads the cells alike."""
    levels: dict[str, list[str]] = {}
    for column, texts in declared or []:
        if column in levels:
            raise _InputError(f"--levels {column}=... is given twice")
        levels[column] = texts
    return levels


def _unread_columns(
    raw: pd.DataFrame | DaskFrame, data: pd.DataFrame | DaskFrame, args: argparse.Namespace
) -> list[str]:
    """The formula's columns whose cells were not all read (not numbers, or not declared
    levels): from the values in memory, from the stored type for Dask (whose rows are not
    read twice). For the data holder's eyes on stderr only."""
    words = set(re.findall(r"[A-Za-z_]\w*", args.formula))
    words |= set(re.findall(r"Q\(\s*[\"']([^\"']+)[\"']\s*\)", args.formula))
    columns = [c for c in data.columns if (c in words or c == args.time) and c != args.groups]
    if not is_dask(raw):
        return unread_cells(raw, data, columns)
    return [
        c
        for c in columns
        if not isinstance(data[c].dtype, pd.CategoricalDtype)
        and not pd.api.types.is_numeric_dtype(raw[c].dtype)
        and not pd.api.types.is_datetime64_any_dtype(raw[c].dtype)
    ]


def _fit_options(args: argparse.Namespace, spec: CommandLineModel) -> dict[str, Any]:
    """Keyword arguments of ``fit``: only what was given, so the model's defaults apply."""
    options: dict[str, Any] = {"epsilon": args.epsilon}
    optional = {  # the model choices only when not the default: every fit defaults to them
        "privacy": None if args.privacy == "central" else args.privacy,
        "variant": None if args.variant == "default" else args.variant,
        "delta": args.delta,
        "scale": args.scale,
        "bound": args.bound,
        "focus": args.focus,
        "random_state": getattr(args, "seed", None),
    }
    options |= {key: value for key, value in optional.items() if value is not None}
    return options | _stage_options(args, spec, "fit")


def _stage_options(
    args: argparse.Namespace, spec: CommandLineModel, stage: Literal["model", "fit"]
) -> dict[str, Any]:
    """The given options of one stage of ``spec``, by keyword: text kept for the model read
    as it reads it (:func:`_read_per_model`), parts of one value composed (:data:`COMPOSED`)."""
    given = [o for o in spec.options if o.stage == stage and getattr(args, o.keyword) is not None]
    options: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {}
    for option in given:
        value = getattr(args, option.keyword)
        if _read_per_model(option.keyword) and option.kind != "text":
            try:
                value = _PARSERS[option.kind](value)
            except (argparse.ArgumentTypeError, ValueError) as err:
                raise _InputError(f"argument {option.flag}: {err}") from None
        if option.part_of is None:
            options[option.keyword] = value
        else:
            parts.setdefault(option.part_of, {})[option.keyword] = value
    for keyword, values in parts.items():
        options[keyword] = COMPOSED[keyword](**values)
    return options


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


def _say(args: argparse.Namespace, message: str) -> None:
    """A progress message, note or warning on stderr, unless ``--quiet``."""
    if not args.quiet:
        print(f"dplong: {message}", file=sys.stderr, flush=True)


def _run_fit(args: argparse.Namespace, command: str) -> int:
    with warnings.catch_warnings():
        if args.quiet:  # the result and errors only: not even a reader's deprecation warning
            warnings.simplefilter("ignore")
        return _fit_and_print(args, command)


def _fit_and_print(args: argparse.Namespace, command: str) -> int:
    spec = MODELS[args.model]
    _check_arguments(args, spec)
    levels = _declared_levels(args.levels)
    _say(args, f"reading {args.data}…")
    raw = read_file(args.data, time=args.time)
    _check_columns(raw, args, levels)
    data = typed(raw, levels=levels, groups=args.groups, time=args.time)
    for column in _unread_columns(raw, data, args):
        what, hint = (
            ("among its --levels", "")
            if column in levels
            else ("numbers or ISO 8601 dates", "")
            if column == args.time
            else ("numbers", f" (a factor needs its levels declared: --levels {column}=...)")
        )
        _say(
            args,
            f"warning: DATA holds values of {column!r} that are not {what}; they are "
            f"read as missing{hint}",
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _say(args, "building design…")
        model_options = _stage_options(args, spec, "model")
        if levels:
            model_options["levels"] = levels
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
            _say(args, f"warning: {_one_line(warning.message)}")
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


def _fitted(model: Any, options: dict[str, Any]) -> Any:
    """``model.fit(**options)``, a stated moment bound's refusal naming its flag (the fit
    knows the number of columns it releases; its message names the Moment's bound)."""
    try:
        return model.fit(**options)
    except ParameterError as err:
        if "tail" in options and str(err).startswith("Moment bound"):
            raise ParameterError(f"--tail-bound: {err}") from None
        raise


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
        if spec.uses_groups:
            ids = raw[args.groups].dropna()
            n = int(ids.nunique().compute() if is_dask(raw) else ids.nunique())
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


def _one_line(message: object) -> str:
    """The first line of a message (patsy adds lines pointing at the formula)."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return lines[0] if lines else type(message).__name__


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
        DplongError`, after a one-line message on stderr (never a traceback).

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
        print(f"dplong: error: {_one_line(err)}", file=sys.stderr)
        return 2
