"""The shipped examples, the smallest ε at which each is released, and their table in
``dplong fit --help``."""

from __future__ import annotations

from typing import Any

#: The shipped examples and the smallest ε at which each is released, then released without a
#: warning (``dplong plan``; tests/test_planning.py checks them against the planner): data
#: set, users' column, model, formula, model and fit options, the two ε (the second None where
#: a warning holds at every ε: the location model's on its components' unchecked tails).
SHIPPED_EXAMPLES: tuple[tuple[str, str, str, str, dict[str, Any], float, float | None], ...] = (
    ("wage_panel", "nr", "ols", "lwage ~ exper + expersq", {}, 0.61, 1.5),
    ("wage_panel", "nr", "ols", "lwage ~ exper + expersq", {"estimator": "within"}, 1.4, 16.0),
    ("wage_panel", "nr", "location", "lwage ~ 1", {}, 0.6, 3.7),
    ("wage_panel", "nr", "mean", "lwage ~ 1", {}, 0.21, 1.5),
    ("dietox", "Pig", "location", "Weight ~ 1", {}, 4.6, 23.0),
    ("dietox", "Pig", "mean", "Weight ~ 1", {}, 1.6, 12.0),
    ("dietox", "Pig", "kernel", "Weight ~ Time", {"domain": (1, 12), "bandwidth": 1}, 19.0, 29.0),
    (
        "dietox",
        "Pig",
        "kernel",
        "Weight ~ Time",
        {"domain": (1, 12), "bandwidth": 1, "grid": 6, "scale": 250},
        8.3,
        12.0,
    ),
    ("randhie", "zper", "mean", "meddol ~ 1", {}, 0.019, 0.14),
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
