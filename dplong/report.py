"""Self-contained HTML report of a private fit: one file, no external resources.

The report shows what :meth:`PanelResults.summary <dplong.results.PanelResults.summary>` and
:meth:`~dplong.results.PanelResults.error_bound` hold — differentially private outputs and public
facts only (docs/design §1) — plus whatever public context the caller passes (the name of the data,
the command line). A curve (:class:`~dplong.results.CurveResults`, one parameter per grid point)
gets a curve plot with its pointwise bands instead of one axis per parameter, its grid column
named after the formula's regressor, and the boundary points marked in the error-bound table.

Styles are inline, plots are PNG data URIs (matplotlib, the ``plot`` extra; without it the report
says that plots are unavailable), and a small inline script marks the body
``data-rendered="ok"`` once loaded, recording any script or image error in the page, so that a
browser test can tell a clean render from a broken one.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

import dplong
from dplong.results import CurveResults, PanelResults

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["build_report", "write_report"]

_CSS = """
:root { --ink: #1f2328; --muted: #59636e; --rule: #d1d9e0; --code: #f6f8fa; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--ink); max-width: 62rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.15rem; border-bottom: 1px solid var(--rule); padding-bottom: 0.2rem;
     margin-top: 2rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5rem 0; }
th, td { padding: 0.2rem 0.7rem; border-bottom: 1px solid var(--rule); text-align: right; }
thead th { border-bottom: 2px solid var(--ink); }
tbody th { text-align: left; }
pre { background: var(--code); padding: 0.6rem; white-space: pre-wrap; overflow-wrap: anywhere; }
table.facts td, table.ledger td:nth-child(-n+2), table.ledger th:nth-child(-n+2) {
  text-align: left;
}
.muted { color: var(--muted); }
img { max-width: 100%; height: auto; }
#report-errors { color: #b00020; }
"""

# Records script errors and undecodable images in the page, then marks the render.
_SCRIPT = """
(function () {
  "use strict";
  var errors = [], loaded = false;
  function show(message) {
    var list = document.getElementById("report-errors");
    var item = document.createElement("li");
    item.textContent = message;
    list.appendChild(item);
    list.hidden = false;
  }
  function record(message) {
    errors.push(String(message));
    if (loaded) { show(String(message)); document.body.dataset.rendered = "error"; }
  }
  window.onerror = function (message, source, line) {
    record(message + " (line " + line + ")");
  };
  window.addEventListener("load", function () {
    Array.prototype.forEach.call(document.images, function (image) {
      if (!image.complete || image.naturalWidth === 0) { record("image failed: " + image.alt); }
    });
    loaded = true;
    errors.forEach(show);
    document.body.dataset.rendered = errors.length ? "error" : "ok";
  });
})();
"""

# Only inline styles, inline scripts and data: images may load: the file is self-contained.
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def build_report(
    results: PanelResults,
    *,
    alpha: float = 0.05,
    data_name: str | None = None,
    command: str | None = None,
    notes: Sequence[str] = (),
) -> str:
    """HTML text of a self-contained report on a fit.

    Parameters
    ----------
    results : PanelResults
        The fit. Only its private outputs and public facts enter the report.
    alpha : float
        1 - confidence level of the intervals and error bounds.
    data_name : str, optional
        Public name of the data (a file name, ``dataset:wage_panel``).
    command : str, optional
        The command line or code that produced the fit (public: the analyst's arguments).
    notes : sequence of str
        Further public remarks, shown under the header.

    Returns
    -------
    str
        A complete HTML document: header, estimates, error bounds with their assumptions,
        plots, privacy ledger and notes.

    Examples
    --------
    >>> import dplong
    >>> from dplong.report import build_report
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> page = build_report(res, data_name="dataset:wage_panel")
    >>> page.startswith("<!DOCTYPE html>"), 'id="error-bounds"' in page, "exper" in page
    (True, True, True)
    >>> "http://" in page or "https://" in page     # nothing to fetch
    False

    A curve gets a curve plot, and its grid is labelled by the regressor:

    >>> pigs = dplong.datasets.load_dietox()
    >>> curve = dplong.PriestleyChao.from_formula(
    ...     "Weight ~ Time", pigs, groups="Pig", domain=(1, 12), bandwidth=1.0, grid=6
    ... ).fit(epsilon=16.0, scale=250.0, random_state=0)
    >>> page = build_report(curve, data_name="dataset:dietox")
    >>> 'alt="curve plot"' in page, "<th>Time</th>" in page, "boundary" in page
    (True, True, True)
    """
    summary = results.summary(alpha)
    bounds = results.error_bound(alpha)
    level = f"{1 - alpha:.4g}"
    params_table = summary.params
    bounds_table, bounds_note = bounds.table, ""
    if isinstance(results, CurveResults):
        params_table, bounds_table, bounds_note = _curve_tables(results, params_table, bounds_table)
        plot = _curve_plot(results, alpha, bounds.table["total"])
    else:
        plot = _coefficient_plot(results.params, results.conf_int(alpha), bounds.table["total"])
    unit = _privacy_unit(results)
    sections = [_header(summary.title, summary.info, data_name, command, notes, unit)]
    if summary.warnings:
        sections.append(
            _section(
                "reliability",
                "Reliability warnings",
                _paragraph(
                    "Read these before using the estimates: each says what makes this fit "
                    "unreliable and what would fix it."
                )
                + _list(summary.warnings),
            )
        )
    sections += [
        _section(
            "estimates",
            "Estimates",
            _table(params_table)
            + _paragraph(
                f"Standard errors combine sampling (under the stated scale) and privacy noise; "
                f"the intervals have confidence level {level}."
            ),
        ),
        _section(
            "error-bounds",
            "Error bounds",
            _paragraph(
                "Each estimate is within <em>total</em> of the truth with at least the stated "
                "probability, if the assumptions below hold; where a cell is empty, no bound is "
                "claimed." + bounds_note
            )
            + _table(bounds_table)
            + "<h3>Assumptions</h3>"
            + _list(bounds.assumptions),
        ),
        _section("plots", "Plots", plot),
        _section(
            "privacy-ledger",
            "Privacy ledger",
            _paragraph(
                f"Total spent: ε = {results.privacy.epsilon:.6g}, "
                f"δ = {results.privacy.delta:.3g} ({html.escape(results.privacy.model)} model; "
                f"{html.escape(results.privacy.composition)} composition). One row per "
                "stage; below, one row per mechanism call. Nothing else about the data was "
                "released."
            )
            + _table(summary.privacy, index=False, css_class="ledger")
            + "<details><summary>Every mechanism call</summary>"
            + _table(results.privacy.to_frame(), index=False, css_class="ledger")
            + "</details>",
        ),
    ]
    if summary.notes:
        sections.append(_section("notes", "Notes", _list(summary.notes, ordered=True)))
    title = html.escape(f"{results.model}: dplong report")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{title}</title>",
            f"<style>{_CSS}</style>",
            f"<script>{_SCRIPT}</script>",
            "</head>",
            "<body>",
            *sections,
            "<footer>",
            _paragraph(
                "This report holds only differentially private outputs and public facts: the "
                f"number of {_COUNTED[unit]}, the formula and the arguments of the fit. "
                f"Made by dplong {html.escape(dplong.__version__)}.",
            ),
            '<ul id="report-errors" hidden></ul>',
            "</footer>",
            "</body>",
            "</html>",
            "",
        ]
    )


def write_report(
    path: str | os.PathLike[str],
    results: PanelResults,
    *,
    alpha: float = 0.05,
    data_name: str | None = None,
    command: str | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """Write :func:`build_report` to ``path`` (UTF-8).

    Parameters
    ----------
    path : str or os.PathLike
        The HTML file to write (replaced if it exists).
    results, alpha, data_name, command, notes
        As in :func:`build_report`.

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import tempfile, pathlib, dplong
    >>> from dplong.report import write_report
    >>> pigs = dplong.datasets.load_dietox()
    >>> model = dplong.RandomEffectsLocation.from_formula("Weight ~ 1", pigs, groups="Pig")
    >>> res = model.fit(epsilon=4.0, scale=400.0, variance_share=0, random_state=0)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_report(pathlib.Path(tmp) / "pigs.html", res, data_name="dietox")
    ...     "RandomEffectsLocation" in out.read_text(encoding="utf-8")
    True
    """
    target = Path(path)
    page = build_report(results, alpha=alpha, data_name=data_name, command=command, notes=notes)
    target.write_text(page, encoding="utf-8")
    return target


#: What the report says each unit of privacy is protected as, and what its n counts.
_PROTECTED = {
    "user": "All rows of a user are protected together; only the number of users and the "
    "arguments of the fit are public.",
    "item": "Every row is a unit, protected on its own (item-level privacy); only the number "
    "of rows and the arguments of the fit are public.",
}
_COUNTED = {"user": "users", "item": "rows"}


def _privacy_unit(results: PanelResults) -> str:
    """What the fit protects (``"user"`` or ``"item"``), as its results say: the unit its
    summary's title names (``user-level`` or ``item-level differential privacy``)."""
    unit = str(getattr(results, "_privacy_unit", "user"))
    if unit not in _PROTECTED:
        raise ValueError(f"results protect {unit!r}; the report knows {sorted(_PROTECTED)}")
    return unit


def _header(
    title: str,
    info: pd.DataFrame,
    data_name: str | None,
    command: str | None,
    notes: Sequence[str],
    unit: str = "user",
) -> str:
    facts = info
    if data_name is not None:
        facts = pd.concat([pd.DataFrame({"value": [data_name]}, index=["Data:"]), facts])
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        _paragraph(_PROTECTED[unit], muted=True),
        _table(facts, header=False, css_class="facts"),
    ]
    if command is not None:
        parts.append(f"<pre><code>{html.escape(command)}</code></pre>")
    parts += [_paragraph(html.escape(note)) for note in notes]
    return f'<header id="fit">\n{"".join(parts)}\n</header>'


def _section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}">\n<h2>{html.escape(title)}</h2>\n{body}\n</section>'


def _paragraph(text: str, *, muted: bool = False) -> str:
    return f"<p{' class=muted' if muted else ''}>{text}</p>"


def _list(items: Sequence[str], *, ordered: bool = False) -> str:
    tag = "ol" if ordered else "ul"
    return f"<{tag}>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + f"</{tag}>"


def _number(value: float) -> str:
    return f"{value:.4g}"


def _table(
    frame: pd.DataFrame, *, index: bool = True, header: bool = True, css_class: str | None = None
) -> str:
    rendered: str = frame.to_html(
        index=index,
        header=header,
        classes=css_class,
        float_format=_number,
        na_rep="",
        border=0,
        escape=True,
    )
    return rendered


def _formula_sides(formula: str) -> tuple[str, str]:
    """The outcome and the regressor of ``"y ~ x"`` (public: the analyst's formula)."""
    lhs, _, rhs = formula.partition("~")
    return lhs.strip() or "y", rhs.strip() or "x"


def _curve_tables(
    results: CurveResults, params: pd.DataFrame, bounds: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """A curve's tables for the report: the grid named by the regressor, the boundary points
    marked, and a smoothing-bias column that is empty everywhere (no smoothness stated) left
    out."""
    regressor = _formula_sides(results.formula)[1]
    params = params.rename_axis(regressor)
    bounds = bounds.rename_axis(regressor)
    note = ""
    if "smoothing bias" in bounds and bounds["smoothing bias"].isna().all():
        bounds = bounds.drop(columns="smoothing bias")
        note = " No smoothing bias is claimed: the bounds concern the kernel-smoothed curve" + (
            " (the mean of the users' smoothed curves)." if results.level == "user" else "."
        )
    if "boundary" in bounds:
        bounds = bounds.assign(boundary=np.where(bounds["boundary"].astype(bool), "yes", ""))
        note += (
            " Grid points marked <em>boundary</em> lie within ζ of the domain's ends (the "
            f"paper's Lemma 4.9): {results.boundary_effect}."
        )
    return params, bounds, note


def _matplotlib_missing() -> str:
    return _paragraph(
        'Plots are unavailable: matplotlib is not installed (pip install "dplong[plot]").'
    )


def _png(figure: Figure, alt: str, caption: str) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{encoded}">'
        f"<figcaption class=muted>{caption}</figcaption></figure>"
    )


def _curve_plot(results: CurveResults, alpha: float, bound: pd.Series) -> str:
    """The released curve over the grid: pointwise bands, error-bound envelope, boundary."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return _matplotlib_missing()
    figure = Figure(figsize=(7.0, 4.2), layout="constrained")
    ax = figure.subplots()
    try:
        results.plot(ax, alpha=alpha)
    except ImportError:  # pyplot, which CurveResults.plot imports, is unavailable
        return _matplotlib_missing()
    grid = results.grid
    estimate = results.params.to_numpy(dtype=float)
    total = bound.reindex(results.params.index).to_numpy(dtype=float)
    claimed = np.isfinite(total)
    if claimed.any():
        style: dict[str, Any] = {"ls": "--", "lw": 1.2, "color": "#e39b2d"}
        ax.plot(grid[claimed], (estimate + total)[claimed], label="error bound", **style)
        ax.plot(grid[claimed], (estimate - total)[claimed], **style)
        ax.legend(loc="best")
    outcome, regressor = _formula_sides(results.formula)
    ax.set_xlabel(regressor)
    ax.set_ylabel(outcome)
    return _png(
        figure,
        "curve plot",
        f"The released curve at its {grid.size} grid points with pointwise {1 - alpha:.4g} "
        "bands and the error-bound envelope (estimate ± total, dashed; missing where none is "
        f"claimed). Grey: the boundary regions, where {results.boundary_effect}.",
    )


def _coefficient_plot(params: pd.Series, conf_int: pd.DataFrame, bound: pd.Series) -> str:
    """One row per parameter, each on its own scale: estimate, interval and error bound."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
    except ImportError:
        return _matplotlib_missing()
    names = list(params.index)
    figure = Figure(figsize=(7.0, 0.9 + 0.7 * len(names)), layout="constrained")
    axes = figure.subplots(len(names), 1, squeeze=False)[:, 0]
    colours = {"estimate": "#1f2328", "interval": "#0b5cad", "bound": "#e39b2d"}
    for ax, name in zip(axes, names, strict=True):
        estimate = float(params[name])
        half = float(bound[name])
        if math.isfinite(half):
            ax.plot([estimate - half, estimate + half], [0, 0], lw=2, color=colours["bound"])
        lower, upper = float(conf_int.loc[name, "lower"]), float(conf_int.loc[name, "upper"])
        if math.isfinite(lower) and math.isfinite(upper):
            ax.plot([lower, upper], [0, 0], lw=6, color=colours["interval"])
        ax.plot([estimate], [0], "o", color=colours["estimate"])
        ax.set_yticks([0], [str(name)])
        ax.set_ylim(-1, 1)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    handles = [
        Line2D([], [], marker="o", ls="", color=colours["estimate"], label="estimate"),
        Line2D([], [], lw=6, color=colours["interval"], label="confidence interval"),
        Line2D([], [], lw=2, color=colours["bound"], label="error bound"),
    ]
    figure.legend(handles=handles, loc="outside upper center", ncols=3, frameon=False)
    return _png(
        figure,
        "coefficient plot",
        "Each parameter on its own axis: the estimate, its confidence interval and its "
        "error-bound interval (estimate ± total); missing where none is claimed.",
    )
