"""Scenarios of the failure matrix that start real `rate` processes: kills and reruns, runs
started together, a full disk (a tmpfs, as root)."""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.faults.harness import (
    FIXED_STAMP,
    STAGES,
    Project,
    content,
    kill_after,
    problems,
    run_together,
)
from tests.faults.scenarios import passed, scenario

SAME = {"RATE_TEST_FIXED_STAMP": FIXED_STAMP}
CANARY = "canary-matrix-9c2f-credential"


@functools.cache
def reference() -> dict:
    """Every stage once, without a fault: the project before each stage, each output, times."""
    where = Path(tempfile.mkdtemp(prefix="rate-matrix-ref-"))
    project = Project.make(where / "ref", n=120)
    states, outputs, seconds, data = {}, {}, {}, {}
    for stage in STAGES:
        states[stage] = where / f"before_{stage}"
        shutil.copytree(project.root, states[stage], symlinks=True)
        start = time.monotonic()
        done = project.run(stage, **SAME)
        seconds[stage] = time.monotonic() - start
        assert done.returncode == 0, done.stderr
        (out,) = project.outputs(stage)
        outputs[stage] = content(out, project)
        data[stage] = (
            out.stat().st_size
            if out.is_file()
            else sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        )
    return {
        "project": project,
        "states": states,
        "outputs": outputs,
        "seconds": seconds,
        "data": data,
    }


def copy_before(stage: str, tmp: Path) -> Project:
    ref = reference()
    shutil.copytree(ref["states"][stage], tmp / "project", symlinks=True)
    return Project(tmp / "project", ref["project"].templates, ref["project"].n)


def rerun_equals(project: Project, stage: str) -> tuple[bool, str]:
    rerun = project.run(stage, **SAME)
    if rerun.returncode:
        return False, rerun.stderr.strip().splitlines()[-1]
    outs = project.outputs(stage)
    same = bool(outs) and all(content(o, project) == reference()["outputs"][stage] for o in outs)
    return same, f"{len(outs)} output(s), equal to a clean run's: {same}"


# -- kills ---------------------------------------------------------------------------------------

for stage in STAGES:
    for trial in range(3):

        @scenario(
            "kills",
            f"SIGKILL {stage} at a random point ({trial + 1}/3)",
            "nothing false left; the rerun equals a clean run",
        )
        def _(tmp, stage=stage, trial=trial):
            project = copy_before(stage, tmp)
            at = (
                random.Random(f"matrix:{stage}:{trial}").uniform(0.05, 1.0)
                * reference()["seconds"][stage]
            )
            killed = kill_after(project.start(stage, **SAME), at)
            bad = problems(project)
            if bad:
                return "data-loss", f"after a kill at {at:.2f} s: {bad[0]}"
            same, observed = rerun_equals(project, stage)
            return passed(
                same,
                f"{'killed' if killed else 'ended before the kill'} at {at:.2f} s; {observed}",
                "data-loss",
            )


@scenario(
    "kills", "SIGKILL score_dataset after some chunks", "the rerun resumes and equals a clean run"
)
def _(tmp):
    project = copy_before("score_dataset", tmp)
    proc = project.start("score_dataset", "--set", "scoring.chunk_size=1", **SAME)
    partial = project.root / "data" / "scored" / ".partial"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        files = list(partial.glob("*.jsonl")) if partial.is_dir() else []
        if files and files[0].read_bytes().count(b"\n") > 20:
            break
        time.sleep(0.005)
    killed = kill_after(proc, 0)
    rerun = project.run("score_dataset", "--set", "scoring.chunk_size=1", **SAME)
    resumed = "resuming" in rerun.stderr
    outs = project.outputs("score_dataset")
    same = len(outs) == 1 and content(outs[0], project) == reference()["outputs"]["score_dataset"]
    return passed(
        killed and resumed and same and not problems(project),
        f"killed {killed}, resumed {resumed}, equal {same}",
        "data-loss",
    )


@scenario(
    "kills",
    "SIGKILL plot while it fills its folder",
    "no visible plots folder; the rerun makes a complete one",
)
def _(tmp):
    project = copy_before("plot", tmp)
    proc = project.start("plot", **SAME)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        building = (
            [p for p in (project.root / "plots").glob(".*.tmp")]
            if (project.root / "plots").is_dir()
            else []
        )
        if building and any(building[0].iterdir()):
            break
        time.sleep(0.005)
    killed = kill_after(proc, 0)
    visible = project.outputs("plot")
    same, observed = rerun_equals(project, "plot")
    return passed(
        killed and not visible and same,
        f"killed {killed}, visible folders {len(visible)}; {observed}",
        "data-loss",
    )


# -- concurrency ---------------------------------------------------------------------------------


@functools.cache
def scored_project() -> Project:
    project = Project.make(Path(tempfile.mkdtemp(prefix="rate-matrix-conc-")), n=40)
    for stage in ("create_dataset", "score_dataset"):
        assert project.run(stage).returncode == 0
    return project


def _records_match(paths: list[Path]) -> bool:
    for p in paths:
        record = json.loads(p.with_name(p.name + ".meta.json").read_text())
        if record.get("file") != p.name:
            return False
    return True


@scenario(
    "concurrency",
    "4 treatment_effects in one second (levels differ)",
    "4 outputs, each record matching its data",
)
def _(tmp):
    project = scored_project()
    before = set(project.outputs("treatment_effects"))
    levels = [0.8, 0.9, 0.95, 0.99]
    done = run_together(
        project, [("treatment_effects", ["--set", f"effects.level={x}"]) for x in levels], **SAME
    )
    new = sorted(set(project.outputs("treatment_effects")) - before)
    got = sorted(json.loads(p.read_text())["intervals"]["level"] for p in new)
    ok = all(d.returncode == 0 for d in done) and got == levels and _records_match(new)
    for p in new:
        record = json.loads(p.with_name(p.name + ".meta.json").read_text())
        ok &= (
            record["config"]["effects"]["level"] == json.loads(p.read_text())["intervals"]["level"]
        )
    return passed(ok, f"{len(new)} outputs with levels {got}", "data-loss")


@scenario(
    "concurrency", "3 create_dataset in one second (sizes differ)", "3 outputs, each complete"
)
def _(tmp):
    project = Project.make(tmp, n=12)
    done = run_together(
        project,
        [("create_dataset", ["--set", f"rewrites.smoke_n_examples={n}"]) for n in (4, 6, 8)],
        **SAME,
    )
    outs = project.outputs("create_dataset")
    sizes = sorted(len(json.loads(p.read_text())) for p in outs)
    ok = all(d.returncode == 0 for d in done) and sizes == [4, 6, 8] and not problems(project)
    return passed(ok, f"{len(outs)} outputs of sizes {sizes}", "data-loss")


@scenario(
    "concurrency",
    "3 score_dataset of different inputs in one second",
    "3 scored files, each of its input",
)
def _(tmp):
    project = Project.make(tmp, n=12)
    for n in (4, 6, 8):
        project.run("create_dataset", "--set", f"rewrites.smoke_n_examples={n}")
    inputs = project.outputs("create_dataset")
    done = run_together(
        project,
        [("score_dataset", ["--set", f"scoring.dataset_filename={p.name}"]) for p in inputs],
        **SAME,
    )
    outs = project.outputs("score_dataset")
    sizes = sorted(len(p.read_text().splitlines()) for p in outs)
    ok = all(d.returncode == 0 for d in done) and sizes == [4, 6, 8] and not problems(project)
    return passed(ok, f"{len(outs)} scored files of sizes {sizes}", "data-loss")


@scenario("concurrency", "2 plot in one second", "2 complete folders")
def _(tmp):
    project = scored_project()
    if not project.outputs("treatment_effects"):
        project.run("treatment_effects")
    before = set(project.outputs("plot"))
    done = run_together(project, [("plot", []), ("plot", [])], **SAME)
    new = set(project.outputs("plot")) - before
    ok = all(d.returncode == 0 for d in done) and len(new) == 2 and not problems(project)
    return passed(ok, f"{len(new)} new folders", "data-loss")


@scenario("concurrency", "2 runs in one second log to 2 files", "a log each, not one interleaved")
def _(tmp):
    project = scored_project()
    logs = project.root / "logs"
    before = set(logs.glob("treatment_effects_*"))
    run_together(project, [("treatment_effects", []), ("treatment_effects", [])], **SAME)
    new = set(logs.glob("treatment_effects_*")) - before
    return passed(len(new) == 2, f"{len(new)} new log files", "defect")


@scenario(
    "concurrency",
    "a second score_dataset of the same input",
    "refused at once naming the first; one scored file",
)
def _(tmp):
    project = Project.make(tmp, n=1000)
    project.run("create_dataset")
    first = project.start("score_dataset", "--set", "scoring.chunk_size=1")
    partial = project.root / "data" / "scored" / ".partial"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and first.poll() is None:
        files = list(partial.glob("*.jsonl")) if partial.is_dir() else []
        if files and files[0].read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.005)
    if first.poll() is not None:
        return "skipped", "the first scoring ended before it could be paused"
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = project.run("score_dataset", "--set", "scoring.chunk_size=1")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    first.communicate(timeout=600)
    last = second.stderr.strip().splitlines()[-1]
    ok = (
        second.returncode == 2
        and f"pid {first.pid}" in last
        and len(project.outputs("score_dataset")) == 1
    )
    return passed(ok, last[13:160], "data-loss")


# -- a full disk ---------------------------------------------------------------------------------


def _fill(folder: Path, leave: int) -> None:
    st = os.statvfs(folder)
    todo = max(0, st.f_bavail * st.f_frsize - leave)
    with open(folder / "ballast", "wb", buffering=0) as f:
        while todo > 0:
            try:
                written = f.write(b"\0" * min(todo, 1 << 16))
            except OSError:
                break
            if not written:
                break
            todo -= written


for stage in STAGES:
    for free in (0, 48 * 1024, None):

        @scenario(
            "disk",
            f"disk full before {stage} "
            + (f"({free // 1024} KB free)" if free is not None else "(room for the data alone)"),
            "one line naming the file; nothing half-written; a rerun with space writes one output",
        )
        def _(tmp, stage=stage, free=free):
            if free is None:  # the data file fits, its record does not (main: a data file
                free = reference()["data"][stage] + 2048  # without a record, taken by latest)
            if os.geteuid() != 0:
                return "skipped", "mounting a tmpfs needs root"
            mount = tmp / "fs"
            mount.mkdir()
            if subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True
            ).returncode:
                return "skipped", "cannot mount a tmpfs here"
            try:
                project = copy_before(stage, mount)
                _fill(mount, free)
                done = project.run(stage, **SAME)
                (mount / "ballast").unlink()
                spam = "Traceback" in done.stderr or "Logging error" in done.stderr
                if done.returncode == 0:
                    return passed(
                        not problems(project) and not spam, "it fitted; whole", "data-loss"
                    )
                last = done.stderr.strip().splitlines()[-1]
                if (
                    spam
                    or not last.startswith(f"rate: error: cannot write {project.root}")
                    or "No space left" not in last
                ):
                    return "unclear", last[:160]
                if problems(project) or project.outputs(stage):
                    return "data-loss", f"left {problems(project) or project.outputs(stage)}"
                same, observed = rerun_equals(project, stage)
                ok = same and len(project.outputs(stage)) == 1
                return passed(ok, f"{last[13:90]}...; rerun: {observed}", "data-loss")
            finally:
                subprocess.run(["umount", "-l", str(mount)], check=False)
