"""Stage 2, score_dataset: score every completion of every example; resumable.

Scores go under the template's reward_key, as the reference writes them, so scoring a scored
file adds a reward model beside the others. Examples go to the scorer in chunks
(``scoring.chunk_size``), whose texts the scorer sorts by length into batches; progress is
written to a partial file after every chunk (flushed and fsynced). A run that is killed resumes
after the last complete chunk, and the final file is renamed into place only when every example
is scored. With ``scoring.cache`` (the default), texts this scorer scored before, in any file
and any run, take their score from the project's score cache (:mod:`rate.score.cache`) and only
the others go to the scorer; their scores join the cache as each chunk finishes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from rate.catalog import scoring_template_of
from rate.config import Config, config_record
from rate.errors import ConfigError, DataFileError, RateError, TemplateError
from rate.progress import progress
from rate.records import (
    INDEX,
    completions_of,
    count_texts,
    missing_completions,
    read_examples,
    reward_keys,
    scored_writer,
    with_scores,
)
from rate.score.backends import build_scorer
from rate.score.base import BadBatchError, BadTextError, Scorer, TextsDone, checked_scores
from rate.score.cache import ScoreCache, text_key
from rate.score.partial import PartialScores, ScoreLock
from rate.store import (
    Layout,
    publish,
    resolve_input,
    rewrites_stems,
    scored_name,
    scored_stem,
    scored_stems,
)
from rate.templates import ScoringTemplate, scoring_template_names

log = logging.getLogger(__name__)


def score_rows(
    rows: list[dict],
    scorer: Scorer,
    reward_key: str,
    chunk_size: int,
    done: list[dict],
    sink=None,
    source: Path | None = None,
    cache: ScoreCache | None = None,
) -> tuple[list[dict], dict]:
    """Score every completion of ``rows`` after the ``done`` ones; -> (scored rows, counts).

    Rows go to the scorer ``chunk_size`` examples at a time; chunks start at multiples of
    ``chunk_size`` from the first row, so a resumed run hands the scorer the same chunks as an
    uninterrupted one and gets the same scores (bit for bit where the backend is deterministic,
    as on the CPU). With a ``cache``, a chunk's texts that are in it are not scored again.
    """
    if len(done) > len(rows) or any(
        d.get(INDEX) != r[INDEX] for d, r in zip(done, rows, strict=False)
    ):
        raise RateError("the partial scores do not match the input; delete the .partial file")
    if len(done) % chunk_size and len(done) < len(rows):
        raise RateError("partial scores must cover whole chunks; trim them to a multiple")
    out = list(done)
    missing: list[tuple[str, str]] = []
    start = len(done)
    t0 = time.perf_counter()
    n_texts = n_cached = 0
    bar = progress(None, f"score {reward_key}", count_texts(rows[start:]), unit="text")
    reported = 0

    def report(n: int) -> None:
        nonlocal reported
        reported += n
        bar.update(n)

    try:
        for i in range(start, len(rows), chunk_size):
            chunk = rows[i : i + chunk_size]
            prompts, texts, slots = completions_of(chunk)
            missing += missing_completions(chunk)
            reported = 0
            try:
                scores, hits = _chunk_scores(scorer, cache, prompts, texts, report, chunk[0][INDEX])
            except BadTextError as err:
                j, name = slots[err.position]
                where = f"{source}: " if source is not None else ""
                raise DataFileError(
                    f"{where}example {chunk[j][INDEX]}, completion {name!r}: the "
                    f"{'prompt' if err.part == 'prompt' else 'text'} {err.reason}; fix or "
                    "remove that example, or score with a scorer that reads such text"
                ) from None
            except BadBatchError as err:  # the template's own function failed
                j, name = slots[err.position]
                where = f"{source}: " if source is not None else ""
                raise TemplateError(
                    where + err.naming(f"{chunk[j][INDEX]} (completion {name!r})")
                ) from None
            bar.update(len(texts) - reported)  # cached texts, and backends that do not report
            n_texts += len(texts)
            n_cached += hits
            per_row: list[dict] = [{} for _ in chunk]
            for (j, name), s in zip(slots, scores, strict=True):
                per_row[j][name] = s
            scored = [with_scores(row, reward_key, per_row[j]) for j, row in enumerate(chunk)]
            out.extend(scored)
            if sink is not None:
                sink(scored)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    if missing:
        shown = ", ".join(f"{i} ({name})" for i, name in missing[:10])
        log.warning(
            "%s%d completion(s) are missing or not text and were not scored (examples %s%s); "
            "treatment_effects will refuse those examples unless effects.drop_incomplete: true; "
            "to score them, give them text and rerun",
            f"{source}: " if source is not None else "",
            len(missing),
            shown,
            " ..." if len(missing) > 10 else "",
        )
    computed = n_texts - n_cached  # texts_scored counts the cached texts too
    return out, {
        "texts_scored": n_texts,
        "texts_from_cache": n_cached,
        "completions_missing": len(missing),
        "examples_missing_completions": sorted({i for i, _ in missing}, key=_index_order)[:100],
        "resumed_examples": start,
        "seconds": round(seconds, 2),
        "texts_per_second": round(computed / seconds, 1) if seconds > 0 and computed else None,
    }


def _chunk_scores(
    scorer: Scorer,
    cache: ScoreCache | None,
    prompts: list[str],
    texts: list[str],
    report: TextsDone,
    first: str,
) -> tuple[list[float], int]:
    """The scores of one chunk's texts: the cache's, and the scorer's for the others (which
    join the cache); -> (scores, how many came from the cache)."""
    if cache is None:
        raw = scorer.score(prompts, texts, on_texts=report)
        return checked_scores(scorer, len(texts), raw, first), 0
    keys = [text_key(p, t) for p, t in zip(prompts, texts, strict=True)]
    scores = cache.lookup(keys)
    todo = [i for i, s in enumerate(scores) if s is None]
    hits = [i for i, s in enumerate(scores) if s is not None]
    if hits:
        # Counted as if scored: the record's count of cut texts is the same with the cache.
        scorer.truncated += scorer.count_truncated(
            [prompts[i] for i in hits], [texts[i] for i in hits]
        )
    if todo:
        try:
            raw = scorer.score([prompts[i] for i in todo], [texts[i] for i in todo], report)
        except (BadTextError, BadBatchError) as err:
            err.position = todo[err.position]  # the chunk's position, for the message
            raise
        new = checked_scores(scorer, len(todo), raw, first)
        cache.add([keys[i] for i in todo], new)
        for i, s in zip(todo, new, strict=True):
            scores[i] = s
    return scores, len(hits)


def _index_order(index: str) -> tuple[int, str]:
    return (int(index), "") if index.isdigit() else (1 << 62, index)


@dataclass
class ScoringInput:
    """The file a scoring run reads, its rows, the scoring template and the output's name."""

    source: Path
    rows: list[dict]
    template: ScoringTemplate
    prefix: str  # the dataset name that output names start with


@dataclass
class ScoredRows:
    """Rows scored by `score_range`, with what the metadata records about them."""

    rows: list[dict]
    counts: dict
    truncated: int
    scorer: dict  # the scorer's describe()
    state: PartialScores  # the partial file, removed once the output is written


def scoring_input(config: Config, layout: Layout) -> ScoringInput:
    """Resolve and read the file the config scores; refuse one that has this reward key."""
    sc = config.need("scoring", "score_dataset")
    template = scoring_template_of(sc.model, sc.chat, sc.label)
    folder = layout.folder(sc.dataset_folder)
    ext = ".json" if sc.dataset_folder == "rewrites" else ".jsonl"
    if not sc.dataset_name and config.rewrites is None:
        raise ConfigError(
            "scoring.dataset_name is empty and the config has no rewrites section to take the "
            "name from: set scoring.dataset_name (the reference's configs do)"
        )
    prefix = sc.dataset_name or config.rewrites.dataset_name
    stems = (
        rewrites_stems(prefix)
        if sc.dataset_folder == "rewrites"
        else scored_stems(prefix, {*scoring_template_names(), template.name})
    )
    source = resolve_input(folder, sc.dataset_filename, stems, ext, config.smoke_test)
    rows = read_examples(source)
    key = template.reward_key
    if key in reward_keys(rows):
        raise DataFileError(
            f"{source}: already has scores under reward_key {key!r}; score the rewrites file "
            "instead, or use a scoring template with another reward_key"
        )
    return ScoringInput(source, rows, template, prefix)


def score_range(
    config: Config, layout: Layout, inp: ScoringInput, rows: list[dict], tag: str = ""
) -> ScoredRows:
    """Score ``rows`` (the whole input, or one shard of it), resuming from a partial file.

    ``rows`` must start at a multiple of ``scoring.chunk_size`` in the input, so that its
    chunks are the ones an unsharded run scores.
    """
    sc = config.scoring
    key = inp.template.reward_key
    # Before the model loads, so a second run on the same input stops at once.
    lock = ScoreLock(layout.scored, inp.source, key, tag)
    lock.acquire()  # released by state.remove() once the output is written, or on failure
    try:
        scorer = build_scorer(inp.template)
        if sc.batch_size:
            scorer.batch_size = sc.batch_size
        fingerprint = {**inp.template.record(), **scorer.describe(), "chunk_size": sc.chunk_size}
        state = PartialScores(layout.scored, inp.source, key, fingerprint, tag, lock)
        cache = None
        if sc.cache:
            wanted = {text_key(p, t) for p, t in zip(*completions_of(rows)[:2], strict=True)}
            cache = ScoreCache.open(layout.score_cache, inp.template, scorer, wanted)
        try:
            return _score_locked(config, inp, rows, scorer, state, cache)
        finally:
            if cache is not None:
                cache.close()
    except BaseException:
        lock.release()
        raise


def _score_locked(
    config: Config,
    inp: ScoringInput,
    rows: list[dict],
    scorer: Scorer,
    state: PartialScores,
    cache: ScoreCache | None,
) -> ScoredRows:
    sc, key = config.scoring, inp.template.reward_key
    done = state.load()
    if len(done) < len(rows):
        # A kill while a chunk was being appended leaves part of it; that part is redone.
        done = done[: len(done) - len(done) % sc.chunk_size]
    if done:
        log.info("resuming: %d of %d examples already scored", len(done), len(rows))
    # Texts of resumed examples that were truncated count too (tokenising them is cheap).
    truncated_before = scorer.count_truncated(*completions_of(done)[:2]) if done else 0
    state.start(done)
    try:
        scored, counts = score_rows(
            rows, scorer, key, sc.chunk_size, done, state.append, inp.source, cache
        )
    finally:
        state.close()
    if cache is not None:
        log.info(
            "%d text(s) scored, %d taken from the score cache %s",
            counts["texts_scored"] - counts["texts_from_cache"],
            counts["texts_from_cache"],
            cache.folder,
        )
    return ScoredRows(scored, counts, truncated_before + scorer.truncated, scorer.describe(), state)


def write_scored(
    config: Config,
    layout: Layout,
    inp: ScoringInput,
    rows: list[dict],
    scorer: dict,
    truncated: int,
    counts: dict,
) -> Path:
    """Write the scored file and its metadata: one writer for whole runs and merged shards."""
    sc = config.scoring
    # The reference's name: <dataset>_<model>[_smoke_test]_scored_<stamp>.jsonl; a model added
    # to a scored file adds its name to that file's.
    stem = inp.prefix if sc.dataset_folder == "rewrites" else scored_stem(inp.source, inp.prefix)
    record = {
        "input": str(inp.source),
        "reward_key": inp.template.reward_key,
        "reward_keys": reward_keys(rows),
        "template": inp.template.record(),
        "scorer": scorer,
        # Texts longer than the model's limit were truncated by the template's policy.
        "truncated_texts": truncated,
        "config": config_record(config),
        "n_examples": len(rows),
        **counts,
    }
    return publish(
        layout.scored,
        scored_name(stem, inp.template.name),
        ".jsonl",
        config.smoke_test,
        scored_writer(rows),
        "score_dataset",
        record,
    )


def score_dataset(config: Config, layout: Layout) -> Path:
    """Run stage 2 with ``config``; -> the written scored file."""
    inp = scoring_input(config, layout)
    log.info(
        "score_dataset: %s with %s (%d examples)",
        inp.source.name,
        inp.template.name,
        len(inp.rows),
    )
    result = score_range(config, layout, inp, inp.rows)
    try:
        out = write_scored(
            config, layout, inp, result.rows, result.scorer, result.truncated, result.counts
        )
    except BaseException:
        result.state.lock.release()  # the partial scores stay, for the rerun
        raise
    result.state.remove()
    log.info(
        "wrote %s (%d examples, %s texts/s)",
        out,
        len(result.rows),
        result.counts["texts_per_second"],
    )
    return out
