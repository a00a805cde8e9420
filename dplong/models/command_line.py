"""How each formula model appears on the command line: ``dplong fit --model NAME``.

A model module registers one :class:`CommandLineModel` — its builder, a line of help and the
options only it takes — and :mod:`dplong.cli` builds its parser from :data:`MODELS`: a new
model needs no edit of the command line. Each :class:`Option` says where it goes: to the
model's ``from_formula`` (``"model"``: what defines the estimator, such as a kernel's domain)
or to ``fit`` (``"fit"``: how it is released), how its text is read (``kind``) and whether the
model cannot do without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["MODELS", "CommandLineModel", "Option", "register"]

#: How an option's text is read: an integer, a real number, a positive number, a range
#: ``LO,HI``, a number of grid points (>= 2), a word (with ``choices``), column names
#: ``A,B`` (a tuple), or no text at all (a ``flag``: given, it passes True).
Kind = Literal["int", "float", "positive", "range", "count", "text", "names", "flag"]


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
    options: tuple[Option, ...] = ()

    def option(self, keyword: str) -> Option | None:
        """This model's option ``keyword``, if it takes one."""
        return next((o for o in self.options if o.keyword == keyword), None)


#: The models of ``dplong fit``, by name, in the order they were registered.
MODELS: dict[str, CommandLineModel] = {}


def register(model: CommandLineModel) -> None:
    """Offer ``model`` on the command line (its name must be new).

    Examples
    --------
    >>> from dplong.models.command_line import MODELS
    >>> sorted(MODELS)
    ['between', 'kernel', 'location', 'mean', 'ols', 'poisson', 'pooled', 're']
    """
    if model.name in MODELS:
        raise ValueError(f"a model named {model.name!r} is registered already")
    MODELS[model.name] = model
