"""An offline, rule-based rewriter for English text: sentiment and length (the catalogue's
other attributes are :mod:`rate.rewrite.rules_attributes`'s).

It stands in for an LLM where none can run, and it behaves like one in the way RATE cares
about: besides the edit that sets W it leaves a *signature* on every output, the same whatever
the target:

- contractions are spelled out ("don't" -> "do not", "I'm" -> "I am"), and
- runs of whitespace become one space.

The signature is idempotent (applying it twice changes nothing more), so a rewrite of a
rewrite carries it exactly once, as the rewrite does; that is what RATE's second rewrite relies
on.

The W edits:

- ``sentiment``: words of a fixed antonym table are swapped toward the target polarity
  ("great" -> "terrible" for a negative target), keeping their capitalisation. Texts whose
  sentiment rests on words outside the table keep it: the rewrite check counts those;
- ``length`` (the template's W rule must be ``field_above`` on ``text_length`` or
  ``text_words``): shorter drops sentences from the end, then words, until the text is at or
  below the threshold; longer appends sentences from ``filler`` (neutral ones by default)
  until it is above.
"""

from __future__ import annotations

import re

from rate.datasets.options import TEXT_MEASURES
from rate.rewrite.base import Rewriter, RewriteRequest
from rate.rewrite.options import RulesEnOptions

# positive -> negative; the reverse map is built from it.
ANTONYMS = {
    "good": "bad",
    "great": "terrible",
    "excellent": "awful",
    "amazing": "horrible",
    "wonderful": "dreadful",
    "fantastic": "atrocious",
    "best": "worst",
    "better": "worse",
    "love": "hate",
    "loved": "hated",
    "loves": "hates",
    "liked": "disliked",
    "happy": "unhappy",
    "glad": "sorry",
    "pleased": "displeased",
    "satisfied": "dissatisfied",
    "helpful": "useless",
    "effective": "ineffective",
    "works": "fails",
    "worked": "failed",
    "helped": "hurt",
    "helps": "hurts",
    "easy": "hard",
    "easier": "harder",
    "comfortable": "uncomfortable",
    "positive": "negative",
    "relief": "misery",
    "relieved": "worsened",
    "improved": "deteriorated",
    "improvement": "deterioration",
    "recommend": "discourage",
    "recommended": "discouraged",
    "success": "failure",
    "successful": "unsuccessful",
    "safe": "dangerous",
    "calm": "anxious",
    "fine": "poor",
    "nice": "nasty",
    "perfect": "flawed",
    "awesome": "appalling",
    "miracle": "disaster",
    "lucky": "unlucky",
    "grateful": "resentful",
    "thankful": "bitter",
    "enjoy": "dread",
    "enjoyed": "dreaded",
    "pleasant": "unpleasant",
    "mild": "severe",
    "minimal": "extreme",
    "no side effects": "many side effects",
}
NEGATIVE_TO_POSITIVE = {v: k for k, v in ANTONYMS.items()}

CONTRACTIONS = {
    "can't": "cannot",
    "won't": "will not",
    "shan't": "shall not",
    "n't": " not",
    "i'm": "i am",
    "'re": " are",
    "'ve": " have",
    "'ll": " will",
    "'d": " would",
    "it's": "it is",
    "that's": "that is",
    "there's": "there is",
    "he's": "he is",
    "she's": "she is",
    "what's": "what is",
    "let's": "let us",
}
# Neutral sentences (VADER compound 0): added length must not carry sentiment.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CONTRACTION = re.compile(
    "|".join(re.escape(k) for k in sorted(CONTRACTIONS, key=len, reverse=True)),
    re.IGNORECASE,
)


def _match_case(word: str, template: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def signature(text: str) -> str:
    """Contractions spelled out, whitespace runs made one space; idempotent."""
    text = text.replace("\u2019", "'")

    def expand(m: re.Match) -> str:
        found = m.group(0)
        return _match_case(CONTRACTIONS[found.lower()], found)

    return " ".join(_CONTRACTION.sub(expand, text).split())


def _table_regex(table: dict[str, str]) -> re.Pattern:
    words = sorted(table, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)


class RulesEnRewriter(Rewriter):
    name = "rules_en"

    def __init__(self, options: RulesEnOptions, rule=None) -> None:
        self.options, self.rule = options, rule
        self.to_negative = _table_regex(ANTONYMS)
        self.to_positive = _table_regex(NEGATIVE_TO_POSITIVE)

    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        return [self._one(r) for r in requests]

    def _one(self, req: RewriteRequest) -> str:
        text = signature(req.text) if self.options.signature else req.text
        if self.options.attribute == "sentiment":
            return self._sentiment(text, req.target_w)
        return self._length(text, req.target_w)

    def _sentiment(self, text: str, positive: bool) -> str:
        regex, table = (
            (self.to_positive, NEGATIVE_TO_POSITIVE) if positive else (self.to_negative, ANTONYMS)
        )
        return regex.sub(lambda m: _match_case(table[m.group(0).lower()], m.group(0)), text)

    def _measure(self, text: str) -> float:
        return TEXT_MEASURES[self.rule.field](text)

    def _length(self, text: str, longer: bool) -> str:
        threshold = float(self.rule.threshold)
        if longer:
            k = 0
            while self._measure(text) <= threshold:
                text = f"{text} {self.options.filler[k % len(self.options.filler)]}".strip()
                k += 1
            return text
        sentences = SENTENCE_END.split(text)
        while len(sentences) > 1 and self._measure(" ".join(sentences)) > threshold:
            sentences.pop()
        text = " ".join(sentences)
        words = text.split()
        while len(words) > 1 and self._measure(" ".join(words)) > threshold:
            words.pop()
        return " ".join(words)

    def describe(self) -> dict:
        out = {
            "backend": self.name,
            "attribute": self.options.attribute,
            "signature": self.options.signature,
        }
        if self.options.attribute == "length":
            out["threshold"] = self.rule.threshold
            out["measure"] = self.rule.field
        return out
