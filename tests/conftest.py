"""Shared fixtures: a small world built once per session, and the full world for slow tests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP (see rate/__init__)
import torch  # noqa: E402

from tests.faults import canary
from tests.faults.harness import COUNTS
from tests.helpers import run_rate

os.environ.setdefault("RATE_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Fitted heads (the MiniLM sentiment scorer's) are cached per test session, never in ~/.cache.
os.environ.setdefault("RATE_CACHE_DIR", tempfile.mkdtemp(prefix="rate-test-cache-"))
torch.set_num_threads(min(2, os.cpu_count() or 1))


@pytest.fixture(scope="session")
def small_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world built from the packaged --small config (about 15 s)."""
    from rate.tinyrlhf.build import build_world
    from rate.tinyrlhf.worldconfig import load_world_config

    out = tmp_path_factory.mktemp("small") / "world"
    build_world(load_world_config(small=True), out)
    return out


@pytest.fixture(scope="session")
def full_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full default world (several minutes). RATE_TEST_WORLD may name an already built one,
    which must have been built from the current packaged default config."""
    from rate.schema import to_dict
    from rate.tinyrlhf.build import build_world
    from rate.tinyrlhf.evaluate import load_oracle
    from rate.tinyrlhf.worldconfig import load_world_config

    config = load_world_config()
    given = os.environ.get("RATE_TEST_WORLD")
    if given:
        world = Path(given)
        _, built_from = load_oracle(world)
        assert to_dict(built_from) == to_dict(config), f"{world} was built from another config"
        return world
    out = tmp_path_factory.mktemp("full") / "world"
    build_world(config, out)
    return out


@pytest.fixture(scope="session")
def demo_smoke(small_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`rate demo --small --smoke` run once into a fresh PROJECT_DIR; its stdout is kept in
    demo_stdout.txt there."""
    root = tmp_path_factory.mktemp("demo_smoke")
    (root / "tinyrlhf").mkdir()
    (root / "tinyrlhf" / "world_small").symlink_to(small_world)
    out = run_rate(["demo", "--small", "--smoke"], root)
    (root / "demo_stdout.txt").write_text(out.stdout)
    return root


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The secret canary (tests/faults/canary.py) after every API test."""
    outcome = yield
    report = outcome.get_result()
    canaries = tuple(getattr(item.module, "CANARIES", ()))
    if report.when != "call" or not canaries or report.skipped:
        return
    found = canary.leaks(canaries, report, item, tuple(getattr(item.module, "CANARY_INPUTS", ())))
    COUNTS["canary_checks"] += 1
    if found:
        COUNTS["canary_leaks"] += 1
        report.outcome = "failed"
        report.longrepr = "secret canary found in:\n  " + "\n  ".join(found)


def pytest_terminal_summary(terminalreporter) -> None:
    """What the fault suite and the canary did, when they ran."""
    if COUNTS:
        done = ", ".join(f"{key} {value}" for key, value in sorted(COUNTS.items()))
        terminalreporter.write_line(f"fault suite: {done}")
