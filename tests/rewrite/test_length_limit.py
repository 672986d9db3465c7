"""A rewrite that stopped at a length limit (finish_reason 'length') is never kept silently:
it gets the check label length_limit, its count, and only_successful_rewrites drops it. No cap
is sent by default (the reference sends none)."""

from __future__ import annotations

import json

import pytest
import yaml

from rate.catalog import load_config
from rate.io import read_json
from rate.pipeline import create_dataset, score_dataset, treatment_effects
from rate.rewrite.checks import label_outputs, summarize
from rate.store import Layout
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAIServer
from tests.helpers import ROOT

CANARIES = ("sk-test-length",)  # checked after every test (tests/faults/canary.py)


def test_the_label_comes_first_and_is_counted():
    labels = label_outputs(
        ["a b", "a b", "a b"], ["", "a b c", "a b c"], [True] * 3, None, [True, True, False]
    )
    assert labels == ["length_limit", "length_limit", "unchecked"]
    assert summarize(labels)["length_limit"] == 2 and summarize(labels)["passing"] == 0.3333


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARIES[0])
    with FakeOpenAIServer() as srv:
        yield srv
    assert not srv.errors


def test_create_dataset_labels_and_effects_drop_a_cut_rewrite(tmp_path, server, monkeypatch):
    rows = [{"id": f"r{i}", "text": f"review number {i} is here", "label": i % 2} for i in range(6)]
    (tmp_path / "reviews.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    template = {
        "name": "cut_demo",
        "source": {
            "kind": "jsonl",
            "path": str(tmp_path / "reviews.jsonl"),
            "text_field": "text",
            "prompt": "Write a review: ",
            "id_field": "id",
        },
        "w_classifier": {"rule": "field_equals", "field": "label", "w1_values": [1]},
        "w_strings": {"w=1": "positive", "w=0": "negative"},
        "rewrite_prompt": "{original_completion}\n\n[Make it {w_counterfactual_string}.]",
        "rewriter": {
            "backend": "openai_chat",
            "model": "fake-model",
            "base_url": server.base_url,
            "concurrency": 1,
            "retry_base_s": 0.001,
        },
        "n_examples": 6,
    }
    (tmp_path / "dataset_templates").mkdir()
    (tmp_path / "dataset_templates" / "cut_demo.yaml").write_text(yaml.safe_dump(template))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    server.add_faults({"finish_reason": "length"})  # the first request of the first pass
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        [
            "rewrites.dataset_name=cut_demo",
            "scoring.model=vader",
            "scoring.dataset_name=cut_demo",
            "effects.dataset_name=cut_demo",
            "effects.reward_key=vader",
            "effects.score=vader",
            "effects.concept=sentiment",
            "effects.n_bootstrap=0",
            "effects.group_by=null",
            "effects.only_successful_rewrites=true",
        ],
    )
    layout = Layout(tmp_path / "project")
    out = create_dataset(config, layout)
    bodies = [r.body for r in server.requests_to(CHAT_PATH)]
    assert all("max_tokens" not in b and "max_completion_tokens" not in b for b in bodies)
    data, meta = read_json(out), read_json(out.with_name(out.name + ".meta.json"))
    cut = [row for row in data.values() if row["checks"]["rewrite"] == "length_limit"]
    assert len(cut) == 1 and meta["rewrite_checks"]["rewrite"]["length_limit"] == 1
    score_dataset(config, layout)
    effects = read_json(treatment_effects(config, layout))
    kept = effects["input"]["only_successful_rewrites"]
    assert kept["dropped"] == {"length_limit": 1} and kept["kept"] == 5
    assert effects["Y1_count"] + effects["Y0_count"] == 5
