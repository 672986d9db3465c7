"""`rate study ...`: studies of the pipeline on real text (the tiny world's studies are
`rate world study ...`)."""

from __future__ import annotations

import argparse

from rate.cli_args import Number, add_out_argument, count
from rate.schema import SEED
from rate.settings import project_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "study",
        help="the paper's semi-synthetic length experiment on real text; the profile's check",
    )
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

    c = study.add_parser(
        "profile-check",
        help="rate profile against a known answer: the planted reward model on drug reviews",
        description="Profiles planted_minilm and minilm_sentiment on the same rule rewrites of "
        "the drug reviews and checks that the difference is the planted bonuses (within 2 SE) "
        "and that every planted attribute survives BH at 0.05 (docs/profile.md). Exits 1 when "
        "a check fails.",
    )
    c.add_argument("--attributes", default="all", help="'all' (the rule attributes) or names")
    c.add_argument("--n-examples", type=count(10**7), help="reviews per attribute (default 900)")
    c.add_argument("--smoke", action="store_true", help="smoke size: 60 reviews per attribute")
    add_out_argument(c, "a folder; default: PROJECT_DIR/profile_check")
    c.set_defaults(func=cmd_profile_check)


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


def cmd_profile_check(args: argparse.Namespace) -> int:
    from rate.fs import ensure_dir
    from rate.io import read_json
    from rate.profile.check import check_run, run_profiles, write_check

    out = ensure_dir(args.out or project_dir() / "profile_check")  # fails now, not at the end
    run = run_profiles(out, args.attributes, args.n_examples, args.smoke)
    files = write_check(out, check_run(run, out))
    print(files[1].read_text(encoding="utf-8"))
    print(f"check: {', '.join(str(f) for f in files)}; the profiles in {out}/*/profile.md")
    return 0 if read_json(files[0])["passed"] else 1
