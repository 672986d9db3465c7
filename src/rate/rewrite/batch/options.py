"""The options of the ``openai_batch`` rewriter, as a dataset template's ``rewriter:`` gives them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rate.settings import project_dir

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WINDOW = re.compile(r"[1-9][0-9]*h")
MB = 1_000_000
# The Batch API's limits per input file (SPEC A.3): we never go above them.
API_MAX_REQUESTS = 50_000
API_MAX_BYTES = 200 * MB


@dataclass
class OpenAIBatchOptions:
    model: str  # the model id, e.g. gpt-4o-mini
    temperature: float = 0.7
    max_tokens: int = 1024
    top_p: float | None = None
    system: str = ""  # an optional system message before the rewrite prompt
    # "" = the SDK default: OPENAI_BASE_URL if set, else https://api.openai.com/v1.
    base_url: str = ""
    # The NAME of the environment variable holding the key (never the key itself).
    api_key_env: str = "OPENAI_API_KEY"
    completion_window: str = "24h"  # the only window the Batch API offers at the time of writing
    max_requests_per_file: int = 50_000  # a batch input file holds at most this many lines
    max_bytes_per_file: int = 100 * MB  # ... and at most this many bytes (the API allows ~200 MB)
    poll_initial_s: float = 10.0  # first wait between status polls
    poll_max_s: float = 300.0  # polls back off (x1.5, with jitter) up to this wait
    # How many times a line that failed for a transient reason (rate limit, server error, batch
    # expired or cancelled before reaching it) is submitted again within one run.
    max_resubmits: int = 3
    max_api_retries: int = 6  # retries of one API call after 429, 5xx or a dropped connection
    retry_base_s: float = 1.0  # API-call back-off: retry_base_s * 2**attempt * uniform(0.5, 1.5)
    timeout_s: float = 120.0  # per HTTP request (uploads and downloads included)
    work_dir: str = ""  # "" = <PROJECT_DIR>/data/batch_api: request files, manifests, cache

    def validate(self, where: str) -> None:
        from rate.rewrite.openai_chat import check_request_options

        bad = check_request_options(self, where)
        if not _WINDOW.fullmatch(self.completion_window):
            raise bad(
                "completion_window",
                f"must be a number of hours such as 24h, got {self.completion_window!r}",
            )
        if not 1 <= self.max_requests_per_file <= API_MAX_REQUESTS:
            raise bad(
                "max_requests_per_file",
                f"must be between 1 and {API_MAX_REQUESTS} (the Batch API's limit), got "
                f"{self.max_requests_per_file}",
            )
        if not 1 <= self.max_bytes_per_file <= API_MAX_BYTES:
            raise bad(
                "max_bytes_per_file",
                f"must be between 1 and {API_MAX_BYTES} (the Batch API's limit), got "
                f"{self.max_bytes_per_file}",
            )
        if self.poll_initial_s <= 0:
            raise bad("poll_initial_s", f"must be > 0, got {self.poll_initial_s}")
        if self.poll_max_s < self.poll_initial_s:
            raise bad(
                "poll_max_s",
                f"must be >= poll_initial_s ({self.poll_initial_s}), got {self.poll_max_s}",
            )
        if self.max_resubmits < 0:
            raise bad("max_resubmits", f"must be >= 0, got {self.max_resubmits}")
        if self.max_api_retries < 0:
            raise bad("max_api_retries", f"must be >= 0, got {self.max_api_retries}")
        if self.retry_base_s < 0:
            raise bad("retry_base_s", f"must be >= 0, got {self.retry_base_s}")
        if self.timeout_s <= 0:
            raise bad("timeout_s", f"must be > 0, got {self.timeout_s}")

    def resolved_work_dir(self) -> Path:
        """The folder for request files, manifests and the response cache."""
        if self.work_dir:
            return Path(self.work_dir).expanduser().absolute()
        return project_dir() / "data" / "batch_api"
