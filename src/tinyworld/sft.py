"""Supervised fine-tuning of a policy on demonstrations (next-syllable cross-entropy)."""

from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F

from rate.errors import RateError
from rate.parallel import single_thread
from rate.progress import progress
from tinyworld.models import check_finite
from tinyworld.policy import Policy, PolicyConfig

log = logging.getLogger(__name__)


def train_sft(
    prompts: torch.Tensor,
    responses: torch.Tensor,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    config: PolicyConfig | None = None,
) -> tuple[Policy, list[dict]]:
    """Fit a fresh policy to (prompt, response) demonstrations, on one thread (as
    :func:`tinyworld.rm_train.train_reward_model`); returns it and per-epoch metrics."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    policy = Policy(config)
    policy.train()
    opt = torch.optim.AdamW(policy.parameters(), lr=lr, weight_decay=0.01, fused=True)
    n = len(prompts)
    steps_total = epochs * ((n + batch_size - 1) // batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=lr, total_steps=steps_total, pct_start=0.1
    )
    history = []
    fix = f"lower lr ({lr:g}); no policy was saved"
    with single_thread():
        for epoch in progress(range(epochs), desc="sft"):
            order = torch.randperm(n, generator=gen)
            total, count = torch.zeros((), dtype=torch.float64), 0  # one .item() an epoch
            for i in range(0, n, batch_size):
                idx = order[i : i + batch_size]
                logits = policy.response_logits(prompts[idx], responses[idx])  # (B, 8, S)
                loss = F.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), responses[idx].reshape(-1)
                )
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                total += loss.detach() * len(idx)
                count += len(idx)
            mean = total.item() / count
            if not math.isfinite(mean):
                raise RateError(
                    f"SFT epoch {epoch + 1}: the loss became non-finite ({mean}); {fix}"
                )
            history.append({"epoch": epoch + 1, "loss": mean})
            log.debug("sft epoch %d loss %.4f", epoch + 1, mean)
    check_finite(policy, "SFT", fix)  # the last step's update is in no epoch's loss
    policy.eval()
    return policy, history
