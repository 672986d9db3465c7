"""Bootstrap percentile intervals for the estimators, resampling within each W group.

Resampling is stratified by W (n1 and n0 stay fixed, as in the design) and seeded. Every
estimator of :data:`rate.effects.estimators.ESTIMATORS` (that the scores allow) is a function of the group means of its
per-example quantity, so a resample needs only those means: a vector of counts (n_g draws with
replacement, counted) times a (quantities, n_g) matrix. Resamples are computed in blocks, one random stream per block, on a small
thread pool (numpy releases the GIL in the heavy kernels).

Speed (n = 1e6, 1000 resamples): the counts are built segment by segment (see
``_resampled_means``) so that a segment's draws and counts stay in the core's cache, and the
indices come from the bit generator's raw output (``_uniform_indices``). The product uses
einsum, not BLAS, on purpose: OpenBLAS's own threads fight the worker threads for the cores.
Per group of 5e5 and resample, in ms of CPU on the 2-core dev box: indices 0.7-0.8, bincount
1.0-1.1, cast to float 0.3-0.5, product 1.1 (was: rng.integers(int32) 1.6-2.9, bincount
1.3-8.5 as it first converts int32 indices to intp, BLAS product 0.8-1.3).
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from rate.effects.estimators import Estimator, Scores, estimators_for, quantities
from rate.stats import percentile_interval

BLOCK = 25  # resamples per random stream
# Items per segment: a segment's draws and counts (~0.5 MB each) stay in the core's cache.
# 2**16: an index in a full segment is a 16-bit quarter of a random word, nothing rejected.
SEGMENT = 1 << 16

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_LOW_WORD = 0 if sys.byteorder == "little" else 1  # where a uint64's low 32 bits lie


def _group_matrix(s: Scores, rows: list[str], mask: np.ndarray) -> np.ndarray:
    """(quantities, n_g): each of ``rows``' per-example quantity within one W group."""
    values = quantities(s)
    return np.stack([values[q][mask] for q in rows]).astype(np.float64)


def _uniform_indices(out: np.ndarray, bound: int, bitgen: np.random.BitGenerator) -> np.ndarray:
    """Fill ``out`` (int64) with independent uniform indices in [0, bound), bound < 2**32.

    For bound = 2**16 (a full segment) an index is a 16-bit quarter of one of the bit
    generator's 64-bit outputs. Otherwise Lemire's multiply-shift with rejection: for a uniform
    32-bit u (a half of a 64-bit output), m = u * bound (exact in 64 bits) and the index is
    m >> 32; u is redrawn when the low 32 bits of m fall below 2**32 mod bound (a fraction
    below bound / 2**32 of the draws), which makes every index exactly equally likely.
    Both cost a fraction of rng.integers(0, bound, dtype=np.int32).
    """
    size = out.size
    if bound == 1 << 16:
        np.copyto(out, bitgen.random_raw((size + 3) // 4).view(np.uint16)[:size])
        return out
    work = out.view(np.uint64)
    scale, threshold = np.uint64(bound), np.uint32((1 << 32) % bound)
    np.multiply(bitgen.random_raw((size + 1) // 2).view(np.uint32)[:size], scale, out=work)
    if threshold:
        redo = np.flatnonzero(work.view(np.uint32)[_LOW_WORD::2] < threshold)
        while redo.size:  # in order, from the same stream: deterministic given the seed
            m = (bitgen.random_raw(redo.size) & _LOW32) * scale
            ok = (m & _LOW32) >= threshold
            work[redo[ok]] = m[ok]
            redo = redo[~ok]
    np.right_shift(work, _SHIFT32, out=work)
    return out


def _resampled_means(xt: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of the columns of xt: (n_resamples, 3).

    Each resample is n draws with replacement from the n columns, taken segment by segment:
    how many of the n draws land in each segment is drawn first, Multinomial(n, segment size
    / n), then that many uniform draws within the segment. That is the same distribution as
    n uniform draws over all columns (the segments' counts of n iid uniform draws are exactly
    that multinomial, and given them the draws in a segment are iid uniform on it), but a
    segment's draws and counts fit in cache, which makes bincount and the product cheaper.
    (numpy draws the multinomial as binomials on the double-precision shares; this is not the
    Poisson bootstrap: every resample has exactly n draws.)
    """
    k, n = xt.shape
    out = np.empty((n_resamples, k))
    if n == 0:
        out.fill(np.nan)
        return out
    sizes = [SEGMENT] * (n // SEGMENT) + ([n % SEGMENT] if n % SEGMENT else [])
    starts = np.cumsum([0, *sizes[:-1]]).tolist()
    segments = [(xt[:, lo : lo + size], size) for lo, size in zip(starts, sizes, strict=True)]
    share = np.array(sizes) / n
    bitgen = rng.bit_generator
    draws = np.empty(2 * max(sizes), np.int64)
    counts = np.empty(max(sizes))
    for b in range(n_resamples):
        per_segment = rng.multinomial(n, share).tolist() if len(sizes) > 1 else [n]
        total = np.zeros(k)
        for (x, size), m in zip(segments, per_segment, strict=True):
            if m > draws.size:
                draws = np.empty(m, np.int64)
            idx = _uniform_indices(draws[:m], size, bitgen)
            np.copyto(counts[:size], np.bincount(idx, minlength=size))
            total += np.einsum("ji,i->j", x, counts[:size])
        out[b] = total / n
    return out


def bootstrap_statistics(
    s: Scores, n_resamples: int = 1000, seed: int = 0, workers: int = 2
) -> dict[str, np.ndarray]:
    """Every estimator that ``s`` has the scores for, on each stratified resample: {name:
    array of n_resamples values}."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    w = s.w.astype(bool)
    n1, n0 = int(w.sum()), int((~w).sum())
    table = estimators_for(s)
    # The quantities the estimators average, in one matrix row each.
    rows = list(dict.fromkeys(e.quantity for e in table))
    x1, x0 = _group_matrix(s, rows, w), _group_matrix(s, rows, ~w)
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
    m1 = np.concatenate(parts[: len(blocks)])  # (B, quantities)
    m0 = np.concatenate(parts[len(blocks) :])

    def statistic(e: Estimator) -> np.ndarray:
        col = rows.index(e.quantity)
        if e.group == "w1":
            return m1[:, col]
        if e.group == "w0":
            return m0[:, col]
        if e.group == "contrast":
            return m1[:, col] - m0[:, col]
        if not n0 or not n1:  # "all": the n-weighted mean of the two groups
            return m1[:, col] if n1 else m0[:, col]
        return (n1 * m1[:, col] + n0 * m0[:, col]) / (n1 + n0)

    return {e.name: statistic(e) for e in table}


def percentile_intervals(
    s: Scores, n_resamples: int = 1000, seed: int = 0, level: float = 0.95, workers: int = 2
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of every estimator: {name: (low, high)}."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    stats = bootstrap_statistics(s, n_resamples, seed, workers)
    return {
        name: percentile_interval(v, level) if np.isfinite(v).all() else (np.nan, np.nan)
        for name, v in stats.items()
    }
