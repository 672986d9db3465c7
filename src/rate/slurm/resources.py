"""What each stage's job asks SLURM for: the config's ``slurm:`` section over stage defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rate.errors import SlurmError
from rate.slurm_options import DEFAULT_STAGE_RESOURCES, SlurmConfig


@dataclass(frozen=True)
class Resources:
    """A job's request: wall time, CPUs and memory per task, GPUs, and any other options."""

    time: str
    cpus: int
    mem: str
    gpus: int = 0
    extra_args: tuple[str, ...] = ()


# The defaults are the config's (rate.slurm_options.DEFAULT_STAGE_RESOURCES, with their reasons).
STAGE_DEFAULTS: dict[str, Resources] = {
    stage: Resources(str(r.time), r.cpus, r.mem, r.gpus)
    for stage, r in DEFAULT_STAGE_RESOURCES.items()
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


# The stages `rate submit` takes, and the `rate` subcommand each runs.
STAGE_COMMANDS = {
    "create_dataset": "create_dataset",
    "score_dataset": "score_dataset",
    "treatment_effects": "treatment_effects",
    "plots": "plots",
}
