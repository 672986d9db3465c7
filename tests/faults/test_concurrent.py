"""Runs started together, as a SLURM sweep starts them: N processes give N distinct complete
outputs, each record matching its data; two scorings of one input never run at once.

Every process here stamps its outputs with the same second (tests/faults/shim), so that each
group contends for the very same names; on main, results were lost this way."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.faults.harness import FIXED_STAMP, Project, problems, run_together

pytestmark = pytest.mark.faults
SAME_SECOND = {"RATE_TEST_FIXED_STAMP": FIXED_STAMP}


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Project:
    """A project with a rewrites file and its scored file."""
    project = Project.make(tmp_path_factory.mktemp("concurrent"))
    for stage in ("create_dataset", "score_dataset"):
        out = project.run(stage)
        assert out.returncode == 0, out.stderr
    return project


def _record(path):
    return json.loads(path.with_name(path.name + ".meta.json").read_text())


def test_effects_of_one_second_are_all_kept_with_their_own_records(scored):
    levels = [0.8, 0.9, 0.95, 0.99]
    before = set(scored.outputs("treatment_effects"))
    done = run_together(
        scored,
        [("treatment_effects", ["--set", f"effects.level={x}"]) for x in levels],
        **SAME_SECOND,
    )
    assert [d.returncode for d in done] == [0] * 4, [d.stderr for d in done]
    printed = [d.stdout.strip().splitlines()[-1] for d in done]
    assert len(set(printed)) == 4  # four names, one per run
    new = set(scored.outputs("treatment_effects")) - before
    assert {str(p) for p in new} == set(printed)
    for path in new:
        data, record = json.loads(path.read_text()), _record(path)
        assert record["file"] == path.name
        assert data["intervals"]["level"] == record["config"]["effects"]["level"]
    assert sorted(json.loads(p.read_text())["intervals"]["level"] for p in new) == levels
    assert problems(scored) == []


def test_datasets_and_their_scorings_of_one_second_are_all_kept(tmp_path):
    project = Project.make(tmp_path, n=12)
    sizes = [4, 6, 8]
    done = run_together(
        project,
        [("create_dataset", ["--set", f"rewrites.smoke_n_examples={n}"]) for n in sizes],
        **SAME_SECOND,
    )
    assert [d.returncode for d in done] == [0] * 3, [d.stderr for d in done]
    inputs = project.outputs("create_dataset")
    assert len(inputs) == 3
    assert sorted(len(json.loads(p.read_text())) for p in inputs) == sizes
    for path in inputs:
        assert _record(path)["n_examples"] == len(json.loads(path.read_text()))
    assert problems(project) == []

    done = run_together(
        project,
        [("score_dataset", ["--set", f"scoring.dataset_filename={p.name}"]) for p in inputs],
        **SAME_SECOND,
    )
    assert [d.returncode for d in done] == [0] * 3, [d.stderr for d in done]
    outputs = project.outputs("score_dataset")
    assert len(outputs) == 3
    for path in outputs:
        rows = path.read_text().splitlines()
        record = _record(path)
        assert record["n_examples"] == len(rows)
        assert len(json.loads(Path(record["input"]).read_text())) == len(rows)
    assert sorted(_record(p)["n_examples"] for p in outputs) == sizes
    assert problems(project) == []


def test_plots_of_one_second_get_a_complete_folder_each(scored):
    done = run_together(scored, [("plot", []), ("plot", [])], **SAME_SECOND)
    assert [d.returncode for d in done] == [0, 0], [d.stderr for d in done]
    folders = scored.outputs("plot")
    assert len(folders) == 2
    assert problems(scored) == []


def test_a_second_scoring_of_the_same_input_stops_at_once_naming_the_first(tmp_path):
    """main: no lock; the second resumed from the first one's live partial file, and both wrote
    a scored file."""
    project = Project.make(tmp_path, n=400)
    assert project.run("create_dataset").returncode == 0
    first = project.start("score_dataset", "--set", "scoring.chunk_size=1")
    partial = project.root / "data" / "scored" / ".partial"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and first.poll() is None:
        files = list(partial.glob("*.jsonl")) if partial.is_dir() else []
        if files and files[0].read_bytes().count(b"\n") >= 3:
            break
        time.sleep(0.01)
    assert first.poll() is None, "the first scoring ended before it could be paused"
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = project.run("score_dataset", "--set", "scoring.chunk_size=1")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert second.returncode == 2
    message = second.stderr.strip().splitlines()[-1]
    assert message.startswith("rate: error: ") and "another score_dataset is scoring it" in message
    assert f"pid {first.pid} on " in message
    assert len(project.outputs("score_dataset")) == 1
    assert problems(project) == []
