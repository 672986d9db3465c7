"""What tests share besides fixtures: the repository root and running the real command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FAKES = Path(__file__).resolve().parent / "fakes"


def run_rate(args: list[str], project: Path, check: bool = True, **env: str):
    """Run the `rate` command in a fresh interpreter with PROJECT_DIR=project."""
    full_env = {**os.environ, "PROJECT_DIR": str(project), "RATE_PROGRESS": "0", **env}
    out = subprocess.run(
        [sys.executable, "-m", "rate.cli", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    if check and out.returncode != 0:
        raise AssertionError(f"rate {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return out


def slope_se(levels, se) -> float:
    """The SE of a least-squares slope of estimates on ``levels`` whose SEs are ``se``, as if
    the estimates were independent (a sweep's levels drawn from one pool overlap, which only
    lowers it)."""
    xc = np.asarray(levels, float) - np.mean(levels)
    return float(np.sqrt((xc**2 * np.asarray(se, float) ** 2).sum()) / (xc**2).sum())
