"""Scorers of the tiny world: its reward model (the proxy) and the oracle (true quality).

The oracle scorer is the only pipeline module that reads the world's truth; it exists so that
effects on true quality can be estimated beside effects on the reward model.
"""

from __future__ import annotations

from pathlib import Path

from rate.score.base import Scorer, TextsDone
from rate.score.options import OracleOptions, TinyRMOptions
from rate.tinyrlhf.data import require_world
from rate.tinyrlhf.evaluate import load_oracle
from rate.tinyrlhf.models import load_reward_model
from rate.tinyrlhf.sampling import score
from rate.tinyrlhf.text import parse_prompt, parse_response
from rate.tinyrlhf.vocab import encode_prompts, encode_responses


def _encode(prompts: list[str], responses: list[str]):
    records = [parse_prompt(p, f"prompt {i}") for i, p in enumerate(prompts)]
    tokens = [parse_response(r, f"response {i}") for i, r in enumerate(responses)]
    return encode_prompts(records), encode_responses(tokens)


class TinyRMScorer(Scorer):
    name = "tinyrlhf_rm"

    def __init__(self, options: TinyRMOptions, world: Path, batch_size: int = 4096) -> None:
        path = Path(options.model)
        self.path = path if path.is_absolute() else require_world(world) / path
        self.rm = load_reward_model(self.path)

    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        p, r = _encode(prompts, responses)
        return score(self.rm, p, r).tolist()

    def describe(self) -> dict:
        return {"backend": self.name, "model": str(self.path)}


class OracleScorer(Scorer):
    """True quality: the oracle's expected expert label (share of correct positions)."""

    name = "tinyrlhf_oracle"

    def __init__(self, options: OracleOptions, world: Path, batch_size: int = 4096) -> None:
        self.world = require_world(world)
        self.oracle, _ = load_oracle(self.world)

    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        p, r = _encode(prompts, responses)
        return self.oracle.quality(p, r).tolist()

    def describe(self) -> dict:
        return {"backend": self.name, "world": str(self.world)}
