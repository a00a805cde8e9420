"""Private random-effects (GLS) regression from per-person sufficient statistics.

The random-effects model ``y_ut = x_ut'β + u_u + e_ut`` (person effects ``u_u`` of variance
σ_u², uncorrelated with the covariates; idiosyncratic errors of variance σ_e²) is estimated by
GLS, which linearmodels' ``RandomEffects`` computes as pooled OLS on quasi-demeaned rows

    ``y_ut - θ_u ȳ_u  on  x_ut - θ_u x̄_u``,   ``θ_u = 1 - √(σ_e² / (T_u σ_u² + σ_e²))``

(``T_u`` a person's rows). Covariates constant within a person are identified, as in pooled
OLS; the within-person variation gets the weight GLS gives it. The fit runs in stages, each
through an existing release, all on one ledger:

1. **Ranges** of the columns without public bounds, found privately once
   (:mod:`dplong.privacy.ranges`, as :class:`~dplong.PooledOLS` finds them) and used by every
   later stage.
2. **The variance components**, unless stated (``variance_components=``, free): a pilot
   :class:`~dplong.PooledOLS` fit gives β₀; every person's residuals ``y_ut - x_ut'β₀`` (of
   the clipped rows) are reduced to their mean ``ē_u`` and to ``s²_u``, the residual variance
   of the person's own within regression on their clipped rows (which does not depend on β₀:
   Swamy and Arora's within residuals, person by person), and
   :class:`~dplong.RandomEffectsLocation` releases ``Group Var`` (σ_u²: the mean of
   ``(ē_u - μ̂)² - s²_u / T_u``) and ``Scale`` (σ_e²: the mean of ``s²_u``), with its own
   private scales and error bounds.
3. **The quasi-demeaned fit**: :class:`~dplong.PooledOLS`'s release of the Gram matrix, the
   Newton step and the person-clustered meat, on the rows quasi-demeaned with the released θ_u
   (post-processing of stage 2; a person's ``T_u`` enters inside the mechanism only). A
   person's quasi-demeaned rows have ``Σ_t ‖z_t - θ z̄‖² <= Σ_t ‖z_t‖²``, so the releases keep
   their sensitivities. The Gram release carries, in the same vector and within the same
   bound, the between-person part ``(1 - (1 - θ_u)²) T_u z̄_u z̄_u'`` the quasi-demeaning took
   away: where GLS's released X'X is too close to its noise for the Newton steps to undo its
   floor, the rows keep the least share of that part that lifts it clear
   (:func:`~dplong.models.pooled.gram._lifted`; all of it: pooled OLS's rows), and the
   results' ``theta`` and a note say so. Its budget is what the earlier stages left
   (:func:`~dplong.privacy.budget.remaining_rho`).

Standard errors are clustered by person (valid for any θ, so also for a released one) and
include the privacy noise. The shares are set in :func:`~dplong.privacy.budget.
random_effects_budget`.

**Accuracy.** A quasi-demeaned row keeps only ``1 - θ_u`` of its between-person part, while
the Gram release's noise is set by the largest row a person may have: in the directions of
between-person covariates (the intercept, a treatment) the released Gram matrix has
``(1 - θ)²`` of pooled OLS's signal for the same noise. Where the privacy noise dominates
(small n ε) pooled OLS is then the more accurate of the two, and the fit moves its rows
toward pooled OLS's as far as the steps need to correct them; random effects gains where
the sampling error dominates and the covariates vary within persons (``docs/accuracy.md``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong._validation import RandomState, checked_call, real_number
from dplong.dask_frames import ReducedPanel
from dplong.exceptions import (
    DplongError,
    DplongWarning,
    InsufficientUsersError,
    ParameterError,
)
from dplong.formula import PanelDesign
from dplong.models.command_line import (
    BOUNDS_OPTION,
    FOUND_MAX_ROWS_OPTION,
    CommandLineModel,
    Option,
    register,
)
from dplong.models.location import COMPONENTS, RandomEffectsLocation
from dplong.models.option_checks import CovType, check_max_rows
from dplong.models.pooled.dask_rows import DaskRows, residual_moments
from dplong.models.pooled.estimator import PooledOLS, said_on_screen
from dplong.models.pooled.factors import Blocks, Disjoint
from dplong.models.pooled.frame import _Scaling
from dplong.models.pooled.gram import _released_entries
from dplong.models.pooled.located import RangeFlags
from dplong.models.pooled.persons import PersonSums
from dplong.models.pooled.release import _Statistics
from dplong.planning import FitPlan, PlannedBlock, _decide, checkpoint
from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger, zcdp_epsilon
from dplong.privacy.budget import (
    RandomEffectsBudget,
    StatisticsBudget,
    afford,
    random_effects_budget,
    remaining_rho,
    settle,
    statistics_budget,
)
from dplong.privacy.budget.fit import guarded
from dplong.privacy.row_cap import RowCap
from dplong.results import PanelResults, RandomEffectsResults, RegressionResults

__all__ = ["RandomEffects", "theta"]

#: Shares of the quasi-demeaned fit's ρ: the Gram matrix, the scores' size, four Newton steps
#: and the meat. The quasi-demeaned Gram matrix keeps ``(1 - θ)²`` of the between-person
#: signal for the same noise, so its eigenvalue floor shrinks the pilot hard in those
#: directions: a larger share lowers the floor, and the steps undo the rest. The last step's
#: noise is what stays in β̂ (each step corrects the error left by the ones before), so it
#: takes the most, as :class:`PooledOLS`'s does; that also affords its skew check
#: (:data:`~dplong.models.pooled.release.SKEW_SEEN`) on skewed outcomes. Equal shares for
#: the steps and the meat were less accurate on every panel measured, and left a mildly
#: lognormal outcome's slope several bse low (docs/accuracy.md, "Random effects' last step").
STEPS_SHARES = (0.45, 0.05, 0.05, 0.05, 0.05, 0.3, 0.05)


#: The model's assumption, in every fit's results: where it fails, GLS (private or not, as
#: linearmodels') converges to neither the within nor the between slope, and its intervals
#: miss the truth (docs/guide/panel.md, "The model's assumption"); no number of the fit itself
#: tells that case apart, a comparison with another fit does (:func:`dplong.hausman`). There
#: the slopes also move with θ, and the intervals hold the fit at the released θ; σ_e² comes
#: from each person's own within fit, which the pilot's privacy noise does not move (it moved
#: the residuals' within variance about their means: an audit's silent misses of the
#: noise-free GLS, docs/accuracy.md, "Random effects' silent misses: the released θ").
UNCORRELATED = (
    "Random effects: the person effects are assumed uncorrelated with every regressor; where "
    "they are not (a regressor's person means related to the effect), the coefficients of "
    "regressors that vary within persons are biased, as in any random-effects GLS, and they "
    "move with the released variance components (θ): the intervals hold GLS at the released "
    "θ. dplong.hausman(a PanelOLS fit, a BetweenOLS fit) tests it (the more powerful test "
    "under privacy; PanelOLS against this fit too)."
)


class RandomEffects(PooledOLS):
    """User-level DP random-effects (GLS) regression with person-clustered standard errors
    (module docstring): linearmodels' ``RandomEffects``.

    Built as :class:`PooledOLS` is (``bounds`` and ``levels`` alike). The fit releases the
    coefficients and the variance components (``variance_decomposition``, ``theta``); state
    the components (``variance_components=(σ_u², σ_e²)``) when they are public knowledge.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dplong
    >>> rng = np.random.default_rng(0)
    >>> people, years = 4000, 4
    >>> treated = np.repeat(rng.integers(0, 2, people), years)   # constant within a person
    >>> x = rng.uniform(0, 1, people * years)
    >>> y = 1.0 + 0.5 * treated + x + np.repeat(rng.normal(0, 0.5, people), years) \\
    ...     + rng.normal(0, 0.5, people * years)
    >>> panel = pd.DataFrame({"id": np.repeat(np.arange(people), years), "y": y,
    ...                       "treated": treated, "x": x})
    >>> model = dplong.RandomEffects.from_formula(
    ...     "y ~ treated + x", panel, groups="id",
    ...     bounds={"y": (-2.0, 5.0), "treated": (0, 1), "x": (0, 1)})
    >>> res = model.fit(epsilon=2.0, max_rows=4, random_state=1)
    >>> list(res.params.index), bool(res.privacy.epsilon <= 2.0)
    (['Intercept', 'treated', 'x'], True)
    >>> list(res.variance_decomposition.index)
    ['Effects', 'Residual', 'Percent due to Effects']
    """

    model_name = "RandomEffects"
    estimator = "random-effects GLS"

    # no method="ptr": ePTR is a route of pooled OLS only (its test is on X'X, not the
    # quasi-demeaned design), so the options differ from the parent's
    @checked_call
    @guarded()  # a failure after the noise began is charged, as an advised fit's
    def fit(  # type: ignore[override]
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        max_rows: int | None = None,
        variance_components: tuple[float, float] | None = None,
        cov_type: CovType = "clustered",
        privacy: Literal["central"] = "central",
        variant: Literal["default"] = "default",
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> RandomEffectsResults:
        """Release the random-effects GLS coefficients and the variance components with
        user-level (ε, δ)-DP (module docstring). Every refusal comes before any noise.

        Parameters
        ----------
        epsilon, delta : float
            Total budget (δ default ``1/n**2``) of all the stages.
        max_rows : int, optional
            Public cap on the rows that count for a person (as in :meth:`PooledOLS.fit`:
            found privately where not given, once for every stage); ``theta`` is reported
            for 1 to that many rows.
        variance_components : (float, float), optional
            Public ``(σ_u², σ_e²)``: the person effects' and the idiosyncratic errors'
            variances, in the outcome's units squared (σ_e² > 0), as a tuple, list or 1-D
            array of two numbers. Then nothing is spent on them and the whole budget goes to
            the coefficients (the command line's text ``"EFFECTS,RESIDUAL"`` is read too).
            Default: released privately.
        cov_type, privacy, variant, random_state, rng, accountant
            As in :meth:`PooledOLS.fit`; ``accountant`` is checked before the first draw and
            charged the whole fit.

        Returns
        -------
        RandomEffectsResults

        Examples
        --------
        With linearmodels' components on the wage panel (σ_u² 0.1342, σ_e² 0.1259) stated and
        the noise off, the estimate is linearmodels' GLS (``black`` −0.166, θ 0.676): no score
        is clipped where the noise is off:

        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.RandomEffects.from_formula(
        ...     "lwage ~ exper + black", wages, groups="nr",
        ...     bounds={"lwage": (-4, 5), "exper": (0, 20), "black": (0, 1)})
        >>> res = model.fit(epsilon=1e300, delta=0.5, max_rows=8, random_state=0,
        ...                 variance_components=(0.1342, 0.1259))
        >>> round(float(res.params["black"]), 3), round(float(res.theta[8]), 3)
        (-0.166, 0.676)
        """
        design = self._design
        n = design.n
        options, cap, generator = self._checked(
            epsilon, delta, max_rows, cov_type, privacy, variant, accountant, random_state, rng
        )
        stated = _check_components(variance_components)
        plan = self.release_plan(
            epsilon=options.epsilon, delta=options.delta, max_rows=cap, stated=stated
        )
        self._check_ranges(plan)
        residuals = _ResidualModel(design, self._source)
        if stated is None:
            residuals.check(plan)
        share = plan.components_share
        checkpoint(  # every refusal is decided: dplong.plan stops here, before any noise
            FitPlan(
                n,
                options,
                (
                    PlannedBlock(
                        design.columns, 1.0 - share, False, None, notes=self._range_notes(plan)
                    ),
                    *((PlannedBlock(COMPONENTS, share, False, None),) if share else ()),
                ),
            )
        )
        afford(accountant, options.epsilon, options.delta)

        # (not its constant flags: a random-effects fit identifies a regressor constant
        # within persons, as pooled OLS does)
        located = self._find_ranges(plan, generator)
        ranges, frame, flags = located.ranges, located.frame, located.flags
        row_cap = self._row_cap(cap, plan, generator)  # every stage weighs rows up to it
        entries = (*located.entries, *row_cap.entries)
        stage: dict[str, Any] = {"max_rows": row_cap.value, "random_state": generator}

        # the rows both stages read, as this model reads them
        rows: dict[str, Any] = {
            "levels": self._levels,
            "frame": frame,
            "flags": flags,
            "blocks": self._blocks,
            "source": self._source,
        }

        def quiet_stage(model: PooledOLS, epsilon: float) -> RegressionResults:
            # a stage of this fit: its notes are the fit's results' to say
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DplongWarning)
                return model.fit(epsilon=epsilon, delta=options.delta, **stage)

        found: PanelResults | None = None
        withheld: list[str] = []  # the pilot's withheld coefficients
        if stated is None:
            pilot = quiet_stage(
                PooledOLS(design, ranges, disjoint=self._disjoint, **rows),
                zcdp_epsilon(plan.pilot_rho, options.delta),
            )
            # a coefficient the pilot withheld (a released fact) counts as 0 in the residuals:
            # they keep its effect, which the components then include (the note says so)
            beta = pilot.params.to_numpy()
            withheld = pilot.params.index[~np.isfinite(beta)].tolist()
            found = residuals.release(np.nan_to_num(beta, nan=0.0), ranges, plan, generator)
            entries = (*entries, *_staged(pilot.privacy, "pilot"))
            entries = (*entries, *_staged(found.privacy, "variance components"))
            components = _released_components(found)
        else:
            components = stated
        # as stated or released (NaN where withheld): what the results report, where
        # ``components`` are those the rows are quasi-demeaned with
        shown = components
        if found is not None:
            effects, residual = (float(found.params[k]) for k in COMPONENTS)
            shown = (effects, residual)
        final = _QuasiDemeaned(
            design,
            ranges,
            components=components,
            shown=shown,
            found=self._located,
            row_cap=row_cap,
            **rows,
        )
        rho = remaining_rho([e.cost for e in entries], options.epsilon, options.delta)
        fitted = quiet_stage(final, zcdp_epsilon(rho, options.delta))
        ledger = settle(accountant, [*entries, *fitted.privacy.entries], options)
        said = self._range_notes(plan)
        if withheld:
            said += (
                f"The pilot fit withheld {withheld}: the residuals whose variance components "
                "set the quasi-demeaning keep their effect (taken as 0 there), so the "
                "components may be too large and the weights less efficient; the "
                "coefficients' person-clustered standard errors do not rest on the weights.",
            )
        return said_on_screen(
            self._random_effects_results(fitted, ledger, components, found, row_cap.value, said)
        )

    def release_plan(
        self,
        *,
        epsilon: float,
        delta: float,
        max_rows: int | None = None,
        stated: tuple[float, float] | None = None,
    ) -> RandomEffectsBudget:
        """The fit's budget from public facts (:func:`~dplong.privacy.budget.
        random_effects_budget`): the count that finds the cap on a person's rows (none when
        ``max_rows`` is given), the private ranges' medians, the pilot, the components'
        release (none when ``stated``) and the quasi-demeaned fit's nominal ρ.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.RandomEffects.from_formula("lwage ~ exper", wages, groups="nr",
        ...                                           bounds={"lwage": (-4, 5), "exper": (0, 20)})
        >>> plan = model.release_plan(epsilon=4.0, delta=545 ** -2.0)
        >>> plan.median_epsilon, round(plan.components_epsilon, 3), len(plan.rho)  # 4 steps
        (0.0, 1.651, 7)
        >>> model.release_plan(epsilon=4.0, delta=545 ** -2.0, stated=(0.1, 0.1)).pilot_rho
        0.0
        """
        return random_effects_budget(
            self._design.n,
            epsilon,
            delta,
            STEPS_SHARES,
            int(self._located.sum()),
            stated=stated is not None,
            rows=max_rows is None,
        )

    def gram_noise_sd(self, *, epsilon: float, delta: float, max_rows: int) -> float:
        """The sd of the privacy noise on each diagonal entry of the quasi-demeaned fit's
        released ``[X y]'[X y]`` at its nominal budget (components released privately), in
        the units of :meth:`PooledOLS.gram_noise_sd`. Public facts only.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> model = dplong.RandomEffects.from_formula("lwage ~ exper", wages, groups="nr")
        >>> pooled = dplong.PooledOLS.from_formula("lwage ~ exper", wages, groups="nr")
        >>> noise = [m.gram_noise_sd(epsilon=1.0, delta=1e-6, max_rows=8)
        ...          for m in (model, pooled)]
        >>> bool(noise[0] > noise[1])   # the earlier stages take their share
        True
        """
        cap = check_max_rows(max_rows)
        rho = self.release_plan(epsilon=epsilon, delta=delta, max_rows=cap).rho[0]
        return math.sqrt(2.0) * cap * (len(self._design.columns) + 1.0) / math.sqrt(2.0 * rho)

    def _random_effects_results(
        self,
        fitted: RegressionResults,
        ledger: PrivacyLedger,
        components: tuple[float, float],
        found: PanelResults | None,
        cap: int,
        said: tuple[str, ...],
    ) -> RandomEffectsResults:
        """The quasi-demeaned fit's results as this model's, with the components and the
        notes ``said`` of its own stages (its ranges')."""
        assert isinstance(fitted, RandomEffectsResults)  # _QuasiDemeaned._finished's
        # as stated or released (NaN where withheld); θ from those quasi-demeaned with
        effects, residual = fitted.variance_decomposition.iloc[:2]
        thetas = fitted.theta
        how = "stated (public)" if found is None else "released (DP)"
        gls = theta(thetas.index.to_numpy(), *components)
        rows = (
            f"rows quasi-demeaned with θ = 1 - √(σ_e²/(T σ_u² + σ_e²)), {thetas.iloc[0]:.3g} at "
            f"T = 1 to {thetas.iloc[-1]:.3g} at T = {cap}"
            if np.array_equal(gls, thetas.to_numpy())
            else "GLS's θ = 1 - √(σ_e²/(T σ_u² + σ_e²)) (the rows were quasi-demeaned with "
            "less: the note on their θ)"
        )
        shown = ["withheld" if np.isnan(v) else f"{v:.4g}" for v in (effects, residual)]
        described = (
            f"variance components {how}: Effects (σ_u²) {shown[0]}, Residual (σ_e²) "
            f"{shown[1]}; {rows}"
        )
        notes = (*said, *fitted.warnings)
        # the components set θ only, and the clustered intervals hold at any θ: their stage's
        # notes qualify the decomposition, not the coefficients (its remedies name that
        # stage's own options), so they join the assumptions
        staged: tuple[str, ...] = ()
        if found is not None:
            staged = tuple(
                "variance components' stage (they set θ only; its remedies are its own options: "
                f"here state variance_components= or raise epsilon): {note}"
                for note in found.warnings
            )
            if not np.isfinite(found.params[list(COMPONENTS)].to_numpy()).all():
                notes += (
                    "A variance component was withheld (its note says why): the rows were not "
                    "quasi-demeaned (θ = 0: pooled OLS's weights). State the components "
                    "(variance_components=...) or raise epsilon.",
                )
        values = {f.name: getattr(fitted, f.name) for f in dataclasses.fields(fitted)}
        values.update(
            model=self.spec,
            privacy=ledger,
            assumptions=(*fitted.assumptions, *staged, UNCORRELATED, described),
            warnings=notes,
            components=found,
        )
        return RandomEffectsResults(**values)


def _decomposition(effects: float, residual: float) -> pd.Series:
    """linearmodels' variance decomposition of the components (NaN where withheld)."""
    total = effects + residual
    return pd.Series(
        [effects, residual, effects / total if total > 0 else math.nan],
        index=["Effects", "Residual", "Percent due to Effects"],
        name="variance decomposition",
    )


def theta(
    rows: NDArray[np.float64] | NDArray[np.intp], effects: float, residual: float
) -> NDArray[np.float64]:
    """GLS's quasi-demeaning ``θ = 1 - √(σ_e² / (T σ_u² + σ_e²))`` for persons of ``rows``
    rows (0 for none; 0 where σ_u² = 0: pooled OLS).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.random_effects import theta
    >>> theta(np.array([0, 1, 8]), 1.0, 1.0).round(4).tolist()
    [0.0, 0.2929, 0.6667]
    """
    t = np.asarray(rows, dtype=np.float64)
    return np.asarray(1.0 - np.sqrt(residual / (t * effects + residual)))


class _QuasiDemeaned(PooledOLS):
    """:class:`PooledOLS` on rows quasi-demeaned with given variance components (public:
    stated, or released by an earlier stage)."""

    model_name = "RandomEffects"
    estimator = "random-effects GLS"
    _quasi_demeaned = True

    def __init__(
        self,
        design: PanelDesign,
        ranges: NDArray[np.float64],
        *,
        levels: Any,
        frame: NDArray[np.float64],
        flags: RangeFlags,
        blocks: Blocks,
        components: tuple[float, float],
        shown: tuple[float, float],
        source: DaskRows | None,
        found: NDArray[np.bool_],
        row_cap: RowCap,
    ) -> None:
        super().__init__(
            design, ranges, levels=levels, frame=frame, flags=flags, blocks=blocks, source=source
        )
        # the components the rows are quasi-demeaned with, and as the results report them
        self._components, self._shown = components, shown
        self._found = found
        # the random-effects fit's cap (its count is in that fit's ledger, not this one's)
        self._handed = dataclasses.replace(row_cap, entries=())

    def _row_cap(
        self, max_rows: int | None, plan: StatisticsBudget, generator: np.random.Generator
    ) -> RowCap:
        """The cap the random-effects fit found or was given (its notes say which)."""
        return self._handed

    @property
    def _found_privately(self) -> NDArray[np.bool_]:
        """The ranges the random-effects fit found privately and handed over (``found``)."""
        return self._found

    def _zero_products(self) -> Disjoint:
        """None: a quasi-demeaned row of a factor has several non-zero indicators."""
        return ()

    def release_plan(
        self, *, epsilon: float, delta: float, max_rows: int | None = None
    ) -> StatisticsBudget:
        """The quasi-demeaned releases' ρ (:data:`STEPS_SHARES`): every range is known, and
        the random-effects fit hands its cap on a person's rows over (``max_rows``)."""
        return statistics_budget(self._design.n, epsilon, delta, STEPS_SHARES, 0)

    def _row_count(self, released: NDArray[np.float64], cap: int) -> float:
        """The weighted number of rows from the released ``[X y]'[X y]`` of the rows as they
        are (GLS's quasi-demeaned rows' and their between-person part's): its intercept entry;
        without an intercept every person counts ``cap`` rows."""
        if "Intercept" not in self._design.columns:
            return float(self._design.n * cap)
        return super()._row_count(released, cap)

    def _person_sums(self, scaled: _Scaling, cap: int) -> tuple[PersonSums, int]:
        """Each person's sums of ``z_t - θ_u z̄_u`` for every scaled row z = (x, y) (the map to
        [-1, 1] is affine and the intercept is a column, so GLS on the scaled rows unscales to
        GLS on the rows), with the between-person part the quasi-demeaning took away
        (:meth:`PersonSums.of_means`): the fit may give the rows some of it back. On a Dask
        frame, read where the rows lie: each person's sums of their scaled rows first (a
        pass), then of the rows less the person's shift."""
        design = self._design
        n = design.n
        kept = _released_entries(len(design.columns) + 1, self._zero_products())
        if self._source is not None:
            totals = self._source.scaled_sums(scaled)
            sums, rows = totals[:, :-1], totals[:, -1]
            quasi = self._source.person_sums(
                scaled, blocks=self._blocks, kept=kept, shift=self._shift(rows, sums)
            )
        else:
            z, rows, sums = self._quasi(np.column_stack(scaled.apply(design.X, design.y)))
            quasi = PersonSums.of_rows(
                z[:, :-1], z[:, -1], design.codes, n, blocks=self._blocks, kept=kept
            )
        if self._components[0] <= 0.0:  # θ = 0: the rows are pooled OLS's, nothing taken away
            return quasi, self._cap(cap)
        share = 1.0 - (1.0 - theta(rows, *self._components)) ** 2
        between = PersonSums.of_means(sums, rows, share, blocks=self._blocks, kept=kept)
        return dataclasses.replace(quasi, between=between), self._cap(cap)

    def _quasi(
        self, z: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The scaled rows ``z`` (x, y) quasi-demeaned, and each person's row count and sums
        of ``z``."""
        codes, n = self._design.codes, self._design.n
        rows = np.bincount(codes, minlength=n).astype(np.float64)
        # per column, bincount adds a person's rows in row order, as np.add.at did (reduceat's
        # pairwise sums would change the last bits of the releases)
        sums = np.column_stack([np.bincount(codes, weights=c, minlength=n) for c in z.T]).astype(
            np.float64
        )
        return z - self._shift(rows, sums)[codes], rows, sums

    def _finished(
        self, results: RegressionResults, release: _Statistics, cap: int
    ) -> RegressionResults:
        """The results with the θ the rows were quasi-demeaned with (GLS's, or one keeping
        more of the between-person part: a warning says why)."""
        weight = release.between_weight
        rows = np.arange(1, cap + 1)
        gls = theta(rows, *self._components)
        used = 1.0 - np.sqrt((1.0 - gls) ** 2 + weight * (1.0 - (1.0 - gls) ** 2))
        said: tuple[str, ...] = ()
        if weight > 0.0:
            kept = (
                "the rows are pooled OLS's (θ = 0: they keep all of the between-person part "
                "GLS takes away)"
                if weight == 1.0
                else f"the rows keep {weight:.3g} of the between-person part GLS takes away "
                f"(θ = {used[0]:.3g} at T = 1 to {used[-1]:.3g} at T = {cap}; pooled OLS's "
                "keep all of it, θ = 0)"
            )
            said = (
                "GLS's quasi-demeaned rows left the released X'X too close to its noise along "
                "some direction for the Newton steps to undo its floor (θ = "
                f"{gls[0]:.3g} at T = 1 to {gls[-1]:.3g} at T = {cap}): {kept}. The "
                "coefficients and their person-clustered intervals are this weighting's, "
                "between GLS's and pooled OLS's: the same where the random-effects model "
                "holds (less efficient than GLS's), apart where a regressor correlates with "
                "the person effects (then GLS's can lie outside these intervals). Raise "
                "epsilon, or state the components (variance_components=...: the fit keeps "
                "their budget), for GLS's weighting.",
            )
        values = {f.name: getattr(results, f.name) for f in dataclasses.fields(results)}
        # a warning, not an assumption: an audit found GLS 30 SEs outside such intervals where
        # x correlated with the person effects, warned only of the ridge
        values["warnings"] = (*results.warnings, *said)
        return RandomEffectsResults(
            **values,
            variance_decomposition=_decomposition(*self._shown),
            theta=pd.Series(used, index=pd.Index(rows, name="rows")),
            components=None,
        )

    def _shift(self, rows: NDArray[np.float64], sums: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each person's ``θ_u z̄_u`` from their row count and sums of their scaled rows."""
        shrink = theta(rows, *self._components) / np.maximum(rows, 1.0)
        return np.asarray(shrink[:, None] * sums)


class _ResidualModel:
    """Stage 2: the variance components from the residuals of a pilot fit, released by
    :class:`RandomEffectsLocation` (its default half of the budget on them, half on the
    residuals' mean, which centres Group Var) from each person's moments of the residuals,
    of the rows in memory or read where a Dask frame's lie."""

    def __init__(self, design: PanelDesign, source: DaskRows | None) -> None:
        self._design, self._source = design, source

    def _model(self, moments: NDArray[np.float64]) -> RandomEffectsLocation:
        """The location model of the residuals' per-person row counts, means, and residual
        sums of squares of each person's own within regression with their degrees of freedom
        (n x 4, :func:`~dplong.models.pooled.dask_rows.residual_moments`)."""
        n = self._design.n
        residuals = ReducedPanel(
            moments, np.arange(n), n, ("Intercept",), "residual", "residual ~ 1"
        )
        return RandomEffectsLocation(residuals, None)

    def _fit(
        self,
        moments: NDArray[np.float64],
        plan: RandomEffectsBudget,
        generator: np.random.Generator,
    ) -> PanelResults:
        # its notes join the fit's (prefixed, RandomEffects._random_effects_results): not
        # warned twice, nor in terms of the stage's own budget
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DplongWarning)
            return self._model(moments).fit(
                epsilon=plan.components_epsilon,
                delta=plan.components_delta,
                weights="equal",
                random_state=generator,
            )

    def check(self, plan: RandomEffectsBudget) -> None:
        """Refuse before any noise what the components' release would refuse: its plan
        depends on public facts only (n and its budget), so it is decided on zeros."""
        zeros = np.zeros((self._design.n, 4))
        decision = _decide(lambda: self._fit(zeros, plan, np.random.default_rng(0)))
        if isinstance(decision, DplongError):
            refusal = InsufficientUsersError(
                "n * epsilon is too small to release the variance components privately "
                f"(their stage gets epsilon {plan.components_epsilon:.3g}, n = "
                f"{self._design.n}): state them (variance_components=(effects, residual)) or "
                f"raise epsilon. The stage's refusal: {decision}"
            )
            refusal.budget_refusal = decision.budget_refusal  # a larger ε cures it
            raise refusal from decision

    def release(
        self,
        beta: NDArray[np.float64],
        ranges: NDArray[np.float64],
        plan: RandomEffectsBudget,
        generator: np.random.Generator,
    ) -> PanelResults:
        """The released components of the residuals of the rows clipped to ``ranges``."""
        if self._source is not None:
            return self._fit(self._source.residual_moments(beta, ranges), plan, generator)
        return self._fit(residual_moments(self._design, beta, ranges), plan, generator)


def _check_components(value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    try:
        # a string, bytes, a mapping or a set would unpack to characters, codes or keys (the
        # command line reads "EFFECTS,RESIDUAL" as a pair of numbers itself)
        if not isinstance(value, tuple | list | np.ndarray) or np.ndim(value) != 1:
            raise TypeError
        effects, residual = value
    except (TypeError, ValueError):
        raise ParameterError(
            f"variance_components must be a pair (effects, residual), got {value!r:.60}"
        ) from None
    effects = real_number(effects, "variance_components effects")
    residual = real_number(residual, "variance_components residual")
    if not (math.isfinite(effects) and math.isfinite(residual) and effects >= 0 < residual):
        raise ParameterError(
            "variance_components must be finite, effects >= 0 and residual > 0, got "
            f"({effects!r}, {residual!r})"
        )
    return float(effects), float(residual)


def _released_components(found: PanelResults) -> tuple[float, float]:
    """(σ_u², σ_e²) from the released Group Var and Scale: a withheld or zero Scale leaves no
    quasi-demeaning (θ = 0, pooled OLS's weights); a withheld Group Var counts as 0."""
    effects, residual = (float(found.params[k]) for k in ("Group Var", "Scale"))
    if not (math.isfinite(residual) and residual > 0.0):
        return 0.0, 1.0
    return (max(effects, 0.0) if math.isfinite(effects) else 0.0), residual


def _staged(ledger: PrivacyLedger, stage: str) -> Sequence[LedgerEntry]:
    """A sub-release's ledger entries, their stages prefixed with the fit's stage."""
    return [dataclasses.replace(e, stage=f"{stage}: {e.stage}") for e in ledger.entries]


register(
    CommandLineModel(
        "re",
        RandomEffects.from_formula,
        "RandomEffects: random-effects GLS with person-clustered errors from released "
        "sufficient statistics and variance components; between-person covariates identified",
        uses_time=True,  # the time column of TimeEffects
        options=(
            BOUNDS_OPTION,
            FOUND_MAX_ROWS_OPTION,
            Option(
                "variance_components",
                "pair",
                "EFFECTS,RESIDUAL",
                "public variance components (the person effects' and the errors' variances): "
                "nothing is spent on them",
            ),
        ),
    )
)
