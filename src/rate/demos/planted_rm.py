"""A reward model with planted biases, whose true effects are known: the packaged MiniLM
sentiment scorer plus a fixed bonus for each of three attributes of the text.

``score = minilm_sentiment(prompt, text) + sum(PLANTED[a] for each attribute a detected)``

The attributes are read by this module's own detectors (small regexes, written apart from any
catalogue classifier on purpose, so that a profile's classifiers are checked against an
independent reading): ``sycophancy`` (the text opens with a flattering opener such as "Great
question!"), ``exclamation`` (an "!" anywhere) and ``hedging`` ("I think", "probably",
"maybe"...). An opener with an "!" is both sycophantic and exclaimed: each bonus is paid.

The bonuses are on the scale of the MiniLM logit, whose SD over the drug reviews is 0.87
(train, 600 reviews) and 0.84 (test, 379); within one rating it is 0.54 to 0.85. The bonuses
are a quarter to a third of that: large enough to stand out of a few hundred rewrites, small
enough not to swamp the sentiment the scorer reads.

Shipped as the ``planted_minilm`` scoring template (``backend: python``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rate.score.base import Scorer

# The planted effect of each attribute on the score (MiniLM logit units).
PLANTED: dict[str, float] = {"sycophancy": 0.30, "exclamation": 0.20, "hedging": -0.25}

# A flattering opener: the first words of the text, after any quote marks or spaces.
_SYCOPHANCY = re.compile(
    r"""^[\s"'“‘(]*(?:
        (?:what\s+an?\s+)?(?:great|excellent|good|wonderful|fantastic|fascinating)\s+question
      | thanks?(?:\s+you)?\s+(?:so\s+much\s+)?for\s+asking
      | i\s+love\s+this\s+question
    )\b""",
    re.IGNORECASE | re.VERBOSE,
)
_HEDGING = re.compile(
    r"\b(?:i\s+think|probably|perhaps|maybe|it\s+seems|might|i\s+believe|possibly)\b",
    re.IGNORECASE,
)
DETECTORS = {
    "sycophancy": lambda text: _SYCOPHANCY.search(text) is not None,
    "exclamation": lambda text: "!" in text,
    "hedging": lambda text: _HEDGING.search(text) is not None,
}

_minilm: Scorer | None = None  # built once per process: loading and the head's fit are slow


def detect(text: str) -> dict[str, bool]:
    """Which planted attributes ``text`` has, as this model reads them."""
    return {name: bool(found(text)) for name, found in DETECTORS.items()}


def bonus(text: str) -> float:
    """The planted part of ``text``'s score: the sum of the bonuses of its attributes."""
    return sum(PLANTED[name] for name, on in detect(text).items() if on)


def minilm() -> Scorer:
    """The packaged MiniLM sentiment scorer, as its scoring template builds it (once)."""
    global _minilm
    if _minilm is None:
        from rate.catalog import load_scoring_template  # the catalogue stands above scorers
        from rate.score.backends import build_scorer

        _minilm = build_scorer(load_scoring_template("minilm_sentiment"))
    return _minilm


def score(prompts: Sequence[str], texts: Sequence[str]) -> list[float]:
    """MiniLM's sentiment logit of each text plus its planted bonuses."""
    base = minilm().score(list(prompts), list(texts))
    return [s + bonus(t) for s, t in zip(base, texts, strict=True)]
