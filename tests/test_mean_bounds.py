"""``winsorized_mean(bounds=...)``: public ranges of the users' values, as the peers take them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from untouchable import Untouchable

import dplong
from dplong.exceptions import ParameterError
from dplong.models.mean import ColumnMean
from dplong.models.poisson import PoissonMean

pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")

N, T, SHARE = 1000, 4, 0.02


def visits(seed: int, n: int = N, share: float = SHARE) -> tuple[np.ndarray, np.ndarray]:
    """A 0/1 outcome of T rows for each of n users, and their ids."""
    users = np.repeat(np.arange(n), T)
    return (np.random.default_rng(seed).uniform(size=users.size) < share).astype(float), users


def test_a_rare_share_given_its_range_is_released_and_covered() -> None:
    """A 0/1 outcome of share 0.02 at 1,000 users and ε = 1: given only ε, every release is
    withheld (most users are 0 and the count sees too few others for a scale), as the
    reason says. Given its natural range (0, 1), nothing is spent on finding the data (a
    count and the mean, as the peers' bounded mean), and the interval, whose sampling sd is
    the Bhatia-Davis bound √(μ(1 - μ)) at the share's plausible end, covered the users' mean
    in 200 of 200 releases (benchmarks/peers.py --parts bounded). 20 seeds here: at a coverage
    of 0.95, 17 or more cover with chance 0.98."""
    y, users = visits(0)
    default = dplong.winsorized_mean(y, groups=users, epsilon=1.0, random_state=0)
    assert np.isnan(default.params.iloc[0]) and default.warnings
    covered = 0
    for seed in range(20):
        y, users = visits(seed)
        truth = pd.Series(y).groupby(users).mean().mean()
        res = dplong.winsorized_mean(y, groups=users, epsilon=1.0, bounds=(0, 1), random_state=seed)
        lo, hi = res.conf_int().iloc[0]
        covered += bool(lo <= truth <= hi)
        # the mean lies in the range: the estimate and the interval stop at its ends, and
        # "share = 0" is a test on its boundary, which gets no p-value (as a variance's)
        assert 0.0 <= lo <= res.params.iloc[0] <= hi <= 1.0 and np.isnan(res.pvalues.iloc[0])
        assert [e.stage for e in res.privacy.entries] == ["count", "refinement", "mean"]
        assert res.privacy.epsilon <= 1.0 + 1e-12
        # between the users' own sd (Bhatia-Davis bounds it from above) and Popoviciu's
        # (b - a)/2 = 1/2, which it replaces
        users_sd = pd.Series(y).groupby(users).mean().std() / np.sqrt(N)
        assert users_sd < res.sampling_sd.iloc[0] < 0.25 / np.sqrt(N)
    assert covered >= 17


def test_the_range_replaces_popovicius_spread_only_where_the_mean_allows() -> None:
    """A share near 1/2 keeps (b - a)/2: the Bhatia-Davis bound (μ - a)(b - μ) is largest
    there, and at the mean's plausible end nearest the middle it is the same."""
    y, users = visits(1, n=2000, share=0.5)
    res = dplong.winsorized_mean(y, groups=users, epsilon=1.0, bounds=(0, 1), random_state=1)
    assert res.sampling_sd.iloc[0] == pytest.approx(0.5 / np.sqrt(res.users.iloc[0]), rel=1e-12)


def test_ranges_by_column_and_level() -> None:
    """A mapping names each column's range; with ``by``, every level's columns take their
    column's; the summary states them."""
    y, users = visits(2)
    frame = pd.DataFrame(
        {"visit": y, "cost": 40.0 * y + 5.0, "arm": np.repeat(np.arange(N) % 2, T)}
    )
    res = dplong.winsorized_mean(
        frame,
        groups=users,
        by="arm",
        levels=[0, 1],
        epsilon=2.0,
        bounds={"visit": (0, 1), "cost": (0, 100)},
        random_state=2,
    )
    assert list(res.params.index) == ["visit[arm=0]", "cost[arm=0]", "visit[arm=1]", "cost[arm=1]"]
    assert (res.params.between(0, 100)).all()
    assert "visit in [0, 1], cost in [0, 100]" in " ".join(str(res.summary()).split())
    assert {e.stage for e in res.privacy.entries} == {"count", "refinement", "mean"}


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"bounds": (1, 0)}, r"bounds\['x'\] must be finite with low < high"),
        ({"bounds": (0, np.inf)}, "must be finite"),
        ({"bounds": "x"}, "bounds must read COL=LO,HI"),
        ({"bounds": (0, 1e200)}, r"bounds\['x'\] must lie within ±1e\+100"),
        # the noise lattice's step would underflow (it divided by zero after the count)
        ({"bounds": (0, 5e-324)}, r"bounds\['x'\] must be at least 2e-292 wide"),
        ({"bounds": {"y": (0, 1)}}, r"bounds names 'y', which is not a column of the averaged"),
        ({"bounds": {}}, r"no range for \['x'\]"),
        ({"bounds": (0, 1), "scale": 0.1}, "give bounds= or scale"),
        ({"bounds": (0, 1), "lower": 0.0}, "give bounds= or lower"),
        ({"bounds": (0, 1), "tail": "exponential"}, "give bounds= or tail"),
        ({"bounds": (0, 1), "privacy": "local", "bound": 1.0}, "the local model takes bound="),
        ({"bounds": (0, 1), "variant": "theory"}, "default engine"),
    ],
)
def test_bad_ranges_are_refused_before_any_noise(options: dict[str, object], match: str) -> None:
    y, users = visits(3)
    with pytest.raises(ParameterError, match=match):
        dplong.winsorized_mean(y, groups=users, epsilon=1.0, random_state=Untouchable(), **options)


def test_the_formula_models_and_the_command_line_take_the_range(tmp_path: object) -> None:
    """``ColumnMean.from_formula(bounds=...)`` and ``dplong fit --model mean --bounds``: a fact
    of the data, as the pooled models take theirs. ``PoissonMean``'s own support and tail
    give way to a stated range (they shape a search the range makes needless)."""
    y, users = visits(4)
    frame = pd.DataFrame({"id": users, "visit": y})
    model = ColumnMean.from_formula("visit ~ 1", frame, groups="id", bounds={"visit": (0, 1)})
    res = model.fit(epsilon=1.0, random_state=4)
    assert [e.stage for e in res.privacy.entries] == ["count", "refinement", "mean"]
    counts = PoissonMean.from_formula("visit ~ 1", frame, groups="id", bounds=(0, 1))
    assert [e.stage for e in counts.fit(epsilon=1.0, random_state=4).privacy.entries] == [
        "count",
        "refinement",
        "mean",
    ]
    path = f"{tmp_path}/visits.csv"
    frame.to_csv(path, index=False)
    command = [sys.executable, "-m", "dplong", "fit", path, "--model", "mean", "--formula",
               "visit ~ 1", "--groups", "id", "--epsilon", "1", "--bounds", "visit=0,1",
               "--seed", "4"]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "visit in [0, 1]" in out


def test_the_sum_is_read_from_a_rough_mean() -> None:
    """About the range's middle, the count's error multiplies the mean's distance from it
    (0.48 for a share of 0.02 in (0, 1)): over half the privacy variance. A rough mean (a
    tenth of ε) anchors the sum instead, each user without a value adding the anchor's offset
    so that n, public, carries it: the released noise is then the sum's own, within a few %
    (the count's error times the rough mean's). At a column's n·ε below 200 the rough mean is
    too noisy to anchor on, and the plan keeps a count and the mean."""
    y, users = visits(5)
    res = dplong.winsorized_mean(y, groups=users, epsilon=1.0, bounds=(0, 1), random_state=5)
    (mean,) = [e for e in res.privacy.entries if e.stage == "mean"]
    own = mean.noise_scale * np.sqrt(2.0) / res.users.iloc[0]  # the Laplace sum's sd, per user
    assert own <= res.noise_sd.iloc[0] <= 1.05 * own
    y, users = visits(5, n=150)
    small = dplong.winsorized_mean(y, groups=users, epsilon=1.0, bounds=(0, 1), random_state=5)
    assert [e.stage for e in small.privacy.entries] == ["count", "mean"]


def test_an_epsilon_too_small_for_the_count_is_refused_before_any_noise() -> None:
    """At ε = 0.01 and 1,000 users the count of the users with a value has noise sd 471: it
    cannot tell them from none, and 41 of 50 releases were withheld after spending the budget,
    while the plan said "released" down to ε = 0.00014 (an audit). Refused first now, with the
    ε the plan finds (the fit's and the plan's rule are one)."""
    y, users = visits(6, share=0.3)
    with pytest.raises(dplong.exceptions.PrivacyParameterError, match="could not tell"):
        dplong.winsorized_mean(
            y, groups=users, epsilon=0.01, bounds=(0, 1), random_state=Untouchable()
        )
    smallest = dplong.plan("y ~ 1", model="mean", n=N, epsilon=1.0, bounds={"y": (0, 1)})
    assert 0.01 < smallest.smallest_epsilon < 0.03
    res = dplong.winsorized_mean(y, groups=users, epsilon=0.03, bounds=(0, 1), random_state=6)
    assert not np.isnan(res.params.iloc[0])
