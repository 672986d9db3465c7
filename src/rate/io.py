"""Atomic file writes, JSON/JSONL reading with errors that name the line, group permissions.

Every writer here goes through a temporary file in the destination's folder, fsyncs it and
renames it over the destination, so a reader (or a rerun after a crash or Ctrl-C) sees either
the old file or the complete new one, never half a file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import grp
import hashlib
import json
import logging
import math
import numbers
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from rate.errors import DataFileError, RateError, WriteError

PathLike = str | os.PathLike[str]

log = logging.getLogger(__name__)

_JSON_TYPE_NAMES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true/false",
    type(None): "null",
}


# ---------------------------------------------------------------------------------------------
# Permissions


def _umask() -> int:
    """Return the process umask without changing it where /proc allows (os.umask is racy)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_group_permissions(path: PathLike) -> None:
    """Give `path` to the group named by GROUP_NAME and make it group-readable.

    Folders also get group-exec so the group can list them. With GROUP_NAME unset this does
    nothing, and the file keeps the permissions the umask gave it.
    """
    group = os.environ.get("GROUP_NAME", "").strip()
    if not group:
        return
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise RateError(
            f"GROUP_NAME={group!r} is not a group on this machine; fix GROUP_NAME in .env "
            "(`getent group` lists the groups) or unset it to keep default permissions"
        ) from None
    p = Path(path)
    st = p.stat()
    if st.st_gid != gid:
        try:
            os.chown(p, -1, gid)
        except PermissionError as err:
            raise RateError(
                f"cannot give {p} to group {group!r} (GROUP_NAME): {err.strerror}; "
                "join that group or fix GROUP_NAME in .env"
            ) from None
    mode = stat.S_IMODE(st.st_mode) | stat.S_IRGRP
    if stat.S_ISDIR(st.st_mode):
        mode |= stat.S_IXGRP
    if mode != stat.S_IMODE(st.st_mode):
        os.chmod(p, mode)


def apply_group_permissions_tree(root: Path) -> None:
    """Apply `apply_group_permissions` to `root` and everything below it."""
    if not os.environ.get("GROUP_NAME", "").strip():
        return
    apply_group_permissions(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            child = Path(dirpath) / name
            if not child.is_symlink():  # chown would follow it out of the tree
                apply_group_permissions(child)


def ensure_dir(path: PathLike) -> Path:
    """Make the folder ``path`` and any missing parents; the ones made here get GROUP_NAME's
    group and group read and exec, as files do (folders made by ``mkdir`` alone keep the
    umask's 0700, and a group member could not open them)."""
    p = Path(path)
    missing = []
    for level in (p, *p.parents):
        if level.is_dir():
            break
        missing.append(level)
    for level in reversed(missing):
        try:
            level.mkdir()
        except FileExistsError:
            if not level.is_dir():
                raise write_error(level, OSError(errno.ENOTDIR, "a file is in the way")) from None
            continue  # made by a concurrent run
        except OSError as err:
            raise write_error(level, err) from None
        apply_group_permissions(level)
    return p


_WRITE_HINTS = {
    errno.ENOSPC: "the disk is full: free space there (or point PROJECT_DIR elsewhere) and rerun",
    errno.EDQUOT: "the disk quota is used up: free space there (or point PROJECT_DIR "
    "elsewhere) and rerun",
    errno.EACCES: "check the folder's permissions (and PROJECT_DIR, GROUP_NAME in .env)",
    errno.EPERM: "check the folder's permissions (and PROJECT_DIR, GROUP_NAME in .env)",
    errno.EROFS: "the file system is read-only: point PROJECT_DIR at a writable folder",
}


def write_error(path: PathLike, err: OSError, verb: str = "write") -> WriteError:
    """One line for a failed write: the file, what the system said, what to do."""
    hint = _WRITE_HINTS.get(err.errno, "check the folder and rerun")
    return WriteError(
        f"cannot {verb} {path}: {err.strerror or err}; {hint}. Nothing half-written was left "
        "for a later stage to take"
    )


def fsync_dir(directory: Path) -> None:
    """Flush a folder's entry list so a rename in it survives a crash (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------
# Atomic writes


def json_safe(obj: Any) -> Any:
    """NaN and infinities -> null (JSON has neither; a missing estimate is null), numpy
    scalars -> Python numbers (numpy registers them with the ``numbers`` ABCs), tuples ->
    lists; containers recursively."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        return float(obj) if math.isfinite(obj) else None
    if getattr(getattr(obj, "dtype", None), "kind", None) == "b":  # a numpy bool
        return bool(obj)
    return obj


def write_temp(folder: PathLike, name: str, write: Callable[[IO[bytes]], None]) -> Path:
    """Write through `write(file)` into a new hidden temporary file in `folder` (named after
    `name`), fsynced, with the mode and group a finished file gets; -> its path. On any
    failure the temporary file is removed, and an OSError becomes one :class:`WriteError`."""
    directory = ensure_dir(folder)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    except OSError as err:
        raise write_error(directory / name, err) from None
    try:
        # mkstemp makes the file 0600; give it the mode a plain open() would have.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        # Before any rename, so a bad GROUP_NAME leaves the destination untouched.
        apply_group_permissions(tmp)
    except BaseException as err:  # KeyboardInterrupt too: never leave a half-written temp file
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise write_error(directory / name, err) from None
        raise
    return Path(tmp)


def _atomic_write(path: PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Write through `write(file)` into a temp sibling of `path`, fsync, rename over `path`."""
    dest = Path(path)
    tmp = write_temp(dest.parent, dest.name, write)
    try:
        os.replace(tmp, dest)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise write_error(dest, err) from None
        raise
    fsync_dir(dest.parent)
    return dest


# Where a file system has no hard links, a name is claimed by creating it (O_EXCL) and the
# finished file is renamed over the claim.
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}


def link_new(src: PathLike, dest: PathLike) -> bool:
    """Give the finished file `src` the name `dest` if no file has it (atomic, never
    replacing one); -> False if `dest` exists. `src` may be gone afterwards."""
    try:
        os.link(src, dest)
        return True
    except FileExistsError:
        return False
    except OSError as err:
        if err.errno not in _NO_LINKS:
            raise write_error(dest, err) from None
    try:
        os.close(os.open(dest, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError as err:
        raise write_error(dest, err) from None
    try:
        os.replace(src, dest)  # over our own claim
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(dest)
        raise write_error(dest, err) from None
    return True


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    _atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write `text` to `path` atomically, as UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


def json_writer(obj: Any, indent: int | None = 2) -> Callable[[IO[bytes]], None]:
    """A writer (for :func:`write_temp` and the publishers) of `obj` as JSON: keys in their
    given order, newline-terminated."""
    text = json.dumps(obj, indent=indent, sort_keys=False, ensure_ascii=False) + "\n"
    data = text.encode("utf-8")
    return lambda f: f.write(data)


def jsonl_writer(rows: Iterable[dict[str, Any]]) -> Callable[[IO[bytes]], None]:
    """A writer of `rows`, one JSON object per line."""

    def write(f: IO[bytes]) -> None:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")

    return write


def atomic_write_json(path: PathLike, obj: Any, indent: int | None = 2) -> None:
    """Write `obj` as JSON to `path` atomically, keys in their given order, newline-terminated."""
    _atomic_write(path, json_writer(obj, indent))


def write_jsonl(path: PathLike, rows: Iterable[dict[str, Any]]) -> int:
    """Write `rows` to `path` atomically, one JSON object per line; return the row count."""
    rows = list(rows)
    _atomic_write(path, jsonl_writer(rows))
    return len(rows)


@contextlib.contextmanager
def atomic_directory(final_dir: PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling folder to fill; on success rename it to `final_dir`.

    If the block raises (Ctrl-C included), the temporary folder is removed and `final_dir` is
    left as it was. An existing `final_dir` is replaced only with `overwrite=True`.
    """
    final = Path(final_dir)
    if final.exists() and not overwrite:
        raise RateError(f"{final} already exists; remove it or choose another output folder")
    ensure_dir(final.parent)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp"))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700
        yield tmp
        apply_group_permissions_tree(tmp)
        if final.exists():
            if not overwrite:  # created by someone else while we were filling tmp
                raise RateError(
                    f"{final} already exists; remove it or choose another output folder"
                )
            # A non-empty folder cannot be renamed over; move the old one aside first.
            old = final.with_name(f".{final.name}.{secrets.token_hex(4)}.old")
            os.replace(final, old)
            try:
                os.replace(tmp, final)
            except BaseException:
                os.replace(old, final)
                raise
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink()
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(final.parent)


# ---------------------------------------------------------------------------------------------
# Reading


def _read_error(path: Path, err: OSError | UnicodeDecodeError) -> DataFileError:
    """Turn an error from reading `path` into one that says what to do."""
    if isinstance(err, UnicodeDecodeError):
        return DataFileError(f"{path}: not UTF-8 text (byte {err.start}); re-save it as UTF-8")
    if isinstance(err, FileNotFoundError):
        return DataFileError(
            f"{path}: no such file; check the path (and PROJECT_DIR in .env), "
            "or run the stage that writes it first"
        )
    if isinstance(err, IsADirectoryError):
        return DataFileError(f"{path}: is a folder, not a file; give the path of the file in it")
    return DataFileError(f"{path}: cannot read ({err.strerror}); check its permissions")


def read_jsonl(path: PathLike) -> list[dict[str, Any]]:
    """Read a JSONL file: one JSON object per line, blank lines skipped."""
    p = Path(path)
    rows: list[dict[str, Any]] = []
    try:
        # Text-mode iteration splits on newlines only, not on U+2028 inside JSON strings.
        with open(p, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DataFileError(
                        f"{p}:{lineno}: not valid JSON ({err.msg}); fix or remove that line"
                    ) from None
                if not isinstance(row, dict):
                    kind = _JSON_TYPE_NAMES.get(type(row), type(row).__name__)
                    raise DataFileError(
                        f"{p}:{lineno}: expected a JSON object ({{...}}) on each line, "
                        f"got {kind}; fix or remove that line"
                    )
                rows.append(row)
    except (UnicodeDecodeError, OSError) as err:
        raise _read_error(p, err) from None
    return rows


def read_json(path: PathLike) -> Any:
    """Read a JSON file, with an error that names the file and line if it does not parse."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as err:
        raise _read_error(p, err) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFileError(
            f"{p}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno}); fix the file"
        ) from None


@contextlib.contextmanager
def folder_lock(
    folder: PathLike, busy: Callable[[str], RateError], name: str = ".lock"
) -> Iterator[None]:
    """Hold ``folder``'s lock (an ``flock`` on ``folder/name``) while the block runs, so that
    two processes never drive the same output folder at once; the kernel drops it when its
    process dies, however it dies. If another live process holds it, raise ``busy(pid)``."""
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
            raise busy(holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        apply_group_permissions(path)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# ---------------------------------------------------------------------------------------------
# Content digests


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
                    # The size first: no file's bytes can pass for another name and file.
                    h.update(f"{name}\0{os.fstat(stream.fileno()).st_size}\0".encode())
                    for block in iter(lambda: stream.read(1 << 20), b""):
                        h.update(block)
            except OSError as err:
                raise _read_error(f, err) from None
    return h.hexdigest()


def read_kept(path: PathLike, key: str) -> Any | None:
    """The value :func:`keep` wrote to ``path`` under ``key``; None when there is none, it
    was kept under another key (its inputs changed), or the file is damaged (logged: what is
    damaged is computed anew, not trusted)."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        kept = read_json(p)
    except DataFileError as err:
        log.warning("%s; computing it anew", err)
        return None
    if isinstance(kept, dict) and kept.get("key") == key and "value" in kept:
        return kept["value"]
    return None


def keep(path: PathLike, key: str, value: Any) -> None:
    """Keep ``value`` at ``path`` (atomically) for :func:`read_kept` under ``key``, a
    :func:`content_digest` of what it was computed from."""
    atomic_write_json(path, {"key": key, "value": value})


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
            before = before if isinstance(before, dict) else {}  # a damaged record: all differ
            changed = sorted(
                k for k in record.keys() | before.keys() if before.get(k, ...) != record.get(k)
            )
            raise RateError(
                f"{folder}: holds {what} made from other inputs ({', '.join(changed)} differ); "
                "choose another --out, or delete the folder to start over"
            )
        return
    atomic_write_json(path, record)
