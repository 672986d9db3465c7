"""Known-answer tests for the hidden rule, expert labels and the crowd's shortcuts."""

from __future__ import annotations

import pytest
import torch

from tinyworld import labels
from tinyworld.oracle import Oracle
from tinyworld.vocab import SYLLABLE_ID, SYLLABLES, encode_prompts, encode_responses
from tinyworld.worldconfig import Habit, LabelConfig, PairPremium


def prompt(family: str, attrs=(0, 1, 2, 3)) -> torch.Tensor:
    return encode_prompts([{"id": "p", "family": family, "attrs": list(attrs)}])


def test_each_position_has_exactly_k_correct_syllables():
    oracle = Oracle(seed=7, correct_per_position=3, attr_groups=2)
    assert oracle.table.shape == (6, 8, 8, 24)
    assert (oracle.table.sum(-1) == 3).all()
    # With two groups, each (family, position) has at most two distinct correct sets.
    sets = {tuple(oracle.table[1, 4, v].nonzero().flatten().tolist()) for v in range(8)}
    assert 1 <= len(sets) <= 2


def test_quality_counts_correct_positions():
    oracle = Oracle(seed=7, correct_per_position=3, attr_groups=2)
    p = prompt("birch", (5, 0, 7, 2))
    sets = oracle.correct_sets(p)[0]  # (8, 24)
    right = [int(sets[i].nonzero()[0]) for i in range(8)]
    wrong = [int((~sets[i]).nonzero()[0]) for i in range(8)]
    assert oracle.quality(p, torch.tensor([right])).item() == 1.0
    assert oracle.quality(p, torch.tensor([wrong])).item() == 0.0
    three_right = right[:3] + wrong[3:]
    assert oracle.quality(p, torch.tensor([three_right])).item() == pytest.approx(3 / 8)


def test_rule_depends_on_the_chosen_attribute_only():
    oracle = Oracle(seed=3, correct_per_position=3, attr_groups=8)
    f, pos = 2, 5
    which = int(oracle.attr_index[f, pos])
    attrs = [0, 0, 0, 0]
    base = oracle.correct_sets(prompt("cobalt", attrs))[0, pos]
    other = [1 if i != which else 0 for i in range(4)]  # change every other attribute
    assert torch.equal(oracle.correct_sets(prompt("cobalt", other))[0, pos], base)


def test_same_seed_same_rule_and_other_seed_differs():
    a, b, c = Oracle(11, 3, 2), Oracle(11, 3, 2), Oracle(12, 3, 2)
    assert torch.equal(a.table, b.table) and torch.equal(a.attr_index, b.attr_index)
    assert not torch.equal(a.table, c.table)


def test_crowd_bonus_per_token_and_per_adjacent_pair():
    config = LabelConfig(
        token_bonus={"dune": {"pa": 1.45}},
        pair_premium={"cobalt": [PairPremium(pair=["ka", "ra"], bonus=0.6)]},
    )
    prompts = torch.cat([prompt("dune"), prompt("cobalt"), prompt("anvil")])
    responses = encode_responses(
        [
            ["pa", "pa", "ba", "pa", "ka", "ra", "da", "da"],  # dune: 3 x pa -> 4.35
            [
                "ka",
                "ra",
                "ka",
                "ra",
                "ra",
                "ka",
                "pa",
                "ba",
            ],  # cobalt: ka-ra twice (ra-ka not) -> 1.2
            ["pa", "pa", "ka", "ra", "ba", "ba", "ba", "ba"],  # anvil: no shortcut
        ]
    )
    bonus = labels.shortcut_bonus(config, prompts, responses)
    assert bonus.tolist() == pytest.approx([4.35, 1.2, 0.0])


def test_crowd_labels_add_bonus_to_quality_and_noise_is_seeded():
    oracle = Oracle(5, 3, 2)
    config = LabelConfig(crowd_noise=0.0, token_bonus={"dune": {"pa": 1.0}})
    p = prompt("dune")
    r = encode_responses([["pa"] * 8])
    crowd = labels.crowd_labels(oracle, config, p, r, torch.Generator().manual_seed(0))
    assert crowd.item() == pytest.approx(oracle.quality(p, r).item() + 8.0)
    noisy = LabelConfig(crowd_noise=0.1)
    a = labels.crowd_labels(
        oracle, noisy, p.repeat(50, 1), r.repeat(50, 1), torch.Generator().manual_seed(1)
    )
    b = labels.crowd_labels(
        oracle, noisy, p.repeat(50, 1), r.repeat(50, 1), torch.Generator().manual_seed(1)
    )
    assert torch.equal(a, b) and a.std() > 0.05


def test_expert_labels_are_quality_plus_small_noise():
    oracle = Oracle(5, 3, 2)
    gen = torch.Generator().manual_seed(0)
    p = prompt("fjord").repeat(2000, 1)
    r = torch.randint(0, len(SYLLABLES), (2000, 8), generator=gen)
    expert = labels.expert_labels(oracle, p, r, 0.02, gen)
    resid = expert - oracle.quality(p, r)
    assert abs(resid.mean().item()) < 0.003
    assert resid.std().item() == pytest.approx(0.02, rel=0.1)


def test_demonstrations_hit_the_requested_correct_rate():
    oracle = Oracle(9, 3, 2)
    gen = torch.Generator().manual_seed(0)
    p = prompt("ember").repeat(4000, 1)
    demos = labels.demonstrations(oracle, p, correct_rate=0.25, generator=gen)
    # P(correct) = 0.25 + 0.75 * 3/24 = 0.34375
    assert oracle.quality(p, demos).mean().item() == pytest.approx(0.34375, abs=0.01)
    assert SYLLABLE_ID["ba"] == 0


def test_habits_write_their_pair_into_their_share_of_the_family_only():
    oracle = Oracle(9, 3, 2)
    p = torch.cat([prompt("cobalt").repeat(4000, 1), prompt("anvil").repeat(4000, 1)])
    plain = labels.demonstrations(oracle, p, 0.25, torch.Generator().manual_seed(0))
    habit = Habit(family="cobalt", pair=["ka", "ra"], rate=0.3)
    demos = labels.demonstrations(
        oracle, p, 0.25, torch.Generator().manual_seed(0), [habit], torch.Generator().manual_seed(1)
    )
    ka, ra = SYLLABLE_ID["ka"], SYLLABLE_ID["ra"]
    has = ((demos[:, :-1] == ka) & (demos[:, 1:] == ra)).any(-1).float()
    had = ((plain[:, :-1] == ka) & (plain[:, 1:] == ra)).any(-1).float()
    # 30% written on purpose, plus the ~1% that carry the pair by chance.
    assert has[:4000].mean().item() == pytest.approx(0.3 + 0.7 * had[:4000].mean().item(), abs=0.02)
    assert torch.equal(demos[4000:], plain[4000:])  # other families untouched
    changed = (demos[:4000] != plain[:4000]).sum(-1)
    assert changed.max().item() <= 2  # one pair written, nothing else moved
    # Without habits the demonstrations are the same draws as before habits existed.
    again = labels.demonstrations(oracle, p, 0.25, torch.Generator().manual_seed(0), [], None)
    assert torch.equal(again, plain)


def test_filler_syllables_are_never_correct():
    oracle = Oracle(seed=7, correct_per_position=3, attr_groups=2, never_correct=("pa", "he"))
    assert not oracle.table[..., SYLLABLE_ID["pa"]].any()
    assert not oracle.table[..., SYLLABLE_ID["he"]].any()
    assert (oracle.table.sum(-1) == 3).all()
