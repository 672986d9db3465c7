"""Datasets loaded with the ``datasets`` library: a hub id and split, or local files in the
formats those datasets come in (JSON lines, JSON, CSV, Parquet).

A record becomes one example or several through an *adapter*:

- ``fields``: the completion is ``text_field``; the prompt is a fixed ``prompt`` string, which
  may name record fields (``"{prompt}"`` for HelpSteer's prompt column);
- ``hh_rlhf``: Anthropic HH-RLHF transcripts ("\\n\\nHuman: ... \\n\\nAssistant: ..."), of
  ``chosen``, ``rejected`` or ``both`` (two examples per record, field ``chosen`` true or
  false; every chosen response first, then every rejected one, as the reference lists them):
  ``prompt_from: first_turn`` pairs the first human turn with the first assistant turn (its
  answer); ``dialogue`` pairs the last assistant turn with the transcript before it, written
  as the reference writes it (``"Human: ...\\n\\nAssistant: ...\\n\\nHuman: ... Assistant: "``);
- ``eli5``: ELI5 questions and answers; the prompt is the question title, the completion each
  of its answers (``answers: all``, the reference) or its highest-scored one (``top``).

``select`` slices the split's records first (the reference's data slices: the first or the
last 25,000); examples keep the file's order unless ``order: shuffled``.
"""

from __future__ import annotations

import logging
import re
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from rate.datasets.base import Example, ExampleStream, SourceContext
from rate.datasets.options import HFDatasetSource, file_format
from rate.errors import DataFileError
from rate.seeding import stable_seed
from rate.settings import hub_unreachable

log = logging.getLogger(__name__)

_TURN = re.compile(r"\n\n(Human|Assistant): ")


def load_records(spec: HFDatasetSource, template_path: str) -> tuple[list[dict], str]:
    """The split's records as dicts, and a description of where they came from."""
    if spec.data_files:
        base = Path(template_path).parent
        files = [str(p if p.is_absolute() else base / p) for p in map(Path, spec.data_files)]
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            raise DataFileError(f"{template_path}: key 'source.data_files': no file {missing[0]}")
        fmt = file_format(files[0])
        origin = ", ".join(files)
        try:
            ds = datasets.load_dataset(fmt, data_files={spec.split: files}, split=spec.split)
        except Exception as err:  # the library raises many kinds for one unreadable file
            raise DataFileError(f"{origin}: cannot read as {fmt}: {err}") from None
    else:
        local = Path(spec.path).expanduser()
        if not local.is_absolute():
            local = Path(template_path).parent / local
        where = "local folder" if local.is_dir() else "hub"
        path = str(local) if local.is_dir() else spec.path
        origin = f"{path} ({where}{', ' + spec.name if spec.name else ''}, split {spec.split})"
        if where == "hub" and (why := hub_unreachable()):
            raise DataFileError(
                f"{template_path}: cannot load {spec.path!r} from the Hugging Face Hub: it is "
                f"offline or unreachable ({why}). Download the split where the hub is reachable "
                "(datasets.load_dataset(...).to_json('file.jsonl')) and set the template's "
                "source.data_files to the file instead of source.path"
            )
        try:
            splits = datasets.get_dataset_split_names(path, spec.name, revision=spec.revision)
        except Exception as err:
            raise DataFileError(f"{template_path}: cannot load {origin}: {err}") from None
        if spec.split not in splits:
            raise DataFileError(
                f"{template_path}: key 'source.split': {path} has no split "
                f"{spec.split!r}; it has {', '.join(splits)}"
            )
        ds = datasets.load_dataset(path, spec.name, split=spec.split, revision=spec.revision)
    return [dict(r) for r in ds], origin


def _check_columns(records: list[dict], needed: list[str], origin: str, key: str) -> None:
    present = set(records[0]) if records else set()
    for col in needed:
        if col not in present:
            raise DataFileError(
                f"{origin}: no column {col!r} (source.{key}); the columns are "
                f"{', '.join(sorted(present)) or 'none (the split is empty)'}"
            )


def _scalars(record: dict, keep: list[str] | None, drop: set[str]) -> dict[str, Any]:
    names = keep if keep is not None else [k for k in record if k not in drop]
    return {
        k: record[k]
        for k in names
        if k in record and (record[k] is None or isinstance(record[k], (str, int, float, bool)))
    }


def split_transcript(text: str) -> list[tuple[str, str]]:
    """HH-RLHF's transcript as (speaker, text) turns, in order."""
    parts = _TURN.split(text)
    # parts: [before, speaker, text, speaker, text, ...]
    return [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]


def _fields_examples(
    spec: HFDatasetSource, records: list[dict], origin: str, first: int = 0
) -> list[Example]:
    placeholders = [f for _, f, _, _ in string.Formatter().parse(spec.prompt) if f]
    _check_columns(records, [spec.text_field, *placeholders], origin, "text_field / prompt")
    if spec.id_field:
        _check_columns(records, [spec.id_field], origin, "id_field")
    out = []
    for i, r in enumerate(records, first):
        text = r[spec.text_field]
        if not isinstance(text, str):
            raise DataFileError(
                f"{origin}: row {i}: column {spec.text_field!r} must be text, got "
                f"{type(text).__name__}"
            )
        prompt = spec.prompt.format(**{f: r[f] for f in placeholders})
        key = str(r[spec.id_field]) if spec.id_field else f"row{i}"
        fields = _scalars(r, spec.keep_fields, {spec.text_field})
        out.append(Example(key, text, prompt, fields))
    return out


def reference_dialogue(transcript: str) -> tuple[str, str]:
    """(the prompt, the last assistant turn) as the reference splits a transcript: the text
    before the last "Assistant: ", stripped, then " Assistant: "."""
    before, _, last = transcript.rpartition("Assistant: ")
    return before.strip() + " Assistant: ", last.strip()


def _hh_examples(
    spec: HFDatasetSource, records: list[dict], origin: str, first: int = 0
) -> list[Example]:
    which = ["chosen", "rejected"] if spec.responses == "both" else [spec.responses]
    _check_columns(records, which, origin, "responses")
    out = []
    for side in which:
        for i, r in enumerate(records, first):
            turns = split_transcript(r[side])
            if not turns or turns[-1][0] != "Assistant" or turns[0][0] != "Human":
                raise DataFileError(
                    f"{origin}: row {i}: {side!r} is not an HH-RLHF transcript "
                    "('\\n\\nHuman: ...\\n\\nAssistant: ...' ending with an assistant turn)"
                )
            if spec.prompt_from == "first_turn":
                # The first question with its own answer, never a later turn's answer.
                prompt = turns[0][1]
                response = next(text for who, text in turns if who == "Assistant")
            else:
                prompt, response = reference_dialogue(r[side])
            fields = {"chosen": side == "chosen", "turns": len(turns)}
            out.append(Example(f"row{i}-{side}", response, prompt, fields))
    return out


def _eli5_examples(
    spec: HFDatasetSource, records: list[dict], origin: str, first: int = 0
) -> list[Example]:
    _check_columns(records, ["title", "answers"], origin, "adapter (eli5)")
    out = []
    for i, r in enumerate(records, first):
        answers = r["answers"]
        texts = answers.get("text") if isinstance(answers, dict) else None
        if not texts:
            continue  # a question without answers gives no example
        scores = answers.get("score") or [0] * len(texts)
        key = str(r.get("q_id") or f"row{i}")
        common = _scalars(r, spec.keep_fields, {"title", "answers", "selftext"})
        picked = range(len(texts)) if spec.answers == "all" else [int(np.argmax(scores))]
        for j in picked:
            fields = {"answer_score": scores[j], "n_answers": len(texts), **common}
            name = key if spec.answers == "top" else f"{key}-a{j}"
            out.append(Example(name, texts[j], r["title"], fields))
    return out


class HFDatasetStream(ExampleStream):
    finite = True

    def __init__(self, spec: HFDatasetSource, ctx: SourceContext) -> None:
        self.spec, self.ctx = spec, ctx

    def chunks(self) -> Iterator[list[Example]]:
        records, origin = load_records(self.spec, self.ctx.template_path)
        if not records:
            raise DataFileError(f"{origin}: the split is empty")
        first = 0
        if self.spec.select is not None:
            # Row numbers (and so example keys) stay those of the whole split.
            first, stop, _ = slice(*self.spec.select).indices(len(records))
            records = records[first:stop]
            if not records:
                raise DataFileError(f"{origin}: source.select {self.spec.select} leaves no records")
        adapt = {"fields": _fields_examples, "hh_rlhf": _hh_examples, "eli5": _eli5_examples}
        examples = adapt[self.spec.adapter](self.spec, records, origin, first)
        log.info("%s: %d records -> %d examples", origin, len(records), len(examples))
        if self.spec.order == "shuffled":
            order = np.random.default_rng(stable_seed("hf-source", self.ctx.seed)).permutation(
                len(examples)
            )
            examples = [examples[i] for i in order]
        yield examples
