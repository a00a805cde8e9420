"""The options the registered models bring (:data:`~dplong.models.command_line.MODELS`): each
once, and the models that take it."""

from __future__ import annotations

from dplong.models.command_line import MODELS, Option


def _users_of(keyword: str) -> dict[str, Option]:
    """The models that take option ``keyword``, with their own spec of it."""
    users = {name: spec.option(keyword) for name, spec in MODELS.items()}
    return {name: own for name, own in users.items() if own is not None}


def _read_per_model(keyword: str) -> bool:
    """Whether the models taking option ``keyword`` read its text differently (``--bounds``:
    ranges of named columns for pooled, one range for nw): the parser then keeps the text and
    :func:`~dplong.cli.keywords._stage_options` reads it as the chosen model does."""
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
