"""linearmodels' ``EntityEffects`` and ``TimeEffects`` formula terms, as dplong fits them.

``"y ~ x + EntityEffects"`` asks for the user (entity) effects to be absorbed: dplong's within
estimator (``fit(estimator="within")``, :mod:`dplong.models.within`). ``"+ TimeEffects"`` asks
for one effect per period: dummies of the time column, ``C(time)``, on its *declared* periods
(``levels={time: [...]}`` or a pandas ``Categorical`` time column) — the periods present in the
rows are private, so they are never read from them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from dplong.exceptions import FormulaError

__all__ = ["has_time_effects", "panel_effects"]

_EFFECTS = ("EntityEffects", "TimeEffects")


def panel_effects(
    formula: str, data: Any, *, time: Any, levels: Mapping[str, Any] | None
) -> tuple[str, bool]:
    """``formula`` with ``TimeEffects`` as ``C(time)`` and without ``EntityEffects``, and
    whether it had ``EntityEffects`` (the within estimator), decided on public facts: the
    formula, the time column's name, its declared levels or dtype.

    Raises
    ------
    FormulaError
        If an effects term is not a whole term of the right-hand side, or ``TimeEffects``
        comes without a named time column with declared periods (the message names the dplong
        spelling).

    Examples
    --------
    >>> from dplong.models.effects import panel_effects
    >>> panel_effects("lwage ~ exper + EntityEffects + TimeEffects", None, time="year",
    ...               levels={"year": [1980, 1981]})
    ('lwage ~ exper + C(year)', True)
    >>> panel_effects("lwage ~ exper", None, time=None, levels=None)
    ('lwage ~ exper', False)
    """
    if not isinstance(formula, str) or not re.search(r"\b(?:EntityEffects|TimeEffects)\b", formula):
        return formula, False  # the formula layer refuses what is not a formula
    lhs, tilde, rhs = formula.partition("~")
    terms = [term.strip() for term in _top_level_terms(rhs)]
    for term in terms:
        if term not in _EFFECTS and re.search(r"\b(?:EntityEffects|TimeEffects)\b", term):
            raise FormulaError(
                f"EntityEffects and TimeEffects are whole terms of the formula, as in "
                f"linearmodels ('y ~ x + EntityEffects + TimeEffects'); got {term!r}"
            )
    entity = "EntityEffects" in terms
    kept = [t for t in terms if t != "EntityEffects"]
    if "TimeEffects" in kept:
        kept = [_time_dummies(time, data, levels) if t == "TimeEffects" else t for t in kept]
    return f"{lhs.strip()} {tilde} {' + '.join(kept) or '1'}", entity


def has_time_effects(formula: str) -> bool:
    """Whether ``formula``'s right-hand side has the whole term ``TimeEffects`` (public).

    Examples
    --------
    >>> from dplong.models.effects import has_time_effects
    >>> has_time_effects("y ~ x + TimeEffects"), has_time_effects("y ~ TimeEffectsish")
    (True, False)
    """
    rhs = formula.partition("~")[2] if isinstance(formula, str) else ""
    return "TimeEffects" in (term.strip() for term in _top_level_terms(rhs))


def _top_level_terms(rhs: str) -> list[str]:
    """The right-hand side split at its top-level ``+`` (not inside brackets or quotes)."""
    terms, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(rhs):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "+" and depth == 0:
            terms.append(rhs[start:i])
            start = i + 1
    return [*terms, rhs[start:]]


def _time_dummies(time: Any, data: Any, levels: Mapping[str, Any] | None) -> str:
    """``C(time)`` when the time column's periods are declared; else the error naming how."""
    if not isinstance(time, str):
        raise FormulaError(
            'TimeEffects needs time= naming the time column (e.g. time="year") and its '
            "declared periods in levels=; or write the dummies as C(year) with "
            'levels={"year": [...]}'
        )
    declared = levels is not None and time in levels
    if not declared and not _categorical(data, time):
        raise FormulaError(
            f"TimeEffects makes one dummy per declared period of {time!r}: declare them, "
            f"levels={{{time!r}: [...]}} (the periods present in the data are private), or give "
            f"{time!r} a pandas Categorical dtype"
        )
    return f"C({time})" if time.isidentifier() else f"C(Q({time!r}))"


def _categorical(data: Any, column: str) -> bool:
    """Whether ``column`` of ``data`` has a pandas Categorical dtype (its categories declared)."""
    columns = getattr(data, "columns", ())
    return column in columns and isinstance(data[column].dtype, pd.CategoricalDtype)
