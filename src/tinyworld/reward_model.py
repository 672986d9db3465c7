"""The bidirectional reward model: mean-pooled, one score per (prompt, response)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tinyworld.blocks import Block
from tinyworld.vocab import SEQ_LEN, VOCAB_SIZE


@dataclass(frozen=True)
class RewardModelConfig:
    """Shape of the reward model (SPEC B.3: 2 layers, d_model 96, 4 heads, d_ff 192)."""

    n_layer: int = 2
    n_head: int = 4
    d_model: int = 96
    d_ff: int = 192
    vocab_size: int = VOCAB_SIZE
    block_size: int = SEQ_LEN


class RewardModel(nn.Module):
    """Bidirectional transformer, mean-pooled, with an MLP head giving one score per sequence."""

    def __init__(self, config: RewardModelConfig | None = None) -> None:
        super().__init__()
        self.config = config or RewardModelConfig()
        c = self.config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = nn.Embedding(c.block_size, c.d_model)
        self.blocks = nn.ModuleList(Block(c.d_model, c.n_head, c.d_ff) for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.d_model)
        self.head = nn.Sequential(
            nn.Linear(c.d_model, c.d_model), nn.GELU(), nn.Linear(c.d_model, 1)
        )
        self.register_buffer("no_mask", torch.zeros(c.block_size, c.block_size), persistent=False)

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Scores of (prompt, response) pairs, shape (B,)."""
        seq = torch.cat([prompts, responses], dim=1)  # (B, SEQ_LEN)
        T = seq.shape[1]
        assert self.config.block_size == T, f"expected {SEQ_LEN} tokens, got {seq.shape}"
        x = F.embedding(seq, self.tok_emb.weight) + self.pos_emb.weight[:T]  # (B, T, C)
        for block in self.blocks:
            x = block(x, self.no_mask)
        pooled = self.ln_f(x).mean(dim=1)  # (B, C)
        return self.head(pooled).squeeze(-1)
