"""Simulated Gaussian panels whose dependence is stated by a :mod:`dplong.dependence` model.

The generators reproduce the designs of the paper's simulation study (§7): rows that are
i.i.d., AR(1) (the paper's Toeplitz(φ), ``Cov = φ^|t-s|``) or equicorrelated, for one user's
rows (user-level data, §7.2) or for the n items of an item-level sample (§7.1). The covariance
always comes from the same :class:`~dplong.dependence.DependenceModel` that can be passed as
``scale=`` to a fit, so the data and the stated assumption cannot drift apart.

Draws are vectorised over users and replications: independent Gaussian vectors are filtered
(AR(1)), shifted by a shared factor (exchangeable) or multiplied by a Cholesky factor (any other
model); there is no Python loop over users.

``random_state`` makes a *simulation* reproducible. It has nothing to do with the randomness
of a private release, which must come from fresh entropy (``random_state=None`` in ``fit``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import signal

from dplong._validation import RandomState, check_random_state
from dplong.dependence import AR1, DependenceModel, Exchangeable, Independent
from dplong.exceptions import ParameterError

__all__ = ["dependent_normal", "linear_panel", "long_format", "panel_rows"]

Size = int | Sequence[int] | None


def _count(value: int, name: str, minimum: int = 1) -> int:
    try:
        whole = int(value)
    except (TypeError, ValueError):
        whole = minimum - 1
    if isinstance(value, bool) or whole != value or whole < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return whole


def _shape(size: Size) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (_count(size, "size", minimum=0),)
    given: object = size  # untyped callers: text, a float
    if isinstance(given, str) or not isinstance(given, Iterable):
        raise ParameterError(f"size must be an integer or a tuple of integers, got {size!r}")
    return tuple(_count(k, "size", minimum=0) for k in given)


def _finite(value: float, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise ParameterError(f"{name} must be a finite number, got {value!r}")
    return number


def dependent_normal(
    length: int,
    dependence: DependenceModel | None = None,
    *,
    mean: float = 0.0,
    size: Size = None,
    random_state: RandomState = None,
    rng: RandomState = None,
) -> NDArray[np.float64]:
    """Independent Gaussian vectors ``N(mean · 1, Σ)``, ``Σ = dependence.covariance(length)``.

    One vector is the T rows of one user, or — with ``length=n`` — an item-level sample of n
    dependent observations as in the paper's §7.1 (Fig. 1 and Fig. 3).

    Parameters
    ----------
    length : int
        Entries per vector.
    dependence : DependenceModel, optional
        Covariance of one vector; default :class:`~dplong.dependence.Independent` (standard
        normal entries). :class:`~dplong.dependence.AR1`, :class:`~dplong.dependence.Exchangeable`
        and :class:`~dplong.dependence.Independent` are drawn in O(length) per vector; any other
        model through the Cholesky factor of its ``length x length`` covariance.
    mean : float
        Common mean of every entry.
    size : int or tuple of int, optional
        Shape of the array of independent vectors (e.g. replications, users).
    random_state, rng : None, int or numpy.random.Generator
        Source of randomness, for reproducible simulations (``rng`` is numpy's SPEC 7 name
        for the same argument: give at most one of the two).

    Returns
    -------
    numpy.ndarray
        Shape ``(*size, length)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.dependence import AR1, Exchangeable
    >>> from dplong.simulate import dependent_normal
    >>> x = dependent_normal(3, AR1(phi=0.5), size=200_000, random_state=0)
    >>> x.shape
    (200000, 3)
    >>> AR1(phi=0.5).covariance(3)
    array([[1.  , 0.5 , 0.25],
           [0.5 , 1.  , 0.5 ],
           [0.25, 0.5 , 1.  ]])
    >>> bool(np.allclose(np.cov(x, rowvar=False), AR1(phi=0.5).covariance(3), atol=0.02))
    True
    >>> sample = dependent_normal(1000, Exchangeable(correlation=0.25), mean=5.0,
    ...                           size=(2, 4), random_state=1)
    >>> sample.shape
    (2, 4, 1000)
    """
    length = _count(length, "length")
    model = Independent() if dependence is None else dependence
    if not isinstance(model, DependenceModel):
        raise ParameterError(
            f"dependence must be a dplong.dependence model, got {type(dependence).__name__}"
        )
    mean = _finite(mean, "mean")
    shape = _shape(size)
    rng = check_random_state(random_state, rng)
    z = rng.standard_normal((*shape, length))
    if type(model) is Independent:
        draws = math.sqrt(model.variance) * z
    elif type(model) is AR1:
        # stationary AR(1): x_0 = sd z_0, x_t = φ x_{t-1} + sd √(1-φ²) z_t
        innovation = math.sqrt(1.0 - model.phi**2)
        z[..., 0] /= innovation
        filtered = signal.lfilter([innovation], [1.0, -model.phi], z, axis=-1)
        draws = math.sqrt(model.variance) * np.asarray(filtered, dtype=np.float64)
    elif type(model) is Exchangeable:
        shared = rng.standard_normal((*shape, 1))
        r = model.correlation
        draws = math.sqrt(model.variance) * (math.sqrt(r) * shared + math.sqrt(1.0 - r) * z)
    else:
        factor = np.linalg.cholesky(model.covariance(length))
        draws = z @ factor.T
    out: NDArray[np.float64] = draws + mean
    return out


def panel_rows(
    n_users: int,
    n_rows: int,
    dependence: DependenceModel | None = None,
    *,
    mean: float = 0.0,
    size: Size = None,
    random_state: RandomState = None,
    rng: RandomState = None,
) -> NDArray[np.float64]:
    """A balanced panel of independent users, each with ``n_rows`` dependent Gaussian rows.

    User u's rows are ``N(mean · 1, Σ_T)`` with ``Σ_T = dependence.covariance(n_rows)``
    (Def 5.1 with independent users, as in the paper's §7.2). For dependence *between* users
    draw one long vector with :func:`dependent_normal` instead.

    Parameters
    ----------
    n_users, n_rows : int
        Number of users n and rows per user T.
    dependence : DependenceModel, optional
        Covariance of one user's rows; default independent standard normal rows.
    mean : float
        Common mean μ.
    size : int or tuple of int, optional
        Shape of independent replications of the whole panel.
    random_state, rng : None, int or numpy.random.Generator
        Source of randomness, for reproducible simulations (``rng`` is numpy's SPEC 7 name
        for the same argument: give at most one of the two).

    Returns
    -------
    numpy.ndarray
        Shape ``(*size, n_users, n_rows)``; pass ``rows.mean(axis=-1)`` (the user means) or
        :func:`long_format` of one panel to a private estimator.

    Examples
    --------
    >>> import dplong
    >>> from dplong.dependence import AR1
    >>> from dplong.simulate import panel_rows
    >>> rows = panel_rows(2000, 10, AR1(phi=0.95), mean=100.0, random_state=0)
    >>> rows.shape
    (2000, 10)
    >>> res = dplong.winsorized_mean(rows.mean(axis=1), epsilon=1.0,
    ...                              scale=AR1(phi=0.95).mean_scale(10), random_state=1)
    >>> bool(abs(res.params["x"] - 100.0) < 0.2)
    True
    >>> panel_rows(50, 4, size=3, random_state=0).shape  # three replications
    (3, 50, 4)
    """
    n_users = _count(n_users, "n_users")
    return dependent_normal(
        n_rows,
        dependence,
        mean=mean,
        size=(*_shape(size), n_users),
        random_state=random_state,
        rng=rng,
    )


def long_format(
    rows: ArrayLike, *, user: str = "user", time: str = "time", value: str = "y"
) -> pd.DataFrame:
    """One row per user and time from an ``n_users x n_rows`` array, for the formula models.

    Parameters
    ----------
    rows : array_like, shape (n_users, n_rows)
        Row ``u`` holds user u's values in time order (e.g. from :func:`panel_rows`).
    user, time, value : str
        Column names of the user id (0, 1, ...), the time index (0, 1, ...) and the values.

    Returns
    -------
    pandas.DataFrame
        ``n_users * n_rows`` rows sorted by user, then time.

    Examples
    --------
    >>> from dplong.simulate import long_format
    >>> long_format([[1.0, 2.0], [3.0, 4.0]])
       user  time    y
    0     0     0  1.0
    1     0     1  2.0
    2     1     0  3.0
    3     1     1  4.0
    """
    try:
        values = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("rows must be numbers (n_users, n_rows)") from None
    if values.ndim != 2:
        raise ParameterError(
            f"rows must be a 2-D array (n_users, n_rows), got {values.ndim} dimensions"
        )
    if len({user, time, value}) != 3:
        raise ParameterError("user, time and value must be three different column names")
    n_users, n_rows = values.shape
    frame: pd.DataFrame = pd.DataFrame(
        {
            user: np.repeat(np.arange(n_users), n_rows),
            time: np.tile(np.arange(n_rows), n_users),
            value: values.ravel(),
        }
    )
    return frame


def linear_panel(
    n_users: int,
    n_rows: int,
    coefficients: ArrayLike,
    dependence: DependenceModel | None = None,
    *,
    random_state: RandomState = None,
    rng: RandomState = None,
) -> pd.DataFrame:
    """A panel from the user-level linear model of Def 5.13, ``y_u = X_u β + e_u``.

    The design has an intercept and ``p - 1`` regressors ``x1, x2, ...``, i.i.d. standard
    normal over rows, so that they vary within every user and ``X_u'X_u / T ≈ I``. The errors
    of one user follow ``dependence`` (independent across users). A user's OLS coefficients
    then have covariance at most ``ρ_u (X_u'X_u)^{-1}`` (Lemma 5.15), about
    ``dependence.mean_scale(T)`` for large T and somewhat more for small T (the smallest
    eigenvalue of ``X_u'X_u / T`` falls below 1): a guide to ``scale=`` for
    :class:`~dplong.LongitudinalOLS`.

    Parameters
    ----------
    n_users, n_rows : int
        Number of users n and rows per user T.
    coefficients : array_like
        β, intercept first (length p >= 1).
    dependence : DependenceModel, optional
        Covariance of one user's errors; default independent standard normal errors.
    random_state, rng : None, int or numpy.random.Generator
        Source of randomness, for reproducible simulations (``rng`` is numpy's SPEC 7 name
        for the same argument: give at most one of the two).

    Returns
    -------
    pandas.DataFrame
        Columns ``user``, ``time``, ``x1``, ..., ``y``; sorted by user, then time.

    Examples
    --------
    >>> import dplong
    >>> from dplong.simulate import linear_panel
    >>> df = linear_panel(1000, 8, [1.0, 0.5, -2.0], random_state=0)
    >>> df.columns.tolist(), len(df)
    (['user', 'time', 'x1', 'x2', 'y'], 8000)
    >>> model = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", df, groups="user")
    >>> res = model.fit(epsilon=1.0, scale=0.5, random_state=1)
    >>> bool(((res.params - [1.0, 0.5, -2.0]).abs() < 0.2).all())
    True
    """
    raw = np.atleast_1d(np.asarray(coefficients))
    beta = raw.astype(np.float64) if raw.dtype.kind in "iuf" else np.empty(0)
    if beta.ndim != 1 or beta.size == 0 or not np.isfinite(beta).all():
        raise ParameterError("coefficients must be a non-empty 1-D sequence of finite numbers")
    n_users = _count(n_users, "n_users")
    n_rows = _count(n_rows, "n_rows")
    rng = check_random_state(random_state, rng)
    p = beta.size
    regressors = rng.standard_normal((n_users * n_rows, p - 1))
    errors = panel_rows(n_users, n_rows, dependence, random_state=rng).ravel()
    columns: dict[str, NDArray[np.generic]] = {
        "user": np.repeat(np.arange(n_users), n_rows),
        "time": np.tile(np.arange(n_rows), n_users),
    }
    columns.update({f"x{j + 1}": regressors[:, j] for j in range(p - 1)})
    columns["y"] = beta[0] + regressors @ beta[1:] + errors
    frame: pd.DataFrame = pd.DataFrame(columns)
    return frame
