"""The data layout under PROJECT_DIR: timestamped output names, `latest`, metadata records.

Every stage writes ``<name>_<YYYYMMDD_HHMMSS>[-N][_smoke_test].<ext>`` into its folder, with a
``<file>.meta.json`` beside it (config, template, counts, git commit, time) so that a result can
be traced to what made it. ``latest`` picks the newest output of the previous stage by the
timestamp in its name, never by the file's mtime (copying a folder changes mtimes).

Runs of a sweep start in the same second on shared storage, so a name is never taken by
checking that it is free: :func:`publish` writes the data and its record to temporary files,
then claims the record's name by a hard link (which fails if the name exists) and links the
data beside it. The record is in place before the data, so a data file always has its record,
and a kill or a full disk between the two leaves a record without data, which ``latest``
does not see.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rate import __version__
from rate.errors import ConfigError
from rate.io import (
    apply_group_permissions_tree,
    atomic_write_bytes,
    ensure_dir,
    fsync_dir,
    link_new,
    write_error,
    write_temp,
)
from rate.settings import project_dir, redact_record

STAMP_FORMAT = "%Y%m%d_%H%M%S"
SMOKE_SUFFIX = "_smoke_test"
# What a config's names may be: they become parts of output paths, so no '/', no '..'.
_NAME_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=-]*$")
_STAMPED = re.compile(r"^(?P<stem>.+)_(?P<stamp>\d{8}_\d{6})(?P<seq>-\d+)?(?P<smoke>_smoke_test)?$")


def is_name_part(name: str) -> bool:
    """Whether ``name`` may be one part of a file name: letters, digits and ``_ . + = -``,
    not starting with a dot (so never ``..``, never a path)."""
    return bool(_NAME_PART.match(name))


@dataclass(frozen=True)
class Layout:
    """Where each stage reads and writes, relative to one project folder."""

    root: Path

    @classmethod
    def from_env(cls) -> Layout:
        return cls(project_dir())

    @property
    def rewrites(self) -> Path:
        return self.root / "data" / "rewrites"

    @property
    def scored(self) -> Path:
        return self.root / "data" / "scored"

    @property
    def effects(self) -> Path:
        return self.root / "effects"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def folder(self, name: str) -> Path:
        """The data folder a config's ``dataset_folder`` names (``rewrites`` or ``scored``)."""
        folders = {"rewrites": self.rewrites, "scored": self.scored}
        if name not in folders:
            raise ConfigError(f"unknown dataset_folder {name!r}; use 'rewrites' or 'scored'")
        return folders[name]


def timestamp(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now()).strftime(STAMP_FORMAT)


def _names(folder: Path, stem: str, ext: str, smoke: bool, stamp: str | None) -> Iterator[Path]:
    """``<stem>_<stamp>[-N][_smoke_test]<ext>`` for N = 1, 2, ...: the candidates of one run."""
    stamp = stamp or timestamp()
    suffix = SMOKE_SUFFIX if smoke else ""
    yield folder / f"{stem}_{stamp}{suffix}{ext}"
    seq = 1
    while True:
        seq += 1
        yield folder / f"{stem}_{stamp}-{seq}{suffix}{ext}"


def output_path(folder: Path, stem: str, ext: str, smoke: bool, stamp: str | None = None) -> Path:
    """The first timestamped name in ``folder`` that no file (or record) has now. Only a hint:
    another run may take it next; :func:`publish` claims a name for good."""
    for path in _names(folder, stem, ext, smoke, stamp):
        if not path.exists() and not meta_path(path).exists():
            return path
    raise AssertionError("unreachable")


def new_log_path(folder: Path, stage: str, smoke: bool) -> Path:
    """A new ``<stage>_<stamp>[-N][_smoke_test].log`` in ``folder``, created empty and
    exclusively: runs of one second never share (and interleave) a log."""
    ensure_dir(folder)
    for path in _names(folder, stage, ".log", smoke, None):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            return path
        except FileExistsError:
            continue
        except OSError as err:
            raise write_error(path, err) from None
    raise AssertionError("unreachable")


def _meta_bytes(path: Path, stage: str, record: dict[str, Any]) -> bytes:
    meta = {
        "stage": stage,
        "file": path.name,
        "created": dt.datetime.now().isoformat(timespec="seconds"),
        "rate_version": __version__,
        "git_commit": git_commit(),
        **redact_record(record),  # no secret, and no user:password in a URL, is ever recorded
    }
    return (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def publish(
    folder: Path,
    stem: str,
    ext: str,
    smoke: bool,
    write: Callable[[IO[bytes]], None],
    stage: str,
    record: dict[str, Any] | None,
    stamp: str | None = None,
) -> Path:
    """Write a new timestamped data file through ``write(file)`` and its ``.meta.json`` (what
    ``stage`` made it from: ``record``; None: no record), under a name that no other run
    takes, even one that starts in the same second; -> the data file's path.

    The data is written in full to a temporary file first; then, name by name, the record is
    linked to ``<name>.meta.json`` (claiming the name, or failing because another run has it)
    and the data to ``<name>``. A failure at any point (a full disk, a kill) leaves no data
    file, so no later stage takes a half result."""
    folder = ensure_dir(folder)
    data_tmp = write_temp(folder, f"{stem}{ext}", write)
    try:
        for path in _names(folder, stem, ext, smoke, stamp):
            if path.exists():
                continue
            if record is None:
                if link_new(data_tmp, path):
                    break
                continue
            meta = meta_path(path)
            body = _meta_bytes(path, stage, record)
            meta_tmp = write_temp(folder, meta.name, lambda f, body=body: f.write(body))
            try:
                if not link_new(meta_tmp, meta):
                    continue  # another run of this second has the name
            finally:
                meta_tmp.unlink(missing_ok=True)
            if link_new(data_tmp, path):
                break
            meta.unlink(missing_ok=True)  # a data file without a record took the name
    finally:
        data_tmp.unlink(missing_ok=True)
    fsync_dir(folder)
    return path


def publish_dir(tmp: Path, folder: Path, stem: str, smoke: bool) -> Path:
    """Rename the filled folder ``tmp`` to a new ``<stem>_<stamp>[-N][_smoke_test]`` in
    ``folder``, a name no other folder has (a rename never replaces a folder with files in
    it); -> the final path."""
    apply_group_permissions_tree(tmp)
    for path in _names(folder, stem, "", smoke, None):
        if path.exists():
            continue
        try:
            os.rename(tmp, path)
        except OSError as err:
            if err.errno in (errno.EEXIST, errno.ENOTEMPTY):
                continue  # taken by a run of the same second
            raise write_error(path, err) from None
        fsync_dir(folder)
        return path
    raise AssertionError("unreachable")


@contextlib.contextmanager
def temp_dir(folder: Path, name: str) -> Iterator[Path]:
    """A hidden temporary folder in ``folder`` to build an output in; removed on failure
    (a kill leaves only a hidden ``.<name>.*.tmp``, which nothing takes for a result)."""
    ensure_dir(folder)
    tmp = folder / f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        tmp.mkdir()
    except OSError as err:
        raise write_error(tmp, err) from None
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def parse_name(path: Path) -> tuple[str, str, int, bool] | None:
    """(stem, stamp, sequence, smoke) of a timestamped output name, or None."""
    name = path.name
    for ext in (".jsonl", ".json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    m = _STAMPED.match(name)
    if not m:
        return None
    seq = int(m["seq"][1:]) if m["seq"] else 1
    return m["stem"], m["stamp"], seq, bool(m["smoke"])


def find_latest(folder: Path, stem: str, ext: str, smoke: bool) -> Path:
    """The newest ``<stem>_<stamp>[-N][_smoke_test]<ext>`` in ``folder`` of the run kind asked
    for; the whole stem must match (``ds`` is not ``ds_v2``). Hidden files (a write in
    progress) are never taken; a stage's own output always has its record beside it
    (:func:`publish` writes the record first)."""
    candidates = []
    if folder.is_dir():
        for p in folder.iterdir():
            if not p.name.endswith(ext) or p.name.endswith(".meta.json") or p.name.startswith("."):
                continue
            parsed = parse_name(p)
            if parsed and parsed[3] == smoke and parsed[0] == stem and p.is_file():
                candidates.append((parsed[1], parsed[2], p))
    if not candidates:
        kind = "smoke-test" if smoke else "full (non-smoke)"
        raise ConfigError(
            f"dataset_filename 'latest': no {kind} file '{stem}_<timestamp>{ext}' in "
            f"{folder}; run the previous stage first, or name the file explicitly"
        )
    return max(candidates)[2]


def resolve_input(folder: Path, filename: str, stem: str, ext: str, smoke: bool) -> Path:
    """``latest`` or a file name (relative to ``folder``, or absolute) -> an existing file."""
    if filename == "latest":
        return find_latest(folder, stem, ext, smoke)
    path = Path(filename).expanduser()
    path = path if path.is_absolute() else folder / path
    if path.is_dir():
        raise ConfigError(
            f"dataset_filename {filename!r}: {path} is a folder, not a file; name a file in it "
            f"(a {ext} file), or use 'latest'"
        )
    if not path.is_file():
        raise ConfigError(
            f"dataset_filename {filename!r}: no such file {path}; check the name, or use 'latest'"
        )
    return path


def effects_stem(dataset_name: str, concept: str, score: str) -> str:
    """The name of an effect file before its stamp."""
    return f"{dataset_name}_{concept}_{score}_treatment_effects"


def scored_name(dataset_name: str) -> str:
    """The stem of the scored files of a dataset (before the stamp)."""
    return f"{dataset_name}_scored"


def scored_stem(source: Path, prefix: str) -> str:
    """The stem of a scored file made from ``source``: adding a model to a scored file keeps
    its dataset name (``<name>_scored_<stamp>`` -> ``<name>``)."""
    parsed = parse_name(source)
    stem = parsed[0] if parsed else source.stem
    return stem.removesuffix("_scored") or prefix


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def git_commit() -> str | None:
    """The commit of the code that made an output (None outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def write_meta(path: Path, stage: str, **record: Any) -> None:
    """Write ``<path>.meta.json``: what made ``path``, so a result can be traced."""
    body = _meta_bytes(path, stage, record)
    atomic_write_bytes(meta_path(path), body)
