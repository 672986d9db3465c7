"""The tilt forecast: weights, ESS, the ratio's SE and the coverage check on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tinyworld.tilt.forecast import (
    ESS_MIN,
    add_coverage,
    ess,
    mass_beyond,
    ratio_se,
    tilt_forecast,
    tilt_weights,
)

# beta = 1 and r = log(1, 2, 3): the weights are 1, 2, 3 (scaled by 1/3).
R = np.log([1.0, 2.0, 3.0])
Y = np.array([0.0, 0.5, 1.0])


def test_weights_and_ess_by_hand():
    assert tilt_weights(R, 1.0) == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert ess([1.0, 2.0, 3.0]) == pytest.approx(36 / 14)
    assert ess(np.ones(7)) == pytest.approx(7)
    # beta halves: the weights square.
    assert tilt_weights(R, 0.5) == pytest.approx([1 / 9, 4 / 9, 1.0])


def test_forecast_by_hand():
    fc = tilt_forecast(R, Y, beta=1.0, n_boot=200)
    assert fc["forecast"] == pytest.approx(4 / 6, abs=1e-6)  # (0*1 + 0.5*2 + 1*3) / 6
    assert fc["gold_mean"] == pytest.approx(0.5)
    assert fc["change"] == pytest.approx(1 / 6, abs=1e-6)
    assert fc["ess"] == pytest.approx(36 / 14, abs=1e-3)
    assert fc["max_weight_share"] == pytest.approx(0.5)
    # Residuals from 2/3: -2/3, -1/6, 1/3; weighted: -2/3, -1/3, 1; sqrt(14/9) / 6.
    assert fc["se"] == pytest.approx(math.sqrt(14 / 9) / 6, abs=1e-6)
    assert ratio_se(Y, np.array([1.0, 2.0, 3.0])) == pytest.approx(math.sqrt(14 / 9) / 6)
    assert fc["abstain"]  # 2.6 effective responses
    assert fc["weight_tail"] is None  # three rows: too few for Hill's k = 5


def test_a_flat_reward_forecasts_no_change_and_keeps_every_row():
    y = np.random.default_rng(0).random(50)
    fc = tilt_forecast(np.full(50, 0.3), y, beta=0.05, n_boot=200)
    assert fc["change"] == pytest.approx(0, abs=1e-6)
    assert fc["ess"] == pytest.approx(50)
    assert fc["interval"] == pytest.approx([0, 0], abs=1e-9)
    assert not fc["abstain"]


def test_a_reward_that_tracks_quality_forecasts_a_rise_with_an_interval_above_zero():
    rng = np.random.default_rng(1)
    y = rng.random(400)
    fc = tilt_forecast(y + rng.normal(0, 0.05, 400), y, beta=0.5, n_boot=500, seed=3)
    assert fc["change"] > 0.05
    lo, hi = fc["interval"]
    assert 0 < lo < fc["change"] < hi
    assert fc["ess"] > ESS_MIN and not fc["abstain"]
    again = tilt_forecast(y + rng.normal(0, 0.05, 400), y, beta=0.5, n_boot=500, seed=3)
    assert again["interval"] != fc["interval"]  # other data, other interval
    assert tilt_forecast(y, y, 0.5, 500, seed=3) == tilt_forecast(y, y, 0.5, 500, seed=3)


def test_mass_beyond_gold_by_hand():
    # beta = 1, rewards log 1..4: weights 1..4; above log(2.5): 3 + 4 of 10.
    r_ref = np.log([1.0, 2.0, 3.0, 4.0])
    assert mass_beyond(r_ref, math.log(2.5), 1.0) == pytest.approx(0.7)
    fc = tilt_forecast(np.log(np.arange(1.0, 31.0)) / 10, np.linspace(0, 1, 30), 1.0, 100)
    assert not fc["abstain"]
    covered = add_coverage(fc, r_ref / 100, np.array([1.0]))
    assert covered["mass_beyond_gold"] == 0 and not covered["abstain"]
    beyond = add_coverage(fc, r_ref, np.array([math.log(2.5)]))
    assert beyond["mass_beyond_gold"] == pytest.approx(0.7) and beyond["abstain"]


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="beta"):
        tilt_forecast(R, Y, beta=0.0)
    with pytest.raises(ValueError, match="one length"):
        tilt_forecast(R, Y[:2], beta=1.0)
