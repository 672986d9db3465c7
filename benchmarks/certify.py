"""The certificate's figures: ``rate world certify`` on each of a built world's runs, timed
in its two parts (issue: from audit to a better policy).

The first part draws and scores what the estimators read (two fresh draws of the policy,
the reward model and both policies' likelihoods on them and on the gold set); the second is
the estimators' arithmetic (SNIPS, the cross-fitted doubly robust estimate over its fold
splits, and their bootstrap).

Then a sweep's screens (``rate world recipe-sweep``) of the same runs, on the world's gold set and
on a larger one: each screen with a certifier of its own (every screen scoring the gold set
again, as before) against one certifier shared by all, rounds interleaved.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.timing import timed
from rate.errors import DataFileError
from tinyworld.certify.assess import runs_of
from tinyworld.certify.certificate import (
    DEFAULTS,
    CertifySettings,
    certify_inputs,
)
from tinyworld.certify.certify import Certifier, gather, load_gold
from tinyworld.certify.recipes import screen
from tinyworld.data import LabelledSet
from tinyworld.models import load_policy, load_reward_model
from tinyworld.studies.certify import fresh_gold

# The screens' larger gold set: rows per family (the sweeps of experiments/release/README.md
# ran on 6,400 and 25,600), and the rounds of each arm.
SCREEN_GOLD_PER_FAMILY = 6400
SCREEN_ROUNDS = 2


def bench_certify(
    world: Path,
    settings: CertifySettings = DEFAULTS,
    screen_gold_per_family: int = SCREEN_GOLD_PER_FAMILY,
) -> dict:
    """Time the two parts of certifying each run under ``world/runs`` (with the default
    settings unless told otherwise), against the world's gold set and without a wrapper."""
    world = Path(world)
    runs = runs_of(world)
    if not runs:
        raise DataFileError(
            f"{world}/runs holds no finished run (no */checkpoint) to certify; give --world a "
            "built full world (`rate world build --out W`), or leave certify out of --sections"
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
    large = fresh_gold(world, screen_gold_per_family, seed=0)
    return {
        "certify_runs": per_run,
        "certify_replicates": settings.replicates,
        "certify_fold_splits": settings.fold_splits,
        "certify_gold_rows": len(gold.labels),
        "screens": {
            str(len(g.labels)): bench_screens(world, runs, g, settings) for g in (gold, large)
        },
    }


def bench_screens(
    world: Path, runs: dict[str, Path], gold: LabelledSet, settings: CertifySettings
) -> dict:
    """Seconds to screen every run against ``gold``: each with a certifier of its own, and
    all with one, the two interleaved over :data:`SCREEN_ROUNDS` rounds; the screens must
    agree."""
    times: dict[str, list[float]] = {"own": [], "shared": []}
    for _ in range(SCREEN_ROUNDS):
        own_s, own = timed(
            lambda: [screen(Certifier.load(world, None, gold), p, settings) for p in runs.values()]
        )

        def shared_screens() -> list[dict]:
            certifier = Certifier.load(world, None, gold)
            return [screen(certifier, p, settings) for p in runs.values()]

        shared_s, shared = timed(shared_screens)
        if own != shared:
            raise RuntimeError("bench: a shared certifier screened differently from its own")
        times["own"].append(own_s)
        times["shared"].append(shared_s)
    return {"runs": len(runs), **{k: min(v) for k, v in times.items()}}


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
    if "screens" in r:
        lines += [
            "A sweep's label-free screens of the same runs (`rate world recipe-sweep`): the reference's "
            "likelihoods and the reward of the gold responses do not depend on the checkpoint. "
            f"Best of {SCREEN_ROUNDS} interleaved rounds; the screens agree to the bit.",
            "",
            "| gold rows | runs screened | a certifier each | one shared | ratio |",
            "|---|---|---|---|---|",
        ]
        for rows, v in r["screens"].items():
            lines.append(
                f"| {int(rows):,} | {v['runs']} | {v['own']:.2f} s | {v['shared']:.2f} s | "
                f"{v['own'] / v['shared']:.2f}x |"
            )
        lines.append("")
    if "dr_bootstrap" in r:  # measured once against the plain-numpy reference, not rerun
        v = r["dr_bootstrap"]
        lines += [
            f"The doubly robust bootstrap on the larger gold set ({v['gold_rows']:,} rows, the "
            f"inputs of {v['run']}, {r['certify_replicates']:,} replicates, every family), as plain "
            "numpy would do it (the reference in tests/certify/test_estimators.py) and as the "
            "estimators do: the same draws, replicates identical to the bit. Best of 2 "
            "interleaved rounds; `make bench` does not rerun it.",
            "",
            "| plain numpy | ours | ratio |",
            "|---|---|---|",
            f"| {v['plain']:.2f} s | {v['ours']:.2f} s | {v['plain'] / v['ours']:.2f}x |",
            "",
        ]
    return lines
