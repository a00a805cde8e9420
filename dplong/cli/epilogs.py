"""The texts under ``dplong fit --help`` and ``dplong plan --help``: examples, and what the
options mean."""

from __future__ import annotations

from dplong.cli.examples import _SHIPPED_TABLE
from dplong.io import SHIPPED

_EPILOG = f"""\
models:
{{models}}

examples:
  dplong fit dataset:wage_panel --model ols --formula "lwage ~ exper + expersq" \\
      --groups nr --time year --epsilon 4 --report wages.html
  dplong fit visits.csv --model mean --formula "weight ~ 1" --groups patient \\
      --epsilon 0.5 --scale 4
  dplong fit dataset:dietox --model kernel --formula "Weight ~ Time" --groups Pig \\
      --domain 1,12 --bandwidth 1 --grid 6 --epsilon 16 --scale 250 --report pigs.html

smallest epsilon at which each shipped example is released, and released
without a warning (from dplong plan: public facts only; below the first the
fit is refused before any noise):
{_SHIPPED_TABLE}

what it means:
  DATA       a .csv or .parquet file with one row per observation, a directory
             or glob of .parquet files ('data/*.parquet', read through Dask), or a
             data set shipped with dplong: {SHIPPED}.
  --groups   the user-id column: which person (patient, firm, pig, ...) a row
             belongs to. All rows of a user are protected together.
  --epsilon  the privacy budget ε: how much the output may change if one user's
             rows were replaced. Smaller is more private and noisier; around 1
             is common. The whole fit spends at most ε.
  --delta    a tiny probability δ that the guarantee fails (central privacy
             only; default 1/n**2 with n the number of users).
  --scale    how much one user's statistic varies (a public assumption you
             choose, e.g. from earlier studies; never look at the data for it).
             For --model kernel: the variance of one user's curve value.
             Omitted, it is estimated privately with a small part of the
             budget; that works from a few hundred users at epsilon 1.
  --domain   (kernel) the range of x, public: take it from the study design
             (e.g. weeks 1 to 12), never from the observed values.
  public     only the number of users n and the options you pass are public.
             Everything else about the data leaves only through noise, and
             every noisy step is listed in the privacy ledger of the output.
"""


_PLAN_EPILOG = """\
examples:
  dplong plan --model ols --formula "lwage ~ exper + expersq" --n 545 --epsilon 1
  dplong plan dataset:dietox --groups Pig --model location --formula "Weight ~ 1" \\
      --epsilon 4
  dplong plan --model ols --formula "y ~ x" --n 5000 --epsilon 1 --target-sd 0.005

what it says:
  The decision (refused or released, and the warnings) is the one the fit makes:
  the fit's own checks run, on made-up rows, and stop before any noise. The
  noise sd is predicted for a typical release, in units of the sd of one user's
  statistic (sigma) unless the scale is stated.
"""
