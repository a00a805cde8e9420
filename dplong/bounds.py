"""Error-bound reports: how far a released estimate may be from the truth, and how surely.

For a parameter released as ``θ̂ = θ̄ + N`` (θ̄ the non-private average of per-user statistics,
N the privacy noise) on the event E that no user was clipped,

``|θ̂ - θ| <= |θ̄ - θ| + |N|``, and each term is bounded with its own probability:

* privacy noise: central Laplace(b): ``P(|N| > b log(2/α)) = α/2`` exactly; local (a mean of n
  Laplace draws): Chebyshev, ``P(|N| > sd √(2/α)) <= α/2``;
* statistical: Lemma 2.11 (log-Sobolev concentration, Theorem 2.6) for one coordinate,
  ``P(|θ̄ - θ| > √(2 ρ̄ log(4/α))) <= α/2`` with ``ρ̄ = sampling_sd²`` the variance proxy of
  θ̄ under the stated assumption;
* E fails with probability at most γ (the radius construction, Lemma 5.2).

So the total holds with probability at least ``1 - α - γ`` per parameter, under the stated
assumptions, unless the private midpoint failed (then no bound is claimed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ErrorBoundReport:
    """Per-parameter error bounds (``table``) and the assumptions they rest on.

    Returned by :meth:`PanelResults.error_bound <dplong.results.PanelResults.error_bound>`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per parameter: columns ``privacy noise``, ``statistical``, ``total`` (the
        bound on ``|estimate - truth|``) and ``probability`` (with which it holds).
    assumptions : tuple of str
        The public assumptions the bounds rest on.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.bounds import ErrorBoundReport, error_bound_table
    >>> def series(value):
    ...     return pd.Series([value], index=["mu"])
    >>> table = error_bound_table(0.05, 0.05, noise_scale=series(0.1),
    ...                           noise_sd=series(0.1 * 2**0.5), sampling_sd=series(0.0),
    ...                           failed=series(False), local=False)
    >>> report = ErrorBoundReport(table, ("Users are independent.",))
    >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
        privacy noise  statistical  total  probability
    mu         0.3689            0 0.3689          0.9
    Assumptions:
      - Users are independent.
    """

    table: pd.DataFrame
    assumptions: tuple[str, ...]

    def __str__(self) -> str:
        lines = [self.table.to_string(float_format=lambda v: f"{v:.4g}"), "Assumptions:"]
        lines += [f"  - {a}" for a in self.assumptions]
        return "\n".join(lines)


def error_bound_table(
    alpha: float,
    gamma: float,
    noise_scale: pd.Series,
    noise_sd: pd.Series,
    sampling_sd: pd.Series,
    failed: pd.Series,
    local: bool,
) -> pd.DataFrame:
    """The numbers of :class:`ErrorBoundReport`; see the module docstring for each term.

    ``gamma`` is the total probability of the bad events (clipping, and a refinement's miss).
    A parameter whose midpoint ``failed`` gets NaN ``total`` and ``probability``.

    Examples
    --------
    Central Laplace noise of scale 0.1 gives ``0.1 log(2/α)``; the statistical term is
    ``√(2 s² log(4/α))``:

    >>> import pandas as pd
    >>> from dplong.bounds import error_bound_table
    >>> idx = ["mu", "sigma"]
    >>> table = error_bound_table(
    ...     0.05, 0.05,
    ...     noise_scale=pd.Series([0.1, 0.2], index=idx),
    ...     noise_sd=pd.Series([0.1414, 0.2828], index=idx),
    ...     sampling_sd=pd.Series([0.0, 0.1], index=idx),
    ...     failed=pd.Series([False, True], index=idx),
    ...     local=False,
    ... )
    >>> table.round(4)  # doctest: +NORMALIZE_WHITESPACE
           privacy noise  statistical   total  probability
    mu            0.3689        0.000  0.3689          0.9
    sigma         0.7378        0.296     NaN          NaN
    """
    if local:
        noise = noise_sd * math.sqrt(2.0 / alpha)
    else:
        noise = noise_scale * math.log(2.0 / alpha)
    statistical = np.sqrt(2.0 * sampling_sd**2 * math.log(4.0 / alpha))
    total = noise + statistical
    broken = failed.reindex(total.index, fill_value=False).astype(bool)
    total = total.where(~broken)
    probability = pd.Series(1.0 - alpha - gamma, index=total.index).where(~broken)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "privacy noise": noise,
            "statistical": statistical,
            "total": total,
            "probability": probability,
        }
    )
    return frame
