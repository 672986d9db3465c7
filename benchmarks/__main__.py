"""`make bench`: measure the tiny world, the pipeline and scoring; write BENCHMARKS.md.

The page holds the tables; the raw figures they are rendered from sit beside it in
BENCHMARKS.json. ``--sections`` runs some of them; the figures of the others are kept from the
last run (each section says when it was measured).

Ratios are measured within one run (these machines are noisy; absolute times drift). Nothing
here is asserted: the file records what was measured and the command that reproduces it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

# As the `rate` command does (rate.cli.main): OpenMP threads yield while they wait. Set before
# torch loads its OpenMP runtime; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from benchmarks.audit import bench_audit, render_audit
from benchmarks.batch import bench_batch, render_batch
from benchmarks.certify import bench_certify, render_certify
from benchmarks.pipeline import bench_pipeline, bench_reading, render_pipeline, render_reading
from benchmarks.profile import bench_profile, render_profile
from benchmarks.scoring import bench_scoring, render_scoring
from benchmarks.slurm import HEADING, write_section
from benchmarks.text import bench_text, render_text
from benchmarks.world import bench_eval, bench_rl, bench_world, render_world
from rate.errors import RateError
from rate.io import atomic_write_text
from rate.settings import setup_logging
from tinyworld.data import require_world

log = logging.getLogger(__name__)


SECTIONS = (
    "world", "pipeline", "reading", "scoring", "profile", "text", "batch", "audit", "certify",
)  # fmt: skip


def _rounded(v):
    if isinstance(v, float):
        return round(v, 3 if abs(v) >= 1e-3 else 9)
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    return v


def figures_path(page: Path) -> Path:
    """Where the raw figures of the page ``page`` are kept: beside it, as .json."""
    return page.with_suffix(".json")


def previous_figures(page: Path) -> dict:
    """The raw figures of the page's last run ({} when there are none or they cannot be read).

    A page written before the figures moved beside it carries them in its own json block.
    """
    try:
        if figures_path(page).exists():
            figures = json.loads(figures_path(page).read_text())
        else:
            text = page.read_text()
            figures = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    except (OSError, IndexError, json.JSONDecodeError):
        return {}
    return figures


def write_page(page: Path, figures: dict, command: str) -> None:
    """The figures beside the page, then the page rendered from them."""
    atomic_write_text(figures_path(page), json.dumps(_rounded(figures), indent=2) + "\n")
    atomic_write_text(page, render(figures, command))


def render(r: dict, command: str) -> str:
    # Tables from the figures as the file stores them, so that a later run that re-renders
    # the sections it kept writes the same digits (4.215 stored, 4.21 shown, not 4.22 first).
    r = _rounded(r)
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
        lines += render_world(r, measured.get("world"))
    if "demo_after_world_s" in r:
        lines += render_pipeline(r, measured.get("pipeline"))
    if "reading_n" in r:
        lines += render_reading(r, measured.get("reading"))
    if "drug" in r:
        lines += [*render_scoring(r)[:2], f"Measured {measured.get('scoring')}.", ""]
        lines += render_scoring(r)[2:]
    if "profile_n" in r:
        lines += render_profile(r, measured.get("profile"))
    if "requests_s" in r:
        lines += render_text(r, measured.get("text"))
    if "batch_prepare_s" in r:
        lines += render_batch(r, measured.get("batch"))
    if "audit_s" in r:
        lines += render_audit(r, measured.get("audit"))
    if "certify_runs" in r:
        lines += render_certify(r, measured.get("certify"))
    return "\n".join([*lines, "Raw figures: the .json of the same name beside this page."]) + "\n"


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except RateError as err:  # a bad --world or the like: one line, not a traceback
        print(f"python -m benchmarks: error: {err}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"))
    parser.add_argument(
        "--world", type=Path, help="reuse a built full world instead of timing a build"
    )
    # 300 steps, not fewer: a run's first steps pay one-time costs (allocations, warm caches)
    # that 100 steps would weigh three times as much, and the world's runs are 800 to 1,500.
    parser.add_argument(
        "--compare-steps",
        type=int,
        default=300,
        help="steps per round for the published-trainer / plain-loop / ours comparison",
    )
    # 7 rounds, not 3: the published trainer on two spinning threads takes 13-14 s a round
    # mostly and 16-21 s now and then, and a median of 3 gave 2.58x where 7 gave 2.29x
    # (experiments/rl_speed/README.md); the world section takes ~20 min.
    parser.add_argument(
        "--compare-rounds", type=int, default=7, help="interleaved rounds of that comparison"
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
    # Figures of an earlier layout of the pipeline section, now measured by "reading".
    for key in ("read_scored_jsonl_s", "effects_from_rows_1000_s"):
        results.pop(key, None)
    if "world" in sections:  # a new run replaces the old figures, full build included, and
        # those of the RL comparison's earlier layout (one process, one OpenMP setting)
        stale = ("build_s", "build_stages")
        earlier = ("anchor_", "plain_", "ours_", "rl_load_average", "omp_wait_policy")
        for key in [k for k in results if k.endswith(stale) or k.startswith(earlier)]:
            del results[key]
    measured = results.setdefault("measured", {})
    today = time.strftime("%Y-%m-%d")
    with tempfile.TemporaryDirectory(prefix="rate-bench-") as tmp_name:
        tmp = Path(tmp_name)
        world = args.world or args.keep or tmp / "full"
        if "world" in sections:
            results.update(bench_world(tmp, None if args.world else world, reused=args.world))
            results.update(bench_rl(world, tmp, args.compare_steps, args.compare_rounds))
            results.update(bench_eval(world))
            measured["world"] = today
        if "pipeline" in sections:
            if "world" not in sections:
                require_world(world)
            results.update(bench_pipeline(world, tmp))
            measured["pipeline"] = today
        if "reading" in sections:
            results.update(bench_reading(tmp))
            measured["reading"] = today
        if "scoring" in sections:
            results.update(bench_scoring())
            measured["scoring"] = today
        if "profile" in sections:
            results.update(bench_profile(tmp))
            measured["profile"] = today
        if "text" in sections:
            results.update(bench_text())
            measured["text"] = today
        if "batch" in sections:
            results.update(bench_batch())
            measured["batch"] = today
        if "audit" in sections:
            if "world" not in sections:
                require_world(world)
            results.update(bench_audit(world))
            measured["audit"] = today
        if "certify" in sections:
            if "world" not in sections:
                require_world(world)
            results.update(bench_certify(world))
            measured["certify"] = today
    command = "make bench" if args.world is None else "python -m benchmarks --world <built world>"
    previous = args.out.read_text() if args.out.exists() else ""
    write_page(args.out, results, command)
    # The SLURM section is measured on a cluster by benchmarks.slurm; keep it as it was.

    if HEADING in previous:
        kept = HEADING + previous.split(HEADING, 1)[1].split("\n## ", 1)[0]
        write_section(args.out, kept.rstrip("\n") + "\n")
    print(render(results, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
