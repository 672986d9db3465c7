"""The tiny world as a source of examples for create_dataset (responses sampled from its
policies for fresh prompts, drawn until enough have W), and its W rule: a token against its
counterpart."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import torch

from rate.datasets.base import Example, ExampleStream, SourceContext
from rate.datasets.w_classifiers import WRule
from rate.errors import TemplateError
from rate.seeding import stable_seed
from tinyworld.data import pool_from_records, require_world
from tinyworld.models import load_policy
from tinyworld.options import TinyWorldSource, TokenSwapOptions, world_dir
from tinyworld.prompts import make_prompts
from tinyworld.sampling import sample
from tinyworld.text import prompt_text, response_text
from tinyworld.vocab import FAMILIES, decode_responses

log = logging.getLogger(__name__)


class TinyWorldStream(ExampleStream):
    finite = False

    def __init__(self, spec: TinyWorldSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.world = require_world(world_dir(spec.world))
        self.names = list(spec.policies)
        self.policies = []
        for rel in self.names:
            path = self.world / rel
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


class TokenSwap(TokenSwapOptions, WRule):
    def __call__(self, ex: Example) -> bool | None:
        return self._text(ex.text)

    def _text(self, text: str) -> bool | None:
        toks = text.split()
        has_t, has_c = self.token in toks, self.counterpart in toks
        if has_t != has_c:
            return has_t
        return None

    def classify_texts(self, texts: list[str]) -> list[bool | None]:
        return [self._text(t) for t in texts]
