"""Known answers for the text side of create_dataset: W rules on text, the seeded typos, the
rewrite checks and the offline English rewriter."""

from __future__ import annotations

import pytest

from rate.datasets.base import Example
from rate.datasets.perturb import Typos
from rate.datasets.w_classifiers import Always, FieldAbove, ScorerAbove, TextMatches
from rate.rewrite.base import RewriteRequest
from rate.rewrite.checks import label_outputs, summarize
from rate.rewrite.options import FILLER, RulesEnOptions
from rate.rewrite.rules_en import RulesEnRewriter, signature


def ex(text: str, key: str = "k", **fields) -> Example:
    return Example(key, text, "prompt", fields)


def test_length_rules_measure_the_text_not_the_record():
    chars = FieldAbove("text_length", "median")
    words = FieldAbove("text_words", 2)
    examples = [ex("a b"), ex("a b c d"), ex("abcdefghij")]  # 3, 7, 10 characters
    assert chars.fit(examples) == {"threshold": 7.0}
    assert [chars(e) for e in examples] == [False, False, True]
    assert [words(e) for e in examples] == [False, True, False]
    assert chars.classify_texts(["12345678", "1234567"]) == [True, False]


def test_text_matches_vowel_start():
    rule = TextMatches(r"^\W*[AEIOUaeiou]")
    assert [rule(ex(t)) for t in ("An ok film", '"Every" bit', "The end", "")] == [
        True,
        True,
        False,
        False,
    ]


def test_always_and_field_rules_cannot_read_rewrites():
    assert Always(True)(ex("x")) is True
    assert Always().classify_texts(["x"]) is None


def test_scorer_above_with_vader_and_margin():
    rule = ScorerAbove("vader", threshold=0.0, margin=0.05)
    examples = [ex("good", "a"), ex("bad", "b"), ex("the table", "c")]
    assert rule.fit(examples) == {"threshold": 0.0, "scorer": "vader"}
    assert [rule(e) for e in examples] == [True, False, None]
    assert rule.classify_texts(["great", "awful"]) == [True, False]


def test_typos_are_seeded_and_keep_the_first_letter():
    typos = Typos(rate=1.0)
    text = "Every movie deserves attention, ok?"
    out, n = typos(text, "key1", seed=0)
    assert out == typos(text, "key1", seed=0)[0]  # reproducible
    assert out != typos(text, "key2", seed=0)[0] or n == 0
    words, new = text.split(), out.split()
    for a, b in zip(words, new, strict=True):
        assert a[0] == b[0] and sorted(a) == sorted(b)  # same letters, first one kept
    assert new[-1] == "ok?"  # words under three letters are left alone
    # 'Every', 'movie', 'deserves', 'attention': each gets one swap unless it picks equal letters
    assert n == sum(a != b for a, b in zip(words, new, strict=True)) and n >= 3
    none, zero = Typos(rate=0.000001)(text, "key1", seed=0)
    assert none == text and zero == 0


def test_rewrite_check_labels():
    inputs = ["good film", "good film", "good film", "good film", "good film", "good film"]
    outputs = ["bad film", "  ", "I'm sorry, but I can't help with that.", "good film", "fine", "x"]
    targets = [False] * 6

    def read(texts):
        return [{"bad film": False, "fine": True, "x": None}[t] for t in texts]

    labels = label_outputs(inputs, outputs, targets, read)
    assert labels == ["ok", "empty", "refusal", "unchanged", "missed_target", "undefined"]
    s = summarize(labels)
    # One success figure, of all rewrites: no share over the rewrites whose W could be read.
    assert s["ok"] == 1 and "reached_target" not in s
    assert s["passing"] == pytest.approx(1 / 6, abs=1e-4)
    assert label_outputs(["a"], ["b"], [True], lambda texts: None) == ["unchecked"]


def test_signature_is_idempotent():
    text = "I  don't think it's bad;   I'm fine. They'll see.\n It can't be."
    once = signature(text)
    assert once == "I do not think it is bad; I am fine. They will see. It cannot be."
    assert signature(once) == once


def request(text: str, target: bool) -> RewriteRequest:
    return RewriteRequest("k", text, target, "instruction")


def test_sentiment_rules_swap_toward_the_target():
    rw = RulesEnRewriter(RulesEnOptions("sentiment"))
    negative = rw.rewrite([request("Great drug, I love it. It's the BEST.", False)])[0]
    assert negative == "Terrible drug, I hate it. It is the WORST."
    back = rw.rewrite([request(negative, True)])[0]
    assert back == "Great drug, I love it. It is the BEST."
    # The rewrite of the rewrite carries the signature once, like the rewrite.
    assert back == signature("Great drug, I love it. It's the BEST.")


def test_length_rules_reach_the_threshold():
    rule = FieldAbove("text_words", 6)
    rw = RulesEnRewriter(RulesEnOptions("length"), rule)
    short = "It worked. I slept well at night. No problems at all."
    out = rw.rewrite([request(short, False)])[0]
    assert out == "It worked."  # sentences dropped from the end until <= 6 words
    longer = rw.rewrite([request("It worked.", True)])[0]
    assert longer == f"It worked. {FILLER[0]}" and len(longer.split()) > 6
    one = rw.rewrite([request("one two three four five six seven eight", False)])[0]
    assert one == "one two three four five six"


def test_filler_is_neutral_for_vader():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    vader = SentimentIntensityAnalyzer()
    assert all(vader.polarity_scores(s)["compound"] == 0 for s in FILLER)
