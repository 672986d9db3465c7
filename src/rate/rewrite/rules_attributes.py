"""Offline rule edits for the attribute catalogue (``dataset_templates/attributes/``): the
``rules_en`` backend's attributes beyond sentiment and length (:mod:`rate.rewrite.rules_en`).

Each attribute is a regular expression that says whether a text has it (the catalogue file's
``text_matches`` W rule uses the same pattern, and a test holds them equal) and two edits:

- **add** a clear instance, chosen from a fixed list by a hash of the text (never random
  state, so a rerun gives the same output);
- **remove** every trace the pattern sees (the edit is repeated until the pattern finds
  nothing, and a last pass deletes any match that is left).

A text already at the target gets the signature alone, so its W stays at the target. Every
output carries the signature of :func:`rate.rewrite.rules_en.signature` (contractions spelled
out, whitespace runs made one space), applied once before the edit; the added phrases are
written in that form already, so the rewrite of a rewrite carries the signature exactly once.
``structure`` keeps line breaks (a bullet list is lines): its signature is applied line by line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rate.rewrite.base import Rewriter, RewriteRequest
from rate.rewrite.options import RulesEnOptions
from rate.rewrite.rules_en import SENTENCE_END, RulesEnRewriter, signature
from rate.seeding import stable_seed

# The W patterns, as the catalogue files' text_matches rules write them (a test holds the two
# equal: an LLM rewriter's outputs are checked with the file's, the rules write toward these).
PATTERNS = {
    "structure": r"(?m)^[ \t]*(?:[-*\u2022]|\d+[.)])[ \t]+\S",
    "sycophancy": (
        r"(?i)^\W*(?:what an? |that(?:'s| is) an? |such an? )?(?:great|excellent|good|wonderful"
        r"|fantastic|brilliant|insightful|fascinating) question\b"
    ),
    "hedging": (
        r"(?i)\b(?:I think|I believe|I guess|I suppose|in my opinion|perhaps|probably|maybe"
        r"|possibly|presumably|arguably)\b"
    ),
    "exclamation": r"!(?!=)",
    "emoji": r"[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2B55]",
    "politeness": (
        r"(?i)\b(?:I hope this helps|hope this helps|let me know if you have any(?: other"
        r"| further| more)? questions|feel free to (?:ask|reach out)|thank you for reading"
        r"|thanks for reading)\b"
    ),
    "emphasis": (r"\*\*(?=\S)[^*\n]+?(?<=\S)\*\*|(?<![*\w])\*(?=[^\s*])[^*\n]*?[^\s*]\*(?![*\w])"),
    "disclaimer": (
        r"(?i)\b(?:as an AI|I am (?:just |only )?an AI|I'm (?:just |only )?an AI"
        r"|as a (?:large )?language model|an AI (?:language model|assistant))\b"
    ),
}

# What the add edits insert: each in the signature's form (no contraction), none with a mark
# another attribute reads (no '!', no emoji), and no disclaimer opening "As an AI", which the
# rewrite checks label a refusal (rate.rewrite.checks.REFUSAL).
OPENERS = (
    "Great question.",
    "What a great question.",
    "That is an excellent question.",
    "What a wonderful question.",
    "Good question.",
)
HEDGES = ("I think", "I believe", "Probably", "Perhaps")
CLOSINGS = (
    "I hope this helps.",
    "Let me know if you have any other questions.",
    "Feel free to ask if you need anything else.",
    "Thank you for reading.",
)
DISCLAIMERS = (
    "Speaking as an AI language model, I do not have personal experiences.",
    "I am an AI language model, so I do not have personal opinions.",
    "Please note that I am an AI language model and not a professional.",
)
EMOJI = ("\U0001f642", "\U0001f60a", "\U0001f44d", "\u2728")
# First words a hedge may lowercase ("The drug works." -> "I think the drug works."); any
# other capitalised word may be a name and keeps its capital.
_LOWER_OK = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "my",
        "our",
        "your",
        "their",
        "his",
        "her",
        "there",
        "they",
        "we",
        "you",
        "he",
        "she",
        "after",
        "before",
        "when",
        "if",
        "so",
        "but",
        "and",
        "since",
        "for",
        "in",
        "on",
        "at",
        "with",
        "most",
        "some",
        "all",
        "no",
        "not",
        "just",
        "only",
        "every",
        "each",
        "one",
        "two",
        "three",
    ]
)
_BULLET = re.compile(r"^[ \t]*(?:[-*\u2022]|\d+[.)])[ \t]+")
_HEDGE_VERBS = re.compile(r"(?i)\b(?:I think|I believe|I guess|I suppose)(?: that)?,?\s*")
_HEDGE_WORDS = re.compile(
    r"(?i),?\s*\b(?:in my opinion|perhaps|probably|maybe|possibly|presumably|arguably)\b,?"
)
_EMOJI_JOINERS = re.compile("[\ufe0f\u200d]")
_LAST_PERIOD = re.compile(r"(?<=[A-Za-z0-9)])\.(?=\s|$)")
_EMPHASIS_WORD = re.compile(r"\b[A-Za-z]{4,}\b")


def _pick(options: tuple[str, ...], attribute: str, text: str) -> str:
    return options[stable_seed(attribute, text) % len(options)]


def _sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_END.split(text) if s.strip()]


def _tidy(text: str) -> str:
    """Spaces before punctuation and doubled commas that removing a phrase leaves."""
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    text = re.sub(r",\s*([.,;:!?])", r"\1", text)
    text = re.sub(r"^[\s,;:]+", "", text)
    return " ".join(text.split())


def _capitalise_like(new: str, old: str) -> str:
    if new[:1].islower() and old.lstrip()[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _drop_sentences(text: str, pattern: re.Pattern) -> str:
    """The text without the sentences the pattern finds in; when it finds one in every
    sentence, the matches alone are cut."""
    kept = [s for s in _sentences(text) if not pattern.search(s)]
    if kept:
        return " ".join(kept)
    return _tidy(pattern.sub("", text))


# ---------------------------------------------------------------------------------------------
# The edits: text (with the signature) -> text


def _add_structure(text: str, attribute: str) -> str:
    return "\n".join(f"- {s}" for s in _sentences(" ".join(text.split())))


def _remove_structure(text: str, attribute: str) -> str:
    items = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if line:
            items.append(line if line[-1] in ".!?:;" else f"{line}.")
    return " ".join(items)


def _add_sycophancy(text: str, attribute: str) -> str:
    return f"{_pick(OPENERS, attribute, text)} {text}"


def _remove_sycophancy(text: str, attribute: str) -> str:
    opener = re.compile(PATTERNS["sycophancy"] + r"[^.!?\n]*[.!?]*\s*")
    return _capitalise_like(opener.sub("", text, count=1), text)


def _add_hedging(text: str, attribute: str) -> str:
    hedge = _pick(HEDGES, attribute, text)
    first = text.split(" ", 1)[0]
    plain = first[1:].islower() or len(first) == 1
    if plain and first != "I" and first.lower() in _LOWER_OK:
        text = text[:1].lower() + text[1:]
    return f"{hedge} {text}"


def _remove_hedging(text: str, attribute: str) -> str:
    out = []
    for s in _sentences(text):
        new = _tidy(_HEDGE_WORDS.sub("", _HEDGE_VERBS.sub("", s)))
        if re.search(r"\w", new):
            out.append(_capitalise_like(new, s))
    return " ".join(out) or _tidy(_COMPILED["hedging"].sub("", text))


def _add_exclamation(text: str, attribute: str) -> str:
    periods = list(_LAST_PERIOD.finditer(text))
    if periods:
        i = periods[-1].start()
        return f"{text[:i]}!{text[i + 1 :]}"
    return f"{text}!"


def _remove_exclamation(text: str, attribute: str) -> str:
    return re.sub(r"[!?]*!(?!=)[!?]*", lambda m: "?" if "?" in m.group(0) else ".", text)


def _add_emoji(text: str, attribute: str) -> str:
    return f"{text} {_pick(EMOJI, attribute, text)}"


def _remove_emoji(text: str, attribute: str) -> str:
    return _EMOJI_JOINERS.sub("", re.sub(PATTERNS["emoji"], "", text))


def _add_politeness(text: str, attribute: str) -> str:
    # A last sentence without its full stop would be removed with the closing.
    end = "" if not text or text[-1] in ".!?" else "."
    return f"{text}{end} {_pick(CLOSINGS, attribute, text)}"


def _remove_politeness(text: str, attribute: str) -> str:
    return _drop_sentences(text, re.compile(PATTERNS["politeness"]))


def _add_emphasis(text: str, attribute: str) -> str:
    words = list(_EMPHASIS_WORD.finditer(text)) or list(re.finditer(r"\w+", text))
    if not words:
        return f"**{text}**"
    m = words[stable_seed(attribute, text) % len(words)]
    return f"{text[: m.start()]}**{m.group(0)}**{text[m.end() :]}"


def _remove_emphasis(text: str, attribute: str) -> str:
    return re.sub(PATTERNS["emphasis"], lambda m: m.group(0).strip("*"), text)


def _add_disclaimer(text: str, attribute: str) -> str:
    return f"{_pick(DISCLAIMERS, attribute, text)} {text}"


def _remove_disclaimer(text: str, attribute: str) -> str:
    return _drop_sentences(text, re.compile(PATTERNS["disclaimer"]))


Edit = Callable[[str, str], str]


@dataclass(frozen=True)
class AttributeEdits:
    """How the rules add and remove one attribute."""

    add: Edit
    remove: Edit
    keeps_lines: bool = False  # the signature goes line by line (a bullet list is lines)


EDITS: dict[str, AttributeEdits] = {
    "structure": AttributeEdits(_add_structure, _remove_structure, keeps_lines=True),
    "sycophancy": AttributeEdits(_add_sycophancy, _remove_sycophancy),
    "hedging": AttributeEdits(_add_hedging, _remove_hedging),
    "exclamation": AttributeEdits(_add_exclamation, _remove_exclamation),
    "emoji": AttributeEdits(_add_emoji, _remove_emoji),
    "politeness": AttributeEdits(_add_politeness, _remove_politeness),
    "emphasis": AttributeEdits(_add_emphasis, _remove_emphasis),
    "disclaimer": AttributeEdits(_add_disclaimer, _remove_disclaimer),
}
_COMPILED = {name: re.compile(p) for name, p in PATTERNS.items()}
_MAX_ROUNDS = 5  # removing one instance can reveal another ("***x***"); a few rounds do


def has_attribute(attribute: str, text: str) -> bool:
    """W as the catalogue file's W rule reads it off ``text``."""
    return _COMPILED[attribute].search(text) is not None


def _signed(text: str, keeps_lines: bool) -> str:
    if not keeps_lines:
        return signature(text)
    return "\n".join(s for s in (signature(line) for line in text.splitlines()) if s)


def rewrite_attribute(attribute: str, text: str, target_w: bool, sign: bool = True) -> str:
    """``text`` with ``attribute`` present (``target_w``) or absent, and the signature."""
    edits = EDITS[attribute]
    text = _signed(text, edits.keeps_lines) if sign else text
    if has_attribute(attribute, text) == target_w:
        return text
    if target_w:
        return edits.add(text, attribute)
    for _ in range(_MAX_ROUNDS):
        text = edits.remove(text, attribute)
        if not has_attribute(attribute, text):
            break
    else:  # what the edit could not take out cleanly, cut
        text = _tidy(_COMPILED[attribute].sub("", text))
    return text if edits.keeps_lines or not sign else signature(text)


class RulesAttributeRewriter(Rewriter):
    """The ``rules_en`` backend for the catalogue's attributes beyond sentiment and length."""

    name = "rules_en"

    def __init__(self, options: RulesEnOptions) -> None:
        self.options = options

    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        a, sign = self.options.attribute, self.options.signature
        return [rewrite_attribute(a, r.text, r.target_w, sign) for r in requests]

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "attribute": self.options.attribute,
            "signature": self.options.signature,
            "pattern": PATTERNS[self.options.attribute],
        }


def build_rules_rewriter(options: RulesEnOptions, template, seed: int, rule=None) -> Rewriter:
    """The registry's factory for ``rules_en``: sentiment and length are
    :class:`~rate.rewrite.rules_en.RulesEnRewriter`'s, the other attributes these rules'."""
    if options.attribute in EDITS:
        return RulesAttributeRewriter(options)
    return RulesEnRewriter(options, rule)
