"""`rate demo` and `rate demo-text`: the demos' command lines.

The demos are imported when their command runs, not when the parser is built, so that
`rate --help` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rate.config import DEFAULT_CONFIG


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="the main job: RATE on the tiny world, checked against truth")
    p.add_argument(
        "--world", type=Path, help="world directory (default: PROJECT_DIR/tinyrlhf/world)"
    )
    p.add_argument("--small", action="store_true", help="use the small world (seconds, for tests)")
    p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="base experiment config")
    p.add_argument("--smoke", action="store_true", help="smoke-test sizes (60 examples)")
    p.add_argument("--runs", action="store_true", help="also print the world's RL runs table")
    p.add_argument(
        "--per-family", type=int, default=500, help="prompts per family for the runs table"
    )
    p.set_defaults(func=cmd_demo)
    t = sub.add_parser("demo-text", help="the pipeline on real drug reviews, offline (CPU)")
    t.add_argument("--config", type=Path, default=DEFAULT_CONFIG, help="base experiment config")
    t.add_argument("--smoke", action="store_true", help="smoke-test sizes")
    t.add_argument(
        "--rewriter",
        choices=("rules", "smollm2"),
        default="rules",
        help="rules: the English rewrite rules; smollm2: SmolLM2-135M-Instruct, a real instruct "
        "model shipped on PyPI, on the CPU (slow: a smoke run rewrites 4 reviews)",
    )
    t.set_defaults(func=cmd_demo_text)
    a = sub.add_parser(
        "demo-audit",
        help="the release story on the tiny world: audit, wrapper, corrected RL, certification, "
        "assessment, against the truth",
    )
    a.add_argument("--world", type=Path, help="default: PROJECT_DIR/tinyrlhf/world")
    a.add_argument("--small", action="store_true", help="the small world (for tests)")
    a.add_argument("--out", type=Path, help="default: PROJECT_DIR/audit_demo (a rerun reuses it)")
    a.add_argument("--steps", type=int, help="RL steps of the corrected run (default: 800)")
    a.add_argument("--per-family", type=int, default=500, help="evaluation prompts per family")
    a.set_defaults(func=cmd_demo_audit)


def cmd_demo(args: argparse.Namespace) -> int:
    from rate.demos.tinyworld import run_demo  # here, to keep `rate --help` fast

    return run_demo(
        args.world, args.small, args.config, args.smoke, args.runs, args.per_family, args.verbose
    )


def cmd_demo_text(args: argparse.Namespace) -> int:
    from rate.demos.text import run_text_demo  # here, to keep `rate --help` fast

    return run_text_demo(args.config, args.smoke, args.verbose, args.rewriter)


def cmd_demo_audit(args: argparse.Namespace) -> int:
    from rate.demos.audit_story import run_audit_demo  # here, to keep `rate --help` fast

    return run_audit_demo(args.world, args.small, args.out, args.steps, args.per_family)
