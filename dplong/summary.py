"""Summary of a fit: data (DataFrames) kept apart from rendering (text, HTML, LaTeX)."""

from __future__ import annotations

import ast
import csv
import functools
import html
import io
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from statsmodels.iolib.table import SimpleTable

from dplong._validation import check_alpha, checked_call
from dplong.exceptions import ParameterError

if TYPE_CHECKING:
    from dplong.results import PanelResults

__all__ = ["Comparison", "Summary", "compare", "grid_names", "plain_names", "point_labels"]


def point_labels(points: np.ndarray) -> list[str]:
    """Labels of a curve's grid points: six significant digits, or as many more (up to 16)
    as keep distinct points apart (0.1234567 and 0.1234568 were both 0.123457), else each
    double's shortest text (0.3 and 0.30000000000000004).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.summary import point_labels
    >>> point_labels(np.array([0.1, 0.30000000000000004]))
    ['0.1', '0.3']
    >>> point_labels(np.array([0.1234567, 0.1234568]))
    ['0.1234567', '0.1234568']
    >>> point_labels(np.array([0.3, 0.30000000000000004, 0.7]))
    ['0.3', '0.30000000000000004', '0.7']
    """
    for digits in range(6, 17):
        labels = [f"{x:.{digits}g}" for x in points]
        if len(set(labels)) == len(labels):
            return labels
    return [repr(float(x)) for x in points]  # the shortest text of each double: distinct


def grid_names(points: np.ndarray) -> tuple[str, ...]:
    """The curve's column labels ``x=<point>``, the summary's labels of its points
    (:func:`~dplong.summary.point_labels`: distinct for distinct points).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.summary import grid_names
    >>> grid_names(np.array([0.1234567, 0.1234568]))
    ('x=0.1234567', 'x=0.1234568')
    """
    return tuple(f"x={label}" for label in point_labels(points))


def _format(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return "" if np.isnan(value) else f"{value:.4g}"
    return str(value)


def _resolve_estimates(shown: pd.DataFrame, params: pd.DataFrame) -> None:
    """Show each row's estimate and interval ends to two significant digits of its standard
    error, at least the four of :func:`_format`: 1e6 + 0.5 with a std err of 0.03 reads
    1000000.500, not 1e+06 (in place; the DataFrames keep full precision)."""
    if "estimate" not in params or "std err" not in params:
        return
    numbers = [c for c in params.columns if c == "estimate" or c.startswith("[") or c.endswith("]")]
    values = params[numbers].apply(pd.to_numeric, errors="coerce")
    estimate = values["estimate"].to_numpy(dtype=float)
    error = pd.to_numeric(params["std err"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.floor(np.log10(np.abs(estimate))) - np.floor(np.log10(error))
    for row in np.flatnonzero(np.isfinite(gap) & (gap + 2 > 4)).tolist():
        digits = int(min(gap[row] + 2, 17))
        name = shown.index[row]
        for column in numbers:
            value = float(values.iloc[row][column])
            if np.isfinite(value) and shown.at[name, column] != "":
                shown.at[name, column] = f"{value:.{digits}g}"


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


def _html(table: SimpleTable) -> str:
    """``table`` as HTML, every cell and the title escaped (statsmodels writes them raw: a
    formula's ``I(exper<educ)`` opened a tag)."""
    for row in table:
        for cell in row:
            cell.data = html.escape(str(cell.data))
    if table.title:
        table.title = html.escape(str(table.title))
    return str(table.as_html())


#: LaTeX's special characters as text (statsmodels escapes a tabular's cells, not the lines
#: around it: a note's ``22%`` commented out the rest of its line).
_LATEX = {c: f"\\{c}" for c in "%&#_${}"} | {
    "\\": r"\textbackslash{}",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
}


def _latex(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX.get(c, c) for c in text)


#: The widest a summary's text may be; notes wrap to the tables' width within it.
MAX_WIDTH = 100


@dataclass(frozen=True)
class Summary:
    """What a summary shows: a header of public facts, the parameter table, the ledger's
    digest, reliability warnings and notes.

    Render with ``str()`` / :meth:`as_text`, :meth:`as_html` (also used by Jupyter) or
    :meth:`as_latex`. The text is meant to be taken in at a glance: the ledger is one line
    (the full ledger is ``print(results.privacy)``), a withheld parameter says why in a word,
    warnings that differ only in their numbers and column names are said once, and notes wrap
    to the tables' width (at most :data:`MAX_WIDTH` columns). The DataFrames are available for
    your own reports.

    Attributes
    ----------
    title : str
        Title of the header table.
    info : pandas.DataFrame
        Public facts (model, formula, n, ε, δ, ...), one row each in a column ``value``.
    params : pandas.DataFrame
        One row per parameter: estimate, standard error, p-value, noise sd, bias bound, interval.
    privacy : pandas.DataFrame
        The privacy ledger's digest (:meth:`PrivacyLedger.digest`), one row per stage and a
        ``total`` row.
    notes : tuple of str
        Numbered notes printed below the tables.
    warnings : tuple of str
        Reliability warnings, printed before the notes under a heading of their own.
    withheld : pandas.Series
        Why each withheld parameter (NaN) has no estimate, in a word; indexed by those
        parameters.

    Examples
    --------
    Usually obtained from a fit (``results.summary()``); here built by hand:

    >>> import pandas as pd
    >>> from dplong.summary import Summary
    >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
    >>> params = pd.DataFrame({"estimate": [1.5, float("nan")], "std err": [0.1, float("nan")]},
    ...                       index=["mu", "sigma"])
    >>> ledger = pd.DataFrame({"stage": ["mean", "total"], "calls": [1, 1],
    ...                        "epsilon": [1.0, 1.0], "delta": [0.0, 0.0]})
    >>> s = Summary("Demo results", info, params, ledger, notes=("A note.",),
    ...             withheld=pd.Series({"sigma": "missed"}))
    >>> print(s)  # doctest: +NORMALIZE_WHITESPACE
           Demo results
    ==========================
    Model: demo Users (n): 100
    --------------------------
    ==============================
              estimate     std err
    ------------------------------
    mu                 1.5     0.1
    sigma withheld: missed
    ------------------------------
    Privacy spent: epsilon 1, delta 0 (1 call; ledger: results.privacy)
    [1] A note.
    """

    title: str
    info: pd.DataFrame
    params: pd.DataFrame
    privacy: pd.DataFrame
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    withheld: pd.Series = field(default_factory=lambda: pd.Series(dtype=object))

    def _header(self) -> SimpleTable:
        """The public facts in two column pairs, or in one where two would be too wide."""
        for pairs in (2, 1):
            rows = -(-len(self.info) // pairs)
            parts = [self.info.iloc[k * rows : (k + 1) * rows].reset_index() for k in range(pairs)]
            parts = [part.reindex(range(rows)).fillna("") for part in parts]
            table = _table(pd.concat(parts, axis=1), title=self.title, index=False, headers=False)
            if pairs == 1 or _width(table.as_text()) <= MAX_WIDTH:
                return table
        raise AssertionError("unreachable")  # pragma: no cover

    def _params(self) -> pd.DataFrame:
        """The parameter table as shown: a withheld row says why in its estimate cell."""
        shown: pd.DataFrame = self.params.astype(object)
        for name, why in self.withheld.items():
            if name in shown.index:
                shown.loc[name] = ""
                shown.loc[name, shown.columns[0]] = f"withheld: {why}"
        _resolve_estimates(shown, self.params)
        if shown.index.dtype.kind == "f":
            # a curve's grid points, named as its warnings name them: 0.3, not
            # 0.30000000000000004 (np.linspace's)
            shown.index = pd.Index(point_labels(shown.index.to_numpy()), name=shown.index.name)
        return shown

    def _tables(self) -> list[SimpleTable]:
        return [self._header(), _table(self._params())]

    @property
    def ledger_line(self) -> str:
        """The ledger's total in one line: what was spent, in how many calls, and where the
        full ledger is (``print(results.privacy)``; the digest is :attr:`privacy`).

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> ledger = pd.DataFrame({"stage": ["count", "mean", "total"], "calls": [1, 2, 3],
        ...                        "epsilon": [0.1, 0.9, 1.0], "delta": [0.0, 1e-6, 1e-6]})
        >>> Summary("t", pd.DataFrame({"value": []}), pd.DataFrame(), ledger, ()).ledger_line
        'Privacy spent: epsilon 1, delta 1e-06 (3 calls; ledger: results.privacy)'
        """
        total = self.privacy.iloc[-1]  # the digest's total row
        calls = int(total["calls"])
        return (
            f"Privacy spent: epsilon {float(total['epsilon']):.4g}, delta "
            f"{float(total['delta']):.3g} ({calls} call{'s' * (calls != 1)}; ledger: "
            "results.privacy)"
        )

    @property
    def said_warnings(self) -> tuple[str, ...]:
        """The warnings as the summary says them: those that differ only in their numbers and
        bracketed column names once, with how many more columns they concern.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> said = ("['a']: 12% of users clipped.", "['b']: 15% of users clipped.", "Other.")
        >>> s = Summary("t", pd.DataFrame({"value": []}), pd.DataFrame(), pd.DataFrame(), (),
        ...             warnings=said)
        >>> s.said_warnings
        ("['a']: 12% of users clipped. (Similar for ['b'].)", 'Other.')
        """
        groups: dict[str, list[str]] = {}
        for warning in self.warnings:
            groups.setdefault(_template(warning), []).append(warning)
        out = []
        for members in groups.values():
            first, others = members[0], members[1:]
            names = [name for other in others for name in _names(other)]
            if others:
                listed = (
                    str(list(dict.fromkeys(names))) if names else f"{len(others)} more releases"
                )
                first = f"{first} (Similar for {listed}.)"
            out.append(first)
        return tuple(out)

    def as_text(self) -> str:
        """Plain text: the header and parameter tables, the ledger in one line, the warnings
        and the numbered notes, wrapped to the tables' width.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
        >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
        >>> ledger = pd.DataFrame({"stage": ["mean", "total"], "calls": [1, 1],
        ...                        "epsilon": [1.0, 1.0], "delta": [0.0, 0.0]})
        >>> s = Summary("Demo results", info, params, ledger, notes=("A note. " * 8,))
        >>> text = s.as_text()
        >>> note = text[text.index("[1] "):].splitlines()  # wrapped to 60 columns at least
        >>> text == str(s), len(note), max(len(line) for line in note) <= 60
        (True, 2, True)
        """
        tables = [t.as_text() for t in self._tables()]
        width = max(_width(t) for t in tables)
        wrap = functools.partial(_wrap, width=width)
        parts = [*tables, _wrap(self.ledger_line, width=MAX_WIDTH)]  # one line
        if self.warnings:
            parts.append("RELIABILITY WARNINGS:")
            parts += [wrap(w, first="  ! ", rest="    ") for w in self.said_warnings]
        parts += [
            wrap(note, first=f"[{i}] ", rest=" " * (len(str(i)) + 3))
            for i, note in enumerate(self.notes, 1)
        ]
        return "\n".join(parts)

    def as_html(self) -> str:
        """HTML rendering (used by Jupyter): the two tables, the ledger's line with the
        digest table in a collapsible ``<details>``, the warnings and a ``<p>`` per note.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
        >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
        >>> ledger = pd.DataFrame({"stage": ["mean", "total"], "calls": [1, 1],
        ...                        "epsilon": [1.0, 1.0], "delta": [0.0, 0.0]})
        >>> s = Summary("Demo results", info, params, ledger, notes=("A note.",))
        >>> html = s.as_html()
        >>> html.count("<table"), "<details>" in html, html.splitlines()[-1]
        (3, True, '<p>[1] A note.</p>')
        """
        parts = [_html(t) for t in self._tables()]
        ledger = _html(_table(self.privacy, index=False))
        parts.append(
            f"<details><summary>{html.escape(self.ledger_line)}</summary>{ledger}</details>"
        )
        if self.warnings:
            items = "".join(f"<li>{html.escape(w)}</li>" for w in self.said_warnings)
            parts.append(
                f'<div class="dplong-warnings"><strong>Reliability warnings</strong>'
                f"<ul>{items}</ul></div>"
            )
        parts += [f"<p>[{i}] {html.escape(note)}</p>" for i, note in enumerate(self.notes, 1)]
        return "\n".join(parts)

    def as_latex(self) -> str:
        """LaTeX rendering: two ``tabular`` environments (booktabs rules), the ledger's line,
        the warnings and the notes.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Summary
        >>> info = pd.DataFrame({"value": ["demo", 100]}, index=["Model:", "Users (n):"])
        >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
        >>> ledger = pd.DataFrame({"stage": ["mean", "total"], "calls": [1, 1],
        ...                        "epsilon": [1.0, 1.0], "delta": [0.0, 0.0]})
        >>> s = Summary("Demo results", info, params, ledger, notes=("A note.",))
        >>> latex = s.as_latex()
        >>> latex.count("begin{tabular}"), "toprule" in latex
        (2, True)
        """
        parts = [t.as_latex_tabular() for t in self._tables()]
        parts.append(f"{_latex(self.ledger_line)}\\\\")
        parts += [f"Reliability warning: {_latex(w)}\\\\" for w in self.said_warnings]
        parts += [f"[{i}] {_latex(note)}\\\\" for i, note in enumerate(self.notes, 1)]
        return "\n".join(parts)

    def as_csv(self) -> str:
        """CSV rendering of what the text shows: the title, the public facts (name, value),
        the parameter table with its header, the ledger's line, the warnings and the notes,
        one per row, blocks apart by an empty row. Numbers as the text shows them (4
        significant digits, an estimate more where its std err needs them); for full
        precision write the DataFrames (:attr:`params`, :attr:`info`) with pandas'
        ``to_csv``.

        Examples
        --------
        >>> import csv, pandas as pd
        >>> from dplong.summary import Summary
        >>> info = pd.DataFrame({"value": ["demo, a model", 100]}, index=["Model:", "Users (n):"])
        >>> params = pd.DataFrame({"estimate": [1.5], "std err": [0.1]}, index=["mu"])
        >>> ledger = pd.DataFrame({"stage": ["mean", "total"], "calls": [1, 1],
        ...                        "epsilon": [1.0, 1.0], "delta": [0.0, 0.0]})
        >>> text = Summary("Demo", info, params, ledger, ()).as_csv()
        >>> for row in csv.reader(text.splitlines()):
        ...     print(row)
        ['Demo']
        ['Model:', 'demo, a model']
        ['Users (n):', '100']
        []
        ['', 'estimate', 'std err']
        ['mu', '1.5', '0.1']
        []
        ['Privacy spent: epsilon 1, delta 0 (1 call; ledger: results.privacy)']
        """
        shown = self._params()
        rows: list[list[str]] = [[self.title]]
        rows += [[str(name), _format(value)] for name, value in self.info["value"].items()]
        rows += [[], ["", *map(str, shown.columns)]]
        rows += [[str(name), *map(_format, row)] for name, row in shown.iterrows()]
        rows += [[], [self.ledger_line]]
        rows += [[f"Reliability warning: {w}"] for w in self.said_warnings]
        rows += [[f"[{i}] {note}"] for i, note in enumerate(self.notes, 1)]
        return _csv(rows)

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


def _csv(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as CSV text (quoted where a cell needs it)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def _width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _wrap(text: str, *, width: int, first: str = "", rest: str = "") -> str:
    """``text`` wrapped to ``width`` (at least 60, at most :data:`MAX_WIDTH` columns)."""
    width = min(max(width, 60), MAX_WIDTH)
    return textwrap.fill(
        text, width=width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False
    )


#: Numbers (with a sign, decimals, an exponent or a percent sign), and lists of column names as
#: Python prints them (``['a', "Z'X[b,c]"]``).
_NUMBER = re.compile(r"[-+]?\d[\d.,]*(?:e[-+]?\d+)?%?")
_QUOTED = r"""(?:'[^']*'|"[^"]*")"""
_NAMES = re.compile(rf"\[{_QUOTED}(?:, {_QUOTED})*\]")


#: The within estimator's release labels (:func:`dplong.models.within.within_blocks`:
#: ``Z'Z[a,a]``, ``Z'X[a,b]``, ``Z'y[a]``, the early Newton steps' ``step1[a]``,
#: ``step2[a]``, the last's ``influence[a]``) and how a reader is told them.
_LABEL_WORDS = {
    "Z'Z[": "{} (within variation)",
    "Z'X[": "{} with {} (within)",
    "Z'y[": "{} with the outcome (within)",
    "step1[": "{} (first Newton step)",
    "step2[": "{} (second Newton step)",
    "influence[": "{} (estimate)",
}


def plain_names(text: str) -> str:
    """``text`` with the within estimator's release labels, in the lists of column names that
    notes print, said in the formula's names of the regressors.

    The ledger keeps the labels (each names one released statistic); warnings, summaries and
    reports say which regressors a note concerns.

    Examples
    --------
    >>> from dplong.summary import plain_names
    >>> note = str(["Z'X[exper,C(year)[T.1981]]", "influence[married]"]) + ": clipped."
    >>> print(note)
    ["Z'X[exper,C(year)[T.1981]]", 'influence[married]']: clipped.
    >>> print(plain_names(note))
    ['exper with C(year)[T.1981] (within)', 'married (estimate)']: clipped.
    """
    return _NAMES.sub(
        lambda found: str([_plain_label(str(x)) for x in ast.literal_eval(found.group(0))]), text
    )


def _plain_label(label: str) -> str:
    """One release label in words (any other name as it is)."""
    prefix = next((p for p in _LABEL_WORDS if label.startswith(p) and label.endswith("]")), None)
    if prefix is None:
        return label
    inner = label[len(prefix) : -1]
    if prefix not in ("Z'Z[", "Z'X["):
        return _LABEL_WORDS[prefix].format(inner)
    # a pair of names: split at the comma outside every bracket of both (names may hold
    # commas and brackets, as C(year)[T.1981] does)
    pairs = [
        (inner[:i], inner[i + 1 :])
        for i, char in enumerate(inner)
        if char == "," and _balanced(inner[:i]) and _balanced(inner[i + 1 :])
    ]
    if prefix == "Z'Z[":
        pairs = [(a, b) for a, b in pairs if a == b]
        return _LABEL_WORDS[prefix].format(pairs[0][0]) if pairs else label
    return _LABEL_WORDS[prefix].format(*pairs[0]) if len(pairs) == 1 else label


def _balanced(name: str) -> bool:
    """Whether every bracket of ``name`` closes within it."""
    depth = 0
    for char in name:
        depth += (char in "([{") - (char in ")]}")
        if depth < 0:
            return False
    return depth == 0


#: A warning that opens with one quoted column name (``'a': heavy tail ...``).
_LEADING = re.compile(rf"^{_QUOTED}(?=:)")


def _template(warning: str) -> str:
    """A warning with its column names (in lists, or the one it opens with) and its numbers
    blanked: warnings with the same template say the same thing of different columns."""
    return _NUMBER.sub("#", _NAMES.sub("[]", _LEADING.sub("''", warning)))


def _names(warning: str) -> list[str]:
    """The column names in a warning's lists (``['a', 'b']`` gives a and b), or the one it
    opens with."""
    leading = [str(ast.literal_eval(found)) for found in _LEADING.findall(warning)]
    listed = [str(name) for found in _NAMES.findall(warning) for name in ast.literal_eval(found)]
    return leading + listed


@dataclass(frozen=True)
class Comparison:
    """Several fits side by side: the numbers (DataFrames) apart from their rendering.

    Built by :func:`compare`. Render with ``str()`` / :meth:`as_text`, :meth:`as_html` (also
    used by Jupyter) or :meth:`as_latex`; :meth:`to_frame` gives the numbers in one frame.

    Attributes
    ----------
    params, std_errors, lower, upper : pandas.DataFrame
        Parameters x fits: estimates, standard errors and the (1 - α) interval's ends; NaN
        where a fit has no such parameter or withheld it.
    withheld : pandas.DataFrame
        Parameters x fits: True where a fit has the parameter but released no estimate.
    info : pandas.DataFrame
        Public facts x fits: model, formula, users n, ε and δ spent (each fit's ledger
        total), noise law.
    alpha : float
        1 - the intervals' level.
    intervals : bool
        Whether the rendering shows intervals (else standard errors) under the estimates.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.summary import Comparison
    >>> frame = pd.DataFrame({"A": [1.5], "B": [1.25]}, index=["mu"])
    >>> info = pd.DataFrame({"A": ["Mean", 100], "B": ["Mean", 200]}, index=["Model", "Users (n)"])
    >>> c = Comparison(frame, frame / 10, frame - 0.3, frame + 0.3, frame < 0, info, 0.05, False)
    >>> print(c)  # doctest: +NORMALIZE_WHITESPACE
    ========================
                A       B
    ------------------------
    mu           1.5    1.25
              (0.15) (0.125)
    ------------------------
    Model       Mean    Mean
    Users (n)    100     200
    ------------------------
    Standard errors in parentheses (sampling error and privacy noise).
    """

    params: pd.DataFrame
    std_errors: pd.DataFrame
    lower: pd.DataFrame
    upper: pd.DataFrame
    withheld: pd.DataFrame
    info: pd.DataFrame
    alpha: float
    intervals: bool

    def to_frame(self) -> pd.DataFrame:
        """The numbers in one frame: parameters x (fit, statistic).

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Comparison
        >>> f = pd.DataFrame({"A": [1.5]}, index=["mu"])
        >>> info = pd.DataFrame({"A": ["Mean"]}, index=["Model"])
        >>> c = Comparison(f, f / 10, f - 0.3, f + 0.3, f < 0, info, 0.05, False)
        >>> c.to_frame().columns.tolist()
        [('A', 'estimate'), ('A', 'std err'), ('A', 'lower'), ('A', 'upper')]
        """
        parts = {"estimate": self.params, "std err": self.std_errors}
        parts |= {"lower": self.lower, "upper": self.upper}
        frame = pd.concat(parts, axis=1).swaplevel(axis=1)
        ordered: pd.DataFrame = frame[
            pd.MultiIndex.from_product([self.params.columns, list(parts)])
        ]
        return ordered

    def _cells(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The parameter block (two rows per parameter) and the facts block, as text."""
        labels: list[str] = []
        rows: list[list[str]] = []
        params, sds = self.params.to_numpy(float), self.std_errors.to_numpy(float)
        lower, upper = self.lower.to_numpy(float), self.upper.to_numpy(float)
        withheld = self.withheld.to_numpy(bool)
        for i, name in enumerate(self.params.index):
            estimate, below = [], []
            for j in range(params.shape[1]):
                estimate.append("withheld" if withheld[i, j] else _format(params[i, j]))
                if self.intervals:
                    finite = math.isfinite(lower[i, j]) and math.isfinite(upper[i, j])
                    text = f"[{_format(lower[i, j])}, {_format(upper[i, j])}]"
                else:
                    finite, text = math.isfinite(sds[i, j]), f"({_format(sds[i, j])})"
                below.append(text if finite else "")
            labels += [str(name), ""]  # the second row's stub stays blank
            rows += [estimate, below]
        block = pd.DataFrame(rows, index=labels, columns=self.params.columns)
        facts = self.info.map(_format)
        if self._formula is not None:  # said once in the note, not in every column
            facts = facts.drop(index="Formula")
        return block, facts

    @property
    def _formula(self) -> str | None:
        """The formula every fit shares, when there are several fits and they share one."""
        if "Formula" not in self.info.index or self.info.shape[1] < 2:
            return None
        formulas = set(self.info.loc["Formula"].map(str))
        return formulas.pop() if len(formulas) == 1 else None

    def _tables(self) -> list[SimpleTable]:
        block, facts = self._cells()
        return [_table(pd.concat([block, facts]))]

    @property
    def _note(self) -> str:
        shared = "" if self._formula is None else f"Every fit: {self._formula}. "
        if self.intervals:
            return (
                f"{shared}{1 - self.alpha:.0%} confidence intervals in brackets (sampling "
                "error, privacy noise and the clipping bias bound)."
            )
        return f"{shared}Standard errors in parentheses (sampling error and privacy noise)."

    def as_text(self) -> str:
        """Plain text: one table (estimates with standard errors or intervals beneath, then
        the facts of each fit) and a note.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Comparison
        >>> f = pd.DataFrame({"A": [1.5]}, index=["mu"])
        >>> info = pd.DataFrame({"A": ["Mean"]}, index=["Model"])
        >>> c = Comparison(f, f / 10, f - 0.3, f + 0.3, f < 0, info, 0.05, True)
        >>> text = c.as_text()  # the note below the table, wrapped to its width
        >>> text.index("95% confidence intervals in brackets") > text.index("Model")
        True
        """
        block, facts = self._cells()
        text = _table(pd.concat([block, facts])).as_text()
        # a rule between the parameters and the facts
        lines = text.splitlines()
        rule = lines[-1]
        cut = 3 + len(block)
        return "\n".join([*lines[:cut], rule, *lines[cut:], _wrap(self._note, width=_width(text))])

    def as_html(self) -> str:
        """HTML: one ``<table>`` and the note.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Comparison
        >>> f = pd.DataFrame({"A": [1.5]}, index=["mu"])
        >>> info = pd.DataFrame({"A": ["Mean"]}, index=["Model"])
        >>> c = Comparison(f, f / 10, f - 0.3, f + 0.3, f < 0, info, 0.05, False)
        >>> c.as_html().count("<table")
        1
        """
        return "\n".join([*(_html(t) for t in self._tables()), f"<p>{html.escape(self._note)}</p>"])

    def as_latex(self) -> str:
        """LaTeX: one ``tabular`` (booktabs rules) and the note.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.summary import Comparison
        >>> f = pd.DataFrame({"A": [1.5]}, index=["mu"])
        >>> info = pd.DataFrame({"A": ["Mean"]}, index=["Model"])
        >>> c = Comparison(f, f / 10, f - 0.3, f + 0.3, f < 0, info, 0.05, False)
        >>> c.as_latex().count("begin{tabular}")
        1
        """
        return "\n".join([*(t.as_latex_tabular() for t in self._tables()), _latex(self._note)])

    def as_csv(self) -> str:
        """CSV rendering of the table the text shows (the fits' names, each parameter's
        estimates with their standard errors or intervals in the row beneath, the facts of
        each fit) and the note. Numbers as the text shows them; for full precision write
        :meth:`to_frame` with pandas' ``to_csv``.

        Examples
        --------
        >>> import csv, pandas as pd
        >>> from dplong.summary import Comparison
        >>> f = pd.DataFrame({"A": [1.5], "B": [2.0]}, index=["mu"])
        >>> info = pd.DataFrame({"A": ["Mean"], "B": ["Mean"]}, index=["Model"])
        >>> c = Comparison(f, f / 10, f - 0.3, f + 0.3, f < 0, info, 0.05, True)
        >>> rows = list(csv.reader(c.as_csv().splitlines()))
        >>> for row in rows[:-1]:
        ...     print(row)
        ['', 'A', 'B']
        ['mu', '1.5', '2']
        ['', '[1.2, 1.8]', '[1.7, 2.3]']
        ['Model', 'Mean', 'Mean']
        []
        >>> rows[-1][0].startswith("95% confidence intervals in brackets")
        True
        """
        block, facts = self._cells()
        table = pd.concat([block, facts])
        rows = [["", *map(str, table.columns)]]
        rows += [[str(name), *row] for name, row in zip(table.index, table.to_numpy(), strict=True)]
        return _csv([*rows, [], [self._note]])

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


@checked_call
def compare(
    results: Mapping[str, PanelResults] | Sequence[PanelResults] | PanelResults,
    *more: PanelResults,
    alpha: float = 0.05,
    intervals: bool = False,
) -> Comparison:
    """Several fits side by side, like linearmodels' ``compare`` or statsmodels' ``summary_col``.

    Each fit's estimates with their standard errors (or, ``intervals=True``, their (1 - α)
    confidence intervals) beneath, and its public facts: model, formula, users n, the ε and δ
    it spent (its ledger's total) and the noise law; a formula every fit shares is said once,
    below the table. Only released numbers and public facts: a post-processing, at no privacy
    cost.

    Parameters
    ----------
    results : mapping of str to results, sequence of results, or results
        The fits, named by the mapping's keys (a sequence's are numbered ``(1)``, ``(2)``, ...).
    *more : results
        Further fits after a first one given alone: ``compare(fit1, fit2)`` is
        ``compare([fit1, fit2])``.
    alpha : float
        1 - the level of the intervals, from 1e-15 to 1 - 1e-15.
    intervals : bool
        Show intervals instead of standard errors under the estimates.

    Returns
    -------
    Comparison
        Print it, render it (``as_html``, ``as_latex``) or take its DataFrames.

    Examples
    --------
    >>> import warnings
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     fits = {"per-user": model.fit(epsilon=4.0, random_state=0),
    ...             "within": model.fit(epsilon=4.0, estimator="within", random_state=0)}
    >>> table = dplong.compare(fits)
    >>> table.params.columns.tolist(), table.params.index.tolist()
    (['per-user', 'within'], ['Intercept', 'exper'])
    >>> float(table.params.at["exper", "within"]) == float(fits["within"].params["exper"])
    True
    >>> table.info.loc["Epsilon spent"].tolist()
    ['4', '4']
    >>> dplong.compare(fits["per-user"], fits["within"]).params.columns.tolist()
    ['(1)', '(2)']
    """
    from dplong.results import PanelResults  # the results render through here

    if isinstance(results, PanelResults):
        results = [results, *more]
    elif more:
        raise ParameterError(
            "compare takes one mapping or sequence of fits, or the fits one by one "
            "(compare(fit1, fit2)); got a "
            f"{type(results).__name__} followed by more"
        )
    given: object = results  # untyped callers: a string is no sequence of fits
    if isinstance(results, Mapping):
        named = {str(key): value for key, value in results.items()}
        if len(named) < len(results):  # 1 and "1" would be one column: a fit dropped
            raise ParameterError(
                f"results' names {list(results)} read alike as column names: name the fits apart"
            )
    elif isinstance(results, Sequence) and not isinstance(given, str):
        named = {f"({i})": value for i, value in enumerate(results, 1)}
    else:
        raise ParameterError(
            f"results must be a mapping of names to fits or a sequence of fits, got "
            f"{type(results).__name__}"
        )
    if not named:
        raise ParameterError("results must hold at least one fit")
    wrong = [name for name, value in named.items() if not isinstance(value, PanelResults)]
    if wrong:
        raise ParameterError(f"results {wrong} are not dplong results")
    if not isinstance(intervals, bool):
        raise ParameterError(f"intervals must be True or False, got {intervals!r}")
    alpha = check_alpha(alpha)
    order = list(dict.fromkeys(name for fit in named.values() for name in fit.params.index))

    def frame(values: Mapping[str, pd.Series]) -> pd.DataFrame:
        out: pd.DataFrame = pd.DataFrame(
            {name: series.reindex(order) for name, series in values.items()}, index=order
        )
        return out

    ci = {name: fit.conf_int(alpha) for name, fit in named.items()}
    info = pd.DataFrame(
        {
            name: {
                "Model": str(fit.model),
                "Formula": fit.formula,
                "Users (n)": fit.nobs_users,
                "Epsilon spent": f"{fit.privacy.epsilon:.4g}",
                "Delta spent": f"{fit.privacy.delta:.3g}",
                "Noise": fit.noise_law,
            }
            for name, fit in named.items()
        }
    )
    return Comparison(
        params=frame({name: fit.params for name, fit in named.items()}),
        std_errors=frame({name: fit.bse for name, fit in named.items()}),
        lower=frame({name: c["lower"] for name, c in ci.items()}),
        upper=frame({name: c["upper"] for name, c in ci.items()}),
        withheld=frame({name: fit.params.isna() for name, fit in named.items()}).fillna(False),
        info=info,
        alpha=alpha,
        intervals=intervals,
    )
