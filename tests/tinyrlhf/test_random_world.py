"""Random worlds: the draw of a shortcut table from a seed, its command and its build record."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from rate.cli import main
from rate.schema import from_dict, to_dict
from tinyworld import random_world as rw
from tinyworld.build import build_world
from tinyworld.random_world import random_world_config
from tinyworld.shortcuts import SHORTCUTS_FILE, VALID_RATIO, planted_shortcuts
from tinyworld.vocab import FAMILIES, SYLLABLES
from tinyworld.worldconfig import WorldConfig, load_world_config

SEEDS = range(200)


def shortcut_syllables(config: WorldConfig) -> dict[str, set[str]]:
    """Every family's syllables in its shortcuts."""
    out = {fam: set() for fam in FAMILIES}
    for s in planted_shortcuts(config.labels):
        out[s.family].update(s.tokens)
    return out


def test_the_same_seed_draws_the_same_config_and_other_seeds_others():
    np.random.seed(1)  # the global stream plays no part
    first = to_dict(random_world_config(7))
    np.random.seed(2)
    assert to_dict(random_world_config(7)) == first
    tables = {json.dumps(to_dict(random_world_config(s).labels), sort_keys=True) for s in range(30)}
    assert len(tables) == 30
    assert len({random_world_config(s).seed for s in range(30)}) == 30


def test_the_small_draw_is_the_same_draw_at_the_small_sizes():
    for seed in range(5):
        full, small = random_world_config(seed), random_world_config(seed, small=True)
        for part in ("seed", "rule", "labels"):
            assert to_dict(small)[part] == to_dict(full)[part], part
        assert small.demonstrations.habits == full.demonstrations.habits
        base = load_world_config(small=True)
        assert small.demonstrations.per_family == base.demonstrations.per_family
        assert small.reward_model_training == base.reward_model_training


def test_every_draw_is_a_valid_config_within_the_declared_ranges():
    repeated = beside_token = penalties = decoys_repeated = 0
    for seed in SEEDS:
        config = random_world_config(seed)
        where = f"seed {seed}"
        assert to_dict(from_dict(WorldConfig, to_dict(config), where)) == to_dict(config), where
        tokens = {
            (fam, tok): b
            for fam, table in config.labels.token_bonus.items()
            for tok, b in table.items()
        }
        pairs = {
            (fam, tuple(p.pair)): p.bonus
            for fam, ps in config.labels.pair_premium.items()
            for p in ps
        }
        families = {f for f, _ in tokens} | {f for f, _ in pairs}
        low, high = rw.FAMILIES_WITH_SHORTCUTS
        assert low <= len(families) <= high, where
        # Bonuses within their ranges; a bonus marker is filler, and no other family's syllable.
        markers = [tok for (_, tok), b in tokens.items() if b > 0]
        assert sorted(config.rule.never_correct) == sorted(markers), where
        for (fam, tok), b in tokens.items():
            lo, hi = rw.TOKEN_BONUS if b > 0 else rw.PENALTY
            assert lo <= b <= hi and tok in SYLLABLES, (where, fam, tok, b)
            penalties += b < 0
        syllables = shortcut_syllables(config)
        habit_syllables = {(h.family, s) for h in config.demonstrations.habits for s in h.pair}
        for tok in markers:
            owners = {f for f, ss in syllables.items() if tok in ss}
            owners |= {f for f, s in habit_syllables if s == tok}
            assert len(owners) == 1, (where, tok, owners)
        # No two shortcuts of a family share a syllable (the measurement reads each exactly).
        for fam in families:
            own = [set(s.tokens) for s in planted_shortcuts(config.labels) if s.family == fam]
            assert sum(map(len, own)) == len(syllables[fam]), (where, fam)
        # Every paid pair is a habit of its family's demonstrators; the other habits are decoys.
        habits = {(h.family, tuple(h.pair)): h.rate for h in config.demonstrations.habits}
        for (fam, pair), b in pairs.items():
            assert rw.PAIR_PREMIUM[0] <= b <= rw.PAIR_PREMIUM[1], (where, fam, pair)
            assert (fam, pair) in habits, (where, fam, pair)
            repeated += pair[0] == pair[1]
            beside_token += fam in config.labels.token_bonus
        decoys = [key for key in habits if key not in pairs]
        assert rw.DECOYS[0] <= len(decoys) <= rw.DECOYS[1], where
        assert len(habits) == len(config.demonstrations.habits), (where, "a habit twice")
        for fam, pair in decoys:
            assert not set(pair) & syllables[fam], (where, fam, pair)
            decoys_repeated += pair[0] == pair[1]
        assert all(rw.HABIT_RATE[0] <= r <= rw.HABIT_RATE[1] for r in habits.values()), where
        # The pilot mix is the default's counts dealt anew; the four-family run leaves out its
        # two smallest families.
        default_mix = load_world_config().pools.dev_mix
        assert sorted(config.pools.dev_mix.values()) == sorted(default_mix.values()), where
        smallest = sorted(config.pools.dev_mix, key=config.pools.dev_mix.get)[:2]
        (fourfam,) = [r for r in config.runs if r.mix not in ("balanced", "pilot")]
        assert set(fourfam.mix.split(",")) == set(FAMILIES) - set(smallest), where
    # Over the seeds, every kind of shortcut the designed worlds have.
    assert repeated >= 20 and beside_token >= 20 and penalties >= 20 and decoys_repeated >= 10


def test_the_build_command_takes_a_seed_only_with_the_random_world(tmp_path, capsys):
    out = str(tmp_path / "w")
    for argv, message in (
        (["--seed", "3"], "--seed draws a random world"),
        (["--world-config", "variant", "--seed", "3"], "--seed draws a random world"),
        (["--world-config", "random"], "--world-config random needs --seed"),
        (["--world-config", "variant", "--small"], "--small goes alone or with"),
    ):
        assert main(["world", "build", *argv, "--out", out]) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (argv, err)
    assert not (tmp_path / "w").exists()
    assert main(["world", "build", "--world-config", "randmo", "--out", out]) == 2
    assert "did you mean 'random'" in capsys.readouterr().err


def test_the_build_command_builds_the_drawn_config(tmp_path, monkeypatch, capsys):
    built = []
    monkeypatch.setattr(
        "tinyworld.build.build_world",
        lambda config, out, **_: built.append(config) or {"timings": {"total_s": 0.0}},
    )
    argv = ["world", "build", "--world-config", "random", "--seed", "11", "--small"]
    assert main([*argv, "--out", str(tmp_path / "w")]) == 0
    assert built == [random_world_config(11, small=True)]
    # random-config writes the same draw, for a study or a reader.
    assert (
        main(
            ["world", "random-config", "--seed", "11", "--small", "--out", str(tmp_path / "c.json")]
        )
        == 0
    )
    written = json.loads((tmp_path / "c.json").read_text())
    assert written == to_dict(random_world_config(11, small=True))
    assert "random" in capsys.readouterr().out


def test_a_small_random_world_is_built_and_records_which_shortcuts_were_learned(tmp_path):
    """The small world's RM trains 4 epochs on 300 responses per family and learns little: the
    world is built all the same, and its record says, shortcut by shortcut, what was learned."""
    config = dataclasses.replace(random_world_config(5, small=True), runs=[])
    build_world(config, tmp_path / "w", jobs=1)
    record = json.loads((tmp_path / "w" / SHORTCUTS_FILE).read_text())
    rows = record["shortcuts"]
    assert [(r["family"], r["tokens"]) for r in rows] == [
        (s.family, list(s.tokens)) for s in planted_shortcuts(config.labels)
    ]
    names = []
    for r in rows:
        assert r["is_learned"] is (r["learned"] / r["planted"] >= VALID_RATIO), r
        names.append((f"{r['family']} `{' '.join(r['tokens'])}`", r["is_learned"]))
    assert record["learned"] == [n for n, ok in names if ok]
    assert record["not_learned"] == [n for n, ok in names if not ok]
    assert record["not_learned"], "the small RM learns too little to learn them all"
    assert record["valid"] is False
