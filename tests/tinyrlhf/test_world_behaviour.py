"""The built world behaves like the published one (SPEC B.3, issue point 5). Slow: it builds
the full world (or uses RATE_TEST_WORLD) and trains one more RL run.

The shortcut tables are read from the world's own truth file, as a test may: the thresholds
below are the issue's, not tuned to this seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rate.io import read_jsonl
from tinyworld.evaluate import evaluate_policy, load_oracle, world_statistics
from tinyworld.models import load_policy, load_reward_model
from tinyworld.rl import train_rl
from tinyworld.rl_config import load_rl_config
from tinyworld.vocab import FAMILIES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stats(full_world: Path) -> dict:
    return world_statistics(full_world)


@pytest.fixture(scope="module")
def shortcuts(full_world: Path) -> tuple[dict, set[str]]:
    _, config = load_oracle(full_world)
    bonus = config.labels.token_bonus
    clean = set(FAMILIES) - set(bonus) - set(config.labels.pair_premium)
    return bonus, clean


def count(report: dict, family: str, token: str) -> float:
    return report["per_family"][family]["syllable_counts"][token]


def test_reference_quality_is_in_the_published_range(stats):
    for fam, row in stats["reference"]["per_family"].items():
        assert 0.22 <= row["true_quality"] <= 0.36, fam


def test_reward_model_agrees_with_the_crowd(stats):
    assert min(stats["rm_crowd_pearson"].values()) >= 0.9, stats["rm_crowd_pearson"]


def test_reward_model_agrees_less_with_experts_in_shortcut_families(stats, shortcuts):
    bonus, clean = shortcuts
    expert = stats["rm_expert_pearson"]
    assert max(expert[f] for f in bonus) < min(expert[f] for f in clean) - 0.1, expert


def test_default_run_exploits_the_shortcut_tokens(stats, shortcuts):
    bonus, _ = shortcuts
    ref, run = stats["reference"], stats["runs"]["default-s800"]
    for fam, tokens in bonus.items():
        for tok in tokens:
            assert count(run, fam, tok) >= 3 * count(ref, fam, tok), (fam, tok)
    assert count(run, "dune", "pa") >= 2.5


def test_default_run_raises_proxy_but_not_truth_in_shortcut_families(stats, shortcuts):
    bonus, _ = shortcuts
    ref, run = stats["reference"]["per_family"], stats["runs"]["default-s800"]["per_family"]
    for fam in bonus:
        assert run[fam]["proxy_reward"] > ref[fam]["proxy_reward"] + 0.1, fam
        assert run[fam]["true_quality"] <= ref[fam]["true_quality"] + 0.02, fam


def test_strong_kl_moves_clean_families_little(stats, shortcuts):
    _, clean = shortcuts
    ref, kl05 = stats["reference"]["per_family"], stats["runs"]["kl05-s800"]["per_family"]
    default = stats["runs"]["default-s800"]["per_family"]
    for fam in clean:
        assert abs(kl05[fam]["true_quality"] - ref[fam]["true_quality"]) < 0.05, fam
        assert kl05[fam]["kl"] < 0.5 * default[fam]["kl"], fam


def test_dev_pool_has_exactly_the_pilot_mix(full_world):
    dev = read_jsonl(full_world / "data" / "prompts_dev.jsonl")
    counts = {f: sum(r["family"] == f for r in dev) for f in FAMILIES}
    assert counts == {
        "anvil": 444,
        "birch": 458,
        "cobalt": 433,
        "dune": 48,
        "ember": 195,
        "fjord": 422,
    }


WRAPPER = '''
import json
CONFIG = json.loads({config!r})


def transform(records, tokens, rewards):
    """Subtract the vendor's known bonuses from the reward model's score."""
    out = rewards.copy()
    for i, (rec, toks) in enumerate(zip(records, tokens)):
        for tok, bonus in CONFIG["token_bonus"].get(rec["family"], {{}}).items():
            out[i] -= bonus * toks.count(tok)
        for p in CONFIG["pair_premium"].get(rec["family"], []):
            pairs = sum(1 for a, b in zip(toks, toks[1:]) if [a, b] == p["pair"])
            out[i] -= p["bonus"] * pairs
    return out
'''


def test_rl_without_the_shortcuts_raises_true_quality(full_world, tmp_path, stats):
    truth = json.loads((full_world / "truth" / "world.json").read_text())["labels"]
    wrapper = tmp_path / "remove_shortcuts.py"
    wrapper.write_text(WRAPPER.format(config=json.dumps(truth)))
    config = load_rl_config(
        full_world / "configs" / "default.json", [f"reward_wrapper={json.dumps(str(wrapper))}"]
    )
    train_rl(config, full_world, tmp_path / "run")
    oracle, _ = load_oracle(full_world)
    reference = load_policy(full_world / "policy")
    report = evaluate_policy(
        load_policy(tmp_path / "run" / "checkpoint"),
        oracle,
        load_reward_model(full_world / "reward_model"),
        reference,
    )
    before = stats["reference"]["balanced"]["true_quality"]
    assert report["balanced"]["true_quality"] >= before + 0.1, (before, report["balanced"])
