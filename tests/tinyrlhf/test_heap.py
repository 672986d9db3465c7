"""The audit's commands keep freed memory in the C heap (tinyworld.heap); nothing else does."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tinyworld.studies.audit as study_module
from rate.cli import main
from rate.errors import RateError
from tinyworld import heap
from tinyworld.audit import run as run_module


class _Stop(RateError):
    """Raised where the audit would start: the test needs only what ran before it."""


def test_keep_freed_memory_takes_on_linux_once_per_process():
    code = (
        "import sys, tinyworld.audit.cli, tinyworld.studies.audit_cli, tinyworld.heap as h; "
        "print(h.keep_freed_memory.cache_info().currsize, h.keep_freed_memory(), "
        "h.keep_freed_memory(), h.keep_freed_memory.cache_info().hits)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    # Importing the commands sets nothing; the first call does, on glibc; the second is cached.
    assert out[0] == "0"
    assert out[1:3] == (["True", "True"] if sys.platform.startswith("linux") else ["False"] * 2)
    assert out[3] == "1"


@pytest.mark.parametrize("study", [False, True])
def test_the_audit_commands_keep_freed_memory_before_they_audit(
    study, small_world, tmp_path, monkeypatch
):
    calls: list[str] = []

    def stop(*args, **kwargs):
        calls.append("audit")
        raise _Stop

    monkeypatch.setattr(heap, "keep_freed_memory", lambda: calls.append("heap"))
    monkeypatch.setattr(run_module, "run_audit", stop)
    monkeypatch.setattr(study_module, "audit_study", stop)
    if study:
        argv = ["world", "study", "audit", "--names", "small", "--worlds", str(tmp_path)]
    else:
        argv = ["world", "audit", "--world", str(small_world)]
    assert main([*argv, "--out", str(tmp_path / "out")]) != 0  # stopped: a clean error
    assert calls == ["heap", "audit"]
