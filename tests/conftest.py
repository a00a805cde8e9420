"""The session's directory for :func:`session_cache.session_cache` (made by the controlling
process, which the xdist workers inherit it from, and removed when the session ends)."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from session_cache import DIRECTORY_VARIABLE


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller made it
        return
    os.environ[DIRECTORY_VARIABLE] = tempfile.mkdtemp(prefix="dplong-tests-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    directory = os.environ.pop(DIRECTORY_VARIABLE, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
