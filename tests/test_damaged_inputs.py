"""Damaged inputs are one line naming the file and the key, never a traceback or a crash
(issue 45): JSON nested 100,000 deep, and an effect file with a section of the wrong type."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rate.columns import score_columns
from rate.errors import DataFileError
from rate.io import read_json, read_jsonl
from rate.results.table import read_effects, results_rows

DEEP = "[" * 100_000 + "]" * 100_000
ROOT = Path(__file__).resolve().parents[1]


def test_deep_json_is_named_not_a_recursion_error(tmp_path):
    (tmp_path / "a.json").write_text(DEEP)
    (tmp_path / "b.jsonl").write_text('{"index": "0"}\n{"index": "1", "x": ' + DEEP + "}\n")
    with pytest.raises(DataFileError, match="a.json: JSON nested too deeply"):
        read_json(tmp_path / "a.json")
    with pytest.raises(DataFileError, match="b.jsonl:2: JSON nested too deeply"):
        read_jsonl(tmp_path / "b.jsonl")


def test_a_deep_scored_line_never_reaches_arrows_reader(tmp_path):
    """Arrow's JSON reader killed the process (a segfault) on this line: run in a child, so
    a crash fails the test instead of the run."""
    path = tmp_path / "s.jsonl"
    path.write_text('{"index": "1", "x": ' + DEEP + "}\n")
    code = (
        "import sys; from pathlib import Path; from rate.columns import score_columns\n"
        "from rate.errors import DataFileError\n"
        "try: score_columns(Path(sys.argv[1]), 'rm')\n"
        "except DataFileError as err: print(err)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-500:]
    assert "s.jsonl:1: JSON nested too deeply" in out.stdout


def test_a_shallow_file_still_takes_arrows_reader(tmp_path, monkeypatch):
    row = {
        "w_original": True, "reward_question": "q", "index": "0",
        "completions": {"original": "a [[[", "rewrite": "b", "rewritten rewrite": "c"},
        "rm": {"original": 1.0, "rewrite": 2.0, "rewritten rewrite": 1.5},
    }  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "index": "1"}) + "\n")
    import rate.columns as columns

    monkeypatch.setattr(columns, "read_examples", lambda p: pytest.fail("row reader used"))
    assert list(score_columns(path, "rm").index) == ["0", "1"]


@pytest.mark.parametrize(
    ("section", "value", "key"),
    [
        ("intervals", "oops", "intervals"),
        ("intervals", {"normal": [1, 2]}, "intervals.normal"),
        ("truth", [1], "truth"),
        ("groups", {"a": 3}, "groups.a"),
        ("groups", {"a": {"intervals": "x"}}, "groups.a.intervals"),
    ],
)
def test_an_effect_file_with_a_section_of_the_wrong_type_is_one_line(tmp_path, section, value, key):
    """Issue 45: ``intervals: "oops"`` broke the whole ``rate results`` table
    (AttributeError)."""
    path = tmp_path / "e_treatment_effects.json"
    path.write_text(json.dumps({"naive_effect": 1.0, section: value}))
    with pytest.raises(DataFileError, match=rf"key '{key}' is \w+, not an object"):
        read_effects(path)
    with pytest.raises(DataFileError, match="the effect file is damaged"):
        results_rows([path])


def test_both_readers_refuse_a_file_that_is_not_utf8(tmp_path):
    """Issue 45: a non-UTF-8 scored file was refused by one reader and read by the other."""
    from rate.records import read_examples

    row = {
        "w_original": True, "reward_question": "q", "index": "0",
        "completions": {"original": "a", "rewrite": "b", "rewritten rewrite": "c"},
        "rm": {"original": 1.0, "rewrite": 2.0, "rewritten rewrite": 1.5},
    }  # fmt: skip
    data = (json.dumps(row) + "\n").encode().replace(b'"a"', b'"a\xff"')
    path = tmp_path / "s.jsonl"
    path.write_bytes(data + (json.dumps({**row, "index": "1"}) + "\n").encode())
    for read in (read_examples, lambda p: score_columns(p, "rm")):
        with pytest.raises(DataFileError, match="s.jsonl: not UTF-8 text"):
            read(path)
