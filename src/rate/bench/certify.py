"""The certificate's figures: ``rate tinyrlhf certify`` on each of a built world's runs, timed
in its two parts (issue: from audit to a better policy).

The first part draws and scores what the estimators read (two fresh draws of the policy,
the reward model and both policies' likelihoods on them and on the gold set); the second is
the estimators' arithmetic (SNIPS, the cross-fitted doubly robust estimate over its fold
splits, and their bootstrap).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from rate.bench.timing import timed
from rate.certify.assess import runs_of
from rate.certify.certify import DEFAULTS, CertifySettings, certify_inputs, gather, load_gold
from rate.errors import DataFileError
from rate.tinyrlhf.models import load_policy, load_reward_model


def bench_certify(world: Path, settings: CertifySettings = DEFAULTS) -> dict:
    """Time the two parts of certifying each run under ``world/runs`` (with the default
    settings unless told otherwise), against the world's gold set and without a wrapper."""
    world = Path(world)
    runs = runs_of(world)
    if not runs:
        raise DataFileError(
            f"{world}/runs holds no finished run (no */checkpoint) to certify; give --world a "
            "built full world (`rate tinyrlhf build --out W`), or leave certify out of --sections"
        )
    gold = load_gold(world)
    reference = load_policy(world / "policy")
    rm = load_reward_model(world / "reward_model")
    per_run = {}
    for name, path in sorted(runs.items()):
        policy = load_policy(path)
        gather_s, inputs = timed(lambda p=policy: gather(p, reference, rm, gold, settings=settings))
        estimators_s, report = timed(lambda i=inputs: certify_inputs(i, settings))
        abstained = sum(bool(cell["abstain"]) for cell in report["per_family"].values())
        per_run[name] = {
            "gather_s": gather_s,
            "estimators_s": estimators_s,
            "families_abstained": abstained,
        }
    return {
        "certify_runs": per_run,
        "certify_replicates": settings.replicates,
        "certify_fold_splits": settings.fold_splits,
        "certify_gold_rows": len(gold.labels),
    }


def render_certify(r: dict, date: str | None) -> list[str]:
    runs = r["certify_runs"]
    totals = [v["gather_s"] + v["estimators_s"] for v in runs.values()]
    lines = [
        "## Certification (issue: from audit to a better policy)",
        "",
        f"Measured {date} on the world given with `--world` (default: the one the world section "
        f"built): each of its runs certified against the reference from its {r['certify_gold_rows']:,} "
        f"gold rows, default settings ({r['certify_replicates']:,} bootstrap replicates, "
        f"{r['certify_fold_splits']} fold splits), no wrapper, in one process after the models "
        "are loaded. Drawing: two fresh draws of the policy, the reward model and both policies' "
        "likelihoods; estimators: SNIPS, the doubly robust estimate and their bootstrap.",
        "",
        "| run | drawing and scoring | estimators | total | families abstained |",
        "|---|---|---|---|---|",
    ]
    for name, v in runs.items():
        lines.append(
            f"| {name} | {v['gather_s']:.2f} s | {v['estimators_s']:.2f} s | "
            f"{v['gather_s'] + v['estimators_s']:.2f} s | {v['families_abstained']} |"
        )
    lines += [
        "",
        f"Median certificate: {statistics.median(totals):.2f} s "
        f"(range {min(totals):.2f}-{max(totals):.2f} s).",
        "",
    ]
    return lines
