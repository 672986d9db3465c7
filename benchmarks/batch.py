"""The Batch API benchmark: preparing a full run's requests, and resuming a finished run.

- *prepare*: 50,000 IMDB-sized rewrite requests turned into Batch API lines and written as
  request files split under the limits (the dry run's ``plan``: no API call);
- *resume*: ``rewrite`` of the same 50,000 requests once every answer is in the response cache,
  with the endpoint pointed at a closed local port, so that any API call would fail: the run
  must finish from the cache alone.
"""

from __future__ import annotations

import random
import socket
import tempfile
import time
from pathlib import Path

from rate.rewrite.base import RewriteRequest
from rate.rewrite.batch.requests import batch_lines
from rate.rewrite.batch.rewriter import build_openai_batch_rewriter
from rate.rewrite.options import OpenAIBatchOptions


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_batch(n: int = 50_000) -> dict:

    rng = random.Random(0)
    words = ["the", "film", "was", "great", "awful", "plot", "actor", "scene", "fun", "boring"]
    requests = []
    for i in range(n):
        text = " ".join(rng.choices(words, k=230))
        requests.append(
            RewriteRequest(
                f"row{i}/rewrite",
                text,
                i % 2 == 0,
                f"{text}\n\n[Adjust this review so it has a positive sentiment, but change "
                "*nothing* else.]",
            )
        )
    with tempfile.TemporaryDirectory(prefix="rate-bench-batch-") as tmp:
        options = OpenAIBatchOptions(
            model="gpt-4o-2024-08-06",
            base_url=f"http://127.0.0.1:{_closed_port()}/v1",
            work_dir=str(Path(tmp) / "batch_api"),
            max_api_retries=0,
        )
        rewriter = build_openai_batch_rewriter(options, None, 0)
        prices = {"gpt-4o-2024-08-06": {"input_per_1m": 2.5, "output_per_1m": 10.0}}
        t0 = time.perf_counter()
        plan = rewriter.plan(requests, prices)
        prepare_s = time.perf_counter() - t0
        # Fill the cache as a finished run would have, then resume against a dead endpoint.
        lines, _ = batch_lines(options, requests)
        rewriter.cache.put(
            {"key": line.cache_key, "text": f"answer {i}", "failure": None, "model": options.model,
             "custom_id": line.custom_id, "batch_id": "batch_bench"}
            for i, line in enumerate(lines)
        )  # fmt: skip
        fresh = build_openai_batch_rewriter(options, None, 0)
        t0 = time.perf_counter()
        outputs = fresh.rewrite(requests)
        resume_s = time.perf_counter() - t0
        assert len(outputs) == n and fresh.last_run is None  # no run was needed: no API call
    return {
        "batch_n": n,
        "batch_prepare_s": prepare_s,
        "batch_files": plan["files"],
        "batch_mb": sum(f["bytes"] for f in plan["file_details"]) / 1e6,
        "batch_resume_s": resume_s,
        "batch_resume_api_calls": 0,
    }


def render_batch(r: dict, date: str | None) -> list[str]:
    return [
        "## Batch API (issue: OpenAI Batch API)",
        "",
        f"Measured {date}.",
        "",
        "| what | measured | goal |",
        "|---|---|---|",
        f"| {r['batch_n']:,} IMDB-sized requests prepared: Batch API lines, split under the "
        f"limits and written ({r['batch_files']} files, {r['batch_mb']:.0f} MB; the dry run) | "
        f"{r['batch_prepare_s']:.2f} s | < 3 s |",
        f"| resuming a finished run of {r['batch_n']:,} requests (every answer cached; the "
        f"endpoint is a closed port, so any call would fail) | {r['batch_resume_s']:.2f} s, "
        f"{r['batch_resume_api_calls']} API calls | 0 API calls |",
        "",
    ]
