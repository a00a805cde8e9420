"""Exact coins from whole random words: the discrete Gaussian and the logistic coin.

Every probability here is a rational number handled as a reduced pair of Python integers, and
every coin compares a uniform integer with its numerator (Canonne, Kamath & Steinke 2020,
Algorithms 1-3), so the laws are exact: no float enters a draw. The uniform integers come from
62-bit words of the caller's generator, read in batches (:class:`_Words`): numpy draws a batch
word by word, so once :meth:`_Words.settle` has put the generator back and advanced it by the
words used, every draw and the generator's state are those of reading the words one at a time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

_WORD = 1 << 62
#: Words a discrete Gaussian draw reads on average (about 15 at the lattice's variances): the
#: batch drawn ahead per draw, so that one batch usually serves a whole release.
_WORDS_PER_DRAW = 20


class _Words:
    """62-bit words of ``rng`` (``rng.integers(0, 2**62)``), read ahead in batches."""

    def __init__(self, rng: np.random.Generator, expected: int) -> None:
        self._rng = rng
        self._start = rng.bit_generator.state
        self._batch = max(expected, 16)
        self._buffer: list[int] = []
        self._used = 0

    def word(self) -> int:
        used = self._used
        if used == len(self._buffer):
            self._refill()
        self._used = used + 1
        return self._buffer[used]

    def _refill(self) -> None:
        self._buffer += self._rng.integers(0, _WORD, size=self._batch).tolist()

    def settle(self) -> None:
        """Leave ``rng`` where reading only the words used, one by one, would have."""
        self._rng.bit_generator.state = self._start
        if self._used:
            self._rng.integers(0, _WORD, size=self._used)

    def below(self, bound: int) -> int:
        """A uniform integer in ``[0, bound)``, exactly (rejection from whole words)."""
        bits = bound.bit_length()
        if bits <= 62:  # one word a try: most bounds (the same words as the general loop)
            # the hot loop of every draw: the buffer read in place, not word by word
            shift, buffer, used = 62 - bits, self._buffer, self._used
            while True:
                try:
                    value = buffer[used] >> shift
                except IndexError:
                    self._refill()  # extends ``buffer`` in place
                    value = buffer[used] >> shift
                used += 1
                if value < bound:
                    self._used = used
                    return value
        words = -(-bits // 62)
        while True:
            value = self.word()
            for _ in range(words - 1):
                value = (value << 62) | self.word()
            value >>= words * 62 - bits
            if value < bound:
                return value

    def bernoulli(self, numerator: int, denominator: int) -> bool:
        """A Bernoulli(p) bit for ``p = numerator / denominator`` in lowest terms."""
        return self.below(denominator) < numerator

    def bernoulli_exp(self, numerator: int, denominator: int) -> bool:
        """A Bernoulli(exp(-γ)) bit for ``γ = numerator / denominator >= 0`` in lowest terms
        (CKS 2020, Algorithm 1)."""
        while numerator > denominator:  # exp(-γ) = exp(-1)^⌊γ⌋ exp(-(γ - ⌊γ⌋))
            if not self.bernoulli_exp_one():
                return False
            numerator -= denominator  # stays in lowest terms
        k, below = 1, self.below
        while True:  # γ / k in lowest terms: gcd(numerator, denominator) = 1
            common = math.gcd(numerator, k)
            if not below(denominator * (k // common)) < numerator // common:  # Bernoulli(γ/k)
                return k % 2 == 1
            k += 1

    def bernoulli_exp_one(self) -> bool:
        """A Bernoulli(exp(-1)) bit: :meth:`bernoulli_exp` at γ = 1, its Bernoulli(1/k) coins
        read as ``below(k) == 0`` (the same words)."""
        k, below = 1, self.below
        while not below(k):
            k += 1
        return k % 2 == 1

    def discrete_laplace(self, t: int) -> int:
        """``P(y) ∝ exp(-|y| / t)`` on the integers (CKS 2020, Algorithm 2, s = 1)."""
        while True:
            u = self.below(t)
            common = math.gcd(u, t)
            if not self.bernoulli_exp(u // common, t // common):
                continue
            v = 0
            while self.bernoulli_exp_one():
                v += 1
            y = u + t * v
            negative = self.bernoulli(1, 2)
            if negative and y == 0:
                continue
            return -y if negative else y

    def discrete_gaussian(self, variance: Fraction) -> int:
        """``P(y) ∝ exp(-y² / (2σ²))`` on the integers (CKS 2020, Algorithm 3): a discrete
        Laplace proposal of scale ``t = ⌊σ⌋ + 1`` accepted with probability
        ``exp(-(|y| - σ²/t)² / (2σ²))``."""
        p, q = variance.numerator, variance.denominator
        t = math.isqrt(p // q) + 1
        while True:
            y = self.discrete_laplace(t)
            # (|y| - p/(q t))² / (2 p/q) = (|y| q t - p)² / (2 p q t²)
            numerator, denominator = (abs(y) * q * t - p) ** 2, 2 * p * q * t * t
            common = math.gcd(numerator, denominator)
            if self.bernoulli_exp(numerator // common, denominator // common):
                return y


def discrete_gaussians(rng: np.random.Generator, variances: Sequence[Fraction]) -> list[int]:
    """One exact draw of ``N_Z(0, σ_j²)`` for each of the rational ``variances``, in order.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from dplong.privacy.coins import discrete_gaussians
    >>> draws = np.array(discrete_gaussians(np.random.default_rng(0), [Fraction(9)] * 4000))
    >>> bool(abs(draws.mean()) < 0.2), bool(abs(draws.var() / 9 - 1) < 0.08)
    (True, True)
    """
    words = _Words(rng, _WORDS_PER_DRAW * len(variances))
    try:
        return [words.discrete_gaussian(v) for v in variances]
    finally:
        words.settle()


def discrete_gaussian(rng: np.random.Generator, variance: Fraction) -> int:
    """One draw of ``N_Z(0, σ²)``, ``P(y) ∝ exp(-y² / (2σ²))`` on the integers, exactly.

    CKS 2020, Algorithm 3: a discrete Laplace proposal of scale ``t = ⌊σ⌋ + 1`` accepted with
    probability ``exp(-(|y| - σ²/t)² / (2σ²))``; every coin is an exact rational Bernoulli.

    Examples
    --------
    >>> from fractions import Fraction
    >>> import numpy as np
    >>> from dplong.privacy.coins import discrete_gaussian
    >>> rng = np.random.default_rng(0)
    >>> draws = np.array([discrete_gaussian(rng, Fraction(9)) for _ in range(4000)])
    >>> bool(abs(draws.mean()) < 0.2), bool(abs(draws.var() / 9 - 1) < 0.08)
    (True, True)
    """
    return discrete_gaussians(rng, [variance])[0]


def logistic_coin(rng: np.random.Generator, log_odds: float) -> bool:
    """One ``Bernoulli(1 / (1 + e^{-z}))`` bit for the float ``z = log_odds``, exactly.

    Rejection from a fair bit: the heavier outcome (1 for ``z >= 0``) is kept at once, the
    lighter with probability ``e^{-|z|}`` (CKS 2020, Algorithm 1, on the exact rational value
    of the float), so the bit has exactly the logistic law of z — no rounding of a tiny
    probability to a grid, which would break the ratio of two neighbours' coins. Each round
    ends with probability at least ½.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.coins import logistic_coin
    >>> rng = np.random.default_rng(0)
    >>> bits = [logistic_coin(rng, np.log(3.0)) for _ in range(4000)]     # P(1) = 3/4
    >>> bool(abs(np.mean(bits) - 0.75) < 0.03), logistic_coin(rng, 1e300)
    (True, True)
    """
    heavier = log_odds >= 0
    numerator, denominator = abs(log_odds).as_integer_ratio()
    words = _Words(rng, 16)
    try:
        while True:
            bit = words.bernoulli(1, 2)
            if bit == heavier or words.bernoulli_exp(numerator, denominator):
                return bit
    finally:
        words.settle()
