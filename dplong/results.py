"""One results design for every model: immutable, built once, DP outputs and public facts only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dplong.bounds import ErrorBoundReport, error_bound_table
from dplong.exceptions import ParameterError
from dplong.inference import half_widths
from dplong.privacy.accounting import PrivacyLedger
from dplong.summary import Summary

__all__ = ["PanelResults"]


@dataclass(frozen=True, repr=False)
class PanelResults:
    """Results of a private panel model fit.

    Everything here is a differentially private output or a public fact (the number of users,
    the formula, the analyst's assumptions, the budget); no raw value, row count or per-user
    statistic is kept (DESIGN.md §1).

    Attributes
    ----------
    params : pandas.Series
        Private estimates, named by the design columns.
    noise_scale : pandas.Series
        Laplace scale of the privacy noise in each estimate (local: of each user's draw).
    noise_sd : pandas.Series
        Standard deviation of the privacy noise in each estimate.
    sampling_sd : pandas.Series
        Standard deviation of the non-private estimator implied by the stated assumption
        (``√(scale / n)``); NaN where no assumption gives it.
    projection_interval : pandas.DataFrame
        Private projection intervals of the per-user statistics.
    failed : pandas.Series
        True where the private midpoint failed and fell back to 0.
    privacy : PrivacyLedger
        Every mechanism call and the composed (ε, δ).
    nobs_users : int
        Number of users n (public).
    model, formula : str
        The model's name and formula.
    variant : str
        The constants used (``"improved"``, ``"improved (refined)"`` or ``"theory"``).
    assumptions : tuple of str
        The public assumptions behind standard errors, intervals and error bounds.
    gamma : float
        Failure probability γ behind the radii.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> res = model.fit(epsilon=1.0, scale=[1.0, 0.01], random_state=0)
    >>> res.nobs_users, list(res.params.index)
    (545, ['Intercept', 'exper'])
    >>> res.privacy.epsilon <= 1.0, bool(res.failed.any())
    (True, False)
    >>> res  # doctest: +ELLIPSIS
    <LongitudinalOLS results: n=545, epsilon=1, delta=3.37e-06, params={'Intercept': ...}>
    """

    model: str
    formula: str
    params: pd.Series
    noise_scale: pd.Series
    noise_sd: pd.Series
    sampling_sd: pd.Series
    projection_interval: pd.DataFrame
    failed: pd.Series
    privacy: PrivacyLedger
    nobs_users: int
    variant: str
    assumptions: tuple[str, ...]
    gamma: float

    @property
    def bse(self) -> pd.Series:
        """Standard errors: sampling and privacy noise combined.

        ``√(sampling_sd² + noise_sd²)`` per parameter; NaN where ``sampling_sd`` is.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
        >>> res = model.fit(epsilon=1.0, scale=[1.0, 0.01], random_state=0)
        >>> import numpy as np
        >>> se = res.bse
        >>> se.name, se.index.tolist()
        ('std err', ['Intercept', 'exper'])
        >>> bool(np.allclose(se**2, res.sampling_sd**2 + res.noise_sd**2))
        True
        """
        return pd.Series(
            np.sqrt(self.sampling_sd**2 + self.noise_sd**2), index=self.params.index, name="std err"
        )

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """(1 - α) confidence intervals from the normal-Laplace convolution of
        :mod:`dplong.inference`: sampling error under the stated assumption plus the exact law of
        the privacy noise (in the local model, a sum of n draws, taken as normal). Computed
        from released quantities and public assumptions only; NaN where ``sampling_sd`` is.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
        >>> res = model.fit(epsilon=1.0, scale=[1.0, 0.01], random_state=0)
        >>> ci = res.conf_int(alpha=0.1)
        >>> ci.columns.tolist(), ci.index.tolist()
        (['lower', 'upper'], ['Intercept', 'exper'])
        >>> bool(((ci["lower"] < res.params) & (res.params < ci["upper"])).all())
        True
        >>> bool((res.conf_int(alpha=0.01)["upper"] > ci["upper"]).all())   # 99 % is wider
        True
        """
        _check_alpha(alpha)
        q = half_widths(
            alpha,
            self.sampling_sd.to_numpy(),
            self.noise_scale.to_numpy(),
            self.noise_sd.to_numpy(),
            self.privacy.model == "local",
        )
        lower = self.params.to_numpy() - q
        upper = self.params.to_numpy() + q
        frame: pd.DataFrame = pd.DataFrame(
            {"lower": lower, "upper": upper}, index=self.params.index
        )
        return frame

    def error_bound(self, alpha: float = 0.05) -> ErrorBoundReport:
        """Bound on ``|estimate - truth|`` per parameter, holding with the stated probability.

        The privacy-noise term uses the exact Laplace tail (local model: Chebyshev), the
        statistical term Lemma 2.11 under the stated scale; the probability ``1 - α - γ``
        subtracts the clipping event γ, and ``1 - α - 2γ`` also the miss of the rough mean in
        a refined release (see :mod:`dplong.bounds`). Parameters whose private midpoint
        failed get no bound; those without a stated sampling law (NaN ``sampling_sd``) get
        none either.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
        >>> res = model.fit(epsilon=1.0, scale=[1.0, 0.01], random_state=0)
        >>> report = res.error_bound(alpha=0.05)
        >>> report.table.columns.tolist()
        ['privacy noise', 'statistical', 'total', 'probability']
        >>> res.variant, report.table["probability"].round(2).tolist()   # 1 - α - 2γ
        ('improved (refined)', [0.85, 0.85])
        >>> bool((report.table["total"] > res.noise_scale).all())
        True
        """
        _check_alpha(alpha)
        refined = "refined" in self.variant  # one more bad event: the rough mean's error
        bad_events = self.gamma * (2 if refined else 1)
        table = error_bound_table(
            alpha,
            bad_events,
            self.noise_scale,
            self.noise_sd,
            self.sampling_sd,
            self.failed,
            self.privacy.model == "local",
        )
        clipping = (
            f"Clipping has probability at most gamma={self.gamma:g} per parameter (radius of "
            "Lemma 5.2 under the stated scale)"
            + (
                ", and the refinement's rough mean misses its margin with probability at most "
                f"gamma={self.gamma:g}."
                if refined
                else "."
            )
        )
        return ErrorBoundReport(table, (*self.assumptions, clipping))

    def summary(self, alpha: float = 0.05) -> Summary:
        """Summary tables: header, estimates with standard errors and intervals, ledger.

        Returns
        -------
        Summary
            Print it, or render it with ``as_text``, ``as_html`` or ``as_latex``.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
        >>> res = model.fit(epsilon=1.0, scale=[1.0, 0.01], random_state=0)
        >>> s = res.summary(alpha=0.1)
        >>> s.title
        'LongitudinalOLS results (user-level differential privacy)'
        >>> s.params.columns.tolist()
        ['estimate', 'std err', 'noise sd', '[0.05', '0.95]']
        >>> "Privacy ledger" in str(s)
        True
        """
        ci = self.conf_int(alpha)
        table = pd.DataFrame(
            {
                "estimate": self.params,
                "std err": self.bse,
                "noise sd": self.noise_sd,
                f"[{alpha / 2:g}": ci["lower"],
                f"{1 - alpha / 2:g}]": ci["upper"],
            }
        )
        info = pd.Series(
            {
                "Model:": self.model,
                "Formula:": self.formula,
                "Users (n):": self.nobs_users,
                "Privacy:": self.privacy.model,
                "Epsilon:": f"{self.privacy.epsilon:.4g}",
                "Delta:": f"{self.privacy.delta:.3g}",
                "Composition:": self.privacy.composition,
                "Constants:": self.variant,
            }
        ).to_frame("value")
        notes = tuple(self.assumptions)
        if self.failed.any():
            notes += (
                f"The private midpoint failed for {list(self.failed.index[self.failed])}; "
                "those estimates are unreliable.",
            )
        ledger = self.privacy.to_frame()
        return Summary(
            f"{self.model} results (user-level differential privacy)", info, table, ledger, notes
        )

    def __repr__(self) -> str:
        return (
            f"<{self.model} results: n={self.nobs_users}, epsilon={self.privacy.epsilon:.4g}, "
            f"delta={self.privacy.delta:.3g}, params={self.params.round(4).to_dict()}>"
        )


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"alpha must lie in (0, 1), got {alpha!r}")
