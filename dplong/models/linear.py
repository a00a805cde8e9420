"""Longitudinal linear regression by private averaging of per-user OLS/GLS fits (§5.3)."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState
from dplong.dask_frames import ReducedPanel, design_spec, is_dask, reduce_design
from dplong.dependence import DependenceModel
from dplong.exceptions import ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign
from dplong.models.base import (
    Block,
    PanelModel,
    ScaleLike,
    Statistics,
    check_min_rows,
    scale_per_column,
)
from dplong.models.reduce import WorkingCorrelation, coefficients_from_sums, cross_product_sums
from dplong.privacy.accounting import Accountant
from dplong.privacy.engine import Release
from dplong.privacy.options import Focus, PrivacyModel, Variant
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.results import PanelResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["LongitudinalOLS"]

_CORRELATIONS = ("independence", "ar1", "exchangeable")


class LongitudinalOLS(PanelModel):
    """User-level DP linear regression for panel data (Def 5.13, Lemmas 5.14–5.15, Cor 5.16).

    Every user's own regression ``β̂_u = (X_u'X_u)^{-1} X_u'y_u`` — or, with a working
    correlation R, ``β̂_wu = (X_u'R^{-1}X_u)^{-1} X_u'R^{-1}y_u`` — is that user's statistic; the
    n x p matrix of them is released by the multivariate noisy Winsorized mean (Alg 5).
    The non-private counterpart is the average of per-user fits, unbiased for β (Lemma 5.14).

    Users with fewer than p rows or a singular design have no β̂_u and contribute nothing: the
    release is the mean over the users who have a fit, with their number counted privately
    (and reported as such). Terms that vary within few users (a rarely changing indicator, a
    time-invariant characteristic) are identified by few users; the results then say so from
    that private count, and the data holder can check the exact number with the non-private
    :meth:`identified_users`.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + married + union", wages,
    ...                                             groups="nr", time="year")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> list(res.params.index)
    ['Intercept', 'exper', 'married', 'union']
    >>> res.nobs_users, res.privacy.epsilon <= 1.0
    (545, True)
    """

    model_name = "LongitudinalOLS"
    basis = ("Theorem 4.2 via Corollary 5.16", "Theorem 6.4 via Corollary 6.10")

    def __init__(self, design: PanelDesign | ReducedPanel, correlation: WorkingCorrelation) -> None:
        super().__init__(design)
        self._correlation = correlation

    @classmethod
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame | DaskFrame,
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
        data : pandas.DataFrame or dask.dataframe.DataFrame
            One row per observation. A Dask frame is reduced where it lies, partition by
            partition, to per-user sums (:mod:`dplong.dask_frames`; with ``"ar1"`` after a
            shuffle of the rows by user), with the same results.
        groups : str or array_like
            Column name (or values) of the user id: the unit of privacy. A column name with a
            Dask frame.
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
        working = WorkingCorrelation(correlation, float(correlation_param))
        if not is_dask(data):
            return cls(cls._build(formula, data, groups, time, depth=1, levels=levels), working)
        spec = design_spec(formula, data, levels=levels, eval_env=patsy.EvalEnvironment.capture(1))
        design = reduce_design(
            data,
            spec,
            groups=groups,
            time=time,
            sums=functools.partial(_cross_products, correlation=working),
            statistic=functools.partial(
                _coefficients, p=len(spec.spec.columns), correlation=working
            ),
            ordered=working.kind == "ar1",  # prewhitening needs a user's rows in order
        )
        return cls(design, working)

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
        return int(np.isfinite(self._user_coefficients()).all(axis=1).sum())

    def _user_coefficients(self) -> NDArray[np.float64]:
        """Every user's β̂_u (NaN: not identified): from the rows, or a Dask frame's sums."""
        design = self._design
        if isinstance(design, ReducedPanel):
            return design.statistics
        sums = _cross_products(design, self._correlation)
        return _coefficients(sums, len(design.columns), self._correlation)

    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        scale: ScaleLike = "estimate",
        focus: Focus = None,
        privacy: PrivacyModel = "central",
        bound: float | list[float] | None = None,
        variant: Variant = "default",
        gamma: float = DEFAULT_GAMMA,
        refine: bool = True,
        min_rows: int | None = None,
        min_eigenvalue: float | None = None,
        random_state: RandomState = None,
        accountant: Accountant | None = None,
    ) -> PanelResults:
        """Release the average of per-user coefficients with user-level (ε, δ)-DP.

        Parameters
        ----------
        epsilon, delta : float
            Total budget over all p coefficients (central δ default ``1/n**2``).
        scale : "estimate", float, array_like or DependenceModel
            ``"estimate"`` (default): the spread of one user's coefficients is estimated
            privately, in one stage for all of them. Or the variance proxy of one user's
            coefficient, per parameter or common; or a dependence model of a user's errors,
            which with ``min_rows`` T and ``min_eigenvalue`` θ (public bounds: every user has
            at least T rows and ``λ_min(X_u'X_u / T) >= θ``) gives the proxy ``ρ_u / (T θ)`` —
            ``Cov(β̂_u) ⪯ ρ_u (X_u'X_u)^{-1}`` (Lemma 5.15).
        focus : list of str or dict, optional
            The coefficients whose accuracy matters most: a list of names (the others get a
            small weight) or ``{name: weight}`` with weights in (0, 1]. The budget is shared
            to minimise the weighted error (PLAN); default all alike.
        privacy, bound, variant, gamma, refine, random_state, accountant
            As in :func:`dplong.winsorized_mean`.

        Returns
        -------
        PanelResults

        Examples
        --------
        ε is all the fit needs:

        >>> import dplong, dplong.simulate
        >>> panel = dplong.simulate.linear_panel(3000, 6, [1.0, 0.5], random_state=0)
        >>> res = dplong.LongitudinalOLS.from_formula("y ~ x1", panel, groups="user").fit(
        ...     epsilon=1.0, random_state=0)
        >>> bool(abs(res.params["x1"] - 0.5) < 0.1), res.privacy.epsilon <= 1.0
        (True, True)
        """
        design = self._design
        names = tuple(design.columns)
        p = len(names)
        request = self._request(
            self.nobs_users,
            p,
            epsilon=epsilon,
            delta=delta,
            privacy=privacy,
            bound=bound,
            variant=variant,
            gamma=gamma,
            refine=refine,
            focus=focus,
            random_state=random_state,
            accountant=accountant,
        )

        def from_dependence(model: DependenceModel) -> float:
            rows = check_min_rows(min_rows, "turn a dependence model into a radius")
            if (
                isinstance(min_eigenvalue, bool)
                or not isinstance(min_eigenvalue, int | float | np.integer | np.floating)
                or not (math.isfinite(min_eigenvalue) and min_eigenvalue > 0)
            ):
                raise ParameterError(
                    "min_eigenvalue θ > 0 (public lower bound on the smallest "
                    "eigenvalue of X_u'X_u / T) is needed with a dependence "
                    f"model; got {min_eigenvalue!r}"
                )
            return model.log_sobolev_constant(rows) / (rows * float(min_eigenvalue))

        proxy = scale_per_column(scale, p, from_dependence)

        def statistics(_: tuple[Release, ...]) -> Statistics:
            return Statistics(self._user_coefficients(), scale=proxy)

        block = Block(names, 1.0, statistics, stated_scale=proxy is not None)
        kind = "OLS" if self._correlation.kind == "independence" else "GLS"
        assumptions = (
            f"Per-user {kind} coefficients averaged over the users who have one (working "
            f"correlation: {self._correlation.describe()}); users with too few rows or a "
            "singular design contribute nothing (their number is estimated privately).",
            "Scale estimated privately (the spread of the per-user coefficients)."
            if proxy is None
            else _scale_note(scale, min_rows, min_eigenvalue),
            "Standard errors and intervals: the sampling error of the average under that "
            "scale (users independent), the exact privacy-noise law and the clipping bias bound.",
        )
        return self._fit(request, [block], assumptions=assumptions)


def _scale_note(scale: Any, min_rows: Any, min_eigenvalue: Any) -> str:
    if isinstance(scale, DependenceModel):
        return (
            f"Scale from {scale.describe()}, at least {min_rows} rows per user, "
            f"design eigenvalue bound {min_eigenvalue:g}."
        )
    return f"Variance proxy of one user's coefficients (scale): {np.ravel(scale).tolist()}."


def _cross_products(design: PanelDesign, correlation: WorkingCorrelation) -> NDArray[np.float64]:
    """Per-user sufficient sums of the rows of a design (the whole data, or a partition)."""
    return cross_product_sums(design.y, design.X, design.codes, design.n, correlation)


def _coefficients(
    sums: NDArray[np.float64], p: int, correlation: WorkingCorrelation
) -> NDArray[np.float64]:
    """Per-user coefficients from those sums (NaN: not identified)."""
    return coefficients_from_sums(sums, p, correlation)[0]
