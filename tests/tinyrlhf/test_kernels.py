"""The world's kernels against plain torch (oneDNN linear layers, the padded attention
softmax) and its trainers on one thread."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from tinyworld import kernels
from tinyworld.kernels import (
    ONEDNN_MIN_ROWS,
    attention_weights,
    linear,
    onednn_available,
)
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config


@pytest.fixture
def onednn_route(monkeypatch):
    """Linear layers on oneDNN whatever this CPU's vendor, as the trainer takes them on AMD's."""
    op = kernels._onednn_linear_op()
    # CI's machines are x86 with oneDNN in torch's wheel: the route must be testable there,
    # or the figures BENCHMARKS.md measured on AMD CPUs would come from a path no test runs.
    assert op is not None
    monkeypatch.setattr(kernels, "_ONEDNN_LINEAR", op)
    return op


def test_an_rl_run_takes_the_linear_route_of_the_rest(small_world, tmp_path, monkeypatch):
    # RL once took torch's path on Intel CPUs; that route bought under 15% on its own
    # (experiments/rl_speed/README.md), so RL's linear layers now go where everything else's go.
    from tinyworld import rl

    seen = []
    real_sample = rl.sample

    def watching(*args, **kwargs):
        seen.append(onednn_available())
        return real_sample(*args, **kwargs)

    monkeypatch.setattr(rl, "sample", watching)
    config = load_rl_config(small_world / "configs" / "default.json", ["steps=2", "log_every=1"])
    before = kernels._ONEDNN_LINEAR
    train_rl(config, small_world, tmp_path / "run")
    assert seen == [before is not None] * 2
    assert kernels._ONEDNN_LINEAR is before


def test_cpuinfo_field_reads_proc_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n")
    assert kernels.cpuinfo_field("vendor_id", info) == "AuthenticAMD"
    info.write_text("processor\t: 0\nmodel name\t: some arm core\n")  # no vendor line
    assert kernels.cpuinfo_field("vendor_id", info) is None
    assert kernels.cpuinfo_field("vendor_id", tmp_path / "missing") is None
    info.write_text("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n")
    assert kernels.cpuinfo_field("model name", info) == "Intel(R) Xeon(R) Processor"
    assert kernels.cpuinfo_field("flags", info) is None


def test_cpu_description_tells_cpus_of_one_name_apart(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
    )
    assert kernels.cpu_description(info) == "AMD EPYC (family 25, model 17)"
    info.write_text("model name\t: some arm core\n")  # no family or model: the name alone
    assert kernels.cpu_description(info) == "some arm core"


@pytest.mark.parametrize("rows", [ONEDNN_MIN_ROWS - 1, ONEDNN_MIN_ROWS, 1792])
@pytest.mark.parametrize("gelu", [False, True])
def test_linear_equals_torch_without_autograd(rows, gelu, onednn_route):
    gen = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 96, generator=gen) * 3
    w, b = torch.randn(288, 96, generator=gen), torch.randn(288, generator=gen)
    want = F.linear(x, w, b)
    want = F.gelu(want) if gelu else want
    with torch.no_grad():
        got = linear(x, w, b, gelu=gelu)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_linear_takes_batched_inputs_and_no_bias(onednn_route):
    x = torch.randn(128, 14, 64)  # 1,792 rows, as the reward model's
    w = torch.randn(192, 64)
    got = linear(x, w, None)
    assert got.shape == (128, 14, 192)
    torch.testing.assert_close(got, F.linear(x, w), rtol=1e-5, atol=1e-5)


def test_linear_gradients_equal_torch(onednn_route):
    gen = torch.Generator().manual_seed(0)
    x0 = torch.randn(2, 992, 64, generator=gen)
    w0, b0 = torch.randn(192, 64, generator=gen), torch.randn(192, generator=gen)
    upstream = torch.randn(2, 992, 192, generator=gen)
    grads = []
    for fn in (linear, F.linear):
        x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))
        y = fn(x, w, b)
        (y * upstream).sum().backward()
        grads.append((y.detach(), x.grad, w.grad, b.grad))
    x = x0.clone().requires_grad_()  # the path this test is about was taken
    assert type(linear(x, w0, b0).grad_fn).__name__ == "_OneDNNLinearBackward"
    for ours, theirs in zip(*grads, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_linear_gradient_of_a_frozen_weight_is_not_computed(onednn_route):
    x = torch.randn(300, 64, requires_grad=True)
    w = torch.randn(64, 64)  # a frozen layer: only the input's gradient is wanted
    linear(x, w, None).sum().backward()
    torch.testing.assert_close(x.grad, w.sum(0).expand(300, 64), rtol=1e-5, atol=1e-5)


def test_float64_and_small_inputs_stay_on_torch(monkeypatch):
    calls = []
    monkeypatch.setattr(kernels, "_ONEDNN_LINEAR", lambda *a: calls.append(a))
    x64, w64 = torch.randn(512, 8, dtype=torch.float64), torch.randn(4, 8, dtype=torch.float64)
    assert torch.equal(linear(x64, w64, None), F.linear(x64, w64))
    x, w = torch.randn(ONEDNN_MIN_ROWS - 1, 8), torch.randn(4, 8)
    assert torch.equal(linear(x, w, None), F.linear(x, w))
    assert calls == []


@pytest.mark.parametrize("keys", [1, 6, 7, 13, 14, 16, 17, 40])
def test_attention_weights_equal_softmax_with_masks_and_gradients(keys):
    gen = torch.Generator().manual_seed(keys)
    scores = torch.randn(64, 7, keys, generator=gen) * 4
    scores[:, :, keys // 2 + 1 :] = float("-inf")  # masked keys, as a causal mask gives
    upstream = torch.randn(64, 7, keys, generator=gen)
    results = []
    for fn in (attention_weights, lambda s: s.softmax(dim=-1)):
        s = scores.clone().requires_grad_()
        y = fn(s)
        (y * upstream).sum().backward()
        results.append((y.detach(), s.grad))
    (ours, ours_grad), (theirs, theirs_grad) = results
    assert ours.shape == (64, 7, keys)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(ours_grad, theirs_grad, rtol=1e-5, atol=1e-6)
    assert (ours[:, :, keys // 2 + 1 :] == 0).all()


def test_an_rl_run_trains_on_one_thread_and_restores_the_count(small_world, tmp_path):
    # The wrapper runs inside the loop: it records the thread count the step runs on.
    record = tmp_path / "threads.txt"
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(
        "import torch\n"
        "def transform(records, response_tokens, rewards):\n"
        f"    open({str(record)!r}, 'a').write(str(torch.get_num_threads()) + '\\n')\n"
        "    return rewards\n"
    )
    config = load_rl_config(
        small_world / "configs" / "default.json",
        ["steps=2", "log_every=1", f"reward_wrapper={json.dumps(str(wrapper))}"],
    )
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        train_rl(config, small_world, tmp_path / "run")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    # The wrapper's trial call in prepare() runs before the loop, on the caller's threads.
    assert record.read_text().split()[-2:] == ["1", "1"]


def test_a_benchmark_contender_runs_in_its_own_process(small_world):
    from benchmarks.rl import run_contender
    from rate.errors import RateError

    assert run_contender("ours", small_world, 2, 1) > 0
    with pytest.raises(RateError, match="benchmark contender anchor failed"):
        run_contender("anchor", small_world / "missing", 2, 1)


def _where_am_i() -> bool:
    from rate.parallel import in_worker

    return in_worker()


def test_workers_know_they_are_workers():
    from rate.parallel import run_jobs

    assert [r for _, r in run_jobs(_where_am_i, [(), ()], jobs=2)] == [True, True]
    assert [r for _, r in run_jobs(_where_am_i, [()], jobs=1)] == [False]


def test_onednn_probe_falls_back_where_the_op_is_missing_or_fails(monkeypatch):
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert kernels._onednn_linear_op() is None
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)

    class Ops:  # a torch whose private op takes other arguments, or returns other numbers
        def __init__(self, op):
            self._linear_pointwise = op

    def other_signature(x, w):
        return x @ w.t()

    monkeypatch.setattr(torch.ops, "mkldnn", Ops(other_signature))
    assert kernels._onednn_linear_op() is None
    monkeypatch.setattr(torch.ops, "mkldnn", Ops(lambda x, w, *rest: torch.zeros(2, 4)))
    assert kernels._onednn_linear_op() is None
