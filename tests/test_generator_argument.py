"""Every public entry point that takes ``random_state`` also takes ``rng`` (numpy SPEC 7): the
same generator under its other name, at most one of the two (docs/design §1: a refusal comes
before any noise)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from untouchable import Untouchable

import dplong
from dplong.exceptions import ParameterError
from dplong.privacy import estimate_scale
from dplong.simulate import dependent_normal, linear_panel, panel_rows

PUBLIC_MODULES = ("dplong", "dplong.privacy", "dplong.simulate", "dplong.dask_frames")


def _entry_points() -> dict[str, Callable[..., Any]]:
    """Public functions and public methods of public classes with a ``random_state``."""
    found = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            members = [(name, obj)]
            if isinstance(obj, type):
                members = [
                    (f"{name}.{attr}", getattr(obj, attr))
                    for attr in dir(obj)
                    if not attr.startswith("_") and callable(getattr(obj, attr))
                ]
            for label, member in members:
                try:
                    parameters = inspect.signature(member).parameters
                except (TypeError, ValueError):
                    continue
                if "random_state" in parameters:
                    found[label] = member
    return found


_WAGES = linear_panel(300, 6, [1.0, 0.5], random_state=0)
_ROWS = np.random.default_rng(1).normal(5.0, 1.0, size=(400, 2))
_COUNTS = _WAGES.assign(y=np.random.default_rng(3).poisson(3.0, len(_WAGES)))
_CURVE = pd.DataFrame({"x": np.arange(2000) / 2000})
_CURVE["y"] = np.sin(2 * np.pi * _CURVE["x"]) + np.random.default_rng(2).normal(0, 0.5, 2000)
_GROWTH = _WAGES.assign(age=_WAGES["time"] / 6)


def _params(res: Any) -> np.ndarray:
    return np.asarray(res.params, dtype=float)


#: One small call per entry point; each returns what the generator decides.
CALLS: dict[str, Callable[..., Any]] = {
    "winsorized_mean": lambda **kw: _params(
        dplong.winsorized_mean(_ROWS, epsilon=4.0, scale=1.0, **kw)
    ),
    "PoissonMean.fit": lambda **kw: _params(
        dplong.PoissonMean.from_formula("y ~ 1", _COUNTS, groups="user").fit(epsilon=4.0, **kw)
    ),
    "LongitudinalOLS.fit": lambda **kw: _params(
        dplong.LongitudinalOLS.from_formula("y ~ x1", _WAGES, groups="user").fit(
            epsilon=8.0, scale=1.0, **kw
        )
    ),
    "RandomEffectsLocation.fit": lambda **kw: _params(
        dplong.RandomEffectsLocation.from_formula("y ~ 1", _WAGES, groups="user").fit(
            epsilon=8.0, variance_share=0.0, **kw
        )
    ),
    "PriestleyChao.fit": lambda **kw: _params(
        dplong.PriestleyChao.from_formula(
            "y ~ x", _CURVE, domain=(0, 1), bandwidth=0.1, grid=5
        ).fit(epsilon=4.0, error_sd=0.5, amplitude=1.0, **kw)
    ),
    "NadarayaWatson.fit": lambda **kw: _params(
        dplong.NadarayaWatson.from_formula(
            "y ~ x", _CURVE, domain=(0, 1), bounds=(-3, 3), bandwidth=0.2, grid=5
        ).fit(epsilon=8.0, **kw)
    ),
    "PooledOLS.fit": lambda **kw: _params(
        dplong.PooledOLS.from_formula(
            "y ~ x1", _WAGES, groups="user", bounds={"y": (-10, 10), "x1": (-5, 5)}
        ).fit(epsilon=4.0, **kw)
    ),
    "BetweenOLS.fit": lambda **kw: _params(
        dplong.BetweenOLS.from_formula(
            "y ~ x1", _WAGES, groups="user", bounds={"y": (-10, 10), "x1": (-5, 5)}
        ).fit(epsilon=4.0, **kw)
    ),
    "PanelOLS.fit": lambda **kw: _params(
        dplong.PanelOLS.from_formula(
            "y ~ x1", _WAGES, groups="user", bounds={"y": (-10, 10), "x1": (-5, 5)}
        ).fit(epsilon=4.0, **kw)
    ),
    "RandomEffects.fit": lambda **kw: _params(
        dplong.RandomEffects.from_formula(
            "y ~ x1", _WAGES, groups="user", bounds={"y": (-10, 10), "x1": (-5, 5)}
        ).fit(epsilon=4.0, variance_components=(1.0, 1.0), **kw)
    ),
    "estimate_scale": lambda **kw: (
        estimate_scale(_ROWS, epsilon=8.0, scale_bounds=(0.1, 10.0), **kw).scale
    ),
    "dependent_normal": lambda **kw: dependent_normal(4, size=3, **kw),
    "panel_rows": lambda **kw: panel_rows(5, 3, **kw),
    "linear_panel": lambda **kw: linear_panel(5, 3, [1.0, 2.0], **kw).to_numpy(float),
}


def test_every_entry_point_is_covered_and_takes_rng() -> None:
    entry_points = _entry_points()
    assert set(entry_points) == set(CALLS)
    for function in entry_points.values():
        rng = inspect.signature(function).parameters["rng"]
        assert rng.kind is inspect.Parameter.KEYWORD_ONLY and rng.default is None


@pytest.mark.parametrize("entry", sorted(CALLS))
def test_rng_is_random_state_by_another_name(entry: str) -> None:
    np.testing.assert_array_equal(CALLS[entry](rng=7), CALLS[entry](random_state=7))
    generator = CALLS[entry](rng=np.random.default_rng(7))
    np.testing.assert_array_equal(generator, CALLS[entry](random_state=7))


@pytest.mark.parametrize("entry", sorted(CALLS))
def test_both_given_is_refused_before_any_draw(entry: str) -> None:
    with pytest.raises(ParameterError, match=r"random_state or as rng, not both"):
        CALLS[entry](random_state=Untouchable(), rng=Untouchable())


@pytest.mark.parametrize("entry", sorted(CALLS))
def test_a_bad_rng_is_named(entry: str) -> None:
    with pytest.raises(ParameterError, match=r"^rng must be None, an int or a numpy"):
        CALLS[entry](rng="seed")
    with pytest.raises(ParameterError, match=r"^rng must be a non-negative int"):
        CALLS[entry](rng=-1)
