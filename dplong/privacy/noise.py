"""Floating-point-safe noise: the Laplace mechanism on an integer lattice, and randomized response.

Why a lattice (docs/design §1). Adding float Laplace noise to a float statistic leaks the input
through which doubles the sum can land on (Mironov 2012). dplong never adds noise to a float:

1. each clipped value ``c`` with ``|c| <= w`` becomes the integer ``rint(c / L)`` on the fine
   grid ``L = 2**(floor(log2 w) - FINE_BITS)``; integer sums are exact, so the sensitivity of
   the sum is exactly ``2 * ceil(w / L)`` whatever the floating-point history of ``c``;
2. the sum is rounded to the coarse grid ``K = 2**k`` chosen so that the sensitivity ``D_c`` is
   as many coarse units as the sampler's float slack allows (slack at most 1e-6 ε, and
   ``D_c >= 2**COARSE_BITS``); the rounding is counted in the sensitivity
   (``floor(D / K) + 1`` coarse units);
3. a two-sided geometric ("discrete Laplace") integer with ``P(z) ∝ exp(-ε|z| / D_c)`` is added
   — exactly ε-DP for an integer statistic of sensitivity ``D_c`` (Alg 1 with the Laplace
   replaced by its lattice analogue);
4. the noisy integer times ``K * L`` is converted to float: post-processing.

Every released value is therefore a multiple of a public step: its support does not depend on
the input. The cost is no extra ε; the noise scale grows by the rounding in step 2, a factor of
at most ``1 + 2**-(COARSE_BITS - 1)`` (< 0.05 %; about 1e-6 at ε = 1), and the estimate moves by
at most half a fine grid step per value (``w * 2**-(FINE_BITS + 1)``, about 1e-16 w: the
fixed-point value is the float itself) plus half a coarse step on the sum.

The geometric variables are ``floor(E / a)``, E a standard exponential: exactly geometric for
exact E and division. The float division moves each jump point ``k a`` by a relative
``u = 2**-53``, so the log-mass of a draw of size k is off by at most ``3u(k+1)``; draws stay
below ``200 / a`` (E clipped at 46 here, at most 74 from :func:`keyed_uniforms`), so the loss
is at most ``a D + 600 u / a``, which :func:`geometric_rate` keeps below ε. The clip (chance
``e**-46``) and any inexactness of the exponential sampler (:func:`keyed_uniforms`: ``2**-53``
per draw; a private median draws at most 2n + 1) count as a total-variation distance t from the
ideal law, adding at most ``(1 + e**ε) t`` to δ: a "pure" ε release is strictly (ε, that)-DP.

**Gaussian noise.** For vector releases composed in zCDP the same lattice sum gets a discrete
Gaussian ``N_Z(0, σ²)`` instead (Canonne, Kamath & Steinke 2020): for an integer statistic whose
coordinates move by at most ``D_j`` lattice units, independent ``N_Z(0, σ_j²)`` draws are
``Σ_j D_j² / (2 σ_j²)``-zCDP (their Thm 4 with the Rényi divergences of independent coordinates
adding up). :mod:`dplong.privacy.coins` samples it *exactly* with integer arithmetic (their
Algorithms 1-3, σ² a dyadic rational rounded up from the request), so it carries no float
slack at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dplong.privacy.coins import discrete_gaussians

FINE_BITS = 52
#: The smallest radius whose fine lattice step ``2**(floor(log2 w) - FINE_BITS)`` is a normal
#: double: below it the step underflows and the sum cannot be released (public ranges
#: narrower than twice it are refused, :func:`~dplong.models.pooled.frame.column_range`).
SMALLEST_RADIUS = 2.0 ** (FINE_BITS - 1022)
_SPLIT_BITS = 26
_SPLIT = 2**_SPLIT_BITS  # int64 partial sums of 27-bit halves stay exact for n < 2**35 rows
COARSE_BITS = 12


_ROUNDOFF = 2.0**-53
_EXPONENTIAL_CLIP = 46.0
#: Smallest ε a lattice release accepts: the float slack ``1200 u D / ε`` of
#: :func:`geometric_rate` stays below ε/2 for every lattice sensitivity D <= 2**13 + 1.
MIN_LATTICE_EPSILON = math.sqrt(2400.0 * _ROUNDOFF * (2 ** (COARSE_BITS + 1) + 1))


def geometric_rate(
    epsilon: float | NDArray[np.float64], sensitivity: float | NDArray[np.float64]
) -> NDArray[np.float64]:
    """Rate ``a`` of two-sided geometric noise that is ε-DP for an integer statistic.

    Ideally ``a = ε / D``; float slack ``1200 u D / ε`` is taken off ε so that the loss bound
    ``a D + 600 u / a`` of the module docstring stays below ε (valid while the slack is at most
    ε/2, i.e. ε above about ``5e-5`` for our ~2**13-unit sensitivities).

    Examples
    --------
    >>> from dplong.privacy.noise import geometric_rate
    >>> a = geometric_rate(1.0, 4096.0)
    >>> bool(0.999999 / 4096 < a < 1.0 / 4096)         # a hair below ε / D
    True
    >>> geometric_rate(1e-6, 4096.0)
    Traceback (most recent call last):
    ...
    ValueError: epsilon too small for float-safe lattice noise
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    sens = np.asarray(sensitivity, dtype=np.float64)
    slack = 1200.0 * _ROUNDOFF * sens / eps
    if (slack > eps / 2).any():
        raise ValueError("epsilon too small for float-safe lattice noise")
    return np.asarray((eps - slack) / sens)


def two_sided_geometric(
    rng: np.random.Generator, rate: NDArray[np.float64] | float, size: tuple[int, ...]
) -> NDArray[np.int64]:
    """Integers with ``P(z) ∝ exp(-rate |z|)``, as the difference of two geometric variables.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import two_sided_geometric, two_sided_geometric_variance
    >>> z = two_sided_geometric(np.random.default_rng(0), 0.5, (10_000,))
    >>> z.dtype, z.shape
    (dtype('int64'), (10000,))
    >>> bool(abs(z.var() / two_sided_geometric_variance(0.5) - 1) < 0.1)
    True
    """
    # both arrays' exponentials in one call (numpy fills an array draw by draw: the stream of
    # two calls), then in place
    draws = rng.standard_exponential((2, *size))
    np.minimum(draws, _EXPONENTIAL_CLIP, out=draws)
    np.divide(draws, np.asarray(rate, dtype=np.float64), out=draws)
    np.floor(draws, out=draws)
    difference: NDArray[np.float64] = np.subtract(draws[0], draws[1], out=draws[0])
    return difference.astype(np.int64)


def two_sided_geometric_variance(rate: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """Variance ``2 e^{-a} / (1 - e^{-a})^2`` of the two-sided geometric with rate ``a``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import two_sided_geometric_variance
    >>> float(two_sided_geometric_variance(np.log(2.0)))       # 2 (1/2) / (1/2)**2
    4.0
    """
    a = np.asarray(rate, dtype=np.float64)
    return np.asarray(2.0 * np.exp(-a) / np.expm1(-a) ** 2)


@dataclass(frozen=True)
class LatticeRelease:
    """Result of :func:`release_bounded_sum` or :func:`release_gaussian_sum`, per column.

    ``total`` is the private sum of the clipped values (value units). ``sensitivity`` is the
    sensitivity of that sum in value units after lattice rounding (per column: L1 for the
    Laplace, L∞ per coordinate for the Gaussian), ``step`` the lattice step of the release,
    ``scale`` the noise scale of one draw (Laplace-equivalent ``step / rate``, or the Gaussian
    σ) and ``sd`` its exact standard deviation, both in value units; ``rate`` is the geometric
    rate in lattice units (NaN for the Gaussian) and ``draws`` how many independent draws were
    summed (1 centrally, n locally). In the local model ``reports`` holds every user's
    privatised row (n x d, value units), whose column sums are ``total``.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import release_bounded_sum
    >>> rel = release_bounded_sum(np.array([[0.5], [-1.0]]), np.array([1.0]),
    ...                           np.array([1.0]), np.random.default_rng(0), local=True)
    >>> rel.draws, bool(rel.sensitivity[0] >= 2.0), rel.kind     # 2 draws; D >= 2 * radius
    (2, True, 'laplace')
    """

    total: NDArray[np.float64]
    sensitivity: NDArray[np.float64]
    step: NDArray[np.float64]
    rate: NDArray[np.float64]
    draws: int
    scale: NDArray[np.float64]
    sd: NDArray[np.float64]
    kind: str = "laplace"
    reports: NDArray[np.float64] | None = field(default=None, repr=False)


_WEYL = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's increment and multipliers
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))
_BELOW_ONE = 1.0 - 2.0**-53


def keyed_uniforms(
    key: np.uint64 | NDArray[np.uint64], counters: NDArray[np.uint64]
) -> NDArray[np.float64]:
    """Uniforms on (0, 1) at ``counters`` of the stream that ``key`` names (one key, or one
    per counter): one per counter, the same for the same (key, counter) whatever else is drawn.

    A mechanism that draws for the parts of its input that are present (the private median's
    runs of cells) keys each draw by the part's public name (its first cell), so one part moving
    leaves the other parts' draws as they were, and the caller's generator gives one key per
    mechanism whatever the data. Each uniform is two words of SplitMix64 (Steele, Lea & Flood
    2014: a Weyl sequence through a bijective mixer) at positions ``2c`` and ``2c + 1``, the
    first the leading 53 bits, the second the next 53: ``P(U <= x)`` is within a relative
    ``2**-52`` of ``x`` for ``x >= 2**-53``, the float slack of :func:`geometric_rate`, so that
    ``-log U`` is a standard exponential up to that slack below 36.7 and beyond it (chance
    ``2**-53`` per draw) counts as a total-variation distance, as the clip of numpy's sampler
    does (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import keyed_uniforms
    >>> u = keyed_uniforms(np.uint64(7), np.arange(100_000, dtype=np.uint64))
    >>> bool(0 < u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.005)
    True
    >>> bool(keyed_uniforms(np.uint64(7), np.array([5], dtype=np.uint64))[0] == u[5])
    True
    """
    # both words of every counter through one mixer call: positions 2c (hi) and 2c + 1 (lo)
    words = np.empty((2, counters.size), dtype=np.uint64)
    np.multiply(counters, np.uint64(2), out=words[0])
    np.add(words[0], np.uint64(1), out=words[1])
    words *= _WEYL
    words += key
    top = (_splitmix(words) >> np.uint64(11)).astype(np.float64)
    u: NDArray[np.float64] = top[0] + (top[1] + 0.5) * 2.0**-53
    u *= 2.0**-53
    np.minimum(u, _BELOW_ONE, out=u)  # the top word's last step rounds up to 1
    return u


def _splitmix(z: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """SplitMix64's output mixer (a bijection of 64-bit words; uint64 arrays wrap silently)."""
    z = z ^ (z >> np.uint64(30))
    z *= _MIX[0]
    z ^= z >> np.uint64(27)
    z *= _MIX[1]
    z ^= z >> np.uint64(31)
    return z


def release_bounded_sum(
    clipped: NDArray[np.float64],
    radius: NDArray[np.float64],
    epsilon: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    local: bool = False,
) -> LatticeRelease:
    """Release column sums of ``clipped`` (n x d, ``|clipped[:, j]| <= radius[j]``) privately.

    Central: one noisy sum per column, ε_j-DP under replacing one row. Local: every row is
    privatised on its own (ε_j-LDP) before the sum, as each user would do on their device.

    Returns
    -------
    LatticeRelease
        The private sums and the public facts about their noise.

    Examples
    --------
    With a vast ε the noise vanishes and the exact sums come back:

    >>> import numpy as np
    >>> from dplong.privacy import release_bounded_sum
    >>> clipped = np.array([[0.5, -1.0], [1.0, 2.0], [-0.25, 0.0]])     # 3 users, 2 columns
    >>> radius = np.array([1.0, 2.0])
    >>> release_bounded_sum(clipped, radius, np.array([1e300, 1e300]),
    ...                     np.random.default_rng(0)).total.tolist()
    [1.25, 1.0]

    At ε = 1 per column the sums are noisy, on a public lattice:

    >>> rel = release_bounded_sum(clipped, radius, np.array([1.0, 1.0]),
    ...                           np.random.default_rng(0))
    >>> bool(np.all(rel.sensitivity >= 2 * radius))       # replacing one user: 2 * radius
    True
    >>> bool(np.all(rel.total / rel.step == np.round(rel.total / rel.step)))
    True
    """
    lattice = _lattice(clipped, radius, _coarse_bits(epsilon))
    n, d = clipped.shape
    rate = geometric_rate(epsilon, lattice.sensitivity.astype(np.float64))
    reports = None
    if local:
        noisy = _round_to(lattice.ints, lattice.coarse) + two_sided_geometric(rng, rate, (n, d))
        lattice_total = noisy.sum(axis=0).astype(np.float64)
        reports = noisy * lattice.step
    else:
        lattice_total = lattice.exact_sums() + two_sided_geometric(rng, rate, (d,))
    return LatticeRelease(
        total=lattice_total * lattice.step,
        sensitivity=lattice.sensitivity * lattice.step,
        step=lattice.step,
        rate=rate,
        draws=n if local else 1,
        scale=lattice.step / rate,
        sd=np.sqrt(two_sided_geometric_variance(rate)) * lattice.step,
        reports=reports,
    )


def release_gaussian_sum(
    clipped: NDArray[np.float64],
    radius: NDArray[np.float64],
    rho: NDArray[np.float64],
    rng: np.random.Generator,
) -> LatticeRelease:
    """Release column sums of ``clipped`` with discrete Gaussian noise, ``Σ_j rho_j``-zCDP.

    The lattice of :func:`release_bounded_sum` (exact integer sums, rounding counted in the
    sensitivity ``D_j`` units), then exact ``N_Z(0, σ_j²)`` draws with ``σ_j² >= D_j² / (2 ρ_j)``
    (module docstring). Central model only.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import release_gaussian_sum
    >>> clipped = np.array([[0.5, -1.0], [1.0, 2.0], [-0.25, 0.0]])
    >>> radius = np.array([1.0, 2.0])
    >>> release_gaussian_sum(clipped, radius, np.array([1e300, 1e300]),
    ...                      np.random.default_rng(0)).total.tolist()     # noise off
    [1.25, 1.0]
    >>> rel = release_gaussian_sum(clipped, radius, np.array([0.01, 0.01]),
    ...                            np.random.default_rng(0))
    >>> rel.kind, bool(np.allclose(rel.sd, rel.sensitivity / np.sqrt(2 * 0.01), rtol=1e-6))
    ('gaussian', True)
    """
    # as many units as keep the rounding a 2**-12 fraction of the noise σ (finer as ρ grows, up
    # to the fine grid: the noise-off limit is the exact sum)
    with np.errstate(over="ignore", divide="ignore"):
        bits = COARSE_BITS + np.ceil(0.5 * np.log2(np.minimum(2.0 * rho, 2.0**200)))
    lattice = _lattice(clipped, radius, np.clip(bits, COARSE_BITS, 52).astype(np.int64))
    units = lattice.sensitivity.astype(np.float64)
    variance = [
        _dyadic_ceiling(float(u) ** 2 / (2.0 * float(r))) for u, r in zip(units, rho, strict=True)
    ]
    noise = np.array(discrete_gaussians(rng, variance), dtype=np.float64)
    sd = np.sqrt(np.array([float(v) for v in variance])) * lattice.step
    return LatticeRelease(
        total=(lattice.exact_sums() + noise) * lattice.step,
        sensitivity=units * lattice.step,
        step=lattice.step,
        rate=np.full(units.shape, math.nan),
        draws=1,
        scale=sd,
        sd=sd,
        kind="gaussian",
    )


@dataclass(frozen=True)
class _Lattice:
    """Clipped values as exact integers on a fine grid, and the coarse grid of the release."""

    ints: NDArray[np.int64]
    coarse: NDArray[np.int64]  # fine units per coarse unit
    sensitivity: NDArray[np.int64]  # of a column sum, in coarse units, rounding included
    step: NDArray[np.float64]  # coarse unit in value units

    def exact_sums(self) -> NDArray[np.float64]:
        """Column sums rounded to the coarse grid, computed exactly."""
        sums = _round_to_exact(_exact_column_sums(self.ints), self.coarse)
        return np.array([float(v) for v in sums])


def _lattice(
    clipped: NDArray[np.float64], radius: NDArray[np.float64], bits: NDArray[np.int64]
) -> _Lattice:
    """Steps 1-2 of the module docstring, with ``2**bits`` coarse units per sensitivity."""
    # A NaN survives np.clip and every comparison; left in, rint(NaN) would become -2**63 and
    # one user could move the sum without bound. Any input must stay within the radius, so a
    # value that is not a number contributes 0 (the centre), like a user with no statistic.
    clipped = np.where(np.isnan(clipped), 0.0, clipped)
    if not np.all(np.abs(clipped) <= radius):
        raise AssertionError("lattice releases need values clipped to their radius")
    if clipped.shape[0] >= 2**35:
        raise OverflowError("too many rows for exact fixed-point summation")
    fine = np.ldexp(1.0, np.floor(np.log2(radius)).astype(int) - FINE_BITS)
    half_range = np.ceil(radius / fine).astype(np.int64)  # |rint(c / fine)| <= half_range
    ints = np.rint(clipped / fine).astype(np.int64)
    fine_sensitivity = 2 * half_range  # one row moves from -half_range to +half_range
    shift = np.maximum(np.floor(np.log2(fine_sensitivity)).astype(np.int64) - bits, 0)
    coarse = np.left_shift(np.int64(1), shift)
    return _Lattice(
        ints=ints,
        coarse=coarse,
        sensitivity=fine_sensitivity // coarse + 1,  # rounding counted in the sensitivity
        step=coarse * fine,
    )


def _coarse_bits(epsilon: NDArray[np.float64]) -> NDArray[np.int64]:
    """Largest log2 sensitivity (in lattice units) whose float slack is at most 1e-6 ε."""
    with np.errstate(over="ignore"):
        largest = epsilon**2 * 1e-6 / (1200.0 * _ROUNDOFF)
    return np.maximum(np.floor(np.log2(np.minimum(largest, 2.0**62))), COARSE_BITS).astype(np.int64)


def _exact_column_sums(ints: NDArray[np.int64]) -> list[int]:
    """Column sums of int64 values up to 2**53 in magnitude, exact as Python ints."""
    # floor division and the non-negative remainder by 2**26, as shifts (two's complement):
    # np.divmod's integer division is several times slower
    high, low = ints >> _SPLIT_BITS, ints & (_SPLIT - 1)
    return [
        int(h) * _SPLIT + int(lo) for h, lo in zip(high.sum(axis=0), low.sum(axis=0), strict=True)
    ]


def _round_to_exact(values: list[int], unit: NDArray[np.int64]) -> list[int]:
    return [(v + int(u) // 2) // int(u) for v, u in zip(values, unit, strict=True)]


def _round_to(values: NDArray[np.int64], unit: NDArray[np.int64]) -> NDArray[np.int64]:
    """Integer rounding of ``values / unit`` (half up), exact in int64."""
    return np.asarray((values + unit // 2) // unit, dtype=np.int64)


def _dyadic_ceiling(value: float, bits: int = 40) -> Fraction:
    """The smallest multiple of ``2**-k`` at least ``value``, k chosen to keep ``bits`` bits."""
    k = bits - math.frexp(value)[1]
    return (
        Fraction(math.ceil(math.ldexp(value, k)), 1 << k) if k > 0 else Fraction(math.ceil(value))
    )


def release_weighted_gaussian(
    clipped: NDArray[np.float64],
    radius: float,
    weights: NDArray[np.float64],
    rho: float,
    rng: np.random.Generator,
) -> WeightedRelease:
    """ρ-zCDP release of ``weights.T @ clipped`` for public weights: the discrete Gaussian
    counterpart of :func:`release_weighted_sums` (one value a row, or one a row and coordinate,
    as there), calibrated to the L2 sensitivity.

    Replacing one row i moves the exact sums by at most ``2 radius ‖weights[i]‖₂`` in L2 norm,
    which grows like √G with the number G of coordinates a row reaches where the L1 norm grows
    like G: on fine grids this release is the cheaper one. Float safety as there: the BLAS
    error of each sum, at most ``E_g`` (Higham eq. 3.5), and the rounding to the public step
    K (at most one unit per coordinate) are counted, so the integer vector moves by at most
    ``D = (Δ₂ + 2 ‖E‖₂) / K + √G`` units in L2 norm; independent exact ``N_Z(0, σ²)`` draws
    with ``σ² >= D² / (2ρ)`` are ρ-zCDP (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import release_weighted_gaussian
    >>> clipped = np.array([1.0, -0.5, 0.25])
    >>> weights = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    >>> release_weighted_gaussian(clipped, 1.0, weights, 1e300,
    ...                           np.random.default_rng(0)).total.tolist()     # noise off
    [0.75, 0.0]
    >>> noisy = release_weighted_gaussian(clipped, 1.0, weights, 0.1, np.random.default_rng(0))
    >>> bool(noisy.sensitivity >= 2.0), bool(np.allclose(noisy.sd, noisy.sensitivity / 0.2**0.5,
    ...                                                 rtol=1e-6))
    (True, True)
    """
    n = weights.shape[0]
    clipped = np.where(np.isnan(clipped), 0.0, clipped)
    if not np.all(np.abs(clipped) <= radius):
        raise AssertionError("release_weighted_gaussian needs values clipped to their radius")
    if not (np.isfinite(weights).all() and np.isfinite(radius) and radius > 0):
        raise AssertionError("release_weighted_gaussian needs finite weights and a positive radius")
    absolute = np.abs(weights)
    l2 = 2.0 * radius * float(np.sqrt((weights**2).sum(axis=1)).max())
    if l2 == 0.0:
        raise AssertionError("release_weighted_gaussian needs some non-zero weight")
    unit = (n + 2) * _ROUNDOFF
    float_error = 2.0 * unit / (1.0 - unit) * radius * float(np.linalg.norm(absolute.sum(axis=0)))
    sum_bound = radius * float(absolute.sum(axis=0).max()) * (1.0 + 2.0 * unit)
    return _lattice_gaussian(_weighted(weights, clipped), l2, float_error, sum_bound, rho, rng)


def release_vector_sum(
    vectors: NDArray[np.float64],
    norm_bound: float,
    sensitivity: float,
    rho: float,
    rng: np.random.Generator,
) -> WeightedRelease:
    """ρ-zCDP release of ``vectors.sum(axis=0)``: every user's vector (a row) has L2 norm at
    most the public ``norm_bound``, and replacing one user moves the exact sum by at most the
    public L2 ``sensitivity`` (``<= 2 norm_bound``; less where the caller knows more, e.g. for
    vectorised PSD matrices).

    The lattice of :func:`release_weighted_gaussian`: the float error of the sum is bounded from
    public facts only (``n norm_bound`` bounds ``Σ_u |v_u|`` in L2 norm) and counted in the
    sensitivity with the rounding to the public step, then an exact discrete Gaussian is added.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import release_vector_sum
    >>> vectors = np.array([[0.5, 0.5], [1.0, 0.0], [0.0, -0.5]])
    >>> release_vector_sum(vectors, 1.0, 2.0, 1e300, np.random.default_rng(0)).total.tolist()
    [1.5, 0.0]
    >>> noisy = release_vector_sum(vectors, 1.0, 2.0, 0.1, np.random.default_rng(0))
    >>> bool(noisy.sensitivity >= 2.0), bool(np.allclose(noisy.sd, noisy.sensitivity / 0.2**0.5,
    ...                                                 rtol=1e-6))
    (True, True)
    """
    n = vectors.shape[0]
    if not (np.isfinite(vectors).all() and 0.0 < sensitivity <= 2.0 * norm_bound < math.inf):
        raise AssertionError("release_vector_sum needs finite vectors and positive bounds")
    if not np.all(np.sqrt((vectors**2).sum(axis=1)) <= norm_bound):
        raise AssertionError("release_vector_sum needs vectors within their norm bound")
    unit = (n + 2) * _ROUNDOFF
    float_error = 2.0 * unit / (1.0 - unit) * norm_bound * n
    sum_bound = norm_bound * n * (1.0 + 2.0 * unit)
    return _lattice_gaussian(vectors.sum(axis=0), sensitivity, float_error, sum_bound, rho, rng)


def _lattice_gaussian(
    sums: NDArray[np.float64],
    l2: float,
    float_error: float,
    sum_bound: float,
    rho: float,
    rng: np.random.Generator,
) -> WeightedRelease:
    """The G float ``sums`` (L2 sensitivity ``l2``, float error at most ``float_error`` in L2
    norm, each at most ``sum_bound`` in absolute value) rounded to a public step K, with the
    rounding (one unit per coordinate) and the float error counted: the integer vector moves by
    at most ``D = (l2 + float_error) / K + √G`` units, and independent exact ``N_Z(0, σ²)``
    draws with ``σ² >= D² / (2ρ)`` are ρ-zCDP."""
    g = sums.size
    # units of the L2 sensitivity: 2**12 more per factor 2 of √(2ρ), as release_gaussian_sum
    bits = COARSE_BITS + max(0.0, math.ceil(0.5 * math.log2(min(2.0 * rho, 2.0**200))))
    step = math.ldexp(1.0, math.floor(math.log2(l2)) - int(min(bits, 50)))
    step = max(step, math.ldexp(1.0, math.ceil(math.log2(sum_bound)) - 52))
    units = (l2 + float_error) / step + math.sqrt(g)
    variance = _dyadic_ceiling(units**2 / (2.0 * rho))
    if float(np.abs(sums).max()) / step > 2.0**52:  # the lattice integers must stay exact
        raise OverflowError("too many rows or grid points for exact lattice rounding")
    noise = np.array(discrete_gaussians(rng, [variance] * g), dtype=np.float64)
    sd = math.sqrt(float(variance)) * step
    return WeightedRelease(
        total=(np.rint(sums / step) + noise) * step,
        scale=np.full(g, sd),
        sd=np.full(g, sd),
        sensitivity=units * step,
        step=step,
    )


def count_sd(epsilon: float, sensitivity: float = 1.0) -> float:
    """The noise sd of a count released by :func:`~dplong.privacy.counts.geometric_counts` at
    ``epsilon`` for an L1 ``sensitivity`` (2: a signed count; k: k columns' own counts
    together): close to the Laplace law's ``√2 sensitivity / ε`` where that is many units.

    Examples
    --------
    >>> from dplong.privacy.noise import count_sd
    >>> round(count_sd(0.1), 2), round(count_sd(0.1, 2.0) / count_sd(0.1), 2)
    (14.14, 2.0)
    """
    return math.sqrt(float(two_sided_geometric_variance(geometric_rate(epsilon, sensitivity))))


def flip_probability(epsilon: float, categories: int = 2) -> float:
    """Probability that randomized response (Alg 6) reports the opposite bit; of ``categories``
    labels (k-ary randomized response), that it reports one particular other label.

    Ideally ``q = 1 / (k - 1 + e^ε)``; the odds ``(1 - (k-1) q)/q`` must stay within ``e^ε``
    (any two labels' chances of a report differ by that ratio at most). ``1/(1 + exp(x))``
    carries a few ulps of error (~2**-52 absolute near ½), which moves the log-odds by up to
    ~2**-50; we evaluate it at ``ε (1 - 2**-40) - 2**-48`` (so q only grows), round *up* to a
    multiple of 2**-53 (the resolution of the uniform draw); where that exceeds ``1/k`` (which
    is off the grid for three labels), it is ``1/k``: the report is then independent of the
    label, drawn uniformly (:func:`randomized_labels`).

    Examples
    --------
    >>> import math
    >>> from dplong.privacy.noise import flip_probability
    >>> flip_probability(0.0)
    0.5
    >>> q = flip_probability(1.0)
    >>> abs(q - 1 / (1 + math.e)) < 1e-12, (1 - q) / q <= math.e
    (True, True)
    >>> q = flip_probability(1.0, categories=3)
    >>> abs(q - 1 / (2 + math.e)) < 1e-12, (1 - 2 * q) / q <= math.e
    (True, True)
    """
    with np.errstate(over="ignore"):  # e^ε overflows from ε ≈ 709.8: q is then one unit
        q = 1.0 / (categories - 1.0 + np.exp(epsilon * (1.0 - 2.0**-40) - 2.0**-48))
    # at least one unit of the grid: q = 0 would report every label truthfully, an infinite
    # loss (odds 2**53 - k + 1 <= e^ε wherever q rounds to the unit, ε above 36)
    units = max(int(np.ceil(q * 2.0**53)), 1)
    return 1.0 / categories if units * categories > 2**53 else units / 2.0**53


def randomized_response(
    bits: NDArray[np.bool_], epsilon: float, rng: np.random.Generator
) -> NDArray[np.bool_]:
    """Algorithm 6: report each bit truthfully with probability ``e^ε / (1 + e^ε)``.

    More precisely with probability ``1 - q``, ``q = flip_probability(ε)`` rounded up so that
    the report is exactly ε-LDP (:func:`randomized_labels` with two labels).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy import randomized_response
    >>> bits = np.ones(10_000, dtype=bool)
    >>> reports = randomized_response(bits, np.log(3.0), np.random.default_rng(0))
    >>> reports.dtype, reports.shape
    (dtype('bool'), (10000,))
    >>> bool(abs(reports.mean() - 0.75) < 0.02)       # truthful with probability 3/4
    True
    """
    return randomized_labels(np.asarray(bits, dtype=np.int64), 2, epsilon, rng).astype(bool)


def randomized_labels(
    labels: NDArray[np.int64], categories: int, epsilon: float, rng: np.random.Generator
) -> NDArray[np.int64]:
    """k-ary randomized response (Alg 6 over ``categories`` labels ``0 .. k-1``): each label
    is reported truthfully, else replaced by one of the other ``k - 1`` at random.

    The move happens when an integer uniform on ``[0, 2**53)`` falls below ``(k-1) q 2**53``
    with ``q = flip_probability(ε, k)`` on the 2**-53 grid, and the new label is a uniform
    integer among the others: each other label has probability exactly q and the true one
    ``1 - (k-1) q``, whose ratio is at most ``e^ε`` — exactly ε-LDP (at ``q = 1/k`` every
    label is drawn uniformly, 0-LDP).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import randomized_labels
    >>> reports = randomized_labels(np.zeros(30_000, dtype=np.int64), 3, 1.0,
    ...                             np.random.default_rng(0))
    >>> shares = np.bincount(reports, minlength=3) / reports.size
    >>> bool(abs(shares[0] - np.e / (np.e + 2)) < 0.01), bool(abs(shares[1] - shares[2]) < 0.02)
    (True, True)
    """
    q = flip_probability(epsilon, categories)
    if q * 2.0**53 != int(q * 2.0**53):  # 1/k off the grid (ε too small): no information
        return rng.integers(0, categories, size=np.shape(labels))
    moved = rng.integers(0, 2**53, size=np.shape(labels)) < int(q * 2.0**53) * (categories - 1)
    if categories == 2:  # the only other label
        return np.asarray(labels) ^ moved
    shift = 1 + rng.integers(0, categories - 1, size=np.shape(labels))
    return np.where(moved, (np.asarray(labels) + shift) % categories, labels)


def debiased_share(
    reported: float | NDArray[np.float64], q: float, categories: int = 2
) -> float | NDArray[np.float64]:
    """The share of true 1s behind the ``reported`` share of randomized responses that flip
    with probability ``q``: ``(p̂ - q) / (1 - 2q)``, unbiased (post-processing); its standard
    error is the reported share's over ``1 - 2q``. Of ``categories`` labels (each other label
    reported with probability q, :func:`randomized_labels`), a label's share behind its
    reported one: ``(p̂ - q) / (1 - k q)``.

    Examples
    --------
    >>> from dplong.privacy.noise import debiased_share
    >>> debiased_share(0.75, 0.25), debiased_share(0.25, 0.25)
    (1.0, 0.0)
    >>> debiased_share(0.5, 0.25, categories=3)
    1.0
    """
    return (reported - q) / (1.0 - categories * q)


@dataclass(frozen=True)
class WeightedRelease:
    """Result of :func:`release_weighted_sums` or :func:`release_weighted_gaussian`, per output
    coordinate.

    ``total`` holds the private weighted sums, ``scale`` the scale of the noise in each
    (Laplace-equivalent ``step / rate``, or the Gaussian σ), ``sd`` its exact standard
    deviation, ``sensitivity`` the L1 (Laplace) or L2 (Gaussian) sensitivity of the whole
    vector in value units (rounding included) and ``step`` the public lattice step.
    """

    total: NDArray[np.float64]
    scale: NDArray[np.float64]
    sd: NDArray[np.float64]
    sensitivity: float
    step: float


def release_weighted_sums(
    clipped: NDArray[np.float64],
    radius: float,
    weights: NDArray[np.float64],
    epsilon: float,
    rng: np.random.Generator,
) -> WeightedRelease:
    """ε-DP release of ``weights.T @ clipped`` for public weights, ``|clipped| <= radius``;
    ``clipped`` may also hold one value a row and coordinate (n x G: the sums
    ``Σ_i weights[i, g] clipped[i, g]``), as a row's own values may depend on the coordinate.

    Replacing one row ``i`` (all its values) moves coordinate g of the exact sums by at most
    ``2 radius weights[i, g]``, so by at most ``Δ₁ = 2 radius max_i Σ_g |weights[i, g]|`` in L1
    norm — often far less than the sum over g of the per-coordinate sensitivities that basic
    composition pays (a kernel row is concentrated on a few coordinates). One lattice Laplace
    vector with L1 sensitivity Δ₁ is ε-DP (the Laplace mechanism, Dwork & Roth Thm 3.6).

    Float safety (module docstring). The sums are computed in floating point (BLAS, any order);
    each differs from the exact sum by at most ``E_g = γ_{n+1} radius Σ_i |weights[i, g]|``
    (Higham, *Accuracy and Stability*, eq. 3.5; FMA only helps), with public weights. Each sum
    is rounded to a public power-of-two step K, which moves it by at most one lattice unit, so
    the lattice vector has L1 sensitivity at most ``D = (Δ₁ + 2 Σ_g E_g) / K + G`` units. The
    two-sided geometric noise of rate a on each coordinate has privacy loss ``a D`` plus the
    float slack ``600 u / a`` per coordinate; ``a = (ε - 1200 u D G / ε) / D`` keeps the total
    below ε (the argument of :func:`geometric_rate`, summed over G coordinates).

    The step K, as in :func:`release_bounded_sum`, leaves ``Δ₁`` as many lattice units as the
    float slack allows (slack at most 1e-6 ε, at least ``G 2**COARSE_BITS`` units, at most
    ``2**52`` in all, so that every geometric draw is an exact float integer), and never less
    than ``2**-52`` of the public bound ``radius max_g Σ_i |weights[i, g]|`` on the sums, so
    that the lattice integers stay exact. Rounding moves each sum by at most K/2: with a vast
    ε the release is the exact weighted sums up to ~1e-16 relative (the noise-off reference).

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import release_weighted_sums
    >>> clipped = np.array([1.0, -0.5, 0.25])
    >>> weights = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    >>> exact = release_weighted_sums(clipped, 1.0, weights, 1e300, np.random.default_rng(0))
    >>> exact.total.tolist(), exact.sensitivity >= 2.0     # Δ₁ = 2 * 1 * max row sum (1)
    ([0.75, 0.0], True)
    >>> noisy = release_weighted_sums(clipped, 1.0, weights, 1.0, np.random.default_rng(0))
    >>> bool(np.all(noisy.total / noisy.step == np.round(noisy.total / noisy.step)))
    True
    """
    n, g = weights.shape
    # A NaN value would survive clipping; it contributes the centre 0 (release_bounded_sum).
    clipped = np.where(np.isnan(clipped), 0.0, clipped)
    if not np.all(np.abs(clipped) <= radius):
        raise AssertionError("release_weighted_sums needs values clipped to their radius")
    if not (np.isfinite(weights).all() and np.isfinite(radius) and radius > 0):
        raise AssertionError("release_weighted_sums needs finite weights and a positive radius")
    absolute = np.abs(weights)
    l1 = 2.0 * radius * float(absolute.sum(axis=1).max())
    if l1 == 0.0:
        raise AssertionError("release_weighted_sums needs some non-zero weight")
    unit = (n + 2) * _ROUNDOFF
    float_error = 2.0 * unit / (1.0 - unit) * radius * float(absolute.sum())  # 2 Σ_g E_g
    # units per coordinate: as many as the float slack allows (<= 1e-6 ε, as _coarse_bits), at
    # least 2**COARSE_BITS (the +g of rounding adds < 0.025 %), and D <= 2**52 in all
    slack_bits = math.log2(1e-6 / (1200.0 * _ROUNDOFF)) + 2.0 * math.log2(epsilon / g)
    bits = max(COARSE_BITS, min(math.floor(slack_bits), 51 - math.ceil(math.log2(g))))
    step = math.ldexp(1.0, math.floor(math.log2(l1 / (g * 2.0**bits))))
    # |sums| <= radius max_g Σ_i |w_ig| (1 + float error): a public bound; keep it < 2**52 steps
    sum_bound = radius * float(absolute.sum(axis=0).max()) * (1.0 + 2.0 * unit)
    step = max(step, math.ldexp(1.0, math.ceil(math.log2(sum_bound)) - 52))
    lattice_sensitivity = math.ceil((l1 + float_error) / step) + g
    slack = 1200.0 * _ROUNDOFF * lattice_sensitivity * g / epsilon
    if slack > epsilon / 2:
        raise ValueError("epsilon too small for float-safe lattice noise")
    rate = (epsilon - slack) / lattice_sensitivity
    sums = _weighted(weights, clipped)
    if float(np.abs(sums).max()) / step > 2.0**52:  # the lattice integers must stay exact
        raise OverflowError("too many rows or grid points for exact lattice rounding")
    lattice = np.rint(sums / step) + two_sided_geometric(rng, rate, (g,))
    scale = step / rate
    sd = math.sqrt(float(two_sided_geometric_variance(rate))) * step
    return WeightedRelease(
        total=np.asarray(lattice * step, dtype=np.float64),
        scale=np.full(g, scale),
        sd=np.full(g, sd),
        sensitivity=lattice_sensitivity * step,
        step=step,
    )


def _weighted(weights: NDArray[np.float64], values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``Σ_i weights[i, g] values[i]`` for each coordinate g, or ``Σ_i weights[i, g]
    values[i, g]`` where ``values`` has one per row and coordinate: each a dot product of n
    terms, within Higham's bound whatever the order of the additions."""
    if values.ndim == 1:
        return np.asarray(weights.T @ values, dtype=np.float64)
    return np.asarray(np.einsum("ig,ig->g", weights, values), dtype=np.float64)


def release_gaussian_vector(
    values: NDArray[np.float64],
    sensitivity: float,
    float_error: float,
    bound: float,
    rho: float,
    rng: np.random.Generator,
) -> WeightedRelease:
    """ρ-zCDP release of a float vector whose exact value moves by at most ``sensitivity`` in
    L2 norm between neighbours, computed with a float error of at most ``float_error`` (L2)
    and bounded by ``bound`` in every coordinate (all public).

    The lattice of :func:`release_vector_sum`: rounded to a public step with the rounding and
    the float error counted in the sensitivity, then exact ``N_Z(0, σ²)`` draws.

    Examples
    --------
    >>> import numpy as np
    >>> from dplong.privacy.noise import release_gaussian_vector
    >>> values = np.array([0.25, -0.5])
    >>> release_gaussian_vector(values, 0.1, 0.0, 1.0, 1e300,
    ...                         np.random.default_rng(0)).total.tolist()        # noise off
    [0.25, -0.5]
    >>> noisy = release_gaussian_vector(values, 0.1, 0.0, 1.0, 0.5, np.random.default_rng(0))
    >>> bool(np.allclose(noisy.sd, noisy.sensitivity, rtol=1e-6)), bool(noisy.sensitivity >= 0.1)
    (True, True)
    """
    if not (np.isfinite(values).all() and 0.0 < sensitivity < math.inf and float_error >= 0.0):
        raise AssertionError("release_gaussian_vector needs finite values and a sensitivity")
    if not np.all(np.abs(values) <= bound):
        raise AssertionError("release_gaussian_vector needs values within their bound")
    return _lattice_gaussian(values, sensitivity, float_error, bound, rho, rng)
