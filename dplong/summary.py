"""Summary of a fit: data (DataFrames) kept apart from rendering (text, HTML, LaTeX)."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd
from statsmodels.iolib.table import SimpleTable


def _format(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return "" if np.isnan(value) else f"{value:.4g}"
    return str(value)


def _table(
    frame: pd.DataFrame, title: str | None = None, index: bool = True, headers: bool = True
) -> SimpleTable:
    data = [[_format(v) for v in row] for row in frame.itertuples(index=False)]
    stubs = [str(i) for i in frame.index] if index else None
    return SimpleTable(
        data,
        headers=[str(c) for c in frame.columns] if headers else None,
        stubs=stubs,
        title=title,
        txt_fmt={"data_aligns": "r"},
    )


@dataclass(frozen=True)
class Summary:
    """What a summary shows: a header of public facts, the parameter table, the ledger's
    digest, reliability warnings and notes.

    Render with ``str()`` / :meth:`as_text`, :meth:`as_html` (also used by Jupyter) or
    :meth:`as_latex`. The DataFrames are available for your own reports.

    Attributes
    ----------
    title : str
        Title of the header table.
    info : pandas.DataFrame
        Public facts (model, formula, n, ε, δ, ...), one row each in a column ``value``.
    params : pandas.DataFrame
        One row per parameter: estimate, standard error, noise sd, interval.
    privacy : pandas.DataFrame
        The privacy ledger's digest (:meth:`PrivacyLedger.digest`), one row per stage.
    notes : tuple of str
        Numbered notes printed below the tables.
    warnings : tuple of str
        Reliability warnings, printed before the notes under a heading of their own.

    Examples
    --------
    Usually obtained from a fit (``results.summary()``); here built by hand:

    >>> import pandas as pd
    >>> from dplong.summary import Summary
    >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
    >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
    >>> ledger = pd.DataFrame({"mechanism": ["lattice Laplace"], "epsilon": [1.0]})
    >>> s = Summary("Demo results", info, params, ledger, notes=("A note.",))
    >>> print(s)  # doctest: +NORMALIZE_WHITESPACE
           Demo results
    ==========================
    Model: demo Users (n): 100
    --------------------------
    ===================
       estimate std err
    -------------------
    mu      1.5     0.1
    -------------------
    Privacy ledger (one row per stage)
    =======================
       mechanism    epsilon
    -----------------------
    lattice Laplace       1
    -----------------------
    [1] A note.
    """

    title: str
    info: pd.DataFrame
    params: pd.DataFrame
    privacy: pd.DataFrame
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def _tables(self) -> list[SimpleTable]:
        half = (len(self.info) + 1) // 2
        left = self.info.iloc[:half].reset_index()
        right = self.info.iloc[half:].reset_index()
        right = right.reindex(range(half)).fillna("")
        header = pd.concat([left, right], axis=1)
        return [
            _table(header, title=self.title, index=False, headers=False),
            _table(self.params),
            _table(self.privacy, title="Privacy ledger (one row per stage)", index=False),
        ]

    def as_text(self) -> str:
        """Plain-text rendering: the three tables, then the numbered notes.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
        >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
        >>> ledger = pd.DataFrame({"mechanism": ["lattice Laplace"], "epsilon": [1.0]})
        >>> s = Summary("Demo results", info, params, ledger, notes=("A note.",))
        >>> text = s.as_text()
        >>> text == str(s), text.splitlines()[-1]
        (True, '[1] A note.')
        """
        parts = [t.as_text() for t in self._tables()]
        if self.warnings:
            parts.append("RELIABILITY WARNINGS:")
            parts += [f"  ! {warning}" for warning in self.warnings]
        if self.notes:
            parts.append("\n".join(f"[{i}] {note}" for i, note in enumerate(self.notes, 1)))
        return "\n".join(parts)

    def as_html(self) -> str:
        """HTML rendering (used by Jupyter): three ``<table>`` elements and a ``<p>`` per note.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
        >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
        >>> ledger = pd.DataFrame({"mechanism": ["lattice Laplace"], "epsilon": [1.0]})
        >>> s = Summary("Demo results", info, params, ledger, notes=("A note.",))
        >>> html = s.as_html()
        >>> html.count("<table"), html.splitlines()[-1]
        (3, '<p>[1] A note.</p>')
        """
        parts = [t.as_html() for t in self._tables()]
        if self.warnings:
            items = "".join(f"<li>{html.escape(w)}</li>" for w in self.warnings)
            parts.append(
                f'<div class="dplong-warnings"><strong>Reliability warnings</strong>'
                f"<ul>{items}</ul></div>"
            )
        parts += [f"<p>[{i}] {html.escape(note)}</p>" for i, note in enumerate(self.notes, 1)]
        return "\n".join(parts)

    def as_latex(self) -> str:
        """LaTeX rendering: three ``tabular`` environments (booktabs rules), then the notes.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
        >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
        >>> ledger = pd.DataFrame({"mechanism": ["lattice Laplace"], "epsilon": [1.0]})
        >>> s = Summary("Demo results", info, params, ledger, notes=("A note.",))
        >>> latex = s.as_latex()
        >>> latex.count("begin{tabular}"), "toprule" in latex
        (3, True)
        """
        parts = [t.as_latex_tabular() for t in self._tables()]
        parts += [f"Reliability warning: {w}\\\\" for w in self.warnings]
        parts += [f"[{i}] {note}\\\\" for i, note in enumerate(self.notes, 1)]
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()
