"""Plain user-level means of one or several columns: the release engine with the simplest
reduction (each user's average row, Def 5.1).

The reduction is in :mod:`~dplong.models.mean_values`, the ``by=`` grouping in
:mod:`~dplong.models.mean_levels`, the checks of the public options in
:mod:`~dplong.models.mean_options` and the assembly of the results in
:mod:`~dplong.models.mean_results`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dplong._grouping import factorize_groups
from dplong._validation import (
    RandomState,
    check_choice,
    check_delta,
    check_epsilon,
    checked_call,
    not_columns,
)
from dplong.dask_frames import (
    column_name,
    design_spec,
    is_dask,
    missing_ids,
    outcome_rows,
    readable_ids,
)
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import (
    DesignSpec,
    GroupsLike,
    check_groups,
    check_index,
    check_unique_columns,
    column_or_array,
    warn_dropped,
)
from dplong.formula.levels import rows_told
from dplong.formula.terms import analyst_env
from dplong.formula.users import UNHASHABLE_IDS
from dplong.models.base import PanelModel
from dplong.models.blocks import Block, FitRequest, Statistics
from dplong.models.command_line import (
    BOUNDS_OPTION,
    TAIL_OPTIONS,
    CommandLineModel,
    Option,
    register,
)
from dplong.models.mean_levels import (
    _by_level,
    _every_level,
    _first_level_only,
    _grouping,
    _level_labels,
    _rows_at_levels,
    _split_column,
    check_by_column,
)
from dplong.models.mean_options import (
    _check_by_constant,
    _stated_bounds,
    _stated_scale,
    _support_and_tail,
)
from dplong.models.mean_results import _mean_results
from dplong.models.mean_values import (
    _dask_user_means,
    _left_out,
    _matrix,
    _user_means,
    _warn_left_out,
    dask_users,
    users_held,
)
from dplong.models.option_checks import check_accountant
from dplong.models.release_blocks import run_blocks
from dplong.planning import Planned, advised
from dplong.privacy.accounting import Accountant, PrivacyLedger
from dplong.privacy.budget import afford, ask, charge, keyed_ledger, keyed_share, part
from dplong.privacy.engine import Release
from dplong.privacy.options import PRIVACY_MODELS, Focus, PrivacyModel, Variant
from dplong.privacy.radius import DEFAULT_GAMMA, OFFERS, AssumedTail, Moment, Offer, Tail
from dplong.results import ModelSpec, PanelResults

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame
    from dask.dataframe import Series as DaskSeries

__all__ = ["ColumnMean", "winsorized_mean"]


#: The options of :func:`winsorized_mean` through which its analyst vouches for the users'
#: tail, which its warnings name (:attr:`~dplong.privacy.rules.Rules.offers`).
OFFERED: frozenset[Offer] = frozenset(("lower", "tail", "scale", "bounds"))


@checked_call
@advised
def winsorized_mean(
    values: ArrayLike,
    *,
    epsilon: float,
    delta: float | None = None,
    groups: ArrayLike | None = None,
    scale: float | ArrayLike | str = "estimate",
    tau: float | ArrayLike | None = None,
    focus: Focus = None,
    privacy: PrivacyModel = "central",
    bound: float | ArrayLike | None = None,
    variant: Variant = "default",
    gamma: float = DEFAULT_GAMMA,
    refine: bool = True,
    lower: float | ArrayLike | None = None,
    tail: Tail | Moment | AssumedTail | None = None,
    bounds: tuple[float, float] | Mapping[str, tuple[float, float]] | str | None = None,
    names: Sequence[str] | None = None,
    by: ArrayLike | str | None = None,
    levels: Sequence[Any] | Mapping[str, Sequence[Any]] | None = None,
    by_constant: bool = False,
    random_state: RandomState = None,
    rng: RandomState = None,
    accountant: Accountant | None = None,
) -> PanelResults:
    """User-level differentially private mean of one or several columns, overall or per
    declared level of a public grouping.

    Parameters
    ----------
    values : array_like, Series or DataFrame, shape (rows,) or (rows, d)
        One value (or row) per user, or many rows per user together with ``groups``. NaN,
        ±inf and ``pd.NA`` are missing values (as in the formula layer): a user whose values
        in a column are all missing has no statistic there and is left out of that column's
        mean (the number who have one is counted privately). Column names are kept from a
        DataFrame or a named Series. A Dask DataFrame or Series is reduced where it lies,
        partition by partition, to per-user sums (:mod:`dplong.dask_frames`), with the same
        results.
    epsilon : float
        Total privacy budget ε > 0 of this release, over all columns.
    delta : float, optional
        Total δ ∈ (0, 1). Central default ``1/n**2``; local default ``None`` (pure ε-LDP).
    groups : array_like or str, optional
        User id of every row: rows are first averaged per user (Def 5.1), so the release is
        user-level DP and n is the number of distinct ids. A row with a missing id belongs to
        no user and is left out (as in the formula layer). With Dask ``values``, a column of
        the same Dask frame (e.g. ``frame["id"]``). The name of a column of a DataFrame
        ``values`` (Dask's too) takes its ids from that column, which is then not averaged.
    scale : "estimate", float or array_like
        Variance proxy ρ of one user's value in each column (the variance for Gaussian data).
        Default ``"estimate"``: the spread is estimated privately, in one stage for every
        column (:mod:`dplong.privacy.engine`), so ε is all a release needs.
    tau : float or array_like, optional
        The paper's concentration radius τ per column, given instead of ``scale`` (it implies
        the proxy ``ρ = τ² / (2 log(2dn/γ))`` of Lemma 5.2).
    focus : list of str or dict, optional
        Columns whose accuracy matters most (see :meth:`dplong.LongitudinalOLS.fit`).
    privacy : {"central", "local"}
        Trusted curator, or each user privatising their value (needs ``bound``).
    bound : float or array_like, optional
        Public bound B on every user's statistic, ``|x_u| <= B``, per column (at most
        ``1e100``): each user's value is clipped to ``±B`` before they privatise it, so one
        beyond it pulls the mean toward ``±B``. Required for ``privacy="local"``, and refused
        with central privacy (which would ignore it).
    variant : {"default", "theory"}
        The planned pipeline (default), or the paper's Algorithms 3-5 as published (with a
        stated scale, or the CoinPress plug-in of §7.1.5 when it is estimated).
    gamma : float
        Failure probability γ behind radii and error bounds.
    refine : bool
        Allow the plan to spend a share on a rough mean that re-centres the final interval.
    lower : float or array_like, optional
        Public lower end of each column's support (0 for spending, counts, durations): a
        projection interval that would reach below it is cut there where the tail stage
        measured a heavy tail (the same upper clip at less width, so less noise), and moved
        up, keeping its width, elsewhere (the long right tail clipped less). A user value
        below it is clipped as any value outside the interval. Default engine only.
    tail : str, Moment or AssumedTail, optional
        Tail model of the users' values behind the radius and the clipping bias bound:
        ``"gaussian"``, ``"sub-gaussian"``, ``"exponential"`` (skewed values) or
        ``"chi-square"``; by default the engine chooses (the exponential where the released
        rough mean lies far from the midpoint) and looks privately for a heavier tail. A named
        kind is taken as stated; :class:`dplong.AssumedTail` makes it an assumption that the
        tail stage checks with its private count where ``n ε`` affords one.
        :class:`dplong.Moment` states a bound on the k-th central moment of a user's value
        (``E|x_u - mean|^k <= bound``, one or one per column): the clip and the bias bound
        are then the person-level paper's under that moment, and no tail is looked for.
        Default engine only.
    bounds : (low, high) or mapping of str to (low, high), optional
        Public range holding every user's value, one pair for every column or one per column
        by name (a 0/1 outcome: ``(0, 1)``; the command line's ``"COL=LO,HI;..."``): nothing
        is spent on finding the data (a count, a rough mean to read the sum from and the mean
        take the whole budget), and a value outside is clipped to the range (as by the peers'
        ``bounds``). A user's mean lies within their rows' range, so the rows' public range
        will do. No ``scale``,
        ``tau``, ``lower`` or ``tail`` with it; default engine only (central,
        ``variant="default"``).
    names : sequence of str, optional
        Column names (default: from a DataFrame or Series, else ``x`` or ``x0, x1, ...``).
    by : array_like or str, optional
        A grouping key of every row (treatment arm, year, region), or the name of a column of
        a DataFrame ``values`` (then not averaged itself): one mean per declared level and
        column, each the mean over the users with rows at that level of their average row
        there. A user whose rows carry several levels (years) contributes to each, clipped
        in each (to one only with ``by_constant``); a row whose key is missing or not
        declared belongs to no level. Needs ``levels`` (or a pandas ``Categorical`` key, whose
        categories are its declared levels). With Dask ``values``, a column of the same Dask
        frame (its name, or the column): each partition spreads its rows over the levels.
    levels : sequence, or mapping of the grouping's name to a sequence
        The declared levels of ``by`` (public: the study design's arms or years, never read
        from the rows), in the order of the results; ``{"year": [...]}`` as the formula
        models take them. Which users have rows at a level, and how many, is private: the
        results show private counts only.
    by_constant : bool
        Declare the ``by`` key constant within each user (sex, region, a trial's arm): each
        user is then at one level only, and the levels are released on their own, each with
        half of ε and δ (parallel composition, see Notes) instead of sharing them. A public
        declaration, never checked on the rows: a user whose rows carry several declared
        levels is put at the first of them in the order of ``levels``, with the rows there
        (the others are left out). Default engine only (central, ``variant="default"``), no
        ``focus``.
    random_state, rng : None, int or numpy.random.Generator
        ``None`` (fresh OS entropy) for a release; a seed only for reproducible research.
        ``rng`` is numpy's SPEC 7 name for the same argument: give at most one of the two.
    accountant : Accountant, optional
        Budget to charge; the release is refused before any noise if it does not fit.

    Returns
    -------
    PanelResults or GroupedResults
        ``params`` (one per column), ``bse``, ``conf_int``, ``pvalues``, ``error_bound``,
        ``summary()`` and the ledger ``privacy``, as for the models. With ``by``, a
        :class:`~dplong.GroupedResults` whose parameters are named ``column[by=level]``
        (level by level) and whose :meth:`~dplong.GroupedResults.summary_frame` gives one
        row per level.

    Notes
    -----
    The means of all levels are one release over the n users (a user without rows at a level
    has no statistic there), so the budget ε is shared by the levels' columns as by any
    columns (sequential composition). That holds whether or not a user's rows carry one level
    or several. Per-column options (``scale``, ``tau``, ``lower``, ``bound``) are given per
    averaged column and hold at every level.

    With ``by_constant=True`` every user is at one level, so each level's release reads
    different users (parallel composition). The key is private, though: the neighbouring data
    set replaces one user's rows, key included, and a user who moves from one level to another
    changes both levels' releases. Each level therefore gets half the budget (all of it when
    only one level is declared), and the ledger totals the two largest levels' costs
    (:func:`~dplong.privacy.budget.keyed_ledger`): at most ε and δ. With three levels or more,
    each gets more than the ``1/levels`` a shared release would give it.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dplong
    >>> rng = np.random.default_rng(0)
    >>> visits = pd.DataFrame({"id": np.repeat(np.arange(1_000), 10),
    ...                        "sbp": rng.normal(120.0, 15.0, 10_000)})
    >>> res = dplong.winsorized_mean(visits["sbp"], groups=visits["id"], epsilon=1.0,
    ...                              random_state=1)
    >>> res.params.index.tolist(), bool(abs(res.params["sbp"] - 120.0) < 1.5)
    (['sbp'], True)
    >>> res.privacy.epsilon <= 1.0, res.nobs_users
    (True, 1000)

    The mean per declared arm of a trial (each user in one arm):

    >>> visits["arm"] = np.repeat(rng.integers(0, 2, 1_000), 10)
    >>> res = dplong.winsorized_mean(visits[["sbp", "arm"]], groups=visits["id"], by="arm",
    ...                              levels=[0, 1], epsilon=1.0, random_state=1)
    >>> res.summary_frame().index.tolist(), list(res.params.index)
    ([0, 1], ['sbp[arm=0]', 'sbp[arm=1]'])

    The arm is fixed per person: declared so, three arms each get half the budget.

    >>> visits["arm"] = np.repeat(rng.integers(0, 3, 1_000), 10)
    >>> res = dplong.winsorized_mean(visits[["sbp", "arm"]], groups=visits["id"], by="arm",
    ...                              levels=[0, 1, 2], by_constant=True, epsilon=2.0,
    ...                              random_state=1)
    >>> res.privacy.epsilon <= 2.0, res.privacy.composition
    (True, 'parallel over the levels of a key (two levels touched)')
    """
    _check_by_constant(by_constant, by, privacy=privacy, variant=variant, focus=focus)
    check_index(groups, values, "groups", "values")  # a Series is paired by its index
    check_index(by, values, "by", "values")
    check_by_column(by, groups)
    if isinstance(groups, str):  # a column of values, as by= may name
        values, groups = _split_column(values, groups, "groups", "the user id", DataError)
    grouping = None
    if by is not None or levels is not None:  # public facts: checked before any noise
        values, grouping = _grouping(values, by, levels)
    if is_dask(values):  # its options first: the reduction is a pass over every file
        check_choice(privacy, "privacy", PRIVACY_MODELS)
        check_accountant(accountant)
        spend = (check_epsilon(epsilon), 0.0 if delta is None else check_delta(delta))
        ask(accountant, *spend)  # the ε it cannot afford (δ's default needs the users)
        matrix, columns = _dask_user_means(values, groups, names, grouping, by_constant)
        labels = columns if grouping is None else _level_labels(columns, grouping)
    else:
        matrix, labels = _matrix(values, names)
        columns = labels
        codes, n = (None, 0) if groups is None else factorize_groups(groups, matrix.shape[0])
        _warn_left_out(_left_out(matrix, codes), labels)
        if grouping is not None:
            matrix, labels = _by_level(matrix, labels, grouping)
        if codes is not None:
            matrix = _user_means(matrix, codes, n)
            if grouping is not None and by_constant:
                rows = _rows_at_levels(grouping[1], codes, n, len(grouping[2]))
                matrix = _first_level_only(matrix, rows)
    n, d = matrix.shape
    keyed = grouping is not None and by_constant
    repeat = 1 if grouping is None or keyed else len(grouping[2])
    if repeat > 1:  # per-column options hold at every level
        scale, tau, lower, bound = (
            _every_level(v, len(columns), repeat) for v in (scale, tau, lower, bound)
        )
    request = PanelModel._request(
        n,
        d,
        epsilon=epsilon,
        delta=delta,
        privacy=privacy,
        bound=bound,
        variant=variant,
        gamma=gamma,
        refine=refine,
        focus=focus,
        random_state=random_state,
        rng=rng,
        accountant=accountant,
    )
    width = len(columns) if keyed else d  # the columns of one release
    proxy = _stated_scale(scale, tau, n, width, request.options.gamma)
    support, stated_tail = _support_and_tail(lower, tail, request.options, width)
    ranges = _stated_bounds(
        bounds,
        columns,
        request.options,
        others={
            "scale (or tau)": proxy is not None,
            "lower": lower is not None,
            "tail": tail is not None,
        },
    )
    if ranges is not None and width > len(columns):  # every level's columns alike
        ranges = (np.tile(ranges[0], repeat), np.tile(ranges[1], repeat))

    def block(names: tuple[str, ...], statistics: NDArray[np.float64]) -> Block:
        return Block(
            names,
            1.0,
            lambda _: Statistics(statistics, scale=proxy, lower=support),
            stated_scale=proxy is not None,
            complete_rows=False,
            bounds=ranges,
            tail=stated_tail,
            partial_users=grouping is not None,
            supported=support is not None,
            # winsorized_mean's options; a support's end no longer, once declared
            offers=OFFERS if support is not None else OFFERED,
        )

    ledger: PrivacyLedger | None = None
    if keyed:
        releases, ledger = _keyed_releases(matrix, labels, width, block, request)
    else:
        releases = run_blocks([block(labels, matrix)], n=n, request=request)
    return _mean_results(
        releases,
        n=n,
        columns=columns,
        labels=labels,
        grouping=grouping,
        ledger=ledger,
        options=request.options,
        proxy=proxy,
        tail=stated_tail,
        support=support,
        ranges=ranges,
    )


def _keyed_releases(
    matrix: NDArray[np.float64],
    labels: tuple[str, ...],
    width: int,
    block: Callable[[tuple[str, ...], NDArray[np.float64]], Block],
    request: FitRequest,
) -> tuple[tuple[Release, ...], PrivacyLedger]:
    """Each level's columns released on their own with its :func:`keyed_share` of the budget,
    and the fit's ledger by parallel composition (:func:`keyed_ledger`).

    Every level's plan is the same function of public facts (n, its columns, its budget), so a
    refusal comes from the first level's, before any noise; the accountant is checked for the
    whole fit first and charged once with the parallel ledger."""
    options = request.options
    levels = len(labels) // width
    afford(request.accountant, options.epsilon, options.delta)
    share = keyed_share(levels)
    level = dataclasses.replace(request, options=part(options, share), accountant=None, focus=None)
    releases: list[Release] = []
    for k in range(levels):  # a loop over the declared levels (public), not over users
        columns = slice(k * width, (k + 1) * width)
        try:
            releases += run_blocks(
                [block(labels[columns], matrix[:, columns])], n=matrix.shape[0], request=level
            )
        except Planned as planned:  # planning: every level's plan is the first's
            every = planned.fit_plan.blocks
            # each level's share of the whole fit's budget, as its parallel ledger totals it
            blocks = tuple(
                dataclasses.replace(
                    b,
                    names=labels[j * width : (j + 1) * width],
                    share=b.share * share,
                )
                for j in range(levels)
                for b in every
            )
            whole = dataclasses.replace(planned.fit_plan, blocks=blocks, options=options)
            raise Planned(whole) from None
    ledger = keyed_ledger([release.privacy for release in releases], "central")
    charge(request.accountant, ledger, options.epsilon, options.delta)
    return tuple(releases), ledger


class ColumnMean:
    """``"column ~ 1"``: :func:`winsorized_mean` of one column's per-user means, as a formula
    model (the command line's ``--model mean``), with results like the models'.

    Examples
    --------
    >>> import dplong
    >>> from dplong.models.mean import ColumnMean
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = ColumnMean.from_formula("lwage ~ 1", wages, groups="nr")
    >>> res = model.fit(epsilon=1.0, random_state=0)
    >>> model.nobs_users, res.formula, bool(abs(res.params["lwage"] - 1.65) < 0.1)
    (545, 'lwage ~ 1', True)

    One mean per declared year (``by``; the command line's ``--by year --levels year=...``):

    >>> model = ColumnMean.from_formula("lwage ~ 1", wages, groups="nr", by="year",
    ...                                 levels={"year": [1980, 1987]})
    >>> model.fit(epsilon=2.0, random_state=0).summary_frame().index.tolist()
    [1980, 1987]
    """

    model_name: ClassVar[str] = "Mean"
    #: Public support and tail of the column's user means (:func:`winsorized_mean`'s ``lower``
    #: and ``tail``): a subclass for a kind of outcome gives them. The support is a fact of the
    #: outcome (counts are not negative); the tail an assumption, which the default engine's
    #: tail count checks (:class:`~dplong.privacy.radius.AssumedTail`). Both shape the default
    #: engine's release only; ``lower=`` or ``tail=`` given to :meth:`fit` replace them.
    lower: ClassVar[float | None] = None
    tail: ClassVar[Tail | None] = None

    def __init__(
        self,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        groups: GroupsLike,
        by: str | None = None,
        levels: Sequence[Any] | Mapping[str, Sequence[Any]] | None = None,
        bounds: tuple[float, float] | Mapping[str, tuple[float, float]] | str | None = None,
    ) -> None:
        if not (isinstance(data, pd.DataFrame) or (is_dask(data) and data.ndim == 2)):
            kind = f"a Dask {type(data).__name__}" if is_dask(data) else type(data).__name__
            raise DataError(f"data must be a pandas or Dask DataFrame, got {kind}")
        lhs, _, rhs = formula.partition("~")
        self.column = lhs.strip()
        if rhs.strip() != "1":
            raise FormulaError(
                f"{type(self).__name__} takes a formula 'column ~ 1'; got {formula!r}"
            )
        if self.column.isidentifier() and self.column not in data.columns:
            said = f"{self.column!r} (left of '~')"
            raise FormulaError(not_columns(said, [self.column], data.columns, "data"))
        self.formula = formula
        check_unique_columns(data.columns, (self.column, groups, by))
        check_by_column(by, groups, (self.column,))
        # by='s levels as a list or {by: [...]}, as winsorized_mean takes them
        if levels and (by is None or (isinstance(levels, Mapping) and set(levels) != {by})):
            raise ParameterError(
                f"{type(self).__name__} reads declared levels of its by= grouping only; got "
                f"levels of {sorted(levels)} with by={by!r}"
            )
        if by is not None and by not in data.columns:
            raise ParameterError(not_columns(f"by={by!r}", [by], data.columns, "data"))
        if by is not None and not levels and not isinstance(data[by].dtype, pd.CategoricalDtype):
            raise ParameterError(
                f"by={by!r} needs its declared levels (public, never read from the rows): "
                f"levels={{{by!r}: [...]}}, on the command line --levels {by}=A,B,..."
            )
        self._by = None if by is None else data[by]
        self._levels = None if not levels or by is None else levels  # checked in the fit
        self._bounds = bounds
        # n counts the distinct ids, a row with a missing id belonging to no user (as in fit)
        if is_dask(data):  # columns of the frame, reduced where they lie by winsorized_mean
            self._values = _outcome(formula, data, groups)
            user = column_name(data, groups, "groups")
            self._groups = readable_ids(data, user)[user]
            # the users as the fit's reduction codes them, which its fit must find again
            self._users: NDArray[Any] | None
            try:
                self._users, rows, kept_rows = dask_users(self._values, self._groups)
            except TypeError:  # lists as ids (pandas' "unhashable type")
                raise DataError(UNHASHABLE_IDS) from None
            no_ids = int(missing_ids(self._groups).sum().compute())
            self.nobs_users = len(self._users)
            warn_dropped(rows + no_ids, kept_rows, no_ids)
        else:
            self._values = _outcome(formula, data, groups)  # a Series: refusals name the column
            self._groups = column_or_array(groups, data, "groups")
            self._users = None  # in memory the model holds its own columns
            codes, self.nobs_users = factorize_groups(self._groups, len(data))
            # the data holder hears of the rows no user's mean reads, as from_formula says it
            no_id = codes < 0
            kept = ~no_id & self._values.notna().to_numpy()
            warn_dropped(len(data), int(kept.sum()), int(no_id.sum()))

    @classmethod
    @checked_call
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        groups: GroupsLike,
        by: str | None = None,
        levels: Sequence[Any] | Mapping[str, Sequence[Any]] | None = None,
        bounds: tuple[float, float] | Mapping[str, tuple[float, float]] | str | None = None,
    ) -> Any:
        """The model of ``"column ~ 1"`` with user ids in the column ``groups`` (or an array of
        one id per row, in memory only); with ``by``, one mean per level of that column,
        declared in ``levels`` as ``[...]`` or ``{by: [...]}`` (or by its pandas ``Categorical``
        dtype);
        ``bounds`` the column's public range (:func:`winsorized_mean`), a pair or
        ``{column: (low, high)}``: a fact of the data, as the pooled models take theirs."""
        return cls(formula, data, groups=groups, by=by, levels=levels, bounds=bounds)

    def __repr__(self) -> str:
        return f"{self.model_name}({self.formula!r}, n_users={self.nobs_users})"

    @checked_call
    def fit(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        scale: float | ArrayLike | str = "estimate",
        tau: float | ArrayLike | None = None,
        focus: Focus = None,
        privacy: PrivacyModel = "central",
        bound: float | ArrayLike | None = None,
        variant: Variant = "default",
        gamma: float = DEFAULT_GAMMA,
        refine: bool = True,
        lower: float | ArrayLike | None = None,
        tail: Tail | Moment | AssumedTail | None = None,
        by_constant: bool = False,
        random_state: RandomState = None,
        rng: RandomState = None,
        accountant: Accountant | None = None,
    ) -> PanelResults:
        """:func:`winsorized_mean` of the column, with its options and defaults; the data's
        (``values``, ``groups``, ``names``, ``by``, ``levels``) are the model's.

        ``lower`` and ``tail`` left at None are the model's own (:attr:`lower`, :attr:`tail`:
        a count's support and tail for :class:`~dplong.PoissonMean`), where the default
        engine runs (central, ``variant="default"``); given, they replace them.
        """
        # the model's support and tail, unless stated ranges leave nothing to search
        default_engine = privacy == "central" and variant == "default" and self._bounds is None
        if default_engine:
            lower = self.lower if lower is None else lower
            tail = (None if self.tail is None else AssumedTail(self.tail)) if tail is None else tail
        # the rows left out were told as the model was built, of its users
        with rows_told(), users_held(self._users):
            results = winsorized_mean(
                self._values,
                epsilon=epsilon,
                delta=delta,
                groups=self._groups,
                scale=scale,
                tau=tau,
                focus=focus,
                privacy=privacy,
                bound=bound,
                variant=variant,
                gamma=gamma,
                refine=refine,
                lower=lower,
                tail=tail,
                bounds=self._bounds,
                names=[self.column],
                by=self._by,
                levels=self._levels,
                by_constant=by_constant,
                random_state=random_state,
                rng=rng,
                accountant=accountant,
            )
        spec = ModelSpec(self.model_name, self.formula, self.nobs_users, (self.column,), type(self))
        return dataclasses.replace(results, model=spec, formula=self.formula)


def _outcome(
    formula: str, data: pd.DataFrame | DaskFrame, groups: GroupsLike
) -> pd.Series | DaskSeries:
    """The column left of ``~``, or the expression there evaluated row by row under the
    formula layer's checks (``np.log1p(meddol) ~ 1``); ``groups`` may name none it reads."""
    column = formula.partition("~")[0].strip()
    if column.isidentifier():
        check_groups(groups, (column,))
        return data[column]
    env = analyst_env()
    if is_dask(data):
        frame = design_spec(formula, data, levels=None, eval_env=env)
        check_groups(groups, frame.spec.inputs)
        return outcome_rows(data, frame)
    spec = DesignSpec.from_formula(formula, data, eval_env=env)
    check_groups(groups, spec.inputs)
    y, _, missing, _ = spec.evaluate(data)
    return pd.Series(np.where(missing, np.nan, y), index=data.index, name=column)


register(
    CommandLineModel(
        "mean",
        ColumnMean.from_formula,
        "winsorized_mean: mean of per-user means of a column, 'y ~ 1'",
        options=(
            Option(
                "by",
                "text",
                "COLUMN",
                "one mean per declared level of this public grouping column (declare them "
                "with --levels COLUMN=A,B,...)",
                stage="model",
            ),
            Option(
                "by_constant",
                "flag",
                "",
                "declare the --by column constant within each user: every level gets half of "
                "epsilon (parallel composition) instead of sharing it",
            ),
            Option(
                "lower",
                "float",
                "L",
                "public lower end of the support of a user's mean (0 for spending, counts, "
                "durations): the clip stops there instead of reaching below every user",
            ),
            *TAIL_OPTIONS,
            dataclasses.replace(
                BOUNDS_OPTION,
                help="public range of a user's mean, COL=LO,HI (a 0/1 outcome: y=0,1): nothing "
                "is spent on finding the data",
            ),
        ),
    )
)
