"""Off-policy estimators of a policy's expected gold label from labelled reference samples.

Everything works on one family's gold set (labels ``y``, log likelihood ratios ``log_w`` =
log pi_new(y|x) - log pi_ref(y|x), and a reward ``s`` of each response), with bootstrap
replicates drawn as count matrices so that thousands of replicates cost a few matrix products:

- SNIPS, the self-normalised importance-sampling mean sum(w y) / sum(w);
- doubly robust (DR): a gold-calibrated reward model q(s) = a + b s averaged over fresh samples
  of the new policy, plus the SNIPS-weighted mean of the gold residual y - q(s); cross-fitted
  over folds, so that no gold label both fits q and reports its own residual.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Abstention. The ESS of n gold samples cannot exceed about n * exp(-KL(new || ref)) (the chi^2
# divergence that sets the weights' variance is at least the KL), so a policy that has moved far
# has too few effective samples whatever the sample ESS shows: the heavy weights that would pull
# the estimate are most likely absent from the sample, which makes the sample ESS look fine.
# Below ESS_MIN effective samples per family the interval is not trusted (see RESULTS.md's
# certification coverage, which measures it).
ESS_MIN = 10.0
LEVEL = 0.95


def ess(log_w: np.ndarray) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2 of importance weights exp(log_w)."""
    w = np.exp(log_w - log_w.max())
    return float(w.sum() ** 2 / (w**2).sum())


def snips(y: np.ndarray, log_w: np.ndarray) -> float:
    """The self-normalised importance-sampling mean of ``y``."""
    w = np.exp(log_w - log_w.max())
    return float((w * y).sum() / w.sum())


def bootstrap_counts(n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """(reps, n) multiplicities of n draws with replacement, one row per replicate."""
    idx = rng.integers(0, n, size=(reps, n))
    counts = np.zeros((reps, n))
    np.add.at(counts, (np.arange(reps)[:, None], idx), 1.0)
    return counts


def snips_replicates(y: np.ndarray, log_w: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """SNIPS of each bootstrap replicate given by ``counts`` (reps, n)."""
    w = np.exp(log_w - log_w.max())
    den = counts @ w
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ (w * y)) / den


def folds_of(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A random fold (0..k-1) for each of n samples, as equal in size as possible."""
    return rng.permutation(np.arange(n) % k)


def _line_fit(counts: np.ndarray, s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate (rows of ``counts``), the least-squares line y ~ a + b s."""
    n0 = counts.sum(1)
    sx, sy = counts @ s, counts @ y
    sxx, sxy = counts @ (s * s), counts @ (s * y)
    det = n0 * sxx - sx * sx
    with np.errstate(invalid="ignore", divide="ignore"):
        b = np.where(det > 1e-12 * np.maximum(n0 * sxx, 1e-300), (n0 * sxy - sx * sy) / det, 0.0)
        a = (sy - b * sx) / n0
    return a, b


def dr_replicates(
    y: np.ndarray,
    log_w: np.ndarray,
    s: np.ndarray,
    s_fresh: np.ndarray,
    folds: np.ndarray,
    counts: np.ndarray,
    fresh_counts: np.ndarray,
) -> np.ndarray:
    """The cross-fitted doubly robust estimate of each replicate (``counts`` over the gold set,
    ``fresh_counts`` over the fresh samples; a row of ones each gives the point estimate)."""
    w = np.exp(log_w - log_w.max())
    fresh_mean = (fresh_counts @ s_fresh) / fresh_counts.sum(1)
    total = np.zeros(counts.shape[0])
    n = len(y)
    for k in np.unique(folds):
        inside = folds == k
        a, b = _line_fit(counts * ~inside, s, y)
        c = counts[:, inside]
        wk, yk, sk = w[inside], y[inside], s[inside]
        with np.errstate(invalid="ignore", divide="ignore"):
            residual = (c @ (wk * yk) - a * (c @ wk) - b * (c @ (wk * sk))) / (c @ wk)
        total += inside.sum() / n * (a + b * fresh_mean + residual)
    return total


@dataclass
class Interval:
    """A point estimate with its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float

    @classmethod
    def of(cls, point: float, replicates: np.ndarray, level: float = LEVEL) -> Interval:
        r = replicates[np.isfinite(replicates)]
        if len(r) == 0:
            return cls(point, float("nan"), float("nan"))
        lo, hi = np.quantile(r, [(1 - level) / 2, (1 + level) / 2])
        return cls(point, float(lo), float(hi))

    def as_dict(self) -> dict:
        return {k: round(v, 6) for k, v in vars(self).items()}


def abstains(ess_value: float, n: int, kl: float, ess_min: float = ESS_MIN) -> str | None:
    """Why the weights cannot support an answer (None when they can)."""
    if ess_value < ess_min:
        return f"ESS {ess_value:.1f} < {ess_min:g}"
    supported = n * np.exp(-max(kl, 0.0))
    if supported < ess_min:
        return f"KL {kl:.2f} to the reference: n*exp(-KL) = {supported:.1f} < {ess_min:g}"
    return None
