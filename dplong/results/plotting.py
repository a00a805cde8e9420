"""The plots of results: a forest plot of the estimates and a curve with its bands.

They need matplotlib (``pip install "dplong[plot]"``), imported only when a plot is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dplong.exceptions import MissingDependencyError, ParameterError

if TYPE_CHECKING:
    from dplong.results.curve import CurveResults
    from dplong.results.panel import PanelResults


def forest_plot(results: PanelResults, ax: Any = None, *, alpha: float = 0.05) -> Any:
    """Each estimate with its (1 - α) confidence interval on one axis (``results.plot``)."""
    ax = _axes(ax, (6.0, 1.0 + 0.45 * results.params.size))
    ci = results.conf_int(alpha)
    rows = np.arange(results.params.size)[::-1]  # the first parameter on top
    estimate = results.params.to_numpy()
    ax.errorbar(
        estimate,
        rows,
        xerr=np.vstack([estimate - ci["lower"], ci["upper"] - estimate]),
        fmt="o",
        capsize=3,
        label=f"estimate, {1 - alpha:.0%} interval",
    )
    ax.axvline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(rows, [str(name) for name in results.params.index])
    ax.set_ylim(-0.6, results.params.size - 0.4)
    ax.set_title(f"{results.model}: {results.formula}")
    ax.legend(loc="best")
    return ax


def curve_plot(results: CurveResults, ax: Any = None, *, alpha: float = 0.05) -> Any:
    """The curve with pointwise (1 - α) bands, boundary regions shaded (``results.plot``)."""
    frame = results.curve(alpha)
    ax = _axes(ax, (6.0, 4.0))
    grid = results.grid
    ax.fill_between(grid, frame["lower"], frame["upper"], alpha=0.25, label=f"{1 - alpha:.0%} band")
    ax.plot(grid, frame["estimate"], marker="o", markersize=3, label="private estimate")
    lo, hi = results.domain
    zeta = min(results.boundary_width, (hi - lo) / 2.0)
    for start, stop in ((lo, lo + zeta), (hi - zeta, hi)):
        ax.axvspan(start, stop, color="grey", alpha=0.15, lw=0)
    ax.set_xlabel(results.params.index.name or "x")
    ax.set_ylabel("f(x)")
    ax.set_title(f"{results.model}: {results.formula} (shaded: boundary)")
    ax.legend(loc="best")
    return ax


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    """``ax`` if it is a matplotlib Axes, else a new figure's of this size (None)."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.axes import Axes
    except ImportError:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            'plotting needs matplotlib: pip install "dplong[plot]"'
        ) from None
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    elif not isinstance(ax, Axes):
        raise ParameterError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return ax
