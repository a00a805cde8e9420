"""The cap on a person's rows found privately (:mod:`dplong.privacy.row_cap`): its rule, its
privacy audit, and its place in the pooled family's fits."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from audit import BROKEN_NOISE_FRACTION, check_gaussian_audit

import dplong
from dplong.privacy.budget import statistics_budget
from dplong.privacy.row_cap import CAP_SDS, ROW_CAP_SHARE, RowCap, release_row_cap

#: ρ at which the noise is off: the lattice's exact sum
OFF = 1e300


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (np.full(1000, 4), 4),  # a balanced panel of 4 waves
        (np.ones(1000, dtype=int), 1),  # a cross-section: one row a person
        (np.zeros(1000, dtype=int), 1),  # no rows counts as one
        (np.repeat([3, 8], [950, 50]), 3),  # 5 % above 3 rows: down-weighted
        (np.repeat([3, 8], [850, 150]), 8),  # 15 % above 3: the cap holds them
        (np.arange(1000) % 20 + 1, 10),  # longer than the ceiling: the ceiling
    ],
)
def test_noise_off_the_cap_is_the_fewest_rows_all_but_a_tenth_have_at_most(
    rows: np.ndarray, expected: int
) -> None:
    found = release_row_cap(rows, 10, OFF, np.random.default_rng(0))
    assert found.found and found.value == expected
    # the counts are the persons by their rows, the last cell all with 10 or more
    assert found.counts.sum() == rows.size
    assert found.counts[9] == np.sum(rows >= 10)


def test_a_balanced_panel_of_1000_persons_finds_its_length_at_epsilon_1() -> None:
    """At the ρ a fit at n = 1000, ε = 1 gives the count (a cell's noise sd about 53
    persons), 4 waves: the count above 4 rows is 0 plus noise, which passes its threshold
    (a tenth of n plus CAP_SDS of its sd) with chance at least Φ(2) = 0.977 a draw; the count
    above 3 (1,000) would need noise of 4.5 sds to pass. So 200 draws find 4 in about 195
    (binomial sd 2.1): at least 190 is 2.5 sds below the least expected."""
    rho = statistics_budget(1000, 1.0, 1e-6, [1.0], 0, rows=True).rows_rho
    assert rho > 0.0
    rng = np.random.default_rng(3)
    rows = np.full(1000, 4)
    values = [release_row_cap(rows, 10, rho, rng).value for _ in range(200)]
    assert min(values) == 4
    assert sum(v == 4 for v in values) >= 190
    sd = release_row_cap(rows, 10, rho, rng).sd
    assert sd == pytest.approx(1.0 / math.sqrt(rho), rel=0.01)  # √2 over √(2ρ)
    assert CAP_SDS == 2.0


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [1.0, BROKEN_NOISE_FRACTION])
def test_row_counts_audit_with_power_check(fraction: float) -> None:
    """D (person 0 with one row) and D' (person 0 with 30 rows, the ceiling's cell: the
    vector's worst move, one count down and one up, √2), the released counts projected on the
    move. The cap is post-processing of them. The broken replica (noise at a quarter of its
    sd) must be caught, the correct one must not exceed its claim."""
    rho, delta, runs = 0.5, 1e-3, 3000 if fraction == 1.0 else 1500
    rng = np.random.default_rng(23)
    others = np.repeat([2, 5], 10)
    outputs, noiseless = [], []
    for person in (1, 30):
        rows = np.append(others, person)
        outputs.append(
            np.array(
                [release_row_cap(rows, 10, rho / fraction**2, rng).counts for _ in range(runs)]
            )
        )
        noiseless.append(release_row_cap(rows, 10, OFF, rng).counts)
    move = noiseless[1] - noiseless[0]
    assert np.linalg.norm(move) == pytest.approx(math.sqrt(2.0))
    direction = move / np.linalg.norm(move)
    centres = tuple(float(v @ direction) for v in noiseless)
    sd = math.sqrt(2.0) / math.sqrt(2.0 * rho)  # the stated sensitivity √2
    projected = (outputs[0] @ direction, outputs[1] @ direction)
    check_gaussian_audit(projected, centres, sd, fraction, rho, delta)


def _panel(n: int = 600, years: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    treat = np.repeat(rng.integers(0, 2, n), years).astype(float)
    x = rng.normal(size=n * years)
    y = 1.0 + 0.5 * treat + 0.5 * x + np.repeat(rng.normal(size=n), years)
    y += rng.normal(size=n * years)
    ids = np.repeat(np.arange(n), years)
    return pd.DataFrame({"id": ids, "y": y, "treat": treat, "x": x})


BOUNDS = {"y": (-6.0, 8.0), "treat": (0.0, 1.0), "x": (-4.0, 4.0)}


@pytest.mark.parametrize("cls", [dplong.PooledOLS, dplong.PanelOLS, dplong.RandomEffects])
def test_a_fit_without_max_rows_finds_it_once_and_says_so(cls: type) -> None:
    """Given only ε, the pooled family's fit spends the plan's share on one count of the
    persons by their rows (after the ranges' stage; a random-effects fit's stages share it),
    weighs rows up to the cap found (4 on a balanced panel of 4 at n = 600, ε = 2: the count
    above 4 is 0 plus noise) and its assumptions say so; stated, nothing is spent on it."""
    frame = _panel()
    model = cls.from_formula("y ~ treat + x", frame, groups="id", bounds=BOUNDS)
    plan = model.release_plan(epsilon=2.0, delta=1e-6)
    assert plan.rows_rho > 0.0
    res = model.fit(epsilon=2.0, delta=1e-6, random_state=0)
    counts = [e for e in res.privacy.entries if e.stage == "rows"]
    assert len(counts) == 1
    assert counts[0].rho == pytest.approx(plan.rows_rho)
    assert counts[0].sensitivity >= math.sqrt(2.0)
    assert res.privacy.epsilon <= 2.0 + 1e-9
    assert any(a.startswith("max_rows=4 found privately") for a in res.assumptions)
    stated = model.fit(epsilon=2.0, delta=1e-6, max_rows=4, random_state=0)
    assert not [e for e in stated.privacy.entries if e.stage == "rows"]
    assert not any("found privately" in a for a in stated.assumptions if "max_rows" in a)
    assert model.release_plan(epsilon=2.0, delta=1e-6, max_rows=4).rows_rho == 0.0
    # the share comes off the rest: the Gaussian releases' ρ shrink by ROW_CAP_SHARE
    kept = sum(plan.rho) / sum(model.release_plan(epsilon=2.0, delta=1e-6, max_rows=4).rho)
    assert kept == pytest.approx(1.0 - ROW_CAP_SHARE, rel=0.02)


def test_between_ols_spends_nothing_on_a_cap() -> None:
    """A person is one row of the between estimator (their means): no cap to find."""
    model = dplong.BetweenOLS.from_formula("y ~ treat + x", _panel(), groups="id", bounds=BOUNDS)
    assert model.release_plan(epsilon=2.0, delta=1e-6).rows_rho == 0.0
    res = model.fit(epsilon=2.0, delta=1e-6, random_state=0)
    assert not [e for e in res.privacy.entries if e.stage == "rows"]


def test_a_found_cap_weighs_a_longer_persons_rows_down() -> None:
    """Noise all but off, 92 % of the persons with 2 rows and 8 % with 6: the cap found is 2
    and the fit is pooled OLS with a 6-row person's rows weighted 2/6 (the bounds hold every
    value, so nothing is clipped): the weighted least squares on the same rows."""
    rng = np.random.default_rng(4)
    lengths = np.where(np.arange(500) < 460, 2, 6)
    ids = np.repeat(np.arange(500), lengths)
    x = rng.uniform(-1, 1, ids.size)
    y = 0.5 + 0.3 * x + rng.normal(0, 0.2, ids.size)
    frame = pd.DataFrame({"id": ids, "x": x, "y": y})
    model = dplong.PooledOLS.from_formula(
        "y ~ x", frame, groups="id", bounds={"y": (-3, 3), "x": (-1, 1)}
    )
    res = model.fit(epsilon=1e300, delta=0.5, random_state=0)
    assert any(a.startswith("max_rows=2 found privately") for a in res.assumptions)
    weight = np.minimum(1.0, 2.0 / lengths[ids])
    design = np.column_stack([np.ones(ids.size), x]) * np.sqrt(weight)[:, None]
    expected = np.linalg.lstsq(design, y * np.sqrt(weight), rcond=None)[0]
    np.testing.assert_allclose(res.params.to_numpy(), expected, atol=1e-8)


def test_the_x_x_notes_remedy_names_the_cap_found_only_where_persons_have_fewer_rows() -> None:
    """The note of a floored (or withheld) X'X names the cap where a smaller one could lower
    its noise next to its signal: found privately, where the released counts show more than
    a tenth of the persons with fewer rows (by CAP_SDS sds); on a balanced panel, whose
    persons all weigh the cap, signal and noise scale together and the note does not name it
    (PanelOLS at caps 2 and 8 stated gave identical estimates there); stated, where the
    persons have fewer rows than it (which the fit does not know)."""
    from dplong.models.pooled.results import _withheld_notes

    model = dplong.PooledOLS.from_formula("y ~ treat + x", _panel(), groups="id", bounds=BOUNDS)
    # noise off: 1,000 persons, 300 of them with 3 rows and 700 with 4; or all with 4
    unbalanced = release_row_cap(np.repeat([3, 4], [300, 700]), 10, OFF, np.random.default_rng(0))
    balanced = release_row_cap(np.full(1000, 4), 10, OFF, np.random.default_rng(0))
    assert unbalanced.value == balanced.value == 4
    assert unbalanced.shorter and not balanced.shorter
    (found,) = _withheld_notes(model, pd.Index([]), 1.0, 4, unbalanced)
    assert "State a max_rows below the 4 found privately (more than 10% of the persons" in found
    (level,) = _withheld_notes(model, pd.Index(["x"]), 1.0, 4, balanced)
    assert "max_rows" not in level and level.endswith("raise epsilon or drop a collinear term.")
    (stated,) = _withheld_notes(model, pd.Index(["x"]), 1.0, 4, RowCap(4))
    assert "state max_rows where persons have fewer than its 4 rows" in stated
    assert _withheld_notes(model, pd.Index(["x"]), 1.0, 4) == (stated,)  # no cap object
    assert _withheld_notes(model, pd.Index([]), 0.0, 4, unbalanced) == ()


def test_shorter_is_a_count_beyond_its_noise() -> None:
    """RowCap.shorter turns the cap's rule down: the persons below the cap must be more than
    a tenth of n by CAP_SDS sds of their sum (a sum of value - 1 cells). 150 of 1,000 persons
    below a cap of 4 pass with sds of 10 (threshold 100 + 2 · 10 · √3 = 134.6) and fail with
    sds of 20 (169.3); a stated cap has no counts and is never shorter. The tenth is of the
    public n, not of the counts' noisy total: with 300 more counted in the last cell (its
    noise), a tenth of the total would make the threshold 164.6 and turn the first case."""
    counts = np.array([0.0, 0.0, 150.0, 850.0] + [0.0] * 6)
    assert RowCap(4, True, counts, 10.0, persons=1000).shorter
    assert not RowCap(4, True, counts, 20.0, persons=1000).shorter
    assert not RowCap(4).shorter and not RowCap(1, True, counts, 0.0, persons=1000).shorter
    counts[3] += 300.0
    assert RowCap(4, True, counts, 10.0, persons=1000).shorter


def test_a_cap_found_says_how_many_persons_its_counts_put_above_it() -> None:
    """A cap found privately leaves persons above it, down-weighted; where their number of rows
    goes with the outcome (attrition) the cap moves the target (an audit: 3 against 10 at ε = 1
    and 4 on one panel, intervals apart, only the assumption line saying a cap was found). The
    line says the released share above it and its sd (post-processing of the counts); at the
    ceiling, whose last cell holds every longer panel, it says only that longer ones weigh
    less."""
    counts = np.zeros(10)
    counts[[2, 9]] = [850.0, 150.0]  # 3 rows and 10 or more
    (line,) = RowCap(3, True, counts, 20.0, persons=1000).assumption
    assert "the counts put 15% (sd 5%) of the persons above it" in line
    assert "attrition" in line and "state max_rows" in line
    (top,) = RowCap(10, True, counts, 20.0, persons=1000).assumption
    assert "persons with more rows weigh less" in top and "the counts put" not in top
