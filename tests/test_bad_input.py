"""The bad-input battery (docs/design §5.5, issue 11): every public entry point, table-driven.

Three tables:

* :data:`REFUSALS` — an argument that cannot be used. The call must raise the most specific
  class of :mod:`dplong.exceptions`, with a short one-paragraph message that names the
  argument, and it must do so before any noise: the ``random_state`` Generator's state is
  unchanged (every draw advances it) and the ``Accountant`` recorded nothing.
* :data:`ODD_DATA` — data values that are odd but valid (huge, infinite, missing, pandas'
  ``pd.NA``). They are not refusals: the release runs, and every number it reports is either
  an honest estimate or NaN with the reason said (``failed`` or a warning).
* :data:`CLI_REFUSALS` — bad command lines: exit code 2, one line on stderr, no traceback.

A numeric option is a real number: a string (``epsilon="1"``) or a bool (``epsilon=True``) is
refused, never coerced, so that a typo in a configuration file cannot silently change a
release. Anything that is not a :mod:`dplong.exceptions` error escapes ``pytest.raises`` and
fails the test: the battery counts raw exceptions as failures.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_cli import given

import dplong
import dplong.io
import dplong.simulate
from dplong.cli import main
from dplong.dependence import (
    AR1,
    Exchangeable,
    GivenCovariance,
    Independent,
    RandomEffects,
    Toeplitz,
)
from dplong.exceptions import (
    BudgetExceededError,
    DataError,
    DataHolderWarning,
    DplongError,
    DplongWarning,
    FormulaError,
    InsufficientUsersError,
    ParameterError,
    PrivacyParameterError,
)
from dplong.formula import DesignSpec
from dplong.models.mean import ColumnMean
from dplong.privacy.histogram import bin_centre, bin_index, stable_histogram
from dplong.privacy.interval import central_midpoint
from dplong.privacy.radius import moment_bias
from dplong.results import CurveResults, PanelResults

#: A message is for a person: short, and one paragraph.
MAX_MESSAGE = 500

# ---------------------------------------------------------------------------------------------
# Data and models, built once
# ---------------------------------------------------------------------------------------------


@cache
def panel() -> pd.DataFrame:
    """400 users of 4 rows; ``site`` is text, ``when`` a date, ``flag`` a bool."""
    frame = dplong.simulate.linear_panel(400, 4, [1.0, 0.5], random_state=0)
    return frame.assign(
        site=np.where(frame.index % 3 == 0, "north", "south"),
        when=pd.Timestamp("2000-01-01") + pd.to_timedelta(frame["time"], unit="D"),
        flag=frame.index % 2 == 0,
    )


@cache
def items() -> pd.DataFrame:
    """2,000 items at public design points on [0, 1]."""
    x = np.arange(2000) / 2000
    y = np.sin(2 * np.pi * x) + np.random.default_rng(1).normal(0, 0.5, x.size)
    return pd.DataFrame({"x": x, "y": y, "user": np.arange(x.size) % 400})


@cache
def values() -> np.ndarray:
    return np.random.default_rng(2).normal(1.0, 1.0, 2000)


@cache
def ols() -> dplong.LongitudinalOLS:
    return dplong.LongitudinalOLS.from_formula("y ~ x1", panel(), groups="user", time="time")


@cache
def location() -> dplong.RandomEffectsLocation:
    return dplong.RandomEffectsLocation.from_formula("y ~ 1", panel(), groups="user")


@cache
def curve_items() -> dplong.PriestleyChao:
    return dplong.PriestleyChao.from_formula("y ~ x", items(), domain=(0, 1), bandwidth=0.1, grid=5)


@cache
def curve_users() -> dplong.PriestleyChao:
    return dplong.PriestleyChao.from_formula(
        "y ~ x", items(), groups="user", domain=(0, 1), bandwidth=0.2, grid=5
    )


@cache
def random_effects() -> dplong.RandomEffects:
    return dplong.RandomEffects.from_formula("y ~ x1", panel(), groups="user")


@cache
def pooled(model: type[dplong.PooledOLS]) -> dplong.PooledOLS:
    """A model of the pooled family (PooledOLS, PanelOLS, BetweenOLS, RandomEffects)."""
    return model.from_formula("y ~ x1", panel(), groups="user")


@cache
def fitted() -> PanelResults:
    return ols().fit(epsilon=1.0, scale=[1.0, 1.0], random_state=0)


@cache
def fitted_curve() -> CurveResults:
    return curve_items().fit(epsilon=1.0, error_sd=0.5, amplitude=1.0, random_state=0)


# ---------------------------------------------------------------------------------------------
# The refusal table
# ---------------------------------------------------------------------------------------------


@dataclass
class Probe:
    """What a refusal must leave untouched: a Generator (its state) and an Accountant."""

    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(7))
    accountant: dplong.Accountant = field(
        default_factory=lambda: dplong.Accountant(epsilon=100.0, delta=0.5)
    )


@dataclass(frozen=True)
class Refusal:
    """One row: how to call the entry point, the exception expected and a substring of its
    message that names the argument."""

    name: str
    call: Callable[[Probe], object]
    error: type[DplongError]
    names: str


REFUSALS: list[Refusal] = []


def refuse(name: str, error: type[DplongError], names: str) -> Callable[..., Any]:
    """Decorator adding a refusal row whose call is the decorated function."""

    def add(call: Callable[[Probe], object]) -> Callable[[Probe], object]:
        REFUSALS.append(Refusal(name, call, error, names))
        return call

    return add


def refusal(name: str, call: Callable[[], object], error: type[DplongError], names: str) -> None:
    """A refusal row for an entry point that draws no noise (it ignores the probe)."""
    REFUSALS.append(Refusal(name, lambda _: call(), error, names))


def fit_refusals(
    label: str, fit: Callable[..., object], base: dict[str, Any], table: list[tuple[Any, ...]]
) -> None:
    """Rows ``fit(**base, key=value)`` for ``(key, value, error, names)`` in ``table``; the
    probe's Generator and Accountant are passed unless the row sets them itself."""
    for key, value, error, names in table:
        options = {**base, key: value}

        def call(probe: Probe, options: dict[str, Any] = options) -> object:
            given = {"random_state": probe.rng, "accountant": probe.accountant} | options
            return fit(**given)

        REFUSALS.append(Refusal(f"{label}({key}={_shown(value)})", call, error, names))


def _shown(value: Any) -> str:
    """A short, reproducible label of an argument (test ids must not hold addresses)."""
    if isinstance(value, np.ndarray | pd.Series | pd.DataFrame):
        dtype = value.dtypes.unique().tolist() if isinstance(value, pd.DataFrame) else value.dtype
        return f"{type(value).__name__} of {dtype}, shape {value.shape}"
    text = repr(value)
    return type(value).__name__ if " at 0x" in text else text


#: Options every release takes, with values of the wrong type, sign or range.
COMMON: list[tuple[Any, ...]] = [
    ("epsilon", "1", PrivacyParameterError, "epsilon"),
    ("epsilon", True, PrivacyParameterError, "epsilon"),
    ("epsilon", math.nan, PrivacyParameterError, "epsilon"),
    ("epsilon", math.inf, PrivacyParameterError, "epsilon"),
    ("epsilon", -1.0, PrivacyParameterError, "epsilon"),
    ("epsilon", 0, PrivacyParameterError, "epsilon"),
    ("epsilon", None, PrivacyParameterError, "epsilon"),
    ("epsilon", [1.0], PrivacyParameterError, "epsilon"),
    ("delta", "1e-6", PrivacyParameterError, "delta"),
    ("delta", True, PrivacyParameterError, "delta"),
    ("delta", math.nan, PrivacyParameterError, "delta"),
    ("delta", 0.0, PrivacyParameterError, "delta"),
    ("delta", 1.0, PrivacyParameterError, "delta"),
    ("delta", -1e-6, PrivacyParameterError, "delta"),
    ("gamma", "0.05", ParameterError, "gamma"),
    ("gamma", True, ParameterError, "gamma"),
    ("gamma", math.nan, ParameterError, "gamma"),
    ("gamma", 0.0, ParameterError, "gamma"),
    ("gamma", 1.0, ParameterError, "gamma"),
    ("random_state", -1, ParameterError, "random_state"),
    ("random_state", 1.5, ParameterError, "random_state"),
    ("random_state", "0", ParameterError, "random_state"),
    ("random_state", True, ParameterError, "random_state"),
    ("random_state", np.random.RandomState(0), ParameterError, "random_state"),
    ("accountant", 1.0, ParameterError, "accountant"),
    ("privacy", "shuffle", ParameterError, "privacy"),
    ("privacy", None, ParameterError, "privacy"),
    ("variant", "improved", ParameterError, "variant"),
    ("refine", 1, ParameterError, "refine"),
    ("refine", "yes", ParameterError, "refine"),
    ("bound", 1.0, ParameterError, "bound"),  # central: a bound would be ignored, so refused
    ("privacy", "local", ParameterError, "bound"),  # local without its public bound
    ("epsilon", 1e308, PrivacyParameterError, "at most 1e+300"),  # overflowed the accounting
]

#: Local-model bounds of the wrong kind.
LOCAL: list[tuple[Any, ...]] = [
    ("bound", "1", ParameterError, "bound"),
    ("bound", -1.0, ParameterError, "bound"),
    ("bound", 0.0, ParameterError, "bound"),
    ("bound", math.nan, ParameterError, "bound"),
    ("bound", math.inf, ParameterError, "bound"),
    ("bound", True, ParameterError, "bound"),
    ("bound", 1e300, ParameterError, "bound"),  # its noise's square would overflow
]

#: ``scale`` of a model with two parameters.
SCALES: list[tuple[Any, ...]] = [
    ("scale", -1.0, ParameterError, "scale"),
    ("scale", 0.0, ParameterError, "scale"),
    ("scale", math.nan, ParameterError, "scale"),
    ("scale", math.inf, ParameterError, "scale"),
    ("scale", "1", ParameterError, "scale"),
    ("scale", True, ParameterError, "scale"),
    ("scale", ["1", "2"], ParameterError, "scale"),
    ("scale", [1.0, 2.0, 3.0], ParameterError, "scale"),
    ("scale", "estimated", ParameterError, "scale"),
    ("scale", None, ParameterError, "scale"),
    ("scale", {"x1": 1.0}, ParameterError, "scale"),
]


def _mean(**options: Any) -> object:
    data = options.pop("values", values())
    return dplong.winsorized_mean(data, **options)


fit_refusals("winsorized_mean", _mean, {"epsilon": 1.0}, COMMON + SCALES[:6])
fit_refusals("winsorized_mean[local]", _mean, {"epsilon": 1.0, "privacy": "local"}, LOCAL)
fit_refusals(
    "winsorized_mean",
    _mean,
    {"epsilon": 1.0},
    [
        ("tau", 0.0, ParameterError, "tau"),
        ("tau", -1.0, ParameterError, "tau"),
        ("tau", "2", ParameterError, "tau"),
        ("tau", math.inf, ParameterError, "tau"),
        ("names", 5, ParameterError, "names"),
        ("names", ["a", "b"], ParameterError, "names"),
        ("names", [None], ParameterError, "names"),
        ("focus", 5, ParameterError, "focus"),
        ("focus", ["nope"], ParameterError, "focus"),
        ("focus", {"x": 2.0}, ParameterError, "focus"),
        ("focus", {"x": "a"}, ParameterError, "focus"),
        ("groups", [1, 2], DataError, "groups"),
        ("groups", np.zeros((2000, 2)), DataError, "groups"),
        ("groups", np.zeros(2000), InsufficientUsersError, "2 users"),
        ("values", [], DataError, "values"),
        ("values", np.empty((10, 0)), DataError, "values"),
        ("values", np.zeros((2, 2, 2)), DataError, "values"),
        ("values", [1.0], InsufficientUsersError, "2 users"),
        ("values", np.array(["a"] * 2000), DataError, "values"),
        ("values", pd.Series(["1.5"] * 2000), DataError, "values"),
        ("values", pd.Series(pd.date_range("2000-01-01", periods=2000)), DataError, "date"),
        ("values", np.arange(2000).astype("datetime64[D]"), DataError, "date"),
        ("values", pd.Series(pd.to_timedelta(np.arange(2000), unit="s")), DataError, "date"),
        ("values", pd.Series(["a", "b"] * 1000, dtype="category"), DataError, "values"),
        ("values", pd.DataFrame({"a": [1.0] * 2000, "b": ["x"] * 2000}), DataError, "'b'"),
        ("values", np.ones(2000) + 1j, DataError, "values"),
        ("values", "12345", DataError, "values"),
    ],
)
fit_refusals(
    "winsorized_mean[theory]",
    _mean,
    {"epsilon": 1.0, "variant": "theory"},
    [
        ("scale", -1.0, ParameterError, "scale"),
        ("epsilon", 1e-3, PrivacyParameterError, "epsilon"),
    ],
)
fit_refusals(
    "winsorized_mean",
    _mean,
    {"epsilon": 1.0},
    [
        ("accountant", dplong.Accountant(0.5), BudgetExceededError, "epsilon"),
        ("epsilon", 1e-7, InsufficientUsersError, "epsilon"),
    ],
)

fit_refusals(
    "LongitudinalOLS.fit",
    lambda **o: ols().fit(**o),
    {"epsilon": 1.0},
    COMMON
    + SCALES
    + [
        ("focus", 5, ParameterError, "focus"),
        ("focus", ["nope"], ParameterError, "focus"),
        ("focus", {"x1": 0.0}, ParameterError, "focus"),
        ("focus", {"x1": True}, ParameterError, "focus"),
        ("min_rows", 4, ParameterError, "min_rows"),  # only with a dependence model
        ("min_eigenvalue", 0.5, ParameterError, "min_eigenvalue"),
        ("cov_type", "robust", ParameterError, "cov_type"),  # rows of a person as independent
        ("cov_type", "unadjusted", ParameterError, "cov_type"),
        ("cov_type", "HC0", ParameterError, "cov_type"),
        ("cov_type", "kernel", ParameterError, "cov_type"),
        ("cov_type", None, ParameterError, "cov_type"),
        # the per-user estimator weighs every user alike: a cap it would ignore
        ("max_rows", 5, ParameterError, 'max_rows applies to estimator="within" only'),
        ("max_rows", "3", ParameterError, 'max_rows applies to estimator="within" only'),
        ("max_rows", 0, ParameterError, 'max_rows applies to estimator="within" only'),
        ("max_rows", -1, ParameterError, 'max_rows applies to estimator="within" only'),
        ("max_rows", math.nan, ParameterError, 'max_rows applies to estimator="within" only'),
        ("max_rows", True, ParameterError, 'max_rows applies to estimator="within" only'),
    ],
)
#: ``max_rows`` where a fit weighs a user's rows up to it: an integer within its public limit.
MAX_ROWS: list[tuple[Any, ...]] = [
    ("max_rows", 0, ParameterError, "max_rows"),
    ("max_rows", -1, ParameterError, "max_rows"),
    ("max_rows", "3", ParameterError, "max_rows"),
    ("max_rows", 2.5, ParameterError, "max_rows"),
    ("max_rows", math.nan, ParameterError, "max_rows"),
    ("max_rows", True, ParameterError, "max_rows"),
    ("max_rows", 10**5 + 1, ParameterError, "from 1 to 100,000"),
    ("max_rows", 10**9, ParameterError, "from 1 to 100,000"),
]
fit_refusals(
    "LongitudinalOLS.fit[within]",
    lambda **o: ols().fit(**o),
    {"epsilon": 1.0, "estimator": "within"},
    [
        ("max_rows", 1, ParameterError, "from 2 to 100,000"),
        ("max_rows", 10**9, ParameterError, "from 2 to 100,000"),
        ("max_rows", "3", ParameterError, "max_rows"),
        ("max_rows", True, ParameterError, "max_rows"),
    ],
)
for family in (dplong.PooledOLS, dplong.PanelOLS, dplong.RandomEffects):
    fit_refusals(
        f"{family.__name__}.fit",
        lambda family=family, **o: pooled(family).fit(**o),
        {"epsilon": 1.0},
        MAX_ROWS,
    )
fit_refusals(  # a person is one row (their means): a cap it would ignore
    "BetweenOLS.fit",
    lambda **o: pooled(dplong.BetweenOLS).fit(**o),
    {"epsilon": 1.0},
    [("max_rows", 8, ParameterError, "max_rows applies to fits that weigh a person's rows")],
)
fit_refusals(
    "LongitudinalOLS.fit[local]",
    lambda **o: ols().fit(**o),
    {"epsilon": 1.0, "privacy": "local"},
    LOCAL,
)
fit_refusals(
    "LongitudinalOLS.fit[AR1]",
    lambda **o: ols().fit(**o),
    {"epsilon": 1.0, "scale": AR1(0.5), "min_rows": 4, "min_eigenvalue": 0.5},
    [
        ("min_rows", None, ParameterError, "min_rows"),
        ("min_rows", 0, ParameterError, "min_rows"),
        ("min_rows", 2.5, ParameterError, "min_rows"),
        ("min_rows", "4", ParameterError, "min_rows"),
        ("min_rows", True, ParameterError, "min_rows"),
        ("min_rows", -3, ParameterError, "min_rows"),
        ("min_eigenvalue", None, ParameterError, "min_eigenvalue"),
        ("min_eigenvalue", 0.0, ParameterError, "min_eigenvalue"),
        ("min_eigenvalue", -1.0, ParameterError, "min_eigenvalue"),
        ("min_eigenvalue", math.nan, ParameterError, "min_eigenvalue"),
        ("min_eigenvalue", "0.5", ParameterError, "min_eigenvalue"),
        ("min_eigenvalue", True, ParameterError, "min_eigenvalue"),
    ],
)

fit_refusals(
    "RandomEffectsLocation.fit",
    lambda **o: location().fit(**o),
    {"epsilon": 1.0, "scale": 1.0},
    [
        *COMMON[:20],
        ("within_scale", -1.0, ParameterError, "within_scale"),
        ("within_scale", 0.0, ParameterError, "within_scale"),
        ("within_scale", math.nan, ParameterError, "within_scale"),
        ("within_scale", math.inf, ParameterError, "within_scale"),
        ("within_scale", "1", ParameterError, "within_scale"),
        ("within_scale", True, ParameterError, "within_scale"),
        ("within_scale", [1.0, 2.0], ParameterError, "within_scale"),
        # subnormal: the components' lattice unit was 0, a division by zero after the noise
        ("within_scale", 1e-310, ParameterError, "within_scale must be from 2.23e-308"),
        ("within_scale", 1e200, ParameterError, "within_scale must be from 2.23e-308"),
        ("variance_share", 1.0, ParameterError, "variance_share"),
        ("variance_share", -0.1, ParameterError, "variance_share"),
        ("variance_share", math.nan, ParameterError, "variance_share"),
        ("variance_share", "0.5", ParameterError, "variance_share"),
        ("variance_share", True, ParameterError, "variance_share"),
        ("min_rows", 0, ParameterError, "min_rows"),
        ("min_rows", 2.5, ParameterError, "min_rows"),
        ("min_rows", "4", ParameterError, "min_rows"),
        ("min_rows", False, ParameterError, "min_rows"),
        ("scale", -1.0, ParameterError, "scale"),
        ("scale", "1", ParameterError, "scale"),
        ("scale", [1.0, 2.0], ParameterError, "scale"),
        ("scale", RandomEffects(1.0), ParameterError, "min_rows"),
        *MAX_ROWS,
    ],
)
fit_refusals(  # the components' variances square the stated proxies: they overflowed
    "RandomEffectsLocation.fit[stated]",
    lambda **o: location().fit(**o),
    {"epsilon": 1.0, "scale": 1.0, "within_scale": 1.0, "min_rows": 4},
    [
        ("scale", 1e300, ParameterError, "scale must be at most 1e+150"),
        # the model gives the residual scale: a within_scale it would ignore is refused (an
        # audit: 1.0 and 100.0 gave the same fit)
        ("scale", RandomEffects(1.0, 1.0), ParameterError, "within_scale is given by"),
    ],
)
fit_refusals(
    "RandomEffectsLocation.fit[model]",
    lambda **o: location().fit(**o),
    {"epsilon": 1.0, "scale": RandomEffects(1.0, 1.0), "min_rows": 4},
    [
        ("scale", RandomEffects(1e300, 1.0), ParameterError, "scale must be at most 1e+150"),
        ("scale", RandomEffects(1.0, 1e-310), ParameterError, "scale's residual variance"),
    ],
)
fit_refusals(  # equal weights ignore the rows: a cap they would ignore
    "RandomEffectsLocation.fit[equal]",
    lambda **o: location().fit(**o),
    {"epsilon": 1.0, "scale": 1.0, "weights": "equal"},
    [("max_rows", 3, ParameterError, 'max_rows applies with weights="precision" only')],
)

fit_refusals(
    "PriestleyChao.fit[item]",
    lambda **o: curve_items().fit(**o),
    {"epsilon": 1.0, "error_sd": 0.5, "amplitude": 1.0},
    [
        *COMMON[:20],
        ("error_sd", "0.5", ParameterError, "error_sd"),
        ("error_sd", True, ParameterError, "error_sd"),
        ("error_sd", 0.0, ParameterError, "error_sd"),
        ("error_sd", math.inf, ParameterError, "error_sd"),
        ("amplitude", -1.0, ParameterError, "amplitude"),
        ("amplitude", "1", ParameterError, "amplitude"),
        ("lipschitz", 0.0, ParameterError, "lipschitz"),
        ("lipschitz", "1", ParameterError, "lipschitz"),
        ("sup_norm", -2.0, ParameterError, "sup_norm"),
        ("scale", 1.0, ParameterError, "scale"),
    ],
)
fit_refusals(
    "PriestleyChao.fit[user]",
    lambda **o: curve_users().fit(**o),
    {"epsilon": 4.0, "scale": 1.0},
    [
        *COMMON[:6],
        ("scale", [1.0, 2.0], ParameterError, "scale"),
        ("scale", "1", ParameterError, "scale"),
        ("scale", -1.0, ParameterError, "scale"),
        ("scale", AR1(0.5), ParameterError, "scale"),
        ("error_sd", 1.0, ParameterError, "error_sd"),
        ("lipschitz", 1.0, ParameterError, "lipschitz"),
    ],
)


# --- from_formula: formulas, data and the options that define the model ----------------------


def _ols(formula: str = "y ~ x1", data: Any = None, **options: Any) -> object:
    options.setdefault("groups", "user")
    return dplong.LongitudinalOLS.from_formula(
        formula, panel() if data is None else data, **options
    )


def _location(formula: str = "y ~ 1", data: Any = None, **options: Any) -> object:
    options.setdefault("groups", "user")
    return dplong.RandomEffectsLocation.from_formula(
        formula, panel() if data is None else data, **options
    )


def _curve(formula: str = "y ~ x", data: Any = None, **options: Any) -> object:
    options = {"domain": (0, 1), "bandwidth": 0.1} | options
    return dplong.PriestleyChao.from_formula(formula, items() if data is None else data, **options)


def _column_mean(formula: str = "y ~ 1", data: Any = None, **options: Any) -> Any:
    options.setdefault("groups", "user")
    return ColumnMean.from_formula(formula, panel() if data is None else data, **options)


def _pooled(formula: str = "y ~ x1", data: Any = None, **options: Any) -> Any:
    options.setdefault("groups", "user")
    return dplong.PooledOLS.from_formula(formula, panel() if data is None else data, **options)


def _poisson(formula: str = "y ~ 1", data: Any = None, **options: Any) -> Any:
    options.setdefault("groups", "user")
    return dplong.PoissonMean.from_formula(formula, panel() if data is None else data, **options)


FROM_FORMULA: list[tuple[str, Callable[..., object], dict[str, Any], type[DplongError], str]] = [
    ("y ~ 0", _ols, {"formula": "y ~ 0"}, FormulaError, "regressor"),
    ("y ~ -1", _ols, {"formula": "y ~ -1"}, FormulaError, "regressor"),
    ("no tilde", _ols, {"formula": "y"}, FormulaError, "formula"),
    ("formula not str", _ols, {"formula": 5}, FormulaError, "formula"),
    ("unbalanced", _ols, {"formula": "y ~ (x1"}, FormulaError, "y ~ (x1"),
    ("missing column", _ols, {"formula": "y ~ nope"}, FormulaError, "nope"),
    ("spaced column", _ols, {"formula": "y ~ x one"}, FormulaError, "written Q('x one')"),
    ("text outcome", _ols, {"formula": "site ~ x1"}, FormulaError, "outcome"),
    ("date outcome", _ols, {"formula": "when ~ x1"}, FormulaError, "outcome"),
    ("date regressor", _ols, {"formula": "y ~ when"}, FormulaError, "when"),
    ("undeclared factor", _ols, {"formula": "y ~ site"}, FormulaError, "levels"),
    ("data-learned transform", _ols, {"formula": "y ~ center(x1)"}, FormulaError, "center"),
    ("spline knots from data", _ols, {"formula": "y ~ bs(x1, df=4)"}, FormulaError, "knots"),
    *(
        (f"reads other rows {term}", _ols, {"formula": f"y ~ {term}"}, FormulaError, term)
        for term in (
            "I(x1.fillna(x1.mean()))",
            "I(x1.fillna(x1.median()))",
            "I(x1.ffill())",
            "I(x1.bfill())",
            "I(x1.interpolate())",
            "I(np.where(np.isnan(x1), np.nanmean(x1), x1))",
            "I(x1 * len(x1) / x1.count())",
            "I(x1 * (x1.max() < 1e6))",
            "I(x1.fillna(method='ffill'))",
            "I(x1.fillna(0, limit=1))",
            "I(x1 - x1.rolling(2).mean())",
            "I(x1.cumsum())",
            "I(x1 * x1.hasnans)",
            "I(x1.iloc[0]+x1)",  # patsy writes a subscript's term so
        )
    ),
    (
        "reads other rows, outcome",
        _location,
        {"formula": "I(y.fillna(y.mean())) ~ 1"},
        FormulaError,
        "I(y.fillna(y.mean()))",
    ),
    (
        "reads other rows, curve",
        _curve,
        {"formula": "y ~ I(x.fillna(x.median()))"},
        FormulaError,
        "I(x.fillna(x.median()))",
    ),
    ("levels not a mapping", _ols, {"levels": ["north"]}, ParameterError, "levels"),
    ("levels unknown column", _ols, {"levels": {"nope": ["a"]}}, FormulaError, "levels"),
    (  # levels of a column the formula does not read would be ignored
        "levels of a column not read",
        _ols,
        {"levels": {"site": ["north", "south"]}},
        FormulaError,
        "levels names ['site'], which the formula does not read; it reads ['y', 'x1']",
    ),
    ("levels of the user ids", _ols, {"levels": {"user": [0, 1]}}, FormulaError, "['user']"),
    (
        "levels of a column not read, pooled",
        _pooled,
        {"levels": {"site": ["north", "south"]}},
        FormulaError,
        "['site'], which the formula does not read",
    ),
    (
        "bounds of the Intercept",
        _pooled,
        {"bounds": {"Intercept": (1, 1)}},
        ParameterError,
        "'Intercept'",
    ),
    (
        "bounds of the Intercept, text",
        _pooled,
        {"bounds": "Intercept=0,2"},
        ParameterError,
        "'Intercept'",
    ),
    (
        "levels empty",
        _ols,
        {"formula": "y ~ site", "levels": {"site": []}},
        ParameterError,
        "levels",
    ),
    (
        "levels repeated",
        _ols,
        {"formula": "y ~ site", "levels": {"site": ["a", "a"]}},
        ParameterError,
        "levels",
    ),
    (
        "levels a string",
        _ols,
        {"formula": "y ~ site", "levels": {"site": "north"}},
        ParameterError,
        "levels",
    ),
    ("data not a frame", _ols, {"data": np.zeros((10, 3))}, DataError, "DataFrame"),
    ("data empty", _ols, {"data": panel().iloc[:0]}, DataError, "data"),
    ("groups None", _ols, {"groups": None}, DataError, "groups"),
    ("groups not a column", _ols, {"groups": "person"}, FormulaError, "groups"),
    ("groups wrong length", _ols, {"groups": [1, 2, 3]}, DataError, "groups"),
    ("groups 2-D", _ols, {"groups": np.zeros((1600, 2))}, DataError, "groups"),
    ("one user", _ols, {"groups": np.zeros(1600)}, InsufficientUsersError, "2 users"),
    ("time not a column", _ols, {"time": "when2"}, FormulaError, "time"),
    ("time wrong length", _ols, {"time": [1, 2]}, DataError, "time"),
    ("correlation", _ols, {"correlation": "ar2"}, ParameterError, "correlation"),
    ("correlation None", _ols, {"correlation": None}, ParameterError, "correlation"),
    (
        "ar1 param 1",
        _ols,
        {"correlation": "ar1", "correlation_param": 1.0},
        ParameterError,
        "correlation_param",
    ),
    (
        "ar1 param str",
        _ols,
        {"correlation": "ar1", "correlation_param": "0.5"},
        ParameterError,
        "correlation_param",
    ),
    (
        "ar1 param nan",
        _ols,
        {"correlation": "ar1", "correlation_param": math.nan},
        ParameterError,
        "correlation_param",
    ),
    (
        "ar1 param bool",
        _ols,
        {"correlation": "ar1", "correlation_param": True},
        ParameterError,
        "correlation_param",
    ),
    (
        "exchangeable param -0.1",
        _ols,
        {"correlation": "exchangeable", "correlation_param": -0.1},
        ParameterError,
        "correlation_param",
    ),
    (  # independence takes no parameter: it would be ignored
        "independence param 0.3",
        _ols,
        {"correlation_param": 0.3},
        ParameterError,
        "'independence' takes none",
    ),
    (  # AR(1) without time= would follow the rows' order in data
        "ar1 without time",
        _ols,
        {"correlation": "ar1", "correlation_param": 0.5},
        ParameterError,
        "needs time=",
    ),
    ("location covariates", _location, {"formula": "y ~ x1"}, FormulaError, "y ~ 1"),
    ("location y ~ 0", _location, {"formula": "y ~ 0"}, FormulaError, "regressor"),
    ("re_groups not a column", _location, {"re_groups": "litter"}, FormulaError, "re_groups"),
    ("re_groups wrong length", _location, {"re_groups": [1, 2]}, DataError, "re_groups"),
    (
        "curve text x",
        _curve,
        {"formula": "y ~ s", "data": items().assign(s="a")},
        FormulaError,
        "levels",
    ),
    (
        "curve text x declared",
        _curve,
        {"formula": "y ~ s", "data": items().assign(s="a"), "levels": {"s": ["a", "b"]}},
        FormulaError,
        "numeric regressor",
    ),
    ("curve two regressors", _curve, {"formula": "y ~ x + I(x**2)"}, FormulaError, "one regressor"),
    ("curve domain reversed", _curve, {"domain": (1, 0)}, ParameterError, "domain"),
    ("curve domain strings", _curve, {"domain": ("0", "1")}, ParameterError, "domain"),
    ("curve domain nan", _curve, {"domain": (0, math.nan)}, ParameterError, "domain"),
    ("curve domain bools", _curve, {"domain": (False, True)}, ParameterError, "domain"),
    ("curve domain scalar", _curve, {"domain": 1.0}, ParameterError, "domain"),
    # its width is no double: linspace's points were inf and nan
    ("curve domain too wide", _curve, {"domain": (-1e308, 1e308)}, ParameterError, "domain"),
    (  # the grid's points (201 by default) would not differ as doubles: the labels collided
        "curve domain too narrow",
        _curve,
        {"domain": (1e9, 1e9 + 1e-6)},
        ParameterError,
        "domain is too narrow for 201 grid points",
    ),
    (
        "curve domain too narrow for its grid",
        _curve,
        {"domain": (1.0, 1.0 + 1e-14), "grid": 50},
        ParameterError,
        "domain is too narrow for 50 grid points",
    ),
    ("curve bandwidth 0", _curve, {"bandwidth": 0.0}, ParameterError, "bandwidth"),
    ("curve bandwidth str", _curve, {"bandwidth": "0.1"}, ParameterError, "bandwidth"),
    ("curve bandwidth bool", _curve, {"bandwidth": True}, ParameterError, "bandwidth"),
    ("curve bandwidth nan", _curve, {"bandwidth": math.nan}, ParameterError, "bandwidth"),
    (
        "curve auto bandwidth users",
        _curve,
        {"bandwidth": "auto", "groups": "user"},
        ParameterError,
        "bandwidth",
    ),
    ("curve kernel", _curve, {"kernel": "box"}, ParameterError, "kernel"),
    ("curve kernel None", _curve, {"kernel": None}, ParameterError, "kernel"),
    ("curve grid 1", _curve, {"grid": 1}, ParameterError, "grid"),
    ("curve grid 2.5", _curve, {"grid": 2.5}, ParameterError, "grid"),
    ("curve grid bool", _curve, {"grid": True}, ParameterError, "grid"),
    ("curve grid str", _curve, {"grid": "5"}, ParameterError, "grid"),
    ("curve grid empty", _curve, {"grid": []}, ParameterError, "grid"),
    ("curve grid outside", _curve, {"grid": [0.5, 2.0]}, ParameterError, "grid"),
    ("curve grid nan", _curve, {"grid": [0.5, math.nan]}, ParameterError, "grid"),
    ("curve grid 2-D", _curve, {"grid": [[0.5]]}, ParameterError, "grid"),
    ("curve grid unsorted", _curve, {"grid": [0.5, 0.1, 0.5]}, ParameterError, "grid"),
    ("curve grid repeated", _curve, {"grid": [0.1, 0.5, 0.5]}, ParameterError, "grid"),
    ("mean groups not a column", _column_mean, {"groups": "person"}, FormulaError, "groups"),
    ("mean groups of 3 ids", _column_mean, {"groups": [1, 2, 3]}, DataError, "groups"),
    ("poisson groups not a column", _poisson, {"groups": "person"}, FormulaError, "groups"),
    (
        "mean repeated column",
        _column_mean,
        {"data": pd.concat([panel(), panel()[["y"]]], axis=1)},
        DataError,
        "'y'",
    ),
    (
        "mean unhashable ids",
        _column_mean,
        {"data": panel().assign(user=[[1]] * len(panel()))},
        DataError,
        "groups",
    ),
    (
        "ols repeated column",
        _ols,
        {"data": pd.concat([panel(), panel()[["x1"]]], axis=1)},
        DataError,
        "several columns named ['x1']",
    ),
    (
        "ols repeated groups column",
        _ols,
        {"data": pd.concat([panel(), panel()[["user"]]], axis=1)},
        DataError,
        "several columns named ['user']",
    ),
    (
        "ols repeated time column",
        _ols,
        {"data": pd.concat([panel(), panel()[["time"]]], axis=1), "time": "time"},
        DataError,
        "several columns named ['time']",
    ),
    (
        "ols complex regressor",
        _ols,
        {"formula": "y ~ z", "data": panel().assign(z=panel()["x1"].astype(complex))},
        DataError,
        "'z' has dtype complex128",
    ),
    (
        "ols complex outcome",
        _ols,
        {"formula": "z ~ x1", "data": panel().assign(z=panel()["y"].astype(complex))},
        DataError,
        "'z' has dtype complex128",
    ),
    (
        "ols unhashable ids",
        _ols,
        {"data": panel().assign(user=[[1]] * len(panel()))},
        DataError,
        "hashable",
    ),
    (
        "ols groups a Series on another index",
        _ols,
        {"groups": panel()["user"].sample(frac=1, random_state=0)},
        DataError,
        "index is not the index of data",
    ),
    (
        "curve x outside domain",
        _curve,
        {"data": items().assign(x=items()["x"] * 2)},
        DataError,
        "domain",
    ),
    (
        "curve missing design point",
        _curve,
        {"data": items().assign(x=np.nan)},
        DataError,
        "design points",
    ),
    ("curve one item", _curve, {"data": items().iloc[:1]}, DataError, "2 rows"),
]
for label, build, arguments, error, names in FROM_FORMULA:
    refusal(f"from_formula: {label}", lambda b=build, a=arguments: b(**a), error, names)
refusal(
    "winsorized_mean repeated by column",
    lambda: dplong.winsorized_mean(
        pd.concat([panel()[["y", "site"]], panel()[["site"]]], axis=1),
        groups=panel()["user"],
        by="site",
        levels=["north", "south"],
        epsilon=1.0,
    ),
    DataError,
    "several columns named ['site']",
)


# --- dependence models -----------------------------------------------------------------------

DEPENDENCE: list[tuple[str, Callable[[], object], str]] = [
    ("Toeplitz not PSD", lambda: Toeplitz([1.0, 2.0]), "autocovariance"),
    ("Toeplitz not PSD at T=3", lambda: Toeplitz([1.0, 0.8]).covariance(3), "autocovariance"),
    ("Toeplitz empty", lambda: Toeplitz([]), "autocovariance"),
    ("Toeplitz text", lambda: Toeplitz(["1", "0.5"]), "autocovariance"),
    ("Toeplitz zero variance", lambda: Toeplitz([0.0]), "autocovariance"),
    ("Toeplitz scalar", lambda: Toeplitz(1.0), "autocovariance"),  # type: ignore[arg-type]
    ("AR1 phi 1", lambda: AR1(1.0), "phi"),
    ("AR1 phi nan", lambda: AR1(math.nan), "phi"),
    ("AR1 phi str", lambda: AR1("0.5"), "phi"),  # type: ignore[arg-type]
    ("AR1 phi bool", lambda: AR1(True), "phi"),  # type: ignore[arg-type]
    ("AR1 variance 0", lambda: AR1(0.5, variance=0.0), "variance"),
    ("AR1 variance str", lambda: AR1(0.5, variance="1"), "variance"),  # type: ignore[arg-type]
    ("Independent str", lambda: Independent("a"), "variance"),  # type: ignore[arg-type]
    ("Independent bool", lambda: Independent(True), "variance"),  # type: ignore[arg-type]
    ("Independent -1", lambda: Independent(-1.0), "variance"),
    ("Independent inf", lambda: Independent(math.inf), "variance"),
    ("Exchangeable 1", lambda: Exchangeable(1.0), "correlation"),
    ("Exchangeable nan", lambda: Exchangeable(math.nan), "correlation"),
    ("Exchangeable str", lambda: Exchangeable("0.2"), "correlation"),  # type: ignore[arg-type]
    ("RandomEffects variance 0", lambda: RandomEffects(0.0), "group_variance"),
    ("RandomEffects variance str", lambda: RandomEffects("1"), "group_variance"),  # type: ignore[arg-type]
    ("RandomEffects residual variance", lambda: RandomEffects(1.0, -1.0), "residual_variance"),
    ("RandomEffects sizes 2.5", lambda: RandomEffects(1.0, group_sizes=[2.5]), "group_sizes"),
    ("RandomEffects sizes str", lambda: RandomEffects(1.0, group_sizes=["a"]), "group_sizes"),  # type: ignore[list-item]
    ("RandomEffects sizes 0", lambda: RandomEffects(1.0, group_sizes=[0]), "group_sizes"),
    ("RandomEffects sizes empty", lambda: RandomEffects(1.0, group_sizes=[]), "group_sizes"),
    ("RandomEffects residual", lambda: RandomEffects(1.0, residual=1.0), "residual"),  # type: ignore[arg-type]
    ("GivenCovariance text", lambda: GivenCovariance("abc"), "matrix"),
    ("GivenCovariance not square", lambda: GivenCovariance([[1.0, 0.0]]), "matrix"),
    ("GivenCovariance not PD", lambda: GivenCovariance([[1.0, 2.0], [2.0, 1.0]]), "matrix"),
    ("GivenCovariance nan", lambda: GivenCovariance([[math.nan]]), "matrix"),
    ("GivenCovariance too few rows", lambda: GivenCovariance([[1.0]]).covariance(2), "rows"),
    ("rows T = 0", lambda: AR1(0.5).log_sobolev_constant(0), "T"),
    ("rows T = 2.5", lambda: AR1(0.5).mean_scale(2.5), "T"),  # type: ignore[arg-type]
    ("rows T str", lambda: Independent().log_sobolev_constant("4"), "T"),  # type: ignore[arg-type]
    ("rows T nan", lambda: AR1(0.5).mean_scale(T=math.nan), "T"),  # type: ignore[arg-type]
    ("rows T inf", lambda: Independent(1).mean_scale(T=math.inf), "T"),  # type: ignore[arg-type]
    ("rows T -inf", lambda: Exchangeable(0.2).mean_scale(T=-math.inf), "T"),  # type: ignore[arg-type]
    ("rows T bool", lambda: Independent(1).mean_scale(T=True), "T"),
    ("rows T None", lambda: Toeplitz([1.0, 0.2]).mean_scale(None), "T"),  # type: ignore[arg-type]
    ("rows T 10**400", lambda: AR1(0.5).mean_scale(T=10**400), "T"),
    ("rows T beyond dense", lambda: Toeplitz([1.0, 0.2]).mean_scale(T=10**6), "T=1000000"),
    ("residual T inf", lambda: RandomEffects(1.0).residual_scale(math.inf), "T"),  # type: ignore[arg-type]
    ("users n nan", lambda: AR1(0.5).statistical_constant(4, math.nan), "n"),  # type: ignore[arg-type]
    ("users n 2.5", lambda: RandomEffects(1.0).statistical_constant(4, 2.5), "n"),  # type: ignore[arg-type]
]
for label, call, names in DEPENDENCE:
    refusal(f"dependence: {label}", call, ParameterError, names)


# --- results, accountant, data sets ----------------------------------------------------------

OTHERS: list[tuple[str, Callable[[], object], type[DplongError], str]] = [
    ("conf_int alpha str", lambda: fitted().conf_int(alpha="0.05"), ParameterError, "alpha"),  # type: ignore[arg-type]
    ("conf_int alpha 2", lambda: fitted().conf_int(alpha=2), ParameterError, "alpha"),
    ("conf_int alpha 0", lambda: fitted().conf_int(alpha=0.0), ParameterError, "alpha"),
    ("conf_int alpha nan", lambda: fitted().conf_int(alpha=math.nan), ParameterError, "alpha"),
    ("conf_int alpha bool", lambda: fitted().conf_int(alpha=True), ParameterError, "alpha"),
    ("error_bound alpha -1", lambda: fitted().error_bound(alpha=-1.0), ParameterError, "alpha"),
    ("error_bound alpha str", lambda: fitted().error_bound(alpha="a"), ParameterError, "alpha"),  # type: ignore[arg-type]
    ("summary alpha 1", lambda: fitted().summary(alpha=1.0), ParameterError, "alpha"),
    ("summary alpha None", lambda: fitted().summary(alpha=None), ParameterError, "alpha"),  # type: ignore[arg-type]
    ("curve alpha 5", lambda: fitted_curve().curve(alpha=5.0), ParameterError, "alpha"),
    # 1 - alpha/2 rounds to 1 (the quantile's solver failed) or to 1/2
    ("conf_int alpha 1e-16", lambda: fitted().conf_int(alpha=1e-16), ParameterError, "1e-15"),
    ("summary alpha 1e-16", lambda: fitted().summary(alpha=1e-16), ParameterError, "1e-15"),
    (
        "error_bound alpha near 1",
        lambda: fitted().error_bound(alpha=1 - 2e-16),
        ParameterError,
        "alpha must be a number from 1e-15 to 1 - 1e-15",
    ),
    ("curve alpha 1e-16", lambda: fitted_curve().curve(alpha=1e-16), ParameterError, "1e-15"),
    (
        "curve error_bound alpha",
        lambda: fitted_curve().error_bound(alpha=0),
        ParameterError,
        "alpha",
    ),
    ("predict []", lambda: fitted_curve().predict([]), ParameterError, "x"),
    ("predict [] is empty", lambda: fitted_curve().predict([]), ParameterError, "empty"),
    (
        "predict DataFrame without x",
        lambda: fitted_curve().predict(pd.DataFrame({"not_x": [0.1, 0.2], "z": [0.3, 0.4]})),
        DataError,
        "lack the column(s) ['x']",
    ),
    ("t_test empty", lambda: fitted().t_test(""), ParameterError, "r_matrix"),
    ("t_test blank", lambda: fitted().t_test("   "), ParameterError, "r_matrix"),
    ("t_test nan R", lambda: fitted().t_test(np.full((1, 2), np.nan)), ParameterError, "finite"),
    ("t_test zero R", lambda: fitted().t_test(np.zeros((1, 2))), ParameterError, "all 0"),
    (
        "wald_test inf R",
        lambda: fitted().wald_test((np.array([[0.0, np.inf]]), [0.0])),
        ParameterError,
        "finite",
    ),
    (
        "wald_test nan q",
        lambda: fitted().wald_test((np.array([[0.0, 1.0]]), [np.nan])),
        ParameterError,
        "finite",
    ),
    (
        "wald_test contradictory",
        lambda: fitted().wald_test("x1 = 0, x1 = 1"),
        ParameterError,
        "contradict",
    ),
    (
        "f_test contradictory",
        lambda: fitted().f_test(["x1 = 0", "2 * x1 = 1"]),
        ParameterError,
        "contradict",
    ),
    (
        "RandomEffects variance_components bytes",
        lambda: random_effects().fit(epsilon=1.0, variance_components=b"12"),
        ParameterError,
        "variance_components",
    ),
    (
        "RandomEffects variance_components dict",
        lambda: random_effects().fit(epsilon=1.0, variance_components={1.0: 2.0, 3.0: 4.0}),
        ParameterError,
        "variance_components",
    ),
    (
        "PoissonMean.fit unknown option",
        lambda: _poisson().fit(epsilon=1.0, foo=1),
        ParameterError,
        "'foo'",
    ),
    (
        "PoissonMean.fit groups",
        lambda: _poisson().fit(epsilon=1.0, groups=np.zeros(1600)),
        ParameterError,
        "groups",
    ),
    (
        "PoissonMean.fit names",
        lambda: _poisson().fit(epsilon=1.0, names=["a"]),
        ParameterError,
        "names",
    ),
    ("ColumnMean.fit by", lambda: _column_mean().fit(epsilon=1.0, by="site"), ParameterError, "by"),
    (
        "winsorized_mean names repeated",
        lambda: dplong.winsorized_mean(np.ones((2000, 2)), names=["a", "a"], epsilon=1.0),
        ParameterError,
        "names",
    ),
    (
        "winsorized_mean columns repeated",
        lambda: dplong.winsorized_mean(
            pd.DataFrame(np.ones((2000, 2)), columns=["a", "a"]), epsilon=1.0
        ),
        DataError,
        "'a'",
    ),
    ("predict text", lambda: fitted_curve().predict("a"), ParameterError, "x"),
    ("predict text list", lambda: fitted_curve().predict(["0.5"]), ParameterError, "x"),
    ("predict None", lambda: fitted_curve().predict(None), ParameterError, "x"),
    ("predict inf", lambda: fitted_curve().predict([math.inf]), ParameterError, "x"),
    ("predict outside", lambda: fitted_curve().predict([1.5]), ParameterError, "x"),
    (
        "predict dates",
        lambda: fitted_curve().predict(pd.date_range("2000", periods=2)),
        ParameterError,
        "x",
    ),
    ("plot alpha", lambda: fitted_curve().plot(alpha=2.0), ParameterError, "alpha"),
    ("plot ax", lambda: fitted_curve().plot(ax="axes"), ParameterError, "ax"),  # type: ignore[arg-type]
    ("Accountant epsilon str", lambda: dplong.Accountant("1"), PrivacyParameterError, "epsilon"),  # type: ignore[arg-type]
    ("Accountant epsilon 0", lambda: dplong.Accountant(0.0), PrivacyParameterError, "epsilon"),
    (
        "Accountant epsilon bool",
        lambda: dplong.Accountant(True),
        PrivacyParameterError,  # type: ignore[arg-type]
        "epsilon",
    ),
    (
        "Accountant epsilon inf",
        lambda: dplong.Accountant(math.inf),
        PrivacyParameterError,
        "epsilon",
    ),
    ("Accountant delta 1", lambda: dplong.Accountant(1.0, 1.0), PrivacyParameterError, "delta"),
    (
        "Accountant delta str",
        lambda: dplong.Accountant(1.0, "0"),
        PrivacyParameterError,  # type: ignore[arg-type]
        "delta",
    ),
    (
        "Accountant delta None",
        lambda: dplong.Accountant(1.0, None),
        PrivacyParameterError,  # type: ignore[arg-type]
        "delta",
    ),
    (
        "Accountant delta bool",
        lambda: dplong.Accountant(1.0, False),
        PrivacyParameterError,  # type: ignore[arg-type]
        "delta",
    ),
    ("Accountant delta -1", lambda: dplong.Accountant(1.0, -1e-6), PrivacyParameterError, "delta"),
    (
        "Accountant.check",
        lambda: dplong.Accountant(1.0).check(2.0, 0.0),
        BudgetExceededError,
        "epsilon",
    ),
    (
        "Accountant made with no delta, a release that needs one",
        lambda: dplong.Accountant(6.0).check(5.0, 1e-5),
        BudgetExceededError,
        "made with delta=0: give it one",
    ),
    (
        "Accountant.check str",
        lambda: dplong.Accountant(1.0).check("0.5", 0.0),  # type: ignore[arg-type]
        PrivacyParameterError,
        "epsilon",
    ),
    (
        "Accountant.check nan",
        lambda: dplong.Accountant(1.0).check(0.5, math.nan),
        PrivacyParameterError,
        "delta",
    ),
    (
        "Accountant.record",
        lambda: dplong.Accountant(1.0).record("ledger"),
        ParameterError,  # type: ignore[arg-type]
        "ledger",
    ),
    ("datasets.descr unknown", lambda: dplong.datasets.descr("iris"), ParameterError, "iris"),  # type: ignore[arg-type]
    ("datasets.descr int", lambda: dplong.datasets.descr(5), ParameterError, "5"),  # type: ignore[arg-type]
    ("get_kernel", lambda: dplong.kernels.get_kernel("box"), ParameterError, "kernel"),
    (
        "simulate n_users 0",
        lambda: dplong.simulate.linear_panel(0, 4, [1.0]),
        ParameterError,
        "n_users",
    ),
    (
        "simulate coefficients",
        lambda: dplong.simulate.linear_panel(10, 4, ["a"]),
        ParameterError,  # type: ignore[list-item]
        "coefficients",
    ),
    (
        "simulate random_state",
        lambda: dplong.simulate.linear_panel(10, 4, [1.0], random_state=-1),
        ParameterError,
        "random_state",
    ),
    # an audit: numpy's ValueError and TypeError escaped these
    (
        "simulate size text",
        lambda: dplong.simulate.panel_rows(5, 3, size="a"),
        ParameterError,
        "size",
    ),  # type: ignore[arg-type]
    (
        "simulate size float",
        lambda: dplong.simulate.panel_rows(5, 3, size=2.5),
        ParameterError,
        "size",
    ),  # type: ignore[arg-type]
    ("simulate rows text", lambda: dplong.simulate.long_format([["a"]]), ParameterError, "rows"),
    ("io.read_data missing", lambda: dplong.io.read_data("missing.csv"), DataError, "DATA"),
    ("io.read_data data set", lambda: dplong.io.read_data("dataset:iris"), DataError, "iris"),
    (
        "io.read_data groups",
        lambda: dplong.io.read_data("dataset:dietox", groups="pig"),
        DataError,
        "pig",
    ),
    (
        "io.read_data levels alike",
        lambda: dplong.io.read_data("dataset:dietox", levels={"Evit": ["1", "1.0"]}),
        ParameterError,
        "Evit",
    ),
    (
        "io.read_data level NaN",
        lambda: dplong.io.read_data("dataset:dietox", levels={"Evit": ["nan", "1"]}),
        ParameterError,
        # the Python API's argument, not the command line's --levels
        "levels Evit: a level must not read as NaN",
    ),
]
for label, call, error, names in OTHERS:
    refusal(label, call, error, names)


def _plan(**options: Any) -> object:
    given = {"formula": "y ~ x1", "model": "ols", "n": 500, "epsilon": 1.0} | options
    return dplong.plan(**given)


#: The planner: its own arguments, and the fit's options refused as the fit refuses them.
fit_refusals(
    "plan",
    lambda **o: _plan(**{k: v for k, v in o.items() if k not in ("random_state", "accountant")}),
    {},
    [
        ("n", 1, ParameterError, "n"),
        ("n", 2.5, ParameterError, "n"),
        ("n", "500", ParameterError, "n"),
        ("model", "glm", ParameterError, "model"),
        ("model", 3, ParameterError, "model"),
        ("rows", 0, ParameterError, "rows"),
        ("formula", "y x", FormulaError, "formula"),
        ("epsilon", -1.0, PrivacyParameterError, "epsilon"),
        ("epsilon", "1", PrivacyParameterError, "epsilon"),
        ("estimator", "between", ParameterError, "estimator"),
        ("scale", -1.0, ParameterError, "scale"),
        ("seed", 1, ParameterError, "seed"),
        ("n", 10**12, ParameterError, "n="),
        ("rows", 10**12, ParameterError, "rows="),
        ("target_sd", -1.0, ParameterError, "target_sd"),
        ("target_sd", 0.0, ParameterError, "target_sd"),
        ("target_sd", math.nan, ParameterError, "target_sd"),
        ("target_sd", "0.01", ParameterError, "target_sd"),
        ("target_sd", True, ParameterError, "target_sd"),
        ("groups", "user", ParameterError, "groups"),
        ("time", 3, ParameterError, "time as the name"),
        ("max_rows", 0, ParameterError, 'max_rows applies to estimator="within" only'),
    ],
)
refusal("plan(random_state=0)", lambda: _plan(random_state=0), ParameterError, "random_state")
refusal("plan(model='kernel')", lambda: _plan(model="kernel"), ParameterError, "domain")
refusal("plan(data=panel)", lambda: _plan(data=panel()), ParameterError, "data")
refusal(  # named against the formula, not the stand-in rows' columns
    "plan(levels=unknown)",
    lambda: _plan(levels={"sit": ["a"]}),
    FormulaError,
    "['sit'], which the formula does not read; it reads ['y', 'x1']",
)
refusal(
    "predict below the grid",
    lambda: fitted_curve().predict([-1.0]),
    ParameterError,
    "got values down to -1",
)


@pytest.mark.parametrize("case", REFUSALS, ids=[r.name for r in REFUSALS])
def test_refusal(case: Refusal) -> None:
    probe = Probe()
    state = probe.rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)  # reliability notes are not refusals
        with pytest.raises(case.error) as caught:
            case.call(probe)
    message = str(caught.value)
    assert case.names in message, message
    assert len(message) < MAX_MESSAGE, len(message)
    assert "\n\n" not in message and message == message.strip()
    assert probe.rng.bit_generator.state == state, "noise was drawn before the refusal"
    assert probe.accountant.spent == [], "the accountant was charged before the refusal"


def test_the_battery_covers_every_entry_point() -> None:
    """At least 150 refusals in all, and every public entry point among them."""
    assert len(REFUSALS) >= 150
    names = " ".join(r.name for r in REFUSALS)
    for entry in (
        "winsorized_mean",
        "LongitudinalOLS.fit",
        "RandomEffectsLocation.fit",
        "PooledOLS.fit",
        "PanelOLS.fit",
        "BetweenOLS.fit",
        "RandomEffects.fit",
        "PriestleyChao.fit[item]",
        "PriestleyChao.fit[user]",
        "from_formula",
        "dependence",
        "conf_int",
        "error_bound",
        "summary",
        "predict",
        "plot",
        "Accountant",
        "datasets",
        "plan",
    ):
        assert entry in names, entry


def test_mean_models_take_ids_as_an_array_and_count_users_as_the_fit() -> None:
    """``groups`` as an array of ids is the column's release; a row without an id belongs to
    no user, in ``nobs_users`` as in the fit's n."""
    data = panel()
    by_name = _poisson(groups="user").fit(epsilon=1.0, random_state=0)
    by_array = _poisson(groups=data["user"].to_numpy()).fit(epsilon=1.0, random_state=0)
    assert by_array.params.equals(by_name.params) and by_array.nobs_users == 400
    holed = data.assign(user=data["user"].astype(float).where(data["user"] != 0))
    model = _column_mean(data=holed)
    res = model.fit(epsilon=1.0, random_state=0)
    assert model.nobs_users == res.nobs_users == res.model.nobs_users == 399


def test_restriction_tests_still_take_independent_restrictions() -> None:
    res = fitted()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)  # the covariance is not released
        assert res.wald_test("Intercept = x1 = 0").df_denom == 2
    assert len(res.t_test(["x1 = 0", "x1 = 1"]).pvalue) == 2  # separate z-tests may repeat


def test_curve_predict_reads_the_regressor_by_name() -> None:
    res = fitted_curve()
    frame = pd.DataFrame({"other": [9.0, 9.0], "x": [0.3, 0.6]})
    assert np.array_equal(res.predict(frame), res.predict([0.3, 0.6]))
    with pytest.raises(DataError, match=r"the rows lack the column\(s\) \['x'\]"):
        res.predict(frame.drop(columns="x"))


def test_curve_rows_outside_the_domain_are_told_to_the_data_holder() -> None:
    """Rows whose x lies outside the public domain are left out (as documented), and the
    data holder hears how many, as of the rows the formula models leave out (an audit
    found them dropped silently); the results say nothing of it."""
    data = items().assign(x=lambda d: d["x"] * 1.25)  # 400 of 2,000 rows beyond 1
    with pytest.warns(DataHolderWarning, match=r"399 of 2,000 rows have the curve's x outside"):
        res = dplong.PriestleyChao.from_formula(
            "y ~ x", data, groups="user", domain=(0, 1), bandwidth=0.2, grid=5
        ).fit(epsilon=4.0, random_state=0)
    # as numbers of their own, not digits inside another figure (an estimate of 0.7399)
    text = res.summary().as_text()
    assert not re.search(r"(?<![\d.,])(2,000|399)(?![\d.,])", text), text


def test_curve_grid_is_kept_as_given() -> None:
    grid = [0.1, 0.3, 0.9]
    model: Any = _curve(grid=grid)
    res = model.fit(epsilon=1.0, error_sd=0.5, amplitude=1.0, random_state=0)
    assert res.grid.tolist() == grid


# ---------------------------------------------------------------------------------------------
# Odd but valid data: no refusal, and an honest release
# ---------------------------------------------------------------------------------------------


def honest(res: PanelResults, truth: float | np.ndarray | None = None) -> None:
    """Every parameter is a finite estimate with finite error bounds (within five standard
    errors plus the bias bound of ``truth``, if given) or NaN with its reason said in
    ``failed`` or ``warnings``; probabilities lie in [0, 1]."""
    params = res.params.to_numpy()
    missing = np.isnan(params)
    assert not np.isinf(params).any(), res.params
    if missing.any():
        assert res.failed.to_numpy()[missing].all() or res.warnings, res
    report = res.error_bound().table
    probability = report["probability"].dropna()
    assert ((probability >= 0) & (probability <= 1)).all()
    assert np.isfinite(report["total"].to_numpy()[~missing]).all(), report
    if truth is not None:
        error = np.abs(params - truth)[~missing]
        allowance = (5.0 * res.bse + res.bias).to_numpy()[~missing]
        assert (error <= allowance).all(), (res.params, truth, allowance)


def mean_of(data: Any, **options: Any) -> PanelResults:
    return dplong.winsorized_mean(data, epsilon=1.0, random_state=0, **options)


HUGE = 5e19  # beyond int64 (9.2e18) at any bin half-width below 2.7


ODD_DATA: list[tuple[str, Callable[[], None]]] = [
    # huge finite values are data: a valid release, honestly failed where it cannot locate them
    (
        "mean of 5e19, scale stated",
        lambda: honest(mean_of(np.full(2000, HUGE) + values(), scale=1.0), HUGE),
    ),
    (
        "mean of 5e19, theory",
        lambda: honest(mean_of(np.full(2000, HUGE) + values(), scale=1.0, variant="theory"), HUGE),
    ),
    (
        "mean of 1e308, theory",
        lambda: honest(mean_of(np.full(2000, 1e308), scale=1.0, variant="theory"), 1e308),
    ),
    (
        "mean of -1e308, scale stated",
        lambda: honest(mean_of(np.full(2000, -1e308), scale=1.0), -1e308),
    ),
    ("mean of 1e308, scale estimated", lambda: honest(mean_of(np.full(2000, 1e308)), 1e308)),
    (
        "mean of ±1e308",
        lambda: honest(mean_of(np.r_[np.full(1000, 1e308), -np.full(1000, 1e308)]), 0.0),
    ),
    ("mean of max double", lambda: honest(mean_of(np.full(2000, np.finfo(float).max), scale=1e-6))),
    (
        "mean of 1e308 local",
        lambda: honest(mean_of(np.full(2000, 1e308), privacy="local", bound=1.0)),
    ),
    (
        "mean of 1e308 local, theory",
        lambda: honest(
            mean_of(np.full(2000, 1e308), privacy="local", bound=1.0, variant="theory", scale=1.0)
        ),
    ),
    (
        "mean with a vast local bound",
        lambda: honest(mean_of(values(), privacy="local", bound=1e100), 1.0),
    ),
    (
        "mean of a few 1e308 among normal values",
        lambda: honest(mean_of(np.r_[np.full(5, 1e308), values()]), 1.0),
    ),
    ("OLS with y near 1e300", lambda: honest(ols_fit(panel().assign(y=panel()["y"] * 1e300)))),
    ("OLS with x near 1e307", lambda: honest(ols_fit(panel().assign(x1=panel()["x1"] * 1e307)))),
    ("location of 1e308", lambda: honest(location_fit(panel().assign(y=1e308)))),
    (
        "location of 5e19, stated",
        lambda: honest(
            location_fit(panel().assign(y=panel()["y"] + HUGE), scale=1.0, within_scale=1.0),
            np.array([HUGE, 0.0, 0.0]),
        ),
    ),
    ("curve of 1e308 responses", lambda: honest(curve_items_fit(items().assign(y=1e308)))),
    ("mean of all-NaN values", lambda: honest(mean_of(np.full(2000, np.nan)))),
    # one person's rows spanning more than the largest double: their offsets from their own
    # values overflowed, and the within fit raised after the ranges' noise was drawn
    *(
        (
            f"{model.__name__} with one user's {column} at ±1e308",
            lambda model=model, column=column: honest(pooled_fit(model, spanning(column))),
        )
        for model in (dplong.PanelOLS, dplong.PooledOLS)
        for column in ("y", "x1")
    ),
]


def spanning(column: str) -> pd.DataFrame:
    """:func:`panel` with user 0's rows of ``column`` at 1e308 and -1e308 in turn."""
    data = panel().copy()
    rows = data["user"] == data["user"].iloc[0]
    data.loc[rows, column] = np.resize([1e308, -1e308], int(rows.sum()))
    return data


def pooled_fit(model: type, data: pd.DataFrame) -> PanelResults:
    fitted: PanelResults = model.from_formula("y ~ x1", data, groups="user").fit(
        epsilon=1.0, random_state=0
    )
    return fitted


def ols_fit(data: pd.DataFrame, **options: Any) -> PanelResults:
    return dplong.LongitudinalOLS.from_formula("y ~ x1", data, groups="user").fit(
        epsilon=1.0, random_state=0, **options
    )


def location_fit(data: pd.DataFrame, **options: Any) -> PanelResults:
    return dplong.RandomEffectsLocation.from_formula("y ~ 1", data, groups="user").fit(
        epsilon=1.0, random_state=0, **options
    )


def curve_items_fit(data: pd.DataFrame) -> PanelResults:
    model = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1), bandwidth=0.1, grid=5)
    return model.fit(epsilon=1.0, random_state=0)


@pytest.mark.parametrize("check", [c[1] for c in ODD_DATA], ids=[c[0] for c in ODD_DATA])
def test_odd_data_is_released_honestly(check: Callable[[], None]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)  # the warnings are in res.warnings too
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow on 1e308: expected
        check()


def same_release(left: PanelResults, right: PanelResults) -> None:
    pd.testing.assert_series_equal(left.params, right.params)
    assert left.privacy == right.privacy


def test_infinite_values_are_missing_values() -> None:
    """±inf in ``winsorized_mean`` is missing, as NaN is, and as in the formula layer."""
    x = values().copy()
    x[:7], x[7:9] = np.inf, -np.inf
    nan = np.where(np.isinf(x), np.nan, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        same_release(mean_of(x), mean_of(nan))
        groups = np.arange(2000) % 500
        same_release(mean_of(x, groups=groups), mean_of(nan, groups=groups))


@pytest.mark.parametrize(
    ("formula", "dtype"),
    [("y ~ x1", "float16"), ("y ~ np.sqrt(x1 - 5)", "float64"), ("y ~ np.log(x1)", "float32")],
)
def test_a_design_is_built_without_numpy_warnings(formula: str, dtype: str) -> None:
    """Building a design evaluates its terms on made-up rows first (a float16 column's huge
    probe value had overflowed its cast, and np.sqrt of a negative one warned of an invalid
    value): numpy's words on values no one gave mislead, so none escape. Rows the terms make
    missing are told to the data holder in the package's words, as before."""
    data = panel().assign(x1=panel()["x1"].astype(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", DplongWarning)
        dplong.PooledOLS.from_formula(formula, data, groups="user")


@pytest.mark.parametrize("weights", ["precision", "equal"])
@pytest.mark.parametrize("kind", ["missing", "near the edge", "one far out"])
def test_a_location_fit_of_extreme_values_keeps_numpys_words_to_itself(
    kind: str, weights: str
) -> None:
    """The random-effects location of values near the doubles' edge (1e300, one user at 1e308)
    or all missing: a user mean's square overflows, as does the support's reach, to inf,
    which the release handles; numpy's overflow warnings reached the analyst (an audit)."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(500), 4)
    y = {
        "missing": np.full(ids.size, np.nan),
        "near the edge": 1e300 * (1.0 + rng.normal(size=ids.size)),
        "one far out": np.r_[1e308, rng.normal(size=ids.size - 1)],
    }[kind]
    model = dplong.RandomEffectsLocation.from_formula(
        "y ~ 1", pd.DataFrame({"id": ids, "y": y}), groups="id"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", DplongWarning)
        res = model.fit(epsilon=2.0, random_state=0, weights=weights)
    assert res.nobs_users == 500


def test_groups_may_name_a_column_of_the_values() -> None:
    """``winsorized_mean(frame, groups="user")`` takes the ids from that column and averages
    the others, as ``by=`` may name a column: the same release as the ids given as a Series.
    A name with no frame holding it is refused (it had read the name as one id of shape ())."""
    data = panel()[["y", "x1", "user"]]
    named = mean_of(data, groups="user")
    same_release(named, mean_of(data[["y", "x1"]], groups=data["user"]))
    assert list(named.params.index) == ["y", "x1"] and named.nobs_users == 400
    with pytest.raises(DataError, match="groups='user' names a column of values"):
        mean_of(data["y"], groups="user")


def test_missing_user_ids_drop_their_rows() -> None:
    """A row with a missing user id belongs to no user (as in the formula layer): dropped,
    never a refusal, and n counts the distinct ids."""
    x = values()
    groups = pd.Series(np.arange(2000) % 500, dtype="Int64")
    unknown = groups.mask(np.arange(2000) % 97 == 0)
    res = mean_of(x, groups=unknown)
    known = unknown.notna().to_numpy()
    same_release(res, mean_of(x[known], groups=unknown[known].to_numpy()))
    assert res.nobs_users == 500


def test_ids_beyond_doubles_stay_distinct_beside_a_missing_id() -> None:
    """Integer ids above 2**53 of a nullable type with one missing id: pandas' ``to_numpy``
    makes them doubles, which merged ids differing in their last digits (500 users counted
    about 250, so n and whether a fit ran hung on one row's missing id: an audit). Each id
    is now read exactly, in every form ``groups`` takes and over Dask; the fit equals the one
    on the rows with an id."""
    import dask.dataframe as dd

    x = values()
    groups = pd.Series(2**53 + np.arange(2000) % 500, dtype="Int64")
    unknown = groups.mask(np.arange(2000) == 3)
    known = unknown.notna().to_numpy()
    res = mean_of(x, groups=unknown)
    assert res.nobs_users == 500
    same_release(res, mean_of(x[known], groups=groups[known].to_numpy()))
    assert mean_of(x, groups=unknown.array).nobs_users == 500
    frame = pd.DataFrame({"id": unknown, "x": np.arange(2000) % 7, "y": x})
    assert dplong.PooledOLS.from_formula("y ~ x", frame, groups="id").nobs_users == 500
    parts = dd.from_pandas(frame, npartitions=3)
    assert dplong.PooledOLS.from_formula("y ~ x", parts, groups="id").nobs_users == 500
    # as categories (a later audit: 400 such users counted 201), and as pyarrow's integers
    # over Dask (whose check for infinite ids failed on them, with pyarrow's error)
    for ids in (unknown.astype("category"), unknown.astype("int64[pyarrow]")):
        for data in (frame.assign(id=ids), dd.from_pandas(frame.assign(id=ids), npartitions=3)):
            assert dplong.PooledOLS.from_formula("y ~ x", data, groups="id").nobs_users == 500


@pytest.mark.parametrize(
    "options",
    [
        ({}, {}),
        ({"correlation": "exchangeable", "correlation_param": 0.3}, {}),
        ({"correlation": "ar1", "correlation_param": 0.5, "time": "t"}, {}),
        ({}, {"estimator": "within"}),
    ],
    ids=["per-user", "exchangeable", "ar1", "within"],
)
def test_one_users_huge_values_raise_nothing_under_warnings_as_errors(
    options: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """One user's values near the doubles' edge on an unbalanced panel: the per-user sums'
    products overflowed with a RuntimeWarning that no errstate covered, so a fit run with
    warnings as errors raised or released as that user's rows said, the within fit's after its
    pilot's noise (an audit). Such a user's sums are inf, no statistic, as on a balanced
    panel; the fit runs either way."""
    built, fit = options
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"id": np.repeat(np.arange(500), 5), "t": np.tile(np.arange(5), 500)})
    data["x"] = rng.uniform(0.1, 1.1, 2500)
    data["y"] = 1 + 0.5 * data["x"] + rng.normal(0, 0.5, 2500)
    data = data.drop(index=[7, 12]).reset_index(drop=True)  # users 1 and 2: 4 rows
    edge = np.array([1.0, -1.7e308, -1.7e308, 1.7e308, 1.7e308])
    for y, x in ((1.5e154, 1.5e154), (edge, edge[::-1])):
        odd = data.copy()
        odd.loc[odd["id"] == 0, "y"], odd.loc[odd["id"] == 0, "x"] = y, x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            warnings.simplefilter("error", RuntimeWarning)
            model = dplong.LongitudinalOLS.from_formula("y ~ x", odd, groups="id", **built)
            res = model.fit(epsilon=4.0, random_state=1, **fit)
        assert "x" in res.params.index


def test_a_column_no_user_identifies_raises_nothing_under_warnings_as_errors() -> None:
    """A per-user fit of a covariate constant within every user: no user has a statistic, and
    the skew check divided the columns' released numbers by their scale with an overflow that
    escaped as a RuntimeWarning in 1 of 8 noise seeds (under warnings as errors the fit then
    raised, after its noise, instead of withholding; an audit). Over the same 8 seeds none
    escapes now."""
    rng = np.random.default_rng(1)
    ids = np.repeat(np.arange(3000), 4)
    data = pd.DataFrame({"id": ids, "x": rng.normal(size=ids.size)})
    data["c"] = rng.integers(0, 2, 3000)[ids].astype(float)
    data["y"] = 1 + data["x"] + data["c"] + rng.normal(size=3000)[ids] + rng.normal(size=ids.size)
    model = dplong.LongitudinalOLS.from_formula("y ~ x + c", data, groups="id")
    for seed in range(8):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            warnings.simplefilter("error", RuntimeWarning)
            res = model.fit(epsilon=2.0, random_state=seed)
        assert res.params.isna().all()  # withheld: no user identifies the slopes


def test_values_near_the_doubles_edge_raise_nothing_under_warnings_as_errors() -> None:
    """Random effects on rows of about 1e200 (an audit): the pooled results' noise sd, the
    engine's scale of the residuals' components and a person's within fit overflowed with
    RuntimeWarnings, so a fit run with warnings as errors raised where rows of 1e100 ran. The
    numbers are withheld, as at any scale the engine cannot resolve; nothing raises."""
    from dplong.models.reduce import within_fit_residuals

    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(500), 5)
    data = pd.DataFrame({"id": ids, "x": rng.normal(size=2500), "w": rng.normal(size=500)[ids]})
    data["y"] = data["x"] + data["w"] + rng.normal(size=500)[ids] + rng.normal(size=2500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        warnings.simplefilter("error", RuntimeWarning)
        for scale in (1e100, 1e200):
            scaled = data.assign(x=data["x"] * scale, y=data["y"] * scale)
            res = dplong.RandomEffects.from_formula("y ~ x + w", scaled, groups="id").fit(
                epsilon=20.0, random_state=7
            )
            assert list(res.params.index) == ["Intercept", "x", "w"]
        edge = np.array([[np.inf, -np.inf, np.inf, np.nan, 1.0], [1e308] * 5])
        ssr, df = within_fit_residuals(edge, np.array([np.inf, 1e308]), np.array([4.0, 4.0]), 2)
    assert np.isfinite(df).all() and not (ssr < 0).any()


def test_values_below_the_engines_resolution_are_said() -> None:
    """Values of about 1e-200 (the mirror of those beyond 1e150, withheld with a note): the
    spread found is the engine's smallest, 2^-500, and the interval, honest, is 10^47 times
    the values (released at -2e-153 ± 4e-152 with no word). The note says so and how to
    rescale; values of 1e-100 are resolved and get none."""
    users = np.repeat(np.arange(600), 5)
    rows = 1.0 + np.random.default_rng(0).normal(size=users.size)
    for scale, said in ((1e-200, True), (1e-100, False)):
        res = mean_of(rows * scale, groups=users)
        low, high = res.conf_int().iloc[0]
        truth = float(pd.Series(rows * scale).groupby(users).mean().mean())
        assert low <= truth <= high
        assert any("engine's smallest" in w for w in res.warnings) == said


def test_infinite_user_ids_are_missing_ids() -> None:
    """A user id of ±inf is missing, as NaN is (documented: NaN, ±inf and pd.NA are missing
    everywhere): its rows are dropped, not pooled into one pseudo-user of many persons' rows
    (600 users had counted 602)."""
    x = values()
    groups = (np.arange(2000) % 500).astype(float)
    odd = groups.copy()
    odd[[3, 17, 40]], odd[5] = np.inf, -np.inf
    known = np.isfinite(odd)
    res = mean_of(x, groups=odd)
    same_release(res, mean_of(x[known], groups=odd[known]))
    assert res.nobs_users == 500


def test_a_series_beside_values_is_paired_by_its_index() -> None:
    """``groups`` and ``by`` given as Series beside pandas ``values`` on another index (a
    shuffled copy) are refused, as ``from_formula`` refuses them: numpy would pair them by
    position and give rows other users' ids or keys. Half of 1,000 users of one row at 0 and
    half of 20 rows at 10 (mean of user means 5) had been released at 9.7 [9.06, 10.36]."""
    sizes = np.r_[np.full(500, 1), np.full(500, 20)]
    frame = pd.DataFrame({"id": np.repeat(np.arange(1000), sizes)})
    frame["y"] = np.where(np.repeat(sizes, sizes) == 20, 10.0, 0.0)
    frame["arm"] = np.repeat(np.arange(1000) % 2, sizes)
    shuffled = frame.sample(frac=1, random_state=0)
    with pytest.raises(
        DataError, match="groups is a Series whose index is not the index of values"
    ):
        mean_of(frame["y"], groups=shuffled["id"])
    with pytest.raises(DataError, match="by is a Series whose index is not the index of values"):
        mean_of(frame["y"], groups=frame["id"], by=shuffled["arm"], levels=[0, 1])
    # on the same index, in any row order, the pairs are the rows'
    aligned = mean_of(shuffled["y"], groups=shuffled["id"])
    assert aligned.nobs_users == 1000 and abs(float(aligned.params.iloc[0]) - 5.0) < 1.0


@pytest.mark.parametrize("dtype", ["Float64", "Int64"])
def test_nullable_values_with_pd_na(dtype: str) -> None:
    """pandas' nullable numbers with ``pd.NA`` are numbers with missing values: the same
    release as float64 with NaN, in ``winsorized_mean`` and in a formula model."""
    data = panel().assign(y=panel()["y"].round())
    gaps = data.index % 7 == 0
    with_na = data.assign(y=data["y"].astype(dtype).mask(gaps))
    with_nan = data.assign(y=data["y"].mask(gaps))
    same_release(
        mean_of(with_na["y"], groups=data["user"]), mean_of(with_nan["y"], groups=data["user"])
    )
    same_release(ols_fit(with_na, scale=[1.0, 1.0]), ols_fit(with_nan, scale=[1.0, 1.0]))
    regressor = data.assign(x1=data["x1"].round().astype(dtype).mask(gaps))
    as_float = regressor.assign(x1=regressor["x1"].astype(float))
    same_release(ols_fit(regressor, scale=[1.0, 1.0]), ols_fit(as_float, scale=[1.0, 1.0]))


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint64", "int64"])
def test_integer_columns_do_real_arithmetic_in_terms(dtype: str) -> None:
    """A term's arithmetic on an integer column is that of the numbers, not numpy's wrapping
    integers: ``I(u - 3)`` on a uint8 column had put 255 where the value is 2 (and ``I(n**2)``
    on int64 wraps past 2^63), moving the slope without a word. The same release as the
    column read as float64."""
    data = panel().assign(k=(panel()["x1"].abs() * 3).round())
    for term in ("I(k - 3)", "I(k**2 - 9)"):
        formula = f"y ~ {term}"
        integers = data.assign(k=data["k"].astype(dtype))
        if dtype == "int64":  # the square of 3e9 passes 2^63 (9.2e18): wraps as an int64
            integers = integers.assign(k=integers["k"] * 3_000_000_000)
        floats = integers.assign(k=integers["k"].astype(float))
        fits = [
            dplong.PooledOLS.from_formula(formula, frame, groups="user").fit(
                epsilon=1.0, random_state=0
            )
            for frame in (integers, floats)
        ]
        same_release(*fits)


def test_nullable_bool_values_are_numbers() -> None:
    """A boolean column (also nullable) averages as 0/1: a share of users."""
    flags = pd.Series(values() > 1.0, dtype="boolean").mask(np.arange(2000) % 11 == 0)
    as_float = flags.astype("Float64").astype(float)
    same_release(mean_of(flags, scale=0.25), mean_of(as_float, scale=0.25))


#: A time column with every 7th row missing, in each way pandas writes a missing value.
MISSING_TIMES: dict[str, Callable[[pd.Series, pd.Series], pd.Series]] = {
    "NaN": lambda times, _: times.astype(float).mask(gaps(times)),
    "None": lambda times, _: times.astype(object).where(~gaps(times), None),
    "pd.NA": lambda times, _: times.astype("Int64").mask(gaps(times)),
    "NaT": lambda _, dates: dates.mask(gaps(dates)),
    "NaT with a time zone": lambda _, dates: dates.dt.tz_localize("UTC").mask(gaps(dates)),
}


def gaps(times: pd.Series) -> np.ndarray:
    return np.asarray(times.index % 7 == 0)


@pytest.mark.parametrize("missing", list(MISSING_TIMES))
def test_rows_with_a_missing_time_are_dropped(missing: str) -> None:
    """A row whose ``time`` is missing has no place in its user's order: it is dropped, as a
    row with a missing value is, and the data holder is told (it had been kept, sorted first
    or last by how the value was missing, and changed the estimates without a word)."""
    data = panel().assign(t=MISSING_TIMES[missing](panel()["time"], panel()["when"]))

    def fit(frame: pd.DataFrame) -> PanelResults:
        model = dplong.LongitudinalOLS.from_formula(
            "y ~ x1", frame, groups="user", time="t", correlation="ar1", correlation_param=0.5
        )
        return model.fit(epsilon=1.0, scale=[1.0, 1.0], random_state=0)

    with pytest.warns(DataHolderWarning, match=r"rows are left out: \d+ .* or in time"):
        res = fit(data)
    same_release(res, fit(data[~gaps(data)]))


@pytest.mark.parametrize(
    "model",
    [
        dplong.PooledOLS,
        dplong.PanelOLS,
        dplong.RandomEffects,
        dplong.BetweenOLS,
        dplong.LongitudinalOLS,
        dplong.RandomEffectsLocation,
    ],
)
def test_complex_numbers_are_refused_as_in_winsorized_mean(model: Any) -> None:
    """A complex column as the outcome or a regressor is refused by its dtype with the
    :class:`DataError` of ``winsorized_mean``, by every formula model (it had met numpy's
    casting error inside patsy)."""
    data = panel().assign(z=panel()["x1"].astype(complex))
    formulas = ["z ~ 1"] if model is dplong.RandomEffectsLocation else ["y ~ z", "z ~ x1"]
    for formula in formulas:
        with pytest.raises(DataError, match="'z' has dtype complex128, not a real number"):
            model.from_formula(formula, data, groups="user")
    with pytest.raises(DataError, match="has dtype complex128, not a real number"):
        dplong.winsorized_mean(data["z"], groups=data["user"], epsilon=1.0)


def test_rows_a_mean_leaves_out_warn_the_data_holder() -> None:
    """``winsorized_mean`` leaves out rows without a user id and, per column, missing or
    non-finite values, as the formula layer does; the data holder is told how many (a
    DataHolderWarning on the screen, never in the results), and a clean frame tells of
    nothing (an audit: 11 rows without an id went unsaid and n became 544)."""
    wages = dplong.datasets.load_wage_panel()
    ids = wages["nr"].astype(float).where(wages.index > 10)
    values = wages["lwage"].where(wages.index % 50 != 0, np.inf)
    with pytest.warns(DataHolderWarning) as told:
        res = dplong.winsorized_mean(values, groups=ids, epsilon=2.0, random_state=0)
    (message,) = [str(w.message) for w in told if issubclass(w.category, DataHolderWarning)]
    # row 0 is both: no id, so not among the 87 a user's mean leaves out
    assert message.startswith("Of 4,360 rows, 11 without a user id are left out; 87 with a")
    assert "'lwage' (NaN, ±inf) are left out of its user means" in message
    assert not any("left out" in w for w in res.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        warnings.simplefilter("error", DataHolderWarning)
        dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=2.0, random_state=0)


def test_by_values_outside_the_declared_levels_warn_the_data_holder() -> None:
    """Rows whose ``by=`` key is not among the declared levels are in no level's mean: the data
    holder is told, in the formula's words for a factor (a DataHolderWarning, never the
    results), whether ``by`` names a column or is an array of keys. Missing keys are no
    undeclared level, and declaring every level tells of nothing."""
    data = panel()
    calls = {
        "'site'": lambda levels: mean_of(
            data[["y", "site"]], groups=data["user"], by="site", levels=levels
        ),
        "'by'": lambda levels: mean_of(
            data["y"], groups=data["user"], by=data["site"].to_numpy(), levels=levels
        ),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = call(["north"])
        told = [w for w in caught if issubclass(w.category, DataHolderWarning)]
        assert len(told) == 1, [str(w.message) for w in caught]
        assert str(told[0].message).startswith(
            f"rows of {name} hold values not among its declared levels"
        )
        assert not any("declared levels" in w for w in res.warnings)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            warnings.simplefilter("error", DataHolderWarning)
            call(["north", "south"])
    holed = data.assign(site=data["site"].where(data.index % 5 != 0, None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        warnings.simplefilter("error", DataHolderWarning)
        mean_of(holed[["y", "site"]], groups=holed["user"], by="site", levels=["north", "south"])


@pytest.mark.parametrize(
    "data",
    [np.full(2000, 1e308), np.full(2000, -1e308), np.full(2000, HUGE), np.r_[1e308, -1e308]],
    ids=["1e308", "-1e308", "5e19", "both"],
)
@pytest.mark.parametrize("half_width", [1e-3, 0.5, 2.7])
def test_histogram_bins_are_exact_for_any_double(data: np.ndarray, half_width: float) -> None:
    """Every finite double falls in its own bin ``(2hk - h, 2hk + h]`` exactly (no int64
    overflow, no wrap to a bin far away), and the mode's centre is the data's value."""
    h = Fraction(half_width)
    for value, k in zip(data.tolist(), bin_index(data, half_width).tolist(), strict=True):
        assert 2 * h * k - h < Fraction(value) <= 2 * h * k + h
        assert abs(bin_centre(k, half_width) - value) <= half_width + np.spacing(abs(value))
    if data.size > 2:
        hist = stable_histogram(data, half_width, 1.0, 1e-6, np.random.default_rng(0))
        assert hist.centers.tolist() == [bin_centre(hist.mode(), half_width)]
        midpoint, failed = central_midpoint(data, half_width, 1.0, 1e-6, np.random.default_rng(0))
        assert not failed and midpoint == pytest.approx(data[0], rel=1e-15)


# ---------------------------------------------------------------------------------------------
# Messages: short even for long data
# ---------------------------------------------------------------------------------------------


def test_text_outcome_message_is_short() -> None:
    """A text response is named in a few words, not with every value it holds."""
    words = panel().assign(y=[f"value {i}" for i in range(len(panel()))])
    with pytest.raises(FormulaError) as caught:
        _ols(data=words)
    assert len(str(caught.value)) < 200 and "value 17" not in str(caught.value)
    with pytest.raises(DataError) as caught_mean:
        dplong.winsorized_mean(words["y"], epsilon=1.0)
    assert len(str(caught_mean.value)) < 200 and "value 17" not in str(caught_mean.value)


def test_option_messages_do_not_echo_big_values() -> None:
    """An array passed where a number belongs is described, not printed in full."""
    with pytest.raises(PrivacyParameterError) as caught:
        dplong.winsorized_mean(values(), epsilon=list(range(100_000)))  # type: ignore[arg-type]
    assert len(str(caught.value)) < 200


# ---------------------------------------------------------------------------------------------
# The command line: exit code 2, one line, no traceback
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "panel.csv"
    panel().assign(y_text=lambda d: "v" + d["y"].round(3).astype(str)).to_csv(path, index=False)
    (path.parent / "empty.csv").write_text("")
    return path


BASE = ["--formula", "y ~ x1", "--groups", "user", "--epsilon", "1", "--quiet"]
LOCATION = [
    "--model",
    "location",
    "--formula",
    "y ~ 1",
    "--groups",
    "user",
    "--epsilon",
    "1",
    "--scale",
    "1",
    "--quiet",
]
KERNEL = [
    "--model",
    "kernel",
    "--formula",
    "y ~ x1",
    "--groups",
    "user",
    "--epsilon",
    "1",
    "--domain=-3,3",
    "--bandwidth",
    "1",
    "--quiet",
]
MEAN = ["--model", "mean", "--formula", "y ~ 1", "--groups", "user", "--epsilon", "1", "--quiet"]

CLI_REFUSALS: list[tuple[str, list[str], str]] = [
    ("within-scale -1", [*LOCATION, "--within-scale", "-1"], "within"),
    ("within-scale 0", [*LOCATION, "--within-scale", "0"], "within"),
    ("within-scale nan", [*LOCATION, "--within-scale", "nan"], "within"),
    ("within-scale abc", [*LOCATION, "--within-scale", "abc"], "--within-scale"),
    ("variance-share 1", [*LOCATION, "--variance-share", "1"], "variance"),
    ("variance-share -0.5", [*LOCATION, "--variance-share=-0.5"], "variance"),
    ("variance-share abc", [*LOCATION, "--variance-share", "abc"], "--variance-share"),
    ("min-rows 0", [*LOCATION, "--min-rows", "0"], "min"),
    ("min-rows 2.5", [*LOCATION, "--min-rows", "2.5"], "--min-rows"),
    ("seed -1", ["--model", "ols", *BASE, "--seed", "-1"], "--seed"),
    ("seed abc", ["--model", "ols", *BASE, "--seed", "abc"], "--seed"),
    ("seed 1.5", ["--model", "ols", *BASE, "--seed", "1.5"], "--seed"),
    ("epsilon abc", given(["--model", "ols", *BASE], "--epsilon", "abc"), "--epsilon"),
    ("epsilon 0", given(["--model", "ols", *BASE], "--epsilon", "0"), "--epsilon"),
    ("epsilon inf", given(["--model", "ols", *BASE], "--epsilon", "inf"), "--epsilon"),
    ("epsilon tiny", given(["--model", "ols", *BASE], "--epsilon", "1e-9"), "epsilon"),
    ("delta 1", ["--model", "ols", *BASE, "--delta", "1"], "--delta"),
    ("delta nan", ["--model", "ols", *BASE, "--delta", "nan"], "--delta"),
    ("alpha 2", ["--model", "ols", *BASE, "--alpha", "2"], "--alpha"),
    # refused as the options are read: the summary refused it after the fit's noise
    ("alpha 1e-16", ["--model", "ols", *BASE, "--alpha", "1e-16"], "--alpha: must be a number"),
    ("alpha near 1", ["--model", "ols", *BASE, "--alpha", "0.9999999999999998"], "--alpha: must"),
    ("within-scale subnormal", [*LOCATION, "--within-scale", "1e-310"], "--within-scale must"),
    ("within-scale 1e200", [*LOCATION, "--within-scale", "1e200"], "--within-scale must"),
    (
        "scale 1e300 and within-scale",
        given(LOCATION, "--scale", "1e300", "--within-scale", "1"),
        "--scale must be at most",
    ),
    (
        "domain too narrow",
        given(KERNEL, "--domain", "1e9,1000000000.000001"),
        "--domain is too narrow",
    ),
    ("scale -1", ["--model", "ols", *BASE, "--scale=-1"], "--scale"),
    ("scale 1,2,3", ["--model", "ols", *BASE, "--scale", "1,2,3"], "scale"),
    ("bound abc", ["--model", "ols", *BASE, "--privacy", "local", "--bound", "abc"], "--bound"),
    ("local without bound", ["--model", "ols", *BASE, "--privacy", "local"], "bound"),
    ("privacy shuffle", ["--model", "ols", *BASE, "--privacy", "shuffle"], "--privacy"),
    ("variant", ["--model", "ols", *BASE, "--variant", "best"], "--variant"),
    ("focus unknown", ["--model", "ols", *BASE, "--focus", "nope"], "focus"),
    ("focus empty", ["--model", "ols", *BASE, "--focus", ","], "--focus"),
    ("model unknown", ["--model", "glm", *BASE], "--model"),
    ("bad formula", given(["--model", "ols", *BASE], "--formula", "y ~ (x1"), "y ~ (x1"),
    ("y ~ 0", given(["--model", "ols", *BASE], "--formula", "y ~ 0"), "regressor"),
    (
        "levels malformed",
        [*given(["--model", "ols", *BASE], "--formula", "y ~ site"), "--levels", "site"],
        "--levels",
    ),
    (
        "levels repeated",
        given(["--model", "ols", *BASE], "--formula", "y ~ site", "--levels", "site=north,north"),
        "levels",
    ),
    ("levels unknown column", ["--model", "ols", *BASE, "--levels", "nope=a,b"], "--levels"),
    ("groups unknown", given(["--model", "ols", *BASE], "--groups", "person"), "--groups"),
    ("time unknown", ["--model", "ols", *BASE, "--time", "when2"], "--time"),
    ("time for mean", [*MEAN, "--time", "time"], "--time"),
    ("mean formula", given(MEAN, "--formula", "y ~ x1"), "column ~ 1"),
    ("mean unknown column", given(MEAN, "--formula", "nope ~ 1"), "nope"),
    ("bounds repeated", ["--model", "pooled", *BASE, "--bounds", "y=-5,5;y=-40,40"], "twice"),
    ("max rows zero", ["--model", "pooled", *BASE, "--max-rows", "0"], "--max-rows"),
    ("bounds low above high", ["--model", "pooled", *BASE, "--bounds", "x1=4,-4"], "--bounds x1"),
    ("kernel needs domain", ["--model", "kernel", *BASE, "--bandwidth", "1"], "--domain"),
    ("kernel domain reversed", given(KERNEL, "--domain", "3,-3"), "--domain"),
    ("kernel bandwidth 0", given(KERNEL, "--bandwidth", "0"), "--bandwidth"),
    ("kernel grid 1", [*KERNEL, "--grid", "1"], "--grid"),
    ("kernel kernel", [*KERNEL, "--kernel", "box"], "--kernel"),
    ("option of another model", ["--model", "ols", *BASE, "--bandwidth", "1"], "--bandwidth"),
    ("report directory", ["--model", "ols", *BASE, "--report", "/no/such/dir/r.html"], "--report"),
    ("report is a directory", ["--model", "ols", *BASE, "--report", "."], "is a directory"),
    ("abbreviated option", ["--model", "ols", *BASE, "--n", "545"], "unrecognized arguments: --n"),
    ("missing file", ["DATA=missing.csv", "--model", "ols", *BASE], "DATA"),
    ("empty file", ["DATA=empty.csv", "--model", "ols", *BASE], "DATA"),
    ("unknown data set", ["DATA=dataset:iris", "--model", "ols", *BASE], "iris"),
    ("levels numbers alike", ["--model", "ols", *BASE, "--levels", "x1=2,2.0"], "--levels"),
    ("levels truth alike", ["--model", "ols", *BASE, "--levels", "flag=true,TRUE"], "--levels"),
    ("max-rows per-user", ["--model", "ols", *BASE, "--max-rows", "0"], "--estimator within only"),
    (
        "max-rows beyond its limit",
        ["--model", "pooled", *BASE, "--max-rows", "1000000000"],
        "100,000",
    ),
    ("levels of the user ids", ["--model", "ols", *BASE, "--levels", "user=1,2"], "['user']"),
    (
        "bounds of the Intercept",
        ["--model", "pooled", *BASE, "--bounds", "Intercept=1,2"],
        "Intercept",
    ),
]


def run_cli(csv: Path, argv: list[str]) -> tuple[int, str, str]:
    data = str(csv)
    if argv[0].startswith("DATA="):
        name = argv[0].removeprefix("DATA=")
        data = name if name.startswith("dataset:") else str(csv.parent / name)
        argv = argv[1:]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["fit", data, *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("argv", "names"), [c[1:] for c in CLI_REFUSALS], ids=[c[0] for c in CLI_REFUSALS]
)
def test_cli_refusal(csv: Path, argv: list[str], names: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        code, out, err = run_cli(csv, argv)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("dplong"), err
    assert names in err, err
    assert len(err) < MAX_MESSAGE


#: Command lines whose formula reads a column that is not numbers (or not the declared levels):
#: the CLI reads no schema from the rows, so such a column is a column of missing values — the
#: fit runs (or is refused) exactly as with that column's cells left empty, and the data holder
#: is told on stderr. Rows: (name, argv, the column).
CLI_READ_AS_MISSING: list[tuple[str, list[str], str]] = [
    ("text outcome", given(["--model", "ols", *BASE], "--formula", "y_text ~ x1"), "y_text"),
    ("undeclared factor", given(["--model", "ols", *BASE], "--formula", "y ~ x1 + site"), "site"),
    ("levels of a numeric column", ["--model", "ols", *BASE, "--levels", "x1=a,b"], "x1"),
    ("mean text column", given(MEAN, "--formula", "y_text ~ 1", "--scale", "1"), "y_text"),
    ("kernel text x", given(KERNEL, "--formula", "y ~ site", "--epsilon", "8"), "site"),
]


@pytest.mark.parametrize(
    ("argv", "column"),
    [c[1:] for c in CLI_READ_AS_MISSING],
    ids=[c[0] for c in CLI_READ_AS_MISSING],
)
def test_cli_reads_what_is_not_a_number_as_missing(csv: Path, argv: list[str], column: str) -> None:
    blank = csv.parent / f"blank-{column}.csv"
    pd.read_csv(csv).assign(**{column: ""}).to_csv(blank, index=False)
    argv = [a for a in argv if a != "--quiet"]  # --quiet silences the warning asked for here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        code, out, err = run_cli(csv, [*argv, "--seed", "0"])
        expected = run_cli(csv, [f"DATA={blank.name}", *argv, "--seed", "0"])
    assert (code, out) == expected[:2]
    assert "Traceback" not in err
    warning = f"dplong: warning: DATA holds values of {column!r} that are not"
    assert warning in err and warning not in expected[2], err


def test_cli_asks_for_a_factors_levels_only_of_a_column_of_text(csv: Path) -> None:
    """A numeric column with a stray 'n.a.' cell is not a factor: its warning asks for no
    levels (an audit was told to declare x1's levels), while a column with no number in it
    is most likely a factor, and its warning asks for them."""
    frame = pd.read_csv(csv)
    stray = csv.parent / "stray.csv"
    frame.assign(x1=frame["x1"].astype(object).where(frame.index != 3, "n.a.")).to_csv(
        stray, index=False
    )
    argv = [a for a in ["--model", "ols", *BASE] if a != "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        _, _, err = run_cli(csv, [f"DATA={stray.name}", *argv, "--seed", "0"])
        said = "dplong: warning: DATA holds values of 'x1' that are not numbers; they are read"
        assert said in err and "--levels x1=" not in err, err
        _, _, err = run_cli(csv, [*given(argv, "--formula", "y ~ site"), "--seed", "0"])
        assert "(a factor needs its levels declared: --levels site=...)" in err, err


def test_cli_by_values_outside_the_levels_are_told(csv: Path) -> None:
    """``--by`` rows whose key is not among its ``--levels`` are read as missing, and the data
    holder is told on stderr, as of a formula's column."""
    argv = [a for a in MEAN if a != "--quiet"]  # --quiet silences the warning asked for here
    warning = "dplong: warning: DATA holds values of 'site' that are not among its --levels"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        code, _, err = run_cli(csv, [*argv, "--by", "site", "--levels", "site=north"])
        assert code == 0 and warning in err, err
        code, _, err = run_cli(csv, [*argv, "--by", "site", "--levels", "site=north,south"])
        assert code == 0 and warning not in err, err


def test_cli_refusal_in_a_real_process(csv: Path) -> None:
    """``python -m dplong`` itself: exit code 2 and one line, for a library refusal and for a
    bad flag value."""
    for extra in (["--seed", "-1"], ["--within-scale", "-1"]):
        model = LOCATION if extra[0] == "--within-scale" else ["--model", "ols", *BASE]
        done = subprocess.run(
            [sys.executable, "-m", "dplong", "fit", str(csv), *model, *extra],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == "" and "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr


# --- odd cells in DATA: read cell by cell, never a traceback ---------------------------------

ODD_CELLS = ["?", "-", "n.a.", "", "NULL", "1,5"]


@pytest.mark.parametrize("cell", ODD_CELLS, ids=[repr(c) for c in ODD_CELLS])
def test_cli_one_odd_cell_is_one_missing_value(csv: Path, cell: str) -> None:
    """One user's odd cell in a column of numbers (or of booleans) is that row's missing value:
    the run is the run with the cell left empty — same exit code, same output."""
    frame = pd.read_csv(csv).astype({"x1": object, "flag": object})
    for column in ("x1", "flag"):
        odd, blank = frame.copy(), frame.copy()
        odd.loc[0, column], blank.loc[0, column] = cell, None
        paths = [csv.parent / f"odd-{column}.csv", csv.parent / f"blank-{column}.csv"]
        odd.to_csv(paths[0], index=False)
        blank.to_csv(paths[1], index=False)
        argv = given(["--model", "ols", *BASE], "--formula", f"y ~ {column}", "--seed", "0")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            runs = [run_cli(csv, [f"DATA={path.name}", *argv]) for path in paths]
        assert runs[0][:2] == runs[1][:2] and runs[0][0] == 0, runs[0][2]
        assert "Traceback" not in runs[0][2]


def test_cli_parquet_parts_that_disagree_on_a_dtype(csv: Path) -> None:
    """A glob of Parquet files storing x1 as numbers in one part and as text (with a ``?``) in
    another is read cell by cell, as the CSV with that cell empty: no traceback."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("dask.dataframe")
    frame = pd.read_csv(csv)
    folder = csv.parent / "mixed"
    folder.mkdir(exist_ok=True)
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(folder / "a.parquet", index=False)
    text = frame.iloc[half:].astype({"x1": str})
    text.iloc[0, text.columns.get_loc("x1")] = "?"
    text.to_parquet(folder / "b.parquet", index=False)
    blank = frame.astype({"x1": object})
    blank.iloc[half, blank.columns.get_loc("x1")] = None
    blank.to_csv(csv.parent / "mixed.csv", index=False)
    argv = ["--model", "ols", *BASE, "--seed", "0"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        code, out, err = run_cli(csv, [f"DATA={folder.name}/*.parquet", *argv])
        expected = run_cli(csv, ["DATA=mixed.csv", *argv])
    assert code == 0 and "Traceback" not in err, err
    assert out == expected[1]


def test_one_user_at_the_doubles_edge_raises_no_numpy_warning() -> None:
    """One user's responses at 1e308: their sums overflow to inf, which the releases clip as
    any far value, but numpy said so in a RuntimeWarning ("overflow encountered in reduceat",
    "... in multiply") that the other data sets did not raise: a message one user's rows
    decided, outside the data holder's warnings. None now."""
    rng = np.random.default_rng(1)
    rows = pd.DataFrame({"id": np.repeat(np.arange(400), 5), "y": rng.normal(size=2000)})
    rows["x"] = rng.uniform(0, 10, len(rows))
    rows.loc[rows["id"] == 7, "y"] = 1e308
    fits = (
        lambda: dplong.RandomEffectsLocation.from_formula("y ~ 1", rows, groups="id"),
        lambda: dplong.PriestleyChao.from_formula(
            "y ~ x", rows, groups="id", domain=(0, 10), bandwidth=1.5, grid=8
        ),
    )
    for build in fits:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)
            warnings.simplefilter("error", RuntimeWarning)
            build().fit(epsilon=4.0, random_state=0)


#: A frame read from a CSV file written without a header line: its "column names" are the
#: first person's cells (id, birth date, status, blood pressure)
_HEADERLESS = pd.DataFrame(
    {
        "48213": ["48213", "50007"] * 3,
        "1961-04-02": ["1961-04-02", "1975-11-30"] * 3,
        "HIV+": ["HIV+", "neg"] * 3,
        "131.5": [129.0, 118.2] * 3,
    }
)


@pytest.mark.parametrize(
    "refuse",
    [
        lambda data: dplong.LongitudinalOLS.from_formula("Q('131.5') ~ 1", data, groups="id"),
        lambda data: dplong.LongitudinalOLS.from_formula(
            "Q('131.5') ~ 1", data, groups="48213", time="visit"
        ),
        lambda data: ColumnMean.from_formula("sbp ~ 1", data, groups="48213"),
        lambda data: ColumnMean.from_formula(
            "Q('131.5') ~ 1", data, groups="48213", by="site", levels={"site": ["a"]}
        ),
        lambda data: dplong.io.typed(data, groups="patient", levels={"site": ["a"]}),
        lambda data: DesignSpec.from_formula("sbp ~ 1", pd.DataFrame({"sbp": [1.0]})).evaluate(
            data
        ),
    ],
    ids=["groups", "time", "outcome of a mean", "by", "read", "design"],
)
def test_a_missing_column_is_refused_without_the_columns(refuse: Callable[[Any], object]) -> None:
    """A refusal of a name that is not a column listed every column: a header-less CSV file's
    names are its first row, so the refusal printed a person's cells (an audit). It offers
    only the columns close to the name now, and none here."""
    with pytest.raises(DplongError, match=r"(is not a column|are not columns) of") as refused:
        refuse(_HEADERLESS)
    assert not any(name in str(refused.value) for name in _HEADERLESS.columns), refused.value


def test_a_missing_column_is_refused_with_the_close_ones() -> None:
    with pytest.raises(FormulaError, match=r"^groups='persn' is not a column of the data \(did "):
        _ols(groups="persn", data=panel().rename(columns={"user": "person"}))
    with pytest.raises(
        DataError, match=r"'HIV' is not a column of DATA \(did you mean 'HIV\+'\?\)$"
    ):
        dplong.io.typed(_HEADERLESS, groups="HIV")


@pytest.mark.parametrize("k", [2, 7, 150, 1000])
def test_a_moment_bound_of_any_order_gives_its_bias_bound(k: int) -> None:
    """The bias constant (k-1)^(k-1) / k^k of a stated ``Moment(k, M)`` overflowed from k =
    144 on, after the fit's noise (an audit: ``--tail-moment 150``): it is computed as
    (1 - 1/k)^(k-1) / k now, to the exact value's rounding."""
    bias = moment_bias(np.array([3.0]), float(k), np.array([2.0]))  # M = 3, t = 2
    exact = Fraction(3) * Fraction((k - 1) ** (k - 1), k**k) / Fraction(2) ** (k - 1)
    assert bias[0] == pytest.approx(min(float(exact), 3.0 ** (1 / k)), rel=1e-12)


def test_a_moment_bound_of_high_order_is_released() -> None:
    res = dplong.winsorized_mean(
        values(), groups=np.arange(values().size) // 5, epsilon=4.0,
        tail=dplong.Moment(200, 1.0), random_state=0,
    )  # fmt: skip
    assert np.isfinite(res.params).all() and np.isfinite(res.conf_int().to_numpy()).all()


def test_a_narrow_domain_far_from_zero_keeps_its_grid_points_apart() -> None:
    """The grid's labels were rounded to 12 digits of the domain's larger end: those of
    (1e9, 1e9 + 0.001) collided, and the fit failed after its noise (an audit). They are
    rounded to 12 digits of its width now."""
    data = items().assign(x=1e9 + items()["x"] * 0.001)
    model = dplong.PriestleyChao.from_formula(
        "y ~ x", data, groups="user", domain=(1e9, 1e9 + 0.001), bandwidth=0.0002, grid=5
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = model.fit(epsilon=4.0, scale=1.0, random_state=0)
    assert res.params.index.is_unique and res.params.index[1] == 1e9 + 0.00025
    assert res.withheld.empty or res.withheld.index.is_unique
    res.summary()


@pytest.mark.parametrize(
    ("argument", "prefix"), [(None, "levels site:"), ("--levels", "--levels site:")]
)
def test_level_refusal_names_the_callers_argument(argument: str | None, prefix: str) -> None:
    # the Python API's levels= and the command line's --levels share one check; each caller's
    # refusal names its own argument (the Python API's said "--levels", an option it has not)
    options = {} if argument is None else {"argument": argument}
    with pytest.raises(ParameterError) as caught:
        dplong.io.level_texts("site", ["a", "a"], **options)
    assert str(caught.value).startswith(prefix)
