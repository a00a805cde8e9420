"""Speed and memory of LongitudinalOLS on a Dask frame read from Parquet, against pandas in memory.

The panel (``users × 10`` rows, 3 regressors: ``y = 1 + x'β + u_user + e``, all standard normal,
rows grouped by user as in the usual long layout) is written to Parquet files of at most 10⁶
rows (at least 8 files), generated file by file so that the data never sit in memory whole.
Then, in a fresh process each (so that peak memory is the fit's own):

1. **Dask, end to end**::

       frame = dask.dataframe.read_parquet(DIRECTORY)
       dplong.LongitudinalOLS.from_formula("y ~ x1 + x2 + x3", frame, groups="user")
             .fit(epsilon=1.0, scale=1.0, random_state=0)

   with Dask's default local scheduler (threads, one per core): reading, evaluating the
   design per partition, the per-user sums and their group-by, the statistics and the release.
2. **pandas in memory** (up to ``--pandas-max-rows``): the same files read with
   ``pandas.read_parquet`` (timed apart, not counted), then the same fit on the DataFrame.

Reported: seconds (best of ``--repeats``; one run at 10⁸ rows), the peak resident memory of the
process (``ru_maxrss``: with threads the scheduler is the process), seconds per 10⁶ rows (the
scaling: constant if time is linear in rows) and the ratio Dask / pandas in memory measured in
the same run, the two alternating so that load changes hit both. Both releases are compared
(they must agree to round-off). Targets (issue 12): the 10⁸-row fit within 4 GB of resident
memory on a 2-core, 24 GB machine, time linear in rows from 10⁶ to 10⁸, and Dask within 3× of
pandas in memory at 10⁷ rows. The load average is printed: on a shared machine, run it when
quiet.

Usage::

    python benchmarks/speed_dask.py                       # 10⁶ ... 10⁸ rows (docs/speed.md)
    python benchmarks/speed_dask.py --rows 1000000 10000000 --repeats 3
    python benchmarks/speed_dask.py --quick               # smoke run: 10⁵ and 10⁶ rows
    python benchmarks/speed_dask.py --estimator within    # the within estimator instead

With ``--estimator within`` the fit is ``fit(estimator="within", ...)``, whose within cross
products a Dask frame reduces at the first within fit, in two more passes over the files (the
users' means, then the products of the deviations from them); the timing includes them. With
``--estimator pooled``, ``between``, ``panel`` or ``re`` the model is the pooled family's
(``PooledOLS``, ..., ``RandomEffects``) fitted given only ε with ``max_rows=10``: two passes
over the files (the persons' extremes, then their sums), four for ``panel``, five for ``re``.

The files go to ``--directory`` (default: a new directory in the system's temporary folder,
about 40 bytes per row: 4 GB at 10⁸ rows) and are deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

FORMULA = "y ~ x1 + x2 + x3"
ROWS_PER_USER = 10
MAX_FILE_ROWS = 1_000_000
MIN_FILES = 8
BETA = np.array([1.0, -1.0, 0.5])
DEFAULT_ROWS = (1_000_000, 3_000_000, 10_000_000, 30_000_000, 100_000_000)
QUICK_ROWS = (100_000, 1_000_000)
#: ``--estimator`` choices fitted by the pooled family's models, by class name
POOLED = {
    "pooled": "PooledOLS",
    "between": "BetweenOLS",
    "panel": "PanelOLS",
    "re": "RandomEffects",
}


def write_panel(rows: int, directory: Path, seed: int) -> int:
    """Write the panel as Parquet files, one at a time (unless a kept run wrote them with
    the same seed); return the number of files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    per_file = min(MAX_FILE_ROWS, rows // MIN_FILES)
    per_file -= per_file % ROWS_PER_USER  # whole users per file
    files = math.ceil(rows / per_file)
    done = directory / f"_complete-seed-{seed}"  # "_": not data, for Parquet readers
    if done.exists():
        return files
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        rng = np.random.default_rng([seed, i])
        first, last = i * per_file, min((i + 1) * per_file, rows)
        m = last - first
        user = np.repeat(np.arange(first, last, ROWS_PER_USER) // ROWS_PER_USER, ROWS_PER_USER)
        x = rng.standard_normal((m, BETA.size))
        effect = rng.standard_normal(m // ROWS_PER_USER).repeat(ROWS_PER_USER)
        y = 1.0 + x @ BETA + effect + rng.standard_normal(m)
        columns = {"user": user, "y": y} | {f"x{j + 1}": x[:, j] for j in range(BETA.size)}
        pq.write_table(pa.table(columns), directory / f"part-{i:05d}.parquet")
    done.touch()
    return files


def child(kind: str, directory: str, estimator: str) -> None:
    """One timed fit in this process; prints its seconds, peak memory and estimates as JSON."""
    import dplong

    read = 0.0
    if kind == "dask":
        import dask.dataframe as dd

        start = time.perf_counter()
        data: Any = dd.read_parquet(directory)
    else:
        import pandas as pd

        begin = time.perf_counter()
        data = pd.read_parquet(directory)
        read = time.perf_counter() - begin
        start = time.perf_counter()
    if estimator in POOLED:  # the pooled family: its ranges found privately, given only ε
        model = getattr(dplong, POOLED[estimator]).from_formula(FORMULA, data, groups="user")
        # BetweenOLS fits one row a person (their means): it takes no max_rows
        cap = {} if estimator == "between" else {"max_rows": ROWS_PER_USER}
        result = model.fit(epsilon=1.0, random_state=0, **cap)
    else:
        model = dplong.LongitudinalOLS.from_formula(FORMULA, data, groups="user")
        result = model.fit(epsilon=1.0, scale=1.0, estimator=estimator, random_state=0)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kilobytes
    print(
        json.dumps(
            {
                "seconds": seconds,
                "read": read,
                "peak_bytes": peak,
                "params": result.params.tolist(),
                "users": model.nobs_users,
            }
        )
    )


def run_child(kind: str, directory: Path, estimator: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(directory), estimator],
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def measure(rows: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    directory = root / f"rows-{rows}"
    start = time.perf_counter()
    files = write_panel(rows, directory, args.seed)
    print(f"  {rows:>11,d} rows: {files} files written in {time.perf_counter() - start:.0f} s")
    repeats = 1 if rows >= 100_000_000 else args.repeats
    with_pandas = rows <= args.pandas_max_rows
    found: dict[str, Any] = {"rows": rows, "files": files, "load": os.getloadavg()[0]}
    dask_runs, pandas_runs = [], []
    for _ in range(repeats):
        dask_runs.append(run_child("dask", directory, args.estimator))
        if with_pandas:
            pandas_runs.append(run_child("pandas", directory, args.estimator))
    best = min(dask_runs, key=lambda r: r["seconds"])
    found |= {
        "users": best["users"],
        "dask": best["seconds"],
        "dask_peak": max(r["peak_bytes"] for r in dask_runs),
    }
    if with_pandas:
        fastest = min(pandas_runs, key=lambda r: r["seconds"])
        found |= {
            "pandas": fastest["seconds"],
            "pandas_read": min(r["read"] for r in pandas_runs),
            "pandas_peak": max(r["peak_bytes"] for r in pandas_runs),
            "difference": float(np.max(np.abs(np.subtract(best["params"], fastest["params"])))),
        }
    if not args.keep:
        shutil.rmtree(directory)
    return found


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| rows | users | files | Dask (s) | Dask peak RSS (GB) | s per 10⁶ rows "
        "| pandas in memory (s) | pandas read (s) | pandas peak RSS (GB) | Dask / pandas |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        pandas = "pandas" in r
        lines.append(
            f"| {r['rows']:,d} | {r['users']:,d} | {r['files']} | {r['dask']:.2f} "
            f"| {r['dask_peak'] / 1e9:.2f} | {r['dask'] / r['rows'] * 1e6:.3f} | "
            + (
                f"{r['pandas']:.2f} | {r['pandas_read']:.2f} | {r['pandas_peak'] / 1e9:.2f} "
                f"| {r['dask'] / r['pandas']:.2f} |"
                if pandas
                else "not run | | | |"
            )
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=list(DEFAULT_ROWS))
    parser.add_argument("--quick", action="store_true", help="10⁵ and 10⁶ rows")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pandas-max-rows", type=int, default=10_000_000)
    parser.add_argument("--directory", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the Parquet files")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--estimator", choices=("per-user", "within", *POOLED), default="per-user")
    parser.add_argument(
        "--child", nargs=3, metavar=("KIND", "DIRECTORY", "ESTIMATOR"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    import dask
    import pandas as pd
    import pyarrow

    import dplong

    rows = QUICK_ROWS if args.quick else tuple(args.rows)
    root = args.directory or Path(tempfile.mkdtemp(prefix="dplong-speed-dask-"))
    print(f"dplong {dplong.__version__} on {platform.machine()}, {os.cpu_count()} cores")
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
        f"dask {dask.__version__}, pyarrow {pyarrow.__version__}"
    )
    print(f"started {dt.datetime.now():%Y-%m-%d %H:%M}, load {os.getloadavg()}")
    print(f"files in {root}; estimator {args.estimator}")
    results = [measure(size, args, root) for size in rows]
    if args.directory is None and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"finished {dt.datetime.now():%Y-%m-%d %H:%M}, load {os.getloadavg()}")
    print("1-minute load when each size started: " + ", ".join(f"{r['load']:.2f}" for r in results))
    print()
    print(table(results))
    for r in results:
        if "difference" in r:
            print(
                f"{r['rows']:,d} rows: largest |Dask - pandas| over the estimates "
                f"{r['difference']:.2e}"
            )


if __name__ == "__main__":
    main()
