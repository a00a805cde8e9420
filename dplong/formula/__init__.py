"""The formula layer: a patsy formula and the public facts about the data make the design.

Public here (docs/design §1) are the formula, the declared factor levels, the constants written in
the formula, and the data's *schema*: its column names and dtypes. A :class:`DesignSpec` is built
from these alone — the design's columns, their names and every factor's reference level never
depend on the rows, so no user can change them — and so is every refusal. The rows are read
afterwards, by :meth:`DesignSpec.matrices`, which evaluates the fixed spec on any chunk of rows
and learns nothing from it.

The rules (factor levels, transforms, dates, the outcome, missing values) and why they hold
are in the design notes, ``docs/design/formula.md``.

The modules, one thing each: :mod:`~dplong.formula.spec` (the :class:`DesignSpec`, built once
from the public facts), :mod:`~dplong.formula.build` (the spec evaluated on the data in memory,
grouped by user), :mod:`~dplong.formula.panel` (:class:`PanelDesign`),
:mod:`~dplong.formula.users` (user ids and their codes), :mod:`~dplong.formula.levels`
(declared levels), :mod:`~dplong.formula.terms` (the formula's code as syntax),
:mod:`~dplong.formula.transforms` (which of patsy's transforms a formula may call),
:mod:`~dplong.formula.row_wise` (every term from its own row),
:mod:`~dplong.formula.kinds` (numbers, factors, dates), :mod:`~dplong.formula.synthetic`
(the rows the spec is checked on) and :mod:`~dplong.formula.missing` (rows with a missing
value).
"""

from __future__ import annotations

# Besides __all__, the names the models, dask_frames and the tests import from here (explicit
# re-exports, as mypy --strict wants them)
from dplong.formula.build import build_design, group_design
from dplong.formula.build import rhs_design as rhs_design
from dplong.formula.build import warn_dropped as warn_dropped
from dplong.formula.levels import LevelsLike as LevelsLike
from dplong.formula.levels import warn_levels_from_values as warn_levels_from_values
from dplong.formula.panel import PanelDesign
from dplong.formula.panel import _sort_key as _sort_key
from dplong.formula.panel import time_order as time_order
from dplong.formula.spec import DesignSpec
from dplong.formula.users import GroupsLike as GroupsLike
from dplong.formula.users import check_groups, check_users, user_codes
from dplong.formula.users import check_id_types as check_id_types
from dplong.formula.users import check_index as check_index
from dplong.formula.users import check_unique_columns as check_unique_columns
from dplong.formula.users import column_or_array as column_or_array

__all__ = [
    "DesignSpec",
    "PanelDesign",
    "build_design",
    "check_groups",
    "check_users",
    "group_design",
    "user_codes",
]
