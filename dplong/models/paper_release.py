"""The paper's pipeline for a block (``variant="theory"`` and the local model): CoinPress's
private scale (Alg 13-14, §7.1.5) when the scale is estimated, then Alg 5 (central) or Alg 8
(local) with Lemma 5.2's radii, each with its share of the block's budget."""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from dplong.models.blocks import Block, Statistics, block_bound
from dplong.privacy.budget import part
from dplong.privacy.engine import Release
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import bin_radius, concentration_radius
from dplong.privacy.tails import unchecked_warnings
from dplong.privacy.variance import ScaleEstimate, estimate_scale
from dplong.privacy.winsorized import release_paper

__all__ = ["PAPER_SCALE_SHARE", "paper_mean_options", "paper_release", "paper_scale"]

#: Share of a block's budget the paper's pipeline (theory, local) spends on CoinPress when the
#: scale is estimated: the paper's Fig. 5 gives the scale and the mean equal budgets.
PAPER_SCALE_SHARE = 0.5


def paper_scale(
    matrix: NDArray[np.float64],
    options: ReleaseOptions,
    rng: np.random.Generator,
    names: tuple[str, ...],
) -> ScaleEstimate:
    """CoinPress's private scale of each column (Alg 13-14) with the paper pipeline's share of
    the budget, :data:`PAPER_SCALE_SHARE`.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.paper_release import paper_scale
    >>> from dplong.privacy.options import ReleaseOptions
    >>> from dplong.results import ModelSpec
    >>> x = np.random.default_rng(0).normal(0.0, 2.0, size=(5000, 1))
    >>> options = ReleaseOptions.check(5000, epsilon=1.0, delta=None, privacy="central",
    ...                                bound=None, d=1)
    >>> estimate = paper_scale(x, options, np.random.default_rng(1), ("x",))
    >>> estimate.privacy.epsilon <= 0.5, bool(1.0 < estimate.scale[0] < 16.0)
    (True, True)
    """
    scale_options = part(options, PAPER_SCALE_SHARE)
    return estimate_scale(
        matrix,
        epsilon=scale_options.epsilon,
        delta=scale_options.delta or None,
        privacy=options.privacy,
        bound=options.bound,
        gamma=options.gamma,
        random_state=rng,
        names=names,
    )


def paper_mean_options(options: ReleaseOptions, *, stated: bool) -> ReleaseOptions:
    """The budget the paper's mean gets after CoinPress took its share (if estimating)."""
    return options if stated else part(options, 1.0 - PAPER_SCALE_SHARE)


def paper_release(
    block: Block, statistics: Statistics, options: ReleaseOptions, rng: np.random.Generator
) -> Release:
    """The paper's pipeline: CoinPress (Alg 13-14, §7.1.5) when the scale is estimated, then
    Alg 5 (central) or Alg 8 (local) with Lemma 5.2's radii."""
    matrix = statistics.matrix
    n, d = matrix.shape
    if options.bound is not None:
        options = dataclasses.replace(options, bound=block_bound(block, options))
    scale, ledger = statistics.scale, None
    mean_options = paper_mean_options(options, stated=scale is not None)
    if scale is None:
        estimate = paper_scale(matrix, options, rng, block.names)
        scale, ledger = estimate.scale, estimate.privacy
    release = release_paper(
        matrix,
        tau=concentration_radius(scale, n, d, options.gamma),
        tau_bins=bin_radius(scale, options.gamma),
        names=block.names,
        options=mean_options,
        rng=rng,
    )
    if ledger is None:
        return release
    # the clip at Lemma 5.2's radius for CoinPress's scale is bias-free only if the values
    # concentrate as that scale's normal tail says, which no count checks here: a warning, as
    # the local model's (an audit found lognormal user effects' Group Var missing in 29 of 40
    # releases with an assumption line alone; docs/accuracy.md)
    unchecked = unchecked_warnings(
        block.names, np.ones(d, dtype=bool), np.zeros(d, dtype=bool), why="paper"
    )
    return dataclasses.replace(
        release, privacy=ledger + release.privacy, notes=(*release.notes, *unchecked)
    )
