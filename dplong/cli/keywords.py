"""The keyword arguments passed to a model and its ``fit``: only the options given, each read
as the model reads it."""

from __future__ import annotations

import argparse
from typing import Any, Literal

from dplong.cli.errors import _InputError
from dplong.cli.model_options import _read_per_model
from dplong.cli.values import _PARSERS
from dplong.models.command_line import COMPOSED, CommandLineModel


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
    as it reads it (:func:`~dplong.cli.model_options._read_per_model`), parts of one value
    composed (:data:`~dplong.models.command_line.COMPOSED`)."""
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
