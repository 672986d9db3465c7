"""The attribute catalogue: its files load through the template loader, its rules flip W both
ways with known outputs and the signature once, and they reach their target on real text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rate.attributes import (
    CATALOGUE,
    attribute_rows,
    load_attribute_template,
    rule_success,
    select_attributes,
)
from rate.datasets.base import Example
from rate.datasets.w_classifiers import MisspelledShare
from rate.errors import ConfigError
from rate.records import REWRITE, REWRITTEN
from rate.rewrite.options import RULE_ATTRIBUTES
from rate.rewrite.rules_attributes import EDITS, PATTERNS, has_attribute, rewrite_attribute
from rate.rewrite.rules_en import signature

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "dataset_templates" / "attributes"
REQUIRED = {"length", "sentiment", "structure", "sycophancy", "hedging", "exclamation"}
REQUIRED |= {"emoji", "politeness", "emphasis", "disclaimer", "typos"}


@pytest.fixture
def jsonl_source(tmp_path) -> dict:
    rows = [
        {"text": "Great question. It's fine!", "id": "a"},
        {"text": "I think it works. Short.", "id": "b"},
        {"text": "A long plain answer with many more words than the others have here.", "id": "c"},
    ]
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"kind": "jsonl", "path": str(path), "text_field": "text", "prompt": "Q: "}


def test_the_index_and_the_files_and_the_rules_agree():
    assert set(CATALOGUE) == REQUIRED
    assert {p.stem for p in FOLDER.glob("*.yaml")} == REQUIRED
    assert set(RULE_ATTRIBUTES) == {"sentiment", "length", *EDITS} and set(EDITS) == set(PATTERNS)
    for name, pattern in PATTERNS.items():  # an LLM's rewrites are checked with the file's rule
        rule = yaml.safe_load((FOLDER / f"{name}.yaml").read_text())["w_classifier"]
        assert rule == {"rule": "text_matches", "pattern": pattern}, name
    offline = {r["name"] for r in attribute_rows() if r["offline_rewriter"]}
    assert offline == REQUIRED - {"sentiment", "typos"}
    assert all(CATALOGUE[n].note for n in REQUIRED - offline)  # each says why it needs an LLM


def test_every_attribute_loads_when_included_by_a_template_with_a_source(tmp_path, jsonl_source):
    for name in CATALOGUE:
        t = load_attribute_template(name, jsonl_source, 3, tmp_path / "templates")
        assert t.name == f"{name}_jsonl" and t.includes == [str(FOLDER / f"{name}.yaml")]
        assert t.n_examples == 3 and t.part("source").path == jsonl_source["path"]
        assert t.description == CATALOGUE[name].description != ""
        assert "{" not in t.instruction("x", True) and t.w_strings["w=1"] in t.instruction("x", 1)


def test_select_attributes():
    assert [a.name for a in select_attributes("all")] == list(CATALOGUE)
    assert [a.name for a in select_attributes("emoji, length,emoji")] == ["emoji", "length"]
    with pytest.raises(ConfigError, match="did you mean 'emoji'"):
        select_attributes("emojis")


# (attribute, text without it, the rule's output with it): the signature is applied first.
ADDED = [
    ("structure", "It's good. It works.\nFine", "- It is good.\n- It works.\n- Fine"),
    ("sycophancy", "It works.", "Good question. It works."),
    ("hedging", "The drug works.", "I believe the drug works."),
    ("hedging", "Lexapro works.", "Probably Lexapro works."),  # a name keeps its capital
    ("exclamation", "It works. I'm happy.", "It works. I am happy!"),
    ("exclamation", "It works", "It works!"),
    ("emoji", "It works.", "It works. \U0001f44d"),
    ("politeness", "It works.", "It works. I hope this helps."),
    ("politeness", "It works", "It works. Let me know if you have any other questions."),
    ("emphasis", "It works well for me.", "It **works** well for me."),
    (
        "disclaimer",
        "It works.",
        "I am an AI language model, so I do not have personal opinions. It works.",
    ),
]
# (attribute, text with it, the rule's output without it)
REMOVED = [
    (
        "structure",
        "Steps:\n- Restart it\n2. Check the cable.",
        "Steps: Restart it. Check the cable.",
    ),
    ("sycophancy", "That's a great question! It works.", "It works."),
    ("hedging", "I think it works. It is, probably, fine. Maybe.", "It works. It is fine."),
    ("exclamation", "Wow!!! Really?! Yes! a != b", "Wow. Really? Yes. a != b"),
    ("emoji", "Works \U0001f44d\ufe0f great \u2728", "Works great"),
    ("politeness", "It works. I hope this helps! Bye.", "It works. Bye."),
    ("emphasis", "It **really** works *well*, 2 * 3.", "It really works well, 2 * 3."),
    ("disclaimer", "As an AI, I can't know. It works.", "It works."),
]


@pytest.mark.parametrize(("attribute", "text", "expected"), ADDED)
def test_adding_an_attribute(attribute, text, expected):
    assert not has_attribute(attribute, text)
    out = rewrite_attribute(attribute, text, True)
    assert out == expected and has_attribute(attribute, out)
    assert rewrite_attribute(attribute, text, True) == out  # the same text, the same choice


@pytest.mark.parametrize(("attribute", "text", "expected"), REMOVED)
def test_removing_an_attribute(attribute, text, expected):
    assert has_attribute(attribute, text)
    out = rewrite_attribute(attribute, text, False)
    assert out == expected and not has_attribute(attribute, out)


@pytest.mark.parametrize("attribute", sorted(EDITS))
def test_the_rewrite_of_the_rewrite_carries_the_signature_once(attribute):
    text = "It's  fine, they'll see. We can't stop now."
    rewrite = rewrite_attribute(attribute, text, True)
    back = rewrite_attribute(attribute, rewrite, False)
    assert back == signature(text) == "It is fine, they will see. We cannot stop now."
    assert rewrite_attribute(attribute, back, True) == rewrite  # and round again


@pytest.mark.parametrize("attribute", sorted(EDITS))
def test_a_text_at_the_target_keeps_its_w(attribute):
    without = "It's fine. It works"
    with_it = rewrite_attribute(attribute, without, True)
    assert rewrite_attribute(attribute, without, False) == signature(without)
    again = rewrite_attribute(attribute, with_it, True)
    assert again == with_it and has_attribute(attribute, again)


def test_misspelled_share_reads_typos_off_the_text():
    rule = MisspelledShare(threshold=0.15)
    clean, typos = "the patient took this medicine daily", "teh patient tokoethis mdeicine daily"
    assert rule.share(clean) == 0.0
    assert rule.share(typos) == pytest.approx(3 / 5)  # teh, tokoethis, mdeicine of 5 words
    assert rule.classify_texts([clean, typos]) == [False, True]
    assert rule(Example("k", typos, "p")) is True


def test_the_rules_reach_90_percent_on_drug_reviews_both_passes(tmp_path):
    source = {"kind": "drug_reviews", "split": "all"}
    for name, attribute in CATALOGUE.items():
        if not attribute.offline_rewriter:
            continue
        template = load_attribute_template(name, source, 120, tmp_path)
        result = rule_success(template, 120, seed=0)
        assert result["n"] == 120
        for p in (REWRITE, REWRITTEN):
            assert result["passes"][p]["passing"] >= 0.9, (name, p, result["passes"][p])
