"""The pre-LayerNorm transformer block both networks are built of, written with few kernels."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# At these sizes (128 sequences of 14 tokens, 2 layers) the kernels are small and much of a
# step's cost is per kernel, so the passes below are written with few of them: one copy puts
# q, k and v head-major, one baddbmm gives the scaled and masked scores (SDPA's fused kernel
# is slower at 14 tokens on CPU), and the calls go to torch.nn.functional with each module's
# own weights, so checkpoints keep their layout.


def attention_weights(scores: torch.Tensor) -> torch.Tensor:
    """softmax over the last dimension (the keys), padded with -inf to a multiple of 16 first.

    torch's CPU softmax loads a row in whole vectors (16 floats); a row of 13 or 14 keys, as
    every attention here has, falls to its partial-load path, several times slower (the
    backward alike). The padding's weights are exactly 0, and the slice back to the real keys
    is a view. The one speed device of the world's models that buys 15% on its own
    (experiments/rl_speed/README.md).
    -> scores' shape
    """
    keys = scores.shape[-1]
    pad = -keys % 16
    if pad == 0:
        return scores.softmax(dim=-1)
    return F.pad(scores, (0, pad), value=float("-inf")).softmax(dim=-1)[..., :keys]


class SelfAttention(nn.Module):
    """Multi-head self-attention under an additive mask (0 where a query may look, -inf not)."""

    def __init__(self, d_model: int, n_head: int) -> None:
        super().__init__()
        assert d_model % n_head == 0, f"d_model {d_model} not divisible by n_head {n_head}"
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """q, k and v of ``x`` (B, T, C), head-major in one view: (3, B, H, T, C/H)."""
        B, T, C = x.shape
        qkv = F.linear(x, self.qkv.weight, self.qkv.bias)  # (B, T, 3C)
        return qkv.view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)

    def mix(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Attention of q (B, H, T, D) over k, v (B, H, S, D) under mask (T, S), heads merged
        back (before the output projection). -> (B, T, H * D)"""
        B, H, T, D = q.shape
        S = k.shape[2]
        att = torch.baddbmm(  # (B*H, T, S) = mask + q k^T / sqrt(D)
            mask,
            q.reshape(B * H, T, D),
            k.reshape(B * H, S, D).transpose(1, 2),
            alpha=1.0 / math.sqrt(D),
        )
        y = torch.bmm(attention_weights(att), v.reshape(B * H, S, D))  # (B*H, T, D)
        return y.view(B, H, T, D).transpose(1, 2).reshape(B, T, H * D)

    def project(self, y: torch.Tensor) -> torch.Tensor:
        return F.linear(y, self.proj.weight, self.proj.bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.heads(x).contiguous()
        return self.project(self.mix(q, k, v, mask))


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d_model: int, n_head: int, d_ff: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_head)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def ln(self, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """x + mlp(ln2(x)), the second half of the block."""
        up, down = self.mlp[0], self.mlp[2]
        h = F.gelu(F.linear(self.ln(self.ln2, x), up.weight, up.bias))
        return x + F.linear(h, down.weight, down.bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln(self.ln1, x), mask)
        return self.feed_forward(x)
