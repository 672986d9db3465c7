"""The local JSONL source's ids: each must be there and appear once, since an id names the
example's rewrites (issue 45: a repeated id passed without a word)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rate.datasets.base import SourceContext
from rate.datasets.options import JsonlSource
from rate.datasets.sources import JsonlStream
from rate.errors import DataFileError


def examples(tmp_path: Path, lines: list[str], **spec: str) -> list:
    """The examples of a reviews file of ``lines`` (JSON, or blank)."""
    (tmp_path / "reviews.jsonl").write_text("\n".join(lines) + "\n")
    source = JsonlSource(path="reviews.jsonl", text_field="review", prompt="Review: ", **spec)
    ctx = SourceContext(seed=0, template_path=str(tmp_path / "t.yaml"))
    (chunk,) = JsonlStream(source, ctx).chunks()
    return chunk


def review(i: object, text: str = "fine") -> str:
    return json.dumps({"id": i, "review": f"{text} {i}"})


def test_a_repeated_id_is_refused_naming_both_lines_and_the_id(tmp_path):
    # Line 5 (a blank line counted) repeats the id of line 2; 7 and "7" are one id.
    lines = [review("a"), review("b"), review(7), "", review("b", "again")]
    with pytest.raises(DataFileError) as err:
        examples(tmp_path, lines, id_field="id")
    assert str(err.value) == (
        f"{tmp_path / 'reviews.jsonl'}: line 5 repeats id 'b' (id_field 'id') of line 2; each "
        "example appears once: make the ids unique or remove the duplicate"
    )
    with pytest.raises(DataFileError, match="line 2 repeats id '7' .* of line 1"):
        examples(tmp_path, [review(7), review("7")], id_field="id")


def test_unique_ids_and_line_ids_pass(tmp_path):
    lines = [review(i) for i in range(5)]
    assert sorted(e.key for e in examples(tmp_path, lines, id_field="id")) == list("01234")
    # Without id_field, each row's count is its id (repeated texts are separate examples).
    same = [json.dumps({"review": "same"})] * 3
    assert sorted(e.key for e in examples(tmp_path, same)) == ["line1", "line2", "line3"]


def test_a_row_without_its_id_is_named(tmp_path):
    """main: a KeyError."""
    lines = [review("a"), json.dumps({"review": "no id", "stars": 3})]
    with pytest.raises(
        DataFileError, match="line 2 has no field 'id' \\(id_field\\); fields present: review"
    ):
        examples(tmp_path, lines, id_field="id")


def test_an_empty_file_is_named(tmp_path):
    """Issue 45: an empty JSONL source did not name its file."""
    with pytest.raises(DataFileError, match=r"reviews.jsonl: holds no example"):
        examples(tmp_path, [""])
