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
from rate.io import read_jsonl_numbered
from rate.records import text_preview
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
        numbered = read_jsonl_numbered(self.path)
        if not numbered:
            raise DataFileError(
                f"{self.path}: holds no example (no JSON line); point the template's source.path "
                "at the file of your examples"
            )
        examples = []
        first_line: dict[str, int] = {}  # id -> the line it was first seen on
        for row_no, (line, row) in enumerate(numbered, 1):
            where = f"{self.path}: row {row_no}"
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
            key = self._key(row, row_no, line, first_line)
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

    def _key(self, row: dict, row_no: int, line: int, first_line: dict[str, int]) -> str:
        """The example's id: its ``id_field``, which must be there and not repeat (the id
        names the example's rewrites, so a repeat makes them ambiguous), else its row."""
        field = self.spec.id_field
        if not field:
            return f"line{row_no}"  # the row's count, not its line: kept as ids always were
        if field not in row:
            raise DataFileError(
                f"{self.path}: line {line} has no field {field!r} (id_field); fields present: "
                f"{', '.join(sorted(row))}; give every row an id, or remove id_field"
            )
        key = str(row[field])
        first = first_line.setdefault(key, line)
        if first != line:
            raise DataFileError(
                f"{self.path}: line {line} repeats id {text_preview(key, 40)} (id_field "
                f"{field!r}) of line {first}; each example appears once: make the ids unique or "
                "remove the duplicate"
            )
        return key
