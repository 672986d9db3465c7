"""The ``openai_batch`` rewriter: OpenAI's Batch API, which never loses a row and never pays twice.

One :meth:`OpenAIBatchRewriter.rewrite` call is a whole pass of create_dataset: every request
becomes a batch line (:mod:`.requests`); lines whose answer is in the response cache
(:mod:`.cache`) are answered from it with no API call; the rest go through the crash-safe
state machine of :mod:`.runner`. If rows are still missing at the end, a
:class:`~rate.errors.RateError` says how many, why (by class), where the manifest is, and that
a rerun resumes. :meth:`OpenAIBatchRewriter.plan` is the dry run: the request files and an
estimate of tokens and cost, with no API call.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path

from rate.errors import RateError
from rate.io import atomic_write_bytes, atomic_write_json
from rate.rewrite.base import Rewriter, RewriteRequest
from rate.rewrite.batch import results as res
from rate.rewrite.batch.cache import ResponseCache
from rate.rewrite.batch.estimate import estimate
from rate.rewrite.batch.manifest import Run
from rate.rewrite.batch.requests import BatchLine, batch_lines, split_lines
from rate.rewrite.batch.runner import BatchRunner
from rate.rewrite.options import (
    OpenAIBatchOptions,
    length_limit_message,
    request_record,
    safe_url,
)

log = logging.getLogger(__name__)

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
        self.endpoint = safe_url(base.rstrip("/"))
        self.runner = BatchRunner(options, self.work_dir, self.cache, self.endpoint)
        self._cut: set[str] = set()  # keys of the latest outputs that stopped at a length limit

    @property
    def last_run(self) -> Path | None:
        """The manifest of the latest run, if one was needed."""
        return self.runner.last_run

    def _run_id(self, lines: list[BatchLine]) -> str:
        """The id (and folder name) of the run these lines make."""
        return self.runner.run_id(lines)

    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        """One output per request, in request order; blocks until every batch has ended."""
        if not requests:
            return []
        lines, keys = batch_lines(self.options, requests, self.seed)
        self.cache.load()
        todo = [line for line in lines if line.cache_key not in self.cache]
        run: Run | None = None
        log.info(
            "openai_batch: %d requests, %d distinct, %d answered from the cache",
            len(requests),
            len(lines),
            len(lines) - len(todo),
        )
        if todo:
            run = self.runner.run(lines)
        return self._outputs(requests, keys, run)

    def plan(self, requests: list[RewriteRequest], prices: dict) -> dict:
        """The dry run: write the request files a real run would upload now and estimate tokens
        and cost; no API call. -> {requests, lines, cached, in_flight, to_submit, files, paths,
        file_details, input_tokens, output_tokens_estimate, cost_usd, price, notes, ...}"""
        lines, _ = batch_lines(self.options, requests, self.seed)
        self.cache.load()
        run_id = self.runner.run_id(lines)
        run_dir = self.work_dir / "runs" / run_id
        in_flight = self.runner.in_flight(run_dir / "manifest.json")
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
            self.options.max_completion_tokens or self.options.max_tokens,
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
        return {
            "backend": self.name,
            **request_record(self.options, self.endpoint),
            "completion_window": self.options.completion_window,
            "work_dir": str(self.work_dir),
            # Sent (mixed with each request's content) only with send_seed: true.
            "seed": self.seed,
        }

    def stopped_at_limit(self, requests: list[RewriteRequest]) -> list[bool]:
        return [req.key in self._cut for req in requests]

    # -- outputs -----------------------------------------------------------------------------

    def _outputs(
        self, requests: list[RewriteRequest], keys: list[str], run: Run | None
    ) -> list[str]:
        outputs: list[str] = []
        missing: list[tuple[RewriteRequest, dict | None]] = []
        failures = {}
        if run is not None:
            failures = {line["cache_key"]: line["failure"] for line in run.manifest.lines.values()}
        self._cut = set()
        for req, key in zip(requests, keys, strict=True):
            entry = self.cache.get(key)
            if entry is not None and isinstance(entry.get("text"), str):
                outputs.append(entry["text"])
                if entry.get("finish_reason") == "length":
                    self._cut.add(req.key)
            else:
                failure = (entry or {}).get("failure") or failures.get(key)
                missing.append((req, failure))
        if self._cut:
            log.warning(length_limit_message(len(self._cut), len(requests), self.options))
        if missing:
            raise self._missing_error(requests, missing, run)
        return outputs

    def _missing_error(
        self,
        requests: list[RewriteRequest],
        missing: list[tuple[RewriteRequest, dict | None]],
        run: Run | None,
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
            f"requests ({res.class_counts(f for _, f in missing)}). {' | '.join(examples)}. "
            f"What to do: {hints}. {where}; finished answers are cached in {self.cache.path}, "
            "so running create_dataset again resumes and pays only for what is missing"
        )


def build_openai_batch_rewriter(
    options: OpenAIBatchOptions, template, seed: int, rule=None
) -> OpenAIBatchRewriter:
    """The rewriter for a dataset template; the template's prompt arrives in each request."""
    return OpenAIBatchRewriter(options, seed)
