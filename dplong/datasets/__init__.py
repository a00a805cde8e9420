"""Small real panel data sets shipped with dplong.

Each data set lives in its own folder of this package, as a gzip-compressed
CSV file next to a ``DESCR.rst`` file that describes the variables and cites
the original source.  The files are read with :mod:`importlib.resources`, so
the loaders work from a source tree as well as from an installed wheel.

In dplong these data are treated as *private*: each unit (a person or a pig)
is one user whose whole trajectory is protected, and only the number of users
``n`` is taken to be public.

Functions
---------
load_wage_panel
    Vella and Verbeek (1998) wage panel: 545 men observed 1980-1987.
load_dietox
    Growth of 72 pigs weighed weekly (Lauridsen, Højsgaard and Sørensen, 1999).
load_randhie
    RAND Health Insurance Experiment: 5,912 persons, 20,190 person-years
    (read from the copy inside statsmodels).
descr
    The description (``DESCR.rst``) of a data set, as text.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Final, Literal

import numpy as np
import pandas as pd

from dplong.exceptions import ParameterError

__all__ = ["DATASETS", "DatasetName", "descr", "load_dietox", "load_randhie", "load_wage_panel"]

DatasetName = Literal["wage_panel", "dietox", "randhie"]
"""Names of the data sets shipped with dplong."""

DATASETS: Final[tuple[DatasetName, ...]] = ("wage_panel", "dietox", "randhie")
"""Names of the data sets shipped with dplong, in the order documented above."""

_WAGE_PANEL_DTYPES: Final[dict[str, type[np.generic]]] = {
    "nr": np.int64,
    "year": np.int64,
    "black": np.int64,
    "exper": np.int64,
    "hisp": np.int64,
    "hours": np.int64,
    "married": np.int64,
    "educ": np.int64,
    "union": np.int64,
    "lwage": np.float64,
    "expersq": np.int64,
    "occupation": np.int64,
}

_DIETOX_DTYPES: Final[dict[str, type[np.generic]]] = {
    "Weight": np.float64,
    "Feed": np.float64,
    "Time": np.int64,
    "Pig": np.int64,
    "Evit": np.int64,
    "Cu": np.int64,
    "Litter": np.int64,
    "Start": np.float64,
}


def _check_name(name: str) -> DatasetName:
    if name == "wage_panel":
        return "wage_panel"
    if name == "dietox":
        return "dietox"
    if name == "randhie":
        return "randhie"
    raise ParameterError(f"unknown data set {name!r}; expected one of {DATASETS}")


def _read_csv(name: DatasetName, dtypes: dict[str, type[np.generic]]) -> pd.DataFrame:
    """Read ``<name>/<name>.csv.gz`` from the package data with fixed dtypes."""
    resource = files(__name__).joinpath(name).joinpath(f"{name}.csv.gz")
    with resource.open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip", dtype=dtypes)
    expected = list(dtypes)
    if list(df.columns) != expected:  # pragma: no cover - guards a corrupted file
        raise RuntimeError(
            f"data file of {name!r} has columns {list(df.columns)}, expected {expected}"
        )
    return df


def descr(name: DatasetName) -> str:
    """Return the description of a shipped data set.

    Parameters
    ----------
    name : {"wage_panel", "dietox", "randhie"}
        Name of the data set.

    Returns
    -------
    str
        The text of the data set's ``DESCR.rst`` (reStructuredText): the
        variables and their units, the number of units and rows, the citation
        of the original study and where dplong's copy came from.

    Raises
    ------
    ValueError
        If `name` is not the name of a shipped data set.

    Examples
    --------
    >>> from dplong.datasets import descr
    >>> text = descr("wage_panel")
    >>> "Vella" in text and "Verbeek" in text
    True
    """
    checked = _check_name(name)
    return files(__name__).joinpath(checked).joinpath("DESCR.rst").read_text(encoding="utf-8")


def load_wage_panel() -> pd.DataFrame:
    """Load the wage panel of Vella and Verbeek (1998).

    A balanced panel of 545 young men in the United States, each observed in
    every year from 1980 to 1987 (4360 rows), with the log hourly wage, union
    membership, marital status, work experience and schooling.  The copy
    shipped with dplong is the one distributed with the ``linearmodels``
    package; it is the same data as Wooldridge's ``wagepan``.  See
    ``descr("wage_panel")`` for the variables and the full citation.

    Returns
    -------
    pandas.DataFrame
        One row per person and year, sorted by ``nr`` then ``year``, with the
        columns ``nr`` (person id), ``year``, ``black``, ``exper``, ``hisp``,
        ``hours``, ``married``, ``educ``, ``union``, ``lwage``, ``expersq``
        and ``occupation``.  ``lwage`` is ``float64``; every other column is
        ``int64``.  There are no missing values.

    Notes
    -----
    In dplong each man is one user: his 8 rows are protected together, and
    only the number of users ``n = 545`` is public.

    References
    ----------
    F. Vella and M. Verbeek (1998), "Whose wages do unions raise? A dynamic
    model of unionism and wage rate determination for young men", *Journal
    of Applied Econometrics* 13(2), 163-183.

    Examples
    --------
    >>> from dplong.datasets import load_wage_panel
    >>> df = load_wage_panel()
    >>> df.shape
    (4360, 12)
    >>> df["nr"].nunique()
    545
    >>> sorted(df["year"].unique().tolist()) == list(range(1980, 1988))
    True
    >>> round(float(df["lwage"].mean()), 4)
    1.6491
    """
    return _read_csv("wage_panel", _WAGE_PANEL_DTYPES)


def load_dietox() -> pd.DataFrame:
    """Load the dietox data: weekly weights of 72 pigs.

    Growth curves of 72 slaughter pigs in a 3 x 3 factorial experiment on
    dietary vitamin E and copper (Lauridsen, Højsgaard and Sørensen, 1999),
    weighed weekly for up to 12 weeks (861 rows; 69 pigs have 12 weighings
    and 3 have 11).  Distributed with the R package geepack; the copy shipped
    with dplong comes from the ``statsmodels`` test data.  See
    ``descr("dietox")`` for the variables, units and the full citation.

    Returns
    -------
    pandas.DataFrame
        One row per pig and week, sorted by ``Pig`` then ``Time``, with the
        columns ``Weight`` (kg), ``Feed`` (cumulated feed intake, kg),
        ``Time`` (week, 1-12), ``Pig`` (pig id), ``Evit`` (vitamin E dose
        level, 1-3), ``Cu`` (copper dose level, 1-3), ``Litter`` (litter id)
        and ``Start`` (weight at week 1, kg).  ``Weight``, ``Feed`` and
        ``Start`` are ``float64``; the other columns are ``int64``.

    Notes
    -----
    ``Feed`` is missing (NaN) at ``Time == 1`` for every pig (72 values), as
    in the source, which gives no cumulated feed intake for the first
    weighing.  These NaN are kept; no other value is missing.

    In dplong each pig is one user: its weighings are protected together, and
    only the number of users ``n = 72`` is public.

    References
    ----------
    C. Lauridsen, S. Højsgaard and M. T. Sørensen (1999), "Influences of
    dietary rapeseed oil, vitamin E, and copper on the performance and the
    antioxidative and oxidative status of pigs", *Journal of Animal Science*
    77(4), 906-916.

    Examples
    --------
    >>> from dplong.datasets import load_dietox
    >>> df = load_dietox()
    >>> df.shape
    (861, 8)
    >>> df["Pig"].nunique()
    72
    >>> int(df["Feed"].isna().sum())
    72
    """
    return _read_csv("dietox", _DIETOX_DTYPES)


def load_randhie() -> pd.DataFrame:
    """Load the RAND Health Insurance Experiment person-years.

    5,912 persons (``zper``) followed for one to five years (20,190 rows),
    with medical spending, visits, the randomised coinsurance rate and
    demographics.  The CSV is read from the ``statsmodels`` installation
    (``statsmodels/datasets/randhie/src/randhie.csv``): no copy is shipped
    and nothing is downloaded.  The data are in the public domain.  See
    ``descr("randhie")`` for the variables and references.

    Returns
    -------
    pandas.DataFrame
        One row per person and year, sorted by ``zper`` then ``year``, with
        the 45 columns of the source in its order.  Missing values (NaN)
        occur only in ``educdec``, ``ghindx``, ``mdeoff``, ``pioff`` and
        ``lnmeddol`` and are kept as in the source.

    Notes
    -----
    In dplong each person is one user: all of their years are protected
    together, and only the number of users ``n = 5912`` is public.
    Spending (``meddol``) is zero in about a third of the person-years and
    has a long right tail: it is the package's reference for skewed
    outcomes.

    Examples
    --------
    >>> from dplong.datasets import load_randhie
    >>> df = load_randhie()
    >>> df.shape
    (20190, 45)
    >>> df["zper"].nunique()
    5912
    >>> round(float(df.groupby("zper")["meddol"].mean().mean()), 1)
    172.8
    """
    import statsmodels  # the runtime dependency that ships the file

    path = Path(str(statsmodels.__file__)).parent / "datasets" / "randhie" / "src" / "randhie.csv"
    if not path.is_file():  # pragma: no cover - a statsmodels build without its data
        raise RuntimeError(f"the RAND HIE file is missing from statsmodels: {path}")
    df: pd.DataFrame = pd.read_csv(path).sort_values(["zper", "year"], kind="stable")
    df.index = pd.RangeIndex(len(df))
    return df
