"""The four stages end to end, through the real `rate` command, on the small world."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rate.io import read_json
from rate.records import read_examples
from rate.store import parse_name
from tests.helpers import run_rate

REFERENCE_KEYS = [
    "naive_effect",
    "ATT_single_rewrite",
    "ATU_single_rewrite",
    "ATE_single_rewrite",
    "ATT_rewritten_rewrite",
    "ATU_rewritten_rewrite",
    "ATE_rewritten_rewrite",
]
SMOKE = "experiments/tinyworld/smoke.yaml"


def _only(folder: Path, pattern: str) -> Path:
    found = [p for p in folder.glob(pattern) if not p.name.endswith(".meta.json")]
    assert len(found) == 1, found
    return found[0]


@pytest.fixture(scope="module")
def stages(small_world: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """create_dataset, score_dataset (RM, then the oracle added to the scored file),
    treatment_effects and plot, run as a user would with the smoke config."""
    project = tmp_path_factory.mktemp("stages")
    world = {"RATE_WORLD": str(small_world)}
    out = {"project": project}
    out["create"] = run_rate(["create_dataset", "--config", SMOKE], project, **world)
    out["score_rm"] = run_rate(["score_dataset", "--config", SMOKE], project, **world)
    oracle = ["--set=scoring.model=tinyrlhf_oracle", "--set=scoring.dataset_folder=scored"]
    out["score_oracle"] = run_rate(["score_dataset", "--config", SMOKE, *oracle], project, **world)
    out["effects"] = run_rate(["treatment_effects", "--config", SMOKE], project, **world)
    out["plot"] = run_rate(["plots", "--config", SMOKE], project, **world)
    return out


def test_outputs_are_timestamped_and_traced(stages):
    project = stages["project"]
    dataset = _only(project / "data" / "rewrites", "*.json")
    stem, stamp, _, smoke = parse_name(dataset)
    assert (stem, smoke) == ("tinyrlhf_dune_pa_dataset", True)  # the reference's name
    assert re.fullmatch(r"\d{8}_\d{6}", stamp)
    assert dataset.name.endswith("_smoke_test.json")
    meta = read_json(dataset.with_name(dataset.name + ".meta.json"))
    assert meta["template"]["name"] == "tinyrlhf_dune_pa"
    assert meta["config"]["smoke_test"] is True
    assert meta["counts"]["w_1"] + meta["counts"]["w_0"] == 60
    assert meta["rewriter"]["style_map"] == {"ga": "ka", "je": "de", "fa": "ha"}
    for stage in ("create_dataset", "score_dataset", "treatment_effects", "plots"):
        logs = list((project / "logs").glob(f"{stage}_*_smoke_test.log"))
        assert logs and logs[0].read_text().strip(), stage


def test_dataset_is_the_reference_format_with_exactly_n_examples(stages, small_world):
    dataset = _only(stages["project"] / "data" / "rewrites", "*.json")
    data = json.loads(dataset.read_text())
    assert sorted(data, key=int) == [str(i) for i in range(60)]
    ws = {ex["w_original"] for ex in data.values()}
    assert ws == {True, False}
    for ex in data.values():
        c = ex["completions"]
        assert set(c) == {"original", "rewrite", "rewritten rewrite", "perfect rewrite"} | {
            "placebo rewrite"  # the template's placebo_prompt
        }
        orig, rw, rr, p = (
            c[k].split() for k in ("original", "rewrite", "rewritten rewrite", "placebo rewrite")
        )
        has_pa = "pa" in orig
        assert has_pa == ex["w_original"] and ("ba" in orig) != has_pa  # W as the rule says
        assert ("pa" in rw) == (not ex["w_original"]) and ("ba" in rw) == ex["w_original"]
        assert ("pa" in rr) == ex["w_original"]  # W back
        assert ("pa" in p) == (not ex["w_original"]) and ("ba" in p) == ex["w_original"]  # kept
        assert [t for t in p if t in ("pa", "ba")] == [t for t in rw if t in ("pa", "ba")]
        # The signature: no syllable the style map corrects survives a rewrite.
        assert not {"ga", "je", "fa"} & (set(rw) | set(rr) | set(p))
        assert ex["checks"]["placebo rewrite"] == "ok"  # W re-read: kept, unchanged or not
        assert ex["reward_question"].split()[0] == "dune"


def test_scored_file_holds_both_models_in_the_reference_layout(stages):
    scored = sorted(p for p in (stages["project"] / "data" / "scored").glob("*.jsonl"))
    assert len(scored) == 2  # the RM alone, then the RM and the oracle
    rows = read_examples(scored[-1])
    assert len(rows) == 60
    for row in rows:
        for key in ("tinyrlhf_rm", "true_quality"):
            assert set(row[key]) == {
                "original", "rewrite", "rewritten rewrite", "perfect rewrite", "placebo rewrite"
            }  # fmt: skip
        # True quality is a share of 8 positions.
        assert all(v * 8 == round(v * 8) for v in row["true_quality"].values())
    meta = read_json(scored[-1].with_name(scored[-1].name + ".meta.json"))
    assert meta["reward_keys"] == ["tinyrlhf_rm", "true_quality"]
    assert meta["texts_scored"] == 300


def test_effects_file_has_the_reference_keys_and_the_truth(stages):
    path = _only(stages["project"] / "effects", "*_treatment_effects_*_smoke_test.json")
    assert path.name.startswith("tinyrlhf_dune_pa_pa_tinyrlhf_rm_treatment_effects_")
    e = read_json(path)
    for key in REFERENCE_KEYS:
        assert isinstance(e[key], float) and isinstance(e[f"{key}_stderr"], float)
    assert e["Y1_count"] + e["Y0_count"] == 60
    assert e["reward_key"] == "tinyrlhf_rm" and e["concept"] == "pa"
    assert e["intervals"]["n_bootstrap"] == 200  # smoke.yaml
    lo, hi = e["intervals"]["bootstrap"]["ATE_rewritten_rewrite"]
    assert lo < e["ATE_rewritten_rewrite"] < hi
    assert set(e["truth"]) >= {"ATT", "ATU", "ATE"}
    assert e["normalized"]["ATE_rewritten_rewrite"] == pytest.approx(
        e["ATE_rewritten_rewrite"] / e["reward_std"]
    )
    # group_by: policy in the config.
    assert set(e["groups"]) <= {"policy", "runs/default-s800/checkpoint"}
    assert sum(g["Y1_count"] + g["Y0_count"] for g in e["groups"].values()) == 60
    # Recomputed from the scored file with the estimators directly.
    rows = read_examples(Path(e["input"]["file"]))
    w = [r["w_original"] for r in rows]
    s = [r["tinyrlhf_rm"] for r in rows]
    att = [x["rewritten rewrite"] - x["rewrite"] for x, wi in zip(s, w, strict=True) if wi]
    assert e["ATT_rewritten_rewrite"] == pytest.approx(sum(att) / len(att), rel=1e-12)
    # The placebo-corrected RATE: the rewrite of the rewrite against the placebo rewrite.
    atu = [x["placebo rewrite"] - x["rewritten rewrite"] for x, wi in zip(s, w, strict=True)
           if not wi]  # fmt: skip
    assert e["ATU_rewritten_rewrite_placebo"] == pytest.approx(sum(atu) / len(atu), rel=1e-12)
    for estimand in ("ATT", "ATU", "ATE"):
        key = f"{estimand}_rewritten_rewrite_placebo"
        assert e[f"{key}_stderr"] > 0 and key in e["error_in_se"]
        assert key in e["intervals"]["normal"] and key in e["intervals"]["bootstrap"]
    assert e["rewrite_checks"]["placebo rewrite"]["success_rate"] == 1.0


def test_a_scored_file_without_placebo_scores_lacks_only_the_placebo_estimator(
    stages, small_world, tmp_path
):
    """A file made without a placebo pass (or before it existed) is estimated as before: the
    same numbers, no placebo-corrected RATE in the effect file, the results table or the
    figures."""
    with_placebo = read_json(
        _only(stages["project"] / "effects", "*_tinyrlhf_rm_*_smoke_test.json")
    )
    source = Path(with_placebo["input"]["file"])
    rows = []
    for line in source.read_text().splitlines():
        row = json.loads(line)
        for part in (row["completions"], row["checks"], row["tinyrlhf_rm"], row["true_quality"]):
            part.pop("placebo rewrite")
        rows.append(json.dumps(row))
    (tmp_path / "data" / "scored").mkdir(parents=True)
    (tmp_path / "data" / "scored" / source.name).write_text("\n".join(rows) + "\n")
    run_rate(["treatment_effects", "--config", SMOKE], tmp_path, RATE_WORLD=str(small_world))
    path = _only(tmp_path / "effects", "*_treatment_effects_*_smoke_test.json")
    e = read_json(path)
    assert not [k for k in e if "placebo" in k] and not [k for k in e["truth"] if "placebo" in k]
    for key in REFERENCE_KEYS:
        assert e[key] == with_placebo[key] and e[f"{key}_stderr"] == with_placebo[f"{key}_stderr"]
    assert set(e["rewrite_checks"]) == {"rewrite", "rewritten rewrite"}
    table = json.loads(run_rate(["results", "--format", "json", str(path)], tmp_path).stdout)
    estimators = {r["estimator"] for r in table["rows"]}
    assert estimators == set(REFERENCE_KEYS)
    run_rate(["plots", "--config", SMOKE], tmp_path, RATE_WORLD=str(small_world))
    assert list((tmp_path / "plots").glob("*_smoke_test/rewrite_bias*.png"))


def test_plots_are_written(stages):
    folders = list((stages["project"] / "plots").glob("tinyrlhf_dune_pa_*_smoke_test"))
    assert len(folders) == 1
    names = {p.name for p in folders[0].iterdir()}
    assert {"effects_normalized.png", "score_distributions.png", "sample_rewrites.md"} <= names
    assert (folders[0] / "effects_normalized.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_latest_picks_the_newest_of_the_run_kind(stages, small_world):
    """A second create_dataset makes a newer file; scoring 'latest' must take it."""
    project = stages["project"]
    world = {"RATE_WORLD": str(small_world)}
    run_rate(["create_dataset", "--config", SMOKE, "--set=rewrites.seed=1"], project, **world)
    newest = sorted((project / "data" / "rewrites").glob("*_smoke_test.json"))[-1]
    out = run_rate(["score_dataset", "--config", SMOKE], project, **world)
    meta = read_json(Path(out.stdout.strip() + ".meta.json"))
    assert meta["input"] == str(newest)


def test_scoring_the_same_reward_key_twice_is_refused(stages, small_world):
    project = stages["project"]
    scored = sorted((project / "data" / "scored").glob("*.jsonl"))[-1]
    out = run_rate(
        [
            "score_dataset",
            "--config",
            SMOKE,
            "--set=scoring.dataset_folder=scored",
            f"--set=scoring.dataset_filename={scored.name}",
        ],
        project,
        check=False,
        RATE_WORLD=str(small_world),
    )
    assert out.returncode == 2
    assert "already has scores under reward_key 'tinyrlhf_rm'" in out.stderr


def test_missing_world_is_a_clear_error(tmp_path):
    out = run_rate(["create_dataset", "--config", SMOKE], tmp_path, check=False)
    assert out.returncode == 2
    assert "no tiny RLHF world at" in out.stderr and "make world-build" in out.stderr
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.json"))


def test_group_permissions_on_outputs(small_world, tmp_path):
    import grp

    group = grp.getgrgid(os.getgid()).gr_name
    run_rate(
        ["create_dataset", "--config", SMOKE],
        tmp_path,
        GROUP_NAME=group,
        RATE_WORLD=str(small_world),
    )
    dataset = _only(tmp_path / "data" / "rewrites", "*.json")
    st = dataset.stat()
    assert st.st_gid == os.getgid() and st.st_mode & 0o040  # group-readable


def _score_cmd(small_world: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rate.cli",
        "score_dataset",
        "--config",
        SMOKE,
        "--set=scoring.batch_size=1",
        "--set=scoring.chunk_size=1",
        "--set=scoring.model=tinyrlhf_rm",
    ]


def test_score_dataset_killed_resumes_to_the_same_file(small_world, tmp_path):
    """SIGKILL mid-run, rerun: the result equals an uninterrupted run's, row for row."""
    project = tmp_path / "p"
    run_rate(
        [
            "create_dataset",
            "--config",
            SMOKE,
            "--set=rewrites.smoke_n_examples=600",
        ],
        project,
        RATE_WORLD=str(small_world),
    )
    env = {**os.environ, "PROJECT_DIR": str(project), "RATE_PROGRESS": "0"}
    env["RATE_WORLD"] = str(small_world)
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(_score_cmd(small_world), env=env, cwd=root, stderr=subprocess.PIPE)
    partial_dir = project / "data" / "scored" / ".partial"
    deadline = time.time() + 120
    lines = 0
    while time.time() < deadline and proc.poll() is None:
        files = list(partial_dir.glob("*.jsonl")) if partial_dir.is_dir() else []
        if files:
            lines = files[0].read_bytes().count(b"\n")
            if lines > 50:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "scoring finished before it could be killed; make it slower"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not list((project / "data" / "scored").glob("*.jsonl"))  # nothing final yet
    resumed = run_rate(_score_cmd(small_world)[3:], project, RATE_WORLD=str(small_world))
    assert "resuming:" in resumed.stderr
    final = Path(resumed.stdout.strip())
    meta = read_json(final.with_name(final.name + ".meta.json"))
    assert meta["resumed_examples"] >= 50
    assert not list(partial_dir.glob("*.jsonl"))  # progress removed once done
    # An uninterrupted run of the same input.
    clean = run_rate(
        _score_cmd(small_world)[3:],
        tmp_path / "clean_copy",
        check=False,
        RATE_WORLD=str(small_world),
    )
    assert clean.returncode == 2  # no rewrites in that project: 'latest' finds nothing
    (tmp_path / "clean_copy" / "data").mkdir(parents=True, exist_ok=True)
    os.symlink(project / "data" / "rewrites", tmp_path / "clean_copy" / "data" / "rewrites")
    clean = run_rate(
        _score_cmd(small_world)[3:], tmp_path / "clean_copy", RATE_WORLD=str(small_world)
    )
    a = [json.loads(x) for x in final.read_text().splitlines()]
    b = [json.loads(x) for x in Path(clean.stdout.strip()).read_text().splitlines()]
    assert len(a) == len(b) == 600
    assert [r["index"] for r in a] == [str(i) for i in range(600)]
    assert a == b


def test_demo_prints_the_table_and_writes_every_stage(demo_smoke):
    text = (demo_smoke / "demo_stdout.txt").read_text()
    for template in ("tinyrlhf_dune_pa", "tinyrlhf_ember_he", "tinyrlhf_anvil_pa"):
        for scorer in ("reward model", "true quality"):
            rows = [
                line
                for line in text.splitlines()
                if line.startswith(f"| {template}") and f"| {scorer} |" in line
            ]
            assert len(rows) == 3, (template, scorer)  # ATE, ATT, ATU
        # The tiny rewriter swaps W's token: every rewrite reaches its target, in every pass
        # (the placebo pass keeps W).
        for name in ("rewrite", "rewritten rewrite", "placebo rewrite"):
            assert f"| {template} | {name} | 60/60 (100.0%) | 0 | 0 | 0 | 0 | 0 |" in text
    effects = list((demo_smoke / "effects").glob("*_smoke_test.json"))
    assert len(effects) == 6
    for path in effects:
        e = read_json(path)
        assert "truth" in e and e["smoke_test"] is True
        # The table shows the file's numbers.
        assert f"{e['ATE_rewritten_rewrite']:+.4f}" in text
    assert list((demo_smoke / "plots").glob("*_smoke_test/effects_normalized.png"))
