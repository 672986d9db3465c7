"""The fast paths against plain computations: shared-prefix teacher forcing, the key/value
cache, the reward model's first-layer table, Gumbel-max draws, and the benchmark's contenders.

The plain references are the published trainer's modules (``nn.TransformerEncoder`` blocks,
loaded with the same weights), which share no code with ours.
"""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from benchmarks.rl import (
    AnchorPolicy,
    AnchorRewardModel,
    anchor_logprobs,
    train_rl_anchor,
    train_rl_plain,
)
from tinyworld.kernels import onednn_available, rl_linear_route
from tinyworld.models import load_policy
from tinyworld.optim import flat_parameters
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config
from tinyworld.sampling import (
    ResponseLogprobs,
    TracedDecoding,
    draw,
    gumbel_noise,
    response_logprobs,
    sample,
    sample_without_cache,
    score,
)
from tinyworld.traced import Traced
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


@pytest.mark.parametrize("repeats", [1, 3, 8])
def test_policy_logprobs_equal_the_plain_transformer(repeats):
    torch.manual_seed(0)
    pol = trained_like(Policy(), 1)
    p = prompts(5)
    r = torch.randint(0, N_SYLLABLES, (5 * repeats, RESPONSE_LEN))
    ours = response_logprobs(pol, p, r, repeats=repeats)
    plain = anchor_logprobs(AnchorPolicy(pol), torch.cat([p.repeat_interleave(repeats, 0), r], 1))
    assert ours.shape == (5 * repeats, RESPONSE_LEN)
    assert torch.allclose(ours, plain, atol=1e-5), (ours - plain).abs().max()


def test_shared_prefix_gradients_equal_repeated_prompts():
    torch.manual_seed(1)
    pol = trained_like(Policy(), 2)
    p = prompts(4)
    r = torch.randint(0, N_SYLLABLES, (16, RESPONSE_LEN))
    weights = torch.randn(16, RESPONSE_LEN)
    grads = []
    for prompt_rows, repeats in ((p, 4), (p.repeat_interleave(4, 0), 1)):
        pol.zero_grad()
        (response_logprobs(pol, prompt_rows, r, repeats=repeats) * weights).sum().backward()
        grads.append({n: q.grad.clone() for n, q in pol.named_parameters()})
    for name in grads[0]:
        assert torch.allclose(grads[0][name], grads[1][name], rtol=1e-4, atol=1e-4), name


@pytest.mark.parametrize("batch", [8, 128])  # below and above the (position, token) table's use
def test_reward_model_equals_the_plain_transformer(batch):
    torch.manual_seed(2)
    rm = trained_like(RewardModel(), 3)
    p = prompts(batch)
    r = torch.randint(0, N_SYLLABLES, (batch, RESPONSE_LEN))
    plain = AnchorRewardModel(rm)(torch.cat([p, r], 1))
    assert torch.allclose(rm(p, r), plain, atol=1e-5)
    assert torch.allclose(score(rm, p, r), plain, atol=1e-5)


def test_reward_model_table_path_trains_like_the_direct_path():
    torch.manual_seed(3)
    rm = trained_like(RewardModel(), 4)
    p = prompts(64)
    r = torch.randint(0, N_SYLLABLES, (64, RESPONSE_LEN))
    grads = []
    for chunks in (1, 4):  # 64 rows use the table, chunks of 16 do not
        rm.zero_grad()
        for pc, rc in zip(p.chunk(chunks), r.chunk(chunks), strict=True):
            rm(pc, rc).square().sum().backward()
        grads.append({n: q.grad.clone() for n, q in rm.named_parameters()})
    for name in grads[0]:
        assert torch.allclose(grads[0][name], grads[1][name], rtol=1e-4, atol=1e-4), name


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_cached_sampling_with_repeats_equals_the_plain_loop(temperature):
    torch.manual_seed(4)
    pol = trained_like(Policy(), 5)
    p = prompts(6)
    cached = sample(pol, p, temperature, torch.Generator().manual_seed(7), repeats=4)
    plain = sample_without_cache(
        pol, p.repeat_interleave(4, 0), temperature, torch.Generator().manual_seed(7)
    )
    assert torch.equal(cached.responses, plain.responses)
    assert torch.allclose(cached.logprobs, plain.logprobs, atol=1e-5)
    assert torch.allclose(cached.entropy, plain.entropy, atol=1e-5)
    teacher = response_logprobs(pol, p, cached.responses, repeats=4)
    assert torch.allclose(cached.logprobs, teacher, atol=1e-5)


def same_samples(a, b) -> bool:
    pairs = ((a.responses, b.responses), (a.logprobs, b.logprobs), (a.entropy, b.entropy))
    return all(torch.equal(x, y) for x, y in pairs)


def test_traced_decoding_draws_what_the_eager_loop_draws_as_the_weights_change():
    torch.manual_seed(5)
    pol = trained_like(Policy(), 6)
    flat = flat_parameters(pol)  # as in RL: the optimiser updates one flat tensor in place
    decoding = TracedDecoding(pol, 0.8, repeats=4)
    p = prompts(6)
    for update in range(3):
        for prompt_rows in (p, p[:2]):  # a trace per prompt shape
            gens = (torch.Generator().manual_seed(update) for _ in range(2))
            traced = sample(pol, prompt_rows, 0.8, next(gens), 4, decoding)
            eager = sample(pol, prompt_rows, 0.8, next(gens), 4)
            assert same_samples(traced, eager), update  # to the last bit
        with torch.no_grad():
            flat.add_(torch.randn(flat.shape) * 0.05)  # the trace reads the weights at each call
    assert not traced.responses.is_inference()  # cloned out of inference mode, as before
    assert {shapes[0][0] for shapes, *_ in decoding.traced.traces} == {(6, 6), (2, 6)}
    # On this torch the decoding really is traced: the check did not fall back to the loop.
    assert decoding.traced.is_traced()


def test_a_trace_is_kept_per_linear_route():
    pol = trained_like(Policy(), 7)
    decoding = TracedDecoding(pol, 1.0, repeats=2)
    p = prompts(3)
    a = sample(pol, p, 1.0, torch.Generator().manual_seed(0), 2, decoding)
    with rl_linear_route():
        b = sample(pol, p, 1.0, torch.Generator().manual_seed(0), 2, decoding)
        assert same_samples(b, sample(pol, p, 1.0, torch.Generator().manual_seed(0), 2))
    assert same_samples(a, sample(pol, p, 1.0, torch.Generator().manual_seed(0), 2))
    routes = {onednn_available()}
    with rl_linear_route():
        routes.add(onednn_available())
    assert {route for _, route, _ in decoding.traced.traces} == routes


@pytest.mark.parametrize("route", ["torch", "onednn"])
def test_the_traced_reward_model_and_reference_equal_the_eager_ones(monkeypatch, route):
    from tinyworld import kernels

    op = kernels._onednn_linear_op() if route == "onednn" else None
    # CI's machines are x86 with oneDNN in torch's wheel: the route RL takes on AMD CPUs.
    assert op is not None or route == "torch"
    monkeypatch.setattr(kernels, "_ONEDNN_LINEAR", op)
    rm = trained_like(RewardModel(), 9)
    reward_of = Traced(rm, "reward model")
    pol = trained_like(Policy(), 10)
    reference_logprobs = Traced(ResponseLogprobs(pol, 4), "reference log-probs")
    with torch.inference_mode():
        for n in (16, 64):  # below and above the reward model's (position, token) table
            p = prompts(n)
            r = torch.randint(0, N_SYLLABLES, (n * 4, RESPONSE_LEN))
            p4 = p.repeat_interleave(4, 0)
            assert torch.equal(score(reward_of, p4, r), score(rm, p4, r))
            assert torch.equal(reference_logprobs(p, r), response_logprobs(pol, p, r, 4))
            with torch.no_grad():
                rm.head[2].bias.add_(1.0)  # an in-place change is seen by the trace
            assert torch.equal(reward_of(p4, r), rm(p4, r))
    # oneDNN's layer (64 x 4 rows of 14 tokens are past ONEDNN_MIN_ROWS) is traced too, as
    # a call of a TorchScript function: the passes do not fall back to running eagerly.
    assert reward_of.is_traced() and reference_logprobs.is_traced()
    assert len(reward_of.traces) == 2


def test_a_decoding_in_halves_is_the_same_on_a_second_thread_or_in_turn():
    from concurrent.futures import ThreadPoolExecutor

    from tinyworld.rl import side_thread

    pol = trained_like(Policy(), 11)
    flat_parameters(pol)
    whole = TracedDecoding(pol, 0.9, repeats=8)
    beside_rows = []
    with ThreadPoolExecutor(1) as pool, side_thread(beside=False) as now:

        def beside(fn, *args):
            beside_rows.append(args[1].shape[0])  # the prompts decoded on the second thread
            return pool.submit(fn, *args)

        two_threads = TracedDecoding(pol, 0.9, repeats=8, beside=beside)
        in_turn = TracedDecoding(pol, 0.9, repeats=8, beside=now)
        for n in (16, 5, 1):  # RL's 16 prompts, halves of 2 and 3, nothing to split
            p = prompts(n, seed=n)
            got = sample(pol, p, 0.9, torch.Generator().manual_seed(n), 8, two_threads)
            here = sample(pol, p, 0.9, torch.Generator().manual_seed(n), 8, in_turn)
            assert same_samples(got, here)  # to the last bit: the same kernels on the same rows
            one_batch = sample(pol, p, 0.9, torch.Generator().manual_seed(n), 8, whole)
            assert torch.equal(got.responses, one_batch.responses)  # the same draws
            # A half's matrix products may take another kernel than the whole batch's.
            torch.testing.assert_close(got.logprobs, one_batch.logprobs, rtol=0, atol=1e-5)
        # The half beside ran in inference mode, as the caller's half did.
        assert all(mode for _, _, mode in two_threads.traced.traces)

        def failing(fn, *args):
            return pool.submit(lambda: 1 / 0)

        broken = TracedDecoding(pol, 0.9, repeats=8, beside=failing)
        with pytest.raises(ZeroDivisionError):
            sample(pol, prompts(4), 0.9, torch.Generator().manual_seed(0), 8, broken)
    assert beside_rows == [8, 3]
    assert two_threads.traced.is_traced()


def test_two_threads_wanting_the_same_trace_make_it_once(monkeypatch):
    import threading
    import time

    pol = trained_like(Policy(), 12)
    reference_logprobs = Traced(ResponseLogprobs(pol, 2), "reference log-probs")
    made = []
    real_trace = Traced._trace

    def slow_trace(self, inputs):
        made.append(1)
        time.sleep(0.2)  # long enough that the other thread asks while this one traces
        return real_trace(self, inputs)

    monkeypatch.setattr(Traced, "_trace", slow_trace)
    p, r = prompts(3), torch.randint(0, N_SYLLABLES, (6, RESPONSE_LEN))
    start = threading.Barrier(2)
    results = []

    def call():
        start.wait()
        with torch.inference_mode():
            results.append(reference_logprobs(p, r))

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(reference_logprobs.traces) == 1
    assert len(results) == 2 and torch.equal(results[0], results[1])


@pytest.mark.parametrize("failure", ["raises", "differs"])
def test_a_pass_stays_eager_where_its_trace_fails_or_differs(monkeypatch, caplog, failure):
    pol = trained_like(Policy(), 8)
    p = prompts(3)

    def broken_trace(module, inputs, **_):
        if failure == "raises":
            raise RuntimeError("this torch cannot trace")
        return lambda *inputs: tuple(t + 1 for t in module(*inputs))

    monkeypatch.setattr(torch.jit, "trace", broken_trace)
    decoding = TracedDecoding(pol, 1.0, repeats=2)
    with caplog.at_level("INFO", logger="tinyworld.traced"):
        got = sample(pol, p, 1.0, torch.Generator().manual_seed(1), 2, decoding)
    assert same_samples(got, sample(pol, p, 1.0, torch.Generator().manual_seed(1), 2))
    assert list(decoding.traced.traces.values()) == [decoding.traced.module.forward]
    assert not decoding.traced.is_traced()
    assert "decoding stays eager" in caplog.text


def test_an_rl_run_with_its_passes_traced_equals_the_eager_run(small_world, tmp_path, monkeypatch):
    overrides = ["steps=5", "log_every=1", "batch_prompts=4", "samples_per_prompt=4"]
    config = load_rl_config(None, overrides)
    made = []
    real_trace = Traced._trace

    def watched(self, inputs):
        made.append(self)
        return real_trace(self, inputs)

    monkeypatch.setattr(Traced, "_trace", watched)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        filters = list(warnings.filters)
        train_rl(config, small_world, tmp_path / "traced")  # it traces on two threads
        assert warnings.filters == filters  # no trace left the tracer's filter behind
    assert not [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
    assert {t.name for t in made} == {"decoding", "reward model", "reference log-probs"}
    assert all(t.is_traced() for t in made)  # the run went through its traces
    monkeypatch.setattr(Traced, "__call__", lambda self, *inputs: self.module(*inputs))
    train_rl(config, small_world, tmp_path / "eager")
    logs = []
    for name in ("traced", "eager"):
        lines = (tmp_path / name / "log.jsonl").read_text().splitlines()
        logs.append([{k: v for k, v in json.loads(x).items() if k != "elapsed_s"} for x in lines])
    assert len(logs[0]) == 5 and logs[0] == logs[1]
    weights = [
        (tmp_path / n / "checkpoint" / "policy.safetensors").read_bytes()
        for n in ("traced", "eager")
    ]
    assert weights[0] == weights[1]


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
    start = load_policy(small_world / "policy")
    for trainer in (train_rl_anchor, train_rl_plain):
        result = trainer(config, small_world)
        assert result["elapsed_s"] > 0 and abs(result["kl"]) < 1.0
        before = (
            AnchorPolicy(start).state_dict() if trainer is train_rl_anchor else start.state_dict()
        )
        after = result["policy"].state_dict()
        changed = [k for k in before if not torch.equal(before[k], after[k])]
        assert len(changed) == len(before), trainer.__name__  # Adam moves every parameter


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
    from benchmarks.__main__ import previous_figures, render

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
    (tmp_path / "BENCHMARKS.md").write_text(first)
    kept = previous_figures(tmp_path / "BENCHMARKS.md")
    assert kept["dev_eval_s"] == 0.255
    assert render(kept, "python -m benchmarks") == first
