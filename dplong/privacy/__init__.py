"""Privacy mechanisms: lattice Laplace noise, private histograms and midpoints, the noisy
Winsorized mean, and the privacy ledger."""

from dplong.privacy.accounting import (
    Accountant,
    LedgerEntry,
    PrivacyLedger,
    advanced_composition_epsilon,
    split_budget,
)
from dplong.privacy.histogram import (
    Histogram,
    randomized_histogram,
    stable_histogram,
    stable_histogram_threshold,
)
from dplong.privacy.interval import central_midpoint, local_midpoint
from dplong.privacy.noise import randomized_response, release_bounded_sum
from dplong.privacy.plugin import winsorized_mean
from dplong.privacy.radius import DEFAULT_GAMMA, bin_radius, concentration_radius
from dplong.privacy.variance import ScaleEstimate, estimate_scale
from dplong.privacy.winsorized import WinsorizedMeanResult, default_midpoint_share

__all__ = [
    "DEFAULT_GAMMA",
    "Accountant",
    "Histogram",
    "LedgerEntry",
    "PrivacyLedger",
    "ScaleEstimate",
    "WinsorizedMeanResult",
    "advanced_composition_epsilon",
    "bin_radius",
    "central_midpoint",
    "concentration_radius",
    "default_midpoint_share",
    "estimate_scale",
    "local_midpoint",
    "randomized_histogram",
    "randomized_response",
    "release_bounded_sum",
    "split_budget",
    "stable_histogram",
    "stable_histogram_threshold",
    "winsorized_mean",
]
