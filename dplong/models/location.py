"""Random-effects location model (Def 5.8, Lemma 5.9, Cor 5.10) with variance components."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from dplong._validation import RandomState
from dplong.dependence import DependenceModel, RandomEffects
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign, column_or_array
from dplong.models.base import (
    PanelModel,
    ScaleLike,
    check_min_rows,
    common_fit_args,
    scale_per_column,
)
from dplong.models.reduce import segment_starts, user_sums
from dplong.privacy.accounting import Accountant, PrivacyLedger
from dplong.privacy.bounded import clipped_mean
from dplong.privacy.plugin import ScaleRequest
from dplong.privacy.radius import DEFAULT_GAMMA, concentration_radius
from dplong.privacy.winsorized import ReleaseOptions, check_lattice_epsilon
from dplong.results import PanelResults

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

    def __init__(self, design: PanelDesign, re_groups: str | None) -> None:
        super().__init__(design)
        if design.columns != ("Intercept",):
            raise FormulaError(
                f"RandomEffectsLocation is a location model and takes 'y ~ 1'; got "
                f"{design.formula!r} with columns {list(design.columns)}. For covariates use "
                "dplong.LongitudinalOLS."
            )
        self._re_groups = re_groups

    @classmethod
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame,
        *,
        groups: GroupsLike,
        re_groups: GroupsLike | None = None,
        levels: LevelsLike | None = None,
    ) -> RandomEffectsLocation:
        """Build the model from ``"y ~ 1"``.

        Parameters
        ----------
        groups : str or array_like
            User id (the unit of privacy).
        re_groups : str or array_like, optional
            Grouping of users that share the random effect U_g (e.g. litters of pigs); every
            user must lie in one group. By default each user is their own group. The estimates
            use per-user statistics only; the grouping enters through the dependence it causes
            (Lemma 5.9), stated with :class:`dplong.dependence.RandomEffects` as ``scale``.
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
        design = cls._build(formula, data, groups, None, depth=1, levels=levels)
        label = None
        if re_groups is not None:
            ids = pd.Series(column_or_array(groups, data, "groups"))
            shared = pd.Series(column_or_array(re_groups, data, "re_groups"))
            if shared.isna().any():
                raise DataError("re_groups has missing values")
            if (shared.groupby(ids.to_numpy()).nunique() > 1).any():
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
        privacy: str = "central",
        bound: float | None = None,
        random_state: RandomState = None,
        variant: str = "improved",
        midpoint_share: float | None = None,
        gamma: float = DEFAULT_GAMMA,
        refine: bool = True,
        scale_share: float | None = None,
        scale_bounds: tuple[float, float] | None = None,
        scale_method: str = "coinpress",
        accountant: Accountant | None = None,
    ) -> PanelResults:
        """Release μ, and (unless ``variance_share=0``) σ_U² and σ², with user-level DP.

        Parameters
        ----------
        epsilon, delta : float
            Total budget (central δ default ``1/n**2``; δ is spent by μ only).
        scale : "estimate", float or RandomEffects
            ``"estimate"`` (default): estimated privately from the user means, and the variance
            components released by the Winsorized mean with privately estimated scales too.
            Or the variance proxy of one user's mean ȳ_u, or a
            :class:`~dplong.dependence.RandomEffects` model which with ``min_rows`` T gives it
            as ``(σ_U² T + ρ_res) / T`` (Lemma 5.9, Remark 5.3) and the residual scale.
        within_scale : float, optional
            Variance proxy ρ_res of a user's residuals (``‖Σ_u‖_op``): with it the components
            are means on public ranges; needed for them when ``scale`` is a number.
        min_rows : int, optional
            Public lower bound T on rows per user (needed with a dependence model; with it the
            range of ``s²_u`` tightens from a 1-degree-of-freedom to a T-1 bound).
        variance_share : float
            Share of ε for the two variance components, in [0, 1).
        privacy, bound, random_state, variant, midpoint_share, gamma, refine, accountant
            As in :func:`dplong.winsorized_mean`; ``accountant`` is charged the total.
        scale_share, scale_bounds, scale_method
            With ``scale="estimate"``, as in :meth:`LongitudinalOLS.fit
            <dplong.LongitudinalOLS.fit>`; each release (μ, the components) spends this share
            of its own budget on its scale.

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
        ...     epsilon=1.0, variance_share=0.0, random_state=0)   # μ only, scale estimated
        >>> bool(abs(res.params["Intercept"] - 2.0) < 0.05), list(res.params.index)
        (True, ['Intercept'])
        """
        design = self._design
        n = self.nobs_users
        if not (0.0 <= variance_share < 1.0):
            raise ParameterError(f"variance_share must lie in [0, 1), got {variance_share!r}")
        options, rng = common_fit_args(
            n,
            1,
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
        with_components = variance_share > 0
        residual_scale = within_scale
        statistical = None
        if isinstance(scale, DependenceModel):
            rows = check_min_rows(min_rows, "turn a dependence model into a radius")
            if isinstance(scale, RandomEffects):
                residual_scale = scale._residual().log_sobolev_constant(rows)
            statistical = scale.statistical_constant(rows, n) / (n * rows)
        proxy = scale_per_column(
            scale,
            1,
            lambda m: [
                m.mean_scale(check_min_rows(min_rows, "turn a dependence model into a radius"))
            ],
        )
        request = ScaleRequest.check(scale_share, scale_bounds, scale_method)
        if with_components and residual_scale is None and proxy is not None:
            raise ParameterError(
                "the variance components need within_scale (variance proxy of a "
                "user's residuals), a dplong.dependence.RandomEffects scale or "
                'scale="estimate"; or pass variance_share=0 to release μ only'
            )
        if with_components:
            check_lattice_epsilon(
                options.epsilon * variance_share / 2, "each variance component's epsilon"
            )
        if accountant is not None:  # the whole fit must fit before any noise
            accountant.check(options.epsilon, options.delta)

        starts = segment_starts(design.codes)
        rows_u = np.bincount(design.codes, minlength=n).astype(np.float64)
        present = rows_u > 0
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            means = user_sums(design.y[None, :], design.codes, n, starts)[:, 0] / rows_u
            # two-pass sum of squares: no cancellation, and no overflow of Σy² for large y
            deviations = (design.y - means[design.codes]) ** 2
        within_ss = user_sums(deviations[None, :], design.codes, n, starts)[:, 0]
        location = dataclasses.replace(options, epsilon=options.epsilon * (1 - variance_share))
        release = self._release(
            means[:, None], present, proxy, ("Intercept",), location, rng, None, request
        )
        ledger = release.privacy
        extra: list[tuple[str, float, float, float, float]] = []
        if with_components:
            mu = float(np.asarray(release.estimate).item())
            components = dataclasses.replace(options, epsilon=options.epsilon * variance_share)
            if residual_scale is None:
                extra, component_ledger = self._estimated_components(
                    within_ss, rows_u, means, mu, components, rng, request
                )
            else:
                extra, component_ledger = self._components(
                    within_ss,
                    rows_u,
                    means,
                    mu,
                    float(release.scale[0]),
                    float(residual_scale),
                    min_rows,
                    components.epsilon,
                    options.privacy == "local",
                    options.gamma,
                    rng,
                )
            ledger = ledger + component_ledger
            ledger = PrivacyLedger(
                ledger.entries, ledger.epsilon, ledger.delta, "basic", ledger.model
            )
        if accountant is not None:
            accountant.record(ledger)
        sampling = math.sqrt(statistical if statistical is not None else release.scale[0] / n)
        assumptions = (
            "Location from user means; variance components from per-user moments on public "
            "ranges (see RandomEffectsLocation).",
            (
                request.describe(release.scale)
                if proxy is None
                else f"Scale: {scale.describe() if isinstance(scale, DependenceModel) else scale}."
            )
            + (f" Residual proxy {residual_scale:g}." if residual_scale is not None else ""),
            (
                "Intervals of the variance components: sampling sd from their estimated scales; "
                "the per-user moments are skewed (chi-square-like), so Winsorizing them pulls "
                "the components down slightly and these intervals are approximate."
                if residual_scale is None
                else "Intervals of the variance components assume Gaussian users and residuals "
                "(sampling sd from the stated proxies and min_rows)."
            ),
        ) + (
            (f"Users share random effects within {self._re_groups!r}.",) if self._re_groups else ()
        )
        return self._results(
            release, ["Intercept"], np.array([sampling]), assumptions, options.gamma, extra, ledger
        )

    def _per_user_moments(
        self, within_ss: np.ndarray, rows_u: np.ndarray, means: np.ndarray, mu: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ȳ_u - μ̂)² - s²_u/T_u`` and ``s²_u`` per user, and who has them (T_u >= 2)."""
        identified = rows_u >= 2
        if not identified.any():
            raise DataError(
                "the variance components need users with at least two rows; "
                "every user has one (pass variance_share=0)"
            )
        with np.errstate(invalid="ignore", divide="ignore"):
            within = within_ss / (rows_u - 1)
            between = (means - mu) ** 2 - within / rows_u
        return between, within, identified

    def _estimated_components(
        self,
        within_ss: np.ndarray,
        rows_u: np.ndarray,
        means: np.ndarray,
        mu: float,
        options: ReleaseOptions,
        rng: np.random.Generator,
        request: ScaleRequest,
    ) -> tuple[list[tuple[str, float, float, float, float]], PrivacyLedger]:
        """Both components by the Winsorized mean with privately estimated scales.

        Their sampling sd is ``√(ρ̂_j / n)``: users are independent and ρ̂_j, the released
        (conservative) variance proxy of the per-user moment, bounds its variance.
        """
        between, within, identified = self._per_user_moments(within_ss, rows_u, means, mu)
        names = ("Group Var", "Scale")
        release = self._release(
            np.column_stack([between, within]),
            identified,
            None,
            names,
            options,
            rng,
            None,
            request,
        )
        estimate = np.maximum(np.asarray(release.estimate), 0.0)  # variances are >= 0
        noise_scale, noise_sd = np.asarray(release.noise_scale), np.asarray(release.noise_sd)
        sampling = np.sqrt(release.scale / self.nobs_users)
        rows = [
            (name, float(estimate[j]), float(noise_scale[j]), float(noise_sd[j]), sampling[j])
            for j, name in enumerate(names)
        ]
        return rows, release.privacy

    def _components(
        self,
        within_ss: np.ndarray,
        rows_u: np.ndarray,
        means: np.ndarray,
        mu: float,
        mean_proxy: float,
        residual_scale: float,
        min_rows: int | None,
        epsilon: float,
        local: bool,
        gamma: float,
        rng: np.random.Generator,
    ) -> tuple[list[tuple[str, float, float, float, float]], PrivacyLedger]:
        n = self.nobs_users
        between, within, identified = self._per_user_moments(within_ss, rows_u, means, mu)
        # public ranges: s² <= ρ_res χ²_k / k with k >= T-1 (Laurent–Massart upper tail with
        # x = log(4n/γ), union over n users and 2 columns); |ȳ_u - μ̂| <= 1.1 τ, the 10 % margin
        # covering the error of μ̂, which is O(τ / √n)
        k = max((min_rows or 2) - 1, 1)
        x = math.log(4.0 * n / gamma)
        upper_within = residual_scale * (1 + 2 * math.sqrt(x / k) + 2 * x / k)
        tau = float(concentration_radius(mean_proxy, n, 1, gamma))
        lower = np.array([-upper_within / 2.0, 0.0])
        upper = np.array([(1.1 * tau) ** 2, upper_within])
        estimate, noise_scale, noise_sd, ledger = clipped_mean(
            np.column_stack([between, within]),
            lower,
            upper,
            epsilon=epsilon,
            rng=rng,
            names=("Group Var", "Scale"),
            identified=identified,
            local=local,
        )
        group_var = max(float(estimate[0]), 0.0)  # post-processing: variances are >= 0
        scale_hat = max(float(estimate[1]), 0.0)
        # Gaussian sampling law under the stated proxies, users independent: s²_u ~ ρ χ²_k / k
        # has variance 2ρ²/k; ȳ_u - μ ~ N(0, v) is independent of s²_u, so (ȳ_u - μ)² - s²_u/T
        # has variance 2v² + 2ρ²/(k T²), with T >= k + 1
        var_within = 2.0 * residual_scale**2 / k
        var_between = 2.0 * mean_proxy**2 + var_within / (k + 1) ** 2
        rows = [
            (
                "Group Var",
                group_var,
                float(noise_scale[0]),
                float(noise_sd[0]),
                math.sqrt(var_between / n),
            ),
            (
                "Scale",
                scale_hat,
                float(noise_scale[1]),
                float(noise_sd[1]),
                math.sqrt(var_within / n),
            ),
        ]
        return rows, ledger
