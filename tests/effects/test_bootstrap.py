"""Stratified, seeded bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

import rate.effects.bootstrap
from rate.effects.bootstrap import _uniform_indices, bootstrap_statistics, percentile_intervals
from rate.effects.estimators import Scores, estimate


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


@pytest.fixture(params=[None, 3], ids=["one_segment", "segments_of_3"])
def segment(request, monkeypatch):
    """Run a test as it is and with tiny segments, so that small data go through the
    segment-by-segment resampling that large groups use."""
    if request.param:
        monkeypatch.setattr(rate.effects.bootstrap, "SEGMENT", request.param)
    return request.param


def test_intervals_identical_for_one_and_two_workers(segment):
    s = random_scores(150, seed=5)
    one = percentile_intervals(s, 100, seed=11, workers=1)
    two = percentile_intervals(s, 100, seed=11, workers=2)
    assert one == two


def test_resampling_is_stratified_by_w(segment):
    # Constant differences within each group: every stratified resample gives exactly them
    # (each resample draws exactly n_g items, also when drawn segment by segment).
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


@pytest.mark.parametrize(
    ("n", "segment", "n_resamples"),
    [(2000, 2**16, 2000), (2000, 256, 2000), (2000, 300, 2000), (3 * 2**16 + 5, 2**16, 400)],
    ids=["one_segment", "segments_of_256", "segments_of_300", "full_segments"],
)
def test_bootstrap_sd_of_a_group_mean_is_the_plug_in_standard_error(
    monkeypatch, n, segment, n_resamples
):
    # The bootstrap distribution of a mean of n iid draws with replacement has sd equal to
    # the plug-in sd of the data / sqrt(n); B resamples estimate it to ~1/sqrt(2B) (1.6% for
    # B = 2000): the tolerance is four of those.
    monkeypatch.setattr(rate.effects.bootstrap, "SEGMENT", segment)
    rng = np.random.default_rng(7)
    w = np.ones(n, dtype=bool)
    o = rng.normal(0.0, 2.0, n)
    r = o - rng.exponential(1.0, n)  # skewed differences: not only for normal data
    s = Scores(w, o, r, r + rng.normal(0.0, 1.0, n))
    stats = bootstrap_statistics(s, n_resamples, seed=1)
    diff = o - r
    se = diff.std() / np.sqrt(n)
    assert stats["ATT_single_rewrite"].std(ddof=1) == pytest.approx(
        se, rel=4 / np.sqrt(2 * n_resamples)
    )
    assert stats["ATT_single_rewrite"].mean() == pytest.approx(diff.mean(), abs=0.2 * se)


def test_every_resample_draws_exactly_n_in_full_segments():
    # Constant differences in a group of more than two full segments: each mean is exact.
    n = 2 * 2**16 + 7
    w = np.ones(n, dtype=bool)
    o = np.linspace(0.0, 1.0, n)
    stats = bootstrap_statistics(Scores(w, o, o - 0.25, o + 0.5), 5, seed=0)
    assert np.allclose(stats["ATT_single_rewrite"], 0.25, rtol=0, atol=1e-12)
    assert np.allclose(stats["ATT_rewritten_rewrite"], 0.75, rtol=0, atol=1e-12)


@pytest.mark.parametrize("bound", [1, 2, 6, 1000, 2**16, 2**31 + 1])
def test_uniform_indices_are_in_range_and_uniform(bound):
    # 2**31 + 1 rejects almost half of the 32-bit words: the redraw loop must finish.
    bitgen = np.random.PCG64(3)
    draws = _uniform_indices(np.empty(60_000, np.int64), bound, bitgen)
    assert draws.dtype == np.int64 and draws.min() >= 0 and draws.max() < bound
    frac = draws / bound  # uniform on [0, 1) up to 1 / bound: mean 1/2, variance 1/12
    if bound > 1:
        expected = (bound - 1) / (2 * bound)
        assert frac.mean() == pytest.approx(expected, abs=5 * np.sqrt(1 / 12 / draws.size))
    if bound in (6, 1000, 2**16):  # equally likely bins: chi-square with 5 or 7 dof
        bins = min(bound, 8)
        counts = np.bincount(draws * bins // bound, minlength=bins)
        chi2 = ((counts - draws.size / bins) ** 2 / (draws.size / bins)).sum()
        assert chi2 < 30  # P(chi2 > 30) < 1e-4 for 7 degrees of freedom
