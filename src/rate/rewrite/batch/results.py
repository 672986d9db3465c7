"""Reading a batch's output and error files: each line's answer, or why it has none.

Output lines look like ``{"id", "custom_id", "response": {"status_code": 200, "request_id",
"body": <chat completion>}, "error": null}``; error lines have a non-200 ``status_code`` with an
``{"error": {...}}`` body, or ``response`` null and a top-level ``error`` (``batch_expired``,
``batch_cancelled``). Failures are sorted into classes so the run can say why rows are missing
and knows which ones a resubmission can fix.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rate.settings import redact

log = logging.getLogger(__name__)

RATE_LIMIT, INVALID, CONTENT_FILTER, SERVER = (
    "rate_limit",
    "invalid_request",
    "content_filter",
    "server",
)
UNFINISHED, BATCH_FAILED, OTHER = "unfinished", "batch_failed", "other"
CLASSES = (RATE_LIMIT, INVALID, CONTENT_FILTER, SERVER, UNFINISHED, BATCH_FAILED, OTHER)
# Failures a later submission can fix; the others would fail the same way again.
RETRYABLE = frozenset({RATE_LIMIT, SERVER, UNFINISHED})
_TRANSIENT_BATCH_CODES = ("token_limit", "rate_limit", "quota_exceeded_for_batch", "capacity")


def classify(status: int | None, code: str | None, kind: str | None = None) -> str:
    """The class of a failed line from its HTTP status and the error's code and type."""
    text = f"{code or ''} {kind or ''}".lower()
    if code in ("batch_expired", "batch_cancelled"):
        return UNFINISHED
    if "content_filter" in text or "content_policy" in text:
        return CONTENT_FILTER
    if status == 429 or "rate_limit" in text or "token_limit" in text:
        return RATE_LIMIT
    if (status is not None and status >= 500) or "server_error" in text or "timeout" in text:
        return SERVER
    if (status is not None and 400 <= status < 500) or "invalid_request" in text:
        return INVALID
    return OTHER


def failure(cls: str, message: str, paid: bool = False, code: str | None = None) -> dict:
    """A line's failure record, as the manifest and the cache keep it."""
    return {
        "class": cls,
        "code": code,
        "message": redact(message)[:500],
        "retryable": cls in RETRYABLE and not paid,  # a paid line is never bought again
        "paid": paid,
    }


@dataclass
class LineResult:
    """What a batch said about one line: its text, or a failure record."""

    custom_id: str
    text: str | None = None
    finish_reason: str | None = None
    failure: dict | None = None

    @property
    def paid(self) -> bool:
        """Whether the line was answered (HTTP 200), which is what is billed."""
        return self.text is not None or bool(self.failure and self.failure["paid"])


def _completion_text(body: Any) -> tuple[str | None, str | None, dict | None]:
    """(text, finish_reason, failure) of a 200 chat-completion body."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        return None, None, failure(OTHER, "the answer has no choices", paid=True)
    choice = choices[0]
    message = choice.get("message") or {}
    finish = choice.get("finish_reason")
    content = message.get("content")
    if isinstance(content, str):
        return content, finish, None
    if message.get("refusal"):
        return (
            None,
            finish,
            failure(
                CONTENT_FILTER,
                f"the model refused: {message['refusal']}",
                paid=True,
                code="refusal",
            ),
        )
    if finish == "content_filter":
        return (
            None,
            finish,
            failure(
                CONTENT_FILTER,
                "the answer was withheld by the content filter",
                True,
                "content_filter",
            ),
        )
    return None, finish, failure(OTHER, f"the answer has no text (finish_reason {finish!r})", True)


def parse_line(row: dict) -> LineResult:
    """One line of an output or error file."""
    cid = str(row.get("custom_id"))
    response = row.get("response")
    if isinstance(response, dict):
        status = response.get("status_code")
        body = response.get("body")
        if status == 200:
            text, finish, fail = _completion_text(body)
            return LineResult(cid, text, finish, fail)
        err = body.get("error") if isinstance(body, dict) else None
        err = err if isinstance(err, dict) else {}
        code, kind = err.get("code"), err.get("type")
        message = err.get("message") or f"HTTP {status}"
        return LineResult(
            cid, failure=failure(classify(status, code, kind), str(message), code=code)
        )
    err = row.get("error") if isinstance(row.get("error"), dict) else {}
    code = err.get("code")
    message = err.get("message") or "no response and no error message"
    return LineResult(cid, failure=failure(classify(None, code), str(message), code=code))


def parse_file(data: bytes, what: str) -> list[LineResult]:
    """Every readable line of a downloaded output or error file; unreadable lines are logged
    and skipped (their requests count as unfinished and are sent again)."""
    results = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError:
            log.warning("%s line %d is not JSON; its request counts as unfinished", what, lineno)
            continue
        if isinstance(row, dict) and row.get("custom_id") is not None:
            results.append(parse_line(row))
        else:
            log.warning("%s line %d has no custom_id; skipped", what, lineno)
    return results


def batch_failure(errors: Any) -> tuple[str, str]:
    """The class and the reason of a failed batch, from its ``errors`` list."""
    data = []
    if isinstance(errors, dict):
        data = errors.get("data") or []
    elif isinstance(errors, list):
        data = errors
    parts, codes = [], []
    for err in data:
        if not isinstance(err, dict):
            continue
        code = err.get("code") or ""
        codes.append(code)
        where = f" (line {err['line']})" if err.get("line") is not None else ""
        parts.append(f"{code or 'error'}: {err.get('message') or ''}{where}".strip())
    reason = redact("; ".join(parts)) if parts else "the API gave no reason"
    transient = any(t in c for c in codes for t in _TRANSIENT_BATCH_CODES)
    return (RATE_LIMIT if transient else BATCH_FAILED), reason[:1000]


def class_counts(failures: Iterable[dict | None]) -> str:
    """'3 rate_limit, 1 invalid_request': failures counted by class."""
    counts = Counter((f or {}).get("class", OTHER) for f in failures)
    return ", ".join(f"{n} {cls}" for cls, n in counts.most_common()) or "no failure recorded"
