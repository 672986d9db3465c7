"""`python -m benchmarks.rl_devices WORLD`: what each of RL's speed devices buys on its own.

Each contender is our trainer (``tinyworld.rl.train_rl``) with one device taken out, run for
``--steps`` default-recipe steps in a fresh process (``benchmarks.rl``), interleaved with the
whole trainer over ``--rounds`` rounds; the figure is the median over rounds of (seconds
without the device) / (seconds with everything), so > 1.15 is a device that buys 15%. The
published trainer (the anchor, on one thread) runs in the same rounds for the ratio that the
trainer as a whole must keep.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks.rl import run_contender

CONTENDERS = {
    "ours": "the whole trainer",
    "ours_no_traces": "the passes eager, not TorchScript traces",
    "ours_one_thread": "no second thread (decoding halves, reward model, weight gradients)",
    "ours_no_heap": "the C heap's settings left as they are (rate.heap)",
    "plain": "no key/value cache, every prompt re-encoded per sample (and none of the above)",
    "anchor": "the published trainer, rebuilt",
}


def measure(world: Path, steps: int, rounds: int) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for _ in range(rounds):  # interleaved: drift in the machine hits every contender alike
        for name in CONTENDERS:
            seconds[name].append(run_contender(name, world, steps, 1))
    return seconds


def table(seconds: dict[str, list[float]], steps: int) -> str:
    lines = [
        f"| contender ({steps} steps, fresh process) | median s | without it / whole |",
        "|---|---|---|",
    ]
    whole = seconds["ours"]
    for name, what in CONTENDERS.items():
        ratio = statistics.median(a / b for a, b in zip(seconds[name], whole, strict=True))
        lines.append(f"| {name}: {what} | {statistics.median(seconds[name]):.2f} | {ratio:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rl_devices")
    parser.add_argument("world", type=Path)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(table(measure(args.world, args.steps, args.rounds), args.steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
