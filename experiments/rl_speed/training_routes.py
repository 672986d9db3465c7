"""The reward model's training with its linear layers on torch's path and on oneDNN's.

    python experiments/rl_speed/training_routes.py [EPOCHS] [ROUNDS]

Trains the world's reward model shape on 12,000 random rows (labels random: only the time
is of interest) for EPOCHS epochs (3), each route in turn, ROUNDS times (3), in one process,
and prints each run's seconds and last training loss (experiments/rl_speed/README.md, "The
devices outside the loop").
The losses differ in the last bits between routes: another route trains another model.
"""

import sys
import time

import torch

from tinyworld import kernels
from tinyworld.rm_train import train_reward_model


def main(epochs: int = 3, rounds: int = 3) -> None:
    onednn = kernels._onednn_linear_op()
    if onednn is None:
        sys.exit("this torch has no oneDNN linear layer: nothing to compare")
    gen = torch.Generator().manual_seed(0)
    prompts = torch.randint(0, 39, (12000, 6), generator=gen)
    responses = torch.randint(0, 24, (12000, 8), generator=gen)
    labels = torch.randn(12000, generator=gen)
    route = kernels._ONEDNN_LINEAR
    try:
        for r in range(rounds):
            for name, op in (("torch", None), ("oneDNN", onednn)):
                kernels._ONEDNN_LINEAR = op
                start = time.perf_counter()
                _, history = train_reward_model(
                    prompts, responses, labels, epochs=epochs, lr=2e-3, batch_size=128, seed=0
                )
                print(
                    f"round {r}: {name:6s} {time.perf_counter() - start:6.2f} s, "
                    f"last loss {history[-1]['mse']:.10f} (CPU: {kernels.cpu_description()})",
                    flush=True,
                )
    finally:
        kernels._ONEDNN_LINEAR = route


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
