"""The ``openai_batch`` rewriter: OpenAI's Batch API, which never loses a row and never pays twice.

One :meth:`OpenAIBatchRewriter.rewrite` call (a whole pass of create_dataset) goes:

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
import os
import random
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from rate.errors import RateError
from rate.io import atomic_write_bytes, atomic_write_json, read_json
from rate.progress import enabled as progress_enabled
from rate.rewrite.base import Rewriter, RewriteRequest
from rate.rewrite.batch import results as res
from rate.rewrite.batch.api import BatchAPI
from rate.rewrite.batch.cache import ResponseCache
from rate.rewrite.batch.estimate import estimate
from rate.rewrite.batch.manifest import (
    CREATING,
    DONE,
    FAILED,
    PENDING,
    STATUSES,
    SUBMITTED,
    TERMINAL,
    UPLOADED,
    UPLOADING,
    WRITTEN,
    Manifest,
    RunLockedError,
    run_lock,
)
from rate.rewrite.batch.options import OpenAIBatchOptions
from rate.rewrite.batch.requests import (
    BatchLine,
    batch_lines,
    canonical_json,
    sha256_hex,
    split_lines,
)
from rate.rewrite.openai_chat import _safe_url

log = logging.getLogger(__name__)

CRASH_ENV = "RATE_OPENAI_BATCH_TEST_CRASH_AT"
CRASH_EXIT_CODE = 75
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_HINTS = {
    res.RATE_LIMIT: "the API's batch rate or token limits were hit: wait, then run again",
    res.SERVER: "the API had server errors: run again later",
    res.UNFINISHED: "batches ended (expired or cancelled) before reaching them: run again",
    res.INVALID: "the API rejected the request: check rewriter.model and the sampling options",
    res.CONTENT_FILTER: (
        "the content filter or the model refused: reword the template's rewrite prompt (answers "
        "that were billed are cached and are not bought again; delete their lines from the "
        "cache file to buy them again)"
    ),
    res.BATCH_FAILED: "a batch failed validation: see the reason above",
    res.OTHER: "see the messages above",
}


def _crash_point(name: str) -> None:
    """The test hook: exit here, without any clean-up, if CRASH_ENV names this point."""
    if os.environ.get(CRASH_ENV) == name:
        logging.shutdown()
        os._exit(CRASH_EXIT_CODE)


@dataclass
class _Run:
    """One run's folder, manifest and id."""

    run_id: str
    run_dir: Path
    manifest: Manifest

    @property
    def path(self) -> Path:
        return self.manifest.path


class OpenAIBatchRewriter(Rewriter):
    """Rewrites through OpenAI's Batch API; blocking, resumable, cached."""

    name = "openai_batch"
    # One call per pass: one set of batches and one wait, not one per rewrites.batch_size chunk.
    whole_pass = True

    def __init__(self, options: OpenAIBatchOptions, seed: int) -> None:
        self.options, self.seed = options, seed
        self.work_dir = options.resolved_work_dir()
        self.cache = ResponseCache(self.work_dir / "cache" / "responses.jsonl")
        base = options.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.endpoint = _safe_url(base.rstrip("/"))
        self._api: BatchAPI | None = None  # made on first use: cached runs need no key
        self.last_run: Path | None = None  # the manifest of the latest run, if one was needed
        self._sent: Counter[str] = Counter()  # submissions per custom_id in this call
        self._bodies: dict[str, dict] = {}  # request bodies of this call, by custom_id

    # -- public ------------------------------------------------------------------------------

    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        """One output per request, in request order; blocks until every batch has ended."""
        if not requests:
            return []
        lines, keys = batch_lines(self.options, requests)
        self.cache.load()
        todo = [line for line in lines if line.cache_key not in self.cache]
        run: _Run | None = None
        log.info(
            "openai_batch: %d requests, %d distinct, %d answered from the cache",
            len(requests),
            len(lines),
            len(lines) - len(todo),
        )
        if todo:
            run = self._run(lines)
        return self._outputs(requests, keys, run)

    def plan(self, requests: list[RewriteRequest], prices: dict) -> dict:
        """The dry run: write the request files a real run would upload now and estimate tokens
        and cost; no API call. -> {requests, lines, cached, in_flight, to_submit, files, paths,
        file_details, input_tokens, output_tokens_estimate, cost_usd, price, notes, ...}"""
        lines, _ = batch_lines(self.options, requests)
        self.cache.load()
        run_id = self._run_id(lines)
        run_dir = self.work_dir / "runs" / run_id
        in_flight = self._in_flight(run_dir / "manifest.json")
        todo = [
            line
            for line in lines
            if line.cache_key not in self.cache and line.custom_id not in in_flight
        ]
        files = split_lines(
            todo, self.options.max_requests_per_file, self.options.max_bytes_per_file
        )
        plan_dir = run_dir / "dry_run"
        details = []
        for i, part in enumerate(files):
            path = plan_dir / f"r00-f{i:03d}.jsonl"
            data = b"".join(line.jsonl() for line in part)
            atomic_write_bytes(path, data)
            details.append({"path": str(path), "requests": len(part), "bytes": len(data)})
        text_of = {r.key: r.text for r in requests}
        est = estimate(
            [(line.body["messages"], text_of[line.request_keys[0]]) for line in todo],
            self.options.model,
            self.options.max_tokens,
            prices,
        )
        plan = {
            "backend": self.name,
            "model": self.options.model,
            "endpoint": self.endpoint,
            "requests": len(requests),
            "lines": len(lines),
            "cached": sum(1 for line in lines if line.cache_key in self.cache),
            "in_flight": sum(1 for line in lines if line.custom_id in in_flight),
            "to_submit": len(todo),
            "files": len(details),
            "paths": [d["path"] for d in details],
            "file_details": details,
            **est,
            "work_dir": str(self.work_dir),
            "run_dir": str(run_dir),
        }
        atomic_write_json(plan_dir / "plan.json", plan)
        log.info(
            "dry run: %d of %d requests to submit in %d file(s) under %s; about %d input and %d "
            "output tokens; cost %s",
            len(todo),
            len(requests),
            len(details),
            plan_dir,
            est["input_tokens"],
            est["output_tokens_estimate"],
            "unknown (no price)" if est["cost_usd"] is None else f"${est['cost_usd']:.4f}",
        )
        return plan

    def describe(self) -> dict:
        o = self.options
        return {
            "backend": self.name,
            "model": o.model,
            "base_url": self.endpoint,
            "temperature": o.temperature,
            "max_tokens": o.max_tokens,
            "top_p": o.top_p,
            "system": o.system,
            "completion_window": o.completion_window,
            "work_dir": str(self.work_dir),
            "seed": self.seed,  # not sent: the Batch API lines carry no seed
        }

    # -- the run -----------------------------------------------------------------------------

    @property
    def api(self) -> BatchAPI:
        if self._api is None:
            self._api = BatchAPI(self.options, where="")
        return self._api

    def _run_id(self, lines: list[BatchLine]) -> str:
        """The same endpoint, model and lines give the same run folder, so a rerun resumes."""
        what = {
            "endpoint": self.endpoint,
            "model": self.options.model,
            "lines": [[line.custom_id, line.cache_key] for line in lines],
        }
        return sha256_hex(canonical_json(what))[:20]

    def _in_flight(self, manifest_path: Path) -> set[str]:
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

    def _run(self, lines: list[BatchLine]) -> _Run:
        run_id = self._run_id(lines)
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
            run = _Run(run_id, run_dir, Manifest.open(run_dir / "manifest.json", header))
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

    def _sync(self, run: _Run, lines: list[BatchLine]) -> None:
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

    def _drive(self, run: _Run) -> None:
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
                    _class_counts(m.lines[c]["failure"] for c in send if m.lines[c]["failure"]),
                )
            self._write_files(run, send)

    def _write_files(self, run: _Run, cids: list[str]) -> None:
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

    def _body_of(self, run: _Run, cid: str) -> dict:
        body = self._bodies.get(cid)
        if body is None:
            raise RateError(f"internal error: no request body for {cid} in {run.path}")
        return body

    def _submit_file(self, run: _Run, name: str) -> None:
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
            _crash_point("after_upload")
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
            _crash_point("after_create")
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

    @staticmethod
    def _update_batch(m: Manifest, bid: str, batch: dict[str, Any]) -> bool:
        """Copy what we track of ``batch`` into the manifest; -> whether anything changed."""
        record = m.batches[bid]
        errors = batch.get("errors")
        new = {
            "status": batch.get("status"),
            "request_counts": batch.get("request_counts"),
            "output_file_id": batch.get("output_file_id"),
            "error_file_id": batch.get("error_file_id"),
            "errors": (errors or {}).get("data") if isinstance(errors, dict) else errors,
        }
        changed = any(record.get(k) != v for k, v in new.items())
        if changed:
            record.update(new, updated_at=time.time())
        return changed

    def _wait(self, run: _Run) -> None:
        """Poll every uncollected batch, with back-off and jitter, collecting each that ends."""
        m, o = run.manifest, self.options
        open_ = [bid for bid, b in m.batches.items() if not b["collected"]]
        if not open_:
            return
        watched = list(open_)
        total = sum(len(m.files[m.batches[bid]["file"]]["custom_ids"]) for bid in open_)
        bar = tqdm(
            total=total,
            desc=f"batch rewrite ({o.model})",
            unit="req",
            disable=None if progress_enabled() else True,
            leave=False,
        )
        delay = o.poll_initial_s
        try:
            first = True
            while open_:
                if not first:
                    time.sleep(delay * random.uniform(0.8, 1.2))
                    delay = min(o.poll_max_s, delay * 1.5)
                first = False
                for bid in open_:
                    if m.batches[bid]["status"] not in TERMINAL:
                        batch = self.api.retrieve(bid)
                        if self._update_batch(m, bid, batch):
                            m.save()
                            self._log_status(m, bid)
                    if m.batches[bid]["status"] in TERMINAL:
                        self._collect(run, bid)
                done = failed = 0
                for bid in watched:
                    counts = m.batches[bid]["request_counts"] or {}
                    done += counts.get("completed") or 0
                    failed += counts.get("failed") or 0
                bar.n = min(total, done + failed)
                bar.set_postfix(completed=done, failed=failed, refresh=False)
                bar.refresh()
                open_ = [bid for bid in open_ if not m.batches[bid]["collected"]]
        finally:
            bar.close()

    def _log_status(self, m: Manifest, bid: str) -> None:
        b = m.batches[bid]
        counts = b["request_counts"] or {}
        status = b["status"]
        if status not in STATUSES:
            log.warning("batch %s: unknown status %r; still polling", bid, status)
        log.info(
            "batch %s (%s): %s, %s of %s completed, %s failed",
            bid,
            b["file"],
            status,
            counts.get("completed", "?"),
            counts.get("total", "?"),
            counts.get("failed", "?"),
        )

    def _result_file(self, run: _Run, bid: str, kind: str) -> bytes | None:
        """A batch's output or error file: the local copy if a crash left one, else downloaded
        (and kept, so that collecting again never needs the API)."""
        file_id = run.manifest.batches[bid][f"{kind}_file_id"]
        if not file_id:
            return None
        local = run.run_dir / "results" / f"{bid}.{kind}.jsonl"
        if local.exists():
            return local.read_bytes()
        data = self.api.content(file_id)
        atomic_write_bytes(local, data)
        _crash_point("after_download")
        return data

    def _collect(self, run: _Run, bid: str) -> None:
        """Record the outcome of every line of an ended batch: answers into the cache first,
        then the manifest (so a crash in between only means collecting again)."""
        m = run.manifest
        b = m.batches[bid]
        status = b["status"]
        found: dict[str, res.LineResult] = {}
        for kind in ("output", "error"):
            data = self._result_file(run, bid, kind)
            if data is not None:
                for result in res.parse_file(data, f"batch {bid} {kind} file"):
                    # An answer wins over an error for the same line (never seen, but safe).
                    if result.custom_id not in found or result.text is not None:
                        found[result.custom_id] = result
        cls, reason = res.BATCH_FAILED, ""
        if status == "failed":
            cls, reason = res.batch_failure(b["errors"])
            log.error("batch %s (%s) failed: %s", bid, b["file"], reason)
        entries, outcome = [], Counter()
        for cid in m.files[b["file"]]["custom_ids"]:
            line = m.lines[cid]
            if line["state"] != SUBMITTED or line["batch_id"] != bid:
                continue  # settled already (e.g. a duplicate collection)
            result = found.get(cid)
            if result is not None and result.text is not None:
                entries.append(self._entry(line, cid, bid, result))
                line.update(state=DONE, failure=None)
                outcome["done"] += 1
                continue
            if result is not None and result.failure is not None:
                failure = result.failure
                if result.paid:  # billed without text: cached so it is never bought again
                    entries.append(self._entry(line, cid, bid, result))
            elif status == "failed":
                failure = res.failure(cls, f"batch {bid} failed: {reason}")
            else:
                failure = res.failure(
                    res.UNFINISHED, f"batch {bid} ended {status!r} without an answer for it"
                )
            line.update(state=FAILED, failure=failure)
            outcome[failure["class"]] += 1
        self.cache.put(entries)
        b["collected"] = True
        m.save()
        log.info("batch %s (%s) %s: %s", bid, b["file"], status, dict(outcome) or "nothing new")

    def _entry(self, line: dict, cid: str, bid: str, result: res.LineResult) -> dict:
        return {
            "key": line["cache_key"],
            "text": result.text,
            "finish_reason": result.finish_reason,
            "failure": result.failure,
            "model": self.options.model,
            "custom_id": cid,
            "batch_id": bid,
        }

    # -- batches of abandoned runs -----------------------------------------------------------

    def _adopt_abandoned(self, run: _Run) -> None:
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
                    other = _Run(path.parent.name, path.parent, Manifest.open(path, {}))
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

    # -- outputs -----------------------------------------------------------------------------

    def _outputs(
        self, requests: list[RewriteRequest], keys: list[str], run: _Run | None
    ) -> list[str]:
        outputs: list[str] = []
        missing: list[tuple[RewriteRequest, dict | None]] = []
        failures = {}
        if run is not None:
            failures = {line["cache_key"]: line["failure"] for line in run.manifest.lines.values()}
        truncated = 0
        for req, key in zip(requests, keys, strict=True):
            entry = self.cache.get(key)
            if entry is not None and isinstance(entry.get("text"), str):
                outputs.append(entry["text"])
                truncated += entry.get("finish_reason") == "length"
            else:
                failure = (entry or {}).get("failure") or failures.get(key)
                missing.append((req, failure))
        if truncated:
            log.warning(
                "%d of %d rewrites stopped at max_tokens=%d (finish_reason 'length'); raise "
                "rewriter.max_tokens if rewrites are cut short",
                truncated,
                len(requests),
                self.options.max_tokens,
            )
        if missing:
            raise self._missing_error(requests, missing, run)
        return outputs

    def _missing_error(
        self,
        requests: list[RewriteRequest],
        missing: list[tuple[RewriteRequest, dict | None]],
        run: _Run | None,
    ) -> RateError:
        by_class = Counter((f or {}).get("class", res.OTHER) for _, f in missing)
        examples = []
        for cls in by_class:
            req, f = next((r, f) for r, f in missing if (f or {}).get("class", res.OTHER) == cls)
            examples.append(f"{cls}, e.g. {req.key}: {(f or {}).get('message', 'no answer')}")
        hints = "; ".join(f"{cls}: {_HINTS.get(cls, '')}" for cls in by_class)
        where = (
            f"The run's state is in {run.path}"
            if run is not None
            else "Every one of them was answered from the cache"
        )
        return RateError(
            f"the openai_batch rewriter has no rewrite for {len(missing)} of {len(requests)} "
            f"requests ({_class_counts(f for _, f in missing)}). {' | '.join(examples)}. "
            f"What to do: {hints}. {where}; finished answers are cached in {self.cache.path}, "
            "so running create_dataset again resumes and pays only for what is missing"
        )


def _class_counts(failures: Iterable[dict | None]) -> str:
    """'3 rate_limit, 1 invalid_request': failures counted by class."""
    counts = Counter((f or {}).get("class", res.OTHER) for f in failures)
    return ", ".join(f"{n} {cls}" for cls, n in counts.most_common()) or "no failure recorded"


def build_openai_batch_rewriter(
    options: OpenAIBatchOptions, template, seed: int
) -> OpenAIBatchRewriter:
    """The rewriter for a dataset template; the template's prompt arrives in each request."""
    return OpenAIBatchRewriter(options, seed)
