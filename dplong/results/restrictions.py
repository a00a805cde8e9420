"""Tests of linear restrictions on a fit's estimates: ``t_test``, ``wald_test``, ``f_test``.

Post-processing of released numbers on :meth:`RestrictionTests.cov_params`: the full
covariance where the fit's releases determine it (the pooled family), else diagonal, its
off-diagonal entries 0 because no covariance between parameters is released.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray
from scipy import optimize, stats
from statsmodels.stats.contrast import ContrastResults

from dplong._validation import check_alpha, checked_call, warn
from dplong.exceptions import ParameterError
from dplong.results.estimates import Estimates


class RestrictionTests(Estimates):
    """The covariance of a fit's estimates and the tests of linear restrictions on them: a
    base of :class:`~dplong.results.PanelResults`."""

    @checked_call
    def cov_params(self) -> pd.DataFrame:
        """Covariance of the released estimates: sampling error plus privacy noise.

        The diagonal is ``bse**2`` (``sampling_sd² + noise_sd²``). Where the fit's releases
        determine the covariance between parameters (:attr:`covariance`: the pooled family,
        whose released person-clustered sandwich and noise laws give it), the off-diagonal
        entries are theirs. Elsewhere **they are 0 because no covariance between two
        parameters is released**, not because the estimates are known to be uncorrelated:
        each parameter's sampling variance comes from its own column's private second moment
        (or stated scale), and a covariance would need the users' cross moments, another
        release on the budget. Estimates of related terms (a regressor and its square) are
        correlated in truth, so a test that combines parameters there (:meth:`t_test`,
        :meth:`wald_test`) says that it treats them as uncorrelated. A withheld parameter
        (NaN) has NaN in its row and column. Post-processing of released numbers.

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

        Pooled OLS releases its clustered sandwich and its noise's law: the slopes on two
        regressors that move together come out strongly negatively correlated, as they are.

        >>> import warnings, pandas as pd
        >>> rng = np.random.default_rng(0)
        >>> ids = np.repeat(np.arange(2000), 5)
        >>> x = rng.normal(size=ids.size)
        >>> z = 0.9 * x + 0.45 * rng.normal(size=ids.size)
        >>> y = 1 + x + z + rng.normal(size=2000)[ids] + rng.normal(size=ids.size)
        >>> panel = pd.DataFrame({"id": ids, "x": x, "z": z, "y": y})
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # the fit's reliability notes
        ...     pooled = dplong.PooledOLS.from_formula("y ~ x + z", panel,
        ...                                            groups="id").fit(epsilon=2.0, random_state=0)
        >>> cov = pooled.cov_params()
        >>> bool(np.allclose(np.diag(cov), pooled.bse**2))
        True
        >>> bool(cov.loc["x", "z"] / (pooled.bse["x"] * pooled.bse["z"]) < -0.8)
        True
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     joint = pooled.wald_test("x = z = 1")   # on the full covariance: said nothing
        >>> [str(w.message) for w in caught if "uncorrelated" in str(w.message)]
        []
        """
        variance = self.bse.to_numpy() ** 2
        unknown = ~(np.isfinite(variance) & self.params.notna().to_numpy())
        if self.covariance is None:
            matrix = np.diag(np.nan_to_num(variance))
        else:
            matrix = self.covariance.reindex(
                index=self.params.index, columns=self.params.index
            ).to_numpy(dtype=float, copy=True)
            matrix = (matrix + matrix.T) / 2.0  # symmetric to the last digit
            # the same numbers as bse, to the last digit (sampling_sd and noise_sd are the
            # diagonal's roots)
            np.fill_diagonal(matrix, variance)
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

    @checked_call
    def t_test(self, r_matrix: Any) -> ContrastResults:
        """z-tests of linear restrictions ``R θ = q``, one per row, on :meth:`cov_params`, with
        each row's clipping bias bound given to the null as :attr:`pvalues` gives it.

        As statsmodels' ``t_test`` with ``use_t=False``: the statistic is
        ``z = (R θ̂ - q) / √diag(R Σ R')`` against the normal law, Σ = :meth:`cov_params`.
        The released estimates may be off by up to their bias bounds (:attr:`bias`), so a row's ``R
        θ̂`` by up to ``b = |R| bias``: its p-value is that of ``max(|z| - b / sd, 0)`` and its
        interval ``R θ̂ ± (z_α sd + b)`` (:class:`~dplong.results.BiasAllowedContrast`), which for
        one parameter are :attr:`pvalues`' and :meth:`conf_int`'s up to the normal law standing in
        for the exact noise law (Laplace noise has heavier tails), except where its support is
        public (:attr:`support_lower`: no p-value there, and the interval stops at its end; a
        restriction is reported as it is). A post-processing of released
        numbers: no further privacy cost. Where the fit releases no covariance between
        parameters (:meth:`cov_params` is diagonal: every fit but the pooled family's), a row
        combining several is computed as if they were uncorrelated, and a
        :class:`~dplong.exceptions.DplongWarning` says so. A row that touches a withheld (NaN)
        parameter gives NaN.

        Parameters
        ----------
        r_matrix : str, sequence of str, array_like or (array_like, array_like)
            The restrictions, as statsmodels and patsy's ``DesignInfo.linear_constraint``
            take them: ``"exper + 20 * expersq = 0"``, ``["a = 0", "b = 1"]``, a matrix R
            (q = 0) or a pair (R, q); names are those of :attr:`params` (a curve's grid
            points ``x=<point>``: ``"x=0.6 - x=0.2 = 0"``).

        Returns
        -------
        BiasAllowedContrast
            statsmodels' ``ContrastResults`` (``effect``, ``sd``, ``statistic``, ``pvalue``,
            ``conf_int()``, ``summary()``) with ``bias``, each row's bias bound, in its
            p-values and intervals. A row that restricts a withheld (NaN) parameter is NaN
            throughout, and a :class:`~dplong.exceptions.DplongWarning` names it (the other
            rows are tested; :meth:`wald_test` refuses such a restriction).

        Raises
        ------
        ParameterError
            If a restriction is empty, R or q is not finite, or a row of R is all 0.

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
        >>> lower, upper = res.t_test("exper = 0").conf_int()[0]
        >>> bool(abs(upper - lower - 2 * (1.96 * res.bse["exper"] + res.bias["exper"])) < 1e-3)
        True
        """
        coefs, constants = self._constraint(r_matrix)
        self._say_uncorrelated(coefs != 0.0, "t_test")
        effect, cov, touched, bias = self._restricted(coefs)
        if touched.any():  # the other rows are still tested: said, not refused
            used = (coefs[touched] != 0.0).any(axis=0) & self.params.isna().to_numpy()
            withheld = self.params.index[used].tolist()
            warn(
                f"t_test row(s) {np.flatnonzero(touched).tolist()} restrict withheld parameters "
                f"{withheld} (NaN: no estimate): their effect, statistic and p-value are NaN"
            )
        sd = np.where(touched, np.nan, np.sqrt(np.diag(cov)))
        with np.errstate(invalid="ignore", divide="ignore"):
            statistic = (effect - constants) / sd  # NaN where a row touches a withheld one
        return BiasAllowedContrast(
            effect=np.where(touched, np.nan, effect),
            statistic=statistic,
            sd=sd,
            bias=np.where(touched, np.nan, bias),
            df_denom=self._df_denom,
        )

    @checked_call
    def wald_test(self, r_matrix: Any) -> BiasAllowedWald:
        """Joint Wald (χ²) test of the linear restrictions ``R θ = q`` on :meth:`cov_params`.

        As statsmodels' ``wald_test(..., use_f=False, scalar=True)``: ``W = (R θ̂ - q)'
        (R Σ R')⁻¹ (R θ̂ - q)`` against χ² with ``rank(R)`` degrees of freedom. Post-processing
        of released numbers. Where the fit releases no covariance between parameters
        (:meth:`cov_params` is diagonal: every fit but the pooled family's), restrictions on
        several parameters are tested as if their estimates were uncorrelated, and a
        :class:`~dplong.exceptions.DplongWarning` says so.
        The normal law stands in for the noise's. The clipping bias bounds are given to the
        null as :meth:`t_test` gives them, jointly: ``pvalue`` is that of the smallest
        statistic the bounds allow, ``min (R(θ̂ - δ) - q)' (R Σ R')⁻¹ (R(θ̂ - δ) - q)`` over
        the shifts δ with ``|δ_j| <= bias_j`` (a box-constrained least-squares problem,
        :class:`BiasAllowedWald`), which for one parameter is :meth:`t_test`'s
        ``max(|z| - bias / sd, 0)²``; ``statistic`` stays the plain ``W``.

        Parameters
        ----------
        r_matrix : str, sequence of str, array_like or (array_like, array_like)
            As in :meth:`t_test`; e.g. ``"union = married = 0"``.

        Returns
        -------
        BiasAllowedWald
            statsmodels' ``ContrastResults``: ``statistic`` (W), ``pvalue`` (of ``allowed``),
            ``df_denom`` (the χ² degrees of freedom), and ``allowed``, the statistic with the
            bias bounds given to the null.

        Raises
        ------
        ParameterError
            If a restriction touches a withheld (NaN) parameter, or the restrictions
            contradict each other (``[R, q]`` of higher rank than R), or as :meth:`t_test`.

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
        >>> bool(abs(test.pvalue - res.t_test("exper = 0").pvalue) < 1e-9)   # its bias given
        True
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     joint = res.wald_test("Intercept = exper = 0")
        >>> "not released" in str(caught[0].message)
        True
        """
        statistic, allowed, rank = self._wald(r_matrix, "wald_test")
        return BiasAllowedWald(statistic=statistic, allowed=allowed, df_num=rank)

    @checked_call
    def f_test(self, r_matrix: Any) -> BiasAllowedWald:
        """Joint F test of the linear restrictions ``R θ = q`` on :meth:`cov_params`.

        As statsmodels' ``f_test`` (``wald_test(..., use_f=True)``): ``F = W / q``, with ``W``
        the Wald statistic of :meth:`wald_test` and ``q`` the number of restrictions (the rank
        of ``R Σ R'``, as statsmodels reduces it for a rank-deficient one), against the F law
        with ``(q, n - p)`` degrees of freedom: n users (the clusters) less the p parameters,
        the denominator :meth:`t_test` uses. Σ is :meth:`cov_params`: the sampling
        covariance plus the privacy noise's, diagonal where the fit releases no covariance
        between parameters. As :meth:`wald_test`: the normal law stands in for the noise's,
        ``pvalue`` gives the bias bounds to the null (that of ``allowed / q``), and
        restrictions on several parameters are tested as if uncorrelated where the
        covariance is not released, with a :class:`~dplong.exceptions.DplongWarning`.
        Post-processing of released numbers: no further privacy cost.

        Parameters
        ----------
        r_matrix : str, sequence of str, array_like or (array_like, array_like)
            As in :meth:`t_test`; e.g. ``"union = married = 0"``.

        Returns
        -------
        BiasAllowedWald
            statsmodels' ``ContrastResults``: ``fvalue`` (also ``statistic``), ``pvalue``,
            ``df_num`` (q), ``df_denom`` (n - p), ``summary()``, and ``allowed``, the Wald
            statistic with the bias bounds given to the null.

        Raises
        ------
        ParameterError
            If a restriction touches a withheld (NaN) parameter, or the restrictions
            contradict each other (``[R, q]`` of higher rank than R), or as :meth:`t_test`.

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
        statistic, allowed, rank = self._wald(r_matrix, "f_test")
        return BiasAllowedWald(
            statistic=statistic,
            allowed=allowed,
            df_num=rank,
            df_denom=self._df_denom,
        )

    @property
    def _df_denom(self) -> int:
        """The tests' denominator degrees of freedom: the users less the parameters (a
        regression's :attr:`~dplong.results.RegressionResults.df_resid`, which counts the
        within estimator's constant too)."""
        return self.nobs_users - self.params.size

    def _wald(self, r_matrix: Any, method: str) -> tuple[float, float, int]:
        """The Wald statistic of ``R θ = q`` on :meth:`cov_params`, the smallest one the
        parameters' bias bounds allow and the rank of ``R Σ R'``."""
        coefs, constants = self._constraint(r_matrix)
        rank = np.linalg.matrix_rank(coefs)
        if rank < np.linalg.matrix_rank(np.column_stack([coefs, constants])):
            raise ParameterError(  # a repeated one is reduced, as statsmodels does
                f"r_matrix's {coefs.shape[0]} restrictions contradict each other (R has rank "
                f"{rank}, but [R, q] more): no θ satisfies them all"
            )
        effect, cov, touched, _ = self._restricted(coefs)
        if touched.any():
            unknown = self.params.isna().to_numpy() | self.bse.isna().to_numpy()
            withheld = self.params.index[(coefs != 0.0).any(axis=0) & unknown].tolist()
            raise ParameterError(
                f"r_matrix restricts withheld parameters {withheld} (NaN: no estimate, or no "
                "std err); test the others"
            )
        self._say_uncorrelated((coefs != 0.0).any(axis=0, keepdims=True), method)
        gap = effect - constants
        known = self.params.notna().to_numpy() & self.bse.notna().to_numpy()
        bias = np.nan_to_num(self._null_bias.to_numpy()[known])
        statistic, allowed = allowed_wald(gap, cov, coefs[:, known], bias)
        return statistic, allowed, int(np.linalg.matrix_rank(cov))

    def _constraint(self, r_matrix: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``R`` and ``q`` of restrictions given as patsy's ``linear_constraint`` takes them."""
        names = self._restriction_names
        expected = (
            f"r_matrix must be restrictions on the parameters {names} (a string such as "
            f"'{names[-1]} = 0', a list of them, a matrix R or a pair (R, q))"
        )
        texts = [r_matrix] if isinstance(r_matrix, str) else r_matrix
        if isinstance(texts, list | tuple) and any(
            isinstance(text, str) and not text.strip() for text in texts
        ):
            raise ParameterError(f"{expected}: got an empty restriction {r_matrix!r}")
        try:
            constraint = patsy.DesignInfo(names).linear_constraint(r_matrix)
        except (patsy.PatsyError, ValueError, TypeError, KeyError, IndexError) as err:
            raise ParameterError(f"{expected}: {err}") from None
        coefs = np.asarray(constraint.coefs, float)
        constants = np.asarray(constraint.constants, float)[:, 0]
        if not (np.isfinite(coefs).all() and np.isfinite(constants).all()):
            raise ParameterError(f"{expected}: R and q must be finite, got NaN or ±inf")
        if not coefs.any(axis=1).all():
            rows = np.flatnonzero(~coefs.any(axis=1)).tolist()
            raise ParameterError(f"{expected}: row(s) {rows} of R are all 0, restricting nothing")
        return coefs, constants

    @property
    def _restriction_names(self) -> list[str]:
        """The parameters' names in a restriction's text: those of :attr:`params`."""
        return [str(name) for name in self.params.index]

    def _restricted(
        self, coefs: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]:
        """``R θ̂``, ``R Σ R'`` and each row's clipping bias bound ``|R| bias`` over the
        parameters with an estimate, and which rows touch a withheld one."""
        known = self.params.notna().to_numpy() & self.bse.notna().to_numpy()
        touched = (coefs[:, ~known] != 0.0).any(axis=1)
        used = coefs[:, known]
        effect = used @ self.params.to_numpy()[known]
        cov = used @ self.cov_params().to_numpy()[np.ix_(known, known)] @ used.T
        bias = np.abs(used) @ np.nan_to_num(self._null_bias.to_numpy()[known])
        return effect, cov, touched, bias

    def _say_uncorrelated(self, rows: NDArray[np.bool_], method: str) -> None:
        """Warn when a test combines parameters whose covariance is not released."""
        combined = rows.sum(axis=1) > 1
        if self.covariance is not None or not combined.any():
            return
        names = self.params.index[rows[combined].any(axis=0)].tolist()
        warn(
            f"{method} treats the estimates of {names} as uncorrelated: their covariance is "
            "not released (cov_params() is diagonal). Related terms, such as a regressor and "
            "its square, are correlated in truth."
        )


class BiasAllowedContrast(ContrastResults):  # type: ignore[misc]  # statsmodels is untyped
    """statsmodels' z-test results of :meth:`RestrictionTests.t_test` with each row's
    clipping bias bound ``bias`` given to the null: the p-value of ``max(|z| - bias / sd, 0)``
    and the interval ``effect ± (z_α sd + bias)`` (both as statsmodels' where ``bias`` is 0).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.results.restrictions import BiasAllowedContrast
    >>> test = BiasAllowedContrast(effect=np.array([0.5]), statistic=np.array([5.0]),
    ...                            sd=np.array([0.1]), bias=np.array([0.3]), df_denom=100)
    >>> round(float(test.pvalue), 4), test.conf_int().round(3).tolist()   # as if z were 2
    (0.0455, [[0.004, 0.996]])
    """

    def __init__(
        self,
        *,
        effect: NDArray[np.float64],
        statistic: NDArray[np.float64],
        sd: NDArray[np.float64],
        bias: NDArray[np.float64],
        df_denom: int,
    ) -> None:
        super().__init__(
            effect=effect, statistic=statistic, sd=sd, df_denom=df_denom, distribution="norm"
        )
        self.bias = bias
        with np.errstate(invalid="ignore", divide="ignore"):
            allowed = np.maximum(np.abs(statistic) - np.where(bias > 0.0, bias / sd, 0.0), 0.0)
        self.pvalue = np.squeeze(2.0 * self.dist.sf(allowed))

    def conf_int(self, alpha: float = 0.05) -> NDArray[np.float64]:
        """The interval of each row's effect at level ``1 - alpha``, widened by its bias bound."""
        width = self.dist.ppf(1.0 - check_alpha(alpha) / 2.0) * self.sd + self.bias
        return np.column_stack((self.effect - width, self.effect + width))

    @property
    def _adjusted(self) -> bool:
        """Whether a bias bound is given to some row's null: its p-value is then not the
        ``P>|z|`` of the ``z`` beside it."""
        return bool(np.any(self.bias > 0.0))

    def summary(self, xname: Any = None, alpha: float = 0.05, title: Any = None) -> Any:
        """statsmodels' table, its p-value column named ``P(adj)`` where a bias bound is given
        to the null (the results' ``P (bias-adj.)``, in statsmodels' narrow column), not
        ``P>|z|`` of the ``z`` beside it (an audit read z = 6.8 next to P>|z| = 1.000)."""
        table = super().summary(xname=xname, alpha=check_alpha(alpha), title=title)
        if self._adjusted:
            for cell in table[0]:
                if cell.data == "P>|z|":
                    cell.data = "P(adj)"
        return table

    def summary_frame(self, xname: Any = None, alpha: float = 0.05) -> pd.DataFrame:
        """statsmodels' frame of :meth:`summary`, its p-value column named as there."""
        frame: pd.DataFrame = super().summary_frame(xname=xname, alpha=check_alpha(alpha))
        if self._adjusted:
            frame = frame.rename(columns={"P>|z|": "P(adj)"})
        return frame


def allowed_wald(
    gap: NDArray[np.float64],
    cov: NDArray[np.float64],
    coefs: NDArray[np.float64],
    bias: NDArray[np.float64],
) -> tuple[float, float]:
    """The Wald statistic ``W = g' C⁺ g`` of the restrictions' gap ``g = R θ̂ - q`` (C = R Σ
    R', ``⁺`` its pseudo-inverse), and the smallest the bias bounds allow: ``min ‖L'(g -
    R δ)‖²`` over ``|δ_j| <= bias_j`` with ``L L' = C⁺``, a bounded least-squares problem
    (scipy's ``lsq_linear``) in the parameters whose bound is positive. For one parameter it
    is ``max(|g| / sd - bias / sd, 0)²``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.results.restrictions import allowed_wald
    >>> w, a = allowed_wald(np.array([3.0]), np.array([[1.0]]), np.eye(1), np.array([1.0]))
    >>> float(w), round(float(a), 12)
    (9.0, 4.0)
    >>> allowed_wald(np.array([0.5, -0.5]), np.eye(2), np.eye(2), np.array([1.0, 1.0]))[1]
    0.0
    """
    values, vectors = np.linalg.eigh(cov)
    kept = values > 1e-15 * max(float(values.max()), 0.0)  # numpy's pinv cut-off
    root = vectors[:, kept] / np.sqrt(values[kept])  # root @ root.T is the pseudo-inverse
    target = root.T @ gap
    statistic = float(target @ target)
    shifted = bias > 0.0
    if not shifted.any():
        return statistic, statistic
    design = root.T @ coefs[:, shifted]
    fit = optimize.lsq_linear(design, target, bounds=(-bias[shifted], bias[shifted]))
    residual = target - design @ fit.x
    return statistic, float(min(residual @ residual, statistic))


class BiasAllowedWald(ContrastResults):  # type: ignore[misc]  # statsmodels is untyped
    """statsmodels' χ² (or, with ``df_denom``, F) results of :meth:`RestrictionTests.wald_test`
    and :meth:`RestrictionTests.f_test` with the clipping bias bounds given to the null:
    ``statistic`` is the plain Wald statistic (over ``df_num`` for F), ``allowed`` the
    smallest the bounds allow (:func:`allowed_wald`), and ``pvalue`` that of ``allowed``.

    Examples
    --------
    >>> from dplong.results.restrictions import BiasAllowedWald
    >>> test = BiasAllowedWald(statistic=9.0, allowed=4.0, df_num=1)
    >>> float(test.statistic), round(float(test.pvalue), 4)     # the p-value of 4 on 1 df
    (9.0, 0.0455)
    """

    def __init__(
        self, *, statistic: float, allowed: float, df_num: int, df_denom: int | None = None
    ) -> None:
        if df_denom is None:
            super().__init__(
                chi2=statistic,
                df_denom=df_num,
                statistic=statistic,
                distribution="chi2",
                distargs=(df_num,),
            )
            pvalue = stats.chi2.sf(allowed, df_num)
        else:
            super().__init__(F=statistic / df_num, df_num=df_num, df_denom=df_denom)
            pvalue = stats.f.sf(allowed / df_num, df_num, df_denom)
        self.allowed = allowed
        self.pvalue = np.squeeze(pvalue)

    def summary(self, xname: Any = None, alpha: float = 0.05, title: Any = None) -> str:
        """statsmodels' one-line summary, with the statistic the bias bounds allow beside the
        plain one and the p-value named for it (``P (bias-adj.)``, as the results' p-values).

        Examples
        --------
        >>> from dplong.results.restrictions import BiasAllowedWald
        >>> BiasAllowedWald(statistic=9.0, allowed=4.0, df_num=1).summary()
        '<Wald test (chi2): statistic=9 (4 after the bias bounds), P (bias-adj.)=0.0455, df=1>'
        """
        kind = "F test: F" if hasattr(self, "fvalue") else "Wald test (chi2): statistic"
        value = float(self.statistic)
        allowed = self.allowed / self.df_num if hasattr(self, "fvalue") else self.allowed
        df = (
            f"df_num={self.df_num:g}, df_denom={self.df_denom:g}"
            if hasattr(self, "fvalue")
            else f"df={self.df_denom:g}"
        )
        return (
            f"<{kind}={value:.6g} ({allowed:.6g} after the bias bounds), "
            f"P (bias-adj.)={float(self.pvalue):.3g}, {df}>"
        )
