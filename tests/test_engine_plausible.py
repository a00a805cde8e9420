"""The plausibility rule (issue 32): a number whose own release says a median missed is withheld.

:func:`dplong.privacy.engine.implausible` reads released numbers only (its privacy side is in
``test_privacy_audit_plausible.py``). Here: what it withholds on synthetic columns and on the
shipped data, over fixed seeds, against the noise-free fit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dplong
from dplong.privacy.engine import release_means
from dplong.privacy.options import ReleaseOptions

#: The noise switched off (ε → ∞, δ = 1/2, a stated scale far beyond every statistic: the
#: projection clips nothing), as benchmarks/shipped_examples.py takes the truth.
OFF = {"epsilon": 1e100, "delta": 0.5, "scale": 1e6}
FOUR = "lwage ~ exper + expersq + union + married"


def _quiet_fit(model, **options):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(**options)


def _options(n: int, epsilon: float, d: int = 1) -> ReleaseOptions:
    return ReleaseOptions.check(n, epsilon=epsilon, delta=None, privacy="central", bound=None, d=d)


def test_a_shared_value_is_released() -> None:
    """Every user at 7.25: the scale stage finds them alone at one value, inside the midpoint's
    cell; that is a shared value, not a miss, and its mean is released."""
    x = np.full((2000, 1), 7.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = release_means(
            x, names=("v",), options=_options(2000, 1.0), rng=np.random.default_rng(3)
        )
    assert abs(res.estimate[0] - 7.25) < 0.05  # the midpoint's cell is 0.14 % wide
    assert not any("own figures" in note for note in res.notes)


@pytest.fixture(scope="module")
def wages() -> pd.DataFrame:
    return dplong.datasets.load_wage_panel()


def test_per_user_ols_misses_are_withheld(wages: pd.DataFrame) -> None:
    """Per-user OLS with 4 regressors at ε = 4 (about 150 users identify all five): before the
    rule 6 of seeds 0-59 released a coefficient off by 1e3 times its noise-free value or more
    (expersq -6.2e65 at seed 14). The four whose scale's median missed far above the users
    (seeds 5, 14, 21, 29) are now NaN with the rule's note and the word "missed" in
    ``withheld``; two midpoint misses remain (the intercept at seeds 22 and 24, -5e8 and
    2e15: every user about D from a midpoint D away, with a scale of about D, which no
    released number tells from users spread that far), so the bound is 2 of 60. Since the tail
    stage's one count (issue 29) seed 26 releases expersq 6.9 with a standard error of 25:
    far off, and honest about it. On the medians' run-by-run draws: none absurd, 8 fits
    withhold a missed column."""
    model = dplong.LongitudinalOLS.from_formula(FOUR, wages, groups="nr", time="year")
    truth = _quiet_fit(model, **OFF).params
    absurd, withheld = 0, 0
    for seed in range(60):
        res = _quiet_fit(model, epsilon=4.0, random_state=seed)
        # issue 32's two marks of an absurd number: beyond 20 of its own standard errors, or
        # 1e6 times the noise-free value (a wide interval around a far estimate is honest)
        error = (res.params - truth).abs()
        off = (error > np.maximum(1e3 * truth.abs(), 5.0)) & (
            (error > 20.0 * res.bse) | (res.params.abs() > 1e6 * truth.abs())
        )
        absurd += int(off.sum())
        if any("own figures" in note for note in res.warnings):
            withheld += 1
            assert set(res.withheld) == {"missed"}
            assert res.pvalues[res.withheld.index].isna().all()  # no p-value for them
    assert absurd <= 2
    assert withheld >= 4


def test_a_missed_expersq_is_withheld(wages: pd.DataFrame) -> None:
    """The issue's example, expersq -6.2e65 (SE 1.3e66) at seed 14 of the medians' earlier
    draws, is no number; with today's draws seed 66 is the first whose expersq alone missed."""
    model = dplong.LongitudinalOLS.from_formula(FOUR, wages, groups="nr", time="year")
    res = _quiet_fit(model, epsilon=4.0, random_state=66)
    assert np.isnan(res.params["expersq"]) and res.withheld["expersq"] == "missed"
    assert np.isfinite(res.params.drop("expersq")).all()
    assert "expersq" in res.summary().as_text()  # listed, without a number


def test_random_effects_location_on_dietox() -> None:
    """The vignette's pig sizes at ε = 8 with nothing else stated, 40 seeds: no released
    number 1e6 times its noise-free value (Group Var's is 0, so it is left out) and none
    beyond 25 of its own SEs (the largest is 20.5, Group Var at seed 12: a variance of 72
    users' moments whose scale the medians put low)."""
    pigs = dplong.datasets.load_dietox()
    pigs["Size"] = pigs["Weight"] - 7.0 * (pigs["Time"] - 1)
    model = dplong.RandomEffectsLocation.from_formula("Size ~ 1", pigs, groups="Pig")
    truth = _quiet_fit(model, min_rows=11, **OFF).params
    for seed in range(40):
        res = _quiet_fit(model, epsilon=8.0, min_rows=11, random_state=seed)
        shown = res.params.notna()
        z = ((res.params - truth).abs() / res.bse)[shown]
        assert (z < 25.0).all(), (seed, z)
        huge = (res.params.abs() > 1e6 * truth.abs())[shown].drop("Group Var", errors="ignore")
        assert not huge.any(), (seed, res.params)


def test_dietox_curve_with_an_estimated_scale() -> None:
    """The user-level curve on its default grid (12 points) with the scale estimated. At
    ε = 16 the plan says the medians miss with probability up to 0.68 even with all 72 pigs:
    every point would be withheld, and the fit is refused before any noise
    (tests/test_planning.py). At the advised ε = 19 (seeds 0-39; 18 until the medians became
    the exponential mechanism, whose miss bound is a little higher) a point is withheld or is a
    number its own SE vouches for: within 20 SEs of the non-private curve (issue 32's bar;
    measured at most 2.4) and never of another magnitude (at most 1.1 times the non-private
    value). Over seeds 0-39 at ε = 16 it had released 204 points off by more than 1e3 kg
    before the plausibility rule; at 18, before the midpoint's miss was read from the scale
    stage's two signs together, seeds 18 and 21 released 1.2e16 and -3.8e8 for 28 and 36 kg."""
    pigs = dplong.datasets.load_dietox()
    model = dplong.PriestleyChao.from_formula(
        "Weight ~ Time", pigs, groups="Pig", domain=(1.0, 12.0), bandwidth=1.0
    )
    truth = _quiet_fit(model, epsilon=1e100, scale=1e8, random_state=0).params
    released = 0
    for seed in range(40):
        res = _quiet_fit(model, epsilon=19.0, random_state=seed)
        shown = res.params.notna()
        released += int(shown.sum())
        assert set(res.withheld[~shown]) <= {"missed", "no users"}
        gap = (res.params - truth).abs()[shown]
        assert (gap < 20.0 * res.bse[shown]).all(), seed
        assert (res.params.abs()[shown] < 10.0 * truth.abs()[shown]).all(), seed
    assert released > 40  # measured 130 of 480: the rule is exercised on released points


def test_dietox_curve_with_a_stated_scale_withholds_a_far_miss() -> None:
    """The user-level curve on six points with a stated scale at ε = 8.5 and 9 (8 is refused
    since the medians became the exponential mechanism), where the plan says the midpoints may
    miss (probability up to 0.5): a point whose midpoint missed by
    eighteen orders of magnitude put all 72 pigs at its interval's edge, but its count of
    users drew 112 (3.8 noise sds high), so its mean sat at 0.65 of the half-width, inside
    the 3-sd edge rule's 0.69, and seed 1 released 1.9e18 kg with a tight interval (an audit
    found 2 of 1,800 points so). The rule now allows 5 sds (engine.MISSED_SDS): every point is
    withheld or of the non-private curve's magnitude, over seeds 0-29 (the rule's chance to
    let such a miss through is then about 0.04 % of misses: a Laplace draw beyond 5 sds)."""
    pigs = dplong.datasets.load_dietox()
    model = dplong.PriestleyChao.from_formula(
        "Weight ~ Time", pigs, groups="Pig", domain=(1.0, 12.0), bandwidth=1.0, grid=6
    )
    truth = _quiet_fit(model, epsilon=1e100, scale=1e8, random_state=0).params
    released = withheld = 0
    for epsilon in (8.5, 9.0):
        for seed in range(30):
            res = _quiet_fit(model, epsilon=epsilon, scale=250.0, random_state=seed)
            shown = res.params.notna()
            released += int(shown.sum())
            withheld += int((~shown).sum())
            assert (res.params.abs()[shown] < 10.0 * truth.abs()[shown]).all(), (epsilon, seed)
    assert released > 100 and withheld > 50  # both sides of the rule are exercised


def test_a_zero_inflated_mean_the_count_cannot_see_is_withheld() -> None:
    """Issue 30: 40 of 2,000 users near 5, the others 0, ε = 1. The count of users off 0 (its
    reach about 60 users) sees none of them, and the column used to be released as 0.000 with
    an interval of ±2e-152 around it, for a mean of 0.1. Now, over seeds 0-29, no release
    shows a number whose interval misses the mean: each is withheld (29 "unseen", 1 "missed"
    measured), or covers."""
    for seed in range(30):
        rng = np.random.default_rng(seed)
        x = np.zeros(2000)
        x[:40] = 5.0 + rng.normal(0.0, 0.5, 40)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dplong.winsorized_mean(x, groups=np.arange(2000), epsilon=1.0, random_state=seed)
        if np.isnan(res.params.iloc[0]):
            assert res.withheld.iloc[0] in {"unseen", "missed"}
            assert np.isnan(res.pvalues.iloc[0])
            continue
        lower, upper = res.conf_int().iloc[0]
        assert lower <= x.mean() <= upper
