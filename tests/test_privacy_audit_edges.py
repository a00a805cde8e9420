"""Privacy audits (docs/design §5.4) of the guarantee at its edges (issue 30): three ways for the
data to become the design, each closed, each audited with a POWER check on the old behaviour.

1. **A formula that imputes from other rows.** ``y ~ I(x.fillna(x.mean()))`` used to be
   evaluated on all rows: with 120 of 300 users missing x, user 0's x moved all 120 imputed
   values. Neighbouring data sets D and D' differ in user 0 (x = +FAR or -FAR). Outputs of
   each run: whether the fit was refused, and the released mean of the formula's regressor
   (dplong.winsorized_mean of the per-user means, as in ``test_formula.py``'s audit). Events,
   fixed before the runs: refused / not refused, and the tails {v >= j b}, {v <= -j b} of the
   estimate (b its noise scale in a reference release, j = 0, 1, 2). Now the formula is
   refused on D and on D' alike, before any noise (no event's rate differs); the row-wise
   alternative ``I(x.fillna(0)) + I(x.isna())`` gives every user but user 0 the same
   statistics on D and D' (exact); the old evaluation, through patsy on all rows, moves 121
   users' statistics and is flagged by the same events as the refusal (POWER; the events
   separate D from D' in every run, so 200 runs bound ε from below by about 3).
2. **The command line's CSV cell.** One user's ``?`` in a column of numbers (or an empty cell
   in a column of booleans) used to make pandas read the whole column as text, and the fit was
   refused where it otherwise ran. The decision (exit code) and the labels are deterministic
   functions of the data, so the audit is exact: they must be the same on D and D' (the
   neighbour with the odd cell), and the old reader (``pandas.read_csv``'s inference) must
   give different ones (POWER).
3. **The Parquet categories.** A Parquet file's stored categories used to be the declared
   levels when read without Dask: a level held by user 0 alone became a row of the summary.
   Exact audit of the labels, with and without Dask, with and without ``--levels``; POWER: the
   old reading (``pandas.read_parquet``, its categories taken as levels) labels D and D'
   differently.
4. **The time column.** One user's ``?`` in a CSV's ``time`` column used to make the whole
   column text, so week 10 sorted before week 9 for every user. Exact: the other users' order
   is the same on D and D'; POWER: pandas' inference orders them differently.
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import patsy
import pytest
from audit import EpsilonBound, epsilon_lower_bound, repeat
from session_cache import session_cache

import dplong
from dplong.cli import main
from dplong.exceptions import FormulaError
from dplong.formula import DesignSpec, _sort_key, build_design

pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")

# ---------------------------------------------------------------------------------------------
# 1. A formula that imputes from other rows
# ---------------------------------------------------------------------------------------------

N, T, MISSING, FAR = 300, 3, 120, 1e4
EPS, DELTA, RUNS, CONFIDENCE = 1.0, 1e-3, 200, 0.99
IMPUTED = "y ~ I(x.fillna(x.mean()))"
ROW_WISE = "y ~ I(x.fillna(0)) + I(x.isna())"


def imputation_data(x0: float) -> pd.DataFrame:
    """N users of T rows, y = 0; users 1..MISSING miss every x, the others have x = 0 but user
    0, whose x is ``x0``."""
    user = np.repeat(np.arange(N), T)
    x = np.where(user == 0, x0, 0.0)
    x[(user >= 1) & (user <= MISSING)] = np.nan
    return pd.DataFrame({"user": user, "x": x, "y": np.zeros(N * T)})


IMPUTATION = {"D": imputation_data(FAR), "D'": imputation_data(-FAR)}


def release(X: np.ndarray, codes: np.ndarray, names: list[str], rng: Any) -> Any:
    return dplong.winsorized_mean(
        X, groups=codes, epsilon=EPS, delta=DELTA, scale=1.0, names=names, random_state=rng
    )


def old_design(data: pd.DataFrame, formula: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The old evaluation (deliberately broken): patsy evaluates the term on all rows."""
    _, X = patsy.dmatrices(formula, data, NA_action="drop", return_type="matrix")
    return np.asarray(X)[:, 1:], data["user"].to_numpy(), X.design_info.column_names[1:]


def new_design(data: pd.DataFrame, formula: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    design = build_design(formula, data, groups="user")
    return design.X[:, 1:], design.codes, list(design.columns[1:])


@cache
def step(formula: str) -> float:
    """The noise scale b of the imputed column's release, from one reference release of the
    old design on D (the new one refuses it): fixed before the runs."""
    X, codes, names = old_design(IMPUTATION["D"], formula)
    return float(release(X, codes, names, 0).noise_scale[names[-1]])


@session_cache
def outputs(which: str, formula: str, broken: bool) -> np.ndarray:
    """Runs on D or D': (refused, estimate of the formula's last column) per run."""
    data = IMPUTATION[which]
    rng = np.random.default_rng(7)
    state = rng.bit_generator.state
    try:
        X, codes, names = (old_design if broken else new_design)(data, formula)
    except FormulaError:
        assert rng.bit_generator.state == state  # refused before any noise
        return np.tile([1.0, np.nan], (RUNS, 1))  # the refusal does not depend on the run

    def mechanism(rng: np.random.Generator) -> list[float]:
        return [0.0, float(release(X, codes, names, rng).params.iloc[-1])]

    return repeat(mechanism, RUNS, 3000 + 10 * list(IMPUTATION).index(which) + int(broken))


def events(runs: np.ndarray, b: float) -> np.ndarray:
    refused = runs[:, 0] == 1.0
    tails = [runs[:, 1] >= j * b for j in (0, 1, 2)] + [runs[:, 1] <= -j * b for j in (0, 1, 2)]
    return np.column_stack([refused, ~refused, *tails])  # NaN: False


NAMES = ["refused", "not refused", *(f"v {s} {j}b" for s in (">=", "<=-") for j in (0, 1, 2))]


def imputation_audit(formula: str, broken: bool) -> EpsilonBound:
    b = step(formula)
    first, second = (events(outputs(w, formula, broken), b) for w in IMPUTATION)
    return epsilon_lower_bound(first, second, delta=DELTA, confidence=CONFIDENCE, names=NAMES)


def test_audit_of_the_refused_imputation() -> None:
    """The imputing formula is refused on D and on D', with the same message, before noise:
    the audit finds nothing (no event's rate differs)."""
    messages = set()
    for data in IMPUTATION.values():
        with pytest.raises(FormulaError, match="would depend on other rows") as caught:
            build_design(IMPUTED, data, groups="user")
        messages.add(str(caught.value))
    assert len(messages) == 1
    bound = imputation_audit(IMPUTED, broken=False)
    print(f"refused imputation: {bound} (claimed eps={EPS:g})")
    assert bound.epsilon_lb <= EPS, str(bound)


def test_the_row_wise_imputation_moves_one_users_statistics() -> None:
    """``I(x.fillna(0)) + I(x.isna())``: each user's rows alone make its values, so on D and D'
    every user but user 0 has the very same per-user statistics (then the release is the
    engine's, audited in test_privacy_audit*.py); the old evaluation of the imputing formula
    moves the statistics of the 120 users who miss x (the POWER check below sees it in the
    release)."""
    (X, codes, _), (X2, codes2, _) = (new_design(d, ROW_WISE) for d in IMPUTATION.values())
    assert np.array_equal(codes, codes2)
    others = codes != 0
    np.testing.assert_array_equal(X[others], X2[others])
    assert not np.array_equal(X[~others], X2[~others])
    (X, codes, _), (X2, _, _) = (old_design(d, IMPUTED) for d in IMPUTATION.values())
    moved = np.unique(codes[(X != X2).any(axis=1)])
    assert moved.size == 1 + MISSING


def test_audit_has_power_against_imputation_from_other_rows() -> None:
    """The old evaluation: user 0 moves the 120 imputed values, and the same events see it."""
    bound = imputation_audit(IMPUTED, broken=True)
    print(f"imputation from other rows: {bound} (claimed eps={EPS:g})")
    assert bound.epsilon_lb > EPS and bound.event.startswith("v"), str(bound)


# ---------------------------------------------------------------------------------------------
# 2 and 3. The command line: exact audits of the decision and the labels
# ---------------------------------------------------------------------------------------------

USERS = 200


def cli_panel(rare: str = "a") -> pd.DataFrame:
    """USERS users of 3 rows; ``site`` over a and b, but user 0's first row holds ``rare``."""
    rng = np.random.default_rng(11)
    rows = USERS * 3
    site = np.where(rng.random(rows) < 0.5, "a", "b").astype(object)
    site[0] = rare
    x = rng.normal(size=rows)
    return pd.DataFrame(
        {
            "user": np.repeat(np.arange(USERS), 3),
            "x": x,
            "flag": rng.random(rows) < 0.5,
            "site": site,
            "y": 1.0 + 0.5 * x + rng.normal(size=rows),
        }
    )


def run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue()


def labels(out: str) -> list[str]:
    """The parameter labels of a printed summary (its estimate table's first column)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "estimate" in line and "std err" in line)
    table = []
    for line in lines[start + 2 :]:
        if line.startswith("-"):
            break
        table.append(line.split()[0])
    return table


def outcome(path: Path, formula: str, *options: str) -> tuple[int, list[str]]:
    """What one user could flip: the exit code, and the labels of what is released."""
    argv = ["fit", str(path), "--model", "ols", "--formula", formula, "--groups", "user"]
    code, out = run([*argv, "--epsilon", "4", "--scale", "1", "--seed", "0", "--quiet", *options])
    return code, labels(out) if code == 0 else []


def old_outcome(data: pd.DataFrame, formula: str) -> tuple[int, list[str]]:
    """The old command line's decision and labels: the frame as pandas inferred it, into the
    model (deliberately broken: the schema comes from the rows)."""
    try:
        spec = DesignSpec.from_formula(formula, data)
    except FormulaError:
        return 2, []
    return 0, list(spec.columns)


@pytest.mark.parametrize(
    ("column", "cell", "formula"),
    [("x", "?", "y ~ x"), ("x", "n.a.", "y ~ x"), ("flag", "", "y ~ x + flag")],
    ids=["question mark", "n.a.", "missing boolean"],
)
def test_audit_of_one_users_csv_cell(tmp_path: Path, column: str, cell: str, formula: str) -> None:
    """Exact: D and its neighbour D' (user 0's cell replaced by an odd one) give the same exit
    code and the same labels. POWER: the old reader's schema flips them."""
    data = cli_panel()
    odd = data.astype({column: object})
    odd.loc[0, column] = cell
    paths = {"D": tmp_path / "d.csv", "D'": tmp_path / "d-prime.csv"}
    data.to_csv(paths["D"], index=False)
    odd.to_csv(paths["D'"], index=False)
    new = {which: outcome(path, formula) for which, path in paths.items()}
    assert new["D"] == new["D'"] and new["D"][0] == 0, new
    old = {which: old_outcome(pd.read_csv(path), formula) for which, path in paths.items()}
    assert old["D"] != old["D'"], old  # the old behaviour, flagged by the same comparison


@pytest.mark.parametrize("dask", [False, True], ids=["pandas", "dask"])
def test_audit_of_a_parquet_files_categories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dask: bool
) -> None:
    """Exact: D (user 0 alone holds site "r", stored as a category of the file, as
    ``astype("category")`` stores it) and D' (user 0 at "a": no such category) give the same
    labels, with or without ``--levels``, with or without Dask. POWER: taking the stored
    categories as levels (the old reading without Dask) labels them differently."""
    pytest.importorskip("pyarrow")
    if dask:
        pytest.importorskip("dask.dataframe")
    else:
        monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    paths = {"D": tmp_path / "d.parquet", "D'": tmp_path / "d-prime.parquet"}
    for path, rare in zip(paths.values(), ("r", "a"), strict=True):
        cli_panel(rare).astype({"site": "category"}).to_parquet(path, index=False)
    for options in ([], ["--levels", "site=a,b,r"], ["--levels", "site=a,b"]):
        new = {which: outcome(path, "y ~ x + site", *options) for which, path in paths.items()}
        assert new["D"] == new["D'"], (options, new)
        assert ("site[T.r]" in new["D"][1]) == ("site=a,b,r" in options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dplong.exceptions.DataHolderWarning)
        old = {
            which: old_outcome(pd.read_parquet(path), "y ~ x + site")
            for which, path in paths.items()
        }
    assert old["D"] != old["D'"] and "site[T.r]" in old["D"][1], old


def test_audit_of_one_users_time_cell(tmp_path: Path) -> None:
    """Exact: D and D' (user 0's first ``time`` cell ``?``) order every other user's rows
    alike: the time column is read cell by cell. POWER: pandas' inference reads D''s whole
    column as text, and text orders week 10 before week 9 for every user."""
    weeks = np.tile(np.arange(1, 13), 3)
    data = pd.DataFrame({"user": np.repeat(np.arange(3), 12), "week": weeks, "y": weeks * 1.0})
    odd = data.astype({"week": object})
    odd.loc[0, "week"] = "?"
    paths = {"D": tmp_path / "d.csv", "D'": tmp_path / "d-prime.csv"}
    data.to_csv(paths["D"], index=False)
    odd.to_csv(paths["D'"], index=False)

    def order(frame: pd.DataFrame) -> list[int]:
        """Rows of users 1 and 2 in the order their trajectories are built."""
        others = frame[frame["user"].astype(str) != "0"]
        return list(others["y"].to_numpy()[np.lexsort((_sort_key(others["week"]),))])

    read = {k: dplong.io.read_data(str(p), groups="user", time="week") for k, p in paths.items()}
    assert order(read["D"]) == order(read["D'"]) == sorted(order(read["D"]))
    assert read["D'"]["week"].isna().sum() == 1  # the odd cell alone is missing
    old = {which: order(pd.read_csv(path)) for which, path in paths.items()}
    assert old["D"] != old["D'"], old  # the old behaviour, flagged by the same comparison
