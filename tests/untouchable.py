"""A random generator that refuses to be used: passing it to a release proves that a refusal
happened before any noise was drawn (docs/design §1: every refusal and budget check comes first)."""

from __future__ import annotations

import numpy as np


class Untouchable(np.random.Generator):
    """A ``numpy.random.Generator`` whose every method raises ``AssertionError``.

    Examples
    --------
    >>> from untouchable import Untouchable
    >>> Untouchable().normal()
    Traceback (most recent call last):
    ...
    AssertionError: randomness was drawn before a refusal: Generator.normal
    """

    def __init__(self) -> None:
        super().__init__(np.random.PCG64(0))

    def __getattribute__(self, name: str) -> object:
        if name.startswith("__"):
            return object.__getattribute__(self, name)
        raise AssertionError(f"randomness was drawn before a refusal: Generator.{name}")
