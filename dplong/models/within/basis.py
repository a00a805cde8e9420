"""The released design after the public identification rule (:mod:`dplong.models.within`,
step 1): the Gram–Schmidt basis, which regressors it withholds and why, the pilot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.engine import Release
from dplong.privacy.locate import SMALLEST_SCALE

__all__ = ["COLLINEAR_LOADING", "FLOOR_SPREAD", "IDENTIFIED_SDS", "PANEL_OLS"]

#: An earlier regressor whose squared coefficient in a collinear regressor's projection, in
#: the scale of their within variation, exceeds this share of it is withheld with it.
COLLINEAR_LOADING = 0.01
#: A released spread this small is the engine's floor (:data:`SMALLEST_SCALE`): more than half
#: the users had exactly the midpoint; if the mean is then within the collapsed interval of 0,
#: those users held the regressor constant (``A_jj = 0``) and the rest were clipped away.
FLOOR_SPREAD = SMALLEST_SCALE * 2.0**100
#: A released entry within this many noise sds (plus its bias bound) of 0 is no evidence: of
#: within variation (a diagonal ``‖z_i‖²``), or of an association (``z_l'x_i``).
IDENTIFIED_SDS = 3.0


#: The remedy the per-entry within fit's withheld notes name: the within estimator from one set
#: of released sufficient statistics, whatever the number of regressors.
PANEL_OLS = (
    "fit dplong.PanelOLS (the within estimator from one set of released sufficient "
    "statistics, whatever the number of regressors)"
)


@dataclass(frozen=True)
class _Basis:
    """The released design rows after the public identification rule (:mod:`dplong.models.within`,
    step 1): the Gram–Schmidt vectors ``G`` (columns ``g_i``), ``D = diag(z_i'z_i)`` (inf
    where a regressor has no place in the basis, so that ``1 / D`` is 0 there), the inverse
    ``Â⁻¹ = G D⁻¹ G'`` and the pilot; for the bias bound, the bounds ``B`` of the released
    products (row i: ``z_i'z_i`` on the diagonal, ``z_i'x_j`` beyond); for the noise law, every
    row's noise sds and kind and its identification threshold. From the releases of the first
    rows only, it gives the vector the next row needs."""

    vectors: NDArray[np.float64]
    diagonal: NDArray[np.float64]
    inverse: NDArray[np.float64]
    pilot: NDArray[np.float64]
    noise: tuple[NDArray[np.float64], ...]
    kinds: tuple[str, ...]
    bias: NDArray[np.float64]
    outcome_bias: NDArray[np.float64]
    threshold: NDArray[np.float64]
    absent: NDArray[np.bool_]
    hidden: NDArray[np.bool_]
    associated: NDArray[np.bool_]
    constant: tuple[int, ...]
    lost: bool
    blind: tuple[int, ...]

    @classmethod
    def of(cls, rows: Sequence[Release], p: int) -> _Basis:
        """Post-processing of the released rows (all p, or the first few while releasing)."""
        g = np.eye(p)
        diagonal = np.full(p, np.inf)
        products, bias = np.zeros((p, p)), np.zeros((p, p))
        outcome, threshold, outcome_bias = np.zeros(p), np.zeros(p), np.zeros(p)
        absent, hidden = np.zeros(p, dtype=bool), np.zeros(p, dtype=bool)
        constant: list[int] = []
        blind: list[int] = []
        # a row the engine withheld (it missed the data, or could not size its interval)
        # leaves every later row's basis, and so every coefficient, without a footing
        lost = not all(np.isfinite(row.estimate).all() for row in rows)
        for i, row in enumerate(rows):
            estimate, sd, b = row.estimate, row.noise_sd, row.bias
            products[i, i:], bias[i, i:] = estimate[:-1], b[:-1]
            outcome[i], outcome_bias[i] = estimate[-1], b[-1]
            # the basis vector z_i is built from the earlier rows' noisy products: where x_i is
            # collinear with the earlier regressors, z_i'z_i is what their errors leave (the
            # row's own noise, sized on that residue's spread, is far smaller), so a z_i'z_i
            # within the reach of either is no evidence; the larger reach stands for both
            # (their sum withheld a tenth of the fits of two regressors in correlation 0.9)
            threshold[i] = max(
                IDENTIFIED_SDS * sd[0] + b[0], IDENTIFIED_SDS**2 * _induced(rows[:i], diagonal, i)
            )
            spread = math.sqrt(row.scale[0])
            half_width = (row.interval[0, 1] - row.interval[0, 0]) / 2.0
            # the engine's spread collapsed to its floor and the mean to within that collapsed
            # interval of 0: most users hold the regressor constant (their z_i'z_i is 0)
            held = spread <= FLOOR_SPREAD and estimate[0] <= half_width
            constant.extend([i] if held else [])
            identified = not lost and estimate[0] > threshold[i] and not held
            # a product the engine took as 0 (most users 0, the count saw none of the others:
            # a rarely changing regressor at this ε) would put it in the basis on a guess
            unseen = [
                r.unseen[i - m] if m < i else r.unseen[-1]
                for m, r in enumerate(rows[: i + 1])
                if r.unseen is not None and (m == i or np.isfinite(diagonal[m]))
            ]
            if identified and any(unseen):
                blind.append(i)
            if identified:
                diagonal[i] = estimate[0]
                # the later regressors lose their part along z_i: g_j -= (z_i'x_j / z_i'z_i) g_i
                g[:, i + 1 :] -= np.outer(g[:, i], estimate[1:-1] / estimate[0])
                continue
            # no place in the basis: collinear if its products with the earlier regressors
            # show an association, else without within variation
            if _shows_association(rows, diagonal, i) and not lost:
                hidden[: i + 1] |= _loadings(g, diagonal, products[:i, i]) > COLLINEAR_LOADING
            else:
                absent[i] = True
        inverse = (g / diagonal) @ g.T
        return cls(
            vectors=g,
            diagonal=diagonal,
            inverse=inverse,
            pilot=(g / diagonal) @ np.where(np.isfinite(diagonal), outcome, 0.0),
            noise=tuple(np.nan_to_num(r.noise_sd) for r in rows),
            kinds=tuple(r.noise_kind for r in rows),
            bias=bias,
            outcome_bias=np.nan_to_num(outcome_bias),
            threshold=threshold,
            absent=absent,
            hidden=hidden,
            associated=np.array([_shows_association(rows, diagonal, i) for i in range(p)]),
            constant=tuple(constant),
            lost=lost,
            blind=tuple(blind),
        )

    @property
    def withheld(self) -> NDArray[np.bool_]:
        """Coefficients without an estimate: no within variation or collinear within the noise;
        all of them when a row was lost, or when a regressor showed no within variation. Left
        out, such a regressor would bias the others by its association with them times its
        own slope, which nothing bounds: no released number tells a time-invariant regressor
        (exact to leave out) from one that changes for a few users or by less than the noise
        (``x`` of slope 0 beside ``d`` of slope 2 switching once for 5 % of 2,000 users, ε = 2:
        ``x``'s interval missed 0 in 19 of 27 fits; ``z`` of slope 0.5 in within correlation
        0.6 with ``x``, hidden by the noise, 1,000 users of three rows at ε = 2: in 8 of 19).
        A regressor the analyst declares time-invariant (``between=``) is never released."""
        return np.asarray(
            self.absent | self.hidden | self.lost | bool(self.blind) | self.absent.any()
        )

    @property
    def spread(self) -> NDArray[np.float64]:
        """``|G D⁻¹|``: how the bias bounds of the released rows reach β, to first order."""
        return np.asarray(np.abs(self.vectors / self.diagonal))

    @property
    def design(self) -> NDArray[np.float64]:
        """The released design ``Â = G⁻ᵀ D G⁻¹`` over the regressors in the basis."""
        used = np.isfinite(self.diagonal)
        root = np.linalg.inv(self.vectors) * np.sqrt(np.where(used, self.diagonal, 0.0))[:, None]
        return np.asarray(root.T @ root)

    def notes(self, names: Sequence[str]) -> tuple[str, ...]:
        """Reliability notes from the released design (public: functions of DP outputs)."""
        out: list[str] = []
        absent = [names[int(j)] for j in np.flatnonzero(self.absent)]
        if self.lost:
            out.append(
                "No estimate (NaN): a release of the design was withheld (its note says why: it "
                "missed the data, or could not size its interval), so no coefficient can be "
                "solved for. Raise epsilon, use fewer regressors (declare those constant "
                f"within users: between=), or {PANEL_OLS}."
            )
        elif self.blind:
            listed = [names[j] for j in self.blind]
            out.append(
                f"No estimate (NaN): {listed} change for too few users to see at this epsilon "
                "(most never change, and the private counts saw none of the others in a cross "
                "product they enter, which was taken as 0), so the design cannot be solved. "
                f"Raise epsilon, {PANEL_OLS}, or use the per-user estimator."
            )
        if absent and not self.lost:
            held = [names[j] for j in self.constant]
            out.append(
                f"No within estimate (NaN) for {absent}: the released design shows no "
                "within-user variation there beyond its privacy noise"
                + (
                    f" (for {held}, more than half the users hold the regressor constant, "
                    "which the private spread cannot see past)"
                    if held
                    else ""
                )
                + ". Time-invariant regressors are absorbed by the user effects (declare them: "
                "between=); for rarely changing ones, or when the noise hid the variation, "
                "raise epsilon or use the per-user estimator."
            )
        others = [n for n, w in zip(names, self.absent | self.hidden, strict=True) if not w]
        if absent and others and not self.lost:
            one = len(absent) == 1
            out.append(
                f"No estimate (NaN) for {others} either: no released number tells whether "
                f"{absent} never {'changes' if one else 'change'} within users (exact to leave "
                f"out) or {'changes' if one else 'change'} for a few of them or by less than "
                f"the noise, and the others' estimates without {'it' if one else 'them'} would "
                "then carry an omitted-variable bias nothing bounds. Declare the regressors "
                f"that never change within users (between=), raise epsilon, or {PANEL_OLS}."
            )
        if self.hidden.any():
            listed = [names[int(j)] for j in np.flatnonzero(self.hidden)]
            out.append(
                f"No estimate (NaN) for {listed}: what separates these regressors is within "
                "the released design's privacy noise (or nothing: exactly collinear, as a "
                "regressor that grows by one a period is beside time dummies), so it cannot "
                "tell them apart at this epsilon. Raise epsilon or drop a collinear term."
            )
        return tuple(out)


def _shows_association(rows: Sequence[Release], diagonal: NDArray[np.float64], i: int) -> bool:
    """Whether a released product ``z_l'x_i`` with an earlier regressor in the basis (``l < i``,
    among the rows released so far) is distinguishable from 0: beyond
    :data:`IDENTIFIED_SDS` noise sds plus its bias bound."""
    return any(
        np.isfinite(diagonal[m])
        and abs(rows[m].estimate[i - m])
        > IDENTIFIED_SDS * rows[m].noise_sd[i - m] + rows[m].bias[i - m]
        for m in range(min(i, len(rows)))
    )


def _induced(rows: Sequence[Release], diagonal: NDArray[np.float64], i: int) -> float:
    """What ``z_i'z_i`` the earlier rows' errors alone leave, on average, when ``x_i`` is
    collinear with the regressors before it: ``Σ_m (v_mi + c_m² v_mm) / z_m'z_m`` over the rows
    ``m < i`` in the basis, where ``c_m = z_m'x_i / z_m'z_m`` is ``x_i``'s released part along
    ``z_m``, off by ``(ε_mi - c_m ε_mm) / z_m'z_m`` to first order, and ``v = sd² + b²`` a
    released entry's noise variance and squared bias bound."""
    total = 0.0
    for m, r in enumerate(rows):
        if np.isfinite(diagonal[m]):
            v = r.noise_sd**2 + r.bias**2
            part = float(r.estimate[i - m]) / diagonal[m]
            total += (float(v[i - m]) + part**2 * float(v[0])) / diagonal[m]
    return total


def _loadings(
    g: NDArray[np.float64], diagonal: NDArray[np.float64], products: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Squared loadings of a collinear regressor x_i (``i = products.size``) and the earlier
    ones on the direction ``x_i - Σ_j h_j x_j`` it is nearly equal along, in the scale of their
    within variation (as the eigenvectors of a correlation matrix): ``h = Σ_l (z_l'x_i /
    z_l'z_l) g_l``, ``A_jj = Σ_l z_l'z_l (G⁻¹)_lj²`` over the basis. Length ``i + 1``."""
    i = products.size
    used = np.isfinite(diagonal[:i])
    ratio = np.where(used, products / np.where(used, diagonal[:i], 1.0), 0.0)
    h = g[:i, :i] @ ratio
    inverse = np.linalg.inv(g[:i, :i])
    variation = np.where(used, diagonal[:i], 0.0) @ inverse**2
    direction = np.append(
        h * np.sqrt(variation), -math.sqrt(np.where(used, diagonal[:i], 0.0) @ ratio**2)
    )
    total = float(direction @ direction)
    return np.asarray(direction**2 / total) if total > 0.0 else np.zeros(i + 1)
