"""The ``python`` scorer: a user's own function as the reward model (a judge, an API, a rule).

The template names it as ``function: "module:function"``; it is called once per batch of
``batch_size`` texts as ``function(prompts, texts)`` and returns one float per text (a list,
a tuple, a NumPy array). `rate validate` finds and checks it without running it
(:mod:`rate.hooks`); here it is imported and called, and what it raises or returns wrong is
one line naming the function, the batch's first example and, for an exception, the user's
file:line.
"""

from __future__ import annotations

from pathlib import Path

from rate.fs import file_digest
from rate.hooks import hook_failure, module_file, resolve_function
from rate.score.base import BadBatchError, Scorer, TextsDone, score_fault
from rate.score.options import PythonScorerOptions

LABEL = "scoring function"
ON = "the batch starting at example {example}"  # the stage names the example


class PythonScorer(Scorer):
    name = "python"

    def __init__(self, options: PythonScorerOptions, batch_size: int = 64) -> None:
        self.options, self.batch_size = options, batch_size
        self.function = resolve_function(options.function, LABEL)
        self.truncated = 0

    def _texts(self, prompts: list[str], responses: list[str]) -> list[str]:
        if self.options.input == "concat":
            return [f"{p}{r}" for p, r in zip(prompts, responses, strict=True)]
        return responses

    def _call(self, prompts: list[str], texts: list[str], start: int) -> list[float]:
        spec = self.options.function
        try:
            raw = self.function(prompts, texts)
        except Exception as err:
            raise BadBatchError(
                start,
                f"{hook_failure(err, self.function, spec, LABEL, ON)}; fix the function, "
                "which scores every text",
            ) from None
        fault = score_fault(len(texts), raw)
        if fault is not None:
            raise BadBatchError(
                start,
                f"{LABEL} {spec!r} returned {fault} on {ON}; it must return one finite number "
                "per text, in the order of the texts",
            )
        return [float(s) for s in raw]

    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        texts = self._texts(prompts, responses)
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            stop = start + self.batch_size
            out += self._call(prompts[start:stop], texts[start:stop], start)
            if on_texts is not None:
                on_texts(len(texts[start:stop]))
        return out

    def describe(self) -> dict:
        path = module_file(self.options.function)
        return {
            "backend": self.name,
            "function": self.options.function,
            # The module's content: a run resumed after the function was edited starts over.
            "file": path,
            "file_digest": file_digest(Path(path)) if path else None,
            "input": self.options.input,
        }
