"""Sampling responses from a policy, per-token log-probabilities and entropy."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from tinyworld.policy import Decoder, Policy
from tinyworld.reward_model import RewardModel
from tinyworld.traced import Traced
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
    repeats: int,
    first_rows: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decoding loop of :func:`sample`: two kernels of noise and argmax per token, and one
    policy step that writes the token's keys and values into a preallocated cache.

    ``noise`` is :func:`gumbel_noise` for U * ``repeats`` rows, prompts (U, 6);
    ``first_rows`` is :meth:`Decoder.first_rows_of` the policy, if already made. -> the drawn
    responses (B, 8) and the logits each token was drawn from (B, 8, V). Tensors in, tensors
    out, with no branch on their values: :class:`TracedDecoding` traces it.
    """
    decoder = Decoder(policy, prompts.shape[0] * repeats, first_rows)
    step_logits = [decoder.prefill(prompts, repeats)]  # (B, V) each
    tokens = [draw(step_logits[0], noise[0], temperature)]
    for t in range(1, RESPONSE_LEN):
        step_logits.append(decoder.step(tokens[-1], PROMPT_LEN + t - 1))
        tokens.append(draw(step_logits[-1], noise[t], temperature))
    return torch.stack(tokens, dim=1), torch.stack(step_logits, dim=1)


Decoding = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


class _DecodingModule(nn.Module):
    """:func:`decode` as a module, so that a trace takes the policy's weights as its
    parameters (read at each call) rather than as constants. The first block's table comes in
    made, once for both halves of a decoding."""

    def __init__(self, policy: Policy, temperature: float, repeats: int) -> None:
        super().__init__()
        self.policy, self.temperature, self.repeats = policy, temperature, repeats

    def forward(
        self, prompts: torch.Tensor, noise: torch.Tensor, first_rows: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return decode(self.policy, prompts, noise, self.temperature, self.repeats, first_rows)


class TracedDecoding:
    """:func:`decode` for one policy, temperature and number of samples per prompt, run as a
    :class:`~tinyworld.traced.Traced` trace: the same draws, faster (RL's 128 rows: 4.81
    against 5.76 ms a decoding on one thread of an Intel Xeon). Trace after
    :func:`~tinyworld.optim.flat_parameters`: the weights are read at each call.

    With ``beside`` (``submit(fn, *args)`` -> a future), the prompts are decoded in two
    halves, the second by ``beside`` while this thread decodes the first. RL passes its
    second thread's (:func:`tinyworld.rl.side_thread`): at these sizes a decoding's time
    is mostly per kernel, not per row, so half the rows take ~60% of the time (RL's 128 rows
    on an AMD EPYC: 5.0-5.6 ms whole, most often 3.7-4.7 ms in halves on two threads). Each
    row is decoded on its own (its own noise, keys and values), but a matrix product of fewer
    rows may take another kernel: in small batches a half's logits differed from the whole
    batch's in the last bits (up to 2.4e-6), though not at RL's 16 prompts here. So where RL decodes in halves
    (:data:`tinyworld.rl.DECODE_IN_HALVES`) it does wherever it runs, on a second thread
    or in turn on one (a ``beside`` that runs the job at once), and its numbers do not
    depend on which.
    """

    def __init__(
        self,
        policy: Policy,
        temperature: float,
        repeats: int,
        beside: Callable[..., Future] | None = None,
    ) -> None:
        self.policy, self.repeats, self.beside = policy, repeats, beside
        self.traced = Traced(_DecodingModule(policy, temperature, repeats), "decoding")

    def __call__(self, prompts: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, ...]:
        first_rows = Decoder.first_rows_of(self.policy)
        half = prompts.shape[0] // 2
        if self.beside is None or half == 0:
            return self.traced(prompts, noise, first_rows)
        rows = half * self.repeats  # noise is (RESPONSE_LEN, rows, n_out), rows prompt by prompt
        theirs = self.beside(
            self._decode_there,
            torch.is_inference_mode_enabled(),
            prompts[half:],
            noise[:, rows:],
            first_rows,
        )
        mine = self.traced(prompts[:half], noise[:, :rows], first_rows)
        return tuple(torch.cat(pair) for pair in zip(mine, theirs.result(), strict=True))

    def _decode_there(self, inference: bool, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # Inference mode is per thread: the second thread takes the caller's (see _sample).
        with torch.inference_mode(inference):
            return self.traced(*inputs)


@torch.inference_mode()
def _sample(
    policy: Policy,
    prompts: torch.Tensor,
    temperature: float,
    generator: torch.Generator | None,
    repeats: int,
    decoding: Decoding | None,
) -> Samples:
    _check(prompts, temperature)
    noise = gumbel_noise(prompts.shape[0] * repeats, policy.config.n_out, generator)
    if decoding is None:
        return _finish(*decode(policy, prompts, noise, temperature, repeats))
    return _finish(*decoding(prompts, noise))


def sample(
    policy: Policy,
    prompts: torch.Tensor,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    repeats: int = 1,
    decoding: Decoding | None = None,
) -> Samples:
    """Draw ``repeats`` responses per prompt row (rows ordered prompt by prompt), decoding with a
    key/value cache; the prompt itself is encoded once however many samples it gets.

    ``decoding``, if given, runs :func:`decode` for this policy, temperature and ``repeats``
    (RL passes a :class:`TracedDecoding`): the same draws, faster.
    """
    s = _sample(policy, prompts, temperature, generator, repeats, decoding)
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
    policy: Policy, prompts: torch.Tensor, responses: torch.Tensor, repeats: int = 1
) -> torch.Tensor:
    """Per-token log pi(y_t | x, y_<t) at temperature 1, shape (B, RESPONSE_LEN); keeps grad.

    With ``repeats`` > 1, ``prompts`` holds each distinct prompt once and ``responses`` holds
    ``repeats`` responses per prompt (ordered prompt by prompt); the prompt is encoded once
    for all of them (:meth:`Policy.response_logits`), which saves ~40% of the work in RL.
    """
    logits = policy.response_logits(prompts, responses, repeats)
    return F.log_softmax(logits, dim=-1).gather(2, responses.unsqueeze(-1)).squeeze(-1)


class ResponseLogprobs(nn.Module):
    """:func:`response_logprobs` of one policy with ``repeats`` responses per prompt, as a
    module, for :class:`~tinyworld.traced.Traced` (RL's reference pass)."""

    def __init__(self, policy: Policy, repeats: int) -> None:
        super().__init__()
        self.policy, self.repeats = policy, repeats

    def forward(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        return response_logprobs(self.policy, prompts, responses, self.repeats)


@torch.inference_mode()
def score(
    rm: RewardModel | Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    prompts: torch.Tensor,
    responses: torch.Tensor,
    batch: int = 4096,
) -> torch.Tensor:
    """Reward-model scores, shape (B,), computed in chunks (``rm``: a reward model, or one
    :class:`~tinyworld.traced.Traced`)."""
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
