"""Shapes, causality, the key/value cache, log-probs and saving of the two networks."""

from __future__ import annotations

import pytest
import torch

from rate.errors import RateError
from tinyworld.models import load_policy, load_reward_model, save_model
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.sampling import response_logprobs, sample, sample_without_cache, sequence_kl
from tinyworld.vocab import PROMPT_LEN, RESPONSE_LEN, encode_prompts


def prompts(n: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    fams = ["anvil", "birch", "cobalt", "dune", "ember", "fjord"]
    recs = [
        {
            "id": str(i),
            "family": fams[i % 6],
            "attrs": torch.randint(0, 8, (4,), generator=gen).tolist(),
        }
        for i in range(n)
    ]
    return encode_prompts(recs)


def test_sizes_match_the_spec():
    pol, rm = Policy(), RewardModel()
    assert (pol.config.n_layer, pol.config.d_model, pol.config.n_head, pol.config.d_ff) == (
        2,
        64,
        4,
        128,
    )
    assert (rm.config.n_layer, rm.config.d_model, rm.config.n_head, rm.config.d_ff) == (
        2,
        96,
        4,
        192,
    )


def test_policy_is_causal_and_reward_model_is_not():
    torch.manual_seed(0)
    pol, rm = Policy(), RewardModel()
    p = prompts(3)
    r = torch.randint(0, 24, (3, RESPONSE_LEN))
    r2 = r.clone()
    r2[:, -1] = (r[:, -1] + 1) % 24  # change the last token only
    a = pol.response_logits(p, r)
    b = pol.response_logits(p, r2)
    assert torch.allclose(a, b)  # the last token is never an input to its own prediction
    r3 = r.clone()
    r3[:, 2] = (r[:, 2] + 1) % 24
    c = pol.response_logits(p, r3)
    assert torch.allclose(a[:, :3], c[:, :3]) and not torch.allclose(a[:, 3:], c[:, 3:])
    assert not torch.allclose(rm(p, r), rm(p, r2))


def test_cached_sampling_logprobs_equal_teacher_forcing():
    torch.manual_seed(1)
    pol = Policy()
    p = prompts(8)
    s = sample(pol, p, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert s.responses.shape == (8, RESPONSE_LEN)
    tf = response_logprobs(pol, p, s.responses)
    assert torch.allclose(s.logprobs, tf, atol=1e-5)
    assert (s.entropy > 0).all() and (s.entropy <= torch.log(torch.tensor(24.0)) + 1e-5).all()


def test_cache_and_plain_loop_draw_the_same_samples():
    torch.manual_seed(2)
    pol = Policy()
    p = prompts(16)
    a = sample(pol, p, 0.8, torch.Generator().manual_seed(3))
    b = sample_without_cache(pol, p, 0.8, torch.Generator().manual_seed(3))
    assert torch.equal(a.responses, b.responses)
    assert torch.allclose(a.logprobs, b.logprobs, atol=1e-5)


def test_low_temperature_is_nearly_greedy():
    torch.manual_seed(4)
    pol = Policy()
    p = prompts(4)
    s = sample(pol, p, temperature=1e-4, generator=torch.Generator().manual_seed(0))
    greedy = pol.response_logits(p, s.responses).argmax(-1)
    assert torch.equal(greedy, s.responses)


def test_kl_of_a_policy_to_itself_is_zero():
    pol = Policy()
    p = prompts(4)
    r = sample(pol, p).responses
    assert torch.allclose(sequence_kl(pol, pol, p, r), torch.zeros(4), atol=1e-6)


def test_save_and_load_round_trip(tmp_path):
    torch.manual_seed(5)
    pol, rm = Policy(), RewardModel()
    save_model(pol, tmp_path / "pol")
    save_model(rm, tmp_path / "rm")
    p = prompts(3)
    r = torch.randint(0, 24, (3, RESPONSE_LEN))
    assert torch.equal(
        load_policy(tmp_path / "pol").response_logits(p, r), pol.eval().response_logits(p, r)
    )
    assert torch.equal(load_reward_model(tmp_path / "rm")(p, r), rm.eval()(p, r))
    assert sorted(x.name for x in (tmp_path / "pol").iterdir()) == [
        "config.json",
        "policy.safetensors",
    ]


def test_loading_a_missing_or_wrong_directory_is_a_clear_error(tmp_path):
    with pytest.raises(RateError, match="policy.safetensors is missing"):
        load_policy(tmp_path / "nowhere")
    save_model(RewardModel(), tmp_path / "rm")
    with pytest.raises(RateError, match="policy.safetensors is missing"):
        load_policy(tmp_path / "rm")
    (tmp_path / "rm" / "rm.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(RateError, match="cannot load weights"):
        load_reward_model(tmp_path / "rm")


def test_prompt_length_is_checked():
    with pytest.raises(AssertionError):
        sample(Policy(), torch.zeros(2, PROMPT_LEN - 1, dtype=torch.long))
