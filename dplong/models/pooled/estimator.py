"""The :class:`PooledOLS` estimator: its options, its refusals and its fit from the released
sufficient statistics (``docs/design/pooled.md``); its ``method="ptr"`` route is in
:mod:`~dplong.models.pooled.ptr`, its results are assembled in
:mod:`~dplong.models.pooled.results`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, check_choice, check_random_state, checked_call, warn
from dplong.dask_frames import FrameSpec, design_spec, is_dask
from dplong.exceptions import FormulaError, ParameterError
from dplong.formula import DesignSpec, GroupsLike, LevelsLike, PanelDesign, group_design
from dplong.formula.terms import analyst_env
from dplong.models.base import FormulaModel
from dplong.models.command_line import (
    BOUNDS_OPTION,
    FOUND_MAX_ROWS_OPTION,
    PTR_FLOOR_OPTION,
    CommandLineModel,
    Option,
    register,
)
from dplong.models.effects import has_time_effects, panel_effects
from dplong.models.option_checks import (
    COV_TYPES,
    DEFAULT_MAX_ROWS,
    CovType,
    check_accountant,
    check_max_rows,
    refuse_max_rows,
)
from dplong.models.pooled.dask_rows import DaskRows
from dplong.models.pooled.factors import Blocks, Disjoint, _blocks_of, _disjoint_of
from dplong.models.pooled.frame import BoundsLike, _Scaling, column_bounds
from dplong.models.pooled.gram import (
    _gram_bound,
    _released_entries,
    _row_square,
    _rows_released,
)
from dplong.models.pooled.located import FoundRanges, RangeFlags, _RangesStage
from dplong.models.pooled.persons import PersonSums
from dplong.models.pooled.ptr import PTR_REST, PTR_SHARE, _fit_ptr
from dplong.models.pooled.release import _release_statistics, _Statistics
from dplong.models.pooled.results import _statistics_results
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.accounting import Accountant
from dplong.privacy.budget import (
    SIDE_SHARE,
    StatisticsBudget,
    afford,
    settle,
    statistics_budget,
)
from dplong.privacy.budget.fit import guarded
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.ranges import WIDENED_COUNTS
from dplong.privacy.row_cap import RowCap, release_row_cap
from dplong.results import RegressionResults
from dplong.summary import plain_names

__all__ = [
    "COV_TYPES",
    "FACTOR_SHARES",
    "PTR_REST",  # the ePTR route's shares (ptr.py), named by fit's method="ptr"
    "PTR_SHARE",
    "SHARES",
    "CovType",
    "PooledOLS",
]

#: Shares of the fit's ρ: the augmented Gram matrix (the pilot and the Hessian), the whitened
#: scores' size (one scalar: the steps' radius), two Newton steps' clipped scores (β̂'s noise:
#: the first's is multiplied by what the second leaves of its error, so it needs far less)
#: and the clustered meat, which only needs to be good to some per cent (it enters bse under a
#: root). How they were chosen: ``docs/design/pooled.md``.
SHARES = (0.35, 0.05, 0.1, 0.45, 0.05)  # Gram, the scores' size, Newton steps, meat
#: The shares where the rows have structural zeros (a declared treatment-coded factor): the
#: Gram matrix's block of the factor is then diagonal, each level's row count against its own
#: noise, and whether every level is determined (the ridge's pull bounded,
#: :meth:`~dplong.models.pooled.gram._Solution.shrinkage_at`) rests on the rarest level's count:
#: the Gram matrix gets more.
FACTOR_SHARES = (0.55, 0.04, 0.07, 0.3, 0.04)

#: What :meth:`PooledOLS._rows` gives: the rows regressed, their persons, the cap on rows
Rows = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp], int]

_Model = TypeVar("_Model", bound="PooledOLS")
_Results = TypeVar("_Results", bound=RegressionResults)

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame


def said_on_screen(results: _Results) -> _Results:
    """``results``, each of its notes said on the screen once (a DplongWarning), as the
    engine's models say theirs: a public fit's last step (a stage of another fit, such as
    RandomEffects' pilot, says nothing of its own: its notes are the fit's to say)."""
    for note in results.warnings:
        warn(plain_names(note))
    return results


class PooledOLS(_RangesStage, FormulaModel):
    """User-level DP pooled OLS with person-clustered standard errors (:mod:`dplong.models.pooled`).

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
    #: What the ranges clip (the results' assumptions say it).
    _clipped = "values"
    #: What else leaves a coefficient undetermined (the withheld note says it), and its remedy.
    _unidentified = ""
    _unidentified_remedy = ""
    #: Whether a public range is a column's frame, so that stating one narrower than the
    #: range found privately can determine a coefficient (the withheld note's remedy).
    _bounds_frame = True
    #: The share of the persons a column's side of its midpoint is planned to hold at the
    #: least (the ranges' route, :data:`~dplong.privacy.budget.gaussian.SIDE_SHARE`).
    _side_share = SIDE_SHARE
    #: The routes ``fit``'s ``method`` may take.
    _methods: tuple[str, ...] = ("statistics", "ptr")
    #: Whether the rows keep only ``1 - θ`` of each person's between-person part (random
    #: effects' quasi-demeaning): where X'X's noise floors or withholds the coefficients, pooled
    #: OLS's rows keep all of it for the same noise.
    _quasi_demeaned = False
    #: Whether a person's rows are weighed up to a cap (``max_rows``, found privately where
    #: not stated): a person is one row where the estimator regresses their means.
    _rows_weighed = True
    #: Whether the fit absorbs the person effects, which the formula term ``EntityEffects``
    #: asks for (linearmodels' spelling): taken where true, refused where not.
    _entity_effects = False
    #: Whether the formula term ``TimeEffects`` (dummies of the declared periods) identifies
    #: anything: not in a regression of the persons' means, whose means of the dummies are the
    #: shares of their rows in each period (1 / T each in a balanced panel: singular).
    _time_effects = True

    def __init__(
        self,
        design: PanelDesign,
        ranges: NDArray[np.float64],
        *,
        levels: Mapping[str, tuple[Any, ...]],
        frame: NDArray[np.float64] | None = None,
        caps: NDArray[np.float64] | None = None,
        flags: RangeFlags | None = None,
        blocks: Blocks = (),
        disjoint: Disjoint = (),
        source: DaskRows | None = None,
    ) -> None:
        super().__init__(design)
        self._design: PanelDesign = design
        # private: the rows on a Dask frame, read where they lie (None: the design's rows)
        self._source = source
        self._ranges = ranges  # public: (p + 1) x 2, the columns' then the outcome's
        # public: what a range found privately is cut to (none: infinite)
        self._caps = np.tile([-np.inf, np.inf], (len(ranges), 1)) if caps is None else caps
        # released: the flags of the ranges an earlier stage found (missed, heavy)
        self._flags = RangeFlags.none(len(ranges)) if flags is None else flags
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
    @checked_call
    def from_formula(
        cls: type[_Model],
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        groups: GroupsLike,
        bounds: BoundsLike | str | None = None,
        levels: LevelsLike | None = None,
        time: str | None = None,
    ) -> _Model:
        """Build the model from a patsy formula.

        Parameters
        ----------
        formula : str
            ``"y ~ x1 + x2"``; an intercept is included unless removed with ``- 1``.
            linearmodels' terms are understood: ``+ TimeEffects`` adds dummies of the ``time``
            column, ``C(time)``, on its declared periods (``levels={time: [...]}`` or a
            ``Categorical`` column; :class:`BetweenOLS` refuses it: a person's means of the
            dummies are their rows' shares); ``+ EntityEffects`` is what :class:`PanelOLS`
            fits (the other estimators refuse it).
        data : pandas.DataFrame or dask.dataframe.DataFrame
            One row per observation. A Dask frame is read where it lies, partition by
            partition, now and at each fit (:mod:`~dplong.models.pooled.dask_rows`).
        groups : str or array_like
            Column name (or values) of the person id: the unit of privacy (with a Dask
            frame, a column name).
        bounds : mapping of str to (low, high), optional
            Public ranges of the outcome and of design columns, by name
            (``{"xage": (0, 100), "np.log1p(meddol)": (0, 12)}``): values outside are
            clipped. Public facts: they cost no budget. The range of a column named in neither
            ``bounds`` nor ``levels`` is found privately at the fit. Any other name, the
            ``Intercept`` included (1 in every row), is refused.
        levels : mapping of str to sequence, optional
            Declared levels of factor columns, as in :meth:`LongitudinalOLS.from_formula`.
        time : str, optional
            Name of the time column, read only for ``TimeEffects`` (the pooled estimators do
            not order a person's rows): refused without it.

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
        env = analyst_env()
        formula = cls._effects_terms(formula, data, time=time, levels=levels)
        if is_dask(data):
            return cls._of_dask(formula, data, groups=groups, bounds=bounds, levels=levels, env=env)
        spec = DesignSpec.from_formula(formula, data, levels=levels, eval_env=env)
        ranges = column_bounds(spec, bounds)  # refused before the rows are read
        return cls._of(spec, group_design(spec, data, groups=groups), ranges)

    @classmethod
    def _effects_terms(
        cls, formula: str, data: Any, *, time: str | None, levels: LevelsLike | None
    ) -> str:
        """``formula`` with linearmodels' effects terms resolved (public: the formula, the time
        column's name and declared periods): ``TimeEffects`` as ``C(time)``, ``EntityEffects``
        dropped where the estimator absorbs the person effects and refused where it does not;
        a ``time`` column without ``TimeEffects`` is refused (nothing else reads it)."""
        if time is not None and not has_time_effects(formula):
            named = repr(time) if isinstance(time, str) else type(time).__name__  # no values
            if cls._time_effects:
                why = (
                    f"is read only for TimeEffects in the formula: {cls.model_name} does not "
                    "order a person's rows; add '+ TimeEffects' or drop time="
                )
            else:
                why = f"has no use in {cls.model_name}, which reads one mean a person; drop time="
            raise ParameterError(f"time={named} {why}")
        if has_time_effects(formula) and not cls._time_effects:
            raise FormulaError(
                f"TimeEffects has no place in {cls.model_name}: a person's means of the period "
                "dummies are the shares of their rows in each period, not time effects (in a "
                "balanced panel all 1 / T); fit dplong.PooledOLS or dplong.PanelOLS with them"
            )
        formula, entity = panel_effects(formula, data, time=time, levels=levels)
        if entity and not cls._entity_effects:
            raise FormulaError(
                f"EntityEffects absorbs the person effects, which {cls.model_name} does not: "
                "fit dplong.PanelOLS (the within estimator) for them"
            )
        return formula

    @classmethod
    def _of_dask(
        cls: type[_Model],
        formula: str,
        data: DaskFrame,
        *,
        groups: GroupsLike,
        bounds: BoundsLike | str | None,
        levels: LevelsLike | None,
        env: patsy.EvalEnvironment,
    ) -> _Model:
        """The model of a Dask frame's rows, read where they lie (:mod:`.dask_rows`): each
        person's extremes now, their sums at the fit."""
        spec = design_spec(formula, data, levels=levels, eval_env=env)
        ranges = column_bounds(spec.spec, bounds)  # refused before the rows are read
        source, design = cls._read_dask(data, spec, groups)
        return cls._of(spec.spec, design, ranges, source)

    @classmethod
    def _read_dask(
        cls, data: DaskFrame, spec: FrameSpec, groups: GroupsLike
    ) -> tuple[DaskRows, PanelDesign]:
        """The passes over a Dask frame's rows when the model is built (each person's
        extremes) and the design's public facts."""
        return DaskRows.read(data, spec, groups)

    @classmethod
    def _of(
        cls: type[_Model],
        spec: DesignSpec,
        design: PanelDesign,
        ranges: NDArray[np.float64],
        source: DaskRows | None = None,
    ) -> _Model:
        """The model of a built design and its columns' public ranges (the rows it regresses
        are :meth:`_rows` of the design's, or of a Dask frame's ``source``)."""
        return cls(
            design,
            ranges,
            levels=spec.levels,
            blocks=_blocks_of(spec, design.columns),
            disjoint=_disjoint_of(spec, design.columns),
            source=source,
        )

    @checked_call
    @guarded()  # a failure after the noise began is charged, as an advised fit's
    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        max_rows: int | None = None,
        cov_type: CovType = "clustered",
        privacy: Literal["central"] = "central",
        variant: Literal["default"] = "default",
        method: Literal["statistics", "ptr"] = "statistics",
        ptr_floor: float | None = None,
        coef_bound: float | None = None,
        between: Sequence[str] | str | None = None,
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> RegressionResults:
        """Release pooled OLS with user-level (ε, δ)-DP: the private ranges of the columns
        without bounds, then five discrete Gaussian releases (zCDP), composed exactly to
        (ε, δ). Refused before any noise where n ε is too small for the ranges' medians.
        With ``method="ptr"``, the coefficients are instead one user-level ePTR release
        (:func:`dplong.privacy.ptr.ols_ptr`).

        Parameters
        ----------
        epsilon, delta : float
            Total budget (δ default ``1/n**2``).
        max_rows : int, optional
            Public cap ``T_cap`` on a person's rows, from 1 to 10⁵: a person with more rows
            enters with weight ``T_cap / T_u`` per row, so no person outweighs ``T_cap`` rows.
            Exactly pooled OLS when no one has more. The noise grows in proportion to it: give
            the panel's public length when it has one. Default: found privately, at most 10
            (:mod:`dplong.privacy.row_cap`: the fewest rows that all but about a tenth of the
            persons have at most, from a noisy count of the persons by their rows, with
            :data:`~dplong.privacy.row_cap.ROW_CAP_SHARE` of the fit's ρ); with
            ``method="ptr"``, 10. Refused by :class:`~dplong.BetweenOLS`, whose person is one
            row (their means).
        cov_type : {"clustered", "cluster"}
            Standard errors clustered by person (the unit of privacy and sampling): the only
            choice, in linearmodels' and statsmodels' spelling.
        privacy, variant : {"central"}, {"default"}
            The only model and release there are (a trusted curator; the releases above), as
            the command line's common options name them.
        method : {"statistics", "ptr"}
            ``"statistics"`` (default): the released sufficient statistics above.
            ``"ptr"`` (:class:`PooledOLS` and :class:`BetweenOLS`; :class:`PanelOLS` is
            released from its sufficient statistics only): the coefficient vector in one
            efficient Propose-Test-Release (the seed's
            Alg 4 with a person's rows as the unit; :func:`dplong.privacy.ptr.ols_ptr`) with
            :data:`~dplong.models.pooled.ptr.PTR_SHARE` of ε, and the clustered standard errors
            from a Gram matrix and meat released with the rest. Needs every range public
            (``bounds``). The test's outcome is a DP release: when it refuses (⊥), every
            coefficient is withheld and the ledger says so. Measured against ``"statistics"``
            in docs/accuracy.md.
        ptr_floor : float
            With ``method="ptr"``: the floor c₀ of Alg 4, a public guess at a lower bound on
            ``λ_min(X'X) / n`` of the design scaled to [-1, 1] (each person's rows weighted
            to at most ``max_rows``); the test passes when the data clear it by a margin, and
            the noise is proportional to ``1 / c₀``.
        coef_bound : float
            With ``method="ptr"``: the radius ``R_θ`` the scaled coefficient vector is
            projected onto (default 1: the fitted plane stays within the outcome's range over
            the covariates' box). It bounds the coefficients in the columns' scaled units, not
            the data: a vector beyond it is shrunk onto it by an amount the intervals do not
            hold, and where the released one lies within ``PTR_EDGE_SDS`` (3) noise sds of it
            or beyond, the fit says so.
        between : str or list of str, optional
            :class:`PanelOLS` only: regressors the analyst declares constant within every
            person (a public fact: treatment, sex). The person effects absorb them: they are
            left out of the releases and reported with no estimate. Undeclared, the ranges'
            stage finds such a regressor from its released counts (and leaves it out the
            same way) where they can tell it from one that varies; declared, nothing is spent
            on it.
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
        >>> round(float(res.params["female"]), 3), round(float(res.bse["female"]), 3)
        (0.523, 0.047)

        Non-private pooled OLS gives 0.523 (clustered SE 0.042): with the noise off no score
        is clipped and the Newton steps land on it. The persons the Gram matrix's bound
        scales down make the released Hessian, the clustered sandwich's bread, smaller than
        the design's ``X'X``: the standard errors err wide (here by a tenth).
        """
        options, cap, generator = self._checked(
            epsilon, delta, max_rows, cov_type, privacy, variant, accountant, random_state, rng
        )
        if method == "ptr" and method not in self._methods:
            raise ParameterError(
                f'{self.model_name} has no method="ptr": the ePTR route releases pooled and '
                "between OLS; the within estimator is released from its sufficient statistics "
                '(method="statistics", the default)'
            )
        check_choice(method, "method", self._methods)
        absorbed = self._absorbed(between)  # checked on every route (PanelOLS has no ePTR one)
        if method == "ptr":
            stated = DEFAULT_MAX_ROWS if cap is None else cap
            results = _fit_ptr(self, options, stated, ptr_floor, coef_bound, generator, accountant)
        else:
            if ptr_floor is not None or coef_bound is not None:
                raise ParameterError('ptr_floor and coef_bound apply to method="ptr" only')
            model = self._without(absorbed)
            results = model._fit_statistics(options, cap, generator, accountant, self, absorbed)
        return said_on_screen(results)

    def _fit_statistics(
        self,
        options: ReleaseOptions,
        max_rows: int | None,
        generator: np.random.Generator,
        accountant: Accountant | None,
        formula_model: PooledOLS,
        absorbed: tuple[str, ...],
    ) -> RegressionResults:
        """The fit from released sufficient statistics, its options checked; the results
        report ``formula_model``'s coefficients, ``absorbed`` ones with no estimate; the cap on
        a person's rows is ``max_rows``, or found privately where None."""
        design = self._design
        n = design.n
        plan = self.release_plan(epsilon=options.epsilon, delta=options.delta, max_rows=max_rows)
        self._check_ranges(plan)
        # every refusal is decided: dplong.plan stops here, before any noise
        block = PlannedBlock(
            tuple(self.exog_names), 1.0, False, None, notes=self._range_notes(plan)
        )
        checkpoint(FitPlan(n, options, (block,)))
        afford(accountant, options.epsilon, options.delta)
        model, found, constant = self._absorbing(self._find_ranges(plan, generator))
        row_cap = self._row_cap(max_rows, plan, generator)
        design = model._design
        scaled = _Scaling.of(
            found.ranges,
            design.columns,
            found.frame,
            model._blocks,
            outcome_found=bool(model._found_privately[-1]),
        )
        persons, cap = model._person_sums(scaled, row_cap.value)
        rho = plan.released_rho(any(e.target == WIDENED_COUNTS for e in found.entries))
        release = model._release(scaled, persons, cap, rho, generator)
        ledger = settle(accountant, [*found.entries, *row_cap.entries, *release.entries], options)
        results = _statistics_results(
            model,
            scaled,
            release,
            ledger,
            options,
            cap,
            found.ranges,
            plan,
            reported=(tuple(formula_model.exog_names), absorbed),
            constant=constant,
            flags=found.flags.merged(model._flags),
            row_cap=row_cap,
        )
        return model._finished(results, release, cap)

    def _finished(
        self, results: RegressionResults, release: _Statistics, cap: int
    ) -> RegressionResults:
        """The fit's results as the estimator reports them (random effects add the θ its rows
        were quasi-demeaned with): as they are."""
        return results

    def _row_cap(
        self, max_rows: int | None, plan: StatisticsBudget, generator: np.random.Generator
    ) -> RowCap:
        """The cap on a person's rows: ``max_rows`` as stated, or found privately with the
        plan's ``rows_rho`` from the persons' row counts (:func:`release_row_cap`)."""
        if plan.rows_rho == 0.0:
            return RowCap(DEFAULT_MAX_ROWS if max_rows is None else max_rows)
        return release_row_cap(self._row_counts(), DEFAULT_MAX_ROWS, plan.rows_rho, generator)

    def _row_counts(self) -> NDArray[np.intp]:
        """Every person's number of rows (private), counted where the rows lie."""
        if self._source is not None:
            return self._source.row_counts()
        return np.bincount(self._design.codes, minlength=self._design.n)

    def _absorbing(self: _Model, found: FoundRanges) -> tuple[_Model, FoundRanges, tuple[str, ...]]:
        """The model the fit releases, its ranges, and the regressors left out because the
        released counts found them (nearly) constant: none here, where a constant column is
        the intercept's twin and its range's miss withholds the fit (:class:`PanelOLS`
        leaves such a regressor to the person effects)."""
        return self, found, ()

    def _absorbed(self, between: object) -> tuple[str, ...]:
        """The regressors declared constant within persons (``fit``'s ``between``): none
        here, where such a regressor is identified."""
        if between is not None:
            raise ParameterError(
                f"between= applies to PanelOLS (whose person effects absorb a regressor "
                f"constant within persons); {type(self).__name__} estimates it"
            )
        return ()

    def _without(self: _Model, columns: tuple[str, ...]) -> _Model:
        """The model of the same rows without the design's ``columns`` (itself if none)."""
        if not columns:
            return self
        rows = self._kept(columns)
        keep = rows[:-1]
        design = dataclasses.replace(
            self._design,
            X=np.ascontiguousarray(self._design.X[:, keep]),
            columns=tuple(self._design.columns[j] for j in keep),
        )
        return type(self)(
            design,
            self._ranges[rows],
            levels=self._levels,
            frame=self._frame[rows],
            caps=self._caps[rows],
            flags=self._flags.at(rows),
            blocks=self._blocks,
            disjoint=self._disjoint,
            source=None if self._source is None else self._source.without(rows),
        )

    def _kept(self, columns: tuple[str, ...]) -> list[int]:
        """The rows of the ranges ((p + 1) x 2) left without the design's ``columns``: the
        other columns', then the outcome's."""
        names = self._design.columns
        return [*(j for j, c in enumerate(names) if c not in columns), len(names)]

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
    ) -> tuple[ReleaseOptions, int | None, np.random.Generator]:
        """The options every estimator of this family checks before any noise: the budget, the
        cap on a person's rows (None: found privately), the covariance, the model, the
        accountant and the generator."""
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
        if not self._rows_weighed:
            refuse_max_rows(
                max_rows,
                f"to fits that weigh a person's rows; {self.model_name} fits one row a "
                "person (their means)",
            )
        cap = None if max_rows is None else check_max_rows(max_rows)
        check_choice(cov_type, "cov_type", COV_TYPES)
        check_accountant(accountant)
        return options, cap, check_random_state(random_state, rng)

    def _release(
        self,
        scaled: _Scaling,
        persons: PersonSums,
        cap: int,
        rho: tuple[float, ...],
        generator: np.random.Generator,
    ) -> _Statistics:
        """Steps 2-4 of ``docs/design/pooled.md`` on the sums of the estimator's scaled rows
        (its row count and the frame's reaches from this model)."""
        return _release_statistics(
            persons,
            cap,
            rho,
            generator,
            row_count=self._row_count,
            reach=scaled.reach,
            blocks=self._blocks,
            disjoint=self._zero_products(),
        )

    def _person_sums(self, scaled: _Scaling, cap: int) -> tuple[PersonSums, int]:
        """Each person's sums of the rows the estimator regresses (:meth:`_rows`) in the
        frame of ``scaled``, and the cap on a person's rows."""
        design = self._design
        n = design.n
        kept = _released_entries(len(design.columns) + 1, self._zero_products())
        if self._source is not None:
            return self._dask_person_sums(self._source, scaled, kept), self._cap(cap)
        x, y, codes, cap = self._rows(*scaled.apply(design.X, design.y), design.codes, n, cap)
        return PersonSums.of_rows(x, y, codes, n, blocks=self._blocks, kept=kept), cap

    def _zero_products(self) -> Disjoint:
        """The blocks of columns whose different columns' products are 0 in every row the
        estimator regresses, a public fact: pooled rows are the design's, and a treatment-coded
        factor's row has one 1 at most (:func:`_disjoint_of`)."""
        return self._disjoint

    def _dask_person_sums(
        self, source: DaskRows, scaled: _Scaling, kept: NDArray[np.intp]
    ) -> PersonSums:
        """:meth:`_person_sums` of a Dask frame's rows, read where they lie: pooled OLS sums
        its rows as they are."""
        return source.person_sums(scaled, blocks=self._blocks, kept=kept)

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

    def release_plan(
        self, *, epsilon: float, delta: float, max_rows: int | None = None
    ) -> StatisticsBudget:
        """The fit's budget from public facts (n, the columns without public bounds, ε, δ,
        whether ``max_rows`` is stated): the ρ of the count that finds the cap on a person's
        rows where it is not (and the estimator weighs rows), the ε of each median of the
        private ranges (or, where n ε is too small for them, the
        ρ of their histograms) and the ρ of the Gaussian releases (the Gram matrix, the
        scores' size, the two Newton steps, the meat: :data:`SHARES`, or
        :data:`FACTOR_SHARES` where a declared factor's rows are one-hot), as :meth:`fit`
        spends it.

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> model = dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper")
        >>> plan = model.release_plan(epsilon=1.0, delta=hie["zper"].nunique() ** -2.0)
        >>> round(plan.median_epsilon, 4), [round(r, 5) for r in plan.rho]
        (0.0271, [0.00492, 0.0007, 0.00141, 0.00633, 0.0007])
        >>> round(plan.rows_rho, 5), model.release_plan(epsilon=1.0, delta=5912**-2.0,
        ...                                             max_rows=5).rows_rho  # found, stated
        (0.00037, 0.0)
        """
        shares = FACTOR_SHARES if self._zero_products() else SHARES
        return statistics_budget(
            self._design.n,
            epsilon,
            delta,
            shares,
            int(self._located.sum()),
            rows=max_rows is None and self._rows_weighed,
            side_share=self._side_share,
        )

    def gram_noise_sd(self, *, epsilon: float, delta: float, max_rows: int) -> float:
        """The sd of the privacy noise on each diagonal entry of the released ``[X y]'[X y]``,
        in units where every column's frame is ``[-1, 1]`` (off the diagonal: ``1/√2`` of it),
        from public facts only: the first release's noise, which sets the pilot's and bounds
        the interval's (for a planner; the lattice's rounding adds a hair, and where the ranges
        widen no side the release takes the ρ their far counts did not spend, a few % less).

        Examples
        --------
        >>> import dplong
        >>> hie = dplong.datasets.load_randhie()
        >>> model = dplong.PooledOLS.from_formula(
        ...     "np.log1p(meddol) ~ np.log(coins + 1) + xage + female", hie, groups="zper")
        >>> round(model.gram_noise_sd(epsilon=1.0, delta=5912 ** -2.0, max_rows=5))
        176
        """
        cap = self._cap(check_max_rows(max_rows))
        rho = self.release_plan(epsilon=epsilon, delta=delta, max_rows=cap).rho[0]
        square = _row_square(len(self._design.columns), self._blocks)
        return math.sqrt(2.0) * _gram_bound(cap, square) / math.sqrt(2.0 * rho)

    def _row_count(self, released: NDArray[np.float64], cap: int) -> float:
        """The weighted number of rows in the sums, from the released ``[X y]'[X y]`` (for the
        scores' clipping radius): the intercept's entry, at least n; n without one."""
        n = self._design.n
        return max(_rows_released(released, self._design.columns, self._blocks), n)

    @property
    def _reported(self) -> NDArray[np.intp]:
        """The positions of the design's columns the results report: all of them."""
        return np.arange(len(self._design.columns))

    def _cap(self, max_rows: int) -> int:
        """The cap on the weight of a person's rows in the sums (1 where a person is one row)."""
        return max_rows if self._rows_weighed else 1

    def _weighting(self, cap: int) -> str:
        return f"a person's rows count up to max_rows={cap} (more are down-weighted)"


register(
    CommandLineModel(
        "pooled",
        PooledOLS.from_formula,
        "PooledOLS: pooled OLS with person-clustered errors from released sufficient "
        "statistics; between-person covariates identified",
        uses_time=True,  # the time column of TimeEffects
        options=(
            BOUNDS_OPTION,
            FOUND_MAX_ROWS_OPTION,
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
