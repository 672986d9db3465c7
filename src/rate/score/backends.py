"""The registry of scorer backends a scoring template may name in ``backend``."""

from __future__ import annotations

from pathlib import Path

from rate.score.hf import HFClassifierOptions
from rate.score.tinyworld import OracleOptions, OracleScorer, TinyRMOptions, TinyRMScorer
from rate.templates import Kind


def _hf(options: HFClassifierOptions, world: Path, batch_size: int):
    from rate.score.hf import HFClassifierScorer

    return HFClassifierScorer(options, world, batch_size)


SCORERS = {
    "tinyrlhf_rm": Kind(
        TinyRMOptions, lambda o, w, b: TinyRMScorer(o, w), "the tiny world's reward model"
    ),
    "tinyrlhf_oracle": Kind(
        OracleOptions, lambda o, w, b: OracleScorer(o, w), "the tiny world's true quality"
    ),
    "hf_classifier": Kind(
        HFClassifierOptions, _hf, "a Hugging Face sequence classifier (hub id or local folder)"
    ),
}


def build_scorer(template, world: Path):
    """The scorer a scoring template asks for. -> Scorer"""
    return SCORERS[template.backend].build(template.spec, world, template.batch_size)
