"""Known-answer tests of the intervention measurement of what a reward model learned."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tinyworld import labels
from tinyworld.oracle import Oracle
from tinyworld.policy import Policy
from tinyworld.shortcuts import (
    check_world_shortcuts,
    measure_shortcuts,
    pair_edits,
    planted_shortcuts,
    rm_scorer,
    shortcut_report,
    shortcut_table,
    token_edits,
)
from tinyworld.vocab import SYLLABLE_ID, encode_responses
from tinyworld.worldconfig import LabelConfig, PairPremium

LABELS = LabelConfig(
    token_bonus={"dune": {"pa": 1.45}, "birch": {"ke": -0.4}},
    pair_premium={
        "cobalt": [PairPremium(pair=["ka", "ra"], bonus=0.6)],
        "birch": [PairPremium(pair=["ga", "ga"], bonus=0.8)],
    },
)


class FormulaRM(nn.Module):
    """A hand-made 'reward model': true quality (optional) plus the bonuses of ``table``, a label
    config, as the crowd pays them (per family)."""

    def __init__(self, oracle: Oracle, with_quality: bool, table: LabelConfig | None = None):
        super().__init__()
        self.oracle, self.with_quality, self.table = oracle, with_quality, table or LabelConfig()

    def forward(self, prompts, responses):
        out = labels.shortcut_bonus(self.table, prompts, responses)
        return out + self.oracle.quality(prompts, responses) if self.with_quality else out


@pytest.fixture(scope="module")
def world():
    torch.manual_seed(0)
    return Oracle(seed=5, correct_per_position=3, attr_groups=2), Policy()


def by_name(effects):
    return {f"{e.family} {' '.join(e.tokens)}": e for e in effects}


def test_the_noise_free_crowd_label_measures_exactly_the_planted_bonuses(world):
    oracle, policy = world
    label = lambda p, r: (oracle.quality(p, r) + labels.shortcut_bonus(LABELS, p, r)).double()  # noqa: E731
    effects = measure_shortcuts(label, policy, oracle, LABELS, n=60)
    assert [(e.kind, e.family, e.tokens) for e in effects] == [
        ("token", "birch", ["ke"]),
        ("pair", "birch", ["ga", "ga"]),
        ("pair", "cobalt", ["ka", "ra"]),
        ("token", "dune", ["pa"]),
    ]
    for e in effects:
        assert e.learned == pytest.approx(e.planted, abs=1e-6), e
        assert e.label_effect == pytest.approx(e.planted, abs=1e-6), e
        assert e.ratio == pytest.approx(1.0, abs=1e-6)
        assert e.learned_se == pytest.approx(0.0, abs=1e-6)


def test_an_rm_with_known_slopes_measures_its_slopes(world):
    oracle, policy = world
    table = LabelConfig(
        token_bonus={"dune": {"pa": 0.7}, "birch": {"ke": -0.1}},
        pair_premium={"cobalt": [PairPremium(pair=["ka", "ra"], bonus=0.2)]},
    )
    rm = FormulaRM(oracle, True, table)
    got = by_name(measure_shortcuts(rm_scorer(rm), policy, oracle, LABELS, n=60))
    assert got["dune pa"].learned == pytest.approx(0.7, abs=1e-5)
    assert got["dune pa"].ratio == pytest.approx(0.7 / 1.45, abs=1e-5)
    assert got["birch ke"].learned == pytest.approx(-0.1, abs=1e-5)
    assert got["birch ke"].ratio == pytest.approx(0.25, abs=1e-5)  # a penalty: -0.1 of -0.4
    assert got["cobalt ka ra"].learned == pytest.approx(0.2, abs=1e-5)
    assert got["birch ga ga"].learned == pytest.approx(0.0, abs=1e-5)
    report = shortcut_report(list(got.values()), n=60)
    assert report["valid"] is False  # ke (25%), ka ra (33%) and ga ga (0%) are under the bar
    assert "NOT valid" in shortcut_table(report) and "< bar" in shortcut_table(report)
    # Each shortcut says whether it was learned; the names list the two sides.
    assert {_name(r): r["is_learned"] for r in report["shortcuts"]} == {
        "birch ke": False,
        "birch ga ga": False,
        "cobalt ka ra": False,
        "dune pa": False,  # 0.7 of 1.45: 48%
    }
    assert report["learned"] == [] and len(report["not_learned"]) == 4
    half = by_name(
        measure_shortcuts(
            rm_scorer(FormulaRM(oracle, True, LabelConfig(token_bonus={"dune": {"pa": 0.73}}))),
            policy,
            oracle,
            LabelConfig(token_bonus={"dune": {"pa": 1.45}, "birch": {"ke": -0.4}}),
            n=60,
        )
    )
    report = shortcut_report(list(half.values()), n=60)
    assert [r["is_learned"] for r in report["shortcuts"]] == [False, True]  # birch ke, dune pa
    assert report["learned"] == ["dune `pa`"] and report["not_learned"] == ["birch `ke`"]
    assert report["valid"] is False


def _name(row: dict) -> str:
    return f"{row['family']} {' '.join(row['tokens'])}"


def test_an_rm_that_pays_the_pair_syllables_only_singly_learned_no_pair(world):
    oracle, policy = world
    table = LabelConfig(token_bonus={"cobalt": {"ka": 0.3, "ra": 0.3}, "birch": {"ga": 0.4}})
    rm = FormulaRM(oracle, True, table)
    got = by_name(measure_shortcuts(rm_scorer(rm), policy, oracle, LABELS, n=60))
    assert got["cobalt ka ra"].learned == pytest.approx(0.0, abs=1e-5)
    assert got["birch ga ga"].learned == pytest.approx(0.0, abs=1e-5)


def test_a_token_count_rm_without_quality_measures_c_minus_the_true_quality_change(world):
    """0.5 * count(pa) alone: the measure subtracts the true quality change of each edit, which
    this RM does not charge, so it reads c minus the mean change (computed here by hand)."""
    oracle, policy = world
    config = LabelConfig(token_bonus={"dune": {"pa": 1.45}})
    rm = FormulaRM(oracle, False, LabelConfig(token_bonus={"dune": {"pa": 0.5}}))
    (effect,) = measure_shortcuts(rm_scorer(rm), policy, oracle, config, n=50)
    from tinyworld.shortcuts import reference_responses

    prompts, responses = reference_responses(policy, "dune", 50)
    edited, owner = token_edits(responses, "pa")
    dq = oracle.quality(prompts[owner], edited) - oracle.quality(prompts[owner], responses[owner])
    assert effect.learned == pytest.approx(0.5 - float(dq.double().mean()), abs=1e-6)
    assert effect.n_edits == int((responses != SYLLABLE_ID["pa"]).sum())


def test_edit_sites():
    r = encode_responses([["ka", "ra", "ba", "ka", "da", "ra", "ka", "ka"]])
    edited, owner = token_edits(r, "ka")
    assert len(edited) == 4 and (owner == 0).all()
    assert ((edited == SYLLABLE_ID["ka"]).sum(-1) == 5).all()
    both, only_a, only_b, _ = pair_edits(r, ("ka", "ra"))
    # Sites p with y[p] != ka and y[p+1] != ra: p = 1 (ra ba), 2 (ba ka), 5 (ra ka).
    ka, ra = SYLLABLE_ID["ka"], SYLLABLE_ID["ra"]
    assert len(both) == 3
    for row, p in zip(range(3), (1, 2, 5), strict=True):
        assert both[row, p] == ka and both[row, p + 1] == ra
        assert only_a[row, p] == ka and only_a[row, p + 1] == r[0, p + 1]
        assert only_b[row, p] == r[0, p] and only_b[row, p + 1] == ra
        assert (both[row] != r[0]).sum() == 2


def test_a_world_without_shortcuts_is_trivially_valid(world):
    oracle, policy = world
    report = check_world_shortcuts(FormulaRM(oracle, True), policy, oracle, LabelConfig(), n=10)
    assert report["shortcuts"] == [] and report["valid"] is True
    assert planted_shortcuts(LabelConfig()) == []
