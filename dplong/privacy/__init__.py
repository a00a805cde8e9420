"""Privacy mechanisms and their bookkeeping: lattice Laplace and discrete Gaussian noise, private
medians and histograms, the budget plan and release engine, the paper's Winsorized mean, the
variance plug-ins and the privacy ledger."""

from dplong.privacy.accounting import (
    Accountant,
    Composition,
    Cost,
    LedgerEntry,
    PrivacyLedger,
    compose,
    zcdp_epsilon,
)
from dplong.privacy.budget import ReleasePlan
from dplong.privacy.coins import discrete_gaussian
from dplong.privacy.engine import Release, release_means
from dplong.privacy.histogram import (
    Histogram,
    randomized_histogram,
    stable_histogram,
    stable_histogram_threshold,
)
from dplong.privacy.interval import central_midpoint, local_midpoint
from dplong.privacy.noise import (
    randomized_response,
    release_bounded_sum,
    release_gaussian_sum,
)
from dplong.privacy.options import ReleaseOptions
from dplong.privacy.quantile import LogGrid, private_median
from dplong.privacy.radius import (
    DEFAULT_GAMMA,
    accurate_radius,
    bin_radius,
    clipping_bias,
    concentration_radius,
)
from dplong.privacy.variance import ScaleEstimate, estimate_scale
from dplong.privacy.winsorized import release_paper

__all__ = [
    "DEFAULT_GAMMA",
    "Accountant",
    "Composition",
    "Cost",
    "Histogram",
    "LedgerEntry",
    "LogGrid",
    "PrivacyLedger",
    "Release",
    "ReleaseOptions",
    "ReleasePlan",
    "ScaleEstimate",
    "accurate_radius",
    "bin_radius",
    "central_midpoint",
    "clipping_bias",
    "compose",
    "concentration_radius",
    "discrete_gaussian",
    "estimate_scale",
    "local_midpoint",
    "private_median",
    "randomized_histogram",
    "randomized_response",
    "release_bounded_sum",
    "release_gaussian_sum",
    "release_means",
    "release_paper",
    "stable_histogram",
    "stable_histogram_threshold",
    "zcdp_epsilon",
]
