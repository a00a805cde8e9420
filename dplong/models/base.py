"""Shared machinery of the formula models: design → per-user statistics → release → results."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
import pandas as pd
import patsy
from numpy.typing import NDArray

from dplong._validation import RandomState, check_random_state, per_column
from dplong.dependence import DependenceModel
from dplong.exceptions import ParameterError
from dplong.formula import GroupsLike, LevelsLike, PanelDesign, build_design
from dplong.privacy.accounting import Accountant, PrivacyLedger
from dplong.privacy.plugin import ScaleRequest, release_with_scale
from dplong.privacy.radius import DEFAULT_GAMMA
from dplong.privacy.winsorized import ReleaseOptions, WinsorizedMeanResult
from dplong.results import PanelResults

ScaleLike = float | NDArray[np.float64] | list[float] | DependenceModel | Literal["estimate"]
M = TypeVar("M", bound="PanelModel")


class PanelModel:
    """Base of the formula models. Subclasses define how users reduce to statistics."""

    model_name: ClassVar[str] = "PanelModel"
    #: The paper's results the error bounds instantiate: (central, local).
    basis: ClassVar[tuple[str, str]] = ("Theorem 4.2", "Theorem 6.4")

    def __init__(self, design: PanelDesign) -> None:
        self._design = design

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

    @property
    def nobs_users(self) -> int:
        """Number of users n: public."""
        return self._design.n

    @property
    def exog_names(self) -> list[str]:
        return list(self._design.columns)

    @property
    def formula(self) -> str:
        return self._design.formula

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.formula!r}, n_users={self.nobs_users})"

    def _release(
        self,
        statistics: NDArray[np.float64],
        identified: NDArray[np.bool_],
        proxy: NDArray[np.float64] | None,
        names: tuple[str, ...],
        options: ReleaseOptions,
        rng: np.random.Generator,
        accountant: Accountant | None,
        request: ScaleRequest,
    ) -> WinsorizedMeanResult:
        """Radii from the per-column variance proxies (``None``: estimated privately as
        ``request`` says), then the engine: :func:`~dplong.privacy.plugin.release_with_scale`.
        The result's ``scale`` holds the proxies used."""
        return release_with_scale(
            statistics,
            scale=proxy,
            identified=identified,
            names=names,
            options=options,
            request=request,
            rng=rng,
            accountant=accountant,
        )

    def _results(
        self,
        release: WinsorizedMeanResult,
        names: list[str],
        sampling_sd: NDArray[np.float64],
        assumptions: tuple[str, ...],
        gamma: float,
        extra: list[tuple[str, float, float, float, float]] | None = None,
        ledger: PrivacyLedger | None = None,
    ) -> PanelResults:
        """Assemble the immutable results of this model (:func:`panel_results`)."""
        return panel_results(
            release,
            model=self.model_name,
            formula=self.formula,
            nobs_users=self.nobs_users,
            basis=self.basis,
            names=names,
            sampling_sd=sampling_sd,
            assumptions=assumptions,
            gamma=gamma,
            extra=extra,
            ledger=ledger,
        )


def panel_results(
    release: WinsorizedMeanResult,
    *,
    model: str,
    formula: str,
    nobs_users: int,
    basis: tuple[str, str],
    names: list[str],
    sampling_sd: Any,
    assumptions: tuple[str, ...],
    gamma: float,
    extra: list[tuple[str, float, float, float, float]] | None = None,
    ledger: PrivacyLedger | None = None,
) -> PanelResults:
    """The immutable results of a release, from released numbers and public facts only.

    ``extra`` rows (name, estimate, noise_scale, noise_sd, sampling_sd) are further released
    parameters with their own ledger, composed into ``ledger``; ``basis`` names the paper's
    result behind the error bounds, (central, local).

    Examples
    --------
    >>> import dplong
    >>> from dplong.models.base import panel_results
    >>> release = dplong.winsorized_mean([1.0, 2.0] * 500, epsilon=1.0, scale=1.0,
    ...                                  names=["x"], random_state=0)
    >>> res = panel_results(release, model="mean", formula="x ~ 1", nobs_users=1000,
    ...                     basis=("Theorem 4.2", "Theorem 6.4"), names=["x"],
    ...                     sampling_sd=(1.0 / 1000) ** 0.5, assumptions=(), gamma=0.05)
    >>> res.params.index.tolist(), res.basis
    (['x'], 'Theorem 4.2')
    """
    extra = extra or []
    index = pd.Index(names + [e[0] for e in extra])

    def series(main: Any, k: int, name: str) -> pd.Series:
        values = np.concatenate([np.atleast_1d(main), [e[k] for e in extra]])
        out: pd.Series = pd.Series(values, index=index, name=name)
        return out

    own = pd.Index(names)
    return PanelResults(
        model=model,
        formula=formula,
        params=series(release.estimate, 1, "params"),
        noise_scale=series(release.noise_scale, 2, "noise scale"),
        noise_sd=series(release.noise_sd, 3, "noise sd"),
        sampling_sd=series(sampling_sd, 4, "sampling sd"),
        projection_interval=pd.DataFrame(
            np.atleast_2d(release.interval), index=own, columns=["lower", "upper"]
        ),
        failed=pd.Series(np.atleast_1d(release.failed), index=own, name="failed"),
        privacy=ledger or release.privacy,
        nobs_users=nobs_users,
        variant=release.variant,
        assumptions=assumptions,
        gamma=gamma,
        midpoint_failure=pd.Series(
            np.atleast_1d(release.midpoint_failure), index=own, name="midpoint failure"
        ),
        basis=basis[release.privacy.model == "local"],
    )


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


def common_fit_args(
    n: int,
    d: int,
    *,
    epsilon: Any,
    delta: Any,
    privacy: Any,
    bound: Any,
    variant: Any,
    midpoint_share: Any,
    gamma: Any,
    random_state: RandomState,
    refine: bool = True,
) -> tuple[ReleaseOptions, np.random.Generator]:
    options = ReleaseOptions.check(
        n,
        epsilon=epsilon,
        delta=delta,
        privacy=privacy,
        bound=bound,
        d=d,
        variant=variant,
        midpoint_share=midpoint_share,
        gamma=gamma if gamma is not None else DEFAULT_GAMMA,
        refine=refine,
    )
    return options, check_random_state(random_state)


def check_min_rows(min_rows: Any, needed_for: str) -> int:
    if min_rows is None or int(min_rows) != min_rows or min_rows < 1:
        raise ParameterError(
            f"min_rows (a public lower bound on rows per user, a positive "
            f"integer) is needed to {needed_for}; got {min_rows!r}"
        )
    return int(min_rows)
