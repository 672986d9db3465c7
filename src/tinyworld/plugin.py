"""The tiny world's parts as rate sees them: the kinds it adds to the template registries.

rate finds these through this package's entry points (pyproject.toml; :mod:`rate.plugins`),
never by importing this package by name. Only options are imported here; each live part loads
with its factory when a template uses it.
"""

from __future__ import annotations

from pathlib import Path

from rate.registry import Kind
from tinyworld.options import (
    OracleOptions,
    TinyRewriterOptions,
    TinyRMOptions,
    TinyWorldSource,
    TokenSwapOptions,
)

# The templates the world ships: its marker concepts, its reward model and its oracle.
TEMPLATES = Path(__file__).resolve().parent / "templates"

# A source's factory takes (options, SourceContext) and returns an ExampleStream.
SOURCE = Kind(
    TinyWorldSource, "tinyworld.source:TinyWorldStream", "responses sampled in the tiny world"
)
TOKEN_SWAP = Kind(
    TokenSwapOptions,
    "tinyworld.source:TokenSwap.from_options",
    "tiny world: a token against its counterpart",
)
REWRITER = Kind(
    TinyRewriterOptions,
    "tinyworld.rewriter:build_tiny_rewriter",
    "tiny world: token edits with a style signature",
)
# A scorer's factory takes (options, batch_size) and returns a Scorer.
REWARD_MODEL = Kind(
    TinyRMOptions, "tinyworld.scorers:TinyRMScorer", "the tiny world's reward model"
)
ORACLE = Kind(OracleOptions, "tinyworld.scorers:OracleScorer", "the tiny world's true quality")
