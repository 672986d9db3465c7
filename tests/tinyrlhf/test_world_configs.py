"""The packaged world configs: what each is made of, and (slow) that every shipped world is valid:
its reward model learned every planted shortcut at >= half its bonus.

The full worlds are the session's (tests/worlds.py): built beside the tests, or given by
RATE_TEST_WORLD (the default), RATE_TEST_WORLD_VARIANT and RATE_TEST_WORLD_NOSHORTCUTS, each
built from the current packaged config.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from rate.errors import ConfigError
from rate.schema import to_dict
from tinyworld.evaluate import load_oracle, world_statistics
from tinyworld.oracle import Oracle
from tinyworld.policy import Policy
from tinyworld.shortcuts import (
    SHORTCUTS_FILE,
    VALID_RATIO,
    label_scorer,
    measure_shortcuts,
    planted_shortcuts,
)
from tinyworld.worldconfig import PACKAGED_WORLDS, load_world_config

# The worlds meant for analysis; `small` is a smoke-test fixture whose RM trains 4 epochs on
# 300 responses per family and is not expected to learn the shortcuts.
SHIPPED = ["default", "variant", "noshortcuts"]


def test_every_packaged_config_loads_and_an_unknown_name_is_named():
    for name in PACKAGED_WORLDS:
        load_world_config(name=name)
    with pytest.raises(ConfigError, match="did you mean 'variant'"):
        load_world_config(name="varaint")


def test_the_variant_has_every_kind_of_shortcut_on_other_markers_and_families():
    default, variant = load_world_config(), load_world_config(name="variant")
    tokens = {
        (f, t): b for f, table in variant.labels.token_bonus.items() for t, b in table.items()
    }
    pairs = {
        (f, tuple(p.pair)): p.bonus for f, ps in variant.labels.pair_premium.items() for p in ps
    }
    assert len(pairs) >= 2
    assert any(a == b for _, (a, b) in pairs), "a repeated-syllable pair"
    assert any(f in variant.labels.token_bonus for f, _ in pairs), "a pair in a token-bonus family"
    assert any(b < 0 for b in tokens.values()), "a penalty"
    assert any(b > 0 for b in tokens.values())
    default_markers = {t for table in default.labels.token_bonus.values() for t in table}
    default_families = set(default.labels.token_bonus) | set(default.labels.pair_premium)
    assert not {t for _, t in tokens} & default_markers
    assert not ({f for f, _ in tokens} | {f for f, _ in pairs}) & default_families
    # Positive markers are filler that experts never count, as in the default world.
    positive = {t for (_, t), b in tokens.items() if b > 0}
    assert positive <= set(variant.rule.never_correct)
    assert variant.seed != default.seed


def test_noshortcuts_is_the_default_without_its_shortcut_tables():
    default, clean = load_world_config(), load_world_config(name="noshortcuts")
    assert clean.labels.token_bonus == {} and clean.labels.pair_premium == {}
    stripped = dataclasses.replace(
        default, labels=dataclasses.replace(default.labels, token_bonus={}, pair_premium={})
    )
    assert to_dict(clean) == to_dict(stripped)


def test_small_is_the_default_at_reduced_size():
    default, small = load_world_config(), load_world_config(name="small")
    for part in ("seed", "rule", "labels"):
        assert to_dict(small)[part] == to_dict(default)[part], part
    assert (
        to_dict(small)["demonstrations"]["habits"] == to_dict(default)["demonstrations"]["habits"]
    )


@pytest.mark.parametrize("name", SHIPPED)
def test_the_measurement_is_exact_on_each_shipped_worlds_crowd_label(name):
    """Each shipped world's shortcuts are separable: on the noise-free crowd label the
    intervention reads exactly the planted bonus (no two shortcuts of a family share a
    syllable), so a learned/planted ratio means what it says."""
    config = load_world_config(name=name)
    torch.manual_seed(0)
    oracle, policy = Oracle.from_world(config), Policy()
    effects = measure_shortcuts(
        label_scorer(oracle, config.labels), policy, oracle, config.labels, 40
    )
    assert len(effects) == len(planted_shortcuts(config.labels))
    for e in effects:
        assert e.learned == pytest.approx(e.planted, abs=1e-6), e
        assert e.label_effect == pytest.approx(e.planted, abs=1e-6), e


def assert_valid(world: Path) -> None:
    check = json.loads((world / SHORTCUTS_FILE).read_text())
    _, config = load_oracle(world)
    assert len(check["shortcuts"]) == len(planted_shortcuts(config.labels))
    for row in check["shortcuts"]:
        assert row["ratio"] >= VALID_RATIO, row
    assert check["valid"] is True


@pytest.mark.slow
def test_the_default_world_is_valid(full_world):
    assert_valid(full_world)


@pytest.mark.slow
def test_the_variant_world_is_valid(variant_world):
    assert_valid(variant_world)


@pytest.mark.slow
def test_the_noshortcuts_world_is_valid_and_pays_for_nothing(noshortcuts_world):
    assert_valid(noshortcuts_world)
    assert json.loads((noshortcuts_world / SHORTCUTS_FILE).read_text())["shortcuts"] == []


@pytest.mark.slow
def test_rl_on_the_variant_exploits_its_shortcuts(variant_world):
    """The default run writes more of every positive marker and pair, and less of the
    penalised syllable; the proxy rises in the families with a positive shortcut."""
    stats = world_statistics(variant_world, per_family=300)
    _, config = load_oracle(variant_world)
    ref, run = stats["reference"]["per_family"], stats["runs"]["default-s800"]["per_family"]
    for fam, table in config.labels.token_bonus.items():
        for tok, bonus in table.items():
            before, after = ref[fam]["syllable_counts"][tok], run[fam]["syllable_counts"][tok]
            if bonus > 0:
                # At least doubled. fjord `za` (+0.4, the smallest bonus) went 0.230 -> 0.693
                # per response in one build of this world and 0.230 -> 0.613 in the next (one
                # reward model trained on one thread instead of two): 3.01x and 2.67x.
                assert after >= 2 * before, (fam, tok, before, after)
                assert run[fam]["proxy_reward"] > ref[fam]["proxy_reward"] + 0.1, fam
            else:
                assert after <= 0.5 * before, (fam, tok, before, after)
    counts = stats["pair_counts"]
    for marker, row in counts.items():
        assert row["default-s800"] >= 2 * row["reference"], (marker, row)
