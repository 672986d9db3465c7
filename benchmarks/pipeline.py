"""The RATE pipeline's figures: the demo's wall time and treatment_effects at 1M examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.effects import bench_effects, synthetic_scores
from benchmarks.timing import timed
from rate.columns import score_columns
from rate.config import EffectsConfig
from rate.effects.stage import clean, compute_effects, effects_for_columns, effects_for_rows
from rate.records import (
    COMPLETIONS,
    INDEX,
    PROMPT,
    TEXTS,
    W,
    read_examples,
    write_scored_rows,
)


def write_scored_file(path: Path, n: int, seed: int = 0) -> None:
    """A scored JSONL of n examples in the reference layout (short texts, synthetic scores)."""

    s = synthetic_scores(n, seed)
    texts = dict(zip(COMPLETIONS, "abc", strict=True))

    def rows():
        for i in range(n):
            scores = (s.original[i], s.rewrite[i], s.rewritten_rewrite[i])
            yield {
                INDEX: str(i),
                W: bool(s.w[i]),
                TEXTS: texts,
                PROMPT: "q",
                "rm": {c: float(v) for c, v in zip(COMPLETIONS, scores, strict=True)},
            }

    write_scored_rows(path, rows())


def bench_pipeline(world: Path, tmp: Path, n_effects: int = 1_000_000) -> dict:
    """The demo's four stages once the world exists; treatment_effects on 1M examples."""

    # The command a user runs, in a fresh interpreter (imports included), on a built world.
    env = {**os.environ, "PROJECT_DIR": str(tmp / "demo"), "RATE_PROGRESS": "0"}
    command = [sys.executable, "-m", "rate.cli", "demo", "--world", str(world)]
    demo_s, _ = timed(lambda: subprocess.run(command, env=env, check=True, capture_output=True))
    core = bench_effects(n_effects, 1000)
    s = synthetic_scores(n_effects)
    compute_s, _ = timed(lambda: compute_effects(s, None, 1000, 0, 0.95))
    return {
        "demo_after_world_s": demo_s,
        "effects_n": n_effects,
        "estimate_s": core["estimate_s"],
        "bootstrap_1000_s": core["bootstrap_s"],
        "compute_effects_1000_s": compute_s,
    }


def bench_reading(tmp: Path, n: int = 1_000_000) -> dict:
    """treatment_effects from a scored JSONL of n rows, end to end (read, check, extract,
    estimators, 1,000 bootstrap resamples): the columnar reader against the row reader, in one
    run, and whether the two effect files are byte for byte the same."""
    scored = tmp / "scored_1m.jsonl"
    write_scored_file(scored, n)
    config = EffectsConfig(dataset_name="b", concept="c", score="rm", reward_key="rm")

    def columnar() -> str:
        return json.dumps(clean(effects_for_columns(score_columns(scored, "rm"), config, scored)))

    def by_rows() -> str:
        return json.dumps(clean(effects_for_rows(read_examples(scored), config, scored)))

    columnar_s, a = timed(columnar)
    rows_s, b = timed(by_rows)
    read_s, _ = timed(lambda: score_columns(scored, "rm"))
    return {
        "reading_n": n,
        "scored_mb": scored.stat().st_size / 1e6,
        "effects_end_to_end_columnar_s": columnar_s,
        "effects_end_to_end_rows_s": rows_s,
        "read_columnar_s": read_s,
        "byte_identical": a == b,
    }


def render_pipeline(r: dict, date: str | None) -> list[str]:
    return [
        "## RATE pipeline (issue: the RATE pipeline)",
        "",
        f"Measured {date}.",
        "",
        "| what | measured | goal |",
        "|---|---|---|",
        f"| `rate demo` once the world exists: wall time of the command, imports included (3 "
        f"concepts x 2 scorers, 2,000 examples each, 1,000 bootstrap resamples, plots) | {r['demo_after_world_s']:.1f} s | < 120 s |",
        f"| treatment_effects computation on {r['effects_n']:,} examples: estimators, 1,000 "
        f"stratified bootstrap resamples, intervals | {r['compute_effects_1000_s']:.1f} s "
        f"(estimators {r['estimate_s']:.2f} s, bootstrap {r['bootstrap_1000_s']:.1f} s) | < 10 s |",
        "",
    ]


def render_reading(r: dict, date: str | None) -> list[str]:
    ratio = r["effects_end_to_end_rows_s"] / r["effects_end_to_end_columnar_s"]
    return [
        "## Reading scored files (issue: the renovation)",
        "",
        f"Measured {date}. treatment_effects from a {r['reading_n']:,}-row scored JSONL "
        f"({r['scored_mb']:.0f} MB), end to end: read, check, extract, estimators, 1,000 "
        "stratified bootstrap resamples; both readers in one run.",
        "",
        "| reader | end to end | goal |",
        "|---|---|---|",
        f"| columnar (Arrow's JSON reader; reading alone {r['read_columnar_s']:.1f} s) | "
        f"{r['effects_end_to_end_columnar_s']:.1f} s | < 8 s |",
        f"| row by row (Python's json, the exact fallback) | {r['effects_end_to_end_rows_s']:.1f} s "
        f"| |",
        "",
        f"The columnar reader is {ratio:.1f}x faster; the two effect files are "
        f"{'byte for byte the same' if r['byte_identical'] else 'DIFFERENT'}.",
        "",
    ]
