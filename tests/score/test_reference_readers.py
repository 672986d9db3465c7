"""Files we write, read by the reference's own loading code (reimplemented here from toddnief/
RATE at 2f6d552: utils.load_dataset_from_json, the notebook's concat_datasets and
standardize_ArmoRM, treatment_effects.treatment_effects_pipeline's loops): scores under the
model id, the reference's file names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from rate.catalog import load_config
from rate.io import read_json
from rate.pipeline import score_dataset, treatment_effects
from rate.records import rewritten_example, write_rewritten
from rate.store import Layout, dataset_stem, output_path
from tests.helpers import ROOT
from tests.score.test_hf import armo

ARMO = "RLHFlow/ArmoRM-Llama3-8B-v0.1"
WORDS = ["good film", "bad plot", "great actor", "a boring film", "fun", "awful"]


# -- the reference's code, as it reads files -----------------------------------------------------


def load_dataset_from_json(filepath: Path):
    """utils.load_dataset_from_json."""
    if filepath.suffix == ".jsonl":
        with filepath.open("r") as file:
            dataset = {idx: json.loads(line.strip()) for idx, line in enumerate(file)}
    elif filepath.suffix == ".json":
        with filepath.open("r") as file:
            dataset = json.load(file)
    else:
        raise ValueError("Unsupported file format. Only .json and .jsonl are supported.")
    return dataset


def concat_datasets(dataset_a, dataset_b):
    """notebooks/results.ipynb."""
    new_dataset_a = {f"A_{key}": value for key, value in dataset_a.items()}
    new_dataset_b = {f"B_{key}": value for key, value in dataset_b.items()}
    return {**new_dataset_a, **new_dataset_b}


def standardize_armorm(dataset):
    """notebooks/results.ipynb: some files say "ArmoRM", others the model id."""
    new_dataset = {}
    for key, value in dataset.items():
        if "ArmoRM" in value:
            value[ARMO] = value.pop("ArmoRM")
        new_dataset[key] = value
    return new_dataset


def reference_effects(dataset, **effects_template):
    """treatment_effects_pipeline's loops and its naive and RATE estimates (unpaired SEs)."""
    o_key = effects_template.get("w_original_key", "original")
    cf_key = effects_template.get("w_counterfactual_key", "rewrite")
    rr_key = effects_template.get("w_rewritten_rewrite_key", "rewritten rewrite")
    reward_key = effects_template.get("reward_key", "reward")
    y1, y0, y1_rr, y0_rr, y1_cf, y0_cf = [], [], [], [], [], []
    do1_rr, do0_rr = [], []
    for example in dataset.values():
        if example["w_original"]:
            y1.append(example[reward_key][o_key])
            do1_rr.append(example[reward_key][rr_key])
            do0_rr.append(example[reward_key][cf_key])
            y0_cf.append(example[reward_key][cf_key])
            y1_rr.append(example[reward_key][rr_key])
        else:
            y0.append(example[effects_template["reward_key"]][o_key])
            do1_rr.append(example[reward_key][cf_key])
            do0_rr.append(example[reward_key][rr_key])
            y1_cf.append(example[reward_key][cf_key])
            y0_rr.append(example[reward_key][rr_key])
    return {
        "naive_effect": np.mean(y1) - np.mean(y0),
        "ATE_rewritten_rewrite": np.mean(do1_rr) - np.mean(do0_rr),
        "ATT_rewritten_rewrite": np.mean(y1_rr) - np.mean(y0_cf),
        "ATU_rewritten_rewrite": np.mean(y1_cf) - np.mean(y0_rr),
        "Y1_count": len(y1),
        "Y0_count": len(y0),
    }


# -- our files ----------------------------------------------------------------------------------


@pytest.fixture
def scored(tmp_path, monkeypatch) -> tuple[Path, Path, Layout]:
    """A rewrites file of ours, scored by the shipped armorm template (its model a tiny local
    ArmoRM-like one)."""
    data = yaml.safe_load((ROOT / "scoring_templates" / "armorm.yaml").read_text())
    data["model"] = str(armo(tmp_path / "armo"))
    (tmp_path / "scoring_templates").mkdir()
    (tmp_path / "scoring_templates" / "armorm.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path))
    layout = Layout(tmp_path / "project")
    examples = [
        rewritten_example(
            i % 2 == 0,
            {
                "original": WORDS[i % 6],
                "rewrite": WORDS[(i + 1) % 6],
                "rewritten rewrite": WORDS[(i + 2) % 6],
            },
            "Write a movie review:",
            f"k{i}",
            {},
            {},
        )
        for i in range(12)
    ]
    rewrites = output_path(layout.rewrites, dataset_stem("imdb_length"), ".json", False)
    write_rewritten(rewrites, examples)
    config = load_config(
        ROOT / "experiments" / "config.yaml",
        [
            "scoring.model=armorm",
            "scoring.dataset_name=imdb_length",
            f"scoring.dataset_filename={rewrites.name}",
            "effects.dataset_name=imdb_length",
            "effects.concept=length",
            "effects.score=armorm",
            f"effects.reward_key={ARMO}",
            "effects.group_by=null",
            "effects.n_bootstrap=0",
        ],
    )
    out = score_dataset(config, layout)
    effects = treatment_effects(config, layout)
    return rewrites, out, effects


def test_the_reference_reads_our_files(scored):
    rewrites, out, effects_path = scored
    # The reference's names: <name>_dataset_<stamp>.json, <dataset>_<model>_scored_<stamp>.jsonl.
    assert re.fullmatch(r"imdb_length_dataset_\d{8}_\d{6}\.json", rewrites.name)
    assert re.fullmatch(r"imdb_length_armorm_scored_\d{8}_\d{6}\.jsonl", out.name)
    assert re.fullmatch(
        r"imdb_length_length_armorm_treatment_effects_\d{8}_\d{6}\.json", effects_path.name
    )
    # Its score_dataset reads our rewrites: {index: {completions, reward_question, ...}}.
    for example in load_dataset_from_json(rewrites).values():
        assert set(example["completions"]) == {"original", "rewrite", "rewritten rewrite"}
        assert isinstance(example["reward_question"], str)
    # Its notebook reads our scored file under the model id, which it hard-codes.
    dataset = standardize_armorm(concat_datasets(load_dataset_from_json(out), {}))
    template = {
        "reward_key": ARMO,
        "w_original_key": "original",
        "w_counterfactual_key": "rewrite",
        "w_rewritten_rewrite_key": "rewritten rewrite",
        "dataset_name": "combined",
        "concept": "length",
        "score": ARMO,
    }
    theirs = reference_effects(dataset, **template)
    ours = read_json(effects_path)
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, abs=1e-12), key
    assert ours["reward_key"] == ARMO and ours["dataset_filename"] == out.name
