"""User-level means of rare events: dplong given only ε against diffprivlib and OpenDP given [0, 1].

The statistic is each person's share of visits with an event (T = 10 visits); a share π of the
people never has one (their statistic is exactly 0), the others have an event probability drawn
from Beta(3, 7) (mean 0.3). The population mean is ``(1 - π) 0.3``. Such columns are common
(adverse events, hospitalisations, purchases) and were dplong's blind spot: with more than half
the users at 0 its private scale was measured on the zeros and the interval collapsed onto 0
(the release before 2026-11-26 gave 8e-151 ± 5e-152 for a mean of 0.116).

* **dplong** — ``winsorized_mean(rows, groups=users, epsilon=ε)``: nothing but ε.
* **diffprivlib** — ``tools.mean(per_person_shares, epsilon=ε, bounds=(0, 1))``: the exact public
  range of a share, the best bounds any peer could be given.
* **OpenDP** — the clamped known-size mean on (0, 1) with Laplace or Gaussian noise (``d_in = 2``,
  a replaced user; see ``peers.py``).

Reported per cell: MSE around the population mean over that of the non-private mean (1 is the
sampling error alone), for the releases dplong made, with how many it withheld (NaN and a note:
too few users off 0 for a private scale) and how often its 95 % interval covered the population
mean. "dplong / best peer" is a ratio of MSEs over the replications dplong released.

A second part takes each person's 0/1 statistic "ever had an event" (one value a person): a
user-level share, ``(1 - π) 0.913`` (``E (1 - r)^10 = 0.087`` for ``r ~ Beta(3, 7)``), whose
users sit at exactly two values.

Run ``python benchmarks/zero_inflated.py [--reps R]`` (needs the ``peers`` extra); docs/accuracy.md
holds the numbers of ``--reps 40``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import header, mse_ratio, pm, seeds
from peers import load_peers, opendp_means

import dplong

T_VISITS = 10
CELLS = ((2000, 1.0, 0.6), (2000, 4.0, 0.6), (2000, 4.0, 0.9), (20000, 1.0, 0.6), (20000, 1.0, 0.9))
#: The "ever" part: (n, ε, π), the share of people with an event (1 - π) 0.913.
EVER = (
    (500, 1.0, 0.6),
    (2000, 1.0, 0.9),
    (2000, 1.0, 0.6),
    (2000, 1.0, 0.5),
    (2000, 1.0, 0.2),
    (20000, 1.0, 0.6),
)
#: P(no event in T_VISITS visits) for an event probability drawn from Beta(3, 7).
NEVER_GIVEN_RATE = (9 * 8 * 7) / (19 * 18 * 17)


def cell(
    peers: tuple, idx: int, n: int, epsilon: float, zeros: float, reps: int, seed: int, ever: bool
) -> str:
    diffprivlib, _, dp = peers
    opendp = opendp_means(dp, n, (0.0, 1.0), epsilon)
    users = np.arange(n) if ever else np.repeat(np.arange(n), T_VISITS)
    truth = (1.0 - zeros) * ((1.0 - NEVER_GIVEN_RATE) if ever else 0.3)
    errors: dict[str, list[float]] = {}
    withheld, covered = 0, 0

    def add(name: str, estimate: float) -> None:
        errors.setdefault(name, []).append((estimate - truth) ** 2)

    for rep in range(reps):
        data, noise, peer_seed = seeds(seed, idx, rep)
        rate = np.where(data.random(n) < zeros, 0.0, data.beta(3.0, 7.0, n))
        rows = (data.random((n, T_VISITS)) < rate[:, None]).astype(float)
        if ever:
            rows = rows.max(axis=1, keepdims=True)
        shares = rows.mean(axis=1)
        res = dplong.winsorized_mean(
            rows.ravel(), groups=users, epsilon=epsilon, random_state=noise
        )
        estimate = float(res.params.iloc[0])
        if np.isnan(estimate):
            withheld += 1
            continue
        low, high = res.conf_int().to_numpy()[0]
        covered += int(low <= truth <= high)
        add("dplong", estimate)
        add("non-private", float(shares.mean()))
        add(
            "diffprivlib",
            diffprivlib.tools.mean(
                shares,
                epsilon=epsilon,
                bounds=(0.0, 1.0),
                random_state=np.random.RandomState(peer_seed),
                accountant=diffprivlib.BudgetAccountant(),
            ),
        )
        for name, meas in opendp.items():
            add(name, meas(shares.tolist()))
    released = reps - withheld
    if not released:
        return f"withheld {withheld}/{reps}"
    base = float(np.mean(errors["non-private"]))
    shown = ", ".join(
        f"{name} {np.mean(errors[name]) / base:.3g}"
        for name in ("dplong", "diffprivlib", "OpenDP Laplace", "OpenDP Gaussian")
    )
    best = min(
        ("diffprivlib", "OpenDP Laplace", "OpenDP Gaussian"), key=lambda k: np.mean(errors[k])
    )
    ratio, se = mse_ratio(errors["dplong"], errors[best])
    return (
        f"MSE / non-private: {shown}; dplong / {best} {pm(ratio, se)}; "
        f"withheld {withheld}/{reps}; dplong's intervals cover {covered}/{released}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0, help="0 gives the documented numbers")
    args = parser.parse_args()
    warnings.simplefilter("ignore", dplong.exceptions.DplongWarning)  # withheld: counted
    peers = load_peers()
    start = time.perf_counter()
    header("benchmarks/zero_inflated.py", [f"replications per cell: {args.reps}\n"])
    for idx, (n, epsilon, zeros) in enumerate(CELLS):
        result = cell(peers, idx, n, epsilon, zeros, args.reps, args.seed, ever=False)
        print(f"n={n}, ε={epsilon:g}, {zeros:.0%} never: {result}", flush=True)
    print("\nA 0/1 statistic a person: ever had an event")
    for idx, (n, epsilon, zeros) in enumerate(EVER, start=len(CELLS)):
        result = cell(peers, idx, n, epsilon, zeros, args.reps, args.seed, ever=True)
        share = (1.0 - zeros) * (1.0 - NEVER_GIVEN_RATE)
        print(f"n={n}, ε={epsilon:g}, share {share:.0%}: {result}", flush=True)
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
