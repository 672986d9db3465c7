"""NaN and infinity (issue 45, item 8): a setting is refused before any work, a run that
diverges stops before its checkpoint, and no command reads a model that holds them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from rate.cli import main
from rate.errors import ConfigError, RateError
from tinyworld.models import load_policy, save_model
from tinyworld.policy import Policy
from tinyworld.rl import train_rl
from tinyworld.rl_config import RLConfig

SMALL_RUN = ("steps=3", "batch_prompts=2", "samples_per_prompt=2")


def rl(world: Path, out: Path, *settings: str) -> int:
    """`rate world rl` on a few small steps, later settings winning."""
    argv = ["world", "rl", "--world", str(world), "--out", str(out)]
    for setting in (*SMALL_RUN, *settings):
        argv += ["--set", setting]
    return main(argv)


def one_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    "setting, message",
    [
        ("kl_coef=NaN", "key 'kl_coef' must be >= 0 and <= 1000000 (a finite number), got nan"),
        (
            "lr=Infinity",
            "key 'lr' must be > 0 and <= 3.4e+38 (a finite number; the weights are float32), got inf",
        ),
        (
            "temperature=.inf",
            "key 'temperature' must be > 0 and <= 1000 (a finite number), got inf",
        ),
        (
            "max_grad_norm=.nan",
            "key 'max_grad_norm' must be > 0 and <= 1000000000000 (a finite number), got nan",
        ),
        ("seed=18446744073709551616", "key 'seed' must be >= 0 and <= 18446744073709551615"),
    ],
)
def test_a_non_finite_or_out_of_range_setting_is_one_line_before_any_work(
    small_world, tmp_path, capsys, setting, message
):
    out = tmp_path / "run"
    assert rl(small_world, out, setting) == 2
    assert message in one_line(capsys)
    assert not out.exists()


def test_a_config_built_in_python_is_checked_too(small_world, tmp_path):
    with pytest.raises(ConfigError, match=r"key 'kl_coef' must be >= 0 .*got nan"):
        train_rl(RLConfig(kl_coef=math.nan, steps=1), small_world, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_run_whose_loss_goes_non_finite_stops_unfinished(small_world, tmp_path, capsys):
    # A finite, in-range lr that Adam's first step turns into weights the forward pass
    # cannot hold: step 2's loss is NaN.
    out = tmp_path / "run"
    assert rl(small_world, out, "lr=1e10", "log_every=1") == 2
    line = one_line(capsys)
    assert re.search(r"RL step \d+: the loss became non-finite \(nan\); lower lr \(1e\+10\)", line)
    assert f"{out} is left unfinished (no checkpoint/)" in line
    assert (out / "run_config.json").is_file() and not (out / "checkpoint").exists()
    logged = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    assert all(math.isfinite(v) for row in logged for v in row.values())
    # An unfinished run: a sound rerun replaces it without --overwrite.
    assert rl(small_world, out) == 0
    assert (out / "checkpoint").is_dir()


def test_weights_broken_by_a_step_with_a_finite_loss_are_caught_before_saving(
    small_world, tmp_path, capsys
):
    out = tmp_path / "run"
    assert rl(small_world, out, "lr=1e38", "steps=1") == 2
    line = one_line(capsys)
    assert re.search(r"RL step 1: \d+ of \d+ weight tensors hold NaN or infinite values", line)
    assert not (out / "checkpoint").exists()


def test_a_diverged_reward_model_is_not_saved(small_world, tmp_path, capsys):
    out = tmp_path / "rm"
    gold = small_world / "data" / "gold_calib.jsonl"
    argv = ["world", "train-rm", "--data", str(gold), "--out", str(out), "--epochs", "1"]
    assert main([*argv, "--lr", "1e38"]) == 2
    assert re.search(
        r"^rate: error: reward model .*(non-finite|NaN or infinite).*no reward model was saved$",
        one_line(capsys),
    )
    assert not out.exists()


def test_a_non_finite_trainer_flag_is_one_line(small_world, tmp_path, capsys):
    gold = small_world / "data" / "gold_calib.jsonl"
    argv = ["world", "sft", "--data", str(gold), "--out", str(tmp_path / "p"), "--lr", "nan"]
    with pytest.raises(SystemExit) as stop:  # the parser's, before any work
        main(argv)
    assert stop.value.code == 2
    said = one_line(capsys)
    assert "argument --lr: must be > 0 and <= 3.4e+38 (a finite number; the weights are" in said
    assert said.endswith("got nan")
    assert not (tmp_path / "p").exists()


def test_save_model_refuses_non_finite_weights(tmp_path):
    policy = Policy()
    with torch.no_grad():
        policy.tok_emb.weight[0, 0] = math.inf
    with pytest.raises(RateError, match=r"not saving the policy .*1 of \d+ weight tensors"):
        save_model(policy, tmp_path / "p")
    assert not (tmp_path / "p").exists()


@pytest.fixture
def nan_policy(small_world: Path, tmp_path: Path) -> Path:
    """The world's policy with one NaN weight, written as a diverged run once saved it."""
    folder = tmp_path / "nan_policy"
    save_model(load_policy(small_world / "policy"), folder)
    weights = folder / "policy.safetensors"
    state = load_file(weights)
    state["tok_emb.weight"][3, 5] = math.nan
    save_file(state, weights)
    return folder


@pytest.mark.parametrize("command", ["evaluate", "certify", "dev-eval", "best-of-n"])
def test_no_command_reads_a_policy_with_nan_weights(
    small_world, tmp_path, capsys, nan_policy, command
):
    out = tmp_path / "out"
    w, p = str(small_world), str(nan_policy)
    argv = {
        "evaluate": ["--policy", p, "--world", w, "--per-family", "5", "--json"],
        "certify": ["--world", w, "--policy", p, "--out", str(out)],
        "dev-eval": ["--world", w, "--policy", p, "--out", str(out)],
        "best-of-n": [
            "--policy",
            p,
            "--reward-model",
            str(small_world / "reward_model"),
            "--prompts",
            str(small_world / "data" / "prompts_dev.jsonl"),
            "--n",
            "2",
            "--out",
            str(out),
        ],
    }[command]
    assert main(["world", command, *argv]) == 2
    line = one_line(capsys)
    assert f"{nan_policy}: not a usable policy: 1 of " in line
    assert "hold NaN or infinite values" in line and "retrain it" in line
    assert not out.exists() and not out.with_suffix(".json").exists()
