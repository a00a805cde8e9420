"""Golden releases: every model × privacy model × scale option, fitted with a fixed seed.

``tests/test_golden.py`` compares each case with the numbers pinned in
``tests/golden/releases.json``, so that moving code around the release pipeline is proven not to
change a single release. A change that is *meant* to alter releases regenerates the cases it
alters (``python tests/golden_cases.py NAME ...``; with no name, every case) in the same commit
and says why in its message.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dplong
from dplong.dependence import AR1

PINNED = Path(__file__).with_name("golden") / "releases.json"
SEED = 20261128


def _wages() -> pd.DataFrame:
    return dplong.datasets.load_wage_panel()


def _dietox() -> pd.DataFrame:
    return dplong.datasets.load_dietox()


def _ols(formula: str = "lwage ~ exper + expersq") -> dplong.LongitudinalOLS:
    return dplong.LongitudinalOLS.from_formula(formula, _wages(), groups="nr", time="year")


WAGE_BOUNDS = {"lwage": (-4.0, 5.0), "exper": (0.0, 20.0), "union": (0, 1)}


def _pooled(model: Any, formula: str = "lwage ~ exper + union", **options: Any) -> dplong.PooledOLS:
    return model.from_formula(formula, _wages(), groups="nr", **options)  # type: ignore[no-any-return]


def _simulated_means(n: int = 2000, d: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    user = np.repeat(np.arange(n), 5)
    values = rng.normal(size=(n, d))[user] + rng.normal(size=(user.size, d))
    frame = pd.DataFrame(values, columns=[f"v{j}" for j in range(d)])
    frame["user"] = user
    return frame


def _item_curve() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    x = np.sort(rng.uniform(0.0, 1.0, 800))
    return pd.DataFrame({"x": x, "y": np.sin(3 * x) + rng.normal(0.0, 0.5, x.size)})


def _mean(**options: Any) -> Callable[[], Any]:
    def fit() -> Any:
        frame = _simulated_means()
        return dplong.winsorized_mean(
            frame[["v0", "v1"]], groups=frame["user"], random_state=SEED, **options
        )

    return fit


def _dask_mean() -> Any:
    import dask.dataframe as dd

    frame = dd.from_pandas(_simulated_means(), npartitions=3)
    return dplong.winsorized_mean(
        frame[["v0", "v1"]], groups=frame["user"], epsilon=1.0, random_state=SEED
    )


def _dask_ols() -> Any:
    import dask.dataframe as dd

    frame = dd.from_pandas(_wages(), npartitions=4)
    model = dplong.LongitudinalOLS.from_formula(
        "lwage ~ exper + expersq", frame, groups="nr", time="year"
    )
    return model.fit(epsilon=4.0, random_state=SEED)


CASES: dict[str, Callable[[], Any]] = {
    "mean/default": _mean(epsilon=1.0),
    "mean/stated": _mean(epsilon=1.0, scale=[0.3, 0.3]),
    "mean/theory": _mean(epsilon=1.0, scale=[0.3, 0.3], variant="theory"),
    "mean/theory-estimated": _mean(epsilon=2.0, variant="theory"),
    "mean/local": _mean(epsilon=2.0, privacy="local", bound=[5.0, 5.0]),
    "mean/focus": _mean(epsilon=1.0, focus=["v1"]),
    "mean/wage-lwage": lambda: dplong.winsorized_mean(
        _wages()["lwage"], groups=_wages()["nr"], epsilon=1.0, random_state=SEED
    ),
    "ols/default": lambda: _ols().fit(epsilon=4.0, random_state=SEED),
    "ols/stated": lambda: _ols().fit(epsilon=4.0, scale=[0.5, 0.05, 0.002], random_state=SEED),
    "ols/dependence": lambda: _ols("lwage ~ exper").fit(
        epsilon=4.0,
        scale=AR1(0.5, variance=0.1),
        min_rows=8,
        min_eigenvalue=0.5,
        random_state=SEED,
    ),
    "ols/within": lambda: _ols().fit(epsilon=4.0, estimator="within", random_state=SEED),
    "ols/within-hours": lambda: _ols("lwage ~ exper + hours").fit(
        epsilon=4.0, estimator="within", random_state=SEED
    ),
    "ols/theory": lambda: _ols("lwage ~ exper").fit(
        epsilon=8.0, scale=[0.5, 0.05], variant="theory", random_state=SEED
    ),
    "ols/local": lambda: _ols("lwage ~ exper").fit(
        epsilon=8.0, privacy="local", bound=[5.0, 1.0], random_state=SEED
    ),
    "location/default": lambda: dplong.RandomEffectsLocation.from_formula(
        "lwage ~ 1", _wages(), groups="nr"
    ).fit(epsilon=2.0, random_state=SEED),
    "location/precision": lambda: dplong.RandomEffectsLocation.from_formula(
        "Weight ~ 1", _dietox(), groups="Pig"
    ).fit(epsilon=16.0, weights="precision", random_state=SEED),
    "location/stated": lambda: dplong.RandomEffectsLocation.from_formula(
        "lwage ~ 1", _wages(), groups="nr"
    ).fit(epsilon=2.0, scale=0.3, variance_share=0.0, random_state=SEED),
    "kernel/item": lambda: dplong.PriestleyChao.from_formula(
        "y ~ x", _item_curve(), domain=(0.0, 1.0), bandwidth=0.1, grid=11
    ).fit(epsilon=1.0, error_sd=0.5, amplitude=1.0, random_state=SEED),
    "kernel/item-estimated": lambda: dplong.PriestleyChao.from_formula(
        "y ~ x", _item_curve(), domain=(0.0, 1.0), bandwidth=0.1, grid=11
    ).fit(epsilon=2.0, random_state=SEED),
    "kernel/user": lambda: dplong.PriestleyChao.from_formula(
        "Weight ~ Time", _dietox(), groups="Pig", domain=(1.0, 12.0), bandwidth=1.5, grid=6
    ).fit(epsilon=32.0, random_state=SEED),
    "pooled/default": lambda: _pooled(dplong.PooledOLS).fit(
        epsilon=4.0, max_rows=8, random_state=SEED
    ),
    "pooled/cap-found": lambda: _pooled(dplong.PooledOLS).fit(epsilon=4.0, random_state=SEED),
    "pooled/random-effects-cap-found": lambda: _pooled(dplong.RandomEffects).fit(
        epsilon=8.0, random_state=SEED
    ),
    "pooled/bounds": lambda: _pooled(dplong.PooledOLS, bounds=WAGE_BOUNDS).fit(
        epsilon=4.0, max_rows=8, random_state=SEED
    ),
    "pooled/factor": lambda: _pooled(
        dplong.PooledOLS, "lwage ~ C(occupation, levels=list(range(1, 10))) + exper"
    ).fit(epsilon=8.0, max_rows=8, random_state=SEED),
    "pooled/ptr": lambda: _pooled(
        dplong.PooledOLS,
        "lwage ~ exper + black",
        bounds={"lwage": (-4.0, 5.0), "exper": (0.0, 20.0), "black": (0, 1)},
    ).fit(epsilon=16.0, max_rows=8, method="ptr", ptr_floor=0.1, coef_bound=2.0, random_state=SEED),
    "pooled/random-effects": lambda: _pooled(dplong.RandomEffects).fit(
        epsilon=8.0, max_rows=8, random_state=SEED
    ),
    "pooled/between": lambda: _pooled(dplong.BetweenOLS).fit(epsilon=8.0, random_state=SEED),
    "pooled/within": lambda: _pooled(dplong.PanelOLS, "lwage ~ expersq + hours").fit(
        epsilon=4.0, max_rows=8, random_state=SEED
    ),
    "kernel/nadaraya-watson": lambda: dplong.NadarayaWatson.from_formula(
        "Weight ~ Time", _dietox(), domain=(1, 12), bounds=(0, 150), bandwidth=2.0, grid=6
    ).fit(epsilon=4.0, error_sd=10.0, ptr_floor=0.1, random_state=SEED),
    "mean/poisson": lambda: dplong.PoissonMean.from_formula("hours ~ 1", _wages(), groups="nr").fit(
        epsilon=1.0, random_state=SEED
    ),
    "dask/mean": _dask_mean,
    "dask/ols": _dask_ols,
}


def _numbers(values: Any) -> list[float | None]:
    """Finite floats as they are, NaN as None (JSON has no NaN)."""
    out: list[float | None] = []
    for v in np.asarray(values, dtype=float).ravel():
        out.append(None if math.isnan(v) else float(v))
    return out


def release_record(result: Any) -> dict[str, Any]:
    """What a case pins: estimates, standard errors, the ledger call by call and the notes."""
    return {
        "names": [str(k) for k in result.params.index],
        "params": _numbers(result.params),
        "bse": _numbers(result.bse),
        "ledger": [
            {
                "stage": e.stage,
                "mechanism": e.mechanism,
                "target": e.target,
                "numbers": _numbers([e.epsilon, e.delta, e.rho, e.sensitivity, e.noise_scale]),
            }
            for e in result.privacy.entries
        ],
        "total": _numbers([result.privacy.epsilon, result.privacy.delta]),
        "warnings": list(result.warnings),
    }


def run(name: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release_record(CASES[name]())


if __name__ == "__main__":
    # ``python tests/golden_cases.py [NAME ...]``: the named cases only (the others stay as
    # pinned, so a change meant for one case does not re-pin another's last-digit rounding on
    # a machine whose BLAS differs), or every case
    import sys

    PINNED.parent.mkdir(exist_ok=True)
    names = sys.argv[1:] or list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        raise SystemExit(f"no golden case named {unknown}; the cases: {sorted(CASES)}")
    records = json.loads(PINNED.read_text()) if sys.argv[1:] else {}
    records.update({name: run(name) for name in names})  # a pinned case keeps its place
    PINNED.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(names)} of {len(records)} cases to {PINNED}")
