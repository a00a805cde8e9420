"""A cache of expensive, deterministic test computations shared by the session's workers.

An audit's runs (thousands of seeded releases on one data set) feed several tests: the pairs
that share a data set, and the tightness and power checks. ``functools.cache`` shares them
within one process only, and ``pytest -n 2 --dist worksteal`` hands the tests of one module to
both workers wherever it splits or steals a queue, so each worker drew the same runs again.
:func:`session_cache` keeps the result on disk for the rest of the session: the first worker to
ask computes it under a lock, the others wait for it and read it back (pickle: arrays bit for
bit). Only speed changes: the key is the function's module, name and a fingerprint of its
arguments, the function is a deterministic function of them (fixed seeds), and the directory is
the session's own (``conftest.py`` makes it and removes it), so nothing carries over from one
run of the suite, or one version of the package, to the next.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

try:
    import fcntl
except ImportError:  # no POSIX locks (Windows): each worker computes its own, as before
    fcntl = None  # type: ignore[assignment]

__all__ = ["DIRECTORY_VARIABLE", "fingerprint", "session_cache"]

#: The environment variable naming the session's directory (set by ``conftest.py`` in the
#: controlling process, before the workers start: they inherit it).
DIRECTORY_VARIABLE = "DPLONG_TEST_SESSION_CACHE"

F = TypeVar("F", bound=Callable[..., Any])


def fingerprint(value: Any) -> str:
    """A text that determines ``value``: arrays by dtype, shape and bytes, dataclasses by type
    and fields, functions by module and qualified name (a lambda or a closure is refused: its
    name does not tell it apart from another)."""
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"array({value.dtype.str},{value.shape},{digest})"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ",".join(
            f"{f.name}={fingerprint(getattr(value, f.name))}" for f in dataclasses.fields(value)
        )
        return f"{type(value).__module__}.{type(value).__qualname__}({fields})"
    if isinstance(value, dict):
        return "{" + ",".join(f"{fingerprint(k)}:{fingerprint(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return f"{type(value).__name__}(" + ",".join(fingerprint(v) for v in value) + ")"
    if callable(value):
        name = getattr(value, "__qualname__", "")
        if not name or "<" in name:
            raise TypeError(f"no stable name to cache by: {value!r}")
        return f"{value.__module__}.{name}"
    if value is None or isinstance(value, bool | int | float | str | np.generic):
        return repr(value)
    raise TypeError(f"cannot fingerprint a {type(value).__name__}")


def session_cache(func: F) -> F:
    """``functools.cache`` whose results are shared through the session's directory."""

    signature = inspect.signature(func)

    @functools.cache
    def cached(*args: Any, **kwargs: Any) -> Any:
        directory = os.environ.get(DIRECTORY_VARIABLE)
        if directory is None or fcntl is None:
            return func(*args, **kwargs)
        key = fingerprint((func.__module__, func.__qualname__, args, sorted(kwargs.items())))
        path = Path(directory) / hashlib.sha256(key.encode()).hexdigest()
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a worker computing it holds the lock
            if path.exists():
                with open(path, "rb") as stored:
                    return pickle.load(stored)
            result = func(*args, **kwargs)
            partial = tempfile.NamedTemporaryFile(dir=directory, delete=False)
            with partial:
                pickle.dump(result, partial, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(partial.name, path)  # whole or absent, never half written
            return result

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        # every argument by position, defaults filled in: one key however the call is spelled
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return cached(*bound.args, **bound.kwargs)

    return call  # type: ignore[return-value]
