"""The one row type of the pipeline's data files: build, read, write, and read scores back.

Rewritten datasets are JSON objects ``{index: example}``; scored datasets are JSONL, one example
per line. Every example is the reference pipeline's::

    {"w_original": bool, "completions": {"original": .., "rewrite": .., "rewritten rewrite": ..},
     "reward_question": str}

plus ours: ``key`` (a stable id), ``metadata`` (the source's fields), ``checks`` (the label of
each rewrite, :mod:`rate.rewrite.checks`), the optional completions ``"perfect rewrite"`` and
``"placebo rewrite"`` and, per reward model, ``{reward_key: {completion:
score}}``. Rows come back as dicts with an ``index`` (the JSON key, or the line number for the
reference's JSONL files, which carry none). Every field name of the format lives here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from rate.errors import DataFileError
from rate.io import json_text, json_writer, jsonl_writer, read_json, read_jsonl_numbered, write_temp

ORIGINAL, REWRITE, REWRITTEN = "original", "rewrite", "rewritten rewrite"
PERFECT = "perfect rewrite"  # the true counterfactual, where a rewriter knows it (tiny world)
# The rewrite rewritten once more with W kept (a template's placebo_prompt): one more round of
# the rewriter's edits with W unchanged, beside the rewrite of the rewrite's two.
PLACEBO = "placebo rewrite"
COMPLETIONS = (ORIGINAL, REWRITE, REWRITTEN)
INDEX, W, TEXTS, PROMPT = "index", "w_original", "completions", "reward_question"
KEY, METADATA, CHECKS = "key", "metadata", "checks"

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Building and writing


def rewritten_example(
    w: bool,
    completions: dict[str, str],
    prompt: str,
    key: str,
    metadata: dict[str, Any],
    checks: dict[str, str],
) -> dict[str, Any]:
    """One example of a rewritten dataset, as create_dataset writes it."""
    return {W: w, TEXTS: completions, PROMPT: prompt, KEY: key, METADATA: metadata, CHECKS: checks}


def rewritten_writer(examples: list[dict[str, Any]]) -> Callable[[IO[bytes]], None]:
    """A rewritten dataset's writer: ``{index: example}`` in the given order, indices 0, 1, ..."""
    return json_writer({str(i): ex for i, ex in enumerate(examples)})


def scored_writer(rows: Iterable[dict[str, Any]]) -> Callable[[IO[bytes]], None]:
    """A scored dataset's writer, one row per line."""
    return jsonl_writer(rows)


def write_rewritten(path: Path, examples: list[dict[str, Any]]) -> None:
    """A rewritten dataset at ``path`` (replaced atomically)."""
    write_temp(path.parent, path.name, rewritten_writer(examples)).replace(path)


def write_scored_rows(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """A scored dataset at ``path`` (replaced atomically); -> the number of rows."""
    rows = list(rows)
    write_temp(path.parent, path.name, scored_writer(rows)).replace(path)
    return len(rows)


def with_scores(row: dict[str, Any], reward_key: str, scores: dict[str, float]) -> dict[str, Any]:
    """``row`` with the scores of one reward model added under ``reward_key``."""
    return {**row, reward_key: scores}


# ---------------------------------------------------------------------------------------------
# Reading


def read_examples(path: Path) -> list[dict[str, Any]]:
    """Rows of a rewritten (.json) or scored (.jsonl) dataset, each with 'index' (each index
    once: a repeated one, which the estimators would count twice, is refused)."""
    if path.suffix == ".jsonl":
        numbered = read_jsonl_numbered(path)
        rows = [row for _, row in numbered]
        for i, row in enumerate(rows):
            index = row.setdefault(INDEX, str(i))
            if type(index) is int:  # a number written by another tool: the same index
                row[INDEX] = str(index)
            elif type(index) is not str:
                raise DataFileError(
                    f"{path}: example {i}: 'index' must be a string or an integer, got "
                    f"{text_preview(json_text(index), 40)}; fix it or remove the field"
                )
        refuse_repeated_index(
            [r[INDEX] for r in rows], str(path), [f"line {n}" for n, _ in numbered]
        )
    elif path.suffix == ".json":
        data = read_json(path)
        if not isinstance(data, dict):
            raise DataFileError(f"{path}: expected a JSON object {{index: example}}")
        rows = []
        for index, row in data.items():
            if not isinstance(row, dict):
                raise DataFileError(f"{path}: example {index!r} is not an object")
            rows.append({INDEX: str(index), **row})
    else:
        raise DataFileError(f"{path}: unknown format; datasets are .json or .jsonl")
    if not rows:
        raise DataFileError(f"{path}: no examples")
    for row in rows:
        if (
            type(row.get(W)) is not bool
            or type(row.get(TEXTS)) is not dict
            or type(row.get(PROMPT)) is not str
        ):
            _raise_bad_row(path, row)
    return rows


def refuse_repeated_index(
    index: Sequence[str], where: str, places: Sequence[str], fix: str = "remove the duplicate"
) -> None:
    """Raise where an example index repeats: the estimators would count that example twice
    (``places``: each row's place for the message, e.g. "line 7")."""
    seen: dict[str, int] = {}
    for i, value in enumerate(index):
        first = seen.setdefault(value, i)
        if first != i:
            raise DataFileError(
                f"{where}: {places[i]} repeats index {text_preview(value, 40)} of "
                f"{places[first]}; each example appears once: {fix}"
            )


def _raise_bad_row(path: Path, row: dict) -> None:
    where = f"{path}: example {row[INDEX]}"
    if not isinstance(row.get(W), bool):
        raise DataFileError(f"{where}: '{W}' must be true or false")
    if not isinstance(row.get(TEXTS), dict):
        raise DataFileError(f"{where}: '{TEXTS}' must be an object")
    raise DataFileError(f"{where}: '{PROMPT}' must be a string")


def reward_keys(rows: list[dict]) -> list[str]:
    """The reward keys present: fields whose value maps completion names to numbers."""
    keys: dict[str, None] = {}
    for row in rows:
        for k, v in row.items():
            if isinstance(v, dict) and ORIGINAL in v and k != TEXTS:
                keys[k] = None
    return list(keys)


def completions_of(rows: list[dict]) -> tuple[list[str], list[str], list[tuple[int, str]]]:
    """(prompts, texts, (row position, completion name)) of the completions that are text."""
    prompts, texts, slots = [], [], []
    for j, row in enumerate(rows):
        for name, text in row[TEXTS].items():
            if isinstance(text, str):
                prompts.append(row[PROMPT])
                texts.append(text)
                slots.append((j, name))
    return prompts, texts, slots


def missing_completions(rows: list[dict]) -> list[tuple[str, str]]:
    """(example index, completion name) of every completion that is not text: one of
    :data:`COMPLETIONS` that is absent, or any completion whose value is not a string."""
    out = []
    for row in rows:
        texts = row[TEXTS]
        for name in dict.fromkeys([*COMPLETIONS, *texts]):
            if not isinstance(texts.get(name), str):
                out.append((row[INDEX], name))
    return out


def text_preview(text: str, limit: int = 60) -> str:
    """``text`` quoted, cut to ``limit`` characters with its length told, for messages (a
    data file's text may be a megabyte)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def count_texts(rows: list[dict]) -> int:
    """How many completions of the rows are text."""
    return sum(isinstance(t, str) for row in rows for t in row[TEXTS].values())


def w_values(rows: list[dict]) -> np.ndarray:
    """W of each row, (n,) bool."""
    return np.fromiter((r[W] for r in rows), dtype=bool, count=len(rows))


def _is_number(v: Any) -> bool:
    return type(v) is float or type(v) is int


def score_table(
    rows: list[dict], reward_key: str, names: tuple[str, str, str] = COMPLETIONS
) -> tuple[np.ndarray, np.ndarray, list]:
    """The scores of the completions ``names`` (original, rewrite, rewrite of the rewrite:
    :data:`COMPLETIONS` unless a config names others, as the reference's w_*_key do) under
    ``reward_key`` as an (n, 3) table, NaN where one is missing or not a number, a mask of those
    rows (non-finite scores in the file are NaN in the table but not in the mask), and per row
    the first (completion, JSON type) of a score that is there but not a number (a string,
    true/false, a list ...), else None."""
    missing = np.zeros(len(rows), dtype=bool)
    table = np.empty((len(rows), len(names)))
    wrong: list[tuple[str, str] | None] = [None] * len(rows)
    for i, row in enumerate(rows):
        s = row.get(reward_key)
        if not isinstance(s, dict) or not all(name in s for name in names):
            missing[i] = True
            table[i] = np.nan
            continue
        vals = [s[name] for name in names]
        if not all(_is_number(v) for v in vals):
            missing[i] = True
            table[i] = np.nan
            # A null is a missing score (as the columnar reader sees it); others are wrong.
            for name, v in zip(names, vals, strict=True):
                if v is not None and not _is_number(v):
                    wrong[i] = (name, _JSON_TYPES.get(type(v), type(v).__name__))
                    break
            continue
        table[i] = vals
    return table, missing, wrong


_JSON_TYPES = {str: "a string", bool: "true/false", list: "a list", dict: "an object"}


def scores_of(rows: list[dict], reward_key: str, w: bool, completion: str) -> np.ndarray:
    """The finite scores of one completion under ``reward_key`` in the rows with W = ``w``."""
    vals = []
    for r in rows:
        if r.get(W) is not w:
            continue
        v = (r.get(reward_key) or {}).get(completion)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
            vals.append(float(v))
    return np.array(vals)


def check_labels(row: dict) -> dict[str, str] | None:
    """The rewrite-check label of each pass, or None (made before checks existed)."""
    checks = row.get(CHECKS)
    return checks if isinstance(checks, dict) else None


def group_value(row: dict, field: str) -> Any:
    """A row's value of ``field``: its own scalar field, else one of its metadata; or None."""
    if field in row and not isinstance(row[field], (dict, list)):
        return row[field]
    meta = row.get(METADATA)
    if isinstance(meta, dict) and field in meta:
        return meta[field]
    return None
