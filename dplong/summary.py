"""Summary of a fit: data (DataFrames) kept apart from rendering (text, HTML, LaTeX)."""

from __future__ import annotations

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


def _table(frame: pd.DataFrame, title: str | None = None, index: bool = True) -> SimpleTable:
    data = [[_format(v) for v in row] for row in frame.itertuples(index=False)]
    stubs = [str(i) for i in frame.index] if index else None
    return SimpleTable(
        data,
        headers=[str(c) for c in frame.columns],
        stubs=stubs,
        title=title,
        txt_fmt={"data_aligns": "r"},
    )


@dataclass(frozen=True)
class Summary:
    """What a summary shows: a header of public facts, the parameter table, the ledger.

    Render with ``str()`` / :meth:`as_text`, :meth:`as_html` (also used by Jupyter) or
    :meth:`as_latex`. The DataFrames are available for your own reports.
    """

    title: str
    info: pd.DataFrame
    params: pd.DataFrame
    privacy: pd.DataFrame
    notes: tuple[str, ...]

    def _tables(self) -> list[SimpleTable]:
        half = (len(self.info) + 1) // 2
        left = self.info.iloc[:half].reset_index()
        right = self.info.iloc[half:].reset_index()
        right = right.reindex(range(half)).fillna("")
        header = pd.concat([left, right], axis=1)
        header.columns = ["", " ", "  ", "   "]
        return [
            _table(header, title=self.title, index=False),
            _table(self.params),
            _table(self.privacy, title="Privacy ledger", index=False),
        ]

    def as_text(self) -> str:
        parts = [t.as_text() for t in self._tables()]
        if self.notes:
            parts.append("\n".join(f"[{i}] {note}" for i, note in enumerate(self.notes, 1)))
        return "\n".join(parts)

    def as_html(self) -> str:
        parts = [t.as_html() for t in self._tables()]
        parts += [f"<p>[{i}] {note}</p>" for i, note in enumerate(self.notes, 1)]
        return "\n".join(parts)

    def as_latex(self) -> str:
        parts = [t.as_latex_tabular() for t in self._tables()]
        parts += [f"[{i}] {note}\\\\" for i, note in enumerate(self.notes, 1)]
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()
