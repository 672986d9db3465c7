"""Polling batches until they end and collecting their answers: output and error files
downloaded (a local copy kept), answers into the response cache first, then the manifest."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from typing import Any

from tqdm.auto import tqdm

from rate.io import atomic_write_bytes
from rate.progress import enabled as progress_enabled
from rate.rewrite.batch import results as res
from rate.rewrite.batch.api import BatchAPI
from rate.rewrite.batch.cache import ResponseCache
from rate.rewrite.batch.manifest import (
    DONE,
    FAILED,
    STATUSES,
    SUBMITTED,
    TERMINAL,
    Manifest,
    Run,
    crash_point,
)
from rate.rewrite.options import OpenAIBatchOptions

log = logging.getLogger(__name__)


class BatchCollector:
    """Waiting for a run's batches and recording their outcomes (the runner's second half)."""

    options: OpenAIBatchOptions
    cache: ResponseCache
    api: BatchAPI

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

    def _wait(self, run: Run) -> None:
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

    def _result_file(self, run: Run, bid: str, kind: str) -> bytes | None:
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
        crash_point("after_download")
        return data

    def _collect(self, run: Run, bid: str) -> None:
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
