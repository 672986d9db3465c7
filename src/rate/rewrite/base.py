"""The contract every rewriter keeps: (text, target W, instruction) in, text out, in batches."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from rate.errors import ConfigError, RateError


@dataclass(frozen=True)
class RewriteRequest:
    key: str  # stable id of (example, pass): seeds local randomness, names API requests
    text: str
    target_w: bool  # the W value the output must have
    instruction: str  # the template's rewrite prompt, filled in for this text and target


class Rewriter(ABC):
    """A rewriting backend. Outputs come back in the order of the requests."""

    name: str = "rewriter"
    # The Batch API wants a whole pass in one call (one set of batches, one wait); others take
    # the stage's batches of rewrites.batch_size.
    whole_pass: bool = False

    @abstractmethod
    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        """One output text per request."""

    def plan(self, requests: list[RewriteRequest], prices: dict) -> dict:
        """A dry run's estimate of what rewriting ``requests`` costs (request files written,
        no call made). Only paid API backends can plan; the others say so."""
        raise ConfigError(
            f"a dry run estimates what API rewriting costs; the {self.name!r} rewriter sends no "
            "paid requests (use rewriter.backend: openai_batch to plan a Batch API run)"
        )

    def stopped_at_limit(self, requests: list[RewriteRequest]) -> list[bool]:
        """Whether each output of the latest :meth:`rewrite` of ``requests`` stopped at a
        length limit (finish_reason 'length') and so is cut short; False where the backend
        cannot tell (its outputs are complete or it has no limit)."""
        return [False] * len(requests)

    def counterfactual(self, requests: list[RewriteRequest]) -> list[str] | None:
        """The true counterfactual of each request (W changed, nothing else), where the backend
        knows it (the tiny world's perfect mode); None for real rewriters."""
        return None

    def describe(self) -> dict:
        return {"backend": self.name}


def checked_outputs(
    rewriter: Rewriter, requests: list[RewriteRequest], outputs: object
) -> list[str]:
    """A backend's outputs, validated: one string per request."""
    if not isinstance(outputs, list) or len(outputs) != len(requests):
        got = len(outputs) if isinstance(outputs, list) else type(outputs).__name__
        raise RateError(
            f"rewriter {rewriter.name!r} returned {got} outputs for {len(requests)} requests"
        )
    for req, out in zip(requests, outputs, strict=True):
        if not isinstance(out, str):
            raise RateError(
                f"rewriter {rewriter.name!r} returned {type(out).__name__} for request "
                f"{req.key}; a rewrite must be text"
            )
    return outputs
