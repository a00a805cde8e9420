"""dplong: user-level differentially private models for longitudinal (panel) data."""

from dplong import datasets, dependence, exceptions, privacy
from dplong.models import LongitudinalOLS, RandomEffectsLocation
from dplong.privacy import Accountant, PrivacyLedger, WinsorizedMeanResult, winsorized_mean

__version__ = "0.1.0"

__all__ = [
    "Accountant",
    "LongitudinalOLS",
    "PrivacyLedger",
    "RandomEffectsLocation",
    "WinsorizedMeanResult",
    "__version__",
    "datasets",
    "dependence",
    "exceptions",
    "privacy",
    "winsorized_mean",
]
