"""Vectorised per-user reductions: per-user OLS / GLS coefficients without a loop over users.

Rows arrive grouped by user (:class:`~dplong.models.design.PanelDesign`), so every per-user sum
is one ``np.add.reduceat`` over contiguous segments of column-major data; cross products
``X_u' X_u`` (unique entries only) and ``X_u' y_u`` are solved in one batched
``np.linalg.solve``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: A per-user design counts as singular when the determinant of its unit-diagonal scaling
#: ``C = D^{-1/2} X'X D^{-1/2}`` is below this. Since C's eigenvalues lie in (0, p],
#: ``det C / p**(p-1) <= λ_min(C) <= det(C)**(1/p)``: a cheap two-sided condition check.
SINGULAR_TOLERANCE = 1e-12


@dataclass(frozen=True)
class WorkingCorrelation:
    """Public working correlation for the weighted per-user estimator β̂_wu (Lemma 5.14).

    ``kind`` is ``"independence"``, ``"ar1"`` (``Corr(e_t, e_s) = param**|t-s|`` over a user's
    consecutive rows) or ``"exchangeable"`` (``param`` between any two rows of a user).
    """

    kind: str = "independence"
    param: float = 0.0

    def describe(self) -> str:
        if self.kind == "independence":
            return "independence"
        return f"{self.kind}({self.param:g})"


def segment_starts(codes: NDArray[np.intp]) -> NDArray[np.intp]:
    """First row of each user's run of rows (codes sorted by user)."""
    starts = np.ones(len(codes), dtype=bool)
    starts[1:] = codes[1:] != codes[:-1]
    return np.flatnonzero(starts)


def user_sums(
    columns: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    starts: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    """Per-user sums of k column-major series, (k x rows) -> (n x k); zeros for absent users."""
    starts = segment_starts(codes) if starts is None else starts
    out = np.zeros((n, columns.shape[0]))
    out[codes[starts]] = np.add.reduceat(columns, starts, axis=1).T
    return out


#: Rows per chunk of the cross-product accumulation: keeps the product buffer in cache.
CHUNK_ROWS = 1 << 15


def _cross_sums(
    cols: NDArray[np.float64],
    left: NDArray[np.intp],
    right: NDArray[np.intp],
    codes: NDArray[np.intp],
    n: int,
    starts: NDArray[np.intp],
) -> NDArray[np.float64]:
    """Per-user sums of ``cols[left] * cols[right]``, in chunks of whole users.

    Chunks hold about :data:`CHUNK_ROWS` rows (a loop over chunks, not users), so the k x rows
    product buffer stays small and cache-resident.
    """
    out = np.zeros((n, len(left)))
    bounds = np.searchsorted(starts, np.arange(0, cols.shape[1], CHUNK_ROWS), side="left")
    bounds = np.unique(np.append(bounds, len(starts)))
    buffer = np.empty((len(left), min(cols.shape[1], 2 * CHUNK_ROWS)))
    for first, last in itertools.pairwise(bounds):
        lo = starts[first]
        hi = starts[last] if last < len(starts) else cols.shape[1]
        if hi - lo > buffer.shape[1]:
            buffer = np.empty((len(left), hi - lo))
        block = buffer[:, : hi - lo]
        np.multiply(cols[left, lo:hi], cols[right, lo:hi], out=block)
        out[codes[starts[first:last]]] = np.add.reduceat(block, starts[first:last] - lo, axis=1).T
    return out


def _ar1_prewhiten(
    values: NDArray[np.float64], codes: NDArray[np.intp], phi: float
) -> NDArray[np.float64]:
    """``L' v`` with ``L L' = R^{-1}`` for the AR(1) correlation R of each user's rows.

    First row of a user: ``√(1-φ²) v_1``; later rows: ``v_t - φ v_{t-1}`` (Prais–Winsten).
    Then ``X' R^{-1} X = Z' Z / (1 - φ²)``; the constant cancels in β̂_wu.
    """
    out = np.array(values, dtype=np.float64)
    first = np.zeros(len(codes), dtype=bool)
    first[segment_starts(codes)] = True
    out[~first] -= phi * values[np.flatnonzero(~first) - 1]
    out[first] *= np.sqrt(1.0 - phi**2)
    return out


def per_user_coefficients(
    y: NDArray[np.float64],
    X: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    correlation: WorkingCorrelation | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """β̂_u (Def 5.13) or β̂_wu (Lemma 5.14) for every user, and which users are identified.

    A user is identified when they have at least p rows and a non-singular weighted design;
    the others get NaN coefficients (handled by the release, see ``release_mean``).
    """
    p = X.shape[1]
    correlation = correlation or WorkingCorrelation()
    if correlation.kind == "ar1":
        X = _ar1_prewhiten(X, codes, correlation.param)
        y = _ar1_prewhiten(y[:, None], codes, correlation.param)[:, 0]
    starts = segment_starts(codes)
    rows = np.bincount(codes, minlength=n)
    cols = np.ascontiguousarray(np.column_stack([X, y]).T)  # (p+1) x rows, contiguous series
    upper = np.triu_indices(p)
    left = np.concatenate([upper[0], np.arange(p)])
    right = np.concatenate([upper[1], np.full(p, p)])  # X'X entries, then X'y
    sums = _cross_sums(cols, left, right, codes, n, starts)
    xtx = np.empty((n, p, p))
    xtx[:, upper[0], upper[1]] = sums[:, : len(upper[0])]
    xtx[:, upper[1], upper[0]] = sums[:, : len(upper[0])]
    xty = sums[:, len(upper[0]) :]
    if correlation.kind == "exchangeable":
        # R^{-1} ∝ I - c_u 11' with c_u = r / (1 - r + T_u r): subtract the rank-one part
        r = correlation.param
        c = r / (1.0 - r + rows * r)
        s = user_sums(cols, codes, n, starts)
        sx, sy = s[:, :p], s[:, p]
        xtx -= c[:, None, None] * sx[:, :, None] * sx[:, None, :]
        xty -= c[:, None] * sx * sy[:, None]
    diagonal = np.einsum("uii->ui", xtx)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 1.0 / np.sqrt(diagonal)
        scaled_det = np.linalg.det(xtx * scale[:, :, None] * scale[:, None, :])
    identified = (rows >= p) & (diagonal > 0).all(axis=1) & (scaled_det > SINGULAR_TOLERANCE)
    beta = np.full((n, p), np.nan)
    if identified.any():
        beta[identified] = np.linalg.solve(xtx[identified], xty[identified][..., None])[..., 0]
    return beta, identified


def constant_within_users(X: NDArray[np.float64], codes: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Columns that take one value within every user (per-user regressions cannot see them)."""
    starts = segment_starts(codes)
    cols = np.ascontiguousarray(X.T)
    lo = np.minimum.reduceat(cols, starts, axis=1)
    hi = np.maximum.reduceat(cols, starts, axis=1)
    return np.asarray(np.all(hi == lo, axis=1))
