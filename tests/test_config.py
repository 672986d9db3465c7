"""The experiment config: defaults load, overrides apply, and every mistake is one clear message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rate.catalog import check_group_by, load_config
from rate.config import apply_override
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


@pytest.mark.parametrize(
    "full_name, smoke_name, dataset",
    [
        ("config.yaml", "smoke.yaml", "drugreview_sentiment"),  # the default: any template
        ("tinyworld/demo.yaml", "tinyworld/smoke.yaml", "tinyrlhf_dune_pa"),
    ],
)
def test_shipped_configs_load(full_name, smoke_name, dataset):
    full = load_config(ROOT / "experiments" / full_name)
    smoke = load_config(ROOT / "experiments" / smoke_name)
    assert full.smoke_test is False and smoke.smoke_test is True
    assert full.rewrites.dataset_name == smoke.rewrites.dataset_name == dataset
    assert full.effects.n_bootstrap == 1000 and smoke.effects.n_bootstrap == 200


def test_overrides_are_typed_yaml(tmp_path):
    c = load_config(
        write(tmp_path, BASE),
        ["effects.n_bootstrap=5", "smoke_test=true", "effects.group_by=family"],
    )
    assert c.effects.n_bootstrap == 5 and c.smoke_test is True
    assert c.effects.group_by == "family"


@pytest.mark.parametrize(
    "override, expected",
    [
        (
            "effects.nbootstrap=5",
            "unknown key 'effects.nbootstrap'; did you mean 'effects.n_bootstrap'?",
        ),
        ("effects.n_bootstrap=many", "key 'effects.n_bootstrap': expected an integer, got 'many'"),
        ("effects.level=1.5", "key 'effects.level' must be > 0 and < 1"),
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
    path = write(tmp_path, BASE.replace(", concept: pa", ""))
    with pytest.raises(ConfigError, match="missing required key 'effects.concept'"):
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


ONE_KEY = """
rewrites: {dataset_name: drugreview_sentiment}
scoring: {model: vader}
effects: {concept: sentiment}
"""


def test_one_key_names_the_experiment(tmp_path):
    """The later sections take the dataset name from the one before and the score's names
    from the scoring template, so switching dataset or model is one key."""
    c = load_config(write(tmp_path, ONE_KEY), stage="pipeline")
    assert c.scoring.dataset_name == "drugreview_sentiment"
    assert c.effects.dataset_name == "drugreview_sentiment"
    assert (c.effects.score, c.effects.reward_key) == ("vader", "vader")
    switched = load_config(
        write(tmp_path, ONE_KEY),
        ["rewrites.dataset_name=tinyrlhf_dune_pa", "scoring.model=tinyrlhf_rm"],
    )
    assert switched.scoring.dataset_name == switched.effects.dataset_name == "tinyrlhf_dune_pa"
    assert (switched.effects.score, switched.effects.reward_key) == ("tinyrlhf_rm", "tinyrlhf_rm")


def test_the_scoring_section_alone_names_the_effects(tmp_path):
    c = load_config(write(tmp_path, "scoring: {model: vader, dataset_name: mini}\n" + (
        "effects: {concept: c}\n")))  # fmt: skip
    assert (c.effects.dataset_name, c.effects.score, c.effects.reward_key) == (
        "mini",
        "vader",
        "vader",
    )
    with pytest.raises(ConfigError, match="'effects.reward_key' is empty and the config has no"):
        load_config(write(tmp_path, "effects: {concept: c, dataset_name: d, score: s}\n"))


def test_a_name_set_by_hand_is_kept_and_a_stale_one_is_told(tmp_path, caplog):
    """The reference's keys keep working; one that disagrees with 'latest' is not silent."""
    stale = ONE_KEY.replace("{concept: sentiment}", "{concept: s, dataset_name: tinyrlhf_dune_pa, "
                            "reward_key: tinyrlhf_rm}")  # fmt: skip
    with caplog.at_level("WARNING", logger="rate.catalog"):
        c = load_config(write(tmp_path, stale))
    assert (c.effects.dataset_name, c.effects.reward_key) == ("tinyrlhf_dune_pa", "tinyrlhf_rm")
    told = caplog.text
    assert "effects.dataset_name is 'tinyrlhf_dune_pa' but scoring.dataset_name is" in told
    assert "effects.reward_key is 'tinyrlhf_rm' but the reward_key of scoring.model 'vader'" in told
    caplog.clear()
    named = stale.replace(
        "reward_key: tinyrlhf_rm", "reward_key: tinyrlhf_rm, dataset_filename: f.jsonl"
    )
    with caplog.at_level("WARNING", logger="rate.catalog"):
        load_config(write(tmp_path, named))
    assert caplog.text == ""  # a file named by hand is what it says


@pytest.mark.parametrize(
    ("dataset", "group_by", "refused"),
    [
        ("tinyrlhf_dune_pa", "policy", False),
        ("tinyrlhf_dune_pa", "polcy", True),
        ("drugreview_sentiment", "policy", True),
        ("drugreview_sentiment", "condition", False),
        ("drugreview_sentiment", "w_original", False),
        ("imdb_length", "anything", False),  # a hub dataset's fields are known once read
    ],
)
def test_group_by_is_checked_before_stage_1_where_the_fields_are_known(
    tmp_path, dataset, group_by, refused
):
    path = write(tmp_path, ONE_KEY.replace("drugreview_sentiment", dataset).replace(
        "{concept: sentiment}", f"{{concept: c, group_by: {group_by}}}"))  # fmt: skip
    config = load_config(path, stage="create_dataset")
    if not refused:
        check_group_by(config, str(path))
        return
    with pytest.raises(ConfigError) as err:
        check_group_by(config, str(path))
    assert f"'effects.group_by' is {group_by!r}" in str(err.value)
    assert ("condition" in str(err.value)) == (dataset == "drugreview_sentiment")


def test_a_copied_smoke_config_stops_before_stage_1_on_its_group_by(tmp_path):
    from tests.helpers import run_rate

    out = run_rate(
        ["create_dataset", "--config", str(ROOT / "experiments" / "tinyworld" / "smoke.yaml"),
         "--set", "rewrites.dataset_name=drugreview_sentiment", "--set", "scoring.model=vader"],
        tmp_path, check=False,
    )  # fmt: skip
    assert out.returncode == 2
    assert "'effects.group_by' is 'policy'" in out.stderr and "useful_count" in out.stderr
    assert not (tmp_path / "data").exists()
