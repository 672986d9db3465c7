"""The real `rate` commands, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rate.io import read_jsonl
from tinyworld.vocab import FAMILIES


def rate(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rate.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "RATE_PROGRESS": "0", **(env or {})},
        timeout=600,
    )


def test_help_lists_the_subcommands():
    out = rate("tinyrlhf", "--help")
    assert out.returncode == 0
    for cmd in ("build", "rl", "sft", "train-rm", "best-of-n", "dev-eval", "evaluate"):
        assert cmd in out.stdout


def test_evaluate_reports_truth_proxy_and_kl(small_world):
    out = rate(
        "tinyrlhf",
        "evaluate",
        "--policy",
        str(small_world / "runs" / "default-s800" / "checkpoint"),
        "--json",
        "--per-family",
        "50",
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert set(report["per_family"]) == set(FAMILIES)
    for row in report["per_family"].values():
        assert 0.0 <= row["true_quality"] <= 1.0 and row["kl"] >= -1.0 and "proxy_reward" in row
    expected = sum(r["true_quality"] for r in report["per_family"].values()) / 6
    assert report["balanced"]["true_quality"] == pytest.approx(expected, abs=1e-5)


def test_rl_command_with_overrides(small_world, tmp_path):
    out = rate(
        "tinyrlhf",
        "rl",
        "--world",
        str(small_world),
        "--config",
        str(small_world / "configs" / "default.json"),
        "--override",
        "steps=2",
        "--override",
        "log_every=1",
        "--out",
        str(tmp_path / "run"),
    )
    assert out.returncode == 0, out.stderr
    assert len((tmp_path / "run" / "log.jsonl").read_text().splitlines()) == 2


def test_rl_command_bad_key_is_one_clear_line(small_world, tmp_path):
    out = rate(
        "tinyrlhf",
        "rl",
        "--world",
        str(small_world),
        "--override",
        "kl_coeff=0.2",
        "--out",
        str(tmp_path / "r"),
    )
    assert out.returncode == 2
    assert "unknown key 'kl_coeff'; did you mean 'kl_coef'?" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "r").exists()


def test_sft_train_rm_best_of_n_and_dev_eval_commands(small_world, tmp_path):
    gold = small_world / "data" / "gold_calib.jsonl"
    assert (
        rate(
            "tinyrlhf", "sft", "--data", str(gold), "--out", str(tmp_path / "pol"), "--epochs", "1"
        ).returncode
        == 0
    )
    out = rate(
        "tinyrlhf", "train-rm", "--data", str(gold), "--out", str(tmp_path / "rm"), "--epochs", "2"
    )
    assert out.returncode == 0, out.stderr
    out = rate(
        "tinyrlhf",
        "best-of-n",
        "--policy",
        str(tmp_path / "pol"),
        "--reward-model",
        str(tmp_path / "rm"),
        "--prompts",
        str(small_world / "data" / "prompts_dev.jsonl"),
        "--n",
        "4",
        "--out",
        str(tmp_path / "bon.jsonl"),
    )
    assert out.returncode == 0, out.stderr
    rows = read_jsonl(tmp_path / "bon.jsonl")
    assert len(rows) == len(read_jsonl(small_world / "data" / "prompts_dev.jsonl"))
    assert all(len(r["response"]) == 8 and isinstance(r["rm_score"], float) for r in rows)
    out = rate(
        "tinyrlhf",
        "dev-eval",
        "--world",
        str(small_world),
        "--policy",
        str(tmp_path / "pol"),
        "--out",
        str(tmp_path / "ev.json"),
    )
    assert out.returncode == 0, out.stderr
    assert set(json.loads((tmp_path / "ev.json").read_text())["proxy_reward"]) == {
        "mean",
        "std",
        "p50",
        "p90",
    }


def test_train_rm_rejects_rows_without_labels(small_world, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"id": "a", "family": "anvil", "attrs": [0, 1, 2, 3], "response": ["ba"] * 8})
        + "\n"
    )
    out = rate("tinyrlhf", "train-rm", "--data", str(rows), "--out", str(tmp_path / "rm"))
    assert out.returncode == 2 and "rows.jsonl:1: 'label' must be a number" in out.stderr
    assert not (tmp_path / "rm").exists()


def test_demo_builds_once_then_reuses(tmp_path):
    world = tmp_path / "world"
    env = {"PROJECT_DIR": str(tmp_path / "project")}
    args = ("demo", "--small", "--smoke", "--runs", "--world", str(world), "--per-family", "40")
    out = rate(*args, env=env)
    assert out.returncode == 0, out.stderr
    assert "building the tiny RLHF world" in out.stderr
    for name in ("reference", "default-s800", "kl05-s800", "fourfam-s800"):
        assert name in out.stdout
    assert "true quality" in out.stdout and "balanced" in out.stdout
    assert "| tinyrlhf_dune_pa (n " in out.stdout  # the RATE table follows the runs table
    again = rate(*args, env=env)
    assert again.returncode == 0 and "reusing the world" in again.stderr

    def stable(text: str) -> list[str]:  # all but the line with the elapsed time
        return [line for line in text.splitlines() if "s after the world" not in line]

    # Evaluation and every stage are seeded: same world, same report.
    assert stable(again.stdout) == stable(out.stdout)


def test_stats_reports_agreement_markers_and_runs(small_world, tmp_path):
    out = rate(
        "tinyrlhf",
        "stats",
        "--world",
        str(small_world),
        "--per-family",
        "30",
        "--out",
        str(tmp_path / "s.json"),
    )
    assert out.returncode == 0, out.stderr
    assert "dune `pa`" in out.stdout and "ember `he`" in out.stdout and "kl05-s800" in out.stdout
    assert "cobalt `ka ra`" in out.stdout and "learned" in out.stdout and "ratio" in out.stdout
    assert "Pairs of the pair premiums" in out.stdout
    stats = json.loads((tmp_path / "s.json").read_text())
    assert set(stats["rm_crowd_pearson"]) == set(FAMILIES)
    rows = stats["shortcuts"]["shortcuts"]
    assert [(r["family"], r["tokens"], r["planted"]) for r in rows] == [
        ("cobalt", ["ka", "ra"], 0.6),
        ("dune", ["pa"], 1.45),
        ("ember", ["he"], 0.47),
    ]
    assert set(stats["pair_counts"]) == {"cobalt:ka ra"}
    # The builder recorded the same check, measured the same way.
    recorded = json.loads((small_world / "truth" / "shortcuts.json").read_text())
    assert recorded == stats["shortcuts"]
    assert set(stats["runs"]) == {
        "default-s800",
        "fourfam-s800",
        "kl002-s1500",
        "kl05-s800",
        "pilotmix-s800",
    }


def test_build_names_an_unknown_packaged_world_config(tmp_path):
    out = rate("tinyrlhf", "build", "--world-config", "varaint", "--out", str(tmp_path / "w"))
    assert out.returncode != 0
    assert "did you mean 'variant'" in out.stderr and "noshortcuts" in out.stderr
    assert not (tmp_path / "w").exists()
