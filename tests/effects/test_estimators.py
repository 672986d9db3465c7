"""Known-answer tests for every estimator and standard error, computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rate.effects.estimators import Scores, estimate
from rate.errors import RateError

# Three W=1 examples and two W=0 examples.
W = np.array([True, True, True, False, False])
ORIG = np.array([5.0, 7.0, 6.0, 2.0, 4.0])
R = np.array([3.0, 4.0, 5.0, 3.0, 6.0])
RR = np.array([4.0, 6.0, 7.0, 1.0, 4.0])


@pytest.fixture
def fx() -> dict:
    return estimate(Scores(W, ORIG, R, RR))


def test_counts_and_naive(fx):
    assert (fx["Y1_count"], fx["Y0_count"]) == (3, 2)
    # mean(5,7,6) - mean(2,4) = 6 - 3
    assert fx["naive_effect"] == pytest.approx(3.0)
    # var(5,7,6)=1, var(2,4)=2 -> sqrt(1/3 + 2/2)
    assert fx["naive_effect_stderr"] == pytest.approx(math.sqrt(1 / 3 + 1))


def test_single_rewrite(fx):
    # W=1: ORIG-R = 2,3,1 -> mean 2, sd 1 -> se 1/sqrt(3)
    assert fx["ATT_single_rewrite"] == pytest.approx(2.0)
    assert fx["ATT_single_rewrite_stderr"] == pytest.approx(1 / math.sqrt(3))
    # W=0: R-ORIG = 1,2 -> mean 1.5, sd sqrt(0.5) -> se 0.5
    assert fx["ATU_single_rewrite"] == pytest.approx(1.5)
    assert fx["ATU_single_rewrite_stderr"] == pytest.approx(0.5)
    # all: 2,3,1,1,2 -> mean 1.8, var 0.7 -> se sqrt(0.7/5)
    assert fx["ATE_single_rewrite"] == pytest.approx(1.8)
    assert fx["ATE_single_rewrite_stderr"] == pytest.approx(math.sqrt(0.7 / 5))


def test_rate_paired(fx):
    # W=1: RR-R = 1,2,2 -> mean 5/3, var 1/3 -> se sqrt(1/9)
    assert fx["ATT_rewritten_rewrite"] == pytest.approx(5 / 3)
    assert fx["ATT_rewritten_rewrite_stderr"] == pytest.approx(1 / 3)
    # W=0: R-RR = 2,2 -> mean 2, sd 0
    assert fx["ATU_rewritten_rewrite"] == pytest.approx(2.0)
    assert fx["ATU_rewritten_rewrite_stderr"] == pytest.approx(0.0)
    # ATE = (3 * 5/3 + 2 * 2) / 5 = 1.8; diffs 1,2,2,2,2 -> var 0.2 -> se sqrt(0.2/5)
    assert fx["ATE_rewritten_rewrite"] == pytest.approx(1.8)
    assert fx["ATE_rewritten_rewrite"] == pytest.approx(
        (3 * fx["ATT_rewritten_rewrite"] + 2 * fx["ATU_rewritten_rewrite"]) / 5
    )
    assert fx["ATE_rewritten_rewrite_stderr"] == pytest.approx(math.sqrt(0.2 / 5))


def test_rate_unpaired_reference_se(fx):
    # ATT: var(RR|W=1)=var(4,6,7)=7/3, var(R|W=1)=var(3,4,5)=1 -> sqrt(7/9 + 1/3)
    assert fx["ATT_rewritten_rewrite_stderr_unpaired"] == pytest.approx(math.sqrt(7 / 9 + 1 / 3))
    # ATU: var(R|W=0)=var(3,6)=4.5, var(RR|W=0)=var(1,4)=4.5 -> sqrt(4.5/2 + 4.5/2)
    assert fx["ATU_rewritten_rewrite_stderr_unpaired"] == pytest.approx(math.sqrt(4.5))
    # ATE: do1 = 4,6,7,3,6 (var 2.7); do0 = 3,4,5,1,4 (var 2.3) -> sqrt(2.7/5 + 2.3/5) = 1
    assert fx["ATE_rewritten_rewrite_stderr_unpaired"] == pytest.approx(1.0)


def test_reward_std_and_rewrite_effects(fx):
    # pooled: ((3-1)*1 + (2-1)*2) / 3 = 4/3
    assert fx["reward_std"] == pytest.approx(math.sqrt(4 / 3))
    # W=1: RR-ORIG = -1,-1,1 -> mean -1/3, var 4/3 -> se sqrt(4/9)
    assert fx["rewrite_effect_w_1"] == pytest.approx(-1 / 3)
    assert fx["rewrite_effect_w_1_stderr"] == pytest.approx(2 / 3)
    # W=0: RR-ORIG = -1,0 -> mean -0.5, sd sqrt(0.5) -> se 0.5
    assert fx["rewrite_effect_w_0"] == pytest.approx(-0.5)
    assert fx["rewrite_effect_w_0_stderr"] == pytest.approx(0.5)


def test_one_group_only_gives_att_but_no_atu_or_naive():
    w = np.array([True, True, True])
    fx = estimate(Scores(w, ORIG[:3], R[:3], RR[:3]))
    assert fx["ATT_rewritten_rewrite"] == pytest.approx(5 / 3)
    assert math.isnan(fx["ATU_rewritten_rewrite"]) and math.isnan(fx["naive_effect"])


def test_non_finite_scores_are_refused_with_the_example():
    bad = R.copy()
    bad[3] = np.nan
    with pytest.raises(RateError, match="non-finite 'rewrite' score.*example 3"):
        Scores(W, ORIG, bad, RR)


# The placebo rewrite: the rewrite rewritten again with W kept.
P = np.array([3.5, 4.0, 6.0, 2.0, 5.0])


@pytest.fixture
def fp() -> dict:
    return estimate(Scores(W, ORIG, R, RR, P))


def test_rate_placebo_paired(fp):
    # W=1: RR-P = 0.5,2,1 -> mean 7/6, var 7/12 -> se sqrt(7/36)
    assert fp["ATT_rewritten_rewrite_placebo"] == pytest.approx(7 / 6)
    assert fp["ATT_rewritten_rewrite_placebo_stderr"] == pytest.approx(math.sqrt(7) / 6)
    # W=0: P-RR = 1,1 -> mean 1, sd 0
    assert fp["ATU_rewritten_rewrite_placebo"] == pytest.approx(1.0)
    assert fp["ATU_rewritten_rewrite_placebo_stderr"] == pytest.approx(0.0)
    # all: 0.5,2,1,1,1 -> mean 1.1, var 0.3 -> se sqrt(0.3/5)
    assert fp["ATE_rewritten_rewrite_placebo"] == pytest.approx(1.1)
    assert fp["ATE_rewritten_rewrite_placebo_stderr"] == pytest.approx(math.sqrt(0.06))
    # Paired only: the reference never had it, so no unpaired SE.
    assert "ATE_rewritten_rewrite_placebo_stderr_unpaired" not in fp


def test_placebo_drift_is_what_the_correction_takes_off_rate(fp):
    # W=1: P-R = 0.5,0,1 -> mean 0.5, var 0.25 -> se 0.5/sqrt(3); W=0: P-R = -1,-1
    assert fp["placebo_drift_w_1"] == pytest.approx(0.5)
    assert fp["placebo_drift_w_1_stderr"] == pytest.approx(0.5 / math.sqrt(3))
    assert (fp["placebo_drift_w_0"], fp["placebo_drift_w_0_stderr"]) == pytest.approx((-1, 0))
    # ATT: RATE minus the drift; ATU: RATE plus it (the W=0 differences are signed -1).
    assert fp["ATT_rewritten_rewrite_placebo"] == pytest.approx(5 / 3 - 0.5)
    assert fp["ATU_rewritten_rewrite_placebo"] == pytest.approx(2.0 + -1.0)


def test_without_placebo_scores_the_estimator_is_absent_and_nothing_else_changes(fx, fp):
    assert not [k for k in fx if "placebo" in k]
    assert {k: v for k, v in fp.items() if "placebo" not in k} == fx


def test_non_finite_placebo_scores_are_refused():
    with pytest.raises(RateError, match="non-finite 'placebo' score"):
        Scores(W, ORIG, R, RR, np.array([1.0, np.nan, 1.0, 1.0, 1.0]))
