"""Flags that mean the same thing in every command, each declared in one place."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_out_argument(p: argparse.ArgumentParser, help: str = "", **kwargs: Any) -> None:
    """--out: where the command writes (a file, a folder or a path prefix, as ``help`` says)."""
    p.add_argument("--out", type=Path, metavar="OUT", help=help or "where to write", **kwargs)
