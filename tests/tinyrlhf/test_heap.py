"""The audit's commands keep freed memory in the C heap (tinyworld.heap); nothing else does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tinyworld.audit_demo as audit_demo_module
import tinyworld.studies.audit as study_module
import tinyworld.studies.release as release_module
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


# Every command that runs the audit: (its arguments, the module whose audit call is stopped).
AUDITING_COMMANDS = {
    "world audit": (["world", "audit", "--world", "{world}"], run_module),
    "world study audit": (
        ["world", "study", "audit", "--names", "small", "--worlds", "{tmp}"],
        None,
    ),
    "audit-demo": (["audit-demo", "--world", "{world}"], audit_demo_module),
    "world study release": (["world", "study", "release", "--world", "{world}"], release_module),
}


@pytest.mark.parametrize("command", sorted(AUDITING_COMMANDS))
def test_the_audit_commands_keep_freed_memory_before_they_audit(
    command, small_world, tmp_path, monkeypatch
):
    calls: list[str] = []

    def stop(*args, **kwargs):
        calls.append("audit")
        raise _Stop

    monkeypatch.setattr(heap, "keep_freed_memory", lambda: calls.append("heap"))
    monkeypatch.setattr(study_module, "audit_study", stop)
    argv, module = AUDITING_COMMANDS[command]
    if module is not None:
        monkeypatch.setattr(module, "run_audit", stop)
    argv = [a.format(world=small_world, tmp=tmp_path) for a in argv]
    assert main([*argv, "--out", str(tmp_path / "out")]) != 0  # stopped: a clean error
    assert calls == ["heap", "audit"]


def test_every_module_that_runs_the_audit_is_behind_a_command_above():
    """A new caller of run_audit must join AUDITING_COMMANDS (and its command keep the heap)."""
    src = Path(heap.__file__).parent
    callers = {
        p.relative_to(src).as_posix()
        for p in src.rglob("*.py")
        if "run_audit(" in p.read_text() and p != Path(run_module.__file__)
    }
    # studies/audit.py runs it for `rate world study audit`; audit/cli.py for `rate world audit`.
    assert callers == {"audit/cli.py", "audit_demo.py", "studies/audit.py", "studies/release.py"}
