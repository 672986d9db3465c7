"""Best-of-N selection: draw N responses per prompt and keep the one the reward model likes most."""

from __future__ import annotations

import torch

from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.sampling import sample, score


def best_of_n(
    policy: Policy,
    rm: RewardModel,
    prompts: torch.Tensor,
    n: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The best of ``n`` samples for each prompt row: responses (B, 8) and their scores (B,)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    each = prompts.repeat_interleave(n, dim=0)  # (B*n, 6): n rows per prompt, in a row
    responses = sample(policy, each, temperature, generator).responses  # (B*n, 8)
    scores = score(rm, each, responses).view(-1, n)
    best = scores.argmax(dim=1)  # (B,)
    chosen = responses.view(-1, n, responses.shape[-1])[torch.arange(len(prompts)), best]
    return chosen, scores.max(dim=1).values
