"""Scorers of the tiny world: its reward model (the proxy) and the oracle (true quality).

The oracle scorer is the only pipeline module that reads the world's truth; it exists so that
effects on true quality can be estimated beside effects on the reward model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rate.score.base import Scorer
from rate.tinyrlhf.data import require_world
from rate.tinyrlhf.text import parse_prompt, parse_response


def _encode(prompts: list[str], responses: list[str]):
    from rate.tinyrlhf.vocab import encode_prompts, encode_responses

    records = [parse_prompt(p, f"prompt {i}") for i, p in enumerate(prompts)]
    tokens = [parse_response(r, f"response {i}") for i, r in enumerate(responses)]
    return encode_prompts(records), encode_responses(tokens)


@dataclass
class TinyRMOptions:
    model: str = "reward_model"  # folder of the RM, relative to the world (or absolute)


class TinyRMScorer(Scorer):
    name = "tinyrlhf_rm"

    def __init__(self, options: TinyRMOptions, world: Path) -> None:
        from rate.tinyrlhf.models import load_reward_model

        path = Path(options.model)
        self.path = path if path.is_absolute() else require_world(world) / path
        self.rm = load_reward_model(self.path)

    def score(self, prompts: list[str], responses: list[str]) -> list[float]:
        from rate.tinyrlhf.sampling import score

        p, r = _encode(prompts, responses)
        return score(self.rm, p, r).tolist()

    def describe(self) -> dict:
        return {"backend": self.name, "model": str(self.path)}


@dataclass
class OracleOptions:
    pass


class OracleScorer(Scorer):
    """True quality: the oracle's expected expert label (share of correct positions)."""

    name = "tinyrlhf_oracle"

    def __init__(self, options: OracleOptions, world: Path) -> None:
        from rate.tinyrlhf.evaluate import load_oracle

        self.world = require_world(world)
        self.oracle, _ = load_oracle(self.world)

    def score(self, prompts: list[str], responses: list[str]) -> list[float]:
        p, r = _encode(prompts, responses)
        return self.oracle.quality(p, r).tolist()

    def describe(self) -> dict:
        return {"backend": self.name, "world": str(self.world)}
