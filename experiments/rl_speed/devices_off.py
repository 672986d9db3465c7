"""One device of the tiny world's models turned off, timed in this fresh process.

    PYTHONPATH=src:. python experiments/rl_speed/devices_off.py rl DEVICE WORLD [STEPS]
    PYTHONPATH=src:. python experiments/rl_speed/devices_off.py build DEVICE OUT
    PYTHONPATH=src:. python experiments/rl_speed/devices_off.py audit DEVICE WORLD

``rl`` prints the loop seconds of STEPS (400) default-recipe RL steps on the built WORLD
(``benchmarks.rl.train_rl_ours``); ``build`` builds the default world into OUT with its RL runs
left out and SFT's and the reward model's epochs halved, and prints the two stages' seconds;
``audit`` audits the built WORLD as ``rate world study audit`` does (with its gold labels, then
the diagnostic without them) and prints each one's seconds. DEVICE is ``none`` (everything
on), ``pad`` (plain softmax for the attention weights), the one device of the world's models
left, or ``heap`` (the audit's commands' C heap settings, ``tinyworld.heap``, not made). Run
a device and ``none`` in alternating fresh processes and compare medians:
experiments/rl_speed/README.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import torch

from tinyworld import blocks, heap


def turn_off(device: str) -> None:
    """Replace the function behind ``device`` with the plain torch it stands for."""
    if device == "pad":
        blocks.attention_weights = lambda s: s.softmax(dim=-1)
    elif device == "heap":
        heap.keep_freed_memory = lambda: False
    elif device != "none":
        raise SystemExit(f"unknown device {device!r}: none, pad or heap")


def main(what: str, device: str, path: str, steps: str = "400") -> None:
    os.environ.setdefault("RATE_PROGRESS", "0")
    turn_off(device)
    if what == "rl":
        from benchmarks.rl import train_rl_ours
        from tinyworld.rl_config import load_rl_config

        torch.set_num_threads(1)
        world = Path(path)
        config = load_rl_config(
            world / "configs" / "default.json", [f"steps={steps}", f"log_every={steps}"]
        )
        result = {"loop_s": train_rl_ours(config, world)["elapsed_s"]}
    elif what == "build":
        from tinyworld.build import build_world
        from tinyworld.worldconfig import load_world_config

        c = load_world_config()
        c = dataclasses.replace(
            c,
            runs=[],
            sft=dataclasses.replace(c.sft, epochs=c.sft.epochs // 2),
            reward_model_training=dataclasses.replace(
                c.reward_model_training, epochs=c.reward_model_training.epochs // 2
            ),
        )
        timings = build_world(c, Path(path), overwrite=True, jobs=1)["timings"]
        result = {"sft_s": timings["sft_s"], "reward_model_s": timings["reward_model_s"]}
    elif what == "audit":
        from tinyworld.audit.settings import AuditSettings
        from tinyworld.studies.audit import audit_world

        heap.keep_freed_memory()  # as the audit's commands do, unless turned off
        checked = audit_world(Path(path), AuditSettings())  # as `rate world study audit` does
        result = {f"{mode}_s": checked[mode]["seconds"] for mode in ("audit", "diagnostic")}
    else:
        raise SystemExit(f"unknown measurement {what!r}: rl, build or audit")
    print(json.dumps({"device_off": device, **result}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
