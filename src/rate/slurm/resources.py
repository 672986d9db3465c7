"""What each stage's job asks SLURM for: the config's ``slurm:`` section over stage defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rate.config import SlurmConfig
from rate.errors import SlurmError


@dataclass(frozen=True)
class Resources:
    """A job's request: wall time, CPUs and memory per task, GPUs, and any other options."""

    time: str
    cpus: int
    mem: str
    gpus: int = 0
    extra_args: tuple[str, ...] = ()


# Sized for the reference workload (25,000 examples x 3 completions, 8B reward models in bf16):
# scoring takes one GPU and the host memory to load an 8B model; the other stages are CPU work.
STAGE_DEFAULTS: dict[str, Resources] = {
    "create_dataset": Resources(time="04:00:00", cpus=4, mem="16G"),
    "score_dataset": Resources(time="12:00:00", cpus=8, mem="64G", gpus=1),
    "merge_scores": Resources(time="01:00:00", cpus=1, mem="16G"),
    "treatment_effects": Resources(time="02:00:00", cpus=4, mem="16G"),
    "plots": Resources(time="00:30:00", cpus=1, mem="8G"),
}


def resources_for(slurm: SlurmConfig, stage: str) -> Resources:
    """The stage's defaults with the config's keys laid over them."""
    base = STAGE_DEFAULTS[stage]
    given = slurm.stages()[stage]
    return Resources(
        time=str(given.time) if given.time is not None else base.time,
        cpus=given.cpus if given.cpus is not None else base.cpus,
        mem=given.mem if given.mem is not None else base.mem,
        gpus=given.gpus if given.gpus is not None else base.gpus,
        extra_args=(*slurm.extra_args, *given.extra_args),
    )


def partition_for(slurm: SlurmConfig) -> str:
    """``slurm.partition`` from the config, else the PARTITION setting (.env or environment)."""
    if slurm.partition:
        return slurm.partition
    partition = os.environ.get("PARTITION", "").strip()
    if not partition:
        raise SlurmError(
            "no SLURM partition to submit to: set PARTITION in .env or on the command line "
            "(make score_dataset PARTITION=gpu), or slurm.partition in the config; to run the "
            "stages here instead, use `make create_dataset score_dataset treatment_effects` "
            "without PARTITION"
        )
    return partition
