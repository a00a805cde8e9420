"""Longitudinal linear regression: private averaging of per-user OLS/GLS fits (§5.3), or the
private within (entity fixed-effects) estimator (:mod:`dplong.models.within`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, check_choice, per_column, real_number
from dplong.dask_frames import FrameSpec, ReducedPanel, design_spec, is_dask, reduce_design
from dplong.dependence import DependenceModel
from dplong.exceptions import FormulaError, ParameterError
from dplong.formula import DesignSpec, GroupsLike, LevelsLike, PanelDesign, group_design
from dplong.models.base import (
    DEFAULT_MAX_ROWS,
    MAX_ROWS_HELP,
    Block,
    FitRequest,
    PanelModel,
    ScaleLike,
    Statistics,
    check_max_rows,
    check_min_rows,
    scale_per_column,
)
from dplong.models.command_line import TAIL_OPTIONS, CommandLineModel, Option, register
from dplong.models.effects import panel_effects
from dplong.models.reduce import (
    WorkingCorrelation,
    coefficients_from_sums,
    cross_product_sums,
    user_means,
    user_totals,
    within_cross_products,
    within_sums,
)
from dplong.models.within import (
    WithinProducts,
    coefficient_names,
    regressor_columns,
    select_products,
    within_blocks,
    within_results,
    within_shares,
)
from dplong.planning import advised
from dplong.privacy.accounting import Accountant
from dplong.privacy.engine import Release
from dplong.privacy.options import Focus, PrivacyModel, Variant
from dplong.privacy.radius import DEFAULT_GAMMA, Moment, Tail, TailModel, check_tail
from dplong.results import RegressionResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["Estimator", "LongitudinalOLS"]

_CORRELATIONS = ("independence", "ar1", "exchangeable")
Estimator = Literal["per-user", "within"]
ESTIMATORS: tuple[Estimator, ...] = ("per-user", "within")
CovType = Literal["clustered", "cluster"]
#: The person-clustered sandwich in linearmodels' and statsmodels' spelling: the only one.
COV_TYPES: tuple[CovType, ...] = ("clustered", "cluster")


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

    ``fit(estimator="within")`` releases the **within (entity fixed-effects) estimator**
    instead (linearmodels' ``PanelOLS(entity_effects=True)``): every user's demeaned cross
    products, pooled (:mod:`dplong.models.within`). Which to use: with a common slope both are
    consistent, and the within estimator is far more precise on short panels (it weighs each
    user by how much their regressors vary, uses users with fewer rows than parameters, and
    needs no per-user fit); with user-specific slopes the per-user estimator targets their
    plain average over the users who can fit one, the within estimator their average weighted
    by each user's within variation of x.

    Examples
    --------
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + married + union", wages,
    ...                                             groups="nr", time="year")
    >>> import warnings
    >>> with warnings.catch_warnings(record=True):  # also shown as a DplongWarning
    ...     res = model.fit(epsilon=8.0, random_state=0)
    >>> list(res.params.index)
    ['Intercept', 'exper', 'married', 'union']
    >>> res.nobs_users, res.privacy.epsilon <= 8.0
    (545, True)
    >>> print(res.warnings[0])  # doctest: +ELLIPSIS
    Only about 149 of the 545 users (private count, sd 5.9) have a statistic of their own; ...

    Few men change union or marital status, so few identify a fit of their own.
    """

    model_name = "LongitudinalOLS"
    basis = ("Theorem 4.2 via Corollary 5.16", "Theorem 6.4 via Corollary 6.10")

    def __init__(
        self,
        design: PanelDesign | ReducedPanel,
        correlation: WorkingCorrelation,
        within: Callable[[], WithinProducts] | None = None,
        *,
        levels: Mapping[str, tuple[Any, ...]],
        entity_effects: bool = False,
    ) -> None:
        super().__init__(design)
        self._entity_effects = entity_effects  # the formula's EntityEffects: the within fit
        self._correlation = correlation
        self._levels = levels  # declared (public): the results rebuild the design from them
        # a Dask frame's within cross products: reduced at the first within fit, then kept
        self._within = None if within is None else functools.cache(within)

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
            linearmodels' terms are understood: ``+ EntityEffects`` absorbs the user effects
            (``fit`` then releases the within estimator), ``+ TimeEffects`` adds dummies of
            the ``time`` column, ``C(time)``, on its declared periods (``levels={time: [...]}``
            or a ``Categorical`` column; :mod:`dplong.models.effects`).
        data : pandas.DataFrame or dask.dataframe.DataFrame
            One row per observation. A Dask frame is reduced where it lies, partition by
            partition, to per-user sums (:mod:`dplong.dask_frames`; with ``"ar1"`` after a
            shuffle of the rows by user), with the same results; the within estimator's cross
            products at its first fit, in two more passes (the users' means, then the
            products of the deviations from them).
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
        correlation_param = real_number(correlation_param, "correlation_param")
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
        formula, entity = panel_effects(formula, data, time=time, levels=levels)
        if not is_dask(data):
            table = DesignSpec.from_formula(
                formula, data, levels=levels, eval_env=patsy.EvalEnvironment.capture(1)
            )
            grouped = group_design(table, data, groups=groups, time=time)
            return cls(grouped, working, levels=table.levels, entity_effects=entity)
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
        within = functools.partial(_reduce_within, data, spec, groups)
        return cls(design, working, within, levels=spec.spec.levels, entity_effects=entity)

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

    def _within_products(self) -> WithinProducts:
        """Every user's within cross products (NaN: fewer than two rows) and row counts, over
        the regressors without the intercept: from the rows, or a Dask frame's, reduced the
        same way (:func:`_reduce_within`)."""
        if self._within is not None:
            return self._within()
        design = self._design
        assert isinstance(design, PanelDesign)  # a Dask frame's model has its reduction
        X = np.ascontiguousarray(design.X[:, regressor_columns(design.columns)])
        rows = np.bincount(design.codes, minlength=design.n).astype(np.float64)
        return within_cross_products(design.y, X, design.codes, design.n), rows

    @advised
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
        tail: Tail | Moment | None = None,
        min_rows: int | None = None,
        min_eigenvalue: float | None = None,
        estimator: Estimator | None = None,
        between: Sequence[str] | None = None,
        cov_type: CovType = "clustered",
        max_rows: int = DEFAULT_MAX_ROWS,
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> RegressionResults:
        """Release the average of per-user coefficients, or the within estimator, with
        user-level (ε, δ)-DP.

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
        privacy, bound, variant, gamma, refine, random_state, rng, accountant
            As in :func:`dplong.winsorized_mean`.
        tail : str or Moment, optional
            Per-user estimator: the tail model of one user's coefficients, as
            :func:`dplong.winsorized_mean`'s ``tail``. Coefficients from a few rows each are
            often heavy-tailed; by default the engine looks for that privately and, where it
            finds it, allows for the heaviest tail it vouches for (wide intervals).
            ``dplong.Moment(k=4, bound=[...])``, a bound on ``E|β_u - β|^4`` per coefficient
            the analyst can justify, replaces that worst case with the clip and bias bound of
            the moment.
        estimator : {"per-user", "within"}, optional
            Default ``"within"`` when the formula has ``EntityEffects`` (which takes no
            other), else ``"per-user"``. ``"per-user"``: the average of the users' own
            regressions (Def 5.13, Cor 5.16), with an ``Intercept`` and the paper's error
            bounds. ``"within"``: the entity fixed-effects estimator
            (:mod:`dplong.models.within`): the user effects absorb the intercept, so
            ``params`` are the other columns; time-invariant
            regressors, and those collinear within the privacy noise, get no estimate (NaN,
            decided from released numbers); standard errors are cluster-robust (the private
            second moment of the users' influence values) plus the privacy noise of every
            release, pushed through the solution by Monte Carlo. Needs the default engine in
            the central model, no working correlation, ``focus=None`` and ``scale``
            ``"estimate"`` or one number (the variance proxy of every released cross product).
        between : list of str, optional
            ``estimator="within"`` only: regressors the analyst declares constant within
            every user (treatment, sex, cohort), a public fact. The user effects absorb them,
            so they are reported without an estimate (NaN, "absorbed") and nothing is spent
            on them; the other coefficients are fitted without them. Undeclared, such a
            column's within products are released and withheld as one value shared by most
            users, and the fit with them. Their effects are estimated by
            :class:`~dplong.PooledOLS` or :class:`~dplong.BetweenOLS`.
        cov_type : {"clustered", "cluster"}
            How the standard errors treat the sampling error: clustered by person, the only
            covariance that user-level privacy and sampling allow (the user is the unit of
            both), and the default. ``"clustered"`` is linearmodels' spelling (with its
            ``cluster_entity=True``), ``"cluster"`` statsmodels'; any other (``"robust"``,
            ``"unadjusted"``, ``"HC0"``, ``"kernel"``, ...) is refused, as it would treat a
            person's rows as independent.
        max_rows : int
            ``estimator="within"`` only: public cap ``T_cap >= 2`` (default 10). Each user's
            cross products enter per within degree of freedom ``T_u - 1`` with the precision
            weight ``min(T_u - 1, T_cap - 1) / (T_cap - 1)``: exactly the within estimator
            for users with at most ``T_cap`` rows, and users with more count as ``T_cap``
            rows (so no user's statistic outweighs the others, whatever their rows).

        Returns
        -------
        RegressionResults

        Examples
        --------
        ε is all the fit needs:

        >>> import dplong, dplong.simulate
        >>> panel = dplong.simulate.linear_panel(3000, 6, [1.0, 0.5], random_state=0)
        >>> res = dplong.LongitudinalOLS.from_formula("y ~ x1", panel, groups="user").fit(
        ...     epsilon=1.0, random_state=0)
        >>> bool(abs(res.params["x1"] - 0.5) < 0.1), res.privacy.epsilon <= 1.0
        (True, True)

        The within estimator, on an unbalanced panel whose user effects are correlated with
        the regressor (the per-user average is consistent here too, but noisier):

        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(0)
        >>> rows = rng.integers(1, 9, size=4000)
        >>> user = np.repeat(np.arange(4000), rows)
        >>> effect = rng.normal(0.0, 1.0, 4000)[user]
        >>> x = effect + rng.normal(0.0, 1.0, user.size)
        >>> data = pd.DataFrame({"user": user, "x": x,
        ...                      "y": 2.0 * effect + 0.5 * x + rng.normal(0.0, 1.0, user.size)})
        >>> res = dplong.LongitudinalOLS.from_formula("y ~ x", data, groups="user").fit(
        ...     epsilon=1.0, estimator="within", random_state=0)
        >>> list(res.params.index), bool(abs(res.params["x"] - 0.5) < 0.05)
        (['x'], True)
        >>> ci = res.conf_int()
        >>> bool(ci.loc["x", "lower"] < 0.5 < ci.loc["x", "upper"])
        True
        """
        if self._entity_effects and estimator not in (None, "within"):
            raise ParameterError(
                "the formula's EntityEffects asks for the within (entity fixed-effects) "
                f'estimator: fit(estimator="within") or no estimator; got {estimator!r}'
            )
        if estimator is None:
            estimator = "within" if self._entity_effects else "per-user"
        within = check_choice(estimator, "estimator", ESTIMATORS) == "within"
        _check_cov_type(cov_type)
        design = self._design
        names = coefficient_names(design.columns) if within else tuple(design.columns)
        absorbed = _between_columns(between, names, within=within)
        if not set(names) - set(absorbed):
            raise FormulaError(
                f"the within estimator needs a regressor besides the intercept and the "
                f"declared between-user columns; {self.formula!r} has none"
            )
        p = len(names) - len(absorbed)
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
            focus=None if within else focus,
            random_state=random_state,
            rng=rng,
            accountant=accountant,
        )
        unused = [
            k
            for k, v in (("min_rows", min_rows), ("min_eigenvalue", min_eigenvalue))
            if v is not None
        ]
        if unused and not isinstance(scale, DependenceModel):  # refused, not ignored
            raise ParameterError(
                f"{' and '.join(unused)} only apply with a dependence model as scale "
                "(e.g. scale=AR1(0.5)); drop them or state the model"
            )
        if within:
            if tail is not None:  # refused, not ignored: each cross product has its own model
                raise ParameterError(
                    'tail applies to estimator="per-user" (the within estimator chooses the '
                    "tail model of each cross product); drop it"
                )
            return self._fit_within(
                request, names, absorbed, scale=scale, focus=focus, max_rows=max_rows
            )
        options = request.options
        stated_tail = check_tail(
            tail, p, default_engine=options.variant == "default" and not options.local
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

        block = Block(names, 1.0, statistics, stated_scale=proxy is not None, tail=stated_tail)
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
            *_tail_note(stated_tail),
        )
        return RegressionResults.of(
            self._fit(request, [block], assumptions=assumptions), levels=self._levels
        )

    def _fit_within(
        self,
        request: FitRequest,
        names: tuple[str, ...],
        absorbed: tuple[str, ...],
        *,
        scale: Any,
        focus: Focus,
        max_rows: Any,
    ) -> RegressionResults:
        """``fit(estimator="within")``: the refusals on public options, then the blocks of
        :mod:`dplong.models.within` over the regressors not declared ``between``."""
        max_rows = check_max_rows(max_rows, smallest=2)
        unsupported = {
            "privacy": (request.options.local, 'privacy="central"'),
            "variant": (request.options.variant != "default", 'variant="default"'),
            "focus": (focus is not None, "focus=None"),
            "correlation": (
                self._correlation.kind != "independence",
                'correlation="independence" in from_formula',
            ),
        }
        for option, (bad, needed) in unsupported.items():
            if bad:
                raise ParameterError(f'estimator="within" needs {needed} (got another {option})')
        if isinstance(scale, str) and scale == "estimate":
            proxy = None
        else:
            if isinstance(scale, bool) or not isinstance(
                scale, int | float | np.integer | np.floating
            ):
                raise ParameterError(
                    'with estimator="within", scale must be "estimate" or one positive number '
                    f"(the variance proxy of every released cross product); got {scale!r}"
                )
            proxy = float(per_column(scale, 1, "scale")[0])
        # said in few words: a within summary with a withheld regressor and its warning must
        # still fit 25 lines
        assumptions = (
            "Within (entity fixed-effects) estimator: the demeaned cross products of the users "
            "with two rows or more; user effects absorb the intercept and time-invariant terms.",
            "Scales estimated privately (the spread of each released per-user statistic)."
            if proxy is None
            else f"Variance proxy of every released per-user statistic (scale): {proxy:g}.",
            "Standard errors: clustered by user ("
            + ("the users' private influence spread" if proxy is None else "the stated scale")
            + "), with every release's noise pushed through the solution and the bias bound.",
        )
        kept = tuple(name for name in names if name not in absorbed)
        keep = [names.index(name) for name in kept]
        shares = within_shares(self.nobs_users, len(kept), request.options.epsilon)

        def products() -> WithinProducts:
            return select_products(self._within_products(), keep, len(names))

        results = self._fit(
            request,
            within_blocks(kept, products, proxy, shares, max_rows, gamma=request.options.gamma),
            assumptions=assumptions,
            results=partial(within_results, names=names, absorbed=absorbed),
        )
        return RegressionResults.of(results, levels=self._levels)


def _between_columns(between: object, names: tuple[str, ...], *, within: bool) -> tuple[str, ...]:
    """The declared between-user regressors of ``fit(between=...)``, checked (public)."""
    if between is None:
        return ()
    if not within:
        raise ParameterError(
            'between= applies to estimator="within" (a per-user fit cannot separate a '
            "column constant within the user from its intercept); for their effects use "
            "PooledOLS or BetweenOLS"
        )
    listed = (between,) if isinstance(between, str) else between
    if not isinstance(listed, Sequence | tuple) or not all(isinstance(c, str) for c in listed):
        raise ParameterError(f"between must be a list of column names; got {between!r}")
    unknown = [c for c in listed if c not in names]
    if unknown:
        raise ParameterError(
            f"between names {unknown}, which are not regressors of the within fit; "
            f"expected some of {list(names)}"
        )
    return tuple(dict.fromkeys(listed))


def _tail_note(tail: TailModel | None) -> tuple[str, ...]:
    """The assumption a stated tail adds to the results."""
    if tail is None:
        return ()
    if isinstance(tail, Moment):
        return (tail.assumption("b_u"),)
    return (f"Stated tail model of the per-user coefficients: {tail}.",)


def _check_cov_type(cov_type: object) -> None:
    """Refuse every covariance but the person-clustered one (see ``fit``), before any noise."""
    if cov_type in COV_TYPES:
        return
    raise ParameterError(
        f"cov_type must be 'clustered' (linearmodels) or 'cluster' (statsmodels), got "
        f"{cov_type!r}: under user-level privacy the standard errors are clustered by person "
        "(the unit of privacy and of sampling); a covariance that treats a person's rows as "
        "independent is not offered"
    )


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


def _reduce_within(data: DaskFrame, spec: FrameSpec, groups: GroupsLike) -> WithinProducts:
    """A Dask frame's within cross products, in two passes as in memory
    (:func:`~dplong.models.reduce.within_cross_products`): every user's row count and means,
    then the sums of products of the deviations from them."""
    regressors = regressor_columns(spec.spec.columns)
    first = reduce_design(
        data,
        spec,
        groups=groups,
        sums=functools.partial(_partition_totals, regressors=regressors),
        statistic=user_means,
    )
    rows, means = first.statistics[:, 0], first.statistics[:, 1:]
    second = reduce_design(
        data,
        spec,
        groups=groups,
        sums=functools.partial(_partition_products, regressors=regressors),
        statistic=np.asarray,
        given=[pd.DataFrame(means, index=first.ids)],
    )
    products = second.statistics
    products[rows < 2] = np.nan
    return products, rows


def _partition_totals(design: PanelDesign, *, regressors: tuple[int, ...]) -> NDArray[np.float64]:
    """A partition's per-user row counts and sums of the regressors and y."""
    return user_totals(design.y, design.X[:, regressors], design.codes, design.n)


def _partition_products(
    design: PanelDesign, means: NDArray[np.float64], *, regressors: tuple[int, ...]
) -> NDArray[np.float64]:
    """A partition's per-user sums of products of the deviations from the users' means."""
    X = np.ascontiguousarray(design.X[:, regressors])
    return within_sums(design.y, X, design.codes, design.n, means)


register(
    CommandLineModel(
        "ols",
        LongitudinalOLS.from_formula,
        "LongitudinalOLS: average of per-user regressions, or the within (fixed-effects) "
        "estimator, 'y ~ x1 + x2'",
        uses_time=True,
        options=(
            Option(
                "estimator",
                "text",
                "E",
                "per-user (default: the average of per-user fits) or within (entity fixed "
                "effects; the default with the formula term EntityEffects)",
                choices=("per-user", "within"),
            ),
            Option(
                "between",
                "names",
                "A,B",
                "within only: regressors constant within every user (treatment, sex), "
                "reported as absorbed by the user effects, nothing spent on them",
            ),
            Option("max_rows", "int", "T", MAX_ROWS_HELP),
            *TAIL_OPTIONS,
        ),
    )
)
