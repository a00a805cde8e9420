"""The results of a private regression and of a random-effects fit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray
from scipy import stats

from dplong._validation import check_alpha, checked_call
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import rhs_design
from dplong.results.panel import PanelResults


@dataclass(frozen=True, kw_only=True)
class PredictionResults:
    """The linear predictor on the analyst's rows (:meth:`RegressionResults.get_prediction`):
    as statsmodels' ``PredictionResults`` for the mean, with each row's clipping bias bound.

    Attributes
    ----------
    predicted_mean : pandas.Series
        ``x'β̂`` per row.
    se_mean : pandas.Series
        Its standard error, ``√(x' Σ x)`` with Σ the fit's ``cov_params()``.
    bias : pandas.Series
        Its clipping bias bound, ``|x|' bias``.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.results import PredictionResults
    >>> p = PredictionResults(predicted_mean=pd.Series([1.0, 2.0]),
    ...                       se_mean=pd.Series([0.1, 0.2]), bias=pd.Series([0.0, 0.05]))
    >>> p.summary_frame(0.05).round(3)
       mean  mean_se  bias  mean_ci_lower  mean_ci_upper
    0   1.0      0.1  0.00          0.804          1.196
    1   2.0      0.2  0.05          1.558          2.442
    """

    predicted_mean: pd.Series
    se_mean: pd.Series
    bias: pd.Series

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """The ``1 - alpha`` interval of each row's mean, ``x'β̂ ± (z se + bias)`` (normal law
        for the noise's, as :meth:`RegressionResults.t_test`), columns ``lower`` and ``upper``.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.results.regression import PredictionResults
        >>> p = PredictionResults(predicted_mean=pd.Series([1.0]), se_mean=pd.Series([0.1]),
        ...                       bias=pd.Series([0.05]))
        >>> p.conf_int(0.05).round(3).to_numpy().tolist()
        [[0.754, 1.246]]
        """
        width = float(stats.norm.ppf(1.0 - check_alpha(alpha) / 2.0)) * self.se_mean + self.bias
        interval: pd.DataFrame = pd.DataFrame(
            {"lower": self.predicted_mean - width, "upper": self.predicted_mean + width}
        )
        return interval

    @checked_call
    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """statsmodels' ``summary_frame`` for the mean: ``mean``, ``mean_se``, ``bias``,
        ``mean_ci_lower`` and ``mean_ci_upper``, one row per predicted row.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.results import PredictionResults
        >>> p = PredictionResults(predicted_mean=pd.Series([1.0]), se_mean=pd.Series([0.1]),
        ...                       bias=pd.Series([0.0]))
        >>> p.summary_frame(0.1).columns.tolist()
        ['mean', 'mean_se', 'bias', 'mean_ci_lower', 'mean_ci_upper']
        """
        interval = self.conf_int(alpha)
        frame: pd.DataFrame = pd.DataFrame(
            {
                "mean": self.predicted_mean,
                "mean_se": self.se_mean,
                "bias": self.bias,
                "mean_ci_lower": interval["lower"],
                "mean_ci_upper": interval["upper"],
            }
        )
        return frame


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

    @property
    def _df_denom(self) -> int:
        return self.df_resid

    @checked_call
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
        matrix, index = self._exog(exog, patsy.EvalEnvironment.capture(1), "predict")
        values = matrix @ self.params.to_numpy()
        if index is None:
            return np.asarray(values)
        predicted: pd.Series = pd.Series(values, index=index, name="predicted")
        return predicted

    @checked_call
    def get_prediction(self, exog: Any = None) -> PredictionResults:
        """The linear predictor ``x'β̂`` on rows the analyst supplies, with its standard error
        and clipping bias bound: statsmodels' ``get_prediction`` for the mean.

        Each row is the restriction ``x'θ`` of :meth:`t_test`: its standard error is
        ``√(x' Σ x)`` with Σ = :meth:`cov_params` (sampling error plus privacy noise), its
        bias bound ``|x|' bias``, and :meth:`PredictionResults.conf_int` widens the normal
        interval by it. Where the fit releases no covariance between parameters
        (:meth:`cov_params` is diagonal: every fit but the pooled family's), a row combining
        several is computed as if their estimates were uncorrelated, and a
        :class:`~dplong.exceptions.DplongWarning` says so. Post-processing of the released
        numbers; the rows are the analyst's, so, as with :meth:`predict`, the predictions are
        not private outputs. A row with a missing or infinite value (a factor level the fit
        did not declare reads as missing), or touching a withheld (NaN) coefficient, gives NaN.

        Parameters
        ----------
        exog : pandas.DataFrame or array_like
            As in :meth:`predict`.

        Returns
        -------
        PredictionResults
            ``predicted_mean``, ``se_mean`` and ``bias`` (indexed like ``exog``),
            ``conf_int(alpha)`` and ``summary_frame(alpha)``.

        Examples
        --------
        >>> import warnings, numpy as np, pandas as pd, dplong
        >>> rng = np.random.default_rng(0)
        >>> ids = np.repeat(np.arange(2000), 5)
        >>> x = rng.normal(size=ids.size)
        >>> y = 1 + 0.5 * x + rng.normal(size=2000)[ids] + rng.normal(size=ids.size)
        >>> panel = pd.DataFrame({"id": ids, "x": x, "y": y})
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # the fit's reliability notes
        ...     res = dplong.PooledOLS.from_formula("y ~ x", panel, groups="id").fit(
        ...         epsilon=2.0, random_state=0)
        >>> frame = res.get_prediction(pd.DataFrame({"x": [0.0, 1.0]})).summary_frame()
        >>> frame.columns.tolist()
        ['mean', 'mean_se', 'bias', 'mean_ci_lower', 'mean_ci_upper']
        >>> bool(np.allclose(frame["mean"], res.predict(pd.DataFrame({"x": [0.0, 1.0]}))))
        True
        >>> bool(np.isclose(frame["mean_se"].iloc[0], res.bse["Intercept"]))   # x = 0
        True
        """
        matrix, index = self._exog(exog, patsy.EvalEnvironment.capture(1), "get_prediction")
        known = self.params.notna().to_numpy() & self.bse.notna().to_numpy()
        rows = np.where(np.isfinite(matrix), matrix, 0.0)
        # NaN where a value is missing or infinite or a withheld coefficient is used
        invalid = ~np.isfinite(matrix).all(axis=1) | (rows[:, ~known] != 0.0).any(axis=1)
        rows[invalid] = 0.0
        self._say_uncorrelated(rows != 0.0, "get_prediction")
        used = rows[:, known]
        cov = self.cov_params().to_numpy()[np.ix_(known, known)]
        mean = used @ self.params.to_numpy()[known]
        # the diagonal of R Σ R' alone (t_test's whole matrix is rows x rows)
        se = np.sqrt(np.einsum("ij,jk,ik->i", used, cov, used))
        bias = np.abs(used) @ np.nan_to_num(self.bias.to_numpy()[known])
        labels = pd.RangeIndex(matrix.shape[0]) if index is None else index

        def series(values: NDArray[np.float64], name: str) -> pd.Series:
            return pd.Series(np.where(invalid, np.nan, values), index=labels, name=name)

        return PredictionResults(
            predicted_mean=series(mean, "mean"),
            se_mean=series(se, "mean_se"),
            bias=series(bias, "bias"),
        )

    def _exog(
        self, exog: Any, env: patsy.EvalEnvironment, method: str
    ) -> tuple[NDArray[np.float64], pd.Index | None]:
        """The design rows of ``exog`` (a DataFrame the formula is evaluated on in ``env``, or
        a matrix of design columns) and the DataFrame's index (None for a matrix)."""
        if exog is None:
            raise ParameterError(
                f"{method} needs exog, rows you supply: the results hold no rows of the data"
            )
        if isinstance(exog, pd.DataFrame):
            return self._design(exog, env), exog.index
        matrix = np.asarray(exog)
        if matrix.dtype.kind not in "iuf" or matrix.ndim not in (1, 2):
            raise DataError(
                f"exog must be a DataFrame or a numeric matrix, got {type(exog).__name__}"
            )
        matrix = np.atleast_2d(matrix.astype(np.float64))
        if matrix.shape[1] != self.params.size:
            raise DataError(
                f"exog must have {self.params.size} columns ({self.params.index.tolist()}), "
                f"got {matrix.shape[1]}"
            )
        return matrix, None

    def _design(self, exog: pd.DataFrame, env: patsy.EvalEnvironment) -> NDArray[np.float64]:
        """The design columns of :attr:`params` evaluated on ``exog`` (NaN: a missing value)."""
        spec, frame = rhs_design(self.formula, exog, env, self.levels)
        absent = [name for name in self.params.index if name not in spec.columns]
        if absent:
            raise FormulaError(
                f"exog does not give the design columns {absent} of {self.formula!r} (its "
                f"columns give {list(spec.columns)}); check the dtypes of its factors"
            )
        _, X, _, missing = spec.evaluate(frame, predicting=True)
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
