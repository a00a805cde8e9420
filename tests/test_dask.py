"""Dask data frames (issue 12): the same fits as in memory, reduced partition by partition.

Every model and :func:`dplong.winsorized_mean` are fitted twice on the same rows — a pandas
frame, and a Dask frame of those rows shuffled over 9 partitions so that most users span
several — and must agree: the per-user statistics to round-off (exactly where the per-user sums
are exact: the values are small dyadic numbers, so every sum of products is exact and only the
order of summation differs), and the released numbers bit for bit when the statistics are.
Also: missing values (NaN, ``pd.NA``, missing user ids, users without any complete row),
declared levels (a Categorical dtype, ``levels=``, categories Dask does not know), the same
refusals as in memory decided before any row is read, a ``distributed`` cluster, the error
without dask, and the command line on a glob of Parquet files.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_cli import given, run  # main() in-process: exit code, stdout, stderr

import dplong
from dplong.dask_frames import ReducedPanel
from dplong.exceptions import (
    DataError,
    DataHolderWarning,
    FormulaError,
    InsufficientUsersError,
    MissingDependencyError,
    ParameterError,
)
from dplong.models.curves import user_curves
from dplong.models.location import _UserMoments
from dplong.models.mean import ColumnMean
from dplong.privacy import ranges

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")
# the fits compare two paths on small panels: their reliability notes are beside the point
pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")

PARTITIONS = 9
LEVELS = {"kind": ["p", "q"]}  # "kind" is text: its levels must be declared
#: Round-off of sums of inexact terms added in another order: each per-user sum has at most 8
#: terms of size at most 2**8, so its error is below 8 * 2**8 * 2**-52 ≈ 5e-13 in absolute terms.
ROUND_OFF = 1e-11


#: Rows ordered by ``t`` under a working AR(1) correlation: the order decides the estimates.
AR1_OPTIONS: dict[str, Any] = {
    "groups": "user",
    "time": "t",
    "correlation": "ar1",
    "correlation_param": 0.5,
}


def panel(n: int = 400, seed: int = 0, rows: tuple[int, int] = (1, 8)) -> pd.DataFrame:
    """``n`` users with 1-7 rows in random order; dyadic values (sums of products are exact);
    a declared Categorical ``site``, a text ``kind``, NaN in ``x1``, ``pd.NA`` in ``x2`` and
    ``y``, a few rows without a user id, and one user whose rows all miss ``y``."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(*rows, n)
    user = np.repeat(np.arange(n), counts)
    m = user.size
    frame = pd.DataFrame(
        {
            "user": pd.Series([f"u{u}" for u in user], dtype=object),
            "t": np.concatenate([rng.permutation(c) for c in counts]).astype(np.int64),
            "x1": rng.integers(-8, 9, m) / 4,
            "x2": pd.array(rng.integers(-8, 9, m) / 2, dtype="Float64"),
            "site": pd.Categorical(rng.choice(["a", "b", "c"], m), categories=["a", "b", "c"]),
            "kind": rng.choice(["p", "q"], m).astype(object),
            "y": pd.array(rng.integers(-64, 65, m) / 8, dtype="Float64"),
        }
    )
    frame.loc[rng.random(m) < 0.03, "x1"] = np.nan
    frame.loc[rng.random(m) < 0.03, "x2"] = pd.NA
    frame.loc[rng.random(m) < 0.01, "user"] = None
    frame.loc[frame["user"] == "u0", "y"] = pd.NA  # a user without a complete row
    return frame.sample(frac=1, random_state=seed).reset_index(drop=True)


def as_dask(frame: pd.DataFrame, partitions: int = PARTITIONS) -> Any:
    return dd.from_pandas(frame, npartitions=partitions, sort=False)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return panel()


def same(a: Any, b: Any) -> bool:
    """Equal bit for bit, NaN equal to NaN."""
    return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))


def assert_same_release(expected: dplong.PanelResults, got: dplong.PanelResults) -> None:
    assert got.nobs_users == expected.nobs_users
    for field in ("params", "noise_sd", "sampling_sd", "bias", "users", "failed"):
        assert same(getattr(got, field), getattr(expected, field)), field
    assert same(got.conf_int(), expected.conf_int())
    assert got.privacy.epsilon == expected.privacy.epsilon
    assert got.summary().as_text() == expected.summary().as_text()


def test_a_categorical_time_orders_rows_as_in_memory(data: pd.DataFrame) -> None:
    """A Categorical time orders each user's rows by its declared categories on Dask too
    (here a scramble of their text's: AR(1) is blind to a reversal): the prewhitened
    coefficients are those of the numeric time."""
    times = pd.CategoricalDtype(list("dbfahcge"))
    named = data.assign(t=pd.Categorical.from_codes(data["t"], dtype=times))
    memory = dplong.LongitudinalOLS.from_formula("y ~ x1", data, **AR1_OPTIONS)
    frame = dplong.LongitudinalOLS.from_formula("y ~ x1", as_dask(named), **AR1_OPTIONS)
    np.testing.assert_allclose(
        frame._user_coefficients(), memory._user_coefficients(), rtol=0, atol=ROUND_OFF
    )


def test_a_time_of_unknown_categories_is_ordered_as_text(data: pd.DataFrame) -> None:
    """A Categorical time whose categories Dask does not know (read from files: each
    partition's own, in order of appearance) orders the rows by its text, as the same column
    of text does in memory, and the data holder is told; before, by each partition's codes."""
    times = pd.CategoricalDtype(list("dbfahcge"))
    named = data.assign(t=pd.Categorical.from_codes(data["t"], dtype=times))
    frame = as_dask(named)
    frame["t"] = frame["t"].cat.as_unknown()
    with pytest.warns(DataHolderWarning, match="time is text"):
        memory = dplong.LongitudinalOLS.from_formula(
            "y ~ x1", named.assign(t=named["t"].astype(object)), **AR1_OPTIONS
        )
    with pytest.warns(DataHolderWarning, match="time is text"):
        reduced = dplong.LongitudinalOLS.from_formula("y ~ x1", frame, **AR1_OPTIONS)
    np.testing.assert_allclose(
        reduced._user_coefficients(), memory._user_coefficients(), rtol=0, atol=ROUND_OFF
    )


def test_a_text_time_with_declared_levels_orders_rows_as_in_memory(data: pd.DataFrame) -> None:
    """A text time whose periods the formula declares (``levels=``) orders each user's rows by
    the declaration on Dask too, as object text or as categories Dask does not know: the
    prewhitened coefficients are those of the numeric time ('wave 10' would sort before
    'wave 8' as text)."""
    waves = [f"wave {t + 8}" for t in range(8)]
    named = data.assign(t=data["t"].map(dict(enumerate(waves))).astype(object))
    numbers = dplong.LongitudinalOLS.from_formula("y ~ x1 + I(t == 0)", data, **AR1_OPTIONS)
    expected = numbers._user_coefficients()
    unknown = as_dask(named.astype({"t": "category"}))
    unknown["t"] = unknown["t"].cat.as_unknown()
    for frame in (named, as_dask(named), unknown):
        model = dplong.LongitudinalOLS.from_formula(
            "y ~ x1 + I(t == 'wave 8')", frame, levels={"t": waves}, **AR1_OPTIONS
        )
        np.testing.assert_allclose(model._user_coefficients(), expected, rtol=0, atol=ROUND_OFF)


def test_users_span_partitions(data: pd.DataFrame) -> None:
    """The premise of every comparison below: many users' rows lie in several partitions."""
    frame = as_dask(data)
    assert frame.npartitions >= 8
    parts = [
        frame.get_partition(i)[["user"]].compute().assign(part=i) for i in range(frame.npartitions)
    ]
    spread = pd.concat(parts).dropna().groupby("user")["part"].nunique()
    assert (spread >= 2).mean() > 0.5


# ---------------------------------------------------------------------------------------------
# Every model: the same statistics and the same release
# ---------------------------------------------------------------------------------------------

OLS_FORMULA = "y ~ x1 + x2 + site + kind"


@pytest.mark.parametrize(
    ("correlation", "param"), [("independence", 0.0), ("exchangeable", 0.25), ("ar1", 0.5)]
)
def test_ols(data: pd.DataFrame, correlation: str, param: float) -> None:
    options: dict[str, Any] = {
        "groups": "user",
        "time": "t",
        "correlation": correlation,
        "correlation_param": param,
        "levels": LEVELS,
    }
    memory = dplong.LongitudinalOLS.from_formula(OLS_FORMULA, data, **options)
    frame = dplong.LongitudinalOLS.from_formula(OLS_FORMULA, as_dask(data), **options)
    assert isinstance(frame._design, ReducedPanel)
    assert frame.nobs_users == memory.nobs_users == data["user"].nunique()
    assert frame.exog_names == memory.exog_names
    assert list(frame._design.ids) == list(pd.unique(data["user"].dropna()))
    expected, got = memory._user_coefficients(), frame._user_coefficients()
    if correlation == "ar1":
        # prewhitening multiplies by sqrt(1 - φ²): inexact terms, summed in another order
        np.testing.assert_allclose(got, expected, rtol=0, atol=ROUND_OFF)
    else:
        assert same(got, expected)  # exact sums, the same solve
    assert frame.identified_users() == memory.identified_users()
    # the release reads the statistics through a lattice (noise.py): a round-off difference
    # changes it only if a statistic sits within 1e-12 of a rounding boundary (never here)
    assert_same_release(
        memory.fit(epsilon=4.0, random_state=5), frame.fit(epsilon=4.0, random_state=5)
    )


@pytest.mark.parametrize(
    "formula",
    [
        "y ~ I(x1.fillna(0)) + I(x1.isna()) + x2",  # missing values, the row-wise way
        "y ~ I(np.where(np.isnan(x1), 0.5, x1)) + I(np.minimum(np.maximum(x2, -1), 1)) + kind",
    ],
)
def test_row_wise_imputation_is_the_same_on_dask(data: pd.DataFrame, formula: str) -> None:
    """An accepted formula that handles missing values reads each row alone, so a partition
    evaluates it as the whole frame does: the same statistics and the same release."""
    options: dict[str, Any] = {"groups": "user", "time": "t"}
    if "kind" in formula:  # levels of a column the formula does not read are refused
        options["levels"] = LEVELS
    memory = dplong.LongitudinalOLS.from_formula(formula, data, **options)
    frame = dplong.LongitudinalOLS.from_formula(formula, as_dask(data), **options)
    assert frame.exog_names == memory.exog_names
    assert same(frame._user_coefficients(), memory._user_coefficients())
    assert_same_release(
        memory.fit(epsilon=4.0, random_state=5), frame.fit(epsilon=4.0, random_state=5)
    )


def test_within_estimator(data: pd.DataFrame) -> None:
    """``fit(estimator="within")``: the within cross products reduced in two passes (the users'
    means, then the products of the deviations from them), at the first within fit and once."""
    options: dict[str, Any] = {"groups": "user", "levels": LEVELS}
    formula = "y ~ x1 + x2 + kind"
    memory = dplong.LongitudinalOLS.from_formula(formula, data, **options)
    frame = dplong.LongitudinalOLS.from_formula(formula, as_dask(data), **options)
    (expected, expected_rows), (got, rows) = memory._within_products(), frame._within_products()
    assert same(rows, expected_rows)  # counts: exact
    assert same(np.isnan(got), np.isnan(expected))  # fewer than two rows: no statistic
    assert np.isnan(got).any() and not np.isnan(got).all()
    # deviations from (non-dyadic) means are inexact: summed in another order
    np.testing.assert_allclose(got, expected, rtol=0, atol=ROUND_OFF)
    assert frame._within_products() is frame._within_products()  # reduced once, then kept
    fit: dict[str, Any] = {"estimator": "within", "max_rows": 8, "random_state": 2}
    assert_same_release(memory.fit(epsilon=16.0, **fit), frame.fit(epsilon=16.0, **fit))
    # noise off (a stated scale beyond every statistic): the textbook estimate on both, up to
    # a lattice step (2**-40 of a statistic, locate.RESOLUTION) should round-off cross one
    exact: dict[str, Any] = {"epsilon": 1e300, "delta": 0.5, "scale": 1e6, **fit}
    np.testing.assert_allclose(
        frame.fit(**exact).params, memory.fit(**exact).params, rtol=1e-10, atol=0
    )


POOLED_FORMULA = "y ~ x1 + x2 + site + kind"
POOLED_BOUNDS = {"y": (-8.0, 8.0), "x1": (-2.0, 2.0), "x2": (-4.0, 4.0)}


@pytest.mark.parametrize(
    ("model", "max_rows"),
    [
        *(
            (model, rows)
            for model in (dplong.PooledOLS, dplong.PanelOLS, dplong.RandomEffects)
            for rows in (8, None)
        ),
        (dplong.BetweenOLS, None),  # it refuses max_rows: a person is one row (their means)
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else f"cap-{value or 'found'}",
)
@pytest.mark.parametrize("bounds", [None, POOLED_BOUNDS], ids=["ranges-found", "bounds"])
def test_pooled_family(data: pd.DataFrame, model: Any, bounds: Any, max_rows: Any) -> None:
    """The pooled family reads a Dask frame where it lies (each person's extremes for the
    private ranges, for the within estimator of the deviations from their means, found in two
    passes more; the persons' row counts where the cap on them is found; then each person's
    sums in the ranges' frame; for random effects also the
    moments of the pilot's residuals and each person's sums before quasi-demeaning) and
    releases what the rows in memory give: the same person sums but for their order of
    addition, so the same draws and numbers to round-off (the scaled rows are not dyadic);
    the data holder is told of the rows left out once, in the same words."""

    def built(frame: Any) -> tuple[Any, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted = model.from_formula(
                POOLED_FORMULA, frame, groups="user", levels=LEVELS, bounds=bounds
            )
            res = fitted.fit(epsilon=16.0, max_rows=max_rows, random_state=5)
        return res, [str(w.message) for w in caught if "left out" in str(w.message)]

    (memory, told), (lazy, told_lazy) = built(data), built(as_dask(data))
    assert lazy.nobs_users == memory.nobs_users == data["user"].nunique()
    assert list(lazy.params.index) == list(memory.params.index)
    assert np.isfinite(memory.params).all()  # a release to compare, not NaN against NaN
    for field in ("params", "bse"):
        np.testing.assert_allclose(getattr(lazy, field), getattr(memory, field), rtol=1e-9)
    np.testing.assert_allclose(lazy.conf_int(), memory.conf_int(), rtol=1e-9)
    assert lazy.privacy.entries == memory.privacy.entries
    assert lazy.warnings == memory.warnings
    assert len(told) == 1 and told_lazy == told


def test_within_on_dask_absorbs_what_memory_absorbs(data: pd.DataFrame) -> None:
    """A regressor constant within every person (declared ``between``, or found so by the
    released counts) is left out of a Dask frame's within fit as in memory: declared, the
    other coefficients the same to round-off; found, withheld alike."""
    frame = data.assign(z=data["user"].str[1:].astype(float) % 7)  # constant in a person
    fit: dict[str, Any] = {"epsilon": 16.0, "max_rows": 8, "random_state": 4}
    for between in ("z", None):
        memory, lazy = (
            dplong.PanelOLS.from_formula("y ~ x1 + z", f, groups="user").fit(between=between, **fit)
            for f in (frame, as_dask(frame))
        )
        if between:
            assert memory.withheld_why == lazy.withheld_why == {"z": "absorbed"}
            np.testing.assert_allclose(lazy.params["x1"], memory.params["x1"], rtol=1e-9)
        else:  # found so: x1 is withheld too (z might change for a few persons)
            expected = {"x1": "omitted regressor", "z": "absorbed"}
            assert memory.withheld_why == lazy.withheld_why == expected


def test_pooled_ptr_on_dask(data: pd.DataFrame) -> None:
    """``method="ptr"`` reads each person's weighted ``X_u'X_u`` and ``X_u'y_u`` only (of the
    rows scaled to the public bounds), so a Dask frame's person sums serve it: the same test,
    release and ledger as in memory."""
    bounds = {"y": (-8, 8), "x1": (-2, 2)}
    fit: dict[str, Any] = {"epsilon": 8.0, "method": "ptr", "ptr_floor": 0.05, "random_state": 2}
    memory, lazy = (
        dplong.PooledOLS.from_formula("y ~ x1", frame, groups="user", bounds=bounds).fit(**fit)
        for frame in (data, as_dask(data))
    )
    assert np.isfinite(memory.params).all() and memory.variant == "ePTR"
    np.testing.assert_allclose(lazy.params, memory.params, rtol=1e-9)
    np.testing.assert_allclose(lazy.bse, memory.bse, rtol=1e-9)
    assert lazy.privacy.entries == memory.privacy.entries


def test_random_effects_whose_pilot_withholds_a_coefficient(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A coefficient the pilot fit withholds (a heavy-tailed regressor's range, widened for
    its tail, still clips many persons: every count beyond the widening's rungs taken as
    many, so that it does here) counts as 0 in the residuals whose components weight the
    fit, in memory and on Dask alike (Dask's sums had skipped the missing residuals the
    pilot's NaN made, and released other weights): the same release and the note that says
    so."""
    monkeypatch.setattr(ranges, "far_threshold", lambda sides, sd: -math.inf)
    rng = np.random.default_rng(0)
    n, rows = 5000, 3
    frame = pd.DataFrame(
        {
            "id": np.repeat(np.arange(n), rows),
            "x": rng.normal(size=n * rows),
            "z": np.repeat(rng.standard_t(1.5, size=n), rows),
        }
    )
    frame["y"] = 1 + frame["x"] + np.repeat(rng.normal(size=n), rows) + rng.normal(size=n * rows)
    memory, lazy = (
        dplong.RandomEffects.from_formula("y ~ x + z", f, groups="id").fit(
            epsilon=2.0, random_state=0
        )
        for f in (frame, as_dask(frame.sample(frac=1, random_state=0), 4))
    )
    assert memory.withheld_why.get("z") and np.isfinite(memory.params["x"])
    assert any("The pilot fit withheld ['z']" in note for note in memory.warnings)
    np.testing.assert_allclose(lazy.params, memory.params, rtol=1e-9)
    np.testing.assert_allclose(lazy.variance_decomposition, memory.variance_decomposition)
    assert lazy.warnings == memory.warnings
    assert lazy.privacy.entries == memory.privacy.entries


@pytest.mark.parametrize("model", ["pooled", "within", "mean"])
def test_a_dask_frame_whose_persons_change_before_the_fit_is_refused(
    tmp_path: Path, model: str
) -> None:
    """Each fit reads the files again: persons added since the model was built (its n, public,
    sizes every release) are refused, not summed with the others; the per-entry within fit's
    passes too (an audit found it fitted the changed data under the old n), and the mean's
    (``ColumnMean``, ``PoissonMean``: a later audit, 400 users built, 401 fitted)."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(1)
    people = pd.DataFrame({"id": np.repeat(np.arange(400), 3), "x": rng.normal(size=1200)})
    people["y"] = people["x"] + rng.normal(size=1200)
    people.iloc[:600].to_parquet(tmp_path / "a.parquet", index=False)
    people.iloc[600:].to_parquet(tmp_path / "b.parquet", index=False)
    data = dd.read_parquet(tmp_path)
    if model == "pooled":
        options: dict[str, Any] = {"bounds": {"y": (-6, 6), "x": (-4, 4)}}
        built: Any = dplong.PooledOLS.from_formula("y ~ x", data, groups="id", **options)
        fit: dict[str, Any] = {}
    elif model == "within":
        built = dplong.LongitudinalOLS.from_formula("y ~ x", data, groups="id")
        fit = {"estimator": "within"}
    else:
        built, fit = ColumnMean.from_formula("y ~ 1", data, groups="id"), {}
        assert built.nobs_users == 400
    more = people.iloc[600:].assign(id=people["id"].iloc[600:] + 1000)
    pd.concat([people.iloc[600:], more]).to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(DataError, match="users changed since the model was built"):
        built.fit(epsilon=64.0, random_state=0, **fit)


def test_dask_collections_that_are_no_frames_are_refused_by_name() -> None:
    """A Dask Array, Bag or Series given as ``data`` crashed where a frame's columns were read
    (an AttributeError, a TypeError; an audit): refused as data that is no frame."""
    bag = pytest.importorskip("dask.bag")
    array = pytest.importorskip("dask.array")
    frame = dd.from_pandas(pd.DataFrame({"id": [0, 0, 1, 1], "y": [1.0, 2.0, 3.0, 4.0]}), 2)
    for data, kind in (
        (array.ones((4, 2)), "got Array"),
        (bag.from_sequence([1, 2]), "got Bag"),
        (frame["y"], "got a Dask Series"),
    ):
        with pytest.raises(DataError, match=f"data must be a pandas or Dask DataFrame, {kind}"):
            dplong.PooledOLS.from_formula("y ~ 1", data, groups="id")
        with pytest.raises(DataError, match=f"data must be a pandas or Dask DataFrame, {kind}"):
            dplong.PoissonMean.from_formula("y ~ 1", data, groups="id")


def test_the_means_budget_options_are_refused_before_a_pass() -> None:
    """The mean on Dask reduced every file before it read its budget options: ε = 0, δ = 2 or
    an accountant that cannot afford ε each cost a pass over the frame (an audit). They are
    refused before any Dask computation now."""
    callbacks = pytest.importorskip("dask.callbacks")

    class Computed(callbacks.Callback):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.graphs = 0

        def _start(self, dsk: Any) -> None:
            self.graphs += 1

    frame = pd.DataFrame({"id": np.repeat(np.arange(50), 3), "y": np.arange(150.0)})
    lazy = dd.from_pandas(frame, npartitions=3)
    model = ColumnMean.from_formula("y ~ 1", lazy, groups="id")
    bad = (
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": 1.0, "delta": 2.0}, "delta"),
        ({"epsilon": 5.0, "accountant": dplong.Accountant(epsilon=1.0)}, "needs epsilon=5"),
    )
    for options, said in bad:
        with Computed() as computed, pytest.raises(dplong.exceptions.DplongError, match=said):
            model.fit(**options)
        assert computed.graphs == 0, options


def test_the_means_users_are_those_its_fit_counts() -> None:
    """The mean's model counted its users on Dask by ``nunique``, which keeps the ids 0 and
    "0" apart, while its fit (and memory) take them as one person: the model said 201 users
    of a fit of 200 (an audit). It counts them as its fit does now."""
    rng = np.random.default_rng(3)
    ids = np.repeat(np.arange(200), 4).astype(object)
    ids[[1, 3]] = "0"  # person 0's rows, half of them with the id as text
    frame = pd.DataFrame({"id": ids, "y": rng.normal(size=800)})
    with dask.config.set({"dataframe.convert-string": False}):  # the ids kept as objects
        lazy = dd.from_pandas(frame, npartitions=3, sort=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataHolderWarning)
        models = [ColumnMean.from_formula("y ~ 1", data, groups="id") for data in (frame, lazy)]
        fits = [model.fit(epsilon=4.0, scale=1.0, random_state=0) for model in models]
    assert [model.nobs_users for model in models] == [200, 200]
    assert [res.nobs_users for res in fits] == [200, 200]
    pd.testing.assert_series_equal(fits[0].params, fits[1].params)


def test_values_outside_the_declared_levels_are_told_at_build_only(data: pd.DataFrame) -> None:
    """A value outside a factor's declared levels is told to the data holder when the model
    is built (by the partitions holding one), not again at every pass of every fit."""
    odd = data.assign(kind=data["kind"].where(data.index % 97 != 0, "r"))

    def told(action: Callable[[], Any]) -> int:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            action()
        return sum("not among its declared levels" in str(w.message) for w in caught)

    models: list[Any] = []
    build = lambda: models.append(  # noqa: E731
        dplong.RandomEffects.from_formula(
            "y ~ x1 + kind", as_dask(odd), groups="user", levels=LEVELS
        )
    )
    assert 1 <= told(build) <= PARTITIONS
    assert told(lambda: models[0].fit(epsilon=8.0, random_state=0)) == 0


def test_location(data: pd.DataFrame) -> None:
    memory = dplong.RandomEffectsLocation.from_formula("y ~ 1", data, groups="user")
    frame = dplong.RandomEffectsLocation.from_formula("y ~ 1", as_dask(data), groups="user")
    expected, got = _UserMoments.of(memory._design), _UserMoments.of(frame._design)
    assert same(got.rows, expected.rows) and same(got.means, expected.means)
    # the squared deviations from a (non-dyadic) mean are inexact: summed in another order
    np.testing.assert_allclose(got.within_ss, expected.within_ss, rtol=0, atol=ROUND_OFF)
    assert_same_release(
        memory.fit(epsilon=1.0, random_state=1), frame.fit(epsilon=1.0, random_state=1)
    )


def test_location_exact_with_dyadic_means() -> None:
    """With 1, 2 or 4 rows per user the means and deviations are dyadic: exactly equal."""
    rng = np.random.default_rng(2)
    counts = 2 ** rng.integers(0, 3, 500)
    data = pd.DataFrame(
        {
            "user": np.repeat(np.arange(500), counts),
            "litter": np.repeat(np.arange(500) // 5, counts),
            "y": rng.integers(-64, 65, counts.sum()) / 8,
        }
    ).sample(frac=1, random_state=2)
    memory = dplong.RandomEffectsLocation.from_formula(
        "y ~ 1", data, groups="user", re_groups="litter"
    )
    frame = dplong.RandomEffectsLocation.from_formula(
        "y ~ 1", as_dask(data), groups="user", re_groups="litter"
    )
    assert same(_UserMoments.of(frame._design).within_ss, _UserMoments.of(memory._design).within_ss)
    assert_same_release(
        memory.fit(epsilon=2.0, random_state=3), frame.fit(epsilon=2.0, random_state=3)
    )


def test_kernel_user_level(data: pd.DataFrame) -> None:
    options: dict[str, Any] = {"groups": "user", "domain": (0, 7), "bandwidth": 1.5, "grid": 6}
    memory = dplong.PriestleyChao.from_formula("y ~ t", data, **options)
    frame = dplong.PriestleyChao.from_formula("y ~ t", as_dask(data), **options)
    assert isinstance(frame._design, ReducedPanel)
    grid = memory._resolve_grid(1.5)
    design = memory._design
    expected = user_curves(memory._x, memory._y, design.codes, design.n, grid, memory._kernel, 1.5)
    # kernel values are inexact; a user's rows are summed in the same order, in one partition
    np.testing.assert_allclose(frame._design.statistics, expected, rtol=0, atol=ROUND_OFF)
    assert_same_release(
        memory.fit(epsilon=2.0, random_state=4), frame.fit(epsilon=2.0, random_state=4)
    )


def test_kernel_item_level() -> None:
    rng = np.random.default_rng(3)
    x = np.arange(3000) / 3000
    data = pd.DataFrame({"x": x, "y": rng.integers(-8, 9, x.size) / 4}).sample(
        frac=1, random_state=3
    )
    data.loc[data.index[:5], "y"] = np.nan  # a unit without a response: the centre
    options: dict[str, Any] = {"domain": (0, 1), "bandwidth": 0.05, "grid": 11}
    memory = dplong.PriestleyChao.from_formula("y ~ x", data, **options)
    frame = dplong.PriestleyChao.from_formula("y ~ x", as_dask(data), **options)
    assert same(frame._x, memory._x) and same(frame._y, memory._y)
    for fit in ({"error_sd": 0.5, "amplitude": 2.0}, {}):  # stated, and estimated, scale
        assert_same_release(
            memory.fit(epsilon=1.0, random_state=0, **fit),
            frame.fit(epsilon=1.0, random_state=0, **fit),
        )


def test_nadaraya_watson() -> None:
    """The ePTR Nadaraya–Watson curve (item level: every row a unit) reads a Dask frame's
    (x, y) pairs back, evaluated partition by partition, and releases what memory does, bit
    for bit; a missing x (no weight) and y (the centre) as in memory."""
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 3000)
    data = pd.DataFrame({"x": x, "y": rng.integers(-8, 9, x.size) / 4})
    data.loc[data.index[:5], "y"] = np.nan
    data.loc[data.index[5:8], "x"] = np.nan
    options: dict[str, Any] = {"domain": (0, 1), "bounds": (-2, 2), "bandwidth": 0.1}
    memory = dplong.NadarayaWatson.from_formula("y ~ x", data, **options)
    frame = dplong.NadarayaWatson.from_formula("y ~ x", as_dask(data), **options)
    expected = memory.fit(epsilon=4.0, random_state=0)
    got = frame.fit(epsilon=4.0, random_state=0)
    assert np.isfinite(expected.params).all()
    assert same(got.params, expected.params) and same(got.conf_int(), expected.conf_int())
    assert got.summary().as_text() == expected.summary().as_text()


def test_kernel_item_level_refuses_missing_design_points() -> None:
    data = pd.DataFrame({"x": [0.1, np.nan, 0.5, 0.9], "y": [1.0, 2.0, 3.0, 4.0]})
    for frame in (data, as_dask(data, 2)):
        with pytest.raises(DataError, match="1 are missing or infinite"):
            dplong.PriestleyChao.from_formula("y ~ x", frame, domain=(0, 1), bandwidth=0.2)


def test_winsorized_mean(data: pd.DataFrame) -> None:
    frame = as_dask(data)
    complete = data["user"].notna()
    memory = dplong.winsorized_mean(
        data.loc[complete, ["x1", "x2"]],
        groups=data.loc[complete, "user"],
        epsilon=1.0,
        random_state=2,
    )
    with_ids = frame[frame["user"].notnull()]
    got = dplong.winsorized_mean(
        with_ids[["x1", "x2"]], groups=with_ids["user"], epsilon=1.0, random_state=2
    )
    assert_same_release(memory, got)
    one_row_each = dplong.winsorized_mean(data["x1"], epsilon=1.0, random_state=2)
    assert_same_release(
        one_row_each, dplong.winsorized_mean(frame["x1"], epsilon=1.0, random_state=2)
    )


def test_winsorized_mean_leaves_out_rows_of_missing_ids(data: pd.DataFrame) -> None:
    """A row without a user id belongs to no user, in memory and on Dask alike."""
    frame = as_dask(data)
    known = data["user"].notna()
    assert not known.all()
    expected = dplong.winsorized_mean(
        data.loc[known, "x1"], groups=data.loc[known, "user"], epsilon=1.0, random_state=3
    )
    told = []
    for values, groups in ((data["x1"], data["user"]), (frame["x1"], frame["user"])):
        with pytest.warns(DataHolderWarning) as caught:
            got = dplong.winsorized_mean(values, groups=groups, epsilon=1.0, random_state=3)
        assert_same_release(expected, got)
        told.append([str(w.message) for w in caught if w.category is DataHolderWarning])
    # the data holder hears of the rows left out alike (without an id; NaN in x1)
    assert told[0] == told[1] and told[0][0].startswith(f"Of {len(data):,} rows, ")
    with pytest.raises(DataError, match="column of the same Dask frame"):
        dplong.winsorized_mean(frame["x1"], groups=data["user"].to_numpy(), epsilon=1.0)


# ---------------------------------------------------------------------------------------------
# Declared levels and missing values
# ---------------------------------------------------------------------------------------------


def test_missing_rows_and_users_count_as_in_memory(data: pd.DataFrame) -> None:
    """n counts every non-missing id, also a user without a complete row (no statistic)."""
    frame = dplong.LongitudinalOLS.from_formula("y ~ x1", as_dask(data), groups="user")
    ids = list(frame._design.ids)
    assert frame.nobs_users == len(ids) == data["user"].nunique()
    assert np.isnan(frame._user_coefficients()[ids.index("u0")]).all()


@pytest.mark.parametrize(
    ("model", "formula"),
    [(dplong.LongitudinalOLS, "y ~ x1 + x2"), (dplong.RandomEffectsLocation, "y ~ 1")],
)
def test_rows_left_out_warn_the_data_holder_as_in_memory(
    data: pd.DataFrame, model: Any, formula: str
) -> None:
    """The rows a Dask frame's design leaves out (a missing value, no user id) are counted by
    the partitions and told once, in the words of the in-memory warning, also where the model
    reduces the rows in two passes (the location's moments; the within estimator's, at
    ``fit``); the results never hold them."""

    def told(frame: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            built = model.from_formula(formula, frame, groups="user")
            fits = [built.fit(epsilon=4.0, scale=1.0, random_state=0)]
            if model is dplong.LongitudinalOLS:
                fits.append(built.fit(epsilon=4.0, estimator="within", random_state=0))
        left_out = [w for w in caught if "left out" in str(w.message)]
        assert all(w.category is dplong.exceptions.DataHolderWarning for w in left_out)
        assert not any("left out" in note for fit in fits for note in fit.warnings)
        return [str(w.message) for w in left_out]

    (expected,) = told(data)
    assert f"{data['user'].isna().sum():,} no user id" in expected
    assert told(as_dask(data)) == [expected]


def test_a_curves_rows_outside_its_domain_are_told_as_in_memory() -> None:
    """The rows whose x lies outside a curve's domain are left out on a Dask frame as in
    memory, and now told in the same words (the partitions count them beside the kernel sums;
    a Dask fit had left them out without a word), once; the release is the same."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(600), 4)
    x = rng.normal(size=ids.size)
    y = x + rng.normal(size=ids.size)
    y[::50] = np.nan
    frame = pd.DataFrame({"id": ids, "x": x, "y": y})
    told, fits = [], []
    for data in (frame, dd.from_pandas(frame, npartitions=4)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = dplong.PriestleyChao.from_formula(
                "y ~ x", data, groups="id", domain=(-1.0, 1.0), bandwidth=0.5, grid=5
            )
            fits.append(model.fit(epsilon=4.0, random_state=0))
        told.append([str(w.message) for w in caught if w.category is DataHolderWarning])
    outside = int(((x < -1.0) | (x > 1.0))[~np.isnan(y)].sum())
    assert told[0] == told[1] and len(told[0]) == 2
    assert told[0][1].startswith(f"{outside:,} of {int((~np.isnan(y)).sum()):,} rows have")
    np.testing.assert_array_equal(fits[0].params.to_numpy(), fits[1].params.to_numpy())


def test_unknown_categories_are_undeclared(data: pd.DataFrame) -> None:
    """Categories Dask does not know (each partition its own, as from Parquet) would come
    from the rows: refused like text, and accepted once declared."""
    frame = as_dask(data)
    unknown = frame.assign(site=frame["site"].cat.as_unknown())
    with pytest.raises(FormulaError, match="levels are not declared"):
        dplong.LongitudinalOLS.from_formula("y ~ x1 + site", unknown, groups="user")
    declared = dplong.LongitudinalOLS.from_formula(
        "y ~ x1 + site", unknown, groups="user", levels={"site": ["a", "b", "c"]}
    )
    memory = dplong.LongitudinalOLS.from_formula("y ~ x1 + site", data, groups="user")
    assert declared.exog_names == memory.exog_names
    assert same(declared._user_coefficients(), memory._user_coefficients())


def test_categories_from_the_values_warn_on_dask(data: pd.DataFrame) -> None:
    """Known categories that are exactly the values present warn the data holder as in memory
    (``site`` holds a, b and c); a dtype declaring a level nobody holds does not."""
    with pytest.warns(dplong.exceptions.DataHolderWarning, match=r"'site' are exactly"):
        dplong.LongitudinalOLS.from_formula("y ~ x1 + site", as_dask(data), groups="user")
    declared = data.astype({"site": pd.CategoricalDtype(["a", "b", "c", "d"])})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dplong.LongitudinalOLS.from_formula("y ~ x1 + site", as_dask(declared), groups="user")
    # the rows with a missing value are told of (another warning); the levels are not
    assert any("left out" in str(w.message) for w in caught)
    assert not any("site" in str(w.message) for w in caught)


def unreadable(data: pd.DataFrame) -> Any:
    """A Dask frame with ``data``'s schema whose rows cannot be read: a refusal that reads
    them fails with this RuntimeError instead of its own message."""

    def refuse(_: int) -> pd.DataFrame:
        raise RuntimeError("the rows were read")

    return dd.from_map(refuse, range(PARTITIONS), meta=data.iloc[:0], enforce_metadata=False)


REFUSALS: list[tuple[str, Callable[[Any], Any], type[Exception], str]] = [
    (
        "no groups column",
        lambda d: dplong.LongitudinalOLS.from_formula("y ~ x1", d, groups="person"),
        FormulaError,
        "groups='person' is not a column",
    ),
    (
        "groups missing",
        lambda d: dplong.LongitudinalOLS.from_formula("y ~ x1", d, groups=None),
        DataError,
        "groups is required",
    ),
    (
        "groups is the outcome",
        lambda d: dplong.PooledOLS.from_formula("y ~ x1", d, groups="y"),
        DataError,
        "groups='y' is a column the formula reads",
    ),
    (
        "undeclared text factor",
        lambda d: dplong.LongitudinalOLS.from_formula("y ~ x1 + kind", d, groups="user"),
        FormulaError,
        "'kind' .* is used as a factor",
    ),
    (
        "no such column in the formula",
        lambda d: dplong.LongitudinalOLS.from_formula("y ~ x1 + nope", d, groups="user"),
        FormulaError,
        "nope",
    ),
    (
        "no time column",
        lambda d: dplong.LongitudinalOLS.from_formula("y ~ x1", d, groups="user", time="day"),
        FormulaError,
        "time='day' is not a column",
    ),
    (
        "location with a covariate",
        lambda d: dplong.RandomEffectsLocation.from_formula("y ~ x1", d, groups="user"),
        FormulaError,
        "location model",
    ),
    (
        "kernel with two regressors",
        lambda d: dplong.PriestleyChao.from_formula(
            "y ~ x1 + t", d, groups="user", domain=(0, 1), bandwidth=0.5
        ),
        FormulaError,
        "one regressor",
    ),
    (
        "data-dependent transform",
        lambda d: dplong.LongitudinalOLS.from_formula("y ~ center(x1)", d, groups="user"),
        FormulaError,
        "center",
    ),
]


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [case[1:] for case in REFUSALS],
    ids=[case[0] for case in REFUSALS],
)
def test_refusals_as_in_memory_before_any_row_is_read(
    data: pd.DataFrame, build: Callable[[Any], Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as in_memory:
        build(data)
    with pytest.raises(error, match=message) as on_dask:
        build(unreadable(data))
    # the same words; a dtype named in them is the frame's own (Dask stores text as "string")
    dtype = re.compile(r"\(dtype [^)]*\)")
    assert dtype.sub("", str(on_dask.value)) == dtype.sub("", str(in_memory.value))


def test_refusals_that_need_the_rows(data: pd.DataFrame) -> None:
    """n (public) and whether there are rows are counted as in memory, with the same words."""
    one_user = data[data["user"] == "u1"]
    for frame in (one_user, as_dask(one_user, 2)):
        with pytest.raises(InsufficientUsersError, match="the data hold 1 user"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", frame, groups="user")
    for frame in (data.iloc[:0], as_dask(data).head(0, npartitions=1, compute=False)):
        with pytest.raises(DataError, match="data has no rows"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", frame, groups="user")


@pytest.mark.parametrize("column", ["user", "t", "x1"])
def test_a_repeated_column_read_is_refused_as_in_memory(data: pd.DataFrame, column: str) -> None:
    """Two columns of the name of the user ids, the time or a formula's column: refused by
    name, in memory and on Dask (whose schema had kept one of them), before any row is read."""
    twice = pd.concat([data, data[[column]]], axis=1)
    for frame in (twice, as_dask(twice)):
        with pytest.raises(DataError, match=rf"several columns named \['{column}'\]"):
            dplong.LongitudinalOLS.from_formula("y ~ x1", frame, groups="user", time="t")


def test_groups_must_name_a_column_of_a_dask_frame(data: pd.DataFrame) -> None:
    with pytest.raises(ParameterError, match="groups must be a column name"):
        dplong.LongitudinalOLS.from_formula("y ~ x1", as_dask(data), groups=data["user"].to_numpy())


# ---------------------------------------------------------------------------------------------
# Schedulers, and no dask
# ---------------------------------------------------------------------------------------------


def test_a_person_whose_id_is_a_number_in_one_file_and_text_in_another_is_one_user(
    tmp_path: Path,
) -> None:
    """One Parquet file storing the ids as numbers and another as text (13 and "13"): each
    person in both would count as two users, each with the whole budget (protected at twice
    the stated ε), and n was one too many without a word. In memory such ids are one user
    (the data holder told; a refusal there was decided by one row's id), with the fit of the
    ids stored alike; from the Parquet files, whose sums a shuffle adds up by id, refused by
    the command line's fit and plan alike. Ids that are numbers in one file and floats in
    another (13 and 13.0) are one id."""
    pytest.importorskip("pyarrow")
    wages = dplong.datasets.load_wage_panel()
    texts = wages.iloc[2180:].assign(nr=wages["nr"].iloc[2180:].astype(str))
    mixed = pd.concat([wages.iloc[:2180], texts], ignore_index=True)
    with pytest.warns(dplong.exceptions.DataHolderWarning, match="taken as one user"):
        merged = dplong.LongitudinalOLS.from_formula("lwage ~ exper", mixed, groups="nr")
    alike = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    assert merged.nobs_users == alike.nobs_users == 545
    fits = [m.fit(epsilon=4.0, random_state=0).params for m in (merged, alike)]
    pd.testing.assert_series_equal(*fits)
    folder = tmp_path / "mixed"
    folder.mkdir()
    wages.iloc[:2180].to_parquet(folder / "a.parquet", index=False)
    texts.to_parquet(folder / "b.parquet", index=False)
    argv = ["--model", "mean", "--formula", "lwage ~ 1", "--groups", "nr", "--epsilon", "1"]
    # a process of its own, as the command line runs: the local scheduler (on this module's
    # distributed cluster the shuffle of the sums cannot merge an int column with a text one,
    # and raises before the ids are seen)
    for command in ("fit", "plan"):
        done = subprocess.run(
            [sys.executable, "-m", "dplong", command, str(folder), *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2 and "differ only in their type" in done.stderr
    floats = wages.iloc[2180:].assign(nr=wages["nr"].iloc[2180:].astype(float))
    same = pd.concat([wages.iloc[:2180], floats], ignore_index=True).astype({"nr": object})
    assert dplong.LongitudinalOLS.from_formula("lwage ~ exper", same, groups="nr").nobs_users == 545


@pytest.mark.parametrize("stored", ["all missing", "text"])
@pytest.mark.parametrize("unused", [False, True])
def test_a_file_storing_a_column_another_way_reads_as_its_numbers(
    tmp_path: Path, stored: str, unused: bool
) -> None:
    """One Parquet file of four storing ``x`` all missing (Parquet's null type) or as text:
    Dask passed that partition on with its own type, so its rows, and the rows of every file
    fused into its partition (as where the files hold columns a fit does not read), were all
    missing (417 of 1,665 rows left out in memory, 833 from the files) or the mean refused
    ``x`` as not numeric: a release, or a refusal, decided by how one file stored a column
    (an audit). Each cell is read as a number, as the command line reads them: the files fit
    as the same rows in memory."""
    pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(417), 4)[:1665]
    x = rng.normal(size=ids.size)
    people = pd.DataFrame({"id": ids, "y": 1 + 2 * x + rng.normal(size=ids.size), "x": x})
    if unused:
        people["other"] = rng.normal(size=ids.size)
    parts = np.array_split(np.arange(ids.size), 4)
    files = [people.iloc[part].reset_index(drop=True) for part in parts]
    last = files[3]["x"]
    files[3]["x"] = None if stored == "all missing" else last.map(repr).astype(object)
    folder = tmp_path / "parts"
    folder.mkdir()
    for k, part in enumerate(files):
        part.to_parquet(folder / f"part-{k}.parquet", index=False)
    memory = pd.concat(files, ignore_index=True).astype({"x": object})
    memory["x"] = pd.to_numeric(memory["x"])
    stored_frame = dd.read_parquet(folder)

    def fits(data: Any) -> list[pd.Series]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ols = dplong.LongitudinalOLS.from_formula("y ~ x", data, groups="id")
            mean = dplong.winsorized_mean(
                data[["y", "x"]], groups=data["id"], epsilon=4.0, random_state=0
            )
            return [ols.fit(epsilon=4.0, random_state=0).params, mean.params]

    for ours, theirs in zip(fits(stored_frame), fits(memory), strict=True):
        pd.testing.assert_series_equal(ours, theirs)


@pytest.fixture
def client() -> Iterator[Any]:
    """A ``distributed`` cluster for one test, closed after it: left open (module scope), it
    became the default scheduler of the tests a worker ran after it, whose sums it added in
    another order (not bit for bit the in-memory fit's)."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as connected,
    ):
        yield connected


def test_distributed_client(data: pd.DataFrame, client: Any) -> None:
    """The same graphs on a ``distributed`` cluster (tasks and the spec are serialised):
    a formula with a module function, the shuffle of AR(1) and of user curves, two passes
    (the location's, the within estimator's)."""
    formula = "y ~ np.exp(x1) + kind"
    options: dict[str, Any] = {"groups": "user", "time": "t", "levels": LEVELS}
    for correlation, param in (("independence", 0.0), ("ar1", 0.5)):
        memory = dplong.LongitudinalOLS.from_formula(
            formula, data, correlation=correlation, correlation_param=param, **options
        )
        frame = dplong.LongitudinalOLS.from_formula(
            formula, as_dask(data), correlation=correlation, correlation_param=param, **options
        )
        np.testing.assert_allclose(  # exp(x1) is inexact: round-off of the order of sums
            frame._user_coefficients(), memory._user_coefficients(), rtol=1e-9, atol=ROUND_OFF
        )
    # the within estimator's two passes, the first pass's means sent along to the second's
    np.testing.assert_allclose(
        frame._within_products()[0], memory._within_products()[0], rtol=1e-9, atol=ROUND_OFF
    )
    curves = dplong.PriestleyChao.from_formula(
        "y ~ t", as_dask(data), groups="user", domain=(0, 7), bandwidth=1.5, grid=6
    )
    location = dplong.RandomEffectsLocation.from_formula("y ~ 1", as_dask(data), groups="user")
    assert curves.nobs_users == location.nobs_users == data["user"].nunique()


def test_ids_of_several_types_on_a_distributed_cluster(client: Any) -> None:
    """A distributed shuffle of the sums cannot merge a partition's numeric ids with another's
    text ones (Parquet files storing them so), and raised its own P2P error: the ids' types
    are then checked (a pass over the id column) and refused as a ``DataError`` naming them."""
    wages = dplong.datasets.load_wage_panel()
    parts = [
        dd.from_pandas(wages.iloc[:2180], npartitions=4),
        dd.from_pandas(wages.iloc[2180:].astype({"nr": str}), npartitions=4),
    ]
    with pytest.raises(DataError, match=r"several types .*\['integer', 'string'\]"):
        dplong.LongitudinalOLS.from_formula("lwage ~ exper", dd.concat(parts), groups="nr")


def test_no_dask(data: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Dask frame without dask's data frames installed: a clear error, before anything."""
    frame = as_dask(data)
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)  # import now raises ImportError
    calls = [
        lambda: dplong.LongitudinalOLS.from_formula("y ~ x1", frame, groups="user"),
        lambda: dplong.RandomEffectsLocation.from_formula("y ~ 1", frame, groups="user"),
        lambda: dplong.PriestleyChao.from_formula("y ~ x1", frame, domain=(0, 1), bandwidth=1),
        lambda: dplong.winsorized_mean(frame["x1"], groups=frame["user"], epsilon=1.0),
    ]
    for call in calls:
        with pytest.raises(MissingDependencyError, match=r'pip install "dplong\[dask\]"'):
            call()
    # pandas frames do not need dask
    assert dplong.LongitudinalOLS.from_formula("y ~ x1", data, groups="user").nobs_users > 0


def test_core_imports_without_dask() -> None:
    code = (
        "import sys; sys.modules['dask'] = None; sys.modules['distributed'] = None\n"
        "import dplong, dplong.cli, dplong.dask_frames\n"
        "wages = dplong.datasets.load_wage_panel()\n"
        "model = dplong.LongitudinalOLS.from_formula('lwage ~ exper', wages, groups='nr')\n"
        "print(model.nobs_users)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "545"


# ---------------------------------------------------------------------------------------------
# The command line: a glob or directory of Parquet files
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def parquet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The panel (users with an id) as 4 Parquet files, users spread over them, and as CSV."""
    pytest.importorskip("pyarrow")
    table = panel(n=300, seed=7)
    table = table[table["user"].notna()].astype({"x2": float, "y": float})
    folder = tmp_path_factory.mktemp("panel")
    for i, rows in enumerate(np.array_split(np.arange(len(table)), 4)):
        table.iloc[rows].to_parquet(folder / f"part-{i}.parquet", index=False)
    csv = folder.parent / "panel.csv"
    table.to_csv(csv, index=False)
    return folder, csv


CLI = ["--model", "ols", "--formula", "y ~ x1 + kind", "--groups", "user", "--time", "t"]
# ε = 2: at 1 every column of the 300 users' per-user fit would be withheld (refused)
CLI += ["--levels", "kind=p,q", "--epsilon", "2", "--seed", "3", "--quiet"]


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("glob", []),
        ("directory", []),
        ("glob", ["--estimator", "within", "--epsilon", "16"]),  # ε 16 in place of 2
    ],
)
def test_cli_parquet_files(parquet: tuple[Path, Path], kind: str, options: list[str]) -> None:
    folder, csv = parquet
    source = str(folder / "*.parquet") if kind == "glob" else str(folder)
    code, out, err = run(["fit", source, *given(CLI, *options)])
    assert code == 0, err
    assert out == run(["fit", str(csv), *given(CLI, *options)])[1]  # the rows in memory


@pytest.mark.parametrize("model", ["pooled", "between", "panel", "re", "nw"])
def test_cli_pooled_family_on_parquet_files(parquet: tuple[Path, Path], model: str) -> None:
    """The pooled family and ``nw`` read a glob of Parquet files through Dask (no longer into
    memory first), with the release of the CSV of the same rows."""
    folder, csv = parquet
    if model == "nw":  # item level: every row a unit, no groups
        argv = ["--model", "nw", "--formula", "y ~ x1", "--domain=-2,2", "--bounds=-8,8"]
        argv += ["--bandwidth", "0.5", "--epsilon", "16", "--seed", "3"]
    else:
        argv = ["--model", model, "--formula", "y ~ x1 + kind", "--groups", "user"]
        argv += ["--levels", "kind=p,q", "--bounds", "y=-8,8", "--epsilon", "16", "--seed", "3"]
    code, out, err = run(["fit", str(folder / "*.parquet"), *argv])
    assert code == 0, err
    assert "results" in out and out == run(["fit", str(csv), *argv])[1]


def test_cli_parquet_errors(
    parquet: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = parquet
    code, _, err = run(["fit", str(tmp_path / "none-*.parquet"), *CLI])
    assert code == 2 and "matches no file" in err
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    code, _, err = run(["fit", str(folder / "*.parquet"), *CLI])
    assert code == 2 and 'pip install "dplong[dask]"' in err
    one_file = ["fit", str(folder / "part-0.parquet"), *CLI]  # read by pandas
    one_file[one_file.index("--epsilon") + 1] = "8"  # a quarter of the users
    code, out, err = run(one_file)
    assert code == 0 and "LongitudinalOLS" in out, err


def test_cli_mean_on_parquet(parquet: tuple[Path, Path]) -> None:
    folder, csv = parquet
    argv = ["--model", "mean", "--formula", "y ~ 1", "--groups", "user", "--epsilon", "1"]
    argv += ["--seed", "0", "--quiet"]
    code, out, err = run(["fit", str(folder / "*.parquet"), *argv])
    assert code == 0, err
    assert out == run(["fit", str(csv), *argv])[1]


def test_cli_mean_by_a_column_on_parquet_files(parquet: tuple[Path, Path]) -> None:
    """A mean's ``--by`` reads a glob of Parquet files where they lie (no longer into
    memory), with the release of the CSV of the same rows."""
    folder, csv = parquet
    argv = ["--model", "mean", "--formula", "y ~ 1", "--by", "kind", "--epsilon", "2"]
    argv += ["--groups", "user", "--levels", "kind=p,q", "--seed", "1", "--quiet"]
    code, out, err = run(["fit", str(folder / "*.parquet"), *argv])
    assert code == 0, err
    assert "y[kind=p]" in out and out == run(["fit", str(csv), *argv])[1]


@pytest.mark.parametrize("by_constant", [False, True])
def test_mean_by_a_column_is_the_same_on_dask(data: pd.DataFrame, by_constant: bool) -> None:
    """``by=``: each partition spreads its rows over the declared levels (and with
    ``by_constant`` every user keeps the first level at which they have a row, from the
    per-level row counts), the same release as in memory, bit for bit (dyadic values: exact
    per-user sums); the key given by name or as the frame's column."""
    options: dict[str, Any] = {"by": "kind", "levels": LEVELS, "by_constant": by_constant}
    fit: dict[str, Any] = {"epsilon": 2.0, "random_state": 3}
    memory = dplong.winsorized_mean(
        data[["x1", "y", "kind"]], groups=data["user"], **options, **fit
    )
    frame = as_dask(data)
    by_name = dplong.winsorized_mean(
        frame[["x1", "y", "kind"]], groups=frame["user"], **options, **fit
    )
    options["by"] = frame["kind"]
    by_column = dplong.winsorized_mean(frame[["x1", "y"]], groups=frame["user"], **options, **fit)
    assert list(memory.params.index) == ["x1[kind=p]", "y[kind=p]", "x1[kind=q]", "y[kind=q]"]
    assert np.isfinite(memory.params).sum() >= 2  # (with by_constant, few users have q first)
    for lazy in (by_name, by_column):
        assert_same_release(memory, lazy)
        assert lazy.privacy.entries == memory.privacy.entries
    with pytest.raises(ParameterError, match="by= names a column of the same Dask frame"):
        dplong.winsorized_mean(
            frame[["x1"]],
            groups=frame["user"],
            by=data["kind"].to_numpy(),
            levels=LEVELS,
            epsilon=1.0,
        )


def test_mean_by_a_column_of_python_objects_on_dask() -> None:
    """A key column of Python objects (years, some missing, one undeclared) is stored as text
    by Dask: its keys are matched against the declared levels' text, the same release as in
    memory (where every row had been at no level: all withheld)."""
    wages = dplong.datasets.load_wage_panel()
    keys = wages["year"].astype(object)
    keys.iloc[::37], keys.iloc[::53] = None, 1999
    frame = wages.assign(yr=keys)[["nr", "lwage", "yr"]]
    lazy = dd.from_pandas(frame.sample(frac=1, random_state=1), npartitions=6, sort=False)
    assert isinstance(lazy["yr"].dtype, pd.StringDtype)  # the premise: Dask made it text
    options: dict[str, Any] = {"by": "yr", "levels": {"yr": [1980, 1981, 1982]}}
    fit: dict[str, Any] = {"epsilon": 3.0, "random_state": 0}
    memory = dplong.winsorized_mean(frame[["lwage", "yr"]], groups=frame["nr"], **options, **fit)
    got = dplong.winsorized_mean(lazy[["lwage", "yr"]], groups=lazy["nr"], **options, **fit)
    assert np.isfinite(memory.params).all()
    np.testing.assert_allclose(got.params, memory.params, rtol=1e-12)


def test_column_mean_tells_the_rows_left_out_on_dask(data: pd.DataFrame) -> None:
    """``ColumnMean`` on a Dask frame tells the data holder of the rows no user's mean reads
    (no id, a missing value), in the words of the in-memory warning."""
    model = dplong.models.mean.ColumnMean

    def told(frame: Any) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.from_formula("y ~ 1", frame, groups="user", by="kind", levels=LEVELS)
        return [str(w.message) for w in caught if "left out" in str(w.message)]

    (expected,) = told(data)
    assert told(as_dask(data)) == [expected]


def test_mean_of_an_expression_is_the_same_on_dask(data: pd.DataFrame) -> None:
    """``ColumnMean`` of an expression left of ``~``: evaluated row by row in each partition,
    the same release as in memory, bit for bit (dyadic values: exact per-user sums)."""
    model = dplong.models.mean.ColumnMean
    memory = model.from_formula("I(2 * x1) ~ 1", data, groups="user").fit(
        epsilon=1.0, random_state=5
    )
    lazy = model.from_formula("I(2 * x1) ~ 1", as_dask(data), groups="user").fit(
        epsilon=1.0, random_state=5
    )
    assert_same_release(memory, lazy)


def test_a_partition_of_rows_without_ids_is_told_and_odd_id_types_are_refused() -> None:
    """A Parquet file whose rows all lack an id is a partition with no user: the per-user sums
    had no user to carry its count (the rows left out without a word), and the mean's sums
    failed with numpy's traceback. Ids stored as dates failed the shuffle with pyarrow's
    traceback, as half-precision floats did pandas', and lists gave "several types" (an
    audit). Each is told or refused in dplong's words; half-precision ids read as doubles."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(300.0), 3)
    whole = pd.DataFrame({"id": ids, "x": rng.normal(size=900), "y": rng.normal(size=900)})
    lost = pd.DataFrame({"id": np.full(30, np.nan), "x": 0.0, "y": 0.0})
    frame = dd.concat([dd.from_pandas(whole, npartitions=1), dd.from_pandas(lost, npartitions=1)])
    fits = (
        lambda: dplong.PooledOLS.from_formula("y ~ x", frame, groups="id"),
        lambda: dplong.winsorized_mean(frame["y"], groups=frame["id"], epsilon=8, random_state=0),
    )
    for fit in fits:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit()
        told = [str(w.message) for w in caught if issubclass(w.category, DataHolderWarning)]
        said = ("30 of 930 rows are left out: 30 no user id", "Of 930 rows, 30 without a user id")
        assert any(t.startswith(said) for t in told), told
    halves = whole.assign(id=whole["id"].astype(np.float16))
    model = dplong.PooledOLS.from_formula(
        "y ~ x", dd.from_pandas(halves, npartitions=2), groups="id"
    )
    assert model.nobs_users == 300
    dates = whole.assign(id=pd.Timestamp("2020-01-01") + pd.to_timedelta(whole["id"], "D"))
    with pytest.raises(DataError, match="groups: the ids of 'id' are stored as datetime64"):
        dplong.PooledOLS.from_formula("y ~ x", dd.from_pandas(dates, npartitions=2), groups="id")
    with dask.config.set({"dataframe.convert-string": False}):  # lists, as Parquet stores them
        lists = dd.from_pandas(whole.assign(id=[np.array([i]) for i in ids]), npartitions=2)
    for build in (
        lambda: dplong.PooledOLS.from_formula("y ~ x", lists, groups="id"),
        lambda: ColumnMean.from_formula("y ~ 1", lists, groups="id"),
    ):
        with pytest.raises(DataError, match="groups must be hashable user ids"):
            build()


def test_a_partitions_own_categories_decide_no_declared_level() -> None:
    """A Categorical column whose categories Dask does not know (as Parquet gives it) holds
    each partition's own: declared levels were matched to them with a type inferred from them,
    so a user's 1 matched the level True where the partition's categories were [1, 'a'] and
    was dropped where they were [0, 1] (an audit). Matched value by value, as in memory."""
    from dplong.dask_frames import design_spec, evaluate_rows

    kept = []
    for other in (0, "a"):
        part = pd.DataFrame({"id": ["A", "B"], "y": [1.0, 2.0], "x": pd.Categorical([1, other])})
        rest = pd.DataFrame({"id": ["C"], "y": [3.0], "x": pd.Categorical([0])})
        frame = dd.from_delayed(
            [dask.delayed(part), dask.delayed(rest)], meta=part.iloc[:0], verify_meta=False
        )
        frame = frame.assign(x=frame["x"].cat.as_unknown())
        spec = design_spec("y ~ C(x)", frame, levels={"x": [True, False]}, eval_env=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, X, missing_y, missing_x = evaluate_rows(frame, spec)
        kept.append((bool(not (missing_y | missing_x)[0]), X[0].tolist()))
    assert kept[0] == kept[1] == (True, [1.0, 0.0]), kept
