"""`rate results`: every effect file (filtered) as one table in Markdown, CSV or JSON."""

from __future__ import annotations

import argparse
from pathlib import Path

from rate.cli_args import add_out_argument
from rate.results import FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "results",
        help="every effect file as one table: estimates, SEs, intervals, normalised effects, "
        "rewrite-success rates and groups (Markdown, CSV or JSON)",
    )
    p.add_argument(
        "files",
        nargs="*",
        type=Path,
        help="effect files (default: every one in PROJECT_DIR/effects)",
    )
    for flag, what in (
        ("--dataset", "dataset"),
        ("--concept", "concept"),
        ("--score", "reward model (effects.score)"),
    ):
        p.add_argument(
            flag,
            action="append",
            default=[],
            metavar="NAME",
            help=f"only this {what} (repeatable; a shell pattern such as 'imdb_*')",
        )
    p.add_argument(
        "--estimand", action="append", default=[], help="only ATE, ATT or ATU (repeatable)"
    )
    p.add_argument(
        "--method",
        action="append",
        default=[],
        help="only naive, single_rewrite, rate or rate_placebo (repeatable)",
    )
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("--smoke", action="store_true", help="only smoke-test files")
    kind.add_argument("--full", action="store_true", help="only full (non-smoke) files")
    p.add_argument(
        "--latest",
        action="store_true",
        help="only the newest file of each dataset, concept, score and run kind",
    )
    p.add_argument("--no-groups", action="store_true", help="leave out the per-group rows")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="default: from --out's suffix (.md, .csv, .json), else markdown",
    )
    add_out_argument(p, "write the table to this file (else stdout)")
    p.add_argument(
        "--record",
        action="store_true",
        help="instead of the table, write a results record (PROJECT_DIR/results) naming every "
        "file of the runs that made the chosen effect files (the plots stage writes one itself; "
        "this is for runs that end at treatment_effects)",
    )
    p.set_defaults(func=cmd_results)


def cmd_results(args: argparse.Namespace) -> int:
    import logging

    from rate.errors import ConfigError
    from rate.io import atomic_write_text
    from rate.results.table import SUFFIX_FORMATS, Filters, render, results_rows
    from rate.store import Layout

    fmt = args.format
    if fmt is None and args.out is not None:
        fmt = SUFFIX_FORMATS.get(args.out.suffix)
        if fmt is None:
            raise ConfigError(
                f"--out {args.out}: say the format with --format ({', '.join(FORMATS)}), or "
                f"end the name in {', '.join(SUFFIX_FORMATS)}"
            )
    filters = Filters(
        datasets=tuple(args.dataset),
        concepts=tuple(args.concept),
        scores=tuple(args.score),
        estimands=tuple(args.estimand),
        methods=tuple(args.method),
        smoke=True if args.smoke else False if args.full else None,
        latest=args.latest,
        groups=not args.no_groups,
    )
    layout = Layout.from_env()
    if args.record:
        return _record(args, layout, filters)
    rows = results_rows(args.files or None, layout.effects, filters)
    if not rows:
        where = "the files named" if args.files else str(layout.effects)
        logging.getLogger(__name__).warning(
            "results: no effect file in %s passes the filters", where
        )
    text = render(rows, fmt or "markdown")
    if args.out is None:
        print(text, end="")
    else:
        atomic_write_text(args.out, text)
        print(args.out)
    return 0


def _record(args: argparse.Namespace, layout, filters) -> int:
    from rate.errors import ConfigError
    from rate.results.record import run_record, write_run_record
    from rate.results.table import effect_files, read_effects, select_files

    paths = args.files or effect_files(layout.effects)
    chosen = [p for p, _ in select_files([(p, read_effects(p)) for p in paths], filters)]
    if not chosen:
        raise ConfigError(
            "results --record: no effect file passes the filters; name the effect files, or "
            "use --latest with --dataset, --concept and --score"
        )
    print(write_run_record(layout.results, run_record(chosen, None, layout.root)))
    return 0
