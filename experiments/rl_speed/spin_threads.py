"""The trainer on two OpenMP threads, for when OpenMP's threads spin.

    GOMP_SPINCOUNT=300000 python experiments/rl_speed/spin_threads.py WORLD THREADS beside|in-turn [STEPS]

Runs the default recipe for STEPS steps (200) with torch on THREADS intra-op threads instead
of the trainer's one (``rate.parallel.single_thread`` is replaced for this process), with
its second thread (the reward model, the weight gradients) or everything in turn, and
prints the mean ms a step. Run it in fresh processes, in turn, for each setting: OpenMP
reads its environment once. Under spinning OpenMP the published trainer gains 1.6x from a
second thread; this measures what ours would (experiments/RESULTS.md at commit 825f898,
"Faster RL on an Intel CPU"). Not kept in the trainer.
"""

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import torch

import tinyworld.rl as rl
from tinyworld.rl_config import load_rl_config


def main(world: Path, threads: int, mode: str, steps: int = 200) -> None:
    if mode not in ("beside", "in-turn"):
        sys.exit(f"mode must be beside or in-turn, not {mode!r}")

    @contextlib.contextmanager
    def n_threads() -> Iterator[None]:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    rl.single_thread = n_threads  # what train_rl enters around its loop
    config = load_rl_config(
        world / "configs" / "default.json", [f"steps={steps}", f"log_every={steps}"]
    )
    with tempfile.TemporaryDirectory() as tmp:
        last = rl.train_rl(config, world, Path(tmp) / "run", second_thread=mode == "beside")
    print(
        f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')} threads={threads} {mode}: "
        f"{last['elapsed_s'] / steps * 1e3:.2f} ms a step"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], *(int(a) for a in sys.argv[4:5]))
