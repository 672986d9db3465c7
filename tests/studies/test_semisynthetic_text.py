"""The semi-synthetic length experiment on drug reviews: its construction, and a small run with
the study page's claim."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rate.studies.semisynthetic_text import (
    LEVELS,
    METHODS,
    cell_counts,
    draw_levels,
    max_n,
    p_long,
    realised,
    run_semisynthetic_text,
)
from tests.helpers import slope_se


def test_every_level_draws_n_with_the_papers_proportions():
    """P(long | positive) = 0.5 + 0.05 i and P(long | negative) = 0.5 - 0.05 i, half the sample
    positive, the same n at every level, no review twice."""
    rng = np.random.default_rng(0)
    w = rng.random(2000) < 0.5
    z = rng.random(2000) < 0.6
    n = 200
    draws = draw_levels(w, z, n, np.random.default_rng(1))
    assert len(draws) == len(LEVELS) == 11
    for i, idx in zip(LEVELS, draws, strict=True):
        assert len(idx) == n and len(set(idx.tolist())) == n
        r = realised(w, z, idx)
        p_pos, p_neg = p_long(i)
        assert r["n_positive"] == n // 2
        assert r["p_long_given_positive"] == pytest.approx(p_pos, abs=1e-12)
        assert r["p_long_given_negative"] == pytest.approx(p_neg, abs=1e-12)
        assert sum(cell_counts(i, n).values()) == n
    assert realised(w, z, draws[0])["corr_w_z"] == pytest.approx(0.0, abs=1e-12)
    assert realised(w, z, draws[10])["corr_w_z"] == pytest.approx(1.0)


def test_n_is_limited_by_the_cells_the_last_level_needs():
    # 30 short negatives: the last level needs n/2 of them; level 0 needs n/4 short positives.
    w = np.array([1] * 100 + [0] * 50 + [1] * 100 + [0] * 30, bool)
    z = np.array([1] * 150 + [0] * 130, bool)
    assert max_n(w, z) == 60
    with pytest.raises(ValueError, match="use n <= 60"):
        draw_levels(w, z, 62, np.random.default_rng(0))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> tuple[dict, Path]:
    """200 drug reviews rewritten by the rules and scored by MiniLM once; n = 40 per level, 20
    draws per level (the draws cost no scoring)."""
    out = tmp_path_factory.mktemp("semisynthetic_text")
    return run_semisynthetic_text(out, n=40, repeats=20, seed=0, pool_n=200), out


def test_a_small_run_on_real_reviews(small_run, tmp_path):
    with pytest.raises(ValueError, match="allows at most"):  # refused before any scoring
        run_semisynthetic_text(tmp_path, n=400, seed=0, pool_n=200)
    result, out = small_run
    assert result["n_per_level"] == 40 and len(result["levels"]) == 11
    for lv in result["levels"]:
        p_pos, p_neg = p_long(lv["level"])
        assert lv["realised"]["n"] == 40
        assert lv["realised"]["p_long_given_positive"] == pytest.approx(p_pos)
        assert lv["realised"]["p_long_given_negative"] == pytest.approx(p_neg)
        assert lv["realised_all_draws_equal"]
        for m in METHODS:
            assert math.isfinite(lv[m]["mean"]) and math.isfinite(lv[m]["first_draw_stderr"])
            assert lv[m]["first_draw_stderr"] > 0
    for unit in ("raw", "pool_sd"):
        for which in ("first_draw", "mean"):
            assert all(math.isfinite(v) for v in result["slopes"][unit][which].values())
    written = json.loads((out / "semisynthetic_text.json").read_text())
    assert written["slopes"] == result["slopes"]
    assert (out / "semisynthetic_text.md").read_text().count("\n| ") >= 13
    assert any(p.endswith(".png") for p in result["figures"])


def level_slope_se(result: dict, method: str) -> float:
    """The SE of a method's slope over the levels from one draw's SEs (tests.helpers.slope_se).
    The mean over draws varies no more than one draw does, so this bounds its SE too."""
    return slope_se(LEVELS, [lv[method]["first_draw_stderr"] for lv in result["levels"]])


def test_the_naive_estimate_follows_the_correlation_while_rate_stays_flat(small_run):
    """experiments/semisynthetic_text: as length is made to correlate with sentiment, the naive
    length effect rises with the level and RATE's does not move. Each check fails only where
    the claim would pass it with probability below 0.0005 (normal tails): the naive slope above
    3.29 SE (one-sided 0.0005), RATE's within 3.48 SE of 0 (two-sided 0.0005)."""
    result, _ = small_run
    slopes = result["slopes"]["raw"]["mean"]
    naive_se, rate_se = level_slope_se(result, "naive"), level_slope_se(result, "rate")
    assert slopes["naive"] > 3.29 * naive_se, (slopes["naive"], naive_se)
    assert abs(slopes["rate"]) < 3.48 * rate_se, (slopes["rate"], rate_se)
