"""A full disk: PROJECT_DIR on a small tmpfs, filled to leave a few sizes of free space before
each stage. Every failure is one clear message (no traceback, no '--- Logging error ---'),
leaves nothing a later stage would take for finished, and a rerun with space writes exactly
one output, equal to a clean run's. Mounting needs root (CI runs as root); elsewhere these
are skipped, saying why."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.faults.harness import COUNTS, FIXED_STAMP, STAGES, Project, content, problems

pytestmark = pytest.mark.faults
SAME = {"RATE_TEST_FIXED_STAMP": FIXED_STAMP}
SIZE = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def tmpfs(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip(f"mounting a tmpfs needs root (CI runs as root; this is uid {os.geteuid()})")
    where = tmp_path_factory.mktemp("tmpfs")
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(folder, leave: int) -> None:
    """Fill the file system of ``folder`` up to ``leave`` free bytes."""
    st = os.statvfs(folder)
    todo = max(0, st.f_bavail * st.f_frsize - leave)
    with open(folder / "ballast", "wb", buffering=0) as f:
        while todo > 0:
            try:
                written = f.write(b"\0" * min(todo, 1 << 16))
            except OSError:
                break  # full already
            if not written:
                break
            todo -= written


@pytest.mark.parametrize("stage", STAGES)
def test_a_full_disk_is_one_message_and_nothing_half_written(tmpfs, clean, stage):
    # Free space left: none (not even the log), half the output, and the data file but not
    # its record (the case that left a data file without a record on main).
    levels = (0, clean["sizes"][stage] // 2, clean["data"][stage] + 2048)
    root = tmpfs / stage
    shutil.copytree(clean["states"][stage], root / "project", symlinks=True)
    project = Project(root / "project", clean["project"].templates, clean["project"].n)
    finished = 0
    try:
        for free in levels:
            _fill(tmpfs, free)
            try:
                done = project.run(stage, **SAME)
                COUNTS["disk_full_runs"] += 1
            finally:
                (tmpfs / "ballast").unlink()
            if done.returncode == 0:
                # It fitted after all (tmpfs counts whole pages): then it must be whole.
                finished += 1
                assert problems(project) == [], done.stderr
                continue
            assert done.returncode == 2, done.stderr
            last = done.stderr.strip().splitlines()[-1]
            assert last.startswith("rate: error: cannot write "), done.stderr
            assert "No space left on device" in last and "free space" in last
            assert f"cannot write {project.root}" in last, "the message names no file"
            assert "Traceback" not in done.stderr and "Logging error" not in done.stderr
            assert problems(project) == [], f"{free} bytes free"
            assert len(project.outputs(stage)) == finished, f"{free} bytes free"
        rerun = project.run(stage, **SAME)
        assert rerun.returncode == 0, rerun.stderr
        outputs = project.outputs(stage)
        assert len(outputs) == finished + 1
        for out in outputs:
            assert content(out, project) == clean["outputs"][stage]
        assert problems(project) == []
        assert finished < len(levels), "the disk was never full"
    finally:
        shutil.rmtree(root)
