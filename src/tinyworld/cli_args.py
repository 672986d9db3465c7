"""The flags of the world's commands that mean the same thing everywhere."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

WORLD_HELP = "a built world (a folder made by `rate world build`)"


def add_world_argument(p: argparse.ArgumentParser, help: str = "", **kwargs: Any) -> None:
    """--world: the built world a command reads (``help`` adds where its default comes from)."""
    text = f"{WORLD_HELP}; {help}" if help else WORLD_HELP
    p.add_argument("--world", type=Path, metavar="WORLD", help=text, **kwargs)
