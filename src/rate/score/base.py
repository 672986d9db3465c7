"""The contract every scorer keeps: (prompt, response) pairs in, one float each out, in batches."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable

from rate.errors import RateError


class Scorer(ABC):
    name: str = "scorer"
    # Texts longer than the model's limit that were cut (0 for scorers without a limit).
    truncated: int = 0
    # Set by the stage: called with a count of texts as they are scored (for the progress
    # bar); backends that score in one go may leave it uncalled.
    on_texts: Callable[[int], None] | None = None

    @abstractmethod
    def score(self, prompts: list[str], responses: list[str]) -> list[float]:
        """One score per (prompt, response) pair, in order."""

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
