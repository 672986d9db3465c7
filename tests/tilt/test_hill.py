"""Hill's estimator: known answers by hand and on Pareto samples of known index."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tinyworld.tilt.hill import default_k, exponential_qq, hill, pareto_qq, weight_tail_index


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0, 3.0, 5.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hill_is_within_20_percent_on_pareto_samples(alpha, seed):
    # Pareto(alpha) with x_min = 1: X = U^(-1/alpha).
    u = np.random.default_rng(seed).random(20_000)
    est = hill(u ** (-1.0 / alpha))
    assert est.k == 141  # floor(sqrt(20000))
    assert abs(est.alpha - alpha) / alpha < 0.2


def test_hill_by_hand():
    x = np.exp([3.0, 2.0, 1.0, 0.0, -1.0])
    est = hill(x, k=2)  # log(e^3 / e^1) = 2, log(e^2 / e^1) = 1
    assert est.xi == pytest.approx(1.5)
    assert est.alpha == pytest.approx(1 / 1.5)
    assert est.se_xi == pytest.approx(1.5 / math.sqrt(2))
    assert est.threshold == pytest.approx(math.e)


def test_default_k():
    assert default_k(100) == 10
    assert default_k(20) == 5  # at least 5
    assert default_k(10_000) == 100


def test_hill_refuses_what_it_cannot_estimate():
    with pytest.raises(ValueError, match="k < n"):
        hill(np.ones(5), k=5)
    with pytest.raises(ValueError, match="> 0"):
        hill(np.array([3.0, 2.0, -1.0, -2.0]), k=2)


def test_weight_tail_index_is_the_mean_excess_over_beta():
    r = np.array([1.0, 0.7, 0.4, 0.2, 0.1, 0.0])
    est = weight_tail_index(r, beta=0.1, k=2)  # excesses over 0.4: 0.6 and 0.3
    assert est.xi == pytest.approx(0.45 / 0.1)
    # Large r/beta would overflow exp(r / beta) itself; the index does not.
    assert weight_tail_index(r * 1000, beta=0.01, k=2).xi == pytest.approx(45_000)


def test_qq_data_by_hand():
    x = np.array([4.0, 3.0, 1.0, 0.5])
    qq = exponential_qq(x, k=2)  # excesses over 1: 3, 2 (ascending 2, 3)
    assert qq["empirical"] == [2.0, 3.0]
    assert qq["theoretical"] == pytest.approx([-math.log(1 - 1 / 3), -math.log(1 - 2 / 3)])
    pq = pareto_qq(x, k=2)
    assert pq["empirical"] == pytest.approx([math.log(4), math.log(3)])
    assert pq["theoretical"] == pytest.approx([-math.log(1 / 3), -math.log(2 / 3)])


def test_pareto_qq_slope_is_one_over_alpha():
    u = np.random.default_rng(3).random(20_000)
    qq = pareto_qq(u ** (-1 / 2.0))
    slope = np.polyfit(qq["theoretical"], qq["empirical"], 1)[0]
    assert slope == pytest.approx(0.5, rel=0.2)
