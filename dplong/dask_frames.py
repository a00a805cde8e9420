"""Dask data frames: the same fits on panels larger than one machine's memory.

Every formula model and :func:`dplong.winsorized_mean` take a ``dask.dataframe.DataFrame``
wherever they take a pandas one (``pip install "dplong[dask]"``), and give the same results.
The rows never come together; what happens instead:

1. **The design is fixed from public facts**: the formula, the declared levels and the frame's
   *schema* (column names and dtypes), by :class:`~dplong.formula.DesignSpec`, before any row is
   read. A categorical column whose categories Dask does not know (as read from Parquet) counts
   as undeclared text: its categories would come from the rows, so declare them with
   ``levels=``. Every refusal the in-memory path makes from public facts is made here, with
   the same message.
2. **Each partition is reduced to per-user sufficient sums**: the spec is evaluated on its rows
   (:meth:`~dplong.formula.DesignSpec.by_user`, which learns nothing from them), the rows are
   coded by user within the partition, and the model's own reduction sums them per user — the
   function the in-memory path runs on the whole data (row counts, ``X'X`` and ``X'y`` for
   :class:`~dplong.LongitudinalOLS`, sums for the means, kernel sums for curves).
3. **The partitions' sums are added by user** with Dask's own group-by aggregation: a tree
   reduction for up to 4 partitions; beyond, the sums are split by a hash of the user id over
   one output partition per 4 input partitions (Dask's shuffle of the sums), so that no task
   holds every user's sums. A user's rows may lie in any partitions; only per-user sums move
   between tasks, never rows.
4. **Each output partition turns its users' sums into their statistics** (coefficients,
   means, curves) with the in-memory path's code. Only the n x d matrix of statistics comes
   back, users in order of first appearance as in memory, and goes to the release engine,
   unchanged. With the same data and ``random_state`` the release is the in-memory one: bit for
   bit when the per-user sums are exact, else to the round-off of adding a user's rows in
   another order.

Statistics that need rows in order, or two passes, and how the graph is scheduled, are in
the design notes, ``docs/design/dask.md``.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import functools
import importlib
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong.exceptions import DataError, MissingDependencyError, ParameterError
from dplong.formula import (
    DesignSpec,
    LevelsLike,
    PanelDesign,
    check_groups,
    check_id_types,
    check_users,
    column_or_array,
    time_order,
    user_codes,
    warn_dropped,
    warn_levels_from_values,
)
from dplong.formula.levels import rows_told

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame
    from dask.dataframe import Series as DaskSeries
    from typing_extensions import TypeIs

__all__ = [
    "FrameSpec",
    "ReducedPanel",
    "column_name",
    "design_spec",
    "evaluate_rows",
    "is_dask",
    "reduce_design",
    "reduce_users",
    "require_dask",
    "schema",
]

#: How to install what a Dask frame needs.
INSTALL = 'pip install "dplong[dask]"'
_USER, _FIRST, _POSITION = "__dplong_user__", "__dplong_first__", "__dplong_position__"
#: A row's position is its partition's number times 2**40 plus its row in the partition: it
#: orders rows as in the whole frame (up to 2**23 partitions of up to 2**40 rows).
_PARTITION_SHIFT = 40
#: Input partitions per output partition of the added per-user sums: an output holds the users
#: of about this many partitions, so that no task holds all users' sums, and the outputs are
#: added up and turned into statistics in parallel.
_PARTITIONS_PER_OUTPUT = 4
#: Per-user sums a design's partitions add for the data holder's warning of the rows left out:
#: the user's rows and those the design kept (the rows without an id are counted apart: a
#: partition of such rows alone has no user to carry them, :func:`missing_ids`).
_COUNTED = 2

#: A partition's per-user sums: (rows, user codes 0..n-1, n, per-user tables) -> (n x k).
PartitionSums = Callable[..., NDArray[np.float64]]
#: Per-user statistics from per-user sums: (users x k) -> (users x d).
Statistic = Callable[[NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True)
class FrameSpec:
    """The design of a formula for a Dask frame, in a form Dask can send to its workers.

    patsy's objects do not pickle, so the :class:`~dplong.formula.DesignSpec` travels as its
    recipe — the formula, the frame's schema, the declared levels and the objects the formula
    names from the caller's namespace (``np``, functions, constants) — and is rebuilt on
    arrival, learning nothing new: the same public facts make the same spec. Build it with
    :func:`design_spec`.

    Examples
    --------
    >>> import pickle
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import design_spec
    >>> frame = dd.from_pandas(pd.DataFrame({"y": [1.0], "x": [2.0]}), npartitions=1)
    >>> spec = design_spec("y ~ np.log(x)", frame, levels=None, eval_env=None)
    >>> pickle.loads(pickle.dumps(spec)).spec.columns
    ('Intercept', 'np.log(x)')
    """

    formula: str
    schema: pd.DataFrame
    levels: LevelsLike | None
    names: Mapping[str, Any]

    @functools.cached_property
    def spec(self) -> DesignSpec:
        """The design spec (built once per process)."""
        env = patsy.EvalEnvironment([dict(self.names)])
        return DesignSpec.from_formula(self.formula, self.schema, levels=self.levels, eval_env=env)

    def __getstate__(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key != "spec"}
        state["names"] = {  # modules travel by name (pickle refuses them)
            name: _ModuleName(value.__name__) if isinstance(value, ModuleType) else value
            for name, value in self.names.items()
        }
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state["names"] = {
            name: importlib.import_module(value) if isinstance(value, _ModuleName) else value
            for name, value in state["names"].items()
        }
        self.__dict__.update(state)


class _ModuleName(str):
    """A module of a formula's namespace, by name (see :meth:`FrameSpec.__getstate__`)."""


@dataclass(frozen=True)
class ReducedPanel:
    """The per-user statistics of a Dask frame: what a model keeps of it (private).

    The counterpart of :class:`~dplong.formula.PanelDesign` for data that stay where they are:
    row u of ``statistics`` belongs to the u-th user in order of first appearance in the frame,
    whose id is ``ids[u]``; NaN where the user has no statistic.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import design_spec, reduce_design
    >>> data = pd.DataFrame({"id": [3, 1, 3, 1, 2], "y": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> frame = dd.from_pandas(data, npartitions=2)
    >>> spec = design_spec("y ~ 1", frame, levels=None, eval_env=None)
    >>> panel = reduce_design(frame, spec, groups="id", sums=lambda d: np.column_stack(
    ...     [np.bincount(d.codes, minlength=d.n), np.bincount(d.codes, d.y, minlength=d.n)]),
    ...     statistic=lambda s: s[:, 1:] / s[:, :1])          # user means
    >>> panel.n, panel.ids.tolist(), panel.statistics[:, 0].tolist()
    (3, [3, 1, 2], [2.0, 3.0, 5.0])
    """

    statistics: NDArray[np.float64]
    ids: NDArray[Any]
    n: int
    columns: tuple[str, ...]
    outcome: str
    formula: str


def is_dask(data: object) -> TypeIs[DaskFrame | DaskSeries]:
    """Whether ``data`` is a Dask DataFrame or Series, told from its type: asking needs no
    dask. Dask's other collections (an Array, a Bag) are not: they are refused as any object
    that is not a frame (they crashed where a frame's columns were read, an audit).

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd, dask.array as da
    >>> from dplong.dask_frames import is_dask
    >>> frame = pd.DataFrame({"y": [1.0]})
    >>> is_dask(frame), is_dask(dd.from_pandas(frame, npartitions=1)), is_dask(da.ones(2))
    (False, True, False)
    """
    kind = type(data)
    return kind.__module__.split(".")[0] in ("dask", "dask_expr") and kind.__name__ in (
        "DataFrame",
        "Series",
    )


def require_dask() -> ModuleType:
    """``dask.dataframe``, or a :class:`~dplong.exceptions.MissingDependencyError` naming the
    extra to install.

    Examples
    --------
    >>> from dplong.dask_frames import require_dask
    >>> require_dask().__name__
    'dask.dataframe'
    """
    try:
        return importlib.import_module("dask.dataframe")
    except ImportError as err:
        raise MissingDependencyError(
            f"a Dask data frame needs dask's data frames, which cannot be imported ({err}); "
            f"install them with: {INSTALL}"
        ) from None


def schema(data: DaskFrame) -> pd.DataFrame:
    """An empty pandas frame with the columns and dtypes of ``data``: its public facts.

    A categorical column whose categories Dask does not know (each partition has its own, as
    when read from Parquet) is text here: its categories would come from the rows.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import schema
    >>> data = pd.DataFrame({"y": [1.0], "site": pd.Categorical(["a"])})
    >>> frame = dd.from_pandas(data, npartitions=1)
    >>> schema(frame).dtypes.astype(str).tolist()
    ['float64', 'category']
    >>> schema(frame.assign(site=frame["site"].cat.as_unknown())).dtypes.astype(str).tolist()
    ['float64', 'object']
    >>> list(schema(dd.from_pandas(data[["y", "y"]], npartitions=1)).columns)
    ['y', 'y']
    """
    require_dask()
    from dask.dataframe.utils import has_known_categories

    meta = data._meta  # the partitions' common schema: no rows
    columns = {}
    for position, dtype in enumerate(meta.dtypes):
        unknown = isinstance(dtype, pd.CategoricalDtype) and not has_known_categories(
            meta.iloc[:, position]
        )
        columns[position] = pd.Series(dtype=object if unknown else dtype)
    empty: pd.DataFrame = pd.DataFrame(columns)
    empty.columns = meta.columns  # by position: a repeated name stays repeated, to be refused
    return empty


def design_spec(
    formula: str,
    data: DaskFrame,
    *,
    levels: LevelsLike | None,
    eval_env: patsy.EvalEnvironment | None,
) -> FrameSpec:
    """The design of ``formula`` for a Dask frame, from its schema: every refusal of
    :meth:`DesignSpec.from_formula <dplong.formula.DesignSpec.from_formula>` happens here,
    before any row is read.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import design_spec
    >>> frame = dd.from_pandas(pd.DataFrame({"y": [1.0], "site": ["a"]}), npartitions=1)
    >>> design_spec("y ~ site", frame, levels={"site": ["a", "b"]}, eval_env=None).spec.columns
    ('Intercept', 'site[T.b]')
    """
    if data.ndim != 2:
        raise DataError(
            f"data must be a pandas or Dask DataFrame, got a Dask {type(data).__name__}"
        )
    env = eval_env if eval_env is not None else patsy.EvalEnvironment.capture(1)
    frame_schema = schema(data)
    spec = DesignSpec.from_formula(formula, frame_schema, levels=levels, eval_env=env)
    factors = [*spec.outcome_info.factor_infos, *spec.regressor_info.factor_infos]
    names = {
        node.id
        for factor in factors
        for node in ast.walk(ast.parse(factor.code, mode="eval"))
        if isinstance(node, ast.Name)
    }
    namespace = env.namespace
    named = {name: namespace[name] for name in names if name in namespace}
    found = FrameSpec(formula, frame_schema, levels, named)
    found.__dict__["spec"] = spec  # the spec just built: no second build in this process
    return found


def reduce_design(
    data: DaskFrame,
    spec: FrameSpec,
    *,
    groups: object,
    sums: PartitionSums,
    statistic: Statistic,
    time: object = None,
    ordered: bool = False,
    given: Sequence[pd.Series | pd.DataFrame] = (),
    tell: bool = True,
    aggregations: Sequence[str] = (),
    users: NDArray[Any] | None = None,
) -> ReducedPanel:
    """Per-user statistics of a formula model on a Dask frame (module docstring).

    Parameters
    ----------
    data : dask.dataframe.DataFrame
    spec : FrameSpec
        From :func:`design_spec`.
    groups : str
        The user-id column.
    sums : callable
        ``sums(design, *tables)``: the per-user sums (``design.n x k``) of a
        :class:`~dplong.formula.PanelDesign` of some rows (codes within those rows); the same
        function reduces the whole design in memory. ``tables`` are ``given`` looked up for
        the design's users.
    statistic : callable
        Per-user statistics (users x d) from their summed sums (users x k).
    time : str, optional
        Column ordering the rows within a user.
    ordered : bool
        Whether ``sums`` needs all of a user's rows at once, in order (then the rows are
        shuffled by user first).
    given : sequence of pandas.Series or DataFrame
        Per-user values (one or several columns) indexed by user id (e.g. the means of a
        first pass).
    tell : bool
        Warn the data holder of the rows the design left out (as
        :func:`~dplong.formula.build.warn_dropped` does in memory) and of levels read from
        the values; a second pass over the same rows does not repeat them. The rows without
        an id are counted in a pass over the id column (:func:`missing_ids`).
    aggregations : sequence of str
        How the first of the sums are combined over partitions, as :func:`reduce_users`.
    users : numpy.ndarray, optional
        The ids a model was built on, in order: a later pass (each one reads the frame again)
        must find the same users, since the statistics are added by user and n, public,
        sizes every release.

    Returns
    -------
    ReducedPanel

    Raises
    ------
    DataError, FormulaError, InsufficientUsersError
        As :func:`~dplong.formula.build_design`: no ``groups``, a column that is not in the
        data, no rows, fewer than 2 users; and a pass that finds other ``users``.
    """
    check_groups(groups, spec.spec.inputs, time)
    user = column_name(data, groups, "groups")
    data = readable_ids(data, user)
    order = None if time is None else column_name(data, time, "time")
    needed = list(dict.fromkeys([*spec.spec.inputs, user, *([order] if order else [])]))
    # the data holder's warning of levels read from the values (known categories: one pass
    # over the codes of those columns only)
    if tell:
        warn_levels_from_values(
            spec.spec,
            data.dtypes,
            lambda column: np.asarray(data[column].cat.codes.unique().compute()),
        )
    # a Categorical time whose categories Dask does not know has each partition's own (in
    # order of appearance): its values are read as text, as schema() reads such a column
    text_time = (
        order is not None
        and isinstance(data.dtypes[order], pd.CategoricalDtype)
        and (schema(data)[order].dtype == object)
    )
    partition = _Task(
        _design_sums, spec=spec, time=order, text_time=text_time, sums=sums, tell=tell
    )
    reduced, ids = reduce_users(
        data[needed],
        user,
        partition,
        statistic,
        ordered=ordered,
        given=given,
        carried=_COUNTED,
        aggregations=aggregations,
    )
    statistics, (rows, kept) = reduced[:, :-_COUNTED], reduced[:, -_COUNTED:].T
    n = len(ids)
    check_same_users(ids, users)
    check_users(n, rows=len(data) if n == 0 else n)  # rows counted only if no user has one
    if tell:
        no_id = int(missing_ids(data[user]).sum().compute())
        warn_dropped(int(rows.sum()) + no_id, int(kept.sum()), no_id, time=order is not None)
    design = spec.spec
    return ReducedPanel(statistics, ids, n, design.columns, design.outcome, design.formula)


def check_same_users(ids: NDArray[Any], users: NDArray[Any] | None) -> None:
    """Refuse a fit whose reduction found other users (``ids``) than its model was built on
    (``users``; None: not held), before any noise."""
    if users is not None and not np.array_equal(ids, users):
        raise DataError(
            f"the Dask frame's users changed since the model was built ({len(users)} then, "
            f"{len(ids)} now, or others): build the model again from the data as they are, and "
            "keep them unchanged until its fits are done"
        )


def reduce_users(
    frame: DaskFrame,
    user: str,
    partition: PartitionSums,
    statistic: Statistic,
    *,
    ordered: bool = False,
    given: Sequence[pd.Series | pd.DataFrame] = (),
    carried: int = 0,
    aggregations: Sequence[str] = (),
) -> tuple[NDArray[np.float64], NDArray[Any]]:
    """Per-user statistics of a Dask frame: partitions → per-user sums → added by user →
    statistics (module docstring).

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The columns ``partition`` reads and the user column.
    user : str
        The user-id column; rows with a missing id belong to no user.
    partition : callable
        ``partition(rows, codes, n, *tables)``: the per-user sums (n x k) of a pandas frame
        of rows whose users are coded 0..n-1 in order of first appearance (-1: no user).
    statistic : callable
        Per-user statistics (users x d) from their summed sums (users x k).
    ordered : bool
        Shuffle the rows by user first, so that ``partition`` sees all of a user's rows, in
        their order in ``frame``.
    given : sequence of pandas.Series or DataFrame
        Per-user values (one or several columns) indexed by user id, looked up for the users
        of each partition.
    carried : int
        How many of the last per-user sums ``statistic`` does not take: they are added by
        user and returned after the statistics.
    aggregations : sequence of str
        How each of the first sums is combined over the partitions holding a user's rows,
        Dask's name (``"min"``, ``"max"``: a user's extremes; NaN where none of the user's
        rows had a value); the others are added.

    Returns
    -------
    statistics : ndarray, shape (n, d + carried)
    ids : ndarray, shape (n,)
        The users' ids, in order of first appearance.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import reduce_users
    >>> data = pd.DataFrame({"id": ["b", "a", "b", None], "y": [1.0, 2.0, 3.0, 4.0]})
    >>> counts = lambda rows, codes, n: np.bincount(codes[codes >= 0], minlength=n)[:, None]
    >>> stats, ids = reduce_users(dd.from_pandas(data, npartitions=2), "id",
    ...                           counts, statistic=lambda sums: sums)
    >>> stats[:, 0].tolist(), ids.tolist()
    ([2.0, 1.0], ['b', 'a'])
    """
    dask = importlib.import_module("dask")
    frame = readable_ids(frame, user)
    empty = schema(frame)
    numeric = _numeric(empty, user)  # a keyword: Dask passes partition_info by the signature
    rows = frame.map_partitions(_with_positions, numeric=numeric, meta=_with_positions(empty))
    if ordered:  # the only full shuffle: rows that need their neighbours
        rows = rows.shuffle(on=user)
    tables = [table.iloc[:0] for table in given]
    reduce = _Task(_partition_frame, user=user, partition=partition, ordered=ordered)
    meta = reduce(_with_positions(empty), *tables)
    sums = rows.map_partitions(
        reduce, *[dask.delayed(table, pure=False) for table in given], meta=meta
    )
    how = {_FIRST: "min"} | dict.fromkeys(meta.columns[2:], "sum")
    how |= dict(zip(meta.columns[2:], aggregations, strict=False))
    outputs = math.ceil(frame.npartitions / _PARTITIONS_PER_OUTPUT)
    totals = sums.groupby(_USER, sort=False).agg(how, split_out=outputs)
    finish = _Task(_finish, statistic=statistic, carried=carried)
    try:
        result = totals.map_partitions(finish, meta=finish(meta.set_index(_USER))).compute()
    except Exception as failure:  # a distributed shuffle cannot merge ids of several types
        if isinstance(failure, DataError):  # unhashable ids, said in dplong's words
            raise
        kinds = _id_kinds(frame[user])
        if len(kinds) > 1 or any(kind.startswith("mixed") for kind in kinds):
            raise DataError(
                f"groups: the user ids are of several types across the data's parts ({kinds}), "
                "which a distributed shuffle cannot add up; store the id column with one type "
                "in every file"
            ) from failure
        raise
    order = np.argsort(result[_FIRST].to_numpy(), kind="stable")
    values = result.drop(columns=_FIRST).to_numpy(np.float64)[order]
    ids = result.index.to_numpy()[order]
    check_id_types(ids)  # partitions (files) may store one person's id as a number and as text
    del result
    _return_freed_memory()
    return values, ids


def missing_ids(ids: DaskSeries) -> DaskSeries:
    """Whether each row's id is missing (NaN, None, ``pd.NA``, ±inf: :func:`~dplong.formula.
    user_codes`'): such rows belong to no user, so per-user sums cannot carry them where a
    partition holds no other row (an audit), and they are counted apart.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import missing_ids
    >>> ids = dd.from_pandas(pd.Series([1.0, np.nan, np.inf, 2.0]), npartitions=2)
    >>> int(missing_ids(ids).sum().compute())
    2
    """
    missing: DaskSeries = ids.isnull()
    if pd.api.types.is_float_dtype(ids.dtype) or pd.api.types.is_object_dtype(ids.dtype):
        # only these hold an infinity: pyarrow's integers above 2**53 refused the comparison
        # with one (ArrowInvalid, an audit)
        missing = missing | ids.isin([np.inf, -np.inf])
    return missing


def readable_ids(frame: DaskFrame, user: str) -> DaskFrame:
    """``frame`` with its ids as a shuffle by id reads them: half-precision floats as doubles
    (each exactly; pandas cannot group by them), and ids stored as dates, times or durations
    refused (pyarrow's dates failed the shuffle with a traceback, an audit).

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import readable_ids
    >>> frame = dd.from_pandas(pd.DataFrame({"id": np.float16([1, 2]), "y": [0.5, 1.5]}), 1)
    >>> readable_ids(frame, "id").dtypes["id"]
    dtype('float64')
    """
    dtype = frame.dtypes[user]
    if dtype == np.float16:
        return frame.assign(**{user: frame[user].astype(np.float64)})
    readable = (
        pd.api.types.is_numeric_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_object_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
    ) and not (pd.api.types.is_complex_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype))
    if not readable or str(dtype).startswith(("date", "time", "duration")):
        raise DataError(
            f"groups: the ids of {user!r} are stored as {dtype}; ids are numbers or text: "
            "store the column as one of them"
        )
    return frame


def _id_kinds(ids: DaskSeries) -> list[str]:
    """The kinds of values the partitions' ids hold (pandas' inferred types; a pass over the id
    column only), asked after a reduction failed: a ``distributed`` shuffle of the sums cannot
    merge a partition's numeric ids with another's text ones (Parquet files storing a person's
    id as a number in one and as text in another) and raises its own error before
    :func:`~dplong.formula.check_id_types` sees them. Empty where the column cannot be read
    either (the reduction's own error is then the one to see)."""
    try:
        kinds = ids.map_partitions(_id_kind, meta=(ids.name, object)).compute()
    except Exception:
        return []
    return sorted(set(kinds.dropna()))


def _id_kind(ids: pd.Series) -> pd.Series:
    """The kind of a partition's ids (pandas' inferred type; none if it holds no id)."""
    present = ids.dropna()
    kind = pd.api.types.infer_dtype(present, skipna=True) if len(present) else None
    return pd.Series([kind], name=ids.name, dtype=object)


def column_name(data: DaskFrame, value: object, name: str) -> str:
    """The column of a Dask frame that the argument ``name`` names, refused as in memory if
    it is not one of its columns.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import column_name
    >>> frame = dd.from_pandas(pd.DataFrame({"id": [1], "y": [1.0]}), npartitions=1)
    >>> column_name(frame, "id", "groups")
    'id'
    >>> column_name(frame, "person", "groups")
    Traceback (most recent call last):
    ...
    dplong.exceptions.FormulaError: groups='person' is not a column of the data
    """
    if not isinstance(value, str):
        raise ParameterError(
            f"with a Dask data frame, {name} must be a column name, got {type(value).__name__}"
        )
    column_or_array(value, schema(data), name)
    return value


def evaluate_rows(
    data: DaskFrame, spec: FrameSpec
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
    """:meth:`DesignSpec.evaluate <dplong.formula.DesignSpec.evaluate>` on every row of a Dask
    frame, partitions in order: for designs whose every row is a unit (item-level).

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import design_spec, evaluate_rows
    >>> frame = dd.from_pandas(pd.DataFrame({"y": [1.0, np.nan, 3.0], "x": [0.0, 0.5, 1.0]}),
    ...                        npartitions=2)
    >>> y, X, missing_y, missing_x = evaluate_rows(
    ...     frame, design_spec("y ~ x", frame, levels=None, eval_env=None))
    >>> X[:, 1].tolist(), missing_y.tolist()
    ([0.0, 0.5, 1.0], [False, True, False])
    """
    columns = list(spec.spec.inputs)
    evaluate = _Task(_evaluated_frame, spec=spec, numeric=_numeric(schema(data)[columns]))
    result = (
        data[columns]
        .map_partitions(evaluate, meta=evaluate(schema(data)[columns]))
        .compute()
        .to_numpy(np.float64)
    )
    return result[:, 0], result[:, 3:], result[:, 1] > 0, result[:, 2] > 0


def outcome_rows(data: DaskFrame, spec: FrameSpec) -> DaskSeries:
    """The outcome of ``spec`` on every row of a Dask frame, lazily (NaN where missing): the
    expression left of ``~`` evaluated partition by partition, row by row.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> from dplong.dask_frames import design_spec, outcome_rows
    >>> frame = dd.from_pandas(pd.DataFrame({"y": [1.0, np.nan, 4.0]}), npartitions=2)
    >>> outcome_rows(frame, design_spec("np.sqrt(y) ~ 1", frame, levels=None,
    ...                                 eval_env=None)).compute().tolist()
    [1.0, nan, 2.0]
    """
    columns = list(spec.spec.inputs)
    evaluate = _Task(_outcome_frame, spec=spec, numeric=_numeric(schema(data)[columns]))
    rows: DaskSeries = data[columns].map_partitions(evaluate, meta=evaluate(schema(data)[columns]))
    return rows


def _numeric(empty: pd.DataFrame, user: str | None = None) -> tuple[str, ...]:
    """The columns of a frame's schema (``empty``) held as numbers, but the ids' ``user``."""
    return tuple(
        str(column)
        for column, dtype in empty.dtypes.items()
        if column != user and pd.api.types.is_numeric_dtype(dtype)
    )


def _as_numbers(frame: pd.DataFrame, numeric: tuple[str, ...]) -> pd.DataFrame:
    """A partition with its ``numeric`` columns (the schema's numbers) as numbers: one file of
    a Parquet directory may store a column another way — all missing as Parquet's null type,
    or as text — and Dask passes its partitions on with their own types, so that file's rows
    were all missing (or refused as not numeric) as its type, not the public schema, said (an
    audit). Its cells are read one by one as numbers, as the command line reads every cell: a
    cell that is none is missing."""
    odd = {
        column: pd.to_numeric(frame[column], errors="coerce")
        for column in numeric
        if column in frame.columns and not pd.api.types.is_numeric_dtype(frame[column].dtype)
    }
    return frame.assign(**odd) if odd else frame


class _Task:
    """A function for Dask's tasks, with a token of its own: Dask need not hash what it holds
    (a design, a model's reductions), and each reduction is a computation of its own."""

    def __init__(self, func: Callable[..., Any], /, **keywords: Any) -> None:
        self._call = functools.partial(func, **keywords)
        self._token = uuid.uuid4().hex

    def __call__(self, *args: Any) -> Any:
        return self._call(*args)

    def __dask_tokenize__(self) -> str:
        return self._token


def _with_positions(
    frame: pd.DataFrame,
    partition_info: dict[str, Any] | None = None,
    *,
    numeric: tuple[str, ...] = (),
) -> pd.DataFrame:
    """The rows with their position in the whole frame (:data:`_PARTITION_SHIFT`), the
    ``numeric`` columns as numbers (:func:`_as_numbers`)."""
    frame = _as_numbers(frame, numeric)
    number = 0 if partition_info is None else int(partition_info["number"])
    positions = (np.int64(number) << _PARTITION_SHIFT) + np.arange(len(frame), dtype=np.int64)
    positioned: pd.DataFrame = frame.assign(**{_POSITION: positions})
    return positioned


def _partition_frame(
    frame: pd.DataFrame,
    *given: pd.Series | pd.DataFrame,
    user: str,
    partition: PartitionSums,
    ordered: bool,
) -> pd.DataFrame:
    """One partition's per-user sums, each user with their id and first position."""
    if ordered:  # shuffled: back in the data's order, so that ties sort as in memory
        frame = frame.sort_values(_POSITION, kind="stable")
    frame = frame.reset_index(drop=True)
    codes, ids = user_codes(frame[user])
    tables = [table.reindex(ids).to_numpy(np.float64) for table in given]
    sums = np.asarray(partition(frame, codes, len(ids), *tables), dtype=np.float64)
    out: pd.DataFrame = pd.DataFrame(sums, columns=[f"s{j}" for j in range(sums.shape[1])])
    out.insert(0, _FIRST, frame[_POSITION].to_numpy()[_first_rows(codes)])
    out.insert(0, _USER, ids)
    return out


def _return_freed_memory() -> None:
    """Hand the memory the reduction's threads freed back to the operating system: glibc keeps
    it otherwise (fragmented over its per-thread arenas), and the release would add its own on
    top. Elsewhere than glibc, nothing to do."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.malloc_trim(0)


def _first_rows(codes: NDArray[np.intp]) -> NDArray[np.intp]:
    """The row where each user first appears, in code order: codes count the users seen
    before, so a user's first row is where the running maximum of the codes grows."""
    seen = np.maximum.accumulate(codes) if codes.size else codes
    new = np.empty(codes.size, dtype=bool)
    new[:1] = codes[:1] >= 0
    new[1:] = seen[1:] > seen[:-1]
    return np.flatnonzero(new)


def _design_sums(
    frame: pd.DataFrame,
    codes: NDArray[np.intp],
    n: int,
    *tables: NDArray[np.float64],
    spec: FrameSpec,
    time: str | None,
    text_time: bool,
    sums: PartitionSums,
    tell: bool,
) -> NDArray[np.float64]:
    """A partition's rows as a design grouped by user, reduced by the model's ``sums``; the
    data holder hears of its values outside the declared levels where ``tell``. ``time``'s
    values are read as text where ``text_time`` (categories Dask does not know), ordered by
    the declared levels where the formula has them (:func:`~dplong.formula.time_order`)."""
    if time is None:
        times = None
    else:
        # categories Dask does not know are each partition's own: their text decides
        read = frame[[time]].astype(object) if text_time else frame
        times = time_order(time, read, spec.spec.levels)
    with contextlib.nullcontext() if tell else rows_told():
        design: PanelDesign = spec.spec.by_user(frame, codes, n, time=times)
    # the rows the design left out, for the data holder's warning (:data:`_COUNTED`): each
    # user's rows and kept rows
    counted = [np.bincount(codes[codes >= 0], minlength=n), np.bincount(design.codes, minlength=n)]
    return np.column_stack([sums(design, *tables), *counted]).astype(np.float64)


def _finish(frame: pd.DataFrame, statistic: Statistic, carried: int) -> pd.DataFrame:
    """Per-user statistics of one output partition from its users' summed sums, the last
    ``carried`` sums passed on as they are."""
    summed = frame.drop(columns=_FIRST).to_numpy(np.float64)
    kept = summed.shape[1] - carried
    values = np.column_stack([statistic(summed[:, :kept]), summed[:, kept:]])
    names = [f"t{j}" for j in range(values.shape[1])]
    out: pd.DataFrame = pd.DataFrame(values, index=frame.index, columns=names)
    out.insert(0, _FIRST, frame[_FIRST].to_numpy())
    return out


def _evaluated_frame(
    frame: pd.DataFrame, spec: FrameSpec, numeric: tuple[str, ...] = ()
) -> pd.DataFrame:
    """A partition's outcome, missing flags and regressors, one row per row (the ``numeric``
    columns as numbers, :func:`_as_numbers`)."""
    frame = _as_numbers(frame, numeric)
    y, X, missing_y, missing_x = spec.spec.evaluate(frame.reset_index(drop=True))
    evaluated: pd.DataFrame = pd.DataFrame(np.column_stack([y, missing_y, missing_x, X]))
    return evaluated


def _outcome_frame(
    frame: pd.DataFrame, spec: FrameSpec, numeric: tuple[str, ...] = ()
) -> pd.Series:
    """A partition's outcome, NaN where missing, on the partition's own index (the
    ``numeric`` columns as numbers, :func:`_as_numbers`)."""
    frame = _as_numbers(frame, numeric)
    y, _, missing_y, _ = spec.spec.evaluate(frame.reset_index(drop=True))
    return pd.Series(np.where(missing_y, np.nan, y), index=frame.index, name=spec.spec.outcome)
