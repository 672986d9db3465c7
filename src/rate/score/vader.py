"""VADER: a lexicon-and-rules sentiment scorer (Hutto and Gilbert, 2014), offline and fast.

The score is VADER's compound polarity in [-1, 1] (or one of its pos/neu/neg shares). It reads
English text; it has no token limit, so nothing is truncated.
"""

from __future__ import annotations

from rate.errors import TemplateError
from rate.score.base import Scorer, TextsDone
from rate.score.options import VaderOptions

try:  # an optional extra: without it, building the scorer says what to install
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
except ImportError:  # pragma: no cover - installed by `make setup`
    SentimentIntensityAnalyzer = None


class VaderScorer(Scorer):
    name = "vader"

    def __init__(self, options: VaderOptions, world=None, batch_size: int = 0) -> None:
        if SentimentIntensityAnalyzer is None:
            raise TemplateError(
                "the vader backend needs vaderSentiment: pip install vaderSentiment==3.3.2"
            )
        self.options = options
        self.analyzer = SentimentIntensityAnalyzer()

    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        texts = responses
        if self.options.input == "concat":
            texts = [f"{p}{r}" for p, r in zip(prompts, responses, strict=True)]
        out = []
        for text in texts:
            out.append(float(self.analyzer.polarity_scores(text)[self.options.field]))
            if on_texts is not None:
                on_texts(1)
        return out

    def describe(self) -> dict:
        return {"backend": self.name, "field": self.options.field, "input": self.options.input}
