"""Ground truth of the world: the hidden rule and the exact expected expert quality.

Only the labelling code (:mod:`tinyworld.labels`), the world builder and the truth
evaluation may import this module; ``tests/tinyrlhf/test_truth_isolation.py`` enforces it.
"""

from __future__ import annotations

import numpy as np
import torch

from tinyworld.vocab import (
    ATTR_TOKENS,
    FAMILIES,
    N_ATTR_VALUES,
    N_ATTRS,
    N_SYLLABLES,
    RESPONSE_LEN,
    SYLLABLES,
    TOKEN_ID,
)
from tinyworld.worldconfig import WorldConfig

_FAMILY0 = TOKEN_ID[FAMILIES[0]]
_ATTR0 = TOKEN_ID[ATTR_TOKENS[0]]


class Oracle:
    """The hidden rule: at position p of a family-f response, a syllable is correct when it is in
    a set of ``k`` syllables chosen by (f, p, the group of the value of one prompt attribute).
    Filler syllables (``never_correct``) are in no set: experts never count them."""

    def __init__(
        self,
        seed: int,
        correct_per_position: int,
        attr_groups: int,
        never_correct: tuple[str, ...] = (),
    ) -> None:
        rng = np.random.default_rng([seed, 0x5EC2E7])
        candidates = np.array([i for i, s in enumerate(SYLLABLES) if s not in set(never_correct)])
        n_fam = len(FAMILIES)
        # Which of the four attributes decides position p in family f.
        self.attr_index = torch.tensor(rng.integers(0, N_ATTRS, size=(n_fam, RESPONSE_LEN)))
        # The deciding attribute's values fall into ``attr_groups`` groups with one correct set each.
        group_sets = np.zeros((n_fam, RESPONSE_LEN, attr_groups, N_SYLLABLES), dtype=bool)
        table = np.zeros((n_fam, RESPONSE_LEN, N_ATTR_VALUES, N_SYLLABLES), dtype=bool)
        for f in range(n_fam):
            for p in range(RESPONSE_LEN):
                for g in range(attr_groups):
                    chosen = rng.choice(candidates, correct_per_position, replace=False)
                    group_sets[f, p, g, chosen] = True
                group_of_value = rng.permutation(np.arange(N_ATTR_VALUES) % attr_groups)
                table[f, p] = group_sets[f, p, group_of_value]
        self.table = torch.tensor(table)  # (F, P, V, S)

    @classmethod
    def from_world(cls, config: WorldConfig) -> Oracle:
        rule = config.rule
        return cls(
            config.seed, rule.correct_per_position, rule.attr_groups, tuple(rule.never_correct)
        )

    def correct_sets(self, prompts: torch.Tensor) -> torch.Tensor:
        """Boolean mask of correct syllables per position, shape (B, RESPONSE_LEN, N_SYLLABLES)."""
        fam = prompts[:, 0] - _FAMILY0  # (B,)
        attrs = prompts[:, 1 : 1 + N_ATTRS] - _ATTR0  # (B, 4)
        which = self.attr_index[fam]  # (B, P)
        values = attrs.gather(1, which)  # (B, P)
        pos = torch.arange(RESPONSE_LEN).expand_as(values)
        return self.table[fam[:, None], pos, values]  # (B, P, S)

    def correct(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Which positions of each response are correct, shape (B, RESPONSE_LEN)."""
        sets = self.correct_sets(prompts)
        return sets.gather(2, responses.unsqueeze(-1)).squeeze(-1)

    def quality(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Expected expert label of each response: the share of correct positions, shape (B,)."""
        return self.correct(prompts, responses).float().mean(-1)
