"""Perturbations of the original texts before rewriting, such as the reference's typos.

``typos``, two methods (``method``):

- ``per_word``: in each word of at least three letters, with probability ``rate``, two adjacent
  letters are swapped; never the first letter, so the word's first letter (and W rules that
  read it, like "starts with a vowel") stays;
- ``reference``: the reference pipeline's ``add_typos``: ``int(rate x words)`` of the text's
  whitespace-separated words are drawn, and in each drawn word longer than two characters a
  random adjacent pair (the first letter included) is swapped when both are letters; the words
  are re-joined with single spaces (a text with no word drawn is left as it is).

Seeded by the run seed and the example's key, so a rerun makes the same typos (the reference
drew from Python's unseeded global generator).
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

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
        if self.method == "reference":
            return self._reference(text, rng)
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

    def _reference(self, text: str, rng: random.Random) -> tuple[str, int]:
        words = text.split()
        # int(n * percent / 100) as the reference computes it, exactly (0.3 is 3/10 here).
        k = int(len(words) * Fraction(repr(self.rate)))
        if k == 0:
            return text, 0
        count = 0
        for idx in rng.sample(range(len(words)), k):
            word = words[idx]
            if len(word) > 2:
                i = rng.randint(0, len(word) - 2)
                if word[i].isalpha() and word[i + 1].isalpha():
                    words[idx] = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
                    count += 1
        return " ".join(words), count
