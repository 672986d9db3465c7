"""Where an RL step's time goes, ours against the published trainer, in milliseconds a step.

    PYTHONPATH=src:. python experiments/rl_speed/phases.py WORLD [STEPS] [ROUNDS]

Runs the two real loops (``benchmarks.rl.train_rl_ours`` and ``train_rl_anchor``, torch on one
thread, STEPS default-recipe steps each, ROUNDS rounds in turn) with timers wrapped around the
functions each step calls: the reward model's scoring, the reference's and the policy's
teacher-forced passes (told apart by grad mode) and the backward pass. The rest of the loop
is its sampling (the published trainer's is written inline), the gradient clipping, Adam and
the bookkeeping. Prints each phase's median over the rounds. The timers add a few
microseconds a call; the loops are otherwise unchanged.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from unittest import mock

import torch

import benchmarks.rl as anchor_module
import tinyworld.rl as ours_module
from rate.errors import RateError
from tinyworld.rl_config import load_rl_config


def timed(spent: dict[str, float], fn: Callable, name: Callable[[], str]) -> Callable:
    """``fn`` with its seconds added to ``spent[name()]``, name() read at the call."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name()] += time.perf_counter() - start

    return wrapper


def teacher_forced() -> str:
    grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
    return "policy forward" if grad else "reference forward"


@contextmanager
def phase_timers(spent: dict[str, float]) -> Iterator[None]:
    """Wrap what each loop calls by name; backward is torch's own, shared by both."""
    targets = [
        (ours_module, "score", lambda: "reward model"),
        (ours_module, "response_logprobs", teacher_forced),
        (anchor_module, "anchor_logprobs", teacher_forced),
        (anchor_module.AnchorRewardModel, "__call__", lambda: "reward model"),
        (torch.Tensor, "backward", lambda: "backward"),
    ]
    with ExitStack() as stack:
        for owner, attr, name in targets:
            original = getattr(owner, attr)
            stack.enter_context(mock.patch.object(owner, attr, timed(spent, original, name)))
        yield


def run(contender: str, world: Path, steps: int) -> dict[str, float]:
    """-> milliseconds a step per phase, and the whole loop's (``loop``)."""
    config = load_rl_config(world / "configs" / "default.json", [f"steps={steps}"])
    spent: dict[str, float] = defaultdict(float)
    with phase_timers(spent):
        loop = anchor_module.CONTENDERS[contender](config, world)["elapsed_s"]
    ms = {name: 1000 * s / steps for name, s in spent.items()}
    ms["loop"] = 1000 * loop / steps
    return ms


def main(world: str, steps: str = "200", rounds: str = "3") -> None:
    os.environ.setdefault("RATE_PROGRESS", "0")
    torch.set_num_threads(1)
    results: dict[str, list[dict[str, float]]] = {"ours": [], "anchor": []}
    for r in range(int(rounds)):
        for contender in ("ours", "anchor") if r % 2 == 0 else ("anchor", "ours"):
            results[contender].append(run(contender, Path(world), int(steps)))
    shared = ["reward model", "reference forward", "policy forward", "backward"]
    rows: dict[str, dict[str, float]] = {}
    for contender, runs in results.items():
        med = {k: statistics.median(m.get(k, 0.0) for m in runs) for k in [*shared, "loop"]}
        med["the work both do"] = sum(med[k] for k in shared)
        med["sampling, clipping, Adam, the rest"] = med["loop"] - med["the work both do"]
        rows[contender] = med
    print(
        f"| phase ({rounds} rounds of {steps} steps, medians) | ours, ms a step | published"
        " trainer | published / ours |"
    )
    print("|---|---|---|---|")
    for phase in [*shared, "the work both do", "sampling, clipping, Adam, the rest", "loop"]:
        ours, anchor = rows["ours"][phase], rows["anchor"][phase]
        print(f"| {phase} | {ours:.1f} | {anchor:.1f} | {anchor / ours:.2f}x |")


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 4 or not all(a.isdigit() and int(a) > 0 for a in sys.argv[2:]):
        raise SystemExit(__doc__)
    try:
        main(*sys.argv[1:])
    except RateError as err:  # a folder that is not a built world, say
        raise SystemExit(f"phases.py: {err}") from None
