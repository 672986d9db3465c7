"""Sharded scoring: score one contiguous part of the examples; merge the parts into one file.

``rate score_dataset --shard i/N`` scores shard i of N and writes it under
``data/scored/.shards/<input>.<key>/``; ``rate merge_scores --shards N`` checks that every
shard is there and was made from the same input by the same scorer, then writes the scored file
that an unsharded run writes, row for row.

Shards are whole chunks (``scoring.chunk_size`` examples): a shard starts where an unsharded
run's chunk starts, so the scorer sees the same chunks (and sorts their texts into the same
batches) and gives the same scores, bit for bit on a deterministic backend. The shard folder is
keyed by the input's content, the scoring template, the chunk and batch sizes and N, so a rerun
finds the shards that are already done and scores only the missing ones.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from rate.config import Config
from rate.errors import ConfigError, DataFileError, RateError
from rate.io import atomic_write_json, json_text, read_json, read_jsonl, write_jsonl
from rate.score.stage import ScoringInput, score_range, scoring_input, write_scored
from rate.store import Layout, meta_path

log = logging.getLogger(__name__)

# Counts that add up over shards; the rest of a shard's counts are recomputed for the merge.
_SUMMED = ("texts_scored", "texts_from_cache", "completions_missing", "resumed_examples")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` -> (i, N), with 0 <= i < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--shard {text!r}: expected I/N, e.g. --shard 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard {text!r}: need 0 <= I < N (shards are numbered from 0)")
    return i, n


def shard_range(n_rows: int, chunk_size: int, shard: int, n_shards: int) -> tuple[int, int]:
    """Rows [start, stop) of shard ``shard`` of ``n_shards``: whole chunks, spread evenly.

    When there are fewer chunks than shards, some shards are empty (start == stop).
    """
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} of {n_shards}")
    n_chunks = -(-n_rows // chunk_size)
    first = shard * n_chunks // n_shards
    last = (shard + 1) * n_chunks // n_shards
    return min(first * chunk_size, n_rows), min(last * chunk_size, n_rows)


def shard_key(config: Config, inp: ScoringInput, n_shards: int) -> str:
    """What makes shards mergeable: the same input content, template, sizes and N."""
    sc = config.scoring
    what = {
        "template": inp.template.record(),
        "chunk_size": sc.chunk_size,
        "batch_size": sc.batch_size,
        "shards": n_shards,
    }
    h = hashlib.sha256(json.dumps(what, sort_keys=True).encode() + b"\0")
    with open(inp.source, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def shard_folder(layout: Layout, inp: ScoringInput, key: str) -> Path:
    return layout.scored / ".shards" / f"{inp.source.name}.{key[:16]}"


def shard_file(folder: Path, shard: int, n_shards: int) -> Path:
    return folder / f"shard_{shard:03d}_of_{n_shards:03d}.jsonl"


def _is_done(path: Path) -> bool:
    # The record is written after the rows, so a shard with a record is complete.
    return path.is_file() and meta_path(path).is_file()


def missing_shards(
    config: Config, layout: Layout, n_shards: int, inp: ScoringInput | None = None
) -> list[int]:
    """Shards of the config's input (``inp``, if read already) that have no shard file yet."""
    inp = inp or scoring_input(config, layout)
    folder = shard_folder(layout, inp, shard_key(config, inp, n_shards))
    return [i for i in range(n_shards) if not _is_done(shard_file(folder, i, n_shards))]


def score_shard(config: Config, layout: Layout, shard: int, n_shards: int) -> Path:
    """Score shard ``shard`` of ``n_shards`` of the config's input; -> the shard file."""
    inp = scoring_input(config, layout)
    key = shard_key(config, inp, n_shards)
    path = shard_file(shard_folder(layout, inp, key), shard, n_shards)
    start, stop = shard_range(len(inp.rows), config.scoring.chunk_size, shard, n_shards)
    if _is_done(path):
        log.info("shard %d/%d of %s is already scored: %s", shard, n_shards, inp.source, path)
        return path
    log.info(
        "score_dataset shard %d/%d: examples %d-%d of %s (%d) with %s",
        shard,
        n_shards,
        start,
        stop - 1,
        inp.source.name,
        len(inp.rows),
        inp.template.name,
    )
    record: dict = {
        "shard": shard,
        "shards": n_shards,
        "rows": [start, stop],
        "key": key,
        "input": str(inp.source),
        "reward_key": inp.template.reward_key,
        "slurm_job": _slurm_job(),
    }
    if start == stop:
        # More shards than chunks: nothing to score, and no reason to load a model for it.
        log.warning(
            "shard %d/%d is empty: %d examples make %d chunk(s) of scoring.chunk_size=%d; "
            "lower chunk_size or slurm.shards to spread the work",
            shard,
            n_shards,
            len(inp.rows),
            -(-len(inp.rows) // config.scoring.chunk_size),
            config.scoring.chunk_size,
        )
        write_jsonl(path, [])
        atomic_write_json(meta_path(path), {**record, "scorer": None, "truncated_texts": 0})
        return path
    tag = f".shard{shard}of{n_shards}"
    result = score_range(config, layout, inp, inp.rows[start:stop], tag=tag)
    try:
        write_jsonl(path, result.rows)
        atomic_write_json(
            meta_path(path),
            {
                **record,
                "scorer": result.scorer,
                "truncated_texts": result.truncated,
                **result.counts,
            },
        )
    finally:
        result.state.lock.release()  # on failure the partial scores stay, for the rerun
    result.state.remove()
    log.info("wrote shard %d/%d: %s (%d examples)", shard, n_shards, path, len(result.rows))
    return path


def _slurm_job() -> str | None:
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else os.environ.get("SLURM_JOB_ID")


def merge_shards(
    config: Config,
    layout: Layout,
    n_shards: int,
    explain: Callable[[int], str] | None = None,
) -> Path:
    """Check all ``n_shards`` shards and write the one scored file; -> its path.

    ``explain(i)`` says where a missing shard's job and log are (the SLURM submitter knows).
    """
    inp = scoring_input(config, layout)
    key = shard_key(config, inp, n_shards)
    folder = shard_folder(layout, inp, key)
    paths = [shard_file(folder, i, n_shards) for i in range(n_shards)]
    missing = [i for i, p in enumerate(paths) if not _is_done(p)]
    if missing:
        lines = []
        for i in missing:
            start, stop = shard_range(len(inp.rows), config.scoring.chunk_size, i, n_shards)
            where = f": {explain(i)}" if explain else ""
            lines.append(f"  shard {i}/{n_shards} (examples {start}-{stop - 1}){where}")
        raise RateError(
            f"cannot merge the scores of {inp.source.name}: {len(missing)} of {n_shards} "
            f"shard(s) have no scores in {folder}:\n"
            + "\n".join(lines)
            + "\nRerun `make score_dataset` (or `rate submit score_dataset`) with the same config "
            "and input: it resubmits only the missing shards, then merges."
        )
    metas = [read_json(meta_path(p)) for p in paths]
    rows: list[dict] = []
    scorers = {}
    for i, (path, meta) in enumerate(zip(paths, metas, strict=True)):
        start, stop = shard_range(len(inp.rows), config.scoring.chunk_size, i, n_shards)
        part = read_jsonl(path) if start < stop else []
        expected = [r["index"] for r in inp.rows[start:stop]]
        if (
            meta.get("key") != key
            or meta.get("rows") != [start, stop]
            or [r.get("index") for r in part] != expected
        ):
            raise DataFileError(
                f"{path}: shard {i}/{n_shards} does not hold examples {start}-{stop - 1} of "
                f"{inp.source.name}; delete {folder} and score again"
            )
        if meta["scorer"] is not None:
            scorers[i] = meta["scorer"]
        rows.extend(part)
    if len({json_text(s, sort_keys=True) for s in scorers.values()}) > 1:
        detail = "; ".join(f"shard {i}: {s}" for i, s in scorers.items())
        raise DataFileError(
            f"the shards in {folder} were scored by different scorers ({detail}); delete the "
            "folder and score again with one scorer"
        )
    counts = {k: sum(m.get(k, 0) for m in metas) for k in _SUMMED}
    seconds = [m.get("seconds", 0.0) for m in metas]
    counts["seconds"] = round(max(seconds), 2)  # the shards ran side by side
    computed = counts["texts_scored"] - counts["texts_from_cache"]
    counts["texts_per_second"] = (
        round(computed / counts["seconds"], 1) if counts["seconds"] > 0 and computed else None
    )
    counts["shards"] = [
        {"shard": i, "slurm_job": m.get("slurm_job"), "seconds": m.get("seconds")}
        for i, m in enumerate(metas)
    ]
    scorer = next(iter(scorers.values()), None)
    truncated = sum(m.get("truncated_texts", 0) for m in metas)
    out = write_scored(config, layout, inp, rows, scorer, truncated, counts)
    shutil.rmtree(folder)  # merged; the shards would only take space
    log.info("merged %d shards into %s (%d examples)", n_shards, out, len(rows))
    return out
