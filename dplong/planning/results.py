"""What :func:`~dplong.planning.plan` predicts (:class:`PlanResults`) and its rendering."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from dplong.planning.reference import MIN_RELEASED, REFERENCE_FITS
from dplong.planning.search import EPSILON_RANGE


def _not_searched() -> None:
    """A plan built without its search for the smallest n (module-level: it pickles)."""
    return None


@dataclass(frozen=True)
class PlanResults:
    """What :func:`plan` predicts for a fit, from public facts only.

    Attributes
    ----------
    model, formula : str
    n : int
    epsilon, delta : float
        The budget planned (δ as the fit would default it).
    refusal : str or None
        Why the fit would be refused (the fit's own message), or None.
    warnings : tuple of str
        The public warnings its plans carry (said before any noise).
    table : pandas.DataFrame
        One row per released column (index: block and column): its share of the budget, the
        ε of its midpoint, scale and final stages, the predicted privacy-noise sd
        (``noise_sd``, in ``unit``), the sampling sd in the same unit, their ratio and, with a
        ``target_sd``, the smallest ε at which that column's predicted noise sd reaches it. The
        pooled family's is measured on a reference panel (:mod:`~dplong.planning.reference`),
        which adds ``released_share``: the share of its fits that released the coefficient.
    smallest_epsilon : float or None
        The smallest ε at which the fit is not refused, to two significant digits rounded
        up (released there; the threshold lies within that rounding below it); 1e-4, the
        search's floor, where it is released at every ε searched (the summary says "any");
        None: none up to 1e4.
    quiet_epsilon : float or None
        The smallest ε at which it is planned without a warning (None: none up to 1e4, or
        the model registers no plan).
    registered : bool
        Whether the model registers its plan (:class:`FitPlan`); if not, the decision is its
        fit's, run on the stand-in rows, and nothing is forecast.
    level : {"user", "item"}
        What n counts: users, or rows each a unit (an item-level model).
    privacy : {"central", "local"}
        The privacy model the fit would run under (its ``privacy=``).
    caveats : tuple of str
        What the stand-in rows assume that the analyst's data may not (from the model and its
        options: a ``by=`` level's users, a within fit's regressors that change within every
        user), and what to do about it.

    Examples
    --------
    >>> import dplong
    >>> p = dplong.plan("y ~ x", model="ols", n=2000, epsilon=0.5)
    >>> p.refused, p.warnings, list(p.table.index)
    (False, (), [('0', 'Intercept'), ('0', 'x')])
    >>> print(p.summary())  # doctest: +ELLIPSIS
                   dplong plan (public facts only: no row is read)...
    Decision: released
    ...
    """

    model: str
    formula: str
    n: int
    epsilon: float
    delta: float
    refusal: str | None
    warnings: tuple[str, ...]
    table: pd.DataFrame
    smallest_epsilon: float | None
    quiet_epsilon: float | None
    target_sd: float | None = None
    registered: bool = True
    level: str = "user"
    privacy: str = "central"
    caveats: tuple[str, ...] = ()
    _users: Callable[[], int | None] = field(repr=False, compare=False, default=_not_searched)

    @property
    def refused(self) -> bool:
        """Whether the fit would be refused at ``epsilon``."""
        return self.refusal is not None

    def smallest_n(self) -> int | None:
        """The smallest number of users at which the fit is not refused at ``epsilon`` (None:
        none up to 10⁶). Bisection on the same decision, a model built per candidate n."""
        return self._users()

    def summary(self) -> str:
        """The plan as text (also ``str(results)``)."""
        width = 78
        # a release whose noise the plan does not forecast (sufficient statistics): whether
        # each coefficient is withheld is decided by its released numbers at the fit; measured
        # on the reference panel, where too few of its fits released any (the intercept's
        # noise is never forecast there)
        shares = self.table.get("released_share", pd.Series(dtype=float)).dropna()
        blind = (
            not self.refused
            and len(self.table) > 0
            and (
                len(shares) > 0 and bool((shares < MIN_RELEASED / REFERENCE_FITS).all())
                if "released_share" in self.table
                else bool(self.table["noise_sd"].isna().all())
            )
        )
        withheld = blind and "released_share" in self.table
        lines = [
            "dplong plan (public facts only: no row is read)".center(width),
            "=" * width,
            f"Model: {self.model}   Formula: {self.formula}",
            f"{'Users (n)' if self.level == 'user' else 'Rows (n, each a unit)'}: {self.n}   "
            f"Privacy: {self.privacy}, epsilon {self.epsilon:g}, "
            f"delta {self.delta:.3g}",
            "Decision: " + self._decision(blind, withheld),
            # the smallest epsilon the decision is not a refusal at: "released" is that
            # decision's word, except where the reference fits withheld every coefficient
            f"Smallest epsilon {'not refused' if withheld else 'released'}: "
            f"{_shown(self.smallest_epsilon)}; without warnings: "
            + (_shown(self.quiet_epsilon) if self.registered else "unknown"),
            "-" * width,
        ]
        if self.refused:
            lines.append(f"Refusal: {self.refusal}")
        elif not self.registered:
            lines.append(
                textwrap.fill(
                    f"{self.model} registers no plan: the decision is its fit's on stand-in "
                    "rows; no warnings or noise are forecast.",
                    width,
                )
            )
        else:
            shown = self.table.copy()
            shown.index = [f"{b}: {c}" for b, c in shown.index]
            lines.append(shown.to_string(float_format=lambda v: f"{v:.4g}"))
        lines.append("-" * width)
        notes = [f"Warning: {note}" for note in self.warnings] + [self._forecast_note(blind)]
        notes += [f"Caveat: {caveat}" for caveat in self.caveats]
        lines += [textwrap.fill(note, width, subsequent_indent="  ") for note in notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _decision(self, blind: bool, withheld: bool) -> str:
        """The decision line: refused, or released (with warnings), or, where nothing is
        forecast (``blind``), what that leaves: where the reference panel's fits released no
        coefficient (``withheld``), the fit is not refused but expected to withhold them, not
        "released"."""
        if self.refused:
            return "REFUSED before any noise"
        warned = ", with warnings" if self.warnings else ""
        if not blind:
            return "released" + warned
        if withheld:
            return f"not refused, but withheld in the reference fits{warned}"
        return f"released{warned} (no noise forecast: coefficients may be withheld at the fit)"

    def _forecast_note(self, blind: bool) -> str:
        """What the table's noise columns are (the summary's last note)."""
        unit = "user" if self.level == "user" else "row"
        if "released_share" in self.table:
            return (
                f"noise sd and sampling sd are measured on a reference panel: {REFERENCE_FITS} "
                f"fits of this model on {self.n} made-up users (every column light-tailed, half "
                "its variance between users, the outcome unrelated to the regressors); "
                "noise_sd is the privacy-noise sd the fits report and their intervals carry, "
                "in the unit given (sd(outcome)/sd(column), a factor's indicator sd(outcome): "
                "multiply by your data's sds; a 0/1 column or one constant within users can "
                "carry twice this); the intercept's depends on where your columns "
                "lie and is not forecast; released_share: the share of the fits that released "
                "the coefficient (nearly collinear or heavy-tailed columns are withheld more "
                f"often; its noise is forecast where {MIN_RELEASED} or more did)."
                + (
                    f" Fewer than {MIN_RELEASED} of them released any coefficient: expect them "
                    "withheld."
                    if blind
                    else ""
                )
            )
        if blind:
            return (
                "no noise sd is forecast for this release of sufficient statistics: it depends "
                "on the ranges and the design the fit finds privately, and a coefficient the "
                "released numbers do not determine, or whose range missed or clips many "
                "persons, is withheld at the fit (NaN, with its reason); 'released' says only "
                "that nothing refuses the fit before its first noise draw."
            )
        return (
            "noise sd and sampling sd are predicted for a typical release (every "
            f"{unit} has a statistic, normal tails); unit sigma: the sd of one {unit}'s "
            "statistic in that column, which the fit estimates privately (multiply by it); "
            "'absolute' where the scale is stated or public bounds hold the statistic."
        )


def _shown(value: float | None) -> str:
    """An ε the search found: none up to its top; at its floor, released at every ε down to
    it (a fit never refused, as the local model's: the floor read as a threshold, an audit);
    else the number (a threshold below the floor, reached from a small ε, too)."""
    if value is None:
        return f"none up to {EPSILON_RANGE[1]:g}"
    return f"any (every ε down to {value:g})" if value == EPSILON_RANGE[0] else f"{value:g}"
