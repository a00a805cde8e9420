"""Reading panel data from files with a schema that no row can change.

A file's rows must not decide how its columns are read: if one person's ``?`` in a column of
numbers made pandas read the whole column as text, that person alone would decide whether a
fit runs, and a Parquet file's stored categories would publish the levels its rows happen to
hold. :func:`read_data` (:func:`read_file`, then :func:`typed`) therefore reads every cell on its
own:

* the user-id column (``groups``) is kept as the file stores it, and read as text from a CSV
  file (``"01"`` and ``"1"`` are two users, whatever the other rows hold, and ``"NA"`` is
  one: in a CSV file only an empty cell is missing, not pandas' NA words); the data holder
  is told how many ids read alike as numbers or apart from spaces (``"7"``, ``"7.0"``,
  ``" 7"``), as a person written two ways would count as two users;
* the column that orders each user's rows (``time``) is kept when the file stores dates
  (Parquet); otherwise each cell is a number, or an ISO 8601 date as days since 1970-01-01,
  or else missing;
* a column with declared ``levels`` becomes a ``Categorical`` with exactly those levels; a
  cell matches a level when both read alike — the same text, the same number (``"2"``,
  ``2`` and ``2.0``) or the same truth value (``true``, ``True``) — and any other cell is
  missing;
* every other column becomes ``float64``: a number, or ``true``/``false`` as 1 and 0, and
  anything else (``?``, ``n.a.``, an empty cell, a text) is missing, as the formula layer
  treats odd values (:mod:`dplong.formula`).

A CSV file's rows are its lines, each read on its own (:func:`_read_csv`): a line break always
ends a row, a blank line is skipped, the first other line is the header, and a line with an
unclosed quote (a quote not paired on its line) or more fields than the header is left
out.

The same rules hold for a CSV file, one Parquet file (through pandas or Dask), a directory and
a glob of Parquet files, whatever the files' stored types are; the parts of a glob may store a
column with different types. A column read as numbers that held cells that are not numbers is
reported to the data holder by :func:`unread_cells`, never in a result.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import importlib
import io
import lzma
import math
import re
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from itertools import compress, filterfalse, repeat
from operator import contains, methodcaller
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong import datasets
from dplong._validation import not_columns, warn
from dplong.dask_frames import is_dask, require_dask
from dplong.exceptions import (
    DataError,
    DataHolderWarning,
    DplongError,
    MissingDependencyError,
    ParameterError,
)

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame

__all__ = [
    "as_levels",
    "as_numbers",
    "level_texts",
    "read_data",
    "read_failures",
    "read_file",
    "time_levels",
    "typed",
    "unread_cells",
]

DATASET_PREFIX = "dataset:"
SHIPPED = ", ".join(DATASET_PREFIX + name for name in datasets.DATASETS)
_PARQUET_SUFFIXES = (".parquet", ".pq")
#: Parquet read with pandas' nullable types: pyarrow reads a column of int64 with one null as
#: doubles, which merged user ids above 2**53 that differ in their last digits, so n (and
#: whether a fit ran) hung on one row's missing id (an audit). Every column but the ids is
#: read as numbers or declared levels anyway (:func:`typed`).
_NULLABLE: Literal["numpy_nullable"] = "numpy_nullable"

# the files of a directory that Dask reads (its read_parquet's parquet_file_extension)
_DASK_PARQUET_SUFFIXES = (".parq", ".parquet", ".pq")
# pandas reads these compressed CSVs directly
_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".csv.zst")
_TRUTH = {"true": 1.0, "false": 0.0}
#: A CSV file's line breaks, every one of them a row's end
_LINE_BREAK = re.compile(r"\r\n?")


def read_data(
    source: str,
    *,
    levels: Mapping[str, Sequence[str]] | None = None,
    groups: str | None = None,
    time: str | None = None,
) -> pd.DataFrame | DaskFrame:
    """Read a data file (or a shipped data set) with a schema fixed by the arguments.

    :func:`read_file` and then :func:`typed`.

    Parameters
    ----------
    source : str
        As :func:`read_file`.
    levels : mapping of str to sequence of str, optional
        Declared levels (as text) of the columns that are factors; the first is the reference.
    groups, time : str, optional
        The user-id column, kept as read (as text from a CSV file; ids that read alike as
        numbers or apart from spaces are told to the data holder), and the column that
        orders each user's rows, read cell by cell as a number or an ISO 8601 date (a stored
        date column is kept).

    Returns
    -------
    pandas.DataFrame or dask.dataframe.DataFrame
        Columns in ``levels`` are Categoricals with exactly the declared levels; the others
        but ``groups`` and ``time`` are ``float64``.

    Raises
    ------
    DataError, dplong.exceptions.ParameterError
        As :func:`read_file` and :func:`typed`.
    dplong.exceptions.MissingDependencyError
        For a directory or glob of Parquet files without dask.

    Notes
    -----
    A directory or glob of Parquet files is read as a Dask frame, lazily: a corrupt page is
    found only when a model computes the rows (building it or fitting it), and its error is
    then the reader's own. Build and fit the model inside :func:`read_failures` (``with
    read_failures(source): ...``) for the :class:`~dplong.exceptions.DataError` naming DATA
    that the command line gives.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from dplong.io import read_data
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "visits.csv"
    >>> _ = path.write_text("id,x,site\\n1,0.5,north\\n1,?,south\\n2,2,east\\n")
    >>> frame = read_data(str(path), levels={"site": ["north", "south"]}, groups="id")
    >>> frame["x"].tolist(), frame["site"].tolist(), frame["id"].tolist()
    ([0.5, nan, 2.0], ['north', 'south', nan], ['1', '1', '2'])
    """
    return typed(read_file(source, time=time), levels=levels, groups=groups, time=time)


def read_file(
    source: str,
    *,
    time: str | None = None,
    columns: Sequence[str] | Mapping[str, str] | None = None,
    required: Mapping[str, str] | None = None,
) -> pd.DataFrame | DaskFrame:
    """Read a data file, or a shipped data set, as stored: a CSV file's cells as text.

    Parameters
    ----------
    source : str
        ``dataset:NAME`` for a data set shipped with dplong (:mod:`dplong.datasets`), the
        path of a ``.csv`` (optionally compressed, e.g. ``.csv.gz``) or ``.parquet`` file, or
        a directory or glob (``"data/*.parquet"``) of Parquet files. Parquet needs pyarrow
        (``pip install "dplong[parquet]"``); a directory or glob needs dask
        (``pip install "dplong[dask]"``), which also reads a single Parquet file when it is
        installed.
    time : str, optional
        Accepted for the signature's symmetry with :func:`read_data`: a CSV file's cells are
        all read as text, the ``time`` column too (:func:`typed` reads them).
    columns : sequence of str, or mapping of str to str, optional
        Keep only these columns, in DATA's order (a CSV file is parsed whole, so that every
        row is judged by its own fields: :func:`_read_csv`; no column: the rows are counted,
        ``len(frame)``, and nothing else is kept). A column DATA lacks is refused, named by
        the mapping's value when one is given (the caller's own argument, e.g.
        ``{"id": "--groups"}``).
    required : mapping of str to str, optional
        Columns DATA must hold though they are not kept (checked against its header only),
        each named in a refusal by its value, after ``columns``: the planner's formula.

    Returns
    -------
    pandas.DataFrame or dask.dataframe.DataFrame
        A Dask frame for Parquet when dask is installed: the models reduce it where it lies
        (:mod:`dplong.dask_frames`).

    Raises
    ------
    DataError
        If the file is missing, unreadable or of an unknown kind, a directory or glob holds
        CSV files, the data set is unknown, DATA lacks one of ``columns``, its header (a CSV
        file's first line, a Parquet file's schema) names a column twice, or a CSV file's
        header does not parse on its own or no row below it does.
    dplong.exceptions.MissingDependencyError
        For a directory or glob of Parquet files without dask.

    Examples
    --------
    >>> from dplong.io import read_file
    >>> read_file("dataset:dietox")["Pig"].nunique()
    72
    >>> read_file("dataset:dietox", columns=["Pig"]).columns.tolist()
    ['Pig']
    >>> read_file("dataset:nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.DataError: unknown data set 'nope'; shipped: dataset:wage_panel, ...
    """
    if source.startswith(DATASET_PREFIX):
        name = source.removeprefix(DATASET_PREFIX)
        if name not in datasets.DATASETS:
            raise DataError(f"unknown data set {name!r}; shipped: {SHIPPED}")
        loader: Callable[[], pd.DataFrame] = getattr(datasets, f"load_{name}")
        return _only(loader(), columns, required)
    if source == "-":
        raise DataError(
            "DATA '-' (standard input) is not read: give the path of a file (./- for a file "
            "named -)"
        )
    path = Path(source)
    # a file whose name holds a glob's characters ("survey[1].csv") is that file
    if path.is_dir() or (not path.is_file() and any(char in source for char in "*?[")):
        if not path.is_dir() and not glob.glob(source):
            raise DataError(_matches_nothing(source))
        parts = _parts(source, path)
        _require_pyarrow()
        require_dask()  # a directory or glob of files is read through Dask only
        stored = {str(part): _parquet_names(part) for part in parts}
        for part, names in stored.items():  # named by the part: the file to mend
            _check_distinct(part, names or [])
        named = None if columns is None else _named(columns, required)
        frame = _held_by_every_part(source, _read_parquet(source), stored, named)
        return _only(frame, columns, required)
    if not path.is_file():
        raise DataError(f"DATA file {source!r} does not exist (or is not a file)")
    name = path.name.lower()
    try:
        if name.endswith(_PARQUET_SUFFIXES):
            _require_pyarrow()
            _check_distinct(source, _parquet_names(path) or [])
            try:
                return _only(_read_parquet(source), columns, required)
            except MissingDependencyError:  # one file fits pandas too
                whole = pd.read_parquet(path, "pyarrow", dtype_backend=_NULLABLE)
                return _only(whole, columns, required)
        if name.endswith(_CSV_SUFFIXES):
            return _only(_read_csv(path, source, columns, required), columns)
    except ImportError as err:  # a compression's module (zstandard for .csv.zst)
        if isinstance(err, MissingDependencyError):
            raise
        raise MissingDependencyError(f"cannot read DATA {source!r}: {err}") from None
    except (OSError, ValueError) as err:  # parse errors of pandas and pyarrow are ValueErrors
        if isinstance(err, DataError):
            raise
        raise DataError(f"cannot read DATA {source!r}: {err}") from None
    raise DataError(
        f"cannot tell the format of DATA {source!r}: use a .csv, .csv.gz or .parquet file, "
        f"a directory or glob of .parquet files, or {DATASET_PREFIX}NAME"
    )


def _read_csv(
    path: Path,
    source: str,
    columns: Collection[str] | Mapping[str, str] | None = None,
    required: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """A CSV file's rows below its header, every cell as text (of ``columns`` only, default
    all: :func:`read_file`'s), each line one row that its own text alone decides.

    A CSV record may span lines (a quoted cell holding a line break), so one line's unclosed
    quote swallowed the lines after it, other persons' among them (the header's too: its
    "column names" then held rows, which refusals listing the columns printed), and a record
    split by a Unicode line separator put one person's text into the next person's row (audits).
    Here a line break (``\\n``, ``\\r\\n`` or ``\\r``) always ends a row, and nothing else does; a
    blank line (nothing but whitespace, Unicode's included) is skipped; the first other line
    is the header, refused if it does not parse on its own; each line below it is a row of
    its fields (:func:`_rows`), a missing cell where it has fewer than the header. Bytes that
    are not UTF-8 are read as U+FFFD (a cell that is then no number is missing, as any odd
    cell). What was left out or replaced is told to the data holder only (a
    :class:`~dplong.exceptions.DataHolderWarning`: how many depends on the rows). Read for
    some columns only (the planner's count of users), the rows are those of the whole file;
    the ``required`` are checked against the header and not parsed."""
    lines = list(filterfalse(str.isspace, filter(None, _csv_text(path, source).split("\n"))))
    if not lines:
        raise DataError(f"DATA {source!r} is empty: it has no header line")
    fields = _fields(lines[0])
    if fields is None:
        raise DataError(
            f"cannot read DATA {source!r}: its header (first line) does not parse on its own "
            "as comma-separated column names (an unclosed quote?); a line break always ends a "
            "row, even in a quoted cell"
        )
    if any("\ufffd" in name for name in fields):  # a replaced byte: the name is not as written
        raise DataError(
            f"cannot read DATA {source!r}: its header is not UTF-8 text; save it as UTF-8"
        )
    header = [name or f"Unnamed: {k}" for k, name in enumerate(fields)]  # as pandas names them
    _check_distinct(source, header)
    _check_named(_named(columns, required), header)
    # only the named columns are parsed; with none, the first is read to count the rows
    wanted = None if columns is None else [c for c in header if c in columns] or header[:1]
    repeated = sum(line.strip() == lines[0].strip() for line in lines[1:])
    if repeated:  # joined files, each with its header: read as rows of text like any other
        one = repeated == 1
        _tell_data_holder(
            f"{repeated:,} line{'' if one else 's'} of DATA below its first repeat{'s' * one} "
            f"its header and {'is' if one else 'are'} read as {'a row' if one else 'rows'} (a "
            "user whose id is the column's name, its cells text); remove the repeated headers"
        )
    rows, left_out = _rows(lines[1:], len(header))
    if not rows:  # one refusal whether the lines are missing or left out: n = 0 either way
        raise DataError(
            f"DATA {source!r} has no rows: no line below its header parses on its own as a row "
            f"of its {len(header)} columns (one with more fields, a trailing comma's empty one "
            "among them, or with a quote not paired on the line is left out)"
        )
    if left_out:
        one = left_out == 1
        _tell_data_holder(
            f"{left_out:,} line{'' if one else 's'} of DATA {'does' if one else 'do'} not "
            f"parse on {'its' if one else 'their'} own as a row of its {len(header)} "
            f"columns (more fields than its header, or a quote not paired on the line) and "
            f"{'is' if one else 'are'} left out; a line break always ends a row, even in a "
            "quoted cell"
        )
    # the header line first, replaced by ``names``: pandas drops a byte order mark (U+FEFF)
    # that starts its text, which would otherwise be the first row's
    frame = pd.read_csv(
        io.StringIO("\n".join([_quoted(header), *rows])),
        header=0,
        names=header,
        usecols=wanted,
        dtype=dict.fromkeys(header if wanted is None else wanted, str),
        # an empty cell is missing, and only that: pandas' NA words ("NA", "None", "null",
        # "nan", ...) are text, a user's id or a declared level (North America), as stored
        keep_default_na=False,
        na_values=[""],
        index_col=False,
    )
    counts = frame.apply(lambda column: column.str.contains("\ufffd", regex=False)).sum()
    replaced = int(counts.sum())
    if replaced:
        one = replaced == 1
        columns = ", ".join(repr(c) for c in counts.index[counts > 0])
        _tell_data_holder(
            f"{replaced:,} cell{'' if one else 's'} of DATA ({columns}) "
            f"{'holds' if one else 'hold'} bytes that are not UTF-8 text, read as U+FFFD (a "
            "cell that is then not a number is missing, and two texts, ids too, that differ "
            "only there read alike); save the file as UTF-8"
        )
    return frame


def _csv_text(path: Path, source: str) -> str:
    """The text of a CSV file (DATA ``source``), decompressed as pandas infers from its name,
    bytes that are not UTF-8 as U+FFFD, without a byte order mark and with every line break
    (``\\r\\n``, ``\\r``) a ``\\n``."""
    from pandas.io.common import get_handle  # the compressions pandas infers for read_csv

    try:
        with get_handle(path, "r", encoding="utf-8", errors="replace", compression="infer") as f:
            text: str = f.handle.read()
    except (EOFError, OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as err:
        if isinstance(err, PermissionError):  # read_file says it, with the path alone
            raise
        # a compressed file cut short or corrupt: not in the decompressor's words, which may
        # hold data (gzip's checksum of the rows, the first bytes it found)
        raise DataError(
            f"cannot read DATA {source!r}: it could not be read to its end (a compressed file "
            "cut short or corrupt?); write it again"
        ) from None
    return _LINE_BREAK.sub("\n", text.removeprefix("\ufeff"))


def _rows(lines: list[str], width: int) -> tuple[list[str], int]:
    """The ``lines`` (none blank) that parse on their own as rows of at most ``width``
    fields, as text that pandas parses into those fields, and how many were left out.

    A line without a quote is its commas' fields (counted for every line at once: the file's
    bulk, kept as written); a line with one is parsed by :mod:`csv` (an unclosed quote is
    refused, and so is one whose quotes do not pair up) and written back with every field
    quoted, so pandas reads exactly its fields.
    Each line is judged by its own text alone: another line's quote changes nothing.

    Examples
    --------
    >>> from dplong.io import _rows
    >>> _rows(["1,2", '3,"a, b"', "4,5,", '6,"x', 'y",7'], width=2)
    (['1,2', '"3","a, b"'], 3)
    """
    quoted = np.fromiter(map(contains, lines, repeat('"')), bool, len(lines))
    commas = np.fromiter(map(methodcaller("count", ","), lines), np.intp, len(lines))
    kept = ~quoted & (commas < width)
    rows = list(lines)
    for k in np.flatnonzero(quoted):
        fields = _fields(lines[k])
        if fields is not None and len(fields) <= width:
            rows[k] = _quoted(fields)
            kept[k] = True
    return list(compress(rows, kept)), int(len(lines) - kept.sum())


def _quoted(fields: list[str]) -> str:
    """A line of ``fields``, each quoted: what pandas parses back into exactly them."""
    return ",".join('"' + field.replace('"', '""') + '"' for field in fields)


def _fields(line: str) -> list[str] | None:
    """The fields of one line of a CSV file, parsed on its own; None if it does not parse (an
    unclosed quote, which would otherwise run on into the next line), or if its quotes do not
    pair up: a quoted cell's line break leaves an odd number on each of its lines, and the
    second, closing one alone, parsed as a row of its own (its text the first field: a user
    no file holds; an audit). A field may be as long as its line: the :mod:`csv` module's
    limit (131,072 characters by default) refused a longer cell as if its quote were
    unclosed, so it is raised for that line (and restored)."""
    if line.count('"') % 2:
        return None
    limit = csv.field_size_limit()
    try:
        csv.field_size_limit(max(limit, len(line)))
        return next(csv.reader([line], strict=True))
    except csv.Error:
        return None
    finally:
        csv.field_size_limit(limit)


def _tell_data_holder(message: str) -> None:
    """A :class:`~dplong.exceptions.DataHolderWarning` about how DATA was read."""
    warn(
        f"{message} (on your screen only: dplong.exceptions.DataHolderWarning).", DataHolderWarning
    )


def _matches_nothing(source: str) -> str:
    """The refusal of a DATA with a glob's characters that names no file: a missing file when
    its name is a CSV or Parquet file's and holds no ``*`` (``survey[1].csv``: CSV files are
    never globbed), else a glob of Parquet files (``data/*.parquet``) that matches nothing."""
    name = Path(source).name.lower()
    if name.endswith(_CSV_SUFFIXES) or (name.endswith(_PARQUET_SUFFIXES) and "*" not in source):
        also = "" if name.endswith(_CSV_SUFFIXES) else "; read as a glob, it matches no file"
        return f"DATA file {source!r} does not exist (or is not a file){also}"
    return f"DATA {source!r} matches no file"


def _parts(source: str, path: Path) -> list[Path]:
    """The files Dask reads as Parquet of a directory (those named as Parquet files) or of a
    glob (every match). A glob that matches CSV files, or a directory with CSV files, is
    refused: Dask would say so in its own words, or, beside a directory's Parquet files,
    leave them unread without a word (their rows silently dropped)."""
    parquet: list[Path] = []  # a directory's files named as Parquet (Dask reads only those)
    if path.is_dir():
        files = [p for p in path.rglob("*") if p.is_file()]
        parquet = [p for p in files if p.name.endswith(_DASK_PARQUET_SUFFIXES)]
        _check_layout(source, path, files, parquet)
    else:  # ** as Dask expands it: any depth
        matched = [Path(found) for found in sorted(glob.glob(source, recursive=True))]
        folders = [p.name for p in matched if p.is_dir()]
        if folders:
            raise DataError(
                f"cannot read DATA {source!r}: the glob matches folders ({', '.join(folders[:3])}"
                f"{', ...' if len(folders) > 3 else ''}), whose files it would not read; give "
                "the folder, or a glob of files"
            )
        files = matched
        _check_hive(source, [p.parent.parts for p in files])
    csv = [p.name for p in files if p.name.lower().endswith(_CSV_SUFFIXES)]
    if csv:
        shown = ", ".join(csv[:3]) + (", ..." if len(csv) > 3 else "")
        what = "a directory is" if path.is_dir() else "a glob is"
        holds = "holds" if path.is_dir() else "matches"
        beside = " beside its Parquet files, whose rows alone would be read" if parquet else ""
        only = " only (move the CSV files out, or write them as Parquet)" if parquet else ""
        raise DataError(
            f"cannot read DATA {source!r}: {what} read as Parquet files (.parquet), and it "
            f"{holds} CSV files ({shown}){beside}; give one .csv file, or .parquet files{only}"
        )
    return parquet or files


def _check_layout(source: str, path: Path, files: list[Path], parquet: list[Path]) -> None:
    """Refuse a Parquet directory that Dask would read only in part, or with its values typed
    from every file's path. Dask reads the files named ``.parquet``, ``.parq`` or ``.pq``
    (case sensitive): beside them, a part written without the suffix (``part-00001``, as Spark
    and Hive name them) or as ``.PARQUET`` was left unread without a word (an audit). Its
    hive layout (``id=01/``) gives each row the value of a column its path names, typed from
    every path of the directory: two persons' ids ``01`` and ``1`` became one person's where
    another path read as text, and the read failed where none did (an audit). The
    directory's ``_metadata`` footer is not read (:func:`_read_parquet`)."""
    unnamed = [p.name for p in files if p not in parquet and _is_parquet(p)]
    if unnamed and parquet:  # none named so: Dask says it finds no Parquet file
        shown = ", ".join(unnamed[:3]) + (", ..." if len(unnamed) > 3 else "")
        raise DataError(
            f"cannot read DATA {source!r}: a directory is read as its files named .parquet, "
            f".parq or .pq, and it also holds Parquet files named otherwise ({shown}), whose "
            "rows would not be read; name every part .parquet"
        )
    _check_hive(source, [p.relative_to(path).parts[:-1] for p in parquet])
    # the writers' own markers (_SUCCESS, _metadata, .crc files) are no data; any other file
    # left unread is said (a .tsv beside the parts was passed over without a word, an audit)
    unread = sorted(
        p.name
        for p in files
        if p not in parquet and not p.name.startswith(("_", ".")) and p.name not in unnamed
    )
    if unread and parquet:
        shown = ", ".join(unread[:3]) + (", ..." if len(unread) > 3 else "")
        _tell_data_holder(
            f"DATA {source!r} is read as its Parquet files; its {len(unread):,} other "
            f"file(s) ({shown}) are not read"
        )


def _check_hive(source: str, folders: list[tuple[str, ...]]) -> None:
    """Refuse parts in a hive layout (folders ``key=value``): a reader types the value each row
    of a part takes from every folder's name (:func:`_check_layout`), in a directory or through
    a glob alike."""
    keyed = sorted({d.split("=", 1)[0] for parts in folders for d in parts if "=" in d})
    if keyed:
        raise DataError(
            f"cannot read DATA {source!r}: its folders name values of {keyed} (a hive layout, "
            "key=value), which a reader types from every folder's name, so one person's "
            "value would depend on the others'; write the columns into the files themselves"
        )


def _is_parquet(path: Path) -> bool:
    """Whether the file at ``path`` is a Parquet file by its first bytes (``PAR1``); a
    ``_metadata`` footer of the parts, which Dask is told not to read, is no part."""
    if path.name in ("_metadata", "_common_metadata"):
        return False
    try:
        with path.open("rb") as file:
            return file.read(4) == b"PAR1"
    except OSError:
        return False


def _parquet_names(path: Path) -> list[str] | None:
    """The column names a Parquet file stores (its footer only), or None when it cannot be
    read as Parquet: its reader then says why, in its own words."""
    parquet = importlib.import_module("pyarrow.parquet")
    try:
        return list(parquet.read_schema(path).names)
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        return None


def _held_by_every_part(
    source: str,
    frame: DaskFrame,
    stored: Mapping[str, list[str] | None],
    columns: Collection[str] | None,
) -> DaskFrame:
    """``frame`` (of the Parquet files of ``source``, each with the column names it
    ``stored``), refused if one of them lacks one of the columns read or required
    (``columns``, or when None ``frame``'s, those of the file Dask takes them from) that
    another holds: Dask fails in its own words, with a traceback, only when the rows are read
    (an audit). Where no columns are named, those some files hold beyond ``frame``'s are not
    read, and the data holder is told (a formula naming one said only that it is no column of
    DATA, an audit); a file with a column added later is no refusal."""
    held = {name for names in stored.values() for name in names or []}
    read = list(frame.columns) if columns is None else list(columns)
    for part, names in stored.items():
        lacking = [c for c in read if c in held and names is not None and c not in names]
        if lacking:
            raise DataError(
                f"cannot read DATA {source!r}: its file {part!r} has no column "
                f"{', '.join(map(repr, lacking))}, which another of its files holds; every file "
                "of a directory or glob must hold every column read"
            )
    unread = sorted(held - set(frame.columns)) if columns is None else []
    if unread:
        shown = ", ".join(map(repr, unread[:5])) + (", ..." if len(unread) > 5 else "")
        _tell_data_holder(
            f"DATA {source!r}: some of its files hold columns the others lack ({shown}); "
            "they are not read"
        )
    return frame


def _check_distinct(source: str, names: Collection[str]) -> None:
    """Refuse the file ``source`` whose header (``names``, as written) repeats a column name:
    the readers would rename the second (pandas, ``x.1``) or fail in their own words, while a
    frame's repeated names are refused by the models (:class:`~dplong.formula.DesignSpec`).
    Only the names are said, no cell."""
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise DataError(f"DATA {source!r} has several columns named {repeated}: rename them")


def _named(
    columns: Collection[str] | Mapping[str, str] | None, required: Mapping[str, str] | None
) -> dict[str, str]:
    """The columns DATA must hold, each with the argument a refusal names it by ("": none):
    the ``columns`` kept, then the ``required`` (:func:`read_file`)."""
    named = dict(columns) if isinstance(columns, Mapping) else dict.fromkeys(columns or (), "")
    for column, argument in (required or {}).items():
        named.setdefault(column, argument)
    return named


def _check_named(columns: Collection[str] | Mapping[str, str], header: Collection[Any]) -> None:
    """Refuse the first of ``columns`` that DATA (whose columns are ``header``) lacks."""
    for column in columns:
        if column not in header:
            named = columns.get(column, "") if isinstance(columns, Mapping) else ""
            raise DataError(not_columns(f"{named} {column!r}".lstrip(), [column], header, "DATA"))


def _only(
    frame: pd.DataFrame | DaskFrame,
    columns: Collection[str] | Mapping[str, str] | None,
    required: Mapping[str, str] | None = None,
) -> pd.DataFrame | DaskFrame:
    """``frame``'s ``columns`` (all of them when None), in its order; it must hold the
    ``required`` too (:func:`read_file`)."""
    _check_named(_named(columns, required), frame.columns)
    if columns is None:
        return frame
    return frame[[c for c in frame.columns if c in columns]]


def typed(
    frame: pd.DataFrame | DaskFrame,
    *,
    levels: Mapping[str, Sequence[str]] | None = None,
    groups: str | None = None,
    time: str | None = None,
) -> pd.DataFrame | DaskFrame:
    """``frame`` with every cell read on its own (module docstring); per partition for Dask.

    Parameters
    ----------
    frame : pandas.DataFrame or dask.dataframe.DataFrame
    levels, groups, time
        As :func:`read_data`.

    Returns
    -------
    pandas.DataFrame or dask.dataframe.DataFrame

    Raises
    ------
    DataError
        If a column named by ``levels``, ``groups`` or ``time`` is not in ``frame``.
    dplong.exceptions.ParameterError
        If two declared levels of a column read alike, or one reads as NaN.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.io import typed
    >>> frame = pd.DataFrame({"id": ["a", "b"], "x": ["1.5", "-"], "ok": [True, None]})
    >>> read = typed(frame, groups="id")
    >>> read["x"].tolist(), read["ok"].tolist(), read["id"].tolist()
    ([1.5, nan], [1.0, nan], ['a', 'b'])
    """
    declared = {column: level_texts(column, values) for column, values in (levels or {}).items()}
    keep = [] if groups is None else [groups]
    absent = [
        c for c in [*declared, *keep, *([] if time is None else [time])] if c not in frame.columns
    ]
    if absent:
        raise DataError(not_columns(", ".join(map(repr, absent)), absent, frame.columns, "DATA"))
    if is_dask(frame):
        meta = _convert(frame._meta, declared, keep, time)  # the partitions' common schema
        return frame.map_partitions(_convert, declared, keep, time, meta=meta)
    if groups is not None:
        _tell_alike_ids(frame[groups], groups)
    return _convert(frame, declared, keep, time)


#: Characters that show as nothing: a soft hyphen, zero-width spaces and joiners, direction
#: marks, a byte-order mark.
_INVISIBLE = "[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]"


def _tell_alike_ids(ids: pd.Series, column: str) -> None:
    """Tell the data holder (never a result) of user ids that differ as text but read alike as
    numbers, apart from surrounding spaces and invisible characters, or in one Unicode form
    (``"7"``, ``"7.0"``, ``" 7"``, ``"José"`` composed and decomposed): each is a user of
    its own, so a person whose rows carry two of them would count twice, at twice the budget.
    In memory only: over a Dask frame it would take a pass of its own (``dplong plan``, which
    has the distinct ids in hand, tells it of a Dask frame's too)."""
    distinct = pd.Series(ids.dropna().unique())
    if distinct.empty:
        return
    # one Unicode form (composed accents, full-width digits), no invisible characters (a
    # byte-order mark of joined files, a zero-width space) and no surrounding spaces
    text = (
        distinct.astype(str)
        .str.normalize("NFKC")
        .str.replace(_INVISIBLE, "", regex=True)
        .str.strip()
    )
    numbers = _parsed(text)  # as a cell of numbers reads them
    keys = pd.Series(np.where(np.isnan(numbers), text.to_numpy(), numbers.astype(str)))
    whole = np.isfinite(numbers) & (numbers == np.round(numbers)) & (np.abs(numbers) < 2.0**63)
    keys[whole] = numbers[whole].astype(np.int64).astype(str)  # '7.0' as '7'
    # an integer's digits as they are ('007' as '7'): ids above 2**53 that differ in their
    # last digits read alike as doubles, and were told as alike (an audit)
    digits = text.str.fullmatch(r"[+-]?\d+").to_numpy()
    keys[digits] = (
        text[digits]
        .str.replace(r"^\+", "", regex=True)
        .str.replace(r"^(-?)0+(?=\d)", r"\1", regex=True)
    ).replace("-0", "0")
    alike = int(keys.duplicated(keep=False).sum())
    if alike:
        _tell_data_holder(
            f"{alike:,} user ids of {column!r} read alike with another as numbers, apart from "
            "spaces or invisible characters, or in another Unicode form (as '7', '7.0', ' 7' "
            "and the full-width '７' do) but differ as text: each is a user of its own, so a "
            "person whose rows carry two of them counts as two users and gets twice the "
            "privacy budget; write each person's id one way"
        )


def as_numbers(values: pd.Series) -> pd.Series:
    """Each cell as a ``float64`` on its own: a number, ``true``/``false`` as 1 and 0, else NaN.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.io import as_numbers
    >>> as_numbers(pd.Series(["1.5", "?", " 2", "TRUE", None, "1e3"])).tolist()
    [1.5, nan, 2.0, 1.0, nan, 1000.0]
    """
    dtype = values.dtype
    numbers: NDArray[np.float64]
    if isinstance(dtype, pd.CategoricalDtype):
        categories = as_numbers(pd.Series(dtype.categories)).to_numpy(np.float64)
        numbers = np.append(categories, np.nan)[values.cat.codes.to_numpy()]  # -1 picks NaN
    elif pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
        try:
            numbers = values.to_numpy(np.float64, na_value=np.nan)
        except (TypeError, ValueError):  # e.g. an object column of booleans and None
            numbers = _parsed(values)
    else:
        numbers = _parsed(values)
    result: pd.Series = pd.Series(numbers, index=values.index, name=values.name)
    return result


def as_levels(values: pd.Series, levels: Sequence[str]) -> pd.Series:
    """Each cell as one of the declared ``levels`` when it reads alike (the same text, number
    or truth value), else missing: a Categorical with exactly the declared categories.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.io import as_levels
    >>> as_levels(pd.Series([2, 1, 3]), ["1", "2"]).tolist()
    ['2', '1', nan]
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    wanted = pd.Index([_key(level) for level in levels])
    found = wanted.get_indexer(pd.Index([_key(value) for value in uniques], dtype=object))
    picked = np.append(found, -1)[codes]  # code -1 (missing) picks -1
    categorical = pd.Categorical.from_codes(picked, dtype=pd.CategoricalDtype(list(levels)))
    result: pd.Series = pd.Series(categorical, index=values.index, name=values.name)
    return result


def unread_cells(raw: pd.DataFrame, read: pd.DataFrame, columns: Collection[str]) -> list[str]:
    """The ``columns`` of a pandas frame that held cells read as missing (not a number, or not
    a declared level): for a message to the data holder, never for a result.

    Examples
    --------
    >>> import pandas as pd
    >>> from dplong.io import as_numbers, unread_cells
    >>> raw = pd.DataFrame({"x": ["1", "?"], "y": ["2", None]})
    >>> unread_cells(raw, raw.apply(as_numbers), ["x", "y"])
    ['x']
    """
    return [
        c for c in columns if c in raw.columns and bool((raw[c].notna() & read[c].isna()).any())
    ]


def _convert(
    frame: pd.DataFrame, levels: Mapping[str, list[str]], keep: Collection[str], time: str | None
) -> pd.DataFrame:
    # a time column's declared periods (TimeEffects): numbers keep the column numeric (it
    # orders the rows as such); dates or text make it a factor of the declared periods, in
    # their order (a column stored as dates is read as its ISO 8601 text)
    timed = time is not None and (time not in levels or time_levels(levels[time]) is not None)
    columns = {
        c: frame[c]
        if c in keep
        else _as_times(frame[c])
        if c == time and timed
        else as_levels(_iso_dates(frame[c]), levels[c])
        if c in levels
        else as_numbers(frame[c])
        for c in frame.columns
    }
    result: pd.DataFrame = pd.DataFrame(columns, index=frame.index)
    return result


def time_levels(levels: Sequence[str]) -> list[float | int] | None:
    """Declared levels of the time column as numbers where every one reads as a number, so
    that a formula's factor of the periods (``TimeEffects``) matches the numeric column that
    orders the rows; None otherwise (dates or text: the column is then a factor of those
    levels, labelled and ordered as they are declared, a column stored as dates read as its
    ISO 8601 text).

    Examples
    --------
    >>> from dplong.io import time_levels
    >>> time_levels(["1980", "1981.5"]), time_levels(["2020-01-01"]), time_levels(["a", "b"])
    ([1980, 1981.5], None, None)
    """
    read = as_numbers(pd.Series(list(levels), dtype=object))
    if read.isna().any():
        return None
    # whole numbers as such: the dummies' labels read C(year)[T.1981], as in Python
    return [int(v) if float(v).is_integer() else float(v) for v in read]


def _iso_dates(values: pd.Series) -> pd.Series:
    """A column stored as dates as its ISO 8601 text, as declared levels are written: each
    stamp on its own, the date alone where its time is midnight (one person's stamps at noon
    had every person's dates written with their time, which no declared date matched: an
    audit); any other column as it is."""
    if not pd.api.types.is_datetime64_any_dtype(values.dtype):
        return values
    midnight = values == values.dt.normalize()
    stamped = values.map(lambda stamp: stamp.isoformat(), na_action="ignore")
    text = values.dt.strftime("%Y-%m-%d").where(midnight, stamped)
    iso: pd.Series = text.where(values.notna(), None)
    return iso


def _as_times(values: pd.Series) -> pd.Series:
    """A stored date column as it is; else each cell a number, or an ISO 8601 date as days
    since 1970-01-01 (so that no other row decides how a cell orders), or missing."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return values
    numbers = as_numbers(values)
    dates = numbers.isna() & values.notna()
    if dates.any():
        # format="ISO8601" parses every cell on its own (no format guessed from the others),
        # but pandas stores the parsed column in one unit, the finest its stamps ask for: one
        # person's nanosecond digits made it nanoseconds, where another's date after 2262 is
        # out of range (missing), and counting from 1970 in nanoseconds overflowed every row's
        # (a crash). So every cell is read to the microsecond (its further digits cut), a unit
        # that holds years 1 to 9999, and counted in it
        text = values[dates].astype(str).str.replace(r"(:\d\d\.\d{6})\d+", r"\1", regex=True)
        stamps = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True).dt.as_unit("us")
        epoch = pd.Timestamp(0, tz="UTC").as_unit("us")
        numbers[dates] = (stamps - epoch) / pd.Timedelta(days=1)
    return numbers


def _read_parquet(source: str) -> DaskFrame:
    """Parquet through Dask: the rows stay on disk until the model reduces them."""
    dd = require_dask()
    try:
        # its parts as the directory holds them, not as a _metadata footer once listed them
        # (a part added since was left unread, an audit)
        # a stored category of numbers, flags or dates read as its values, as pandas reads a
        # file: Dask's nullable types had none for them (NotImplementedError, an audit)
        frame: DaskFrame = dd.read_parquet(
            source, ignore_metadata_file=True, dtype_backend=_NULLABLE, categories=[]
        )
    except (OSError, ValueError, TypeError, NotImplementedError) as err:  # ArrowTypeError too
        # Dask wraps the reader's error in its own words ("An error occurred while calling
        # the read_parquet method registered to the pandas backend."): say the reader's
        causes = OSError | ValueError | TypeError | NotImplementedError
        cause = err.__cause__ if isinstance(err.__cause__, causes) else err
        raise DataError(f"cannot read DATA {source!r} as Parquet: {cause}") from None
    return frame


#: The deprecation that pandas (from 3.1) gives Dask's Parquet reader, whose partitions call
#: ``reset_index(inplace=True)`` (dask/dataframe/io/parquet/arrow.py): once per file read, and
#: a note to Dask's maintainers, not to the data holder. Silenced exactly by
#: :func:`quiet_parquet_reads`; any other warning still shows.
_READER_DEPRECATION = r"The inplace keyword in DataFrame\.reset_index is deprecated"


def ignore_reader_deprecation() -> None:
    """Ignore, in the current :func:`warnings.catch_warnings` context, the one deprecation
    warning that pandas gives Dask's Parquet reader (:func:`quiet_parquet_reads`).

    Examples
    --------
    >>> import warnings
    >>> from dplong.io import ignore_reader_deprecation
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     ignore_reader_deprecation()
    ...     warnings.warn("another warning")        # every other warning still shows
    >>> [str(w.message) for w in caught]
    ['another warning']
    """
    category = getattr(pd.errors, "Pandas4Warning", None)  # pandas >= 3.1 only
    if category is not None:
        warnings.filterwarnings(
            "ignore",
            message=_READER_DEPRECATION,
            category=category,
            module=r"dask\.dataframe\.io\.parquet",
        )


@contextlib.contextmanager
def quiet_parquet_reads() -> Iterator[None]:
    """A context in which Dask reads Parquet without the pandas deprecation warning its reader
    triggers (pandas >= 3.1) — that warning only, from that reader only. A Dask frame reads
    its files when it is computed: enter it around the computing, not just the call to
    :func:`read_file`. Inside a context that records every warning (``simplefilter("always")``)
    call :func:`ignore_reader_deprecation` after it.

    Examples
    --------
    >>> import warnings
    >>> from dplong.io import quiet_parquet_reads
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with quiet_parquet_reads():
    ...         warnings.warn("not the reader's")
    >>> len(caught)
    1
    """
    with warnings.catch_warnings():
        ignore_reader_deprecation()
        yield


@contextlib.contextmanager
def read_failures(source: str) -> Iterator[None]:
    """A context in which a Dask frame :func:`read_file` made of DATA ``source`` is computed:
    a failure of Dask's Parquet reader there (a corrupt page, which only reading the rows
    finds) is a :class:`~dplong.exceptions.DataError` naming DATA, not a traceback in the
    reader's words; any other error is left as it is.

    Examples
    --------
    >>> from dplong.io import read_failures
    >>> with read_failures("data/*.parquet"):
    ...     pass
    """
    try:
        yield
    except DplongError:
        raise
    except Exception as err:
        if not _raised_in_the_reader(err):
            raise
        raise DataError(
            f"cannot read DATA {source!r}: one of its Parquet files could not be read when its "
            f"rows were ({type(err).__name__} in the reader: a corrupt file?); write it again"
        ) from None


def _raised_in_the_reader(error: BaseException) -> bool:
    """Whether ``error`` came up through Dask's file readers (a frame of theirs in its
    traceback). An error of the work done on the rows once read (the task a reader's is fused
    with) carries none: the reader had returned."""
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_globals.get("__name__", "").startswith("dask.dataframe.io."):
            return True
        frame = frame.tb_next
    return False


def _require_pyarrow() -> None:
    try:
        importlib.import_module("pyarrow")
    except ImportError:
        raise DataError(
            'reading Parquet needs pyarrow; install it with: pip install "dplong[parquet]"'
        ) from None


def level_texts(column: str, values: Sequence[str], *, argument: str = "levels") -> list[str]:
    """The declared levels of ``column`` as text, refused unless each reads as its own level:
    distinct as text, numbers or truth values, and none a number that is not one (``nan``,
    ``NaN``: no two NaNs read alike, so no cell would match it and two passed as distinct).
    ``argument`` names the declaration in the refusal (``--levels`` on the command line).

    Examples
    --------
    >>> from dplong.io import level_texts
    >>> level_texts("site", ["north", 2])
    ['north', '2']
    >>> level_texts("visit", ["1", "1.0"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dplong.exceptions.ParameterError: levels visit: the levels must be distinct ...
    """
    texts = [str(v) for v in values]
    keys = [_key(t) for t in texts]
    if any(isinstance(key, float) and math.isnan(key) for key in keys):
        raise ParameterError(
            f"{argument} {column}: a level must not read as NaN, got {','.join(texts)}: a cell "
            "'nan' is a missing number, which no level matches"
        )
    if not texts or len(set(keys)) != len(keys):
        raise ParameterError(
            f"{argument} {column}: the levels must be distinct (as text, numbers or truth "
            f"values), got {','.join(texts)}"
        )
    return texts


def _key(value: Any) -> Any:
    """How a cell or a declared level reads: a truth value, a number, or its text."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | float | np.number):
        return float(value)
    text = str(value).strip()
    if text.lower() in _TRUTH:
        return text.lower() == "true"
    try:
        return float(text)
    except ValueError:
        return text


def _parsed(values: pd.Series) -> NDArray[np.float64]:
    """Text cells as numbers (pandas' vectorised parser), true/false as 1 and 0, else NaN."""
    text = values.astype(object).where(values.notna(), "").astype(str).str.strip()
    numbers: NDArray[np.float64] = pd.to_numeric(text, errors="coerce").to_numpy(
        np.float64, na_value=np.nan, copy=True
    )
    lower = text.str.lower()
    for word, number in _TRUTH.items():
        numbers[(lower == word).to_numpy()] = number
    return numbers
