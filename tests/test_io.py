import errno
import grp
import json
import os
import stat

import pytest

from rate.errors import DataFileError, RateError, WriteError
from rate.fs import apply_group_permissions, ensure_dir
from rate.io import (
    atomic_directory,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    read_json,
    read_jsonl,
    write_jsonl,
)
from rate.provenance import check_made_from, content_digest


@pytest.fixture(autouse=True)
def _no_group(monkeypatch):
    monkeypatch.delenv("GROUP_NAME", raising=False)


@pytest.fixture
def strict_umask():
    """Umask 077, so any group bit on a written file must come from apply_group_permissions."""
    old = os.umask(0o077)
    yield
    os.umask(old)


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_atomic_write_text_and_json_roundtrip(tmp_path):
    atomic_write_text(tmp_path / "a.txt", "héllo\n")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo\n"
    atomic_write_json(tmp_path / "sub" / "m.json", {"z": 1, "a": [1, 2]})
    text = (tmp_path / "sub" / "m.json").read_text()
    assert text == '{\n  "z": 1,\n  "a": [\n    1,\n    2\n  ]\n}\n'  # key order kept
    assert read_json(tmp_path / "sub" / "m.json") == {"z": 1, "a": [1, 2]}
    assert _leftovers(tmp_path) == []


def test_atomic_write_respects_umask(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_bytes(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o644


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
def test_failed_write_keeps_old_content_and_leaves_no_temp(tmp_path, exc):
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"i": 0}])

    def rows():
        yield {"i": 1}
        raise exc("interrupted mid-write")

    with pytest.raises(exc):
        write_jsonl(path, rows())
    assert read_jsonl(path) == [{"i": 0}]
    assert _leftovers(tmp_path) == []


def test_write_jsonl_counts_and_keeps_unicode_line_separators(tmp_path):
    rows = [{"text": "a\u2028b"}, {"text": "ü", "n": 2}]
    assert write_jsonl(tmp_path / "r.jsonl", rows) == 2
    assert read_jsonl(tmp_path / "r.jsonl") == rows


def test_read_jsonl_skips_blank_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n')
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]


def test_read_jsonl_bad_line_names_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2,}\n')
    with pytest.raises(DataFileError) as info:
        read_jsonl(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:3: not valid JSON (")
    assert msg.endswith("fix or remove that line")


def test_read_jsonl_non_object_row_names_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(DataFileError, match=r"r\.jsonl:2: expected a JSON object .* got an array"):
        read_jsonl(path)


def test_missing_files_give_clear_errors(tmp_path):
    with pytest.raises(DataFileError, match=r"nope\.jsonl: no such file"):
        read_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(DataFileError, match=r"nope\.json: no such file"):
        read_json(tmp_path / "nope.json")
    with pytest.raises(DataFileError, match="is a folder"):
        read_json(tmp_path)


def test_read_json_bad_file_names_line(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{\n  "a": 1\n  "b": 2\n}\n')
    with pytest.raises(DataFileError, match=r"c\.json:3: not valid JSON"):
        read_json(path)


def test_atomic_directory_success(tmp_path):
    final = tmp_path / "world"
    with atomic_directory(final) as tmp:
        assert tmp.parent == tmp_path and tmp != final
        (tmp / "a.txt").write_text("a")
        assert not final.exists()
    assert (final / "a.txt").read_text() == "a"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_atomic_directory_rolls_back(tmp_path, exc):
    final = tmp_path / "world"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with pytest.raises(exc), atomic_directory(final, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
        raise exc("boom")
    assert sorted(p.name for p in final.iterdir()) == ["old.txt"]
    assert _leftovers(tmp_path) == []


def test_atomic_directory_refuses_existing_unless_overwrite(tmp_path):
    final = tmp_path / "world"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with pytest.raises(RateError, match="already exists"), atomic_directory(final):
        pass
    with atomic_directory(final, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["new.txt"]
    assert _leftovers(tmp_path) == []


def test_group_permissions_with_own_primary_group(tmp_path, monkeypatch, strict_umask):
    gid = os.getgid()
    monkeypatch.setenv("GROUP_NAME", grp.getgrgid(gid).gr_name)
    path = tmp_path / "out.json"
    atomic_write_json(path, {"a": 1})
    st = path.stat()
    assert st.st_gid == gid
    assert stat.S_IMODE(st.st_mode) == 0o640  # umask 077 gave 600; group-read was added

    with atomic_directory(tmp_path / "d") as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "f").write_text("x")
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "d" / "sub").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "d" / "sub" / "f").stat().st_mode) == 0o640


def test_no_group_name_leaves_umask_permissions(tmp_path, strict_umask):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "x")
    apply_group_permissions(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_unknown_group_raises_and_leaves_destination(tmp_path, monkeypatch):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "old")
    monkeypatch.setenv("GROUP_NAME", "rate-no-such-group-xyz")
    with pytest.raises(RateError) as info:
        atomic_write_text(path, "new")
    assert "GROUP_NAME='rate-no-such-group-xyz'" in str(info.value)
    assert ".env" in str(info.value)
    assert path.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_atomic_write_json_is_valid_json(tmp_path):
    obj = {"b": [1.5, None, True], "a": "x"}
    atomic_write_json(tmp_path / "o.json", obj, indent=None)
    assert json.loads((tmp_path / "o.json").read_text()) == obj
    assert (tmp_path / "o.json").read_text().endswith("}\n")


def _other_group() -> grp.struct_group:
    """A group other than our primary one that we may give files to (root: any)."""
    ours = os.getgid()
    gids = [g.gr_gid for g in grp.getgrall()] if os.geteuid() == 0 else os.getgroups()
    for gid in gids:
        if gid != ours:
            return grp.getgrgid(gid)
    pytest.skip("no second group to give files to (run as root, or be in two groups)")


def test_folders_made_for_an_output_get_the_group_too(tmp_path, monkeypatch, strict_umask):
    """Under umask 077, folders made by mkdir alone are drwx------ of our group: a colleague
    in GROUP_NAME could not open effects/ or logs/ (main). Every level made gets the group."""
    group = _other_group()
    monkeypatch.setenv("GROUP_NAME", group.gr_name)
    (tmp_path / "project").mkdir()  # existing folders are left as they are
    atomic_write_json(tmp_path / "project" / "effects" / "sub" / "e.json", {"a": 1})
    assert ensure_dir(tmp_path / "project" / "logs") == tmp_path / "project" / "logs"
    for folder in ("effects", "effects/sub", "logs"):
        st = (tmp_path / "project" / folder).stat()
        assert (st.st_gid, stat.S_IMODE(st.st_mode)) == (group.gr_gid, 0o750), folder
    st = (tmp_path / "project" / "effects" / "sub" / "e.json").stat()
    assert (st.st_gid, stat.S_IMODE(st.st_mode)) == (group.gr_gid, 0o640)
    assert stat.S_IMODE((tmp_path / "project").stat().st_mode) == 0o700


def test_a_full_disk_is_one_message_naming_the_file(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    atomic_write_text(tmp_path / "f.txt", "old")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(WriteError) as info:
        atomic_write_text(tmp_path / "f.txt", "new")
    message = str(info.value)
    assert message.startswith(f"cannot write {tmp_path / 'f.txt'}: No space left on device;")
    assert "\n" not in message and "free space" in message
    assert (tmp_path / "f.txt").read_text() == "old" and _leftovers(tmp_path) == []


def test_a_content_digest_follows_the_bytes_not_the_place(tmp_path):
    import hashlib

    a = tmp_path / "a"
    (a / "sub").mkdir(parents=True)
    (a / "x.bin").write_bytes(b"12")
    (a / "sub" / "y.txt").write_bytes(b"3")
    key = content_digest({"k": 1}, paths=[a, None])
    # By hand: the parts as JSON, then per path its index, and per file its name and size.
    h = hashlib.sha256(b'[{"k": 1}]\0')
    h.update(b"path 0\0sub/y.txt\x001\x003x.bin\x002\x0012path 1\0missing\0")
    assert key == h.hexdigest()

    moved = tmp_path / "elsewhere" / "b"
    moved.parent.mkdir()
    a.rename(moved)
    assert content_digest({"k": 1}, paths=[moved, None]) == key  # moved: the same inputs
    assert content_digest({"k": 2}, paths=[moved, None]) != key
    (moved / "x.bin").write_bytes(b"13")
    assert content_digest({"k": 1}, paths=[moved, None]) != key
    (moved / "x.bin").write_bytes(b"12")
    (moved / "sub" / "y.txt").rename(moved / "sub" / "z.txt")  # a name is part of the input
    assert content_digest({"k": 1}, paths=[moved, None]) != key
    # A file's bytes cannot pass for a second file: the size comes first.
    (moved / "sub" / "z.txt").unlink()
    (moved / "x.bin").write_bytes(b"12")
    (moved / "w").write_bytes(b"")
    one = content_digest(paths=[moved / "x.bin"])
    assert one != content_digest(paths=[moved / "w"]) != content_digest(paths=[None])


def test_a_folder_made_from_other_inputs_is_refused(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    check_made_from(folder, {"world": "abc", "seed": 0}, "a sweep's runs")  # recorded
    check_made_from(folder, {"world": "abc", "seed": 0}, "a sweep's runs")  # the same: resumes
    with pytest.raises(RateError, match=r"out: holds a sweep's runs made from other inputs "
                       r"\(seed, world differ\); choose another --out"):  # fmt: skip
        check_made_from(folder, {"world": "abd", "seed": 1}, "a sweep's runs")
    with pytest.raises(RateError, match=r"\(extra differ\)"):
        check_made_from(folder, {"world": "abc", "seed": 0, "extra": None}, "x")
    (folder / ".made_from.json").write_text("[1")  # damaged: nothing can be trusted
    with pytest.raises(RateError, match=r"\(seed, world differ\)"):
        check_made_from(folder, {"world": "abc", "seed": 0}, "x")


def test_a_world_rebuilt_in_place_has_another_build_digest(small_world, tmp_path):
    import shutil

    from tinyworld.data import BUILD_PARTS, build_digest

    copy = tmp_path / "world"
    for part in BUILD_PARTS:
        (copy / part).parent.mkdir(parents=True, exist_ok=True)
        copy_part = shutil.copytree if (small_world / part).is_dir() else shutil.copyfile
        copy_part(small_world / part, copy / part)
    assert build_digest(copy) == build_digest(small_world)  # moved, or its truth/ and runs/ gone
    (copy / "data" / "gold_more.jsonl").write_text("{}\n")  # a user's own gold set beside
    (copy / "policy" / ".lock").write_text("123")  # a lock, not content
    assert build_digest(copy) == build_digest(small_world)
    with open(copy / "data" / "prompts_train.jsonl", "a") as f:
        f.write("\n")
    assert build_digest(copy) != build_digest(small_world)
