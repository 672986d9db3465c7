"""The world builder: layout, determinism, the pilot mix, atomicity, and the config's errors."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from rate.errors import ConfigError, RateError
from rate.io import read_jsonl
from tinyworld import build as build_module
from tinyworld.build import build_world, ensure_world
from tinyworld.shortcuts import SHORTCUTS_FILE
from tinyworld.worldconfig import load_world_config

LAYOUT = [
    "configs/default.json",
    "data/gold_calib.jsonl",
    "data/prompts_dev.jsonl",
    "data/prompts_train.jsonl",
    "policy/config.json",
    "policy/policy.safetensors",
    "reward_model/TRAINING.md",
    "reward_model/config.json",
    "reward_model/rm.safetensors",
    "reward_model/train.jsonl",
    "runs/README.md",
    "truth/world.json",
]
RUNS = ["default-s800", "fourfam-s800", "kl002-s1500", "kl05-s800", "pilotmix-s800"]
RUN_FILES = [
    "NOTES.md",
    "checkpoint/config.json",
    "checkpoint/policy.safetensors",
    "dev_eval.json",
    "log.jsonl",
    "run_config.json",
]


def test_layout_is_complete(small_world):
    for rel in LAYOUT:
        assert (small_world / rel).is_file(), rel
    for run in RUNS:
        for rel in RUN_FILES:
            assert (small_world / "runs" / run / rel).is_file(), f"{run}/{rel}"
        assert f"[{run}]({run}/NOTES.md)" in (small_world / "runs" / "README.md").read_text()
    dev_eval = json.loads((small_world / "runs" / "default-s800" / "dev_eval.json").read_text())
    assert set(dev_eval["proxy_reward"]) == {"mean", "std", "p50", "p90"}
    assert {"kl", "rm_gold_pearson", "n_prompts", "per_family"} <= set(dev_eval)


SEED_DEV_EVAL_KEYS = (
    "policy",
    "prompts",
    "n_prompts",
    "samples_per_prompt",
    "proxy_mean",
    "proxy_std",
    "proxy_p50",
    "proxy_p90",
    "kl_mean",
    "rm_gold_pearson",
)


def test_dev_eval_has_the_seed_worlds_flat_keys(small_world):
    """dev_eval.json as the seed world's tools read it (flat), the nested figures beside."""
    for rel, policy in (
        ("policy/dev_eval.json", "policy"),
        ("runs/default-s800/dev_eval.json", "runs/default-s800/checkpoint"),
    ):
        dev_eval = json.loads((small_world / rel).read_text())
        assert set(SEED_DEV_EVAL_KEYS) <= set(dev_eval), rel
        assert list(dev_eval)[: len(SEED_DEV_EVAL_KEYS)] == list(SEED_DEV_EVAL_KEYS)
        assert dev_eval["policy"] == policy
        assert dev_eval["prompts"] == "data/prompts_dev.jsonl"
        assert (small_world / dev_eval["prompts"]).is_file()
        assert dev_eval["samples_per_prompt"] == 1
        n_dev = len((small_world / "data" / "prompts_dev.jsonl").read_text().splitlines())
        assert dev_eval["n_prompts"] == n_dev
        for k in ("mean", "std", "p50", "p90"):
            assert dev_eval[f"proxy_{k}"] == dev_eval["proxy_reward"][k]
        assert dev_eval["kl_mean"] == dev_eval["kl"]
        assert all(isinstance(dev_eval[k], float) for k in SEED_DEV_EVAL_KEYS[4:])
    assert json.loads((small_world / "policy/dev_eval.json").read_text())["kl_mean"] == 0.0


def test_pools_have_the_configured_sizes_and_the_pilot_mix(small_world):
    config = load_world_config(small=True)
    dev = read_jsonl(small_world / "data" / "prompts_dev.jsonl")
    counts = {f: sum(r["family"] == f for r in dev) for f in config.pools.dev_mix}
    assert counts == config.pools.dev_mix
    train = read_jsonl(small_world / "data" / "prompts_train.jsonl")
    assert len(train) == 6 * config.pools.train_per_family
    gold = read_jsonl(small_world / "data" / "gold_calib.jsonl")
    assert len(gold) == 6 * config.pools.gold_per_family and all(
        len(r["response"]) == 8 for r in gold
    )
    qa = read_jsonl(small_world / "reward_model" / "train.jsonl")
    assert len(qa) == 6 * config.reward_model_data.qa_per_family
    assert len({r["id"] for r in train + dev + gold}) == len(train) + len(dev) + len(gold)


def test_fourfam_and_pilot_runs_record_their_mix(small_world):
    four = json.loads((small_world / "runs" / "fourfam-s800" / "run_config.json").read_text())
    assert four["family_weights"] == {
        "anvil": 1.0,
        "birch": 1.0,
        "cobalt": 1.0,
        "dune": 0.0,
        "ember": 0.0,
        "fjord": 1.0,
    }
    pilot = json.loads((small_world / "runs" / "pilotmix-s800" / "run_config.json").read_text())
    assert pilot["family_weights"]["dune"] == pytest.approx(5 / 200)


def digest(root, rels):
    return {rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in rels}


def test_same_config_same_world(small_world, tmp_path):
    again = tmp_path / "again"
    build_world(load_world_config(small=True), again)
    rels = [r for r in LAYOUT if r != "runs/README.md"] + [
        f"runs/{r}/checkpoint/policy.safetensors" for r in RUNS
    ]
    assert digest(small_world, rels) == digest(again, rels)


def test_the_runs_change_nothing_built_before_them(small_world, tmp_path):
    """A study that reads only the data and models reuses a world built with its RL runs
    (tinyworld.build.models_digest): the runs come last and change nothing before them."""
    config = dataclasses.replace(load_world_config(small=True), runs=[])
    build_world(config, tmp_path / "no_runs")
    # All but truth/world.json (the world's full config, runs included) and the runs.
    rels = [r for r in LAYOUT if not r.startswith(("runs/", "truth/"))]
    rels += ["policy/dev_eval.json", SHORTCUTS_FILE]
    assert digest(tmp_path / "no_runs", rels) == digest(small_world, rels)
    assert ensure_world(small_world, config=config) == small_world


def test_failed_build_leaves_nothing_behind(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("killed mid-build")

    monkeypatch.setattr(build_module, "train_rl", boom)
    with pytest.raises(RuntimeError):  # jobs=1: the runs train in this process, patched
        build_world(load_world_config(small=True), tmp_path / "w", jobs=1)
    assert list(tmp_path.iterdir()) == []


def test_a_run_failing_in_a_worker_fails_the_build_and_leaves_nothing(tmp_path):
    config = load_world_config(small=True)
    broken = dataclasses.replace(
        config.runs[1], overrides={**config.runs[1].overrides, "reward_wrapper": "nope.py"}
    )
    config = dataclasses.replace(config, runs=[config.runs[0], broken])
    with pytest.raises(ConfigError, match="reward_wrapper: .*nope.py does not exist"):
        build_world(config, tmp_path / "w", jobs=2)
    assert list(tmp_path.iterdir()) == []


def test_the_world_is_the_same_whatever_the_number_of_jobs(small_world, tmp_path):
    """Every run trains on one thread, in a worker or in this process."""
    config = load_world_config(small=True)
    config = dataclasses.replace(config, runs=config.runs[:2])
    build_world(config, tmp_path / "one", jobs=1)
    rels = [f"runs/{r.name}/{f}" for r in config.runs for f in RUN_FILES if f != "log.jsonl"]
    assert digest(tmp_path / "one", rels) == digest(small_world, rels)
    info = json.loads((tmp_path / "one" / "world_info.json").read_text())
    assert info["rl_jobs"] == 1


def test_existing_world_is_kept_unless_overwrite(small_world):
    with pytest.raises(RateError, match="exists"):
        build_world(load_world_config(small=True), small_world)


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"sed": 1}, "did you mean 'seed'"),
        ({"labels": {"token_bonus": {"dunes": {"pa": 1.0}}}}, "unknown family 'dunes'"),
        ({"labels": {"token_bonus": {"dune": {"px": 1.0}}}}, "unknown syllable 'px'"),
        ({"labels": {"crowd_noise": "high"}}, "key 'labels.crowd_noise': expected a number"),
        ({"rule": {"correct_per_position": 0}}, "'rule.correct_per_position' must be >= 1"),
        ({"pools": {"dev_mix": {"anvil": 1, "atlantis": 2}}}, "unknown family 'atlantis'"),
        ({"runs": [{"name": "x", "mix": "anvil,atlantis"}]}, "unknown family 'atlantis'"),
        ({"rl_default": {"kl_coeff": 0.1}}, "did you mean 'kl_coef'"),
        (
            {
                "demonstrations": {
                    "habits": [{"family": "dunes", "pair": ["ka", "ra"], "rate": 0.3}]
                }
            },
            "habits: unknown family 'dunes'",
        ),
        (
            {"demonstrations": {"habits": [{"family": "dune", "pair": ["ka"], "rate": 0.3}]}},
            "habits: pair must be two syllables",
        ),
    ],
)
def test_bad_world_config_is_rejected(tmp_path, patch, message):
    data = json.loads(json.dumps({}))
    data.update(patch)
    path = tmp_path / "world.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message) as info:
        load_world_config(path)
    assert str(path) in str(info.value)
