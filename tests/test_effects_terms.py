"""linearmodels' ``EntityEffects`` and ``TimeEffects`` formula terms (issue 33): the within
estimator and dummies of the declared periods, against linearmodels with the noise off; clear
errors, before any data is read, where dplong needs a declaration."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from linearmodels import PanelOLS

import dplong
from dplong.exceptions import FormulaError, ParameterError

#: ε = 1e300 draws every noise exactly 0 and the scale 1e8 clips nobody (as in test_within):
#: the release is the non-private within estimator
NOISE_OFF = {"epsilon": 1e300, "delta": 0.5, "scale": 1e8, "random_state": 0}
YEARS = list(range(1980, 1988))
FORMULA = "lwage ~ expersq + union + married + EntityEffects"


@pytest.fixture(scope="module")
def wages() -> pd.DataFrame:
    return dplong.datasets.load_wage_panel()


def test_entity_and_time_effects_equal_linearmodels(wages: pd.DataFrame) -> None:
    model = dplong.LongitudinalOLS.from_formula(
        FORMULA + " + TimeEffects", wages, groups="nr", time="year", levels={"year": YEARS}
    )
    assert model.formula == "lwage ~ expersq + union + married + C(year)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the within notes on a balanced panel's columns
        res = model.fit(**NOISE_OFF)  # EntityEffects: the within estimator by default
    reference = PanelOLS.from_formula(
        FORMULA + " + TimeEffects", wages.set_index(["nr", "year"])
    ).fit()
    slopes = ["expersq", "union", "married"]
    # the released cross products are exact fixed-point sums: agreement to rounding (the
    # largest difference measured is 8e-13 on coefficients of 0.005 to 0.08)
    np.testing.assert_allclose(res.params[slopes], reference.params[slopes], rtol=1e-10, atol=1e-12)
    assert [f"C(year)[T.{y}]" for y in YEARS[1:]] == [
        name for name in res.params.index if name.startswith("C(year)")
    ]


def test_entity_effects_is_the_within_fit(wages: pd.DataFrame) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        marked = dplong.LongitudinalOLS.from_formula(FORMULA, wages, groups="nr").fit(
            epsilon=4.0, random_state=3
        )
        plain = dplong.LongitudinalOLS.from_formula(
            "lwage ~ expersq + union + married", wages, groups="nr"
        ).fit(epsilon=4.0, estimator="within", random_state=3)
    pd.testing.assert_series_equal(marked.params, plain.params)
    assert "Intercept" not in marked.params.index


@pytest.mark.parametrize(
    ("formula", "options", "words"),
    [
        (FORMULA + " + TimeEffects", {}, "time= naming the time column"),
        (FORMULA + " + TimeEffects", {"time": "year"}, "levels={'year': [...]}"),
        ("lwage ~ union:EntityEffects", {}, "whole terms"),
    ],
    ids=["time-effects-without-time", "time-effects-without-declared-periods", "interaction"],
)
def test_clear_errors_name_the_dplong_spelling(
    wages: pd.DataFrame, formula: str, options: dict[str, str], words: str
) -> None:
    with pytest.raises(FormulaError, match=words.replace("[", r"\[").replace("{", r"\{")):
        dplong.LongitudinalOLS.from_formula(formula, wages, groups="nr", **options)


def test_a_categorical_time_column_declares_its_periods(wages: pd.DataFrame) -> None:
    # 1988 is declared by the dtype and has no rows: its dummy is there all the same
    typed = wages.assign(year=pd.Categorical(wages["year"], categories=[*YEARS, 1988]))
    model = dplong.LongitudinalOLS.from_formula(
        FORMULA + " + TimeEffects", typed, groups="nr", time="year"
    )
    assert model.exog_names[1:9] == [f"C(year)[T.{y}]" for y in [*YEARS[1:], 1988]]


def test_a_text_time_column_is_ordered_by_its_declared_levels(wages: pd.DataFrame) -> None:
    """A time column of text whose periods ``levels=`` declares (read by ``TimeEffects``)
    orders each user's rows as the declaration lists them, as numbers would, not as text
    ('wave 10' before 'wave 2'), and the data holder hears nothing of text order."""
    shuffled = wages.sample(frac=1.0, random_state=0).reset_index(drop=True)
    waves = {year: f"wave {k}" for k, year in zip([9, 10, 2, 3, 4, 5, 6, 7], YEARS, strict=True)}
    text = shuffled.assign(year=shuffled["year"].map(waves))
    formula = FORMULA + " + TimeEffects"
    numbers = dplong.LongitudinalOLS.from_formula(
        formula, shuffled, groups="nr", time="year", levels={"year": YEARS}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", dplong.exceptions.DataHolderWarning)
        named = dplong.LongitudinalOLS.from_formula(
            formula, text, groups="nr", time="year", levels={"year": list(waves.values())}
        )
    np.testing.assert_array_equal(named._design.y, numbers._design.y)
    np.testing.assert_array_equal(named._design.X, numbers._design.X)


def test_a_numeric_time_keeps_its_order_whatever_the_declared_reference(
    wages: pd.DataFrame,
) -> None:
    """Declared levels of a numeric time only pick the factor's reference (the first): 1987
    declared first leaves each man's rows in year order, so AR(1) prewhitening, which reads
    that order, gives the chronological declaration's per-man coefficients."""
    options: dict[str, Any] = {
        "groups": "nr",
        "time": "year",
        "correlation": "ar1",
        "correlation_param": 0.5,
    }
    formula = "lwage ~ exper + I(year == 1987)"
    chronological = dplong.LongitudinalOLS.from_formula(
        formula, wages, levels={"year": YEARS}, **options
    )
    reference_first = dplong.LongitudinalOLS.from_formula(
        formula, wages, levels={"year": [1987, *YEARS[:-1]]}, **options
    )
    np.testing.assert_array_equal(
        reference_first._user_coefficients(), chronological._user_coefficients()
    )


def test_entity_effects_takes_no_other_estimator(wages: pd.DataFrame) -> None:
    model = dplong.LongitudinalOLS.from_formula(FORMULA, wages, groups="nr")
    with pytest.raises(ParameterError, match="EntityEffects asks for the within"):
        model.fit(epsilon=1.0, estimator="per-user")


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_panel_ols_reads_the_effects_terms(wages: pd.DataFrame) -> None:
    """linearmodels' spelling of a two-way fixed-effects fit works on dplong.PanelOLS:
    ``EntityEffects`` is what it fits and ``TimeEffects`` the dummies of the declared periods,
    the same model (and, at one seed, the same release) as ``C(year)`` written out."""
    spelled = dplong.PanelOLS.from_formula(
        "lwage ~ union + married + EntityEffects + TimeEffects",
        wages,
        groups="nr",
        time="year",
        levels={"year": YEARS},
    )
    written = dplong.PanelOLS.from_formula(
        "lwage ~ union + married + C(year)", wages, groups="nr", levels={"year": YEARS}
    )
    assert spelled.formula == written.formula == "lwage ~ union + married + C(year)"
    a, b = (m.fit(epsilon=64.0, random_state=0) for m in (spelled, written))
    pd.testing.assert_series_equal(a.params, b.params)
    assert np.isfinite(a.params).all()  # released: a comparison of two NaN series is no test


@pytest.mark.parametrize("model", [dplong.PooledOLS, dplong.RandomEffects, dplong.BetweenOLS])
def test_the_estimators_without_person_effects_refuse_entity_effects(
    wages: pd.DataFrame, model: type[dplong.PooledOLS]
) -> None:
    with pytest.raises(FormulaError, match=r"fit dplong\.PanelOLS"):
        model.from_formula("lwage ~ union + EntityEffects", wages, groups="nr")


def test_the_pooled_family_needs_the_time_column_of_time_effects(wages: pd.DataFrame) -> None:
    with pytest.raises(FormulaError, match="time= naming the time column"):
        dplong.RandomEffects.from_formula("lwage ~ union + TimeEffects", wages, groups="nr")
    model = dplong.RandomEffects.from_formula(
        "lwage ~ union + TimeEffects", wages, groups="nr", time="year", levels={"year": YEARS}
    )
    assert model.formula == "lwage ~ union + C(year)"


def test_between_ols_refuses_time_effects(wages: pd.DataFrame) -> None:
    """A person's means of the year dummies are the shares of their rows in each year (1 / 8
    each on the balanced wage panel): no time effects, and a singular X'X that withheld every
    coefficient, ``union`` and ``married`` too, at ε = 4 to 10⁶. Refused from the formula."""
    with pytest.raises(FormulaError, match="TimeEffects has no place in BetweenOLS"):
        dplong.BetweenOLS.from_formula(
            "lwage ~ union + TimeEffects",
            wages,
            groups="nr",
            time="year",
            levels={"year": YEARS},
        )


@pytest.mark.parametrize(
    "model", [dplong.PooledOLS, dplong.PanelOLS, dplong.RandomEffects, dplong.BetweenOLS]
)
def test_a_time_column_without_time_effects_is_refused(
    wages: pd.DataFrame, model: type[dplong.PooledOLS]
) -> None:
    """``time=`` is read only for ``TimeEffects``: given without it (a forgotten term, or a
    name meant for an estimator that orders rows) it was accepted and unused. Refused, naming
    the argument, before the rows are read; a Series is named by its type, not its values
    (which are private); ``dplong.plan`` refuses alike."""
    match = "is read only for TimeEffects" if model is not dplong.BetweenOLS else "has no use in"
    with pytest.raises(ParameterError, match=rf"time='year' {match}"):
        model.from_formula("lwage ~ union", wages, groups="nr", time="year")
    with pytest.raises(ParameterError, match=r"time=Series ") as raised:
        model.from_formula("lwage ~ union", wages, groups="nr", time=wages["year"])
    assert "1980" not in str(raised.value)
    with pytest.raises(ParameterError, match="time='year'"):
        dplong.plan("lwage ~ union", model=model, n=545, epsilon=1.0, time="year")
