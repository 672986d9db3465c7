"""W classifiers: how a template reads the attribute W off an example (True, False or None).

None means W is undefined for that example (e.g. a middling score); create_dataset skips it.
Rules that need the data (a threshold at the median) are fitted on the examples first and
record what they computed, so the output says which threshold was used.
"""

from __future__ import annotations

import importlib
import math
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
        toks = ex.text.split()
        has_t, has_c = self.token in toks, self.counterpart in toks
        if has_t != has_c:
            return has_t
        return None


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


@dataclass
class FieldAbove:
    """W=1 when ``field`` (or the text's character length, field ``text_length``) is above
    ``threshold``, a number or ``median`` (computed on the data and recorded)."""

    field: str
    threshold: float | str = "median"

    def validate(self, where: str) -> None:
        if isinstance(self.threshold, str) and self.threshold != "median":
            raise ConfigError(f"{where}: w_classifier.threshold: a number or 'median'")

    def value(self, ex: Example) -> float:
        if self.field == "text_length":
            return float(len(ex.text))
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


def _kinds():
    from rate.templates import Kind

    return {
        "token_swap": Kind(TokenSwap, lambda o: o, "tiny world: a token against its counterpart"),
        "field_equals": Kind(FieldEquals, lambda o: o, "a field's value in a set"),
        "field_above": Kind(FieldAbove, lambda o: o, "a number (or text_length) above a threshold"),
        "python": Kind(PythonRule, lambda o: o, "a Python function module:function"),
    }


RULES = _kinds()
