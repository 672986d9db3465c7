"""Templates: the shipped ones validate; broken ones fail with a message that says what to fix."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from rate.catalog import load_config, load_dataset_template, load_scoring_template, validate_all
from rate.errors import TemplateError
from rate.pipeline import create_dataset
from rate.store import Layout
from rate.templates import dataset_template_names, scoring_template_names
from tests.factories import english_template
from tests.helpers import run_rate

ROOT = Path(__file__).resolve().parents[1]
GOOD = yaml.safe_load(
    (
        ROOT / "src" / "tinyworld" / "templates" / "dataset_templates" / "tinyrlhf_dune_pa.yaml"
    ).read_text()
)


@pytest.fixture
def template_dir(tmp_path, monkeypatch):
    """An extra template root searched before the repository's."""
    (tmp_path / "dataset_templates").mkdir()
    (tmp_path / "scoring_templates").mkdir()
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    return tmp_path


def put(root: Path, name: str, data: dict, folder: str = "dataset_templates") -> None:
    (root / folder / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, **data}))


def test_every_shipped_template_validates():
    results = validate_all()
    assert {n for k, n, _ in results if k == "dataset"} >= {
        "tinyrlhf_dune_pa",
        "tinyrlhf_ember_he",
        "tinyrlhf_anvil_pa",
        "tinyrlhf_clean_pa_he",
    }
    assert {"tinyrlhf_rm", "tinyrlhf_oracle"} <= set(scoring_template_names())
    assert [r for r in results if r[2] is not None] == []


def test_rate_validate_command(tmp_path):
    out = run_rate(["validate", "--config", "experiments/tinyworld/demo.yaml"], tmp_path)
    assert "ok   dataset  tinyrlhf_dune_pa" in out.stdout and "ok   config" in out.stdout
    bad = ["--set", "rewrites.dataset_name=drugreview_sentiment", "--set", "scoring.model=vader"]
    demo = "experiments/tinyworld/demo.yaml"
    out = run_rate(["validate", "--config", demo, *bad], tmp_path, check=False)
    assert out.returncode == 2 and "'effects.group_by' is 'policy'" in out.stderr


def test_loaded_template_parts_are_typed():
    t = load_dataset_template("tinyrlhf_dune_pa")
    kind, rule = t.parts["w_classifier"]
    assert (kind, rule.token, rule.counterpart) == ("token_swap", "pa", "ba")
    assert t.instruction("ba da", True).startswith(
        "ba da\n\n[Adjust this response so it is using 'pa'"
    )
    s = load_scoring_template("tinyrlhf_oracle")
    assert (s.reward_key, s.backend, s.batch_size) == ("true_quality", "tinyrlhf_oracle", 4096)


def test_unknown_template_suggests_close_names():
    with pytest.raises(TemplateError, match="did you mean 'tinyrlhf_ember_he'"):
        load_dataset_template("tinyrlhf_embr_he")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"rewrite_prompt": "Make it {w_counterfactual_string}"}, "{original_completion}"),
        ({"rewrite_prompt": "{original_completion} {target}"}, "exactly the placeholders"),
        ({"w_strings": {"w=1": "a"}}, "exactly the keys 'w=1' and 'w=0'"),
        ({"w_classifier": {"rule": "token_swapp", "token": "pa"}}, "did you mean 'token_swap'"),
        (
            {"w_classifier": {"rule": "token_swap", "token": "pq", "counterpart": "ba"}},
            "not a syllable",
        ),
        (
            {"rewriter": {"backend": "tinyrlhf", "style_map": {"ga": "ka", "ka": "ra"}}},
            "idempotent",
        ),
        (
            {"rewriter": {"backend": "tinyrlhf", "style_map": {"pa": "ka"}}},
            "must not touch the W tokens",
        ),
        (
            {"rewriter": {"backend": "tinyrlhf", "edit_rat": 0.1}},
            "did you mean 'rewriter.edit_rate'",
        ),
        ({"rewriter": {"backend": "openai_batchh"}}, "unknown backend 'openai_batchh'"),
        ({"source": {"kind": "tinyrlhf", "policies": {}}}, "positive shares"),
        ({"source": {"kind": "tinyrlhf", "policies": {"policy": float("nan")}}}, "positive shares"),
        ({"n_examples": "many"}, "key 'n_examples': expected an integer"),
    ],
)
def test_broken_dataset_templates(template_dir, change, message):
    put(template_dir, "broken", {**{k: v for k, v in GOOD.items() if k != "name"}, **change})
    with pytest.raises(TemplateError) as err:
        load_dataset_template("broken")
    assert message in str(err.value)
    assert "broken.yaml" in str(err.value)
    # `rate validate` reports it and goes on with the others.
    results = {n: e for _, n, e in validate_all()}
    assert results["broken"] is not None and results["tinyrlhf_dune_pa"] is None


def test_name_must_match_the_file(template_dir):
    (template_dir / "dataset_templates" / "a.yaml").write_text(yaml.safe_dump(GOOD))
    with pytest.raises(
        TemplateError, match="key 'name' is 'tinyrlhf_dune_pa' but the file is a.yaml"
    ):
        load_dataset_template("a")


def test_unparseable_template_is_an_error_with_its_line(template_dir):
    (template_dir / "dataset_templates" / "bad.yaml").write_text("name: bad\nsource: [\n")
    with pytest.raises(TemplateError, match=r"bad\.yaml:\d+: not valid YAML"):
        load_dataset_template("bad")
    assert "bad" in dataset_template_names()


def test_broken_scoring_templates(template_dir):
    put(template_dir, "s1", {"reward_key": "k", "backend": "tinyrlhf_rmm"}, "scoring_templates")
    with pytest.raises(TemplateError, match="did you mean 'tinyrlhf_rm'"):
        load_scoring_template("s1")
    put(
        template_dir,
        "s2",
        {"reward_key": "k", "backend": "tinyrlhf_rm", "modle": "x"},
        "scoring_templates",
    )
    with pytest.raises(TemplateError, match="unknown key 'modle'; did you mean 'model'"):
        load_scoring_template("s2")
    put(template_dir, "s3", {"backend": "tinyrlhf_rm"}, "scoring_templates")
    with pytest.raises(TemplateError, match="missing required key 'reward_key'"):
        load_scoring_template("s3")


def test_a_misspelt_scoring_key_lists_every_key_the_template_may_have(template_dir):
    """main listed the backend's keys alone ('field, input' for vader)."""
    put(
        template_dir,
        "s4",
        {"reward_key": "k", "backend": "vader", "modle": "x"},
        "scoring_templates",
    )
    with pytest.raises(TemplateError) as err:
        load_scoring_template("s4")
    message = str(err.value)
    assert "s4.yaml: unknown key 'modle'" in message
    assert "Valid keys: name, reward_key, backend, description, batch_size, field, input" in message
    assert "(the vader backend's own keys: field, input, max_chars, truncation)" in message


def test_an_unknown_scoring_backend_names_the_key_backend(template_dir):
    put(template_dir, "s5", {"reward_key": "k", "backend": "vaderr"}, "scoring_templates")
    with pytest.raises(
        TemplateError,
        match=r"s5\.yaml: key 'backend': unknown backend 'vaderr'; did you mean 'vader'\?",
    ):
        load_scoring_template("s5")


def test_a_template_that_shadows_a_shipped_one_is_told_in_the_log(template_dir, caplog):
    """main let a scoring_templates/vader.yaml of the working folder win silently."""
    put(template_dir, "vader", {"reward_key": "mine", "backend": "vader"}, "scoring_templates")
    assert load_scoring_template("vader").reward_key == "mine"
    shipped = ROOT / "scoring_templates" / "vader.yaml"
    assert f"{template_dir / 'scoring_templates' / 'vader.yaml'} shadows {shipped}" in caplog.text


def _python_rule_template(root: Path, function: str) -> None:
    english_template(root, "hooked", w_classifier={"rule": "python", "function": function})


def test_a_python_hook_that_cannot_be_imported_fails_validation(template_dir, monkeypatch):
    """main's `rate validate` passed a hook naming a module that does not exist."""
    monkeypatch.syspath_prepend(str(template_dir))
    (template_dir / "hooks_ok.py").write_text("def w(example):\n    return True\n")
    for function, message in (
        ("no_such_module_xyz:w", "no module 'no_such_module_xyz' on the Python path"),
        ("hooks_ok:missing", "defines no function 'missing' at its top level"),
        ("hooks_ok", "write 'module:function'"),
    ):
        _python_rule_template(template_dir, function)
        with pytest.raises(TemplateError, match=message):
            load_dataset_template("hooked")
        assert {n: e for _, n, e in validate_all()}["hooked"] is not None
    _python_rule_template(template_dir, "hooks_ok:w")
    assert load_dataset_template("hooked").part("w_classifier").function == "hooks_ok:w"
    assert "hooks_ok" not in sys.modules  # validating read the module; it did not run it


def test_a_python_hook_that_raises_is_one_line_naming_the_example_and_the_line(
    template_dir, monkeypatch, tmp_path
):
    """main let the hook's ZeroDivisionError through: a raw traceback."""
    monkeypatch.syspath_prepend(str(template_dir))
    (template_dir / "hooks_bad.py").write_text("def w(example):\n    return 1 / 0\n")
    _python_rule_template(template_dir, "hooks_bad:w")
    monkeypatch.setenv("PROJECT_DIR", str(tmp_path / "p"))
    config = load_config(ROOT / "experiments" / "smoke.yaml", ["rewrites.dataset_name=hooked"])
    with pytest.raises(TemplateError) as err:
        create_dataset(config, Layout(tmp_path / "p"))
    message = str(err.value)
    assert "\n" not in message
    assert (
        "hooked.yaml" in message
        and "'hooks_bad:w' raised ZeroDivisionError: division by zero" in message
    )
    assert re.search(
        rf"on example r\d+ \(at {re.escape(str(template_dir))}/hooks_bad\.py:2\)", message
    )


def test_a_flat_folder_in_the_template_path_holds_both_kinds(tmp_path, monkeypatch, caplog):
    """RATE_TEMPLATE_PATH may name a folder of YAML files (no dataset_templates/ or
    scoring_templates/ in it): each file is a dataset or a scoring template by its keys, or by
    those of the template it includes; a listed folder with no template is named in the log."""
    flat = tmp_path / "mine"
    flat.mkdir()
    (flat / "my_dune.yaml").write_text(yaml.safe_dump({**GOOD, "name": "my_dune"}))
    vader = yaml.safe_load((ROOT / "scoring_templates" / "vader.yaml").read_text())
    (flat / "my_vader.yaml").write_text(yaml.safe_dump({**vader, "name": "my_vader"}))
    (flat / "my_vader_pos.yaml").write_text("name: my_vader_pos\ninclude: my_vader\nfield: pos\n")
    (flat / "notes.yaml").write_text("just: notes\n")  # neither kind: ignored
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("RATE_TEMPLATE_PATH", f"{flat}:{empty}")
    with caplog.at_level("WARNING"):
        datasets, scorers = dataset_template_names(), scoring_template_names()
    assert "my_dune" in datasets and "my_vader" not in datasets and "notes" not in datasets
    assert {"my_vader", "my_vader_pos"} <= set(scorers) and "my_dune" not in scorers
    assert load_dataset_template("my_dune").name == "my_dune"
    assert load_scoring_template("my_vader_pos").options["field"] == "pos"
    assert f"RATE_TEMPLATE_PATH names {empty}, which holds no template" in caplog.text
