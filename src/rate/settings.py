"""Machine settings from the environment and .env, and logging that never shows a secret."""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dotenv import dotenv_values, load_dotenv

from rate.fs import apply_group_permissions, ensure_dir

logger = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SECRET_NAMES = ("OPENAI_API_KEY",)
SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET")
# Values shorter than this are not treated as secrets: replacing "1" or "on" everywhere would
# garble the logs, and no real key is that short.
_MIN_SECRET_LEN = 4
# The checkout this package runs from (an editable install), whose .env is read too.
_CHECKOUT = Path(__file__).resolve().parents[2]
# Variables that a template names as holding a key (api_key_env), whatever they are called.
_named_secrets: set[str] = set()
# A credential in a header (Authorization: ..., Bearer ...) or in a URL (scheme://user:pw@).
# A header's value is a scheme and a token ("Bearer sk-..."), or a token: the rest of the line
# is the message's own (main redacted up to the next quote or comma, words of the message too).
_AUTH_HEADER = re.compile(r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)(?:[a-z]+\s+)?[^\s\"',}]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]+")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@\"']+@")
# A credential in a URL's query string or fragment (?api-key=..., &sig=..., #access_token=...):
# the names that services put keys, tokens and signatures under.
SECRET_QUERY_NAMES = (
    "api-key", "api_key", "apikey", "key", "token", "access_token", "id_token",
    "refresh_token", "auth", "authorization", "sig", "signature", "secret", "client_secret",
    "password", "passwd", "pwd", "code", "x-api-key", "x-amz-signature", "x-goog-signature",
    "x-amz-credential", "x-amz-security-token",
)  # fmt: skip
_QUERY_NAMES = "|".join(re.escape(n) for n in SECRET_QUERY_NAMES)
_URL_QUERY_SECRET = re.compile(rf"(?i)([?&;#](?:{_QUERY_NAMES})=)[^&;#\s\"'<>]+")


def checkout_root() -> Path | None:
    """The source checkout rate runs from (editable install), or None (a wheel install)."""
    return _CHECKOUT if (_CHECKOUT / "pyproject.toml").is_file() else None


def load_env(folder: Path | str | None = None) -> Path | None:
    """Load `<folder>/.env` into os.environ if it exists; return its path or None.

    Variables already set in the environment win over .env. Values are never logged.
    """
    path = Path(folder if folder is not None else Path.cwd()) / ".env"
    if not path.is_file():
        return None
    load_dotenv(path, override=False)
    logger.debug("loaded settings from %s", path)
    return path


def load_settings() -> list[Path]:
    """Read the checkout's .env, then the current folder's; -> the files read.

    The environment wins over both, and the current folder's .env over the checkout's, so
    `rate` finds the same settings from the checkout as `make` does, and a project folder can
    keep its own."""
    files = [d / ".env" for d in dict.fromkeys(filter(None, (checkout_root(), Path.cwd())))]
    files = [f for f in files if f.is_file()]
    merged: dict[str, str] = {}
    for path in files:
        merged.update({k: v for k, v in dotenv_values(path).items() if v is not None})
    for name, value in merged.items():
        os.environ.setdefault(name, value)
    return files


def project_dir() -> Path:
    """Return the data folder: PROJECT_DIR if set, else `<cwd>/project_data`."""
    value = os.environ.get("PROJECT_DIR", "").strip()
    if not value:
        return Path.cwd() / "project_data"
    return Path(os.path.expandvars(value)).expanduser().absolute()


_hub_reason: dict[str, str | None] = {}  # the probe's answer per endpoint, once per process


def hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the Hugging Face Hub cannot be used now (None: it can): HF_HUB_OFFLINE or
    HF_DATASETS_OFFLINE set, or its host (HF_ENDPOINT, default huggingface.co) not answering
    a connection within ``timeout`` seconds. Asked before a hub id is loaded, so an offline
    machine fails in seconds with advice, not after the libraries' minute of retries."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{name}={os.environ[name]}"
    url = os.environ.get("HF_ENDPOINT", "") or "https://huggingface.co"
    if url not in _hub_reason:
        _hub_reason[url] = _probe_hub(url, timeout)
    return _hub_reason[url]


def _probe_hub(url: str, timeout: float) -> str | None:
    endpoint = urlsplit(url)
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    answer: list[str | None] = []

    def connect() -> None:  # name lookup has no timeout of its own: bounded by the join
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            answer.append(None)
        except OSError as err:
            answer.append(f"{host}:{port} unreachable ({err.strerror or type(err).__name__})")

    probe = threading.Thread(target=connect, daemon=True)
    probe.start()
    probe.join(timeout + 1)
    return answer[0] if answer else f"{host}:{port} did not answer within {timeout:g} s"


def register_secret_names(*names: str) -> None:
    """Treat these environment variables as secrets wherever text is redacted (a template's
    ``api_key_env`` may name any variable, not only one ending in _KEY)."""
    _named_secrets.update(n for n in names if n)


def _secret_values() -> list[str]:
    """Return the current values of secret environment variables, longest first."""
    values = {
        value
        for name, value in os.environ.items()
        if (
            name in SECRET_NAMES or name in _named_secrets or name.upper().endswith(SECRET_SUFFIXES)
        )
        and len(value) >= _MIN_SECRET_LEN
    }
    # Longest first, so a secret that contains another is replaced whole.
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """Replace every secret in `text` with ***: the values of secret environment variables,
    what follows ``Authorization:`` or ``Bearer``, the user:password part of a URL and the
    value of a credential-named parameter in a URL's query (:data:`SECRET_QUERY_NAMES`)."""
    for value in _secret_values():
        text = text.replace(value, "***")
    text = _AUTH_HEADER.sub(r"\1***", text)
    text = _BEARER.sub(r"\1***", text)
    text = _URL_QUERY_SECRET.sub(r"\1***", text)
    return _URL_USERINFO.sub(r"\1***@", text)


def url_credentials(url: str) -> list[str]:
    """The credential-named parameters in ``url``'s query or fragment (``api-key``, ``sig``,
    ...; :data:`SECRET_QUERY_NAMES`), by name only: their values are never returned."""
    return [m.group(1)[1:-1] for m in _URL_QUERY_SECRET.finditer(url)]


def redact_record(obj: Any) -> Any:
    """A record (dicts, lists, strings ...) with every string redacted, for metadata files."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_record(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_record(v) for v in obj]
    return obj


class RedactSecretsFilter(logging.Filter):
    """Logging filter that replaces secrets in a record with *** (:func:`redact`).

    Secrets are OPENAI_API_KEY, every variable whose name ends in _KEY, _TOKEN or _SECRET,
    every variable a template names in api_key_env, read at the time of each record (a key
    loaded after logging was set up is covered too), and credentials in headers and URLs.
    Attach it to handlers: a logger's own filters do not see records from its child loggers.
    """

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            # Format the traceback now (formatters reuse exc_text) so its message is redacted.
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


secret_redactor = RedactSecretsFilter()


class LogFileHandler(logging.FileHandler):
    """A run's log file that, when it cannot be written (a full disk), says so once on
    stderr and goes quiet, instead of a '--- Logging error ---' traceback per record."""

    broken = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        if self.broken:
            return
        self.broken = True
        err = sys.exc_info()[1]
        why = getattr(err, "strerror", None) or err
        print(
            f"rate: warning: cannot write the log file {self.baseFilename} ({why}); the rest "
            "of this run logs to stderr only",
            file=sys.stderr,
        )

    def emit(self, record: logging.LogRecord) -> None:
        if not self.broken:
            super().emit(record)

    def write_line(self, text: str) -> None:
        """Write ``text`` (redacted) to the log file as it is, without the log format."""
        if self.broken:
            return
        try:
            if self.stream is None:
                self.stream = self._open()
            self.stream.write(redact(text).rstrip("\n") + "\n")
            self.flush()
        except OSError:
            self.handleError(logging.makeLogRecord({}))


class OncePerRun(logging.Filter):
    """Lets each warning through once per run (per :func:`setup_logging`): a run that meets
    the same condition in several steps (one dataset's failed rewrites, estimated with two
    reward models) says so once. Records below WARNING always pass."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.levelno, record.getMessage())
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


def log_to_files(text: str) -> None:
    """Append ``text`` to the log files set up by :func:`setup_logging` (not to stderr): a
    failed run's log ends with its error, so it does not look like a run in progress."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, LogFileHandler):
            handler.write_line(text)


def current_log_file() -> str | None:
    """The log file set up by :func:`setup_logging` (the run's log), or None."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, LogFileHandler):
            return handler.baseFilename
    return None


def setup_logging(
    level: str | int = "INFO", log_file: Path | None = None, stderr_level: str | None = None
) -> None:
    """Configure the root logger: stderr (and `log_file` if given), secrets redacted.

    ``stderr_level`` (default: ``level``) lets `-q` quieten the terminal while the log file
    keeps the record. Calling it again replaces the handlers it added before rather than
    duplicating them, and starts a new run: each handler shows a warning once per run
    (:class:`OncePerRun`).
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_rate_handler", False):
            root.removeHandler(handler)
            handler.close()

    file_level = level.upper() if isinstance(level, str) else logging.getLevelName(level)
    stream = logging.StreamHandler(sys.stderr)
    stream.setLevel((stderr_level or file_level).upper())
    handlers: list[logging.Handler] = [stream]
    if log_file is not None:
        log_file = Path(log_file)
        ensure_dir(log_file.parent)
        handlers.append(LogFileHandler(log_file, encoding="utf-8"))
        apply_group_permissions(log_file)

    formatter = logging.Formatter(LOG_FORMAT)
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(secret_redactor)
        handler.addFilter(OncePerRun())
        handler._rate_handler = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(min(logging.getLevelName(file_level), stream.level))
