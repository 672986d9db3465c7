"""The partial output of an interrupted scoring run: a header line with the run's
fingerprint, then complete scored rows, flushed and fsynced after every chunk. A killed run
resumes after the last complete chunk; the final file is written only when every example is
scored, and this one is removed then."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import BinaryIO

from rate.io import atomic_write_bytes


def _fingerprint(path: Path, reward_key: str, scorer: dict) -> str:
    """Input content, reward key and scorer: partial scores are reused only for the same."""
    h = hashlib.sha256(reward_key.encode() + b"\0" + json.dumps(scorer, sort_keys=True).encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class PartialScores:
    """The partial output of an interrupted run: a header line, then complete scored rows."""

    def __init__(
        self, folder: Path, input_path: Path, reward_key: str, scorer: dict, tag: str = ""
    ) -> None:
        self.fingerprint = _fingerprint(input_path, reward_key, scorer)
        # tag: a shard's own partial file (".shard1of4"), so shards never share one.
        name = f"{input_path.name}{tag}.{self.fingerprint[:16]}.jsonl"
        self.path = folder / ".partial" / name
        self.file: BinaryIO | None = None  # open between start() and close()

    def load(self) -> list[dict]:
        """Rows scored by an earlier run of the same input and reward key (may be [])."""
        if not self.path.is_file():
            return []
        with open(self.path, "rb") as f:
            lines = f.read().split(b"\n")
        rows = []
        try:
            header = json.loads(lines[0])
        except (json.JSONDecodeError, IndexError):
            return []
        if header.get("fingerprint") != self.fingerprint:
            return []
        # Only newline-terminated lines are complete; the last piece may be cut off by a kill.
        for line in lines[1:-1]:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break
        return rows

    def start(self, rows: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header = json.dumps({"fingerprint": self.fingerprint}) + "\n"
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        atomic_write_bytes(self.path, (header + body).encode())
        self.file = open(self.path, "ab")  # noqa: SIM115 (closed in finish/close)

    def append(self, rows: list[dict]) -> None:
        self.file.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
