"""The partial output of an interrupted scoring run: a header line with the run's
fingerprint, then complete scored rows, flushed and fsynced after every chunk. A killed run
resumes after the last complete chunk; the final file is written only when every example is
scored, and this one is removed then.

A lock beside it (``flock``, released by the kernel when its process dies, even by SIGKILL)
keeps a second run on the same input and reward key from resuming from the first one's live
partial file: the second stops at once and names the first."""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import socket
from pathlib import Path
from typing import BinaryIO

from rate.errors import BusyError
from rate.fs import apply_group_permissions, ensure_dir, write_error
from rate.io import atomic_write_bytes, json_text


def _fingerprint(path: Path, reward_key: str, scorer: dict) -> str:
    """Input content, reward key and scorer: partial scores are reused only for the same."""
    h = hashlib.sha256(reward_key.encode() + b"\0" + json.dumps(scorer, sort_keys=True).encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class ScoreLock:
    """The lock of one input and reward key (and shard): two runs that would write the same
    scores never run at once, whatever their scorer settings."""

    def __init__(self, folder: Path, input_path: Path, reward_key: str, tag: str = "") -> None:
        key = hashlib.sha256(reward_key.encode()).hexdigest()[:12]
        self.path = folder / ".partial" / f"{input_path.name}{tag}.{key}.lock"
        self.input_path, self.reward_key = input_path, reward_key
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`BusyError` naming the process that holds it."""
        ensure_dir(self.path.parent)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as err:
            raise write_error(self.path, err) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise BusyError(
                f"{self.input_path}: another score_dataset is scoring it under reward key "
                f"{self.reward_key!r} ({holder}; lock {self.path}); wait for it to finish "
                "and use its scored file, or score under another reward_key"
            ) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": dt.datetime.now().isoformat(timespec="seconds"),
            "slurm_job": os.environ.get("SLURM_JOB_ID"),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json_text(holder) + "\n").encode(), 0)
            apply_group_permissions(self.path)
        except OSError:
            pass  # the lock holds without its note; the message then names no process
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
            self._fd = None


class PartialScores:
    """The partial output of an interrupted run: a header line, then complete scored rows."""

    def __init__(
        self,
        folder: Path,
        input_path: Path,
        reward_key: str,
        scorer: dict,
        tag: str = "",
        lock: ScoreLock | None = None,
    ) -> None:
        self.lock = lock  # released by remove()
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
        ensure_dir(self.path.parent)
        header = json_text({"fingerprint": self.fingerprint}) + "\n"
        body = "".join(json_text(r) + "\n" for r in rows)
        atomic_write_bytes(self.path, (header + body).encode())
        self.file = open(self.path, "ab")  # noqa: SIM115 (closed in finish/close)

    def append(self, rows: list[dict]) -> None:
        try:
            self.file.write("".join(json_text(r) + "\n" for r in rows).encode())
            self.file.flush()
            os.fsync(self.file.fileno())
        except OSError as err:
            raise write_error(self.path, err) from None

    def close(self) -> None:
        if self.file is not None:
            file, self.file = self.file, None
            try:
                file.close()  # flushes again what a failed append left in the buffer
            except OSError as err:
                raise write_error(self.path, err) from None

    def remove(self) -> None:
        """The output is written: drop the partial scores, then the lock."""
        self.close()
        self.path.unlink(missing_ok=True)
        if self.lock is not None:
            self.lock.release()


def _read_holder(fd: int) -> str:
    """Who holds a lock, from the note its holder wrote into the lock file."""
    try:
        note = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        note = {}
    if not isinstance(note, dict) or "pid" not in note:
        return "a process that left no note"
    job = f", SLURM job {note['slurm_job']}" if note.get("slurm_job") else ""
    return f"pid {note['pid']} on {note.get('host', '?')}{job}, since {note.get('since', '?')}"
