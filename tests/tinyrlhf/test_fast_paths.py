"""The fast paths against plain computations: the key/value cache, Gumbel-max draws, and the
benchmark's contenders.

The plain references are the published trainer's modules (``nn.TransformerEncoder`` blocks,
loaded with the same weights), which share no code with ours.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from benchmarks.rl import (
    CONTENDERS,
    DEVICES,
    AnchorPolicy,
    AnchorRewardModel,
    anchor_logprobs,
    train_rl_anchor,
)
from tinyworld.models import load_policy
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.rl import ALL_ON, train_rl
from tinyworld.rl_config import load_rl_config
from tinyworld.sampling import (
    draw,
    gumbel_noise,
    response_logprobs,
    sample,
    sample_without_cache,
    score,
)
from tinyworld.vocab import FAMILIES, N_SYLLABLES, RESPONSE_LEN, encode_prompts


def prompts(n: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    recs = [
        {
            "id": str(i),
            "family": FAMILIES[i % 6],
            "attrs": torch.randint(0, 8, (4,), generator=gen).tolist(),
        }
        for i in range(n)
    ]
    return encode_prompts(recs)


def trained_like(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """A model with larger, less uniform weights than the default init (sharper attention)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.3)
    return model


def test_policy_logprobs_equal_the_plain_transformer():
    torch.manual_seed(0)
    pol = trained_like(Policy(), 1)
    p = prompts(5)
    r = torch.randint(0, N_SYLLABLES, (5, RESPONSE_LEN))
    ours = response_logprobs(pol, p, r)
    plain = anchor_logprobs(AnchorPolicy(pol), torch.cat([p, r], 1))
    assert ours.shape == (5, RESPONSE_LEN)
    assert torch.allclose(ours, plain, atol=1e-5), (ours - plain).abs().max()


@pytest.mark.parametrize("batch", [8, 128])
def test_reward_model_equals_the_plain_transformer(batch):
    torch.manual_seed(2)
    rm = trained_like(RewardModel(), 3)
    p = prompts(batch)
    r = torch.randint(0, N_SYLLABLES, (batch, RESPONSE_LEN))
    plain = AnchorRewardModel(rm)(torch.cat([p, r], 1))
    assert torch.allclose(rm(p, r), plain, atol=1e-5)
    assert torch.allclose(score(rm, p, r), plain, atol=1e-5)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_cached_sampling_of_repeated_prompts_equals_the_plain_loop(temperature):
    torch.manual_seed(4)
    pol = trained_like(Policy(), 5)
    p = prompts(6)
    cached = sample(pol, p.repeat_interleave(4, 0), temperature, torch.Generator().manual_seed(7))
    plain = sample_without_cache(
        pol, p.repeat_interleave(4, 0), temperature, torch.Generator().manual_seed(7)
    )
    assert torch.equal(cached.responses, plain.responses)
    assert torch.allclose(cached.logprobs, plain.logprobs, atol=1e-5)
    assert torch.allclose(cached.entropy, plain.entropy, atol=1e-5)
    teacher = response_logprobs(pol, p.repeat_interleave(4, 0), cached.responses)
    assert torch.allclose(cached.logprobs, teacher, atol=1e-5)


def same_samples(a, b) -> bool:
    pairs = ((a.responses, b.responses), (a.logprobs, b.logprobs), (a.entropy, b.entropy))
    return all(torch.equal(x, y) for x, y in pairs)


def test_gumbel_max_draws_follow_the_softmax():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, -3.0]])
    n = 200_000
    gen = torch.Generator().manual_seed(0)
    for temperature in (1.0, 0.5, 2.0):
        noise = gumbel_noise(n // RESPONSE_LEN, logits.shape[1], gen).reshape(n, -1)
        drawn = draw(logits.expand(n, -1), noise, temperature)
        freq = torch.bincount(drawn, minlength=logits.shape[1]).double() / n
        expected = torch.softmax(logits[0].double() / temperature, dim=0)
        assert torch.allclose(freq, expected, atol=0.005), (temperature, freq, expected)


def test_benchmark_contenders_train_a_few_steps(small_world):
    config = load_rl_config(
        small_world / "configs" / "default.json",
        ["steps=2", "batch_prompts=4", "samples_per_prompt=4"],
    )
    start = AnchorPolicy(load_policy(small_world / "policy")).state_dict()
    result = train_rl_anchor(config, small_world)
    assert result["elapsed_s"] > 0 and abs(result["kl"]) < 1.0
    after = result["policy"].state_dict()
    changed = [k for k in start if not torch.equal(start[k], after[k])]
    assert len(changed) == len(start)  # Adam moves every parameter
    for name in ("plain", *(f"without_{d}" for d in DEVICES)):  # ours, devices off
        result = CONTENDERS[name](config, small_world)
        assert result["elapsed_s"] > 0 and abs(result["kl"]) < 1.0, name


@pytest.mark.parametrize("device", DEVICES)
def test_a_speed_device_changes_how_fast_a_step_runs_not_what_it_computes(
    small_world, tmp_path, device
):
    """Each device of the RL loop off on its own trains the same policy (to float rounding:
    a fused kernel sums in another order) as the loop with every device on."""
    config = load_rl_config(
        small_world / "configs" / "default.json",
        ["steps=3", "batch_prompts=4", "samples_per_prompt=4", "log_every=1"],
    )
    off = dataclasses.replace(ALL_ON, **{device: False})
    logs = [
        train_rl(config, small_world, tmp_path / name, devices=devices)
        for name, devices in (("on", ALL_ON), ("off", off))
    ]
    assert logs[0]["proxy_reward"] == pytest.approx(logs[1]["proxy_reward"], abs=1e-5)
    weights = [load_policy(tmp_path / name / "checkpoint").state_dict() for name in ("on", "off")]
    for key, value in weights[0].items():
        assert torch.allclose(value, weights[1][key], atol=1e-5), (device, key)


def test_the_world_benchmark_names_the_cpu_its_ratios_were_measured_on():
    from benchmarks.world import render_world

    figures = {
        "small_build_s": 9.7,
        "default_steps": 800,
        "default_run_s": 21.7,
        "dev_prompts": 2000,
        "dev_eval_s": 0.39,
        "truth_eval_s": 0.53,
    }
    lines = render_world({**figures, "cpu": "Intel(R) Xeon(R) Processor"}, "2026-12-03")
    assert "Measured 2026-12-03 on Intel(R) Xeon(R) Processor." in lines
    assert "Measured 2026-12-02." in render_world(figures, "2026-12-02")  # recorded before


def test_a_benchmark_section_kept_from_the_last_run_is_rendered_with_the_same_digits(tmp_path):
    from benchmarks.__main__ import previous_figures, render, write_page

    figures = {
        "small_build_s": 9.7,
        "default_steps": 800,
        "default_run_s": 21.7,
        "dev_prompts": 2000,
        "dev_eval_s": 0.2549,  # stored as 0.255: shown as 0.25 from one, 0.26 from the other
        "truth_eval_s": 0.53,
        "measured": {"world": "2026-12-03"},
    }
    first = render(figures, "python -m benchmarks")
    write_page(tmp_path / "BENCHMARKS.md", figures, "python -m benchmarks")
    assert (tmp_path / "BENCHMARKS.md").read_text() == first
    kept = previous_figures(tmp_path / "BENCHMARKS.md")
    assert kept["dev_eval_s"] == 0.255
    assert render(kept, "python -m benchmarks") == first


def test_the_benchmark_page_holds_tables_and_its_figures_sit_beside_it(tmp_path):
    """BENCHMARKS.md is the current tables only; the raw figures are BENCHMARKS.json. A page
    written when the figures were a json block at its end is still read."""
    from benchmarks.__main__ import previous_figures, write_page

    figures = {"small_build_s": 9.7, "default_steps": 800, "default_run_s": 21.7,
               "dev_prompts": 2000, "dev_eval_s": 0.25, "truth_eval_s": 0.53,
               "measured": {"world": "2026-12-03"}}  # fmt: skip
    page = tmp_path / "BENCHMARKS.md"
    write_page(page, figures, "make bench")
    assert (
        "```json" not in page.read_text() and "| `--small` world build | 9.7 s" in page.read_text()
    )
    assert json.loads((tmp_path / "BENCHMARKS.json").read_text()) == figures
    old = tmp_path / "old.md"
    old.write_text("# Benchmarks\n\nRaw figures:\n\n```json\n" + json.dumps(figures) + "\n```\n")
    assert previous_figures(old) == figures
