"""What the reward model pays for each feature, measured on reference responses.

By **intervention** (the model is queried on edited responses):

- a token t: at every site (response, position) that does not hold t, write t; the effect is
  the mean change of the RM's score, ``RM(y with t at p) - RM(y)``;
- a pair ``a b``: at every adjacent site (p, p+1) with ``y[p] != a`` and ``y[p+1] != b``, the
  interaction ``RM(y_ab) - RM(y_a) - RM(y_b) + RM(y)``: what the RM pays for the two syllables
  together beyond what it pays for each alone (an RM that rewards each syllable on its own,
  whatever their order, measures 0). The same interaction at a gap (p, p+2) is recorded too: a
  premium for *adjacency* shows in the first and not the second, while an RM whose reward is
  merely not linear in a syllable's count shows in both.

By **RATE**, through the world's imperfect rewriter (its style map and random edits, applied
as the tiny world's rewriter applies them): the edit is made by the rewriter, then undone by
the rewriter, and the effect is ``RM(rewrite) - RM(rewrite of the rewrite)``; both texts carry
the rewriter's signature, which cancels. A syllable the rewriter's style map rewrites cannot be
written by it: its RATE effect is not estimable (NaN).

Pairs are measured at every site of a response, or (``gen`` given: what the audit does) at one
site per response and pair drawn uniformly, which costs a seventh of the reward-model calls for
the same number of responses: sites of one response are correlated, so more responses at one
site each measure a pair more precisely per call than few responses at all of theirs.

Standard errors are clustered by response.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tinyworld.reward_model import RewardModel
from tinyworld.sampling import score
from tinyworld.vocab import N_SYLLABLES, RESPONSE_LEN, SYLLABLE_ID

S = N_SYLLABLES
CHUNK = 4096  # sequences per RM call: larger ones measured slower on 2 cores (allocation)


@dataclass
class Effects:
    """Per feature of one family (600, in feature-index order): mean effect, SE, sites."""

    effect: torch.Tensor  # (600,) float64, NaN where there is no site
    se: torch.Tensor  # (600,)
    sites: torch.Tensor  # (600,) int


def _rm(rm: RewardModel, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    return score(rm, prompts, responses, batch=CHUNK).double()


def clustered(
    values: torch.Tensor, valid: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean, clustered SE and count over the sites of each feature. ``values`` and ``valid``
    are (N, sites, F): N responses (the clusters), F features."""
    valid = valid.double()
    count = valid.sum(dim=(0, 1))
    mean = (values * valid).sum(dim=(0, 1)) / count.clamp(min=1)
    resid = ((values - mean) * valid).sum(dim=1)  # (N, F): each response's summed deviation
    se = resid.square().sum(0).sqrt() / count.clamp(min=1)
    mean = torch.where(count > 0, mean, torch.nan)
    se = torch.where(count > 1, se, torch.nan)
    return mean, se, count.long()


def token_edits(responses: torch.Tensor) -> torch.Tensor:
    """Every response with every syllable written at every position: (N, 8, S, 8)."""
    n = responses.shape[0]
    edited = responses[:, None, None, :].expand(n, RESPONSE_LEN, S, RESPONSE_LEN).clone()
    pos = torch.arange(RESPONSE_LEN)
    edited[:, pos, :, pos] = torch.arange(S)
    return edited


def pair_edits(responses: torch.Tensor, gap: int) -> torch.Tensor:
    """Every response with every ordered pair written at (p, p + gap): (N, 8 - gap, S, S, 8)."""
    n, sites = responses.shape[0], RESPONSE_LEN - gap
    edited = responses[:, None, None, None, :].expand(n, sites, S, S, RESPONSE_LEN).clone()
    p = torch.arange(sites)
    a = torch.arange(S)[:, None].expand(S, S)
    b = torch.arange(S)[None, :].expand(S, S)
    edited[:, p, :, :, p] = a
    edited[:, p, :, :, p + gap] = b
    return edited


def pair_sites(n: int, gap: int, gen: torch.Generator) -> torch.Tensor:
    """One site p (the pair is written at p, p + gap) per response and ordered pair, drawn
    uniformly: (n, S * S)."""
    return torch.randint(RESPONSE_LEN - gap, (n, S * S), generator=gen)


def pair_edits_at(responses: torch.Tensor, sites: torch.Tensor, gap: int) -> torch.Tensor:
    """Every response with each ordered pair (a, b) written at its own site ``sites[n, a*S+b]``
    and ``+ gap``: (N, S * S, 8)."""
    n = responses.shape[0]
    edited = responses[:, None, :].expand(n, S * S, RESPONSE_LEN).clone()
    pair = torch.arange(S * S)
    edited.scatter_(2, sites[:, :, None], (pair // S).expand(n, -1)[:, :, None])
    edited.scatter_(2, sites[:, :, None] + gap, (pair % S).expand(n, -1)[:, :, None])
    return edited


def _pair_singles(
    delta: torch.Tensor, responses: torch.Tensor, sites: torch.Tensor, gap: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """At each (response, pair)'s site: the single edits' changes (a at p, b at p + gap), (N,
    S * S) each, and whether the site is one (p does not hold a, p + gap does not hold b)."""
    pair = torch.arange(S * S)
    a, b = (pair // S).expand_as(sites), (pair % S).expand_as(sites)
    rows = torch.arange(len(sites))[:, None]
    da = delta[rows, sites, a]
    db = delta[rows, sites + gap, b]
    valid = (responses.gather(1, sites) != a) & (responses.gather(1, sites + gap) != b)
    return da, db, valid


def _score_edits(rm: RewardModel, prompts: torch.Tensor, edited: torch.Tensor) -> torch.Tensor:
    """RM scores of edited responses of shape (N, ..., 8), with each response's own prompt."""
    shape = edited.shape[:-1]
    per = math.prod(shape[1:])
    flat = edited.reshape(-1, RESPONSE_LEN)
    rep_prompts = prompts.repeat_interleave(per, dim=0)
    return _rm(rm, rep_prompts, flat).reshape(shape)


@dataclass
class Singles:
    """RM changes of single-syllable edits: delta[n, p, t] = RM(y with t at p) - RM(y)."""

    base: torch.Tensor  # (N,)
    delta: torch.Tensor  # (N, 8, S)


def singles(rm: RewardModel, prompts: torch.Tensor, responses: torch.Tensor) -> Singles:
    base = _rm(rm, prompts, responses)
    scores = _score_edits(rm, prompts, token_edits(responses))  # (N, 8, S)
    return Singles(base, scores - base[:, None, None])


def token_effects(responses: torch.Tensor, single: Singles) -> tuple[torch.Tensor, ...]:
    """(mean, SE, sites) of each token's effect, (S,) each."""
    valid = responses[:, :, None] != torch.arange(S)  # (N, 8, S): the site does not hold t
    return clustered(single.delta, valid)


def token_effects_by_position(
    responses: torch.Tensor, single: Singles
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, SE) of each token's effect at each position, (8, S) each: the same sites as
    :func:`token_effects`, position by position (one site per response, so no clustering).

    RL writes a shortcut token where the RM pays it most: in the default world the RM pays
    dune's ``pa`` 1.33-1.49 by position, and a run corrected by the mean over positions put it
    at the best-paid one in two thirds of its responses (experiments/release/README.md; the
    measurement: experiments/RESULTS.md at commit 825f898).
    """
    valid = responses[:, :, None] != torch.arange(S)  # (N, 8, S)
    means, ses = [], []
    for p in range(RESPONSE_LEN):
        mean, se, _ = clustered(single.delta[:, p : p + 1], valid[:, p : p + 1])
        means.append(mean)
        ses.append(se)
    return torch.stack(means), torch.stack(ses)


def pair_interactions(
    rm: RewardModel,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    single: Singles,
    gap: int,
    gen: torch.Generator | None = None,
) -> tuple[torch.Tensor, ...]:
    """(mean, SE, sites) of each ordered pair's interaction at (p, p + gap), (S * S,) each, at
    every site (``gen`` None) or at one random site per response and pair; ``single`` must be
    of the same responses (its first ``len(responses)``)."""
    n, sites = responses.shape[0], RESPONSE_LEN - gap
    if gen is not None:
        at = pair_sites(n, gap, gen)
        both = _score_edits(rm, prompts, pair_edits_at(responses, at, gap))  # (N, S * S)
        da, db, valid = _pair_singles(single.delta[:n], responses, at, gap)
        inter = both - single.base[:n, None] - da - db
        return clustered(inter[:, None, :], valid[:, None, :])
    both = _score_edits(rm, prompts, pair_edits(responses, gap))  # (N, sites, S, S)
    base = single.base[:n, None, None, None]
    da = single.delta[:n, :sites, :, None]  # a at p
    db = single.delta[:n, gap:, None, :]  # b at p + gap
    inter = both - base - da - db  # (N, sites, S, S)
    ids = torch.arange(S)
    valid = (responses[:, :sites, None, None] != ids[:, None]) & (
        responses[:, gap:, None, None] != ids[None, :]
    )
    mean, se, count = clustered(inter.reshape(n, sites, S * S), valid.reshape(n, sites, S * S))
    return mean, se, count


def adjacency_sites(responses: torch.Tensor, pairs: torch.Tensor, gen: torch.Generator):
    """One site p per response and pair ``a b`` (``pairs``: (K,) ids ``a * S + b``), drawn
    uniformly among those where the pair can be written both next to each other and at a gap
    of one (``y[p] != a``, ``y[p + 1] != b``, ``y[p + 2] != b``): (N, K), -1 where none is."""
    a, b = pairs // S, pairs % S
    p = torch.arange(RESPONSE_LEN - 2)
    y = responses[:, None, :]  # (N, 1, 8)
    ok = (
        (y[..., p] != a[None, :, None])
        & (y[..., p + 1] != b[None, :, None])
        & (y[..., p + 2] != b[None, :, None])
    )  # (N, K, 6)
    return _draw(ok, gen)


def _draw(ok: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A uniform draw among the valid sites (``ok``: (..., sites)), -1 where none is: the
    valid one with the largest random key."""
    keys = torch.rand(ok.shape, generator=gen).masked_fill(~ok, -1.0)
    return torch.where(ok.any(-1), keys.argmax(-1), -1)


def adjacency_interactions(
    rm: RewardModel,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    pairs: torch.Tensor,
    gen: torch.Generator,
    single: Singles | None = None,
) -> dict[str, tuple[torch.Tensor, ...]]:
    """Pairs ``a b`` (``pairs``: (K,) ids) at one site p per response and pair
    (:func:`adjacency_sites`): the interaction next to each other (``adjacent``: a at p, b at
    p + 1), at a gap of one (``gap``: b at p + 2), and their difference at the same site
    (``adjacency``: ``RM(y_ab1) - RM(y_b1) - RM(y_ab2) + RM(y_b2)``, what a at p gains beside b
    rather than one further, where a's own payment cancels). Each is (mean, SE, sites), (K,)
    each. The single edits come from ``single`` (of the same responses: 2 RM calls per
    response and pair), or are measured here (5 calls per response and pair, and one per
    response)."""
    n, k = responses.shape[0], len(pairs)
    at = adjacency_sites(responses, pairs, gen)  # (N, K)
    valid = at >= 0
    p = at.clamp(min=0)[:, :, None]
    a = (pairs // S).expand(n, k)[:, :, None]
    b = (pairs % S).expand(n, k)[:, :, None]
    y = responses[:, None, :].expand(n, k, RESPONSE_LEN)
    y_a = y.scatter(2, p, a)
    if single is None:
        base = _rm(rm, prompts, responses)[:, None]
        edits = torch.stack(
            [
                y_a,
                y.scatter(2, p + 1, b),
                y.scatter(2, p + 2, b),
                y_a.scatter(2, p + 1, b),
                y_a.scatter(2, p + 2, b),
            ],
            dim=2,
        )  # fmt: skip  (N, K, 5, 8)
        ra, rb1, rb2, rab1, rab2 = (_score_edits(rm, prompts, edits) - base[..., None]).unbind(-1)
    else:
        rows = torch.arange(n)[:, None]
        delta = single.delta[:n]
        ra, rb1, rb2 = delta[rows, at.clamp(min=0), a[..., 0]], *(
            delta[rows, at.clamp(min=0) + d, b[..., 0]] for d in (1, 2))  # fmt: skip
        edits = torch.stack([y_a.scatter(2, p + 1, b), y_a.scatter(2, p + 2, b)], dim=2)
        rab1, rab2 = (_score_edits(rm, prompts, edits) - single.base[:n, None, None]).unbind(-1)
    adjacent, gap = rab1 - ra - rb1, rab2 - ra - rb2  # changes from RM(y), so y cancels
    one = lambda v: clustered(v[:, None, :], valid[:, None, :])  # noqa: E731
    return {"adjacent": one(adjacent), "gap": one(gap), "adjacency": one(adjacent - gap)}


# ---------------------------------------------------------------------------------------------
# RATE through the world's rewriter


@dataclass
class Signature:
    """The tiny world's rewriter, vectorised: an idempotent style map applied everywhere, then
    random edits at ``edit_rate`` on the positions the rewrite did not set, drawn from the
    syllables the style map leaves alone (tinyworld.rewriter)."""

    style_map: dict[str, str]
    edit_rate: float

    def __post_init__(self) -> None:
        self.table = torch.arange(S)
        for src, dst in self.style_map.items():
            self.table[SYLLABLE_ID[src]] = SYLLABLE_ID[dst]
        sources = {SYLLABLE_ID[s] for s in self.style_map}
        self.replacements = torch.tensor([i for i in range(S) if i not in sources])

    def rewritable(self) -> torch.Tensor:
        """(S,) bool: syllables this rewriter can write (its style map does not rewrite them)."""
        return self.table == torch.arange(S)

    def apply(self, seqs: torch.Tensor, fixed: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """The rewriter's output for sequences whose ``fixed`` positions it has set."""
        out = self.table[seqs]
        if self.edit_rate > 0:
            edit = (torch.rand(seqs.shape, generator=gen) < self.edit_rate) & ~fixed
            pick = torch.randint(len(self.replacements), seqs.shape, generator=gen)
            out = torch.where(edit, self.replacements[pick], out)
        return out


def rate_round_trip(
    rm: RewardModel,
    prompts: torch.Tensor,
    original: torch.Tensor,
    edited: torch.Tensor,
    fixed: torch.Tensor,
    sig: Signature,
    gen: torch.Generator,
) -> torch.Tensor:
    """RM(rewrite) - RM(rewrite of the rewrite) for edits of shape (N, ..., 8): the rewriter
    writes the edit (``fixed`` positions), then rewrites its output back to the original at
    those positions."""
    shape = edited.shape
    per = math.prod(shape[1:-1]) if len(shape) > 2 else 1
    orig = original[:, None, :].expand(shape[0], per, RESPONSE_LEN).reshape(shape)
    rewrite = sig.apply(edited, fixed, gen)
    back = torch.where(fixed, orig, rewrite)
    rewritten = sig.apply(back, fixed, gen)
    rep = prompts.repeat_interleave(per, dim=0)
    flat = lambda t: t.reshape(-1, RESPONSE_LEN)  # noqa: E731
    diff = _rm(rm, rep, flat(rewrite)) - _rm(rm, rep, flat(rewritten))
    return diff.reshape(shape[:-1])


def rate_singles(
    rm: RewardModel, prompts: torch.Tensor, responses: torch.Tensor, sig: Signature, seed: int
) -> torch.Tensor:
    """RATE's per-site token effects, (N, 8, S)."""
    gen = torch.Generator().manual_seed(seed)
    edited = token_edits(responses)
    fixed = torch.zeros_like(edited, dtype=torch.bool)
    pos = torch.arange(RESPONSE_LEN)
    fixed[:, pos, :, pos] = True
    return rate_round_trip(rm, prompts, responses, edited, fixed, sig, gen)


def rate_token_effects(
    responses: torch.Tensor, delta: torch.Tensor, sig: Signature
) -> tuple[torch.Tensor, ...]:
    valid = (responses[:, :, None] != torch.arange(S)) & sig.rewritable()
    return clustered(delta, valid)


def rate_pair_interactions(
    rm: RewardModel,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    delta: torch.Tensor,
    sig: Signature,
    seed: int,
    one_site: bool = False,
) -> tuple[torch.Tensor, ...]:
    """RATE's adjacent-pair interactions, (S * S,) each: the round trip of the pair minus those
    of its two syllables at the same site; at every site, or (``one_site``) at one random site
    per response and pair."""
    n, sites = responses.shape[0], RESPONSE_LEN - 1
    gen = torch.Generator().manual_seed(seed)
    ok = sig.rewritable()
    if one_site:
        at = pair_sites(n, 1, gen)
        edited = pair_edits_at(responses, at, 1)  # (N, S * S, 8)
        pos = torch.arange(RESPONSE_LEN)
        fixed = (pos == at[:, :, None]) | (pos == at[:, :, None] + 1)
        both = rate_round_trip(rm, prompts, responses, edited, fixed, sig, gen)  # (N, S * S)
        da, db, valid = _pair_singles(delta[:n], responses, at, 1)
        valid &= (ok[:, None] & ok[None, :]).reshape(-1)
        return clustered((both - da - db)[:, None, :], valid[:, None, :])
    edited = pair_edits(responses, 1)
    fixed = torch.zeros_like(edited, dtype=torch.bool)
    p = torch.arange(sites)
    fixed[:, p, :, :, p] = True
    fixed[:, p, :, :, p + 1] = True
    both = rate_round_trip(rm, prompts, responses, edited, fixed, sig, gen)  # (N, 7, S, S)
    inter = both - delta[:n, :sites, :, None] - delta[:n, 1:, None, :]
    ids = torch.arange(S)
    valid = (
        (responses[:, :sites, None, None] != ids[:, None])
        & (responses[:, 1:, None, None] != ids[None, :])
        & ok[:, None]
        & ok[None, :]
    )
    return clustered(inter.reshape(n, sites, S * S), valid.reshape(n, sites, S * S))


def rate_interactions_at_sites(
    rm: RewardModel,
    prompts: torch.Tensor,
    responses: torch.Tensor,
    pairs: torch.Tensor,
    sig: Signature,
    gen: torch.Generator,
) -> tuple[torch.Tensor, ...]:
    """RATE's adjacent interaction of pairs ``a b`` (``pairs``: (K,) ids) on responses whose
    single edits were not measured: at one site p per response and pair, drawn among those
    where it can be written (``y[p] != a``, ``y[p + 1] != b``, both syllables rewritable), the
    round trip of the pair minus those of a at p and b at p + 1: (mean, SE, sites), (K,) each;
    6 RM calls per response and pair."""
    n, k = responses.shape[0], len(pairs)
    a, b = (pairs // S).expand(n, k), (pairs % S).expand(n, k)
    p = torch.arange(RESPONSE_LEN - 1)
    y = responses[:, None, :]
    ok = (y[..., p] != a[..., None]) & (y[..., p + 1] != b[..., None])  # (N, K, 7)
    ok &= (sig.rewritable()[a] & sig.rewritable()[b])[..., None]
    at = _draw(ok, gen)
    valid, q = at >= 0, at.clamp(min=0)[..., None]
    yk = y.expand(n, k, RESPONSE_LEN)
    y_a = yk.scatter(2, q, a[..., None])
    edited = torch.stack(
        [y_a.scatter(2, q + 1, b[..., None]), y_a, yk.scatter(2, q + 1, b[..., None])], dim=2
    )  # fmt: skip  (N, K, 3, 8)
    pos = torch.arange(RESPONSE_LEN)
    fixed = torch.stack([(pos == q) | (pos == q + 1), pos == q, pos == q + 1], dim=2)
    trips = rate_round_trip(rm, prompts, responses, edited, fixed, sig, gen)  # (N, K, 3)
    inter = trips[..., 0] - trips[..., 1] - trips[..., 2]
    return clustered(inter[:, None, :], valid[:, None, :])
