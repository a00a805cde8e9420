"""Error-bound reports: how far a released estimate may be from the truth, and how surely.

For a parameter released as ``θ̂ = θ̄ + B + N`` (θ̄ the non-private average of per-user
statistics, B the bias of clipping them, N the privacy noise),
``|θ̂ - θ| <= |θ̄ - θ| + |B| + |N|``, and each term is bounded with its own probability:

* privacy noise: central Laplace(b): ``P(|N| > b log(2/α)) = α/2`` exactly; discrete Gaussian
  (sd s_N): ``P(|N| > s_N z_{1-α/4}) = α/2``; local (a mean of n Laplace draws): Chebyshev,
  ``P(|N| > sd √(2/α)) <= α/2``;
* statistical: Lemma 2.11 (log-Sobolev concentration, Theorem 2.6) for one coordinate,
  ``P(|θ̄ - θ| > √(2 ρ̄ log(4/α))) <= α/2`` with ``ρ̄ = sampling_sd²`` the variance proxy of
  θ̄ under the stated assumption;
* clipping: the bias of the clipped mean is bounded (:func:`dplong.privacy.radius.clipping_bias`)
  as long as the centre of the final interval is within its allowance of the mean — which fails
  with probability at most γ per centre (the midpoint's rank error, the rough mean's noise and
  sampling error); with ``variant="theory"`` no user is clipped except with probability γ
  (Lemma 5.2);
* the default pipeline's private medians miss the data with at most the public bound of
  :func:`dplong.privacy.quantile.miss_probability` (given the private count of users);
* the paper's stable-histogram midpoint (``variant="theory"``) fails (no bin survives) with at
  most the probability of :func:`midpoint_failure_probability` (Lemmas D.9–D.10 with this package's
  constants); the local histogram always reports a bin, and its chance of reporting a wrong
  one has no explicit constant in the paper (Theorem 6.4), so none is claimed.

So ``|θ̂ - θ| <= noise + statistical + bias`` holds with probability at least
``1 - α - P(bad events)`` per parameter, under the stated assumptions (or the plug-in scale),
unless the paper's midpoint failed (then no bound is claimed).
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from dplong.privacy.histogram import stable_histogram_threshold

#: How the text of a report heads the ``probability`` column: the chance that the bound holds,
#: so that it is not read as the intervals' confidence level.
HOLDS = "P(holds) >="
# the terms of a bound per parameter: NumPy arrays, or Series on one index
_Terms = TypeVar("_Terms", NDArray[np.float64], pd.Series)


@dataclass(frozen=True, repr=False)
class ErrorBoundReport:
    """Per-parameter error bounds (``table``) and the assumptions they rest on.

    Returned by :meth:`PanelResults.error_bound <dplong.results.PanelResults.error_bound>`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per parameter: columns ``privacy noise``, ``statistical``, ``bias`` (of
        clipping), ``total`` (the bound on ``|estimate - truth|``), ``bad events``
        (probability of the events the bound excludes) and ``probability`` (with which the
        total holds).
    assumptions : tuple of str
        The public assumptions the bounds rest on.
    basis : str
        The theorem and corollary of the paper the bound instantiates.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.bounds import ErrorBoundReport, error_bound_table
    >>> def series(value):
    ...     return pd.Series([value], index=["mu"])
    >>> table = error_bound_table(0.05, series(0.05), noise_scale=series(0.1),
    ...                           noise_sd=series(0.1 * 2**0.5), sampling_sd=series(0.0),
    ...                           bias=series(0.0), failed=series(False), law="laplace")
    >>> report = ErrorBoundReport(table, ("Users are independent.",), "Theorem 4.2")
    >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
    Error bounds (Theorem 4.2): |estimate - truth| <= total with probability at least
    'P(holds) >=' (1 - alpha less the bad events; not a confidence level)
        privacy noise  statistical  bias  total  bad events  P(holds) >=
    mu         0.3689            0     0 0.3689        0.05          0.9
    Assumptions:
      - Users are independent.
    """

    table: pd.DataFrame
    assumptions: tuple[str, ...]
    basis: str = ""

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        basis = f" ({self.basis})" if self.basis else ""
        lines = [
            textwrap.fill(
                f"Error bounds{basis}: |estimate - truth| <= total with probability at least "
                f"'{HOLDS}' (1 - alpha less the bad events; not a confidence level)",
                width=100,
            )
        ]
        table = self.table.rename(columns={"probability": HOLDS})
        lines += [table.to_string(float_format=lambda v: f"{v:.4g}"), "Assumptions:"]
        lines += [
            textwrap.fill(a, width=100, initial_indent="  - ", subsequent_indent="    ")
            for a in self.assumptions
        ]
        return "\n".join(lines)


def bound_terms(
    alpha: float,
    noise_scale: _Terms,
    noise_sd: _Terms,
    sampling_sd: _Terms,
    bias: _Terms,
    law: str,
) -> tuple[_Terms, _Terms, _Terms]:
    """The privacy-noise term, the statistical term and their ``total`` with the bias, per
    parameter (arrays or aligned Series alike): the numbers of :func:`error_bound_table`
    before its bad events, for a caller that needs only the total (a fit's own use of its
    bound) without building the table.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.bounds import bound_terms
    >>> noise, statistical, total = bound_terms(0.05, np.array([0.1]), np.array([0.1414]),
    ...                                         np.array([0.0]), np.array([0.0]), "laplace")
    >>> round(float(total[0]), 4)
    0.3689
    """
    if law == "laplace":
        noise = noise_scale * math.log(2.0 / alpha)
    elif law == "gaussian":
        noise = noise_sd * float(stats.norm.ppf(1.0 - alpha / 4.0))
    else:
        noise = noise_sd * math.sqrt(2.0 / alpha)
    statistical = sampling_sd * math.sqrt(2.0 * math.log(4.0 / alpha))  # no square: no overflow
    return noise, statistical, noise + statistical + bias


def error_bound_table(
    alpha: float,
    bad_events: pd.Series,
    noise_scale: pd.Series,
    noise_sd: pd.Series,
    sampling_sd: pd.Series,
    bias: pd.Series,
    failed: pd.Series,
    law: str,
) -> pd.DataFrame:
    """The numbers of :class:`ErrorBoundReport`; see the module docstring for each term.

    ``bad_events`` is, per parameter, the total probability of the events the bound excludes
    (a centre beyond its allowance, a failed midpoint). ``law`` is the privacy noise's:
    ``"laplace"`` (exact tail), ``"gaussian"`` (normal tail) or ``"normal"`` (local: a sum of
    n draws, Chebyshev). A parameter whose midpoint ``failed`` gets NaN ``total`` and
    ``probability``.

    Examples
    --------
    Central Laplace noise of scale 0.1 gives ``0.1 log(2/α)``; the statistical term is
    ``√(2 s² log(4/α))``:

    >>> import pandas as pd
    >>> from dplong.bounds import error_bound_table
    >>> idx = ["mu", "sigma"]
    >>> def s(a, b):
    ...     return pd.Series([a, b], index=idx)
    >>> table = error_bound_table(0.05, bad_events=s(0.05, 0.05), noise_scale=s(0.1, 0.2),
    ...                           noise_sd=s(0.1414, 0.2828), sampling_sd=s(0.0, 0.1),
    ...                           bias=s(0.0, 0.01), failed=s(False, True), law="laplace")
    >>> table.round(4)  # doctest: +NORMALIZE_WHITESPACE
           privacy noise  statistical  bias   total  bad events  probability
    mu            0.3689        0.000  0.00  0.3689        0.05          0.9
    sigma         0.7378        0.296  0.01     NaN        0.05          NaN
    """
    noise, statistical, total = bound_terms(alpha, noise_scale, noise_sd, sampling_sd, bias, law)
    broken = failed.reindex(total.index, fill_value=False).astype(bool)
    total = total.where(~broken)
    bad = bad_events.reindex(total.index)
    # no bound (withheld, or no stated scale gives the statistical term): no probability
    probability = (1.0 - alpha - bad).clip(lower=0.0, upper=1.0).where(total.notna())
    frame: pd.DataFrame = pd.DataFrame(
        {
            "privacy noise": noise,
            "statistical": statistical,
            "bias": bias,
            "total": total,
            "bad events": bad.clip(upper=1.0),
            "probability": probability,
        }
    )
    return frame


def midpoint_failure_probability(
    n: int, epsilon: float, delta: float, gamma: float, *, wide_bins: bool
) -> float:
    """Bound on the chance that the stable histogram reports no bin (Lemmas D.9–D.10).

    A bin holding a share ``a`` of the n users is suppressed only if its count noise (two-sided
    geometric of rate ε/2, tail ``P(Z <= -t) <= e^{-ε t / 2}``) pulls it below the threshold
    ``n·thr``, ``thr = (2/(εn)) log(2/δ) + 1/n``: probability at most ``e^{-ε n (a - thr)/2}``
    (Lemma D.9). Which share is guaranteed:

    * ``wide_bins`` (bins of half-width τ, ``variant="theory"``): on the no-clipping event all
      users lie in ``x₀ ± τ``, which meets at most two bins, so one holds ``a >= 1/2``;
    * bins of half-width τ' (``"improved"``): each user lies in ``x₀ ± τ'`` with probability at
      least ``1 - γ``; with users independent, Hoeffding gives a share at least ``1 - γ - η``
      except with probability ``e^{-2nη²}``, and one of the at most two bins it meets holds
      ``a >= (1 - γ - η)/2``. We take the best η on a grid.

    The paper's Lemma D.10 fixes η = 1/8 and a share of 3/8; this is the same argument with the
    threshold of :func:`~dplong.privacy.stable_histogram_threshold`. Capped at 1.

    Examples
    --------
    >>> from dplong.bounds import midpoint_failure_probability
    >>> p = midpoint_failure_probability(2_000, 0.05, 2.5e-7, 0.05, wide_bins=False)
    >>> 0.0 < p < 0.02
    True
    >>> midpoint_failure_probability(100, 0.05, 1e-4, 0.05, wide_bins=False)  # n ε too small
    1.0
    """
    threshold = stable_histogram_threshold(n, epsilon, delta)
    if wide_bins:
        share = 0.5
        return min(1.0, math.exp(-epsilon * n * max(share - threshold, 0.0) / 2.0))
    best = 1.0
    for eta in np.linspace(0.0, 1.0 - gamma, 201)[1:]:
        share = (1.0 - gamma - eta) / 2.0
        suppressed = math.exp(-epsilon * n * max(share - threshold, 0.0) / 2.0)
        best = min(best, suppressed + math.exp(-2.0 * n * eta * eta))
    return min(1.0, best)
