"""`rate submit <stage>` and `rate pipeline`: the stages as SLURM jobs (make runs these when
PARTITION is set). Resources come from the config's ``slurm:`` section; see rate.slurm."""

from __future__ import annotations

import argparse
import logging

from rate.cli_args import add_poll_argument
from rate.config import add_config_args
from rate.slurm.jobs import wait_for
from rate.slurm.resources import STAGE_COMMANDS, resources_for

log = logging.getLogger(__name__)


def _common(p: argparse.ArgumentParser) -> None:
    add_config_args(p)
    p.add_argument(
        "--wait",
        action="store_true",
        help="follow the jobs to the end; exit 2 naming each failed job and its log",
    )
    add_poll_argument(p, "seconds between job-state checks with --wait")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="submit one stage as a SLURM job (needs PARTITION)")
    p.add_argument("stage", choices=sorted(STAGE_COMMANDS), help="the stage to submit")
    _common(p)
    p.set_defaults(func=cmd_submit)
    p = sub.add_parser(
        "pipeline", help="submit create_dataset, score_dataset, treatment_effects, chained"
    )
    _common(p)
    p.set_defaults(func=cmd_pipeline)


def _report(submission, wait: bool, poll: float) -> int:
    for job in submission.jobs:
        logs = job.log_files()
        if job.array is None:
            print(f"{job.stage}: job {job.job_id}, log {logs[0]}")
        else:
            n = submission.config.slurm.shards
            tasks = ",".join(map(str, job.array))
            gpus = resources_for(submission.config.slurm, job.stage).gpus
            print(
                f"{job.stage}: array job {job.job_id}, shards {tasks} of {n} ({gpus} GPU(s) "
                f"each), logs {job.logs}/{job.stage}_{job.job_id}_<shard>.out"
            )
    print(f"scripts and config: {submission.folder}")
    if wait:
        wait_for(submission.jobs, poll)
        print("all jobs completed")
    else:
        ids = ",".join(j.job_id for j in submission.jobs)
        print(f"follow them with: squeue -j {ids}")
    return 0


# The submission code reads scored files (numpy and the scoring stage); it is imported when a
# command runs, to keep `rate --help` fast.


def cmd_submit(args: argparse.Namespace) -> int:
    from rate.slurm.submit import submit_stage

    return _report(submit_stage(args.config, args.overrides, args.stage), args.wait, args.poll)


def cmd_pipeline(args: argparse.Namespace) -> int:
    from rate.slurm.submit import submit_pipeline

    return _report(submit_pipeline(args.config, args.overrides), args.wait, args.poll)
