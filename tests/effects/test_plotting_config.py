"""The reference notebook's config_plotting.jsonl: effects recomputed from the scored files it
names, pooled per concept and reward key as the paper's figures pool datasets."""

from __future__ import annotations

import json

import pytest

from rate.effects.plotting_config import effects_from_plotting_config
from rate.errors import DataFileError
from rate.io import write_jsonl
from tests.effects.test_reference_configs import ARMO, scored_rows, want


def lines_file(tmp_path, lines):
    path = tmp_path / "config_plotting.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.fixture
def scored_dir(tmp_path):
    folder = tmp_path / "scored"
    # The reference kept its complete files in scored/complete/.
    write_jsonl(
        folder / "complete" / "imdb_length_complete_scored_20240921_172425.jsonl",
        scored_rows(30, 0),
    )
    write_jsonl(folder / "eli5_length_complete_scored_20240919_170111.jsonl", scored_rows(40, 1))
    write_jsonl(folder / "helpsteer_complexity_complete_scored.jsonl", scored_rows(25, 2))
    return folder


LINES = [
    {"dataset_name": "IMDB", "concept": "Length", "score": "ArmoRM", "reward_key": ARMO,
     "dataset_filename": "imdb_length_complete_scored_20240921_172425.jsonl"},
    {"dataset_name": "ELI5", "concept": "Length", "score": "ArmoRM", "reward_key": ARMO,
     "dataset_filename": "eli5_length_complete_scored_20240919_170111.jsonl"},
    {"dataset_name": "HelpSteer", "concept": "Complexity", "score": "ArmoRM", "reward_key": ARMO,
     "dataset_filename": "helpsteer_complexity_complete_scored.jsonl"},
]  # fmt: skip


def test_lines_of_a_concept_are_pooled(tmp_path, scored_dir):
    effects = effects_from_plotting_config(lines_file(tmp_path, LINES), scored_dir)
    assert [(e["dataset_name"], e["concept"]) for e in effects] == [
        ("IMDB+ELI5", "Length"),
        ("HelpSteer", "Complexity"),
    ]
    pooled = want(scored_rows(30, 0) + scored_rows(40, 1), ARMO)
    for key, value in pooled.items():
        assert effects[0][key] == pytest.approx(value, abs=1e-12), key
    assert set(effects[0]["groups"]) == {
        "imdb_length_complete_scored_20240921_172425.jsonl",
        "eli5_length_complete_scored_20240919_170111.jsonl",
    }
    assert effects[1]["ATE_rewritten_rewrite"] == pytest.approx(
        want(scored_rows(25, 2), ARMO)["ATE_rewritten_rewrite"], abs=1e-12
    )


def test_each_line_alone_and_the_errors(tmp_path, scored_dir):
    alone = effects_from_plotting_config(lines_file(tmp_path, LINES), scored_dir, pool=False)
    assert [e["dataset_name"] for e in alone] == ["IMDB", "ELI5", "HelpSteer"]
    assert alone[1]["naive_effect"] == pytest.approx(want(scored_rows(40, 1), ARMO)["naive_effect"])
    bad = [dict(LINES[0], dataset_filename="nope.jsonl")]
    with pytest.raises(DataFileError, match="'nope.jsonl': no such file"):
        effects_from_plotting_config(lines_file(tmp_path, bad), scored_dir)
    with pytest.raises(DataFileError, match=r"config_plotting.jsonl:1: missing reward_key"):
        effects_from_plotting_config(
            lines_file(tmp_path, [{k: v for k, v in LINES[0].items() if k != "reward_key"}]),
            scored_dir,
        )
