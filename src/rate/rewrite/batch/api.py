"""The Files and Batches calls the backend makes, each retried on 429, 5xx and dropped
connections (bounded, logged), with errors that say what to do. Results are plain dicts."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import openai

from rate.errors import ConfigError, RateError
from rate.rewrite.batch.requests import ENDPOINT
from rate.rewrite.openai_chat import (
    _RETRY_STATUSES,
    MAX_WAIT_S,
    UNREACHED_TRIES,
    _api_key,
    _retry_after_s,
    _server_message,
)
from rate.rewrite.options import OpenAIBatchOptions, safe_url

log = logging.getLogger(__name__)
T = TypeVar("T")
# A batch created this long before its intent was recorded is still ours (clock skew).
CLOCK_SLACK_S = 600


class BatchAPIError(RateError):
    """A Files or Batches call failed for good; ``status`` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def api_key(options: OpenAIBatchOptions) -> str:
    """The key from the named variable; a placeholder for a named server; else an error."""
    try:
        return _api_key(options)  # type: ignore[arg-type]  (it reads the two shared fields)
    except ConfigError:
        env = options.api_key_env
        raise ConfigError(
            f"the openai_batch rewriter needs an API key, but the environment variable {env} "
            f"is not set: put {env}=... in .env (the checkout's or the current folder's; see "
            ".env.example) or export it; or set rewriter.base_url to a server that needs no key"
        ) from None


class BatchAPI:
    """The OpenAI Files and Batches endpoints, through the SDK with our own retry loop."""

    def __init__(self, options: OpenAIBatchOptions, where: str) -> None:
        self.options = options
        self.where = where  # appended to errors: where the run's state is, and how to resume
        self._client = openai.OpenAI(
            api_key=api_key(options),
            base_url=options.base_url or None,
            timeout=options.timeout_s,
            max_retries=0,  # retried below, logged, bounded by max_api_retries
        )
        self.endpoint = safe_url(str(self._client.base_url).rstrip("/"))
        self._reached = False
        self.calls = 0  # API calls made (attempts included), for logs and tests

    # -- the retry loop ----------------------------------------------------------------------

    def _backoff_s(self, attempt: int) -> float:
        return min(MAX_WAIT_S, self.options.retry_base_s * 2**attempt * random.uniform(0.5, 1.5))

    def call(
        self, what: str, fn: Callable[[], T], recheck: Callable[[], T | None] | None = None
    ) -> T:
        """``fn()`` (one API call, described by ``what``), retried while the failure is
        transient. ``recheck``, for calls that must not happen twice, runs before each retry and
        returns what the failed attempt made after all (its answer was lost), or None."""
        tries = self.options.max_api_retries + 1
        for attempt in range(tries):
            self.calls += 1
            if attempt and recheck is not None:
                try:
                    found = recheck()
                except openai.APIError as err:  # the retry below runs the recheck again
                    log.warning("%s: could not check for an earlier attempt (%s)", what, err)
                    found = None
                if found is not None:
                    log.warning("%s: an earlier attempt did succeed; using its result", what)
                    return found
            try:
                result = fn()
            except openai.APIStatusError as err:
                self._reached = True
                status = err.status_code
                if status not in _RETRY_STATUSES and status < 500:
                    raise self._status_error(what, err) from None
                failure: openai.APIError = err
                asked = _retry_after_s(err)
                wait = min(MAX_WAIT_S, asked) if asked is not None else self._backoff_s(attempt)
                kind = f"HTTP {status}"
            except openai.APIConnectionError as err:  # includes APITimeoutError
                failure, wait = err, self._backoff_s(attempt)
                timed_out = isinstance(err, openai.APITimeoutError)
                kind = "timeout" if timed_out else "connection error"
                if not self._reached and not timed_out and attempt + 1 >= UNREACHED_TRIES:
                    tries = attempt + 1  # an endpoint that never answered: do not wait long
                    break
            else:
                self._reached = True
                return result
            if attempt + 1 == tries:
                break
            log.warning(
                "%s: %s from %s; retry %d of %d in %.2f s",
                what,
                kind,
                self.endpoint,
                attempt + 1,
                self.options.max_api_retries,
                wait,
            )
            time.sleep(wait)
        raise self._exhausted_error(what, failure, tries)

    def _status_error(self, what: str, err: openai.APIStatusError) -> BatchAPIError:
        status, o = err.status_code, self.options
        head = f"{what}: the API at {self.endpoint} answered HTTP {status}"
        if status == 401:
            # The server's message may quote part of the key: leave it out.
            fix = (
                f"it refused the API key in the environment variable {o.api_key_env}. Check "
                f"that {o.api_key_env} (in .env or the environment) holds a valid key"
            )
        elif status == 404:
            fix = (
                f"{_server_message(err)}. Check rewriter.base_url (it should end in /v1) and that "
                "the key belongs to the project that made this batch"
            )
        else:
            fix = (
                f"{_server_message(err)}. Check the rewriter options (model {o.model!r}, "
                f"completion_window {o.completion_window!r}) against what the API accepts"
            )
        return BatchAPIError(f"{head}: {fix}. {self.where}", status)

    def _exhausted_error(self, what: str, err: openai.APIError, tries: int) -> BatchAPIError:
        if isinstance(err, openai.APIStatusError):
            return BatchAPIError(
                f"{what}: the API at {self.endpoint} still answered HTTP {err.status_code} "
                f"after {tries} attempts: {_server_message(err)}. Try again later, or raise "
                f"rewriter.max_api_retries / retry_base_s. {self.where}",
                err.status_code,
            )
        return BatchAPIError(
            f"{what}: the API at {self.endpoint} could not be reached ({tries} attempts, "
            f"{type(err).__name__}). Check the network and rewriter.base_url. {self.where}"
        )

    # -- the calls ---------------------------------------------------------------------------

    def upload(self, path: Path, name: str) -> str:
        """Upload a request file with purpose "batch"; -> its file id."""
        data = path.read_bytes()
        obj = self.call(
            f"uploading {path.name}",
            lambda: self._client.files.create(
                file=(name, data, "application/jsonl"), purpose="batch"
            ),
        )
        return obj.id

    def create(self, file_id: str, metadata: dict[str, str], since: float) -> dict[str, Any]:
        """Create a batch over an uploaded file; -> the batch. A failure whose answer may have
        been lost (5xx, a dropped connection) is followed by a look-up before any retry, so a
        batch that the API did make is used rather than made twice."""
        return self.call(
            f"creating the batch for file {file_id}",
            lambda: self._client.batches.create(
                input_file_id=file_id,
                endpoint=ENDPOINT,
                completion_window=self.options.completion_window,  # type: ignore[arg-type]
                metadata=metadata,
            ).model_dump(),
            recheck=lambda: self._scan(file_id, metadata, since),
        )

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        batch = self.call(
            f"checking batch {batch_id}", lambda: self._client.batches.retrieve(batch_id)
        )
        return batch.model_dump()

    def find(self, file_id: str, metadata: dict[str, str], since: float) -> dict[str, Any] | None:
        """The batch made from ``file_id`` with ``metadata`` (a create whose answer we never
        recorded), looking back no further than ``since`` (epoch seconds); None if none."""

        found = self.call(
            f"looking up the batch for file {file_id}",
            lambda: self._scan(file_id, metadata, since) or {},
        )
        return found or None

    def _scan(self, file_id: str, metadata: dict[str, str], since: float) -> dict[str, Any] | None:
        """One pass over the batch list (newest first), stopping at batches made before
        ``since``: the batch made from ``file_id`` with ``metadata``, or None."""
        for batch in self._client.batches.list(limit=100):
            if batch.created_at < since - CLOCK_SLACK_S:
                return None
            tags = batch.metadata or {}
            if batch.input_file_id == file_id and all(
                tags.get(k) == v for k, v in metadata.items()
            ):
                return batch.model_dump()
        return None

    def content(self, file_id: str) -> bytes:
        """The bytes of a result file."""
        return self.call(
            f"downloading file {file_id}", lambda: self._client.files.content(file_id).content
        )
