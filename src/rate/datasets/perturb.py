"""Perturbations of the original texts before rewriting, such as the reference's typos.

``typos``: in each word of at least three letters, with probability ``rate``, two adjacent
letters are swapped; never the first letter, so the word's first letter (and W rules that read
it, like "starts with a vowel") stays. Seeded by the run seed and the example's key, so a rerun
makes the same typos.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from rate.datasets.sources import stable_seed
from rate.errors import ConfigError

_WORD = re.compile(r"[A-Za-z]{3,}")


@dataclass
class Typos:
    rate: float  # the share of eligible words that get a typo
    apply_to: str = "w=1"  # w=1, w=0 or all

    def validate(self, where: str) -> None:
        if not 0 < self.rate <= 1:
            raise ConfigError(f"{where}: key 'perturb.rate' must be in (0, 1]")
        if self.apply_to not in ("w=1", "w=0", "all"):
            raise ConfigError(f"{where}: key 'perturb.apply_to' must be w=1, w=0 or all")

    def applies(self, w: bool) -> bool:
        return self.apply_to == "all" or (self.apply_to == "w=1") == w

    def __call__(self, text: str, key: str, seed: int) -> tuple[str, int]:
        """(the text with typos, how many words got one)."""
        rng = random.Random(stable_seed("typos", seed, key))
        count = 0

        def swap(m: re.Match) -> str:
            nonlocal count
            word = m.group(0)
            if rng.random() >= self.rate:
                return word
            i = rng.randrange(1, len(word) - 1)  # letters i and i+1, never the first
            if word[i] == word[i + 1]:
                return word
            count += 1
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

        return _WORD.sub(swap, text), count


def _kinds():
    from rate.templates import Kind

    return {"typos": Kind(Typos, lambda o: o, "adjacent letters swapped in a share of words")}


PERTURBATIONS = _kinds()
