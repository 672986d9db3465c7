"""The plot stage builds its folder aside and renames it into place: a killed run leaves no
half-filled folder, and each run gets a folder of its own."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rate.config import Config
from rate.effects.stage import treatment_effects
from rate.errors import ConfigError
from rate.io import atomic_write_json
from rate.plots import stage as plots_stage
from rate.plots.stage import effect_files, plot_stage
from rate.store import Layout
from tests.factories import STAMP, config, put, scored_rows


@pytest.fixture
def project(tmp_path):
    put(
        tmp_path / "data" / "scored" / f"mini_scored_{STAMP}_smoke_test.jsonl",
        scored_rows(key="vader"),
    )
    treatment_effects(config(), Layout(tmp_path))
    return tmp_path


def test_a_killed_plot_run_leaves_no_plots_folder(project, monkeypatch):
    """main left plots/<run>/ with 1 of 6 files, unmarked."""
    real_save = plots_stage._save
    calls = []

    def save_then_die(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt  # the kill arrives after the first figure
        calls.append(1)
        return real_save(*args, **kwargs)

    monkeypatch.setattr(plots_stage, "_save", save_then_die)
    with pytest.raises(KeyboardInterrupt):
        plot_stage(config(), Layout(project))
    assert list((project / "plots").iterdir()) == []


def test_each_plot_run_gets_a_folder_of_its_own_with_every_file(project):
    first = plot_stage(config(), Layout(project))
    second = plot_stage(config(), Layout(project))
    folders = sorted(p.name for p in (project / "plots").iterdir())
    assert len(folders) == 2 and not any(name.startswith(".") for name in folders)
    assert {p.parent for p in first} != {p.parent for p in second}
    for written in (first, second):
        assert all(p.is_file() for p in written)
        assert sorted(p.name for p in written[0].parent.iterdir()) == sorted(
            p.name for p in written
        )


# ---------------------------------------------------------------------------------------------
# plots.effects_files: names, 'latest' and glob patterns


def _with_files(*names: str) -> Config:
    base = config()
    return replace(base, plots=replace(base.plots, effects_files=list(names)))


@pytest.fixture
def effects_folder(tmp_path):
    """effects/ with two smoke-test files, one full-run file, a record, a file in a sub-folder
    and a link to a file outside PROJECT_DIR."""
    root = tmp_path / "project"
    effects = root / "effects"
    for concept, suffix in (("a", "_smoke_test"), ("b", "_smoke_test"), ("a", "")):
        name = f"mini_{concept}_vader_treatment_effects_{STAMP}{suffix}.json"
        atomic_write_json(effects / name, {"concept": concept})
    atomic_write_json(
        effects / f"mini_a_vader_treatment_effects_{STAMP}_smoke_test.json.meta.json", {}
    )
    atomic_write_json(
        effects / "old" / f"mini_c_vader_treatment_effects_{STAMP}_smoke_test.json", {}
    )
    outside = tmp_path / "elsewhere" / f"mini_z_vader_treatment_effects_{STAMP}_smoke_test.json"
    atomic_write_json(outside, {})
    (effects / outside.name).symlink_to(outside)
    return root


def test_effects_files_globs_take_the_run_kinds_files_inside_the_project(effects_folder):
    layout = Layout(effects_folder)
    names = lambda *pattern: [p.name for p in effect_files(_with_files(*pattern), layout)]  # noqa: E731
    smoke_a = f"mini_a_vader_treatment_effects_{STAMP}_smoke_test.json"
    smoke_b = f"mini_b_vader_treatment_effects_{STAMP}_smoke_test.json"
    assert names("mini_a_*.json") == [smoke_a]  # not the full run's file, not the record
    # The link out of PROJECT_DIR is never followed; a sub-folder only when the pattern says so.
    assert names("*.json") == [smoke_a, smoke_b]
    assert names("**/*_c_*.json") == [f"mini_c_vader_treatment_effects_{STAMP}_smoke_test.json"]
    # A name and a pattern that both give a file: drawn once.
    assert names(smoke_b, "mini_*_smoke_test.json") == [smoke_b, smoke_a]


def test_effects_files_errors_name_the_key(effects_folder):
    layout = Layout(effects_folder)
    for pattern, says in (
        ("*_nothing_*.json", "matches no smoke-test effect file"),
        ("../../elsewhere/*.json", "reaches outside PROJECT_DIR"),
        (str(effects_folder / "effects" / "*.json"), "relative to"),
        ("missing.json", "no such file"),
    ):
        with pytest.raises(ConfigError) as err:
            effect_files(_with_files(pattern), layout)
        message = str(err.value)
        assert message.startswith(f"plots.effects_files {pattern!r}") or message.startswith(
            f"plots.effects_files: {pattern!r}"
        ), message
        assert says in message and "\n" not in message


def test_plot_stage_draws_the_files_a_glob_matches(project):
    written = plot_stage(_with_files("mini_*_treatment_effects_*.json"), Layout(project))
    (effect_file,) = [p for p in (project / "effects").glob("*.json") if ".meta" not in p.name]
    summary = next(p for p in written if p.name == "effects_summary.md").read_text()
    assert effect_file.name in summary
