"""The content-addressed response cache: every answer paid for, so it is never paid for again.

One append-only JSONL file, one entry per line: ``{"key", "text", "failure", "model",
"custom_id", "batch_id", "at"}``, ``key`` being the sha256 of the canonical request body
(:func:`rate.rewrite.batch.requests.cache_key`). ``text`` is the answer; an answer that came
back paid but without text (content filter, refusal) has ``text`` null and a ``failure``
record, so that it is not bought again either. Appends are whole lines written in one
``write`` under an exclusive ``flock`` and fsynced before the caller moves on; a reader skips
a torn last line (a crash in the middle of an append) and any other line that does not parse.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

from rate.fs import apply_group_permissions, ensure_dir
from rate.io import json_text

log = logging.getLogger(__name__)


class ResponseCache:
    """Answers by cache key, read from and appended to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict] = {}

    def load(self) -> ResponseCache:
        """(Re)read the file; entries appended by other processes are seen."""
        self.entries = {}
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return self
        skipped = 0
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except ValueError:  # a torn append, or a line damaged by hand
                skipped += 1
                continue
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                # The first answer wins: later duplicates (a re-collected batch) are the same.
                self.entries.setdefault(entry["key"], entry)
            else:
                skipped += 1
        if skipped:
            log.warning("response cache %s: skipped %d unreadable line(s)", self.path, skipped)
        return self

    def get(self, key: str) -> dict | None:
        return self.entries.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def put(self, entries: Iterable[dict]) -> int:
        """Append the entries whose key is not cached yet, durably; -> how many were added."""
        fresh: dict[str, dict] = {}
        for entry in entries:
            if entry["key"] not in self.entries and entry["key"] not in fresh:
                fresh[entry["key"]] = {**entry, "at": entry.get("at") or _now()}
        if not fresh:
            return 0
        payload = b"".join(
            (json_text(e, sort_keys=True) + "\n").encode("utf-8") for e in fresh.values()
        )
        ensure_dir(self.path.parent)
        created = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # other processes append to the same file
            end = os.lseek(fd, 0, os.SEEK_END)
            if end and os.pread(fd, 1, end - 1) != b"\n":
                # A crash tore the last append: start on a fresh line, or ours would be lost too.
                payload = b"\n" + payload
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        if created:
            apply_group_permissions(self.path)
        self.entries.update(fresh)
        return len(fresh)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
