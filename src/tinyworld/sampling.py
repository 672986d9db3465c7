"""Sampling responses from a policy, per-token log-probabilities and entropy."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tinyworld.policy import Decoder, Policy
from tinyworld.reward_model import RewardModel
from tinyworld.vocab import PROMPT_LEN, RESPONSE_LEN


@dataclass
class Samples:
    """Sampled responses (B, RESPONSE_LEN) with their per-token log-probs at temperature 1."""

    responses: torch.Tensor
    logprobs: torch.Tensor
    entropy: torch.Tensor  # (B, RESPONSE_LEN), entropy of the temperature-1 distribution


def gumbel_noise(batch: int, n_out: int, generator: torch.Generator | None) -> torch.Tensor:
    """Noise for every draw of a decoding, (RESPONSE_LEN, B, n_out), drawn in one call.

    argmax(logits / temperature + g) with g = -log(-log(U)), U uniform, is a draw from
    softmax(logits / temperature) (the Gumbel-max trick, which torch.multinomial also uses
    for one sample); drawing all of it up front leaves two kernels per token.
    """
    u = torch.rand(RESPONSE_LEN, batch, n_out, generator=generator)
    # U = 0 would give -inf (that token not drawn at that step): a 2^-24 chance, kept out.
    return u.clamp_(min=torch.finfo(u.dtype).tiny).log_().neg_().log_().neg_()


def draw(logits: torch.Tensor, noise: torch.Tensor, temperature: float) -> torch.Tensor:
    """Tokens (B,) drawn from softmax(logits / temperature) for logits (B, V)."""
    return torch.add(noise, logits, alpha=1.0 / temperature).argmax(dim=-1)


def _finish(responses: torch.Tensor, step_logits: torch.Tensor) -> Samples:
    """Samples of ``responses`` (B, 8) drawn from ``step_logits`` (B, 8, V)."""
    logp = F.log_softmax(step_logits, dim=-1)  # temperature 1
    logprobs = logp.gather(2, responses.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp.exp() * logp).sum(-1)
    return Samples(responses, logprobs, entropy)


def _check(prompts: torch.Tensor, temperature: float) -> None:
    assert prompts.shape[1] == PROMPT_LEN, f"prompts must be (B, {PROMPT_LEN}), got {prompts.shape}"
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")


def decode(
    policy: Policy,
    prompts: torch.Tensor,
    noise: torch.Tensor,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decoding loop of :func:`sample`: two kernels of noise and argmax per token, and one
    policy step that writes the token's keys and values into a preallocated cache.

    ``noise`` is :func:`gumbel_noise` for the B rows of prompts (B, 6). -> the drawn
    responses (B, 8) and the logits each token was drawn from (B, 8, V).
    """
    decoder = Decoder(policy, prompts.shape[0])
    step_logits = [decoder.prefill(prompts)]  # (B, V) each
    tokens = [draw(step_logits[0], noise[0], temperature)]
    for t in range(1, RESPONSE_LEN):
        step_logits.append(decoder.step(tokens[-1], PROMPT_LEN + t - 1))
        tokens.append(draw(step_logits[-1], noise[t], temperature))
    return torch.stack(tokens, dim=1), torch.stack(step_logits, dim=1)


@torch.inference_mode()
def _sample(
    policy: Policy,
    prompts: torch.Tensor,
    temperature: float,
    generator: torch.Generator | None,
) -> Samples:
    _check(prompts, temperature)
    noise = gumbel_noise(prompts.shape[0], policy.config.n_out, generator)
    return _finish(*decode(policy, prompts, noise, temperature))


def sample(
    policy: Policy,
    prompts: torch.Tensor,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Samples:
    """Draw one response per prompt row, decoding with a key/value cache (each token's keys
    and values are kept, not recomputed with the whole prefix for the next)."""
    s = _sample(policy, prompts, temperature, generator)
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
    """The plain loop: re-run the whole prefix for every new token (the reference that the
    cached decoding is tested against, and the benchmark's plain loop). Same draws as
    :func:`sample` for the same generator."""
    _check(prompts, temperature)
    noise = gumbel_noise(prompts.shape[0], policy.config.n_out, generator)
    seq = prompts
    step_logits = []
    for t in range(RESPONSE_LEN):
        step_logits.append(policy(seq)[:, -1])
        seq = torch.cat([seq, draw(step_logits[-1], noise[t], temperature)[:, None]], dim=1)
    return _finish(seq[:, PROMPT_LEN:], torch.stack(step_logits, dim=1))


def response_logprobs(
    policy: Policy, prompts: torch.Tensor, responses: torch.Tensor
) -> torch.Tensor:
    """Per-token log pi(y_t | x, y_<t) at temperature 1 of prompts (B, 6) and responses (B, 8),
    shape (B, RESPONSE_LEN); keeps grad."""
    logits = policy.response_logits(prompts, responses)
    return F.log_softmax(logits, dim=-1).gather(2, responses.unsqueeze(-1)).squeeze(-1)


@torch.inference_mode()
def score(
    rm: RewardModel,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    batch: int = 4096,
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
