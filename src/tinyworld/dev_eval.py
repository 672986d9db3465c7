"""The development evaluation of a checkpoint: what an analyst can measure without the truth.

On the dev prompts, one sample per prompt at temperature 1: proxy reward (mean, std, p50, p90),
the mean per-sequence KL to the reference, per-family figures and syllable counts; plus the
reward model's Pearson correlation with the expert labels of the gold calibration set.

The seed world's tools and analysts read flat keys (``policy``, ``prompts``, ``n_prompts``,
``samples_per_prompt``, ``proxy_mean``, ``proxy_std``, ``proxy_p50``, ``proxy_p90``,
``kl_mean``, ``rm_gold_pearson``); the report has them, with the same figures also nested
(``proxy_reward``, ``kl``) and per family.
"""

from __future__ import annotations

import torch

from tinyworld.data import LabelledSet, PromptPool
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.sampling import sample, score, sequence_kl
from tinyworld.vocab import FAMILIES, N_SYLLABLES, SYLLABLES


def pearson(a: torch.Tensor, b: torch.Tensor) -> float:
    """Pearson correlation of two 1-D tensors (nan when either is constant)."""
    a = a.double() - a.double().mean()
    b = b.double() - b.double().mean()
    denom = (a.square().sum() * b.square().sum()).sqrt()
    return float((a * b).sum() / denom) if denom > 0 else float("nan")


def syllable_counts(responses: torch.Tensor) -> dict[str, float]:
    """Mean count per response of each syllable."""
    counts = torch.bincount(responses.reshape(-1), minlength=N_SYLLABLES).double() / max(
        len(responses), 1
    )
    return {s: round(float(c), 4) for s, c in zip(SYLLABLES, counts, strict=True)}


def summary(x: torch.Tensor) -> dict[str, float]:
    x = x.double()
    return {
        "mean": round(float(x.mean()), 6),
        "std": round(float(x.std()), 6) if len(x) > 1 else 0.0,
        "p50": round(float(x.quantile(0.5)), 6),
        "p90": round(float(x.quantile(0.9)), 6),
    }


def dev_evaluate(
    policy: Policy,
    reference: Policy,
    rm: RewardModel,
    dev: PromptPool,
    gold: LabelledSet,
    seed: int = 0,
    policy_name: str = "",
    prompts_name: str = "",
) -> dict:
    """Proxy reward, KL and RM-gold agreement of ``policy`` on the dev pool; ``policy_name``
    and ``prompts_name`` (the checkpoint and the prompts file, as the caller names them) are
    recorded as the seed's ``policy`` and ``prompts``."""
    gen = torch.Generator().manual_seed(seed)
    responses = sample(policy, dev.tokens, 1.0, gen).responses
    proxy = score(rm, dev.tokens, responses)
    kl = sequence_kl(policy, reference, dev.tokens, responses)
    per_family = {}
    for f, fam in enumerate(FAMILIES):
        m = dev.families == f
        if m.any():
            per_family[fam] = {
                "n": int(m.sum()),
                "proxy_reward": round(float(proxy[m].mean()), 6),
                "kl": round(float(kl[m].mean()), 6),
                "syllable_counts": syllable_counts(responses[m]),
            }
    proxy_summary = summary(proxy)
    kl_mean = round(float(kl.mean()), 6)
    return {
        # The seed world's flat keys, first.
        "policy": policy_name,
        "prompts": prompts_name,
        "n_prompts": len(dev),
        "samples_per_prompt": 1,
        **{f"proxy_{k}": v for k, v in proxy_summary.items()},
        "kl_mean": kl_mean,
        "rm_gold_pearson": round(pearson(score(rm, gold.tokens, gold.responses), gold.labels), 6),
        # Ours: the same figures nested, and per family.
        "proxy_reward": proxy_summary,
        "kl": kl_mean,
        "per_family": per_family,
    }
