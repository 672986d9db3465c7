"""Reward-model training: mean-squared error on labelled (prompt, response) pairs."""

from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F

from rate.errors import RateError
from rate.parallel import single_thread
from rate.progress import progress
from tinyworld.heap import keep_freed_memory
from tinyworld.kernels import weight_gradients_beside
from tinyworld.models import check_finite
from tinyworld.optim import flat_parameters
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
    """Fit a fresh reward model to labels, torch on one thread (with OpenMP's threads sleeping
    between kernels, faster than two at these sizes: the world build's stage took 64 s against
    94 s, experiments/RESULTS.md at commit 825f898; and the same model whatever the
    machine's number of cores),
    with the weight gradients on a second thread (:func:`weight_gradients_beside`: the same
    model to the bit, the world build's stage 82 against 113 s); returns it and per-epoch
    training loss."""
    if not torch.isfinite(labels).all():
        raise ValueError("labels contain NaN or infinity")
    keep_freed_memory()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rm = RewardModel(config)
    rm.train()
    flat = flat_parameters(rm)
    opt = torch.optim.Adam([flat], lr=lr, fused=True)
    n = len(prompts)
    history = []
    fix = f"lower lr ({lr:g}); no reward model was saved"
    with single_thread(), weight_gradients_beside() as gradients_ready:
        for epoch in progress(range(epochs), desc="reward model"):
            order = torch.randperm(n, generator=gen)
            total = torch.zeros((), dtype=torch.float64)  # a tensor: one .item() an epoch
            for i in range(0, n, batch_size):
                idx = order[i : i + batch_size]
                loss = F.mse_loss(rm(prompts[idx], responses[idx]), labels[idx])
                flat.grad.zero_()
                loss.backward()
                gradients_ready()
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
