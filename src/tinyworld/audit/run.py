"""Running the audit: what it reads, and the one record it writes.

It reads a built world's analyst-visible files by their place in the world's layout
(``reward_model/``, ``policy/``, ``data/prompts_train.jsonl``, ``data/gold_calib.jsonl``,
``reward_model/train.jsonl``), or the same things named one by one, so it runs on a world that
was moved and on one it has never seen; nothing under ``truth/`` and no world config. Without
gold labels it is the portable diagnostic.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from rate.errors import ConfigError
from rate.progress import progress
from rate.schema import to_dict
from tinyworld.audit.baselines import naive_scan, ridge_scan
from tinyworld.audit.complexes import measure_complexes
from tinyworld.audit.decide import decide
from tinyworld.audit.scan import audit_family, family_inputs, prompts_needed
from tinyworld.audit.settings import AuditSettings
from tinyworld.data import LabelledSet, PromptPool, load_labelled, load_prompts
from tinyworld.models import load_policy, load_reward_model
from tinyworld.policy import Policy
from tinyworld.reward_model import RewardModel
from tinyworld.vocab import FAMILIES

log = logging.getLogger(__name__)

FORMAT = "tinyworld.audit/1"


@dataclass
class AuditInputs:
    rm: RewardModel
    policy: Policy
    pool: PromptPool
    gold: LabelledSet | None
    qa: LabelledSet | None
    sources: dict[str, str | None]


def load_inputs(
    world: Path | None = None,
    reward_model: Path | None = None,
    policy: Path | None = None,
    prompts: Path | None = None,
    gold: Path | None = None,
    qa: Path | None = None,
    use_gold: bool = True,
) -> AuditInputs:
    """The audit's inputs: a world's files by their places, or each given (which wins)."""

    def place(given: Path | None, rel: str, needed: bool) -> Path | None:
        if given is not None:
            return Path(given)
        if world is not None and (needed or (Path(world) / rel).exists()):
            return Path(world) / rel
        if needed:
            raise ConfigError(
                f"the audit needs {rel.split('/')[-1]}: give --world (a built world) or the "
                "file itself"
            )
        return None

    paths = {
        "reward_model": place(reward_model, "reward_model", True),
        "policy": place(policy, "policy", True),
        "prompts": place(prompts, "data/prompts_train.jsonl", True),
        "gold": place(gold, "data/gold_calib.jsonl", False) if use_gold else None,
        "qa": place(qa, "reward_model/train.jsonl", False),
    }
    return AuditInputs(
        rm=load_reward_model(paths["reward_model"]),
        policy=load_policy(paths["policy"]),
        pool=load_prompts(paths["prompts"]),
        gold=load_labelled(paths["gold"]) if paths["gold"] else None,
        qa=load_labelled(paths["qa"]) if paths["qa"] else None,
        sources={k: str(v) if v else None for k, v in paths.items()},
    )


def run_audit(inputs: AuditInputs, settings: AuditSettings) -> dict:
    """Every candidate of every family measured, decided and ranked, with the baselines."""
    t0 = time.perf_counter()
    per_family = family_inputs(inputs.pool, inputs.gold, prompts_needed(settings))
    if not per_family:
        raise ConfigError("the prompt pool holds no family of the tiny world")
    audits, responses, scores = [], {}, {}
    with torch.inference_mode():
        for fam in progress(list(per_family), "audit", len(per_family)):
            t = time.perf_counter()
            fa, resp, base = audit_family(inputs.rm, inputs.policy, fam, per_family[fam], settings)
            log.info("audit: %s in %.1f s", fam, time.perf_counter() - t)
            audits.append(fa)
            responses[fam], scores[fam] = resp, base
    rows = decide(audits, settings)
    if settings.n_complex > 0:
        with torch.inference_mode():
            prompts = {fam: per_family[fam].prompts[settings.n_screen :] for fam in responses}
            measure_complexes(
                rows, inputs.rm, prompts, responses, settings.n_complex, settings.seed
            )
    measured_s = time.perf_counter() - t0
    order = sorted(range(len(rows)), key=lambda i: -rows[i]["score"])
    for rank, i in enumerate(order, start=1):
        rows[i]["rank"] = rank
    baselines = {"naive": naive_scan(responses, scores)}
    if inputs.qa is not None:
        baselines["ridge"] = ridge_scan(inputs.qa)
    return {
        "format": FORMAT,
        "mode": "audit" if inputs.gold is not None else "diagnostic (no gold labels)",
        "inputs": inputs.sources,
        "settings": to_dict(settings),
        "families": family_risk(rows, [fa.family for fa in audits]),
        "candidates": rows,
        "baselines": baselines,
        "seconds": round(measured_s, 2),
    }


def family_risk(rows: list[dict], families: list[str]) -> dict:
    """Per family: the flagged features, and how much reward beyond quality a policy could
    collect with them, per response at the reference's usage and at most (every site)."""
    out = {}
    for fam in families:
        mine = [r for r in rows if r["family"] == fam]
        flagged = sorted((r for r in mine if r["flagged"]), key=lambda r: -r["score"])
        echoes = sorted((r for r in mine if r.get("echo_of")), key=lambda r: -r["score"])
        paid = flagged + echoes
        usage = sum(r["excess"] * r["reference_per_response"] for r in paid)
        worst = max(
            (abs(r["excess"]) * (8 if r["kind"] == "token" else 7) for r in paid), default=0.0
        )
        out[fam] = {
            "flagged": [r["feature"] for r in flagged],
            "echoes": [f"{r['feature']} (of {r['echo_of']})" for r in echoes],
            "excess_per_response_at_reference_usage": round(usage, 6),
            "excess_per_response_at_most": round(worst, 6),
            "risk": "high" if worst >= 1.0 else "moderate" if paid else "none found",
        }
    for fam in FAMILIES:
        out.setdefault(fam, {"flagged": [], "risk": "not audited (no prompts)"})
    return out
