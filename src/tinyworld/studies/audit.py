"""The audit's acceptance study: ``rate world audit`` on the packaged worlds, checked against the
truth each world planted (an acceptance harness: it reads the truth, the audit never does).

Per world: the AUC of each ranking over all 3,600 candidates (ours by intervention, ours by
RATE, the naive correlational scan, the analyst's ridge), the planted shortcuts flagged and
missed, the false flags, the rank correlation of the two ways of measuring the RM's effects,
the same for the portable diagnostic (no gold labels), and the seconds each took.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from tinyworld.audit.run import load_inputs, run_audit
from tinyworld.audit.scan import DIAGNOSTIC, AuditSettings
from tinyworld.audit_truth import check_audit
from tinyworld.build import ensure_world
from tinyworld.worldconfig import load_world_config

log = logging.getLogger(__name__)

# Acceptance of the audit (issue: rate audit): per world with shortcuts, AUC >= 0.98, every
# planted shortcut flagged, at most one false flag; on a world without shortcuts, no flag.
AUC_GOAL = 0.98
MAX_FALSE_FLAGS = 1


def world_for(name: str, worlds: Path) -> Path:
    """``worlds/<name>``: reused when built, else built from the packaged config without its
    RL runs (the audit reads the reward model, the reference policy and the data only)."""
    config = dataclasses.replace(load_world_config(name=name), runs=[])
    return ensure_world(worlds / name, config=config)


def audit_world(world: Path, settings: AuditSettings) -> dict:
    """The audit and the diagnostic of one world, each checked against its truth."""
    audit = run_audit(load_inputs(world), settings)
    diagnostic = run_audit(
        load_inputs(world, use_gold=False), dataclasses.replace(settings, **DIAGNOSTIC)
    )
    out = {"audit": check_audit(audit, world), "diagnostic": check_audit(diagnostic, world)}
    out["audit"]["seconds"], out["diagnostic"]["seconds"] = audit["seconds"], diagnostic["seconds"]
    out["audit"]["families"] = audit["families"]
    return out


def verdict(check: dict) -> bool:
    """The acceptance rule on one checked audit. A second-stage flag on a syllable of no
    planted pair counts as a false flag."""
    false_flags = len(check["false_flags"]) + len(check.get("second_stage_off_planted", []))
    if not check["planted"]:
        return not false_flags
    return (
        check["auc"]["intervention"] >= AUC_GOAL
        and not check["missed"]
        and false_flags <= MAX_FALSE_FLAGS
    )


def audit_study(names: list[str], worlds: Path, settings: AuditSettings) -> dict:
    results = {}
    for name in names:
        results[name] = audit_world(world_for(name, worlds), settings)
        for kind in ("audit", "diagnostic"):
            results[name][kind]["accepted"] = verdict(results[name][kind])
    return {"settings": dataclasses.asdict(settings), "worlds": results}


def _auc(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"


def study_table(study: dict) -> str:
    """The study as markdown: one row per world and mode."""
    lines = [
        "| world | mode | AUC ours (intervention) | AUC ours (RATE) | AUC naive | AUC ridge "
        "| planted | flagged of them | false flags | second stage (off a planted pair) "
        "| rank corr. interv./RATE (all; tokens; pairs) | s | accepted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, res in study["worlds"].items():
        for kind, c in res.items():
            auc = c["auc"]
            corr = "; ".join(
                _auc(c.get(f"rank_correlation_{k}"))
                for k in ("intervention_rate", "tokens", "pairs")
            )
            lines.append(
                f"| {name} | {kind} | {_auc(auc.get('intervention'))} | {_auc(auc.get('rate'))} "
                f"| {_auc(auc.get('naive'))} | {_auc(auc.get('ridge'))} "
                f"| {', '.join(c['planted']) or 'none'} "
                f"| {len(c['flagged_planted'])} of {len(c['planted'])} "
                f"| {', '.join(c['false_flags']) or 'none'} "
                f"| {', '.join(c.get('second_stage_flags', [])) or 'none'} "
                f"({len(c.get('second_stage_off_planted', []))}) "
                f"| {corr if kind == 'audit' else 'n/a'} | {c['seconds']:.0f} "
                f"| {'yes' if c['accepted'] else 'no'} |"
            )
    return "\n".join(lines)
