"""The argument parser of the ``dplong`` command, built from the models' registered options."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

import dplong
from dplong.cli.epilogs import _EPILOG, _PLAN_EPILOG
from dplong.cli.model_options import _read_per_model, _unique_options, _users_of
from dplong.cli.values import (
    _PARSERS,
    _alpha,
    _epsilon,
    _levels,
    _names,
    _positive,
    _positive_list,
    _probability,
    _seed,
    _users,
)
from dplong.models.command_line import MODELS

#: The attribute of the namespace being parsed that holds the destinations of the options given
#: so far (:class:`_Once`); :meth:`_Parser.parse_known_args` removes it, as argparse removes its
#: own record of unrecognised arguments.
_GIVEN = "_dplong_given"


class _Once(argparse.Action):
    """An option given at most once: a second value is refused (argparse would keep the last,
    so that ``--epsilon 4 --epsilon 0.5`` spent 0.5 without a word), before anything is read.
    Mixed into argparse's storing actions, which do the storing."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if option_string is not None:  # an option, not the positional DATA
            given: set[str] = vars(namespace).setdefault(_GIVEN, set())
            if self.dest in given:
                raise argparse.ArgumentError(None, f"{option_string} is given twice")
            given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class _StoreOnce(_Once, argparse._StoreAction):
    """``action="store"`` (the default), given at most once."""


class _StoreConstOnce(_Once, argparse._StoreConstAction):
    """``action="store_const"`` (a model's flag), given at most once."""


class _StoreTrueOnce(_Once, argparse._StoreTrueAction):
    """``action="store_true"`` (``--quiet``), given at most once."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, like the command's other refusals, and
    whose options are each given at most once (:class:`_Once`): every option but the
    repeatable ``--levels`` (``action="append"``), one a column."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the actions argparse takes by name, for this parser, its groups and subcommands
        for name, action in (
            (None, _StoreOnce),
            ("store", _StoreOnce),
            ("store_const", _StoreConstOnce),
            ("store_true", _StoreTrueOnce),
        ):
            self.register("action", name, action)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
        """As argparse's, the namespace without the record of the options given (:data:`_GIVEN`)."""
        parsed, extras = super().parse_known_args(*args, **kwargs)
        if hasattr(parsed, _GIVEN):
            delattr(parsed, _GIVEN)
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"dplong: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dplong`` command.

    Returns
    -------
    argparse.ArgumentParser
        With two subcommands, ``fit`` and ``plan``; ``dplong fit --help`` explains every option.

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
        allow_abbrev=False,  # "--error 1" to fit is an unknown option, not --error-sd
        description="User-level differentially private models for longitudinal (panel) data.",
    )
    parser.add_argument("--version", action="version", version=f"dplong {dplong.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    item_level = ", ".join(name for name, spec in MODELS.items() if not spec.uses_groups)
    privacy_unit = "user-level" + (f" (item-level for {item_level})" if item_level else "")
    fit = commands.add_parser(
        "fit",
        allow_abbrev=False,
        help=f"fit a model with {privacy_unit} differential privacy",
        description=f"Fit a model with {privacy_unit} differential privacy; print its summary "
        "and error bounds, and optionally write an HTML report.",
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
    _fit_only_arguments(_model_arguments(fit), fit.add_argument_group("output"))
    plan = commands.add_parser(
        "plan",
        allow_abbrev=False,
        help="predict a fit from public facts: refused or not, its noise, the epsilon it needs",
        description="Plan a fit from public facts only (the number of users, the formula, the "
        "options): whether it would be refused, its warnings, each released column's "
        "predicted privacy-noise sd, and the smallest epsilon at which it is released. No "
        "row is read: give --n, or DATA and --groups to count the users"
        + (f" (DATA alone to count the rows of {item_level}, each a unit)" if item_level else "")
        + ".",
        epilog=_PLAN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plan.add_argument(
        "data",
        nargs="?",
        metavar="DATA",
        help="optional: a file or dataset:NAME whose --groups column gives n (nothing else "
        "is read" + (f"; for {item_level}, its number of rows" if item_level else "") + ")",
    )
    # a fit's command line with ``plan`` for ``fit``: its noise and output options are parsed
    # (so that their values are not taken for DATA) and refused by name (dplong.cli.plan)
    hidden = plan.add_argument_group()
    _fit_only_arguments(_model_arguments(plan), hidden, shown=False)
    planned = plan.add_argument_group("plan")
    planned.add_argument(
        "--n",
        type=_users,
        metavar="N",
        help="number of users (public), instead of DATA"
        + (f"; for {item_level}, the number of rows" if item_level else ""),
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


#: The options of ``fit`` alone (its noise's seed and its output), by destination: a plan
#: draws no noise, computes no interval and writes no report.
FIT_ONLY = {"seed": "--seed", "alpha": "--alpha", "report": "--report", "quiet": "--quiet"}


def _fit_only_arguments(
    privacy: argparse._ArgumentGroup, output: argparse._ArgumentGroup, *, shown: bool = True
) -> None:
    """``fit``'s options of :data:`FIT_ONLY`: in its privacy and output groups, or parsed
    unshown (``plan``, which refuses them), where ``--alpha`` has no default either."""

    def described(text: str) -> str:
        return text if shown else argparse.SUPPRESS

    privacy.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help=described(
            "seed of the noise, for reproducible research only: never for a real release"
        ),
    )
    output.add_argument(
        "--alpha",
        type=_alpha,
        metavar="A",
        default=0.05 if shown else None,
        help=described("1 - confidence level of intervals and error bounds (default 0.05)"),
    )
    output.add_argument(
        "--report", metavar="FILE", help=described("write a self-contained HTML report")
    )
    output.add_argument(
        "--quiet",
        action="store_true",
        help=described(
            "print the result only: no progress, notes or warnings on stderr (errors still)"
        ),
    )


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
        help="the time column: it orders each user's rows where a model orders them (ols), "
        "and TimeEffects makes dummies of its declared periods (--levels) (models: "
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
        "--epsilon", required=True, type=_epsilon, metavar="EPS", help="total privacy budget ε > 0"
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
        help="public bound on every user's |statistic| per parameter (number or comma list); "
        "needed for local",
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
