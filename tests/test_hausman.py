"""The private Hausman comparison (``dplong.hausman``): its arithmetic on two fits' released
numbers, its refusals, and its size and power on simulated panels."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dplong
from dplong.exceptions import DplongWarning, ParameterError

FORMULA = "lwage ~ exper + union + married"


def _fit(name: str, frame: pd.DataFrame, formula: str, groups: str, **options: object) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        return getattr(dplong, name).from_formula(formula, frame, groups=groups).fit(**options)


@pytest.fixture(scope="module")
def wage_fits() -> dict[str, dplong.PanelResults]:
    wages = dplong.datasets.load_wage_panel()
    return {
        name: _fit(name, wages, FORMULA, "nr", epsilon=4.0, random_state=0)
        for name in ("PanelOLS", "BetweenOLS", "RandomEffects")
    }


def test_the_comparison_reads_the_fits_released_numbers(
    wage_fits: dict[str, dplong.PanelResults],
) -> None:
    within, between = wage_fits["PanelOLS"], wage_fits["BetweenOLS"]
    test = dplong.hausman(within, between)
    shared = ["exper", "union", "married"]  # PanelOLS has no intercept
    assert test.table.index.tolist() == shared and test.df == 3
    difference = within.params[shared] - between.params[shared]
    sd = np.sqrt(within.bse[shared] ** 2 + between.bse[shared] ** 2)
    bias = within.bias[shared] + between.bias[shared]
    adjusted = np.maximum(np.abs(difference) / sd - bias / sd, 0.0)
    p = 2.0 * stats.norm.sf(adjusted)
    np.testing.assert_allclose(test.table["difference"], difference, rtol=1e-12)
    np.testing.assert_allclose(test.table["std err"], sd, rtol=1e-12)
    np.testing.assert_allclose(test.table["bias bound"], bias, rtol=1e-12)
    np.testing.assert_allclose(test.table["z"], difference / sd, rtol=1e-12)
    np.testing.assert_allclose(test.table["P (bias-adj.)"], p, rtol=1e-9)
    assert test.statistic == pytest.approx(float(adjusted.max()))
    assert test.pvalue == pytest.approx(min(1.0, 3 * float(p.min())))
    assert test.models == ("PanelOLS", "BetweenOLS")
    assert test.epsilon == pytest.approx(within.privacy.epsilon + between.privacy.epsilon)
    assert test.delta == pytest.approx(within.privacy.delta + between.privacy.delta)
    # two fits of the same persons compose: the note says what they spent together
    assert f"{test.epsilon:.4g}" in " ".join(str(test).split())


def test_the_comparison_renders(wage_fits: dict[str, dplong.PanelResults]) -> None:
    test = dplong.hausman(wage_fits["PanelOLS"], wage_fits["RandomEffects"])
    text = str(test)
    for name in test.table.index:
        assert name in text and name in test.as_html() and name in test.as_latex()
    assert f"{test.pvalue:.3g}" in " ".join(text.split())
    assert test.summary() is test and test._repr_html_() == test.as_html()


def test_a_coefficient_either_fit_withheld_is_left_out(
    wage_fits: dict[str, dplong.PanelResults],
) -> None:
    within, effects = wage_fits["PanelOLS"], wage_fits["RandomEffects"]
    params = within.params.copy()
    params["union"] = np.nan
    withheld = dataclasses.replace(within, params=params)
    test = dplong.hausman(withheld, effects)
    assert test.df == 2 and test.table.loc["union"].isna().all()
    assert test.table.drop(index="union").notna().all().all()
    params[:] = np.nan
    none = dplong.hausman(dataclasses.replace(within, params=params), effects)
    assert none.df == 0 and math.isnan(none.pvalue) and math.isnan(none.statistic)
    assert not none.rejects(0.05)


def test_the_comparison_refuses_what_it_cannot_compare(
    wage_fits: dict[str, dplong.PanelResults],
) -> None:
    within = wage_fits["PanelOLS"]
    with pytest.raises(ParameterError, match="other must be a dplong fit"):
        dplong.hausman(within, 3.0)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="same fit"):
        dplong.hausman(within, within)
    wages = dplong.datasets.load_wage_panel()
    fewer = wages[wages["nr"].isin(wages["nr"].unique()[:300])]
    other = _fit("BetweenOLS", fewer, FORMULA, "nr", epsilon=4.0, random_state=0)
    with pytest.raises(ParameterError, match="n=545 and n=300"):
        dplong.hausman(within, other)
    # the estimators in their roles: a mean, a pair reversed, two of one kind (an audit found
    # each compared as if the first were the within fit)
    mean = dplong.winsorized_mean(
        wages["lwage"], groups=wages["nr"], epsilon=1.0, random_state=0, lower=0.0
    )
    with pytest.raises(ParameterError, match="other must be a fit of BetweenOLS or Random"):
        dplong.hausman(within, mean)
    with pytest.raises(ParameterError, match="consistent must be a fit of PanelOLS or Longi"):
        dplong.hausman(wage_fits["RandomEffects"], within)
    with pytest.raises(ParameterError, match="LongitudinalOLS, got BetweenOLS"):
        dplong.hausman(wage_fits["BetweenOLS"], wage_fits["RandomEffects"])
    hours = _fit("BetweenOLS", wages, "hours ~ exper + union", "nr", epsilon=4.0, random_state=0)
    with pytest.raises(ParameterError, match="same outcome: they model 'lwage' and 'hours'"):
        dplong.hausman(within, hours)
    spaced = _fit(
        "BetweenOLS", wages, "lwage~exper + union + married", "nr", epsilon=4.0, random_state=0
    )
    assert dplong.hausman(within, spaced).df == 3  # the same outcome, written without spaces
    schooling = _fit("BetweenOLS", wages, "lwage ~ educ", "nr", epsilon=4.0, random_state=0)
    with pytest.raises(ParameterError, match="share no coefficient"):
        dplong.hausman(within, schooling)
    with pytest.raises(ParameterError, match="alpha"):
        dplong.hausman(within, wage_fits["BetweenOLS"]).rejects(1.5)


def _panel(rng: np.random.Generator, n: int, rho: float, T: int = 6) -> pd.DataFrame:
    """``y = 1 + 0.5 x + u + e``, the regressor's person mean correlated ρ with the effect u."""
    effect = rng.normal(size=n)
    means = rho * effect + math.sqrt(1.0 - rho**2) * rng.normal(size=n)
    ids = np.repeat(np.arange(n), T)
    x = means[ids] + rng.normal(size=n * T)
    return pd.DataFrame(
        {"id": ids, "x": x, "y": 1.0 + 0.5 * x + effect[ids] + rng.normal(size=n * T)}
    )


@pytest.mark.parametrize(("rho", "low", "high"), [(0.0, 0, 3), (0.6, 18, 20)])
def test_size_and_power_within_against_between(rho: float, low: int, high: int) -> None:
    """20 panels of 1,000 persons (T = 6), ε = 4 a fit. Under the model (ρ = 0) each
    coefficient's z has sd at most 1 on the summed variances (the within and between sampling
    errors are uncorrelated, the noises independent), so a fit rejects at 0.05 with chance at
    most 0.05 (up to the normal law standing in for the Laplace noise's): 3 or fewer of 20
    holds with chance 0.98 at that bound (benchmarks/hausman.py measured 0 of 100). With ρ =
    0.6 the between slope is 0.5 + 0.6 / (1 + 1/6) ≈ 1.01, the within 0.5: a difference of
    about 5-6.5 summed standard errors at ε = 4 (the bse about 0.045 and 0.07), rejected in
    99 of 100 by the benchmark, so 18 of 20 fails only if the power fell below about 0.8."""
    rng = np.random.default_rng([20261205, int(10 * rho)])
    rejected = 0
    for r in range(20):
        frame = _panel(rng, 1000, rho)
        within = _fit("PanelOLS", frame, "y ~ x", "id", epsilon=4.0, random_state=r)
        between = _fit("BetweenOLS", frame, "y ~ x", "id", epsilon=4.0, random_state=r)
        rejected += dplong.hausman(within, between).rejects(0.05)
    assert low <= rejected <= high
