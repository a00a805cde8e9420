"""The test harness's cross-worker cache (``session_cache.py``): one computation per key."""

from __future__ import annotations

import numpy as np
import pytest
from session_cache import DIRECTORY_VARIABLE, fingerprint, session_cache

calls: list[tuple[int, float]] = []


def _draws(seed: int, scale: float = 1.0) -> np.ndarray:
    calls.append((seed, scale))
    return scale * np.random.default_rng(seed).standard_normal(5)


def test_a_second_worker_reads_the_first_workers_result(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(tmp_path))
    calls.clear()
    first, second = session_cache(_draws), session_cache(_draws)  # two processes' caches
    a = first(3)
    b = second(3, scale=1.0)  # the same key however the call is spelled
    np.testing.assert_array_equal(a, b)  # bit for bit, read back from disk
    assert calls == [(3, 1.0)]
    second(4)
    assert calls == [(3, 1.0), (4, 1.0)]


def test_a_fingerprint_tells_inputs_apart_and_refuses_nameless_functions() -> None:
    assert fingerprint(np.zeros(3)) != fingerprint(np.zeros(4))
    assert fingerprint(np.zeros(3)) != fingerprint(np.zeros(3, dtype=np.int64))
    assert fingerprint({"a": 1.0}) != fingerprint({"a": 1.0000000000000002})
    assert fingerprint(_draws) == f"{__name__}._draws"
    with pytest.raises(TypeError, match="no stable name"):
        fingerprint(lambda x: x)
