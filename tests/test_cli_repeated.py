"""Repeated input on the command line: an option given twice, and a DATA header that names a
column twice, are refused before anything is read or spent (argparse and pandas would keep
the last value, or rename the second column ``x.1``, without a word)."""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import pandas as pd
import pytest
from test_cli import run  # main() in-process: exit code, stdout, stderr

from dplong.cli import build_parser
from dplong.exceptions import DataError
from dplong.io import read_file

#: Each subcommand's arguments without an error of their own, DATA a file that does not exist:
#: a repeated option is refused before DATA is read.
BASE = {
    "fit": ["fit", "missing.csv", "--model", "mean", "--formula", "y ~ 1", "--groups", "id"],
    "plan": ["plan", "missing.csv", "--model", "mean", "--formula", "y ~ 1", "--groups", "id"],
}
#: A value for each option that its own reader accepts (the first of these that it takes).
TEXTS = ("1", "2", "0.5", "0,1", "x")


def _subcommand(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = commands.choices[name]
    return found


def _accepted(action: argparse.Action) -> list[str]:
    """The option's text given once: nothing for a flag, else a value its reader accepts."""
    if action.nargs == 0:
        return []
    if action.choices is not None:
        return [str(next(iter(action.choices)))]
    for text in TEXTS:
        try:
            action.type(text) if callable(action.type) else text
        except (argparse.ArgumentTypeError, ValueError):
            continue
        return [text]
    raise AssertionError(f"no value in {TEXTS} for {action.option_strings}")


#: Every option of every subcommand but --help and the repeatable --levels (one a column).
OPTIONS = [
    (command, action.option_strings[0], _accepted(action))
    for command in BASE
    for action in _subcommand(command)._actions
    if action.option_strings and action.dest != "help" and action.option_strings != ["--levels"]
]


@pytest.mark.parametrize(("command", "flag", "value"), OPTIONS)
def test_an_option_given_twice_is_refused_before_reading(
    command: str, flag: str, value: list[str]
) -> None:
    code, out, err = run([*BASE[command], flag, *value, flag, *value])
    assert code == 2 and out == ""
    assert err == f"dplong: error: {flag} is given twice (see dplong {command} --help)\n"


def test_the_last_epsilon_is_not_spent() -> None:
    argv = ["fit", "dataset:dietox", "--model", "mean", "--formula", "Weight ~ 1"]
    argv += ["--groups", "Pig", "--scale", "400", "--seed", "1", "--quiet"]
    code, out, err = run([*argv, "--epsilon", "4", "--epsilon", "0.5"])
    assert (code, out) == (2, "") and "--epsilon is given twice" in err
    code, out, err = run([*argv, "--epsilon=4", "--epsilon=0.5"])  # spelt with "="
    assert (code, out) == (2, "") and "--epsilon is given twice" in err


def test_levels_alone_may_be_repeated() -> None:
    """--levels, one a column, is the one option given several times (a column twice is
    refused when read: tests/test_cli.py); every other is in :data:`OPTIONS`."""
    flags = {flag for _, flag, _ in OPTIONS}
    assert {"--epsilon", "--model", "--formula", "--groups", "--seed", "--bounds"} <= flags
    assert {"--quiet", "--by-constant", "--n", "--rows", "--target-sd"} <= flags
    argv = [*BASE["fit"], "--epsilon", "1", "--levels", "a=1,2", "--levels", "b=x,y"]
    assert build_parser().parse_args(argv).levels == [("a", ["1", "2"]), ("b", ["x", "y"])]
    code, _, err = run([*argv, "--groups", "id"])
    assert code == 2 and "--groups is given twice" in err


# -- a header that names a column twice ---------------------------------------------------

#: Distinctive cells: none may appear in a refusal.
ROWS = "1,0.123456789,3.25,7.5\n1,0.987654321,4.25,8.5\n2,0.555555555,5.25,9.5\n"
FIT = ["--model", "ols", "--formula", "y ~ x", "--groups", "id", "--epsilon", "4", "--quiet"]


def _refused(source: str, file: str, command: str = "fit") -> None:
    argv = [command, source, *FIT]
    if command == "plan":
        argv.remove("--quiet")
    code, out, err = run(argv)
    assert (code, out) == (2, ""), err
    assert err == f"dplong: error: DATA {file!r} has several columns named ['x']: rename them\n"
    assert not any(cell in err for cell in ("0.123", "3.25", "7.5"))


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
@pytest.mark.parametrize("command", ["fit", "plan"])
def test_a_csv_header_naming_a_column_twice(tmp_path: Path, suffix: str, command: str) -> None:
    path = tmp_path / f"panel{suffix}"
    text = "id,y,x,x\n" + ROWS
    if suffix == ".csv":
        path.write_text(text)
    else:
        path.write_bytes(gzip.compress(text.encode()))
    _refused(str(path), str(path), command)
    with pytest.raises(DataError, match=r"several columns named \['x'\]"):
        read_file(str(path))


def _parquet_with_two_x(path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    columns = [[1, 1, 2], [0.123456789, 0.987654321, 0.555555555], [3.25, 4.25, 5.25]]
    table = pa.table([*columns, [7.5, 8.5, 9.5]], names=["id", "y", "x", "x"])
    parquet.write_table(table, path)  # pandas refuses to write such a file; pyarrow does not


def test_a_parquet_file_naming_a_column_twice(tmp_path: Path) -> None:
    path = tmp_path / "panel.parquet"
    _parquet_with_two_x(path)
    _refused(str(path), str(path))


@pytest.mark.parametrize("kind", ["directory", "glob"])
def test_a_later_parquet_part_naming_a_column_twice(tmp_path: Path, kind: str) -> None:
    """Dask reads the first part's schema: a later part's repeated name had raised a traceback
    when the fit computed."""
    pytest.importorskip("dask.dataframe")
    folder = tmp_path / "parts"
    folder.mkdir()
    first = pd.DataFrame({"id": [3, 4], "y": [1.0, 2.0], "x": [1.0, 2.0]})
    first.to_parquet(folder / "a.parquet", index=False)
    _parquet_with_two_x(folder / "b.parquet")
    source = str(folder) if kind == "directory" else str(folder / "*.parquet")
    _refused(source, str(folder / "b.parquet"))
