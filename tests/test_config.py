"""The experiment config: defaults load, overrides apply, and every mistake is one clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rate.config import apply_override, load_config
from rate.errors import ConfigError
from rate.store import resolve_input

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "experiments" / "config.yaml"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(text)
    return p


BASE = """
smoke_test: false
rewrites: {dataset_name: tinyrlhf_dune_pa}
scoring: {model: tinyrlhf_rm, dataset_name: tinyrlhf_dune_pa}
effects: {dataset_name: tinyrlhf_dune_pa, concept: pa, score: rm, reward_key: tinyrlhf_rm}
"""


def test_shipped_configs_load():
    full = load_config(DEFAULT)
    smoke = load_config(ROOT / "experiments" / "smoke.yaml")
    assert full.smoke_test is False and smoke.smoke_test is True
    assert full.rewrites.dataset_name == smoke.rewrites.dataset_name == "tinyrlhf_dune_pa"
    assert full.effects.n_bootstrap == 1000 and smoke.effects.n_bootstrap == 200


def test_overrides_are_typed_yaml(tmp_path):
    c = load_config(
        write(tmp_path, BASE),
        ["effects.n_bootstrap=5", "smoke_test=true", "effects.group_by=family", "world=/x/y"],
    )
    assert c.effects.n_bootstrap == 5 and c.smoke_test is True
    assert c.effects.group_by == "family" and str(c.world_dir()) == "/x/y"


@pytest.mark.parametrize(
    "override, expected",
    [
        (
            "effects.nbootstrap=5",
            "unknown key 'effects.nbootstrap'; did you mean 'effects.n_bootstrap'?",
        ),
        ("effects.n_bootstrap=many", "key 'effects.n_bootstrap': expected an integer, got 'many'"),
        ("effects.level=1.5", "effects.level must be between 0 and 1"),
        ("scoring.dataset_folder=elsewhere", "must be 'rewrites' or 'scored'"),
        ("smoke_test.deep=1", "'smoke_test' is a value, not a section"),
        ("effects", "expected section.key=value"),
    ],
)
def test_bad_overrides(tmp_path, override, expected):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, BASE), [override])
    assert expected in str(err.value)
    if "key '" in expected:
        assert str(tmp_path / "config.yaml") in str(err.value)


def test_unknown_key_in_the_file_names_the_file_and_the_nearest_key(tmp_path):
    path = write(tmp_path, BASE.replace("concept: pa", "concpet: pa"))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert msg.startswith(str(path)) and "'effects.concpet'" in msg and "'effects.concept'" in msg


def test_missing_required_key(tmp_path):
    path = write(tmp_path, BASE.replace(", reward_key: tinyrlhf_rm", ""))
    with pytest.raises(ConfigError, match="missing required key 'effects.reward_key'"):
        load_config(path)


def test_unknown_templates_are_named_with_close_matches(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(
            write(
                tmp_path,
                BASE.replace(
                    "dataset_name: tinyrlhf_dune_pa}", "dataset_name: tinyrlhf_dune_pq}", 1
                ),
            )
        )
    assert "unknown dataset template 'tinyrlhf_dune_pq'; did you mean 'tinyrlhf_dune_pa'?" in str(
        err.value
    )
    assert "rewrites.dataset_name" in str(err.value)
    with pytest.raises(ConfigError, match="did you mean 'tinyrlhf_rm'"):
        load_config(write(tmp_path, BASE.replace("model: tinyrlhf_rm", "model: tinyrlhf_rn")))


def test_invalid_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "rewrites:\n  dataset_name: [unclosed\n")
    with pytest.raises(ConfigError, match=r"config\.yaml:\d+: not valid YAML"):
        load_config(path)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.yaml")


def test_apply_override_builds_sections():
    data: dict = {}
    apply_override(data, "plots.formats=[png, pdf]")
    assert data == {"plots": {"formats": ["png", "pdf"]}}


def test_named_input_file_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="no such file .*missing.jsonl"):
        resolve_input(tmp_path, "missing.jsonl", "x", ".jsonl", smoke=False)


@pytest.mark.parametrize(
    "override",
    [
        "effects.dataset_name=../../escaped",
        "effects.concept=x/../../../../y",
        "effects.score=/abs/path",
        "scoring.dataset_name=/abs/path",
        "scoring.dataset_name=..",
        "effects.dataset_folder=../outside",
        "effects.dataset_folder=/abs",
    ],
)
def test_names_that_become_path_parts_must_be_plain_names(override):
    """main wrote outside PROJECT_DIR with these (item 5); template names were checked."""
    key = override.split("=")[0]
    with pytest.raises(ConfigError, match=rf"key '{key}' is .*(no '/', no '\.\.'|without '\.\.')"):
        load_config(DEFAULT, [override])


def test_plain_names_and_sub_folders_are_accepted():
    config = load_config(
        DEFAULT,
        [
            "effects.dataset_name=imdb_v2.1",
            "effects.dataset_folder=runs/a",
            "scoring.dataset_name=",
        ],
    )
    assert config.effects.dataset_name == "imdb_v2.1"


def test_the_default_config_is_found_from_any_folder(tmp_path, monkeypatch):
    """experiments/config.yaml is the checkout's when the current folder has none; a file that
    is nowhere is named with both places looked in."""
    from rate.config import DEFAULT_CONFIG, find_config
    from rate.settings import checkout_root

    monkeypatch.chdir(tmp_path)
    assert find_config(DEFAULT_CONFIG) == checkout_root() / DEFAULT_CONFIG
    assert load_config(DEFAULT_CONFIG).rewrites is not None
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "config.yaml").write_text("{}\n")
    assert find_config(DEFAULT_CONFIG) == DEFAULT_CONFIG  # the current folder's wins
    with pytest.raises(ConfigError, match=rf"nope.yaml: no such config file in {tmp_path}"):
        load_config(Path("nope.yaml"))
