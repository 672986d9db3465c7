"""RL's passes compiled by ``torch.compile`` (inductor, C++ on the CPU) against the trainer's.

    python experiments/rl_speed/compiled_passes.py WORLD [CALLS] [ROUNDS]

On one step's real inputs (16 prompts of the default recipe, 8 samples each from the world's
policy), on one intra-op thread, times in one process, each the best of ROUNDS (3) means over
CALLS (200) calls after 10 untimed:

- the policy's forward and backward pass (``response_logprobs`` with autograd, and the
  REINFORCE loss's backward): eager on RL's route for linear layers (what the trainer runs,
  less the weight gradients it hands to its second thread), eager on torch's path, and
  compiled on torch's path (inductor cannot lower oneDNN's linear op);
- the reward model: the trainer's trace (``tinyworld.traced.Traced``, RL's route),
  eager on torch's path, and compiled on torch's path;

with the seconds each compilation took (the first call's, with inductor's cache as it stands)
and the largest difference of the compiled results from the eager ones. Not kept in the
trainer (experiments/rl_speed/README.md). Run it with inductor's
cache empty to see a first run's compile time: ``TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)``.
"""

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from tinyworld import kernels
from tinyworld.rl import PromptSampler, TracedPasses
from tinyworld.rl_config import load_rl_config, prepare
from tinyworld.sampling import response_logprobs, sample


def best_ms(fn: Callable[[], object], calls: int, rounds: int) -> float:
    """The fastest of ``rounds`` means over ``calls`` calls, in ms, after 10 untimed."""
    for _ in range(10):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls * 1e3)
    return best


def timed_first_call(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main(world: Path, calls: int = 200, rounds: int = 3) -> None:
    os.environ.setdefault("RATE_PROGRESS", "0")
    torch.set_num_threads(1)
    config = load_rl_config(world / "configs" / "default.json")
    inputs = prepare(config, world)
    policy, rm, k = inputs.policy, inputs.reward_model, config.samples_per_prompt
    for p in (*inputs.reference.parameters(), *rm.parameters()):
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(0)
    prompts = inputs.pool.tokens[PromptSampler(inputs.pool, inputs.family_probs).draw(16, gen)]
    responses = sample(policy, prompts, config.temperature, gen, k).responses
    rows = prompts.repeat_interleave(k, dim=0)
    advantage = torch.randn(len(responses), generator=gen)
    policy.train()

    def forward_backward(logprobs: Callable[..., torch.Tensor]) -> torch.Tensor:
        policy.zero_grad(set_to_none=False)
        logp = logprobs(policy, prompts, responses, k)
        (-(advantage * logp.sum(-1)).mean()).backward()
        return torch.cat([p.grad.reshape(-1) for p in policy.parameters()])

    route = kernels.RL_ON_TORCH
    try:
        kernels.RL_ON_TORCH = route
        with kernels.rl_linear_route():
            traced = TracedPasses.of(inputs, config)
            ours_fb = best_ms(lambda: forward_backward(response_logprobs), calls, rounds)
            with torch.inference_mode():
                traced_rm = best_ms(lambda: traced.reward(rows, responses), calls, rounds)
        kernels.RL_ON_TORCH = True
        with kernels.rl_linear_route():
            eager_grads = forward_backward(response_logprobs)
            eager_fb = best_ms(lambda: forward_backward(response_logprobs), calls, rounds)
            compiled_logprobs = torch.compile(response_logprobs, dynamic=False)
            compiled_grads, fb_compile_s = timed_first_call(
                lambda: forward_backward(compiled_logprobs)
            )
            compiled_fb = best_ms(lambda: forward_backward(compiled_logprobs), calls, rounds)
            with torch.inference_mode():
                eager_scores = rm(rows, responses)
                eager_rm = best_ms(lambda: rm(rows, responses), calls, rounds)
                compiled_rm_module = torch.compile(rm, dynamic=False)
                compiled_scores, rm_compile_s = timed_first_call(
                    lambda: compiled_rm_module(rows, responses)
                )
                compiled_rm = best_ms(lambda: compiled_rm_module(rows, responses), calls, rounds)
    finally:
        kernels.RL_ON_TORCH = route
    print(
        f"CPU: {kernels.cpu_description()}; torch {torch.__version__}; RL's route on torch's "
        f"path: {route}"
    )
    print(
        "| pass | the trainer's (RL's route) | eager, torch's path | compiled, torch's path "
        "| compile s | largest difference |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| policy forward + backward | {ours_fb:.2f} ms (eager) | {eager_fb:.2f} ms | "
        f"{compiled_fb:.2f} ms | {fb_compile_s:.1f} | "
        f"{(compiled_grads - eager_grads).abs().max().item():.1e} (gradients) |"
    )
    print(
        f"| reward model | {traced_rm:.2f} ms (traced) | {eager_rm:.2f} ms | {compiled_rm:.2f} ms "
        f"| {rm_compile_s:.1f} | {(compiled_scores - eager_scores).abs().max().item():.1e} |"
    )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), *(int(a) for a in sys.argv[2:4]))
