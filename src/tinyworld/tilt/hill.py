"""The Hill estimator of a tail index, and the data of the tail's quantile-quantile plots.

For X with a Pareto-type tail, P(X > x) ~ x^(-alpha), Hill's estimate of the extreme-value
index xi = 1/alpha on the top k order statistics X_(1) >= ... >= X_(k+1) > 0 is

    xi_hat = (1/k) * sum_{i=1..k} log(X_(i) / X_(k+1)).

A reward is not a Pareto variable, but its exponential is the weight of the tilt
pi_beta ~ pi_ref * exp(r / beta): Hill's estimate on w = exp(r / beta) is the mean excess of r
over its (k+1)-th largest value, divided by beta (:func:`weight_tail_index`). Weights with
alpha <= 2 have no finite variance, and the reweighted mean cannot be trusted however many
samples are drawn; alpha <= 1 means not even their mean is finite in the tail's limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_K = 5


def default_k(n: int) -> int:
    """The number of order statistics Hill's estimate uses: floor(sqrt(n)), at least 5.

    sqrt(n) is the usual compromise: k must grow with n for the variance (xi^2 / k) to shrink,
    and k/n must shrink for the bias from the body of the distribution to vanish.
    """
    return max(MIN_K, math.isqrt(n))


@dataclass(frozen=True)
class HillEstimate:
    """Hill's estimate of xi = 1/alpha on the top ``k`` of ``n`` values, with its standard error
    (xi / sqrt(k), the asymptotic one) and the threshold X_(k+1)."""

    xi: float
    alpha: float
    se_xi: float
    k: int
    n: int
    threshold: float

    def as_dict(self) -> dict:
        return {
            "xi": round(self.xi, 6),
            "alpha": round(self.alpha, 6),
            "se_xi": round(self.se_xi, 6),
            "k": self.k,
            "n": self.n,
            "threshold": round(self.threshold, 6),
        }


def hill(x: np.ndarray, k: int | None = None) -> HillEstimate:
    """Hill's estimate on the top ``k`` values of ``x`` (default :func:`default_k`).

    Raises ValueError unless there are more than k values and the (k+1)-th largest is > 0.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    k = _check_k(x, k)
    threshold = float(np.sort(x)[::-1][k])
    if threshold <= 0:
        raise ValueError(
            f"Hill's estimate needs the {k + 1}-th largest value > 0, got {threshold:.4g}; "
            "estimate the tail of exp(x) instead (weight_tail_index)"
        )
    return hill_of_logs(np.log(x[x > 0]), k, n=x.size)


def hill_of_logs(log_x: np.ndarray, k: int | None = None, n: int | None = None) -> HillEstimate:
    """Hill's estimate from log X (so that exp(r / beta) never has to be formed): the mean of
    the top k logs minus the (k+1)-th largest. ``n`` is the sample's size when ``log_x`` holds
    only its positive values."""
    log_x = np.asarray(log_x, dtype=np.float64).reshape(-1)
    k = _check_k(log_x, k)
    top = np.sort(log_x)[::-1][: k + 1]
    xi = float(np.mean(top[:k] - top[k]))
    alpha = math.inf if xi == 0 else 1.0 / xi
    return HillEstimate(xi, alpha, xi / math.sqrt(k), k, n or log_x.size, float(np.exp(top[k])))


def _check_k(x: np.ndarray, k: int | None) -> int:
    k = default_k(x.size) if k is None else int(k)
    if k < 1 or k >= x.size:
        raise ValueError(f"Hill's estimate needs 1 <= k < n, got k={k} for n={x.size}")
    if not np.isfinite(x).all():
        raise ValueError("Hill's estimate needs finite values")
    return k


def weight_tail_index(r: np.ndarray, beta: float, k: int | None = None) -> HillEstimate:
    """Hill's estimate for the weights exp(r / beta) of a tilt: xi = mean(r_(i) - r_(k+1)) / beta
    over the top k, computed from the logs r / beta (the weights themselves may overflow).
    Its threshold is reported as exp((r_(k+1) - max r) / beta), the weight scaled by the largest.
    """
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    r = np.asarray(r, dtype=np.float64).reshape(-1)
    return hill_of_logs((r - r.max()) / beta, k)


def exponential_qq(x: np.ndarray, k: int | None = None) -> dict[str, list[float]]:
    """Q-Q data of the top ``k`` excesses over X_(k+1) against standard exponential quantiles.

    Under an exponential tail (a light, Gumbel-domain tail, where the tilt's weights are
    Pareto with alpha = beta / scale) the points lie on a line through 0 whose slope is the
    scale; a heavier tail bends upwards at the right. The quantiles are -log(1 - i/(k+1)).
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    k = default_k(x.size) if k is None else int(k)
    if k < 1 or k >= x.size:
        raise ValueError(f"the Q-Q plot needs 1 <= k < n, got k={k} for n={x.size}")
    top = np.sort(x)[::-1][: k + 1]
    excess = np.sort(top[:k] - top[k])  # ascending
    theoretical = -np.log1p(-np.arange(1, k + 1) / (k + 1))
    return {
        "theoretical": [round(float(v), 6) for v in theoretical],
        "empirical": [round(float(v), 6) for v in excess],
    }


def pareto_qq(x: np.ndarray, k: int | None = None) -> dict[str, list[float]]:
    """Pareto Q-Q data of the top ``k`` values: log(X_(i) / X_(k+1)) against -log(i/(k+1)).

    For a Pareto-type tail the points lie on a line through 0 with slope xi = 1/alpha.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    est = hill(x, k)  # checks k and the threshold
    top = np.sort(x)[::-1][: est.k]
    i = np.arange(1, est.k + 1)
    return {
        "theoretical": [round(float(v), 6) for v in -np.log(i / (est.k + 1))],
        "empirical": [round(float(v), 6) for v in np.log(top / est.threshold)],
    }
