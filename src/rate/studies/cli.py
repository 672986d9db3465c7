"""`rate study ...`: studies of the pipeline on real text (the tiny world's studies are
`rate world study ...`)."""

from __future__ import annotations

import argparse

from rate.cli_args import Number, add_out_argument, count
from rate.schema import SEED
from rate.settings import project_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("study", help="the paper's semi-synthetic length experiment on real text")
    study = p.add_subparsers(dest="study", required=True, metavar="STUDY")

    t = study.add_parser(
        "semisynthetic-text",
        help="the paper's semi-synthetic length experiment on real drug reviews (offline)",
    )
    t.add_argument(
        "--n", type=count(10**7), help="examples per level; default: the most the pool allows"
    )
    t.add_argument("--repeats", type=count(10_000), default=1, help="draws per level, averaged")
    t.add_argument(
        "--pool", type=count(10**8), help="reviews drawn before dropping neutral ones; all"
    )
    t.add_argument("--seed", type=Number(int, SEED), default=0)
    add_out_argument(t, "default: PROJECT_DIR/plots/semisynthetic_text")
    t.set_defaults(func=cmd_semisynthetic_text)


def cmd_semisynthetic_text(args: argparse.Namespace) -> int:
    from rate.fs import ensure_dir
    from rate.studies.semisynthetic_text import result_table, run_semisynthetic_text

    out = ensure_dir(args.out or project_dir() / "plots" / "semisynthetic_text")  # fails now
    result = run_semisynthetic_text(
        out, n=args.n, repeats=args.repeats, seed=args.seed, pool_n=args.pool
    )
    print(result_table(result))
    print(f"\nwrote {out}/semisynthetic_text.json, .md and the figure ({result['seconds']} s)")
    return 0
