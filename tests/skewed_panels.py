"""Simulated panels shared by the tests of the regression families' silent-miss patterns
(docs/accuracy.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["correlated_effect_panel", "lognormal_outcome_panel", "rare_switch_panel"]


def lognormal_outcome_panel(seed: int) -> pd.DataFrame:
    """The first pattern's panel: 5,000 persons of 4 rows, ``y = exp(0.2 + 0.5 x + 0.3 treat
    + u + e)`` with ``treat`` a 0/1 person constant (40 %), x ~ N(0, 1) a row, u ~ N(0, 0.1) a
    person and e ~ N(0, 0.3) a row; columns ``id``, ``y``, ``x`` and ``treat``."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(5000), 4)
    treat, x = (rng.random(5000) < 0.4).astype(float), rng.normal(size=20000)
    u, e = rng.normal(0.0, 0.1, 5000), rng.normal(0.0, 0.3, 20000)
    y = np.exp(0.2 + 0.5 * x + 0.3 * treat[ids] + u[ids] + e)
    return pd.DataFrame({"id": ids, "y": y, "x": x, "treat": treat[ids]})


def correlated_effect_panel(seed: int, n: int = 3000) -> pd.DataFrame:
    """An audit's panel (docs/accuracy.md, "A long-tailed person effect beyond the
    Cauchy–Schwarz radius"): n persons of 2 to 10 rows, ``y = 1 + 0.5 x + 0.3 treat + u + e``
    with u a centred lognormal (σ = 1) person effect, ``x = 0.5 u + N(0, 1)`` a row (so x
    tracks the effect), ``treat`` a 0/1 person constant and e normal with a lognormal (σ =
    0.5) sd a person; columns ``id``, ``y``, ``x`` and ``treat``."""
    rng = np.random.default_rng(40_000 + seed)
    rows = rng.integers(2, 11, n)
    ids = np.repeat(np.arange(n), rows)
    u = rng.lognormal(0.0, 1.0, n) - np.exp(0.5)
    treat = rng.integers(0, 2, n)
    x = 0.5 * u[ids] + rng.normal(size=ids.size)
    e = rng.normal(size=ids.size) * rng.lognormal(0.0, 0.5, n)[ids]
    y = 1.0 + 0.5 * x + 0.3 * treat[ids] + u[ids] + e
    return pd.DataFrame({"id": ids, "x": x, "treat": treat[ids].astype(float), "y": y})


def rare_switch_panel(n: int, t: int) -> pd.DataFrame:
    """n persons of t rows (seed 10,000, an audit's first panel): ``d`` switches from 0 to 1
    once for 5 % of them (slope 2), ``x`` moves with it (``x = person + row + 3 d``, slope 0);
    ``y = 2 d + person + row``, normal parts of sd 1; columns ``id``, ``y``, ``x`` and ``d``."""
    rng = np.random.default_rng(10_000)
    ids, period = np.repeat(np.arange(n), t), np.tile(np.arange(t), n)
    mover, when = rng.random(n) < 0.05, rng.integers(1, t, n)
    d = ((period >= when[ids]) & mover[ids]).astype(float)
    x = rng.normal(size=n)[ids] + rng.normal(size=n * t) + 3.0 * d
    y = 2.0 * d + rng.normal(size=n)[ids] + rng.normal(size=n * t)
    return pd.DataFrame({"id": ids, "y": y, "x": x, "d": d})
