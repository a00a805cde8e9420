"""The results of a private panel model fit: :class:`PanelResults`, the base of every result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dplong._validation import checked_call
from dplong.results.estimates import P_NAMES
from dplong.results.plotting import forest_plot
from dplong.results.restrictions import RestrictionTests
from dplong.summary import Summary, plain_names


@dataclass(frozen=True, repr=False, kw_only=True)
class PanelResults(RestrictionTests):
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
    model : ModelSpec
        The model the fit came from, as public facts (its class, name, formula, n and design
        columns; no data). ``str(results.model)`` is its name.
    formula : str
        The model's formula.
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
    support_lower : mapping of str to float
        Public lower ends of parameters' support (a variance's 0; a mean's declared
        ``lower=``; a stated range's low end, ``bounds=``); :meth:`conf_int` clips their
        intervals there and :attr:`pvalues` gives none where the end is 0 or above
        (post-processing). Parameters not listed have none.
    support_upper : mapping of str to float
        Public upper ends (a stated range's high end): :meth:`conf_int` clips there.
    downward_bias : frozenset of str
        The parameters whose clip could only have pulled them down (their statistics' declared
        lower end, a variance's 0, was within the clip's window: no user was clipped up) and
        whose clipping bias nothing bounds (a heavy variance component): :meth:`conf_int`
        keeps their lower end without it, the upper end open (post-processing).
    withheld_why : mapping of str to str
        Why a withheld (NaN) parameter has no estimate, in a word, where the model tells
        (:attr:`withheld` completes it from ``failed``).
    covariance : pandas.DataFrame or None
        The covariance between the estimates (sampling error plus privacy noise) where the
        fit's releases determine it, post-processing only: the pooled family's
        (:class:`~dplong.PooledOLS`, :class:`~dplong.BetweenOLS`, :class:`~dplong.PanelOLS`,
        :class:`~dplong.RandomEffects`), from the released person-clustered sandwich and the
        released noise laws; None elsewhere (no covariance between two parameters is
        released). Read it through :meth:`cov_params`.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> res = model.fit(epsilon=2.0, random_state=0)
    >>> res.nobs_users, list(res.params.index)
    (545, ['Intercept', 'exper'])
    >>> res.privacy.epsilon <= 2.0, res.warnings
    (True, ())
    >>> res  # doctest: +ELLIPSIS
    <LongitudinalOLS results: n=545, epsilon=2, delta=3.37e-06, params={'Intercept': ...}>
    """

    # The fields, standard errors, intervals and error bounds are Estimates' (estimates.py),
    # the covariance and tests of linear restrictions RestrictionTests' (restrictions.py).

    @property
    def reliable(self) -> bool:
        """False when the fit carries reliability warnings (see :attr:`warnings`).

        Examples
        --------
        At ε = 1 the 545 men afford no count of the coefficients' tails, and a warning says
        so; at ε = 2 the count runs and finds nothing:

        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
        >>> [model.fit(epsilon=e, random_state=0).reliable for e in (1.0, 2.0)]
        [False, True]
        """
        return not self.warnings

    @property
    def nobs(self) -> int:
        """Number of users n (public): statsmodels' name for :attr:`nobs_users`.

        The number of rows is private and not reported.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0,
        ...                              random_state=0)
        >>> res.nobs == res.nobs_users == 545
        True
        """
        return self.nobs_users

    @checked_call
    def plot(self, ax: Any = None, *, alpha: float = 0.05) -> Any:
        """Forest plot: each estimate with its (1 - α) confidence interval, on one axis.

        Withheld parameters (NaN) are listed without a point. Needs matplotlib
        (``pip install "dplong[plot]"``). Returns the matplotlib Axes.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> ax = res.plot()
        >>> [label.get_text() for label in ax.get_yticklabels()]
        ['Intercept', 'exper']
        """
        return forest_plot(self, ax, alpha=alpha)

    @checked_call
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
        ['estimate', 'std err', 'P (bias-adj.)', 'noise sd', 'bias bound', '[0.05', '0.95]']
        >>> len(str(s).splitlines()) <= 25
        True
        """
        ci = self.conf_int(alpha)
        adjusted = self._bias_adjusted
        p_name = P_NAMES[adjusted]
        table = pd.DataFrame(
            {
                "estimate": self.params,
                "std err": self.bse,
                p_name: self.pvalues,
                "noise sd": self.noise_sd,
                # the interval is the estimate ± (the normal ⊕ noise quantile + this): a reader
                # who sees only 1.96 std err wider needs the rest named beside it
                "bias bound": self._null_bias,
                f"[{alpha / 2:g}": ci["lower"],
                f"{1 - alpha / 2:g}]": ci["upper"],
            }
        )
        # a support from 0 up (a variance, a declared lower=) puts 'parameter = 0' on its
        # boundary or outside it, where the Wald z has no normal reference: no p-value
        bounded = self._support() >= 0.0
        clauses = (
            ["of 'parameter = 0', bias bound given to the null"]
            if adjusted and not bounded.all()
            else []
        ) + (["none if support >= 0"] if bounded.any() else [])
        footnotes = (f"{p_name}: {'; '.join(clauses)}.",) if clauses else ()
        info = pd.Series(self._summary_info()).to_frame("value")
        return Summary(
            f"{self.model} results ({self._privacy_unit}-level differential privacy)",
            info,
            table,
            self.privacy.digest().reset_index(),
            self._summary_notes() + footnotes,
            tuple(plain_names(warning) for warning in self.warnings),
            self.withheld,
        )

    @property
    def withheld(self) -> pd.Series:
        """Why each withheld parameter (NaN) has no estimate, in a word, indexed by them:
        the model's word where it gives one (:attr:`withheld_why`), else ``"missed"`` where
        the release missed the data (:attr:`failed`) and ``"no users"`` where no user had a
        statistic. The warnings say more.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0,
        ...                        random_state=0).withheld.empty   # all released
        True
        """
        missing = self.params.index[self.params.isna().to_numpy()]
        failed = self.failed.reindex(missing, fill_value=False).astype(bool)
        words = [
            self.withheld_why.get(name, "missed" if failed[name] else "no users")
            for name in missing
        ]
        return pd.Series(words, index=missing, name="withheld", dtype=object)

    @property
    def _privacy_unit(self) -> str:
        return "user"

    def _summary_info(self) -> dict[str, object]:
        info: dict[str, object] = {  # the model is named in the title
            "Formula:": self.formula,
            "Users (n):": self.nobs_users,
            "Privacy:": f"{self.privacy.model} model (spent: below the table)",
            # no estimate, no noise in one: the law would describe numbers that are not there
            "Release:": f"{self.variant}, {self.noise_law} noise"
            if np.isfinite(self.params.to_numpy(dtype=float)).any()
            else f"{self.variant}, all withheld",
        }
        # Shown clamped to [0, n] (post-processing: a count cannot exceed the public n); the
        # raw releases stay in ``users`` and the ledger.
        counted = self.users.dropna().clip(0, self.nobs_users)
        weighted = np.array([str(label).endswith("(weighted)") for label in counted.index])
        if weighted.any():
            info["Sum of weights:"] = f"{counted[weighted].min():.0f} (DP, sd {self.users_sd:.2g})"
            counted = counted[~weighted]
        if not counted.empty:
            info["With a statistic:"] = (
                f"{counted.min():.0f} users (DP, sd {self.users_sd:.2g})"
                if counted.size == 1
                else f"{counted.min():.0f}-{counted.max():.0f} users (DP, sd {self.users_sd:.2g})"
            )
        return info

    def _summary_notes(self) -> tuple[str, ...]:
        return tuple(self.assumptions)

    def __repr__(self) -> str:
        return (
            f"<{self.model} results: n={self.nobs_users}, epsilon={self.privacy.epsilon:.4g}, "
            f"delta={self.privacy.delta:.3g}, params={self.params.round(4).to_dict()}>"
        )
