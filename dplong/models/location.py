"""Random-effects location model (Def 5.8, Lemma 5.9, Cor 5.10) with variance components."""

from __future__ import annotations

import dataclasses
import importlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, per_column
from dplong.dask_frames import (
    FrameSpec,
    ReducedPanel,
    column_name,
    design_spec,
    is_dask,
    reduce_design,
)
from dplong.dependence import DependenceModel, RandomEffects
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign, column_or_array
from dplong.models.base import (
    Block,
    PanelModel,
    ScaleLike,
    Statistics,
    check_min_rows,
    scale_per_column,
)
from dplong.models.reduce import user_sums
from dplong.privacy.accounting import Accountant
from dplong.privacy.engine import Release
from dplong.privacy.options import PrivacyModel, Variant
from dplong.privacy.radius import DEFAULT_GAMMA, concentration_radius
from dplong.results import PanelResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = ["RandomEffectsLocation"]


class RandomEffectsLocation(PanelModel):
    """User-level DP location μ of ``y_gut = μ + U_g + e_ut`` (Def 5.8) and its variance
    components, the way statsmodels' MixedLM reports ``Group Var`` and ``Scale``.

    * μ: the noisy Winsorized mean of the user means ȳ_u (Def 5.1, Cor 5.10).
    * ``Scale`` (within-user variance σ²): the private mean of the per-user sample variances
      ``s²_u`` (unbiased for σ² with independent residuals), clipped to a public range.
    * ``Group Var`` (σ_U²): the private mean of ``(ȳ_u - μ̂)² - s²_u / T_u`` — unbiased for
      ``Var(ȳ_u) - E[s²_u]/T_u = σ_U²`` — using the already released μ̂ (post-processing).

    The budget is split: ``1 - variance_share`` for μ, ``variance_share`` for the two components.
    Users with fewer than two rows have no ``s²_u``; in the component means they contribute the
    centre of the public range (their number is private and never reported).

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
            Grouping of users that share the random effect U_g (e.g. litters of pigs); every
            user must lie in one group. By default each user is their own group. The estimates
            use per-user statistics only; the grouping enters through the dependence it causes
            (Lemma 5.9), stated with :class:`dplong.dependence.RandomEffects` as ``scale``.
            With a Dask frame, a column name; checking that every user lies in one group reads
            the two columns once more.
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
        label = None
        if re_groups is not None:
            if is_dask(data):
                missing, several = _dask_nesting(data, groups, re_groups)
            else:
                missing, several = _nesting(data, groups, re_groups)
            if missing:
                raise DataError("re_groups has missing values")
            if several:
                raise DataError(
                    "every user must belong to one re_groups level; some users appear in several"
                )
            label = re_groups if isinstance(re_groups, str) else "re_groups"
        return cls(design, label)

    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        scale: ScaleLike = "estimate",
        within_scale: float | None = None,
        min_rows: int | None = None,
        variance_share: float = 0.5,
        privacy: PrivacyModel = "central",
        bound: float | None = None,
        variant: Variant = "default",
        gamma: float = DEFAULT_GAMMA,
        refine: bool = True,
        random_state: RandomState = None,
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
        privacy, bound, variant, gamma, refine, random_state, accountant
            As in :func:`dplong.winsorized_mean`; ``accountant`` is charged the total.

        Returns
        -------
        PanelResults
            ``Intercept`` (μ), and ``Group Var`` and ``Scale`` unless ``variance_share=0``.

        Examples
        --------
        >>> import dplong, dplong.simulate
        >>> rows = dplong.simulate.panel_rows(3000, 5, mean=2.0, random_state=0)
        >>> data = dplong.simulate.long_format(rows)
        >>> res = dplong.RandomEffectsLocation.from_formula("y ~ 1", data, groups="user").fit(
        ...     epsilon=1.0, variance_share=0.0, random_state=0)   # μ only
        >>> bool(abs(res.params["Intercept"] - 2.0) < 0.05), list(res.params.index)
        (True, ['Intercept'])
        """
        n = self.nobs_users
        if (
            isinstance(variance_share, bool)
            or not isinstance(variance_share, int | float | np.integer | np.floating)
            or not (0.0 <= variance_share < 1.0)
        ):
            raise ParameterError(f"variance_share must be a number in [0, 1), got {variance_share!r}")
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
        moments = _UserMoments.of(self._design)

        def location(_: tuple[Release, ...]) -> Statistics:
            sampling = None if statistical is None else np.array([math.sqrt(statistical)])
            return Statistics(moments.means[:, None], scale=proxy, sampling_sd=sampling)

        blocks = [Block(("Intercept",), 1.0 - variance_share, location, proxy is not None)]
        stated_components = proxy is not None and residual_scale is not None
        if variance_share > 0:

            def components(done: tuple[Release, ...]) -> Statistics:
                mu = float(done[0].estimate[0])
                component_scale = (
                    _gaussian_component_scales(float(proxy[0]), float(residual_scale), min_rows)
                    if proxy is not None and residual_scale is not None
                    else None
                )
                return Statistics(moments.components(mu), scale=component_scale, nonnegative=True)

            blocks.append(
                Block(
                    ("Group Var", "Scale"),
                    variance_share,
                    components,
                    stated_components,
                    bounds=_component_bounds(
                        float(proxy[0]), float(residual_scale), min_rows, n, request.options.gamma
                    )
                    if stated_components
                    else None,
                )
            )
        assumptions = (
            "Location: the mean of the user means over the users with a row. Components: "
            "means of the per-user moments (ȳ_u - μ̂)² - s²_u/T_u (Group Var) and s²_u (Scale) "
            "over the users with at least two rows (see RandomEffectsLocation).",
            (
                "Scales estimated privately (the spread of each per-user statistic)."
                if proxy is None
                else f"Scale: {scale.describe() if isinstance(scale, DependenceModel) else scale}."
            )
            + (f" Residual proxy {residual_scale:g}." if residual_scale is not None else ""),
        ) + (
            (f"Users share random effects within {self._re_groups!r}.",) if self._re_groups else ()
        )
        return self._fit(request, blocks, assumptions=assumptions)


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
        counts = _means(_totals(design))
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
    rows = np.bincount(design.codes, minlength=design.n)
    return np.column_stack([rows, user_sums(design.y[None, :], design.codes, design.n)])


def _means(totals: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row counts and means (NaN: no row) from :func:`_totals`."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.column_stack([totals[:, 0], totals[:, 1] / totals[:, 0]])


def _squared_deviations(design: PanelDesign, means: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every user's sum of squared deviations from their mean (n x 1): the two-pass sum of
    squares, with no cancellation and no overflow of Σy² for large y."""
    with np.errstate(invalid="ignore", over="ignore"):
        deviations = (design.y - means[design.codes]) ** 2
    return user_sums(deviations[None, :], design.codes, design.n)


def _reduce_moments(data: DaskFrame, spec: FrameSpec, groups: GroupsLike) -> ReducedPanel:
    """A Dask frame's per-user row counts, means and within sums of squares, in two passes
    as in memory: the means, then the squared deviations from them."""
    first = reduce_design(data, spec, groups=groups, sums=_totals, statistic=_means)
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


def _nesting(data: pd.DataFrame, groups: GroupsLike, re_groups: GroupsLike) -> tuple[bool, bool]:
    """Whether ``re_groups`` has missing values, and whether a user lies in several groups."""
    ids = pd.Series(column_or_array(groups, data, "groups"))
    shared = pd.Series(column_or_array(re_groups, data, "re_groups"))
    return bool(shared.isna().any()), bool((shared.groupby(ids.to_numpy()).nunique() > 1).any())


def _dask_nesting(data: DaskFrame, groups: GroupsLike, re_groups: GroupsLike) -> tuple[bool, bool]:
    """:func:`_nesting` of a Dask frame, in one pass over the two columns."""
    user, shared = column_name(data, groups, "groups"), column_name(data, re_groups, "re_groups")
    missing = data[shared].isna().any()
    several = data.groupby(user)[shared].nunique().max() > 1
    found = importlib.import_module("dask").compute(missing, several)
    return bool(found[0]), bool(found[1])


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
