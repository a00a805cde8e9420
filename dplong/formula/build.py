"""A formula's design on the data in memory: the :class:`~dplong.formula.DesignSpec` built from
the public facts, then evaluated on the rows, grouped by user."""

from __future__ import annotations

import numpy as np
import pandas as pd
import patsy

from dplong._validation import warn
from dplong.exceptions import DataError, DataHolderWarning, FormulaError
from dplong.formula.levels import LevelsLike, warn_levels_from_values
from dplong.formula.panel import PanelDesign, time_order
from dplong.formula.spec import DesignSpec
from dplong.formula.terms import _PATSY_NAMES, _parse, _unresolved, formula_env, model_desc
from dplong.formula.users import (
    GroupsLike,
    check_groups,
    check_users,
    column_or_array,
    user_codes,
)

#: The outcome's placeholder name in the design of a formula's right-hand side alone.
_PLACEHOLDER = "_dplong_outcome"


def rhs_design(
    formula: str,
    rows: pd.DataFrame,
    eval_env: patsy.EvalEnvironment,
    levels: LevelsLike | None = None,
) -> tuple[DesignSpec, pd.DataFrame]:
    """The :class:`DesignSpec` of ``formula``'s right-hand side on ``rows`` the analyst
    supplies (to predict), and those rows as it evaluates them (the outcome a placeholder).

    Parameters
    ----------
    formula : str
        A fit's formula; its outcome is not read.
    rows : pandas.DataFrame
        The analyst's rows.
    eval_env : patsy.EvalEnvironment
        Where the names that are not columns are looked up (the caller's of ``predict``).
    levels : mapping of str to sequence, optional
        The fit's declared levels.

    Returns
    -------
    tuple of DesignSpec and pandas.DataFrame

    Raises
    ------
    DataError
        A name the terms read is neither a column of ``rows`` nor a name of ``eval_env``
        (or numpy's ``np``, patsy's builtins, Python's): a column the rows lack.
    FormulaError
        The terms cannot be evaluated on ``rows``; said in ``formula``'s words.

    Examples
    --------
    >>> import pandas as pd, patsy
    >>> from dplong.formula import rhs_design
    >>> rows = pd.DataFrame({"x": [1.0, 2.0]})
    >>> spec, frame = rhs_design("y ~ x + I(x**2)", rows, patsy.EvalEnvironment.capture())
    >>> spec.columns
    ('Intercept', 'x', 'I(x ** 2)')
    >>> rhs_design("y ~ x + np.log(z)", rows, patsy.EvalEnvironment.capture())
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: the rows lack the column(s) ['z'] that 'y ~ x + np.log(z)' reads...
    """
    lhs, rhs = formula.split("~", 1)
    desc = model_desc(rhs)
    env = formula_env(eval_env)
    namespace = env.with_outer_namespace(_PATSY_NAMES).namespace
    lacking = [
        name
        for term in desc.rhs_termlist
        for factor in term.factors
        for name in _unresolved(_parse(factor, formula), list(rows.columns), namespace)
    ]
    if lacking:
        raise DataError(
            f"the rows lack the column(s) {list(dict.fromkeys(lacking))} that {formula!r} "
            f"reads; they have {list(rows.columns)}"
        )
    frame = rows.assign(**{_PLACEHOLDER: 0.0})
    try:
        spec = DesignSpec.from_formula(
            f"{_PLACEHOLDER} ~ {rhs}", frame, levels=levels, eval_env=env
        )
    except FormulaError as err:  # its first line, in the formula's words (patsy's caret lines
        # point into the placeholder's formula)
        first = str(err).splitlines()[0].replace(_PLACEHOLDER, lhs.strip())
        raise FormulaError(f"cannot evaluate {formula!r} on these rows: {first}") from None
    return spec, frame


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
        Its rows in their order (the index's labels are not read; a Series given for
        ``groups`` or ``time`` must have the same index).
    groups : str or array_like
        User id column (or one id per row). Rows with a missing id belong to no user and are
        dropped; n is the number of distinct non-missing ids.
    time : str or array_like, optional
        Orders the rows within a user (any sortable dtype, dates included; a Categorical
        by its categories' order, text by its declared levels' where ``levels`` has them).
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
        raise DataError(f"data must be a pandas or Dask DataFrame, got {type(data).__name__}")
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
    check_groups(groups, spec.inputs, time)
    codes_all, ids = user_codes(column_or_array(groups, data, "groups"))
    n = len(ids)
    check_users(n, rows=len(data))
    times = None if time is None else time_order(time, data, spec.levels)
    if not data.index.is_unique:  # rows are taken in their order: one user's labels decided
        data = data.reset_index(drop=True)  # whether a fit ran (an audit)
    warn_levels_from_values(spec, data.dtypes, lambda column: data[column].cat.codes.to_numpy())
    design = spec.by_user(data, codes_all, n, time=times)
    no_id = int(np.count_nonzero(codes_all < 0))
    warn_dropped(len(data), design.y.shape[0], no_id, time=time is not None)
    return design


def warn_dropped(rows: int, kept: int, no_id: int, *, time: bool = False) -> None:
    """Warn the data holder (never the results: how many rows a data set drops depends on
    them) of the ``rows - kept`` rows the design left out: ``no_id`` with no user id, the rest
    with a missing or non-finite value in a column or term the formula uses, or a missing
    ``time`` where the rows are ordered by one. A transform can make them (``np.log`` of 0 is
    ``-inf``: ``np.log(coins)`` left out RAND HIE's free plan, 10,997 of its 20,190 rows).

    Examples
    --------
    >>> import warnings
    >>> from dplong.formula.build import warn_dropped
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_dropped(10, 7, 1)
    >>> str(caught[0].message)[:60]
    '3 of 10 rows are left out: 2 a missing or non-finite value i'
    """
    dropped = rows - kept
    if not dropped:
        return
    why = []
    if dropped > no_id:
        why.append(
            f"{dropped - no_id:,} a missing or non-finite value in a column or term of the "
            f"formula{' or in time' if time else ''} (np.log of 0 is -inf; a value outside a "
            "factor's declared levels is missing, as is a term whose code fails on the row)"
        )
    if no_id:
        why.append(f"{no_id:,} no user id")
    warn(
        f"{dropped:,} of {rows:,} rows are left out: {'; '.join(why)} (on your screen only: "
        "dplong.exceptions.DataHolderWarning).",
        DataHolderWarning,
    )
