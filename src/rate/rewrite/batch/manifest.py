"""The on-disk record of one batch run, written atomically before and after every API call.

A run is one call of the rewriter with one set of requests; it lives in
``<work_dir>/runs/<run_id>/`` (``run_id``: a hash of the endpoint, the model and the request
lines, so the same requests find the same run again). ``manifest.json`` there holds::

    {"format", "run_id", "model", "endpoint", "completion_window", "cache", "created_at",
     "updated_at",
     "lines":   {custom_id: {"cache_key", "request_keys", "state", "file", "batch_id",
                             "submits", "failure"}},
     "files":   {name: {"path", "custom_ids", "bytes", "sha256", "state", "file_id",
                        "intent_at", "batch_id"}},
     "batches": {batch_id: {"file", "input_file_id", "status", "request_counts",
                            "output_file_id", "error_file_id", "errors", "collected",
                            "created_at", "updated_at"}}}

A line's ``state`` is ``pending`` (to be sent), ``written`` (in a request file not yet sent),
``submitted`` (in batch ``batch_id``), ``done`` (its answer is in the cache) or ``failed``
(``failure``: class, message, whether retrying can help, whether it was paid). A file's
``state`` is ``written``, ``uploading`` (the upload may or may not have happened), ``uploaded``
(``file_id`` known), ``creating`` (``batches.create`` may or may not have happened; look the
batch up before creating another) or ``submitted`` (``batch_id`` known). The manifest never
holds the API key: nothing here is ever given it.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rate.errors import DataFileError, RateError
from rate.io import atomic_write_json, read_json
from rate.provenance import folder_lock

FORMAT = "rate.openai_batch.manifest/1"

# Line states, file states, and the batch statuses after which a batch changes no more.
PENDING, WRITTEN, SUBMITTED, DONE, FAILED = "pending", "written", "submitted", "done", "failed"
UPLOADING, UPLOADED, CREATING = "uploading", "uploaded", "creating"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
STATUSES = frozenset({"validating", "in_progress", "finalizing", "cancelling", *TERMINAL})


# Test hook: set to after_upload, after_create or after_download, the process exits at once
# (os._exit, status 75) at that point, before the manifest records what just happened, as a
# kill there would. Tests use it; nothing else should set it.
CRASH_ENV = "RATE_OPENAI_BATCH_TEST_CRASH_AT"
CRASH_EXIT_CODE = 75


def crash_point(name: str) -> None:
    """The test hook: exit here, without any clean-up, if CRASH_ENV names this point."""
    if os.environ.get(CRASH_ENV) == name:
        logging.shutdown()
        os._exit(CRASH_EXIT_CODE)


class RunLockedError(RateError):
    """Another live process holds the run."""


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Manifest:
    """The state of one run, as a JSON-ready dict, saved atomically on every :meth:`save`."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def open(cls, path: Path, header: dict[str, Any]) -> Manifest:
        """The manifest at ``path``, or a new one with ``header`` (not yet saved)."""
        if path.exists():
            data = read_json(path)
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise DataFileError(
                    f"{path} is not a batch manifest this version understands (format "
                    f"{data.get('format') if isinstance(data, dict) else None!r}); move it aside "
                    "to start the run afresh (batches it names are not looked up then)"
                )
            return cls(path, data)
        data = {
            "format": FORMAT,
            **header,
            "created_at": now_iso(),
            "updated_at": None,
            "lines": {},
            "files": {},
            "batches": {},
        }
        return cls(path, data)

    @property
    def lines(self) -> dict[str, dict[str, Any]]:
        return self.data["lines"]

    @property
    def files(self) -> dict[str, dict[str, Any]]:
        return self.data["files"]

    @property
    def batches(self) -> dict[str, dict[str, Any]]:
        return self.data["batches"]

    def save(self) -> None:
        """Write the whole manifest atomically: a crash leaves the old or the new one."""
        self.data["updated_at"] = now_iso()
        atomic_write_json(self.path, self.data)

    def counts(self) -> dict[str, int]:
        """How many lines are in each state."""
        out: dict[str, int] = {}
        for line in self.lines.values():
            out[line["state"]] = out.get(line["state"], 0) + 1
        return out


def run_lock(run_dir: Path):
    """Hold the run's lock: two processes driving the same batches would race on the manifest.
    The kernel drops the lock when its process dies, however it dies."""
    return folder_lock(
        run_dir,
        lambda holder: RunLockedError(
            f"another process (pid {holder}) is running the same batch job ({run_dir}); "
            "wait for it to finish, then run again: its answers will be in the cache"
        ),
    )


@dataclass
class Run:
    """One run's folder, manifest and id."""

    run_id: str
    run_dir: Path
    manifest: Manifest

    @property
    def path(self) -> Path:
        return self.manifest.path
