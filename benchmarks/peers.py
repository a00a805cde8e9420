"""dplong's defaults, given only ε, against diffprivlib and OpenDP given generous bounds (issue 10).

What is compared. In every replication all estimators see the *same* simulated panel (data drawn
from a fixed seed per cell and replication; each library then draws its own noise):

* **dplong** — ``winsorized_mean(rows, groups=users, epsilon=ε)`` or
  ``LongitudinalOLS.from_formula("y ~ x1 + x2", ...).fit(epsilon=ε)``: nothing but ε, so δ is its
  default 1/n² and the scale, midpoint and clipping radius are found privately from the data.
* **diffprivlib** — ``diffprivlib.tools.mean(user_means, epsilon=ε, bounds=(lo, hi))`` on the
  per-user means (Laplace truncated to the bounds, sensitivity (hi − lo)/n: pure ε-DP when one
  record is replaced and n is public; it takes no δ).
* **OpenDP** — over the per-user means on ``vector_domain(atom_domain(float), size=n)`` with the
  symmetric distance: ``clamp((lo, hi)) >> mean()``, then either ``laplace`` (pure ε) or
  ``gaussian`` (zCDP, converted to (ε, δ) by ``make_zCDP_to_approxDP`` and ``make_fix_delta``
  at δ = 1/n²). The noise scale is OpenDP's own ``binary_search_param`` at ``d_in = 2``: on
  known-size data, replacing one user is a symmetric distance of 2 ("contributions=2"); at
  ``d_in = 1`` the sized mean would claim sensitivity 0.
* **Linear model**, two peers. (a) The issue's: diffprivlib's
  ``LinearRegression(epsilon=ε / T, bounds_X, bounds_y)`` on the pooled rows. It is item-level
  DP (one *row* replaced), so a user with T rows is covered, by group privacy, only at ε/T per
  row — that is what it is given, for the same user-level ε. Its bounds are ±k true standard
  deviations of each column around its true mean (x: 0 ± k, y: 1 ± k·√2.34), with k the best
  for diffprivlib on a 40-replication pilot (other seeds) over k ∈ {1, 1.5, 2, 2.5, 3}: k = 2 at
  ε = 1, k = 1.5 at ε = 0.5. (b) The user-level counterpart of the mean cells: each user's own
  OLS slopes, then per slope diffprivlib's ``mean`` or OpenDP's Laplace mean (``d_in = 2``) at
  ε/2 (two slopes, basic composition), bounds the true slope ± 10 sd of one user's slope (that
  sd from 10⁵ simulated users). OpenDP has no multivariate linear regression.

The guarantee is the same for all: one *user* (all of his rows) replaced, n public, ε equal,
δ = 1/n² where the mechanism takes a δ (dplong, OpenDP Gaussian). The pure-ε peers
(diffprivlib, OpenDP Laplace) hold it with δ = 0; that costs them nothing here, since at these
ε and n the Laplace mean is the more accurate of OpenDP's two.
Only the peers are given bounds: the **generous bounds** are the true mean ± 10 standard
deviations of one user's mean (for the simulated means √0.7276 = 0.853, the exact sd of the
mean of ten AR(1) 0.9 rows of unit variance; for the wage panel the sd of the 545 per-man
means, 0.391, around their mean). diffprivlib is also run on the wage panel with the public
range [−5, 5] of a log wage, as in the issue's table. dplong is given none of this.

Cells (issue 10, ``--parts issue10``): user-level mean of n users x T = 10 rows, AR(1) 0.9 rows
of unit marginal variance around μ = 3.7, (n, ε) ∈ {(1000, 1), (1000, 0.5), (2000, 0.5),
(10⁴, 1)}; the wage panel mean of ``lwage`` (545 men, ε = 1); LongitudinalOLS n = 10⁴, T = 10,
``y = 1 + 0.5 x1 − 0.3 x2 + u + e`` (u ~ N(0, 1) per user, AR(1) 0.9 errors of unit variance,
x ~ N(0, 1)), ε ∈ {1, 0.5}.

Cells (issue 29, ``--parts issue29``), the peers handed the truth ± **3** sds of one user's
statistic (the issue's comparison): the AR(1) panels at (n, ε) ∈ {(300, 1), (500, 0.5),
(1000, 0.5), (1000, 1)}, and the skewed statistics of ``benchmarks/skewed.py`` (n = 1,000,
ε = 1; each user the mean of T rows ``μ_u + e``, e ~ N(0, 0.1²), ``μ_u`` lognormal σ = 1 and
1.5, Lomax 2.5, t₃, 90 % zeros with a lognormal tail; truth the population mean, the sd the
population's, ``_common.SKEWED``).

Cells (``--parts bounded``): the share of a 0/1 outcome, n users x 4 rows, (n, share) ∈
{(1000, 0.02), (1000, 0.1), (300, 0.3), (5000, 0.02)}, ε = 1, with dplong handed the same
natural range as the peers (``bounds=(0, 1)``); its interval's sampling sd is the
Bhatia-Davis bound at the released share's plausible end.

Reported: simulated means — MSE around μ over the MSE of the non-private mean of user means on
the same data; wage panel — RMSE around the non-private mean of per-man means (the data are
fixed, so this is the privacy error alone; the reference column is the sampling SE); linear
model — summed MSE of the two slopes over that of the non-private average of per-user OLS
fits. "dplong / peer" is always a ratio of mean squared errors (± a paired delta-method
standard error), and "dplong at least as accurate" is yes when it is ≤ 1 against every peer.
Mean and linear-model cells also give the share of dplong's 95 % intervals that cover the
truth (each slope counted) and their median half-width over the non-private estimator's RMSE a
coordinate (about 2 where the interval is as tight as the sampling error alone allows), and
the releases dplong withheld (NaN, with a reason), which are left out of every column's MSE.
OpenDP's noise comes from its own CSPRNG and cannot be seeded, so its columns vary from run to
run within their Monte Carlo error; everything else is reproducible from ``--seed``.

Run ``python benchmarks/peers.py [--reps R] [--ols-reps R]`` after
``pip install -e ".[peers]"``. The numbers in docs/accuracy.md ("Against other DP libraries")
come from ``--reps 1000 --ols-reps 400`` (about 15 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from _common import (
    NONNEGATIVE,
    PHI,
    ROW_SD,
    SKEWED,
    SLOPES,
    T,
    ar1_rows,
    mse_ratio,
    ols_panel,
    seeds,
    skewed_rows,
    user_mean_sd,
)
from numpy.typing import ArrayLike

import dplong

EXTRA = 'pip install -e ".[peers]"  (the optional extra "peers" of dplong)'
MU = 3.7
BOUND_SDS = 10.0
#: Per ε, the k (in true sd) of diffprivlib's LinearRegression bounds: its best on the pilot.
OLS_BOUND_SDS = {1.0: 2.0, 0.5: 1.5}
Y_SD = float(np.sqrt(0.5**2 + 0.3**2 + 1.0 + 1.0))
#: Rows per user of the 0/1 outcome's cells (``--parts bounded``).
T_BINARY = 4


def load_peers() -> tuple[Any, Any, Any]:
    """diffprivlib, its LinearRegression and OpenDP's prelude, or exit naming the extra."""
    try:
        import diffprivlib
        import opendp.prelude as dp
        from diffprivlib.models import LinearRegression
    except Exception as exc:  # an ImportError, or a peer broken by its own dependencies
        raise SystemExit(
            f"benchmarks/peers.py needs the peer libraries diffprivlib and opendp "
            f"({type(exc).__name__}: {exc}).\nInstall them with: {EXTRA}"
        ) from exc
    dp.enable_features("contrib")
    return diffprivlib, LinearRegression, dp


def opendp_means(dp: Any, n: int, bounds: tuple[float, float], epsilon: float) -> dict[str, Any]:
    """OpenDP's clamped known-size mean with Laplace (ε) and Gaussian (ε, 1/n²) noise."""
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n), dp.symmetric_distance()
    mean = space >> dp.t.then_clamp(bounds) >> dp.t.then_mean()
    delta = 1.0 / n**2

    def laplace(scale: float) -> Any:
        return mean >> dp.m.then_laplace(scale=scale)

    def gaussian(scale: float) -> Any:
        zcdp = mean >> dp.m.then_gaussian(scale=scale)
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), delta)

    lap = laplace(dp.binary_search_param(laplace, d_in=2, d_out=epsilon))
    gau = gaussian(dp.binary_search_param(gaussian, d_in=2, d_out=(epsilon, delta)))
    assert lap.map(2) <= epsilon and gau.map(2)[0] <= epsilon
    return {"OpenDP Laplace": lap, "OpenDP Gaussian": gau}


@dataclass
class Cell:
    """Squared errors per replication of every estimator in one cell."""

    name: str
    reference: float | None = None  # shown as the non-private column (wage: sampling SE)
    rmse: bool = False  # wage panel: report RMSE instead of an MSE ratio
    errors: dict[str, list[float]] = field(default_factory=dict)
    withheld: int = 0  # replications dplong withheld (NaN): left out for every estimator
    covered: list[bool] = field(default_factory=list)  # dplong's 95 % interval, per release
    # and its half-width, per release and coordinate
    half_widths: list[float] = field(default_factory=list)
    coordinates: int = 1  # of the summed squared errors (two slopes: 2)

    def add(self, name: str, estimate: ArrayLike, truth: ArrayLike) -> None:
        err = float(np.sum((np.asarray(estimate) - truth) ** 2))
        self.errors.setdefault(name, []).append(err)

    def shown(self, name: str) -> float:
        mse = float(np.mean(self.errors[name]))
        if self.rmse:
            return float(np.sqrt(mse))
        return mse / float(np.mean(self.errors["non-private"]))

    def interval(self, low: ArrayLike, high: ArrayLike, truth: ArrayLike) -> None:
        """dplong's 95 % intervals of one release, per coordinate: covered, and half-width."""
        low, high, truth = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (low, high, truth))
        self.covered += ((low <= truth) & (truth <= high)).tolist()
        self.half_widths += ((high - low) / 2.0).tolist()

    def width(self) -> float:
        """The median half-width of dplong's intervals over the non-private estimator's RMSE
        a coordinate: about 2 for an interval as tight as the sampling error alone allows."""
        rmse = np.sqrt(np.mean(self.errors["non-private"]) / self.coordinates)
        return float(np.median(self.half_widths) / rmse)

    def ratio(self, peer: str) -> tuple[float, float]:
        """MSE(dplong) / MSE(peer) and its paired delta-method standard error."""
        return mse_ratio(self.errors["dplong"], self.errors[peer])


def mean_cell(
    peers: tuple[Any, Any, Any],
    idx: int,
    n: int,
    epsilon: float,
    reps: int,
    seed: int,
    *,
    kind: str = "Gaussian",
    bound_sds: float = BOUND_SDS,
    lower: float | None = None,
) -> Cell:
    """A user-level mean of n users x T rows: the issue-10 AR(1) panels around μ (``kind``
    "Gaussian"), or a skewed kind of ``_common.SKEWED``; the peers' bounds the truth ±
    ``bound_sds`` sds of one user's statistic. A support's end ``lower`` is given to all:
    dplong's ``lower=``, and the peers' lower bound raised to it."""
    diffprivlib, _, dp = peers
    if kind == "Gaussian":
        truth, sd = MU, user_mean_sd(T, PHI)
    else:
        mean, variance = SKEWED[kind]
        truth, sd = mean, float(np.sqrt(variance + ROW_SD**2 / T))
    bounds = (truth - bound_sds * sd, truth + bound_sds * sd)
    if lower is not None:
        bounds = (max(lower, bounds[0]), bounds[1])
    opendp = opendp_means(dp, n, bounds, epsilon)
    users = np.repeat(np.arange(n), T)
    support = "" if lower is None else f", lower={lower:g} (peers' too)"
    cell = Cell(f"{kind} mean, n={n}, T={T}, ε={epsilon:g}, peers ±{bound_sds:g} sd{support}")
    for rep in range(reps):
        data, noise, peer_seed = seeds(seed, idx, rep)
        rows = MU + ar1_rows(data, n, T, PHI) if kind == "Gaussian" else skewed_rows(kind, data, n)
        means = rows.mean(axis=1)
        res = dplong.winsorized_mean(
            rows.ravel(), groups=users, epsilon=epsilon, lower=lower, random_state=noise
        )
        if np.isnan(res.params.iloc[0]):  # withheld, with its reason: no error to pair
            cell.withheld += 1
            continue
        add_means(cell, res, means, truth, (diffprivlib, opendp), epsilon, bounds, peer_seed)
    return cell


def add_means(
    cell: Cell,
    res: Any,
    means: np.ndarray,
    truth: float,
    peers: tuple[Any, dict[str, Any]],
    epsilon: float,
    bounds: tuple[float, float],
    peer_seed: int,
) -> None:
    """One replication of a mean cell: the non-private mean, dplong's release ``res`` and its
    interval, and the peers' bounded means of the same users' means."""
    diffprivlib, opendp = peers
    cell.add("non-private", means.mean(), truth)
    cell.add("dplong", float(res.params.iloc[0]), truth)
    cell.interval(*res.conf_int().iloc[0], truth)
    cell.add(
        "diffprivlib",
        diffprivlib.tools.mean(
            means,
            epsilon=epsilon,
            bounds=bounds,
            random_state=np.random.RandomState(peer_seed),
            accountant=diffprivlib.BudgetAccountant(),
        ),
        truth,
    )
    listed = means.tolist()
    for name, meas in opendp.items():
        cell.add(name, meas(listed), truth)


def binary_cell(
    peers: tuple[Any, Any, Any], idx: int, n: int, share: float, reps: int, seed: int
) -> Cell:
    """The share of a 0/1 outcome (visits, events), T rows per user, every estimator handed
    its natural range (0, 1): dplong's ``bounds=(0, 1)`` as the peers' ``bounds``. The truth
    is the population share; ε = 1."""
    diffprivlib, _, dp = peers
    epsilon = 1.0
    opendp = opendp_means(dp, n, (0.0, 1.0), epsilon)
    users = np.repeat(np.arange(n), T_BINARY)
    cell = Cell(f"0/1 share {share:g}, n={n}, T={T_BINARY}, ε=1, all given (0, 1)")
    for rep in range(reps):
        data, noise, peer_seed = seeds(seed, idx, rep)
        rows = (data.uniform(size=(n, T_BINARY)) < share).astype(float)
        means = rows.mean(axis=1)
        res = dplong.winsorized_mean(
            rows.ravel(), groups=users, epsilon=epsilon, bounds=(0.0, 1.0), random_state=noise
        )
        add_means(cell, res, means, share, (diffprivlib, opendp), epsilon, (0.0, 1.0), peer_seed)
    return cell


def wage_cell(peers: tuple[Any, Any, Any], idx: int, reps: int, seed: int) -> Cell:
    diffprivlib, _, dp = peers
    wages = dplong.datasets.load_wage_panel()
    means = wages.groupby("nr")["lwage"].mean().to_numpy()
    truth, sd, n = float(means.mean()), float(means.std(ddof=1)), means.size
    bounds = (truth - BOUND_SDS * sd, truth + BOUND_SDS * sd)
    opendp = opendp_means(dp, n, bounds, 1.0)
    listed = means.tolist()
    cell = Cell(f"wage panel mean of lwage, n={n}, ε=1", reference=sd / np.sqrt(n), rmse=True)
    for rep in range(reps):
        _, noise, peer_seed = seeds(seed, idx, rep)
        res = dplong.winsorized_mean(
            wages["lwage"], groups=wages["nr"], epsilon=1.0, random_state=noise
        )
        cell.add("dplong", float(res.params.iloc[0]), truth)
        for name, peer_bounds in (("diffprivlib", bounds), ("diffprivlib [−5, 5]", (-5.0, 5.0))):
            cell.add(
                name,
                diffprivlib.tools.mean(
                    means,
                    epsilon=1.0,
                    bounds=peer_bounds,
                    random_state=np.random.RandomState(peer_seed),
                    accountant=diffprivlib.BudgetAccountant(),
                ),
                truth,
            )
        for name, meas in opendp.items():
            cell.add(name, meas(listed), truth)
    return cell


def slopes_panel(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows x (n·T x 2), y, and each user's OLS slopes (n x 2) of :func:`_common.ols_panel`."""
    frame, beta = ols_panel(rng, n)
    return frame[["x1", "x2"]].to_numpy(), frame["y"].to_numpy(), beta[:, 1:]


def ols_cell(
    peers: tuple[Any, Any, Any], idx: int, n: int, epsilon: float, reps: int, seed: int
) -> Cell:
    diffprivlib, LinearRegression, dp = peers
    k = OLS_BOUND_SDS[epsilon]
    # sd of one user's slopes: the truth, to Monte Carlo precision, from 10^5 users of a pilot.
    slope_sd = np.std(slopes_panel(np.random.default_rng([seed, idx, 10**6]), 10**5)[2], axis=0)
    slope_bounds = [
        (b - BOUND_SDS * s, b + BOUND_SDS * s) for b, s in zip(SLOPES, slope_sd, strict=True)
    ]
    opendp = [opendp_means(dp, n, b, epsilon / 2)["OpenDP Laplace"] for b in slope_bounds]
    users = np.repeat(np.arange(n), T)
    cell = Cell(f"LongitudinalOLS slopes, n={n}, T={T}, ε={epsilon:g}", coordinates=2)
    for rep in range(reps):
        data, noise, peer_seed = seeds(seed, idx, rep)
        x, y, slopes = slopes_panel(data, n)
        cell.add("non-private", slopes.mean(axis=0), SLOPES)
        frame = pd.DataFrame({"user": users, "x1": x[:, 0], "x2": x[:, 1], "y": y})
        res = dplong.LongitudinalOLS.from_formula("y ~ x1 + x2", frame, groups="user").fit(
            epsilon=epsilon, random_state=noise
        )
        cell.add("dplong", res.params.to_numpy()[1:], SLOPES)
        low, high = res.conf_int().to_numpy()[1:].T
        cell.interval(low, high, SLOPES)
        state = np.random.RandomState(peer_seed)
        cell.add(
            "diffprivlib",
            [
                diffprivlib.tools.mean(
                    slopes[:, j],
                    epsilon=epsilon / 2,
                    bounds=slope_bounds[j],
                    random_state=state,
                    accountant=diffprivlib.BudgetAccountant(),
                )
                for j in range(2)
            ],
            SLOPES,
        )
        cell.add("OpenDP Laplace", [m(slopes[:, j].tolist()) for j, m in enumerate(opendp)], SLOPES)
        model = LinearRegression(
            epsilon=epsilon / T,
            bounds_X=(-k, k),
            bounds_y=(1.0 - k * Y_SD, 1.0 + k * Y_SD),
            random_state=state,
            accountant=diffprivlib.BudgetAccountant(),
        ).fit(x, y)
        cell.add("diffprivlib LinearRegression", model.coef_, SLOPES)
    return cell


PEER_COLUMNS = (
    "diffprivlib",
    "diffprivlib [−5, 5]",
    "diffprivlib LinearRegression",
    "OpenDP Laplace",
    "OpenDP Gaussian",
)


def table(cells: list[tuple[Cell, int]]) -> str:
    head = [
        "cell",
        "reps",
        "non-private",
        "dplong",
        "dplong coverage",
        "dplong half-width / non-private RMSE",
        *PEER_COLUMNS,
        "dplong / peer (MSE)",
        "dplong at least as accurate",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cell, reps in cells:
        peers = [p for p in PEER_COLUMNS if p in cell.errors]
        ratios = [cell.ratio(p) for p in peers]
        if cell.rmse:
            row = [cell.name + " — RMSE", str(reps), f"SE {cell.reference:.4f}"]
            fmt = "{:.4f}"
        else:
            mse = float(np.mean(cell.errors["non-private"]))
            row = [cell.name + " — MSE / non-private", str(reps), f"MSE {mse:.3g}"]
            fmt = "{:.2f}"
        row.append(
            fmt.format(cell.shown("dplong"))
            + (f" ({cell.withheld} withheld)" if cell.withheld else "")
        )
        row.append(f"{np.mean(cell.covered):.3f}" if cell.covered else "—")
        row.append(f"{cell.width():.2f}" if cell.half_widths else "—")
        row += [fmt.format(cell.shown(p)) if p in cell.errors else "—" for p in PEER_COLUMNS]
        row.append(" / ".join(f"{r:.2g} ± {s:.1g}" for r, s in ratios))
        row.append("yes" if all(r <= 1 for r, _ in ratios) else "no")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def versions() -> str:
    from importlib.metadata import version

    return ", ".join(
        f"{p} {version(p)}" for p in ("dplong", "diffprivlib", "opendp", "scikit-learn", "numpy")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=50, help="replications of the mean cells")
    parser.add_argument(
        "--ols-reps",
        type=int,
        default=None,
        help="replications of the linear-model cells (default: --reps)",
    )
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument(
        "--parts",
        default="issue10,issue29",
        help="comma-separated: issue10 (the cells above), issue29 (small Gaussian panels and "
        "skewed statistics against peers with ±3 sd bounds), bounded (a 0/1 outcome's share, "
        "dplong and the peers all given (0, 1))",
    )
    args = parser.parse_args()
    peers = load_peers()
    warnings.simplefilter("ignore")  # dplong's reliability notes and diffprivlib's bound notes
    ols_reps = args.reps if args.ols_reps is None else args.ols_reps
    print(versions())
    runs: list[tuple[Callable[[], Cell], int]] = []
    if "issue10" in args.parts:
        runs += [
            (partial(mean_cell, peers, i, n, e, args.reps, args.seed), args.reps)
            for i, (n, e) in enumerate(((1000, 1.0), (1000, 0.5), (2000, 0.5), (10_000, 1.0)))
        ]
        runs.append((partial(wage_cell, peers, 4, args.reps, args.seed), args.reps))
        runs += [
            (partial(ols_cell, peers, i, 10_000, e, ols_reps, args.seed), ols_reps)
            for i, e in ((5, 1.0), (6, 0.5))
        ]
    if "issue29" in args.parts:  # issue 29's targets: the peers handed the truth ± 3 sd
        small = ((300, 1.0), (500, 0.5), (1000, 0.5), (1000, 1.0))
        runs += [
            (partial(mean_cell, peers, 7 + i, n, e, args.reps, args.seed, bound_sds=3.0), args.reps)
            for i, (n, e) in enumerate(small)
        ]
        runs += [
            (
                partial(mean_cell, peers, 11 + i, 1000, 1.0, args.reps, args.seed, kind=kind,
                        bound_sds=3.0),
                args.reps,
            )
            for i, kind in enumerate(SKEWED)
        ]  # fmt: skip
        # the nonnegative kinds with the support's end declared, on the same panels
        runs += [
            (
                partial(mean_cell, peers, 11 + list(SKEWED).index(kind), 1000, 1.0, args.reps,
                        args.seed, kind=kind, bound_sds=3.0, lower=0.0),
                args.reps,
            )
            for kind in NONNEGATIVE
        ]  # fmt: skip
    if "bounded" in args.parts:  # a 0/1 outcome's share, everyone handed (0, 1)
        cells = ((1000, 0.02), (1000, 0.1), (300, 0.3), (5000, 0.02))
        runs += [
            (partial(binary_cell, peers, 16 + i, n, share, args.reps, args.seed), args.reps)
            for i, (n, share) in enumerate(cells)
        ]
    done: list[tuple[Cell, int]] = []
    for run, reps in runs:
        start = time.perf_counter()
        done.append((run(), reps))
        print(f"{done[-1][0].name}: {time.perf_counter() - start:.0f} s", flush=True)
    print(table(done))


if __name__ == "__main__":
    main()
