"""Longitudinal linear regression by private averaging of per-user OLS/GLS fits (§5.3)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dplong._validation import RandomState
from dplong.dependence import DependenceModel
from dplong.exceptions import FormulaError, ParameterError
from dplong.formula import GroupsLike, LevelsLike
from dplong.models.base import (
    PanelModel,
    ScaleLike,
    check_min_rows,
    common_fit_args,
    scale_per_column,
)
from dplong.models.reduce import WorkingCorrelation, constant_within_users, per_user_coefficients
from dplong.privacy.accounting import Accountant
from dplong.privacy.plugin import ScaleRequest
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.results import PanelResults

__all__ = ["LongitudinalOLS"]

_CORRELATIONS = ("independence", "ar1", "exchangeable")


class LongitudinalOLS(PanelModel):
    """User-level DP linear regression for panel data (Def 5.13, Lemmas 5.14–5.15, Cor 5.16).

    Every user's own regression ``β̂_u = (X_u'X_u)^{-1} X_u'y_u`` — or, with a working
    correlation R, ``β̂_wu = (X_u'R^{-1}X_u)^{-1} X_u'R^{-1}y_u`` — is that user's statistic; the
    n x p matrix of them is released by the multivariate noisy Winsorized mean (Alg 5).
    The non-private counterpart is the average of per-user fits, unbiased for β (Lemma 5.14).

    Users with fewer than p rows or a singular design have no β̂_u; they contribute the private
    midpoint, so n stays the public number of users and the guarantee holds (their number is
    private and not reported; the data holder can check it with :meth:`identified_users`).

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + married + union", wages,
    ...                                             groups="nr", time="year")
    >>> res = model.fit(epsilon=1.0, scale=[1.0, 0.01, 0.5, 0.5], random_state=0)
    >>> list(res.params.index)
    ['Intercept', 'exper', 'married', 'union']
    >>> res.nobs_users, res.privacy.epsilon <= 1.0
    (545, True)
    """

    model_name = "LongitudinalOLS"
    basis = ("Theorem 4.2 via Corollary 5.16", "Theorem 6.4 via Corollary 6.10")

    def __init__(self, design: Any, correlation: WorkingCorrelation) -> None:
        super().__init__(design)
        self._correlation = correlation
        constant = constant_within_users(design.X, design.codes)
        names = [c for c, k in zip(design.columns, constant, strict=True) if k and c != "Intercept"]
        if names:
            raise FormulaError(
                f"{names} {'is' if len(names) == 1 else 'are'} constant within every user, so "
                "per-user regressions cannot identify "
                f"{'it' if len(names) == 1 else 'them'} (each user's intercept absorbs it). "
                "Remove such terms from the formula; to study a time-invariant characteristic, "
                "compare private means of per-user statistics across its levels (e.g. "
                "dplong.winsorized_mean on a subset), or interact it with a time-varying term."
            )

    @classmethod
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame,
        *,
        groups: GroupsLike,
        time: GroupsLike | None = None,
        correlation: str = "independence",
        correlation_param: float = 0.0,
        levels: LevelsLike | None = None,
    ) -> LongitudinalOLS:
        """Build the model from a patsy formula.

        Parameters
        ----------
        formula : str
            ``"y ~ x1 + x2"``; an intercept is included unless removed with ``- 1``.
        data : pandas.DataFrame
            One row per observation.
        groups : str or array_like
            Column name (or values) of the user id: the unit of privacy.
        time : str or array_like, optional
            Orders rows within a user (needed for ``correlation="ar1"``); otherwise row order.
        correlation : {"independence", "ar1", "exchangeable"}
            Public working correlation of a user's errors for the weighted estimator β̂_wu.
        correlation_param : float
            AR(1) coefficient in (-1, 1) or exchangeable correlation in [0, 1).
        levels : mapping of str to sequence, optional
            Declared levels of the factor columns, first level the reference:
            ``{"sector": ["trade", "services", "manufacturing"]}``. A text column used as a
            factor needs them (or a pandas ``Categorical`` dtype): the levels present in the
            data are private. Rows with another value are dropped like rows with a missing
            value. The rules are in :mod:`dplong.formula`.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr",
        ...                                             time="year", correlation="ar1",
        ...                                             correlation_param=0.5)
        >>> model
        LongitudinalOLS('lwage ~ exper', n_users=545)

        A text column as a factor, its levels declared (the first is the reference):

        >>> import numpy as np
        >>> wages["job"] = np.where(wages["occupation"] <= 3, "office", "manual")
        >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + job", wages,
        ...                                             groups="nr",
        ...                                             levels={"job": ["manual", "office"]})
        >>> model.exog_names
        ['Intercept', 'job[T.office]', 'exper']
        """
        if correlation not in _CORRELATIONS:
            raise ParameterError(f"correlation must be one of {_CORRELATIONS}, got {correlation!r}")
        bounds = {"ar1": (-1.0, 1.0), "exchangeable": (0.0, 1.0)}.get(correlation)
        if bounds and not (
            bounds[0] <= correlation_param < bounds[1]
            and (correlation == "exchangeable" or correlation_param > -1)
        ):
            raise ParameterError(
                f"correlation_param for {correlation!r} must lie in "
                f"{'(-1, 1)' if correlation == 'ar1' else '[0, 1)'}, "
                f"got {correlation_param!r}"
            )
        design = cls._build(formula, data, groups, time, depth=1, levels=levels)
        return cls(design, WorkingCorrelation(correlation, float(correlation_param)))

    def identified_users(self) -> int:
        """How many users have their own fit (enough rows and a non-singular design).

        **Not differentially private**: a diagnostic for the data holder, computed from the raw
        data — never publish it. Users without a fit contribute the private midpoint, pulling
        the estimate toward it in proportion to their share: if this is well below
        ``nobs_users``, drop terms that vary for few users (e.g. rarely changing indicators).

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> dplong.LongitudinalOLS.from_formula("lwage ~ exper + expersq", wages,
        ...                                     groups="nr").identified_users()
        545
        """
        design = self._design
        _, identified = per_user_coefficients(
            design.y, design.X, design.codes, design.n, self._correlation
        )
        return int(identified.sum())

    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        scale: ScaleLike = "estimate",
        scale_share: float | None = None,
        scale_bounds: tuple[float, float] | None = None,
        scale_method: str = "coinpress",
        privacy: str = "central",
        bound: float | list[float] | None = None,
        random_state: RandomState = None,
        variant: str = "improved",
        midpoint_share: float | None = None,
        gamma: float = DEFAULT_GAMMA,
        refine: bool = True,
        min_rows: int | None = None,
        min_eigenvalue: float | None = None,
        accountant: Accountant | None = None,
    ) -> PanelResults:
        """Release the average of per-user coefficients with user-level (ε, δ)-DP.

        Parameters
        ----------
        epsilon, delta : float
            Total budget over all p coefficients (central δ default ``1/n**2``).
        scale : "estimate", float, array_like or DependenceModel
            ``"estimate"`` (default): the variance proxy of one user's coefficient is estimated
            privately from the per-user coefficients (see ``scale_share``). Or that proxy given,
            per parameter or common; or a dependence model of a user's errors, which with
            ``min_rows`` T and ``min_eigenvalue`` θ (public bounds: every user has at least T
            rows and ``λ_min(X_u'X_u / T) >= θ``) gives the proxy ``ρ_u / (T θ)`` —
            ``Cov(β̂_u) ⪯ ρ_u (X_u'X_u)^{-1}`` (Lemma 5.15).
        scale_share, scale_bounds, scale_method
            With ``scale="estimate"``: the share of ε and δ spent on the scale (default
            :func:`~dplong.privacy.plugin.default_scale_share`), loose public
            bounds ``(σ²_min, σ²_max)`` on it (default
            :data:`~dplong.privacy.variance.DEFAULT_SCALE_BOUNDS`) and the plug-in
            (``"coinpress"`` or ``"bisection"``; :func:`dplong.privacy.estimate_scale`).
        privacy, bound, random_state, variant, midpoint_share, gamma, refine, accountant
            As in :func:`dplong.winsorized_mean`.

        Returns
        -------
        PanelResults

        Examples
        --------
        With enough users the scale is estimated privately and ε is all the fit needs:

        >>> import dplong, dplong.simulate
        >>> panel = dplong.simulate.linear_panel(3000, 6, [1.0, 0.5], random_state=0)
        >>> res = dplong.LongitudinalOLS.from_formula("y ~ x1", panel, groups="user").fit(
        ...     epsilon=1.0, random_state=0)
        >>> bool(abs(res.params["x1"] - 0.5) < 0.1), res.privacy.epsilon
        (True, 1.0)
        """
        design = self._design
        p = design.X.shape[1]
        options, rng = common_fit_args(
            self.nobs_users,
            p,
            epsilon=epsilon,
            delta=delta,
            privacy=privacy,
            bound=bound,
            variant=variant,
            midpoint_share=midpoint_share,
            gamma=gamma,
            random_state=random_state,
            refine=refine,
        )

        def from_dependence(model: DependenceModel) -> float:
            rows = check_min_rows(min_rows, "turn a dependence model into a radius")
            if min_eigenvalue is None or not (math.isfinite(min_eigenvalue) and min_eigenvalue > 0):
                raise ParameterError(
                    "min_eigenvalue θ > 0 (public lower bound on the smallest "
                    "eigenvalue of X_u'X_u / T) is needed with a dependence "
                    f"model; got {min_eigenvalue!r}"
                )
            return model.log_sobolev_constant(rows) / (rows * min_eigenvalue)

        proxy = scale_per_column(scale, p, from_dependence)
        request = ScaleRequest.check(scale_share, scale_bounds, scale_method)
        beta, identified = per_user_coefficients(
            design.y, design.X, design.codes, self.nobs_users, self._correlation
        )
        names = tuple(design.columns)
        release = self._release(beta, identified, proxy, names, options, rng, accountant, request)
        assumptions = (
            f"Per-user {'OLS' if self._correlation.kind == 'independence' else 'GLS'} "
            f"coefficients averaged (working correlation: {self._correlation.describe()}).",
            request.describe(release.scale)
            if proxy is None
            else _scale_note(scale, min_rows, min_eigenvalue),
            "Standard errors and intervals combine the stated scale (sampling, users "
            "independent) with the exact privacy-noise law.",
        )
        return self._results(
            release,
            list(names),
            np.sqrt(release.scale / self.nobs_users),
            assumptions,
            options.gamma,
        )


def _scale_note(scale: Any, min_rows: Any, min_eigenvalue: Any) -> str:
    if isinstance(scale, DependenceModel):
        return (
            f"Scale from {scale.describe()}, at least {min_rows} rows per user, "
            f"design eigenvalue bound {min_eigenvalue:g}."
        )
    return f"Variance proxy of one user's coefficients (scale): {np.ravel(scale).tolist()}."
