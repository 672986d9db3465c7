"""The pair complex (tinyworld.audit.complexes) on hand-made reward models with known answers, and
the wrapper that subtracts it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tinyworld.audit.complexes import cell_of, pair_complex, patterns, rm_calls
from tinyworld.audit.wrapper import write_wrapper
from tinyworld.rl_config import load_reward_wrapper
from tinyworld.vocab import N_SYLLABLES, SYLLABLE_ID

WA, TA, BA = SYLLABLE_ID["wa"], SYLLABLE_ID["ta"], SYLLABLE_ID["ba"]


class CountingRM(torch.nn.Module):
    """Score = 0.1 per 'wa' + 0.2 per 'ta' + 0.5 per adjacent 'wa ta' + 0.05 per ('wa', 'ta')
    pair of positions anywhere + 0.3 * (number of 'ba') squared; the syllables' payment together
    beyond each alone is known in every cell."""

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        wa = (responses == WA).sum(-1).float()
        ta = (responses == TA).sum(-1).float()
        ba = (responses == BA).sum(-1).float()
        wata = ((responses[:, :-1] == WA) & (responses[:, 1:] == TA)).sum(-1).float()
        return 0.1 * wa + 0.2 * ta + 0.5 * wata + 0.05 * wa * ta + 0.3 * ba**2


def reference(without: tuple[int, ...], n: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    """Responses that hold the pair's own syllables, but none of ``without``: those the RM
    pays nonlinearly, so that overwriting a position removes a known amount."""
    gen = torch.Generator().manual_seed(1)
    keep = torch.tensor([i for i in range(N_SYLLABLES) if i not in without])
    y = keep[torch.randint(len(keep), (n, 8), generator=gen)]
    return torch.randint(24, 30, (n, 6), generator=gen), y


def test_a_cell_counts_each_syllable_and_the_adjacent_pairs():
    assert cell_of(["wa", "ta", "wa", "ta", "ta", "x", "wa", "x"], "wa", "ta") == (3, 3, 2)
    assert cell_of(["ba", "ba", "ba", "x", "ba"], "ba", "ba") == (4, 4, 2)
    table, cells = patterns(WA, TA)
    assert len(table) == 3**8 and len(set(cells)) == 95
    assert len(patterns(BA, BA)[0]) == 2**8 and len(set(patterns(BA, BA)[1])) == 21


def test_the_complex_of_two_syllables_is_their_payment_together_beyond_each_alone():
    """Known answer: 0.5 per adjacent 'wa ta' + 0.05 * n_wa * n_ta, in every one of the 95
    cells, exactly (the RM is deterministic, so every SE is 0), though the responses held 'wa'
    and 'ta' of their own."""
    prompts, y = reference(without=(BA,))
    assert ((y == WA) | (y == TA)).any()
    cx = pair_complex(CountingRM(), prompts, y, WA, TA, 3, torch.Generator().manual_seed(0))
    assert len(cx.excess) == 95
    for key, value in cx.excess.items():
        n_wa, n_ta, adjacent = map(int, key.split())
        assert value == pytest.approx(0.5 * adjacent + 0.05 * n_wa * n_ta, abs=1e-5), key
        assert cx.se[key] == pytest.approx(0.0, abs=1e-5)


def test_the_complex_of_a_repeated_syllable_is_its_nonlinearity():
    """'ba ba': 0.3 n^2 - 0.3 n per cell (the single 'ba' pays 0.3), whatever the adjacency."""
    prompts, y = reference(without=(WA, TA))
    cx = pair_complex(CountingRM(), prompts, y, BA, BA, 2, torch.Generator().manual_seed(0))
    assert cx.excess["5 5 1"] == pytest.approx(0.3 * 25 - 0.3 * 5, abs=1e-4)
    assert cx.excess["1 1 0"] == 0.0 and cx.excess["0 0 0"] == 0.0
    for key, value in cx.excess.items():
        n = int(key.split()[0])
        assert value == pytest.approx(0.3 * n * n - 0.3 * n, abs=1e-4), key


def test_the_complexes_count_of_reward_model_calls():
    class Counting(CountingRM):
        calls = 0

        def forward(self, prompts, responses):
            Counting.calls += len(responses)
            return super().forward(prompts, responses)

    prompts, y = reference(without=())
    pair_complex(Counting(), prompts, y, WA, TA, 4, torch.Generator().manual_seed(0))
    assert Counting.calls == rm_calls(False, 4) == 2 * 4 * 95


def test_the_wrapper_subtracts_each_responses_cell_of_a_measured_complex(tmp_path):
    """A flagged pair with a measured complex is corrected by its response's cell (the one-site
    interaction is not subtracted too); one without, per adjacent occurrence."""
    audit = {"candidates": [
        {"family": "birch", "feature": "wa ta", "kind": "pair", "flagged": True,
         "excess": 0.6, "rm_effect": 0.6,
         "complex": {"draws_per_cell": 2, "cells": {"2 4 0": [0.59, 0.07], "1 1 1": [0.7, 0.05]}}},
        {"family": "cobalt", "feature": "ka ra", "kind": "pair", "flagged": True,
         "excess": 0.5, "rm_effect": 0.5},
    ]}  # fmt: skip
    path = tmp_path / "w.py"
    table = write_wrapper(audit, path, "audit.json")
    assert table["birch"] == {"tokens": {}, "pairs": {},
                              "complexes": {"wa ta": {"2 4 0": 0.59, "1 1 1": 0.7}}}  # fmt: skip
    transform = load_reward_wrapper(path)
    records = [{"family": "birch"}, {"family": "birch"}, {"family": "cobalt"}]
    tokens = [
        ["fe", "ta", "wa", "wa", "je", "ta", "ta", "ta"],  # 2 wa, 4 ta, no 'wa ta': cell 2 4 0
        ["wa", "ta", "x", "x", "x", "x", "x", "x"],  # cell 1 1 1
        ["ka", "ra", "x", "ka", "ra", "x", "x", "x"],  # 'ka ra' twice
    ]
    out = transform(records, tokens, np.array([2.0, 2.0, 2.0]))
    assert out.tolist() == pytest.approx([2.0 - 0.59, 2.0 - 0.7, 2.0 - 2 * 0.5])


def test_the_audit_report_shows_each_flagged_pairs_largest_cells():
    from tinyworld.audit.report import complexes_section

    row = {"family": "fjord", "feature": "ba ba", "kind": "pair", "flagged": True,
           "rm_effect": 0.75, "complex": {"draws_per_cell": 2, "cells": {
               "0 0 0": [0.0, 0.0], "2 2 1": [0.79, 0.03], "5 5 1": [1.28, 0.07],
               "8 8 7": [3.15, 0.05]}}}  # fmt: skip
    lines = complexes_section([row, {**row, "kind": "token", "feature": "za"}], largest=2)
    assert len(lines) == 6  # a blank line, the title, a blank line, the header, the rule, one row
    assert lines[-1] == (
        "| fjord | `ba ba` | +0.750 | +0.790 ± 0.030 | `8 8 7`: +3.15, `5 5 1`: +1.28 |"
    )
    assert complexes_section([{**row, "complex": None}]) == []


def test_the_audit_report_shows_each_flagged_tokens_excess_by_position():
    from tinyworld.audit.report import positions_section

    row = {
        "family": "dune",
        "feature": "pa",
        "kind": "token",
        "flagged": True,
        "excess": 1.2,
        "rm_effect": 1.3,
        "rm_effect_by_position": [1.1, 1.3, 1.3, 1.3, 1.6, 1.3, 1.3, 1.3],
    }
    lines = positions_section([row, {**row, "feature": "he", "rm_effect_by_position": None}])
    assert len(lines) == 6  # a blank line, the title, a blank line, the header, the rule, one row
    assert lines[-1] == (
        "| dune | `pa` | +1.200 | +1.00 +1.20 +1.20 +1.20 +1.50 +1.20 +1.20 +1.20 |"
    )
