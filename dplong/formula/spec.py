"""The design of a formula, fixed from public facts: :class:`DesignSpec`.

:meth:`DesignSpec.from_formula` parses the formula once and checks it against the public facts
(the transform firewall, declared levels, the terms' kinds, every term computed from its own
row); the spec's other methods evaluate it on rows, learning nothing from them.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import patsy
import patsy.categorical
from numpy.typing import NDArray

from dplong._validation import not_columns
from dplong.exceptions import DataError, DplongError, FormulaError
from dplong.formula.kinds import _check_outcome, _check_regressor
from dplong.formula.levels import (
    DROPPED,
    PREDICTED_NAN,
    LevelsLike,
    _canonical,
    _declared_levels,
    real_rows,
)
from dplong.formula.missing import _MissingRows
from dplong.formula.names import _check_names
from dplong.formula.panel import PanelDesign, _grouped, _sort_key, warn_shared_times
from dplong.formula.row_wise import _check_row_by_row_cached, _check_row_wise, _verdict_key
from dplong.formula.synthetic import _synthetic_rows
from dplong.formula.terms import _PATSY_NAMES, _columns_in, _parse, formula_env, model_desc
from dplong.formula.transforms import _check_transforms, _with_public_transforms
from dplong.formula.users import check_unique_columns

#: The most columns a design may have: patsy writes out every interaction of declared levels
#: (``C(a, levels=range(200)):C(b, levels=range(200))``, 40,000 columns, took 2.1 s; 10,000
#: levels each would be 10**8, an audit).
MOST_COLUMNS = 10_000


def _check_width(formula: str, terms: list[Any], widths: Mapping[Any, int]) -> None:
    """Refuse a design of more than :data:`MOST_COLUMNS` columns, bounded from each term's
    factors' columns (``widths``: levels, a spline's columns) before patsy writes them out."""
    columns = sum(math.prod(widths[f] for f in term.factors) for term in terms)
    if columns > MOST_COLUMNS:
        raise FormulaError(
            f"{formula[:80]!r} makes up to {columns:,} columns (its interactions of declared "
            f"levels): a design has at most {MOST_COLUMNS:,}"
        )


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
            They take precedence over a ``Categorical`` dtype's categories. Only columns the
            formula reads: levels of any other would be ignored, so they are refused.
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
            raise DataError(f"data must be a pandas or Dask DataFrame, got {type(schema).__name__}")
        env = formula_env(eval_env if eval_env is not None else patsy.EvalEnvironment.capture(1))
        desc = model_desc(formula)
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
        check_unique_columns(schema.columns, inputs)
        namespace = env.with_outer_namespace(_PATSY_NAMES).namespace
        for factor, tree in trees.items():
            # syntax first (its refusals say what to write instead), then the allow-list,
            # before anything is evaluated (the transforms' constants are)
            _check_row_wise(factor.code, tree, dtypes)
            _check_names(factor.code, tree, namespace, dtypes)
            _check_transforms(factor.code, tree, namespace, dtypes)
        declared = _declared_levels(dtypes, levels, inputs)
        env = _with_public_transforms(env, trees.values(), namespace, dtypes)
        input_dtypes = {c: dtypes[c] for c in inputs}
        rows = _synthetic_rows(input_dtypes, declared)
        _check_outcome(outcome_factor, env, rows[0])
        widths = {f: _check_regressor(f, trees[f], env, rows, dtypes) for f in factors}
        _check_width(formula, desc.rhs_termlist, widths)
        both = {c: pd.concat([rows[0][c], rows[1][c]]) for c in inputs}
        if any(
            len(term.factors) == 1 and term.factors[0].name() == "Intercept"
            for term in desc.rhs_termlist
        ):  # a design column of the constant's name: patsy's clash, or taken for the constant
            raise FormulaError(
                f"{formula!r} reads a column named 'Intercept', the name of the formula's "
                "constant: rename the column or write Q('Intercept')"
            )
        try:
            with np.errstate(all="ignore"):  # made-up values: numpy's words on them mislead
                outcome_info, regressor_info = patsy.design_matrix_builders(
                    [desc.lhs_termlist, desc.rhs_termlist],
                    lambda: iter([both]),
                    env,
                    _MissingRows(),
                )
        except DplongError:
            raise
        except Exception as err:  # patsy's, or the term's own (a contrast it cannot read)
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
        key = _verdict_key(formula, trees.values(), namespace, input_dtypes, declared)
        _check_row_by_row_cached(spec, key, input_dtypes, declared)
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
            Which rows of ``frame`` have no missing value (:mod:`dplong.formula`) and are
            in ``y`` and ``X``.

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
        self, frame: pd.DataFrame, *, predicting: bool = False
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
        """Evaluate the spec on every row of ``frame``, dropping none; ``predicting``: rows an
        analyst supplies to predict, whose holder hears that a value outside the declared
        levels gives NaN (the data's own: that their row is dropped).

        For designs that keep every row (item-level regression, where a missing response
        contributes a public centre); :meth:`matrices` drops the rows with a missing value.

        Returns
        -------
        y : ndarray of float64, shape (len(frame),)
        X : ndarray of float64, shape (len(frame), len(columns))
        missing_y, missing_x : ndarray of bool, shape (len(frame),)
            Rows with a missing outcome, and with a missing regressor value
            (:mod:`dplong.formula`); their values in ``y`` or ``X`` are meaningless.

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
            said = f"{', '.join(map(repr, absent))} (used by {self.formula!r})"
            raise FormulaError(not_columns(said, absent, frame.columns, "the data"))
        # values outside declared levels: the rows' holder hears of them
        with real_rows(PREDICTED_NAN if predicting else DROPPED):
            y, X, missing_y, missing_x = self._build_rows(
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

        Rows with a missing value (:mod:`dplong.formula`), a missing user (code -1) or a
        missing ``time`` are dropped; the others come by user code (stable in row order), then
        by ``time`` if given.

        Parameters
        ----------
        frame : pandas.DataFrame
            The whole data, or one chunk of it: the users of a chunk are coded within it.
        codes : ndarray of intp, shape (len(frame),)
            User codes 0..n-1 of the rows, -1 for a missing id (:func:`user_codes`).
        n : int
            Number of users coded.
        time : ndarray, optional
            One value per row ordering the rows within a user (any sortable dtype; missing:
            NaN, None, ``pd.NA`` or NaT).

        Returns
        -------
        PanelDesign

        Raises
        ------
        DataError
            If ``time`` holds values that cannot be ordered (dicts, dates with and without a
            time zone).

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
        if time is not None:
            times = _sort_key(time)
            missing |= pd.isna(time)  # NaN, None, pd.NA, NaT: no place in the user's order
        rows = np.flatnonzero(~missing) if missing.any() else None  # None: every row
        if rows is not None:
            codes = codes[rows]
        keys: list[NDArray[Any]] = [codes]
        if time is not None:
            keys.insert(0, times if rows is None else times[rows])
        if not _grouped(codes, keys[0] if time is not None else None):
            order = np.lexsort(keys)  # by user, then time; stable in row order
            codes = codes[order]
            rows = order if rows is None else rows[order]
        if time is not None:
            warn_shared_times(codes, times if rows is None else times[rows])
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

    def _build_rows(
        self, data: Mapping[str, Any]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
        """:meth:`_build` on the data's rows, where a term that fails on some of them (its code
        raises, or gives values of another kind than the spec's: text where it made numbers)
        leaves just those rows' outcome or regressors missing (as a missing value would), each
        row judged on its own: whether the design is built never depends on the rows (one
        user's value could flip it), and no message quotes them. Found term by term (the
        failure path only), by halving the failing chunks of the distinct values the term
        reads; a term that passes on each row alone and fails on the rows together reads
        across rows, which the spec's probe rows refuse (:mod:`~dplong.formula.row_wise`)."""
        try:
            return self._build(data)
        except Exception:  # the formula's own code on the data: no row decides the outcome
            pass
        size = len(next(iter(data.values())))
        parts: list[tuple[NDArray[np.float64], NDArray[np.bool_]]] = []
        for info, width in ((self.outcome_info, 1), (self.regressor_info, len(self.columns))):
            missing = np.zeros(size, dtype=bool)
            for factor, factor_info in info.factor_infos.items():
                missing |= _failing_rows(factor, factor_info, data)
            values = np.full((size, width), np.nan)
            kept = np.flatnonzero(~missing)
            if kept.size and not info.factor_infos:  # the intercept alone
                values[kept] = 1.0
            elif kept.size:  # patsy evaluates no empty frame
                try:
                    ((values[kept],), (missing[kept],)) = self._matrices(
                        (info,), _rows_at(data, kept)
                    )
                except Exception:
                    raise FormulaError(
                        f"cannot evaluate {self.formula!r} on the data: its terms evaluate "
                        "on each row alone but not on the rows together (a term that reads "
                        "other rows than its own)"
                    ) from None
            parts.append((values, missing))
        (y, missing_y), (X, missing_x) = parts
        return y, X, missing_y, missing_x

    def _build(
        self, data: Mapping[str, Any]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
        """Both matrices of every row of the canonical columns ``data`` (one patsy pass), and
        their rows with a missing or non-finite value; no row is dropped here, so that the
        caller subsets (and copies) once."""
        (y, X), (missing_y, missing_x) = self._matrices(
            (self.outcome_info, self.regressor_info), data
        )
        return y, X, missing_y, missing_x

    def _matrices(
        self, infos: tuple[Any, ...], data: Mapping[str, Any]
    ) -> tuple[list[NDArray[np.float64]], list[NDArray[np.bool_]]]:
        """The matrices of ``infos`` (patsy's design infos) on ``data`` in one patsy pass, and
        each one's rows with a missing or non-finite value."""
        recorder = _MissingRows()
        try:
            with np.errstate(all="ignore"):  # invalid values become missing rows, silently
                matrices = patsy.build_design_matrices(
                    infos, data, NA_action=recorder, return_type="matrix"
                )
        except DplongError:
            raise
        except Exception as err:  # patsy's, or the term's own (pandas on a column's values)
            raise FormulaError(f"cannot evaluate {self.formula!r} on the data: {err}") from None
        # patsy evaluates each factor once, in the order of the infos: its masks come so
        evaluated = dict.fromkeys(f for info in infos for f in info.factor_infos.values())
        factor_missing = dict(zip(evaluated, recorder.masks, strict=True))
        values = [np.asarray(m, dtype=np.float64) for m in matrices]
        missing = []
        for info, matrix in zip(infos, values, strict=True):
            rows = np.logical_not(np.isfinite(matrix).all(axis=1))
            for factor in info.factor_infos.values():
                rows |= factor_missing[factor]
            missing.append(rows)
        return values, missing


def _failing_rows(factor: Any, info: Any, data: Mapping[str, Any]) -> NDArray[np.bool_]:
    """The rows on which one term of the formula fails (:meth:`DesignSpec._build_rows`): its
    code raises, or its values are not of its kind. A term's value on a row depends on that
    row's inputs alone, so one row of each distinct combination of the inputs it reads is
    judged, by halving the chunks of them that fail."""
    size = len(next(iter(data.values())))
    if _term_evaluates(factor, info, data):
        return np.zeros(size, dtype=bool)
    inputs = _columns_in(ast.parse(factor.code.strip(), mode="eval"), data)
    group, firsts = _distinct_rows({c: data[c] for c in inputs}, size)
    bad = np.zeros(firsts.size, dtype=bool)
    chunks = [np.arange(firsts.size)]
    while chunks:
        chunk = chunks.pop()
        if _term_evaluates(factor, info, _rows_at(data, firsts[chunk])):
            continue
        if chunk.size <= 1:  # one row (or none: a term failing on no rows at all)
            bad[chunk] = True
        else:
            chunks += np.array_split(chunk, 2)
    return np.asarray(bad[group], dtype=bool)


def _term_evaluates(factor: Any, info: Any, data: Mapping[str, Any]) -> bool:
    """Whether one term's code runs on ``data`` and gives values of the kind the spec made of
    it (numbers of its width, or a factor's levels)."""
    rows = len(next(iter(data.values())))
    try:
        with np.errstate(all="ignore"):
            value = factor.eval(info.state, data)
        if info.type == "numerical":  # as patsy checks a numerical factor's values
            values = np.asarray(value)
            width = 1 if values.ndim == 1 else values.shape[1]
            return (
                np.issubdtype(values.dtype, np.number)
                and values.ndim in (1, 2)
                and values.shape[0] == rows
                and width == info.num_columns
            )
        patsy.categorical.categorical_to_int(value, info.categories, _MissingRows(), factor)
    except Exception:
        return False
    return True


def _distinct_rows(data: Mapping[str, Any], size: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Each of ``size`` rows' group of equal inputs, and the first row of each group (every row
    its own group where the values cannot be grouped, or there are no inputs: one group)."""
    if not data:
        return np.zeros(size, dtype=np.intp), np.zeros(1, dtype=np.intp)
    frame = pd.DataFrame({c: _exact(v) for c, v in data.items()})
    try:
        codes = frame.groupby(list(frame.columns), dropna=False, sort=False, observed=True).ngroup()
        group = codes.to_numpy(dtype=np.intp)
    except (TypeError, ValueError):  # unhashable values
        group = np.arange(size, dtype=np.intp)
    _, firsts = np.unique(group, return_index=True)
    return group, firsts.astype(np.intp)


def _exact(values: Any) -> Any:
    """A column's values as :func:`_distinct_rows` groups them: apart wherever a term may tell
    them apart. Equality groups -0.0 with 0.0 and 1 with 1.0 and True, and a term that failed
    on one of them judged the other by it: one user's -0.0 dropped another user's 0.0 row, or
    failed the fit (an audit). Floats by their bits, objects by their type and repr."""
    array = np.asarray(values)
    if array.dtype.kind == "f":
        return np.ascontiguousarray(array).view(f"i{array.dtype.itemsize}")
    if array.dtype == object:
        return [f"{type(v).__qualname__}:{v!r}" for v in array]
    return values


def _rows_at(data: Mapping[str, Any], positions: NDArray[np.intp]) -> dict[str, Any]:
    """The canonical columns' values at some rows, indexed 0, 1, ... like a frame of their
    own."""
    return {
        c: v.iloc[positions].reset_index(drop=True)
        if isinstance(v, pd.Series)
        else np.asarray(v)[positions]
        for c, v in data.items()
    }
