"""Two ways to spend a second core on one RL run, timed against the trainer's step.

    python experiments/rl_speed/two_threads.py WORLD [STEPS]
    python experiments/rl_speed/two_threads.py WORLD STEPS --prompts 8   # one process's half

Each variant runs the default recipe's step on the world, 20 untimed steps then STEPS timed,
in one process, twice in turn (noisy machines):

- ``trainer``: what ``tinyworld.rl`` does, the reward model beside the two passes;
- ``halves``: two threads each sample, score and train half of the prompts, the gradients
  summed into the same flat parameter before one optimiser step;
- ``split``: after sampling, the second thread scores and runs the policy's passes on 6 of
  the 16 prompts, the first the reference and the other 10.

With ``--prompts N`` it times a plain one-thread step on N prompts instead: run two such
processes at once to see what two processes, each on half the batch, would cost. Not kept
in the trainer: none of these was enough faster (experiments/rl_speed/README.md).
"""

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from rate.heap import keep_freed_memory
from tinyworld.kernels import rl_linear_route
from tinyworld.rl import PromptSampler, shaped_advantages, start_training
from tinyworld.rl_config import load_rl_config, prepare
from tinyworld.sampling import response_logprobs, sample, score

parser = argparse.ArgumentParser()
parser.add_argument("world", type=Path)
parser.add_argument("steps", type=int, nargs="?", default=200)
parser.add_argument("--prompts", type=int, help="time a one-thread step on this many prompts")
args = parser.parse_args()
os.environ.setdefault("RATE_PROGRESS", "0")
torch.set_num_threads(1)
keep_freed_memory()
config = load_rl_config(args.world / "configs" / "default.json")
inputs = prepare(config, args.world)
policy, reference, rm = inputs.policy, inputs.reference, inputs.reward_model
flat, opt = start_training(inputs, config)
sampler = PromptSampler(inputs.pool, inputs.family_probs)
k = config.samples_per_prompt
second = ThreadPoolExecutor(1)
gen = torch.Generator().manual_seed(0)
half_gens = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)]


def finish(loss: torch.Tensor | None = None) -> None:
    if loss is not None:
        flat.grad.zero_()
        loss.backward()
    torch.nn.utils.clip_grad_norm_(flat, config.max_grad_norm)
    opt.step()


def draw(n: int = config.batch_prompts) -> torch.Tensor:
    return inputs.pool.tokens[sampler.draw(n, gen)]


def trainer_step() -> None:
    prompts = draw()
    responses = sample(policy, prompts, 1.0, gen, repeats=k).responses
    scored = second.submit(score, rm, prompts.repeat_interleave(k, 0), responses)
    with torch.inference_mode():
        ref = response_logprobs(reference, prompts, responses, repeats=k)
    logp = response_logprobs(policy, prompts, responses, repeats=k)
    kl = (logp.detach() - ref).sum(-1)
    _, adv = shaped_advantages(scored.result(), kl, config.kl_coef, k)
    finish(-(adv * logp.sum(-1)).mean())


def half_forward(prompts: torch.Tensor, g: torch.Generator) -> tuple[torch.Tensor, ...]:
    responses = sample(policy, prompts, 1.0, g, repeats=k).responses
    proxy = score(rm, prompts.repeat_interleave(k, 0), responses)
    with torch.inference_mode():
        ref = response_logprobs(reference, prompts, responses, repeats=k)
    return proxy, ref, response_logprobs(policy, prompts, responses, repeats=k)


def halves_step() -> None:
    prompts = draw()
    h = len(prompts) // 2
    other = second.submit(half_forward, prompts[h:], half_gens[1])
    a = half_forward(prompts[:h], half_gens[0])
    b = other.result()
    logp = torch.cat([a[2].detach(), b[2].detach()])
    kl = (logp - torch.cat([a[1], b[1]])).sum(-1)
    _, adv = shaped_advantages(torch.cat([a[0], b[0]]), kl, config.kl_coef, k)
    n, m = len(adv), len(adv) // 2
    flat.grad.zero_()
    done = second.submit(lambda: (-(adv[m:] * b[2].sum(-1)).sum() / n).backward())
    (-(adv[:m] * a[2].sum(-1)).sum() / n).backward()
    done.result()
    finish()


def split_step(first: int = 10) -> None:
    prompts = draw()
    responses = sample(policy, prompts, 1.0, gen, repeats=k).responses
    r = first * k

    def theirs() -> tuple[torch.Tensor, torch.Tensor]:
        proxy = score(rm, prompts.repeat_interleave(k, 0), responses)
        return proxy, response_logprobs(policy, prompts[first:], responses[r:], repeats=k)

    other = second.submit(theirs)
    with torch.inference_mode():
        ref = response_logprobs(reference, prompts, responses, repeats=k)
    mine = response_logprobs(policy, prompts[:first], responses[:r], repeats=k)
    proxy, rest = other.result()
    kl = (torch.cat([mine.detach(), rest.detach()]) - ref).sum(-1)
    _, adv = shaped_advantages(proxy, kl, config.kl_coef, k)
    n = len(adv)
    flat.grad.zero_()
    done = second.submit(lambda: (-(adv[r:] * rest.sum(-1)).sum() / n).backward())
    (-(adv[:r] * mine.sum(-1)).sum() / n).backward()
    done.result()
    finish()


def plain_step(n: int) -> None:
    proxy, ref, logp = half_forward(draw(n), gen)
    _, adv = shaped_advantages(proxy, (logp.detach() - ref).sum(-1), config.kl_coef, k)
    finish(-(adv * logp.sum(-1)).mean())


def timed(fn) -> float:
    for _ in range(20):
        fn()
    start = time.perf_counter()
    for _ in range(args.steps):
        fn()
    return (time.perf_counter() - start) / args.steps * 1e3


with rl_linear_route():  # the trainer's kernels (torch's path on Intel CPUs)
    if args.prompts:
        ms = timed(lambda: plain_step(args.prompts))
        print(f"one thread, {args.prompts} prompts: {ms:.2f} ms")
    else:
        for _ in range(2):
            for name, fn in (
                ("trainer", trainer_step),
                ("halves", halves_step),
                ("split", split_step),
            ):
                print(f"{name}: {timed(fn):.2f} ms a step", flush=True)
