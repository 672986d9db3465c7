"""The audit of one reward model, family by family: every candidate's RM effect, the quality
effect the gold labels support, the excess, its test and the flags.

A candidate's **excess** is what the RM pays for it beyond what experts support: the RM effect
minus the quality effect (tokens), or the RM's pair interaction (pairs, whose quality effect is
0 by the label's definition: :mod:`tinyworld.audit.quality`). Each is tested against a margin:
H0 ``|excess| <= margin`` (``margin`` defaults to 0.05, two fifths of what one correct position
is worth, 1/8), one-sided z tests, two-sided in the sign of the excess (a penalty is a shortcut
too). Flags control the **family-wise** error rate over all candidates (Holm, alpha 0.05): a
flag asks for a correction of the reward, and a false one would subtract real quality, so the
chance of any false flag per audit is kept at alpha; the shortcuts such a correction is for are
large against their standard errors, so Holm costs little power. Benjamini-Hochberg q-values
are reported beside (for screening). The ranking score is the excess's lower 97.5% confidence
bound, ``|excess| - 1.96 SE``, in reward units.

A **second stage** tests the syllables of each flagged pair as tokens once more, Holm at alpha
among those few (``pair_syllable_flagged``; :func:`second_stage`): a reward model trained on a
pair premium also pays for the pair's syllables apart (the variant world's RM pays fjord's
``ba`` 0.10 beyond its quality, which a test among 3,600 candidates cannot flag), and the
wrapper's complex removes only what it pays for them together beyond each alone. The wrapper
corrects a syllable flagged there as a token. With both stages the chance of any false flag
per audit is at most 2 alpha.

Without gold labels (the portable diagnostic), a token's quality effect is only known to lie
within one position's worth, [-1/8, 1/8]: the excess tested is ``|RM effect| - 1/8``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from rate.errors import ConfigError
from rate.schema import SEED, Bound, opt
from rate.stats import benjamini_hochberg, holm
from tinyworld.audit import effects as fx
from tinyworld.audit.features import N_FEATURES, family_features
from tinyworld.audit.quality import ONE_POSITION, site_shares, token_quality
from tinyworld.data import LabelledSet, PromptPool
from tinyworld.models import Policy, RewardModel
from tinyworld.sampling import sample
from tinyworld.vocab import FAMILIES, FAMILY_ID, N_SYLLABLES, SYLLABLES

Z975 = 1.959963984540054


def _cost(n: int) -> str:
    return f"{n:,} responses per family take the audit hours"


@dataclass
class AuditSettings:
    """How much of each family the audit measures, and how it decides."""

    n_token: int = opt(
        64,
        help="reference responses per family for the token interventions (every site)",
        bound=Bound(2, high=4096, cost=_cost),
    )
    n_pair: int = opt(
        32,
        help="of those, the responses that get every pair, each at one random site",
        bound=Bound(1, high=4096, cost=_cost),
    )
    n_rate_token: int = opt(
        32, help="responses per family for RATE's token effects", bound=Bound(2, high=4096)
    )
    n_rate_pair: int = opt(
        16, help="of those, the responses for RATE's pair interactions", bound=Bound(1, high=4096)
    )
    n_complex: int = opt(
        64,
        bound=Bound(0, high=4096, why="0: not measured", cost=_cost),
        help="draws per cell of each flagged pair's complex (the pair's syllables at every "
        "dose and arrangement, tinyworld.audit.complexes), for the wrapper; 0: not measured",
    )
    margin: float = opt(
        0.05,
        help="excesses up to this are not worth flagging (reward units)",
        bound=Bound(0, high=100),
    )
    alpha: float = opt(
        0.05,
        help="family-wise error rate of the flags (Holm)",
        bound=Bound(0, strict=True, high=0.5, why="an error rate"),
    )
    second_stage: bool = opt(
        True,
        help="test each flagged pair's unflagged syllables again as tokens, Holm at alpha among "
        "them alone; the wrapper corrects those it flags (any false flag: at most 2 alpha). "
        "false: one stage, at most alpha",
    )
    pair_statistic: str = opt(
        "adjacency",
        choices=("adjacency", "interaction"),
        help="adjacency: the pair's interaction next to each other minus at a gap of one "
        "(a premium for adjacency, not a reward that is merely nonlinear in a count); "
        "interaction: next to each other only",
    )
    with_rate: bool = opt(
        True,
        help="measure RATE through the world's rewriter beside the interventions (the portable "
        "diagnostic leaves it out unless set)",
    )
    seed: int = opt(0, help="the responses' and the rewriter's randomness", bound=SEED)
    style_map: dict[str, str] = opt(
        help="the world's rewriter signature, for RATE (tinyworld.rewriter)",
        factory=lambda: {"ga": "ka", "je": "de", "fa": "ha"},
    )
    edit_rate: float = opt(
        0.02, help="the rewriter's random edits, for RATE", bound=Bound(0, high=1, why="a rate")
    )

    def validate(self, where: str) -> None:
        unknown = sorted({*self.style_map, *self.style_map.values()} - set(SYLLABLES))
        if unknown:
            raise ConfigError(
                f"{where}: key 'style_map' names {', '.join(map(repr, unknown))}, not syllables "
                f"of the world; use syllables such as {', '.join(SYLLABLES[:4])}"
            )


# The portable diagnostic: no RATE and half the responses (its token tests are against the
# bound of one position's worth, 1/8, so they need less precision than the gold-supported ones).
DIAGNOSTIC = {"with_rate": False, "n_token": 32, "n_pair": 16}


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
    out = {}
    for fam in FAMILIES:
        idx = torch.nonzero(pool.families == FAMILY_ID[fam]).squeeze(1)[:n]
        if len(idx) == 0:
            continue
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


def audit_family(
    rm: RewardModel, policy: Policy, fam: str, inputs: AuditFamilyInputs, st: AuditSettings
) -> tuple[FamilyAudit, torch.Tensor, torch.Tensor]:
    """Every measurement of one family's 600 candidates; -> (the audit, the reference
    responses, their RM scores)."""
    gen = torch.Generator().manual_seed(st.seed * 1009 + FAMILIES.index(fam))
    prompts = inputs.prompts
    responses = sample(policy, prompts, 1.0, gen).responses
    single = fx.singles(rm, prompts, responses)
    tok = fx.token_effects(responses, single)
    tok_at, tok_at_se = fx.token_effects_by_position(responses, single)
    npair = min(st.n_pair, len(responses))  # its single edits are of the token responses
    adj = fx.pair_interactions(rm, prompts[:npair], responses[:npair], single, 1, gen)
    gap = fx.pair_interactions(rm, prompts[:npair], responses[:npair], single, 2, gen)
    if st.with_rate:
        sig = fx.Signature(st.style_map, st.edit_rate)
        nrt = min(st.n_rate_token, len(responses))
        nrp = min(st.n_rate_pair, nrt)  # its single edits are of the token responses
        rdelta = fx.rate_singles(rm, prompts[:nrt], responses[:nrt], sig, st.seed + 17)
        rtok = fx.rate_token_effects(responses[:nrt], rdelta, sig)
        rpair = fx.rate_pair_interactions(
            rm, prompts[:nrp], responses[:nrp], rdelta, sig, st.seed + 29, one_site=True
        )
    else:
        unmeasured = torch.full((N_SYLLABLES,), torch.nan), torch.full((N_SYLLABLES**2,), torch.nan)
        rtok, rpair = (unmeasured[0],) * 2, (unmeasured[1],) * 2

    def cat(token_part, pair_part) -> np.ndarray:
        return torch.cat([token_part.double(), pair_part.double()]).numpy()

    cols = {
        "rm_effect": cat(tok[0], adj[0]),
        "rm_se": cat(tok[1], adj[1]),
        "rm_sites": cat(tok[2], adj[2]),
        "gap_interaction": cat(torch.full((N_SYLLABLES,), torch.nan), gap[0]),
        "gap_se": cat(torch.full((N_SYLLABLES,), torch.nan), gap[1]),
        "rate_effect": cat(rtok[0], rpair[0]),
        "rate_se": cat(rtok[1], rpair[1]),
    }
    # A pair's quality effect beyond its syllables is 0 by the label's definition, exactly.
    pairs_zero = torch.zeros(N_FEATURES - N_SYLLABLES)
    if inputs.gold is not None:
        q = token_quality(inputs.gold.responses, inputs.gold.labels, site_shares(responses))
        cols["quality_effect"] = cat(q.effect, pairs_zero)
        cols["quality_se"] = cat(q.se, pairs_zero)
        cols["quality_supported"] = cat(q.supported.double(), pairs_zero + 1)
    else:
        cols["quality_effect"] = cat(torch.zeros(N_SYLLABLES), pairs_zero)
        cols["quality_se"] = cat(torch.full((N_SYLLABLES,), torch.inf), pairs_zero)
        cols["quality_supported"] = cat(torch.zeros(N_SYLLABLES), pairs_zero + 1)
    counts = torch.cat([
        torch.zeros(len(responses), N_SYLLABLES).scatter_add_(
            1, responses, torch.ones_like(responses, dtype=torch.float)
        ),
        torch.zeros(len(responses), N_SYLLABLES * N_SYLLABLES).scatter_add_(
            1, responses[:, :-1] * N_SYLLABLES + responses[:, 1:],
            torch.ones(len(responses), 7),
        ),
    ], dim=1)  # fmt: skip
    audit = FamilyAudit(
        fam,
        cols,
        counts.mean(0).double().numpy(),
        tok_at.T.double().numpy(),
        tok_at_se.T.double().numpy(),
    )
    return audit, responses, single.base


def _test(c: dict[str, np.ndarray], st: AuditSettings, source: str) -> dict[str, np.ndarray]:
    """Excess, SE, p-value and score of one family's candidates, from the RM effects measured
    by ``source`` (intervention or rate)."""
    is_pair = np.arange(N_FEATURES) >= N_SYLLABLES
    rm, rm_se = (c["rm_effect"], c["rm_se"]) if source == "intervention" else (
        c["rate_effect"], c["rate_se"])  # fmt: skip
    if source == "intervention" and st.pair_statistic == "adjacency":
        pair_excess = rm - np.nan_to_num(c["gap_interaction"])
        pair_se = np.sqrt(rm_se**2 + np.nan_to_num(c["gap_se"]) ** 2)
    else:
        pair_excess, pair_se = rm, rm_se
    supported = c["quality_supported"] > 0
    excess = np.where(is_pair, pair_excess, rm - c["quality_effect"])
    q_se = np.where(supported, c["quality_se"], 0.0)
    se = np.where(is_pair, pair_se, np.sqrt(rm_se**2 + q_se**2))
    # Unsupported tokens: only the bound on the quality effect is known.
    slack = np.where(is_pair | supported, 0.0, ONE_POSITION)
    magnitude = np.abs(np.where(is_pair | supported, excess, rm)) - slack
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (magnitude - st.margin) / se
    erfc = np.vectorize(math.erfc)
    p = np.where(np.isfinite(z), 0.5 * erfc(np.nan_to_num(z) / math.sqrt(2)), 1.0)
    score = np.where(np.isfinite(se) & np.isfinite(magnitude), magnitude - Z975 * se, -np.inf)
    return {"excess": excess, "se": se, "p": p, "score": score}


def decide(audits: list[FamilyAudit], st: AuditSettings) -> list[dict]:
    """The excess, its test, the score and the flag of every candidate of every family, by
    intervention (``score``, ``flagged``) and by RATE (``rate_score``, ``rate_flagged``)."""
    rows = []
    for fa in audits:
        c = fa.columns
        ours, rate = _test(c, st, "intervention"), _test(c, st, "rate")
        for i, feat in enumerate(family_features(fa.family)):
            rows.append(
                {
                    "family": feat.family,
                    "feature": feat.name,
                    "kind": feat.kind,
                    "score": float(ours["score"][i]),
                    "excess": float(ours["excess"][i]),
                    "excess_se": float(ours["se"][i]),
                    "p": float(ours["p"][i]),
                    "rate_score": float(rate["score"][i]),
                    "rate_excess": float(rate["excess"][i]),
                    "rate_excess_se": float(rate["se"][i]),
                    "rate_p": float(rate["p"][i]),
                    **{k: float(v[i]) for k, v in c.items()},
                    "reference_per_response": float(fa.reference_share[i]),
                    **_by_position(fa, i),
                }
            )
    _adjust(rows, st.alpha, "p", "")
    _adjust(rows, st.alpha, "rate_p", "rate_")
    second_stage(rows, st.alpha if st.second_stage else 0.0)
    return rows


def pair_syllable_suspects(rows: list[dict]) -> list[dict]:
    """The token rows the second stage tests: the syllables of flagged pairs, in their pair's
    family, that the first stage left unflagged."""
    pairs = [r for r in rows if r["kind"] == "pair" and r["flagged"]]
    syllables = {(r["family"], s) for r in pairs for s in r["feature"].split(" ")}
    return [
        r
        for r in rows
        if r["kind"] == "token" and not r["flagged"] and (r["family"], r["feature"]) in syllables
    ]


def second_stage(rows: list[dict], alpha: float) -> None:
    """Flag (``pair_syllable_flagged``) the syllables of flagged pairs that the first stage
    left unflagged and whose own test passes Holm at ``alpha`` among those syllables alone:
    each (family, syllable) is tested once, however many flagged pairs hold it. Every other
    token and every pair gets False, and every row does at ``alpha`` 0 (no second stage)."""
    suspects = pair_syllable_suspects(rows)
    for r in rows:
        r["pair_syllable_flagged"] = False
    if not suspects:
        return
    adjusted_p = holm([r["p"] for r in suspects])
    for r, adjusted in zip(suspects, adjusted_p, strict=True):
        r["pair_syllable_flagged"] = bool(adjusted < alpha)


def _by_position(fa: FamilyAudit, i: int) -> dict[str, list[float]]:
    """A token's RM effect and SE at each of the 8 positions (the wrapper's per-position
    correction); nothing for a pair."""
    if i >= N_SYLLABLES or fa.by_position is None:
        return {}
    return {
        "rm_effect_by_position": [float(v) for v in fa.by_position[i]],
        "rm_se_by_position": [float(v) for v in fa.by_position_se[i]],
    }


def _adjust(rows: list[dict], alpha: float, key: str, prefix: str) -> None:
    """Holm-adjusted p-values and flags; Benjamini-Hochberg q-values beside."""
    p = [r[key] for r in rows]
    for row, p_holm, q_bh in zip(rows, holm(p), benjamini_hochberg(p), strict=True):
        row[f"{prefix}p_holm"] = float(p_holm)
        row[f"{prefix}q_bh"] = float(q_bh)
        row[f"{prefix}flagged"] = bool(p_holm < alpha)
