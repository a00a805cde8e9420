"""The results of a grouped mean (:func:`dplong.winsorized_mean` with ``by=``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from dplong._validation import checked_call
from dplong.results.panel import PanelResults


@dataclass(frozen=True, repr=False, kw_only=True)
class GroupedResults(PanelResults):
    """Results of a grouped mean (:func:`dplong.winsorized_mean` with ``by=``): one mean per
    declared level of a public grouping and per column.

    Everything of :class:`PanelResults` (its parameters are named ``column[by=level]``), plus
    :meth:`summary_frame`, one row per level.

    Attributes
    ----------
    by : str
        The grouping's name.
    levels : tuple
        Its declared levels (public), in the order given.
    columns : tuple of str
        The averaged columns.

    Examples
    --------
    >>> import numpy as np, dplong
    >>> rng = np.random.default_rng(0)
    >>> arm = np.repeat(rng.integers(0, 2, 4_000), 3)  # each user's arm, on all their rows
    >>> y = rng.normal(10.0 + arm, 1.0)
    >>> res = dplong.winsorized_mean(y, groups=np.repeat(np.arange(4_000), 3), by=arm,
    ...                              levels=[0, 1], names=["y"], epsilon=2.0, random_state=0)
    >>> list(res.params.index), res.by, res.levels
    (['y[by=0]', 'y[by=1]'], 'by', (0, 1))
    """

    by: str
    levels: tuple[Any, ...]
    columns: tuple[str, ...]

    @checked_call
    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """One row per declared level: each column's mean, standard error, interval and the
        private count of the users with a value there (clamped to [0, n], post-processing).

        Parameters
        ----------
        alpha : float
            1 - the intervals' level.

        Returns
        -------
        pandas.DataFrame
            Indexed by the levels (named :attr:`by`); columns ``mean``, ``std err``,
            ``lower``, ``upper``, ``users (DP)``, under each averaged column's name (a
            two-level column index) when there are several.

        Examples
        --------
        >>> import numpy as np, dplong
        >>> rng = np.random.default_rng(0)
        >>> arm = np.repeat(rng.integers(0, 2, 4_000), 3)
        >>> y = rng.normal(10.0 + arm, 1.0)
        >>> res = dplong.winsorized_mean(y, groups=np.repeat(np.arange(4_000), 3), by=arm,
        ...                              levels=[0, 1], names=["y"], epsilon=2.0,
        ...                              random_state=0)
        >>> frame = res.summary_frame()
        >>> frame.index.tolist(), frame.columns.tolist()
        ([0, 1], ['mean', 'std err', 'lower', 'upper', 'users (DP)'])
        >>> bool(abs(frame.loc[1, "mean"] - frame.loc[0, "mean"] - 1.0) < 0.2)
        True
        """
        interval = self.conf_int(alpha)
        counts = self.users.clip(0, self.nobs_users)
        labels = [grouped_label(c, self.by, v) for v in self.levels for c in self.columns]
        frame = pd.DataFrame(
            {
                "mean": self.params[labels].to_numpy(),
                "std err": self.bse[labels].to_numpy(),
                "lower": interval.loc[labels, "lower"].to_numpy(),
                "upper": interval.loc[labels, "upper"].to_numpy(),
                # one column released: one count, labelled for the whole release
                "users (DP)": counts.reindex(labels).to_numpy()
                if len(labels) > 1
                else counts.iloc[:1].to_numpy(),
            },
            index=pd.MultiIndex.from_product(
                [list(self.levels), list(self.columns)], names=[self.by, "column"]
            ),
        )
        if len(self.columns) == 1:
            single: pd.DataFrame = frame.droplevel("column")
            return single
        wide: pd.DataFrame = frame.unstack("column").swaplevel(axis=1)
        ordered: pd.DataFrame = wide.reindex(
            index=list(self.levels),
            columns=pd.MultiIndex.from_product([list(self.columns), list(frame.columns)]),
        )
        return ordered


def grouped_label(column: str, by: str, level: Any) -> str:
    """The parameter name of ``column``'s mean at ``level`` of the grouping ``by``.

    Examples
    --------
    >>> from dplong.results import grouped_label
    >>> grouped_label("wage", "year", 1985)
    'wage[year=1985]'
    """
    return f"{column}[{by}={level}]"
