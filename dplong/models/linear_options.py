"""The public options of :class:`~dplong.LongitudinalOLS`, checked before any noise: the
working correlation, the covariance, the declared between-user regressors, a dependence model's
bounds and what the within estimator accepts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dplong._validation import per_column, real_number
from dplong.dependence import DependenceModel
from dplong.exceptions import FormulaError, ParameterError
from dplong.models.option_checks import COV_TYPES, check_min_rows
from dplong.models.reduce import WorkingCorrelation
from dplong.privacy.options import Focus, ReleaseOptions

__all__: list[str] = []

_CORRELATIONS = ("independence", "ar1", "exchangeable")


def _working_correlation(
    correlation: object, correlation_param: object, *, timed: bool
) -> WorkingCorrelation:
    """``from_formula``'s working correlation, its parameter in the kind's range; refused, not
    ignored: a parameter of ``"independence"`` (which takes none), and ``"ar1"`` without
    ``time`` (``timed``), whose prewhitening would follow the order the rows happen to have."""
    if correlation not in _CORRELATIONS:
        raise ParameterError(f"correlation must be one of {_CORRELATIONS}, got {correlation!r}")
    param = real_number(correlation_param, "correlation_param")
    if correlation == "independence" and param != 0.0:
        raise ParameterError(
            "correlation_param applies to correlation='ar1' or 'exchangeable'; "
            f"'independence' takes none, got {param!r}"
        )
    bounds = {"ar1": (-1.0, 1.0), "exchangeable": (0.0, 1.0)}.get(correlation)
    if bounds and not (
        bounds[0] <= param < bounds[1] and (correlation == "exchangeable" or param > -1)
    ):
        raise ParameterError(
            f"correlation_param for {correlation!r} must lie in "
            f"{'(-1, 1)' if correlation == 'ar1' else '[0, 1)'}, "
            f"got {param!r}"
        )
    if correlation == "ar1" and not timed:
        raise ParameterError(
            "correlation='ar1' needs time= (the column that orders a user's rows): AR(1) "
            "links consecutive times, and the order of the rows in data need not be theirs"
        )
    return WorkingCorrelation(correlation, float(param))


def _check_cov_type(cov_type: object) -> None:
    """Refuse every covariance but the person-clustered one (see ``fit``), before any noise."""
    if cov_type in COV_TYPES:
        return
    raise ParameterError(
        f"cov_type must be 'clustered' (linearmodels) or 'cluster' (statsmodels), got "
        f"{cov_type!r}: under user-level privacy the standard errors are clustered by person "
        "(the unit of privacy and of sampling); a covariance that treats a person's rows as "
        "independent is not offered"
    )


def _between_columns(
    between: object, names: tuple[str, ...], *, within: bool, formula: str
) -> tuple[str, ...]:
    """The declared between-user regressors of ``fit(between=...)``, checked (public), of a
    fit whose regressors other than the intercept are ``names``; a within fit must keep one."""
    absorbed = _declared_between(between, names, within=within)
    if within and not set(names) - set(absorbed):
        raise FormulaError(
            f"the within estimator needs a regressor besides the intercept and the "
            f"declared between-user columns; {formula!r} has none"
        )
    return absorbed


def _declared_between(between: object, names: tuple[str, ...], *, within: bool) -> tuple[str, ...]:
    """``fit(between=...)``'s names, checked against ``names``."""
    if between is None:
        return ()
    if not within:
        raise ParameterError(
            'between= applies to estimator="within" (a per-user fit cannot separate a '
            "column constant within the user from its intercept); for their effects use "
            "PooledOLS or BetweenOLS"
        )
    listed = (between,) if isinstance(between, str) else between
    if not isinstance(listed, Sequence | tuple) or not all(isinstance(c, str) for c in listed):
        raise ParameterError(f"between must be a list of column names; got {between!r}")
    # a factor named by its column stands for its indicators (between=["arm"])
    meant = {name: [name] if name in names else _dummies(name, names) for name in listed}
    expanded = [c for columns in meant.values() for c in columns]
    unknown = [name for name, columns in meant.items() if not columns]
    if unknown:
        raise ParameterError(
            f"between names {unknown}, which are not regressors of the within fit nor factors "
            f"of them; expected some of {list(names)}"
        )
    return tuple(dict.fromkeys(expanded))


def _dummies(column: str, names: tuple[str, ...]) -> list[str]:
    """The indicator columns among ``names`` of a factor of ``column`` (``arm[T.b]``,
    ``C(arm)[T.b]``, ``C(arm, levels=[...])[T.b]``, ``C(Q('study arm'))[T.b]``).

    Examples
    --------
    >>> from dplong.models.linear_options import _dummies
    >>> _dummies("arm", ("x", "C(arm, levels=['a', 'b'])[T.b]", "arm2[T.c]", "arm[T.c]"))
    ["C(arm, levels=['a', 'b'])[T.b]", 'arm[T.c]']
    """
    heads = (f"{column}[", f"C({column})[", f"C({column},", f"C(Q('{column}')", f'C(Q("{column}")')
    return [name for name in names if name.startswith(heads)]


def _check_dependence_bounds(scale: object, min_rows: object, min_eigenvalue: object) -> None:
    """Refuse, not ignore, ``min_rows`` and ``min_eigenvalue`` without a dependence model."""
    unused = [
        k for k, v in (("min_rows", min_rows), ("min_eigenvalue", min_eigenvalue)) if v is not None
    ]
    if unused and not isinstance(scale, DependenceModel):
        raise ParameterError(
            f"{' and '.join(unused)} only apply with a dependence model as scale "
            "(e.g. scale=AR1(0.5)); drop them or state the model"
        )


def _dependence_proxy(model: DependenceModel, *, min_rows: Any, min_eigenvalue: Any) -> float:
    """The variance proxy ``ρ_u / (T θ)`` of one user's coefficients under a dependence model
    of their errors, at least T rows and ``λ_min(X_u'X_u / T) >= θ`` (Lemma 5.15)."""
    rows = check_min_rows(min_rows, "turn a dependence model into a radius")
    if (
        isinstance(min_eigenvalue, bool)
        or not isinstance(min_eigenvalue, int | float | np.integer | np.floating)
        or not (math.isfinite(min_eigenvalue) and min_eigenvalue > 0)
    ):
        raise ParameterError(
            "min_eigenvalue θ > 0 (public lower bound on the smallest "
            "eigenvalue of X_u'X_u / T) is needed with a dependence "
            f"model; got {min_eigenvalue!r}"
        )
    return model.log_sobolev_constant(rows) / (rows * float(min_eigenvalue))


def _within_proxy(
    options: ReleaseOptions, correlation: WorkingCorrelation, *, scale: Any, focus: Focus
) -> float | None:
    """The options ``fit(estimator="within")`` refuses, then its stated variance proxy of
    every released cross product (None: estimated privately)."""
    unsupported = {
        "privacy": (options.local, 'privacy="central"'),
        "variant": (options.variant != "default", 'variant="default"'),
        "focus": (focus is not None, "focus=None"),
        "correlation": (
            correlation.kind != "independence",
            'correlation="independence" in from_formula',
        ),
    }
    for option, (bad, needed) in unsupported.items():
        if bad:
            raise ParameterError(f'estimator="within" needs {needed} (got another {option})')
    if isinstance(scale, str) and scale == "estimate":
        return None
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.integer | np.floating):
        raise ParameterError(
            'with estimator="within", scale must be "estimate" or one positive number '
            f"(the variance proxy of every released cross product); got {scale!r}"
        )
    return float(per_column(scale, 1, "scale")[0])
