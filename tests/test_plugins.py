"""Plugins: the tiny world joins rate through entry points, as a third party would; a broken
plugin is named and left out; rate's own kinds cannot be replaced; the core runs without it."""

from __future__ import annotations

import logging
import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from rate import plugins
from rate.registry import Kind
from tests.helpers import ROOT


@pytest.fixture
def fresh(monkeypatch):
    """The plugin look-ups recomputed for each test, then as they were."""
    cached = (plugins.plugin_kinds, plugins.plugin_template_roots)
    for function in cached:
        function.cache_clear()
    yield monkeypatch
    for function in cached:
        function.cache_clear()


def _points(monkeypatch, group: str, points: list[EntryPoint]) -> None:
    real = plugins.entry_points
    monkeypatch.setattr(
        plugins, "entry_points", lambda group=None: points if group == wanted else real(group=group)
    )
    wanted = group


def test_the_tiny_world_registers_its_parts_and_commands():
    from rate.datasets.registry import RULES, SOURCES
    from rate.rewrite.backends import REWRITERS
    from rate.score.backends import SCORERS
    from rate.templates import dataset_template_names, scoring_template_names

    assert SOURCES["tinyrlhf"].factory == "tinyworld.source:TinyWorldStream"
    assert RULES["token_swap"].factory.startswith("tinyworld.")
    assert REWRITERS["tinyrlhf"].factory.startswith("tinyworld.")
    assert {"tinyrlhf_rm", "tinyrlhf_oracle"} <= set(SCORERS)
    assert "tinyrlhf_dune_pa" in dataset_template_names()
    assert "tinyrlhf_rm" in scoring_template_names()
    assert any(c.register.__module__ == "tinyworld.cli" for c in plugins.plugin_commands())


def test_a_broken_plugin_is_named_and_left_out(fresh, caplog):
    broken = EntryPoint("broken", "no_such_module_xyz:KIND", "rate.scorers")
    _points(fresh, "rate.scorers", [broken])
    with caplog.at_level(logging.WARNING, logger="rate.plugins"):
        kinds = plugins.plugin_kinds("rate.scorers")
    assert kinds == {}
    assert "'broken' of rate.scorers (no_such_module_xyz:KIND) failed to load" in caplog.text


def test_a_plugin_cannot_replace_a_core_kind(fresh, caplog):
    fake = Kind(object, "x:y", "a plugin's vader")
    fresh.setattr(plugins, "plugin_kinds", lambda group: {"vader": fake, "extra": fake})
    core = {"vader": Kind(object, "rate.score.vader:VaderScorer")}
    with caplog.at_level(logging.WARNING, logger="rate.plugins"):
        merged = plugins.with_plugins(core, "rate.scorers")
    assert merged["vader"] is core["vader"] and merged["extra"] is fake
    assert "'vader' of rate.scorers is one of rate's own" in caplog.text


def test_the_core_imports_nothing_of_the_world_until_a_template_needs_it():
    """The registries load the world's light options only (no torch); the command line adds
    its commands; nothing else of it is imported by the core."""
    code = (
        "import sys, rate, rate.pipeline, rate.catalog, rate.api.data\n"
        "print(sorted(m for m in sys.modules if m.startswith('tinyworld')))\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.splitlines()
    assert out[0] == "['tinyworld', 'tinyworld.options', 'tinyworld.plugin', 'tinyworld.vocab']"
    assert out[1] == "False"


def test_rate_runs_without_the_world_plugin(fresh):
    from rate import cli

    fresh.setattr(cli, "plugin_commands", lambda: [])
    parser, aliases = cli.build_parser()
    text = parser.format_help()
    assert "create_dataset" in text and "    world " not in text
    assert ("tinyrlhf",) not in aliases


def test_a_sweep_step_on_another_world_is_another_step(tmp_path, monkeypatch):
    """The sweep's reuse key holds what a part reads besides its options (the world it
    resolves), so a grid run against another world redoes its tiny-world steps; a step
    whose parts read nothing more keeps its key."""
    from rate.catalog import load_config
    from rate.sweep.grid import fingerprint

    tiny = load_config(ROOT / "experiments" / "tinyworld" / "smoke.yaml")
    offline = load_config(ROOT / "experiments" / "smoke.yaml")
    keys = {}
    for world in ("a", "b"):
        monkeypatch.setenv("RATE_WORLD", str(tmp_path / world))
        keys[world] = [fingerprint(c, k) for c in (tiny, offline) for k in ("rewrite", "score")]
    assert keys["a"][0] != keys["b"][0] and keys["a"][1] != keys["b"][1]  # the world's
    assert keys["a"][2:] == keys["b"][2:]  # drug reviews and VADER read no world
