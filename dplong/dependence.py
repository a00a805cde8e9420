"""Dependence models: within-user covariance → log-Sobolev constants → concentration radii.

For Gaussian data the log-Sobolev constant of a vector is the operator norm of its covariance
(Bakry–Émery, Theorem A.1 of the paper), so each model here is a covariance of one user's
T rows. A model gives

* :meth:`DependenceModel.log_sobolev_constant` — ρ_u = ‖Σ_T‖_op of one user's T rows, the
  *marginal* constant of Remark 5.3 that sets the radius τ (a user mean is ``1/√T``-Lipschitz,
  so its variance proxy is ``ρ_u / T``, Lemma 5.2);
* :meth:`DependenceModel.statistical_constant` — ρ = ‖Σ^n‖_op of all nT rows, which sets the
  statistical error (Lemma 2.11); it exceeds ρ_u only when users depend on each other
  (:class:`RandomEffects`, Lemma 5.9).

Every parameter is a public assumption of the analyst, never estimated from the data here.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import eigvalsh_tridiagonal

from dplong._validation import describe, real_number
from dplong.exceptions import ParameterError

__all__ = [
    "AR1",
    "DependenceModel",
    "Exchangeable",
    "GivenCovariance",
    "Independent",
    "RandomEffects",
    "Toeplitz",
]

#: Largest T whose T x T covariance is built densely for ρ_u (200 MB of float64); models with
#: a closed form or a sparse precision (Independent, Exchangeable, AR1) take any T.
MAX_DENSE_ROWS = 2_000


def _positive(value: float, name: str) -> float:
    value = real_number(value, name)
    if not (math.isfinite(value) and value > 0):
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _check_rows(T: int, name: str = "rows per user T") -> int:
    """``T`` (or ``n``) as a positive whole number; NaN, infinity, a fraction, a string and a
    bool are refused with a message naming the argument."""
    expected = "a positive whole number"
    value = real_number(T, name, expected=expected)
    if not (math.isfinite(value) and value >= 1 and value == int(value)):
        raise ParameterError(f"{name} must be {expected}, got {describe(T)}")
    return int(value)


class DependenceModel(ABC):
    """Covariance of one user's rows, as a function of the number of rows T.

    Subclasses implement :meth:`covariance` and :meth:`describe`; the constants follow. Any
    model can be passed as ``scale=`` to a model's ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.dependence import DependenceModel
    >>> class Doubled(DependenceModel):
    ...     def covariance(self, T):
    ...         return 2.0 * np.eye(T)
    ...     def describe(self):
    ...         return "independent rows, variance 2"
    >>> model = Doubled()
    >>> model.log_sobolev_constant(T=4), model.mean_scale(T=4)
    (2.0, 0.5)
    """

    @abstractmethod
    def covariance(self, T: int) -> NDArray[np.float64]:
        """T x T covariance of one user's rows.

        Examples
        --------
        >>> from dplong.dependence import AR1
        >>> AR1(phi=0.5, variance=2.0).covariance(3)
        array([[2. , 1. , 0.5],
               [1. , 2. , 1. ],
               [0.5, 1. , 2. ]])
        """

    @abstractmethod
    def describe(self) -> str:
        """One line stating the assumption, for summaries and error-bound reports.

        Examples
        --------
        >>> from dplong.dependence import AR1
        >>> AR1(phi=0.5, variance=2.0).describe()
        'AR(1) rows, phi 0.5, variance 2'
        """

    def log_sobolev_constant(self, T: int) -> float:
        """ρ_u = ‖Σ_T‖_op: log-Sobolev constant of one user's T rows (Remark 5.3).

        Examples
        --------
        >>> from dplong.dependence import Toeplitz
        >>> Toeplitz([1.0, 0.5]).log_sobolev_constant(T=2)    # eigenvalues 0.5 and 1.5
        1.5
        """
        rows = _check_rows(T)
        if rows > MAX_DENSE_ROWS:
            raise ParameterError(
                f"rows per user T={rows} is beyond the {MAX_DENSE_ROWS} rows whose covariance "
                f"{type(self).__name__} builds densely; AR1, Exchangeable and Independent take "
                "any T"
            )
        return float(np.linalg.eigvalsh(self.covariance(rows))[-1])

    def mean_scale(self, T: int) -> float:
        """Variance proxy ρ_u / T of one user's mean over T rows (Lemma 5.2).

        This is the ``scale`` of :func:`dplong.winsorized_mean` for user means.

        Examples
        --------
        >>> from dplong.dependence import Exchangeable
        >>> Exchangeable(correlation=0.25).mean_scale(T=5)    # (1 + 4 * 0.25) / 5
        0.4
        """
        return self.log_sobolev_constant(T) / T

    def statistical_constant(self, T: int, n: int) -> float:
        """ρ of all n users' rows; equals ρ_u when users are independent.

        Examples
        --------
        >>> from dplong.dependence import AR1, RandomEffects
        >>> ar = AR1(phi=0.5)
        >>> ar.statistical_constant(T=4, n=100) == ar.log_sobolev_constant(T=4)
        True
        >>> RandomEffects(group_variance=0.5, group_sizes=[10]).statistical_constant(T=4, n=10)
        21.0
        """
        _check_rows(n, "number of users n")
        return self.log_sobolev_constant(T)


@dataclass(frozen=True)
class Independent(DependenceModel):
    """Uncorrelated rows with a common variance (Assumption 2.7 within users).

    Examples
    --------
    >>> from dplong.dependence import Independent
    >>> Independent(variance=4.0).mean_scale(T=8)
    0.5
    >>> Independent(variance=4.0).describe()
    'independent rows, variance 4'
    """

    variance: float = 1.0

    def __post_init__(self) -> None:
        _positive(self.variance, "variance")

    def covariance(self, T: int) -> NDArray[np.float64]:
        return self.variance * np.eye(T)

    def log_sobolev_constant(self, T: int) -> float:
        _check_rows(T)
        return float(self.variance)

    def describe(self) -> str:
        return f"independent rows, variance {self.variance:g}"


@dataclass(frozen=True)
class Toeplitz(DependenceModel):
    """Stationary rows with autocovariances ``gamma[0], gamma[1], ...`` (zero beyond).

    Examples
    --------
    >>> from dplong.dependence import Toeplitz
    >>> round(Toeplitz([1.0, 0.5]).log_sobolev_constant(T=3), 4)
    1.7071
    >>> Toeplitz([1.0, 0.5]).covariance(3)
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """

    autocovariance: Sequence[float]

    def __post_init__(self) -> None:
        raw = np.asarray(self.autocovariance)
        if raw.dtype.kind not in "iuf":
            raise ParameterError("autocovariance must be a sequence of numbers")
        gamma = raw.astype(np.float64)
        if gamma.ndim != 1 or gamma.size == 0 or not np.isfinite(gamma).all() or gamma[0] <= 0:
            raise ParameterError(
                "autocovariance must be a non-empty sequence of finite numbers "
                "with a positive variance first"
            )
        object.__setattr__(self, "autocovariance", tuple(float(g) for g in gamma))
        self.covariance(gamma.size)

    def covariance(self, T: int) -> NDArray[np.float64]:
        gamma = np.zeros(T)
        k = min(T, len(self.autocovariance))
        gamma[:k] = self.autocovariance[:k]
        lags = np.abs(np.subtract.outer(np.arange(T), np.arange(T)))
        matrix = gamma[lags]
        # an autocovariance must give a covariance matrix at every length it is used at
        if np.linalg.eigvalsh(matrix)[0] < -1e-12 * T * gamma[0]:
            raise ParameterError(
                f"autocovariance {describe(list(self.autocovariance))} is not positive "
                f"semi-definite over T={T} rows, so it is no covariance"
            )
        return matrix

    def describe(self) -> str:
        shown = ", ".join(f"{g:g}" for g in self.autocovariance[:4])
        more = ", ..." if len(self.autocovariance) > 4 else ""
        return f"Toeplitz rows, autocovariances ({shown}{more})"


#: Above this T, AR1 uses the limit of ‖Σ_T‖ rather than the tridiagonal eigenproblem (40 ms).
_TRIDIAGONAL_ROWS = 100_000


@dataclass(frozen=True)
class AR1(DependenceModel):
    """AR(1) rows: ``Cov(y_t, y_s) = variance * phi**|t-s|`` (the paper's Toeplitz(φ)).

    Examples
    --------
    >>> from dplong.dependence import AR1
    >>> round(AR1(phi=0.95).log_sobolev_constant(T=10), 3)
    8.514
    >>> AR1(phi=0.95).describe()
    'AR(1) rows, phi 0.95, variance 1'
    """

    phi: float
    variance: float = 1.0

    def __post_init__(self) -> None:
        if not (-1.0 < real_number(self.phi, "phi") < 1.0):
            raise ParameterError(f"phi must lie in (-1, 1), got {self.phi!r}")
        _positive(self.variance, "variance")

    def covariance(self, T: int) -> NDArray[np.float64]:
        lags = np.abs(np.subtract.outer(np.arange(T), np.arange(T)))
        return self.variance * self.phi**lags

    def log_sobolev_constant(self, T: int) -> float:
        rows = _check_rows(T)
        if rows <= MAX_DENSE_ROWS:
            return super().log_sobolev_constant(rows)
        phi, limit = abs(self.phi), self.variance * (1 + abs(self.phi)) / (1 - abs(self.phi))
        if rows > _TRIDIAGONAL_ROWS:
            # ‖Σ_T‖ increases with T (Cauchy interlacing) to this limit, the spectral
            # density's maximum: an upper bound, so the radius stays valid (and is tight here)
            return float(limit)
        # the inverse of an AR(1) covariance is tridiagonal: its smallest eigenvalue, O(T)
        diagonal = np.full(rows, 1 + phi * phi)
        diagonal[[0, -1]] = 1.0
        smallest = eigvalsh_tridiagonal(
            diagonal, np.full(rows - 1, -phi), select="i", select_range=(0, 0)
        )[0]
        return float(min(self.variance * (1 - phi * phi) / smallest, limit))

    def describe(self) -> str:
        return f"AR(1) rows, phi {self.phi:g}, variance {self.variance:g}"


@dataclass(frozen=True)
class Exchangeable(DependenceModel):
    """Equicorrelated rows: variance on the diagonal, ``variance * correlation`` elsewhere.

    Examples
    --------
    >>> from dplong.dependence import Exchangeable
    >>> Exchangeable(correlation=0.25).log_sobolev_constant(T=5)
    2.0
    >>> Exchangeable(correlation=0.25).describe()
    'exchangeable rows, correlation 0.25, variance 1'
    """

    correlation: float
    variance: float = 1.0

    def __post_init__(self) -> None:
        if not (0.0 <= real_number(self.correlation, "correlation") < 1.0):
            raise ParameterError(f"correlation must lie in [0, 1), got {self.correlation!r}")
        _positive(self.variance, "variance")

    def covariance(self, T: int) -> NDArray[np.float64]:
        r = self.correlation
        return self.variance * ((1 - r) * np.eye(T) + r * np.ones((T, T)))

    def log_sobolev_constant(self, T: int) -> float:
        return float(self.variance * (1 + (_check_rows(T) - 1) * self.correlation))

    def describe(self) -> str:
        return f"exchangeable rows, correlation {self.correlation:g}, variance {self.variance:g}"


@dataclass(frozen=True)
class RandomEffects(DependenceModel):
    """Random-effects location model (Def 5.8): ``y_gut = μ + U_g + e_ut``.

    ``U_g ~ N(0, group_variance)`` is shared by the users of group g; the residuals of one user
    follow ``residual`` (default: independent with ``residual_variance``). With groups of sizes
    ``n_g``, Lemma 5.9 gives ρ = max_g (σ_U² n_g T + σ²): :meth:`statistical_constant`.
    With ``group_sizes=None`` every user is their own group.

    Examples
    --------
    >>> from dplong.dependence import RandomEffects
    >>> m = RandomEffects(group_variance=0.5, residual_variance=1.0, group_sizes=[3, 5])
    >>> m.statistical_constant(T=4, n=8)            # 0.5 * 5 * 4 + 1
    11.0
    >>> m.log_sobolev_constant(T=4)                 # one user: 0.5 * 4 + 1
    3.0
    >>> from dplong.dependence import AR1
    >>> ar_residuals = RandomEffects(group_variance=0.5, residual=AR1(phi=0.3))
    >>> ar_residuals.describe().split("; ")  # doctest: +NORMALIZE_WHITESPACE
    ['random effects: group variance 0.5 (one user per group)',
     'residuals: AR(1) rows, phi 0.3, variance 1']
    """

    group_variance: float
    residual_variance: float = 1.0
    group_sizes: Sequence[int] | None = None
    residual: DependenceModel | None = field(default=None)

    def __post_init__(self) -> None:
        _positive(self.group_variance, "group_variance")
        _positive(self.residual_variance, "residual_variance")
        if self.group_sizes is not None:
            sizes = np.asarray(self.group_sizes)
            if (
                sizes.dtype.kind not in "iu"
                or sizes.ndim != 1
                or sizes.size == 0
                or (sizes < 1).any()
            ):
                raise ParameterError(
                    "group_sizes must be a non-empty sequence of positive integers"
                )
        if self.residual is not None and not isinstance(self.residual, DependenceModel):
            raise ParameterError(
                f"residual must be a dependence model (e.g. AR1(0.3)), got {self.residual!r:.80}"
            )

    def _residual(self) -> DependenceModel:
        return self.residual or Independent(self.residual_variance)

    def residual_scale(self, T: int) -> float:
        """Log-Sobolev constant ``‖Σ_res‖_op`` of one user's T residuals.

        Examples
        --------
        >>> from dplong.dependence import RandomEffects
        >>> RandomEffects(group_variance=0.5, residual_variance=2.0).residual_scale(4)
        2.0
        """
        return self._residual().log_sobolev_constant(T)

    def covariance(self, T: int) -> NDArray[np.float64]:
        return self.group_variance * np.ones((T, T)) + self._residual().covariance(T)

    def statistical_constant(self, T: int, n: int) -> float:
        _check_rows(n, "number of users n")
        largest = 1 if self.group_sizes is None else int(max(self.group_sizes))
        sigma2 = self._residual().log_sobolev_constant(T)
        return float(self.group_variance * largest * T + sigma2)

    def describe(self) -> str:
        groups = (
            "one user per group"
            if self.group_sizes is None
            else f"largest group {max(self.group_sizes)} users"
        )
        return (
            f"random effects: group variance {self.group_variance:g} ({groups}); "
            f"residuals: {self._residual().describe()}"
        )


@dataclass(frozen=True)
class GivenCovariance(DependenceModel):
    """A given T x T covariance of one user's rows (T is then fixed).

    Examples
    --------
    >>> from dplong.dependence import GivenCovariance
    >>> GivenCovariance([[2.0, 0.0], [0.0, 1.0]]).log_sobolev_constant(T=2)
    2.0
    >>> GivenCovariance([[2.0, 0.0], [0.0, 1.0]]).describe()
    'given 2x2 covariance'
    """

    matrix: ArrayLike

    def __post_init__(self) -> None:
        raw = np.asarray(self.matrix)
        if raw.dtype.kind not in "iuf":
            raise ParameterError(f"matrix must be a matrix of numbers, got {describe(self.matrix)}")
        sigma = raw.astype(np.float64)
        if sigma.ndim != 2 or sigma.shape[0] != sigma.shape[1] or not np.isfinite(sigma).all():
            raise ParameterError("matrix must be a finite square covariance matrix")
        if not np.allclose(sigma, sigma.T) or np.linalg.eigvalsh(sigma)[0] <= 0:
            raise ParameterError("matrix must be symmetric positive definite")
        object.__setattr__(self, "matrix", sigma)

    def covariance(self, T: int) -> NDArray[np.float64]:
        sigma = np.asarray(self.matrix)
        if T > sigma.shape[0]:
            raise ParameterError(f"the given covariance covers {sigma.shape[0]} rows, not {T}")
        return sigma[:T, :T]

    def describe(self) -> str:
        size = np.asarray(self.matrix).shape[0]
        return f"given {size}x{size} covariance"
