"""dplong: user-level differentially private models for longitudinal (panel) data."""

from dplong import datasets, exceptions, privacy
from dplong.privacy import Accountant, PrivacyLedger, WinsorizedMeanResult, winsorized_mean

__version__ = "0.1.0"

__all__ = [
    "Accountant",
    "PrivacyLedger",
    "WinsorizedMeanResult",
    "__version__",
    "datasets",
    "exceptions",
    "privacy",
    "winsorized_mean",
]
