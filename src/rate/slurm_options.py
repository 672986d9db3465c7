"""The ``slurm:`` section of the experiment config: the sbatch resources of each stage, and
the partition and shards of SLURM runs (:mod:`rate.slurm` submits the jobs)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rate.errors import ConfigError
from rate.schema import Bound, opt

# sbatch options that rate sets itself for every job; extra_args must not repeat them.
_RATE_SBATCH_OPTIONS = ("--output", "--error", "--array", "--dependency", "--parsable", "--wrap")
_SLURM_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$|^UNLIMITED$|^INFINITE$")
_SLURM_MEM = re.compile(r"^\d+[KMGT]?$")


@dataclass
class StageResources:
    """What one stage's SLURM job asks for; a key left out or null takes the stage's default."""

    time: str | int | None = opt(
        None,
        help="wall-time limit: MM, HH:MM:SS or D-HH:MM:SS, quoted ('12:00:00': YAML reads it "
        "unquoted as a number of seconds, which is refused)",
    )
    cpus: int | None = opt(None, help="--cpus-per-task", bound=Bound(1, high=4096))
    mem: str | None = opt(None, help="--mem, e.g. 16G")
    gpus: int | None = opt(None, help="--gres=gpu:N", bound=Bound(0, high=64))
    extra_args: list[str] = opt(help="more sbatch options for this stage", factory=list)


# Sized for the reference workload (25,000 examples x 3 completions, 8B reward models in bf16):
# scoring takes one GPU and the host memory to load an 8B model; the other stages are CPU work.
DEFAULT_STAGE_RESOURCES: dict[str, StageResources] = {
    "create_dataset": StageResources(time="04:00:00", cpus=4, mem="16G", gpus=0),
    "score_dataset": StageResources(time="12:00:00", cpus=8, mem="64G", gpus=1),
    "merge_scores": StageResources(time="01:00:00", cpus=1, mem="16G", gpus=0),
    "treatment_effects": StageResources(time="02:00:00", cpus=4, mem="16G", gpus=0),
    "plots": StageResources(time="00:30:00", cpus=1, mem="8G", gpus=0),
}


def _stage(name: str) -> Any:
    default = DEFAULT_STAGE_RESOURCES[name]
    return opt(
        help=f"the {name} job's resources",
        factory=lambda: StageResources(default.time, default.cpus, default.mem, default.gpus),
    )


@dataclass
class SlurmConfig:
    """SLURM jobs for the stages, used when PARTITION is set (`make`) or by `rate submit`."""

    partition: str | None = opt(None, help="null: the PARTITION setting (.env or the command line)")
    shards: int = opt(
        1,
        help="score_dataset as a job array of this many shards (one GPU each) and a merge job",
        bound=Bound(1, high=10_000, why="1: no job array"),
    )
    extra_args: list[str] = opt(
        help="sbatch options for every job, e.g. [--account=mylab]", factory=list
    )
    create_dataset: StageResources = _stage("create_dataset")
    score_dataset: StageResources = _stage("score_dataset")
    merge_scores: StageResources = _stage("merge_scores")
    treatment_effects: StageResources = _stage("treatment_effects")
    plots: StageResources = _stage("plots")

    def stages(self) -> dict[str, StageResources]:
        return {name: getattr(self, name) for name in DEFAULT_STAGE_RESOURCES}

    def validate(self, where: str) -> None:
        if self.partition is not None and not self.partition.strip():
            raise ConfigError(f"{where}: slurm.partition is empty; name a partition or use null")
        _check_sbatch_args(self.extra_args, f"{where}: slurm.extra_args")
        for stage, res in self.stages().items():
            key = f"{where}: slurm.{stage}"
            if isinstance(res.time, int):
                raise ConfigError(
                    f"{key}.time: YAML read this time as the number {res.time}; quote it, e.g. "
                    "time: '12:00:00' (or --set \"slurm.score_dataset.time='12:00:00'\")"
                )
            if res.time is not None and not _SLURM_TIME.match(res.time):
                raise ConfigError(
                    f"{key}.time: {res.time!r} is not a SLURM time; write MM, HH:MM:SS or "
                    "D-HH:MM:SS, e.g. '04:00:00'"
                )
            if res.mem is not None and not _SLURM_MEM.match(res.mem):
                raise ConfigError(
                    f"{key}.mem: {res.mem!r} is not a SLURM memory size; write e.g. 16G or 500M"
                )
            _check_sbatch_args(res.extra_args, f"{key}.extra_args")


def _check_sbatch_args(args: list[str], key: str) -> None:
    for arg in args:
        if not arg.startswith("-") or "\n" in arg:
            raise ConfigError(f"{key}: {arg!r} is not an sbatch option; write e.g. '--account=lab'")
        if arg.split("=", 1)[0] in _RATE_SBATCH_OPTIONS:
            raise ConfigError(
                f"{key}: {arg.split('=', 1)[0]} is set by rate itself (logs go to "
                "PROJECT_DIR/logs/<stage>_<job id>.out); remove it"
            )
