"""The contract every scorer keeps: (prompt, response) pairs in, one float each out, in batches."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable

from rate.errors import DataFileError, RateError, TemplateError

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


class BadBatchError(TemplateError):
    """A scorer's user code failed on the batch that starts at the ``position``-th (prompt,
    response) pair; the stage names that pair's example where ``message`` says
    ``{example}``."""

    def __init__(self, position: int, message: str) -> None:
        self.position, self.message = position, message
        super().__init__(self.naming(f"#{position} of those scored together"))

    def naming(self, example: str) -> str:
        return self.message.replace("{example}", example)


def score_fault(n: int, scores: object) -> str | None:
    """What is wrong with a batch's scores, said after "returned" (None: they are n finite
    numbers)."""
    if isinstance(scores, (str, bytes, dict)) or not hasattr(scores, "__len__"):
        return f"a {type(scores).__name__}, not a sequence of {n} numbers, for {n} texts"
    if len(scores) != n:
        return f"{len(scores)} scores for {n} texts"
    values = []
    for i, s in enumerate(scores):
        try:
            values.append(float(s))
        except (TypeError, ValueError):
            return f"a score that is not a number ({repr(s)[:60]}, the batch's text {i})"
    bad = [i for i, v in enumerate(values) if not math.isfinite(v)]
    if bad:
        return f"{len(bad)} non-finite score(s) (the first: {values[bad[0]]}, for the batch's text {bad[0]})"
    return None


def checked_scores(
    scorer: Scorer,
    n: int,
    scores: object,
    first_key: str,
    fix: str = "check the model (dtype overflow?) and the texts",
) -> list[float]:
    """A backend's scores, validated: n finite floats; else one line naming the scorer, the
    batch's first example and ``fix``."""
    fault = score_fault(n, scores)
    if fault is not None:
        raise RateError(
            f"scorer {scorer.name!r} returned {fault} in the batch starting at example "
            f"{first_key}; {fix}"
        )
    return [float(s) for s in scores]
