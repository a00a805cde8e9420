"""The formula layer: a patsy formula and the public facts about the data make the design.

Public here (docs/design §1) are the formula, the declared factor levels, the constants written in
the formula, and the data's *schema*: its column names and dtypes. A :class:`DesignSpec` is built
from these alone — the design's columns, their names and every factor's reference level never
depend on the rows, so no user can change them — and so is every refusal. The rows are read
afterwards, by :meth:`DesignSpec.matrices`, which evaluates the fixed spec on any chunk of rows
and learns nothing from it.

The rules (factor levels, transforms, dates, the outcome, missing values) and why they hold
are in the design notes, ``docs/design/formula.md``.
"""

from __future__ import annotations

import ast
import datetime
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import patsy
import patsy.builtins
from numpy.typing import ArrayLike, NDArray
from patsy.categorical import _CategoricalBox, guess_categorical
from patsy.mgcv_cubic_splines import CC, CR, TE
from patsy.splines import BS
from patsy.state import Center, Standardize

from dplong._validation import warn
from dplong.exceptions import (
    DataError,
    DataHolderWarning,
    FormulaError,
    InsufficientUsersError,
    ParameterError,
)

__all__ = [
    "DesignSpec",
    "PanelDesign",
    "build_design",
    "check_groups",
    "check_users",
    "group_design",
    "user_codes",
]

GroupsLike = str | ArrayLike
LevelsLike = Mapping[str, Sequence[Any]]

#: Stand-ins for the values of a text column in the synthetic rows the spec is built from: if a
#: factor's levels are taken from them, they came from the values, not from a declaration.
_STAND_INS = ("<undeclared value 1>", "<undeclared value 2>")
#: Arguments of patsy's splines that it would otherwise compute from the data.
_SPLINE_CONSTANTS = ("knots", "lower_bound", "upper_bound")
_PUBLIC_TRANSFORMS = (BS, CR, CC, TE)
_PATSY_NAMES = {name: getattr(patsy.builtins, name) for name in patsy.builtins.__all__}
_TOLERANCE = 1e-9  # relative: one row's value computed alone or among others
#: Methods of a column that read other rows than their own (``x.mean()``, ``x.ffill()``): a term
#: calling one on the data is refused by its syntax, whatever the rows hold.
_ACROSS_ROWS_METHODS = frozenset(
    """agg aggregate all any argmax argmin argsort asof autocorr backfill bfill count cov corr
    cummax cummin cumprod cumsum describe diff dot drop_duplicates dropna duplicated ewm
    expanding explode factorize ffill first_valid_index groupby head idxmax idxmin interpolate
    item kurt kurtosis last_valid_index max mean median min mode nlargest nonzero nsmallest
    nunique pad pct_change pipe prod product ptp quantile rank reindex repeat resample
    reset_index rolling sample searchsorted sem shift skew sort sort_index sort_values std sum
    tail take to_list tolist transform truncate unique value_counts var""".split()
)
#: Functions (numpy's, pandas', builtins) that read every row of a column passed to them.
_ACROSS_ROWS_FUNCTIONS = frozenset(
    """all amax amin any argmax argmin argpartition argsort average bincount convolve correlate
    corrcoef count_nonzero cov cumprod cumsum diff ediff1d factorize gradient histogram len
    lexsort max mean median min nanargmax nanargmin nancumprod nancumsum nanmax nanmean
    nanmedian nanmin nanpercentile nanprod nanquantile nanstd nansum nanvar partition
    percentile prod ptp qcut quantile rankdata roll searchsorted shape size sort sorted std sum
    trapezoid trapz unique value_counts var zscore""".split()
)
#: Attributes of a column that describe other rows (its length, its index, its positions).
_ACROSS_ROWS_ATTRIBUTES = frozenset(
    """at empty hasnans iat iloc index is_monotonic_decreasing is_monotonic_increasing
    is_unique loc nbytes shape size""".split()
)
#: Options of ``fillna`` (and ``replace``) that fill from neighbouring rows.
_FILL_FROM_ROWS = ("method", "limit")
_ROW_WISE = (
    "Compute each row from that row and public constants: I(x - 40) rather than "
    "I(x - x.mean()); for missing values, impute a public constant and add an indicator, "
    "I(x.fillna(0)) + I(x.isna()), or leave them missing (the row is dropped)"
)
_TIME_TYPES = (
    datetime.date,
    datetime.time,
    datetime.timedelta,
    pd.Period,
    np.datetime64,
    np.timedelta64,
)


@dataclass(frozen=True)
class PanelDesign:
    """Rows grouped by user (stable, then by ``time`` if given) with user codes 0..n-1.

    ``y`` and ``X`` are patsy's arrays as built (``X`` row-major), not copies, when the data
    already come grouped by user and no row is dropped; otherwise one reordered copy.

    Examples
    --------
    >>> import dplong
    >>> from dplong.formula import build_design
    >>> design = build_design("lwage ~ exper", dplong.datasets.load_wage_panel(), groups="nr")
    >>> design.n, design.columns, design.X.shape
    (545, ('Intercept', 'exper'), (4360, 2))
    """

    y: NDArray[np.float64]
    X: NDArray[np.float64]
    codes: NDArray[np.intp]
    n: int
    columns: tuple[str, ...]
    outcome: str
    formula: str


@dataclass(frozen=True)
class DesignSpec:
    """The design of a formula, fixed from public facts: formula, schema, declared levels.

    Build it with :meth:`from_formula`; evaluate it on rows with :meth:`matrices`. The module
    docstring (:mod:`dplong.formula`) lists the rules it enforces.

    Attributes
    ----------
    formula : str
    outcome : str
        Name of the outcome column.
    columns : tuple of str
        Names of the regressor columns, e.g. ``("Intercept", "x", "C(site)[T.south]")``.
    levels : Mapping[str, tuple]
        Declared levels of the data columns the formula reads as factors (from ``levels=``
        or a ``Categorical`` dtype; levels written in the formula stay in the formula).
    inputs : tuple of str
        The data columns the formula reads.
    outcome_info, regressor_info : patsy.DesignInfo
        patsy's descriptions of the two matrices (for patsy's own tools).
    dtype_levels : tuple of str
        The columns of ``levels`` declared by their ``Categorical`` dtype, not by ``levels=``.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import DesignSpec
    >>> schema = pd.DataFrame({"y": [0.0], "x": [0.0], "site": ["north"]}).iloc[:0]
    >>> spec = DesignSpec.from_formula("y ~ x + site", schema,
    ...                                levels={"site": ["south", "north", "east"]})
    >>> spec.columns
    ('Intercept', 'site[T.north]', 'site[T.east]', 'x')
    """

    formula: str
    outcome: str
    columns: tuple[str, ...]
    levels: Mapping[str, tuple[Any, ...]]
    inputs: tuple[str, ...]
    outcome_info: Any = field(repr=False, compare=False)
    regressor_info: Any = field(repr=False, compare=False)
    dtype_levels: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_formula(
        cls,
        formula: str,
        schema: pd.DataFrame,
        *,
        levels: LevelsLike | None = None,
        eval_env: patsy.EvalEnvironment | None = None,
    ) -> DesignSpec:
        """The spec of ``formula`` for data with the columns and dtypes of ``schema``.

        Parameters
        ----------
        formula : str
            A patsy formula ``"y ~ x1 + C(site)"``.
        schema : pandas.DataFrame
            Only its column names and dtypes are used; its rows are never read, so the data
            itself (or ``data.iloc[:0]``) will do.
        levels : mapping of str to sequence, optional
            Declared levels per column, first level the reference: ``{"site": ["a", "b"]}``.
            They take precedence over a ``Categorical`` dtype's categories.
        eval_env : patsy.EvalEnvironment, optional
            Where the names in the formula that are not columns are looked up (``np``, public
            constants); by default the caller's namespace.

        Returns
        -------
        DesignSpec

        Raises
        ------
        FormulaError
            If the formula uses an undeclared factor, a transform that learns from the data, a
            date as a regressor, a non-numeric outcome or has no regressor; decided from the
            arguments and the schema only.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.formula import DesignSpec
        >>> schema = pd.DataFrame({"y": [0.0], "age": [0.0], "site": ["a"]})
        >>> spline = "bs(age, knots=(40, 60), lower_bound=18, upper_bound=90)"
        >>> DesignSpec.from_formula(f"y ~ {spline}", schema).columns[1:3]
        ('bs(age, knots=(40, 60), lower_bound=18, upper_bound=90)[0]', \
'bs(age, knots=(40, 60), lower_bound=18, upper_bound=90)[1]')
        >>> DesignSpec.from_formula("y ~ bs(age, df=4)", schema)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dplong.exceptions.FormulaError: bs() in 'bs(age, df=4)' computes knots, lower_bound, ...
        >>> DesignSpec.from_formula("y ~ age + site", schema)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        dplong.exceptions.FormulaError: 'site' (dtype str) is used as a factor in 'site' ...
        """
        if not isinstance(formula, str) or "~" not in formula:
            raise FormulaError(f"formula must be a string like 'y ~ x1 + x2', got {formula!r}")
        if not isinstance(schema, pd.DataFrame):
            raise DataError(f"data must be a pandas DataFrame, got {type(schema).__name__}")
        env = eval_env if eval_env is not None else patsy.EvalEnvironment.capture(1)
        # `np.log1p(y)` works wherever the formula is written, the command line included;
        # a caller's own `np` comes first (an outer namespace is searched last)
        env = env.with_outer_namespace({"np": np})
        try:
            desc = patsy.ModelDesc.from_formula(formula)
        except patsy.PatsyError as err:
            raise FormulaError(f"cannot parse {formula!r}: {err}") from None
        if len(desc.lhs_termlist) != 1 or len(desc.lhs_termlist[0].factors) != 1:
            raise FormulaError(
                f"{formula!r} must have one outcome column left of '~', like 'y ~ x'"
            )
        outcome_factor = desc.lhs_termlist[0].factors[0]
        factors = list(
            dict.fromkeys(f for term in desc.rhs_termlist for f in term.factors)
        )  # unique, in order
        dtypes = {c: d for c, d in schema.dtypes.items() if isinstance(c, str)}
        trees = {f: _parse(f, formula) for f in [outcome_factor, *factors]}
        inputs = tuple(dict.fromkeys(c for t in trees.values() for c in _columns_in(t, dtypes)))
        namespace = env.with_outer_namespace(_PATSY_NAMES).namespace
        for factor, tree in trees.items():
            _check_transforms(factor.code, tree, namespace, dtypes)
            _check_row_wise(factor.code, tree, dtypes)
        declared = {c: v for c, v in _declared_levels(dtypes, levels).items() if c in inputs}
        env = _with_public_transforms(env, trees.values(), namespace, dtypes)
        rows = _synthetic_rows({c: dtypes[c] for c in inputs}, declared)
        _check_outcome(outcome_factor, env, rows[0])
        for factor in factors:
            _check_regressor(factor, trees[factor], env, rows, dtypes)
        both = {c: pd.concat([rows[0][c], rows[1][c]]) for c in inputs}
        try:
            outcome_info, regressor_info = patsy.design_matrix_builders(
                [desc.lhs_termlist, desc.rhs_termlist], lambda: iter([both]), env, _MissingRows()
            )
        except patsy.PatsyError as err:
            raise FormulaError(f"cannot build the design of {formula!r}: {err}") from None
        outcome = [str(c) for c in outcome_info.column_names]
        if len(outcome) != 1:
            raise FormulaError(
                f"the outcome of {formula!r} must be one numeric column; it has {len(outcome)}"
            )
        if not regressor_info.column_names:
            raise FormulaError(
                f"{formula!r} has no regressor, not even an intercept: there is nothing to "
                "estimate (write 'y ~ 1' for the mean)"
            )
        spec = cls(
            formula=formula,
            outcome=outcome[0],
            columns=tuple(str(c) for c in regressor_info.column_names),
            levels=declared,
            inputs=inputs,
            outcome_info=outcome_info,
            regressor_info=regressor_info,
            dtype_levels=tuple(c for c in declared if c not in (levels or {})),
        )
        input_dtypes = {c: dtypes[c] for c in inputs}
        key = _verdict_key(formula, trees.values(), namespace, input_dtypes, declared)
        refusal = _ROW_BY_ROW.get(key) if key is not None else None
        if refusal is None:
            try:
                spec._check_row_by_row(input_dtypes, declared)
                refusal = ""
            except FormulaError as err:
                refusal = str(err)
            if key is not None:
                if len(_ROW_BY_ROW) >= _VERDICTS_KEPT:
                    _ROW_BY_ROW.clear()
                _ROW_BY_ROW[key] = refusal
        if refusal:
            raise FormulaError(refusal) from None
        return spec

    def matrices(
        self, frame: pd.DataFrame
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
        """Evaluate the spec on the rows of ``frame``, learning nothing from them.

        Parameters
        ----------
        frame : pandas.DataFrame
            Any rows with the spec's input columns: the whole data or one chunk of it (the
            result for the whole is the results for the chunks stacked).

        Returns
        -------
        y : ndarray of float64, shape (kept rows,)
        X : ndarray of float64, shape (kept rows, len(columns))
        kept : ndarray of bool, shape (len(frame),)
            Which rows of ``frame`` have no missing value (module docstring) and are in
            ``y`` and ``X``.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from dplong.formula import DesignSpec
        >>> data = pd.DataFrame({"y": [1.0, 2.0, 3.0], "x": [0.5, np.inf, 1.5],
        ...                      "site": ["a", "b", "z"]})
        >>> spec = DesignSpec.from_formula("y ~ x + site", data, levels={"site": ["a", "b"]})
        >>> y, X, kept = spec.matrices(data)
        >>> y, kept                      # x infinite in row 1, 'z' not a declared site
        (array([1.]), array([ True, False, False]))
        """
        y, X, missing_y, missing_x = self.evaluate(frame)
        missing = missing_y | missing_x
        if not missing.any():
            return y, X, ~missing
        return y[~missing], X[~missing], ~missing

    def evaluate(
        self, frame: pd.DataFrame
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
        """Evaluate the spec on every row of ``frame``, dropping none.

        For designs that keep every row (item-level regression, where a missing response
        contributes a public centre); :meth:`matrices` drops the rows with a missing value.

        Returns
        -------
        y : ndarray of float64, shape (len(frame),)
        X : ndarray of float64, shape (len(frame), len(columns))
        missing_y, missing_x : ndarray of bool, shape (len(frame),)
            Rows with a missing outcome, and with a missing regressor value (module
            docstring); their values in ``y`` or ``X`` are meaningless.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from dplong.formula import DesignSpec
        >>> data = pd.DataFrame({"y": [1.0, np.nan, 3.0], "x": [0.5, 1.0, -np.inf]})
        >>> y, X, missing_y, missing_x = DesignSpec.from_formula("y ~ x", data).evaluate(data)
        >>> missing_y, missing_x
        (array([False,  True, False]), array([False, False,  True]))
        """
        absent = [c for c in self.inputs if c not in frame.columns]
        if absent:
            raise FormulaError(
                f"{absent} used by {self.formula!r} are not columns of the data; "
                f"columns are {list(frame.columns)}"
            )
        y, X, missing_y, missing_x = self._build(
            {c: _canonical(frame[c], self.levels.get(c)) for c in self.inputs}
        )
        return y[:, 0], X, missing_y, missing_x

    def by_user(
        self,
        frame: pd.DataFrame,
        codes: NDArray[np.intp],
        n: int,
        *,
        time: NDArray[Any] | None = None,
    ) -> PanelDesign:
        """Evaluate the spec on the rows of ``frame`` and group them by user.

        Rows with a missing value (module docstring) or a missing user (code -1) are dropped;
        the others come by user code (stable in row order), then by ``time`` if given.

        Parameters
        ----------
        frame : pandas.DataFrame
            The whole data, or one chunk of it: the users of a chunk are coded within it.
        codes : ndarray of intp, shape (len(frame),)
            User codes 0..n-1 of the rows, -1 for a missing id (:func:`user_codes`).
        n : int
            Number of users coded.
        time : ndarray, optional
            One value per row ordering the rows within a user (any sortable dtype).

        Returns
        -------
        PanelDesign

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from dplong.formula import DesignSpec, user_codes
        >>> data = pd.DataFrame({"id": [2, 1, 2], "y": [1.0, 2.0, 3.0]})
        >>> codes, ids = user_codes(data["id"].to_numpy())
        >>> design = DesignSpec.from_formula("y ~ 1", data).by_user(data, codes, len(ids))
        >>> design.y, design.codes
        (array([1., 3., 2.]), array([0, 0, 1]))
        """
        y, X, missing_y, missing_x = self.evaluate(frame)
        missing = missing_y | missing_x | (codes < 0)
        rows = np.flatnonzero(~missing) if missing.any() else None  # None: every row
        if rows is not None:
            codes = codes[rows]
        keys: list[NDArray[Any]] = [codes]
        if time is not None:
            times = _sort_key(time)
            keys.insert(0, times if rows is None else times[rows])
        if not _grouped(codes, keys[0] if time is not None else None):
            order = np.lexsort(keys)  # by user, then time; stable in row order
            codes = codes[order]
            rows = order if rows is None else rows[order]
        if rows is not None:
            y = y[rows]
            X = np.take(X, rows, axis=0)  # same rows as X[rows], about 3x faster at 10^7 rows
        return PanelDesign(
            y=y,
            X=X,
            codes=codes,
            n=n,
            columns=self.columns,
            outcome=self.outcome,
            formula=self.formula,
        )

    def _build(
        self, data: Mapping[str, Any]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
        """Both matrices of every row of the canonical columns ``data`` (one patsy pass), and
        their rows with a missing or non-finite value; no row is dropped here, so that the
        caller subsets (and copies) once."""
        infos = (self.outcome_info, self.regressor_info)
        recorder = _MissingRows()
        try:
            with np.errstate(all="ignore"):  # invalid values become missing rows, silently
                matrices = patsy.build_design_matrices(
                    infos, data, NA_action=recorder, return_type="matrix"
                )
        except patsy.PatsyError as err:
            raise FormulaError(f"cannot evaluate {self.formula!r} on the data: {err}") from None
        # patsy evaluates each factor once, in the order of the infos: its masks come so
        evaluated = dict.fromkeys(f for info in infos for f in info.factor_infos.values())
        factor_missing = dict(zip(evaluated, recorder.masks, strict=True))
        result: list[NDArray[Any]] = [np.asarray(m, dtype=np.float64) for m in matrices]
        for info, values in zip(infos, list(result), strict=True):
            missing = np.logical_not(np.isfinite(values).all(axis=1))
            for factor in info.factor_infos.values():
                missing |= factor_missing[factor]
            result.append(missing)
        return result[0], result[1], result[2], result[3]

    def _check_row_by_row(
        self, dtypes: Mapping[str, Any], declared: Mapping[str, tuple[Any, ...]]
    ) -> None:
        """Refuse terms whose value in one row depends on other rows (``x - x.mean()``, a
        rank, a lag, an imputation from other rows): on synthetic rows holding missing,
        negative and huge values (:func:`_probe_rows`), the rows in reverse order, and the
        rows at even and at odd positions alone, must give those rows' values of the whole."""
        rows = _probe_rows(dtypes, declared)
        size = len(next(iter(rows.values())))
        orders = [np.arange(size)[::-1], np.arange(0, size, 2), np.arange(1, size, 2)]
        try:
            whole = self._compared(rows)
            parts = [self._compared(_take(rows, order)) for order in orders]
        except (FormulaError, ValueError) as err:
            raise FormulaError(
                f"{self.formula!r} cannot be evaluated on rows with missing or extreme values "
                f"({_first_line(err)}); functions of your own should return NaN for values "
                "they cannot handle, since an error raised on some rows depends on the rows"
            ) from None
        same = np.ones(whole[0].shape[1], dtype=bool)
        moved = False
        for order, (values, missing) in zip(orders, parts, strict=True):
            same &= _agree(values, missing, whole[0][order], whole[1][order])
            moved |= bool((missing != whole[1][order]).any())
        names = [*self.outcome_info.column_names, *self.regressor_info.column_names]
        differ = [str(c) for c, ok in zip(names, same, strict=True) if not ok]
        if moved and not differ:  # only which rows are missing moved
            differ = names
        if differ:
            raise FormulaError(
                f"{differ} of {self.formula!r} depend on other rows than their own (a "
                "mean, sum, rank, lag or fill over the data, or random numbers), so one user "
                f"would move every user's values. {_ROW_WISE}"
            )

    def _compared(self, data: Mapping[str, Any]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Outcome and regressors side by side, and per column whether its row misses a
        value (an outcome's or a regressor's)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. numpy's "mean of empty slice" on a probe
            y, X, missing_y, missing_x = self._build(data)
        missing = np.repeat(np.column_stack([missing_y, missing_x]), [1, X.shape[1]], axis=1)
        return np.hstack([y, X]), missing


def build_design(
    formula: str,
    data: pd.DataFrame,
    *,
    groups: GroupsLike,
    time: GroupsLike | None = None,
    levels: LevelsLike | None = None,
    eval_env: patsy.EvalEnvironment | None = None,
) -> PanelDesign:
    """Build the :class:`DesignSpec` of ``formula`` and evaluate it, rows grouped by user.

    Parameters
    ----------
    formula : str
    data : pandas.DataFrame
        With a unique index.
    groups : str or array_like
        User id column (or one id per row). Rows with a missing id belong to no user and are
        dropped; n is the number of distinct non-missing ids.
    time : str or array_like, optional
        Orders the rows within a user (any sortable dtype, dates included).
    levels : mapping of str to sequence, optional
        Declared factor levels, as in :meth:`DesignSpec.from_formula`.
    eval_env : patsy.EvalEnvironment, optional
        By default the caller's namespace.

    Returns
    -------
    PanelDesign

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dplong.formula import build_design
    >>> data = pd.DataFrame({"id": [2, 1, 2, 1, np.nan], "t": [1, 2, 0, 1, 0],
    ...                      "y": [1.0, 2.0, 3.0, np.nan, 5.0]})
    >>> design = build_design("y ~ 1", data, groups="id", time="t")
    >>> design.n, design.y, design.codes
    (2, array([3., 1., 2.]), array([0, 0, 1]))
    """
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    spec = DesignSpec.from_formula(
        formula, data, levels=levels, eval_env=eval_env or patsy.EvalEnvironment.capture(1)
    )
    return group_design(spec, data, groups=groups, time=time)


def group_design(
    spec: DesignSpec, data: pd.DataFrame, *, groups: GroupsLike, time: GroupsLike | None = None
) -> PanelDesign:
    """Evaluate a built :class:`DesignSpec` on ``data``, rows grouped by user (the second half
    of :func:`build_design`, for a caller that needs the spec itself too).

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import DesignSpec, group_design
    >>> data = pd.DataFrame({"id": [1, 2, 1], "x": [0.0, 1.0, 2.0], "y": [1.0, 2.0, 3.0]})
    >>> spec = DesignSpec.from_formula("y ~ x", data)
    >>> design = group_design(spec, data, groups="id")
    >>> design.n, design.columns, design.codes.tolist()
    (2, ('Intercept', 'x'), [0, 0, 1])
    """
    check_groups(groups)
    codes_all, ids = user_codes(column_or_array(groups, data, "groups"))
    n = len(ids)
    check_users(n, rows=len(data))
    if not data.index.is_unique:
        raise DataError("data must have a unique index (use data.reset_index(drop=True))")
    times = None if time is None else column_or_array(time, data, "time")
    warn_levels_from_values(spec, data.dtypes, lambda column: data[column].cat.codes.to_numpy())
    return spec.by_user(data, codes_all, n, time=times)


def warn_levels_from_values(
    spec: DesignSpec, dtypes: pd.Series, codes: Callable[[str], NDArray[np.integer]]
) -> None:
    """Warn the data holder (never the results) of a factor whose declared levels are the
    ``Categorical`` dtype's categories and every one of them is present in the rows: the
    common ``astype("category")`` takes the categories from the values, and then the labels
    publish which levels the data hold. ``codes(column)`` gives the column's category codes
    (-1: missing) — in memory the array, on Dask the codes each partition holds."""
    for column in spec.dtype_levels:
        dtype = dtypes[column]
        if not isinstance(dtype, pd.CategoricalDtype) or not len(dtype.categories):
            continue
        present = np.unique(codes(column))
        if np.count_nonzero(present >= 0) == len(dtype.categories):
            warn(
                f"the categories of {column!r} are exactly the values present in the data, as "
                "astype('category') makes them; they are taken as declared levels and label "
                "the results. If they were not fixed before seeing the data, declare every "
                f"level the study allows: levels={{{column!r}: [...]}} or "
                f"pd.CategoricalDtype([...]) (dplong.exceptions.DataHolderWarning)",
                DataHolderWarning,
            )


def column_or_array(value: GroupsLike, data: pd.DataFrame, name: str) -> NDArray[Any]:
    """The column ``value`` of ``data``, or ``value`` itself as one entry per row."""
    if isinstance(value, str):
        if value not in data.columns:
            raise FormulaError(
                f"{name}={value!r} is not a column of the data; columns are {list(data.columns)}"
            )
        return data[value].to_numpy()
    array = np.asarray(value)
    if array.ndim != 1 or len(array) != len(data):
        raise DataError(
            f"{name} must be a column name or one value per row of data "
            f"({len(data)} rows), got shape {array.shape}"
        )
    return array


# ------------------------------------------------------------------------- rows and users


class _MissingRows(patsy.NAAction):  # type: ignore[misc]  # patsy is untyped
    """patsy's NA handling that records which rows miss each factor's value (``masks``, in
    patsy's order) instead of dropping them, so that the caller drops them together with the
    rows of missing ids and non-finite values, in one copy. ``pd.NA`` counts as missing (patsy
    would ask ``bool(pd.NA)``), and the checks run on numpy arrays, not frames.
    """

    def __init__(self) -> None:
        super().__init__(on_NA="drop")
        self.masks: list[NDArray[np.bool_]] = []

    def is_categorical_NA(self, obj: Any) -> bool:
        return bool(pd.isna(obj)) if np.ndim(obj) == 0 else False

    def is_numerical_NA(self, arr: Any) -> NDArray[np.bool_]:
        values = np.asarray(arr)
        missing = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)
        return np.asarray(missing.any(axis=1) if missing.ndim > 1 else missing, dtype=bool)

    def handle_NA(self, values: list[Any], is_NAs: list[Any], origins: list[Any]) -> list[Any]:
        self.masks = [np.asarray(m, dtype=bool) for m in is_NAs]
        # patsy refuses to code a missing level (code -1): any valid code does, the row is
        # dropped; missing numbers stay NaN
        return [
            np.where(m, 0, v) if v.dtype.kind == "i" and m.any() else v
            for v, m in zip(values, self.masks, strict=True)
        ]


def user_codes(ids: NDArray[Any]) -> tuple[NDArray[np.intp], NDArray[Any]]:
    """Codes 0..n-1 of the user ids in first-appearance order (-1 for a missing id), and the
    n distinct ids in that order.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.formula import user_codes
    >>> user_codes(np.array(["b", None, "a", "b"], dtype=object))
    (array([ 0, -1,  1,  0]), array(['b', 'a'], dtype=object))
    """
    codes, uniques = pd.factorize(ids, sort=False)
    return codes.astype(np.intp, copy=False), np.asarray(uniques)


def check_groups(groups: object) -> None:
    """Refuse a design without user ids.

    Examples
    --------
    >>> from dplong.formula import check_groups
    >>> check_groups(None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: groups is required: the column (or array) of user ids; ...
    """
    if groups is None:
        raise DataError(
            "groups is required: the column (or array) of user ids; every row "
            "must say which user it belongs to"
        )


def check_users(n: int, *, rows: int) -> None:
    """Refuse data without rows, or with fewer than 2 users (n is public).

    Examples
    --------
    >>> from dplong.formula import check_users
    >>> check_users(1, rows=4)
    Traceback (most recent call last):
    ...
    dplong.exceptions.InsufficientUsersError: the data hold 1 user; private estimation needs \
at least 2 users (and many more for useful accuracy)
    """
    if rows == 0:
        raise DataError("data has no rows")
    if n < 2:
        raise InsufficientUsersError(
            f"the data hold {n} user; private estimation needs at "
            "least 2 users (and many more for useful accuracy)"
        )


def _sort_key(times: NDArray[Any]) -> NDArray[Any]:
    """``time`` as lexsort can order it: numbers and dates as they are, anything else (text,
    nullable numbers with ``pd.NA``, dates with a time zone) by rank, missing first."""
    if times.dtype.kind in "biufmM":
        return times
    ranks: NDArray[np.intp] = pd.factorize(times, sort=True)[0]
    return ranks


def _grouped(codes: NDArray[np.intp], time: NDArray[Any] | None) -> bool:
    """Whether the rows already come by user (then by ``time``): ``np.lexsort`` of the keys
    would return ``arange`` (it is stable), so the reorder and its copies can be skipped.

    Only numeric or datetime ``time`` is compared here (NaN/NaT compare False: lexsort then
    decides); any other ``time`` goes through ``np.lexsort``.
    """
    step = codes[1:] - codes[:-1]
    if time is None:
        return bool((step >= 0).all())
    if time.dtype.kind not in "biufmM":
        return False
    with np.errstate(invalid="ignore"):
        return bool(((step > 0) | ((step == 0) & (time[1:] >= time[:-1]))).all())


# ------------------------------------------------------------------------- declared levels


def _declared_levels(
    dtypes: Mapping[str, Any], levels: LevelsLike | None
) -> dict[str, tuple[Any, ...]]:
    """Levels of every column that declares them: ``Categorical`` dtypes, then ``levels=``."""
    declared = {
        c: tuple(d.categories) for c, d in dtypes.items() if isinstance(d, pd.CategoricalDtype)
    }
    if levels is None:
        return declared
    if not isinstance(levels, Mapping):
        raise ParameterError(
            "levels must be a mapping from column to its levels, e.g. "
            f"levels={{'site': ['north', 'south']}}; got {type(levels).__name__}"
        )
    for column, values in levels.items():
        if column not in dtypes:
            raise FormulaError(
                f"levels names {column!r}, which is not a column of the data; "
                f"columns are {list(dtypes)}"
            )
        declared[column] = _level_tuple(values, f"levels[{column!r}]", dtypes[column])
    return declared


def _level_tuple(values: Any, name: str, dtype: Any) -> tuple[Any, ...]:
    """Validated declared levels: a non-empty sequence of distinct, non-missing values of the
    column's kind (numbers for a numeric column, text for a text column)."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray | pd.Index):
        raise ParameterError(f"{name} must be a list of levels, e.g. ['a', 'b'], got {values!r}")
    found = tuple(values.tolist() if isinstance(values, np.ndarray | pd.Index) else values)
    try:
        distinct = len(set(found)) == len(found)
    except TypeError:
        distinct = False
    if not found or not distinct or any(np.ndim(v) != 0 or pd.isna(v) for v in found):
        raise ParameterError(
            f"{name} must be a non-empty list of distinct, non-missing levels, got {values!r}"
        )
    numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    if (numeric and not all(isinstance(v, int | float | np.number) for v in found)) or (
        isinstance(dtype, pd.StringDtype) and not all(isinstance(v, str) for v in found)
    ):
        raise ParameterError(
            f"{name} must hold values like those of the column (dtype {dtype}); got {values!r}"
        )
    return found


def _coded(values: Any, levels: tuple[Any, ...]) -> Any:
    """``values`` as a pandas Categorical with exactly the declared categories; a value outside
    them becomes missing (vectorised: pandas' codes, never patsy's loop over the rows)."""
    dtype = pd.CategoricalDtype(list(levels))
    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        if tuple(values.dtype.categories) == levels and not values.dtype.ordered:
            return values
        source = pd.Categorical(values)
        recode = np.append(pd.Index(levels).get_indexer(source.categories), -1)
        codes = recode[source.codes]  # code -1 (missing) picks the appended -1
    else:
        codes = pd.Index(levels).get_indexer(values)
    coded = pd.Categorical.from_codes(codes, dtype=dtype)
    if isinstance(values, pd.Series):
        return pd.Series(coded, index=values.index, name=values.name)
    return coded


def _canonical(values: pd.Series, levels: tuple[Any, ...] | None) -> Any:
    """One column as patsy reads it: declared factors (and nullable booleans) coded on their
    levels, nullable numbers as float64 with NaN, nullable text with NaN instead of pd.NA."""
    dtype = values.dtype
    if levels is not None:
        return _coded(values, levels)
    if isinstance(dtype, pd.BooleanDtype):
        return _coded(values, (False, True))
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_numeric_dtype(dtype):
        return pd.Series(
            values.to_numpy(np.float64, na_value=np.nan), index=values.index, name=values.name
        )
    if isinstance(dtype, pd.StringDtype) and dtype.na_value is pd.NA:
        return values.astype(object).where(values.notna(), np.nan)
    return values


def _public_levels(value: Any) -> tuple[Any, ...] | None:
    """The levels a categorical factor value carries by declaration, or None when patsy would
    take them from the values (then they are private)."""
    if isinstance(value, _CategoricalBox):
        if value.levels is not None:
            return tuple(value.levels)
        value = value.data
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, pd.CategoricalDtype):
        return tuple(dtype.categories)
    if np.asarray(value).dtype == np.bool_:
        return (False, True)
    return None


# ------------------------------------------------------------------------- the formula's code


def _parse(factor: Any, formula: str) -> ast.Expression:
    try:
        return ast.parse(str(factor.code), mode="eval")
    except SyntaxError:
        raise FormulaError(f"cannot read the term {factor.code!r} of {formula!r}") from None


def _columns_in(node: ast.AST, dtypes: Mapping[str, Any]) -> list[str]:
    """Data columns an expression reads: bare names and ``Q("name")``."""
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in dtypes:
            found.append(sub.id)
        elif (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id == "Q"
            and sub.args
            and isinstance(sub.args[0], ast.Constant)
            and sub.args[0].value in dtypes
        ):
            found.append(str(sub.args[0].value))
    return list(dict.fromkeys(found))


def _resolve(func: ast.expr, namespace: Any, dtypes: Mapping[str, Any]) -> Any:
    """The object a called name or attribute chain refers to (columns shadow names)."""
    if isinstance(func, ast.Name):
        return None if func.id in dtypes else namespace.get(func.id)
    if isinstance(func, ast.Attribute):
        base = _resolve(func.value, namespace, dtypes)
        return None if base is None else getattr(base, func.attr, None)
    return None


def _calls(tree: ast.AST, namespace: Any, dtypes: Mapping[str, Any]) -> list[tuple[ast.Call, Any]]:
    return [
        (node, _resolve(node.func, namespace, dtypes))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    ]


def _check_transforms(code: str, tree: ast.AST, namespace: Any, dtypes: Mapping[str, Any]) -> None:
    """Refuse patsy's stateful transforms (found the way patsy finds them: a called object with
    ``__patsy_stateful_transform__``) unless every parameter they would learn is given."""
    for call, target in _calls(tree, namespace, dtypes):
        kind = getattr(target, "__patsy_stateful_transform__", None)
        if kind is None:
            continue
        name = ast.unparse(call.func)
        if kind in (Center, Standardize):
            raise FormulaError(
                f"{name}() in {code!r} uses the data's mean and standard deviation, so one user "
                "would move every user's value: use public constants instead, e.g. "
                "I(x - 40) or I((x - 40) / 10)"
            )
        if kind not in _PUBLIC_TRANSFORMS:
            raise FormulaError(
                f"{name}() in {code!r} is a stateful transform: it learns from the data, so one "
                "user would move every user's value; compute the column from public constants"
            )
        if not isinstance(call.func, ast.Name):
            raise FormulaError(
                f"write {name.rpartition('.')[2]}(...) rather than {name}(...) in {code!r}, so "
                "that its public parameters are checked and used"
            )
        given = _bound_arguments(call, kind, code)
        public = {  # te(...) takes its keywords as **kwargs; x and *args are the data
            key: node
            for key, node in (given.pop("kwargs", {}) | given).items()
            if key not in ("self", "x", "args")
        }
        for key, node in public.items():
            if _columns_in(node, dtypes):
                raise FormulaError(
                    f"{key}= of {name}() in {code!r} reads the data; it must be a public constant"
                )
        values = {key: _constant(node, namespace, code) for key, node in public.items()}
        learned = [k for k in _SPLINE_CONSTANTS if kind is not TE and values.get(k) is None]
        if learned:
            raise FormulaError(
                f"{name}() in {code!r} computes {', '.join(learned)} from the data (its quantiles, "
                "minimum and maximum), so one user would move every user's basis: give all of "
                f"{', '.join(_SPLINE_CONSTANTS)} as public constants, e.g. "
                f"{name}(x, knots=(30, 50), lower_bound=18, upper_bound=90)"
            )
        if isinstance(values.get("constraints"), str):
            raise FormulaError(
                f"constraints={values['constraints']!r} of {name}() in {code!r} centres the "
                "basis on the data; give a constraint matrix of public constants, or none"
            )


def _check_row_wise(code: str, tree: ast.AST, dtypes: Mapping[str, Any]) -> None:
    """Refuse, by their syntax, terms that read other rows of the data: a column's aggregating
    or shifting method (``x.mean()``, ``x.ffill()``, ``x.fillna(method=...)``), a function of
    every row (``np.nanmean(x)``, ``len(x)``) or an attribute describing the rows
    (``x.size``). What the syntax does not show, :meth:`DesignSpec._check_row_by_row` finds
    on synthetic rows."""
    for node in ast.walk(tree):
        found = None
        if isinstance(node, ast.Attribute) and _columns_in(node.value, dtypes):
            if node.attr in _ACROSS_ROWS_ATTRIBUTES:
                found = f".{node.attr}"
        elif isinstance(node, ast.Call):
            func = node.func
            on_data = isinstance(func, ast.Attribute) and bool(_columns_in(func.value, dtypes))
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if on_data and name in _ACROSS_ROWS_METHODS:
                found = f".{name}()"
            elif on_data and any(k.arg in _FILL_FROM_ROWS for k in node.keywords):
                option = next(k.arg for k in node.keywords if k.arg in _FILL_FROM_ROWS)
                found = f".{name}({option}=...)"
            elif (
                not on_data
                and name in _ACROSS_ROWS_FUNCTIONS
                and any(_columns_in(a, dtypes) for a in arguments)
            ):
                found = f"{ast.unparse(func)}()"
        if found is not None:
            raise FormulaError(
                f"{code!r} would depend on other rows than its own: {found} reads every row of "
                f"the data, so one user would move every user's value. {_ROW_WISE}"
            )


def _bound_arguments(call: ast.Call, kind: Any, code: str) -> dict[str, Any]:
    """The call's argument expressions by parameter name of ``kind.memorize_chunk``."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        raise FormulaError(f"write the arguments of the transform in {code!r} out, without * or **")
    try:
        bound = inspect.signature(kind.memorize_chunk).bind(
            None, *call.args, **{str(k.arg): k.value for k in call.keywords}
        )
    except TypeError as err:
        raise FormulaError(f"cannot read the arguments in {code!r}: {err}") from None
    return dict(bound.arguments)


def _constant(node: Any, namespace: Any, code: str) -> Any:
    """The value of a public-constant argument (evaluated in the formula's environment)."""
    try:
        return eval(compile(ast.Expression(node), "<formula>", "eval"), {}, namespace)
    except Exception as err:  # the analyst's expression: any error is theirs to see
        raise FormulaError(f"cannot evaluate {ast.unparse(node)!r} in {code!r}: {err}") from None


def _declared_c(data: Any, contrast: Any = None, levels: Any = None) -> Any:
    """patsy's ``C`` where a value outside ``levels`` becomes missing (patsy raises), with
    pandas' vectorised codes when no contrast is given (patsy loops over the rows)."""
    if levels is not None:
        data = _coded(data, _level_tuple(levels, "C(..., levels=...)", object))
    if contrast is None and isinstance(getattr(data, "dtype", None), pd.CategoricalDtype):
        return data
    return patsy.builtins.C(data, contrast)


class _PublicBS(BS):  # type: ignore[misc]  # patsy is untyped
    """patsy's B-spline basis, with values outside the public bounds missing (patsy raises
    when any value of the chunk is outside, which would make the refusal depend on one row)."""

    def transform(self, x: Any, *args: Any, **kwargs: Any) -> NDArray[np.float64]:
        values = np.asarray(x, dtype=np.float64).reshape(-1)
        low, high = float(self._all_knots[0]), float(self._all_knots[-1])
        inside = (values >= low) & (values <= high)
        width = np.shape(super().transform(np.array([low]), *args, **kwargs))[1]
        basis = np.full((values.size, width), np.nan)
        if inside.any():  # patsy cannot evaluate zero rows
            basis[inside] = super().transform(values[inside], *args, **kwargs)
        return basis


_REPLACEMENTS = {
    id(_PATSY_NAMES["C"]): _declared_c,
    id(_PATSY_NAMES["bs"]): patsy.stateful_transform(_PublicBS),
}


def _with_public_transforms(
    env: patsy.EvalEnvironment, trees: Any, namespace: Any, dtypes: Mapping[str, Any]
) -> patsy.EvalEnvironment:
    """``env`` where the names that call patsy's ``C`` and ``bs`` call the versions above."""
    replaced = {
        call.func.id: _REPLACEMENTS[id(target)]
        for tree in trees
        for call, target in _calls(tree, namespace, dtypes)
        if isinstance(call.func, ast.Name) and id(target) in _REPLACEMENTS
    }
    return patsy.EvalEnvironment([replaced, env.namespace], env.flags) if replaced else env


#: The row-by-row check's verdicts ("" passed, else the refusal) by :func:`_verdict_key`:
#: the check runs on synthetic rows, so its verdict is a function of public facts, and it is
#: over half of building a spec. At most this many are kept.
_ROW_BY_ROW: dict[tuple[Any, ...], str] = {}
_VERDICTS_KEPT = 256
_FIXED_MODULES = frozenset({"math", "numpy", "pandas"})
_FIXED_NAMES = frozenset(id(v) for k, v in _PATSY_NAMES.items() if k != "Q")


def _verdict_key(
    formula: str,
    trees: Any,
    namespace: Any,
    dtypes: Mapping[str, Any],
    declared: Mapping[str, tuple[Any, ...]],
) -> tuple[Any, ...] | None:
    """What the row-by-row check's verdict depends on: the formula, the inputs' dtypes, the
    declared levels and the objects the formula's other names are bound to; None (check
    afresh) when a name is bound to anything but patsy's builtins, numpy, pandas, math or a
    number (a caller's own function could change between fits, ``Q`` reads by name)."""
    bound = []
    names = {n.id for t in trees for n in ast.walk(t) if isinstance(n, ast.Name)}
    for name in sorted(names - set(dtypes)):
        value = namespace.get(name)
        fixed = (
            id(value) in _FIXED_NAMES
            or (inspect.ismodule(value) and value.__name__ in _FIXED_MODULES)
            or type(value) in (int, float, bool, str)
        )
        if not fixed:
            return None
        bound.append((name, type(value), value))
    key = (formula, tuple(dtypes.items()), tuple(declared.items()), tuple(bound))
    try:
        hash(key)
    except TypeError:  # a dtype or declared level that cannot be a key
        return None
    return key


# ------------------------------------------------------------------------- synthetic rows


def _synthetic_rows(
    dtypes: Mapping[str, Any], declared: Mapping[str, tuple[Any, ...]]
) -> tuple[dict[str, pd.Series], dict[str, pd.Series]]:
    """Two one-row frames made from the schema and the declared levels only, with different
    values (first and last level; 1 and 2; two dates; two stand-in texts), canonical as real
    rows would be: what patsy learns from them is public, and a term that learns anything
    else shows it by differing between them."""
    columns = {
        c: _canonical(_two_values(d, declared.get(c)), declared.get(c)) for c, d in dtypes.items()
    }
    return {c: s.iloc[:1] for c, s in columns.items()}, {c: s.iloc[1:] for c, s in columns.items()}


def _two_values(dtype: Any, levels: tuple[Any, ...] | None) -> Any:
    """Two distinct values of ``dtype`` (a Series), the first and last levels if declared."""
    if levels is not None:
        return pd.Series([levels[0], levels[-1]], dtype=object)
    if pd.api.types.is_bool_dtype(dtype):
        return pd.Series([False, True], dtype=dtype)
    if isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype):
        return pd.Series(
            pd.date_range("2000-01-01", periods=2, tz=getattr(dtype, "tz", None))
        ).astype(dtype)
    if pd.api.types.is_timedelta64_dtype(dtype):
        return pd.Series(pd.to_timedelta([1, 2], unit="D")).astype(dtype)
    if isinstance(dtype, pd.PeriodDtype):
        return pd.Series(pd.period_range("2000-01-01", periods=2, freq=dtype.freq))
    if pd.api.types.is_numeric_dtype(dtype):
        return pd.Series([1, 2]).astype(dtype)
    try:
        return pd.Series(list(_STAND_INS), dtype=dtype)
    except (TypeError, ValueError):
        return pd.Series(list(_STAND_INS), dtype=object)


#: Values of a numeric probe column (:func:`_probe_rows`): missing values between others, so
#: that a fill from the neighbours, the mean or the count shows; a negative and a huge value,
#: so that a comparison with the data's range does.
_PROBE_NUMBERS = (1.0, np.nan, 2.0, np.nan, -3.0, 1e15)
_PROBE_MISSING = np.isnan(_PROBE_NUMBERS)


def _probe_rows(
    dtypes: Mapping[str, Any], declared: Mapping[str, tuple[Any, ...]]
) -> dict[str, pd.Series]:
    """Synthetic rows made from the schema and the declared levels, missing values included
    where the dtype can hold them, canonical as real rows would be (indexed 0, 1, ...)."""
    return {
        c: _canonical(_probe_values(d, declared.get(c)), declared.get(c)) for c, d in dtypes.items()
    }


def _probe_values(dtype: Any, levels: tuple[Any, ...] | None) -> Any:
    """Probe values of one column: those of :data:`_PROBE_NUMBERS` in its kind."""
    size = len(_PROBE_NUMBERS)
    if levels is not None:
        cycle = [levels[i % len(levels)] for i in range(size)]
        return pd.Series(cycle, dtype=object).mask(_PROBE_MISSING)
    if pd.api.types.is_bool_dtype(dtype):
        values = pd.Series([i % 3 == 1 for i in range(size)])
        return values if dtype == np.dtype(bool) else values.astype(dtype).mask(_PROBE_MISSING)
    if pd.api.types.is_integer_dtype(dtype):  # the largest value the dtype holds, halved
        big = np.iinfo(getattr(dtype, "numpy_dtype", dtype)).max // 2
        integers = pd.Series([1, 2, 3, 4, 5, big]).astype(dtype)
        nullable = isinstance(dtype, pd.api.extensions.ExtensionDtype)
        return integers.mask(_PROBE_MISSING) if nullable else integers
    if pd.api.types.is_numeric_dtype(dtype):
        return pd.Series(_PROBE_NUMBERS).astype(dtype)
    pair = _two_values(dtype, None)
    cycle = pair.iloc[[i % 2 for i in range(size)]].reset_index(drop=True)
    if cycle.dtype == object:
        return cycle.where(~_PROBE_MISSING, None)
    return cycle.mask(_PROBE_MISSING)


def _take(rows: Mapping[str, pd.Series], positions: Any) -> dict[str, Any]:
    """Some probe rows, in the given order, indexed 0, 1, ... like a frame of their own."""
    return {c: s.iloc[positions].reset_index(drop=True) for c, s in rows.items()}


def _agree(
    left: NDArray[np.float64],
    left_missing: NDArray[np.bool_],
    right: NDArray[np.float64],
    right_missing: NDArray[np.bool_],
) -> NDArray[np.bool_]:
    """Per column, whether two evaluations of the same rows agree (NaN agreeing with NaN),
    where at least one of them keeps the row: a row both drop may hold anything."""
    close = np.isclose(left, right, rtol=_TOLERANCE, equal_nan=True)
    return np.asarray((close | (left_missing & right_missing)).all(axis=0), dtype=bool)


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def _factor_value(factor: Any, env: patsy.EvalEnvironment, row: Mapping[str, pd.Series]) -> Any:
    """The value of one formula term on one synthetic row (patsy's factor protocol)."""
    state: dict[str, Any] = {}
    try:
        with np.errstate(all="ignore"):
            for which in range(factor.memorize_passes_needed(state, env)):
                factor.memorize_chunk(state, which, row)
                factor.memorize_finish(state, which)
            return factor.eval(state, row)
    except Exception as err:  # the formula's own code, run on public stand-ins only
        raise FormulaError(f"cannot evaluate {factor.code!r}: {err}") from None


def _is_time(value: Any) -> bool:
    """Whether a term's value is a date, time, duration or period (its dtype, or for an
    ``object`` array its first value: one of the public stand-ins)."""
    if isinstance(value, _CategoricalBox):
        value = value.data
    dtype = getattr(value, "dtype", None)
    if isinstance(dtype, pd.DatetimeTZDtype | pd.PeriodDtype) or getattr(dtype, "kind", "") in (
        "m",
        "M",
    ):
        return True
    first = np.asarray(value).ravel()[:1]
    return bool(first.size) and isinstance(first[0], _TIME_TYPES)


def _kind(value: Any) -> str:
    dtype = getattr(value.data if isinstance(value, _CategoricalBox) else value, "dtype", None)
    return "a date or time" if _is_time(value) else f"text or a factor (dtype {dtype})"


def _check_outcome(factor: Any, env: patsy.EvalEnvironment, row: Mapping[str, pd.Series]) -> None:
    value = _factor_value(factor, env, row)
    if _is_time(value) or guess_categorical(value):
        raise FormulaError(
            f"the outcome {factor.code!r} must be one numeric column; it is {_kind(value)}"
        )


def _check_regressor(
    factor: Any,
    tree: ast.AST,
    env: patsy.EvalEnvironment,
    rows: tuple[dict[str, pd.Series], ...],
    dtypes: Mapping[str, Any],
) -> None:
    """Refuse a date regressor, and a factor whose levels would come from the values."""
    values = [_factor_value(factor, env, row) for row in rows]
    columns = _columns_in(tree, dtypes)
    column = columns[0] if columns else "x"
    if _is_time(values[0]):
        raise FormulaError(
            f"{factor.code!r} is a date or time: a regressor must be a number. Convert it "
            f"explicitly, e.g. I(({column} - pd.Timestamp('2000-01-01')).dt.days), or add a "
            "numeric column"
        )
    if not guess_categorical(values[0]):
        return
    found = [_public_levels(v) for v in values]
    if found[0] is not None and found[0] == found[1]:
        return
    what = (
        f"{columns[0]!r} (dtype {dtypes[columns[0]]})"
        if columns
        else f"the value of {factor.code!r}"
    )
    raise FormulaError(
        f"{what} is used as a factor in {factor.code!r} but its levels are not declared; the "
        "levels present in the data are private, so they must be declared (the first is the "
        f"reference): pass levels={{{column!r}: [...]}}, or give the column a Categorical dtype "
        f"with data[{column!r}] = data[{column!r}].astype(pd.CategoricalDtype([...])), or write "
        f"C({column}, levels=[...]) in the formula"
    )
