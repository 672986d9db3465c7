"""A scored file as columns (one per field the estimators read), from rows or, for big files,
straight from pyarrow's JSON reader: the same columns either way.

The row format itself is :mod:`rate.records`'; this module only reads it in bulk.
"""

from __future__ import annotations

import codecs
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from rate.records import (
    CHECKS,
    COMPLETIONS,
    INDEX,
    METADATA,
    ORIGINAL,
    PERFECT,
    PLACEBO,
    PROMPT,
    TEXTS,
    W,
    check_labels,
    group_value,
    read_examples,
    reward_keys,
    score_table,
    w_values,
)

log = logging.getLogger(__name__)


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
    # (n,) the placebo rewrite's score, NaN where absent; None: no row has one.
    placebo: np.ndarray | None = None

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
            placebo=None if self.placebo is None else self.placebo[idx],
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
        placebo=(
            None
            if all(c.placebo is None for c in parts)
            else np.concatenate(
                [np.full(len(c), np.nan) if c.placebo is None else c.placebo for c in parts]
            )
        ),
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
    perfect, placebo = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    has_perfect, has_placebo = np.zeros(len(rows), dtype=bool), np.zeros(len(rows), dtype=bool)
    for i, r in enumerate(rows):
        s = r[reward_key] if isinstance(r.get(reward_key), dict) else {}
        if isinstance(s.get(PERFECT), (int, float)):
            perfect[i], has_perfect[i] = s[PERFECT], True
        v = s.get(PLACEBO)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            placebo[i], has_placebo[i] = v, True
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
        placebo=placebo if has_placebo.any() else None,
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


# Arrow's JSON reader recurses per level and kills the process (a segfault) somewhere past
# 5,000 levels; rate's files nest a few levels, so a file nested deeper than this is read
# row by row, whose reader names the line.
MAX_ARROW_DEPTH = 256


def _arrow_safe(path: Path, limit: int) -> bool:
    """Whether Arrow's reader may read ``path``: UTF-8 throughout (Arrow takes other bytes
    that the row reader refuses, and the two must agree), and no line that may nest JSON deeper
    than ``limit`` (a line with fewer opening brackets cannot; one with more has its running
    depth counted, brackets in strings too: an over-count sends a file to the row reader)."""
    opens, closes = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)
    decoder = codecs.getincrementaldecoder("utf-8")()
    with open(path, "rb") as f:
        for line in f:
            try:
                decoder.decode(line)
            except UnicodeDecodeError:
                return False
            if line.count(b"[") + line.count(b"{") <= limit:
                continue
            a = np.frombuffer(line, np.uint8)
            depth = np.cumsum(np.isin(a, opens).astype(np.int32) - np.isin(a, closes))
            if depth.max() > limit:
                return False
    return True


def _arrow_columns(
    path: Path,
    reward_key: str,
    group_by: str | None,
    with_checks: bool,
    completions: tuple[str, str, str] = COMPLETIONS,
) -> ScoreColumns | None:
    if not _arrow_safe(path, MAX_ARROW_DEPTH):  # the row reader names what is wrong
        return None
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
        if len(set(index)) < n:
            return None  # a repeated index: the row reader names both lines
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
    placebo = None
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
        if column.type.get_field_index(PLACEBO) >= 0:
            read = _numbers(_child(column, PLACEBO), n)
            if read is None:
                return None
            placebo = read[0] if read[1].any() else None
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
        reward_key in names, present, checks, groups, placebo=placebo,
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
