"""The ``dplong`` command line: fit a private panel model to a file and print (or report) it.

``dplong fit DATA --model ols --formula "lwage ~ exper" --groups nr --epsilon 1 --scale 1,0.01``
reads DATA (CSV, Parquet — one file, a directory or a glob of files, through Dask when it is
installed — or a shipped data set as ``dataset:NAME``), fits the model with user-level
differential privacy (item-level for an item-level model such as ``nw``: every row a unit),
prints the summary and the error bounds, and with ``--report FILE`` writes a self-contained
HTML report (:mod:`dplong.report`).

The models are those the model modules register (:data:`dplong.models.command_line.MODELS`):
each brings its builder, a line of help and the options only it takes, which the parser then
offers; this package defines no model and no model option. Its modules:

* :mod:`~dplong.cli.parser`: the argument parser, from the registered options
  (:mod:`~dplong.cli.model_options`), the readers of option values
  (:mod:`~dplong.cli.values`) and the help's epilogs (:mod:`~dplong.cli.epilogs`), whose
  table of shipped examples is :mod:`~dplong.cli.examples`;
* :mod:`~dplong.cli.checks` and :mod:`~dplong.cli.keywords`: the refusals before any work,
  and the keyword arguments passed on to the model and its ``fit``;
* :mod:`~dplong.cli.fit` and :mod:`~dplong.cli.plan`: the subcommands;
* :mod:`~dplong.cli.command`: :func:`main`, which turns every refusal into one line
  (:mod:`~dplong.cli.errors`) and exit code 2.
"""

from __future__ import annotations

from dplong.cli.command import main
from dplong.cli.examples import SHIPPED_EXAMPLES as SHIPPED_EXAMPLES
from dplong.cli.examples import _example_flags as _example_flags
from dplong.cli.examples import shown_epsilon as shown_epsilon
from dplong.cli.parser import build_parser

__all__ = ["build_parser", "main"]
