"""The registry of scorer backends a scoring template may name in ``backend``, and loading a
scoring template by name (scoring templates name nothing but a scorer)."""

from __future__ import annotations

import re
from pathlib import Path

from rate.errors import RateError
from rate.plugins import with_plugins
from rate.registry import Kind, typed_part
from rate.score.base import Scorer
from rate.score.options import (
    HFClassifierOptions,
    MiniLMSentimentOptions,
    VaderOptions,
)
from rate.templates import (
    SCORING_FOLDER,
    ScoringTemplate,
    find_template,
    parse_scoring_template,
    scoring_template_names,
)

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
    },
    "rate.scorers",
)


def load_scoring_template(name: str) -> ScoringTemplate:
    """The scoring template ``name``, its backend's options validated."""
    return parse_scoring_template(find_template(SCORING_FOLDER, name, "scoring template"), SCORERS)


def names_a_model(model: str) -> bool:
    """Whether ``scoring.model`` names a model rather than a template: a hub id (``org/name``:
    a template's name has no '/') or a local folder, and no template has that name."""
    if model in scoring_template_names():
        return False
    return "/" in model or Path(model).expanduser().is_dir()


def model_short_name(model: str) -> str:
    """A model's name in output file names: the last part of its hub id or folder, with any
    character a file name part may not hold replaced by '_'."""
    last = Path(model.rstrip("/")).name or "model"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", last).lstrip(".") or "model"


def model_template(model: str, chat: bool = False, label: int = 0) -> ScoringTemplate:
    """A scoring template for a hub id or local folder without a YAML file: the generic
    sequence classifier (``hf_classifier`` with its defaults, ``chat`` and ``label`` as
    given); its scores go under the model as written, the reference's reward key."""
    options = {"model": model, "chat": chat, "label": label}
    template = ScoringTemplate(model_short_name(model), model, "hf_classifier")
    where = f"scoring.model {model!r} (a model without a scoring template)"
    _, template.spec = typed_part(
        SCORERS, {"backend": "hf_classifier", **options}, "backend", where, ""
    )
    template.options = options
    return template


def scoring_template_of(model: str, chat: bool = False, label: int = 0) -> ScoringTemplate:
    """What ``scoring.model`` names: a scoring template, or a model (:func:`names_a_model`)."""
    if names_a_model(model):
        return model_template(model, chat, label)
    return load_scoring_template(model)


def build_scorer(template: ScoringTemplate) -> Scorer:
    """The scorer a scoring template asks for."""
    return SCORERS[template.backend].build(template.spec, template.batch_size)


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
