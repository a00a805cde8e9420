"""dplong: user-level differentially private models for longitudinal (panel) data."""

from dplong import datasets, dependence, exceptions, kernels, privacy
from dplong.models import (
    LongitudinalOLS,
    PoissonMean,
    PriestleyChao,
    RandomEffectsLocation,
    winsorized_mean,
)
from dplong.privacy import Accountant, PrivacyLedger
from dplong.results import CurveResults, PanelResults

__version__ = "0.1.0"

__all__ = [
    "Accountant",
    "CurveResults",
    "LongitudinalOLS",
    "PanelResults",
    "PoissonMean",
    "PriestleyChao",
    "PrivacyLedger",
    "RandomEffectsLocation",
    "__version__",
    "datasets",
    "dependence",
    "exceptions",
    "kernels",
    "privacy",
    "winsorized_mean",
]
