"""VADER: a lexicon-and-rules sentiment scorer (Hutto and Gilbert, 2014), offline and fast.

The score is VADER's compound polarity in [-1, 1] (or one of its pos/neu/neg shares). It reads
English text; it has no token limit, so nothing is truncated.
"""

from __future__ import annotations

from dataclasses import dataclass

from rate.errors import ConfigError, TemplateError
from rate.score.base import Scorer

FIELDS = ("compound", "pos", "neu", "neg")


@dataclass
class VaderOptions:
    field: str = "compound"
    input: str = "response"  # response, or concat (prompt + response)

    def validate(self, where: str) -> None:
        if self.field not in FIELDS:
            raise ConfigError(f"{where}: key 'field' must be one of {', '.join(FIELDS)}")
        if self.input not in ("response", "concat"):
            raise ConfigError(f"{where}: key 'input' must be 'response' or 'concat'")


class VaderScorer(Scorer):
    name = "vader"

    def __init__(self, options: VaderOptions, world=None, batch_size: int = 0) -> None:
        try:
            from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
        except ImportError:
            raise TemplateError(
                "the vader backend needs vaderSentiment: pip install vaderSentiment==3.3.2"
            ) from None
        self.options = options
        self.analyzer = SentimentIntensityAnalyzer()

    def score(self, prompts: list[str], responses: list[str]) -> list[float]:
        texts = responses
        if self.options.input == "concat":
            texts = [f"{p}{r}" for p, r in zip(prompts, responses, strict=True)]
        out = []
        for text in texts:
            out.append(float(self.analyzer.polarity_scores(text)[self.options.field]))
            if self.on_texts is not None:
                self.on_texts(1)
        return out

    def describe(self) -> dict:
        return {"backend": self.name, "field": self.options.field, "input": self.options.input}
