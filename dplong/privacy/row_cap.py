"""The cap on a person's rows found privately: ``max_rows`` of a release of sufficient
statistics where the analyst states none.

Every release of sums of a person's rows (:mod:`dplong.models.pooled`) weighs a person at most
``T_cap`` rows, and its noise is in proportion to ``T_cap``: a panel of four waves fitted at a
cap of 10 pays two and a half times the noise it needs. How many rows each person has is
private, so the cap is found from one discrete Gaussian vector: the persons counted by their
rows, ``min(T_u, ceiling)``, one cell a count (a person is one cell: replacing one moves two
counts by one, an L2 sensitivity of √2). The cap is the fewest rows ``k`` whose noisy count
of the persons with more, a sum of ``ceiling - k`` cells, is at most :data:`CAP_TAIL` of n plus
:data:`CAP_SDS` of its noise sds (post-processing). Where the noise is large next to n the
rule picks a smaller cap than the persons' lengths call for: the persons with more rows are
down-weighted (``T_cap / T_u`` a row), which costs less than the noise a larger cap adds
there. Design notes: ``docs/design/pooled.md``, step 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.accounting import LedgerEntry, gaussian_vector_entry
from dplong.privacy.noise import release_vector_sum

__all__ = ["CAP_SDS", "CAP_TAIL", "ROW_CAP_SHARE", "RowCap", "release_row_cap"]

#: The share of a fit's ρ the cap's counts take where ``max_rows`` is not stated. At 1,000
#: persons and ε = 1 a cell's noise sd is about 53 persons: a balanced panel of 4 rows finds 4
#: in nearly every fit (:data:`CAP_SDS`), and the fit's other releases lose 1 % of their noise
#: sd to it, against the 2.5 times a cap of 10 would cost them.
ROW_CAP_SHARE = 0.02
#: The cap leaves about ``CAP_TAIL`` of the persons above it (down-weighted, not dropped), and
#: a count within ``CAP_SDS`` of its noise sds of that passes: a count of 0 passes with chance
#: 0.977 or more, whatever the noise.
CAP_TAIL, CAP_SDS = 0.1, 2.0


@dataclass(frozen=True, eq=False)  # holds an array: compared by identity
class RowCap:
    """The cap on a person's rows of a fit: ``value``; ``found`` privately (else stated, or
    of no effect); the noisy counts of the persons by their rows (1 to the ceiling, the last
    cell all with at least as many; empty where not found), their noise sd, the ledger
    entries of the release (none where not found) and the number of ``persons`` (n, public).

    Examples
    --------
    >>> from dplong.privacy.row_cap import RowCap
    >>> RowCap(5).assumption                      # stated: nothing to say
    ()
    >>> RowCap(4, found=True).assumption[0][:30]
    'max_rows=4 found privately: th'
    >>> RowCap(4, True, np.array([0.0, 300.0, 700.0] + [0.0] * 7), 1.0, persons=1000).shorter
    True
    """

    value: int
    found: bool = False
    counts: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    sd: float = 0.0
    entries: tuple[LedgerEntry, ...] = ()
    persons: int = 0

    @property
    def shorter(self) -> bool:
        """Whether the released counts show more than :data:`CAP_TAIL` of the persons with
        fewer rows than a cap found privately, by :data:`CAP_SDS` sds of their sum's noise (the
        rule of :func:`release_row_cap` turned down): only then can a smaller cap lower X'X's
        noise next to its signal (a person with at least the cap's rows weighs the cap, and
        both scale with it; a balanced panel gains nothing). False where not found."""
        if not self.found or self.value <= 1:
            return False
        below = float(self.counts[: self.value - 1].sum())
        return below > CAP_TAIL * self.persons + CAP_SDS * self.sd * math.sqrt(self.value - 1)

    @property
    def assumption(self) -> tuple[str, ...]:
        """The results' line on a cap found privately (none where stated)."""
        if not self.found:
            return ()
        cells = self.counts.size - self.value  # above the cap (the last: all at the ceiling)
        persons = max(self.persons, 1)
        # from the released counts (post-processing), clamped to [0, n]
        above = min(max(float(self.counts[self.value :].sum()), 0.0), persons)
        share = (
            f"the counts put {above / persons:.0%} (sd {self.sd * math.sqrt(cells) / persons:.0%})"
            " of the persons above it, whose rows weigh less"
            if cells > 0
            else "persons with more rows weigh less by row"
        )
        return (
            f"max_rows={self.value} found privately: the fewest rows that all but about "
            f"{CAP_TAIL:.0%} of the persons have at most (more where the count's noise is large "
            f"next to n), from a noisy count of the persons by their rows; {share}: where the "
            "number of a person's rows goes with the outcome (attrition), the cap moves the "
            "estimate's target; state max_rows (public, and it spends nothing)",
        )


def release_row_cap(
    rows: NDArray[np.integer], ceiling: int, rho: float, rng: np.random.Generator
) -> RowCap:
    """The cap on a person's rows from a ρ-zCDP count of the persons by their ``rows``
    (``T_u``, one a person; 0 counts as 1) up to ``ceiling`` (the cap is at most it).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.row_cap import release_row_cap
    >>> rows = np.repeat([3, 4, 12], [500, 450, 50])
    >>> found = release_row_cap(rows, 10, 1e300, np.random.default_rng(0))  # noise off
    >>> found.value, found.counts[[2, 3, 9]].tolist()
    (4, [500.0, 450.0, 50.0])
    >>> release_row_cap(rows, 10, 1e-3, np.random.default_rng(0)).entries[0].sensitivity >= 2**0.5
    True
    """
    n = rows.size
    cells = np.clip(rows, 1, ceiling) - 1
    persons = np.zeros((n, ceiling))
    persons[np.arange(n), cells] = 1.0
    # one cell a person: replacing one moves two counts by one
    counts = release_vector_sum(persons, 1.0, math.sqrt(2.0), rho, rng)
    sd = float(counts.sd[0])
    # the persons with more than k rows, k = 1 .. ceiling - 1: a sum of ceiling - k cells
    above = np.cumsum(counts.total[::-1])[::-1][1:]
    allowed = CAP_TAIL * n + CAP_SDS * sd * np.sqrt(np.arange(ceiling - 1, 0, -1))
    passing = np.flatnonzero(above <= allowed)
    value = int(passing[0]) + 1 if passing.size else ceiling
    entry = gaussian_vector_entry("rows", "persons by their rows (max_rows)", rho, counts)
    return RowCap(value, True, counts.total, sd, (entry,), persons=n)
