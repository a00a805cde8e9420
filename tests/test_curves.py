"""User-level curves (``models/curves.py``): each user's own curve is their statistic.

Reference test (docs/design §5.2): with the noise off, the release equals the mean over the
users who cover each grid point of their curves computed plainly (``kernel_cases.user_curve``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from kernel_cases import (
    KERNELS,
    NOISE_OFF,
    growth_panel,
    items,
    user_curve,
)
from untouchable import Untouchable

import dplong
from dplong.exceptions import DplongWarning, ParameterError
from dplong.kernels import get_kernel
from dplong.models.curves import user_curves


class TestReference:
    @pytest.mark.parametrize("kernel", KERNELS)
    def test_user_level_equals_mean_of_users_curves(self, kernel: str) -> None:
        df = growth_panel()
        grid = np.linspace(0.0, 2.0, 9)
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", df, groups="user", domain=(0, 2), kernel=kernel, bandwidth=0.3, grid=grid
        )
        # users cover different x ranges, so few have a curve at some points: the fit says so
        with pytest.warns(DplongWarning, match="have a statistic of their own"):
            res = model.fit(scale=1e6, **NOISE_OFF)
        assert res.nobs_users == 40 and res.level == "user"
        curves = []
        for user in range(40):  # each user's own curve, rows with a response, sorted by x
            rows = df[(df["user"] == user) & df["y"].notna()]
            if rows.empty:  # user 5: no row left, no curve anywhere
                curves.append(np.full(grid.size, np.nan))
                continue
            x, y = rows["x"].to_numpy(), rows["y"].to_numpy()
            curves.append(user_curve(x, y, grid, 0.3, kernel))
        curves_ = np.array(curves)
        # the mean over the users whose visits cover each grid point, counted exactly (noise
        # off): per grid point, not a fixed set of users
        np.testing.assert_allclose(
            res.params.to_numpy(), np.nanmean(curves_, axis=0), rtol=0, atol=1e-10
        )
        np.testing.assert_array_equal(res.users.to_numpy(), np.isfinite(curves_).sum(axis=0))


def test_rows_outside_the_domain_are_dropped() -> None:
    df = items(n=300, seed=17, lo=0.0, hi=1.0).assign(user=lambda d: np.arange(len(d)) % 30)

    def build(data: pd.DataFrame) -> dplong.PriestleyChao:
        return dplong.PriestleyChao.from_formula(
            "y ~ x", data, groups="user", domain=(0, 1), bandwidth=0.1
        )

    # user-level the x are private: a row outside the public domain is a missing row
    later = (df.index % 7 == 0) & (df.index >= 30)  # not a user's first row
    moved = df.assign(x=df["x"].where(~later, 2.0))
    model = build(moved)
    inside = build(moved[moved["x"] <= 1.0])
    assert model.nobs_users == inside.nobs_users == 30
    np.testing.assert_array_equal(model._x, inside._x)
    np.testing.assert_array_equal(model._design.codes, inside._design.codes)


def test_a_users_rows_at_one_time_count_alike_whatever_their_order() -> None:
    """Each user measured twice at each of five times (the truth minus 1, then plus 1): a
    user's rows at one x share the gap to their next x, as item-level units at one design
    point do. Every tie but the last had weight 0, so the row order chose which copy counted,
    and the curve sat 1 off the truth either way with a band of ±0.002 and no warning (an
    audit). Now both orders give the same release, whose band holds the non-private mean
    curve of the users' tie-averaged rows (the estimand: no row order in it)."""
    rng = np.random.default_rng(0)
    n, times = 3000, np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    copies = [
        pd.DataFrame(
            {
                "u": np.repeat(np.arange(n), 5),
                "x": np.tile(times, n),
                "y": 2 * np.tile(times, n) + shift + rng.normal(0, 0.1, 5 * n),
            }
        )
        for shift in (-1.0, 1.0)
    ]
    grid = np.array([0.3, 0.5, 0.7])
    releases = []
    for frame in (pd.concat(copies, ignore_index=True), pd.concat(copies[::-1], ignore_index=True)):
        model = dplong.PriestleyChao.from_formula(
            "y ~ x", frame, groups="u", domain=(0, 1), bandwidth=0.2, grid=grid
        )
        releases.append(model.fit(epsilon=4.0, random_state=0))
    pd.testing.assert_series_equal(releases[0].params, releases[1].params)
    averaged = pd.concat(copies).groupby(["u", "x"], as_index=False)["y"].mean()
    reference = np.nanmean(
        user_curves(
            averaged["x"].to_numpy(),
            averaged["y"].to_numpy(),
            averaged["u"].to_numpy(),
            n,
            grid,
            get_kernel("gaussian"),
            0.2,
        ),
        axis=0,
    )
    band = releases[0].conf_int()
    assert ((band["lower"] <= reference) & (reference <= band["upper"])).all()


def test_a_local_curve_with_more_grid_points_than_users_withholds_the_empty_ones() -> None:
    """The local model asks each user about one grid point: 2 users over 5 points leave some
    groups with nobody, whose mean divided by zero (a bare ZeroDivisionError, an audit).
    Such a column is withheld as one whose count cannot tell its users from none is (the
    design of tiny local columns), and the fit spends its ε on the others."""
    frame = pd.DataFrame(
        {"id": [0, 0, 0, 1, 1, 1], "x": [0.1, 0.5, 0.9, 0.2, 0.6, 0.8], "y": [1.0, 2, 3, 1, 2, 3]}
    )
    model = dplong.PriestleyChao.from_formula(
        "y ~ x", frame, groups="id", domain=(0, 1), bandwidth=0.1, grid=5
    )
    with pytest.warns(DplongWarning, match="No estimate"):
        res = model.fit(epsilon=1.0, privacy="local", bound=2.0, random_state=0)
    assert res.params.isna().all() and set(res.withheld) == {"no users"}
    assert res.privacy.epsilon <= 1.0


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
@pytest.mark.parametrize("user_level", [True, False], ids=["user-level", "item-level"])
def test_close_grid_points_get_distinct_labels(user_level: bool) -> None:
    """Grid points that agree to six digits (0.1234567 and 0.1234568) were one label,
    ``x=0.123457``, for two columns: in the ledger, the notes and the summary's rows. The
    labels now take as many digits as keep the points apart."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, 8000)
    frame = pd.DataFrame(
        {"x": x, "y": np.sin(2 * np.pi * x) + rng.normal(0.0, 0.3, x.size),
         "u": np.repeat(np.arange(2000), 4)}
    )  # fmt: skip
    grid = np.array([0.1234567, 0.1234568, 0.5])
    assert dplong.summary.point_labels(np.array([0.3, 0.30000000000000004])) == [
        "0.3",
        "0.30000000000000004",
    ]  # each double's shortest text where 16 digits do not tell them apart
    groups = {"groups": "u"} if user_level else {}
    res = dplong.PriestleyChao.from_formula(
        "y ~ x", frame, domain=(0.0, 1.0), bandwidth=0.1, grid=grid, **groups
    ).fit(epsilon=2.0, random_state=0)
    labels = ["0.1234567", "0.1234568", "0.5"]
    assert [line.split()[0] for line in str(res.summary()).splitlines() if line.split()
            and line.split()[0] in labels] == labels  # fmt: skip
    if user_level:  # the item-level ledger names the response, not the points
        targets = {entry.target for entry in res.privacy.entries}
        assert {f"x={label}" for label in labels} <= targets


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_curves_restrictions_name_its_points_as_x_equals() -> None:
    """A restriction names a grid point ``x=<point>``, as the summary labels it. The points'
    own texts made numbers of names: on ``np.linspace(0, 1, 6)`` (its 0.6 the double
    0.6000000000000001), ``"0.6 - 0.2 = 0"`` read 0.6 as a constant and tested ``-θ(0.2) =
    -0.6`` without a word; a bare number is now a constant, and a text naming no point is
    refused."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(2000), 8)
    x = rng.uniform(0.0, 1.0, ids.size)
    frame = pd.DataFrame({"id": ids, "x": x, "y": np.sin(3 * x) + rng.normal(0, 0.3, x.size)})
    res = dplong.PriestleyChao.from_formula(
        "y ~ x", frame, groups="id", domain=(0, 1), bandwidth=0.2, grid=np.linspace(0, 1, 6)
    ).fit(epsilon=4.0, random_state=0)
    theta = res.params.to_numpy()
    difference = res.t_test("x=0.6 - x=0.2 = 0")
    assert difference.effect[0] == pytest.approx(theta[3] - theta[1], abs=1e-12)
    shifted = res.t_test("x=0 = 0.4")  # 0.4 a constant, though a point's text too
    assert shifted.effect[0] == pytest.approx(theta[0], abs=1e-12)
    assert shifted.statistic[0] == pytest.approx((theta[0] - 0.4) / shifted.sd[0])
    for numbers in ("0.6 - 0.2 = 0", "0.6 = 0"):
        with pytest.raises(ParameterError, match=r"\['x=0', 'x=0.2', .*'x=1 = 0'"):
            res.t_test(numbers)


def _probability_panel(n: int, seed: int) -> pd.DataFrame:
    """A 0/1 outcome whose probability runs from 0.02 to 0.98 along x (logistic), 8 visits
    a user at uniform x: an audit's case."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(n), 8)
    x = rng.uniform(0.0, 1.0, ids.size)
    y = (rng.uniform(size=x.size) < 1.0 / (1.0 + np.exp(-10.0 * (x - 0.5)))).astype(float)
    return pd.DataFrame({"id": ids, "x": x, "y": y})


@pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")
def test_a_probability_curve_given_its_range() -> None:
    """A user-level curve of a 0/1 outcome, 1,000 users, ε = 1, given only ε: the users'
    curve values are mostly 0 near x = 0.1 and 1 near 0.9, and the engine's interval, sized
    on that spike, missed the end points in every fit (bands about 0.001 wide, warned), while
    the middle's bands spanned ±1.3 for a probability (an audit). Given the response's range
    ``bounds=(0, 1)``, which every user's curve value lies in, nothing is clipped and nothing
    spent on finding the data: over 40 fits each point was covered in 0.95-1.00 of them with
    half-widths 0.03-0.04 (docs/accuracy.md). Here 10 fits: at a coverage of 0.95 per point,
    all five points are covered in 8 or more with chance 0.99."""
    grid = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    covered = np.zeros(grid.size)
    for seed in range(10):
        frame = _probability_panel(1000, seed)
        ordered = frame.sort_values(["id", "x"])
        truth = np.nanmean(
            user_curves(ordered.x.to_numpy(), ordered.y.to_numpy(), ordered.id.to_numpy(), 1000,
                        grid, get_kernel("gaussian"), 0.1),
            axis=0,
        )  # fmt: skip
        res = dplong.PriestleyChao.from_formula(
            "y ~ x", frame, groups="id", domain=(0, 1), bandwidth=0.1, grid=grid, bounds=(0, 1)
        ).fit(epsilon=1.0, random_state=seed)
        curve = res.curve()
        covered += (curve.lower <= truth) & (truth <= curve.upper)
        assert (curve.upper - curve.lower < 0.2).all()  # a probability's band, not ±1.3
        # nothing located: a count, a rough mean to read each point's sum from, the means
        assert {e.stage for e in res.privacy.entries} == {"count", "refinement", "mean"}
        assert any("Public range of the response: [0, 1]" in a for a in res.assumptions)
    assert (covered >= 8).all(), covered


@pytest.mark.parametrize(
    ("where", "options", "match"),
    [
        ({}, {}, "user-level only"),
        ({"groups": "id"}, {"scale": 0.1}, "give bounds= or scale"),
        ({"groups": "id"}, {"privacy": "local", "bound": 1.0}, "the local model takes bound="),
    ],
)
def test_a_curves_range_is_refused_where_it_cannot_stand(
    where: dict[str, str], options: dict[str, object], match: str
) -> None:
    frame = _probability_panel(300, 0)
    with pytest.raises(dplong.exceptions.ParameterError, match=match):
        dplong.PriestleyChao.from_formula(
            "y ~ x", frame, domain=(0, 1), bandwidth=0.1, grid=5, bounds=(0, 1), **where
        ).fit(epsilon=1.0, random_state=Untouchable(), **options)


def test_a_last_visit_counts_like_the_others_and_is_not_carried_to_the_end() -> None:
    """Half the users are weighed at 0, 0.25, ..., 1 with y = x, the others at 0, 0.25 and 0.5
    only, with y = 1 + x. The last visit weighs the spacing before it: at the domain's end the
    stayers' last row counts as their others do (the Epanechnikov kernel of bandwidth 0.25
    reaches no other row from x = 1, so the curve there is exactly 1; weighed by the time to
    the end, that row weighed 0 and nobody had a curve at 1, NaN), and the leavers' last row
    at 0.5 weighs as their earlier rows (the mean there is of 0.5 and 1.5); a bandwidth past
    it they count no longer."""
    n = 20
    stay = [(u, x) for u in range(n // 2) for x in np.linspace(0.0, 1.0, 5)]
    leave = [(u, x) for u in range(n // 2, n) for x in np.linspace(0.0, 0.5, 3)]
    frame = pd.DataFrame(stay + leave, columns=["user", "x"])
    frame["y"] = frame["x"] + (frame["user"] >= n // 2)
    model = dplong.PriestleyChao.from_formula(
        "y ~ x", frame, groups="user", domain=(0, 1), kernel="epanechnikov", bandwidth=0.25,
        grid=[0.5, 0.75, 1.0],
    )  # fmt: skip
    with pytest.warns(DplongWarning, match="have a statistic of their own"):
        res = model.fit(scale=1e6, **NOISE_OFF)
    np.testing.assert_allclose(res.params.to_numpy(), [1.0, 0.75, 1.0], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(res.users.to_numpy(), [n, n // 2, n // 2])
