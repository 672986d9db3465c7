"""Stratified, seeded bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

from rate.bootstrap import bootstrap_statistics, percentile_intervals
from rate.estimators import Scores, estimate


def random_scores(n: int, seed: int = 0, share_w1: float = 0.4) -> Scores:
    rng = np.random.default_rng(seed)
    w = rng.random(n) < share_w1
    o = rng.normal(1.0, 1.0, n) + w
    r = o - np.where(w, 0.5, -0.5) + rng.normal(0, 0.3, n)
    rr = r + np.where(w, 0.4, -0.4) + rng.normal(0, 0.3, n)
    return Scores(w, o, r, rr)


def test_seeded_and_independent_of_thread_count():
    s = random_scores(500)
    a = bootstrap_statistics(s, 120, seed=3, workers=1)
    b = bootstrap_statistics(s, 120, seed=3, workers=2)
    c = bootstrap_statistics(s, 120, seed=4, workers=2)
    for name in a:
        assert np.array_equal(a[name], b[name])
        assert not np.array_equal(a[name], c[name])
        assert a[name].shape == (120,)


def test_resampling_is_stratified_by_w():
    # Constant differences within each group: every stratified resample gives exactly them.
    w = np.array([True] * 4 + [False] * 6)
    o = np.arange(10, dtype=float)
    r = o - np.where(w, 2.0, -3.0)
    rr = r + np.where(w, 1.5, -0.5)
    stats = bootstrap_statistics(Scores(w, o, r, rr), 50, seed=0)
    assert np.allclose(stats["ATT_single_rewrite"], 2.0) and np.allclose(
        stats["ATU_single_rewrite"], 3.0
    )
    assert np.allclose(stats["ATE_single_rewrite"], (4 * 2.0 + 6 * 3.0) / 10)
    assert np.allclose(stats["ATT_rewritten_rewrite"], 1.5) and np.allclose(
        stats["ATU_rewritten_rewrite"], 0.5
    )


def test_bootstrap_spread_matches_the_analytic_standard_errors():
    s = random_scores(4000, seed=1)
    point = estimate(s)
    stats = bootstrap_statistics(s, 1000, seed=0)
    for name in (
        "naive_effect",
        "ATT_rewritten_rewrite",
        "ATU_rewritten_rewrite",
        "ATE_single_rewrite",
    ):
        assert stats[name].mean() == pytest.approx(point[name], abs=0.2 * point[f"{name}_stderr"])
        assert stats[name].std(ddof=1) == pytest.approx(point[f"{name}_stderr"], rel=0.1)
    low, high = percentile_intervals(s, 1000, seed=0)["ATE_rewritten_rewrite"]
    se = point["ATE_rewritten_rewrite_stderr"]
    assert low == pytest.approx(point["ATE_rewritten_rewrite"] - 1.96 * se, abs=0.3 * se)
    assert high == pytest.approx(point["ATE_rewritten_rewrite"] + 1.96 * se, abs=0.3 * se)


def test_one_group_only_has_no_atu_interval():
    s = random_scores(200, share_w1=1.1)  # every example has W=1
    iv = percentile_intervals(s, 50)
    assert np.isnan(iv["ATU_rewritten_rewrite"][0]) and np.isfinite(iv["ATT_rewritten_rewrite"][0])
    assert iv["ATE_rewritten_rewrite"] == iv["ATT_rewritten_rewrite"]


def test_bad_arguments():
    s = random_scores(20)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_statistics(s, 0)
    with pytest.raises(ValueError, match="level"):
        percentile_intervals(s, 10, level=1.5)
