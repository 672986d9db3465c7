"""The causal policy: its config, its forward passes and cached token-by-token decoding."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tinyworld.blocks import Block
from tinyworld.vocab import N_SYLLABLES, PROMPT_LEN, SEQ_LEN, VOCAB_SIZE


@dataclass(frozen=True)
class PolicyConfig:
    """Shape of the causal policy (SPEC B.3: 2 layers, d_model 64, 4 heads, d_ff 128)."""

    n_layer: int = 2
    n_head: int = 4
    d_model: int = 64
    d_ff: int = 128
    vocab_size: int = VOCAB_SIZE
    n_out: int = N_SYLLABLES
    block_size: int = SEQ_LEN


def causal_mask(size: int) -> torch.Tensor:
    """(size, size) additive mask: position i sees positions <= i."""
    return torch.full((size, size), float("-inf")).triu(1)


class Policy(nn.Module):
    """Causal transformer over prompt + response that outputs logits over the 24 syllables."""

    def __init__(self, config: PolicyConfig | None = None) -> None:
        super().__init__()
        self.config = config or PolicyConfig()
        c = self.config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = nn.Embedding(c.block_size, c.d_model)
        self.blocks = nn.ModuleList(Block(c.d_model, c.n_head, c.d_ff) for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.n_out)
        # Not saved: the checkpoint format stays weights + config.
        self.register_buffer("causal", causal_mask(c.block_size), persistent=False)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """Output logits of final hidden states (..., C) -> (..., n_out)."""
        x = F.layer_norm(x, self.ln_f.normalized_shape, self.ln_f.weight, self.ln_f.bias)
        return F.linear(x, self.head.weight, self.head.bias)

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """Final hidden states (B, T, C) of the causal sequences ``idx`` (B, T)."""
        T = idx.shape[1]
        assert self.config.block_size >= T, f"sequence too long: {T}"
        x = F.embedding(idx, self.tok_emb.weight) + self.pos_emb.weight[:T]  # (B, T, C)
        mask = self.causal[:T, :T]
        for block in self.blocks:
            x = block(x, mask)
        return x

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, n_out) for the causal sequences ``idx`` (B, T) at positions 0..T-1."""
        return self.logits(self.hidden(idx))

    def response_logits(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits for each response position, shape (B, RESPONSE_LEN, n_out),
        of prompts (B, 6) and responses (B, 8)."""
        x = self.hidden(torch.cat([prompts, responses[:, :-1]], dim=1))
        return self.logits(x[:, PROMPT_LEN - 1 :])


class Decoder:
    """Token-by-token decoding of ``batch`` sequences with a preallocated key/value cache.

    :meth:`prefill` encodes the prompts once, :meth:`step` adds one token to every sequence,
    each through the policy's own blocks. The policy must not change while a Decoder is in use.
    """

    def __init__(self, policy: Policy, batch: int) -> None:
        c = policy.config
        self.policy = policy
        shape = (c.n_layer, batch, c.n_head, c.block_size, c.d_model // c.n_head)
        self.keys, self.values = torch.empty(shape), torch.empty(shape)  # (L, B, H, T, D)

    def prefill(self, prompts: torch.Tensor) -> torch.Tensor:
        """Encode prompts (B, 6) and store their keys and values. -> logits for the first
        response token (B, n_out)"""
        pol = self.policy
        T = prompts.shape[1]
        x = F.embedding(prompts, pol.tok_emb.weight) + pol.pos_emb.weight[:T]
        mask = pol.causal[:T, :T]
        for i, block in enumerate(pol.blocks):
            q, k, v = block.attn.heads(block.ln(block.ln1, x))  # (B, H, T, D) each
            self.keys[i, :, :, :T], self.values[i, :, :, :T] = k, v
            x = block.feed_forward(x + block.attn.project(block.attn.mix(q, k, v, mask)))
        return pol.logits(x[:, -1])

    def step(self, tokens: torch.Tensor, position: int) -> torch.Tensor:
        """Logits (B, n_out) after the drawn tokens (B,) at ``position``, which join the cache."""
        pol, S = self.policy, position + 1
        x = (pol.tok_emb.weight[tokens] + pol.pos_emb.weight[position]).unsqueeze(1)  # (B, 1, C)
        seen = pol.causal[position : position + 1, :S]  # zeros: the new token sees every key
        for i, block in enumerate(pol.blocks):
            q, k, v = block.attn.heads(block.ln(block.ln1, x))  # (B, H, 1, D) each
            self.keys[i, :, :, position] = k.squeeze(2)
            self.values[i, :, :, position] = v.squeeze(2)
            y = block.attn.mix(q, self.keys[i, :, :, :S], self.values[i, :, :, :S], seen)
            x = block.feed_forward(x + block.attn.project(y))
        return pol.logits(x.squeeze(1))
