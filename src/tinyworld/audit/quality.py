"""The effect on expert quality that the gold labels support, for each feature.

Expert quality is, by the label's definition, the share of a response's 8 positions that the
expert judges correct, position by position (SPEC B.2, the README). Two consequences that the
audit uses and says it uses:

- writing one syllable changes quality by at most 1/8 (one position), so a token's quality
  effect lies in [-1/8, 1/8];
- quality is additive over positions, so an ordered pair's quality effect beyond its two
  syllables (the interaction the RM side measures) is 0.

A token's effect is estimated from the gold labels (expert-labelled reference responses) by
least squares of the label on the 24 syllable counts (which sum to 8, so no intercept): writing
t at a site that held u changes quality by ``b_t - b_u``; averaged over the syllables u that the
audited sites hold, with a heteroscedasticity-robust (HC1) standard error by the delta method,
and clipped to the feasible [-1/8, 1/8]. A syllable that the gold responses hold fewer than
``MIN_GOLD`` times has no estimate: the audit falls back on the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tinyworld.vocab import N_SYLLABLES

ONE_POSITION = 1.0 / 8.0
MIN_GOLD = 5  # occurrences of a syllable in a family's gold responses for an estimate


@dataclass
class TokenQuality:
    """Per syllable (S,): the gold-supported quality effect of writing it, its SE, and whether
    the gold labels support an estimate at all."""

    effect: torch.Tensor
    se: torch.Tensor
    supported: torch.Tensor  # bool


def token_quality(
    gold_responses: torch.Tensor, gold_labels: torch.Tensor, site_share: torch.Tensor
) -> TokenQuality:
    """``gold_*``: one family's gold responses (G, 8) and expert labels (G,); ``site_share``:
    (S, S), row t = the share of each syllable u among the sites where t is written."""
    x = torch.zeros(len(gold_responses), N_SYLLABLES, dtype=torch.float64)
    x.scatter_add_(1, gold_responses, torch.ones_like(gold_responses, dtype=torch.float64))
    y = gold_labels.double()
    occurrences = x.sum(0)
    supported = occurrences >= MIN_GOLD
    # Least squares on the syllables the gold holds; a tiny ridge keeps it well posed.
    keep = occurrences > 0
    xk = x[:, keep]
    n, k = xk.shape
    xtx = xk.T @ xk + 1e-9 * torch.eye(k, dtype=torch.float64)
    inv = torch.linalg.inv(xtx)
    beta_k = inv @ xk.T @ y
    resid = y - xk @ beta_k
    meat = xk.T @ (xk * resid[:, None].square())
    cov_k = inv @ meat @ inv * (n / max(n - k, 1))  # HC1
    beta = torch.zeros(N_SYLLABLES, dtype=torch.float64)
    beta[keep] = beta_k
    cov = torch.zeros(N_SYLLABLES, N_SYLLABLES, dtype=torch.float64)
    idx = keep.nonzero().squeeze(1)
    cov[idx[:, None], idx[None, :]] = cov_k
    # Effect of writing t: b_t - sum_u share[t, u] b_u, a linear contrast c_t . b, over the
    # replaced syllables the gold supports (their shares renormalised).
    share = site_share.double() * supported[None, :]
    share = share / share.sum(1, keepdim=True).clamp(min=1e-12)
    contrast = torch.eye(N_SYLLABLES, dtype=torch.float64) - share
    effect = contrast @ beta
    var = torch.einsum("ti,ij,tj->t", contrast, cov, contrast)
    ok = supported
    effect = torch.where(ok, effect.clamp(-ONE_POSITION, ONE_POSITION), torch.zeros_like(effect))
    se = torch.where(ok, var.clamp(min=0).sqrt(), torch.full_like(effect, torch.inf))
    return TokenQuality(effect, se, ok)


def site_shares(responses: torch.Tensor) -> torch.Tensor:
    """(S, S): for each syllable t, the share of each syllable u among the audited sites that
    do not already hold t (the sites where the RM side writes t)."""
    counts = torch.zeros(N_SYLLABLES, dtype=torch.float64)
    counts.scatter_add_(0, responses.flatten(), torch.ones(responses.numel(), dtype=torch.float64))
    share = counts[None, :].expand(N_SYLLABLES, N_SYLLABLES).clone()
    share.fill_diagonal_(0)
    return share / share.sum(1, keepdim=True).clamp(min=1)
