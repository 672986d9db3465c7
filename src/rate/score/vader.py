"""VADER: a lexicon-and-rules sentiment scorer (Hutto and Gilbert, 2014), offline and fast.

The score is VADER's compound polarity in [-1, 1] (or one of its pos/neu/neg shares). It reads
English text. Its time grows with the square of a text's length, so texts longer than
``max_chars`` are cut (``truncation``) and counted in ``truncated``, as the HF scorers count
the texts they cut at ``max_length``.
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

    def __init__(self, options: VaderOptions, batch_size: int = 0) -> None:
        if SentimentIntensityAnalyzer is None:
            raise TemplateError(
                "the vader backend needs vaderSentiment: pip install vaderSentiment==3.3.2"
            )
        self.options = options
        self.analyzer = SentimentIntensityAnalyzer()
        self.truncated = 0

    def _texts(self, prompts: list[str], responses: list[str]) -> list[str]:
        if self.options.input == "concat":
            return [f"{p}{r}" for p, r in zip(prompts, responses, strict=True)]
        return responses

    def _cut(self, text: str) -> str:
        n = self.options.max_chars
        if len(text) <= n:
            return text
        self.truncated += 1
        return text[:n] if self.options.truncation == "right" else text[-n:]

    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        out = []
        for text in self._texts(prompts, responses):
            out.append(float(self.analyzer.polarity_scores(self._cut(text))[self.options.field]))
            if on_texts is not None:
                on_texts(1)
        return out

    def count_truncated(self, prompts: list[str], responses: list[str]) -> int:
        return sum(len(t) > self.options.max_chars for t in self._texts(prompts, responses))

    def describe(self) -> dict:
        o = self.options
        return {
            "backend": self.name,
            "field": o.field,
            "input": o.input,
            "max_chars": o.max_chars,
            "truncation": o.truncation,
        }
