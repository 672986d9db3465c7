"""Reading the pipeline's data files, ours and the reference pipeline's, with clear errors.

Rewritten datasets are JSON objects ``{index: example}``; scored datasets are JSONL, one example
per line, each with ``{reward_key: {"original": x, "rewrite": y, "rewritten rewrite": z}}`` per
reward model. Rows come back as dicts with an ``index`` (the JSON key, or the line number for
reference JSONL files that carry none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rate.errors import DataFileError
from rate.io import read_json, read_jsonl

ORIGINAL, REWRITE, REWRITTEN = "original", "rewrite", "rewritten rewrite"
PERFECT = "perfect rewrite"  # the true counterfactual, where a rewriter knows it (tiny world)
COMPLETIONS = (ORIGINAL, REWRITE, REWRITTEN)


def read_examples(path: Path) -> list[dict[str, Any]]:
    """Rows of a rewritten (.json) or scored (.jsonl) dataset, each with 'index'."""
    if path.suffix == ".jsonl":
        rows = read_jsonl(path)
        for i, row in enumerate(rows):
            row.setdefault("index", str(i))
    elif path.suffix == ".json":
        data = read_json(path)
        if not isinstance(data, dict):
            raise DataFileError(f"{path}: expected a JSON object {{index: example}}")
        rows = []
        for index, row in data.items():
            if not isinstance(row, dict):
                raise DataFileError(f"{path}: example {index!r} is not an object")
            rows.append({"index": str(index), **row})
    else:
        raise DataFileError(f"{path}: unknown format; datasets are .json or .jsonl")
    if not rows:
        raise DataFileError(f"{path}: no examples")
    for row in rows:
        if (
            type(row.get("w_original")) is not bool
            or type(row.get("completions")) is not dict
            or type(row.get("reward_question")) is not str
        ):
            _raise_bad_row(path, row)
    return rows


def _raise_bad_row(path: Path, row: dict) -> None:
    where = f"{path}: example {row['index']}"
    if not isinstance(row.get("w_original"), bool):
        raise DataFileError(f"{where}: 'w_original' must be true or false")
    if not isinstance(row.get("completions"), dict):
        raise DataFileError(f"{where}: 'completions' must be an object")
    raise DataFileError(f"{where}: 'reward_question' must be a string")


def reward_keys(rows: list[dict]) -> list[str]:
    """The reward keys present: fields whose value maps completion names to numbers."""
    keys: dict[str, None] = {}
    for row in rows:
        for k, v in row.items():
            if isinstance(v, dict) and "original" in v and k != "completions":
                keys[k] = None
    return list(keys)
