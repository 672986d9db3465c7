"""The plot stage builds its folder aside and renames it into place: a killed run leaves no
half-filled folder, and each run gets a folder of its own."""

from __future__ import annotations

import pytest

from rate.effects.stage import treatment_effects
from rate.plots import stage as plots_stage
from rate.plots.stage import plot_stage
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
