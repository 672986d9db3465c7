"""Machine settings from the environment and .env, and logging that never shows a secret."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from dotenv import load_dotenv

from rate.io import apply_group_permissions

logger = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SECRET_NAMES = ("OPENAI_API_KEY",)
SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET")
# Values shorter than this are not treated as secrets: replacing "1" or "on" everywhere would
# garble the logs, and no real key is that short.
_MIN_SECRET_LEN = 4


def load_env(repo_root: Path | str | None = None) -> Path | None:
    """Load `<repo_root or cwd>/.env` into os.environ if it exists; return its path or None.

    Variables already set in the environment win over .env. Values are never logged.
    """
    path = Path(repo_root if repo_root is not None else Path.cwd()) / ".env"
    if not path.is_file():
        return None
    load_dotenv(path, override=False)
    logger.debug("loaded settings from %s", path)
    return path


def project_dir() -> Path:
    """Return the data folder: PROJECT_DIR if set, else `<cwd>/project_data`."""
    value = os.environ.get("PROJECT_DIR", "").strip()
    if not value:
        return Path.cwd() / "project_data"
    return Path(os.path.expandvars(value)).expanduser().absolute()


def _secret_values() -> list[str]:
    """Return the current values of secret-looking environment variables, longest first."""
    values = {
        value
        for name, value in os.environ.items()
        if (name in SECRET_NAMES or name.upper().endswith(SECRET_SUFFIXES))
        and len(value) >= _MIN_SECRET_LEN
    }
    # Longest first, so a secret that contains another is replaced whole.
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """Replace every secret environment value found in `text` with ***."""
    for value in _secret_values():
        text = text.replace(value, "***")
    return text


class RedactSecretsFilter(logging.Filter):
    """Logging filter that replaces secret environment values in a record with ***.

    Secrets are OPENAI_API_KEY and every variable whose name ends in _KEY, _TOKEN or _SECRET,
    read at the time of each record, so a key loaded after logging was set up is covered too.
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


def setup_logging(level: str | int = "INFO", log_file: Path | None = None) -> None:
    """Configure the root logger: stderr (and `log_file` if given), secrets redacted.

    Calling it again replaces the handlers it added before rather than duplicating them.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_rate_handler", False):
            root.removeHandler(handler)
            handler.close()

    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        log_file = Path(log_file)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
        apply_group_permissions(log_file)

    formatter = logging.Formatter(LOG_FORMAT)
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(secret_redactor)
        handler._rate_handler = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
