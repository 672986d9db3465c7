"""`rate world study audit`: the audit on packaged and random worlds, against their truth."""

from __future__ import annotations

import argparse
from pathlib import Path

from rate.cli_args import Commas, add_out_argument, count
from rate.settings import project_dir
from tinyworld.cli_args import SEED_FLAG

# ``--random N`` takes the first N seeds of this draw: the acceptance seeds (experiments/audit).
RANDOM_DRAW = 20261206


def register_audit_study(study: argparse._SubParsersAction) -> None:
    a = study.add_parser(
        "audit",
        help="rate audit on packaged and random worlds, checked against their planted truth",
    )
    a.add_argument(
        "--names",
        help="packaged world configs (default: default,variant,noshortcuts, unless random "
        "worlds are asked for)",
    )
    a.add_argument(
        "--seeds", type=Commas(SEED_FLAG), help="random worlds (--world-config random --seed S)"
    )
    a.add_argument(
        "--random",
        type=count(1000, "worlds"),
        metavar="N",
        help="the random worlds of the first N seeds of the draw default_rng(--draw)"
        ".integers(2000, 10**6, N), the acceptance seeds of experiments/audit",
    )
    a.add_argument("--draw", type=SEED_FLAG, default=RANDOM_DRAW, help="the draw of --random")
    a.add_argument("--small", action="store_true", help="random worlds on the small config")
    a.add_argument(
        "--worlds",
        type=Path,
        help="where the worlds are (built there, without RL runs, when missing: random worlds "
        "as random-SEED; default: PROJECT_DIR/tinyrlhf/audit_worlds)",
    )
    add_out_argument(a, "output folder (default: PROJECT_DIR/audit/study)")
    a.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
        help="an audit setting (rate world audit --settings)",
    )  # fmt: skip
    a.set_defaults(func=cmd_audit_study)


def cmd_audit_study(args: argparse.Namespace) -> int:
    from rate.fs import ensure_dir
    from rate.io import atomic_write_json, atomic_write_text, json_safe
    from rate.schema import flat_assignments, from_dict
    from rate.store import timestamp
    from tinyworld import heap
    from tinyworld.audit.settings import AuditSettings
    from tinyworld.studies.audit import audit_study, random_seeds, study_table

    data = flat_assignments(args.overrides)
    settings = from_dict(AuditSettings, data, "rate world study audit --set")
    worlds = args.worlds or project_dir() / "tinyrlhf" / "audit_worlds"
    seeds = list(args.seeds or []) + (random_seeds(args.random, args.draw) if args.random else [])
    default = "" if seeds else "default,variant,noshortcuts"
    names = [n.strip() for n in (args.names or default).split(",") if n.strip()]
    out = ensure_dir(args.out or project_dir() / "audit" / "study")  # fails now, not after
    heap.keep_freed_memory()  # this command's process setting: it audits (tinyworld.heap)
    study = audit_study(names, worlds, settings, seeds, small=args.small)
    stem = out / f"audit_study_{timestamp()}"
    table = study_table(study)
    atomic_write_json(stem.with_suffix(".json"), json_safe(study))
    atomic_write_text(stem.with_suffix(".md"), table + "\n")
    print(table)
    print(f"\nwrote {stem}.json and .md")
    return 0
