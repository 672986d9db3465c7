"""Guided samples of pi_beta and the model forecast, against answers known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tinyworld.data import pool_from_records
from tinyworld.policy import Policy
from tinyworld.prompts import make_prompts
from tinyworld.sampling import response_logprobs
from tinyworld.tilt.forecast import ess, model_forecast, tilt_weights
from tinyworld.tilt.guided import additive_fit, sample_tilt, tilted_sample
from tinyworld.vocab import N_SYLLABLES, RESPONSE_LEN


def planted_effects(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.3, (RESPONSE_LEN, N_SYLLABLES))


def additive_reward(effects: np.ndarray, responses: torch.Tensor) -> np.ndarray:
    r = np.asarray(responses)
    return effects[np.arange(RESPONSE_LEN), r].sum(1)


def test_the_additive_fit_recovers_planted_effects():
    rng = np.random.default_rng(1)
    responses = torch.as_tensor(rng.integers(0, N_SYLLABLES, (20_000, RESPONSE_LEN)))
    e = planted_effects()
    fit = additive_fit(responses, 3.0 + additive_reward(e, responses), ridge=1e-6)
    # Each position's effects are known up to a constant: compare differences to token 0.
    assert fit - fit[:, :1] == pytest.approx(e - e[:, :1], abs=1e-6)


def test_the_additive_fit_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="one reward per response"):
        additive_fit(torch.zeros(5, RESPONSE_LEN, dtype=torch.long), np.zeros(4))


def small_policy(uniform: bool = False) -> Policy:
    torch.manual_seed(0)
    policy = Policy()
    if uniform:  # every step's logits 0: tokens independent and uniform
        with torch.no_grad():
            policy.head.weight.zero_()
            policy.head.bias.zero_()
    return policy.eval()


def prompts_of(n: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return pool_from_records(make_prompts({"dune": n}, "t", gen, shuffle=False)).tokens


def test_the_tilted_sampler_reports_exact_log_probabilities_for_every_rung():
    policy, prompts = small_policy(), prompts_of(64)
    bias = torch.as_tensor(planted_effects(2) * 5)
    ladder = (0.0, 0.5, 1.0)
    responses, lp_ref, lp_ladder = tilted_sample(
        policy, prompts, bias, 0.5, ladder, torch.Generator().manual_seed(3)
    )
    with torch.no_grad():
        logits = policy.response_logits(prompts, responses).double()
        exact_ref = response_logprobs(policy, prompts, responses).sum(-1).double().numpy()
    assert lp_ref == pytest.approx(exact_ref, abs=1e-4)
    assert lp_ladder[0] == pytest.approx(lp_ref, abs=1e-9)  # lambda 0 is the reference
    for i, lam in enumerate(ladder):
        shifted = F.log_softmax(logits + lam * bias, -1)
        exact = shifted.gather(2, responses.unsqueeze(-1)).squeeze(-1).sum(-1).numpy()
        assert lp_ladder[i] == pytest.approx(exact, abs=1e-4)


def test_guided_samples_weighed_by_the_mixture_give_pi_beta():
    """Uniform reference, additive reward: pi_beta is a product of per-position softmaxes of
    e[t] / beta, and the reward's mean under it is known exactly. The sampler is pointed by a
    fit that is too weak everywhere and blind at position 0: the weights recover pi_beta."""
    policy, beta = small_policy(uniform=True), 0.2
    e = planted_effects(4)

    def score(pool, responses):
        return {"raw": additive_reward(e, responses)}

    wrong = e * 0.7
    wrong[0] = 0.0
    drawn = sample_tilt(
        policy, "dune", score, "raw", beta, wrong, 5_000, torch.Generator().manual_seed(5)
    )
    assert drawn.log_w.shape == (20_000,) and set(drawn.rung) == {0, 1, 2, 3}
    w = drawn.weights()
    # The reward's mean under pi_beta is the sum of the positions' tilted means.
    p = np.exp(e / beta)
    p /= p.sum(1, keepdims=True)
    exact_mean = float((p * e).sum())
    estimate = float((w * drawn.rewards["raw"]).sum() / w.sum())
    se = math.sqrt(np.sum(np.square(w * (drawn.rewards["raw"] - estimate)))) / w.sum()
    assert abs(estimate - exact_mean) < 4 * se + 1e-3
    assert se < 0.05
    # Reference samples reweighted by exp(r / beta) rest on far fewer: rung 0 holds a quarter
    # of the samples, so as many reference samples as in all would reach ~4x its ESS (9 here,
    # against 585 for the guided ones).
    reference_only = tilt_weights(drawn.rewards["raw"][drawn.rung == 0], beta)
    assert ess(w) > 5 * (4 * ess(reference_only))
    # Its KL to the uniform reference, per position sum_v p log(24 p), in closed form.
    exact_kl = float((p * np.log(N_SYLLABLES * p)).sum())
    assert drawn.kl_to_reference("raw", beta) == pytest.approx(exact_kl, rel=0.05)
    uniform_mean = float(e.mean(1).sum())
    assert exact_mean - uniform_mean > 1.0  # the tilt moved far from the reference


def test_the_model_forecast_by_hand():
    fc = model_forecast(
        y_gold=np.array([0.0, 0.5, 1.0]),
        s_gold=np.array([0.0, 1.0, 2.0]),  # the line: q = 0.5 s
        s_tilt=np.array([1.0, 2.0, 4.0]),  # q 0.5, 1, and 2 kept at the labels' top, 1
        w_tilt=np.array([1.0, 1.0, 2.0]),
        s_ref=np.array([0.0, 1.0]),  # q 0 and 0.5
        beta=0.1,
        n_boot=1,
        kl=math.log(2.0),
    )
    assert fc["line"] == [0.0, 0.5]
    assert fc["forecast"] == pytest.approx(3.5 / 4)
    assert fc["reference"] == pytest.approx(0.25)
    assert fc["change"] == pytest.approx(0.625)
    assert fc["share_outside_gold"] == pytest.approx(0.5)  # s = 4 beyond the gold's 2
    assert fc["ess"] == pytest.approx(16 / 6, abs=0.05)
    # The samples' SE: the weighted mean's delta method and the reference mean's, combined.
    se = math.hypot(math.sqrt(0.21875) / 4, 0.25 / math.sqrt(2))
    assert fc["se_samples"] == pytest.approx(se, abs=1e-6)
    assert fc["gold_support"] == pytest.approx(1.5)  # 3 gold rows * exp(-log 2)
    assert fc["unchecked"]  # below certification's floor of 15
    assert fc["interval"] == pytest.approx([0.625 - 1.959964 * se, 0.625 + 1.959964 * se], abs=1e-5)


def test_the_model_forecast_bootstraps_the_line():
    rng = np.random.default_rng(0)
    s = rng.normal(0, 1, 200)
    y = 0.3 + 0.1 * s + rng.normal(0, 0.05, 200)
    s_tilt = np.full(1000, 2.0)
    fc = model_forecast(y, s, s_tilt, np.ones(1000), np.zeros(1000), 0.1, n_boot=400)
    assert fc["change"] == pytest.approx(0.2, abs=0.02)  # b * (2 - 0)
    # The change is 2 b: its SE is twice the slope's, about 2 * 0.05 / sqrt(200).
    assert fc["se_line"] == pytest.approx(2 * 0.05 / math.sqrt(200), rel=0.25)
    assert fc["se_samples"] == 0.0
