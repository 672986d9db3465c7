"""Sampling responses from a policy, per-token log-probabilities and entropy."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from rate.tinyrlhf.models import Policy, RewardModel
from rate.tinyrlhf.vocab import PROMPT_LEN, RESPONSE_LEN


@dataclass
class Samples:
    """Sampled responses (B, RESPONSE_LEN) with their per-token log-probs at temperature 1."""

    responses: torch.Tensor
    logprobs: torch.Tensor
    entropy: torch.Tensor  # (B, RESPONSE_LEN), entropy of the temperature-1 distribution


def _draw(
    step_logits: torch.Tensor,
    temperature: float,
    generator: torch.Generator | None,
    t: int,
    tokens: torch.Tensor,
    logprobs: torch.Tensor,
    entropy: torch.Tensor,
) -> torch.Tensor:
    """Sample position ``t`` from (B, V) logits; record token, log-prob and entropy. -> (B, 1)"""
    logp = F.log_softmax(step_logits, dim=-1)  # (B, V), temperature 1
    p1 = logp.exp()
    probs = p1 if temperature == 1.0 else F.softmax(step_logits / temperature, dim=-1)
    nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
    tokens[:, t] = nxt[:, 0]
    logprobs[:, t] = logp.gather(1, nxt)[:, 0]
    entropy[:, t] = -(p1 * logp).sum(-1)
    return nxt


@torch.inference_mode()
def _sample(
    policy: Policy,
    prompts: torch.Tensor,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    repeats: int = 1,
) -> Samples:
    """The decoding loop of :func:`sample`."""
    assert prompts.shape[1] == PROMPT_LEN, f"prompts must be (B, {PROMPT_LEN}), got {prompts.shape}"
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    B = prompts.shape[0] * repeats
    tokens = torch.empty(B, RESPONSE_LEN, dtype=torch.long)
    logprobs = torch.empty(B, RESPONSE_LEN)
    entropy = torch.empty(B, RESPONSE_LEN)
    logits, cache = policy(prompts)  # (U, PROMPT_LEN, V)
    step_logits = logits[:, -1]
    if repeats > 1:
        step_logits = step_logits.repeat_interleave(repeats, dim=0)
        cache = [
            (k.repeat_interleave(repeats, 0), v.repeat_interleave(repeats, 0)) for k, v in cache
        ]
    for t in range(RESPONSE_LEN):
        nxt = _draw(step_logits, temperature, generator, t, tokens, logprobs, entropy)
        if t + 1 < RESPONSE_LEN:
            step_logits, cache = policy(nxt, cache=cache, start=PROMPT_LEN + t)
            step_logits = step_logits[:, -1]
    return Samples(tokens, logprobs, entropy)


def sample(
    policy: Policy,
    prompts: torch.Tensor,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    repeats: int = 1,
) -> Samples:
    """Draw ``repeats`` responses per prompt row (rows ordered prompt by prompt), decoding with a
    key/value cache; the prompt itself is encoded once however many samples it gets."""
    s = _sample(policy, prompts, temperature, generator, repeats)
    # Decoding runs in inference mode (less overhead per op); the results are cloned into
    # ordinary tensors because RL feeds them into its autograd graph.
    return Samples(s.responses.clone(), s.logprobs.clone(), s.entropy.clone())


@torch.no_grad()
def sample_without_cache(
    policy: Policy,
    prompts: torch.Tensor,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Samples:
    """The plain loop: re-run the whole prefix for every new token (the benchmark's baseline)."""
    B = prompts.shape[0]
    seq = prompts
    logprobs = torch.empty(B, RESPONSE_LEN)
    entropy = torch.empty(B, RESPONSE_LEN)
    tokens = torch.empty(B, RESPONSE_LEN, dtype=torch.long)
    for t in range(RESPONSE_LEN):
        logits, _ = policy(seq)
        nxt = _draw(logits[:, -1], temperature, generator, t, tokens, logprobs, entropy)
        seq = torch.cat([seq, nxt], dim=1)
    return Samples(seq[:, PROMPT_LEN:], logprobs, entropy)


def response_logprobs(
    policy: Policy, prompts: torch.Tensor, responses: torch.Tensor, repeats: int = 1
) -> torch.Tensor:
    """Per-token log pi(y_t | x, y_<t) at temperature 1, shape (B, RESPONSE_LEN); keeps grad.

    With ``repeats`` > 1, ``prompts`` holds each distinct prompt once and ``responses`` holds
    ``repeats`` responses per prompt (ordered prompt by prompt); the prompt is encoded once and
    its keys and values are shared by its responses, which saves ~40% of the work in RL.
    """
    if repeats == 1:
        logits = policy.response_logits(prompts, responses)
    else:
        prefix_logits, cache = policy(prompts)  # (U, PROMPT_LEN, V)
        cache = [
            (k.repeat_interleave(repeats, 0), v.repeat_interleave(repeats, 0)) for k, v in cache
        ]
        first = prefix_logits[:, -1:].repeat_interleave(repeats, 0)  # (B, 1, V)
        rest, _ = policy(responses[:, :-1], cache=cache, start=PROMPT_LEN)  # (B, 7, V)
        logits = torch.cat([first, rest], dim=1)
    return F.log_softmax(logits, dim=-1).gather(2, responses.unsqueeze(-1)).squeeze(-1)


@torch.inference_mode()
def score(
    rm: RewardModel, prompts: torch.Tensor, responses: torch.Tensor, batch: int = 4096
) -> torch.Tensor:
    """Reward-model scores, shape (B,), computed in chunks."""
    out = [
        rm(prompts[i : i + batch], responses[i : i + batch]) for i in range(0, len(prompts), batch)
    ]
    return torch.cat(out) if out else torch.empty(0)


@torch.inference_mode()
def sequence_kl(
    policy: Policy, reference: Policy, prompts: torch.Tensor, responses: torch.Tensor
) -> torch.Tensor:
    """Per-sequence KL estimate sum_t(log pi - log pi_ref) on the given samples, shape (B,)."""
    return (
        response_logprobs(policy, prompts, responses)
        - response_logprobs(reference, prompts, responses)
    ).sum(-1)
