"""The config's reference is generated from the code, and the shipped configs are exactly it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rate.catalog import load_config
from rate.config import Config
from rate.config_docs import config_yaml, reference_markdown, title_of
from rate.schema import field_docs
from tests.helpers import ROOT, run_rate


def test_every_key_has_help_and_a_type():
    docs = field_docs(Config)
    assert len(docs) > 40
    assert [d.key for d in docs if not d.help.strip()] == []
    keys = {d.key for d in docs}
    assert {"effects.n_bootstrap", "slurm.score_dataset.gpus", "rewrites.prices"} <= keys


@pytest.mark.parametrize(
    "name", ["config.yaml", "smoke.yaml", "tinyworld/demo.yaml", "tinyworld/smoke.yaml"]
)
def test_the_shipped_configs_are_the_generated_ones(name):
    """Their comments (help and defaults) come from the code: regenerate with
    `rate config --yaml --config experiments/NAME > experiments/NAME`."""
    path = ROOT / "experiments" / name
    text = path.read_text()
    assert config_yaml(load_config(path, derive=False), title_of(text)) == text


def test_a_value_that_is_not_the_default_says_so():
    smoke = (ROOT / "experiments" / "smoke.yaml").read_text()
    assert "(default: 1000)\n  n_bootstrap: 200" in smoke
    assert "(default:" not in "".join(
        line for line in smoke.splitlines(keepends=True) if "chunk_size" in line
    )


def _docs_hook():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "docs_hook", ROOT / "docs" / "hooks" / "generated.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_reference_is_the_generated_one():
    """The config reference moved from the README to the docs site, generated at build time;
    the README points there."""
    page = _docs_hook().config_reference()
    assert reference_markdown().strip() in page
    assert "reference/config" in (ROOT / "README.md").read_text()


def test_a_study_page_shows_the_images_of_its_own_folder_from_beside_it():
    """The site publishes a study's images as studies/<name>/<path> and points the page's
    links there; a link out of the folder, or to the web, is left as written."""
    hook = _docs_hook()
    text = (
        "![a](offline/vader.png) ![b](../tilt/x.png) ![c](https://x.org/y.png) [d](tilt/README.md)"
    )
    assert hook.study_page(text, "profile") == (
        "![a](profile/offline/vader.png) ![b](../tilt/x.png) ![c](https://x.org/y.png) [d](tilt.md)"
    )
    shown = hook.study_images(ROOT / "experiments" / "profile" / "README.md")
    assert shown == ["offline/minilm_sentiment.png", "offline/vader.png"]
    assert all((ROOT / "experiments" / "profile" / p).is_file() for p in shown)


def test_rate_config_commands(tmp_path):
    text = run_rate(["config"], tmp_path).stdout
    assert "effects.n_bootstrap  (int; default 1000)" in text
    out = run_rate(["config", "--yaml", "--set", "effects.level=0.9"], tmp_path).stdout
    assert "level: 0.9" in out and "(default: 0.95)" in out
    assert load_config(write(tmp_path / "c.yaml", out)).effects.level == 0.9
    assert run_rate(["config", "--markdown"], tmp_path).stdout == reference_markdown()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_docs_rl_reference_is_the_generated_one():
    from tinyworld.rl_config import RLConfig

    assert reference_markdown(RLConfig).strip() in _docs_hook().config_reference()
    assert [d.key for d in field_docs(RLConfig) if not d.help.strip()] == []


def test_set_is_the_rl_override_syntax_and_override_still_works(tmp_path, small_world):
    for flag in ("--set", "--override"):
        out = tmp_path / flag.strip("-")
        run_rate(
            ["world", "rl", "--world", str(small_world), flag, "steps=2", flag, "lr=1e-3",
             "--set", "log_every=1", "--out", str(out)],
            tmp_path,
        )  # fmt: skip
        config = json.loads((out / "run_config.json").read_text())
        assert (config["steps"], config["lr"], config["log_every"]) == (2, 1e-3, 1)
