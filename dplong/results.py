"""One results design for every model: immutable, built once, DP outputs and public facts only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dplong.bounds import ErrorBoundReport, error_bound_table
from dplong.exceptions import ParameterError
from dplong.inference import half_widths, p_values
from dplong.kernels import get_kernel
from dplong.privacy.accounting import PrivacyLedger
from dplong.summary import Summary

__all__ = ["CurveResults", "PanelResults"]


@dataclass(frozen=True, repr=False, kw_only=True)
class PanelResults:
    """Results of a private panel model fit (and of :func:`dplong.winsorized_mean`).

    Everything here is a differentially private output or a public fact (the number of users,
    the formula, the analyst's assumptions, the budget); no raw value, row count or per-user
    statistic is kept (see the privacy contract in the user guide).

    Attributes
    ----------
    params : pandas.Series
        Private estimates, named by the design columns.
    noise_scale : pandas.Series
        Scale of the privacy noise in each estimate: Laplace b, or the Gaussian's σ.
    noise_sd : pandas.Series
        Standard deviation of the privacy noise in each estimate.
    noise_law : str
        ``"laplace"``, ``"gaussian"`` or ``"normal"`` (local model: a sum of n draws).
    sampling_sd : pandas.Series
        Standard deviation of the non-private estimator under the stated or estimated scale
        (``√(scale / N̂)``); NaN where no assumption gives it.
    bias : pandas.Series
        Bound on the bias from clipping the per-user statistics (0: none is expected).
    projection_interval : pandas.DataFrame
        Private projection intervals of the per-user statistics.
    failed : pandas.Series
        ``variant="theory"`` only: where the paper's private midpoint failed and fell back to 0.
    privacy : PrivacyLedger
        Every mechanism call and the composed (ε, δ); :meth:`PrivacyLedger.digest` summarises it.
    nobs_users : int
        Number of users n (public).
    users : pandas.Series
        Private count(s) of the users who have a statistic of their own (NaN: not counted);
        labels ending in ``(weighted)`` are private sums of precision weights.
    users_sd : float
        Standard deviation of the noise of the first count.
    model, formula : str
        The model's name and formula.
    variant : str
        How it was released (``"default"``, ``"default (refined)"``, ``"theory"``, ...).
    assumptions : tuple of str
        The public assumptions behind standard errors, intervals and error bounds.
    warnings : tuple of str
        Reliability warnings, from public facts and released numbers, each with a remedy.
    gamma : float
        Failure probability γ behind radii and bounds.
    bad_events : pandas.Series
        Probability of the events each parameter's error bound excludes.
    basis : str
        The theorem and corollary of the paper behind the error bounds.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> res.nobs_users, list(res.params.index)
    (545, ['Intercept', 'exper'])
    >>> res.privacy.epsilon <= 1.0, res.warnings
    (True, ())
    >>> res  # doctest: +ELLIPSIS
    <LongitudinalOLS results: n=545, epsilon=1, delta=3.37e-06, params={'Intercept': ...}>
    """

    model: str
    formula: str
    params: pd.Series
    noise_scale: pd.Series
    noise_sd: pd.Series
    noise_law: str
    sampling_sd: pd.Series
    bias: pd.Series
    projection_interval: pd.DataFrame
    failed: pd.Series
    privacy: PrivacyLedger
    nobs_users: int
    users: pd.Series
    users_sd: float
    variant: str
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...]
    gamma: float
    bad_events: pd.Series
    basis: str = "Theorem 4.2"

    @property
    def bse(self) -> pd.Series:
        """Standard errors: sampling and privacy noise combined.

        ``√(sampling_sd² + noise_sd²)`` per parameter; NaN where ``sampling_sd`` is.

        Examples
        --------
        >>> import numpy as np, dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> se = res.bse
        >>> se.name, se.index.tolist()
        ('std err', ['Intercept', 'exper'])
        >>> bool(np.allclose(se**2, res.sampling_sd**2 + res.noise_sd**2))
        True
        """
        return pd.Series(
            np.sqrt(self.sampling_sd**2 + self.noise_sd**2), index=self.params.index, name="std err"
        )

    @property
    def tvalues(self) -> pd.Series:
        """``params / bse``, as statsmodels reports them (inference uses :attr:`pvalues`).

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> bool((res.tvalues == res.params / res.bse).all())
        True
        """
        z: pd.Series = pd.Series(self.params / self.bse, index=self.params.index, name="z")
        return z

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values of ``parameter = 0`` from the law of :meth:`conf_int`.

        The sampling error plus the exact privacy-noise law, with the clipping bias bound given
        to the null: ``pvalues < α`` exactly when 0 lies outside ``conf_int(α)``.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> p, ci = res.pvalues, res.conf_int(0.05)
        >>> bool(((p < 0.05) == ((ci["lower"] > 0) | (ci["upper"] < 0))).all())
        True
        """
        values = p_values(
            self.params.to_numpy(),
            self.sampling_sd.to_numpy(),
            self.noise_scale.to_numpy(),
            self.noise_sd.to_numpy(),
            self.noise_law,
            self.bias.to_numpy(),
        )
        p: pd.Series = pd.Series(values, index=self.params.index, name="P>|z|")
        return p

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """(1 - α) confidence intervals: sampling error under the stated or estimated scale,
        the exact law of the privacy noise (:mod:`dplong.inference`) and the bound on the
        clipping bias. Computed from released quantities and public assumptions only; NaN
        where ``sampling_sd`` is.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> ci = res.conf_int(alpha=0.1)
        >>> ci.columns.tolist(), ci.index.tolist()
        (['lower', 'upper'], ['Intercept', 'exper'])
        >>> bool(((ci["lower"] < res.params) & (res.params < ci["upper"])).all())
        True
        >>> bool((res.conf_int(alpha=0.01)["upper"] > ci["upper"]).all())   # 99 % is wider
        True
        """
        alpha = _check_alpha(alpha)
        q = half_widths(
            alpha,
            self.sampling_sd.to_numpy(),
            self.noise_scale.to_numpy(),
            self.noise_sd.to_numpy(),
            self.noise_law,
            self.bias.to_numpy(),
        )
        frame: pd.DataFrame = pd.DataFrame(
            {"lower": self.params.to_numpy() - q, "upper": self.params.to_numpy() + q},
            index=self.params.index,
        )
        return frame

    def error_bound(self, alpha: float = 0.05) -> ErrorBoundReport:
        """Bound on ``|estimate - truth|`` per parameter, holding with the stated probability.

        Privacy noise (its exact tail; local model: Chebyshev), the statistical term of Lemma
        2.11 under the stated or estimated scale, and the clipping bias bound; the probability
        ``1 - α - bad events`` subtracts the events the bound excludes (see
        :mod:`dplong.bounds`). Parameters whose paper midpoint failed get no bound.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> report = res.error_bound(alpha=0.05)
        >>> report.table.columns.tolist()
        ['privacy noise', 'statistical', 'bias', 'total', 'bad events', 'probability']
        >>> bool(((0 <= report.table["probability"]) & (report.table["probability"] <= 1)).all())
        True
        """
        alpha = _check_alpha(alpha)
        table = error_bound_table(
            alpha,
            self.bad_events,
            self.noise_scale,
            self.noise_sd,
            self.sampling_sd,
            self.bias,
            self.failed,
            self.noise_law,
        )
        notes = [
            f"'bad events' is the probability (at most) that a centre of the projection was "
            f"farther from the mean than allowed (gamma={self.gamma:g} per centre), that the "
            "private medians missed the data (a public bound), or that the paper's midpoint "
            "failed; the bias bound holds outside those events."
        ]
        return ErrorBoundReport(table, (*self.assumptions, *notes), self.basis)

    @property
    def reliable(self) -> bool:
        """False when the fit carries reliability warnings (see :attr:`warnings`).

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                     groups="nr").fit(epsilon=1.0,
        ...                                                      random_state=0).reliable
        True
        """
        return not self.warnings

    def summary(self, alpha: float = 0.05) -> Summary:
        """Summary tables: header, estimates with standard errors, p-values and intervals, the
        privacy ledger's digest (one row per stage), reliability warnings and notes.

        Returns
        -------
        Summary
            Print it, or render it with ``as_text``, ``as_html`` or ``as_latex``.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> s = res.summary(alpha=0.1)
        >>> s.title
        'LongitudinalOLS results (user-level differential privacy)'
        >>> s.params.columns.tolist()
        ['estimate', 'std err', 'P>|z|', 'noise sd', '[0.05', '0.95]']
        >>> "Privacy ledger" in str(s)
        True
        """
        ci = self.conf_int(alpha)
        table = pd.DataFrame(
            {
                "estimate": self.params,
                "std err": self.bse,
                "P>|z|": self.pvalues,
                "noise sd": self.noise_sd,
                f"[{alpha / 2:g}": ci["lower"],
                f"{1 - alpha / 2:g}]": ci["upper"],
            }
        )
        info = pd.Series(self._summary_info()).to_frame("value")
        return Summary(
            f"{self.model} results ({self._privacy_unit}-level differential privacy)",
            info,
            table,
            self.privacy.digest().reset_index(),
            self._summary_notes(),
            self.warnings,
        )

    @property
    def _privacy_unit(self) -> str:
        return "user"

    def _summary_info(self) -> dict[str, object]:
        info: dict[str, object] = {
            "Model:": self.model,
            "Formula:": self.formula,
            "Users (n):": self.nobs_users,
            "Privacy:": self.privacy.model,
            "Epsilon:": f"{self.privacy.epsilon:.4g}",
            "Delta:": f"{self.privacy.delta:.3g}",
            "Noise:": self.noise_law,
            "Variant:": self.variant,
        }
        # Shown clamped to [0, n] (post-processing: a count cannot exceed the public n); the
        # raw releases stay in ``users`` and the ledger.
        counted = self.users.dropna().clip(0, self.nobs_users)
        weighted = np.array([str(label).endswith("(weighted)") for label in counted.index])
        if weighted.any():
            info["Weighted users (sum of weights):"] = (
                f"{counted[weighted].min():.0f} (DP, sd {self.users_sd:.2g})"
            )
            counted = counted[~weighted]
        if not counted.empty:
            info["Users with a statistic:"] = (
                f"{counted.min():.0f} (DP, sd {self.users_sd:.2g})"
                if counted.size == 1
                else f"{counted.min():.0f}-{counted.max():.0f} (DP, sd {self.users_sd:.2g})"
            )
        return info

    def _summary_notes(self) -> tuple[str, ...]:
        return tuple(self.assumptions)

    def __repr__(self) -> str:
        return (
            f"<{self.model} results: n={self.nobs_users}, epsilon={self.privacy.epsilon:.4g}, "
            f"delta={self.privacy.delta:.3g}, params={self.params.round(4).to_dict()}>"
        )


@dataclass(frozen=True, repr=False, kw_only=True)
class CurveResults(PanelResults):
    """Results of a private curve fit (:class:`dplong.PriestleyChao`): one parameter per grid
    point, indexed by x.

    Everything of :class:`PanelResults` applies pointwise: ``params`` is the released curve,
    ``conf_int`` gives pointwise bands, ``error_bound`` pointwise bounds (with the smoothing
    bias where smoothness was stated).

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

    Examples
    --------
    >>> import numpy as np, pandas as pd, dplong
    >>> rng = np.random.default_rng(1)
    >>> x = np.arange(10_000) / 10_000
    >>> data = pd.DataFrame({"x": x, "y": x + rng.normal(0, 0.2, x.size)})
    >>> res = dplong.PriestleyChao.from_formula(
    ...     "y ~ x", data, domain=(0, 1), kernel="epanechnikov", bandwidth=0.1, grid=6
    ... ).fit(epsilon=1.0, noise_sd=0.2, amplitude=0.5, lipschitz=1.0, sup_norm=1.0,
    ...       random_state=0)
    >>> res.grid.round(3).tolist()
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> res.boundary.tolist()
    [True, False, False, False, False, True]
    >>> bool(abs(res.predict([0.5])[0] - 0.5) < 0.1)
    True
    >>> res  # doctest: +ELLIPSIS
    <PriestleyChao results: item-level, n=10000, epsilon=1, delta=0, 6 grid points ...>
    """

    kernel: str
    bandwidth: float
    domain: tuple[float, float]
    level: str
    boundary: pd.Series
    smoothing_bias: pd.Series

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
        ...     epsilon=1.0, noise_sd=1.0, amplitude=0.1, random_state=0)
        >>> res.grid.tolist()
        [0.0, 0.5, 1.0]
        """
        return self.params.index.to_numpy(dtype=float)

    def curve(self, alpha: float = 0.05) -> pd.DataFrame:
        """The released curve with pointwise (1 - α) bands and the boundary flags.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(5_000) / 5_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         bandwidth=0.1, grid=5).fit(
        ...     epsilon=1.0, noise_sd=1.0, amplitude=0.1, random_state=0)
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

    def predict(self, x: object) -> np.ndarray:
        """The curve at new points by linear interpolation between grid points.

        Post-processing of the released values: no further privacy cost. Points outside the
        grid's range are refused (no extrapolation).

        Examples
        --------
        >>> import numpy as np, pandas as pd, dplong
        >>> x = np.arange(5_000) / 5_000
        >>> data = pd.DataFrame({"x": x, "y": np.random.default_rng(0).normal(0, 1, x.size)})
        >>> res = dplong.PriestleyChao.from_formula("y ~ x", data, domain=(0, 1),
        ...                                         bandwidth=0.1, grid=5).fit(
        ...     epsilon=1.0, noise_sd=1.0, amplitude=0.1, random_state=0)
        >>> bool(res.predict([0.25])[0] == res.params.loc[0.25])
        True
        >>> res.predict([1.5])
        Traceback (most recent call last):
        ...
        dplong.exceptions.ParameterError: x must lie within the grid [0, 1]; got values up to 1.5
        """
        raw = np.atleast_1d(np.asarray(x))
        if raw.dtype.kind not in "iuf" or raw.size == 0:
            raise ParameterError(f"x must be one or more real numbers, got dtype {raw.dtype}")
        points = raw.astype(np.float64)
        grid = self.grid
        if not np.isfinite(points).all():
            raise ParameterError("x must be finite")
        if points.min() < grid[0] or points.max() > grid[-1]:
            worst = points.max() if points.max() > grid[-1] else points.min()
            raise ParameterError(
                f"x must lie within the grid [{grid[0]:g}, {grid[-1]:g}]; got values up to "
                f"{worst:g}"
            )
        return np.asarray(np.interp(points, grid, self.params.to_numpy()))

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
        ...     epsilon=1.0, noise_sd=1.0, amplitude=0.1, lipschitz=1.0, sup_norm=0.1,
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
        ...     epsilon=1.0, noise_sd=1.0, amplitude=0.1, random_state=0)
        >>> ax = res.plot()
        >>> ax.get_xlabel()
        'x'
        """
        try:
            import matplotlib.pyplot as plt
            from matplotlib.axes import Axes
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError('plotting needs matplotlib: pip install "dplong[plot]"') from None
        frame = self.curve(alpha)
        if ax is None:
            _, ax = plt.subplots(figsize=(6.0, 4.0))
        elif not isinstance(ax, Axes):
            raise ParameterError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
        grid = self.grid
        ax.fill_between(
            grid, frame["lower"], frame["upper"], alpha=0.25, label=f"{1 - alpha:.0%} band"
        )
        ax.plot(grid, frame["estimate"], marker="o", markersize=3, label="private estimate")
        lo, hi = self.domain
        zeta = min(self.boundary_width, (hi - lo) / 2.0)
        for start, stop in ((lo, lo + zeta), (hi - zeta, hi)):
            ax.axvspan(start, stop, color="grey", alpha=0.15, lw=0)
        ax.set_xlabel(self.params.index.name or "x")
        ax.set_ylabel("f(x)")
        ax.set_title(f"{self.model}: {self.formula} (shaded: boundary)")
        ax.legend(loc="best")
        return ax

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
        ...     epsilon=1.0, noise_sd=1.0, amplitude=0.1, random_state=0)
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


def _check_alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.integer | np.floating):
        raise ParameterError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise ParameterError(f"alpha must lie in (0, 1), got {alpha!r}")
    return float(alpha)
