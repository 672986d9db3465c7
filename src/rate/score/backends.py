"""The registry of scorer backends a scoring template may name in ``backend``, and building the
scorer a loaded scoring template asks for (templates are found and loaded by :mod:`rate.catalog`)."""

from __future__ import annotations

from rate.plugins import with_plugins
from rate.registry import Kind
from rate.score.base import Scorer
from rate.score.options import (
    HFClassifierOptions,
    MiniLMSentimentOptions,
    PythonScorerOptions,
    VaderOptions,
)
from rate.templates import ScoringTemplate

# Every factory takes (options, batch_size) and returns a Scorer; plugins add theirs.
SCORERS = with_plugins(
    {
        "hf_classifier": Kind(
            HFClassifierOptions,
            "rate.score.hf:HFClassifierScorer",
            "a Hugging Face sequence classifier (hub id or local folder)",
        ),
        "vader": Kind(
            VaderOptions,
            "rate.score.vader:VaderScorer",
            "VADER compound sentiment (offline, English)",
        ),
        "minilm_sentiment": Kind(
            MiniLMSentimentOptions,
            "rate.score.minilm:MiniLMSentimentScorer",
            "all-MiniLM-L6-v2 with a sentiment head fitted on the drug reviews (offline)",
        ),
        "python": Kind(
            PythonScorerOptions,
            "rate.score.python:PythonScorer",
            'your own function, "module:function": (prompts, texts) -> one float per text',
        ),
    },
    "rate.scorers",
)


def build_scorer(template: ScoringTemplate) -> Scorer:
    """The scorer a scoring template asks for."""
    return SCORERS[template.backend].build(template.spec, template.batch_size)
