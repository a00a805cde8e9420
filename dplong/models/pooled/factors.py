"""The declared factors' indicator columns as blocks: public facts of the formula and the
declared levels that the Gram matrix's bound and its structural zeros rely on (step 2 of
``docs/design/pooled.md``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dplong.formula import DesignSpec

__all__ = ["Blocks", "Disjoint"]

#: Factor blocks: the positions of a block's columns and the bound on a row's squared norm
#: over them in the frame (:func:`_blocks_of`)
Blocks = tuple[tuple[tuple[int, ...], float], ...]
#: Column blocks whose products of two different columns are 0 in every row (:func:`_disjoint_of`)
Disjoint = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class _FactorBlock:
    """The columns of one subterm made only of categorical factors (declared levels): their
    range (interval arithmetic over the factors' contrast values) and a bound on a row's
    squared L2 norm over them, the product over the factors of the largest squared norm of a
    row of its contrast matrix (treatment coding: one 1 at most, so 1 however many levels).
    Public: the formula and the declared levels."""

    columns: tuple[str, ...]
    low: float
    high: float
    square: float
    #: every row of the block has at most one 1 and zeros, some none (treatment coding and
    #: its products): with an intercept, ``1 - Σ`` of the block is the reference level's 0/1
    onehot: bool


def _factor_blocks(spec: DesignSpec) -> tuple[_FactorBlock, ...]:
    """Every subterm of categorical factors only, with its columns, range and row-norm bound
    (:class:`_FactorBlock`)."""
    info = spec.regressor_info
    out = []
    for term, subterms in info.term_codings.items():
        factors = term.factors
        if not factors or any(info.factor_infos[f].type != "categorical" for f in factors):
            continue
        names = info.column_names[info.term_slices[term]]
        start = 0
        for subterm in subterms:
            if not subterm.num_columns:  # a factor of one declared level: no column
                continue
            low, high, square, onehot, reference = 1.0, 1.0, 1.0, True, False
            for factor in subterm.factors:
                contrast = subterm.contrast_matrices[factor].matrix
                products = [
                    low * contrast.min(),
                    low * contrast.max(),
                    high * contrast.min(),
                    high * contrast.max(),
                ]
                low, high = min(products), max(products)
                square *= float((contrast**2).sum(axis=1).max())
                onehot &= bool(np.isin(contrast, (0.0, 1.0)).all())
                onehot &= bool((contrast.sum(axis=1) <= 1.0).all())
                reference |= bool((contrast == 0.0).all(axis=1).any())
            columns = tuple(names[start : start + subterm.num_columns])
            start += subterm.num_columns
            out.append(_FactorBlock(columns, float(low), float(high), square, onehot and reference))
    return tuple(out)


def _indicator_ranges(spec: DesignSpec) -> dict[str, tuple[float, float]]:
    """Every indicator column of a declared factor and its public range (its contrast
    values'): located from the formula, never from the rows."""
    return {c: (b.low, b.high) for b in _factor_blocks(spec) for c in b.columns}


def _coded_blocks(
    spec: DesignSpec, columns: tuple[str, ...]
) -> tuple[tuple[tuple[int, ...], float, bool], ...]:
    """The factor blocks (:func:`_factor_blocks`) as positions in ``columns`` and the bound
    on a row's squared norm over them in the frame, where their values are divided by their
    largest magnitude (:meth:`_Scaling.of`): only those whose bound is below their number of
    columns (a block of one column, or a coding with no gain, stays as any column). With an
    intercept, the widest treatment-coded block takes it in (its position first): the frame's
    intercept column is then the reference level's indicator, and the block's rows are one-hot
    (norm 1, the intercept no longer a column of its own in the bound), its Gram matrix the
    levels' counts on the diagonal, however rare the reference level. Each with whether it
    is treatment-coded (:attr:`_FactorBlock.onehot`)."""
    out = []
    for block in _factor_blocks(spec):
        largest = max(abs(block.low), abs(block.high))
        square = block.square / largest**2 if largest > 0 else 0.0
        if square < len(block.columns) or block.onehot:
            out.append((tuple(columns.index(c) for c in block.columns), square, block.onehot))
    absorbing = [b for b in out if b[2] and b[1] == 1.0]
    if "Intercept" in columns and absorbing:
        widest = max(absorbing, key=lambda b: len(b[0]))
        out[out.index(widest)] = ((columns.index("Intercept"), *widest[0]), 1.0, True)
    return tuple(out)


def _blocks_of(spec: DesignSpec, columns: tuple[str, ...]) -> Blocks:
    """The factor blocks of more than one column (:func:`_coded_blocks`) and their bounds."""
    return tuple((c, square) for c, square, _ in _coded_blocks(spec, columns) if len(c) > 1)


def _disjoint_of(spec: DesignSpec, columns: tuple[str, ...]) -> Disjoint:
    """The treatment-coded blocks of more than one column (:func:`_coded_blocks`, with the
    intercept where one took it in): a row has one 1 at most among their columns, so the
    product of two different ones is 0 in every row, a fact of the formula and the declared
    levels (the Gram matrix's structural zeros)."""
    return tuple(c for c, _, onehot in _coded_blocks(spec, columns) if onehot and len(c) > 1)
