"""`make gpu-check` (benchmarks.gpu_check): without CUDA it imports and skips cleanly; its own
logic runs end to end on the CPU with a tiny model; on a GPU the real check must pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from benchmarks import gpu_check
from tests.helpers import ROOT


def test_without_cuda_it_skips_cleanly(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gpu-check: skipped: no CUDA device")
    assert "make gpu-check" in out


def test_the_module_runs_and_skips_in_a_fresh_interpreter():
    """As `make gpu-check` runs it, with no GPU visible: exit 0 and the reason, nothing else."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check"],
        env=env, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines() == [out.stdout.strip()]  # one line
    assert out.stdout.startswith("gpu-check: skipped: no CUDA device")


def test_agreement_known_answers():
    same = gpu_check.agreement([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert same["agree"] and same["max_abs_diff"] == 0 and same["correlation"] == pytest.approx(1)
    # std of [1, 2, 3] is 1: at 1.0 a difference of 5% of (1 + 1) = 0.1 is allowed, not 0.2.
    assert gpu_check.agreement([1.09, 2.0, 3.0], [1.0, 2.0, 3.0])["agree"]
    assert not gpu_check.agreement([1.2, 2.0, 3.0], [1.0, 2.0, 3.0])["agree"]
    # At 3.0 the allowance is 0.2: 3.19 agrees.
    assert gpu_check.agreement([1.0, 2.0, 3.19], [1.0, 2.0, 3.0])["agree"]


def test_the_check_on_the_cpu_with_a_tiny_model(tmp_path, capsys):
    """The batched and one-at-a-time scores of the real scorer agree in bf16 and the report
    says so (no speed-up asked on a shared CPU, no out-of-memory step off CUDA)."""
    out = tmp_path / "report.json"
    args = ["--size", "tiny", "--device", "cpu", "--n-texts", "40", "--batch-size", "8"]
    assert gpu_check.main([*args, "--min-speedup", "0", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    step = report["batched_vs_single"]
    assert step["texts"] == 40 and step["agree"] and step["batch_size"] == 8
    assert step["max_abs_diff"] < gpu_check.BF16_RTOL * step["std"]  # well within, here
    assert report["scorer"]["dtype"] == "torch.bfloat16" and report["failed"] == []
    assert "oom" not in report
    assert "speed-up" in capsys.readouterr().out
    # An impossible speed-up is a failure: exit 1 and the reason.
    assert gpu_check.main([*args, "--min-speedup", "1e9"]) == 1
    assert "gpu-check: FAILED: batching sped scoring up" in capsys.readouterr().out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (`make gpu-check`)")
def test_the_gpu_check_passes_on_a_gpu(tmp_path):
    out = tmp_path / "report.json"
    assert gpu_check.main(["--n-texts", "1000", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["oom"]["backed_off"] and report["batched_vs_single"]["speedup"] >= 10
