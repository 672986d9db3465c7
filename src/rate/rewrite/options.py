"""The options of every rewriter backend, as a dataset template's ``rewriter:`` writes them.

Light: no model or API library is imported here; the live rewriters are built from these by
:mod:`rate.rewrite.backends`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from rate.datasets.options import TEXT_MEASURES
from rate.errors import ConfigError
from rate.registry import Part, local_folder_inputs
from rate.schema import Bound, check_fields, opt
from rate.score.options import DTYPES
from rate.settings import project_dir, register_secret_names, url_credentials

log = logging.getLogger(__name__)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Neutral sentences the rules_en length rewriter adds (VADER scores each of them 0).
FILLER = (
    "That is what happened in my case.",
    "I am writing this down for the record.",
    "This is the whole account from start to end.",
    "I took it as the label says.",
    "Those are the details as I remember them.",
)
# The attributes the rules_en backend flips: sentiment and length (rate.rewrite.rules_en), the
# others by rate.rewrite.rules_attributes (a test holds this list and its edits equal).
RULE_ATTRIBUTES = (
    "sentiment",
    "length",
    "structure",
    "sycophancy",
    "hedging",
    "exclamation",
    "emoji",
    "politeness",
    "emphasis",
    "disclaimer",
)
_WINDOW = re.compile(r"[1-9][0-9]*h")
MB = 1_000_000
# The Batch API's limits per input file (SPEC A.3): we never go above them.
API_MAX_REQUESTS = 50_000
API_MAX_BYTES = 200 * MB
DAY_S = 86_400
# The ranges the OpenAI backends share. The API takes temperatures in [0, 2] and top_p in
# (0, 1]; no model writes a million tokens in one answer; a wait, a timeout or a back-off of
# more than a day, or more than 100 retries, is a misconfiguration rather than patience.
TEMPERATURE = Bound(0, high=2, why="the API's range")
TOKEN_CAP = Bound(1, high=10**6, why="null: no cap")
TOP_P = Bound(0, strict=True, high=1, why="null: the server's default")
TIMEOUT = Bound(0, strict=True, high=DAY_S, why="seconds, at most a day")
RETRIES = Bound(0, high=100)
BACKOFF = Bound(0, high=600, why="seconds, doubled at each attempt")


@dataclass
class RulesEnOptions(Part):
    attribute: str = opt(
        help="the attribute the rules flip: sentiment, length, or one of the catalogue's "
        "(dataset_templates/attributes/)",
        choices=RULE_ATTRIBUTES,
    )
    signature: bool = True  # leave the signature (an LLM would); false: the W edit alone
    filler: list[str] = field(default_factory=lambda: list(FILLER))

    def validate(self, where: str) -> None:
        if not self.filler or not all(s.strip() for s in self.filler):
            raise ConfigError(f"{where}: key 'rewriter.filler' needs non-empty sentences")

    def check_template(self, template, where: str) -> None:
        if self.attribute != "length":
            return
        kind, rule = template.parts["w_classifier"]
        if kind != "field_above" or rule.field not in TEXT_MEASURES:
            raise ConfigError(
                f"{where}: the rules_en length rewriter needs w_classifier.rule: field_above on "
                f"field {' or '.join(TEXT_MEASURES)} (it rewrites to the rule's threshold)"
            )


_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


@dataclass
class HFGenerateOptions(Part):
    model: str  # a hub id (org/name), a local folder, or package:<module> (an installed package)
    gguf_file: str = ""  # a .gguf file in the model's folder or repo to load; "": safetensors
    chat: bool = True  # format with the tokenizer's chat template and its generation prompt
    system: str = ""  # an optional system message (chat: true only)
    max_new_tokens: int = opt(
        512, help="the most tokens a rewrite may have", bound=Bound(1, high=10**6)
    )
    temperature: float = opt(
        0.7,
        help="sampling temperature; 0: greedy decoding",
        bound=Bound(0, high=2, why="0: greedy; the OpenAI API's range"),
    )
    top_p: float = opt(1.0, help="nucleus sampling's mass", bound=Bound(0, strict=True, high=1))
    batch_size: int = opt(
        8, help="prompts per generate call; halved on out-of-memory", bound=Bound(1, high=65536)
    )
    dtype: str = opt("auto", help="auto: bfloat16 on GPU, float32 on CPU", choices=DTYPES)
    device: str = "auto"  # auto: cuda if available, else cpu
    trust_remote_code: bool = False
    max_input_tokens: int = opt(
        4096, help="longer prompts are an error, not cut", bound=Bound(1, high=10**7)
    )

    def validate(self, where: str) -> None:
        if not self.model.strip():
            raise ConfigError(f"{where}: key 'rewriter.model' must name a hub id or a folder")
        if self.gguf_file and (
            not self.gguf_file.endswith(".gguf") or Path(self.gguf_file).name != self.gguf_file
        ):
            raise ConfigError(
                f"{where}: key 'rewriter.gguf_file' must be the name of a .gguf file in the "
                f"model's folder (no path), got {self.gguf_file!r}"
            )
        if self.system and not self.chat:
            raise ConfigError(
                f"{where}: key 'rewriter.system' needs 'rewriter.chat: true' (a plain prompt "
                "has no system turn); put the text in the rewrite prompt instead"
            )
        if not _DEVICE.match(self.device):
            raise ConfigError(
                f"{where}: key 'rewriter.device' must be auto, cpu, mps, cuda or cuda:N"
            )

    def inputs(self) -> dict[str, str]:
        return local_folder_inputs("model", self.model)


@dataclass
class OpenAIChatOptions(Part):
    model: str  # the model id the server knows, e.g. gpt-4o-mini or the name vLLM serves
    # "" = the SDK default: OPENAI_BASE_URL if set, else https://api.openai.com/v1.
    base_url: str = ""
    # The NAME of the environment variable holding the key (never the key itself). A server
    # named by base_url may need no key: if the variable is unset, a placeholder is sent.
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = opt(0.7, help="sampling temperature", bound=TEMPERATURE)
    max_tokens: int | None = opt(
        None,
        help="the cap on a rewrite's tokens; null: none, as the reference sends none (a rewrite "
        "that still stops at a length limit is labelled length_limit by the checks)",
        bound=TOKEN_CAP,
    )
    max_completion_tokens: int | None = opt(
        None,
        help="the cap for models that refuse max_tokens (OpenAI's reasoning models); give at "
        "most one of the two",
        bound=TOKEN_CAP,
    )
    top_p: float | None = opt(None, help="nucleus sampling's mass; null: not sent", bound=TOP_P)
    # Send a sampling seed with each request (from the run seed and the request key), for
    # servers that take one; the answers are still not guaranteed to be deterministic.
    send_seed: bool = True
    system: str = ""  # an optional system message before the rewrite prompt
    concurrency: int = opt(8, help="requests in flight at once", bound=Bound(1, high=256))
    max_retries: int = opt(
        6,
        help="retries of one request after 429, 5xx, dropped connection, timeout",
        bound=RETRIES,
    )
    timeout_s: float = opt(120.0, help="per HTTP request", bound=TIMEOUT)
    retry_base_s: float = opt(
        1.0, help="back-off: retry_base_s * 2**attempt * uniform(0.5, 1.5)", bound=BACKOFF
    )

    def validate(self, where: str) -> None:
        check_request_options(self, where)


def request_record(options: OpenAIChatOptions | OpenAIBatchOptions, endpoint: str) -> dict:
    """What every OpenAI backend records of the request options it sends (no key, ever)."""
    return {
        "model": options.model,
        "base_url": endpoint,
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
        "max_completion_tokens": options.max_completion_tokens,
        "top_p": options.top_p,
        "send_seed": options.send_seed,
        "system": options.system,
    }


def length_cap(options: OpenAIChatOptions | OpenAIBatchOptions) -> dict:
    """The length cap a request carries ({} without one: the reference sends none)."""
    if options.max_completion_tokens is not None:
        return {"max_completion_tokens": options.max_completion_tokens}
    if options.max_tokens is not None:
        return {"max_tokens": options.max_tokens}
    return {}


def length_limit_message(
    n_cut: int, n_requests: int, options: OpenAIChatOptions | OpenAIBatchOptions
) -> str:
    """The one warning for rewrites that stopped at a length limit."""
    cap = length_cap(options) or "no cap was sent: the model's own limit"
    return (
        f"{n_cut} of {n_requests} rewrites stopped at a length limit (finish_reason 'length'; "
        f"{cap}): they are labelled length_limit and effects.only_successful_rewrites drops them"
    )


def check_request_options(options, where: str):
    """Checks of the keys that every OpenAI backend shares (model, base_url, api_key_env, the
    two length caps); -> the error maker for the backend's own keys. The declared ranges are
    checked again here, for options built in Python rather than read (the batch driver's)."""

    def bad(key: str, what: str) -> ConfigError:
        return ConfigError(f"{where}: key 'rewriter.{key}' {what}")

    check_fields(options, where, "rewriter")
    if not options.model.strip():
        raise bad("model", "must name a model, e.g. gpt-4o-mini")
    if options.base_url and not options.base_url.startswith(("http://", "https://")):
        raise bad(
            "base_url",
            "must be an http(s) URL such as https://api.openai.com/v1 or "
            "http://127.0.0.1:8000/v1, or empty for the SDK default",
        )
    if options.base_url and (names := url_credentials(options.base_url)):
        # Redacted from every log and record, but the template file itself holds the key.
        log.warning(
            "%s: key 'rewriter.base_url' carries a credential in its query (%s): rate redacts "
            "it from logs and records, but the template holds it; put the key in the "
            "variable that api_key_env names instead",
            where,
            ", ".join(f"{n}=***" for n in names),
        )
    if not _ENV_NAME.fullmatch(options.api_key_env):
        # Never echo the value: a user may have pasted the key itself here.
        raise bad(
            "api_key_env",
            "must be the NAME of an environment variable (like OPENAI_API_KEY), not the key; "
            "put the key itself in .env",
        )
    # Whatever the variable is called, its value is a key: never log or record it.
    register_secret_names(options.api_key_env)
    if options.max_tokens is not None and options.max_completion_tokens is not None:
        raise bad(
            "max_completion_tokens",
            "and rewriter.max_tokens are two names for the cap; give one (max_completion_tokens "
            "for models that refuse max_tokens)",
        )
    return bad


def safe_url(url: str) -> str:
    """``url`` without a user:password part, for messages and metadata."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass
class OpenAIBatchOptions(Part):
    model: str  # the model id, e.g. gpt-4o-mini
    temperature: float = opt(0.7, help="sampling temperature", bound=TEMPERATURE)
    max_tokens: int | None = opt(
        None,
        help="the cap on a rewrite's tokens; null: none, as the reference's body is {model, "
        "messages, temperature} (a rewrite that still stops at a length limit is labelled "
        "length_limit by the checks)",
        bound=TOKEN_CAP,
    )
    max_completion_tokens: int | None = opt(
        None, help="the cap for models that refuse max_tokens", bound=TOKEN_CAP
    )
    top_p: float | None = opt(None, help="nucleus sampling's mass; null: not sent", bound=TOP_P)
    # Send a seed in each body (from the run seed and the request's content, so identical
    # requests still share one answer); off by default, as in the reference's body.
    send_seed: bool = False
    system: str = ""  # an optional system message before the rewrite prompt
    # "" = the SDK default: OPENAI_BASE_URL if set, else https://api.openai.com/v1.
    base_url: str = ""
    # The NAME of the environment variable holding the key (never the key itself).
    api_key_env: str = "OPENAI_API_KEY"
    completion_window: str = "24h"  # the only window the Batch API offers at the time of writing
    max_requests_per_file: int = opt(
        50_000,
        help="a batch input file holds at most this many lines",
        bound=Bound(1, high=API_MAX_REQUESTS, why="the Batch API's limit"),
    )
    max_bytes_per_file: int = opt(
        100 * MB,
        help="a batch input file holds at most this many bytes (the API allows ~200 MB)",
        bound=Bound(1, high=API_MAX_BYTES, why="the Batch API's limit"),
    )
    poll_initial_s: float = opt(10.0, help="first wait between status polls", bound=TIMEOUT)
    poll_max_s: float = opt(
        300.0, help="polls back off (x1.5, with jitter) up to this wait", bound=TIMEOUT
    )
    max_resubmits: int = opt(
        3,
        help="how many times a line that failed for a transient reason (rate limit, server "
        "error, batch expired or cancelled before reaching it) is submitted again within one run",
        bound=RETRIES,
    )
    max_api_retries: int = opt(
        6, help="retries of one API call after 429, 5xx or a dropped connection", bound=RETRIES
    )
    retry_base_s: float = opt(
        1.0, help="API-call back-off: retry_base_s * 2**attempt * uniform(0.5, 1.5)", bound=BACKOFF
    )
    timeout_s: float = opt(
        120.0, help="per HTTP request (uploads and downloads included)", bound=TIMEOUT
    )
    work_dir: str = ""  # "" = <PROJECT_DIR>/data/batch_api: request files, manifests, cache

    def validate(self, where: str) -> None:
        bad = check_request_options(self, where)
        if not _WINDOW.fullmatch(self.completion_window):
            raise bad(
                "completion_window",
                f"must be a number of hours such as 24h, got {self.completion_window!r}",
            )
        if self.poll_max_s < self.poll_initial_s:
            raise bad(
                "poll_max_s",
                f"must be >= poll_initial_s ({self.poll_initial_s}), got {self.poll_max_s}",
            )

    def resolved_work_dir(self) -> Path:
        """The folder for request files, manifests and the response cache."""
        if self.work_dir:
            return Path(self.work_dir).expanduser().absolute()
        return project_dir() / "data" / "batch_api"
