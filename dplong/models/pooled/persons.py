"""Each person's sums: all that the releases of steps 2-4 (``docs/design/pooled.md``) read of
the scaled rows.

The Gram matrix's vector needs each person's ``Σ_t z_t z_t'`` of the rows clipped to the frame,
and a score at any public β is ``w_u (X_u'y_u - X_u'X_u β)``, so each person's sums of the
products of the unclipped scaled rows serve every Newton step and the meat. The rows are read
once, here: in memory, or partition by partition on a Dask frame (a person's sums add up over
the partitions holding their rows).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong._grouping import segment_starts
from dplong.models.pooled.factors import Blocks
from dplong.models.pooled.gram import _clip_blocks, _clip_rows, vech_scaled

__all__ = ["PersonSums"]


@dataclass(frozen=True)
class PersonSums:
    """Each of n persons' sums over their scaled rows ``(x̃, ỹ)`` (p columns and the outcome).

    Attributes
    ----------
    grams : ndarray, shape (n, len(kept))
        ``Σ_t z_t z_t'`` as :func:`~dplong.models.pooled.gram.vech_scaled` vectors over the
        entries released, ``z`` the rows clipped to ``[-1, 1]`` and to the factor blocks'
        norm bounds.
    products : ndarray, shape (n, (p + 1)(p + 2) / 2)
        ``Σ_t (x̃_t, ỹ_t)(x̃_t, ỹ_t)'``, its upper triangle row by row (not clipped to the
        frame: the scores').
    rows : ndarray, shape (n,)
        Each person's rows.
    between : PersonSums or None
        Random effects' between-person part of each person's rows, which GLS's
        quasi-demeaning took away from these (:meth:`of_means`); None for other rows.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.pooled.persons import PersonSums
    >>> x, y = np.array([[1.0], [1.0], [1.0]]), np.array([0.5, 2.0, -1.0])
    >>> sums = PersonSums.of_rows(x, y, np.array([0, 0, 1]), 2, blocks=(), kept=np.arange(3))
    >>> sums.rows.tolist(), sums.products[:, 1].tolist()   # Σ x y by person
    ([2.0, 1.0], [2.5, -1.0])
    >>> sums.scores(np.array([1.0]), cap=1, whiten=np.eye(1)).ravel().tolist()
    [0.25, -2.0]
    """

    grams: NDArray[np.float64]
    products: NDArray[np.float64]
    rows: NDArray[np.float64]
    between: PersonSums | None = None

    @property
    def p(self) -> int:
        """The number of columns (the outcome not counted)."""
        k = self.products.shape[1]  # (p + 1)(p + 2) / 2
        return math.isqrt(8 * k + 1) // 2 - 1

    @classmethod
    def of_rows(
        cls,
        x: NDArray[np.float64],
        y: NDArray[np.float64],
        codes: NDArray[np.intp],
        n: int,
        *,
        blocks: Blocks,
        kept: NDArray[np.intp],
    ) -> PersonSums:
        """The sums of scaled rows ``x``, ``y`` of n persons (``codes``, rows sorted by
        person); ``kept``: the Gram matrix's entries released."""
        rows = np.column_stack([x, y])
        z = _clip_blocks(np.clip(rows, -1.0, 1.0), blocks)
        upper = np.triu_indices(rows.shape[1])
        scale = np.where(upper[0] == upper[1], 1.0, math.sqrt(2.0))  # vech_scaled's
        return cls(
            _pair_sums(z, codes, n, (upper[0][kept], upper[1][kept])) * scale[kept],
            _pair_sums(rows, codes, n, upper),
            np.bincount(codes, minlength=n).astype(np.float64),
        )

    @classmethod
    def of_means(
        cls,
        sums: NDArray[np.float64],
        rows: NDArray[np.float64],
        share: NDArray[np.float64],
        *,
        blocks: Blocks,
        kept: NDArray[np.intp],
    ) -> PersonSums:
        """The sums of ``share_u T_u z̄_u z̄_u'`` of n persons from their sums of scaled rows
        (n x (p + 1), the outcome last) and row counts: the between-person part that
        quasi-demeaning with θ_u takes away from a person's rows, at ``share = 1 - (1 - θ)²``
        (``Σ_t (z_t - θ z̄)(z_t - θ z̄)' = Σ_t z_t z_t' - share T z̄ z̄'``). Its Gram matrix's
        means are clipped as rows are (to [-1, 1] and the blocks' norms), so each person's is
        PSD; its products are exact.

        Examples
        --------
        >>> import dataclasses
        >>> import numpy as np
        >>> from dplong.models.pooled.persons import PersonSums
        >>> z, codes, kept = np.array([[1.0, 0.5], [1.0, -0.5]]), np.array([0, 0]), np.arange(3)
        >>> theta = 0.5  # share = 1 - (1 - θ)² = 0.75
        >>> quasi = z - theta * z.mean(axis=0)
        >>> sums = PersonSums.of_rows(quasi[:, :1], quasi[:, 1], codes, 1, blocks=(), kept=kept)
        >>> part = PersonSums.of_means(z.sum(axis=0)[None], np.array([2.0]), np.array([0.75]),
        ...                            blocks=(), kept=kept)
        >>> lifted = dataclasses.replace(sums, between=part).toward(1.0)  # the rows as they are
        >>> whole = PersonSums.of_rows(z[:, :1], z[:, 1], codes, 1, blocks=(), kept=kept)
        >>> bool(np.allclose(lifted.products, whole.products))
        True
        """
        means = sums / np.maximum(rows, 1.0)[:, None]
        root = np.sqrt(share * rows)[:, None]
        clipped = _clip_blocks(np.clip(means, -1.0, 1.0), blocks) * root
        exact = means * root
        upper = np.triu_indices(sums.shape[1])
        return cls(
            vech_scaled(clipped, np.ones(rows.size))[:, kept],
            exact[:, upper[0]] * exact[:, upper[1]],
            rows,
        )

    def toward(self, weight: float) -> PersonSums:
        """These sums plus ``weight`` times their :attr:`between` part: the rows
        quasi-demeaned with ``(1 - θ_w)² = (1 - θ)² + weight (1 - (1 - θ)²)`` (0: these; 1:
        the rows as they are)."""
        if self.between is None:
            return self
        part = self.between
        return PersonSums(
            self.grams + weight * part.grams, self.products + weight * part.products, self.rows
        )

    def weights(self, cap: int) -> NDArray[np.float64]:
        """Each person's weight on their rows, ``min(1, cap / T_u)``: no person counts for
        more than ``cap`` rows."""
        return np.minimum(1.0, cap / np.maximum(self.rows, 1.0))

    def clipped_grams(self, cap: int, bound: float) -> NDArray[np.float64]:
        """Every person's weighted ``Z_u`` vector scaled down to norm ``bound`` where above it,
        followed by their :attr:`between` part's where there is one, scaled down to the room
        ``Z_u`` leaves (the two together of norm at most ``bound``; ``Z_u`` as without it).

        Replacing a person moves their sum by at most ``√2 bound``: for two persons' vectors
        ``a, b``, ``‖a - b‖² = ‖a‖² + ‖b‖² - 2 a·b`` and ``a·b = tr(Z_u Z_v) >= 0`` (scaled PSD
        matrices; with the between part, ``tr(Z_u Z_v) + tr(C_u C_v)``, both PSD) when the
        entries left out are 0 in every person's ``Z_u``, as the structural zeros are (every
        row's product of two indicators of one treatment-coded factor is 0)."""
        weights = self.weights(cap)[:, None]
        grams = _clip_rows(self.grams * weights, bound)
        if self.between is None:
            return grams
        room = np.sqrt(np.maximum(bound**2 - (grams**2).sum(axis=1), 0.0))
        part = self.between.grams * weights
        norms = np.sqrt((part**2).sum(axis=1))
        part *= np.where(norms > room, room / np.where(norms > 0.0, norms, 1.0), 1.0)[:, None]
        return np.hstack([grams, part])

    def cross_products(self, cap: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Every person's weighted ``X_u'X_u`` (n x p x p) and ``X_u'y_u`` (n x p): the
        ePTR release's input (:func:`~dplong.privacy.ptr.ols_ptr_of_sums`)."""
        p = self.p
        index = _positions(p + 1)
        weights = self.weights(cap)
        gram = self.products[:, index[:p, :p]] * weights[:, None, None]
        return gram, self.products[:, index[:p, p]] * weights[:, None]

    def scores(
        self,
        beta: NDArray[np.float64],
        *,
        cap: int,
        whiten: NDArray[np.float64],
        radius: float = np.inf,
    ) -> NDArray[np.float64]:
        """Every person's score ``s_u = w_u (X_u'y_u - X_u'X_u β)`` at a public β, whitened by
        the public symmetric ``whiten`` and clipped to ``radius`` in L2 norm (n x p; infinite:
        not clipped)."""
        p = beta.size
        index = _positions(p + 1)
        scores = self.products[:, index[:p, p]].copy()
        for j in range(p):  # p columns, each a vector over every person
            scores -= self.products[:, index[:p, j]] * beta[j]
        scores = (scores * self.weights(cap)[:, None]) @ whiten
        return scores if np.isinf(radius) else _clip_rows(scores, radius)


def _pair_sums(
    values: NDArray[np.float64],
    codes: NDArray[np.intp],
    n: int,
    pairs: tuple[NDArray[np.intp], NDArray[np.intp]],
) -> NDArray[np.float64]:
    """Each person's sums of the products of the columns ``pairs`` (rows sorted by person),
    n x len(pairs): a pass over the rows per pair, no rows x pairs array (pairs grow like p²)."""
    out = np.zeros((n, pairs[0].size))
    if codes.size:
        starts = segment_starts(codes)
        persons = codes[starts]
        for c, (i, j) in enumerate(zip(*pairs, strict=True)):
            out[persons, c] = np.add.reduceat(values[:, i] * values[:, j], starts)
    return out


@functools.cache
def _positions(k: int) -> NDArray[np.intp]:
    """The position of entry (i, j) of a symmetric k x k matrix in its upper triangle stored
    row by row (:func:`numpy.triu_indices`), k x k."""
    upper = np.triu_indices(k)
    index = np.empty((k, k), dtype=np.intp)
    index[upper] = index[upper[1], upper[0]] = np.arange(upper[0].size)
    index.flags.writeable = False
    return index
