"""The forecast table of a plan: one row per released column, its budget and predicted noise."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dplong.planning.checkpoints import FitPlan

_COLUMNS = (
    "share",
    "midpoint_epsilon",
    "scale_epsilon",
    "final_epsilon",
    "noise_sd",
    "sampling_sd",
    "noise_to_sampling",
    "unit",
)


def _table(fit_plan: FitPlan, fit_options: Mapping[str, Any]) -> pd.DataFrame:
    """One row per released column of a fit plan (the forecast of :func:`plan`)."""
    from dplong.privacy.engine import forecast_noise

    rows: list[dict[str, Any]] = []
    index: list[tuple[str, str]] = []
    stated = _stated_sd(fit_options, fit_plan)
    for i, block in enumerate(fit_plan.blocks):
        d = len(block.names)
        if block.plan is None:
            noise = np.full(d, np.nan) if block.noise_sd is None else block.noise_sd
            sampling = final = np.full(d, np.nan)
        else:
            noise, sampling = forecast_noise(
                block.plan,
                gamma=fit_plan.options.gamma,
                stated_scale=block.stated_scale,
                tail=block.tail,
                bounds=block.bounds,
                relative=block.relative,
            )
            budget = block.plan.calibrate(np.full(d, 1.0 / d), "laplace")
            final = budget.split(block.plan.moment_share)[0].epsilon
        absolute = (
            block.bounds is not None
            or block.noise_sd is not None
            or (stated is not None and len(fit_plan.blocks) == 1)
        )
        if (
            stated is not None
            and len(fit_plan.blocks) == 1
            and block.bounds is None
            and block.noise_sd is None
        ):
            noise, sampling = noise * stated, sampling * stated
        for j, name in enumerate(block.names):
            index.append((str(i), name))
            rows.append(
                {
                    "share": block.share,
                    "midpoint_epsilon": block.plan.midpoint if block.plan else np.nan,
                    "scale_epsilon": block.plan.spread if block.plan else np.nan,
                    "final_epsilon": float(final[j]),
                    "noise_sd": float(noise[j]),
                    "sampling_sd": float(sampling[j]),
                    "noise_to_sampling": float(noise[j] / sampling[j]),
                    "unit": "absolute" if absolute else "sigma",
                }
            )
    table: pd.DataFrame = pd.DataFrame(
        rows, index=pd.MultiIndex.from_tuples(index, names=["block", "column"]), columns=_COLUMNS
    )
    return table


def _stated_sd(fit_options: Mapping[str, Any], fit_plan: FitPlan) -> NDArray[np.float64] | None:
    """The sd a stated numeric ``scale`` (a variance proxy) gives each column of a one-block
    fit, or None (estimated, or a dependence model whose proxy the model computes)."""
    scale = fit_options.get("scale")
    if scale is None or isinstance(scale, str) or len(fit_plan.blocks) != 1:
        return None
    try:
        values = np.broadcast_to(np.asarray(scale, dtype=float), (len(fit_plan.blocks[0].names),))
    except (TypeError, ValueError):
        return None
    return np.asarray(np.sqrt(values), dtype=np.float64)


def _reaches(
    forecast_at: Callable[[float], pd.DataFrame | None], key: Any, target: float
) -> Callable[[float], bool]:
    def reaches(eps: float) -> bool:
        table = forecast_at(eps)
        return table is not None and bool(table.loc[key, "noise_sd"] <= target)

    return reaches
