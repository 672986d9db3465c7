"""The estimators table drives every output: estimates, bootstrap statistics, intervals."""

from __future__ import annotations

import numpy as np

from rate.effects.bootstrap import bootstrap_statistics
from rate.effects.estimators import (
    BY_NAME,
    ESTIMANDS,
    ESTIMATORS,
    METHODS,
    Scores,
    by_estimand,
    estimate,
    estimator,
)
from rate.effects.stage import compute_effects


def scores(n: int = 50) -> Scores:
    rng = np.random.default_rng(1)
    return Scores(np.arange(n) % 3 == 0, *rng.normal(size=(4, n)))


def test_every_estimator_has_its_estimate_its_se_and_its_statistic():
    s = scores()
    est, stats = estimate(s), bootstrap_statistics(s, 30)
    assert list(stats) == [e.name for e in ESTIMATORS]
    for e in ESTIMATORS:
        assert np.isfinite(est[e.name]) and est[f"{e.name}_stderr"] > 0
        assert (f"{e.name}_stderr_unpaired" in est) == e.unpaired_se
    result = compute_effects(s, None, 30, 0, 0.9)
    intervals = result["intervals"]
    assert set(intervals["normal"]) == {e.name for e in ESTIMATORS} | {
        f"{e.name}_unpaired" for e in ESTIMATORS if e.unpaired_se
    }
    assert set(intervals["bootstrap"]) == {e.name for e in ESTIMATORS}
    assert {e.name for e in ESTIMATORS} <= set(result["normalized"])


def test_lookups():
    assert estimator("rate", "ATT").name == "ATT_rewritten_rewrite"
    assert estimator("naive", "ATT") is None and estimator("naive", "ATE").name == "naive_effect"
    assert set(by_estimand("ATU")) == {"single_rewrite", "rate", "rate_placebo"}
    assert {e.estimand for e in ESTIMATORS} == set(ESTIMANDS)
    assert {e.method for e in ESTIMATORS} == set(METHODS)
    assert BY_NAME["ATE_single_rewrite"].group == "all"
