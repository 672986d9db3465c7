"""Where an RL step's time goes, and the kernels that made it faster.

    python -m benchmarks.rl_step --world W [--steps 200] [--threads 1]

Times the default recipe's step in its parts (sampling, the reward model, the reference's
log-probs, the policy's forward and backward pass, the optimiser) as the first thread sees
them, over ``--steps`` steps after 20 untimed ones, with the page faults a step takes: once
with everything in turn, and once as the trainer runs with its second thread
(``tinyworld.rl.side_thread``: half of each decoding, the reward model and the weight
gradients there), where the first thread's waits for it are parts of their own. Both on
the trainer's own passes (traced as it traces them, ``tinyworld.traced``). Then, in the
same process, each kernel change against what it replaced (the attention softmax over 14
keys against the padded one, torch's linear layer against oneDNN's), each traced pass
against its eager module, RL's decoding whole and in halves (in turn, and on two threads),
a whole run's step with the second thread against everything in turn, and with the linear
layers on torch's path against oneDNN's (RL's route depends on the CPU's vendor:
``tinyworld.kernels.rl_linear_route``). Nothing is asserted: it prints what it
measured.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F

from rate.heap import keep_freed_memory
from tinyworld import kernels
from tinyworld.kernels import (
    attention_weights,
    cpu_description,
    cpu_vendor,
    rl_linear_route,
    weight_gradients_beside,
)
from tinyworld.rl import (
    PromptSampler,
    TracedPasses,
    shaped_advantages,
    side_thread,
    start_training,
    train_rl,
)
from tinyworld.rl_config import load_rl_config, prepare
from tinyworld.sampling import (
    TracedDecoding,
    decode,
    gumbel_noise,
    response_logprobs,
    sample,
    score,
)

PARTS = (
    "sampling",
    "reward model",
    "reference",
    "policy forward",
    "reward model wait",
    "backward",
    "weight gradients wait",
    "optimiser",
)


def step_parts(world: Path, steps: int, beside: bool = False) -> dict[str, float]:
    """Mean milliseconds of each part of a default-recipe step on the first thread, and page
    faults per step, on the trainer's kernels (RL's route for linear layers). In turn, each
    part is its work and the waits are nil; ``beside``, as the trainer runs where it has a
    second thread (half of each decoding, the reward model and the weight gradients there),
    "reward model" is handing it over and the waits are what the first thread waits for."""
    with rl_linear_route():
        return _step_parts(world, steps, beside)


def _step_parts(world: Path, steps: int, beside: bool) -> dict[str, float]:
    config = load_rl_config(world / "configs" / "default.json")
    inputs = prepare(config, world)
    policy = inputs.policy
    flat, opt = start_training(inputs, config)
    gen = torch.Generator().manual_seed(0)
    sampler = PromptSampler(inputs.pool, inputs.family_probs)
    k = config.samples_per_prompt
    totals = dict.fromkeys(PARTS, 0.0)
    weights_beside = weight_gradients_beside() if beside else nullcontext(lambda: None)
    with side_thread(beside) as submit, weights_beside as gradients_ready:
        traced = TracedPasses.of(inputs, config, submit)  # the trainer's passes

        def one_step(record: bool) -> None:
            t = [time.perf_counter()]
            prompts = inputs.pool.tokens[sampler.draw(config.batch_prompts, gen)]
            samples = sample(policy, prompts, config.temperature, gen, k, traced.decoding)
            responses = samples.responses
            t.append(time.perf_counter())
            scored = submit(score, traced.reward, prompts.repeat_interleave(k, dim=0), responses)
            t.append(time.perf_counter())
            with torch.inference_mode():
                ref_logp = traced.reference_logprobs(prompts, responses)
            t.append(time.perf_counter())
            logp = response_logprobs(policy, prompts, responses, repeats=k)
            t.append(time.perf_counter())
            proxy = scored.result()
            t.append(time.perf_counter())
            kl = (logp.detach() - ref_logp).sum(-1)
            _, advantage = shaped_advantages(proxy, kl, config.kl_coef, k)
            loss = -(advantage * logp.sum(-1)).mean()
            flat.grad.zero_()
            loss.backward()
            t.append(time.perf_counter())
            gradients_ready()
            t.append(time.perf_counter())
            torch.nn.utils.clip_grad_norm_(flat, config.max_grad_norm)
            opt.step()
            t.append(time.perf_counter())
            if record:
                for name, a, b in zip(PARTS, t[:-1], t[1:], strict=True):
                    totals[name] += b - a

        for _ in range(20):
            one_step(False)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(steps):
            one_step(True)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    out = {name: secs / steps * 1e3 for name, secs in totals.items()}
    out["step"] = sum(out.values())
    out["page faults per step"] = faults / steps
    return out


def best_step_ms(
    world: Path, steps: int, rounds: int, settings: dict[str, tuple[bool, bool]]
) -> dict[str, float]:
    """Mean ms of a whole default-recipe run's step under each setting, ``name: (reward
    beside, RL's linear layers on torch's path)``: ``rate``'s own trainer, ``steps`` steps a
    run, interleaved rounds, each one's best round. RL's own route is restored after."""
    config = dataclasses.replace(
        load_rl_config(world / "configs" / "default.json"), steps=steps, log_every=steps
    )
    route = kernels.RL_ON_TORCH
    best = dict.fromkeys(settings, float("inf"))
    try:
        with tempfile.TemporaryDirectory(prefix="rate-bench-step-") as tmp:
            for _ in range(rounds):
                for name, (beside, on_torch) in settings.items():
                    kernels.RL_ON_TORCH = on_torch
                    run = Path(tmp) / "run"
                    last = train_rl(config, world, run, overwrite=True, second_thread=beside)
                    best[name] = min(best[name], last["elapsed_s"] / steps * 1e3)
    finally:
        kernels.RL_ON_TORCH = route
    return best


def beside_against_in_turn(world: Path, steps: int, rounds: int = 3) -> tuple[float, float]:
    """Mean ms of a whole run's step with its second thread (the reward model beside the
    policy's passes, the weight gradients beside the backward pass: the trainer outside a
    pool's worker) and everything in turn (inside one), on RL's own route."""
    route = kernels.RL_ON_TORCH
    best = best_step_ms(world, steps, rounds, {"beside": (True, route), "in turn": (False, route)})
    return best["beside"], best["in turn"]


def best_of(fn: Callable[[], object], repeats: int = 5, n: int = 100) -> float:
    """The fastest of ``repeats`` means over ``n`` calls, in microseconds."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def kernel_pairs() -> list[tuple[str, float, float]]:
    """(what, torch's microseconds, the other's) for each kernel change, at the RL step's
    shapes: the padded softmax, and oneDNN's linear layer where this torch has it (which RL
    takes on CPUs other than Intel's: :func:`tinyworld.kernels.onednn_preferred`)."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(512 * 14, 14, generator=gen)  # the reward model's attention
    x = torch.randn(1792, 96, generator=gen)  # the reward model's rows
    w, b = torch.randn(288, 96, generator=gen), torch.randn(288, generator=gen)
    onednn = kernels._onednn_linear_op()
    with torch.inference_mode():
        pairs = [
            (
                "attention softmax, 7,168 rows of 14 keys: torch / padded",
                best_of(lambda: scores.softmax(dim=-1)),
                best_of(lambda: attention_weights(scores)),
            )
        ]
        if onednn is not None:
            pairs.append(
                (
                    "linear layer 1,792 x 96 -> 288: torch / oneDNN",
                    best_of(lambda: F.linear(x, w, b)),
                    best_of(lambda: onednn(x, w, b, "none", [], "")),
                )
            )
    return pairs


def traced_pairs(world: Path, calls: int = 50) -> list[tuple[str, float, float]]:
    """(what, eager milliseconds, traced) for each of RL's traced passes on the world's models
    and RL's route, at the default recipe's shapes, the best of 5 means over ``calls`` calls;
    a pass that could not be traced here (``tinyworld.traced``) is left out."""
    with rl_linear_route():
        return _traced_pairs(world, calls)


def _traced_pairs(world: Path, calls: int) -> list[tuple[str, float, float]]:
    config = load_rl_config(world / "configs" / "default.json")
    inputs = prepare(config, world)
    policy, k = inputs.policy, config.samples_per_prompt
    prompts = inputs.pool.tokens[: config.batch_prompts]
    gen = torch.Generator().manual_seed(0)
    responses = sample(policy, prompts, config.temperature, gen, k).responses
    noise = gumbel_noise(len(responses), policy.config.n_out, gen)
    rows = prompts.repeat_interleave(k, dim=0)
    traced = TracedPasses.of(inputs, config)
    reference = traced.reference_logprobs.module  # the eager pass
    passes = [  # what, the eager call, the traced call, its Traced
        (
            f"decoding {len(responses)} rows",
            partial(decode, policy, prompts, noise, config.temperature, k),
            partial(traced.decoding, prompts, noise),
            traced.decoding.traced,
        ),
        (
            "reward model",
            partial(inputs.reward_model, rows, responses),
            partial(traced.reward, rows, responses),
            traced.reward,
        ),
        (
            "reference log-probs",
            partial(reference, prompts, responses),
            partial(traced.reference_logprobs, prompts, responses),
            traced.reference_logprobs,
        ),
    ]
    pairs = []
    with torch.inference_mode():
        for what, eager, traced_call, tracer in passes:
            traced_call()  # traced here, outside the timing
            if tracer.is_traced():
                pairs.append(
                    (
                        f"{what}: eager / traced",
                        best_of(eager, n=calls) / 1e3,
                        best_of(traced_call, n=calls) / 1e3,
                    )
                )
    return pairs


def decoding_halves(world: Path, calls: int = 100) -> list[tuple[str, float]]:
    """(what, ms) of RL's traced decoding at the default recipe's shapes, whole and in two
    halves (:class:`~tinyworld.sampling.TracedDecoding`): one half alone, the two in turn
    on this thread, and the second on a second thread (:func:`side_thread`) beside the
    first, as the trainer runs them where :data:`tinyworld.rl.DECODE_IN_HALVES`; the
    best of 5 means over ``calls`` calls, on RL's route."""
    with rl_linear_route():
        return _decoding_halves(world, calls)


def _decoding_halves(world: Path, calls: int) -> list[tuple[str, float]]:
    config = load_rl_config(world / "configs" / "default.json")
    inputs = prepare(config, world)
    policy, k, temperature = inputs.policy, config.samples_per_prompt, config.temperature
    prompts = inputs.pool.tokens[: config.batch_prompts]
    noise = gumbel_noise(len(prompts) * k, policy.config.n_out, torch.Generator().manual_seed(0))
    half = len(prompts) // 2
    whole = TracedDecoding(policy, temperature, k)
    with side_thread(False) as now, side_thread(True) as beside, torch.inference_mode():
        in_turn = TracedDecoding(policy, temperature, k, now)
        on_two = TracedDecoding(policy, temperature, k, beside)
        calls_of = {
            f"whole ({len(prompts) * k} rows)": partial(whole, prompts, noise),
            f"one half ({half * k} rows)": partial(whole, prompts[:half], noise[:, : half * k]),
            "two halves in turn": partial(in_turn, prompts, noise),
            "two halves, the second on a second thread": partial(on_two, prompts, noise),
        }
        for call in calls_of.values():
            call()  # traced here, outside the timing
        return [(what, best_of(call, n=calls) / 1e3) for what, call in calls_of.items()]


def linear_routes(world: Path, steps: int, rounds: int = 3) -> tuple[float, float] | None:
    """Mean ms of a whole run's step (the reward model beside) with RL's linear layers on
    torch's path and on oneDNN's; None where this torch has no oneDNN linear layer."""
    if kernels._onednn_linear_op() is None:
        return None
    best = best_step_ms(world, steps, rounds, {"torch": (True, True), "oneDNN": (True, False)})
    return best["torch"], best["oneDNN"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rl_step", description=__doc__)
    parser.add_argument("--world", type=Path, required=True, help="a built world")
    parser.add_argument("--steps", type=int, default=200, help="timed steps")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (RL trains on 1)")
    parser.add_argument(
        "--glibc-heap",
        action="store_true",
        help="leave glibc's heap settings as they are (the trainer changes them: rate.heap)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("RATE_PROGRESS", "0")
    torch.set_num_threads(args.threads)
    if not args.glibc_heap:
        keep_freed_memory()  # as the trainer does
    in_turn = step_parts(args.world, args.steps)
    two = step_parts(args.world, args.steps, beside=True)
    print(
        f"RL step on {cpu_description()}, {args.threads} thread(s) each, mean of {args.steps} "
        "steps, on the first thread: in turn / with the second thread (the waits are for it)"
    )
    print("| part | in turn (ms) | second thread (ms) |\n|---|---|---|")
    for name in (*PARTS, "step"):
        print(f"| {name} | {in_turn[name]:.2f} | {two[name]:.2f} |")
    print(
        f"page faults per step: {in_turn['page faults per step']:.1f} / "
        f"{two['page faults per step']:.1f}"
    )
    print("\n| kernel | torch (us) | the other (us) | ratio |\n|---|---|---|---|")
    for what, theirs, ours in kernel_pairs():
        print(f"| {what} | {theirs:.0f} | {ours:.0f} | {theirs / ours:.1f}x |")
    print("\n| pass | eager (ms) | traced (ms) | ratio |\n|---|---|---|---|")
    for what, eager, traced in traced_pairs(args.world):
        print(f"| {what} | {eager:.2f} | {traced:.2f} | {eager / traced:.2f}x |")
    print("\n| decoding (traced) | ms |\n|---|---|")
    for what, ms in decoding_halves(args.world):
        print(f"| {what} | {ms:.2f} |")
    beside, in_turn = beside_against_in_turn(args.world, args.steps)
    print(
        f"\nwhole step, a second thread / in turn: {beside:.2f} / {in_turn:.2f} ms "
        f"({in_turn / beside:.2f}x)"
    )
    routes = linear_routes(args.world, args.steps)
    if routes is not None:
        on_torch, on_onednn = routes
        taken = "torch's path" if kernels.RL_ON_TORCH else "oneDNN"
        print(
            f"whole step, linear layers on torch's path / on oneDNN: {on_torch:.2f} / "
            f"{on_onednn:.2f} ms ({on_onednn / on_torch:.2f}x); RL on this CPU "
            f"({cpu_vendor()}) takes {taken}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
