"""Our RL loop with the removed oneDNN route for its linear layers, timed in this fresh process.

    PYTHONPATH=src:. python experiments/rl_speed/onednn_route.py WORLD [STEPS] [MIN_ROWS]

The route (``src/tinyworld/kernels.py`` of commit ba1c0d5, read from git) sends linear layers
of at least MIN_ROWS (256) rows to oneDNN, written for AMD CPUs, where MKL's sgemm runs AVX2
and oneDNN AVX-512. Prints the loop seconds of STEPS (400) default-recipe steps as
``python -m benchmarks.rl ours WORLD STEPS 1`` does; alternate the two in fresh processes and
compare medians (experiments/rl_speed/README.md).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import torch.nn.functional as F

from tinyworld import blocks, policy

ROUTE_COMMIT = "ba1c0d5"


def load_route(min_rows: int) -> types.ModuleType:
    """The removed kernels module, from git, with its row threshold set to ``min_rows``."""
    done = subprocess.run(
        ["git", "show", f"{ROUTE_COMMIT}:src/tinyworld/kernels.py"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(
            f"cannot read the route from git commit {ROUTE_COMMIT} ({done.stderr.strip()}): "
            "run this from a clone of the repository with its history"
        )
    with tempfile.TemporaryDirectory(prefix="onednn-route-") as tmp:
        path = Path(tmp) / "kernels.py"
        path.write_text(done.stdout)
        spec = importlib.util.spec_from_file_location("onednn_route_kernels", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # loaded into memory: the file can go
    module.ONEDNN_MIN_ROWS = min_rows
    if not module.onednn_available():
        raise SystemExit("oneDNN's linear op is not available in this torch build")
    return module


def main(world: str, steps: str = "400", min_rows: str = "256") -> None:
    os.environ.setdefault("RATE_PROGRESS", "0")
    route = load_route(int(min_rows))
    routed = types.SimpleNamespace(**{k: getattr(F, k) for k in dir(F) if not k.startswith("__")})
    routed.linear = route.linear
    blocks.F = policy.F = routed  # both models' blocks and the policy's head

    from benchmarks.rl import main as run_contender

    run_contender(["ours", world, steps, "1"])


if __name__ == "__main__":
    main(*sys.argv[1:])
