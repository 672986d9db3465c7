"""`make bench`: measure the tiny world, the pipeline and scoring; write BENCHMARKS.md.

``--sections`` runs some of them; the figures of the others are kept from the file's last run
(each section says when it was measured).

Ratios are measured within one run (these machines are noisy; absolute times drift). Nothing
here is asserted: the file records what was measured and the command that reproduces it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rate.io import atomic_write_text
from rate.settings import setup_logging

log = logging.getLogger(__name__)


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def bench_world(tmp: Path, full: Path | None) -> dict:
    from rate.tinyrlhf.build import build_world
    from rate.tinyrlhf.worldconfig import load_world_config

    results = {}
    secs, info = timed(lambda: build_world(load_world_config(small=True), tmp / "small"))
    results["small_build_s"] = secs
    if full:
        secs, info = timed(lambda: build_world(load_world_config(), full))
        results["full_build_s"] = secs
        results["full_build_stages"] = info["timings"]
    return results


def bench_rl(world: Path, tmp: Path, plain_steps: int) -> dict:
    from rate.tinyrlhf.rl import load_rl_config, train_rl

    config = load_rl_config(world / "configs" / "default.json", ["log_every=1000"])
    full_s, _ = timed(lambda: train_rl(config, world, tmp / "rl_default"))
    short = load_rl_config(
        world / "configs" / "default.json", [f"steps={plain_steps}", "log_every=1000"]
    )
    fast_s, _ = timed(lambda: train_rl(short, world, tmp / "rl_fast"))
    plain_s, _ = timed(lambda: train_rl(short, world, tmp / "rl_plain", fast=False))
    return {
        "default_run_s": full_s,
        "default_steps": config.steps,
        "ours_steps_per_s": plain_steps / fast_s,
        "plain_steps_per_s": plain_steps / plain_s,
        "compare_steps": plain_steps,
    }


def bench_eval(world: Path) -> dict:
    from rate.tinyrlhf.data import load_labelled, load_prompts
    from rate.tinyrlhf.dev_eval import dev_evaluate
    from rate.tinyrlhf.evaluate import evaluate_policy, load_oracle
    from rate.tinyrlhf.models import load_policy, load_reward_model

    policy = load_policy(world / "runs" / "default-s800" / "checkpoint")
    ref, rm = load_policy(world / "policy"), load_reward_model(world / "reward_model")
    dev, gold = (
        load_prompts(world / "data" / "prompts_dev.jsonl"),
        load_labelled(world / "data" / "gold_calib.jsonl"),
    )
    dev_s, _ = timed(lambda: dev_evaluate(policy, ref, rm, dev, gold))
    oracle, _ = load_oracle(world)
    truth_s, _ = timed(lambda: evaluate_policy(policy, oracle, rm, ref, 500))
    return {"dev_eval_s": dev_s, "dev_prompts": len(dev), "truth_eval_s": truth_s}


def write_scored_file(path: Path, n: int, seed: int = 0) -> None:
    """A scored JSONL of n examples in the reference layout (short texts, synthetic scores)."""
    from rate.bench_effects import synthetic_scores

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
    from rate.bench_effects import bench_effects, synthetic_scores
    from rate.config import EffectsConfig
    from rate.datafiles import read_examples
    from rate.effects import compute_effects, effects_for_rows

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


SECTIONS = ("world", "pipeline", "scoring", "text", "batch")


def _rounded(v):
    if isinstance(v, float):
        return round(v, 3 if abs(v) >= 1e-3 else 9)
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    return v


def previous_figures(path: Path) -> dict:
    """The raw figures of the file's last run ({} when there is none or it cannot be read)."""
    try:
        text = path.read_text()
        figures = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    except (OSError, IndexError, json.JSONDecodeError):
        return {}
    if "measured" not in figures:  # files written before sections had their own dates
        date = re.search(r"measured (\d{4}-\d{2}-\d{2})", text)
        figures["measured"] = dict.fromkeys(("world", "pipeline"), date and date.group(1))
    return figures


def render(r: dict, command: str) -> str:
    measured = r.get("measured", {})
    lines = [
        "# Benchmarks",
        "",
        f"Reproduce with `{command}` (`--sections` runs some). Machine: {platform.machine()}, "
        f"{os.cpu_count()} CPUs, torch {torch.__version__} on {torch.get_num_threads()} threads.",
        "Times drift between runs on these machines; ratios are measured within one run.",
        "",
    ]
    if "small_build_s" in r:
        lines += _render_world(r, measured.get("world"))
    if "demo_after_world_s" in r:
        lines += _render_pipeline(r, measured.get("pipeline"))
    if "drug" in r:
        from rate.bench_scoring import render_scoring

        lines += [*render_scoring(r)[:2], f"Measured {measured.get('scoring')}.", ""]
        lines += render_scoring(r)[2:]
    if "requests_s" in r:
        from rate.bench_text import render_text

        lines += render_text(r, measured.get("text"))
    if "batch_prepare_s" in r:
        from rate.bench_batch import render_batch

        lines += render_batch(r, measured.get("batch"))
    lines += [
        "Raw figures:",
        "",
        "```json",
        json.dumps(_rounded(r), indent=2),
        "```",
    ]
    return "\n".join(lines) + "\n"


def _render_world(r: dict, date: str | None) -> list[str]:
    lines = [
        "## Tiny RLHF world (issue: foundation)",
        "",
        f"Measured {date}.",
        "",
        "| what | measured | goal |",
        "|---|---|---|",
    ]
    if "full_build_s" in r:
        st = r["full_build_stages"]
        lines.append(
            f"| full world build | {r['full_build_s']:.0f} s (SFT {st['sft_s']:.0f} s, reward model "
            f"{st['reward_model_s']:.0f} s, five RL runs + dev evals {st['runs_s']:.0f} s) | < 600 s |"
        )
    else:
        lines.append(
            "| full world build | not timed in this run (`--world` reused one) | < 600 s |"
        )
    lines += [
        f"| `--small` world build | {r['small_build_s']:.1f} s | < 60 s |",
        f"| default RL run ({r['default_steps']} steps) | {r['default_run_s']:.1f} s | < 25 s (published trainer: 50 s) |",
        f"| RL steps/s, ours vs plain loop ({r['compare_steps']} steps each) | {r['ours_steps_per_s']:.1f} vs "
        f"{r['plain_steps_per_s']:.1f} ({r['ours_steps_per_s'] / r['plain_steps_per_s']:.2f}x) | |",
        f"| development evaluation ({r['dev_prompts']} dev prompts) | {r['dev_eval_s']:.2f} s | |",
        f"| truth evaluation (500 prompts per family) | {r['truth_eval_s']:.2f} s | |",
        "",
        "The plain loop is the same trainer without the key/value cache in sampling and with each",
        "prompt re-encoded for every one of its samples (`train_rl(..., fast=False)`).",
        "",
    ]
    return lines


def _render_pipeline(r: dict, date: str | None) -> list[str]:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rate.bench", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument(
        "--world", type=Path, help="reuse a built full world instead of timing a build"
    )
    parser.add_argument(
        "--plain-steps", type=int, default=100, help="steps for the ours-vs-plain comparison"
    )
    parser.add_argument("--keep", type=Path, help="keep the full world built by the benchmark here")
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated, of {', '.join(SECTIONS)}; the others keep their last figures",
    )
    args = parser.parse_args(argv)
    sections = [x.strip() for x in args.sections.split(",") if x.strip()]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    setup_logging("INFO")
    os.environ.setdefault("RATE_PROGRESS", "0")
    results = previous_figures(args.out)
    if "world" in sections:  # a new build replaces the old figures, full build included
        for key in [k for k in results if k.endswith(("build_s", "build_stages"))]:
            del results[key]
    measured = results.setdefault("measured", {})
    today = time.strftime("%Y-%m-%d")
    with tempfile.TemporaryDirectory(prefix="rate-bench-") as tmp_name:
        tmp = Path(tmp_name)
        world = args.world or args.keep or tmp / "full"
        if "world" in sections:
            results.update(bench_world(tmp, full=None if args.world else world))
            results.update(bench_rl(world, tmp, args.plain_steps))
            results.update(bench_eval(world))
            measured["world"] = today
        if "pipeline" in sections:
            if "world" not in sections:
                from rate.tinyrlhf.data import require_world

                require_world(world)
            results.update(bench_pipeline(world, tmp))
            measured["pipeline"] = today
        if "scoring" in sections:
            from rate.bench_scoring import bench_scoring

            results.update(bench_scoring())
            measured["scoring"] = today
        if "text" in sections:
            from rate.bench_text import bench_text

            results.update(bench_text())
            measured["text"] = today
        if "batch" in sections:
            from rate.bench_batch import bench_batch

            results.update(bench_batch())
            measured["batch"] = today
    command = "make bench" if args.world is None else "python -m rate.bench --world <built world>"
    previous = args.out.read_text() if args.out.exists() else ""
    atomic_write_text(args.out, render(results, command))
    # The SLURM section is measured on a cluster by rate.bench_slurm; keep it as it was.
    from rate.bench_slurm import HEADING, write_section

    if HEADING in previous:
        kept = HEADING + previous.split(HEADING, 1)[1].split("\n## ", 1)[0]
        write_section(args.out, kept.rstrip("\n") + "\n")
    print(render(results, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
