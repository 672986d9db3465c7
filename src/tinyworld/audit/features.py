"""The candidate features of a family: each syllable, and each ordered adjacent pair.

Per family there are 24 token features and 24 x 24 = 576 pair features, 600 in all, indexed
``0..23`` (the syllable's id) and ``24 + 24 * a + b`` (the pair ``a b``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tinyworld.vocab import FAMILIES, N_SYLLABLES, SYLLABLES

N_FEATURES = N_SYLLABLES + N_SYLLABLES * N_SYLLABLES


@dataclass(frozen=True)
class Feature:
    family: str
    tokens: tuple[str, ...]  # one syllable, or an ordered pair

    @property
    def kind(self) -> str:
        return "token" if len(self.tokens) == 1 else "pair"

    @property
    def name(self) -> str:
        return " ".join(self.tokens)

    @property
    def index(self) -> int:
        """The feature's index within its family."""
        ids = [SYLLABLES.index(t) for t in self.tokens]
        return ids[0] if len(ids) == 1 else N_SYLLABLES + N_SYLLABLES * ids[0] + ids[1]


def family_features(family: str) -> list[Feature]:
    """The family's 600 features, in index order."""
    tokens = [Feature(family, (s,)) for s in SYLLABLES]
    pairs = [Feature(family, (a, b)) for a in SYLLABLES for b in SYLLABLES]
    return tokens + pairs


def all_features(families: tuple[str, ...] = FAMILIES) -> list[Feature]:
    return [f for fam in families for f in family_features(fam)]


def feature_counts(responses: torch.Tensor) -> torch.Tensor:
    """How often each feature occurs in each response: (N, 600) counts of the 24 syllables
    and of the 576 ordered adjacent pairs. ``responses`` is (N, 8) syllable ids."""
    n = responses.shape[0]
    tokens = torch.zeros(n, N_SYLLABLES)
    tokens.scatter_add_(1, responses, torch.ones_like(responses, dtype=torch.float))
    pair_ids = responses[:, :-1] * N_SYLLABLES + responses[:, 1:]  # (N, 7)
    pairs = torch.zeros(n, N_SYLLABLES * N_SYLLABLES)
    pairs.scatter_add_(1, pair_ids, torch.ones_like(pair_ids, dtype=torch.float))
    return torch.cat([tokens, pairs], dim=1)
