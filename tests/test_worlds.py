"""The session's background world builds (tests/worlds.py): one waits for the builds it comes
after, a stopped build starts nothing, and a stopped running build leaves no process behind."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from tests.worlds import BackgroundBuild
from tinyworld.build import build_world
from tinyworld.worldconfig import load_world_config


def test_a_background_build_is_the_world_a_build_in_process_makes(tmp_path):
    # The small config without RL runs: seconds. The child's world equals one built here,
    # file for file (the validity check's and the tests' figures are the same either way).
    first = BackgroundBuild("small", tmp_path / "a" / "world", runs=())
    second = BackgroundBuild("small", tmp_path / "b" / "world", runs=(), after=[first])
    stopped = BackgroundBuild("small", tmp_path / "c" / "world", runs=(), after=[first])
    stopped.stop()  # before its turn: it never starts
    world = second.wait()
    assert first._proc.returncode == 0 and first._proc.pid != second._proc.pid
    here = tmp_path / "here"
    build_world(dataclasses.replace(load_world_config(small=True), runs=[]), here)
    for name in ("policy/policy.safetensors", "reward_model/rm.safetensors"):
        assert (world / name).read_bytes() == (here / name).read_bytes(), name
    assert not (tmp_path / "c").exists()
    with pytest.raises(AssertionError, match="stopped"):
        stopped.wait()


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group (Linux: /proc/<pid>/stat's fifth field)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def test_stopping_a_running_build_kills_its_whole_process_group(tmp_path):
    # Stopped while its RL runs train in worker processes it spawned: none of them outlives it.
    build = BackgroundBuild("small", tmp_path / "d" / "world", runs=None)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if build._proc is not None and len(group_members(build._proc.pid)) > 1:
            break
        time.sleep(0.1)
    assert len(group_members(build._proc.pid)) > 1, "the build never reached its RL runs"
    build.stop()
    assert build._proc.returncode < 0  # killed, not finished
    deadline = time.monotonic() + 10  # SIGKILL is delivered at once; reaping may lag a little
    while group_members(build._proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_members(build._proc.pid) == []  # zombies aside: their parent is gone
    assert not (tmp_path / "d" / "world").exists()


def test_a_build_dies_with_the_process_that_started_it(tmp_path):
    # The tests' process killed before its teardown (SIGKILL, a CI timeout): its builds go too.
    import subprocess
    import sys

    starter = (
        "import sys, time; from pathlib import Path; from tests.worlds import BackgroundBuild; "
        "b = BackgroundBuild('small', Path(sys.argv[1]), runs=None); "
        "time.sleep(0.5); print(b._proc.pid, flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", starter, str(tmp_path / "e" / "world")],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    child = int(proc.stdout.readline())
    assert group_members(child), "the build did not start"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 20
    while group_members(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_members(child) == []
