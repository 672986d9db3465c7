"""`rate sweep FILE.yaml`: every dataset template x scoring template of a grid, then one report.

Runs here, or, with PARTITION set (or the base config's slurm.partition), as SLURM jobs: one
per step, chained per cell, the report after all. ``--step ID`` runs one step (what each job
runs); ``--plan`` lists the steps and which are to be run.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from rate.cli_args import add_poll_argument
from rate.settings import setup_logging

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="a grid of dataset x scoring templates through the stages, then a report"
    )
    p.add_argument("grid", type=Path, help="the grid file (experiments/sweeps/*.yaml)")
    p.add_argument(
        "--config", type=Path, help="the base config (instead of the grid's base_config)"
    )
    p.add_argument(
        "--smoke", action="store_true", help="the grid at smoke size (as smoke: true in it)"
    )
    p.add_argument("--step", metavar="ID", help="run only this step, e.g. score:<dataset>:<scorer>")
    p.add_argument(
        "--plan", action="store_true", help="list the steps and which are to be run; run nothing"
    )
    p.add_argument("--here", action="store_true", help="run here even when PARTITION is set")
    p.add_argument("--wait", action="store_true", help="with SLURM: follow the jobs to the end")
    add_poll_argument(p, "seconds between job-state checks with --wait")
    p.set_defaults(func=cmd_sweep)


# The sweep imports the stages (numpy, the scorers' registries) when it runs, to keep
# `rate --help` fast.


def cmd_sweep(args: argparse.Namespace) -> int:
    from rate.errors import RateError
    from rate.store import Layout, new_log_path
    from rate.suggest import unknown_name_message
    from rate.sweep.grid import Sweep
    from rate.sweep.steps import State, pending, run_sweep

    sweep = Sweep(args.grid, args.config, smoke=True if args.smoke else None)
    state = State(sweep, Layout.from_env())
    if args.plan:
        todo = pending(state)
        for step_id in state.steps:
            print(f"{'to run' if step_id in todo else 'done  '}  {step_id}", end="")
            print(f"  ({todo[step_id]})" if step_id in todo else "")
        print(f"{len(todo)} of {len(state.steps)} step(s) to run; state in {state.folder}")
        return 0
    tag = f"sweep_{sweep.name}" + (f"_{args.step.replace(':', '_')}" if args.step else "")
    log_file = new_log_path(state.layout.logs, tag, sweep.grid.smoke)
    setup_logging("DEBUG" if getattr(args, "verbose", False) else "INFO", log_file)
    log.info(
        "sweep %s from %s (base config %s); log %s", sweep.name, sweep.path, sweep.base, log_file
    )
    if args.step:
        if args.step not in state.steps:
            raise RateError(unknown_name_message("step", args.step, state.steps, str(args.grid)))
        step = state.steps[args.step]
        state.run_if_needed(step)
        for path in state.outputs(step.id) or []:
            print(path)
        return 0
    partition = sweep.config(sweep.cells[0]).slurm.partition or os.environ.get("PARTITION", "")
    if partition.strip() and not args.here:
        return submit_steps(state, args)
    outcome = run_sweep(state)
    for step_id, status in outcome.status.items():
        print(f"{status:8s} {step_id}")
    table = state.report_dir / "ranked.md"
    if table.is_file():
        print("\n" + table.read_text(encoding="utf-8"))
        print(f"report: {state.report_dir}")
    if outcome.errors:
        lines = [f"  {k}: {v}" for k, v in outcome.errors.items()]
        raise RateError(
            f"sweep {sweep.name}: {len(lines)} step(s) failed (the others ran; rerun the same "
            "command once fixed, and only what is missing is redone):\n" + "\n".join(lines)
        )
    return 0


def submit_steps(state, args: argparse.Namespace) -> int:
    """Submit the steps not done as SLURM jobs (and with ``args.wait``, follow them)."""
    from rate.slurm.jobs import wait_for
    from rate.sweep.submit import submit_sweep

    submitted = submit_sweep(state)
    if submitted is None:
        print(f"sweep {state.sweep.name}: every step is done; report: {state.report_dir}")
        return 0
    sub, jobs = submitted
    for step_id, job in jobs.items():
        print(f"{step_id}: job {job.job_id}, log {job.log_files()[0]}")
    print(f"scripts, grid and config: {sub.folder}")
    if args.wait:
        wait_for(sub.jobs, args.poll)
        print(f"all jobs completed; report: {state.report_dir}")
    else:
        print(f"follow them with: squeue -j {','.join(j.job_id for j in sub.jobs)}")
    return 0
