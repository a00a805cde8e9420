"""Random-effects location model (Def 5.8, Lemma 5.9, Cor 5.10) with variance components, and
its precision-weighted (GLS) location for unbalanced panels."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, check_choice, per_column
from dplong.bounds import error_bound_table
from dplong.dask_frames import (
    FrameSpec,
    ReducedPanel,
    design_spec,
    is_dask,
    reduce_design,
)
from dplong.dependence import DependenceModel, RandomEffects
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign
from dplong.models.base import (
    DEFAULT_MAX_ROWS,
    MAX_ROWS_HELP,
    Block,
    PanelModel,
    ScaleLike,
    Statistics,
    check_max_rows,
    check_min_rows,
    panel_results,
    scale_per_column,
    sound_plan,
)
from dplong.models.command_line import CommandLineModel, Option, register
from dplong.models.reduce import user_means, user_sums, user_totals
from dplong.planning import advised
from dplong.privacy.accounting import Accountant
from dplong.privacy.budget import users_share
from dplong.privacy.engine import Release
from dplong.privacy.options import PrivacyModel, ReleaseOptions, Variant
from dplong.privacy.radius import DEFAULT_GAMMA, concentration_radius
from dplong.privacy.rules import UserWeights
from dplong.results import PanelResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["RandomEffectsLocation"]

Weights = Literal["precision", "equal"]
WEIGHTS: tuple[Weights, ...] = ("precision", "equal")
#: The preliminary equal-weight location that centres the variance components when the
#: location is precision-weighted gets :data:`PRELIMINARY_USERS` (ε·n) of the location's
#: budget, within :data:`PRELIMINARY_SHARES` (:func:`preliminary_share`). It only centres them
#: (Group Var moves by the square of its error), so it needs a sound plan more than precision:
#: about 200 users' worth is the least without a reliability note, and 300 leaves a margin. A
#: fixed fifth spent 500 at n = 5000, ε = 1, and the weighted location's noise paid for it
#: (MSE against equal weights 0.84 → 0.69 at σ²/σ_U² = 25, on the same 200 panels). The
#: lower share keeps its noise falling with ε like the rest's (a noise-off fit stays exact).
PRELIMINARY_USERS = 300.0
#: The variance components, in the order they are released (both variances: at least 0).
COMPONENTS = ("Group Var", "Scale")
PRELIMINARY_SHARES = (0.05, 0.2)


class RandomEffectsLocation(PanelModel):
    """User-level DP location μ of ``y_gut = μ + U_g + e_ut`` (Def 5.8) and its variance
    components, the way statsmodels' MixedLM reports ``Group Var`` and ``Scale``.

    * μ: the noisy Winsorized mean of the user means ȳ_u (Def 5.1, Cor 5.10).
    * ``Scale`` (within-user variance σ²): the private mean of the per-user sample variances
      ``s²_u`` (unbiased for σ² with independent residuals), clipped to a public range.
    * ``Group Var`` (σ_U²): the private mean of ``(ȳ_u - μ̂)² - s²_u / T_u`` — unbiased for
      ``Var(ȳ_u) - E[s²_u]/T_u = σ_U²`` — using the already released μ̂ (post-processing).
      Centred on μ̂ rather than μ, its mean is shifted up by ``(μ̂ - μ)²``: its bias bound
      holds the square of μ̂'s released error bound.
    * Both statistics are skewed, so with estimated scales their spreads, clipping radii and
      bias bounds follow skewed tail models (:func:`~dplong.privacy.radius.clipping_bias`): a
      scaled χ²₁ for Group Var (a squared deviation of a normal user mean), an exponential
      tail for Scale. A normal model clipped their right tails and biased both low.

    The budget is split: ``1 - variance_share`` for μ, ``variance_share`` for the two components.
    Users with fewer than two rows have no ``s²_u`` and contribute nothing to the components.

    **Precision weights** (``weights="precision"``, the default with the default engine). In an
    unbalanced panel ȳ_u has variance ``v_u = σ_U² + σ²/T_u``, and the efficient (GLS)
    location weighs users by ``1 / v_u``. The fit first releases a preliminary equal-weight μ̂₀
    (:func:`preliminary_share` of the location's budget) to centre the components, then the
    components, then μ with the weights ``w_u = v(T_cap) / v(min(T_u, T_cap))`` computed from
    the *released* σ̂_U² and σ̂² and the public cap ``T_cap = max_rows``: ``w_u ∈ [w(1), 1]``,
    so one user moves the weighted sum by at most ``2r`` (r the radius of the standardised
    deviations ``√w_u (ȳ_u - c)``) and the weighted count ``Σ w_u`` by at most 1, exactly as the
    unweighted release (:class:`~dplong.privacy.rules.UserWeights`). Row counts stay private:
    they only enter through the weights, inside the mechanism.

    Estimands: both estimate μ under the model (every user's mean is μ). When users' means
    differ systematically with their number of rows (e.g. informative drop-out),
    ``"equal"`` estimates the average of the users' means and ``"precision"`` the
    ``1/v_u``-weighted average, which leans toward users with many rows (up to ``T_cap``).

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

        One ``levels`` mapping can serve every model (columns the formula does not use are
        ignored):

        >>> dplong.RandomEffectsLocation.from_formula("Weight ~ 1", pigs, groups="Pig",
        ...                                           levels={"Cu": [1, 2, 3]})
        RandomEffectsLocation('Weight ~ 1', n_users=72)
        """
        design: PanelDesign | ReducedPanel
        if is_dask(data):
            env = patsy.EvalEnvironment.capture(1)
            spec = design_spec(formula, data, levels=levels, eval_env=env)
            _check_location(spec.spec.columns, formula)
            design = _reduce_moments(data, spec, groups)
        else:
            design = cls._build(formula, data, groups, None, depth=1, levels=levels)
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
        max_rows: int = DEFAULT_MAX_ROWS,
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
        scale : "estimate", float or RandomEffects
            ``"estimate"`` (default): the spread of the user means is estimated privately, and
            so are the components'. Or the variance proxy of one user's mean ȳ_u, or a
            :class:`~dplong.dependence.RandomEffects` model which with ``min_rows`` T gives it
            as ``(σ_U² T + ρ_res) / T`` (Lemma 5.9, Remark 5.3) and the residual scale.
        within_scale : float, optional
            Variance proxy ρ_res of a user's residuals (``‖Σ_u‖_op``): with a stated ``scale``
            it gives the components' scales under a Gaussian model; without it they are
            estimated privately.
        min_rows : int, optional
            Public lower bound T on rows per user (needed with a dependence model; with it the
            stated components' scales use T - 1 degrees of freedom instead of 1).
        variance_share : float
            Share of ε and δ for the two variance components, in [0, 1).
        weights : {"precision", "equal"}, optional
            How users are weighted in μ (see the class docstring). ``"precision"``: GLS
            weights ``1 / (σ̂_U² + σ̂²/min(T_u, max_rows))`` from the privately released
            components (needs ``variance_share > 0``, the default engine, the central model
            and no dependence model as ``scale``); ``"equal"``: every user's mean alike (the
            paper's estimator, Def 5.8). Default: ``"precision"`` where it applies and n and ε
            leave the preliminary location enough budget (its plan has no reliability note),
            else ``"equal"``.
        max_rows : int
            Public cap ``T_cap`` on the rows that raise a user's weight (default 10): a user
            with more rows weighs as one with ``T_cap``. Only used with precision weights.
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
        weighting = _check_weights(
            weights, max_rows, variance_share, request.options, scale, proxy is not None, n
        )
        moments = _UserMoments.of(self._design)

        def location(_: tuple[Release, ...]) -> Statistics:
            sampling = None if statistical is None else np.array([math.sqrt(statistical)])
            return Statistics(moments.means[:, None], scale=proxy, sampling_sd=sampling)

        location_share = 1.0 - variance_share
        preliminary = weighting == "precision"
        first = (
            preliminary_share(n, request.options.epsilon, variance_share) if preliminary else 1.0
        )
        blocks = [
            Block(
                ("Intercept (preliminary)",) if preliminary else ("Intercept",),
                location_share * first,
                location,
                proxy is not None,
            )
        ]
        stated = (
            None if proxy is None or residual_scale is None else (float(proxy[0]), residual_scale)
        )
        if variance_share > 0:

            def components(done: tuple[Release, ...]) -> Statistics:
                located = bool(np.isfinite(done[0].estimate[0]))
                # a withheld location still released a centre: the moments are centred there,
                # and Group Var, which that centre's unknown error shifts, is withheld in the
                # results (_location_results); Scale does not depend on it
                mu = float(done[0].estimate[0] if located else done[0].interval[0].mean())
                component_scale = (
                    None if stated is None else _gaussian_component_scales(*stated, min_rows)
                )
                # E(ȳ_u - μ̂)² = Var ȳ_u + (μ̂ - μ)²: Group Var is shifted by the square of μ̂'s
                # error, at most its released error bound squared (1 - γ); Scale is not
                shift = _error_bound(done[0], request.options.gamma) ** 2 if located else 0.0
                return Statistics(
                    moments.components(mu),
                    scale=component_scale,
                    nonnegative=True,
                    centre_bias=np.array([shift, 0.0]),
                )

            blocks.append(
                Block(
                    COMPONENTS,
                    variance_share,
                    components,
                    stated is not None,
                    bounds=None
                    if stated is None
                    else _component_bounds(*stated, min_rows, n, request.options.gamma),
                    # Group Var's statistic is a squared deviation of a normal user mean,
                    # χ²₁-like, and s²_u a mean of T_u squares: a normal plug-in clipped their
                    # right tails (Group Var intervals covered 0.26 at n=1000, T=5; Scale's
                    # 0.75 at T=5). Stated scales bound both instead.
                    tail=None if stated is not None else ("chi-square", "exponential"),
                    notes=() if stated is not None else (_UNCHECKED_TAIL_NOTE,),
                )
            )
        if preliminary:

            def weighted(done: tuple[Release, ...]) -> Statistics:
                group_var, scale_ = (float(v) for v in done[1].estimate)
                user_weights = _precision_weights(moments.rows, group_var, scale_, max_rows)
                return Statistics(moments.means[:, None], scale=proxy, user_weights=user_weights)

            blocks.append(
                Block(
                    ("Intercept",),
                    location_share * (1.0 - first),
                    weighted,
                    proxy is not None,
                    weighted=True,
                )
            )
        assumptions = (
            (
                "Location: the GLS mean of the user means over the users with a row, weights "
                f"1/(Group Var + Scale/min(T_u, {max_rows})) from the released components. "
                "Components"
                if preliminary
                else "Location: the mean of the user means over the users with a row. Components"
            )
            + ": "
            "means of (ȳ_u - μ̂)² - s²_u/T_u (Group Var) and s²_u (Scale) over the users with "
            "two rows or more"
            + (", centred at a preliminary equal-weight location." if preliminary else "."),
            (
                "Scales estimated privately (the spread of each per-user statistic)."
                if proxy is None
                else f"Scale: {scale.describe() if isinstance(scale, DependenceModel) else scale}."
            )
            + (f" Residual proxy {residual_scale:g}." if residual_scale is not None else ""),
        ) + (
            (f"Users share random effects within {self._re_groups!r}.",) if self._re_groups else ()
        )
        results = functools.partial(_location_results, preliminary=preliminary)
        return self._fit(request, blocks, assumptions=assumptions, results=results)


def _check_weights(
    weights: Any,
    max_rows: Any,
    variance_share: float,
    options: ReleaseOptions,
    scale: Any,
    stated: bool,
    n: int,
) -> Weights:
    """Resolve ``weights`` and check ``max_rows``, from public facts only (before any noise).

    Precision weights apply with released components (``variance_share > 0``), the default
    central engine and no dependence model; by default (None) they are used when they apply
    and the preliminary location's plan is sound (its midpoint gets enough budget for n users:
    no refusal and no reliability note), else equal weights.
    """
    applies = (
        variance_share > 0
        and not options.local
        and options.variant == "default"
        and not isinstance(scale, DependenceModel)
    )
    if weights is None:
        share = (1.0 - variance_share) * preliminary_share(n, options.epsilon, variance_share)
        sound = applies and sound_plan(n, 1, options, share, stated=stated)
        weights = "precision" if sound else "equal"
    choice = check_choice(weights, "weights", WEIGHTS)
    if choice == "precision" and not applies:
        raise ParameterError(
            'weights="precision" needs the released variance components (variance_share > 0), '
            'the default engine (variant="default", privacy="central") and no dependence '
            'model as scale; use weights="equal"'
        )
    check_max_rows(max_rows)
    return "precision" if choice == "precision" else "equal"


def preliminary_share(n: int, epsilon: float, variance_share: float) -> float:
    """The preliminary location's share of the location's budget (``1 - variance_share`` of
    ε): :data:`PRELIMINARY_USERS` users' worth of ε·n, within :data:`PRELIMINARY_SHARES`. A
    function of public facts.

    Examples
    --------
    >>> from dplong.models.location import preliminary_share
    >>> [preliminary_share(n, 1.0, 0.5) for n in (2000, 5000, 50_000)]
    [0.2, 0.12, 0.05]
    """
    low, high = PRELIMINARY_SHARES
    return users_share(PRELIMINARY_USERS / (1.0 - variance_share), n, epsilon, low, high)


def _precision_weights(
    rows: np.ndarray, group_var: float, scale: float, max_rows: int
) -> UserWeights:
    """``w_u = v(T_cap) / v(min(T_u, T_cap))`` with ``v(T) = σ̂_U² + σ̂²/T``, in ``[w(1), 1]``.

    Post-processing of the released components (NaN or zero components: equal weights). The
    floor ``w(1)`` is public (a function of released numbers and the cap).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.location import _precision_weights
    >>> w = _precision_weights(np.array([1.0, 4.0, 50.0]), 1.0, 4.0, max_rows=4)
    >>> w.values.tolist(), w.floor
    ([0.4, 1.0, 1.0], 0.4)
    """
    capped = np.minimum(rows, max_rows)
    if not (np.isfinite(group_var) and np.isfinite(scale)) or max(group_var, scale) <= 0.0:
        return UserWeights(np.ones(rows.shape), 1.0)
    group_var, scale = max(group_var, 0.0), max(scale, 0.0)
    top = group_var + scale / max_rows
    with np.errstate(divide="ignore", invalid="ignore"):
        values = top / (group_var + scale / capped)
    return UserWeights(np.where(rows >= 1, values, 0.0), top / (group_var + scale))


def _location_results(
    releases: Sequence[Release], *, preliminary: bool, **options: Any
) -> PanelResults:
    """Results of a location fit: μ and the components are the parameters (a precision-weighted
    fit's preliminary location counts in the ledger only). Group Var is centred on the first
    location; where that was withheld, on its released centre, whose error nobody knows, so
    Group Var is withheld too (post-processing of a public fact)."""
    ran = list(releases)
    if len(ran) > 1 and not np.isfinite(ran[0].estimate[0]):
        ran[1] = _without_group_var(ran[1])
    return panel_results(
        [ran[2], ran[1]] if preliminary else ran,
        ran=ran,
        support_lower=dict.fromkeys(COMPONENTS, 0.0),  # variances: their intervals stop at 0
        **options,
    )


def _without_group_var(release: Release) -> Release:
    """The components' release with Group Var (its first column) withheld, and a note."""
    gone = np.arange(release.estimate.size) == 0
    return dataclasses.replace(
        release.withhold(gone),
        failed=release.failed | gone,
        notes=(*release.notes, _UNCENTRED_NOTE),
    )


#: The components' intervals rest on tail models no count at a component's budget can check:
#: a χ²₁ tail of the users' squared deviations (Group Var), an exponential one of their
#: variances (Scale). Heavier tails are clipped beyond the bias bounds (docs/accuracy.md: the
#: wage panel's Scale, the dietox pigs' Group Var and Scale): said whenever the scales are
#: estimated, a public fact.
_UNCHECKED_TAIL_NOTE = (
    "['Group Var', 'Scale']: assume unchecked chi-square/exponential tails; state scale= if known."
)

_UNCENTRED_NOTE = (
    "No estimate (NaN) for ['Group Var']: it is centred on the first location released, which "
    "was withheld (its note says why), so its bias cannot be bounded. Raise epsilon or state "
    "the scale."
)


@dataclass(frozen=True)
class _UserMoments:
    """Per-user mean, within sum of squares and row count (private; never leaves the fit)."""

    means: np.ndarray
    within_ss: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, design: PanelDesign | ReducedPanel) -> _UserMoments:
        """From the rows (two passes: the means, then the squared deviations from them), or
        a Dask frame's moments, reduced the same way (:func:`_reduce_moments`)."""
        if isinstance(design, ReducedPanel):
            rows, means, within_ss = design.statistics.T
            return cls(means, within_ss, rows)
        counts = user_means(_totals(design))
        within_ss = _squared_deviations(design, counts[:, 1])[:, 0]
        return cls(counts[:, 1], within_ss, counts[:, 0])

    def components(self, mu: float) -> np.ndarray:
        """``(ȳ_u - μ̂)² - s²_u/T_u`` and ``s²_u`` per user; NaN for users with fewer than two
        rows. Unbiased for σ_U² and σ² with independent residuals (Def 5.8)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            within = np.where(self.rows >= 2, self.within_ss / (self.rows - 1), np.nan)
            between = (self.means - mu) ** 2 - within / self.rows
        return np.column_stack([between, within])


def _totals(design: PanelDesign) -> NDArray[np.float64]:
    """Every user's row count and sum of y (n x 2)."""
    return user_totals(design.y, design.X[:, :0], design.codes, design.n)


def _squared_deviations(design: PanelDesign, means: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every user's sum of squared deviations from their mean (n x 1): the two-pass sum of
    squares, with no cancellation and no overflow of Σy² for large y."""
    with np.errstate(invalid="ignore", over="ignore"):
        deviations = (design.y - means[design.codes]) ** 2
    return user_sums(deviations[None, :], design.codes, design.n)


def _reduce_moments(data: DaskFrame, spec: FrameSpec, groups: GroupsLike) -> ReducedPanel:
    """A Dask frame's per-user row counts, means and within sums of squares, in two passes
    as in memory: the means, then the squared deviations from them."""
    first = reduce_design(data, spec, groups=groups, sums=_totals, statistic=user_means)
    means = pd.Series(first.statistics[:, 1], index=first.ids)
    second = reduce_design(
        data, spec, groups=groups, sums=_squared_deviations, statistic=np.asarray, given=[means]
    )
    return dataclasses.replace(
        first, statistics=np.column_stack([first.statistics, second.statistics])
    )


def _check_location(columns: tuple[str, ...], formula: str) -> None:
    if columns != ("Intercept",):
        raise FormulaError(
            f"RandomEffectsLocation is a location model and takes 'y ~ 1'; got "
            f"{formula!r} with columns {list(columns)}. For covariates use "
            "dplong.LongitudinalOLS."
        )


def _component_bounds(
    mean_proxy: float, residual_scale: float, min_rows: int | None, n: int, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """Public ranges of the per-user moments under the stated Gaussian model, holding for all
    users with probability at least 1 - γ: ``s²_u <= ρ_res χ²_k / k`` with ``k >= T - 1`` is at
    most ``ρ_res (1 + 2√(x/k) + 2x/k)`` (Laurent–Massart upper tail, x = log(4n/γ): a union
    over n users and two columns); ``|ȳ_u - μ̂| <= 1.1 τ`` (Lemma 5.2's τ, the 10 % margin
    covering μ̂'s error, O(τ/√n)), so ``(ȳ_u - μ̂)² - s²_u/T_u`` lies in
    ``[-upper/2, (1.1 τ)²]``."""
    k = max((min_rows or 2) - 1, 1)
    x = math.log(4.0 * n / gamma)
    upper_within = residual_scale * (1 + 2 * math.sqrt(x / k) + 2 * x / k)
    tau = float(concentration_radius(mean_proxy, n, 1, gamma))
    return np.array([-upper_within / 2.0, 0.0]), np.array([(1.1 * tau) ** 2, upper_within])


def _gaussian_component_scales(
    mean_proxy: float, residual_scale: float, min_rows: int | None
) -> np.ndarray:
    """Variances of the per-user moments for Gaussian users and residuals under the stated
    proxies: ``s²_u ~ ρ χ²_k / k`` has variance ``2ρ²/k``; ``ȳ_u - μ ~ N(0, v)`` is independent
    of s²_u, so ``(ȳ_u - μ)² - s²_u/T`` has variance ``2v² + 2ρ²/(k T²)``, with T >= k + 1."""
    k = max((min_rows or 2) - 1, 1)
    var_within = 2.0 * residual_scale**2 / k
    var_between = 2.0 * mean_proxy**2 + var_within / (k + 1) ** 2
    return np.array([var_between, var_within])


def _error_bound(release: Release, gamma: float) -> float:
    """The released bound on ``|μ̂ - μ|`` with probability ``1 - γ`` (:mod:`dplong.bounds`)."""

    def one(values: NDArray[np.float64]) -> pd.Series:
        return pd.Series(values, index=list(release.names))

    table = error_bound_table(
        gamma,
        bad_events=one(np.zeros(1)),
        noise_scale=one(release.noise_scale),
        noise_sd=one(release.noise_sd),
        sampling_sd=one(release.sampling_sd),
        bias=one(release.bias),
        failed=one(np.zeros(1, dtype=bool)),
        law=release.noise_kind,
    )
    return float(table["total"].iloc[0])


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
            Option("max_rows", "int", "T", MAX_ROWS_HELP),
        ),
    )
)
