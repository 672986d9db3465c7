"""KL-regularised REINFORCE with a per-prompt group-mean baseline (SPEC B.4).

One readable loop: sample prompts by family weight, draw ``samples_per_prompt`` responses each,
score them with the reward model, optionally reshape the rewards with a user's
``reward_wrapper``, subtract ``kl_coef * sum_t(log pi - log pi_ref)``, take the advantage
against the prompt's group mean and step Adam on ``-mean(advantage * sum_t log pi)``.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from rate.errors import BusyError, RateError
from rate.fs import ensure_dir
from rate.io import atomic_write_json, json_text
from rate.parallel import single_thread
from rate.progress import progress
from rate.provenance import folder_lock
from rate.schema import to_dict
from tinyworld.data import PromptPool
from tinyworld.models import check_finite, save_model
from tinyworld.rl_config import RLConfig, RLInputs, apply_reward_wrapper, prepare
from tinyworld.sampling import response_logprobs, sample, sample_without_cache, score
from tinyworld.vocab import FAMILIES, decode_responses

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SpeedDevices:
    """The loop's speed device, on in every run; ``benchmarks.rl`` runs the same loop with it
    off, so that what it buys is measured (experiments/rl_speed), not assumed. It changes what
    a step computes only by float rounding, only how fast.

    - ``kv_cache``: sampling keeps each token's keys and values instead of re-running the
      prefix for every token (:func:`~tinyworld.sampling.sample`).
    """

    kv_cache: bool = True


ALL_ON = SpeedDevices()


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
    devices: SpeedDevices = ALL_ON,
) -> dict:
    """Run RL and write run_config.json, log.jsonl and checkpoint/ (plus checkpoints/ if asked).

    Sampling keeps a key/value cache (:class:`SpeedDevices`); ``benchmarks.rl`` holds the published trainer that this is
    measured against. torch runs on one intra-op thread, so a run's numbers are the same
    alone, in a worker or beside other runs.
    """
    out = Path(out)
    config.validate("the RL config")  # again, for a config built in Python, not read
    _refuse_finished(out, overwrite)
    inputs = prepare(config, world)
    busy = lambda pid: BusyError(  # noqa: E731
        f"{out}: another RL run (pid {pid}) is training into this folder; wait for it to "
        "finish, or choose another --out"
    )
    # The lock sits beside the run folder, which holds the run's outputs and nothing else.
    with folder_lock(out.parent, busy, name=run_lock_name(out)):
        _refuse_finished(out, overwrite)  # again: it may have finished while this one loaded
        ensure_dir(out)
        with single_thread():
            return _train(config, inputs, world, out, devices)


def run_lock_name(out: Path) -> str:
    """The name of a run folder's lock file, in its parent folder."""
    return f".{out.name}.lock"


def _refuse_finished(out: Path, overwrite: bool) -> None:
    if _finished_run(out) and not overwrite:
        raise RateError(f"{out} already holds a run; choose another --out or pass --overwrite")


def start_training(inputs: RLInputs, config: RLConfig) -> torch.optim.Optimizer:
    """Freeze the reference and the reward model and put the policy in training mode.
    -> Adam over the policy's parameters, fused: one kernel for all its tensors, which also
    carries an lr near float32's limit into the weights (caught by the finite check) where
    torch's per-tensor path raises."""
    for p in (*inputs.reference.parameters(), *inputs.reward_model.parameters()):
        p.requires_grad_(False)
    inputs.policy.train()
    return torch.optim.Adam(inputs.policy.parameters(), lr=config.lr, fused=True)


# What each log line holds of a step (SPEC B.4), after its number and before the time.
LOGGED = ("proxy_reward", "kl", "shaped_reward", "entropy", "loss")


def rl_step(
    config: RLConfig,
    inputs: RLInputs,
    idx: torch.Tensor,
    gen: torch.Generator,
    opt: torch.optim.Optimizer,
    devices: SpeedDevices = ALL_ON,
) -> dict[str, torch.Tensor]:
    """One REINFORCE step on the prompts ``idx``: sample, score, shape with the KL, step.
    -> the step's tensors that the log reads."""
    policy, k = inputs.policy, config.samples_per_prompt
    each = inputs.pool.tokens[idx].repeat_interleave(k, dim=0)  # (B*k, 6): k rows per prompt
    if devices.kv_cache:
        samples = sample(policy, each, config.temperature, gen)
    else:
        samples = sample_without_cache(policy, each, config.temperature, gen)
    responses = samples.responses  # (B*k, 8)
    with torch.inference_mode():
        proxy = score(inputs.reward_model, each, responses)
        ref_logp = response_logprobs(inputs.reference, each, responses)  # (B*k, 8)
    logp = response_logprobs(policy, each, responses)  # with grad
    reward = proxy  # (B*k,)
    if inputs.wrapper is not None:
        records = [inputs.pool.records[i] for i in idx.repeat_interleave(k).tolist()]
        reward = apply_reward_wrapper(
            inputs.wrapper, config.reward_wrapper, records, decode_responses(responses), proxy
        )
    kl = (logp.detach() - ref_logp).sum(-1)  # (B*k,)
    shaped, advantage = shaped_advantages(reward, kl, config.kl_coef, k)
    loss = -(advantage * logp.sum(-1)).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
    opt.step()
    return {
        "proxy_reward": proxy,
        "kl": kl,
        "shaped_reward": shaped,
        "entropy": samples.entropy,
        "loss": loss,
        "wrapped_reward": reward,
    }


def _divergence_fix(config: RLConfig, out: Path) -> str:
    """What to do about a run that went non-finite; it stops before saving checkpoint/."""
    return (
        f"lower lr ({config.lr:g}) or kl_coef ({config.kl_coef:g}) and rerun; {out} is left "
        "unfinished (no checkpoint/)"
    )


def _train(
    config: RLConfig, inputs: RLInputs, world: Path, out: Path, devices: SpeedDevices
) -> dict:
    """The loop of :func:`train_rl`, with the run folder's lock held."""
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    _clear_run(out)
    # Relative, so that a world (whose runs live inside it) can be moved or copied whole.
    run_config = {**to_dict(config), "world": os.path.relpath(Path(world).resolve(), out.resolve())}
    atomic_write_json(out / "run_config.json", run_config)

    opt = start_training(inputs, config)
    sampler = PromptSampler(inputs.pool, inputs.family_probs)
    start = time.perf_counter()
    last: dict = {}
    with open(out / "log.jsonl", "a") as log_file:
        for step in progress(range(1, config.steps + 1), desc="rl", total=config.steps):
            idx = sampler.draw(config.batch_prompts, gen)
            metrics = rl_step(config, inputs, idx, gen, opt, devices)
            # A NaN or inf in a reward, the KL or a weight reaches the loss; one check a step.
            if not torch.isfinite(metrics["loss"]):
                raise RateError(
                    f"RL step {step}: the loss became non-finite ({metrics['loss'].item()}); "
                    + _divergence_fix(config, out)
                )
            logging_step = step % config.log_every == 0 or step == config.steps
            saving_step = bool(config.save_every) and step % config.save_every == 0
            if logging_step or saving_step:
                # A step's update can break the weights while its own loss was finite.
                check_finite(inputs.policy, f"RL step {step}", _divergence_fix(config, out))
            if logging_step:
                mean = {k: round(v.mean().item(), 6) for k, v in metrics.items()}
                last = {"step": step, **{k: mean[k] for k in LOGGED}}
                last["elapsed_s"] = round(time.perf_counter() - start, 3)
                if inputs.wrapper is not None:
                    last["wrapped_reward"] = mean["wrapped_reward"]
                log_file.write(json_text(last) + "\n")
                log_file.flush()
            if saving_step and step != config.steps:
                save_model(
                    inputs.policy, out / "checkpoints" / f"step_{step:06d}", extra={"step": step}
                )
    inputs.policy.eval()
    save_model(inputs.policy, out / "checkpoint", extra={"step": config.steps})
    log.info("RL run done in %.1f s: %s", time.perf_counter() - start, last)
    return last
