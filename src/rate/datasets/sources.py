"""Sources of examples for create_dataset: the tiny world's policies, or a local JSONL file.

A source yields :class:`Example` chunks; create_dataset classifies W on each and keeps exactly
n with W defined. Sources that can draw without end (the tiny world) are streamed; finite ones
are read whole and shuffled with the run's seed, so a file sorted by label still gives both W
values in its first n.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from rate.datasets.base import Example, ExampleStream, SourceContext
from rate.datasets.options import JsonlSource, TinyWorldSource
from rate.errors import DataFileError, TemplateError
from rate.io import read_jsonl
from rate.seeding import stable_seed
from rate.tinyrlhf.data import pool_from_records, require_world
from rate.tinyrlhf.models import load_policy
from rate.tinyrlhf.prompts import make_prompts
from rate.tinyrlhf.sampling import sample
from rate.tinyrlhf.text import prompt_text, response_text
from rate.tinyrlhf.vocab import FAMILIES, decode_responses

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# The tiny world: responses sampled from its policies


class TinyWorldStream(ExampleStream):
    finite = False

    def __init__(self, spec: TinyWorldSource, ctx: SourceContext) -> None:
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


class JsonlStream(ExampleStream):
    finite = True

    def __init__(self, spec: JsonlSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx
        p = Path(spec.path).expanduser()
        self.path = p if p.is_absolute() else Path(ctx.template_path).parent / p

    def chunks(self) -> Iterator[list[Example]]:
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
