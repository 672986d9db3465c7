"""`rate profile`: a causal bias profile of any reward model in one command.

The attributes of the catalogue, each rewritten on the profile's data and scored by the one
reward model, run as a sweep (here, or as SLURM jobs with PARTITION set), then one set of
outputs in ``--out``: ``profile.json`` / ``.md`` / ``.csv`` and ``profile.png``.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from rate.cli_args import add_poll_argument, count
from rate.profile import REWRITERS, RULES

log = logging.getLogger(__name__)

EXAMPLE = "rate profile --scorer vader --data answers.jsonl --attributes all --smoke --out prof"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="a causal bias profile of a reward model: RATE for each attribute of the catalogue",
        description="RATE's effect of each attribute of the catalogue (docs/profile.md) on a "
        "reward model, on your (prompt, response) data: a sweep generated from the catalogue "
        "(resumed after a kill; SLURM jobs with PARTITION set), then --out/profile.json, .md, "
        ".csv and .png.",
        epilog=f"example:\n  {EXAMPLE}\n  rate profile --model ORG/NAME --dataset "
        "drugreview_length --attributes emoji,hedging --out prof_rm",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # One of each pair, checked by the command (one line naming both).
    scorer = p.add_mutually_exclusive_group()
    scorer.add_argument("--model", metavar="ORG/NAME|DIR", help="a sequence classifier")
    scorer.add_argument("--scorer", metavar="TEMPLATE", help="a scoring template")
    data = p.add_mutually_exclusive_group()
    data.add_argument("--data", type=Path, metavar="FILE.jsonl", help="(prompt, response) lines")
    data.add_argument("--dataset", metavar="TEMPLATE", help="a dataset template's source")
    p.add_argument("--prompt-field", default="prompt", help="--data's prompt field")
    p.add_argument("--response-field", default="response", help="--data's response field")
    p.add_argument(
        "--n-examples",
        type=count(10**7, "examples per attribute"),
        help="examples per attribute (default: every line of --data, or the template's)",
    )
    p.add_argument("--attributes", default="all", help="'all' or names: length,emoji,...")
    p.add_argument(
        "--group-by",
        metavar="FIELD",
        help="also estimate per value of this field of the examples (effects.group_by): "
        "the drug reviews' rating (positive, negative, neutral), a field of --data's lines",
    )
    p.add_argument(
        "--rewriter",
        choices=REWRITERS,
        default=RULES,
        help="rules: each attribute's offline rules (those without are left out); an LLM "
        "backend rewrites every attribute",
    )
    p.add_argument("--rewriter-model", metavar="NAME", help="the LLM rewriter's model")
    p.add_argument("--config", type=Path, help="the base config of the sweep's cells")
    p.add_argument("--out", type=Path, required=True, help="the folder of the profile")
    p.add_argument("--smoke", action="store_true", help="smoke size: 60 examples at most")
    p.add_argument("--plan", action="store_true", help="list the steps; run nothing")
    p.add_argument("--here", action="store_true", help="run here even when PARTITION is set")
    p.add_argument("--wait", action="store_true", help="with SLURM: follow the jobs, then write")
    add_poll_argument(p, "seconds between job-state checks with --wait")
    p.set_defaults(func=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    from rate.errors import ConfigError
    from rate.profile.plan import (
        Inputs,
        check_scorer,
        choose_attributes,
        data_source,
        template_source,
        write_plan,
    )

    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(f"--out {args.out}: is a file; a profile is a folder")
    if args.rewriter_model and args.rewriter == RULES:
        raise ConfigError("--rewriter-model: the rules need no model; give an LLM --rewriter")
    if (args.data is None) == (args.dataset is None):
        raise ConfigError("give exactly one of --data FILE.jsonl and --dataset TEMPLATE")
    if args.data is not None:
        source, n = data_source(args.data, args.prompt_field, args.response_field, args.group_by)
        where = str(args.data)
        if args.n_examples and args.n_examples > n:
            raise ConfigError(f"--n-examples {args.n_examples}: {args.data} holds {n} examples")
    else:
        source, n, where = template_source(args.dataset)
    scorer = check_scorer(args.scorer, args.model)
    attributes, left_out = choose_attributes(args.attributes, args.rewriter)
    inputs = Inputs(
        source, args.n_examples or n, where, scorer, attributes, left_out,
        args.rewriter, args.rewriter_model, args.group_by,
    )  # fmt: skip
    grid = write_plan(inputs, args.out, args.smoke)
    return _run(args, inputs, grid)


def _run(args: argparse.Namespace, inputs, grid: Path) -> int:
    from rate.catalog import check_group_by
    from rate.errors import RateError
    from rate.profile.report import write_profile
    from rate.settings import setup_logging
    from rate.store import Layout, new_log_path
    from rate.sweep.cli import submit_steps
    from rate.sweep.grid import Sweep
    from rate.sweep.steps import State, pending, run_sweep

    sweep = Sweep(grid, args.config)  # every cell's config checked before any work
    check_group_by(sweep.config(sweep.cells[0]), "--group-by")  # the source's fields, if known
    state = State(sweep, Layout.from_env())
    todo = pending(state)
    if args.plan:
        for step_id in state.steps:
            print(f"{'to run' if step_id in todo else 'done  '}  {step_id}")
        print(f"{len(todo)} of {len(state.steps)} step(s) to run; state in {state.folder}")
        return 0
    log_file = new_log_path(state.layout.logs, f"profile_{sweep.name}", sweep.grid.smoke)
    loud = "DEBUG" if getattr(args, "verbose", False) else "INFO"
    setup_logging("WARNING" if getattr(args, "quiet", False) else loud, log_file)
    log.info("profile %s: sweep %s (grid %s); log %s", args.out, sweep.name, grid, log_file)
    partition = sweep.config(sweep.cells[0]).slurm.partition or os.environ.get("PARTITION", "")
    errors: dict[str, str] = {}
    if partition.strip() and not args.here and todo:
        submit_steps(state, args)
        if not args.wait:
            print("rerun this command once the jobs finish: it writes the profile")
            return 0
    else:
        outcome = run_sweep(state)
        for step_id, status in outcome.status.items():
            print(f"{status:8s} {step_id}")
        errors = outcome.errors
    rows, effects = profile_rows(state, inputs, sweep.grid.scorers[0], errors)
    record = profile_record(state, inputs, inputs.scorer, grid)
    files = write_profile(args.out, record, rows, inputs.left_out, effects)
    print("\n" + files[1].read_text(encoding="utf-8"))
    print(f"profile: {', '.join(str(f) for f in files)}")
    if errors:
        lines = [f"  {k}: {v}" for k, v in errors.items()]
        raise RateError(
            f"profile {args.out}: {len(lines)} step(s) failed (the profile holds the others; "
            "rerun the same command once fixed, and only what is missing is redone):\n"
            + "\n".join(lines)
        )
    return 0


def profile_rows(state, inputs, scorer: str, errors: dict[str, str]) -> tuple[list, list]:
    """The profile's rows of ``scorer`` (a failed or unfinished attribute: an empty row saying
    why) and the effects of those done; -> (rows, effects)."""
    from rate.io import read_json
    from rate.profile.report import attribute_row

    rows, effects = [], []
    for attribute, dataset in zip(inputs.attributes, state.sweep.grid.datasets, strict=True):
        step = f"effects:{dataset}:{scorer}"
        why = state.why_not_done(state.steps[step])
        if why is not None:
            failed = [s for s in errors if s.split(":")[1] == dataset]
            status = f"failed: {errors[failed[0]]}" if failed else f"not done: {why}"
            rows.append(attribute_row(attribute, None, status, ""))
            continue
        path = state.outputs(step)[0]
        effects.append(read_json(path))
        rows.append(attribute_row(attribute, effects[-1], "ok", path))
    return rows, effects


def profile_record(state, inputs, scorer: str, grid: Path) -> dict:
    """What ``profile.json`` says a profile of ``scorer`` is of and where its steps lie."""
    return {
        "scorer": scorer,
        "data": inputs.where,
        "n_examples": inputs.n_examples,
        "smoke": state.sweep.grid.smoke,
        "rewriter": inputs.rewriter,
        "group_by": inputs.group_by,
        "sweep": state.sweep.name,
        "grid": str(grid),
        "steps": str(state.folder / "steps"),
    }
