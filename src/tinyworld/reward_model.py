"""The bidirectional reward model: mean-pooled, one score per (prompt, response)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tinyworld.blocks import Block
from tinyworld.kernels import linear
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
        offsets = torch.arange(c.block_size) * c.vocab_size
        self.register_buffer("pair_offsets", offsets, persistent=False)

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Scores of (prompt, response) pairs, shape (B,)."""
        seq = torch.cat([prompts, responses], dim=1)  # (B, SEQ_LEN)
        B, T = seq.shape
        assert self.config.block_size == T, f"expected {SEQ_LEN} tokens, got {seq.shape}"
        first = self.blocks[0]
        x, qkv = self.first_layer_inputs(seq)  # (B, T, C), (B, T, 3C)
        H = first.attn.n_head
        q, k, v = qkv.view(B, T, 3, H, -1).permute(2, 0, 3, 1, 4).contiguous()
        x = first.feed_forward(x + first.attn.project(first.attn.mix(q, k, v, self.no_mask)))
        for block in self.blocks[1:]:
            x = block(x, self.no_mask)
        pooled = self.ln_f(x).mean(dim=1)  # (B, C)
        return self.head(pooled).squeeze(-1)

    def first_layer_inputs(self, seq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The embedded sequences (B, T, C) and the first block's q, k, v of them (B, T, 3C).

        Both depend on each (position, token) pair alone, so for batches with more tokens than
        there are pairs (T x vocabulary: 546) they are computed once per pair and gathered: in
        RL (128 x 14 tokens) this skips two thirds of the first block's largest matmul.
        """
        B, T = seq.shape
        first = self.blocks[0]
        qkv_weight, qkv_bias = first.attn.qkv.weight, first.attn.qkv.bias
        V = self.config.vocab_size
        if B <= V:
            x = F.embedding(seq, self.tok_emb.weight) + self.pos_emb.weight[:T]
            return x, linear(first.ln(first.ln1, x), qkv_weight, qkv_bias)
        pairs = self.tok_emb.weight + self.pos_emb.weight[:T, None]  # (T, V, C)
        pair_qkv = linear(first.ln(first.ln1, pairs), qkv_weight, qkv_bias)  # (T, V, 3C)
        index = seq + self.pair_offsets[:T]  # row of (position, token) in the (T * V) tables
        x = F.embedding(index, pairs.view(T * V, -1))
        return x, F.embedding(index, pair_qkv.view(T * V, -1))
