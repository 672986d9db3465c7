"""What the reward model pays for a flagged pair's syllables *together*, at every dose.

The pair interaction of :mod:`tinyworld.audit.effects` is measured at one site of a reference
response, where the pair's syllables are rare. A reward model trained on labels with a pair
premium may also pay for the two syllables apart and pay more than additively when many are
present (the variant world's RM pays 1.3 for five ``ba`` with one adjacency, against 0.75 for
one adjacent ``ba ba``); RL finds those responses, and a per-adjacency correction leaves them
paid. So for each flagged pair ``a b`` the audit measures the RM's payment for the pair's
**complex**, the syllables' interaction at every dose and arrangement:

- a *cell* is ``(n_a, n_b, adjacent)``: how many ``a``, how many ``b`` and how many adjacent
  ``a b`` a response holds (``a == b``: ``n_a == n_b``, the count);
- every pattern of 8 positions (each ``a``, ``b`` or left; 3^8, or 2^8 when ``a == b``) falls in
  one cell; for each cell, ``draws`` (pattern, reference response) pairs are drawn, the
  response's own ``a`` and ``b`` replaced by syllables drawn from the reference responses'
  other positions (``y0``), and the pattern written
  into it (``y1``): ``D = RM(y1) - RM(y0)``;
- the cell's **excess** is ``mean D - n_a * r_a - n_b * r_b``, where ``r_a`` and ``r_b`` are the
  means of the cells of one ``a`` and one ``b`` alone: what the RM pays for the syllables
  together beyond each alone (0 at the empty and the single cells by construction), the
  generalisation of the pair interaction to every dose. Its quality effect is 0 exactly: true
  quality is a sum over positions, so positions never interact in it.

The wrapper subtracts the cell excess of each response's cell (:mod:`tinyworld.audit.wrapper`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from tinyworld.audit.effects import CHUNK
from tinyworld.reward_model import RewardModel
from tinyworld.sampling import score
from tinyworld.vocab import N_SYLLABLES, RESPONSE_LEN, SYLLABLE_ID


def cell_of(tokens: list, a, b) -> tuple[int, int, int]:
    """The cell ``(n_a, n_b, adjacent a b)`` of one response (syllable names or ids)."""
    adjacent = sum(1 for x, y in zip(tokens, tokens[1:], strict=False) if x == a and y == b)
    return tokens.count(a), tokens.count(b), adjacent


def cell_key(cell: tuple[int, int, int]) -> str:
    return " ".join(str(c) for c in cell)


def patterns(a: int, b: int) -> tuple[torch.Tensor, list[tuple[int, int, int]]]:
    """Every pattern (8 positions, -1 where the response is left) and its cell: 3^8 of them, or
    2^8 when ``a == b``."""
    choices = (-1, a) if a == b else (-1, a, b)
    rows = list(itertools.product(choices, repeat=RESPONSE_LEN))
    cells = [cell_of(list(r), a, b) for r in rows]
    return torch.tensor(rows), cells


@dataclass
class Complex:
    """Per cell (key ``"n_a n_b adjacent"``): the excess, its SE and the draws."""

    excess: dict[str, float]
    se: dict[str, float]
    draws: int

    def as_dict(self) -> dict:
        return {
            "draws_per_cell": self.draws,
            "cells": {
                k: [round(self.excess[k], 6), round(self.se[k], 6)] for k in sorted(self.excess)
            },
        }


def rm_calls(a_is_b: bool, draws: int) -> int:
    """Reward-model evaluations of one pair's complex (two per draw)."""
    a, b = (0, 0) if a_is_b else (0, 1)
    return 2 * draws * len(set(patterns(a, b)[1]))


def pair_complex(
    rm: RewardModel,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    a: int,
    b: int,
    draws: int,
    gen: torch.Generator,
) -> Complex:
    """The cell excesses of the pair ``a b`` over reference ``responses`` (with their
    ``prompts``), ``draws`` per cell."""
    table, cells = patterns(a, b)
    by_cell: dict[tuple[int, int, int], list[int]] = {}
    for i, cell in enumerate(cells):
        by_cell.setdefault(cell, []).append(i)
    keys = sorted(by_cell)
    pick = torch.cat([
        torch.tensor(by_cell[k])[torch.randint(len(by_cell[k]), (draws,), generator=gen)]
        for k in keys
    ])  # fmt: skip
    context = torch.randint(len(responses), (len(pick),), generator=gen)
    y0 = responses[context].clone()
    # The response's own a and b are replaced by syllables drawn from the other positions of
    # the reference responses (so y0 stays like them), and the cell is the pattern's.
    others = responses[(responses != a) & (responses != b)]
    if not len(others):
        others = torch.tensor([s for s in range(N_SYLLABLES) if s not in (a, b)])
    held = (y0 == a) | (y0 == b)
    y0 = torch.where(held, others[torch.randint(len(others), y0.shape, generator=gen)], y0)
    pattern = table[pick]
    y1 = torch.where(pattern >= 0, pattern, y0)
    p = prompts[context]
    diff = (score(rm, p, y1, CHUNK) - score(rm, p, y0, CHUNK)).double().reshape(len(keys), draws)
    mean, sd = diff.mean(1), diff.std(1)
    at = {k: i for i, k in enumerate(keys)}
    r_a = mean[at[(1, 1, 0)]] if a == b else mean[at[(1, 0, 0)]]
    r_b = 0.0 if a == b else mean[at[(0, 1, 0)]]
    var = (sd / math.sqrt(draws)) ** 2
    var_a = var[at[(1, 1, 0)]] if a == b else var[at[(1, 0, 0)]]
    var_b = 0.0 if a == b else var[at[(0, 1, 0)]]
    excess, se = {}, {}
    for k in keys:
        n_a, n_b = k[0], 0 if a == b else k[1]
        single = (n_a, n_b) in ((1, 0), (0, 1)) and k[2] == 0
        if single or not sum(k):  # 0 by construction
            excess[cell_key(k)], se[cell_key(k)] = 0.0, 0.0
            continue
        excess[cell_key(k)] = float(mean[at[k]] - n_a * r_a - n_b * r_b)
        se[cell_key(k)] = float(torch.sqrt(var[at[k]] + n_a**2 * var_a + n_b**2 * var_b))
    return Complex(excess, se, draws)


def measure_complexes(
    rows: list[dict],
    rm: RewardModel,
    prompts: dict[str, torch.Tensor],
    responses: dict[str, torch.Tensor],
    draws: int,
    seed: int,
) -> None:
    """Add ``complex`` (:meth:`Complex.as_dict`) to every flagged pair of ``rows``, measured on
    its family's reference ``responses`` and ``prompts``."""
    for row in rows:
        if row["kind"] != "pair" or not row["flagged"] or row["family"] not in responses:
            continue
        first, second = (SYLLABLE_ID[s] for s in row["feature"].split(" "))
        gen = torch.Generator().manual_seed(seed * 7919 + first * N_SYLLABLES + second)
        fam = row["family"]
        row["complex"] = pair_complex(
            rm, prompts[fam], responses[fam], first, second, draws, gen
        ).as_dict()
