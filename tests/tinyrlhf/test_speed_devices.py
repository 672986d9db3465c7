"""The padded attention softmax against plain torch, and the world's trainers on one thread."""

from __future__ import annotations

import json

import pytest
import torch

from tinyworld.blocks import attention_weights
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config


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


def test_cpuinfo_field_reads_proc_cpuinfo(tmp_path):
    from benchmarks.timing import cpuinfo_field

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n")
    assert cpuinfo_field("vendor_id", info) == "AuthenticAMD"
    info.write_text("processor\t: 0\nmodel name\t: some arm core\n")  # no vendor line
    assert cpuinfo_field("vendor_id", info) is None
    assert cpuinfo_field("vendor_id", tmp_path / "missing") is None
    info.write_text("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n")
    assert cpuinfo_field("model name", info) == "Intel(R) Xeon(R) Processor"
    assert cpuinfo_field("flags", info) is None


def test_cpu_description_tells_cpus_of_one_name_apart(tmp_path):
    from benchmarks.timing import cpu_description

    info = tmp_path / "cpuinfo"
    info.write_text(
        "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
    )
    assert cpu_description(info) == "AMD EPYC (family 25, model 17)"
    info.write_text("model name\t: some arm core\n")  # no family or model: the name alone
    assert cpu_description(info) == "some arm core"


def test_the_phase_timers_catch_each_phase_of_both_loops(small_world):
    # experiments/rl_speed/phases.py wraps what each loop calls by name: a renamed or
    # bypassed function would fail the patch or leave its phase at 0 ms.
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "experiments" / "rl_speed" / "phases.py"), str(small_world), "3", "1"],
        capture_output=True, text=True, check=True, cwd=root,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])},
    ).stdout  # fmt: skip
    rows = {
        cells[0]: (float(cells[1]), float(cells[2]))
        for line in done.splitlines()[2:]
        if (cells := [c.strip() for c in line.strip("|").split("|")])
    }
    shared = ["reward model", "reference forward", "policy forward", "backward"]
    assert list(rows) == [*shared, "the work both do", "sampling, clipping, Adam, the rest", "loop"]
    for side in (0, 1):  # ours, the published trainer
        assert all(rows[phase][side] > 0 for phase in shared)
        assert rows["the work both do"][side] == pytest.approx(
            sum(rows[phase][side] for phase in shared), abs=0.25
        )
        assert rows["loop"][side] > rows["the work both do"][side]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["{missing}"], "configs/default.json: cannot read the RL config"),
        (["W", "x"], "WORLD [STEPS]"),
    ],
)
def test_the_phase_script_refuses_bad_input_in_one_line(tmp_path, args, says):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    args = [a.format(missing=tmp_path / "no-world") for a in args]
    done = subprocess.run(
        [sys.executable, str(root / "experiments" / "rl_speed" / "phases.py"), *args],
        capture_output=True, text=True, cwd=root,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])},
    )  # fmt: skip
    assert done.returncode == 1 and says in done.stderr and "Traceback" not in done.stderr
