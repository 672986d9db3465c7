"""The reference's own configs run treatment_effects unchanged, and every stage runs from a
config that holds only its own section, as the reference's scripts read only theirs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from rate.catalog import load_config
from rate.effects.estimators import Scores, estimate
from rate.effects.stage import treatment_effects
from rate.errors import ConfigError
from rate.io import read_json, write_jsonl
from rate.store import Layout
from tests.helpers import run_rate

# toddnief/RATE config.yaml and config_vowels.yaml at 2f6d552, keys, values and comments as
# the reference ships them.
REFERENCE_CONFIG = """smoke_test: true
rewrites:
  dataset_name: "imdb_length" # This is used in a factory function to import the dataset template
scoring:
  model: "armorm" # Choices: "distilbert_positive", "distilbert_negative", "armorm", "sfairxc", "ncsoft"
  dataset_folder: "rewrites" # Choices: "rewrites", "scored"
  dataset_filename: "imdb_length_dataset_20241028_142301_smoke_test.json"
  dataset_name: "imdb_length" # Note: used in output filename so update to match the dataset_name below (INCLUDE CONCEPT)
effects:
  dataset_name: "imdb_length" # Note: this is used to create the filename for the calculated effects
  dataset_folder: null # null to load directly from the scored dataset_folder. Or, specifiy a subdirectory
  concept: "length"
  score: "armorm"
  reward_key: "RLHFlow/ArmoRM-Llama3-8B-v0.1" # Note: This is the key for the reward in the dataset
  dataset_filename: "imdb_length_armorm_smoke_test_scored_20241104_111220.jsonl"
"""
REFERENCE_VOWELS = """smoke_test: false
rewrites:
  dataset_name: "imdb_vowels" # This is used in a factory function to import the dataset template
scoring:
  model: "armorm" # Choices: "distilbert_positive", "distilbert_negative", "armorm", "sfairxc", "ncsoft"
  dataset_folder: "rewrites" # Choices: "rewrites", "scored"
  dataset_filename: "imdb_vowels_dataset_20241118_123149.json"
  dataset_name: "imdb_vowels" # Note: used in output filename so update to match the dataset_name below (INCLUDE CONCEPT)
effects:
  dataset_name: "imdb_vowels" # Note: this is used to create the filename for the calculated effects
  dataset_folder: "typos" # null to load directly from the scored dataset_folder. Or, specifiy a subdirectory
  concept: "vowels"
  score: "armorm"
  w_original_key: "original"
  w_counterfactual_key: "rewrite"
  w_rewritten_rewrite_key: "rewritten rewrite"
  reward_key: "NCSOFT/Llama-3-OffsetBias-RM-8B" # Note: This is the key for the reward in the dataset
  dataset_filename: "imdb_vowels_30typos_complete_scored_20241120_162935.jsonl"
"""
ARMO, NCSOFT = "RLHFlow/ArmoRM-Llama3-8B-v0.1", "NCSOFT/Llama-3-OffsetBias-RM-8B"
NAMES = ("original", "rewrite", "rewritten rewrite")


def scored_rows(n: int, seed: int, names=NAMES) -> list[dict]:
    """Rows as the reference's score_dataset writes them: no index, model-id reward keys."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        w = bool(rng.random() < 0.4)
        row = {
            "w_original": w,
            "completions": dict(zip(names, ("a", "b", "c"), strict=True)),
            "reward_question": "Write a movie review: ",
        }
        for key in (ARMO, NCSOFT):
            o = rng.normal() + 0.5 * w
            r, rr = o - 0.5 * (1 if w else -1) + rng.normal() * 0.1, o + rng.normal() * 0.1
            row[key] = dict(zip(names, (o, r, rr), strict=True))
        rows.append(row)
    return rows


def want(rows: list[dict], key: str, names=NAMES) -> dict:
    w = np.array([r["w_original"] for r in rows])
    cols = [np.array([r[key][c] for r in rows]) for c in names]
    return estimate(Scores(w, *cols))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write_jsonl(
        root / "data" / "scored" / "imdb_length_armorm_smoke_test_scored_20241104_111220.jsonl",
        scored_rows(30, 0),
    )
    write_jsonl(
        root / "data" / "scored" / "typos" / "imdb_vowels_30typos_complete_scored_20241120_162935"
        ".jsonl",
        scored_rows(50, 1),
    )
    return root


@pytest.mark.parametrize(
    ("text", "folder", "key", "seed", "stem"),
    [
        (REFERENCE_CONFIG, "", ARMO, 0, "imdb_length_length_armorm_treatment_effects_"),
        (REFERENCE_VOWELS, "typos", NCSOFT, 1, "imdb_vowels_vowels_armorm_treatment_effects_"),
    ],
)
def test_the_reference_configs_run_treatment_effects(
    project, tmp_path, text, folder, key, seed, stem
):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(text)
    out = run_rate(["treatment_effects", "--config", str(config_path)], project)
    path = Path(out.stdout.strip().splitlines()[-1])
    assert path.parent == project / "effects" and path.name.startswith(stem)
    effects = read_json(path)
    rows = scored_rows(30 if seed == 0 else 50, seed)
    for name, value in want(rows, key).items():
        assert effects[name] == pytest.approx(value, abs=1e-12), name
    # The whole effects section echoed, as the reference's effects.update(effects_template).
    section = yaml.safe_load(text)["effects"]
    for k, v in section.items():
        assert effects[k] == v, k
    assert effects["dataset_folder"] == (folder or None)


def test_the_w_keys_name_the_completions(project, tmp_path):
    """w_original_key, w_counterfactual_key, w_rewritten_rewrite_key say which completion is
    which: a file with other names gives the same effects as the standard one."""
    names = ("orig", "counterfactual", "rr")
    rows = scored_rows(40, 3, names)
    write_jsonl(project / "data" / "scored" / "renamed_scored_20250101_000000.jsonl", rows)
    config_path = tmp_path / "effects_only.yaml"
    config_path.write_text(
        json.dumps(
            {
                "effects": {
                    "dataset_name": "renamed",
                    "concept": "length",
                    "score": "armorm",
                    "reward_key": ARMO,
                    "dataset_filename": "renamed_scored_20250101_000000.jsonl",
                    "w_original_key": "orig",
                    "w_counterfactual_key": "counterfactual",
                    "w_rewritten_rewrite_key": "rr",
                    "n_bootstrap": 0,
                }
            }
        )
    )
    layout = Layout(project)
    config = load_config(config_path, stage="treatment_effects")
    effects = read_json(treatment_effects(config, layout))
    for name, value in want(rows, ARMO, names).items():
        assert effects[name] == pytest.approx(value, abs=1e-12), name
    config_path.write_text(config_path.read_text().replace('"rr"', '"orig"'))
    with pytest.raises(ConfigError, match="three different completions"):
        load_config(config_path)


def test_each_stage_runs_from_a_config_of_its_own_section(tmp_path):
    """create_dataset, score_dataset and treatment_effects, each from a config that holds
    nothing but its section (offline: drug reviews, rules, VADER)."""
    project = tmp_path / "project"
    configs = {
        "rewrites": {"smoke_test": True, "rewrites": {"dataset_name": "drugreview_length"}},
        "scoring": {
            "smoke_test": True,
            "scoring": {"model": "vader", "dataset_name": "drugreview_length"},
        },
        "effects": {
            "smoke_test": True,
            "effects": {
                "dataset_name": "drugreview_length",
                "concept": "length",
                "score": "vader",
                "reward_key": "vader",
                "n_bootstrap": 0,
            },
        },
    }
    paths = {}
    for name, data in configs.items():
        paths[name] = tmp_path / f"{name}.yaml"
        paths[name].write_text(json.dumps(data))
    run_rate(["create_dataset", "--config", str(paths["rewrites"])], project)
    run_rate(["score_dataset", "--config", str(paths["scoring"])], project)
    out = run_rate(["treatment_effects", "--config", str(paths["effects"])], project)
    effects = read_json(Path(out.stdout.strip().splitlines()[-1]))
    assert effects["Y1_count"] + effects["Y0_count"] == 60
    # A stage whose own section is missing says which key, and the file.
    bad = run_rate(["create_dataset", "--config", str(paths["effects"])], project, check=False)
    assert bad.returncode != 0
    assert f"{paths['effects']}: missing required key 'rewrites'" in bad.stderr


def test_effects_pool_several_scored_files_with_the_source_as_a_group(project, tmp_path):
    """The paper pools datasets per concept (IMDB and ELI5 for length): pool_with adds files to
    one estimate, and each file is also estimated alone, under groups by source."""
    a, b = scored_rows(30, 4), scored_rows(45, 5)
    scored = project / "data" / "scored"
    write_jsonl(scored / "imdb_length_armorm_scored_20250101_000000.jsonl", a)
    write_jsonl(scored / "eli5_length_armorm_scored_20250101_000000.jsonl", b)
    config_path = tmp_path / "pooled.yaml"
    effects_section = {
        "dataset_name": "length_pooled",
        "concept": "length",
        "score": "armorm",
        "reward_key": ARMO,
        "dataset_filename": "imdb_length_armorm_scored_20250101_000000.jsonl",
        "pool_with": ["eli5_length_armorm_scored_20250101_000000.jsonl"],
        "n_bootstrap": 0,
    }
    config_path.write_text(yaml.safe_dump({"effects": effects_section}))
    effects = read_json(treatment_effects(load_config(config_path), Layout(project)))
    for name, value in want(a + b, ARMO).items():
        assert effects[name] == pytest.approx(value, abs=1e-12), name
    assert effects["input"]["n_rows"] == 75 and len(effects["input"]["files"]) == 2
    assert effects["input"]["groups_by"] == "source"
    groups = effects["groups"]
    assert set(groups) == {
        "imdb_length_armorm_scored_20250101_000000.jsonl",
        "eli5_length_armorm_scored_20250101_000000.jsonl",
    }
    alone = want(b, ARMO)["ATE_rewritten_rewrite"]
    assert groups["eli5_length_armorm_scored_20250101_000000.jsonl"][
        "ATE_rewritten_rewrite"
    ] == pytest.approx(alone, abs=1e-12)
    assert effects["pool_with"] == effects_section["pool_with"]  # the section, echoed
