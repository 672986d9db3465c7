"""The two networks of the tiny world: a causal policy and a bidirectional reward model.

nanoGPT-style pre-LayerNorm blocks. The policy reads ``prompt + response`` left to right and
predicts the next syllable; the reward model reads the whole sequence in both directions,
mean-pools it and maps it to one score.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from rate.errors import RateError
from rate.io import atomic_directory, atomic_write_json
from tinyworld.kernels import attention_weights, linear
from tinyworld.vocab import N_SYLLABLES, PROMPT_LEN, RESPONSE_LEN, SEQ_LEN, VOCAB_SIZE

log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class RewardModelConfig:
    """Shape of the reward model (SPEC B.3: 2 layers, d_model 96, 4 heads, d_ff 192)."""

    n_layer: int = 2
    n_head: int = 4
    d_model: int = 96
    d_ff: int = 192
    vocab_size: int = VOCAB_SIZE
    block_size: int = SEQ_LEN


# At these sizes (128 sequences of 14 tokens, 2 layers) the kernels are small and much of a
# step's cost is per kernel, so the passes below are written with few of them: one copy puts
# q, k and v head-major, one baddbmm gives the scaled and masked scores (SDPA's flash kernel
# measured ~2x slower at T = 14 on this CPU), and the calls go to torch.nn.functional and to
# tinyworld.kernels (linear layers on oneDNN, except in RL on Intel CPUs; the padded
# softmax) with each module's own weights, so checkpoints keep their layout.


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
        qkv = linear(x, self.qkv.weight, self.qkv.bias)  # (B, T, 3C)
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
        return linear(y, self.proj.weight, self.proj.bias)

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
        h = linear(self.ln(self.ln2, x), up.weight, up.bias, gelu=True)
        return x + linear(h, down.weight, down.bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln(self.ln1, x), mask)
        return self.feed_forward(x)


def causal_mask(size: int) -> torch.Tensor:
    """(size, size) additive mask: position i sees positions <= i."""
    return torch.full((size, size), float("-inf")).triu(1)


@functools.lru_cache(maxsize=16)
def shared_prefix_rows(n_prompts: int, repeats: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The row layout of :meth:`Policy.response_logits` with shared prompts.

    Rows are the n_prompts x 6 prompt tokens, then the n_prompts x repeats x 7 response tokens
    that are inputs (a response's last token never is). -> each row's position (N,), and for
    each response and position the row whose output predicts it (n_prompts x repeats x 8,).
    Cached: never modify the tensors returned.
    """
    # Built outside inference mode even when first asked for inside it: autograd saves them.
    with torch.inference_mode(False):
        P, R, B = PROMPT_LEN, RESPONSE_LEN - 1, n_prompts * repeats
        positions = torch.cat([torch.arange(P).repeat(n_prompts), torch.arange(P, P + R).repeat(B)])
        first = (torch.arange(B) // repeats) * P + P - 1  # the prompt's last token
        rest = n_prompts * P + torch.arange(B)[:, None] * R + torch.arange(R)[None, :]
        return positions, torch.cat([first[:, None], rest], dim=1).reshape(-1)


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

    def response_logits(
        self, prompts: torch.Tensor, responses: torch.Tensor, repeats: int = 1
    ) -> torch.Tensor:
        """Teacher-forced logits for each response position, shape (B, RESPONSE_LEN, n_out).

        ``prompts`` (U, 6) holds each distinct prompt once and ``responses`` (U * repeats, 8)
        its ``repeats`` responses, ordered prompt by prompt. With ``repeats`` > 1 the prompt is
        encoded once for all of them: its rows' keys and values serve each response's queries.
        """
        U = prompts.shape[0]
        assert responses.shape == (U * repeats, RESPONSE_LEN), (
            f"expected ({U * repeats}, {RESPONSE_LEN}) responses for {U} prompts x {repeats}, "
            f"got {tuple(responses.shape)}"
        )
        if repeats == 1:
            x = self.hidden(torch.cat([prompts, responses[:, :-1]], dim=1))
            return self.logits(x[:, PROMPT_LEN - 1 :])
        positions, predicts = shared_prefix_rows(U, repeats)
        tokens = torch.cat([prompts.reshape(-1), responses[:, :-1].reshape(-1)])  # (N,)
        x = F.embedding(tokens, self.tok_emb.weight) + F.embedding(positions, self.pos_emb.weight)
        for block in self.blocks:
            y = self.shared_prefix_attention(block.attn, block.ln(block.ln1, x), U, repeats)
            x = block.feed_forward(x + block.attn.project(y))
        return self.logits(x.index_select(0, predicts).view(U * repeats, RESPONSE_LEN, -1))

    def shared_prefix_attention(
        self, attn: SelfAttention, h: torch.Tensor, n_prompts: int, repeats: int
    ) -> torch.Tensor:
        """Attention over the rows of :func:`shared_prefix_rows` (N, C): a prompt row sees the
        prompt's earlier rows, a response row the whole prompt and its own earlier rows. Before
        the output projection. -> (N, C)"""
        U, k, P, R = n_prompts, repeats, PROMPT_LEN, RESPONSE_LEN - 1
        N, C = h.shape
        H, D = attn.n_head, C // attn.n_head
        # split/unbind rather than slices: their backward joins the pieces instead of filling
        # a zero tensor of the whole for each slice.
        qkv_prompt, qkv_own = linear(h, attn.qkv.weight, attn.qkv.bias).split([U * P, U * k * R])
        prompt = (
            qkv_prompt.view(U, P, 3, H, D).permute(2, 0, 3, 1, 4).contiguous()
        )  # (3, U, H, P, D)
        q, kp, vp = prompt
        y_prompt = attn.mix(q, kp, vp, self.causal[:P, :P])  # (U, P, C)
        q_own, kv_own = qkv_own.view(U, k, R, 3, H, D).permute(3, 0, 1, 4, 2, 5).split([1, 2])
        # Each response's keys and values: its prompt's (shared, copied k times), then its own.
        kv = torch.cat([prompt[1:].unsqueeze(2).expand(2, U, k, H, P, D), kv_own], dim=4)
        k_all, v_all = kv.view(2, U * k, H, P + R, D)
        mask = self.causal[P : P + R, : P + R]  # the whole prompt, then causal over its own
        y_own = attn.mix(q_own.view(U * k, H, R, D), k_all, v_all, mask)  # (B, R, C)
        return torch.cat([y_prompt.reshape(U * P, C), y_own.reshape(U * k * R, C)])


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

    def __init__(self, policy: Policy, batch: int, first_rows: torch.Tensor | None = None) -> None:
        c = policy.config
        self.policy = policy
        self.head_dim = c.d_model // c.n_head
        self.kv = torch.empty(c.n_layer, batch, c.n_head, 2, c.block_size, self.head_dim)
        self.layers = [LayerTensors.of(block) for block in policy.blocks]
        self.shape = (c.d_model,)
        self.first_rows = Decoder.first_rows_of(policy) if first_rows is None else first_rows

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


# ---------------------------------------------------------------------------------------------
# Saving and loading: <dir>/<weights>.safetensors + <dir>/config.json, written atomically.

_FILES = {
    Policy: ("policy.safetensors", PolicyConfig),
    RewardModel: ("rm.safetensors", RewardModelConfig),
}
_KIND = {Policy: "policy", RewardModel: "reward_model"}


def save_model(model: Policy | RewardModel, directory: Path, extra: dict | None = None) -> None:
    """Write weights and config to ``directory`` atomically (a kill leaves the old one or none)."""
    weights_name, _ = _FILES[type(model)]
    meta = {"kind": _KIND[type(model)], **asdict(model.config), **(extra or {})}
    with atomic_directory(Path(directory), overwrite=True) as tmp:
        state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / weights_name))
        atomic_write_json(tmp / "config.json", meta)


def _load(cls: type, directory: Path) -> nn.Module:
    weights_name, config_cls = _FILES[cls]
    directory = Path(directory)
    kind = _KIND[cls]
    weights, config_path = directory / weights_name, directory / "config.json"
    for path in (weights, config_path):
        if not path.is_file():
            raise RateError(
                f"{directory}: not a {kind} directory ({path.name} is missing); point to a folder "
                f"holding {weights_name} and config.json, e.g. the world's {kind}/ or a run's checkpoint/"
            )
    try:
        meta = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RateError(f"{config_path}: cannot read model config ({err})") from err
    if meta.get("kind", kind) != kind:
        raise RateError(f"{config_path}: this is a {meta.get('kind')} model, expected a {kind}")
    names = {f.name for f in fields(config_cls)}
    config = config_cls(**{k: v for k, v in meta.items() if k in names})
    model = cls(config)
    try:
        state = load_file(str(weights))
        model.load_state_dict(state)
    except Exception as err:  # safetensors raises several types for corrupt files
        raise RateError(
            f"{weights}: cannot load weights ({err}); rebuild or re-copy the model"
        ) from err
    model.eval()
    return model


def load_policy(directory: Path) -> Policy:
    """Load a policy saved by :func:`save_model`."""
    return _load(Policy, directory)  # type: ignore[return-value]


def load_reward_model(directory: Path) -> RewardModel:
    """Load a reward model saved by :func:`save_model`."""
    return _load(RewardModel, directory)  # type: ignore[return-value]


__all__ = [
    "Decoder",
    "Policy",
    "PolicyConfig",
    "RewardModel",
    "RewardModelConfig",
    "RESPONSE_LEN",
    "load_policy",
    "load_reward_model",
    "save_model",
]
