"""Specification tests between two private fits of the same panel: the Hausman comparison
(:func:`hausman`).

Post-processing of the two fits' released estimates, standard errors and clipping bias bounds (no
further privacy cost; the two fits' own budgets compose). The classical test (Hausman 1978) takes
``Var(b_c - b_o) = V_c - V_o`` from the second estimator's efficiency and the full covariance
matrices; here neither is available: the fits' privacy noises are independent and add, GLS with
person-clustered errors need not be efficient (nor is the between estimator), and the per-user and
within fits release no covariance between two parameters
(:meth:`~dplong.results.PanelResults.cov_params`; the pooled family's is full, but a joint test
would need the two fits' sampling cross-covariance too). So each shared coefficient is tested alone,
on the standard error ``√(bse_c² + bse_o²)``, which bounds the difference's sd wherever the two
estimators' sampling errors are not negatively correlated (the within and between estimators' are
uncorrelated under the model, random effects' are positively correlated with the within estimator's,
``V_c - V_o`` being smaller still), with both bias bounds given to the null as
:attr:`~dplong.results.PanelResults.pvalues` does, and the coefficients' p-values are combined by
Bonferroni's bound, which holds whatever their correlation.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dplong._validation import check_fraction, checked_call
from dplong.exceptions import ParameterError
from dplong.results.panel import PanelResults
from dplong.summary import _table, _width, _wrap

__all__ = ["HausmanTest", "hausman"]

#: The table's columns: the difference consistent - other, its standard error, the two
#: bias bounds' sum, z and the bias-adjusted p-value (``P (bias-adj.)`` of the results).
_COLUMNS = ("difference", "std err", "bias bound", "z", "P (bias-adj.)")
#: The estimators consistent whether or not the person effects are correlated with the
#: regressors (within a person: the within fit and the persons' own fits), and those
#: consistent only where they are not.
_CONSISTENT = ("PanelOLS", "LongitudinalOLS")
_UNDER_ASSUMPTION = ("BetweenOLS", "RandomEffects", "PooledOLS")


@dataclass(frozen=True, kw_only=True)
class HausmanTest:
    """A private Hausman comparison (:func:`hausman`): released numbers and public facts only.

    Attributes
    ----------
    table : pandas.DataFrame
        One row a shared coefficient: ``difference`` (consistent - other), ``std err``
        (``√(bse_c² + bse_e²)``), ``bias bound`` (the two fits' bounds summed), ``z`` and
        ``P (bias-adj.)`` (the normal p-value of ``max(|z| - bias / std err, 0)``); NaN where
        either fit withheld the coefficient.
    statistic : float
        The largest bias-adjusted ``|z|`` over the coefficients both fits released.
    pvalue : float
        Bonferroni's bound on the p-value of "no systematic difference": the smallest
        coefficient p-value times their number, at most 1. NaN where no coefficient is shared
        released.
    df : int
        The number of coefficients compared (both fits released them).
    models : tuple of str
        The consistent and the other fit's model names.
    epsilon, delta : float
        What the two fits spent together (their ledgers' totals added: basic composition).
    """

    table: pd.DataFrame
    statistic: float
    pvalue: float
    df: int
    models: tuple[str, str]
    epsilon: float
    delta: float

    def rejects(self, alpha: float = 0.05) -> bool:
        """Whether the comparison rejects "no systematic difference" at level ``alpha``.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.results.specification import HausmanTest
        >>> test = HausmanTest(table=pd.DataFrame(), statistic=3.0, pvalue=0.005, df=2,
        ...                    models=("PanelOLS", "RandomEffects"), epsilon=8.0, delta=1e-6)
        >>> test.rejects(), test.rejects(0.001)
        (True, False)
        """
        return bool(self.pvalue <= check_fraction(alpha, "alpha"))

    @property
    def _note(self) -> str:
        consistent, other = self.models
        return (
            f"Hausman comparison of {consistent} (consistent either way) with {other} "
            f"(consistent only if the person effects are uncorrelated with the regressors): "
            f"{self.df} coefficient(s) released by both, largest bias-adjusted |z| "
            f"{self.statistic:.3g}, Bonferroni p-value {self.pvalue:.3g}. Each difference is "
            "tested alone on √(bse_c² + bse_o²), which holds where the two estimators' "
            "sampling errors are not negatively correlated, its clipping bias bounds given to "
            "the null and the normal law standing in for the noise's; no covariance between "
            "the two fits' coefficients is released. A small p-value says the person effects "
            "are correlated "
            f"with the regressors: {other}'s coefficients are then biased, and "
            f"{consistent}'s are the ones to report. Post-processing of two private fits, "
            f"which spent epsilon {self.epsilon:.4g} and delta {self.delta:.3g} together."
        )

    def as_text(self) -> str:
        """The table and the note, as text.

        Examples
        --------
        >>> import pandas as pd
        >>> from dplong.results.specification import HausmanTest
        >>> table = pd.DataFrame([[0.1, 0.04, 0.0, 2.5, 0.0124]], index=["x"],
        ...                      columns=["difference", "std err", "bias bound", "z",
        ...                               "P (bias-adj.)"])
        >>> test = HausmanTest(table=table, statistic=2.5, pvalue=0.0124, df=1,
        ...                    models=("PanelOLS", "RandomEffects"), epsilon=8.0, delta=1e-6)
        >>> text = test.as_text()
        >>> "Bonferroni p-value 0.0124" in " ".join(text.split()), text.splitlines()[0].strip()
        (True, 'Hausman comparison')
        """
        text = _table(self.table, title="Hausman comparison").as_text()
        return "\n".join([text, _wrap(self._note, width=_width(text))])

    def as_html(self) -> str:
        """The table and the note, as HTML."""
        table = _table(self.table, title="Hausman comparison").as_html()
        return f"{table}\n<p>{html.escape(self._note)}</p>"

    def as_latex(self) -> str:
        """The table (a ``tabular``) and the note, as LaTeX."""
        return "\n".join([_table(self.table).as_latex_tabular(), self._note])

    def summary(self) -> HausmanTest:
        """The comparison itself, which renders as its summary (statsmodels' spelling)."""
        return self

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()


@checked_call
def hausman(consistent: PanelResults, other: PanelResults) -> HausmanTest:
    """Compare a fit consistent either way (the within estimator) with one consistent only
    where the person effects are uncorrelated with the regressors, coefficient by coefficient.

    Random effects (and the between and pooled estimators) assume the person effects are
    uncorrelated with every regressor; where they are not, their coefficients are biased and
    the within estimator's are not, so the two differ systematically. This is the private
    counterpart of Stata's ``hausman fe re`` (and, against ``BetweenOLS``, of the
    within-between form of the test): each coefficient the two fits share and both released
    is compared (module docstring), and the coefficients' p-values are combined by
    Bonferroni's bound. ``BetweenOLS`` is the more powerful comparison under privacy: its
    coefficients move far more than random effects' where the assumption fails, and random
    effects' privacy noise is the larger (docs/guide/panel.md). It reads only released numbers
    (post-processing, no further privacy cost); the two fits spent their own budgets on the
    same persons, and :attr:`HausmanTest.epsilon` says what they spent together.

    Parameters
    ----------
    consistent : PanelResults
        The fit consistent whether or not the effects are correlated with the regressors
        (``PanelOLS``, or ``LongitudinalOLS``: its within estimator or the persons' own fits).
    other : PanelResults
        A fit of the same persons and outcome consistent only under the assumption
        (``BetweenOLS``, ``RandomEffects`` or ``PooledOLS``).

    Returns
    -------
    HausmanTest
        ``table`` (one row a shared coefficient), ``statistic``, ``pvalue``, ``df``,
        :meth:`~HausmanTest.rejects`; prints as a table with its note.

    Raises
    ------
    ParameterError
        If either is not a dplong fit of the estimators above (in that order), the fits are
        of different numbers of persons or outcomes, they are the same fit, or they share no
        coefficient.

    Examples
    --------
    >>> import warnings
    >>> import dplong
    >>> wages = dplong.datasets.load_wage_panel()
    >>> formula = "lwage ~ exper + union + married"
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     fe = dplong.PanelOLS.from_formula(formula, wages, groups="nr").fit(
    ...         epsilon=4.0, random_state=0)
    ...     re = dplong.RandomEffects.from_formula(formula, wages, groups="nr").fit(
    ...         epsilon=4.0, random_state=0)
    >>> test = dplong.hausman(fe, re)
    >>> test.table.index.tolist(), test.df, test.epsilon <= 8.0
    (['exper', 'union', 'married'], 3, True)
    >>> bool(0.0 <= test.pvalue <= 1.0), test.rejects(0.05) == (test.pvalue <= 0.05)
    (True, True)
    >>> row = test.table.loc["union"]
    >>> bool(row["difference"] == fe.params["union"] - re.params["union"])
    True
    """
    for name, fit in (("consistent", consistent), ("other", other)):
        if not isinstance(fit, PanelResults):
            raise ParameterError(f"{name} must be a dplong fit's results, got {type(fit).__name__}")
    if consistent is other:
        raise ParameterError("consistent and other are the same fit: compare two estimators")
    for name, fit, expected in (
        ("consistent", consistent, _CONSISTENT),
        ("other", other, _UNDER_ASSUMPTION),
    ):
        if fit.model.name not in expected:
            raise ParameterError(
                f"{name} must be a fit of {' or '.join(expected)}, got {fit.model.name}"
            )
    outcomes = [fit.formula.partition("~")[0].strip() for fit in (consistent, other)]
    if outcomes[0].replace(" ", "") != outcomes[1].replace(" ", ""):  # as written, but spaces
        raise ParameterError(
            f"consistent and other must model the same outcome: they model {outcomes[0]!r} "
            f"and {outcomes[1]!r}"
        )
    if consistent.nobs_users != other.nobs_users:
        raise ParameterError(
            f"consistent and other must be fits of the same persons: they have "
            f"n={consistent.nobs_users} and n={other.nobs_users} users"
        )
    shared = [name for name in consistent.params.index if name in other.params.index]
    if not shared:
        raise ParameterError(
            f"consistent and other share no coefficient (consistent has "
            f"{consistent.params.index.tolist()}, other {other.params.index.tolist()})"
        )
    difference = consistent.params[shared] - other.params[shared]
    sd = pd.Series(np.hypot(consistent.bse[shared], other.bse[shared]), index=shared)
    released = difference.notna() & sd.notna()  # a withheld coefficient's row is all NaN
    difference, sd = difference.where(released), sd.where(released)
    bias = (consistent.bias[shared].fillna(0.0) + other.bias[shared].fillna(0.0)).where(released)
    z = difference / sd
    with np.errstate(invalid="ignore", divide="ignore"):
        adjusted = np.maximum(np.abs(z) - np.where(bias > 0.0, bias / sd, 0.0), 0.0)
    p = pd.Series(2.0 * stats.norm.sf(adjusted), index=shared).where(released)
    table = pd.DataFrame(dict(zip(_COLUMNS, (difference, sd, bias, z, p), strict=True)))
    count = int(released.sum())
    return HausmanTest(
        table=table,
        statistic=float(adjusted[released].max()) if count else float("nan"),
        pvalue=float(min(1.0, count * p[released].min())) if count else float("nan"),
        df=count,
        models=(str(consistent.model), str(other.model)),
        epsilon=float(consistent.privacy.epsilon + other.privacy.epsilon),
        delta=float(consistent.privacy.delta + other.privacy.delta),
    )
