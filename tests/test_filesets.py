"""Several files published as one set (rate.filesets): a kill leaves the old set or the new
one, and a reader refuses a mix."""

from __future__ import annotations

import json
import os

import pytest

from rate.errors import DataFileError
from rate.filesets import SET_KEY, check_set, file_digest, write_set


def _set(folder, version: str):
    return write_set(
        folder / "a.json",
        {"version": version},
        {folder / "a.md": f"# {version}\n".encode(), folder / "a.png": version.encode() * 3},
    )


def test_a_set_is_written_whole_and_reads_back(tmp_path):
    written = _set(tmp_path, "v1")
    assert [p.name for p in written] == ["a.json", "a.md", "a.png"]
    record = check_set(tmp_path / "a.json")
    assert record["version"] == "v1"
    assert record[SET_KEY]["a.png"] == file_digest(tmp_path / "a.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.md", "a.png"]  # no temp


def test_a_run_stopped_between_two_renames_keeps_the_old_primary_and_is_refused(
    tmp_path, monkeypatch
):
    _set(tmp_path, "v1")
    real, calls = os.replace, []

    def stop_after_the_first(src, dst):  # a kill after the first member is in place
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(os, "replace", stop_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        _set(tmp_path, "v2")
    monkeypatch.undo()
    assert json.loads((tmp_path / "a.json").read_text())["version"] == "v1"  # the old primary
    assert (tmp_path / "a.md").read_text() == "# v2\n"  # a new member beside it: a mix
    with pytest.raises(DataFileError, match="a.md beside it is not the one written with it"):
        check_set(tmp_path / "a.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.md", "a.png"]  # no temp
    _set(tmp_path, "v2")  # a rerun mends it
    assert check_set(tmp_path / "a.json")["version"] == "v2"


def test_a_missing_member_is_named(tmp_path):
    _set(tmp_path, "v1")
    (tmp_path / "a.png").unlink()
    with pytest.raises(DataFileError, match="a.png, written with it, is missing"):
        check_set(tmp_path / "a.json", "audit")


def test_a_primary_written_before_sets_were_kept_reads_as_it_is(tmp_path):
    (tmp_path / "old.json").write_text('{"candidates": []}')
    assert check_set(tmp_path / "old.json") == {"candidates": []}
