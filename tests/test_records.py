"""Scored files as columns: the columnar reader and the row reader give the same columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from rate.columns import _arrow_columns, columns_from_rows, score_columns
from rate.config import EffectsConfig
from rate.effects.stage import clean, effects_for_columns, effects_for_rows
from rate.errors import DataFileError
from rate.records import read_examples


def rows(n: int = 30, seed: int = 0, **extra) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        o, r, rr = rng.normal(size=3)
        out.append(
            {
                "index": str(i),
                "w_original": bool(i % 3),
                "completions": {"original": "a", "rewrite": "b", "rewritten rewrite": "c"},
                "reward_question": "q",
                "metadata": {"family": "dune" if i % 2 else "ember"},
                "checks": {
                    "rewrite": "ok",
                    "rewritten rewrite": "ok" if i % 5 else "missed_target",
                },
                "rm": {"original": o, "rewrite": r, "rewritten rewrite": rr, "perfect rewrite": r},
                **extra,
            }
        )
    return out


def write(path: Path, data: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    return path


def same(a, b) -> None:
    assert a.index == b.index and a.reward_keys == b.reward_keys and a.has_key == b.has_key
    for name in ("w", "missing", "has_perfect"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("scores", "perfect"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.checks == b.checks and a.groups == b.groups


def test_the_two_readers_agree_on_our_files(tmp_path):
    path = write(tmp_path / "s.jsonl", rows())
    fast = _arrow_columns(path, "rm", "family", True)
    assert fast is not None
    same(fast, columns_from_rows(read_examples(path), "rm", "family", True))


def test_reference_files_without_index_and_with_integer_scores(tmp_path):
    data = rows()
    for r in data:
        del r["index"], r["checks"], r["metadata"]
        r["rm"] = {"original": 1, "rewrite": 2, "rewritten rewrite": 3.5}
    path = write(tmp_path / "ref.jsonl", data)
    fast = _arrow_columns(path, "rm", None, False)
    assert fast is not None and fast.index[:3] == ["0", "1", "2"]
    same(fast, columns_from_rows(read_examples(path), "rm"))


def test_missing_scores_are_marked_alike(tmp_path):
    data = rows()
    del data[3]["rm"]["rewrite"]
    data[4]["rm"] = None
    del data[5]["rm"]
    path = write(tmp_path / "s.jsonl", data)
    fast = _arrow_columns(path, "rm", None, False)
    assert fast is not None and fast.missing.tolist()[3:6] == [True, True, True]
    same(fast, columns_from_rows(read_examples(path), "rm"))


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["rm"].update(original="high"),  # a string score
        lambda r: r["rm"].update(original=True),  # a bool score
        lambda r: r["checks"].pop("rewrite"),  # a pass without its label
        lambda r: r.update(w_original="yes"),  # a bad W: the row reader names it
    ],
)
def test_files_only_the_row_reader_reads_exactly_fall_back_to_it(tmp_path, change):
    data = rows()
    change(data[7])
    path = write(tmp_path / "s.jsonl", data)
    assert _arrow_columns(path, "rm", "family", True) is None
    try:
        expected = columns_from_rows(read_examples(path), "rm", "family", True)
    except Exception as err:  # the same error either way
        with pytest.raises(type(err), match=str(err)[:40]):
            score_columns(path, "rm", "family", True)
    else:
        same(score_columns(path, "rm", "family", True), expected)


@pytest.mark.parametrize(
    "keys", [{}, {"group_by": "family"}, {"only_successful_rewrites": True}, {"n_bootstrap": 50}]
)
def test_effects_are_byte_identical_from_either_reader(tmp_path, keys):
    path = write(tmp_path / "s.jsonl", rows(200, seed=3))
    ec = EffectsConfig(
        dataset_name="d", concept="c", score="s", reward_key="rm", **{"n_bootstrap": 0, **keys}
    )
    # As treatment_effects reads a file: its rewrite checks always (the output reports them).
    fast = effects_for_columns(score_columns(path, "rm", ec.group_by, True), ec, path)
    slow = effects_for_rows(read_examples(path), ec, path)
    assert json.dumps(clean(fast)) == json.dumps(clean(slow))


@pytest.mark.parametrize(
    ("first", "again", "blank"),
    [("99", "99", False), (99, "99", False), ("99", "99", True)],
    ids=["strings", "a number and its string", "after a blank line"],
)
def test_a_repeated_index_is_refused_by_both_readers_naming_both_lines(
    tmp_path, first, again, blank
):
    """main counted the example twice (issue 45): the row reader now names the file, both
    lines (lines of the file, blank ones counted) and the index; the columnar reader leaves
    such a file to it."""
    data = rows(8)
    data[1]["index"], data[5]["index"] = first, again
    text = "".join(json.dumps(r) + "\n" for r in data)
    if blank:
        text = "\n" + text  # every row one line further down
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    lines = (2, 6) if not blank else (3, 7)
    message = (
        f"{path}: line {lines[1]} repeats index '99' of line {lines[0]}; each example appears "
        "once: remove the duplicate"
    )
    with pytest.raises(DataFileError) as err:
        read_examples(path)
    assert str(err.value) == message
    assert _arrow_columns(path, "rm", None, False) is None
    with pytest.raises(DataFileError, match=re.escape(message)):
        score_columns(path, "rm")


def test_a_row_without_index_repeating_anothers_position_is_refused(tmp_path):
    """The reference's rows carry no index and are indexed by position: a row of another
    tool that claims one of those positions is a repeat as well."""
    data = rows(4)
    for row in data:
        del row["index"]
    data[3]["index"] = "1"
    path = write(tmp_path / "s.jsonl", data)
    with pytest.raises(DataFileError, match="line 4 repeats index '1' of line 2"):
        read_examples(path)
