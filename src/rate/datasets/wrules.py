"""W classifiers: how a template reads the attribute W off an example (True, False or None).

None means W is undefined for that example (e.g. a middling score); create_dataset skips it.
Rules that need the data (a threshold at the median) are fitted on the examples first and
record what they computed, so the output says which threshold was used.

Rules that read W off the text alone also classify rewrites (``classify_texts``), which is how
create_dataset checks that a rewrite reached its target; rules on other fields (a rating, a
label) return None there, and the template names a scorer for the check instead.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rate.datasets.sources import Example
from rate.errors import ConfigError, DataFileError, TemplateError


@dataclass
class TokenSwap:
    """Tiny world: W=1 when the response holds ``token`` and not ``counterpart``, W=0 when it
    holds ``counterpart`` and not ``token``; undefined otherwise. Rewriting swaps the two."""

    token: str
    counterpart: str

    def validate(self, where: str) -> None:
        from rate.tinyrlhf.vocab import SYLLABLES

        for key in ("token", "counterpart"):
            if getattr(self, key) not in SYLLABLES:
                raise ConfigError(
                    f"{where}: key 'w_classifier.{key}': {getattr(self, key)!r} is not a "
                    f"syllable of the tiny world ({' '.join(SYLLABLES)})"
                )
        if self.token == self.counterpart:
            raise ConfigError(f"{where}: w_classifier.token and counterpart must differ")

    def fit(self, examples: list[Example]) -> dict:
        return {}

    def __call__(self, ex: Example) -> bool | None:
        return self._text(ex.text)

    def _text(self, text: str) -> bool | None:
        toks = text.split()
        has_t, has_c = self.token in toks, self.counterpart in toks
        if has_t != has_c:
            return has_t
        return None

    def classify_texts(self, texts: list[str]) -> list[bool | None]:
        return [self._text(t) for t in texts]


@dataclass
class FieldEquals:
    """W=1 when ``field`` is in ``w1_values``, W=0 when in ``w0_values``; else undefined."""

    field: str
    w1_values: list[Any]
    w0_values: list[Any] | None = None  # default: every other value is W=0

    def validate(self, where: str) -> None:
        if self.w0_values is not None and set(map(repr, self.w1_values)) & set(
            map(repr, self.w0_values)
        ):
            raise ConfigError(f"{where}: w_classifier: a value is in both w1_values and w0_values")

    def fit(self, examples: list[Example]) -> dict:
        return {}

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

    def classify_texts(self, texts: list[str]) -> None:
        return None  # W is a field of the record, not of the text


TEXT_MEASURES = {
    "text_length": lambda text: float(len(text)),  # characters
    "text_words": lambda text: float(len(text.split())),
}


@dataclass
class FieldAbove:
    """W=1 when ``field`` is above ``threshold``, a number or ``median`` (computed on the data
    and recorded); W=0 at or below it. The field ``text_length`` is the text's length in
    characters and ``text_words`` in words: the completion's, never the record's (the reference
    measured the record, so W was always 0)."""

    field: str
    threshold: float | str = "median"

    def validate(self, where: str) -> None:
        if isinstance(self.threshold, str) and self.threshold != "median":
            raise ConfigError(f"{where}: w_classifier.threshold: a number or 'median'")

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
            import numpy as np

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


@dataclass
class TextMatches:
    """W=1 when the text matches the regular expression ``pattern`` (searched), else W=0; e.g.
    ``^\\s*[AEIOUaeiou]`` for a review that starts with a vowel."""

    pattern: str
    ignore_case: bool = False

    def validate(self, where: str) -> None:
        try:
            re.compile(self.pattern)
        except re.error as err:
            raise ConfigError(
                f"{where}: key 'w_classifier.pattern' is not a regex ({err})"
            ) from None

    def fit(self, examples: list[Example]) -> dict:
        return {}

    def _regex(self) -> re.Pattern:
        return re.compile(self.pattern, re.IGNORECASE if self.ignore_case else 0)

    def __call__(self, ex: Example) -> bool | None:
        return self._regex().search(ex.text) is not None

    def classify_texts(self, texts: list[str]) -> list[bool | None]:
        regex = self._regex()
        return [regex.search(t) is not None for t in texts]


@dataclass
class Always:
    """W is the same for every example (``value``): only the ATT (or the ATU) is defined, as
    for harmful responses that are all W=1."""

    value: bool = True

    def fit(self, examples: list[Example]) -> dict:
        return {}

    def __call__(self, ex: Example) -> bool | None:
        return self.value

    def classify_texts(self, texts: list[str]) -> None:
        return None  # W is given, not read; a template names a scorer to check rewrites


@dataclass
class ScorerAbove:
    """W read by a scorer (a scoring template, e.g. a sentiment classifier): W=1 when the score
    is above ``threshold`` + ``margin``, W=0 below ``threshold`` - ``margin``, undefined in
    between. ``threshold`` may be ``median``."""

    scorer: str  # a scoring template
    threshold: float | str = 0.0
    margin: float = 0.0

    def validate(self, where: str) -> None:
        if isinstance(self.threshold, str) and self.threshold != "median":
            raise ConfigError(f"{where}: w_classifier.threshold: a number or 'median'")
        if self.margin < 0:
            raise ConfigError(f"{where}: key 'w_classifier.margin' must be >= 0")

    def check_template(self, template, where: str) -> None:
        from rate.templates import load_scoring_template

        try:
            load_scoring_template(self.scorer)
        except TemplateError as err:
            raise ConfigError(f"{where}: key 'w_classifier.scorer': {err}") from None

    def _scores(self, prompts: list[str], texts: list[str]) -> list[float]:
        from rate.score.backends import build_scorer
        from rate.score.base import checked_scores
        from rate.templates import load_scoring_template

        if getattr(self, "_built", None) is None:
            self._built = build_scorer(load_scoring_template(self.scorer), None)
        raw = self._built.score(prompts, texts)
        return checked_scores(self._built, len(texts), raw, "0")

    def fit(self, examples: list[Example]) -> dict:
        scores = self._scores([e.prompt for e in examples], [e.text for e in examples])
        self._known = {e.key: s for e, s in zip(examples, scores, strict=True)}
        if self.threshold == "median":
            import numpy as np

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
        known = getattr(self, "_known", {})
        score = known[ex.key] if ex.key in known else self._scores([ex.prompt], [ex.text])[0]
        return self._w(score)

    def classify_texts(self, texts: list[str]) -> list[bool | None]:
        return [self._w(s) for s in self._scores([""] * len(texts), texts)]


@dataclass
class PythonRule:
    """Escape hatch: ``function: "module:function"`` taking an Example, returning bool or None."""

    function: str

    def resolve(self) -> Callable[[Example], bool | None]:
        module, _, name = self.function.partition(":")
        if not module or not name:
            raise TemplateError(f"w_classifier.function {self.function!r}: use 'module:function'")
        try:
            fn = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as err:
            raise TemplateError(f"w_classifier.function {self.function!r}: {err}") from None
        return fn

    def fit(self, examples: list[Example]) -> dict:
        return {}

    def __call__(self, ex: Example) -> bool | None:
        out = self.resolve()(ex)
        if out is not None and not isinstance(out, bool):
            raise TemplateError(
                f"w_classifier.function {self.function!r} returned {out!r} for example "
                f"{ex.key}; it must return True, False or None"
            )
        return out

    def classify_texts(self, texts: list[str]) -> None:
        return None  # the function reads an Example; a template names a scorer for checks


def _kinds():
    from rate.templates import Kind

    return {
        "token_swap": Kind(TokenSwap, lambda o: o, "tiny world: a token against its counterpart"),
        "field_equals": Kind(FieldEquals, lambda o: o, "a field's value in a set"),
        "field_above": Kind(FieldAbove, lambda o: o, "a number (or text_length) above a threshold"),
        "text_matches": Kind(TextMatches, lambda o: o, "the text matches a regular expression"),
        "always": Kind(Always, lambda o: o, "the same W for every example (ATT or ATU only)"),
        "scorer_above": Kind(ScorerAbove, lambda o: o, "a scorer's score above a threshold"),
        "python": Kind(PythonRule, lambda o: o, "a Python function module:function"),
    }


RULES = _kinds()
