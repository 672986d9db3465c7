"""SIGKILL at random points of every stage, then a rerun: after each kill the project holds
nothing a later stage would take for a finished result, and the rerun's output equals an
uninterrupted run's.

The kill times are drawn (seeded: RATE_FAULT_SEED) over the time an uninterrupted run of
the stage took here, so they fall in start-up, in the work and in the writing alike. Each
stage is killed RATE_FAULT_KILLS times (default 2) in a row on one project, the later kills
falling on a run that resumes what the earlier one left, and then run to its end."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from tests.faults.harness import FIXED_STAMP, STAGES, Project, content, kill_after, problems

pytestmark = pytest.mark.faults
KILLS = int(os.environ.get("RATE_FAULT_KILLS", "2"))
SEED = int(os.environ.get("RATE_FAULT_SEED", "0"))
SAME = {"RATE_TEST_FIXED_STAMP": FIXED_STAMP}


@pytest.mark.parametrize("stage", STAGES)
def test_a_killed_stage_leaves_no_false_result_and_its_rerun_equals_a_clean_run(
    clean, stage, tmp_path
):
    rng = random.Random(f"{SEED}:{stage}")
    ref = clean["project"]
    root = tmp_path / "project"
    shutil.copytree(clean["states"][stage], root, symlinks=True)
    project = Project(root, ref.templates, ref.n)
    killed = []
    for _ in range(KILLS):
        at = rng.uniform(0.05, 1.0) * clean["seconds"][stage]
        # A run faster than the clean one may end first: then the next is killed sooner.
        while not kill_after(project.start(stage, **SAME), at) and at > 0.2:
            at /= 2
        killed.append(round(at, 2))
        assert problems(project) == [], f"after kills at {killed} s"
    rerun = project.run(stage, **SAME)
    assert rerun.returncode == 0, rerun.stderr
    outputs = project.outputs(stage)
    assert outputs, "the rerun wrote nothing"
    # Each finished run's output equals the clean run's (a kill after the output was in place
    # leaves it there, whole; a later run then writes another, equal one).
    for out in outputs:
        assert content(out, project) == clean["outputs"][stage], (out, killed)
    assert problems(project) == []
