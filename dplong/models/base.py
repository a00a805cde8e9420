"""The template every formula model fits through: design → per-user statistics → release → results.

A model is its per-user reduction plus labels: :meth:`PanelModel._blocks` returns the
:class:`~dplong.models.blocks.Block` s of statistics it releases, in order (a later block may
use the earlier blocks' released numbers, e.g. the variance components use the released
location). The template validates the common options once, plans and checks every block before
the first noise draw, runs each through the release engine
(:func:`~dplong.models.release_blocks.run_blocks`: :func:`~dplong.privacy.engine.release_means`,
or the paper's estimator for ``variant="theory"`` and the local model,
:mod:`~dplong.models.paper_release`) and assembles the results once
(:func:`~dplong.models.assemble.panel_results`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pandas as pd

from dplong._validation import RandomState, check_random_state
from dplong.dask_frames import ReducedPanel
from dplong.exceptions import ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign, build_design
from dplong.formula.terms import analyst_env
from dplong.models.assemble import panel_results
from dplong.models.blocks import Block, FitRequest
from dplong.models.option_checks import check_accountant
from dplong.models.release_blocks import run_blocks
from dplong.privacy.accounting import Accountant
from dplong.privacy.options import Focus, ReleaseOptions
from dplong.results import ModelSpec, PanelResults

__all__ = ["FormulaModel", "PanelModel"]


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
        # the class the analyst called (PriestleyChao.from_formula builds a subclass per level
        # of privacy, not part of the API)
        called = next((c for c in type(self).__mro__ if c.__name__ == self.model_name), type(self))
        return ModelSpec(
            self.model_name, self.formula, self.nobs_users, tuple(self.exog_names), called
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
        levels: LevelsLike | None = None,
    ) -> PanelDesign:
        return build_design(
            formula,
            data,
            groups=groups,
            time=time,
            levels=levels,
            eval_env=analyst_env(),
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
        if options.local and focus is not None:  # refused, not ignored
            raise ParameterError(
                "focus shares the central engine's budget over the columns; under "
                'privacy="local" every column\'s users answer with the whole ε: drop focus'
            )
        if options.local and not options.refine:
            raise ParameterError(
                'refine=False drops the central engine\'s refinement stage, which privacy="local" '
                "does not run: drop refine"
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
