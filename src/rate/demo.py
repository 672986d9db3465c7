"""`rate demo`: the main job on the embedded default, the tiny RLHF world.

Builds the world under PROJECT_DIR if it is absent (or reuses it) and prints the runs table:
proxy reward, KL and true quality per family for the reference policy and every earlier run.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from rate.settings import project_dir

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="build the tiny world if needed and report its runs")
    p.add_argument(
        "--world", type=Path, help="world directory (default: PROJECT_DIR/tinyrlhf/world)"
    )
    p.add_argument("--small", action="store_true", help="use the small world (seconds, for tests)")
    p.add_argument("--per-family", type=int, default=500, help="evaluation prompts per family")
    p.set_defaults(func=run_demo)


def world_is_built(world: Path) -> bool:
    return (world / "world_info.json").is_file()


def run_demo(args: argparse.Namespace) -> int:
    from rate.tinyrlhf.build import build_world
    from rate.tinyrlhf.evaluate import evaluate_policy, load_oracle
    from rate.tinyrlhf.models import load_policy, load_reward_model
    from rate.tinyrlhf.report_table import quality_table
    from rate.tinyrlhf.worldconfig import load_world_config

    name = "world_small" if args.small else "world"
    world = args.world or project_dir() / "tinyrlhf" / name
    if world_is_built(world):
        log.info("reusing the world at %s", world)
    else:
        log.info("building the tiny RLHF world at %s (a few minutes on 2 cores)", world)
        build_world(load_world_config(small=args.small), world)
    oracle, _ = load_oracle(world)
    reference = load_policy(world / "policy")
    rm = load_reward_model(world / "reward_model")
    reports = {"reference": evaluate_policy(reference, oracle, rm, reference, args.per_family)}
    for run in sorted(p for p in (world / "runs").iterdir() if (p / "checkpoint").is_dir()):
        reports[run.name] = evaluate_policy(
            load_policy(run / "checkpoint"), oracle, rm, reference, args.per_family
        )
    print(f"\nTiny RLHF world at {world}")
    print(
        f"True quality is the oracle's expected expert label; {args.per_family} prompts per family.\n"
    )
    print(quality_table(reports))
    return 0
