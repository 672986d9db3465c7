"""Atomic file writes, JSON/JSONL reading with errors that name the line, group permissions.

Every writer here goes through a temporary file in the destination's folder, fsyncs it and
renames it over the destination, so a reader (or a rerun after a crash or Ctrl-C) sees either
the old file or the complete new one, never half a file.
"""

from __future__ import annotations

import contextlib
import grp
import json
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

from rate.errors import DataFileError, RateError

PathLike = str | os.PathLike[str]

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


def _apply_group_permissions_tree(root: Path) -> None:
    """Apply `apply_group_permissions` to `root` and everything below it."""
    if not os.environ.get("GROUP_NAME", "").strip():
        return
    apply_group_permissions(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            child = Path(dirpath) / name
            if not child.is_symlink():  # chown would follow it out of the tree
                apply_group_permissions(child)


def _fsync_dir(directory: Path) -> None:
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


def _atomic_write(path: PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Write through `write(file)` into a temp sibling of `path`, fsync, rename over `path`."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file 0600; give it the mode a plain open() would have.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        # Before the rename, so a bad GROUP_NAME leaves the destination untouched.
        apply_group_permissions(tmp)
        os.replace(tmp, dest)
    except BaseException:  # KeyboardInterrupt too: never leave a half-written temp file
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(dest.parent)
    return dest


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    _atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write `text` to `path` atomically, as UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: PathLike, obj: Any, indent: int | None = 2) -> None:
    """Write `obj` as JSON to `path` atomically, keys in their given order, newline-terminated."""
    text = json.dumps(obj, indent=indent, sort_keys=False, ensure_ascii=False) + "\n"
    atomic_write_text(path, text)


def write_jsonl(path: PathLike, rows: Iterable[dict[str, Any]]) -> int:
    """Write `rows` to `path` atomically, one JSON object per line; return the row count."""
    count = 0

    def write(f: IO[bytes]) -> None:
        nonlocal count
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
            count += 1

    _atomic_write(path, write)
    return count


@contextlib.contextmanager
def atomic_directory(final_dir: PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling folder to fill; on success rename it to `final_dir`.

    If the block raises (Ctrl-C included), the temporary folder is removed and `final_dir` is
    left as it was. An existing `final_dir` is replaced only with `overwrite=True`.
    """
    final = Path(final_dir)
    if final.exists() and not overwrite:
        raise RateError(f"{final} already exists; remove it or choose another output folder")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp"))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700
        yield tmp
        _apply_group_permissions_tree(tmp)
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
    _fsync_dir(final.parent)


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
