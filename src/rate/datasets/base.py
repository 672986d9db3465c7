"""The types every source of examples shares: an example, what a source is given, a source."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Example:
    """One original completion with the prompt the reward model sees."""

    key: str  # stable across runs: identifies the example in outputs and rewrite requests
    text: str
    prompt: str
    fields: dict[str, Any] = field(default_factory=dict)  # kept in the outputs' metadata


@dataclass
class SourceContext:
    seed: int
    template_path: str


class ExampleStream(ABC):
    """A live source: yields chunks of examples. Finite sources are read whole (and shuffled
    with the run's seed); infinite ones (a simulator) are drawn until enough have W."""

    finite: bool = True

    @abstractmethod
    def chunks(self) -> Iterator[list[Example]]:
        """The examples, a chunk at a time."""
