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


#: Rows per chunk of the per-user accumulation: keeps the product buffer in cache.
CHUNK_ROWS = 1 << 15


def _chunk_bounds(starts: NDArray[np.intp], rows: int) -> list[tuple[int, int, int, int]]:
    """``(first user, end user, first row, end row)`` of chunks of about :data:`CHUNK_ROWS`
    rows made of whole users (a user with more rows is a chunk of their own)."""
    bounds = np.searchsorted(starts, np.arange(0, rows, CHUNK_ROWS), side="left")
    bounds = np.unique(np.append(bounds, len(starts)))
    ends = np.append(starts, rows)
    return [
        (int(first), int(last), int(ends[first]), int(ends[last]))
        for first, last in itertools.pairwise(bounds)
    ]


def _ar1_prewhiten(
    values: NDArray[np.float64], codes: NDArray[np.intp], phi: float
) -> NDArray[np.float64]:
    """``L' v`` with ``L L' = R^{-1}`` for the AR(1) correlation R of each user's rows.

    First row of a user: ``√(1-φ²) v_1``; later rows: ``v_t - φ v_{t-1}`` (Prais–Winsten).
    Then ``X' R^{-1} X = Z' Z / (1 - φ²)``; the constant cancels in β̂_wu.
    """
    out = np.array(values, dtype=np.float64)
    first = segment_starts(codes)
    out[1:] -= phi * values[:-1]
    out[first] = values[first] * np.sqrt(1.0 - phi**2)
    return out


def _solve_spd(
    entries: dict[tuple[int, int], NDArray[np.float64]],
    rhs: list[NDArray[np.float64]],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Solve every user's ``A_u x_u = b_u`` at once by an unpivoted ``L D L'`` factorisation.

    ``entries[(i, j)]`` (i <= j) and ``rhs[i]`` hold one value per user. The loops run over the
    p x p entries; every step is vectorised over users. Returns the (p x users) solutions and
    ``det(A_u) / prod_i A_u[i, i]``, the determinant of the unit-diagonal scaling of ``A_u``
    (the product of the pivots ``d_j / A_u[j, j]``). A zero pivot gives non-finite values:
    the caller marks such users unidentified.
    """
    p = len(rhs)
    lower: dict[tuple[int, int], NDArray[np.float64]] = {}  # L[i, j], i > j
    pivots: list[NDArray[np.float64]] = []
    scaled_det = np.ones_like(rhs[0])
    for j in range(p):
        # W[i, j] = L[i, j] d_j = A[i, j] - sum_{k<j} L[i, k] L[j, k] d_k, for i >= j
        w = [entries[(j, i)] for i in range(j, p)]
        for k in range(j):
            ljk_dk = lower[(j, k)] * pivots[k]
            w = [w[i - j] - lower[(i, k)] * ljk_dk for i in range(j, p)]
        pivots.append(w[0])
        scaled_det *= w[0] / entries[(j, j)]
        for i in range(j + 1, p):
            lower[(i, j)] = w[i - j] / w[0]
    z: list[NDArray[np.float64]] = []
    for i in range(p):  # L z = b
        zi = rhs[i]
        for k in range(i):
            zi = zi - lower[(i, k)] * z[k]
        z.append(zi)
    x: list[NDArray[np.float64]] = [z[0]] * p
    for i in reversed(range(p)):  # D L' x = z
        xi = z[i] / pivots[i]
        for k in range(i + 1, p):
            xi -= lower[(k, i)] * x[k]
        x[i] = xi
    return np.stack(x), scaled_det


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

    One pass over the rows in chunks of whole users (a loop over chunks, not users): per chunk
    the products ``x_i x_j`` and ``x_i y`` go into a cache-sized buffer, one ``reduceat`` sums
    them per user, and the users' p x p systems are solved together (:func:`_solve_spd`).
    Each column of ``X`` is read where it is stored; a column-major ``X`` (as
    :func:`~dplong.models.design.build_design` stores it) is read contiguously.
    """
    p = X.shape[1]
    if p == 0:
        return np.empty((n, 0)), np.ones(n, dtype=bool)
    correlation = correlation or WorkingCorrelation()
    if correlation.kind == "ar1":
        X = _ar1_prewhiten(X, codes, correlation.param)
        y = _ar1_prewhiten(y, codes, correlation.param)
    starts = segment_starts(codes)
    rows = np.bincount(codes, minlength=n)
    users = codes[starts]
    series = [X[:, j] for j in range(p)] + [y]
    upper = [(i, j) for i in range(p) for j in range(i, p)]  # X'X entries, then X'y
    pairs = upper + [(j, p) for j in range(p)]
    exchangeable = correlation.kind == "exchangeable"
    chunks = _chunk_bounds(starts, len(codes))
    width = max((hi - lo for _, _, lo, hi in chunks), default=0)
    buffer = np.empty((len(pairs) + (p + 1 if exchangeable else 0), width))
    beta = np.full((n, p), np.nan)
    identified = np.zeros(n, dtype=bool)
    for first, last, lo, hi in chunks:
        block = buffer[:, : hi - lo]
        for row, (i, j) in enumerate(pairs):
            np.multiply(series[i][lo:hi], series[j][lo:hi], out=block[row])
        if exchangeable:
            for row, values in enumerate(series, start=len(pairs)):
                block[row] = values[lo:hi]
        sums = np.add.reduceat(block, starts[first:last] - lo, axis=1)
        entries = dict(zip(upper, sums, strict=False))
        rhs = list(sums[len(upper) : len(pairs)])
        ids = users[first:last]
        if exchangeable:
            # R^{-1} ∝ I - c_u 11' with c_u = r / (1 - r + T_u r): subtract the rank-one part
            r = correlation.param
            c = r / (1.0 - r + rows[ids] * r)
            sx, sy = sums[len(pairs) : len(pairs) + p], sums[len(pairs) + p]
            for i, j in upper:
                entries[(i, j)] -= c * sx[i] * sx[j]
            for i in range(p):
                rhs[i] -= c * sx[i] * sy
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            solution, scaled_det = _solve_spd(entries, rhs)
            positive = np.logical_and.reduce([entries[(i, i)] > 0 for i in range(p)])
            ok = (rows[ids] >= p) & positive & (scaled_det > SINGULAR_TOLERANCE)
        identified[ids] = ok
        beta[ids] = np.where(ok, solution, np.nan).T
    return beta, identified


def constant_within_users(X: NDArray[np.float64], codes: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Columns that take one value within every user (per-user regressions cannot see them).

    A column is constant when no row differs from the previous row of the same user and it
    holds no NaN (a NaN is never "one value", as with ``max == min``). Columns are scanned
    in chunks of rows and a varying column stops at its first chunk with a change.
    """
    same_user = codes[1:] == codes[:-1]
    pairs = len(same_user)
    out = np.zeros(X.shape[1], dtype=bool)
    for j in range(X.shape[1]):
        column = X[:, j]
        if np.isnan(column).any():
            continue
        for lo in range(0, pairs, CHUNK_ROWS):  # chunks of rows; stop at the first change
            hi = min(lo + CHUNK_ROWS, pairs)
            if np.any((column[lo + 1 : hi + 1] != column[lo:hi]) & same_user[lo:hi]):
                break
        else:
            out[j] = True
    return out
