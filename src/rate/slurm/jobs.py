"""Talking to SLURM: sbatch with dependencies, job states, waiting, messages that name logs.

Job states come from ``scontrol show job`` while the controller remembers a job (MinJobAge
after it ends), then from ``sacct`` where accounting is set up, and last from the status line
that every rate job script prints at its end (rate.slurm.script.END_LINE).
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rate.errors import SlurmError
from rate.slurm.script import END_LINE, log_path

log = logging.getLogger(__name__)

# States after which a job never runs again (SLURM's base state names).
DONE_OK = {"COMPLETED"}
DONE_BAD = {
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
    "REVOKED",
    "SPECIAL_EXIT",
}
# Reasons a pending job gives when it can never start as asked (the request exceeds what the
# partition offers); clusters without EnforcePartLimits accept such jobs and keep them queued.
HOPELESS = {
    "BadConstraints",
    "PartitionConfig",
    "PartitionNodeLimit",
    "PartitionTimeLimit",
    "InvalidAccount",
    "InvalidQOS",
    "DependencyNeverSatisfied",
}
_END = re.compile(re.escape(END_LINE).replace(r"\{job\}", r"\S+").replace(r"\{status\}", r"(\d+)"))


def require(tool: str, partition: str | None = None) -> str:
    """The path of a SLURM command, or an error that says what to do without it."""
    path = shutil.which(tool)
    if path:
        return path
    setting = f"partition {partition!r}" if partition else "a partition"
    raise SlurmError(
        f"the stage is to be submitted to SLURM ({setting}, from PARTITION or the config's "
        f"slurm.partition), but `{tool}` is not on PATH. Run this "
        "on a SLURM login node (or load SLURM, e.g. `module load slurm`); to run the stage "
        "here instead, unset PARTITION (in .env or the environment). Nothing was submitted, "
        "so no job log was written."
    )


def _run(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SlurmError(
            f"`{' '.join(argv)}` did not answer in {timeout:.0f} s; is slurmctld up?"
        ) from None


def dependency_arg(deps: Iterable[tuple[str, Iterable[str]]]) -> str | None:
    """``[("afterok", ["12"]), ("afterany", ["13"])]`` -> ``"afterok:12,afterany:13"``.

    A comma means every condition must hold; an empty list gives None (no dependency).
    """
    parts = [f"{kind}:{':'.join(ids)}" for kind, ids in deps if ids]
    return ",".join(parts) or None


def partitions() -> list[str]:
    """The partitions SLURM knows (from sinfo), or [] when sinfo cannot say."""
    sinfo = shutil.which("sinfo")
    if not sinfo:
        return []
    out = _run([sinfo, "-h", "-o", "%R"], timeout=30)
    return sorted({p.strip() for p in out.stdout.split()}) if out.returncode == 0 else []


def sbatch(script: Path, partition: str, dependency: str | None = None) -> str:
    """Submit ``script``; -> the job id. Refusals become errors that say what to change."""
    argv = [require("sbatch", partition), "--parsable"]
    if dependency:
        # A job whose dependency can never be met (an earlier stage failed) is cancelled
        # instead of waiting in the queue forever.
        argv += [f"--dependency={dependency}", "--kill-on-invalid-dep=yes"]
    out = _run([*argv, str(script)])
    if out.returncode != 0:
        raise SlurmError(_refusal(out.stderr, partition, script))
    job_id = out.stdout.strip().split(";")[0]  # --parsable: "id" or "id;cluster"
    if not job_id.isdigit():
        raise SlurmError(f"sbatch gave no job id for {script} (it printed {out.stdout!r})")
    return job_id


def _refusal(stderr: str, partition: str, script: Path) -> str:
    said = " ".join(
        line.removeprefix("sbatch: error: ").strip() for line in stderr.strip().splitlines()
    )
    tail = f" Nothing was submitted; the job script is {script}."
    low = said.lower()
    if "invalid partition" in low:
        known = partitions()
        names = f" SLURM's partitions: {', '.join(known)}." if known else ""
        return (
            f"SLURM has no partition {partition!r} (sbatch: {said}).{names} Set PARTITION in "
            "`.env` or on the command line (make ... PARTITION=name), or slurm.partition in "
            f"the config.{tail}"
        )
    if "gres" in low:
        return (
            f"partition {partition!r} cannot give this job the GPUs it asks for (sbatch: "
            f"{said}). Use a partition with GPUs, or set slurm.<stage>.gpus in the config."
            f"{tail}"
        )
    if "node configuration is not available" in low or "memory" in low:
        return (
            f"no node in partition {partition!r} has what this job asks for (sbatch: {said}); "
            f"lower slurm.<stage>.cpus, mem or gpus in the config.{tail}"
        )
    return f"sbatch refused the job (sbatch: {said}).{tail}"


@dataclass(frozen=True)
class TaskState:
    """A job or array task as SLURM reports it."""

    job_id: str  # "12", "12_3", or "12_[4-7]" for array tasks that have not started
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    exit_code: str | None = None  # "2:0": exit status, then the signal
    reason: str | None = None

    @property
    def done(self) -> bool:
        return self.state in DONE_OK or self.state in DONE_BAD


def parse_scontrol(text: str) -> list[TaskState]:
    """Parse ``scontrol show job -o`` output (one job or array task per line)."""
    states = []
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "JobId" not in fields:
            continue
        job_id = fields["JobId"]
        array, task = fields.get("ArrayJobId"), fields.get("ArrayTaskId")
        if array and task:
            job_id = f"{array}_{task}" if task.isdigit() else f"{array}_[{task}]"
        states.append(
            TaskState(
                job_id,
                fields.get("JobState", "UNKNOWN"),
                fields.get("ExitCode"),
                fields.get("Reason"),
            )
        )
    return states


def parse_sacct(text: str) -> list[TaskState]:
    """Parse ``sacct -n -P -X -o JobID,State,ExitCode,Reason`` output."""
    states = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) >= 3 and parts[0]:
            # "CANCELLED by 0" -> CANCELLED
            states.append(
                TaskState(parts[0], parts[1].split()[0], parts[2], (parts[3:] or [None])[0])
            )
    return states


def job_states(job_id: str) -> list[TaskState] | None:
    """What SLURM knows of a job (every task of an array).

    [] when SLURM has no record of it left; None when it could not be asked just now (the
    controller busy or unreachable), so that a caller asks again rather than guess.
    """
    scontrol = shutil.which("scontrol")
    if scontrol:
        try:
            out = _run([scontrol, "show", "job", "-o", job_id], timeout=30)
        except SlurmError:
            return None
        if out.returncode == 0:
            states = parse_scontrol(out.stdout)
            if states:
                return states
        elif "invalid job id" not in out.stderr.lower():
            return None
    sacct = shutil.which("sacct")
    if sacct:
        try:
            out = _run(
                [sacct, "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode,Reason"],
                timeout=30,
            )
        except SlurmError:
            return None
        if out.returncode == 0:  # not where accounting is off ("storage is disabled")
            return parse_sacct(out.stdout)
    return []


def ended_with(log_file: Path) -> int | None:
    """The exit status a job's log reports on its last status line, or None."""
    try:
        text = log_file.read_text(errors="replace")
    except OSError:
        return None
    found = _END.findall(text)
    return int(found[-1]) if found else None


def log_excerpt(log_file: Path, lines: int = 8) -> str:
    """What a failed job said: its last ``rate: error`` message, else its last lines."""
    try:
        text = log_file.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    body = [line for line in text if not _END.search(line) and line.strip()]
    starts = [i for i, line in enumerate(body) if line.startswith("rate: error:")]
    picked = body[starts[-1] :][:lines] if starts else body[-min(lines, 4) :]
    return "\n".join(f"    | {line}" for line in picked)


def describe_task(task: TaskState | None, stage: str, job_id: str, logs: Path) -> str:
    """One line on how a job ended, with its log (and what the log says)."""
    log_file = log_path(logs, stage, job_id)
    if task is None:
        status = ended_with(log_file)
        how = (
            f"ended with exit status {status}"
            if status is not None
            else "left the queue without a status line in its log (cancelled, or killed for "
            "its time or memory limit?)"
        )
    elif task.reason == "DependencyNeverSatisfied" or (
        task.state == "CANCELLED" and task.reason and "Dependency" in task.reason
    ):
        return f"{stage}: job {job_id} did not run: a job it depends on failed"
    elif task.state == "PENDING" and task.reason in HOPELESS:
        return (
            f"{stage}: job {job_id} cannot start ({task.reason}): it asks for more than the "
            f"partition offers; lower slurm.{stage}.cpus, mem, gpus or time in the config "
            "(it was cancelled)"
        )
    else:
        code = (task.exit_code or "").split(":")[0]
        how = task.state + (f" (exit code {code})" if code and code != "0" else "")
    excerpt = log_excerpt(log_file)
    where = f"log: {log_file}" if log_file.exists() else f"no log at {log_file}"
    return f"{stage}: job {job_id} {how}; {where}" + (f"\n{excerpt}" if excerpt else "")


def explain_shard(array_job: str, shard: int, logs: Path) -> str:
    """For a merge that misses shard ``shard``: its job, how that ended and its log."""
    job_id = f"{array_job}_{shard}"
    states = [s for s in job_states(job_id) or [] if s.job_id == job_id]
    text = describe_task(states[0] if states else None, "score_dataset", job_id, logs)
    return text.removeprefix("score_dataset: ")


@dataclass
class Submitted:
    """A submitted job: its stage, id, script, and array tasks if it is an array."""

    stage: str
    job_id: str
    script: Path
    logs: Path
    array: list[int] | None = None

    def log_files(self) -> list[Path]:
        if self.array is None:
            return [log_path(self.logs, self.stage, self.job_id)]
        return [log_path(self.logs, self.stage, f"{self.job_id}_{t}") for t in self.array]

    def record(self) -> dict:
        return {
            "stage": self.stage,
            "job_id": self.job_id,
            "array": self.array,
            "script": str(self.script),
            "logs": [str(p) for p in self.log_files()],
        }


def wait_for(jobs: list[Submitted], poll: float = 5.0) -> None:
    """Follow ``jobs`` until each has ended; raise SlurmError naming each failure and its log."""
    remaining = list(jobs)
    failures: list[str] = []
    log.info("waiting for %d SLURM job(s): %s", len(jobs), " ".join(j.job_id for j in jobs))
    while remaining:
        for job in list(remaining):
            states = job_states(job.job_id)
            if states is None:
                continue  # SLURM did not answer this time; ask again at the next poll
            stuck = [s for s in states if s.state == "PENDING" and s.reason in HOPELESS]
            if stuck:
                # It would wait in the queue forever: cancel it, so nobody waits for it.
                scancel = shutil.which("scancel")
                if scancel:
                    _run([scancel, job.job_id], timeout=30)
                failures.append(describe_task(stuck[0], job.stage, job.job_id, job.logs))
                remaining.remove(job)
                continue
            if any(not s.done for s in states):
                continue
            remaining.remove(job)
            failures.extend(_failures(job, states))
        if remaining:
            time.sleep(poll)
    if failures:
        raise SlurmError(
            "SLURM job(s) failed:\n"
            + "\n".join(f"  {f}" for f in failures)
            + "\nFix the cause and rerun the target"
            + (
                " (score_dataset resubmits only the shards that are missing)."
                if any(j.stage in ("score_dataset", "merge_scores") for j in jobs)
                else "."
            )
        )
    log.info("all %d SLURM job(s) completed", len(jobs))


def _failures(job: Submitted, states: list[TaskState]) -> list[str]:
    """Failure lines for a job that has ended (every task of an array)."""
    if not states:
        # SLURM has forgotten the job: trust the status line its log ends with.
        tasks = [job.job_id] if job.array is None else [f"{job.job_id}_{t}" for t in job.array]
        return [
            describe_task(None, job.stage, t, job.logs)
            for t in tasks
            if ended_with(log_path(job.logs, job.stage, t)) != 0
        ]
    return [
        describe_task(s, job.stage, s.job_id, job.logs) for s in states if s.state not in DONE_OK
    ]
