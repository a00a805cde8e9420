"""dplong: user-level differentially private models for longitudinal (panel) data."""

from dplong import datasets, dependence, exceptions, kernels, privacy, report
from dplong.models import (
    BetweenOLS,
    LongitudinalOLS,
    NadarayaWatson,
    PanelOLS,
    PoissonMean,
    PooledOLS,
    PriestleyChao,
    RandomEffects,
    RandomEffectsLocation,
    winsorized_mean,
)
from dplong.planning import PlanResults, plan
from dplong.privacy import Accountant, PrivacyLedger
from dplong.privacy.radius import AssumedTail, Moment
from dplong.results import (
    CurveResults,
    GroupedResults,
    HausmanTest,
    PanelResults,
    RandomEffectsResults,
    RegressionResults,
    hausman,
)
from dplong.summary import compare

__version__ = "0.1.0"

__all__ = [
    "Accountant",
    "AssumedTail",
    "BetweenOLS",
    "CurveResults",
    "GroupedResults",
    "HausmanTest",
    "LongitudinalOLS",
    "Moment",
    "NadarayaWatson",
    "PanelOLS",
    "PanelResults",
    "PlanResults",
    "PoissonMean",
    "PooledOLS",
    "PriestleyChao",
    "PrivacyLedger",
    "RandomEffects",
    "RandomEffectsLocation",
    "RandomEffectsResults",
    "RegressionResults",
    "__version__",
    "compare",
    "datasets",
    "dependence",
    "exceptions",
    "hausman",
    "kernels",
    "plan",
    "privacy",
    "report",
    "winsorized_mean",
]
