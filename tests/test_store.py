"""Timestamped output names and `latest`."""

from __future__ import annotations

import errno

import pytest

from rate import store
from rate.errors import ConfigError, WriteError
from rate.io import read_json
from rate.settings import register_secret_names
from rate.store import (
    dataset_stem,
    find_latest,
    meta_path,
    output_path,
    parse_name,
    publish,
    publish_dir,
    resolve_input,
    rewrites_stems,
    scored_name,
    scored_stem,
    scored_stems,
    temp_dir,
    timestamp,
)
from tests.factories import STAMP, put


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


# -- claiming names, data and record together ---------------------------------------------------


def _writer(text: str):
    return lambda f: f.write(text.encode())


def test_publish_never_takes_a_name_another_run_took_meanwhile(tmp_path, monkeypatch):
    """Two runs of one second: the competitor links its record after our check of the name and
    before our link; we move on to -2 and neither result is lost (main: os.replace over it)."""
    real_link = store.link_new
    raced = []

    def link_after_a_competitor(src, dest):
        if not raced:
            raced.append(None)  # the competitor's own links go straight through
            raced[0] = publish(
                tmp_path, "ds", ".json", True, _writer("theirs"), "s", {"n": 1}, stamp=STAMP
            )
        return real_link(src, dest)

    monkeypatch.setattr(store, "link_new", link_after_a_competitor)
    ours = publish(tmp_path, "ds", ".json", True, _writer("ours"), "s", {"n": 2}, stamp=STAMP)
    theirs = raced[0]
    assert theirs.name == f"ds_{STAMP}_smoke_test.json"
    assert ours.name == f"ds_{STAMP}-2_smoke_test.json"
    for path, text, n in ((theirs, "theirs", 1), (ours, "ours", 2)):
        assert path.read_text() == text
        meta = read_json(meta_path(path))
        assert meta["file"] == path.name and meta["n"] == n
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_publish_skips_a_record_left_without_data_and_a_foreign_data_file(tmp_path):
    (tmp_path / f"ds_{STAMP}.json.meta.json").write_text("{}")  # a kill between the two links
    (tmp_path / f"ds_{STAMP}-2.json").write_text("{}")  # a file without a record
    out = publish(tmp_path, "ds", ".json", False, _writer("x"), "s", {}, stamp=STAMP)
    assert out.name == f"ds_{STAMP}-3.json"
    assert read_json(meta_path(out))["file"] == out.name


def test_publish_records_no_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_CREDENTIALS", "canary-cred-98765")
    register_secret_names("LLM_CREDENTIALS")
    record = {
        "rewriter": {"base_url": "http://user:hunter2@host:8000/v1"},
        "note": "canary-cred-98765",
    }
    out = publish(tmp_path, "ds", ".json", False, _writer("x"), "s", record, stamp=STAMP)
    text = meta_path(out).read_text()
    assert "hunter2" not in text and "user:" not in text and "canary-cred" not in text
    assert read_json(meta_path(out))["rewriter"]["base_url"] == "http://***@host:8000/v1"


def test_a_failed_write_leaves_no_data_file_and_no_temporary(tmp_path):
    def fail(f):
        f.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(
        WriteError, match=r"cannot write .*ds\.json: No space left on device; the disk is full"
    ):
        publish(tmp_path, "ds", ".json", False, fail, "s", {}, stamp=STAMP)
    assert list(tmp_path.iterdir()) == []


def test_latest_matches_the_whole_name(tmp_path):
    put(tmp_path / f"tinyrlhf_dune_pa_{STAMP}_smoke_test.json", {})
    put(tmp_path / "tinyrlhf_dune_pa_v2_20270101_000000_smoke_test.json", {})
    got = find_latest(tmp_path, "tinyrlhf_dune_pa", ".json", smoke=True)
    assert got.name == f"tinyrlhf_dune_pa_{STAMP}_smoke_test.json"


def test_a_kill_between_the_record_and_the_data_leaves_nothing_latest_takes(tmp_path, monkeypatch):
    """main wrote the data first: a full disk before its meta left a complete-looking file
    that latest took, and a retry wrote a duplicate."""
    old = publish(tmp_path, "ds_scored", ".jsonl", False, _writer("old"), "s", {}, stamp=STAMP)
    real_link, links = store.link_new, []

    def die_before_the_data(src, dest):
        links.append(dest)
        if len(links) == 2:  # the record is linked; the data is next
            raise KeyboardInterrupt
        return real_link(src, dest)

    monkeypatch.setattr(store, "link_new", die_before_the_data)
    with pytest.raises(KeyboardInterrupt):
        publish(
            tmp_path, "ds_scored", ".jsonl", False, _writer("new"), "s", {}, stamp="20270101_000000"
        )
    assert find_latest(tmp_path, "ds_scored", ".jsonl", smoke=False) == old
    visible = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert visible == [
        old.name,
        f"{old.name}.meta.json",
        "ds_scored_20270101_000000.jsonl.meta.json",
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_folder_as_dataset_filename_says_it_is_a_folder(tmp_path):
    (tmp_path / "sub").mkdir()
    with pytest.raises(
        ConfigError,
        match=r"dataset_filename 'sub': .*sub is a folder, not a file; name a file in it",
    ):
        resolve_input(tmp_path, "sub", "x", ".jsonl", smoke=False)


def test_publish_dir_takes_the_next_name_when_a_folder_has_it(tmp_path):
    taken = tmp_path / f"p_{timestamp()}_smoke_test"
    taken.mkdir()
    (taken / "f.png").write_text("theirs")
    with temp_dir(tmp_path, "p") as tmp:
        (tmp / "f.png").write_text("ours")
        out = publish_dir(tmp, tmp_path, "p", smoke=True)
    assert out != taken and (out / "f.png").read_text() == "ours"
    assert (taken / "f.png").read_text() == "theirs"


def test_temp_dir_is_removed_when_building_fails(tmp_path):
    with pytest.raises(KeyboardInterrupt), temp_dir(tmp_path, "p") as tmp:
        (tmp / "a.png").write_text("x")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_the_references_names_are_written_and_read(tmp_path):
    """<dataset>_dataset_<stamp>[_smoke_test].json and <dataset>_<model>[_smoke_test]_scored_
    <stamp>.jsonl, as the reference writes them, claimed by publish; our earlier names are
    still read by latest, which matches whole names only."""
    stamp = "20241104_111220"

    def write(f):
        f.write(b"{}")

    rewrites = publish(tmp_path, dataset_stem("imdb_length"), ".json", True, write, "t", {}, stamp)
    assert rewrites.name == "imdb_length_dataset_20241104_111220_smoke_test.json"
    stem = scored_name("imdb_length", "armorm")
    scored = publish(tmp_path, stem, ".jsonl", True, write, "t", {}, stamp)
    assert scored.name == "imdb_length_armorm_smoke_test_scored_20241104_111220.jsonl"
    assert meta_path(scored).is_file()
    assert parse_name(scored) == ("imdb_length_armorm_scored", stamp, 1, True)
    assert scored_stem(scored, "imdb_length") == "imdb_length_armorm"
    assert output_path(tmp_path, stem, ".jsonl", False, stamp).name == (
        "imdb_length_armorm_scored_20241104_111220.jsonl"
    )
    again = publish(tmp_path, stem, ".jsonl", True, write, "t", {}, stamp)
    assert again.name == "imdb_length_armorm_smoke_test_scored_20241104_111220-2.jsonl"
    assert parse_name(again) == ("imdb_length_armorm_scored", stamp, 2, True)

    rw = rewrites_stems("imdb_length")
    assert find_latest(tmp_path, rw, ".json", smoke=True) == rewrites
    (tmp_path / "imdb_length_20241105_000000_smoke_test.json").write_text("{}")  # ours before
    assert find_latest(tmp_path, rw, ".json", smoke=True).name == (
        "imdb_length_20241105_000000_smoke_test.json"
    )
    (tmp_path / "imdb_length_v2_dataset_20241106_000000_smoke_test.json").write_text("{}")
    assert "v2" not in find_latest(tmp_path, rw, ".json", smoke=True).name

    models = {"armorm", "sfairxc", "distilbert_sst2_margin"}
    want_armorm = scored_stems("imdb_length", models, {"armorm"})
    assert find_latest(tmp_path, want_armorm, ".jsonl", smoke=True) == again
    for name in (
        "imdb_length_sfairxc_smoke_test_scored_20241107_000000.jsonl",  # another model only
        "imdb_length_v2_armorm_smoke_test_scored_20241107_000000.jsonl",  # another dataset
        "imdb_length_x_smoke_test_scored_20241107_000000.jsonl",  # not a model
    ):
        (tmp_path / name).write_text("{}")
    assert find_latest(tmp_path, want_armorm, ".jsonl", smoke=True) == again
    assert find_latest(
        tmp_path, scored_stems("imdb_length", models), ".jsonl", smoke=True
    ).name == ("imdb_length_sfairxc_smoke_test_scored_20241107_000000.jsonl")
    both = tmp_path / "imdb_length_sfairxc_armorm_smoke_test_scored_20241108_000000.jsonl"
    both.write_text("{}")  # armorm added to sfairxc's file
    assert find_latest(tmp_path, want_armorm, ".jsonl", smoke=True) == both
    ours = tmp_path / "imdb_length_scored_20241109_000000_smoke_test.jsonl"
    ours.write_text("{}")
    assert find_latest(tmp_path, want_armorm, ".jsonl", smoke=True) == ours
    with pytest.raises(ConfigError, match=r"no full .*'imdb_length_armorm_scored_<timestamp>"):
        find_latest(tmp_path, want_armorm, ".jsonl", smoke=False)
