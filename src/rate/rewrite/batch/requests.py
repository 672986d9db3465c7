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
from rate.rewrite.options import OpenAIBatchOptions, length_cap
from rate.seeding import stable_seed

ENDPOINT = "/v1/chat/completions"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]+")
_MAX_READABLE = 40  # custom_ids stay well under 64 characters


def canonical_json(obj: object) -> str:
    """One text per value: sorted keys, no spaces, non-ASCII kept (hashed, compared, stored)."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_body(options: OpenAIBatchOptions, instruction: str, seed: int = 0) -> dict:
    """The chat-completions body of one rewrite: {model, messages, temperature}, as the
    reference sends it, plus max_tokens or max_completion_tokens, top_p and a seed where the
    options ask for them. The seed comes from the run ``seed`` and the instruction, so that
    identical requests have identical bodies and share one paid answer."""
    messages = [{"role": "system", "content": options.system}] if options.system else []
    messages.append({"role": "user", "content": instruction})
    body: dict = {"model": options.model, "messages": messages, "temperature": options.temperature}
    body.update(length_cap(options))
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if options.send_seed:
        body["seed"] = stable_seed("openai_batch", seed, sha256_hex(instruction)) % 2**31
    return body


def cache_key(body: dict) -> str:
    """The content address of a response: sha256 of the canonical body (model, messages and
    sampling settings), with the endpoint, so equal requests share one paid answer."""
    return _key_of(canonical_json(body))


_ENDPOINT_JSON = json.dumps(ENDPOINT, allow_nan=False)
# Stands for the instruction in a body serialised once per run (see batch_lines).
_MARK = "\u0000rate-instruction\u0000"


def _key_of(body_json: str) -> str:
    # Exactly canonical_json({"endpoint": ENDPOINT, "body": body}) (keys sorted: body first),
    # built from the body's JSON so that each body is serialised once.
    return sha256_hex(f'{{"body":{body_json},"endpoint":{_ENDPOINT_JSON}}}')


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
    body_json: str = ""  # canonical_json(body), when the caller has it already

    def jsonl(self) -> bytes:
        """The line as the Batch API reads it, newline included (made once, then kept)."""
        cached = self.__dict__.get("_jsonl")
        if cached is None:
            # canonical_json of {custom_id, method, url, body}: keys sorted, body first.
            body = self.body_json or canonical_json(self.body)
            cid = json.dumps(self.custom_id, ensure_ascii=False, allow_nan=False)
            cached = (
                f'{{"body":{body},"custom_id":{cid},"method":"POST","url":{_ENDPOINT_JSON}}}\n'
            ).encode()
            self.__dict__["_jsonl"] = cached  # a frozen dataclass: bypass __setattr__
        return cached


def batch_lines(
    options: OpenAIBatchOptions, requests: Sequence[RewriteRequest], seed: int = 0
) -> tuple[list[BatchLine], list[str]]:
    """The distinct lines for ``requests`` in first-seen order, and each request's cache key
    (``seed``: the run's, for the bodies' seeds when the options send one)."""
    keys: list[str] = []
    bodies: dict[str, dict] = {}
    owners: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    # Every body is the same but for the instruction: serialise it once around a mark, then
    # put each instruction's JSON in its place (identical to canonical_json of the body).
    parts = canonical_json(request_body(options, _MARK, seed)).split(
        json.dumps(_MARK, ensure_ascii=False, allow_nan=False)
    )
    for req in requests:
        body = request_body(options, req.instruction, seed)
        if len(parts) == 2 and not options.send_seed:
            body_json = (
                parts[0]
                + json.dumps(req.instruction, ensure_ascii=False, allow_nan=False)
                + parts[1]
            )
        else:  # each body has its own seed, or the mark stands in the options (a system message)
            body_json = canonical_json(body)
        key = _key_of(body_json)
        keys.append(key)
        if key not in bodies:
            bodies[key], texts[key] = body, body_json
        owners.setdefault(key, []).append(req.key)
    lines = [
        BatchLine(custom_id(owners[key][0], key), key, body, tuple(owners[key]), texts[key])
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
