"""The RATE pipeline's figures: the demo's wall time and treatment_effects at 1M examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rate.bench.effects import bench_effects, synthetic_scores
from rate.bench.timing import timed
from rate.config import EffectsConfig
from rate.effects.stage import compute_effects, effects_for_rows
from rate.records import read_examples


def write_scored_file(path: Path, n: int, seed: int = 0) -> None:
    """A scored JSONL of n examples in the reference layout (short texts, synthetic scores)."""

    s = synthetic_scores(n, seed)
    with open(path, "w") as f:
        for i in range(n):
            row = {
                "index": str(i),
                "w_original": bool(s.w[i]),
                "completions": {"original": "a", "rewrite": "b", "rewritten rewrite": "c"},
                "reward_question": "q",
                "rm": {
                    "original": float(s.original[i]),
                    "rewrite": float(s.rewrite[i]),
                    "rewritten rewrite": float(s.rewritten_rewrite[i]),
                },
            }
            f.write(json.dumps(row) + "\n")


def bench_pipeline(world: Path, tmp: Path, n_effects: int = 1_000_000) -> dict:
    """The demo's four stages once the world exists; treatment_effects on 1M examples."""

    # The command a user runs, in a fresh interpreter (imports included), on a built world.
    env = {**os.environ, "PROJECT_DIR": str(tmp / "demo"), "RATE_PROGRESS": "0"}
    command = [sys.executable, "-m", "rate.cli", "demo", "--world", str(world)]
    demo_s, _ = timed(lambda: subprocess.run(command, env=env, check=True, capture_output=True))
    core = bench_effects(n_effects, 1000)
    s = synthetic_scores(n_effects)
    compute_s, _ = timed(lambda: compute_effects(s, None, 1000, 0, 0.95))
    scored = tmp / "scored_1m.jsonl"
    write_scored_file(scored, n_effects)
    config = EffectsConfig(dataset_name="b", concept="c", score="rm", reward_key="rm")
    read_s, rows = timed(lambda: read_examples(scored))
    stage_s, _ = timed(lambda: effects_for_rows(rows, config, scored))
    return {
        "demo_after_world_s": demo_s,
        "effects_n": n_effects,
        "estimate_s": core["estimate_s"],
        "bootstrap_1000_s": core["bootstrap_s"],
        "compute_effects_1000_s": compute_s,
        "scored_mb": scored.stat().st_size / 1e6,
        "read_scored_jsonl_s": read_s,
        "effects_from_rows_1000_s": stage_s,
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
        f"| the same from a {r['effects_n']:,}-row scored JSONL ({r['scored_mb']:.0f} MB): "
        f"reading and checking the file, then extracting the scores and everything above | "
        f"{r['read_scored_jsonl_s']:.1f} s + {r['effects_from_rows_1000_s']:.1f} s | |",
        "",
        "Reading is Python's json parser (about 20 MB/s on this CPU); the goal of 10 s holds for",
        "the computation, not for parsing a quarter-gigabyte file.",
        "",
    ]
