"""Formula models for panel data: each reduces users to statistics released privately."""

from dplong.models.kernel import PriestleyChao
from dplong.models.linear import LongitudinalOLS
from dplong.models.location import RandomEffectsLocation
from dplong.models.mean import winsorized_mean
from dplong.models.nadaraya import NadarayaWatson
from dplong.models.poisson import PoissonMean
from dplong.models.pooled import BetweenOLS, PanelOLS, PooledOLS
from dplong.models.random_effects import RandomEffects

__all__ = [
    "BetweenOLS",
    "LongitudinalOLS",
    "NadarayaWatson",
    "PanelOLS",
    "PoissonMean",
    "PooledOLS",
    "PriestleyChao",
    "RandomEffects",
    "RandomEffectsLocation",
    "winsorized_mean",
]
