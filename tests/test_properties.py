"""Property-based tests (hypothesis) of the file readers and the estimators.

Readers: random valid rows come back exactly as written; random corruptions of them either
still read back as exactly what the file now says, or raise a RateError that names the file
and the line (or example) — never another exception. The columnar reader of scored files and
the row reader agree on every file. Estimators: equal to a plain reference written from the
definitions with Python's statistics module, for random scores.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rate.columns import columns_from_rows, score_columns
from rate.effects.estimators import Scores, estimate
from rate.errors import DataFileError, RateError
from rate.io import read_json, read_jsonl, write_jsonl
from rate.records import COMPLETIONS, read_examples

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_scalars |= st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=6)

texts = st.text(max_size=40)
scores = st.floats(-1e6, 1e6, allow_nan=False)


@st.composite
def examples(draw, n_min: int = 1, n_max: int = 12, key: str = "rm") -> list[dict]:
    """Valid rows of a scored file: W, three completions, a prompt, scores under ``key``."""
    n = draw(st.integers(n_min, n_max))
    rows = []
    for i in range(n):
        row = {
            "index": str(i),
            "w_original": draw(st.booleans()),
            "completions": {name: draw(texts) for name in COMPLETIONS},
            "reward_question": draw(texts),
        }
        if draw(st.booleans()):
            row[key] = {name: draw(scores) for name in COMPLETIONS}
        rows.append(row)
    return rows


def _new_file(folder: Path, suffix: str) -> Path:
    return folder / f"f{uuid.uuid4().hex[:8]}{suffix}"


# -- JSONL -------------------------------------------------------------------------------------


@SETTINGS
@given(rows=st.lists(json_objects, max_size=8))
def test_jsonl_rows_read_back_exactly(tmp_path, rows):
    path = _new_file(tmp_path, ".jsonl")
    write_jsonl(path, rows)
    assert read_jsonl(path) == rows


CORRUPTIONS = st.sampled_from(["cut", "garbage", "array", "bad_utf8", "drop_brace", "blank"])


@SETTINGS
@given(rows=st.lists(json_objects, min_size=1, max_size=8), how=CORRUPTIONS, data=st.data())
def test_corrupt_jsonl_reads_as_written_or_names_the_line(tmp_path, rows, how, data):
    path = _new_file(tmp_path, ".jsonl")
    write_jsonl(path, rows)
    lines = path.read_bytes().split(b"\n")[:-1]
    i = data.draw(st.integers(0, len(lines) - 1))
    line = lines[i]
    if how == "cut":
        line = line[: data.draw(st.integers(0, max(0, len(line) - 1)))]
    elif how == "garbage":
        line = line + data.draw(st.binary(min_size=1, max_size=5))
    elif how == "array":
        line = b"[" + line + b"]"
    elif how == "bad_utf8":
        line = line + b"\xff"
    elif how == "drop_brace":
        line = line[1:]
    else:
        line = b"   "
    lines[i] = line
    path.write_bytes(b"\n".join(lines) + b"\n")
    try:
        got = read_jsonl(path)
    except DataFileError as err:
        message = str(err)
        assert message.startswith(str(path)), message
        assert re.match(rf"{re.escape(str(path))}(:{i + 1}: |: not UTF-8)", message), message
        assert "\n" not in message
        return
    # Still valid JSON objects: exactly what the file says, line by line.
    want = [json.loads(x) for x in path.read_bytes().decode().split("\n") if x.strip()]
    assert got == want


# -- datasets ----------------------------------------------------------------------------------


@SETTINGS
@given(rows=examples())
def test_scored_and_rewritten_files_read_back_exactly(tmp_path, rows):
    scored = _new_file(tmp_path, ".jsonl")
    write_jsonl(scored, rows)
    assert read_examples(scored) == rows
    rewritten = _new_file(tmp_path, ".json")
    rewritten.write_text(
        json.dumps({r["index"]: {k: v for k, v in r.items() if k != "index"} for r in rows})
    )
    assert read_examples(rewritten) == rows


BREAKS = {
    "w_string": lambda r, v: r.update(w_original="yes"),
    "w_missing": lambda r, v: r.pop("w_original"),
    "texts_list": lambda r, v: r.update(completions=["a"]),
    "prompt_number": lambda r, v: r.update(reward_question=3),
    "score_string": lambda r, v: r.setdefault("rm", {}).update(original="high"),
    "score_bool": lambda r, v: r.setdefault("rm", {}).update(rewrite=True),
    "score_null": lambda r, v: r.setdefault("rm", {}).update(rewrite=None),
    "score_value": lambda r, v: r.update(rm=v),
    "completion_missing": lambda r, v: r["completions"].pop("rewrite"),
    "index_value": lambda r, v: r.update(index=v),
}


@SETTINGS
@given(
    rows=examples(n_min=2), how=st.sampled_from(sorted(BREAKS)), value=json_values, data=st.data()
)
def test_corrupt_rows_read_or_name_the_example(tmp_path, rows, how, value, data):
    i = data.draw(st.integers(0, len(rows) - 1))
    BREAKS[how](rows[i], value)
    path = _new_file(tmp_path, ".jsonl")
    write_jsonl(path, rows)
    try:
        got = read_examples(path)
    except DataFileError as err:
        if how == "index_value" and "repeats index" in str(err):  # v is another row's index
            assert re.match(
                rf"{re.escape(str(path))}: line \d+ repeats index .* of line \d+", str(err)
            )
            return
        assert str(err).startswith(f"{path}: example {i}: "), str(err)
        return
    if type(rows[i]["index"]) is int:
        rows[i]["index"] = str(rows[i]["index"])  # a number is read as the same index
    assert got == rows
    # The scores as the estimators see them: both readers agree, and say why a row is out.
    fast, slow = score_columns(path, "rm"), columns_from_rows(got, "rm")
    assert fast.index == slow.index and np.array_equal(fast.missing, slow.missing)
    assert np.array_equal(fast.scores, slow.scores, equal_nan=True)
    bad = slow.missing[i] or not np.isfinite(slow.scores[i]).all()
    assert bad or how in ("completion_missing", "score_value")


@SETTINGS
@given(text=st.text(max_size=200))
def test_any_text_that_is_not_json_names_the_file(tmp_path, text):
    path = _new_file(tmp_path, ".json")
    path.write_text(text, encoding="utf-8")
    try:
        json.loads(text)
    except ValueError:
        with pytest.raises(DataFileError, match=re.escape(str(path))):
            read_json(path)
    else:
        try:
            read_examples(path)
        except RateError as err:  # a JSON value that is not a dataset
            assert str(err).startswith(str(path))


# -- estimators --------------------------------------------------------------------------------


def _reference(w, o, r, rr) -> dict[str, float]:
    """The estimators from their definitions, in plain Python."""
    n1 = [i for i in range(len(w)) if w[i]]
    n0 = [i for i in range(len(w)) if not w[i]]
    sign = [1.0 if x else -1.0 for x in w]

    def mean_se(xs):
        if not xs:
            return math.nan, math.nan
        return statistics.fmean(xs), (
            statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else math.nan
        )

    def unpaired(a, b):
        if len(a) < 2 or len(b) < 2:
            return math.nan
        return math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))

    out = {}
    if n1 and n0:
        out["naive_effect"] = statistics.fmean(o[i] for i in n1) - statistics.fmean(
            o[i] for i in n0
        )
        out["naive_effect_stderr"] = unpaired([o[i] for i in n1], [o[i] for i in n0])
    single = [sign[i] * (o[i] - r[i]) for i in range(len(w))]
    rate = [sign[i] * (rr[i] - r[i]) for i in range(len(w))]
    for name, idx in (("ATT", n1), ("ATU", n0), ("ATE", range(len(w)))):
        out[f"{name}_single_rewrite"], out[f"{name}_single_rewrite_stderr"] = mean_se(
            [single[i] for i in idx]
        )
        key = f"{name}_rewritten_rewrite"
        out[key], out[f"{key}_stderr"] = mean_se([rate[i] for i in idx])
        arm1 = [rr[i] if w[i] else r[i] for i in idx]
        arm0 = [r[i] if w[i] else rr[i] for i in idx]
        out[f"{key}_stderr_unpaired"] = unpaired(arm1, arm0)
    return out


@SETTINGS
@given(rows=st.lists(st.tuples(st.booleans(), scores, scores, scores), min_size=1, max_size=40))
def test_estimators_match_the_plain_reference(rows):
    w, o, r, rr = (list(x) for x in zip(*rows, strict=True))
    got = estimate(Scores(np.array(w), np.array(o), np.array(r), np.array(rr)))
    want = _reference(w, o, r, rr)
    scale = max(1.0, *(abs(x) for x in o + r + rr))
    for key, value in want.items():
        if math.isnan(value):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9 * scale), key
    assert (got["Y1_count"], got["Y0_count"]) == (sum(w), len(w) - sum(w))
