"""KL-regularised REINFORCE with a per-prompt group-mean baseline (SPEC B.4).

One readable loop: sample prompts by family weight, draw ``samples_per_prompt`` responses each,
score them with the reward model, optionally reshape the rewards with a user's
``reward_wrapper``, subtract ``kl_coef * sum_t(log pi - log pi_ref)``, take the advantage
against the prompt's group mean and step Adam on ``-mean(advantage * sum_t log pi)``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch

from rate.errors import BusyError, RateError
from rate.heap import keep_freed_memory
from rate.io import atomic_write_json
from rate.parallel import in_worker, single_thread
from rate.progress import progress
from rate.provenance import folder_lock
from rate.schema import to_dict
from tinyworld.data import PromptPool
from tinyworld.kernels import cpu_vendor, rl_linear_route, weight_gradients_beside
from tinyworld.models import save_model
from tinyworld.optim import flat_parameters
from tinyworld.rl_config import RLConfig, RLInputs, apply_reward_wrapper, prepare
from tinyworld.sampling import (
    ResponseLogprobs,
    TracedDecoding,
    response_logprobs,
    sample,
    score,
)
from tinyworld.traced import Traced
from tinyworld.vocab import FAMILIES, decode_responses

log = logging.getLogger(__name__)


# Whether RL decodes in two halves (:class:`~tinyworld.sampling.TracedDecoding`), the
# second on its second thread. Fixed per CPU, as the linear route is: measured faster on an
# AMD EPYC (400 steps: median 8.15 against 9.02 s, experiments/RESULTS.md at commit 825f898,
# "Faster RL: the reward model traced on AMD, the decoding in halves"); on an Intel Xeon two
# threads decoding halves were slower than one decoding the whole (6.0 against 4.5 ms, 2026-12-03),
# so there a decoding stays whole. Either way a run's numbers do not depend on whether it
# has a second thread.
DECODE_IN_HALVES = cpu_vendor() != "GenuineIntel"


@dataclass(frozen=True)
class TracedPasses:
    """The passes of an RL step whose shapes stay the same, run as TorchScript traces
    (:mod:`tinyworld.traced`): the same numbers as the eager modules, with less of
    Python's time per kernel. The policy's pass with autograd stays eager (traced, it gained
    0.2 ms of 10)."""

    decoding: TracedDecoding
    reward: Traced
    reference_logprobs: Traced

    @classmethod
    def of(
        cls,
        inputs: RLInputs,
        config: RLConfig,
        beside: Callable[..., Future] | None = None,
    ) -> TracedPasses:
        """With ``beside`` (:func:`side_thread`'s submit, as the trainer passes it), each
        decoding runs in two halves, the second by ``beside``, where
        :data:`DECODE_IN_HALVES`; without, or elsewhere, whole."""
        k = config.samples_per_prompt
        halves_beside = beside if DECODE_IN_HALVES else None
        return cls(
            TracedDecoding(inputs.policy, config.temperature, k, halves_beside),
            Traced(inputs.reward_model, "reward model"),
            Traced(ResponseLogprobs(inputs.reference, k), "reference log-probs"),
        )


def shaped_advantages(
    reward: torch.Tensor, kl: torch.Tensor, kl_coef: float, group_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """shaped = reward - kl_coef * kl; advantage = shaped minus the mean of its prompt's group.

    Rows are ordered prompt by prompt, ``group_size`` samples each. Both results are (B,).
    """
    shaped = reward - kl_coef * kl
    grouped = shaped.view(-1, group_size)
    advantage = (grouped - grouped.mean(dim=1, keepdim=True)).reshape(-1)
    return shaped, advantage


class PromptSampler:
    """Draws prompts: a family by weight, then a prompt of that family uniformly."""

    def __init__(self, pool: PromptPool, family_probs: torch.Tensor) -> None:
        self.family_probs = family_probs
        by_family = [torch.nonzero(pool.families == f).squeeze(1) for f in range(len(FAMILIES))]
        self.sizes = torch.tensor([len(ix) for ix in by_family])
        # (F, largest family): row f lists family f's prompt indices, padded with -1.
        self.table = torch.full((len(FAMILIES), int(self.sizes.max())), -1, dtype=torch.long)
        for f, ix in enumerate(by_family):
            self.table[f, : len(ix)] = ix

    def draw(self, n: int, gen: torch.Generator) -> torch.Tensor:
        fams = torch.multinomial(self.family_probs, n, replacement=True, generator=gen)
        within = (torch.rand(n, generator=gen) * self.sizes[fams]).long()
        return self.table[fams, within]


# A run directory holds a finished run when its final checkpoint/ is there (saved last, and
# atomically); run_config.json without it is an unfinished run (killed, or its wrapper failed),
# which a rerun replaces without --overwrite.
_RUN_FILES = ("run_config.json", "log.jsonl")
_RUN_DIRS = ("checkpoint", "checkpoints")


def _finished_run(out: Path) -> bool:
    return (out / "run_config.json").is_file() and (out / "checkpoint").is_dir()


def _clear_run(out: Path) -> None:
    """Remove what an earlier run left in ``out`` (a finished one only with --overwrite), so
    that no old step_* checkpoint sits beside the new run's."""
    if (out / "run_config.json").exists() and not _finished_run(out):
        log.warning("%s holds an unfinished run (no checkpoint/); replacing it", out)
    for name in _RUN_DIRS:
        shutil.rmtree(out / name, ignore_errors=True)
    for name in _RUN_FILES:
        (out / name).unlink(missing_ok=True)


def train_rl(
    config: RLConfig,
    world: Path,
    out: Path,
    overwrite: bool = False,
    second_thread: bool | None = None,
) -> dict:
    """Run RL and write run_config.json, log.jsonl and checkpoint/ (plus checkpoints/ if asked).

    Each prompt is encoded once for all its samples, in sampling (a key/value cache) and in the
    teacher-forced passes (see :meth:`Policy.response_logits`); ``benchmarks.rl`` holds the
    plain loop and the published trainer that this is measured against.

    torch runs on one intra-op thread, wherever the run is: with OpenMP's threads sleeping
    between kernels (``rate`` sets OMP_WAIT_POLICY=PASSIVE, which shared machines need), a
    second one made a step slower, not faster (experiments/rl_speed/README.md;
    experiments/RESULTS.md at commit 825f898, "Faster RL: one step"), and one makes a run's
    numbers the same alone, in a worker or beside other runs.
    With ``second_thread`` (by default outside a pool's worker, whose siblings have the other
    CPUs) a second thread (:func:`side_thread`) decodes half of each step's prompts (where
    :data:`DECODE_IN_HALVES`), scores the samples with the reward model, and computes the
    policy's weight gradients
    (:func:`tinyworld.kernels.weight_gradients_beside`); the numbers are the same either
    way.
    Linear layers take RL's route (:func:`tinyworld.kernels.rl_linear_route`: torch's
    path on Intel CPUs, 1.10x faster a step there).
    """
    out = Path(out)
    _refuse_finished(out, overwrite)
    inputs = prepare(config, world)
    busy = lambda pid: BusyError(  # noqa: E731
        f"{out}: another RL run (pid {pid}) is training into this folder; wait for it to "
        "finish, or choose another --out"
    )
    # The lock sits beside the run folder, which holds the run's outputs and nothing else.
    with folder_lock(out.parent, busy, name=run_lock_name(out)):
        _refuse_finished(out, overwrite)  # again: it may have finished while this one loaded
        out.mkdir(parents=True, exist_ok=True)
        beside = not in_worker() if second_thread is None else second_thread
        with single_thread(), rl_linear_route():
            return _train(config, inputs, world, out, beside)


def run_lock_name(out: Path) -> str:
    """The name of a run folder's lock file, in its parent folder."""
    return f".{out.name}.lock"


def _refuse_finished(out: Path, overwrite: bool) -> None:
    if _finished_run(out) and not overwrite:
        raise RateError(f"{out} already holds a run; choose another --out or pass --overwrite")


@contextmanager
def side_thread(beside: bool) -> Iterator[Callable[..., Future]]:
    """``submit(fn, *args)`` -> a future of ``fn(*args)``: run on a second thread when
    ``beside``, else here and now.

    In RL it decodes half of a step's prompts beside the other half (where
    :data:`DECODE_IN_HALVES`; :class:`~tinyworld.sampling.TracedDecoding`), then the
    reward model scores the samples beside the reference's and the policy's passes, which
    need nothing of each other: 16.4 against 19.7 ms a step (``python -m
    benchmarks.rl_step``). torch runs each op on the thread that calls it (one intra-op
    thread), so the results are the same either way, bit for bit, and nothing spins while it
    waits. Not by default in a pool's worker, whose siblings have the other CPUs (there two
    runs at once were slower this way, in one comparison).
    """
    if not beside:

        def now(fn: Callable[..., object], *args: object) -> Future:
            done: Future = Future()
            done.set_result(fn(*args))
            return done

        yield now
        return
    # A new thread's OpenMP and MKL take every CPU until torch's first parallel op in it
    # (checked with mkl_get_max_threads): its first matrix products would compete with this
    # thread's. It takes this one's count from the start.
    with ThreadPoolExecutor(
        1,
        thread_name_prefix="rate-rl-side",
        initializer=torch.set_num_threads,
        initargs=(torch.get_num_threads(),),
    ) as pool:
        yield pool.submit


def start_training(
    inputs: RLInputs, config: RLConfig
) -> tuple[torch.nn.Parameter, torch.optim.Optimizer]:
    """Freeze the reference and the reward model and put the policy in training mode.
    -> the policy's flat parameter (:func:`flat_parameters`) and Adam over it."""
    for p in (*inputs.reference.parameters(), *inputs.reward_model.parameters()):
        p.requires_grad_(False)
    inputs.policy.train()
    flat = flat_parameters(inputs.policy)
    return flat, torch.optim.Adam([flat], lr=config.lr, fused=True)


def _train(config: RLConfig, inputs: RLInputs, world: Path, out: Path, second_thread: bool) -> dict:
    """The loop of :func:`train_rl`, with the run folder's lock held."""
    keep_freed_memory()
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    _clear_run(out)
    # Relative, so that a world (whose runs live inside it) can be moved or copied whole.
    run_config = {**to_dict(config), "world": os.path.relpath(Path(world).resolve(), out.resolve())}
    atomic_write_json(out / "run_config.json", run_config)
    log_path = out / "log.jsonl"

    policy = inputs.policy
    flat, opt = start_training(inputs, config)
    k = config.samples_per_prompt
    sampler = PromptSampler(inputs.pool, inputs.family_probs)
    start = time.perf_counter()
    last: dict = {}
    # The second thread's jobs (two pools, never busy at once): half of each
    # decoding, the reward model's scores, and the policy's weight gradients while the
    # backward pass goes on (by then the scores are in). A run alone: 400 steps in 9.3-10.5
    # against 10.6-13.2 s, the same run to the bit (experiments/RESULTS.md at commit 825f898,
    # "The world build: weight gradients beside").
    weights_beside = weight_gradients_beside() if second_thread else nullcontext(lambda: None)
    with (
        side_thread(second_thread) as submit,
        weights_beside as gradients_ready,
        open(log_path, "a") as log_file,
    ):
        # Decodings in halves wherever the run is: on the second thread, or in turn here.
        traced = TracedPasses.of(inputs, config, submit)
        for step in progress(range(1, config.steps + 1), desc="rl", total=config.steps):
            idx = sampler.draw(config.batch_prompts, gen)
            prompts = inputs.pool.tokens[idx]  # (B, 6); its k samples follow each other
            samples = sample(policy, prompts, config.temperature, gen, k, traced.decoding)
            responses = samples.responses  # (B*k, 8)
            scored = submit(score, traced.reward, prompts.repeat_interleave(k, dim=0), responses)
            with torch.inference_mode():
                ref_logp = traced.reference_logprobs(prompts, responses)
            logp = response_logprobs(policy, prompts, responses, repeats=k)  # (B*k, 8), grad
            proxy = scored.result()  # (B*k,)
            reward = proxy
            if inputs.wrapper is not None:
                records = [inputs.pool.records[i] for i in idx.repeat_interleave(k).tolist()]
                reward = apply_reward_wrapper(
                    inputs.wrapper,
                    config.reward_wrapper,
                    records,
                    decode_responses(responses),
                    proxy,
                )
            kl = (logp.detach() - ref_logp).sum(-1)  # (B*k,)
            shaped, advantage = shaped_advantages(reward, kl, config.kl_coef, k)
            loss = -(advantage * logp.sum(-1)).mean()
            flat.grad.zero_()  # the parameters' gradients are views of it: kept, not freed
            loss.backward()
            gradients_ready()
            torch.nn.utils.clip_grad_norm_(flat, config.max_grad_norm)
            opt.step()

            if step % config.log_every == 0 or step == config.steps:
                last = {
                    "step": step,
                    "proxy_reward": round(proxy.mean().item(), 6),
                    "kl": round(kl.mean().item(), 6),
                    "shaped_reward": round(shaped.mean().item(), 6),
                    "entropy": round(samples.entropy.mean().item(), 6),
                    "loss": round(loss.item(), 6),
                    "elapsed_s": round(time.perf_counter() - start, 3),
                }
                if inputs.wrapper is not None:
                    last["wrapped_reward"] = round(reward.mean().item(), 6)
                log_file.write(json.dumps(last) + "\n")
                log_file.flush()
            if config.save_every and step % config.save_every == 0 and step != config.steps:
                save_model(policy, out / "checkpoints" / f"step_{step:06d}", extra={"step": step})
    policy.eval()
    save_model(policy, out / "checkpoint", extra={"step": config.steps})
    log.info("RL run done in %.1f s: %s", time.perf_counter() - start, last)
    return last
