"""The typo perturbations: ours (per word, never the first letter) and the reference's
add_typos, which ours must reproduce exactly given the same random draws."""

from __future__ import annotations

import random

import pytest

from rate.datasets.perturb import Typos
from rate.seeding import stable_seed

REVIEW = (
    "An amazing film, well acted and   beautifully shot. The plot never drags; every scene "
    "earns its place.\nI would watch it again, and again, with friends or alone."
)


def reference_add_typos(text, typo_percentage=30):
    """toddnief/RATE src/rate/dataset_templates/imdb_vowels.py add_typos, verbatim but for its
    print."""
    words = text.split()  # Split the text into words
    num_words = len(words)
    num_typos = int(num_words * typo_percentage / 100)  # Calculate number of words to affect
    if num_typos == 0:
        return text

    # Randomly select words to introduce typos
    words_to_typo = random.sample(range(num_words), num_typos)

    for idx in words_to_typo:
        word = words[idx]
        if len(word) > 2:  # Only add typos to words with more than two characters
            typo_index = random.randint(0, len(word) - 2)  # Select random index to swap
            if word[typo_index].isalpha() and word[typo_index + 1].isalpha():
                # Swap adjacent characters
                word_as_list = list(word)
                word_as_list[typo_index], word_as_list[typo_index + 1] = (
                    word_as_list[typo_index + 1],
                    word_as_list[typo_index],
                )
                words[idx] = "".join(word_as_list)

    return " ".join(words)


@pytest.mark.parametrize("percent", [0, 5, 10, 15, 20, 25, 30, 100])
@pytest.mark.parametrize("key", ["row0", "row17", "q3-a1"])
def test_reference_method_is_the_references_add_typos(percent, key):
    typos = Typos(rate=percent / 100, method="reference")
    ours, _ = typos(REVIEW, key, 7)
    random.seed(stable_seed("typos", 7, key))  # the same draws, from the global generator
    assert ours == reference_add_typos(REVIEW, percent)


def test_reference_method_counts_and_rejoins():
    typos = Typos(rate=0.3, method="reference")
    out, count = typos(REVIEW, "k", 0)
    words = REVIEW.split()
    assert out.split() != words and len(out.split()) == len(words)
    assert out == " ".join(out.split())  # re-joined with single spaces
    changed = sum(a != b for a, b in zip(out.split(), words, strict=True))
    assert 0 < changed <= count <= int(len(words) * 0.3)
    assert Typos(rate=0.01, method="reference")(REVIEW, "k", 0) == (REVIEW, 0)  # none drawn


def test_per_word_method_never_moves_a_first_letter():
    typos = Typos(rate=1.0)
    out, count = typos(REVIEW, "k", 0)
    assert count > 0 and out != REVIEW
    for a, b in zip(out.split(), REVIEW.split(), strict=True):
        assert a[0] == b[0]
    assert typos(REVIEW, "k", 0) == (out, count)  # seeded: the same typos again
