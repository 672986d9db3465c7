"""The RL trainer's contenders for the benchmark: the published trainer and the plain loop.

* **The anchor** is the seed world's published trainer rebuilt plainly with the published sizes
  (SPEC B.3, B.4): standard ``nn.TransformerEncoderLayer`` blocks (pre-LN, GELU, no dropout), a
  causal policy and a mean-pooled bidirectional reward model, and a loop that samples without a
  key/value cache (the whole prefix is re-run for every token) and scores, teacher-forces and
  steps every one of the batch_prompts x samples_per_prompt sequences in full. It loads our
  checkpoints into its own modules (the weights map one to one), so it does the same
  arithmetic on the same models.
* **Ours** is ``tinyworld.rl.train_rl`` itself; **the plain loop** is the same function with
  every speed device off, and ``without_<device>`` with one device off
  (:class:`tinyworld.rl.SpeedDevices`): what each device buys is measured on the real loop.

The anchor is the only trainer of its own here. Each returns the loop's own seconds (loading
excluded), so steps/s compare like with like.

:func:`run_contender` runs one in a fresh process (``python -m benchmarks.rl``), with the
OpenMP settings and thread count asked: both are fixed when torch loads.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from rate.errors import RateError
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.rl import ALL_ON, PromptSampler, SpeedDevices, shaped_advantages, train_rl
from tinyworld.rl_config import RLConfig, load_rl_config, prepare
from tinyworld.vocab import PROMPT_LEN, RESPONSE_LEN


class AnchorTransformer(nn.Module):
    """Token and position embeddings, then ``nn.TransformerEncoder`` with pre-LN GELU blocks."""

    def __init__(self, vocab: int, block: int, d_model: int, n_head: int, d_ff: int, n_layer: int):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(block, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model,
            n_head,
            d_ff,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(d_model)

    def hidden(self, seq: torch.Tensor, causal: bool) -> torch.Tensor:
        T = seq.shape[1]
        x = self.tok_emb(seq) + self.pos_emb(torch.arange(T))  # (B, T, C)
        mask = nn.Transformer.generate_square_subsequent_mask(T) if causal else None
        return self.ln_f(self.encoder(x, mask=mask, is_causal=causal))


class AnchorPolicy(AnchorTransformer):
    def __init__(self, ours: Policy) -> None:
        c = ours.config
        super().__init__(c.vocab_size, c.block_size, c.d_model, c.n_head, c.d_ff, c.n_layer)
        self.head = nn.Linear(c.d_model, c.n_out)
        self.load_state_dict(anchor_state(ours))

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden(seq, causal=True))  # (B, T, n_out)


class AnchorRewardModel(AnchorTransformer):
    def __init__(self, ours: RewardModel) -> None:
        c = ours.config
        super().__init__(c.vocab_size, c.block_size, c.d_model, c.n_head, c.d_ff, c.n_layer)
        self.head = nn.Sequential(
            nn.Linear(c.d_model, c.d_model), nn.GELU(), nn.Linear(c.d_model, 1)
        )
        self.load_state_dict(anchor_state(ours))

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        return self.head(self.hidden(seq, causal=False).mean(dim=1)).squeeze(-1)  # (B,)


def anchor_state(ours: Policy | RewardModel) -> dict[str, torch.Tensor]:
    """Our state dict under the names of ``nn.TransformerEncoderLayer`` (same q, k, v order)."""
    rename = {
        "attn.qkv.weight": "self_attn.in_proj_weight",
        "attn.qkv.bias": "self_attn.in_proj_bias",
        "attn.proj.": "self_attn.out_proj.",
        "ln1.": "norm1.",
        "ln2.": "norm2.",
        "mlp.0.": "linear1.",
        "mlp.2.": "linear2.",
    }
    out = {}
    for key, value in ours.state_dict().items():
        if key.startswith("blocks."):
            key = "encoder.layers." + key[len("blocks.") :]
            for old, new in rename.items():
                key = key.replace(old, new)
        out[key] = value.detach().clone()
    return out


def anchor_logprobs(policy: AnchorPolicy, seq: torch.Tensor) -> torch.Tensor:
    """log pi(y_t | x, y_<t) of the response part of full sequences (B, SEQ_LEN). -> (B, 8)"""
    logits = policy(seq[:, :-1])[:, PROMPT_LEN - 1 :]
    return F.log_softmax(logits, dim=-1).gather(2, seq[:, PROMPT_LEN:].unsqueeze(-1)).squeeze(-1)


def train_rl_anchor(config: RLConfig, world: Path) -> dict:
    """The published trainer's loop for ``config.steps`` steps.

    -> the loop's seconds, the last step's proxy reward and KL, and the trained policy.
    """
    inputs = prepare(config, world)
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    policy = AnchorPolicy(inputs.policy)
    reference = AnchorPolicy(inputs.reference).eval().requires_grad_(False)
    rm = AnchorRewardModel(inputs.reward_model).eval().requires_grad_(False)
    policy.train()
    opt = torch.optim.Adam(policy.parameters(), lr=config.lr)
    sampler = PromptSampler(inputs.pool, inputs.family_probs)
    k = config.samples_per_prompt
    start = time.perf_counter()
    for _ in range(config.steps):
        idx = sampler.draw(config.batch_prompts, gen)
        seq = inputs.pool.tokens[idx].repeat_interleave(k, dim=0)  # (B*k, 6)
        with torch.no_grad():
            for _ in range(RESPONSE_LEN):  # no cache: the whole prefix again for every token
                logits = policy(seq)[:, -1]
                probs = F.softmax(logits / config.temperature, dim=-1)
                seq = torch.cat([seq, torch.multinomial(probs, 1, generator=gen)], dim=1)
            proxy = rm(seq)
            ref_logp = anchor_logprobs(reference, seq)
        logp = anchor_logprobs(policy, seq)
        kl = (logp.detach() - ref_logp).sum(-1)
        shaped, advantage = shaped_advantages(proxy, kl, config.kl_coef, k)
        loss = -(advantage * logp.sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
        opt.step()
    elapsed = time.perf_counter() - start
    last = {"proxy_reward": proxy.mean().item(), "kl": kl.mean().item()}
    return {"elapsed_s": elapsed, **last, "policy": policy}


def train_rl_ours(config: RLConfig, world: Path, devices: SpeedDevices = ALL_ON) -> dict:
    """Our trainer (``train_rl``, torch on one thread) with ``devices`` into a temporary
    folder; returns the loop's seconds as its log recorded them."""
    with tempfile.TemporaryDirectory(prefix="rate-bench-rl-") as tmp:
        last = train_rl(config, world, Path(tmp) / "run", devices=devices)
    return {"elapsed_s": last["elapsed_s"], "proxy_reward": last["proxy_reward"], "kl": last["kl"]}


# Each speed device of the loop (tinyworld.rl.SpeedDevices), to be turned off on its own.
DEVICES = tuple(f.name for f in dataclasses.fields(SpeedDevices))
PLAIN = SpeedDevices(**dict.fromkeys(DEVICES, False))  # every device off: the plain loop

CONTENDERS: dict[str, Callable[[RLConfig, Path], dict]] = {
    "anchor": train_rl_anchor,
    "ours": train_rl_ours,
    "plain": functools.partial(train_rl_ours, devices=PLAIN),
    **{
        f"without_{name}": functools.partial(
            train_rl_ours, devices=dataclasses.replace(ALL_ON, **{name: False})
        )
        for name in DEVICES
    },
    **{  # the plain loop with that one device on: what the loop would be if it kept one
        f"only_{name}": functools.partial(
            train_rl_ours, devices=dataclasses.replace(PLAIN, **{name: True})
        )
        for name in DEVICES
    },
}


def run_contender(
    name: str, world: Path, steps: int, threads: int, env: dict[str, str] | None = None
) -> float:
    """The loop seconds of ``steps`` default-recipe steps of contender ``name`` in a fresh
    process on ``threads`` torch threads, with ``env`` added to this one's environment."""
    command = [sys.executable, "-m", "benchmarks.rl", name, str(world), str(steps), str(threads)]
    done = subprocess.run(
        command, env={**os.environ, **(env or {})}, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise RateError(f"benchmark contender {name} failed: {tail[0]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["elapsed_s"])


def main(argv: list[str] | None = None) -> int:
    """One contender's run, as :func:`run_contender` starts it: JSON on the last line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rl")
    parser.add_argument("contender", choices=sorted(CONTENDERS))
    parser.add_argument("world", type=Path)
    parser.add_argument("steps", type=int)
    parser.add_argument("threads", type=int)
    args = parser.parse_args(argv)
    os.environ.setdefault("RATE_PROGRESS", "0")
    torch.set_num_threads(args.threads)
    config = load_rl_config(
        args.world / "configs" / "default.json",
        [f"steps={args.steps}", f"log_every={args.steps}"],
    )
    result = CONTENDERS[args.contender](config, args.world)
    print(json.dumps({"elapsed_s": result["elapsed_s"], "threads": torch.get_num_threads()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
