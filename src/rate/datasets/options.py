"""The options of every dataset-side part a template writes: sources, W rules and
perturbations, as parsed from YAML and never changed afterwards. The live objects are built
from them (:mod:`rate.datasets.registry`); the heavy libraries a source needs (datasets) load
with its live stream, not here."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rate.errors import ConfigError
from rate.hooks import check_function, module_file
from rate.packaged import DRUG_FIELDS, DRUG_SPLITS
from rate.registry import Part
from rate.schema import Bound, opt

ADAPTERS = ("fields", "hh_rlhf", "eli5")
FORMATS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def file_format(name: str) -> str | None:
    """The datasets builder for a file, by extension; compressed text (.gz) is read through."""
    stem = name[:-3] if name.endswith(".gz") else name
    return FORMATS.get(Path(stem).suffix)


@dataclass
class JsonlSource(Part):
    """One JSON object per line: the completion in ``text_field``, the prompt in
    ``prompt_field`` or a fixed ``prompt``; the other fields are kept for W rules and groups."""

    path: str  # absolute, or relative to the template's folder
    text_field: str
    prompt_field: str | None = None
    prompt: str | None = None
    id_field: str | None = None  # a stable id; default the line number

    def validate(self, where: str) -> None:
        if (self.prompt_field is None) == (self.prompt is None):
            raise ConfigError(f"{where}: key 'source': give exactly one of prompt_field, prompt")

    def inputs(self) -> dict[str, str]:
        """The file, digested by content, where its path is absolute (a relative path is the
        template's own: the template's digest covers where it points, not what it holds)."""
        path = Path(self.path).expanduser()
        return {"file": str(path)} if path.is_absolute() and path.is_file() else {}


@dataclass
class HFDatasetSource(Part):
    # A hub id (imdb, nvidia/HelpSteer, Anthropic/hh-rlhf) or a local folder laid out as the
    # hub lays out datasets (train.jsonl, test.parquet, ...); or use data_files.
    path: str = ""
    name: str | None = None  # the dataset's configuration, if it has several
    split: str = "train"
    data_files: list[str] | None = None  # local files (relative to the template's folder)
    revision: str | None = None
    # The records used, as a Python slice [start, stop] of the split (null: open; negative:
    # from the end): [0, 25000] the first 25,000, [-25000, null] the last 25,000.
    select: list[int | None] | None = None
    order: str = opt(
        "file",
        help="the order examples are taken in: file (the split's order, as the reference takes "
        "the first n) or shuffled (a permutation seeded by the run's seed)",
        choices=("file", "shuffled"),
    )
    adapter: str = opt("fields", help="how a record becomes an example", choices=ADAPTERS)
    # fields adapter
    text_field: str = "text"
    prompt: str = ""  # fixed text; {field} placeholders are filled from the record
    id_field: str | None = None  # a stable id; default the row number
    responses: str = opt(
        "rejected",
        help="hh_rlhf adapter: chosen, rejected or both (every chosen, then every rejected)",
        choices=("chosen", "rejected", "both"),
    )
    prompt_from: str = opt(
        "first_turn",
        help="hh_rlhf adapter: the prompt is the first turn or the whole dialogue",
        choices=("first_turn", "dialogue"),
    )
    answers: str = opt(
        "all",
        help="eli5 adapter: every answer of each question (all, the reference) or its "
        "top-scored one",
        choices=("all", "top"),
    )
    # Record fields kept for W rules and groups (default: every scalar field).
    keep_fields: list[str] | None = None

    def validate(self, where: str) -> None:
        if bool(self.path) == bool(self.data_files):
            raise ConfigError(f"{where}: key 'source': give exactly one of path, data_files")
        if self.select is not None and len(self.select) != 2:
            raise ConfigError(
                f"{where}: key 'source.select' is a slice [start, stop], e.g. [0, 25000] or "
                "[-25000, null]"
            )
        for f in self.data_files or []:
            if file_format(f) is None:
                raise ConfigError(
                    f"{where}: key 'source.data_files': {f}: the format is read from the "
                    f"extension, one of {', '.join(FORMATS)} (optionally .gz)"
                )
        try:
            list(string.Formatter().parse(self.prompt))
        except ValueError as err:
            raise ConfigError(
                f"{where}: key 'source.prompt' is not a valid template ({err})"
            ) from None


@dataclass
class DrugReviewSource(Part):
    """drugs.com reviews: the completion is the review; the prompt is ``prompt`` with
    {drug} and {condition} filled in. Fields: drug, condition, rating (positive, negative or
    neutral), date, useful_count, split."""

    split: str = opt("all", help="train, test or all", choices=(*DRUG_SPLITS, "all"))
    prompt: str = "Write a review of {drug} for {condition}: "
    max_words: int | None = opt(
        None,
        help="keep only reviews of at most this many words (a rewriter with a short output "
        "cap, such as a small model on a CPU, can then finish its rewrites); null: every review",
        bound=Bound(1, high=10**6, why="null: every review"),
    )

    def validate(self, where: str) -> None:
        names = {f for _, f, _, _ in string.Formatter().parse(self.prompt) if f}
        if names - {"drug", "condition"}:
            raise ConfigError(
                f"{where}: key 'source.prompt' may use {{drug}} and {{condition}} only; it uses "
                f"{sorted(names)}"
            )

    def example_fields(self) -> frozenset[str]:
        return frozenset({*DRUG_FIELDS, "split"})


@dataclass
class ChatterbotSource(Part):
    """The chatterbot corpus' consecutive turn pairs: prompt, then response. Field: topic."""

    language: str = "english"
    topics: list[str] | None = None  # default: every topic file

    def example_fields(self) -> frozenset[str]:
        return frozenset({"topic"})


TYPO_METHODS = ("per_word", "reference")


@dataclass
class TyposOptions(Part):
    rate: float = opt(
        help="the share of words that get a typo (0: none)", bound=Bound(0, high=1, why="a share")
    )
    apply_to: str = opt(
        "w=1", help="the examples perturbed: w=1, w=0 or all", choices=("w=1", "w=0", "all")
    )
    method: str = opt(
        "per_word",
        help="per_word: each word of 3+ letters gets a typo with probability rate, never at its "
        "first letter; reference: int(rate x words) words drawn, a random adjacent pair swapped "
        "(the first letter included), the text re-joined with single spaces, as the reference "
        "does",
        choices=TYPO_METHODS,
    )


# ---------------------------------------------------------------------------------------------
# W rules: how a template reads the attribute W off an example

# How a text-based W rule measures a text (its length in characters or words); named here
# because rule and rewriter options are validated against these names.
TEXT_MEASURES = {
    "text_length": lambda text: float(len(text)),  # characters
    "text_words": lambda text: float(len(text.split())),
}


@dataclass
class FieldEqualsOptions(Part):
    """W=1 when ``field`` is in ``w1_values``, W=0 when in ``w0_values``; else undefined."""

    field: str
    w1_values: list[Any]
    w0_values: list[Any] | None = None  # default: every other value is W=0

    def validate(self, where: str) -> None:
        if self.w0_values is not None and set(map(repr, self.w1_values)) & set(
            map(repr, self.w0_values)
        ):
            raise ConfigError(f"{where}: w_classifier: a value is in both w1_values and w0_values")


@dataclass
class FieldAboveOptions(Part):
    """W=1 when ``field`` is above ``threshold``, a number or ``median`` (computed on the data
    and recorded); W=0 at or below it. The field ``text_length`` is the text's length in
    characters and ``text_words`` in words: the completion's, never the record's (the reference
    measured the record, so W was always 0)."""

    field: str
    threshold: float | str = "median"

    def validate(self, where: str) -> None:
        if isinstance(self.threshold, str) and self.threshold != "median":
            raise ConfigError(f"{where}: w_classifier.threshold: a number or 'median'")


@dataclass
class TextMatchesOptions(Part):
    """W=1 when the text matches the regular expression ``pattern`` (searched), else W=0; e.g.
    ``^\\s*[AEIOUaeiou]`` for a review that starts with a vowel."""

    pattern: str
    ignore_case: bool = False

    def validate(self, where: str) -> None:
        try:
            re.compile(self.pattern)
        except re.error as err:
            raise ConfigError(
                f"{where}: key 'w_classifier.pattern' is not a regex ({err})"
            ) from None


@dataclass
class MisspelledShareOptions(Part):
    """W=1 when more than ``threshold`` of the text's words (of three letters or more) are not
    English words (:func:`rate.packaged.english_words`): misspellings, but also names and
    jargon, so the threshold sits above a clean text's share of those."""

    threshold: float = opt(
        0.15, help="the share of unknown words above which W=1", bound=Bound(0, high=1)
    )


@dataclass
class AlwaysOptions(Part):
    """W is the same for every example (``value``): only the ATT (or the ATU) is defined, as
    for harmful responses that are all W=1."""

    value: bool = True


@dataclass
class ScorerAboveOptions(Part):
    """W read by a scorer (a scoring template, e.g. a sentiment classifier): W=1 when the score
    is above ``threshold`` + ``margin``, W=0 below ``threshold`` - ``margin``, undefined in
    between. ``threshold`` may be ``median``."""

    scorer: str  # a scoring template
    threshold: float | str = 0.0
    margin: float = opt(
        0.0,
        help="W is undefined within this distance of the threshold",
        bound=Bound(0, high=10**6, why="in the scorer's units"),
    )

    def validate(self, where: str) -> None:
        if isinstance(self.threshold, str) and self.threshold != "median":
            raise ConfigError(f"{where}: w_classifier.threshold: a number or 'median'")

    def scoring_templates(self) -> list[str]:
        return [self.scorer]


@dataclass
class PythonRuleOptions(Part):
    """Escape hatch: ``function: "module:function"`` taking an Example, returning bool or None.
    The function is imported and run: a template that names one runs code."""

    function: str

    def validate(self, where: str) -> None:
        """The module must be found and define the function; checked without running the
        module (its source is read, not imported), so `rate validate` runs no template code."""
        check_function(
            self.function,
            f"{where}: key 'w_classifier.function'",
            f"def {self.function.partition(':')[2] or 'w'}(example) -> True, False or None",
        )

    def inputs(self) -> dict[str, str]:
        found = module_file(self.function)
        return {"function": found} if found else {}
