"""Labelling: expert demonstrations, expert labels and crowd labels with their shortcuts.

This is the only module that reads the label-source shortcuts of the world config.
"""

from __future__ import annotations

import torch

from tinyworld.oracle import Oracle
from tinyworld.vocab import FAMILIES, N_SYLLABLES, RESPONSE_LEN, SYLLABLE_ID, TOKEN_ID
from tinyworld.worldconfig import Habit, LabelConfig

_FAMILY0 = TOKEN_ID[FAMILIES[0]]


def demonstrations(
    oracle: Oracle,
    prompts: torch.Tensor,
    correct_rate: float,
    generator: torch.Generator,
    habits: list[Habit] = (),
    habit_generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Demonstrator responses: each position is a correct syllable with prob ``correct_rate``,
    otherwise a syllable drawn uniformly (which may be correct by chance); then each habit's
    pair is written over a random adjacent position of ``rate`` of its family's responses
    (drawn from ``habit_generator``, so habits leave the rest of a world's draws alone).
    Shape (B, 8)."""
    sets = oracle.correct_sets(prompts).float()  # (B, P, S)
    pick_correct = torch.multinomial(sets.view(-1, N_SYLLABLES), 1, generator=generator).view(
        -1, RESPONSE_LEN
    )
    uniform = torch.randint(0, N_SYLLABLES, pick_correct.shape, generator=generator)
    use_correct = torch.rand(pick_correct.shape, generator=generator) < correct_rate
    out = torch.where(use_correct, pick_correct, uniform)
    fam = prompts[:, 0] - _FAMILY0
    for habit in habits:
        rows = (fam == FAMILIES.index(habit.family)).nonzero().flatten()
        rows = rows[torch.rand(len(rows), generator=habit_generator) < habit.rate]
        pos = torch.randint(0, RESPONSE_LEN - 1, (len(rows),), generator=habit_generator)
        out[rows, pos] = SYLLABLE_ID[habit.pair[0]]
        out[rows, pos + 1] = SYLLABLE_ID[habit.pair[1]]
    return out


def expert_labels(
    oracle: Oracle,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    noise: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """Expert labels: true quality plus small Gaussian noise, shape (B,)."""
    q = oracle.quality(prompts, responses)
    return q + noise * torch.randn(q.shape, generator=generator)


def shortcut_bonus(
    config: LabelConfig, prompts: torch.Tensor, responses: torch.Tensor
) -> torch.Tensor:
    """What the annotation vendor adds on top of quality: per-token bonuses and pair premiums."""
    fam = prompts[:, 0] - _FAMILY0
    bonus = torch.zeros(len(prompts))
    for fam_name, table in config.token_bonus.items():
        in_family = fam == FAMILIES.index(fam_name)
        for tok, per_occurrence in table.items():
            count = (responses == SYLLABLE_ID[tok]).sum(-1).float()
            bonus += in_family * per_occurrence * count
    for fam_name, premiums in config.pair_premium.items():
        in_family = fam == FAMILIES.index(fam_name)
        for p in premiums:
            first, second = SYLLABLE_ID[p.pair[0]], SYLLABLE_ID[p.pair[1]]
            adjacent = ((responses[:, :-1] == first) & (responses[:, 1:] == second)).sum(-1).float()
            bonus += in_family * p.bonus * adjacent
    return bonus


def crowd_labels(
    oracle: Oracle,
    config: LabelConfig,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """Crowd labels: quality + noisier Gaussian noise + the vendor's shortcuts, shape (B,)."""
    q = oracle.quality(prompts, responses)
    noise = config.crowd_noise * torch.randn(q.shape, generator=generator)
    return q + noise + shortcut_bonus(config, prompts, responses)
