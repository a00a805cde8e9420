"""The public-facts planner (:mod:`dplong.planning`): its decision is the fit's, its advice holds.

* the planner's refusal decision equals the model's own over a grid of (n, ε, model, d), the
  refusal's words included (one source of truth: the fit's own checks, run in planning mode);
* every budget refusal of the bad-input battery and of the shipped data names an ε at which
  the same fit is not refused (refitted there), and the ε named is the planner's;
* the predicted privacy-noise sd against the spread of fits with the data held fixed;
* ``dplong plan`` on the command line.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import re
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_bad_input import CLI_REFUSALS, REFUSALS, Probe, csv, run_cli  # noqa: F401 (fixture)
from test_cli import given

import dplong
import dplong.simulate
from dplong.cli import main
from dplong.exceptions import DplongError, DplongWarning
from dplong.models.mean import ColumnMean
from dplong.planning import is_budget_refusal
from dplong.planning.reference import MAX_REFERENCE_ROWS, MIN_RELEASED, REFERENCE_FITS
from dplong.privacy.budget import ReleasePlan
from dplong.privacy.tails import coarse_count

ADVICE = re.compile(r"raise epsilon to about ([0-9.e+-]+) \(dplong\.plan")

pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")


@cache
def panel(n: int) -> pd.DataFrame:
    """n users of 4 rows, three regressors that vary within users."""
    return dplong.simulate.linear_panel(n, 4, [1.0, 0.5, -0.3, 0.2], random_state=n)


#: (model name, formula, options of from_formula, options of fit): d from 1 to 4 columns, the
#: within estimator's 2p + p(p+1)/2 columns in p + 1 blocks, the location's two blocks (and
#: its precision-weight choice, itself made from public facts), curves, and the paper's
#: pipeline.
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("mean", "y ~ 1", {}, {}),
    ("ols", "y ~ x1", {}, {}),
    ("ols", "y ~ x1 + x2 + x3", {}, {}),
    ("ols", "y ~ x1 + x2", {}, {"estimator": "within"}),
    ("ols", "y ~ x1", {}, {"scale": 1.0}),
    ("ols", "y ~ x1", {}, {"variant": "theory", "scale": 1.0}),
    ("location", "y ~ 1", {}, {}),
    ("kernel", "y ~ time", {"domain": (0.0, 3.0), "bandwidth": 1.0, "grid": 4}, {}),
]


def _fitted(model: str, formula: str, n: int, model_options: dict[str, Any]) -> Any:
    spec = dplong.models.command_line.MODELS[model]
    return spec.build(formula, panel(n), groups="user", **model_options)


@pytest.mark.parametrize("n", [40, 300, 2000])
@pytest.mark.parametrize("epsilon", [0.3, 1.5, 6.0])
def test_the_plan_decides_as_the_fit(n: int, epsilon: float) -> None:
    """Refused by the fit on real rows ⇔ refused by the plan on stand-in rows, same words."""
    for model, formula, model_options, fit_options in CASES:
        fitted = _fitted(model, formula, n, model_options)
        try:
            fitted.fit(epsilon=epsilon, random_state=0, **fit_options)
            refusal = None
        except DplongError as err:
            assert is_budget_refusal(err), err  # the grid holds no bad argument
            refusal = str(err)
        plan = dplong.plan(
            formula, model=model, n=n, epsilon=epsilon, **model_options, **fit_options
        )
        case = (model, formula, fit_options, n, epsilon)
        assert plan.refused == (refusal is not None), case
        if refusal is not None:
            assert plan.refusal is not None
            # the fit adds the planner's remedy to the refusal the plan reports
            assert refusal.startswith(plan.refusal), case
            advised = ADVICE.search(refusal)
            assert advised is not None, refusal
            assert float(advised.group(1)) == plan.smallest_epsilon, case


def _advised(message: str) -> float:
    found = ADVICE.search(message)
    assert found is not None, message
    return float(found.group(1))


def test_the_battery_s_budget_refusals_refit_at_the_advised_epsilon(csv: Path) -> None:  # noqa: F811
    """Every refusal of the bad-input battery that names an ε: refitted there, not refused for
    its budget. Rows that refuse an argument name no ε (a larger one cannot cure them)."""
    advised = 0
    for row in REFUSALS:
        try:
            row.call(Probe())
        except DplongError as err:
            message, budget = str(err), is_budget_refusal(err)
        else:
            raise AssertionError(f"{row.name} was not refused")
        if not budget:
            assert ADVICE.search(message) is None, message
            continue
        epsilon = _advised(message)
        (options,) = row.call.__defaults__ or (None,)
        assert isinstance(options, dict), f"{row.name}: cannot refit a budget refusal"
        try:
            row.call(Probe(), {**options, "epsilon": epsilon})
        except DplongError as err:
            assert not is_budget_refusal(err), (row.name, epsilon, str(err))
        advised += 1
    for name, argv, _ in CLI_REFUSALS:
        code, _, err = run_cli(csv, argv)
        if ADVICE.search(err) is None:
            continue
        code, _, err = run_cli(csv, given(argv, "--epsilon", str(_advised(err))))
        assert code == 0, (name, err)
        advised += 1
    assert advised >= 3  # winsorized_mean's and the paper's tiny ε, the command line's


@cache
def dietox() -> pd.DataFrame:
    return dplong.datasets.load_dietox()


#: The shipped data's refusals at the budgets a newcomer tries: (label, fit at ε, plan).
SHIPPED = [
    (
        "dietox location",
        lambda e: dplong.RandomEffectsLocation.from_formula(
            "Weight ~ 1", dietox(), groups="Pig"
        ).fit(epsilon=e, random_state=0),
        {"formula": "Weight ~ 1", "model": "location", "n": 72},
        (1.0, 4.0),
    ),
    (
        "dietox user-level curve",
        lambda e: dplong.PriestleyChao.from_formula(
            "Weight ~ Time", dietox(), groups="Pig", domain=(1, 12), bandwidth=1
        ).fit(epsilon=e, random_state=0),
        {"formula": "Weight ~ Time", "model": "kernel", "n": 72, "domain": (1, 12), "bandwidth": 1},
        (4.0,),
    ),
    (
        "wage within",
        lambda e: dplong.LongitudinalOLS.from_formula(
            "lwage ~ exper + expersq", dplong.datasets.load_wage_panel(), groups="nr"
        ).fit(epsilon=e, estimator="within", random_state=0),
        {"formula": "lwage ~ exper + expersq", "model": "ols", "n": 545, "estimator": "within"},
        (0.5, 1.0),
    ),
]


@pytest.mark.parametrize(
    ("fit", "planned", "budgets"), [c[1:] for c in SHIPPED], ids=[c[0] for c in SHIPPED]
)
def test_shipped_refusals_advise_an_epsilon_that_works(
    fit: Any, planned: dict[str, Any], budgets: tuple[float, ...]
) -> None:
    """The advice does not move with the ε refused (it is the whole fit's smallest ε, not one
    block's), refitting there is released, and it is what ``dplong.plan`` says."""
    said = set()
    for epsilon in budgets:
        with pytest.raises(DplongError) as caught:
            fit(epsilon)
        said.add(_advised(str(caught.value)))
    (advised,) = said
    fit(advised)  # released: no refusal
    assert dplong.plan(epsilon=budgets[0], **planned).smallest_epsilon == advised


def test_no_epsilon_helps_is_said_instead_of_a_number() -> None:
    """Three users and 2,000 columns: no ε up to the search's 10⁴ locates them (each column's
    median needs ε n of tens): the refusal says so, with no number."""
    values = np.random.default_rng(0).normal(size=(3, 2000))
    with pytest.raises(DplongError, match="no epsilon up to 10000 is enough") as caught:
        dplong.winsorized_mean(values, epsilon=1.0)
    assert ADVICE.search(str(caught.value)) is None


def test_forecast_matches_the_spread_of_fits_with_the_data_held_fixed() -> None:
    """Predicted privacy-noise sd (× the statistic's own sd) against the sd of 60 releases of
    the same data.

    Tolerance: 60 releases give the sd within ±9 % (one standard error, 1/√(2·59)); the
    forecast takes the typical outcome of the earlier stages (scale found at σ, the tail stage
    finding no tail, the centre at its typical error), while over seeds those stages vary and
    widen the radius now and then — measured 10-30 % on normal data. So the ratio must lie in
    [0.75, 1.6]; a forecast off by a factor of two (e.g. a stage's budget counted twice) fails.
    The forecast also equals the release's own reported noise sd within 15 % (the same radius
    rules on the typical outcome).
    """
    x = np.random.default_rng(1).normal(3.0, 2.0, 2000)
    for epsilon in (0.5, 2.0):
        plan = dplong.plan("y ~ 1", model="mean", n=2000, epsilon=epsilon)
        predicted = float(plan.table["noise_sd"].iloc[0]) * x.std(ddof=1)
        fits = [dplong.winsorized_mean(x, epsilon=epsilon, random_state=s) for s in range(60)]
        measured = np.std([f.params.iloc[0] for f in fits], ddof=1)
        reported = np.median([f.noise_sd.iloc[0] for f in fits])
        assert 0.75 <= measured / predicted <= 1.6, (epsilon, measured, predicted)
        assert abs(reported / predicted - 1.0) <= 0.15, (epsilon, reported, predicted)
    # per-user OLS on 12 rows a user (coefficients close to normal): each coefficient in units
    # of the sd of the users' own coefficients
    data = dplong.simulate.linear_panel(3000, 12, [1.0, 0.5], random_state=3)
    model = dplong.LongitudinalOLS.from_formula("y ~ x1", data, groups="user")
    sigma = np.std(model._user_coefficients(), axis=0, ddof=1)
    plan = dplong.plan("y ~ x1", model="ols", n=3000, epsilon=1.0)
    predicted = plan.table["noise_sd"].to_numpy() * sigma
    fits = [model.fit(epsilon=1.0, random_state=s) for s in range(60)]
    ratio = np.std([f.params for f in fits], axis=0, ddof=1) / predicted
    reported = np.median([f.noise_sd for f in fits], axis=0) / predicted
    # the forecast never understates the noise, and it is the release's own figure; since the
    # tail stage's one count runs here (issue 29) the slope's measured spread is about 0.55 of
    # its reported (and forecast) noise sd: the report errs on the safe side
    assert np.all(ratio <= 1.6), ratio
    assert np.all(np.abs(reported - 1.0) <= 0.15), reported


def test_target_noise_sd_and_units() -> None:
    """A stated scale gives absolute units; the ε for a target reaches it and no less does."""
    plan = dplong.plan("y ~ x1", model="ols", n=5000, epsilon=1.0, scale=[4.0, 1.0], target_sd=0.01)
    table = plan.table
    assert table["unit"].tolist() == ["absolute", "absolute"]
    for (block, column), row in table.iterrows():
        needed = row["epsilon_for_target"]
        at = dplong.plan("y ~ x1", model="ols", n=5000, epsilon=needed, scale=[4.0, 1.0])
        assert at.table.loc[(block, column), "noise_sd"] <= 0.01
    # the intercept's stated sd is twice the slope's: its noise too, at every ε
    ratio = table["noise_sd"].iloc[0] / table["noise_sd"].iloc[1]
    assert ratio == pytest.approx(2.0, rel=1e-6)


def test_the_plan_reads_no_row_and_refuses_bad_arguments_as_the_fit() -> None:
    """Bad arguments are the fit's refusals; the plan takes no generator or accountant."""
    with pytest.raises(dplong.exceptions.ParameterError, match="estimator"):
        dplong.plan("y ~ x1", model="ols", n=500, epsilon=1.0, estimator="pooled")
    with pytest.raises(dplong.exceptions.ParameterError, match="random_state"):
        dplong.plan("y ~ x1", model="ols", n=500, epsilon=1.0, random_state=0)
    with pytest.raises(dplong.exceptions.ParameterError, match="n "):
        dplong.plan("y ~ x1", model="ols", n=1, epsilon=1.0)
    text = dplong.plan(
        "y ~ x1 + C(site)", model="ols", n=500, epsilon=2.0, levels={"site": ["a", "b", "c"]}
    ).summary()
    assert "C(site)[T.b]" in text and "C(site)[T.c]" in text


def test_the_smallest_epsilon_is_the_smallest_two_digit_value_that_passes() -> None:
    """The bisection's upper end lies a little above the threshold; rounded up it named 8.1
    where 8.0 passed (an audit): the value named is the smallest of two significant digits
    at or above the threshold, and it passes."""
    for threshold, named in ((7.97, 8.0), (8.0, 8.0), (8.03, 8.1), (3.14159, 3.2), (7e-5, 7e-5)):
        found = dplong.planning.smallest_epsilon(lambda e, t=threshold: e >= t, 1.0)
        assert found == pytest.approx(named, rel=1e-12), (threshold, found)


def test_a_plan_needs_the_time_column_where_the_fit_does() -> None:
    """The stand-in rows hold a time column only where the analyst names one, as the fit's
    data do: ``correlation="ar1"`` without ``time=`` is refused by the plan as by the fit
    (the stand-in's time had let the plan through), and the pooled family, which reads
    ``time=`` only for ``TimeEffects``, plans without one (the stand-in's was refused)."""
    with pytest.raises(dplong.exceptions.ParameterError, match="'ar1' needs time="):
        dplong.plan("lwage ~ exper", model="ols", n=545, epsilon=4.0, correlation="ar1")
    timed = dplong.plan(
        "lwage ~ exper", model="ols", n=545, epsilon=4.0, correlation="ar1", time="year"
    )
    assert not timed.refused
    assert not dplong.plan("lwage ~ exper", model="pooled", n=545, epsilon=4.0).refused


def test_a_plan_with_time_effects_names_the_time_column() -> None:
    """``TimeEffects`` reads the declared periods of the time column, so a plan takes its
    name (``time=``, a public fact; the stand-in rows hold it, as ``dplong plan --time``
    gives it): the plan's decision is the fit's on the wage panel, and the dummies are the
    declared years. A time given as values is refused: the plan reads no row."""
    formula = "lwage ~ union + married + EntityEffects + TimeEffects"  # identified within
    years = {"year": list(range(1980, 1988))}
    plan = dplong.plan(formula, model="ols", n=545, epsilon=20.0, time="year", levels=years)
    assert not plan.refused
    assert "Z'Z[C(year)[T.1987],C(year)[T.1987]]" in plan.table.index.get_level_values(1)
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula(
        formula, wages, groups="nr", time="year", levels=years
    )
    for epsilon, refused in ((20.0, False), (4.0, True)):
        assert (
            dplong.plan(
                formula, model="ols", n=545, epsilon=epsilon, time="year", levels=years
            ).refused
            is refused
        )
        if refused:
            with pytest.raises(dplong.exceptions.InsufficientUsersError):
                model.fit(epsilon=epsilon, random_state=0)
    with pytest.raises(dplong.exceptions.ParameterError, match="time as the name"):
        dplong.plan(formula, model="ols", n=545, epsilon=20.0, time=wages["year"], levels=years)
    with pytest.raises(dplong.exceptions.ParameterError, match="takes no time"):
        dplong.plan("lwage ~ 1", model="mean", n=545, epsilon=1.0, time="year")
    # without time=, the model's own refusal: the stand-in rows hold no time column
    with pytest.raises(dplong.exceptions.FormulaError, match="TimeEffects needs time="):
        dplong.plan(formula, model="ols", n=545, epsilon=20.0, levels=years)
    # the command line passes --time to the plan
    argv = ["plan", "--model", "ols", "--formula", formula, "--n", "545", "--epsilon", "20"]
    periods = "year=" + ",".join(map(str, years["year"]))
    code, out, err = _cli([*argv, "--time", "year", "--levels", periods])
    assert code == 0 and "Decision: released" in out, err


def test_a_plan_of_the_pooled_family_reads_time_effects() -> None:
    """``TimeEffects`` in a plan of ``PanelOLS`` (``time=`` names the column): the dummies of
    the declared years are forecast, measured on the reference panel as the fit would be."""
    years = {"year": list(range(1980, 1988))}
    plan = dplong.plan(
        "lwage ~ union + EntityEffects + TimeEffects",
        model="panel",
        n=545,
        epsilon=64.0,
        time="year",
        levels=years,
    )
    names = plan.table.index.get_level_values(1)
    assert not plan.refused and {"union", "C(year)[T.1987]"} <= set(names)
    assert np.isfinite(plan.table["noise_sd"].loc[:, "union"]).all()


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_the_searches_answers_are_exact_and_a_floor_is_no_threshold() -> None:
    """The smallest n is the smallest (the search stopped within 1 % of n and said its upper
    end: 7,168 where 7,118 ran, an audit): refused one user below, released there. A fit never
    refused (the local mean) says "any" ε, not the search's floor 0.0001 as if a threshold;
    the command line says the planner's caveats in its flags, as its refusals."""
    planned = dplong.plan("y ~ 1", model="mean", n=40, epsilon=1.0)
    smallest = planned.smallest_n()
    assert planned.refused and smallest is not None
    assert not dplong.plan("y ~ 1", model="mean", n=smallest, epsilon=1.0).refused
    assert dplong.plan("y ~ 1", model="mean", n=smallest - 1, epsilon=1.0).refused
    local = dplong.plan("y ~ 1", model="mean", n=300, epsilon=1.0, privacy="local", bound=10.0)
    assert local.smallest_epsilon == 1e-4
    assert "Smallest epsilon released: any (every ε down to 0.0001)" in local.summary()
    argv = ["plan", "--n", "545", "--model", "ols", "--formula", "y ~ x", "--epsilon", "1"]
    code, out, _ = _cli([*argv, "--estimator", "within"])
    assert code == 0 and "Caveat: --estimator within:" in out, out


def test_a_plan_pickles_with_its_search_for_the_smallest_n() -> None:
    """A plan is a value an analyst saves or sends to a worker: it pickles (its search for the
    smallest n held a closure), carries no stand-in rows, and answers the same after a round
    trip (each side's search builds its own models from the plan's public inputs)."""
    planned = dplong.plan(
        "y ~ x + C(site)", n=300, epsilon=0.5, levels={"site": ["a", "b"]}, rows=6
    )
    saved = pickle.dumps(planned)
    assert len(saved) < 20_000  # the inputs, not 1,800 stand-in rows
    back = pickle.loads(saved)
    assert back.summary() == planned.summary()
    assert back.smallest_n() == planned.smallest_n() is not None


def test_command_line_plan() -> None:
    code, out, _ = _cli(
        [
            "plan",
            "dataset:dietox",
            "--groups",
            "Pig",
            "--model",
            "location",
            "--formula",
            "Weight ~ 1",
            "--epsilon",
            "1",
        ]
    )
    assert code == 0
    assert "Users (n): 72" in out and "REFUSED" in out
    assert "Smallest epsilon released: 4.6" in out
    assert "Smallest number of users released at epsilon 1:" in out
    code, out, _ = _cli(
        [
            "plan",
            "--n",
            "545",
            "--model",
            "ols",
            "--formula",
            "lwage ~ exper + expersq",
            "--epsilon",
            "4",
            "--target-sd",
            "0.02",
        ]
    )
    assert code == 0 and "Decision: released" in out and "epsilon_for_target" in out
    code, _, err = _cli(["plan", "--model", "ols", "--formula", "y ~ x", "--epsilon", "1"])
    assert code == 2 and "--n" in err


def test_shipped_examples_table_is_the_planner_s() -> None:
    """The smallest ε of every shipped example, shown in ``dplong fit --help`` and the docs,
    is what the planner finds (n counted from the shipped data: public), and the fit there is
    released on the real data."""
    from dplong.cli import SHIPPED_EXAMPLES, _example_flags, build_parser, shown_epsilon

    pages = [
        (Path(__file__).parents[1] / "docs" / page).read_text(encoding="utf-8")
        for page in ("getting_started.md", "cli.md")
    ]
    epilog = next(
        action.choices["fit"].format_help()
        for action in build_parser()._actions
        if getattr(action, "choices", None) and "fit" in action.choices
    )
    for name, groups, model, formula, options, least, quiet in SHIPPED_EXAMPLES:
        data = getattr(dplong.datasets, f"load_{name}")()
        n = int(data[groups].nunique())
        plan = dplong.plan(formula, model=model, n=n, epsilon=1.0, **options)
        assert (plan.smallest_epsilon, plan.quiet_epsilon) == (least, quiet), name
        flags = f" `{_example_flags(options)}`" if options else ""
        row = f"| `{name}` | {model} | `{formula}`{flags} | {least:g} | {shown_epsilon(quiet)} |"
        assert all(row in page for page in pages), row
        assert f'{name} {model} "{formula}"' in epilog
        spec = dplong.models.command_line.MODELS[model]
        model_options = {
            k: v for k, v in options.items() if spec.option(k) and spec.option(k).stage == "model"
        }
        fit_options = {k: v for k, v in options.items() if k not in model_options}
        built = spec.build(formula, data, groups=groups, **model_options)
        built.fit(epsilon=least, random_state=0, **fit_options)  # released: no refusal


NOTE = re.compile(r"Raise epsilon to about ([0-9.e+-]+) \(dplong\.plan: the smallest without")


@pytest.mark.parametrize(
    ("fit", "epsilon"),
    [
        (SHIPPED[0][1], 8.0),  # dietox location: its components' scale may miss
        (
            lambda e: dplong.LongitudinalOLS.from_formula(
                "lwage ~ exper + expersq + union + married",
                dplong.datasets.load_wage_panel(),
                groups="nr",
            ).fit(epsilon=e, estimator="within", random_state=0),
            4.0,
        ),
    ],
    ids=["dietox location", "wage within union married"],
)
def test_a_reliability_note_names_the_epsilon_without_it(fit: Any, epsilon: float) -> None:
    """A plan's note (a median may miss) names the smallest ε at which the whole fit plans
    without one; refitted there, no such note. (Which columns the data then leave withheld —
    rarely changing regressors — is another matter, decided from released numbers.)"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(epsilon)
    named = {float(m.group(1)) for w in caught if (m := NOTE.search(str(w.message)))}
    (quiet,) = named
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(quiet)
    assert not any("may miss the bulk" in str(w.message) for w in caught)


def test_eptr_releases_are_planned_with_the_noise_they_draw() -> None:
    """Pooled OLS by ePTR and item-level Nadaraya–Watson stop at a checkpoint: the planner
    decides them without a row (refused by the budget only below the ε their Gaussian release
    is certified at, under the search's 1e-4 here; the ePTR note where the test cannot pass
    reliably) and predicts the sd of the noise the fit draws when its test passes.
    The prediction leaves out the lattice's rounding step and the float error, which add to
    the sensitivity: 1e-3 relative covers them (measured: 2e-4)."""
    wages = dplong.datasets.load_wage_panel()
    bounds = {"lwage": (-4.0, 5.0), "exper": (0.0, 20.0), "black": (0.0, 1.0)}
    options = {"max_rows": 8, "method": "ptr", "ptr_floor": 0.1}
    planned = dplong.plan(
        "lwage ~ exper + black", model="pooled", n=545, epsilon=4.0, bounds=bounds, **options
    )
    assert planned.registered and not planned.refused and planned.smallest_epsilon == 1e-4
    fit = dplong.PooledOLS.from_formula(
        "lwage ~ exper + black", wages, groups="nr", bounds=bounds
    ).fit(epsilon=4.0, random_state=1, **options)
    assert not fit.params.isna().any()
    np.testing.assert_allclose(
        planned.table["noise_sd"].to_numpy(), fit.noise_sd.to_numpy(), rtol=1e-3
    )
    assert (planned.table["share"] == 0.75).all() and (planned.table["unit"] == "absolute").all()
    small = dplong.plan(
        "y ~ x",
        model="pooled",
        n=40,
        epsilon=1.0,
        rows=4,
        bounds={"y": (0, 1), "x": (0, 1)},
        **options,
    )
    assert any("ePTR test cannot pass reliably" in w for w in small.warnings)

    pigs = dplong.datasets.load_dietox()
    model = {"domain": (1, 12), "bounds": (0, 150), "bandwidth": 2.0, "grid": 6}
    planned = dplong.plan("Weight ~ Time", model="nw", n=len(pigs), epsilon=4.0, **model)
    # the one warning no ε removes, as the fit gives it (no error_sd): none up to 1e4
    assert planned.registered and not planned.refused and planned.quiet_epsilon is None
    assert [w[:12] for w in planned.warnings] == ["No error_sd:"]
    stated = dplong.plan(
        "Weight ~ Time", model="nw", n=len(pigs), epsilon=4.0, error_sd=5.0, **model
    )
    assert not stated.warnings
    fit = dplong.NadarayaWatson.from_formula("Weight ~ Time", pigs, **model).fit(
        epsilon=4.0, random_state=1
    )
    assert not fit.params.isna().any()
    np.testing.assert_allclose(
        planned.table["noise_sd"].to_numpy(), fit.noise_sd.to_numpy(), rtol=1e-3
    )
    few = dplong.plan("Weight ~ Time", model="nw", n=30, epsilon=0.5, **model)
    assert any("ePTR test cannot pass reliably" in w for w in few.warnings)


def test_advised_fits_run_once_up_to_their_plan_and_remember_remedies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An advised fit runs once; only where its first checkpoint (before any noise) finds a
    note a larger ε removes does it stop, find that ε and run again. The remedy of a fit that
    is not a model's is kept by its plan (public facts): a second call, on other values with
    the same n and options, finds the ε without searching, and names the same one."""
    from dplong.models import mean as mean_module

    runs = {"blocks": 0}
    real = mean_module.run_blocks

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs["blocks"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(mean_module, "run_blocks", counted)
    monkeypatch.setattr(dplong.planning.advice, "_PLANNED_REMEDIES", {})
    gen = np.random.default_rng(4)
    quiet = gen.normal(size=(3000, 1))  # n ε = 3,000: no note
    dplong.winsorized_mean(quiet, epsilon=1.0, random_state=0)
    assert runs["blocks"] == 1
    noted = [gen.normal(size=(400, 3)), gen.normal(5.0, 2.0, size=(400, 3))]
    first = dplong.winsorized_mean(noted[0], epsilon=1.0, random_state=0)
    searched = runs["blocks"]
    assert searched > 3  # stopped at the checkpoint, the search's passes, the release
    second = dplong.winsorized_mean(noted[1], epsilon=1.0, random_state=1)
    assert runs["blocks"] == searched + 2  # stopped at the checkpoint, then the release
    dplong.planning.advice._PLANNED_REMEDIES.clear()  # searched afresh: the same ε
    third = dplong.winsorized_mean(noted[1], epsilon=1.0, random_state=1)
    said = [NOTE.search(w) for res in (first, second, third) for w in res.warnings]
    assert len({float(m.group(1)) for m in said if m is not None}) == 1
    assert sum(m is not None for m in said) == 3


def test_an_advised_restart_leaves_the_generator_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """An advised fit that stops at its first checkpoint to find its note's remedy has drawn
    nothing from the analyst's generator: the release and the generator's state afterwards are
    those of one run made with the remedy known from the start."""
    from dplong.privacy.budget import QUIET_REMEDY

    monkeypatch.setattr(dplong.planning.advice, "_PLANNED_REMEDIES", {})
    values = np.random.default_rng(4).normal(size=(400, 3))  # n ε = 400: a noted plan
    restarted_rng = np.random.default_rng(7)
    restarted = dplong.winsorized_mean(values, epsilon=1.0, random_state=restarted_rng)
    (remedy,) = dplong.planning.advice._PLANNED_REMEDIES.values()  # the restart happened, once
    assert remedy
    direct_rng = np.random.default_rng(7)
    token = QUIET_REMEDY.set(remedy)
    try:
        direct = dplong.winsorized_mean.__wrapped__(values, epsilon=1.0, random_state=direct_rng)
    finally:
        QUIET_REMEDY.reset(token)
    np.testing.assert_array_equal(np.asarray(restarted.params), np.asarray(direct.params))
    assert restarted_rng.bit_generator.state == direct_rng.bit_generator.state
    assert restarted.warnings == direct.warnings


def test_a_fit_that_would_withhold_everything_is_refused_before_any_noise() -> None:
    """dietox's 72 pigs, the user-level curve on the default 12-point grid at ε = 16 with its
    scale estimated: every column's medians miss with probability 0.68 at n, and the stages are
    at their caps, so every point would be withheld whatever the data (the plausibility rule).
    The fit is refused before any noise, naming the ε from which it is not; there the plan is
    not doomed. A fit with one release that can succeed is not refused (a doomed plan beside
    one that is not goes on)."""
    from untouchable import Untouchable

    from dplong.privacy.budget import refuse_doomed

    pigs = dplong.datasets.load_dietox()
    model = dplong.PriestleyChao.from_formula(
        "Weight ~ Time", pigs, groups="Pig", domain=(1.0, 12.0), bandwidth=1.0
    )
    with pytest.raises(dplong.exceptions.InsufficientUsersError, match="withheld") as refused:
        model.fit(epsilon=16.0, random_state=Untouchable())
    advised = float(re.search(r"raise epsilon to about ([0-9.]+)", str(refused.value)).group(1))
    assert advised > 16.0
    plan = dplong.plan(
        "Weight ~ Time", model="kernel", n=72, epsilon=advised, domain=(1, 12), bandwidth=1
    )
    assert not plan.refused
    doomed = ReleasePlan.make(n=72, d=12, epsilon=16.0, delta=1e-4, stated_scale=False)
    fine = ReleasePlan.make(n=72, d=1, epsilon=16.0, delta=1e-4, stated_scale=False)
    assert doomed.doomed() and not fine.doomed()
    refuse_doomed([fine, doomed], 72, 13, 16.0)  # one release can succeed: goes on
    with pytest.raises(dplong.exceptions.InsufficientUsersError):
        refuse_doomed([doomed, doomed], 72, 24, 16.0)


def test_a_plan_without_a_noise_forecast_says_what_released_means() -> None:
    """The pooled family's noise is measured on a reference panel, and where fewer than
    ``MIN_RELEASED`` of its fits release a coefficient (the wage panel's five regressors at
    ε = 2 from histograms' ranges: 2 of 20; 20 of 20 withheld on the real panel) none is
    forecast, and its decision says the fit is not refused but withheld in those fits, not
    "released" (an audit read "released" where every fit withheld every coefficient). A panel
    beyond the reference's size has no forecast either: its "released" says only that nothing
    refuses the fit before its first draw. A plan with the engine's forecast keeps its own
    note."""
    pooled = dplong.plan(
        "lwage ~ exper + educ + black + union + married", model="pooled", n=545, epsilon=2.0
    )
    assert pooled.table["noise_sd"].isna().all()
    assert (pooled.table["released_share"] < MIN_RELEASED / REFERENCE_FITS).all()
    text = pooled.summary()
    assert "Decision: not refused, but withheld in the reference fits" in text
    assert "Decision: released" not in text and "expect them withheld" in text
    # nor its smallest epsilon "released": the smallest not refused (an audit)
    assert "Smallest epsilon not refused: " in text and "epsilon released" not in text
    large = dplong.plan("y ~ x", model="pooled", n=MAX_REFERENCE_ROWS // 4 + 1, epsilon=1.0)
    assert large.table["noise_sd"].isna().all() and "released_share" not in large.table
    assert "withheld at the fit" in large.summary()
    per_user = dplong.plan("lwage ~ exper", n=545, epsilon=2.0)
    assert per_user.table["noise_sd"].notna().all()
    assert "no noise forecast" not in per_user.summary()
    assert "Smallest epsilon released: " in per_user.summary()


def _light_panel(n: int, seed: int) -> tuple[pd.DataFrame, dict[str, float]]:
    """n users of 4 rows unlike the reference panel but for its light tails: normal columns
    of sds 3 and 0.5 far from 0 (means 10 and -20), half their variance between persons, and
    an outcome that depends on x (R² about 0.3); with each slope's unit sd(y) / sd(x)."""
    rng = np.random.default_rng(seed)
    user = np.repeat(np.arange(n), 4)

    def column(sd: float) -> np.ndarray:
        return sd * np.sqrt(0.5) * (rng.normal(size=n)[user] + rng.normal(size=user.size))

    x, z = 10.0 + column(3.0), -20.0 + column(0.5)
    y = 1.0 + 0.5 * x + column(2.0)
    frame = pd.DataFrame({"id": user, "x": x, "z": z, "y": y})
    return frame, {"x": y.std() / x.std(), "z": y.std() / z.std()}


@pytest.mark.parametrize(
    "model", [dplong.PooledOLS, dplong.PanelOLS, dplong.RandomEffects, dplong.BetweenOLS]
)
def test_the_pooled_familys_noise_is_forecast_on_a_reference_panel(model: type) -> None:
    """Each slope's forecast noise sd (the median of 20 reference fits' own, in sd(y)/sd(x))
    against the median of 20 fits' own on a panel of another light-tailed design (normal
    columns of other sds and means, an outcome that depends on x), in its units: measured
    0.96-1.17 of it for the four models at n = 5,000, ε = 1 (a fit's noise follows the
    ranges it finds, and those follow the columns' sds for light tails, not their shape or
    mean; the median of 20 fits' noise sds varies by a few percent). Allowed: 0.7-1.4. The
    intercept is not forecast (its noise depends on where the columns lie), and every fit
    released every slope."""
    planned = dplong.plan("y ~ x + z", model=model, n=5000, epsilon=1.0)
    table = planned.table.droplevel("block")
    assert np.isnan(table["noise_sd"].get("Intercept", np.nan))
    assert table.loc["x", "unit"] == "sd(y)/sd(x)"
    assert (table.loc[["x", "z"], "released_share"] == 1.0).all()
    frame, units = _light_panel(5000, seed=5)
    fitted = model.from_formula("y ~ x + z", frame, groups="id")
    noise = pd.concat(
        [fitted.fit(epsilon=1.0, random_state=100 + s).noise_sd for s in range(20)], axis=1
    ).median(axis=1)
    for column in ("x", "z"):
        ratio = noise[column] / units[column] / table.loc[column, "noise_sd"]
        assert 0.7 < ratio < 1.4, (column, ratio)
    again = dplong.plan("y ~ x + z", model=model, n=5000, epsilon=1.0)
    pd.testing.assert_frame_equal(again.table, planned.table)  # seeded: a public fact


def test_the_epsilon_for_a_target_noise_is_searched_on_the_reference_panel() -> None:
    """``target_sd`` on a pooled plan: the ε it names forecasts at most the target (the
    search's own check), and a tenth below it more: the forecast falls as ε grows."""
    planned = dplong.plan("y ~ x", model="pooled", n=2000, epsilon=1.0, target_sd=0.05)
    needed = planned.table.loc[("0", "x"), "epsilon_for_target"]
    assert np.isfinite(needed)
    at = dplong.plan("y ~ x", model="pooled", n=2000, epsilon=float(needed))
    below = dplong.plan("y ~ x", model="pooled", n=2000, epsilon=0.9 * float(needed))
    assert at.table.loc[("0", "x"), "noise_sd"] <= 0.05 < below.table.loc[("0", "x"), "noise_sd"]


#: ``dplong plan --model nw --n 3000 --epsilon 4 --domain 0,1 --bounds=-2,2 --bandwidth 0.2``
#: and its neighbours (the audit's): bandwidth, ε and n one at a time, and a large δ.
NW_PLAN = {
    "n": 3000,
    "epsilon": 4.0,
    "domain": (0, 1),
    "bounds": (-2, 2),
    "bandwidth": 0.2,
    "error_sd": 0.5,  # without it a warning no ε removes: no quiet ε
}


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"bandwidth": 0.05},
        {"bandwidth": 0.5},
        {"epsilon": 0.5},
        {"epsilon": 16.0},
        {"n": 300},
        {"n": 100_000},
        {"delta": 0.5},
    ],
    ids=lambda change: ",".join(f"{k}={v}" for k, v in change.items()) or "audit",
)
def test_nadaraya_watson_plans_down_to_the_smallest_epsilon(change: dict[str, Any]) -> None:
    """The search for the smallest ε halves ε down to 1e-4, where the ePTR's Gaussian release
    has less ε than its zCDP conversion certifies at δ = 1/n² (the finite grid of Rényi
    orders: 3.5e-5 at n = 3000): a budget refusal there, not scipy's bracket error. The ε
    named is one at which the fit is not refused, and below it (when above the bottom of the
    search) the fit is refused for its budget, naming epsilon."""
    options = NW_PLAN | change
    plan = dplong.plan("y ~ x", model="nw", **options)
    assert not plan.refused and plan.smallest_epsilon is not None
    assert plan.quiet_epsilon is not None and plan.quiet_epsilon >= plan.smallest_epsilon
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, min(options["n"], 3000))
    frame = pd.DataFrame({"x": x, "y": np.sin(3 * x)})
    model_options = {k: options[k] for k in ("domain", "bounds", "bandwidth")}
    extra = {"delta": options["delta"]} if "delta" in options else {}
    extra["error_sd"] = options["error_sd"]
    if options["n"] == len(x):  # the planned n: the fit on real rows decides as the plan
        model = dplong.NadarayaWatson.from_formula("y ~ x", frame, **model_options)
        model.fit(epsilon=plan.smallest_epsilon, random_state=0, **extra)  # not refused
        if plan.smallest_epsilon > dplong.planning.EPSILON_RANGE[0]:
            with pytest.raises(dplong.exceptions.PrivacyParameterError, match="epsilon") as err:
                model.fit(epsilon=plan.smallest_epsilon * 0.9, random_state=0, **extra)
            assert is_budget_refusal(err.value) and "raise epsilon" in str(err.value)


def test_gaussian_shares_brackets_its_root_at_every_delta() -> None:
    """The zCDP conversion on the finite grid of Rényi orders neither falls to 0 with ρ (a
    floor: no ρ certifies an ε below it, a budget refusal) nor stays above ρ (at a large δ the
    largest ρ within ε exceeds ε): both ends of the search are checked, not assumed."""
    from dplong.privacy.accounting import zcdp_epsilon
    from dplong.privacy.budget import gaussian_shares
    from dplong.privacy.budget.gaussian import smallest_gaussian_epsilon

    for epsilon, delta in [(1.0, 0.5), (0.01, 0.995), (1.0, 0.999), (1.0, 1e-6), (1e-3, 1e-7)]:
        (rho,) = gaussian_shares(epsilon, delta, [1.0])
        assert zcdp_epsilon(rho, delta) <= epsilon < zcdp_epsilon(rho * 1.001, delta)
    (rho,) = gaussian_shares(1.0, 0.5, [1.0])
    assert rho > 1.0  # the old bracket [0, ε] did not hold the root
    floor = smallest_gaussian_epsilon(1.0 / 3000**2)
    assert 3e-5 < floor < 4e-5
    with pytest.raises(dplong.exceptions.PrivacyParameterError) as err:
        gaussian_shares(floor, 1.0 / 3000**2, [1.0])
    assert is_budget_refusal(err.value)
    assert "epsilon=3.5e-05 is too small" in str(err.value) and "must be above" in str(err.value)


def test_a_mean_plans_with_its_fit_options_and_grouping() -> None:
    """The mean's ``fit(**options)`` checks its own keywords: the plan passes them on (scale,
    delta, by_constant were refused as 'not an option'), and the ``by=`` column is in the
    stand-in rows with its declared levels (it was not, so a plan with ``by`` was refused
    whatever its levels, naming the stand-in columns)."""
    plan = dplong.plan("lwage ~ 1", model="mean", n=545, epsilon=1.0, scale=0.25, delta=1e-6)
    assert not plan.refused and plan.delta == 1e-6 and plan.table["unit"].tolist() == ["absolute"]
    years = list(range(1980, 1988))
    grouped = dplong.plan(
        "lwage ~ 1", model="mean", n=545, epsilon=8.0, by="year", levels={"year": years}
    )
    assert [column for _, column in grouped.table.index] == [f"lwage[year={y}]" for y in years]
    keyed = dplong.plan(
        "lwage ~ 1",
        model="mean",
        n=545,
        epsilon=4.0,
        by="year",
        levels={"year": years},
        by_constant=True,
    )
    assert not keyed.refused
    # a key declared constant within users: each level released on its own, in parallel, by
    # the same plan (public facts: n, its columns, its budget), every level in the table
    table = keyed.table
    assert [column for _, column in table.index] == [f"lwage[year={y}]" for y in years]
    assert (table.nunique() == 1).all()
    # the plan's δ is the whole fit's, as its parallel ledger totals it (it showed a level's
    # half); and it says its levels' users are an assumption
    wages = dplong.datasets.load_wage_panel()
    race = {"by": "black", "levels": {"black": [0, 1]}, "by_constant": True}
    planned = dplong.plan("lwage ~ 1", model="mean", n=545, epsilon=4.0, **race)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)
        fit = ColumnMean.from_formula(
            "lwage ~ 1", wages, groups="nr", by="black", levels={"black": [0, 1]}
        ).fit(epsilon=4.0, by_constant=True, random_state=0)
    assert planned.delta == pytest.approx(fit.privacy.delta) == pytest.approx(1 / 545**2)
    for plan_by in (grouped, keyed):
        (caveat,) = plan_by.caveats
        assert caveat.startswith("by=: each level is forecast as if all n users")
        assert "Caveat: by=" in plan_by.summary()
    assert plan.caveats == ()
    within = dplong.plan("y ~ x", model="ols", n=2000, epsilon=2.0, estimator="within")
    (caveat,) = within.caveats
    assert caveat.startswith('estimator="within": the stand-in regressors change') and (
        "dplong.PanelOLS" in caveat
    )
    assert dplong.plan("y ~ x", model="ols", n=2000, epsilon=2.0).caveats == ()
    (caveat,) = dplong.plan("y ~ x", model="re", n=2000, epsilon=2.0, max_rows=4).caveats
    assert caveat.startswith("RandomEffects: the stand-in rows have half their variance")
    # two regressors or more of a reference panel's forecast: their correlation is a caveat
    # (an audit's wage panel exper + expersq, planned released, was withheld in 9 of 10 fits)
    options = {"model": "panel", "n": 545, "epsilon": 4.0, "max_rows": 8}
    (caveat,) = dplong.plan("lwage ~ exper + expersq", **options).caveats
    assert caveat.startswith("the reference panel's regressors are uncorrelated")
    assert dplong.plan("lwage ~ exper", **options).caveats == ()
    assert dplong.plan("y ~ x + z", model="ols", n=2000, epsilon=2.0).caveats == ()
    with pytest.raises(dplong.exceptions.ParameterError, match="by='year' needs its declared"):
        dplong.plan("lwage ~ 1", model="mean", n=545, epsilon=1.0, by="year")
    with pytest.raises(
        dplong.exceptions.ArgumentError,
        match=r"option of neither ColumnMean.from_formula nor .fit: 'scal' \(did you mean 'scale'",
    ):
        dplong.plan("lwage ~ 1", model="mean", n=545, epsilon=1.0, scal=1.0)


def test_refusals_never_name_the_stand_in_columns() -> None:
    """A refusal met on the stand-in rows offers the analyst's columns only, keeps its class
    and whether a larger ε cures it; one that names none is the same error."""
    from dplong.planning.planner import _without_stand_ins

    err = dplong.exceptions.InsufficientUsersError(
        "by='arm' is not a column of data (did you mean '__user__', 'arms'?)"
    )
    err.budget_refusal = True
    said = _without_stand_ins(err)
    assert str(said) == "by='arm' is not a column of data (did you mean 'arms'?)"
    assert type(said) is type(err) and is_budget_refusal(said)
    plain = dplong.exceptions.ParameterError("levels must be a list")
    assert _without_stand_ins(plain) is plain


def test_a_factor_declared_in_the_formula_is_planned_with_its_levels() -> None:
    """``C(arm, levels=[...])`` in the formula declares the factor as ``levels=`` does: the
    stand-in rows and the reference panel hold its levels (they held numbers, every row
    outside the levels: a plan without rows, with the data holder's warnings about made-up
    rows on the analyst's screen), and its indicators' noise is forecast in sd(outcome)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", dplong.exceptions.DataHolderWarning)
        planned = dplong.plan(
            "y ~ x + C(arm, levels=['a', 'b', 'c'])", model="pooled", n=2000, epsilon=2.0
        )
    table = planned.table.droplevel("block")
    arm = "C(arm, levels=['a', 'b', 'c'])[T.b]"
    assert np.isfinite(table.loc[arm, "noise_sd"]) and table.loc[arm, "unit"] == "sd(y)"
    assert table.loc[arm, "released_share"] == 1.0


def test_the_reference_panel_reads_bounds_as_the_fit_does() -> None:
    """Bounds in the command line's text (``"x=0,100"``) fill the reference panel's column as
    a mapping does (the panel had left them out while its fits clipped to them, and every fit
    withheld x); an intercept alone is released, not "expect them withheld" (its noise is
    never forecast there, a review found the summary saying so)."""
    text = dplong.plan("y ~ x", model="pooled", n=2000, epsilon=1.0, bounds="x=0,100")
    mapping = dplong.plan("y ~ x", model="pooled", n=2000, epsilon=1.0, bounds={"x": (0, 100)})
    pd.testing.assert_frame_equal(text.table, mapping.table)
    assert text.table.loc[("0", "x"), "released_share"] == 1.0
    alone = dplong.plan("y ~ 1", model="pooled", n=1000, epsilon=1.0)
    assert "expect them withheld" not in alone.summary()
    assert "no noise forecast" not in alone.summary()


def test_a_declared_support_plans_its_tail_count() -> None:
    """``lower=0`` lets the count run from n ε of 500 (``SUPPORTED_FLOOR``); the plan follows
    the fit. One column at 1,000 users, ε = 0.5 and 0.7: a count runs only for the support
    (``coarse_count``), and near its floor it marks the heaviest tails alone, so the plan
    forecasts what the fits say of a column it leaves unmarked: that the count could not
    check it (user means of Pareto (2.5) rows at 500 users and ε = 1 missed with no warning
    in 11 of 100 releases when such a count went for a check). Without the support both plans
    forecast that no count is affordable. The count's share of the mean's budget shows in the
    forecast noise; at 5,000 users a count runs without the support, and nothing is forecast."""
    for epsilon in (0.5, 0.7):
        declared = dplong.plan("y ~ 1", model="mean", n=1000, epsilon=epsilon, lower=0.0)
        plain = dplong.plan("y ~ 1", model="mean", n=1000, epsilon=epsilon)
        assert "afford no tail count" in plain.warnings[0]
        assert "marks the heaviest tails alone" in declared.warnings[0]
        assert declared.table["noise_sd"].iloc[0] > plain.table["noise_sd"].iloc[0]
    assert dplong.plan("y ~ 1", model="mean", n=5000, epsilon=0.7, lower=0.0).warnings == ()
    three = {"n": 1000, "d": 3, "delta": 1e-6, "stated_scale": False, "supported": True}
    assert coarse_count(ReleasePlan.make(epsilon=0.5, **three))
    assert not coarse_count(ReleasePlan.make(epsilon=0.5, **{**three, "supported": False}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        for seed in range(5):
            x = np.random.default_rng([55, seed]).normal(10.0, 2.0, 1000)
            res = dplong.winsorized_mean(x, epsilon=0.7, lower=0.0, random_state=seed)
            assert "tail" in res.privacy.to_frame()["stage"].tolist()
            # a column the released offset names skewed has that warning in its place
            said = ("marks the heaviest tails alone", "skewed (its mean")
            assert any(part in w for w in res.warnings for part in said)


def test_a_plan_forecasts_an_assumed_tail_a_support_count_leaves_unchecked() -> None:
    """``PoissonMean`` assumes exponential rates and declares their support: at 545 users and
    ε = 1 only that support buys its tail count, which marks the heaviest tails alone, so the
    fit warns that the count left the exponential model unchecked (Pareto (2) rates at 500
    users missed with no warning in 18 of 100 releases when it did not). The plan says so,
    with the model's own kind, and the wage panel's fit of ``hours`` does; at 300 users no
    count runs and the model's own note is the forecast; at 2,000 a full count runs, and
    nothing is forecast."""
    said = "a heavier tail than the clip's exponential model"
    plan = dplong.plan("hours ~ 1", model="poisson", n=545, epsilon=1.0)
    assert len(plan.warnings) == 1 and said in plan.warnings[0]
    assert "marks the heaviest tails alone" in plan.warnings[0]
    wages = dplong.datasets.load_wage_panel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        fit = dplong.PoissonMean.from_formula("hours ~ 1", wages, groups="nr").fit(
            epsilon=1.0, random_state=0
        )
    assert fit.warnings == plan.warnings
    (small,) = dplong.plan("hours ~ 1", model="poisson", n=300, epsilon=1.0).warnings
    assert "no count checked its exponential tail (this n and epsilon afford no" in small
    assert dplong.plan("hours ~ 1", model="poisson", n=2000, epsilon=1.0).warnings == ()


@pytest.mark.parametrize(
    "pipeline", [{"privacy": "local", "bound": 5.0}, {"variant": "theory"}], ids=["local", "paper"]
)
def test_a_plan_forecasts_the_warning_of_a_pipeline_without_a_tail_count(
    pipeline: dict[str, object],
) -> None:
    """The paper's pipeline runs no tail count at any ε: with the scale estimated it warns
    that none checked the tail (an audit found its skewed releases missing, unwarned), and the
    plan says so before any noise, as the fit does; a stated scale is the analyst's
    assumption, and it does not warn (a reviewer found the plan silent). The local model's
    release counts its tail where it clips about a located centre, and what it then says
    depends on the count: its plan forecasts no tail warning, and 545 men, too few to locate
    a centre, get the one-round estimator, which clips nothing within the bound, and none."""
    wages = dplong.datasets.load_wage_panel()
    options = {"epsilon": 2.0, **pipeline}
    plan = dplong.plan("lwage ~ 1", model="mean", n=545, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DplongWarning)
        res = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], random_state=0, **options)
        stated = dplong.winsorized_mean(
            wages["lwage"], groups=wages["nr"], scale=0.2, random_state=0, **options
        )
    told = [w for w in res.warnings if "no count checked" in w]
    assert [w for w in plan.warnings if "no count checked" in w] == told
    assert bool(told) == ("variant" in pipeline)
    if "privacy" in pipeline:
        assert "Privacy: local, epsilon 2" in str(plan.summary())  # it said central
        assert not any("beyond the clip" in w for w in res.warnings)
    scaled = dplong.plan("lwage ~ 1", model="mean", n=545, scale=0.2, **options)
    assert not any("no count checked" in w for w in (*scaled.warnings, *stated.warnings))


def test_the_plan_tells_no_data_holder_of_its_stand_in_rows() -> None:
    """The planner builds the model on stand-in rows; ``PoissonMean`` told the data holder that
    1,600 of them held counts that are not whole numbers, as if of the analyst's data (it reads
    none). Nothing is said of the stand-in rows now."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", dplong.exceptions.DataHolderWarning)
        planned = dplong.plan("cnt ~ 1", model="poisson", n=400, epsilon=1.0)
    assert not planned.refused
