"""Samples of pi_beta ~ pi_ref * exp(r / beta) without RL: a ladder of token-tilted proposals.

Reweighting reference samples by exp(r / beta) fails where pi_beta lives where the reference
rarely goes (a shortcut written in every slot): a handful of samples carry all the weight. These
proposals lean the reference toward the reward's high end token by token. The reward's additive
fit r ~ c + sum_t e[t, y_t] on reference samples gives a logit bias lambda * e[t] / beta at step
t, for each lambda of a ladder (0 is the reference itself); every sample, from whichever rung,
is weighed by pi_beta over the ladder's equal mixture (the balance heuristic of multiple
importance sampling), with exact sequence probabilities. The fit only points the sampler; the
weights make the estimate consistent for pi_beta whatever the fit got wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from tinyworld.data import PromptPool, pool_from_records
from tinyworld.policy import Decoder, Policy
from tinyworld.prompts import make_prompts
from tinyworld.sampling import draw, gumbel_noise
from tinyworld.vocab import N_SYLLABLES, PROMPT_LEN, RESPONSE_LEN

# lambda = 1 biases each step by the token's full additive effect over beta; the lower rungs
# keep samples between the reference and that extreme, where a non-additive reward's pi_beta
# may sit (the reward of a response packed with one token need not be the sum of its parts).
LADDER: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0)
RIDGE = 1.0  # the additive fit's ridge: a token the reference never writes at a slot gets ~0
CHUNK = 20_000


def one_hot(responses: torch.Tensor) -> np.ndarray:
    """(B, RESPONSE_LEN * N_SYLLABLES) indicators of each (position, syllable)."""
    r = np.asarray(responses, dtype=np.int64)
    x = np.zeros((len(r), RESPONSE_LEN * N_SYLLABLES))
    np.put_along_axis(x, np.arange(RESPONSE_LEN) * N_SYLLABLES + r, 1.0, axis=1)
    return x


def additive_fit(responses: torch.Tensor, r: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """The ridge fit of the reward on (position, syllable) indicators: e (RESPONSE_LEN,
    N_SYLLABLES), each position's effects centred on the sample's mix of that position."""
    x = one_hot(responses)
    r = np.asarray(r, dtype=np.float64)
    if len(r) != len(x) or len(r) < 2:
        raise ValueError(f"need one reward per response and two or more, got {len(r)}/{len(x)}")
    xc = x - x.mean(0)
    e = np.linalg.solve(xc.T @ xc + ridge * np.eye(x.shape[1]), xc.T @ (r - r.mean()))
    return e.reshape(RESPONSE_LEN, N_SYLLABLES)


@torch.inference_mode()
def tilted_sample(
    policy: Policy,
    prompts: torch.Tensor,
    bias: torch.Tensor,
    rung: float,
    ladder: Sequence[float],
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """One response per prompt from softmax(logits + rung * bias[t]) at each step t.

    -> (responses (B, RESPONSE_LEN), log pi_ref(y|x) (B,), log q_lambda(y|x) (len(ladder), B)
    for every rung of ``ladder``), all from one decoding: the policy's logits depend on the
    tokens drawn, not on which rung drew them."""
    B, n_out = prompts.shape[0], policy.config.n_out
    if bias.shape != (RESPONSE_LEN, n_out):
        raise ValueError(f"bias must be ({RESPONSE_LEN}, {n_out}), got {tuple(bias.shape)}")
    bias = bias.double()
    lams = torch.tensor(list(ladder), dtype=torch.float64)
    noise = gumbel_noise(B, n_out, generator).double()
    decoder = Decoder(policy, B)
    logits = decoder.prefill(prompts)
    tokens: list[torch.Tensor] = []
    lp_ref = torch.zeros(B, dtype=torch.float64)
    lp_ladder = torch.zeros(len(lams), B, dtype=torch.float64)
    for t in range(RESPONSE_LEN):
        if t:
            logits = decoder.step(tokens[-1], PROMPT_LEN + t - 1)
        lg = logits.double()
        tok = draw(lg + rung * bias[t], noise[t], 1.0)
        tokens.append(tok)
        lp_ref += F.log_softmax(lg, -1).gather(1, tok[:, None])[:, 0]
        shifted = F.log_softmax(lg[None] + lams[:, None, None] * bias[t], -1)  # (L, B, V)
        lp_ladder += shifted.gather(2, tok[None, :, None].expand(len(lams), B, 1))[..., 0]
    return torch.stack(tokens, dim=1), lp_ref.numpy(), lp_ladder.numpy()


@dataclass
class TiltSamples:
    """Samples of every rung with their log weights log pi_beta - log mixture (unnormalised)
    and, per reward kind, their rewards."""

    log_w: np.ndarray
    rewards: dict[str, np.ndarray]
    rung: np.ndarray  # which rung drew each sample

    def weights(self) -> np.ndarray:
        return np.exp(self.log_w - self.log_w.max())

    def kl_to_reference(self, kind: str, beta: float) -> float:
        """KL(pi_beta || pi_ref) = E_beta[r] / beta - log E_ref[exp(r / beta)], both from these
        samples: the normaliser is the mean of the unnormalised weights (the weights' mean
        under the mixture is E_ref[exp(r / beta)] exactly)."""
        w, top = self.weights(), float(self.log_w.max())
        log_z = top + float(np.log(w.mean()))
        return float(np.dot(w, self.rewards[kind]) / w.sum() / beta - log_z)


def sample_tilt(
    policy: Policy,
    family: str,
    score: Callable[[PromptPool, torch.Tensor], dict[str, np.ndarray]],
    kind: str,
    beta: float,
    effects: np.ndarray,
    n_per_rung: int,
    generator: torch.Generator,
    ladder: Sequence[float] = LADDER,
) -> TiltSamples:
    """``n_per_rung`` fresh prompts of ``family`` per rung, one tilted response each, weighed
    for pi_beta of reward ``kind`` (``score`` returns each kind's reward of a pool's
    responses; ``effects`` is that reward's :func:`additive_fit`)."""
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    bias = torch.zeros(RESPONSE_LEN, policy.config.n_out, dtype=torch.float64)
    bias[:, :N_SYLLABLES] = torch.as_tensor(effects, dtype=torch.float64) / beta
    log_w, rung_of, rewards = [], [], {}
    for i, lam in enumerate(ladder):
        for start in range(0, n_per_rung, CHUNK):
            m = min(CHUNK, n_per_rung - start)
            recs = make_prompts({family: m}, f"guided{i}", generator, shuffle=False)
            pool = pool_from_records(recs)
            responses, lp_ref, lp_ladder = tilted_sample(
                policy, pool.tokens, bias, lam, ladder, generator
            )
            scored = score(pool, responses)
            mixture = np.logaddexp.reduce(lp_ladder, axis=0) - np.log(len(ladder))
            log_w.append(lp_ref + scored[kind] / beta - mixture)
            rung_of.append(np.full(m, i))
            for k, v in scored.items():
                rewards.setdefault(k, []).append(v)
    return TiltSamples(
        np.concatenate(log_w),
        {k: np.concatenate(v) for k, v in rewards.items()},
        np.concatenate(rung_of),
    )
