"""Timestamped output names and `latest`."""

from __future__ import annotations

import pytest

from rate.errors import ConfigError
from rate.store import find_latest, output_path, parse_name


def test_output_path_names_and_collisions(tmp_path):
    p = output_path(tmp_path, "imdb_length", ".json", smoke=True, stamp="20260101_120000")
    assert p.name == "imdb_length_20260101_120000_smoke_test.json"
    p.write_text("{}")
    q = output_path(tmp_path, "imdb_length", ".json", smoke=True, stamp="20260101_120000")
    assert q.name == "imdb_length_20260101_120000-2_smoke_test.json"
    assert parse_name(q) == ("imdb_length", "20260101_120000", 2, True)
    assert parse_name(tmp_path / "notes.json") is None


def test_latest_is_the_newest_stamp_of_the_same_run_kind(tmp_path):
    for name in (
        "ds_20260101_120000.json",
        "ds_20260102_090000.json",
        "ds_20260103_090000_smoke_test.json",
        "ds_20260102_090000.json.meta.json",
        "other_20270101_000000.json",
        "ds2_20280101_000000.json",  # another dataset whose name starts the same
        ".ds_20290101_000000.json.tmp",
    ):
        (tmp_path / name).write_text("{}")
    (tmp_path / "ds_20260102_090000-2.json").write_text("{}")
    assert find_latest(tmp_path, "ds", ".json", smoke=False).name == "ds_20260102_090000-2.json"
    assert (
        find_latest(tmp_path, "ds", ".json", smoke=True).name
        == "ds_20260103_090000_smoke_test.json"
    )
    with pytest.raises(ConfigError, match="no smoke-test file 'nope_<timestamp>.json'"):
        find_latest(tmp_path, "nope", ".json", smoke=True)
