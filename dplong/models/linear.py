"""Longitudinal linear regression: private averaging of per-user OLS/GLS fits (§5.3), or the
private within (entity fixed-effects) estimator (:mod:`dplong.models.within`).

The estimator's reductions are in :mod:`~dplong.models.linear_reduce`, the checks of its public
options in :mod:`~dplong.models.linear_options` and the assumptions its results state in
:mod:`~dplong.models.linear_notes`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong._validation import RandomState, check_choice, checked_call
from dplong.dask_frames import ReducedPanel, design_spec, is_dask, reduce_design
from dplong.exceptions import ParameterError
from dplong.formula import DesignSpec, GroupsLike, LevelsLike, PanelDesign, group_design
from dplong.formula.terms import analyst_env
from dplong.models.base import PanelModel
from dplong.models.blocks import Block, FitRequest, Statistics
from dplong.models.command_line import (
    MAX_ROWS_OPTION,
    TAIL_OPTIONS,
    CommandLineModel,
    Option,
    register,
)
from dplong.models.effects import panel_effects
from dplong.models.linear_notes import (
    _per_user_assumptions,
    _per_user_results,
    _within_assumptions,
)
from dplong.models.linear_options import (
    _between_columns,
    _check_cov_type,
    _check_dependence_bounds,
    _dependence_proxy,
    _within_proxy,
    _working_correlation,
)
from dplong.models.linear_reduce import _coefficients, _cross_products, _reduce_within
from dplong.models.option_checks import COV_TYPES as COV_TYPES
from dplong.models.option_checks import (
    DEFAULT_MAX_ROWS,
    CovType,
    ScaleLike,
    check_max_rows,
    refuse_max_rows,
    scale_per_column,
)
from dplong.models.reduce import WorkingCorrelation, within_cross_products
from dplong.models.release_blocks import counts_tail, sound_plan
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
from dplong.privacy.radius import DEFAULT_GAMMA, Moment, Tail, check_tail
from dplong.results import RegressionResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["Estimator", "LongitudinalOLS"]

Estimator = Literal["per-user", "within"]
ESTIMATORS: tuple[Estimator, ...] = ("per-user", "within")


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
    @checked_call
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
            Orders rows within a user (required with ``correlation="ar1"``); otherwise row
            order. Numbers and dates order as such, a Categorical by its categories' order,
            text by its levels' order where ``levels=`` declares them (a ``TimeEffects``
            column), else as text.
        correlation : {"independence", "ar1", "exchangeable"}
            Public working correlation of a user's errors for the weighted estimator β̂_wu.
        correlation_param : float
            AR(1) coefficient in (-1, 1) or exchangeable correlation in [0, 1); refused
            (unless 0) with ``"independence"``, which takes none.
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
        working = _working_correlation(correlation, correlation_param, timed=time is not None)
        formula, entity = panel_effects(formula, data, time=time, levels=levels)
        if not is_dask(data):
            table = DesignSpec.from_formula(formula, data, levels=levels, eval_env=analyst_env())
            grouped = group_design(table, data, groups=groups, time=time)
            return cls(grouped, working, levels=table.levels, entity_effects=entity)
        spec = design_spec(formula, data, levels=levels, eval_env=analyst_env())
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
        within = functools.partial(_reduce_within, data, spec, groups, users=design.ids)
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

    @checked_call
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
        max_rows: int | None = None,
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
        tail : str, Moment or AssumedTail, optional
            Per-user estimator: the tail model of one user's coefficients, as
            :func:`dplong.winsorized_mean`'s ``tail``. Coefficients from a few rows each are
            often heavy-tailed; by default the engine looks for that privately and, where it
            finds it, allows for the heaviest tail it vouches for (wide intervals).
            ``dplong.Moment(k=4, bound=[...])``, a bound on ``E|β_u - β|^4`` per coefficient
            the analyst can justify, replaces that worst case with the clip and bias bound of
            the moment. A user with exactly as many rows as coefficients fits them exactly,
            and where the regressors vary at random such fits can have no mean (two rows'
            slope is a ratio of normals: Cauchy), beyond any allowance or moment bound: leave
            those users out (a filter on each user's row count, before the fit) where the
            panel has them.
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
        max_rows : int, optional
            ``estimator="within"`` only (refused with the per-user estimator, which weighs
            every user alike): public cap ``T_cap`` from 2 to 10⁵ (default 10). Each user's
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
        absorbed = _between_columns(between, names, within=within, formula=self.formula)
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
        _check_dependence_bounds(scale, min_rows, min_eigenvalue)
        if within:
            return self._fit_within(
                request, names, absorbed, scale=scale, focus=focus, tail=tail, max_rows=max_rows
            )
        refuse_max_rows(
            max_rows,
            'to estimator="within" only (the per-user estimator weighs every user alike, '
            "whatever their rows)",
        )
        return self._fit_per_user(
            request, names, scale=scale, tail=tail, min_rows=min_rows, min_eigenvalue=min_eigenvalue
        )

    def _fit_per_user(
        self,
        request: FitRequest,
        names: tuple[str, ...],
        *,
        scale: Any,
        tail: Any,
        min_rows: Any,
        min_eigenvalue: Any,
    ) -> RegressionResults:
        """``fit(estimator="per-user")``: one block of every user's coefficients, their stated
        scale and tail or none."""
        options = request.options
        stated_tail = check_tail(
            tail, len(names), default_engine=options.variant == "default" and not options.local
        )
        proxy = scale_per_column(
            scale,
            len(names),
            partial(_dependence_proxy, min_rows=min_rows, min_eigenvalue=min_eigenvalue),
        )

        def statistics(_: tuple[Release, ...]) -> Statistics:
            return Statistics(self._user_coefficients(), scale=proxy)

        block = Block(names, 1.0, statistics, stated_scale=proxy is not None, tail=stated_tail)
        assumptions = _per_user_assumptions(
            self._correlation,
            proxy,
            stated_tail,
            scale=scale,
            min_rows=min_rows,
            min_eigenvalue=min_eigenvalue,
        )
        return RegressionResults.of(
            self._fit(request, [block], assumptions=assumptions, results=_per_user_results),
            levels=self._levels,
        )

    def _fit_within(
        self,
        request: FitRequest,
        names: tuple[str, ...],
        absorbed: tuple[str, ...],
        *,
        scale: Any,
        focus: Focus,
        tail: Any,
        max_rows: Any,
    ) -> RegressionResults:
        """``fit(estimator="within")``: the refusals on public options, then the blocks of
        :mod:`dplong.models.within` over the regressors not declared ``between``."""
        if tail is not None:  # refused, not ignored: each cross product has its own model
            raise ParameterError(
                'tail applies to estimator="per-user" (the within estimator chooses the '
                "tail model of each cross product); drop it"
            )
        cap = check_max_rows(DEFAULT_MAX_ROWS if max_rows is None else max_rows, smallest=2)
        proxy = _within_proxy(request.options, self._correlation, scale=scale, focus=focus)
        kept = tuple(name for name in names if name not in absorbed)
        keep = [names.index(name) for name in kept]
        n, options = self.nobs_users, request.options

        stated = proxy is not None

        def sound(share: float) -> bool:  # public facts: the early Newton steps' plans
            return sound_plan(n, len(kept), options, share, stated=stated, weighted=True)

        def counted(share: float) -> bool:  # ... and the last one's tail counts
            return counts_tail(n, len(kept), options, share, stated=stated)

        shares = within_shares(n, len(kept), options.epsilon, sound, counted)

        def products() -> WithinProducts:
            return select_products(self._within_products(), keep, len(names))

        results = self._fit(
            request,
            within_blocks(kept, products, proxy, shares, cap, gamma=request.options.gamma),
            assumptions=_within_assumptions(proxy),
            results=partial(within_results, names=names, absorbed=absorbed),
        )
        return RegressionResults.of(results, levels=self._levels)


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
            MAX_ROWS_OPTION,
            *TAIL_OPTIONS,
        ),
    )
)
