"""Known answers for the shared statistics of rate.stats."""

import math

import numpy as np
import pytest

from rate.stats import (
    benjamini_hochberg,
    holm,
    percentile_interval,
    slope,
    t_quantile,
    z_quantile,
)


def test_holm_and_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # Sorted: 0.005, 0.01, 0.03, 0.04 (m = 4).
    # Holm: 4 * 0.005 = 0.02, 3 * 0.01 = 0.03, 2 * 0.03 = 0.06, 1 * 0.04 = 0.04; the running
    # maximum gives 0.02, 0.03, 0.06, 0.06; back in the order given: 0.03, 0.06, 0.06, 0.02.
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: m p_(k) / k = 0.02, 0.02, 0.04, 0.04; the running minimum from the largest down
    # leaves them as they are; in the order given: 0.02, 0.04, 0.04, 0.02.
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_a_nan_stays_nan_and_is_not_counted():
    # The same four p-values with a NaN among them: m is still 4, so the others are unchanged.
    p = [0.01, math.nan, 0.04, 0.03, 0.005]
    h, b = holm(p), benjamini_hochberg(p)
    assert math.isnan(h[1]) and math.isnan(b[1])
    assert h[[0, 2, 3, 4]] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert b[[0, 2, 3, 4]] == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert np.isnan(holm([math.nan])).all() and np.isnan(benjamini_hochberg([math.nan])).all()


def test_caps_ties_and_an_empty_family():
    # Holm: 2 * 0.5 = 1.0 and 0.9 below it -> 1, 1. BH: 0.5 * 2 / 1 = 1.0, 0.9 * 2 / 2 = 0.9;
    # the running minimum from the top -> 0.9, 0.9.
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert benjamini_hochberg([0.5, 0.9]) == pytest.approx([0.9, 0.9])
    # Ties: Holm 3 * 0.02 = 0.06, max(0.06, 2 * 0.02) = 0.06, 0.5; BH 0.06, 0.03, 0.5 -> the
    # running minimum from the top gives 0.03, 0.03, 0.5.
    assert holm([0.02, 0.02, 0.5]) == pytest.approx([0.06, 0.06, 0.5])
    assert benjamini_hochberg([0.02, 0.02, 0.5]) == pytest.approx([0.03, 0.03, 0.5])
    assert holm([]).shape == (0,) and benjamini_hochberg([]).shape == (0,)


def test_quantiles_and_the_percentile_interval():
    assert z_quantile(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert z_quantile(0.90) == pytest.approx(1.644854, abs=1e-6)
    assert t_quantile(0.95, 14) == pytest.approx(2.1448, abs=2e-4)
    assert t_quantile(0.95, 1e12) == pytest.approx(z_quantile(0.95), abs=1e-9)
    # 0..100: the 5% and 95% quantiles fall on 5 and 95 exactly.
    assert percentile_interval(np.arange(101.0), 0.90) == pytest.approx((5.0, 95.0))
    assert slope(np.arange(4.0), np.array([1.0, 3.0, math.nan, 7.0])) == pytest.approx(2.0)
