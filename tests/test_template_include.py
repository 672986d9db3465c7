"""include: a template starts from another one and overrides keys."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rate.catalog import load_dataset_template, load_scoring_template
from rate.errors import TemplateError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def roots(tmp_path, monkeypatch):
    for folder in ("dataset_templates", "scoring_templates"):
        (tmp_path / folder).mkdir()
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    return tmp_path


def put(root: Path, name: str, data: dict, folder: str = "dataset_templates") -> Path:
    path = root / folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, **data}, sort_keys=False))
    return path


def test_mappings_merge_key_by_key_and_the_rest_is_inherited(roots):
    put(roots, "child", {"include": "tinyrlhf_dune_pa", "source": {"families": ["birch"]}})
    child, base = load_dataset_template("child"), load_dataset_template("tinyrlhf_dune_pa")
    assert child.part("source").families == ["birch"]
    assert child.part("source").policies == base.part("source").policies  # merged, not lost
    assert child.rewrite_prompt == base.rewrite_prompt and child.n_examples == 2000
    assert child.name == "child" and child.includes == [
        str(
            ROOT / "src" / "tinyworld" / "templates" / "dataset_templates" / "tinyrlhf_dune_pa.yaml"
        )
    ]
    assert child.record()["includes"] == child.includes


def test_a_part_of_another_kind_replaces_the_included_part_whole(roots):
    put(
        roots,
        "child",
        {
            "include": "tinyrlhf_dune_pa",
            "w_classifier": {"rule": "text_matches", "pattern": "pa"},
        },
    )
    with pytest.raises(TemplateError, match="token_swap"):
        # Replaced whole (no token/counterpart left over), so the tiny rewriter's own rule
        # (it needs a token_swap W rule) is what fails, not an unknown key.
        load_dataset_template("child")


def test_include_by_relative_file_and_chains(roots):
    (roots / "dataset_templates" / "base.yaml").write_text(
        (ROOT / "src" / "tinyworld" / "templates" / "dataset_templates" / "tinyrlhf_dune_pa.yaml")
        .read_text()
        .replace("name: tinyrlhf_dune_pa", "name: base")
    )
    put(roots, "middle", {"include": "base.yaml", "n_examples": 300})
    put(roots, "top", {"include": "middle", "source": {"families": ["fjord"]}})
    top = load_dataset_template("top")
    assert top.n_examples == 300 and top.part("source").families == ["fjord"]
    assert [Path(p).name for p in top.includes] == ["middle.yaml", "base.yaml"]


def test_include_loops_and_missing_targets_are_named(roots):
    put(roots, "x", {"include": "y"})
    put(roots, "y", {"include": "x"})
    with pytest.raises(TemplateError, match="makes a loop"):
        load_dataset_template("x")
    put(roots, "z", {"include": "tinyrlhf_dune_pq"})
    with pytest.raises(
        TemplateError, match=r"z.yaml: key 'include'.*did you mean 'tinyrlhf_dune_pa'"
    ):
        load_dataset_template("z")
    put(roots, "q", {"include": "missing.yaml"})
    with pytest.raises(TemplateError, match="key 'include': no such file"):
        load_dataset_template("q")


def test_scoring_include_drops_the_other_backends_options(roots):
    put(
        roots,
        "neg",
        {"include": "distilbert_positive", "reward_key": "neg", "label": 0},
        "scoring_templates",
    )
    t = load_scoring_template("neg")
    assert (t.spec.label, t.spec.model, t.reward_key) == (
        0,
        "distilbert/distilbert-base-uncased-finetuned-sst-2-english",
        "neg",
    )
    put(
        roots,
        "v",
        {"include": "distilbert_positive", "backend": "vader", "reward_key": "v"},
        "scoring_templates",
    )
    assert load_scoring_template("v").backend == "vader"  # hf_classifier's keys left behind


def test_shipped_includes_equal_what_they_replace():
    anvil, dune = (
        load_dataset_template("tinyrlhf_anvil_pa"),
        load_dataset_template("tinyrlhf_dune_pa"),
    )
    assert anvil.part("source").families == ["anvil"]
    assert {
        k: v
        for k, v in anvil.record().items()
        if k not in ("name", "path", "includes", "description", "source")
    } == {
        k: v
        for k, v in dune.record().items()
        if k not in ("name", "path", "includes", "description", "source")
    }
    neg, pos = (
        load_scoring_template("distilbert_negative"),
        load_scoring_template("distilbert_positive"),
    )
    assert (neg.spec.label, pos.spec.label, neg.spec.model) == (0, 1, pos.spec.model)


def test_a_chain_of_thousands_of_includes_is_one_line(roots):
    """Issue 45: a 3,000-deep include chain aborted ``rate validate`` with RecursionError."""
    for i in range(3000):
        put(roots, f"c{i}", {"include": f"c{i + 1}"})
    put(roots, "c3000", {"include": "tinyrlhf_dune_pa"})
    with pytest.raises(TemplateError, match=r"c0.yaml: key 'include' chains more than 32"):
        load_dataset_template("c0")


def test_a_thousand_templates_are_listed_once_not_at_each_lookup(roots, monkeypatch):
    """Issue 45: `rate validate` over thousands of chained templates listed (and in a flat
    folder parsed) every template file at each lookup by name: quadratic."""
    import rate.templates

    built = []
    build = rate.templates._build_index
    monkeypatch.setattr(rate.templates, "_build_index", lambda *a: built.append(a) or build(*a))
    for i in range(1000):  # chains of ten, each ending at a shipped template
        target = "tinyrlhf_dune_pa" if i % 10 == 9 else f"c{i + 1}"
        put(roots, f"c{i}", {"include": target})
    for i in range(0, 1000, 10):
        assert load_dataset_template(f"c{i}").name == f"c{i}"
    assert len(built) <= 2  # once per folder kind at most: 1,000 lookups, one listing
    put(roots, "late", {"include": "c0"})  # a template added: the listing is built anew
    assert load_dataset_template("late").name == "late"
