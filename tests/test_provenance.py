"""The one "made from" record (issue 45, item 3): what a piece of work is made from, by
content, for every command that reuses work (the sweep's markers, assess's and the recipe
sweep's kept rows, the release study, the audit demo, the worlds a study builds); a rerun
reuses only what every input still matches, and the log names the input that changed."""

from __future__ import annotations

import dataclasses
import json
import logging
import os

import pytest

import rate.code_digest
from rate.errors import ConfigError
from rate.provenance import BIG_FILE, changed, content_digest, keep, made_from, read_kept
from rate.registry import local_folder_inputs


def test_a_record_digests_files_by_content_values_settings_and_code(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("one")
    first = made_from(code="rate.provenance", settings={"k": 1}, data=a, n=3)
    assert set(first) == {"data", "n", "settings", "code"}
    assert made_from(code="rate.provenance", settings={"k": 1}, data=a, n=3) == first
    moved = tmp_path / "moved.txt"
    os.rename(a, moved)  # the same bytes elsewhere: the same input
    assert made_from(code="rate.provenance", settings={"k": 1}, data=moved, n=3) == first
    moved.write_text("two")
    now = made_from(code="rate.provenance", settings={"k": 2}, data=moved, n=3)
    assert changed(first, now) == ["data", "settings"]
    assert changed(None, now) == sorted(now)  # no record (an older rate): every input
    assert changed({**first, "gone": "x"}, first) == ["gone"]


def test_an_edit_of_the_code_changes_the_record(monkeypatch):
    before = made_from(code="rate.provenance")
    monkeypatch.setattr(rate.code_digest, "code_digest", lambda *m: "edited")
    assert changed(before, made_from(code="rate.provenance")) == ["code"]


def test_kept_values_are_reused_only_from_the_same_inputs_and_the_log_says_why(tmp_path, caplog):
    path = tmp_path / "kept.json"
    made = {"policy": "p1", "settings": "s1"}
    keep(path, made, {"row": 1})
    assert read_kept(path, dict(made)) == {"row": 1}
    with caplog.at_level(logging.INFO, logger="rate.provenance"):
        assert read_kept(path, {"policy": "p2", "settings": "s1"}) is None
    assert "what it is made from changed: policy" in caplog.text
    path.write_text(json.dumps({"key": "abc", "value": {"row": 1}}))  # an older rate's record
    assert read_kept(path, made) is None
    path.write_text("{")  # damaged: computed anew, not trusted
    assert read_kept(path, made) is None


def test_a_big_file_is_digested_by_its_bytes_and_read_once_while_unchanged(tmp_path):
    weights = tmp_path / "model" / "weights.bin"
    weights.parent.mkdir()
    with open(weights, "wb") as f:
        f.truncate(BIG_FILE + 1)  # sparse: 64 MiB of zeros at no cost
    first = content_digest(paths=[weights.parent])
    assert content_digest(paths=[weights.parent]) == first
    with open(weights, "r+b") as f:  # one byte changes: the file's time and bytes change
        f.seek(BIG_FILE // 2)
        f.write(b"\1")
    os.utime(weights, ns=(1, 2))  # whatever the clock's resolution
    assert content_digest(paths=[weights.parent]) != first


def test_a_local_model_folder_is_what_a_part_reads(tmp_path):
    from rate.rewrite.options import HFGenerateOptions
    from rate.score.options import HFClassifierOptions, MiniLMSentimentOptions

    folder = tmp_path / "rm"
    folder.mkdir()
    assert HFClassifierOptions(model=str(folder)).inputs() == {"model": str(folder.resolve())}
    assert HFGenerateOptions(model=str(folder)).inputs() == {"model": str(folder.resolve())}
    assert MiniLMSentimentOptions(encoder=str(folder)).inputs() == {
        "encoder": str(folder.resolve())
    }
    assert HFClassifierOptions(model="org/reward-model").inputs() == {}  # a hub id
    assert MiniLMSentimentOptions().inputs() == {}  # the packaged encoder
    assert local_folder_inputs("model", "") == {}


def test_a_study_refuses_a_world_built_from_another_config(tmp_path):
    from tinyworld.build import config_digest, ensure_world
    from tinyworld.worldconfig import load_world_config

    small = load_world_config(small=True)
    world = tmp_path / "world"
    world.mkdir()
    (world / "world_info.json").write_text(json.dumps({"config_digest": config_digest(small)}))
    assert ensure_world(world, config=small) == world  # the same config: reused
    assert ensure_world(world) == world  # no config asked for: the user's world, reused
    with pytest.raises(ConfigError, match="built from another world config"):
        ensure_world(world, config=load_world_config(name="variant"))
    (world / "world_info.json").write_text("{}")  # an older build: no record, reused
    assert ensure_world(world, config=small) == world


def test_a_study_that_needs_no_runs_reuses_a_world_built_with_them(tmp_path):
    from tinyworld.build import config_digest, ensure_world, models_digest
    from tinyworld.worldconfig import load_world_config

    variant = load_world_config(name="variant")
    no_runs = dataclasses.replace(variant, runs=[])
    world = tmp_path / "world"
    world.mkdir()
    record = {"config_digest": config_digest(variant), "models_digest": models_digest(variant)}
    (world / "world_info.json").write_text(json.dumps(record))
    assert ensure_world(world, config=no_runs) == world
    fewer_runs = dataclasses.replace(variant, runs=variant.runs[:1])
    with pytest.raises(ConfigError, match="built from another world config"):
        ensure_world(world, config=fewer_runs)  # runs asked for: only the same ones will do
    with pytest.raises(ConfigError, match="built from another world config"):
        ensure_world(world, config=dataclasses.replace(load_world_config(), runs=[]))
    # A build record of before the models' digest: the exact config only.
    (world / "world_info.json").write_text(json.dumps({"config_digest": record["config_digest"]}))
    with pytest.raises(ConfigError, match="built from another world config"):
        ensure_world(world, config=no_runs)
