"""The Batch API state machine: one set of request lines driven to an answer (or a final
failure) for each, crash-safe and never paying twice.

A rewrite pass (:class:`rate.rewrite.batch.rewriter.OpenAIBatchRewriter`) goes:

1. Every request becomes a batch line (:mod:`.requests`); lines whose answer is in the response
   cache (:mod:`.cache`) are answered from it, with no API call at all.
2. The rest are written into request files under the run's folder, split under the request
   and byte limits, uploaded (purpose "batch") and turned into batches. The manifest
   (:mod:`.manifest`) is written atomically before and after each of these calls.
3. The batches are polled with back-off and jitter until each ends; its output and error files
   are downloaded (a local copy is kept), answers go to the cache (fsynced) and only then does
   the manifest mark the lines done. Expired and cancelled batches keep their finished lines.
4. Lines that failed for a transient reason (rate limit, server error, a batch that ended
   before reaching them) are sent again, up to ``max_resubmits`` times; a line that was
   answered (billed) is never sent again, even if the answer has no text.
5. If rows are still missing, a :class:`~rate.errors.RateError` says how many, why (by class),
   where the manifest is, and that a rerun resumes.

Crash safety: a rerun with the same requests finds the same run folder (its name hashes the
endpoint, the model and the lines) and picks up where the manifest says it was:

* killed before or during an upload (file ``uploading``): the file is uploaded again, which
  costs nothing; no batch can exist for an unrecorded file id;
* killed after the upload (file ``uploaded``): the recorded file id is used;
* killed during or right after ``batches.create`` (file ``creating``, intent time recorded
  first): the batches are listed and the one made from that file id with our metadata
  (``rate_run``, ``rate_file``) is re-attached; only if there is none is a batch created;
* killed while polling: the batch ids are in the manifest, polling resumes;
* killed while downloading or collecting: local copies are written atomically and cache
  appends are idempotent, so collection simply runs again.

A second process on the same run is refused (a lock in the run folder). Batches of an
abandoned run (another set of requests, e.g. after a config change) that hold lines this run
needs are waited for and collected before anything is submitted, so those are not paid twice.

Test hook: the environment variable ``RATE_OPENAI_BATCH_TEST_CRASH_AT`` set to
``after_upload``, ``after_create`` or ``after_download`` makes the process exit at once
(``os._exit``, exit status 75) at that point, before the manifest records what just happened,
as a kill there would. Tests use it; nothing else should set it.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path

from rate.errors import RateError
from rate.io import atomic_write_bytes, read_json
from rate.rewrite.batch import results as res
from rate.rewrite.batch.api import BatchAPI
from rate.rewrite.batch.cache import ResponseCache
from rate.rewrite.batch.collect import BatchCollector
from rate.rewrite.batch.manifest import (
    CREATING,
    DONE,
    FAILED,
    PENDING,
    SUBMITTED,
    UPLOADED,
    UPLOADING,
    WRITTEN,
    Manifest,
    Run,
    RunLockedError,
    crash_point,
    run_lock,
)
from rate.rewrite.batch.requests import BatchLine, canonical_json, sha256_hex, split_lines
from rate.rewrite.options import OpenAIBatchOptions

log = logging.getLogger(__name__)


class BatchRunner(BatchCollector):
    """Drives the lines of one rewrite pass through upload, batch creation, polling and
    collection, recording every step in the run's manifest."""

    def __init__(
        self, options: OpenAIBatchOptions, work_dir: Path, cache: ResponseCache, endpoint: str
    ) -> None:
        self.options, self.work_dir, self.cache, self.endpoint = options, work_dir, cache, endpoint
        self._api: BatchAPI | None = None  # made on first use: cached runs need no key
        self.last_run: Path | None = None  # the manifest of the latest run, if one was needed
        self._sent: Counter[str] = Counter()  # submissions per custom_id in this call
        self._bodies: dict[str, dict] = {}  # request bodies of this call, by custom_id

    @property
    def api(self) -> BatchAPI:
        if self._api is None:
            self._api = BatchAPI(self.options, where="")
        return self._api

    def run_id(self, lines: list[BatchLine]) -> str:
        """The same endpoint, model and lines give the same run folder, so a rerun resumes."""
        what = {
            "endpoint": self.endpoint,
            "model": self.options.model,
            "lines": [[line.custom_id, line.cache_key] for line in lines],
        }
        return sha256_hex(canonical_json(what))[:20]

    def in_flight(self, manifest_path: Path) -> set[str]:
        """custom_ids an existing manifest has sent (or may have sent) to the API."""
        if not manifest_path.exists():
            return set()
        data = read_json(manifest_path)
        sent = {
            cid
            for f in data.get("files", {}).values()
            if f.get("state") != WRITTEN
            for cid in f.get("custom_ids", [])
        }
        return {
            cid
            for cid, line in data.get("lines", {}).items()
            if line.get("state") == SUBMITTED or (line.get("state") == WRITTEN and cid in sent)
        }

    def run(self, lines: list[BatchLine]) -> Run:
        run_id = self.run_id(lines)
        run_dir = self.work_dir / "runs" / run_id
        header = {
            "run_id": run_id,
            "model": self.options.model,
            "endpoint": self.endpoint,
            "completion_window": self.options.completion_window,
            "cache": str(self.cache.path),
        }
        self._bodies = {line.custom_id: line.body for line in lines}
        with run_lock(run_dir):
            run = Run(run_id, run_dir, Manifest.open(run_dir / "manifest.json", header))
            self.last_run = run.path
            self.api.where = (
                f"The run's state is in {run.path}; answers already received are cached in "
                f"{self.cache.path}, so running again resumes without paying for them twice"
            )
            self._sync(run, lines)
            run.manifest.save()
            log.info("openai_batch run %s: manifest %s", run_id, run.path)
            self._adopt_abandoned(run)
            self._sync(run, lines)  # adopted batches may have answered some of our lines
            self._sent.clear()
            self._drive(run)
        return run

    def _sync(self, run: Run, lines: list[BatchLine]) -> None:
        """Bring the manifest in line with the requests and the cache (at start, and after a
        crash: never-sent files are dropped, unpaid failures get another chance)."""
        m = run.manifest
        for line in lines:
            m.lines.setdefault(
                line.custom_id,
                {
                    "cache_key": line.cache_key,
                    "request_keys": list(line.request_keys),
                    "state": PENDING,
                    "file": None,
                    "batch_id": None,
                    "submits": 0,
                    "failure": None,
                },
            )
        for name, f in list(m.files.items()):
            if f["state"] == WRITTEN:  # never sent: rewritten with the current split limits
                Path(f["path"]).unlink(missing_ok=True)
                del m.files[name]
        for cid, line in m.lines.items():
            entry = self.cache.get(line["cache_key"])
            if entry is not None:
                if isinstance(entry.get("text"), str):
                    line.update(state=DONE, failure=None)
                else:
                    line.update(state=FAILED, failure=entry.get("failure"))
            elif line["state"] == WRITTEN and line["file"] not in m.files:
                line.update(state=PENDING, file=None)
            elif line["state"] == FAILED and not (line["failure"] or {}).get("paid"):
                line.update(state=PENDING)  # never billed: a new call tries again
            elif line["state"] == DONE:
                # Marked done but not in the cache (the cache file was removed?): collect the
                # batch again from its output file rather than pay again.
                batch = m.batches.get(line["batch_id"] or "")
                if batch is not None:
                    batch["collected"] = False
                    line.update(state=SUBMITTED)
                else:
                    log.warning("line %s: answer lost from the cache; it will be sent again", cid)
                    line.update(state=PENDING)

    def _drive(self, run: Run) -> None:
        """Submit, wait, collect and resubmit until every line is done or failed for good."""
        m, o = run.manifest, self.options
        while True:
            for name, f in list(m.files.items()):
                if f["state"] != SUBMITTED:  # ours to send, or left half-sent by a crash
                    self._submit_file(run, name)
            self._wait(run)
            for line in m.lines.values():
                failure = line["failure"] or {}
                if line["state"] == FAILED and failure.get("retryable"):
                    line["state"] = PENDING
            send = [
                cid
                for cid, line in m.lines.items()
                if line["state"] == PENDING and self._sent[cid] <= o.max_resubmits
            ]
            for cid, line in m.lines.items():
                if line["state"] == PENDING and cid not in send:
                    line["state"] = FAILED  # retries used up: its last failure stands
            if not send:
                m.save()
                return
            if any(self._sent[cid] for cid in send):
                log.warning(
                    "resubmitting %d request(s) that did not finish (%s)",
                    len(send),
                    res.class_counts(m.lines[c]["failure"] for c in send if m.lines[c]["failure"]),
                )
            self._write_files(run, send)

    def _write_files(self, run: Run, cids: list[str]) -> None:
        """Write the request files for ``cids`` (state ``written``), split under the limits."""
        m, o = run.manifest, self.options
        rounds = m.data.get("rounds", 0)
        m.data["rounds"] = rounds + 1
        lines = [
            BatchLine(cid, m.lines[cid]["cache_key"], self._body_of(run, cid), ()) for cid in cids
        ]
        for i, part in enumerate(split_lines(lines, o.max_requests_per_file, o.max_bytes_per_file)):
            name = f"r{rounds:02d}-f{i:03d}"
            path = run.run_dir / "requests" / f"{name}.jsonl"
            data = b"".join(line.jsonl() for line in part)
            atomic_write_bytes(path, data)
            m.files[name] = {
                "path": str(path),
                "custom_ids": [line.custom_id for line in part],
                "bytes": len(data),
                "sha256": sha256_hex(data.decode("utf-8")),
                "state": WRITTEN,
                "file_id": None,
                "intent_at": None,
                "batch_id": None,
            }
            for line in part:
                m.lines[line.custom_id].update(state=WRITTEN, file=name, failure=None)
        m.save()

    def _body_of(self, run: Run, cid: str) -> dict:
        body = self._bodies.get(cid)
        if body is None:
            raise RateError(f"internal error: no request body for {cid} in {run.path}")
        return body

    def _submit_file(self, run: Run, name: str) -> None:
        """Upload one request file and create its batch, recording each step around each call."""
        m = run.manifest
        f = m.files[name]
        path = Path(f["path"])
        if f["state"] == UPLOADING and not path.exists():
            raise RateError(
                f"request file {path} named in {run.path} is gone; it may have been uploaded "
                "but has no batch yet, so nothing was paid for: delete the manifest to start "
                "this run afresh"
            )
        if f["state"] in (WRITTEN, UPLOADING):
            f["state"] = UPLOADING  # intent: from here an upload may have happened
            m.save()
            f["file_id"] = self.api.upload(path, f"rate-{run.run_id}-{name}.jsonl")
            crash_point("after_upload")
            f["state"] = UPLOADED
            m.save()
            log.info(
                "uploaded %s (%d requests) as %s", path.name, len(f["custom_ids"]), f["file_id"]
            )
        tags = {"rate_run": run.run_id, "rate_file": name}
        batch = None
        if f["state"] == CREATING:
            # A create may have reached the API before the process died: look for it first.
            batch = self.api.find(f["file_id"], tags, since=float(f["intent_at"]))
            if batch is not None:
                log.info(
                    "re-attached to batch %s for %s (created before a restart)", batch["id"], name
                )
        if batch is None:
            f.update(state=CREATING, intent_at=time.time())
            m.save()
            batch = self.api.create(f["file_id"], tags, since=float(f["intent_at"]))
            crash_point("after_create")
            log.info(
                "created batch %s for %s (%d requests)", batch["id"], name, len(f["custom_ids"])
            )
        bid = batch["id"]
        m.batches[bid] = {
            "file": name,
            "input_file_id": f["file_id"],
            "status": None,
            "request_counts": None,
            "output_file_id": None,
            "error_file_id": None,
            "errors": None,
            "collected": False,
            "created_at": batch.get("created_at"),
            "updated_at": None,
        }
        self._update_batch(m, bid, batch)
        f.update(state=SUBMITTED, batch_id=bid)
        for cid in f["custom_ids"]:
            line = m.lines[cid]
            line.update(state=SUBMITTED, batch_id=bid, submits=line["submits"] + 1)
            self._sent[cid] += 1
        m.save()

    # -- batches of abandoned runs -----------------------------------------------------------

    def _adopt_abandoned(self, run: Run) -> None:
        """Wait for and collect the batches of other, abandoned runs that hold lines we need,
        so that a changed request set (say, more examples) does not buy them again."""
        wanted = {
            line["cache_key"]
            for line in run.manifest.lines.values()
            if line["state"] in (PENDING, WRITTEN)
        }
        if not wanted:
            return
        for path in sorted((self.work_dir / "runs").glob("*/manifest.json")):
            if path.parent == run.run_dir:
                continue
            try:
                data = read_json(path)
            except RateError:
                continue
            live = [
                bid
                for bid, b in data.get("batches", {}).items()
                if not b.get("collected")
                and any(
                    data["lines"].get(cid, {}).get("cache_key") in wanted
                    for cid in data["files"].get(b.get("file"), {}).get("custom_ids", [])
                )
            ]
            if not live:
                continue
            try:
                with run_lock(path.parent):
                    other = Run(path.parent.name, path.parent, Manifest.open(path, {}))
                    log.info(
                        "waiting for %d batch(es) of the earlier run %s: they hold requests this "
                        "run needs",
                        len(live),
                        other.run_id,
                    )
                    self._wait(other)
            except RunLockedError:
                log.warning(
                    "run %s is active in another process and holds requests this run needs; "
                    "they may be bought twice",
                    path.parent.name,
                )
        self.cache.load()
