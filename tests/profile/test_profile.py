"""`rate profile`: the VADER profile of a small JSONL end to end, killed midway and rerun
(nothing finished redone), rerun with the data changed (the rewrites redone), the rows and
their adjusted p-values by hand; and bad inputs stopped before any work with one line."""

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
import yaml

from rate.attributes import write_attribute_template
from rate.errors import ConfigError
from rate.io import read_json
from rate.sweep.grid import Sweep
from tests.helpers import ROOT, run_rate
from tests.slurm.test_slurm import _calls
from tests.sweep.test_sweep import _fake_slurm

ATTRIBUTES = ["exclamation", "hedging", "emoji", "length"]
PROMPTS = ["How do I boil an egg?", "Why is the sky blue?", "How do I learn Python?"]
ANSWERS = [
    "Put the egg in boiling water for nine minutes.",
    "Sunlight scatters off the air, and blue scatters most.",
    "Start with small programs and read other people's code.",
    "I think you should try it once and see!",
    "This is probably the easiest way to do it.",
    "Wow, that is a great plan!",
    "It might be worth asking a friend who knows.",
    "Honestly, I love this question!",
]


def _data(path: Path, n: int = 32, extra: str = "") -> Path:
    """``n`` (prompt, response) lines; some exclaim, some hedge, none has an emoji."""
    lines = [
        json.dumps({"prompt": PROMPTS[i % 3], "response": ANSWERS[i % 8] + extra}) for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _args(data: Path, out: Path) -> list[str]:
    return ["profile", "--scorer", "vader", "--data", str(data), "--attributes",
            ",".join(ATTRIBUTES), "--smoke", "--out", str(out)]  # fmt: skip


def _status(stdout: str) -> dict[str, str]:
    return {m[2]: m[1] for m in re.finditer(r"^(ran|skipped|failed|blocked) +(\S+)$", stdout, re.M)}


def _markers(project: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (project / "sweeps").rglob("steps/**/*.json")}


def test_profile_killed_midway_rerun_and_changed_data(tmp_path):
    project, out = tmp_path / "p", tmp_path / "D"
    data = _data(tmp_path / "answers.jsonl")
    env = {**os.environ, "PROJECT_DIR": str(project), "RATE_PROGRESS": "0", "PARTITION": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rate.cli", *_args(data, out)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    first = []
    while not first and proc.poll() is None and time.monotonic() < deadline:
        first = list((project / "sweeps").glob("*/steps/effects/*/vader.json"))
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert first, "the first attribute did not finish"
    before = _markers(project)
    done = {read_json(m)["step"] for m in before}
    assert len(done) < 3 * len(ATTRIBUTES) + 1 and not (out / "profile.json").exists()

    ran = run_rate(_args(data, out), project)
    status = _status(ran.stdout)
    assert len(status) == 3 * len(ATTRIBUTES) + 1
    assert done and all(status[s] == "skipped" for s in done)
    assert all(status[s] == "ran" for s in status if s not in done)
    assert all(_markers(project)[m] == t for m, t in before.items())  # not rewritten

    # The four files, one set, a row per attribute.
    profile = read_json(out / "profile.json")
    assert set(profile["file_set"]) == {"profile.md", "profile.csv", "profile.png"}
    assert profile["written_by"] == "rate profile"
    assert (out / "profile.png").stat().st_size > 10_000
    rows = {r["attribute"]: r for r in profile["attributes"]}
    assert sorted(rows) == sorted(ATTRIBUTES)
    # No original has an emoji: the ATU alone, the ATE not identified (null, not a number).
    emoji = rows["emoji"]
    assert (emoji["n_w1"], emoji["n_w0"], emoji["estimand"]) == (0, 32, "ATU")
    assert emoji["ate_identified"] is False
    assert emoji["ATE_rewritten_rewrite"] is None and emoji["naive_effect"] is None
    assert emoji["rewrite_success"] == emoji["rewritten_rewrite_success"] == 1.0
    # 3 of every 8 answers exclaim: both W values, the ATE.
    excl = rows["exclamation"]
    assert (excl["n_w1"], excl["n_w0"], excl["estimand"]) == (12, 20, "ATE")
    assert excl["ate_identified"] is True and excl["naive_effect"] is not None
    effects = read_json(excl["effects_file"])
    assert excl["ATE_rewritten_rewrite"] == effects["ATE_rewritten_rewrite"]
    assert excl["rate_norm"] == pytest.approx(
        effects["ATE_rewritten_rewrite"] / effects["reward_std"]
    )
    # Sorted by RATE's normalised effect; Holm and BH by hand on the rows' p-values.
    norms = [r["rate_norm"] for r in profile["attributes"]]
    assert norms == sorted(norms, reverse=True)
    by_p = sorted(profile["attributes"], key=lambda r: r["p"])
    ps, m = [r["p"] for r in by_p], len(by_p)
    holm = [min(1.0, max((m - j) * ps[j] for j in range(i + 1))) for i in range(m)]
    bh = [min(1.0, min(ps[j] * m / (j + 1) for j in range(i, m))) for i in range(m)]
    assert [r["p_holm"] for r in by_p] == pytest.approx(holm)
    assert [r["p_bh"] for r in by_p] == pytest.approx(bh)
    assert [r["bh_survives"] for r in by_p] == [b <= 0.05 for b in bh]
    # The markdown: at most 8 columns; the CSV: the same rows.
    table = [ln for ln in (out / "profile.md").read_text().splitlines() if ln.startswith("|")]
    assert len(table) == 2 + m and all(ln.count("|") - 1 <= 8 for ln in table)
    csv_lines = (out / "profile.csv").read_text().splitlines()
    assert [ln.split(",")[0] for ln in csv_lines[1:]] == [
        r["attribute"] for r in profile["attributes"]
    ]

    # A rerun redoes nothing; the same data file changed redoes every step.
    again = run_rate(_args(data, out), project)
    assert set(_status(again.stdout).values()) == {"skipped"}
    _data(data, extra=" Thanks.")
    changed = _status(run_rate(_args(data, out), project).stdout)
    assert all(changed[f"rewrite:{d}"] == "ran" for d in
               (s.split(":")[1] for s in changed if s.startswith("rewrite:")))  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--data", "{tmp}/missing.jsonl"], r"--data .*missing\.jsonl: no such file"),
        (["--data", "{tmp}/bad.jsonl"], r"bad\.jsonl:2: field 'response' is missing"),
        (["--attributes", "emoji,exclamaton"], r"--attributes: unknown attribute 'exclamaton'"),
        (["--attributes", "typos"], r"--attributes: typos has no offline rules"),
    ],
)
def test_bad_input_stops_before_any_work_with_one_line(tmp_path, change, message):
    _data(tmp_path / "answers.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"prompt": "a", "response": "b"}\n{"prompt": "c"}\n')
    args = _args(tmp_path / "answers.jsonl", tmp_path / "D")
    flag = args.index(change[0])
    args[flag + 1] = change[1].format(tmp=tmp_path)
    out = run_rate(args, tmp_path / "p", check=False)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and re.search(message, out.stderr)
    assert not (tmp_path / "D").exists() and not (tmp_path / "p" / "sweeps").exists()


def test_a_named_attribute_with_weak_rules_is_rewritten_by_them_and_all_leaves_it_out(
    tmp_path, caplog
):
    from rate.catalog import load_dataset_template_file
    from rate.profile.plan import Inputs, choose_attributes, data_source, write_plan

    everything, left_out = choose_attributes("all", "rules")
    assert "sentiment" in left_out and "sentiment" not in [a.name for a in everything]
    with caplog.at_level("WARNING"):
        chosen, _ = choose_attributes("sentiment,emoji", "rules")
    assert [a.name for a in chosen] == ["sentiment", "emoji"]
    assert "sentiment's offline rules reach its other W in under 90%" in caplog.text
    source, n = data_source(_data(tmp_path / "answers.jsonl"), "prompt", "response")
    grid = write_plan(Inputs(source, n, "answers", "vader", chosen, {}), tmp_path / "D", True)
    templates = [load_dataset_template_file(p) for p in (grid.parent / "templates").rglob("*.yaml")]
    rewriters = {Path(t.includes[-1]).stem: t.rewriter for t in templates}
    assert rewriters == {
        "sentiment": {"backend": "rules_en", "attribute": "sentiment"},  # not the file's LLM
        "emoji": {"backend": "rules_en", "attribute": "emoji"},
    }


def test_a_grid_may_name_a_folder_of_its_own_templates(tmp_path, monkeypatch):
    """The profile's grid finds its generated templates through its ``templates:`` key; a
    SLURM job's copy of the grid names the folder by its absolute path."""
    monkeypatch.setenv("RATE_TEMPLATE_PATH", "")  # restored after: Sweep sets it
    data = _data(tmp_path / "answers.jsonl")
    source = {"kind": "jsonl", "path": str(data), "text_field": "response"}
    source["prompt_field"] = "prompt"
    folder = tmp_path / "g" / "templates" / "dataset_templates"
    write_attribute_template("emoji", source, 8, folder, "emoji_mine", {"one_sided_w": True})
    grid = tmp_path / "g" / "grid.yaml"
    spec = {"name": "mine", "templates": "templates", "scorers": ["vader"]}
    grid.write_text(yaml.safe_dump({**spec, "datasets": {"emoji_mine": {"concept": "emoji"}}}))
    sweep = Sweep(grid)
    assert [c.dataset for c in sweep.cells] == ["emoji_mine"]
    assert sweep.grid_record()["templates"] == str((tmp_path / "g" / "templates").resolve())
    grid.write_text(yaml.safe_dump({**spec, "templates": "nowhere", "datasets": {}}))
    with pytest.raises(ConfigError, match=r"grid\.yaml: key 'templates': no such folder"):
        Sweep(grid)


def test_a_model_folder_gets_a_scoring_template_and_a_hub_id_offline_fails_at_once(tmp_path):
    data, model = _data(tmp_path / "answers.jsonl"), tmp_path / "my_rm"
    model.mkdir()
    args = ["profile", "--model", str(model), "--data", str(data), "--attributes", "emoji"]
    plan = run_rate([*args, "--smoke", "--plan", "--out", str(tmp_path / "D")], tmp_path / "p")
    assert "4 of 4 step(s) to run" in plan.stdout  # rewrite, score, effects, report
    (written,) = (tmp_path / "D" / "work" / "templates" / "scoring_templates").glob("*.yaml")
    template = yaml.safe_load(written.read_text())
    assert template["backend"] == "hf_classifier" and template["model"] == str(model.resolve())
    args[2] = "org/reward-model"
    out = run_rate([*args, "--out", str(tmp_path / "E")], tmp_path / "p", False, HF_HUB_OFFLINE="1")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "cannot load 'org/reward-model'" in out.stderr and "HF_HUB_OFFLINE=1" in out.stderr
    assert not (tmp_path / "E").exists()


def test_on_slurm_each_step_is_a_job_that_finds_the_generated_templates(tmp_path):
    """With PARTITION set the profile submits its sweep's steps; a job's copy of the grid names
    the generated templates by absolute path, so the step runs from anywhere."""
    fake = _fake_slurm(tmp_path)
    data, out, project = _data(tmp_path / "answers.jsonl"), tmp_path / "D", tmp_path / "p"
    args = ["profile", "--scorer", "vader", "--data", str(data), "--attributes", "emoji"]
    first = run_rate([*args, "--smoke", "--out", str(out)], project, **fake)
    assert "rerun this command once the jobs finish" in first.stdout
    steps = [re.search(r"--step (\S+)", text)[1] for _, _, text in _calls(fake)]
    assert [s.split(":")[0] for s in steps] == ["rewrite", "score", "effects", "report"]
    (copy,) = (project / "slurm").glob("sweep_profile_D_*/grid.yaml")
    assert yaml.safe_load(copy.read_text())["templates"] == str(out.resolve() / "work/templates")
    run_rate(["sweep", str(copy), "--step", steps[0]], project, PARTITION="")  # the first job
    (Path(fake["FAKE_SLURM"]) / "calls").unlink()
    run_rate([*args, "--smoke", "--out", str(out)], project, **fake)
    assert [re.search(r"--step (\S+)", t)[1] for _, _, t in _calls(fake)] == steps[1:]
    assert not (out / "profile.json").exists()  # written once the jobs are done
