"""One results design for every model: immutable, built once, DP outputs and public facts only."""

from dplong.results.curve import CurveResults
from dplong.results.grouped import GroupedResults
from dplong.results.grouped import grouped_label as grouped_label
from dplong.results.panel import PanelResults
from dplong.results.regression import (
    PredictionResults,
    RandomEffectsResults,
    RegressionResults,
)
from dplong.results.restrictions import BiasAllowedContrast, BiasAllowedWald
from dplong.results.spec import ModelSpec
from dplong.results.specification import HausmanTest, hausman

__all__ = [
    "BiasAllowedContrast",
    "BiasAllowedWald",
    "CurveResults",
    "GroupedResults",
    "HausmanTest",
    "ModelSpec",
    "PanelResults",
    "PredictionResults",
    "RandomEffectsResults",
    "RegressionResults",
    "hausman",
]
