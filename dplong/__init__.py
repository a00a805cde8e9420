"""dplong: user-level differentially private models for longitudinal (panel) data."""

from dplong import datasets, dependence, exceptions, kernels, privacy
from dplong.models import LongitudinalOLS, PriestleyChao, RandomEffectsLocation
from dplong.privacy import Accountant, PrivacyLedger, WinsorizedMeanResult, winsorized_mean

__version__ = "0.1.0"

__all__ = [
    "Accountant",
    "LongitudinalOLS",
    "PriestleyChao",
    "PrivacyLedger",
    "RandomEffectsLocation",
    "WinsorizedMeanResult",
    "__version__",
    "datasets",
    "dependence",
    "exceptions",
    "kernels",
    "privacy",
    "winsorized_mean",
]
