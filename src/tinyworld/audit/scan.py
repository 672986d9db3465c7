"""The audit's measurements of one reward model, family by family: every candidate's RM effect,
the quality effect the gold labels support, and the pair screen and confirmation
(:mod:`tinyworld.audit.decide` tests them and flags).

Per family, reference responses are drawn in two separate sets from the reference policy:

- the **screen's** (``n_screen``): every ordered pair at one random site of each, next to each
  other and at a gap of one at the same site (the single edits from every token at every
  site of the same responses); it chooses the ``screen_top`` pairs that go on;
- **fresh** ones: the tokens at every site of ``n_token`` of them, and each pair the screen
  chose at one site of each of ``n_confirm`` of them (its single edits measured there too).

RATE does the same through the world's rewriter on its own counts (``n_rate_*``): its own
screen chooses its own pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tinyworld.audit import effects as fx
from tinyworld.audit.decide import pair_offsets, screen
from tinyworld.audit.features import N_FEATURES, feature_counts
from tinyworld.audit.quality import site_shares, token_quality
from tinyworld.audit.settings import AuditSettings
from tinyworld.data import LabelledSet, PromptPool
from tinyworld.models import Policy, RewardModel
from tinyworld.sampling import sample
from tinyworld.vocab import FAMILIES, FAMILY_ID, N_SYLLABLES

S = N_SYLLABLES
PAIRS = torch.arange(S * S)


@dataclass
class AuditFamilyInputs:
    """What the audit reads of one family: its prompts, and its gold labels if any."""

    prompts: torch.Tensor  # (n, 6) token ids
    gold: LabelledSet | None = None


@dataclass
class FamilyAudit:
    family: str
    columns: dict[str, np.ndarray] = field(default_factory=dict)  # per candidate, (600,)
    reference_share: np.ndarray | None = None  # (600,) feature occurrences per response
    # Each token's RM effect and its SE at each position, (S, 8) each.
    by_position: np.ndarray | None = None
    by_position_se: np.ndarray | None = None


def family_inputs(
    pool: PromptPool, gold: LabelledSet | None, n: int
) -> dict[str, AuditFamilyInputs]:
    """Per family in the pool, ``n`` of its prompts (in the pool's order, from the start again
    when it holds fewer: each draws its own response) and its gold labels."""
    out = {}
    for fam in FAMILIES:
        idx = torch.nonzero(pool.families == FAMILY_ID[fam]).squeeze(1)
        if len(idx) == 0:
            continue
        idx = idx[torch.arange(n) % len(idx)]
        fam_gold = None
        if gold is not None:
            gidx = torch.nonzero(gold.families == FAMILY_ID[fam]).squeeze(1)
            if len(gidx):
                fam_gold = LabelledSet(
                    [gold.records[i] for i in gidx.tolist()],
                    gold.tokens[gidx],
                    gold.families[gidx],
                    responses=gold.responses[gidx],
                    labels=gold.labels[gidx],
                )
        out[fam] = AuditFamilyInputs(pool.tokens[idx], fam_gold)
    return out


def prompts_needed(st: AuditSettings) -> int:
    """Prompts per family: the screen's, then the fresh responses'."""
    return st.n_screen + st.n_fresh()


def _pairs(v: torch.Tensor, chosen: torch.Tensor, at: torch.Tensor | None = None) -> torch.Tensor:
    """A (576,) column: the screen's ``v``, with the confirmation's ``at`` at ``chosen``."""
    out = v.double().clone()
    if at is not None:
        out[chosen] = at.double()
    return out


def audit_family(
    rm: RewardModel, policy: Policy, fam: str, inputs: AuditFamilyInputs, st: AuditSettings
) -> tuple[FamilyAudit, torch.Tensor, torch.Tensor]:
    """Every measurement of one family's 600 candidates; -> (the audit, the fresh token
    responses, their RM scores)."""
    gen = torch.Generator().manual_seed(st.seed * 1009 + FAMILIES.index(fam))
    prompts, fresh_prompts = inputs.prompts[: st.n_screen], inputs.prompts[st.n_screen :]
    screened = sample(policy, prompts, 1.0, gen).responses
    fresh = sample(policy, fresh_prompts, 1.0, gen).responses

    # The screen: every pair, on the screen's responses (single edits of the same).
    scr = fx.adjacency_interactions(
        rm, prompts, screened, PAIRS, gen, fx.singles(rm, prompts, screened)
    )
    key = "adjacency" if st.pair_statistic == "adjacency" else "adjacent"
    chosen, offset = _screen(scr[key][0], scr[key][1], st)
    # The confirmation, on fresh responses: the tokens, and the pairs the screen chose.
    nt, nc = st.n_token, st.n_confirm
    single = fx.singles(rm, fresh_prompts[:nt], fresh[:nt])
    tok = fx.token_effects(fresh[:nt], single)
    tok_at, tok_at_se = fx.token_effects_by_position(fresh[:nt], single)
    conf = fx.adjacency_interactions(rm, fresh_prompts[:nc], fresh[:nc], chosen, gen)

    def col(name: str, i: int) -> torch.Tensor:
        return _pairs(scr[name][i], chosen, conf[name][i])

    confirmed = torch.zeros(S * S)
    confirmed[chosen] = 1.0
    cols = {
        "rm_effect": torch.cat([tok[0], col("adjacent", 0)]),
        "rm_se": torch.cat([tok[1], col("adjacent", 1)]),
        "rm_sites": torch.cat([tok[2].double(), col("adjacent", 2)]),
        "gap_interaction": torch.cat([torch.full((S,), torch.nan), col("gap", 0)]),
        "gap_se": torch.cat([torch.full((S,), torch.nan), col("gap", 1)]),
        "adjacency": torch.cat([torch.full((S,), torch.nan), col("adjacency", 0)]),
        "adjacency_se": torch.cat([torch.full((S,), torch.nan), col("adjacency", 1)]),
        "screen_excess": torch.cat([torch.full((S,), torch.nan), scr[key][0]]),
        "screen_se": torch.cat([torch.full((S,), torch.nan), scr[key][1]]),
        "confirmed": torch.cat([torch.ones(S), confirmed]),
        "pair_offset": torch.cat([torch.full((S,), torch.nan), offset[0]]),
        "pair_offset_se": torch.cat([torch.full((S,), torch.nan), offset[1]]),
        **_rate_columns(rm, prompts, screened, fresh_prompts, fresh, st),
        **_quality_columns(inputs.gold, fresh[:nt]),
    }
    audit = FamilyAudit(
        fam,
        {k: v.double().numpy() for k, v in cols.items()},
        feature_counts(fresh[:nt]).mean(0).double().numpy(),
        tok_at.T.double().numpy(),
        tok_at_se.T.double().numpy(),
    )
    return audit, fresh[:nt], single.base


def _screen(
    stat: torch.Tensor, se: torch.Tensor, st: AuditSettings
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """The pairs the screen sends on, chosen on their statistic less its row and column offsets
    (:func:`tinyworld.audit.decide.pair_offsets`), and those offsets with their SE."""
    offset, offset_se = pair_offsets(stat.numpy(), se.numpy())
    excess, excess_se = stat.numpy() - offset, np.sqrt(se.numpy() ** 2 + offset_se**2)
    chosen = torch.from_numpy(screen(excess, excess_se, st.margin, st.screen_top))
    return chosen, (torch.from_numpy(offset), torch.from_numpy(offset_se))


def _rate_columns(
    rm: RewardModel,
    prompts: torch.Tensor,
    screened: torch.Tensor,
    fresh_prompts: torch.Tensor,
    fresh: torch.Tensor,
    st: AuditSettings,
) -> dict[str, torch.Tensor]:
    """RATE's effects (``rate_effect``, ``rate_se``) and which pairs its own screen sent on to
    confirmation (``rate_confirmed``); NaN and none without RATE."""
    if not st.with_rate:
        nan, zero = torch.full((N_FEATURES,), torch.nan), torch.zeros(N_FEATURES)
        return {"rate_effect": nan, "rate_se": nan, "rate_confirmed": zero,
                "rate_offset": zero, "rate_offset_se": zero}  # fmt: skip
    sig = fx.Signature(st.style_map, st.edit_rate)
    gen = torch.Generator().manual_seed(st.seed + 29)
    nt, ns, nc = st.n_rate_token, min(st.n_rate_screen, st.n_screen), st.n_rate_confirm
    delta = fx.rate_singles(rm, fresh_prompts[:nt], fresh[:nt], sig, st.seed + 17)
    tok = fx.rate_token_effects(fresh[:nt], delta, sig)
    delta = fx.rate_singles(rm, prompts[:ns], screened[:ns], sig, st.seed + 19)
    scr = fx.rate_pair_interactions(
        rm, prompts[:ns], screened[:ns], delta, sig, st.seed + 23, one_site=True
    )
    chosen, offset = _screen(scr[0], scr[1], st)
    conf = fx.rate_interactions_at_sites(rm, fresh_prompts[:nc], fresh[:nc], chosen, sig, gen)
    confirmed = torch.zeros(S * S)
    confirmed[chosen] = 1.0
    return {
        "rate_effect": torch.cat([tok[0], _pairs(scr[0], chosen, conf[0])]),
        "rate_se": torch.cat([tok[1], _pairs(scr[1], chosen, conf[1])]),
        "rate_confirmed": torch.cat([torch.ones(S), confirmed]),
        "rate_offset": torch.cat([torch.full((S,), torch.nan), offset[0]]),
        "rate_offset_se": torch.cat([torch.full((S,), torch.nan), offset[1]]),
    }


def _quality_columns(gold: LabelledSet | None, responses: torch.Tensor) -> dict:
    """The quality effect the gold labels support (at the sites of ``responses``); a pair's is
    0 exactly, by the label's definition; without gold, only the bound is known."""
    pairs_zero = torch.zeros(N_FEATURES - S)
    if gold is not None:
        q = token_quality(gold.responses, gold.labels, site_shares(responses))
        effect, se, supported = q.effect, q.se, q.supported.double()
    else:
        effect, se, supported = torch.zeros(S), torch.full((S,), torch.inf), torch.zeros(S)
    return {
        "quality_effect": torch.cat([effect.double(), pairs_zero.double()]),
        "quality_se": torch.cat([se.double(), pairs_zero.double()]),
        "quality_supported": torch.cat([supported, pairs_zero + 1]),
    }
