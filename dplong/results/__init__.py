"""One results design for every model: immutable, built once, DP outputs and public facts only."""

from dplong.results.curve import CurveResults
from dplong.results.estimates import _check_alpha as _check_alpha  # summary.py checks with it
from dplong.results.grouped import GroupedResults
from dplong.results.grouped import grouped_label as grouped_label
from dplong.results.panel import PanelResults
from dplong.results.regression import RandomEffectsResults, RegressionResults
from dplong.results.spec import ModelSpec

__all__ = [
    "CurveResults",
    "GroupedResults",
    "ModelSpec",
    "PanelResults",
    "RandomEffectsResults",
    "RegressionResults",
]
