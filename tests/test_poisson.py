"""The panel Poisson mean, and the support and tail options of winsorized_mean it rests on."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dplong
from dplong.cli import main
from dplong.exceptions import FormulaError, ParameterError
from dplong.models.command_line import MODELS

NOISE_OFF = {"epsilon": 1e300, "random_state": 0}  # every draw exactly 0 (test_engine_units.py)


def counts(n: int = 600, rows: int = 6, seed: int = 0) -> pd.DataFrame:
    """Visits per user-period with user rates gamma(2, 1.5) (mean 3, skewed)."""
    rng = np.random.default_rng(seed)
    rates = rng.gamma(2.0, 1.5, n)
    return pd.DataFrame(
        {
            "id": np.repeat(np.arange(n), rows),
            "visits": rng.poisson(np.repeat(rates, rows)).astype(float),
        }
    )


def per_user_rate(frame: pd.DataFrame) -> float:
    """The non-private estimator: the mean over users of each user's mean count."""
    return float(frame.groupby("id")["visits"].mean().mean())


def test_noise_off_equals_the_mean_of_user_rates() -> None:
    frame = counts()
    res = dplong.PoissonMean.from_formula("visits ~ 1", frame, groups="id").fit(**NOISE_OFF)
    assert res.params["visits"] == pytest.approx(per_user_rate(frame), rel=1e-12)
    assert str(res.model) == "PoissonMean" and res.formula == "visits ~ 1" and res.nobs_users == 600


def test_negative_counts_are_dropped_like_missing_values() -> None:
    frame = counts()
    odd = frame.copy()
    odd.loc[odd.index[::7], "visits"] = -3.0
    dropped = odd.assign(visits=odd["visits"].where(odd["visits"] >= 0))
    fit = dplong.PoissonMean.from_formula("visits ~ 1", odd, groups="id").fit(**NOISE_OFF)
    assert fit.params["visits"] == pytest.approx(per_user_rate(dropped), rel=1e-12)


def test_the_support_moves_the_interval_up_and_the_interval_covers() -> None:
    # 60 % of users at 0: the interval around the small midpoint reaches far below 0; the
    # support moves it up (as far as the count's noise allows: projection.supported_centre), so
    # more of the right tail is kept than without it
    rng = np.random.default_rng(5)
    rate = np.where(rng.random(2000) < 0.6, 0.0, rng.gamma(1.0, 2.0, 2000))
    frame = pd.DataFrame({"id": np.repeat(np.arange(2000), 4)})
    frame["visits"] = rng.poisson(np.repeat(rate, 4)).astype(float)
    poisson = dplong.PoissonMean.from_formula("visits ~ 1", frame, groups="id")
    plain = dplong.winsorized_mean(frame["visits"], groups=frame["id"], epsilon=4.0, random_state=3)
    res = poisson.fit(epsilon=4.0, random_state=3)
    moved, unmoved = res.projection_interval.loc["visits"], plain.projection_interval.loc["visits"]
    assert moved["upper"] > unmoved["upper"] and moved["lower"] > unmoved["lower"]
    truth = per_user_rate(frame)
    lo, hi = res.conf_int().loc["visits"]
    assert lo <= truth <= hi


def test_winsorized_mean_support_and_tail_are_checked_before_any_noise() -> None:
    x = np.random.default_rng(1).exponential(2.0, 1000)
    with pytest.raises(ParameterError, match="tail must be one of"):
        dplong.winsorized_mean(x, epsilon=1.0, tail="cauchy")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="lower must be finite"):
        dplong.winsorized_mean(x, epsilon=1.0, lower=np.inf)
    with pytest.raises(ParameterError, match="the paper's algorithms take neither"):
        dplong.winsorized_mean(x, epsilon=1.0, lower=0.0, variant="theory", scale=4.0)
    with pytest.raises(FormulaError, match="PoissonMean takes a formula 'column ~ 1'"):
        dplong.PoissonMean.from_formula("visits ~ age", counts().assign(age=1.0), groups="id")


def test_on_the_command_line_without_editing_it(tmp_path: Path) -> None:
    """The model registers itself: ``--model poisson`` is offered and fits."""
    assert "poisson" in MODELS
    path = tmp_path / "visits.csv"
    counts(n=400).to_csv(path, index=False)
    argv = ["fit", str(path), "--model", "poisson", "--formula", "visits ~ 1"]
    argv += ["--groups", "id", "--epsilon", "2", "--seed", "1", "--quiet"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue()
    assert "PoissonMean" in out.getvalue() and "visits" in out.getvalue()
