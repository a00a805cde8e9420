"""Accuracy of the user-level private mean: MSE(private) / MSE(non-private).

For every cell of the grid n ∈ {10³, 10⁴, 10⁵} users, T ∈ {1, 10} rows per user,
ε ∈ {0.1, 1}, δ = 1/n² and two within-user correlations (i.i.d. rows; Toeplitz
Σ_ts = 0.95^|t−s| with unit variances; users independent) this script draws R data sets with
true mean μ = 100 and reports, measured on the *same* data sets (common random numbers):

* ``theory``   — ``dplong.winsorized_mean(..., variant="theory")``: the paper's Alg 3–4
  (bins of half-width τ, interval m̂ ± 3τ, ε split ½ / ½);
* ``improved`` — the package default (``variant="improved"``: bins of half-width τ',
  interval m̂ ± (τ + 2τ') (§7.1.2), adaptive midpoint share :func:`default_midpoint_share`,
  and the refinement stage that re-centres the final interval at a rough private mean);
* ``oracle``   — clipping around the TRUE mean with the whole ε, the limit of this estimator
  family: ``μ + (1/n) Σ clip(x_u − μ, ±τ) + noise`` with the package's own lattice Laplace
  (:func:`dplong.privacy.noise.release_bounded_sum`) and τ from
  :func:`dplong.privacy.radius.concentration_radius`;

each as the ratio of its MSE to the MSE of the non-private mean of user means, with a
delta-method standard error (paired: both MSEs come from the same replications), the ratio
``improved / oracle``, and the rate at which the stable histogram found no bin
(``result.failed``). ``scale`` is the true variance of one user's mean: ``1/T`` for i.i.d.
rows and ``1ᵀΣ1/T²`` for Toeplitz rows.

Per-user means are drawn from their exact law N(μ, var_user_mean) (exact for Gaussian rows).
One cell is also run through the raw-rows path (``values=rows, groups=user_ids``, rows
simulated as a stationary AR(1), whose covariance is exactly the Toeplitz one) as a check that
both paths give the same numbers.

``--shares`` adds a study of the split of each ε between the midpoint histogram and the noise:
fixed shares {0.75, 0.5, 0.25, 0.1, 0.05}, the adaptive default, and the adaptive rule without
its 0.05 floor, for ``variant="improved"`` on the same grid and the same data sets; then a
probe of the rule's cap (μ moved through its histogram bin where the cap binds; the cap was
½ when measured and is ¾ since) and of
its floor (values more spread out than ``scale`` says).

Cells whose stable histogram cannot succeed raise ``InsufficientUsersError`` before spending
any budget; they are printed as ``infeasible``.

Usage::

    python benchmarks/accuracy_mean.py              # the table of docs/accuracy.md
    python benchmarks/accuracy_mean.py --shares     # plus the midpoint-share study
    python benchmarks/accuracy_mean.py --quick      # smoke run: n ≤ 10⁴, few replications
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import hashlib
import math
import os
import platform
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

import dplong
from dplong.exceptions import DplongWarning, InsufficientUsersError
from dplong.privacy.histogram import stable_histogram_threshold
from dplong.privacy.noise import release_bounded_sum
from dplong.privacy.radius import bin_radius, concentration_radius
from dplong.privacy.winsorized import MIN_MIDPOINT_SHARE, default_midpoint_share

MU = 100.0
RHO = 0.95
NS = (1_000, 10_000, 100_000)
QUICK_NS = (1_000, 10_000)
TS = (1, 10)
EPSILONS = (0.1, 1.0)
CORRELATIONS = ("iid", "toeplitz")
#: The issue's fixed shares, plus 0.75 to probe the adaptive rule's cap at 1/2.
FIXED_SHARES = (0.75, 0.5, 0.25, 0.1, 0.05)
DEFAULT_REPS = 4_000
QUICK_REPS = 300
CHUNK = 500
#: The cell also run through the raw-rows path (n, T, ε, correlation): the issue's target cell.
RAW_CELL = (10_000, 10, 1.0, "toeplitz")
MAIN_ESTIMATORS = ("theory", "improved", "oracle")
#: Probe of the share's cap: the one grid cell where the adaptive share hits ½, with μ moved
#: through its histogram bin (position 0 = bin centre, 1 = bin edge).
CAP_PROBE = (1_000, 0.1)
CAP_POSITIONS = (0.0, 0.5, 0.75, 0.9, 1.0)
CAP_SHARES = (0.5, 0.75)
CAP_REPS = 1_000
#: Probe of the share's floor: data k times more spread out than ``scale`` says, at the cells
#: where the floor binds; μ at a bin centre and at a bin edge.
FLOOR_PROBE = ((10_000, 1.0), (100_000, 0.1), (100_000, 1.0))
FLOOR_SPREADS = (1, 4, 8, 12)
FLOOR_REPS = 200
NO_FLOOR = "adaptive, no floor"
FloatArray = NDArray[np.float64]
K = TypeVar("K")


@dataclass(frozen=True)
class Cell:
    """One grid point."""

    n: int
    T: int
    epsilon: float
    correlation: str

    @property
    def delta(self) -> float:
        return 1.0 / self.n**2

    @property
    def var_user_mean(self) -> float:
        return user_mean_variance(self.T, self.correlation)

    def label(self) -> str:
        return f"{self.n:>6d} {self.T:>3d} {self.epsilon:>4g} {self.correlation:<8s}"


def user_mean_variance(T: int, correlation: str) -> float:
    """Variance of the mean of one user's T rows: 1/T (i.i.d.) or 1ᵀΣ1/T² (Toeplitz)."""
    if correlation == "iid":
        return 1.0 / T
    lags = np.abs(np.subtract.outer(np.arange(T), np.arange(T)))
    return float((RHO**lags).sum()) / T**2


def bin_position(cell: Cell, variant: str) -> float:
    """Where μ sits in its histogram bin: (μ − bin centre) / half-width, in [−1, 1].

    Near ±1 the users split between two bins and the midpoint is hardest to find.
    """
    v = cell.var_user_mean
    h = float(bin_radius(v) if variant == "improved" else concentration_radius(v, cell.n))
    return (MU - 2.0 * h * round(MU / (2.0 * h))) / h


def threshold(cell: Cell, share: float | None = None) -> float:
    """Share of the n users a bin needs to survive the stable histogram (both variants)."""
    if share is None:
        share = default_midpoint_share(cell.n, cell.epsilon, cell.delta)
    return stable_histogram_threshold(cell.n, share * cell.epsilon, cell.delta)


def share_name(share: float) -> str:
    return f"share={share:.2f}"


def share_estimators() -> tuple[str, ...]:
    return (*(share_name(s) for s in FIXED_SHARES), "adaptive", NO_FLOOR)


def adaptive_share(n: int, epsilon: float, delta: float, floor: float) -> float:
    """The rule of :func:`default_midpoint_share` with a different floor (0 = no floor)."""
    room = n / 4.0 - 1.0
    if room <= 0:
        return 0.5
    return float(min(max(2.0 * math.log(2.0 / delta) / room / epsilon, floor), 0.5))


def grid(ns: tuple[int, ...]) -> list[Cell]:
    return [Cell(n, T, e, c) for n in ns for T in TS for e in EPSILONS for c in CORRELATIONS]


@dataclass
class Result:
    """Squared errors (one per replication) of every estimator of one cell.

    ``errors[name]`` is ``None`` for an infeasible estimator; ``failed[name]`` flags the
    replications whose histogram found no bin.
    """

    errors: dict[str, FloatArray | None]
    failed: dict[str, NDArray[np.bool_]]

    @staticmethod
    def merge(parts: list[Result]) -> Result:
        errors: dict[str, FloatArray | None] = {}
        failed: dict[str, NDArray[np.bool_]] = {}
        for name in parts[0].errors:
            pieces = [p.errors[name] for p in parts]
            if any(x is None for x in pieces):
                errors[name] = None
                continue
            errors[name] = np.concatenate([x for x in pieces if x is not None])
            if name in parts[0].failed:
                failed[name] = np.concatenate([p.failed[name] for p in parts])
        return Result(errors, failed)


def private_mean(
    means: FloatArray, cell: Cell, rng: np.random.Generator, variant: str, share: float | None
) -> tuple[float, bool]:
    res = dplong.winsorized_mean(
        means,
        epsilon=cell.epsilon,
        delta=cell.delta,
        scale=cell.var_user_mean,
        variant=variant,
        midpoint_share=share,
        random_state=rng,
    )
    return float(res.estimate), bool(res.failed)


def oracle_mean(means: FloatArray, cell: Cell, rng: np.random.Generator) -> float:
    """Clip around the true mean, whole ε on the package's lattice Laplace noise."""
    tau = float(concentration_radius(cell.var_user_mean, cell.n))
    clipped = np.clip(means - MU, -tau, tau)[:, None]
    release = release_bounded_sum(clipped, np.array([tau]), np.array([cell.epsilon]), rng)
    return MU + float(release.total[0]) / cell.n


def simulate(cell: Cell, reps: int, seed: tuple[int, ...], shares: bool) -> Result:
    """``reps`` replications of one cell from per-user means drawn from their exact law.

    The data and the main estimators use one random stream, the share study another, so the
    main table does not depend on ``--shares``.
    """
    rng, rng_shares = (
        np.random.default_rng(s)
        for s in np.random.SeedSequence(seed[0], spawn_key=seed[1:]).spawn(2)
    )
    # name -> (variant, midpoint share or None for the package default, random stream)
    private: dict[str, tuple[str, float | None, np.random.Generator]] = {
        "theory": ("theory", None, rng),
        "improved": ("improved", None, rng),
    }
    if shares:
        private.update({share_name(s): ("improved", s, rng_shares) for s in FIXED_SHARES})
        no_floor = adaptive_share(cell.n, cell.epsilon, cell.delta, floor=0.0)
        private[NO_FLOOR] = ("improved", no_floor, rng_shares)
    names = ["nonprivate", *private, "oracle"]
    errors: dict[str, FloatArray | None] = {k: np.empty(reps) for k in names}
    failed = {k: np.zeros(reps, dtype=bool) for k in private}
    sd = math.sqrt(cell.var_user_mean)
    for r in range(reps):
        means = rng.normal(MU, sd, size=cell.n)
        for name, (variant, share, stream) in private.items():
            err = errors[name]
            if err is None:
                continue
            try:
                estimate, failed[name][r] = private_mean(means, cell, stream, variant, share)
            except InsufficientUsersError:
                errors[name] = None
                continue
            err[r] = (estimate - MU) ** 2
        oracle = oracle_mean(means, cell, rng)
        for name, value in (("nonprivate", float(means.mean())), ("oracle", oracle)):
            err = errors[name]
            assert err is not None
            err[r] = (value - MU) ** 2
    if shares:
        errors["adaptive"], failed["adaptive"] = errors["improved"], failed["improved"]
    return Result(errors, failed)


def probe(
    n: int,
    epsilon: float,
    spread: float,
    position: float,
    shares: dict[str, float | None],
    reps: int,
    seed: tuple[int, ...],
) -> Result:
    """``variant="improved"`` with the given shares on n i.i.d. N(μ', spread²) user values
    released with ``scale=1``; μ' is near μ at ``position`` within its histogram bin."""
    rng = np.random.default_rng(np.random.SeedSequence(seed[0], spawn_key=seed[1:]))
    cell = Cell(n, 1, epsilon, "iid")
    h = float(bin_radius(1.0))
    mu = 2.0 * h * round(MU / (2.0 * h)) + position * h
    errors: dict[str, FloatArray | None] = {k: np.empty(reps) for k in ("nonprivate", *shares)}
    failed = {k: np.zeros(reps, dtype=bool) for k in shares}
    for r in range(reps):
        values = rng.normal(mu, spread, size=n)
        for name, share in shares.items():
            estimate, failed[name][r] = private_mean(values, cell, rng, "improved", share)
            err = errors[name]
            assert err is not None
            err[r] = (estimate - mu) ** 2
        base = errors["nonprivate"]
        assert base is not None
        base[r] = (values.mean() - mu) ** 2
    return Result(errors, failed)


def toeplitz_rows(n: int, T: int, rng: np.random.Generator) -> FloatArray:
    """n x T rows with covariance 0.95^|t−s| (stationary AR(1)) and mean μ."""
    rows = np.empty((n, T))
    rows[:, 0] = rng.standard_normal(n)
    innovation_sd = math.sqrt(1.0 - RHO**2)
    for t in range(1, T):
        rows[:, t] = RHO * rows[:, t - 1] + innovation_sd * rng.standard_normal(n)
    return rows + MU


def simulate_raw(cell: Cell, reps: int, seed: tuple[int, ...]) -> Result:
    """The default estimator through ``values=rows, groups=user_ids`` on simulated rows."""
    rng = np.random.default_rng(np.random.SeedSequence(seed[0], spawn_key=seed[1:]))
    users = np.repeat(np.arange(cell.n), cell.T)
    errors: dict[str, FloatArray | None] = {k: np.empty(reps) for k in ("nonprivate", "raw")}
    failed = {"raw": np.zeros(reps, dtype=bool)}
    variances = np.empty(reps)
    for r in range(reps):
        rows = toeplitz_rows(cell.n, cell.T, rng)
        res = dplong.winsorized_mean(
            rows.ravel(),
            groups=users,
            epsilon=cell.epsilon,
            delta=cell.delta,
            scale=cell.var_user_mean,
            random_state=rng,
        )
        user_means = rows.mean(axis=1)
        variances[r] = user_means.var(ddof=1)
        for name, value in (("nonprivate", user_means.mean()), ("raw", float(res.estimate))):
            err = errors[name]
            assert err is not None
            err[r] = (value - MU) ** 2
        failed["raw"][r] = bool(res.failed)
    errors["user-mean variance"] = variances
    return Result(errors, failed)


def same_data_difference(cell: Cell, seed: int = 12345) -> float:
    """|estimate(rows, groups) − estimate(user means)| on one data set with one noise seed."""
    rng = np.random.default_rng(seed)
    rows = toeplitz_rows(cell.n, cell.T, rng)
    users = np.repeat(np.arange(cell.n), cell.T)
    a, b = (
        dplong.winsorized_mean(
            values,
            groups=groups,
            epsilon=cell.epsilon,
            delta=cell.delta,
            scale=cell.var_user_mean,
            random_state=seed + 1,
        )
        for values, groups in ((rows.ravel(), users), (rows.mean(axis=1), None))
    )
    return abs(float(a.estimate) - float(b.estimate))


def ratio(a: FloatArray, b: FloatArray) -> tuple[float, float]:
    """mean(a)/mean(b) and its delta-method standard error for paired replications."""
    r = float(a.mean() / b.mean())
    se = float((a - r * b).std(ddof=1) / math.sqrt(a.size) / b.mean())
    return r, se


def fmt(value: tuple[float, float] | None, width: int = 17) -> str:
    if value is None:
        return f"{'infeasible':>{width}s}"
    r, se = value
    text = f"{r:.3f} ± {se:.3f}" if r < 100 else f"{r:.3g} ± {se:.2g}"
    return f"{text:>{width}s}"


def fail_rate(result: Result, name: str) -> str:
    if result.errors.get(name) is None:
        return f"{'-':>7s}"
    return f"{100.0 * result.failed[name].mean():>6.2f}%"


def relative_se(value: tuple[float, float] | None) -> float:
    return 0.0 if value is None else value[1] / value[0]


def print_main(cells: list[Cell], results: dict[Cell, Result]) -> None:
    print(
        "MSE(private) / MSE(non-private mean of user means), ± delta-method standard error; "
        "fail = histogram failure rate"
    )
    header = (
        f"{'n':>6s} {'T':>3s} {'eps':>4s} {'corr':<8s} {'theory':>17s} {'improved':>17s} "
        f"{'oracle':>17s} {'improved/oracle':>17s} {'fail th':>7s} {'fail im':>7s} "
        f"{'pos th':>6s} {'pos im':>6s} {'thr':>5s}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
    for cell in cells:
        res = results[cell]
        base = res.errors["nonprivate"]
        assert base is not None
        cols = {
            k: (None if (e := res.errors[k]) is None else ratio(e, base)) for k in MAIN_ESTIMATORS
        }
        improved, oracle = res.errors["improved"], res.errors["oracle"]
        assert oracle is not None
        vs_oracle = None if improved is None else ratio(improved, oracle)
        clean = all(not res.failed[k].any() for k in ("theory", "improved") if k in res.failed)
        if clean:
            worst = max(worst, *(relative_se(v) for v in (*cols.values(), vs_oracle)))
        print(
            f"{cell.label()} {fmt(cols['theory'])} {fmt(cols['improved'])} "
            f"{fmt(cols['oracle'])} {fmt(vs_oracle)} {fail_rate(res, 'theory')} "
            f"{fail_rate(res, 'improved')} {bin_position(cell, 'theory'):>+6.2f} "
            f"{bin_position(cell, 'improved'):>+6.2f} {threshold(cell):>5.3f}"
        )
    print(
        "pos = (mu - centre of its histogram bin) / bin half-width (near ±1: users split "
        "between two bins); thr = histogram threshold / n at the default share"
    )
    print(f"largest relative standard error in cells without histogram failures: {worst:.1%}")


def print_shares(cells: list[Cell], results: dict[Cell, Result]) -> None:
    names = share_estimators()
    print("\nMidpoint share study (variant='improved'): MSE ratio ± standard error")
    header = f"{'n':>6s} {'T':>3s} {'eps':>4s} {'corr':<8s} {'adapt':>5s} " + " ".join(
        f"{k:>17s}" for k in names
    )
    print(header)
    print("-" * len(header))
    for cell in cells:
        res = results[cell]
        base = res.errors["nonprivate"]
        assert base is not None
        share = default_midpoint_share(cell.n, cell.epsilon, cell.delta)
        cols = [None if (e := res.errors[k]) is None else ratio(e, base) for k in names]
        print(f"{cell.label()} {share:>5.3f} " + " ".join(fmt(c) for c in cols))
    print("\nMidpoint share study: histogram failure rate (share used by 'adaptive, no floor')")
    header = f"{'n':>6s} {'T':>3s} {'eps':>4s} {'corr':<8s} {'nofl':>5s} " + " ".join(
        f"{k:>17s}" for k in names
    )
    print(header)
    print("-" * len(header))
    for cell in cells:
        res = results[cell]
        share = adaptive_share(cell.n, cell.epsilon, cell.delta, floor=0.0)
        print(
            f"{cell.label()} {share:>5.3f} " + " ".join(f"{fail_rate(res, k):>17s}" for k in names)
        )


def print_raw_check(cell: Cell, fast: Result, raw: Result, difference: float) -> None:
    base_fast, base_raw = fast.errors["nonprivate"], raw.errors["nonprivate"]
    imp, raw_err = fast.errors["improved"], raw.errors["raw"]
    variances = raw.errors["user-mean variance"]
    assert base_fast is not None and base_raw is not None and imp is not None
    assert raw_err is not None and variances is not None
    r_fast, se_fast = ratio(imp, base_fast)
    r_raw, se_raw = ratio(raw_err, base_raw)
    z = (r_raw - r_fast) / math.hypot(se_fast, se_raw)
    print(
        f"\nRaw-rows check, cell n={cell.n}, T={cell.T}, eps={cell.epsilon:g}, "
        f"{cell.correlation} (improved):"
    )
    print(
        f"  user means from their exact law : {r_fast:.3f} ± {se_fast:.3f} "
        f"({imp.size} reps, fail {100 * fast.failed['improved'].mean():.2f}%)"
    )
    print(
        f"  rows + groups (AR(1) rows)      : {r_raw:.3f} ± {se_raw:.3f} "
        f"({raw_err.size} reps, fail {100 * raw.failed['raw'].mean():.2f}%)"
    )
    verdict = "agree" if abs(z) < 3 else "DISAGREE"
    print(f"  difference {r_raw - r_fast:+.3f} = {z:+.2f} standard errors: the two paths {verdict}")
    print(
        f"  non-private MSE x n: exact law {base_fast.mean() * cell.n:.4f}, rows "
        f"{base_raw.mean() * cell.n:.4f}, theory {cell.var_user_mean:.4f}; mean sample variance "
        f"of user means {variances.mean():.4f}"
    )
    print(
        f"  same rows and noise seed, groups= vs precomputed user means: "
        f"|difference of estimates| = {difference:.2e}"
    )


def _reps(results: Mapping[Any, Result]) -> int:
    base = next(iter(results.values())).errors["nonprivate"]
    return 0 if base is None else base.size


def print_cap_probe(results: dict[float, Result]) -> None:
    n, eps = CAP_PROBE
    names = [share_name(s) for s in CAP_SHARES]
    needed = 2.0 * math.log(2.0 * n**2) / (n / 4.0 - 1.0) / eps
    print(
        f"\nCap probe: n={n}, T=1, eps={eps:g}, improved. A threshold at n/4 would need share "
        f"{needed:.2f}; the adaptive rule caps it at 0.5. pos = where mu sits in its bin; "
        f"{_reps(results)} replications per row"
    )
    header = f"{'pos':>5s} " + " ".join(f"{k + ' ratio':>22s} {'fail':>7s}" for k in names)
    print(header)
    print("-" * len(header))
    for position, res in results.items():
        base = res.errors["nonprivate"]
        assert base is not None
        cols = []
        for k in names:
            err = res.errors[k]
            assert err is not None
            cols.append(f"{fmt(ratio(err, base), 22)} {fail_rate(res, k)}")
        print(f"{position:>5.2f} " + " ".join(cols))


def print_floor_probe(results: dict[tuple[int, float, int, float], Result]) -> None:
    print(
        "\nFloor probe: values k times more spread out than scale= says (scale understated by "
        f"k^2), improved; histogram failure rate, {_reps(results)} replications per row"
    )
    header = (
        f"{'n':>6s} {'eps':>4s} {'k':>3s} {'pos':>4s} {'share (floor 0.05)':>19s} {'fail':>7s} "
        f"{'share (no floor)':>17s} {'fail':>7s}"
    )
    print(header)
    print("-" * len(header))
    for (n, eps, k, position), res in results.items():
        delta = 1.0 / n**2
        print(
            f"{n:>6d} {eps:>4g} {k:>3d} {position:>4.1f} "
            f"{default_midpoint_share(n, eps, delta):>19.4f} {fail_rate(res, 'adaptive')} "
            f"{adaptive_share(n, eps, delta, 0.0):>17.4f} {fail_rate(res, NO_FLOOR)}"
        )


def tasks(cells: list[Cell], reps: int, seed: int) -> Iterator[tuple[Cell, int, tuple[int, ...]]]:
    """(cell, reps, seed) chunks, largest n first so that the two workers finish together."""
    order = sorted(range(len(cells)), key=lambda i: -cells[i].n * cells[i].T)
    for i in order:
        for c, start in enumerate(range(0, reps, CHUNK)):
            yield cells[i], min(CHUNK, reps - start), (seed, i, c)


def _worker_init() -> None:
    """Silence the package's fragile-midpoint warning, and keep large numpy buffers in the
    heap: without this glibc maps and unmaps every n = 10⁵ array, and page faults cost about a
    third of the run (speed only)."""
    # The package warns when the midpoint is fragile; the tables report the failure rates.
    warnings.simplefilter("ignore", DplongWarning)
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 2**28)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 2**28)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def timed(fn: Callable[..., Result], *args: object) -> tuple[Result, float]:
    """``fn(*args)`` and the CPU seconds it took in its worker."""
    start = time.process_time()
    out = fn(*args)
    return out, time.process_time() - start


def collect(futures: list[tuple[K, Future[tuple[Result, float]]]]) -> tuple[dict[K, Result], float]:
    """Merge the chunks of every key (in submission order) and add up their CPU time."""
    parts: dict[K, list[Result]] = {}
    cpu = 0.0
    for key, future in futures:
        result, seconds = future.result()
        parts.setdefault(key, []).append(result)
        cpu += seconds
    return {k: Result.merge(v) for k, v in parts.items()}, cpu


def source_digest() -> str:
    """Short SHA-256 of the package's Python sources: which state of dplong was measured."""
    root = os.path.dirname(os.path.abspath(dplong.__file__))
    digest = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(folder, name), "rb") as handle:
                digest.update(name.encode() + handle.read())
    return digest.hexdigest()[:12]


def run(args: argparse.Namespace) -> None:
    ns = QUICK_NS if args.quick else NS
    reps = args.reps if args.reps is not None else (QUICK_REPS if args.quick else DEFAULT_REPS)
    raw_reps = max(reps // 3, 2)
    cells = grid(ns)
    raw_cell = Cell(*RAW_CELL)
    seed = args.seed
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs, initializer=_worker_init) as pool:
        main_futures = [
            (cell, pool.submit(timed, simulate, cell, r, key, args.shares))
            for cell, r, key in tasks(cells, reps, seed)
        ]
        raw_futures = []
        if raw_cell in cells:
            raw_futures = [
                (raw_cell, pool.submit(timed, simulate_raw, raw_cell, r, key))
                for _, r, key in tasks([raw_cell], raw_reps, seed + 1)
            ]
        cap_futures: list[tuple[float, Future[tuple[Result, float]]]] = []
        floor_futures: list[tuple[tuple[int, float, int, float], Future[tuple[Result, float]]]]
        floor_futures = []
        if args.shares:
            n, eps = CAP_PROBE
            cap_shares: dict[str, float | None] = {share_name(s): s for s in CAP_SHARES}
            cap_reps = CAP_REPS // 5 if args.quick else CAP_REPS
            floor_reps = FLOOR_REPS // 4 if args.quick else FLOOR_REPS
            cap_futures = [
                (pos, pool.submit(timed, probe, n, eps, 1.0, pos, cap_shares, cap_reps, key))
                for i, pos in enumerate(CAP_POSITIONS)
                for key in [(seed + 2, i)]
            ]
            for i, (n, eps) in enumerate(FLOOR_PROBE):
                if n > max(ns):
                    continue
                floor_shares = {
                    "adaptive": None,
                    NO_FLOOR: adaptive_share(n, eps, 1.0 / n**2, floor=0.0),
                }
                for j, k in enumerate(FLOOR_SPREADS):
                    for m, pos in enumerate((0.0, 1.0)):
                        job = (probe, n, eps, float(k), pos, floor_shares, floor_reps)
                        future = pool.submit(timed, *job, (seed + 3, i, j, m))
                        floor_futures.append(((n, eps, k, pos), future))
        results, cpu = collect(main_futures)
        raw, cpu_raw = collect(raw_futures)
        cap, cpu_cap = collect(cap_futures)
        floor, cpu_floor = collect(floor_futures)
    elapsed = time.perf_counter() - started
    cpu += cpu_raw + cpu_cap + cpu_floor

    print(f"benchmarks/accuracy_mean.py — dplong {dplong.__version__}")
    print(
        f"date {dt.date.today().isoformat()}; {platform.machine()} {platform.python_version()}, "
        f"numpy {np.__version__}; {args.jobs} worker processes on {os.cpu_count()} cores; "
        f"dplong sources sha256 {source_digest()}"
    )
    print(
        f"mu = {MU:g}, delta = 1/n^2, Toeplitz rho = {RHO}, {reps} replications per cell "
        f"(common to all estimators), seed {seed}; adaptive share floor {MIN_MIDPOINT_SHARE}"
    )
    print(
        "user means drawn from their exact law N(mu, var_user_mean); T = 1 cells: iid and "
        "toeplitz are the same law (independent replications)\n"
    )
    print_main(cells, results)
    if raw:
        print_raw_check(raw_cell, results[raw_cell], raw[raw_cell], same_data_difference(raw_cell))
    if args.shares:
        print_shares(cells, results)
        print_cap_probe(cap)
        print_floor_probe(floor)
    print(f"\nruntime {elapsed:.0f} s wall, {cpu:.0f} s CPU in the workers")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reps",
        type=int,
        default=None,
        help=f"replications per cell (default {DEFAULT_REPS}; {QUICK_REPS} with --quick)",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"smoke run: n in {QUICK_NS}, fewer replications"
    )
    parser.add_argument(
        "--shares", action="store_true", help="add the midpoint-share study (slower)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--seed", type=int, default=20240601, help="master seed")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
