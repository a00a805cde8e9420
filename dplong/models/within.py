"""The private within (entity fixed-effects) estimator: released cross products, solved.

The within estimator of ``y_ut = α_u + x_ut'β + e_ut`` (linearmodels'
``PanelOLS(entity_effects=True)``, Stata's ``xtreg, fe``) solves
``(Σ_u X̃_u'X̃_u) β = Σ_u X̃_u'ỹ_u`` on every user's demeaned rows. Both sums are sums of
per-user statistics, so the estimator is a function of column means released by the engine;
everything after the releases is post-processing:

1. **design** blocks, one per regressor in the formula's order: the Gram–Schmidt factorisation
   ``A = L D L'`` released row by row (each ``z_i'z_i`` released in its own scale, so a
   direction that correlated regressors leave small is not swamped by noise of the entries'
   size); a regressor without distinguishable within variation is withheld, decided from
   released numbers only;
2. the **influence** block: every user's influence on β at the pilot ``β₀``, centred on the
   public 0, then one Newton step ``β̂ = β₀ + ψ̂``; its second moment is the diagonal of the
   cluster-robust sandwich.

The privacy noise is pushed through the exact post-processing map by a fixed-seed parametric
bootstrap of the released means (its sd is ``noise_sd``, its mean joins the bias bound).
Users enter per within degree of freedom with precision weights capped at ``max_rows``.

The derivation, the tail models of each block and why they were chosen are in the design
notes, ``docs/design/within.md``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.models.base import Block, Statistics, combined_ledger
from dplong.privacy.budget import users_share
from dplong.privacy.engine import Release
from dplong.privacy.locate import SMALLEST_SCALE
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.radius import Tail
from dplong.privacy.rules import UserWeights
from dplong.results import ModelSpec, PanelResults

__all__ = [
    "WithinProducts",
    "coefficient_names",
    "regressor_columns",
    "select_products",
    "within_blocks",
    "within_results",
    "within_shares",
]

#: The influence block carries β̂'s noise, the design acts through the pilot's error only —
#: but as a product of its noises, so its error grows like the square of its noise and
#: explodes once the released design stops resolving the regressors. The design gets
#: :data:`DESIGN_USERS` (ε·n per design column) when it can, within :data:`INFLUENCE_WEIGHTS`:
#: an influence column gets 2 to 3 times a design column's budget. Chosen with
#: ``benchmarks/within_and_weights.py`` (2 was best on the wage panel at ε = 4, n ε = 2180; 3
#: at n ε = 4000-5000, where 4 was worse again).
DESIGN_USERS = 240.0
INFLUENCE_WEIGHTS = (2.0, 3.0)
#: An earlier regressor whose squared coefficient in a collinear regressor's projection, in
#: the scale of their within variation, exceeds this share of it is withheld with it.
COLLINEAR_LOADING = 0.01
#: Monte Carlo draws (and their fixed seed) of the privacy noise pushed through β̂'s map.
NOISE_DRAWS, NOISE_SEED = 4000, 20240613
#: A released spread this small is the engine's floor (:data:`SMALLEST_SCALE`): more than half
#: the users had exactly the midpoint; if the mean is then within the collapsed interval of 0,
#: those users held the regressor constant (``A_jj = 0``) and the rest were clipped away.
FLOOR_SPREAD = SMALLEST_SCALE * 2.0**100
#: A released entry within this many noise sds (plus its bias bound) of 0 is no evidence: of
#: within variation (a diagonal ``‖z_i‖²``), or of an association (``z_l'x_i``).
IDENTIFIED_SDS = 3.0
#: Every user's within cross products (NaN: fewer than two rows) and row counts: what the
#: blocks read (:func:`within_blocks`).
WithinProducts = tuple[NDArray[np.float64], NDArray[np.float64]]
#: The tail model of the cross products ``z_i'x_j``, ``z_i'y`` and of a square ``z_i'z_i``
#: without an association with the earlier regressors (module docstring).
_CROSS: Tail = "exponential"


def coefficient_names(columns: Sequence[str]) -> tuple[str, ...]:
    """The within estimator's parameters: the design's columns without the intercept, which the
    users' effects absorb (a function of the formula only).

    Examples
    --------
    >>> from dplong.models.within import coefficient_names
    >>> coefficient_names(["Intercept", "exper", "expersq"])
    ('exper', 'expersq')
    """
    return tuple(columns[j] for j in regressor_columns(columns))


def regressor_columns(columns: Sequence[str]) -> tuple[int, ...]:
    """Where the within estimator's regressors sit among the design's columns: all but the
    intercept (a function of the formula only).

    Examples
    --------
    >>> from dplong.models.within import regressor_columns
    >>> regressor_columns(["Intercept", "exper", "expersq"])
    (1, 2)
    """
    return tuple(j for j, c in enumerate(columns) if c != "Intercept")


def select_products(products: WithinProducts, keep: Sequence[int], p: int) -> WithinProducts:
    """The within products of the regressors ``keep`` (indices among p, in order) from those
    of all p: their entries of ``X̃'X̃`` (``np.triu_indices`` order) and of ``X̃'ỹ``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.models.within import select_products
    >>> sums = np.array([[11.0, 12.0, 22.0, 1.0, 2.0]])   # x1x1, x1x2, x2x2, x1y, x2y
    >>> select_products((sums, np.array([3.0])), [1], 2)[0].tolist()
    [[22.0, 2.0]]
    """
    sums, rows = products
    if len(keep) == p:
        return products
    upper = np.triu_indices(p)
    kept = np.isin(upper[0], keep) & np.isin(upper[1], keep)
    columns = np.concatenate([np.flatnonzero(kept), upper[0].size + np.asarray(keep)])
    return sums[:, columns], rows


def within_shares(n: int, p: int, epsilon: float) -> tuple[float, float]:
    """Budget shares of the design and influence blocks for n users, p coefficients and the
    fit's ε (public facts): the design's ``p(p+1)/2 + p`` columns get :data:`DESIGN_USERS` / n
    of ε each, within the bounds :data:`INFLUENCE_WEIGHTS` put on the influence's p columns.

    Examples
    --------
    >>> from dplong.models.within import within_shares
    >>> [round(s, 3) for s in within_shares(545, 2, 4.0)]   # the wage panel: 240 users' worth
    [0.55, 0.45]
    >>> [round(s, 3) for s in within_shares(5000, 2, 1.0)]  # capped: 3 : 1 per column
    [0.455, 0.545]
    """
    design = p * (p + 1) / 2 + p
    low, high = (design / (design + w * p) for w in INFLUENCE_WEIGHTS[::-1])
    share = users_share(DESIGN_USERS * design, n, epsilon, low, high)
    return share, 1.0 - share


def within_blocks(
    names: tuple[str, ...],
    products: Callable[[], WithinProducts],
    scale: float | None,
    shares: tuple[float, ...],
    max_rows: int,
    *,
    gamma: float,
) -> list[Block]:
    """The blocks of the module docstring for the coefficients ``names``: p design blocks (row
    i: ``p - i + 1`` columns, its part of ``shares[0]`` in proportion) and the influence block
    (``shares[1]``, :func:`within_shares`). ``products`` gives every user's within cross
    products (:func:`~dplong.models.reduce.within_cross_products`, NaN for fewer than two
    rows) and row counts: private, asked for once, when a fit runs the blocks. ``scale`` is a
    stated variance proxy of every released per-user statistic (None: estimated privately);
    ``max_rows`` the public cap ``T_cap`` of the weights; ``gamma`` the failure probability of
    the influence's public centre's bound.

    Examples
    --------
    The blocks of ``lwage ~ exper + hours`` on the wage panel: public labels and budget shares
    (the statistics are computed only when a fit runs the blocks):

    >>> import dplong
    >>> from dplong.models.within import within_blocks, within_shares
    >>> def products():
    ...     raise AssertionError("not read to make the blocks")
    >>> blocks = within_blocks(("exper", "hours"), products, None, within_shares(545, 2, 4.0),
    ...                        10, gamma=0.05)
    >>> for block in blocks:
    ...     print(list(block.names), round(block.share, 3))
    ["Z'Z[exper,exper]", "Z'X[exper,hours]", "Z'y[exper]"] 0.33
    ["Z'Z[hours,hours]", "Z'y[hours]"] 0.22
    ['influence[exper]', 'influence[hours]'] 0.45
    """
    p = len(names)
    k = p * (p + 1) // 2

    @functools.cache
    def statistics() -> tuple[NDArray[np.float64], NDArray[np.float64], UserWeights]:
        """Every user's A_u (n x p x p), b_u and weights (private; computed once)."""
        sums, rows = products()
        freedom = rows - 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            per_freedom = sums / freedom[:, None]  # per within degree of freedom
        weights = np.minimum(freedom, max_rows - 1.0) / (max_rows - 1.0)
        return (
            _symmetric(per_freedom[:, :k], p),
            per_freedom[:, k:],
            UserWeights(weights, 1.0 / (max_rows - 1.0)),
        )

    def proxy(d: int) -> NDArray[np.float64] | None:
        return None if scale is None else np.full(d, scale)

    def row_block(i: int) -> Block:
        def build(done: tuple[Release, ...]) -> Statistics:
            # public: the vector g_i and the square's tail, from the earlier rows' releases
            basis = _Basis.of(done, p)
            g = basis.vectors[:, i]
            a, b, weights = statistics()
            products = np.einsum("m,umj->uj", g, a)  # every user's g_i'A_u
            matrix = np.column_stack([products @ g, products[:, i + 1 :], b @ g])
            associated = bool(basis.associated[i])
            return Statistics(
                matrix,
                scale=proxy(p - i + 1),
                user_weights=weights,
                tail=("chi-square" if associated else _CROSS, *[_CROSS] * (p - i)),
                # its support's end, where the square's tail is what its mean rests on
                lower=np.array([0.0 if associated else -np.inf, *[-np.inf] * (p - i)]),
            )

        label = names[i]
        return Block(
            (
                f"Z'Z[{label},{label}]",
                *(f"Z'X[{label},{name}]" for name in names[i + 1 :]),
                f"Z'y[{label}]",
            ),
            shares[0] * (p - i + 1) / (k + p),
            build,
            stated_scale=scale is not None,
            weighted=True,
            count_from=None if i == 0 else 0,  # the same users with the same weights
            moment=False,  # nothing reads the design's sampling sd
        )

    def influence_block(done: tuple[Release, ...]) -> Statistics:
        basis = _Basis.of(done, p)
        a, b, weights = statistics()  # every user's ψ_u = Â⁻¹ (b_u - A_u β₀), n x p
        scores = b - a @ basis.pilot
        # their mean is the pilot's error: 0 is a public centre, off by a bound the released
        # design gives (no midpoint to locate)
        centre = (np.zeros(p), _centre_bound(basis, gamma))
        return Statistics(
            scores @ basis.inverse.T, scale=proxy(p), user_weights=weights, centre=centre
        )

    return [row_block(i) for i in range(p)] + [
        Block(
            tuple(f"influence[{name}]" for name in names),
            shares[1],
            influence_block,
            stated_scale=scale is not None,
            weighted=True,
            tail="exponential",
            count_from=0,
            relative=True,  # each coefficient's noise in its own units: the fit's are unit-free
            centred=True,
        )
    ]


def within_results(
    releases: Sequence[Release],
    *,
    model: ModelSpec,
    formula: str,
    nobs_users: int,
    basis: tuple[str, str],
    options: ReleaseOptions,
    assumptions: tuple[str, ...],
    names: tuple[str, ...],
    absorbed: tuple[str, ...] = (),
) -> PanelResults:
    """The results of a within fit from its releases (module docstring): β̂, its sampling and
    noise standard deviations, the propagated bias bound, notes. The regressors ``absorbed``
    (declared constant within users: public) were not released and have no estimate.

    Examples
    --------
    What ``LongitudinalOLS.fit(estimator="within")`` returns through it, on the wage panel:

    >>> import warnings
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> model = dplong.LongitudinalOLS.from_formula("lwage ~ exper + hours", wages, groups="nr")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # a balanced panel: exper's Z'Z is one value
    ...     res = model.fit(epsilon=4.0, estimator="within", random_state=1)
    >>> list(res.params.index), bool(res.privacy.epsilon <= 4.0)
    (['exper', 'hours'], True)
    >>> bool(abs(res.params["exper"] - 0.0698) < 4 * res.bse["exper"])  # non-private 0.0698
    True
    """
    *rows, influence = releases
    first = rows[0]
    reported, names = names, tuple(name for name in names if name not in absorbed)
    solution = _Basis.of(tuple(rows), len(names))
    beta = solution.pilot + np.where(solution.withheld, 0.0, influence.estimate)
    step = np.nan_to_num(solution.pilot - beta)
    sampling_sd = influence.sampling_sd
    noise_sd, shift = _noise_law(solution, influence)
    bias = (
        np.nan_to_num(influence.bias)
        + solution.spread @ (solution.bias @ np.abs(step))
        + np.abs(shift)
    )
    withheld = solution.withheld
    # a number without a finite value, noise or sampling sd would claim a precision nobody
    # knows (a release it rests on was withheld or missed the data): withheld too — and with
    # it every other, as the influence columns share the pilot and the released design: one
    # the engine withheld (it missed, or its clipped values spread far beyond its scale) says
    # the design's bias bounds may not hold for the others either (the wage panel's `union`
    # and `married` at ε = 16: the others 3-5 SEs off when only it was withheld)
    unknown = ~withheld & ~(np.isfinite(beta) & np.isfinite(noise_sd) & np.isfinite(sampling_sd))
    if unknown.any():
        unknown = ~withheld
    withheld = withheld | unknown
    gaussian = {r.noise_kind for r in releases} == {"gaussian"}
    index = pd.Index(reported)
    # the declared between-user regressors: no estimate, in the formula's places
    placed = index.get_indexer(pd.Index(names))

    def series(values: NDArray[np.float64], label: str) -> pd.Series:
        out = np.full(len(reported), np.nan)
        out[placed] = np.where(withheld, np.nan, values)
        named: pd.Series = pd.Series(out, index=index, name=label)
        return named

    bad_events = sum(float(np.sum(r.bad_events)) for r in releases)
    unsure = [names[int(j)] for j in np.flatnonzero(unknown)]
    lost = (
        [
            f"No estimate (NaN) for {unsure}: a release it rests on was withheld or missed the "
            "data, so its error cannot be stated. Raise epsilon or use fewer regressors."
        ]
        if unsure
        else []
    )
    # the influence values of a coefficient the basis withholds are 0 for every user by
    # construction: what the release says of those columns is no news (the design's note
    # says why they are withheld)
    columns = [f"influence[{name}]" for name in names]
    idle = {c for c, w in zip(columns, solution.withheld, strict=True) if w}

    def news(note: str) -> bool:
        listed = {c for c in columns if c in note}
        return not listed or not listed <= idle

    release_notes = [note for r in rows for note in r.notes]
    release_notes += [note for note in influence.notes if news(note)]
    notes = tuple(dict.fromkeys(release_notes + list(solution.notes(names)) + lost))
    if absorbed:  # a public declaration, not a warning
        assumptions += (
            f"Declared constant within users (between=), absorbed by the user effects, no "
            f"estimate: {', '.join(absorbed)} (PooledOLS or BetweenOLS estimate them).",
        )
    users = pd.Series(first.users, index=["users with a statistic (weighted)"], name="users")
    return PanelResults(
        model=model,
        formula=formula,
        params=series(beta, "params"),
        noise_scale=series(noise_sd if gaussian else noise_sd / math.sqrt(2.0), "noise scale"),
        noise_sd=series(noise_sd, "noise sd"),
        noise_law="gaussian" if gaussian else "laplace",
        sampling_sd=series(sampling_sd, "sampling sd"),
        bias=series(bias, "bias"),
        projection_interval=pd.DataFrame(np.nan, index=index, columns=["lower", "upper"]),
        failed=pd.Series(np.isnan(series(beta, "").to_numpy()), index=index, name="failed"),
        privacy=combined_ledger(releases, options),
        nobs_users=nobs_users,
        users=users,
        users_sd=float(first.users_sd),
        variant=first.variant,
        assumptions=assumptions,
        warnings=notes,
        gamma=options.gamma,
        bad_events=pd.Series(min(1.0, bad_events), index=index, name="bad events"),
        basis=basis[options.local],
        withheld_why=_withheld_why(solution, unknown, names) | dict.fromkeys(absorbed, "absorbed"),
    )


def _withheld_why(
    solution: _Basis, unknown: NDArray[np.bool_], names: Sequence[str]
) -> dict[str, str]:
    """A word for why each withheld coefficient has none (the notes say more): a lost
    release, a regressor changing for too few users to see, no within variation, collinear
    within the noise, or an error that cannot be stated."""
    words = np.full(len(names), "", dtype=object)
    words[unknown] = "error unknown"
    words[solution.hidden] = "collinear"
    words[solution.absent] = "no variation"
    if solution.blind:
        words[:] = "unseen"
    if solution.lost:
        words[:] = "lost release"
    return {name: str(word) for name, word in zip(names, words, strict=True) if word}


@dataclass(frozen=True)
class _Basis:
    """The released design rows after the public identification rule (module docstring,
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
            threshold[i] = IDENTIFIED_SDS * sd[0] + b[0]
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
        """Coefficients without an estimate: no within variation or collinear within the noise
        (all of them when a row was lost)."""
        return np.asarray(self.absent | self.hidden | self.lost | bool(self.blind))

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
                "solved for. Raise epsilon or use fewer regressors (declare those constant "
                "within users: between=)."
            )
        elif self.blind:
            listed = [names[j] for j in self.blind]
            out.append(
                f"No estimate (NaN): {listed} change for too few users to see at this epsilon "
                "(most never change, and the private counts saw none of the others in a cross "
                "product they enter, which was taken as 0), so the design cannot be solved. "
                "Raise epsilon, or use the per-user estimator."
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
                + ". Time-invariant regressors are absorbed by the user effects; for rarely "
                "changing ones, or when the noise hid the variation, raise epsilon or use the "
                "per-user estimator."
            )
        if self.hidden.any():
            listed = [names[int(j)] for j in np.flatnonzero(self.hidden)]
            out.append(
                f"No estimate (NaN) for {listed}: what separates these regressors is within "
                "the released design's privacy noise, so it cannot tell them apart at this "
                "epsilon. Raise epsilon or drop a collinear term."
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


def _symmetric(vech: NDArray[np.float64], p: int) -> NDArray[np.float64]:
    """The symmetric p x p matrices of the unique entries in ``np.triu_indices`` order (the
    last axis; any leading axes are kept)."""
    upper = np.triu_indices(p)
    out = np.zeros((*vech.shape[:-1], p, p))
    out[..., upper[0], upper[1]] = vech
    out[..., upper[1], upper[0]] = vech
    return out


def _noise_law(
    solution: _Basis, influence: Release
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The standard deviation and mean of the privacy noise in β̂, by Monte Carlo through the
    post-processing map (module docstring): the design's draws (:func:`_design_draws`), each
    pilot stepped by its mean influence plus a draw of the influence's noise."""
    p = solution.diagonal.size
    draws = _design_draws(solution)
    if draws is None:
        return np.zeros(p), np.zeros(p)
    rng, pilot, steps = draws
    influence_noise = _draws(rng, np.nan_to_num(influence.noise_sd), influence.noise_kind)
    errors = pilot + steps + influence_noise - solution.pilot
    return errors.std(axis=0), errors.mean(axis=0)


def _centre_bound(solution: _Basis, gamma: float) -> NDArray[np.float64]:
    """A bound, failing with probability at most γ, on the mean influence ``Â⁻¹ (b - A β₀)``:
    the pilot's error that the influence release corrects, and so the distance of its public
    centre 0 to the mean. The ``1 - γ`` quantile of the mean influence over the design's
    draws (:func:`_design_draws`, its noise), plus the design's clipping bias carried to the
    pilot to first order, ``|G D⁻¹| (B_y + B |β₀|)``. Post-processing of the released design."""
    p = solution.diagonal.size
    draws = _design_draws(solution)
    steps = np.zeros((1, p)) if draws is None else draws[2]
    noise = np.quantile(np.abs(steps), 1.0 - gamma, axis=0)
    pilot = np.nan_to_num(solution.pilot)
    bias = np.nan_to_num(solution.bias)  # a lost row: no basis, every coefficient withheld
    return np.asarray(noise + solution.spread @ (solution.outcome_bias + bias @ np.abs(pilot)))


def _design_draws(
    solution: _Basis,
) -> tuple[np.random.Generator, NDArray[np.float64], NDArray[np.float64]] | None:
    """:data:`NOISE_DRAWS` draws of the released design's noise (Laplace or Gaussian with the
    released standard deviations) around the released design ``A = G⁻ᵀ D G⁻¹``, ``b = A β₀``,
    each released row by row in the draw's own basis (a ``z_i'z_i`` below the identification
    threshold is held at it, as the fit would not have used it) and solved: every draw's pilot
    and its mean influence ``Â⁻¹ (b - A β₀)`` (n_draws x p each), and the generator for any
    further draws. A fixed seed: a deterministic function of released numbers. None when no
    regressor is in the basis or the pilot is not finite."""
    p = solution.diagonal.size
    used = np.isfinite(solution.diagonal)
    if not used.any() or not np.isfinite(solution.pilot).all():
        return None
    rng = np.random.default_rng(NOISE_SEED)
    truth_a = solution.design
    truth_b = truth_a @ solution.pilot
    g = np.tile(np.eye(p), (NOISE_DRAWS, 1, 1))
    diagonal = np.full((NOISE_DRAWS, p), np.inf)
    outcome = np.zeros((NOISE_DRAWS, p))
    for i in np.flatnonzero(used):
        noise = _draws(rng, solution.noise[i], solution.kinds[i])
        vector = g[:, :, i]
        products = vector @ truth_a  # the draw's z_i'x_j, before its noise
        square = np.einsum("dm,dm->d", products, vector) + noise[:, 0]
        diagonal[:, i] = np.maximum(square, solution.threshold[i])
        ratios = (products[:, i + 1 :] + noise[:, 1:-1]) / diagonal[:, i, None]
        g[:, :, i + 1 :] -= vector[:, :, None] * ratios[:, None, :]
        outcome[:, i] = vector @ truth_b + noise[:, -1]
    scaled = g / diagonal[:, None, :]
    pilot = np.einsum("dji,di->dj", scaled, outcome)
    residual = truth_b - pilot @ truth_a
    inverse = scaled @ np.swapaxes(g, 1, 2)
    return rng, pilot, np.einsum("dij,dj->di", inverse, residual)


def _draws(rng: np.random.Generator, sd: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    """:data:`NOISE_DRAWS` draws of independent noise with these standard deviations: Laplace
    (the lattice Laplace to its precision), or Gaussian (the discrete Gaussian, likewise)."""
    if kind == "gaussian":
        return rng.normal(0.0, 1.0, (NOISE_DRAWS, sd.size)) * sd
    return rng.laplace(0.0, 1.0 / math.sqrt(2.0), (NOISE_DRAWS, sd.size)) * sd
