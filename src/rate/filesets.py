"""Outputs made of several files, published as one set.

An audit is ``A.json`` with ``A.csv``, ``A.md`` and ``A.png`` beside it; a certificate is
``OUT.json`` and ``OUT.md``. Rewriting them one by one lets a kill leave the new ``A.json``
beside the previous run's ``A.png``. Here every member is rendered and written aside first
(nothing visible changes while the work runs), then the members are renamed into place and
the primary JSON last; it holds each member's SHA-256 under :data:`SET_KEY`. So the primary is
always the old one or the complete new one, and a reader that checks the set
(:func:`check_set`) refuses a mix that a kill between two renames left. Files made from a set
(a reward wrapper made from an audit) record the primary's digest (:func:`file_digest`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from rate.errors import DataFileError
from rate.fs import PathLike, file_digest, fsync_dir, write_error
from rate.io import json_writer, read_json, write_temp

SET_KEY = "file_set"
# The command that wrote a set (its name, ``rate world audit``, set by ``rate.cli.main``; None
# from the Python API): another command's ``--out`` may not replace it (rate.outputs).
WRITER_KEY = "written_by"
WRITER: ContextVar[str | None] = ContextVar("rate_set_writer", default=None)


@contextlib.contextmanager
def written_by(command: str) -> Iterator[None]:
    """The sets written while the block runs record that ``command`` wrote them."""
    token = WRITER.set(command)
    try:
        yield
    finally:
        WRITER.reset(token)


def write_set(
    primary: PathLike, record: dict[str, Any], members: Mapping[Path, bytes]
) -> list[Path]:
    """Publish ``record`` as JSON at ``primary`` with ``members`` (path -> bytes, each in the
    primary's folder) as one set; -> the paths written, the primary first."""
    primary = Path(primary)
    folder = primary.parent
    for path in members:
        if Path(path).parent.resolve() != folder.resolve():
            raise ValueError(f"{path}: a set's members lie beside its primary {primary}")
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in members.items():
            staged.append((write_temp(folder, Path(path).name, lambda f, d=data: f.write(d)), path))
        digests = {Path(p).name: hashlib.sha256(d).hexdigest() for p, d in members.items()}
        writer = WRITER.get()
        whole = {**record, **({WRITER_KEY: writer} if writer else {}), SET_KEY: digests}
        staged.append((write_temp(folder, primary.name, json_writer(whole)), primary))
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as err:
        raise write_error(primary, err) from None
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
    fsync_dir(folder)
    return [primary, *(Path(p) for p in members)]


def check_set(primary: PathLike, what: str = "file") -> dict[str, Any]:
    """The record at ``primary``, after checking that every member it names is beside it with
    the bytes it was written with (a primary written before sets were kept names none)."""
    primary = Path(primary)
    record = read_json(primary)
    if not isinstance(record, dict):
        raise DataFileError(f"{primary}: not a {what} (a JSON object)")
    for name, digest in (record.get(SET_KEY) or {}).items():
        member = primary.parent / name
        if not member.is_file():
            raise DataFileError(
                f"{primary}: {name}, written with it, is missing; rerun the command that wrote "
                f"the {what}"
            )
        if file_digest(member) != digest:
            raise DataFileError(
                f"{primary}: {name} beside it is not the one written with it (a run stopped "
                f"between the two?); rerun the command that wrote the {what}"
            )
    return record
