"""Rewrites from any OpenAI-compatible chat-completions endpoint, one synchronous call each.

The endpoint is OpenAI's by default, or any server that speaks the same API (vLLM,
llama.cpp, Ollama, TGI ...) named by ``base_url``. Requests run concurrently on a thread pool
(``concurrency``) and come back in request order. The SDK's own retries are off: this module
retries 429s (honouring ``retry-after``), 5xx, dropped connections and timeouts itself, with
exponential back-off and jitter, so that every retry is logged and the policy is testable.
Other client errors (400, 401, 403, 404 ...) fail at once with what to change. The first
request that fails for good stops the others, so an unreachable endpoint fails after one
request's retries, not after every request's.

The API key is read from the environment variable named by ``api_key_env`` and never appears
in logs, errors or :meth:`OpenAIChatRewriter.describe`.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed

import openai

from rate.errors import ConfigError, RateError
from rate.progress import progress
from rate.rewrite.base import Rewriter, RewriteRequest
from rate.rewrite.options import (
    OpenAIChatOptions,
    length_cap,
    length_limit_message,
    request_record,
    safe_url,
)
from rate.seeding import stable_seed
from rate.settings import redact

log = logging.getLogger(__name__)

# Sent when the key variable is unset but a base_url names a server: local servers ignore the
# key, but the SDK refuses to build a client without one.
PLACEHOLDER_KEY = "not-needed"
# No single wait (back-off or a server's retry-after) is longer than this.
MAX_WAIT_S = 60.0
# 408 and 409 are transient too (the SDK retries them): a timeout and a lock conflict.
_RETRY_STATUSES = {408, 409, 429}
_STATUS_NAMES = {400: "bad request", 401: "unauthorized", 403: "forbidden", 404: "not found"}


class ChatAPIError(RateError):
    """A chat-completions request failed for good; ``status`` is the HTTP status, if any."""

    def __init__(self, message: str, key: str, status: int | None = None) -> None:
        super().__init__(message)
        self.key, self.status = key, status


class _Aborted(Exception):
    """Another request failed for good, so this one stopped early."""


def _api_key(options: OpenAIChatOptions) -> str:
    """The key from the named variable; a placeholder for a named server; else an error."""
    key = os.environ.get(options.api_key_env, "").strip()
    if key:
        return key
    if options.base_url or os.environ.get("OPENAI_BASE_URL"):
        return PLACEHOLDER_KEY
    env = options.api_key_env
    raise ConfigError(
        f"the openai_chat rewriter needs an API key, but the environment variable {env} is "
        f"not set: put {env}=... in .env (the checkout's or the current folder's; see "
        ".env.example) or export it; or set rewriter.base_url to a local OpenAI-compatible "
        "server, which needs no key"
    )


def _retry_after_s(err: openai.APIStatusError) -> float | None:
    """The wait a server asked for (retry-after-ms, or retry-after in seconds or as a date)."""
    headers = err.response.headers
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None  # an unreadable header: fall back to our back-off


def _server_message(err: openai.APIStatusError) -> str:
    """The error message in an OpenAI-style error body, secrets redacted."""
    body = err.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return redact(str(inner["message"]))
    return redact(str(err.message))


UNREACHED_TRIES = 3  # attempts for an endpoint that has never answered


class OpenAIChatRewriter(Rewriter):
    name = "openai_chat"

    def __init__(self, options: OpenAIChatOptions, seed: int) -> None:
        self.options, self.seed = options, seed
        self._client = openai.OpenAI(
            api_key=_api_key(options),
            base_url=options.base_url or None,
            timeout=options.timeout_s,
            max_retries=0,  # our loop below retries, logs and can be stopped
        )
        # The resolved endpoint (base_url, OPENAI_BASE_URL or OpenAI's), for messages.
        self.endpoint = safe_url(str(self._client.base_url).rstrip("/"))
        # Whether the endpoint ever answered: one that never did (offline, a wrong base_url)
        # gets a few quick retries, not the full back-off for a transient failure.
        self._reached = False
        self._cut: set[str] = set()  # keys of the latest outputs that stopped at a length limit

    # -- one request ---------------------------------------------------------------------------

    def request_seed(self, req: RewriteRequest) -> int:
        """The sampling seed sent with ``req``: fixed by the run seed and the request key."""
        return stable_seed("openai_chat", self.seed, req.key) % 2**31

    def _params(self, req: RewriteRequest) -> dict:
        o = self.options
        messages = [{"role": "system", "content": o.system}] if o.system else []
        messages.append({"role": "user", "content": req.instruction})
        params = {"model": o.model, "messages": messages, "temperature": o.temperature}
        params.update(length_cap(o))
        if o.send_seed:
            params["seed"] = self.request_seed(req)
        if o.top_p is not None:
            params["top_p"] = o.top_p
        return params

    def _backoff_s(self, attempt: int) -> float:
        return min(MAX_WAIT_S, self.options.retry_base_s * 2**attempt * random.uniform(0.5, 1.5))

    def _call(self, req: RewriteRequest, stop: threading.Event) -> tuple[str, bool]:
        """(the rewrite, whether it stopped at a length limit), retrying transient failures."""
        params = self._params(req)
        tries = self.options.max_retries + 1
        for attempt in range(tries):
            if stop.is_set():
                raise _Aborted
            try:
                completion = self._client.chat.completions.create(**params)
            except openai.APIStatusError as err:
                self._reached = True
                status = err.status_code
                if status not in _RETRY_STATUSES and status < 500:
                    raise self._status_error(err, req) from None
                failure: openai.APIError = err
                asked = _retry_after_s(err)  # sent with 429s, and by some servers with 503s
                wait = min(MAX_WAIT_S, asked) if asked is not None else self._backoff_s(attempt)
                what = f"HTTP {status}"
            except openai.APIConnectionError as err:  # includes APITimeoutError
                failure, wait = err, self._backoff_s(attempt)
                what = "timeout" if isinstance(err, openai.APITimeoutError) else "connection error"
                never_reached = not self._reached and not isinstance(err, openai.APITimeoutError)
                if never_reached and attempt + 1 >= UNREACHED_TRIES:
                    tries = attempt + 1
                    break
            else:
                self._reached = True
                return self._content(completion, req)
            if stop.is_set():
                raise _Aborted  # another request failed for good while this one was on the wire
            if attempt + 1 == tries:
                break
            log.warning(
                "request %s: %s from %s; retry %d of %d in %.2f s",
                req.key,
                what,
                self.endpoint,
                attempt + 1,
                self.options.max_retries,
                wait,
            )
            if stop.wait(wait):  # woken early: another request failed for good
                raise _Aborted
        raise self._exhausted_error(failure, req, tries)

    def _call_or_stop(self, req: RewriteRequest, stop: threading.Event) -> tuple[str, bool]:
        """:meth:`_call`, telling the other requests to stop if this one fails for good."""
        try:
            return self._call(req, stop)
        except _Aborted:
            raise
        except BaseException:
            # Set here, in the worker, not when the main thread sees the error: by then this
            # worker could have started the next queued request.
            stop.set()
            raise

    def _content(self, completion: object, req: RewriteRequest) -> tuple[str, bool]:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ChatAPIError(
                f"the endpoint at {self.endpoint} returned no choices for request {req.key}; "
                "check that rewriter.model names a chat model the server serves",
                req.key,
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if isinstance(content, str):
            # An empty string is a (bad) rewrite, not an error: later checks count them.
            return content, getattr(choice, "finish_reason", None) == "length"
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise ChatAPIError(
                f"model {self.options.model!r} refused request {req.key}: {redact(str(refusal))!r}. "
                "Reword the template's rewrite_prompt or choose another model",
                req.key,
            )
        raise ChatAPIError(
            f"the endpoint at {self.endpoint} returned no text for request {req.key} (message "
            f"content is {type(content).__name__}, finish_reason "
            f"{getattr(choice, 'finish_reason', None)!r}); check that rewriter.model is a chat "
            "model that answers in text",
            req.key,
        )

    def _status_error(self, err: openai.APIStatusError, req: RewriteRequest) -> ChatAPIError:
        """A client error that retrying cannot fix, with what to change."""
        status, o = err.status_code, self.options
        head = (
            f"the endpoint at {self.endpoint} answered request {req.key} with HTTP {status}"
            f" ({_STATUS_NAMES.get(status, 'client error')})"
        )
        if status == 401:
            # The server's message may quote part of the key: leave it out.
            message = (
                f"{head}: it refused the API key in the environment variable {o.api_key_env}. "
                f"Check that {o.api_key_env} (in .env or the environment) holds a valid key for "
                "this endpoint, or set rewriter.api_key_env to the variable that does"
            )
        elif status == 403:
            message = (
                f"{head}: {_server_message(err)}. The key in {o.api_key_env} may lack access to "
                f"model {o.model!r}; check the key's project and permissions"
            )
        elif status == 404:
            message = (
                f"{head}: {_server_message(err)}. Check rewriter.model ({o.model!r}) and "
                "rewriter.base_url (most servers expect it to end in /v1)"
            )
        else:
            message = (
                f"{head}: {_server_message(err)}. Check the rewriter options in the dataset "
                f"template (model {o.model!r}, temperature {o.temperature}, max_tokens "
                f"{o.max_tokens}, max_completion_tokens {o.max_completion_tokens}, top_p "
                f"{o.top_p}, send_seed {o.send_seed}) against what the server accepts"
            )
        return ChatAPIError(message, req.key, status)

    def _exhausted_error(
        self, err: openai.APIError, req: RewriteRequest, tries: int
    ) -> ChatAPIError:
        if isinstance(err, openai.APIStatusError):
            return ChatAPIError(
                f"request {req.key} to {self.endpoint} still failed with HTTP "
                f"{err.status_code} after {tries} attempts: {_server_message(err)}. The server "
                "is overloaded or rate-limiting: lower rewriter.concurrency, raise "
                "rewriter.max_retries or rewriter.retry_base_s, or try again later",
                req.key,
                err.status_code,
            )
        timed_out = isinstance(err, openai.APITimeoutError)
        what = (
            f"timed out after {self.options.timeout_s:g} s" if timed_out else "could not be reached"
        )
        slow = "; if the server is just slow, raise rewriter.timeout_s" if timed_out else ""
        return ChatAPIError(
            f"the chat-completions endpoint at base_url {self.endpoint} {what} for request "
            f"{req.key} ({tries} attempts, {type(err).__name__}). Check the network and the "
            "server; without network access, run an OpenAI-compatible server locally (vLLM, "
            "llama.cpp, Ollama ...) and point rewriter.base_url at it, e.g. base_url: "
            f"http://127.0.0.1:8000/v1{slow}",
            req.key,
        )

    # -- the batch -----------------------------------------------------------------------------

    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        if not requests:
            return []
        outputs: list[str | None] = [None] * len(requests)
        cut: list[bool] = [False] * len(requests)
        stop = threading.Event()
        pool = ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="openai_chat")
        futures: dict[Future, int] = {
            pool.submit(self._call_or_stop, req, stop): i for i, req in enumerate(requests)
        }
        try:
            for future in progress(
                as_completed(futures), f"rewrite ({self.options.model})", total=len(futures)
            ):
                i = futures[future]
                outputs[i], cut[i] = future.result()  # the first failure propagates from here
        except BaseException:
            # Stop the others: queued requests are cancelled, waiting ones wake and give up.
            # Requests already on the wire finish in the background and are dropped.
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        self._cut = {req.key for req, c in zip(requests, cut, strict=True) if c}
        if self._cut:
            log.warning(length_limit_message(len(self._cut), len(requests), self.options))
        assert all(isinstance(out, str) for out in outputs), "a request has no output"
        return outputs  # type: ignore[return-value]

    def stopped_at_limit(self, requests: list[RewriteRequest]) -> list[bool]:
        return [req.key in self._cut for req in requests]

    def describe(self) -> dict:
        return {
            "backend": self.name,
            **request_record(self.options, self.endpoint),
            "concurrency": self.options.concurrency,
            "seed": self.seed,
        }


def build_openai_chat_rewriter(
    options: OpenAIChatOptions, template, seed: int, rule=None
) -> OpenAIChatRewriter:
    """The rewriter for a dataset template; the template's prompt arrives in each request."""
    return OpenAIChatRewriter(options, seed)
