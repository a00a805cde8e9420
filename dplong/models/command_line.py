"""How each formula model appears on the command line: ``dplong fit --model NAME``.

A model module registers one :class:`CommandLineModel` — its builder, a line of help and the
options only it takes — and :mod:`dplong.cli` builds its parser from :data:`MODELS`: a new
model needs no edit of the command line. Each :class:`Option` says where it goes: to the
model's ``from_formula`` (``"model"``: what defines the estimator, such as a kernel's domain)
or to ``fit`` (``"fit"``: how it is released), how its text is read (``kind``) and whether the
model cannot do without it. A value given in parts (a stated moment bound: its order and its
bounds) is a keyword of :data:`COMPOSED`, its options naming it in ``part_of``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from dplong.exceptions import ParameterError
from dplong.models.option_checks import DEFAULT_MAX_ROWS
from dplong.privacy.radius import Moment

__all__ = [
    "BOUNDS_OPTION",
    "COMPOSED",
    "FOUND_MAX_ROWS_OPTION",
    "MAX_ROWS_OPTION",
    "MODELS",
    "PTR_FLOOR_OPTION",
    "TAIL_OPTIONS",
    "CommandLineModel",
    "Option",
    "register",
]

#: How an option's text is read: an integer, a real number, a positive number, positive
#: numbers ``A,B,...`` (one is a number, several a list), a range ``LO,HI``, a pair of numbers
#: ``A,B`` (a tuple, checked by the model), a number of grid points (>= 2), a word (with
#: ``choices``), column names ``A,B`` (a tuple), or no text at all (a ``flag``: given, it
#: passes True).
Kind = Literal[
    "int", "float", "positive", "positives", "range", "pair", "count", "text", "names", "flag"
]


@dataclass(frozen=True)
class Option:
    """An option only some models take, passed as ``keyword`` when given."""

    keyword: str
    kind: Kind
    metavar: str
    help: str
    stage: Literal["model", "fit"] = "fit"
    required: bool = False
    choices: tuple[str, ...] | None = None
    #: The keyword of :data:`COMPOSED` this option is a part of (None: passed as itself).
    part_of: str | None = None

    @property
    def flag(self) -> str:
        """The command line's spelling, e.g. ``--max-rows``."""
        return "--" + self.keyword.replace("_", "-")


@dataclass(frozen=True)
class CommandLineModel:
    """A model of ``dplong fit``: ``build(formula, data, groups=..., **model_options)`` — a
    ``from_formula``, given ``time=`` too when ``uses_time`` — returns an object with
    ``nobs_users`` and ``fit(**options)``."""

    name: str
    build: Callable[..., Any]
    help: str
    uses_time: bool = False
    uses_levels: bool = True
    #: False for an item-level model, whose every row is a unit: it takes no ``groups``.
    uses_groups: bool = True
    options: tuple[Option, ...] = ()

    def option(self, keyword: str) -> Option | None:
        """This model's option ``keyword``, if it takes one."""
        return next((o for o in self.options if o.keyword == keyword), None)


def stated_moment(*, tail_moment: float, tail_bound: float | list[float]) -> Moment:
    """``tail=`` from ``--tail-moment K --tail-bound B,...``: :class:`dplong.Moment`, its
    refusals naming the flag that holds the bad value.

    Examples
    --------
    >>> from dplong.models.command_line import stated_moment
    >>> stated_moment(tail_moment=4.0, tail_bound=[40.0, 0.25]).bounds(2).tolist()
    [40.0, 0.25]
    >>> stated_moment(tail_moment=1.5, tail_bound=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: --tail-moment 1.5: Moment needs k >= 2 ...
    """
    try:
        Moment(tail_moment, 1.0)
    except ParameterError as err:
        raise ParameterError(f"--tail-moment {tail_moment:g}: {err}") from None
    return Moment(tail_moment, tail_bound)


#: Keywords given in several options (:attr:`Option.part_of`): how their parts, passed by
#: their own keywords, make the value.
COMPOSED: dict[str, Callable[..., Any]] = {"tail": stated_moment}

#: ``tail=`` as a stated moment bound (:class:`dplong.Moment`), for the fits that take one.
TAIL_OPTIONS = (
    Option(
        "tail_moment",
        "float",
        "K",
        "order k >= 2 of a stated moment bound E|X - mean|^k <= B of one user's statistic "
        "(dplong.Moment, public): the clip and the bias bound follow from it; with "
        "--tail-bound",
        part_of="tail",
    ),
    Option(
        "tail_bound",
        "positives",
        "B",
        "the moment bound B of --tail-moment: one number, or one per released column "
        "separated by commas, in the statistic's units to the power k",
        part_of="tail",
    ),
)

#: The ePTR test's public floor c₀ (its model's fit says what it bounds).
PTR_FLOOR_OPTION = Option(
    "ptr_floor",
    "positive",
    "C0",
    "floor c0 of the ePTR test: pooled --method ptr, a public lower bound on "
    "lambda_min(X'X)/n of the design scaled to --bounds (required there); nw, every grid "
    "point's kernel degree as a share of n (default: half a uniform design's at the ends)",
)

#: Public ranges of the outcome and columns (``bounds=`` of the sufficient-statistics models).
BOUNDS_OPTION = Option(
    "bounds",
    "text",
    "COL=LO,HI;...",
    "public ranges of the outcome and columns (free; others are found privately); a value "
    "starting with '-' takes '=': --bounds=-5,8",
    stage="model",
)

#: The public cap on the rows that raise a user's weight, for the weighted fits.
MAX_ROWS_OPTION = Option(
    "max_rows",
    "int",
    "T",
    f"public cap on the rows that raise a user's weight (default {DEFAULT_MAX_ROWS}); ols: "
    "--estimator within only, location: precision weights only",
)

#: The cap on a person's rows of the pooled family's fits, found privately where not given.
FOUND_MAX_ROWS_OPTION = Option(
    "max_rows",
    "int",
    "T",
    "public cap on a person's rows that count (default: found privately, at most "
    f"{DEFAULT_MAX_ROWS}; stating it spends nothing on it)",
)

#: The models of ``dplong fit``, by name, in the order they were registered.
MODELS: dict[str, CommandLineModel] = {}


def register(model: CommandLineModel) -> None:
    """Offer ``model`` on the command line (its name must be new).

    Examples
    --------
    >>> from dplong.models.command_line import MODELS
    >>> sorted(MODELS)
    ['between', 'kernel', 'location', 'mean', 'nw', 'ols', 'panel', 'poisson', 'pooled', 're']
    """
    if model.name in MODELS:
        raise ValueError(f"a model named {model.name!r} is registered already")
    MODELS[model.name] = model
