"""Perturbations of the original texts before rewriting, such as the reference's typos.

``typos``: in each word of at least three letters, with probability ``rate``, two adjacent
letters are swapped; never the first letter, so the word's first letter (and W rules that read
it, like "starts with a vowel") stays. Seeded by the run seed and the example's key, so a rerun
makes the same typos.
"""

from __future__ import annotations

import random
import re

from rate.datasets.options import TyposOptions
from rate.registry import LivePart
from rate.seeding import stable_seed

_WORD = re.compile(r"[A-Za-z]{3,}")


class Typos(TyposOptions, LivePart):
    """The live perturbation: its options plus the edit itself."""

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
