"""Folder locks, content digests, and the kept values and made-from records keyed by them."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from rate.errors import BusyError, DataFileError, RateError
from rate.fs import PathLike, apply_group_permissions, ensure_dir, file_digest, write_error
from rate.io import _read_error, atomic_write_json, json_safe, read_json

log = logging.getLogger(__name__)


@contextlib.contextmanager
def folder_lock(
    folder: PathLike,
    busy: Callable[[str], RateError] | None,
    name: str = ".lock",
    wait: bool = False,
) -> Iterator[None]:
    """Hold ``folder``'s lock (an ``flock`` on ``folder/name``) while the block runs, so that
    two processes never drive the same output folder at once; the kernel drops it when its
    process dies, however it dies. If another live process holds it, raise ``busy(pid)``, or
    with ``wait`` wait for it (saying so) and then take it."""
    ensure_dir(folder)
    path = Path(folder) / name
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise write_error(path, err) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            if not wait:
                raise (busy or _busy)(holder) from None
            log.info("waiting for pid %s, which holds %s", holder, path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        apply_group_permissions(path)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _busy(pid: str) -> RateError:
    return BusyError(f"another run (pid {pid}) holds this folder; wait for it to finish")


BIG_FILE = 64 << 20
_BIG_DIGESTS: dict[tuple[int, int, int, int], str] = {}


def content_digest(*parts: Any, paths: Iterable[PathLike | None] = ()) -> str:
    """A sha256 hex digest of ``parts`` (as JSON) and of the bytes under ``paths``: a file's
    bytes, a folder's files by their names within it (hidden ones, such as locks and the
    temporary files of writes under way, left out), and a missing path (or None) as such. A
    result cached under it is reused only on the same inputs, wherever they were moved."""
    h = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode() + b"\0")
    for i, path in enumerate(paths):
        h.update(f"path {i}\0".encode())
        p = Path(path) if path is not None else None
        if p is None or not p.exists():
            h.update(b"missing\0")
            continue
        files = (
            [p]
            if p.is_file()
            else sorted(
                f
                for f in p.rglob("*")
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
        )
        for f in files:
            name = f.relative_to(p).as_posix() if f != p else "."
            try:
                with open(f, "rb") as stream:
                    stat = os.fstat(stream.fileno())
                    # The size first: no file's bytes can pass for another name and file.
                    h.update(f"{name}\0{stat.st_size}\0".encode())
                    if stat.st_size < BIG_FILE:
                        for block in iter(lambda: stream.read(1 << 20), b""):
                            h.update(block)
                        continue
                    # A model's weights (gigabytes) are read once per process, not at each
                    # check of each step: their digest is kept while the file stays the same.
                    seen = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
                    if seen not in _BIG_DIGESTS:
                        _BIG_DIGESTS[seen] = file_digest(f)
                    h.update(_BIG_DIGESTS[seen].encode())
            except OSError as err:
                raise _read_error(f, err) from None
    return h.hexdigest()


MadeFrom = dict[str, str]  # {input's name: a content digest of it}


def made_from(code: str | None = None, settings: Any = None, **inputs: Any) -> MadeFrom:
    """The one record of what a piece of work is made from, for a rerun to reuse it only
    where every input is the same, and to say which one changed where one did: a digest
    per named input (a path, or a list of paths, is digested by its bytes: a file, a folder,
    a template with its include chain; anything else by its value), the ``settings`` it read
    and, with ``code`` (a module), the digest of the code that computes it
    (:func:`rate.code_digest.code_digest`)."""
    from rate.code_digest import code_digest  # reads source files: only where asked

    record = {}
    for name, value in inputs.items():
        if isinstance(value, os.PathLike):
            record[name] = content_digest(paths=[value])
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], os.PathLike):
            record[name] = content_digest(paths=value)
        else:
            record[name] = content_digest(value)
    if settings is not None:
        record["settings"] = content_digest(json_safe(settings))
    if code is not None:
        record["code"] = code_digest(code)
    return record


def changed(before: Any, now: MadeFrom) -> list[str]:
    """The names whose digests differ between a record kept ``before`` and ``now`` (every
    name, where ``before`` is not a record: damaged, or written by an older rate)."""
    if not isinstance(before, dict):
        return sorted(now)
    return sorted(k for k in before.keys() | now.keys() if before.get(k, ...) != now.get(k))


def read_kept(path: PathLike, made: MadeFrom) -> Any | None:
    """The value :func:`keep` wrote to ``path`` from the same inputs as ``made``; None (and a
    log line naming the inputs that changed) where there is none, it was made from other
    inputs, or the file is damaged (what is damaged is computed anew, not trusted)."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        kept = read_json(p)
    except DataFileError as err:
        log.warning("%s; computing it anew", err)
        return None
    if isinstance(kept, dict) and "value" in kept:
        differ = changed(kept.get("made_from"), made)
        if not differ:
            return kept["value"]
        log.info("%s: computing it anew, as what it is made from changed: %s", p, ", ".join(differ))
    return None


def keep(path: PathLike, made: MadeFrom, value: Any) -> None:
    """Keep ``value`` at ``path`` (atomically) for :func:`read_kept`, with the record of what
    it was made from (:func:`made_from`)."""
    atomic_write_json(path, {"made_from": made, "value": value})


# The record of what an output folder's work is made from (:func:`check_made_from`).
MADE_FROM = ".made_from.json"


def check_made_from(folder: PathLike, made_from: dict[str, Any], what: str) -> None:
    """Record in ``folder`` what its work is made from, or, where a record is there already,
    refuse to go on from another: a rerun resumes its own work and never mixes in work made
    from other inputs (``what`` names the work in the error). Call it under the folder's
    lock."""
    path = Path(folder) / MADE_FROM
    record = json_safe(made_from)
    if path.is_file():
        try:
            before = read_json(path)
        except DataFileError:
            before = None
        if before != record:
            raise RateError(
                f"{folder}: holds {what} made from other inputs "
                f"({', '.join(changed(before, record))} differ); "
                "choose another --out, or delete the folder to start over"
            )
        return
    atomic_write_json(path, record)
