"""`rate demo-text`: the real-text demo's command line (the tiny world's demos are its
plugin's).

The demos are imported when their command runs, not when the parser is built, so that
`rate --help` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rate.config import DEFAULT_CONFIG


def register(sub: argparse._SubParsersAction) -> None:
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


def cmd_demo_text(args: argparse.Namespace) -> int:
    from rate.demos.text import run_text_demo  # here, to keep `rate --help` fast

    return run_text_demo(args.config, args.smoke, args.verbose, args.rewriter)
