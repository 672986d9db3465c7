"""Bad text-side template and config keys: each a one-line error naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rate.catalog import load_config, load_dataset_template
from rate.errors import ConfigError, TemplateError
from rate.pipeline import create_dataset
from rate.store import Layout
from tests.helpers import ROOT

BASE = yaml.safe_load((ROOT / "dataset_templates" / "drugreview_length.yaml").read_text())


def put(tmp_path: Path, monkeypatch, **changes) -> None:
    (tmp_path / "dataset_templates").mkdir(exist_ok=True)
    data = {**BASE, **changes}
    (tmp_path / "dataset_templates" / "drugreview_length.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"rewriter": {"backend": "rules_en", "attribute": "tone"}}, "rewriter.attribute"),
        (
            {
                "w_classifier": {
                    "rule": "field_equals",
                    "field": "rating",
                    "w1_values": ["positive"],
                }
            },
            "rules_en length rewriter needs w_classifier.rule: field_above",
        ),
        ({"w_classifier": {"rule": "text_matches", "pattern": "(["}}, "is not a regex"),
        ({"perturb": {"kind": "typos", "rate": 2}}, "perturb.rate"),
        ({"perturb": {"kind": "typos", "rate": 0.1, "apply_to": "w=2"}}, "perturb.apply_to"),
        ({"rewrite_check": {"scorer": "vaderr"}}, "rewrite_check.scorer.*vader"),
        ({"source": {"kind": "drug_reviews", "split": "dev"}}, "source.split"),
        ({"source": {"kind": "drug_reviews", "prompt": "{rating}"}}, "source.prompt"),
    ],
)
def test_bad_text_template_keys(changes, message, tmp_path, monkeypatch):
    put(tmp_path, monkeypatch, **changes)
    with pytest.raises(TemplateError, match=message) as err:
        load_dataset_template("drugreview_length")
    assert "drugreview_length.yaml" in str(err.value)


def test_unknown_chatterbot_topic_lists_the_topics(tmp_path, monkeypatch):
    put(tmp_path, monkeypatch, source={"kind": "chatterbot", "topics": ["ai", "cooking"]})
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        # The default config groups by the tiny world's policy, which chatterbot rows lack.
        ["rewrites.dataset_name=drugreview_length", "smoke_test=true", "effects.group_by=null"],
    )
    with pytest.raises(ConfigError, match=r"source.topics': unknown \['cooking'\].*ai, botprofile"):
        create_dataset(config, Layout(tmp_path / "p"))


def test_bad_price_table_names_the_key():
    with pytest.raises(ConfigError, match="rewrites.prices.gpt-x needs input_per_1m"):
        load_config(ROOT / "experiments" / "config.yaml", ["rewrites.prices={gpt-x: {input: 1}}"])
