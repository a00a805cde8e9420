"""Every column's range and the frame the rows are mapped into: the public ranges from the
options and the formula, and the affine map onto [-1, 1] and back (step 1 of
``docs/design/pooled.md``; the private ranges: :mod:`dplong.models.pooled.located`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dplong._validation import real_number
from dplong.exceptions import ParameterError
from dplong.formula import DesignSpec
from dplong.models.pooled.factors import Blocks, _indicator_ranges
from dplong.privacy.noise import SMALLEST_RADIUS
from dplong.privacy.options import MAX_BOUND

__all__ = ["OUTCOME_ROOM", "BoundsLike", "column_bounds", "column_range", "parse_bounds"]

BoundsLike = Mapping[str, tuple[float, float]]

#: Where the outcome's range was found privately, the rows the scores read clip the outcome at
#: this many of the range's half-widths from its middle, not at its ends. Every release that
#: reads the outcome beyond the frame clips a person's score (or its excess) by norm, so its
#: sensitivity holds whatever the outcome; the range, found at a few median reaches of the
#: persons' extremes, cut a skewed outcome's long side, and that pull was in no interval
#: (docs/accuracy.md, "The outcome read out to its room"). The room keeps the products
#: finite (an outcome of 1e300 squared overflows). A declared range is
#: the analyst's: the outcome stays clipped to it (the ePTR release's sensitivity needs it).
OUTCOME_ROOM = 8.0


def column_bounds(spec: DesignSpec, bounds: BoundsLike | str | None) -> NDArray[np.float64]:
    """The public range of every design column and of the outcome ((p + 1) x 2): the intercept
    is 1 (``bounds`` may not name it), an indicator of declared factor levels has the range of
    its contrast values, any other column (and the outcome) its entry of ``bounds``, which must
    name nothing else, or NaN where ``bounds`` has none (the fit finds that range privately).
    Decided from the formula and the options only.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.formula import DesignSpec
    >>> from dplong.models.pooled import column_bounds
    >>> schema = pd.DataFrame({"y": [0.0], "x": [0.0], "arm": ["a"]}).iloc[:0]
    >>> spec = DesignSpec.from_formula("y ~ x + arm", schema, levels={"arm": ["a", "b"]})
    >>> column_bounds(spec, {"y": (0, 10), "x": (-1, 1)}).tolist()
    [[1.0, 1.0], [0.0, 1.0], [-1.0, 1.0], [0.0, 10.0]]
    >>> column_bounds(spec, {"y": (0, 10)})[2].tolist()   # x: found at the fit
    [nan, nan]
    """
    if isinstance(bounds, str):  # the command line's "COL=LO,HI;COL=LO,HI"
        bounds = parse_bounds(bounds)
    if not isinstance(bounds, Mapping | None):  # untyped callers
        raise ParameterError(
            f"bounds must be a mapping {{column: (low, high)}}, got {type(bounds).__name__}"
        )
    given = dict(bounds or {})
    known = _indicator_ranges(spec)
    names = (*spec.columns, spec.outcome)
    if "Intercept" in given and "Intercept" in spec.columns:
        raise ParameterError(
            "bounds names 'Intercept', which is 1 in every row: it has no range to bound; drop it"
        )
    unknown = [k for k in given if k not in names]
    if unknown:
        raise ParameterError(
            f"bounds names {unknown}, which are not the outcome or a design column; they are "
            f"{list(names)}"
        )
    out = np.full((len(names), 2), np.nan)  # NaN: found privately at the fit
    for j, name in enumerate(names):
        if name == "Intercept":
            out[j] = 1.0
        elif name in given:
            out[j] = column_range(given[name], name)
        elif name in known:
            out[j] = known[name]
    return out


def parse_bounds(text: str) -> dict[str, tuple[float, float]]:
    """``"xage=0,100;female=0,1"`` as ``{"xage": (0.0, 100.0), "female": (0.0, 1.0)}``.

    Examples
    --------
    >>> from dplong.models.pooled.frame import parse_bounds
    >>> parse_bounds("xage=0,100;female=0,1")
    {'xage': (0.0, 100.0), 'female': (0.0, 1.0)}
    """
    out: dict[str, tuple[float, float]] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, _, values = item.rpartition("=")
        try:
            low, high = (float(v) for v in values.split(","))
        except ValueError:
            name = ""
        if not name.strip():
            raise ParameterError(f"bounds must read COL=LO,HI;COL=LO,HI, got {item!r}")
        if name.strip() in out:  # which one was meant? (the last would win without a word)
            raise ParameterError(f"bounds gives {name.strip()!r} twice, in {text!r}")
        out[name.strip()] = (low, high)
    return out


def column_range(value: Any, name: str) -> tuple[float, float]:
    """``value`` as a public range ``(low, high)`` of ``bounds[name]``: finite, low < high,
    within ±:data:`~dplong.privacy.options.MAX_BOUND`, and wide enough for the noise lattice
    (:data:`~dplong.privacy.noise.SMALLEST_RADIUS`).

    Examples
    --------
    >>> from dplong.models.pooled.frame import column_range
    >>> column_range((0, 1), "visit")
    (0.0, 1.0)
    >>> column_range((1, 0), "visit")
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: bounds['visit'] must be finite with low < high, got (1.0, 0.0)
    """
    try:
        low, high = value
    except (TypeError, ValueError):
        raise ParameterError(
            f"bounds[{name!r}] must be a pair (low, high), got {value!r:.60}"
        ) from None
    low, high = (
        real_number(low, f"bounds[{name!r}] low"),
        real_number(high, f"bounds[{name!r}] high"),
    )
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ParameterError(
            f"bounds[{name!r}] must be finite with low < high, got ({low!r}, {high!r})"
        )
    if high - low < 2.0 * SMALLEST_RADIUS:  # the noise lattice's step would underflow
        raise ParameterError(
            f"bounds[{name!r}] must be at least {2.0 * SMALLEST_RADIUS:.3g} wide, got "
            f"({low!r}, {high!r}); rescale the column"
        )
    if max(abs(low), abs(high)) > MAX_BOUND:  # squared by the fits' noise and products
        raise ParameterError(
            f"bounds[{name!r}] must lie within ±{MAX_BOUND:g}: its square would overflow; got "
            f"({low!r}, {high!r})"
        )
    return float(low), float(high)


class _Scaling:
    """The affine map of every column and the outcome onto [-1, 1] (step 1 of
    ``docs/design/pooled.md``), and back: ``β = offset + linear γ`` for the coefficients γ of
    the scaled design."""

    def __init__(
        self,
        centre: NDArray[np.float64],
        half: NDArray[np.float64],
        ranges: NDArray[np.float64],
        intercept: int | None,
        basis: NDArray[np.float64] | None = None,
        outcome: NDArray[np.float64] | None = None,
    ) -> None:
        self.centre, self.half, self.ranges, self.intercept = centre, half, ranges, intercept
        #: the outcome's clip in the rows (default: its range; :data:`OUTCOME_ROOM`)
        self.outcome = ranges[-1] if outcome is None else outcome
        p = centre.size - 1
        self.linear = np.diag(half[-1] / half[:-1])
        self.offset = np.zeros(p)
        if intercept is not None:
            self.linear[intercept] -= centre[:-1] * half[-1] / half[:-1]
            self.linear[intercept, intercept] = half[-1]
            self.offset[intercept] = centre[-1]
        #: the mapped columns' change of basis (public, invertible; None: none): rows ``x̃ A``,
        #: whose coefficients γ' are ``A γ'`` of the mapped columns
        self.basis = basis
        if basis is not None:
            self.linear = self.linear @ basis

    @classmethod
    def of(
        cls,
        ranges: NDArray[np.float64],
        columns: tuple[str, ...],
        frame: NDArray[np.float64] | None = None,
        blocks: Blocks = (),
        *,
        outcome_found: bool = False,
    ) -> _Scaling:
        """Values clipped to ``ranges`` and mapped so that ``frame`` (default: the ranges, a
        narrower one for the Gram matrix's sake, inside them) becomes ``[-1, 1]``; the
        columns of factor ``blocks`` are divided by their largest magnitude, not centred
        (indicators stay 0/1: a row's norm over a block stays within its bound, and a rare
        level's indicator stays apart from the intercept). An outcome whose range was found
        privately (``outcome_found``) is clipped :data:`OUTCOME_ROOM` times as far out."""
        frame = ranges if frame is None else frame
        intercept = columns.index("Intercept") if "Intercept" in columns else None
        if intercept is None:  # no intercept to absorb a shift: scale around 0
            centre = np.zeros(len(ranges))
            half = np.abs(frame).max(axis=1)
        else:
            centre = frame.mean(axis=1)
            half = (frame[:, 1] - frame[:, 0]) / 2.0
            centre[intercept], half[intercept] = 0.0, 1.0
        basis = None
        for block, _ in blocks:
            indices = list(block)
            centre[indices] = 0.0
            half[indices] = np.abs(ranges[indices]).max(axis=1)
            if intercept in block:  # the intercept becomes the reference level's indicator
                basis = np.eye(len(columns))
                basis[indices, intercept] = -1.0
                basis[intercept, intercept] = 1.0
        outcome = None
        if outcome_found:
            middle, width = ranges[-1].mean(), (ranges[-1, 1] - ranges[-1, 0]) / 2.0
            outcome = middle + OUTCOME_ROOM * width * np.array([-1.0, 1.0])
        return cls(centre, np.where(half > 0, half, 1.0), ranges, intercept, basis, outcome)

    @property
    def isotropic_gain(self) -> NDArray[np.float64]:
        """Per coefficient, the sd of its noise when the scaled coefficients get independent
        noise of sd 1 (the ePTR release): the norms of the rows of ``linear``."""
        return np.asarray(np.sqrt((self.linear**2).sum(axis=1)), dtype=np.float64)

    @property
    def reach(self) -> NDArray[np.float64]:
        """The largest magnitude of each mapped column and of the outcome (1 where the frame
        is the range)."""
        far = np.abs(self.ranges - self.centre[:, None]).max(axis=1) / self.half
        return np.asarray(np.maximum(far, 1.0))

    def apply(
        self, X: NDArray[np.float64], y: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The clipped, mapped design and outcome (the columns within :attr:`reach`, the
        outcome within its clip)."""
        low, high = self.ranges[:-1, 0], self.ranges[:-1, 1]
        x = (np.clip(X, low, high) - self.centre[:-1]) / self.half[:-1]
        out = (np.clip(y, *self.outcome) - self.centre[-1]) / self.half[-1]
        return np.asarray(x if self.basis is None else x @ self.basis), np.asarray(out)

    def unscale(self, gamma: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.offset + self.linear @ gamma)
