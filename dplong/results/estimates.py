"""The released estimates of a fit and their uncertainty, the base of every result.

:class:`Estimates` holds the fields of :class:`~dplong.results.PanelResults` (documented there)
and computes from them, by post-processing only, the standard errors, p-values, confidence
intervals and error bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong._validation import check_alpha, checked_call
from dplong.bounds import ErrorBoundReport, error_bound_table
from dplong.inference import half_widths, p_values
from dplong.privacy.accounting import PrivacyLedger
from dplong.results.spec import ModelSpec

#: The p-values' name (and the summary's column), with and without a bias bound given to the
#: null (:attr:`Estimates.pvalues`).
P_NAMES = {True: "P (bias-adj.)", False: "P>|z|"}


@dataclass(frozen=True, repr=False, kw_only=True)
class Estimates:
    """The DP outputs and public facts of a fit, with their standard errors, p-values,
    intervals and error bounds: the base of :class:`~dplong.results.PanelResults`, which
    documents the attributes."""

    model: ModelSpec
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
    support_lower: Mapping[str, float] = field(default_factory=dict)
    support_upper: Mapping[str, float] = field(default_factory=dict)
    downward_bias: frozenset[str] = frozenset()
    withheld_why: Mapping[str, str] = field(default_factory=dict)
    covariance: pd.DataFrame | None = None

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
        to the null: ``pvalues < α`` exactly when 0 lies outside ``conf_int(α)``. NaN for a
        parameter whose support starts at 0 or above (:attr:`support_lower`: a variance, or a
        mean whose lower end ``lower=`` declares): 0 is then on the boundary of its parameter
        space or outside it, where a Wald test has no normal reference
        (Self & Liang 1987; statsmodels' MixedLM reports none for its variance components).

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
            self._null_bias.to_numpy(),
        )
        values = np.where(self._support() >= 0.0, np.nan, values)
        name = P_NAMES[self._bias_adjusted]
        p: pd.Series = pd.Series(values, index=self.params.index, name=name)
        return p

    @property
    def _bias_adjusted(self) -> bool:
        """Whether a bias bound is given to the null of some p-value: they are then no longer
        ``P>|z|`` of the ``z`` beside them, and are named so (:data:`P_NAMES`)."""
        return bool((self._null_bias.fillna(0.0) > 0.0).any())

    @property
    def _null_bias(self) -> pd.Series:
        """The bias the intervals allow for and the tests give to the null: the clipping bias
        bound (a curve adds its smoothing bias, :class:`~dplong.results.CurveResults`)."""
        return self.bias

    def _support(self) -> NDArray[np.float64]:
        """Each parameter's public lower support end (:attr:`support_lower`; -inf: none)."""
        return np.array([self.support_lower.get(name, -np.inf) for name in self.params.index])

    def _support_top(self) -> NDArray[np.float64]:
        """Each parameter's public upper support end (:attr:`support_upper`; inf: none)."""
        return np.array([self.support_upper.get(name, np.inf) for name in self.params.index])

    @checked_call
    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """(1 - α) confidence intervals: sampling error under the stated or estimated scale,
        the exact law of the privacy noise (:mod:`dplong.inference`) and the bound on the
        clipping bias. Computed from released quantities and public assumptions only; NaN
        where ``sampling_sd`` is. A parameter with a public lower end of its support
        (:attr:`support_lower`: a variance's 0, or a mean's declared ``lower=``, below which
        every user value is clipped up) has its interval clipped there: the truth lies above
        it, so the clipped interval covers as often; likewise at a public upper end
        (:attr:`support_upper`: the top of a stated range, ``bounds=``). Where the clip could
        only have pulled the estimate down (:attr:`downward_bias`), the clipping bias bound
        widens the interval above the estimate only.

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
        alpha = check_alpha(alpha)
        q = half_widths(
            alpha,
            self.sampling_sd.to_numpy(),
            self.noise_scale.to_numpy(),
            self.noise_sd.to_numpy(),
            self.noise_law,
        )
        above = self._null_bias.to_numpy()
        # a clip that could only pull the estimate down: no clipping bias below it (a
        # curve's smoothing bias, two-sided, stays; an unbounded clipping bias leaves none)
        down = self.params.index.isin(list(self.downward_bias))
        with np.errstate(invalid="ignore"):
            two_sided = np.nan_to_num(above - self.bias.to_numpy(), nan=0.0)
        below = np.where(down, two_sided, above)
        frame: pd.DataFrame = pd.DataFrame(
            {
                "lower": np.maximum(self.params.to_numpy() - q - below, self._support()),
                "upper": np.minimum(self.params.to_numpy() + q + above, self._support_top()),
            },
            index=self.params.index,
        )
        return frame

    @checked_call
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
        alpha = check_alpha(alpha)
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
    def std_errors(self) -> pd.Series:
        """linearmodels' name for :attr:`bse`.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0,
        ...                              random_state=0)
        >>> res.std_errors.equals(res.bse)
        True
        """
        return self.bse

    @property
    def tstats(self) -> pd.Series:
        """linearmodels' name for :attr:`tvalues`.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0,
        ...                              random_state=0)
        >>> res.tstats.equals(res.tvalues)
        True
        """
        return self.tvalues
