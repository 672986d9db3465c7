"""Scorers of the tiny world: its reward model (the proxy) and the oracle (true quality).

The oracle scorer is the only pipeline module that reads the world's truth; it exists so that
effects on true quality can be estimated beside effects on the reward model.
"""

from __future__ import annotations

from pathlib import Path

from rate.errors import DataFileError
from rate.records import text_preview
from rate.score.base import BadTextError, Scorer, TextsDone
from tinyworld.data import require_world
from tinyworld.evaluate import load_oracle
from tinyworld.models import load_reward_model
from tinyworld.options import OracleOptions, TinyRMOptions, world_dir
from tinyworld.sampling import score
from tinyworld.text import parse_prompt, parse_response
from tinyworld.vocab import RESPONSE_LEN, SYLLABLE_ID, encode_prompts, encode_responses


def _response_problem(text: str) -> str:
    parts = text.split()
    bad = [p for p in parts if p not in SYLLABLE_ID]
    if bad:
        shown = ", ".join(text_preview(b, 20) for b in bad[:5]) + (" ..." if len(bad) > 5 else "")
        return f"{len(bad)} unknown syllable(s): {shown}"
    return f"{len(parts)} syllables"


def _encode(prompts: list[str], responses: list[str]):
    records, tokens = [], []
    for i, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        # The tiny world's own parsers quote the whole text; a data file may hold a megabyte.
        try:
            records.append(parse_prompt(prompt))
        except DataFileError:
            raise BadTextError(
                i,
                "prompt",
                f"{text_preview(prompt)} is not a tiny-world prompt (a family and four values "
                "v0..v7, e.g. 'dune v1 v3 v0 v7'); score tiny-world data only with tiny-world "
                "scorers",
            ) from None
        try:
            tokens.append(parse_response(response))
        except DataFileError:
            raise BadTextError(
                i,
                "response",
                f"{text_preview(response)} is not a tiny-world response ({RESPONSE_LEN} "
                f"syllables separated by spaces; got {_response_problem(response)})",
            ) from None
    return encode_prompts(records), encode_responses(tokens)


class TinyRMScorer(Scorer):
    name = "tinyrlhf_rm"

    def __init__(self, options: TinyRMOptions, batch_size: int = 4096) -> None:
        path = Path(options.model)
        self.path = path if path.is_absolute() else require_world(world_dir(options.world)) / path
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

    def __init__(self, options: OracleOptions, batch_size: int = 4096) -> None:
        self.world = require_world(world_dir(options.world))
        self.oracle, _ = load_oracle(self.world)

    def score(
        self, prompts: list[str], responses: list[str], on_texts: TextsDone | None = None
    ) -> list[float]:
        p, r = _encode(prompts, responses)
        return self.oracle.quality(p, r).tolist()

    def describe(self) -> dict:
        return {"backend": self.name, "world": str(self.world)}
