"""Shared fixtures: a small world built once per session, and the full worlds for slow tests."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP (see rate/__init__)
import torch  # noqa: E402

from tests.faults import canary
from tests.faults.harness import COUNTS
from tests.helpers import run_rate
from tests.worlds import BackgroundBuild, given_world

os.environ.setdefault("RATE_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Fitted heads (the MiniLM sentiment scorer's) are cached per test session, never in ~/.cache.
os.environ.setdefault("RATE_CACHE_DIR", tempfile.mkdtemp(prefix="rate-test-cache-"))
torch.set_num_threads(min(2, os.cpu_count() or 1))


@pytest.fixture(scope="session")
def small_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world built from the packaged --small config (about 15 s)."""
    from tinyworld.build import build_world
    from tinyworld.worldconfig import load_world_config

    out = tmp_path_factory.mktemp("small") / "world"
    build_world(load_world_config(small=True), out)
    return out


# The full worlds: (the config's name, the fixture that gives it, the RL runs it needs; None: all).
FULL_WORLDS = (
    ("default", "full_world", None),
    ("variant", "variant_world", ("default-s800",)),
    ("noshortcuts", "noshortcuts_world", ()),
)


@pytest.fixture(scope="session", autouse=True)
def background_worlds(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Path | BackgroundBuild]]:
    """The full worlds the collected tests need, each given (RATE_TEST_WORLD...) or building
    in a child process from the session's start (tests/worlds.py): the default world first,
    then the others side by side."""
    needed = {name for item in request.session.items for name in item.fixturenames}
    worlds: dict[str, Path | BackgroundBuild] = {}
    first: list[BackgroundBuild] = []
    for name, fixture, runs in FULL_WORLDS:
        if fixture not in needed:
            continue
        given = given_world(name)
        if given is not None:
            worlds[name] = given
            continue
        build = BackgroundBuild(name, tmp_path_factory.mktemp(name) / "world", runs, first)
        worlds[name] = build
        if name == "default":
            first = [build]
    yield worlds
    for world in reversed(list(worlds.values())):  # the ones waiting first: they start nothing
        if isinstance(world, BackgroundBuild):
            world.stop()


def full_world_of(
    worlds: dict[str, Path | BackgroundBuild], name: str, factory: pytest.TempPathFactory
) -> Path:
    """The world once built; one no collected test named (asked for by name) is built now."""
    world = worlds.get(name)
    if world is None:
        runs = next(r for n, _, r in FULL_WORLDS if n == name)
        world = given_world(name) or BackgroundBuild(name, factory.mktemp(name) / "world", runs)
        worlds[name] = world
    return world if isinstance(world, Path) else world.wait()


@pytest.fixture(scope="session")
def full_world(background_worlds, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full default world (several minutes). RATE_TEST_WORLD may name an already built one,
    which must have been built from the current packaged default config."""
    return full_world_of(background_worlds, "default", tmp_path_factory)


@pytest.fixture(scope="session")
def variant_world(background_worlds, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The variant world with its default run only (RATE_TEST_WORLD_VARIANT may name one)."""
    return full_world_of(background_worlds, "variant", tmp_path_factory)


@pytest.fixture(scope="session")
def noshortcuts_world(background_worlds, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The noshortcuts world without RL runs (RATE_TEST_WORLD_NOSHORTCUTS may name one)."""
    return full_world_of(background_worlds, "noshortcuts", tmp_path_factory)


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


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    """The root logger's handlers and level as they were before the test (a test that runs
    setup_logging adds its own)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
