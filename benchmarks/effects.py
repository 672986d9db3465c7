"""Timing of the effect estimators and their bootstrap intervals on synthetic scores.

``bench_effects()`` returns plain figures (seconds and sizes) for a benchmark table; the data
are synthetic: W ~ Bernoulli(0.5), normal scores with a true effect of the attribute.
"""

from __future__ import annotations

import time

import numpy as np

from rate.effects.bootstrap import percentile_intervals
from rate.effects.estimators import Scores, estimate

WORKERS = 2


def synthetic_scores(n: int, seed: int = 0, effect: float = 0.5) -> Scores:
    """W ~ Bernoulli(0.5); rewriting moves the score by ``effect`` (plus noise) each way."""
    rng = np.random.default_rng(seed)
    w = rng.random(n) < 0.5
    toward = np.where(w, 1.0, -1.0)  # a rewrite flips W: the score moves by -effect * toward
    original = rng.normal(0.0, 1.0, n) + effect * w
    rewrite = original - effect * toward + rng.normal(0.0, 0.3, n)
    rewritten_rewrite = rewrite + effect * toward + rng.normal(0.0, 0.3, n)
    return Scores(w, original, rewrite, rewritten_rewrite)


def bench_effects(n: int = 1_000_000, n_resamples: int = 1000, seed: int = 0) -> dict:
    """Seconds for ``estimate`` and ``percentile_intervals`` on n synthetic examples."""
    s = synthetic_scores(n, seed)
    t0 = time.perf_counter()
    point = estimate(s)
    t1 = time.perf_counter()
    intervals = percentile_intervals(s, n_resamples, seed=seed, workers=WORKERS)
    t2 = time.perf_counter()
    low, high = intervals["ATE_rewritten_rewrite"]
    return {
        "n": n,
        "n_resamples": n_resamples,
        "workers": WORKERS,
        "estimate_s": round(t1 - t0, 4),
        "bootstrap_s": round(t2 - t1, 4),
        "total_s": round(t2 - t0, 4),
        "ATE_rewritten_rewrite": point["ATE_rewritten_rewrite"],
        "ATE_rewritten_rewrite_interval": (low, high),
    }


if __name__ == "__main__":
    print(bench_effects())
