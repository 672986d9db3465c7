"""score_dataset's guards: one run per input and reward key, messages that name the file, the
example and the completion, missing completions counted, and VADER's cost bounded."""

from __future__ import annotations

import fcntl
import json
import os
import time

import pytest

from rate.catalog import load_scoring_template
from rate.errors import BusyError, DataFileError
from rate.io import read_json
from rate.score.backends import build_scorer
from rate.score.base import Scorer
from rate.score.partial import ScoreLock
from rate.score.stage import score_dataset, score_rows
from rate.store import Layout, meta_path
from tests.factories import config, english_examples, mini_project, put
from tinyworld.scorers import _encode

PROMPT = "dune v1 v3 v0 v7"
RESPONSE = "ba da pa ta ka ga ma na"


def test_a_second_run_on_the_same_input_stops_at_once_naming_the_first(tmp_path):
    """main: no lock; the second run resumed from the first one's live partial file and both
    wrote a scored file."""
    source = mini_project(tmp_path)
    held = ScoreLock(tmp_path / "data" / "scored", source, "vader")
    held.acquire()
    try:
        with pytest.raises(BusyError) as err:
            score_dataset(config(), Layout(tmp_path))
    finally:
        held.release()
    message = str(err.value)
    assert message.startswith(
        f"{source}: another score_dataset is scoring it under reward key 'vader'"
    )
    assert f"pid {os.getpid()} on " in message and "wait for it to finish" in message
    assert not list((tmp_path / "data" / "scored").glob("*.jsonl"))
    out = score_dataset(config(), Layout(tmp_path))  # the lock is free again
    assert meta_path(out).is_file()


def test_the_lock_is_free_after_a_run(tmp_path):
    source = mini_project(tmp_path)
    score_dataset(config(), Layout(tmp_path))
    lock = next((tmp_path / "data" / "scored" / ".partial").glob("*.lock"))
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds it
    finally:
        os.close(fd)
    assert source.is_file()


def test_a_bad_tiny_world_text_is_told_short():
    """main quoted the whole text (a 1,050,422-byte line) as 'response 150'."""
    huge = "zz " * 350_000
    with pytest.raises(DataFileError) as err:
        _encode([PROMPT, PROMPT], [RESPONSE, huge])
    message = str(err.value)
    assert len(message) < 400 and err.value.position == 1 and err.value.part == "response"
    assert "(1,050,000 characters)" in message and "350000 unknown syllable(s): 'zz'" in message


class _TinyStub(Scorer):
    """Reads texts as the tiny world's scorers do, without a world."""

    name = "stub"

    def score(self, prompts, responses, on_texts=None):
        _encode(prompts, responses)
        return [0.0] * len(responses)


def test_a_bad_text_names_the_file_the_example_and_the_completion(tmp_path):
    rows = []
    for i in range(3):
        texts = {"original": RESPONSE, "rewrite": RESPONSE, "rewritten rewrite": RESPONSE}
        rows.append(
            {"index": str(i), "w_original": True, "completions": texts, "reward_question": PROMPT}
        )
    rows[2]["completions"]["rewrite"] = "not a tiny text " * 1000
    source = tmp_path / "d.json"
    with pytest.raises(DataFileError) as err:
        score_rows(rows, _TinyStub(), "k", 2, [], source=source)
    message = str(err.value)
    assert message.startswith(f"{source}: example 2, completion 'rewrite': the text 'not a tiny")
    assert "(16,000 characters) is not a tiny-world response" in message
    assert "fix or remove that example" in message and len(message) < 500


def test_examples_that_lack_a_completion_are_counted_and_named(tmp_path, caplog):
    """main: exit 0 with completions_missing: 0."""
    data = english_examples(12)
    del data["3"]["completions"]["rewrite"]
    data["5"]["completions"]["original"] = None
    source = put(tmp_path / "data" / "rewrites" / "mini_20260101_120000_smoke_test.json", data)
    out = score_dataset(config(), Layout(tmp_path))
    meta = read_json(meta_path(out))
    assert meta["completions_missing"] == 2
    assert meta["examples_missing_completions"] == ["3", "5"]
    assert f"{source}: 2 completion(s) are missing or not text" in caplog.text
    assert "examples 3 (rewrite), 5 (original)" in caplog.text
    assert "effects.drop_incomplete" in caplog.text


def test_vader_cuts_long_texts_and_counts_them(tmp_path):
    """VADER is quadratic in length: main took ~30 s at 100k characters and ~50 minutes for
    1 MB; texts beyond max_chars are cut, as HF scorers cut at max_length, and counted."""
    scorer = build_scorer(load_scoring_template("vader"))
    long_text = "This is a good day. " * 50_000  # 1,000,000 characters
    start = time.perf_counter()
    cut, short = scorer.score(["", ""], [long_text, "A good day."])
    assert time.perf_counter() - start < 20
    assert scorer.truncated == 1 and scorer.count_truncated([""], [long_text]) == 1
    assert cut == pytest.approx(scorer.score([""], [long_text[:10_000]])[0])
    assert short == pytest.approx(scorer.score([""], ["A good day."])[0])
    assert scorer.describe()["max_chars"] == 10_000


def test_score_dataset_records_the_texts_vader_cut(tmp_path):
    data = english_examples(4)
    data["1"]["completions"]["rewrite"] = "Good. " * 3000  # 18,000 characters
    put(tmp_path / "data" / "rewrites" / "mini_20260101_120000_smoke_test.json", data)
    out = score_dataset(config(), Layout(tmp_path))
    assert read_json(meta_path(out))["truncated_texts"] == 1
    assert json.loads(out.read_text().splitlines()[1])["vader"]["rewrite"] > 0


def test_a_full_disk_while_scoring_is_told_naming_the_partial_file(tmp_path):
    """main: the append's clear error was replaced by a bare 'OSError: [Errno 28]' from closing
    the file (which flushed the failed chunk again), so `rate` said 'cannot write a file'."""
    import errno

    from rate.errors import WriteError
    from rate.score.partial import PartialScores

    class FullDisk:
        def write(self, data):
            return len(data)  # buffered: the disk is found full when flushed

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

        close = flush

        def fileno(self):
            return -1

    inp = tmp_path / "in.json"
    inp.write_text("{}")
    state = PartialScores(tmp_path, inp, "vader", {"backend": "vader"})
    state.start([])
    state.file.close()
    state.file = FullDisk()
    with pytest.raises(WriteError, match=r"cannot write .*\.partial.*No space left on device"):
        state.append([{"a": 1}])
    with pytest.raises(WriteError, match=r"cannot write .*\.partial.*No space left on device"):
        state.close()
    assert state.file is None
