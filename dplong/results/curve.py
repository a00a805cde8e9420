"""The results of a private curve fit (:class:`dplong.PriestleyChao` and the other smoothers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import patsy

from dplong._validation import checked_call
from dplong.bounds import ErrorBoundReport
from dplong.exceptions import ParameterError
from dplong.formula import rhs_design
from dplong.kernels import get_kernel
from dplong.results.panel import PanelResults
from dplong.results.plotting import curve_plot
from dplong.summary import grid_names


@dataclass(frozen=True, repr=False, kw_only=True)
class CurveResults(PanelResults):
    """Results of a private curve fit (:class:`dplong.PriestleyChao`): one parameter per grid
    point, indexed by x.

    Everything of :class:`PanelResults` applies pointwise: ``params`` is the released curve,
    ``conf_int`` gives pointwise bands and ``error_bound`` pointwise bounds, both with the
    smoothing bias where smoothness was stated.

    Attributes
    ----------
    kernel : str
        The kernel's name.
    bandwidth : float
        Bandwidth b, in the units of x (resolved if ``"auto"``).
    domain : (float, float)
        The public domain of x.
    level : {"item", "user"}
        Item-level (public design points) or user-level (each user's curve protected).
    boundary : pandas.Series
        True at grid points within ``ζ = b √(2 log(2/b))`` (Gaussian; ``b`` for a compact
        kernel) of the domain's ends, where Lemma 4.9 gives no guarantee: the kernel loses
        mass there and the estimate is biased toward zero. Not to be trusted as f(x).
    smoothing_bias : pandas.Series
        Bound on the smoothing bias per grid point (item-level with ``lipschitz`` and
        ``sup_norm`` given), else NaN.
    self_normalised : bool
        Whether the estimator divides by its own kernel mass (Nadaraya–Watson), so that the
        boundary does not pull it toward 0 (a public fact of the model).

    Examples
    --------
    >>> import numpy as np, pandas as pd, dplong
    >>> rng = np.random.default_rng(1)
    >>> x = np.arange(10_000) / 10_000
    >>> data = pd.DataFrame({"x": x, "y": x + rng.normal(0, 0.2, x.size)})
    >>> res = dplong.PriestleyChao.from_formula(
    ...     "y ~ x", data, domain=(0, 1), kernel="epanechnikov", bandwidth=0.1, grid=6
    ... ).fit(epsilon=1.0, error_sd=0.2, amplitude=0.5, lipschitz=1.0, sup_norm=1.0,
    ...       random_state=0)
    >>> res.grid.round(3).tolist()
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> res.boundary.tolist()
    [True, False, False, False, False, True]
    >>> bool(abs(res.predict([0.5])[0] - 0.5) < 0.1)
    True
    >>> res  # doctest: +ELLIPSIS
    <PriestleyChao results: item-level, n=10000, epsilon=1, delta=1e-08, 6 grid points ...>
    """

    kernel: str
    bandwidth: float
    domain: tuple[float, float]
    level: str
    boundary: pd.Series
    smoothing_bias: pd.Series
    self_normalised: bool = False

    @property
    def grid(self) -> np.ndarray:
        """The grid points (public), as an array; ``params`` is indexed by them.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(2_000) / 2_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         bandwidth=0.2, grid=3).fit(
        ...     epsilon=1.0, error_sd=1.0, amplitude=0.1, random_state=0)
        >>> res.grid.tolist()
        [0.0, 0.5, 1.0]
        """
        return self.params.index.to_numpy(dtype=float)

    @checked_call
    def curve(self, alpha: float = 0.05) -> pd.DataFrame:
        """The released curve with pointwise (1 - α) bands and the boundary flags.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(5_000) / 5_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         bandwidth=0.1, grid=5).fit(
        ...     epsilon=1.0, error_sd=1.0, amplitude=0.1, random_state=0)
        >>> frame = res.curve(alpha=0.1)
        >>> frame.index.name, frame.columns.tolist()
        ('x', ['estimate', 'lower', 'upper', 'boundary'])
        """
        bands = self.conf_int(alpha)
        frame: pd.DataFrame = pd.DataFrame(
            {
                "estimate": self.params,
                "lower": bands["lower"],
                "upper": bands["upper"],
                "boundary": self.boundary,
            }
        )
        return frame

    @checked_call
    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Pointwise (1 - α) bands; see :meth:`PanelResults.conf_int`. Where smoothness was
        stated (item-level ``lipschitz`` and ``sup_norm``), they allow for the smoothing bias
        too and so concern f(x) itself, as :attr:`pvalues` and the tests do (they give it to
        the null); otherwise they concern the kernel-smoothed curve.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(5_000) / 5_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> model = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                           bandwidth=0.1, grid=5)
        >>> given = dict(epsilon=1.0, error_sd=1.0, amplitude=0.1, random_state=0)
        >>> smooth = model.fit(**given, lipschitz=1.0, sup_norm=0.1)
        >>> plain = model.fit(**given).conf_int()
        >>> bands = smooth.conf_int()
        >>> bool(((bands["upper"] - bands["lower"]) > (plain["upper"] - plain["lower"])).all())
        True
        >>> p = smooth.pvalues                       # 0 outside the band exactly when p < 0.05
        >>> bool(((p < 0.05) == ((bands["lower"] > 0) | (bands["upper"] < 0))).all())
        True
        """
        return super().conf_int(alpha)

    @property
    def _restriction_names(self) -> list[str]:
        """A grid point's name in the text of a restriction (:meth:`t_test`, :meth:`wald_test`):
        ``x=<point>`` with the point as the summary labels it (``"x=0.6 - x=0.2 = 0"``), so
        that a bare number is a constant. With the points' own texts ``"0.6 - 0.2 = 0"`` read
        one point as a constant (0.6 is the double 0.6000000000000001 of ``np.linspace(0, 1,
        6)``), and ``"0.6 = 0"`` on a grid holding 0 would read two points."""
        return list(grid_names(self.grid))

    @property
    def _null_bias(self) -> pd.Series:
        """The clipping bias bound plus the smoothing bias where smoothness was stated."""
        return self.bias + self.smoothing_bias.fillna(0.0)

    @checked_call
    def predict(self, x: object) -> pd.Series | np.ndarray:
        """The curve at new points by linear interpolation between grid points.

        Post-processing of the released values: no further privacy cost. Points outside the
        grid's range are refused (no extrapolation); a missing point (NaN) is predicted NaN.

        Parameters
        ----------
        x : array_like or pandas.DataFrame
            The points, or a DataFrame with the column(s) the formula's regressor reads (it
            is evaluated on it, as :meth:`RegressionResults.predict
            <dplong.results.RegressionResults.predict>` evaluates a DataFrame; a row with a
            missing value is predicted NaN).

        Returns
        -------
        pandas.Series (indexed like a DataFrame ``x``) or numpy.ndarray

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(5_000) / 5_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         bandwidth=0.1, grid=5).fit(
        ...     epsilon=1.0, error_sd=1.0, amplitude=0.1, random_state=0)
        >>> bool(res.predict([0.25])[0] == res.params.loc[0.25])
        True
        >>> res.predict([1.5])
        Traceback (most recent call last):
        ...
        dplong.exceptions.ParameterError: x must lie within the grid [0, 1]; got values up to 1.5
        """
        index = x.index if isinstance(x, pd.DataFrame) else None
        if isinstance(x, pd.DataFrame):
            x = self._regressor(x, patsy.EvalEnvironment.capture(1))
        raw = np.atleast_1d(np.asarray(x))
        if raw.size == 0:
            raise ParameterError("x is empty: give one or more points")
        if raw.dtype.kind not in "iuf":
            raise ParameterError(f"x must be one or more real numbers, got dtype {raw.dtype}")
        points = raw.astype(np.float64)
        grid = self.grid
        given = points[~np.isnan(points)]
        if np.isinf(given).any():
            raise ParameterError("x must be finite (NaN for a missing point)")
        if given.size and (given.min() < grid[0] or given.max() > grid[-1]):
            above = given.max() > grid[-1]
            worst, side = (given.max(), "up to") if above else (given.min(), "down to")
            raise ParameterError(
                f"x must lie within the grid [{grid[0]:g}, {grid[-1]:g}]; got values {side} "
                f"{worst:g}"
            )
        with np.errstate(invalid="ignore"):
            values = np.where(np.isnan(points), np.nan, np.interp(points, grid, self.params))
        if index is None:
            return np.asarray(values)
        predicted: pd.Series = pd.Series(values, index=index, name="predicted")
        return predicted

    def _regressor(self, frame: pd.DataFrame, env: patsy.EvalEnvironment) -> np.ndarray:
        """The formula's regressor evaluated on ``frame`` (NaN: a missing value)."""
        spec, data = rhs_design(self.formula, frame, env)
        _, X, _, missing = spec.evaluate(data, predicting=True)
        column = next(j for j, name in enumerate(spec.columns) if name != "Intercept")
        return np.where(missing, np.nan, X[:, column])

    @checked_call
    def error_bound(self, alpha: float = 0.05) -> ErrorBoundReport:
        """Pointwise bounds on ``|estimate - f(x)|``; see :meth:`PanelResults.error_bound`.

        Item-level with stated smoothness, a ``smoothing bias`` column (exact on the public
        design) is added to the total. Boundary points keep their numbers, but the flag column says
        Lemma 4.9 does not cover them.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(5_000) / 5_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         bandwidth=0.1, grid=5).fit(
        ...     epsilon=1.0, error_sd=1.0, amplitude=0.1, lipschitz=1.0, sup_norm=0.1,
        ...     random_state=0)
        >>> res.error_bound().table.columns.tolist()  # doctest: +NORMALIZE_WHITESPACE
        ['privacy noise', 'statistical', 'bias', 'smoothing bias', 'total', 'bad events',
         'probability', 'boundary']
        """
        report = super().error_bound(alpha)
        table = report.table.copy()
        table.insert(3, "smoothing bias", self.smoothing_bias)
        if self.smoothing_bias.notna().all():
            table["total"] = table["total"] + self.smoothing_bias
        table["boundary"] = self.boundary
        return ErrorBoundReport(table, report.assumptions, report.basis)

    @checked_call
    def plot(self, ax: Any = None, *, alpha: float = 0.05) -> Any:
        """Plot the curve with pointwise (1 - α) bands; boundary regions are shaded.

        Needs matplotlib (``pip install "dplong[plot]"``). Returns the matplotlib Axes.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(5_000) / 5_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         bandwidth=0.1, grid=9).fit(
        ...     epsilon=1.0, error_sd=1.0, amplitude=0.1, random_state=0)
        >>> ax = res.plot()
        >>> ax.get_xlabel()
        'x'
        """
        return curve_plot(self, ax, alpha=alpha)

    @property
    def boundary_width(self) -> float:
        """ζ: points closer than this to either end of the domain are boundary points.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(2_000) / 2_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         kernel="epanechnikov", bandwidth=0.2,
        ...                                         grid=3).fit(
        ...     epsilon=1.0, error_sd=1.0, amplitude=0.1, random_state=0)
        >>> res.boundary_width, res.boundary.tolist()          # b · support = 0.2
        (0.2, [True, False, True])
        """
        return get_kernel(self.kernel).boundary_width(self.bandwidth, self.domain)

    @property
    def _privacy_unit(self) -> str:
        return self.level

    def _summary_info(self) -> dict[str, object]:
        info = super()._summary_info()
        info["Users (n):" if self.level == "user" else "Items (n):"] = info.pop("Users (n):")
        info |= {
            "Level:": self.level,
            "Kernel:": self.kernel,
            "Bandwidth:": f"{self.bandwidth:.4g}",
            "Grid points:": self.params.size,
        }
        return info

    @property
    def boundary_effect(self) -> str:
        """What the boundary flag means for this level of curve (public facts)."""
        if self.level == "user":
            return (
                "the kernel is cut off there; each user's curve is renormalised by its kernel "
                "mass, so it is not pulled toward 0, but the smoothing is one-sided and "
                "Lemma 4.9's bias bound does not cover it"
            )
        if self.self_normalised:  # a ratio: renormalised by its own degree
            return (
                "the kernel is cut off there; Nadaraya–Watson divides by the kernel's mass, so "
                "it is not pulled toward 0, but the smoothing is one-sided (a slope biases it)"
            )
        return "the kernel loses mass there and the estimate is biased toward 0"

    def _summary_notes(self) -> tuple[str, ...]:
        notes = super()._summary_notes()
        if self.boundary.any():
            notes += (
                f"{int(self.boundary.sum())} grid points lie in the boundary region (within "
                f"ζ of the domain's ends, Lemma 4.9): {self.boundary_effect}.",
            )
        return notes

    def __repr__(self) -> str:
        return (
            f"<{self.model} results: {self.level}-level, n={self.nobs_users}, "
            f"epsilon={self.privacy.epsilon:.4g}, delta={self.privacy.delta:.3g}, "
            f"{self.params.size} grid points on [{self.domain[0]:g}, {self.domain[1]:g}], "
            f"bandwidth={self.bandwidth:.4g}>"
        )
