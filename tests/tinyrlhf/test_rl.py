"""The RL trainer on the small world: outputs, one-step update, config and wrapper errors."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from rate.errors import ConfigError, RateError
from tests.helpers import ROOT
from tinyworld.models import load_policy
from tinyworld.rl import train_rl
from tinyworld.rl_config import RLConfig, load_rl_config


def test_defaults_are_the_published_recipe():
    c = RLConfig()
    assert (c.kl_coef, c.steps, c.batch_prompts, c.samples_per_prompt, c.lr) == (
        0.1,
        800,
        16,
        8,
        3e-4,
    )
    assert (c.temperature, c.seed, c.log_every, c.save_every, c.max_grad_norm) == (
        1.0,
        0,
        20,
        0,
        1.0,
    )


def test_one_step_changes_the_weights_and_writes_the_run(small_world, tmp_path):
    config = load_rl_config(small_world / "configs" / "default.json", ["steps=1", "log_every=1"])
    out = tmp_path / "run"
    train_rl(config, small_world, out)
    before = load_policy(small_world / "policy").state_dict()
    after = load_policy(out / "checkpoint").state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert len(changed) == len(before)  # Adam moves every parameter on the first step
    line = json.loads((out / "log.jsonl").read_text().splitlines()[0])
    assert set(line) == {
        "step",
        "proxy_reward",
        "kl",
        "shaped_reward",
        "entropy",
        "loss",
        "elapsed_s",
    }
    assert line["step"] == 1 and abs(line["kl"]) < 1e-4  # first step samples from the reference
    saved = json.loads((out / "run_config.json").read_text())
    assert saved["steps"] == 1 and saved["kl_coef"] == 0.1
    assert (out / saved["world"]).resolve() == small_world.resolve()


def test_log_every_save_every_and_reproducibility(small_world, tmp_path):
    args = ["steps=6", "log_every=2", "save_every=3", "batch_prompts=4", "samples_per_prompt=4"]
    config = load_rl_config(None, args)
    train_rl(config, small_world, tmp_path / "a")
    train_rl(config, small_world, tmp_path / "b")
    steps = [json.loads(x)["step"] for x in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert steps == [2, 4, 6]
    assert sorted(p.name for p in (tmp_path / "a" / "checkpoints").iterdir()) == ["step_000003"]
    a = (tmp_path / "a" / "checkpoint" / "policy.safetensors").read_bytes()
    b = (tmp_path / "b" / "checkpoint" / "policy.safetensors").read_bytes()
    assert a == b  # same seed, same run


def test_family_weights_restrict_training_to_chosen_families(small_world, tmp_path):
    wrapper = tmp_path / "record.py"
    seen = tmp_path / "families.txt"
    wrapper.write_text(
        f"def transform(records, tokens, rewards):\n"
        f"    with open({str(seen)!r}, 'a') as f:\n"
        f"        f.write(' '.join(r['family'] for r in records) + '\\n')\n"
        f"    return rewards\n"
    )
    config = load_rl_config(
        None,
        [
            "steps=3",
            f"reward_wrapper={json.dumps(str(wrapper))}",
            'family_weights={"dune": 1, "ember": 0}',
        ],
    )
    seen.unlink(missing_ok=True)
    train_rl(config, small_world, tmp_path / "run")
    lines = seen.read_text().split("\n")[1:-1]  # the first line is the trial call before training
    assert len(lines) == 3 and all(set(line.split()) == {"dune"} for line in lines)


def test_reward_wrapper_changes_the_reward(small_world, tmp_path):
    wrapper = tmp_path / "w.py"
    wrapper.write_text("def transform(records, tokens, rewards):\n    return rewards + 100.0\n")
    config = load_rl_config(
        None, ["steps=2", "log_every=1", f"reward_wrapper={json.dumps(str(wrapper))}"]
    )
    train_rl(config, small_world, tmp_path / "run")
    line = json.loads((tmp_path / "run" / "log.jsonl").read_text().splitlines()[0])
    assert line["wrapped_reward"] == pytest.approx(line["proxy_reward"] + 100.0, abs=1e-3)


@pytest.mark.parametrize(
    "override, message",
    [
        ("kl_coeff=0.1", "did you mean 'kl_coef'"),
        ('steps="many"', "key 'steps': expected an integer"),
        ("samples_per_prompt=1", "samples_per_prompt' must be >= 2"),
        ('family_weights={"dunes": 1}', "did you mean 'dune'"),
        ("lr=-1", "'lr' must be > 0"),
    ],
)
def test_bad_config_is_rejected_before_training(override, message):
    with pytest.raises(ConfigError, match=message):
        load_rl_config(None, [override])


def test_bad_config_file_names_file_and_line(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text('{\n  "kl_coef": 0.1,\n  "steps": ,\n}')
    with pytest.raises(ConfigError, match=r"c.json:3: not valid JSON"):
        load_rl_config(bad)


WRAPPERS = {
    "missing": (None, "does not exist"),
    "no_transform": ("def other(a, b, c):\n    return c\n", "defines no function 'transform'"),
    "raises": (
        "def transform(r, t, x):\n    raise KeyError('family')\n",
        "transform raised KeyError",
    ),
    "wrong_length": (
        "def transform(r, t, x):\n    return x[:-1]\n",
        "returned 3 rewards for 4 responses",
    ),
    "not_numbers": ("def transform(r, t, x):\n    return ['a'] * len(r)\n", "must return numbers"),
    "nan": ("def transform(r, t, x):\n    return x * float('nan')\n", "NaN or infinite"),
}


@pytest.mark.parametrize("kind", list(WRAPPERS))
def test_broken_reward_wrapper_fails_before_any_output(small_world, tmp_path, kind):
    source, message = WRAPPERS[kind]
    path = tmp_path / "wrapper.py"
    if source is not None:
        path.write_text(source)
    config = load_rl_config(None, ["steps=2", f"reward_wrapper={json.dumps(str(path))}"])
    out = tmp_path / "run"
    with pytest.raises((ConfigError, RateError), match=message):
        train_rl(config, small_world, out)
    assert not out.exists()


def test_missing_inputs_fail_before_any_output(small_world, tmp_path):
    out = tmp_path / "run"
    for override, message in [
        ('policy="nope"', "policy.safetensors is missing"),
        ('reward_model="policy"', "rm.safetensors is missing"),
        ('prompts="nope.jsonl"', "nope.jsonl"),
        ('family_weights={"dune": 1, "anvil": 1}', "has no dune prompts"),
    ]:
        world = small_world
        if "has no dune" in message:
            world = tmp_path / "world_no_dune"
            shutil.copytree(small_world, world, dirs_exist_ok=True)
            rows = (world / "data" / "prompts_train.jsonl").read_text().splitlines()
            (world / "data" / "prompts_train.jsonl").write_text(
                "\n".join(r for r in rows if '"dune"' not in r) + "\n"
            )
        with pytest.raises((ConfigError, RateError), match=message):
            train_rl(load_rl_config(None, [override]), world, out)
        assert not out.exists()


def test_bad_prompt_line_names_file_and_line(small_world, tmp_path):
    prompts = tmp_path / "p.jsonl"
    good = (small_world / "data" / "prompts_train.jsonl").read_text().splitlines()[:2]
    prompts.write_text("\n".join([*good, '{"id": "x", "family": "dune", "attrs": [1, 2]}']) + "\n")
    with pytest.raises(RateError, match=r"p.jsonl:3: field 'attrs'"):
        train_rl(
            load_rl_config(None, [f"prompts={json.dumps(str(prompts))}"]),
            small_world,
            tmp_path / "r",
        )
    prompts.write_text(good[0] + "\n{not json\n")
    with pytest.raises(RateError, match=r"p.jsonl:2: not valid JSON"):
        train_rl(
            load_rl_config(None, [f"prompts={json.dumps(str(prompts))}"]),
            small_world,
            tmp_path / "r",
        )


def test_existing_run_is_not_overwritten_by_accident(small_world, tmp_path):
    config = load_rl_config(None, ["steps=1"])
    train_rl(config, small_world, tmp_path / "run")
    with pytest.raises(RateError, match="already holds a run"):
        train_rl(config, small_world, tmp_path / "run")
    train_rl(config, small_world, tmp_path / "run", overwrite=True)


def test_killed_run_leaves_only_complete_checkpoints(small_world, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rate.cli",
            "tinyrlhf",
            "rl",
            "--world",
            str(small_world),
            "--out",
            str(out),
            "--override",
            "steps=100000",
            "--override",
            "save_every=1",
            "--override",
            "batch_prompts=2",
        ],
        env={**os.environ, "RATE_PROGRESS": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list((out / "checkpoints").glob("step_*"))) < 5:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    saved = sorted((out / "checkpoints").glob("step_*"))
    assert len(saved) >= 5
    for ckpt in saved:  # every visible checkpoint is whole, whatever instant the kill hit
        load_policy(ckpt)
    assert not (out / "checkpoint").exists()  # the final checkpoint is written only at the end


def test_shipped_experiment_configs_are_valid():

    configs = sorted((ROOT / "experiments" / "tinyrlhf").glob("*.json"))
    assert configs
    for path in configs:
        load_rl_config(path)


def test_overwrite_over_a_killed_run_keeps_none_of_its_checkpoints(small_world, tmp_path):
    """main kept the killed run's checkpoints/step_* beside the new run's checkpoint."""
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    shutil.copytree(small_world / "policy", out / "checkpoints" / "step_000010")
    (out / "run_config.json").write_text("{}")
    (out / "log.jsonl").write_text('{"step": 10}\n')
    train_rl(load_rl_config(None, ["steps=1", "batch_prompts=2"]), small_world, out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint", "log.jsonl", "run_config.json"]
    assert json.loads((out / "log.jsonl").read_text().splitlines()[-1])["step"] == 1


def test_a_run_whose_wrapper_failed_mid_run_is_replaced_by_the_rerun(small_world, tmp_path, caplog):
    """main: a wrapper failing at step 1 left run_config.json and an empty log.jsonl, and the
    rerun was refused with 'already holds a run'."""
    wrapper = tmp_path / "w.py"
    # The trial call before training scores 4 responses; the first step scores 8.
    wrapper.write_text(
        "def transform(records, tokens, rewards):\n"
        "    if len(records) > 4:\n"
        "        raise ValueError('too many')\n"
        "    return rewards\n"
    )
    out = tmp_path / "run"
    base = ["steps=1", "batch_prompts=4", "samples_per_prompt=2"]
    failing = load_rl_config(None, [*base, f"reward_wrapper={json.dumps(str(wrapper))}"])
    with pytest.raises(RateError, match="transform raised ValueError: too many"):
        train_rl(failing, small_world, out)
    assert not (out / "checkpoint").exists()  # clearly unfinished
    train_rl(load_rl_config(None, base), small_world, out)  # no --overwrite needed
    assert "holds an unfinished run (no checkpoint/); replacing it" in caplog.text
    assert (out / "checkpoint").is_dir()
    with pytest.raises(RateError, match="already holds a run"):  # a finished one is kept
        train_rl(load_rl_config(None, base), small_world, out)


def test_a_run_folder_in_use_by_another_process_is_refused(small_world, tmp_path):
    """A second trainer into a run folder whose lock another process holds stops at once,
    naming that process, and writes nothing; the lock sits beside the folder, which holds only
    the run's outputs. A study's folder is refused likewise."""
    import subprocess
    import sys
    import time

    from rate.errors import BusyError
    from rate.provenance import folder_lock
    from tinyworld.rl import run_lock_name
    from tinyworld.studies.release import run_release_study

    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom rate.provenance import folder_lock\n"
         f"with folder_lock({str(tmp_path)!r}, RuntimeError, {run_lock_name(out)!r}):\n"
         "    print('held', flush=True)\n    time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        config = load_rl_config(small_world / "configs" / "default.json", ["steps=1"])
        with pytest.raises(BusyError, match=rf"another RL run \(pid {holder.pid}\)"):
            train_rl(config, small_world, out)
        assert not out.exists()  # nothing written
    finally:
        holder.kill()
        holder.wait()
    train_rl(config, small_world, out)  # the holder gone, the folder is free
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint", "log.jsonl", "run_config.json"]
    study = tmp_path / "study"
    with folder_lock(study, RuntimeError), pytest.raises(BusyError, match="another release study"):
        t = time.perf_counter()
        run_release_study(small_world, study, [0], {"R1": {"kl_coef": 0.1, "steps": 1}})
    assert time.perf_counter() - t < 5 and not (study / "wrappers").exists()
