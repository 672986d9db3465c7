"""The statistics every part of rate shares: one home for each (a trend's slope, ...)."""

from __future__ import annotations

import numpy as np


def slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y on x (NaNs ignored)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(x[ok], y[ok], 1)[0])
