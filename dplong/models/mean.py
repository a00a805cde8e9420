"""Plain user-level means of one or several columns: the release engine with the simplest
reduction (each user's average row, Def 5.1)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
import patsy
from numpy.typing import ArrayLike, NDArray

from dplong._grouping import factorize_groups
from dplong._validation import RandomState, per_column
from dplong.dask_frames import design_spec, is_dask, outcome_rows, reduce_users, require_dask
from dplong.exceptions import DataError, FormulaError, ParameterError
from dplong.formula import DesignSpec
from dplong.models.base import (
    Block,
    FitRequest,
    PanelModel,
    Statistics,
    panel_results,
    run_blocks,
)
from dplong.models.command_line import TAIL_OPTIONS, CommandLineModel, Option, register
from dplong.planning import advised
from dplong.privacy.accounting import Accountant, PrivacyLedger
from dplong.privacy.budget import afford, charge, keyed_ledger, keyed_share, part
from dplong.privacy.engine import Release
from dplong.privacy.options import Focus, PrivacyModel, Variant
from dplong.privacy.radius import DEFAULT_GAMMA, Moment, Tail, check_tail
from dplong.privacy.winsorized import column_names
from dplong.results import GroupedResults, ModelSpec, PanelResults, grouped_label

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame
    from dask.dataframe import Series as DaskSeries

__all__ = ["ColumnMean", "winsorized_mean"]


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
    tail: Tail | Moment | None = None,
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
    groups : array_like, optional
        User id of every row: rows are first averaged per user (Def 5.1), so the release is
        user-level DP and n is the number of distinct ids. A row with a missing id belongs to
        no user and is left out (as in the formula layer). With Dask ``values``, a column of
        the same Dask frame (e.g. ``frame["id"]``).
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
        Public bound B with ``|mean| <= B`` per column (at most ``1e100``); required for
        ``privacy="local"``, and refused with central privacy (which would ignore it).
    variant : {"default", "theory"}
        The planned pipeline (default), or the paper's Algorithms 3-5 as published (with a
        stated scale, or the CoinPress plug-in of §7.1.5 when it is estimated).
    gamma : float
        Failure probability γ behind radii and error bounds.
    refine : bool
        Allow the plan to spend a share on a rough mean that re-centres the final interval.
    lower : float or array_like, optional
        Public lower end of each column's support (0 for spending, counts, durations): a
        projection interval that would reach below it is moved up, keeping its width, so the
        long right tail is clipped less. A user value below it is clipped as any value outside
        the interval. Default engine only.
    tail : {"gaussian", "sub-gaussian", "exponential", "chi-square"} or Moment, optional
        Tail model of the users' values behind the radius and the clipping bias bound
        (``"exponential"`` for skewed values); by default the engine chooses (the exponential
        where the released rough mean lies far from the midpoint) and looks privately for a
        heavier tail. :class:`dplong.Moment` states a bound on the k-th central moment of a
        user's value (``E|x_u - mean|^k <= bound``, one or one per column): the clip and the
        bias bound are then the person-level paper's under that moment, and no tail is looked
        for. Default engine only.
    names : sequence of str, optional
        Column names (default: from a DataFrame or Series, else ``x`` or ``x0, x1, ...``).
    by : array_like or str, optional
        A grouping key of every row (treatment arm, year, region), or the name of a column of
        a DataFrame ``values`` (then not averaged itself): one mean per declared level and
        column, each the mean over the users with rows at that level of their average row
        there. A user whose rows carry several levels (years) contributes to each, clipped
        in each (to one only with ``by_constant``); a row whose key is missing or not
        declared belongs to no level. Needs ``levels`` (or a pandas ``Categorical`` key, whose
        categories are its declared levels); in-memory values only (not Dask).
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
    grouping = None
    if not isinstance(by_constant, bool):
        raise ParameterError(f"by_constant must be True or False, got {by_constant!r}")
    if by_constant and by is None:
        raise ParameterError(
            "by_constant=True declares the by= key constant within users: give by="
        )
    if by_constant and (privacy != "central" or variant != "default" or focus is not None):
        raise ParameterError(
            "by_constant=True releases each level on its own with the default engine "
            '(variant="default", privacy="central") and takes no focus'
        )
    if by is not None or levels is not None:  # public facts: checked before any noise
        values, grouping = _grouping(values, by, levels)
    if is_dask(values):
        matrix, labels = _dask_user_means(values, groups, names)
        columns = labels
    else:
        matrix, labels = _matrix(values, names)
        columns = labels
        codes, n = (None, 0) if groups is None else factorize_groups(groups, matrix.shape[0])
        if grouping is not None:
            if by_constant and codes is not None:
                grouping = _one_level_per_user(grouping, codes, n)
            matrix, labels = _by_level(matrix, labels, grouping)
        if codes is not None:
            matrix = _user_means(matrix, codes, n)
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
    options = request.options
    if (lower is not None or tail is not None) and (options.local or options.variant != "default"):
        raise ParameterError(
            'lower and tail shape the default engine\'s release (variant="default", '
            'privacy="central"); the paper\'s algorithms take neither'
        )
    stated_tail = check_tail(tail, width, default_engine=True)
    support = None if lower is None else per_column(lower, width, "lower", positive=False)

    def block(names: tuple[str, ...], statistics: NDArray[np.float64]) -> Block:
        return Block(
            names,
            1.0,
            lambda _: Statistics(statistics, scale=proxy, lower=support),
            stated_scale=proxy is not None,
            complete_rows=False,
            tail=stated_tail,
            partial_users=grouping is not None,
        )

    if keyed:
        releases, ledger = _keyed_releases(matrix, labels, width, block, request)
    else:
        releases = run_blocks([block(labels, matrix)], n=n, request=request)
    scale_note = (
        "Scale estimated privately (the spread of the user values)."
        if proxy is None
        else f"Stated variance proxy of one user's value: {proxy.tolist()}."
    )
    estimand = (
        "Estimand: the mean of the users' own averages (Def 5.1); intervals include the "
        "clipping bias bound."
    )
    if grouping is not None:
        name, _, declared = grouping
        estimand = (
            f"Estimand: at each declared level of {name} ({len(declared)}), the mean over the "
            "users with rows there of their own averages there (Def 5.1); "
            + (
                "each user at one level (by_constant), each level released with "
                f"{'half' if keyed_share(len(declared)) < 1 else 'all'} of the budget "
                "(parallel composition). "
                if keyed
                else "the levels share the budget. "
            )
            + "Intervals include the clipping bias bound."
        )
    results = panel_results(
        releases,
        model=ModelSpec("Mean", "mean of " + ", ".join(columns), n, columns),
        formula="mean of " + ", ".join(labels if grouping is None else columns),
        nobs_users=n,
        basis=("Theorem 4.2 via Corollary 5.4", "Theorem 6.4 via Corollary 6.8"),
        options=request.options,
        assumptions=(estimand, scale_note)
        + ((stated_tail.assumption("x_u"),) if isinstance(stated_tail, Moment) else ()),
    )
    if grouping is None:
        return results
    name, _, declared = grouping
    kept = {f.name: getattr(results, f.name) for f in dataclasses.fields(results)}
    kept["formula"] = f"mean of {', '.join(columns)} by {name}"
    if keyed:  # one count per level's release, whatever its number of columns
        counts = [np.broadcast_to(r.users, (len(r.names),)) for r in releases]
        kept["users"] = pd.Series(np.concatenate(counts), index=list(labels), name="users")
        kept["privacy"] = ledger
    return GroupedResults(**kept, by=name, levels=declared, columns=columns)


#: A grouping: its name, the level of every row (-1: none) and the declared levels.
Grouping = tuple[str, NDArray[np.intp], tuple[Any, ...]]


def _grouping(
    values: ArrayLike, by: ArrayLike | str | None, levels: Any
) -> tuple[ArrayLike, Grouping]:
    """``values`` without a ``by`` column, and the grouping, checked on public facts only: the
    declared levels, the key's length and dtype (the rows' keys are only compared with them)."""
    if by is None:
        raise ParameterError("levels= declares the levels of a grouping: give it as by=")
    if is_dask(values) or is_dask(by):
        raise ParameterError("by= takes values in memory (pandas or numpy), not Dask frames")
    if isinstance(by, str):
        if not isinstance(values, pd.DataFrame) or by not in values.columns:
            raise ParameterError(
                f"by={by!r} names a column of values, which must then be a DataFrame holding "
                "it; or give the key of every row (an array or Series)"
            )
        name, keys, values = by, values[by], values.drop(columns=[by])
    else:
        name = str(getattr(by, "name", None) or "by")
        if np.ndim(by) != 1:
            raise DataError(f"by must have one key per row (1-D); got shape {np.shape(by)}")
        keys = by if isinstance(by, pd.Series) else pd.Series(np.asarray(by, dtype=object))
    if levels is None and isinstance(keys.dtype, pd.CategoricalDtype):
        levels = list(keys.cat.categories)  # declared by the dtype
    if levels is None:
        raise ParameterError(
            f"by={name!r} needs levels=, its declared values (public: the study design's, never "
            "read from the rows), or a pandas Categorical key whose categories declare them"
        )
    if isinstance(levels, Mapping):
        if list(levels) != [name]:
            raise ParameterError(
                f"levels must declare the grouping {name!r} only, e.g. levels={{{name!r}: "
                f"[...]}}; got the keys {list(levels)}"
            )
        levels = levels[name]
    if isinstance(levels, str | bytes) or not isinstance(levels, Sequence | np.ndarray):
        raise ParameterError(f"levels must be a list of the declared levels; got {levels!r}")
    declared = tuple(levels)
    index = pd.Index(declared)
    if not declared or not index.is_unique or index.hasnans:
        raise ParameterError(
            f"levels must be one or more distinct declared levels, none missing; got {declared!r}"
        )
    rows = len(values)  # type: ignore[arg-type]
    if len(keys) != rows:
        raise DataError(f"by must have one key per row: got shape {np.shape(keys)} for {rows} rows")
    codes = index.get_indexer(keys.astype(object)).astype(np.intp)
    return values, (name, codes, declared)


def _one_level_per_user(grouping: Grouping, codes: NDArray[np.intp], n: int) -> Grouping:
    """The grouping with every user at one level (``by_constant``): the first declared level,
    in the order of the levels, at which the user has a row; their rows at other levels belong
    to no level. A rule on each user's own rows, so a user still changes only their own
    statistic (at one level)."""
    name, levels, declared = grouping
    kept = (levels >= 0) & (codes >= 0)
    first = np.full(n, len(declared), dtype=np.intp)
    np.minimum.at(first, codes[kept], levels[kept])
    at_first = kept & (levels == first[np.where(codes >= 0, codes, 0)])
    return name, np.where(at_first, levels, -1).astype(np.intp), declared


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
    level = dataclasses.replace(
        request, options=part(options, keyed_share(levels)), accountant=None, focus=None
    )
    releases: list[Release] = []
    for k in range(levels):  # a loop over the declared levels (public), not over users
        columns = slice(k * width, (k + 1) * width)
        releases += run_blocks(
            [block(labels[columns], matrix[:, columns])], n=matrix.shape[0], request=level
        )
    ledger = keyed_ledger([release.privacy for release in releases], "central")
    charge(request.accountant, ledger, options.epsilon, options.delta)
    return tuple(releases), ledger


def _by_level(
    matrix: NDArray[np.float64], labels: tuple[str, ...], grouping: Grouping
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """The rows' values spread over the levels, level by level (rows x levels·d; NaN where a
    row is at another level or none), and the columns' names ``column[by=level]``."""
    name, codes, declared = grouping
    at = codes[:, None] == np.arange(len(declared))[None, :]  # rows x levels
    spread = np.where(at[:, :, None], matrix[:, None, :], np.nan)
    flat = spread.reshape(matrix.shape[0], len(declared) * matrix.shape[1])
    return flat, tuple(grouped_label(c, name, v) for v in declared for c in labels)


def _every_level(value: Any, d: int, levels: int) -> Any:
    """A per-column option given per averaged column, repeated for each level."""
    if value is None or isinstance(value, str) or np.ndim(value) != 1 or len(value) != d:
        return value
    return np.tile(np.asarray(value), levels)


def _matrix(
    values: ArrayLike, names: Sequence[str] | None
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Values as a float (rows, d) matrix (NaN: missing) and the column names."""
    found: list[str] | None = None
    if isinstance(values, pd.DataFrame):
        found = [str(c) for c in values.columns]
    elif isinstance(values, pd.Series) and values.name is not None:
        found = [str(values.name)]
    array = _floats(values)
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise DataError(f"values is empty (shape {array.shape})")
    labels = column_names(names if names is not None else found, array.shape[1])
    return array, labels


def _floats(values: ArrayLike) -> NDArray[np.float64]:
    """Values as a float (rows, d) matrix, NaN where missing (NaN, ±inf, ``pd.NA``); dates,
    durations, complex numbers and text are refused by dtype (a public fact), never converted."""
    kinds = (
        [(str(c), values[c].dtype) for c in values.columns]
        if isinstance(values, pd.DataFrame)
        else [
            (
                str(getattr(values, "name", None) or "values"),
                values.dtype if isinstance(values, pd.Series) else np.asarray(values).dtype,
            )
        ]
    )
    for label, dtype in kinds:
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
        if not numeric or pd.api.types.is_timedelta64_dtype(dtype):
            raise DataError(
                f"values must be numeric: column {label!r} has dtype {dtype}, not a real "
                "number; convert it explicitly (e.g. dates to years since a public origin)"
            )
    try:
        if isinstance(values, pd.DataFrame | pd.Series):
            array = values.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            "values must be numeric; could not convert them to floating point"
        ) from None
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise DataError(f"values must be 1-D or 2-D (rows x d), got {array.ndim} dimensions")
    return np.where(np.isinf(array), np.nan, array)  # ±inf is missing, as in the formula layer


def _user_means(
    values: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> NDArray[np.float64]:
    """Per-user column means over each user's non-missing rows (NaN: none), vectorised."""
    return _means_from_sums(_mean_sums(values, codes, n))


def _mean_sums(values: NDArray[np.float64], codes: NDArray[np.intp], n: int) -> NDArray[np.float64]:
    """Per-user sums of the non-missing values and their counts, column by column (n x 2d)."""
    present = ~np.isnan(values) & (codes >= 0)[:, None]  # code -1: a row of no user
    filled = np.where(present, values, 0.0)
    codes = np.where(codes >= 0, codes, 0)
    sums = [np.bincount(codes, weights=col, minlength=n) for col in filled.T]
    counts = [np.bincount(codes, weights=col, minlength=n) for col in present.T]
    return np.column_stack([*sums, *counts])


def _means_from_sums(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-user means from :func:`_mean_sums` (NaN where a user has no value)."""
    d = sums.shape[1] // 2
    counts = sums[:, d:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums[:, :d] / counts, np.nan)


def _dask_user_means(
    values: DaskFrame | DaskSeries, groups: Any, names: Sequence[str] | None
) -> tuple[NDArray[np.float64], tuple[str, ...]]:
    """Per-user means of Dask ``values`` (one row per user without ``groups``), and labels."""
    require_dask()
    frame = values.to_frame() if values.ndim == 1 else values
    if groups is None:  # every row is a user: the rows are the statistics
        return _matrix(frame.compute(), names)
    if not is_dask(groups) or groups.npartitions != frame.npartitions:
        raise DataError(
            "with Dask values, groups must be a column of the same Dask frame, e.g. "
            'groups=frame["id"]'
        )
    columns = list(frame.columns)
    user = "__dplong_groups__"
    means, ids = reduce_users(
        frame.assign(**{user: groups}),
        user,
        functools.partial(_partition_mean_sums, columns=columns),
        _means_from_sums,
    )
    if len(ids) == 0:
        raise DataError(f"values is empty (shape (0, {len(columns)}))")
    found = [str(c) for c in columns] if values.ndim == 2 or values.name is not None else None
    return means, column_names(names if names is not None else found, len(columns))


def _partition_mean_sums(
    rows: pd.DataFrame, codes: NDArray[np.intp], n: int, *, columns: list[Any]
) -> NDArray[np.float64]:
    """:func:`_mean_sums` of one Dask partition's rows."""
    return _mean_sums(_floats(rows[columns]), codes, n)


def _stated_scale(scale: Any, tau: Any, n: int, d: int, gamma: float) -> NDArray[np.float64] | None:
    """The stated variance proxies (from ``scale`` or ``tau``), or None to estimate them."""
    estimate = isinstance(scale, str) and scale == "estimate"
    if tau is not None:
        if not estimate:
            raise ParameterError(
                'give scale= (variance proxy of one user\'s value, or "estimate") or tau= '
                "(concentration radius), not both"
            )
        radius = per_column(tau, d, "tau")
        return radius**2 / (2.0 * math.log(2.0 * d * n / gamma))
    if estimate:
        return None
    if scale is None or isinstance(scale, str):
        raise ParameterError(f'scale must be "estimate", a number or one per column; got {scale!r}')
    return per_column(scale, d, "scale")


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
    #: and ``tail``): a subclass for a kind of outcome states them.
    lower: ClassVar[float | None] = None
    tail: ClassVar[Tail | None] = None

    def __init__(
        self,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        groups: str,
        by: str | None = None,
        levels: Mapping[str, Sequence[Any]] | None = None,
    ) -> None:
        lhs, _, rhs = formula.partition("~")
        self.column = lhs.strip()
        if rhs.strip() != "1":
            raise FormulaError(
                f"{type(self).__name__} takes a formula 'column ~ 1'; got {formula!r}"
            )
        if self.column.isidentifier() and self.column not in data.columns:
            raise FormulaError(
                f"{self.column!r} (left of '~') is not a column of data; "
                f"columns are {list(data.columns)}"
            )
        self.formula = formula
        if levels and (by is None or set(levels) != {by}):
            raise ParameterError(
                f"{type(self).__name__} reads declared levels of its by= grouping only; got "
                f"levels of {sorted(levels)} with by={by!r}"
            )
        if by is not None and by not in data.columns:
            raise ParameterError(
                f"by={by!r} is not a column of data; columns are {list(data.columns)}"
            )
        if by is not None and not levels and not isinstance(data[by].dtype, pd.CategoricalDtype):
            raise ParameterError(
                f"by={by!r} needs its declared levels (public, never read from the rows): "
                f"levels={{{by!r}: [...]}}, on the command line --levels {by}=A,B,..."
            )
        self._by = None if by is None else data[by]
        self._levels = None if not levels or by is None else levels[by]
        if is_dask(data):  # columns of the frame, reduced where they lie by winsorized_mean
            self._values, self._groups = _outcome(formula, data), data[groups]
            self.nobs_users = int(self._groups.nunique(dropna=False).compute())
        else:
            self._values = _outcome(formula, data)  # a Series: refusals name the column
            self._groups = data[groups].to_numpy()
            self.nobs_users = int(pd.unique(self._groups).size)

    @classmethod
    def from_formula(
        cls,
        formula: str,
        data: pd.DataFrame | DaskFrame,
        *,
        groups: str,
        by: str | None = None,
        levels: Mapping[str, Sequence[Any]] | None = None,
    ) -> Any:
        """The model of ``"column ~ 1"`` with user ids in the column ``groups``; with ``by``,
        one mean per level of that column, declared in ``levels`` as ``{by: [...]}`` (or by
        its pandas ``Categorical`` dtype)."""
        return cls(formula, data, groups, by=by, levels=levels)

    def fit(self, **options: Any) -> PanelResults:
        """:func:`winsorized_mean` of the column with ``options`` (its own defaults apply)."""
        stated: dict[str, Any] = {
            "lower": self.lower,
            "tail": self.tail,
            "by": self._by,
            "levels": self._levels,
        }
        results = winsorized_mean(
            self._values,
            groups=self._groups,
            names=[self.column],
            **{k: v for k, v in stated.items() if v is not None},
            **options,
        )
        spec = ModelSpec(self.model_name, self.formula, self.nobs_users, (self.column,), type(self))
        return dataclasses.replace(results, model=spec, formula=self.formula)


def _outcome(formula: str, data: pd.DataFrame | DaskFrame) -> pd.Series | DaskSeries:
    """The column left of ``~``, or the expression there evaluated row by row under the
    formula layer's checks (``np.log1p(meddol) ~ 1``)."""
    column = formula.partition("~")[0].strip()
    if column.isidentifier():
        return data[column]
    env = patsy.EvalEnvironment.capture(2)
    if is_dask(data):
        return outcome_rows(data, design_spec(formula, data, levels=None, eval_env=env))
    y, _, missing, _ = DesignSpec.from_formula(formula, data, eval_env=env).evaluate(data)
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
            *TAIL_OPTIONS,
        ),
    )
)
