"""Private pooled OLS from per-person sufficient statistics, each released as one vector.

The pooled estimator of ``y_ut = x_ut'β + e_ut`` (linearmodels' ``PooledOLS``, statsmodels'
``OLS`` with ``cov_type="cluster"``) solves ``(Σ_u X_u'X_u) β = Σ_u X_u'y_u``: it identifies
covariates that never change within a person (treatment arm, sex, cohort), which the per-user
and within estimators cannot. Everything it needs is a sum over people, released in four
Gaussian (zCDP) vectors, whatever the number of columns:

1. **Scaling to ranges.** Every column of the design and the outcome gets a range: the public
   one the analyst states (``bounds``, free; indicator columns of declared factors know theirs
   from the formula), or else one found privately from every person's smallest and largest
   value (:mod:`dplong.privacy.ranges`: three private medians per column and one vector of
   counts, a share of the budget set from public facts by
   :func:`~dplong.privacy.budget.statistics_budget`). Values are clipped into the range. The
   frame maps a found range's **core** (where most persons' values lie, a third of the range
   for a normal column) and a public range onto ``[-1, 1]`` (around its centre when the
   formula has an intercept, so that the map is undone exactly); values beyond the core keep
   their place in the scores and are clipped to ``[-1, 1]`` in the Gram matrix only. A
   declared factor's indicators stay 0/1; with an intercept the widest treatment-coded
   factor takes it in, the frame's intercept column being the reference level's indicator
   (an invertible public map: the factor's rows are one-hot and its Gram block the levels'
   counts, however rare the reference level).
2. **The augmented Gram matrix** (the pilot and the preconditioner). Each person's ``Z_u = Σ_t
   w_u z_t z_t'`` for the frame's rows ``z = (x̃, ỹ)`` clipped to ``[-1, 1]``, with the weight
   ``w_u = min(1, T_cap / T_u)`` for a public cap ``T_cap`` on the rows that count
   (``max_rows``), is PSD with trace at most ``T_cap r²`` for a public bound ``r²`` on a
   row's squared norm: 1 a column, and 1 for all the indicators of a declared factor
   together (treatment coding: one 1 a row at most; the frame leaves them 0/1, and a row's
   part over the block is projected onto that norm where, quasi-demeaned, it exceeds it), so
   ``r² = p + 1`` without factors. It is clipped (scaled down) to Frobenius norm ``B = T_cap
   min(r², max(GRAM_NORM r, r² / GRAM_SHRINK))`` (:data:`GRAM_NORM`: few persons reach it in
   the frame). Vectorised with the off-diagonal
   entries times √2 (so that the vector's norm is the Frobenius norm), replacing one person
   moves the sum by at most ``√2 B`` (for PSD ``A, B``, ``‖A - B‖_F² <= ‖A‖_F² + ‖B‖_F²``): one
   discrete Gaussian release of the whole vector
   (:func:`~dplong.privacy.noise.release_vector_sum`) gives ``X'X``, ``X'y`` and ``y'y``.
   Pooled rows of a treatment-coded factor (with the intercept it took in) are one-hot, so
   the products of two of its different columns are 0 in every row: those entries are public
   zeros, left out of the vector and put back (the sensitivity is the same ``√2 B``: over the
   released entries a person's vector keeps its Frobenius norm and two persons' vectors
   their inner product ``tr(Z_u Z_v) >= 0``), and the factor's block gets noise on its
   diagonal, the levels' row counts, only. The released ``X'X`` is floored at an eigenvalue
   scaled to its noise (AdaSSP-style: ``λ_min >= σ (ν + 3)`` with ``ν`` the noise's typical
   spectral norm in sds, ``√(2p)`` without structural zeros; a ridge only where the noise
   could make it singular) and solved for the pilot
   ``β₀``. Neither clip moves the estimate's target: the Newton steps' fixed point is pooled
   OLS on the ranges' values whatever the Hessian, which only sets how fast they get there.
3. **Two Newton steps.** The pilot's noise is set by the worst case of a row; a score is
   usually far smaller. At the last β (public) each person's score
   ``s_u = Σ_t w_u x̃_t (ỹ_t - x̃_t'β)`` is whitened by the released Hessian, ``Ĥ^{-1/2} s_u``
   (so that the noise is spread as the sampling error is, not equally over directions the
   design pins down well and badly), clipped to a radius set from released numbers
   (:data:`CLIP_RADIUS` times the Cauchy–Schwarz size ``T_cap² σ̂² m̂`` of a whitened score,
   with the residual variance σ̂² at that β and the mean ``‖Ĥ^{-1/2} x̃‖²`` m̂ from step 2;
   sensitivity ``2R``), their sum released, and ``β ← β + Ĥ^{-1/2} Σ_u Ĥ^{-1/2} s_u``:
   exactly pooled OLS when nothing is clipped and the noise is off. Each step multiplies
   what the ridge left of the pilot's pull by ``S = λ Ĥ⁻¹``, so two steps leave ``S³``.
4. **The person-clustered meat.** At ``β̂`` the whitened clipped scores' ``Σ_u s̃_u s̃_u'`` is
   released the same way as step 2 (sensitivity ``√2 R²``) and projected onto the PSD cone;
   the sandwich ``Ĥ^{-1/2} M̃ Ĥ^{-1/2}`` (times ``n / (n - 1)``) is the sampling covariance.

The privacy noise of steps 2 and 3 is pushed through the exact map (floor, solve, steps,
unscale) by a fixed-seed parametric bootstrap; its mean shift and the ridge's pull left after
the steps, ``S³ (I - S³)⁻¹ β̂``, join the bias bound. Where an eigenvalue of the released
``X'X`` is below its noise's typical spectral norm (a design nearly collinear, or varying
too little, for the noise: the design's own may be 0 there and the steps may correct
nothing) nothing bounds that pull, and the coefficients it reaches are withheld (NaN, with a
note) rather than given an interval as wide as the doubles; with structural zeros, unless
the released ``X'X`` scaled by its diagonal clears its scaled noise (``_determined``: a rare
level's count weighed against its own noise). The clipping of the scores is
not visible to the bootstrap: a clipped score corrects less of the pilot's error.
``noise_sd`` is therefore the wider of two laws that bracket it — every score exact (the
steps correct the pilot) and every score clipped away (the pilot's error stays) — so the
intervals are conservative: the point estimate has the steps' accuracy, the interval the
pilot's. ``bse`` combines it with the person-clustered sampling error.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, check_choice, check_random_state, real_number
from dplong.dask_frames import is_dask
from dplong.exceptions import DataError, InsufficientUsersError, ParameterError
from dplong.formula import DesignSpec, GroupsLike, LevelsLike, PanelDesign, group_design
from dplong.models.base import DEFAULT_MAX_ROWS, MAX_ROWS_HELP, FormulaModel, check_max_rows
from dplong.models.command_line import PTR_FLOOR_OPTION, CommandLineModel, Option, register
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.accounting import Accountant, LedgerEntry, PrivacyLedger
from dplong.privacy.budget import (
    HISTOGRAM_USERS,
    MAX_MISS,
    NOTE_MISS,
    StatisticsBudget,
    afford,
    ptr_budget,
    settle,
    statistics_budget,
)
from dplong.privacy.noise import WeightedRelease, release_vector_sum
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.ptr import check_ols_ptr, ols_ptr, ols_ptr_sensitivity, planned_noise_sd
from dplong.privacy.ranges import (
    histogram_ranges,
    histogram_threshold,
    located_miss,
    private_ranges,
)
from dplong.results import RegressionResults

__all__ = ["BetweenOLS", "PooledOLS", "column_bounds", "vech_scaled"]

#: Shares of the fit's ρ: the augmented Gram matrix (the pilot and the Hessian), two Newton
#: steps' clipped scores (β̂'s noise: the first is multiplied by the ridge's S in the second,
#: so it needs less) and the clustered meat, which only needs to be good to some per cent (it
#: enters bse under a root). Chosen on simulated panels (n = 2000-5000, d = 3-6, given only
#: ε) among 0.3-0.5 for the Gram matrix and one or two steps; RAND HIE at ε = 1 is within
#: its targets with each.
SHARES = (0.35, 0.2, 0.35, 0.1)  # Gram, Newton steps, meat
#: A person's ``Z_u`` is clipped to Frobenius norm ``T_cap GRAM_NORM √(p + 1)`` (its worst
#: case is ``T_cap (p + 1)``; ``p + 1`` is the rows' squared-norm bound r², smaller with
#: factors, :func:`_row_square`): in a frame where the columns' cores are [-1, 1] the median
#: person's norm is about ``T_cap √(p + 1) / 1.4``-``T_cap √(p + 1)`` (simulated panels with
#: d = 3: the median 1.6 ``T_cap``, the 90th percentile 2.2, the largest 3.4-3.6), so the
#: bound clips the top tenth or so of persons, and only in the Hessian (a preconditioner: the
#: Newton steps' scores are not clipped by it, and a Hessian a fifth below the design's
#: makes a step overshoot by a quarter of what it corrects), while it divides the Gram
#: matrix's noise by up to ``√(p + 1)``. At 1.5 (nobody clipped) 3 of 100 simulated fits at
#: n = 1000, d = 3, ε = 1 were withheld (the noise's norm near the design's eigenvalue), at 1
#: none, with the cells at n = 2000-5000 and RAND HIE's within their sampling error. It
#: never scales a person down by more than GRAM_SHRINK: were every person at the worst case
#: (many ±1 columns), the Hessian would be ``1 / GRAM_SHRINK`` of the design's and a Newton
#: step would overshoot by at most what it corrects, not diverge (beyond 2). At 1.5 the
#: simulated panels with d = 6 (p + 1 = 8) got a 1.26 times noisier Gram matrix and an MSE
#: ratio of 16 ± 5 for 4.7. With GRAM_NORM at 1 the floor ``r² / GRAM_SHRINK`` is the
#: larger from r² = 4 on (at 1.5 it was from 10 on): there the bound is half the worst case.
GRAM_NORM, GRAM_SHRINK = 1.0, 2.0
#: The eigenvalue floor: ``σ (√(2p) + FLOOR_SDS)`` bounds the spectral norm of the released
#: ``X'X``'s noise (a symmetric Gaussian matrix of entry sd σ on the diagonal, σ/√2 off it, has
#: norm about σ √(2p)) with a margin of FLOOR_SDS sds.
FLOOR_SDS = 3.0
#: The whitened scores' clipping radius² in units of ``T_cap² σ̂² m̂``: the Cauchy–Schwarz
#: bound on ``‖s_u‖²`` for a person with ``T_cap`` rows of average residual² and whitened
#: ``‖Ĥ^{-1/2} x̃‖²`` (a person whose residuals are perfectly correlated); 1.5 leaves room for
#: heavier-tailed residuals (at 1 the RAND HIE age slope's RMSE rose by a third, at 2 the
#: simulated panels' by half).
CLIP_RADIUS = 1.5
#: Monte Carlo draws (and their fixed seed) of the privacy noise pushed through β̂'s map.
NOISE_DRAWS, NOISE_SEED = 2000, 20261128
#: Draws of the released X'X's noise whose mean spectral norm is the typical one where the
#: layout has structural zeros (:func:`_noise_norm`): its sd over the draws is about σ/2, so
#: the mean of 400 is good to a fortieth of σ, far inside the floor's margin of 3 σ.
NORM_DRAWS = 400

#: ``method="ptr"``: the share of ε of the ePTR release of the coefficients, and the shares of
#: the rest between the Gram matrix and the meat of the clustered standard errors (which need
#: only be good to some per cent).
PTR_SHARE, PTR_REST = 0.75, (0.6, 0.4)

#: The public note of a fit whose ranges the histograms find (decided by the plan).
HISTOGRAM_NOTE = (
    "The ranges were found privately from histograms of the persons' extremes at a doubling's "
    "resolution (n * epsilon is too small for medians): a column far from 0 for its spread "
    "gets a wide frame and a noisier estimate; give public bounds or raise epsilon."
)

CovType = Literal["clustered", "cluster"]
COV_TYPES: tuple[CovType, ...] = ("clustered", "cluster")
BoundsLike = Mapping[str, tuple[float, float]]
#: What :meth:`PooledOLS._rows` gives: the rows regressed, their persons, the cap on rows
Rows = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp], int]
#: Factor blocks: the positions of a block's columns and the bound on a row's squared norm
#: over them in the frame (:func:`_blocks_of`)
Blocks = tuple[tuple[tuple[int, ...], float], ...]
#: Column blocks whose products of two different columns are 0 in every row (:func:`_disjoint_of`)
Disjoint = tuple[tuple[int, ...], ...]
_Model = TypeVar("_Model", bound="PooledOLS")


class PooledOLS(FormulaModel):
    """User-level DP pooled OLS with person-clustered standard errors (module docstring).

    Covariates constant within a person are identified. Every column of the design and the
    outcome is clipped to a range: indicator columns of factors know theirs from the formula;
    a range given in ``bounds`` (the one the analyst knows: ages 0-100, a 0/1 treatment) costs
    nothing; any other is found privately at the fit (:mod:`dplong.privacy.ranges`), which
    spends a share of ε and clips a heavy tail's farthest persons.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dplong
    >>> rng = np.random.default_rng(0)
    >>> people, years = 4000, 4
    >>> treated = np.repeat(rng.integers(0, 2, people), years)   # constant within a person
    >>> age = rng.uniform(20, 60, people * years)
    >>> y = 1.0 + 0.5 * treated + 0.02 * age + np.repeat(rng.normal(0, 0.5, people), years) \\
    ...     + rng.normal(0, 0.5, people * years)
    >>> panel = pd.DataFrame({"id": np.repeat(np.arange(people), years), "y": y,
    ...                       "treated": treated, "age": age})
    >>> model = dplong.PooledOLS.from_formula(
    ...     "y ~ treated + age", panel, groups="id",
    ...     bounds={"y": (-2.0, 6.0), "treated": (0, 1), "age": (0, 100)})
    >>> res = model.fit(epsilon=1.0, max_rows=4, random_state=1)
    >>> list(res.params.index), bool(res.privacy.epsilon <= 1.0)
    (['Intercept', 'treated', 'age'], True)
    >>> bool(abs(res.params["treated"] - 0.5) < 4 * res.bse["treated"])
    True
    """

    model_name = "PooledOLS"
    estimator = "pooled OLS"

    def __init__(
        self,
        design: PanelDesign,
        ranges: NDArray[np.float64],
        *,
        levels: Mapping[str, tuple[Any, ...]],
        frame: NDArray[np.float64] | None = None,
        blocks: Blocks = (),
        disjoint: Disjoint = (),
    ) -> None:
        super().__init__(design)
        self._design: PanelDesign = design
        self._ranges = ranges  # public: (p + 1) x 2, the columns' then the outcome's
        # the public frame the Gram matrix is scaled to (default the ranges; an earlier
        # stage's found cores when it passes its ranges on)
        self._frame = ranges.copy() if frame is None else frame
        self._levels = levels
        # public: the declared factors' indicator columns and a bound on a row's squared
        # norm over each block (_blocks_of), which the Gram matrix's bound counts
        self._blocks = blocks
        # public: the treatment-coded blocks whose different columns' products are 0 in
        # every pooled row (_disjoint_of), the Gram matrix's structural zeros
        self._disjoint = disjoint

    @classmethod
    def from_formula(
        cls: type[_Model],
        formula: str,
        data: pd.DataFrame,
        *,
        groups: GroupsLike,
        bounds: BoundsLike | str | None = None,
        levels: LevelsLike | None = None,
    ) -> _Model:
        """Build the model from a patsy formula.

        Parameters
        ----------
        formula : str
            ``"y ~ x1 + x2"``; an intercept is included unless removed with ``- 1``.
        data : pandas.DataFrame
            One row per observation.
        groups : str or array_like
            Column name (or values) of the person id: the unit of privacy.
        bounds : mapping of str to (low, high), optional
            Public ranges of the outcome and of design columns, by name
            (``{"xage": (0, 100), "np.log1p(meddol)": (0, 12)}``): values outside are
            clipped. Public facts: they cost no budget. The range of a column named in neither
            ``bounds`` nor ``levels`` is found privately at the fit.
        levels : mapping of str to sequence, optional
            Declared levels of factor columns, as in :meth:`LongitudinalOLS.from_formula`.

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper",
        ...     bounds={"np.log1p(meddol)": (0, 12), "np.log(coins + 1)": (0, 4.62),
        ...             "xage": (0, 100), "female": (0, 1)})
        PooledOLS('np.log1p(meddol) ~ np.log(coins + 1) + xage + female', n_users=5912)
        """
        if is_dask(data):
            raise DataError(
                "PooledOLS needs a pandas DataFrame (its per-person sums are not yet reduced "
                "on Dask); call .compute() first"
            )
        spec = DesignSpec.from_formula(
            formula, data, levels=levels, eval_env=patsy.EvalEnvironment.capture(1)
        )
        ranges = column_bounds(spec, bounds)  # refused before the rows are read
        design = group_design(spec, data, groups=groups)
        return cls(
            design,
            ranges,
            levels=spec.levels,
            blocks=_blocks_of(spec, design.columns),
            disjoint=_disjoint_of(spec, design.columns),
        )

    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
        cov_type: CovType = "clustered",
        privacy: Literal["central"] = "central",
        variant: Literal["default"] = "default",
        method: Literal["statistics", "ptr"] = "statistics",
        ptr_floor: float | None = None,
        coef_bound: float | None = None,
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> RegressionResults:
        """Release pooled OLS with user-level (ε, δ)-DP: the private ranges of the columns
        without bounds, then four discrete Gaussian releases (zCDP), composed exactly to
        (ε, δ). Refused before any noise where n ε is too small for the ranges' medians.
        With ``method="ptr"``, the coefficients are instead one user-level ePTR release
        (:func:`dplong.privacy.ptr.ols_ptr`).

        Parameters
        ----------
        epsilon, delta : float
            Total budget (δ default ``1/n**2``).
        max_rows : int
            Public cap ``T_cap`` on a person's rows (default 10): a person with more rows
            enters with weight ``T_cap / T_u`` per row, so no person outweighs ``T_cap`` rows.
            Exactly pooled OLS when no one has more. The noise grows in proportion to it:
            give the panel's public length when it has one.
        cov_type : {"clustered", "cluster"}
            Standard errors clustered by person (the unit of privacy and sampling): the only
            choice, in linearmodels' and statsmodels' spelling.
        privacy, variant : {"central"}, {"default"}
            The only model and release there are (a trusted curator; the releases above), as
            the command line's common options name them.
        method : {"statistics", "ptr"}
            ``"statistics"`` (default): the released sufficient statistics above.
            ``"ptr"``: the coefficient vector in one efficient Propose-Test-Release (the seed's
            Alg 4 with a person's rows as the unit; :func:`dplong.privacy.ptr.ols_ptr`) with
            :data:`PTR_SHARE` of ε, and the clustered standard errors from a Gram matrix and
            meat released with the rest. Needs every range public (``bounds``). The test's
            outcome is a DP release: when it refuses (⊥), every coefficient is withheld and
            the ledger says so. Measured against ``"statistics"`` in docs/accuracy.md.
        ptr_floor : float
            With ``method="ptr"``: the floor c₀ of Alg 4, a public guess at a lower bound on
            ``λ_min(X'X) / n`` of the design scaled to [-1, 1] (each person's rows weighted
            to at most ``max_rows``); the test passes when the data clear it by a margin, and
            the noise is proportional to ``1 / c₀``.
        coef_bound : float
            With ``method="ptr"``: the radius ``R_θ`` the scaled coefficient vector is
            projected onto (default 1: the fitted plane stays within the outcome's range over
            the covariates' box).
        random_state, rng : None, int or numpy.random.Generator
            Source of the noise; ``None`` (default) is fresh OS entropy, the only choice for a
            release (a seed is for reproducible research).
        accountant : dplong.Accountant, optional
            Checked before the first draw and charged with the fit's ledger.

        Returns
        -------
        RegressionResults

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> model = dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper",
        ...     bounds={"np.log1p(meddol)": (0, 12), "np.log(coins + 1)": (0, 4.62),
        ...             "xage": (0, 100), "female": (0, 1)})
        >>> res = model.fit(epsilon=1e300, delta=0.5, max_rows=5, random_state=0)  # noise off
        >>> round(float(res.params["female"]), 2), round(float(res.bse["female"]), 3)
        (0.53, 0.046)

        Non-private pooled OLS gives 0.523 (clustered SE 0.042); the rest is the pull of the
        few clipped scores (and of the persons the Gram matrix's bound scales down, which
        two Newton steps on clipped scores correct only in part). Those persons also make
        the released Hessian, the clustered sandwich's bread, smaller than the design's
        ``X'X``: the standard errors err wide (here by a tenth).
        """
        design = self._design
        n = design.n
        options, cap, generator = self._checked(
            epsilon, delta, max_rows, cov_type, privacy, variant, accountant, random_state, rng
        )
        check_choice(method, "method", ("statistics", "ptr"))
        if method == "ptr":
            return self._fit_ptr(options, cap, ptr_floor, coef_bound, generator, accountant)
        if ptr_floor is not None or coef_bound is not None:
            raise ParameterError('ptr_floor and coef_bound apply to method="ptr" only')
        plan = self.release_plan(epsilon=options.epsilon, delta=options.delta)
        self._check_ranges(plan)
        # every refusal is decided: dplong.plan stops here, before any noise
        block = PlannedBlock(design.columns, 1.0, False, None, notes=self._range_notes(plan))
        checkpoint(FitPlan(n, options, (block,)))
        afford(accountant, options.epsilon, options.delta)
        ranges, frame, range_entries = self._find_ranges(plan, generator)
        scaled = _Scaling.of(ranges, design.columns, frame, self._blocks)
        x, y, codes, cap = self._rows(*scaled.apply(design.X, design.y), design.codes, n, cap)
        release = self._release(scaled, x, y, codes, cap, plan.rho, generator)
        ledger = settle(accountant, [*range_entries, *release.entries], options)
        return self._results(scaled, release, ledger, options, cap, ranges, plan)

    def _checked(
        self,
        epsilon: Any,
        delta: Any,
        max_rows: Any,
        cov_type: Any,
        privacy: Any,
        variant: Any,
        accountant: Any,
        random_state: RandomState,
        rng: RandomState,
    ) -> tuple[ReleaseOptions, int, np.random.Generator]:
        """The options every estimator of this family checks before any noise: the budget, the
        cap on a person's rows, the covariance, the model, the accountant and the generator."""
        check_choice(privacy, "privacy", ("central",))
        check_choice(variant, "variant", ("default",))
        options = ReleaseOptions.check(
            self._design.n,
            epsilon=epsilon,
            delta=delta,
            privacy="central",
            bound=None,
            d=len(self._design.columns),
        )
        cap = check_max_rows(max_rows)
        check_choice(cov_type, "cov_type", COV_TYPES)
        if accountant is not None and not isinstance(accountant, Accountant):
            raise ParameterError(
                f"accountant must be a dplong.Accountant, got {type(accountant).__name__}"
            )
        return options, cap, check_random_state(random_state, rng)

    def _release(
        self,
        scaled: _Scaling,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        codes: NDArray[np.intp],
        cap: int,
        rho: tuple[float, ...],
        generator: np.random.Generator,
    ) -> _Statistics:
        """Steps 2-4 of the module docstring on the estimator's scaled rows (its row count
        and the frame's reaches from this model)."""
        return _release_statistics(
            x,
            y,
            codes,
            self._design.n,
            cap,
            rho,
            generator,
            row_count=self._row_count,
            reach=scaled.reach,
            blocks=self._blocks,
            disjoint=self._zero_products(),
        )

    def _zero_products(self) -> Disjoint:
        """The blocks of columns whose different columns' products are 0 in every row the
        estimator regresses, a public fact: pooled rows are the design's, and a treatment-coded
        factor's row has one 1 at most (:func:`_disjoint_of`)."""
        return self._disjoint

    def _check_ranges(self, plan: StatisticsBudget) -> None:
        """Refuse, from public facts and before any noise, ranges the plan cannot find: its
        medians would miss, or its histograms' threshold is beyond what a cell holds."""
        n, located = self._design.n, self._located
        if not located.any():
            return
        names = [c for c, found in zip(self._names, located, strict=True) if found]
        if plan.histogram_rho > 0.0:
            threshold = histogram_threshold(len(names), plan.histogram_rho)
            short = threshold > HISTOGRAM_USERS[1] * n
            why = f"a cell of their histograms must hold {threshold:.0f} of the n = {n} persons"
        else:
            short = located_miss(n, plan.median_epsilon) > MAX_MISS
            why = f"each of their medians gets epsilon {plan.median_epsilon:.3g}, n = {n}"
        if short:
            refusal = InsufficientUsersError(
                f"n * epsilon is too small to find the ranges of {names} privately ({why}): "
                "give their public bounds (bounds={...}) or raise epsilon"
            )
            refusal.budget_refusal = True  # a larger ε cures it (dplong.plan)
            raise refusal

    def _range_notes(self, plan: StatisticsBudget) -> tuple[str, ...]:
        """The public note of ranges the plan finds by histograms (none otherwise)."""
        return (HISTOGRAM_NOTE,) if plan.histogram_rho > 0.0 and self._located.any() else ()

    def _find_ranges(
        self, plan: StatisticsBudget, generator: np.random.Generator
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], tuple[LedgerEntry, ...]]:
        """Every column's range ((p + 1) x 2): the public ones, the others found privately
        with the plan's budget; the Gram matrix's frame (the found ranges' cores, the public
        ranges' frame); and the ledger entries of that stage."""
        design, located = self._design, self._located
        ranges, frame = self._ranges.copy(), self._frame.copy()
        if not located.any():
            return ranges, frame, ()
        extremes = _extremes(self._columns(located), design.codes, design.n)
        names = tuple(c for c, f in zip(self._names, located, strict=True) if f)
        if plan.histogram_rho > 0.0:
            found = histogram_ranges(*extremes, plan.histogram_rho, generator, names=names)
        else:
            found = private_ranges(
                *extremes, plan.median_epsilon, plan.count_rho, generator, names=names
            )
        ranges[located], frame[located] = found.ranges, found.core
        return ranges, frame, found.entries

    def _fit_ptr(
        self,
        options: ReleaseOptions,
        cap: int,
        floor: Any,
        coef_bound: Any,
        generator: np.random.Generator,
        accountant: Accountant | None,
    ) -> RegressionResults:
        """``method="ptr"``: every refusal first, then the ePTR release of the scaled
        coefficients and the Gram matrix and meat of the standard errors."""
        design = self._design
        n, p = design.n, len(design.columns)
        if self._located.any():
            names = [c for c, found in zip(self._names, self._located, strict=True) if found]
            raise ParameterError(
                f'method="ptr" needs public ranges (bounds=) for every column; {names} have none'
            )
        cap = self._cap(cap)
        budget = ptr_budget(options.epsilon, options.delta, share=PTR_SHARE, rest=PTR_REST)
        floor, coef_bound, notes = check_ols_ptr(n, p, cap, floor, coef_bound, budget)
        scaled = _Scaling.of(self._ranges, design.columns, None, self._blocks)  # public
        planned = planned_noise_sd(ols_ptr_sensitivity(n, p, cap, floor, coef_bound), budget)
        checkpoint(  # every refusal is decided: dplong.plan stops here, before any noise
            FitPlan(
                n,
                options,
                (
                    PlannedBlock(
                        design.columns,
                        PTR_SHARE,
                        False,
                        None,
                        notes=notes,
                        noise_sd=planned * scaled.isotropic_gain,
                    ),
                ),
            )
        )
        afford(accountant, options.epsilon, options.delta)
        # ---- no randomness was drawn above this line ----------------------------------------
        x, y, codes, cap = self._rows(*scaled.apply(design.X, design.y), design.codes, n, cap)
        coefficients = ols_ptr(
            x, y, codes, n, cap, budget, generator, floor=floor, coef_bound=coef_bound
        )
        errors = self._release(scaled, x, y, codes, cap, budget.rest_rho, generator)
        ledger = settle(accountant, [*coefficients.entries, *errors.entries], options)
        results = self._results(
            scaled,
            errors,
            ledger,
            options,
            cap,
            self._ranges,
            self.release_plan(epsilon=options.epsilon, delta=options.delta),
        )
        index = results.params.index
        if coefficients.estimate is None:
            notes += (
                "The ePTR test refused (⊥): no coefficient is released. The refusal is itself "
                "a DP release (the 'ptr test' entry of the ledger); refitting spends the budget "
                "again. Raise n or epsilon, or lower ptr_floor.",
            )
            beta = np.full(p, np.nan)
            noise_sd = np.full(p, np.nan)
        else:
            beta = scaled.unscale(coefficients.estimate)
            noise_sd = coefficients.noise_sd * scaled.isotropic_gain
            # θ̂ projected onto the ball of coef_bound is released plus noise: beyond the
            # ball, the released vector says θ̂ may sit on its edge (a released number)
            if float(np.linalg.norm(coefficients.estimate)) > coef_bound:
                notes += (
                    "The released (scaled) coefficients lie beyond coef_bound: the projection "
                    "may have shrunk them; raise coef_bound.",
                )
        return dataclasses.replace(
            results,
            params=pd.Series(beta, index=index, name="params"),
            noise_scale=pd.Series(noise_sd, index=index, name="noise scale"),
            noise_sd=pd.Series(noise_sd, index=index, name="noise sd"),
            bias=pd.Series(0.0, index=index, name="bias"),
            failed=pd.Series(coefficients.estimate is None, index=index, name="failed"),
            variant="ePTR",
            warnings=notes,
            basis=f"{self.estimator} by efficient Propose-Test-Release (seed Alg 4, Thm 4.1)",
            withheld_why={} if coefficients.released else dict.fromkeys(index, "ptr ⊥"),
        )

    def _rows(
        self,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        codes: NDArray[np.intp],
        n: int,
        cap: int,
    ) -> Rows:
        """The scaled rows the estimator regresses, their persons and the cap on a person's
        rows: pooled OLS takes every row."""
        return x, y, codes, cap

    @property
    def _names(self) -> tuple[str, ...]:
        return (*self._design.columns, self._design.outcome)

    @property
    def _located(self) -> NDArray[np.bool_]:
        """The columns (and the outcome, last) whose range the fit finds privately."""
        return np.asarray(np.isnan(self._ranges[:, 0]))

    def _columns(self, which: NDArray[np.bool_]) -> NDArray[np.float64]:
        return np.column_stack([self._design.X, self._design.y])[:, which]

    def release_plan(self, *, epsilon: float, delta: float) -> StatisticsBudget:
        """The fit's budget from public facts (n, the columns without public bounds, ε, δ):
        the ε of each median of the private ranges (or, where n ε is too small for them, the
        ρ of their histograms) and the ρ of the Gaussian releases (the Gram matrix, the two
        Newton steps, the meat), as :meth:`fit` spends it.

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> model = dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper")
        >>> plan = model.release_plan(epsilon=1.0, delta=hie["zper"].nunique() ** -2.0)
        >>> round(plan.median_epsilon, 4), [round(r, 5) for r in plan.rho]
        (0.0271, [0.00452, 0.00258, 0.00452, 0.00129])
        """
        return statistics_budget(self._design.n, epsilon, delta, SHARES, int(self._located.sum()))

    def gram_noise_sd(self, *, epsilon: float, delta: float, max_rows: int) -> float:
        """The sd of the privacy noise on each diagonal entry of the released ``[X y]'[X y]``,
        in units where every column's frame is ``[-1, 1]`` (off the diagonal: ``1/√2`` of it),
        from public facts only: the first release's noise, which sets the pilot's and bounds
        the interval's (for a planner; the lattice's rounding adds a hair).

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> model = dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper")
        >>> round(model.gram_noise_sd(epsilon=1.0, delta=5912 ** -2.0, max_rows=5))
        186
        """
        rho = self.release_plan(epsilon=epsilon, delta=delta).rho[0]
        square = _row_square(len(self._design.columns), self._blocks)
        cap = self._cap(check_max_rows(max_rows))
        return math.sqrt(2.0) * _gram_bound(cap, square) / math.sqrt(2.0 * rho)

    def _row_count(self, released: NDArray[np.float64], cap: int) -> float:
        """The weighted number of rows in the sums, from the released ``[X y]'[X y]`` (for the
        scores' clipping radius): the intercept's entry, at least n; n without one."""
        n = self._design.n
        return max(_rows_released(released, self._design.columns, self._blocks), n)

    def _cap(self, max_rows: int) -> int:
        """The cap on the weight of a person's rows in the sums."""
        return max_rows

    def _weighting(self, cap: int) -> str:
        return f"a person's rows count up to max_rows={cap} (more are down-weighted)"

    def _results(
        self,
        scaled: _Scaling,
        release: _Statistics,
        ledger: PrivacyLedger,
        options: ReleaseOptions,
        cap: int,
        ranges: NDArray[np.float64],
        plan: StatisticsBudget,
    ) -> RegressionResults:
        """Unscale β̂, its noise draws and its covariances."""
        names = self._design.columns
        index = pd.Index(names)
        solution = release.pilot
        beta = scaled.unscale(release.beta)
        corrected, uncorrected = (scaled.offset + d @ scaled.linear.T for d in release.draws)
        noise_sd = np.maximum(corrected.std(axis=0), uncorrected.std(axis=0))
        shift = corrected.mean(axis=0) - beta
        # the ridge's pull on the pilot, (Ĥ)⁻¹ λ β, at the stepped β̂ (the pilot's own β is
        # shrunk by it: at a ridge far above the design's eigenvalues it sees a tenth of it)
        with np.errstate(over="ignore", invalid="ignore"):  # an unbounded pull: infinite
            ridge = np.nan_to_num(
                np.abs(scaled.linear) @ solution.shrinkage_at(release.beta, len(plan.rho) - 2),
                nan=np.inf,
                posinf=np.inf,
            )
        sampling_sd = np.sqrt(np.diag(scaled.linear @ release.sampling @ scaled.linear.T))
        # withheld (released numbers only): where the released X'X does not determine a
        # direction beyond its noise nothing bounds the ridge's pull, and an interval to the
        # doubles' edge is no estimate
        unbounded = ~np.isfinite(ridge)
        for values in (beta, noise_sd, sampling_sd, shift, ridge):
            values[unbounded] = np.nan
        notes: tuple[str, ...] = ()
        if unbounded.any():
            remedy = "give public bounds, " if self._located.any() else ""
            notes += (
                f"{[str(c) for c in index[unbounded]]} withheld: the released X'X does not "
                "determine them beyond its noise, so nothing bounds how far its ridge pulled "
                "them (the design is nearly collinear or varies little for this n and "
                f"epsilon): {remedy}raise epsilon or drop a collinear term.",
            )
        elif solution.ridge > 0.0:
            notes += (
                "The released X'X was floored at its noise (a ridge): coefficients shrunk, "
                "within the bias bound. Raise epsilon or drop a collinear term.",
            )

        def series(values: NDArray[np.float64], label: str) -> pd.Series:
            return pd.Series(values, index=index, name=label)

        located = self._located
        bounds = ", ".join(
            f"{name} in [{lo:.4g}, {hi:.4g}]" + (" (found privately)" if found else "")
            for name, (lo, hi), found in zip(self._names, ranges, located, strict=True)
            if name != "Intercept"
        )
        if self._range_notes(plan):
            notes += self._range_notes(plan)
        elif located.any() and located_miss(self._design.n, plan.median_epsilon) > NOTE_MISS:
            notes += (
                "The ranges found privately may miss the data at this n and epsilon (a range "
                "that misses clips every value): give public bounds or raise epsilon.",
            )
        return RegressionResults(
            model=self.spec,
            formula=self.formula,
            params=series(beta, "params"),
            noise_scale=series(noise_sd, "noise scale"),
            noise_sd=series(noise_sd, "noise sd"),
            noise_law="gaussian",
            sampling_sd=series(sampling_sd, "sampling sd"),
            bias=series(np.abs(shift) + ridge, "bias"),
            projection_interval=pd.DataFrame(np.nan, index=index, columns=["lower", "upper"]),
            failed=pd.Series(False, index=index, name="failed"),
            privacy=ledger,
            nobs_users=self.nobs_users,
            # every person contributes (n is public): nothing is counted
            users=pd.Series([math.nan], index=["users with a statistic"], name="users"),
            users_sd=math.nan,
            variant="sufficient statistics",
            assumptions=(
                f"ranges (values outside are clipped): {bounds}",
                f"standard errors clustered by person, plus the privacy noise; "
                f"{self._weighting(cap)}",
            ),
            warnings=notes,
            gamma=options.gamma,
            bad_events=series(np.zeros(len(names)), "bad events"),
            basis=f"{self.estimator} from released sufficient statistics",
            levels=dict(self._levels),
            withheld_why={str(c): "unbounded" for c in index[unbounded]},
        )


class BetweenOLS(PooledOLS):
    """User-level DP between estimator: OLS of every person's mean outcome on its mean
    covariates (linearmodels' ``BetweenOLS``), released as :class:`PooledOLS` is, a person's
    means being its one row (so ``max_rows`` has no effect: each person weighs one row).
    Standard errors are heteroskedasticity-robust, which with one row per person is clustering
    by person. Only between-person variation identifies it; covariates constant within a
    person are identified.

    Examples
    --------
    >>> import dplong
    >>> hie = dplong.datasets.load_randhie()
    >>> model = dplong.BetweenOLS.from_formula(
    ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> list(res.params.index), str(res.model)
    (['Intercept', 'np.log(coins + 1)', 'xage', 'female'], 'BetweenOLS')
    """

    model_name = "BetweenOLS"
    estimator = "between OLS"

    def _rows(
        self,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        codes: NDArray[np.intp],
        n: int,
        cap: int,
    ) -> Rows:
        """Every person's mean scaled row (within the reach its rows have), one row a person (0
        for a person whose rows were all dropped: it adds nothing, as in pooled OLS)."""
        rows = np.bincount(codes, minlength=n).astype(np.float64)[:, None]
        means = _per_user(np.column_stack([x, y]), codes, n) / np.maximum(rows, 1.0)
        return means[:, :-1], means[:, -1], np.arange(n, dtype=np.intp), 1

    def _cap(self, max_rows: int) -> int:
        return 1

    def _zero_products(self) -> Disjoint:
        """None: a person's mean row of a factor whose level changes has several non-zero
        indicators."""
        return ()

    def _weighting(self, cap: int) -> str:
        return "a person is one row: its means (max_rows has no effect)"


@dataclass(frozen=True)
class _Statistics:
    """What the Gaussian releases gave (scaled units): the pilot (the floored solve of the
    released Gram matrix), the stepped β̂, draws of its noise, its clustered sampling
    covariance and the ledger entries of the releases."""

    pilot: _Solution
    beta: NDArray[np.float64]
    draws: tuple[NDArray[np.float64], NDArray[np.float64]]
    sampling: NDArray[np.float64]
    entries: tuple[LedgerEntry, ...]


def _release_statistics(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    cap: int,
    rho: tuple[float, ...],
    generator: np.random.Generator,
    *,
    row_count: Callable[[NDArray[np.float64], int], float],
    reach: NDArray[np.float64],
    blocks: Blocks = (),
    disjoint: Disjoint = (),
) -> _Statistics:
    """Steps 2-4 of the module docstring on the scaled rows ``x``, ``y`` (values in [-1, 1];
    the intercept, if any, first) of n persons (``codes``, sorted), a person's rows weighted
    ``min(1, cap / T_u)``; ``rho``: the Gram matrix's, each Newton step's and the meat's;
    ``blocks``: the factor blocks whose rows' norms the Gram matrix's bound counts;
    ``disjoint``: the blocks whose different columns' products are 0 in every row (public),
    left out of the released vector and put back as zeros."""
    p = x.shape[1]
    rho_gram, *rho_steps, rho_meat = rho
    rows = np.bincount(codes, minlength=n).astype(np.float64)
    weight = np.minimum(1.0, cap / np.maximum(rows, 1.0))[codes]

    # step 2: the augmented Gram matrix, one vector: the pilot and the Hessian
    # the frame: a narrower range's values; a factor block's rows within its norm bound
    z = _clip_blocks(np.clip(np.column_stack([x, y]), -1.0, 1.0), blocks)
    bound = _gram_bound(cap, _row_square(p, blocks))
    kept = _released_entries(p + 1, disjoint)
    persons = _person_grams(z, weight, codes, n, bound, kept)
    bound *= 1.0 + 1e-12  # room for rounding
    gram = release_vector_sum(
        persons,
        bound,
        math.sqrt(2.0) * bound,
        rho_gram,
        generator,
    )
    released = _unvech_scaled(gram.total, p + 1, kept)
    sigma = float(gram.sd[0])
    pilot = _Solution.of(released, sigma, disjoint)
    # step 3: Newton steps, the whitened clipped scores at the last β (public), each clipped
    # to a radius from the released Gram matrix's residuals at that β
    beta, steps = pilot.beta, []
    for rho_step in rho_steps:
        radius = _clip_radius(released, pilot, beta, cap, row_count(released, cap), reach)
        score_bound = radius * (1.0 + 1e-12)
        steps.append(
            release_vector_sum(
                _scores(x, y, weight, beta, codes, n, radius, pilot.whiten),
                score_bound,
                2.0 * score_bound,
                rho_step,
                generator,
            )
        )
        beta = beta + pilot.whiten @ steps[-1].total  # Ĥ⁻¹ Ĥ^{1/2} t

    # step 4: the person-clustered meat at the released β̂ (public), whitened
    radius = _clip_radius(released, pilot, beta, cap, row_count(released, cap), reach)
    scores = _scores(x, y, weight, beta, codes, n, radius, pilot.whiten)
    meat_bound = radius**2 * (1.0 + 1e-12)
    meat = release_vector_sum(
        vech_scaled(scores, np.ones(n)),
        meat_bound,
        math.sqrt(2.0) * meat_bound,
        rho_meat,
        generator,
    )
    values, vectors = np.linalg.eigh(_unvech_scaled(meat.total, p))
    psd = (vectors * np.maximum(values, 0.0)) @ vectors.T
    sampling = n / (n - 1.0) * pilot.whiten @ psd @ pilot.whiten

    def entry(stage: str, target: str, rho: float, release: WeightedRelease) -> LedgerEntry:
        return LedgerEntry(
            stage,
            "discrete Gaussian (zCDP), one vector",
            target,
            0.0,
            0.0,
            rho,
            float(release.sensitivity),
            float(release.sd[0]),
        )

    entries = (
        entry("sufficient statistics", "[X y]'[X y]", rho_gram, gram),
        *(
            entry(f"Newton step {k + 1}", f"Σ_u clip(s_u(β_{k}))", r, step)
            for k, (r, step) in enumerate(zip(rho_steps, steps, strict=True))
        ),
        entry("clustered meat", "Σ_u clip(s_u) clip(s_u)'", rho_meat, meat),
    )
    draws = _noise_draws(pilot, beta, sigma, [float(step.sd[0]) for step in steps], kept)
    return _Statistics(pilot, beta, draws, sampling, entries)


def _extremes(
    values: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Every person's smallest and largest value of each column (n x k; rows sorted by
    person; NaN for a person whose rows were all dropped: no statistic, and n stays the
    public count)."""
    lows, highs = np.full((n, values.shape[1]), np.nan), np.full((n, values.shape[1]), np.nan)
    if codes.size:
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        lows[codes[starts]] = np.minimum.reduceat(values, starts, axis=0)
        highs[codes[starts]] = np.maximum.reduceat(values, starts, axis=0)
    return lows, highs


def column_bounds(spec: DesignSpec, bounds: BoundsLike | str | None) -> NDArray[np.float64]:
    """The public range of every design column and of the outcome ((p + 1) x 2): the intercept
    is 1, an indicator of declared factor levels has the range of its contrast values, any
    other column (and the outcome) its entry of ``bounds``, which must name nothing else, or
    NaN where ``bounds`` has none (the fit finds that range privately). Decided from the
    formula and the options only.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import DesignSpec
    >>> from dplong.models.pooled import column_bounds
    >>> schema = pd.DataFrame({"y": [0.0], "x": [0.0], "arm": ["a"]}).iloc[:0]
    >>> spec = DesignSpec.from_formula("y ~ x + arm", schema, levels={"arm": ["a", "b"]})
    >>> column_bounds(spec, {"y": (0, 10), "x": (-1, 1)}).tolist()
    [[1.0, 1.0], [0.0, 1.0], [-1.0, 1.0], [0.0, 10.0]]
    >>> column_bounds(spec, {"y": (0, 10)})[2].tolist()   # x: found at the fit
    [nan, nan]
    """
    if isinstance(bounds, str):  # the command line's "COL=LO,HI;COL=LO,HI"
        bounds = _parse_bounds(bounds)
    if not isinstance(bounds, Mapping | None):  # untyped callers
        raise ParameterError(
            f"bounds must be a mapping {{column: (low, high)}}, got {type(bounds).__name__}"
        )
    given = dict(bounds or {})
    known = {c: (b.low, b.high) for b in _factor_blocks(spec) for c in b.columns}
    names = (*spec.columns, spec.outcome)
    unknown = [k for k in given if k not in names]
    if unknown:
        raise ParameterError(
            f"bounds names {unknown}, which are not the outcome or a design column; they are "
            f"{list(names)}"
        )
    out = np.full((len(names), 2), np.nan)  # NaN: found privately at the fit
    for j, name in enumerate(names):
        if name == "Intercept":
            out[j] = 1.0
        elif name in given:
            out[j] = _range(given[name], name)
        elif name in known:
            out[j] = known[name]
    return out


def _parse_bounds(text: str) -> dict[str, tuple[float, float]]:
    """``"xage=0,100;female=0,1"`` as ``{"xage": (0.0, 100.0), "female": (0.0, 1.0)}``."""
    out: dict[str, tuple[float, float]] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, _, values = item.rpartition("=")
        try:
            low, high = (float(v) for v in values.split(","))
        except ValueError:
            name = ""
        if not name.strip():
            raise ParameterError(f"bounds must read COL=LO,HI;COL=LO,HI, got {item!r}")
        out[name.strip()] = (low, high)
    return out


def _range(value: Any, name: str) -> tuple[float, float]:
    try:
        low, high = value
    except (TypeError, ValueError):
        raise ParameterError(
            f"bounds[{name!r}] must be a pair (low, high), got {value!r:.60}"
        ) from None
    low, high = (
        real_number(low, f"bounds[{name!r}] low"),
        real_number(high, f"bounds[{name!r}] high"),
    )
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ParameterError(
            f"bounds[{name!r}] must be finite with low < high, got ({low!r}, {high!r})"
        )
    return float(low), float(high)


@dataclass(frozen=True)
class _FactorBlock:
    """The columns of one subterm made only of categorical factors (declared levels): their
    range (interval arithmetic over the factors' contrast values) and a bound on a row's
    squared L2 norm over them, the product over the factors of the largest squared norm of a
    row of its contrast matrix (treatment coding: one 1 at most, so 1 however many levels).
    Public: the formula and the declared levels."""

    columns: tuple[str, ...]
    low: float
    high: float
    square: float
    #: every row of the block has at most one 1 and zeros, some none (treatment coding and
    #: its products): with an intercept, ``1 - Σ`` of the block is the reference level's 0/1
    onehot: bool


def _factor_blocks(spec: DesignSpec) -> tuple[_FactorBlock, ...]:
    """Every subterm of categorical factors only, with its columns, range and row-norm bound
    (:class:`_FactorBlock`)."""
    info = spec.regressor_info
    out = []
    for term, subterms in info.term_codings.items():
        factors = term.factors
        if not factors or any(info.factor_infos[f].type != "categorical" for f in factors):
            continue
        names = info.column_names[info.term_slices[term]]
        start = 0
        for subterm in subterms:
            low, high, square, onehot, reference = 1.0, 1.0, 1.0, True, False
            for factor in subterm.factors:
                contrast = subterm.contrast_matrices[factor].matrix
                products = [
                    low * contrast.min(),
                    low * contrast.max(),
                    high * contrast.min(),
                    high * contrast.max(),
                ]
                low, high = min(products), max(products)
                square *= float((contrast**2).sum(axis=1).max())
                onehot &= bool(np.isin(contrast, (0.0, 1.0)).all())
                onehot &= bool((contrast.sum(axis=1) <= 1.0).all())
                reference |= bool((contrast == 0.0).all(axis=1).any())
            columns = tuple(names[start : start + subterm.num_columns])
            start += subterm.num_columns
            out.append(_FactorBlock(columns, float(low), float(high), square, onehot and reference))
    return tuple(out)


def _coded_blocks(
    spec: DesignSpec, columns: tuple[str, ...]
) -> tuple[tuple[tuple[int, ...], float, bool], ...]:
    """The factor blocks (:func:`_factor_blocks`) as positions in ``columns`` and the bound
    on a row's squared norm over them in the frame, where their values are divided by their
    largest magnitude (:meth:`_Scaling.of`): only those whose bound is below their number of
    columns (a block of one column, or a coding with no gain, stays as any column). With an
    intercept, the widest treatment-coded block takes it in (its position first): the frame's
    intercept column is then the reference level's indicator, and the block's rows are one-hot
    (norm 1, the intercept no longer a column of its own in the bound), its Gram matrix the
    levels' counts on the diagonal, however rare the reference level. Each with whether it
    is treatment-coded (:attr:`_FactorBlock.onehot`)."""
    out = []
    for block in _factor_blocks(spec):
        largest = max(abs(block.low), abs(block.high))
        square = block.square / largest**2 if largest > 0 else 0.0
        if square < len(block.columns) or block.onehot:
            out.append((tuple(columns.index(c) for c in block.columns), square, block.onehot))
    absorbing = [b for b in out if b[2] and b[1] == 1.0]
    if "Intercept" in columns and absorbing:
        widest = max(absorbing, key=lambda b: len(b[0]))
        out[out.index(widest)] = ((columns.index("Intercept"), *widest[0]), 1.0, True)
    return tuple(out)


def _blocks_of(spec: DesignSpec, columns: tuple[str, ...]) -> Blocks:
    """The factor blocks of more than one column (:func:`_coded_blocks`) and their bounds."""
    return tuple((c, square) for c, square, _ in _coded_blocks(spec, columns) if len(c) > 1)


def _disjoint_of(spec: DesignSpec, columns: tuple[str, ...]) -> Disjoint:
    """The treatment-coded blocks of more than one column (:func:`_coded_blocks`, with the
    intercept where one took it in): a row has one 1 at most among their columns, so the
    product of two different ones is 0 in every row, a fact of the formula and the declared
    levels (the Gram matrix's structural zeros)."""
    return tuple(c for c, _, onehot in _coded_blocks(spec, columns) if onehot and len(c) > 1)


class _Scaling:
    """The affine map of every column and the outcome onto [-1, 1] (module docstring, step 1),
    and back: ``β = offset + linear γ`` for the coefficients γ of the scaled design."""

    def __init__(
        self,
        centre: NDArray[np.float64],
        half: NDArray[np.float64],
        ranges: NDArray[np.float64],
        intercept: int | None,
        basis: NDArray[np.float64] | None = None,
    ) -> None:
        self.centre, self.half, self.ranges, self.intercept = centre, half, ranges, intercept
        p = centre.size - 1
        self.linear = np.diag(half[-1] / half[:-1])
        self.offset = np.zeros(p)
        if intercept is not None:
            self.linear[intercept] -= centre[:-1] * half[-1] / half[:-1]
            self.linear[intercept, intercept] = half[-1]
            self.offset[intercept] = centre[-1]
        #: the mapped columns' change of basis (public, invertible; None: none): rows ``x̃ A``,
        #: whose coefficients γ' are ``A γ'`` of the mapped columns
        self.basis = basis
        if basis is not None:
            self.linear = self.linear @ basis

    @classmethod
    def of(
        cls,
        ranges: NDArray[np.float64],
        columns: tuple[str, ...],
        frame: NDArray[np.float64] | None = None,
        blocks: Blocks = (),
    ) -> _Scaling:
        """Values clipped to ``ranges`` and mapped so that ``frame`` (default: the ranges, a
        narrower one for the Gram matrix's sake, inside them) becomes ``[-1, 1]``; the
        columns of factor ``blocks`` are divided by their largest magnitude, not centred
        (indicators stay 0/1: a row's norm over a block stays within its bound, and a rare
        level's indicator stays apart from the intercept)."""
        frame = ranges if frame is None else frame
        intercept = columns.index("Intercept") if "Intercept" in columns else None
        if intercept is None:  # no intercept to absorb a shift: scale around 0
            centre = np.zeros(len(ranges))
            half = np.abs(frame).max(axis=1)
        else:
            centre = frame.mean(axis=1)
            half = (frame[:, 1] - frame[:, 0]) / 2.0
            centre[intercept], half[intercept] = 0.0, 1.0
        basis = None
        for block, _ in blocks:
            indices = list(block)
            centre[indices] = 0.0
            half[indices] = np.abs(ranges[indices]).max(axis=1)
            if intercept in block:  # the intercept becomes the reference level's indicator
                basis = np.eye(len(columns))
                basis[indices, intercept] = -1.0
                basis[intercept, intercept] = 1.0
        return cls(centre, np.where(half > 0, half, 1.0), ranges, intercept, basis)

    @property
    def isotropic_gain(self) -> NDArray[np.float64]:
        """Per coefficient, the sd of its noise when the scaled coefficients get independent
        noise of sd 1 (the ePTR release): the norms of the rows of ``linear``."""
        return np.asarray(np.sqrt((self.linear**2).sum(axis=1)), dtype=np.float64)

    @property
    def reach(self) -> NDArray[np.float64]:
        """The largest magnitude of each mapped column and of the outcome (1 where the frame
        is the range)."""
        far = np.abs(self.ranges - self.centre[:, None]).max(axis=1) / self.half
        return np.asarray(np.maximum(far, 1.0))

    def apply(
        self, X: NDArray[np.float64], y: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The clipped, mapped design and outcome (values within :attr:`reach`)."""
        low, high = self.ranges[:, 0], self.ranges[:, 1]
        x = (np.clip(X, low[:-1], high[:-1]) - self.centre[:-1]) / self.half[:-1]
        out = (np.clip(y, low[-1], high[-1]) - self.centre[-1]) / self.half[-1]
        return np.asarray(x if self.basis is None else x @ self.basis), np.asarray(out)

    def unscale(self, gamma: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.offset + self.linear @ gamma)


class _Solution:
    """β̂ of the scaled design from the released ``[X y]'[X y]``: the floor, the solve."""

    def __init__(
        self,
        hessian: NDArray[np.float64],
        beta: NDArray[np.float64],
        ridge: float,
        sigma: float,
        norm: float,
        determined: bool = False,
    ) -> None:
        self.hessian, self.beta, self.ridge = hessian, beta, ridge
        #: the released X'X's noise: its entry sd σ, its typical spectral norm in units of σ
        #: (√(2p) without structural zeros, :func:`_noise_norm`) and in the matrix's units
        self.sigma, self.norm, self.noise = sigma, norm, sigma * norm
        #: every direction determined beyond the noise by the test in the frame of the
        #: released diagonal (:func:`_determined`)
        self.determined = determined
        values, vectors = np.linalg.eigh(hessian)  # positive: floored (or exact and full rank)
        #: Ĥ^{-1/2}, the scores' whitening, and Ĥ^{1/2}
        self.whiten = np.asarray((vectors / np.sqrt(values)) @ vectors.T)
        self.root = np.asarray((vectors * np.sqrt(values)) @ vectors.T)
        self.smallest = float(values[0])

    @classmethod
    def of(cls, released: NDArray[np.float64], sigma: float, disjoint: Disjoint) -> _Solution:
        """The floored solve of ``released`` (``[X y]'[X y]``) whose X'X noise has entry sd
        ``sigma`` and the structural zeros of ``disjoint`` (:func:`_noise_norm`)."""
        p = released.shape[0] - 1
        gram, cross = released[:p, :p], released[:p, p]
        norm = _noise_norm(p, disjoint)
        ridge = max(0.0, _floor(sigma, norm) - float(np.linalg.eigvalsh(gram)[0]))
        hessian = gram + ridge * np.eye(p)
        beta = np.asarray(np.linalg.solve(hessian, cross), dtype=np.float64)
        determined = bool(disjoint) and _determined(gram, sigma, norm, disjoint)
        return cls(hessian, beta, ridge, sigma, norm, determined)

    def shrinkage_at(self, beta: NDArray[np.float64], steps: int) -> NDArray[np.float64]:
        """A bound on the ridge's pull toward 0 left in ``beta``, the pilot after ``steps``
        Newton steps: with ``S = λ Ĥ⁻¹``, a pilot is ``(I - S) β`` and each step on exact
        scores multiplies what is left by S, leaving ``(I - Sᵏ) β`` with ``k = steps + 1``:
        the pull is ``Sᵏ (I - Sᵏ)⁻¹ beta``. That takes the released Gram matrix for the
        design's; along a direction where its eigenvalue is below the noise's typical
        spectral norm (``σ √(2p)``: the floor minus its margin) the design's may be 0, the
        steps may correct nothing, and nothing bounds the pull: infinite there."""
        if self.ridge == 0.0:
            return np.zeros_like(beta)
        values, vectors = np.linalg.eigh(self.hessian)
        # the released X'X's own eigenvalues, unless the scaled test found every one determined
        undetermined = (values - self.ridge < self.noise) & (not self.determined)
        s = np.where(undetermined, 1.0, (self.ridge / values) ** (steps + 1))
        with np.errstate(divide="ignore"):
            gain = np.where(s < 1.0, s / (1.0 - s), np.inf)
        coordinates = vectors.T @ beta
        with np.errstate(invalid="ignore"):  # inf * 0: no pull along that direction
            pulled = np.nan_to_num(
                vectors @ (gain * coordinates), nan=np.inf, posinf=np.inf, neginf=-np.inf
            )
        return np.asarray(np.abs(pulled))


def _person_grams(
    z: NDArray[np.float64],
    weight: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    bound: float,
    kept: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    """Every person's ``Z_u = Σ_t w z z'`` (rows ``z`` in [-1, 1], sorted by person) as
    :func:`vech_scaled` vectors over the entries ``kept`` (default all;
    :func:`_released_entries`), scaled down to norm ``bound`` where above it (n x k).

    Replacing a person moves their sum by at most ``√2 bound``: for two persons' vectors
    ``a, b``, ``‖a - b‖² = ‖a‖² + ‖b‖² - 2 a·b`` and ``a·b = tr(Z_u Z_v) >= 0`` (scaled PSD
    matrices) when the entries left out are 0 in every person's ``Z_u``, as the structural
    zeros are (every row's product of two indicators of one treatment-coded factor is 0)."""
    vectors = vech_scaled(z, weight)
    return _clip_rows(_per_user(vectors if kept is None else vectors[:, kept], codes, n), bound)


def _released_entries(k: int, disjoint: Disjoint) -> NDArray[np.intp]:
    """The positions in a k x k :func:`vech_scaled` vector of the entries released: all but
    the products of two different columns of one ``disjoint`` block (structural zeros)."""
    upper = np.triu_indices(k)
    group = np.arange(k)
    for b, block in enumerate(disjoint):
        group[list(block)] = k + b  # columns of a block share a label, the others their own
    return np.flatnonzero((upper[0] == upper[1]) | (group[upper[0]] != group[upper[1]]))


def _noise_norm(p: int, disjoint: Disjoint, scale: NDArray[np.float64] | None = None) -> float:
    """The typical spectral norm, in entry sds, of the released p x p X'X's noise
    (symmetric Gaussian, entry sd 1 on the diagonal and ``1/√2`` off it, 0 on the structural
    zeros): ``√(2p)`` without them; with them, the mean over :data:`NORM_DRAWS` draws of a
    fixed seed (a public function of the layout; a block of k structural zeros' diagonal
    noise has norm about ``√(2 log k)`` instead of ``√(2k)``). With ``scale``, of the noise
    whose entry ``(i, j)`` is further multiplied by ``scale_i scale_j`` (still in entry sds)."""
    if not disjoint and scale is None:
        return math.sqrt(2.0 * p)
    mask = np.zeros(p * (p + 1) // 2, dtype=bool)
    mask[_released_entries(p, disjoint)] = True
    rng = np.random.default_rng(NOISE_SEED)
    noise = np.zeros((NORM_DRAWS, p * (p + 1) // 2))
    noise[:, mask] = rng.normal(size=(NORM_DRAWS, int(mask.sum())))
    matrices = np.stack([_unvech_scaled(draw, p) for draw in noise])
    if scale is not None:
        matrices *= np.outer(scale, scale)
    return float(np.abs(np.linalg.eigvalsh(matrices)).max(axis=1).mean())


def _clip_rows(values: NDArray[np.float64], bound: float) -> NDArray[np.float64]:
    """Every row of ``values`` scaled down to L2 norm ``bound`` where above it."""
    norms = np.sqrt((values**2).sum(axis=1))
    return np.asarray(values * np.minimum(1.0, bound / np.maximum(norms, bound * 1e-300))[:, None])


def _rows_released(
    released: NDArray[np.float64], columns: tuple[str, ...], blocks: Blocks
) -> float:
    """The weighted number of rows from the released Gram matrix: the intercept's entry, or
    where a factor block took the intercept in (its rows one-hot) the sum of the block's
    diagonal; 0 without an intercept."""
    if "Intercept" not in columns:
        return 0.0
    intercept = columns.index("Intercept")
    counted = next((list(b) for b, _ in blocks if intercept in b), [intercept])
    return float(np.trace(released[np.ix_(counted, counted)]))


def _row_square(p: int, blocks: Blocks) -> float:
    """The bound ``r²`` on a clipped row's squared norm (``z = (x̃, ỹ)``, p columns and the
    outcome): 1 a column, a factor block's own bound in place of its columns' count
    (treatment-coded indicators: 1 a block however many levels it has)."""
    return p + 1.0 - sum(len(columns) - square for columns, square in blocks)


def _clip_blocks(z: NDArray[np.float64], blocks: Blocks) -> NDArray[np.float64]:
    """Every row's entries of each factor block scaled down to the block's norm bound where
    above it (indicator rows never are; quasi-demeaned ones may be), in place."""
    for columns, square in blocks:
        indices = list(columns)
        z[:, indices] = _clip_rows(z[:, indices], math.sqrt(square))
    return z


def _gram_bound(cap: int, square: float) -> float:
    """The Frobenius norm a person's ``Z_u`` is clipped to, for rows of squared norm at most
    ``square`` (:func:`_row_square`; ``p + 1`` without factor blocks): :data:`GRAM_NORM`
    ``√square`` rows' worth, at least ``1 / GRAM_SHRINK`` of its trace bound ``T_cap
    square``, at most that bound (then nothing is clipped)."""
    return cap * min(square, max(GRAM_NORM * math.sqrt(square), square / GRAM_SHRINK))


def _determined(gram: NDArray[np.float64], sigma: float, norm: float, disjoint: Disjoint) -> bool:
    """Whether the released X'X determines every direction beyond its noise, tested in the
    frame of its released diagonal (post-processing): with ``S = diag(max(Ĝ_jj, σ ν))^{-1/2}``
    (ν: ``norm``, the unscaled noise's typical spectral norm in sds),
    ``λ_min(S G S) >= λ_min(S Ĝ S) - ‖S E S‖``, so the design is positive definite when
    ``λ_min(S Ĝ S)`` exceeds the scaled noise's typical spectral norm (entry sds ``σ s_i s_j``,
    0 on the structural zeros; the mean over :data:`NORM_DRAWS` draws of a fixed seed). A
    rare level's count is then weighed against its own noise, not against the whole matrix's
    norm; where the structural zeros keep the block's scaled noise diagonal, this decides
    designs the unscaled test cannot (a level of 226 person-years against a norm of 279)."""
    p = gram.shape[0]
    scale = 1.0 / np.sqrt(np.maximum(np.diag(gram), sigma * norm))
    smallest = float(np.linalg.eigvalsh(gram * np.outer(scale, scale))[0])
    return smallest > sigma * _noise_norm(p, disjoint, scale)


def _floor(sigma: float, norm: float) -> float:
    """The eigenvalue floor of a released Gram matrix of entry noise sd σ whose noise has
    typical spectral norm ``norm`` σ (:func:`_noise_norm`; :data:`FLOOR_SDS`: the norm is
    σ-Lipschitz in the standard normals drawn, so it rarely exceeds its mean by 3 σ)."""
    return sigma * (norm + FLOOR_SDS) if sigma > 0 else 0.0


def _noise_draws(
    pilot: _Solution,
    beta: NDArray[np.float64],
    sigma: float,
    score_sds: list[float],
    kept: NDArray[np.intp],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:data:`NOISE_DRAWS` draws of the released β̂ (scaled) under fresh noise of the released
    laws, taking the released numbers for the truth (post-processing with a fixed seed): the
    ``[X y]'[X y]`` around the released Hessian and β̂, each floored and solved as the fit was
    (the pilot), then stepped by its Hessian's solve of a score plus a draw of the score's
    noise. Two laws bracket the clipping, which the draws cannot see: the exact score
    ``H (β̂ - β₀)`` (nothing clipped: the step corrects the pilot's error) and none at all
    (every score clipped away: the pilot's error stays); the fit reports the wider. The
    entries not ``kept`` (structural zeros) get no noise."""
    p = beta.size
    rng = np.random.default_rng(NOISE_SEED)
    hessian = pilot.hessian - pilot.ridge * np.eye(p)
    centre = np.zeros((p + 1, p + 1))
    centre[:p, :p] = hessian
    centre[:p, p] = centre[p, :p] = hessian @ beta
    noise = rng.normal(0.0, sigma, (NOISE_DRAWS, p + 1, p + 1))
    noise = (np.triu(noise) + np.swapaxes(np.triu(noise, 1), 1, 2)) / np.where(
        np.eye(p + 1, dtype=bool), 1.0, math.sqrt(2.0)
    )
    if kept.size < (p + 1) * (p + 2) // 2:  # structural zeros: no noise there
        upper = np.triu_indices(p + 1)
        zeros = np.ones(upper[0].size, dtype=bool)
        zeros[kept] = False
        noise[:, upper[0][zeros], upper[1][zeros]] = 0.0
        noise[:, upper[1][zeros], upper[0][zeros]] = 0.0
    draws = centre + noise
    gram, cross = draws[:, :p, :p], draws[:, :p, p]
    smallest = np.linalg.eigvalsh(gram)[:, 0]
    ridges = np.maximum(0.0, _floor(sigma, pilot.norm) - smallest)
    floored = gram + ridges[:, None, None] * np.eye(p)
    corrected = np.linalg.solve(floored, cross[..., None])[..., 0]
    uncorrected = corrected.copy()
    for sd in score_sds:  # the whitened score's noise, in score units
        step = rng.normal(0.0, sd, (NOISE_DRAWS, p)) @ pilot.root
        uncorrected = uncorrected + np.linalg.solve(floored, step[..., None])[..., 0]
        step = step + (beta - corrected) @ hessian
        corrected = corrected + np.linalg.solve(floored, step[..., None])[..., 0]
    return np.asarray(corrected), np.asarray(uncorrected)


def _clip_radius(
    released: NDArray[np.float64],
    solution: _Solution,
    beta: NDArray[np.float64],
    cap: int,
    rows: float,
    reach: NDArray[np.float64],
) -> float:
    """The whitened scores' clipping radius from released numbers (:data:`CLIP_RADIUS`), at
    most the worst case ``T_cap ‖a‖ / √λ_min(Ĥ) (a_y + Σ a_j |β̂₀_j|)`` of a whitened score,
    for public bounds ``a`` on the columns' and ``a_y`` on the outcome's magnitudes."""
    p = solution.beta.size
    gram, cross, square = released[:p, :p], released[:p, p], released[p, p]
    rss = square - 2.0 * beta @ cross + beta @ gram @ beta
    variance = max(rss, 1.0) / rows
    size = float(np.linalg.norm(reach[:-1]))
    # a whitened row's mean ‖Ĥ^{-1/2} x̃‖²: tr(Ĥ⁻¹ Ĝ) / rows (about p / rows), at most ‖a‖² / λ_min
    whitened = float(np.trace(solution.whiten @ gram @ solution.whiten))
    mean_square = min(max(whitened, 1.0) / rows, size**2 / solution.smallest)
    worst = cap * size / math.sqrt(solution.smallest) * float(reach[-1] + np.abs(beta) @ reach[:-1])
    return min(math.sqrt(CLIP_RADIUS * variance * mean_square) * cap, worst)


def _scores(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    weight: NDArray[np.float64],
    beta: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    radius: float,
    whiten: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Every person's score ``s_u = Σ_t w_u x̃_t (ỹ_t - x̃_t'β)`` at a public β, whitened by
    the public symmetric ``whiten`` and clipped to ``radius`` in L2 norm (n x p)."""
    return _clip_rows(_per_user(x * (weight * (y - x @ beta))[:, None], codes, n) @ whiten, radius)


def vech_scaled(rows: NDArray[np.float64], weight: NDArray[np.float64]) -> NDArray[np.float64]:
    """Every row's weighted outer product ``w z z'`` as a vector of its upper triangle with the
    off-diagonal entries times √2, so that the vector's norm is the matrix's Frobenius norm.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.pooled import vech_scaled
    >>> v = vech_scaled(np.array([[1.0, 2.0]]), np.array([1.0]))
    >>> v.round(4).tolist(), float(np.linalg.norm(v)) == float(np.linalg.norm([[1, 2], [2, 4]]))
    ([[1.0, 2.8284, 4.0]], True)
    """
    k = rows.shape[1]
    upper = np.triu_indices(k)
    factor = np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))
    out = rows[:, upper[0]]  # a copy (fancy indexing), multiplied in place: rows are many
    out *= rows[:, upper[1]]
    out *= weight[:, None] * factor
    return out


def _unvech_scaled(
    vector: NDArray[np.float64], k: int, kept: NDArray[np.intp] | None = None
) -> NDArray[np.float64]:
    """The symmetric k x k matrix of a :func:`vech_scaled` vector, or of its entries
    ``kept`` (the others 0: structural zeros put back)."""
    upper = np.triu_indices(k)
    if kept is not None:
        upper = (upper[0][kept], upper[1][kept])
    values = vector / np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))
    out = np.zeros((k, k))
    out[upper] = values
    out[upper[1], upper[0]] = values
    return out


def _per_user(values: NDArray[np.float64], codes: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    """Sums of the rows of ``values`` by user (rows sorted by user code; users without rows:
    0)."""
    out = np.zeros((n, values.shape[1]))
    if codes.size:
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        out[codes[starts]] = np.add.reduceat(values, starts, axis=0)
    return out


BOUNDS_OPTION = Option(
    "bounds",
    "text",
    "COL=LO,HI;...",
    "public ranges of the outcome and columns (free; others are found privately)",
    stage="model",
)

register(
    CommandLineModel(
        "pooled",
        PooledOLS.from_formula,
        "PooledOLS: pooled OLS with person-clustered errors from released sufficient "
        "statistics; between-person covariates identified",
        options=(
            BOUNDS_OPTION,
            Option("max_rows", "int", "T", MAX_ROWS_HELP),
            Option(
                "method",
                "text",
                "M",
                "statistics (default: released sufficient statistics) or ptr (the "
                "coefficients in one efficient Propose-Test-Release; needs every range in "
                "--bounds and --ptr-floor)",
                choices=("statistics", "ptr"),
            ),
            PTR_FLOOR_OPTION,
            Option(
                "coef_bound",
                "positive",
                "R",
                "--method ptr: radius of the scaled coefficient vector (default 1)",
            ),
        ),
    )
)


register(
    CommandLineModel(
        "between",
        BetweenOLS.from_formula,
        "BetweenOLS: OLS of persons' means with robust (person-clustered) errors from released "
        "sufficient statistics",
        options=(BOUNDS_OPTION,),
    )
)
