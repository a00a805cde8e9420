"""Random-effects location model (Def 5.8, Lemma 5.9, Cor 5.10) with variance components, and
its precision-weighted (GLS) location for unbalanced panels: the estimator (its options, its
blocks and their labels). Its reduction, components, weights and results are in the sibling
modules ``location_moments``, ``location_components``, ``location_weights`` and
``location_results`` (``docs/design/location.md``)."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dplong._validation import RandomState, checked_call, per_column
from dplong.dask_frames import ReducedPanel, design_spec, is_dask
from dplong.dependence import DependenceModel, RandomEffects
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign
from dplong.formula.terms import analyst_env
from dplong.models.base import PanelModel
from dplong.models.blocks import Block, Statistics
from dplong.models.command_line import MAX_ROWS_OPTION, CommandLineModel, Option, register
from dplong.models.location_components import (
    COMPONENTS as COMPONENTS,  # its import path before the split (random_effects.py)
)
from dplong.models.location_components import (
    _components_block,
    _error_bound,
    check_stated_proxies,
)
from dplong.models.location_moments import _reduce_moments, _UserMoments
from dplong.models.location_results import _assumptions, _location_results
from dplong.models.location_weights import (
    Weights,
    _check_weights,
    _precision_weights,
    centred_on_preliminary,
    preliminary_share,
)
from dplong.models.option_checks import ScaleLike, check_min_rows, scale_per_column
from dplong.planning import advised
from dplong.privacy.accounting import Accountant
from dplong.privacy.engine import Release
from dplong.privacy.options import PrivacyModel, Variant
from dplong.privacy.radius import DEFAULT_GAMMA, SCALE_ONLY
from dplong.results import PanelResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["RandomEffectsLocation"]


class RandomEffectsLocation(PanelModel):
    """User-level DP location μ of ``y_gut = μ + U_g + e_ut`` (Def 5.8) and its variance
    components, the way statsmodels' MixedLM reports ``Group Var`` and ``Scale``.

    * μ: the noisy Winsorized mean of the user means ȳ_u (Def 5.1, Cor 5.10); with precision
      weights (the default where they apply) their GLS mean, weights
      ``1 / (σ̂_U² + σ̂²/min(T_u, max_rows))`` from the released components, after a
      preliminary equal-weight location that centres them.
    * ``Scale`` (within-user variance σ²): the private mean of the per-user sample variances
      ``s²_u``, clipped to a public range.
    * ``Group Var`` (σ_U²): the private mean of ``(ȳ_u - μ̂)² - s²_u / T_u``, centred on the
      released μ̂ (post-processing); its bias bound holds the square of μ̂'s error bound.

    The budget is split: ``1 - variance_share`` for μ, ``variance_share`` for the two components.
    Users with fewer than two rows have no ``s²_u`` and contribute nothing to the components.
    When users' means differ with their number of rows (e.g. informative drop-out),
    ``weights="equal"`` estimates the average of the users' means and ``"precision"`` a
    weighted average leaning toward users with many rows (up to ``max_rows``). Why each
    statistic is released as it is, the weights' sensitivity and the tail models:
    ``docs/design/location.md``.

    Examples
    --------
    >>> import dplong
    >>> pigs = dplong.datasets.load_dietox()
    >>> model = dplong.RandomEffectsLocation.from_formula("Weight ~ 1", pigs, groups="Pig")
    >>> res = model.fit(epsilon=4.0, scale=400.0, within_scale=600.0, random_state=0)
    >>> list(res.params.index)
    ['Intercept', 'Group Var', 'Scale']
    """

    model_name = "RandomEffectsLocation"
    basis = ("Theorem 4.2 via Corollary 5.10", "Theorem 6.4 via Corollary 6.9")

    def __init__(self, design: PanelDesign | ReducedPanel, re_groups: str | None) -> None:
        super().__init__(design)
        _check_location(design.columns, design.formula)
        self._re_groups = re_groups

    @classmethod
    @checked_call
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        groups: GroupsLike,
        re_groups: GroupsLike | None = None,
        levels: LevelsLike | None = None,
    ) -> RandomEffectsLocation:
        """Build the model from ``"y ~ 1"``.

        Parameters
        ----------
        data : pandas.DataFrame or dask.dataframe.DataFrame
            One row per observation. A Dask frame is read twice, partition by partition (user
            means, then squared deviations from them; :mod:`dplong.dask_frames`), with the
            same results.
        groups : str or array_like
            User id (the unit of privacy); a column name with a Dask frame.
        re_groups : str or array_like, optional
            Grouping of users that share the random effect U_g (e.g. litters of pigs), each
            user in one group: a public, declared structure, named in the results' notes and
            not checked against the rows (whether a fit runs depends on public facts only). By
            default each user is their own group. The estimates use per-user statistics only;
            the grouping enters through the dependence it causes (Lemma 5.9), stated with
            :class:`dplong.dependence.RandomEffects` as ``scale``.
        levels : mapping of str to sequence, optional
            Declared factor levels, as in :meth:`LongitudinalOLS.from_formula
            <dplong.LongitudinalOLS.from_formula>` (rules in :mod:`dplong.formula`). ``"y ~ 1"``
            has no factor, so they matter only where the outcome's expression uses one.

        Examples
        --------
        >>> import dplong
        >>> pigs = dplong.datasets.load_dietox()
        >>> dplong.RandomEffectsLocation.from_formula("Weight ~ 1", pigs, groups="Pig",
        ...                                           re_groups="Litter")
        RandomEffectsLocation('Weight ~ 1', n_users=72)

        Levels of a column the formula does not read would be ignored, so they are refused:

        >>> dplong.RandomEffectsLocation.from_formula(  # doctest: +ELLIPSIS
        ...     "Weight ~ 1", pigs, groups="Pig", levels={"Cu": [1, 2, 3]})
        Traceback (most recent call last):
        ...
        dplong.exceptions.FormulaError: levels names ['Cu'], which the formula does not read; ...
        """
        design: PanelDesign | ReducedPanel
        if is_dask(data):
            env = analyst_env()
            spec = design_spec(formula, data, levels=levels, eval_env=env)
            _check_location(spec.spec.columns, formula)
            design = _reduce_moments(data, spec, groups)
        else:
            design = cls._build(formula, data, groups, None, levels=levels)
        # a declared structure, not read from the rows: a check would make the fit's success
        # depend on them (and the estimates use per-user statistics only)
        label = None
        if re_groups is not None:
            if isinstance(re_groups, str):
                if re_groups not in data.columns:
                    raise FormulaError(f"re_groups names no column of data: {re_groups!r}")
            elif is_dask(data) or np.shape(re_groups) != (len(data),):
                raise DataError(
                    "re_groups must be a column name, or one group id per row of data (a "
                    "column name with a Dask frame)"
                )
            label = re_groups if isinstance(re_groups, str) else "re_groups"
        return cls(design, label)

    @checked_call
    @advised
    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        scale: ScaleLike = "estimate",
        within_scale: float | None = None,
        min_rows: int | None = None,
        variance_share: float = 0.5,
        weights: Weights | None = None,
        max_rows: int | None = None,
        privacy: PrivacyModel = "central",
        bound: float | None = None,
        variant: Variant = "default",
        gamma: float = DEFAULT_GAMMA,
        refine: bool = True,
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> PanelResults:
        """Release μ, and (unless ``variance_share=0``) σ_U² and σ², with user-level DP.

        Parameters
        ----------
        epsilon, delta : float
            Total budget (central δ default ``1/n**2``), shared by μ and the components.
        scale : "estimate", float or DependenceModel
            ``"estimate"`` (default): the spread of the user means is estimated privately, and
            so are the components'. Or the variance proxy of one user's mean ȳ_u, or a
            dependence model of a user's rows (:mod:`dplong.dependence`) which with
            ``min_rows`` T gives it (its ``mean_scale(T)``): a
            :class:`~dplong.dependence.RandomEffects` model as ``(σ_U² T + ρ_res) / T``
            (Lemma 5.9, Remark 5.3), with the residual scale too. A stated scale is taken as
            given, never checked: one smaller than the data's narrows the interval below its
            coverage.
        within_scale : float, optional
            Variance proxy ρ_res of a user's residuals (``‖Σ_u‖_op``): with a stated ``scale``
            it gives the components' scales under a Gaussian model; without it they are
            estimated privately. Refused with a :class:`~dplong.dependence.RandomEffects`
            model as ``scale``, which gives it. From 2.2e-308 (the smallest normal double) to
            1e150, and ``scale`` at most 1e150 with it (the components' variances are their
            squares).
        min_rows : int, optional
            Public lower bound T on rows per user (needed with a dependence model; with it the
            stated components' scales use T - 1 degrees of freedom instead of 1).
        variance_share : float
            Share of ε and δ for the two variance components, in [0, 1). The precision
            weights need the components only roughly: where μ alone is reported, a smaller
            share moves budget to μ (measured in docs/accuracy.md).
        weights : {"precision", "equal"}, optional
            How users are weighted in μ (see the class docstring). ``"precision"``: GLS
            weights ``1 / (σ̂_U² + σ̂²/min(T_u, max_rows))`` from the privately released
            components (needs ``variance_share > 0``, the default engine, the central model
            and no dependence model as ``scale``); ``"equal"``: every user's mean alike (the
            paper's estimator, Def 5.8). Default: ``"precision"`` where it applies and n and ε
            leave the preliminary location enough budget (its plan has no reliability note),
            else ``"equal"``.
        max_rows : int, optional
            Public cap ``T_cap`` on the rows that raise a user's weight, from 1 to 10⁵
            (default 10): a user with more rows weighs as one with ``T_cap``. Only used with
            precision weights (refused with ``weights="equal"``).
        privacy, bound, variant, gamma, refine, random_state, rng, accountant
            As in :func:`dplong.winsorized_mean`; ``accountant`` is charged the total.

        Returns
        -------
        PanelResults
            ``Intercept`` (μ), and ``Group Var`` and ``Scale`` unless ``variance_share=0``.
            With precision weights the ledger also holds the preliminary location (stage
            names of its block) and ``users`` the private weighted count.

        Examples
        --------
        >>> import dplong, dplong.simulate
        >>> rows = dplong.simulate.panel_rows(3000, 5, mean=2.0, random_state=0)
        >>> data = dplong.simulate.long_format(rows)
        >>> res = dplong.RandomEffectsLocation.from_formula("y ~ 1", data, groups="user").fit(
        ...     epsilon=1.0, variance_share=0.0, random_state=0)   # μ only
        >>> bool(abs(res.params["Intercept"] - 2.0) < 0.05), list(res.params.index)
        (True, ['Intercept'])

        An unbalanced panel: 1 to 30 rows per user, precision weights by default:

        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(1)
        >>> rows = rng.integers(1, 31, size=4000)
        >>> user = np.repeat(np.arange(4000), rows)
        >>> effect = rng.normal(0.0, 0.5, 4000)[user]
        >>> data = pd.DataFrame({"user": user, "y": 2.0 + effect + rng.normal(0, 2, user.size)})
        >>> model = dplong.RandomEffectsLocation.from_formula("y ~ 1", data, groups="user")
        >>> res = model.fit(epsilon=1.0, random_state=0)
        >>> bool(abs(res.params["Intercept"] - 2.0) < 0.1), res.users.index.tolist()
        (True, ['users with a statistic (weighted)', 'users with a statistic'])
        """
        n = self.nobs_users
        if (
            isinstance(variance_share, bool)
            or not isinstance(variance_share, int | float | np.integer | np.floating)
            or not (0.0 <= variance_share < 1.0)
        ):
            raise ParameterError(
                f"variance_share must be a number in [0, 1), got {variance_share!r}"
            )
        if within_scale is not None:
            within_scale = float(per_column(within_scale, 1, "within_scale")[0])
        request = self._request(
            n,
            1,
            epsilon=epsilon,
            delta=delta,
            privacy=privacy,
            bound=bound,
            variant=variant,
            gamma=gamma,
            refine=refine,
            focus=None,
            random_state=random_state,
            rng=rng,
            accountant=accountant,
        )
        residual_scale, statistical = within_scale, None
        if isinstance(scale, DependenceModel):
            rows = check_min_rows(min_rows, "turn a dependence model into a radius")
            if isinstance(scale, RandomEffects):
                if within_scale is not None:  # refused, not ignored: the model gives it
                    raise ParameterError(
                        "within_scale is given by the RandomEffects model as scale (its "
                        "residual scale at min_rows): drop within_scale, or state a number "
                        "as scale"
                    )
                residual_scale = scale.residual_scale(rows)
            statistical = scale.statistical_constant(rows, n) / (n * rows)
        elif min_rows is not None:
            check_min_rows(min_rows, "tighten the components' scales")
        proxy = scale_per_column(
            scale,
            1,
            lambda m: [
                m.mean_scale(check_min_rows(min_rows, "turn a dependence model into a radius"))
            ],
        )
        cap = _check_weights(
            weights, max_rows, variance_share, request.options, scale, proxy is not None, n
        )
        moments = _UserMoments.of(self._design)

        def location(_: tuple[Release, ...]) -> Statistics:
            sampling = None if statistical is None else np.array([math.sqrt(statistical)])
            return Statistics(moments.means[:, None], scale=proxy, sampling_sd=sampling)

        location_share = 1.0 - variance_share
        preliminary = cap is not None
        first = (
            preliminary_share(n, request.options.epsilon, variance_share) if preliminary else 1.0
        )
        # the weighted location is centred on the preliminary one where that one's plan is
        # strong enough (public facts), else it locates its own centre
        centred = preliminary and centred_on_preliminary(n, request.options.epsilon, variance_share)
        blocks = [
            Block(
                ("Intercept (preliminary)",) if preliminary else ("Intercept",),
                location_share * first,
                location,
                proxy is not None,
                # its tail's warnings are the weighted location's (location_results)
                provisional=preliminary,
                offers=SCALE_ONLY,
            )
        ]
        stated = (
            None if proxy is None or residual_scale is None else (float(proxy[0]), residual_scale)
        )
        if variance_share > 0 and stated is None and request.options.local:
            # bound= bounds the user means; the components' statistics, squared deviations
            # and within variances, are in squared units it does not bound (their reports were
            # clipped at it: Scale 6 of 9 released; an audit)
            raise ParameterError(
                'privacy="local" releases the variance components within their Gaussian '
                "ranges only (bound= bounds the user means, not the squared units of the "
                "components' statistics): state scale= and within_scale=, or fit "
                "variance_share=0 for the location alone"
            )
        if variance_share > 0:
            if stated is not None:
                modelled = isinstance(scale, RandomEffects)
                residual = "scale's residual variance" if modelled else "within_scale"
                check_stated_proxies(*stated, residual)
            blocks.append(
                _components_block(
                    moments, variance_share, stated, min_rows, n, request.options.gamma
                )
            )
        if cap is not None:

            def weighted(done: tuple[Release, ...]) -> Statistics:
                group_var, scale_ = (float(v) for v in done[1].estimate)
                user_weights = _precision_weights(moments.rows, group_var, scale_, cap)
                return Statistics(
                    moments.means[:, None],
                    scale=proxy,
                    user_weights=user_weights,
                    centre=_preliminary_centre(done[0], request.options.gamma) if centred else None,
                )

            blocks.append(
                Block(
                    ("Intercept",),
                    location_share * (1.0 - first),
                    weighted,
                    proxy is not None,
                    weighted=True,
                    centred=centred,
                    offers=SCALE_ONLY,
                )
            )
        assumptions = _assumptions(
            scale,
            estimated=proxy is None,
            residual_scale=residual_scale,
            max_rows=cap,
            re_groups=self._re_groups,
        )
        results = functools.partial(
            _location_results,
            preliminary=preliminary,
            centred=centred,
            # the estimated components' Group Var gets its normal-effects sampling floor
            floor_rows=None if stated is not None or variance_share == 0 else (min_rows or 2),
        )
        return self._fit(request, blocks, assumptions=assumptions, results=results)


def _preliminary_centre(release: Release, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The weighted location's public centre: the preliminary equal-weight μ̂₀ and its released
    error bound (1 - γ). Under the model both weightings estimate μ, so the weighted release
    needs no median, side check or refinement of its own: its centre is off by the preliminary's
    error, far less than a rough mean's at the weighted stage's budget, and its radius narrows
    with it (docs/design/location.md). A withheld μ̂₀ gives an infinite bound: μ is withheld
    too, its note saying why."""
    if not np.isfinite(release.estimate).all():
        return release.interval.mean(axis=1), np.full(1, np.inf)
    return release.estimate, np.full(1, _error_bound(release, gamma))


def _check_location(columns: tuple[str, ...], formula: str) -> None:
    if columns != ("Intercept",):
        raise FormulaError(
            f"RandomEffectsLocation is a location model and takes 'y ~ 1'; got "
            f"{formula!r} with columns {list(columns)}. For covariates use "
            "dplong.LongitudinalOLS."
        )


register(
    CommandLineModel(
        "location",
        RandomEffectsLocation.from_formula,
        "RandomEffectsLocation: location and variance components of 'y ~ 1'",
        options=(
            Option(
                "within_scale",
                "float",
                "S",
                "variance proxy of one user's residuals (public assumption), for the "
                "variance components 'Group Var' and 'Scale'",
            ),
            Option(
                "variance_share",
                "float",
                "SHARE",
                "share of epsilon for the variance components, in [0, 1) (default 0.5; "
                "0 releases the location only)",
            ),
            Option(
                "min_rows", "int", "T", "public lower bound on the number of rows of every user"
            ),
            Option(
                "weights",
                "text",
                "W",
                "precision (GLS weights from the released components; the default where it "
                "applies) or equal",
                choices=("precision", "equal"),
            ),
            MAX_ROWS_OPTION,
        ),
    )
)
