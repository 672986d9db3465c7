"""Bootstrap percentile intervals for the estimators, resampling within each W group.

Resampling is stratified by W (n1 and n0 stay fixed, as in the design) and seeded. Each
resample needs only three group means (original score, single-rewrite difference, RATE
difference), so a resample is a vector of counts times a (n, 3) matrix, computed in chunks
on a small thread pool (numpy releases the GIL in these kernels).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from rate.estimators import Scores

BLOCK = 25  # resamples per random stream

STATISTICS = (
    "naive_effect",
    "ATT_single_rewrite",
    "ATU_single_rewrite",
    "ATE_single_rewrite",
    "ATT_rewritten_rewrite",
    "ATU_rewritten_rewrite",
    "ATE_rewritten_rewrite",
)


def _group_matrix(s: Scores, mask: np.ndarray, sign: float) -> np.ndarray:
    """(n_g, 3): original score, single-rewrite difference, RATE difference (oriented W=1-W=0)."""
    o, r, rr = s.original[mask], s.rewrite[mask], s.rewritten_rewrite[mask]
    return np.stack([o, sign * (o - r), sign * (rr - r)], axis=1).astype(np.float64)


def _resampled_means(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of the rows of x: (n_resamples, 3)."""
    n = x.shape[0]
    out = np.empty((n_resamples, x.shape[1]))
    if n == 0:
        out.fill(np.nan)
        return out
    # 32-bit indices draw twice as fast as 64-bit ones (measured: 1.6 vs 3.1 ms per 500k).
    index_type = np.int32 if n < 2**31 else np.int64
    for b in range(n_resamples):
        counts = np.bincount(rng.integers(0, n, n, dtype=index_type), minlength=n)
        out[b] = counts @ x / n
    return out


def bootstrap_statistics(
    s: Scores, n_resamples: int = 1000, seed: int = 0, workers: int = 2
) -> dict[str, np.ndarray]:
    """Every estimator on each stratified resample: {name: array of n_resamples values}."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    w = s.w.astype(bool)
    n1, n0 = int(w.sum()), int((~w).sum())
    x1, x0 = _group_matrix(s, w, 1.0), _group_matrix(s, ~w, -1.0)
    # One random stream per (group, block of resamples), derived from the seed, so the result
    # depends on the seed alone and not on how many threads share the work.
    blocks = [min(BLOCK, n_resamples - i) for i in range(0, n_resamples, BLOCK)]
    seeds = np.random.SeedSequence(seed).spawn(2 * len(blocks))
    jobs = [(x1, b, seeds[i]) for i, b in enumerate(blocks)]
    jobs += [(x0, b, seeds[len(blocks) + i]) for i, b in enumerate(blocks)]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        parts = list(
            pool.map(
                lambda job: _resampled_means(job[0], job[1], np.random.default_rng(job[2])), jobs
            )
        )
    m1 = np.concatenate(parts[: len(blocks)])  # (B, 3)
    m0 = np.concatenate(parts[len(blocks) :])

    def ate(col: int) -> np.ndarray:  # the n-weighted mean of ATT and ATU
        if not n0 or not n1:
            return m1[:, col] if n1 else m0[:, col]
        return (n1 * m1[:, col] + n0 * m0[:, col]) / (n1 + n0)

    return {
        "naive_effect": m1[:, 0] - m0[:, 0],
        "ATT_single_rewrite": m1[:, 1],
        "ATU_single_rewrite": m0[:, 1],
        "ATE_single_rewrite": ate(1),
        "ATT_rewritten_rewrite": m1[:, 2],
        "ATU_rewritten_rewrite": m0[:, 2],
        "ATE_rewritten_rewrite": ate(2),
    }


def percentile_intervals(
    s: Scores, n_resamples: int = 1000, seed: int = 0, level: float = 0.95, workers: int = 2
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of every estimator: {name: (low, high)}."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    stats = bootstrap_statistics(s, n_resamples, seed, workers)
    alpha = (1 - level) / 2
    return {
        name: (float(np.quantile(v, alpha)), float(np.quantile(v, 1 - alpha)))
        if np.isfinite(v).all()
        else (np.nan, np.nan)
        for name, v in stats.items()
    }
