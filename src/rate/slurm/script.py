"""The sbatch script of one stage's job: readable, self-contained, resubmittable by hand."""

from __future__ import annotations

import datetime as dt
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from rate import __version__
from rate.slurm.resources import Resources

# The last line a job prints, so that its log says how it ended even when SLURM has forgotten
# the job (no accounting database, and MinJobAge has passed).
END_LINE = "rate: job {job} ended with exit status {status}"


def log_pattern(logs: Path, stage: str, array: bool = False) -> Path:
    """Where a job writes its output: ``<stage>_<job id>.out`` (arrays: ``_<array>_<task>``)."""
    return logs / (f"{stage}_%A_%a.out" if array else f"{stage}_%j.out")


def log_path(logs: Path, stage: str, job_id: str) -> Path:
    """The log of job ``12`` or array task ``12_3`` (the pattern above, filled in)."""
    return logs / f"{stage}_{job_id}.out"


@dataclass
class JobScript:
    """One job: which stage, the ``rate`` arguments it runs and what it asks SLURM for."""

    stage: str  # names the job (rate-<stage>) and its log
    rate_args: list[str]  # arguments of `python -m rate.cli`, quoted when rendered
    resources: Resources
    partition: str
    logs: Path  # PROJECT_DIR/logs
    workdir: Path  # the job runs here (where .env and relative paths are read)
    project_dir: Path
    python: str  # the interpreter with rate installed (the submitter's)
    array: str | None = None  # task ids, e.g. "0-3" or "1,3"
    # Unquoted shell words after the arguments, e.g. '--shard "$SLURM_ARRAY_TASK_ID/4"'.
    raw_tail: str = ""
    comments: list[str] = field(default_factory=list)  # more '# ...' lines for the reader


def render(job: JobScript) -> str:
    """The text of the sbatch script."""
    r = job.resources
    options = [
        f"--job-name=rate-{job.stage}",
        f"--partition={job.partition}",
        f"--time={r.time}",
        "--ntasks=1",
        f"--cpus-per-task={r.cpus}",
        f"--mem={r.mem}",
    ]
    if r.gpus:
        # --gres works with both select plugins (--gpus needs cons_tres).
        options.append(f"--gres=gpu:{r.gpus}")
    options.append(f"--output={log_pattern(job.logs, job.stage, job.array is not None)}")
    if job.array is not None:
        options.append(f"--array={job.array}")
    options.extend(r.extra_args)
    command = shlex.join([job.python, "-m", "rate.cli", *job.rate_args])
    if job.raw_tail:
        command += " " + job.raw_tail
    task = "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}" if job.array else "${SLURM_JOB_ID}"
    lines = [
        "#!/bin/bash",
        f"# rate {job.stage}: written by `rate submit` (rate {__version__}) at "
        f"{dt.datetime.now().isoformat(timespec='seconds')}.",
        *(f"# {c}" for c in job.comments),
        *(f"#SBATCH {o}" for o in options),
        "",
        "set -uo pipefail",
        f"cd {shlex.quote(str(job.workdir))}",
        f"export PROJECT_DIR={shlex.quote(str(job.project_dir))}",
        "# torch takes every core of the node unless told; keep to the CPUs this job was given.",
        "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${SLURM_CPUS_PER_TASK:-1}}",
        f"echo \"rate: job {task} ({job.stage}) on $(hostname) at $(date '+%F %T')\"",
        command,
        "status=$?",
        'echo "' + END_LINE.format(job=task, status="$status") + '"',
        "exit $status",
        "",
    ]
    return "\n".join(lines)
