"""The noise forecast of a release of sufficient statistics, measured on a reference panel.

The pooled family's releases (:class:`~dplong.PooledOLS`, :class:`~dplong.BetweenOLS`,
:class:`~dplong.PanelOLS`, :class:`~dplong.RandomEffects`) have no closed-form noise: it
depends on the ranges and the Gram matrix the fit finds privately. What public facts do fix is
the model, n, the rows per user, the options and ε; so :class:`ReferencePanel` runs the
model's own fit, noise and all, on a made-up panel of that shape (:func:`reference_rows`) with
:data:`REFERENCE_FITS` seeds and reports what the fits' results say of their noise. The panel
is public (synthetic), so nothing is spent and the forecast is a public fact.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import patsy

from dplong.formula import build_design
from dplong.formula.terms import with_levels_in_place
from dplong.planning.checkpoints import FitPlan
from dplong.planning.stand_in import STAND_IN_USER, formula_columns

if TYPE_CHECKING:
    from dplong.models.pooled import PooledOLS

#: Fits of the reference panel a forecast takes the median of (their seeds 0, 1, ...): a fit's
#: own noise sd varies little from seed to seed, and the median of 20 by a few percent.
REFERENCE_FITS = 20
#: The fewest of them that must release a coefficient for its noise to be forecast.
MIN_RELEASED = 5
#: Seed of the reference panel's values.
REFERENCE_SEED = 20261201
#: The most rows (users times rows per user) a reference panel is made of (20 fits of 200,000
#: rows take seconds, and a search for ε tens of them): beyond, no forecast is made.
MAX_REFERENCE_ROWS = 200_000
#: The reference columns' between- and within-person parts: each uniform with this half-width
#: (variance 1/2 each, so sd 1 and half the variance between persons), about a centre
#: :data:`REFERENCE_CENTRE` sds from 0 (positive, so a log or a root is defined).
_HALF_WIDTH = math.sqrt(1.5)
REFERENCE_CENTRE = 4.0


def reference_rows(
    formula: str,
    n: int,
    rows: int,
    levels: Mapping[str, Sequence[Any]] | None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> pd.DataFrame:
    """The reference panel: n users of ``rows`` rows, every column the formula names
    (the outcome too) independent of the others, a light-tailed sum ``a_u + e_ut`` of a
    person's part and a row's (each uniform, variance 1/2) about :data:`REFERENCE_CENTRE`; a
    data column with stated ``bounds`` filling them (the same shape, its extremes at theirs;
    a transformed term's bounds leave its column as the others); a
    declared factor's levels (declared in the formula, ``C(col, levels=[...])``, or in
    ``levels``) drawn uniformly row by row. The outcome is unrelated to the
    regressors (R² 0). Public: made from the formula, n and the options alone.

    Examples
    --------
    >>> from dplong.planning.reference import reference_rows
    >>> panel = reference_rows("y ~ x + C(arm)", 500, 4, {"arm": ["a", "b"]}, {"x": (0, 10)})
    >>> round(float(panel["y"].std()), 1), bool(panel["x"].between(0, 10).all())
    (1.0, True)
    >>> sorted(set(panel["arm"]))
    ['a', 'b']
    """
    rng = np.random.default_rng(REFERENCE_SEED)
    size = n * rows
    user = np.repeat(np.arange(n), rows)
    frame: dict[str, Any] = {STAND_IN_USER: user}
    declared, stated = with_levels_in_place(formula, levels), dict(bounds or {})
    for column in formula_columns(formula):
        if column in declared:
            values = np.asarray(list(declared[column]), dtype=object)
            frame[column] = values[rng.integers(0, len(values), size)]
            continue
        spread = rng.uniform(-_HALF_WIDTH, _HALF_WIDTH, n)[user]
        spread += rng.uniform(-_HALF_WIDTH, _HALF_WIDTH, size)
        if column in stated:  # its extremes at the bounds'
            low, high = (float(v) for v in stated[column])
            frame[column] = (low + high) / 2.0 + (high - low) / 2.0 * spread / (2 * _HALF_WIDTH)
        else:
            frame[column] = REFERENCE_CENTRE + spread
    panel: pd.DataFrame = pd.DataFrame(frame)
    return panel


def reference_units(
    formula: str, panel: pd.DataFrame, levels: Mapping[str, Sequence[Any]] | None
) -> tuple[dict[str, float], dict[str, str]]:
    """Each coefficient's unit on the reference panel: the outcome's sd over the column's
    (a factor's indicator, 0 or 1 in every row: the outcome's sd alone), and its name; NaN and
    ``"-"`` for a constant column (the intercept, whose noise depends on where the columns lie
    for their spread, which the panel makes up).

    Examples
    --------
    >>> from dplong.planning.reference import reference_rows, reference_units
    >>> panel = reference_rows("y ~ x + C(arm)", 500, 4, {"arm": ["a", "b"]})
    >>> units, names = reference_units("y ~ x + C(arm)", panel, {"arm": ["a", "b"]})
    >>> names
    {'Intercept': '-', 'C(arm)[T.b]': 'sd(y)', 'x': 'sd(y)/sd(x)'}
    """
    design = build_design(
        formula,
        panel,
        groups=STAND_IN_USER,
        levels=levels,
        eval_env=patsy.EvalEnvironment.capture(0),
    )
    outcome = float(np.std(design.y))
    sds = np.std(design.X, axis=0)
    indicator = np.all((design.X == 0.0) | (design.X == 1.0), axis=0)
    scale = np.where(sds > 0.0, outcome / np.where(indicator, 1.0, np.fmax(sds, 1e-300)), np.nan)
    names = tuple(
        "-"
        if not s > 0.0
        else f"sd({design.outcome})"
        if ind
        else f"sd({design.outcome})/sd({column})"
        for column, s, ind in zip(design.columns, sds, indicator, strict=True)
    )
    return dict(zip(design.columns, scale, strict=True)), dict(
        zip(design.columns, names, strict=True)
    )


@dataclass(frozen=True)
class ReferencePanel:
    """A model of the pooled family built on its reference panel (:func:`reference_rows`),
    and its coefficients' units there (:func:`reference_units`)."""

    model: PooledOLS
    units: Mapping[str, float]
    names: Mapping[str, str]

    @classmethod
    def of(
        cls,
        built: Any,
        n: int,
        rows: int,
        levels: Mapping[str, Sequence[Any]] | None,
        options: Mapping[str, Any],
    ) -> ReferencePanel | None:
        """The reference panel of ``built`` (the model on stand-in rows) and the options of its
        ``from_formula``; None where the model is not of the pooled family or the panel would
        exceed :data:`MAX_REFERENCE_ROWS`.

        Examples
        --------
        >>> import dplong
        >>> from dplong.planning.reference import ReferencePanel
        >>> from dplong.planning.stand_in import STAND_IN_USER, stand_in_rows
        >>> built = dplong.PooledOLS.from_formula(
        ...     "y ~ x", stand_in_rows("y ~ x", 500, 4, None), groups=STAND_IN_USER)
        >>> panel = ReferencePanel.of(built, 500, 4, None, {})
        >>> panel.names["x"], ReferencePanel.of(built, 10**6, 4, None, {})
        ('sd(y)/sd(x)', None)
        """
        from dplong.models.pooled import PooledOLS
        from dplong.models.pooled.frame import parse_bounds

        if not isinstance(built, PooledOLS) or n * rows > MAX_REFERENCE_ROWS:
            return None
        formula = built.formula  # its effects terms resolved (TimeEffects as C(time))
        bounds = options.get("bounds")  # the command line's "COL=LO,HI;..." or a mapping
        stated = parse_bounds(bounds) if isinstance(bounds, str) else bounds
        panel = reference_rows(
            formula, n, rows, levels, stated if isinstance(stated, Mapping) else None
        )
        with warnings.catch_warnings():  # of made-up rows: nothing to tell the analyst
            warnings.simplefilter("ignore")
            model = type(built).from_formula(formula, panel, groups=STAND_IN_USER, **options)
            units, names = reference_units(formula, panel, levels)
        return cls(model, units, names)

    def table(
        self, fit_plan: FitPlan, epsilon: float, fit_options: Mapping[str, Any]
    ) -> pd.DataFrame:
        """The plan's forecast table (as :func:`~dplong.planning.forecast._table`'s, plus
        ``released_share``) from :data:`REFERENCE_FITS` fits of the panel at ``epsilon``, their
        noise drawn from seeds 0, 1, ...: per coefficient, the median over the fits that
        released it of the noise sd and the sampling sd their results report, in its unit
        (divided by it), and the share of the fits that released it. The noise sd is what the
        fits' intervals carry for the privacy noise (their noise law's)."""
        with warnings.catch_warnings():  # of made-up rows: nothing to tell the analyst
            warnings.simplefilter("ignore")
            results = [
                self.model.fit(epsilon=epsilon, random_state=seed, **fit_options)
                for seed in range(REFERENCE_FITS)
            ]
        keys = [(str(i), c) for i, b in enumerate(fit_plan.blocks) for c in b.names]
        index = pd.Index([c for _, c in keys])
        params = np.array([r.params.reindex(index).to_numpy(float) for r in results])
        noise = np.array([r.noise_sd.reindex(index).to_numpy(float) for r in results])
        sampling = np.array([r.sampling_sd.reindex(index).to_numpy(float) for r in results])
        released = np.isfinite(params) & np.isfinite(noise)
        shown = released & (released.sum(axis=0) >= MIN_RELEASED)
        scale = np.array([self.units.get(c, math.nan) for c in index])
        with warnings.catch_warnings():  # no fit released it: NaN, not a RuntimeWarning
            warnings.simplefilter("ignore", RuntimeWarning)
            noise_sd = np.nanmedian(np.where(shown, noise, np.nan), axis=0) / scale
            sampling_sd = np.nanmedian(np.where(shown, sampling, np.nan), axis=0) / scale
        table: pd.DataFrame = pd.DataFrame(
            {
                "share": [b.share for b in fit_plan.blocks for _ in b.names],
                "midpoint_epsilon": math.nan,
                "scale_epsilon": math.nan,
                "final_epsilon": math.nan,
                "noise_sd": noise_sd,
                "sampling_sd": sampling_sd,
                "noise_to_sampling": noise_sd / sampling_sd,
                "unit": [self.names.get(c, "-") for c in index],
                # a release outside the coefficients (RandomEffects' variance components): NaN
                "released_share": np.where(
                    index.isin(results[0].params.index), released.mean(axis=0), np.nan
                ),
            },
            index=pd.MultiIndex.from_tuples(keys, names=["block", "column"]),
        )
        return table
