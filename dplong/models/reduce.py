"""Vectorised per-user reductions without a loop over users: per-user OLS / GLS coefficients
and the within (user-demeaned) cross products.

Two stages, so that rows held anywhere reduce the same way: rows → per-user sufficient sums
(:func:`cross_product_sums`: row counts, the unique entries of ``X_u'X_u``, ``X_u'y_u``), which
add up over any split of a user's rows, → per-user statistics (:func:`coefficients_from_sums`).
In memory the rows arrive grouped by user (:class:`~dplong.formula.PanelDesign`), so every
per-user sum is a sum over a contiguous segment of rows, formed in cache-sized chunks of whole
users; a Dask frame sums each partition the same way and adds the partitions' sums by user
(:mod:`dplong.dask_frames`). Every user's p x p system is then solved by an ``L D L'``
factorisation vectorised over users (loops run over chunks and over the p x p entries, never
over users or rows). The within statistics (:func:`within_cross_products`) demean every column
by its user's mean first (two passes: no cancellation between ``Σ x²`` and ``T x̄²``) and then
sum the same products.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import segment_starts

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


def user_sums(
    columns: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    starts: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    """Per-user sums of k column-major series, (k x rows) -> (n x k); zeros for absent users."""
    starts = segment_starts(codes) if starts is None else starts
    out = np.zeros((n, columns.shape[0]))
    with np.errstate(over="ignore", invalid="ignore"):  # inf: a far value (curves.curve_sums)
        out[codes[starts]] = np.add.reduceat(columns, starts, axis=1).T
    return out


#: Rows per chunk of the per-user accumulation: keeps the product buffer in cache.
CHUNK_ROWS = 1 << 15

#: A deviation from a user's mean within ``T ROUNDING`` of the mean (T the user's rows) is the
#: mean's rounding, and is 0 (:func:`within_sums`): a column constant within a user (a
#: time-invariant regressor) leaves up to about ``T 2^-53`` of its value in each row (the
#: rounding of a sum of T equal terms, then of its quotient), and the engine's count of the
#: users off 0 finds them: 8-11 % of 3,000 users had products of about 1e-17 there, too few
#: for a private scale, and their withheld column withheld the fit. Twice that: real
#: variation is kept down to a few ulps of the mean (epoch milliseconds varying by 1 ms).
ROUNDING = 2.0**-52


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
    with np.errstate(over="ignore", invalid="ignore"):  # inf: no statistic (_chunk_sums)
        out[1:] -= phi * values[:-1]
    out[first] = values[first] * np.sqrt(1.0 - phi**2)
    return out


def _chunk_sums(
    series: list[NDArray[np.float64]],
    pairs: list[tuple[int, int]],
    plain: bool,
    rows: slice,
    offsets: NDArray[np.intp],
    buffer: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Per-user sums of ``series[i] * series[j]`` over a chunk of rows, one row per pair, then
    (with ``plain``) per-user sums of every series: a (k x users) array.

    ``offsets`` are the users' first rows within the chunk. When every user of the chunk has
    the same number of rows (a balanced panel) each pair is one per-user dot product
    (``einsum``), several times faster than forming the products and summing segments; other
    chunks form the products in ``buffer`` and sum them with ``np.add.reduceat``.
    """
    k = len(pairs) + (len(series) if plain else 0)
    m, users = rows.stop - rows.start, len(offsets)
    length = m // users
    if length * users == m and np.array_equal(offsets, np.arange(0, m, length)):
        out = np.empty((k, users))
        views = [values[rows].reshape(users, length) for values in series]
        for row, (i, j) in enumerate(pairs):
            np.einsum("ul,ul->u", views[i], views[j], out=out[row])
        if plain:
            for row, view in enumerate(views, start=len(pairs)):
                np.einsum("ul->u", view, out=out[row])
        return out
    block = buffer[: k * m].reshape(k, m)
    # a product or sum past the doubles' range is inf, no user's statistic: as einsum's above,
    # with no RuntimeWarning (one user's values decided whether a fit run with warnings as
    # errors raised, an audit)
    with np.errstate(over="ignore", invalid="ignore"):
        for row, (i, j) in enumerate(pairs):
            np.multiply(series[i][rows], series[j][rows], out=block[row])
        if plain:
            for row, values in enumerate(series, start=len(pairs)):
                block[row] = values[rows]
        return np.add.reduceat(block, offsets, axis=1)


def _solve_spd(
    A: NDArray[np.float64], b: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Solve every user's ``A_u x_u = b_u`` at once by an unpivoted ``L D L'`` factorisation.

    ``A`` is (p x p x users) and ``b`` (p x users); the loops run over the p columns, every
    step is vectorised over users. Returns the (p x users) solutions and
    ``det(A_u) / prod_i A_u[i, i]``, the determinant of the unit-diagonal scaling of ``A_u``
    (the product of the pivots ``d_j / A_u[j, j]``). A zero pivot gives non-finite values:
    the caller marks such users unidentified.
    """
    p, m = b.shape
    lower = np.zeros((p, p, m))  # L[i, j], i > j (the unit diagonal is implicit)
    pivots = np.empty((p, m))
    for j in range(p):
        # W[i, j] = L[i, j] d_j = A[i, j] - sum_{k<j} L[i, k] L[j, k] d_k, for i >= j
        w = A[j:, j]
        if j:
            w = w - np.einsum("ikm,km->im", lower[j:, :j], lower[j, :j] * pivots[:j])
        pivots[j] = w[0]
        lower[j + 1 :, j] = w[1:] / w[0]
    scaled_det = np.prod(pivots / np.einsum("iim->im", A), axis=0)
    z = np.empty((p, m))
    for i in range(p):  # L z = b
        z[i] = b[i] - np.einsum("km,km->m", lower[i, :i], z[:i])
    x = np.empty((p, m))
    for i in reversed(range(p)):  # D L' x = z
        x[i] = z[i] / pivots[i] - np.einsum("km,km->m", lower[i + 1 :, i], x[i + 1 :])
    return x, scaled_det


def cross_product_layout(p: int, correlation: WorkingCorrelation | None = None) -> int:
    """Number of columns of :func:`cross_product_sums` for p regressors: the row count, the
    ``p(p+1)/2`` unique entries of ``X'X``, ``X'y``, and for an exchangeable working
    correlation also the sums of the p regressors and of y."""
    exchangeable = correlation is not None and correlation.kind == "exchangeable"
    return 1 + p * (p + 1) // 2 + p + (p + 1 if exchangeable else 0)


def cross_product_sums(
    y: NDArray[np.float64],
    X: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    correlation: WorkingCorrelation | None = None,
) -> NDArray[np.float64]:
    """Every user's sufficient sums for β̂_u / β̂_wu: an (n x :func:`cross_product_layout`)
    matrix, additive over any split of a user's rows (the AR(1) case once its rows are
    prewhitened, which needs them all, in time order).

    Columns: the row count ``T_u``, the unique entries of ``X_u'X_u`` (upper triangle, row
    by row), ``X_u'y_u``, and with an exchangeable correlation ``Σ x_u`` and ``Σ y_u``. Rows
    come grouped by user. One pass in chunks of whole users (a loop over chunks, not users):
    the products ``x_i x_j`` and ``x_i y`` are summed per user by :func:`_chunk_sums`, with a
    cache-sized buffer; each column of ``X`` is read where it is stored (row- or
    column-major), so no transposed copy of the design is made.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import cross_product_sums
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> cross_product_sums(np.array([1.0, 2.0, 4.0]), X, np.array([0, 0, 1]), 2)
    array([[2., 2., 1., 1., 3., 2.],
           [1., 1., 2., 4., 4., 8.]])
    """
    p = X.shape[1]
    correlation = correlation or WorkingCorrelation()
    out = np.zeros((n, cross_product_layout(p, correlation)))
    if len(codes) == 0:
        return out
    if correlation.kind == "ar1":
        X = _ar1_prewhiten(X, codes, correlation.param)
        y = _ar1_prewhiten(y, codes, correlation.param)
    starts = segment_starts(codes)
    users = codes[starts]
    out[:, 0] = np.bincount(codes, minlength=n)
    series = [X[:, j] for j in range(p)] + [y]
    pairs = [(int(i), int(j)) for i, j in zip(*np.triu_indices(p), strict=True)]  # X'X
    pairs += [(j, p) for j in range(p)]  # X'y
    exchangeable = correlation.kind == "exchangeable"
    chunks = _chunk_bounds(starts, len(codes))
    k = out.shape[1] - 1
    buffer = np.empty(k * max((hi - lo for _, _, lo, hi in chunks), default=0))
    for first, last, lo, hi in chunks:
        sums = _chunk_sums(
            series, pairs, exchangeable, slice(lo, hi), starts[first:last] - lo, buffer
        )
        out[users[first:last], 1:] = sums.T
    return out


def coefficients_from_sums(
    sums: NDArray[np.float64], p: int, correlation: WorkingCorrelation | None = None
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """β̂_u (Def 5.13) or β̂_wu (Lemma 5.14) of every user from their
    :func:`cross_product_sums`, and which users are identified.

    A user is identified when they have at least p rows and a non-singular weighted design;
    the others get NaN coefficients (handled by the release, see ``release_mean``). Users are
    solved together in chunks (:func:`_solve_spd`), so memory stays O(chunk) for any n.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import coefficients_from_sums, cross_product_sums
    >>> X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 5.0]])
    >>> sums = cross_product_sums(np.array([1.0, 2.0, 4.0, 0.0]), X, np.array([0, 0, 0, 1]), 2)
    >>> beta, identified = coefficients_from_sums(sums, 2)
    >>> beta.round(4).tolist(), identified.tolist()        # user 1 has one row: no fit
    ([[0.8333, 1.5], [nan, nan]], [True, False])
    """
    n = sums.shape[0]
    beta = np.full((n, p), np.nan)
    identified = np.zeros(n, dtype=bool)
    if p == 0:
        return np.empty((n, 0)), np.ones(n, dtype=bool)
    correlation = correlation or WorkingCorrelation()
    n_upper = p * (p + 1) // 2
    for lo in range(0, n, CHUNK_ROWS):
        block = sums[lo : lo + CHUNK_ROWS].T
        rows = block[0]
        xtx = np.moveaxis(symmetric(block[1 : 1 + n_upper].T, p), 0, -1)  # p x p x users
        xty = block[1 + n_upper : 1 + n_upper + p]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if correlation.kind == "exchangeable":
                # R^{-1} ∝ I - c_u 11' with c_u = r / (1 - r + T_u r): less the rank-one part
                r = correlation.param
                c = r / (1.0 - r + rows * r)
                sx = block[1 + n_upper + p : 1 + n_upper + 2 * p]
                xtx -= (c * sx)[:, None] * sx[None, :]
                xty = xty - (c * sx) * block[1 + n_upper + 2 * p]
            solution, scaled_det = _solve_spd(xtx, xty)
            positive = (np.einsum("iim->im", xtx) > 0).all(axis=0)
            ok = (rows >= p) & positive & (scaled_det > SINGULAR_TOLERANCE)
            ok &= np.isfinite(solution).all(axis=0)  # overflow (inf - inf) is not a fit
        identified[lo : lo + CHUNK_ROWS] = ok
        beta[lo : lo + CHUNK_ROWS] = np.where(ok, solution, np.nan).T
    return beta, identified


def per_user_coefficients(
    y: NDArray[np.float64],
    X: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    correlation: WorkingCorrelation | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """β̂_u (Def 5.13) or β̂_wu (Lemma 5.14) for every user, and which users are identified:
    :func:`coefficients_from_sums` of :func:`cross_product_sums` (rows grouped by user).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import per_user_coefficients
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 3.0]])
    >>> beta, identified = per_user_coefficients(X @ [1.0, 2.0], X, np.array([0, 0, 1, 1]), 2)
    >>> beta.tolist(), identified.tolist()
    ([[1.0, 2.0], [1.0, 2.0]], [True, True])
    """
    sums = cross_product_sums(y, X, codes, n, correlation)
    return coefficients_from_sums(sums, X.shape[1], correlation)


def upper_pairs(p: int) -> list[tuple[int, int]]:
    """The unique entries ``(i, j)``, ``i <= j``, of a symmetric p x p matrix, row by row (the
    order of ``np.triu_indices``): the columns of a vectorised cross product."""
    return [(int(i), int(j)) for i, j in zip(*np.triu_indices(p), strict=True)]


def symmetric(vech: NDArray[np.float64], p: int) -> NDArray[np.float64]:
    """The symmetric p x p matrices of the unique entries in :func:`upper_pairs` order (the
    last axis; any leading axes are kept).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import symmetric
    >>> symmetric(np.array([1.0, 2.0, 3.0]), 2).tolist()
    [[1.0, 2.0], [2.0, 3.0]]
    """
    upper = np.triu_indices(p)
    out = np.zeros((*vech.shape[:-1], p, p))
    out[..., upper[0], upper[1]] = vech
    out[..., upper[1], upper[0]] = vech
    return out


def within_cross_products(
    y: NDArray[np.float64], X: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> NDArray[np.float64]:
    """Every user's within cross products: the unique entries of ``X̃_u' X̃_u`` and ``X̃_u' ỹ_u``.

    ``X̃_u = X_u - 1 x̄_u'`` and ``ỹ_u = y_u - ȳ_u`` are the user's rows minus the user's means
    (the within transformation). Returns an n x (p(p+1)/2 + p) matrix, columns in the order
    of :func:`upper_pairs` then ``X̃'ỹ``; users with fewer than two rows have no within variation
    to speak of and get NaN (no statistic). One vectorised pass for the means
    (:func:`user_means`), one chunked pass for the products (:func:`within_sums`).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import within_cross_products
    >>> X = np.array([[1.0], [2.0], [4.0], [5.0], [7.0]])
    >>> y = np.array([1.0, 3.0, 0.0, 2.0, 9.0])
    >>> codes = np.array([0, 0, 1, 1, 2])            # user 2 has one row
    >>> within_cross_products(y, X, codes, 3).tolist()
    [[0.5, 1.0], [0.5, 1.0], [nan, nan]]
    """
    means = user_means(user_totals(y, X, codes, n))
    out = within_sums(y, X, codes, n, means[:, 1:], means[:, 0])
    out[means[:, 0] < 2] = np.nan
    return out


def rounded_deviation(
    values: NDArray[np.float64], means: NDArray[np.float64], rows: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``values - means`` (row by row: each row's user's mean, and that user's number of
    rows), 0 where it is within ``rows`` :data:`ROUNDING` of the mean: its rounding.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import rounded_deviation
    >>> mean = (0.1 + 0.1 + 0.1) / 3          # 1.4e-17 above 0.1
    >>> rounded_deviation(np.array([0.1, 0.4]), np.array([mean, mean]), np.full(2, 3.0))
    array([0. , 0.3])
    """
    with np.errstate(invalid="ignore", over="ignore"):
        deviation = values - means
        deviation[np.abs(deviation) <= ROUNDING * rows * np.abs(means)] = 0.0
    return deviation


def user_totals(
    y: NDArray[np.float64], X: NDArray[np.float64], codes: NDArray[np.intp], n: int
) -> NDArray[np.float64]:
    """Every user's row count and sums of X's columns and of y: n x (p + 2), adding up over any
    split of a user's rows (:func:`user_means` turns them into means).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import user_means, user_totals
    >>> X, y = np.array([[1.0], [3.0], [5.0]]), np.array([2.0, 4.0, 9.0])
    >>> totals = user_totals(y, X, np.array([0, 0, 1]), 3)   # user 2 has no row
    >>> totals.tolist()
    [[2.0, 4.0, 6.0], [1.0, 5.0, 9.0], [0.0, 0.0, 0.0]]
    >>> user_means(totals).tolist()
    [[2.0, 2.0, 3.0], [1.0, 5.0, 9.0], [0.0, nan, nan]]
    """
    rows = np.bincount(codes, minlength=n)
    return np.column_stack([rows, user_sums(np.vstack([X.T, y[None, :]]), codes, n)])


def user_means(totals: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row counts and means (NaN: no row) from :func:`user_totals`."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.column_stack([totals[:, 0], totals[:, 1:] / totals[:, :1]])


def within_sums(
    y: NDArray[np.float64],
    X: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    means: NDArray[np.float64],
    rows: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Every user's sums of products of the deviations from ``means`` (n x (p + 1): X's columns
    then y; a user's own means give :func:`within_cross_products`), columns as there; a
    deviation within ``T`` :data:`ROUNDING` of its mean is that mean's rounding and counts as 0,
    T the user's number of ``rows`` (all of them, where the rows here are a part; default: the
    rows here). Sums of
    row terms about means fixed beforehand, so they add over any split of a user's rows: a
    Dask partition sums its rows about the means of a first pass (no cancellation between
    ``Σ x²`` and ``T x̄²``, as in memory).

    Examples
    --------
    The rows of one user split in two parts (two Dask partitions) add up to its own sums:

    >>> import numpy as np
    >>> from dplong.models.reduce import within_sums
    >>> X, y = np.array([[1.0], [2.0], [6.0]]), np.array([1.0, 3.0, 2.0])
    >>> means = np.array([[3.0, 2.0]])                       # the user's x̄ and ȳ
    >>> whole = within_sums(y, X, np.zeros(3, dtype=np.intp), 1, means)
    >>> parts = sum(within_sums(y[s], X[s], np.zeros(len(y[s]), dtype=np.intp), 1, means)
    ...             for s in (slice(0, 2), slice(2, 3)))
    >>> whole.tolist(), bool(np.allclose(parts, whole))
    ([[14.0, 1.0]], True)
    """
    p = X.shape[1]
    pairs = upper_pairs(p) + [(j, p) for j in range(p)]
    out = np.zeros((n, len(pairs)))
    if p == 0 or not codes.size:
        return out
    starts = segment_starts(codes)
    users = codes[starts]
    centred = means[codes]
    if rows is None:
        rows = np.bincount(codes, minlength=n).astype(np.float64)
    counts = rows[codes]
    series = [rounded_deviation(X[:, j], centred[:, j], counts) for j in range(p)]
    series.append(rounded_deviation(y, centred[:, p], counts))
    chunks = _chunk_bounds(starts, len(codes))
    buffer = np.empty(len(pairs) * max((hi - lo for _, _, lo, hi in chunks), default=0))
    for first, last, lo, hi in chunks:
        sums = _chunk_sums(series, pairs, False, slice(lo, hi), starts[first:last] - lo, buffer)
        out[users[first:last]] = sums.T
    return out


def within_fit_residuals(
    products: NDArray[np.float64],
    within_ss: NDArray[np.float64],
    rows: NDArray[np.float64],
    p: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Every user's residual sum of squares of their own within regression of ``ỹ_u`` on
    ``X̃_u``, and its degrees of freedom ``T_u - 1 - rank X̃_u`` (at most 0: none).

    ``products`` holds the unique entries of ``X̃_u'X̃_u`` then ``X̃_u'ỹ_u`` (:func:`within_sums`
    of p columns), ``within_ss`` ``ỹ_u'ỹ_u``. Each user's ``X̃_u'X̃_u`` is scaled to unit diagonal
    (a column constant within the user, whose deviations are exactly 0, drops out) and solved
    by a symmetric eigendecomposition, vectorised over chunks of users: the fitted sum of
    squares is ``Σ_j (v_j'b̃)² / λ_j`` over the eigenvalues above :data:`SINGULAR_TOLERANCE`,
    whose number is the rank.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.reduce import within_fit_residuals, within_sums, user_means, user_totals
    >>> X = np.column_stack([np.ones(4), [0.0, 1.0, 2.0, 4.0]])   # the ones drop out
    >>> y = np.array([0.0, 1.0, 1.0, 3.0])
    >>> codes = np.zeros(4, dtype=np.intp)
    >>> means = user_means(user_totals(y, X, codes, 1))
    >>> products = within_sums(y, X, codes, 1, means[:, 1:], means[:, 0])
    >>> ssr, df = within_fit_residuals(products, np.array([4.75]), means[:, 0], 2)
    >>> round(float(ssr[0]), 4), df.tolist()                      # 4 rows, 1 slope
    (0.2857, [2.0])
    """
    n = len(rows)
    k = p * (p + 1) // 2
    fitted, rank = np.zeros(n), np.zeros(n)
    for lo in range(0, n, CHUNK_ROWS):
        block = np.nan_to_num(products[lo : lo + CHUNK_ROWS])
        gram = symmetric(block[:, :k], p)
        diagonal = np.einsum("mii->mi", gram)
        with np.errstate(divide="ignore"):
            unit = np.where(diagonal > 0, 1.0 / np.sqrt(diagonal), 0.0)
        values, vectors = np.linalg.eigh(gram * unit[:, :, None] * unit[:, None, :])
        kept = values > SINGULAR_TOLERANCE
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            along = np.einsum("mij,mi->mj", vectors, block[:, k:] * unit)
            fitted[lo : lo + CHUNK_ROWS] = np.where(kept, along**2 / values, 0.0).sum(axis=1)
        rank[lo : lo + CHUNK_ROWS] = kept.sum(axis=1)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, no statistic (the release drops it)
        return np.maximum(within_ss - fitted, 0.0), rows - 1.0 - rank
