"""Choosing effect files by pattern, dataset and concept, of one run kind (the notebook's
selection and the plot stage's globs)."""

from __future__ import annotations

import pytest

from rate.errors import ConfigError
from rate.io import atomic_write_json
from rate.plots.select import select_effect_files

STAMPS = ("20260101_120000", "20260102_120000")


@pytest.fixture
def effects(tmp_path):
    """effects/ of a project: three smoke-test files (two datasets, two concepts, in two
    stamps), one full-run file and a record."""
    folder = tmp_path / "effects"
    files = [
        ("dune", "pa", STAMPS[1], "_smoke_test"),
        ("dune", "length", STAMPS[0], "_smoke_test"),
        ("imdb", "length", STAMPS[0], "_smoke_test"),
        ("dune", "pa", STAMPS[0], ""),
    ]
    for dataset, concept, stamp, suffix in files:
        name = f"{dataset}_{concept}_rm_treatment_effects_{stamp}{suffix}.json"
        atomic_write_json(folder / name, {"dataset_name": dataset, "concept": concept})
    atomic_write_json(folder / f"dune_pa_rm_treatment_effects_{STAMPS[1]}.json.meta.json", {})
    return folder


def _names(paths) -> list[str]:
    return [p.name.split("_rm_")[0] for p in paths]


def test_selects_by_dataset_concept_and_pattern(effects):
    # Oldest first, smoke-test files only, no record.
    assert _names(select_effect_files(effects, smoke=True)) == [
        "dune_length",
        "imdb_length",
        "dune_pa",
    ]
    assert _names(select_effect_files(effects, smoke=False)) == ["dune_pa"]
    assert _names(select_effect_files(effects, True, dataset="dune")) == ["dune_length", "dune_pa"]
    assert _names(select_effect_files(effects, True, concept=["length"])) == [
        "dune_length",
        "imdb_length",
    ]
    assert _names(select_effect_files(effects, True, dataset="imdb", concept="pa")) == []
    assert _names(select_effect_files(effects, True, pattern="*_pa_*.json")) == ["dune_pa"]
    assert _names(
        select_effect_files(effects, True, pattern="dune_*", concept=["pa", "length"])
    ) == ["dune_length", "dune_pa"]


def test_a_pattern_stays_inside_the_project(effects):
    with pytest.raises(ConfigError, match="reaches outside PROJECT_DIR"):
        select_effect_files(effects, True, pattern="../../*/*.json")
    with pytest.raises(ConfigError, match="relative to"):
        select_effect_files(effects, True, pattern=str(effects / "*.json"))
    # Inside the project, a pattern may look beside effects/.
    atomic_write_json(effects.parent / "archive" / "x_pa_20260101_120000_smoke_test.json", {})
    assert len(select_effect_files(effects, True, pattern="../archive/*.json")) == 1
