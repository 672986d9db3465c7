"""Atomic file writes, and JSON/JSONL reading with errors that name the line.

Every writer here goes through a temporary file in the destination's folder, fsyncs it and
renames it over the destination, so a reader (or a rerun after a crash or Ctrl-C) sees either
the old file or the complete new one, never half a file.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import logging
import math
import numbers
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from rate.errors import DataFileError, RateError
from rate.fs import (
    PathLike,
    _umask,
    apply_group_permissions,
    apply_group_permissions_tree,
    ensure_dir,
    fsync_dir,
    write_error,
)

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


def _count_non_finite(obj: Any) -> tuple[int, int]:
    """(NaNs, infinities) among the numbers in ``obj``, containers walked."""
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        counts = [_count_non_finite(v) for v in obj]
        return sum(c[0] for c in counts), sum(c[1] for c in counts)
    if isinstance(obj, numbers.Real) and not isinstance(obj, bool) and not math.isfinite(obj):
        return (1, 0) if math.isnan(obj) else (0, 1)
    return 0, 0


def json_text(obj: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    """``obj`` as strict JSON (RFC 8259), the one way rate writes JSON: JSON has no NaN or
    Infinity, so a non-finite number is written as null (:func:`json_safe`; a missing estimate
    is null too), and an infinity is said in the log, because it is never a value rate meant."""
    try:  # the common case costs one pass
        return json.dumps(
            obj, indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False
        )
    except ValueError:  # a NaN or an infinity (or a cycle, which json_safe cannot mend)
        _, infinite = _count_non_finite(obj)
        if infinite:
            log.warning("%d infinite value(s) written as null: JSON has no Infinity", infinite)
        return json.dumps(
            json_safe(obj), indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False
        )


def json_writer(obj: Any, indent: int | None = 2) -> Callable[[IO[bytes]], None]:
    """A writer (for :func:`write_temp` and the publishers) of `obj` as strict JSON
    (:func:`json_text`): keys in their given order, newline-terminated."""
    data = (json_text(obj, indent) + "\n").encode("utf-8")
    return lambda f: f.write(data)


def jsonl_writer(rows: Iterable[dict[str, Any]]) -> Callable[[IO[bytes]], None]:
    """A writer of `rows`, one strict JSON object per line (:func:`json_text`)."""

    def write(f: IO[bytes]) -> None:
        for row in rows:
            f.write(json_text(row).encode("utf-8") + b"\n")

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


# Python's JSON parser recurses once per level; no file rate reads nests anywhere near this.
_TOO_DEEP = "JSON nested too deeply to read (thousands of levels); not a file rate wrote: fix it"


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
    return [row for _, row in read_jsonl_numbered(path)]


def read_jsonl_numbered(path: PathLike) -> list[tuple[int, dict[str, Any]]]:
    """:func:`read_jsonl`'s rows with their line numbers (from 1), for messages that name the
    line: blank lines are skipped, so a row's position need not be its line."""
    p = Path(path)
    rows: list[tuple[int, dict[str, Any]]] = []
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
                except RecursionError:
                    raise DataFileError(f"{p}:{lineno}: {_TOO_DEEP}") from None
                if not isinstance(row, dict):
                    kind = _JSON_TYPE_NAMES.get(type(row), type(row).__name__)
                    raise DataFileError(
                        f"{p}:{lineno}: expected a JSON object ({{...}}) on each line, "
                        f"got {kind}; fix or remove that line"
                    )
                rows.append((lineno, row))
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
    except RecursionError:
        raise DataFileError(f"{p}: {_TOO_DEEP}") from None


def csv_text(rows: list[dict], columns: Sequence[str]) -> str:
    """``rows`` as CSV with ``columns`` in that order, at full precision; a missing value (None
    or no key) is an empty cell."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: "" if r.get(c) is None else r[c] for c in columns})
    return buf.getvalue()
