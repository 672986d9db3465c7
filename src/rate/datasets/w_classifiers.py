"""W classifiers: how a template reads the attribute W off an example (True, False or None).

None means W is undefined for that example (e.g. a middling score); create_dataset skips it.
Rules that need the data (a threshold at the median) are fitted on the examples first and
record what they computed, so the output says which threshold was used. Each live rule extends
its options class (:mod:`rate.datasets.options`) and is built fresh from the parsed options,
so fitting never changes what was parsed.

Rules that read W off the text alone also classify rewrites (``classify_texts``), which is how
create_dataset checks that a rewrite reached its target; rules on other fields (a rating, a
label) return None there, and the template names a scorer for the check instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np

from rate.catalog import load_scoring_template
from rate.datasets.base import Example
from rate.datasets.options import (
    TEXT_MEASURES,
    AlwaysOptions,
    FieldAboveOptions,
    FieldEqualsOptions,
    MisspelledShareOptions,
    PythonRuleOptions,
    ScorerAboveOptions,
    TextMatchesOptions,
)
from rate.errors import DataFileError, TemplateError
from rate.hooks import call_hook, resolve_function
from rate.packaged import english_words
from rate.registry import LivePart
from rate.score.backends import build_scorer
from rate.score.base import checked_scores


class WRule(LivePart):
    """A live W rule. ``fit`` sees every example first (finite sources) and returns what it
    computed; ``classify_texts`` re-reads W off texts, or returns None when it cannot."""

    def fit(self, examples: list[Example]) -> dict:
        return {}

    def __call__(self, ex: Example) -> bool | None:
        raise NotImplementedError

    def classify_texts(self, texts: list[str]) -> list[bool | None] | None:
        return None  # W is not a property of the text alone

    def truncated_texts(self) -> int:
        """How many texts a rule that reads W with a scorer had cut to its limit (0 here)."""
        return 0


class FieldEquals(FieldEqualsOptions, WRule):
    def __call__(self, ex: Example) -> bool | None:
        if self.field not in ex.fields:
            raise DataFileError(
                f"example {ex.key}: no field {self.field!r} for the W rule; fields present: "
                f"{', '.join(sorted(ex.fields))}"
            )
        v = ex.fields[self.field]
        if v in self.w1_values:
            return True
        if self.w0_values is None or v in self.w0_values:
            return False
        return None


class FieldAbove(FieldAboveOptions, WRule):
    def value(self, ex: Example) -> float:
        if self.field in TEXT_MEASURES:
            return TEXT_MEASURES[self.field](ex.text)
        v = ex.fields.get(self.field)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise DataFileError(
                f"example {ex.key}: field {self.field!r} must be a number, got {v!r}"
            )
        return float(v)

    def fit(self, examples: list[Example]) -> dict:
        if self.threshold == "median":
            self.threshold = float(np.median([self.value(e) for e in examples]))
        return {"threshold": self.threshold}

    def __call__(self, ex: Example) -> bool | None:
        return self.value(ex) > float(self.threshold)

    def classify_texts(self, texts: list[str]) -> list[bool | None] | None:
        if self.field not in TEXT_MEASURES:
            return None
        if isinstance(self.threshold, str):
            raise TemplateError("w_classifier: the median threshold is used before it is fitted")
        measure = TEXT_MEASURES[self.field]
        return [measure(t) > float(self.threshold) for t in texts]


class TextMatches(TextMatchesOptions, WRule):
    def _regex(self) -> re.Pattern:
        return re.compile(self.pattern, re.IGNORECASE if self.ignore_case else 0)

    def __call__(self, ex: Example) -> bool | None:
        return self._regex().search(ex.text) is not None

    def classify_texts(self, texts: list[str]) -> list[bool | None]:
        regex = self._regex()
        return [regex.search(t) is not None for t in texts]


_WORD = re.compile(r"[A-Za-z]{3,}")


class MisspelledShare(MisspelledShareOptions, WRule):
    def share(self, text: str) -> float:
        """The share of the text's words (3+ letters) that are not English words."""
        words = [w.lower() for w in _WORD.findall(text)]
        known = english_words()
        return sum(w not in known for w in words) / len(words) if words else 0.0

    def __call__(self, ex: Example) -> bool | None:
        return self.share(ex.text) > self.threshold

    def classify_texts(self, texts: list[str]) -> list[bool | None]:
        return [self.share(t) > self.threshold for t in texts]


class Always(AlwaysOptions, WRule):
    def __call__(self, ex: Example) -> bool | None:
        return self.value


class ScorerAbove(ScorerAboveOptions, WRule):
    """Reads W with the named scoring template's scorer, built on first use."""

    _built = None
    _known: dict[tuple[str, str], float] | None = None  # (key, text) -> score

    def _scores(self, prompts: list[str], texts: list[str]) -> list[float]:
        if self._built is None:
            self._built = build_scorer(load_scoring_template(self.scorer))
        raw = self._built.score(prompts, texts)
        return checked_scores(self._built, len(texts), raw, "0")

    def truncated_texts(self) -> int:
        return self._built.truncated if self._built is not None else 0

    def fit(self, examples: list[Example]) -> dict:
        scores = self._scores([e.prompt for e in examples], [e.text for e in examples])
        self._known = {(e.key, e.text): s for e, s in zip(examples, scores, strict=True)}
        if self.threshold == "median":
            self.threshold = float(np.median(scores))
        return {"threshold": self.threshold, "scorer": self.scorer}

    def _w(self, score: float) -> bool | None:
        t = float(self.threshold)
        if score > t + self.margin:
            return True
        if score < t - self.margin:
            return False
        return None

    def __call__(self, ex: Example) -> bool | None:
        known = self._known or {}
        # A text changed since fit (a perturbation) is scored again.
        score = known.get((ex.key, ex.text))
        if score is None:
            score = self._scores([ex.prompt], [ex.text])[0]
        return self._w(score)

    def classify_texts(self, texts: list[str]) -> list[bool | None]:
        return [self._w(s) for s in self._scores([""] * len(texts), texts)]


class PythonRule(PythonRuleOptions, WRule):
    LABEL = "w_classifier.function"

    def resolve(self) -> Callable[[Example], bool | None]:
        return resolve_function(self.function, self.LABEL)

    def __call__(self, ex: Example) -> bool | None:
        out = call_hook(
            self.resolve(), self.function, self.LABEL, (ex,), f"example {ex.key}",
            "fix the function, which runs on every example",
        )  # fmt: skip
        if out is not None and not isinstance(out, bool):
            raise TemplateError(
                f"w_classifier.function {self.function!r} returned {out!r} for example "
                f"{ex.key}; it must return True, False or None"
            )
        return out
