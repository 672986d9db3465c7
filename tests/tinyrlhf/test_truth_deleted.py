"""Every analysis command runs on a world whose truth is deleted, and writes exactly what it
writes with the truth there (timings aside).

The truth is ``truth/`` (the world's config, with the planted shortcuts, and what the reward
model learned of them): only building, labelling and evaluation may read it. The analysis
commands see what an analyst sees: the reference policy, the reward model, the data and the
gold labels. Each runs first on the world without its truth (so nothing it could have read of
the truth is cached in this process), then, with the truth put back, on the same paths again.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rate.cli import main
from tests.helpers import ROOT

FAST = ["--fresh", "60", "--replicates", "200", "--plan-samples", "0"]
# What may differ: wall-clock times, and the digests of files that hold one (an audit's files
# beside it, the audit a wrapper was written from).
TIMINGS = {"seconds", "elapsed_s", "file_set"}
SECONDS = re.compile(r"\d+(\.\d+)?( \+ \d+(\.\d+)?)? s\b")
AUDIT_DIGEST = re.compile(r"^AUDIT_SHA256 = .*$", re.MULTILINE)


# The audit at its smallest: 4 responses for the tokens, 2 to screen the pairs, 2 screened
# pairs confirmed on 4; RATE likewise.
SMALL_AUDIT = [a for kv in ("n_token=4", "n_screen=2", "screen_top=2", "n_confirm=4",
                            "n_rate_token=2", "n_rate_screen=1", "n_rate_confirm=2")
               for a in ("--set", kv)]  # fmt: skip


def world_commands(world: Path, inputs: Path, out: Path) -> dict[str, list[str]]:
    """Every `rate world` command that analyses a built world, at CI size. ``inputs`` holds an
    audit and its wrapper (made once, so that the commands that read them read the same
    bytes in both runs)."""
    checkpoint = str(world / "runs" / "kl05-s800" / "checkpoint")
    audit, wrapper = str(inputs / "audit.json"), str(inputs / "ours.py")
    small_audit = [*SMALL_AUDIT, "--set", "n_complex=4"]
    return {
        "audit": ["--world", str(world), "--out", str(out / "audit.json"), "--write-wrapper",
                  str(out / "ours.py"), *small_audit],
        "certify": ["--world", str(world), "--policy", checkpoint, "--wrapper", wrapper,
                    "--out", str(out / "certificate"), *FAST],
        "assess": ["--world", str(world), "--audit", audit, "--wrapper", wrapper,
                   "--out", str(out / "assessment"), *FAST],
        "recipe-sweep": ["--world", str(world), "--kl", "0.1", "--steps", "4", "--save-every",
                         "2", "--wrapper", wrapper, "--out", str(out / "sweep"), "--jobs", "1",
                         *FAST],
        "tilt": ["--world", str(world), "--wrapper", wrapper, "--beta", "0.1",
                 "--tail-samples", "300", "--model-samples", "100", "--out", str(out / "tilt")],
        "dev-eval": ["--world", str(world), "--policy", checkpoint, "--out",
                     str(out / "dev_eval.json")],
        "best-of-n": ["--policy", str(world / "policy"), "--reward-model",
                      str(world / "reward_model"), "--prompts",
                      str(world / "data" / "prompts_dev.jsonl"), "--n", "4", "--out",
                      str(out / "best_of_4.jsonl")],
        "rl": ["--world", str(world), "--set", "steps=2", "--out", str(out / "rl")],
    }  # fmt: skip


# The RATE pipeline on the world's marker concept, scored by its reward model (the oracle
# scorer is true quality, evaluation).
STAGES = ("create_dataset", "score_dataset", "treatment_effects")
SMOKE = ROOT / "experiments" / "tinyworld" / "smoke.yaml"


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def contents(path: Path):
    """A file as compared: JSON (or JSON lines) without its timings, a report or a wrapper
    without the times it quotes, else its bytes."""
    if path.suffix == ".json":
        return without_timings(json.loads(path.read_text()))
    if path.suffix == ".jsonl":
        return [without_timings(json.loads(line)) for line in path.read_text().splitlines()]
    if path.suffix == ".md":
        return SECONDS.sub("(time) s", path.read_text())
    if path.suffix == ".py":
        return AUDIT_DIGEST.sub("AUDIT_SHA256 = (digest)", path.read_text())
    return path.read_bytes()


def tree(folder: Path) -> dict[str, object]:
    """Every file under ``folder`` but lock files (they hold the writer's pid)."""
    return {
        str(p.relative_to(folder)): contents(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def pipeline_outputs(project: Path) -> dict[str, object]:
    """The data the three stages wrote (their records' names and metadata carry the run's
    time): the rewrites, the scores and the effects."""
    (rewrites,) = (project / "data" / "rewrites").glob("*_test.json")
    (scored,) = (project / "data" / "scored").glob("*_test_scored_*.jsonl")
    (effects,) = (project / "effects").glob("*_test.json")
    fx = contents(effects)
    return {
        "rewrites": contents(rewrites),
        "scored": contents(scored),
        "effects": {k: v for k, v in fx.items() if k not in {"input", "dataset_filename"}},
    }


def run_all(world: Path, inputs: Path, out: Path, project: Path, monkeypatch) -> None:
    out.mkdir()
    for command, args in world_commands(world, inputs, out).items():
        assert main(["world", command, *args]) == 0, command
    monkeypatch.setenv("PROJECT_DIR", str(project))
    monkeypatch.setenv("RATE_WORLD", str(world))
    for stage in STAGES:
        assert main([stage, "--config", str(SMOKE)]) == 0, stage


@pytest.mark.slow  # about 30 s of CPU: every command twice
def test_every_analysis_command_writes_the_same_without_the_truth(
    small_world, tmp_path, monkeypatch
):
    world, inputs = tmp_path / "world", tmp_path / "inputs"
    shutil.copytree(small_world, world)
    truth = tmp_path / "truth_kept"
    shutil.move(world / "truth", truth)
    inputs.mkdir()
    assert main(["world", "audit", "--world", str(world), "--out", str(inputs / "audit.json"),
                 "--write-wrapper", str(inputs / "ours.py"), *SMALL_AUDIT]) == 0  # fmt: skip

    out = tmp_path / "out"
    run_all(world, inputs, out, tmp_path / "project_blind", monkeypatch)
    blind = tree(out)
    shutil.rmtree(out)
    shutil.move(truth, world / "truth")
    run_all(world, inputs, out, tmp_path / "project_seeing", monkeypatch)
    seeing = tree(out)

    # Every command wrote its outputs, and each is the same with the truth there.
    assert {"audit.json", "certificate.json", "assessment/assessment.json", "sweep/sweep.json",
            "tilt/tilt.json", "dev_eval.json", "best_of_4.jsonl", "rl/log.jsonl"} <= set(blind)  # fmt: skip
    assert sorted(blind) == sorted(seeing)
    for name in blind:
        assert blind[name] == seeing[name], name
    assert pipeline_outputs(tmp_path / "project_blind") == pipeline_outputs(
        tmp_path / "project_seeing"
    )


@pytest.mark.parametrize("command", ["evaluate", "stats"])
def test_the_evaluation_commands_do_need_the_truth(small_world, tmp_path, command, capsys):
    """The control: the commands that evaluate against the truth fail without it, in one
    line that names the truth file."""
    world = tmp_path / "world"
    shutil.copytree(small_world, world, ignore=shutil.ignore_patterns("truth", "runs"))
    args = ["--world", str(world)]
    if command == "evaluate":
        args += ["--policy", str(small_world / "policy"), "--per-family", "20"]
    assert main(["world", command, *args]) == 2
    assert "truth" in capsys.readouterr().err
