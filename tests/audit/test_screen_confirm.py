"""The audit's two stages and its corrections of the sites' context, on hand-made reward models
and hand-computed numbers: the screen's choice, Holm over the tokens and the confirmed pairs
alone, the pair measurements at fresh sites, the tokens' and the pairs' excess against the
family's typical syllable and pair, and the echoes of a flagged pair."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.audit.test_audit import KA, PA, RA, CountingRM, HandMadeRM, responses
from tinyworld.audit import effects as fx
from tinyworld.audit.decide import _adjust, centred, echoes, pair_offsets, screen
from tinyworld.vocab import N_SYLLABLES

S = N_SYLLABLES


def test_the_screen_sends_on_the_pairs_of_the_smallest_p_values():
    """Against the margin 0.05: z = 0.25 / 0.1 = 2.5, 0.15 / 0.05 = 3, 0.01 / 0.01 = 1 and
    -0.05 / 0.01 = -5; an unmeasured pair (NaN) is never sent on."""
    excess = np.array([0.30, -0.20, 0.06, 0.0, np.nan])
    se = np.array([0.1, 0.05, 0.01, 0.01, 0.1])
    assert screen(excess, se, 0.05, 1).tolist() == [1]
    assert screen(excess, se, 0.05, 2).tolist() == [0, 1]
    assert screen(excess, se, 0.05, 3).tolist() == [0, 1, 2]
    assert screen(excess, se, 0.05, 10).tolist() == [0, 1, 2, 3]


def test_holm_counts_the_tokens_and_the_confirmed_pairs_alone():
    """Three tests (p 0.001, 0.009, 0.02) among 3,597 pairs the screen left out (p NaN): Holm
    over the three gives 0.003, 0.018 and 0.02, all flagged at 0.05; the same p-values among
    3,600 tests would give 3.6 and more, none flagged."""
    rows = [{"p": p} for p in (0.02, 0.001, 0.009)] + [{"p": math.nan}] * 3597
    _adjust(rows, 0.05, "p", "")
    assert [r["p_holm"] for r in rows[:3]] == pytest.approx([0.02, 0.003, 0.018])
    assert [r["flagged"] for r in rows[:4]] == [True, True, True, False]
    assert math.isnan(rows[3]["p_holm"]) and math.isnan(rows[3]["q_bh"])
    everyone = [{"p": p} for p in (0.02, 0.001, 0.009)] + [{"p": 0.5}] * 3597
    _adjust(everyone, 0.05, "p", "")
    assert not any(r["flagged"] for r in everyone)


class CountRM(HandMadeRM):
    """HandMadeRM, plus 0.3 per pair of 'ka' anywhere: merely nonlinear in the count of 'ka'."""

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        ka = (responses == KA).sum(-1).float()
        return super().forward(prompts, responses) + 0.3 * ka * (ka - 1) / 2


@pytest.mark.parametrize("measured_singles", [True, False])
def test_pairs_next_to_each_other_and_at_a_gap_at_the_same_site(measured_singles):
    """Known answers: 'ka ra' is paid 0.6 next to each other and nothing at a gap; 'ka ka' of
    a reward model nonlinear in the count of 'ka' measures 0.3 both ways, so its adjacency (the
    difference at the same site) is 0; with the singles measured here, 5 RM calls per response
    and pair and 1 per response, with them given, 2."""
    pairs = torch.tensor([KA * S + RA, RA * S + KA, KA * S + KA, PA * S + PA])
    p, y = responses(30)
    for rm_class, ka_ka in ((HandMadeRM, 0.0), (CountRM, 0.3)):
        rm = CountingRM(rm_class())
        single = fx.singles(rm, p, y) if measured_singles else None
        rm.calls = 0
        out = fx.adjacency_interactions(rm, p, y, pairs, torch.Generator().manual_seed(0), single)
        assert rm.calls == (2 * 30 * 4 if measured_singles else 30 * (1 + 5 * 4))
        expected = {"adjacent": [0.6, 0, ka_ka, 0], "gap": [0, 0, ka_ka, 0],
                    "adjacency": [0.6, 0, 0, 0]}  # fmt: skip
        for key, values in expected.items():
            mean, se, sites = out[key]
            assert mean.tolist() == pytest.approx(values, abs=1e-5)
            assert se.max() < 1e-5 and sites.tolist() == [30] * 4  # no response holds them


def test_rate_confirms_a_pair_at_fresh_sites():
    """Without random edits and with a style map that leaves 'ka' and 'ra' alone, RATE's round
    trips measure the RM's interaction exactly: 0.6 for 'ka ra', 0 for 'ra ka'; 6 calls per
    response and pair."""
    rm, (p, y) = CountingRM(HandMadeRM()), responses(25)
    sig = fx.Signature({"je": "de"}, 0.0)
    pairs = torch.tensor([KA * S + RA, RA * S + KA])
    mean, se, sites = fx.rate_interactions_at_sites(
        rm, p, y, pairs, sig, torch.Generator().manual_seed(3)
    )
    assert mean.tolist() == pytest.approx([0.6, 0.0], abs=1e-5) and se.max() < 1e-5
    assert sites.tolist() == [25, 25] and rm.calls == 6 * 25 * 2


def test_tokens_are_judged_against_the_familys_typical_syllable():
    """A family where 'pa' is paid 1.3 and holds a tenth of the sites, the other 23 syllables
    the rest alike: writing t over the sites' mix measures ``(e_t - mean e) / (1 - share_t)``,
    -0.13 / (1 - 0.9 / 23) for every other syllable; centred, 'pa' is 1.3 and the others 0."""
    e = np.zeros(S)
    e[PA] = 1.3
    share = np.full(S, 0.9 / 23)
    share[PA] = 0.1
    measured = (e - share @ e) / (1 - share)
    assert measured[0] == pytest.approx(-0.13 / (1 - 0.9 / 23))
    excess, se = centred(measured, np.full(S, 0.02), share)
    assert excess == pytest.approx(e)
    # Each SE is (1 - share) times the token's, and the median's 1.2533 x 0.02 x (1 - 0.9 / 23)
    # / sqrt(24) beside it.
    median_se = 1.2533 * 0.02 * (1 - 0.9 / 23) / math.sqrt(S)
    assert se[PA] == pytest.approx(math.hypot(0.9 * 0.02, median_se))


def test_pairs_are_judged_against_their_rows_and_columns():
    """A table level 0.04 + r(a) + k(b) + premium: a paid 'sa sa' of 0.5 whose row and column
    measure -0.1 (the pairs it breaks); the median polish leaves the level and the premium."""
    sa = 17
    r, k = np.zeros(S), np.zeros(S)
    r[sa] = k[sa] = -0.1
    table = 0.04 + r[:, None] + k[None, :]
    table[sa, sa] += 0.5
    offset, offset_se = pair_offsets(table.ravel(), np.full(S * S, 0.03))
    polished = (table.ravel() - offset).reshape(S, S)
    expected = np.full((S, S), 0.04)
    expected[sa, sa] += 0.5
    assert polished == pytest.approx(expected)
    # Two medians of 24 values of SE 0.03: 1.2533 x 0.03 / sqrt(24) each.
    assert offset_se == pytest.approx(np.full(S * S, math.sqrt(2) * 1.2533 * 0.03 / math.sqrt(S)))


def test_a_flagged_pair_that_resembles_a_larger_flag_is_its_echo():
    """'sa sa' passes in cobalt (0.5) and fjord (0.2), 'za ja' (0.9) and its reverse 'ja za'
    (0.11) in fjord: the larger of each keeps its flag, the others are its echoes; so is
    fjord's 'za ba' (0.08: 'za' first, as in 'za ja'), not birch's 'ka da' (another family).
    Ember's 'he he' (-0.1) holds ember's flagged token 'he' (1.2): its echo, which then echoes
    no other 'he he' (anvil's keeps its flag). Dune's 'ka ra' (0.3) holds dune's 'ka', flagged
    for less (0.2): both keep their flags, and dune's 'da ra' (0.1) echoes 'ka ra'."""

    def row(family, feature, excess, flagged=True):
        kind = "pair" if " " in feature else "token"
        return {"family": family, "feature": feature, "kind": kind, "excess": excess,
                "flagged": flagged}  # fmt: skip

    rows = [
        row("fjord", "sa sa", 0.2),
        row("cobalt", "sa sa", -0.5),
        row("fjord", "ja za", 0.11),
        row("fjord", "za ja", 0.9),
        row("fjord", "za ba", 0.08),
        row("birch", "ka da", 0.1),
        row("dune", "ka ra", 0.3),
        row("dune", "ka", 0.2),
        row("dune", "da ra", 0.1),
        row("dune", "ra ka", 0.06, flagged=False),
        row("ember", "he he", -0.1),
        row("ember", "he", 1.2),
        row("anvil", "he he", 0.3),
    ]
    echoes(rows, "")
    echo_of = {f"{r['family']} `{r['feature']}`": r["echo_of"] for r in rows if r["echo_of"]}
    assert echo_of == {
        "fjord `sa sa`": "cobalt `sa sa`",
        "fjord `ja za`": "fjord `za ja`",
        "fjord `za ba`": "fjord `za ja`",
        "dune `da ra`": "dune `ka ra`",
        "ember `he he`": "ember `he`",
    }
    assert [r["flagged"] for r in rows] == [
        False, True, False, True, False, True, True, True, False, False, False, True, True
    ]  # fmt: skip
