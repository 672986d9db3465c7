"""The contract every scorer keeps: (prompt, response) pairs in, one float each out, in batches."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable

from rate.errors import DataFileError, RateError

TextsDone = Callable[[int], None]  # told how many texts were just scored (for progress bars)


class BadTextError(DataFileError):
    """A scorer cannot read one of the texts it was given: the ``position``-th (prompt,
    response) pair; the stage turns it into a message naming the file, example and
    completion."""

    def __init__(self, position: int, part: str, reason: str) -> None:
        super().__init__(f"{part} {position}: {reason}")
        self.position, self.part, self.reason = position, part, reason


class Scorer(ABC):
    name: str = "scorer"
    batch_size: int = 64  # texts per forward pass, where the backend batches
    # Texts longer than the model's limit that were cut (0 for scorers without a limit).
    truncated: int = 0

    @abstractmethod
    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        """One score per (prompt, response) pair, in order; ``on_texts`` (if given) is told
        how many texts are done as batches finish."""

    def count_truncated(self, prompts: list[str], responses: list[str]) -> int:
        """How many of these pairs exceed the model's limit, without scoring them (for the texts
        a resumed run scored before); 0 for scorers without a limit."""
        return 0

    def describe(self) -> dict:
        return {"backend": self.name}


def checked_scores(scorer: Scorer, n: int, scores: object, first_key: str) -> list[float]:
    """A backend's scores, validated: n finite floats."""
    if not hasattr(scores, "__len__") or len(scores) != n:
        raise RateError(f"scorer {scorer.name!r} returned a wrong number of scores for {n} texts")
    out = [float(s) for s in scores]
    bad = [i for i, s in enumerate(out) if not math.isfinite(s)]
    if bad:
        raise RateError(
            f"scorer {scorer.name!r} returned {len(bad)} non-finite score(s) in the batch "
            f"starting at example {first_key}; check the model (dtype overflow?) and the texts"
        )
    return out
