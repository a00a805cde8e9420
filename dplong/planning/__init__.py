"""Plan a fit from public facts alone: will it be refused, will it warn, how much noise, at what ε.

Whether a fit is refused depends on public facts only (n, the formula, the declared levels and
the options: ``docs/design`` §1), so it can be decided before any data are at hand. This package
decides it **by running the model's own fit** in a planning mode, not by a second copy of its
rules: a fit runs its validation, chooses its blocks and budget shares and makes and checks
every release plan (:class:`~dplong.privacy.budget.ReleasePlan`) as it always does, and stops
at its :func:`checkpoint` — the point after which nothing is refused and before the first noise
draw — handing back its :class:`FitPlan`. A model that ends in
:func:`~dplong.models.release_blocks.run_blocks` reaches the checkpoint there; a model with
releases of its own calls :func:`checkpoint` itself right before its first draw (see
:class:`FitPlan`).

On top of that decision:

* :func:`plan` (``dplong.plan``, ``dplong plan`` on the command line) builds the model on
  stand-in rows made from public facts (n users, the formula's columns, the declared levels)
  — nothing the decision reads — and reports each released column's predicted privacy-noise sd
  (:func:`~dplong.privacy.engine.forecast_noise`), the warnings its plans carry, and the
  smallest ε (or n) at which the fit is released, released without warnings, or reaches a
  target noise sd;
* :func:`advised` wraps a model's ``fit``: when a budget refusal is raised, the ε it advises
  is found by :func:`smallest_epsilon`, bisection on the same decision, so that refitting at
  that ε is not refused (or the message says that no ε helps); a plan's reliability note (a
  private median may miss the data) names the smallest ε at which the fit plans without one
  (:data:`~dplong.privacy.budget.QUIET_REMEDY`).

Its public names are imported from here (the modules are its layout, not its interface):

- :mod:`~dplong.planning.checkpoints` — :class:`FitPlan`, :class:`PlannedBlock`,
  :func:`checkpoint` and the planning mode (:func:`planning`, :class:`Planned`);
- :mod:`~dplong.planning.decision` — what a fit run in planning mode comes to, and
  :func:`is_budget_refusal`;
- :mod:`~dplong.planning.search` — :func:`smallest_epsilon` and the smallest n, by bisection on
  that decision;
- :mod:`~dplong.planning.advice` — :func:`advised` and the remedies it keeps;
- :mod:`~dplong.planning.stand_in` — the model's ``from_formula`` and the stand-in rows it is
  built on (:func:`stand_in_rows`, :func:`formula_columns`);
- :mod:`~dplong.planning.forecast` — the table of each released column's predicted noise;
- :mod:`~dplong.planning.results` — :class:`PlanResults` and its summary;
- :mod:`~dplong.planning.planner` — :func:`plan`.

Examples
--------
>>> import dplong
>>> p = dplong.plan("lwage ~ exper + expersq", model="ols", n=545, epsilon=1.0,
...                 estimator="within")
>>> p.refused, p.smallest_epsilon
(True, 1.4)
>>> dplong.plan("lwage ~ exper + expersq", model="ols", n=545, epsilon=1.4,
...             estimator="within").refused
False
"""

from dplong.planning.advice import advised
from dplong.planning.checkpoints import FitPlan, PlannedBlock, checkpoint, planning
from dplong.planning.checkpoints import Planned as Planned
from dplong.planning.decision import _decide as _decide
from dplong.planning.decision import is_budget_refusal as is_budget_refusal
from dplong.planning.planner import plan
from dplong.planning.results import PlanResults
from dplong.planning.search import EPSILON_RANGE as EPSILON_RANGE
from dplong.planning.search import PRECISION as PRECISION
from dplong.planning.search import USERS_RANGE as USERS_RANGE
from dplong.planning.search import smallest_epsilon
from dplong.planning.stand_in import STAND_IN_SEED as STAND_IN_SEED
from dplong.planning.stand_in import formula_columns as formula_columns
from dplong.planning.stand_in import stand_in_rows as stand_in_rows

__all__ = [
    "FitPlan",
    "PlanResults",
    "PlannedBlock",
    "advised",
    "checkpoint",
    "plan",
    "planning",
    "smallest_epsilon",
]
