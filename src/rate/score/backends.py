"""The registry of scorer backends a scoring template may name in ``backend``."""

from __future__ import annotations

from pathlib import Path

from rate.score.hf import HFClassifierOptions
from rate.score.minilm import MiniLMSentimentOptions
from rate.score.tinyworld import OracleOptions, OracleScorer, TinyRMOptions, TinyRMScorer
from rate.score.vader import VaderOptions, VaderScorer
from rate.templates import Kind


def _hf(options: HFClassifierOptions, world: Path, batch_size: int):
    from rate.score.hf import HFClassifierScorer

    return HFClassifierScorer(options, world, batch_size)


def _minilm(options: MiniLMSentimentOptions, world: Path, batch_size: int):
    from rate.score.minilm import MiniLMSentimentScorer

    return MiniLMSentimentScorer(options, world, batch_size)


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
    "vader": Kind(VaderOptions, VaderScorer, "VADER compound sentiment (offline, English)"),
    "minilm_sentiment": Kind(
        MiniLMSentimentOptions,
        _minilm,
        "all-MiniLM-L6-v2 with a sentiment head fitted on the drug reviews (offline)",
    ),
}


def build_scorer(template, world: Path):
    """The scorer a scoring template asks for. -> Scorer"""
    return SCORERS[template.backend].build(template.spec, world, template.batch_size)
