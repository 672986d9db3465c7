"""The score cache (issue 47): a profile's originals are scored once per scorer, not once per
attribute; the output is the same with and without it; writers never share a file, so runs
at once (on NFS too) keep every score; a torn line is skipped; a changed scorer gets its own
folder; files and folders get GROUP_NAME's group."""

from __future__ import annotations

import grp
import multiprocessing
import os
import stat
from pathlib import Path

import pytest
import yaml

from rate.catalog import model_template
from rate.errors import DataFileError
from rate.io import read_json, read_jsonl
from rate.registry import Kind
from rate.score.backends import SCORERS
from rate.score.base import BadTextError, Scorer
from rate.score.cache import SHARD_SUFFIX, ScoreCache, scorer_identity, text_key
from rate.score.options import VaderOptions
from rate.score.stage import score_dataset, score_rows
from rate.score.vader import VaderScorer
from rate.store import Layout, meta_path
from tests.factories import STAMP, config, put

N = 12
PROMPT = "Write a movie review: "
WORDS = ("good", "bad", "great", "awful", "fine", "poor", "lovely", "dull")


class CountingVader(VaderScorer):
    """VADER that keeps every text it is asked to score (in this process)."""

    texts: list[str] = []

    def score(self, prompts, responses, on_texts=None):
        CountingVader.texts += responses
        return super().score(prompts, responses, on_texts)


@pytest.fixture
def counting(tmp_path, monkeypatch):
    """Scoring templates of a counting VADER backend (registered as a plugin's would be):
    ``counting``, the same scorer under another name, key and batch size, and one with
    another ``field``; -> the texts scored."""
    monkeypatch.setitem(
        SCORERS, "counting_vader", Kind(VaderOptions, "tests.score.test_cache:CountingVader")
    )
    folder = tmp_path / "templates" / "scoring_templates"
    folder.mkdir(parents=True)
    for name, keys in {
        "counting": {"reward_key": "counting"},
        "counting_renamed": {"reward_key": "other_key", "batch_size": 3},
        "counting_pos": {"reward_key": "counting_pos", "field": "pos"},
    }.items():
        data = {"name": name, "backend": "counting_vader", **keys}
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RATE_TEMPLATE_PATH", str(tmp_path / "templates"))
    CountingVader.texts = []
    return CountingVader.texts


def attribute_file(root: Path, attribute: str) -> Path:
    """A rewrites file of dataset ``attribute``: the same N originals for every attribute,
    rewrites of this attribute's own."""
    data = {}
    for i in range(N):
        a, b = WORDS[i % 8], WORDS[(i * 3 + 1) % 8]
        data[str(i)] = {
            "w_original": bool(i % 2),
            "completions": {
                "original": f"Review {i}: the film was {a}.",
                "rewrite": f"Review {i}: the film was {b}, says {attribute}.",
                "rewritten rewrite": f"Review {i}: the film was {a}, says {attribute} again.",
            },
            "reward_question": PROMPT,
        }
    name = f"{attribute}_{STAMP}_smoke_test.json"
    return put(root / "data" / "rewrites" / name, data)


def score(root: Path, attribute: str, model: str = "counting", *sets: str) -> Path:
    cfg = config(f"scoring.model={model}", f"scoring.dataset_name={attribute}", *sets)
    return score_dataset(cfg, Layout(root))


def shards(root: Path) -> list[Path]:
    return sorted(Layout(root).score_cache.glob(f"*/*{SHARD_SUFFIX}"))


def test_a_second_attribute_scores_only_its_new_texts_and_equals_a_run_without_cache(
    tmp_path, counting
):
    """Two attributes of a profile share their originals: the second run scores its 2N
    rewrites only, N x (1 + 2A) texts in all, and both files equal cache-off runs exactly.
    Chunks of 5 (12 examples: 5, 5, 2) mix cached and new texts in every chunk."""
    project, off = tmp_path / "cached", tmp_path / "off"
    for root in (project, off):
        attribute_file(root, "formal")
        attribute_file(root, "polite")
    chunks = "scoring.chunk_size=5"
    first = score(project, "formal", "counting", chunks)
    assert len(counting) == 3 * N
    counting.clear()
    second = score(project, "polite", "counting", chunks)
    assert sorted(counting) == sorted(
        t for r in read_jsonl(second) for n, t in r["completions"].items() if n != "original"
    )
    assert len(counting) == 2 * N
    meta = read_json(meta_path(second))
    assert (meta["texts_scored"], meta["texts_from_cache"], meta["truncated_texts"]) == (36, 12, 0)
    assert read_json(meta_path(first))["texts_from_cache"] == 0

    counting.clear()
    plain = [score(off, a, "counting", chunks, "scoring.cache=false") for a in ("formal", "polite")]
    assert len(counting) == 2 * 3 * N
    assert not Layout(off).score_cache.exists()
    assert read_jsonl(first) == read_jsonl(plain[0])
    assert read_jsonl(second) == read_jsonl(plain[1])
    # A third run of the same file scores nothing.
    counting.clear()
    score(project, "polite", "counting", chunks)
    assert counting == []


def test_a_changed_option_gets_its_own_folder_and_a_renamed_template_shares_one(tmp_path, counting):
    """VADER's ``pos`` share is another score than its compound: nothing is reused. The same
    options under another template name, reward key and batch size are the same scorer."""
    attribute_file(tmp_path, "formal")
    score(tmp_path, "formal")
    score(tmp_path, "formal", "counting_renamed")
    assert len(counting) == 3 * N  # the renamed template scored nothing
    score(tmp_path, "formal", "counting_pos")
    assert len(counting) == 2 * 3 * N
    folders = sorted(p.name for p in Layout(tmp_path).score_cache.iterdir())
    assert len(folders) == 2 and all(f.startswith("counting_vader-") for f in folders)
    records = [read_json(Layout(tmp_path).score_cache / f / "scorer.json") for f in folders]
    assert sorted(r["scorer"]["field"] for r in records) == ["compound", "pos"]


def test_a_local_model_folder_is_part_of_the_identity(tmp_path):
    """A model folder is digested by content: new weights under the same path are another
    scorer (the scorer is not built: the identity needs its description only)."""

    class Described(Scorer):
        def score(self, prompts, responses, on_texts=None):
            raise AssertionError("not called")

    folder = tmp_path / "rm"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights 1")
    template = model_template(str(folder))
    before = scorer_identity(template, Described())
    assert scorer_identity(template, Described()) == before
    (folder / "model.safetensors").write_bytes(b"weights 2")
    after = scorer_identity(template, Described())
    assert after["model"] != before["model"] and after["settings"] == before["settings"]


def _write(folder: Path, start: int, stop: int, barrier) -> None:
    """One writer: keys start..stop-1, 7 to an append, after both writers are ready."""
    cache = ScoreCache(folder)
    barrier.wait()
    for i in range(start, stop, 7):
        keys = [text_key(PROMPT, f"text {k}") for k in range(i, min(i + 7, stop))]
        cache.add(keys, [k / 8 for k in range(i, min(i + 7, stop))])
    cache.close()


def _score(root: str, attribute: str, barrier) -> None:
    barrier.wait()
    score(Path(root), attribute, "vader", "scoring.chunk_size=2")


def test_two_processes_writing_at_once_leave_every_key_once_with_its_value(tmp_path):
    """Real processes append to the cache at the same time, with overlapping keys: each has
    its own shard, and the union holds every key with its value (k / 8: exact in binary)."""
    folder = tmp_path / "cache"
    folder.mkdir()
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(target=_write, args=(folder, a, b, barrier))
        for a, b in ((0, 3000), (1000, 4000))
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    files = sorted(folder.glob(f"*{SHARD_SUFFIX}"))
    assert len(files) == 2 and [len(f.read_text().splitlines()) for f in files] == [3000, 3000]
    union = ScoreCache(folder).load().scores
    assert union == {text_key(PROMPT, f"text {k}"): k / 8 for k in range(4000)}


def test_two_score_dataset_runs_at_once_share_the_cache(tmp_path):
    """Two attributes scored by two processes at once (the originals by both, since neither
    has finished): both files equal cache-off runs, and the cache holds every text of both
    once, with VADER's score."""
    off = tmp_path / "off"
    for root in (tmp_path, off):
        attribute_file(root, "formal")
        attribute_file(root, "polite")
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(target=_score, args=(str(tmp_path), a, barrier)) for a in ("formal", "polite")
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    outs = sorted((tmp_path / "data" / "scored").glob("*.jsonl"))
    plain = [
        score(off, a, "vader", "scoring.chunk_size=2", "scoring.cache=false")
        for a in ("formal", "polite")
    ]
    assert [read_jsonl(p) for p in outs] == [read_jsonl(p) for p in plain]
    want = {
        text_key(PROMPT, t): r["vader"][n]
        for p in plain
        for r in read_jsonl(p)
        for n, t in r["completions"].items()
    }
    assert len(want) == 5 * N
    folder = next(Layout(tmp_path).score_cache.iterdir())
    assert ScoreCache(folder).load().scores == want
    lines = [line for s in shards(tmp_path) for line in s.read_text().splitlines()]
    assert 5 * N <= len(lines) <= 6 * N  # the originals at most twice, one shard each


def test_a_torn_line_is_skipped_and_its_text_scored_again(tmp_path, counting):
    """A kill in the middle of an append leaves a last line without its newline: the reader
    skips it (and lines that do not read), and the rerun scores that one text again."""
    attribute_file(tmp_path, "formal")
    first = score(tmp_path, "formal")
    (shard,) = shards(tmp_path)
    data = shard.read_bytes()
    shard.write_bytes(data[:-4])  # the last line loses its newline and 3 digits
    counting.clear()
    again = score(tmp_path, "formal")
    assert len(counting) == 1
    assert read_jsonl(again) == read_jsonl(first)
    # Damaged lines of every kind are passed over; whole ones are read.
    good = text_key(PROMPT, "kept")
    bad = (
        f"{good}\t0.25\n".encode()
        + b"\0" * 30
        + b"\n"
        + f"{text_key(PROMPT, 'x')}\tnan\n".encode()
        + f"{text_key(PROMPT, 'y')}\t1e400\n".encode()
        + f"{text_key(PROMPT, 'z')[:40]}\t0.5\n".encode()
        + f"{text_key(PROMPT, 'w')}\t0.1".encode()
    )
    (shard.parent / f"other{SHARD_SUFFIX}").write_bytes(bad)
    scores = ScoreCache(shard.parent).load().scores
    assert scores[good] == 0.25 and len(scores) == 3 * N + 1


def _shard_of(folder: Path, name: str, values: dict[str, float]) -> None:
    lines = "".join(f"{text_key(PROMPT, t)}\t{v!r}\n" for t, v in values.items())
    (folder / f"{name}{SHARD_SUFFIX}").write_text(lines)


def test_scores_of_one_text_from_two_runs_must_agree(tmp_path):
    """Batch-dependent rounding: the first shard's score (by name) is used. A score far from
    the other: an error that names both shards and says what to do."""
    folder = tmp_path / "cache"
    folder.mkdir()
    _shard_of(folder, "a-1", {"one": 0.5, "two": 2.0})
    _shard_of(folder, "b-2", {"one": 0.5, "two": 2.0 + 1e-5, "three": -1.0})
    scores = ScoreCache(folder).load().scores
    assert scores[text_key(PROMPT, "two")] == 2.0 and len(scores) == 3
    _shard_of(folder, "c-3", {"one": 0.9})
    with pytest.raises(DataFileError) as err:
        ScoreCache(folder).load()
    message = str(err.value)
    assert "a-1.tsv and c-3.tsv hold different scores of one text (0.5 and 0.9)" in message
    assert "delete the folder" in message and "scoring.cache: false" in message


class _Picky(Scorer):
    """Scores a text by its length; cannot read a text that says BAD."""

    def score(self, prompts, responses, on_texts=None):
        for i, text in enumerate(responses):
            if "BAD" in text:
                raise BadTextError(i, "response", "says BAD")
        return [float(len(t)) for t in responses]


def test_a_bad_text_among_cached_ones_is_named_by_its_own_example(tmp_path):
    """The scorer sees only the texts the cache lacks; the message still names the example
    and completion of the bad text."""
    rows = [
        {
            "index": str(i),
            "w_original": True,
            "reward_question": PROMPT,
            "completions": {"original": f"o{i}", "rewrite": f"r{i}", "rewritten rewrite": f"x{i}"},
        }
        for i in range(2)
    ]
    cache = ScoreCache(tmp_path)
    cache.add([text_key(PROMPT, "o0"), text_key(PROMPT, "o1")], [7.0, 8.0])
    out, counts = score_rows(rows, _Picky(), "k", 2, [], cache=cache)
    assert out[1]["k"] == {"original": 8.0, "rewrite": 2.0, "rewritten rewrite": 2.0}
    assert counts["texts_from_cache"] == 2 and counts["texts_scored"] == 6
    rows[1]["completions"]["rewrite"] = "BAD"
    rows[1]["completions"]["original"] = "new"
    with pytest.raises(DataFileError, match="example 1, completion 'rewrite': the text says BAD"):
        score_rows(
            rows,
            _Picky(),
            "k",
            2,
            [],
            source=tmp_path / "d.json",
            cache=ScoreCache(tmp_path).load(),
        )


def _group() -> grp.struct_group:
    """A group other than this process's own where one can be given (root: any)."""
    others = [g for g in os.getgroups() if g != os.getgid()]
    if os.geteuid() == 0:
        others += [g.gr_gid for g in grp.getgrall() if g.gr_gid != os.getgid()]
    return grp.getgrgid(others[0] if others else os.getgid())


def test_cache_files_and_folders_get_group_name_under_a_strict_umask(tmp_path, monkeypatch):
    group = _group()
    monkeypatch.setenv("GROUP_NAME", group.gr_name)
    attribute_file(tmp_path, "formal")
    old = os.umask(0o077)
    try:
        score(tmp_path, "formal", "vader")
    finally:
        os.umask(old)
    root = Layout(tmp_path).score_cache
    (folder,) = root.iterdir()
    paths = [root, folder, *folder.iterdir()]
    assert {p.name for p in folder.iterdir()} >= {"scorer.json"} and len(paths) == 4
    for path in paths:
        mode = stat.S_IMODE(path.stat().st_mode)
        want = 0o750 if path.is_dir() else 0o640
        assert (mode, path.stat().st_gid) == (want, group.gr_gid), path


def test_text_keys_tell_the_prompt_from_the_text():
    assert text_key("ab", "c") != text_key("a", "bc")
    assert text_key("a\0", "b") != text_key("a", "\0b")
    assert text_key("\ud800", "x") == text_key("\ud800", "x")  # a lone surrogate hashes too
    assert len(text_key("", "")) == 64
