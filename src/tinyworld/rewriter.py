"""The tiny world's rewriter: sets W by editing tokens and, like an LLM, leaves a signature.

W is the token-swap attribute of the template (``token`` against ``counterpart``): asked for
W=0 the rewriter turns every ``token`` into ``counterpart``, asked for W=1 the reverse. Then,
unless ``perfect``, it leaves its off-target signature:

* an idempotent ``style_map`` applied everywhere (it always "corrects" some syllables into
  others, as an LLM fixes typos), and
* random off-target edits: each other position is replaced with probability ``edit_rate`` by a
  syllable drawn uniformly from those the style map leaves alone.

The perfect mode makes only the W edit: the true counterfactual. Both modes take their random
choices from streams keyed by the request, so the perfect rewrite of an example differs from its
signed rewrite by the signature alone.
"""

from __future__ import annotations

import random

from rate.rewrite.base import Rewriter, RewriteRequest
from rate.seeding import stable_seed
from tinyworld.options import TinyRewriterOptions, TokenSwapOptions
from tinyworld.text import parse_response
from tinyworld.vocab import SYLLABLES


class TinyRewriter(Rewriter):
    name = "tinyrlhf"

    def __init__(self, options: TinyRewriterOptions, rule: TokenSwapOptions, seed: int) -> None:
        self.options, self.rule, self.seed = options, rule, seed
        w_tokens = {rule.token, rule.counterpart}
        self.replacements = [
            s for s in SYLLABLES if s not in w_tokens and s not in options.style_map
        ]

    def _w_edit(self, toks: list[str], req: RewriteRequest) -> list[str]:
        src, dst = (
            (self.rule.counterpart, self.rule.token)
            if req.target_w
            else (self.rule.token, self.rule.counterpart)
        )
        if src in toks:
            return [dst if t == src else t for t in toks]
        if dst not in toks:
            # Neither token present: put the target in one position (the same in both modes).
            pos = random.Random(stable_seed("tiny-w", self.seed, req.key)).randrange(len(toks))
            toks = list(toks)
            toks[pos] = dst
        return toks

    def _one(self, req: RewriteRequest, perfect: bool) -> str:
        toks = self._w_edit(parse_response(req.text, f"rewrite request {req.key}"), req)
        if perfect:
            return " ".join(toks)
        w_tokens = (self.rule.token, self.rule.counterpart)
        toks = [self.options.style_map.get(t, t) for t in toks]
        rate = self.options.edit_rate
        if rate > 0:
            rng = random.Random(stable_seed("tiny-edit", self.seed, req.key))
            toks = [
                rng.choice(self.replacements) if t not in w_tokens and rng.random() < rate else t
                for t in toks
            ]
        return " ".join(toks)

    def rewrite(self, requests: list[RewriteRequest]) -> list[str]:
        return [self._one(r, self.options.perfect) for r in requests]

    def counterfactual(self, requests: list[RewriteRequest]) -> list[str]:
        return [self._one(r, True) for r in requests]

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "token": self.rule.token,
            "counterpart": self.rule.counterpart,
            "style_map": self.options.style_map,
            "edit_rate": self.options.edit_rate,
            "perfect": self.options.perfect,
            "seed": self.seed,
        }


def build_tiny_rewriter(
    options: TinyRewriterOptions, template, seed: int, rule=None
) -> TinyRewriter:
    """The registry's factory: the W tokens are the template's token-swap rule's."""
    return TinyRewriter(options, template.part("w_classifier"), seed)
