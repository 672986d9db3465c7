"""Reward-model training: mean-squared error on labelled (prompt, response) pairs."""

from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F

from rate.errors import RateError
from rate.parallel import single_thread
from rate.progress import progress
from tinyworld.models import check_finite
from tinyworld.reward_model import RewardModel, RewardModelConfig

log = logging.getLogger(__name__)


def train_reward_model(
    prompts: torch.Tensor,
    responses: torch.Tensor,
    labels: torch.Tensor,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    config: RewardModelConfig | None = None,
) -> tuple[RewardModel, list[dict]]:
    """Fit a fresh reward model to labels, torch on one thread (OpenMP's threads sleeping
    between kernels: faster than two at these sizes, and the same model whatever the
    machine's number of cores). -> the model and its per-epoch training loss."""
    if not torch.isfinite(labels).all():
        raise ValueError("labels contain NaN or infinity")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rm = RewardModel(config)
    rm.train()
    opt = torch.optim.Adam(rm.parameters(), lr=lr, fused=True)
    n = len(prompts)
    history = []
    fix = f"lower lr ({lr:g}); no reward model was saved"
    with single_thread():
        for epoch in progress(range(epochs), desc="reward model"):
            order = torch.randperm(n, generator=gen)
            total = torch.zeros((), dtype=torch.float64)  # a tensor: one .item() an epoch
            for i in range(0, n, batch_size):
                idx = order[i : i + batch_size]
                loss = F.mse_loss(rm(prompts[idx], responses[idx]), labels[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.detach() * len(idx)
            mse = total.item() / n
            if not math.isfinite(mse):
                raise RateError(
                    f"reward model epoch {epoch + 1}: the loss became non-finite ({mse}); {fix}"
                )
            history.append({"epoch": epoch + 1, "mse": mse})
            log.debug("rm epoch %d mse %.5f", epoch + 1, mse)
    check_finite(rm, "reward model training", fix)  # the last step's update is in no epoch's loss
    rm.eval()
    return rm, history
