"""SLURM: resources, scripts, dependencies, sharded scoring, and the make targets on a real SLURM.

The unit tests need no SLURM (a fake sbatch records what would be submitted). Tests marked
``slurm`` submit real jobs: they run when RATE_TEST_SLURM=1 (CI starts a single-node SLURM with
.ci/slurm-up) and are skipped otherwise, so `make test` passes on a laptop.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rate.catalog import load_config
from rate.errors import ConfigError, RateError, SlurmError
from rate.io import read_json
from rate.slurm.jobs import (
    TaskState,
    dependency_arg,
    describe_task,
    log_excerpt,
    parse_sacct,
    parse_scontrol,
    require,
)
from rate.slurm.resources import Resources, partition_for, resources_for
from rate.slurm.script import JobScript, render
from rate.store import Layout
from tests.helpers import ROOT, run_rate

SMOKE = ROOT / "experiments" / "tinyworld" / "smoke.yaml"
# Small jobs for a small node: every stage asks for one CPU and little memory.
SMALL = {"cpus": 1, "mem": "1G", "time": "00:20:00"}


# The world each written config's runs read (RATE_WORLD; the config names no world).
WORLDS: dict[Path, Path] = {}


def world_of(config: Path) -> dict[str, str]:
    """The environment that points a config's runs at its world."""
    return {"RATE_WORLD": str(WORLDS[Path(config)])}


def write_config(path: Path, world: Path, shards: int = 1, **scoring) -> Path:
    """smoke.yaml with chunks of 16 (60 examples: 4 chunks) and small jobs; its runs read
    ``world`` (:func:`world_of`)."""
    data = yaml.safe_load(SMOKE.read_text())
    WORLDS[path] = world
    data["scoring"]["chunk_size"] = 16
    data["scoring"].update(scoring)
    data["slurm"] = {
        "shards": shards,
        **{s: dict(SMALL) for s in ("create_dataset", "score_dataset", "merge_scores")},
        **{s: dict(SMALL) for s in ("treatment_effects", "plots")},
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def only(folder: Path, pattern: str) -> Path:
    found = [p for p in folder.glob(pattern) if not p.name.endswith(".meta.json")]
    assert len(found) == 1, found
    return found[0]


# --- resources and config -------------------------------------------------------------------


def test_defaults_give_scoring_one_gpu_and_config_keys_override(tmp_path):
    config = load_config(SMOKE)
    score = resources_for(config.slurm, "score_dataset")
    assert score.gpus == 1 and score.cpus >= 1
    assert all(resources_for(config.slurm, s).gpus == 0 for s in ("create_dataset", "plots"))
    config = load_config(
        SMOKE,
        [
            "slurm.score_dataset.gpus=2",
            "slurm.score_dataset.mem=80G",
            "slurm.extra_args=[--account=lab]",
            "slurm.score_dataset.extra_args=[--constraint=a100]",
        ],
    )
    r = resources_for(config.slurm, "score_dataset")
    assert (r.gpus, r.mem, r.time) == (2, "80G", "12:00:00")  # time stays the default
    assert r.extra_args == ("--account=lab", "--constraint=a100")
    assert resources_for(config.slurm, "create_dataset").extra_args == ("--account=lab",)


def test_the_documented_defaults_are_the_defaults():
    from rate.slurm.resources import STAGE_DEFAULTS

    documented = load_config(ROOT / "experiments" / "config.yaml").slurm
    for stage, default in STAGE_DEFAULTS.items():
        assert resources_for(documented, stage) == default, stage
        assert resources_for(load_config(SMOKE).slurm, stage) == default, stage


@pytest.mark.parametrize(
    "override, message",
    [
        ("slurm.score_dataset.time=12:00:00", "quote it"),  # YAML reads it as 43200
        ("slurm.score_dataset.time=12h", "is not a SLURM time"),
        ("slurm.score_dataset.mem=16GB", "is not a SLURM memory size"),
        ("slurm.score_dataset.gpus=-1", "key 'slurm.score_dataset.gpus' must be >= 0 and <= 64"),
        ("slurm.shards=0", "key 'slurm.shards' must be >= 1 and <= 10000"),
        ("slurm.extra_args=[account=lab]", "is not an sbatch option"),
        ("slurm.plots.extra_args=[--output=x.log]", "--output is set by rate itself"),
        ("slurm.scoring_dataset.gpus=1", "did you mean 'slurm.score_dataset'?"),
        ("slurm.score_dataset.gpu=1", "did you mean 'slurm.score_dataset.gpus'?"),
    ],
)
def test_bad_slurm_config_is_one_clear_message(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(SMOKE, [override])


def test_partition_comes_from_config_then_environment(monkeypatch):
    config = load_config(SMOKE)
    monkeypatch.setenv("PARTITION", "gpu")
    assert partition_for(config.slurm) == "gpu"
    assert partition_for(load_config(SMOKE, ["slurm.partition=a100"]).slurm) == "a100"
    monkeypatch.delenv("PARTITION")
    with pytest.raises(SlurmError, match="set PARTITION in .env or on the command line"):
        partition_for(config.slurm)


# --- scripts and dependencies ---------------------------------------------------------------


def _job(**kw) -> JobScript:
    base = dict(
        stage="score_dataset",
        rate_args=["score_dataset", "--config", "/p/slurm/x/config.yaml"],
        resources=Resources(time="12:00:00", cpus=8, mem="64G", gpus=1, extra_args=("--qos=hi",)),
        partition="gpu",
        logs=Path("/p/logs"),
        workdir=Path("/repo dir"),
        project_dir=Path("/p"),
        python="/venv/bin/python",
    )
    return JobScript(**{**base, **kw})


def test_script_asks_for_the_resources_and_names_the_log_by_job_id():
    text = render(_job())
    sbatch = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert sbatch == [
        "#SBATCH --job-name=rate-score_dataset",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=12:00:00",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --mem=64G",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --output=/p/logs/score_dataset_%j.out",
        "#SBATCH --qos=hi",
    ]
    assert "cd '/repo dir'" in text and "export PROJECT_DIR=/p" in text
    assert "/venv/bin/python -m rate.cli score_dataset --config /p/slurm/x/config.yaml" in text
    # The log ends with the job's exit status, for when SLURM has forgotten the job.
    assert 'ended with exit status $status"' in text and text.rstrip().endswith("exit $status")


def test_array_script_shards_by_task_id_and_logs_per_task():
    text = render(
        _job(
            array="1,3",
            raw_tail='--shard "${SLURM_ARRAY_TASK_ID}/4"',
            resources=Resources("1", 1, "1G"),
        )
    )
    assert "#SBATCH --array=1,3" in text
    assert "#SBATCH --output=/p/logs/score_dataset_%A_%a.out" in text
    assert "--gres" not in text  # no GPU asked for
    assert text.count('--shard "${SLURM_ARRAY_TASK_ID}/4"') == 1


def test_dependency_arguments():
    assert dependency_arg([("afterok", ["12"])]) == "afterok:12"
    assert dependency_arg([("afterok", ["12", "13"]), ("afterany", ["14"])]) == (
        "afterok:12:13,afterany:14"
    )
    assert dependency_arg([("afterok", [])]) is None


def test_job_states_are_parsed_from_scontrol_and_sacct():
    scontrol = (
        "JobId=7 ArrayJobId=7 ArrayTaskId=1 JobName=rate-score_dataset JobState=FAILED "
        "Reason=NonZeroExitCode Dependency=(null) ExitCode=2:0 RunTime=00:00:03\n"
        "JobId=8 ArrayJobId=7 ArrayTaskId=0 JobName=x JobState=COMPLETED Reason=None ExitCode=0:0\n"
        "JobId=9 ArrayJobId=7 ArrayTaskId=2-3 JobState=PENDING Reason=Resources ExitCode=0:0\n"
        "JobId=10 JobName=rate-merge_scores JobState=PENDING Reason=Dependency ExitCode=0:0\n"
    )
    states = parse_scontrol(scontrol)
    assert [(s.job_id, s.state, s.exit_code) for s in states] == [
        ("7_1", "FAILED", "2:0"),
        ("7_0", "COMPLETED", "0:0"),
        ("7_[2-3]", "PENDING", "0:0"),
        ("10", "PENDING", "0:0"),
    ]
    assert [s.done for s in states] == [True, True, False, False]
    sacct = "12|CANCELLED by 0|0:15|None\n13_1|TIMEOUT|0:0|TimeLimit\n"
    assert [(s.job_id, s.state) for s in parse_sacct(sacct)] == [
        ("12", "CANCELLED"),
        ("13_1", "TIMEOUT"),
    ]


def test_failure_description_names_job_log_and_the_error(tmp_path):
    log = tmp_path / "create_dataset_41.out"
    log.write_text(
        "rate: job 41 (create_dataset) on vm\n"
        "2026 INFO rate: starting\n"
        "rate: error: no tiny RLHF world at /x; build it with `make world-build`\n"
        "rate: job 41 ended with exit status 2\n"
    )
    text = describe_task(TaskState("41", "FAILED", "2:0"), "create_dataset", "41", tmp_path)
    assert text.startswith(f"create_dataset: job 41 FAILED (exit code 2); log: {log}")
    assert "| rate: error: no tiny RLHF world at /x" in text
    assert "ended with exit status" not in log_excerpt(log)
    # Forgotten by SLURM (no accounting): the log's status line says how it ended.
    assert "ended with exit status 2" in describe_task(None, "create_dataset", "41", tmp_path)
    gone = describe_task(None, "plots", "42", tmp_path)
    assert "without a status line" in gone and "no log at" in gone
    dep = TaskState("43", "CANCELLED", "0:0", "DependencyNeverSatisfied")
    assert "did not run: a job it depends on failed" in describe_task(dep, "plots", "43", tmp_path)


def test_no_sbatch_on_path_while_partition_is_set(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SlurmError, match=r"`sbatch` is not on PATH.*unset PARTITION"):
        require("sbatch", "gpu")
    out = run_rate(
        ["submit", "create_dataset", "--config", str(SMOKE)],
        tmp_path / "p",
        check=False,
        PARTITION="gpu",
        PATH=str(tmp_path),
    )
    assert out.returncode == 2
    assert "partition 'gpu'" in out.stderr and "`sbatch` is not on PATH" in out.stderr
    assert "Nothing was submitted" in out.stderr
    assert not (tmp_path / "p" / "slurm").exists()  # nothing written before the check


# --- submission with a fake sbatch ----------------------------------------------------------

FAKE_SBATCH = """#!/bin/bash
# Records its arguments and the script, answers like `sbatch --parsable`.
n=$(( $(cat "$FAKE_SLURM/count" 2>/dev/null || echo 100) + 1 ))
echo "$n" > "$FAKE_SLURM/count"
script="${@: -1}"
echo "$n ${*:1:$#-1}" >> "$FAKE_SLURM/calls"
cp "$script" "$FAKE_SLURM/script_$n"
if grep -q -- '--partition=nope' "$script"; then
    echo "sbatch: error: invalid partition specified: nope" >&2
    echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
    exit 1
fi
echo "$n"
"""


@pytest.fixture
def fake_slurm(tmp_path: Path) -> dict[str, str]:
    """A bin folder with a fake sbatch (and sinfo) first on PATH; -> env for run_rate."""
    folder = tmp_path / "fake_slurm"
    folder.mkdir()
    (folder / "sbatch").write_text(FAKE_SBATCH)
    (folder / "sinfo").write_text("#!/bin/bash\nprintf 'debug\\ngpu\\n'\n")
    for tool in ("sbatch", "sinfo"):
        (folder / tool).chmod(0o755)
    return {
        "PATH": f"{folder}:{os.environ['PATH']}",
        "FAKE_SLURM": str(folder),
        "PARTITION": "gpu",
    }


def _calls(env: dict[str, str]) -> list[tuple[str, str, str]]:
    """(job id, sbatch options, script text) of each fake submission."""
    folder = Path(env["FAKE_SLURM"])
    out = []
    for line in (folder / "calls").read_text().splitlines():
        job_id, _, options = line.partition(" ")
        out.append((job_id, options, (folder / f"script_{job_id}").read_text()))
    return out


def test_pipeline_chains_the_stages_with_afterok_and_merges_after_the_array(tmp_path, fake_slurm):
    config = write_config(tmp_path / "c.yaml", tmp_path / "no_world_needed", shards=2)
    out = run_rate(
        ["pipeline", "--config", str(config)], tmp_path / "p", **fake_slurm, **world_of(config)
    )
    calls = _calls(fake_slurm)
    stages = [re.search(r"--job-name=rate-(\w+)", c[2])[1] for c in calls]
    assert stages == ["create_dataset", "score_dataset", "merge_scores", "treatment_effects"]
    (create, _, _), (array, a_opts, a_text), (merge, m_opts, m_text), (_, e_opts, _) = calls
    assert calls[0][1] == "--parsable"
    assert a_opts == f"--parsable --dependency=afterok:{create} --kill-on-invalid-dep=yes"
    assert "#SBATCH --array=0,1" in a_text and "#SBATCH --gres=gpu:1" in a_text
    assert '--shard "${SLURM_ARRAY_TASK_ID}/2"' in a_text
    # The merge runs after any end of the shards (to say which failed), but only after create.
    assert (
        m_opts
        == f"--parsable --dependency=afterok:{create},afterany:{array} --kill-on-invalid-dep=yes"
    )
    assert f"merge_scores --shards 2 --array-job {array}" in m_text and "--gres" not in m_text
    assert e_opts.endswith(f"--dependency=afterok:{merge} --kill-on-invalid-dep=yes")
    # One folder with the resolved config that every job reads, the scripts and the job ids.
    folder = only(tmp_path / "p" / "slurm", "pipeline_*")
    assert load_config(folder / "config.yaml").slurm.shards == 2
    assert all(f"--config {folder / 'config.yaml'}" in c[2] for c in calls)
    jobs = read_json(folder / "jobs.json")
    assert [j["job_id"] for j in jobs] == [c[0] for c in calls]
    assert jobs[1]["logs"] == [
        str(tmp_path / "p" / "logs" / f"score_dataset_{array}_{i}.out") for i in (0, 1)
    ]
    assert f"score_dataset: array job {array}, shards 0,1 of 2" in out.stdout


def test_unknown_partition_lists_the_partitions(tmp_path, fake_slurm):
    out = run_rate(
        ["submit", "treatment_effects", "--config", str(SMOKE)],
        tmp_path / "p",
        check=False,
        **{**fake_slurm, "PARTITION": "nope"},
    )
    assert out.returncode == 2
    assert "SLURM has no partition 'nope'" in out.stderr
    assert "SLURM's partitions: debug, gpu" in out.stderr
    assert "Nothing was submitted; the job script is" in out.stderr


def test_submitting_scoring_alone_needs_its_input_now(tmp_path, fake_slurm):
    out = run_rate(
        ["submit", "score_dataset", "--config", str(SMOKE)],
        tmp_path / "p",
        check=False,
        **fake_slurm,
    )
    assert out.returncode == 2 and "run the previous stage first" in out.stderr
    assert not (Path(fake_slurm["FAKE_SLURM"]) / "calls").exists()


# --- sharded scoring ------------------------------------------------------------------------


def test_shard_ranges_are_whole_chunks_that_cover_every_row_once():
    from rate.score.shards import shard_range

    for n_rows, chunk, n in [(60, 16, 2), (60, 16, 3), (1000, 7, 8), (5, 16, 3), (64, 16, 4)]:
        ranges = [shard_range(n_rows, chunk, i, n) for i in range(n)]
        assert ranges[0][0] == 0 and ranges[-1][1] == n_rows
        for (_, stop), (start, _) in zip(ranges, ranges[1:], strict=False):
            assert stop == start  # contiguous
        for start, _ in ranges:
            assert start % chunk == 0 or start == n_rows  # starts on a chunk boundary
    assert [shard_range(60, 16, i, 2) for i in range(2)] == [(0, 32), (32, 60)]
    assert [shard_range(5, 16, i, 3) for i in range(3)] == [(0, 0), (0, 0), (0, 5)]


def test_parse_shard():
    from rate.score.shards import parse_shard

    assert parse_shard("2/4") == (2, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(ConfigError, match="--shard"):
            parse_shard(bad)


@pytest.fixture(scope="module")
def local_project(small_world: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The smoke stages run here: a rewrites file and its unsharded scored file."""
    root = tmp_path_factory.mktemp("local")
    config = write_config(root / "config.yaml", small_world)
    project = root / "p"
    run_rate(["create_dataset", "--config", str(config)], project, **world_of(config))
    scored = Path(
        run_rate(
            ["score_dataset", "--config", str(config)], project, **world_of(config)
        ).stdout.strip()
    )
    effects = Path(
        run_rate(
            ["treatment_effects", "--config", str(config)], project, **world_of(config)
        ).stdout.strip()
    )
    return {"config": config, "project": project, "scored": scored, "effects": effects}


def _copy_rewrites(local: dict, project: Path) -> None:
    shutil.copytree(local["project"] / "data" / "rewrites", project / "data" / "rewrites")


def test_shards_merge_into_the_unsharded_file_byte_for_byte(local_project, tmp_path):
    project = tmp_path / "p"
    _copy_rewrites(local_project, project)
    args = ["--config", str(local_project["config"])]
    for i in (1, 0):  # any order
        run_rate(
            ["score_dataset", *args, "--shard", f"{i}/2"],
            project,
            **world_of(local_project["config"]),
        )
    merged = Path(
        run_rate(
            ["merge_scores", *args, "--shards", "2"], project, **world_of(local_project["config"])
        ).stdout.strip()
    )
    assert merged.read_bytes() == local_project["scored"].read_bytes()
    meta = read_json(merged.with_name(merged.name + ".meta.json"))
    assert meta["n_examples"] == 60 and meta["texts_scored"] == 300  # placebo too
    assert [s["shard"] for s in meta["shards"]] == [0, 1]
    assert not any((project / "data" / "scored" / ".shards").iterdir())  # removed once merged


def _shard_folder(config: Path, project: Path, n: int) -> Path:
    from rate.score.shards import shard_folder, shard_key
    from rate.score.stage import scoring_input

    cfg, layout = load_config(config), Layout(project)
    inp = scoring_input(cfg, layout)
    return shard_folder(layout, inp, shard_key(cfg, inp, n))


def test_merge_names_the_missing_shard_its_job_and_log(local_project, tmp_path):
    project = tmp_path / "p"
    _copy_rewrites(local_project, project)
    args = ["--config", str(local_project["config"])]
    run_rate(
        ["score_dataset", *args, "--shard", "0/2"], project, **world_of(local_project["config"])
    )
    (project / "logs").mkdir(exist_ok=True)
    (project / "logs" / "score_dataset_77_1.out").write_text(
        "rate: job 77_1 (score_dataset) on vm\nrate: error: out of GPU memory\n"
        "rate: job 77_1 ended with exit status 2\n"
    )
    out = run_rate(
        ["merge_scores", *args, "--shards", "2", "--array-job", "77"],
        project,
        check=False,
        PATH=str(tmp_path),  # no scontrol or sacct: the log says how the shard ended
        **world_of(local_project["config"]),
    )
    assert out.returncode == 2
    assert "1 of 2 shard(s) have no scores" in out.stderr
    assert "shard 1/2 (examples 32-59): job 77_1 ended with exit status 2" in out.stderr
    assert str(project / "logs" / "score_dataset_77_1.out") in out.stderr
    assert "| rate: error: out of GPU memory" in out.stderr
    assert "resubmits only the missing shards" in out.stderr
    assert not list((project / "data" / "scored").glob("*.jsonl"))


def test_merge_refuses_inconsistent_shards(local_project, tmp_path):
    from rate.score.shards import merge_shards

    project = tmp_path / "p"
    _copy_rewrites(local_project, project)
    config = local_project["config"]
    for i in (0, 1):
        run_rate(
            ["score_dataset", "--config", str(config), "--shard", f"{i}/2"],
            project,
            **world_of(local_project["config"]),
        )
    folder = _shard_folder(config, project, 2)
    meta_file = folder / "shard_001_of_002.jsonl.meta.json"
    meta = read_json(meta_file)
    meta_file.write_text(json.dumps({**meta, "scorer": {"backend": "another"}}))
    cfg, layout = load_config(config), Layout(project)
    with pytest.raises(RateError, match="scored by different scorers"):
        merge_shards(cfg, layout, 2)
    meta_file.write_text(json.dumps({**meta, "rows": [30, 60]}))
    with pytest.raises(RateError, match=r"does not hold examples 32-59"):
        merge_shards(cfg, layout, 2)


def test_resubmission_sends_only_the_missing_shards(local_project, tmp_path, fake_slurm):
    project = tmp_path / "p"
    _copy_rewrites(local_project, project)
    config = write_config(tmp_path / "c.yaml", WORLDS[local_project["config"]], 3)
    run_rate(
        ["score_dataset", "--config", str(config), "--shard", "1/3"], project, **world_of(config)
    )
    out = run_rate(
        ["submit", "score_dataset", "--config", str(config)],
        project,
        **fake_slurm,
        **world_of(config),
    )
    (array, a_opts, a_text), (_, m_opts, m_text) = _calls(fake_slurm)
    assert "#SBATCH --array=0,2" in a_text and '--shard "${SLURM_ARRAY_TASK_ID}/3"' in a_text
    assert a_opts == "--parsable" and m_opts.endswith(
        f"--dependency=afterany:{array} --kill-on-invalid-dep=yes"
    )
    # The jobs read the file that 'latest' named at submission, whatever comes later.
    folder = only(project / "slurm", "score_dataset_*")
    pinned = load_config(folder / "config.yaml").scoring.dataset_filename
    assert pinned == str(only(project / "data" / "rewrites", "*.json"))
    assert "shards 0,2 of 3" in out.stdout


# --- a real SLURM ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def partition() -> str:
    """The partition of a running SLURM; the slurm tests are skipped without RATE_TEST_SLURM."""
    if not os.environ.get("RATE_TEST_SLURM"):
        pytest.skip("RATE_TEST_SLURM is not set (start a SLURM with `sudo .ci/slurm-up`)")
    missing = [t for t in ("sbatch", "squeue", "scontrol", "sinfo") if not shutil.which(t)]
    if missing:
        pytest.fail(f"RATE_TEST_SLURM is set but {missing} are not on PATH")
    return os.environ.get("RATE_TEST_PARTITION") or os.environ.get("PARTITION") or "debug"


def make(targets: list[str], project: Path, **variables: str) -> subprocess.CompletedProcess:
    """Run the Makefile's targets with this interpreter's venv, never reinstalling it."""
    venv = Path(sys.prefix)
    argv = ["make", "--no-print-directory", "-o", str(venv / ".installed"), f"VENV={venv}"]
    argv += [*targets, *(f"{k}={v}" for k, v in variables.items())]
    env = {**os.environ, "PROJECT_DIR": str(project), "RATE_PROGRESS": "0", "RATE_SLURM_POLL": "1"}
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def _check(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert out.returncode == 0, f"make failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
    return out


def _effects(path: Path) -> dict:
    e = read_json(path)
    for key in ("input", "dataset_filename"):  # name files, which differ between projects
        e.pop(key, None)
    return e


def _assert_same_outputs(project: Path, local: dict) -> None:
    rewrites = only(project / "data" / "rewrites", "*.json")
    local_rewrites = only(local["project"] / "data" / "rewrites", "*.json")
    assert json.loads(rewrites.read_text()) == json.loads(local_rewrites.read_text())
    scored = only(project / "data" / "scored", "*.jsonl")
    assert scored.read_bytes() == local["scored"].read_bytes()
    assert _effects(only(project / "effects", "*.json")) == _effects(local["effects"])


@pytest.mark.slurm
def test_make_pipeline_on_slurm_with_two_shards_equals_the_local_run(
    partition, local_project, small_world, tmp_path
):
    config = write_config(tmp_path / "c.yaml", small_world, shards=2)
    project = tmp_path / "p"
    out = _check(
        make(
            ["pipeline"],
            project,
            CONFIG=str(config),
            PARTITION=partition,
            WAIT=1,
            **world_of(config),
        )
    )
    _assert_same_outputs(project, local_project)
    text = out.stdout
    array = re.search(r"score_dataset: array job (\d+), shards 0,1 of 2", text)[1]
    logs = project / "logs"
    for stage in ("create_dataset", "merge_scores", "treatment_effects"):
        job = re.search(rf"^{stage}: job (\d+), log (\S+)$", text, re.M)
        assert job and Path(job[2]) == logs / f"{stage}_{job[1]}.out"
        assert "ended with exit status 0" in Path(job[2]).read_text()
    for i in (0, 1):  # each shard on its own GPU, in its own log
        log = (logs / f"score_dataset_{array}_{i}.out").read_text()
        assert f"shard {i}/2" in log and "ended with exit status 0" in log
    script = (only(project / "slurm", "pipeline_*") / "score_dataset.sbatch").read_text()
    assert "#SBATCH --gres=gpu:1" in script and f"#SBATCH --partition={partition}" in script
    assert "all jobs completed" in text


@pytest.mark.slurm
def test_make_stage_targets_on_slurm_run_in_turn(partition, local_project, small_world, tmp_path):
    config = write_config(tmp_path / "c.yaml", small_world)
    project = tmp_path / "p"
    stages = ["create_dataset", "score_dataset", "treatment_effects"]
    out = _check(make(stages, project, CONFIG=str(config), PARTITION=partition, **world_of(config)))
    _assert_same_outputs(project, local_project)
    assert len(re.findall(r"^\w+: job \d+, log ", out.stdout, re.M)) == 3
    assert out.stdout.count("all jobs completed") == 3  # each target waited for its job


@pytest.mark.slurm
def test_failed_shard_stops_the_merge_and_a_rerun_resubmits_only_it(
    partition, local_project, small_world, tmp_path
):
    project = tmp_path / "p"
    _copy_rewrites(local_project, project)
    config = write_config(tmp_path / "c.yaml", small_world, shards=2)
    # A folder where shard 1's file goes makes that shard's job fail, and only that one: with
    # exit status 2, rate's for an error it explains (a write it cannot make, naming the file).
    blocker = _shard_folder(config, project, 2) / "shard_001_of_002.jsonl"
    blocker.mkdir(parents=True)
    out = make(
        ["score_dataset"],
        project,
        CONFIG=str(config),
        PARTITION=partition,
        WAIT=1,
        **world_of(config),
    )
    assert out.returncode != 0
    array = re.search(r"array job (\d+), shards 0,1 of 2", out.stdout)[1]
    merge = re.search(r"merge_scores: job (\d+)", out.stdout)[1]
    logs = project / "logs"
    err = out.stderr
    assert (
        f"score_dataset: job {array}_1 FAILED (exit code 2); log: {logs}/score_dataset_{array}_1.out"
        in err
    )
    assert (
        f"merge_scores: job {merge} FAILED (exit code 2); log: {logs}/merge_scores_{merge}.out"
        in err
    )
    assert f"shard 1/2 (examples 32-59): job {array}_1 FAILED" in err  # the merge's own message
    # Shard 0 succeeded, so no message names its job. Digits on either side are another
    # number: the data file's timestamp holds "1207_0" on December 7th when the job is 207.
    assert not re.search(rf"(?<!\d){array}_0(?!\d)", err)
    assert not list((project / "data" / "scored").glob("*.jsonl"))

    blocker.rmdir()
    out = _check(
        make(
            ["score_dataset"],
            project,
            CONFIG=str(config),
            PARTITION=partition,
            WAIT=1,
            **world_of(config),
        )
    )
    assert re.search(r"array job \d+, shards 1 of 2", out.stdout)  # shard 0 is not redone
    assert (
        only(project / "data" / "scored", "*.jsonl").read_bytes()
        == local_project["scored"].read_bytes()
    )


@pytest.mark.slurm
def test_failing_job_reports_its_id_and_log(partition, tmp_path):
    config = write_config(tmp_path / "c.yaml", tmp_path / "no_world_here")
    project = tmp_path / "p"
    out = make(
        ["create_dataset"],
        project,
        CONFIG=str(config),
        PARTITION=partition,
        WAIT=1,
        **world_of(config),
    )
    assert out.returncode != 0
    job = re.search(r"create_dataset: job (\d+), log (\S+)", out.stdout)
    log = project / "logs" / f"create_dataset_{job[1]}.out"
    assert Path(job[2]) == log and log.is_file()
    assert f"create_dataset: job {job[1]} FAILED (exit code 2); log: {log}" in out.stderr
    assert f"| rate: error: no tiny RLHF world at {tmp_path / 'no_world_here'}" in out.stderr
    assert "ended with exit status 2" in log.read_text()


@pytest.mark.slurm
def test_partition_that_does_not_exist(partition, tmp_path):
    out = make(
        ["treatment_effects"], tmp_path / "p", CONFIG=str(SMOKE), PARTITION="no_such_partition"
    )
    assert out.returncode != 0
    assert "SLURM has no partition 'no_such_partition'" in out.stderr
    assert "SLURM's partitions: " in out.stderr and partition in out.stderr
    assert not (tmp_path / "p" / "logs").exists() or not list((tmp_path / "p" / "logs").iterdir())


def test_benchmark_section_replaces_only_itself(tmp_path):
    from benchmarks.slurm import HEADING, write_section

    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\n## Other (issue: x)\n\nkept\n")
    write_section(path, f"{HEADING}\n\nfirst\n")
    write_section(path, f"{HEADING}\n\nsecond\n")
    assert (
        path.read_text() == f"# Benchmarks\n\n## Other (issue: x)\n\nkept\n\n{HEADING}\n\nsecond\n"
    )
