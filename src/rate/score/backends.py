"""The registry of scorer backends a scoring template may name in ``backend``, and loading a
scoring template by name (scoring templates name nothing but a scorer)."""

from __future__ import annotations

from pathlib import Path

from rate.errors import RateError
from rate.registry import Kind
from rate.score.base import Scorer
from rate.score.options import (
    HFClassifierOptions,
    MiniLMSentimentOptions,
    OracleOptions,
    TinyRMOptions,
    VaderOptions,
)
from rate.templates import (
    SCORING_FOLDER,
    ScoringTemplate,
    find_template,
    parse_scoring_template,
    scoring_template_names,
)

# Every factory takes (options, world, batch_size) and returns a Scorer.
SCORERS = {
    "tinyrlhf_rm": Kind(
        TinyRMOptions, "rate.score.tinyworld:TinyRMScorer", "the tiny world's reward model"
    ),
    "tinyrlhf_oracle": Kind(
        OracleOptions, "rate.score.tinyworld:OracleScorer", "the tiny world's true quality"
    ),
    "hf_classifier": Kind(
        HFClassifierOptions,
        "rate.score.hf:HFClassifierScorer",
        "a Hugging Face sequence classifier (hub id or local folder)",
    ),
    "vader": Kind(
        VaderOptions, "rate.score.vader:VaderScorer", "VADER compound sentiment (offline, English)"
    ),
    "minilm_sentiment": Kind(
        MiniLMSentimentOptions,
        "rate.score.minilm:MiniLMSentimentScorer",
        "all-MiniLM-L6-v2 with a sentiment head fitted on the drug reviews (offline)",
    ),
}


def load_scoring_template(name: str) -> ScoringTemplate:
    """The scoring template ``name``, its backend's options validated."""
    return parse_scoring_template(find_template(SCORING_FOLDER, name, "scoring template"), SCORERS)


def build_scorer(template: ScoringTemplate, world: Path | None) -> Scorer:
    """The scorer a scoring template asks for."""
    return SCORERS[template.backend].build(template.spec, world, template.batch_size)


def templates_with_reward_key(reward_key: str) -> set[str]:
    """The names of the scoring templates that write their scores under ``reward_key`` (a
    template that does not load is left out: it cannot have written a scored file)."""
    names = set()
    for name in scoring_template_names():
        try:
            if load_scoring_template(name).reward_key == reward_key:
                names.add(name)
        except RateError:
            continue
    return names
