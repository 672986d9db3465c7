"""Batch input lines: request bodies, stable custom_ids, content-addressed keys, and files split
under the Batch API's request and byte limits."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rate.errors import RateError
from rate.rewrite.base import RewriteRequest
from rate.rewrite.batch.options import OpenAIBatchOptions

ENDPOINT = "/v1/chat/completions"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")
_MAX_READABLE = 40  # custom_ids stay well under 64 characters


def canonical_json(obj: object) -> str:
    """One text per value: sorted keys, no spaces, non-ASCII kept (hashed, compared, stored)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_body(options: OpenAIBatchOptions, instruction: str) -> dict:
    """The chat-completions body of one rewrite: {model, messages, temperature, max_tokens,
    top_p if set}."""
    messages = [{"role": "system", "content": options.system}] if options.system else []
    messages.append({"role": "user", "content": instruction})
    body: dict = {
        "model": options.model,
        "messages": messages,
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
    }
    if options.top_p is not None:
        body["top_p"] = options.top_p
    return body


def cache_key(body: dict) -> str:
    """The content address of a response: sha256 of the canonical body (model, messages and
    sampling settings), with the endpoint, so equal requests share one paid answer."""
    return sha256_hex(canonical_json({"endpoint": ENDPOINT, "body": body}))


def custom_id(request_key: str, key: str) -> str:
    """A custom_id for the request ``request_key`` (``<example key>/<pass>``) whose body has
    cache key ``key``: readable, made of safe characters, the same in every run, and distinct
    for distinct requests (a hash of both, since squashing characters could merge two keys)."""
    readable = _UNSAFE.sub("_", request_key.replace("/", "."))[:_MAX_READABLE].strip("_.") or "r"
    return f"{readable}-{sha256_hex(request_key + chr(0) + key)[:12]}"


@dataclass(frozen=True)
class BatchLine:
    """One line of a batch input file; it answers every request whose body is the same."""

    custom_id: str
    cache_key: str
    body: dict
    request_keys: tuple[str, ...]

    def jsonl(self) -> bytes:
        """The line as the Batch API reads it, newline included."""
        line = {"custom_id": self.custom_id, "method": "POST", "url": ENDPOINT, "body": self.body}
        return (canonical_json(line) + "\n").encode("utf-8")


def batch_lines(
    options: OpenAIBatchOptions, requests: Sequence[RewriteRequest]
) -> tuple[list[BatchLine], list[str]]:
    """The distinct lines for ``requests`` in first-seen order, and each request's cache key."""
    keys: list[str] = []
    bodies: dict[str, dict] = {}
    owners: dict[str, list[str]] = {}
    for req in requests:
        body = request_body(options, req.instruction)
        key = cache_key(body)
        keys.append(key)
        if key not in bodies:
            bodies[key] = body
        owners.setdefault(key, []).append(req.key)
    lines = [
        BatchLine(custom_id(owners[key][0], key), key, body, tuple(owners[key]))
        for key, body in bodies.items()
    ]
    return lines, keys


def split_lines(
    lines: Sequence[BatchLine], max_requests: int, max_bytes: int
) -> list[list[BatchLine]]:
    """``lines`` in order, cut into files of at most ``max_requests`` lines and ``max_bytes``
    bytes each."""
    files: list[list[BatchLine]] = []
    current: list[BatchLine] = []
    size = 0
    for line in lines:
        n = len(line.jsonl())
        if n > max_bytes:
            raise RateError(
                f"the batch request for {line.request_keys[0]} takes {n} bytes, more than "
                f"rewriter.max_bytes_per_file ({max_bytes}); raise max_bytes_per_file (the API "
                "allows about 200 MB) or shorten the text"
            )
        if current and (len(current) >= max_requests or size + n > max_bytes):
            files.append(current)
            current, size = [], 0
        current.append(line)
        size += n
    if current:
        files.append(current)
    return files
