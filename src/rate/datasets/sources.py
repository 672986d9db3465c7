"""Sources of examples for create_dataset: a local JSONL file (the others have modules of
their own).

A source yields :class:`Example` chunks; create_dataset classifies W on each and keeps exactly
n with W defined. Sources that can draw without end (a plugin's simulator) are streamed; finite ones
are read whole and shuffled with the run's seed, so a file sorted by label still gives both W
values in its first n.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from rate.datasets.base import Example, ExampleStream, SourceContext
from rate.datasets.options import JsonlSource
from rate.errors import DataFileError
from rate.io import read_jsonl
from rate.seeding import stable_seed

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# A local JSONL file


class JsonlStream(ExampleStream):
    finite = True

    def __init__(self, spec: JsonlSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx
        p = Path(spec.path).expanduser()
        self.path = p if p.is_absolute() else Path(ctx.template_path).parent / p

    def chunks(self) -> Iterator[list[Example]]:
        spec = self.spec
        rows = read_jsonl(self.path)
        examples = []
        for lineno, row in enumerate(rows, 1):
            where = f"{self.path}: row {lineno}"
            text = row.get(spec.text_field)
            if not isinstance(text, str):
                present = ", ".join(sorted(row))
                raise DataFileError(
                    f"{where}: field {spec.text_field!r} (text_field) must be a string; "
                    f"fields present: {present}"
                )
            prompt = spec.prompt if spec.prompt is not None else row.get(spec.prompt_field)
            if not isinstance(prompt, str):
                raise DataFileError(f"{where}: field {spec.prompt_field!r} must be a string")
            key = str(row[spec.id_field]) if spec.id_field else f"line{lineno}"
            fields = {
                k: v
                for k, v in row.items()
                if k not in (spec.text_field, spec.prompt_field) and not isinstance(v, (dict, list))
            }
            examples.append(Example(key, text, prompt, fields))
        order = np.random.default_rng(stable_seed("jsonl-source", self.ctx.seed)).permutation(
            len(examples)
        )
        yield [examples[i] for i in order]
