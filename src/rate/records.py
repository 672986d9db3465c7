"""The one row type of the pipeline's data files: build, read, write, and read scores back.

Rewritten datasets are JSON objects ``{index: example}``; scored datasets are JSONL, one example
per line. Every example is the reference pipeline's::

    {"w_original": bool, "completions": {"original": .., "rewrite": .., "rewritten rewrite": ..},
     "reward_question": str}

plus ours: ``key`` (a stable id), ``metadata`` (the source's fields), ``checks`` (the label of
each rewrite, :mod:`rate.rewrite.checks`) and, per reward model, ``{reward_key: {completion:
score}}``. Rows come back as dicts with an ``index`` (the JSON key, or the line number for the
reference's JSONL files, which carry none). Every field name of the format lives here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from rate.errors import DataFileError
from rate.io import json_writer, jsonl_writer, read_json, read_jsonl, write_temp

ORIGINAL, REWRITE, REWRITTEN = "original", "rewrite", "rewritten rewrite"
PERFECT = "perfect rewrite"  # the true counterfactual, where a rewriter knows it (tiny world)
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
    """Rows of a rewritten (.json) or scored (.jsonl) dataset, each with 'index'."""
    if path.suffix == ".jsonl":
        rows = read_jsonl(path)
        for i, row in enumerate(rows):
            index = row.setdefault(INDEX, str(i))
            if type(index) is int:  # a number written by another tool: the same index
                row[INDEX] = str(index)
            elif type(index) is not str:
                raise DataFileError(
                    f"{path}: example {i}: 'index' must be a string or an integer, got "
                    f"{text_preview(json.dumps(index), 40)}; fix it or remove the field"
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


# ---------------------------------------------------------------------------------------------
# A scored file as columns, for the estimators


@dataclass
class ScoreColumns:
    """What treatment_effects reads of a scored file under one reward key, a column each."""

    index: list[str]
    w: np.ndarray  # (n,) bool
    scores: np.ndarray  # (n, 3): COMPLETIONS' scores, NaN where missing or not a number
    missing: np.ndarray  # (n,) bool: a score is missing or not a number
    perfect: np.ndarray  # (n,) the perfect rewrite's score (NaN where absent)
    has_perfect: np.ndarray  # (n,) bool: the row has a numeric perfect-rewrite score
    has_key: bool  # some row has a field named as the reward key
    reward_keys: list[str]  # every reward key present (for messages)
    checks: list[dict | None] | None = None  # each row's rewrite checks, if asked for
    groups: list[Any] | None = None  # each row's value of the group_by field, if asked for
    # Per row, (completion, JSON type) of a score that is there but not a number, else None
    # (None for the whole file: no such score).
    wrong_type: list[tuple[str, str] | None] | None = None

    def __len__(self) -> int:
        return len(self.index)

    def take(self, idx: np.ndarray) -> ScoreColumns:
        """The rows at ``idx`` (positions), in that order."""
        pick = idx.tolist()
        return replace(
            self,
            index=[self.index[i] for i in pick],
            w=self.w[idx],
            scores=self.scores[idx],
            missing=self.missing[idx],
            perfect=self.perfect[idx],
            has_perfect=self.has_perfect[idx],
            checks=None if self.checks is None else [self.checks[i] for i in pick],
            groups=None if self.groups is None else [self.groups[i] for i in pick],
            wrong_type=None if self.wrong_type is None else [self.wrong_type[i] for i in pick],
        )


def concat_columns(parts: list[ScoreColumns], labels: list[str]) -> ScoreColumns:
    """Several files' columns as one, in order; each row's index is prefixed with its file's
    label and, where no group was read, its group is that label (the rows' source)."""
    return ScoreColumns(
        index=[f"{lab}:{i}" for c, lab in zip(parts, labels, strict=True) for i in c.index],
        w=np.concatenate([c.w for c in parts]),
        scores=np.concatenate([c.scores for c in parts]),
        missing=np.concatenate([c.missing for c in parts]),
        perfect=np.concatenate([c.perfect for c in parts]),
        has_perfect=np.concatenate([c.has_perfect for c in parts]),
        has_key=all(c.has_key for c in parts),
        reward_keys=list(dict.fromkeys(k for c in parts for k in c.reward_keys)),
        checks=None if any(c.checks is None for c in parts) else sum((c.checks for c in parts), []),
        groups=sum((c.groups or [lab] * len(c) for c, lab in zip(parts, labels, strict=True)), []),
    )


def columns_from_rows(
    rows: list[dict],
    reward_key: str,
    group_by: str | None = None,
    with_checks: bool = False,
    names: tuple[str, str, str] = COMPLETIONS,
) -> ScoreColumns:
    """The columns of rows read by :func:`read_examples` (``names``: see :func:`score_table`)."""
    table, missing, wrong = score_table(rows, reward_key, names)
    perfect = np.full(len(rows), np.nan)
    has_perfect = np.zeros(len(rows), dtype=bool)
    for i, r in enumerate(rows):
        v = r[reward_key].get(PERFECT) if isinstance(r.get(reward_key), dict) else None
        if isinstance(v, (int, float)):
            perfect[i], has_perfect[i] = v, True
    return ScoreColumns(
        index=[r[INDEX] for r in rows],
        w=w_values(rows),
        scores=table,
        missing=missing,
        perfect=perfect,
        has_perfect=has_perfect,
        has_key=any(reward_key in r for r in rows),
        reward_keys=reward_keys(rows),
        checks=[check_labels(r) for r in rows] if with_checks else None,
        groups=[group_value(r, group_by) for r in rows] if group_by else None,
        wrong_type=wrong if any(w is not None for w in wrong) else None,
    )


def score_columns(
    path: Path,
    reward_key: str,
    group_by: str | None = None,
    with_checks: bool = False,
    names: tuple[str, str, str] = COMPLETIONS,
) -> ScoreColumns:
    """The columns of a scored file: read by Arrow's JSON reader where the file is what our
    writers write (fast, columnar), else row by row with the exact checks and messages of
    :func:`read_examples`. Both give the same columns (``names``: see :func:`score_table`)."""
    if path.suffix == ".jsonl":
        columns = _arrow_columns(path, reward_key, group_by, with_checks, names)
        if columns is not None:
            return columns
    return columns_from_rows(read_examples(path), reward_key, group_by, with_checks, names)


_NUMBER = (pa.types.is_floating, pa.types.is_integer)


def _numbers(column: pa.ChunkedArray | None, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(values with NaN where null, validity) of a numeric column; None if it is not one."""
    if column is None:
        return np.full(n, np.nan), np.zeros(n, dtype=bool)
    if not any(is_type(column.type) for is_type in _NUMBER):
        return None
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    values = column.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    return values, valid


def _child(column: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    """A struct column's child, null where the parent is null."""
    return pc.struct_field(column, name)


def _arrow_columns(
    path: Path,
    reward_key: str,
    group_by: str | None,
    with_checks: bool,
    completions: tuple[str, str, str] = COMPLETIONS,
) -> ScoreColumns | None:
    try:
        table = pa_json.read_json(path, read_options=pa_json.ReadOptions(block_size=1 << 24))
    except (pa.ArrowInvalid, OSError) as err:
        log.debug("%s: row-by-row reading (%s)", path, err)
        return None
    n = table.num_rows
    names = set(table.column_names)
    if n == 0 or not {W, TEXTS, PROMPT} <= names:
        return None
    w, texts, prompt = table.column(W), table.column(TEXTS), table.column(PROMPT)
    if (
        not pa.types.is_boolean(w.type)
        or not pa.types.is_struct(texts.type)
        or not pa.types.is_string(prompt.type)
        or w.null_count
        or texts.null_count
        or prompt.null_count
    ):
        return None
    if INDEX in names:
        index_column = table.column(INDEX)
        if not pa.types.is_string(index_column.type) or index_column.null_count:
            return None
        index = index_column.to_pylist()
    else:
        index = [str(i) for i in range(n)]
    present = [
        c
        for c in table.column_names
        if c != TEXTS
        and pa.types.is_struct(table.column(c).type)
        and table.column(c).type.get_field_index(ORIGINAL) >= 0
    ]
    scores = np.full((n, len(COMPLETIONS)), np.nan)
    missing = np.ones(n, dtype=bool)
    perfect, has_perfect = np.full(n, np.nan), np.zeros(n, dtype=bool)
    if reward_key in names:
        column = table.column(reward_key)
        if not pa.types.is_struct(column.type):
            return None
        valid_all = np.ones(n, dtype=bool)
        for j, name in enumerate(completions):
            child = _child(column, name) if column.type.get_field_index(name) >= 0 else None
            read = _numbers(child, n)
            if read is None:
                return None
            scores[:, j], valid = read
            valid_all &= valid
        missing = ~valid_all
        scores[missing] = np.nan
        if column.type.get_field_index(PERFECT) >= 0:
            read = _numbers(_child(column, PERFECT), n)
            if read is None:
                return None
            perfect, has_perfect = read
    checks = groups = None
    if with_checks:
        checks = _checks(table, n)
        if checks is False:
            return None
    if group_by:
        groups = _groups(table, group_by)
        if groups is None:
            return None
    return ScoreColumns(
        index, w.to_numpy(zero_copy_only=False), scores, missing, perfect, has_perfect,
        reward_key in names, present, checks, groups,
    )  # fmt: skip


def _checks(table: pa.Table, n: int) -> list[dict | None] | bool:
    """Each row's checks, or False where only the row reader tells them exactly."""
    if CHECKS not in table.column_names:
        return [None] * n
    column = table.column(CHECKS)
    if not pa.types.is_struct(column.type) or column.null_count:
        return False
    for i in range(column.type.num_fields):
        child = _child(column, column.type.field(i).name)
        if not pa.types.is_string(child.type) or child.null_count:
            return False  # a row without some pass: its dict lacks the key, not a null
    return column.to_pylist()


def _groups(table: pa.Table, field: str) -> list[Any] | None:
    """Each row's value of ``field`` (a scalar column, else the metadata's), or None where only
    the row reader tells it exactly."""
    if field in table.column_names:
        column = table.column(field)
    elif METADATA in table.column_names and pa.types.is_struct(table.column(METADATA).type):
        meta = table.column(METADATA)
        if meta.type.get_field_index(field) < 0 or meta.null_count:
            return None
        column = _child(meta, field)
    else:
        return None
    if pa.types.is_nested(column.type) or column.null_count:
        return None
    return column.to_pylist()
