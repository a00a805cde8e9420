"""Privacy audit of the plausibility rule (:func:`dplong.privacy.engine.implausible`, issue 32).

The rule withholds a column from released numbers only, so it is post-processing: sensitivity
0, no budget or noise of its own (the final stage's split over the columns it leaves is a
post-processing of released numbers too, as PLAN's by radius). A statistical audit would
find nothing to measure, so the audit shows the two facts that make it so, on a release where
the rule fires (the wage panel's per-user OLS with 4 regressors at ε = 4, seed 28: expersq's
scale median missed far above the users, and the rule withholds expersq only):

1. every input of the decision is a released number — the midpoint and the scale the results
   carry, the bad-event bound they report (less γ), and the scale stage's verdict that the
   users sit at one value (its private count, named in a released note) — and the decision
   recomputed from those released numbers is the one taken;
2. the rule draws nothing of its own: with it switched off, the same seed draws the same
   stages up to the final one; with it on, the column it withholds takes no share of the final
   stage (a budget split of released numbers, as PLAN's), so the other columns get that share
   and the ledger totals the same request either way. Off, the column shows its absurd number.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dplong
import dplong.models.release_blocks as release_blocks
import dplong.privacy.engine as engine
from dplong.privacy.engine import Release

pytestmark = pytest.mark.filterwarnings("ignore::dplong.exceptions.DplongWarning")

FORMULA = "lwage ~ exper + expersq + union + married"


def _fit(
    monkeypatch: pytest.MonkeyPatch, rule: Any
) -> tuple[Any, list[Release], list[tuple[dict[str, Any], Any]]]:
    """The seed-28 fit with ``rule`` as the engine's plausibility rule; its releases and the
    rule's inputs and outputs."""
    releases: list[Release] = []
    calls: list[tuple[dict[str, Any], Any]] = []
    release_means = release_blocks.release_means

    def recorded(*args: Any, **kwargs: Any) -> Release:
        release = release_means(*args, **kwargs)
        releases.append(release)
        return release

    def spied(**inputs: Any) -> Any:
        out = rule(**inputs)
        calls.append((inputs, out))
        return out

    monkeypatch.setattr(release_blocks, "release_means", recorded)
    monkeypatch.setattr(engine, "implausible", spied)
    wages = dplong.datasets.load_wage_panel()
    model = dplong.LongitudinalOLS.from_formula(FORMULA, wages, groups="nr", time="year")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = model.fit(epsilon=4.0, random_state=28)
    return res, releases, calls


def test_the_decision_reads_released_numbers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    res, releases, calls = _fit(monkeypatch, engine.implausible)
    assert len(calls) == len(releases) == 1
    (release,), ((inputs, decided),) = releases, calls
    midpoint, sd, alone, miss = (inputs[k] for k in ("midpoint", "sd", "alone", "miss"))
    gamma = res.gamma * (2.0 if release.variant.endswith("(refined)") else 1.0)
    # each input is a released figure (the Release's, which the results are built from)
    np.testing.assert_array_equal(midpoint, release.midpoint)
    np.testing.assert_allclose(sd**2, release.scale, rtol=1e-15)
    np.testing.assert_allclose(np.minimum(gamma + miss, 1.0), release.bad_events, rtol=1e-12)
    np.testing.assert_allclose(release.bad_events, res.bad_events.to_numpy(), rtol=0)
    # the scale stage's verdict: a post-processing of its private count, released as a note
    # (on the columns shown) or as this rule's withholding (on those it withheld)
    said = {
        name
        for note in release.notes
        if "sees no users apart" in note
        for name in release.names
        if repr(name) in note
    }
    assert {release.names[j] for j in np.flatnonzero(alone)} <= said | {
        release.names[j] for j in np.flatnonzero(decided)
    }
    # the decision, recomputed from released numbers, is the one taken — and it fired
    again = engine.implausible(
        midpoint=release.midpoint,
        sd=np.sqrt(release.scale),
        alone=alone,
        miss=res.bad_events.to_numpy() - gamma,
    )
    np.testing.assert_array_equal(again, decided)
    assert decided.tolist() == [False, False, True, False, False]
    assert np.isnan(res.params["expersq"]) and res.withheld["expersq"] == "missed"


def test_the_rule_draws_nothing_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    ruled, _, _ = _fit(monkeypatch, engine.implausible)
    free, _, _ = _fit(monkeypatch, lambda **inputs: np.zeros(inputs["alone"].shape, dtype=bool))
    final = ("tail", "mean", "second moment")

    def split(res: Any) -> tuple[list[Any], list[str]]:
        entries = res.privacy.entries
        return [e for e in entries if e.stage not in final], [
            e.target for e in entries if e.stage == "mean"
        ]

    (early, ruled_means), (free_early, free_means) = split(ruled), split(free)
    assert early == free_early  # the same draws before the final stage, at the same ε
    assert "expersq" in free_means and ruled_means == [m for m in free_means if m != "expersq"]
    # the request spent either way: the withheld column's share went to the others
    assert ruled.privacy.epsilon == pytest.approx(free.privacy.epsilon, rel=1e-9)
    shown = ruled.params.notna()
    assert not shown["expersq"] and shown.sum() == 4
    # less noise wherever both show a number (the free fit's far-off column takes most of its
    # final stage, and a column left with too little can land at its interval's edge)
    both = shown & free.noise_sd.notna()
    assert both.sum() >= 3 and np.all(ruled.noise_sd[both] < free.noise_sd[both])
    # withheld: the number that the rule kept from the table (-3.3e151 on the earlier draws)
    assert abs(free.params["expersq"]) > 1e60
