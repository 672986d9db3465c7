"""The statistics every part of rate shares, one home for each: a trend's slope, normal and t
quantiles, the percentile interval of bootstrap replicates, and Holm's and Benjamini-Hochberg's
adjustments of a family of p-values."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np


def slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y on x (NaNs ignored)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(y)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(x[ok], y[ok], 1)[0])


def z_quantile(level: float) -> float:
    """The two-sided ``level`` quantile of the standard normal: 1.959964 at 0.95."""
    return NormalDist().inv_cdf(0.5 + level / 2)


def t_quantile(level: float, df: float) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom (the
    Cornish-Fisher expansion around the normal; within 3e-3 for df >= 5, 1e-4 for df >= 14)."""
    z = z_quantile(level)
    v = max(df, 1.0)
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
    )


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of bootstrap ``replicates``: their (1 - level) / 2 and
    (1 + level) / 2 quantiles (linear interpolation). The caller decides what to do with
    non-finite replicates."""
    lo, hi = np.quantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _ranked(p: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The p-values as floats, the order of their finite ones (ties in the order given), and
    how many are finite."""
    p = np.asarray(p, dtype=np.float64)
    finite = np.flatnonzero(~np.isnan(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    return p, order, len(order)


def holm(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error), in the order given.

    The k-th smallest of m p-values becomes max over j <= k of min(1, (m - j + 1) p_(j)).
    A NaN stays NaN and is not counted in m."""
    p, order, m = _ranked(p)
    out = np.full(p.shape, np.nan)
    out[order] = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    return out


def benjamini_hochberg(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values, false discovery rate), in the order given.

    The k-th smallest of m p-values becomes min(1, min over j >= k of m p_(j) / j). A NaN stays
    NaN and is not counted in m."""
    p, order, m = _ranked(p)
    out = np.full(p.shape, np.nan)
    stepped = (p[order] * m / np.arange(1, m + 1))[::-1]
    out[order] = np.minimum(1.0, np.minimum.accumulate(stepped)[::-1])
    return out
