"""One results design for every model: immutable, built once, DP outputs and public facts only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray
from statsmodels.stats.contrast import ContrastResults

from dplong._validation import warn
from dplong.bounds import ErrorBoundReport, error_bound_table
from dplong.exceptions import DataError, FormulaError, MissingDependencyError, ParameterError
from dplong.formula import DesignSpec
from dplong.inference import half_widths, p_values
from dplong.kernels import get_kernel
from dplong.privacy.accounting import PrivacyLedger
from dplong.summary import Summary, plain_names

__all__ = [
    "CurveResults",
    "GroupedResults",
    "ModelSpec",
    "PanelResults",
    "RandomEffectsResults",
    "RegressionResults",
]


@dataclass(frozen=True)
class ModelSpec:
    """The model a fit came from, as the public facts that define it: ``results.model``.

    statsmodels' and linearmodels' results keep the model object, and with it the data. A
    dplong result never holds a row (the privacy contract: results and pickles hold DP
    outputs and public facts only), so it keeps this data-free view of the model instead:
    its class, name, formula, number of users and design column names. It cannot refit; refit
    with the model object you built. ``str()`` gives the model's name.

    Attributes
    ----------
    name : str
        The model's name (``"LongitudinalOLS"``, ``"Mean"``, ...).
    formula : str
        Its formula (for :func:`dplong.winsorized_mean`, ``"mean of ..."``).
    nobs_users : int
        Number of users n (public).
    exog_names : tuple of str
        The design's column names (a function of the formula and declared levels: public).
    model_class : type or None
        The model's class (None for :func:`dplong.winsorized_mean`, a function).

    Examples
    --------
    >>> import pickle, dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> res.model
    LongitudinalOLS('lwage ~ exper', n_users=545)
    >>> res.model.model_class is dplong.LongitudinalOLS, res.model.exog_names
    (True, ('Intercept', 'exper'))
    >>> str(res.model), pickle.loads(pickle.dumps(res)).model == res.model
    ('LongitudinalOLS', True)
    """

    name: str
    formula: str
    nobs_users: int
    exog_names: tuple[str, ...]
    model_class: type | None = None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{self.name}({self.formula!r}, n_users={self.nobs_users})"


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
        Public lower ends of parameters' support (a variance's is 0); :meth:`conf_int` clips
        its intervals there (post-processing). Parameters not listed have none.
    withheld_why : mapping of str to str
        Why a withheld (NaN) parameter has no estimate, in a word, where the model tells
        (:attr:`withheld` completes it from ``failed``).

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
    withheld_why: Mapping[str, str] = field(default_factory=dict)

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
        parameter whose support starts at 0 or above (:attr:`support_lower`, a variance): 0 is
        then the boundary of its parameter space, where a Wald test has no normal reference
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
            self.bias.to_numpy(),
        )
        values = np.where(self._support() >= 0.0, np.nan, values)
        p: pd.Series = pd.Series(values, index=self.params.index, name="P>|z|")
        return p

    def _support(self) -> NDArray[np.float64]:
        """Each parameter's public lower support end (:attr:`support_lower`; -inf: none)."""
        return np.array([self.support_lower.get(name, -np.inf) for name in self.params.index])

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """(1 - α) confidence intervals: sampling error under the stated or estimated scale,
        the exact law of the privacy noise (:mod:`dplong.inference`) and the bound on the
        clipping bias. Computed from released quantities and public assumptions only; NaN
        where ``sampling_sd`` is. A parameter with a public lower end of its support (a
        variance: 0, :attr:`support_lower`) has its interval clipped there: the truth lies
        above it, so the clipped interval covers as often.

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
            {
                "lower": np.maximum(self.params.to_numpy() - q, self._support()),
                "upper": self.params.to_numpy() + q,
            },
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

    def cov_params(self) -> pd.DataFrame:
        """Covariance of the released estimates: sampling error plus privacy noise.

        The diagonal is ``bse**2`` (``sampling_sd² + noise_sd²``), a post-processing of
        released numbers. **The off-diagonal entries are 0 because no covariance between two
        parameters is released**, not because the estimates are known to be uncorrelated:
        each parameter's sampling variance comes from its own column's private second moment
        (or stated scale), and a covariance would need the users' cross moments, another
        release on the budget. Estimates of related terms (a regressor and its square) are
        correlated in truth, so a test that combines parameters (:meth:`t_test`,
        :meth:`wald_test`) says that it treats them as uncorrelated. A withheld parameter
        (NaN) has NaN in its row and column.

        Returns
        -------
        pandas.DataFrame
            p x p, indexed and labelled by the parameter names.

        Examples
        --------
        >>> import numpy as np, dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> cov = res.cov_params()
        >>> cov.index.tolist() == cov.columns.tolist() == ["Intercept", "exper"]
        True
        >>> bool(np.allclose(np.diag(cov), res.bse**2)), float(cov.loc["Intercept", "exper"])
        (True, 0.0)
        """
        variance = self.bse.to_numpy() ** 2
        matrix = np.diag(np.nan_to_num(variance))
        unknown = ~np.isfinite(variance)
        matrix[unknown, :] = np.nan
        matrix[:, unknown] = np.nan
        frame: pd.DataFrame = pd.DataFrame(
            matrix, index=self.params.index, columns=self.params.index
        )
        return frame

    @property
    def cov(self) -> pd.DataFrame:
        """linearmodels' name for :meth:`cov_params` (see there what its off-diagonals are).

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0,
        ...                              random_state=0)
        >>> res.cov.equals(res.cov_params())
        True
        """
        return self.cov_params()

    def t_test(self, r_matrix: Any) -> ContrastResults:
        """z-tests of linear restrictions ``R θ = q``, one per row, on :meth:`cov_params`.

        As statsmodels' ``t_test`` with ``use_t=False``: the statistic is
        ``(R θ̂ - q) / √diag(R Σ R')`` against the normal law, Σ = :meth:`cov_params`. A
        post-processing of released numbers: no further privacy cost. The normal law
        approximates sampling error plus the privacy noise (Laplace noise has heavier tails),
        and the clipping bias bound (:attr:`bias`) is not added; :attr:`pvalues` and
        :meth:`conf_int` use the exact noise law and the bias bound, so prefer them for one
        parameter at a time. The covariance between parameters is not released (see
        :meth:`cov_params`): a row combining several is computed as if they were uncorrelated,
        and a :class:`~dplong.exceptions.DplongWarning` says so. A row that touches a
        withheld (NaN) parameter gives NaN.

        Parameters
        ----------
        r_matrix : str, sequence of str, array_like or (array_like, array_like)
            The restrictions, as statsmodels and patsy's ``DesignInfo.linear_constraint``
            take them: ``"exper + 20 * expersq = 0"``, ``["a = 0", "b = 1"]``, a matrix R
            (q = 0) or a pair (R, q); names are those of :attr:`params`.

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults
            ``effect``, ``sd``, ``statistic``, ``pvalue``, ``conf_int()``, ``summary()``.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> test = res.t_test("exper = 0")
        >>> bool(test.effect[0] == res.params["exper"]), bool(test.sd[0] == res.bse["exper"])
        (True, True)
        >>> z = res.t_test("exper = 0.05").statistic[0]
        >>> bool(z == (res.params["exper"] - 0.05) / res.bse["exper"])
        True
        """
        coefs, constants = self._constraint(r_matrix)
        self._say_uncorrelated(coefs != 0.0, "t_test")
        effect, cov, touched = self._restricted(coefs)
        sd = np.sqrt(np.diag(cov))
        with np.errstate(invalid="ignore", divide="ignore"):
            statistic = (effect - constants) / sd
        statistic[touched] = np.nan
        return ContrastResults(
            effect=np.where(touched, np.nan, effect),
            statistic=statistic,
            sd=sd,
            df_denom=self.nobs_users - self.params.size,
            distribution="norm",
        )

    def wald_test(self, r_matrix: Any) -> ContrastResults:
        """Joint Wald (χ²) test of the linear restrictions ``R θ = q`` on :meth:`cov_params`.

        As statsmodels' ``wald_test(..., use_f=False, scalar=True)``: ``W = (R θ̂ - q)'
        (R Σ R')⁻¹ (R θ̂ - q)`` against χ² with ``rank(R)`` degrees of freedom. Post-processing
        of released numbers. The covariance between parameters is not released (see
        :meth:`cov_params`): restrictions on several parameters are tested as if their
        estimates were uncorrelated, and a :class:`~dplong.exceptions.DplongWarning` says so.
        The same caveats as :meth:`t_test` apply (normal law, no bias bound).

        Parameters
        ----------
        r_matrix : str, sequence of str, array_like or (array_like, array_like)
            As in :meth:`t_test`; e.g. ``"union = married = 0"``.

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults
            ``statistic``, ``pvalue``, ``df_denom`` (the χ² degrees of freedom).

        Raises
        ------
        ParameterError
            If a restriction touches a withheld (NaN) parameter.

        Examples
        --------
        >>> import warnings
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> test = res.wald_test("exper = 0")          # one restriction: the squared z
        >>> bool(abs(test.statistic - res.tvalues["exper"] ** 2) < 1e-12), test.df_denom
        (True, 1)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     joint = res.wald_test("Intercept = exper = 0")
        >>> "not released" in str(caught[0].message)
        True
        """
        statistic, rank = self._wald(r_matrix, "wald_test")
        return ContrastResults(
            chi2=statistic,
            df_denom=rank,
            statistic=statistic,
            distribution="chi2",
            distargs=(rank,),
        )

    def f_test(self, r_matrix: Any) -> ContrastResults:
        """Joint F test of the linear restrictions ``R θ = q`` on :meth:`cov_params`.

        As statsmodels' ``f_test`` (``wald_test(..., use_f=True)``): ``F = W / q``, with ``W``
        the Wald statistic of :meth:`wald_test` and ``q`` the number of restrictions (the rank
        of ``R Σ R'``, as statsmodels reduces it for a rank-deficient one), against the F law
        with ``(q, n - p)`` degrees of freedom: n users (the clusters) less the p parameters,
        the denominator :meth:`t_test` uses. Σ is :meth:`cov_params`: the person-clustered
        sampling variance plus the privacy noise's variance, diagonal because no covariance
        between parameters is released. The same caveats as :meth:`wald_test` apply (normal
        approximation of the noise, no bias bound, restrictions on several parameters tested
        as if uncorrelated, with a :class:`~dplong.exceptions.DplongWarning`). Post-processing
        of released numbers: no further privacy cost.

        Parameters
        ----------
        r_matrix : str, sequence of str, array_like or (array_like, array_like)
            As in :meth:`t_test`; e.g. ``"union = married = 0"``.

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults
            ``fvalue`` (also ``statistic``), ``pvalue``, ``df_num`` (q), ``df_denom``
            (n - p), ``summary()``.

        Raises
        ------
        ParameterError
            If a restriction touches a withheld (NaN) parameter.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
        ...                                           groups="nr").fit(epsilon=1.0,
        ...                                                            random_state=0)
        >>> test = res.f_test("exper = 0")          # one restriction: the squared z
        >>> bool(abs(test.fvalue - res.tvalues["exper"] ** 2) < 1e-12)
        True
        >>> test.df_num, test.df_denom
        (1, 543)
        """
        statistic, rank = self._wald(r_matrix, "f_test")
        return ContrastResults(
            F=statistic / rank, df_num=rank, df_denom=self.nobs_users - self.params.size
        )

    def _wald(self, r_matrix: Any, method: str) -> tuple[float, int]:
        """The Wald statistic of ``R θ = q`` on :meth:`cov_params` and the rank of ``R Σ R'``."""
        coefs, constants = self._constraint(r_matrix)
        effect, cov, touched = self._restricted(coefs)
        if touched.any():
            withheld = self.params.index[self.params.isna().to_numpy()].tolist()
            raise ParameterError(
                f"r_matrix restricts withheld parameters {withheld} (NaN: no estimate); "
                "test the others"
            )
        self._say_uncorrelated((coefs != 0.0).any(axis=0, keepdims=True), method)
        gap = effect - constants
        return float(gap @ np.linalg.pinv(cov) @ gap), int(np.linalg.matrix_rank(cov))

    def _constraint(self, r_matrix: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``R`` and ``q`` of restrictions given as patsy's ``linear_constraint`` takes them."""
        names = [str(name) for name in self.params.index]
        try:
            constraint = patsy.DesignInfo(names).linear_constraint(r_matrix)
        except (patsy.PatsyError, ValueError, TypeError, KeyError) as err:
            raise ParameterError(
                f"r_matrix must be restrictions on the parameters {names} (a string such as "
                f"'{names[-1]} = 0', a list of them, a matrix R or a pair (R, q)): {err}"
            ) from None
        return np.asarray(constraint.coefs, float), np.asarray(constraint.constants, float)[:, 0]

    def _restricted(
        self, coefs: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
        """``R θ̂`` and ``R Σ R'`` over the parameters with an estimate, and which rows touch
        a withheld one."""
        known = self.params.notna().to_numpy() & self.bse.notna().to_numpy()
        touched = (coefs[:, ~known] != 0.0).any(axis=1)
        used = coefs[:, known]
        effect = used @ self.params.to_numpy()[known]
        cov = used @ self.cov_params().to_numpy()[np.ix_(known, known)] @ used.T
        return effect, cov, touched

    def _say_uncorrelated(self, rows: NDArray[np.bool_], method: str) -> None:
        """Warn when a test combines parameters whose covariance is not released."""
        combined = rows.sum(axis=1) > 1
        if not combined.any():
            return
        names = self.params.index[rows[combined].any(axis=0)].tolist()
        warn(
            f"{method} treats the estimates of {names} as uncorrelated: their covariance is "
            "not released (cov_params() is diagonal). Related terms, such as a regressor and "
            "its square, are correlated in truth."
        )

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
        ax = _axes(ax, (6.0, 1.0 + 0.45 * self.params.size))
        ci = self.conf_int(alpha)
        rows = np.arange(self.params.size)[::-1]  # the first parameter on top
        estimate = self.params.to_numpy()
        ax.errorbar(
            estimate,
            rows,
            xerr=np.vstack([estimate - ci["lower"], ci["upper"] - estimate]),
            fmt="o",
            capsize=3,
            label=f"estimate, {1 - alpha:.0%} interval",
        )
        ax.axvline(0.0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(rows, [str(name) for name in self.params.index])
        ax.set_ylim(-0.6, self.params.size - 0.4)
        ax.set_title(f"{self.model}: {self.formula}")
        ax.legend(loc="best")
        return ax

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
        ['estimate', 'std err', 'P (bias-adj.)', 'noise sd', '[0.05', '0.95]']
        >>> len(str(s).splitlines()) <= 25
        True
        """
        ci = self.conf_int(alpha)
        adjusted = bool((self.bias.fillna(0.0) > 0.0).any())
        p_name = "P (bias-adj.)" if adjusted else "P>|z|"
        table = pd.DataFrame(
            {
                "estimate": self.params,
                "std err": self.bse,
                p_name: self.pvalues,
                "noise sd": self.noise_sd,
                f"[{alpha / 2:g}": ci["lower"],
                f"{1 - alpha / 2:g}]": ci["upper"],
            }
        )
        footnote = ((f"{p_name}: of 'parameter = 0', the clipping bias bound given to the null."),)
        info = pd.Series(self._summary_info()).to_frame("value")
        return Summary(
            f"{self.model} results ({self._privacy_unit}-level differential privacy)",
            info,
            table,
            self.privacy.digest().reset_index(),
            self._summary_notes() + (footnote if adjusted else ()),
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
            "Release:": f"{self.variant}, {self.noise_law} noise",
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


@dataclass(frozen=True, repr=False, kw_only=True)
class RegressionResults(PanelResults):
    """Results of a private regression (:class:`dplong.LongitudinalOLS`).

    Everything of :class:`PanelResults`, plus the degrees of freedom and :meth:`predict`
    on the analyst's own rows. Like every result, it holds no row of the data: there are no
    ``fittedvalues`` or ``resid`` (they are functions of the private rows); compute them on
    data you may see with :meth:`predict`.

    Attributes
    ----------
    levels : mapping of str to tuple
        The declared levels of the factor columns the formula reads (public): with the
        formula, they rebuild the design's columns for :meth:`predict`.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages,
    ...                                           groups="nr").fit(epsilon=1.0,
    ...                                                            random_state=0)
    >>> isinstance(res, dplong.RegressionResults), res.df_model, res.df_resid
    (True, 1, 543)
    """

    levels: Mapping[str, tuple[Any, ...]]

    @classmethod
    def of(
        cls, results: PanelResults, *, levels: Mapping[str, tuple[Any, ...]]
    ) -> RegressionResults:
        """The regression results of a fit's :class:`PanelResults` and its declared levels.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.winsorized_mean(wages["lwage"], groups=wages["nr"], epsilon=1.0,
        ...                              random_state=0)
        >>> dplong.RegressionResults.of(res, levels={}).params.equals(res.params)
        True
        """
        values = {field.name: getattr(results, field.name) for field in fields(results)}
        return cls(**values, levels=dict(levels))

    @property
    def df_model(self) -> int:
        """Number of slopes: the parameters besides the intercept (statsmodels' ``df_model``).

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> dplong.LongitudinalOLS.from_formula("lwage ~ exper + expersq", wages,
        ...                                     groups="nr").fit(epsilon=4.0,
        ...                                                      random_state=0).df_model
        2
        """
        return int(self.params.size - ("Intercept" in self.params.index))

    @property
    def df_resid(self) -> int:
        """``nobs - df_model - 1``: the users less the slopes and a constant (the intercept, or
        under the within estimator the user effects' mean) — the degrees of freedom of a test
        clustered by person. The number of rows is private, so it does not enter.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> dplong.LongitudinalOLS.from_formula("lwage ~ exper + expersq", wages,
        ...                                     groups="nr").fit(epsilon=4.0,
        ...                                                      random_state=0).df_resid
        542
        """
        return self.nobs_users - self.df_model - 1

    def predict(self, exog: Any = None) -> pd.Series | NDArray[np.float64]:
        """The fitted linear predictor ``x'β̂`` on rows the analyst supplies.

        Post-processing of the released coefficients: no further privacy cost. The rows are
        the analyst's, so the predictions are **not private outputs** (they hold the rows);
        publish them only as you may publish those rows. Nothing of them is kept. Under the
        within estimator there is no intercept or user effect: the prediction is ``x'β̂``,
        the part the regressors explain. A withheld (NaN) coefficient gives NaN.

        Parameters
        ----------
        exog : pandas.DataFrame or array_like
            A DataFrame with the columns the formula's right-hand side reads (the formula is
            evaluated on it, with the declared levels; names that are not columns, like
            ``np``, are looked up in the caller's namespace); a row with a missing value gives
            NaN. Or a matrix of design columns in the order of :attr:`params`.

        Returns
        -------
        pandas.Series (indexed like ``exog``) or numpy.ndarray

        Examples
        --------
        >>> import pandas as pd, dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> res = dplong.LongitudinalOLS.from_formula("lwage ~ exper + I(exper**2)", wages,
        ...                                           groups="nr").fit(epsilon=4.0,
        ...                                                            random_state=0)
        >>> new = pd.DataFrame({"exper": [5.0, 10.0]})
        >>> pred = res.predict(new)
        >>> b = res.params
        >>> bool(abs(pred[1] - (b.iloc[0] + 10 * b.iloc[1] + 100 * b.iloc[2])) < 1e-12)
        True
        >>> res.predict([[1.0, 5.0, 25.0]]).tolist() == [pred[0]]
        True
        """
        params = self.params.to_numpy()
        if exog is None:
            raise ParameterError(
                "predict needs exog, rows you supply: the results hold no rows of the data"
            )
        if isinstance(exog, pd.DataFrame):
            env = patsy.EvalEnvironment.capture(1)
            values = self._design(exog, env) @ params
            predicted: pd.Series = pd.Series(values, index=exog.index, name="predicted")
            return predicted
        matrix = np.asarray(exog)
        if matrix.dtype.kind not in "iuf" or matrix.ndim not in (1, 2):
            raise DataError(
                f"exog must be a DataFrame or a numeric matrix, got {type(exog).__name__}"
            )
        matrix = np.atleast_2d(matrix.astype(np.float64))
        if matrix.shape[1] != params.size:
            raise DataError(
                f"exog must have {params.size} columns ({self.params.index.tolist()}), "
                f"got {matrix.shape[1]}"
            )
        return np.asarray(matrix @ params)

    def _design(self, exog: pd.DataFrame, env: patsy.EvalEnvironment) -> NDArray[np.float64]:
        """The design columns of :attr:`params` evaluated on ``exog`` (NaN: a missing value)."""
        outcome = "_dplong_outcome"
        rhs = self.formula.split("~", 1)[1]
        frame = exog.assign(**{outcome: 0.0})
        spec = DesignSpec.from_formula(
            f"{outcome} ~ {rhs}", frame, levels=self.levels, eval_env=env
        )
        absent = [name for name in self.params.index if name not in spec.columns]
        if absent:
            raise FormulaError(
                f"exog does not give the design columns {absent} of {self.formula!r} (its "
                f"columns give {list(spec.columns)}); check the dtypes of its factors"
            )
        _, X, _, missing = spec.evaluate(frame)
        X = X[:, [spec.columns.index(name) for name in self.params.index]]
        X[missing] = np.nan
        return np.asarray(X)


@dataclass(frozen=True, repr=False, kw_only=True)
class RandomEffectsResults(RegressionResults):
    """Results of a random-effects fit (:class:`dplong.RandomEffects`): everything of
    :class:`RegressionResults`, plus the variance components it quasi-demeaned with, as
    linearmodels' ``RandomEffectsResults`` gives them.

    Attributes
    ----------
    variance_decomposition : pandas.Series
        ``Effects`` (σ_u²), ``Residual`` (σ_e²) and ``Percent due to Effects`` (their share
        of the total: a fraction, as linearmodels gives it): DP outputs, or the stated values.
    theta : pandas.Series
        The quasi-demeaning ``1 - √(σ_e² / (T σ_u² + σ_e²))`` of a person with T rows, for T
        from 1 to ``max_rows`` (a person's own T is private: linearmodels' per-entity
        ``theta`` is not released).
    components : PanelResults or None
        The release of the components (``Group Var`` and ``Scale`` of the pilot's residuals,
        with their own intervals and ledger), or None when they were stated.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> res = dplong.RandomEffects.from_formula(
    ...     "lwage ~ exper", wages, groups="nr", bounds={"lwage": (-4, 5), "exper": (0, 20)}
    ... ).fit(epsilon=1.0, max_rows=8, variance_components=(0.1, 0.1), random_state=0)
    >>> res.variance_decomposition.tolist(), res.components is None
    ([0.1, 0.1, 0.5], True)
    """

    variance_decomposition: pd.Series
    theta: pd.Series
    components: PanelResults | None


@dataclass(frozen=True, repr=False, kw_only=True)
class GroupedResults(PanelResults):
    """Results of a grouped mean (:func:`dplong.winsorized_mean` with ``by=``): one mean per
    declared level of a public grouping and per column.

    Everything of :class:`PanelResults` (its parameters are named ``column[by=level]``), plus
    :meth:`summary_frame`, one row per level.

    Attributes
    ----------
    by : str
        The grouping's name.
    levels : tuple
        Its declared levels (public), in the order given.
    columns : tuple of str
        The averaged columns.

    Examples
    --------
    >>> import numpy as np, dplong
    >>> rng = np.random.default_rng(0)
    >>> arm = np.repeat(rng.integers(0, 2, 4_000), 3)  # each user's arm, on all their rows
    >>> y = rng.normal(10.0 + arm, 1.0)
    >>> res = dplong.winsorized_mean(y, groups=np.repeat(np.arange(4_000), 3), by=arm,
    ...                              levels=[0, 1], names=["y"], epsilon=2.0, random_state=0)
    >>> list(res.params.index), res.by, res.levels
    (['y[by=0]', 'y[by=1]'], 'by', (0, 1))
    """

    by: str
    levels: tuple[Any, ...]
    columns: tuple[str, ...]

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """One row per declared level: each column's mean, standard error, interval and the
        private count of the users with a value there (clamped to [0, n], post-processing).

        Parameters
        ----------
        alpha : float
            1 - the intervals' level.

        Returns
        -------
        pandas.DataFrame
            Indexed by the levels (named :attr:`by`); columns ``mean``, ``std err``,
            ``lower``, ``upper``, ``users (DP)``, under each averaged column's name (a
            two-level column index) when there are several.

        Examples
        --------
        >>> import numpy as np, dplong
        >>> rng = np.random.default_rng(0)
        >>> arm = np.repeat(rng.integers(0, 2, 4_000), 3)
        >>> y = rng.normal(10.0 + arm, 1.0)
        >>> res = dplong.winsorized_mean(y, groups=np.repeat(np.arange(4_000), 3), by=arm,
        ...                              levels=[0, 1], names=["y"], epsilon=2.0,
        ...                              random_state=0)
        >>> frame = res.summary_frame()
        >>> frame.index.tolist(), frame.columns.tolist()
        ([0, 1], ['mean', 'std err', 'lower', 'upper', 'users (DP)'])
        >>> bool(abs(frame.loc[1, "mean"] - frame.loc[0, "mean"] - 1.0) < 0.2)
        True
        """
        interval = self.conf_int(alpha)
        counts = self.users.clip(0, self.nobs_users)
        labels = [grouped_label(c, self.by, v) for v in self.levels for c in self.columns]
        frame = pd.DataFrame(
            {
                "mean": self.params[labels].to_numpy(),
                "std err": self.bse[labels].to_numpy(),
                "lower": interval.loc[labels, "lower"].to_numpy(),
                "upper": interval.loc[labels, "upper"].to_numpy(),
                # one column released: one count, labelled for the whole release
                "users (DP)": counts.reindex(labels).to_numpy()
                if len(labels) > 1
                else counts.iloc[:1].to_numpy(),
            },
            index=pd.MultiIndex.from_product(
                [list(self.levels), list(self.columns)], names=[self.by, "column"]
            ),
        )
        if len(self.columns) == 1:
            single: pd.DataFrame = frame.droplevel("column")
            return single
        wide: pd.DataFrame = frame.unstack("column").swaplevel(axis=1)
        ordered: pd.DataFrame = wide.reindex(
            index=list(self.levels),
            columns=pd.MultiIndex.from_product([list(self.columns), list(frame.columns)]),
        )
        return ordered


def grouped_label(column: str, by: str, level: Any) -> str:
    """The parameter name of ``column``'s mean at ``level`` of the grouping ``by``.

    Examples
    --------
    >>> from dplong.results import grouped_label
    >>> grouped_label("wage", "year", 1985)
    'wage[year=1985]'
    """
    return f"{column}[{by}={level}]"


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
        frame = self.curve(alpha)
        ax = _axes(ax, (6.0, 4.0))
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
        if self.model.name == "NadarayaWatson":  # a ratio: renormalised by its own degree
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


def _check_alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.integer | np.floating):
        raise ParameterError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise ParameterError(f"alpha must lie in (0, 1), got {alpha!r}")
    return float(alpha)


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
