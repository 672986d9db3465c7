"""The audit's acceptance study: ``rate world audit`` on packaged and random worlds, checked
against the truth each world planted (an acceptance harness: it reads the truth, the audit
never does).

Per world: the AUC of each ranking over all 3,600 candidates (ours by intervention, ours by
RATE, the naive correlational scan, the analyst's ridge), the planted shortcuts flagged and
missed, the learned ones flagged (recall), the false flags and the echoes, the rank correlation
of the two ways of measuring the RM's effects, the same for the portable diagnostic (no gold
labels), and the seconds each took. Over random worlds (``rate world study audit --random N``
or ``--seeds``), the recall of the learned shortcuts, overall and of pairs, and the false flags
of all worlds together (:func:`summary`).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np

from tinyworld.audit.run import load_inputs, run_audit
from tinyworld.audit.settings import DIAGNOSTIC, AuditSettings
from tinyworld.audit_truth import check_audit
from tinyworld.build import ensure_world
from tinyworld.random_world import random_world_config
from tinyworld.worldconfig import load_world_config

log = logging.getLogger(__name__)

# Acceptance of the audit (issue: rate audit): per world with shortcuts, AUC >= 0.98, every
# planted shortcut flagged, at most one false flag; on a world without shortcuts, no flag.
AUC_GOAL = 0.98
MAX_FALSE_FLAGS = 1
# Over random worlds (issue 46): recall of the learned shortcuts, overall and of pairs, and
# the false flags of all worlds together.
RECALL_GOAL, PAIR_RECALL_GOAL, MAX_FALSE_FLAGS_RANDOM = 0.95, 0.90, 1
# The range of the seeds of ``--random N`` (the acceptance seeds: experiments/audit).
RANDOM_SEEDS = (2000, 10**6)


def world_for(name: str, worlds: Path) -> Path:
    """``worlds/<name>``: reused when built (with its RL runs or without), else built from the
    packaged config without its RL runs (the audit reads the reward model, the reference
    policy and the data only)."""
    config = dataclasses.replace(load_world_config(name=name), runs=[])
    return ensure_world(worlds / name, config=config)


def random_world_for(seed: int, worlds: Path, small: bool = False) -> Path:
    """``worlds/random-<seed>`` (``-small``): the random world of ``seed`` without RL runs,
    reused when built."""
    config = dataclasses.replace(random_world_config(seed, small=small), runs=[])
    return ensure_world(worlds / f"random-{seed}{'-small' if small else ''}", config=config)


def random_seeds(n: int, draw: int) -> list[int]:
    """The first ``n`` seeds of the draw ``numpy.random.default_rng(draw).integers(2000,
    10**6, n)``."""
    return [int(s) for s in np.random.default_rng(draw).integers(*RANDOM_SEEDS, size=n)]


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


def audit_study(
    names: list[str],
    worlds: Path,
    settings: AuditSettings,
    seeds: list[int] = (),
    small: bool = False,
) -> dict:
    """The audit and the diagnostic of each packaged world ``names`` and each random world of
    ``seeds`` (on the small config if ``small``), checked; with the random worlds' summary."""
    paths = {name: world_for(name, worlds) for name in names}
    for seed in seeds:
        paths[f"random-{seed}"] = random_world_for(seed, worlds, small)
    results = {}
    for name, world in paths.items():
        log.info("audit study: %s", name)
        results[name] = audit_world(world, settings)
        for kind in ("audit", "diagnostic"):
            results[name][kind]["accepted"] = verdict(results[name][kind])
    study = {"settings": dataclasses.asdict(settings), "worlds": results}
    if seeds:
        study["random"] = {
            "seeds": list(seeds),
            "small": small,
            **{
                kind: summary([results[f"random-{s}"][kind] for s in seeds])
                for kind in ("audit", "diagnostic")
            },
        }
    return study


def _is_pair(name: str) -> bool:
    return " " in name.split("`")[1]


def summary(checks: list[dict]) -> dict:
    """Over checked audits of several worlds: the learned shortcuts flagged (recall, overall
    and of pairs), the false flags (first stage, and second-stage flags on no planted pair's
    syllable) and the echoes, all worlds together; and whether that meets the goals."""
    learned = [s for c in checks for s in c["learned"]]
    flagged = [s for c in checks for s in c["flagged_learned"]]
    pairs = [s for s in learned if _is_pair(s)]
    false_flags = sum(len(c["false_flags"]) + len(c["second_stage_off_planted"]) for c in checks)
    out = {
        "learned": len(learned),
        "flagged_learned": len(flagged),
        "recall": len(flagged) / len(learned) if learned else float("nan"),
        "learned_pairs": len(pairs),
        "flagged_learned_pairs": sum(_is_pair(s) for s in flagged),
        "false_flags": false_flags,
        "echoes": sum(len(c.get("echoes", [])) for c in checks),
    }
    out["recall_pairs"] = out["flagged_learned_pairs"] / len(pairs) if pairs else float("nan")
    out["met"] = bool(
        out["recall"] >= RECALL_GOAL
        and (not pairs or out["recall_pairs"] >= PAIR_RECALL_GOAL)
        and false_flags <= MAX_FALSE_FLAGS_RANDOM
    )
    return out


def _auc(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"


def _names(items: list[str]) -> str:
    return ", ".join(items) or "none"


def study_table(study: dict) -> str:
    """The study as markdown: one row per world and mode, then the random worlds' summary."""
    lines = [
        "| world | mode | AUC ours (intervention) | AUC ours (RATE) | AUC naive | AUC ridge "
        "| planted | learned: flagged of them | missed (learned) | false flags "
        "| second stage (off a planted pair) | echoes "
        "| rank corr. interv./RATE (all; tokens; pairs) | s | accepted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
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
                f"| {_names(c['planted'])} "
                f"| {len(c.get('flagged_learned', []))} of {len(c.get('learned', []))} "
                f"| {_names(c.get('missed_learned', []))} | {_names(c['false_flags'])} "
                f"| {_names(c.get('second_stage_flags', []))} "
                f"({len(c.get('second_stage_off_planted', []))}) "
                f"| {_names(c.get('echoes', []))} "
                f"| {corr if kind == 'audit' else 'n/a'} | {c['seconds']:.0f} "
                f"| {'yes' if c['accepted'] else 'no'} |"
            )
    if "random" in study:
        lines += ["", summary_table(study["random"])]
    return "\n".join(lines)


def summary_table(random: dict) -> str:
    """The random worlds' summary as markdown: one row per mode."""
    lines = [
        f"Random worlds (seeds {', '.join(map(str, random['seeds']))}"
        f"{', small' if random.get('small') else ''}):",
        "",
        "| mode | learned shortcuts flagged | recall | learned pairs flagged | recall (pairs) "
        "| false flags | echoes | goals met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind in ("audit", "diagnostic"):
        s = random[kind]
        lines.append(
            f"| {kind} | {s['flagged_learned']} of {s['learned']} | {_auc(s['recall'])} "
            f"| {s['flagged_learned_pairs']} of {s['learned_pairs']} | {_auc(s['recall_pairs'])} "
            f"| {s['false_flags']} | {s['echoes']} | {'yes' if s['met'] else 'no'} |"
        )
    return "\n".join(lines)
