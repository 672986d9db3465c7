"""The handlers of `rate world study tilt` and `rate world study frontier` (registered in
:mod:`tinyworld.studies.cli`): each imports the study it runs when it runs, to keep
`rate --help` fast."""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def proposal_cells(items: list[str]) -> dict[tuple[str, float], Path]:
    """``REWARD:BETA=DIR`` arguments as (reward, beta) -> folder, each malformed one a one-line
    error."""
    from rate.errors import ConfigError
    from tinyworld.certify.cli import named_paths

    out = {}
    # A proposal's name is parsed below, and names no file.
    for name, path in named_paths(items, "--proposal", file_name=False).items():
        kind, sep, beta = name.partition(":")
        try:
            value = float(beta)
        except ValueError:
            value = math.nan
        if not sep or kind not in ("raw", "corrected") or not value > 0:
            raise ConfigError(
                f"--proposal {name}={path}: expected REWARD:BETA=DIR, REWARD raw or "
                "corrected and BETA > 0, e.g. corrected:0.05=runs/x/checkpoint"
            )
        out[(kind, value)] = path
    return out


def cmd_tilt_study(args: argparse.Namespace) -> int:
    from rate.fs import ensure_dir
    from rate.io import atomic_write_json, atomic_write_text, json_safe
    from tinyworld.studies.tilt import study_table, tilt_study
    from tinyworld.tilt.report import write_report

    ensure_dir(args.out)  # a folder that cannot be made fails now, not after the study
    study = tilt_study(
        args.world,
        args.wrapper,
        args.beta,
        max_n=args.max_n,
        tail_samples=args.tail_samples,
        proposals=proposal_cells(args.proposal),
        model_samples=args.model_samples,
    )
    table = study_table(study)
    write_report(study["forecast"], args.out / "forecast")
    atomic_write_json(args.out / "tilt_study.json", json_safe(study))
    atomic_write_text(args.out / "tilt_study.md", table)
    print(table)
    print(f"wrote {args.out}/tilt_study.json, .md and the forecast's report in forecast/")
    return 0


def cmd_frontier(args: argparse.Namespace) -> int:
    from rate.errors import BusyError, ConfigError
    from rate.io import atomic_write_json, atomic_write_text
    from rate.provenance import folder_lock
    from tinyworld.certify.cli import named_paths
    from tinyworld.studies.frontier import check_gold_rows, frontier_study, markdown

    policies = named_paths(args.policy) if args.policy else {}
    for name in ("prompts", "per_prompt", "per_family"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')}: give a number >= 1")
    if args.bootstrap < 0:
        raise ConfigError("--bootstrap: give a number >= 0 (0 or 1: no SE)")
    if args.gold_per_family is not None:
        check_gold_rows(args.gold_per_family)  # before the lock makes the folder
    busy = lambda pid: BusyError(  # noqa: E731
        f"{args.out}: another frontier study (pid {pid}) is writing here; wait for it to "
        "finish or choose another --out"
    )
    with folder_lock(args.out, busy):
        study = frontier_study(
            args.world,
            args.prompts,
            args.per_prompt,
            args.gold_per_family,
            bootstrap=args.bootstrap,
            policies=policies,
            per_family=args.per_family,
        )
        table = markdown(study)
        atomic_write_json(args.out / "frontier.json", study)
        atomic_write_text(args.out / "frontier.md", table)
    print(table, end="")
    return 0
