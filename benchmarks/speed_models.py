"""Speed of the formula models against statsmodels, and of the per-user reduction, in one run.

Three measurements, each printed as a time ratio, on panels of ``users × 10`` rows
(10⁵, 10⁶ and 10⁷ rows by default; the rows come grouped by user, the usual long layout):

1. **OLS, formula to results**::

       dplong.LongitudinalOLS.from_formula("y ~ x1 + x2 + x3 + x4", df, groups="user")
             .fit(epsilon=1.0, scale=1.0, random_state=0)

   against ``statsmodels.formula.api.ols("y ~ x1 + x2 + x3 + x4", df).fit()`` on the same
   DataFrame (5 regressors with the intercept). Target: ``dplong / statsmodels <= 1`` at 10⁷
   rows. The time of ``patsy.dmatrices`` alone (which both spend) is shown for reference.
2. **Per-user reduction alone**: ``dplong.models.reduce.per_user_coefficients(y, X, codes, n)``
   on the design arrays (X'X, X'y and the solves of every user) against ONE
   ``np.bincount(codes, weights=y, minlength=n)`` pass over the outcome. Target: within 25×.
3. **Random-effects location**::

       dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user")
             .fit(epsilon=1.0, scale=1.0, within_scale=1.0, random_state=0)

   against ``statsmodels.formula.api.mixedlm("y ~ 1", df, groups=df["user"]).fit()``.
   MixedLM runs once per size, in a forked process stopped after ``--mixedlm-cap`` seconds,
   and only up to ``--mixedlm-max-rows`` (10⁶): a capped run is reported as a lower bound.
   Target: MixedLM at least 100× slower than dplong at 10⁶ rows.
4. **A plain user-level mean of 2,000 users**, ``dplong.winsorized_mean(x, epsilon=1.0)``
   given only ε, against the same call with the scale stated (``scale=1.0``): the cost of the
   stages that locate the data and of planning the budget. Every call gets a budget of its own
   (ε = 1 + k·10⁻⁹), so no plan is reused from an earlier call. Target: the default at most
   25 ms and at most 3× the stated one.

Timing: ``time.perf_counter``; one warm-up of every timed call on a small panel first; data
generated once per size; the best of k repetitions (k from ``--repeats``; fewer at 10⁷ rows),
dplong and its reference alternating within each repetition so that load changes hit both.
The load average of the machine is printed before and after: on a shared machine, run it when
quiet.

Usage::

    python benchmarks/speed_models.py                  # the table of docs/speed.md
    python benchmarks/speed_models.py --quick          # smoke run: 10⁴ and 10⁵ rows
    python benchmarks/speed_models.py --rows 1000000 --shuffled   # rows in random order
    python benchmarks/speed_models.py --means-only     # section 4 alone
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import multiprocessing as mp
import os
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import patsy
import scipy
import statsmodels
import statsmodels.formula.api as smf

import dplong
from dplong.models.reduce import per_user_coefficients

FORMULA = "y ~ x1 + x2 + x3 + x4"
ROWS_PER_USER = 10
DEFAULT_ROWS = (100_000, 1_000_000, 10_000_000)
QUICK_ROWS = (10_000, 100_000)
BETA = np.array([1.0, -1.0, 0.5, 2.0])


def make_panel(rows: int, seed: int, shuffled: bool = False) -> pd.DataFrame:
    """``rows / 10`` users × 10 rows: y = 1 + x'β + u_user + e, all standard normal."""
    rng = np.random.default_rng(seed)
    users = rows // ROWS_PER_USER
    user = np.repeat(np.arange(users), ROWS_PER_USER)
    x = rng.standard_normal((rows, 4))
    y = 1.0 + x @ BETA + rng.standard_normal(users)[user] + rng.standard_normal(rows)
    frame = pd.DataFrame({"user": user, "y": y})
    for j in range(4):
        frame[f"x{j + 1}"] = x[:, j]
    if shuffled:
        frame = frame.iloc[rng.permutation(rows)].reset_index(drop=True)
    out: pd.DataFrame = frame
    return out


def fit_dplong_ols(df: pd.DataFrame) -> Any:
    model = dplong.LongitudinalOLS.from_formula(FORMULA, df, groups="user")
    return model.fit(epsilon=1.0, scale=1.0, random_state=0)


def fit_statsmodels_ols(df: pd.DataFrame) -> Any:
    return smf.ols(FORMULA, df).fit()


def fit_dplong_location(df: pd.DataFrame) -> Any:
    model = dplong.RandomEffectsLocation.from_formula("y ~ 1", df, groups="user")
    return model.fit(epsilon=1.0, scale=1.0, within_scale=1.0, random_state=0)


def fit_mixedlm(df: pd.DataFrame) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter of MixedLM
        return smf.mixedlm("y ~ 1", df, groups=df["user"]).fit()


def design_matrices(df: pd.DataFrame) -> Any:
    return patsy.dmatrices(FORMULA, df, return_type="dataframe", NA_action="drop")


def seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_of(k: int, *fns: Callable[[], Any]) -> list[float]:
    """Best of k times of each function, the functions alternating within each repetition."""
    best = [math.inf] * len(fns)
    for _ in range(k):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], seconds(fn))
    return best


def _timed_child(fn: Callable[[pd.DataFrame], Any], df: pd.DataFrame, conn: Any) -> None:
    conn.send(seconds(lambda: fn(df)))
    conn.close()


def capped(fn: Callable[[pd.DataFrame], Any], df: pd.DataFrame, cap: float) -> float | None:
    """Time of ``fn(df)`` in a forked process (the data are shared, not copied); ``None``
    if it did not finish within ``cap`` seconds (the process is then stopped)."""
    context = mp.get_context("fork")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_timed_child, args=(fn, df, child))
    process.start()
    child.close()
    result = None
    if parent.poll(cap):
        try:
            result = parent.recv()
        except EOFError:  # the process died (e.g. out of memory): reported like a capped run
            result = None
    if process.is_alive():
        process.kill()
    process.join()
    return result


@dataclass
class Row:
    rows: int
    users: int
    values: dict[str, float | None] = field(default_factory=dict)


MEAN_USERS, MEAN_CALLS = 2_000, 50


def time_means(seed: int) -> tuple[float, float]:
    """Best time of one default and one stated-scale mean of :data:`MEAN_USERS` users (s),
    alternating, every call with a budget not seen before (no plan reused)."""
    x = np.random.default_rng(seed).normal(size=MEAN_USERS)
    best = [math.inf, math.inf]
    for k in range(MEAN_CALLS):
        epsilon = 1.0 + k * 1e-9
        for i, scale in enumerate(("estimate", 1.0)):
            start = time.perf_counter()
            dplong.winsorized_mean(x, epsilon=epsilon, scale=scale, random_state=k)
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0], best[1]


def report_means(default: float, stated: float) -> None:
    print(
        f"4. A user-level mean of {MEAN_USERS:,} users, best of {MEAN_CALLS} "
        "(ms; target default <= 25 and default/stated <= 3)"
    )
    print("| given only epsilon | scale stated | default / stated |")
    print("| ---: | ---: | ---: |")
    print(f"| {1e3 * default:.1f} | {1e3 * stated:.1f} | {default / stated:.2f} |")
    print()


def time_reduction(df: pd.DataFrame, k: int) -> list[float]:
    """Best of k of the per-user reduction and of one bincount pass, on the design arrays."""
    design = dplong.LongitudinalOLS.from_formula(FORMULA, df, groups="user")._design
    y, X, codes, n = design.y, design.X, design.codes, design.n
    return best_of(
        k,
        lambda: per_user_coefficients(y, X, codes, n),
        lambda: np.bincount(codes, weights=y, minlength=n),
    )


def repeats_for(rows: int, repeats: int) -> int:
    return max(1, repeats - 1) if rows >= 10_000_000 else repeats


def measure(rows: int, args: argparse.Namespace) -> Row:
    df = make_panel(rows, args.seed, args.shuffled)
    out = Row(rows, rows // ROWS_PER_USER)
    out.values["load"] = os.getloadavg()[0]
    k = repeats_for(rows, args.repeats)
    print(f"  {rows:>10,d} rows: OLS ...", flush=True)
    out.values["patsy"] = best_of(k, lambda: design_matrices(df))[0]
    out.values["ols_dplong"], out.values["ols_sm"] = best_of(
        k, lambda: fit_dplong_ols(df), lambda: fit_statsmodels_ols(df)
    )
    print(f"  {rows:>10,d} rows: reduction ...", flush=True)
    out.values["reduce"], out.values["bincount"] = time_reduction(df, max(k, 5))
    print(f"  {rows:>10,d} rows: location ...", flush=True)
    out.values["loc_dplong"] = best_of(k, lambda: fit_dplong_location(df))[0]
    if rows <= args.mixedlm_max_rows:
        print(f"  {rows:>10,d} rows: MixedLM ...", flush=True)
        times = []
        for _ in range(args.mixedlm_repeats):
            elapsed = capped(fit_mixedlm, df, args.mixedlm_cap)
            if elapsed is None:
                break
            times.append(elapsed)
        out.values["mixedlm"] = min(times) if len(times) == args.mixedlm_repeats else None
        out.values["mixedlm_capped"] = 0.0 if len(times) == args.mixedlm_repeats else 1.0
    return out


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def ratio(a: float | None, b: float | None, digits: int = 2) -> str:
    if a is None or b is None:
        return "—"
    return f"{a / b:.{digits}f}"


def report(rows: list[Row], args: argparse.Namespace, load_before: str, load_after: str) -> None:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    def table(header: list[str], body: list[list[str]]) -> None:
        print(line(header))
        print(line(["---:"] * len(header)))
        for cells in body:
            print(line(cells))
        print()

    print()
    print(f"Date: {dt.datetime.now().isoformat(timespec='minutes')}")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores; Python "
        f"{platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
        f"scipy {scipy.__version__}, patsy {patsy.__version__}, "
        f"statsmodels {statsmodels.__version__}, dplong {dplong.__version__}"
    )
    print(f"Load average (1, 5, 15 min): before {load_before}; after {load_after}")
    starts = ", ".join(f"{r.rows:,} rows {r.values['load']:.2f}" for r in rows)
    print(f"Load average (1 min) as each size started: {starts}")
    print(
        f"Rows {'shuffled' if args.shuffled else 'grouped by user'}; best of "
        f"{args.repeats} ({repeats_for(10**7, args.repeats)} at 10^7 rows; reduction at least 5); "
        f"MixedLM {args.mixedlm_repeats} run(s), capped at {args.mixedlm_cap:g} s"
    )
    print()
    print("1. OLS, formula to results (seconds; target dplong/statsmodels <= 1 at 10^7 rows)")
    table(
        ["rows", "users", "patsy dmatrices", "dplong", "statsmodels", "dplong / statsmodels"],
        [
            [
                f"{r.rows:,}",
                f"{r.users:,}",
                fmt(r.values["patsy"]),
                fmt(r.values["ols_dplong"]),
                fmt(r.values["ols_sm"]),
                ratio(r.values["ols_dplong"], r.values["ols_sm"]),
            ]
            for r in rows
        ],
    )
    print("2. Per-user reduction alone (seconds; target reduction/bincount <= 25)")
    table(
        ["rows", "users", "per_user_coefficients", "np.bincount", "reduction / bincount"],
        [
            [
                f"{r.rows:,}",
                f"{r.users:,}",
                fmt(r.values["reduce"], 4),
                fmt(r.values["bincount"], 4),
                ratio(r.values["reduce"], r.values["bincount"], 1),
            ]
            for r in rows
        ],
    )
    print("3. Random-effects location (seconds; target MixedLM/dplong >= 100 at 10^6 rows)")
    body = []
    for r in rows:
        mixed = r.values.get("mixedlm")
        capped_run = r.values.get("mixedlm_capped") == 1.0
        if "mixedlm" not in r.values:
            mixed_cell, speedup = "not run", "—"
        elif capped_run:
            mixed_cell = f"> {args.mixedlm_cap:g} (capped)"
            speedup = "> " + ratio(args.mixedlm_cap, r.values["loc_dplong"], 0)
        else:
            mixed_cell, speedup = fmt(mixed, 2), ratio(mixed, r.values["loc_dplong"], 0)
        body.append(
            [f"{r.rows:,}", f"{r.users:,}", fmt(r.values["loc_dplong"]), mixed_cell, speedup]
        )
    table(["rows", "users", "dplong", "MixedLM", "MixedLM / dplong"], body)


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run(args: argparse.Namespace) -> None:
    if args.means_only:
        time_means(args.seed)  # warm-up
        report_means(*time_means(args.seed))
        return
    sizes = tuple(args.rows) if args.rows else (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    load_before = load_average()
    print(f"load average before: {load_before}; warm-up ...", flush=True)
    small = make_panel(10_000, args.seed)
    for fn in (fit_dplong_ols, fit_statsmodels_ols, fit_dplong_location, design_matrices):
        fn(small)
    design = dplong.LongitudinalOLS.from_formula(FORMULA, small, groups="user")._design
    per_user_coefficients(design.y, design.X, design.codes, design.n)
    fit_mixedlm(small)
    rows = [measure(size, args) for size in sizes]
    time_means(args.seed)  # warm-up
    means = time_means(args.seed)
    report(rows, args, load_before, load_average())
    report_means(*means)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", help="panel sizes in rows (users x 10)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: rows in {QUICK_ROWS}")
    parser.add_argument("--repeats", type=int, default=3, help="best of k (default 3)")
    parser.add_argument(
        "--mixedlm-max-rows", type=int, default=1_000_000, help="largest panel for MixedLM"
    )
    parser.add_argument(
        "--mixedlm-cap", type=float, default=1800.0, help="seconds before MixedLM is stopped"
    )
    parser.add_argument("--mixedlm-repeats", type=int, default=1, help="MixedLM runs per size")
    parser.add_argument("--shuffled", action="store_true", help="rows in random order")
    parser.add_argument("--seed", type=int, default=20240601, help="data seed")
    parser.add_argument("--means-only", action="store_true", help="section 4 alone")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
