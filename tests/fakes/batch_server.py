"""The OpenAI Files and Batches API, faked over real HTTP on top of :class:`FakeOpenAIServer`.

Endpoints: ``POST /v1/files`` (multipart, as the SDK uploads), ``GET /v1/files/{id}``,
``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``GET /v1/batches`` (newest first, one page) and ``POST /v1/batches/{id}/cancel``.

A batch moves one step on each ``GET /v1/batches/{id}``: validating -> in_progress ->
finalizing -> completed (or failed at validation, expired, cancelling -> cancelled). Its lines
are answered when it leaves in_progress, by the server's deterministic model
(:meth:`FakeOpenAIServer.reply_to`), into an output file and an error file in the API's formats,
with request_counts. While :attr:`FakeBatchServer.hold` is set, batches stay in_progress.

What it counts: :attr:`processed` (custom_id -> times a batch processed the line), :attr:`paid`
(custom_id -> times it was answered with HTTP 200, which is what OpenAI bills),
:attr:`created` (batch ids in creation order), :attr:`uploads` (file ids uploaded), and the
base server's calls per path.

Faults on demand:

* ``plan_batches({"outcome": "expired", "finished": 3}, ...)``: the next created batches end
  ``expired`` or ``cancelled`` after answering ``finished`` lines (default half), or ``failed``
  at validation with ``errors`` (default: one invalid_file error); ``in_progress_polls`` sets
  how many polls a batch stays in_progress (default 1);
* ``fail_lines({custom_id: ["rate_limit_exceeded", ...]})``: the next processings of that line
  fail with these classes, one per processing (``rate_limit_exceeded``, ``invalid_request``,
  ``content_filter``, ``server_error``, or ``refusal``, a billed 200 answer without text, or
  ``length``, a billed 200 answer cut in half with finish_reason "length");
* the base server's ``add_faults`` per path for API calls: ``{"status": 429, "retry_after":
  0}``, ``{"status": 500}``, ``{"drop": True}``; and on ``/v1/batches``, ``{"lost_reply":
  True}``: the batch is created but the client gets a 502.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, deque
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer, ReceivedRequest, Reply, error_reply

ENDPOINT = "/v1/chat/completions"
LINE_ERRORS = {
    "rate_limit_exceeded": (
        429,
        {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "code": "rate_limit_exceeded",
        },
    ),
    "invalid_request": (
        400,
        {
            "message": "Invalid value for 'temperature'",
            "type": "invalid_request_error",
            "code": "invalid_value",
        },
    ),
    "content_filter": (
        400,
        {
            "message": "The prompt was flagged by the content filter",
            "type": "invalid_request_error",
            "code": "content_filter",
        },
    ),
    "server_error": (
        500,
        {"message": "The server had an error", "type": "server_error", "code": "server_error"},
    ),
}
UNFINISHED_MESSAGES = {
    "batch_expired": "This request could not be executed before the completion window expired.",
    "batch_cancelled": "This request was not executed because the batch was cancelled.",
}


def parse_multipart(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a multipart/form-data body: name -> (filename, data)."""
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    assert match, f"no boundary in {content_type!r}"
    delimiter = b"--" + match.group(1).encode()
    parts: dict[str, tuple[str | None, bytes]] = {}
    for chunk in body.split(delimiter)[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk.removeprefix(b"\r\n").removesuffix(b"\r\n")
        head, _, data = chunk.partition(b"\r\n\r\n")
        text = head.decode("utf-8", "replace")
        name = re.search(r'name="([^"]*)"', text)
        filename = re.search(r'filename="([^"]*)"', text)
        if name:
            parts[name.group(1)] = (filename.group(1) if filename else None, data)
    return parts


class FakeBatchServer(FakeOpenAIServer):
    """FakeOpenAIServer with the Files and Batches endpoints and batch-level faults."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.files: dict[str, dict[str, Any]] = {}  # id -> {"meta": FileObject, "data": bytes}
        self.batches: dict[str, dict[str, Any]] = {}  # id -> Batch object as the API shows it
        self._internal: dict[str, dict[str, Any]] = {}  # id -> plan, lines, polls left
        self.processed: Counter[str] = Counter()
        self.paid: Counter[str] = Counter()
        self.created: list[str] = []
        self.uploads: list[str] = []
        self.hold = False
        self._plans: deque[dict[str, Any]] = deque()
        self._line_faults: dict[str, deque[str]] = {}
        self._state_lock = threading.RLock()
        self.route("POST", "/v1/files", self._upload)
        self.route_prefix("GET", "/v1/files/", self._get_file)
        self.route("POST", "/v1/batches", self._create)
        self.route("GET", "/v1/batches", self._list)
        self.route_prefix("GET", "/v1/batches/", self._retrieve)
        self.route_prefix("POST", "/v1/batches/", self._cancel)

    # -- set-up by tests ---------------------------------------------------------------------

    def plan_batches(self, *plans: dict[str, Any]) -> None:
        """Outcomes for the next created batches, one each (then: completed)."""
        with self._state_lock:
            self._plans.extend(dict(p) for p in plans)

    def fail_lines(self, faults: dict[str, list[str]]) -> None:
        """Error classes for the next processings of these custom_ids, one per processing."""
        with self._state_lock:
            for cid, classes in faults.items():
                self._line_faults.setdefault(cid, deque()).extend(classes)

    # -- what tests read ---------------------------------------------------------------------

    def api_calls(self) -> int:
        """Every request the server received (any path)."""
        return len(self.requests)

    def twice_paid(self) -> dict[str, int]:
        """custom_ids billed more than once (must stay empty)."""
        return {cid: n for cid, n in self.paid.items() if n > 1}

    # -- files -------------------------------------------------------------------------------

    def _store_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        file_id = self.next_id("file")
        meta = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        with self._state_lock:
            self.files[file_id] = {"meta": meta, "data": data}
        return meta

    def _upload(self, req: ReceivedRequest) -> Reply:
        body = req.body if isinstance(req.body, bytes) else b""
        parts = parse_multipart(body, req.headers.get("content-type", ""))
        if "file" not in parts or "purpose" not in parts:
            return error_reply(400, "'file' and 'purpose' are required")
        purpose = parts["purpose"][1].decode()
        if purpose != "batch":
            return error_reply(400, f"purpose must be 'batch' here, got {purpose!r}")
        filename, data = parts["file"]
        meta = self._store_file(data, filename or "upload.jsonl", purpose)
        with self._state_lock:
            self.uploads.append(meta["id"])
        return Reply(200, meta)

    def _get_file(self, req: ReceivedRequest) -> Reply:
        rest = req.path[len("/v1/files/") :]
        file_id, _, tail = rest.partition("/")
        stored = self.files.get(file_id)
        if stored is None:
            return error_reply(404, f"No such File object: {file_id}")
        if tail == "content":
            return Reply(200, raw=stored["data"], content_type="application/octet-stream")
        if tail:
            return error_reply(404, f"Unknown request URL: GET {req.path}")
        return Reply(200, stored["meta"])

    # -- batches -----------------------------------------------------------------------------

    def _create(self, req: ReceivedRequest) -> Reply:
        body = req.body if isinstance(req.body, dict) else {}
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            return error_reply(400, f"Invalid 'input_file_id': {file_id!r}")
        if body.get("endpoint") != ENDPOINT:
            return error_reply(400, f"Invalid endpoint {body.get('endpoint')!r}")
        if body.get("completion_window") != "24h":
            return error_reply(400, "completion_window must be 24h")
        batch_id = self.next_id("batch")
        with self._state_lock:
            plan = self._plans.popleft() if self._plans else {}
            batch = {
                "id": batch_id,
                "object": "batch",
                "endpoint": ENDPOINT,
                "errors": None,
                "input_file_id": file_id,
                "completion_window": "24h",
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "metadata": body.get("metadata"),
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
            }
            self.batches[batch_id] = batch
            self._internal[batch_id] = {
                "plan": plan,
                "polls": int(plan.get("in_progress_polls", 1)),
            }
            self.created.append(batch_id)
        if req.fault.get("lost_reply"):
            # The batch exists, but the client never learns it: a gateway error on the way back.
            return error_reply(502, "Bad gateway", "server_error")
        return Reply(200, batch)

    def _list(self, req: ReceivedRequest) -> Reply:
        with self._state_lock:
            data = [self.batches[b] for b in reversed(self.created)]
        return Reply(
            200,
            {
                "object": "list",
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": False,
            },
        )

    def _batch_of(self, req: ReceivedRequest) -> tuple[str, str]:
        rest = req.path[len("/v1/batches/") :]
        batch_id, _, tail = rest.partition("/")
        return batch_id, tail

    def _retrieve(self, req: ReceivedRequest) -> Reply:
        batch_id, tail = self._batch_of(req)
        if tail or batch_id not in self.batches:
            return error_reply(404, f"No batch found with id '{batch_id}'")
        with self._state_lock:
            self._advance(batch_id)
            return Reply(200, json.loads(json.dumps(self.batches[batch_id])))

    def _cancel(self, req: ReceivedRequest) -> Reply:
        batch_id, tail = self._batch_of(req)
        if tail != "cancel" or batch_id not in self.batches:
            return error_reply(404, f"No batch found with id '{batch_id}'")
        with self._state_lock:
            batch = self.batches[batch_id]
            if batch["status"] in ("validating", "in_progress", "finalizing"):
                self._internal[batch_id]["plan"]["outcome"] = "cancelled"
                batch["status"] = "cancelling"
            return Reply(200, batch)

    # -- processing --------------------------------------------------------------------------

    def _advance(self, batch_id: str) -> None:
        """One step of the batch's life, taken on each poll."""
        batch, internal = self.batches[batch_id], self._internal[batch_id]
        plan = internal["plan"]
        outcome = plan.get("outcome", "completed")
        status = batch["status"]
        if status == "validating":
            lines, problems = self._validate(batch["input_file_id"])
            internal["lines"] = lines
            batch["request_counts"]["total"] = len(lines)
            if outcome == "failed" or problems:
                batch["status"] = "failed"
                batch["failed_at"] = int(time.time())
                errors = (
                    plan.get("errors")
                    or problems
                    or [
                        {
                            "code": "invalid_file",
                            "message": "The file could not be parsed.",
                            "line": 1,
                        }
                    ]
                )
                batch["errors"] = {"object": "list", "data": errors}
                return
            batch["status"] = "in_progress"
        elif status == "in_progress":
            internal["polls"] -= 1
            if self.hold or internal["polls"] > 0:
                return
            if outcome == "completed":
                self._process(batch_id, internal["lines"], [])
                batch["status"] = "finalizing"
            else:
                lines = internal["lines"]
                finished = int(plan.get("finished", len(lines) // 2))
                code = "batch_expired" if outcome == "expired" else "batch_cancelled"
                self._process(batch_id, lines[:finished], lines[finished:], code)
                batch["status"] = "expired" if outcome == "expired" else "cancelling"
        elif status == "finalizing":
            batch["status"] = "completed"
            batch["completed_at"] = int(time.time())
        elif status == "cancelling":
            if "output_file_id" not in internal:  # cancelled before processing began
                lines = internal.get("lines", [])
                finished = int(plan.get("finished", 0))
                self._process(batch_id, lines[:finished], lines[finished:], "batch_cancelled")
            batch["status"] = "cancelled"

    def _validate(self, file_id: str) -> tuple[list[dict], list[dict]]:
        """The input file's lines, and validation errors like the API's."""
        lines, problems, seen = [], [], set()
        for n, raw in enumerate(self.files[file_id]["data"].split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                problems.append({"code": "invalid_json_line", "message": "not JSON", "line": n})
                continue
            cid = line.get("custom_id")
            if cid in seen:
                problems.append(
                    {"code": "duplicate_custom_id", "message": f"duplicate {cid}", "line": n}
                )
            elif line.get("method") != "POST" or line.get("url") != ENDPOINT:
                problems.append({"code": "invalid_url", "message": "bad method/url", "line": n})
            elif not isinstance(line.get("body", {}).get("model"), str):
                problems.append(
                    {"code": "missing_required_parameter", "message": "model", "line": n}
                )
            seen.add(cid)
            lines.append(line)
        return lines, problems

    def _process(
        self, batch_id: str, run: list[dict], skipped: list[dict], skip_code: str = ""
    ) -> None:
        """Answer the lines in ``run``; those in ``skipped`` end with ``skip_code``."""
        batch = self.batches[batch_id]
        out, err = [], []
        for line in run:
            cid = line["custom_id"]
            self.processed[cid] += 1
            faults = self._line_faults.get(cid)
            fault = faults.popleft() if faults else None
            record = {"id": self.next_id("batch_req"), "custom_id": cid, "error": None}
            if fault in LINE_ERRORS:
                status, error = LINE_ERRORS[fault]
                record["response"] = {
                    "status_code": status,
                    "request_id": self.next_id("req"),
                    "body": {"error": {**error, "param": None}},
                }
                err.append(record)
                continue
            self.paid[cid] += 1  # an HTTP 200 answer is billed, with or without text
            record["response"] = {
                "status_code": 200,
                "request_id": self.next_id("req"),
                "body": self._completion(
                    line["body"], refusal=fault == "refusal", cut=fault == "length"
                ),
            }
            out.append(record)
        for line in skipped:
            err.append(
                {
                    "id": self.next_id("batch_req"),
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {"code": skip_code, "message": UNFINISHED_MESSAGES[skip_code]},
                }
            )
        self._internal[batch_id]["output_file_id"] = True
        counts = batch["request_counts"]
        counts["completed"], counts["failed"] = len(out), len(err)
        for kind, rows in (("output", out), ("error", err)):
            if rows:
                data = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
                meta = self._store_file(data, f"{batch_id}_{kind}.jsonl", "batch_output")
                batch[f"{kind}_file_id"] = meta["id"]

    def _completion(self, body: dict, refusal: bool = False, cut: bool = False) -> dict:
        users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
        content = None if refusal else self.model(users[-1] if users else "")
        if cut and content:
            content = content[: max(1, len(content) // 2)]  # stopped at a length limit
        return {
            "id": self.next_id("chatcmpl"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "refusal": "I can't help with that." if refusal else None,
                    },
                    "logprobs": None,
                    "finish_reason": "length" if cut else "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
