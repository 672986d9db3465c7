"""The registry of scorer backends a scoring template may name in ``backend``."""

from __future__ import annotations

from pathlib import Path

from rate.score.tinyworld import OracleOptions, OracleScorer, TinyRMOptions, TinyRMScorer
from rate.templates import Kind

SCORERS = {
    "tinyrlhf_rm": Kind(TinyRMOptions, TinyRMScorer, "the tiny world's reward model"),
    "tinyrlhf_oracle": Kind(OracleOptions, OracleScorer, "the tiny world's true quality"),
}


def build_scorer(template, world: Path):
    """The scorer a scoring template asks for. -> Scorer"""
    return SCORERS[template.backend].build(template.spec, world)
