"""The privacy options of a release, validated once at the entry point of every fit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from dplong._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_fraction,
    describe,
    per_column,
    real_number,
)
from dplong.exceptions import InsufficientUsersError, ParameterError, PrivacyParameterError
from dplong.privacy.noise import MIN_LATTICE_EPSILON

__all__ = [
    "LOCAL_NEEDS_BOUND",
    "Focus",
    "PrivacyModel",
    "ReleaseOptions",
    "Variant",
    "focus_weights",
]

#: The refusal of a local fit without ``bound=`` (the release options' and the scale's).
LOCAL_NEEDS_BOUND = (
    'privacy="local" needs bound=B, a public bound on every user\'s |statistic| per column'
)

PrivacyModel = Literal["central", "local"]
Variant = Literal["default", "theory"]
Focus = Sequence[str] | Mapping[str, float] | None
#: Weight of a column outside ``focus`` when the analyst names the columns they care about.
BACKGROUND_WEIGHT = 0.05
#: Largest local bound: a report's noise is about B/ε, and its square must stay finite.
MAX_BOUND = 1e100
PRIVACY_MODELS: tuple[PrivacyModel, ...] = ("central", "local")
VARIANTS: tuple[Variant, ...] = ("default", "theory")


@dataclass(frozen=True)
class ReleaseOptions:
    """Validated privacy options of one fit (shared by every model and ``winsorized_mean``).

    Attributes
    ----------
    epsilon, delta : float
        The fit's whole budget (central δ default ``1/n**2``; local default 0).
    privacy : {"central", "local"}
    bound : ndarray or None
        Local model: public bound B on every user's statistic, ``|x_u| <= B``, per column.
    variant : {"default", "theory"}
        The planned pipeline (:mod:`dplong.privacy.engine`) or the paper's Alg 3-5.
    gamma : float
        Failure probability behind radii and error bounds.
    refine : bool
        Whether the plan may spend a share on a rough mean to re-centre the final interval.

    Examples
    --------
    >>> from dplong.privacy.options import ReleaseOptions
    >>> options = ReleaseOptions.check(1000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=2)
    >>> options.delta, options.variant
    (1e-06, 'default')
    >>> ReleaseOptions.check(1000, epsilon=1.0, delta=None, privacy="local", bound=None,
    ...                      d=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: privacy="local" needs bound=B, a public bound on every ...
    """

    epsilon: float
    delta: float
    privacy: PrivacyModel
    bound: NDArray[np.float64] | None
    variant: Variant
    gamma: float
    refine: bool = True

    @property
    def local(self) -> bool:
        """Whether each user privatises their own report."""
        return self.privacy == "local"

    @classmethod
    def check(
        cls,
        n: int,
        *,
        epsilon: Any,
        delta: Any,
        privacy: Any,
        bound: Any,
        d: int,
        variant: Any = "default",
        gamma: Any = 0.05,
        refine: Any = True,
    ) -> ReleaseOptions:
        """Validate once at the entry point, with messages naming the argument."""
        eps = check_epsilon(epsilon)
        model = check_choice(privacy, "privacy", PRIVACY_MODELS)
        if n < 2:
            raise InsufficientUsersError(f"a private mean needs at least 2 users, got n={n}")
        if not isinstance(refine, bool):
            raise ParameterError(f"refine must be True or False, got {refine!r}")
        if model == "central":
            total_delta = 1.0 / n**2 if delta is None else check_delta(delta)
            if bound is not None:  # refused rather than silently ignored
                raise ParameterError(
                    'bound is for privacy="local" only; a central release locates the data '
                    "privately, so drop bound"
                )
            bounds = None
        else:
            total_delta = 0.0 if delta is None else check_delta(delta)
            if bound is None:
                raise ParameterError(LOCAL_NEEDS_BOUND)
            if eps < MIN_LATTICE_EPSILON:  # every user answers at the whole ε, on the lattice
                refusal = PrivacyParameterError(
                    f"epsilon={eps:.3g} is below the {MIN_LATTICE_EPSILON:.2g} that a local "
                    "user's float-safe lattice noise supports"
                )
                refusal.budget_refusal = True  # a larger ε cures it (dplong.planning.advised)
                raise refusal
            bounds = per_column(bound, d, "bound")
            if (bounds > MAX_BOUND).any():
                raise ParameterError(
                    f"bound must be at most {MAX_BOUND:g}: the square of a user's noise would "
                    f"overflow; got {describe(bounds.tolist())}"
                )
        return cls(
            epsilon=eps,
            delta=total_delta,
            privacy=model,  # type: ignore[arg-type]
            bound=bounds,
            variant=check_choice(variant, "variant", VARIANTS),  # type: ignore[arg-type]
            gamma=check_fraction(gamma, "gamma"),
            refine=refine,
        )


def focus_weights(focus: Focus, names: Sequence[str]) -> NDArray[np.float64]:
    """Per-column weights of the error the budget sharing minimises.

    ``None``: all columns alike. A list of column names: those columns weigh 1 and the others
    :data:`BACKGROUND_WEIGHT`. A mapping ``{name: weight}``: the weights given (others 1).

    Examples
    --------
    >>> from dplong.privacy.options import focus_weights
    >>> focus_weights(["exper"], ["Intercept", "exper"]).tolist()
    [0.05, 1.0]
    >>> focus_weights({"Intercept": 0.5}, ["Intercept", "exper"]).tolist()
    [0.5, 1.0]
    >>> focus_weights(["age"], ["Intercept", "exper"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: focus names ['age'], which are not parameters; ...
    """
    names = list(names)
    if focus is None:
        return np.ones(len(names))
    if isinstance(focus, str):
        focus = [focus]
    if not isinstance(focus, Mapping | Sequence) or not all(isinstance(k, str) for k in focus):
        raise ParameterError(
            f"focus must be parameter names or a mapping {{name: weight}}, got {focus!r:.80}"
        )
    if isinstance(focus, Mapping):
        keys = list(focus)
        weights = dict.fromkeys(names, 1.0)
    else:
        keys = list(focus)
        weights = dict.fromkeys(names, BACKGROUND_WEIGHT)
    unknown = [k for k in keys if k not in weights]
    if unknown:
        raise ParameterError(
            f"focus names {unknown}, which are not parameters; parameters are {names}"
        )
    for key in keys:
        value = focus[key] if isinstance(focus, Mapping) else 1.0
        try:
            weight = real_number(value, "focus weight")
            weights[key] = 1.0 if weight == 1.0 else check_fraction(weight, "focus weight")
        except ParameterError:
            raise ParameterError(
                f"focus weights must be numbers in (0, 1]; got {value!r} for {key!r}"
            ) from None
    return np.array([weights[name] for name in names])
