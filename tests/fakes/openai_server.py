"""A small but real OpenAI-compatible HTTP server for tests, with fault injection.

It listens on 127.0.0.1 on an ephemeral port, in a background thread, and answers
``POST /v1/chat/completions`` with a real chat-completion body. Its "model" is deterministic
(:meth:`FakeOpenAIServer.reply_to`: the last user message with its words in reverse order), so
a test can compute every expected output.

Every request is logged (:class:`ReceivedRequest`: method, path, parsed body, headers) except
the bearer token, of which only a hash is kept: ``had_bearer`` says whether one came and
``bearer_is(key)`` compares it with an expected key. Calls are counted per path, and the
largest number of requests in flight at once is tracked.

Faults are injected per path, one per incoming request, in arrival order::

    server.add_faults({"status": 429, "retry_after": 0}, {"status": 500}, {"drop": True})

Keys every route understands: ``delay_s`` (sleep, then go on), ``drop`` (close the connection
without a response), ``status`` (an OpenAI-style error body with that status; ``retry_after``
adds the header, ``message`` sets the text), ``body`` (answer 200 with this JSON instead).
The chat route also reads ``content`` (may be None), ``refusal``, ``finish_reason`` and
``choices`` (e.g. ``[]``). New endpoints (Files, Batches ...) are added with :meth:`route`
(or :meth:`route_prefix`, for paths with ids in them);
a handler gets the :class:`ReceivedRequest` (with the fault it drew) and returns a
:class:`Reply`.

Use it as a context manager; it stops on exit even when the test fails::

    with FakeOpenAIServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test")
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)

CHAT_PATH = "/v1/chat/completions"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class ReceivedRequest:
    """One request as the server saw it; the bearer token is kept only as a hash."""

    method: str
    path: str
    body: Any  # parsed JSON, or the raw bytes when the body is not JSON
    headers: dict[str, str]  # lower-case names, without Authorization
    had_bearer: bool
    fault: dict[str, Any] = field(default_factory=dict)  # the fault this request drew
    _bearer_sha256: str | None = field(default=None, repr=False)

    def bearer_is(self, key: str) -> bool:
        """Whether the request carried ``Authorization: Bearer <key>``."""
        return self._bearer_sha256 is not None and hmac.compare_digest(
            self._bearer_sha256, _digest(key)
        )


@dataclass
class Reply:
    """What a route handler answers: a status, a JSON body and extra headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # When set, sent as it is instead of ``body`` as JSON (file contents such as JSONL).
    raw: bytes | None = None
    content_type: str = "application/json"


Handler = Callable[[ReceivedRequest], Reply]


def error_reply(status: int, message: str, kind: str = "invalid_request_error") -> Reply:
    """An error in OpenAI's shape: {"error": {message, type, param, code}}."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Reply(status, body)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck in a delay does not block stop()
    request_queue_size = 128  # many concurrent connects must not overflow the backlog
    app: FakeOpenAIServer

    def handle_error(self, request, client_address) -> None:
        # A client that gave up (timeout) makes our write fail: not worth a stderr traceback.
        log.debug("fake OpenAI server: error while handling a request", exc_info=True)


class _RequestHandler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        self.server.app._dispatch(self)

    def do_POST(self) -> None:
        self.server.app._dispatch(self)

    def do_DELETE(self) -> None:
        self.server.app._dispatch(self)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        log.debug("fake OpenAI server: " + format, *args)


class FakeOpenAIServer:
    """An OpenAI-compatible test server with a deterministic model and scripted faults."""

    def __init__(
        self,
        model: Callable[[str], str] | None = None,
        delay_s: float = 0.0,
        expected_key: str | None = None,
    ) -> None:
        self.model = model or self.reply_to
        self.delay_s = delay_s  # added to every request (lets concurrent requests overlap)
        # When set, requests without this bearer token get a 401 like OpenAI's.
        self._expected_sha256 = _digest(expected_key) if expected_key is not None else None
        self.routes: dict[tuple[str, str], Handler] = {}
        # (method, path prefix) -> handler, for paths with ids in them; exact routes win.
        self.prefix_routes: dict[tuple[str, str], Handler] = {}
        self.counts: Counter[str] = Counter()  # calls per path, faulted ones included
        self.max_in_flight = 0
        self.errors: list[str] = []  # exceptions raised by route handlers (server bugs)
        self._requests: list[ReceivedRequest] = []
        self._faults: dict[str, deque[dict[str, Any]]] = {}
        self._in_flight = 0
        self._lock = threading.Lock()
        self._ids = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.route("POST", CHAT_PATH, self._chat_completions)

    # -- the deterministic model ------------------------------------------------------------

    @staticmethod
    def reply_to(text: str) -> str:
        """The model's answer to a user message: its words in reverse order."""
        return " ".join(reversed(text.split()))

    # -- set-up ------------------------------------------------------------------------------

    def route(self, method: str, path: str, handler: Handler) -> None:
        """Serve ``method path`` with ``handler`` (replacing any handler there)."""
        self.routes[(method.upper(), path)] = handler

    def route_prefix(self, method: str, prefix: str, handler: Handler) -> None:
        """Serve every ``method`` request whose path starts with ``prefix`` (such as
        ``/v1/files/`` for ``/v1/files/{id}``) with ``handler``; the longest prefix wins, and an
        exact :meth:`route` wins over any prefix."""
        self.prefix_routes[(method.upper(), prefix)] = handler

    def add_faults(self, *faults: dict[str, Any], path: str = CHAT_PATH) -> None:
        """Queue faults for the next requests to ``path``, one per request."""
        with self._lock:
            self._faults.setdefault(path, deque()).extend(dict(f) for f in faults)

    def next_id(self, prefix: str) -> str:
        """A fresh object id such as chatcmpl-1, file-2, batch-3."""
        with self._lock:
            self._ids += 1
            return f"{prefix}-{self._ids}"

    def start(self) -> FakeOpenAIServer:
        assert self._httpd is None, "the server is already running"
        self._httpd = _HTTPServer(("127.0.0.1", 0), _RequestHandler)
        self._httpd.app = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what the tests read -----------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str = CHAT_PATH) -> list[ReceivedRequest]:
        return [r for r in self.requests if r.path == path]

    def pending_faults(self, path: str = CHAT_PATH) -> int:
        with self._lock:
            return len(self._faults.get(path, ()))

    # -- serving -----------------------------------------------------------------------------

    def _receive(self, h: BaseHTTPRequestHandler) -> ReceivedRequest:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        headers = {k.lower(): v for k, v in h.headers.items() if k.lower() != "authorization"}
        auth = h.headers.get("Authorization", "")
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        path = h.path.split("?", 1)[0]
        with self._lock:
            queue = self._faults.get(path)
            fault = queue.popleft() if queue else {}
            received = ReceivedRequest(
                h.command,
                path,
                body,
                headers,
                bool(token),
                fault,
                _digest(token) if token else None,
            )
            self._requests.append(received)
            self.counts[path] += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        return received

    def _dispatch(self, h: BaseHTTPRequestHandler) -> None:
        req = self._receive(h)
        try:
            reply = self._answer(req)
        finally:
            # A request stops counting before its reply is written: a client may send its next
            # request the moment it reads this reply, before this thread runs again.
            with self._lock:
                self._in_flight -= 1
        if reply is None:
            h.close_connection = True  # no response at all: the client sees a disconnect
            return
        self._send(h, reply)

    def _answer(self, req: ReceivedRequest) -> Reply | None:
        """The reply to ``req`` after its delay, or None for a dropped connection."""
        fault = req.fault
        delay = self.delay_s + float(fault.get("delay_s", 0))
        if delay:
            time.sleep(delay)
        if fault.get("drop"):
            return None
        try:
            return self._reply(req)
        except Exception as err:  # a bug in a handler: answer it rather than hang up
            log.exception("fake OpenAI server: handler for %s %s failed", req.method, req.path)
            self.errors.append(f"{type(err).__name__}: {err}")
            return error_reply(500, f"fake server bug: {err}", "server_error")

    def _reply(self, req: ReceivedRequest) -> Reply:
        fault = req.fault
        if "status" in fault:
            reply = error_reply(
                int(fault["status"]), fault.get("message", f"injected error {fault['status']}")
            )
            if "retry_after" in fault:
                reply.headers["retry-after"] = str(fault["retry_after"])
            return reply
        if self._expected_sha256 is not None and not (
            req._bearer_sha256 and hmac.compare_digest(req._bearer_sha256, self._expected_sha256)
        ):
            # Like OpenAI, which quotes a masked key; the rewriter must not pass it on.
            return error_reply(401, "Incorrect API key provided: sk-***.", "invalid_api_key")
        if "body" in fault:
            return Reply(200, fault["body"])
        handler = self.routes.get((req.method, req.path))
        if handler is None:
            prefixes = [
                p for (m, p) in self.prefix_routes if m == req.method and req.path.startswith(p)
            ]
            if prefixes:
                handler = self.prefix_routes[(req.method, max(prefixes, key=len))]
        if handler is None:
            return error_reply(404, f"Unknown request URL: {req.method} {req.path}")
        return handler(req)

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, reply: Reply) -> None:
        payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        h.send_response(reply.status)
        h.send_header("Content-Type", reply.content_type)
        h.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(payload)

    # -- routes ------------------------------------------------------------------------------

    def _chat_completions(self, req: ReceivedRequest) -> Reply:
        body = req.body
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return error_reply(400, "you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return error_reply(400, "'messages' must be a non-empty list")
        temperature = body.get("temperature", 1)
        if not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
            return error_reply(400, f"temperature must be in [0, 2], got {temperature!r}")
        users = [m.get("content", "") for m in messages if m.get("role") == "user"]
        prompt = users[-1] if users else ""
        fault = req.fault
        content = fault["content"] if "content" in fault else self.model(prompt)
        message = {"role": "assistant", "content": content, "refusal": fault.get("refusal")}
        choices = fault.get(
            "choices",
            [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": fault.get("finish_reason", "stop"),
                }
            ],
        )
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        completion_tokens = len(content.split()) if isinstance(content, str) else 0
        return Reply(
            200,
            {
                "id": self.next_id("chatcmpl"),
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "system_fingerprint": "fp_fake",
                "choices": choices,
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )
