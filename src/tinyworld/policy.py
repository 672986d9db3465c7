"""The causal policy: its config, its forward passes and cached token-by-token decoding."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from tinyworld.blocks import Block
from tinyworld.kernels import attention_weights, linear
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
        return linear(x, self.head.weight, self.head.bias)

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


class LayerTensors(NamedTuple):
    """One block's weights, gathered once per decoding (see :class:`Decoder`)."""

    ln1_weight: torch.Tensor
    ln1_bias: torch.Tensor
    qkv_weight: torch.Tensor
    qkv_bias: torch.Tensor
    proj_weight: torch.Tensor
    proj_bias: torch.Tensor
    ln2_weight: torch.Tensor
    ln2_bias: torch.Tensor
    up_weight: torch.Tensor
    up_bias: torch.Tensor
    down_weight: torch.Tensor
    down_bias: torch.Tensor

    @classmethod
    def of(cls, block: Block) -> LayerTensors:
        a, up, down = block.attn, block.mlp[0], block.mlp[2]
        return cls(
            *(block.ln1.weight, block.ln1.bias, a.qkv.weight, a.qkv.bias),
            *(a.proj.weight, a.proj.bias, block.ln2.weight, block.ln2.bias),
            *(up.weight, up.bias, down.weight, down.bias),
        )


class Decoder:
    """Token-by-token decoding of ``batch`` sequences with a preallocated key/value cache.

    :meth:`prefill` encodes the prompts once, :meth:`step` adds one token to every sequence.
    The cache is (L, B, H, 2, T, D): a token's key and value sit side by side, so one copy
    stores both and the keys so far are one strided view (no copy) for the batched matmul.
    The policy's tensors are gathered once, because at 128 rows a step's kernels are so small
    that looking weights up through nn.Module took a quarter to a third of its time. The policy
    must not change while a Decoder is in use.
    """

    def __init__(self, policy: Policy, batch: int) -> None:
        c = policy.config
        self.policy = policy
        self.head_dim = c.d_model // c.n_head
        self.kv = torch.empty(c.n_layer, batch, c.n_head, 2, c.block_size, self.head_dim)
        self.layers = [LayerTensors.of(block) for block in policy.blocks]
        self.shape = (c.d_model,)
        self.first_rows = Decoder.first_rows_of(policy)

    @staticmethod
    def first_rows_of(policy: Policy) -> torch.Tensor:
        """A step's input to the first block and that block's q, k, v, which depend on the
        (position, token) pair alone: one table holds them for every pair of a drawn token
        (14 x 24 rows, against the 7 x 128 a decoding computes in RL), and a step gathers its
        rows. -> (14 * n_out, 4C)"""
        c, first = policy.config, policy.blocks[0]
        x = policy.tok_emb.weight[: c.n_out] + policy.pos_emb.weight[:, None]  # (T, n_out, C)
        h = first.ln(first.ln1, x)
        qkv = linear(h, first.attn.qkv.weight, first.attn.qkv.bias)  # (T, n_out, 3C)
        return torch.cat([x, qkv], dim=-1).view(-1, 4 * c.d_model)

    def prefill(self, prompts: torch.Tensor, repeats: int) -> torch.Tensor:
        """Encode prompts (U, 6) and store their keys and values for each of their ``repeats``
        rows (ordered prompt by prompt). -> logits for the first response token (U * repeats, n_out)
        """
        pol = self.policy
        U, T = prompts.shape
        x = F.embedding(prompts, pol.tok_emb.weight) + pol.pos_emb.weight[:T]
        mask = pol.causal[:T, :T]
        for i, block in enumerate(pol.blocks):
            qkv = block.attn.heads(block.ln(block.ln1, x))  # (3, U, H, T, D)
            rows = self.kv[i].view(U, repeats, *self.kv.shape[2:])[:, :, :, :, :T]
            rows.copy_(qkv[1:].permute(1, 2, 0, 3, 4).unsqueeze(1))  # (U, 1, H, 2, T, D)
            q, k, v = qkv.contiguous()
            x = block.feed_forward(x + block.attn.project(block.attn.mix(q, k, v, mask)))
        return pol.logits(x[:, -1]).repeat_interleave(repeats, dim=0)

    def step(self, tokens: torch.Tensor, position: int) -> torch.Tensor:
        """Logits (B, n_out) after the drawn tokens (B,) (syllables: ids below n_out) at
        ``position``, which join the cache."""
        pol, shape = self.policy, self.shape
        B, D, S, C = tokens.shape[0], self.head_dim, position + 1, shape[0]
        H = C // D
        rows = self.first_rows.index_select(0, tokens + position * pol.config.n_out)  # (B, 4C)
        x, first_qkv = rows.split([C, 3 * C], dim=1)
        seen = pol.causal[position : position + 1, :S]  # zeros: the new token sees every key
        for i, w in enumerate(self.layers):
            if i == 0:
                qkv = first_qkv.view(B, 3, H, D)
            else:
                h = F.layer_norm(x, shape, w.ln1_weight, w.ln1_bias)
                qkv = linear(h, w.qkv_weight, w.qkv_bias).view(B, 3, H, D)
            self.kv[i, :, :, :, position] = qkv[:, 1:].transpose(1, 2)  # (B, H, 2, D)
            kv = self.kv[i, :, :, :, :S]  # (B, H, 2, S, D)
            att = attention_weights(
                torch.baddbmm(
                    seen,
                    qkv[:, 0].reshape(B * H, 1, D),
                    kv[:, :, 0].reshape(B * H, S, D).transpose(1, 2),
                    alpha=1.0 / math.sqrt(D),
                )
            )  # (B*H, 1, S)
            v = kv[:, :, 1].reshape(B * H, S, D)
            if B <= 1024:  # RL's 128 rows: a broadcast product beats bmm's 1 x S x D matrices
                y = (att.view(B * H, S, 1) * v).sum(dim=1)
            else:  # thousands of rows: its (B*H, S, D) temporary costs more than bmm
                y = torch.bmm(att, v).view(B * H, D)
            x = x + linear(y.view(B, H * D), w.proj_weight, w.proj_bias)
            h = F.layer_norm(x, shape, w.ln2_weight, w.ln2_bias)
            h = linear(h, w.up_weight, w.up_bias, gelu=True)
            x = x + linear(h, w.down_weight, w.down_bias)
        return pol.logits(x)
