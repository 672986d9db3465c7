"""`rate sweep`: grid validation, the adjusted p-values, the offline grid end to end with a kill
and a rerun, and the SLURM submission (a fake sbatch; one cheap test on a real SLURM)."""

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

import rate.code_digest
from rate.errors import ConfigError
from rate.io import read_json
from rate.stats import benjamini_hochberg, holm
from rate.sweep.grid import Sweep
from rate.sweep.report import p_value, ranked
from tests.helpers import ROOT, run_rate
from tests.slurm.test_slurm import FAKE_SBATCH, _calls

SWEEPS = ROOT / "experiments" / "sweeps"
OFFLINE = SWEEPS / "offline.yaml"

# --- the adjusted p-values, by hand -------------------------------------------------------


def test_holm_and_benjamini_hochberg_against_hand_computed_values():
    p = [0.01, 0.04, 0.03, 0.005]
    # Sorted: 0.005, 0.01, 0.03, 0.04 (m = 4). Holm: 4 x 0.005 = 0.02, 3 x 0.01 = 0.03,
    # 2 x 0.03 = 0.06, 1 x 0.04 = 0.04 -> 0.06 (never below the one before).
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 0.005 x 4/1 = 0.02, 0.01 x 4/2 = 0.02, 0.03 x 4/3 = 0.04, 0.04 x 4/4 = 0.04, each the
    # least of itself and those above it.
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # Capped at 1; BH takes the minimum from the top: 0.9 x 2/2 = 0.9 < 0.5 x 2/1 = 1.
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert benjamini_hochberg([0.5, 0.9]) == pytest.approx([0.9, 0.9])


def test_p_value_and_ranking():
    assert p_value(1.959964, 1.0) == pytest.approx(0.05, abs=1e-6)
    assert p_value(0.0, 0.0) == 1.0 and p_value(0.3, 0.0) == 0.0 and p_value(None, 1.0) is None
    rows = [
        {"dataset": d, "p": p, "rate": r}
        for d, p, r in [("a", 0.04, 1.0), ("b", 0.005, 0.2), ("c", None, None), ("d", 0.01, 0.5)]
    ]
    out = ranked(rows)
    assert [r["dataset"] for r in out] == ["b", "d", "a", "c"]
    assert [r["rank"] for r in out] == [1, 2, 3, None]
    # Holm over the three tested: 3 x 0.005, 2 x 0.01, 1 x 0.04; BH: 0.015, 0.015, 0.04.
    assert [r["p_holm"] for r in out[:3]] == pytest.approx([0.015, 0.02, 0.04])
    assert [r["p_bh"] for r in out[:3]] == pytest.approx([0.015, 0.015, 0.04])
    assert out[3]["p_holm"] is None and out[3]["p_bh"] is None


# --- the grid file --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["offline", "tinyworld", "paper"])
def test_shipped_grids_validate_offline(name):
    sweep = Sweep(SWEEPS / f"{name}.yaml")
    assert len(sweep.cells) == len(sweep.grid.datasets) * len(sweep.grid.scorers)
    if name == "paper":
        assert set(sweep.grid.scorers) == {"armorm", "ncsoft", "sfairxc"}
        assert sweep.config(sweep.cells[0]).effects.group_by is None


def test_rate_validate_checks_the_shipped_grids(tmp_path):
    grids = [str(SWEEPS / f"{n}.yaml") for n in ("offline", "tinyworld", "paper")]
    out = run_rate(["validate", *(a for g in grids for a in ("--sweep", g))], tmp_path / "p")
    assert f"ok   sweep    {grids[2]} (27 cells)" in out.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\ndatasets: {imdb_length: {concept: length}}\nscorers: [armorn]\n")
    out = run_rate(["validate", "--sweep", str(bad)], tmp_path / "p", check=False)
    assert out.returncode == 2 and "did you mean 'armorm'?" in out.stderr


GOOD = {
    "name": "g",
    "datasets": {"drugreview_length": {"concept": "length"}},
    "scorers": ["vader"],
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"scorer": ["vader"]}, "unknown key 'scorer'; did you mean 'scorers'?"),
        (
            {"datasets": {"drugreview_lenght": {"concept": "length"}}},
            "'datasets': unknown dataset template 'drugreview_lenght'; did you mean "
            "'drugreview_length'?",
        ),
        ({"scorers": ["vadr"]}, "unknown scoring template 'vadr'; did you mean 'vader'?"),
        (
            {"datasets": {"drugreview_length": {}}},
            "missing required key 'datasets.drugreview_length.concept'",
        ),
        (
            {"datasets": {"drugreview_length": {"concept": "length", "efects": {}}}},
            "unknown key 'datasets.drugreview_length.efects'; did you mean "
            "'datasets.drugreview_length.effects'?",
        ),
        (
            {"set": {"effects.n_bootstap": 5}},
            "unknown key 'effects.n_bootstap'; did you mean 'effects.n_bootstrap'?",
        ),
        ({"set": {"scoring.model": "vader"}}, "key 'set.scoring.model' is set by the sweep"),
        ({"set": {"effects.level": 2}}, "key 'effects.level' must be > 0 and < 1"),
        ({"set": {"effects": {"level": 0.9}}}, "key 'set.effects' is a whole section"),
        ({"name": "../x"}, "key 'name' is '../x'"),
        ({"scorers": []}, "key 'scorers' is empty"),
        ({"scorers": ["vader", "vader"]}, "names vader twice"),
        ({"smoke": "yes"}, "key 'smoke': expected true or false"),
        # issue 45, item 5: smoke files written into the full sweep's folder, unsaid
        (
            {"set": {"smoke_test": True}},
            "key 'set.smoke_test': use the grid's own key 'smoke: true'",
        ),
        ({"base_config": "nowhere.yaml"}, "nowhere.yaml: no such base config"),
    ],
)
def test_bad_grid_is_one_line_naming_the_file_and_key(tmp_path, change, message):
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({**GOOD, **change}))
    with pytest.raises(ConfigError) as err:
        Sweep(path)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(tmp_path) in str(err.value)


def test_bad_grid_through_the_command(tmp_path):
    path = tmp_path / "grid.yaml"
    path.write_text("name: g\ndatasets: [\n")
    out = run_rate(["sweep", str(path)], tmp_path / "p", check=False, PARTITION="")
    assert out.returncode == 2
    assert out.stderr.startswith(f"rate: error: {path}:") and "not valid YAML" in out.stderr
    path.write_text(yaml.safe_dump(GOOD))
    out = run_rate(
        ["sweep", str(path), "--step", "score:drugreview_length:vader"], tmp_path / "p", check=False
    )
    assert out.returncode == 2
    assert "reads the output of rewrite:drugreview_length, which has not finished" in out.stderr
    out = run_rate(
        ["sweep", str(path), "--step", "scor:drugreview_length:vader"], tmp_path / "p", check=False
    )
    assert "did you mean 'score:drugreview_length:vader'?" in out.stderr


# --- the offline grid end to end, killed and rerun ------------------------------------------


def _snapshot(folder: Path) -> dict[Path, tuple[int, bytes]]:
    """Every marker and every file a marker names: (mtime_ns, contents)."""
    out = {}
    for marker in (folder / "steps").rglob("*.json"):
        for path in [marker, *map(Path, read_json(marker)["outputs"])]:
            out[path] = (path.stat().st_mtime_ns, path.read_bytes())
    return out


def _status(stdout: str) -> dict[str, str]:
    """{step: ran, skipped, failed or blocked} from the lines a local sweep prints."""
    return {m[2]: m[1] for m in re.finditer(r"^(ran|skipped|failed|blocked) +(\S+)$", stdout, re.M)}


def test_offline_grid_killed_midway_and_rerun_redoes_nothing_finished(tmp_path):
    project = tmp_path / "p"
    state = project / "sweeps" / "offline_smoke_test"
    first_cell = state / "steps" / "effects" / "drugreview_sentiment" / "minilm_sentiment.json"
    env = {**os.environ, "PROJECT_DIR": str(project), "RATE_PROGRESS": "0", "PARTITION": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rate.cli", "sweep", str(OFFLINE), "--smoke"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not first_cell.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first_cell.exists(), "the first cell did not finish"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (state / "report").exists()  # killed before the end
    before = _snapshot(state)
    finished = {read_json(m)["step"] for m in (state / "steps").rglob("*.json")}
    assert {
        "rewrite:drugreview_sentiment",
        "score:drugreview_sentiment:minilm_sentiment",
    } <= finished

    out = run_rate(["sweep", str(OFFLINE), "--smoke"], project, PARTITION="")
    # Nothing that had finished was redone: its marker and outputs are as they were.
    after = _snapshot(state)
    for path, seen in before.items():
        assert after[path] == seen, path
    log = max((project / "logs").glob("sweep_offline_*.log"), key=os.path.getmtime).read_text()
    for step in finished:
        assert f"step {step} done already" in log and f"step {step}: running" not in log
    status = _status(out.stdout)
    assert all(status[s] == "skipped" for s in finished)
    assert status["report"] == "ran"
    assert len(list((project / "data" / "rewrites").glob("*_smoke_test.json"))) == 2

    # The report is complete: the four cells, ranked, with the figure.
    report = state / "report"
    cells = read_json(report / "ranked.json")["cells"]
    assert sorted((c["dataset"], c["scorer"]) for c in cells) == sorted(
        (d, s)
        for d in ("drugreview_sentiment", "drugreview_length")
        for s in ("minilm_sentiment", "vader")
    )
    assert [c["rank"] for c in cells] == [1, 2, 3, 4]
    ps = [c["p"] for c in cells]
    assert ps == sorted(ps)
    assert [c["p_holm"] for c in cells] == pytest.approx(
        [min(1, max((4 - j) * ps[j] for j in range(i + 1))) for i in range(4)]
    )
    sentiment = next(
        c for c in cells if (c["dataset"], c["scorer"]) == ("drugreview_sentiment", "vader")
    )
    effects = read_json(sentiment["effects_file"])
    assert sentiment["rate_raw"] == effects["ATE_rewritten_rewrite"]
    assert sentiment["rate"] == pytest.approx(
        effects["ATE_rewritten_rewrite"] / effects["reward_std"]
    )
    assert (report / "headline.png").stat().st_size > 10_000
    assert (report / "ranked.csv").read_text().count("\n") == 5
    assert "| 1 | " in (report / "ranked.md").read_text()

    # A third run does nothing at all, the report included.
    report_files = _snapshot(state)
    out = run_rate(["sweep", str(OFFLINE), "--smoke"], project, PARTITION="")
    assert set(_status(out.stdout).values()) == {"skipped"} and len(_status(out.stdout)) == 11
    assert _snapshot(state) == report_files

    # With SLURM: every step done, nothing submitted; a lost effect file resubmits only its
    # step (no dependency: its scoring is done) and the report after it.
    fake = _fake_slurm(tmp_path)
    out = run_rate(["sweep", str(OFFLINE), "--smoke"], project, **fake)
    assert "every step is done" in out.stdout and not (Path(fake["FAKE_SLURM"]) / "calls").exists()
    Path(read_json(first_cell)["outputs"][0]).unlink()
    plan = run_rate(["sweep", str(OFFLINE), "--smoke", "--plan"], project).stdout
    assert "to run  effects:drugreview_sentiment:minilm_sentiment  (its output" in plan
    assert "to run  report  (its inputs changed)" in plan
    assert "2 of 11 step(s) to run" in plan
    run_rate(["sweep", str(OFFLINE), "--smoke"], project, **fake)
    (effects_id, e_opts, e_text), (_, r_opts, r_text) = _calls(fake)
    assert "--step effects:drugreview_sentiment:minilm_sentiment" in e_text
    assert e_opts == "--parsable"
    assert "--step report" in r_text and f"afterok:{effects_id} " in r_opts + " "


def test_a_failed_step_blocks_only_what_reads_it(tmp_path):
    # The tiny world's reward model needs a world that is not there; VADER needs nothing.
    grid = {**GOOD, "scorers": ["vader", "tinyrlhf_rm"], "smoke": True}
    grid["set"] = {"effects.n_bootstrap": 0}
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    no_world = str(tmp_path / "no_world")
    out = run_rate(
        ["sweep", str(path)], tmp_path / "p", check=False, PARTITION="", RATE_WORLD=no_world
    )
    assert out.returncode == 2
    assert _status(out.stdout) == {
        "rewrite:drugreview_length": "ran",
        "score:drugreview_length:vader": "ran",
        "effects:drugreview_length:vader": "ran",
        "score:drugreview_length:tinyrlhf_rm": "failed",
        "effects:drugreview_length:tinyrlhf_rm": "blocked",
        "report": "ran",
    }
    assert (
        "1 step(s) failed" in out.stderr and "score:drugreview_length:tinyrlhf_rm: " in out.stderr
    )
    report = read_json(tmp_path / "p" / "sweeps" / "g_smoke_test" / "report" / "ranked.json")
    assert [c["scorer"] for c in report["cells"]] == ["vader"]
    assert report["missing"] == ["drugreview_length x tinyrlhf_rm"]


# --- SLURM ----------------------------------------------------------------------------------


def _fake_slurm(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "fake_slurm"
    folder.mkdir(exist_ok=True)
    (folder / "sbatch").write_text(FAKE_SBATCH)
    (folder / "sbatch").chmod(0o755)
    return {"PATH": f"{folder}:{os.environ['PATH']}", "FAKE_SLURM": str(folder), "PARTITION": "gpu"}


def test_submission_chains_each_cell_and_the_report_after_all(tmp_path):
    fake = _fake_slurm(tmp_path)
    out = run_rate(["sweep", str(OFFLINE), "--smoke"], tmp_path / "p", **fake)
    calls = _calls(fake)
    steps = [re.search(r"--step (\S+)", text)[1] for _, _, text in calls]
    assert steps[0] == "rewrite:drugreview_sentiment" and steps[-1] == "report" and len(steps) == 11
    ids = dict(zip(steps, (c[0] for c in calls), strict=True))
    deps = {
        step: re.findall(r"afterok:([\d:]+)", opts)[0].split(":") if "afterok" in opts else []
        for step, (_, opts, _) in zip(steps, calls, strict=True)
    }
    for d in ("drugreview_sentiment", "drugreview_length"):
        assert deps[f"rewrite:{d}"] == []
        for s in ("minilm_sentiment", "vader"):
            assert deps[f"score:{d}:{s}"] == [ids[f"rewrite:{d}"]]
            assert deps[f"effects:{d}:{s}"] == [ids[f"score:{d}:{s}"]]
    assert sorted(deps["report"]) == sorted(ids[s] for s in steps if s.startswith("effects:"))
    texts = dict(zip(steps, (c[2] for c in calls), strict=True))
    # Scoring asks for the GPU; the others do not. Every job reads the submission's copies.
    assert "#SBATCH --gres=gpu:1" in texts["score:drugreview_length:vader"]
    assert "--gres" not in texts["rewrite:drugreview_length"] + texts["report"]
    folder = next((tmp_path / "p" / "slurm").glob("sweep_offline_*"))
    assert f"sweep {folder / 'grid.yaml'} --step" in texts["report"]
    assert f"--config {folder / 'config.yaml'}" in texts["report"]
    assert yaml.safe_load((folder / "grid.yaml").read_text())["smoke"] is True
    assert len(read_json(folder / "jobs.json")) == 11
    assert (folder / "score__drugreview_length__vader.sbatch").is_file()
    assert "report: job" in out.stdout


@pytest.fixture
def partition() -> str:
    if not os.environ.get("RATE_TEST_SLURM"):
        pytest.skip("RATE_TEST_SLURM is not set (start a SLURM with `sudo .ci/slurm-up`)")
    return os.environ.get("RATE_TEST_PARTITION") or os.environ.get("PARTITION") or "debug"


@pytest.mark.slurm
def test_one_cell_sweep_on_slurm(partition, tmp_path):
    small = {"cpus": 1, "mem": "1G", "time": "00:20:00"}
    stages = ("create_dataset", "score_dataset", "treatment_effects", "plots")
    grid = {
        **GOOD,
        "smoke": True,
        "set": {f"slurm.{s}.{k}": v for s in stages for k, v in small.items()},
    }
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    project = tmp_path / "p"
    out = run_rate(["sweep", str(path), "--wait", "--poll", "1"], project, PARTITION=partition)
    assert "all jobs completed" in out.stdout
    cells = read_json(project / "sweeps" / "g_smoke_test" / "report" / "ranked.json")["cells"]
    assert [(c["dataset"], c["scorer"]) for c in cells] == [("drugreview_length", "vader")]
    out = run_rate(["sweep", str(path)], project, PARTITION=partition)
    assert "every step is done" in out.stdout


def test_a_step_is_redone_when_its_template_or_its_world_changes_in_place(tmp_path, monkeypatch):
    """Issue 45, item 4: ``rate sweep`` reused every step after the world it names was rebuilt
    in place, and after a template it reads was edited ("0 of 4 step(s) to run")."""
    from rate.store import Layout
    from rate.sweep.steps import State

    world = tmp_path / "world"
    (world / "reward_model").mkdir(parents=True)
    (world / "reward_model" / "rm.safetensors").write_bytes(b"first build")
    templates = tmp_path / "templates" / "dataset_templates"
    templates.mkdir(parents=True)
    source = (
        ROOT / "src" / "tinyworld" / "templates" / "dataset_templates" / "tinyrlhf_dune_pa.yaml"
    )
    (templates / source.name).write_text(source.read_text())
    monkeypatch.setenv("RATE_WORLD", str(world))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path / "templates"))
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "p"))
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({
        "name": "g", "datasets": {"tinyrlhf_dune_pa": {"concept": "dune_pa"}},
        "scorers": ["tinyrlhf_rm"], "smoke": True,
    }))  # fmt: skip
    state = State(Sweep(grid), Layout.from_env())
    rewrite, score = (
        state.steps["rewrite:tinyrlhf_dune_pa"],
        state.steps["score:tinyrlhf_dune_pa:tinyrlhf_rm"],
    )
    out = tmp_path / "made.json"
    out.write_text("{}")
    for step in state.steps.values():  # all done, as a finished run leaves them
        path = state.marker_path(step)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "step": step.id, "inputs": state.inputs(step), "outputs": [str(out)],
            "config": state.fingerprint(step), "made_from": state.made_from(step),
        }))  # fmt: skip
    assert all(state.why_not_done(step) is None for step in state.steps.values())

    # An edit of rate's code redoes the steps that cost only time (effects, the report), never
    # a rewrite (paid) or a scoring (GPU hours).
    with monkeypatch.context() as m:
        m.setattr(rate.code_digest, "code_digest", lambda *modules: "edited")
        redo = {s.kind: state.why_not_done(s) for s in state.steps.values()}
    assert redo["effects"] == "what it is made from changed: code"
    assert redo["report"] is not None  # of the effects to be redone (and its own code)
    assert redo["rewrite"] is None and redo["score"] is None

    (world / "reward_model" / "rm.safetensors").write_bytes(b"a rebuild")  # rebuilt in place
    assert state.why_not_done(score) == "what it is made from changed: scorer.world"
    assert "source.world" in state.why_not_done(rewrite)
    (templates / source.name).write_text(source.read_text() + "n_examples: 7\n")
    assert "templates" in state.why_not_done(rewrite)


def test_a_full_disk_in_a_step_names_the_step_and_the_file(tmp_path, monkeypatch):
    """Issue 45: a full disk in a sweep named neither the file nor the step (a raw OSError
    ended the whole sweep)."""
    import errno

    from rate.store import Layout
    from rate.sweep.steps import State, run_sweep

    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "p"))
    state = State(Sweep(OFFLINE), Layout.from_env())
    full = tmp_path / "p" / "data" / "rewrites" / "x.json"

    def no_space(step):
        raise OSError(errno.ENOSPC, "No space left on device", str(full))

    monkeypatch.setattr(State, "run_if_needed", lambda self, step: no_space(step))
    out = run_sweep(state)
    first = next(iter(state.steps))
    assert out.status[first] == "failed"
    assert f"cannot write {full}: No space left on device" in out.errors[first]
    assert all(s in ("failed", "blocked") for s in out.status.values())
