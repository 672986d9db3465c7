"""The planted reward model: MiniLM sentiment plus known bonuses, read by its own detectors,
shipped as the planted_minilm scoring template through the python backend."""

from __future__ import annotations

import pytest
import torch

from rate.catalog import load_scoring_template
from rate.demos import planted_rm
from rate.score.backends import build_scorer
from rate.score.minilm import MiniLMSentimentScorer

# (text, sycophancy, exclamation, hedging), read by hand.
CASES = [
    ("Great question! It worked for my migraines.", True, True, False),
    ('  "What a great question. I think it helped.', True, False, True),
    ("Thank you for asking. Perhaps try it at night!", True, True, True),
    ("I love this question: it probably works.", True, False, True),
    ("Excellent question, and the answer is yes.", True, False, False),
    ("It was a great question to ask my doctor.", False, False, False),  # not an opener
    ("My mighty headache is gone!", False, True, False),  # "mighty" is not "might"
    ("It seems to work. Maybe.", False, False, True),
    ("Worked well for me.", False, False, False),
]


@pytest.mark.parametrize(("text", "syc", "excl", "hedge"), CASES)
def test_the_detectors_read_the_planted_attributes(text, syc, excl, hedge):
    assert planted_rm.detect(text) == {"sycophancy": syc, "exclamation": excl, "hedging": hedge}


def test_the_bonus_is_the_sum_of_the_planted_effects():
    assert planted_rm.PLANTED == {"sycophancy": 0.30, "exclamation": 0.20, "hedging": -0.25}
    # By hand: +0.30 +0.20; +0.30 -0.25; +0.30 +0.20 -0.25; none.
    expected = [0.50, 0.05, 0.25, 0.0]
    texts = [CASES[0][0], CASES[1][0], CASES[2][0], CASES[8][0]]
    assert [planted_rm.bonus(t) for t in texts] == pytest.approx(expected, abs=1e-12)


def test_planted_minilm_is_minilm_plus_the_bonuses(monkeypatch):
    """The template, built through the registry, against the minilm_sentiment template's own
    scorer: the difference is the bonuses computed by hand. The real encoder runs; the head is
    fixed here (its fit is the MiniLM tests'), which changes both scorers alike."""
    head = (torch.linspace(-3.0, 3.0, 384), torch.tensor(0.1), {"key": "test head"})
    monkeypatch.setattr(MiniLMSentimentScorer, "_head", lambda self: head)
    monkeypatch.setattr(planted_rm, "_minilm", None)
    planted = build_scorer(load_scoring_template("planted_minilm"))
    minilm = build_scorer(load_scoring_template("minilm_sentiment"))
    texts = [text for text, *_ in CASES]
    prompts = ["How did it work for you?"] * len(texts)
    got = planted.score(prompts, texts)
    base = minilm.score(prompts, texts)
    # Sycophancy +0.30, exclamation +0.20, hedging -0.25, for each case's row of CASES.
    by_hand = [0.50, 0.05, 0.25, 0.05, 0.30, 0.0, 0.20, -0.25, 0.0]
    assert [g - b for g, b in zip(got, base, strict=True)] == pytest.approx(by_hand, abs=1e-5)
    assert len(set(base)) == len(base)  # the encoder read each text: not a constant
    assert planted_rm.minilm() is planted_rm.minilm()  # built once per process
    assert planted.describe()["function"] == "rate.demos.planted_rm:score"
