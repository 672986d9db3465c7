"""The flags of the world's commands that mean the same thing everywhere."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rate.cli_args import Number, count
from rate.schema import SEED, Bound

WORLD_HELP = "a built world (a folder made by `rate world build`)"


def add_world_argument(p: argparse.ArgumentParser, help: str = "", **kwargs: Any) -> None:
    """--world: the built world a command reads (``help`` adds where its default comes from)."""
    text = f"{WORLD_HELP}; {help}" if help else WORLD_HELP
    p.add_argument("--world", type=Path, metavar="WORLD", help=text, **kwargs)


# The settings classes whose keys some flags set (imported when a value is given).
RL = "tinyworld.rl_config:RLConfig"
TRAIN = "tinyworld.worldconfig:TrainConfig"
CERTIFY = "tinyworld.certify.certificate:CertifySettings"

# Evaluation prompts (or rows) per family: every command that evaluates takes this flag.
PER_FAMILY = count(10**6, "per family")
# Samples per family (or per rung) drawn for a forecast or a certificate's plan; 0: none.
SAMPLES = count(10**7, "samples per family", low=0)
# The KL coefficient of a tilted policy pi_beta (proportional to pi_ref * exp(r / beta)).
BETA = Number(float, Bound(0, strict=True, high=10**6, why="a KL coefficient of pi_beta"))
SEED_FLAG = Number(int, SEED)
# Bootstrap resamples of a study (0: none).
BOOTSTRAP = count(10**6, "resamples", low=0)
