"""The registry of rewriter backends a dataset template may name in ``rewriter.backend``."""

from __future__ import annotations

from rate.rewrite.tinyworld import TinyRewriterOptions, build_tiny_rewriter
from rate.templates import Kind

REWRITERS = {
    "tinyrlhf": Kind(
        TinyRewriterOptions, build_tiny_rewriter, "tiny world: token edits with a style signature"
    ),
}


def build_rewriter(template, seed: int):
    """The rewriter a dataset template asks for. -> Rewriter"""
    backend, options = template.parts["rewriter"]
    return REWRITERS[backend].build(options, template, seed)
