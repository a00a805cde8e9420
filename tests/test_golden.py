"""Every release is pinned: the same data, options and seed give the same numbers, ledger and notes.

The cases (``tests/golden_cases.py``) cover every model (the pooled family, ePTR and the Poisson
mean included), the central and local models, stated and estimated scales, the paper's variant
and Dask. Floating-point results are compared to a relative 1e-9: far above the last-bit
differences of another BLAS or numpy release, far below any change of mechanism (a different
noise draw, stage budget or radius moves numbers by 1e-3 or more).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from golden_cases import CASES, PINNED, run

PINNED_RECORDS: dict[str, Any] = json.loads(PINNED.read_text())
RTOL = 1e-9


def _close(got: list[float | None], want: list[float | None], what: str) -> None:
    assert len(got) == len(want), what
    nan_got = np.array([g is None for g in got])
    nan_want = np.array([w is None for w in want])
    np.testing.assert_array_equal(nan_got, nan_want, err_msg=f"{what}: withheld entries differ")
    a = np.array([g for g in got if g is not None], dtype=float)
    b = np.array([w for w in want if w is not None], dtype=float)
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=0.0, err_msg=what)


def test_every_case_is_pinned() -> None:
    assert sorted(PINNED_RECORDS) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_release_is_unchanged(name: str) -> None:
    if name.startswith("dask/"):
        pytest.importorskip("dask.dataframe")
    got, want = run(name), PINNED_RECORDS[name]
    assert got["names"] == want["names"]
    _close(got["params"], want["params"], "params")
    _close(got["bse"], want["bse"], "bse")
    assert [(e["stage"], e["mechanism"], e["target"]) for e in got["ledger"]] == [
        (e["stage"], e["mechanism"], e["target"]) for e in want["ledger"]
    ]
    for i, (g, w) in enumerate(zip(got["ledger"], want["ledger"], strict=True)):
        _close(g["numbers"], w["numbers"], f"ledger entry {i} ({w['stage']})")
    _close(got["total"], want["total"], "ledger total")
    assert got["warnings"] == want["warnings"]
