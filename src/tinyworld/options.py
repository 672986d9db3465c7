"""The options of the tiny world's template parts (its source, W rule, rewriter and scorers),
as parsed from YAML; light, so that validating a template loads no torch. The live parts are
built from them (:mod:`tinyworld.plugin`).

Where the world is: a part's ``world`` option (a path), else the ``RATE_WORLD`` setting (the
environment or .env), else PROJECT_DIR/tinyrlhf/world.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rate.errors import ConfigError
from rate.registry import Part
from rate.schema import Bound, opt
from rate.settings import project_dir
from tinyworld.vocab import FAMILIES, SYLLABLES

WORLD_SETTING = "RATE_WORLD"


def world_dir(option: str | None = None) -> Path:
    """The world a part reads: its ``world`` option, else RATE_WORLD, else the default."""
    value = option or os.environ.get(WORLD_SETTING, "").strip()
    if value:
        return Path(os.path.expandvars(value)).expanduser().absolute()
    return project_dir() / "tinyrlhf" / "world"


@contextmanager
def using_world(world: Path | str | None) -> Iterator[None]:
    """Within the block, parts without a ``world`` option read ``world`` (None: unchanged):
    how the world's commands and studies point the pipeline's stages at a world."""
    if world is None:
        yield
        return
    before = os.environ.get(WORLD_SETTING)
    os.environ[WORLD_SETTING] = str(Path(world).expanduser().absolute())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(WORLD_SETTING, None)
        else:
            os.environ[WORLD_SETTING] = before


def _chunk_memory(chunk: int) -> str:
    return f"each round would sample {chunk:,} responses at once"


@dataclass
class TinyWorldSource(Part):
    """Responses sampled from the world's policies for fresh prompts."""

    # Checkpoint folders relative to the world (e.g. policy, runs/default-s800/checkpoint),
    # each with its share of the drawn examples.
    policies: dict[str, float]
    families: list[str] = field(default_factory=list)  # empty: all six
    temperature: float = opt(
        1.0, help="sampling temperature", bound=Bound(0, strict=True, high=1000)
    )
    chunk: int = opt(
        4096, help="prompts drawn per round", bound=Bound(1, high=10**6, cost=_chunk_memory)
    )
    max_rounds: int = opt(
        100, help="give up if W is defined this rarely", bound=Bound(1, high=10**6)
    )
    world: str | None = None  # null: RATE_WORLD, else PROJECT_DIR/tinyrlhf/world

    def validate(self, where: str) -> None:
        # A NaN fails every comparison, so a share must be shown to be positive and finite.
        if not self.policies or not all(0 < s < math.inf for s in self.policies.values()):
            raise ConfigError(f"{where}: key 'source.policies' needs positive shares")
        bad = [f for f in self.families if f not in FAMILIES]
        if bad:
            raise ConfigError(
                f"{where}: key 'source.families': unknown {bad}; valid: {', '.join(FAMILIES)}"
            )

    def example_fields(self) -> frozenset[str]:
        return frozenset({"family", "attrs", "policy"})

    def inputs(self) -> dict[str, str]:
        return {"world": str(world_dir(self.world))}


@dataclass
class TokenSwapOptions(Part):
    """Tiny world: W=1 when the response holds ``token`` and not ``counterpart``, W=0 when it
    holds ``counterpart`` and not ``token``; undefined otherwise. Rewriting swaps the two."""

    token: str
    counterpart: str

    def validate(self, where: str) -> None:
        for key in ("token", "counterpart"):
            if getattr(self, key) not in SYLLABLES:
                raise ConfigError(
                    f"{where}: key 'w_classifier.{key}': {getattr(self, key)!r} is not a "
                    f"syllable of the tiny world ({' '.join(SYLLABLES)})"
                )
        if self.token == self.counterpart:
            raise ConfigError(f"{where}: w_classifier.token and counterpart must differ")


@dataclass
class TinyRewriterOptions(Part):
    style_map: dict[str, str] = field(default_factory=dict)
    edit_rate: float = opt(
        0.0,
        help="each other position is replaced with this probability by a syllable the style "
        "map leaves alone (unless perfect)",
        bound=Bound(0, high=1, below=True, why="a probability"),
    )
    perfect: bool = False

    def validate(self, where: str) -> None:
        bad = [t for kv in self.style_map.items() for t in kv if t not in SYLLABLES]
        if bad:
            raise ConfigError(f"{where}: key 'rewriter.style_map': unknown syllables {bad}")
        loops = sorted(set(self.style_map) & set(self.style_map.values()))
        if loops:
            # A target that is also a source would make the map not idempotent.
            raise ConfigError(
                f"{where}: key 'rewriter.style_map': {loops} are both mapped and mapped to; "
                "the style map must be idempotent"
            )

    def check_template(self, template, where: str) -> None:
        kind, rule = template.parts["w_classifier"]
        if kind != "token_swap":
            raise ConfigError(
                f"{where}: the tinyrlhf rewriter sets W by swapping tokens; use "
                "w_classifier.rule: token_swap"
            )
        touched = {rule.token, rule.counterpart} & (
            set(self.style_map) | set(self.style_map.values())
        )
        if touched:
            raise ConfigError(
                f"{where}: key 'rewriter.style_map' must not touch the W tokens {sorted(touched)}"
            )


@dataclass
class TinyRMOptions(Part):
    model: str = "reward_model"  # folder of the RM, relative to the world (or absolute)
    world: str | None = None  # null: RATE_WORLD, else PROJECT_DIR/tinyrlhf/world

    def inputs(self) -> dict[str, str]:
        return {"world": str(world_dir(self.world))}


@dataclass
class OracleOptions(Part):
    world: str | None = None  # null: RATE_WORLD, else PROJECT_DIR/tinyrlhf/world

    def inputs(self) -> dict[str, str]:
        return {"world": str(world_dir(self.world))}
