"""The template every formula model fits through: design → per-user statistics → release → results.

A model is its per-user reduction plus labels: :meth:`PanelModel._blocks` returns the
:class:`Block` s of statistics it releases, in order (a later block may use the earlier blocks'
released numbers, e.g. the variance components use the released location). The template
validates the common options once, plans and checks every block before the first noise draw,
runs each through the release engine (:func:`~dplong.privacy.engine.release_means`, or the
paper's estimator for ``variant="theory"`` and the local model) and assembles the results once.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, check_random_state, per_column, warn
from dplong.dask_frames import ReducedPanel
from dplong.dependence import DependenceModel
from dplong.exceptions import DplongError, DplongWarning, InsufficientUsersError, ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign, build_design
from dplong.planning import FitPlan, PlannedBlock, checkpoint
from dplong.privacy.accounting import Accountant, Cost, PrivacyLedger
from dplong.privacy.budget import (
    ReleasePlan,
    afford,
    charge,
    fit_ledger,
    part,
    split_users,
)
from dplong.privacy.engine import Release, release_means
from dplong.privacy.local import release_local
from dplong.privacy.options import Focus, ReleaseOptions, focus_weights
from dplong.privacy.radius import TailModel, bin_radius, concentration_radius
from dplong.privacy.rules import Rules, UserWeights
from dplong.privacy.variance import ScaleEstimate, check_scale, estimate_scale
from dplong.privacy.winsorized import check_paper, release_paper
from dplong.results import ModelSpec, PanelResults
from dplong.summary import plain_names

__all__ = [
    "Block",
    "FitRequest",
    "PanelModel",
    "ScaleLike",
    "Statistics",
    "caught_notes",
    "panel_results",
    "paper_mean_options",
    "paper_scale",
]

ScaleLike = float | NDArray[np.float64] | list[float] | DependenceModel | Literal["estimate"]
#: Share of a block's budget the paper's pipeline (theory, local) spends on CoinPress when the
#: scale is estimated: the paper's Fig. 5 gives the scale and the mean equal budgets.
PAPER_SCALE_SHARE = 0.5


@dataclass(frozen=True)
class Statistics:
    """One block's per-user statistics (private: they never leave the fit).

    ``matrix`` is n x d (NaN: the user has no statistic); ``scale`` the stated variance proxy
    per column (None: estimated privately); ``sampling_sd`` overrides the plug-in standard
    deviation of the non-private estimator when a stated model gives it (e.g. users that
    share random effects); ``nonnegative`` clamps released estimates at 0 (variances:
    post-processing); ``user_weights`` asks for precision-weighted means (the block must be
    declared ``weighted``; :class:`~dplong.privacy.rules.UserWeights`); ``centre_bias`` is a
    bound, from released numbers, on how far an earlier release the statistics are centred on
    shifts their mean (added to the release's bias bound); ``tail`` the tail model when it is
    decided from earlier releases (replaces the block's); ``lower`` the public lower ends of the
    columns' support, known from how they are built (0 for a square, -inf for none), so that
    no interval is spent below every user (:func:`~dplong.privacy.engine.release_means`);
    ``centre`` a public centre per column and a bound on its distance to the mean, from
    released numbers (the block must be declared ``centred``).
    """

    matrix: NDArray[np.float64]
    scale: NDArray[np.float64] | None = None
    sampling_sd: NDArray[np.float64] | None = None
    nonnegative: bool = False
    user_weights: UserWeights | None = None
    centre_bias: NDArray[np.float64] | None = None
    tail: TailModel | None = None
    lower: NDArray[np.float64] | None = None
    centre: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None


@dataclass(frozen=True)
class Block:
    """A release a model declares up front: public labels and budget, private statistics.

    ``share`` is the block's share of the fit's (ε, δ); ``stated_scale`` and ``complete_rows``
    are public facts the plan needs (whether the scale is stated; whether a user's statistics
    are all there or all missing); ``bounds`` public (lower, upper) per column that hold the
    statistics under the model's stated assumptions; ``weighted`` that its statistics come
    with precision weights (the plan then budgets a weighted count); ``count_from`` the index
    of an earlier block over the *same* users with the same weights, whose private count this
    one divides by instead of counting again; ``moment=False`` when nothing reads the
    release's sampling sd (no second moment is then bought for it); ``relative`` when its
    columns' errors count relative to their own scales in the final budget's shares (columns
    in different units: :func:`~dplong.privacy.engine.release_means`); ``centred`` when its
    statistics come with a public centre (``Statistics.centre``: no midpoint or refinement
    stage is planned); ``partial_users`` when each column is by design a statistic of some
    users only (the levels of a grouping: see :class:`~dplong.privacy.rules.Rules`);
    ``notes`` public warnings the release carries whatever the data (an assumption nothing at
    its budget can check): said before any noise, planned, and joined to its release's notes.
    ``build`` computes the statistics from the releases of the earlier blocks.
    """

    names: tuple[str, ...]
    share: float
    build: Callable[[tuple[Release, ...]], Statistics]
    stated_scale: bool
    complete_rows: bool = True
    bounds: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
    weighted: bool = False
    tail: TailModel | None = None
    count_from: int | None = None
    moment: bool = True
    relative: bool = False
    centred: bool = False
    partial_users: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FitRequest:
    """The validated common options of a fit (see :meth:`PanelModel._fit`)."""

    options: ReleaseOptions
    rng: np.random.Generator
    focus: Focus
    accountant: Accountant | None


class FormulaModel:
    """What every formula model knows of its design: n, the formula and the column names,
    all public.

    Examples
    --------
    >>> import dplong
    >>> from dplong.models.base import FormulaModel
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr")
    >>> isinstance(model, FormulaModel), model.nobs_users, model.exog_names
    (True, 545, ['Intercept', 'exper'])
    """

    model_name: ClassVar[str] = "FormulaModel"

    def __init__(self, design: PanelDesign | ReducedPanel) -> None:
        self._design = design  # rows in memory, or a Dask frame's per-user statistics

    @property
    def nobs_users(self) -> int:
        """Number of users n: public."""
        return self._design.n

    @property
    def exog_names(self) -> list[str]:
        """Names of the design's columns (a function of the formula: public)."""
        return list(self._design.columns)

    @property
    def formula(self) -> str:
        """The model's formula."""
        return self._design.formula

    @property
    def spec(self) -> ModelSpec:
        """The model as public facts, without its data: what its results keep as ``model``.

        Examples
        --------
        >>> import dplong
        >>> wages = dplong.datasets.load_wage_panel()
        >>> dplong.LongitudinalOLS.from_formula("lwage ~ exper", wages, groups="nr").spec
        LongitudinalOLS('lwage ~ exper', n_users=545)
        """
        return ModelSpec(
            self.model_name, self.formula, self.nobs_users, tuple(self.exog_names), type(self)
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.formula!r}, n_users={self.nobs_users})"


class PanelModel(FormulaModel):
    """Base of the formula models. Subclasses define their blocks of per-user statistics."""

    model_name: ClassVar[str] = "PanelModel"
    #: The paper's results the error bounds instantiate: (central, local).
    basis: ClassVar[tuple[str, str]] = ("Theorem 4.2", "Theorem 6.4")

    @classmethod
    def _build(
        cls,
        formula: str,
        data: pd.DataFrame,
        groups: GroupsLike,
        time: GroupsLike | None,
        depth: int,
        levels: LevelsLike | None = None,
    ) -> PanelDesign:
        return build_design(
            formula,
            data,
            groups=groups,
            time=time,
            levels=levels,
            eval_env=patsy.EvalEnvironment.capture(depth + 1),
        )

    @staticmethod
    def _request(
        n: int,
        d: int,
        *,
        epsilon: Any,
        delta: Any,
        privacy: Any,
        bound: Any,
        variant: Any,
        gamma: Any,
        refine: Any,
        focus: Focus,
        random_state: RandomState,
        rng: RandomState,
        accountant: Accountant | None,
    ) -> FitRequest:
        """Validate the options every fit shares, once, before anything else."""
        options = ReleaseOptions.check(
            n,
            epsilon=epsilon,
            delta=delta,
            privacy=privacy,
            bound=bound,
            d=d,
            variant=variant,
            gamma=gamma,
            refine=refine,
        )
        check_accountant(accountant)
        return FitRequest(options, check_random_state(random_state, rng), focus, accountant)

    def _fit(
        self,
        request: FitRequest,
        blocks: Sequence[Block],
        *,
        assumptions: tuple[str, ...],
        results: Callable[..., PanelResults] | None = None,
        **extra: Any,
    ) -> PanelResults:
        """Run the blocks through the engine and assemble the results (module docstring)."""
        releases = run_blocks(
            blocks,
            n=self.nobs_users,
            request=request,
        )
        assemble = results or panel_results
        return assemble(
            releases,
            model=self.spec,
            formula=self.formula,
            nobs_users=self.nobs_users,
            basis=self.basis,
            options=request.options,
            assumptions=assumptions,
            **extra,
        )


def run_blocks(blocks: Sequence[Block], *, n: int, request: FitRequest) -> tuple[Release, ...]:
    """Release the blocks in order; every plan and budget check comes before any noise.

    Each block gets its share of the fit's (ε, δ) to size its stages; the default engine then
    calibrates a later block's final stage against everything the fit spent before it, so the
    fit's ledger totals the whole budget (and never more).
    """
    options, rng, accountant = request.options, request.rng, request.accountant
    focus = focus_weights(request.focus, blocks[0].names)  # validated first: an option
    budgets = [part(options, block.share) for block in blocks]
    plans = [_plan(block, options, n) for block, options in zip(blocks, budgets, strict=True)]
    _refuse_doomed(plans, n, sum(len(block.names) for block in blocks), options.epsilon)
    # every refusal is decided: a fit run to plan it (dplong.plan) stops here, before any noise
    checkpoint(
        FitPlan(
            n,
            options,
            tuple(
                PlannedBlock(
                    block.names,
                    block.share,
                    block.stated_scale,
                    plan,
                    bounds=block.bounds,
                    tail=block.tail,
                    relative=block.relative,
                    notes=block.notes,
                )
                for block, plan in zip(blocks, plans, strict=True)
            ),
        )
    )
    afford(accountant, options.epsilon, options.delta)
    warned: set[str] = set()
    for block, plan in zip(blocks, plans, strict=True):
        for note in (*(plan.notes if plan is not None else ()), *block.notes):
            if note not in warned:  # public facts: said once per fit, before any noise
                warn(plain_names(note))
                warned.add(note)
    releases: list[Release] = []
    spent: list[Cost] = []
    share = 0.0
    split = options.local and options.variant == "default"
    if split:  # local: every user answers one block's question with the whole ε
        members = split_users(rng, n, [block.share for block in blocks])
    for i, (block, block_options, plan) in enumerate(zip(blocks, budgets, plans, strict=True)):
        share += block.share
        statistics = block.build(tuple(releases))
        weights = focus if i == 0 else None
        # what a mechanism warns of (public facts, released numbers) joins the release's
        # notes, so that it reaches results.warnings, summary() and the report, not only stderr
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if split:
                local_options = dataclasses.replace(
                    block_options, epsilon=options.epsilon, bound=_block_bound(block, options)
                )
                release = release_local(
                    statistics.matrix[members[i]],
                    names=block.names,
                    options=local_options,
                    rng=rng,
                    scale=statistics.scale,
                )
            elif plan is not None:
                so_far = part(options, share)
                plan = plan.after(spent, so_far.epsilon, so_far.delta)
                release = release_means(
                    statistics.matrix,
                    names=block.names,
                    options=block_options,
                    rng=rng,
                    weights=weights,
                    plan=plan,
                    rules=_rules(block, statistics, releases),
                )
            else:
                release = _paper_release(block, statistics, block_options, rng)
        release = _with_warnings(release, caught)
        if block.notes:
            release = dataclasses.replace(release, notes=(*release.notes, *block.notes))
        spent += [entry.cost for entry in release.privacy.entries]
        if statistics.nonnegative:
            release = dataclasses.replace(release, estimate=np.maximum(release.estimate, 0.0))
        if statistics.sampling_sd is not None:
            release = dataclasses.replace(release, sampling_sd=statistics.sampling_sd)
        if statistics.centre_bias is not None:
            release = dataclasses.replace(release, bias=release.bias + statistics.centre_bias)
        releases.append(release)
        for note in release.notes:  # from released numbers: said once per fit, after them
            if note not in warned:
                warn(plain_names(note))
                warned.add(note)
    ledger = combined_ledger(releases, options)
    charge(accountant, ledger, options.epsilon, options.delta)
    return tuple(releases)


def _rules(block: Block, statistics: Statistics, earlier: Sequence[Release]) -> Rules:
    """The engine's rules for a block: its public declarations and what its build found."""
    return Rules(
        scale=statistics.scale,
        complete_rows=block.complete_rows,
        bounds=block.bounds,
        user_weights=statistics.user_weights,
        tail=block.tail if statistics.tail is None else statistics.tail,
        count=None if block.count_from is None else earlier[block.count_from].count,
        lower=statistics.lower,
        relative=block.relative,
        public_centre=statistics.centre,
        partial_users=block.partial_users,
    )


def _plan(block: Block, options: ReleaseOptions, n: int) -> ReleasePlan | None:
    """The block's plan (default engine) after its public checks, or None for the paper's
    pipeline (whose checks run here too); all before any noise."""
    d = len(block.names)
    if block.count_from is not None and (options.local or options.variant != "default"):
        raise ParameterError(
            'a release that reuses an earlier count needs the default engine (variant="default", '
            'privacy="central")'
        )
    if options.local and options.variant == "default":
        return None  # the local plan is per column, from public facts, inside release_local
    if options.variant == "default" and not options.local:
        plan = ReleasePlan.make(
            n=n,
            d=d,
            epsilon=options.epsilon,
            delta=options.delta,
            stated_scale=block.stated_scale,
            complete_rows=block.complete_rows,
            refine=options.refine,
            bounded=block.bounds is not None,
            share=block.share,
            weighted=block.weighted,
            count=block.count_from is None,
            moment=block.moment,
            centred=block.centred,
        )
        plan.check()
        return plan
    if block.weighted:
        raise ParameterError(
            'precision weights need the default engine (variant="default", privacy="central")'
        )
    if not block.stated_scale:  # CoinPress runs first, with its share (paper_scale)
        check_scale(n, d, part(options, PAPER_SCALE_SHARE))
    check_paper(n, d, paper_mean_options(options, stated=block.stated_scale))
    return None


def paper_scale(
    matrix: NDArray[np.float64],
    options: ReleaseOptions,
    rng: np.random.Generator,
    names: tuple[str, ...],
) -> ScaleEstimate:
    """CoinPress's private scale of each column (Alg 13-14) with the paper pipeline's share of
    the budget, :data:`PAPER_SCALE_SHARE`.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.base import paper_scale
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.results import ModelSpec
    >>> x = np.random.default_rng(0).normal(0.0, 2.0, size=(5000, 1))
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> estimate = paper_scale(x, options, np.random.default_rng(1), ("x",))
    >>> estimate.privacy.epsilon <= 0.5, bool(1.0 < estimate.scale[0] < 16.0)
    (True, True)
    """
    scale_options = part(options, PAPER_SCALE_SHARE)
    return estimate_scale(
        matrix,
        epsilon=scale_options.epsilon,
        delta=scale_options.delta or None,
        privacy=options.privacy,
        bound=options.bound,
        gamma=options.gamma,
        random_state=rng,
        names=names,
    )


def paper_mean_options(options: ReleaseOptions, *, stated: bool) -> ReleaseOptions:
    """The budget the paper's mean gets after CoinPress took its share (if estimating)."""
    return options if stated else part(options, 1.0 - PAPER_SCALE_SHARE)


def _paper_release(
    block: Block, statistics: Statistics, options: ReleaseOptions, rng: np.random.Generator
) -> Release:
    """The paper's pipeline: CoinPress (Alg 13-14, §7.1.5) when the scale is estimated, then
    Alg 5 (central) or Alg 8 (local) with Lemma 5.2's radii."""
    matrix = statistics.matrix
    n, d = matrix.shape
    if options.bound is not None:
        options = dataclasses.replace(options, bound=_block_bound(block, options))
    scale, ledger = statistics.scale, None
    mean_options = paper_mean_options(options, stated=scale is not None)
    if scale is None:
        estimate = paper_scale(matrix, options, rng, block.names)
        scale, ledger = estimate.scale, estimate.privacy
    release = release_paper(
        matrix,
        tau=concentration_radius(scale, n, d, options.gamma),
        tau_bins=bin_radius(scale, options.gamma),
        names=block.names,
        options=mean_options,
        rng=rng,
    )
    if ledger is None:
        return release
    return dataclasses.replace(release, privacy=ledger + release.privacy)


def _refuse_doomed(plans: Sequence[ReleasePlan | None], n: int, d: int, epsilon: float) -> None:
    """Refuse, before any noise, a fit whose every release would withhold every column
    (:meth:`~dplong.privacy.budget.ReleasePlan.doomed`): it would spend its budget on nothing.
    A budget refusal, so the message names the ε at which the fit is released
    (:func:`~dplong.planning.advised`). A fit with one release that can succeed goes on."""
    if plans and all(plan is not None and plan.doomed() for plan in plans):
        refusal = InsufficientUsersError(
            f"epsilon={epsilon:.3g} is too small for {d} column(s) with n={n}: the private "
            "midpoint or scale of every column would miss the data more likely than not, so "
            "every estimate would be withheld: fewer columns, a stated scale or a larger "
            "epsilon would help"
        )
        refusal.budget_refusal = True
        raise refusal


def _block_bound(block: Block, options: ReleaseOptions) -> NDArray[np.float64]:
    """The local model's public bound B per column of a block: from the block's own public
    bounds if it has them, else the fit's ``bound``."""
    assert options.bound is not None
    if block.bounds is not None:
        lower, upper = block.bounds
        return np.maximum(np.abs(lower), np.abs(upper))
    bound = np.empty(len(block.names))
    bound[:] = options.bound
    return bound


def combined_ledger(releases: Sequence[Release], options: ReleaseOptions) -> PrivacyLedger:
    """The fit's ledger over its releases (:func:`~dplong.privacy.budget.fit_ledger`)."""
    model = "local" if options.local else "central"
    return fit_ledger([release.privacy for release in releases], options.delta, model)


def panel_results(
    releases: Sequence[Release],
    *,
    model: ModelSpec,
    formula: str,
    nobs_users: int,
    basis: tuple[str, str],
    options: ReleaseOptions,
    assumptions: tuple[str, ...],
    results_class: type[PanelResults] = PanelResults,
    ran: Sequence[Release] | None = None,
    **extra: Any,
) -> PanelResults:
    """The immutable results of a fit's releases, from released numbers and public facts only.

    ``ran`` is every release of the fit in the order it ran, when some are not parameters
    (e.g. a preliminary location) or the parameters come in another order: the ledger (the
    one the accountant was charged) and the reliability notes come from them.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.base import panel_results
    >>> from dplong.privacy.engine import release_means
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.results import ModelSpec
    >>> x = np.random.default_rng(0).normal(1.0, 1.0, size=(2000, 1))
    >>> options = ReleaseOptions.check(2000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> release = release_means(x, names=("x",), options=options, rng=np.random.default_rng(1))
    >>> res = panel_results([release], model=ModelSpec("Mean", "mean of x", 2000, ("x",)),
    ...                     formula="mean of x", nobs_users=2000,
    ...                     basis=("Theorem 4.2", "Theorem 6.4"), options=options,
    ...                     assumptions=())
    >>> res.params.index.tolist(), res.basis
    (['x'], 'Theorem 4.2')
    """
    releases = [_unseen_withheld(r) for r in releases]
    unseen = {
        name: "unseen"
        for r in releases
        if r.unseen is not None
        for name, hidden in zip(r.names, r.unseen, strict=True)
        if hidden
    }
    extra["withheld_why"] = {**unseen, **extra.get("withheld_why", {})}
    names = [name for r in releases for name in r.names]
    index = pd.Index(names)

    def series(field: str, label: str) -> pd.Series:
        values = np.concatenate(
            [np.broadcast_to(getattr(r, field), (len(r.names),)) for r in releases]
        )
        column: pd.Series = pd.Series(values, index=index, name=label)
        return column

    everything = releases if ran is None else ran
    laws = {r.noise_kind for r in releases}
    counts = [pd.Series(r.users, index=_count_labels(r)) for r in releases]
    users = pd.concat(counts)
    users = users[~users.index.duplicated()]
    users.name = "users"
    return results_class(
        model=model,
        formula=formula,
        params=series("estimate", "params"),
        noise_scale=series("noise_scale", "noise scale"),
        noise_sd=series("noise_sd", "noise sd"),
        noise_law=laws.pop() if len(laws) == 1 else "laplace",
        sampling_sd=series("sampling_sd", "sampling sd"),
        bias=series("bias", "bias"),
        projection_interval=pd.DataFrame(
            np.concatenate([r.interval for r in releases]), index=index, columns=["lower", "upper"]
        ),
        failed=pd.Series(
            np.concatenate([r.failed_columns for r in releases]), index=index, name="failed"
        ),
        privacy=combined_ledger(everything, options),
        nobs_users=nobs_users,
        users=users,
        users_sd=float(releases[0].users_sd),
        variant=releases[0].variant,
        assumptions=assumptions,
        warnings=tuple(dict.fromkeys(note for r in everything for note in r.notes)),
        gamma=options.gamma,
        bad_events=series("bad_events", "bad events"),
        basis=basis[options.local],
        **extra,
    )


def _unseen_withheld(release: Release) -> Release:
    """A release's columns the engine took as 0 because its count saw no user off 0
    (``Release.unseen``), withheld: up to the count's reach of users off 0 could be missing,
    with values nothing bounds, so no interval reaches what they could add (40 of 2,000 users
    at 5, ε = 1: 0.000 ± 1e-152 for a mean of 0.1). The 0 stays in the release for the models
    that read it as "no user seen" (the within estimator's basis); the results show no number
    (post-processing of the released count)."""
    unseen = release.unseen
    if unseen is None or not unseen.any():
        return release
    return release.withhold(unseen)


def _count_labels(release: Release) -> list[str]:
    """What a release's private count(s) count: users with a statistic, per column if not one
    count, and the sum of their precision weights for a weighted release."""
    labels = ["users with a statistic"] if release.users.size == 1 else list(release.names)
    return [f"{label} (weighted)" for label in labels] if release.weighted else labels


def scale_per_column(scale: Any, d: int, dependence_scale: Any) -> NDArray[np.float64] | None:
    """A number or per-parameter array as is; a dependence model through ``dependence_scale``;
    ``"estimate"`` gives None (estimated privately at release)."""
    if isinstance(scale, str) and scale == "estimate":
        return None
    if isinstance(scale, DependenceModel):
        return np.broadcast_to(np.asarray(dependence_scale(scale), dtype=np.float64), (d,)).astype(
            np.float64
        )
    if scale is None or isinstance(scale, str):
        raise ParameterError(
            'scale must be "estimate" (the default: estimated privately), a number (variance '
            "proxy of one user's statistic), one per parameter, or a dplong.dependence model; "
            f"got {scale!r}"
        )
    return per_column(scale, d, "scale")


def sound_plan(
    n: int, d: int, options: ReleaseOptions, share: float, *, stated: bool, weighted: bool = False
) -> bool:
    """Whether d columns released with ``share`` of the fit's budget plan without a refusal or
    a reliability note: a public fact (n, d, the budget and the options), so models may choose
    their budget split or defaults by it before any noise.

    Examples
    --------
    >>> from dplong.models.base import sound_plan
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> sound_plan(5000, 1, options, 0.5, stated=False), sound_plan(500, 1, options, 0.1,
    ...                                                             stated=False)
    (True, False)
    """
    try:
        budget = part(options, share)
        plan = ReleasePlan.make(
            n=n,
            d=d,
            epsilon=budget.epsilon,
            delta=budget.delta,
            stated_scale=stated,
            refine=options.refine,
            weighted=weighted,
        )
        plan.check()
    except DplongError:
        return False
    return not plan.notes


#: Default public cap ``T_cap`` on the rows that raise a user's precision weight (``max_rows``
#: of the weighted fits), chosen with ``benchmarks/within_and_weights.py``: a user with more
#: rows weighs as one with ``T_cap``; a larger cap makes every other weight, hence the weighted
#: count, smaller (more noise) for little gain at the usual variance ratios.
DEFAULT_MAX_ROWS = 10
#: The command line's help for ``max_rows`` (:mod:`dplong.models.command_line`).
MAX_ROWS_HELP = f"public cap on the rows that raise a user's weight (default {DEFAULT_MAX_ROWS})"


def check_max_rows(max_rows: Any, smallest: int = 1) -> int:
    """A public cap on the rows that raise a user's weight: an integer ``>= smallest``."""
    if (
        isinstance(max_rows, bool)
        or not isinstance(max_rows, int | np.integer)
        or max_rows < smallest
    ):
        raise ParameterError(
            f"max_rows (public cap on the rows that raise a user's weight) must be an integer "
            f">= {smallest}, got {max_rows!r}"
        )
    return int(max_rows)


def check_accountant(accountant: Any) -> None:
    """Refuse an ``accountant`` that is neither None nor a :class:`~dplong.Accountant`."""
    if accountant is not None and not isinstance(accountant, Accountant):
        raise ParameterError(
            f"accountant must be a dplong.Accountant, got {type(accountant).__name__}"
        )


def check_min_rows(min_rows: Any, needed_for: str) -> int:
    """A public lower bound on rows per user: a positive integer."""
    if isinstance(min_rows, bool) or not isinstance(min_rows, int | np.integer) or min_rows < 1:
        raise ParameterError(
            f"min_rows (a public lower bound on rows per user, a positive "
            f"integer) is needed to {needed_for}; got {min_rows!r}"
        )
    return int(min_rows)


def caught_notes(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    """The DplongWarnings recorded in ``caught``, each once, as notes for a fit's results;
    other warnings are raised again as they were.

    Examples
    --------
    >>> import warnings
    >>> from dplong.exceptions import DplongWarning
    >>> from dplong.models.base import caught_notes
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("the scale is unreliable", DplongWarning)
    ...     warnings.warn("the scale is unreliable", DplongWarning)
    >>> caught_notes(caught)
    ('the scale is unreliable',)
    """
    said: list[str] = []
    for caught_warning in caught:
        if issubclass(caught_warning.category, DplongWarning):
            said.append(str(caught_warning.message))
        else:
            warnings.warn_explicit(
                caught_warning.message,
                caught_warning.category,
                caught_warning.filename,
                caught_warning.lineno,
            )
    return tuple(dict.fromkeys(said))


def _with_warnings(release: Release, caught: list[warnings.WarningMessage]) -> Release:
    """``release`` with the DplongWarnings raised while it ran among its notes."""
    new = tuple(note for note in caught_notes(caught) if note not in release.notes)
    return dataclasses.replace(release, notes=release.notes + new) if new else release
